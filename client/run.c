/*
 * client/run.c — running kernels: gpud_run on buffers, gpud_call with host
 * arrays in the request and the outputs in the reply (gpud_call_to: written
 * by gpud into the caller's gpud_host_alloc memory; gpud_call_into: copied
 * into the caller's arrays where they are as expected): the request they all
 * build (also for jobs, job.c) and what their replies give.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "client/internal.h"

/* The protobuf arguments of a run (arrays point into args); free with run_args_free. */
typedef struct run_args {
	Gpud__Argument *pa;
	Gpud__Argument **pp;
	Gpud__Scalar *ps;
	Gpud__InlineArray *ia;
	Gpud__HostRef *hr;
	size_t payload; /* bytes of inline arrays that ride in the message */
} run_args;

static void run_args_free(run_args *ra)
{
	free(ra->pa);
	free(ra->pp);
	free(ra->ps);
	free(ra->ia);
	free(ra->hr);
}

static gpud_status run_args_build(gpud_client *c, const char *verb, const gpud_arg *args,
				  size_t nargs, int arrays_ok, run_args *ra)
{
	size_t n = nargs ? nargs : 1;
	memset(ra, 0, sizeof(*ra));
	ra->pa = calloc(n, sizeof(*ra->pa));
	ra->pp = calloc(n, sizeof(*ra->pp));
	ra->ps = calloc(n, sizeof(*ra->ps));
	ra->ia = calloc(n, sizeof(*ra->ia));
	ra->hr = calloc(n, sizeof(*ra->hr));
	if (!ra->pa || !ra->pp || !ra->ps || !ra->ia || !ra->hr)
		return client_seterr(c, GPUD_ENOMEM, "%s: out of memory", verb);
	for (size_t i = 0; i < nargs; i++) {
		Gpud__Argument *a = &ra->pa[i];
		Gpud__Scalar *sc = &ra->ps[i];
		gpud__argument__init(a);
		gpud__scalar__init(sc);
		a->name = (char *)(args[i].name ? args[i].name : "");
		ra->pp[i] = a;
		switch (args[i].kind) {
		case GPUD_ARG_BUFFER:
			a->value_case = GPUD__ARGUMENT__VALUE_BUFFER;
			a->buffer = args[i].v.buffer;
			continue;
		case GPUD_ARG_ARRAY: {
			const gpud_array *arr = args[i].v.array;
			if (!arrays_ok)
				return client_seterr(
					c, GPUD_EARG,
					"%s: argument '%s' is a host array; pass it to gpud_call, "
					"or gpud_alloc it and pass the handle",
					verb, a->name);
			if (arr == NULL || arr->ndim < 0 || arr->ndim > GPUD_MAX_DIMS ||
			    (arr->nbytes > 0 && arr->data == NULL))
				return client_seterr(c, GPUD_EARG,
						     "%s: argument '%s': a malformed gpud_array",
						     verb, a->name);
			size_t want = gpud_shape_bytes(arr->shape, arr->ndim,
						       gpud_dtype_size(arr->dtype));
			if (gpud_dtype_size(arr->dtype) == 0 || want != arr->nbytes)
				return client_seterr(
					c, GPUD_EARG,
					"%s: argument '%s': nbytes %zu does not match its dtype "
					"and shape (%zu bytes)",
					verb, a->name, arr->nbytes, want);
			Gpud__InlineArray *ia = &ra->ia[i];
			gpud__inline_array__init(ia);
			ia->dtype = (Gpud__DType)arr->dtype;
			ia->n_shape = (size_t)arr->ndim;
			ia->shape = (uint64_t *)arr->shape;
			uint64_t roff;
			uint64_t rg = arr->nbytes
					      ? client_region_of(c, arr->data, arr->nbytes, &roff)
					      : 0;
			if (rg) {
				gpud__host_ref__init(&ra->hr[i]);
				ra->hr[i].region = rg;
				ra->hr[i].offset = roff;
				ia->from = &ra->hr[i];
			} else {
				ra->payload += arr->nbytes;
			}
			a->value_case = GPUD__ARGUMENT__VALUE_ARRAY;
			a->array = ia;
			continue;
		}
		case GPUD_ARG_F64:
			sc->value_case = GPUD__SCALAR__VALUE_F64;
			sc->f64 = args[i].v.f64;
			break;
		case GPUD_ARG_I64:
			sc->value_case = GPUD__SCALAR__VALUE_I64;
			sc->i64 = args[i].v.i64;
			break;
		case GPUD_ARG_BOOL:
			sc->value_case = GPUD__SCALAR__VALUE_B;
			sc->b = args[i].v.b;
			break;
		case GPUD_ARG_TEXT:
			if (args[i].v.text == NULL)
				return client_seterr(c, GPUD_EARG,
						     "%s: argument '%s' has a NULL text", verb,
						     a->name);
			sc->value_case = GPUD__SCALAR__VALUE_TEXT;
			sc->text = (char *)args[i].v.text;
			break;
		default:
			return client_seterr(c, GPUD_EARG, "%s: argument '%s' has kind %d", verb,
					     a->name, (int)args[i].kind);
		}
		a->value_case = GPUD__ARGUMENT__VALUE_SCALAR;
		a->scalar = sc;
	}
	return GPUD_OK;
}

gpud_status client_run_msg(gpud_client *c, const char *verb, const char *kernel,
			   const gpud_arg *args, size_t nargs, int return_outputs, int limit,
			   uint32_t max_outputs, call_dst *dst, nng_msg **m, uint64_t *id,
			   char **names, Gpud__HelloRequest *hello)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__HostRef to = GPUD__HOST_REF__INIT;
	uint8_t *payload;
	run_args ra;
	gpud_status st;

	if (names)
		*names = NULL;
	if (kernel == NULL || (nargs > 0 && args == NULL))
		return client_seterr(c, GPUD_EARG, "%s: kernel name or args missing", verb);
	if ((st = run_args_build(c, verb, args, nargs, return_outputs, &ra)) != GPUD_OK)
		goto out;
	if (ra.payload > client_chunk_limit(c)) {
		char what[160];
		st = client_seterr(c, GPUD_E2BIG,
				   "%s: %zu bytes of inline arrays exceed one message (%zu bytes, "
				   "%s); gpud_alloc them and use gpud_run, or put them in "
				   "gpud_host_alloc memory",
				   verb, ra.payload, client_chunk_limit(c),
				   client_limit_name(c, what, sizeof(what)));
		goto out;
	}
	run.kernel = (char *)kernel;
	run.n_args = nargs;
	run.args = ra.pp;
	run.return_outputs = return_outputs;
	run.limit_outputs = limit;
	run.max_outputs = max_outputs;
	client_device_into(c, &run.pin_device, &run.device);
	if (dst) {
		dst->offered =
			return_outputs && dst->room > 0 &&
			(to.region = client_region_of(c, dst->base, dst->room, &to.offset)) != 0;
		if (dst->offered) {
			run.outputs_to = &to;
			run.outputs_room = dst->room;
			dst->offset = to.offset;
		}
	}
	req.body_case = GPUD__REQUEST__BODY_RUN;
	req.run = &run;
	req.carried_hello = hello;
	if ((st = client_pack(c, &req, NULL, ra.payload, m, (void **)&payload)) != GPUD_OK)
		goto out;
	*id = req.id;
	/* The arrays' bytes, in argument order: the one copy on this side. */
	for (size_t i = 0; i < nargs; i++)
		if (ra.pa[i].value_case == GPUD__ARGUMENT__VALUE_ARRAY && !ra.ia[i].from &&
		    args[i].v.array->nbytes) {
			memcpy(payload, args[i].v.array->data, args[i].v.array->nbytes);
			payload += args[i].v.array->nbytes;
		}
	if (names) { /* the buffer arguments' names: outputs passed in are the caller's */
		size_t len = 1;
		for (size_t i = 0; i < nargs; i++)
			if (args[i].kind == GPUD_ARG_BUFFER)
				len += strlen(ra.pa[i].name) + 1;
		if ((*names = malloc(len)) == NULL) {
			nng_msg_free(*m);
			st = client_seterr(c, GPUD_ENOMEM, "%s: out of memory", verb);
			goto out;
		}
		char *w = *names;
		for (size_t i = 0; i < nargs; i++)
			if (args[i].kind == GPUD_ARG_BUFFER)
				w += sprintf(w, "%s\n", ra.pa[i].name);
		*w = '\0';
	}
out:
	run_args_free(&ra);
	return st;
}

void client_run_outputs(const Gpud__Response *r, gpud_output *outs, size_t cap, size_t *nouts,
			gpud_run_info *info)
{
	size_t n = 0;
	for (size_t i = 0; i < r->run->n_outputs && n < cap; i++) {
		Gpud__Output *o = r->run->outputs[i];
		if (o->buffer == NULL || o->buffer->n_shape > GPUD_MAX_DIMS)
			continue;
		gpud_output *g = &outs[n++];
		memset(g, 0, sizeof(*g));
		snprintf(g->name, sizeof(g->name), "%s", o->name);
		g->handle = o->buffer->handle;
		g->dtype = (gpud_dtype)o->buffer->dtype;
		g->ndim = (int)o->buffer->n_shape;
		if (o->buffer->n_shape)
			memcpy(g->shape, o->buffer->shape, o->buffer->n_shape * sizeof(uint64_t));
		g->device = o->buffer->device;
	}
	if (nouts)
		*nouts = n;
	if (info) {
		info->elapsed_us = r->run->elapsed_us;
		info->kernel_us = r->run->kernel_us;
	}
}

static gpud_status run_once(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
			    gpud_output *outs, size_t cap, size_t *nouts, gpud_run_info *info)
{
	Gpud__Response *r;
	nng_msg *m;
	uint64_t gen, id;
	gpud_status st;

	if (nouts)
		*nouts = 0;
	if (cap > 0 && outs == NULL)
		return client_seterr(c, GPUD_EARG, "gpud_run: outs is NULL with cap %zu", cap);
	if ((st = client_session(c, &gen)) != GPUD_OK)
		return st;
	/* Outputs past cap are freed by gpud in this request. */
	uint32_t max = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	if ((st = client_run_msg(c, "gpud_run", kernel, args, nargs, 0, 1, max, NULL, &m, &id, NULL,
				 NULL)) != GPUD_OK)
		return st;
	if ((st = client_exchange(c, gen, m, id, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_RUN, "run")) != GPUD_OK)
		return st;
	client_run_outputs(r, outs, cap, nouts, info);
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

gpud_status gpud_run(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		     gpud_output *outs, size_t cap, size_t *nouts, gpud_run_info *info)
{
	CLIENT_RETRY(c, run_once(c, kernel, args, nargs, outs, cap, nouts, info));
}

/* Output a (as described by the reply) may be copied into the caller's array to:
 * the very dtype and shape, and its memory there. */
static int into_fits(const gpud_array *to, const gpud_array *a)
{
	if (to->dtype != a->dtype || to->ndim != a->ndim || to->nbytes != a->nbytes ||
	    (a->nbytes && to->data == NULL))
		return 0;
	for (int d = 0; d < a->ndim; d++)
		if (to->shape[d] != a->shape[d])
			return 0;
	return 1;
}

gpud_status client_call_results(const Gpud__Response *r, const uint8_t *pl, size_t pll,
				call_dst *dst, gpud_result *outs, size_t cap, size_t *nouts,
				gpud_run_info *info, int *in_dst, char *msg, size_t msglen)
{
	size_t off = 0, n = 0;
	gpud_status st = GPUD_OK;
	int there = r->run->outputs_in_region;
	uint64_t base_off = there && dst ? dst->offset : 0;

	if (in_dst)
		*in_dst = 0;
	if (dst)
		dst->used = 0;
	if (there && (dst == NULL || !dst->offered)) {
		snprintf(msg, msglen,
			 "gpud_call: gpud wrote the outputs into a host region "
			 "this call did not offer");
		st = GPUD_EPROTO;
		goto out;
	}

	for (size_t i = 0; i < r->run->n_outputs; i++) {
		Gpud__Output *o = r->run->outputs[i];
		if (o->buffer == NULL || o->buffer->n_shape > GPUD_MAX_DIMS ||
		    gpud_dtype_size((gpud_dtype)o->buffer->dtype) == 0) {
			snprintf(msg, msglen, "gpud_call: output %zu is not described", i);
			st = GPUD_EPROTO;
			goto out;
		}
		size_t bytes = gpud_shape_bytes(o->buffer->shape, (int)o->buffer->n_shape,
						gpud_dtype_size((gpud_dtype)o->buffer->dtype));
		uint64_t at = o->region_offset - base_off; /* there: from dst->base */
		if (there && (bytes == SIZE_MAX || o->region_offset < base_off || at > dst->room ||
			      bytes > dst->room - at)) {
			snprintf(msg, msglen,
				 "gpud_call: output '%s' (%zu bytes at region offset %" PRIu64
				 ") is outside the %zu bytes offered",
				 o->name, bytes, o->region_offset, dst->room);
			st = GPUD_EPROTO;
			goto out;
		}
		if (!there && (bytes == SIZE_MAX || bytes > pll - off)) {
			snprintf(msg, msglen,
				 "gpud_call: the reply's %zu payload bytes do not hold output '%s'",
				 pll, o->name);
			st = GPUD_EPROTO;
			goto out;
		}
		if (n < cap) {
			gpud_result *g = &outs[n];
			memset(g, 0, sizeof(*g));
			snprintf(g->name, sizeof(g->name), "%s", o->name);
			g->array.dtype = (gpud_dtype)o->buffer->dtype;
			g->array.ndim = (int)o->buffer->n_shape;
			if (o->buffer->n_shape)
				memcpy(g->array.shape, o->buffer->shape,
				       o->buffer->n_shape * sizeof(uint64_t));
			g->array.nbytes = bytes;
			if (there) {
				g->array.data = dst->base + at;
				if (!dst->no_populate)
					client_populate(g->array.data, bytes, 0);
				n++;
				continue;
			}
			if (dst && i < dst->ninto && into_fits(&dst->into[i], &g->array)) {
				g->array.data = dst->into[i].data;
				if (bytes)
					memcpy(g->array.data, pl + off, bytes);
				dst->used++;
				n++;
				off += bytes;
				continue;
			}
			if ((g->array.data = malloc(bytes ? bytes : 1)) == NULL) {
				snprintf(msg, msglen, "gpud_call: cannot allocate %zu bytes",
					 bytes);
				st = GPUD_ENOMEM;
				goto out;
			}
			memcpy(g->array.data, pl + off, bytes);
			n++;
		}
		off += bytes;
	}
	if (there && pll != 0) {
		snprintf(msg, msglen, "gpud_call: %zu payload bytes with the outputs in the region",
			 pll);
		st = GPUD_EPROTO;
		goto out;
	}
	if (!there && off != pll) {
		snprintf(msg, msglen, "gpud_call: %zu payload bytes for %zu bytes of outputs", pll,
			 off);
		st = GPUD_EPROTO;
		goto out;
	}
	if (nouts)
		*nouts = n;
	if (in_dst)
		*in_dst = there;
	if (info) {
		info->elapsed_us = r->run->elapsed_us;
		info->kernel_us = r->run->kernel_us;
	}
out:
	if (st != GPUD_OK)
		for (size_t i = 0; i < n; i++) {
			if (there ||
			    (dst && i < dst->ninto && outs[i].array.data == dst->into[i].data))
				outs[i].array.data = NULL; /* in dst: not ours to free */
			gpud_array_free(&outs[i].array);
		}
	return st;
}

static gpud_status call_once(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
			     call_dst *dst, gpud_result *outs, size_t cap, size_t *nouts,
			     gpud_run_info *info, int *in_dst)
{
	Gpud__Response *r = NULL;
	nng_msg *m = NULL, *rm = NULL;
	uint8_t *pl;
	size_t pll;
	uint64_t gen, id;
	gpud_status st;
	char msg[1024];

	if (nouts)
		*nouts = 0;
	if (cap > 0 && outs == NULL)
		return client_seterr(c, GPUD_EARG, "gpud_call: kernel name, args or outs missing");
	/* A deferred connection's first call carries its hello (and the claim
	 * of memory lent before it): one round trip. */
	Gpud__HelloRequest h = GPUD__HELLO_REQUEST__INIT;
	int carry = client_session_carry(c, &h, &gen, &st);
	if (!carry && st != GPUD_OK)
		return st;
	/* Outputs past cap are not sent back. */
	uint32_t max = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	if ((st = client_run_msg(c, "gpud_call", kernel, args, nargs, 1, 1, max, dst, &m, &id, NULL,
				 carry ? &h : NULL)) != GPUD_OK) {
		if (carry)
			client_session_carried(c, NULL, 0, NULL, 0);
		return st;
	}
	st = client_exchange(c, gen, m, id, &r, &rm, &pl, &pll);
	if (carry) {
		if (st == GPUD_OK && r->carried_hello)
			client_session_carried(c, r->carried_hello,
					       (uint32_t)nng_pipe_id(nng_msg_get_pipe(rm)),
					       r->carried_hello->devices,
					       r->carried_hello->n_devices);
		else /* the hello failed, or an older gpud: the next call says it first */
			client_session_carried(c, NULL, 0, NULL, 0);
	}
	if (st != GPUD_OK)
		return st;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_RUN, "run")) != GPUD_OK) {
		nng_msg_free(rm);
		return st;
	}
	st = client_call_results(r, pl, pll, dst, outs, cap, nouts, info, in_dst, msg, sizeof(msg));
	if (st != GPUD_OK)
		client_seterr(c, st, "%s", msg);
	gpud__response__free_unpacked(r, NULL);
	nng_msg_free(rm);
	return st;
}

gpud_status gpud_call(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		      gpud_result *outs, size_t cap, size_t *nouts, gpud_run_info *info)
{
	CLIENT_RETRY(c, call_once(c, kernel, args, nargs, NULL, outs, cap, nouts, info, NULL));
}

void gpud_set_populate(gpud_client *c, int on)
{
	if (c)
		__atomic_store_n(&c->populate_off, !on, __ATOMIC_RELAXED);
}

gpud_status gpud_call_to(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
			 void *dst, size_t room, gpud_result *outs, size_t cap, size_t *nouts,
			 gpud_run_info *info, int *in_dst)
{
	call_dst d = {.base = dst,
		      .room = room,
		      .no_populate = __atomic_load_n(&c->populate_off, __ATOMIC_RELAXED)};
	if (in_dst)
		*in_dst = 0;
	CLIENT_RETRY(c, call_once(c, kernel, args, nargs, dst ? &d : NULL, outs, cap, nouts, info,
				  in_dst));
}

gpud_status gpud_call_into(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
			   const gpud_array *into, size_t ninto, gpud_result *outs, size_t cap,
			   size_t *nouts, size_t *nused, gpud_run_info *info)
{
	call_dst d = {.into = into, .ninto = into ? ninto : 0};
	gpud_status st;
	int tries = 0;

	if (nused)
		*nused = 0;
	client_clear(c);
	while ((st = call_once(c, kernel, args, nargs, &d, outs, cap, nouts, info, NULL)) ==
		       GPUD_ENOSESSION &&
	       ++tries < SESSION_TRIES)
		client_clear(c);
	if (st == GPUD_OK && nused)
		*nused = d.used;
	return st;
}
