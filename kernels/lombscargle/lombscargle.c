/*
 * kernels/lombscargle/lombscargle.c — the Lomb-Scargle periodogram, exactly as
 * scipy.signal.lombscargle(x, y, freqs, precenter=False, normalize=False) in
 * scipy <= 1.14: angular frequencies; precenter subtracts mean(y) first;
 * normalize multiplies by 2 / dot(y, y) of the uncentred y.
 *
 * This file holds the table entry, the argument checks and the CPU
 * reference. The reference computes in float64 for both dtypes, as scipy does
 * (it converts its inputs to float64), and rounds float32 results once at the
 * end; the GPU kernels are compared against it.
 */
#include <math.h>
#include <stdio.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"

static const kernel_param params[] = {
	[LS_X] = {.name = "x",
		  .role = KPARAM_IN,
		  .dtypes = KDT_FLOAT,
		  .ndim = 1,
		  .doc = "sample times"},
	[LS_Y] = {.name = "y",
		  .role = KPARAM_IN,
		  .dtypes = KDT_FLOAT,
		  .ndim = 1,
		  .doc = "measurement values, same length as x"},
	[LS_FREQS] = {.name = "freqs",
		      .role = KPARAM_IN,
		      .dtypes = KDT_FLOAT,
		      .ndim = 1,
		      .doc = "angular frequencies"},
	[LS_PGRAM] = {.name = "pgram",
		      .role = KPARAM_OUT,
		      .dtypes = KDT_FLOAT,
		      .ndim = 1,
		      .doc = "periodogram, same dtype and length as freqs"},
	[LS_PRECENTER] = {.name = "precenter",
			  .role = KPARAM_SCALAR,
			  .stype = KSCALAR_BOOL,
			  .default_value = "false",
			  .doc = "subtract mean(y) before computing"},
	[LS_NORMALIZE] = {.name = "normalize",
			  .role = KPARAM_SCALAR,
			  .stype = KSCALAR_BOOL,
			  .default_value = "false",
			  .doc = "multiply by 2 / dot(y, y)"},
};

static int ls_check(kernel_args *a, char *err, size_t errlen)
{
	const kernel_array *x = &a->v[LS_X].arr, *y = &a->v[LS_Y].arr, *f = &a->v[LS_FREQS].arr;

	if (kernel_check_same_dtype(a, err, errlen) != 0)
		return -1;
	if (x->count != y->count) {
		snprintf(err, errlen,
			 "lombscargle: x and y must have the same length, got %zu and %zu",
			 x->count, y->count);
		return -1;
	}
	if (x->count == 0) {
		snprintf(err, errlen, "lombscargle: x and y must not be empty");
		return -1;
	}
	kernel_set_output(a, LS_PGRAM, a->dtype, 1, f->shape);
	return 0;
}

static size_t ls_cpu_items(const kernel_args *a)
{
	return a->v[LS_FREQS].arr.count;
}

static inline double load(const kernel_array *v, size_t i)
{
	return v->dtype == GPUD_F32 ? (double)((const float *)v->data)[i]
				    : ((const double *)v->data)[i];
}

double lombscargle_ref_one(double f, const kernel_array *x, const kernel_array *y, double ymean)
{
	double xc = 0, xs = 0, cc = 0, ss = 0, cs = 0;

	for (size_t j = 0; j < x->count; j++) {
		double s, c, yj = load(y, j) - ymean;
		sincos(f * load(x, j), &s, &c);
		xc += yj * c;
		xs += yj * s;
		cc += c * c;
		ss += s * s;
		cs += c * s;
	}
	double tau = atan2(2 * cs, cc - ss) / (2 * f);
	double c_tau = cos(f * tau), s_tau = sin(f * tau);
	double c_tau2 = c_tau * c_tau, s_tau2 = s_tau * s_tau, cs_tau = 2 * c_tau * s_tau;
	double n1 = c_tau * xc + s_tau * xs, n2 = c_tau * xs - s_tau * xc;
	return 0.5 * ((n1 * n1) / (c_tau2 * cc + cs_tau * cs + s_tau2 * ss) +
		      (n2 * n2) / (c_tau2 * ss - cs_tau * cs + s_tau2 * cc));
}

void lombscargle_ref_moments(const kernel_array *y, double *mean, double *dot)
{
	double sum = 0, sq = 0;
	for (size_t j = 0; j < y->count; j++) {
		double v = load(y, j);
		sum += v;
		sq += v * v;
	}
	*mean = sum / (double)y->count;
	*dot = sq;
}

static void ls_cpu_run(const kernel_args *a, size_t lo, size_t hi)
{
	const kernel_array *x = &a->v[LS_X].arr, *y = &a->v[LS_Y].arr, *f = &a->v[LS_FREQS].arr;
	const kernel_array *out = &a->v[LS_PGRAM].arr;
	double mean, dot;

	lombscargle_ref_moments(y, &mean, &dot);
	double scale = a->v[LS_NORMALIZE].s.b ? 2.0 / dot : 1.0;
	double shift = a->v[LS_PRECENTER].s.b ? mean : 0.0;
	for (size_t i = lo; i < hi; i++) {
		double p = lombscargle_ref_one(load(f, i), x, y, shift) * scale;
		if (out->dtype == GPUD_F32)
			((float *)out->data)[i] = (float)p;
		else
			((double *)out->data)[i] = p;
	}
}

/* Three points (both float dtypes); then two tiles of x (the GPU stages 256 at a time). */
static const char *const ls_samples[] = {
	"x=0.1,0.7,1.9 y=1,-0.5,2 freqs=0.5,2 precenter=true normalize=true",
	"x=rand:300:0:30 y=rand:300:-3:3 freqs=rand:1000:0.1:10",
	NULL,
};

const kernel_def kernel_lombscargle = {
	.name = "lombscargle",
	.id = KERNEL_ID_lombscargle,
	.doc = "Lomb-Scargle periodogram (scipy.signal.lombscargle, scipy <= 1.14)",
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
	.check = ls_check,
	.cpu_items = ls_cpu_items,
	.cpu_run = ls_cpu_run,
	.samples = ls_samples,
};
