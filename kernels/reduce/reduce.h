/*
 * kernels/reduce/reduce.h — reductions of the kernel library: sum, asum (sum of
 * |x|), min, max, mean of x, and dot of x and y; the output `out` is a 0-d
 * array.
 *
 * dtypes: sum, min, max take float32, float64, int32, int64; asum, mean, dot
 * take float32 and float64. out has x's dtype, except sum of an integer
 * array, which is int64 (as numpy's sum is on 64-bit Linux).
 *
 * Accuracy (sum, asum, mean, dot; docs/kernels.md states it too): every term is
 * converted to float64 and accumulated in float64; a float32 result is
 * rounded to float32 once at the end. On the GPU the accumulation is CUB's
 * DeviceReduce over a converting iterator: each thread adds a short run of
 * terms, then a tree combines the partial sums, so the float64 error is at
 * most about (n / threads + 2 log2 n) * 2^-53 * sum(|terms|), threads being
 * CUB's grid (tens of thousands on an H200): under 1e-14 of sum(|terms|) up to
 * 2^20 elements (the GPU tests hold it to 1e-13), under 2e-11 at the largest
 * arrays an H200 holds. The cpu backend uses compensated
 * (Neumaier) summation: within 2^-52 of the exact result plus n * 2^-106 of
 * sum(|terms|). Consequently a float32 sum, asum, mean or dot is the exact
 * result rounded to float32, within one float32 ulp unless the terms cancel
 * to a small fraction of sum(|terms|) — not the O(n * 2^-24)
 * relative error of accumulating in float32. Integer sums wrap modulo 2^64
 * (int64 output). min and
 * max propagate NaN as numpy does; min, max and mean of an empty array are
 * refused (numpy raises or warns); the sum of an empty array is 0.
 */
#ifndef GPUD_KERNELS_REDUCE_H
#define GPUD_KERNELS_REDUCE_H

#include "kernels/core/kernel.h"

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
