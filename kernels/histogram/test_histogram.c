/* kernels/histogram/test_histogram.c — histogram on the CPU: hand-worked counts (each
 * checked against numpy 1.24's np.histogram), values on edges, NaN and
 * infinities, the widened empty range, integers, float32 edge rounding, and
 * every check with its message (kernels/histogram/histogram.c). The GPU tests compare
 * against this reference. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/histogram/histogram.h"
#include "tests/unit/suites.h"

#define assert_has(s, want)                                                                        \
	ck_assert_msg(strstr((s), (want)) != NULL, "'%s' lacks '%s'", (s), (want))

/*
 * Binds x (n elements of dt), bins (unless < -1000: the default), range_min
 * and range_max through the table's binders, checks, and runs the CPU
 * reference into counts. 0, or -1 with the message in err.
 */
static int hist(gpud_dtype dt, size_t n, const void *x, int64_t bins, double lo, double hi,
		int64_t *counts, char *err, size_t errlen)
{
	const kernel_def *k = kernel_find("histogram");
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	kernel_array ax = {.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = (void *)x};
	if (kernel_bind_array(k, &k->params[HIST_X], &ax, &a.v[HIST_X], err, errlen) != 0)
		return -1;
	if (bins > -1000 && kernel_bind_scalar(k, &k->params[HIST_BINS], KGIVEN_I64, 0, bins, 0,
					       &a.v[HIST_BINS], err, errlen) != 0)
		return -1;
	if (kernel_bind_scalar(k, &k->params[HIST_MIN], KGIVEN_F64, 0, 0, lo, &a.v[HIST_MIN], err,
			       errlen) != 0 ||
	    kernel_bind_scalar(k, &k->params[HIST_MAX], KGIVEN_F64, 0, 0, hi, &a.v[HIST_MAX], err,
			       errlen) != 0)
		return -1;
	if (kernel_args_finish(&a, err, errlen) != 0 || k->check(&a, err, errlen) != 0)
		return -1;
	const kernel_array *e = &a.v[HIST_COUNTS].expect;
	ck_assert_int_eq(e->dtype, GPUD_I64);
	ck_assert_int_eq(e->ndim, 1);
	ck_assert_uint_eq(e->shape[0], (uint64_t)a.v[HIST_BINS].s.i64);
	a.v[HIST_COUNTS].arr = *e;
	a.v[HIST_COUNTS].arr.data = counts;
	a.v[HIST_COUNTS].present = 1;
	for (size_t i = 0; i < e->count; i++)
		counts[i] = -7; /* every count must be written */
	cpu_kernel_of(k)->run(&a, 0, cpu_kernel_of(k)->items(&a));
	return 0;
}

static void assert_counts(const int64_t *got, const int64_t *want, int bins, const char *what)
{
	for (int i = 0; i < bins; i++)
		ck_assert_msg(got[i] == want[i], "%s: bin %d counted %lld, expected %lld", what, i,
			      (long long)got[i], (long long)want[i]);
}

#define HIST_OK(dt, x, n, bins, lo, hi, ...)                                                       \
	do {                                                                                       \
		int64_t c_[64], w_[] = {__VA_ARGS__};                                              \
		char e_[512];                                                                      \
		ck_assert_msg(hist(dt, n, x, bins, lo, hi, c_, e_, sizeof(e_)) == 0, "%s", e_);    \
		assert_counts(c_, w_, (int)(sizeof(w_) / sizeof(w_[0])), #x);                      \
	} while (0)

START_TEST(test_edges_and_outside)
{
	/* np.histogram([0, .5, 1, 1.5, 2, 2.5, 3, 3.5, 4], bins=4, range=(0., 4.)): the last
	 * bin is closed, every other edge belongs to the bin above it */
	double x[9] = {0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4};
	HIST_OK(GPUD_F64, x, 9, 4, 0.0, 4.0, 2, 2, 2, 3);
	float xf[9] = {0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4};
	HIST_OK(GPUD_F32, xf, 9, 4, 0.0, 4.0, 2, 2, 2, 3);
	/* below, above, NaN, ±inf are dropped; range_max itself is kept */
	double out[6] = {-0.1, 4.0000001, NAN, INFINITY, -INFINITY, 4};
	HIST_OK(GPUD_F64, out, 6, 4, 0.0, 4.0, 0, 0, 0, 1);
	float outf[6] = {-0.1f, 4.0000005f, NAN, INFINITY, -INFINITY, 4};
	HIST_OK(GPUD_F32, outf, 6, 4, 0.0, 4.0, 0, 0, 0, 1);
	/* bins=1: both ends in the one bin */
	double one[3] = {-2, 5, 7.5};
	HIST_OK(GPUD_F64, one, 3, 1, -2.0, 7.5, 3);
	/* no samples: zeros */
	HIST_OK(GPUD_F32, xf, 0, 3, 0.0, 1.0, 0, 0, 0);
	/* bins defaults to numpy's 10 */
	float half = 0.5f;
	HIST_OK(GPUD_F32, &half, 1, -2000, 0.0, 1.0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0);
}
END_TEST

START_TEST(test_empty_range_widened)
{
	/* range (2, 2) becomes (1.5, 2.5): edges 1.5, 2, 2.5 */
	double x[6] = {1.5, 1.9, 2, 2.5, 2.6, 1.4};
	HIST_OK(GPUD_F64, x, 6, 2, 2.0, 2.0, 2, 2);
	/*
	 * float32 at 1e7: 1e7 - 0.5 and 1e7 + 0.5 round to 1e7 in float32, so every edge
	 * is 1e7; numpy's estimate is bin 0, its increment (x >= edge[1]) moves it to 1
	 */
	float big = 1e7f;
	HIST_OK(GPUD_F32, &big, 1, 3, 1e7, 1e7, 0, 1, 0);
}
END_TEST

START_TEST(test_integers)
{
	/* converted to float64 (numpy's bin type for integers) */
	int32_t xi[7] = {-3, 0, 1, 2, 9, 10, 11};
	HIST_OK(GPUD_I32, xi, 7, 5, 0.0, 10.0, 2, 1, 0, 0, 2);
	int64_t xl[7] = {-3, 0, 1, 2, 9, 10, 11};
	HIST_OK(GPUD_I64, xl, 7, 5, 0.0, 10.0, 2, 1, 0, 0, 2);
	/*
	 * 2^53 + 1 becomes 2^53 in float64, and so does the edge 2^53 + 1 between the
	 * two bins: numpy counts it in the upper bin
	 */
	int64_t l = (1ll << 53) + 1;
	HIST_OK(GPUD_I64, &l, 1, 2, 9007199254740992.0, 9007199254740994.0, 0, 1);
}
END_TEST

START_TEST(test_float32_rounding)
{
	/*
	 * float32 x compares with range_max rounded to float32: 0.1f (above the double
	 * 0.1) is kept; the same value as float64 is not
	 */
	float f = 0.1f;
	double d = (double)0.1f;
	HIST_OK(GPUD_F32, &f, 1, 2, 0.0, 0.1, 0, 1);
	HIST_OK(GPUD_F64, &d, 1, 2, 0.0, 0.1, 0, 0);
	/*
	 * edge 7 of linspace(0, 1, 11) is 0.7000000000000001 in float64 and 0.7f
	 * (below it) in float32: 0.7f is in bin 7 as float32, bin 6 as float64
	 */
	float f7 = 0.7f;
	double d7 = (double)0.7f;
	HIST_OK(GPUD_F32, &f7, 1, 10, 0.0, 1.0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0);
	HIST_OK(GPUD_F64, &d7, 1, 10, 0.0, 1.0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0);
	/*
	 * a range beyond ±3.4e38 makes numpy 1.x bin float32 in float64; the edge that
	 * fits (-1e38) is still compared in float32
	 */
	float wide[3] = {3e38f, -1e38f, 3.4e38f};
	HIST_OK(GPUD_F32, wide, 3, 2, -1e38, 1e39, 3, 0);
	hist_plan p;
	char err[256];
	ck_assert_int_eq(hist_plan_make(GPUD_F32, 2, -1e38, 1e39, &p, err, sizeof(err)), 0);
	ck_assert(!p.f32_edges && p.lo_f32 && !p.hi_f32);
	ck_assert_int_eq(hist_plan_make(GPUD_F32, 2, -1, 1, &p, err, sizeof(err)), 0);
	ck_assert(p.f32_edges && p.norm_f32);
	ck_assert_int_eq(hist_plan_make(GPUD_F32, 100, 0, 1e-37, &p, err, sizeof(err)), 0);
	ck_assert(p.f32_edges && !p.norm_f32); /* norm 1e39: the product is float64 */
	ck_assert_int_eq(hist_plan_make(GPUD_F64, 2, -1, 1, &p, err, sizeof(err)), 0);
	ck_assert(!p.f32_edges);
	/* the GPU clamps a float32 estimate at the smallest float >= bins */
	static const int64_t bb[] = {
		1, 7, 1 << 24, (1 << 24) + 1, (1 << 25) + 3, HIST_MAX_BINS - 1, HIST_MAX_BINS};
	for (size_t i = 0; i < sizeof(bb) / sizeof(bb[0]); i++) {
		ck_assert_int_eq(hist_plan_make(GPUD_F32, bb[i], 0, 1, &p, err, sizeof(err)), 0);
		ck_assert((double)p.bins_up32 >= (double)bb[i]);
		ck_assert((double)nextafterf(p.bins_up32, 0) < (double)bb[i]);
	}
}
END_TEST

/*
 * On random data at random ranges: every kept sample lands in the bin whose
 * rounded edges hold it (edge[i] <= x < edge[i + 1], the last bin closed),
 * and the counts add up to the samples inside the range.
 */
START_TEST(test_bins_hold_their_samples)
{
	uint64_t s = 0x5eed1234abcdull;
	for (int round = 0; round < 200; round++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		int64_t bins = 1 + (int64_t)((s >> 33) % 1000);
		double lo = ((double)(s >> 40) / (double)(1ull << 24) - 0.5) * 200;
		double hi = lo + 1 + ((double)((s >> 20) & 0xfffff) / (double)(1 << 20)) * 50;
		int f32 = round & 1;
		hist_plan p;
		char err[256];
		ck_assert_int_eq(hist_plan_make(f32 ? GPUD_F32 : GPUD_F64, bins, lo, hi, &p, err,
						sizeof(err)),
				 0);
		for (int i = 0; i < 2000; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			double v = lo - 1 +
				   (hi - lo + 2) * ((double)(s >> 11) / 9007199254740992.0);
			if (i % 4 == 0) /* exactly on an edge */
				v = hist_edge(&p, (int64_t)((s >> 20) % (uint64_t)(bins + 1)));
			int64_t b;
			if (f32) {
				float x = (float)v;
				b = hist_bin_f32(&p, x);
				int in = x >= (float)lo && x <= (float)hi;
				ck_assert_msg((b >= 0) == in, "%.9g in [%g, %g]: bin %lld",
					      (double)x, lo, hi, (long long)b);
				if (b < 0)
					continue;
				ck_assert(b < bins);
				ck_assert_msg(x >= (float)hist_edge(&p, b) &&
						      (x < (float)hist_edge(&p, b + 1) ||
						       (b == bins - 1 &&
							x <= (float)hist_edge(&p, bins))),
					      "float32 %.9g in bin %lld of %lld over [%g, %g]",
					      (double)x, (long long)b, (long long)bins, lo, hi);
			} else {
				b = hist_bin_f64(&p, v);
				ck_assert((b >= 0) == (v >= lo && v <= hi));
				if (b < 0)
					continue;
				ck_assert(b < bins);
				ck_assert_msg(v >= hist_edge(&p, b) &&
						      (v < hist_edge(&p, b + 1) ||
						       (b == bins - 1 && v <= hist_edge(&p, bins))),
					      "%.17g in bin %lld of %lld over [%g, %g]", v,
					      (long long)b, (long long)bins, lo, hi);
			}
		}
	}
}
END_TEST

/*
 * hist_plan.margin: wherever the GPU takes an estimate without corrections
 * (its fraction inside (margin, 1 - margin)), the reference's bin is that
 * estimate. Random plans, from wide ranges around 0 to narrow ones far from
 * it (where the margin grows and turns the shortcut off), and samples
 * anywhere, on edges and a few ulps either side of them.
 */
START_TEST(test_fast_margin)
{
	uint64_t s = 0xfa57ba11d00dull;
	long shortcuts = 0, samples = 0;
	for (int round = 0; round < 400; round++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		int64_t bins = 1 + (int64_t)((s >> 33) % (round % 3 ? 1000 : 100000));
		double center = ((double)(s >> 40) / (double)(1ull << 24) - 0.5) *
				pow(10, (double)((s >> 8) % 7));
		double width = pow(10, -3 + (double)((s >> 16) % 8)) *
			       (1 + (double)((s >> 20) & 0xfff) / 4096.0);
		double lo = center - width / 2, hi = center + width / 2;
		int f32 = round & 1;
		hist_plan p;
		char err[256];
		if (hist_plan_make(f32 ? GPUD_F32 : GPUD_F64, bins, lo, hi, &p, err, sizeof(err)) !=
		    0)
			continue;
		for (int i = 0; i < 3000; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			double v = lo + (hi - lo) * ((double)(s >> 11) / 9007199254740992.0);
			if (i % 3 == 0) {
				v = hist_edge(&p, (int64_t)((s >> 20) % (uint64_t)(bins + 1)));
				for (int k = (int)((s >> 5) % 7) - 3; k != 0; k += k > 0 ? -1 : 1)
					v = f32 ? nextafterf((float)v, k > 0 ? INFINITY : -INFINITY)
						: nextafter(v, k > 0 ? INFINITY : -INFINITY);
			}
			int64_t est, b;
			double fr;
			if (f32 && p.f32_edges && p.norm_f32) {
				float x = (float)v;
				if (!(x >= p.first32 && x <= p.last32))
					continue;
				float f = (x - p.first32) * p.norm32;
				if (!(f >= 0 && f < p.bins_up32))
					continue;
				est = (int64_t)f;
				fr = (double)(f - (float)est);
				if (!(fr > p.frac_lo32 && fr < p.frac_hi32))
					continue;
				b = hist_bin_f32(&p, x);
			} else if (!f32) {
				if (!(v >= p.first && v <= p.last))
					continue;
				double f = (v - p.first) * p.norm;
				if (!(f >= 0 && f < (double)bins))
					continue;
				est = (int64_t)f;
				fr = f - (double)est;
				if (!(fr > p.margin && fr < 1 - p.margin))
					continue;
				b = hist_bin_f64(&p, v);
			} else {
				continue;
			}
			shortcuts++;
			ck_assert_msg(b == est,
				      "%s %.17g over [%.17g, %.17g], %lld bins: the estimate %lld "
				      "(fraction %.3g, margin %.3g) but the bin is %lld",
				      f32 ? "float32" : "float64", v, lo, hi, (long long)bins,
				      (long long)est, fr, p.margin, (long long)b);
		}
		samples += 3000;
	}
	/* the shortcut is taken for most samples */
	ck_assert_msg(shortcuts > samples / 2, "%ld of %ld", shortcuts, samples);
	hist_plan p;
	char err[256];
	ck_assert_int_eq(hist_plan_make(GPUD_F32, 1000, -1, 1, &p, err, sizeof(err)), 0);
	ck_assert_msg(p.margin < 1e-3, "%g", p.margin);
	/* narrow and far from 0: float32 edges are too coarse, no shortcut */
	ck_assert_int_eq(hist_plan_make(GPUD_F32, 4000, 1e4, 1e4 + 1, &p, err, sizeof(err)), 0);
	ck_assert(p.margin >= 0.5 && p.frac_lo32 > p.frac_hi32);
}
END_TEST

START_TEST(test_checks)
{
	double x[2] = {0.5, 1.5};
	int64_t c[16];
	char err[512];

	ck_assert_int_eq(hist(GPUD_F64, 2, x, 0, 0, 1, c, err, sizeof(err)), -1);
	assert_has(err, "histogram: argument 'bins' must be at least 1, got 0");
	assert_has(err, "`bins` must be positive");
	ck_assert_int_eq(hist(GPUD_F64, 2, x, -5, 0, 1, c, err, sizeof(err)), -1);
	assert_has(err, "'bins' must be at least 1, got -5");
	ck_assert_int_eq(hist(GPUD_F64, 2, x, HIST_MAX_BINS + 1, 0, 1, c, err, sizeof(err)), -1);
	assert_has(err, "'bins' must be at most 1073741824, got 1073741825");
	ck_assert_int_eq(hist(GPUD_F64, 2, x, 4, 3, 1, c, err, sizeof(err)), -1);
	assert_has(err, "argument 'range_min' (3) must not be above 'range_max' (1)");
	assert_has(err, "max must be larger than min in range parameter");
	ck_assert_int_eq(hist(GPUD_F64, 2, x, 4, 0.1, 0.05, c, err, sizeof(err)), -1);
	assert_has(err, "(0.1) must not be above 'range_max' (0.05)");
	/* the binder refuses non-finite scalars, naming the argument */
	ck_assert_int_eq(hist(GPUD_F64, 2, x, 4, 0, INFINITY, c, err, sizeof(err)), -1);
	assert_has(err, "argument 'range_max' must be a finite float64, got inf");
	/* numpy's words where the check sees one (a caller of the table binding directly) */
	hist_plan p;
	ck_assert_int_eq(hist_plan_make(GPUD_F64, 4, NAN, 1, &p, err, sizeof(err)), -1);
	assert_has(err, "supplied range of [nan, 1] is not finite: argument 'range_min'");
	ck_assert_int_eq(hist_plan_make(GPUD_F32, 4, 0, INFINITY, &p, err, sizeof(err)), -1);
	assert_has(err, "supplied range of [0, inf] is not finite: argument 'range_max'");
	ck_assert_int_eq(hist_plan_make(GPUD_F32, 4, -INFINITY, INFINITY, &p, err, sizeof(err)),
			 -1);
	assert_has(err, "is not finite");
	/* an empty range too large to widen by 0.5 */
	ck_assert_int_eq(hist(GPUD_F64, 2, x, 4, 1e17, 1e17, c, err, sizeof(err)), -1);
	assert_has(err, "'range_min' and 'range_max' are both 1e+17");
	/* a width that overflows, one that is too narrow for the bins */
	ck_assert_int_eq(hist(GPUD_F64, 2, x, 4, -1e308, 1e308, c, err, sizeof(err)), -1);
	assert_has(err, "the range [-1e+308, 1e+308] is too wide");
	ck_assert_int_eq(hist(GPUD_F64, 2, x, 4, 0, 5e-324, c, err, sizeof(err)), -1);
	assert_has(err, "is too narrow for 4 bins");
	/* a fractional bins, a missing range */
	const kernel_def *k = kernel_find("histogram");
	kernel_value v;
	memset(&v, 0, sizeof(v));
	ck_assert_int_eq(kernel_bind_scalar(k, &k->params[HIST_BINS], KGIVEN_F64, 0, 0, 2.5, &v,
					    err, sizeof(err)),
			 -1);
	assert_has(err, "histogram: argument 'bins' must be int64, got 2.5");
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	kernel_array ax = {.dtype = GPUD_F64, .ndim = 1, .shape = {2}, .count = 2, .data = x};
	ck_assert_int_eq(kernel_bind_array(k, &k->params[HIST_X], &ax, &a.v[HIST_X], err,
					   sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	assert_has(err, "histogram: missing argument 'range_min' (float64 scalar)");
	/* counts is int64 only */
	kernel_array ac = {.dtype = GPUD_F64, .ndim = 1, .shape = {4}, .count = 4, .data = c};
	ck_assert_int_eq(kernel_bind_array(k, &k->params[HIST_COUNTS], &ac, &a.v[HIST_COUNTS], err,
					   sizeof(err)),
			 -1);
	assert_has(err, "argument 'counts' must be int64 1-d array (output), got float64");
	/* all four dtypes, and any shape */
	for (int dt = GPUD_F32; dt <= GPUD_I64; dt++) {
		kernel_array any = {
			.dtype = (gpud_dtype)dt, .ndim = 2, .shape = {1, 2}, .count = 2, .data = x};
		ck_assert_int_eq(kernel_bind_array(k, &k->params[HIST_X], &any, &a.v[HIST_X], err,
						   sizeof(err)),
				 0);
	}
}
END_TEST

Suite *histogram_suite(void)
{
	Suite *s = suite_create("histogram");
	TCase *tc = tcase_create("histogram");
	tcase_add_test(tc, test_edges_and_outside);
	tcase_add_test(tc, test_empty_range_widened);
	tcase_add_test(tc, test_integers);
	tcase_add_test(tc, test_float32_rounding);
	tcase_add_test(tc, test_bins_hold_their_samples);
	tcase_add_test(tc, test_fast_margin);
	tcase_add_test(tc, test_checks);
	suite_add_tcase(s, tc);
	return s;
}
