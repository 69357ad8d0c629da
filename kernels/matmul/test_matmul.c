/* kernels/matmul/test_matmul.c — matmul on the CPU (the CPU BLAS): hand-worked
 * products, non-square and degenerate shapes, a random product against a
 * float64 triple loop, and the checks' messages (kernels/matmul/matmul.c). */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/matmul/matmul.h"
#include "tests/unit/suites.h"

#define assert_has(s, want)                                                                        \
	ck_assert_msg(strstr((s), (want)) != NULL, "'%s' lacks '%s'", (s), (want))

/*
 * Binds a (m x k of adt) and b (kb x n of bdt), tf32 when >= 0, checks, and
 * runs into c (m x n) when c is not NULL. 0, or -1 with the message.
 */
static int mm2(gpud_dtype adt, gpud_dtype bdt, uint64_t m, uint64_t k, uint64_t kb, uint64_t n,
	       const void *A, const void *B, void *C, int tf32, char *err, size_t errlen)
{
	const kernel_def *k_ = kernel_find("matmul");
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k_;
	kernel_array aa = {
		.dtype = adt, .ndim = 2, .shape = {m, k}, .count = m * k, .data = (void *)A};
	kernel_array ab = {
		.dtype = bdt, .ndim = 2, .shape = {kb, n}, .count = kb * n, .data = (void *)B};
	if (kernel_bind_array(k_, &k_->params[MM_A], &aa, &a.v[MM_A], err, errlen) != 0 ||
	    kernel_bind_array(k_, &k_->params[MM_B], &ab, &a.v[MM_B], err, errlen) != 0)
		return -1;
	if (tf32 >= 0 && kernel_bind_scalar(k_, &k_->params[MM_TF32], KGIVEN_BOOL, tf32, 0, 0,
					    &a.v[MM_TF32], err, errlen) != 0)
		return -1;
	if (kernel_args_finish(&a, err, errlen) != 0 || k_->check(&a, err, errlen) != 0)
		return -1;
	const kernel_array *e = &a.v[MM_C].expect;
	ck_assert_int_eq(e->dtype, adt);
	ck_assert_int_eq(e->ndim, 2);
	ck_assert_uint_eq(e->shape[0], m);
	ck_assert_uint_eq(e->shape[1], n);
	if (C == NULL)
		return 0;
	a.v[MM_C].arr = *e;
	a.v[MM_C].arr.data = C;
	ck_assert_msg(cpu_kernel_of(k_)->available(err, errlen) == 0, "%s", err);
	ck_assert_uint_eq(cpu_kernel_of(k_)->items(&a), 1);
	cpu_kernel_of(k_)->run(&a, 0, 1);
	return 0;
}

static int mm(gpud_dtype dt, uint64_t m, uint64_t k, uint64_t n, const void *A, const void *B,
	      void *C, char *err, size_t errlen)
{
	return mm2(dt, dt, m, k, k, n, A, B, C, -1, err, errlen);
}

START_TEST(test_hand_worked)
{
	/* [[0 1 2] [3 4 5]] . [[0 1 2 3] [4 5 6 7] [8 9 10 11]] */
	double a[6] = {0, 1, 2, 3, 4, 5}, b[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
	double want[8] = {20, 23, 26, 29, 56, 68, 80, 92}, c[8];
	float af[6], bf[12], cf[8];
	char err[256];
	for (int i = 0; i < 12; i++) {
		if (i < 6)
			af[i] = (float)a[i];
		bf[i] = (float)b[i];
	}
	ck_assert_msg(mm(GPUD_F64, 2, 3, 4, a, b, c, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 8; i++)
		ck_assert_msg(c[i] == want[i], "c[%d] = %g, want %g", i, c[i], want[i]);
	ck_assert_msg(mm(GPUD_F32, 2, 3, 4, af, bf, cf, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 8; i++)
		ck_assert_msg(cf[i] == (float)want[i], "c[%d] = %g, want %g", i, cf[i], want[i]);
	/* tf32 changes nothing on the cpu backend */
	memset(cf, 0, sizeof(cf));
	ck_assert_msg(mm2(GPUD_F32, GPUD_F32, 2, 3, 3, 4, af, bf, cf, 1, err, sizeof(err)) == 0,
		      "%s", err);
	for (int i = 0; i < 8; i++)
		ck_assert(cf[i] == (float)want[i]);
	/* 2 x 2 with negatives and fractions: [[1 -2] [0.5 3]] . [[4 0.25] [-1 2]] */
	double p[4] = {1, -2, 0.5, 3}, q[4] = {4, 0.25, -1, 2}, r[4];
	ck_assert_msg(mm(GPUD_F64, 2, 2, 2, p, q, r, err, sizeof(err)) == 0, "%s", err);
	ck_assert(r[0] == 6 && r[1] == -3.75 && r[2] == -1 && r[3] == 6.125);
}
END_TEST

START_TEST(test_degenerate_shapes)
{
	char err[256];
	/* k = 1: the outer product of a column and a row */
	double col[3] = {1, 2, 3}, row[4] = {1, -1, 0.5, 2}, outer[12];
	ck_assert_msg(mm(GPUD_F64, 3, 1, 4, col, row, outer, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			ck_assert(outer[i * 4 + j] == col[i] * row[j]);
	/* m = 1: a row times a matrix; n = 1: a matrix times a column */
	double v[3] = {2, -1, 4}, M[6] = {1, 2, 3, 4, 5, 6}, rv[2], cv[2];
	ck_assert_msg(mm(GPUD_F64, 1, 3, 2, v, M, rv, err, sizeof(err)) == 0, "%s", err);
	ck_assert(rv[0] == 2 * 1 - 3 + 4 * 5 && rv[1] == 2 * 2 - 4 + 4 * 6);
	ck_assert_msg(mm(GPUD_F64, 2, 3, 1, M, v, cv, err, sizeof(err)) == 0, "%s", err);
	ck_assert(cv[0] == 2 - 2 + 12 && cv[1] == 8 - 5 + 24);
	/* 1 x 1 */
	float s1 = 3, s2 = -0.5f, s3 = 0;
	ck_assert_msg(mm(GPUD_F32, 1, 1, 1, &s1, &s2, &s3, err, sizeof(err)) == 0, "%s", err);
	ck_assert(s3 == -1.5f);
	/* k = 0: an empty sum, zeros (as numpy) */
	double z[6];
	for (int i = 0; i < 6; i++)
		z[i] = NAN;
	ck_assert_msg(mm(GPUD_F64, 2, 0, 3, NULL, NULL, z, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 6; i++)
		ck_assert(z[i] == 0);
	/* m = 0 or n = 0: an empty c, nothing written */
	double untouched = 7;
	ck_assert_msg(mm(GPUD_F64, 0, 3, 2, NULL, M, &untouched, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(mm(GPUD_F64, 2, 3, 0, M, NULL, &untouched, err, sizeof(err)) == 0, "%s", err);
	ck_assert(untouched == 7);
}
END_TEST

static uint64_t lcg = 12345;
static double rnd(void)
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(lcg >> 11) / 9007199254740992.0 * 2 - 1;
}

/* A random m x k by k x n product against a float64 triple loop: float64 to
 * k * 2^-53 and float32 to k * 2^-24 of sum |a||b| (per element). */
static void random_case(gpud_dtype dt, int m, int k, int n)
{
	size_t es = gpud_dtype_size(dt);
	double *a = malloc(sizeof(double) * (size_t)m * k),
	       *b = malloc(sizeof(double) * (size_t)k * n);
	void *A = malloc(es * (size_t)m * k + 8), *B = malloc(es * (size_t)k * n + 8),
	     *C = malloc(es * (size_t)m * n + 8);
	char err[256];
	for (int i = 0; i < m * k; i++) {
		a[i] = rnd();
		if (dt == GPUD_F32)
			a[i] = ((float *)A)[i] = (float)a[i];
		else
			((double *)A)[i] = a[i];
	}
	for (int i = 0; i < k * n; i++) {
		b[i] = rnd();
		if (dt == GPUD_F32)
			b[i] = ((float *)B)[i] = (float)b[i];
		else
			((double *)B)[i] = b[i];
	}
	ck_assert_msg(mm(dt, (uint64_t)m, (uint64_t)k, (uint64_t)n, A, B, C, err, sizeof(err)) == 0,
		      "%s", err);
	double eps = dt == GPUD_F32 ? 0x1p-24 : 0x1p-53, worst = 0;
	for (int i = 0; i < m; i++) {
		for (int j = 0; j < n; j++) {
			double s = 0, sa = 0;
			for (int l = 0; l < k; l++) {
				s += a[i * k + l] * b[l * n + j];
				sa += fabs(a[i * k + l] * b[l * n + j]);
			}
			double got = dt == GPUD_F32 ? (double)((float *)C)[i * n + j]
						    : ((double *)C)[i * n + j];
			double e = fabs(got - s) / (sa * eps * (k + 2));
			ck_assert_msg(e <= 1,
				      "%s %dx%dx%d: c[%d][%d] = %.17g, want %.17g (%.2f of tol)",
				      gpud_dtype_name(dt), m, k, n, i, j, got, s, e);
			if (e > worst)
				worst = e;
		}
	}
	free(a);
	free(b);
	free(A);
	free(B);
	free(C);
}

START_TEST(test_random_products)
{
	static const int shapes[][3] = {
		{37, 53, 29}, {1, 200, 7}, {64, 64, 64}, {5, 1, 300}, {129, 3, 2}};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		random_case(GPUD_F32, shapes[i][0], shapes[i][1], shapes[i][2]);
		random_case(GPUD_F64, shapes[i][0], shapes[i][1], shapes[i][2]);
	}
}
END_TEST

START_TEST(test_checks)
{
	char err[256];
	double x[12] = {0};
	/* b's rows must be a's columns */
	ck_assert_int_eq(mm2(GPUD_F64, GPUD_F64, 2, 4, 3, 2, x, x, NULL, -1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "matmul: b has 3 rows, expected 4 (a's columns)");
	/* one dtype */
	ck_assert_int_eq(mm2(GPUD_F32, GPUD_F64, 2, 3, 3, 2, x, x, NULL, -1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "matmul: 'b' is float64 but 'a' is float32; one dtype");
	/* tf32 is for float32 */
	ck_assert_int_eq(mm2(GPUD_F64, GPUD_F64, 2, 3, 3, 2, x, x, NULL, 1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "matmul: tf32 applies to float32 only; a and b are float64");
	ck_assert_int_eq(mm2(GPUD_F32, GPUD_F32, 2, 3, 3, 2, x, x, NULL, 1, err, sizeof(err)), 0);
	/* dimensions fit the BLAS's int */
	ck_assert_int_eq(mm2(GPUD_F32, GPUD_F32, (uint64_t)INT_MAX + 1, 1, 1, 1, NULL, NULL, NULL,
			     -1, err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "matmul: m (a's rows) is 2147483648; at most 2147483647");
	ck_assert_int_eq(mm2(GPUD_F32, GPUD_F32, 1, 1, 1, (uint64_t)INT_MAX + 2, NULL, NULL, NULL,
			     -1, err, sizeof(err)),
			 -1);
	assert_has(err, "n (b's columns) is 2147483649");
	/* rank, dtype and role are the binder's */
	const kernel_def *k = kernel_find("matmul");
	kernel_value v;
	kernel_array v1 = {.dtype = GPUD_F64, .ndim = 1, .shape = {3}, .count = 3, .data = x};
	ck_assert_int_eq(kernel_bind_array(k, &k->params[MM_A], &v1, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "matmul: argument 'a' must be 2-d, got 1-d with shape (3,)");
	kernel_array i2 = {.dtype = GPUD_I32, .ndim = 2, .shape = {1, 3}, .count = 3, .data = x};
	ck_assert_int_eq(kernel_bind_array(k, &k->params[MM_B], &i2, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "matmul: argument 'b' must be float32|float64 2-d array, got int32");
	/* the library is there (this machine has OpenBLAS) */
	ck_assert_msg(cpu_kernel_of(k)->available(err, sizeof(err)) == 0, "%s", err);
}
END_TEST

Suite *matmul_suite(void)
{
	Suite *s = suite_create("matmul");
	TCase *tc = tcase_create("cpu");
	tcase_add_test(tc, test_hand_worked);
	tcase_add_test(tc, test_degenerate_shapes);
	tcase_add_test(tc, test_random_products);
	tcase_add_test(tc, test_checks);
	suite_add_tcase(s, tc);
	return s;
}
