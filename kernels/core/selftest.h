/*
 * kernels/core/selftest.h — the backend-neutral part of a kernel's
 * self-test: every sample of the kernel (kernel_def.samples,
 * kernels/core/sample.h), for every dtype it takes, built on the host as a
 * request's arguments are, its CPU reference computed (cpu_kernel.run of the
 * cpu table, kernels/core/cpu_kernel.h), then handed to the backend's own
 * run, which puts the arguments where its kernels read them, runs the kernel
 * and compares each output with the reference (kernel_sample_compare). A
 * backend supplies only that run: the CUDA one is
 * kernels/core/cuda_selftest.c (at the cuda backend's open, on the GPU); the
 * host one is the unit tests' (kernels/core/test_sample.c; the cpu backend,
 * being the reference, runs none at start).
 *
 * No state: it runs on the calling thread (each device's opening thread, a
 * test), and whatever the backend's run keeps is the backend's.
 */
#ifndef GPUD_KERNELS_SELFTEST_H
#define GPUD_KERNELS_SELFTEST_H

#include <stddef.h>

#include "kernels/core/sample.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A backend's run of one built sample s: its outputs in s hold the CPU
 * reference where have_ref (else what check made: zeros). 0, or -1 with err,
 * which then starts with `where` (the kernel, the sample, the dtype).
 */
typedef int (*selftest_run_fn)(const kernel_sample *s, int have_ref, const char *where, void *arg,
			       char *err, size_t errlen);

/*
 * Runs every sample of k for every dtype (kernel_sample_dtypes) through run.
 * The reference is computed where with_reference and k's cpu entry can run
 * in this process (cpu_kernel.available); otherwise have_ref is 0 and outputs
 * can only be checked written and finite. A dtype that check refuses for a
 * sample is skipped; a sample every dtype is refused for is a failure, and
 * so is a kernel without samples. 0, or -1 with err naming the kernel, the
 * sample, the dtype and what went wrong.
 */
int kernel_selftest_samples(const kernel_def *k, int with_reference, selftest_run_fn run, void *arg,
			    char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
