/*
 * kernels/lombscargle/batch_kernel.h — lombscargle_batch, gpud's own kernel
 * behind dynamic batching (daemon/verbs/batch_run.c): single-series
 * lombscargle runs of several requests computed in one launch over a table
 * of ls_series descriptors (many.h), each pointing at its own request's
 * arrays, with a verdict word per series. No client can name it: it is in
 * no table (KERNEL_ID_LOMBSCARGLE_BATCH; cpu_kernel_of and the cuda
 * backend find its entries by that id). batch_kernel.c holds the
 * kernel_def, which runs may join a batch, and the cpu entry;
 * cuda_batch_kernel.c the cuda entry (ls_many_launch).
 * No state: check-free (gpud builds the arguments), runs on the backends'
 * threads as any kernel.
 */
#ifndef GPUD_LOMBSCARGLE_BATCH_KERNEL_H
#define GPUD_LOMBSCARGLE_BATCH_KERNEL_H

#include <stddef.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/many.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Its parameters: the table of b descriptors (the device's memory), b
 * verdict words (the device's memory, zeroed by gpud), and the shared
 * parameters of ls_many as scalars. */
enum {
	LB_SERIES,
	LB_VERDICTS,
	LB_PRECENTER,
	LB_NORMALIZE,
	LB_FLOATING_MEAN,
	LB_LEGACY,
	LB_F0,
	LB_DF,
	LB_M,
	LB_MAX_N,
	LB_NO_WEIGHTS,
	LB_NPARAMS
};

extern const kernel_def kernel_lombscargle_batch;

/*
 * Whether a checked lombscargle run (a) may join a batch, and if so the
 * parameters it shares with the others (*p, freqs NULL: a grid) and its
 * work n * nf (*work). Joins: one series (y 1-d), a grid f0/df/nf (no freqs
 * array), method direct or auto (a batch computes by the direct method).
 * 0, or -1 with why in the message.
 */
int ls_batch_shared(const kernel_args *a, ls_many *p, long long *work, char *why, size_t whylen);
/* Series of the run a (lombscargle's arguments, bound): its descriptor. */
void ls_batch_series(const kernel_args *a, ls_series *s);
/* lombscargle_batch's arguments over b series at `series`, verdicts at
 * `verdicts` (memory of the backend it runs on), the largest n max_n. */
void ls_batch_args(const ls_many *p, void *series, void *verdicts, size_t b, long long max_n,
		   kernel_args *out);
/* Back from them: the shared parameters, how many series, the largest n. */
void ls_batch_params(const kernel_args *a, ls_many *p, size_t *b, long long *max_n);

#ifdef __cplusplus
}
#endif
#endif
