/*
 * daemon/request.c — replies, what a request holds until its reply,
 * cancelling, and what names a request in logs (request_log) and traces
 * (its NVTX range, daemon/trace.h, from request_track to request_cleanup).
 * An allocation that would wait for the device is request_alloc.c's.
 * Loop thread.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <utlist.h>

#include "daemon/devices.h"
#include "daemon/hostmem.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/placement.h"
#include "daemon/regions.h"
#include "daemon/registry.h"
#include "daemon/request.h"
#include "daemon/trace.h"
#include "daemon/verbs/table.h"
#include "proto/wire.h"

void request_begin(gpud_request *r, gpud_core *core, request_send_fn send, void *sender,
		   nng_msg *msg, uint32_t pipe_id)
{
	ON_LOOP("request_begin");
	r->core = core;
	r->send = send;
	r->sender = sender;
	r->msg = msg;
	r->req = NULL;
	r->payload = NULL;
	r->payload_len = 0;
	r->pipe_id = pipe_id;
	r->session = NULL;
	r->tenant = NULL;
	r->t0_ns = now_ns();
	r->status = ST_OK;
	r->claimed = 0;
	r->bytes_up = r->bytes_down = 0;
	r->dev = NULL;
	r->run_counted = 0;
	r->dev_busy = 0;
	r->moving_dev = NULL;
	r->moving = 0;
	r->nheld = r->ncreated = r->ntemps = r->nregions = 0;
	r->reply = NULL;
	r->host_bytes = 0;
	r->custom = NULL;
	r->spares.n = 0;
	r->spares.want = 0;
	r->spares.fail = ST_OK;
	r->redo = NULL;
	r->pending = 0;
	r->pending_status = ST_OK;
	r->on_release = NULL;
	r->snext = r->sprev = NULL;
	r->tracked = 0;
	r->cancelled = 0;
	r->cancel_why = NULL;
	r->on_cancel = NULL;
	r->session_gone = 0;
	r->who = NULL;
	r->traced = 0;
}

/* The bytes r's trace range carries: the buffer's size for alloc, upload
 * and download; the payload's otherwise. */
static uint64_t trace_bytes(const gpud_request *r)
{
	const Gpud__Request *q = r->req;
	const gpud_buffer *b = NULL;
	gpud_tenant *tn = r->session ? r->session->tenant : NULL;

	switch (q->body_case) {
	case GPUD__REQUEST__BODY_ALLOC: {
		size_t n = gpud_shape_bytes(q->alloc->shape, (int)q->alloc->n_shape,
					    gpud_dtype_size((gpud_dtype)q->alloc->dtype));
		return n == SIZE_MAX ? 0 : n;
	}
	case GPUD__REQUEST__BODY_UPLOAD:
		b = tn ? buffers_get(r->core->buffers, tn, q->upload->handle) : NULL;
		break;
	case GPUD__REQUEST__BODY_DOWNLOAD:
		b = tn ? buffers_get(r->core->buffers, tn, q->download->handle) : NULL;
		break;
	default:
		return r->payload_len;
	}
	return b ? b->nbytes : 0; /* an unknown handle: the request fails */
}

/* r is dispatched: its NVTX range starts (daemon/trace.h). */
static void trace_start(gpud_request *r)
{
	if (r->req == NULL || !trace_on())
		return;
	trace_about a = {.tenant = request_tenant_name(r),
			 .verb = request_verb_name((int)r->req->body_case),
			 .category = (unsigned)r->req->body_case,
			 .kernel = r->req->body_case == GPUD__REQUEST__BODY_RUN
					   ? r->req->run->kernel
					   : NULL,
			 .conn = r->pipe_id,
			 .request = r->req->id};
	a.bytes = trace_bytes(r);
	r->traced = trace_request_start(&a, &r->trace_id);
}

void request_track(gpud_request *r)
{
	gpud_session *s = r->session;
	ON_LOOP("request_track");
	DL_APPEND2(s->live, r, sprev, snext);
	r->tracked = 1;
	trace_start(r);
	uint64_t id = r->req ? r->req->id : 0;
	for (int i = 0; id != 0 && i < SESSION_EARLY_CANCELS; i++)
		if (s->early_cancel[i] == id) { /* its cancel came first */
			s->early_cancel[i] = 0;
			request_cancel(r, "by its client");
			break;
		}
}

void request_cancel_early(gpud_session *s, uint64_t id)
{
	ON_LOOP("request_cancel_early");
	if (id == 0)
		return;
	s->early_cancel[s->early_cancel_next++ % SESSION_EARLY_CANCELS] = id;
}

/* Out of its session's list: a tracked request's session is alive (closing
 * a session takes every request out first). */
static void request_untrack(gpud_request *r)
{
	if (!r->tracked)
		return;
	DL_DELETE2(r->session->live, r, sprev, snext);
	r->tracked = 0;
}

gpud_request *request_find(gpud_session *s, uint64_t id)
{
	gpud_request *r;
	ON_LOOP("request_find");
	DL_FOREACH2(s->live, r, snext)
	{
		if (r->req && r->req->id == id)
			return r;
	}
	return NULL;
}

void request_cancel(gpud_request *r, const char *why)
{
	ON_LOOP("request_cancel");
	if (request_cancelled(r))
		return;
	r->cancel_why = why;
	__atomic_store_n(&r->cancelled, 1, __ATOMIC_RELEASE);
	if (r->on_cancel)
		r->on_cancel(r);
}

int request_cancelled(const gpud_request *r)
{
	return __atomic_load_n(&r->cancelled, __ATOMIC_ACQUIRE);
}

void request_session_closed(gpud_session *s)
{
	gpud_request *r, *tmp;
	DL_FOREACH_SAFE2(s->live, r, tmp, snext)
	{
		DL_DELETE2(s->live, r, sprev, snext);
		r->tracked = 0;
		r->who = s->tenant; /* s is freed next: logs and traces name this */
		r->session_gone = 1;
		request_cancel(r, "its connection closed");
	}
}

/* The buffers a request lets go of: released after its reply has gone (the
 * device frees cost driver calls the client need not wait for). */
typedef struct request_drop {
	gpud_buffer *temps[REQUEST_MAX_ARGS];
	gpud_buffer *held[REQUEST_MAX_ARGS + 1];
	int ntemps, nheld;
} request_drop;

static void request_drop_now(gpud_core *core, request_drop *d)
{
	/* Inline arrays and returned outputs: gone with the request. */
	for (int i = 0; i < d->ntemps; i++)
		buffers_release(core->buffers, d->temps[i]);
	for (int i = 0; i < d->nheld; i++)
		buffer_unref(core->buffers, d->held[i]);
	d->ntemps = d->nheld = 0;
}

/* Lets go of everything the request holds; the message goes last. Its
 * buffers go into *later for the caller to release (request_drop_now). */
static void request_cleanup(gpud_request *r, request_drop *later)
{
	gpud_core *core = r->core;

	if (r->traced) /* its reply is made: here for every request, sent or not */
		trace_request_end(r->trace_id);
	r->traced = 0;
	free(r->carried_hello); /* the block verbs_carried_hello made */
	r->carried_hello = NULL;
	if (r->on_release) { /* the verb's own: a run's slot */
		r->on_release(r);
		r->on_release = NULL;
	}
	request_run_ended(r);
	if (r->run_counted) {
		r->dev->runs--;
		r->run_counted = 0;
	}
	if (r->moving_dev) {
		r->moving_dev->bytes_moving -= r->moving;
		r->moving_dev = NULL;
		r->moving = 0;
	}
	if (r->custom) {
		registry_unref(r->custom);
		r->custom = NULL;
	}
	later->ntemps = r->ntemps;
	memcpy(later->temps, r->temps, (size_t)r->ntemps * sizeof(r->temps[0]));
	later->nheld = r->nheld;
	memcpy(later->held, r->held, (size_t)r->nheld * sizeof(r->held[0]));
	r->ntemps = 0;
	r->nheld = 0;
	for (int i = 0; i < r->nregions; i++)
		region_unref(r->regions[i]);
	r->nregions = 0;
	request_untrack(r);
	r->on_cancel = NULL;
	if (r->session && sessions_get(core->buffers, r->pipe_id, 0) == r->session)
		r->session->in_flight--;
	r->session = NULL;
	if (r->tenant) /* tenants live as long as gpud */
		r->tenant->in_flight--;
	r->tenant = NULL;
	r->ncreated = 0;
	buffers_spares_free(core->buffers, &r->spares);
	if (r->reply) {
		nng_msg_free(r->reply);
		r->reply = NULL;
	}
	if (r->req) {
		gpud__request__free_unpacked(r->req, NULL);
		r->req = NULL;
	}
	if (r->msg) {
		nng_msg_free(r->msg);
		r->msg = NULL;
	}
	/* The reply goes to nng now and is freed once sent. */
	hostmem_release(core->host, HOSTMEM_MESSAGES, r->host_bytes);
	r->host_bytes = 0;
}

int request_hold_host_or_fail(gpud_request *r, const char *what, uint64_t bytes)
{
	char err[256];
	if (bytes < HOSTMEM_MESSAGE_MIN)
		return 0;
	if (hostmem_reserve(r->core->host, HOSTMEM_MESSAGES, bytes, err, sizeof(err)) != 0) {
		request_fail(r, ST_OUT_OF_MEMORY, "%s: %s", what, err);
		return -1;
	}
	r->host_bytes += bytes;
	return 0;
}

/* --- devices ---------------------------------------------------------------------- */

void request_run_ended(gpud_request *r)
{
	if (!r->dev_busy)
		return;
	r->dev_busy = 0;
	device_run_ended(r->dev);
}

void request_moving(gpud_request *r, gpud_device *d, uint64_t bytes)
{
	if (r->moving_dev && r->moving_dev != d) { /* one device's count per request */
		r->moving_dev->bytes_moving -= r->moving;
		r->moving = 0;
	}
	r->moving_dev = d;
	r->moving += bytes;
	d->bytes_moving += bytes;
}

gpud_device *request_device_or_fail(gpud_request *r, const char *verb, int pin, int32_t id,
				    int *pinned)
{
	device_set *ds = r->core->devices;
	char list[256];
	*pinned = 0;
	if (pin) {
		gpud_device *d = devices_find(ds, id);
		if (d == NULL) {
			request_fail(r, ST_INVALID, "%s: device %d: this gpud has devices %s", verb,
				     (int)id, devices_list(ds, list, sizeof(list)));
			return NULL;
		}
		if (d->lost) {
			request_fail(r, ST_BACKEND, "%s: device %d is lost (%s); devices: %s", verb,
				     d->id, d->lost_msg, devices_list(ds, list, sizeof(list)));
			return NULL;
		}
		*pinned = 1;
		return d;
	}
	if (r->dev && !r->dev->lost) /* placed already: an allocation's second try */
		return r->dev;
	gpud_device *d = place_fresh(ds, r->tenant);
	if (d == NULL)
		request_fail(r, ST_BACKEND, "%s: no device is left: every device is lost (%s)",
			     verb, devices_list(ds, list, sizeof(list)));
	return d;
}

void request_hold(gpud_request *r, gpud_buffer *b)
{
	ON_LOOP("request_hold");
	buffer_ref(b);
	r->held[r->nheld++] = b;
}

void request_created(gpud_request *r, gpud_buffer *b)
{
	r->created[r->ncreated++] = b;
}

void request_temp(gpud_request *r, gpud_buffer *b)
{
	r->temps[r->ntemps++] = b;
	buffers_temp(b);
}

/* Counts the request in /metrics: by its tenant (the session's, which a
 * hello may just have set), verb and status. */
static void request_account(gpud_request *r, gpud_session *sess, dstatus status)
{
	gpud_tenant *tn = r->tenant ? r->tenant : sess ? sess->tenant : NULL;
	int verb = r->req ? verb_index((int)r->req->body_case) : VERB_NONE;
	if (tn && status == ST_CANCELLED)
		tn->metrics.cancelled_closed += r->session_gone;
	if (r->core->metrics == NULL)
		return;
	metrics_request(r->core->metrics, tn ? &tn->metrics : NULL, verb, status, r->bytes_up,
			r->bytes_down, (double)(now_ns() - r->t0_ns) / 1e9);
}

static void request_finish(gpud_request *r, nng_msg *m, dstatus status)
{
	gpud_core *core = r->core;

	ON_LOOP("request_finish");
	if (r->reply == m)
		r->reply = NULL;
	/* The session may have closed meanwhile: look it up, do not keep it. */
	gpud_session *sess = sessions_get(core->buffers, r->pipe_id, 0);
	request_account(r, sess, status);
	if (status == ST_CANCELLED) {
		core->stats->cancelled++;
		core->stats->cancelled_closed += r->session_gone;
	}
	request_log(r, LOG_DEBUG, "done in %.1f us", (double)(now_ns() - r->t0_ns) / 1e3);
	request_drop later;
	request_cleanup(r, &later);
	core->stats->in_flight--;
	r->send(r, m); /* r may be gone: the server reuses or frees it */
	/* Still on the loop: the client's next request is taken only after
	 * this returns, so it sees these buffers gone. */
	request_drop_now(core, &later);
}

void request_send_msg(gpud_request *r, nng_msg *m)
{
	request_finish(r, m, ST_OK);
}

void request_reply_head(gpud_request *r, Gpud__Response *resp)
{
	resp->version = GPUD_PROTOCOL_VERSION;
	resp->id = r->req ? r->req->id : 0;
	resp->carried_hello = r->carried_hello; /* also on a failure: the hello held */
}

void request_reply(gpud_request *r, Gpud__Response *resp, const void *payload, size_t len)
{
	gpud_core *core = r->core;
	nng_msg *m;
	int rv;

	ON_LOOP("request_reply");
	request_reply_head(r, resp);
	if (resp->code != (Gpud__Status)status_wire(ST_OK)) {
		core->stats->errors++;
		/* A failed request gives back what it made. */
		for (int i = 0; i < r->ncreated; i++)
			buffers_release(core->buffers, r->created[i]);
		r->ncreated = 0;
	}
	rv = wire_pack(&m, &resp->base, payload, len, NULL);
	if (rv != 0) {
		Gpud__Response fail = GPUD__RESPONSE__INIT;
		request_log(r, LOG_ERROR, "cannot build a reply of %zu bytes: %s", len,
			    nng_strerror(rv));
		fail.version = GPUD_PROTOCOL_VERSION;
		fail.id = resp->id;
		fail.code = (Gpud__Status)status_wire(ST_INTERNAL);
		fail.message = "gpud could not build the reply (out of memory)";
		if (wire_pack(&m, &fail.base, NULL, 0, NULL) != 0) {
			/* Nothing can be sent; the client's request times out. */
			request_account(r, sessions_get(core->buffers, r->pipe_id, 0), ST_INTERNAL);
			request_drop later;
			request_cleanup(r, &later);
			core->stats->in_flight--;
			r->send(r, NULL);
			request_drop_now(core, &later);
			return;
		}
	}
	request_finish(r, m,
		       resp->code == (Gpud__Status)status_wire(ST_OK)
			       ? ST_OK
			       : (r->status != ST_OK ? r->status : ST_INTERNAL));
}

void request_fail(gpud_request *r, dstatus status, const char *fmt, ...)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	request_log(r, LOG_INFO, "failed: %s: %s", status_name(status), msg);
	resp.code = (Gpud__Status)status_wire(status);
	resp.message = msg;
	r->status = status;
	request_reply(r, &resp, NULL, 0);
}

void request_fail_handle(gpud_request *r, const char *what, uint64_t h)
{
	if (buffers_stale(r->core->buffers, h))
		request_fail(r, ST_STALE,
			     "%s: handle %016" PRIx64
			     " is not of this run of gpud: it is from before gpud restarted "
			     "(buffers from before are gone), or no handle at all",
			     what, h);
	else
		request_fail(r, ST_NOT_FOUND, "%s: unknown handle %016" PRIx64, what, h);
}

gpud_buffer *request_buffer_or_fail(gpud_request *r, const char *verb, uint64_t h)
{
	gpud_buffer *b = buffers_get(r->core->buffers, r->session->tenant, h);
	if (b == NULL)
		request_fail_handle(r, verb, h);
	return b;
}

void *request_host_or_fail(gpud_request *r, const char *verb, const Gpud__HostRef *ref,
			   uint64_t len, unsigned *flags)
{
	host_region *hr = regions_get(r->core->regions, r->session, ref->region);
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
	if (r->nregions == REQUEST_MAX_ARGS + 1) {
		request_fail(r, ST_INVALID, "%s: too many host regions in one request", verb);
		return NULL;
	}
	region_ref(hr);
	r->regions[r->nregions++] = hr;
	*flags = hr->pinned ? BACKEND_HOST_PINNED : 0;
	return (char *)hr->base + ref->offset;
}

const char *request_verb_name(int body_case)
{
	int v = verb_index(body_case);
	return v == VERB_NONE || v == VERB_UNKNOWN ? NULL : verb_name(v);
}

static const char *verb_of(const gpud_request *r)
{
	return r->req ? request_verb_name((int)r->req->body_case) : NULL;
}

const char *request_verb(const gpud_request *r)
{
	const char *v = verb_of(r);
	return v ? v : "-";
}

const char *request_tenant_name(const gpud_request *r)
{
	/* A tracked request's session lives; one not tracked yet was just looked up. */
	const gpud_tenant *tn = r->session && !r->session_gone ? r->session->tenant : r->who;
	return tn ? tn->name : NULL;
}

void request_log(const gpud_request *r, enum log_level lvl, const char *fmt, ...)
{
	va_list ap;
	if (lvl > log_get_level())
		return;
	log_about a = {.conn = r->pipe_id,
		       .tenant = request_tenant_name(r),
		       .verb = verb_of(r),
		       .request = r->req ? r->req->id : 0,
		       .is_request = 1};
	va_start(ap, fmt);
	log_about_vmsg(lvl, &a, fmt, ap);
	va_end(ap);
}

int request_pending_done(gpud_request *r, dstatus status, const char *msg)
{
	if (status != ST_OK && r->pending_status == ST_OK) {
		r->pending_status = status;
		snprintf(r->pending_msg, sizeof(r->pending_msg), "%s",
			 msg ? msg : "backend failure");
	}
	return --r->pending == 0;
}
