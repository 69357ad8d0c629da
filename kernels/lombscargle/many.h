/*
 * kernels/lombscargle/many.h — many periodograms of their own lengths and
 * sample times in one launch: the descriptor of one series, the parameters
 * every series of the launch shares, and the launch over a table of
 * descriptors (many.c: the CPU reference's loop; many.cu: one CUDA launch).
 *
 * Two callers build the table: the lombscargle_many kernel (B series
 * concatenated, cut by offsets) and gpud's dynamic batcher (single-series
 * lombscargle runs of several clients, each series in its own request's
 * buffers, each output written straight into its own request's output).
 * The arithmetic is lombscargle's (lombscargle.h), series by series: the
 * results equal those of one lombscargle run per series.
 * No state: the CPU side runs on the cpu backend's workers, the CUDA side on
 * the thread that launches on the stream.
 */
#ifndef GPUD_LOMBSCARGLE_MANY_H
#define GPUD_LOMBSCARGLE_MANY_H

#include <stddef.h>

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One series: where its samples are and where its m outputs go (device
 * pointers for the CUDA launch, host pointers for the CPU one). */
typedef struct ls_series {
	const void *x, *y; /* n values of the launch's dtype */
	const void *w;     /* n weights of that dtype, or NULL: all equal */
	void *out;         /* m outputs: the dtype, or its complex dtype for amplitude */
	long long n;       /* >= 1 */
} ls_series;

/* What every series of a launch shares. */
typedef struct ls_many {
	gpud_dtype dtype;  /* GPUD_F32 or GPUD_F64 */
	int precenter;     /* 0/1 */
	int normalize;     /* LS_POWER, LS_NORMALIZED, LS_AMPLITUDE */
	int floating_mean; /* 0/1 */
	int legacy;        /* 0/1: scipy <= 1.14's results */
	const void *freqs; /* m angular frequencies of the dtype, or NULL: the grid */
	double f0, df;     /* the grid f0 + df k, k < m (float64), when freqs is NULL */
	long long m;       /* >= 1 */
	/* 1: no series has weights (every w NULL): the unweighted kernel, a
	 * little faster; 0 (the default): any may, a NULL w all equal */
	int no_weights;
	double eps; /* the NUFFT's tolerance (lombscargle's eps), or 0: its default */
} ls_many;

/*
 * The CPU reference for series [lo, hi) of s: each as lombscargle's direct
 * reference computes it. verdicts[i] (when not NULL) gets series i's verdict
 * code (LS_BAD_WEIGHT, LS_ZERO_WEIGHTS, or 0), and that series' outputs are
 * left unwritten.
 */
void ls_many_cpu(const ls_many *p, const ls_series *s, size_t lo, size_t hi, unsigned *verdicts);

/*
 * Series s of a launch as a single-series lombscargle run (lombscargle.h's
 * parameter order, 1-d x, y, weights and pgram of s->n and p->m values; the
 * pointers s's and p's, host or device alike), for ref.c's reference and
 * the NUFFT paths. method: LS_DIRECT or LS_NUFFT (eps p->eps, when > 0).
 */
void ls_many_view(const ls_many *p, const ls_series *s, int method, kernel_args *view);

/*
 * The NUFFT for the series [lo, hi) of s on the CPU (a grid: p->freqs NULL;
 * lombscargle's ls_nufft_cpu_run on each series' outputs [0, m)), with
 * verdicts as ls_many_cpu's. The results equal ls_many_cpu's to p->eps.
 */
void ls_many_nufft_cpu(const ls_many *p, const ls_series *s, size_t lo, size_t hi,
		       unsigned *verdicts);

/* The lombscargle_many kernel's verdict (many.c; the CUDA entry writes the
 * same): the bits below, and the first bad index + 1 above LM_VERDICT_SHIFT
 * (offsets' index for LM_BAD_OFFSETS, else the series'), capped. */
enum { LM_BAD_OFFSETS = 4u };
#define LM_VERDICT_SHIFT 3
#define LM_VERDICT_MAX_INDEX ((1u << (32 - LM_VERDICT_SHIFT)) - 2)

/* --- CUDA builds only (many.cu) --- */
struct cuda_launch_ctx;
/*
 * Enqueues one launch (as few as the grid's limits allow) computing b series
 * on ctx's stream. dev_series: the table of b descriptors in device memory;
 * dev_verdicts: b words in device memory, zeroed by the caller, where series
 * i's verdict code goes (NULL: none is read). max_n: the largest n of the
 * table, or a bound on it (the tiles are of a fixed size; the kernel takes
 * n < 2^31). Scratch, if it needs any, comes
 * from ctx->scratch. 0, or -1 with err.
 */
int ls_many_launch(const ls_many *p, const ls_series *dev_series, size_t b, long long max_n,
		   unsigned *dev_verdicts, const struct cuda_launch_ctx *ctx, char *err,
		   size_t errlen);
/*
 * The same table by the NUFFT (nufft.cu; a grid: p->freqs NULL, m <=
 * LS_NUFFT_MAX_NF): groups of series, as many as a scratch budget of fine
 * grids holds, each group's sums, spreading, one batched cuFFT and
 * epilogue enqueued on ctx's stream, reading the descriptors on the device
 * (no host round trip). total_n: the table's samples in all (the spreading's
 * blocks are cut for the average series; any n < 2^31 is covered). Bad
 * weights: the series' outputs NaN and its verdict code in dev_verdicts.
 * Needs cuFFT, ctx->scratch and ctx->fft (ls_nufft_usable's). 0, or -1 with
 * err.
 */
int ls_many_nufft_launch(const ls_many *p, const ls_series *dev_series, size_t b, long long total_n,
			 unsigned *dev_verdicts, const struct cuda_launch_ctx *ctx, char *err,
			 size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
