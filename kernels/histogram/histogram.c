/* kernels/histogram/histogram.c — histogram: the table entry, its checks, numpy's bin
 * arithmetic and the CPU reference (kernels/histogram/histogram.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/histogram/histogram.h"

#define KDT_INT (KDT(GPUD_I32) | KDT(GPUD_I64))

static const kernel_param p_hist[] = {
	{.name = "x",
	 .role = KPARAM_IN,
	 .dtypes = KDT_FLOAT | KDT_INT,
	 .ndim = -1,
	 .doc = "samples, any shape (flattened)"},
	{.name = "counts",
	 .role = KPARAM_OUT,
	 .dtypes = KDT(GPUD_I64),
	 .ndim = 1,
	 .doc = "int64 count of each bin"},
	{.name = "bins",
	 .role = KPARAM_SCALAR,
	 .stype = KSCALAR_I64,
	 .default_value = "10",
	 .doc = "number of equal-width bins"},
	{.name = "range_min",
	 .role = KPARAM_SCALAR,
	 .stype = KSCALAR_F64,
	 .doc = "lower edge of the first bin"},
	{.name = "range_max",
	 .role = KPARAM_SCALAR,
	 .stype = KSCALAR_F64,
	 .doc = "upper edge of the last bin (included)"},
};

/* The shortest text that reads back as v, as Python prints floats. */
static void fmt_double(char *buf, size_t len, double v)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v || v != v)
			return;
	}
}

/*
 * numpy 1.x's value-based casting of a Python float next to a float32
 * array: min_scalar_type gives float16 or float32 for values within
 * (-3.4e38, 3.4e38) and for non-finite ones, so the operation stays float32;
 * other values make it float64.
 */
static int fits_f32(double v)
{
	return !isfinite(v) || (v > -3.4e38 && v < 3.4e38);
}

/*
 * hist_plan.margin. With M = max(|first|, |last|), w = last - first and
 * g(x) = (x - first) bins / w the exact position of x in bins:
 *  - the estimate: first rounded to the sample type (u_f = 2^-24 with
 *    float32 edges, whose estimate starts from a float32 x - first32, else
 *    2^-53), the subtraction, norm and the product each off by at most u_f
 *    relative: |f - g(x)| <= u_f bins (M / w + 3) (+1% for second order);
 *  - an edge: i * step + first in float64 (2^-51 (M + w) absolute), then
 *    rounded to float32 for float32 edges (u_e = 2^-24 of M):
 *    |g(edge_i) - i| <= (u_e M + 2^-51 (2M + w)) bins / w.
 * If frac(f) is farther than their sum from 0 and 1, g(x) lies strictly
 * between g(edge_i) and g(edge_i+1). Doubled for safety.
 */
static double hist_margin(const hist_plan *p)
{
	if (p->step_zero)
		return 1;
	double M = fmax(fabs(p->first), fabs(p->last)), w = p->delta, b = (double)p->bins;
	double uf = p->f32_edges ? 0x1p-24 : 0x1p-53, ue = p->f32_edges ? 0x1p-24 : 0;
	double m = 2 * (uf * b * (M / w + 3) * 1.01 + (ue * M + 0x1p-51 * (2 * M + w)) * b / w);
	return m < 0.25 ? m : 1;
}

int hist_plan_make(gpud_dtype dt, int64_t bins, double range_min, double range_max, hist_plan *p,
		   char *err, size_t errlen)
{
	char a[32], b[32];

	memset(p, 0, sizeof(*p));
	if (bins < 1) {
		snprintf(err, errlen,
			 "histogram: argument 'bins' must be at least 1, got %lld (`bins` must be "
			 "positive)",
			 (long long)bins);
		return -1;
	}
	if (bins > HIST_MAX_BINS) {
		snprintf(err, errlen, "histogram: argument 'bins' must be at most %lld, got %lld",
			 (long long)HIST_MAX_BINS, (long long)bins);
		return -1;
	}
	fmt_double(a, sizeof(a), range_min);
	fmt_double(b, sizeof(b), range_max);
	if (range_min > range_max) {
		snprintf(err, errlen,
			 "histogram: argument 'range_min' (%s) must not be above 'range_max' (%s): "
			 "max must be larger than min in range parameter",
			 a, b);
		return -1;
	}
	if (!isfinite(range_min) || !isfinite(range_max)) {
		snprintf(
			err, errlen,
			"histogram: supplied range of [%s, %s] is not finite: argument '%s' must be "
			"a finite number",
			a, b, isfinite(range_min) ? "range_max" : "range_min");
		return -1;
	}
	double first = range_min, last = range_max;
	if (first == last) { /* numpy widens an empty range */
		first = first - 0.5;
		last = last + 0.5;
		if (first == last) {
			snprintf(
				err, errlen,
				"histogram: arguments 'range_min' and 'range_max' are both %s; numpy "
				"widens an empty range by 0.5 each side, which leaves it empty at this "
				"magnitude (numpy then fails); give range_max > range_min",
				a);
			return -1;
		}
	}
	double delta = last - first;
	if (!isfinite(delta)) {
		snprintf(
			err, errlen,
			"histogram: the range [%s, %s] is too wide: range_max - range_min overflows "
			"float64 (numpy's bins are wrong there); got a width of %g",
			a, b, delta);
		return -1;
	}
	p->bins = bins;
	p->first = first;
	p->last = last;
	p->delta = delta;
	p->step = delta / (double)bins;
	p->step_zero = p->step == 0;
	p->norm = (double)bins / delta;
	p->bins_up32 = (float)bins;
	if ((double)p->bins_up32 < (double)bins)
		p->bins_up32 = nextafterf(p->bins_up32, INFINITY);
	if (!isfinite(p->norm)) {
		snprintf(err, errlen,
			 "histogram: the range [%s, %s] is too narrow for %lld bins: bins / "
			 "(range_max - range_min) overflows float64 (numpy fails there)",
			 a, b, (long long)bins);
		return -1;
	}
	if (dt == GPUD_F32) {
		p->lo_f32 = fits_f32(first);
		p->hi_f32 = fits_f32(last);
		p->f32_edges = p->lo_f32 && p->hi_f32;
		p->norm_f32 = p->f32_edges && fits_f32(p->norm);
		/* converted only where they fit: out-of-range conversions are undefined */
		p->first32 = p->lo_f32 ? (float)first : 0;
		p->last32 = p->hi_f32 ? (float)last : 0;
		p->norm32 = p->norm_f32 ? (float)p->norm : 0;
	}
	p->margin = hist_margin(p);
	p->frac_lo32 = nextafterf((float)p->margin, INFINITY);
	p->frac_hi32 = nextafterf((float)(1 - p->margin), 0);
	return 0;
}

/*
 * numpy's linspace: arange(0, bins + 1) * step + first in float64, the last
 * element set to last; with a step that underflowed to 0, i / bins * delta +
 * first. Separate statements: a compiler may not fuse them into an fma.
 */
double hist_edge(const hist_plan *p, int64_t i)
{
	double y;
	if (i >= p->bins)
		return p->last;
	if (p->step_zero) {
		y = (double)i / (double)p->bins;
		y = y * p->delta;
	} else {
		y = (double)i * p->step;
	}
	y = y + p->first;
	return y;
}

/*
 * numpy's estimate f_indices.astype(intp) with `indices == bins` moved to
 * bins - 1. Estimates numpy cannot use (NaN, below -1, at or beyond bins + 1:
 * an IndexError there) are clamped.
 */
static int64_t est_index(double f, int64_t bins)
{
	if (!(f >= 0))
		return 0;
	if (f >= (double)bins)
		return bins - 1;
	return (int64_t)f;
}

/* numpy's corrections: one down below the bin's edge, else one up at or over the next. */
static int64_t corrected_f64(const hist_plan *p, int64_t i, double x)
{
	if (x < hist_edge(p, i))
		i--;
	else if (i != p->bins - 1 && x >= hist_edge(p, i + 1))
		i++;
	return i < 0 ? 0 : i;
}

/* x is kept: its bin in float64 arithmetic. */
static int64_t bin_kept_f64(const hist_plan *p, double x)
{
	double sub = x - p->first;
	return corrected_f64(p, est_index(sub * p->norm, p->bins), x);
}

int64_t hist_bin_f64(const hist_plan *p, double x)
{
	if (!(x >= p->first && x <= p->last))
		return -1;
	return bin_kept_f64(p, x);
}

int64_t hist_bin_f32(const hist_plan *p, float x)
{
	if (!p->f32_edges) { /* float64 bins; each edge compared as numpy would */
		double d = x;
		int lo = p->lo_f32 ? x >= p->first32 : d >= p->first;
		int hi = p->hi_f32 ? x <= p->last32 : d <= p->last;
		return lo && hi ? bin_kept_f64(p, d) : -1;
	}
	if (!(x >= p->first32 && x <= p->last32))
		return -1;
	float sub = x - p->first32;
	int64_t i;
	if (p->norm_f32) {
		float f = sub * p->norm32;
		i = est_index(f, p->bins);
	} else {
		i = est_index((double)sub * p->norm, p->bins);
	}
	if (x < (float)hist_edge(p, i))
		i--;
	else if (i != p->bins - 1 && x >= (float)hist_edge(p, i + 1))
		i++;
	return i < 0 ? 0 : i;
}

static int hist_check(kernel_args *a, char *err, size_t errlen)
{
	hist_plan p;
	const kernel_array *x = &a->v[HIST_X].arr;

	if (hist_plan_make(x->dtype, a->v[HIST_BINS].s.i64, a->v[HIST_MIN].s.f64,
			   a->v[HIST_MAX].s.f64, &p, err, errlen) != 0)
		return -1;
	a->dtype = x->dtype;
	uint64_t shape = (uint64_t)p.bins;
	kernel_set_output(a, HIST_COUNTS, GPUD_I64, 1, &shape);
	return 0;
}

static size_t hist_items(const kernel_args *a)
{
	(void)a;
	return 1; /* one work item: the whole histogram, sequential */
}

static void hist_run(const kernel_args *a, size_t lo, size_t hi)
{
	(void)lo;
	(void)hi;
	const kernel_array *x = &a->v[HIST_X].arr;
	int64_t *counts = a->v[HIST_COUNTS].arr.data;
	hist_plan p;
	char err[256];

	if (hist_plan_make(x->dtype, a->v[HIST_BINS].s.i64, a->v[HIST_MIN].s.f64,
			   a->v[HIST_MAX].s.f64, &p, err, sizeof(err)) != 0)
		return; /* check refused it already */
	memset(counts, 0, (size_t)p.bins * sizeof(int64_t));
	for (size_t i = 0; i < x->count; i++) {
		int64_t b;
		switch (x->dtype) {
		case GPUD_F32:
			b = hist_bin_f32(&p, ((const float *)x->data)[i]);
			break;
		case GPUD_F64:
			b = hist_bin_f64(&p, ((const double *)x->data)[i]);
			break;
		case GPUD_I32:
			b = hist_bin_f64(&p, (double)((const int32_t *)x->data)[i]);
			break;
		default:
			b = hist_bin_f64(&p, (double)((const int64_t *)x->data)[i]);
			break;
		}
		if (b >= 0)
			counts[b]++;
	}
}

/*
 * Samples, each on every path (cuda_kernel.npaths): few bins (below 64: the
 * per-warp aggregation), some hundred, float32 with a range beyond ±3.4e38
 * (float64 edges), many samples on and between edges, and more bins than
 * shared memory holds (over 6143: CUB's DeviceHistogram).
 */
static const char *const hist_samples[] = {
	"x=-1,0,1,2,3,7,-5,4 bins=4 range_min=-1 range_max=3",
	"x=-1,0,1,2,3,7,-5,4 bins=300 range_min=-1 range_max=3",
	"x=-1,0,1,2,3,7,-5,4 bins=4 range_min=-1 range_max=1e39",
	"x=rand:100000:-12:12 bins=100 range_min=-10 range_max=10",
	"x=rand:5000:-60:60 bins=7000 range_min=-50 range_max=50",
	NULL,
};

const kernel_def kernel_histogram = {
	.name = "histogram",
	.id = KERNEL_ID_histogram,
	.doc = "numpy.histogram(x, bins, range=(range_min, range_max)) exactly: int64 counts of "
	       "equal bins, the last bin closed, values outside it and NaN dropped",
	.params = p_hist,
	.nparams = sizeof(p_hist) / sizeof(p_hist[0]),
	.check = hist_check,
	.samples = hist_samples,
};

const cpu_kernel cpu_kernel_histogram = {
	.name = "histogram",
	.items = hist_items,
	.run = hist_run,
};
