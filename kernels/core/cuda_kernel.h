/*
 * kernels/core/cuda_kernel.h — the CUDA side of the kernel table: for each
 * kernel that has a GPU implementation, its launch function, a warm-up and
 * the attributes of each compiled variant. Built only when nvcc is found.
 *
 * The kernels are compiled by nvcc into a fatbin embedded in gpud (machine
 * code for every CUDA_ARCHS entry and PTX for the newest); gpud loads them
 * and runs each variant once at start, so no client ever pays module load.
 */
#ifndef GPUD_CUDA_KERNELS_H
#define GPUD_CUDA_KERNELS_H

#include <stddef.h>

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cuda_launch_ctx {
	void *stream; /* cudaStream_t */
	int sm_count;
	int device;
	/*
	 * Library handles bound to this stream (kernels/libs.h), made by the
	 * backend when it opens; NULL where the library could not be loaded,
	 * with the reason in *_why.
	 */
	void *blas; /* cublasHandle_t: its stream and own workspace set, default math */
	void *rng;  /* curandGenerator_t: Philox4_32_10, its stream set */
	const char *blas_why, *rng_why;
} cuda_launch_ctx;

typedef struct cuda_variant_attr {
	const char *kernel;
	const char *variant; /* "float32", "float64" */
	int registers;
	size_t shared_bytes;   /* static shared memory */
	size_t dynamic_shared; /* per launch, at the block size used */
	size_t local_bytes;
	int max_threads;
	int block; /* block size gpud launches with */
	int ptx_version, binary_version;
} cuda_variant_attr;

typedef struct cuda_kernel {
	const char *name; /* matches the kernel_def */
	/* Enqueues the kernel on ctx->stream. 0, or -1 with "cudaX: error" in err. */
	int (*launch)(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen);
	/* Fills up to max variant attributes; returns how many, or -1 + err.
	 * NULL where the code is a library's (CUB, cuBLAS, cuRAND picks it). */
	int (*attributes)(cuda_variant_attr *out, int max, char *err, size_t errlen);
	/* One small launch of every variant on real data; synchronous. 0 or -1 + err. */
	int (*warmup)(const cuda_launch_ctx *ctx, char *err, size_t errlen);
	/* 1: it uses ctx's library handles, so the warm-up runs on every stream
	 * (each handle's first use, and whatever it sets up lazily, happens at
	 * start, not on the loop). */
	int per_stream;
} cuda_kernel;

/*
 * The CUDA table, made from kernels/kernels.def: entry i is cuda_kernel_<name>
 * of kernel_list()'s entry i (kernels/core/cuda_table.c).
 */
const cuda_kernel *const *cuda_kernel_list(size_t *n);

/*
 * 0 when cuda_kernel_list() and kernel_list() agree (as many entries, the
 * same names in the same order, every kernel_def's id its position), else -1
 * with the first difference in err.
 */
int cuda_kernel_tables_check(char *err, size_t errlen);

/*
 * Deprecated: the entry of a built-in kernel's name (through kernel_find), or
 * NULL. gpud indexes cuda_kernel_list() by kernel_def.id; bench/ still calls
 * this, and goes once it uses ids too.
 */
const cuda_kernel *cuda_kernel_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
