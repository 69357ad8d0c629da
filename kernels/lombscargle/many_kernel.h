/*
 * kernels/lombscargle/many_kernel.h — what the lombscargle_many kernel's
 * files share (many.c: kernel_def, checks, cpu entry; many.cu: its cuda
 * entry; the tests): the parameters' order and the host-side pieces both
 * entries use. No state.
 */
#ifndef GPUD_LOMBSCARGLE_MANY_KERNEL_H
#define GPUD_LOMBSCARGLE_MANY_KERNEL_H

#include <stdint.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/many.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	LM_X,
	LM_Y,
	LM_OFFSETS,
	LM_FREQS,
	LM_PGRAM,
	LM_PRECENTER,
	LM_NORMALIZE,
	LM_WEIGHTS,
	LM_FLOATING_MEAN,
	LM_F0,
	LM_DF,
	LM_NF,
	LM_LEGACY,
	LM_METHOD,
	LM_EPS,
};

/* The launch's shared parameters from checked arguments (freqs: its data pointer). */
void lm_params(const kernel_args *a, ls_many *p);
/* 1 when the run computes by the NUFFT: method=nufft, or auto's pick by
 * lombscargle's cost model for the backend (the cpu's here, many.c; the
 * cuda entry weighs ls_direct_cost_us against ls_nufft_cost_us). */
int lm_cpu_uses_nufft(const kernel_args *a);
/* Series of n samples with the run's grid and scalars as a lombscargle run
 * of its own (x, y, weights and pgram without data): for the cost models. */
void lm_model_view(const kernel_args *a, long long n, kernel_args *view);
/* offsets' first bad index (capped at LM_VERDICT_MAX_INDEX) for nb series
 * of t samples in all, or (unsigned)-1 when they are good. */
unsigned lm_offsets_first_bad(const int64_t *off, size_t nb, long long t);

#ifdef __cplusplus
}
#endif
#endif
