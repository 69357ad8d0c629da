/*
 * kernels/matmul/gpu_test_matmul.c — matmul (cuBLAS) through gpud on the cuda
 * backend against a float64 product here (tests/gpu/kernels.c runs it).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpud/client.h>

#include "kernels/core/kernel.h"
#include "kernels/matmul/matmul.h"
#include "tests/gpu/gpu_test.h"

/*
 * a (m x k) b (k x n) through gpud into a poisoned c, against a float64 triple
 * loop here (the GPU machine has no CPU BLAS). Per element, with S = sum over l
 * of |a_il b_lj|: float64 within (k + 2) 2^-53 S, float32 within (k + 2) 2^-24
 * S, float32 with tf32 within 2^-9 S + (k + 2) 2^-24 S (TF32 keeps 10 bits of
 * each input's mantissa: each product is off by up to about 2^-10 of itself).
 */
static void mm_case(gpud_client *c, gpud_dtype dt, int tf32, uint64_t m, uint64_t k, uint64_t n,
		    int daemon_output)
{
	size_t es = gpud_dtype_size(dt);
	void *a = random_of(dt, m * k, -1, 1), *b = random_of(dt, k * n, -1, 1);
	void *got = malloc(m * n * es + 8);
	uint64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
	gpud_handle ha, hb, hc = 0;
	ck_assert(gpud_alloc(c, dt, 2, sa, a, &ha) == GPUD_OK);
	ck_assert(gpud_alloc(c, dt, 2, sb, b, &hb) == GPUD_OK);
	gpud_arg args[4] = {gpud_arg_buffer("a", ha), gpud_arg_buffer("b", hb),
			    gpud_arg_bool("tf32", tf32)};
	size_t na = 3;
	if (!daemon_output) {
		void *p = malloc(m * n * es + 8);
		poison(dt, p, m * n);
		ck_assert(gpud_alloc(c, dt, 2, sc, p, &hc) == GPUD_OK);
		free(p);
		args[na++] = gpud_arg_buffer("c", hc);
	}
	gpud_output o;
	size_t no;
	gpud_run_info info;
	ck_assert_msg(gpud_run(c, "matmul", args, na, &o, 1, &no, &info) == GPUD_OK,
		      "matmul %s %llux%llux%llu: %s", gpud_dtype_name(dt), (unsigned long long)m,
		      (unsigned long long)k, (unsigned long long)n, gpud_errmsg(c));
	if (daemon_output)
		hc = o.handle;
	ck_assert(o.ndim == 2 && o.shape[0] == m && o.shape[1] == n && o.dtype == dt);
	if (m * n > 0)
		ck_assert(gpud_download_range(c, hc, 0, got, m * n * es) == GPUD_OK);
	double eps = dt == GPUD_F32 ? 0x1p-24 : 0x1p-53, worst = 0;
	size_t unwritten = 0;
	/* a as float64, b transposed: the reference's inner loop reads both in order */
	double *ad = malloc(m * k * sizeof(double) + 8), *bt = malloc(k * n * sizeof(double) + 8);
	for (uint64_t i = 0; i < m * k; i++)
		ad[i] = get(dt, a, i);
	for (uint64_t l = 0; l < k; l++)
		for (uint64_t j = 0; j < n; j++)
			bt[j * k + l] = get(dt, b, l * n + j);
	for (uint64_t i = 0; i < m; i++) {
		for (uint64_t j = 0; j < n; j++) {
			double s = 0, sabs = 0;
			for (uint64_t l = 0; l < k; l++) {
				double p = ad[i * k + l] * bt[j * k + l];
				s += p;
				sabs += fabs(p);
			}
			if (is_poison(dt, got, i * n + j)) {
				unwritten++;
				continue;
			}
			double tol = ((double)(k + 2) * eps + (tf32 ? 0x1p-9 : 0)) * sabs;
			double e = fabs(get(dt, got, i * n + j) - s);
			ck_assert_msg(e <= tol,
				      "matmul %s%s %llux%llux%llu: c[%llu][%llu] = %.17g, "
				      "reference %.17g (tol %.3g)",
				      gpud_dtype_name(dt), tf32 ? " tf32" : "",
				      (unsigned long long)m, (unsigned long long)k,
				      (unsigned long long)n, (unsigned long long)i,
				      (unsigned long long)j, get(dt, got, i * n + j), s, tol);
			if (sabs > 0 && e / sabs > worst)
				worst = e / sabs;
		}
	}
	ck_assert_msg(unwritten == 0, "matmul %s %llux%llux%llu: %zu elements unwritten",
		      gpud_dtype_name(dt), (unsigned long long)m, (unsigned long long)k,
		      (unsigned long long)n, unwritten);
	if (m * n * k >= 1000000)
		printf("matmul %-8s%s %5llux%5llux%5llu max |err|/sum|ab| %.2e kernel %.1f us\n",
		       gpud_dtype_name(dt), tf32 ? " tf32" : "     ", (unsigned long long)m,
		       (unsigned long long)k, (unsigned long long)n, worst, info.kernel_us);
	gpud_handle fr[3] = {ha, hb, hc};
	ck_assert(gpud_free(c, fr, 3) == GPUD_OK);
	free(a);
	free(b);
	free(ad);
	free(bt);
	free(got);
}

void gpu_test_matmul(gpud_client *c, const char *kernel)
{
	static const uint64_t shapes[][3] = {
		{1, 1, 1},    {1, 200, 7},     {7, 1, 9},       {37, 53, 29},       {129, 3, 2},
		{3, 1000, 5}, {255, 257, 263}, {640, 512, 768}, {1024, 1024, 1024}, {6, 0, 5},
	};
	(void)kernel; /* the folder has one kernel */
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const uint64_t *s = shapes[i];
		mm_case(c, GPUD_F32, 0, s[0], s[1], s[2], 0);
		mm_case(c, GPUD_F64, 0, s[0], s[1], s[2], 0);
		mm_case(c, GPUD_F32, 1, s[0], s[1], s[2], 0);
	}
	mm_case(c, GPUD_F64, 0, 33, 17, 65, 1); /* c made by gpud */
	mm_case(c, GPUD_F32, 0, 0, 4, 3, 1);    /* an empty c */
}
