/*
 * kernels/reduce.h — reductions of the kernel library: sum, asum (sum of
 * |x|), min, max, mean of x, and dot of x and y; the output `out` is a 0-d
 * array.
 *
 * dtypes: sum, min, max take float32, float64, int32, int64; asum, mean, dot
 * take float32 and float64. out has x's dtype, except sum of an integer
 * array, which is int64 (as numpy's sum is on 64-bit Linux).
 *
 * Accuracy: float32 inputs are accumulated in float64 on both backends
 * (CUB's DeviceReduce over a converting iterator on the GPU) and rounded to
 * float32 once, so a float32 sum, asum, mean or dot is within one float32 ulp
 * of the exact result plus n * 2^-53 of sum(|terms|) — not the O(n * 2^-24)
 * of naive float32 accumulation. float64 inputs accumulate in float64 (the
 * GPU's tree order differs from the CPU's sequential one: agreement to about
 * log2(n) * 2^-53 of sum(|terms|)). Integer sums wrap modulo 2^64. min and
 * max propagate NaN as numpy does; min, max and mean of an empty array are
 * refused (numpy raises or warns); the sum of an empty array is 0.
 */
#ifndef GPUD_KERNELS_REDUCE_H
#define GPUD_KERNELS_REDUCE_H

#include "kernels/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum red_op { RED_SUM, RED_ASUM, RED_MIN, RED_MAX, RED_MEAN, RED_DOT, RED_NOPS } red_op;

/* Parameter order: x, then out (sum...mean) or x, y, out (dot). */
enum { RED_X = 0 };

int red_op_of(const kernel_def *k);
/* The index of the output parameter of k. */
int red_out(const kernel_def *k);

extern const kernel_def kernel_sum, kernel_asum, kernel_min, kernel_max, kernel_mean, kernel_dot;

#ifdef __cplusplus
}
#endif
#endif
