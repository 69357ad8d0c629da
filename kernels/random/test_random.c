/* kernels/random/test_random.c — uniform and normal on the CPU (cuRAND's host
 * generator, kernels/random/random.c): the same seed gives the same numbers, another
 * seed others; the first numbers against values cuRAND 10.4 printed once (a
 * regression check: same library); odd n; moments and a Kolmogorov-Smirnov
 * bound on large samples of fixed seeds; the checks' messages. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/random/random.h"
#include "tests/unit/suites.h"

#define assert_has(s, want)                                                                        \
	ck_assert_msg(strstr((s), (want)) != NULL, "'%s' lacks '%s'", (s), (want))

#define NONE NAN /* p1/p2 not given: the default */

/*
 * Runs name with n, seed, dtype (NULL: the default) and p1/p2 (NONE: the
 * defaults) into out (n elements), checked first. 0 or -1 with err.
 */
static int gen(const char *name, int64_t n, int64_t seed, const char *dtype, double p1, double p2,
	       void *out, char *err, size_t errlen)
{
	const kernel_def *k = kernel_find(name);
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	if (kernel_bind_scalar(k, &k->params[RND_N], KGIVEN_I64, 0, n, 0, &a.v[RND_N], err,
			       errlen) != 0 ||
	    kernel_bind_scalar(k, &k->params[RND_SEED], KGIVEN_I64, 0, seed, 0, &a.v[RND_SEED], err,
			       errlen) != 0)
		return -1;
	if (dtype &&
	    kernel_bind_text(k, &k->params[RND_DTYPE], dtype, &a.v[RND_DTYPE], err, errlen) != 0)
		return -1;
	if (!isnan(p1) && kernel_bind_scalar(k, &k->params[RND_P1], KGIVEN_F64, 0, 0, p1,
					     &a.v[RND_P1], err, errlen) != 0)
		return -1;
	if (!isnan(p2) && kernel_bind_scalar(k, &k->params[RND_P2], KGIVEN_F64, 0, 0, p2,
					     &a.v[RND_P2], err, errlen) != 0)
		return -1;
	if (kernel_args_finish(&a, err, errlen) != 0 || k->check(&a, err, errlen) != 0)
		return -1;
	const kernel_array *e = &a.v[RND_OUT].expect;
	ck_assert_int_eq(e->ndim, 1);
	ck_assert_uint_eq(e->shape[0], (uint64_t)n);
	ck_assert_int_eq(e->dtype, dtype ? kernel_dtype_parse(dtype) : GPUD_F64);
	a.v[RND_OUT].arr = *e;
	a.v[RND_OUT].arr.data = out;
	ck_assert_msg(cpu_kernel_of(k)->available(err, errlen) == 0, "%s", err);
	ck_assert_uint_eq(cpu_kernel_of(k)->items(&a), 1);
	cpu_kernel_of(k)->run(&a, 0, 1);
	return 0;
}

/* Values cuRAND 10.4's host generator (Philox4_32_10, seed 42) gave. */
static const float u32_42[5] = {0x1.39d5ep-1, 0x1.dfd524p-2, 0x1.2bf50ap-4, 0x1.5d0adp-2,
				0x1.499bb4p-7};
static const double u64_42[5] = {0x1.dfd537715e0a7p-2, 0x1.5d0acd0bea15bp-2, 0x1.4ee9ac6f6424fp-2,
				 0x1.d1380b9deb4ddp-2, 0x1.028f483ccdda6p-3};
static const float n32_42[7] = {0x1.8d59c4p-3, -0x1.f0bcb8p-1, 0x1.ec8674p+0, -0x1.3c51acp+0,
				0x1.14a7e6p+1, 0x1.10582cp+1,  -0x1.a8e594p+0};
static const double n64_42[7] = {0x1.0938d6e3710a3p+0,  -0x1.54abf38e526c1p-1,
				 0x1.b1706d3b4c821p-2,  -0x1.6f13555a03774p+0,
				 -0x1.f9be3fcfaa932p+0, -0x1.f19db84702aa2p-2,
				 0x1.08add93cd83fp-3};

START_TEST(test_known_values)
{
	char err[256];
	float f[8];
	double d[8];
	ck_assert_msg(gen("uniform", 5, 42, "float32", NONE, NONE, f, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_msg(memcmp(f, u32_42, sizeof(u32_42)) == 0, "uniform float32: %a %a ...", f[0],
		      f[1]);
	ck_assert_msg(gen("uniform", 5, 42, NULL, NONE, NONE, d, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(memcmp(d, u64_42, sizeof(u64_42)) == 0, "uniform float64: %a %a ...", d[0],
		      d[1]);
	/* odd n: the same numbers as the first n of n + 1 */
	ck_assert_msg(gen("normal", 7, 42, "float32", NONE, NONE, f, err, sizeof(err)) == 0, "%s",
		      err);
	for (int i = 0; i < 7; i++) /* libm's logf/sincosf: allow an ulp or two */
		ck_assert_msg(fabsf(f[i] - n32_42[i]) <= 4e-7f * fabsf(n32_42[i]),
			      "normal float32 [%d] = %a, want %a", i, f[i], n32_42[i]);
	ck_assert_msg(gen("normal", 7, 42, "float64", NONE, NONE, d, err, sizeof(err)) == 0, "%s",
		      err);
	for (int i = 0; i < 7; i++)
		ck_assert_msg(fabs(d[i] - n64_42[i]) <= 1e-15 * fabs(n64_42[i]),
			      "normal float64 [%d] = %a, want %a", i, d[i], n64_42[i]);
	float f8[8];
	ck_assert(gen("normal", 8, 42, "float32", NONE, NONE, f8, err, sizeof(err)) == 0);
	ck_assert(memcmp(f, f8, 7 * sizeof(float)) == 0);
	/* mean and stddev: mean + stddev * z of the same z */
	double d2[7];
	ck_assert(gen("normal", 7, 42, NULL, 3, 0.5, d2, err, sizeof(err)) == 0);
	for (int i = 0; i < 7; i++)
		ck_assert_msg(fabs(d2[i] - (3 + 0.5 * d[i])) <= 1e-14, "[%d] %.17g vs %.17g", i,
			      d2[i], 3 + 0.5 * d[i]);
}
END_TEST

START_TEST(test_determinism)
{
	enum { N = 10001 };
	static double a[N], b[N], c[N];
	char err[256];
	static const char *const names[2] = {"uniform", "normal"};
	for (int k = 0; k < 2; k++) {
		ck_assert(gen(names[k], N, 7, NULL, NONE, NONE, a, err, sizeof(err)) == 0);
		ck_assert(gen(names[k], N, 7, NULL, NONE, NONE, b, err, sizeof(err)) == 0);
		ck_assert_msg(memcmp(a, b, sizeof(a)) == 0, "%s: seed 7 twice differs", names[k]);
		ck_assert(gen(names[k], N, 8, NULL, NONE, NONE, c, err, sizeof(err)) == 0);
		int same = 0;
		for (int i = 0; i < N; i++)
			same += a[i] == c[i];
		ck_assert_msg(same < 5, "%s: seeds 7 and 8 share %d of %d numbers", names[k], same,
			      N);
		/* a shorter run is the start of the longer one */
		ck_assert(gen(names[k], 100, 7, NULL, NONE, NONE, c, err, sizeof(err)) == 0);
		ck_assert(memcmp(a, c, 100 * sizeof(double)) == 0);
	}
	/* the largest seed works, and differs from 0 */
	ck_assert(gen("uniform", 100, INT64_MAX, NULL, NONE, NONE, a, err, sizeof(err)) == 0);
	ck_assert(gen("uniform", 100, 0, NULL, NONE, NONE, b, err, sizeof(err)) == 0);
	ck_assert(memcmp(a, b, 100 * sizeof(double)) != 0);
	/* n = 0: nothing */
	ck_assert(gen("normal", 0, 1, NULL, NONE, NONE, NULL, err, sizeof(err)) == 0);
}
END_TEST

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* The Kolmogorov-Smirnov statistic of v (sorted here) against cdf. */
static double ks(double *v, size_t n, double (*cdf)(double))
{
	qsort(v, n, sizeof(double), cmp_d);
	double d = 0;
	for (size_t i = 0; i < n; i++) {
		double f = cdf(v[i]), lo = f - (double)i / n, hi = (double)(i + 1) / n - f;
		d = fmax(d, fmax(lo, hi));
	}
	return d;
}

static double cdf_uniform(double x)
{
	return x < 0 ? 0 : x > 1 ? 1 : x;
}

static double cdf_normal(double x)
{
	return 0.5 * erfc(-x / sqrt(2));
}

/* Mean and variance of v. */
static void moments(const double *v, size_t n, double *mean, double *var)
{
	double s = 0, s2 = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	*mean = s / n;
	for (size_t i = 0; i < n; i++)
		s2 += (v[i] - *mean) * (v[i] - *mean);
	*var = s2 / (n - 1);
}

/*
 * Fixed seeds, so these are deterministic; the bounds are 5 standard errors
 * for the moments and the KS statistic's 0.1% critical value (1.95 / sqrt(n)),
 * which good generators pass: a failure means the numbers changed.
 */
START_TEST(test_statistics)
{
	enum { N = 200001 };
	static double v[N];
	static float f[N];
	char err[256];
	double mean, var, d, crit = 1.95 / sqrt((double)N), se = 1 / sqrt((double)N);

	/* uniform float64: in (0, 1], mean 1/2, variance 1/12 */
	ck_assert(gen("uniform", N, 2024, NULL, NONE, NONE, v, err, sizeof(err)) == 0);
	for (size_t i = 0; i < N; i++)
		ck_assert_msg(v[i] > 0 && v[i] <= 1, "uniform [%zu] = %.17g", i, v[i]);
	moments(v, N, &mean, &var);
	ck_assert_msg(fabs(mean - 0.5) < 5 * se * sqrt(1.0 / 12), "uniform mean %.6f", mean);
	ck_assert_msg(fabs(var - 1.0 / 12) < 5 * se * sqrt(1.0 / 180), "uniform variance %.6f",
		      var);
	ck_assert_msg((d = ks(v, N, cdf_uniform)) < crit, "uniform KS %.5f >= %.5f", d, crit);

	/* uniform float32 */
	ck_assert(gen("uniform", N, 99, "float32", NONE, NONE, f, err, sizeof(err)) == 0);
	for (size_t i = 0; i < N; i++) {
		ck_assert_msg(f[i] > 0 && f[i] <= 1, "uniform float32 [%zu] = %a", i, f[i]);
		v[i] = f[i];
	}
	ck_assert_msg((d = ks(v, N, cdf_uniform)) < crit, "uniform float32 KS %.5f", d);

	/* uniform in (low, high]: low + (high - low) u of the same u */
	static double u[N];
	ck_assert(gen("uniform", 1000, 5, NULL, NONE, NONE, u, err, sizeof(err)) == 0);
	ck_assert(gen("uniform", 1000, 5, NULL, -2, 6, v, err, sizeof(err)) == 0);
	for (size_t i = 0; i < 1000; i++)
		ck_assert_msg(v[i] == -2 + 8 * u[i] && v[i] > -2 && v[i] <= 6, "[%zu] %.17g", i,
			      v[i]);

	/* normal float64: mean 0, variance 1, and N(0, 1)'s distribution */
	ck_assert(gen("normal", N, 31337, NULL, NONE, NONE, v, err, sizeof(err)) == 0);
	moments(v, N, &mean, &var);
	ck_assert_msg(fabs(mean) < 5 * se, "normal mean %.6f", mean);
	ck_assert_msg(fabs(var - 1) < 5 * se * sqrt(2), "normal variance %.6f", var);
	ck_assert_msg((d = ks(v, N, cdf_normal)) < crit, "normal KS %.5f >= %.5f", d, crit);

	/* normal float32 with mean 10, stddev 3 (odd N) */
	ck_assert(gen("normal", N, 4242, "float32", 10, 3, f, err, sizeof(err)) == 0);
	for (size_t i = 0; i < N; i++)
		v[i] = ((double)f[i] - 10) / 3;
	moments(v, N, &mean, &var);
	ck_assert_msg(fabs(mean) < 5 * se, "normal float32 mean %.6f", mean);
	ck_assert_msg(fabs(var - 1) < 5 * se * sqrt(2), "normal float32 variance %.6f", var);
	ck_assert_msg((d = ks(v, N, cdf_normal)) < crit, "normal float32 KS %.5f", d);
}
END_TEST

START_TEST(test_checks)
{
	char err[256];
	double x[4];
	ck_assert_int_eq(gen("uniform", -1, 1, NULL, NONE, NONE, x, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "uniform: argument 'n' must be 0 or more, got -1");
	ck_assert_int_eq(gen("normal", 4, -5, NULL, NONE, NONE, x, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "normal: argument 'seed' must be 0 to 2^63 - 1, got -5");
	ck_assert_int_eq(gen("normal", 4, 1, NULL, 0, -1, x, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "normal: argument 'stddev' must be 0 or more, got -1");
	ck_assert_int_eq(gen("uniform", 4, 1, NULL, -1e308, 1e308, x, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
			 "uniform: high - low must be finite, got high 1e+308 and low -1e+308");
	ck_assert_int_eq(gen("normal", 4, 1, "float32", 1e39, 1, x, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "normal: 'mean' and 'stddev' must be within float32's range for "
			      "dtype float32, got 1e+39 and 1");
	ck_assert_int_eq(gen("uniform", 4, 1, "int64", NONE, NONE, x, err, sizeof(err)), -1);
	assert_has(err, "uniform: argument 'dtype' must be a dtype name float32|float64");
	/* n and seed are required */
	const kernel_def *k = kernel_find("uniform");
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "uniform: missing argument 'n' (int64 scalar)");
	a.v[RND_N].present = 1;
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "uniform: missing argument 'seed' (int64 scalar)");
	/* stddev 0: every number is the mean */
	ck_assert(gen("normal", 4, 1, NULL, 2.5, 0, x, err, sizeof(err)) == 0);
	for (int i = 0; i < 4; i++)
		ck_assert(x[i] == 2.5);
}
END_TEST

Suite *random_suite(void)
{
	Suite *s = suite_create("random");
	TCase *tc = tcase_create("cpu");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_known_values);
	tcase_add_test(tc, test_determinism);
	tcase_add_test(tc, test_statistics);
	tcase_add_test(tc, test_checks);
	suite_add_tcase(s, tc);
	return s;
}
