/*
 * client/transfer.c — buffers' bytes: alloc, upload and download (also
 * straight from and to .npy files), in message-sized pieces, named in a
 * host region, or double-buffered through the scratch region on two
 * requests in flight (one such transfer at a time per client: scratch_mu);
 * sync and free. Each public call is its *_once body under CLIENT_RETRY.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client/internal.h"

/* The handle an alloc reply carries; frees the reply. */
static gpud_status alloc_reply(gpud_client *c, Gpud__Response *r, gpud_handle *out)
{
	gpud_status st = client_expect_body(c, r, GPUD__RESPONSE__BODY_ALLOC, "alloc");
	if (st != GPUD_OK)
		return st;
	if (r->alloc->buffer == NULL)
		st = client_seterr(c, GPUD_EPROTO, "alloc: the reply has no buffer description");
	else
		*out = r->alloc->buffer->handle;
	gpud__response__free_unpacked(r, NULL);
	return st;
}

static gpud_status upload_once(gpud_client *c, gpud_handle h, uint64_t offset, const void *data,
			       size_t len);
static gpud_status free_once(gpud_client *c, const char *tenant, const gpud_handle *handles,
			     size_t n);

static gpud_status alloc_once(gpud_client *c, gpud_dtype dtype, int ndim, const uint64_t *shape,
			      const void *data, gpud_handle *out)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (ndim < 0 || ndim > GPUD_MAX_DIMS || (ndim > 0 && shape == NULL))
		return client_seterr(c, GPUD_EARG,
				     "gpud_alloc: ndim must be 0 to %d with a shape, got %d",
				     GPUD_MAX_DIMS, ndim);
	size_t esize = gpud_dtype_size(dtype);
	if (esize == 0)
		return client_seterr(c, GPUD_EARG, "gpud_alloc: dtype %d is not a gpud_dtype",
				     (int)dtype);
	size_t nbytes = gpud_shape_bytes(shape, ndim, esize);
	if (nbytes == SIZE_MAX)
		return client_seterr(c, GPUD_E2BIG, "gpud_alloc: the shape overflows size_t");
	/* Data in a host region is named, not sent. Other data that fits goes
	 * with the alloc; more (or, over ipc://, 1 MiB and up) is uploaded after. */
	Gpud__HostRef from = GPUD__HOST_REF__INIT;
	uint64_t roff = 0;
	uint64_t rg = data && nbytes ? client_region_of(c, data, nbytes, &roff) : 0;
	int inline_data = data != NULL && rg == 0 && nbytes <= client_chunk_limit(c) &&
			  !(gpud_has_shm(c) && nbytes >= SHM_MIN);
	a.dtype = (Gpud__DType)dtype;
	a.n_shape = (size_t)ndim;
	a.shape = (uint64_t *)shape;
	a.with_data = inline_data;
	a.keep = __atomic_load_n(&c->keep, __ATOMIC_RELAXED);
	client_device_into(c, &a.pin_device, &a.device);
	if (rg) {
		from.region = rg;
		from.offset = roff;
		a.from = &from;
		data = NULL; /* sent already */
	}
	req.body_case = GPUD__REQUEST__BODY_ALLOC;
	req.alloc = &a;
	if ((st = client_call(c, &req, data, inline_data ? nbytes : 0, &r, NULL, NULL, NULL)) !=
	    GPUD_OK)
		return st;
	gpud_handle h;
	if ((st = alloc_reply(c, r, &h)) != GPUD_OK)
		return st;
	if (data != NULL && !inline_data && (st = upload_once(c, h, 0, data, nbytes)) != GPUD_OK) {
		char msg[2048];
		snprintf(msg, sizeof(msg), "%s", client_msg(c));
		free_once(c, NULL, &h, 1); /* keep the upload's error, not the free's */
		client_seterr(c, st, "%s", msg);
		return st;
	}
	*out = h;
	return GPUD_OK;
}

gpud_status gpud_alloc(gpud_client *c, gpud_dtype dtype, int ndim, const uint64_t *shape,
		       const void *data, gpud_handle *out)
{
	CLIENT_RETRY(c, alloc_once(c, dtype, ndim, shape, data, out));
}

static gpud_status upload_one(gpud_client *c, gpud_handle h, uint64_t offset, const void *data,
			      size_t len)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UploadRequest u = GPUD__UPLOAD_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	u.handle = h;
	u.offset = offset;
	req.body_case = GPUD__REQUEST__BODY_UPLOAD;
	req.upload = &u;
	if ((st = client_call(c, &req, data, len, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

/* One request: len bytes at offset roff of region rg into h at offset. */
static gpud_status upload_region(gpud_client *c, gpud_handle h, uint64_t offset, uint64_t rg,
				 uint64_t roff, size_t len)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UploadRequest u = GPUD__UPLOAD_REQUEST__INIT;
	Gpud__HostRef from = GPUD__HOST_REF__INIT;
	Gpud__Response *r;
	gpud_status st;

	from.region = rg;
	from.offset = roff;
	u.handle = h;
	u.offset = offset;
	u.from = &from;
	u.length = len;
	req.body_case = GPUD__REQUEST__BODY_UPLOAD;
	req.upload = &u;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

static gpud_status async_open(gpud_client *c)
{
	for (int i = 0; i < 2; i++) {
		if (c->ar[i].x)
			continue;
		if ((c->ar[i].x = client_ctx_get(c)) == NULL)
			return GPUD_ENOMEM;
		c->ar[i].busy = 0;
	}
	return GPUD_OK;
}

/* Sends req (session gen) on a's context and starts waiting for its reply. */
static gpud_status async_send(gpud_client *c, uint64_t gen, async_req *a, Gpud__Request *req)
{
	nng_msg *m;
	int rv, t = client_timeout(c);
	gpud_status st;
	if ((st = client_pack(c, req, NULL, 0, &m, NULL)) != GPUD_OK)
		return st;
	a->id = req->id;
	nng_aio_set_timeout(a->x->aio, t > 0 ? t : c->connect_timeout_ms);
	nng_aio_set_msg(a->x->aio, m);
	nng_ctx_send(a->x->ctx, a->x->aio);
	nng_aio_wait(a->x->aio);
	if ((rv = nng_aio_result(a->x->aio)) != 0) {
		nng_msg_free(m);
		if ((st = client_closed_draining(c, gen, rv, 0)) != GPUD_OK)
			return st;
		return client_seterr(c, client_nng_status(rv), "sending to %s: %s", client_url(c),
				     nng_strerror(rv));
	}
	nng_aio_set_timeout(a->x->aio, t > 0 ? t : NNG_DURATION_INFINITE);
	nng_ctx_recv(a->x->ctx, a->x->aio);
	a->busy = 1;
	return GPUD_OK;
}

/* Waits for a's reply (if one is due); GPUD_OK if it says OK. */
static gpud_status async_wait(gpud_client *c, uint64_t gen, async_req *a)
{
	Gpud__Response *r;
	int rv;
	if (!a->busy)
		return GPUD_OK;
	a->busy = 0;
	nng_aio_wait(a->x->aio);
	if ((rv = nng_aio_result(a->x->aio)) != 0) {
		if (rv != NNG_ETIMEDOUT)
			client_session_lost(c, gen);
		gpud_status down = client_closed_draining(c, gen, rv, 1);
		if (down != GPUD_OK)
			return down;
		return client_seterr(c, client_nng_status(rv), "waiting for the reply from %s: %s",
				     client_url(c), nng_strerror(rv));
	}
	gpud_status st = client_take_reply(c, gen, nng_aio_get_msg(a->x->aio), a->id, &r, NULL,
					   NULL, NULL);
	if (st == GPUD_OK)
		gpud__response__free_unpacked(r, NULL);
	return st;
}

/* Waits for both; the first error wins. */
static gpud_status async_drain(gpud_client *c, uint64_t gen, gpud_status st)
{
	char msg[2048];
	snprintf(msg, sizeof(msg), "%s", client_msg(c));
	for (int i = 0; i < 2; i++) {
		gpud_status s2 = async_wait(c, gen, &c->ar[i]);
		if (st == GPUD_OK)
			st = s2;
		else
			client_seterr(c, st, "%s", msg);
	}
	return st;
}

/* An upload or download of n bytes between h at offset and the scratch region at roff. */
static void scratch_request(gpud_client *c, int upload, gpud_handle h, uint64_t offset,
			    uint64_t roff, size_t n, Gpud__Request *req, Gpud__UploadRequest *u,
			    Gpud__DownloadRequest *d, Gpud__HostRef *ref)
{
	gpud__request__init(req);
	gpud__host_ref__init(ref);
	ref->region = c->scratch.id;
	ref->offset = roff;
	if (upload) {
		gpud__upload_request__init(u);
		u->handle = h;
		u->offset = offset;
		u->from = ref;
		u->length = n;
		req->body_case = GPUD__REQUEST__BODY_UPLOAD;
		req->upload = u;
	} else {
		gpud__download_request__init(d);
		d->handle = h;
		d->offset = offset;
		d->length = n;
		d->to = ref;
		req->body_case = GPUD__REQUEST__BODY_DOWNLOAD;
		req->download = d;
	}
}

/*
 * Ordinary memory through the scratch region, double-buffered: while gpud
 * copies one half to (or from) the device, this thread fills (or empties)
 * the other. scratch_mu is held.
 */
static gpud_status bounce_locked(gpud_client *c, uint64_t gen, int upload, gpud_handle h,
				 uint64_t offset, char *mem, size_t len)
{
	Gpud__Request req;
	Gpud__UploadRequest u;
	Gpud__DownloadRequest d;
	Gpud__HostRef ref;
	gpud_status st;
	size_t half = c->scratch.size / 2;
	size_t nchunks = (len + half - 1) / half;

	if ((st = async_open(c)) != GPUD_OK)
		return st;
	if (upload) {
		for (size_t k = 0; k < nchunks; k++) {
			async_req *a = &c->ar[k % 2];
			size_t off = k * half, n = len - off < half ? len - off : half;
			if ((st = async_wait(c, gen, a)) != GPUD_OK)
				return async_drain(c, gen, st);
			memcpy((char *)c->scratch.base + (k % 2) * half, mem + off, n);
			scratch_request(c, 1, h, offset + off, (k % 2) * half, n, &req, &u, &d,
					&ref);
			if ((st = async_send(c, gen, a, &req)) != GPUD_OK)
				return async_drain(c, gen, st);
		}
		return async_drain(c, gen, GPUD_OK);
	}
	/* Downloads: chunk k+1 is requested before chunk k is copied out. */
	for (size_t k = 0; k <= nchunks; k++) {
		if (k < nchunks) {
			size_t off = k * half, n = len - off < half ? len - off : half;
			scratch_request(c, 0, h, offset + off, (k % 2) * half, n, &req, &u, &d,
					&ref);
			if ((st = async_send(c, gen, &c->ar[k % 2], &req)) != GPUD_OK)
				return async_drain(c, gen, st);
		}
		if (k > 0) {
			size_t j = k - 1, off = j * half, n = len - off < half ? len - off : half;
			if ((st = async_wait(c, gen, &c->ar[j % 2])) != GPUD_OK)
				return async_drain(c, gen, st);
			memcpy(mem + off, (char *)c->scratch.base + (j % 2) * half, n);
		}
	}
	return GPUD_OK;
}

/*
 * Through the scratch region if it can be had: 1 with *st set, or 0 when
 * the caller should use messages instead (no region socket, or refused).
 */
static int bounce(gpud_client *c, int upload, gpud_handle h, uint64_t offset, char *mem, size_t len,
		  gpud_status *st)
{
	uint64_t gen;
	if ((*st = client_session(c, &gen)) != GPUD_OK)
		return 1;
	pthread_mutex_lock(&c->scratch_mu);
	if (client_scratch(c, len) != GPUD_OK) {
		pthread_mutex_unlock(&c->scratch_mu);
		client_clear(c); /* a scratch region refused: messages still work */
		return 0;
	}
	*st = bounce_locked(c, gen, upload, h, offset, mem, len);
	pthread_mutex_unlock(&c->scratch_mu);
	return 1;
}

/* --- bytes in messages, several in flight ------------------------------------------ */

/*
 * Bulk bytes through messages (tcp://, tls+tcp://, ipc:// without regions)
 * go in MSG_CHUNK pieces with up to MSG_DEPTH requests in flight: the
 * socket stays busy while each side copies, and pieces of this size are
 * reused by the allocators on both sides instead of being fresh mappings
 * whose page faults cost more than the copy (one 64 MiB message: ~1 GB/s).
 */
#define MSG_CHUNK (4u << 20)
#define MSG_DEPTH 4

typedef struct piece {
	call_ctx *x;
	uint64_t id;
	size_t off, n;
	int busy;
} piece;

/* Waits for p's reply; a download's bytes go to mem + p->off. */
static gpud_status piece_wait(gpud_client *c, uint64_t gen, piece *p, char *mem, int upload)
{
	Gpud__Response *r;
	nng_msg *m;
	uint8_t *pl;
	size_t pll;
	int rv;
	if (!p->busy)
		return GPUD_OK;
	p->busy = 0;
	nng_aio_wait(p->x->aio);
	if ((rv = nng_aio_result(p->x->aio)) != 0) {
		if (rv == NNG_ETIMEDOUT)
			client_cancel_async(c, p->id);
		else
			client_session_lost(c, gen);
		gpud_status down = client_closed_draining(c, gen, rv, 1);
		if (down != GPUD_OK)
			return down;
		return client_seterr(c, client_nng_status(rv), "waiting for the reply from %s: %s",
				     client_url(c), nng_strerror(rv));
	}
	gpud_status st = client_take_reply(c, gen, nng_aio_get_msg(p->x->aio), p->id, &r, &m, &pl,
					   &pll);
	if (st != GPUD_OK)
		return st;
	if (!upload && pll != p->n)
		st = client_seterr(c, GPUD_EPROTO, "download: asked for %zu bytes, got %zu", p->n,
				   pll);
	else if (!upload)
		memcpy(mem + p->off, pl, pll);
	gpud__response__free_unpacked(r, NULL);
	nng_msg_free(m);
	return st;
}

static gpud_status piece_send(gpud_client *c, uint64_t gen, piece *p, int upload, gpud_handle h,
			      uint64_t offset, const char *mem)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UploadRequest u = GPUD__UPLOAD_REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	nng_msg *m;
	int rv, t = client_timeout(c);
	gpud_status st;
	if (upload) {
		u.handle = h;
		u.offset = offset + p->off;
		req.body_case = GPUD__REQUEST__BODY_UPLOAD;
		req.upload = &u;
	} else {
		d.handle = h;
		d.offset = offset + p->off;
		d.length = p->n;
		req.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
		req.download = &d;
	}
	if ((st = client_pack(c, &req, upload ? mem + p->off : NULL, upload ? p->n : 0, &m,
			      NULL)) != GPUD_OK)
		return st;
	p->id = req.id;
	nng_aio_set_timeout(p->x->aio, t > 0 ? t : c->connect_timeout_ms);
	nng_aio_set_msg(p->x->aio, m);
	nng_ctx_send(p->x->ctx, p->x->aio);
	nng_aio_wait(p->x->aio);
	if ((rv = nng_aio_result(p->x->aio)) != 0) {
		nng_msg_free(m);
		if ((st = client_closed_draining(c, gen, rv, 0)) != GPUD_OK)
			return st;
		return client_seterr(c, client_nng_status(rv), "sending to %s: %s", client_url(c),
				     nng_strerror(rv));
	}
	nng_aio_set_timeout(p->x->aio, t > 0 ? t : NNG_DURATION_INFINITE);
	nng_ctx_recv(p->x->ctx, p->x->aio);
	p->busy = 1;
	return GPUD_OK;
}

/* len bytes between mem and h at offset, in pieces, MSG_DEPTH at a time. */
static gpud_status msg_stream(gpud_client *c, int upload, gpud_handle h, uint64_t offset, char *mem,
			      size_t len)
{
	piece ps[MSG_DEPTH];
	uint64_t gen;
	gpud_status st, st2;
	/* uploads fit what one request may carry (the tenant's message_size
	 * quota too), downloads what one reply may */
	size_t limit = upload ? client_chunk_limit(c) : client_reply_limit(c);
	size_t chunk = limit < MSG_CHUNK ? limit : MSG_CHUNK;
	size_t n = (len + chunk - 1) / chunk;

	if ((st = client_session(c, &gen)) != GPUD_OK)
		return st;
	memset(ps, 0, sizeof(ps));
	for (size_t k = 0; k < n && st == GPUD_OK; k++) {
		piece *p = &ps[k % MSG_DEPTH];
		if ((st = piece_wait(c, gen, p, mem, upload)) != GPUD_OK)
			break;
		if (p->x == NULL && (p->x = client_ctx_get(c)) == NULL) {
			st = GPUD_ENOMEM;
			break;
		}
		p->off = k * chunk;
		p->n = len - p->off < chunk ? len - p->off : chunk;
		st = piece_send(c, gen, p, upload, h, offset, mem);
	}
	char msg[2048];
	snprintf(msg, sizeof(msg), "%s", client_msg(c));
	for (int i = 0; i < MSG_DEPTH; i++) { /* the rest, the first error kept */
		if ((st2 = piece_wait(c, gen, &ps[i], mem, upload)) != GPUD_OK && st == GPUD_OK)
			st = st2;
		else if (st != GPUD_OK && st2 != GPUD_OK)
			client_seterr(c, st, "%s", msg);
		if (ps[i].x)
			client_ctx_put(c, ps[i].x);
	}
	return st;
}

/*
 * From a host region: one request. From other memory over ipc:// (1 MiB and
 * up): through the scratch region. Otherwise in message-sized pieces.
 */
static gpud_status upload_once(gpud_client *c, gpud_handle h, uint64_t offset, const void *data,
			       size_t len)
{
	size_t limit = client_chunk_limit(c), done = 0;
	uint64_t roff, rg;
	gpud_status st;

	if (data == NULL && len > 0)
		return client_seterr(c, GPUD_EARG, "gpud_upload: data is NULL");
	if (len > 0 && (rg = client_region_of(c, data, len, &roff)) != 0)
		return upload_region(c, h, offset, rg, roff, len);
	if (gpud_has_shm(c) && len >= SHM_MIN && bounce(c, 1, h, offset, (char *)data, len, &st))
		return st;
	if (len > MSG_CHUNK)
		return msg_stream(c, 1, h, offset, (char *)data, len);
	do {
		size_t n = len - done < limit ? len - done : limit;
		if ((st = upload_one(c, h, offset + done, (const char *)data + done, n)) != GPUD_OK)
			return st;
		done += n;
	} while (done < len);
	return GPUD_OK;
}

gpud_status gpud_upload(gpud_client *c, gpud_handle h, uint64_t offset, const void *data,
			size_t len)
{
	CLIENT_RETRY(c, upload_once(c, h, offset, data, len));
}

/* Builds the alloc request once the .npy header is known; data goes into it. */
struct npy_req {
	gpud_client *c;
	nng_msg *msg;
	uint64_t id;
	gpud_status st;
	void *big;  /* more than one message: read here, then uploaded in pieces */
	region tmp; /* or read into this region (base NULL if not) */
};

static void *npy_into_request(void *ctx, const gpud_array *meta)
{
	struct npy_req *nr = ctx;
	gpud_client *c = nr->c;
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	void *payload;

	/* Over ipc://, a big file is read straight into a region gpud maps; not
	 * pinned: pinning costs more than it saves for one copy. */
	if (gpud_has_shm(c) && meta->nbytes >= SHM_MIN &&
	    client_region_make(c, meta->nbytes, 0, 0, &nr->tmp) == GPUD_OK)
		return nr->tmp.base;
	client_clear(c);
	if (meta->nbytes > client_chunk_limit(c))
		return nr->big = malloc(meta->nbytes);
	a.dtype = (Gpud__DType)meta->dtype;
	a.n_shape = (size_t)meta->ndim;
	a.shape = (uint64_t *)meta->shape;
	a.with_data = 1;
	a.keep = __atomic_load_n(&c->keep, __ATOMIC_RELAXED);
	client_device_into(c, &a.pin_device, &a.device);
	req.body_case = GPUD__REQUEST__BODY_ALLOC;
	req.alloc = &a;
	if ((nr->st = client_pack(c, &req, NULL, meta->nbytes, &nr->msg, &payload)) != GPUD_OK)
		return NULL;
	nr->id = req.id;
	return meta->nbytes ? payload : (void *)nng_msg_body(nr->msg);
}

/* An alloc whose contents are the start of region rg. */
static gpud_status alloc_from_region(gpud_client *c, const gpud_array *arr, const region *rg,
				     gpud_handle *out)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	Gpud__HostRef from = GPUD__HOST_REF__INIT;
	Gpud__Response *r;
	gpud_status st;

	from.region = rg->id;
	a.dtype = (Gpud__DType)arr->dtype;
	a.n_shape = (size_t)arr->ndim;
	a.shape = (uint64_t *)arr->shape;
	a.from = &from;
	a.keep = __atomic_load_n(&c->keep, __ATOMIC_RELAXED);
	client_device_into(c, &a.pin_device, &a.device);
	req.body_case = GPUD__REQUEST__BODY_ALLOC;
	req.alloc = &a;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	return alloc_reply(c, r, out);
}

static gpud_status alloc_npy_once(gpud_client *c, const char *path, gpud_handle *out,
				  gpud_array *meta)
{
	struct npy_req nr = {.c = c, .st = GPUD_OK};
	gpud_array arr;
	Gpud__Response *r;
	char err[1024];
	gpud_status st;
	uint64_t gen;

	if ((st = client_session(c, &gen)) != GPUD_OK)
		return st;
	int lrv = gpud_npy_load_into(path, npy_into_request, &nr, &arr, err, sizeof(err));
	if (nr.tmp.base) {
		/* Allocated from the region, then the region goes. */
		st = lrv != 0 ? (nr.st != GPUD_OK ? nr.st : client_seterr(c, GPUD_EARG, "%s", err))
			      : alloc_from_region(c, &arr, &nr.tmp, out);
		char msg[2048];
		snprintf(msg, sizeof(msg), "%s", client_msg(c));
		client_region_unmap(c, nr.tmp.id);
		munmap(nr.tmp.base, nr.tmp.size);
		if (st != GPUD_OK)
			client_seterr(c, st, "%s", msg);
		else
			client_clear(c);
		if (st == GPUD_OK && meta) {
			*meta = arr;
			meta->data = NULL;
		}
		return st;
	}
	if (lrv != 0) {
		if (nr.msg)
			nng_msg_free(nr.msg);
		free(nr.big);
		if (nr.st != GPUD_OK)
			return nr.st;
		return client_seterr(c, GPUD_EARG, "%s", err);
	}
	if (nr.big) {
		st = alloc_once(c, arr.dtype, arr.ndim, arr.shape, nr.big, out);
		free(nr.big);
		if (st == GPUD_OK && meta) {
			*meta = arr;
			meta->data = NULL;
		}
		return st;
	}
	if ((st = client_exchange(c, gen, nr.msg, nr.id, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = alloc_reply(c, r, out)) != GPUD_OK)
		return st;
	if (meta) {
		*meta = arr;
		meta->data = NULL;
	}
	return GPUD_OK;
}

gpud_status gpud_alloc_npy(gpud_client *c, const char *path, gpud_handle *out, gpud_array *meta)
{
	CLIENT_RETRY(c, alloc_npy_once(c, path, out, meta));
}

/* Downloads [offset, offset+len) (len 0: to the end); the reply stays in *m. */
static gpud_status download(gpud_client *c, gpud_handle h, uint64_t offset, uint64_t len,
			    Gpud__Response **r, nng_msg **m, uint8_t **pl, size_t *pll)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	gpud_status st;

	d.handle = h;
	d.offset = offset;
	d.length = len;
	/* Over ipc://, the first piece of a big buffer is kept small: the rest
	 * comes through the scratch region. */
	if (len == 0 && gpud_has_shm(c))
		d.max_length = SHM_MIN;
	else if (len == 0) /* the rest comes in pieces, several at a time */
		d.max_length = MSG_CHUNK;
	req.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	req.download = &d;
	if ((st = client_call(c, &req, NULL, 0, r, m, pl, pll)) != GPUD_OK)
		return st;
	if ((*r)->body_case != GPUD__RESPONSE__BODY_DOWNLOAD || (*r)->download->buffer == NULL) {
		gpud__response__free_unpacked(*r, NULL);
		nng_msg_free(*m);
		return client_seterr(c, GPUD_EPROTO,
				     "download: the reply has no buffer description");
	}
	return GPUD_OK;
}

/*
 * The first piece of a whole-buffer download: the reply says the buffer's
 * dtype and shape (into *meta, data NULL) and carries as much as one message
 * may; the caller fetches the rest with gpud_download_range.
 */
static gpud_status download_first(gpud_client *c, gpud_handle h, gpud_array *meta,
				  Gpud__Response **r, nng_msg **m, uint8_t **pl, size_t *pll)
{
	gpud_status st;

	memset(meta, 0, sizeof(*meta));
	if ((st = download(c, h, 0, 0, r, m, pl, pll)) != GPUD_OK)
		return st;
	Gpud__BufferInfo *b = (*r)->download->buffer;
	size_t esize = gpud_dtype_size((gpud_dtype)b->dtype);
	size_t total = b->n_shape <= GPUD_MAX_DIMS
			       ? gpud_shape_bytes(b->shape, (int)b->n_shape, esize)
			       : SIZE_MAX;
	if (esize == 0 || total == SIZE_MAX || *pll > total) {
		gpud__response__free_unpacked(*r, NULL);
		nng_msg_free(*m);
		return client_seterr(
			c, GPUD_EPROTO,
			"download: %zu payload bytes do not match the buffer's dtype and shape",
			*pll);
	}
	meta->dtype = (gpud_dtype)b->dtype;
	meta->ndim = (int)b->n_shape;
	if (b->n_shape) /* protobuf-c gives NULL for an empty shape (0-d) */
		memcpy(meta->shape, b->shape, b->n_shape * sizeof(uint64_t));
	meta->nbytes = total;
	return GPUD_OK;
}

static gpud_status download_range_once(gpud_client *c, gpud_handle h, uint64_t offset, void *dst,
				       size_t len);

/* Into out->data (malloc'd, total bytes): the first piece, then the rest. */
static gpud_status download_whole(gpud_client *c, gpud_handle h, gpud_array *out)
{
	Gpud__Response *r;
	nng_msg *m;
	uint8_t *pl;
	size_t pll;
	gpud_status st;

	if ((st = download_first(c, h, out, &r, &m, &pl, &pll)) != GPUD_OK)
		return st;
	if ((out->data = malloc(out->nbytes ? out->nbytes : 1)) == NULL)
		st = client_seterr(c, GPUD_ENOMEM, "download: cannot allocate %zu bytes",
				   out->nbytes);
	else
		memcpy(out->data, pl, pll);
	gpud__response__free_unpacked(r, NULL);
	nng_msg_free(m);
	if (st == GPUD_OK && pll < out->nbytes)
		st = download_range_once(c, h, pll, (char *)out->data + pll, out->nbytes - pll);
	if (st != GPUD_OK)
		gpud_array_free(out);
	return st;
}

gpud_status gpud_download(gpud_client *c, gpud_handle h, gpud_array *out)
{
	CLIENT_RETRY(c, download_whole(c, h, out));
}

static gpud_status download_npy_once(gpud_client *c, gpud_handle h, const char *path)
{
	Gpud__Response *r;
	nng_msg *m;
	uint8_t *pl;
	size_t pll;
	char err[1024];
	gpud_status st;

	gpud_array view;
	if ((st = download_first(c, h, &view, &r, &m, &pl, &pll)) != GPUD_OK)
		return st;
	if (pll == view.nbytes) {
		view.data = pl; /* one message: written to the file straight from the reply */
		if (gpud_npy_save(path, &view, err, sizeof(err)) != 0)
			st = client_seterr(c, GPUD_EARG, "%s", err);
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return st;
	}
	gpud__response__free_unpacked(r, NULL);
	nng_msg_free(m);
	/* Larger than a message: gather the pieces, then write. */
	if ((st = download_whole(c, h, &view)) != GPUD_OK)
		return st;
	if (gpud_npy_save(path, &view, err, sizeof(err)) != 0)
		st = client_seterr(c, GPUD_EARG, "%s", err);
	gpud_array_free(&view);
	return st;
}

gpud_status gpud_download_npy(gpud_client *c, gpud_handle h, const char *path)
{
	CLIENT_RETRY(c, download_npy_once(c, h, path));
}

/* One request: len bytes of h at offset into region rg at roff. */
static gpud_status download_region(gpud_client *c, gpud_handle h, uint64_t offset, uint64_t rg,
				   uint64_t roff, size_t len)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	Gpud__HostRef to = GPUD__HOST_REF__INIT;
	Gpud__Response *r;
	gpud_status st;

	to.region = rg;
	to.offset = roff;
	d.handle = h;
	d.offset = offset;
	d.length = len;
	d.to = &to;
	req.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	req.download = &d;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

/*
 * No bytes at offset: gpud still checks the handle and the offset (past the
 * end is refused; the end itself is fine). Length 0 on the wire means "to
 * the end", so at most one byte is asked for and dropped.
 */
static gpud_status download_nothing(gpud_client *c, gpud_handle h, uint64_t offset)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	d.handle = h;
	d.offset = offset;
	d.max_length = 1;
	req.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	req.download = &d;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

static gpud_status download_range_once(gpud_client *c, gpud_handle h, uint64_t offset, void *dst,
				       size_t len)
{
	Gpud__Response *r;
	nng_msg *m;
	uint8_t *pl;
	size_t pll;
	gpud_status st;

	if (len == 0)
		return download_nothing(c, h, offset);
	if (dst == NULL)
		return client_seterr(c, GPUD_EARG, "gpud_download_range: dst is NULL");
	uint64_t roff;
	uint64_t rg = client_region_of(c, dst, len, &roff);
	if (rg)
		return download_region(c, h, offset, rg, roff, len);
	if (gpud_has_shm(c) && len >= SHM_MIN && bounce(c, 0, h, offset, dst, len, &st))
		return st;
	if (len > MSG_CHUNK)
		return msg_stream(c, 0, h, offset, dst, len);
	size_t limit = client_reply_limit(c);
	for (size_t done = 0; done < len;) {
		size_t n = len - done < limit ? len - done : limit;
		if ((st = download(c, h, offset + done, n, &r, &m, &pl, &pll)) != GPUD_OK)
			return st;
		if (pll != n)
			st = client_seterr(c, GPUD_EPROTO, "download: asked for %zu bytes, got %zu",
					   n, pll);
		else
			memcpy((char *)dst + done, pl, n);
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		if (st != GPUD_OK)
			return st;
		done += n;
	}
	return GPUD_OK;
}

gpud_status gpud_download_range(gpud_client *c, gpud_handle h, uint64_t offset, void *dst,
				size_t len)
{
	CLIENT_RETRY(c, download_range_once(c, h, offset, dst, len));
}

static gpud_status sync_once(gpud_client *c)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__SyncRequest s = GPUD__SYNC_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	req.body_case = GPUD__REQUEST__BODY_SYNC;
	req.sync = &s;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	st = client_expect_body(c, r, GPUD__RESPONSE__BODY_SYNC, "sync");
	if (st == GPUD_OK)
		gpud__response__free_unpacked(r, NULL);
	return st;
}

gpud_status gpud_sync(gpud_client *c)
{
	CLIENT_RETRY(c, sync_once(c));
}

static gpud_status free_once(gpud_client *c, const char *tenant, const gpud_handle *handles,
			     size_t n)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__FreeRequest f = GPUD__FREE_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (n == 0)
		return GPUD_OK;
	f.n_handles = n;
	f.handles = (uint64_t *)handles;
	f.tenant = (char *)(tenant ? tenant : "");
	req.body_case = GPUD__REQUEST__BODY_FREE;
	req.free = &f;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

gpud_status gpud_free(gpud_client *c, const gpud_handle *handles, size_t n)
{
	CLIENT_RETRY(c, free_once(c, NULL, handles, n));
}

gpud_status gpud_free_tenant(gpud_client *c, const char *tenant, const gpud_handle *handles,
			     size_t n)
{
	if (tenant == NULL || tenant[0] == '\0')
		return client_seterr(c, GPUD_EARG, "gpud_free_tenant: tenant is empty");
	CLIENT_RETRY(c, free_once(c, tenant, handles, n));
}
