/*
 * kernels/core/cuda_selftest.c — every kernel's samples on the GPU against
 * its CPU reference (kernels/core/cuda_selftest.h), through the CUDA
 * runtime's C API: the CUDA run of one sample (device memory, every path)
 * under selftest.h's loop over samples and dtypes. State: the scratch block,
 * the calling (opening) thread's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_selftest.h"
#include "kernels/core/selftest.h"

/* In a function with `char *err, size_t errlen` that sets rv and cleans up at `out`. */
#define SELF_CHECK(call, name)                                                                     \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			cuda_fail(e_, (name), msg, sizeof(msg));                                   \
			snprintf(err, errlen, "%s: %s", where, msg);                               \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

/* The scratch block the samples' arrays are carved from (see the header):
 * per thread, since each device opens on a thread of its own. */
static _Thread_local void *scratch;
static _Thread_local size_t scratch_size;

#define SCRATCH_ALIGN 256

static size_t aligned(size_t n)
{
	return (n + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
}

/* At least bytes of scratch; the old block goes only when nothing uses it. */
static cudaError_t scratch_reserve(size_t bytes)
{
	if (bytes <= scratch_size)
		return cudaSuccess;
	if (scratch) {
		cudaFree(scratch);
		scratch = NULL;
		scratch_size = 0;
	}
	cudaError_t e = cudaMalloc(&scratch, bytes);
	if (e == cudaSuccess)
		scratch_size = bytes;
	else
		scratch = NULL;
	return e;
}

void kernel_selftest_release(void)
{
	if (scratch)
		cudaFree(scratch);
	scratch = NULL;
	scratch_size = 0;
}

/*
 * One built sample s (its reference in its outputs where have_ref) on the
 * device: the launch, then each path. 0 or -1 with err, which starts with
 * `where` (kernel, sample, dtype).
 */
static int run_sample(const cuda_kernel *ck, const cuda_launch_ctx *ctx, const kernel_sample *s,
		      int have_ref, const char *where, char *err, size_t errlen)
{
	const kernel_def *k = s->a.kernel;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	kernel_args a = s->a; /* the same arguments, arrays in device memory */
	void *dev[KERNEL_MAX_PARAMS] = {0}, *got[KERNEL_MAX_PARAMS] = {0};
	char msg[512], path[96] = "";
	int rv = -1;

	size_t total = 0;
	for (int i = 0; i < k->nparams; i++)
		if (s->host[i] != NULL && !a.v[i].scalar)
			total += aligned(kernel_sample_bytes(s, i) + 1);
	SELF_CHECK(scratch_reserve(total), "cudaMalloc (self-test scratch)");
	size_t off = 0;
	for (int i = 0; i < k->nparams; i++) {
		size_t bytes = kernel_sample_bytes(s, i);
		if (s->host[i] == NULL || a.v[i].scalar)
			continue;
		dev[i] = (char *)scratch + off;
		off += aligned(bytes + 1);
		a.v[i].arr.data = dev[i];
		if (k->params[i].role == KPARAM_OUT) {
			if ((got[i] = malloc(bytes ? bytes : 1)) == NULL) {
				snprintf(err, errlen, "%s: out of memory", where);
				goto out;
			}
		} else if (bytes > 0) {
			SELF_CHECK(cudaMemcpyAsync(dev[i], s->host[i], bytes,
						   cudaMemcpyHostToDevice, st),
				   "cudaMemcpyAsync (input)");
		}
	}
	/* path -1: the kernel's own choice; then each path forced */
	for (int p = -1; p < ck->npaths; p++) {
		if (p >= 0)
			snprintf(path, sizeof(path), ", forced path %d (%s)", p,
				 ck->path_names ? ck->path_names[p] : "?");
		for (int i = 0; i < k->nparams; i++) {
			size_t bytes = kernel_sample_bytes(s, i);
			if (got[i] == NULL || bytes == 0)
				continue;
			kernel_sample_poison(a.v[i].arr.dtype, got[i], a.v[i].arr.count);
			SELF_CHECK(cudaMemcpyAsync(dev[i], got[i], bytes, cudaMemcpyHostToDevice,
						   st),
				   "cudaMemcpyAsync (poison)");
		}
		int lr = p < 0 ? ck->launch(&a, ctx, msg, sizeof(msg))
			       : ck->launch_path(&a, ctx, p, msg, sizeof(msg));
		if (lr > 0 && p >= 0)
			continue; /* a path these arguments cannot take */
		if (lr != 0) {
			snprintf(err, errlen, "%s%s: %s", where, path, msg);
			goto out;
		}
		for (int i = 0; i < k->nparams; i++) {
			size_t bytes = kernel_sample_bytes(s, i);
			if (got[i] != NULL && bytes > 0)
				SELF_CHECK(cudaMemcpyAsync(got[i], dev[i], bytes,
							   cudaMemcpyDeviceToHost, st),
					   "cudaMemcpyAsync (output)");
		}
		SELF_CHECK(cudaStreamSynchronize(st), "cudaStreamSynchronize");
		for (int i = 0; i < k->nparams; i++) {
			if (got[i] != NULL &&
			    kernel_sample_compare(s, i, got[i], have_ref, msg, sizeof(msg)) != 0) {
				snprintf(err, errlen, "%s%s: %s", where, path, msg);
				goto out;
			}
		}
	}
	rv = 0;
out:
	if (rv != 0) /* a launch may still use the scratch */
		cudaStreamSynchronize(st);
	for (int i = 0; i < KERNEL_MAX_PARAMS; i++)
		free(got[i]);
	return rv;
}

/* run_sample through selftest.h's loop */
typedef struct cuda_selftest {
	const cuda_kernel *ck;
	const cuda_launch_ctx *ctx;
} cuda_selftest;

static int run_one(const kernel_sample *s, int have_ref, const char *where, void *arg, char *err,
		   size_t errlen)
{
	const cuda_selftest *t = arg;
	return run_sample(t->ck, t->ctx, s, have_ref, where, err, errlen);
}

int kernel_selftest(const kernel_def *k, const cuda_kernel *ck, const cuda_launch_ctx *ctx,
		    int with_reference, char *err, size_t errlen)
{
	cuda_selftest t = {.ck = ck, .ctx = ctx};

	if ((ck->needs & CUDA_NEEDS_BLAS) && ctx->blas == NULL) {
		snprintf(err, errlen, "%s: not self-tested: %s", k->name,
			 ctx->blas_why && ctx->blas_why[0] ? ctx->blas_why : "no cuBLAS handle");
		return 1;
	}
	if ((ck->needs & CUDA_NEEDS_RNG) && ctx->rng == NULL) {
		snprintf(err, errlen, "%s: not self-tested: %s", k->name,
			 ctx->rng_why && ctx->rng_why[0] ? ctx->rng_why : "no cuRAND generator");
		return 1;
	}
	if (ck->npaths > 0 && ck->launch_path == NULL) {
		snprintf(err, errlen, "%s: %d paths but no launch_path", k->name, ck->npaths);
		return -1;
	}
	return kernel_selftest_samples(k, with_reference, run_one, &t, err, errlen);
}
