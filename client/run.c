/*
 * client/run.c — running kernels: gpud_run on buffers, gpud_call with host
 * arrays in the request and the outputs in the reply, and the protobuf
 * arguments both build.
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
			const region *rg = arr->nbytes ? client_region_of(c, arr->data, arr->nbytes,
									  &roff)
						       : NULL;
			if (rg) {
				gpud__host_ref__init(&ra->hr[i]);
				ra->hr[i].region = rg->id;
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

gpud_status gpud_run(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		     gpud_output *outs, size_t cap, size_t *nouts, gpud_run_info *info)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__Response *r;
	run_args ra;
	gpud_status st;

	if (kernel == NULL || (nargs > 0 && args == NULL))
		return client_seterr(c, GPUD_EARG, "gpud_run: kernel name or args missing");
	if ((st = run_args_build(c, "gpud_run", args, nargs, 0, &ra)) != GPUD_OK)
		goto out;
	run.kernel = (char *)kernel;
	run.n_args = nargs;
	run.args = ra.pp;
	req.body_case = GPUD__REQUEST__BODY_RUN;
	req.run = &run;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		goto out;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_RUN, "run")) != GPUD_OK)
		goto out;
	size_t n = 0;
	for (size_t i = 0; i < r->run->n_outputs && n < cap; i++) {
		Gpud__Output *o = r->run->outputs[i];
		if (o->buffer == NULL || o->buffer->n_shape > GPUD_MAX_DIMS)
			continue;
		gpud_output *g = &outs[n++];
		snprintf(g->name, sizeof(g->name), "%s", o->name);
		g->handle = o->buffer->handle;
		g->dtype = (gpud_dtype)o->buffer->dtype;
		g->ndim = (int)o->buffer->n_shape;
		if (o->buffer->n_shape)
			memcpy(g->shape, o->buffer->shape, o->buffer->n_shape * sizeof(uint64_t));
	}
	if (nouts)
		*nouts = n;
	if (info) {
		info->elapsed_us = r->run->elapsed_us;
		info->kernel_us = r->run->kernel_us;
	}
	gpud__response__free_unpacked(r, NULL);
out:
	run_args_free(&ra);
	return st;
}

gpud_status gpud_call(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		      gpud_result *outs, size_t cap, size_t *nouts, gpud_run_info *info)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__Response *r = NULL;
	nng_msg *m = NULL, *rm = NULL;
	uint8_t *payload, *pl;
	size_t pll, got = 0;
	run_args ra;
	gpud_status st;
	int rv;

	if (nouts)
		*nouts = 0;
	c->msg[0] = '\0';
	if (kernel == NULL || (nargs > 0 && args == NULL) || (cap > 0 && outs == NULL))
		return client_seterr(c, GPUD_EARG, "gpud_call: kernel name, args or outs missing");
	if ((st = run_args_build(c, "gpud_call", args, nargs, 1, &ra)) != GPUD_OK)
		goto out;
	if (ra.payload > client_chunk_limit(c)) {
		st = client_seterr(
			c, GPUD_E2BIG,
			"gpud_call: %zu bytes of inline arrays exceed one message (%" PRIu64
			" bytes); gpud_alloc them and use gpud_run, or put them in "
			"gpud_host_alloc memory",
			ra.payload, c->info.max_message_size);
		goto out;
	}
	run.kernel = (char *)kernel;
	run.n_args = nargs;
	run.args = ra.pp;
	run.return_outputs = 1;
	req.body_case = GPUD__REQUEST__BODY_RUN;
	req.run = &run;
	req.version = GPUD_PROTOCOL_VERSION;
	req.id = ++c->next_id;
	if ((rv = wire_pack(&m, &req.base, NULL, ra.payload, (void **)&payload)) != 0) {
		st = client_seterr(c, GPUD_ENOMEM, "gpud_call: cannot build a %zu-byte request: %s",
				   ra.payload, nng_strerror(rv));
		goto out;
	}
	/* The arrays' bytes, in argument order: the one copy on this side. */
	for (size_t i = 0; i < nargs; i++)
		if (ra.pa[i].value_case == GPUD__ARGUMENT__VALUE_ARRAY && !ra.ia[i].from &&
		    args[i].v.array->nbytes) {
			memcpy(payload, args[i].v.array->data, args[i].v.array->nbytes);
			payload += args[i].v.array->nbytes;
		}
	if ((st = client_exchange(c, m, req.id, &r, &rm, &pl, &pll)) != GPUD_OK)
		goto out;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_RUN, "run")) != GPUD_OK) {
		r = NULL;
		goto out;
	}
	size_t off = 0, n = 0;
	for (size_t i = 0; i < r->run->n_outputs; i++) {
		Gpud__Output *o = r->run->outputs[i];
		if (o->buffer == NULL || o->buffer->n_shape > GPUD_MAX_DIMS ||
		    gpud_dtype_size((gpud_dtype)o->buffer->dtype) == 0) {
			st = client_seterr(c, GPUD_EPROTO, "gpud_call: output %zu is not described",
					   i);
			goto out;
		}
		size_t bytes = gpud_shape_bytes(o->buffer->shape, (int)o->buffer->n_shape,
						gpud_dtype_size((gpud_dtype)o->buffer->dtype));
		if (bytes == SIZE_MAX || bytes > pll - off) {
			st = client_seterr(
				c, GPUD_EPROTO,
				"gpud_call: the reply's %zu payload bytes do not hold output '%s'",
				pll, o->name);
			goto out;
		}
		if (n < cap) {
			gpud_result *g = &outs[n++];
			memset(g, 0, sizeof(*g));
			snprintf(g->name, sizeof(g->name), "%s", o->name);
			g->array.dtype = (gpud_dtype)o->buffer->dtype;
			g->array.ndim = (int)o->buffer->n_shape;
			if (o->buffer->n_shape)
				memcpy(g->array.shape, o->buffer->shape,
				       o->buffer->n_shape * sizeof(uint64_t));
			g->array.nbytes = bytes;
			if ((g->array.data = malloc(bytes ? bytes : 1)) == NULL) {
				n--;
				st = client_seterr(c, GPUD_ENOMEM,
						   "gpud_call: cannot allocate %zu bytes", bytes);
				goto out;
			}
			memcpy(g->array.data, pl + off, bytes);
			got = n;
		}
		off += bytes;
	}
	if (off != pll) {
		st = client_seterr(c, GPUD_EPROTO,
				   "gpud_call: %zu payload bytes for %zu bytes of outputs", pll,
				   off);
		goto out;
	}
	if (nouts)
		*nouts = n;
	if (info) {
		info->elapsed_us = r->run->elapsed_us;
		info->kernel_us = r->run->kernel_us;
	}
out:
	if (st != GPUD_OK)
		for (size_t i = 0; i < got; i++)
			gpud_array_free(&outs[i].array);
	if (r)
		gpud__response__free_unpacked(r, NULL);
	if (rm)
		nng_msg_free(rm);
	run_args_free(&ra);
	return st;
}
