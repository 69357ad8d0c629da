/*
 * kernels/reduce/gpu_test_reduce.c — each reduction through gpud on the cuda
 * backend against its CPU reference: every dtype it takes, several lengths,
 * NaN for min and max (tests/gpu/kernels.c runs it).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpud/client.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/reduce/reduce.h"
#include "tests/gpu/gpu_test.h"

static void red_case(gpud_client *c, const char *name, gpud_dtype dt, size_t n, int with_nan)
{
	const kernel_def *k = kernel_find(name);
	int op = red_op_of(k), oi = red_out(k);
	void *x = random_of(dt, n, -2, 3), *y = random_of(dt, n, -1, 1);
	if (with_nan && n > 10)
		memcpy((char *)x + (n / 3) * gpud_dtype_size(dt),
		       dt == GPUD_F32 ? (const void *)&(float){NAN} : (const void *)&(double){NAN},
		       gpud_dtype_size(dt));
	uint64_t shape = n;
	gpud_handle hx, hy = 0;
	ck_assert(gpud_alloc(c, dt, 1, &shape, x, &hx) == GPUD_OK);
	gpud_arg args[2] = {gpud_arg_buffer("x", hx)};
	size_t na = 1;
	if (op == RED_DOT) {
		ck_assert(gpud_alloc(c, dt, 1, &shape, y, &hy) == GPUD_OK);
		args[na++] = gpud_arg_buffer("y", hy);
	}
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, name, args, na, &o, 1, &no, NULL) == GPUD_OK, "%s: %s", name,
		      gpud_errmsg(c));
	gpud_dtype odt = o.dtype;
	ck_assert_int_eq(o.ndim, 0);
	unsigned char got[8], ref[8];
	ck_assert(gpud_download_range(c, o.handle, 0, got, gpud_dtype_size(odt)) == GPUD_OK);

	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	a.v[0].arr = (kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = x};
	a.v[1].arr = (kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = y};
	a.v[oi].arr = (kernel_array){.dtype = odt, .ndim = 0, .count = 1, .data = ref};
	cpu_kernel_of(k)->run(&a, 0, 1);
	double g = get_any(odt, got, 0), r = get_any(odt, ref, 0);
	double scale = 0; /* sum of |terms| */
	for (size_t i = 0; i < n; i++)
		scale += fabs(get_any(dt, x, i) * (op == RED_DOT ? get_any(dt, y, i) : 1));
	if (dt == GPUD_I32 || dt == GPUD_I64) {
		ck_assert_msg(memcmp(got, ref, gpud_dtype_size(odt)) == 0,
			      "%s %s n=%zu: %.17g vs %.17g", name, gpud_dtype_name(dt), n, g, r);
	} else if (r != r) {
		ck_assert_msg(g != g, "%s %s n=%zu: %g, expected NaN", name, gpud_dtype_name(dt), n,
			      g);
	} else {
		/* kernels/reduce/reduce.h: CUB's float64 tree within 1e-13 of sum|terms| at these
		 * sizes, the reference compensated; float32 results rounded once (1 ulp) */
		double tol = (dt == GPUD_F32 ? 1.2e-7 * fabs(r) : 0) +
			     1e-13 * (op == RED_MEAN ? scale / (double)n : scale);
		ck_assert_msg(fabs(g - r) <= tol,
			      "%s %s n=%zu: %.17g vs reference %.17g (tol %.3g)", name,
			      gpud_dtype_name(dt), n, g, r, tol);
	}
	if (n > 1000)
		printf("%-6s %-8s n=%-8zu%s gpu %.10g ref %.10g\n", name, gpud_dtype_name(dt), n,
		       with_nan ? " NaN" : "    ", g, r);
	gpud_handle fr[3] = {hx, o.handle, hy};
	ck_assert(gpud_free(c, fr, hy ? 3 : 2) == GPUD_OK);
	free(x);
	free(y);
}

void gpu_test_reduce(gpud_client *c, const char *name)
{
	const kernel_def *k = kernel_find(name);
	static const size_t ns[] = {1, 1000, (1u << 20) + 5};
	int op = red_op_of(k);
	for (int dt = GPUD_F32; dt <= GPUD_I64; dt++) {
		if (!(k->params[0].dtypes & KDT(dt)))
			continue;
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			red_case(c, name, (gpud_dtype)dt, ns[i], 0);
		if ((op == RED_MIN || op == RED_MAX) && dt <= GPUD_F64)
			red_case(c, name, (gpud_dtype)dt, 5001, 1);
	}
}
