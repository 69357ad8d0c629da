/*
 * kernels/core/cuda_kernel.h — the CUDA side of the kernel table: for every
 * built-in kernel its launch function, the code paths it chooses among, and
 * the attributes of each compiled variant; defined in each kernel's folder
 * (<folder>.cu), the table made from kernels/kernels.def as the cpu table is
 * (kernels/core/cpu_kernel.h). Built only when nvcc is found.
 *
 * The kernels are compiled by nvcc into a fatbin embedded in gpud (machine
 * code for every CUDA_ARCHS entry and PTX for the newest); gpud loads them
 * and runs every sample of every kernel at start (kernel_selftest,
 * kernels/core/cuda_selftest.h), each path forced too, so no client ever pays
 * a module load and a kernel that disagrees with its CPU reference stops gpud
 * from starting.
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
	 * Library handles bound to this stream (kernels/core/libs.h), made by the
	 * backend when it opens; NULL where the library could not be loaded,
	 * with the reason in *_why.
	 */
	void *blas; /* cublasHandle_t: its stream and own workspace set, default math */
	void *rng;  /* curandGenerator_t: Philox4_32_10, its stream set */
	const char *blas_why, *rng_why;
	/*
	 * For a kernel with verdicts (kernel_def.verdict_message): a zeroed
	 * device-visible word where the kernel writes its code when the
	 * arguments' values are wrong (the run then fails with the kernel's
	 * message); NULL where nobody reads one (the kernel then only leaves
	 * its outputs without a result).
	 */
	unsigned *verdict;
	/*
	 * A device-visible word the host sets to nonzero when the run is to stop
	 * (over its tenant's run_timeout): a kernel that can stop part-way reads
	 * it now and then, the same value in every thread of a block, and
	 * returns (its outputs then hold no result; the run fails). NULL where
	 * nothing can ask it to stop; kernels that never read it run to their
	 * end.
	 */
	const unsigned *stop;
	/*
	 * Scratch device memory for the work this launch enqueues: scratch(ctx,
	 * bytes, ...) returns a block (256-byte aligned) of at least bytes, or
	 * NULL with why in err. It stays the launch's until that work is done:
	 * the backend gives it back when the run completes (its end event), so
	 * nothing later on the stream can see it reused. Called only from launch,
	 * on the thread launching (the loop; the opening thread in the
	 * self-test). NULL where none is offered.
	 */
	void *(*scratch)(const struct cuda_launch_ctx *ctx, size_t bytes, char *err, size_t errlen);
	void *scratch_arg; /* the backend's: which run the blocks belong to */
	/*
	 * The stream's cuFFT plans (libs_fft_cache, kernels/core/libs.h), made
	 * lazily by size; owned by the thread launching on the stream. NULL
	 * where none is offered.
	 */
	void *fft;
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

/* The library handles of cuda_launch_ctx a kernel needs (cuda_kernel.needs). */
enum { CUDA_NEEDS_BLAS = 1, CUDA_NEEDS_RNG = 2 };

typedef struct cuda_kernel {
	const char *name; /* matches the kernel_def (every backend's entry starts with it) */
	/* Enqueues the kernel on ctx->stream. 0, or -1 with "cudaX: error" in err. */
	int (*launch)(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen);
	/* Fills up to max variant attributes; returns how many, or -1 + err.
	 * NULL where the code is a library's (CUB, cuBLAS, cuRAND picks it). */
	int (*attributes)(cuda_variant_attr *out, int max, char *err, size_t errlen);
	/* 1: it uses ctx's library handles, so the self-test runs on every stream
	 * (each handle's first use, and whatever it sets up lazily, happens at
	 * start, not on the loop). */
	int per_stream;
	/* CUDA_NEEDS_*: without the handle in ctx the kernel cannot run (its runs
	 * say why) and the self-test skips it. */
	int needs;
	/*
	 * Optional, for a kernel that chooses among code paths by size: npaths
	 * paths (named for messages), and launch_path, which runs path
	 * 0..npaths-1 whatever the size: 0, -1 + err, or 1 (why in err) where the
	 * path cannot take these arguments. The self-test runs each path on each
	 * sample, so every path's code is loaded at start, never on a request.
	 */
	int npaths;
	const char *const *path_names;
	int (*launch_path)(const kernel_args *a, const cuda_launch_ctx *ctx, int path, char *err,
			   size_t errlen);
} cuda_kernel;

/*
 * The CUDA table, made from kernels/kernels.def: entry i is cuda_kernel_<name>
 * of kernel_list()'s entry i (kernels/core/cuda_table.c).
 */
const cuda_kernel *const *cuda_kernel_list(size_t *n);

/*
 * 0 when cuda_kernel_list() and kernel_list() agree (kernel_tables_check: as
 * many entries, the same names in the same order, every kernel_def's id its
 * position), else -1 with the first difference in err.
 */
int cuda_kernel_tables_check(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
