/*
 * kernels/core/cuda_check.h — checking CUDA runtime calls. A failed call becomes
 * a message naming the call and the CUDA error, e.g.
 *   "cudaMemcpyAsync: an illegal memory access was encountered (cudaErrorIllegalAddress)"
 * Usable from C (the cuda backend) and CUDA C++ (the kernels).
 */
#ifndef GPUD_CUDA_CHECK_H
#define GPUD_CUDA_CHECK_H

#include <stdio.h>

#include <cuda_runtime_api.h>

static inline int cuda_fail(cudaError_t e, const char *call, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
	return -1;
}

/* In a function with `char *err, size_t errlen` that returns int. */
#define CUDA_CHECK(call, name)                                                                     \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess)                                                             \
			return cuda_fail(e_, (name), err, errlen);                                 \
	} while (0)

#endif
