/*
 * kernels/matmul/matmul.h — matmul: the matrix product c = a b of 2-d row-major
 * arrays (a m x k, b k x n, c m x n), as numpy.matmul of 2-d arrays; a and b
 * are both float32 or both float64, and so is c.
 *
 * cuda: cuBLAS's cublasGemmEx on the session's stream, with that stream's
 * handle and workspace. float32 computes in float32 (CUBLAS_COMPUTE_32F: no
 * TF32) unless tf32=true (CUBLAS_COMPUTE_32F_FAST_TF32: tensor cores, inputs
 * rounded to TF32's 10-bit mantissa, about 1e-3 relative); float64 computes
 * in float64, and there tf32=true is refused.
 * cpu: the CPU BLAS's cblas_sgemm/cblas_dgemm (OpenBLAS by default, with its
 * own threads: $OPENBLAS_NUM_THREADS); tf32 is accepted and changes nothing
 * there (the product is full float32).
 *
 * k = 0 gives zeros (an empty sum); m = 0 or n = 0 an empty c. Each of m, k,
 * n is at most 2^31 - 1 (the BLAS interfaces' int).
 */
#ifndef GPUD_KERNELS_MATMUL_H
#define GPUD_KERNELS_MATMUL_H

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parameter order. */
enum { MM_A, MM_B, MM_C, MM_TF32 };

extern const kernel_def kernel_matmul;

#ifdef __cplusplus
}
#endif
#endif
