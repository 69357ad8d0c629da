/*
 * kernels/lombscargle/test_lombscargle_nufft.c — method=nufft (nufft.c) against
 * the direct sums on random uneven samples with gaps, in every mode and both
 * dtypes; grids starting where the phases hardly spread; method=auto;
 * and a batch y (B, N), each row what its series alone gives, run in
 * pieces that cross the rows. Harness: test_lombscargle_util.c.
 * Each test runs single-threaded in its own process.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/test_lombscargle.h"

/* --- method=nufft (nufft.c): against the direct reference ------------------------------ */

/* The modes: {normalize, precenter, floating_mean, weights, legacy}. */
static const int nufft_modes[][5] = {
	{LS_POWER, 0, 0, 0, 0},      {LS_NORMALIZED, 1, 0, 0, 0}, {LS_POWER, 0, 1, 1, 0},
	{LS_NORMALIZED, 0, 1, 1, 0}, {LS_AMPLITUDE, 0, 1, 1, 0},  {LS_AMPLITUDE, 1, 0, 1, 0},
	{LS_NORMALIZED, 1, 0, 0, 1}, {LS_POWER, 0, 0, 0, 1},      {LS_NORMALIZED, 1, 1, 1, 0},
};
#define NNUFFT_MODES (int)(sizeof(nufft_modes) / sizeof(nufft_modes[0]))

/* A test's samples (x, y, w: n) and two results (re, im: nf), direct's [0] and the NUFFT's [1]. */
typedef struct nu_bufs {
	double *x, *y, *w, *re[2], *im[2];
} nu_bufs;

static nu_bufs nu_bufs_new(size_t n, size_t nf)
{
	nu_bufs b;
	b.x = malloc(n * sizeof(double));
	b.y = malloc(n * sizeof(double));
	b.w = malloc(n * sizeof(double));
	ck_assert(b.x && b.y && b.w);
	for (int k = 0; k < 2; k++) {
		b.re[k] = malloc(nf * sizeof(double));
		b.im[k] = malloc(nf * sizeof(double));
		ck_assert(b.re[k] && b.im[k]);
	}
	return b;
}

static void nu_bufs_free(nu_bufs *b)
{
	for (int k = 0; k < 2; k++) {
		free(b->re[k]);
		free(b->im[k]);
	}
	free(b->x);
	free(b->y);
	free(b->w);
}

/* c run directly, then by the NUFFT (its nf frequencies): the largest
 * difference over the largest direct value. */
static double nufft_vs_direct(gpud_dtype dt, ls_case *c, nu_bufs *b, size_t nf)
{
	c->method = LS_DIRECT;
	ls_run_plain(dt, c, b->re[0], b->im[0]);
	c->method = LS_NUFFT;
	ls_run_plain(dt, c, b->re[1], b->im[1]);
	return ls_rel_err(nf, b->re[1], b->im[1], b->re[0], b->im[0]);
}

/* Without FFTW3 the NUFFT is the direct path: the test says so and still runs. */
static void note_fftw(const char *test)
{
	char why[512];
	if (!ls_nufft_cpu_available(why, sizeof(why)))
		fprintf(stderr, "%s: no FFTW3, the direct path only: %s\n", test, why);
}

START_TEST(test_nufft_against_direct)
{
	note_fftw("test_nufft_against_direct");
	gpud_dtype dt = _i % 2 ? GPUD_F32 : GPUD_F64;
	static const size_t sizes[][2] = {{10, 1000}, {300, 5000}, {1000, 10000}};
	size_t n = sizes[_i / 2 % 3][0], nf = sizes[_i / 2 % 3][1];
	nu_bufs b = nu_bufs_new(n, nf);
	double *x = b.x, *y = b.y, *w = b.w;
	ls_rng_state = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL) ^ ((uint64_t)_i << 32);
	uint64_t seed = ls_rng_state;
	double T = ls_uniform(50, 2000);
	ls_gapped(n, x, y, w, T);
	for (int mi = 0; mi < NNUFFT_MODES; mi++) {
		const int *md = nufft_modes[mi];
		double eps = mi == 3 && dt == GPUD_F64 ? 1e-11 : mi == 4 ? 1e-4 : 0;
		ls_case c = ls_lcase(x, y, n);
		/* up to ~8 times the mean sampling rate */
		double fmax = ls_uniform(1, 8) * 2 * M_PI * (double)n / T,
		       f0 = ls_uniform(2, 20) * 2 * M_PI / T;
		ls_set_grid(&c, f0, (fmax - f0) / (double)nf, (int64_t)nf);
		c.normalize = md[0];
		c.precenter = md[1];
		c.floating_mean = md[2];
		c.w = md[3] ? w : NULL;
		c.legacy = md[4];
		c.eps = eps;
		double e = nufft_vs_direct(dt, &c, &b, nf);
		double want = eps > 0 ? eps : dt == GPUD_F32 ? 1e-5 : 1e-9;
		ck_assert_msg(
			e <= want,
			"%s n=%zu nf=%zu mode %d (seed %llx): nufft vs direct %.3g > eps %.3g",
			gpud_dtype_name(dt), n, nf, mi, (unsigned long long)seed, e, want);
	}
	nu_bufs_free(&b);
}
END_TEST

/*
 * Grids that start where the phases hardly spread over the samples: the
 * lowest frequency's phases span phi = f0 (max x - min x) radians, where
 * the epilogue divides the sums' error by CC - C^2 (about phi^4) or CC and
 * SS (ls_nufft_tol says how much). Within eps of the direct sums from phi
 * = 0.2 for eps of 1e-6 and more (float32's default 1e-5, float64's 1e-6)
 * and from 0.4 for float64's default 1e-9 (there the transforms' own
 * floor, ~1e-14, stops it: 3 eps at 0.2), with floating_mean (power,
 * normalize, amplitude) and the amplitude without it, weighted, 40 and 1000
 * samples. With the float64 grids' tolerance at eps / 30, as it was for eps
 * of 1e-7 and more, these missed 1e-5 and 1e-6 by 10 to 1000 times.
 */
START_TEST(test_nufft_low_phase_span)
{
	static const int modes[][3] = {/* normalize, floating_mean, weights */
				       {LS_AMPLITUDE, 1, 1},
				       {LS_POWER, 1, 1},
				       {LS_NORMALIZED, 1, 0},
				       {LS_AMPLITUDE, 0, 1}};
	static const double phis[] = {0.2, 0.4, 0.8};
	note_fftw("test_nufft_low_phase_span");
	const gpud_dtype dt = _i % 3 == 0 ? GPUD_F32 : GPUD_F64;
	const double eps = _i % 3 == 1 ? 1e-6 : 0; /* 0: the dtype's default */
	const size_t n = _i < 3 ? 40 : 1000, nf = 2000;
	nu_bufs b = nu_bufs_new(n, nf);
	double *x = b.x, *y = b.y, *w = b.w;
	ls_rng_state = 0x2545f4914f6cdd1dull ^ (uint64_t)time(NULL) ^ ((uint64_t)_i << 40);
	const uint64_t seed = ls_rng_state;
	const double T = ls_uniform(10, 1000);
	ls_gapped(n, x, y, w, T);
	double lo = x[0], hi = x[0];
	for (size_t j = 1; j < n; j++) {
		lo = fmin(lo, x[j]);
		hi = fmax(hi, x[j]);
	}
	const double want = eps > 0 ? eps : dt == GPUD_F32 ? 1e-5 : 1e-9;
	/* float64's default from 0.4 */
	for (size_t pi = eps == 0 && dt == GPUD_F64; pi < sizeof(phis) / sizeof(phis[0]); pi++) {
		for (size_t mi = 0; mi < sizeof(modes) / sizeof(modes[0]); mi++) {
			ls_case c = ls_lcase(x, y, n);
			/* from phi up to twice the mean sampling rate */
			double f0 = phis[pi] / (hi - lo), fmax = 2 * 2 * M_PI * (double)n / T;
			ls_set_grid(&c, f0, (fmax - f0) / (double)nf, (int64_t)nf);
			c.normalize = modes[mi][0];
			c.floating_mean = modes[mi][1];
			c.w = modes[mi][2] ? w : NULL;
			c.eps = eps;
			double e = nufft_vs_direct(dt, &c, &b, nf);
			ck_assert_msg(e <= want,
				      "%s n=%zu phi=%g mode %zu eps %g (seed %llx): nufft vs "
				      "direct %.3g > %.3g",
				      gpud_dtype_name(dt), n, phis[pi], mi, eps,
				      (unsigned long long)seed, e, want);
		}
	}
	nu_bufs_free(&b);
}
END_TEST

/* method=auto: direct on arrays and small grids; results within eps either way. */
START_TEST(test_nufft_auto)
{
	const size_t n = 400, nf = 30000;
	nu_bufs b = nu_bufs_new(n, nf);
	ls_rng_state = 0x51ed270b27e5f1a3ull;
	ls_gapped(n, b.x, b.y, b.w, 100);
	ls_case c = ls_lcase(b.x, b.y, n);
	ls_set_grid(&c, 0.5, 0.01, (int64_t)nf);
	c.method = LS_DIRECT;
	ls_run_plain(GPUD_F64, &c, b.re[0], b.im[0]);
	c.method = OMIT; /* auto */
	ls_run_plain(GPUD_F64, &c, b.re[1], b.im[1]);
	ck_assert(ls_rel_err(nf, b.re[1], b.im[1], b.re[0], b.im[0]) <= 1e-9);
	nu_bufs_free(&b);
}
END_TEST

/*
 * A batch: y (B, N) on one x gives B rows, each what the series alone gives
 * (direct bit for bit, the NUFFT to eps; float32 and float64, weights,
 * amplitude), the items run in pieces that cross the rows. Loop _i: method
 * (0 direct, 1 nufft) x dtype.
 */
START_TEST(test_batch)
{
	const int method = _i / 2;
	const gpud_dtype dt = _i % 2 ? GPUD_F32 : GPUD_F64;
	const size_t n = 400, nb = 3;
	const int64_t nf = 1500;
	char err[512] = "";
	double *xd = malloc(n * sizeof(double)), *wd = malloc(n * sizeof(double)),
	       *yd = malloc(nb * n * sizeof(double));
	ck_assert(xd && wd && yd);
	ls_rng_state = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL) ^ ((uint64_t)_i << 32);
	for (size_t b = 0; b < nb; b++)
		ls_gapped(n, xd, yd + b * n, wd, 300); /* x and w: the last series' */
	void *x = ls_convert(dt, xd, n), *w = ls_convert(dt, wd, n),
	     *y = ls_convert(dt, yd, nb * n);
	size_t esz = gpud_dtype_size(dt), osz = 2 * esz;

	kernel_args a;
	ck_assert_msg(ls_bind_batch(&a, dt, x, y, w, n, nb, nf, method, err, sizeof(err)) == 0,
		      "%s", err);
	kernel_value *pv = &a.v[LS_PGRAM];
	ck_assert_int_eq(pv->expect.ndim, 2);
	ck_assert_uint_eq(pv->expect.shape[0], nb);
	ck_assert_uint_eq(pv->expect.shape[1], (uint64_t)nf);
	ck_assert_uint_eq(lombscargle_series(&a), nb);
	pv->arr = pv->expect;
	pv->arr.data = malloc(pv->arr.count * osz);
	pv->present = 1;
	ls_poison(&pv->arr);
	size_t items = ls_test_items(&a), cut1 = (size_t)nf - 7, cut2 = 2 * (size_t)nf + 5;
	ck_assert_uint_eq(items, nb * (size_t)nf);
	ls_test_run(&a, 0, cut1); /* pieces that cross the rows */
	ls_test_run(&a, cut1, cut2);
	ls_test_run(&a, cut2, items);

	for (size_t b = 0; b < nb; b++) {
		kernel_args one;
		ck_assert_msg(ls_bind_batch(&one, dt, x, (char *)y + b * n * esz, w, n, 0, nf,
					    method, err, sizeof(err)) == 0,
			      "%s", err);
		kernel_value *ov = &one.v[LS_PGRAM];
		ov->arr = ov->expect;
		ov->arr.data = malloc(ov->arr.count * osz);
		ov->present = 1;
		ls_poison(&ov->arr);
		ls_test_run(&one, 0, (size_t)nf);
		/* direct: the same bits; the NUFFT transforms each piece of the
		 * items as a grid of its own, so the pieces' rounding differs: to
		 * eps of the row's largest value */
		const char *row = (const char *)pv->arr.data + b * (size_t)nf * osz;
		double big = 0;
		for (size_t i = 0; i < 2 * (size_t)nf; i++)
			big = fmax(big, fabs(ls_get(&ov->arr, i)));
		const double tol = method ? (dt == GPUD_F32 ? 1e-5 : 1e-9) * big : 0;
		for (size_t i = 0; i < 2 * (size_t)nf; i++) {
			double got = esz == 4 ? ((const float *)row)[i] : ((const double *)row)[i];
			double want = ls_get(&ov->arr, i);
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

void lombscargle_nufft_tcases(Suite *s)
{
	TCase *tc = tcase_create("nufft");

	tcase_add_loop_test(tc, test_nufft_against_direct, 0, 6);
	tcase_add_loop_test(tc, test_nufft_low_phase_span, 0, 6);
	tcase_add_test(tc, test_nufft_auto);
	tcase_add_loop_test(tc, test_batch, 0, 4);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
}
