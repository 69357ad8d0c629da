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
#include <pthread.h>
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
#define MAX_STREAMS 256
#define MAX_EVENTS 4096

typedef struct cuda_backend {
	int device;
	struct cudaDeviceProp prop;
	cuda_variant_attr variants[MAX_VARIANTS];
	int nvariants;
	gpud_pool *pool;
	cudaStream_t streams[MAX_STREAMS];
	int nstreams;
	cudaEvent_t free_events[MAX_EVENTS]; /* loop only */
	int nfree_events;
	uv_async_t done_async; /* completions from CUDA's callback thread */
	pthread_mutex_t done_lock;
	struct cuda_job *done_head;
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
static void on_done_async(uv_async_t *h);

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
	for (cb->nstreams = 0; cb->nstreams < cfg->streams; cb->nstreams++)
		OPEN_CHECK(cudaStreamCreateWithFlags(&cb->streams[cb->nstreams],
						     cudaStreamNonBlocking),
			   "cudaStreamCreateWithFlags");

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
	/* Last: once the loop has this handle, the backend must be closed to free it. */
	pthread_mutex_init(&cb->done_lock, NULL);
	uv_async_init(b->loop, &cb->done_async, on_done_async);
	cb->done_async.data = cb;
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

static void free_backend(uv_handle_t *h)
{
	free(h->data);
}

static void cuda_close(gpud_backend *b)
{
	cuda_backend *cb = b->impl;
	if (cb == NULL)
		return;
	if (!atomic_load(&cb->lost)) {
		cudaDeviceSynchronize();
		for (int i = 0; i < cb->nfree_events; i++)
			cudaEventDestroy(cb->free_events[i]);
		for (int i = 0; i < cb->nstreams; i++)
			cudaStreamDestroy(cb->streams[i]);
		pool_destroy(cb->pool);
	}
	b->impl = NULL;
	uv_close((uv_handle_t *)&cb->done_async, free_backend); /* frees cb */
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

/* --- streams and completions --------------------------------------------------- */

/*
 * Each session's work goes to one stream of a fixed set (queue id modulo the
 * set's size): one session's operations run in order, different sessions'
 * overlap. Completions come back through cudaStreamAddCallback, which (unlike
 * cudaLaunchHostFunc) is called also after a device error, with the error;
 * the callback only queues the job for the loop.
 */
static cudaStream_t queue_stream(cuda_backend *cb, uint32_t queue)
{
	return cb->streams[queue % (uint32_t)cb->nstreams];
}

/* Keeps up to MAX_EVENTS idle events for reuse; destroys the rest. */
static void put_event(cuda_backend *cb, cudaEvent_t ev)
{
	if (cb->nfree_events < MAX_EVENTS)
		cb->free_events[cb->nfree_events++] = ev;
	else
		cudaEventDestroy(ev);
}

typedef struct cuda_job {
	uv_work_t work;
	gpud_backend *b;
	enum { JOB_H2D, JOB_D2H, JOB_RUN, JOB_SYNC } kind;
	cudaStream_t stream;
	void *dst;
	const void *src;
	size_t len;
	cudaEvent_t ev[2]; /* runs: around the kernel */
	double *kernel_us;
	backend_done_fn done;
	void *arg;
	int status;
	cudaError_t cuda_status;
	char msg[512];
	struct cuda_job *next;
} cuda_job;

static cuda_job *job_new(gpud_backend *b, int kind, cudaStream_t s, backend_done_fn done,
			 void *arg)
{
	cuda_job *j = calloc(1, sizeof(*j));
	if (j == NULL)
		return NULL;
	j->b = b;
	j->kind = kind;
	j->stream = s;
	j->done = done;
	j->arg = arg;
	j->work.data = j;
	return j;
}

/* Finishes a job on the loop: report, free, and surface a lost context. */
static void job_finish(cuda_job *j, int status, const char *msg)
{
	gpud_backend *b = j->b;
	cuda_backend *cb = b->impl;
	char m[512];
	snprintf(m, sizeof(m), "%s", msg ? msg : "");
	if (j->kind == JOB_RUN) {
		put_event(cb, j->ev[0]);
		put_event(cb, j->ev[1]);
	}
	backend_done_fn done = j->done;
	void *arg = j->arg;
	free(j);
	done(arg, status, status ? m : NULL);
	check_fatal(b);
}

/* CUDA's callback thread: hand the job to the loop. */
static void CUDART_CB on_stream_done(cudaStream_t s, cudaError_t status, void *arg)
{
	cuda_job *j = arg;
	cuda_backend *cb = j->b->impl;
	j->cuda_status = status;
	pthread_mutex_lock(&cb->done_lock);
	j->next = cb->done_head;
	cb->done_head = j;
	pthread_mutex_unlock(&cb->done_lock);
	uv_async_send(&cb->done_async);
}

static void on_done_async(uv_async_t *h)
{
	cuda_backend *cb = h->data;
	pthread_mutex_lock(&cb->done_lock);
	cuda_job *j = cb->done_head, *next;
	cb->done_head = NULL;
	pthread_mutex_unlock(&cb->done_lock);
	for (; j; j = next) {
		next = j->next;
		char msg[512];
		if (j->cuda_status != cudaSuccess) {
			cuda_fail(j->cuda_status, j->kind == JOB_RUN ? "kernel" : "stream", msg,
				  sizeof(msg));
			job_finish(j, note_error(cb, j->cuda_status, msg), msg);
			continue;
		}
		if (j->kind == JOB_RUN) {
			float ms = 0;
			/* Both events have completed: this does not wait. */
			cudaEventElapsedTime(&ms, j->ev[0], j->ev[1]);
			*j->kernel_us = (double)ms * 1e3;
		}
		job_finish(j, 0, NULL);
	}
}

/* Enqueues the completion callback; on failure finishes the job with the error. */
static int enqueue_done(cuda_backend *cb, cuda_job *j, char *err, size_t errlen)
{
	cudaError_t e = cudaStreamAddCallback(j->stream, on_stream_done, j, 0);
	if (e != cudaSuccess) {
		cuda_fail(e, "cudaStreamAddCallback", err, errlen);
		return note_error(cb, e, err);
	}
	return 0;
}

/* --- copies: pageable memory, so on the pool's threads ------------------------------ */

/*
 * The payload lives in a received message (pageable): cudaMemcpyAsync from
 * pageable memory returns only once the data is staged, so it must not run
 * on the loop. A worker issues it on the session's stream and waits.
 */
static void copy_work(uv_work_t *w)
{
	cuda_job *j = w->data;
	cuda_backend *cb = j->b->impl;
	cudaError_t e;
	const char *call = "cudaSetDevice";

	if (atomic_load(&cb->lost)) {
		j->status = lost_error(cb, j->msg, sizeof(j->msg));
		return;
	}
	if ((e = cudaSetDevice(cb->device)) == cudaSuccess) {
		call = "cudaMemcpyAsync";
		e = cudaMemcpyAsync(j->dst, j->src, j->len,
				    j->kind == JOB_H2D ? cudaMemcpyHostToDevice
						       : cudaMemcpyDeviceToHost,
				    j->stream);
	}
	if (e == cudaSuccess) {
		call = "cudaStreamSynchronize (copy)";
		e = cudaStreamSynchronize(j->stream);
	}
	if (e != cudaSuccess) {
		cuda_fail(e, call, j->msg, sizeof(j->msg));
		j->status = note_error(cb, e, j->msg);
	}
}

static void copy_after(uv_work_t *w, int status)
{
	cuda_job *j = w->data;
	if (status != 0)
		job_finish(j, GPUD__STATUS__STATUS_INTERNAL, "cuda backend: copy cancelled");
	else
		job_finish(j, j->status, j->msg);
}

static int submit_copy(gpud_backend *b, int kind, uint32_t queue, void *dst, const void *src,
		       size_t len, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	if (atomic_load(&cb->lost))
		return lost_error(cb, err, errlen);
	cuda_job *j = job_new(b, kind, queue_stream(cb, queue), done, arg);
	if (j == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return GPUD__STATUS__STATUS_OUT_OF_MEMORY;
	}
	j->dst = dst;
	j->src = src;
	j->len = len;
	uv_queue_work(b->loop, &j->work, copy_work, copy_after);
	return 0;
}

static int cuda_upload(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		       backend_done_fn done, void *arg, char *err, size_t errlen)
{
	return submit_copy(b, JOB_H2D, queue, dst, src, len, done, arg, err, errlen);
}

static int cuda_download(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
			 backend_done_fn done, void *arg, char *err, size_t errlen)
{
	return submit_copy(b, JOB_D2H, queue, dst, src, len, done, arg, err, errlen);
}

/* --- kernels: launched from the loop (asynchronous), completed by callback ------------ */

static int take_event(cuda_backend *cb, cudaEvent_t *ev, char *err, size_t errlen)
{
	if (cb->nfree_events > 0) {
		*ev = cb->free_events[--cb->nfree_events];
		return 0;
	}
	cudaError_t e = cudaEventCreate(ev);
	if (e != cudaSuccess) {
		cuda_fail(e, "cudaEventCreate", err, errlen);
		return note_error(cb, e, err);
	}
	return 0;
}

static int cuda_run(gpud_backend *b, uint32_t queue, const kernel_def *k, const kernel_args *a,
		    double *kernel_us, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	const cuda_kernel *ck = cuda_kernel_find(k->name);
	int rv;

	if (ck == NULL) {
		snprintf(err, errlen, "kernel %s has no CUDA implementation", k->name);
		return GPUD__STATUS__STATUS_UNSUPPORTED;
	}
	if (atomic_load(&cb->lost))
		return lost_error(cb, err, errlen);
	cuda_job *j = job_new(b, JOB_RUN, queue_stream(cb, queue), done, arg);
	if (j == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return GPUD__STATUS__STATUS_OUT_OF_MEMORY;
	}
	j->kernel_us = kernel_us;
	if ((rv = take_event(cb, &j->ev[0], err, errlen)) != 0) {
		free(j);
		return rv;
	}
	if ((rv = take_event(cb, &j->ev[1], err, errlen)) != 0) {
		put_event(cb, j->ev[0]);
		free(j);
		return rv;
	}
	cuda_launch_ctx lc = {.stream = j->stream,
			      .sm_count = cb->prop.multiProcessorCount,
			      .device = cb->device};
	cudaError_t e = cudaEventRecord(j->ev[0], j->stream);
	if (e != cudaSuccess)
		rv = note_error(cb, e, (cuda_fail(e, "cudaEventRecord", err, errlen), err));
	else if (ck->launch(a, &lc, err, errlen) != 0)
		rv = note_error(cb, cudaGetLastError(), err);
	else if ((e = cudaEventRecord(j->ev[1], j->stream)) != cudaSuccess)
		rv = note_error(cb, e, (cuda_fail(e, "cudaEventRecord", err, errlen), err));
	else
		rv = enqueue_done(cb, j, err, errlen);
	if (rv != 0) {
		/* Nothing will call back: undo here. The kernel, if launched, still
		 * reads the buffers, so wait for the stream before they can go. */
		cudaStreamSynchronize(j->stream);
		put_event(cb, j->ev[0]);
		put_event(cb, j->ev[1]);
		free(j);
		check_fatal(b);
	}
	return rv;
}

static int cuda_sync(gpud_backend *b, uint32_t queue, backend_done_fn done, void *arg, char *err,
		     size_t errlen)
{
	cuda_backend *cb = b->impl;
	if (atomic_load(&cb->lost))
		return lost_error(cb, err, errlen);
	cuda_job *j = job_new(b, JOB_SYNC, queue_stream(cb, queue), done, arg);
	if (j == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return GPUD__STATUS__STATUS_OUT_OF_MEMORY;
	}
	int rv = enqueue_done(cb, j, err, errlen);
	if (rv != 0)
		free(j);
	return rv;
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
	.sync = cuda_sync,
	.devices = cuda_devices,
	.variants = cuda_variants,
	.pool_stats = cuda_pool_stats,
};
