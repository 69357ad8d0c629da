/*
 * daemon/verbs/run.c — run: a kernel by name (built-in, or the tenant's or a
 * shared custom one), its arguments bound and checked against the kernel's
 * parameters (kernels/core/kernel.h), missing outputs allocated, inline
 * arrays uploaded, then a slot from the run scheduler and the backend's run;
 * with return_outputs the outputs come back in the reply, or go into the host
 * region the client named (outputs_to) when they fit there.
 *
 *   verb_run -> run_begin -> find_kernel_or_fail -> place_or_fail
 *            -> bind_args_or_fail (inline_array_or_fail) -> alias_or_fail
 *            -> outputs_or_fail -> peer_inputs_or_fail
 *            -> [early.c: run_uploads_start] -> run_submit -> sched_submit
 *                                                  (or a dynamic batch: batch_run.c)
 *   slot granted -> run_start -> backend -> run_done -> [early.c: run_ended]
 *            -> run_finish [-> limit_outputs] [-> return_outputs]
 *
 * The run's own state is run_request (run.h); the inline uploads and the
 * run issued right behind them on queue_ordered backends ("early": how the
 * run and its uploads end together) are early.c's.
 *
 * A run can be cancelled (run_cancel) from submission until its kernel is done.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/verbs/run.h"
#include "daemon/verbs/verbs.h"
#include "proto/wire.h"

/* --- the run's end ------------------------------------------------------------------- */

static void returned_done(void *arg, dstatus status, const char *msg)
{
	gpud_request *r = arg;
	run_request *q = run_of(r);
	if (!request_pending_done(r, status, msg))
		return;
	if (r->pending_status != ST_OK) {
		request_fail(r, r->pending_status, "run %s: returning outputs: %s", q->kernel->name,
			     r->pending_msg);
		return;
	}
	request_send_msg(r, r->reply);
}

/* Where return_outputs puts an output in a host region: each at a multiple of 64 bytes. */
#define OUT_ALIGN 64u
static uint64_t out_aligned(uint64_t n)
{
	return (n + OUT_ALIGN - 1) / OUT_ALIGN * OUT_ALIGN;
}

/*
 * return_outputs: the outputs' bytes into the reply, or into the host region
 * of outputs_to (q->out_host); the buffers go with the request.
 */
static void return_outputs(gpud_request *r, Gpud__Response *resp, const int *out_param)
{
	run_request *q = run_of(r);
	Gpud__RunResponse *rr = resp->run;
	const kernel_def *k = q->kernel;
	size_t total = 0;
	uint8_t *dst;
	uint64_t at = q->out_host ? r->req->run->outputs_to->offset : 0;

	for (size_t i = 0; i < rr->n_outputs; i++) {
		rr->outputs[i]->buffer->handle = 0;
		if (q->out_host) {
			rr->outputs[i]->region_offset = at;
			at += out_aligned(q->bound[out_param[i]]->nbytes);
		} else {
			total += q->bound[out_param[i]]->nbytes;
		}
	}
	rr->outputs_in_region = q->out_host != NULL;
	request_reply_head(r, resp);
	char what[128];
	snprintf(what, sizeof(what), "run %s: a %zu-byte reply of its outputs", k->name, total);
	if (request_hold_host_or_fail(r, what, total) != 0)
		return;
	int rv = wire_pack(&r->reply, &resp->base, NULL, total, (void **)&dst);
	if (rv != 0) {
		request_fail(r, ST_OUT_OF_MEMORY, "run %s: cannot make a %zu-byte reply: %s",
			     k->name, total, nng_strerror(rv));
		return;
	}
	r->pending = 1; /* held until every download is issued */
	r->pending_status = ST_OK;
	const backend_fetch *f = &q->fetch;
	int fi = 0;
	size_t fat = 0;
	for (size_t i = 0; i < rr->n_outputs; i++) {
		gpud_buffer *b = q->bound[out_param[i]];
		char err[512];
		if (b->nbytes == 0)
			continue;
		uint8_t *to = q->out_host ? q->out_host + (rr->outputs[i]->region_offset -
							   r->req->run->outputs_to->offset)
					  : dst;
		if (f->fetched && fi < f->n && f->src[fi] == b->mem && f->len[fi] == b->nbytes) {
			/* on the host already: brought behind the kernel (run_start) */
			memcpy(to, f->dst + fat, b->nbytes);
			fat += b->nbytes;
			fi++;
			r->bytes_down += b->nbytes;
			dst += b->nbytes;
			continue;
		}
		r->pending++;
		dstatus st = backend_download(&b->dev->be, r->pipe_id, to, b->mem, b->nbytes,
					      q->out_host ? q->out_flags : 0, returned_done, r, err,
					      sizeof(err));
		if (st != ST_OK) {
			returned_done(r, st, err);
		} else {
			r->bytes_down += b->nbytes;
			request_moving(r, b->dev, b->nbytes);
		}
		if (!q->out_host)
			dst += b->nbytes;
	}
	returned_done(r, ST_OK, NULL);
}

/*
 * limit_outputs: the client takes the first max_outputs outputs. Those after
 * them that gpud made are freed now; they are not in the reply.
 */
static void limit_outputs(gpud_request *r, Gpud__RunResponse *rr, const int *out_param)
{
	run_request *q = run_of(r);
	const Gpud__RunRequest *rq = r->req->run;
	if (!rq->limit_outputs || rq->max_outputs >= rr->n_outputs)
		return;
	for (size_t i = rq->max_outputs; i < rr->n_outputs; i++) {
		gpud_buffer *b = q->bound[out_param[i]];
		for (int j = 0; j < r->ncreated; j++) {
			if (r->created[j] != b)
				continue;
			buffers_release(r->core->buffers,
					b); /* the request's hold keeps it to the end */
			r->created[j] = r->created[--r->ncreated];
			break;
		}
	}
	rr->n_outputs = rq->max_outputs;
}

void run_finish(run_request *q, dstatus status, const char *msg)
{
	gpud_request *r = &q->r;
	const kernel_def *k = q->kernel;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__RunResponse rr = GPUD__RUN_RESPONSE__INIT;
	Gpud__Output outs[KERNEL_MAX_PARAMS], *optrs[KERNEL_MAX_PARAMS];
	Gpud__BufferInfo infos[KERNEL_MAX_PARAMS];
	int out_param[KERNEL_MAX_PARAMS];

	if (q->slot.has_slot) /* the kernel is done; outputs may still be copied */
		sched_release(&r->dev->sched, &q->slot);
	r->on_cancel = NULL;
	if (request_cancelled(r)) { /* the outputs it made go with the failure */
		request_fail(r, ST_CANCELLED, "run %s: cancelled (%s) while it ran", k->name,
			     r->cancel_why);
		return;
	}
	/* the kernel's verdict, worded as check's errors; or over run_timeout */
	if ((status == ST_INVALID || status == ST_QUOTA) && msg) {
		if (status == ST_QUOTA && r->tenant)
			r->tenant->metrics.quota_refused[QUOTA_RUN_TIMEOUT]++;
		request_fail(r, status, "%s", msg);
		return;
	}
	if (status != ST_OK) {
		request_fail(r, status, "run %s: %s", k->name, msg ? msg : "backend failure");
		return;
	}
	/* The outputs, in parameter order. */
	for (int i = 0; i < k->nparams; i++) {
		if (k->params[i].role != KPARAM_OUT)
			continue;
		out_param[rr.n_outputs] = i;
		gpud__output__init(&outs[rr.n_outputs]);
		verb_buffer_info(q->bound[i], &infos[rr.n_outputs]);
		outs[rr.n_outputs].name = (char *)k->params[i].name;
		outs[rr.n_outputs].buffer = &infos[rr.n_outputs];
		optrs[rr.n_outputs] = &outs[rr.n_outputs];
		rr.n_outputs++;
	}
	limit_outputs(r, &rr, out_param);
	rr.outputs = optrs;
	rr.elapsed_us = (double)(now_ns() - r->t0_ns) / 1e3;
	rr.kernel_us = q->kernel_us;
	if (r->core->metrics)
		metrics_ran(r->core->metrics, r->tenant ? &r->tenant->metrics : NULL, k->id,
			    q->kernel_us / 1e6);
	/* Outputs gpud made now belong to the client, or, returned, go with the request. */
	for (int i = 0; r->req->run->return_outputs && i < r->ncreated; i++)
		request_temp(r, r->created[i]);
	r->ncreated = 0;
	resp.body_case = GPUD__RESPONSE__BODY_RUN;
	resp.run = &rr;
	if (r->req->run->return_outputs)
		return_outputs(r, &resp, out_param);
	else
		request_reply(r, &resp, NULL, 0);
}

/* Fails the run before it started: now, or (early) once its uploads are in. */
static void run_fail_unstarted(gpud_request *r, dstatus status, const char *what)
{
	run_request *q = run_of(r);
	char m[1024];
	snprintf(m, sizeof(m), "run %s: %s", q->kernel->name, what);
	run_ended(q, status, m, 1);
}

static void run_done(void *arg, dstatus status, const char *msg)
{
	gpud_request *r = arg;
	request_run_ended(r);
	run_ended(run_of(r), status, msg, 0);
}

/*
 * With return_outputs into the reply: the outputs the reply will carry
 * (return_outputs' order: after limit_outputs, none empty), for the backend
 * to bring to the host right behind the kernel, which saves the round of
 * downloads issued after the run's done. NULL where there is nothing to
 * fetch, too much (BACKEND_FETCH_MAX), or no memory for it: the downloads
 * then go as before.
 */
static backend_fetch *fetch_plan(run_request *q)
{
	gpud_request *r = &q->r;
	const Gpud__RunRequest *rq = r->req->run;
	const kernel_def *k = q->kernel;
	backend_fetch *f = &q->fetch;
	size_t nout = 0;

	f->n = 0;
	f->total = 0;
	if (!rq->return_outputs || q->out_host)
		return NULL;
	for (int i = 0; i < k->nparams; i++) {
		if (k->params[i].role != KPARAM_OUT)
			continue;
		if (rq->limit_outputs && nout >= rq->max_outputs)
			break;
		nout++;
		const gpud_buffer *b = q->bound[i];
		if (b->nbytes == 0)
			continue;
		if (b->dev != r->dev || b->nbytes > BACKEND_FETCH_MAX - f->total) {
			f->n = 0;
			return NULL;
		}
		f->src[f->n] = b->mem;
		f->len[f->n++] = b->nbytes;
		f->total += b->nbytes;
	}
	if (f->n == 0 || (f->dst == NULL && (f->dst = malloc(f->total)) == NULL)) {
		f->n = 0;
		return NULL;
	}
	return f;
}

/* The scheduler gave the run a slot: the backend takes it. */
static void run_start(sched_item *it)
{
	run_request *q = (run_request *)((char *)it - offsetof(run_request, slot));
	gpud_request *r = &q->r;
	char err[768];
	gpud_tenant *tn = r->tenant;
	backend_tenant t = {.name = tn ? tn->name : "",
			    .kernel_timeout_ms = tn ? tn->quota.kernel_timeout_ms : 0,
			    .run_timeout_ms = tn ? tn->quota.run_timeout_ms : 0};
	if (r->core->metrics)
		metrics_queued(r->core->metrics, q->kernel->id,
			       (double)(now_ns() - q->queued_ns) / 1e9);
	r->dev_busy = 1; /* before: done may come from within (never does today) */
	device_run_started(r->dev);
	dstatus rv = backend_run(&r->dev->be, r->pipe_id, q->kernel, &q->kargs, &t, &r->cancelled,
				 &q->kernel_us, fetch_plan(q), run_done, r, err, sizeof(err));
	if (rv != ST_OK) {
		request_run_ended(r);
		run_fail_unstarted(r, rv, err);
	}
}

/* "cancelled (why) before it started" */
static void fail_cancelled_unstarted(gpud_request *r)
{
	char m[300];
	snprintf(m, sizeof(m), "cancelled (%s) before it started", r->cancel_why);
	run_fail_unstarted(r, ST_CANCELLED, m);
}

/*
 * Cancelled: waiting for a slot, it leaves the queue and fails (early: once
 * its uploads are in); inline arrays still uploading (not early), it fails
 * when they are in (inline_done); in the backend, run_done fails it (the cpu
 * backend stops between chunks).
 */
static void run_cancel(gpud_request *r)
{
	run_request *q = run_of(r);
	if (sched_cancel(&r->dev->sched, &q->slot))
		fail_cancelled_unstarted(r);
}

void run_submit(run_request *q)
{
	gpud_request *r = &q->r;
	if (request_cancelled(r)) {
		fail_cancelled_unstarted(r);
		return;
	}
	q->slot.start = run_start;
	q->queued_ns = now_ns();
	if (!r->run_counted) { /* the device's load until the reply */
		r->run_counted = 1;
		r->dev->runs++;
	}
	if (run_batch_take(q)) /* a dynamic batch runs it (batch_run.c) */
		return;
	run_alone(q);
}

void run_alone(run_request *q)
{
	gpud_request *r = &q->r;
	r->on_cancel = run_cancel;
	sched_submit(&r->dev->sched, r->tenant ? &r->tenant->runs[r->dev->slot] : NULL, &q->slot);
}

/* --- inline arrays -------------------------------------------------------------------- */

static void to_kernel_array(const gpud_buffer *b, kernel_array *a)
{
	a->dtype = b->dtype;
	a->ndim = b->ndim;
	memcpy(a->shape, b->shape, sizeof(a->shape));
	a->count = b->count;
	a->data = b->mem;
}

/*
 * An inline array argument: checks it, takes its bytes from the payload at
 * *cursor (or a host region), allocates a buffer that goes with the request,
 * and says what to upload. The buffer, or NULL after replying an error.
 */
static gpud_buffer *inline_array_or_fail(gpud_request *r, const kernel_param *p,
					 const Gpud__InlineArray *ia, size_t *cursor,
					 inline_upload *up)
{
	run_request *q = run_of(r);
	const kernel_def *k = q->kernel;
	char shape[256], err[512];
	gpud_buffer *b;

	if (p->role != KPARAM_IN) {
		request_fail(r, ST_INVALID, "%s: argument '%s' is %s, not an input array", k->name,
			     p->name,
			     p->role == KPARAM_SCALAR
				     ? "a scalar"
				     : "an output (gpud allocates it; leave it out)");
		return NULL;
	}
	if (ia->n_shape > GPUD_MAX_DIMS || gpud_dtype_size((gpud_dtype)ia->dtype) == 0) {
		request_fail(r, ST_INVALID,
			     "%s: argument '%s': an inline array needs a dtype (float32, float64, "
			     "int32, int64) and at most %d dimensions",
			     k->name, p->name, GPUD_MAX_DIMS);
		return NULL;
	}
	size_t want = gpud_shape_bytes(ia->shape, (int)ia->n_shape,
				       gpud_dtype_size((gpud_dtype)ia->dtype));
	if (want == SIZE_MAX) {
		request_fail(r, ST_TOO_LARGE, "%s: argument '%s': the shape overflows", k->name,
			     p->name);
		return NULL;
	}
	*up = (inline_upload){.len = want};
	if (ia->from) {
		if ((up->src = request_host_or_fail(r, k->name, ia->from, want, &up->flags)) ==
		    NULL)
			return NULL;
	} else {
		if (want > r->payload_len - *cursor) {
			gpud_shape_format(shape, sizeof(shape), ia->shape, (int)ia->n_shape);
			request_fail(r, ST_INVALID,
				     "%s: argument '%s' (%s %s) needs %zu bytes at payload offset "
				     "%zu, but the payload has %zu",
				     k->name, p->name, gpud_dtype_name((gpud_dtype)ia->dtype),
				     shape, want, *cursor, r->payload_len);
			return NULL;
		}
		up->src = r->payload + *cursor;
		*cursor += want;
	}
	dstatus rv = buffers_alloc(r->core->buffers, r->session, 0, r->dev, 0, 1,
				   (gpud_dtype)ia->dtype, (int)ia->n_shape, ia->shape, &r->spares,
				   &b, err, sizeof(err));
	if (rv == ST_WOULD_BLOCK) { /* a pool miss: made on a worker, then the run again */
		request_alloc_off_loop(r, verb_run);
		return NULL;
	}
	if (rv != ST_OK) {
		request_fail(r, rv, "%s: argument '%s': %s", k->name, p->name, err);
		return NULL;
	}
	request_temp(r, b);
	up->dst = b->mem;
	return b;
}

/* --- binding ------------------------------------------------------------------------------ */

/* The kernel the run names; NULL after replying "unknown kernel". */
static const kernel_def *find_kernel_or_fail(gpud_request *r)
{
	const char *name = r->req->run->kernel;
	const kernel_def *k = kernel_find(name);
	char names[256];

	if (k != NULL)
		return k;
	if (r->session->tenant &&
	    (r->custom = registry_find(r->core->registry, r->session->tenant, name)) != NULL)
		return &r->custom->k.def;
	size_t nk, n = 0;
	const kernel_def *const *ks = kernel_list(&nk);
	names[0] = '\0';
	for (size_t i = 0; i < nk; i++)
		n += (size_t)snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0, "%s%s",
				      i ? ", " : "", ks[i]->name);
	if (n < sizeof(names))
		registry_names(r->session->tenant, names + n, sizeof(names) - n);
	request_fail(r, ST_UNKNOWN_KERNEL, "run: unknown kernel '%s' (known: %s)", LOG_CLIP(name),
		     names);
	return NULL;
}

/* One scalar argument into ka->v[idx]. 0, or -1 after replying. */
static int bind_scalar_or_fail(gpud_request *r, const kernel_param *p, const Gpud__Argument *arg,
			       kernel_value *v)
{
	run_request *q = run_of(r);
	const kernel_def *k = q->kernel;
	const Gpud__Scalar *sc = arg->scalar;
	char err[768];
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
		if (kernel_bind_text(k, p, sc->text ? sc->text : "", v, err, sizeof(err)) != 0) {
			request_fail(r, ST_INVALID, "%s", err);
			return -1;
		}
		return 0;
	default:
		request_fail(r, ST_INVALID, "%s: argument '%s' has an empty scalar", k->name,
			     arg->name);
		return -1;
	}
	if (kernel_bind_scalar(k, p, kind, sc->b, sc->i64, sc->f64, v, err, sizeof(err)) != 0) {
		request_fail(r, ST_INVALID, "%s", err);
		return -1;
	}
	return 0;
}

/*
 * Every argument of the request against the kernel's parameters; inline
 * arrays get their buffers and an entry in up (*nup). 0, or -1 after replying.
 */
static int bind_args_or_fail(gpud_request *r, inline_upload *up, int *nup)
{
	run_request *q = run_of(r);
	Gpud__RunRequest *rq = r->req->run;
	const kernel_def *k = q->kernel;
	kernel_args *ka = &q->kargs;
	char err[768], names[256];
	size_t cursor = 0; /* payload bytes taken by inline arrays */

	for (size_t i = 0; i < rq->n_args; i++) {
		Gpud__Argument *arg = rq->args[i];
		int idx = kernel_param_index(k, arg->name);
		if (idx < 0) {
			kernel_param_names(k, names, sizeof(names));
			request_fail(r, ST_INVALID, "%s: unknown argument '%s' (arguments: %s)",
				     k->name, LOG_CLIP(arg->name), names);
			return -1;
		}
		if (ka->v[idx].present) {
			request_fail(r, ST_INVALID, "%s: argument '%s' given twice", k->name,
				     arg->name);
			return -1;
		}
		const kernel_param *p = &k->params[idx];
		gpud_buffer *b = NULL;
		if (arg->value_case == GPUD__ARGUMENT__VALUE_BUFFER) {
			b = buffers_get(r->core->buffers, r->session->tenant, arg->buffer);
			if (b == NULL) {
				char what[160];
				snprintf(what, sizeof(what), "%s: argument '%s'", k->name,
					 arg->name);
				request_fail_handle(r, what, arg->buffer);
				return -1;
			}
		} else if (arg->value_case == GPUD__ARGUMENT__VALUE_ARRAY && arg->array) {
			if ((b = inline_array_or_fail(r, p, arg->array, &cursor, &up[*nup])) ==
			    NULL)
				return -1;
			if (up[*nup].len > 0)
				(*nup)++;
		} else if (arg->value_case == GPUD__ARGUMENT__VALUE_SCALAR && arg->scalar) {
			if (bind_scalar_or_fail(r, p, arg, &ka->v[idx]) != 0)
				return -1;
			continue;
		} else {
			request_fail(r, ST_INVALID, "%s: argument '%s' has no value", k->name,
				     arg->name);
			return -1;
		}
		kernel_array a;
		to_kernel_array(b, &a);
		if (kernel_bind_array(k, p, &a, &ka->v[idx], err, sizeof(err)) != 0) {
			request_fail(r, ST_INVALID, "%s", err);
			return -1;
		}
		q->bound[idx] = b;
	}
	if (cursor != r->payload_len) {
		request_fail(r, ST_INVALID,
			     "%s: the payload has %zu bytes but the inline arrays take %zu",
			     k->name, r->payload_len, cursor);
		return -1;
	}
	if (kernel_args_finish(ka, err, sizeof(err)) != 0 || k->check(ka, err, sizeof(err)) != 0) {
		request_fail(r, ST_INVALID, "%s", err);
		return -1;
	}
	return 0;
}

/*
 * No output may share bytes with another argument unless the kernel allows
 * it in place (kernels/core/alias.c): refused here, before anything is
 * allocated, uploaded or queued. The outputs gpud allocates afterwards are
 * its own; inline arrays get buffers of their own, so they never overlap.
 * 0, or -1 after replying.
 */
static int alias_or_fail(gpud_request *r)
{
	run_request *q = run_of(r);
	uint64_t handles[KERNEL_MAX_PARAMS] = {0};
	char err[768];

	for (int i = 0; i < q->kernel->nparams; i++)
		if (q->bound[i])
			handles[i] = q->bound[i]->handle;
	if (kernel_alias_check(&q->kargs, handles, err, sizeof(err)) == 0)
		return 0;
	request_fail(r, ST_INVALID, "%s", err);
	return -1;
}

/* Outputs: check the ones given against what check expects, allocate the
 * others; with return_outputs, they must fit one reply. 0, or -1 after replying. */
static int outputs_or_fail(gpud_request *r)
{
	run_request *q = run_of(r);
	const kernel_def *k = q->kernel;
	kernel_args *ka = &q->kargs;
	char err[768], want[128], got[128];
	uint64_t total = 0, room = 0;

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
					"%s: output '%s' must be %s with shape %s, got %s with "
					"shape %s",
					k->name, k->params[i].name,
					gpud_dtype_name(v->expect.dtype), want,
					gpud_dtype_name(v->arr.dtype), got);
				return -1;
			}
		} else {
			gpud_buffer *b;
			/* a kernel may leave part of an output unwritten: cleared whole */
			dstatus rv = buffers_alloc(r->core->buffers, r->session, 0, r->dev, 0, 0,
						   v->expect.dtype, v->expect.ndim, v->expect.shape,
						   &r->spares, &b, err, sizeof(err));
			if (rv == ST_WOULD_BLOCK) { /* made on a worker, then the run again */
				request_alloc_off_loop(r, verb_run);
				return -1;
			}
			if (rv != ST_OK) {
				request_fail(r, rv, "%s: output '%s': %s", k->name,
					     k->params[i].name, err);
				return -1;
			}
			request_created(r, b);
			if (r->req->run->return_outputs) /* goes with the reply: no affinity */
				buffers_temp(b);
			to_kernel_array(b, &v->arr);
			v->present = 1;
			q->bound[i] = b;
		}
		total += q->bound[i]->nbytes;
		room += out_aligned(q->bound[i]->nbytes);
	}
	const Gpud__RunRequest *rq = r->req->run;
	q->out_host = NULL;
	if (rq->return_outputs && rq->outputs_to && room <= rq->outputs_room) {
		/* They fit where the client offered: into its region, not the reply. */
		unsigned flags;
		uint8_t *host = request_host_or_fail(r, "run: outputs_to", rq->outputs_to, room,
						     &flags);
		if (host == NULL)
			return -1; /* replied: r is gone */
		q->out_host = host;
		q->out_flags = flags;
		return 0;
	}
	uint64_t max_message = r->core->cfg->max_message_size;
	if (r->req->run->return_outputs && total > max_message) {
		request_fail(r, ST_TOO_LARGE,
			     "%s: the outputs have %" PRIu64 " bytes, more than one reply may "
			     "carry (max_message_size %" PRIu64
			     "); run without return_outputs and download them",
			     k->name, total, max_message);
		return -1;
	}
	return 0;
}

/* --- devices ------------------------------------------------------------------------------ */

/*
 * The run's device (r->dev), before anything is allocated: the one it
 * names, else where its buffer arguments are, else where fresh work goes
 * (placement.h). Unknown handles are left to binding. 0, or -1 after
 * replying.
 */
static int place_or_fail(gpud_request *r)
{
	run_request *q = run_of(r);
	Gpud__RunRequest *rq = r->req->run;
	const kernel_def *k = q->kernel;
	place_arg pa[KERNEL_MAX_PARAMS];
	int n = 0, pinned;
	char why[768];
	gpud_device *want = NULL;

	if (rq->pin_device &&
	    (want = request_device_or_fail(r, k->name, 1, rq->device, &pinned)) == NULL)
		return -1;
	for (size_t i = 0; i < rq->n_args && n < KERNEL_MAX_PARAMS; i++) {
		Gpud__Argument *arg = rq->args[i];
		int idx = kernel_param_index(k, arg->name);
		gpud_buffer *b;
		if (idx < 0 || arg->value_case != GPUD__ARGUMENT__VALUE_BUFFER ||
		    (b = buffers_get(r->core->buffers, r->session->tenant, arg->buffer)) == NULL)
			continue;
		pa[n++] = (place_arg){.name = k->params[idx].name,
				      .buf = b,
				      .output = k->params[idx].role == KPARAM_OUT};
	}
	if (n == 0 && want == NULL) /* fresh work (kept across an allocation's redo) */
		return (r->dev = request_device_or_fail(r, k->name, 0, 0, &pinned)) ? 0 : -1;
	dstatus st = ST_OK;
	gpud_device *d = place_run(r->core->devices, r->tenant, want, pa, n, &st, why, sizeof(why));
	if (d == NULL) {
		request_fail(r, st, "%s: %s", k->name, why);
		return -1;
	}
	r->dev = d;
	return 0;
}

/*
 * Inputs on another device than the run's: each copied peer to peer into a
 * block of the run's device that goes with the request (placement said
 * none of them is pinned). 0, or -1 after replying.
 */
static int peer_inputs_or_fail(gpud_request *r, inline_upload *up, int *nup)
{
	run_request *q = run_of(r);
	const kernel_def *k = q->kernel;
	char err[512];
	for (int i = 0; i < k->nparams; i++) {
		gpud_buffer *b = q->bound[i], *t;
		if (b == NULL || b->dev == r->dev || k->params[i].role != KPARAM_IN)
			continue;
		dstatus rv = buffers_alloc(r->core->buffers, r->session, 0, r->dev, 0, 1, b->dtype,
					   b->ndim, b->shape, &r->spares, &t, err, sizeof(err));
		if (rv == ST_WOULD_BLOCK) {
			request_alloc_off_loop(r, verb_run);
			return -1;
		}
		if (rv != ST_OK) {
			request_fail(r, rv, "%s: argument '%s': its copy on device %d: %s", k->name,
				     k->params[i].name, r->dev->id, err);
			return -1;
		}
		request_temp(r, t);
		q->kargs.v[i].arr.data = t->mem;
		if (b->nbytes > 0)
			up[(*nup)++] = (inline_upload){.dst = t->mem,
						       .src = b->mem,
						       .len = b->nbytes,
						       .from = b->dev};
		log_debug("run %s: argument '%s' (%zu bytes) copied from device %d to %d", k->name,
			  k->params[i].name, b->nbytes, b->dev->id, r->dev->id);
	}
	return 0;
}

/* The reply's clean-up: a slot still held (the run failed before it
 * ended) is others' now. */
static void run_release(gpud_request *r)
{
	run_request *q = run_of(r);
	if (q->slot.has_slot)
		sched_release(&r->dev->sched, &q->slot);
	free(q->fetch.dst); /* the backend is done with it: the run has ended */
	q->fetch.dst = NULL;
}

/* The one reset of a run's own state: at its start, and again when it is
 * tried anew after an allocation made off the loop. */
static void run_begin(run_request *q)
{
	q->kernel = NULL;
	memset(&q->kargs, 0, sizeof(q->kargs));
	memset(q->bound, 0, sizeof(q->bound));
	q->kernel_us = 0;
	q->slot = (sched_item){0};
	q->queued_ns = 0;
	q->out_host = NULL;
	q->out_flags = 0;
	q->early.on = q->early.final = 0;
	q->early.status = ST_OK;
	q->batch = (batch_item){0};
	q->fetch.n = 0;
	q->fetch.dst = NULL; /* made in run_start, after any redo of this */
	q->fetch.fetched = 0;
	q->r.on_release = run_release;
}

void verb_run(gpud_request *r)
{
	run_request *q = run_of(r);
	inline_upload up[2 * KERNEL_MAX_PARAMS];
	int nup = 0;

	run_begin(q);
	const kernel_def *k = find_kernel_or_fail(r);
	if (k == NULL)
		return; /* replied: r is not ours any more */
	q->kernel = k;
	q->kargs.kernel = k;
	if (place_or_fail(r) != 0 || bind_args_or_fail(r, up, &nup) != 0 || alias_or_fail(r) != 0 ||
	    outputs_or_fail(r) != 0 || peer_inputs_or_fail(r, up, &nup) != 0)
		return;
	for (int i = 0; i < k->nparams; i++)
		if (q->bound[i])
			request_hold(r, q->bound[i]);
	r->on_cancel = run_cancel;
	if (nup == 0)
		run_submit(q);
	else
		run_uploads_start(q, up, nup);
}
