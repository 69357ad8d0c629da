/*
 * kernels/lombscargle/test_lombscargle.c — unit tests of kernels/lombscargle/lombscargle.c, called the
 * way gpud calls it: found in the kernel table, arguments bound and checked,
 * the output allocated from what check expects, then cpu_run over the items
 * (whole, and in pieces). Values are worked by hand below, and random inputs
 * are compared against an independent float64 implementation in this file.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "tests/unit/suites.h"

#define assert_has(err, want)                                                                      \
	ck_assert_msg(strstr((err), (want)) != NULL, "message '%s' lacks '%s'", (err), (want))

#define OMIT -1 /* leave a bool scalar to its default */

/* --- calling the kernel --------------------------------------------------------------- */

static const kernel_def *ls_kernel(void)
{
	const kernel_def *k = kernel_find("lombscargle");

	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(kernel_param_index(k, "x"), LS_X);
	ck_assert_int_eq(kernel_param_index(k, "y"), LS_Y);
	ck_assert_int_eq(kernel_param_index(k, "freqs"), LS_FREQS);
	ck_assert_int_eq(kernel_param_index(k, "pgram"), LS_PGRAM);
	ck_assert_int_eq(kernel_param_index(k, "precenter"), LS_PRECENTER);
	ck_assert_int_eq(kernel_param_index(k, "normalize"), LS_NORMALIZE);
	return k;
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

static void bind_bool(const kernel_def *k, kernel_args *a, int idx, int b)
{
	char err[512] = "";

	if (b == OMIT)
		return;
	ck_assert_msg(kernel_bind_scalar(k, &k->params[idx], KGIVEN_BOOL, b, 0, 0.0, &a->v[idx],
					 err, sizeof(err)) == 0,
		      "%s", err);
}

static void poison(const kernel_array *o)
{
	for (size_t i = 0; i < o->count; i++) {
		if (o->dtype == GPUD_F32)
			((float *)o->data)[i] = NAN;
		else
			((double *)o->data)[i] = NAN;
	}
}

static double get(const kernel_array *o, size_t i)
{
	return o->dtype == GPUD_F32 ? (double)((const float *)o->data)[i]
				    : ((const double *)o->data)[i];
}

/*
 * Runs lombscargle(x, y, freqs, precenter, normalize) in dtype dt and stores
 * the periodogram, as doubles, in out[nf]. The output is poisoned with NaN
 * before every run and must hold no NaN afterwards; running the items in
 * pieces must give the same bits as one run over all of them.
 */
static void run_ls(gpud_dtype dt, const double *x, const double *y, size_t n, const double *f,
		   size_t nf, int precenter, int normalize, double *out)
{
	const kernel_def *k = ls_kernel();
	kernel_args a;
	char err[512] = "";
	void *xd = convert(dt, x, n), *yd = convert(dt, y, n), *fd = convert(dt, f, nf);

	memset(&a, 0, sizeof(a));
	a.kernel = k;
	bind(k, &a, LS_X, dt, xd, n);
	bind(k, &a, LS_Y, dt, yd, n);
	bind(k, &a, LS_FREQS, dt, fd, nf);
	bind_bool(k, &a, LS_PRECENTER, precenter);
	bind_bool(k, &a, LS_NORMALIZE, normalize);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(k->check(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, dt);
	ck_assert_int_eq(a.v[LS_PRECENTER].s.b, precenter == 1);
	ck_assert_int_eq(a.v[LS_NORMALIZE].s.b, normalize == 1);

	/* the output, allocated the way the daemon does */
	kernel_value *pv = &a.v[LS_PGRAM];
	ck_assert_int_eq(pv->present, 0);
	ck_assert_int_eq(pv->expect.dtype, dt);
	ck_assert_int_eq(pv->expect.ndim, 1);
	ck_assert_uint_eq(pv->expect.shape[0], nf);
	ck_assert_uint_eq(pv->expect.count, nf);
	pv->arr = pv->expect;
	pv->arr.data = malloc((nf ? nf : 1) * gpud_dtype_size(dt));
	ck_assert_ptr_nonnull(pv->arr.data);
	pv->present = 1;
	ck_assert_uint_eq(k->cpu_items(&a), nf);

	poison(&pv->arr);
	k->cpu_run(&a, 0, nf);
	for (size_t i = 0; i < nf; i++) {
		out[i] = get(&pv->arr, i);
		ck_assert_msg(!isnan(out[i]), "pgram[%zu] is NaN", i);
	}

	/* the same items in pieces: [0, c) and [c, nf), and one item at a time */
	size_t cuts[] = {0, 1, nf / 3, nf / 2, nf > 0 ? nf - 1 : 0, nf};
	size_t bytes = nf * gpud_dtype_size(dt);
	void *whole = malloc(bytes ? bytes : 1);
	ck_assert_ptr_nonnull(whole);
	memcpy(whole, pv->arr.data, bytes);
	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		if (cuts[c] > nf)
			continue;
		poison(&pv->arr);
		k->cpu_run(&a, cuts[c], nf);
		k->cpu_run(&a, 0, cuts[c]);
		ck_assert_msg(memcmp(whole, pv->arr.data, bytes) == 0,
			      "[0,%zu) + [%zu,%zu) differs from [0,%zu)", cuts[c], cuts[c], nf, nf);
	}
	poison(&pv->arr);
	for (size_t i = nf; i-- > 0;)
		k->cpu_run(&a, i, i + 1);
	ck_assert_msg(memcmp(whole, pv->arr.data, bytes) == 0, "item-by-item run differs");

	free(whole);
	free(pv->arr.data);
	free(xd);
	free(yd);
	free(fd);
}

/* --- hand-worked values ------------------------------------------------------------ */

/*
 * With c_j = cos(f x_j), s_j = sin(f x_j) and Y_j = y_j (minus mean(y) with
 * precenter):
 *
 *   xc = sum Y c, xs = sum Y s, cc = sum c^2, ss = sum s^2, cs = sum c s
 *   tau = atan2(2 cs, cc - ss) / (2 f),  C = cos(f tau), S = sin(f tau)
 *   P = 1/2 [ (C xc + S xs)^2 / (C^2 cc + 2CS cs + S^2 ss)
 *           + (C xs - S xc)^2 / (C^2 ss - 2CS cs + S^2 cc) ]
 *
 * normalize multiplies P by 2 / sum y^2 of the uncentred y.
 *
 * A. x = [0, pi/2], f = 1: c = [1, 0], s = [0, 1], so cc = ss = 1, cs = 0,
 *    and tau = 0 (C = 1, S = 0), P = 1/2 (xc^2 / cc + xs^2 / ss)
 *    = 1/2 (Y_0^2 + Y_1^2). (In floating point cos(pi/2) is 6e-17, cs > 0
 *    and cc - ss = 0, so tau comes out pi/4 instead; P does not depend on tau
 *    and the result is the same to rounding.)
 *      y = [1, 1]:               P = 1/2 (1 + 1) = 1
 *        normalize:              2 / (1 + 1) * 1 = 1
 *        precenter, Y = [0, 0]:  P = 0
 *      y = [1, 3]:               P = 1/2 (1 + 9) = 5
 *        normalize:              2 / (1 + 9) * 5 = 1
 *        precenter, Y = [-1, 1]: P = 1/2 (1 + 1) = 1
 *        both:                   2 / 10 * 1 = 0.2 (the uncentred sum y^2)
 *
 * B. x = [0, pi/4], y = [1, 0], f = 1: with r = sqrt(1/2), c = [1, r],
 *    s = [0, r]; xc = 1, xs = 0, cc = 3/2, ss = 1/2, cs = 1/2, so
 *    tau = atan2(1, 1) / 2 = pi/8. Let C = cos(pi/8), S = sin(pi/8):
 *    C^2 = (1 + r)/2, S^2 = (1 - r)/2, CS = sin(pi/4)/2 = r/2.
 *      first denominator  3/2 C^2 + r/2 + 1/2 S^2 = 1/2 + C^2 + r/2 = 1 + r
 *      second denominator 1/2 C^2 - r/2 + 3/2 S^2 = 1/2 + S^2 - r/2 = 1 - r
 *      P = 1/2 [ C^2 / (1 + r) + S^2 / (1 - r) ] = 1/2 [1/2 + 1/2] = 0.5
 */
static const struct {
	double x1, y0, y1;
	int precenter, normalize;
	double want;
} hand[] = {
	{M_PI / 2, 1, 1, OMIT, OMIT, 1.0}, {M_PI / 2, 1, 1, 0, 0, 1.0},
	{M_PI / 2, 1, 1, OMIT, 1, 1.0},    {M_PI / 2, 1, 1, 1, OMIT, 0.0},
	{M_PI / 2, 1, 1, 1, 1, 0.0},       {M_PI / 2, 1, 3, OMIT, OMIT, 5.0},
	{M_PI / 2, 1, 3, 0, 1, 1.0},       {M_PI / 2, 1, 3, 1, 0, 1.0},
	{M_PI / 2, 1, 3, 1, 1, 0.2},       {M_PI / 4, 1, 0, OMIT, OMIT, 0.5},
	{M_PI / 4, 1, 0, 0, 0, 0.5},
};
#define NHAND ((int)(sizeof(hand) / sizeof(hand[0])))

/* Loop index: case i in float64 for i < NHAND, case i - NHAND in float32 after. */
START_TEST(test_hand_worked)
{
	int i = _i % NHAND;
	gpud_dtype dt = _i < NHAND ? GPUD_F64 : GPUD_F32;
	double tol = dt == GPUD_F64 ? 1e-12 : 1e-6;
	double x[2] = {0.0, hand[i].x1}, y[2] = {hand[i].y0, hand[i].y1}, f[1] = {1.0};
	double got;

	run_ls(dt, x, y, 2, f, 1, hand[i].precenter, hand[i].normalize, &got);
	ck_assert_msg(fabs(got - hand[i].want) <= tol,
		      "%s case %d (precenter %d, normalize %d): got %.17g, want %.17g",
		      gpud_dtype_name(dt), i, hand[i].precenter, hand[i].normalize, got,
		      hand[i].want);
}
END_TEST

/* Several frequencies at once: case A's y = [1, 3] at f = 1 repeated, and case B. */
START_TEST(test_hand_worked_many_freqs)
{
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	double tol = dt == GPUD_F64 ? 1e-12 : 1e-6;
	double x[2] = {0.0, M_PI / 2}, y[2] = {1, 3}, f[5] = {1, 1, 1, 1, 1}, got[5];

	run_ls(dt, x, y, 2, f, 5, OMIT, OMIT, got);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(fabs(got[i] - 5.0) <= tol, "pgram[%d] = %.17g", i, got[i]);
	/* B scaled: x' = x / 2 at f = 2 gives the same f x, so the same P */
	double xb[2] = {0.0, M_PI / 8}, yb[2] = {1, 0}, fb[2] = {2, 2};
	run_ls(dt, xb, yb, 2, fb, 2, 0, 0, got);
	ck_assert_msg(fabs(got[0] - 0.5) <= tol, "pgram[0] = %.17g", got[0]);
	ck_assert_msg(fabs(got[1] - 0.5) <= tol, "pgram[1] = %.17g", got[1]);
}
END_TEST

/* --- an independent reference ------------------------------------------------------ */

/* scipy's algorithm, straight from its definition, in float64. */
static void reference(const double *x, const double *y, size_t n, const double *f, size_t nf,
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

/* Loop index: the seed. Every combination of precenter and normalize, both dtypes. */
START_TEST(test_random_against_reference)
{
	size_t n = 17 + 29 * (size_t)_i, nf = 53;
	double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
	double *f = malloc(nf * sizeof(double)), *want = malloc(nf * sizeof(double));
	double *got = malloc(nf * sizeof(double));
	double *xr = malloc(n * sizeof(double)), *yr = malloc(n * sizeof(double));
	double *fr = malloc(nf * sizeof(double));
	ck_assert(x && y && f && want && got && xr && yr && fr);

	rng_state = 0x853c49e6748fea9bull * (uint64_t)(_i + 1);
	double t = 0;
	for (size_t j = 0; j < n; j++) {
		t += uniform(0.01, 0.5); /* irregular, increasing sample times */
		x[j] = t;
		y[j] = 1.5 + uniform(-2, 2);
	}
	for (size_t i = 0; i < nf; i++)
		f[i] = uniform(0.05, 25);

	for (int dti = 0; dti < 2; dti++) {
		gpud_dtype dt = dti ? GPUD_F32 : GPUD_F64;
		/* the float32 run sees its inputs rounded; so does the reference */
		for (size_t j = 0; j < n; j++) {
			xr[j] = dt == GPUD_F32 ? (double)(float)x[j] : x[j];
			yr[j] = dt == GPUD_F32 ? (double)(float)y[j] : y[j];
		}
		for (size_t i = 0; i < nf; i++)
			fr[i] = dt == GPUD_F32 ? (double)(float)f[i] : f[i];
		for (int combo = 0; combo < 4; combo++) {
			int pre = combo & 1, norm = combo >> 1;
			reference(xr, yr, n, fr, nf, pre, norm, want);
			run_ls(dt, x, y, n, f, nf, pre, norm, got);
			for (size_t i = 0; i < nf; i++) {
				double w = dt == GPUD_F32 ? (double)(float)want[i] : want[i];
				double tol = (dt == GPUD_F32 ? 1e-6 : 1e-10) * fmax(1.0, fabs(w));
				ck_assert_msg(fabs(got[i] - w) <= tol,
					      "seed %d %s precenter %d normalize %d f[%zu] = %g: "
					      "got %.17g, want %.17g",
					      _i, gpud_dtype_name(dt), pre, norm, i, fr[i], got[i],
					      w);
			}
		}
	}
	free(x);
	free(y);
	free(f);
	free(want);
	free(got);
	free(xr);
	free(yr);
	free(fr);
}
END_TEST

/* --- check --------------------------------------------------------------------------- */

/* Binds x, y (lengths nx, ny, dtypes dx, dy) and freqs, finishes, and runs check. */
static int check_with(gpud_dtype dx, size_t nx, gpud_dtype dy, size_t ny, gpud_dtype df, size_t nf,
		      kernel_args *a, char *err, size_t errlen)
{
	static double buf[64];
	const kernel_def *k = ls_kernel();

	memset(a, 0, sizeof(*a));
	a->kernel = k;
	bind(k, a, LS_X, dx, buf, nx);
	bind(k, a, LS_Y, dy, buf, ny);
	bind(k, a, LS_FREQS, df, buf, nf);
	ck_assert_msg(kernel_args_finish(a, err, errlen) == 0, "%s", err);
	err[0] = '\0';
	return k->check(a, err, errlen);
}

START_TEST(test_check_length_mismatch)
{
	kernel_args a;
	char err[512];

	ck_assert_int_eq(check_with(GPUD_F64, 5, GPUD_F64, 7, GPUD_F64, 3, &a, err, sizeof(err)),
			 -1);
	assert_has(err, "lombscargle");
	assert_has(err, "same length");
	assert_has(err, "5 and 7");
	ck_assert_int_eq(check_with(GPUD_F32, 12, GPUD_F32, 11, GPUD_F32, 3, &a, err, sizeof(err)),
			 -1);
	assert_has(err, "12 and 11");
}
END_TEST

START_TEST(test_check_dtype_mix)
{
	kernel_args a;
	char err[512];

	ck_assert_int_eq(check_with(GPUD_F64, 4, GPUD_F32, 4, GPUD_F64, 3, &a, err, sizeof(err)),
			 -1);
	assert_has(err, "one dtype");
	assert_has(err, "'y' is float32");
	assert_has(err, "'x' is float64");
	ck_assert_int_eq(check_with(GPUD_F32, 4, GPUD_F32, 4, GPUD_F64, 3, &a, err, sizeof(err)),
			 -1);
	assert_has(err, "'freqs' is float64");
	assert_has(err, "'x' is float32");
}
END_TEST

/* An output the client passes takes part in the dtype check too. */
START_TEST(test_check_given_output_dtype)
{
	const kernel_def *k = ls_kernel();
	static double buf[8];
	kernel_args a;
	char err[512] = "";

	memset(&a, 0, sizeof(a));
	a.kernel = k;
	bind(k, &a, LS_X, GPUD_F64, buf, 4);
	bind(k, &a, LS_Y, GPUD_F64, buf, 4);
	bind(k, &a, LS_FREQS, GPUD_F64, buf, 2);
	bind(k, &a, LS_PGRAM, GPUD_F32, buf, 2);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), -1);
	assert_has(err, "'pgram' is float32");
	assert_has(err, "'x' is float64");
}
END_TEST

START_TEST(test_check_empty)
{
	kernel_args a;
	char err[512];

	ck_assert_int_eq(check_with(GPUD_F64, 0, GPUD_F64, 0, GPUD_F64, 3, &a, err, sizeof(err)),
			 -1);
	assert_has(err, "lombscargle");
	assert_has(err, "must not be empty");
	/* a mismatch is reported before emptiness */
	ck_assert_int_eq(check_with(GPUD_F64, 0, GPUD_F64, 2, GPUD_F64, 3, &a, err, sizeof(err)),
			 -1);
	assert_has(err, "0 and 2");
}
END_TEST

START_TEST(test_check_output_expect)
{
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	kernel_args a;
	char err[512];

	ck_assert_msg(check_with(dt, 6, dt, 6, dt, 9, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, dt);
	ck_assert_int_eq(a.v[LS_PGRAM].expect.dtype, dt);
	ck_assert_int_eq(a.v[LS_PGRAM].expect.ndim, 1);
	ck_assert_uint_eq(a.v[LS_PGRAM].expect.shape[0], 9);
	ck_assert_uint_eq(a.v[LS_PGRAM].expect.count, 9);
	/* the output's length follows freqs, not x */
	ck_assert_msg(check_with(dt, 40, dt, 40, dt, 1, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(a.v[LS_PGRAM].expect.shape[0], 1);
	ck_assert_uint_eq(a.v[LS_PGRAM].expect.count, 1);
	/* no frequencies: an empty output */
	ck_assert_msg(check_with(dt, 3, dt, 3, dt, 0, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(a.v[LS_PGRAM].expect.shape[0], 0);
	ck_assert_uint_eq(a.v[LS_PGRAM].expect.count, 0);
}
END_TEST

Suite *lombscargle_suite(void)
{
	Suite *s = suite_create("lombscargle");
	TCase *tc;

	tc = tcase_create("values");
	tcase_add_loop_test(tc, test_hand_worked, 0, 2 * NHAND);
	tcase_add_loop_test(tc, test_hand_worked_many_freqs, 0, 2);
	tcase_add_loop_test(tc, test_random_against_reference, 0, 4);
	suite_add_tcase(s, tc);

	tc = tcase_create("check");
	tcase_add_test(tc, test_check_length_mismatch);
	tcase_add_test(tc, test_check_dtype_mix);
	tcase_add_test(tc, test_check_given_output_dtype);
	tcase_add_test(tc, test_check_empty);
	tcase_add_loop_test(tc, test_check_output_expect, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
