/*
 * kernels/elementwise/elementwise.h — the elementwise kernels of the library: add, sub,
 * mul, div, axpy (a*x + y), saxpy_trig (exp(a*sin(x) + cos(y))), rel_diff
 * (2(x - y)/(x + y)) and sum_of_squares (x^2 + y^2).
 *
 * x and y are arrays or scalars (a scalar broadcasts); the arrays must have
 * one dtype and one length; z gets their dtype and the first array's shape.
 * a (axpy, saxpy_trig) is a float64 scalar. add, sub, mul and
 * sum_of_squares also take int32 and int64 (wrapping as numpy does); the
 * others are float32/float64 only. float32 is computed in float32 on the GPU
 * and in float64 rounded once by the CPU reference.
 */
#ifndef GPUD_KERNELS_ELEMENTWISE_H
#define GPUD_KERNELS_ELEMENTWISE_H

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ew_op {
	EW_ADD,
	EW_SUB,
	EW_MUL,
	EW_DIV,
	EW_AXPY,
	EW_SAXPY_TRIG,
	EW_REL_DIFF,
	EW_SUM_OF_SQUARES,
	EW_NOPS
} ew_op;

/* Parameter order of every elementwise kernel. */
enum { EW_X, EW_Y, EW_Z, EW_A };

/* The op of a library elementwise kernel, or -1. */
int ew_op_of(const kernel_def *k);
/* The length of the run (the arrays' element count). */
size_t ew_count(const kernel_args *a);
/* One element in float64 (the CPU reference), for float inputs. */
double ew_ref_f64(ew_op op, double x, double y, double a);

extern const kernel_def kernel_add, kernel_sub, kernel_mul, kernel_div, kernel_axpy,
	kernel_saxpy_trig, kernel_rel_diff, kernel_sum_of_squares;

#ifdef __cplusplus
}
#endif
#endif
