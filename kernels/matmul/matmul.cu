/*
 * kernels/matmul/matmul.cu — matmul on the GPU through cuBLAS (kernels/matmul/matmul.h),
 * loaded at run time (kernels/core/libs.h). The backend gives each stream its own
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

/* kernels/core/libs.h declares cuBLAS's constants itself: they must be the toolkit's. */
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

} // namespace

extern "C" const cuda_kernel cuda_kernel_matmul = {
	"matmul", mm_launch, nullptr, 1, CUDA_NEEDS_BLAS, 0, nullptr, nullptr,
};
