/* kernels/custom/custom.c — signatures, generated elementwise code and the binding
 * of users' kernels (see kernels/custom/custom.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/custom/custom.h"

/*
 * A client's text echoed in a message: itself when it has at most
 * CLIP_BYTES bytes, else its first ones (cut on a UTF-8 boundary) and
 * "...(N bytes)", its whole length, so the reason after it is never cut
 * off by the message's size. CLIP(s, n) gives it a buffer that lives to
 * the end of the enclosing block.
 */
#define CLIP_BYTES 64
#define CLIP_SIZE (CLIP_BYTES + 32)
static const char *clip(char *buf, const char *s, size_t n)
{
	size_t k = CLIP_BYTES;
	if (n <= CLIP_BYTES) {
		snprintf(buf, CLIP_SIZE, "%.*s", (int)n, s);
		return buf;
	}
	while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
		k--;
	snprintf(buf, CLIP_SIZE, "%.*s...(%zu bytes)", (int)k, s, n);
	return buf;
}
#define CLIP(s, n) clip((char[CLIP_SIZE]){0}, (s), (n))

gpud_dtype custom_dtype_parse(const char *s, size_t len)
{
	static const struct {
		const char *name;
		gpud_dtype dt;
	} names[] = {{"f32", GPUD_F32},     {"float32", GPUD_F32}, {"f64", GPUD_F64},
		     {"float64", GPUD_F64}, {"i32", GPUD_I32},     {"int32", GPUD_I32},
		     {"i64", GPUD_I64},     {"int64", GPUD_I64}};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == len && strncmp(names[i].name, s, len) == 0)
			return names[i].dt;
	return GPUD_DTYPE_INVALID;
}

const char *custom_ctype(gpud_dtype dt)
{
	switch (dt) {
	case GPUD_F32:
		return "float";
	case GPUD_F64:
		return "double";
	case GPUD_I32:
		return "int";
	case GPUD_I64:
		return "long long";
	default:
		return "void";
	}
}

/* A C identifier of at most CUSTOM_NAME_MAX - 1 characters, not starting
 * with '_' (gpud's own run arguments and generated names do). */
static int identifier(const char *s, size_t len)
{
	if (len == 0 || len >= CUSTOM_NAME_MAX || !(isalpha((unsigned char)s[0])))
		return 0;
	for (size_t i = 1; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

static const char *skip_space(const char *p, const char *end)
{
	while (p < end && isspace((unsigned char)*p))
		p++;
	return p;
}

static size_t trimmed_len(const char *p, const char *end)
{
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	return (size_t)(end - p);
}

/* Next token of [A-Za-z0-9_] at p (after spaces): its start and length. */
static const char *word(const char *p, const char *end, size_t *len)
{
	p = skip_space(p, end);
	const char *s = p;
	while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
		p++;
	*len = (size_t)(p - s);
	return s;
}

/* Calls item(ctx, index, start, end) for each comma-separated item. */
static int each_item(const char *text, int (*item)(void *, int, const char *, const char *),
		     void *ctx)
{
	const char *p = text, *end = text + strlen(text);
	int idx = 0;
	if (skip_space(p, end) == end)
		return 0; /* an empty list */
	while (p <= end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		if (item(ctx, idx++, p, stop) != 0)
			return -1;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

typedef struct parse_ctx {
	custom_param *out;
	int max, *n;
	kparam_role role; /* elementwise */
	char *err;
	size_t errlen;
} parse_ctx;

/*
 * An output's " inplace(x|y)" at p (after its type and name): the inputs it
 * may be written in place of, into out as "x|y" (custom_build checks that
 * they are inputs). The end of what it took: p itself where there is none,
 * NULL with err where it is malformed.
 */
static const char *inplace_suffix(parse_ctx *c, int idx, const char *item, size_t itemlen,
				  const char *p, const char *end, kparam_role role, char *out,
				  size_t outlen)
{
	const char *s = skip_space(p, end);
	size_t n = 0, wlen;

	out[0] = '\0';
	if ((size_t)(end - s) < 7 || strncmp(s, "inplace", 7) != 0 ||
	    (s + 7 < end && (isalnum((unsigned char)s[7]) || s[7] == '_')))
		return p;
	if (role != KPARAM_OUT) {
		snprintf(c->err, c->errlen,
			 "item %d '%s': inplace(...) is for outputs: the inputs an output may "
			 "be written in place of",
			 idx + 1, CLIP(item, itemlen));
		return NULL;
	}
	s = skip_space(s + 7, end);
	if (s >= end || *s != '(')
		goto bad;
	for (s++;;) {
		const char *w = word(s, end, &wlen);
		if (!identifier(w, wlen) || n + wlen + 2 > outlen)
			goto bad;
		n += (size_t)snprintf(out + n, outlen - n, "%s%.*s", n ? "|" : "", (int)wlen, w);
		s = skip_space(w + wlen, end);
		if (s < end && *s == '|') {
			s++;
			continue;
		}
		if (s < end && *s == ')')
			return skip_space(s + 1, end);
		goto bad;
	}
bad:
	snprintf(c->err, c->errlen,
		 "item %d '%s': expected inplace(INPUT) or inplace(INPUT|INPUT...) after the "
		 "output, naming inputs",
		 idx + 1, CLIP(item, itemlen));
	return NULL;
}

static int add_param(parse_ctx *c, int idx, const char *item, size_t itemlen, const char *name,
		     size_t nlen, kparam_role role, gpud_dtype dt)
{
	if (!identifier(name, nlen)) {
		snprintf(c->err, c->errlen,
			 "item %d '%s': '%s' is not a parameter name (a letter, then letters, "
			 "digits or _, at most %d)",
			 idx + 1, CLIP(item, itemlen), CLIP(name, nlen), CUSTOM_NAME_MAX - 1);
		return -1;
	}
	for (int i = 0; i < *c->n; i++) {
		if (strlen(c->out[i].name) == nlen && strncmp(c->out[i].name, name, nlen) == 0) {
			snprintf(c->err, c->errlen, "item %d: parameter '%.*s' is declared twice",
				 idx + 1, (int)nlen, name);
			return -1;
		}
	}
	if (*c->n >= c->max) {
		snprintf(c->err, c->errlen, "more than %d parameters", c->max);
		return -1;
	}
	custom_param *p = &c->out[(*c->n)++];
	snprintf(p->name, sizeof(p->name), "%.*s", (int)nlen, name);
	p->role = role;
	p->dtype = dt;
	return 0;
}

/* "name:in f32[]", "name:out f64[]", "name:i64" */
static int raw_item(void *ctx, int idx, const char *s, const char *end)
{
	parse_ctx *c = ctx;
	s = skip_space(s, end);
	size_t itemlen = trimmed_len(s, end), nlen, tlen;
	const char *name = word(s, end, &nlen), *p = skip_space(name + nlen, end);
	kparam_role role = KPARAM_SCALAR;

	if (itemlen == 0) {
		snprintf(c->err, c->errlen, "item %d is empty", idx + 1);
		return -1;
	}
	if (p >= end || *p != ':') {
		snprintf(c->err, c->errlen,
			 "item %d '%s': expected NAME:in TYPE[], NAME:out TYPE[] or NAME:TYPE",
			 idx + 1, CLIP(s, itemlen));
		return -1;
	}
	const char *t = word(p + 1, end, &tlen);
	if ((tlen == 2 && !strncmp(t, "in", 2)) || (tlen == 3 && !strncmp(t, "out", 3))) {
		role = tlen == 2 ? KPARAM_IN : KPARAM_OUT;
		t = word(t + tlen, end, &tlen);
	}
	gpud_dtype dt = custom_dtype_parse(t, tlen);
	if (dt == GPUD_DTYPE_INVALID) {
		snprintf(c->err, c->errlen,
			 "item %d '%s': unknown type '%s' (f32, f64, i32, i64 or float32, float64, "
			 "int32, int64)",
			 idx + 1, CLIP(s, itemlen), CLIP(t, tlen));
		return -1;
	}
	p = skip_space(t + tlen, end);
	int array = end - p >= 2 && p[0] == '[' && p[1] == ']';
	char inplace[sizeof(c->out->inplace)];
	if (array)
		p = skip_space(p + 2, end);
	if ((p = inplace_suffix(c, idx, s, itemlen, p, end, role, inplace, sizeof(inplace))) ==
	    NULL)
		return -1;
	if (p != end && trimmed_len(p, end) != 0) {
		snprintf(c->err, c->errlen, "item %d '%s': unexpected '%s'", idx + 1,
			 CLIP(s, itemlen), CLIP(p, trimmed_len(p, end)));
		return -1;
	}
	if (array && role == KPARAM_SCALAR) {
		snprintf(c->err, c->errlen,
			 "item %d '%s': an array is 'in' or 'out' (NAME:in %s[])", idx + 1,
			 CLIP(s, itemlen), CLIP(t, tlen));
		return -1;
	}
	if (!array && role != KPARAM_SCALAR) {
		snprintf(c->err, c->errlen,
			 "item %d '%s': in and out are for arrays (add []); scalars are NAME:TYPE",
			 idx + 1, CLIP(s, itemlen));
		return -1;
	}
	if (add_param(c, idx, s, itemlen, name, nlen, role, dt) != 0)
		return -1;
	snprintf(c->out[*c->n - 1].inplace, sizeof(c->out->inplace), "%s", inplace);
	return 0;
}

/* "float32 x" */
static int ew_item(void *ctx, int idx, const char *s, const char *end)
{
	parse_ctx *c = ctx;
	s = skip_space(s, end);
	size_t itemlen = trimmed_len(s, end), tlen, nlen;
	const char *t = word(s, end, &tlen), *name = word(t + tlen, end, &nlen);
	gpud_dtype dt = custom_dtype_parse(t, tlen);

	if (itemlen == 0) {
		snprintf(c->err, c->errlen, "item %d is empty", idx + 1);
		return -1;
	}
	if (dt == GPUD_DTYPE_INVALID) {
		snprintf(c->err, c->errlen,
			 "item %d '%s': expected TYPE NAME with TYPE one of float32, float64, "
			 "int32, int64",
			 idx + 1, CLIP(s, itemlen));
		return -1;
	}
	char inplace[sizeof(c->out->inplace)];
	const char *rest = inplace_suffix(c, idx, s, itemlen, name + nlen, end, c->role, inplace,
					  sizeof(inplace));
	if (rest == NULL)
		return -1;
	if (trimmed_len(rest, end) != 0) {
		snprintf(c->err, c->errlen, "item %d '%s': expected TYPE NAME%s", idx + 1,
			 CLIP(s, itemlen), c->role == KPARAM_OUT ? " [inplace(INPUT)]" : "");
		return -1;
	}
	if (add_param(c, idx, s, itemlen, name, nlen, c->role, dt) != 0)
		return -1;
	snprintf(c->out[*c->n - 1].inplace, sizeof(c->out->inplace), "%s", inplace);
	return 0;
}

int custom_parse_signature(const char *sig, custom_param *out, int max, int *n, char *err,
			   size_t errlen)
{
	parse_ctx c = {.out = out, .max = max, .n = n, .err = err, .errlen = errlen};
	*n = 0;
	return each_item(sig, raw_item, &c);
}

int custom_parse_ew_params(const char *text, kparam_role role, custom_param *out, int max, int *n,
			   char *err, size_t errlen)
{
	parse_ctx c = {.out = out, .max = max, .n = n, .role = role, .err = err, .errlen = errlen};
	return each_item(text, ew_item, &c);
}

/* --- the generated elementwise kernel --------------------------------------------- */

static int appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return 0;
		}
		char *nb = realloc(*buf, *cap * 2 + (size_t)n);
		if (nb == NULL)
			return -1;
		*buf = nb;
		*cap = *cap * 2 + (size_t)n;
	}
}

char *custom_ew_source(const custom_kernel *k, const char *body)
{
	size_t len = 0, cap = 1024;
	char *s = malloc(cap);
	int rv = 0;
	if (s == NULL)
		return NULL;
	s[0] = '\0';
	rv |= appendf(&s, &len, &cap,
		      "// generated by gpud for elementwise kernel %s\n"
		      "extern \"C\" __global__ void __launch_bounds__(%u) %s(long long _n",
		      k->name, k->block, k->entry);
	unsigned aliased = 0; /* inputs an output may be written in place of */
	for (int i = 0; i < k->nparams; i++)
		aliased |= k->params[i].inplace_of;
	for (int i = 0; i < k->nparams; i++) {
		const custom_param *p = &k->params[i];
		const char *ct = custom_ctype(p->dtype);
		/* arrays that may be one another's (in place) are not __restrict__ */
		const char *rs = (p->role == KPARAM_IN ? aliased & KPARAM_BIT(i) : p->inplace_of)
					 ? ""
					 : "__restrict__ ";
		if (p->role == KPARAM_IN)
			rv |= appendf(&s, &len, &cap, ",\n\tconst %s *%s_%s_p, %s _%s_v, int _%s_a",
				      ct, rs, p->name, ct, p->name, p->name);
		else
			rv |= appendf(&s, &len, &cap, ",\n\t%s *%s_%s_p", ct, rs, p->name);
	}
	rv |= appendf(
		&s, &len, &cap,
		")\n{\n"
		"\tfor (long long _i = (long long)blockIdx.x * blockDim.x + threadIdx.x; _i < _n;\n"
		"\t     _i += (long long)gridDim.x * blockDim.x) {\n");
	for (int i = 0; i < k->nparams; i++) {
		const custom_param *p = &k->params[i];
		const char *ct = custom_ctype(p->dtype);
		if (p->role == KPARAM_IN) /* an array, or a scalar broadcast */
			rv |= appendf(&s, &len, &cap,
				      "\t\tconst %s %s = _%s_a ? _%s_p[_i] : _%s_v;\n", ct, p->name,
				      p->name, p->name, p->name);
		else
			rv |= appendf(&s, &len, &cap, "\t\t%s %s;\n", ct, p->name);
	}
	rv |= appendf(&s, &len, &cap, "\t\t{\n#line 1 \"%s\"\n%s;\n\t\t}\n", k->name, body);
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].role == KPARAM_OUT)
			rv |= appendf(&s, &len, &cap, "\t\t_%s_p[_i] = %s;\n", k->params[i].name,
				      k->params[i].name);
	rv |= appendf(&s, &len, &cap, "\t}\n}\n");
	if (rv != 0) {
		free(s);
		return NULL;
	}
	return s;
}

char *custom_red_source(const custom_kernel *k, const custom_reduction *r, const char *rt)
{
	size_t len = 0, cap = 2048;
	char *s = malloc(cap);
	int rv = 0, out = -1;
	if (s == NULL)
		return NULL;
	s[0] = '\0';
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].role == KPARAM_OUT)
			out = i;
	const custom_param *o = &k->params[out];
	rv |= appendf(&s, &len, &cap,
		      "// generated by gpud for reduction kernel %s\n"
		      "typedef %s _gpud_rt;\n"
		      "extern \"C\" __global__ void __launch_bounds__(%u) %s(long long _n",
		      k->name, rt, k->block, k->entry);
	for (int i = 0; i < k->nparams; i++) {
		const custom_param *p = &k->params[i];
		const char *ct = custom_ctype(p->dtype);
		if (p->role == KPARAM_IN)
			rv |= appendf(&s, &len, &cap,
				      ",\n\tconst %s *__restrict__ _%s_p, %s _%s_v, int _%s_a", ct,
				      p->name, ct, p->name, p->name);
		else
			rv |= appendf(&s, &len, &cap, ",\n\t%s *__restrict__ _%s_p", ct, p->name);
	}
	/* one block per output value (a row of _n elements); blockDim.x is a power of two */
	rv |= appendf(&s, &len, &cap,
		      ")\n{\n"
		      "\t__shared__ _gpud_rt _s[%u];\n"
		      "\tconst long long _base = (long long)blockIdx.x * _n;\n"
		      "\t_gpud_rt _acc = (_gpud_rt)(\n#line 1 \"%s identity\"\n%s\n);\n"
		      "\tfor (long long _j = threadIdx.x; _j < _n; _j += blockDim.x) {\n"
		      "\t\tconst long long _i = _base + _j;\n",
		      k->block, k->name, r->identity);
	for (int i = 0; i < k->nparams; i++) {
		const custom_param *p = &k->params[i];
		if (p->role == KPARAM_IN)
			rv |= appendf(&s, &len, &cap,
				      "\t\tconst %s %s = _%s_a ? _%s_p[_i] : _%s_v;\n",
				      custom_ctype(p->dtype), p->name, p->name, p->name, p->name);
	}
	rv |= appendf(&s, &len, &cap,
		      "\t\tconst _gpud_rt _m = (_gpud_rt)(\n#line 1 \"%s map_expr\"\n%s\n);\n"
		      "\t\t{\n\t\t\tconst _gpud_rt a = _acc, b = _m;\n"
		      "\t\t\t_acc = (_gpud_rt)(\n#line 1 \"%s reduce_expr\"\n%s\n);\n\t\t}\n"
		      "\t}\n"
		      "\t_s[threadIdx.x] = _acc;\n"
		      "\t__syncthreads();\n"
		      "\tfor (unsigned _k = blockDim.x / 2; _k > 0; _k >>= 1) {\n"
		      "\t\tif (threadIdx.x < _k) {\n"
		      "\t\t\tconst _gpud_rt a = _s[threadIdx.x], b = _s[threadIdx.x + _k];\n"
		      "\t\t\t_s[threadIdx.x] = (_gpud_rt)(\n#line 1 \"%s reduce_expr\"\n%s\n);\n"
		      "\t\t}\n"
		      "\t\t__syncthreads();\n"
		      "\t}\n"
		      "\tif (threadIdx.x == 0) {\n"
		      "\t\tconst _gpud_rt a = _s[0];\n"
		      "\t\t%s %s;\n"
		      "\t\t{\n#line 1 \"%s post_map_expr\"\n%s;\n\t\t}\n"
		      "\t\t_%s_p[blockIdx.x] = %s;\n"
		      "\t}\n}\n",
		      k->name, r->map_expr, k->name, r->reduce_expr, k->name, r->reduce_expr,
		      custom_ctype(o->dtype), o->name, k->name, r->post_map_expr, o->name, o->name);
	if (rv != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* --- binding a run ------------------------------------------------------------------ */

static const custom_kernel *of(const kernel_args *a)
{
	return (const custom_kernel *)((const char *)a->kernel - offsetof(custom_kernel, def));
}

/* int32 scalars must fit. */
static int check_scalars(const custom_kernel *k, kernel_args *a, char *err, size_t errlen)
{
	for (int i = 0; i < k->nparams; i++) {
		const kernel_value *v = &a->v[i];
		int is_scalar = k->params[i].role == KPARAM_SCALAR || v->scalar;
		if (v->present && is_scalar && k->params[i].dtype == GPUD_I32 &&
		    (v->s.i64 < INT32_MIN || v->s.i64 > INT32_MAX)) {
			snprintf(err, errlen, "%s: argument '%s' is int32; %lld does not fit",
				 k->name, k->params[i].name, (long long)v->s.i64);
			return -1;
		}
	}
	return 0;
}

static int check_elementwise(kernel_args *a, char *err, size_t errlen)
{
	const custom_kernel *k = of(a);
	int first = -1;
	if (check_scalars(k, a, err, errlen) != 0)
		return -1;
	for (int i = 0; i < k->nparams; i++) {
		kernel_value *v = &a->v[i];
		if (!v->present || v->scalar)
			continue;
		if (first < 0) {
			if (k->params[i].role != KPARAM_IN)
				continue;
			first = i;
		} else if (v->arr.count != a->v[first].arr.count) {
			snprintf(
				err, errlen,
				"%s: '%s' has %zu elements but '%s' has %zu; elementwise arrays must "
				"match (scalars broadcast)",
				k->name, k->params[i].name, v->arr.count, k->params[first].name,
				a->v[first].arr.count);
			return -1;
		}
	}
	if (first < 0) {
		snprintf(err, errlen, "%s: at least one input must be an array", k->name);
		return -1;
	}
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].role == KPARAM_OUT)
			kernel_set_output(a, i, k->params[i].dtype, a->v[first].arr.ndim,
					  a->v[first].arr.shape);
	return 0;
}

/*
 * A reduction: array inputs of one element count (scalars broadcast); with
 * _axis (-1 or 1), 2-d arrays of one shape, one output value per row;
 * without, a 0-d output.
 */
static int check_reduction(kernel_args *a, char *err, size_t errlen)
{
	const custom_kernel *k = of(a);
	const kernel_value *ax = &a->v[k->nparams];
	int first = -1, out = -1;
	if (check_scalars(k, a, err, errlen) != 0)
		return -1;
	for (int i = 0; i < k->nparams; i++) {
		const kernel_value *v = &a->v[i];
		if (k->params[i].role == KPARAM_OUT) {
			out = i;
			continue;
		}
		if (!v->present || v->scalar)
			continue;
		if (first < 0) {
			first = i;
			continue;
		}
		const kernel_value *f = &a->v[first];
		int same = v->arr.count == f->arr.count;
		if (same && ax->present)
			same = v->arr.ndim == f->arr.ndim && v->arr.ndim == 2 &&
			       v->arr.shape[0] == f->arr.shape[0];
		if (!same) {
			snprintf(err, errlen,
				 "%s: '%s' has %zu elements but '%s' has %zu; a reduction's arrays "
				 "must match%s (scalars broadcast)",
				 k->name, k->params[i].name, v->arr.count, k->params[first].name,
				 f->arr.count, ax->present ? " in shape" : "");
			return -1;
		}
	}
	if (first < 0) {
		snprintf(err, errlen, "%s: at least one input must be an array", k->name);
		return -1;
	}
	const kernel_value *f = &a->v[first];
	if (!ax->present) {
		kernel_set_output(a, out, k->params[out].dtype, 0, NULL);
		return 0;
	}
	if ((ax->s.i64 != -1 && ax->s.i64 != 1) || f->arr.ndim != 2) {
		snprintf(err, errlen,
			 "%s: _axis %lld of a %d-d array: gpud reduces the whole arrays (no _axis) "
			 "or the last axis of 2-d arrays (_axis -1 or 1)",
			 k->name, (long long)ax->s.i64, f->arr.ndim);
		return -1;
	}
	kernel_set_output(a, out, k->params[out].dtype, 1, f->arr.shape);
	return 0;
}

static int check_raw(kernel_args *a, char *err, size_t errlen)
{
	const custom_kernel *k = of(a);
	if (check_scalars(k, a, err, errlen) != 0)
		return -1;
	for (int i = 0; i < k->def.nparams; i++) {
		const kernel_param *p = &k->def.params[i];
		if (p->role != KPARAM_OUT)
			continue;
		if (!a->v[i].present) {
			snprintf(err, errlen,
				 "%s: output '%s' must be passed as a buffer (gpud cannot know the "
				 "shape of a raw kernel's output)",
				 k->name, p->name);
			return -1;
		}
		kernel_set_output(a, i, a->v[i].arr.dtype, a->v[i].arr.ndim, a->v[i].arr.shape);
	}
	return 0;
}

/* entry appears in source as a whole identifier. */
static int has_word(const char *source, const char *entry)
{
	size_t n = strlen(entry);
	for (const char *p = strstr(source, entry); p; p = strstr(p + 1, entry)) {
		int before = p > source && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
		int after = isalnum((unsigned char)p[n]) || p[n] == '_';
		if (!before && !after)
			return 1;
	}
	return 0;
}

/*
 * Each output's declared inplace(...) to inplace_of: every name an input
 * array of the output's dtype (in place means the very same array).
 */
static int resolve_inplace(custom_kernel *k, char *err, size_t errlen)
{
	for (int i = 0; i < k->nparams; i++) {
		custom_param *o = &k->params[i];
		o->inplace_of = 0;
		for (const char *n = o->inplace; *n;) {
			size_t len = strcspn(n, "|");
			int j = 0;
			while (j < k->nparams && (strlen(k->params[j].name) != len ||
						  strncmp(k->params[j].name, n, len) != 0))
				j++;
			if (j == k->nparams || k->params[j].role != KPARAM_IN) {
				snprintf(err, errlen,
					 "%s: output '%s' inplace(%s): '%.*s' is not %s", k->name,
					 o->name, o->inplace, (int)len, n,
					 j == k->nparams
						 ? "a parameter"
						 : "an input array (in place of an input only)");
				return -1;
			}
			if (k->params[j].dtype != o->dtype) {
				snprintf(
					err, errlen,
					"%s: output '%s' inplace(%s): '%s' is %s but '%s' is %s; in "
					"place needs one dtype",
					k->name, o->name, o->inplace, k->params[j].name,
					gpud_dtype_name(k->params[j].dtype), o->name,
					gpud_dtype_name(o->dtype));
				return -1;
			}
			o->inplace_of |= KPARAM_BIT(j);
			n += len + (n[len] == '|');
		}
	}
	return 0;
}

/* A reduction's parts checked: one output, not in place; a block that is a
 * power of two (the tree); every expression given. Its reduce type's C name,
 * or NULL with err. */
static const char *reduction_check(const custom_kernel *k, const char *name, char *err,
				   size_t errlen)
{
	const custom_reduction *r = k->red;
	int nout = 0, out = -1;
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].role == KPARAM_OUT)
			nout++, out = i;
	if (r == NULL) {
		snprintf(err, errlen, "%s: a reduction needs its expressions", name);
		return NULL;
	}
	if (nout != 1) {
		snprintf(err, errlen, "%s: a reduction has exactly one output, got %d", name, nout);
		return NULL;
	}
	if (k->params[out].inplace[0]) {
		snprintf(err, errlen, "%s: a reduction's output '%s' cannot be inplace(%s)", name,
			 k->params[out].name, k->params[out].inplace);
		return NULL;
	}
	if ((k->block & (k->block - 1)) != 0) {
		snprintf(err, errlen,
			 "%s: block %u: a reduction's block is a power of two (32 to 1024)", name,
			 k->block);
		return NULL;
	}
	const struct {
		const char *what, *text;
	} parts[] = {{"reduce_expr", r->reduce_expr},
		     {"post_map_expr", r->post_map_expr},
		     {"identity", r->identity}};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i].text == NULL ||
		    parts[i].text[strspn(parts[i].text, " \t\r\n")] == '\0') {
			snprintf(err, errlen, "%s: the %s is empty", name, parts[i].what);
			return NULL;
		}
	if (r->reduce_type == NULL || r->reduce_type[0] == '\0')
		return custom_ctype(k->params[out].dtype);
	gpud_dtype dt = custom_dtype_parse(r->reduce_type, strlen(r->reduce_type));
	if (dt == GPUD_DTYPE_INVALID) {
		snprintf(err, errlen,
			 "%s: reduce_type '%s': expected float32, float64, int32 or int64 (or f32 "
			 "f64 i32 i64)",
			 name, CLIP(r->reduce_type, strlen(r->reduce_type)));
		return NULL;
	}
	return custom_ctype(dt);
}

int custom_build(custom_kernel *k, const char *name, custom_kind kind, const char *source,
		 const char *entry, char *err, size_t errlen)
{
	int nout = 0;

	if (!identifier(name, strlen(name))) {
		snprintf(
			err, errlen,
			"kernel name '%s': a letter, then letters, digits or _, at most %d characters",
			CLIP(name, strlen(name)), CUSTOM_NAME_MAX - 1);
		return -1;
	}
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->kind = kind;
	if (k->block == 0)
		k->block = 256;
	if (k->block > 1024 || (k->block & 31) != 0) {
		snprintf(err, errlen, "%s: block %u: a multiple of 32 up to 1024", name, k->block);
		return -1;
	}
	if (k->nparams > KERNEL_MAX_PARAMS - 2) {
		snprintf(err, errlen, "%s: at most %d parameters, got %d", name,
			 KERNEL_MAX_PARAMS - 2, k->nparams);
		return -1;
	}
	for (int i = 0; i < k->nparams; i++)
		nout += k->params[i].role == KPARAM_OUT;
	if (nout == 0) {
		snprintf(err, errlen, "%s: declares no output (%s)", name,
			 kind == CUSTOM_RAW ? "NAME:out TYPE[]" : "the second list");
		return -1;
	}
	if (resolve_inplace(k, err, errlen) != 0)
		return -1;
	const char *rt = NULL; /* a reduction's reduce type, in C */
	if (kind == CUSTOM_REDUCTION && (rt = reduction_check(k, name, err, errlen)) == NULL)
		return -1;
	if (kind == CUSTOM_REDUCTION)
		source = k->red->map_expr;
	if (source == NULL || source[strspn(source, " \t\r\n")] == '\0') {
		snprintf(err, errlen, "%s: the %s is empty", name,
			 kind == CUSTOM_RAW         ? "CUDA C source"
			 : kind == CUSTOM_REDUCTION ? "map_expr"
						    : "elementwise body");
		return -1;
	}
	if (kind == CUSTOM_RAW) {
		if (entry == NULL || !identifier(entry, strlen(entry))) {
			snprintf(err, errlen, "%s: entry '%s' is not a function name", name,
				 entry ? CLIP(entry, strlen(entry)) : "");
			return -1;
		}
		if (!has_word(source, entry)) {
			snprintf(
				err, errlen,
				"%s: the source has no '%s' (the extern \"C\" __global__ entry point)",
				name, entry);
			return -1;
		}
		snprintf(k->entry, sizeof(k->entry), "%s", entry);
		k->source = strdup(source);
	} else if (kind == CUSTOM_REDUCTION) {
		snprintf(k->entry, sizeof(k->entry), "gpud_red_%.50s", name);
		k->source = custom_red_source(k, k->red, rt);
	} else {
		snprintf(k->entry, sizeof(k->entry), "gpud_ew_%.50s", name);
		k->source = custom_ew_source(k, source);
	}
	if (k->source == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	/* What runs bind against. */
	for (int i = 0; i < k->nparams; i++) {
		const custom_param *p = &k->params[i];
		kernel_param *q = &k->kparams[i];
		memset(q, 0, sizeof(*q));
		q->name = p->name;
		q->role = p->role;
		q->ndim = -1;
		q->dtypes = KDT(p->dtype);
		q->stype = p->dtype == GPUD_F32 || p->dtype == GPUD_F64 ? KSCALAR_F64 : KSCALAR_I64;
		q->broadcast = kind != CUSTOM_RAW && p->role == KPARAM_IN;
		q->inplace_of = p->inplace_of;
		q->doc = "";
	}
	int np = k->nparams;
	if (kind == CUSTOM_RAW && k->blocks_per_sm == 0) {
		/* The launch is given per run. */
		static const char *const names[2] = {"_grid", "_block"};
		for (int j = 0; j < 2; j++, np++) {
			kernel_param *q = &k->kparams[np];
			memset(q, 0, sizeof(*q));
			q->name = names[j];
			q->role = KPARAM_SCALAR;
			q->stype = KSCALAR_I64;
			q->doc = j ? "threads per block" : "blocks in the grid";
		}
	}
	if (kind == CUSTOM_REDUCTION) {
		kernel_param *q = &k->kparams[np++];
		memset(q, 0, sizeof(*q));
		q->name = "_axis";
		q->role = KPARAM_SCALAR;
		q->stype = KSCALAR_I64;
		q->optional = 1;
		q->doc =
			"-1 (or 1): reduce the last axis of 2-d arrays; left out: the whole arrays";
	}
	if (kind == CUSTOM_RAW)
		snprintf(k->doc, sizeof(k->doc), "custom kernel: %s of the registered CUDA C%s",
			 k->entry,
			 k->blocks_per_sm ? ", grid-stride launch" : ", _grid and _block per run");
	else if (kind == CUSTOM_REDUCTION)
		snprintf(k->doc, sizeof(k->doc), "custom reduction kernel");
	else
		snprintf(k->doc, sizeof(k->doc), "custom elementwise kernel");
	k->def = (kernel_def){.name = k->name,
			      .id = KERNEL_ID_CUSTOM,
			      .doc = k->doc,
			      .params = k->kparams,
			      .nparams = np,
			      .check = kind == CUSTOM_RAW         ? check_raw
				       : kind == CUSTOM_REDUCTION ? check_reduction
								  : check_elementwise,
			      .custom = k};
	return 0;
}

void custom_free(custom_kernel *k)
{
	free(k->source);
	k->source = NULL;
}
