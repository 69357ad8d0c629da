/* kernels/matmul/matmul.c — matmul: table entry, checks, and the cpu backend's product
 * through the CPU BLAS (kernels/matmul/matmul.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/libs.h"
#include "kernels/matmul/matmul.h"

static const kernel_param params[] = {
	[MM_A] = {.name = "a", .role = KPARAM_IN, .dtypes = KDT_FLOAT, .ndim = 2, .doc = "m x k"},
	[MM_B] = {.name = "b", .role = KPARAM_IN, .dtypes = KDT_FLOAT, .ndim = 2, .doc = "k x n"},
	[MM_C] = {.name = "c",
		  .role = KPARAM_OUT,
		  .dtypes = KDT_FLOAT,
		  .ndim = 2,
		  .doc = "m x n: a b"},
	[MM_TF32] = {.name = "tf32",
		     .role = KPARAM_SCALAR,
		     .stype = KSCALAR_BOOL,
		     .default_value = "false",
		     .doc = "float32 on cuda: allow TF32 tensor cores (faster, ~1e-3 relative)"},
};

static int mm_check(kernel_args *a, char *err, size_t errlen)
{
	const kernel_array *A = &a->v[MM_A].arr, *B = &a->v[MM_B].arr;

	if (B->dtype != A->dtype) {
		snprintf(err, errlen, "matmul: 'b' is %s but 'a' is %s; one dtype",
			 gpud_dtype_name(B->dtype), gpud_dtype_name(A->dtype));
		return -1;
	}
	if (B->shape[0] != A->shape[1]) {
		snprintf(err, errlen, "matmul: b has %llu rows, expected %llu (a's columns)",
			 (unsigned long long)B->shape[0], (unsigned long long)A->shape[1]);
		return -1;
	}
	uint64_t dims[3] = {A->shape[0], A->shape[1], B->shape[1]};
	static const char *const names[3] = {"m (a's rows)", "k (a's columns)", "n (b's columns)"};
	for (int i = 0; i < 3; i++) {
		if (dims[i] > INT_MAX) {
			snprintf(err, errlen, "matmul: %s is %llu; at most %d", names[i],
				 (unsigned long long)dims[i], INT_MAX);
			return -1;
		}
	}
	if (a->v[MM_TF32].s.b && A->dtype != GPUD_F32) {
		snprintf(err, errlen, "matmul: tf32 applies to float32 only; a and b are %s",
			 gpud_dtype_name(A->dtype));
		return -1;
	}
	a->dtype = A->dtype;
	uint64_t shape[2] = {A->shape[0], B->shape[1]};
	kernel_set_output(a, MM_C, A->dtype, 2, shape);
	return 0;
}

static size_t mm_items(const kernel_args *a)
{
	(void)a;
	return 1; /* one BLAS call, which spreads over the BLAS's own threads */
}

static int mm_available(char *err, size_t errlen)
{
	char why[768];
	if (libs_get_cblas(why, sizeof(why)) != NULL)
		return 0;
	snprintf(err, errlen, "matmul is unavailable on the cpu backend: %s", why);
	return -1;
}

static void mm_run(const kernel_args *a, size_t lo, size_t hi)
{
	(void)lo;
	(void)hi;
	const kernel_array *A = &a->v[MM_A].arr, *B = &a->v[MM_B].arr, *C = &a->v[MM_C].arr;
	int m = (int)A->shape[0], k = (int)A->shape[1], n = (int)B->shape[1];
	const libs_cblas *blas = libs_get_cblas(NULL, 0);
	size_t es = gpud_dtype_size(C->dtype);

	if (m == 0 || n == 0)
		return;
	if (k == 0 || blas == NULL) { /* no BLAS: the backend refused the run before */
		memset(C->data, 0, C->count * es);
		return;
	}
	if (A->dtype == GPUD_F32)
		blas->sgemm(LIBS_CBLAS_ROW_MAJOR, LIBS_CBLAS_NO_TRANS, LIBS_CBLAS_NO_TRANS, m, n, k,
			    1.0f, A->data, k, B->data, n, 0.0f, C->data, n);
	else
		blas->dgemm(LIBS_CBLAS_ROW_MAJOR, LIBS_CBLAS_NO_TRANS, LIBS_CBLAS_NO_TRANS, m, n, k,
			    1.0, A->data, k, B->data, n, 0.0, C->data, n);
}

/* float32 (tf32 too: float64 refuses it) and float64. */
static const char *const mm_samples[] = {
	"a=rand:64x48 b=rand:48x40",
	"a=rand:64x48 b=rand:48x40 tf32=true",
	NULL,
};

const kernel_def kernel_matmul = {
	.name = "matmul",
	.id = KERNEL_ID_matmul,
	.doc = "matrix product c = a b of 2-d arrays (cuBLAS on cuda, the CPU BLAS on cpu)",
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
	.check = mm_check,
	.samples = mm_samples,
};

const cpu_kernel cpu_kernel_matmul = {
	.name = "matmul",
	.items = mm_items,
	.run = mm_run,
	.available = mm_available,
};
