/*
 * kernels/histogram/histogram.h — histogram of the kernel library: the counts of x in
 * `bins` equal bins over [range_min, range_max], exactly what
 * numpy.histogram(x, bins=bins, range=(range_min, range_max)) returns, as
 * int64 (the numpy 1.x that Debian ships, with Python floats for the range).
 *
 * numpy's arithmetic, step for step (numpy/lib/histograms.py):
 *   - an empty range (range_min == range_max) is widened by 0.5 each side;
 *   - the bin type is float64, or float32 for float32 x when both edges lie
 *     within ±3.4e38 (numpy 1.x's value-based casting of Python floats);
 *   - the edges are linspace(first, last, bins + 1) in float64,
 *     edge[i] = i * step + first, edge[bins] = last, rounded to the bin type;
 *   - a sample is kept when first <= x <= last (NaN never is), compared in
 *     float32 for float32 x where that edge fits float32, else in float64;
 *     integers are converted to float64 first;
 *   - its bin is estimated as (x - first) * norm, norm = bins / (last - first)
 *     (in float32 for float32 bins where norm fits float32), truncated; an
 *     estimate of `bins` becomes bins - 1; then one step down if
 *     x < edge[i], else one step up if x >= edge[i + 1] and i < bins - 1.
 * Both backends do exactly that, so counts match numpy's bit for bit, on the
 * edges too. Where numpy itself fails on the data (an estimate beyond
 * bins + 1 or below 0 raises IndexError or ValueError there: float32 bins
 * narrower than a float32 ulp, float32 ranges wider than float32 can hold),
 * the bin is clamped to [0, bins - 1] instead.
 *
 * Refused, with numpy's words where numpy refuses: bins < 1 ("`bins` must
 * be positive"), bins > HIST_MAX_BINS, range_min > range_max ("max must be
 * larger than min in range parameter"), a non-finite edge ("supplied range
 * of [a, b] is not finite"), an empty range too large to widen by 0.5, and a
 * range whose width overflows float64 (numpy's bins come out wrong there).
 */
#ifndef GPUD_KERNELS_HISTOGRAM_H
#define GPUD_KERNELS_HISTOGRAM_H

#include <stdint.h>

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parameter order. */
enum { HIST_X, HIST_COUNTS, HIST_BINS, HIST_MIN, HIST_MAX };

#define HIST_MAX_BINS (1ll << 30)

/* Everything a backend needs to bin a sample, from the validated arguments. */
typedef struct hist_plan {
	int64_t bins;
	double first, last; /* the outer edges, after widening an empty range */
	double delta, step; /* linspace: last - first, delta / bins */
	int step_zero;      /* step underflowed to 0: edges are i / bins * delta + first */
	double norm;        /* bins / (last - first) */
	int f32_edges;      /* float32 x with float32 bins: the edges are float32 */
	int lo_f32, hi_f32; /* float32 x: first / last compared in float32 */
	int norm_f32;       /* float32 edges: (x - first) * norm in float32 */
	float first32, last32, norm32;
	float bins_up32; /* the smallest float >= bins */
	/*
	 * An estimate f with frac(f) in (margin, 1 - margin) (and 0 <= f < bins)
	 * is already numpy's bin: the sample lies strictly between the edges
	 * around it, so the corrections would not move it. The GPU then skips
	 * reading the two edges. margin bounds the estimate's rounding error plus
	 * the edges' (in units of bins), doubled; 1 where it would pass 1/4 (the
	 * corrections always run).
	 */
	double margin;
	float frac_lo32, frac_hi32; /* margin and 1 - margin as floats, rounded inwards */
} hist_plan;

/*
 * The plan for x of dtype dt, or -1 with a message (naming the argument,
 * expected vs got) in err.
 */
int hist_plan_make(gpud_dtype dt, int64_t bins, double range_min, double range_max, hist_plan *p,
		   char *err, size_t errlen);

/* Edge i (0..bins) in float64, before rounding to the bin type. */
double hist_edge(const hist_plan *p, int64_t i);

/* The bin of one sample (x converted to float64 for non-float32 x), or -1. */
int64_t hist_bin_f32(const hist_plan *p, float x);
int64_t hist_bin_f64(const hist_plan *p, double x);

extern const kernel_def kernel_histogram;

#ifdef __cplusplus
}
#endif
#endif
