/*
 * kernels/lombscargle/lombscargle.h — what lombscargle's files share: the
 * parameters' order, the normalize and method words, the verdict codes, the
 * CPU reference's pieces (ref.c) the NUFFT and the tests call, and the NUFFT
 * path's plan (nufft.c, nufft.cu; the shared arithmetic is in nufft.h).
 * The .c files depend one way: ref.c <- nufft.c <- lombscargle.c. No state.
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
	LS_METHOD,
	LS_EPS,
};

/* method's words, by index */
enum { LS_AUTO, LS_DIRECT, LS_NUFFT };

/* method=nufft: the most frequencies (its fine grid, 2 nf points and more, is
 * indexed by int in cuFFT) */
#define LS_NUFFT_MAX_NF (1ll << 29)

/* normalize's words, by index (false is power, true is normalize) */
enum { LS_POWER, LS_NORMALIZED, LS_AMPLITUDE };

/* Verdict codes (cpu_kernel.verdict; the CUDA kernel writes the same). */
enum {
	LS_BAD_WEIGHT = 1u,   /* a weight < 0 or NaN */
	LS_ZERO_WEIGHTS = 2u, /* the weights do not sum to a positive value */
};

/* numpy.finfo(float64).epsneg: where scipy clamps CC and SS */
#define LS_EPSNEG 1.1102230246251565e-16

/* --- the CPU reference (ref.c) ------------------------------------------------------------ */

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
/* The direct reference for outputs [lo, hi), whatever method says. */
void lombscargle_ref_run(const kernel_args *a, size_t lo, size_t hi);
/* Output i of pgram (its dtype: real, or complex for amplitude) from r. */
void lombscargle_store(const kernel_array *o, size_t i, const double r[2]);
/* Series in the run: y's rows when y is a batch (B, N), else 1. */
size_t lombscargle_series(const kernel_args *a);
/* Series b of a batch as a run of its own: y and pgram its row (1-d), the
 * rest a's (x, weights, frequencies and scalars are shared). */
void lombscargle_series_view(const kernel_args *a, size_t b, kernel_args *view);

/* --- the NUFFT path (nufft.c) ------------------------------------------------------------ */

/* eps as given, or its default for the dtype (1e-9 float64, 1e-5 float32). */
double lombscargle_eps(const kernel_args *a);

#define LS_NUFFT_MAX_NQ 64
/*
 * A type-1 NUFFT of m modes k' in [-m/2, m - m/2) (frequency f0 + (k0 + k')
 * df, k0 = m/2, is output k0 + k'): the exponential-of-semicircle kernel
 * psi(t) = exp(beta (sqrt(1 - (2t/ns)^2) - 1)), |t| <= ns/2 fine-grid cells,
 * on a fine grid of nfine >= 2m points (upsampling 2), and the Gauss-Legendre
 * rule on [0, 1] that gives its Fourier transform:
 *   psihat(xi) = ns * sum_q qw[q] phi(qz[q]) cos(xi ns qz[q] / 2)
 * (qw[] already holds qw * phi(qz)).
 */
typedef struct ls_nufft_plan {
	double tol;      /* the transforms' tolerance */
	int ns;          /* kernel width, fine-grid cells (2..16) */
	double beta;     /* kernel shape */
	long long m;     /* modes */
	long long k0;    /* the centre mode's index, m / 2 */
	long long nfine; /* fine grid: even, 2^a 3^b 5^c, >= 2m and >= 2 ns */
	int nq;
	double qz[LS_NUFFT_MAX_NQ], qw[LS_NUFFT_MAX_NQ];
} ls_nufft_plan;

/* The band's centre f0 + k0 df and the step df, angular, as cycles in
 * double-double (hi + lo, from long double) for ls_frac_dd. */
void ls_nufft_cycles(double f0, double df, long long k0, double *fc_hi, double *fc_lo,
		     double *df_hi, double *df_lo);
/* The plan for m modes at tolerance tol. */
void ls_nufft_setup(ls_nufft_plan *p, long long m, double tol);
/* 1 when a run spreads and transforms in float32 grids (float32 input, but
 * not the amplitude or floating_mean, which take float64 grids), else 0. */
int ls_nufft_narrow(int f32, int mode, int floating_mean);
/* The transforms' tolerance for a result to eps of max |pgram| with n
 * samples, in float32 grids (narrow) or float64 ones. */
double ls_nufft_tol(double eps, size_t n, int narrow);
/* The same for a's run: its eps, samples and grids. */
double ls_nufft_tol_for(const kernel_args *a);
/* psihat at mode k' (the deconvolution's divisor), by the rule. */
double ls_nufft_psihat(const ls_nufft_plan *p, long long kp);

/* 1 when FFTW3 is there (the cpu backend's NUFFT), else 0 with why in err. */
int ls_nufft_cpu_available(char *err, size_t errlen);
/*
 * Outputs [lo, hi) of a grid run by the NUFFT on the CPU (float64 throughout,
 * FFTW3 for the FFT): the sub-grid f0 + lo df, hi - lo frequencies, is a
 * transform of its own. Without FFTW3 the direct reference computes them.
 */
void ls_nufft_cpu_run(const kernel_args *a, size_t lo, size_t hi);
/*
 * method=auto on the cpu backend: 1 when the NUFFT is expected faster for
 * these arguments (a grid, FFTW3 there), by the cost model in nufft.c.
 */
int ls_nufft_cpu_pick(const kernel_args *a);
/* --- the cuda side (nufft.cu; CUDA builds only) --- */
struct cuda_launch_ctx;
/* 1 when the NUFFT can run with ctx (a grid, cuFFT, scratch), else 0 with why. */
int ls_nufft_usable(const kernel_args *a, const struct cuda_launch_ctx *ctx, char *why,
		    size_t whylen);
/* Enqueues the NUFFT path: 0, or -1 with err. */
int ls_nufft_launch(const kernel_args *a, const struct cuda_launch_ctx *ctx, char *err,
		    size_t errlen);
/* method=auto's cost model: a warm run's expected µs, direct and NUFFT. */
double ls_direct_cost_us(const kernel_args *a);
double ls_nufft_cost_us(const kernel_args *a);

/* cpu_kernel.item_cost of a run the NUFFT computes. */
size_t ls_nufft_cpu_item_cost(const kernel_args *a);
/* 1 when the cpu backend computes these arguments by the NUFFT (lombscargle.c). */
int ls_cpu_uses_nufft(const kernel_args *a);

#ifdef __cplusplus
}
#endif
#endif
