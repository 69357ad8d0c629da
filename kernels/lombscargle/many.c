/*
 * kernels/lombscargle/many.c — many periodograms of their own lengths and
 * sample times: many.h's CPU side (ls_many_view, ls_many_cpu: each series by
 * lombscargle's direct reference, ref.c) and the lombscargle_many kernel's
 * kernel_def (parameters, the argument checks, samples), its verdict (the
 * offsets' values and each series' weights) and its cpu entry.
 *
 * lombscargle_many takes B series concatenated: x, y (and weights) of T
 * values, series b the samples offsets[b] to offsets[b + 1]; its pgram is
 * (B, M), row b series b's periodogram, each as lombscargle computes it with
 * the shared frequencies and scalars. method=direct is the direct method
 * (one CUDA launch over the table, many.cu); method=nufft (grids only) is
 * lombscargle's NUFFT on each series, to eps (the cpu entry: nufft.c's on
 * FFTW3, ls_many_nufft_cpu; cuda: nufft.cu's ls_many_nufft_launch over the
 * same table); auto picks one for the whole run by lombscargle's cost model
 * of the backend, for series of the run's average length.
 * No state: runs on the cpu backend's workers (ranges [lo, hi) of the B M
 * outputs), check on the loop.
 */
#include <stdio.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/many.h"
#include "kernels/lombscargle/many_kernel.h"

extern const kernel_def kernel_lombscargle;

/* --- many.h's CPU side ------------------------------------------------------------------------ */

static kernel_array array1(gpud_dtype dt, const void *data, long long n)
{
	kernel_array a;
	memset(&a, 0, sizeof(a));
	a.dtype = dt;
	a.ndim = 1;
	a.shape[0] = (uint64_t)n;
	a.count = (size_t)n;
	a.data = (void *)data;
	return a;
}

void ls_many_view(const ls_many *p, const ls_series *s, int method, kernel_args *v)
{
	const gpud_dtype dt = p->dtype;
	const gpud_dtype odt = p->normalize != LS_AMPLITUDE ? dt
			       : dt == GPUD_F32             ? GPUD_C64
							    : GPUD_C128;

	memset(v, 0, sizeof(*v));
	v->kernel = &kernel_lombscargle;
	v->dtype = dt;
	v->v[LS_X].present = v->v[LS_Y].present = v->v[LS_PGRAM].present = 1;
	v->v[LS_X].arr = array1(dt, s->x, s->n);
	v->v[LS_Y].arr = array1(dt, s->y, s->n);
	v->v[LS_PGRAM].arr = array1(odt, s->out, p->m);
	if (s->w) {
		v->v[LS_WEIGHTS].present = 1;
		v->v[LS_WEIGHTS].arr = array1(dt, s->w, s->n);
	}
	if (p->freqs) {
		v->v[LS_FREQS].present = 1;
		v->v[LS_FREQS].arr = array1(dt, p->freqs, p->m);
	} else {
		v->v[LS_F0].present = v->v[LS_DF].present = v->v[LS_NF].present = 1;
		v->v[LS_F0].s.f64 = p->f0;
		v->v[LS_DF].s.f64 = p->df;
		v->v[LS_NF].s.i64 = p->m;
	}
	v->v[LS_PRECENTER].present = v->v[LS_NORMALIZE].present = 1;
	v->v[LS_FLOATING_MEAN].present = v->v[LS_LEGACY].present = 1;
	v->v[LS_METHOD].present = 1;
	v->v[LS_PRECENTER].s.b = p->precenter;
	v->v[LS_NORMALIZE].s.i64 = p->normalize;
	v->v[LS_FLOATING_MEAN].s.b = p->floating_mean;
	v->v[LS_LEGACY].s.b = p->legacy;
	v->v[LS_METHOD].s.i64 = method;
	if (p->eps > 0) {
		v->v[LS_EPS].present = 1;
		v->v[LS_EPS].s.f64 = p->eps;
	}
}

static inline double load(gpud_dtype dt, const void *p, long long i)
{
	return dt == GPUD_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* scipy's check of one series' weights: each >= 0 (so no NaN), their sum > 0. */
static unsigned series_verdict(gpud_dtype dt, const ls_series *s)
{
	double sum = 0;
	if (!s->w)
		return 0;
	for (long long j = 0; j < s->n; j++) {
		double v = load(dt, s->w, j);
		if (!(v >= 0))
			return LS_BAD_WEIGHT;
		sum += v;
	}
	return sum > 0 ? 0 : LS_ZERO_WEIGHTS;
}

/* Outputs [lo, hi) of one series: the direct reference. */
static void series_run(const ls_many *p, const ls_series *s, size_t lo, size_t hi)
{
	kernel_args v;
	ls_many_view(p, s, LS_DIRECT, &v);
	lombscargle_ref_run(&v, lo, hi);
}

void ls_many_cpu(const ls_many *p, const ls_series *s, size_t lo, size_t hi, unsigned *verdicts)
{
	for (size_t i = lo; i < hi; i++) {
		unsigned code = series_verdict(p->dtype, &s[i]);
		if (verdicts)
			verdicts[i] = code;
		if (code == 0)
			series_run(p, &s[i], 0, (size_t)p->m);
	}
}

void ls_many_nufft_cpu(const ls_many *p, const ls_series *s, size_t lo, size_t hi,
		       unsigned *verdicts)
{
	for (size_t i = lo; i < hi; i++) {
		unsigned code = series_verdict(p->dtype, &s[i]);
		if (verdicts)
			verdicts[i] = code;
		if (code == 0) {
			kernel_args v;
			ls_many_view(p, &s[i], LS_NUFFT, &v);
			ls_nufft_cpu_run(&v, 0, (size_t)p->m);
		}
	}
}

/* --- the lombscargle_many kernel --------------------------------------------------------------- */

static const char *const normalize_words[] = {"power", "normalize", "amplitude", NULL};
static const char *const method_words[] = {"auto", "direct", "nufft", NULL};

static const kernel_param params[] = {
	[LM_X] = {.name = "x",
		  .role = KPARAM_IN,
		  .dtypes = KDT_FLOAT,
		  .ndim = 1,
		  .doc = "sample times of every series, concatenated (T values)"},
	[LM_Y] = {.name = "y",
		  .role = KPARAM_IN,
		  .dtypes = KDT_FLOAT,
		  .ndim = 1,
		  .doc = "measurement values, concatenated as x (T values)"},
	[LM_OFFSETS] = {.name = "offsets",
			.role = KPARAM_IN,
			.dtypes = KDT(GPUD_I64),
			.ndim = 1,
			.doc = "B + 1 values: series b is samples offsets[b] to offsets[b+1] of x, "
			       "y and weights; 0 = offsets[0] < offsets[1] < ... < offsets[B] = T "
			       "(each series at least one sample)"},
	[LM_FREQS] = {.name = "freqs",
		      .role = KPARAM_IN,
		      .dtypes = KDT_FLOAT,
		      .ndim = 1,
		      .optional = 1,
		      .doc = "angular frequencies, M, every series' (or give the grid f0, df, "
			     "nf)"},
	[LM_PGRAM] = {.name = "pgram",
		      .role = KPARAM_OUT,
		      .dtypes = KDT_FLOAT | KDT_COMPLEX,
		      .ndim = 2,
		      .doc = "periodograms (B, M), row b series b's: x's dtype, or its complex "
			     "dtype for normalize=amplitude"},
	[LM_PRECENTER] = {.name = "precenter",
			  .role = KPARAM_SCALAR,
			  .stype = KSCALAR_BOOL,
			  .default_value = "false",
			  .doc = "subtract each series' mean(y) (unweighted) first"},
	[LM_NORMALIZE] = {.name = "normalize",
			  .role = KPARAM_SCALAR,
			  .stype = KSCALAR_WORD,
			  .words = normalize_words,
			  .default_value = "power",
			  .doc = "power (false): scaled by the series' N/4; normalize (true): over "
				 "its weighted sum of y^2; amplitude: the complex amplitude"},
	[LM_WEIGHTS] = {.name = "weights",
			.role = KPARAM_IN,
			.dtypes = KDT_FLOAT,
			.ndim = 1,
			.optional = 1,
			.doc = "non-negative sample weights, concatenated as x (default all "
			       "equal); each series' must sum to a positive value"},
	[LM_FLOATING_MEAN] = {.name = "floating_mean",
			      .role = KPARAM_SCALAR,
			      .stype = KSCALAR_BOOL,
			      .default_value = "false",
			      .doc = "fit an offset for each frequency"},
	[LM_F0] = {.name = "f0",
		   .role = KPARAM_SCALAR,
		   .stype = KSCALAR_F64,
		   .optional = 1,
		   .doc = "grid: the first angular frequency"},
	[LM_DF] = {.name = "df",
		   .role = KPARAM_SCALAR,
		   .stype = KSCALAR_F64,
		   .optional = 1,
		   .doc = "grid: the step"},
	[LM_NF] = {.name = "nf",
		   .role = KPARAM_SCALAR,
		   .stype = KSCALAR_I64,
		   .optional = 1,
		   .doc = "grid: how many frequencies"},
	[LM_LEGACY] = {.name = "legacy",
		       .role = KPARAM_SCALAR,
		       .stype = KSCALAR_BOOL,
		       .default_value = "false",
		       .doc = "scipy <= 1.14's results; no weights, floating_mean or amplitude"},
	[LM_METHOD] =
		{.name = "method",
		 .role = KPARAM_SCALAR,
		 .stype = KSCALAR_WORD,
		 .words = method_words,
		 .words_only = 1,
		 .default_value = "auto",
		 .doc = "direct: every sample at every frequency, all series in one launch; "
			"nufft: the grid (f0, df, nf) through non-uniform FFTs, each series' "
			"(N + M log M), to eps; auto: nufft on grids where lombscargle's cost "
			"model says faster for series of the run's average length, else "
			"direct"},
	[LM_EPS] = {.name = "eps",
		    .role = KPARAM_SCALAR,
		    .stype = KSCALAR_F64,
		    .optional = 1,
		    .doc = "method=nufft: the error allowed, relative to each series' max "
			   "|pgram| (default 1e-9 float64, 1e-5 float32)"},
};

static int lm_check(kernel_args *a, char *err, size_t errlen)
{
	const kernel_value *v = a->v;
	const kernel_array *x = &v[LM_X].arr, *off = &v[LM_OFFSETS].arr;
	static const int arrays[] = {LM_Y, LM_FREQS, LM_WEIGHTS};
	int grid = v[LM_F0].present || v[LM_DF].present || v[LM_NF].present;
	uint64_t nf;

	a->dtype = x->dtype;
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		const kernel_value *o = &v[arrays[i]];
		if (o->present && o->arr.dtype != x->dtype) {
			snprintf(err, errlen,
				 "lombscargle_many: x, y, freqs and weights must have one dtype: "
				 "'%s' is %s but 'x' is %s",
				 params[arrays[i]].name, gpud_dtype_name(o->arr.dtype),
				 gpud_dtype_name(x->dtype));
			return -1;
		}
	}
	if (x->count == 0) {
		snprintf(err, errlen, "lombscargle_many: x and y must not be empty");
		return -1;
	}
	if (v[LM_Y].arr.count != x->count) {
		snprintf(err, errlen,
			 "lombscargle_many: x and y must have the same length (T, every series "
			 "concatenated), got %zu and %zu",
			 x->count, v[LM_Y].arr.count);
		return -1;
	}
	if (v[LM_WEIGHTS].present && v[LM_WEIGHTS].arr.count != x->count) {
		snprintf(err, errlen,
			 "lombscargle_many: weights must have the length of x, got %zu for %zu "
			 "samples",
			 v[LM_WEIGHTS].arr.count, x->count);
		return -1;
	}
	if (off->count < 2) {
		snprintf(err, errlen,
			 "lombscargle_many: offsets must hold B + 1 >= 2 values (0, the end of "
			 "each series), got %zu",
			 off->count);
		return -1;
	}
	if (off->count - 1 > x->count) {
		snprintf(err, errlen,
			 "lombscargle_many: offsets gives %zu series but x has only %zu samples "
			 "(each series needs at least one)",
			 off->count - 1, x->count);
		return -1;
	}
	if (v[LM_FREQS].present && grid) {
		snprintf(err, errlen,
			 "lombscargle_many: give the frequencies as freqs or as the grid f0, df, "
			 "nf, not both");
		return -1;
	}
	if (!v[LM_FREQS].present) {
		if (!grid) {
			snprintf(err, errlen,
				 "lombscargle_many: missing the frequencies: give freqs (an array) "
				 "or the grid f0, df, nf");
			return -1;
		}
		for (int i = LM_F0; i <= LM_NF; i++)
			if (!v[i].present) {
				snprintf(err, errlen,
					 "lombscargle_many: the grid needs f0, df and nf; '%s' is "
					 "missing",
					 params[i].name);
				return -1;
			}
		if (v[LM_NF].s.i64 < 1 || v[LM_NF].s.i64 > (int64_t)1 << 40) {
			snprintf(err, errlen,
				 "lombscargle_many: nf must be between 1 and 2^40, got %lld",
				 (long long)v[LM_NF].s.i64);
			return -1;
		}
		nf = (uint64_t)v[LM_NF].s.i64;
	} else {
		nf = v[LM_FREQS].arr.count;
		if (nf == 0) {
			snprintf(err, errlen, "lombscargle_many: freqs must not be empty");
			return -1;
		}
	}
	if (v[LM_LEGACY].s.b) {
		const char *what = v[LM_WEIGHTS].present                   ? "weights"
				   : v[LM_FLOATING_MEAN].s.b               ? "floating_mean=true"
				   : v[LM_NORMALIZE].s.i64 == LS_AMPLITUDE ? "normalize=amplitude"
									   : NULL;
		if (what) {
			snprintf(err, errlen,
				 "lombscargle_many: legacy=true (scipy <= 1.14) has no %s; leave "
				 "out legacy for today's scipy",
				 what);
			return -1;
		}
	}
	if (v[LM_EPS].present) {
		double e = v[LM_EPS].s.f64, lo = x->dtype == GPUD_F32 ? 1e-6 : 1e-14;
		if (!(e >= lo && e <= 0.1)) {
			snprintf(err, errlen,
				 "lombscargle_many: eps must be between %g and 0.1 for %s, got %g",
				 lo, gpud_dtype_name(x->dtype), e);
			return -1;
		}
	}
	if (v[LM_METHOD].s.i64 == LS_NUFFT) {
		if (v[LM_FREQS].present) {
			snprintf(
				err, errlen,
				"lombscargle_many: method=nufft needs the uniform grid f0, df, nf; "
				"got the array freqs (use method=direct or auto for arrays)");
			return -1;
		}
		if ((long long)nf > LS_NUFFT_MAX_NF) {
			snprintf(err, errlen,
				 "lombscargle_many: method=nufft takes at most 2^29 frequencies, "
				 "got nf=%llu (use method=direct, or split the grid)",
				 (unsigned long long)nf);
			return -1;
		}
	}
	const uint64_t nb = off->count - 1;
	if (nf > (uint64_t)1 << 62 || nb * nf / nf != nb || nb * nf > (uint64_t)1 << 62) {
		snprintf(err, errlen,
			 "lombscargle_many: the output (%llu series x %llu frequencies) is too "
			 "large",
			 (unsigned long long)nb, (unsigned long long)nf);
		return -1;
	}
	gpud_dtype out = x->dtype;
	if (v[LM_NORMALIZE].s.i64 == LS_AMPLITUDE)
		out = x->dtype == GPUD_F32 ? GPUD_C64 : GPUD_C128;
	uint64_t shape[2] = {nb, nf};
	kernel_set_output(a, LM_PGRAM, out, 2, shape);
	return 0;
}

void lm_params(const kernel_args *a, ls_many *p)
{
	const kernel_value *v = a->v;
	memset(p, 0, sizeof(*p));
	p->dtype = a->dtype;
	p->precenter = v[LM_PRECENTER].s.b;
	p->normalize = (int)v[LM_NORMALIZE].s.i64;
	p->floating_mean = v[LM_FLOATING_MEAN].s.b;
	p->legacy = v[LM_LEGACY].s.b;
	p->freqs = v[LM_FREQS].present ? v[LM_FREQS].arr.data : NULL;
	p->f0 = v[LM_F0].present ? v[LM_F0].s.f64 : 0;
	p->df = v[LM_DF].present ? v[LM_DF].s.f64 : 0;
	p->no_weights = !v[LM_WEIGHTS].present;
	p->eps = v[LM_EPS].present ? v[LM_EPS].s.f64 : 0;
	p->m = (long long)(v[LM_PGRAM].arr.count / (v[LM_OFFSETS].arr.count - 1));
}

/* Host offsets: series b's bounds, clamped into [0, T] with at least one
 * sample, so a run beside a verdict on bad offsets reads only x's memory. */
static ls_series lm_series(const kernel_args *a, const ls_many *p, size_t b)
{
	const int64_t *off = a->v[LM_OFFSETS].arr.data;
	const long long t = (long long)a->v[LM_X].arr.count;
	long long lo = off[b], hi = off[b + 1];
	const size_t es = gpud_dtype_size(p->dtype),
		     oes = gpud_dtype_size(a->v[LM_PGRAM].arr.dtype);
	lo = lo < 0 ? 0 : lo > t - 1 ? t - 1 : lo;
	hi = hi <= lo ? lo + 1 : hi > t ? t : hi;
	ls_series s;
	s.x = (const char *)a->v[LM_X].arr.data + (size_t)lo * es;
	s.y = (const char *)a->v[LM_Y].arr.data + (size_t)lo * es;
	s.w = a->v[LM_WEIGHTS].present ? (const char *)a->v[LM_WEIGHTS].arr.data + (size_t)lo * es
				       : NULL;
	s.out = (char *)a->v[LM_PGRAM].arr.data + b * (size_t)p->m * oes;
	s.n = hi - lo;
	return s;
}

unsigned lm_offsets_first_bad(const int64_t *off, size_t nb, long long t)
{
	if (off[0] != 0)
		return 0;
	for (size_t b = 1; b <= nb; b++)
		if (off[b] <= off[b - 1] || off[b] > t)
			return (unsigned)(b < LM_VERDICT_MAX_INDEX ? b : LM_VERDICT_MAX_INDEX);
	if (off[nb] != t)
		return (unsigned)(nb < LM_VERDICT_MAX_INDEX ? nb : LM_VERDICT_MAX_INDEX);
	return (unsigned)-1;
}

static size_t lm_items(const kernel_args *a)
{
	return a->v[LM_PGRAM].arr.count;
}

void lm_model_view(const kernel_args *a, long long n, kernel_args *view)
{
	ls_many p;
	ls_series s;
	lm_params(a, &p);
	memset(&s, 0, sizeof(s));
	s.n = n > 0 ? n : 1;
	ls_many_view(&p, &s, (int)a->v[LM_METHOD].s.i64, view);
}

/* The average series' length, T / B (at least 1). */
static long long lm_mean_n(const kernel_args *a)
{
	long long n = (long long)(a->v[LM_X].arr.count / (a->v[LM_OFFSETS].arr.count - 1));
	return n > 0 ? n : 1;
}

int lm_cpu_uses_nufft(const kernel_args *a)
{
	const int m = (int)a->v[LM_METHOD].s.i64;
	if (m != LS_AUTO)
		return m == LS_NUFFT;
	if (a->v[LM_FREQS].present)
		return 0;
	kernel_args v;
	lm_model_view(a, lm_mean_n(a), &v);
	return ls_nufft_cpu_pick(&v);
}

/* A frequency of a series: two passes over its samples, T / B of them on
 * average; or its share of the series' NUFFT. */
static size_t lm_item_cost(const kernel_args *a)
{
	if (lm_cpu_uses_nufft(a)) {
		kernel_args v;
		lm_model_view(a, lm_mean_n(a), &v);
		return ls_nufft_cpu_item_cost(&v);
	}
	size_t c = 2 * (size_t)lm_mean_n(a);
	return c > 0 ? c : 1;
}

/* Each series' part of [lo, hi): the direct reference, or the NUFFT (a
 * range of a series is a sub-grid of its own, as for lombscargle). */
static void lm_run(const kernel_args *a, size_t lo, size_t hi)
{
	ls_many p;
	lm_params(a, &p);
	const size_t m = (size_t)p.m, nb = a->v[LM_OFFSETS].arr.count - 1;
	const int nufft = lm_cpu_uses_nufft(a);
	for (size_t b = lo / m; b < nb && b * m < hi; b++) {
		ls_series s = lm_series(a, &p, b);
		const size_t l = lo > b * m ? lo - b * m : 0, h = hi < (b + 1) * m ? hi - b * m : m;
		if (nufft) {
			kernel_args v;
			ls_many_view(&p, &s, LS_NUFFT, &v);
			ls_nufft_cpu_run(&v, l, h);
		} else {
			series_run(&p, &s, l, h);
		}
	}
}

/* The offsets' values first (LM_BAD_OFFSETS and offsets' first bad index),
 * then each series' weights (its code and the first bad series). */
static unsigned lm_verdict(const kernel_args *a)
{
	const size_t nb = a->v[LM_OFFSETS].arr.count - 1;
	const long long t = (long long)a->v[LM_X].arr.count;
	unsigned bad = lm_offsets_first_bad(a->v[LM_OFFSETS].arr.data, nb, t);
	if (bad != (unsigned)-1)
		return LM_BAD_OFFSETS | ((bad + 1u) << LM_VERDICT_SHIFT);
	if (!a->v[LM_WEIGHTS].present)
		return 0;
	ls_many p;
	lm_params(a, &p);
	for (size_t b = 0; b < nb; b++) {
		ls_series s = lm_series(a, &p, b);
		unsigned code = series_verdict(p.dtype, &s);
		if (code) {
			size_t i = b < LM_VERDICT_MAX_INDEX ? b : LM_VERDICT_MAX_INDEX;
			return code | (unsigned)((i + 1) << LM_VERDICT_SHIFT);
		}
	}
	return 0;
}

static void lm_verdict_message(const kernel_args *a, unsigned code, char *err, size_t errlen)
{
	const unsigned at = (code >> LM_VERDICT_SHIFT) - 1u;
	if (code & LM_BAD_OFFSETS) {
		snprintf(err, errlen,
			 "lombscargle_many: argument 'offsets' must rise from offsets[0] = 0 to "
			 "offsets[B] = T = %zu, each series at least one sample (offsets[b] > "
			 "offsets[b-1]); the first bad value is offsets[%u]",
			 a->v[LM_X].arr.count, at);
		return;
	}
	snprintf(err, errlen,
		 "lombscargle_many: argument 'weights' must hold only non-negative values that "
		 "sum to a positive value in every series; series %u has %s",
		 at, code & LS_BAD_WEIGHT ? "a negative or NaN weight" : "weights that sum to 0");
}

/* Every variant of the CUDA kernel (array or grid, weights or not,
 * floating_mean or not), every normalize mode, the NUFFT, series of 3 to 1000 samples
 * (beyond a tile of 256; shorter ones, whose results are rounding where
 * floating_mean or amplitude divide near-zero sums, are the tests'). */
static const char *const lm_samples[] = {
	"x=0.1,0.7,1.9,0.1,0.7,1.9 y=1,-0.5,2,1,-0.5,2 offsets=0,3,6 freqs=0.5,2 precenter=true "
	"normalize=true legacy=true",
	"x=rand:400:0:30 y=rand:400:-3:3 offsets=0,40,100,400 freqs=rand:300:0.1:10",
	"x=rand:400:0:30 y=rand:400:-3:3 offsets=0,50,90,400 freqs=rand:300:0.1:10 "
	"floating_mean=true normalize=normalize",
	"x=rand:400:0:30 y=rand:400:-3:3 weights=rand:400:0.1:1 offsets=0,300,360,400 "
	"freqs=rand:300:0.1:10 normalize=true",
	"x=rand:400:0:30 y=rand:400:-3:3 weights=rand:400:0.1:2 offsets=0,37,207,400 "
	"freqs=rand:300:0.5:10 floating_mean=true normalize=amplitude",
	"x=rand:700:0:1000 y=rand:700:-1:1 offsets=0,200,700 f0=0.05 df=0.003 nf=1000",
	"x=rand:700:0:1000 y=rand:700:-1:1 offsets=0,40,700 f0=0.05 df=0.003 nf=1000 "
	"normalize=normalize floating_mean=true precenter=true",
	"x=rand:400:0:30 y=rand:400:-3:3 weights=rand:400:0.1:1 offsets=0,100,400 f0=0.3 "
	"df=0.01 nf=600 normalize=amplitude",
	"x=rand:400:0:30 y=rand:400:-3:3 weights=rand:400:0.1:2 offsets=0,300,400 f0=0.3 "
	"df=0.01 nf=600 floating_mean=true normalize=amplitude",
	/* the NUFFT (forced on every grid sample too): legacy, and weights with
	 * floating_mean on a grid far above the mean sampling rate */
	"x=rand:700:0:100 y=rand:700:-1:1 offsets=0,100,200,700 f0=0.5 df=0.02 nf=2000 "
	"precenter=true normalize=true legacy=true method=nufft",
	"x=rand:1500:0:500 y=rand:1500:-2:2 weights=rand:1500:0.1:2 offsets=0,500,510,1500 f0=40 "
	"df=0.004 nf=3000 floating_mean=true normalize=normalize method=auto",
	NULL,
};

const kernel_def kernel_lombscargle_many = {
	.name = "lombscargle_many",
	.id = KERNEL_ID_lombscargle_many,
	.doc = "Lomb-Scargle periodograms of B series of their own lengths and sample times "
	       "(concatenated, cut by offsets), one lombscargle each, in one run",
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
	.check = lm_check,
	.samples = lm_samples,
	.verdict_message = lm_verdict_message,
};

const cpu_kernel cpu_kernel_lombscargle_many = {
	.name = "lombscargle_many",
	.items = lm_items,
	.item_cost = lm_item_cost,
	.run = lm_run,
	.verdict = lm_verdict,
};
