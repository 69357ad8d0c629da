/*
 * daemon/backend_cuda.c — the cuda backend: one CUDA context on the
 * configured device, created at start together with every built-in kernel
 * (embedded fatbin, loaded and run once before gpud answers as ready).
 *
 * Buffers are device memory. Copies and kernel runs execute on libuv's
 * worker threads, each on its own per-thread stream, and complete back on
 * the loop; the loop itself never waits for the GPU during a copy or a
 * kernel. Allocation is cudaMalloc/cudaFree on the loop for now (the pooled,
 * stream-ordered allocator replaces it).
 *
 * A sticky CUDA error (the context is lost: illegal address, launch
 * failure, ...) makes every later operation fail; the backend reports it
 * once through on_fatal and the server exits non-zero so its supervisor
 * starts a fresh gpud.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "daemon/backend.h"
#include "daemon/log.h"
#include "daemon/pool.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_kernels.h"
#include "proto/wire.h"

#define MAX_VARIANTS 32

typedef struct cuda_backend {
	int device;
	struct cudaDeviceProp prop;
	cuda_variant_attr variants[MAX_VARIANTS];
	int nvariants;
	gpud_pool *pool;
	atomic_int lost; /* a sticky error happened */
	char lost_msg[512];
	int fatal_reported;
} cuda_backend;

/* Errors after which the context cannot be used again. */
static int is_sticky(cudaError_t e)
{
	switch (e) {
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchFailure:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorLaunchTimeout:
	case cudaErrorECCUncorrectable:
	case cudaErrorAssert:
	case cudaErrorContextIsDestroyed:
	case cudaErrorDevicesUnavailable:
	case cudaErrorUnknown:
		return 1;
	default:
		return 0;
	}
}

static int cuda_devices(gpud_backend *b, backend_device *out, int max);

static int cuda_open(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess || count == 0) {
		if (e != cudaSuccess)
			snprintf(err, errlen, "no usable CUDA device: cudaGetDeviceCount: %s (%s)",
				 cudaGetErrorString(e), cudaGetErrorName(e));
		else
			snprintf(err, errlen, "no CUDA device found");
		return -1;
	}
	if (cfg->device >= count) {
		snprintf(err, errlen, "device %d does not exist: this machine has %d CUDA device%s",
			 cfg->device, count, count == 1 ? "" : "s");
		return -1;
	}
	cuda_backend *cb = calloc(1, sizeof(*cb));
	if (cb == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return -1;
	}
	cb->device = cfg->device;
	b->impl = cb;
	/* Copies and runs wait for the GPU on libuv's pool; size it before first use. */
	char threads[16];
	snprintf(threads, sizeof(threads), "%d", cfg->cpu_threads < 4 ? 4 : cfg->cpu_threads);
	setenv("UV_THREADPOOL_SIZE", threads, 1);
	uint64_t t0 = uv_hrtime();
#define OPEN_CHECK(call, name)                              \
	do {                                                \
		cudaError_t e_ = (call);                    \
		if (e_ != cudaSuccess) {                    \
			cuda_fail(e_, (name), err, errlen); \
			goto fail;                          \
		}                                           \
	} while (0)
	OPEN_CHECK(cudaSetDevice(cb->device), "cudaSetDevice");
	OPEN_CHECK(cudaFree(NULL), "cudaFree (context creation)");
	OPEN_CHECK(cudaGetDeviceProperties(&cb->prop, cb->device), "cudaGetDeviceProperties");
	uint64_t t_ctx = uv_hrtime();
	pool_config pc = {.device = cb->device,
			  .bin_growth = cfg->pool_bin_growth,
			  .min_bin = cfg->pool_min_bin,
			  .max_bin = cfg->pool_max_bin,
			  .max_cached = cfg->pool_max_cached,
			  .max_total = cfg->pool_max_total,
			  .reserve = cfg->pool_reserve};
	if (pool_create(&pc, &cb->pool, err, errlen) != 0)
		goto fail;

	cuda_launch_ctx lc = {.stream = cudaStreamPerThread,
			      .sm_count = cb->prop.multiProcessorCount,
			      .device = cb->device};
	size_t nk;
	const cuda_kernel *const *ks = cuda_kernel_list(&nk);
	for (size_t i = 0; i < nk; i++) {
		char kerr[512];
		if (ks[i]->warmup(&lc, kerr, sizeof(kerr)) != 0) {
			snprintf(err, errlen, "warm-up of kernel %s failed: %s", ks[i]->name, kerr);
			goto fail;
		}
		int n = ks[i]->attributes(cb->variants + cb->nvariants,
					  MAX_VARIANTS - cb->nvariants, kerr, sizeof(kerr));
		if (n < 0) {
			snprintf(err, errlen, "kernel %s: %s", ks[i]->name, kerr);
			goto fail;
		}
		cb->nvariants += n;
	}
	uint64_t t_warm = uv_hrtime();
	log_info("cuda backend: device %d %s (sm_%d%d, %d SMs, %.1f GiB), context %.0f ms, "
		 "%d kernel variants loaded and warmed in %.0f ms",
		 cb->device, cb->prop.name, cb->prop.major, cb->prop.minor,
		 cb->prop.multiProcessorCount, (double)cb->prop.totalGlobalMem / (1 << 30),
		 (double)(t_ctx - t0) / 1e6, cb->nvariants, (double)(t_warm - t_ctx) / 1e6);
	for (int i = 0; i < cb->nvariants; i++) {
		cuda_variant_attr *v = &cb->variants[i];
		log_info("  kernel %s<%s>: %d registers, %zu B shared, %zu B local, block %d, "
			 "sm_%d binary",
			 v->kernel, v->variant, v->registers, v->shared_bytes, v->local_bytes,
			 v->block, v->binary_version);
	}
	return 0;
fail:
#undef OPEN_CHECK
	pool_destroy(cb->pool);
	free(cb);
	b->impl = NULL;
	return -1;
}

static void cuda_close(gpud_backend *b)
{
	cuda_backend *cb = b->impl;
	if (cb == NULL)
		return;
	if (!atomic_load(&cb->lost)) {
		cudaDeviceSynchronize();
		pool_destroy(cb->pool);
	}
	free(cb);
	b->impl = NULL;
}

/* Records a failure; a sticky one marks the backend lost. Returns a status. */
static int note_error(cuda_backend *cb, cudaError_t e, const char *msg)
{
	if (is_sticky(e) && !atomic_exchange(&cb->lost, 1)) {
		snprintf(cb->lost_msg, sizeof(cb->lost_msg), "%s", msg);
		log_error("CUDA context lost: %s", msg);
	}
	return GPUD__STATUS__STATUS_BACKEND;
}

/* On the loop, after an op finished: report a lost context once. */
static void check_fatal(gpud_backend *b)
{
	cuda_backend *cb = b->impl;
	if (atomic_load(&cb->lost) && !cb->fatal_reported) {
		cb->fatal_reported = 1;
		if (b->on_fatal)
			b->on_fatal(b, cb->lost_msg);
	}
}

static int lost_error(cuda_backend *cb, char *err, size_t errlen)
{
	snprintf(err, errlen, "the CUDA context is lost (%.400s); gpud is restarting", cb->lost_msg);
	return GPUD__STATUS__STATUS_BACKEND;
}

static int cuda_alloc(gpud_backend *b, size_t bytes, void **mem, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	if (atomic_load(&cb->lost))
		return lost_error(cb, err, errlen);
	switch (pool_alloc(cb->pool, bytes, mem, err, errlen)) {
	case POOL_OK:
		return 0;
	case POOL_OUT_OF_MEMORY:
		return GPUD__STATUS__STATUS_OUT_OF_MEMORY;
	default:
		return note_error(cb, cudaGetLastError(), err);
	}
}

static void cuda_free(gpud_backend *b, void *mem)
{
	cuda_backend *cb = b->impl;
	char msg[256];
	if (atomic_load(&cb->lost))
		return; /* the context is gone; so is its memory */
	if (pool_free(cb->pool, mem, msg, sizeof(msg)) != 0) {
		log_error("%s", msg);
		note_error(cb, cudaGetLastError(), msg);
	}
}

/* --- work on the pool's threads ---------------------------------------------- */

typedef struct cuda_job {
	uv_work_t work;
	gpud_backend *b;
	enum { JOB_H2D, JOB_D2H, JOB_RUN } kind;
	void *dst;
	const void *src;
	size_t len;
	const cuda_kernel *ck;
	const kernel_args *args;
	double *kernel_us;
	backend_done_fn done;
	void *arg;
	int status;
	char msg[512];
} cuda_job;

static void job_work(uv_work_t *w)
{
	cuda_job *j = w->data;
	cuda_backend *cb = j->b->impl;
	cudaStream_t s = cudaStreamPerThread;
	cudaError_t e;
	const char *call = NULL;

	if (atomic_load(&cb->lost)) {
		j->status = lost_error(cb, j->msg, sizeof(j->msg));
		return;
	}
	if ((e = cudaSetDevice(cb->device)) != cudaSuccess) {
		call = "cudaSetDevice";
		goto fail;
	}
	if (j->kind == JOB_RUN) {
		cudaEvent_t ev[2];
		float ms = 0;
		cuda_launch_ctx lc = {.stream = s,
				      .sm_count = cb->prop.multiProcessorCount,
				      .device = cb->device};
		if ((e = cudaEventCreate(&ev[0])) != cudaSuccess) {
			call = "cudaEventCreate";
			goto fail;
		}
		if ((e = cudaEventCreate(&ev[1])) != cudaSuccess) {
			cudaEventDestroy(ev[0]);
			call = "cudaEventCreate";
			goto fail;
		}
		e = cudaEventRecord(ev[0], s);
		if (e == cudaSuccess && j->ck->launch(j->args, &lc, j->msg, sizeof(j->msg)) != 0) {
			/* The launch helper formatted the message. */
			e = cudaGetLastError();
			j->status = note_error(cb, e, j->msg);
			cudaStreamSynchronize(s);
			cudaEventDestroy(ev[0]);
			cudaEventDestroy(ev[1]);
			return;
		}
		if (e == cudaSuccess)
			e = cudaEventRecord(ev[1], s);
		if (e == cudaSuccess && (e = cudaEventSynchronize(ev[1])) != cudaSuccess)
			call = j->ck->name;
		if (e == cudaSuccess)
			e = cudaEventElapsedTime(&ms, ev[0], ev[1]);
		cudaEventDestroy(ev[0]);
		cudaEventDestroy(ev[1]);
		if (e != cudaSuccess) {
			if (call == NULL)
				call = "cudaEventRecord";
			goto fail;
		}
		*j->kernel_us = (double)ms * 1e3;
		return;
	}
	e = cudaMemcpyAsync(j->dst, j->src, j->len,
			    j->kind == JOB_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s);
	if (e != cudaSuccess) {
		call = "cudaMemcpyAsync";
		goto fail;
	}
	if ((e = cudaStreamSynchronize(s)) != cudaSuccess) {
		call = "cudaStreamSynchronize (copy)";
		goto fail;
	}
	return;
fail:
	cuda_fail(e, call, j->msg, sizeof(j->msg));
	j->status = note_error(cb, e, j->msg);
}

static void job_after(uv_work_t *w, int status)
{
	cuda_job *j = w->data;
	gpud_backend *b = j->b;
	backend_done_fn done = j->done;
	void *arg = j->arg;
	char msg[512];
	int st = status != 0 ? GPUD__STATUS__STATUS_INTERNAL : j->status;

	snprintf(msg, sizeof(msg), "%s", status != 0 ? "cuda backend: operation cancelled" : j->msg);
	free(j);
	done(arg, st, st ? msg : NULL);
	check_fatal(b);
}

static int submit(gpud_backend *b, cuda_job *tmpl, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	if (atomic_load(&cb->lost))
		return lost_error(cb, err, errlen);
	cuda_job *j = malloc(sizeof(*j));
	if (j == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return GPUD__STATUS__STATUS_OUT_OF_MEMORY;
	}
	*j = *tmpl;
	j->b = b;
	j->status = 0;
	j->msg[0] = '\0';
	j->work.data = j;
	uv_queue_work(b->loop, &j->work, job_work, job_after);
	return 0;
}

static int cuda_upload(gpud_backend *b, void *dst, const void *src, size_t len,
		       backend_done_fn done, void *arg, char *err, size_t errlen)
{
	cuda_job t = {.kind = JOB_H2D, .dst = dst, .src = src, .len = len, .done = done, .arg = arg};
	return submit(b, &t, err, errlen);
}

static int cuda_download(gpud_backend *b, void *dst, const void *src, size_t len,
			 backend_done_fn done, void *arg, char *err, size_t errlen)
{
	cuda_job t = {.kind = JOB_D2H, .dst = dst, .src = src, .len = len, .done = done, .arg = arg};
	return submit(b, &t, err, errlen);
}

static int cuda_run(gpud_backend *b, const kernel_def *k, const kernel_args *a, double *kernel_us,
		    backend_done_fn done, void *arg, char *err, size_t errlen)
{
	const cuda_kernel *ck = cuda_kernel_find(k->name);
	if (ck == NULL) {
		snprintf(err, errlen, "kernel %s has no CUDA implementation", k->name);
		return GPUD__STATUS__STATUS_UNSUPPORTED;
	}
	cuda_job t = {.kind = JOB_RUN,
		      .ck = ck,
		      .args = a,
		      .kernel_us = kernel_us,
		      .done = done,
		      .arg = arg};
	return submit(b, &t, err, errlen);
}

static int cuda_devices(gpud_backend *b, backend_device *out, int max)
{
	cuda_backend *cb = b->impl;
	size_t fr = 0, total = cb->prop.totalGlobalMem;

	if (max < 1)
		return 0;
	if (!atomic_load(&cb->lost))
		cudaMemGetInfo(&fr, &total);
	out->index = cb->device;
	snprintf(out->name, sizeof(out->name), "%.*s", (int)sizeof(out->name) - 1, cb->prop.name);
	out->cc_major = cb->prop.major;
	out->cc_minor = cb->prop.minor;
	out->memory_total = total;
	out->memory_free = fr;
	out->sm_count = cb->prop.multiProcessorCount;
	return 1;
}

static int cuda_variants(gpud_backend *b, backend_variant *out, int max)
{
	cuda_backend *cb = b->impl;
	int n = cb->nvariants < max ? cb->nvariants : max;
	for (int i = 0; i < n; i++) {
		cuda_variant_attr *v = &cb->variants[i];
		snprintf(out[i].kernel, sizeof(out[i].kernel), "%s", v->kernel);
		snprintf(out[i].variant, sizeof(out[i].variant), "%s", v->variant);
		out[i].registers = v->registers;
		out[i].block = v->block;
		out[i].max_threads = v->max_threads;
		out[i].shared_bytes = v->shared_bytes;
		out[i].local_bytes = v->local_bytes;
	}
	return n;
}

static int cuda_pool_stats(gpud_backend *b, backend_pool_stats *out)
{
	cuda_backend *cb = b->impl;
	pool_stats ps;
	pool_get_stats(cb->pool, &ps);
	*out = (backend_pool_stats){.in_use = ps.in_use,
				    .cached = ps.cached,
				    .high_water = ps.high_water,
				    .limit = ps.max_total,
				    .allocs = ps.allocs,
				    .hits = ps.hits};
	return 0;
}

const backend_ops backend_cuda_ops = {
	.name = "cuda",
	.open = cuda_open,
	.close = cuda_close,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.upload = cuda_upload,
	.download = cuda_download,
	.run = cuda_run,
	.devices = cuda_devices,
	.variants = cuda_variants,
	.pool_stats = cuda_pool_stats,
};
