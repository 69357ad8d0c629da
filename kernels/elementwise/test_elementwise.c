/* kernels/elementwise/test_elementwise.c — the library's elementwise kernels on the CPU:
 * hand-worked values, wrapping integers, broadcast scalars and every check
 * (kernels/elementwise/elementwise.c). The GPU tests compare against these references. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/elementwise/elementwise.h"
#include "tests/unit/suites.h"

#define assert_has(s, want)                                                                        \
	ck_assert_msg(strstr((s), (want)) != NULL, "'%s' lacks '%s'", (s), (want))

static kernel_array arr(gpud_dtype dt, size_t n, void *data)
{
	kernel_array a = {.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = data};
	return a;
}

/* Binds x and y (array data or, when NULL, scalar sx/sy), a, runs check and cpu_run into z. */
static int run(const char *name, gpud_dtype dt, size_t n, void *x, double sx, void *y, double sy,
	       double a, void *z, char *err, size_t errlen)
{
	const kernel_def *k = kernel_find(name);
	kernel_args ka;
	memset(&ka, 0, sizeof(ka));
	ka.kernel = k;
	void *in[2] = {x, y};
	double s[2] = {sx, sy};
	for (int i = 0; i < 2; i++) {
		if (in[i]) {
			kernel_array ar = arr(dt, n, in[i]);
			if (kernel_bind_array(k, &k->params[i], &ar, &ka.v[i], err, errlen) != 0)
				return -1;
		} else if (kernel_bind_scalar(k, &k->params[i], KGIVEN_F64, 0, 0, s[i], &ka.v[i],
					      err, errlen) != 0) {
			return -1;
		}
	}
	if (k->nparams > EW_A &&
	    kernel_bind_scalar(k, &k->params[EW_A], KGIVEN_F64, 0, 0, a, &ka.v[EW_A], err, errlen))
		return -1;
	if (k->check(&ka, err, errlen) != 0)
		return -1;
	ka.v[EW_Z].arr = arr(ka.v[EW_Z].expect.dtype, ka.v[EW_Z].expect.count, z);
	ka.v[EW_Z].present = 1;
	cpu_kernel_of(k)->run(&ka, 0, cpu_kernel_of(k)->items(&ka));
	return 0;
}

START_TEST(test_float_ops)
{
	double x[3] = {1.5, -2, 0.25}, y[3] = {0.5, 4, 2}, z[3];
	char err[256];
	static const struct {
		const char *name;
		double want[3];
	} cases[] = {
		{"add", {2, 2, 2.25}},
		{"sub", {1, -6, -1.75}},
		{"mul", {0.75, -8, 0.5}},
		{"div", {3, -0.5, 0.125}},
		{"axpy", {3.5, 0, 2.5}},                    /* a = 2 */
		{"rel_diff", {1, -6, -1.5555555555555556}}, /* 2(x-y)/(x+y) */
		{"sum_of_squares", {2.5, 20, 4.0625}},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_msg(run(cases[i].name, GPUD_F64, 3, x, 0, y, 0, 2.0, z, err,
				  sizeof(err)) == 0,
			      "%s: %s", cases[i].name, err);
		for (int j = 0; j < 3; j++)
			ck_assert_msg(fabs(z[j] - cases[i].want[j]) < 1e-15,
				      "%s[%d] = %.17g, want %.17g", cases[i].name, j, z[j],
				      cases[i].want[j]);
	}
	/* saxpy_trig: exp(a sin x + cos y), a = 0.5 */
	ck_assert_int_eq(run("saxpy_trig", GPUD_F64, 3, x, 0, y, 0, 0.5, z, err, sizeof(err)), 0);
	for (int j = 0; j < 3; j++)
		ck_assert(fabs(z[j] - exp(0.5 * sin(x[j]) + cos(y[j]))) < 1e-15);
	/* float32: computed in float64, rounded once */
	float xf[2] = {1.1f, 2.2f}, yf[2] = {3.3f, 4.4f}, zf[2];
	ck_assert_int_eq(run("mul", GPUD_F32, 2, xf, 0, yf, 0, 0, zf, err, sizeof(err)), 0);
	ck_assert(zf[0] == (float)((double)1.1f * (double)3.3f));
	/* a scalar broadcasts, on either side */
	ck_assert_int_eq(run("sub", GPUD_F64, 3, NULL, 10, y, 0, 0, z, err, sizeof(err)), 0);
	ck_assert(z[0] == 9.5 && z[1] == 6 && z[2] == 8);
	ck_assert_int_eq(run("div", GPUD_F64, 3, x, 0, NULL, 4, 0, z, err, sizeof(err)), 0);
	ck_assert(z[0] == 0.375 && z[1] == -0.5 && z[2] == 0.0625);
}
END_TEST

START_TEST(test_int_ops_wrap)
{
	int32_t x[3] = {INT32_MAX, -5, 70000}, y[3] = {1, 3, 70000}, z[3];
	char err[256];
	ck_assert_int_eq(run("add", GPUD_I32, 3, x, 0, y, 0, 0, z, err, sizeof(err)), 0);
	ck_assert_int_eq(z[0], INT32_MIN); /* wraps, as numpy's int32 does */
	ck_assert_int_eq(z[1], -2);
	ck_assert_int_eq(run("mul", GPUD_I32, 3, x, 0, y, 0, 0, z, err, sizeof(err)), 0);
	ck_assert_int_eq(z[2], (int32_t)(uint32_t)(70000u * 70000u));
	ck_assert_int_eq(run("sum_of_squares", GPUD_I32, 3, x, 0, NULL, 2, 0, z, err, sizeof(err)),
			 0);
	ck_assert_int_eq(z[1], 29);
	int64_t a[2] = {INT64_MAX, 7}, b[2] = {1, -9}, c[2];
	ck_assert_int_eq(run("sub", GPUD_I64, 2, a, 0, b, 0, 0, c, err, sizeof(err)), 0);
	ck_assert(c[0] == INT64_MAX - 1 && c[1] == 16);
	ck_assert_int_eq(run("add", GPUD_I64, 2, a, 0, NULL, -3, 0, c, err, sizeof(err)), 0);
	ck_assert(c[0] == INT64_MAX - 3 && c[1] == 4);
}
END_TEST

START_TEST(test_checks)
{
	double x[3] = {1, 2, 3}, y4[4] = {1, 2, 3, 4}, z[4];
	float yf[3] = {1, 2, 3};
	int32_t xi[3] = {1, 2, 3};
	char err[256];
	ck_assert_int_eq(run("add", GPUD_F64, 3, x, 0, NULL, 0, 0, z, err, sizeof(err)), 0);
	/* lengths */
	const kernel_def *k = kernel_find("add");
	kernel_args ka;
	memset(&ka, 0, sizeof(ka));
	ka.kernel = k;
	kernel_array ax = arr(GPUD_F64, 3, x), ay = arr(GPUD_F64, 4, y4), af = arr(GPUD_F32, 3, yf);
	ck_assert_int_eq(kernel_bind_array(k, &k->params[0], &ax, &ka.v[0], err, sizeof(err)), 0);
	ck_assert_int_eq(kernel_bind_array(k, &k->params[1], &ay, &ka.v[1], err, sizeof(err)), 0);
	ck_assert_int_eq(k->check(&ka, err, sizeof(err)), -1);
	assert_has(err, "'y' has 4 elements but 'x' has 3");
	/* dtypes */
	ck_assert_int_eq(kernel_bind_array(k, &k->params[1], &af, &ka.v[1], err, sizeof(err)), 0);
	ck_assert_int_eq(k->check(&ka, err, sizeof(err)), -1);
	assert_has(err, "'y' is float32 but 'x' is float64");
	/* div takes floats only */
	const kernel_def *d = kernel_find("div");
	kernel_array axi = arr(GPUD_I32, 3, xi);
	ck_assert_int_eq(kernel_bind_array(d, &d->params[0], &axi, &ka.v[0], err, sizeof(err)), -1);
	assert_has(err, "'x'");
	/* integer arrays take integer scalars that fit */
	ck_assert_int_eq(run("add", GPUD_I32, 3, xi, 0, NULL, 2.5, 0, z, err, sizeof(err)), -1);
	assert_has(err, "'y' is 2.5; with int32 arrays it must be an integer");
	ck_assert_int_eq(run("add", GPUD_I32, 3, xi, 0, NULL, 3e9, 0, z, err, sizeof(err)), -1);
	assert_has(err, "fits int32");
	/* two scalars: nothing gives the length */
	ck_assert_int_eq(run("mul", GPUD_F64, 3, NULL, 1, NULL, 2, 0, z, err, sizeof(err)), -1);
	assert_has(err, "x or y must be an array");
	/* axpy needs a */
	memset(&ka, 0, sizeof(ka));
	ka.kernel = kernel_find("axpy");
	ck_assert_int_eq(kernel_bind_array(ka.kernel, &ka.kernel->params[0], &ax, &ka.v[0], err,
					   sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_array(ka.kernel, &ka.kernel->params[1], &ax, &ka.v[1], err,
					   sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_args_finish(&ka, err, sizeof(err)), -1);
	assert_has(err, "missing argument 'a'");
}
END_TEST

Suite *elementwise_suite(void)
{
	Suite *s = suite_create("elementwise");
	TCase *tc = tcase_create("elementwise");
	tcase_add_test(tc, test_float_ops);
	tcase_add_test(tc, test_int_ops_wrap);
	tcase_add_test(tc, test_checks);
	suite_add_tcase(s, tc);
	return s;
}
