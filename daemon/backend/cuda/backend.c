/*
 * daemon/backend_cuda.c — the cuda backend: one CUDA context on the
 * configured device, created at start together with every built-in kernel
 * (embedded fatbin, loaded and run once before gpud answers as ready).
 *
 * Buffers are device memory from the pool (daemon/pool.h). Each session's
 * copies and kernels go to its stream and are launched from the loop
 * (pageable copies are staged by workers, see "copies"); completions come
 * back to the loop through events. The loop never waits for the GPU: calls
 * that can block are marked OFF_LOOP and checked.
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
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "daemon/backend/backend.h"
#include "daemon/log.h"
#include "daemon/backend/cuda/pool.h"
#include "daemon/backend/cuda/nvrtc.h"
#include "kernels/core/cuda_check.h"
#include "kernels/custom/custom.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/core/cuda_selftest.h"
#include "kernels/core/libs.h"
#include "proto/wire.h"

#define MAX_VARIANTS 32
#define MAX_STREAMS 256
#define MAX_EVENTS 4096

#define MAX_STAGING 1024

/* A stream's handles of the libraries kernels call (kernels/libs.h). */
typedef struct stream_libs {
	void *blas;    /* cublasHandle_t, bound to the stream */
	void *blas_ws; /* its workspace: device memory of its own */
	void *rng;     /* curandGenerator_t, Philox4_32_10, bound to the stream */
} stream_libs;

typedef struct cuda_backend {
	int device;
	struct cudaDeviceProp prop;
	cuda_variant_attr variants[MAX_VARIANTS];
	int nvariants;
	const cuda_kernel *kernels[KERNEL_COUNT]; /* by kernel_def.id, bound at open */
	gpud_pool *pool;
	cudaStream_t streams[MAX_STREAMS];
	int nstreams;
	stream_libs libs[MAX_STREAMS];
	size_t blas_ws_bytes;
	char blas_why[768], rng_why[768]; /* why there are no handles */
	pthread_t preload;                /* loads cuBLAS and cuRAND while the context is made */
	int preload_started;
	cudaEvent_t free_events[MAX_EVENTS]; /* loop only */
	int nfree_events;
	uv_async_t done_async; /* completions from CUDA's callback thread */
	uv_idle_t poll_idle;   /* polls end events while jobs are young */
	struct cuda_job *poll_head;
	pthread_t waiter; /* then this thread does */
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	struct cuda_job *wait_head;
	int wait_stop, waiter_started;
	uint64_t poll_ns;
	int handles_open;
	pthread_mutex_t done_lock;
	struct cuda_job *done_head;
	/* pinned staging buffers for pageable copies */
	void *stage[MAX_STAGING];
	cudaEvent_t stage_ev[MAX_STAGING];
	int stage_free[MAX_STAGING];
	int stage_inflight_[MAX_STAGING]; /* its DMA runs until stage_ev */
	int nstage, nstage_free;
	size_t stage_chunk;
	pthread_mutex_t stage_lock;
	pthread_cond_t stage_cond;
	_Atomic uint64_t bytes_staged;
	atomic_int frees_pending; /* uncached frees running on workers */
	atomic_int lost;          /* a sticky error happened */
	char lost_msg[512];
	int fatal_reported;
} cuda_backend;

/*
 * The loop must never wait for the GPU. Every call that can block (a stream
 * or event synchronise, a pageable copy, pinning) is marked OFF_LOOP; on the
 * loop thread that is a bug: a debug build (GPUD_DEBUG_LOOP, `make
 * LOOP_CHECK=1`, used by `make test-gpu`) aborts, a release build logs it.
 */
static pthread_t loop_thread;
static atomic_int loop_thread_set;
#ifndef GPUD_DEBUG_LOOP
static atomic_int loop_violations;
#endif

static void off_loop(const char *what)
{
	if (!atomic_load(&loop_thread_set) || !pthread_equal(pthread_self(), loop_thread))
		return;
#ifdef GPUD_DEBUG_LOOP
	log_error("blocking CUDA work (%s) on the loop thread", what);
	abort();
#else
	if (atomic_fetch_add(&loop_violations, 1) == 0)
		log_error("blocking CUDA work (%s) on the loop thread", what);
#endif
}
#define OFF_LOOP(what) off_loop(what)

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
static void stage_put(struct cuda_backend *cb, int idx);
static void *waiter_main(void *arg);
static int custom_launch(struct cuda_backend *cb, const custom_kernel *k, const kernel_args *a,
			 cudaStream_t stream, char *err, size_t errlen);

/* --- library handles: one cuBLAS handle and one cuRAND generator per stream ---------------
 *
 * Made when the backend opens, never on a run: creating a handle, its
 * workspace (cudaMalloc) and a generator can wait for the device. Each is
 * bound to its stream once (cublasSetStream, then cublasSetWorkspace, since
 * setting the stream resets the workspace; curandSetStream), so a run only
 * enqueues work. A library that cannot be loaded leaves every stream without
 * its handle: gpud serves the other kernels, and runs of those that need it
 * answer why.
 */

/* dlopen of cuBLAS (hundreds of MB) overlaps the context's creation. */
static void *libs_preload(void *arg)
{
	(void)arg;
	libs_get_cublas(NULL, 0);
	libs_get_curand(NULL, 0);
	return NULL;
}

static void libs_close(cuda_backend *cb)
{
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
		memset(l, 0, sizeof(*l));
	}
}

static void libs_open(cuda_backend *cb)
{
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

/* The launch context of stream idx, with its library handles. */
static cuda_launch_ctx stream_ctx(cuda_backend *cb, int idx)
{
	return (cuda_launch_ctx){.stream = cb->streams[idx],
				 .sm_count = cb->prop.multiProcessorCount,
				 .device = cb->device,
				 .blas = cb->libs[idx].blas,
				 .rng = cb->libs[idx].rng,
				 .blas_why = cb->blas_why,
				 .rng_why = cb->rng_why};
}

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
	if (pthread_create(&cb->preload, NULL, libs_preload, NULL) == 0)
		cb->preload_started = 1;
	/* Copies and runs wait for the GPU on libuv's pool; size it before first use. */
	char threads[16];
	snprintf(threads, sizeof(threads), "%d", cfg->cpu_threads < 4 ? 4 : cfg->cpu_threads);
	setenv("UV_THREADPOOL_SIZE", threads, 1);
	uint64_t t0 = uv_hrtime();
#define OPEN_CHECK(call, name)                                                                     \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			cuda_fail(e_, (name), err, errlen);                                        \
			goto fail;                                                                 \
		}                                                                                  \
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
	pthread_mutex_init(&cb->stage_lock, NULL);
	pthread_cond_init(&cb->stage_cond, NULL);
	cb->stage_chunk = (size_t)cfg->staging_chunk;
	for (int i = 0; i < cfg->staging_buffers && i < MAX_STAGING; i++) {
		OPEN_CHECK(cudaHostAlloc(&cb->stage[i], cb->stage_chunk, cudaHostAllocDefault),
			   "cudaHostAlloc (staging)");
		cb->nstage++;
		OPEN_CHECK(cudaEventCreateWithFlags(&cb->stage_ev[i], cudaEventDisableTiming),
			   "cudaEventCreate (staging)");
		cb->stage_free[cb->nstage_free++] = i;
	}

	if (cb->preload_started) {
		pthread_join(cb->preload, NULL);
		cb->preload_started = 0;
	}
	libs_open(cb);

	cuda_launch_ctx lc = {.stream = cudaStreamPerThread,
			      .sm_count = cb->prop.multiProcessorCount,
			      .device = cb->device};
	size_t nk;
	const cuda_kernel *const *ks = cuda_kernel_list(&nk);
	const kernel_def *const *kd = kernel_list(&nk);
	if (cuda_kernel_tables_check(err, errlen) != 0)
		goto fail;
	for (size_t i = 0; i < nk; i++) {
		char kerr[1024];
		cb->kernels[i] = ks[i];
		/* The self-test is the warm-up; kernels calling a library run it on
		 * every stream, with its handles (skipped without them: runs say why). */
		for (int s = 0; s < (ks[i]->per_stream ? cb->nstreams : 1); s++) {
			cuda_launch_ctx ls = ks[i]->per_stream ? stream_ctx(cb, s) : lc;
			int rv = kernel_selftest(kd[i], ks[i], &ls, kerr, sizeof(kerr));
			if (rv < 0) {
				snprintf(err, errlen,
					 "self-test of kernel %s failed (stream %d): %s",
					 ks[i]->name, s, kerr);
				goto fail;
			}
			if (rv > 0)
				break;
		}
		if (ks[i]->attributes == NULL) /* library code (CUB, cuBLAS, cuRAND) */
			continue;
		int n = ks[i]->attributes(cb->variants + cb->nvariants,
					  MAX_VARIANTS - cb->nvariants, kerr, sizeof(kerr));
		if (n < 0) {
			snprintf(err, errlen, "kernel %s: %s", ks[i]->name, kerr);
			goto fail;
		}
		cb->nvariants += n;
	}
	uint64_t t_warm = uv_hrtime();
	loop_thread = pthread_self(); /* open runs on the loop */
	atomic_store(&loop_thread_set, 1);
	/* Last: once the loop has this handle, the backend must be closed to free it. */
	pthread_mutex_init(&cb->done_lock, NULL);
	uv_async_init(b->loop, &cb->done_async, on_done_async);
	cb->done_async.data = cb;
	uv_idle_init(b->loop, &cb->poll_idle);
	cb->poll_idle.data = cb;
	cb->handles_open = 2;
	pthread_mutex_init(&cb->wait_lock, NULL);
	pthread_cond_init(&cb->wait_cond, NULL);
	if (pthread_create(&cb->waiter, NULL, waiter_main, cb) == 0)
		cb->waiter_started = 1;
	else
		log_warn("cuda backend: no waiter thread; jobs complete by polling only");
	cb->poll_ns = (uint64_t)cfg->poll_us * 1000u;
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
	if (cb->preload_started)
		pthread_join(cb->preload, NULL);
	libs_close(cb);
	for (int i = 0; i < cb->nstage; i++) {
		cudaFreeHost(cb->stage[i]);
		if (cb->stage_ev[i])
			cudaEventDestroy(cb->stage_ev[i]);
	}
	pool_destroy(cb->pool);
	free(cb);
	b->impl = NULL;
	return -1;
}

static void free_backend(uv_handle_t *h)
{
	cuda_backend *cb = h->data;
	if (--cb->handles_open == 0)
		free(cb);
}

static void cuda_close(gpud_backend *b)
{
	cuda_backend *cb = b->impl;
	if (cb == NULL)
		return;
	/* Frees handed to workers use the pool: let them finish first. */
	while (atomic_load(&cb->frees_pending) > 0)
		usleep(1000);
	if (cb->waiter_started) {
		pthread_mutex_lock(&cb->wait_lock);
		cb->wait_stop = 1;
		pthread_cond_signal(&cb->wait_cond);
		pthread_mutex_unlock(&cb->wait_lock);
		pthread_join(cb->waiter, NULL);
	}
	if (!atomic_load(&cb->lost)) {
		cudaDeviceSynchronize();
		for (int i = 0; i < cb->nstage; i++) {
			cudaFreeHost(cb->stage[i]);
			cudaEventDestroy(cb->stage_ev[i]);
		}
		for (int i = 0; i < cb->nfree_events; i++)
			cudaEventDestroy(cb->free_events[i]);
		libs_close(cb);
		for (int i = 0; i < cb->nstreams; i++)
			cudaStreamDestroy(cb->streams[i]);
		pool_destroy(cb->pool);
	}
	b->impl = NULL;
	uv_close((uv_handle_t *)&cb->done_async, free_backend); /* the last frees cb */
	uv_close((uv_handle_t *)&cb->poll_idle, free_backend);
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
	snprintf(err, errlen, "the CUDA context is lost (%.400s); gpud is restarting",
		 cb->lost_msg);
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

typedef struct free_job {
	uv_work_t work;
	cuda_backend *cb;
	void *mem;
} free_job;

static void free_work(uv_work_t *w)
{
	free_job *f = w->data;
	char msg[256];
	if (pool_free(f->cb->pool, f->mem, msg, sizeof(msg)) != 0) {
		log_error("%s", msg);
		note_error(f->cb, cudaGetLastError(), msg);
	}
	atomic_fetch_sub(&f->cb->frees_pending, 1);
}

static void free_after(uv_work_t *w, int status)
{
	free(w->data);
}

/*
 * A block the pool keeps goes back on the loop (no CUDA call). One it would
 * give back to CUDA (over the top bin, or the cache is full) means cudaFree,
 * which waits for the whole device: that happens on a worker.
 */
static void cuda_free(gpud_backend *b, void *mem)
{
	cuda_backend *cb = b->impl;
	char msg[256];
	free_job *f;
	if (atomic_load(&cb->lost))
		return; /* the context is gone; so is its memory */
	if (!pool_free_is_cached(cb->pool, mem) && (f = malloc(sizeof(*f))) != NULL) {
		*f = (free_job){.cb = cb, .mem = mem};
		f->work.data = f;
		atomic_fetch_add(&cb->frees_pending, 1);
		uv_queue_work(b->loop, &f->work, free_work, free_after);
		return;
	}
	if (pool_free(cb->pool, mem, msg, sizeof(msg)) != 0) {
		log_error("%s", msg);
		note_error(cb, cudaGetLastError(), msg);
	}
}

/* --- streams and completions --------------------------------------------------- */

/*
 * Each session's work goes to one stream of a fixed set (queue id modulo the
 * set's size): one session's operations run in order, different sessions'
 * overlap. Every job ends with an event; see "Completion" below.
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
	int stage_idx;     /* a small download: the staging buffer it lands in */
	double *kernel_us;
	backend_done_fn done;
	void *arg;
	int status;
	cudaError_t cuda_status;
	char msg[512];
	struct cuda_job *next;
	/* Completion: its end event, polled by the loop while young, then by
	 * the waiter thread (below). */
	int completed, has_end_ev;
	uint64_t poll_start;
	struct cuda_job *pprev, *pnext; /* the poll list (loop) or the waiter's */
} cuda_job;

static cuda_job *job_new(gpud_backend *b, int kind, cudaStream_t s, backend_done_fn done, void *arg)
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
	j->stage_idx = -1;
	return j;
}

/* Reports a job's outcome, once (from its end event or a worker). */
static void job_complete(cuda_job *j, int status, const char *msg)
{
	gpud_backend *b = j->b;
	cuda_backend *cb = b->impl;
	if (j->completed)
		return;
	j->completed = 1;
	if (j->stage_idx >= 0) {
		/* A small download: out of its staging buffer, on the loop. */
		if (status == 0 && j->kind == JOB_D2H)
			memcpy(j->dst, cb->stage[j->stage_idx], j->len);
		stage_put(cb, j->stage_idx);
		j->stage_idx = -1;
	}
	if (j->kind == JOB_RUN && status == 0) {
		float ms = 0;
		/* Both events have completed: this does not wait. */
		cudaEventElapsedTime(&ms, j->ev[0], j->ev[1]);
		*j->kernel_us = (double)ms * 1e3;
	}
	j->done(j->arg, status, status ? (msg ? msg : "") : NULL);
	check_fatal(b);
}

/* Finishes a job on the loop: report, free, and surface a lost context. */
static void job_finish(cuda_job *j, int status, const char *msg)
{
	cuda_backend *cb = j->b->impl;
	job_complete(j, status, msg);
	if (j->kind == JOB_RUN)
		put_event(cb, j->ev[0]);
	if (j->kind == JOB_RUN || j->has_end_ev)
		put_event(cb, j->ev[1]);
	free(j);
}

/* On the loop: the job's end event said e (done, or an error). */
static void job_event_done(cuda_backend *cb, cuda_job *j, cudaError_t e)
{
	char msg[512];
	if (e == cudaSuccess) {
		job_finish(j, 0, NULL);
		return;
	}
	cuda_fail(e, j->kind == JOB_RUN ? "kernel" : "stream", msg, sizeof(msg));
	job_finish(j, note_error(cb, e, msg), msg);
}

/*
 * Completion without stream callbacks. A callback (cudaStreamAddCallback,
 * cudaLaunchHostFunc) stalls its stream until the host has run it, tens of
 * microseconds per operation; an event does not. Every job ends with an
 * event. For poll_us after it is enqueued the loop asks that event on every
 * turn (cudaEventQuery never waits) and completes the job the moment it is
 * done; the loop spins meanwhile. Older jobs go to the waiter thread, which
 * asks its events with a backoff of up to WAITER_MAX_SLEEP_US and hands the
 * finished ones to the loop.
 */
#define WAITER_MAX_SLEEP_US 1000

static void list_remove(cuda_job **head, cuda_job *j)
{
	if (j->pprev)
		j->pprev->pnext = j->pnext;
	else
		*head = j->pnext;
	if (j->pnext)
		j->pnext->pprev = j->pprev;
	j->pprev = j->pnext = NULL;
}

static void list_push(cuda_job **head, cuda_job *j)
{
	j->pprev = NULL;
	j->pnext = *head;
	if (*head)
		(*head)->pprev = j;
	*head = j;
}

static void to_waiter(cuda_backend *cb, cuda_job *j)
{
	pthread_mutex_lock(&cb->wait_lock);
	list_push(&cb->wait_head, j);
	pthread_cond_signal(&cb->wait_cond);
	pthread_mutex_unlock(&cb->wait_lock);
}

static void on_poll(uv_idle_t *h)
{
	cuda_backend *cb = h->data;
	uint64_t now = uv_hrtime();
	for (cuda_job *j = cb->poll_head, *next; j; j = next) {
		next = j->pnext;
		cudaError_t e = cudaEventQuery(j->ev[1]);
		if (e == cudaErrorNotReady) {
			if (now - j->poll_start > cb->poll_ns) {
				list_remove(&cb->poll_head, j);
				to_waiter(cb, j);
			}
			continue;
		}
		list_remove(&cb->poll_head, j);
		job_event_done(cb, j, e);
	}
	if (cb->poll_head == NULL)
		uv_idle_stop(&cb->poll_idle);
}

/* The waiter thread: old jobs' events, asked in turn; finished ones to the loop. */
static void *waiter_main(void *arg)
{
	cuda_backend *cb = arg;
	useconds_t nap = 10;

	cudaSetDevice(cb->device);
	pthread_mutex_lock(&cb->wait_lock);
	for (;;) {
		while (cb->wait_head == NULL && !cb->wait_stop)
			pthread_cond_wait(&cb->wait_cond, &cb->wait_lock);
		if (cb->wait_head == NULL && cb->wait_stop)
			break;
		int finished = 0;
		for (cuda_job *j = cb->wait_head, *next; j; j = next) {
			next = j->pnext;
			cudaError_t e = cudaEventQuery(j->ev[1]);
			if (e == cudaErrorNotReady)
				continue;
			list_remove(&cb->wait_head, j);
			j->cuda_status = e;
			pthread_mutex_lock(&cb->done_lock);
			j->next = cb->done_head;
			cb->done_head = j;
			pthread_mutex_unlock(&cb->done_lock);
			finished++;
		}
		if (finished) {
			uv_async_send(&cb->done_async);
			nap = 10;
			continue;
		}
		pthread_mutex_unlock(&cb->wait_lock);
		usleep(nap);
		nap = nap * 2 > WAITER_MAX_SLEEP_US ? WAITER_MAX_SLEEP_US : nap * 2;
		pthread_mutex_lock(&cb->wait_lock);
	}
	pthread_mutex_unlock(&cb->wait_lock);
	return NULL;
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
		job_event_done(cb, j, j->cuda_status);
	}
}

static int take_event(cuda_backend *cb, cudaEvent_t *ev, char *err, size_t errlen);

/* Records the job's end event and starts watching it; 0 or a status with err. */
static int enqueue_done(cuda_backend *cb, cuda_job *j, char *err, size_t errlen)
{
	int rv;
	if (j->kind != JOB_RUN) {
		/* Runs have their end event; other jobs get one. */
		if ((rv = take_event(cb, &j->ev[1], err, errlen)) != 0)
			return rv;
		j->has_end_ev = 1;
		cudaError_t e = cudaEventRecord(j->ev[1], j->stream);
		if (e != cudaSuccess) {
			put_event(cb, j->ev[1]);
			j->has_end_ev = 0;
			cuda_fail(e, "cudaEventRecord", err, errlen);
			return note_error(cb, e, err);
		}
	}
	j->poll_start = uv_hrtime();
	if (cb->poll_ns == 0) {
		to_waiter(cb, j);
		return 0;
	}
	list_push(&cb->poll_head, j);
	uv_idle_start(&cb->poll_idle, on_poll);
	return 0;
}

/* --- copies ------------------------------------------------------------------------------
 *
 * Three paths, by where the host bytes live:
 *  - pinned (a page-locked host region): cudaMemcpyAsync straight from the
 *    loop; it only enqueues the DMA.
 *  - small (<= SMALL_COPY) pageable bytes: staged through one pinned staging
 *    buffer on the loop (a memcpy of a few microseconds), then as above.
 *  - larger pageable bytes (a message payload): a worker streams them through
 *    the staging buffers in chunks, double-buffered: while chunk i is in
 *    flight to (or from) the device, the worker copies chunk i+1 into (or
 *    chunk i-1 out of) another buffer. Uploads release each buffer from a
 *    stream callback once its DMA is done; downloads wait for the chunk's
 *    event on the worker.
 * A pageable cudaMemcpyAsync would block its caller until the bytes are
 * staged by the driver; none is issued anywhere.
 */
#define SMALL_COPY (64u << 10)

/* Under stage_lock: buffers whose DMA has finished become free again. */
static void stage_reclaim(cuda_backend *cb)
{
	for (int i = 0; i < cb->nstage; i++) {
		if (cb->stage_inflight_[i] &&
		    cudaEventQuery(cb->stage_ev[i]) != cudaErrorNotReady) {
			cudaGetLastError(); /* an error here also shows on the job's own event */
			cb->stage_inflight_[i] = 0;
			cb->stage_free[cb->nstage_free++] = i;
		}
	}
}

/*
 * A staging buffer, or -1 if none is free and !wait. Buffers whose DMA is in
 * flight are reclaimed when their event says so; a waiting caller (a worker,
 * never the loop) sleeps on one of those events, or for another caller's
 * put.
 */
static int stage_take(cuda_backend *cb, int wait)
{
	pthread_mutex_lock(&cb->stage_lock);
	for (;;) {
		if (cb->nstage_free == 0)
			stage_reclaim(cb);
		if (cb->nstage_free > 0) {
			int idx = cb->stage_free[--cb->nstage_free];
			pthread_mutex_unlock(&cb->stage_lock);
			return idx;
		}
		if (!wait)
			break;
		int victim = -1;
		for (int i = 0; i < cb->nstage && victim < 0; i++)
			if (cb->stage_inflight_[i])
				victim = i;
		if (victim < 0) {
			pthread_cond_wait(&cb->stage_cond, &cb->stage_lock);
			continue;
		}
		cudaEvent_t ev = cb->stage_ev[victim];
		pthread_mutex_unlock(&cb->stage_lock);
		OFF_LOOP("waiting for a staging buffer");
		cudaEventSynchronize(ev);
		pthread_mutex_lock(&cb->stage_lock);
	}
	pthread_mutex_unlock(&cb->stage_lock);
	return -1;
}

static void stage_put(cuda_backend *cb, int idx)
{
	pthread_mutex_lock(&cb->stage_lock);
	cb->stage_free[cb->nstage_free++] = idx;
	pthread_cond_signal(&cb->stage_cond);
	pthread_mutex_unlock(&cb->stage_lock);
}

/* Enqueues host->device of one staged chunk; the buffer is free again when
 * its event has passed. */
static cudaError_t stage_h2d(cuda_backend *cb, int idx, void *dst, size_t n, cudaStream_t st,
			     const char **call)
{
	cudaError_t e;
	*call = "cudaMemcpyAsync (staged)";
	if ((e = cudaMemcpyAsync(dst, cb->stage[idx], n, cudaMemcpyHostToDevice, st)) ==
	    cudaSuccess) {
		*call = "cudaEventRecord (staging)";
		e = cudaEventRecord(cb->stage_ev[idx], st);
	}
	if (e != cudaSuccess) {
		/* The copy may still read the buffer: an error path, wait. */
		cudaStreamSynchronize(st);
		stage_put(cb, idx);
		return e;
	}
	atomic_fetch_add(&cb->bytes_staged, n);
	pthread_mutex_lock(&cb->stage_lock);
	cb->stage_inflight_[idx] = 1;
	pthread_cond_signal(&cb->stage_cond);
	pthread_mutex_unlock(&cb->stage_lock);
	return cudaSuccess;
}

/* Worker: a pageable upload through the staging buffers. */
static void staged_upload_work(uv_work_t *w)
{
	cuda_job *j = w->data;
	cuda_backend *cb = j->b->impl;
	const char *call = "cudaSetDevice";
	cudaError_t e = cudaSetDevice(cb->device);

	OFF_LOOP("staged upload");
	for (size_t off = 0; e == cudaSuccess && off < j->len; off += cb->stage_chunk) {
		size_t n = j->len - off < cb->stage_chunk ? j->len - off : cb->stage_chunk;
		int idx = stage_take(cb, 1);
		memcpy(cb->stage[idx], (const char *)j->src + off, n);
		e = stage_h2d(cb, idx, (char *)j->dst + off, n, j->stream, &call);
	}
	if (e != cudaSuccess) {
		cuda_fail(e, call, j->msg, sizeof(j->msg));
		j->status = note_error(cb, e, j->msg);
		/* Chunks already enqueued write into the buffer: let them finish
		 * before the request lets go of it. */
		cudaStreamSynchronize(j->stream);
	}
}

/* Worker: a pageable download through the staging buffers. Chunk i's DMA
 * is in flight while chunk i-1 is copied out; one extra turn drains the last. */
static void staged_download_work(uv_work_t *w)
{
	cuda_job *j = w->data;
	cuda_backend *cb = j->b->impl;
	const char *call = "cudaSetDevice";
	cudaError_t e = cudaSetDevice(cb->device);
	size_t chunk = cb->stage_chunk, nchunks = (j->len + chunk - 1) / chunk;
	int prev = -1, cur = -1;
	size_t prev_off = 0, prev_n = 0;

	OFF_LOOP("staged download");
	for (size_t i = 0; i <= nchunks && e == cudaSuccess; i++) {
		size_t off = i * chunk, n = 0;
		cur = -1;
		if (i < nchunks) {
			n = j->len - off < chunk ? j->len - off : chunk;
			/* Never hold one buffer while waiting for another. */
			if ((cur = stage_take(cb, 0)) < 0 && prev >= 0) {
				call = "cudaEventSynchronize";
				if ((e = cudaEventSynchronize(cb->stage_ev[prev])) != cudaSuccess)
					break;
				memcpy((char *)j->dst + prev_off, cb->stage[prev], prev_n);
				stage_put(cb, prev);
				prev = -1;
			}
			if (cur < 0)
				cur = stage_take(cb, 1);
			call = "cudaMemcpyAsync (staged)";
			e = cudaMemcpyAsync(cb->stage[cur], (const char *)j->src + off, n,
					    cudaMemcpyDeviceToHost, j->stream);
			if (e == cudaSuccess) {
				call = "cudaEventRecord";
				e = cudaEventRecord(cb->stage_ev[cur], j->stream);
			}
			if (e != cudaSuccess)
				break;
			atomic_fetch_add(&cb->bytes_staged, n);
		}
		if (prev >= 0) {
			call = "cudaEventSynchronize";
			if ((e = cudaEventSynchronize(cb->stage_ev[prev])) != cudaSuccess)
				break;
			memcpy((char *)j->dst + prev_off, cb->stage[prev], prev_n);
			stage_put(cb, prev);
		}
		prev = cur;
		prev_off = off;
		prev_n = n;
	}
	if (e != cudaSuccess) {
		/* Whatever is enqueued must finish before its buffers are reused. */
		cudaStreamSynchronize(j->stream);
		if (cur >= 0)
			stage_put(cb, cur);
		if (prev >= 0 && prev != cur)
			stage_put(cb, prev);
		cuda_fail(e, call, j->msg, sizeof(j->msg));
		j->status = note_error(cb, e, j->msg);
	}
}

static void staged_after(uv_work_t *w, int status)
{
	cuda_job *j = w->data;
	cuda_backend *cb = j->b->impl;
	char err[512];

	if (status != 0) {
		job_finish(j, GPUD__STATUS__STATUS_INTERNAL, "cuda backend: copy cancelled");
		return;
	}
	if (j->status != 0 || j->kind == JOB_D2H) {
		job_finish(j, j->status, j->msg);
		return;
	}
	/* An upload's chunks are enqueued; it is done when the stream says so. */
	int rv = enqueue_done(cb, j, err, sizeof(err));
	if (rv != 0) {
		cudaStreamSynchronize(j->stream); /* error path: the chunks still read */
		job_finish(j, rv, err);
	}
}

static int submit_copy(gpud_backend *b, int kind, uint32_t queue, void *dst, const void *src,
		       size_t len, unsigned flags, backend_done_fn done, void *arg, char *err,
		       size_t errlen)
{
	cuda_backend *cb = b->impl;
	const char *call = "cudaMemcpyAsync";
	cudaError_t e = cudaSuccess;
	int idx = -1, rv;

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
	j->stage_idx = -1;
	enum cudaMemcpyKind dir = kind == JOB_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;

	if (flags & BACKEND_HOST_PINNED) {
		e = cudaMemcpyAsync(dst, src, len, dir, j->stream);
	} else if (len <= SMALL_COPY && (idx = stage_take(cb, 0)) >= 0) {
		if (kind == JOB_H2D) {
			memcpy(cb->stage[idx], src, len);
			e = stage_h2d(cb, idx, dst, len, j->stream, &call);
		} else {
			/* Copied out of the staging buffer when the stream is done. */
			j->stage_idx = idx;
			e = cudaMemcpyAsync(cb->stage[idx], src, len, dir, j->stream);
			if (e == cudaSuccess)
				atomic_fetch_add(&cb->bytes_staged, len);
		}
	} else {
		uv_queue_work(b->loop, &j->work,
			      kind == JOB_H2D ? staged_upload_work : staged_download_work,
			      staged_after);
		return 0;
	}
	if (e != cudaSuccess) {
		cuda_fail(e, call, err, errlen);
		rv = note_error(cb, e, err);
	} else {
		rv = enqueue_done(cb, j, err, errlen);
	}
	if (rv != 0) {
		/* Nothing will call back. What was enqueued still touches the
		 * memory: an error path, so wait for it here. */
		cudaStreamSynchronize(j->stream);
		if (j->stage_idx >= 0)
			stage_put(cb, j->stage_idx);
		free(j);
		check_fatal(b);
	}
	return rv;
}

static int cuda_upload(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		       unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	return submit_copy(b, JOB_H2D, queue, dst, src, len, flags, done, arg, err, errlen);
}

static int cuda_download(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
			 unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	return submit_copy(b, JOB_D2H, queue, dst, src, len, flags, done, arg, err, errlen);
}

/* --- host regions ---------------------------------------------------------------------- */

static int cuda_host_register(gpud_backend *b, void *p, size_t len, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	cudaError_t e;

	OFF_LOOP("cudaHostRegister");
	if (atomic_load(&cb->lost))
		return lost_error(cb, err, errlen);
	if ((e = cudaSetDevice(cb->device)) != cudaSuccess ||
	    (e = cudaHostRegister(p, len, cudaHostRegisterDefault)) != cudaSuccess) {
		cuda_fail(e, "cudaHostRegister", err, errlen);
		cudaGetLastError(); /* not sticky: the region is then used unpinned */
		return GPUD__STATUS__STATUS_BACKEND;
	}
	return 0;
}

static void cuda_host_unregister(gpud_backend *b, void *p)
{
	cuda_backend *cb = b->impl;
	/* On a worker, except at shutdown (regions_fini), when nothing is served. */
	if (atomic_load(&cb->lost))
		return;
	cudaSetDevice(cb->device);
	cudaError_t e = cudaHostUnregister(p);
	if (e != cudaSuccess)
		log_warn("cudaHostUnregister: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
}

static int cuda_staging_stats(gpud_backend *b, backend_staging_stats *out)
{
	cuda_backend *cb = b->impl;
	pthread_mutex_lock(&cb->stage_lock);
	stage_reclaim(cb);
	out->free = (uint32_t)cb->nstage_free;
	pthread_mutex_unlock(&cb->stage_lock);
	out->buffers = (uint32_t)cb->nstage;
	out->chunk = cb->stage_chunk;
	out->bytes_staged = atomic_load(&cb->bytes_staged);
	return 0;
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
	const custom_kernel *uk = k->custom;
	/* a built-in's id is its place in the table, checked at open */
	const cuda_kernel *ck = uk ? NULL : cb->kernels[k->id];
	int rv;

	if (ck == NULL && uk == NULL) {
		snprintf(err, errlen, "kernel %s has no CUDA implementation", k->name);
		return GPUD__STATUS__STATUS_UNSUPPORTED;
	}
	if (atomic_load(&cb->lost))
		return lost_error(cb, err, errlen);
	int sidx = (int)(queue % (uint32_t)cb->nstreams);
	cuda_job *j = job_new(b, JOB_RUN, cb->streams[sidx], done, arg);
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
	cuda_launch_ctx lc = stream_ctx(cb, sidx);
	cudaError_t e = cudaEventRecord(j->ev[0], j->stream);
	if (e != cudaSuccess)
		rv = note_error(cb, e, (cuda_fail(e, "cudaEventRecord", err, errlen), err));
	else if (uk ? custom_launch(cb, uk, a, j->stream, err, errlen) < 0
		    : ck->launch(a, &lc, err, errlen) != 0)
		rv = uk && cudaPeekAtLastError() == cudaSuccess
			     ? GPUD__STATUS__STATUS_INVALID_ARGUMENT
			     : note_error(cb, cudaGetLastError(), err);
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

/* --- custom kernels: NVRTC, a cubin cache on disk, the runtime's library API ----------- */

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* mkdir -p */
static void make_dirs(const char *path)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", path);
	for (char *q = p + 1; *q; q++) {
		if (*q == '/') {
			*q = '\0';
			mkdir(p, 0755);
			*q = '/';
		}
	}
	mkdir(p, 0755);
}

/*
 * The cache file of a compilation: DIR/<fnv64 of the key>.cubin holding
 * "gpud-cubin 1\n", the key's length (8 bytes), the key (NVRTC version, arch,
 * options, entry, source) and the cubin. A file whose key differs (a hash
 * collision, another NVRTC) is not used.
 */
static void *cache_read(const char *path, const char *key, size_t klen, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char magic[13];
	uint64_t kl;
	void *cubin = NULL;
	char *k2 = NULL;
	long end;
	if (f == NULL)
		return NULL;
	if (fread(magic, 1, 13, f) != 13 || memcmp(magic, "gpud-cubin 1\n", 13) != 0 ||
	    fread(&kl, 8, 1, f) != 1 || kl != klen || (k2 = malloc(klen)) == NULL ||
	    fread(k2, 1, klen, f) != klen || memcmp(k2, key, klen) != 0)
		goto out;
	long start = ftell(f);
	if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) <= start ||
	    fseek(f, start, SEEK_SET) != 0)
		goto out;
	*len = (size_t)(end - start);
	if ((cubin = malloc(*len)) != NULL && fread(cubin, 1, *len, f) != *len) {
		free(cubin);
		cubin = NULL;
	}
out:
	free(k2);
	fclose(f);
	return cubin;
}

static void cache_write(const char *dir, const char *path, const char *key, size_t klen,
			const void *cubin, size_t len)
{
	char tmp[4200];
	uint64_t kl = klen;
	make_dirs(dir);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	FILE *f = fopen(tmp, "wb");
	if (f == NULL) {
		log_warn("kernel cache %s: %s", tmp, strerror(errno));
		return;
	}
	int ok = fwrite("gpud-cubin 1\n", 1, 13, f) == 13 && fwrite(&kl, 8, 1, f) == 1 &&
		 fwrite(key, 1, klen, f) == klen && fwrite(cubin, 1, len, f) == len;
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
		log_warn("kernel cache %s: cannot write", path);
		unlink(tmp);
	}
}

/* Compiles (or loads from the cache) and loads k's code; blocks for as long as
 * NVRTC takes. On a worker, or at start before gpud serves. */
static int cuda_compile_now(gpud_backend *b, custom_kernel *k, const char *cache_dir, char *err,
			    size_t errlen)
{
	cuda_backend *cb = b->impl;
	int arch = cb->prop.major * 10 + cb->prop.minor;
	char opt1[64] = "", opt2[64] = "", *key = NULL, path[4200] = "";
	const char *opts[2];
	int nopts = 0;
	void *cubin = NULL;
	size_t len = 0;
	uint64_t t0 = uv_hrtime();
	cudaError_t e;
	int rv = -1;

	const char *ver = nvrtc_version(err, errlen);
	if (ver == NULL)
		return -1;
	if (k->fast_math)
		opts[nopts++] = strcpy(opt1, "--use_fast_math");
	/* Launch bounds from the block size: elementwise code carries
	 * __launch_bounds__(block); a raw kernel's registers are capped so that a
	 * block of that size always fits an SM's register file. */
	unsigned maxreg = k->max_registers;
	if (maxreg == 0 && k->kind == CUSTOM_RAW && k->block > 256)
		maxreg = (unsigned)(cb->prop.regsPerBlock / (int)k->block);
	if (maxreg) {
		snprintf(opt2, sizeof(opt2), "--maxrregcount=%u", maxreg);
		opts[nopts++] = opt2;
	}
	size_t klen = strlen(k->source) + 512;
	if ((key = malloc(klen)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	klen = (size_t)snprintf(key, klen, "nvrtc %s\narch sm_%d\nopts %s %s\nentry %s\n%s", ver,
				arch, opt1, opt2, k->entry, k->source);
	if (cache_dir && cache_dir[0]) {
		snprintf(path, sizeof(path), "%s/%016" PRIx64 ".cubin", cache_dir,
			 fnv1a(key, klen));
		if ((cubin = cache_read(path, key, klen, &len)) != NULL)
			k->cached = 1;
	}
	if (cubin == NULL) {
		if (nvrtc_compile(k->name, k->source, arch, opts, nopts, &cubin, &len, err,
				  errlen) != 0)
			goto out;
		if (path[0])
			cache_write(cache_dir, path, key, klen, cubin, len);
	}
	cudaLibrary_t lib;
	cudaKernel_t kern;
	struct cudaFuncAttributes attr;
	if ((e = cudaSetDevice(cb->device)) != cudaSuccess ||
	    (e = cudaLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0)) != cudaSuccess) {
		cuda_fail(e, "cudaLibraryLoadData", err, errlen);
		cudaGetLastError();
		goto out;
	}
	if ((e = cudaLibraryGetKernel(&kern, lib, k->entry)) != cudaSuccess) {
		snprintf(err, errlen,
			 "the compiled code has no kernel '%s' (declare it extern \"C\" "
			 "__global__): %s",
			 k->entry, cudaGetErrorString(e));
		cudaGetLastError();
		cudaLibraryUnload(lib);
		goto out;
	}
	if (cudaFuncGetAttributes(&attr, (const void *)kern) == cudaSuccess)
		k->registers = attr.numRegs;
	cudaGetLastError();
	k->lib = lib;
	k->fn = kern;
	k->compile_ms = (double)(uv_hrtime() - t0) / 1e6;
	rv = 0;
out:
	free(key);
	free(cubin);
	return rv;
}

typedef struct compile_job {
	uv_work_t work;
	gpud_backend *b;
	custom_kernel *k;
	char cache_dir[4096];
	backend_done_fn done;
	void *arg;
	int rv;
	char err[16384];
} compile_job;

static void compile_work(uv_work_t *w)
{
	compile_job *j = w->data;
	OFF_LOOP("compiling a custom kernel");
	j->rv = cuda_compile_now(j->b, j->k, j->cache_dir, j->err, sizeof(j->err));
}

static void compile_after(uv_work_t *w, int status)
{
	compile_job *j = w->data;
	j->done(j->arg, j->rv == 0 && status == 0 ? 0 : GPUD__STATUS__STATUS_INVALID_ARGUMENT,
		j->rv == 0 ? NULL : j->err);
	free(j);
}

static int cuda_compile(gpud_backend *b, custom_kernel *k, const char *cache_dir,
			backend_done_fn done, void *arg, char *err, size_t errlen)
{
	compile_job *j = calloc(1, sizeof(*j));
	if (j == NULL) {
		snprintf(err, errlen, "out of memory");
		return GPUD__STATUS__STATUS_OUT_OF_MEMORY;
	}
	*j = (compile_job){.b = b, .k = k, .done = done, .arg = arg};
	snprintf(j->cache_dir, sizeof(j->cache_dir), "%s", cache_dir ? cache_dir : "");
	j->work.data = j;
	uv_queue_work(b->loop, &j->work, compile_work, compile_after);
	return 0;
}

static void unload_work(uv_work_t *w)
{
	cudaLibraryUnload((cudaLibrary_t)w->data);
}

static void unload_after(uv_work_t *w, int status)
{
	free(w);
}

static void cuda_release(gpud_backend *b, custom_kernel *k)
{
	cuda_backend *cb = b->impl;
	if (k->lib == NULL || cb == NULL || atomic_load(&cb->lost))
		return;
	uv_work_t *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return;
	w->data = k->lib;
	k->lib = k->fn = NULL;
	uv_queue_work(b->loop, w, unload_work, unload_after);
}

/* The kernel's arguments as cudaLaunchKernel wants them; the launch shape. */
typedef union arg_val {
	void *p;
	float f;
	double d;
	int i;
	long long ll;
} arg_val;

static void scalar_into(arg_val *v, gpud_dtype dt, const kernel_value *kv)
{
	switch (dt) {
	case GPUD_F32:
		v->f = (float)kv->s.f64;
		break;
	case GPUD_F64:
		v->d = kv->s.f64;
		break;
	case GPUD_I32:
		v->i = (int)kv->s.i64;
		break;
	default:
		v->ll = (long long)kv->s.i64;
		break;
	}
}

static int custom_launch(struct cuda_backend *cb, const custom_kernel *k, const kernel_args *a,
			 cudaStream_t stream, char *err, size_t errlen)
{
	arg_val vals[3 * KERNEL_MAX_PARAMS + 1];
	void *args[3 * KERNEL_MAX_PARAMS + 1];
	int na = 0;
	long long grid = (long long)cb->prop.multiProcessorCount * k->blocks_per_sm,
		  block = k->block;

	if (k->fn == NULL) {
		snprintf(err, errlen, "kernel %s is not loaded", k->name);
		return -1;
	}
	if (k->kind == CUSTOM_ELEMENTWISE) {
		long long n = -1;
		for (int i = 0; i < k->nparams && n < 0; i++)
			if (k->params[i].role == KPARAM_IN && !a->v[i].scalar)
				n = (long long)a->v[i].arr.count;
		if (n <= 0)
			return 1; /* nothing to do */
		vals[na].ll = n;
		args[na] = &vals[na];
		na++;
		for (int i = 0; i < k->nparams; i++) {
			const kernel_value *v = &a->v[i];
			if (k->params[i].role == KPARAM_OUT) {
				vals[na].p = v->arr.data;
				args[na] = &vals[na];
				na++;
				continue;
			}
			vals[na].p = v->scalar ? NULL : v->arr.data;
			args[na] = &vals[na];
			na++;
			memset(&vals[na], 0, sizeof(vals[na]));
			if (v->scalar)
				scalar_into(&vals[na], k->params[i].dtype, v);
			args[na] = &vals[na];
			na++;
			vals[na].i = !v->scalar;
			args[na] = &vals[na];
			na++;
		}
		long long need = (n + block - 1) / block;
		if (need < grid)
			grid = need;
	} else {
		for (int i = 0; i < k->nparams; i++) {
			if (k->params[i].role == KPARAM_SCALAR)
				scalar_into(&vals[na], k->params[i].dtype, &a->v[i]);
			else
				vals[na].p = a->v[i].arr.data;
			args[na] = &vals[na];
			na++;
		}
		if (k->blocks_per_sm == 0) {
			grid = a->v[k->nparams].s.i64;
			block = a->v[k->nparams + 1].s.i64;
			if (grid < 1 || grid > 2147483647 || block < 1 || block > 1024) {
				snprintf(
					err, errlen,
					"%s: _grid must be 1 to 2^31-1 and _block 1 to 1024, got %lld "
					"and %lld",
					k->name, grid, block);
				return -1;
			}
		}
	}
	dim3 g = {(unsigned)grid, 1, 1}, bl = {(unsigned)block, 1, 1};
	cudaError_t e = cudaLaunchKernel(k->fn, g, bl, args, 0, stream);
	if (e != cudaSuccess) {
		cuda_fail(e, "cudaLaunchKernel", err, errlen);
		return -1;
	}
	return 0;
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
	.staging_stats = cuda_staging_stats,
	.host_register = cuda_host_register,
	.host_unregister = cuda_host_unregister,
	.compile = cuda_compile,
	.compile_now = cuda_compile_now,
	.release = cuda_release,
};
