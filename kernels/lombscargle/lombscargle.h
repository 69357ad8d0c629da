/*
 * kernels/lombscargle/lombscargle.h — what lombscargle's files share: the
 * parameters' order, the normalize words, the verdict codes, and the CPU
 * reference's pieces the tests call.
 */
#ifndef GPUD_LOMBSCARGLE_H
#define GPUD_LOMBSCARGLE_H

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	LS_X,
	LS_Y,
	LS_FREQS,
	LS_PGRAM,
	LS_PRECENTER,
	LS_NORMALIZE,
	LS_WEIGHTS,
	LS_FLOATING_MEAN,
	LS_F0,
	LS_DF,
	LS_NF,
	LS_LEGACY,
};

/* normalize's words, by index (false is power, true is normalize) */
enum { LS_POWER, LS_NORMALIZED, LS_AMPLITUDE };

/* Verdict codes (kernel_def.cpu_verdict; the CUDA kernel writes the same). */
enum {
	LS_BAD_WEIGHT = 1u,   /* a weight < 0 or NaN */
	LS_ZERO_WEIGHTS = 2u, /* the weights do not sum to a positive value */
};

/* numpy.finfo(float64).epsneg: where scipy clamps CC and SS */
#define LS_EPSNEG 1.1102230246251565e-16

/* What the reference needs of the samples, independent of the frequency. */
typedef struct ls_sums {
	double shift; /* precenter: mean(y), else 0 */
	double wsum;  /* sum of the weights (n without weights) */
	double y1;    /* sum of w y over normalised weights, y shifted */
	double y2;    /* sum of w y^2 likewise */
	double ydot;  /* legacy: dot(y, y) of the y as given */
} ls_sums;

void lombscargle_ref_sums(const kernel_args *a, ls_sums *s);
/*
 * Frequency f (angular) of the reference, in float64: scipy >= 1.15's
 * algorithm, or with legacy scipy <= 1.14's. out[0] the power (or the
 * amplitude's real part), out[1] the amplitude's imaginary part.
 */
void lombscargle_ref_one(const kernel_args *a, const ls_sums *s, double f, double out[2]);
/* The i-th frequency: freqs[i], or f0 + df * i of the grid. */
double lombscargle_freq(const kernel_args *a, size_t i);

#ifdef __cplusplus
}
#endif
#endif
