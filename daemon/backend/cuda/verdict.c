/*
 * daemon/backend/cuda/verdict.c — the words in which a CUDA kernel reports
 * that its arguments' values were wrong (cpu_kernel.verdict on the cpu backend,
 * cuda_launch_ctx.verdict): negative weights, say, which no check before the
 * run can see because the data is in device memory.
 *
 * One page-locked, device-mapped array of MAX_VERDICTS words. A run of a
 * kernel that reports verdicts takes a word, zeroed, before its launch; the
 * kernel writes a code there; when the run's end event has passed, the word
 * is read on the loop (a completed kernel's writes to mapped host memory are
 * visible by then) and the word is given back.
 *
 * Threads: the free list is the loop's; the words themselves are written by
 * the device and read on the loop once the writer has finished.
 */
#include <stdio.h>

#include "daemon/backend/cuda/internal.h"
#include "daemon/loop.h"
#include "kernels/core/cuda_check.h"

int verdict_open(cuda_backend *cb, char *err, size_t errlen)
{
	cudaError_t e = cudaHostAlloc((void **)&cb->verdicts, MAX_VERDICTS * sizeof(unsigned),
				      cudaHostAllocMapped);
	if (e != cudaSuccess) {
		cb->verdicts = NULL;
		return cuda_fail(e, "cudaHostAlloc (verdicts)", err, errlen);
	}
	if ((e = cudaHostGetDevicePointer((void **)&cb->verdicts_dev, (void *)cb->verdicts, 0)) !=
	    cudaSuccess)
		return cuda_fail(e, "cudaHostGetDevicePointer (verdicts)", err, errlen);
	cb->nverdict_free = 0;
	for (int i = MAX_VERDICTS - 1; i >= 0; i--)
		cb->verdict_free[cb->nverdict_free++] = i;
	return 0;
}

void verdict_close(cuda_backend *cb)
{
	if (cb->verdicts)
		cudaFreeHost((void *)cb->verdicts);
	cb->verdicts = NULL;
}

int verdict_take(cuda_backend *cb)
{
	ON_LOOP("verdict_take");
	if (cb->nverdict_free == 0)
		return -1;
	int i = cb->verdict_free[--cb->nverdict_free];
	cb->verdicts[i] = 0;
	return i;
}

unsigned verdict_put(cuda_backend *cb, int idx)
{
	ON_LOOP("verdict_put");
	unsigned code = cb->verdicts[idx];
	cb->verdict_free[cb->nverdict_free++] = idx;
	return code;
}
