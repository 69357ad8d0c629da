/*
 * kernels/lombscargle/ref.c — lombscargle's CPU reference (the direct
 * method) and what every other file of the kernel builds on: the
 * frequencies, the samples' sums, storing a result, and a batch's series as
 * runs of their own. The reference computes in float64 for both dtypes, as
 * scipy does, with scipy's two passes over the samples per frequency written
 * out as scipy writes them, and rounds float32 results once at the end; the
 * GPU kernels (one pass, see lombscargle.cu) and the NUFFT (nufft.c,
 * nufft.cu) are compared against it. It depends on no other file of the
 * kernel. No state: runs on the cpu backend's workers, ranges [lo, hi) each.
 */
#include <math.h>
#include <string.h>

#include "kernels/lombscargle/lombscargle.h"

size_t lombscargle_series(const kernel_args *a)
{
	const kernel_array *y = &a->v[LS_Y].arr;
	return y->ndim == 2 ? (size_t)y->shape[0] : 1;
}

void lombscargle_series_view(const kernel_args *a, size_t b, kernel_args *view)
{
	const size_t nb = lombscargle_series(a), n = a->v[LS_X].arr.count;
	*view = *a;
	kernel_array *y = &view->v[LS_Y].arr, *o = &view->v[LS_PGRAM].arr;
	const size_t m = o->count / nb;
	y->data = (char *)y->data + b * n * gpud_dtype_size(y->dtype);
	y->ndim = 1;
	y->shape[0] = n;
	y->count = n;
	o->data = (char *)o->data + b * m * gpud_dtype_size(o->dtype);
	o->ndim = 1;
	o->shape[0] = m;
	o->count = m;
}

static inline double load(const kernel_array *v, size_t i)
{
	return v->dtype == GPUD_F32 ? (double)((const float *)v->data)[i]
				    : ((const double *)v->data)[i];
}

double lombscargle_freq(const kernel_args *a, size_t i)
{
	if (a->v[LS_FREQS].present)
		return load(&a->v[LS_FREQS].arr, i);
	return a->v[LS_F0].s.f64 + a->v[LS_DF].s.f64 * (double)i;
}

static double weight(const kernel_args *a, const ls_sums *s, size_t j)
{
	return a->v[LS_WEIGHTS].present ? load(&a->v[LS_WEIGHTS].arr, j) / s->wsum : 1.0 / s->wsum;
}

void lombscargle_ref_sums(const kernel_args *a, ls_sums *s)
{
	const kernel_array *y = &a->v[LS_Y].arr;
	size_t n = y->count;
	double sum = 0;

	memset(s, 0, sizeof(*s));
	for (size_t j = 0; j < n; j++) {
		double v = load(y, j);
		sum += v;
		s->ydot += v * v;
	}
	s->shift = a->v[LS_PRECENTER].s.b ? sum / (double)n : 0.0;
	if (a->v[LS_WEIGHTS].present)
		for (size_t j = 0; j < n; j++)
			s->wsum += load(&a->v[LS_WEIGHTS].arr, j);
	else
		s->wsum = (double)n;
	for (size_t j = 0; j < n; j++) {
		double w = weight(a, s, j), v = load(y, j) - s->shift;
		s->y1 += w * v;
		s->y2 += w * v * v;
	}
}

/* scipy <= 1.14 (Townsend's one pass): unnormalised, y shifted. */
static double legacy_one(const kernel_args *a, const ls_sums *s, double f)
{
	const kernel_array *x = &a->v[LS_X].arr, *y = &a->v[LS_Y].arr;
	double xc = 0, xs = 0, cc = 0, ss = 0, cs = 0;

	for (size_t j = 0; j < x->count; j++) {
		double sn, c, yj = load(y, j) - s->shift;
		sincos(f * load(x, j), &sn, &c);
		xc += yj * c;
		xs += yj * sn;
		cc += c * c;
		ss += sn * sn;
		cs += c * sn;
	}
	double tau = atan2(2 * cs, cc - ss) / (2 * f);
	double c_tau = cos(f * tau), s_tau = sin(f * tau);
	double c_tau2 = c_tau * c_tau, s_tau2 = s_tau * s_tau, cs_tau = 2 * c_tau * s_tau;
	double n1 = c_tau * xc + s_tau * xs, n2 = c_tau * xs - s_tau * xc;
	return 0.5 * ((n1 * n1) / (c_tau2 * cc + cs_tau * cs + s_tau2 * ss) +
		      (n2 * n2) / (c_tau2 * ss - cs_tau * cs + s_tau2 * cc));
}

void lombscargle_ref_one(const kernel_args *a, const ls_sums *s, double f, double out[2])
{
	const kernel_array *x = &a->v[LS_X].arr, *y = &a->v[LS_Y].arr;
	int fm = a->v[LS_FLOATING_MEAN].s.b, mode = (int)a->v[LS_NORMALIZE].s.i64;
	size_t n = x->count;

	out[1] = 0;
	if (a->v[LS_LEGACY].s.b) {
		double p = legacy_one(a, s, f);
		out[0] = mode == LS_NORMALIZED ? p * 2.0 / s->ydot : p;
		return;
	}
	/* pass 1: the sums at phase f x, for tau */
	double cc = 0, cs = 0, c1 = 0, s1 = 0;
	for (size_t j = 0; j < n; j++) {
		double w = weight(a, s, j), sn, c;
		sincos(f * load(x, j), &sn, &c);
		cc += w * c * c;
		cs += w * c * sn;
		c1 += w * c;
		s1 += w * sn;
	}
	double ss = 1 - cc;
	if (fm) {
		cc -= c1 * c1;
		ss -= s1 * s1;
		cs -= c1 * s1;
	}
	double tau = 0.5 * atan2(2 * cs, cc - ss);
	/* pass 2: at phase f x - tau, where the cross term vanishes */
	double yc = 0, ys = 0;
	cc = c1 = s1 = 0;
	for (size_t j = 0; j < n; j++) {
		double w = weight(a, s, j), v = load(y, j) - s->shift, sn, c;
		sincos(f * load(x, j) - tau, &sn, &c);
		yc += w * v * c;
		ys += w * v * sn;
		cc += w * c * c;
		c1 += w * c;
		s1 += w * sn;
	}
	ss = 1 - cc;
	if (fm) {
		yc -= s->y1 * c1;
		ys -= s->y1 * s1;
		cc -= c1 * c1;
		ss -= s1 * s1;
	}
	cc = fmax(cc, LS_EPSNEG);
	ss = fmax(ss, LS_EPSNEG);
	double ca = yc / cc, sb = ys / ss, p = 2 * (ca * yc + sb * ys);
	switch (mode) {
	case LS_NORMALIZED:
		out[0] = p / (2 * (fm ? s->y2 - s->y1 * s->y1 : s->y2));
		break;
	case LS_AMPLITUDE: /* (a + ib) e^{i tau} */
		out[0] = ca * cos(tau) - sb * sin(tau);
		out[1] = ca * sin(tau) + sb * cos(tau);
		break;
	default:
		out[0] = p * (double)n / 4;
	}
}

void lombscargle_store(const kernel_array *o, size_t i, const double r[2])
{
	switch (o->dtype) {
	case GPUD_F32:
		((float *)o->data)[i] = (float)r[0];
		break;
	case GPUD_C64:
		((float *)o->data)[2 * i] = (float)r[0];
		((float *)o->data)[2 * i + 1] = (float)r[1];
		break;
	case GPUD_C128:
		((double *)o->data)[2 * i] = r[0];
		((double *)o->data)[2 * i + 1] = r[1];
		break;
	default:
		((double *)o->data)[i] = r[0];
	}
}

void lombscargle_ref_run(const kernel_args *a, size_t lo, size_t hi)
{
	const kernel_array *o = &a->v[LS_PGRAM].arr;
	ls_sums s;

	lombscargle_ref_sums(a, &s);
	for (size_t i = lo; i < hi; i++) {
		double r[2];
		lombscargle_ref_one(a, &s, lombscargle_freq(a, i), r);
		lombscargle_store(o, i, r);
	}
}
