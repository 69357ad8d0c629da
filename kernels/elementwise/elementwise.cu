/*
 * kernels/elementwise/elementwise.cu — the library's elementwise kernels on the GPU
 * (kernels/elementwise/elementwise.h): one template over the operation and the dtype,
 * a grid-stride loop with vector-free loads (each element read once, written
 * once: bandwidth-bound), each input an array or a broadcast scalar.
 * float32 computes in float32 (expf/sinf/cosf); float64 in double.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/elementwise/elementwise.h"

namespace {

constexpr int EW_BLOCK = 256;
constexpr int EW_BLOCKS_PER_SM = 8;

template <typename T, int OP> struct op_t {
	static __device__ __forceinline__ T f(T x, T y, T a)
	{
		if (OP == EW_ADD)
			return x + y;
		if (OP == EW_SUB)
			return x - y;
		if (OP == EW_MUL)
			return x * y;
		if (OP == EW_DIV)
			return x / y;
		if (OP == EW_AXPY)
			return a * x + y;
		if (OP == EW_REL_DIFF)
			return T(2) * (x - y) / (x + y);
		return x * x + y * y; /* EW_SUM_OF_SQUARES */
	}
};
template <int OP> struct trig_t {
	static __device__ __forceinline__ float f(float x, float y, float a)
	{
		return expf(a * sinf(x) + cosf(y));
	}
	static __device__ __forceinline__ double f(double x, double y, double a)
	{
		return exp(a * sin(x) + cos(y));
	}
};

/* No __restrict__: z may be x or y (the kernels declare z in place of both,
 * kernels/core/alias.c); each element is read by the thread that writes it. */
template <typename T, int OP> __global__ void __launch_bounds__(EW_BLOCK)
	ew_kernel(long long n, const T *x, T xs, const T *y, T ys, T a, T *z)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x) {
		T xv = x ? x[i] : xs, yv = y ? y[i] : ys;
		if (OP == EW_SAXPY_TRIG)
			z[i] = trig_t<OP>::f(xv, yv, a);
		else
			z[i] = op_t<T, OP>::f(xv, yv, a);
	}
}

/* Integers wrap as numpy's do: unsigned arithmetic, reinterpreted. */
template <typename T> struct uint_of;
template <> struct uint_of<int32_t> {
	typedef uint32_t type;
};
template <> struct uint_of<int64_t> {
	typedef uint64_t type;
};

template <typename T, int OP> __global__ void __launch_bounds__(EW_BLOCK)
	ew_int_kernel(long long n, const T *x, T xs, const T *y, T ys, T *z)
{
	typedef typename uint_of<T>::type U;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x) {
		U xv = (U)(x ? x[i] : xs), yv = (U)(y ? y[i] : ys), r;
		if (OP == EW_ADD)
			r = xv + yv;
		else if (OP == EW_SUB)
			r = xv - yv;
		else if (OP == EW_MUL)
			r = xv * yv;
		else
			r = xv * xv + yv * yv;
		z[i] = (T)r;
	}
}

int grid_for(long long n, const cuda_launch_ctx *ctx)
{
	long long need = (n + EW_BLOCK - 1) / EW_BLOCK,
		  cap = (long long)ctx->sm_count * EW_BLOCKS_PER_SM;
	return (int)(need < cap ? (need > 0 ? need : 1) : cap);
}

template <typename T, int OP> int launch_float(const kernel_args *a, long long n,
					       const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	const kernel_value *x = &a->v[EW_X], *y = &a->v[EW_Y];
	T as = (OP == EW_AXPY || OP == EW_SAXPY_TRIG) ? (T)a->v[EW_A].s.f64 : T(0);
	ew_kernel<T, OP><<<grid_for(n, ctx), EW_BLOCK, 0, (cudaStream_t)ctx->stream>>>(
		n, x->scalar ? nullptr : (const T *)x->arr.data, (T)x->s.f64,
		y->scalar ? nullptr : (const T *)y->arr.data, (T)y->s.f64, as,
		(T *)a->v[EW_Z].arr.data);
	CUDA_CHECK(cudaGetLastError(), "kernel launch");
	return 0;
}

template <typename T, int OP> int launch_int(const kernel_args *a, long long n,
					     const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	const kernel_value *x = &a->v[EW_X], *y = &a->v[EW_Y];
	ew_int_kernel<T, OP><<<grid_for(n, ctx), EW_BLOCK, 0, (cudaStream_t)ctx->stream>>>(
		n, x->scalar ? nullptr : (const T *)x->arr.data, (T)(int64_t)x->s.f64,
		y->scalar ? nullptr : (const T *)y->arr.data, (T)(int64_t)y->s.f64,
		(T *)a->v[EW_Z].arr.data);
	CUDA_CHECK(cudaGetLastError(), "kernel launch");
	return 0;
}

template <int OP> int launch_op(const kernel_args *a, long long n, const cuda_launch_ctx *ctx,
				char *err, size_t errlen)
{
	switch (a->dtype) {
	case GPUD_F32:
		return launch_float<float, OP>(a, n, ctx, err, errlen);
	case GPUD_F64:
		return launch_float<double, OP>(a, n, ctx, err, errlen);
	default:
		break;
	}
	if (OP == EW_ADD || OP == EW_SUB || OP == EW_MUL || OP == EW_SUM_OF_SQUARES)
		return a->dtype == GPUD_I32 ? launch_int<int32_t, OP>(a, n, ctx, err, errlen)
					    : launch_int<int64_t, OP>(a, n, ctx, err, errlen);
	snprintf(err, errlen, "%s: no %s variant", a->kernel->name, gpud_dtype_name(a->dtype));
	return -1;
}

int ew_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	long long n = (long long)ew_count(a);
	if (n == 0)
		return 0;
	switch (ew_op_of(a->kernel)) {
	case EW_ADD:
		return launch_op<EW_ADD>(a, n, ctx, err, errlen);
	case EW_SUB:
		return launch_op<EW_SUB>(a, n, ctx, err, errlen);
	case EW_MUL:
		return launch_op<EW_MUL>(a, n, ctx, err, errlen);
	case EW_DIV:
		return launch_op<EW_DIV>(a, n, ctx, err, errlen);
	case EW_AXPY:
		return launch_op<EW_AXPY>(a, n, ctx, err, errlen);
	case EW_SAXPY_TRIG:
		return launch_op<EW_SAXPY_TRIG>(a, n, ctx, err, errlen);
	case EW_REL_DIFF:
		return launch_op<EW_REL_DIFF>(a, n, ctx, err, errlen);
	case EW_SUM_OF_SQUARES:
		return launch_op<EW_SUM_OF_SQUARES>(a, n, ctx, err, errlen);
	}
	snprintf(err, errlen, "%s is not an elementwise kernel", a->kernel->name);
	return -1;
}

/* Attributes: one entry per kernel (its float32 variant; the others share the
 * code shape). */
template <int OP> const void *f32_fn()
{
	return (const void *)ew_kernel<float, OP>;
}

int ew_attributes_of(int op, const char *name, cuda_variant_attr *out, char *err, size_t errlen)
{
	static const void *fns[EW_NOPS] = {f32_fn<EW_ADD>(),      f32_fn<EW_SUB>(),
					   f32_fn<EW_MUL>(),      f32_fn<EW_DIV>(),
					   f32_fn<EW_AXPY>(),     f32_fn<EW_SAXPY_TRIG>(),
					   f32_fn<EW_REL_DIFF>(), f32_fn<EW_SUM_OF_SQUARES>()};
	cudaFuncAttributes fa;
	CUDA_CHECK(cudaFuncGetAttributes(&fa, fns[op]), "cudaFuncGetAttributes");
	out->kernel = name;
	out->variant = "float32";
	out->registers = fa.numRegs;
	out->shared_bytes = fa.sharedSizeBytes;
	out->dynamic_shared = 0;
	out->local_bytes = fa.localSizeBytes;
	out->max_threads = fa.maxThreadsPerBlock;
	out->block = EW_BLOCK;
	out->ptx_version = fa.ptxVersion;
	out->binary_version = fa.binaryVersion;
	return 0;
}

} // namespace

#define EW_CUDA(nm, OPC)                                                                           \
	static int ew_##nm##_attr(cuda_variant_attr *out, int max, char *err, size_t errlen)       \
	{                                                                                          \
		return max < 1 ? 0 : ew_attributes_of(OPC, #nm, out, err, errlen) ? -1 : 1;        \
	}                                                                                          \
	extern "C" const cuda_kernel cuda_kernel_##nm = {                                          \
		#nm, ew_launch, ew_##nm##_attr, 0, 0, 0, nullptr, nullptr,                         \
	}

EW_CUDA(add, EW_ADD);
EW_CUDA(sub, EW_SUB);
EW_CUDA(mul, EW_MUL);
EW_CUDA(div, EW_DIV);
EW_CUDA(axpy, EW_AXPY);
EW_CUDA(saxpy_trig, EW_SAXPY_TRIG);
EW_CUDA(rel_diff, EW_REL_DIFF);
EW_CUDA(sum_of_squares, EW_SUM_OF_SQUARES);
