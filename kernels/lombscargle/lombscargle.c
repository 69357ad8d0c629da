/*
 * kernels/lombscargle/lombscargle.c — the Lomb-Scargle periodogram as
 * scipy.signal.lombscargle computes it in scipy >= 1.15 (the generalised
 * periodogram of Zechmeister and Kürster): weights normalised to sum 1, an
 * optional floating mean, CC and SS clamped at float64's epsneg, and three
 * normalize modes (power scaled by N/4, normalized by the weighted y^2 sum,
 * or the complex amplitude). legacy=true gives scipy <= 1.14's results
 * instead (they differ where precenter and normalize are both set); the
 * default is today's scipy. Frequencies are angular, given as an array or as
 * the grid f0 + df*k, k < nf (computed in float64; nothing to upload).
 * method picks how: direct (every sample at every frequency), nufft (grids
 * only: the sums through non-uniform FFTs, to a tolerance eps of max
 * |pgram|; nufft.c, nufft.cu), or auto (nufft on a grid where a cost model
 * says it is faster).
 *
 * This file holds the kernel_def (parameters, the argument checks, samples),
 * the check of the weights' values (the verdict) and the cpu entry, which
 * runs the direct reference (ref.c) or, for method=nufft and auto's pick of
 * it, nufft.c's NUFFT on FFTW3, the same results to eps. The files depend
 * one way: ref.c <- nufft.c <- lombscargle.c. No state: runs on the cpu
 * backend's workers, ranges [lo, hi) each.
 */
#include <stdio.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"

static const char *const normalize_words[] = {"power", "normalize", "amplitude", NULL};
static const char *const method_words[] = {"auto", "direct", "nufft", NULL};

static const kernel_param params[] = {
	[LS_X] = {.name = "x",
		  .role = KPARAM_IN,
		  .dtypes = KDT_FLOAT,
		  .ndim = 1,
		  .doc = "sample times"},
	[LS_Y] = {.name = "y",
		  .role = KPARAM_IN,
		  .dtypes = KDT_FLOAT,
		  .ndim = -1,
		  .doc = "measurement values, same length as x; or a batch (B, N): B series "
			 "sampled at the same x, one periodogram each"},
	[LS_FREQS] = {.name = "freqs",
		      .role = KPARAM_IN,
		      .dtypes = KDT_FLOAT,
		      .ndim = 1,
		      .optional = 1,
		      .doc = "angular frequencies (or give the grid f0, df, nf)"},
	[LS_PGRAM] = {.name = "pgram",
		      .role = KPARAM_OUT,
		      .dtypes = KDT_FLOAT | KDT_COMPLEX,
		      .ndim = -1,
		      .doc = "periodogram, one per frequency (B rows for a batch of y): x's "
			     "dtype, or its complex dtype for normalize=amplitude"},
	[LS_PRECENTER] = {.name = "precenter",
			  .role = KPARAM_SCALAR,
			  .stype = KSCALAR_BOOL,
			  .default_value = "false",
			  .doc = "subtract mean(y) (unweighted) first"},
	[LS_NORMALIZE] = {.name = "normalize",
			  .role = KPARAM_SCALAR,
			  .stype = KSCALAR_WORD,
			  .words = normalize_words,
			  .default_value = "power",
			  .doc = "power (false): scaled by N/4; normalize (true): over the "
				 "weighted sum of y^2; amplitude: the complex amplitude"},
	[LS_WEIGHTS] = {.name = "weights",
			.role = KPARAM_IN,
			.dtypes = KDT_FLOAT,
			.ndim = 1,
			.optional = 1,
			.doc = "non-negative sample weights, same length as x (default all "
			       "equal)"},
	[LS_FLOATING_MEAN] = {.name = "floating_mean",
			      .role = KPARAM_SCALAR,
			      .stype = KSCALAR_BOOL,
			      .default_value = "false",
			      .doc = "fit an offset for each frequency"},
	[LS_F0] = {.name = "f0",
		   .role = KPARAM_SCALAR,
		   .stype = KSCALAR_F64,
		   .optional = 1,
		   .doc = "grid: the first angular frequency"},
	[LS_DF] = {.name = "df",
		   .role = KPARAM_SCALAR,
		   .stype = KSCALAR_F64,
		   .optional = 1,
		   .doc = "grid: the step"},
	[LS_NF] = {.name = "nf",
		   .role = KPARAM_SCALAR,
		   .stype = KSCALAR_I64,
		   .optional = 1,
		   .doc = "grid: how many frequencies"},
	[LS_LEGACY] = {.name = "legacy",
		       .role = KPARAM_SCALAR,
		       .stype = KSCALAR_BOOL,
		       .default_value = "false",
		       .doc = "scipy <= 1.14's results (normalize by 2/dot(y, y) of the y as "
			      "given); no weights, floating_mean or amplitude"},
	[LS_METHOD] = {.name = "method",
		       .role = KPARAM_SCALAR,
		       .stype = KSCALAR_WORD,
		       .words = method_words,
		       .words_only = 1,
		       .default_value = "auto",
		       .doc = "direct: every sample at every frequency (N M); nufft: the grid "
			      "(f0, df, nf) through non-uniform FFTs (N + M log M), to eps; "
			      "auto: nufft on grids where faster, else direct"},
	[LS_EPS] = {.name = "eps",
		    .role = KPARAM_SCALAR,
		    .stype = KSCALAR_F64,
		    .optional = 1,
		    .doc = "method=nufft: the error allowed, relative to max |pgram| (default "
			   "1e-9 float64, 1e-5 float32)"},
};

static int ls_check(kernel_args *a, char *err, size_t errlen)
{
	const kernel_value *v = a->v;
	const kernel_array *x = &v[LS_X].arr, *y = &v[LS_Y].arr;
	static const int arrays[] = {LS_Y, LS_FREQS, LS_WEIGHTS};
	int grid = v[LS_F0].present || v[LS_DF].present || v[LS_NF].present;
	uint64_t nf;

	a->dtype = x->dtype;
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		const kernel_value *o = &v[arrays[i]];
		if (o->present && o->arr.dtype != x->dtype) {
			snprintf(err, errlen,
				 "lombscargle: x, y, freqs and weights must have one dtype: '%s' "
				 "is %s but 'x' is %s",
				 params[arrays[i]].name, gpud_dtype_name(o->arr.dtype),
				 gpud_dtype_name(x->dtype));
			return -1;
		}
	}
	if (y->ndim != 1 && y->ndim != 2) {
		snprintf(err, errlen,
			 "lombscargle: y must be 1-d (N samples) or 2-d (B series of N samples), "
			 "got %d-d",
			 y->ndim);
		return -1;
	}
	if (x->count != y->shape[y->ndim - 1]) {
		if (y->ndim == 1)
			snprintf(err, errlen,
				 "lombscargle: x and y must have the same length, got %zu and %zu",
				 x->count, y->count);
		else
			snprintf(err, errlen,
				 "lombscargle: a batch y (B, N) must have x's length in its last "
				 "dimension: x has %zu samples, y is (%llu, %llu)",
				 x->count, (unsigned long long)y->shape[0],
				 (unsigned long long)y->shape[1]);
		return -1;
	}
	if (x->count == 0 || y->count == 0) {
		snprintf(err, errlen, "lombscargle: x and y must not be empty");
		return -1;
	}
	if (v[LS_WEIGHTS].present && v[LS_WEIGHTS].arr.count != x->count) {
		snprintf(err, errlen,
			 "lombscargle: weights must have the length of x, got %zu for %zu samples",
			 v[LS_WEIGHTS].arr.count, x->count);
		return -1;
	}
	if (v[LS_FREQS].present && grid) {
		snprintf(err, errlen,
			 "lombscargle: give the frequencies as freqs or as the grid f0, df, nf, "
			 "not both");
		return -1;
	}
	if (!v[LS_FREQS].present) {
		if (!grid) {
			snprintf(err, errlen,
				 "lombscargle: missing the frequencies: give freqs (an array) or "
				 "the grid f0, df, nf");
			return -1;
		}
		for (int i = LS_F0; i <= LS_NF; i++)
			if (!v[i].present) {
				snprintf(err, errlen,
					 "lombscargle: the grid needs f0, df and nf; '%s' is "
					 "missing",
					 params[i].name);
				return -1;
			}
		if (v[LS_NF].s.i64 < 1 || v[LS_NF].s.i64 > (int64_t)1 << 40) {
			snprintf(err, errlen,
				 "lombscargle: nf must be between 1 and 2^40, got %lld",
				 (long long)v[LS_NF].s.i64);
			return -1;
		}
		nf = (uint64_t)v[LS_NF].s.i64;
	} else {
		nf = v[LS_FREQS].arr.count;
		if (nf == 0) {
			snprintf(err, errlen, "lombscargle: freqs must not be empty");
			return -1;
		}
	}
	if (v[LS_LEGACY].s.b) {
		const char *what = v[LS_WEIGHTS].present                   ? "weights"
				   : v[LS_FLOATING_MEAN].s.b               ? "floating_mean=true"
				   : v[LS_NORMALIZE].s.i64 == LS_AMPLITUDE ? "normalize=amplitude"
									   : NULL;
		if (what) {
			snprintf(err, errlen,
				 "lombscargle: legacy=true (scipy <= 1.14) has no %s; leave out "
				 "legacy for today's scipy",
				 what);
			return -1;
		}
	}
	if (v[LS_EPS].present) {
		double e = v[LS_EPS].s.f64, lo = x->dtype == GPUD_F32 ? 1e-6 : 1e-14;
		if (!(e >= lo && e <= 0.1)) {
			snprintf(err, errlen,
				 "lombscargle: eps must be between %g and 0.1 for %s, got %g", lo,
				 gpud_dtype_name(x->dtype), e);
			return -1;
		}
	}
	if (v[LS_METHOD].s.i64 == LS_NUFFT) {
		if (v[LS_FREQS].present) {
			snprintf(err, errlen,
				 "lombscargle: method=nufft needs the uniform grid f0, df, nf; got "
				 "the array freqs (use method=direct or auto for arrays)");
			return -1;
		}
		if ((long long)nf > LS_NUFFT_MAX_NF) {
			snprintf(err, errlen,
				 "lombscargle: method=nufft takes at most 2^29 frequencies, got "
				 "nf=%llu (use method=direct, or split the grid)",
				 (unsigned long long)nf);
			return -1;
		}
	}
	gpud_dtype out = x->dtype;
	if (v[LS_NORMALIZE].s.i64 == LS_AMPLITUDE)
		out = x->dtype == GPUD_F32 ? GPUD_C64 : GPUD_C128;
	if (y->ndim == 2) {
		uint64_t shape[2] = {y->shape[0], nf};
		kernel_set_output(a, LS_PGRAM, out, 2, shape);
	} else {
		kernel_set_output(a, LS_PGRAM, out, 1, &nf);
	}
	return 0;
}

static size_t ls_cpu_items(const kernel_args *a)
{
	return a->v[LS_PGRAM].arr.count;
}

int ls_cpu_uses_nufft(const kernel_args *a)
{
	int m = (int)a->v[LS_METHOD].s.i64;
	return m == LS_NUFFT || (m == LS_AUTO && ls_nufft_cpu_pick(a));
}

/* A frequency: two passes over the samples (one for legacy), a sine and
 * cosine each; or its share of the NUFFT. */
static size_t ls_cpu_item_cost(const kernel_args *a)
{
	if (ls_cpu_uses_nufft(a))
		return ls_nufft_cpu_item_cost(a);
	return (a->v[LS_LEGACY].s.b ? 1 : 2) * a->v[LS_X].arr.count;
}

/* method: direct, the NUFFT (nufft.c), or auto's pick for this range; a
 * batch's range series by series (items b M to (b + 1) M are series b's). */
static void ls_cpu_run(const kernel_args *a, size_t lo, size_t hi)
{
	const size_t nb = lombscargle_series(a);
	if (nb == 1) {
		if (ls_cpu_uses_nufft(a))
			ls_nufft_cpu_run(a, lo, hi);
		else
			lombscargle_ref_run(a, lo, hi);
		return;
	}
	const size_t m = a->v[LS_PGRAM].arr.count / nb;
	for (size_t b = lo / m; b < nb && b * m < hi; b++) {
		kernel_args v;
		lombscargle_series_view(a, b, &v);
		const size_t l = lo > b * m ? lo - b * m : 0, h = hi < (b + 1) * m ? hi - b * m : m;
		if (ls_cpu_uses_nufft(&v))
			ls_nufft_cpu_run(&v, l, h);
		else
			lombscargle_ref_run(&v, l, h);
	}
}

static inline double load(const kernel_array *v, size_t i)
{
	return v->dtype == GPUD_F32 ? (double)((const float *)v->data)[i]
				    : ((const double *)v->data)[i];
}

/* scipy's check of the weights' values: each >= 0 (so no NaN), their sum > 0. */
static unsigned ls_cpu_verdict(const kernel_args *a)
{
	const kernel_array *w = &a->v[LS_WEIGHTS].arr;
	double sum = 0;

	if (!a->v[LS_WEIGHTS].present)
		return 0;
	for (size_t j = 0; j < w->count; j++) {
		double v = load(w, j);
		if (!(v >= 0))
			return LS_BAD_WEIGHT;
		sum += v;
	}
	return sum > 0 ? 0 : LS_ZERO_WEIGHTS;
}

static void ls_verdict_message(const kernel_args *a, unsigned code, char *err, size_t errlen)
{
	(void)a;
	snprintf(err, errlen,
		 "lombscargle: argument 'weights' must hold only non-negative values that sum "
		 "to a positive value; got %s",
		 code & LS_BAD_WEIGHT ? "a negative or NaN weight" : "weights that sum to 0");
}

/*
 * Every variant of the GPU kernels (array or grid, weights or not,
 * floating_mean or not), both dtypes, every normalize mode: scipy <= 1.14 on
 * three points; then 300 samples (two tiles of the GPU's 256) or 700.
 */
static const char *const ls_samples[] = {
	"x=0.1,0.7,1.9 y=1,-0.5,2 freqs=0.5,2 precenter=true normalize=true legacy=true",
	"x=rand:300:0:30 y=rand:300:-3:3 freqs=rand:1000:0.1:10",
	"x=rand:300:0:30 y=rand:300:-3:3 freqs=rand:1000:0.1:10 floating_mean=true "
	"normalize=normalize",
	"x=rand:300:0:30 y=rand:300:-3:3 weights=rand:300:0:1 freqs=rand:1000:0.1:10 "
	"normalize=true",
	"x=rand:300:0:30 y=rand:300:-3:3 weights=rand:300:0.1:2 freqs=rand:1000:0.5:10 "
	"floating_mean=true normalize=amplitude",
	"x=rand:700:0:1000 y=rand:700:-1:1 f0=0.05 df=0.003 nf=3000",
	"x=rand:700:0:1000 y=rand:700:-1:1 f0=0.05 df=0.003 nf=3000 normalize=normalize "
	"floating_mean=true precenter=true",
	"x=rand:300:0:30 y=rand:300:-3:3 weights=rand:300:0:1 f0=0.3 df=0.01 nf=1000 "
	"normalize=amplitude",
	"x=rand:300:0:30 y=rand:300:-3:3 weights=rand:300:0.1:2 f0=0.3 df=0.01 nf=1000 "
	"floating_mean=true normalize=amplitude",
	/* the grid form's NUFFT path (forced on every grid sample too): legacy,
	 * and frequencies far above the mean sampling rate */
	"x=rand:500:0:100 y=rand:500:-1:1 f0=0.5 df=0.02 nf=2000 precenter=true normalize=true "
	"legacy=true method=auto",
	"x=rand:1000:0:500 y=rand:1000:-2:2 weights=rand:1000:0.1:2 f0=40 df=0.004 nf=4000 "
	"floating_mean=true normalize=normalize method=auto",
	NULL,
};

const kernel_def kernel_lombscargle = {
	.name = "lombscargle",
	.id = KERNEL_ID_lombscargle,
	.doc = "Lomb-Scargle periodogram (scipy.signal.lombscargle, scipy >= 1.15; legacy=true: "
	       "<= 1.14)",
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
	.check = ls_check,
	.samples = ls_samples,
	.verdict_message = ls_verdict_message,
};

const cpu_kernel cpu_kernel_lombscargle = {
	.name = "lombscargle",
	.items = ls_cpu_items,
	.item_cost = ls_cpu_item_cost,
	.run = ls_cpu_run,
	.verdict = ls_cpu_verdict,
};
