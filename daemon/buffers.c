/* daemon/buffers.c — the handle table, buffer lifetimes and sessions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <utlist.h>

#include "daemon/buffers.h"
#include "daemon/devices.h"
#include "daemon/log.h"
#include "daemon/loop.h"

void buffers_init(buffer_table *t, device_set *devices)
{
	memset(t, 0, sizeof(*t));
	t->devices = devices;
	do {
		if (getrandom(&t->instance, sizeof(t->instance), 0) !=
		    (ssize_t)sizeof(t->instance)) {
			log_error("getrandom: %s", strerror(errno));
			abort();
		}
	} while ((t->instance >> 48) == 0); /* a tag of 0 would look like no tag */
}

#define HANDLE_TAG_SHIFT 48
#define HANDLE_RANDOM_MASK ((UINT64_C(1) << HANDLE_TAG_SHIFT) - 1)

int buffers_stale(const buffer_table *t, gpud_handle h)
{
	/* No gpud makes tag 0: such a handle was never one of a gpud's. */
	return (h >> HANDLE_TAG_SHIFT) != 0 &&
	       (h >> HANDLE_TAG_SHIFT) != (t->instance >> HANDLE_TAG_SHIFT);
}

static gpud_handle new_handle(buffer_table *t)
{
	gpud_handle h;
	gpud_buffer *found;

	for (;;) {
		if (getrandom(&h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
			/* getrandom on Linux >= 3.17 does not fail for 8 bytes once seeded. */
			log_error("getrandom: %s", strerror(errno));
			abort();
		}
		h = (t->instance & ~HANDLE_RANDOM_MASK) | (h & HANDLE_RANDOM_MASK);
		if ((h & HANDLE_RANDOM_MASK) == 0)
			continue;
		HASH_FIND(hh, t->by_handle, &h, sizeof(h), found);
		if (found == NULL)
			return h;
	}
}

dstatus buffers_alloc(buffer_table *t, gpud_session *s, int keep, gpud_device *dev, int pinned,
		      int filled, gpud_dtype dt, int ndim, const uint64_t *shape, buffer_spares *sp,
		      gpud_buffer **out, char *err, size_t errlen)
{
	size_t esize = gpud_dtype_size(dt);
	gpud_tenant *tn = s->tenant;
	gpud_buffer *b;
	dstatus rv;

	ON_LOOP("buffers_alloc");
	if (esize == 0) {
		snprintf(err, errlen, "dtype %d is not one of float32, float64, int32, int64",
			 (int)dt);
		return ST_INVALID;
	}
	if (ndim < 0 || ndim > GPUD_MAX_DIMS) {
		snprintf(err, errlen, "an array may have at most %d dimensions, got %d",
			 GPUD_MAX_DIMS, ndim);
		return ST_INVALID;
	}
	size_t nbytes = gpud_shape_bytes(shape, ndim, esize);
	if (nbytes == SIZE_MAX) {
		snprintf(err, errlen,
			 "shape of %d dimensions x %zu-byte %s overflows the address space", ndim,
			 esize, gpud_dtype_name(dt));
		return ST_TOO_LARGE;
	}
	if (tn && tn->quota.device_bytes &&
	    (nbytes > tn->quota.device_bytes || tn->bytes > tn->quota.device_bytes - nbytes)) {
		snprintf(err, errlen,
			 "over the device_bytes quota of tenant %s: %zu bytes asked, %llu of %llu "
			 "in use",
			 tn->name, nbytes, (unsigned long long)tn->bytes,
			 (unsigned long long)tn->quota.device_bytes);
		tn->metrics.quota_refused[QUOTA_DEVICE_BYTES]++;
		return ST_QUOTA;
	}
	uint64_t on = tn ? tn->quota.device_bytes_on[dev->id] : 0;
	if (on && (nbytes > on || tn->dev_bytes[dev->slot] > on - nbytes)) {
		snprintf(err, errlen,
			 "over the device_bytes.%d quota of tenant %s: %zu bytes asked on device "
			 "%d, %llu of %llu in use there",
			 dev->id, tn->name, nbytes, dev->id,
			 (unsigned long long)tn->dev_bytes[dev->slot], (unsigned long long)on);
		tn->metrics.quota_refused[QUOTA_DEVICE_BYTES]++;
		return ST_QUOTA;
	}
	if (dev->lost) {
		snprintf(err, errlen, "device %d is lost (%s)", dev->id, dev->lost_msg);
		return ST_BACKEND;
	}
	if (keep && tn && tn->quota.kept_buffers && tn->nkept >= tn->quota.kept_buffers) {
		snprintf(err, errlen,
			 "over the kept_buffers quota of tenant %s: it keeps %llu of %llu buffers",
			 tn->name, (unsigned long long)tn->nkept,
			 (unsigned long long)tn->quota.kept_buffers);
		tn->metrics.quota_refused[QUOTA_KEPT_BUFFERS]++;
		return ST_QUOTA;
	}
	if ((b = calloc(1, sizeof(*b))) == NULL) {
		snprintf(err, errlen, "out of host memory for a buffer record");
		return ST_OUT_OF_MEMORY;
	}
	if (sp && sp->fail != ST_OK && sp->fail_bytes == nbytes) {
		rv = sp->fail;
		sp->fail = ST_OK;
		snprintf(err, errlen, "%s", sp->fail_err);
		free(b);
		return rv;
	}
	if (sp && sp->n > 0 && sp->dev != dev) /* blocks of another device: not these */
		buffers_spares_free(t, sp);
	if (sp)
		sp->dev = dev;
	int spare = -1, foreign = 0;
	uint64_t owner = tn ? tn->id : 0;
	for (int i = 0; sp && i < sp->n && spare < 0; i++)
		if (sp->bytes[i] == nbytes)
			spare = i;
	if (spare >= 0) { /* a block made for this request (clean for its tenant) */
		b->mem = sp->mem[spare];
		sp->mem[spare] = sp->mem[--sp->n];
		sp->bytes[spare] = sp->bytes[sp->n];
	} else if ((rv = backend_alloc(&dev->be, nbytes, owner, &b->mem, &foreign, err, errlen)) !=
		   ST_OK) {
		free(b);
		if (rv == ST_WOULD_BLOCK && sp) {
			sp->want = nbytes;
			sp->owner = owner;
		} else if (rv == ST_WOULD_BLOCK) {
			snprintf(err, errlen, "internal: an allocation would wait on the loop");
			rv = ST_INTERNAL;
		}
		return rv;
	}
	if (foreign) {
		rv = backend_clear(&dev->be, s->pipe_id, b->mem, filled ? nbytes : 0, NULL, NULL,
				   err, errlen);
		if (rv != ST_OK) {
			backend_free(&dev->be, b->mem);
			free(b);
			return rv;
		}
		b->cleared = 1;
	}
	b->dtype = dt;
	b->ndim = ndim;
	if (ndim > 0) /* a 0-d shape may come as NULL (an empty repeated field) */
		memcpy(b->shape, shape, (size_t)ndim * sizeof(uint64_t));
	b->nbytes = nbytes;
	b->count = nbytes / esize;
	b->handle = new_handle(t);
	b->refs = 1;
	b->live = 1;
	b->tenant = tn;
	b->dev = dev;
	b->pinned = pinned;
	dev->nbuffers++;
	dev->bytes += nbytes;
	HASH_ADD(hh, t->by_handle, handle, sizeof(b->handle), b);
	/* The address is for debugging (and the GPU suite's isolation tests):
	 * no client learns it through the protocol. */
	log_debug("buffer %016llx of tenant %s: %zu bytes at %p on device %d",
		  (unsigned long long)b->handle, tn ? tn->name : "-", nbytes, b->mem, dev->id);
	if (keep && tn) {
		b->kept = 1;
		DL_APPEND2(tn->kept, b, sprev, snext);
		tn->nkept++;
	} else {
		b->owner = s;
		DL_APPEND2(s->buffers, b, sprev, snext);
		s->nbuffers++;
		s->bytes += nbytes;
	}
	if (tn) {
		tn->bytes += nbytes;
		tn->nbuffers++;
		if (tn->bytes > tn->high_water)
			tn->high_water = tn->bytes;
		tn->dev_bytes[dev->slot] += nbytes;
		tn->dev_nbuffers[dev->slot]++;
		tn->aff_bytes[dev->slot] += nbytes;
		tn->aff_nbuffers[dev->slot]++;
	}
	t->count++;
	t->bytes += nbytes;
	if (t->bytes > t->high_water)
		t->high_water = t->bytes;
	*out = b;
	return ST_OK;
}

gpud_tenant *tenants_find(buffer_table *t, const char *name)
{
	gpud_tenant *tn;
	HASH_FIND_STR(t->tenants, name, tn);
	return tn;
}

gpud_tenant *tenants_by_local_uid(buffer_table *t, int64_t uid)
{
	gpud_tenant *tn, *tmp;
	if (uid < 0)
		return NULL;
	HASH_ITER(hh, t->tenants, tn, tmp)
	{
		if (tn->local_uid == uid)
			return tn;
	}
	return NULL;
}

gpud_tenant *tenants_get(buffer_table *t, const char *name, const tenant_quota *q)
{
	gpud_tenant *tn;
	HASH_FIND_STR(t->tenants, name, tn);
	if (tn)
		return tn;
	if ((tn = calloc(1, sizeof(*tn))) == NULL)
		return NULL;
	snprintf(tn->name, sizeof(tn->name), "%s", name);
	tn->quota = *q;
	tn->local_uid = -1;
	tn->metrics.ordinal = HASH_COUNT(t->tenants); /* tenants are never removed */
	tn->id = (uint64_t)tn->metrics.ordinal + 1;   /* 0 is gpud's own */
	HASH_ADD_STR(t->tenants, name, tn);
	return tn;
}

gpud_buffer *buffers_get(buffer_table *t, gpud_tenant *tn, gpud_handle h)
{
	gpud_buffer *b;
	ON_LOOP("buffers_get");
	HASH_FIND(hh, t->by_handle, &h, sizeof(h), b);
	return b && b->tenant == tn ? b : NULL;
}

void buffers_temp(gpud_buffer *b)
{
	if (b->temp || b->tenant == NULL)
		return;
	b->temp = 1;
	b->tenant->aff_bytes[b->dev->slot] -= b->nbytes;
	b->tenant->aff_nbuffers[b->dev->slot]--;
}

void buffer_ref(gpud_buffer *b)
{
	b->refs++;
}

void buffer_unref(buffer_table *t, gpud_buffer *b)
{
	ON_LOOP("buffer_unref");
	if (--b->refs > 0)
		return;
	if (b->mem)
		backend_free(&b->dev->be, b->mem);
	t->bytes -= b->nbytes;
	b->dev->nbuffers--;
	b->dev->bytes -= b->nbytes;
	free(b);
}

void buffers_release_to(buffer_table *t, gpud_buffer *b, buffer_spares *sp)
{
	if (!b->live || b->refs != 1 || sp->n == BUFFER_SPARES || b->nbytes == 0 ||
	    (sp->n > 0 && sp->dev != b->dev)) {
		buffers_release(t, b);
		return;
	}
	sp->dev = b->dev;
	sp->mem[sp->n] = b->mem;
	sp->bytes[sp->n++] = b->nbytes;
	b->mem = NULL;
	buffers_release(t, b); /* the record and the accounting; no memory to free */
}

void buffers_spares_free(buffer_table *t, buffer_spares *sp)
{
	for (int i = 0; i < sp->n; i++)
		backend_free(&sp->dev->be, sp->mem[i]);
	sp->n = 0;
	sp->want = 0;
}

void buffers_release(buffer_table *t, gpud_buffer *b)
{
	if (!b->live)
		return;
	b->live = 0;
	HASH_DELETE(hh, t->by_handle, b);
	if (b->owner) {
		DL_DELETE2(b->owner->buffers, b, sprev, snext);
		b->owner->nbuffers--;
		b->owner->bytes -= b->nbytes;
		b->owner = NULL;
	} else if (b->kept && b->tenant) {
		DL_DELETE2(b->tenant->kept, b, sprev, snext);
		b->tenant->nkept--;
	}
	if (b->tenant) {
		b->tenant->bytes -= b->nbytes;
		b->tenant->nbuffers--;
		b->tenant->dev_bytes[b->dev->slot] -= b->nbytes;
		b->tenant->dev_nbuffers[b->dev->slot]--;
		buffers_temp(b);
	}
	t->count--;
	buffer_unref(t, b);
}

gpud_session *sessions_get(buffer_table *t, uint32_t pipe_id, int create)
{
	gpud_session *s;
	ON_LOOP("sessions_get");
	HASH_FIND(hh, t->sessions, &pipe_id, sizeof(pipe_id), s);
	if (s != NULL || !create)
		return s;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->pipe_id = pipe_id;
	s->peer_uid = -1;
	s->peer_pid = -1;
	if (getrandom(s->key, sizeof(s->key), 0) != (ssize_t)sizeof(s->key)) {
		log_error("getrandom: %s", strerror(errno));
		abort();
	}
	HASH_ADD(hh, t->sessions, pipe_id, sizeof(s->pipe_id), s);
	return s;
}

void sessions_close(buffer_table *t, uint32_t pipe_id)
{
	gpud_session *s = sessions_get(t, pipe_id, 0);
	if (s == NULL)
		return;
	if (s->nbuffers)
		log_debug("connection %u closed: releasing %zu buffers (%llu bytes)", pipe_id,
			  s->nbuffers, (unsigned long long)s->bytes);
	if (t->on_session_close)
		t->on_session_close(t->hook_arg, s);
	while (s->buffers)
		buffers_release(t, s->buffers);
	if (s->probe)
		t->probes--;
	HASH_DELETE(hh, t->sessions, s);
	free(s);
}

size_t sessions_count(const buffer_table *t)
{
	return HASH_COUNT(t->sessions);
}

size_t sessions_count_clients(const buffer_table *t)
{
	return HASH_COUNT(t->sessions) - t->probes;
}

void sessions_mark_probe(buffer_table *t, gpud_session *s)
{
	if (!s->probe) {
		s->probe = 1;
		t->probes++;
	}
}

void buffers_fini(buffer_table *t)
{
	gpud_session *s, *tmp;
	HASH_ITER(hh, t->sessions, s, tmp)
	{
		sessions_close(t, s->pipe_id);
	}
	gpud_tenant *tn, *ttmp;
	HASH_ITER(hh, t->tenants, tn, ttmp)
	{
		while (tn->kept)
			buffers_release(t, tn->kept);
		HASH_DELETE(hh, t->tenants, tn);
		free(tn);
	}
}
