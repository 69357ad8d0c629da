/*
 * daemon/verbs/buffers.c — buffers and host regions: alloc, upload,
 * download, free, list (kept buffers), unmap, and sync (a session's queue).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/verbs/verbs.h"
#include "proto/wire.h"

/* --- alloc ---------------------------------------------------------------------- */

static void alloc_done(void *arg, dstatus status, const char *msg)
{
	gpud_request *r = arg;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__AllocResponse ar = GPUD__ALLOC_RESPONSE__INIT;
	Gpud__BufferInfo info;

	if (status != ST_OK) {
		request_fail(r, status, "alloc: %s", msg ? msg : "backend failure");
		return;
	}
	verb_buffer_info(r->created[0], &info);
	ar.buffer = &info;
	resp.body_case = GPUD__RESPONSE__BODY_ALLOC;
	resp.alloc = &ar;
	request_reply(r, &resp, NULL, 0);
}

void verb_alloc(gpud_request *r)
{
	Gpud__AllocRequest *a = r->req->alloc;
	gpud_buffer *b;
	char err[512], shape[256];
	dstatus rv;

	if (a->n_shape > GPUD_MAX_DIMS) {
		request_fail(r, ST_INVALID,
			     "alloc: an array may have at most %d dimensions, got %zu",
			     GPUD_MAX_DIMS, a->n_shape);
		return;
	}
	if (gpud_dtype_size((gpud_dtype)a->dtype) == 0) {
		request_fail(r, ST_INVALID,
			     "alloc: dtype %d is not one of float32, float64, int32, int64",
			     (int)a->dtype);
		return;
	}
	size_t want = gpud_shape_bytes(a->shape, (int)a->n_shape,
				       gpud_dtype_size((gpud_dtype)a->dtype));
	if (want == SIZE_MAX) {
		request_fail(r, ST_TOO_LARGE,
			     "alloc: shape with %zu dimensions overflows the address space",
			     a->n_shape);
		return;
	}
	gpud_shape_format(shape, sizeof(shape), a->shape, (int)a->n_shape);
	const void *src = r->payload;
	unsigned flags = 0;
	if (a->from) {
		if (a->with_data || r->payload_len != 0) {
			request_fail(
				r, ST_INVALID,
				"alloc: data comes either in the payload (with_data) or from a "
				"host region, not both");
			return;
		}
		if ((src = request_host_or_fail(r, "alloc", a->from, want, &flags)) == NULL)
			return;
	} else if (a->with_data && r->payload_len != want) {
		request_fail(r, ST_INVALID,
			     "alloc: payload has %zu bytes but a %s array of shape %s needs %zu",
			     r->payload_len, gpud_dtype_name((gpud_dtype)a->dtype), shape, want);
		return;
	}
	if (!a->with_data && r->payload_len != 0) {
		request_fail(r, ST_INVALID, "alloc: unexpected %zu-byte payload without with_data",
			     r->payload_len);
		return;
	}
	int pinned;
	gpud_device *dev = request_device_or_fail(r, "alloc", a->pin_device, a->device, &pinned);
	if (dev == NULL)
		return;
	r->dev = dev;
	int filled = a->with_data || a->from; /* the upload below writes it all */
	rv = buffers_alloc(r->core->buffers, r->session, a->keep, dev, pinned, filled,
			   (gpud_dtype)a->dtype, (int)a->n_shape, a->shape, &r->spares, &b, err,
			   sizeof(err));
	if (rv == ST_WOULD_BLOCK) { /* a pool miss: made on a worker, then alloc again */
		request_alloc_off_loop(r, verb_alloc);
		return;
	}
	if (rv != ST_OK) {
		request_fail(r, rv, "alloc: %s array of shape %s: %s",
			     gpud_dtype_name((gpud_dtype)a->dtype), shape, err);
		return;
	}
	request_created(r, b);
	if ((!a->with_data && !a->from) || want == 0) {
		/* Its clear runs on this session's queue: the handle goes out once
		 * the zeros are in, since other sessions of the tenant use other
		 * queues (a kept buffer). */
		if (b->cleared) {
			request_hold(r, b);
			rv = backend_sync(&dev->be, r->pipe_id, alloc_done, r, err, sizeof(err));
			if (rv != ST_OK)
				request_fail(r, rv, "alloc: %s", err);
			return;
		}
		alloc_done(r, ST_OK, NULL);
		return;
	}
	request_hold(r, b);
	rv = backend_upload(&dev->be, r->pipe_id, b->mem, src, want, flags, alloc_done, r, err,
			    sizeof(err));
	if (rv != ST_OK) {
		request_fail(r, rv, "alloc: %s", err);
	} else {
		r->bytes_up += want;
		request_moving(r, dev, want);
	}
}

/* --- upload ----------------------------------------------------------------------- */

static void upload_done(void *arg, dstatus status, const char *msg)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__UploadResponse ur = GPUD__UPLOAD_RESPONSE__INIT;
	resp.body_case = GPUD__RESPONSE__BODY_UPLOAD;
	resp.upload = &ur;
	verb_reply_empty(arg, status, msg, &resp);
}

void verb_upload(gpud_request *r)
{
	Gpud__UploadRequest *u = r->req->upload;
	gpud_buffer *b = request_buffer_or_fail(r, "upload", u->handle);
	char err[512];

	if (b == NULL)
		return;
	const void *src = r->payload;
	uint64_t len = r->payload_len;
	unsigned flags = 0;
	if (u->from) {
		if (r->payload_len != 0) {
			request_fail(
				r, ST_INVALID,
				"upload: data comes either in the payload or from a host region, "
				"not both");
			return;
		}
		len = u->length;
	} else if (u->length != 0 && u->length != r->payload_len) {
		request_fail(r, ST_INVALID, "upload: length %" PRIu64 " but a %zu-byte payload",
			     u->length, r->payload_len);
		return;
	}
	if (u->offset > b->nbytes || len > b->nbytes - u->offset) {
		request_fail(r, ST_INVALID,
			     "upload: %" PRIu64 " bytes at offset %" PRIu64
			     " do not fit in buffer %016" PRIx64 " of %zu bytes",
			     len, u->offset, b->handle, b->nbytes);
		return;
	}
	if (u->from && (src = request_host_or_fail(r, "upload", u->from, len, &flags)) == NULL)
		return;
	if (len == 0) {
		upload_done(r, ST_OK, NULL);
		return;
	}
	request_hold(r, b);
	dstatus rv = backend_upload(&b->dev->be, r->pipe_id, (char *)b->mem + u->offset, src,
				    (size_t)len, flags, upload_done, r, err, sizeof(err));
	if (rv != ST_OK) {
		request_fail(r, rv, "upload: %s", err);
	} else {
		r->bytes_up += len;
		request_moving(r, b->dev, len);
	}
}

/* --- download ---------------------------------------------------------------------- */

static void download_done(void *arg, dstatus status, const char *msg)
{
	gpud_request *r = arg;
	if (status != ST_OK) {
		request_fail(r, status, "download: %s", msg ? msg : "backend failure");
		return;
	}
	request_send_msg(r, r->reply);
}

/* A download of b into a host region: the reply only describes the buffer. */
static void download_region_reply(gpud_request *r, const gpud_buffer *b)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__DownloadResponse dr = GPUD__DOWNLOAD_RESPONSE__INIT;
	Gpud__BufferInfo info;

	verb_buffer_info(b, &info);
	dr.buffer = &info;
	dr.offset = r->req->download->offset;
	resp.body_case = GPUD__RESPONSE__BODY_DOWNLOAD;
	resp.download = &dr;
	request_reply(r, &resp, NULL, 0);
}

static void download_region_done(void *arg, dstatus status, const char *msg)
{
	gpud_request *r = arg;
	if (status != ST_OK) {
		request_fail(r, status, "download: %s", msg ? msg : "backend failure");
		return;
	}
	download_region_reply(r, r->held[0]); /* the one buffer it holds */
}

/* Into one of the connection's host regions: the bytes do not cross nng. */
static void download_to_region(gpud_request *r, gpud_buffer *b, uint64_t len)
{
	Gpud__DownloadRequest *d = r->req->download;
	unsigned flags;
	char err[512];

	void *hdst = request_host_or_fail(r, "download", d->to, len, &flags);
	if (hdst == NULL)
		return;
	if (len == 0) {
		download_region_reply(r, b);
		return;
	}
	request_hold(r, b); /* r->held[0]: the reply describes it */
	dstatus rv = backend_download(&b->dev->be, r->pipe_id, hdst, (char *)b->mem + d->offset,
				      (size_t)len, flags, download_region_done, r, err,
				      sizeof(err));
	if (rv != ST_OK) {
		request_fail(r, rv, "download: %s", err);
	} else {
		r->bytes_down += len;
		request_moving(r, b->dev, len);
	}
}

void verb_download(gpud_request *r)
{
	Gpud__DownloadRequest *d = r->req->download;
	uint64_t max_message = r->core->cfg->max_message_size;
	gpud_buffer *b = request_buffer_or_fail(r, "download", d->handle);
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__DownloadResponse dr = GPUD__DOWNLOAD_RESPONSE__INIT;
	Gpud__BufferInfo info;
	void *dst;
	char err[512];

	if (b == NULL)
		return;
	if (d->offset > b->nbytes) {
		request_fail(r, ST_INVALID,
			     "download: offset %" PRIu64 " is past the end of buffer %016" PRIx64
			     " (%zu bytes)",
			     d->offset, b->handle, b->nbytes);
		return;
	}
	uint64_t len = d->length ? d->length : b->nbytes - d->offset;
	if (d->length == 0 && d->max_length && len > d->max_length)
		len = d->max_length;
	if (d->length == 0 && len > max_message && !d->to)
		len = max_message; /* the client asks for the rest next */
	if (len > b->nbytes - d->offset) {
		request_fail(r, ST_INVALID,
			     "download: %" PRIu64 " bytes at offset %" PRIu64
			     " run past the end of buffer %016" PRIx64 " (%zu bytes)",
			     len, d->offset, b->handle, b->nbytes);
		return;
	}
	if (d->to) {
		download_to_region(r, b, len);
		return;
	}
	if (len > max_message) {
		request_fail(r, ST_TOO_LARGE,
			     "download: %" PRIu64 " bytes exceed the message size limit of %" PRIu64
			     " bytes; download in ranges",
			     len, max_message);
		return;
	}
	if (request_hold_host_or_fail(r, "download: the reply", len) != 0)
		return;
	verb_buffer_info(b, &info);
	dr.buffer = &info;
	dr.offset = d->offset;
	request_reply_head(r, &resp);
	resp.body_case = GPUD__RESPONSE__BODY_DOWNLOAD;
	resp.download = &dr;
	int prv = wire_pack(&r->reply, &resp.base, NULL, (size_t)len, &dst);
	if (prv != 0) {
		request_fail(r, ST_OUT_OF_MEMORY,
			     "download: cannot make a %" PRIu64 "-byte reply: %s", len,
			     nng_strerror(prv));
		return;
	}
	if (len == 0) {
		download_done(r, ST_OK, NULL);
		return;
	}
	request_hold(r, b);
	dstatus rv = backend_download(&b->dev->be, r->pipe_id, dst, (char *)b->mem + d->offset,
				      (size_t)len, 0, download_done, r, err, sizeof(err));
	if (rv != ST_OK) {
		request_fail(r, rv, "download: %s", err);
	} else {
		r->bytes_down += len;
		request_moving(r, b->dev, len);
	}
}

/* --- free, list, unmap ------------------------------------------------------------------ */

/*
 * An administrator (admin_tenants) freeing another tenant's kept buffers:
 * all or nothing, each handle a kept buffer of that tenant; logged. 0, or
 * -1 having replied (r is then gone).
 */
static int free_for_tenant(gpud_request *r, const char *name)
{
	Gpud__FreeRequest *f = r->req->free;
	gpud_tenant *me = r->session->tenant;
	gpud_tenant *tn;

	if (!config_is_admin(r->core->cfg, me->name)) {
		request_fail(r, ST_UNAUTHENTICATED,
			     "free --tenant %s: freeing another tenant's buffers is for "
			     "administrators; tenant %s is not in admin_tenants",
			     name, me->name);
		return -1;
	}
	if ((tn = tenants_find(r->core->buffers, name)) == NULL) {
		request_fail(r, ST_NOT_FOUND,
			     "free --tenant %s: gpud has no tenant of that name (since it started)",
			     name);
		return -1;
	}
	for (size_t i = 0; i < f->n_handles; i++) {
		gpud_buffer *b = buffers_get(r->core->buffers, tn, f->handles[i]);
		if (b == NULL) {
			request_fail(r, ST_NOT_FOUND,
				     "free --tenant %s: handle %016" PRIx64
				     " is not a buffer of tenant %s",
				     name, f->handles[i], name);
			return -1;
		}
		if (!b->kept) {
			request_fail(r, ST_INVALID,
				     "free --tenant %s: handle %016" PRIx64
				     " is not kept: it belongs to a connection of %s and goes "
				     "when that closes",
				     name, f->handles[i], name);
			return -1;
		}
	}
	size_t freed = 0;
	uint64_t bytes = 0;
	for (size_t i = 0; i < f->n_handles; i++) {
		gpud_buffer *b = buffers_get(r->core->buffers, tn, f->handles[i]);
		if (b) { /* a handle listed twice is gone the second time */
			freed++;
			bytes += b->nbytes;
			buffers_release(r->core->buffers, b);
		}
	}
	log_info("administrator %s (connection %u) freed %zu kept buffers (%" PRIu64
		 " bytes) of tenant %s",
		 me->name, r->pipe_id, freed, bytes, name);
	return 0;
}

void verb_free(gpud_request *r)
{
	Gpud__FreeRequest *f = r->req->free;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__FreeResponse fr = GPUD__FREE_RESPONSE__INIT;

	if (f->tenant && f->tenant[0] && strcmp(f->tenant, r->session->tenant->name) != 0) {
		if (free_for_tenant(r, f->tenant) != 0)
			return;
	} else {
		/* All or nothing: check every handle before releasing any. */
		for (size_t i = 0; i < f->n_handles; i++)
			if (request_buffer_or_fail(r, "free", f->handles[i]) == NULL)
				return;
		for (size_t i = 0; i < f->n_handles; i++) {
			gpud_buffer *b = buffers_get(r->core->buffers, r->session->tenant,
						     f->handles[i]);
			if (b) /* a handle listed twice is gone the second time */
				buffers_release(r->core->buffers, b);
		}
	}
	resp.body_case = GPUD__RESPONSE__BODY_FREE;
	resp.free = &fr;
	request_reply(r, &resp, NULL, 0);
}

/* The tenant's kept buffers; with all_tenants (administrators), every
 * tenant's, each with its tenant's name. */
void verb_list(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__ListResponse lr = GPUD__LIST_RESPONSE__INIT;
	gpud_tenant *me = r->session->tenant, *tn, *tmp;
	int all = r->req->list->all_tenants;
	size_t n = 0, i = 0;

	if (all && !config_is_admin(r->core->cfg, me->name)) {
		request_fail(r, ST_UNAUTHENTICATED,
			     "list --all: every tenant's buffers are for administrators; tenant %s "
			     "is not in admin_tenants",
			     me->name);
		return;
	}
	HASH_ITER(hh, r->core->buffers->tenants, tn, tmp)
	if (all || tn == me)
		n += tn->nkept;
	Gpud__BufferInfo *infos = calloc(n ? n : 1, sizeof(*infos));
	Gpud__BufferInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (infos == NULL || ptrs == NULL) {
		request_fail(r, ST_OUT_OF_MEMORY, "list: out of memory");
	} else {
		HASH_ITER(hh, r->core->buffers->tenants, tn, tmp)
		{
			if (!all && tn != me)
				continue;
			for (gpud_buffer *b = tn->kept; b && i < n; b = b->snext, i++) {
				verb_buffer_info(b, &infos[i]);
				if (all)
					infos[i].tenant = tn->name;
				ptrs[i] = &infos[i];
			}
		}
		if (all)
			log_info("administrator %s (connection %u) listed the kept buffers of "
				 "every tenant (%zu)",
				 me->name, r->pipe_id, i);
		lr.n_buffers = i;
		lr.buffers = ptrs;
		resp.body_case = GPUD__RESPONSE__BODY_LIST;
		resp.list = &lr;
		request_reply(r, &resp, NULL, 0);
	}
	free(infos);
	free(ptrs);
}

/* Forgets host regions; all or nothing, like free. */
void verb_unmap(gpud_request *r)
{
	Gpud__UnmapRequest *u = r->req->unmap;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__UnmapResponse ur = GPUD__UNMAP_RESPONSE__INIT;
	region_server *rs = r->core->regions;

	for (size_t i = 0; i < u->n_regions; i++) {
		if (regions_get(rs, r->session, u->regions[i]) == NULL) {
			request_fail(r, ST_NOT_FOUND, "unmap: unknown host region %016" PRIx64,
				     u->regions[i]);
			return;
		}
	}
	for (size_t i = 0; i < u->n_regions; i++) {
		host_region *hr = regions_get(rs, r->session, u->regions[i]);
		if (hr)
			regions_release(rs, hr);
	}
	resp.body_case = GPUD__RESPONSE__BODY_UNMAP;
	resp.unmap = &ur;
	request_reply(r, &resp, NULL, 0);
}

/* --- sync --------------------------------------------------------------------------- */

/* One device's queue is done; the reply comes when every device's is. */
static void sync_done(void *arg, dstatus status, const char *msg)
{
	gpud_request *r = arg;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__SyncResponse sr = GPUD__SYNC_RESPONSE__INIT;
	if (!request_pending_done(r, status, msg))
		return;
	resp.body_case = GPUD__RESPONSE__BODY_SYNC;
	resp.sync = &sr;
	verb_reply_empty(r, r->pending_status, r->pending_msg, &resp);
}

/* Replies once everything this connection queued before has completed, on
 * every device that is not lost. */
void verb_sync(gpud_request *r)
{
	device_set *ds = r->core->devices;
	char err[512];
	r->pending = 1;
	r->pending_status = ST_OK;
	for (int i = 0; i < ds->n; i++) {
		if (ds->dev[i].lost)
			continue;
		r->pending++;
		dstatus rv = backend_sync(&ds->dev[i].be, r->pipe_id, sync_done, r, err,
					  sizeof(err));
		if (rv != ST_OK)
			sync_done(r, rv, err);
	}
	sync_done(r, ST_OK, NULL);
}
