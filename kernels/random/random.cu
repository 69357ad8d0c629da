/*
 * kernels/random/random.cu — uniform and normal on the GPU through cuRAND's
 * host API (kernels/random/random.h), loaded at run time (kernels/core/libs.h). The
 * backend gives each stream its own Philox4_32_10 generator bound to it
 * (cuda_launch_ctx.rng); a run sets the seed and offset 0 and enqueues the
 * generation (and, for uniform with low/high, one scaling kernel of ours).
 *
 * cuRAND's device generator makes normals in pairs (an odd count is
 * CURAND_STATUS_LENGTH_NOT_MULTIPLE): for odd n, n + 1 are generated into
 * stream-ordered scratch and the first n copied into out — the numbers the
 * host generator gives for n. (Generating the last pair alone at offset
 * n - 1 gives the host's number for float32 but not for float64 on cuRAND
 * 10.4: the device's double generator counts offsets otherwise.)
 */
#include <cuda_runtime.h>
#include <curand.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/core/libs.h"
#include "kernels/random/random.h"

/* kernels/core/libs.h declares cuRAND's constants itself: they must be the toolkit's. */
#define SAME(ours, theirs) static_assert((int)(ours) == (int)(theirs), #ours " != " #theirs)
SAME(LIBS_CURAND_SUCCESS, CURAND_STATUS_SUCCESS);
SAME(LIBS_CURAND_LENGTH_NOT_MULTIPLE, CURAND_STATUS_LENGTH_NOT_MULTIPLE);
SAME(LIBS_CURAND_RNG_PSEUDO_PHILOX4_32_10, CURAND_RNG_PSEUDO_PHILOX4_32_10);
SAME(LIBS_CURAND_ORDERING_PSEUDO_DEFAULT, CURAND_ORDERING_PSEUDO_DEFAULT);
#undef SAME

namespace {

constexpr int SCALE_BLOCK = 256;

/* out = low + w u, in float64 with one rounding per operation (as the cpu backend). */
template <typename T> __global__ void __launch_bounds__(SCALE_BLOCK)
	scale_kernel(T *out, long long n, double low, double w)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x)
		out[i] = (T)__dadd_rn(low, __dmul_rn(w, (double)out[i]));
}

#define RND_CHECK(call, what_)                                                                     \
	do {                                                                                       \
		int st_ = (call);                                                                  \
		if (st_ != LIBS_CURAND_SUCCESS) {                                                  \
			snprintf(err, errlen, "%s: %s: %s (%d)", a->kernel->name, (what_),         \
				 libs_curand_status(st_), st_);                                    \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

int gen_normal(const libs_curand *cr, libs_curand_gen g, gpud_dtype dt, void *out, size_t n,
	       double mean, double stddev)
{
	return dt == GPUD_F32 ? cr->normal(g, (float *)out, n, (float)mean, (float)stddev)
			      : cr->normal_double(g, (double *)out, n, mean, stddev);
}

int rnd_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	const libs_curand *cr = libs_get_curand(NULL, 0);
	const kernel_array *o = &a->v[RND_OUT].arr;
	int normal = a->kernel == &kernel_normal;
	double p1 = a->v[RND_P1].s.f64, p2 = a->v[RND_P2].s.f64;
	size_t n = o->count, es = gpud_dtype_size(o->dtype);
	cudaStream_t s = (cudaStream_t)ctx->stream;
	libs_curand_gen g = (libs_curand_gen)ctx->rng;

	if (g == NULL || cr == NULL) {
		snprintf(err, errlen, "%s is unavailable on the cuda backend: %s", a->kernel->name,
			 ctx->rng_why && ctx->rng_why[0] ? ctx->rng_why : "cuRAND is not loaded");
		return -1;
	}
	if (n == 0)
		return 0;
	RND_CHECK(cr->set_seed(g, (unsigned long long)a->v[RND_SEED].s.i64),
		  "curandSetPseudoRandomGeneratorSeed");
	RND_CHECK(cr->set_offset(g, 0), "curandSetGeneratorOffset");
	if (!normal) {
		if (o->dtype == GPUD_F32)
			RND_CHECK(cr->uniform(g, (float *)o->data, n), "curandGenerateUniform");
		else
			RND_CHECK(cr->uniform_double(g, (double *)o->data, n),
				  "curandGenerateUniformDouble");
		if (p1 == 0 && p2 == 1)
			return 0;
		long long blocks = ((long long)n + SCALE_BLOCK - 1) / SCALE_BLOCK,
			  most = (long long)ctx->sm_count * 8;
		dim3 grid((unsigned)(blocks < most ? blocks : most));
		if (o->dtype == GPUD_F32)
			scale_kernel<float><<<grid, SCALE_BLOCK, 0, s>>>((float *)o->data,
									 (long long)n, p1, p2 - p1);
		else
			scale_kernel<double><<<grid, SCALE_BLOCK, 0, s>>>((double *)o->data,
									  (long long)n, p1,
									  p2 - p1);
		CUDA_CHECK(cudaGetLastError(), "uniform: scaling kernel launch");
		return 0;
	}
	const char *call = o->dtype == GPUD_F32 ? "curandGenerateNormal"
						: "curandGenerateNormalDouble";
	if (n % 2 == 0) {
		RND_CHECK(gen_normal(cr, g, o->dtype, o->data, n, p1, p2), call);
		return 0;
	}
	/* odd n: n + 1 into scratch, the first n into out */
	void *tmp = nullptr;
	CUDA_CHECK(cudaMallocAsync(&tmp, (n + 1) * es, s), "normal: cudaMallocAsync (odd n)");
	int st = gen_normal(cr, g, o->dtype, tmp, n + 1, p1, p2);
	cudaError_t e = cudaSuccess;
	if (st == LIBS_CURAND_SUCCESS)
		e = cudaMemcpyAsync(o->data, tmp, n * es, cudaMemcpyDeviceToDevice, s);
	cudaFreeAsync(tmp, s);
	RND_CHECK(st, call);
	CUDA_CHECK(e, "normal: cudaMemcpyAsync (odd n)");
	return 0;
}

} // namespace

extern "C" const cuda_kernel cuda_kernel_uniform = {
	"uniform", rnd_launch, nullptr, 1, CUDA_NEEDS_RNG, 0, nullptr, nullptr,
};
extern "C" const cuda_kernel cuda_kernel_normal = {
	"normal", rnd_launch, nullptr, 1, CUDA_NEEDS_RNG, 0, nullptr, nullptr,
};
