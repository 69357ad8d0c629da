/*
 * kernels/elementwise/gpu_test_elementwise.c — each elementwise kernel through
 * gpud on the cuda backend against its CPU reference: every dtype it takes,
 * several lengths, a broadcast scalar on either side (tests/gpu/kernels.c runs
 * it).
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
#include "kernels/elementwise/elementwise.h"
#include "tests/gpu/gpu_test.h"

/* z of op for x, y (arrays, or scalars xs/ys when the array is NULL) through gpud vs
 * the kernel's CPU reference, with z poisoned first. */
static void ew_case(gpud_client *c, const char *name, gpud_dtype dt, size_t n, int xscalar,
		    int yscalar)
{
	const kernel_def *k = kernel_find(name);
	int op = ew_op_of(k);
	int ints = dt == GPUD_I32 || dt == GPUD_I64;
	double lo = op == EW_DIV || op == EW_REL_DIFF ? 0.5 : -3, hi = 3;
	void *x = random_of(dt, n, lo, hi), *y = random_of(dt, n, lo, hi);
	double xs = ints ? 7 : 1.25, ys = ints ? -3 : 0.875, av = 0.75;
	uint64_t shape = n;
	gpud_handle hx = 0, hy = 0, hz = poisoned(c, dt, n);
	gpud_arg args[4];
	int na = 0;
	if (!xscalar)
		ck_assert(gpud_alloc(c, dt, 1, &shape, x, &hx) == GPUD_OK);
	if (!yscalar)
		ck_assert(gpud_alloc(c, dt, 1, &shape, y, &hy) == GPUD_OK);
	args[na++] = xscalar ? gpud_arg_f64("x", xs) : gpud_arg_buffer("x", hx);
	args[na++] = yscalar ? gpud_arg_f64("y", ys) : gpud_arg_buffer("y", hy);
	args[na++] = gpud_arg_buffer("z", hz);
	if (op == EW_AXPY || op == EW_SAXPY_TRIG)
		args[na++] = gpud_arg_f64("a", av);
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, name, args, (size_t)na, &o, 1, &no, NULL) == GPUD_OK, "%s: %s",
		      name, gpud_errmsg(c));
	void *z = malloc(n * gpud_dtype_size(dt) + 8);
	ck_assert(gpud_download_range(c, hz, 0, z, n * gpud_dtype_size(dt)) == GPUD_OK);

	/* the CPU reference of the same kernel, on the same inputs */
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	void *ref = malloc(n * gpud_dtype_size(dt) + 8);
	void *in[2] = {x, y};
	double sv[2] = {xs, ys};
	int sc[2] = {xscalar, yscalar};
	for (int i = 0; i < 2; i++) {
		a.v[i].present = 1;
		a.v[i].scalar = sc[i];
		a.v[i].s.f64 = sv[i];
		a.v[i].arr = (kernel_array){
			.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = in[i]};
	}
	a.v[EW_Z].arr =
		(kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = ref};
	a.v[EW_A].s.f64 = av;
	cpu_kernel_of(k)->run(&a, 0, n);
	double tol = dt == GPUD_F32 ? 2e-6 : 1e-13, worst = 0;
	size_t unwritten = 0, bad = n;
	for (size_t i = 0; i < n; i++) {
		if (!ints && is_poison(dt, z, i)) {
			unwritten++;
			continue;
		}
		double g = get_any(dt, z, i), r = get_any(dt, ref, i);
		if (ints) {
			if (memcmp((char *)z + i * gpud_dtype_size(dt),
				   (char *)ref + i * gpud_dtype_size(dt),
				   gpud_dtype_size(dt)) != 0 &&
			    bad == n)
				bad = i;
			continue;
		}
		double e = fabs(g - r) / (fabs(r) > 1 ? fabs(r) : 1);
		if (!(e <= worst))
			worst = e;
	}
	ck_assert_msg(unwritten == 0, "%s %s n=%zu: %zu elements unwritten", name,
		      gpud_dtype_name(dt), n, unwritten);
	ck_assert_msg(bad == n, "%s %s n=%zu: element %zu differs from the CPU reference", name,
		      gpud_dtype_name(dt), n, bad);
	ck_assert_msg(worst <= tol, "%s %s n=%zu (x%s y%s): max rel err %.3g > %.1g", name,
		      gpud_dtype_name(dt), n, xscalar ? " scalar" : "", yscalar ? " scalar" : "",
		      worst, tol);
	if (n > 1000)
		printf("%-15s %-8s n=%-8zu x%s y%s max err/ref %.2e unwritten=0\n", name,
		       gpud_dtype_name(dt), n, xscalar ? "=scalar" : "[] ",
		       yscalar ? "=scalar" : "[] ", worst);
	gpud_handle fr[3] = {hz};
	size_t nfr = 1;
	if (!xscalar)
		fr[nfr++] = hx;
	if (!yscalar)
		fr[nfr++] = hy;
	ck_assert(gpud_free(c, fr, nfr) == GPUD_OK);
	free(x);
	free(y);
	free(z);
	free(ref);
}

void gpu_test_elementwise(gpud_client *c, const char *name)
{
	const kernel_def *k = kernel_find(name);
	static const size_t ns[] = {1, 1000, (1u << 20) + 3};
	for (int dt = GPUD_F32; dt <= GPUD_I64; dt++) {
		if (!(k->params[EW_X].dtypes & KDT(dt)))
			continue;
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			ew_case(c, name, (gpud_dtype)dt, ns[i], 0, 0);
		ew_case(c, name, (gpud_dtype)dt, 4099, 1, 0);
		ew_case(c, name, (gpud_dtype)dt, 4099, 0, 1);
	}
}
