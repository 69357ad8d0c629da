/*
 * kernels/matmul_cuda.cu — matmul on the GPU through cuBLAS (kernels/matmul.h),
 * loaded at run time (kernels/libs.h). The backend gives each stream its own
 * handle with that stream and a workspace of its own set once
 * (cuda_launch_ctx.blas), so a run only enqueues cublasGemmEx: nothing here
 * allocates or waits for the device.
 *
 * Row-major c = a b is column-major c^T = b^T a^T: cuBLAS multiplies b (n x k,
 * leading dimension n) by a (k x m, leading dimension k) into c (n x m,
 * leading dimension n), with no transposes and no copies.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/core/libs.h"
#include "kernels/matmul/matmul.h"

/* kernels/libs.h declares cuBLAS's constants itself: they must be the toolkit's. */
#define SAME(ours, theirs) static_assert((int)(ours) == (int)(theirs), #ours " != " #theirs)
SAME(LIBS_CUBLAS_SUCCESS, CUBLAS_STATUS_SUCCESS);
SAME(LIBS_CUBLAS_OP_N, CUBLAS_OP_N);
SAME(LIBS_CUDA_R_32F, CUDA_R_32F);
SAME(LIBS_CUDA_R_64F, CUDA_R_64F);
SAME(LIBS_CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F);
SAME(LIBS_CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F_FAST_TF32);
SAME(LIBS_CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_64F);
SAME(LIBS_CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT);
SAME(LIBS_CUBLAS_DEFAULT_MATH, CUBLAS_DEFAULT_MATH);
#undef SAME

namespace {

int mm_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	const kernel_array *A = &a->v[MM_A].arr, *B = &a->v[MM_B].arr, *C = &a->v[MM_C].arr;
	int m = (int)A->shape[0], k = (int)A->shape[1], n = (int)B->shape[1];
	cudaStream_t s = (cudaStream_t)ctx->stream;
	const libs_cublas *cb = libs_get_cublas(NULL, 0);

	if (ctx->blas == NULL || cb == NULL) {
		snprintf(err, errlen, "matmul is unavailable on the cuda backend: %s",
			 ctx->blas_why && ctx->blas_why[0] ? ctx->blas_why
							   : "cuBLAS is not loaded");
		return -1;
	}
	if (m == 0 || n == 0)
		return 0;
	if (k == 0) { /* an empty sum: zeros (BLAS would need lda >= 1) */
		CUDA_CHECK(cudaMemsetAsync(C->data, 0, C->count * gpud_dtype_size(C->dtype), s),
			   "cudaMemsetAsync");
		return 0;
	}
	int st;
	if (A->dtype == GPUD_F32) {
		const float one = 1.0f, zero = 0.0f;
		int compute = a->v[MM_TF32].s.b ? LIBS_CUBLAS_COMPUTE_32F_FAST_TF32
						: LIBS_CUBLAS_COMPUTE_32F;
		st = cb->gemm_ex((libs_cublas_handle)ctx->blas, LIBS_CUBLAS_OP_N, LIBS_CUBLAS_OP_N,
				 n, m, k, &one, B->data, LIBS_CUDA_R_32F, n, A->data,
				 LIBS_CUDA_R_32F, k, &zero, C->data, LIBS_CUDA_R_32F, n, compute,
				 LIBS_CUBLAS_GEMM_DEFAULT);
	} else {
		const double one = 1.0, zero = 0.0;
		st = cb->gemm_ex((libs_cublas_handle)ctx->blas, LIBS_CUBLAS_OP_N, LIBS_CUBLAS_OP_N,
				 n, m, k, &one, B->data, LIBS_CUDA_R_64F, n, A->data,
				 LIBS_CUDA_R_64F, k, &zero, C->data, LIBS_CUDA_R_64F, n,
				 LIBS_CUBLAS_COMPUTE_64F, LIBS_CUBLAS_GEMM_DEFAULT);
	}
	if (st != LIBS_CUBLAS_SUCCESS) {
		snprintf(err, errlen, "matmul: cublasGemmEx (%d x %d x %d, %s%s): %s", m, k, n,
			 gpud_dtype_name(A->dtype), a->v[MM_TF32].s.b ? ", tf32" : "",
			 cb->status_string(st));
		return -1;
	}
	return 0;
}

/*
 * Warm-up on ctx's stream (the backend runs it on every stream, each with its
 * handle): float32, float32 with TF32 and float64, 64 x 48 times 48 x 40 of
 * small integers (exact in every mode), one element checked. Synchronous.
 * Without cuBLAS there is nothing to warm: runs say why.
 */
int mm_warmup(const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	enum { M = 64, K = 48, N = 40 };
	cudaStream_t s = (cudaStream_t)ctx->stream;
	void *d = nullptr;
	double ha[M * K], hb[K * N], hc = 0;
	float fa[M * K], fb[K * N], fc = 0;
	int rv = -1;

	if (ctx->blas == NULL)
		return 0;
	for (int i = 0; i < M * K; i++)
		fa[i] = (float)(ha[i] = (double)(i % 7 - 3));
	for (int i = 0; i < K * N; i++)
		fb[i] = (float)(hb[i] = (double)(i % 5 - 2));
	double want = 0; /* c[1][2] */
	for (int j = 0; j < K; j++)
		want += ha[1 * K + j] * hb[j * N + 2];
	size_t bytes = sizeof(ha) + sizeof(hb) + (size_t)M * N * sizeof(double);
	CUDA_CHECK(cudaMalloc(&d, bytes), "cudaMalloc");
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = &kernel_matmul;
	for (int mode = 0; mode < 3; mode++) { /* float32, float32 + tf32, float64 */
		gpud_dtype dt = mode < 2 ? GPUD_F32 : GPUD_F64;
		size_t es = gpud_dtype_size(dt);
		char *pa = (char *)d, *pb = pa + (size_t)M * K * es, *pc = pb + (size_t)K * N * es;
		cudaError_t e = cudaMemcpyAsync(pa, dt == GPUD_F32 ? (void *)fa : (void *)ha,
						(size_t)M * K * es, cudaMemcpyHostToDevice, s);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(pb, dt == GPUD_F32 ? (void *)fb : (void *)hb,
					    (size_t)K * N * es, cudaMemcpyHostToDevice, s);
		if (e != cudaSuccess) {
			cuda_fail(e, "cudaMemcpyAsync", err, errlen);
			goto out;
		}
		a.dtype = dt;
		a.v[MM_A].arr = (kernel_array){dt, 2, {M, K}, (size_t)M * K, pa};
		a.v[MM_B].arr = (kernel_array){dt, 2, {K, N}, (size_t)K * N, pb};
		a.v[MM_C].arr = (kernel_array){dt, 2, {M, N}, (size_t)M * N, pc};
		a.v[MM_TF32].s.b = mode == 1;
		if (mm_launch(&a, ctx, err, errlen) != 0)
			goto out;
		void *dst = dt == GPUD_F32 ? (void *)&fc : (void *)&hc;
		e = cudaMemcpyAsync(dst, pc + (size_t)(1 * N + 2) * es, es, cudaMemcpyDeviceToHost,
				    s);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s);
		if (e != cudaSuccess) {
			cuda_fail(e, "cudaStreamSynchronize", err, errlen);
			goto out;
		}
		double got = dt == GPUD_F32 ? (double)fc : hc;
		if (got != want) {
			snprintf(err, errlen, "matmul warm-up (%s%s): c[1][2] = %g, expected %g",
				 gpud_dtype_name(dt), mode == 1 ? ", tf32" : "", got, want);
			goto out;
		}
	}
	rv = 0;
out:
	cudaFree(d);
	return rv;
}

} // namespace

extern "C" const cuda_kernel cuda_kernel_matmul = {"matmul", mm_launch, nullptr, mm_warmup, 1};
