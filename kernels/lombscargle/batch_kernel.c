/*
 * kernels/lombscargle/batch_kernel.c — lombscargle_batch (batch_kernel.h):
 * its kernel_def (gpud's own, in no table), which lombscargle runs may join
 * a batch, and its cpu entry (ls_many_cpu over a range of the series).
 * No state: the cpu entry runs on the cpu backend's workers, the rest on
 * the loop.
 */
#include <stdio.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/lombscargle/batch_kernel.h"
#include "kernels/lombscargle/lombscargle.h"

static const kernel_param params[LB_NPARAMS] = {
	[LB_SERIES] = {.name = "series", .role = KPARAM_IN, .ndim = 1},
	[LB_VERDICTS] = {.name = "verdicts", .role = KPARAM_OUT, .ndim = 1},
	[LB_PRECENTER] = {.name = "precenter", .role = KPARAM_SCALAR, .stype = KSCALAR_BOOL},
	[LB_NORMALIZE] = {.name = "normalize", .role = KPARAM_SCALAR, .stype = KSCALAR_I64},
	[LB_FLOATING_MEAN] = {.name = "floating_mean",
			      .role = KPARAM_SCALAR,
			      .stype = KSCALAR_BOOL},
	[LB_LEGACY] = {.name = "legacy", .role = KPARAM_SCALAR, .stype = KSCALAR_BOOL},
	[LB_F0] = {.name = "f0", .role = KPARAM_SCALAR, .stype = KSCALAR_F64},
	[LB_DF] = {.name = "df", .role = KPARAM_SCALAR, .stype = KSCALAR_F64},
	[LB_M] = {.name = "m", .role = KPARAM_SCALAR, .stype = KSCALAR_I64},
	[LB_MAX_N] = {.name = "max_n", .role = KPARAM_SCALAR, .stype = KSCALAR_I64},
	[LB_NO_WEIGHTS] = {.name = "no_weights", .role = KPARAM_SCALAR, .stype = KSCALAR_BOOL},
};

/* gpud builds its arguments itself: nothing to check. */
static int batch_check(kernel_args *a, char *err, size_t errlen)
{
	(void)a;
	(void)err;
	(void)errlen;
	return 0;
}

const kernel_def kernel_lombscargle_batch = {
	.name = "lombscargle_batch",
	.id = KERNEL_ID_LOMBSCARGLE_BATCH,
	.doc = "gpud's own: single-series lombscargle runs of several requests in one launch",
	.params = params,
	.nparams = LB_NPARAMS,
	.check = batch_check,
};

int ls_batch_shared(const kernel_args *a, ls_many *p, long long *work, char *why, size_t whylen)
{
	const kernel_value *v = a->v;
	int method = v[LS_METHOD].present ? (int)v[LS_METHOD].s.i64 : LS_AUTO;

	if (a->kernel == NULL || strcmp(a->kernel->name, "lombscargle") != 0) {
		snprintf(why, whylen, "not lombscargle");
		return -1;
	}
	if (v[LS_Y].arr.ndim != 1 || v[LS_X].arr.ndim != 1) {
		snprintf(why, whylen, "not a single series (y has %d dimensions)",
			 v[LS_Y].arr.ndim);
		return -1;
	}
	if (v[LS_FREQS].present) {
		snprintf(why, whylen, "a freqs array (only grids f0/df/nf batch)");
		return -1;
	}
	if (method == LS_NUFFT) {
		snprintf(why, whylen, "method nufft");
		return -1;
	}
	/* auto joins: a batch computes its series by the direct method, one
	 * launch for all of them, which for runs this small costs less than
	 * either method run by run (the cost models weigh one run alone) */
	memset(p, 0, sizeof(*p));
	p->dtype = a->dtype;
	p->precenter = v[LS_PRECENTER].s.b;
	p->normalize = (int)v[LS_NORMALIZE].s.i64;
	p->floating_mean = v[LS_FLOATING_MEAN].s.b;
	p->legacy = v[LS_LEGACY].s.b;
	p->f0 = v[LS_F0].s.f64;
	p->df = v[LS_DF].s.f64;
	p->m = (long long)v[LS_NF].s.i64;
	p->no_weights = 0; /* a batch may mix runs with and without weights */
	long long n = (long long)v[LS_X].arr.count;
	*work = p->m > 0 && n > (1ll << 62) / p->m ? (1ll << 62) : n * p->m;
	return 0;
}

void ls_batch_series(const kernel_args *a, ls_series *s)
{
	const kernel_value *v = a->v;
	s->x = v[LS_X].arr.data;
	s->y = v[LS_Y].arr.data;
	s->w = v[LS_WEIGHTS].present ? v[LS_WEIGHTS].arr.data : NULL;
	s->out = v[LS_PGRAM].arr.data;
	s->n = (long long)v[LS_X].arr.count;
}

static kernel_array words(gpud_dtype dt, void *data, size_t count)
{
	kernel_array r;
	memset(&r, 0, sizeof(r));
	r.dtype = dt;
	r.ndim = 1;
	r.shape[0] = count;
	r.count = count;
	r.data = data;
	return r;
}

void ls_batch_args(const ls_many *p, void *series, void *verdicts, size_t b, long long max_n,
		   kernel_args *out)
{
	kernel_value *v = out->v;
	memset(out, 0, sizeof(*out));
	out->kernel = &kernel_lombscargle_batch;
	out->dtype = p->dtype;
	for (int i = 0; i < LB_NPARAMS; i++)
		v[i].present = 1;
	/* the table as int64 words (the descriptors' bytes), a verdict word per series */
	v[LB_SERIES].arr = words(GPUD_I64, series, b * sizeof(ls_series) / sizeof(int64_t));
	v[LB_VERDICTS].arr = words(GPUD_I32, verdicts, b);
	v[LB_PRECENTER].s.b = p->precenter;
	v[LB_NORMALIZE].s.i64 = p->normalize;
	v[LB_FLOATING_MEAN].s.b = p->floating_mean;
	v[LB_LEGACY].s.b = p->legacy;
	v[LB_F0].s.f64 = p->f0;
	v[LB_DF].s.f64 = p->df;
	v[LB_M].s.i64 = p->m;
	v[LB_MAX_N].s.i64 = max_n;
	v[LB_NO_WEIGHTS].s.b = p->no_weights;
}

void ls_batch_params(const kernel_args *a, ls_many *p, size_t *b, long long *max_n)
{
	const kernel_value *v = a->v;
	memset(p, 0, sizeof(*p));
	p->dtype = a->dtype;
	p->precenter = v[LB_PRECENTER].s.b;
	p->normalize = (int)v[LB_NORMALIZE].s.i64;
	p->floating_mean = v[LB_FLOATING_MEAN].s.b;
	p->legacy = v[LB_LEGACY].s.b;
	p->f0 = v[LB_F0].s.f64;
	p->df = v[LB_DF].s.f64;
	p->m = v[LB_M].s.i64;
	p->no_weights = v[LB_NO_WEIGHTS].s.b;
	*b = v[LB_VERDICTS].arr.count;
	*max_n = v[LB_MAX_N].s.i64;
}

/* --- the cpu entry: series by series ----------------------------------------------------- */

static size_t batch_items(const kernel_args *a)
{
	return a->v[LB_VERDICTS].arr.count;
}

/* a series costs about 2 per sample and frequency (lombscargle's item_cost) */
static size_t batch_item_cost(const kernel_args *a)
{
	long long n = a->v[LB_MAX_N].s.i64, m = a->v[LB_M].s.i64;
	if (n < 1 || m < 1)
		return 1;
	return m > (1ll << 40) / n ? (size_t)1 << 41 : (size_t)(2 * n * m);
}

static void batch_run(const kernel_args *a, size_t lo, size_t hi)
{
	ls_many p;
	size_t b;
	long long max_n;
	ls_batch_params(a, &p, &b, &max_n);
	ls_many_cpu(&p, a->v[LB_SERIES].arr.data, lo, hi, a->v[LB_VERDICTS].arr.data);
}

const cpu_kernel cpu_kernel_lombscargle_batch = {
	.name = "lombscargle_batch",
	.items = batch_items,
	.run = batch_run,
	.item_cost = batch_item_cost,
};
