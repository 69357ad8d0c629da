/*
 * client/transfer.c — buffers' bytes: alloc, upload and download (also
 * straight from and to .npy files), in message-sized pieces, named in a
 * host region, or double-buffered through the scratch region on two
 * requests in flight; sync and free.
 */
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

gpud_status gpud_alloc(gpud_client *c, gpud_dtype dtype, int ndim, const uint64_t *shape,
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
	const region *rg = data && nbytes ? client_region_of(c, data, nbytes, &roff) : NULL;
	int inline_data = data != NULL && rg == NULL && nbytes <= client_chunk_limit(c) &&
			  !(gpud_has_shm(c) && nbytes >= SHM_MIN);
	a.dtype = (Gpud__DType)dtype;
	a.n_shape = (size_t)ndim;
	a.shape = (uint64_t *)shape;
	a.with_data = inline_data;
	a.keep = c->keep;
	if (rg) {
		from.region = rg->id;
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
	if (data != NULL && !inline_data && (st = gpud_upload(c, h, 0, data, nbytes)) != GPUD_OK) {
		char msg[sizeof(c->msg)];
		memcpy(msg, c->msg, sizeof(msg));
		gpud_free(c, &h, 1); /* keep the upload's error, not the free's */
		memcpy(c->msg, msg, sizeof(msg));
		return st;
	}
	*out = h;
	return GPUD_OK;
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
static gpud_status upload_region(gpud_client *c, gpud_handle h, uint64_t offset, const region *rg,
				 uint64_t roff, size_t len)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UploadRequest u = GPUD__UPLOAD_REQUEST__INIT;
	Gpud__HostRef from = GPUD__HOST_REF__INIT;
	Gpud__Response *r;
	gpud_status st;

	from.region = rg->id;
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
	int rv;
	if (c->ar_open)
		return GPUD_OK;
	for (int i = 0; i < 2; i++) {
		if ((rv = nng_ctx_open(&c->ar[i].ctx, c->sock)) != 0 ||
		    (rv = nng_aio_alloc(&c->ar[i].aio, NULL, NULL)) != 0) {
			if (i == 1) {
				nng_aio_free(c->ar[0].aio);
				nng_ctx_close(c->ar[0].ctx);
			}
			return client_seterr(c, GPUD_ENOMEM, "nng context: %s", nng_strerror(rv));
		}
		nng_ctx_set_ms(c->ar[i].ctx, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
		c->ar[i].busy = 0;
	}
	c->ar_open = 1;
	return GPUD_OK;
}

/* Sends req on a's context and starts waiting for its reply. */
static gpud_status async_send(gpud_client *c, async_req *a, Gpud__Request *req)
{
	nng_msg *m;
	int rv;
	req->version = GPUD_PROTOCOL_VERSION;
	req->id = a->id = ++c->next_id;
	if ((rv = wire_pack(&m, &req->base, NULL, 0, NULL)) != 0)
		return client_seterr(c, GPUD_ENOMEM, "cannot build a request: %s",
				     nng_strerror(rv));
	nng_aio_set_timeout(a->aio, c->timeout_ms > 0 ? c->timeout_ms : NNG_DURATION_INFINITE);
	nng_aio_set_msg(a->aio, m);
	nng_ctx_send(a->ctx, a->aio);
	nng_aio_wait(a->aio);
	if ((rv = nng_aio_result(a->aio)) != 0) {
		nng_msg_free(m);
		return client_seterr(c, rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
				     "sending to %s: %s", c->url, nng_strerror(rv));
	}
	nng_ctx_recv(a->ctx, a->aio);
	a->busy = 1;
	return GPUD_OK;
}

/* Waits for a's reply (if one is due); GPUD_OK if it says OK. */
static gpud_status async_wait(gpud_client *c, async_req *a)
{
	Gpud__Response *r;
	int rv;
	if (!a->busy)
		return GPUD_OK;
	a->busy = 0;
	nng_aio_wait(a->aio);
	if ((rv = nng_aio_result(a->aio)) != 0)
		return client_seterr(c, rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
				     "waiting for the reply from %s: %s", c->url, nng_strerror(rv));
	gpud_status st = client_take_reply(c, nng_aio_get_msg(a->aio), a->id, &r, NULL, NULL, NULL);
	if (st == GPUD_OK)
		gpud__response__free_unpacked(r, NULL);
	return st;
}

/* Waits for both; the first error wins. */
static gpud_status async_drain(gpud_client *c, gpud_status st)
{
	char msg[sizeof(c->msg)];
	memcpy(msg, c->msg, sizeof(msg));
	for (int i = 0; i < 2; i++) {
		gpud_status s2 = async_wait(c, &c->ar[i]);
		if (st == GPUD_OK)
			st = s2;
		else
			memcpy(c->msg, msg, sizeof(msg));
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
 * the other.
 */
static gpud_status bounce(gpud_client *c, int upload, gpud_handle h, uint64_t offset, char *mem,
			  size_t len)
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
			if ((st = async_wait(c, a)) != GPUD_OK)
				return async_drain(c, st);
			memcpy((char *)c->scratch.base + (k % 2) * half, mem + off, n);
			scratch_request(c, 1, h, offset + off, (k % 2) * half, n, &req, &u, &d,
					&ref);
			if ((st = async_send(c, a, &req)) != GPUD_OK)
				return async_drain(c, st);
		}
		return async_drain(c, GPUD_OK);
	}
	/* Downloads: chunk k+1 is requested before chunk k is copied out. */
	for (size_t k = 0; k <= nchunks; k++) {
		if (k < nchunks) {
			size_t off = k * half, n = len - off < half ? len - off : half;
			scratch_request(c, 0, h, offset + off, (k % 2) * half, n, &req, &u, &d,
					&ref);
			if ((st = async_send(c, &c->ar[k % 2], &req)) != GPUD_OK)
				return async_drain(c, st);
		}
		if (k > 0) {
			size_t j = k - 1, off = j * half, n = len - off < half ? len - off : half;
			if ((st = async_wait(c, &c->ar[j % 2])) != GPUD_OK)
				return async_drain(c, st);
			memcpy(mem + off, (char *)c->scratch.base + (j % 2) * half, n);
		}
	}
	return GPUD_OK;
}

/*
 * From a host region: one request. From other memory over ipc:// (1 MiB and
 * up): through the scratch region. Otherwise in message-sized pieces.
 */
gpud_status gpud_upload(gpud_client *c, gpud_handle h, uint64_t offset, const void *data,
			size_t len)
{
	size_t limit = client_chunk_limit(c), done = 0;
	uint64_t roff;
	const region *rg;
	gpud_status st;

	if (data == NULL && len > 0)
		return client_seterr(c, GPUD_EARG, "gpud_upload: data is NULL");
	if (len > 0 && (rg = client_region_of(c, data, len, &roff)) != NULL)
		return upload_region(c, h, offset, rg, roff, len);
	if (gpud_has_shm(c) && len >= SHM_MIN && client_scratch(c, len) == GPUD_OK)
		return bounce(c, 1, h, offset, (char *)data, len);
	c->msg[0] = '\0'; /* a scratch region refused: messages still work */
	do {
		size_t n = len - done < limit ? len - done : limit;
		if ((st = upload_one(c, h, offset + done, (const char *)data + done, n)) != GPUD_OK)
			return st;
		done += n;
	} while (done < len);
	return GPUD_OK;
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
	    client_region_make(c, meta->nbytes, 0, &nr->tmp) == GPUD_OK)
		return nr->tmp.base;
	c->msg[0] = '\0';
	if (meta->nbytes > client_chunk_limit(c))
		return nr->big = malloc(meta->nbytes);
	a.dtype = (Gpud__DType)meta->dtype;
	a.n_shape = (size_t)meta->ndim;
	a.shape = (uint64_t *)meta->shape;
	a.with_data = 1;
	a.keep = c->keep;
	req.body_case = GPUD__REQUEST__BODY_ALLOC;
	req.alloc = &a;
	req.version = GPUD_PROTOCOL_VERSION;
	req.id = nr->id = ++c->next_id;
	if (wire_pack(&nr->msg, &req.base, NULL, meta->nbytes, &payload) != 0) {
		nr->st = client_seterr(c, GPUD_ENOMEM, "cannot build a request of %zu bytes",
				       meta->nbytes);
		return NULL;
	}
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
	a.keep = c->keep;
	req.body_case = GPUD__REQUEST__BODY_ALLOC;
	req.alloc = &a;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	return alloc_reply(c, r, out);
}

gpud_status gpud_alloc_npy(gpud_client *c, const char *path, gpud_handle *out, gpud_array *meta)
{
	struct npy_req nr = {.c = c, .st = GPUD_OK};
	gpud_array arr;
	Gpud__Response *r;
	char err[1024];
	gpud_status st;

	c->msg[0] = '\0';
	int lrv = gpud_npy_load_into(path, npy_into_request, &nr, &arr, err, sizeof(err));
	if (nr.tmp.base) {
		/* Allocated from the region, then the region goes. */
		st = lrv != 0 ? (nr.st != GPUD_OK ? nr.st : client_seterr(c, GPUD_EARG, "%s", err))
			      : alloc_from_region(c, &arr, &nr.tmp, out);
		char msg[sizeof(c->msg)];
		memcpy(msg, c->msg, sizeof(msg));
		client_region_unmap(c, nr.tmp.id);
		munmap(nr.tmp.base, nr.tmp.size);
		memcpy(c->msg, msg, sizeof(msg));
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
		st = gpud_alloc(c, arr.dtype, arr.ndim, arr.shape, nr.big, out);
		free(nr.big);
		if (st == GPUD_OK && meta) {
			*meta = arr;
			meta->data = NULL;
		}
		return st;
	}
	if ((st = client_exchange(c, nr.msg, nr.id, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = alloc_reply(c, r, out)) != GPUD_OK)
		return st;
	if (meta) {
		*meta = arr;
		meta->data = NULL;
	}
	return GPUD_OK;
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
		st = gpud_download_range(c, h, pll, (char *)out->data + pll, out->nbytes - pll);
	if (st != GPUD_OK)
		gpud_array_free(out);
	return st;
}

gpud_status gpud_download(gpud_client *c, gpud_handle h, gpud_array *out)
{
	return download_whole(c, h, out);
}

gpud_status gpud_download_npy(gpud_client *c, gpud_handle h, const char *path)
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

/* One request: len bytes of h at offset into region rg at roff. */
static gpud_status download_region(gpud_client *c, gpud_handle h, uint64_t offset, const region *rg,
				   uint64_t roff, size_t len)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	Gpud__HostRef to = GPUD__HOST_REF__INIT;
	Gpud__Response *r;
	gpud_status st;

	to.region = rg->id;
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

gpud_status gpud_download_range(gpud_client *c, gpud_handle h, uint64_t offset, void *dst,
				size_t len)
{
	Gpud__Response *r;
	nng_msg *m;
	uint8_t *pl;
	size_t pll;
	gpud_status st;

	if (len == 0)
		return GPUD_OK;
	if (dst == NULL)
		return client_seterr(c, GPUD_EARG, "gpud_download_range: dst is NULL");
	uint64_t roff;
	const region *rg = client_region_of(c, dst, len, &roff);
	if (rg)
		return download_region(c, h, offset, rg, roff, len);
	if (gpud_has_shm(c) && len >= SHM_MIN && client_scratch(c, len) == GPUD_OK)
		return bounce(c, 0, h, offset, dst, len);
	c->msg[0] = '\0';
	size_t limit = client_chunk_limit(c);
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

gpud_status gpud_sync(gpud_client *c)
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

gpud_status gpud_free(gpud_client *c, const gpud_handle *handles, size_t n)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__FreeRequest f = GPUD__FREE_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (n == 0)
		return GPUD_OK;
	f.n_handles = n;
	f.handles = (uint64_t *)handles;
	req.body_case = GPUD__REQUEST__BODY_FREE;
	req.free = &f;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}
