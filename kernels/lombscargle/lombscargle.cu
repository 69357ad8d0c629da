/*
 * kernels/lombscargle/lombscargle.cu — lombscargle on the GPU, one variant per
 * dtype. The float32 variant computes in float throughout (sincosf, float
 * sums): no silent promotion to double. The float64 variant is the same
 * code in double.
 *
 * Layout: one thread per frequency over a grid-stride loop; each block
 * stages x and y (shifted by the mean when precenter is set) through shared
 * memory in tiles of the block size, so every sample is read from global
 * memory once per block per pass. mean(y) and dot(y, y) are reduced by each
 * block itself: y is short next to the frequency work, and this saves a
 * second launch and a scratch buffer. The grid is the device's SM count
 * times the resident blocks per SM from the occupancy calculator.
 */
#include <cuda_runtime.h>
#include <stdio.h>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/lombscargle/lombscargle.h"

namespace {

constexpr int LS_BLOCK = 256;

__device__ __forceinline__ void sincos_t(float a, float *s, float *c)
{
	sincosf(a, s, c);
}
__device__ __forceinline__ void sincos_t(double a, double *s, double *c)
{
	sincos(a, s, c);
}
__device__ __forceinline__ float atan2_t(float y, float x)
{
	return atan2f(y, x);
}
__device__ __forceinline__ double atan2_t(double y, double x)
{
	return atan2(y, x);
}

/* Sum of v over the block; every thread gets the result. */
template <typename T> __device__ T block_sum(T v, T *scratch)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	__syncthreads();
	if (lane == 0)
		scratch[warp] = v;
	__syncthreads();
	T total = 0;
	for (int w = 0; w < (int)(blockDim.x >> 5); w++)
		total += scratch[w];
	return total;
}

template <typename T> __global__ void __launch_bounds__(LS_BLOCK)
	lombscargle_kernel(const T *__restrict__ x, const T *__restrict__ y,
			   const T *__restrict__ freqs, T *__restrict__ pgram, int nx, long long nf,
			   int precenter, int normalize)
{
	__shared__ T sx[LS_BLOCK], sy[LS_BLOCK], scratch[LS_BLOCK / 32];
	T shift = 0, scale = 1;

	if (precenter || normalize) {
		T sum = 0, sq = 0;
		for (int j = threadIdx.x; j < nx; j += blockDim.x) {
			T v = y[j];
			sum += v;
			sq += v * v;
		}
		sum = block_sum(sum, scratch);
		sq = block_sum(sq, scratch);
		if (precenter)
			shift = sum / (T)nx;
		if (normalize)
			scale = (T)2 / sq;
	}

	const long long stride = (long long)gridDim.x * blockDim.x;
	for (long long base = (long long)blockIdx.x * blockDim.x; base < nf; base += stride) {
		const long long i = base + threadIdx.x;
		const T f = i < nf ? freqs[i] : (T)1;
		T xc = 0, xs = 0, cc = 0, ss = 0, cs = 0;
		for (int t0 = 0; t0 < nx; t0 += LS_BLOCK) {
			__syncthreads();
			if (t0 + (int)threadIdx.x < nx) {
				sx[threadIdx.x] = x[t0 + threadIdx.x];
				sy[threadIdx.x] = y[t0 + threadIdx.x] - shift;
			}
			__syncthreads();
			const int m = min(LS_BLOCK, nx - t0);
			for (int j = 0; j < m; j++) {
				T s, c;
				sincos_t(f * sx[j], &s, &c);
				const T yj = sy[j];
				xc += yj * c;
				xs += yj * s;
				cc += c * c;
				ss += s * s;
				cs += c * s;
			}
		}
		if (i < nf) {
			/* scipy: tau = atan2(2cs, cc - ss) / (2f), then cos(f tau), sin(f tau). */
			T tau = atan2_t(2 * cs, cc - ss) / (2 * f);
			T s_tau, c_tau;
			sincos_t(f * tau, &s_tau, &c_tau);
			T c2 = c_tau * c_tau, s2 = s_tau * s_tau, cst = 2 * c_tau * s_tau;
			T n1 = c_tau * xc + s_tau * xs, n2 = c_tau * xs - s_tau * xc;
			T p = (T)0.5 * ((n1 * n1) / (c2 * cc + cst * cs + s2 * ss) +
					(n2 * n2) / (c2 * ss - cst * cs + s2 * cc));
			pgram[i] = p * scale;
		}
	}
}

template <typename T>
int grid_for(const cuda_launch_ctx *ctx, long long nf, char *err, size_t errlen)
{
	static int per_sm[2] = {0, 0};
	int &occ = per_sm[sizeof(T) == 8];
	if (occ == 0)
		CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ,
									 lombscargle_kernel<T>,
									 LS_BLOCK, 0),
			   "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
	long long need = (nf + LS_BLOCK - 1) / LS_BLOCK;
	long long full = (long long)ctx->sm_count * (occ > 0 ? occ : 1);
	return (int)(need < full ? (need > 0 ? need : 1) : full);
}

template <typename T> int launch_t(const T *x, const T *y, const T *f, T *out, int nx, long long nf,
				   int precenter, int normalize, const cuda_launch_ctx *ctx,
				   char *err, size_t errlen)
{
	int grid = grid_for<T>(ctx, nf, err, errlen);
	if (grid < 0)
		return -1;
	if (nf == 0)
		return 0;
	lombscargle_kernel<T><<<grid, LS_BLOCK, 0, (cudaStream_t)ctx->stream>>>(x, y, f, out, nx,
										nf, precenter,
										normalize);
	CUDA_CHECK(cudaGetLastError(),
		   sizeof(T) == 4 ? "lombscargle<float32> launch" : "lombscargle<float64> launch");
	return 0;
}

int ls_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	const kernel_array *x = &a->v[LS_X].arr, *y = &a->v[LS_Y].arr, *f = &a->v[LS_FREQS].arr;
	const kernel_array *o = &a->v[LS_PGRAM].arr;
	if (x->count > 0x7fffffff) {
		snprintf(err, errlen,
			 "lombscargle: x has %zu points; the cuda kernel takes at most 2^31-1",
			 x->count);
		return -1;
	}
	int pc = a->v[LS_PRECENTER].s.b, nm = a->v[LS_NORMALIZE].s.b;
	if (a->dtype == GPUD_F32)
		return launch_t<float>((const float *)x->data, (const float *)y->data,
				       (const float *)f->data, (float *)o->data, (int)x->count,
				       (long long)f->count, pc, nm, ctx, err, errlen);
	return launch_t<double>((const double *)x->data, (const double *)y->data,
				(const double *)f->data, (double *)o->data, (int)x->count,
				(long long)f->count, pc, nm, ctx, err, errlen);
}

template <typename T>
int attr_t(cuda_variant_attr *out, const char *variant, char *err, size_t errlen)
{
	cudaFuncAttributes fa;
	CUDA_CHECK(cudaFuncGetAttributes(&fa, lombscargle_kernel<T>), "cudaFuncGetAttributes");
	out->kernel = "lombscargle";
	out->variant = variant;
	out->registers = fa.numRegs;
	out->shared_bytes = fa.sharedSizeBytes;
	out->dynamic_shared = 0;
	out->local_bytes = fa.localSizeBytes;
	out->max_threads = fa.maxThreadsPerBlock;
	out->block = LS_BLOCK;
	out->ptx_version = fa.ptxVersion;
	out->binary_version = fa.binaryVersion;
	return 0;
}

int ls_attributes(cuda_variant_attr *out, int max, char *err, size_t errlen)
{
	if (max < 2)
		return 0;
	if (attr_t<float>(&out[0], "float32", err, errlen) ||
	    attr_t<double>(&out[1], "float64", err, errlen))
		return -1;
	return 2;
}

} // namespace

extern "C" const cuda_kernel cuda_kernel_lombscargle = {
	"lombscargle", ls_launch, ls_attributes, 0, 0, 0, nullptr, nullptr,
};
