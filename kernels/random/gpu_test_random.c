/*
 * kernels/random/gpu_test_random.c — uniform and normal (cuRAND) through gpud
 * on the cuda backend against cuRAND's host generator (tests/gpu/kernels.c runs
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
#include "kernels/random/random.h"
#include "tests/gpu/gpu_test.h"

/*
 * n numbers of name through gpud into a poisoned out, against the cpu
 * backend's code linked in here (cuRAND's host generator: libcurand must load
 * on this machine, $GPUD_CURAND). uniform must be equal bit for bit. normal:
 * cuRAND's host Box-Muller uses the host's libm, the device its own log and
 * sincos, so equality is not promised: float64 within 1e-13 and float32 within
 * 2e-6 of max(1, |x|); how many are bitwise equal is printed.
 */
static void rnd_case(gpud_client *c, const char *name, gpud_dtype dt, uint64_t n, int64_t seed,
		     double p1, double p2)
{
	const kernel_def *k = kernel_find(name);
	int normal = k == &kernel_normal;
	size_t es = gpud_dtype_size(dt);
	gpud_handle h = poisoned(c, dt, n);
	gpud_arg args[6] = {gpud_arg_i64("n", (int64_t)n),
			    gpud_arg_i64("seed", seed),
			    gpud_arg_dtype("dtype", dt),
			    gpud_arg_buffer("out", h),
			    gpud_arg_f64(normal ? "mean" : "low", p1),
			    gpud_arg_f64(normal ? "stddev" : "high", p2)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, name, args, 6, &o, 1, &no, NULL) == GPUD_OK, "%s: %s", name,
		      gpud_errmsg(c));
	void *got = malloc(n * es + 8), *ref = malloc(n * es + 8);
	ck_assert(gpud_download_range(c, h, 0, got, n * es) == GPUD_OK);

	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	a.v[RND_N].s.i64 = (int64_t)n;
	a.v[RND_SEED].s.i64 = seed;
	a.v[RND_DTYPE].s.dtype = dt;
	a.v[RND_P1].s.f64 = p1;
	a.v[RND_P2].s.f64 = p2;
	a.v[RND_OUT].arr =
		(kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = ref};
	char err[1024];
	ck_assert_msg(cpu_kernel_of(k)->available(err, sizeof(err)) == 0, "the reference: %s", err);
	cpu_kernel_of(k)->run(&a, 0, 1);
	size_t unwritten = 0, bitwise = 0;
	/*
	 * normal: cuRAND's device Box-Muller for float32 takes sin and cos from the
	 * fast __sincosf (absolute error about 2^-21 on [-pi, pi], more up to 2 pi)
	 * times s = sqrt(-2 log u) <= 6.7, the host's from libm: up to about 1e-5
	 * absolute apart. float64 uses accurate functions on both sides.
	 */
	double worst = 0, tol = dt == GPUD_F32 ? 2e-5 : 1e-13;
	size_t worst_i = 0;
	for (size_t i = 0; i < n; i++) {
		if (is_poison(dt, got, i)) {
			unwritten++;
			continue;
		}
		if (memcmp((char *)got + i * es, (char *)ref + i * es, es) == 0) {
			bitwise++;
			continue;
		}
		double g = get(dt, got, i), r = get(dt, ref, i);
		ck_assert_msg(normal, "uniform %s n=%llu seed %lld: [%zu] = %a, the host's %a",
			      gpud_dtype_name(dt), (unsigned long long)n, (long long)seed, i, g, r);
		double e = fabs(g - r) / (fabs(r) > 1 ? fabs(r) : 1);
		if (e > worst)
			worst = e, worst_i = i;
	}
	ck_assert_msg(worst <= tol,
		      "normal %s n=%llu seed %lld: [%zu] = %.17g, the host's %.17g (%.2e apart, "
		      "tolerance %.0e)",
		      gpud_dtype_name(dt), (unsigned long long)n, (long long)seed, worst_i,
		      get(dt, got, worst_i), get(dt, ref, worst_i), worst, tol);
	ck_assert_msg(unwritten == 0, "%s %s n=%llu: %zu elements unwritten", name,
		      gpud_dtype_name(dt), (unsigned long long)n, unwritten);
	if (n > 1000)
		printf("%-7s %-8s n=%-8llu seed %-14lld bitwise equal to the host's %.4f%%, max "
		       "err %.2e\n",
		       name, gpud_dtype_name(dt), (unsigned long long)n, (long long)seed,
		       100.0 * (double)bitwise / (double)n, worst);
	ck_assert(gpud_free(c, &h, 1) == GPUD_OK);
	free(got);
	free(ref);
}

void gpu_test_random(gpud_client *c, const char *name)
{
	static const uint64_t ns[] = {1, 2, 7, 1000, 4097, (1u << 20), (1u << 20) + 1};
	static const int64_t seeds[] = {0, 42, (INT64_C(1) << 40) + 7};
	int normal = !strcmp(name, "normal");
	for (int dt = GPUD_F32; dt <= GPUD_F64; dt++)
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++)
				rnd_case(c, name, (gpud_dtype)dt, ns[i], seeds[s], 0, 1);
	/* low/high, mean/stddev */
	rnd_case(c, name, GPUD_F32, 100001, 5, normal ? 3 : -2, normal ? 0.25 : 6);
	rnd_case(c, name, GPUD_F64, 100001, 5, normal ? 3 : -2, normal ? 0.25 : 6);
}
