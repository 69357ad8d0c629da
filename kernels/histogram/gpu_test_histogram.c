/*
 * kernels/histogram/gpu_test_histogram.c — histogram through gpud on the cuda
 * backend against the CPU reference, count for count: every dtype, sizes and
 * bin counts reaching each path (tests/gpu/kernels.c runs it).
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
#include "kernels/histogram/histogram.h"
#include "tests/gpu/gpu_test.h"

/* Sample i of dt as the reference bins it; v is a float64 value, rounded to dt. */
static void put_sample(gpud_dtype dt, void *x, size_t i, double v)
{
	switch (dt) {
	case GPUD_F32:
		((float *)x)[i] = (float)v;
		break;
	case GPUD_F64:
		((double *)x)[i] = v;
		break;
	case GPUD_I32:
		((int32_t *)x)[i] = !(v == v)  ? 0
				    : v < -2e9 ? -2000000000
				    : v > 2e9  ? 2000000000
					       : (int32_t)floor(v);
		break;
	default:
		((int64_t *)x)[i] = !(v == v)   ? 0
				    : v < -9e18 ? (int64_t)-9e18
				    : v > 9e18  ? (int64_t)9e18
						: (int64_t)floor(v);
		break;
	}
}

/*
 * histogram of n fresh samples of dt over [lo, hi] in `bins` bins through gpud
 * (counts poisoned first) against the reference's cpu entry: every count must be
 * equal. A fifth of the samples lie exactly on edges (the edges as the
 * reference rounds them), some on range_min and range_max, NaN and ±inf for
 * floats; the rest spread over the range and 10% of its width either side.
 */
static void hist_case(gpud_client *c, gpud_dtype dt, size_t n, int64_t bins, double lo, double hi)
{
	const kernel_def *k = kernel_find("histogram");
	size_t es = gpud_dtype_size(dt);
	void *x = malloc(n * es + 8);
	int64_t *got = malloc((size_t)bins * 8), *ref = malloc((size_t)bins * 8);
	hist_plan p;
	char err[512];
	ck_assert_msg(hist_plan_make(dt, bins, lo, hi, &p, err, sizeof(err)) == 0, "%s", err);
	double w = p.last - p.first;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rnd() % 20;
		double v = uniform(p.first - 0.1 * w, p.last + 0.1 * w);
		if (r < 4) /* on an edge */
			v = hist_edge(&p, (int64_t)(rnd() % (uint64_t)(bins + 1)));
		else if (r == 4)
			v = (rnd() & 1) ? hi : lo;
		else if (r == 5 && (dt == GPUD_F32 || dt == GPUD_F64))
			v = (rnd() % 3) == 0 ? NAN : (rnd() & 1) ? INFINITY : -INFINITY;
		if (dt == GPUD_F32 && !(fabs(v) < 3.4e38) && v == v && !isinf(v))
			v = copysign(3.4e38, v);
		put_sample(dt, x, i, v);
		if (dt == GPUD_I64 && fabs(v) >= 4503599627370496.0) /* odd values too, past 2^52 */
			((int64_t *)x)[i] += (int64_t)(rnd() % 3) - 1;
	}
	uint64_t shape = n;
	gpud_handle hx, hc = poisoned(c, GPUD_I64, (uint64_t)bins);
	ck_assert(gpud_alloc(c, dt, 1, &shape, x, &hx) == GPUD_OK);
	gpud_arg args[5] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("counts", hc),
			    gpud_arg_i64("bins", bins), gpud_arg_f64("range_min", lo),
			    gpud_arg_f64("range_max", hi)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, "histogram", args, 5, &o, 1, &no, NULL) == GPUD_OK,
		      "histogram %s n=%zu bins=%lld [%.17g, %.17g]: %s", gpud_dtype_name(dt), n,
		      (long long)bins, lo, hi, gpud_errmsg(c));
	ck_assert_uint_eq(o.handle, hc);
	ck_assert(gpud_download_range(c, hc, 0, got, (size_t)bins * 8) == GPUD_OK);

	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	a.v[HIST_X].arr =
		(kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = x};
	a.v[HIST_COUNTS].arr = (kernel_array){.dtype = GPUD_I64,
					      .ndim = 1,
					      .shape = {(uint64_t)bins},
					      .count = (size_t)bins,
					      .data = ref};
	a.v[HIST_BINS].s.i64 = bins;
	a.v[HIST_MIN].s.f64 = lo;
	a.v[HIST_MAX].s.f64 = hi;
	cpu_kernel_of(k)->run(&a, 0, cpu_kernel_of(k)->items(&a));
	int64_t total = 0, unwritten = 0, bad = -1;
	for (int64_t b = 0; b < bins; b++) {
		total += ref[b];
		if (is_poison(GPUD_I64, got, (size_t)b))
			unwritten++;
		else if (got[b] != ref[b] && bad < 0)
			bad = b;
	}
	ck_assert_msg(unwritten == 0, "histogram %s n=%zu bins=%lld: %lld counts unwritten",
		      gpud_dtype_name(dt), n, (long long)bins, (long long)unwritten);
	ck_assert_msg(bad < 0,
		      "histogram %s n=%zu bins=%lld [%.17g, %.17g]: bin %lld counted %lld, the "
		      "reference %lld",
		      gpud_dtype_name(dt), n, (long long)bins, lo, hi, (long long)bad,
		      bad < 0 ? 0 : (long long)got[bad], bad < 0 ? 0 : (long long)ref[bad]);
	if (n > 1000)
		printf("histogram %-8s n=%-8zu bins=%-7lld [%-12.6g %12.6g] %lld counted, equal\n",
		       gpud_dtype_name(dt), n, (long long)bins, lo, hi, (long long)total);
	gpud_handle fr[2] = {hx, hc};
	ck_assert(gpud_free(c, fr, 2) == GPUD_OK);
	free(x);
	free(got);
	free(ref);
}

void gpu_test_histogram(gpud_client *c, const char *kernel)
{
	static const size_t ns[] = {1, 1000, (1u << 20) + 3};
	/* up to 4095 bins: shared edges and counters (below 64 aggregated per warp);
	 * 8192 and 10000: CUB's DeviceHistogram; 2^19 bins over 2^20 samples (below):
	 * the atomic kernel (CUB's counters would pass 128 MiB) */
	static const int64_t binss[] = {1, 7, 64, 256, 1000, 4095, 8192, 10000};
	(void)kernel; /* the folder has one kernel */
	for (int dt = GPUD_F32; dt <= GPUD_I64; dt++) {
		int ints = dt == GPUD_I32 || dt == GPUD_I64;
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			for (size_t j = 0; j < sizeof(binss) / sizeof(binss[0]); j++) {
				double lo = uniform(-1000, 1000), hi;
				if (ints) /* integer edges: samples land on them */
					lo = floor(lo),
					hi = lo + (double)binss[j] * (double)(1 + rnd() % 5);
				else
					hi = lo + exp(uniform(log(1e-3), log(1e4)));
				hist_case(c, (gpud_dtype)dt, ns[i], binss[j], lo, hi);
			}
		}
		double lo = floor(uniform(-100, 100));
		hist_case(c, (gpud_dtype)dt, 4099, 3, lo, lo); /* an empty range, widened */
		hist_case(c, (gpud_dtype)dt, (1u << 20) + 3, 1 << 19, lo, lo + (1 << 19));
	}
	/* float32 ranges beyond ±3.4e38 (numpy 1.x bins them in float64), and one wider
	 * than float32 holds (x - range_min overflows: numpy fails, both backends clamp) */
	hist_case(c, GPUD_F32, 100000, 10, -1e38, 1e39);
	hist_case(c, GPUD_F32, 100000, 300, -3e38, 3.3e38);
	/* int64 beyond 2^53: converted to float64 as numpy does */
	hist_case(c, GPUD_I64, 100000, 16, 9007199254740992.0, 9007199254741024.0);
}
