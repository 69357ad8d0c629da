/*
 * kernels/core/cuda_selftest.h — the self-test every built-in kernel runs when
 * the cuda backend opens, which is also its warm-up: the cuda backend's run
 * of kernels/core/selftest.h's samples (every sample, for every dtype the
 * kernel takes, against the CPU reference), with every forced path of a
 * kernel that has several (cuda_kernel.npaths). Each variant's code is so
 * loaded and run once before gpud answers, and a kernel that disagrees with
 * its reference stops gpud from starting. Built only with CUDA.
 */
#ifndef GPUD_KERNELS_CUDA_SELFTEST_H
#define GPUD_KERNELS_CUDA_SELFTEST_H

#include <stddef.h>

#include "kernels/core/cuda_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Runs the self-test of k (ck its CUDA entry) on ctx->stream, synchronously:
 * for each sample and dtype, the arguments are built and bound on the host as
 * a request's are, copied into device memory (outputs poisoned), run
 * with ck->launch (then with each path of ck->launch_path, outputs poisoned
 * again), copied back and compared with the CPU reference (cpu_kernel.run,
 * computed by kernel_selftest_samples on the host copy): float32 within
 * 1e-2, float64 within 1e-8 of max(1, max |reference|), integers exactly,
 * every output written and finite where the reference is. Where
 * cpu_kernel.available says the reference cannot run in this process, or
 * with_reference is 0 (a kernel tested on every stream needs its reference
 * once), outputs are only checked written and finite.
 *
 * 0: passed. 1: skipped, why in err: ctx lacks a library handle the kernel
 * needs (cuda_kernel.needs; its runs say why too). -1: failed; err names the
 * kernel, the sample, the dtype, the path and the first bad element, or the
 * CUDA error.
 *
 * The samples' device memory comes from one scratch block that grows as
 * needed and is kept from one call to the next (a cudaMalloc and cudaFree per
 * array would wait for the device hundreds of times at start):
 * kernel_selftest_release gives it back once every kernel is tested. The
 * block is the calling thread's: each device's open calls these on a thread
 * of its own, one at a time there.
 */
int kernel_selftest(const kernel_def *k, const cuda_kernel *ck, const cuda_launch_ctx *ctx,
		    int with_reference, char *err, size_t errlen);
void kernel_selftest_release(void);

#ifdef __cplusplus
}
#endif
#endif
