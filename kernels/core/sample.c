/*
 * kernels/core/sample.c — building a kernel's samples into bound arguments
 * on the host, and comparing outputs against the CPU reference
 * (kernels/core/sample.h).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels/core/sample.h"

#define POISON32 0x7fa0deadu           /* a float32 NaN with a payload */
#define POISON64 0x7ff4dead0badf00dull /* a float64 NaN with a payload */

/* The parameter whose dtype the samples loop over, or -1. */
static int loop_param(const kernel_def *k)
{
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].role == KPARAM_IN)
			return i;
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].role == KPARAM_SCALAR && k->params[i].stype == KSCALAR_DTYPE)
			return i;
	return -1;
}

int kernel_sample_dtypes(const kernel_def *k, gpud_dtype out[4])
{
	int p = loop_param(k), n = 0;

	for (int t = GPUD_F32; p >= 0 && t <= GPUD_I64; t++)
		if (k->params[p].dtypes & KDT(t))
			out[n++] = (gpud_dtype)t;
	if (n == 0)
		out[n++] = GPUD_DTYPE_INVALID;
	return n;
}

static gpud_dtype first_dtype(unsigned mask)
{
	for (int t = GPUD_F32; t <= GPUD_I64; t++)
		if (mask & KDT(t))
			return (gpud_dtype)t;
	return GPUD_DTYPE_INVALID;
}

/* A complex dtype's component (float32, float64); others themselves. */
static gpud_dtype component(gpud_dtype dt)
{
	return dt == GPUD_C64 ? GPUD_F32 : dt == GPUD_C128 ? GPUD_F64 : dt;
}

static int is_int(gpud_dtype dt)
{
	return dt == GPUD_I32 || dt == GPUD_I64;
}

static void put_f(gpud_dtype dt, void *p, size_t i, double v)
{
	if (dt == GPUD_F32)
		((float *)p)[i] = (float)v;
	else
		((double *)p)[i] = v;
}

static void put_i(gpud_dtype dt, void *p, size_t i, int64_t v)
{
	if (dt == GPUD_I32)
		((int32_t *)p)[i] = (int32_t)v;
	else
		((int64_t *)p)[i] = v;
}

static double get_f(gpud_dtype dt, const void *p, size_t i)
{
	return dt == GPUD_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static int64_t get_i(gpud_dtype dt, const void *p, size_t i)
{
	return dt == GPUD_I32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* The whole numbers dt holds that rand may give (int64: a margin for the span). */
static int int_fits(gpud_dtype dt, double v)
{
	return dt == GPUD_I32 ? v >= INT32_MIN && v <= INT32_MAX : fabs(v) <= 0x1p62;
}

/* DIMS ("1000", "64x48") into arr's shape and count; the text after it, or NULL. */
static const char *parse_dims(const char *c, kernel_array *arr)
{
	arr->ndim = 0;
	arr->count = 1;
	for (;;) {
		char *end;
		if (!isdigit((unsigned char)*c) || arr->ndim == GPUD_MAX_DIMS)
			return NULL;
		errno = 0;
		unsigned long long d = strtoull(c, &end, 10);
		if (errno != 0 || d > SAMPLE_MAX_ELEMENTS)
			return NULL;
		arr->shape[arr->ndim++] = d;
		arr->count *= (size_t)d;
		if (arr->count > SAMPLE_MAX_ELEMENTS)
			return NULL;
		c = end;
		if (*c != 'x')
			return c;
		c++;
	}
}

/* A comma list of arr->count numbers into arr->data, as arr->dtype. 0 or -1. */
static int parse_list(const char *c, kernel_array *arr, const char **bad)
{
	for (size_t i = 0; i < arr->count; i++) {
		char *end;
		*bad = c;
		errno = 0;
		if (is_int(arr->dtype)) {
			long long v = strtoll(c, &end, 10);
			if (end == c || errno != 0 ||
			    (arr->dtype == GPUD_I32 && (v < INT32_MIN || v > INT32_MAX)))
				return -1;
			put_i(arr->dtype, arr->data, i, v);
		} else {
			double v = strtod(c, &end);
			if (end == c || isspace((unsigned char)*c))
				return -1;
			put_f(arr->dtype, arr->data, i, v);
		}
		if (*end != (i + 1 < arr->count ? ',' : '\0'))
			return -1;
		c = end + 1;
	}
	return 0;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* rand's values after DIMS: "" or ":LO:HI". 0 or -1 with err. */
static int fill_rand(const char *word, const char *c, kernel_array *arr, char *err, size_t errlen)
{
	double lo = -1, hi = 1;
	uint64_t state = fnv1a(word);

	if (*c == ':') {
		char *end;
		lo = strtod(c + 1, &end);
		if (end == c + 1 || *end != ':')
			goto syntax;
		c = end;
		hi = strtod(c + 1, &end);
		if (end == c + 1 || *end != '\0')
			goto syntax;
	} else if (*c != '\0') {
		goto syntax;
	}
	if (!isfinite(lo) || !isfinite(hi) || lo > hi) {
		snprintf(err, errlen, "'%s': rand needs finite LO <= HI", word);
		return -1;
	}
	if (is_int(arr->dtype)) {
		double ilo = ceil(lo), ihi = floor(hi);
		if (ilo > ihi || !int_fits(arr->dtype, ilo) || !int_fits(arr->dtype, ihi)) {
			snprintf(err, errlen, "'%s': no %s whole numbers in [%g, %g]", word,
				 gpud_dtype_name(arr->dtype), lo, hi);
			return -1;
		}
		uint64_t span = (uint64_t)((int64_t)ihi - (int64_t)ilo) + 1;
		for (size_t i = 0; i < arr->count; i++)
			put_i(arr->dtype, arr->data, i,
			      (int64_t)ilo + (int64_t)(splitmix(&state) % span));
		return 0;
	}
	for (size_t i = 0; i < arr->count; i++)
		put_f(arr->dtype, arr->data, i,
		      lo + (hi - lo) * ((double)(splitmix(&state) >> 11) * 0x1p-53));
	return 0;
syntax:
	snprintf(err, errlen, "'%s': expected rand:DIMS or rand:DIMS:LO:HI", word);
	return -1;
}

/*
 * The array of `word` (name=value, value at val) in dtype dt into arr, its
 * memory malloc'ed. 0 or -1 with err.
 */
static int make_array(const char *word, const char *val, gpud_dtype dt, kernel_array *arr,
		      char *err, size_t errlen)
{
	int is_rand = strncmp(val, "rand:", 5) == 0;
	const char *c = is_rand ? val + 5 : val, *bad = c;

	memset(arr, 0, sizeof(*arr));
	arr->dtype = dt;
	if (is_rand || strchr(c, ':')) {
		c = parse_dims(c, arr);
		if (c == NULL || (!is_rand && *c++ != ':')) {
			snprintf(err, errlen,
				 "'%s': expected DIMS (e.g. 64x48, at most %u elements) before "
				 "the values",
				 word, SAMPLE_MAX_ELEMENTS);
			return -1;
		}
	} else {
		arr->ndim = 1;
		arr->count = 1;
		for (const char *q = c; *q; q++)
			arr->count += *q == ',';
		arr->shape[0] = arr->count;
	}
	arr->data = malloc(arr->count ? arr->count * gpud_dtype_size(dt) : 1);
	if (arr->data == NULL) {
		snprintf(err, errlen, "'%s': out of memory", word);
		return -1;
	}
	if (is_rand)
		return fill_rand(word, c, arr, err, errlen);
	if (arr->count == 0 ? *c != '\0' : parse_list(c, arr, &bad) != 0) {
		if (arr->count == 0)
			bad = c;
		snprintf(err, errlen, "'%s': expected %zu %s separated by commas at '%.24s'", word,
			 arr->count, is_int(dt) ? "whole numbers" : "numbers", bad);
		return -1;
	}
	return 0;
}

/* A scalar's text, read as gpuctl reads one, bound as a request's. */
static int bind_scalar_text(const kernel_def *k, const kernel_param *p, const char *v,
			    kernel_value *out, char *err, size_t errlen)
{
	char *end;

	if (!strcasecmp(v, "true") || !strcasecmp(v, "false"))
		return kernel_bind_scalar(k, p, KGIVEN_BOOL, !strcasecmp(v, "true"), 0, 0, out, err,
					  errlen);
	errno = 0;
	long long i = strtoll(v, &end, 0);
	if (end != v && *end == '\0' && errno == 0)
		return kernel_bind_scalar(k, p, KGIVEN_I64, 0, i, 0, out, err, errlen);
	errno = 0;
	double d = strtod(v, &end);
	if (end != v && *end == '\0' && errno == 0)
		return kernel_bind_scalar(k, p, KGIVEN_F64, 0, 0, d, out, err, errlen);
	return kernel_bind_text(k, p, v, out, err, errlen);
}

/* One name=value word of a sample, bound into s. 0 or -1 with err. */
static int bind_word(const kernel_def *k, const char *word, gpud_dtype dt, kernel_sample *s,
		     char *err, size_t errlen)
{
	const char *eq = strchr(word, '=');
	char name[GPUD_NAME_MAX], names[256], msg[512];

	if (eq == NULL || eq == word || eq[1] == '\0' || (size_t)(eq - word) >= sizeof(name)) {
		snprintf(msg, sizeof(msg), "'%s' is not name=value", word);
		goto bad;
	}
	memcpy(name, word, (size_t)(eq - word));
	name[eq - word] = '\0';
	const char *val = eq + 1;
	int idx = kernel_param_index(k, name);
	if (idx < 0) {
		kernel_param_names(k, names, sizeof(names));
		snprintf(msg, sizeof(msg), "'%s': no parameter '%s' (parameters: %s)", word, name,
			 names);
		goto bad;
	}
	const kernel_param *p = &k->params[idx];
	kernel_value *v = &s->a.v[idx];
	if (v->present) {
		snprintf(msg, sizeof(msg), "'%s': '%s' is given twice", word, name);
		goto bad;
	}
	if (p->role == KPARAM_OUT) {
		snprintf(msg, sizeof(msg), "'%s': '%s' is an output, which the check makes", word,
			 name);
		goto bad;
	}
	if (idx == loop_param(k) && p->role == KPARAM_SCALAR) {
		snprintf(msg, sizeof(msg), "'%s': '%s' is set to each dtype the samples run for",
			 word, name);
		goto bad;
	}
	/* the binding's messages name the kernel and the argument themselves */
	if (p->role == KPARAM_SCALAR || (p->broadcast && strpbrk(val, ",:") == NULL))
		return bind_scalar_text(k, p, val, v, err, errlen);
	kernel_array arr;
	gpud_dtype adt = (p->dtypes & KDT(dt)) ? dt : first_dtype(p->dtypes);
	int rv = make_array(word, val, adt, &arr, msg, sizeof(msg));
	s->host[idx] = arr.data;
	if (rv != 0)
		goto bad;
	return kernel_bind_array(k, p, &arr, v, err, errlen);
bad:
	snprintf(err, errlen, "%s: sample argument %s", k->name, msg);
	return -1;
}

int kernel_sample_build(const kernel_def *k, const char *text, gpud_dtype dt, kernel_sample *s,
			char *err, size_t errlen)
{
	int lp = loop_param(k);

	memset(s, 0, sizeof(*s));
	s->a.kernel = k;
	for (const char *c = text;;) {
		c += strspn(c, " \t\n");
		if (*c == '\0')
			break;
		size_t len = strcspn(c, " \t\n");
		char *word = strndup(c, len);
		c += len;
		if (word == NULL) {
			snprintf(err, errlen, "%s: sample: out of memory", k->name);
			return -1;
		}
		int rv = bind_word(k, word, dt, s, err, errlen);
		free(word);
		if (rv != 0)
			return -1;
	}
	if (lp >= 0 && k->params[lp].role == KPARAM_SCALAR &&
	    kernel_bind_text(k, &k->params[lp], gpud_dtype_name(dt), &s->a.v[lp], err, errlen) != 0)
		return -1;
	if (kernel_args_finish(&s->a, err, errlen) != 0)
		return -1;
	if (k->check(&s->a, err, errlen) != 0)
		return 1;
	for (int i = 0; i < k->nparams; i++) {
		kernel_value *v = &s->a.v[i];
		if (k->params[i].role != KPARAM_OUT)
			continue;
		if (v->expect.count > SAMPLE_MAX_ELEMENTS) {
			snprintf(err, errlen, "%s: sample output '%s' would have %zu elements",
				 k->name, k->params[i].name, v->expect.count);
			return -1;
		}
		v->arr = v->expect;
		v->arr.data = s->host[i] = calloc(v->arr.count ? v->arr.count : 1,
						  gpud_dtype_size(v->arr.dtype));
		v->present = 1;
		if (v->arr.data == NULL) {
			snprintf(err, errlen, "%s: sample: out of memory", k->name);
			return -1;
		}
	}
	return 0;
}

void kernel_sample_free(kernel_sample *s)
{
	for (int i = 0; i < KERNEL_MAX_PARAMS; i++) {
		free(s->host[i]);
		s->host[i] = NULL;
	}
}

size_t kernel_sample_bytes(const kernel_sample *s, int i)
{
	const kernel_value *v = &s->a.v[i];
	if (s->host[i] == NULL || v->scalar)
		return 0;
	return v->arr.count * gpud_dtype_size(v->arr.dtype);
}

void kernel_sample_poison(gpud_dtype dt, void *p, size_t n)
{
	if (component(dt) != dt) { /* complex: each component */
		kernel_sample_poison(component(dt), p, 2 * n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (gpud_dtype_size(dt) == 4) {
			uint32_t u = POISON32;
			memcpy((char *)p + 4 * i, &u, 4);
		} else {
			uint64_t u = POISON64;
			memcpy((char *)p + 8 * i, &u, 8);
		}
	}
}

int kernel_sample_is_poison(gpud_dtype dt, const void *p, size_t i)
{
	if (component(dt) != dt)
		return kernel_sample_is_poison(component(dt), p, 2 * i) ||
		       kernel_sample_is_poison(component(dt), p, 2 * i + 1);
	if (gpud_dtype_size(dt) == 4) {
		uint32_t u;
		memcpy(&u, (const char *)p + 4 * i, 4);
		return u == POISON32;
	}
	uint64_t u;
	memcpy(&u, (const char *)p + 8 * i, 8);
	return u == POISON64;
}

int kernel_sample_compare(const kernel_sample *s, int i, const void *got, int have_ref, char *err,
			  size_t errlen)
{
	const kernel_array *r = &s->a.v[i].arr;
	const char *name = s->a.kernel->params[i].name;
	/* complex arrays: their components, real and imaginary in turn */
	gpud_dtype dt = component(r->dtype);
	size_t count = r->count * (dt != r->dtype ? 2 : 1);
	double scale = 1;

	for (size_t j = 0; have_ref && !is_int(dt) && j < count; j++) {
		double v = get_f(dt, r->data, j);
		if (isfinite(v) && fabs(v) > scale)
			scale = fabs(v);
	}
	double tol = (dt == GPUD_F32 ? 1e-2 : 1e-8) * scale;
	for (size_t j = 0; j < count; j++) {
		if (kernel_sample_is_poison(dt, got, j) &&
		    !(have_ref && kernel_sample_is_poison(dt, r->data, j))) {
			snprintf(err, errlen, "output '%s'[%zu] was never written", name, j);
			return -1;
		}
		if (is_int(dt)) {
			if (have_ref && get_i(dt, got, j) != get_i(dt, r->data, j)) {
				snprintf(err, errlen, "output '%s'[%zu] = %lld, expected %lld",
					 name, j, (long long)get_i(dt, got, j),
					 (long long)get_i(dt, r->data, j));
				return -1;
			}
			continue;
		}
		double g = get_f(dt, got, j);
		if (!have_ref) {
			if (!isfinite(g)) {
				snprintf(
					err, errlen,
					"output '%s'[%zu] = %g, not finite (no CPU reference here)",
					name, j, g);
				return -1;
			}
			continue;
		}
		double want = get_f(dt, r->data, j);
		if (isfinite(want) && !(isfinite(g) && fabs(g - want) <= tol)) {
			snprintf(err, errlen,
				 "output '%s'[%zu] = %.9g, expected %.9g (tolerance %.3g)", name, j,
				 g, want, tol);
			return -1;
		}
	}
	return 0;
}
