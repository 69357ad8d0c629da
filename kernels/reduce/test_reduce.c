/* kernels/reduce/test_reduce.c — the library's reductions on the CPU: hand-worked
 * values, integer sums in int64, NaN, empty arrays, checks (kernels/reduce/reduce.c). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/reduce/reduce.h"
#include "tests/unit/suites.h"

#define assert_has(s, want)                                                                        \
	ck_assert_msg(strstr((s), (want)) != NULL, "'%s' lacks '%s'", (s), (want))

/* Runs kernel name on x (and y) of n elements of dt; out receives the 0-d result. */
static int red(const char *name, gpud_dtype dt, size_t n, void *x, void *y, void *out,
	       gpud_dtype *odt, char *err, size_t errlen)
{
	const kernel_def *k = kernel_find(name);
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	kernel_array ax = {.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = x};
	if (kernel_bind_array(k, &k->params[0], &ax, &a.v[0], err, errlen) != 0)
		return -1;
	if (y) {
		kernel_array ay = {.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = y};
		if (kernel_bind_array(k, &k->params[1], &ay, &a.v[1], err, errlen) != 0)
			return -1;
	}
	if (kernel_args_finish(&a, err, errlen) != 0 || k->check(&a, err, errlen) != 0)
		return -1;
	int oi = red_out(k);
	*odt = a.v[oi].expect.dtype;
	ck_assert_int_eq(a.v[oi].expect.ndim, 0);
	a.v[oi].arr = (kernel_array){.dtype = *odt, .ndim = 0, .count = 1, .data = out};
	cpu_kernel_of(k)->run(&a, 0, cpu_kernel_of(k)->items(&a));
	return 0;
}

START_TEST(test_values)
{
	double x[4] = {1.5, -2, 4, 0.5}, y[4] = {2, 1, 0.5, -4}, d;
	gpud_dtype odt;
	char err[256];
	ck_assert_int_eq(red("sum", GPUD_F64, 4, x, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d == 4 && odt == GPUD_F64);
	ck_assert_int_eq(red("asum", GPUD_F64, 4, x, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d == 8);
	ck_assert_int_eq(red("min", GPUD_F64, 4, x, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d == -2);
	ck_assert_int_eq(red("max", GPUD_F64, 4, x, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d == 4);
	ck_assert_int_eq(red("mean", GPUD_F64, 4, x, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d == 1);
	ck_assert_int_eq(red("dot", GPUD_F64, 4, x, y, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d == 3 - 2 + 2 - 2);
	/* float32 accumulates in float64: 2^24 + 1 + 1 ... stays exact */
	float f[3] = {16777216.0f, 1.0f, 1.0f}, fo;
	ck_assert_int_eq(red("sum", GPUD_F32, 3, f, NULL, &fo, &odt, err, sizeof(err)), 0);
	ck_assert(fo == 16777218.0f && odt == GPUD_F32); /* naive float32: 16777216 */
	/* compensated: naive float64 summation gives 0 here, and 2 for asum */
	double xc[4] = {1e16, 1, -1e16, 0.5};
	ck_assert_int_eq(red("sum", GPUD_F64, 4, xc, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert_msg(d == 1.5, "%.17g", d);
	ck_assert_int_eq(red("mean", GPUD_F64, 4, xc, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d == 0.375);
	double yc[4] = {1, 3, 1, 2};
	ck_assert_int_eq(red("dot", GPUD_F64, 4, xc, yc, &d, &odt, err, sizeof(err)), 0);
	ck_assert_msg(d == 4, "%.17g", d);
	/* an infinity is summed to infinity, not to NaN by the compensation */
	double xi_[3] = {1, INFINITY, 2};
	ck_assert_int_eq(red("sum", GPUD_F64, 3, xi_, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(isinf(d) && d > 0);
	/* NaN wins min and max */
	double xn[3] = {1, NAN, -5};
	ck_assert_int_eq(red("min", GPUD_F64, 3, xn, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d != d);
	/* integer sums are int64 and wrap */
	int32_t xi[3] = {INT32_MAX, INT32_MAX, 2};
	int64_t s;
	ck_assert_int_eq(red("sum", GPUD_I32, 3, xi, NULL, &s, &odt, err, sizeof(err)), 0);
	ck_assert(odt == GPUD_I64 && s == 2ll * INT32_MAX + 2);
	int32_t m;
	ck_assert_int_eq(red("max", GPUD_I32, 3, xi, NULL, &m, &odt, err, sizeof(err)), 0);
	ck_assert(odt == GPUD_I32 && m == INT32_MAX);
	int64_t big[2] = {INT64_MAX, 1};
	ck_assert_int_eq(red("sum", GPUD_I64, 2, big, NULL, &s, &odt, err, sizeof(err)), 0);
	ck_assert(s == INT64_MIN);
	/* an empty sum is 0 */
	ck_assert_int_eq(red("sum", GPUD_F64, 0, x, NULL, &d, &odt, err, sizeof(err)), 0);
	ck_assert(d == 0);
}
END_TEST

START_TEST(test_checks)
{
	double x[3] = {1, 2, 3}, y[2] = {1, 2}, d;
	gpud_dtype odt;
	char err[256];
	ck_assert_int_eq(red("mean", GPUD_F64, 0, x, NULL, &d, &odt, err, sizeof(err)), -1);
	assert_has(err, "'x' is empty");
	ck_assert_int_eq(red("min", GPUD_F64, 0, x, NULL, &d, &odt, err, sizeof(err)), -1);
	assert_has(err, "min of no elements");
	int32_t xi[3] = {1, 2, 3};
	ck_assert_int_eq(red("mean", GPUD_I32, 3, xi, NULL, &d, &odt, err, sizeof(err)), -1);
	assert_has(err, "'x'");
	/* dot: lengths */
	const kernel_def *k = kernel_find("dot");
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	kernel_array ax = {.dtype = GPUD_F64, .ndim = 1, .shape = {3}, .count = 3, .data = x},
		     ay = {.dtype = GPUD_F64, .ndim = 1, .shape = {2}, .count = 2, .data = y};
	ck_assert_int_eq(kernel_bind_array(k, &k->params[0], &ax, &a.v[0], err, sizeof(err)), 0);
	ck_assert_int_eq(kernel_bind_array(k, &k->params[1], &ay, &a.v[1], err, sizeof(err)), 0);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), -1);
	assert_has(err, "'y' has 2 elements but 'x' has 3");
}
END_TEST

Suite *reduce_suite(void)
{
	Suite *s = suite_create("reduce");
	TCase *tc = tcase_create("reduce");
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_checks);
	suite_add_tcase(s, tc);
	return s;
}
