/*
 * daemon/verbs.c — the verb table: one handler per protocol verb. Every
 * handler ends in exactly one reply (request_reply or request_fail), either
 * at once or from the backend's completion callback. Messages name what was
 * wrong, with expected and got, because clients show them verbatim.
 */
#include <inttypes.h>
#include <dirent.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/server.h"

#define ST_OK GPUD__STATUS__STATUS_OK
#define ST_INVALID GPUD__STATUS__STATUS_INVALID_ARGUMENT
#define ST_NOT_FOUND GPUD__STATUS__STATUS_NOT_FOUND
#define ST_UNKNOWN_KERNEL GPUD__STATUS__STATUS_UNKNOWN_KERNEL
#define ST_TOO_LARGE GPUD__STATUS__STATUS_TOO_LARGE
#define ST_PROTOCOL GPUD__STATUS__STATUS_PROTOCOL

/* BufferInfo pointing into b (valid while b is). */
static void buffer_info(const gpud_buffer *b, Gpud__BufferInfo *info)
{
	gpud__buffer_info__init(info);
	info->handle = b->handle;
	info->dtype = (Gpud__DType)b->dtype;
	info->n_shape = (size_t)b->ndim;
	info->shape = (uint64_t *)b->shape;
	info->kept = b->kept;
}

static gpud_buffer *lookup(gpud_request *r, const char *verb, uint64_t h)
{
	gpud_buffer *b = buffers_get(&r->srv->buffers, r->session->tenant, h);
	if (b == NULL)
		request_fail(r, ST_NOT_FOUND, "%s: unknown handle %016" PRIx64, verb, h);
	return b;
}

/*
 * The host memory a HostRef names: len bytes at ref->offset of one of the
 * connection's regions, held for the request. NULL after replying an error.
 */
static void *host_ref(gpud_request *r, const char *verb, const Gpud__HostRef *ref, uint64_t len,
		      unsigned *flags)
{
	host_region *hr = regions_get(&r->srv->regions, r->session, ref->region);
	if (hr == NULL) {
		request_fail(r, ST_NOT_FOUND, "%s: unknown host region %016" PRIx64, verb,
			     ref->region);
		return NULL;
	}
	if (ref->offset > hr->size || len > hr->size - ref->offset) {
		request_fail(r, ST_INVALID,
			     "%s: %" PRIu64 " bytes at offset %" PRIu64
			     " do not fit in host region %016" PRIx64 " of %zu bytes",
			     verb, len, ref->offset, hr->id, hr->size);
		return NULL;
	}
	if (r->nregions == KERNEL_MAX_PARAMS + 1) {
		request_fail(r, ST_INVALID, "%s: too many host regions in one request", verb);
		return NULL;
	}
	request_hold_region(r, hr);
	*flags = hr->pinned ? BACKEND_HOST_PINNED : 0;
	return (char *)hr->base + ref->offset;
}

/* A completion that only has to say OK or pass the backend's error on. */
static void done_empty(void *arg, int status, const char *msg, Gpud__Response *resp)
{
	gpud_request *r = arg;
	if (status != 0) {
		request_fail(r, status, "%s", msg ? msg : "backend failure");
		return;
	}
	request_reply(r, resp, NULL, 0);
}

/* --- hello, status, kernels ----------------------------------------------- */

static int fill_devices(gpud_server *s, backend_device *devs, Gpud__Device *pb, Gpud__Device **ptrs,
			int max)
{
	int n = s->backend.ops->devices(&s->backend, devs, max);
	for (int i = 0; i < n; i++) {
		gpud__device__init(&pb[i]);
		pb[i].index = devs[i].index;
		pb[i].name = devs[i].name;
		pb[i].cc_major = devs[i].cc_major;
		pb[i].cc_minor = devs[i].cc_minor;
		pb[i].memory_total = devs[i].memory_total;
		pb[i].memory_free = devs[i].memory_free;
		pb[i].sm_count = devs[i].sm_count;
		ptrs[i] = &pb[i];
	}
	return n;
}

/* Constant-time comparison of two NUL-terminated secrets. */
static int secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;
	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

/*
 * Who this connection is: over ipc:// the peer's user (by name, else
 * "uid:N"); over tcp:// the tenant whose token hello presents (tokens_file),
 * or "anonymous" when gpud has no tokens. 0, or -1 after replying.
 */
static int assign_tenant(gpud_request *r)
{
	gpud_server *s = r->srv;
	gpud_session *sess = r->session;
	char name[GPUD_TENANT_NAME];

	if (sess->tenant)
		return 0; /* fixed by the first hello */
	if (sess->peer_uid >= 0) {
		struct passwd pw, *res = NULL;
		char buf[1024];
		if (getpwuid_r((uid_t)sess->peer_uid, &pw, buf, sizeof(buf), &res) == 0 && res &&
		    strlen(pw.pw_name) < sizeof(name))
			snprintf(name, sizeof(name), "%s", pw.pw_name);
		else
			snprintf(name, sizeof(name), "uid:%lld", (long long)sess->peer_uid);
	} else if (s->ntokens > 0) {
		const char *tok = r->req->hello->token ? r->req->hello->token : "";
		int found = -1;
		for (int i = 0; i < s->ntokens; i++) /* no early exit: same time for all */
			if (secret_equal(s->tokens[i].token, tok) && found < 0)
				found = i;
		if (found < 0 || tok[0] == '\0') {
			request_fail(
				r, GPUD__STATUS__STATUS_UNAUTHENTICATED,
				"hello: %s token; connections over tcp:// must present one from "
				"gpud's tokens_file (gpuctl --token, GPUD_TOKEN)",
				tok[0] ? "unknown" : "no");
			return -1;
		}
		snprintf(name, sizeof(name), "%s", s->tokens[found].tenant);
	} else {
		snprintf(name, sizeof(name), "anonymous");
	}
	tenant_quota q = config_quota(s->cfg, name);
	if ((sess->tenant = tenants_get(&s->buffers, name, &q)) == NULL) {
		request_fail(r, GPUD__STATUS__STATUS_OUT_OF_MEMORY, "hello: out of memory");
		return -1;
	}
	log_info("connection %u (%s) is tenant %s", sess->pipe_id, sess->peer, name);
	return 0;
}

static void verb_hello(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__HelloResponse hello = GPUD__HELLO_RESPONSE__INIT;
	backend_device devs[8];
	Gpud__Device pb[8], *ptrs[8];

	if (assign_tenant(r) != 0)
		return;
	hello.server_version = GPUD_VERSION;
	hello.protocol_version = GPUD_PROTOCOL_VERSION;
	hello.tenant = r->session->tenant->name;
	hello.backend = (char *)r->srv->backend.ops->name;
	hello.max_message_size = r->srv->cfg->max_message_size;
	hello.connection = r->pipe_id;
	/* Host regions need the peer's uid, so only over ipc://. */
	if (r->srv->regions.fd >= 0 && r->session->peer_uid >= 0) {
		hello.shm_socket = r->srv->regions.path;
		hello.session_key.data = r->session->key;
		hello.session_key.len = sizeof(r->session->key);
	}
	hello.n_devices = (size_t)fill_devices(r->srv, devs, pb, ptrs, 8);
	hello.devices = ptrs;
	if (r->req->hello->client && r->req->hello->client[0])
		log_debug("connection %u: hello from %s", r->pipe_id, r->req->hello->client);
	resp.body_case = GPUD__RESPONSE__BODY_HELLO;
	resp.hello = &hello;
	request_reply(r, &resp, NULL, 0);
}

static void verb_status(gpud_request *r)
{
	gpud_server *s = r->srv;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__StatusResponse st = GPUD__STATUS_RESPONSE__INIT;
	backend_device devs[8];
	Gpud__Device pb[8], *ptrs[8];

	st.server_version = GPUD_VERSION;
	st.backend = (char *)s->backend.ops->name;
	st.uptime_s = (double)(now_ns() - s->started_ns) / 1e9;
	st.requests = s->requests;
	st.errors = s->errors;
	st.connections = (uint32_t)sessions_count(&s->buffers);
	st.buffers = s->buffers.count;
	st.bytes_in_use = s->buffers.bytes;
	st.bytes_high_water = s->buffers.high_water;
	st.n_devices = (size_t)fill_devices(s, devs, pb, ptrs, 8);
	st.devices = ptrs;
	st.n_listen = (size_t)s->cfg->nlisten;
	st.listen = s->cfg->listen;
	st.in_flight = s->in_flight;
	backend_variant bv[32];
	Gpud__KernelVariant kv[32], *kvp[32];
	int nv = s->backend.ops->variants ? s->backend.ops->variants(&s->backend, bv, 32) : 0;
	for (int i = 0; i < nv; i++) {
		gpud__kernel_variant__init(&kv[i]);
		kv[i].kernel = bv[i].kernel;
		kv[i].variant = bv[i].variant;
		kv[i].registers = bv[i].registers;
		kv[i].shared_bytes = bv[i].shared_bytes;
		kv[i].local_bytes = bv[i].local_bytes;
		kv[i].block = bv[i].block;
		kv[i].max_threads = bv[i].max_threads;
		kvp[i] = &kv[i];
	}
	st.n_variants = (size_t)nv;
	st.variants = kvp;
	backend_pool_stats ps;
	Gpud__MemoryPool pool = GPUD__MEMORY_POOL__INIT;
	if (s->backend.ops->pool_stats && s->backend.ops->pool_stats(&s->backend, &ps) == 0) {
		pool.in_use = ps.in_use;
		pool.cached = ps.cached;
		pool.high_water = ps.high_water;
		pool.limit = ps.limit;
		pool.allocs = ps.allocs;
		pool.hits = ps.hits;
		st.pool = &pool;
	}
	backend_staging_stats ss;
	Gpud__Staging staging = GPUD__STAGING__INIT;
	if (s->backend.ops->staging_stats && s->backend.ops->staging_stats(&s->backend, &ss) == 0) {
		staging.buffers = ss.buffers;
		staging.chunk = ss.chunk;
		staging.free = ss.free;
		staging.bytes_staged = ss.bytes_staged;
		st.staging = &staging;
	}
	/* Per connection, in pipe order (uthash keeps insertion order). */
	size_t ns = sessions_count(&s->buffers);
	Gpud__Session *sess = calloc(ns ? ns : 1, sizeof(*sess));
	Gpud__Session **sptr = calloc(ns ? ns : 1, sizeof(*sptr));
	if (sess && sptr) {
		gpud_session *g, *tmp;
		size_t i = 0;
		HASH_ITER(hh, s->buffers.sessions, g, tmp)
		{
			gpud__session__init(&sess[i]);
			sess[i].id = g->pipe_id;
			sess[i].peer = g->peer;
			sess[i].tenant = g->tenant ? g->tenant->name : "";
			sess[i].buffers = g->nbuffers;
			sess[i].bytes = g->bytes;
			sess[i].requests = g->requests;
			sess[i].in_flight = g->in_flight;
			sess[i].regions = g->nregions;
			sess[i].region_bytes = g->region_bytes;
			sptr[i] = &sess[i];
			i++;
		}
		st.n_sessions = i;
		st.sessions = sptr;
	}
	resp.body_case = GPUD__RESPONSE__BODY_STATUS;
	resp.status = &st;
	request_reply(r, &resp, NULL, 0);
	free(sess);
	free(sptr);
}

static void verb_kernels(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__KernelsResponse kr = GPUD__KERNELS_RESPONSE__INIT;
	size_t nb, nk, total = 0;
	const kernel_def *const *builtins = kernel_list(&nb);
	gpud_tenant *tn = r->session->tenant;
	nk = nb + (tn ? HASH_COUNT(tn->customs) : 0) + HASH_COUNT(r->srv->buffers.shared);
	const kernel_def **ks = calloc(nk ? nk : 1, sizeof(*ks));
	if (ks == NULL) {
		request_fail(r, GPUD__STATUS__STATUS_OUT_OF_MEMORY, "kernels: out of memory");
		return;
	}
	for (size_t i = 0; i < nb; i++)
		ks[i] = builtins[i];
	size_t ki = nb;
	if (tn)
		for (custom_entry *e = tn->customs; e; e = e->hh.next)
			ks[ki++] = &e->k.def;
	for (custom_entry *e = r->srv->buffers.shared; e; e = e->hh.next) {
		custom_entry *mine = NULL;
		if (tn)
			HASH_FIND_STR(tn->customs, e->k.name, mine);
		if (mine == NULL) /* a tenant's own kernel of that name comes first */
			ks[ki++] = &e->k.def;
	}
	nk = ki;
	for (size_t i = 0; i < nk; i++)
		total += (size_t)ks[i]->nparams;
	Gpud__KernelInfo *infos = calloc(nk ? nk : 1, sizeof(*infos));
	Gpud__KernelInfo **iptrs = calloc(nk ? nk : 1, sizeof(*iptrs));
	Gpud__Param *params = calloc(total ? total : 1, sizeof(*params));
	Gpud__Param **pptrs = calloc(total ? total : 1, sizeof(*pptrs));
	Gpud__DType *dts = calloc(total ? total * 4 : 1, sizeof(*dts));
	char(*types)[96] = calloc(total ? total : 1, sizeof(*types));
	if (!infos || !iptrs || !params || !pptrs || !dts || !types) {
		request_fail(r, GPUD__STATUS__STATUS_OUT_OF_MEMORY, "kernels: out of memory");
		goto out;
	}
	size_t pi = 0;
	for (size_t i = 0; i < nk; i++) {
		const kernel_def *k = ks[i];
		gpud__kernel_info__init(&infos[i]);
		infos[i].name = (char *)k->name;
		infos[i].doc = (char *)k->doc;
		infos[i].params = &pptrs[pi];
		infos[i].n_params = (size_t)k->nparams;
		for (int j = 0; j < k->nparams; j++, pi++) {
			const kernel_param *p = &k->params[j];
			Gpud__Param *q = &params[pi];
			gpud__param__init(q);
			q->name = (char *)p->name;
			q->doc = (char *)p->doc;
			q->role = p->role == KPARAM_IN    ? GPUD__PARAM__ROLE__ROLE_IN
				  : p->role == KPARAM_OUT ? GPUD__PARAM__ROLE__ROLE_OUT
							  : GPUD__PARAM__ROLE__ROLE_SCALAR;
			q->dtypes = &dts[pi * 4];
			if (p->role == KPARAM_SCALAR) {
				/* Scalars: f64 and i64 as their dtypes; bool has none; a
				 * dtype name lists the dtypes it may name. */
				if (p->stype == KSCALAR_F64)
					q->dtypes[q->n_dtypes++] = GPUD__DTYPE__DTYPE_F64;
				else if (p->stype == KSCALAR_I64)
					q->dtypes[q->n_dtypes++] = GPUD__DTYPE__DTYPE_I64;
				else if (p->stype == KSCALAR_DTYPE)
					for (int t = GPUD_F32; t <= GPUD_I64; t++)
						if (p->dtypes & KDT(t))
							q->dtypes[q->n_dtypes++] = (Gpud__DType)t;
				q->ndim = 0;
			} else {
				for (int t = GPUD_F32; t <= GPUD_I64; t++)
					if (p->dtypes & KDT(t))
						q->dtypes[q->n_dtypes++] = (Gpud__DType)t;
				q->ndim = p->ndim;
			}
			q->optional = p->role == KPARAM_OUT || p->default_value != NULL;
			q->default_value = (char *)(p->default_value ? p->default_value : "");
			kernel_param_describe(p, types[pi], sizeof(types[pi]));
			q->type = types[pi];
			pptrs[pi] = q;
		}
		iptrs[i] = &infos[i];
	}
	kr.n_kernels = nk;
	kr.kernels = iptrs;
	resp.body_case = GPUD__RESPONSE__BODY_KERNELS;
	resp.kernels = &kr;
	request_reply(r, &resp, NULL, 0);
out:
	free(ks);
	free(infos);
	free(iptrs);
	free(params);
	free(pptrs);
	free(dts);
	free(types);
}

/* --- alloc, upload, download, free ------------------------------------------ */

static void alloc_done(void *arg, int status, const char *msg)
{
	gpud_request *r = arg;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__AllocResponse ar = GPUD__ALLOC_RESPONSE__INIT;
	Gpud__BufferInfo info;

	if (status != 0) {
		request_fail(r, status, "alloc: %s", msg ? msg : "backend failure");
		return;
	}
	buffer_info(r->created[0], &info);
	ar.buffer = &info;
	resp.body_case = GPUD__RESPONSE__BODY_ALLOC;
	resp.alloc = &ar;
	request_reply(r, &resp, NULL, 0);
}

static void verb_alloc(gpud_request *r)
{
	Gpud__AllocRequest *a = r->req->alloc;
	gpud_buffer *b;
	char err[512], shape[256];
	int rv;

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
		if ((src = host_ref(r, "alloc", a->from, want, &flags)) == NULL)
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
	rv = buffers_alloc(&r->srv->buffers, r->session, a->keep, (gpud_dtype)a->dtype,
			   (int)a->n_shape, a->shape, &b, err, sizeof(err));
	if (rv != 0) {
		request_fail(r, rv, "alloc: %s array of shape %s: %s",
			     gpud_dtype_name((gpud_dtype)a->dtype), shape, err);
		return;
	}
	r->created[r->ncreated++] = b;
	if ((!a->with_data && !a->from) || want == 0) {
		alloc_done(r, 0, NULL);
		return;
	}
	request_hold(r, b);
	gpud_backend *be = &r->srv->backend;
	rv = be->ops->upload(be, r->pipe_id, b->mem, src, want, flags, alloc_done, r, err,
			     sizeof(err));
	if (rv != 0)
		request_fail(r, rv, "alloc: %s", err);
}

static void upload_done(void *arg, int status, const char *msg)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__UploadResponse ur = GPUD__UPLOAD_RESPONSE__INIT;
	resp.body_case = GPUD__RESPONSE__BODY_UPLOAD;
	resp.upload = &ur;
	done_empty(arg, status, msg, &resp);
}

static void verb_upload(gpud_request *r)
{
	Gpud__UploadRequest *u = r->req->upload;
	gpud_buffer *b = lookup(r, "upload", u->handle);
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
	if (u->from && (src = host_ref(r, "upload", u->from, len, &flags)) == NULL)
		return;
	if (len == 0) {
		upload_done(r, 0, NULL);
		return;
	}
	request_hold(r, b);
	gpud_backend *be = &r->srv->backend;
	int rv = be->ops->upload(be, r->pipe_id, (char *)b->mem + u->offset, src, (size_t)len,
				 flags, upload_done, r, err, sizeof(err));
	if (rv != 0)
		request_fail(r, rv, "upload: %s", err);
}

static void download_done(void *arg, int status, const char *msg)
{
	gpud_request *r = arg;
	if (status != 0) {
		request_fail(r, status, "download: %s", msg ? msg : "backend failure");
		return;
	}
	request_send_msg(r, r->reply);
}

/* A download into a host region: the reply only describes the buffer. */
static void download_region_done(void *arg, int status, const char *msg)
{
	gpud_request *r = arg;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__DownloadResponse dr = GPUD__DOWNLOAD_RESPONSE__INIT;
	Gpud__BufferInfo info;

	if (status != 0) {
		request_fail(r, status, "download: %s", msg ? msg : "backend failure");
		return;
	}
	buffer_info(r->bound[0], &info);
	dr.buffer = &info;
	dr.offset = r->req->download->offset;
	resp.body_case = GPUD__RESPONSE__BODY_DOWNLOAD;
	resp.download = &dr;
	request_reply(r, &resp, NULL, 0);
}

static void verb_download(gpud_request *r)
{
	Gpud__DownloadRequest *d = r->req->download;
	gpud_buffer *b = lookup(r, "download", d->handle);
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__DownloadResponse dr = GPUD__DOWNLOAD_RESPONSE__INIT;
	Gpud__BufferInfo info;
	void *dst;
	char err[512];
	int rv;

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
	if (d->length == 0 && len > r->srv->cfg->max_message_size && !d->to)
		len = r->srv->cfg->max_message_size; /* the client asks for the rest next */
	if (len > b->nbytes - d->offset) {
		request_fail(r, ST_INVALID,
			     "download: %" PRIu64 " bytes at offset %" PRIu64
			     " run past the end of buffer %016" PRIx64 " (%zu bytes)",
			     len, d->offset, b->handle, b->nbytes);
		return;
	}
	if (d->to) {
		unsigned flags;
		void *hdst = host_ref(r, "download", d->to, len, &flags);
		if (hdst == NULL)
			return;
		r->kernel = NULL;
		r->bound[0] = b; /* for the reply's buffer description */
		if (len == 0) {
			download_region_done(r, 0, NULL);
			return;
		}
		request_hold(r, b);
		gpud_backend *be = &r->srv->backend;
		rv = be->ops->download(be, r->pipe_id, hdst, (char *)b->mem + d->offset,
				       (size_t)len, flags, download_region_done, r, err,
				       sizeof(err));
		if (rv != 0)
			request_fail(r, rv, "download: %s", err);
		return;
	}
	if (len > r->srv->cfg->max_message_size) {
		request_fail(r, ST_TOO_LARGE,
			     "download: %" PRIu64 " bytes exceed the message size limit of %" PRIu64
			     " bytes; download in ranges",
			     len, r->srv->cfg->max_message_size);
		return;
	}
	buffer_info(b, &info);
	dr.buffer = &info;
	dr.offset = d->offset;
	resp.version = GPUD_PROTOCOL_VERSION;
	resp.id = r->req->id;
	resp.body_case = GPUD__RESPONSE__BODY_DOWNLOAD;
	resp.download = &dr;
	if ((rv = wire_pack(&r->reply, &resp.base, NULL, (size_t)len, &dst)) != 0) {
		request_fail(r, GPUD__STATUS__STATUS_OUT_OF_MEMORY,
			     "download: cannot make a %" PRIu64 "-byte reply: %s", len,
			     nng_strerror(rv));
		return;
	}
	if (len == 0) {
		download_done(r, 0, NULL);
		return;
	}
	request_hold(r, b);
	gpud_backend *be = &r->srv->backend;
	rv = be->ops->download(be, r->pipe_id, dst, (char *)b->mem + d->offset, (size_t)len, 0,
			       download_done, r, err, sizeof(err));
	if (rv != 0)
		request_fail(r, rv, "download: %s", err);
}

static void verb_free(gpud_request *r)
{
	Gpud__FreeRequest *f = r->req->free;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__FreeResponse fr = GPUD__FREE_RESPONSE__INIT;

	/* All or nothing: check every handle before releasing any. */
	for (size_t i = 0; i < f->n_handles; i++)
		if (lookup(r, "free", f->handles[i]) == NULL)
			return;
	for (size_t i = 0; i < f->n_handles; i++) {
		gpud_buffer *b = buffers_get(&r->srv->buffers, r->session->tenant, f->handles[i]);
		if (b) /* a handle listed twice is gone the second time */
			buffers_release(&r->srv->buffers, b);
	}
	resp.body_case = GPUD__RESPONSE__BODY_FREE;
	resp.free = &fr;
	request_reply(r, &resp, NULL, 0);
}

/* The tenant's kept buffers. */
static void verb_list(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__ListResponse lr = GPUD__LIST_RESPONSE__INIT;
	gpud_tenant *tn = r->session->tenant;
	size_t n = tn->nkept, i = 0;
	Gpud__BufferInfo *infos = calloc(n ? n : 1, sizeof(*infos));
	Gpud__BufferInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));

	if (infos == NULL || ptrs == NULL) {
		request_fail(r, GPUD__STATUS__STATUS_OUT_OF_MEMORY, "list: out of memory");
	} else {
		for (gpud_buffer *b = tn->kept; b && i < n; b = b->snext, i++) {
			buffer_info(b, &infos[i]);
			ptrs[i] = &infos[i];
		}
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
static void verb_unmap(gpud_request *r)
{
	Gpud__UnmapRequest *u = r->req->unmap;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__UnmapResponse ur = GPUD__UNMAP_RESPONSE__INIT;
	region_server *rs = &r->srv->regions;

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

/* --- run ------------------------------------------------------------------ */

/* One of several copies of a request finished: the last one decides. */
static int pending_done(gpud_request *r, int status, const char *msg)
{
	if (status != 0 && r->pending_status == 0) {
		r->pending_status = status;
		snprintf(r->pending_msg, sizeof(r->pending_msg), "%s",
			 msg ? msg : "backend failure");
	}
	return --r->pending == 0;
}

static void returned_done(void *arg, int status, const char *msg)
{
	gpud_request *r = arg;
	if (!pending_done(r, status, msg))
		return;
	if (r->pending_status != 0) {
		request_fail(r, r->pending_status, "run %s: returning outputs: %s", r->kernel->name,
			     r->pending_msg);
		return;
	}
	request_send_msg(r, r->reply);
}

static void run_done(void *arg, int status, const char *msg)
{
	gpud_request *r = arg;
	const kernel_def *k = r->kernel;
	if (r->has_slot)
		sched_release(r); /* the kernel is done; outputs may still be copied */
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__RunResponse rr = GPUD__RUN_RESPONSE__INIT;
	Gpud__Output outs[KERNEL_MAX_PARAMS], *optrs[KERNEL_MAX_PARAMS];
	Gpud__BufferInfo infos[KERNEL_MAX_PARAMS];

	if (status != 0) {
		request_fail(r, status, "run %s: %s", k->name, msg ? msg : "backend failure");
		return;
	}
	/* The outputs, in parameter order; r->held has them after the inputs. */
	int out_param[KERNEL_MAX_PARAMS];
	for (int i = 0; i < k->nparams; i++) {
		if (k->params[i].role != KPARAM_OUT)
			continue;
		gpud_buffer *b = r->bound[i];
		out_param[rr.n_outputs] = i;
		gpud__output__init(&outs[rr.n_outputs]);
		buffer_info(b, &infos[rr.n_outputs]);
		outs[rr.n_outputs].name = (char *)k->params[i].name;
		outs[rr.n_outputs].buffer = &infos[rr.n_outputs];
		optrs[rr.n_outputs] = &outs[rr.n_outputs];
		rr.n_outputs++;
	}
	rr.outputs = optrs;
	rr.elapsed_us = (double)(now_ns() - r->t0_ns) / 1e3;
	rr.kernel_us = r->kernel_us;
	/* Outputs gpud made now belong to the client, or, returned, go with the request. */
	for (int i = 0; r->req->run->return_outputs && i < r->ncreated; i++)
		r->temps[r->ntemps++] = r->created[i];
	r->ncreated = 0;
	resp.body_case = GPUD__RESPONSE__BODY_RUN;
	resp.run = &rr;
	if (!r->req->run->return_outputs) {
		request_reply(r, &resp, NULL, 0);
		return;
	}
	/* The outputs' bytes go in the reply; the buffers go with the request. */
	size_t total = 0;
	for (size_t i = 0; i < rr.n_outputs; i++) {
		infos[i].handle = 0;
		total += r->bound[out_param[i]]->nbytes;
	}
	resp.version = GPUD_PROTOCOL_VERSION;
	resp.id = r->req->id;
	uint8_t *dst;
	int rv = wire_pack(&r->reply, &resp.base, NULL, total, (void **)&dst);
	if (rv != 0) {
		request_fail(r, GPUD__STATUS__STATUS_OUT_OF_MEMORY,
			     "run %s: cannot make a %zu-byte reply: %s", k->name, total,
			     nng_strerror(rv));
		return;
	}
	r->pending = 1; /* held until every download is issued */
	r->pending_status = 0;
	gpud_backend *be = &r->srv->backend;
	for (size_t i = 0; i < rr.n_outputs; i++) {
		gpud_buffer *b = r->bound[out_param[i]];
		char err[512];
		if (b->nbytes == 0)
			continue;
		r->pending++;
		rv = be->ops->download(be, r->pipe_id, dst, b->mem, b->nbytes, 0, returned_done, r,
				       err, sizeof(err));
		if (rv != 0)
			returned_done(r, rv, err);
		dst += b->nbytes;
	}
	returned_done(r, 0, NULL);
}

static void to_kernel_array(const gpud_buffer *b, kernel_array *a)
{
	a->dtype = b->dtype;
	a->ndim = b->ndim;
	memcpy(a->shape, b->shape, sizeof(a->shape));
	a->count = b->count;
	a->data = b->mem;
}

typedef struct inline_upload {
	void *dst;
	const void *src;
	size_t len;
	unsigned flags;
} inline_upload;

static void inline_done(void *arg, int status, const char *msg);
static void run_launch(gpud_request *r);

/*
 * An inline array argument: checks it, takes its bytes from the payload at
 * *cursor (or a host region), allocates a buffer that goes with the request,
 * and says what to upload. 0, or -1 after replying an error.
 */
static int inline_array(gpud_request *r, const kernel_def *k, const kernel_param *p,
			const Gpud__InlineArray *ia, size_t *cursor, inline_upload *up,
			gpud_buffer **out, char *err, size_t errlen)
{
	char shape[256];
	gpud_buffer *b;

	if (p->role != KPARAM_IN) {
		request_fail(r, ST_INVALID, "%s: argument '%s' is %s, not an input array", k->name,
			     p->name,
			     p->role == KPARAM_SCALAR
				     ? "a scalar"
				     : "an output (gpud allocates it; leave it out)");
		return -1;
	}
	if (ia->n_shape > GPUD_MAX_DIMS || gpud_dtype_size((gpud_dtype)ia->dtype) == 0) {
		request_fail(r, ST_INVALID,
			     "%s: argument '%s': an inline array needs a dtype (float32, float64, "
			     "int32, int64) and at most %d dimensions",
			     k->name, p->name, GPUD_MAX_DIMS);
		return -1;
	}
	size_t want = gpud_shape_bytes(ia->shape, (int)ia->n_shape,
				       gpud_dtype_size((gpud_dtype)ia->dtype));
	if (want == SIZE_MAX) {
		request_fail(r, ST_TOO_LARGE, "%s: argument '%s': the shape overflows", k->name,
			     p->name);
		return -1;
	}
	*up = (inline_upload){.len = want};
	if (ia->from) {
		if ((up->src = host_ref(r, k->name, ia->from, want, &up->flags)) == NULL)
			return -1;
	} else {
		if (want > r->payload_len - *cursor) {
			gpud_shape_format(shape, sizeof(shape), ia->shape, (int)ia->n_shape);
			request_fail(r, ST_INVALID,
				     "%s: argument '%s' (%s %s) needs %zu bytes at payload offset "
				     "%zu, but the payload has %zu",
				     k->name, p->name, gpud_dtype_name((gpud_dtype)ia->dtype),
				     shape, want, *cursor, r->payload_len);
			return -1;
		}
		up->src = r->payload + *cursor;
		*cursor += want;
	}
	int rv = buffers_alloc(&r->srv->buffers, r->session, 0, (gpud_dtype)ia->dtype,
			       (int)ia->n_shape, ia->shape, &b, err, errlen);
	if (rv != 0) {
		request_fail(r, rv, "%s: argument '%s': %s", k->name, p->name, err);
		return -1;
	}
	r->temps[r->ntemps++] = b;
	up->dst = b->mem;
	*out = b;
	return 0;
}

static void verb_run(gpud_request *r)
{
	Gpud__RunRequest *rq = r->req->run;
	kernel_args *ka = &r->kargs;
	char err[768], names[256], want[128], got[128];
	int rv;

	const kernel_def *k = kernel_find(rq->kernel);
	custom_entry *ce = NULL;
	if (k == NULL && r->session->tenant) {
		HASH_FIND_STR(r->session->tenant->customs, rq->kernel, ce);
		if (ce == NULL)
			HASH_FIND_STR(r->srv->buffers.shared, rq->kernel, ce);
		if (ce) {
			ce->refs++; /* until the reply: an unregister meanwhile cannot free it */
			r->custom = ce;
			k = &ce->k.def;
		}
	}
	if (k == NULL) {
		size_t nk;
		const kernel_def *const *ks = kernel_list(&nk);
		size_t n = 0;
		names[0] = '\0';
		for (size_t i = 0; i < nk; i++)
			n += (size_t)snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0,
					      "%s%s", i ? ", " : "", ks[i]->name);
		for (custom_entry *e = r->session->tenant ? r->session->tenant->customs : NULL; e;
		     e = e->hh.next)
			n += (size_t)snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0,
					      ", %s", e->k.name);
		request_fail(r, ST_UNKNOWN_KERNEL, "run: unknown kernel '%s' (known: %s)",
			     rq->kernel, names);
		return;
	}
	r->kernel = k;
	memset(ka, 0, sizeof(*ka));
	ka->kernel = k;

	gpud_buffer **bound = r->bound;
	memset(r->bound, 0, sizeof(r->bound));
	inline_upload up[KERNEL_MAX_PARAMS];
	int nup = 0;
	size_t cursor = 0; /* payload bytes taken by inline arrays */
	for (size_t i = 0; i < rq->n_args; i++) {
		Gpud__Argument *arg = rq->args[i];
		int idx = kernel_param_index(k, arg->name);
		if (idx < 0) {
			kernel_param_names(k, names, sizeof(names));
			request_fail(r, ST_INVALID, "%s: unknown argument '%s' (arguments: %s)",
				     k->name, arg->name, names);
			return;
		}
		if (ka->v[idx].present) {
			request_fail(r, ST_INVALID, "%s: argument '%s' given twice", k->name,
				     arg->name);
			return;
		}
		const kernel_param *p = &k->params[idx];
		if (arg->value_case == GPUD__ARGUMENT__VALUE_BUFFER) {
			gpud_buffer *b = buffers_get(&r->srv->buffers, r->session->tenant,
						     arg->buffer);
			if (b == NULL) {
				request_fail(r, ST_NOT_FOUND,
					     "%s: argument '%s': unknown handle %016" PRIx64,
					     k->name, arg->name, arg->buffer);
				return;
			}
			kernel_array a;
			to_kernel_array(b, &a);
			if (kernel_bind_array(k, p, &a, &ka->v[idx], err, sizeof(err)) != 0) {
				request_fail(r, ST_INVALID, "%s", err);
				return;
			}
			bound[idx] = b;
		} else if (arg->value_case == GPUD__ARGUMENT__VALUE_ARRAY && arg->array) {
			if (inline_array(r, k, p, arg->array, &cursor, &up[nup], &bound[idx], err,
					 sizeof(err)) != 0)
				return; /* replied */
			kernel_array a;
			to_kernel_array(bound[idx], &a);
			if (kernel_bind_array(k, p, &a, &ka->v[idx], err, sizeof(err)) != 0) {
				request_fail(r, ST_INVALID, "%s", err);
				return;
			}
			if (up[nup].len > 0)
				nup++;
		} else if (arg->value_case == GPUD__ARGUMENT__VALUE_SCALAR && arg->scalar) {
			Gpud__Scalar *sc = arg->scalar;
			kscalar_given kind;
			switch (sc->value_case) {
			case GPUD__SCALAR__VALUE_B:
				kind = KGIVEN_BOOL;
				break;
			case GPUD__SCALAR__VALUE_I64:
				kind = KGIVEN_I64;
				break;
			case GPUD__SCALAR__VALUE_F64:
				kind = KGIVEN_F64;
				break;
			case GPUD__SCALAR__VALUE_TEXT:
				if (kernel_bind_text(k, p, sc->text ? sc->text : "", &ka->v[idx],
						     err, sizeof(err)) != 0) {
					request_fail(r, ST_INVALID, "%s", err);
					return;
				}
				continue;
			default:
				request_fail(r, ST_INVALID, "%s: argument '%s' has an empty scalar",
					     k->name, arg->name);
				return;
			}
			if (kernel_bind_scalar(k, p, kind, sc->b, sc->i64, sc->f64, &ka->v[idx],
					       err, sizeof(err)) != 0) {
				request_fail(r, ST_INVALID, "%s", err);
				return;
			}
		} else {
			request_fail(r, ST_INVALID, "%s: argument '%s' has no value", k->name,
				     arg->name);
			return;
		}
	}
	if (cursor != r->payload_len) {
		request_fail(r, ST_INVALID,
			     "%s: the payload has %zu bytes but the inline arrays take %zu",
			     k->name, r->payload_len, cursor);
		return;
	}
	if (kernel_args_finish(ka, err, sizeof(err)) != 0 || k->check(ka, err, sizeof(err)) != 0) {
		request_fail(r, ST_INVALID, "%s", err);
		return;
	}

	/* Outputs: check the ones given, allocate the others. */
	for (int i = 0; i < k->nparams; i++) {
		if (k->params[i].role != KPARAM_OUT)
			continue;
		kernel_value *v = &ka->v[i];
		if (v->present) {
			if (v->arr.dtype != v->expect.dtype || v->arr.ndim != v->expect.ndim ||
			    memcmp(v->arr.shape, v->expect.shape,
				   (size_t)v->arr.ndim * sizeof(uint64_t)) != 0) {
				gpud_shape_format(want, sizeof(want), v->expect.shape,
						  v->expect.ndim);
				gpud_shape_format(got, sizeof(got), v->arr.shape, v->arr.ndim);
				request_fail(
					r, ST_INVALID,
					"%s: output '%s' must be %s with shape %s, got %s with shape %s",
					k->name, k->params[i].name,
					gpud_dtype_name(v->expect.dtype), want,
					gpud_dtype_name(v->arr.dtype), got);
				return;
			}
			continue;
		}
		gpud_buffer *b;
		rv = buffers_alloc(&r->srv->buffers, r->session, 0, v->expect.dtype, v->expect.ndim,
				   v->expect.shape, &b, err, sizeof(err));
		if (rv != 0) {
			request_fail(r, rv, "%s: output '%s': %s", k->name, k->params[i].name, err);
			return;
		}
		r->created[r->ncreated++] = b;
		to_kernel_array(b, &v->arr);
		v->present = 1;
		bound[i] = b;
	}
	if (rq->return_outputs) {
		uint64_t total = 0;
		for (int i = 0; i < k->nparams; i++)
			if (k->params[i].role == KPARAM_OUT)
				total += bound[i]->nbytes;
		if (total > r->srv->cfg->max_message_size) {
			request_fail(r, ST_TOO_LARGE,
				     "%s: the outputs have %" PRIu64
				     " bytes, more than one reply may "
				     "carry (max_message_size %" PRIu64
				     "); run without return_outputs and download them",
				     k->name, total, r->srv->cfg->max_message_size);
			return;
		}
	}
	for (int i = 0; i < k->nparams; i++)
		if (bound[i])
			request_hold(r, bound[i]);

	if (nup == 0) {
		run_launch(r);
		return;
	}
	/* Inline arrays first; the run starts when the last is in. */
	gpud_backend *be = &r->srv->backend;
	r->pending = 1;
	r->pending_status = 0;
	for (int i = 0; i < nup; i++) {
		r->pending++;
		rv = be->ops->upload(be, r->pipe_id, up[i].dst, up[i].src, up[i].len, up[i].flags,
				     inline_done, r, err, sizeof(err));
		if (rv != 0)
			inline_done(r, rv, err);
	}
	inline_done(r, 0, NULL);
}

/* The inline arrays are in: launch, or report the first failure. */
static void inline_done(void *arg, int status, const char *msg)
{
	gpud_request *r = arg;
	if (!pending_done(r, status, msg))
		return;
	if (r->pending_status != 0) {
		request_fail(r, r->pending_status, "run %s: inline arrays: %s", r->kernel->name,
			     r->pending_msg);
		return;
	}
	run_launch(r);
}

/*
 * The run scheduler. At most run_slots kernel runs are in the backend at
 * once; further runs wait in their tenant's queue, and as slots free the
 * tenants with waiting runs are served in turn, one run each. A tenant that
 * floods gpud thus queues behind itself: another tenant's run waits for the
 * runs in the backend and at most one of each other waiting tenant.
 */
static void backend_run(gpud_request *r)
{
	char err[768];
	gpud_backend *be = &r->srv->backend;
	int rv = be->ops->run(be, r->pipe_id, r->kernel, &r->kargs, &r->kernel_us, run_done, r, err,
			      sizeof(err));
	if (rv != 0)
		request_fail(r, rv, "run %s: %s", r->kernel->name, err); /* releases the slot */
}

static void run_launch(gpud_request *r)
{
	gpud_server *s = r->srv;
	gpud_tenant *tn = r->tenant;

	if (tn == NULL || s->runs_busy < s->run_slots) {
		s->runs_busy++;
		r->has_slot = 1;
		backend_run(r);
		return;
	}
	r->qnext = NULL;
	if (tn->qtail)
		tn->qtail->qnext = r;
	else
		tn->qhead = r;
	tn->qtail = r;
	tn->queued++;
	if (!tn->in_ring) {
		tn->in_ring = 1;
		tn->ring_next = NULL;
		if (s->ring_tail)
			s->ring_tail->ring_next = tn;
		else
			s->ring_head = tn;
		s->ring_tail = tn;
	}
}

void sched_release(gpud_request *r)
{
	gpud_server *s = r->srv;

	r->has_slot = 0;
	s->runs_busy--;
	while (s->runs_busy < s->run_slots && s->ring_head) {
		gpud_tenant *tn = s->ring_head;
		gpud_request *next = tn->qhead;
		s->ring_head = tn->ring_next;
		if (s->ring_head == NULL)
			s->ring_tail = NULL;
		tn->qhead = next->qnext;
		if (tn->qhead == NULL)
			tn->qtail = NULL;
		tn->queued--;
		if (tn->qhead) { /* back of the ring */
			tn->ring_next = NULL;
			if (s->ring_tail)
				s->ring_tail->ring_next = tn;
			else
				s->ring_head = tn;
			s->ring_tail = tn;
		} else {
			tn->in_ring = 0;
		}
		s->runs_busy++;
		next->has_slot = 1;
		backend_run(next);
	}
}

/* --- custom kernels --------------------------------------------------------------- */

void custom_unref(custom_entry *e)
{
	if (--e->refs > 0)
		return;
	if (e->backend && e->backend->ops->release)
		e->backend->ops->release(e->backend, &e->k);
	custom_free(&e->k);
	free(e);
}

static void customs_clear(custom_entry **table)
{
	custom_entry *e, *tmp;
	HASH_ITER(hh, *table, e, tmp)
	{
		HASH_DELETE(hh, *table, e);
		custom_unref(e);
	}
}

void customs_fini(buffer_table *t)
{
	for (gpud_tenant *tn = t->tenants; tn; tn = tn->hh.next)
		customs_clear(&tn->customs);
	customs_clear(&t->shared);
}

#define CUSTOM_MAX_PER_TENANT 256

/* What `gpuctl kernels` says of a custom kernel: kind, and how its code came. */
static void custom_describe(custom_entry *e)
{
	custom_kernel *k = &e->k;
	char how[96] = "";
	if (k->fn)
		snprintf(how, sizeof(how), "; %s, %d registers",
			 k->cached ? "loaded from the compile cache" : "compiled", k->registers);
	snprintf(k->doc, sizeof(k->doc), "%s %s kernel%s%s", e->shared ? "shared" : "custom",
		 k->kind == CUSTOM_RAW ? "raw" : "elementwise",
		 k->kind == CUSTOM_RAW && k->blocks_per_sm == 0 ? " (_grid and _block per run)"
								: "",
		 how);
}

/*
 * A custom kernel from a registration: name, parameters and source checked
 * (not compiled). NULL with err and *status set.
 */
static custom_entry *custom_from_request(const Gpud__RegisterRequest *q, int *status, char *err,
					 size_t errlen)
{
	int raw = q->kind == GPUD__REGISTER_REQUEST__KIND__KIND_RAW;
	const char *name = q->name ? q->name : "";
	char perr[512];
	custom_entry *e;

	*status = ST_INVALID;
	if (kernel_find(name) != NULL) {
		snprintf(err, errlen, "register: '%s' is a built-in kernel; pick another name",
			 name);
		return NULL;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		*status = GPUD__STATUS__STATUS_OUT_OF_MEMORY;
		snprintf(err, errlen, "register: out of memory");
		return NULL;
	}
	custom_kernel *k = &e->k;
	k->block = q->block;
	k->blocks_per_sm = q->blocks_per_sm ? q->blocks_per_sm : (raw ? 0 : 4);
	k->fast_math = q->fast_math;
	k->max_registers = q->max_registers;
	int rv = raw ? custom_parse_signature(q->signature ? q->signature : "", k->params,
					      KERNEL_MAX_PARAMS, &k->nparams, perr, sizeof(perr))
		     : custom_parse_ew_params(q->in_params ? q->in_params : "", KPARAM_IN,
					      k->params, KERNEL_MAX_PARAMS, &k->nparams, perr,
					      sizeof(perr));
	const char *what = raw ? "signature" : "input parameters";
	if (rv == 0 && !raw) {
		what = "output parameters";
		rv = custom_parse_ew_params(q->out_params ? q->out_params : "", KPARAM_OUT,
					    k->params, KERNEL_MAX_PARAMS, &k->nparams, perr,
					    sizeof(perr));
	}
	if (rv != 0) {
		snprintf(err, errlen, "register %s: %s: %s", name, what, perr);
		free(e);
		return NULL;
	}
	if (custom_build(k, name, raw ? CUSTOM_RAW : CUSTOM_ELEMENTWISE, q->source, q->entry, perr,
			 sizeof(perr)) != 0) {
		snprintf(err, errlen, "register: %s", perr);
		custom_free(k);
		free(e);
		return NULL;
	}
	e->refs = 1;
	return e;
}

/* Where a registration lives: a tenant's table, or the shared one (with its
 * directory under kernel_cache: tenants/TENANT or shared). */
typedef struct reg_home {
	custom_entry **table;
	char rel[GPUD_TENANT_NAME + 16];
	const char *who; /* for messages */
} reg_home;

static reg_home home_of(gpud_server *s, gpud_tenant *tn, int shared)
{
	reg_home h;
	if (shared) {
		h.table = &s->buffers.shared;
		snprintf(h.rel, sizeof(h.rel), "shared");
		h.who = "the shared kernels";
	} else {
		h.table = &tn->customs;
		snprintf(h.rel, sizeof(h.rel), "tenants/%s", tn->name);
		h.who = tn->name;
	}
	return h;
}

/* The registration file of a kernel: KERNEL_CACHE/REL/NAME.reg. */
static int reg_path(const gpud_config *cfg, const char *rel, const char *name, char *out,
		    size_t len)
{
	const char *last = strrchr(rel, '/');
	last = last ? last + 1 : rel;
	if (!cfg->kernel_cache[0] || last[0] == '.' || strstr(rel, "..") ||
	    (strncmp(rel, "tenants/", 8) == 0 && strchr(rel + 8, '/')))
		return -1; /* nothing kept on disk */
	snprintf(out, len, "%s/%s/%s.reg", cfg->kernel_cache, rel, name);
	return 0;
}

static void reg_save(gpud_server *s, const char *rel, const Gpud__RegisterRequest *q)
{
	char path[1024], dir[1024], tmp[1100];
	if (reg_path(s->cfg, rel, q->name, path, sizeof(path)) != 0)
		return;
	snprintf(dir, sizeof(dir), "%s/%s", s->cfg->kernel_cache, rel);
	char *slash = dir;
	while ((slash = strchr(slash + 1, '/')) != NULL) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	mkdir(dir, 0700);
	size_t n = gpud__register_request__get_packed_size(q);
	uint8_t *buf = malloc(n ? n : 1);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = buf ? fopen(tmp, "wb") : NULL;
	if (f == NULL || fwrite(buf, 1, gpud__register_request__pack(q, buf), f) != n ||
	    fclose(f) != 0 || rename(tmp, path) != 0) {
		log_warn("cannot keep the registration of %s in %s", q->name, path);
		if (f)
			unlink(tmp);
	}
	free(buf);
}

/* The request is answered once the backend has compiled the kernel. */
static void register_done(void *arg, int status, const char *msg)
{
	gpud_request *r = arg;
	gpud_tenant *tn = r->tenant; /* the session may have closed meanwhile; tenants stay */
	custom_entry *e = r->custom, *old;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__RegisterResponse rr = GPUD__REGISTER_RESPONSE__INIT;

	r->custom = NULL; /* kept or freed here, not by the request's clean-up */
	if (status != 0) {
		/* The compiler's log verbatim: it names lines of the source. */
		size_t n = strlen(msg ? msg : "") + 256;
		char *m = malloc(n);
		if (m)
			snprintf(m, n, "register %s: does not compile:\n%s", e->k.name,
				 msg ? msg : "");
		resp.code = (Gpud__Status)status;
		resp.message = m ? m : "register: does not compile";
		request_reply(r, &resp, NULL, 0);
		free(m);
		custom_unref(e);
		return;
	}
	reg_home home = home_of(r->srv, tn, r->req->register_->shared);
	HASH_FIND_STR(*home.table, e->k.name, old);
	if (old != NULL) { /* registered meanwhile by another connection */
		request_fail(r, ST_INVALID, "register: kernel '%s' is registered already",
			     e->k.name);
		custom_unref(e);
		return;
	}
	e->shared = r->req->register_->shared;
	custom_describe(e);
	HASH_ADD_STR(*home.table, k.name, e);
	reg_save(r->srv, home.rel, r->req->register_);
	log_info("tenant %s registered kernel %s (%s, %.1f ms)", tn->name, e->k.name,
		 e->k.cached ? "from the cache" : "compiled", e->k.compile_ms);
	rr.compile_ms = e->k.compile_ms;
	rr.cached = e->k.cached;
	rr.log = "";
	resp.body_case = GPUD__RESPONSE__BODY_REGISTER;
	resp.register_ = &rr;
	request_reply(r, &resp, NULL, 0);
}

/*
 * A tenant's own kernel: checked (name, signature, source), then compiled
 * by the backend (a worker; the cache first). Built-in names cannot be
 * taken; a tenant's names are its own (another tenant may use the same).
 * The cpu backend runs no custom kernel but checks and keeps them.
 */
static void verb_register(gpud_request *r)
{
	Gpud__RegisterRequest *q = r->req->register_;
	gpud_tenant *tn = r->session->tenant;
	const char *name = q->name ? q->name : "";
	custom_entry *e, *old;
	char err[768];
	int status;

	if (q->shared && !config_is_admin(r->srv->cfg, tn->name)) {
		request_fail(r, GPUD__STATUS__STATUS_UNAUTHENTICATED,
			     "register %s: shared kernels are for administrators; tenant %s is not "
			     "in admin_tenants",
			     name, tn->name);
		return;
	}
	reg_home home = home_of(r->srv, tn, q->shared);
	if (HASH_COUNT(*home.table) >= CUSTOM_MAX_PER_TENANT) {
		request_fail(
			r, GPUD__STATUS__STATUS_QUOTA,
			"register: %s have %d kernels registered, the most allowed; remove some "
			"(gpuctl kernel rm)",
			home.who, CUSTOM_MAX_PER_TENANT);
		return;
	}
	if (!q->shared) {
		HASH_FIND_STR(r->srv->buffers.shared, name, old);
		if (old != NULL) {
			request_fail(r, ST_INVALID,
				     "register: '%s' is a shared kernel; pick another name", name);
			return;
		}
	}
	HASH_FIND_STR(*home.table, name, old);
	if (old != NULL) {
		request_fail(r, ST_INVALID,
			     "register: kernel '%s' is registered already; remove it first (gpuctl "
			     "kernel rm %s)",
			     name, name);
		return;
	}
	if ((e = custom_from_request(q, &status, err, sizeof(err))) == NULL) {
		request_fail(r, status, "%s", err);
		return;
	}
	gpud_backend *be = &r->srv->backend;
	e->backend = be;
	r->custom = e;
	if (be->ops->compile == NULL) {
		register_done(r, 0, NULL);
		return;
	}
	int rv = be->ops->compile(be, &e->k, r->srv->cfg->kernel_cache_dir, register_done, r, err,
				  sizeof(err));
	if (rv != 0) {
		r->custom = NULL;
		custom_unref(e);
		request_fail(r, rv, "register %s: %s", name, err);
	}
}

/* At start: every registration kept on disk, compiled (or loaded from the
 * cache) before gpud serves. */
void customs_load(gpud_server *s)
{
	char dir[1024];
	if (!s->cfg->kernel_cache[0])
		return;
	int loaded = 0, failed = 0;
	for (int shared = 1; shared >= 0; shared--) {
		snprintf(dir, sizeof(dir), "%s/%s", s->cfg->kernel_cache, shared ? "" : "tenants");
		DIR *d = opendir(dir);
		if (d == NULL)
			continue;
		for (struct dirent *t; (t = readdir(d)) != NULL;) {
			if (t->d_name[0] == '.' || (shared && strcmp(t->d_name, "shared") != 0))
				continue;
			char tdir[1400];
			snprintf(tdir, sizeof(tdir), "%s/%s", dir, t->d_name);
			DIR *td = opendir(tdir);
			if (td == NULL)
				continue;
			for (struct dirent *f; (f = readdir(td)) != NULL;) {
				size_t n = strlen(f->d_name);
				if (n < 5 || strcmp(f->d_name + n - 4, ".reg") != 0)
					continue;
				char path[1700], err[16384];
				snprintf(path, sizeof(path), "%s/%s", tdir, f->d_name);
				FILE *fp = fopen(path, "rb");
				uint8_t buf[1 << 16];
				size_t len = fp ? fread(buf, 1, sizeof(buf), fp) : 0;
				if (fp)
					fclose(fp);
				Gpud__RegisterRequest *q = gpud__register_request__unpack(NULL, len,
											  buf);
				int status;
				custom_entry *e = q ? custom_from_request(q, &status, err,
									  sizeof(err))
						    : NULL;
				gpud_backend *be = &s->backend;
				tenant_quota quota = config_quota(s->cfg, t->d_name);
				gpud_tenant *tn =
					shared ? NULL : tenants_get(&s->buffers, t->d_name, &quota);
				custom_entry **table = shared ? &s->buffers.shared
						       : tn   ? &tn->customs
							      : NULL;
				custom_entry *old = NULL;
				if (e && table)
					HASH_FIND_STR(*table, e->k.name, old);
				if (e && table && !old &&
				    (be->ops->compile_now == NULL ||
				     be->ops->compile_now(be, &e->k, s->cfg->kernel_cache_dir, err,
							  sizeof(err)) == 0)) {
					e->backend = be;
					e->shared = shared;
					custom_describe(e);
					HASH_ADD_STR(*table, k.name, e);
					loaded++;
				} else {
					log_warn("kernel registration %s not loaded: %.300s", path,
						 q == NULL ? "unreadable"
						 : e       ? err
							   : err);
					if (e)
						custom_unref(e);
					failed++;
				}
				if (q)
					gpud__register_request__free_unpacked(q, NULL);
			}
			closedir(td);
		}
		closedir(d);
	}
	log_info("custom kernels: %d loaded from %s, %d not", loaded, s->cfg->kernel_cache, failed);
}

static void verb_unregister(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__UnregisterResponse ur = GPUD__UNREGISTER_RESPONSE__INIT;
	gpud_tenant *tn = r->session->tenant;
	const char *name = r->req->unregister->name ? r->req->unregister->name : "";
	int shared = r->req->unregister->shared;
	custom_entry *e;

	if (shared && !config_is_admin(r->srv->cfg, tn->name)) {
		request_fail(
			r, GPUD__STATUS__STATUS_UNAUTHENTICATED,
			"unregister %s: shared kernels are for administrators; tenant %s is not "
			"in admin_tenants",
			name, tn->name);
		return;
	}
	reg_home home = home_of(r->srv, tn, shared);
	HASH_FIND_STR(*home.table, name, e);
	if (e == NULL) {
		request_fail(r, ST_UNKNOWN_KERNEL, "unregister: no kernel '%s' among %s%s", name,
			     shared ? "the shared kernels" : tn->name,
			     kernel_find(name) ? " (built-in kernels stay)" : "");
		return;
	}
	HASH_DELETE(hh, *home.table, e);
	char path[1024];
	if (reg_path(r->srv->cfg, home.rel, name, path, sizeof(path)) == 0)
		unlink(path);
	custom_unref(e); /* runs in flight keep it until they are answered */
	resp.body_case = GPUD__RESPONSE__BODY_UNREGISTER;
	resp.unregister = &ur;
	request_reply(r, &resp, NULL, 0);
}

/* --- sync ------------------------------------------------------------------- */

static void sync_done(void *arg, int status, const char *msg)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__SyncResponse sr = GPUD__SYNC_RESPONSE__INIT;
	resp.body_case = GPUD__RESPONSE__BODY_SYNC;
	resp.sync = &sr;
	done_empty(arg, status, msg, &resp);
}

/* Replies once everything this connection queued before has completed. */
static void verb_sync(gpud_request *r)
{
	char err[512];
	gpud_backend *be = &r->srv->backend;
	int rv = be->ops->sync(be, r->pipe_id, sync_done, r, err, sizeof(err));
	if (rv != 0)
		request_fail(r, rv, "sync: %s", err);
}

/* --- the table ------------------------------------------------------------ */

typedef struct verb {
	Gpud__Request__BodyCase body;
	const char *name;
	void (*handler)(gpud_request *r);
} verb;

static const verb verbs[] = {
	{GPUD__REQUEST__BODY_HELLO, "hello", verb_hello},
	{GPUD__REQUEST__BODY_ALLOC, "alloc", verb_alloc},
	{GPUD__REQUEST__BODY_UPLOAD, "upload", verb_upload},
	{GPUD__REQUEST__BODY_DOWNLOAD, "download", verb_download},
	{GPUD__REQUEST__BODY_FREE, "free", verb_free},
	{GPUD__REQUEST__BODY_RUN, "run", verb_run},
	{GPUD__REQUEST__BODY_KERNELS, "kernels", verb_kernels},
	{GPUD__REQUEST__BODY_STATUS, "status", verb_status},
	{GPUD__REQUEST__BODY_SYNC, "sync", verb_sync},
	{GPUD__REQUEST__BODY_UNMAP, "unmap", verb_unmap},
	{GPUD__REQUEST__BODY_LIST, "list", verb_list},
	{GPUD__REQUEST__BODY_REGISTER, "register", verb_register},
	{GPUD__REQUEST__BODY_UNREGISTER, "unregister", verb_unregister},
};

void verbs_dispatch(gpud_request *r)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (verbs[i].body == r->req->body_case) {
			log_debug("request %llu from connection %u: %s",
				  (unsigned long long)r->req->id, r->pipe_id, verbs[i].name);
			verbs[i].handler(r);
			return;
		}
	}
	request_fail(r, ST_PROTOCOL, "unknown or missing verb (body field %d)",
		     (int)r->req->body_case);
}
