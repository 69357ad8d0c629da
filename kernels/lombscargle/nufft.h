/*
 * kernels/lombscargle/nufft.h — the arithmetic the NUFFT path shares between
 * the CPU (nufft.c) and the GPU (nufft.cu): the spreading kernel, the
 * argument's reduction, and the epilogue that turns the three sums of a
 * frequency into the periodogram exactly as lombscargle_ref_one does (scipy
 * >= 1.15's two passes, written as one pass and a rotation by tau, as the
 * direct CUDA kernel does). Inline functions only; no state.
 */
#ifndef GPUD_LOMBSCARGLE_NUFFT_H
#define GPUD_LOMBSCARGLE_NUFFT_H

#include <math.h>

#include "kernels/lombscargle/lombscargle.h"

#ifdef __CUDACC__
#define LS_HD __host__ __device__ __forceinline__
#else
#define LS_HD static inline
#endif

/* What the epilogue needs of the samples (the same for every frequency). */
typedef struct ls_nufft_fin {
	int fm, mode, legacy;
	double y1;    /* floating_mean: sum of w y' with y' the y as spread (0 but rounding) */
	double scale; /* the power's factor: pgram = 2 (a YC + b YS) scale */
	double clamp; /* where CC and SS are clamped */
} ls_nufft_fin;

/* The factor of pgram for the mode (ls_nufft_fin.scale): as the direct kernel. */
LS_HD double ls_nufft_scale(int mode, int legacy, int fm, double n, double ydot, double y1,
			    double y2)
{
	if (mode == LS_NORMALIZED)
		return legacy ? n / (2 * ydot) : 0.5 / (fm ? y2 - y1 * y1 : y2);
	return 0.25 * n;
}

/*
 * One frequency f from its sums over normalised weights w (sum 1):
 *   (c, s)    = sum w e^{i f x}
 *   (yc, ys)  = sum w y' e^{i f x}, y' the y as spread
 *   (w2c, w2s) = sum w e^{2 i f x}
 * out[0] the power (or the amplitude's real part), out[1] its imaginary part.
 */
LS_HD void ls_nufft_finish(const ls_nufft_fin *p, double c, double s, double yc, double ys,
			   double w2c, double w2s, double out[2])
{
	/* CC = sum w cos^2 = (1 + sum w cos 2fx) / 2, CS = sum w sin 2fx / 2 */
	double vcc = 0.5 * (1 + w2c), vcs = 0.5 * w2s, vss = 0.5 * (1 - w2c);
	double yc0 = yc, ys0 = ys;
	if (p->fm) {
		vcc -= c * c;
		vss -= s * s;
		vcs -= c * s;
		yc0 -= p->y1 * c;
		ys0 -= p->y1 * s;
	}
	/* tau = atan2(2 cs, cc - ss) / 2: its cosine and sine by the half angle */
	double xx = vcc - vss, yy = 2 * vcs, rr = sqrt(xx * xx + yy * yy);
	double ct = 1, st = 0;
	if (rr > 0) {
		double c2 = xx / rr, s2 = yy / rr;
		if (xx >= 0) {
			ct = sqrt((1 + c2) / 2);
			st = s2 / (2 * ct);
		} else {
			st = copysign(sqrt((1 - c2) / 2), s2);
			ct = s2 / (2 * st);
		}
	}
	/* rotated by tau: cos(fx - tau) = cos fx cos tau + sin fx sin tau */
	double ycr = ct * yc0 + st * ys0, ysr = ct * ys0 - st * yc0;
	double cross = 2 * ct * st * vcs;
	double c2 = ct * ct * vcc + cross + st * st * vss;
	double s2 = p->fm ? st * st * vcc - cross + ct * ct * vss : 1 - c2;
	c2 = c2 > p->clamp ? c2 : p->clamp;
	s2 = s2 > p->clamp ? s2 : p->clamp;
	double a = ycr / c2, b = ysr / s2;
	if (p->mode == LS_AMPLITUDE) {
		out[0] = a * ct - b * st;
		out[1] = a * st + b * ct;
	} else {
		out[0] = 2 * (a * ycr + b * ysr) * p->scale;
		out[1] = 0;
	}
}

/* The spreading kernel at t cells from the point (|t| <= ns/2). */
LS_HD double ls_nufft_kernel(double t, double two_over_ns, double beta)
{
	double z = t * two_over_ns, q = 1 - z * z;
	return q > 0 ? exp(beta * (sqrt(q) - 1)) : 0.0;
}

/*
 * frac(m f x) in [0, 1) for m = 1 or 2, the frequency f in cycles held as
 * hi + lo (double-double): the product's rounding is kept (fma) and lo
 * added, so the result is good to about 1e-16 cycles however large f x is.
 * A phase rounded as one double, f x ~ 10^6 cycles, is off by ~1e-10
 * cycles, and for the NUFFT, which builds the frequency f0 + k df from the
 * band's centre fc and k' steps, that error is a coherent shift of a low
 * frequency: 1.5e-9 of max|pgram| was measured at 10^6 samples.
 */
LS_HD double ls_frac_dd(double hi, double lo, double x, double m)
{
	const double mh = m * hi, p = mh * x, e = fma(mh, x, -p);
	double r = (p - floor(p)) + (e + m * lo * x);
	r -= floor(r);
	return r < 1 ? r : 0.0;
}

#endif
