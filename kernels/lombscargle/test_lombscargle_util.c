/*
 * kernels/lombscargle/test_lombscargle_util.c — the harness the lombscargle
 * unit tests share (test_lombscargle.h): the kernel found in the table, a
 * case's arguments bound and checked the way gpud binds them, the output
 * allocated from what check expects and the cpu entry's run over the items (whole and in
 * pieces), check's verdicts, a seeded generator and the sample sets. Every
 * use of the kernel's cpu entry points goes through ls_test_items, ls_test_run
 * and ls_test_verdict at the top. Single-threaded: Check runs each test in
 * its own process; ls_rng_state is that test's.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/test_lombscargle.h"

/* --- the kernel's cpu entry points --------------------------------------------------- */

size_t ls_test_items(const kernel_args *a)
{
	return cpu_kernel_of(a->kernel)->items(a);
}

void ls_test_run(const kernel_args *a, size_t lo, size_t hi)
{
	cpu_kernel_of(a->kernel)->run(a, lo, hi);
}

unsigned ls_test_verdict(const kernel_args *a)
{
	return cpu_kernel_of(a->kernel)->verdict(a);
}

void ls_assert_cpu_verdict(void)
{
	ck_assert_ptr_nonnull(cpu_kernel_of(ls_kernel())->verdict);
}

/* --- calling the kernel --------------------------------------------------------------- */

const kernel_def *ls_kernel(void)
{
	static const char *const names[] = {
		[LS_X] = "x",
		[LS_Y] = "y",
		[LS_FREQS] = "freqs",
		[LS_PGRAM] = "pgram",
		[LS_PRECENTER] = "precenter",
		[LS_NORMALIZE] = "normalize",
		[LS_WEIGHTS] = "weights",
		[LS_FLOATING_MEAN] = "floating_mean",
		[LS_F0] = "f0",
		[LS_DF] = "df",
		[LS_NF] = "nf",
		[LS_LEGACY] = "legacy",
		[LS_METHOD] = "method",
		[LS_EPS] = "eps",
	};
	const kernel_def *k = kernel_find("lombscargle");

	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(k->nparams, 14);
	for (int i = 0; i < 14; i++)
		ck_assert_int_eq(kernel_param_index(k, names[i]), i);
	return k;
}

ls_case ls_lcase(const double *x, const double *y, size_t n)
{
	ls_case c;

	memset(&c, 0, sizeof(c));
	c.x = x;
	c.y = y;
	c.n = c.ny = c.nw = n;
	c.precenter = c.floating_mean = c.legacy = c.normalize = c.method = OMIT;
	return c;
}

void ls_set_grid(ls_case *c, double f0, double df, int64_t nf)
{
	c->grid = GRID;
	c->f0 = f0;
	c->df = df;
	c->ngrid = nf;
}

/* The number of frequencies c asks for. */
size_t ls_case_nf(const ls_case *c)
{
	return c->f ? c->nf : (size_t)c->ngrid;
}

/* A 1-d array of n elements over data. */
kernel_array ls_array1(gpud_dtype dt, void *data, size_t n)
{
	kernel_array a;

	memset(&a, 0, sizeof(a));
	a.dtype = dt;
	a.ndim = 1;
	a.shape[0] = n;
	a.count = n;
	a.data = data;
	return a;
}

/* Host storage for one argument in either dtype, converted from doubles. */
void *ls_convert(gpud_dtype dt, const double *v, size_t n)
{
	void *p = malloc((n ? n : 1) * gpud_dtype_size(dt));

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++) {
		if (dt == GPUD_F32)
			((float *)p)[i] = (float)v[i];
		else
			((double *)p)[i] = v[i];
	}
	return p;
}

void ls_bind_array(const kernel_def *k, kernel_args *a, int idx, gpud_dtype dt, void *data,
		   size_t n)
{
	kernel_array arr = ls_array1(dt, data, n);
	char err[512] = "";

	ck_assert_msg(kernel_bind_array(k, &k->params[idx], &arr, &a->v[idx], err, sizeof(err)) ==
			      0,
		      "%s", err);
}

void ls_bind_scalar(const kernel_def *k, kernel_args *a, int idx, kscalar_given kind, int b,
		    int64_t i, double d)
{
	char err[512] = "";

	ck_assert_msg(kernel_bind_scalar(k, &k->params[idx], kind, b, i, d, &a->v[idx], err,
					 sizeof(err)) == 0,
		      "%s", err);
}

void ls_bind_normalize(const kernel_def *k, kernel_args *a, int mode, int as)
{
	char err[512] = "";

	if (mode == OMIT)
		return;
	if (as == NZ_BOOL && mode != LS_AMPLITUDE)
		ls_bind_scalar(k, a, LS_NORMALIZE, KGIVEN_BOOL, mode == LS_NORMALIZED, 0, 0);
	else if (as == NZ_INT && mode != LS_AMPLITUDE)
		ls_bind_scalar(k, a, LS_NORMALIZE, KGIVEN_I64, 0, mode, 0);
	else
		ck_assert_msg(kernel_bind_text(k, &k->params[LS_NORMALIZE],
					       k->params[LS_NORMALIZE].words[mode],
					       &a->v[LS_NORMALIZE], err, sizeof(err)) == 0,
			      "%s", err);
}

/* Binds c in dtype dt and finishes (both must succeed); returns check's result, its message in
 * err. Free b with ls_unbind. */
int ls_bind(gpud_dtype dt, const ls_case *c, ls_bound *b, char *err, size_t errlen)
{
	const kernel_def *k = ls_kernel();
	kernel_args *a = &b->a;

	memset(b, 0, sizeof(*b));
	a->kernel = k;
	b->mem[0] = ls_convert(dt, c->x, c->n);
	ls_bind_array(k, a, LS_X, dt, b->mem[0], c->n);
	b->mem[1] = ls_convert(c->dty ? c->dty : dt, c->y, c->ny);
	ls_bind_array(k, a, LS_Y, c->dty ? c->dty : dt, b->mem[1], c->ny);
	if (c->f) {
		b->mem[2] = ls_convert(c->dtf ? c->dtf : dt, c->f, c->nf);
		ls_bind_array(k, a, LS_FREQS, c->dtf ? c->dtf : dt, b->mem[2], c->nf);
	}
	if (c->w) {
		b->mem[3] = ls_convert(c->dtw ? c->dtw : dt, c->w, c->nw);
		ls_bind_array(k, a, LS_WEIGHTS, c->dtw ? c->dtw : dt, b->mem[3], c->nw);
	}
	if (c->grid & GRID_F0)
		ls_bind_scalar(k, a, LS_F0, KGIVEN_F64, 0, 0, c->f0);
	if (c->grid & GRID_DF)
		ls_bind_scalar(k, a, LS_DF, KGIVEN_F64, 0, 0, c->df);
	if (c->grid & GRID_NF)
		ls_bind_scalar(k, a, LS_NF, KGIVEN_I64, 0, c->ngrid, 0);
	if (c->precenter != OMIT)
		ls_bind_scalar(k, a, LS_PRECENTER, KGIVEN_BOOL, c->precenter, 0, 0);
	if (c->floating_mean != OMIT)
		ls_bind_scalar(k, a, LS_FLOATING_MEAN, KGIVEN_BOOL, c->floating_mean, 0, 0);
	if (c->legacy != OMIT)
		ls_bind_scalar(k, a, LS_LEGACY, KGIVEN_BOOL, c->legacy, 0, 0);
	ls_bind_normalize(k, a, c->normalize, c->normalize_as);
	if (c->method != OMIT)
		ck_assert_msg(kernel_bind_text(k, &k->params[LS_METHOD],
					       k->params[LS_METHOD].words[c->method],
					       &a->v[LS_METHOD], err, errlen) == 0,
			      "%s", err);
	if (c->eps > 0)
		ls_bind_scalar(k, a, LS_EPS, KGIVEN_F64, 0, 0, c->eps);
	ck_assert_msg(kernel_args_finish(a, err, errlen) == 0, "%s", err);
	err[0] = '\0';
	return k->check(a, err, errlen);
}

void ls_unbind(ls_bound *b)
{
	for (int i = 0; i < 4; i++)
		free(b->mem[i]);
}

/* The component dtype of an output: float32 for complex64, float64 for complex128. */
static gpud_dtype component(gpud_dtype dt)
{
	return dt == GPUD_C64 ? GPUD_F32 : dt == GPUD_C128 ? GPUD_F64 : dt;
}

void ls_poison(const kernel_array *o)
{
	size_t n = o->count * (component(o->dtype) != o->dtype ? 2 : 1);

	for (size_t i = 0; i < n; i++) {
		if (component(o->dtype) == GPUD_F32)
			((float *)o->data)[i] = NAN;
		else
			((double *)o->data)[i] = NAN;
	}
}

/* Component j of o's data (element j of a real array; j/2's real or imaginary part). */
double ls_get(const kernel_array *o, size_t j)
{
	return component(o->dtype) == GPUD_F32 ? (double)((const float *)o->data)[j]
					       : ((const double *)o->data)[j];
}

/*
 * Runs c in dtype dt: check passes; the output is what check expects (dt,
 * or for normalize=amplitude its complex dtype, one element per frequency);
 * the weights draw no verdict. The output is poisoned with NaN before every
 * run and must hold no NaN afterwards (unless nan_ok); running the items in
 * pieces must give the same bits as one run over all of them. The result, as
 * doubles, goes to re[nf] and (amplitude only) im[nf].
 */
void run_ls(gpud_dtype dt, const ls_case *c, double *re, double *im, int nan_ok)
{
	ls_bound b;
	char err[512] = "";
	size_t nf = ls_case_nf(c);
	int amp = c->normalize == LS_AMPLITUDE;
	gpud_dtype odt = amp ? (dt == GPUD_F32 ? GPUD_C64 : GPUD_C128) : dt;

	ck_assert_msg(ls_bind(dt, c, &b, err, sizeof(err)) == 0, "%s", err);
	kernel_args *a = &b.a;
	ck_assert_int_eq(a->dtype, dt);
	ck_assert_int_eq(a->v[LS_PRECENTER].s.b, c->precenter == 1);
	ck_assert_int_eq(a->v[LS_FLOATING_MEAN].s.b, c->floating_mean == 1);
	ck_assert_int_eq(a->v[LS_LEGACY].s.b, c->legacy == 1);
	ck_assert_int_eq(a->v[LS_NORMALIZE].s.i64, c->normalize == OMIT ? LS_POWER : c->normalize);
	ck_assert_int_eq(a->v[LS_WEIGHTS].present, c->w != NULL);
	ck_assert_int_eq(a->v[LS_FREQS].present, c->f != NULL);
	for (size_t i = 0; i < nf; i++)
		ck_assert_msg(lombscargle_freq(a, i) ==
				      (c->f ? (dt == GPUD_F32 ? (double)(float)c->f[i] : c->f[i])
					    : c->f0 + c->df * (double)i),
			      "frequency %zu", i);

	/* the output, allocated the way the daemon does */
	kernel_value *pv = &a->v[LS_PGRAM];
	ck_assert_int_eq(pv->present, 0);
	ck_assert_int_eq(pv->expect.dtype, odt);
	ck_assert_int_eq(pv->expect.ndim, 1);
	ck_assert_uint_eq(pv->expect.shape[0], nf);
	ck_assert_uint_eq(pv->expect.count, nf);
	pv->arr = pv->expect;
	size_t bytes = nf * gpud_dtype_size(odt);
	pv->arr.data = malloc(bytes ? bytes : 1);
	ck_assert_ptr_nonnull(pv->arr.data);
	pv->present = 1;
	ck_assert_uint_eq(ls_test_items(a), nf);
	ck_assert_uint_eq(ls_test_verdict(a), 0);

	ls_poison(&pv->arr);
	ls_test_run(a, 0, nf);
	for (size_t i = 0; i < nf; i++) {
		re[i] = ls_get(&pv->arr, amp ? 2 * i : i);
		if (amp)
			im[i] = ls_get(&pv->arr, 2 * i + 1);
		ck_assert_msg(nan_ok || (!isnan(re[i]) && !(amp && isnan(im[i]))),
			      "pgram[%zu] is NaN", i);
	}

	/* the same items in pieces: [0, c) and [c, nf), and one item at a time */
	size_t cuts[] = {0, 1, nf / 3, nf / 2, nf > 0 ? nf - 1 : 0, nf};
	void *whole = malloc(bytes ? bytes : 1);
	ck_assert_ptr_nonnull(whole);
	memcpy(whole, pv->arr.data, bytes);
	for (size_t ci = 0; ci < sizeof(cuts) / sizeof(cuts[0]); ci++) {
		ls_poison(&pv->arr);
		ls_test_run(a, cuts[ci], nf);
		ls_test_run(a, 0, cuts[ci]);
		ck_assert_msg(memcmp(whole, pv->arr.data, bytes) == 0,
			      "[0,%zu) + [%zu,%zu) differs from [0,%zu)", cuts[ci], cuts[ci], nf,
			      nf);
	}
	ls_poison(&pv->arr);
	for (size_t i = nf; i-- > 0;)
		ls_test_run(a, i, i + 1);
	ck_assert_msg(memcmp(whole, pv->arr.data, bytes) == 0, "item-by-item run differs");

	free(whole);
	free(pv->arr.data);
	ls_unbind(&b);
}

const double ls_pool[64] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
			    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
			    33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
			    49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64};

/* A case of n samples (x, y and weights from the ls_pool) with freqs of nf. */
ls_case ls_pcase(size_t n, size_t nf)
{
	ls_case c = ls_lcase(ls_pool, ls_pool, n);

	c.f = ls_pool;
	c.nf = nf;
	return c;
}

/* Runs check on c in dtype dt, expecting it to refuse with exactly `want`. */
void ls_check_refuses(gpud_dtype dt, const ls_case *c, const char *want)
{
	ls_bound b;
	char err[512];

	ck_assert_int_eq(ls_bind(dt, c, &b, err, sizeof(err)), -1);
	ck_assert_str_eq(err, want);
	ls_unbind(&b);
}

/* Runs check on c in dtype dt, expecting it to pass; returns the output it expects. */
kernel_array ls_check_passes(gpud_dtype dt, const ls_case *c)
{
	ls_bound b;
	char err[512];

	ck_assert_msg(ls_bind(dt, c, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(b.a.dtype, dt);
	kernel_array e = b.a.v[LS_PGRAM].expect;
	ls_unbind(&b);
	return e;
}

uint64_t ls_rng_state;

/* Uniform in [lo, hi), never exactly zero (xorshift64*). */
double ls_uniform(double lo, double hi)
{
	double u;

	do {
		ls_rng_state ^= ls_rng_state >> 12;
		ls_rng_state ^= ls_rng_state << 25;
		ls_rng_state ^= ls_rng_state >> 27;
		u = lo +
		    (hi - lo) * (double)((ls_rng_state * 0x2545f4914f6cdd1dull) >> 11) * 0x1p-53;
	} while (u == 0.0);
	return u;
}

/* Runs c (a grid) in dt with cpu_run over [0, nf), the output poisoned first: re and im. */
void ls_run_plain(gpud_dtype dt, const ls_case *c, double *re, double *im)
{
	ls_bound b;
	char err[512] = "";
	size_t nf = ls_case_nf(c);
	int amp = c->normalize == LS_AMPLITUDE;

	ck_assert_msg(ls_bind(dt, c, &b, err, sizeof(err)) == 0, "%s", err);
	kernel_value *pv = &b.a.v[LS_PGRAM];
	pv->arr = pv->expect;
	pv->arr.data = malloc(nf * gpud_dtype_size(pv->expect.dtype));
	ck_assert_ptr_nonnull(pv->arr.data);
	pv->present = 1;
	ls_poison(&pv->arr);
	/* as the cpu backend runs it: in chunks, each its own transform */
	size_t cut = nf / 3;
	ls_test_run(&b.a, cut, nf);
	ls_test_run(&b.a, 0, cut);
	for (size_t i = 0; i < nf; i++) {
		re[i] = ls_get(&pv->arr, amp ? 2 * i : i);
		im[i] = amp ? ls_get(&pv->arr, 2 * i + 1) : 0;
	}
	free(pv->arr.data);
	ls_unbind(&b);
}

/*
 * Fresh random uneven samples with gaps: n times on [0, T] with two gaps
 * (a fifth and a tenth of T) left empty, a sinusoid and noise; the grid
 * from f0 (a few times 2 pi / T) to several times the mean sampling rate
 * (2 pi n / T, angular).
 */
void ls_gapped(size_t n, double *x, double *y, double *w, double T)
{
	for (size_t j = 0; j < n; j++) {
		double t;
		do
			t = ls_uniform(0, T);
		while ((t > 0.3 * T && t < 0.5 * T) || (t > 0.7 * T && t < 0.8 * T));
		x[j] = t;
	}
	double om = ls_uniform(0.5, 3) * 2 * M_PI * (double)n / T, ph = ls_uniform(0, 6.28);
	for (size_t j = 0; j < n; j++) {
		y[j] = 3 + 1.5 * sin(om * x[j] + ph) + ls_uniform(-1, 1);
		w[j] = ls_uniform(0.1, 2);
	}
}

/* The largest |difference| over the largest |value| of the direct results. */
double ls_rel_err(size_t nf, const double *re, const double *im, const double *wre,
		  const double *wim)
{
	double big = 0, err = 0;
	for (size_t i = 0; i < nf; i++) {
		big = fmax(big, fmax(fabs(wre[i]), fabs(wim[i])));
		err = fmax(err, fmax(fabs(re[i] - wre[i]), fabs(im[i] - wim[i])));
	}
	return err / big;
}

void ls_bind_y2(const kernel_def *k, kernel_args *a, gpud_dtype dt, void *data, size_t nb, size_t n)
{
	kernel_array arr = ls_array1(dt, data, nb * n);
	char err[512] = "";
	arr.ndim = 2;
	arr.shape[0] = nb;
	arr.shape[1] = n;
	ck_assert_msg(kernel_bind_array(k, &k->params[LS_Y], &arr, &a->v[LS_Y], err, sizeof(err)) ==
			      0,
		      "%s", err);
}

/* Binds x, y (batch of nb, or 1-d when nb == 0), weights, the grid, amplitude and method. */
int ls_bind_batch(kernel_args *a, gpud_dtype dt, void *x, void *y, void *w, size_t n, size_t nb,
		  int64_t nf, int method, char *err, size_t errlen)
{
	const kernel_def *k = ls_kernel();
	memset(a, 0, sizeof(*a));
	a->kernel = k;
	ls_bind_array(k, a, LS_X, dt, x, n);
	if (nb)
		ls_bind_y2(k, a, dt, y, nb, n);
	else
		ls_bind_array(k, a, LS_Y, dt, y, n);
	ls_bind_array(k, a, LS_WEIGHTS, dt, w, n);
	ls_bind_scalar(k, a, LS_F0, KGIVEN_F64, 0, 0, 0.05);
	ls_bind_scalar(k, a, LS_DF, KGIVEN_F64, 0, 0, 0.011);
	ls_bind_scalar(k, a, LS_NF, KGIVEN_I64, 0, nf, 0);
	ls_bind_scalar(k, a, LS_FLOATING_MEAN, KGIVEN_BOOL, 1, 0, 0);
	ls_bind_normalize(k, a, LS_AMPLITUDE, NZ_WORD);
	ck_assert(kernel_bind_text(k, &k->params[LS_METHOD], method ? "nufft" : "direct",
				   &a->v[LS_METHOD], err, errlen) == 0);
	ck_assert_msg(kernel_args_finish(a, err, errlen) == 0, "%s", err);
	return k->check(a, err, errlen);
}
