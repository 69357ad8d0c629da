/*
 * tests/gpu/gpu_test.h — what the GPU suite's files share (tests/gpu/util.c):
 * its seeded generator, random arrays, the poison that shows an element a
 * kernel never wrote, reading elements back; and each kernel folder's test,
 * kernels/<folder>/gpu_test_<folder>.c, which tests/gpu/kernels.c runs for every
 * kernel of kernels/kernels.def through a gpud on the cuda backend.
 */
#ifndef GPUD_TESTS_GPU_TEST_H
#define GPUD_TESTS_GPU_TEST_H

#include <stddef.h>
#include <stdint.h>

#include <gpud/client.h>

#include "kernels/core/sample.h"

/* The generator's state, seeded by main (and printed). */
extern uint64_t rng_state;
uint64_t rnd(void);
/* Seconds on the monotonic clock. */
double wall(void);
/* Uniform in [lo, hi). */
double uniform(double lo, double hi);

/* n floats of dt in [lo, hi) (sorted: increasing, irregular sample times); never 0. */
void *make_array(gpud_dtype dt, size_t n, double lo, double hi, int sorted);
/* n random elements of dt in [lo, hi) (integers: whole numbers, some large). */
void *random_of(gpud_dtype dt, size_t n, double lo, double hi);
/* Element i of a float32/float64 array; of any dtype. */
double get(gpud_dtype dt, const void *p, size_t i);
double get_any(gpud_dtype dt, const void *p, size_t i);
/* The poison of the self-test (kernels/core/sample.h): written by poison, recognised by is_poison. */
static inline int is_poison(gpud_dtype dt, const void *p, size_t i)
{
	return kernel_sample_is_poison(dt, p, i);
}
static inline void poison(gpud_dtype dt, void *p, size_t n)
{
	kernel_sample_poison(dt, p, n);
}
/* Uploads n poisoned elements of dt into a new buffer. */
gpud_handle poisoned(gpud_client *c, gpud_dtype dt, uint64_t n);

/* tests/gpu/isolation.c: tenant workers' tests. */
#include <check.h>
TCase *isolation_tcase(void);

/* kernels/<folder>/gpu_test_<folder>.c: the GPU test of kernel, one of the folder's. */
#define KERNEL_FOLDER(folder) void gpu_test_##folder(gpud_client *c, const char *kernel);
#include "kernels/kernels.def"

#endif
