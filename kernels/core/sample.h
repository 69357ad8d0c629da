/*
 * kernels/core/sample.h — a kernel's samples (kernel_def.samples): argument
 * texts that the self-test runs against the CPU reference
 * (kernels/core/selftest.h; on the GPU at the cuda backend's start,
 * cuda_selftest.h), and the unit tests on the host.
 *
 * A sample is `name=value` words separated by spaces, one per argument it
 * gives, e.g.
 *   "x=0.1,0.7,1.9 y=1,-0.5,2 freqs=0.5,2 precenter=true normalize=true"
 *   "a=rand:64x48 b=rand:48x40 tf32=true"
 * Scalars it leaves out take their defaults; outputs are never given (they
 * are made as the kernel's check says). A value is, for an input array,
 *   v,v,...          a 1-d array of these values (one value: one element)
 *   DIMS:v,v,...     the values in shape DIMS, e.g. 2x3:1,2,3,4,5,6
 *   rand:DIMS        DIMS (e.g. 1000 or 64x48) of pseudorandom values in
 *                    [-1, 1); integer dtypes: whole numbers in [-1, 1]
 *   rand:DIMS:LO:HI  the same in [LO, HI); integer dtypes: [LO, HI]
 * in the dtype the sample runs for (an input whose parameter does not take
 * that dtype gets the first it takes); integer dtypes take whole numbers
 * only. rand's values depend on its word alone ("b=rand:48x40"): the same on
 * every run and machine, and other for another parameter. An input that also
 * takes a scalar (elementwise x and y) given one number, without a comma or
 * DIMS, is that scalar: x=1.25. For a scalar, a value is read as gpuctl reads
 * one: true or false a bool, a whole number an int64, a decimal a float64,
 * anything else text (a dtype's name).
 *
 * Every value is bound with the daemon's own binding (kernel_bind_array,
 * kernel_bind_scalar, kernel_bind_text), then kernel_args_finish and the
 * kernel's check run, as for a request.
 *
 * The dtypes a sample runs for: those of the kernel's first input array
 * parameter, or for a kernel without one (uniform, normal) those of its
 * first dtype-name scalar parameter, which each run sets (a sample does not
 * give it). A dtype the check refuses for a sample is skipped there (tf32
 * for float64 matmul); a sample every dtype is refused for is an error.
 */
#ifndef GPUD_KERNELS_SAMPLE_H
#define GPUD_KERNELS_SAMPLE_H

#include <stddef.h>

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Elements of one array a sample may make, at most. */
#define SAMPLE_MAX_ELEMENTS (1u << 24)

typedef struct kernel_sample {
	/* bound, finished and checked; outputs allocated as check says */
	kernel_args a;
	/* host memory of each array argument, inputs and outputs; NULL for the others */
	void *host[KERNEL_MAX_PARAMS];
} kernel_sample;

/*
 * The dtypes the samples of k run for, ascending, into out; returns how
 * many (1 to 4). A kernel that takes no dtype gets one: GPUD_DTYPE_INVALID.
 */
int kernel_sample_dtypes(const kernel_def *k, gpud_dtype out[4]);

/*
 * Builds sample `text` of k for dtype dt (one of kernel_sample_dtypes): 0;
 * 1 when k->check refuses it (its message in err: the pair is skipped); -1
 * when the sample is broken (a word that does not parse, an unknown, repeated
 * or output parameter, a value the binding refuses, a missing argument),
 * with why in err. Free s with kernel_sample_free whatever it returned.
 */
int kernel_sample_build(const kernel_def *k, const char *text, gpud_dtype dt, kernel_sample *s,
			char *err, size_t errlen);
void kernel_sample_free(kernel_sample *s);

/* Bytes of the array bound to parameter i of s (0 for a scalar). */
size_t kernel_sample_bytes(const kernel_sample *s, int i);

/*
 * The poison that shows an element a kernel never wrote: n elements of dt at
 * p made a NaN with a payload no arithmetic gives (integers: an unlikely
 * value); whether element i of p is it.
 */
void kernel_sample_poison(gpud_dtype dt, void *p, size_t n);
int kernel_sample_is_poison(gpud_dtype dt, const void *p, size_t i);

/*
 * Output i's elements `got` (as many as s's output i, of its dtype) against
 * s's output i, which holds the CPU reference where have_ref. Every element
 * must be written (not the poison); with the reference, integers equal, and
 * floats finite where the reference is and within 1e-2 (float32) or 1e-8
 * (float64) of max(1, max |reference|); without it, floats finite. 0, or -1
 * naming the output and its first bad element in err.
 */
int kernel_sample_compare(const kernel_sample *s, int i, const void *got, int have_ref, char *err,
			  size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
