/*
 * kernels/histogram/histogram.cu — histogram on the GPU (kernels/histogram/histogram.h).
 *
 * Every path bins a sample the same way: its exact numpy bin (-1 for a
 * dropped sample) from the same estimate and the same two corrections as the
 * CPU reference, against the same rounded edges (a table in device memory,
 * filled by a small kernel with the reference's float64 arithmetic: the _rn
 * intrinsics keep nvcc from fusing a multiply and an add into an fma). An
 * estimate whose fraction is farther from 0 and 1 than hist_plan.margin (the
 * rounding errors of estimate and edges, bounded in kernels/histogram/histogram.c and
 * checked there by kernels/histogram/test_histogram.c) is the bin already: the two edge
 * reads are skipped, as the corrections could not move it. The paths differ
 * in how they count:
 *
 *  - while the edges and the counters fit in 48 KiB of shared memory (6143
 *    bins with float32 edges, 4095 with float64), smem_kernel: the edges
 *    copied into shared memory and per-block counters there, added into the
 *    output at the end (below 64 bins, the lanes of a warp that hit one
 *    counter add once, __match_any_sync).
 *    CUB's DeviceHistogram over the same per-sample bins (the next path)
 *    reached 30% of the device-to-device copy bandwidth at 100 and 256 bins
 *    and 7% at 1000 bins on an H200 (bench/kernels, 2^28 float32): it reads
 *    a fancy iterator 16 samples per thread without vector loads, and above
 *    256 bins privatizes its counters in global memory.
 *  - more bins, while CUB's per-block counters fit HIST_CUB_SCRATCH_MAX:
 *    a thrust transform iterator gives CUB each sample's bin as a float and
 *    cub::DispatchHistogram::DispatchEven (what
 *    DeviceHistogram::HistogramEven calls) counts them over the levels
 *    [0, bins]: its scale is bins / bins = 1 exactly, so the index is the
 *    bin. It runs with a policy of our own: CUB loads a fancy iterator with
 *    BLOCK_LOAD_DIRECT (each thread 16 consecutive samples: uncoalesced),
 *    where BLOCK_LOAD_STRIPED reads whole lines per warp. CUB counts in
 *    unsigned int per call over at most 2^30 samples; a small kernel adds
 *    each chunk's counts into the int64 output.
 *  - beyond (or above 2^24 bins, where float indices stop being exact),
 *    direct_kernel adds each sample's bin into the output with 64-bit
 *    atomics.
 *
 * Scratch comes from cudaMallocAsync on the session's stream and goes back
 * with cudaFreeAsync: nothing here waits for the device.
 */
#include <cub/device/device_histogram.cuh>
#include <cuda/std/array>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <type_traits>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/histogram/histogram.h"

namespace {

constexpr long long HIST_CHUNK = 1ll << 30;         /* samples per CUB call */
constexpr size_t HIST_CUB_SCRATCH_MAX = 128u << 20; /* bytes of CUB's privatized counters */
constexpr long long HIST_CUB_MAX_BINS = 1ll << 24;  /* float bin indices are exact */
constexpr int HIST_BLOCK = 256;
constexpr size_t HIST_SMEM_BYTES = 48u << 10; /* edges + counters in shared memory */
constexpr long long HIST_AGG_BINS = 64;       /* below: increments aggregated per warp */

/* How a histogram is counted: chosen by size, or forced (the self-test). */
enum hist_path { PATH_AUTO, PATH_SMEM, PATH_CUB, PATH_DIRECT };

/* Coalesced loads of the transform iterator; otherwise CUB's SM50 policy. */
struct hist_policy_hub {
	struct Policy500 : cub::ChainedPolicy<500, Policy500, Policy500> {
		using AgentHistogramPolicyT =
			cub::AgentHistogramPolicy<384, 16, cub::BLOCK_LOAD_STRIPED,
						  cub::LOAD_DEFAULT, true, cub::SMEM, false>;
	};
	using MaxPolicy = Policy500;
};

/* --- numpy's bin of one sample: kernels/histogram/histogram.c, in device arithmetic ---------- */

__device__ __forceinline__ double to_f64(float v)
{
	return (double)v;
}
__device__ __forceinline__ double to_f64(double v)
{
	return v;
}
__device__ __forceinline__ double to_f64(int32_t v)
{
	return (double)v; /* exact */
}
__device__ __forceinline__ double to_f64(int64_t v)
{
	return __ll2double_rn((long long)v); /* as numpy's int64 -> float64 */
}

__device__ __forceinline__ float to_edge(double y, float *)
{
	return __double2float_rn(y);
}
__device__ __forceinline__ double to_edge(double y, double *)
{
	return y;
}

/*
 * The estimate, clamped where numpy would fail (est_index in histogram.c).
 * Indices are int: bins <= HIST_MAX_BINS = 2^30.
 */
__device__ __forceinline__ int est_index(double f, const hist_plan &p)
{
	if (!(f >= 0.0))
		return 0;
	if (f >= (double)p.bins)
		return (int)p.bins - 1;
	return (int)f;
}

/*
 * The same for a float32 estimate without leaving float32: bins_up32 is the
 * smallest float >= bins, so f >= bins_up32 exactly when f >= bins.
 */
__device__ __forceinline__ int est_index(float f, const hist_plan &p)
{
	if (!(f >= 0.0f))
		return 0;
	if (f >= p.bins_up32)
		return (int)p.bins - 1;
	return (int)f;
}

/* numpy's two corrections against the rounded edges. */
template <typename E> __device__ __forceinline__ int corrected(int i, E v, const E *edges, int bins)
{
	if (v < edges[i])
		i--;
	else if (i != bins - 1 && v >= edges[i + 1])
		i++;
	return i < 0 ? 0 : i;
}

/* float32 samples, float32 bins. */
__device__ __forceinline__ int sample_bin(float v, const float *edges, const hist_plan &p)
{
	if (!(v >= p.first32 && v <= p.last32))
		return -1;
	float sub = __fsub_rn(v, p.first32);
	if (p.norm_f32) {
		float f = __fmul_rn(sub, p.norm32);
		if (f >= 0.0f && f < p.bins_up32) { /* hist_plan.margin: no correction */
			int i = (int)f;
			float fr = __fsub_rn(f, (float)i); /* exact */
			if (fr > p.frac_lo32 && fr < p.frac_hi32)
				return i;
		}
		return corrected(est_index(f, p), v, edges, (int)p.bins);
	}
	return corrected(est_index(__dmul_rn((double)sub, p.norm), p), v, edges, (int)p.bins);
}

/* float64 bins: float64 and integer samples, and float32 ones beyond ±3.4e38 ranges. */
template <typename T>
__device__ __forceinline__ int sample_bin(T v, const double *edges, const hist_plan &p)
{
	double d = to_f64(v);
	bool keep;
	if constexpr (std::is_same<T, float>::value)
		keep = (p.lo_f32 ? v >= p.first32 : d >= p.first) &&
		       (p.hi_f32 ? v <= p.last32 : d <= p.last);
	else
		keep = d >= p.first && d <= p.last;
	if (!keep)
		return -1;
	double f = __dmul_rn(__dsub_rn(d, p.first), p.norm);
	if (f >= 0.0 && f < (double)p.bins) { /* hist_plan.margin: no correction */
		int i = (int)f;
		double fr = f - (double)i; /* exact */
		if (fr > p.margin && fr < 1.0 - p.margin)
			return i;
	}
	return corrected(est_index(f, p), d, edges, (int)p.bins);
}

/* What CUB reads: sample i's bin as a float (exact below 2^24), -1 if dropped. */
template <typename T, typename E> struct bin_of {
	const T *x;
	const E *edges;
	hist_plan p;
	__device__ float operator()(long long i) const
	{
		return (float)sample_bin(x[i], edges, p);
	}
};

/* numpy's linspace (hist_edge in histogram.c), rounded to the bin type. */
template <typename E> __global__ void __launch_bounds__(HIST_BLOCK)
	edges_kernel(hist_plan p, E *edges)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i <= p.bins;
	     i += (long long)gridDim.x * blockDim.x) {
		double y = p.last;
		if (i < p.bins) {
			y = p.step_zero ? __dmul_rn(__ddiv_rn((double)i, (double)p.bins), p.delta)
					: __dmul_rn((double)i, p.step);
			y = __dadd_rn(y, p.first);
		}
		edges[i] = to_edge(y, (E *)nullptr);
	}
}

/* out (int64) = (first chunk ? 0 : out) + this chunk's counts. */
__global__ void __launch_bounds__(HIST_BLOCK)
	add_counts(const unsigned *c, long long *out, long long bins, int first)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < bins;
	     i += (long long)gridDim.x * blockDim.x)
		out[i] = (first ? 0 : out[i]) + (long long)c[i];
}

/* Many bins: each sample's bin straight into the (zeroed) output. */
template <typename T, typename E> __global__ void __launch_bounds__(HIST_BLOCK)
	direct_kernel(const T *__restrict__ x, long long n, const E *edges, hist_plan p,
		      unsigned long long *counts)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x) {
		int b = sample_bin(x[i], edges, p);
		if (b >= 0)
			atomicAdd(counts + b, 1ull);
	}
}

/*
 * While the edges and one counter per bin fit in HIST_SMEM_BYTES of shared
 * memory: each block copies the edges into shared memory (a sample's two
 * edge reads are then shared-memory gathers, not L1 line fetches) and counts
 * its samples in shared counters (32-bit: a block sees at most n / blocks
 * samples), then adds them into the (zeroed) int64 output. Samples are read
 * 16 bytes at a time, four loads in flight per thread. With few bins most
 * lanes of a warp hit the same counter: AGG makes one lane add for its peers.
 */
/* 16 bytes of T, loaded at once */
template <typename T> struct vec16;
template <> struct vec16<float> {
	using type = float4;
	static constexpr int N = 4;
};
template <> struct vec16<double> {
	using type = double2;
	static constexpr int N = 2;
};
template <> struct vec16<int32_t> {
	using type = int4;
	static constexpr int N = 4;
};
template <> struct vec16<int64_t> {
	using type = longlong2;
	static constexpr int N = 2;
};

template <bool AGG> __device__ __forceinline__ void count_one(unsigned *h, int b)
{
	if (AGG) {
		unsigned peers = __match_any_sync(__activemask(), b);
		if (b >= 0 && (int)(threadIdx.x & 31) == __ffs(peers) - 1)
			atomicAdd(h + b, (unsigned)__popc(peers));
	} else if (b >= 0) {
		atomicAdd(h + b, 1u);
	}
}

template <typename T, typename E, bool AGG> __global__ void __launch_bounds__(HIST_BLOCK)
	smem_kernel(const T *__restrict__ x, long long n, const E *edges, hist_plan p,
		    unsigned long long *counts)
{
	extern __shared__ unsigned long long smem[]; /* 8-byte aligned */
	const int bins = (int)p.bins;
	E *se = (E *)smem;
	unsigned *h = (unsigned *)(se + bins + 1);
	for (int b = threadIdx.x; b <= bins; b += blockDim.x)
		se[b] = edges[b];
	for (int b = threadIdx.x; b < bins; b += blockDim.x)
		h[b] = 0;
	__syncthreads();
	edges = se;
	const long long stride = (long long)gridDim.x * blockDim.x;
	const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long done = 0; /* samples counted by the vector loop */
	if (((uintptr_t)x & 15) == 0) {
		/* 16-byte loads, four in flight per thread */
		using V = typename vec16<T>::type;
		constexpr int N = vec16<T>::N;
		const V *xv = (const V *)x;
		const long long nv = n / N;
		long long j = tid;
		for (; j + 3 * stride < nv; j += 4 * stride) {
			union {
				V v[4];
				T a[4 * N];
			} u;
#pragma unroll
			for (int k = 0; k < 4; k++)
				u.v[k] = xv[j + k * stride];
#pragma unroll
			for (int k = 0; k < 4 * N; k++)
				count_one<AGG>(h, sample_bin(u.a[k], edges, p));
		}
		for (; j < nv; j += stride) {
			union {
				V v;
				T a[N];
			} u;
			u.v = xv[j];
#pragma unroll
			for (int k = 0; k < N; k++)
				count_one<AGG>(h, sample_bin(u.a[k], edges, p));
		}
		done = nv * N;
	}
	for (long long i = done + tid; i < n; i += stride)
		count_one<AGG>(h, sample_bin(x[i], edges, p));
	__syncthreads();
	for (int b = threadIdx.x; b < bins; b += blockDim.x)
		if (h[b] != 0)
			atomicAdd(counts + b, (unsigned long long)h[b]);
}

int grid_for(long long n, const cuda_launch_ctx *ctx)
{
	long long g = (n + HIST_BLOCK - 1) / HIST_BLOCK, cap = (long long)ctx->sm_count * 8;
	if (cap < 1)
		cap = 1;
	return (int)(g < 1 ? 1 : g > cap ? cap : g);
}

size_t align256(size_t v)
{
	return (v + 255) & ~(size_t)255;
}

template <typename T, typename E>
using hist_iter = thrust::transform_iterator<bin_of<T, E>, thrust::counting_iterator<long long>>;
template <typename T, typename E> using hist_dispatch =
	cub::DispatchHistogram<1, 1, hist_iter<T, E>, unsigned int, float, int, hist_policy_hub>;

template <typename T, typename E> cudaError_t cub_even(void *tmp, size_t &bytes, hist_iter<T, E> it,
						       unsigned *counts, long long bins, int n,
						       cudaStream_t s)
{
	return hist_dispatch<T, E>::DispatchEven(tmp, bytes, it,
						 ::cuda::std::array<unsigned *, 1>{counts},
						 ::cuda::std::array<int, 1>{(int)bins + 1},
						 ::cuda::std::array<float, 1>{0.0f},
						 ::cuda::std::array<float, 1>{(float)bins}, n, 1, n,
						 s, ::cuda::std::false_type{});
}

/* path: PATH_AUTO, or the one the self-test forces; 1 (why in err) where that cannot count these. */
template <typename T, typename E> int hist_launch_t(const kernel_args *a, const hist_plan &p,
						    const cuda_launch_ctx *ctx, hist_path path,
						    char *err, size_t errlen)
{
	cudaStream_t s = (cudaStream_t)ctx->stream;
	const T *x = (const T *)a->v[HIST_X].arr.data;
	long long n = (long long)a->v[HIST_X].arr.count, bins = p.bins;
	long long *out = (long long *)a->v[HIST_COUNTS].arr.data;
	cudaError_t e;

	if (n == 0) {
		CUDA_CHECK(cudaMemsetAsync(out, 0, (size_t)bins * sizeof(long long), s),
			   "cudaMemsetAsync");
		return 0;
	}
	/* CUB's scratch for the largest chunk (smaller ones need no more). */
	int chunk0 = (int)(n < HIST_CHUNK ? n : HIST_CHUNK);
	size_t cub_bytes = 0;
	size_t smem = (size_t)(bins + 1) * sizeof(E) + (size_t)bins * sizeof(unsigned);
	if (path == PATH_AUTO && smem <= HIST_SMEM_BYTES)
		path = PATH_SMEM;
	if (path == PATH_SMEM && smem > HIST_SMEM_BYTES) {
		snprintf(err, errlen, "histogram: %lld bins do not fit in shared memory", bins);
		return 1;
	}
	int use_cub = (path == PATH_AUTO || path == PATH_CUB) && bins <= HIST_CUB_MAX_BINS;
	if (use_cub) {
		hist_iter<T, E> it(thrust::counting_iterator<long long>(0),
				   bin_of<T, E>{x, nullptr, p});
		CUDA_CHECK((cub_even<T, E>(nullptr, cub_bytes, it, nullptr, bins, chunk0, s)),
			   "cub::DeviceHistogram (size)");
		use_cub = cub_bytes <= HIST_CUB_SCRATCH_MAX;
	}
	if (path == PATH_CUB && !use_cub) {
		snprintf(err, errlen, "histogram: %lld bins are beyond CUB's counters", bins);
		return 1;
	}
	size_t edges_bytes = align256((size_t)(bins + 1) * sizeof(E));
	size_t counts_bytes = use_cub ? align256((size_t)bins * sizeof(unsigned)) : 0;
	size_t total = edges_bytes + counts_bytes + (use_cub ? cub_bytes : 0);
	char *scratch = nullptr;
	CUDA_CHECK(cudaMallocAsync((void **)&scratch, total, s),
		   "cudaMallocAsync (histogram scratch)");
	E *edges = (E *)scratch;
	unsigned *counts = (unsigned *)(scratch + edges_bytes);
	void *tmp = scratch + edges_bytes + counts_bytes;
	const char *what = "histogram edges kernel";

	edges_kernel<E><<<grid_for(bins + 1, ctx), HIST_BLOCK, 0, s>>>(p, edges);
	e = cudaGetLastError();
	if (e == cudaSuccess && !use_cub) {
		what = "cudaMemsetAsync";
		e = cudaMemsetAsync(out, 0, (size_t)bins * sizeof(long long), s);
		if (e == cudaSuccess) {
			what = "histogram kernel";
			unsigned long long *o = (unsigned long long *)out;
			if (path == PATH_SMEM && bins < HIST_AGG_BINS)
				smem_kernel<T, E, true>
					<<<grid_for(n, ctx), HIST_BLOCK, smem, s>>>(x, n, edges, p,
										    o);
			else if (path == PATH_SMEM)
				smem_kernel<T, E, false>
					<<<grid_for(n, ctx), HIST_BLOCK, smem, s>>>(x, n, edges, p,
										    o);
			else
				direct_kernel<T, E>
					<<<grid_for(n, ctx), HIST_BLOCK, 0, s>>>(x, n, edges, p, o);
			e = cudaGetLastError();
		}
	}
	for (long long off = 0; e == cudaSuccess && use_cub && off < n; off += HIST_CHUNK) {
		int len = (int)(n - off < HIST_CHUNK ? n - off : HIST_CHUNK);
		size_t bytes = cub_bytes;
		hist_iter<T, E> it(thrust::counting_iterator<long long>(off),
				   bin_of<T, E>{x, edges, p});
		what = "cub::DeviceHistogram";
		e = cub_even<T, E>(tmp, bytes, it, counts, bins, len, s);
		if (e == cudaSuccess) {
			what = "histogram count kernel";
			add_counts<<<grid_for(bins, ctx), HIST_BLOCK, 0, s>>>(counts, out, bins,
									      off == 0);
			e = cudaGetLastError();
		}
	}
	cudaFreeAsync(scratch, s);
	if (e != cudaSuccess)
		return cuda_fail(e, what, err, errlen);
	return 0;
}

int hist_launch_mode(const kernel_args *a, const cuda_launch_ctx *ctx, hist_path path, char *err,
		     size_t errlen)
{
	const kernel_array *x = &a->v[HIST_X].arr;
	hist_plan p;
	if (hist_plan_make(x->dtype, a->v[HIST_BINS].s.i64, a->v[HIST_MIN].s.f64,
			   a->v[HIST_MAX].s.f64, &p, err, errlen) != 0)
		return -1;
	switch (x->dtype) {
	case GPUD_F32:
		if (p.f32_edges)
			return hist_launch_t<float, float>(a, p, ctx, path, err, errlen);
		return hist_launch_t<float, double>(a, p, ctx, path, err, errlen);
	case GPUD_F64:
		return hist_launch_t<double, double>(a, p, ctx, path, err, errlen);
	case GPUD_I32:
		return hist_launch_t<int32_t, double>(a, p, ctx, path, err, errlen);
	case GPUD_I64:
		return hist_launch_t<int64_t, double>(a, p, ctx, path, err, errlen);
	default:
		snprintf(err, errlen, "histogram: no variant for %s", gpud_dtype_name(x->dtype));
		return -1;
	}
}

int hist_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	return hist_launch_mode(a, ctx, PATH_AUTO, err, errlen);
}

/* The paths the self-test forces: path i is hist_path PATH_SMEM + i. */
constexpr int HIST_NPATHS = PATH_DIRECT - PATH_SMEM + 1;
const char *const hist_path_names[HIST_NPATHS] = {"shared counters", "CUB", "atomics"};

int hist_launch_path(const kernel_args *a, const cuda_launch_ctx *ctx, int path, char *err,
		     size_t errlen)
{
	if (path < 0 || path >= HIST_NPATHS) {
		snprintf(err, errlen, "histogram: no path %d", path);
		return -1;
	}
	return hist_launch_mode(a, ctx, (hist_path)(PATH_SMEM + path), err, errlen);
}

} // namespace

extern "C" const cuda_kernel cuda_kernel_histogram = {
	"histogram", hist_launch, nullptr, 0, 0, HIST_NPATHS, hist_path_names, hist_launch_path,
};
