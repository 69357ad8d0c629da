/*
 * kernels/lombscargle/test_lombscargle.c — unit tests of kernels/lombscargle/lombscargle.c, called the
 * way gpud calls it: found in the kernel table, arguments bound and checked,
 * the output allocated from what check expects, then cpu_run over the items
 * (whole, and in pieces). Values are worked by hand below (scipy >= 1.15's
 * modes: weights, floating_mean, normalize=normalize and amplitude, the grid;
 * and legacy=true, scipy <= 1.14), random inputs are compared against an
 * independent float64 implementation in this file (a weighted least-squares
 * fit for today's scipy, Townsend's loop for legacy) in every mode, both
 * dtypes, frequencies as an array and as the grid; then every check with its
 * message, and the verdict on the weights' values.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "tests/unit/suites.h"

#define assert_has(err, want)                                                                      \
	ck_assert_msg(strstr((err), (want)) != NULL, "message '%s' lacks '%s'", (err), (want))

#define OMIT -1 /* leave a scalar to its default */

/* How a test gives normalize: its word as text, a bool, or the integer 0 or 1. */
enum { NZ_WORD, NZ_BOOL, NZ_INT };

/* Which of the grid's scalars a case gives. */
enum { GRID_F0 = 1, GRID_DF = 2, GRID_NF = 4, GRID = 7 };

/* --- calling the kernel --------------------------------------------------------------- */

static const kernel_def *ls_kernel(void)
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

/* One run's arguments; what is NULL, OMIT or not in `grid` is left out. */
typedef struct ls_case {
	const double *x, *y, *w; /* w: the weights, NULL for none */
	size_t n, ny, nw;        /* the lengths of x, y and w */
	const double *f;         /* freqs, NULL for none */
	size_t nf;               /* freqs' length */
	int grid;                /* GRID_F0 | GRID_DF | GRID_NF: the grid scalars given */
	double f0, df;
	int64_t ngrid;
	int precenter, floating_mean, legacy; /* 0, 1 or OMIT */
	int normalize;                        /* LS_POWER, LS_NORMALIZED, LS_AMPLITUDE or OMIT */
	int normalize_as;                     /* NZ_WORD, NZ_BOOL or NZ_INT */
	gpud_dtype dty, dtf, dtw;             /* y's, freqs' and weights' dtypes; 0: x's */
	int method;                           /* LS_AUTO, LS_DIRECT, LS_NUFFT or OMIT */
	double eps;                           /* > 0: given */
} ls_case;

static ls_case lcase(const double *x, const double *y, size_t n)
{
	ls_case c;

	memset(&c, 0, sizeof(c));
	c.x = x;
	c.y = y;
	c.n = c.ny = c.nw = n;
	c.precenter = c.floating_mean = c.legacy = c.normalize = c.method = OMIT;
	return c;
}

static void set_grid(ls_case *c, double f0, double df, int64_t nf)
{
	c->grid = GRID;
	c->f0 = f0;
	c->df = df;
	c->ngrid = nf;
}

/* The number of frequencies c asks for. */
static size_t case_nf(const ls_case *c)
{
	return c->f ? c->nf : (size_t)c->ngrid;
}

/* A 1-d array of n elements over data. */
static kernel_array array1(gpud_dtype dt, void *data, size_t n)
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
static void *convert(gpud_dtype dt, const double *v, size_t n)
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

static void bind(const kernel_def *k, kernel_args *a, int idx, gpud_dtype dt, void *data, size_t n)
{
	kernel_array arr = array1(dt, data, n);
	char err[512] = "";

	ck_assert_msg(kernel_bind_array(k, &k->params[idx], &arr, &a->v[idx], err, sizeof(err)) ==
			      0,
		      "%s", err);
}

static void bind_scalar(const kernel_def *k, kernel_args *a, int idx, kscalar_given kind, int b,
			int64_t i, double d)
{
	char err[512] = "";

	ck_assert_msg(kernel_bind_scalar(k, &k->params[idx], kind, b, i, d, &a->v[idx], err,
					 sizeof(err)) == 0,
		      "%s", err);
}

static void bind_normalize(const kernel_def *k, kernel_args *a, int mode, int as)
{
	char err[512] = "";

	if (mode == OMIT)
		return;
	if (as == NZ_BOOL && mode != LS_AMPLITUDE)
		bind_scalar(k, a, LS_NORMALIZE, KGIVEN_BOOL, mode == LS_NORMALIZED, 0, 0);
	else if (as == NZ_INT && mode != LS_AMPLITUDE)
		bind_scalar(k, a, LS_NORMALIZE, KGIVEN_I64, 0, mode, 0);
	else
		ck_assert_msg(kernel_bind_text(k, &k->params[LS_NORMALIZE],
					       k->params[LS_NORMALIZE].words[mode],
					       &a->v[LS_NORMALIZE], err, sizeof(err)) == 0,
			      "%s", err);
}

/* Case c bound in dtype dt, with the host memory of its arrays. */
typedef struct ls_bound {
	kernel_args a;
	void *mem[4];
} ls_bound;

/* Binds c in dtype dt and finishes (both must succeed); returns check's result, its message in
 * err. Free b with ls_unbind. */
static int ls_bind(gpud_dtype dt, const ls_case *c, ls_bound *b, char *err, size_t errlen)
{
	const kernel_def *k = ls_kernel();
	kernel_args *a = &b->a;

	memset(b, 0, sizeof(*b));
	a->kernel = k;
	b->mem[0] = convert(dt, c->x, c->n);
	bind(k, a, LS_X, dt, b->mem[0], c->n);
	b->mem[1] = convert(c->dty ? c->dty : dt, c->y, c->ny);
	bind(k, a, LS_Y, c->dty ? c->dty : dt, b->mem[1], c->ny);
	if (c->f) {
		b->mem[2] = convert(c->dtf ? c->dtf : dt, c->f, c->nf);
		bind(k, a, LS_FREQS, c->dtf ? c->dtf : dt, b->mem[2], c->nf);
	}
	if (c->w) {
		b->mem[3] = convert(c->dtw ? c->dtw : dt, c->w, c->nw);
		bind(k, a, LS_WEIGHTS, c->dtw ? c->dtw : dt, b->mem[3], c->nw);
	}
	if (c->grid & GRID_F0)
		bind_scalar(k, a, LS_F0, KGIVEN_F64, 0, 0, c->f0);
	if (c->grid & GRID_DF)
		bind_scalar(k, a, LS_DF, KGIVEN_F64, 0, 0, c->df);
	if (c->grid & GRID_NF)
		bind_scalar(k, a, LS_NF, KGIVEN_I64, 0, c->ngrid, 0);
	if (c->precenter != OMIT)
		bind_scalar(k, a, LS_PRECENTER, KGIVEN_BOOL, c->precenter, 0, 0);
	if (c->floating_mean != OMIT)
		bind_scalar(k, a, LS_FLOATING_MEAN, KGIVEN_BOOL, c->floating_mean, 0, 0);
	if (c->legacy != OMIT)
		bind_scalar(k, a, LS_LEGACY, KGIVEN_BOOL, c->legacy, 0, 0);
	bind_normalize(k, a, c->normalize, c->normalize_as);
	if (c->method != OMIT)
		ck_assert_msg(kernel_bind_text(k, &k->params[LS_METHOD],
					       k->params[LS_METHOD].words[c->method],
					       &a->v[LS_METHOD], err, errlen) == 0,
			      "%s", err);
	if (c->eps > 0)
		bind_scalar(k, a, LS_EPS, KGIVEN_F64, 0, 0, c->eps);
	ck_assert_msg(kernel_args_finish(a, err, errlen) == 0, "%s", err);
	err[0] = '\0';
	return k->check(a, err, errlen);
}

static void ls_unbind(ls_bound *b)
{
	for (int i = 0; i < 4; i++)
		free(b->mem[i]);
}

/* The component dtype of an output: float32 for complex64, float64 for complex128. */
static gpud_dtype component(gpud_dtype dt)
{
	return dt == GPUD_C64 ? GPUD_F32 : dt == GPUD_C128 ? GPUD_F64 : dt;
}

static void poison(const kernel_array *o)
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
static double get(const kernel_array *o, size_t j)
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
static void run_ls(gpud_dtype dt, const ls_case *c, double *re, double *im, int nan_ok)
{
	const kernel_def *k = ls_kernel();
	ls_bound b;
	char err[512] = "";
	size_t nf = case_nf(c);
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
	ck_assert_uint_eq(cpu_kernel_of(k)->items(a), nf);
	ck_assert_uint_eq(cpu_kernel_of(k)->verdict(a), 0);

	poison(&pv->arr);
	cpu_kernel_of(k)->run(a, 0, nf);
	for (size_t i = 0; i < nf; i++) {
		re[i] = get(&pv->arr, amp ? 2 * i : i);
		if (amp)
			im[i] = get(&pv->arr, 2 * i + 1);
		ck_assert_msg(nan_ok || (!isnan(re[i]) && !(amp && isnan(im[i]))),
			      "pgram[%zu] is NaN", i);
	}

	/* the same items in pieces: [0, c) and [c, nf), and one item at a time */
	size_t cuts[] = {0, 1, nf / 3, nf / 2, nf > 0 ? nf - 1 : 0, nf};
	void *whole = malloc(bytes ? bytes : 1);
	ck_assert_ptr_nonnull(whole);
	memcpy(whole, pv->arr.data, bytes);
	for (size_t ci = 0; ci < sizeof(cuts) / sizeof(cuts[0]); ci++) {
		poison(&pv->arr);
		cpu_kernel_of(k)->run(a, cuts[ci], nf);
		cpu_kernel_of(k)->run(a, 0, cuts[ci]);
		ck_assert_msg(memcmp(whole, pv->arr.data, bytes) == 0,
			      "[0,%zu) + [%zu,%zu) differs from [0,%zu)", cuts[ci], cuts[ci], nf,
			      nf);
	}
	poison(&pv->arr);
	for (size_t i = nf; i-- > 0;)
		cpu_kernel_of(k)->run(a, i, i + 1);
	ck_assert_msg(memcmp(whole, pv->arr.data, bytes) == 0, "item-by-item run differs");

	free(whole);
	free(pv->arr.data);
	ls_unbind(&b);
}

/* --- hand-worked values ------------------------------------------------------------ */

/*
 * Today's scipy (>= 1.15), with the weights normalised to w_j (sum 1), Y_j =
 * y_j (minus mean(y), unweighted, with precenter), c_j = cos(f x_j - tau),
 * s_j = sin(f x_j - tau):
 *
 *   tau makes sum w c s vanish (with floating_mean, the covariance);
 *   YC = sum w Y c, YS = sum w Y s, CC = sum w c^2, SS = 1 - CC;
 *   floating_mean: YC -= Ybar C, YS -= Ybar S, CC -= C^2, SS -= S^2, with
 *     Ybar = sum w Y, C = sum w c, S = sum w s;
 *   a = YC / CC, b = YS / SS: the weighted least-squares fit
 *     Y ~ a c + b s (+ an offset with floating_mean), p = 2 (a YC + b YS);
 *   power: p N / 4; normalize: p / (2 YY), YY = sum w Y^2 (- Ybar^2 with
 *     floating_mean); amplitude: (a + ib) e^{i tau} = A + iB, where
 *     Y ~ A cos(f x) + B sin(f x) (+ offset) in the unrotated basis.
 *
 * So where the model fits the samples exactly, amplitude is the fit's A + iB,
 * normalize is 1 and p = 2 YY. Every value below was also checked with
 * scipy's algorithm written out in Python.
 *
 * A. x = [0, pi/2], f = 1: c = [1, 0], s = [0, 1], tau = 0, w = 1/2 each.
 *    a = Y_0, b = Y_1, p = 2 (Y_0^2 + Y_1^2) / 2 = Y_0^2 + Y_1^2, power = p / 2.
 *      y = [1, 1]: power 1; normalize: YY = 1, 2 / 2 = 1; precenter: Y = [0, 0],
 *        power 0, and normalize 0 / (2 * 0): NaN, as scipy gives (0 * 0.5 / 0);
 *        legacy=true (scipy <= 1.14) normalizes by 2 / sum y^2 of the uncentred
 *        y: 0 * 2 / 2 = 0.
 *      y = [1, 3]: power 5; normalize: YY = 5, 10 / 10 = 1; amplitude 1 + 3i;
 *        precenter, Y = [-1, 1]: power 1, amplitude -1 + i, normalize over the
 *        centred YY = 1: 2 / 2 = 1 (legacy: 2 / (1 + 9) * 1 = 0.2);
 *        normalize legacy without precenter: 2 / 10 * 5 = 1.
 * B. x = [0, pi/4], y = [1, 0]: at f = 1 (tau = pi/8) the fit A cos x + B sin x
 *    through (0, 1) and (pi/4, 0) is A = 1, B = -1: amplitude 1 - i, p = 2 YY =
 *    1, power 1/2, normalize 1. At f = 2 the phases are [0, pi/2]: A = 1, B = 0,
 *    power 1/2, normalize 1. The grid f0 = 1, df = 1, nf = 2 is the same [1, 2].
 * W. x = [0, pi/2, pi], y = [2, 1, -1], f = 1: c = [1, 0, -1], s = [0, 1, 0].
 *    Unweighted (w = 1/3): CC = 2/3, SS = 1/3, YC = (2 + 1) / 3 = 1, YS = 1/3,
 *      a = 3/2, b = 1, p = 2 (3/2 + 1/3) = 11/3: power 11/3 * 3/4 = 11/4;
 *      YY = (4 + 1 + 1) / 3 = 2, normalize 11/12; amplitude 3/2 + i.
 *    weights [1, 1, 2] (w = [1/4, 1/4, 1/2]; [0.5, 0.5, 1] is the same):
 *      CC = 3/4, SS = 1/4, YC = 2/4 + 1/2 = 1, YS = 1/4, a = 4/3, b = 1,
 *      p = 2 (4/3 + 1/4) = 19/6: power 19/6 * 3/4 = 19/8; YY = 4/4 + 1/4 +
 *      1/2 = 7/4, normalize 19/6 / (7/2) = 19/21; amplitude 4/3 + i.
 *    floating_mean: y = A cos x + B sin x + c fits exactly: A = (y_0 - y_2)/2 =
 *      3/2, c = (y_0 + y_2)/2 = 1/2, B = y_1 - c = 1/2: amplitude 3/2 + i/2 and
 *      normalize 1 whatever the weights. Unweighted, YY = 2 - (2/3)^2 = 14/9,
 *      p = 28/9, power 28/9 * 3/4 = 7/3 (precenter changes nothing: the offset
 *      takes the mean). With weights [1, 1, 2], Ybar = 1/4, YY = 7/4 - 1/16 =
 *      27/16, p = 27/8, power 81/32; there CS = 0 - C S = 1/16 with C = -1/4,
 *      S = 1/4, so tau = atan(1/4) / 2 is not 0 and amplitude checks the
 *      rotation back by e^{i tau}.
 */
#define PI2 (M_PI / 2)
#define PI4 (M_PI / 4)
#define NONE                                                                                       \
	{                                                                                          \
		0                                                                                  \
	}

static const struct hand_case {
	const char *what;
	int n;
	double x[3], y[3], w[3]; /* w[0] == 0: no weights */
	int nf;
	double f[2];
	int grid; /* the frequencies as the grid f0 = f[0], df = f[1] - f[0] */
	int precenter, normalize, floating_mean, legacy;
	double re[2], im[2];
} hand[] = {
	{"A [1,1]", 2, {0, PI2}, {1, 1}, NONE, 1, {1}, 0, OMIT, OMIT, OMIT, OMIT, {1}, NONE},
	{"A [1,1] power", 2, {0, PI2}, {1, 1}, NONE, 1, {1}, 0, 0, LS_POWER, 0, 0, {1}, NONE},
	{"A [1,1] normalize",
	 2,
	 {0, PI2},
	 {1, 1},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_NORMALIZED,
	 OMIT,
	 OMIT,
	 {1},
	 NONE},
	{"A [1,1] precenter", 2, {0, PI2}, {1, 1}, NONE, 1, {1}, 0, 1, OMIT, OMIT, OMIT, {0}, NONE},
	{"A [1,1] precenter normalize: 0/0",
	 2,
	 {0, PI2},
	 {1, 1},
	 NONE,
	 1,
	 {1},
	 0,
	 1,
	 LS_NORMALIZED,
	 OMIT,
	 OMIT,
	 {NAN},
	 NONE},
	{"A [1,1] precenter normalize legacy",
	 2,
	 {0, PI2},
	 {1, 1},
	 NONE,
	 1,
	 {1},
	 0,
	 1,
	 LS_NORMALIZED,
	 OMIT,
	 1,
	 {0},
	 NONE},
	{"A [1,3]", 2, {0, PI2}, {1, 3}, NONE, 1, {1}, 0, OMIT, OMIT, OMIT, OMIT, {5}, NONE},
	{"A [1,3] normalize",
	 2,
	 {0, PI2},
	 {1, 3},
	 NONE,
	 1,
	 {1},
	 0,
	 0,
	 LS_NORMALIZED,
	 OMIT,
	 OMIT,
	 {1},
	 NONE},
	{"A [1,3] precenter",
	 2,
	 {0, PI2},
	 {1, 3},
	 NONE,
	 1,
	 {1},
	 0,
	 1,
	 LS_POWER,
	 OMIT,
	 OMIT,
	 {1},
	 NONE},
	{"A [1,3] precenter normalize",
	 2,
	 {0, PI2},
	 {1, 3},
	 NONE,
	 1,
	 {1},
	 0,
	 1,
	 LS_NORMALIZED,
	 OMIT,
	 0,
	 {1},
	 NONE},
	{"A [1,3] precenter normalize legacy",
	 2,
	 {0, PI2},
	 {1, 3},
	 NONE,
	 1,
	 {1},
	 0,
	 1,
	 LS_NORMALIZED,
	 OMIT,
	 1,
	 {0.2},
	 NONE},
	{"A [1,3] normalize legacy",
	 2,
	 {0, PI2},
	 {1, 3},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_NORMALIZED,
	 0,
	 1,
	 {1},
	 NONE},
	{"A [1,3] power legacy",
	 2,
	 {0, PI2},
	 {1, 3},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 OMIT,
	 OMIT,
	 1,
	 {5},
	 NONE},
	{"A [1,3] amplitude",
	 2,
	 {0, PI2},
	 {1, 3},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_AMPLITUDE,
	 OMIT,
	 OMIT,
	 {1},
	 {3}},
	{"A [1,3] precenter amplitude",
	 2,
	 {0, PI2},
	 {1, 3},
	 NONE,
	 1,
	 {1},
	 0,
	 1,
	 LS_AMPLITUDE,
	 OMIT,
	 0,
	 {-1},
	 {1}},
	{"B", 2, {0, PI4}, {1, 0}, NONE, 2, {1, 2}, 0, OMIT, OMIT, OMIT, OMIT, {0.5, 0.5}, NONE},
	{"B legacy", 2, {0, PI4}, {1, 0}, NONE, 2, {1, 2}, 0, 0, OMIT, OMIT, 1, {0.5, 0.5}, NONE},
	{"B normalize",
	 2,
	 {0, PI4},
	 {1, 0},
	 NONE,
	 2,
	 {1, 2},
	 0,
	 OMIT,
	 LS_NORMALIZED,
	 OMIT,
	 OMIT,
	 {1, 1},
	 NONE},
	{"B amplitude",
	 2,
	 {0, PI4},
	 {1, 0},
	 NONE,
	 2,
	 {1, 2},
	 0,
	 OMIT,
	 LS_AMPLITUDE,
	 OMIT,
	 OMIT,
	 {1, 1},
	 {-1, 0}},
	{"B grid amplitude",
	 2,
	 {0, PI4},
	 {1, 0},
	 NONE,
	 2,
	 {1, 2},
	 1,
	 OMIT,
	 LS_AMPLITUDE,
	 OMIT,
	 OMIT,
	 {1, 1},
	 {-1, 0}},
	{"B grid", 2, {0, PI4}, {1, 0}, NONE, 2, {1, 2}, 1, OMIT, LS_POWER, 0, 0, {0.5, 0.5}, NONE},
	{"W", 3, {0, PI2, M_PI}, {2, 1, -1}, NONE, 1, {1}, 0, OMIT, OMIT, OMIT, OMIT, {2.75}, NONE},
	{"W normalize",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_NORMALIZED,
	 OMIT,
	 OMIT,
	 {11.0 / 12},
	 NONE},
	{"W amplitude",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_AMPLITUDE,
	 OMIT,
	 OMIT,
	 {1.5},
	 {1}},
	{"W weights",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 {1, 1, 2},
	 1,
	 {1},
	 0,
	 OMIT,
	 OMIT,
	 OMIT,
	 OMIT,
	 {19.0 / 8},
	 NONE},
	{"W weights scaled",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 {0.5, 0.5, 1},
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_POWER,
	 OMIT,
	 OMIT,
	 {19.0 / 8},
	 NONE},
	{"W weights normalize",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 {1, 1, 2},
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_NORMALIZED,
	 OMIT,
	 OMIT,
	 {19.0 / 21},
	 NONE},
	{"W weights amplitude",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 {1, 1, 2},
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_AMPLITUDE,
	 OMIT,
	 OMIT,
	 {4.0 / 3},
	 {1}},
	{"W floating_mean",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 OMIT,
	 1,
	 OMIT,
	 {7.0 / 3},
	 NONE},
	{"W floating_mean normalize",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_NORMALIZED,
	 1,
	 OMIT,
	 {1},
	 NONE},
	{"W floating_mean amplitude",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 NONE,
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_AMPLITUDE,
	 1,
	 OMIT,
	 {1.5},
	 {0.5}},
	{"W floating_mean precenter",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 NONE,
	 1,
	 {1},
	 0,
	 1,
	 OMIT,
	 1,
	 OMIT,
	 {7.0 / 3},
	 NONE},
	{"W floating_mean weights",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 {1, 1, 2},
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_POWER,
	 1,
	 0,
	 {81.0 / 32},
	 NONE},
	{"W floating_mean weights normalize",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 {1, 1, 2},
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_NORMALIZED,
	 1,
	 OMIT,
	 {1},
	 NONE},
	{"W floating_mean weights amplitude",
	 3,
	 {0, PI2, M_PI},
	 {2, 1, -1},
	 {1, 1, 2},
	 1,
	 {1},
	 0,
	 OMIT,
	 LS_AMPLITUDE,
	 1,
	 OMIT,
	 {1.5},
	 {0.5}},
};
#define NHAND ((int)(sizeof(hand) / sizeof(hand[0])))

static int close_to(double got, double want, double tol)
{
	if (isnan(want))
		return isnan(got);
	return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* Loop index: case i in float64 for i < NHAND, case i - NHAND in float32 after. */
START_TEST(test_hand_worked)
{
	int i = _i % NHAND;
	const struct hand_case *h = &hand[i];
	gpud_dtype dt = _i < NHAND ? GPUD_F64 : GPUD_F32;
	double tol = dt == GPUD_F64 ? 1e-12 : 1e-6;
	double re[2], im[2];
	ls_case c = lcase(h->x, h->y, (size_t)h->n);

	if (h->grid) {
		set_grid(&c, h->f[0], h->nf > 1 ? h->f[1] - h->f[0] : 0.5, h->nf);
	} else {
		c.f = h->f;
		c.nf = (size_t)h->nf;
	}
	if (h->w[0] != 0)
		c.w = h->w;
	c.precenter = h->precenter;
	c.normalize = h->normalize;
	c.normalize_as = i % 3; /* power and normalize given as words, bools and integers */
	c.floating_mean = h->floating_mean;
	c.legacy = h->legacy;
	run_ls(dt, &c, re, im, isnan(h->re[0]));
	for (int j = 0; j < h->nf; j++) {
		ck_assert_msg(close_to(re[j], h->re[j], tol),
			      "%s, %s, pgram[%d]: got %.17g, want %.17g", h->what,
			      gpud_dtype_name(dt), j, re[j], h->re[j]);
		if (h->normalize == LS_AMPLITUDE)
			ck_assert_msg(close_to(im[j], h->im[j], tol),
				      "%s, %s, pgram[%d].imag: got %.17g, want %.17g", h->what,
				      gpud_dtype_name(dt), j, im[j], h->im[j]);
	}
}
END_TEST

/* Several frequencies at once: case A's y = [1, 3] at f = 1 five times, as an array and as
 * the grid f0 = 1, df = 0; case B with x halved at f = 2 (the same f x). */
START_TEST(test_hand_worked_many_freqs)
{
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	double tol = dt == GPUD_F64 ? 1e-12 : 1e-6;
	double x[2] = {0.0, M_PI / 2}, y[2] = {1, 3}, f[5] = {1, 1, 1, 1, 1}, got[5], im[5];
	ls_case c = lcase(x, y, 2);

	c.f = f;
	c.nf = 5;
	run_ls(dt, &c, got, NULL, 0);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(fabs(got[i] - 5.0) <= tol, "pgram[%d] = %.17g", i, got[i]);
	c.f = NULL;
	set_grid(&c, 1, 0, 5);
	c.normalize = LS_AMPLITUDE;
	run_ls(dt, &c, got, im, 0);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(fabs(got[i] - 1) <= tol && fabs(im[i] - 3) <= tol,
			      "pgram[%d] = %.17g%+.17gi", i, got[i], im[i]);

	double xb[2] = {0.0, M_PI / 8}, yb[2] = {1, 0}, fb[2] = {2, 2};
	c = lcase(xb, yb, 2);
	c.f = fb;
	c.nf = 2;
	c.precenter = 0;
	c.normalize = LS_POWER;
	run_ls(dt, &c, got, NULL, 0);
	ck_assert_msg(fabs(got[0] - 0.5) <= tol, "pgram[0] = %.17g", got[0]);
	ck_assert_msg(fabs(got[1] - 0.5) <= tol, "pgram[1] = %.17g", got[1]);
}
END_TEST

/*
 * The sums the reference takes once: y = [1, 3], weights [1, 3], precenter:
 * shift = mean(y) = 2 (unweighted), the weights' sum 4, w = [1/4, 3/4], the
 * centred Y = [-1, 1]: sum w Y = 1/2, sum w Y^2 = 1; dot(y, y) = 10 of the y
 * as given. Without weights and precenter: n, and the plain means.
 */
START_TEST(test_ref_sums)
{
	double x[2] = {0, 1}, y[2] = {1, 3}, w[2] = {1, 3}, f[1] = {1};
	ls_case c = lcase(x, y, 2);
	ls_bound b;
	ls_sums s;
	char err[512];

	c.f = f;
	c.nf = 1;
	c.w = w;
	c.precenter = 1;
	ck_assert_msg(ls_bind(GPUD_F64, &c, &b, err, sizeof(err)) == 0, "%s", err);
	lombscargle_ref_sums(&b.a, &s);
	ck_assert_double_eq(s.shift, 2);
	ck_assert_double_eq(s.wsum, 4);
	ck_assert_double_eq(s.y1, 0.5);
	ck_assert_double_eq(s.y2, 1);
	ck_assert_double_eq(s.ydot, 10);
	ls_unbind(&b);

	c.w = NULL;
	c.precenter = OMIT;
	ck_assert_msg(ls_bind(GPUD_F32, &c, &b, err, sizeof(err)) == 0, "%s", err);
	lombscargle_ref_sums(&b.a, &s);
	ck_assert_double_eq(s.shift, 0);
	ck_assert_double_eq(s.wsum, 2);
	ck_assert_double_eq(s.y1, 2);
	ck_assert_double_eq(s.y2, 5);
	ck_assert_double_eq(s.ydot, 10);
	ls_unbind(&b);
}
END_TEST

/* --- an independent reference ------------------------------------------------------ */

/*
 * Solves the m x m system M c = r (m <= 3) by Gaussian elimination with
 * partial pivoting.
 */
static void solve(int m, double M[3][3], double r[3], double c[3])
{
	for (int col = 0; col < m; col++) {
		int piv = col;
		for (int i = col + 1; i < m; i++)
			if (fabs(M[i][col]) > fabs(M[piv][col]))
				piv = i;
		for (int j = 0; j < m; j++) {
			double t = M[col][j];
			M[col][j] = M[piv][j];
			M[piv][j] = t;
		}
		double t = r[col];
		r[col] = r[piv];
		r[piv] = t;
		for (int i = col + 1; i < m; i++) {
			double q = M[i][col] / M[col][col];
			for (int j = col; j < m; j++)
				M[i][j] -= q * M[col][j];
			r[i] -= q * r[col];
		}
	}
	for (int i = m - 1; i >= 0; i--) {
		double v = r[i];
		for (int j = i + 1; j < m; j++)
			v -= M[i][j] * c[j];
		c[i] = v / M[i][i];
	}
}

/* scipy <= 1.14, written out as its Cython loop (Townsend), in float64. */
static void reference_legacy(const double *x, const double *y, size_t n, const double *f, size_t nf,
			     int precenter, int normalize, double *out)
{
	double mean = 0, dot = 0;

	for (size_t j = 0; j < n; j++) {
		mean += y[j];
		dot += y[j] * y[j];
	}
	mean /= (double)n;
	for (size_t i = 0; i < nf; i++) {
		double xc = 0, xs = 0, cc = 0, ss = 0, cs = 0;
		for (size_t j = 0; j < n; j++) {
			double c = cos(f[i] * x[j]), s = sin(f[i] * x[j]);
			double v = precenter ? y[j] - mean : y[j];
			xc += v * c;
			xs += v * s;
			cc += c * c;
			ss += s * s;
			cs += c * s;
		}
		double tau = atan2(2 * cs, cc - ss) / (2 * f[i]);
		double ct = cos(f[i] * tau), st = sin(f[i] * tau);
		double a = ct * xc + st * xs, b = ct * xs - st * xc;
		out[i] = 0.5 * (a * a / (ct * ct * cc + 2 * ct * st * cs + st * st * ss) +
				b * b / (ct * ct * ss - 2 * ct * st * cs + st * st * cc));
		if (normalize)
			out[i] *= 2 / dot;
	}
}

/*
 * Today's scipy from its definition rather than its algorithm: at each
 * frequency the weighted least-squares fit y ~ A cos(f x) + B sin(f x)
 * (+ c with floating_mean) through the normal equations, in float64; p is
 * twice the fit's weighted sum of squares about the offset (about 0 without
 * floating_mean). w NULL: equal weights.
 */
static void reference(const double *x, const double *y, const double *w, size_t n, const double *f,
		      size_t nf, int precenter, int mode, int fm, double *re, double *im)
{
	double *wn = malloc(n * sizeof(double)), *yc = malloc(n * sizeof(double));
	double wsum = 0, mean = 0, ybar = 0, yy = 0;

	ck_assert(wn && yc);
	for (size_t j = 0; j < n; j++) {
		wsum += w ? w[j] : 1;
		mean += y[j];
	}
	mean /= (double)n;
	for (size_t j = 0; j < n; j++) {
		wn[j] = (w ? w[j] : 1) / wsum;
		yc[j] = precenter ? y[j] - mean : y[j];
		ybar += wn[j] * yc[j];
		yy += wn[j] * yc[j] * yc[j];
	}
	if (fm)
		yy -= ybar * ybar;
	int m = fm ? 3 : 2;
	for (size_t i = 0; i < nf; i++) {
		double M[3][3] = {{0}}, r[3] = {0}, coef[3] = {0};
		for (size_t j = 0; j < n; j++) {
			double basis[3] = {cos(f[i] * x[j]), sin(f[i] * x[j]), 1};
			for (int u = 0; u < m; u++) {
				r[u] += wn[j] * basis[u] * yc[j];
				for (int v = 0; v < m; v++)
					M[u][v] += wn[j] * basis[u] * basis[v];
			}
		}
		solve(m, M, r, coef);
		double p = 0;
		for (size_t j = 0; j < n; j++) {
			double fit = coef[0] * cos(f[i] * x[j]) + coef[1] * sin(f[i] * x[j]) +
				     (fm ? coef[2] - ybar : 0);
			p += wn[j] * fit * fit;
		}
		p *= 2;
		im[i] = 0;
		if (mode == LS_AMPLITUDE) {
			re[i] = coef[0];
			im[i] = coef[1];
		} else if (mode == LS_NORMALIZED) {
			re[i] = p / (2 * yy);
		} else {
			re[i] = p * (double)n / 4;
		}
	}
	free(wn);
	free(yc);
}

static uint64_t rng_state;

/* Uniform in [lo, hi), never exactly zero (xorshift64*). */
static double uniform(double lo, double hi)
{
	double u;

	do {
		rng_state ^= rng_state >> 12;
		rng_state ^= rng_state << 25;
		rng_state ^= rng_state >> 27;
		u = lo + (hi - lo) * (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) * 0x1p-53;
	} while (u == 0.0);
	return u;
}

static double rounded(gpud_dtype dt, double v)
{
	return dt == GPUD_F32 ? (double)(float)v : v;
}

/*
 * Loop index: the seed. Every mode: power, normalize and amplitude, each with
 * and without weights (one of them 0), floating_mean and precenter; legacy
 * power and normalize with and without precenter. Both dtypes, the
 * frequencies as an array and as the grid.
 */
START_TEST(test_random_against_reference)
{
	size_t n = 17 + 29 * (size_t)_i, nf = 53;
	double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
	double *w = malloc(n * sizeof(double)), *f = malloc(nf * sizeof(double));
	double *xr = malloc(n * sizeof(double)), *yr = malloc(n * sizeof(double));
	double *wr = malloc(n * sizeof(double)), *fr = malloc(nf * sizeof(double));
	double *want = malloc(nf * sizeof(double)), *want_im = malloc(nf * sizeof(double));
	double *got = malloc(nf * sizeof(double)), *got_im = malloc(nf * sizeof(double));
	int runs = 0;
	ck_assert(x && y && w && f && xr && yr && wr && fr && want && want_im && got && got_im);

	rng_state = 0x853c49e6748fea9bull * (uint64_t)(_i + 1);
	double t = 0;
	for (size_t j = 0; j < n; j++) {
		t += uniform(0.01, 0.5); /* irregular, increasing sample times */
		x[j] = t;
		y[j] = 1.5 + uniform(-2, 2);
		w[j] = uniform(0.1, 2);
	}
	w[n / 2] = 0; /* a zero weight is allowed */
	for (size_t i = 0; i < nf; i++)
		f[i] = uniform(0.5, 25);
	double f0 = uniform(0.5, 1), df = uniform(0.05, 0.4);

	for (int dti = 0; dti < 2; dti++) {
		gpud_dtype dt = dti ? GPUD_F32 : GPUD_F64;
		/* the float32 run sees its arrays rounded; so does the reference (the
		 * grid is float64 scalars, for both dtypes) */
		for (size_t j = 0; j < n; j++) {
			xr[j] = rounded(dt, x[j]);
			yr[j] = rounded(dt, y[j]);
			wr[j] = rounded(dt, w[j]);
		}
		for (int grid = 0; grid < 2; grid++) {
			for (size_t i = 0; i < nf; i++)
				fr[i] = grid ? f0 + df * (double)i : rounded(dt, f[i]);
			for (int combo = 0; combo < 28; combo++) {
				int legacy = combo >= 24, mode, pre, fm = 0, weighted = 0;
				if (legacy) {
					mode = combo & 1 ? LS_NORMALIZED : LS_POWER;
					pre = (combo >> 1) & 1;
				} else {
					mode = combo % 3;
					pre = (combo / 3) & 1;
					fm = (combo / 6) & 1;
					weighted = (combo / 12) & 1;
				}
				ls_case c = lcase(x, y, n);
				if (grid)
					set_grid(&c, f0, df, (int64_t)nf);
				else {
					c.f = f;
					c.nf = nf;
				}
				c.w = weighted ? w : NULL;
				c.precenter = pre;
				c.floating_mean = legacy ? OMIT : fm;
				c.legacy = legacy ? 1 : (combo & 1 ? 0 : OMIT);
				c.normalize = mode;
				c.normalize_as = (_i + combo) % 3;
				if (legacy) {
					reference_legacy(xr, yr, n, fr, nf, pre,
							 mode == LS_NORMALIZED, want);
					memset(want_im, 0, nf * sizeof(double));
				} else {
					reference(xr, yr, weighted ? wr : NULL, n, fr, nf, pre,
						  mode, fm, want, want_im);
				}
				run_ls(dt, &c, got, got_im, 0);
				runs++;
				for (size_t i = 0; i < nf; i++) {
					double wv = rounded(dt, want[i]),
					       wi = rounded(dt, want_im[i]);
					double scale = fmax(1.0, fmax(fabs(wv), fabs(wi)));
					double tol = (dt == GPUD_F32 ? 1e-6 : 1e-9) * scale;
					int amp = mode == LS_AMPLITUDE;
					ck_assert_msg(fabs(got[i] - wv) <= tol &&
							      (!amp || fabs(got_im[i] - wi) <= tol),
						      "seed %d %s %s mode %d precenter %d "
						      "floating_mean %d weights %d legacy %d "
						      "f[%zu] = %g: got %.17g%+.17gi, want "
						      "%.17g%+.17gi",
						      _i, gpud_dtype_name(dt),
						      grid ? "grid" : "array", mode, pre, fm,
						      weighted, legacy, i, fr[i], got[i],
						      amp ? got_im[i] : 0.0, wv, wi);
				}
			}
		}
	}
	ck_assert_int_eq(runs, 2 * 2 * 28);
	free(x);
	free(y);
	free(w);
	free(f);
	free(xr);
	free(yr);
	free(wr);
	free(fr);
	free(want);
	free(want_im);
	free(got);
	free(got_im);
}
END_TEST

/*
 * The grid f0 + df k is the array of those frequencies computed in float64:
 * the same bits out, in every mode. float32 takes f0 and df that float32
 * holds exactly, so that its array is the same frequencies too.
 */
START_TEST(test_grid_equals_array)
{
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	const size_t n = 40, nf = 37;
	double x[40], y[40], w[40], f[37];
	double g[2][37], gi[2][37];

	rng_state = 0x2545f4914f6cdd1dull;
	for (size_t j = 0; j < n; j++) {
		x[j] = uniform(0, 30);
		y[j] = uniform(-1, 3);
		w[j] = uniform(0.5, 1.5);
	}
	double f0 = dt == GPUD_F32 ? 0.5 : uniform(0.1, 1);
	double df = dt == GPUD_F32 ? 0.125 : uniform(0.01, 0.3);
	for (size_t i = 0; i < nf; i++)
		f[i] = f0 + df * (double)i;
	for (int combo = 0; combo < 12; combo++) {
		for (int grid = 0; grid < 2; grid++) {
			ls_case c = lcase(x, y, n);
			if (grid) {
				set_grid(&c, f0, df, (int64_t)nf);
			} else {
				c.f = f;
				c.nf = nf;
			}
			c.normalize = combo % 3;
			c.floating_mean = (combo / 3) & 1;
			c.w = (combo / 6) & 1 ? w : NULL;
			c.precenter = combo & 1;
			run_ls(dt, &c, g[grid], gi[grid], 0);
		}
		ck_assert_msg(memcmp(g[0], g[1], sizeof(g[0])) == 0,
			      "%s combo %d: the grid differs", gpud_dtype_name(dt), combo);
		if (combo % 3 == LS_AMPLITUDE)
			ck_assert_msg(memcmp(gi[0], gi[1], sizeof(gi[0])) == 0,
				      "%s combo %d: the grid's imaginary parts differ",
				      gpud_dtype_name(dt), combo);
	}
	/* one frequency: the grid's df does not matter */
	ls_case c = lcase(x, y, n);
	set_grid(&c, f0, 1e300, 1);
	run_ls(dt, &c, g[0], NULL, 0);
	c.f = f;
	c.nf = 1;
	c.grid = 0;
	run_ls(dt, &c, g[1], NULL, 0);
	ck_assert(g[0][0] == g[1][0]);
}
END_TEST

/* --- check --------------------------------------------------------------------------- */

static const double pool[64] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
				17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
				33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
				49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64};

/* A case of n samples (x, y and weights from the pool) with freqs of nf. */
static ls_case pcase(size_t n, size_t nf)
{
	ls_case c = lcase(pool, pool, n);

	c.f = pool;
	c.nf = nf;
	return c;
}

/* Runs check on c in dtype dt, expecting it to refuse with exactly `want`. */
static void check_refuses(gpud_dtype dt, const ls_case *c, const char *want)
{
	ls_bound b;
	char err[512];

	ck_assert_int_eq(ls_bind(dt, c, &b, err, sizeof(err)), -1);
	ck_assert_str_eq(err, want);
	ls_unbind(&b);
}

/* Runs check on c in dtype dt, expecting it to pass; returns the output it expects. */
static kernel_array check_passes(gpud_dtype dt, const ls_case *c)
{
	ls_bound b;
	char err[512];

	ck_assert_msg(ls_bind(dt, c, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(b.a.dtype, dt);
	kernel_array e = b.a.v[LS_PGRAM].expect;
	ls_unbind(&b);
	return e;
}

START_TEST(test_check_length_mismatch)
{
	ls_case c = pcase(5, 3);

	c.ny = 7;
	check_refuses(GPUD_F64, &c, "lombscargle: x and y must have the same length, got 5 and 7");
	c = pcase(12, 3);
	c.ny = 11;
	check_refuses(GPUD_F32, &c,
		      "lombscargle: x and y must have the same length, got 12 and 11");
	/* the weights */
	c = pcase(5, 3);
	c.w = pool;
	c.nw = 4;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: weights must have the length of x, got 4 for 5 samples");
	c.nw = 6;
	check_refuses(GPUD_F32, &c,
		      "lombscargle: weights must have the length of x, got 6 for 5 samples");
	c.nw = 0;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: weights must have the length of x, got 0 for 5 samples");
	c.nw = 5;
	check_passes(GPUD_F64, &c);
	/* x and y first */
	c.ny = 4;
	c.nw = 3;
	check_refuses(GPUD_F64, &c, "lombscargle: x and y must have the same length, got 5 and 4");
}
END_TEST

START_TEST(test_check_dtype_mix)
{
	ls_case c = pcase(4, 3);

	c.dty = GPUD_F32;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: x, y, freqs and weights must have one dtype: 'y' is float32 "
		      "but 'x' is float64");
	c = pcase(4, 3);
	c.dtf = GPUD_F64;
	check_refuses(GPUD_F32, &c,
		      "lombscargle: x, y, freqs and weights must have one dtype: 'freqs' is "
		      "float64 but 'x' is float32");
	c = pcase(4, 3);
	c.w = pool;
	c.dtw = GPUD_F32;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: x, y, freqs and weights must have one dtype: 'weights' is "
		      "float32 but 'x' is float64");
	c.dtw = GPUD_F64;
	check_refuses(GPUD_F32, &c,
		      "lombscargle: x, y, freqs and weights must have one dtype: 'weights' is "
		      "float64 but 'x' is float32");
	/* with the grid: the weights' dtype still counts */
	c.f = NULL;
	set_grid(&c, 1, 1, 3);
	check_refuses(GPUD_F32, &c,
		      "lombscargle: x, y, freqs and weights must have one dtype: 'weights' is "
		      "float64 but 'x' is float32");
	/* the dtype is checked before the lengths */
	c = pcase(4, 3);
	c.ny = 5;
	c.dty = GPUD_F32;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: x, y, freqs and weights must have one dtype: 'y' is float32 "
		      "but 'x' is float64");
}
END_TEST

/*
 * An output the client passes of the wrong dtype passes check, which sets
 * only what it expects: the daemon's comparison of the two (outputs_or_fail
 * in daemon/verbs/run.c) refuses it, naming the output.
 */
START_TEST(test_check_given_output_dtype)
{
	const kernel_def *k = ls_kernel();
	static double buf[8];
	ls_bound b;
	char err[512];

	memset(&b, 0, sizeof(b));
	b.a.kernel = k;
	bind(k, &b.a, LS_X, GPUD_F64, buf, 4);
	bind(k, &b.a, LS_Y, GPUD_F64, buf, 4);
	bind(k, &b.a, LS_FREQS, GPUD_F64, buf, 2);
	bind(k, &b.a, LS_PGRAM, GPUD_F32, buf, 2);
	ck_assert_msg(kernel_args_finish(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(k->check(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(b.a.v[LS_PGRAM].arr.dtype, GPUD_F32);
	ck_assert_int_eq(b.a.v[LS_PGRAM].expect.dtype, GPUD_F64);
	/* a complex output binds (for amplitude); the same comparison refuses it here */
	memset(&b, 0, sizeof(b));
	b.a.kernel = k;
	bind(k, &b.a, LS_X, GPUD_F64, buf, 4);
	bind(k, &b.a, LS_Y, GPUD_F64, buf, 4);
	bind(k, &b.a, LS_FREQS, GPUD_F64, buf, 2);
	bind(k, &b.a, LS_PGRAM, GPUD_C128, buf, 2);
	ck_assert_msg(kernel_args_finish(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(k->check(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(b.a.v[LS_PGRAM].expect.dtype, GPUD_F64);
}
END_TEST

START_TEST(test_check_empty)
{
	ls_case c = pcase(0, 3);

	check_refuses(GPUD_F64, &c, "lombscargle: x and y must not be empty");
	/* a mismatch is reported before emptiness */
	c.ny = 2;
	check_refuses(GPUD_F64, &c, "lombscargle: x and y must have the same length, got 0 and 2");
	/* empty x with empty weights: x first */
	c = pcase(0, 3);
	c.w = pool;
	check_refuses(GPUD_F32, &c, "lombscargle: x and y must not be empty");
	/* no frequencies: scipy >= 1.15 refuses an empty freqs */
	c = pcase(3, 0);
	check_refuses(GPUD_F64, &c, "lombscargle: freqs must not be empty");
	check_refuses(GPUD_F32, &c, "lombscargle: freqs must not be empty");
}
END_TEST

/* freqs or the grid: one of them, all of the grid, nf from 1 to 2^40. */
START_TEST(test_check_frequencies)
{
	static const char *const missing[] = {
		"lombscargle: the grid needs f0, df and nf; 'f0' is missing",
		"lombscargle: the grid needs f0, df and nf; 'df' is missing",
		"lombscargle: the grid needs f0, df and nf; 'nf' is missing",
	};
	ls_case c = pcase(4, 0);

	c.f = NULL;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: missing the frequencies: give freqs (an array) or the grid "
		      "f0, df, nf");
	/* each of the grid's scalars alone, each left out */
	for (int i = 0; i < 3; i++) {
		c.grid = 1 << i;
		c.f = pool;
		c.nf = 3;
		c.f0 = 0.5;
		c.df = 0.25;
		c.ngrid = 3;
		check_refuses(GPUD_F64, &c,
			      "lombscargle: give the frequencies as freqs or as the grid f0, df, "
			      "nf, not both");
		c.grid = GRID & ~(1 << i);
		check_refuses(GPUD_F32, &c,
			      "lombscargle: give the frequencies as freqs or as the grid f0, df, "
			      "nf, not both");
		c.f = NULL;
		check_refuses(GPUD_F64, &c, missing[i]);
		c.grid = 1 << i;
		check_refuses(GPUD_F32, &c, missing[i == 0 ? 1 : 0]);
	}
	/* nf */
	c = pcase(4, 0);
	c.f = NULL;
	set_grid(&c, 0.5, 0.25, 0);
	check_refuses(GPUD_F64, &c, "lombscargle: nf must be between 1 and 2^40, got 0");
	c.ngrid = -1;
	check_refuses(GPUD_F64, &c, "lombscargle: nf must be between 1 and 2^40, got -1");
	c.ngrid = INT64_MIN;
	check_refuses(GPUD_F32, &c,
		      "lombscargle: nf must be between 1 and 2^40, got -9223372036854775808");
	c.ngrid = (INT64_C(1) << 40) + 1;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: nf must be between 1 and 2^40, got 1099511627777");
	c.ngrid = INT64_C(1) << 40; /* check allows it; allocating it is the daemon's matter */
	kernel_array e = check_passes(GPUD_F64, &c);
	ck_assert_uint_eq(e.count, UINT64_C(1) << 40);
	c.ngrid = 1;
	e = check_passes(GPUD_F32, &c);
	ck_assert_uint_eq(e.count, 1);
	/* any f0 and df, even negative (scipy takes any frequencies) */
	set_grid(&c, -3, -0.5, 7);
	e = check_passes(GPUD_F64, &c);
	ck_assert_uint_eq(e.count, 7);
}
END_TEST

/* legacy=true is scipy <= 1.14, which had no weights, floating_mean or amplitude. */
START_TEST(test_check_legacy)
{
	ls_case c = pcase(4, 3);

	c.legacy = 1;
	c.w = pool;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: legacy=true (scipy <= 1.14) has no weights; leave out legacy "
		      "for today's scipy");
	c.w = NULL;
	c.floating_mean = 1;
	check_refuses(GPUD_F32, &c,
		      "lombscargle: legacy=true (scipy <= 1.14) has no floating_mean=true; leave "
		      "out legacy for today's scipy");
	c.floating_mean = 0;
	c.normalize = LS_AMPLITUDE;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: legacy=true (scipy <= 1.14) has no normalize=amplitude; leave "
		      "out legacy for today's scipy");
	/* the rest is legacy's: power, normalize, precenter, the grid */
	c.normalize = LS_NORMALIZED;
	c.precenter = 1;
	check_passes(GPUD_F64, &c);
	c.f = NULL;
	set_grid(&c, 1, 1, 3);
	c.normalize = LS_POWER;
	check_passes(GPUD_F32, &c);
	/* legacy=false takes them all */
	c = pcase(4, 3);
	c.legacy = 0;
	c.w = pool;
	c.floating_mean = 1;
	c.normalize = LS_AMPLITUDE;
	check_passes(GPUD_F64, &c);
}
END_TEST

START_TEST(test_check_output_expect)
{
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	gpud_dtype cdt = _i ? GPUD_C64 : GPUD_C128;
	ls_case c = pcase(6, 9);

	kernel_array e = check_passes(dt, &c);
	ck_assert_int_eq(e.dtype, dt);
	ck_assert_int_eq(e.ndim, 1);
	ck_assert_uint_eq(e.shape[0], 9);
	ck_assert_uint_eq(e.count, 9);
	/* the output's length follows freqs, not x */
	c = pcase(40, 1);
	e = check_passes(dt, &c);
	ck_assert_uint_eq(e.shape[0], 1);
	ck_assert_uint_eq(e.count, 1);
	/* or the grid's nf */
	c.f = NULL;
	set_grid(&c, 0.1, 0.1, 1000);
	e = check_passes(dt, &c);
	ck_assert_int_eq(e.dtype, dt);
	ck_assert_uint_eq(e.shape[0], 1000);
	ck_assert_uint_eq(e.count, 1000);
	/* amplitude: x's complex dtype; the other words and bools: x's */
	for (int as = NZ_WORD; as <= NZ_INT; as++) {
		for (int mode = LS_POWER; mode <= LS_AMPLITUDE; mode++) {
			c.normalize = mode;
			c.normalize_as = as;
			c.w = pool;
			e = check_passes(dt, &c);
			ck_assert_int_eq(e.dtype, mode == LS_AMPLITUDE ? cdt : dt);
			ck_assert_uint_eq(e.count, 1000);
		}
	}
}
END_TEST

/* --- the verdict on the weights' values ------------------------------------------------ */

/* The verdict cpu_verdict gives on these weights (in dtype dt), with its message in msg. */
static unsigned verdict_of(gpud_dtype dt, const double *w, size_t n, char *msg, size_t len)
{
	const kernel_def *k = ls_kernel();
	ls_case c = pcase(n, 2);
	ls_bound b;
	char err[512];

	c.w = w;
	ck_assert_msg(ls_bind(dt, &c, &b, err, sizeof(err)) == 0, "%s", err);
	unsigned v = cpu_kernel_of(k)->verdict(&b.a);
	msg[0] = '\0';
	if (v != 0)
		k->verdict_message(&b.a, v, msg, len);
	ls_unbind(&b);
	return v;
}

START_TEST(test_verdict)
{
	static const char bad[] =
		"lombscargle: argument 'weights' must hold only non-negative "
		"values that sum to a positive value; got a negative or NaN weight";
	static const char zero[] = "lombscargle: argument 'weights' must hold only non-negative "
				   "values that sum to a positive value; got weights that sum to 0";
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	const kernel_def *k = ls_kernel();
	char msg[512];

	ck_assert_ptr_nonnull(cpu_kernel_of(k)->verdict);
	ck_assert_ptr_nonnull(k->verdict_message);
	/* no weights, positive ones, some zero, -0, +inf (scipy's check passes it too) */
	ls_case c = pcase(3, 2);
	ls_bound b;
	ck_assert_msg(ls_bind(dt, &c, &b, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_uint_eq(cpu_kernel_of(k)->verdict(&b.a), 0);
	ls_unbind(&b);
	const double ok1[3] = {1, 2, 3}, ok2[3] = {0, 0, 1e-30}, ok3[3] = {-0.0, 1, 0},
		     ok4[3] = {INFINITY, 1, 1};
	ck_assert_uint_eq(verdict_of(dt, ok1, 3, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(verdict_of(dt, ok2, 3, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(verdict_of(dt, ok3, 3, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(verdict_of(dt, ok4, 3, msg, sizeof(msg)), 0);
	/* negative, anywhere */
	const double neg1[3] = {-1, 2, 3}, neg2[3] = {1, 2, -1e-30}, neg3[3] = {5, -INFINITY, 5};
	ck_assert_uint_eq(verdict_of(dt, neg1, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	ck_assert_str_eq(msg, bad);
	ck_assert_uint_eq(verdict_of(dt, neg2, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	ck_assert_str_eq(msg, bad);
	ck_assert_uint_eq(verdict_of(dt, neg3, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	/* NaN (which scipy's weights >= 0 refuses) */
	const double nan1[3] = {1, NAN, 1}, nan2[3] = {NAN, NAN, NAN};
	ck_assert_uint_eq(verdict_of(dt, nan1, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	ck_assert_str_eq(msg, bad);
	ck_assert_uint_eq(verdict_of(dt, nan2, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	/* all zero, -0 too */
	const double z1[3] = {0, 0, 0}, z2[3] = {-0.0, 0, -0.0};
	ck_assert_uint_eq(verdict_of(dt, z1, 3, msg, sizeof(msg)), LS_ZERO_WEIGHTS);
	ck_assert_str_eq(msg, zero);
	ck_assert_uint_eq(verdict_of(dt, z2, 3, msg, sizeof(msg)), LS_ZERO_WEIGHTS);
	ck_assert_str_eq(msg, zero);
	ck_assert_uint_eq(verdict_of(dt, z1, 1, msg, sizeof(msg)), LS_ZERO_WEIGHTS);
	/* a negative weight with the rest zero: the bad weight is named */
	const double nz[3] = {0, -2, 0};
	ck_assert_uint_eq(verdict_of(dt, nz, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	ck_assert_str_eq(msg, bad);
	/* the CUDA kernel may report both bits: the bad weight is named */
	ck_assert_msg(ls_bind(dt, &c, &b, msg, sizeof(msg)) == 0, "%s", msg);
	k->verdict_message(&b.a, LS_BAD_WEIGHT | LS_ZERO_WEIGHTS, msg, sizeof(msg));
	ck_assert_str_eq(msg, bad);
	k->verdict_message(&b.a, LS_ZERO_WEIGHTS, msg, sizeof(msg));
	ck_assert_str_eq(msg, zero);
	/* a short buffer: a terminated prefix */
	k->verdict_message(&b.a, LS_ZERO_WEIGHTS, msg, 12);
	ck_assert_str_eq(msg, "lombscargle");
	ls_unbind(&b);
}
END_TEST

/* --- method=nufft (nufft.c): against the direct reference ------------------------------ */

/* Runs c (a grid) in dt with cpu_run over [0, nf), the output poisoned first: re and im. */
static void run_plain(gpud_dtype dt, const ls_case *c, double *re, double *im)
{
	const kernel_def *k = ls_kernel();
	ls_bound b;
	char err[512] = "";
	size_t nf = case_nf(c);
	int amp = c->normalize == LS_AMPLITUDE;

	ck_assert_msg(ls_bind(dt, c, &b, err, sizeof(err)) == 0, "%s", err);
	kernel_value *pv = &b.a.v[LS_PGRAM];
	pv->arr = pv->expect;
	pv->arr.data = malloc(nf * gpud_dtype_size(pv->expect.dtype));
	ck_assert_ptr_nonnull(pv->arr.data);
	pv->present = 1;
	poison(&pv->arr);
	/* as the cpu backend runs it: in chunks, each its own transform */
	size_t cut = nf / 3;
	cpu_kernel_of(k)->run(&b.a, cut, nf);
	cpu_kernel_of(k)->run(&b.a, 0, cut);
	for (size_t i = 0; i < nf; i++) {
		re[i] = get(&pv->arr, amp ? 2 * i : i);
		im[i] = amp ? get(&pv->arr, 2 * i + 1) : 0;
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
static void gapped(size_t n, double *x, double *y, double *w, double T)
{
	for (size_t j = 0; j < n; j++) {
		double t;
		do
			t = uniform(0, T);
		while ((t > 0.3 * T && t < 0.5 * T) || (t > 0.7 * T && t < 0.8 * T));
		x[j] = t;
	}
	double om = uniform(0.5, 3) * 2 * M_PI * (double)n / T, ph = uniform(0, 6.28);
	for (size_t j = 0; j < n; j++) {
		y[j] = 3 + 1.5 * sin(om * x[j] + ph) + uniform(-1, 1);
		w[j] = uniform(0.1, 2);
	}
}

/* The largest |difference| over the largest |value| of the direct results. */
static double rel_err(size_t nf, const double *re, const double *im, const double *wre,
		      const double *wim)
{
	double big = 0, err = 0;
	for (size_t i = 0; i < nf; i++) {
		big = fmax(big, fmax(fabs(wre[i]), fabs(wim[i])));
		err = fmax(err, fmax(fabs(re[i] - wre[i]), fabs(im[i] - wim[i])));
	}
	return err / big;
}

/* The modes: {normalize, precenter, floating_mean, weights, legacy}. */
static const int nufft_modes[][5] = {
	{LS_POWER, 0, 0, 0, 0},      {LS_NORMALIZED, 1, 0, 0, 0}, {LS_POWER, 0, 1, 1, 0},
	{LS_NORMALIZED, 0, 1, 1, 0}, {LS_AMPLITUDE, 0, 1, 1, 0},  {LS_AMPLITUDE, 1, 0, 1, 0},
	{LS_NORMALIZED, 1, 0, 0, 1}, {LS_POWER, 0, 0, 0, 1},      {LS_NORMALIZED, 1, 1, 1, 0},
};
#define NNUFFT_MODES (int)(sizeof(nufft_modes) / sizeof(nufft_modes[0]))

START_TEST(test_nufft_against_direct)
{
	char why[512];
	if (!ls_nufft_cpu_available(why,
				    sizeof(why))) /* then nufft is direct: nothing to compare */
		fprintf(stderr, "test_nufft_against_direct: no FFTW3, the direct path only: %s\n",
			why);
	gpud_dtype dt = _i % 2 ? GPUD_F32 : GPUD_F64;
	static const size_t sizes[][2] = {{10, 1000}, {300, 5000}, {1000, 10000}};
	size_t n = sizes[_i / 2 % 3][0], nf = sizes[_i / 2 % 3][1];
	double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
	double *w = malloc(n * sizeof(double));
	double *re[2], *im[2];
	for (int k = 0; k < 2; k++) {
		re[k] = malloc(nf * sizeof(double));
		im[k] = malloc(nf * sizeof(double));
		ck_assert(re[k] && im[k]);
	}
	ck_assert(x && y && w);
	rng_state = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL) ^ ((uint64_t)_i << 32);
	uint64_t seed = rng_state;
	double T = uniform(50, 2000);
	gapped(n, x, y, w, T);
	for (int mi = 0; mi < NNUFFT_MODES; mi++) {
		const int *md = nufft_modes[mi];
		double eps = mi == 3 && dt == GPUD_F64 ? 1e-11 : mi == 4 ? 1e-4 : 0;
		ls_case c = lcase(x, y, n);
		/* up to ~8 times the mean sampling rate */
		double fmax = uniform(1, 8) * 2 * M_PI * (double)n / T,
		       f0 = uniform(2, 20) * 2 * M_PI / T;
		set_grid(&c, f0, (fmax - f0) / (double)nf, (int64_t)nf);
		c.normalize = md[0];
		c.precenter = md[1];
		c.floating_mean = md[2];
		c.w = md[3] ? w : NULL;
		c.legacy = md[4];
		c.eps = eps;
		c.method = LS_DIRECT;
		run_plain(dt, &c, re[0], im[0]);
		c.method = LS_NUFFT;
		run_plain(dt, &c, re[1], im[1]);
		double e = rel_err(nf, re[1], im[1], re[0], im[0]);
		double want = eps > 0 ? eps : dt == GPUD_F32 ? 1e-5 : 1e-9;
		ck_assert_msg(
			e <= want,
			"%s n=%zu nf=%zu mode %d (seed %llx): nufft vs direct %.3g > eps %.3g",
			gpud_dtype_name(dt), n, nf, mi, (unsigned long long)seed, e, want);
	}
	for (int k = 0; k < 2; k++) {
		free(re[k]);
		free(im[k]);
	}
	free(x);
	free(y);
	free(w);
}
END_TEST

/* method=auto: direct on arrays and small grids; results within eps either way. */
START_TEST(test_nufft_auto)
{
	const size_t n = 400, nf = 30000;
	double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
	double *w = malloc(n * sizeof(double));
	double *re[2], *im[2];
	for (int k = 0; k < 2; k++) {
		re[k] = malloc(nf * sizeof(double));
		im[k] = malloc(nf * sizeof(double));
	}
	rng_state = 0x51ed270b27e5f1a3ull;
	gapped(n, x, y, w, 100);
	ls_case c = lcase(x, y, n);
	set_grid(&c, 0.5, 0.01, (int64_t)nf);
	c.method = LS_DIRECT;
	run_plain(GPUD_F64, &c, re[0], im[0]);
	c.method = OMIT; /* auto */
	run_plain(GPUD_F64, &c, re[1], im[1]);
	ck_assert(rel_err(nf, re[1], im[1], re[0], im[0]) <= 1e-9);
	for (int k = 0; k < 2; k++) {
		free(re[k]);
		free(im[k]);
	}
	free(x);
	free(y);
	free(w);
}
END_TEST

START_TEST(test_check_method)
{
	ls_case c = pcase(4, 3);

	c.method = LS_NUFFT;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: method=nufft needs the uniform grid f0, df, nf; got the array "
		      "freqs (use method=direct or auto for arrays)");
	c.f = NULL;
	set_grid(&c, 1, 0.5, 3);
	check_passes(GPUD_F64, &c);
	c.ngrid = (1ll << 29) + 1;
	check_refuses(GPUD_F32, &c,
		      "lombscargle: method=nufft takes at most 2^29 frequencies, got nf=536870913 "
		      "(use method=direct, or split the grid)");
	c.ngrid = 3;
	c.eps = 1e-20;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: eps must be between 1e-14 and 0.1 for float64, got 1e-20");
	c.eps = 1e-7;
	check_refuses(GPUD_F32, &c,
		      "lombscargle: eps must be between 1e-06 and 0.1 for float32, got 1e-07");
	check_passes(GPUD_F64, &c);
	c.eps = 0.5;
	check_refuses(GPUD_F64, &c,
		      "lombscargle: eps must be between 1e-14 and 0.1 for float64, got 0.5");
	/* method takes its words only: no bool stands for one */
	{
		const kernel_def *k = ls_kernel();
		const kernel_param *pm = &k->params[LS_METHOD];
		kernel_value v;
		char err[256], desc[128];
		memset(&v, 0, sizeof(v));
		ck_assert_int_eq(kernel_bind_scalar(k, pm, KGIVEN_BOOL, 1, 0, 0, &v, err,
						    sizeof(err)),
				 -1);
		ck_assert_str_eq(err, "lombscargle: argument 'method' must be one of "
				      "auto|direct|nufft (default auto), got bool true");
		ck_assert_int_eq(kernel_bind_scalar(k, pm, KGIVEN_I64, 0, 1, 0, &v, err,
						    sizeof(err)),
				 -1);
		kernel_param_describe(pm, desc, sizeof(desc));
		ck_assert_str_eq(desc, "auto|direct|nufft (default auto)");
		ck_assert_int_eq(kernel_bind_text(k, pm, "nufft", &v, err, sizeof(err)), 0);
		ck_assert_int_eq(v.s.i64, LS_NUFFT);
	}
	/* auto and direct take arrays */
	c = pcase(4, 3);
	c.method = LS_AUTO;
	check_passes(GPUD_F64, &c);
	c.method = LS_DIRECT;
	check_passes(GPUD_F32, &c);
}
END_TEST

/*
 * A batch: y (B, N) on one x gives B rows, each what the series alone gives
 * (direct bit for bit, the NUFFT to eps; float32 and float64, weights,
 * amplitude), the items run in pieces that cross the rows. Loop _i: method
 * (0 direct, 1 nufft) x dtype.
 */
static void bind_y2(const kernel_def *k, kernel_args *a, gpud_dtype dt, void *data, size_t nb,
		    size_t n)
{
	kernel_array arr = array1(dt, data, nb * n);
	char err[512] = "";
	arr.ndim = 2;
	arr.shape[0] = nb;
	arr.shape[1] = n;
	ck_assert_msg(kernel_bind_array(k, &k->params[LS_Y], &arr, &a->v[LS_Y], err, sizeof(err)) ==
			      0,
		      "%s", err);
}

/* Binds x, y (batch of nb, or 1-d when nb == 0), weights, the grid, amplitude and method. */
static int bind_batch(kernel_args *a, gpud_dtype dt, void *x, void *y, void *w, size_t n, size_t nb,
		      int64_t nf, int method, char *err, size_t errlen)
{
	const kernel_def *k = ls_kernel();
	memset(a, 0, sizeof(*a));
	a->kernel = k;
	bind(k, a, LS_X, dt, x, n);
	if (nb)
		bind_y2(k, a, dt, y, nb, n);
	else
		bind(k, a, LS_Y, dt, y, n);
	bind(k, a, LS_WEIGHTS, dt, w, n);
	bind_scalar(k, a, LS_F0, KGIVEN_F64, 0, 0, 0.05);
	bind_scalar(k, a, LS_DF, KGIVEN_F64, 0, 0, 0.011);
	bind_scalar(k, a, LS_NF, KGIVEN_I64, 0, nf, 0);
	bind_scalar(k, a, LS_FLOATING_MEAN, KGIVEN_BOOL, 1, 0, 0);
	bind_normalize(k, a, LS_AMPLITUDE, NZ_WORD);
	ck_assert(kernel_bind_text(k, &k->params[LS_METHOD], method ? "nufft" : "direct",
				   &a->v[LS_METHOD], err, errlen) == 0);
	ck_assert_msg(kernel_args_finish(a, err, errlen) == 0, "%s", err);
	return k->check(a, err, errlen);
}

START_TEST(test_batch)
{
	const int method = _i / 2;
	const gpud_dtype dt = _i % 2 ? GPUD_F32 : GPUD_F64;
	const size_t n = 400, nb = 3;
	const int64_t nf = 1500;
	const kernel_def *k = ls_kernel();
	char err[512] = "";
	double *xd = malloc(n * sizeof(double)), *wd = malloc(n * sizeof(double)),
	       *yd = malloc(nb * n * sizeof(double));
	ck_assert(xd && wd && yd);
	rng_state = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL) ^ ((uint64_t)_i << 32);
	for (size_t b = 0; b < nb; b++)
		gapped(n, xd, yd + b * n, wd, 300); /* x and w: the last series' */
	void *x = convert(dt, xd, n), *w = convert(dt, wd, n), *y = convert(dt, yd, nb * n);
	size_t esz = gpud_dtype_size(dt), osz = 2 * esz;

	kernel_args a;
	ck_assert_msg(bind_batch(&a, dt, x, y, w, n, nb, nf, method, err, sizeof(err)) == 0, "%s",
		      err);
	kernel_value *pv = &a.v[LS_PGRAM];
	ck_assert_int_eq(pv->expect.ndim, 2);
	ck_assert_uint_eq(pv->expect.shape[0], nb);
	ck_assert_uint_eq(pv->expect.shape[1], (uint64_t)nf);
	ck_assert_uint_eq(lombscargle_series(&a), nb);
	pv->arr = pv->expect;
	pv->arr.data = malloc(pv->arr.count * osz);
	pv->present = 1;
	poison(&pv->arr);
	size_t items = cpu_kernel_of(k)->items(&a), cut1 = (size_t)nf - 7,
	       cut2 = 2 * (size_t)nf + 5;
	ck_assert_uint_eq(items, nb * (size_t)nf);
	cpu_kernel_of(k)->run(&a, 0, cut1); /* pieces that cross the rows */
	cpu_kernel_of(k)->run(&a, cut1, cut2);
	cpu_kernel_of(k)->run(&a, cut2, items);

	for (size_t b = 0; b < nb; b++) {
		kernel_args one;
		ck_assert_msg(bind_batch(&one, dt, x, (char *)y + b * n * esz, w, n, 0, nf, method,
					 err, sizeof(err)) == 0,
			      "%s", err);
		kernel_value *ov = &one.v[LS_PGRAM];
		ov->arr = ov->expect;
		ov->arr.data = malloc(ov->arr.count * osz);
		ov->present = 1;
		poison(&ov->arr);
		cpu_kernel_of(k)->run(&one, 0, (size_t)nf);
		/* direct: the same bits; the NUFFT transforms each piece of the
		 * items as a grid of its own, so the pieces' rounding differs: to
		 * eps of the row's largest value */
		const char *row = (const char *)pv->arr.data + b * (size_t)nf * osz;
		double big = 0;
		for (size_t i = 0; i < 2 * (size_t)nf; i++)
			big = fmax(big, fabs(get(&ov->arr, i)));
		const double tol = method ? (dt == GPUD_F32 ? 1e-5 : 1e-9) * big : 0;
		for (size_t i = 0; i < 2 * (size_t)nf; i++) {
			double got = esz == 4 ? ((const float *)row)[i] : ((const double *)row)[i];
			double want = get(&ov->arr, i);
			ck_assert_msg(isfinite(got) && fabs(got - want) <= tol,
				      "%s %s series %zu component %zu: %.17g, alone %.17g",
				      method ? "nufft" : "direct", gpud_dtype_name(dt), b, i, got,
				      want);
		}
		free(ov->arr.data);
	}
	free(pv->arr.data);
	free(x);
	free(w);
	free(y);
	free(xd);
	free(wd);
	free(yd);
}
END_TEST

/* A batch must be 2-d with x's length last. */
START_TEST(test_check_batch)
{
	const kernel_def *k = ls_kernel();
	double v[12] = {0};
	for (int i = 0; i < 12; i++)
		v[i] = 0.1 * i;
	kernel_args a;
	char err[512] = "";
	/* (3, 4) against 4 samples passes; (4, 3) against 4 does not */
	ck_assert_msg(bind_batch(&a, GPUD_F64, v, v, v, 4, 3, 10, 0, err, sizeof(err)) == 0, "%s",
		      err);
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	bind(k, &a, LS_X, GPUD_F64, v, 4);
	kernel_array y = array1(GPUD_F64, v, 12);
	y.ndim = 2;
	y.shape[0] = 4;
	y.shape[1] = 3;
	ck_assert(kernel_bind_array(k, &k->params[LS_Y], &y, &a.v[LS_Y], err, sizeof(err)) == 0);
	bind_scalar(k, &a, LS_F0, KGIVEN_F64, 0, 0, 0.5);
	bind_scalar(k, &a, LS_DF, KGIVEN_F64, 0, 0, 0.5);
	bind_scalar(k, &a, LS_NF, KGIVEN_I64, 0, 10, 0);
	ck_assert(kernel_args_finish(&a, err, sizeof(err)) == 0);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "a batch y (B, N) must have x's length in its last dimension: x "
				  "has 4 samples, y is (4, 3)"),
		      "%s", err);
	/* 3-d */
	y.ndim = 3;
	y.shape[0] = 1;
	y.shape[1] = 3;
	y.shape[2] = 4;
	ck_assert(kernel_bind_array(k, &k->params[LS_Y], &y, &a.v[LS_Y], err, sizeof(err)) == 0);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "y must be 1-d (N samples) or 2-d (B series of N samples), got "
				  "3-d"),
		      "%s", err);
}
END_TEST

Suite *lombscargle_suite(void)
{
	Suite *s = suite_create("lombscargle");
	TCase *tc;

	tc = tcase_create("values");
	tcase_add_loop_test(tc, test_hand_worked, 0, 2 * NHAND);
	tcase_add_loop_test(tc, test_hand_worked_many_freqs, 0, 2);
	tcase_add_test(tc, test_ref_sums);
	tcase_add_loop_test(tc, test_random_against_reference, 0, 4);
	tcase_add_loop_test(tc, test_grid_equals_array, 0, 2);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("check");
	tcase_add_test(tc, test_check_length_mismatch);
	tcase_add_test(tc, test_check_dtype_mix);
	tcase_add_test(tc, test_check_given_output_dtype);
	tcase_add_test(tc, test_check_empty);
	tcase_add_test(tc, test_check_frequencies);
	tcase_add_test(tc, test_check_legacy);
	tcase_add_test(tc, test_check_method);
	tcase_add_test(tc, test_check_batch);
	tcase_add_loop_test(tc, test_check_output_expect, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("nufft");
	tcase_add_loop_test(tc, test_nufft_against_direct, 0, 6);
	tcase_add_test(tc, test_nufft_auto);
	tcase_add_loop_test(tc, test_batch, 0, 4);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);

	tc = tcase_create("verdict");
	tcase_add_loop_test(tc, test_verdict, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
