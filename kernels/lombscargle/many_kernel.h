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
};

/* The launch's shared parameters from checked arguments (freqs: its data pointer). */
void lm_params(const kernel_args *a, ls_many *p);
/* offsets' first bad index (capped at LM_VERDICT_MAX_INDEX) for nb series
 * of t samples in all, or (unsigned)-1 when they are good. */
unsigned lm_offsets_first_bad(const int64_t *off, size_t nb, long long t);

#ifdef __cplusplus
}
#endif
#endif
