/*
 * daemon/backend/cuda/libs.c — each stream's handles of the libraries
 * kernels call: one cuBLAS handle (with its workspace), one cuRAND
 * generator and one cache of cuFFT plans (kernels/core/libs.h; its plans are
 * made by size on a run, the cache's owner being the loop) per stream.
 *
 * Made when the backend opens, never on a run: creating a handle, its
 * workspace (cudaMalloc) and a generator can wait for the device. Each is
 * bound to its stream once (cublasSetStream, then cublasSetWorkspace, since
 * setting the stream resets the workspace; curandSetStream), so a run only
 * enqueues. A library that cannot be loaded leaves every stream without its
 * handle: gpud serves the other kernels, and runs of those that need it
 * answer why. Open and close only (the loop thread, before and after
 * serving); the preload thread only loads the libraries.
 */
#include <stdio.h>
#include <string.h>

#include "daemon/backend/cuda/internal.h"
#include "daemon/log.h"
#include "kernels/core/libs.h"

/* dlopen of cuBLAS (hundreds of MB) overlaps the context's creation. */
static void *libs_preload(void *arg)
{
	(void)arg;
	libs_get_cublas(NULL, 0);
	libs_get_curand(NULL, 0);
	libs_get_cufft(NULL, 0);
	return NULL;
}

void libs_preload_start(cuda_backend *cb)
{
	if (pthread_create(&cb->preload, NULL, libs_preload, NULL) == 0) {
		cb->preload_started = 1;
		pthread_setname_np(cb->preload, "gpud:preload");
	}
}

static void preload_join(cuda_backend *cb)
{
	if (cb->preload_started) {
		pthread_join(cb->preload, NULL);
		cb->preload_started = 0;
	}
}

void libs_close(cuda_backend *cb)
{
	preload_join(cb);
	const libs_cublas *bl = libs_get_cublas(NULL, 0);
	const libs_curand *rn = libs_get_curand(NULL, 0);
	for (int i = 0; i < cb->nstreams; i++) {
		stream_libs *l = &cb->libs[i];
		if (l->blas && bl)
			bl->destroy((libs_cublas_handle)l->blas);
		if (l->blas_ws)
			cudaFree(l->blas_ws);
		if (l->rng && rn)
			rn->destroy((libs_curand_gen)l->rng);
		libs_fft_cache_free(l->fft);
		memset(l, 0, sizeof(*l));
	}
}

void libs_open(cuda_backend *cb)
{
	preload_join(cb);
	const libs_cublas *bl = libs_get_cublas(cb->blas_why, sizeof(cb->blas_why));
	const libs_curand *rn = libs_get_curand(cb->rng_why, sizeof(cb->rng_why));
	int st = 0, i;
	cudaError_t e;

	/* cuBLAS's recommendation: 32 MiB of workspace on Hopper and later, 4 MiB before. */
	cb->blas_ws_bytes = (size_t)(cb->prop.major >= 9 ? 32 : 4) << 20;
	for (i = 0; bl && i < cb->nstreams; i++) {
		stream_libs *l = &cb->libs[i];
		libs_cublas_handle h = NULL;
		const char *call = "cublasCreate";
		if ((st = bl->create(&h)) == 0) {
			l->blas = h;
			if ((e = cudaMalloc(&l->blas_ws, cb->blas_ws_bytes)) != cudaSuccess) {
				l->blas_ws = NULL;
				cudaGetLastError();
				snprintf(cb->blas_why, sizeof(cb->blas_why),
					 "%s: its workspace of %zu MiB: cudaMalloc: %s",
					 bl->describe, cb->blas_ws_bytes >> 20,
					 cudaGetErrorString(e));
				break;
			}
			if ((st = bl->set_stream(h, cb->streams[i])) != 0)
				call = "cublasSetStream";
			else if ((st = bl->set_workspace(h, l->blas_ws, cb->blas_ws_bytes)) != 0)
				call = "cublasSetWorkspace";
			else if ((st = bl->set_math_mode(h, LIBS_CUBLAS_DEFAULT_MATH)) != 0)
				call = "cublasSetMathMode";
		}
		if (st != 0) {
			snprintf(cb->blas_why, sizeof(cb->blas_why), "%s: %s: %s", bl->describe,
				 call, bl->status_string(st));
			break;
		}
	}
	if (bl && i < cb->nstreams) {
		bl = NULL; /* all streams or none */
		for (int j = 0; j < cb->nstreams; j++) {
			stream_libs *l = &cb->libs[j];
			if (l->blas)
				libs_get_cublas(NULL, 0)->destroy((libs_cublas_handle)l->blas);
			if (l->blas_ws)
				cudaFree(l->blas_ws);
			l->blas = l->blas_ws = NULL;
		}
	}
	for (i = 0; rn && i < cb->nstreams; i++) {
		libs_curand_gen g = NULL;
		const char *call = "curandCreateGenerator";
		if ((st = rn->create(&g, LIBS_CURAND_RNG_PSEUDO_PHILOX4_32_10)) == 0) {
			cb->libs[i].rng = g;
			if ((st = rn->set_stream(g, cb->streams[i])) != 0)
				call = "curandSetStream";
			else if ((st = rn->set_ordering(g, LIBS_CURAND_ORDERING_PSEUDO_DEFAULT)) !=
				 0)
				call = "curandSetGeneratorOrdering";
		}
		if (st != 0) {
			snprintf(cb->rng_why, sizeof(cb->rng_why), "%s: %s: %s", rn->describe, call,
				 libs_curand_status(st));
			break;
		}
	}
	if (rn && i < cb->nstreams) {
		rn = NULL;
		for (int j = 0; j < cb->nstreams; j++) {
			if (cb->libs[j].rng)
				libs_get_curand(NULL, 0)->destroy((libs_curand_gen)cb->libs[j].rng);
			cb->libs[j].rng = NULL;
		}
	}
	char fft_why[768];
	const libs_cufft *ff = libs_get_cufft(fft_why, sizeof(fft_why));
	for (i = 0; i < cb->nstreams; i++)
		cb->libs[i].fft = libs_fft_cache_new(cb->streams[i]);
	if (ff)
		log_info("cuda backend: %s: lombscargle method=nufft", ff->describe);
	else
		log_warn("lombscargle method=nufft is unavailable on the cuda backend: %s",
			 fft_why);
	if (bl)
		log_info(
			"cuda backend: %s: a handle and %zu MiB of workspace on each of %d streams",
			bl->describe, cb->blas_ws_bytes >> 20, cb->nstreams);
	else
		log_warn("matmul is unavailable on the cuda backend: %s", cb->blas_why);
	if (rn)
		log_info("cuda backend: %s: a Philox4_32_10 generator on each of %d streams",
			 rn->describe, cb->nstreams);
	else
		log_warn("uniform and normal are unavailable on the cuda backend: %s", cb->rng_why);
	cudaGetLastError();
}

cuda_launch_ctx libs_stream_ctx(cuda_backend *cb, int idx)
{
	return (cuda_launch_ctx){.stream = cb->streams[idx],
				 .sm_count = cb->prop.multiProcessorCount,
				 .device = cb->device,
				 .blas = cb->libs[idx].blas,
				 .rng = cb->libs[idx].rng,
				 .blas_why = cb->blas_why,
				 .rng_why = cb->rng_why,
				 .fft = cb->libs[idx].fft};
}
