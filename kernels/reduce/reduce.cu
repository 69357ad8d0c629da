/*
 * kernels/reduce/reduce.cu — the library's reductions on the GPU with CUB's
 * DeviceReduce (kernels/reduce/reduce.h). Floating-point sums (sum, asum, mean,
 * dot) reduce a converting iterator into a float64 accumulator and a
 * one-thread kernel rounds it into the 0-d output (and divides, for mean);
 * integer sums reduce in uint64 (wrapping); min and max reduce the input
 * type with a NaN-propagating operator. CUB's scratch comes from
 * cudaMallocAsync on the session's stream and goes back with cudaFreeAsync:
 * nothing here waits for the device.
 */
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/reduce/reduce.h"

namespace {

template <typename T> struct as_double {
	const T *x;
	__host__ __device__ double operator()(long long i) const
	{
		return (double)x[i];
	}
};
template <typename T> struct abs_double {
	const T *x;
	__host__ __device__ double operator()(long long i) const
	{
		return fabs((double)x[i]);
	}
};
template <typename T> struct prod_double {
	const T *x, *y;
	__host__ __device__ double operator()(long long i) const
	{
		return (double)x[i] * (double)y[i];
	}
};
template <typename T> struct as_u64 {
	const T *x;
	__host__ __device__ unsigned long long operator()(long long i) const
	{
		return (unsigned long long)(long long)x[i];
	}
};
struct plus_d {
	__host__ __device__ double operator()(double a, double b) const
	{
		return a + b;
	}
};
struct plus_u64 {
	__host__ __device__ unsigned long long operator()(unsigned long long a,
							  unsigned long long b) const
	{
		return a + b;
	}
};
template <typename T> struct nan_min {
	__host__ __device__ T operator()(T a, T b) const
	{
		if (a != a)
			return a;
		if (b != b)
			return b;
		return b < a ? b : a;
	}
};
template <typename T> struct nan_max {
	__host__ __device__ T operator()(T a, T b) const
	{
		if (a != a)
			return a;
		if (b != b)
			return b;
		return b > a ? b : a;
	}
};

template <typename T> __global__ void finish(const double *acc, T *out, double div)
{
	*out = (T)(*acc / div);
}
__global__ void finish_i64(const unsigned long long *acc, long long *out)
{
	*out = (long long)*acc;
}

/* Runs one DeviceReduce::Reduce of it[0, n) with op and init into result
 * (device memory), with CUB's scratch stream-ordered. */
template <typename It, typename Out, typename Op, typename Init>
int reduce(It it, Out *result, long long n, Op op, Init init, cudaStream_t s, char *err,
	   size_t errlen)
{
	size_t bytes = 0;
	void *tmp = nullptr;
	CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, it, result, n, op, init, s),
		   "cub::DeviceReduce (size)");
	CUDA_CHECK(cudaMallocAsync(&tmp, bytes ? bytes : 1, s), "cudaMallocAsync (CUB scratch)");
	cudaError_t e = cub::DeviceReduce::Reduce(tmp, bytes, it, result, n, op, init, s);
	cudaFreeAsync(tmp, s);
	CUDA_CHECK(e, "cub::DeviceReduce");
	return 0;
}

/* A float64 accumulator in stream-ordered scratch, reduced, then rounded into out. */
template <typename T, typename F>
int fsum(F f, long long n, T *out, double div, cudaStream_t s, char *err, size_t errlen)
{
	double *acc = nullptr;
	CUDA_CHECK(cudaMallocAsync((void **)&acc, sizeof(double), s), "cudaMallocAsync");
	auto it = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), f);
	int rv = reduce(it, acc, n, plus_d(), 0.0, s, err, errlen);
	if (rv == 0) {
		finish<T><<<1, 1, 0, s>>>(acc, out, div);
		cudaError_t e = cudaGetLastError();
		if (e != cudaSuccess)
			rv = cuda_fail(e, "kernel launch", err, errlen);
	}
	cudaFreeAsync(acc, s);
	return rv;
}

template <typename T>
int red_float(int op, const kernel_args *a, long long n, cudaStream_t s, char *err, size_t errlen)
{
	const T *x = (const T *)a->v[RED_X].arr.data;
	T *out = (T *)a->v[red_out(a->kernel)].arr.data;
	switch (op) {
	case RED_SUM:
		return fsum(as_double<T>{x}, n, out, 1.0, s, err, errlen);
	case RED_MEAN:
		return fsum(as_double<T>{x}, n, out, (double)n, s, err, errlen);
	case RED_ASUM:
		return fsum(abs_double<T>{x}, n, out, 1.0, s, err, errlen);
	case RED_DOT:
		return fsum(prod_double<T>{x, (const T *)a->v[1].arr.data}, n, out, 1.0, s, err,
			    errlen);
	case RED_MIN:
		return reduce(x, out, n, nan_min<T>(), (T)INFINITY, s, err, errlen);
	default:
		return reduce(x, out, n, nan_max<T>(), (T)-INFINITY, s, err, errlen);
	}
}

template <typename T>
int red_int(int op, const kernel_args *a, long long n, cudaStream_t s, char *err, size_t errlen)
{
	const T *x = (const T *)a->v[RED_X].arr.data;
	void *out = a->v[red_out(a->kernel)].arr.data;
	if (op == RED_SUM) {
		unsigned long long *acc = nullptr;
		CUDA_CHECK(cudaMallocAsync((void **)&acc, sizeof(*acc), s), "cudaMallocAsync");
		auto it = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
							  as_u64<T>{x});
		int rv = reduce(it, acc, n, plus_u64(), 0ull, s, err, errlen);
		if (rv == 0) {
			finish_i64<<<1, 1, 0, s>>>(acc, (long long *)out);
			cudaError_t e = cudaGetLastError();
			if (e != cudaSuccess)
				rv = cuda_fail(e, "kernel launch", err, errlen);
		}
		cudaFreeAsync(acc, s);
		return rv;
	}
	T init = op == RED_MIN ? (sizeof(T) == 4 ? (T)INT32_MAX : (T)INT64_MAX)
			       : (sizeof(T) == 4 ? (T)INT32_MIN : (T)INT64_MIN);
	if (op == RED_MIN)
		return reduce(x, (T *)out, n, nan_min<T>(), init, s, err, errlen);
	return reduce(x, (T *)out, n, nan_max<T>(), init, s, err, errlen);
}

int red_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	int op = red_op_of(a->kernel);
	long long n = (long long)a->v[RED_X].arr.count;
	cudaStream_t s = (cudaStream_t)ctx->stream;
	switch (a->v[RED_X].arr.dtype) {
	case GPUD_F32:
		return red_float<float>(op, a, n, s, err, errlen);
	case GPUD_F64:
		return red_float<double>(op, a, n, s, err, errlen);
	case GPUD_I32:
		return red_int<int32_t>(op, a, n, s, err, errlen);
	case GPUD_I64:
		return red_int<int64_t>(op, a, n, s, err, errlen);
	default:
		snprintf(err, errlen, "%s: no variant for this dtype", a->kernel->name);
		return -1;
	}
}

} // namespace

#define RED_CUDA(nm)                                                                               \
	extern "C" const cuda_kernel cuda_kernel_##nm = {                                          \
		#nm, red_launch, nullptr, 0, 0, 0, nullptr, nullptr,                               \
	}

RED_CUDA(sum);
RED_CUDA(asum);
RED_CUDA(min);
RED_CUDA(max);
RED_CUDA(mean);
RED_CUDA(dot);
