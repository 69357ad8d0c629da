/*
 * kernels/core/args.c — binding a request's arguments to a kernel's
 * parameters, with the checks every kernel shares; describing parameters for
 * messages and listings; parsing scalars' text (kernels/core/kernel.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels/core/kernel.h"

int kernel_param_index(const kernel_def *k, const char *name)
{
	for (int i = 0; i < k->nparams; i++)
		if (strcmp(k->params[i].name, name) == 0)
			return i;
	return -1;
}

const char *kernel_scalar_type_name(kscalar_type t)
{
	switch (t) {
	case KSCALAR_BOOL:
		return "bool";
	case KSCALAR_I64:
		return "int64";
	case KSCALAR_F64:
		return "float64";
	case KSCALAR_DTYPE:
		return "dtype";
	case KSCALAR_WORD:
		return "word";
	}
	return "?";
}

gpud_dtype kernel_dtype_parse(const char *name)
{
	for (int t = GPUD_F32; t <= GPUD_C128; t++)
		if (strcmp(name, gpud_dtype_name((gpud_dtype)t)) == 0)
			return (gpud_dtype)t;
	return GPUD_DTYPE_INVALID;
}

static void dtype_mask_describe(unsigned mask, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int t = GPUD_F32; t <= GPUD_C128; t++) {
		if (!(mask & KDT(t)))
			continue;
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "|" : "",
				      gpud_dtype_name((gpud_dtype)t));
	}
}

void kernel_param_describe(const kernel_param *p, char *buf, size_t len)
{
	char types[64];

	if (p->role == KPARAM_SCALAR && p->stype == KSCALAR_DTYPE) {
		dtype_mask_describe(p->dtypes, types, sizeof(types));
		if (p->default_value)
			snprintf(buf, len, "dtype name %s (default %s)", types, p->default_value);
		else
			snprintf(buf, len, "dtype name %s", types);
		return;
	}
	if (p->role == KPARAM_SCALAR && p->stype == KSCALAR_WORD) {
		size_t n = 0;
		types[0] = '\0';
		for (int i = 0; p->words && p->words[i]; i++)
			n += (size_t)snprintf(types + n, n < sizeof(types) ? sizeof(types) - n : 0,
					      "%s%s", i ? "|" : "", p->words[i]);
		snprintf(buf, len, "%s%s%s%s%s", types, p->words_only ? "" : " or bool",
			 p->default_value ? " (default " : "",
			 p->default_value ? p->default_value : "", p->default_value ? ")" : "");
		return;
	}
	if (p->role == KPARAM_SCALAR) {
		if (p->default_value)
			snprintf(buf, len, "%s scalar (default %s)",
				 kernel_scalar_type_name(p->stype), p->default_value);
		else
			snprintf(buf, len, "%s scalar%s", kernel_scalar_type_name(p->stype),
				 p->optional ? " (optional)" : "");
		return;
	}
	dtype_mask_describe(p->dtypes, types, sizeof(types));
	const char *tail = p->role == KPARAM_OUT ? " (output)" : p->optional ? " (optional)" : "";
	if (p->broadcast)
		snprintf(buf, len, "%s array or scalar", types);
	else if (p->ndim >= 0)
		snprintf(buf, len, "%s %d-d array%s", types, p->ndim, tail);
	else
		snprintf(buf, len, "%s array%s", types, tail);
}

/* The index of word `text` among p's words (case as written), or -1. */
static int word_index(const kernel_param *p, const char *text)
{
	for (int i = 0; p->words && p->words[i]; i++)
		if (strcmp(p->words[i], text) == 0)
			return i;
	return -1;
}

void kernel_param_names(const kernel_def *k, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < k->nparams; i++)
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", i ? ", " : "",
				      k->params[i].name);
}

int kernel_scalar_parse(kscalar_type t, const char *text, kernel_value *out)
{
	char *end;

	switch (t) {
	case KSCALAR_BOOL:
		if (!strcasecmp(text, "true") || !strcmp(text, "1"))
			out->s.b = 1;
		else if (!strcasecmp(text, "false") || !strcmp(text, "0"))
			out->s.b = 0;
		else
			return -1;
		return 0;
	case KSCALAR_I64:
		out->s.i64 = strtoll(text, &end, 10);
		return (end == text || *end) ? -1 : 0;
	case KSCALAR_F64:
		out->s.f64 = strtod(text, &end);
		return (end == text || *end) ? -1 : 0;
	case KSCALAR_DTYPE:
		out->s.dtype = kernel_dtype_parse(text);
		return out->s.dtype == GPUD_DTYPE_INVALID ? -1 : 0;
	case KSCALAR_WORD: /* needs the param's words: kernel_bind_text */
		return -1;
	}
	return -1;
}

int kernel_bind_array(const kernel_def *k, const kernel_param *p, const kernel_array *arr,
		      kernel_value *out, char *err, size_t errlen)
{
	char want[96], shape[128];

	if (p->role == KPARAM_SCALAR) {
		snprintf(err, errlen, "%s: argument '%s' must be a %s scalar, got a %s array",
			 k->name, p->name, kernel_scalar_type_name(p->stype),
			 gpud_dtype_name(arr->dtype));
		return -1;
	}
	if (!(p->dtypes & KDT(arr->dtype))) {
		kernel_param_describe(p, want, sizeof(want));
		snprintf(err, errlen, "%s: argument '%s' must be %s, got %s", k->name, p->name,
			 want, gpud_dtype_name(arr->dtype));
		return -1;
	}
	if (p->ndim >= 0 && arr->ndim != p->ndim) {
		gpud_shape_format(shape, sizeof(shape), arr->shape, arr->ndim);
		snprintf(err, errlen, "%s: argument '%s' must be %d-d, got %d-d with shape %s",
			 k->name, p->name, p->ndim, arr->ndim, shape);
		return -1;
	}
	out->present = 1;
	out->arr = *arr;
	return 0;
}

int kernel_bind_scalar(const kernel_def *k, const kernel_param *p, kscalar_given kind, int b,
		       int64_t i, double d, kernel_value *out, char *err, size_t errlen)
{
	static const char *given_names[] = {"bool", "int64", "float64"};
	char want[96];

	if (p->role != KPARAM_SCALAR && !(p->role == KPARAM_IN && p->broadcast)) {
		kernel_param_describe(p, want, sizeof(want));
		snprintf(err, errlen, "%s: argument '%s' must be a buffer (%s), got a %s scalar",
			 k->name, p->name, want, given_names[kind]);
		return -1;
	}
	out->scalar = p->role != KPARAM_SCALAR;
	if (kind == KGIVEN_F64 && !isfinite(d)) {
		snprintf(err, errlen, "%s: argument '%s' must be a finite %s, got %g", k->name,
			 p->name, kernel_scalar_type_name(p->stype), d);
		return -1;
	}
	switch (p->stype) {
	case KSCALAR_BOOL:
		if (kind == KGIVEN_BOOL)
			out->s.b = b;
		else if (kind == KGIVEN_I64 && (i == 0 || i == 1))
			out->s.b = (int)i;
		else
			goto mismatch;
		break;
	case KSCALAR_I64:
		if (kind == KGIVEN_I64)
			out->s.i64 = i;
		else if (kind == KGIVEN_F64 && d == floor(d) && fabs(d) < 9.2e18)
			out->s.i64 = (int64_t)d;
		else
			goto mismatch;
		break;
	case KSCALAR_F64:
		if (kind == KGIVEN_F64)
			out->s.f64 = d;
		else if (kind == KGIVEN_I64)
			out->s.f64 = (double)i;
		else
			goto mismatch;
		break;
	case KSCALAR_WORD:
		/* a bool stands for words[0] (false) or words[1] (true) */
		if (p->words_only)
			goto mismatch;
		if (kind == KGIVEN_BOOL)
			out->s.i64 = b ? 1 : 0;
		else if (kind == KGIVEN_I64 && (i == 0 || i == 1))
			out->s.i64 = i;
		else
			goto mismatch;
		break;
	case KSCALAR_DTYPE:
		goto mismatch;
	}
	out->present = 1;
	return 0;
mismatch:
	if (p->stype == KSCALAR_DTYPE || p->stype == KSCALAR_WORD) {
		kernel_param_describe(p, want, sizeof(want));
		/* "a dtype name float32|float64", "one of power|normalize|amplitude or bool" */
		const char *art = p->stype == KSCALAR_WORD ? "one of" : "a";
		if (kind == KGIVEN_BOOL)
			snprintf(err, errlen, "%s: argument '%s' must be %s %s, got bool %s",
				 k->name, p->name, art, want, b ? "true" : "false");
		else if (kind == KGIVEN_I64)
			snprintf(err, errlen, "%s: argument '%s' must be %s %s, got %lld", k->name,
				 p->name, art, want, (long long)i);
		else
			snprintf(err, errlen, "%s: argument '%s' must be %s %s, got %g", k->name,
				 p->name, art, want, d);
		return -1;
	}
	if (kind == KGIVEN_BOOL)
		snprintf(err, errlen, "%s: argument '%s' must be %s, got bool %s", k->name, p->name,
			 kernel_scalar_type_name(p->stype), b ? "true" : "false");
	else if (kind == KGIVEN_I64)
		snprintf(err, errlen, "%s: argument '%s' must be %s%s, got %lld", k->name, p->name,
			 kernel_scalar_type_name(p->stype),
			 p->stype == KSCALAR_BOOL ? " (true, false, 1 or 0)" : "", (long long)i);
	else
		snprintf(err, errlen, "%s: argument '%s' must be %s%s, got %g", k->name, p->name,
			 kernel_scalar_type_name(p->stype),
			 p->stype == KSCALAR_BOOL ? " (true, false, 1 or 0)" : "", d);
	return -1;
}

int kernel_bind_text(const kernel_def *k, const kernel_param *p, const char *text,
		     kernel_value *out, char *err, size_t errlen)
{
	char want[96];

	kernel_param_describe(p, want, sizeof(want));
	if (p->role != KPARAM_SCALAR) {
		snprintf(err, errlen, "%s: argument '%s' must be %s, got the text '%.64s'", k->name,
			 p->name, want, text);
		return -1;
	}
	if (p->stype == KSCALAR_WORD) {
		int w = word_index(p, text);
		if (w < 0 && (!strcasecmp(text, "true") || !strcasecmp(text, "false")))
			w = strcasecmp(text, "true") == 0;
		if (w < 0) {
			snprintf(err, errlen, "%s: argument '%s' must be one of %s, got '%.64s'",
				 k->name, p->name, want, text);
			return -1;
		}
		out->s.i64 = w;
		out->scalar = 0;
		out->present = 1;
		return 0;
	}
	if (p->stype != KSCALAR_DTYPE) {
		/* Numbers and booleans travel as themselves: text is not parsed. */
		snprintf(err, errlen,
			 "%s: argument '%s' must be %s %s, got the text '%.64s': gpud reads text "
			 "only for dtype and word arguments; send the %s itself",
			 k->name, p->name, p->stype == KSCALAR_I64 ? "an" : "a",
			 kernel_scalar_type_name(p->stype), text,
			 p->stype == KSCALAR_BOOL ? "boolean" : "number");
		return -1;
	}
	gpud_dtype dt = kernel_dtype_parse(text);
	if (dt == GPUD_DTYPE_INVALID || !(p->dtypes & KDT(dt))) {
		snprintf(err, errlen, "%s: argument '%s' must be a %s, got '%.64s'", k->name,
			 p->name, want, text);
		return -1;
	}
	out->s.dtype = dt;
	out->scalar = 0;
	out->present = 1;
	return 0;
}

int kernel_args_finish(kernel_args *a, char *err, size_t errlen)
{
	const kernel_def *k = a->kernel;
	char want[96];

	for (int i = 0; i < k->nparams; i++) {
		const kernel_param *p = &k->params[i];
		if (a->v[i].present || p->role == KPARAM_OUT || p->optional)
			continue;
		if (p->role == KPARAM_SCALAR && p->default_value) {
			int w = p->stype == KSCALAR_WORD ? word_index(p, p->default_value) : 0;
			if (p->stype == KSCALAR_WORD)
				a->v[i].s.i64 = w;
			if (w < 0 ||
			    (p->stype != KSCALAR_WORD &&
			     kernel_scalar_parse(p->stype, p->default_value, &a->v[i]) != 0)) {
				snprintf(err, errlen, "%s: bad default '%s' for '%s'", k->name,
					 p->default_value, p->name);
				return -1;
			}
			a->v[i].present = 1;
			continue;
		}
		kernel_param_describe(p, want, sizeof(want));
		snprintf(err, errlen, "%s: missing argument '%s' (%s)", k->name, p->name, want);
		return -1;
	}
	return 0;
}

int kernel_check_same_dtype(kernel_args *a, char *err, size_t errlen)
{
	const kernel_def *k = a->kernel;
	int first = -1;

	for (int i = 0; i < k->nparams; i++) {
		if (k->params[i].role == KPARAM_SCALAR || !a->v[i].present)
			continue;
		if (first < 0) {
			first = i;
			a->dtype = a->v[i].arr.dtype;
		} else if (a->v[i].arr.dtype != a->dtype) {
			snprintf(err, errlen,
				 "%s: all arrays must have one dtype: '%s' is %s but '%s' is %s",
				 k->name, k->params[i].name, gpud_dtype_name(a->v[i].arr.dtype),
				 k->params[first].name, gpud_dtype_name(a->dtype));
			return -1;
		}
	}
	return 0;
}

void kernel_set_output(kernel_args *a, int idx, gpud_dtype dt, int ndim, const uint64_t *shape)
{
	kernel_array *o = &a->v[idx].expect;
	o->dtype = dt;
	o->ndim = ndim;
	o->count = 1;
	for (int i = 0; i < ndim; i++) {
		o->shape[i] = shape[i];
		o->count *= (size_t)shape[i];
	}
}
