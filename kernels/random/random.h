/*
 * kernels/random/random.h — uniform and normal: n pseudorandom numbers from cuRAND's
 * Philox4_32_10 generator, seeded with `seed` (offset 0, ordering
 * CURAND_ORDERING_PSEUDO_DEFAULT), into a new 1-d array `out` of dtype
 * `dtype` (float32 or float64, given by name; default float64 as numpy's).
 *
 *   uniform  low + (high - low) * u, u from curandGenerateUniform[Double],
 *            which is in (0, 1]; with the defaults low = 0, high = 1 the
 *            numbers are cuRAND's own. The scaling is done in float64 (each
 *            operation rounded once, no FMA) and rounded once to float32.
 *   normal   curandGenerateNormal[Double] with mean and stddev (defaults 0
 *            and 1; rounded to float32 for float32 output): Box-Muller pairs.
 *
 * Both backends give the same sequence for the same n, seed and dtype: the
 * cuda backend generates on the device (the stream's generator), the cpu
 * backend with cuRAND's host generator (curandCreateGeneratorHost). uniform
 * is bitwise equal across them; normal may differ in the last bits, since
 * Box-Muller's log, sqrt and sincos come from the host's libm on one side
 * and the device's functions on the other. The device generates normals in
 * pairs: for odd n the last one comes from a pair generated at offset n - 1
 * (the same number the host generator gives there).
 *
 * n is 0 or more, seed 0 to 2^63 - 1. cuRAND is loaded at run time
 * (kernels/core/libs.h, $GPUD_CURAND); without it both kernels answer why.
 */
#ifndef GPUD_KERNELS_RANDOM_H
#define GPUD_KERNELS_RANDOM_H

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parameter order of both: RND_P1, RND_P2 are low, high (uniform) or mean, stddev (normal). */
enum { RND_N, RND_SEED, RND_DTYPE, RND_P1, RND_P2, RND_OUT };

extern const kernel_def kernel_uniform, kernel_normal;

#ifdef __cplusplus
}
#endif
#endif
