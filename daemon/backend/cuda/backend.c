/*
 * daemon/backend/cuda/backend.c — the cuda backend: one instance per device
 * of gpud (daemon/devices.h), each on the primary context of its CUDA
 * device, created at start together with every built-in kernel (embedded
 * fatbin, loaded and run once before gpud answers as ready). Every op and
 * loop callback makes its device current first (cuda_use): the loop serves
 * every device.
 *
 * Buffers are device memory from the pool (pool.h). Each session's copies
 * (staging.c) and kernels go to its stream and are enqueued from the loop;
 * completions come back to the loop through events (completion.c). The loop
 * never waits for the GPU, error paths included: calls that can block are
 * marked OFF_LOOP and checked (daemon/loop.h), and an operation that fails
 * after enqueueing work has its stream drained by a worker before it
 * reports. The synchronous CUDA calls left on the loop are a pool miss
 * (cudaMalloc, for an output or a run's scratch) and a cuFFT plan's making
 * on a size's first run on a stream (lombscargle method=nufft); close, after
 * the last request, waits for the device. A run's scratch blocks
 * (cuda_launch_ctx.scratch) are its job's until the job finishes.
 *
 * A sticky CUDA error (the context is lost: illegal address, launch
 * failure, ...) makes every later operation of this device fail; the
 * backend reports it once through on_fatal, and the device leaves service
 * (daemon/devices.c; the server exits non-zero when none is left).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/backend/cuda/internal.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_selftest.h"
#include "kernels/core/libs.h"

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

dstatus cuda_note_error(cuda_backend *cb, cudaError_t e, const char *msg)
{
	if (is_sticky(e)) {
		pthread_mutex_lock(&cb->lost_lock);
		if (!atomic_load(&cb->lost)) {
			snprintf(cb->lost_msg, sizeof(cb->lost_msg), "%s", msg);
			atomic_store(&cb->lost,
				     1); /* after the message: readers check lost first */
			log_error("CUDA context lost: %s", msg);
		}
		pthread_mutex_unlock(&cb->lost_lock);
	}
	return ST_BACKEND;
}

void cuda_check_fatal(gpud_backend *b)
{
	cuda_backend *cb = b->impl;
	if (atomic_load(&cb->lost) && !cb->fatal_reported) {
		cb->fatal_reported = 1;
		if (b->on_fatal)
			b->on_fatal(b, cb->lost_msg);
	}
}

dstatus cuda_lost_error(cuda_backend *cb, char *err, size_t errlen)
{
	snprintf(err, errlen, "the CUDA context of device %d is lost (%.400s)", cb->device,
		 cb->lost_msg);
	return ST_BACKEND;
}

/* The runtime's current device is per thread; the loop serves every device. */
void cuda_use(const cuda_backend *cb)
{
	cudaSetDevice(cb->device);
}

/*
 * Each session's work goes to one stream of a fixed set (queue id modulo the
 * set's size): one session's operations run in order, different sessions'
 * overlap.
 */
int cuda_stream_index(cuda_backend *cb, uint32_t queue)
{
	return (int)(queue % (uint32_t)cb->nstreams);
}

/* --- open and close ---------------------------------------------------------------------- */

/*
 * Every built-in kernel: bound by its id (the CUDA table must match the
 * kernel list, or gpud does not start), self-tested — every sample of every
 * variant run once on real data against the CPU reference, which is also
 * the warm-up: no request pays a module load — and its variants'
 * attributes kept for status. Kernels calling a library are self-tested on
 * every stream, with its handles (skipped without them: runs say why); the
 * CPU reference is computed on the first.
 */
/*
 * The self-test's scratch (cuda_launch_ctx.scratch): cudaMalloc'd blocks,
 * not the pool's (the pool starts as configured, its statistics untouched
 * by the warm-up), kept until the kernel's samples are done (each sample
 * waits for its stream), or until SELFTEST_SCRATCH are taken. Then all but
 * the newest JOB_MAX_SCRATCH - 1 go: those may
 * be the launch's that is taking one now (a launch takes at most
 * JOB_MAX_SCRATCH, as cuda_run_scratch holds it to), with work still to
 * enqueue on them (lombscargle_many: its table, then the NUFFT's grids,
 * whose kernels read the table). Every block is poisoned before it goes, so
 * a launch that still used a freed one fails its sample on any GPU, not
 * only where another thread's cudaMalloc took the memory back (two devices
 * of one GPU opening in parallel). The opening thread's, before gpud serves.
 */
#define SELFTEST_SCRATCH 64
_Static_assert(SELFTEST_SCRATCH > JOB_MAX_SCRATCH, "the self-test keeps a launch's blocks");
typedef struct selftest_scratch {
	void *blocks[SELFTEST_SCRATCH];
	size_t bytes[SELFTEST_SCRATCH];
	int n;
} selftest_scratch;

/*
 * Frees the oldest k blocks. Their poison is queued on the stream behind
 * every launch that used them, so the one wait covers that work too.
 */
static void selftest_scratch_drop(selftest_scratch *s, int k, cudaStream_t st)
{
	for (int i = 0; i < k; i++)
		(void)cudaMemsetAsync(s->blocks[i], 0xff, s->bytes[i], st);
	(void)cudaStreamSynchronize(st);
	for (int i = 0; i < k; i++) {
		cudaError_t e = cudaFree(s->blocks[i]);
		if (e != cudaSuccess)
			log_error("cuda backend: cudaFree (self-test scratch): %s",
				  cudaGetErrorString(e));
	}
	memmove(s->blocks, s->blocks + k, (size_t)(s->n - k) * sizeof(s->blocks[0]));
	memmove(s->bytes, s->bytes + k, (size_t)(s->n - k) * sizeof(s->bytes[0]));
	s->n -= k;
}

static void selftest_scratch_release(selftest_scratch *s, cudaStream_t st)
{
	selftest_scratch_drop(s, s->n, st);
}

static void *selftest_scratch_take(const cuda_launch_ctx *ctx, size_t bytes, char *err,
				   size_t errlen)
{
	selftest_scratch *s = ctx->scratch_arg;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	void *p = NULL;
	size_t size = bytes ? bytes : 1;
	if (s->n == SELFTEST_SCRATCH)
		selftest_scratch_drop(s, SELFTEST_SCRATCH - (JOB_MAX_SCRATCH - 1), st);
	cudaError_t e = cudaMalloc(&p, size);
	if (e != cudaSuccess) {
		snprintf(err, errlen,
			 "cuda backend: cudaMalloc of %zu bytes (self-test scratch): %s", bytes,
			 cudaGetErrorString(e));
		return NULL;
	}
	s->bytes[s->n] = size;
	s->blocks[s->n++] = p;
	return p;
}

void *cuda_run_scratch(const cuda_launch_ctx *ctx, size_t bytes, char *err, size_t errlen)
{
	cuda_job *j = ctx->scratch_arg;
	cuda_backend *cb = j->b->impl;
	void *p = NULL;
	if (j->nscratch == JOB_MAX_SCRATCH) {
		snprintf(err, errlen, "cuda backend: a run takes at most %d scratch blocks",
			 JOB_MAX_SCRATCH);
		return NULL;
	}
	/* from the cache; a miss is cudaMalloc here, on the loop (once: the pool
	 * keeps it); gpud's own (owner 0): no client reads scratch */
	int foreign;
	int rc = pool_alloc_cached(cb->pool, bytes, 0, &p, &foreign, err, errlen);
	if (rc == POOL_MISS)
		rc = pool_alloc(cb->pool, bytes, 0, &p, &foreign, err, errlen);
	if (rc != POOL_OK)
		return NULL;
	j->scratch[j->nscratch++] = p;
	return p;
}

static int kernels_open(cuda_backend *cb, char *err, size_t errlen)
{
	selftest_scratch scr = {.n = 0};
	cuda_launch_ctx lc = {.stream = cudaStreamPerThread,
			      .sm_count = cb->prop.multiProcessorCount,
			      .device = cb->device,
			      .scratch = selftest_scratch_take,
			      .scratch_arg = &scr,
			      .fft = libs_fft_cache_new(cudaStreamPerThread)};
	size_t nk;
	const cuda_kernel *const *ks = cuda_kernel_list(&nk);
	const kernel_def *const *kd = kernel_list(&nk);
	int rv = 0;

	if (cuda_kernel_tables_check(err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < nk && rv >= 0; i++) {
		char kerr[1024];
		uint64_t t0 = uv_hrtime();
		int s = 0;
		cb->kernels[i] = ks[i];
		for (; s < (ks[i]->per_stream ? cb->nstreams : 1); s++) {
			cuda_launch_ctx ls = ks[i]->per_stream ? libs_stream_ctx(cb, s) : lc;
			ls.scratch = selftest_scratch_take;
			ls.scratch_arg = &scr;
			/* against the CPU reference once; other streams warm their handles */
			rv = kernel_selftest(kd[i], ks[i], &ls, s == 0, kerr, sizeof(kerr));
			/* its samples waited for the stream: the blocks are free again */
			selftest_scratch_release(&scr, (cudaStream_t)ls.stream);
			if (rv != 0)
				break;
		}
		if (rv < 0) {
			snprintf(err, errlen, "self-test of kernel %s failed (stream %d): %s",
				 ks[i]->name, s, kerr);
			break;
		}
		log_debug("kernel %s self-tested in %.1f ms%s", ks[i]->name,
			  (double)(uv_hrtime() - t0) / 1e6, rv > 0 ? " (skipped: no library)" : "");
		rv = 0;
		if (ks[i]->attributes == NULL) /* library code (CUB, cuBLAS, cuRAND) */
			continue;
		int n = ks[i]->attributes(cb->variants + cb->nvariants,
					  MAX_VARIANTS - cb->nvariants, kerr, sizeof(kerr));
		if (n < 0) {
			snprintf(err, errlen, "kernel %s: %s", ks[i]->name, kerr);
			rv = -1;
		} else {
			cb->nvariants += n;
		}
	}
	kernel_selftest_release();
	cudaStreamSynchronize(cudaStreamPerThread);
	libs_fft_cache_free(lc.fft);
	return rv < 0 ? -1 : 0;
}

static int device_open(cuda_backend *cb, const gpud_config *cfg, char *err, size_t errlen)
{
	cudaError_t e;
	if ((e = cudaSetDevice(cb->device)) != cudaSuccess)
		return cuda_fail(e, "cudaSetDevice", err, errlen);
	if ((e = cudaFree(NULL)) != cudaSuccess)
		return cuda_fail(e, "cudaFree (context creation)", err, errlen);
	if ((e = cudaGetDeviceProperties(&cb->prop, cb->device)) != cudaSuccess)
		return cuda_fail(e, "cudaGetDeviceProperties", err, errlen);
	return 0;
}

static int streams_open(cuda_backend *cb, const gpud_config *cfg, char *err, size_t errlen)
{
	for (cb->nstreams = 0; cb->nstreams < cfg->streams; cb->nstreams++) {
		cudaError_t e = cudaStreamCreateWithFlags(&cb->streams[cb->nstreams],
							  cudaStreamNonBlocking);
		if (e != cudaSuccess)
			return cuda_fail(e, "cudaStreamCreateWithFlags", err, errlen);
	}
	return 0;
}

static int cuda_count(const gpud_config *cfg, char *err, size_t errlen)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess || count == 0) {
		/* No driver at all reads as an insufficient one to the runtime: say which. */
		void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
		if (drv == NULL)
			snprintf(err, errlen,
				 "no NVIDIA driver: libcuda.so.1 cannot be loaded (%s)", dlerror());
		else if (e != cudaSuccess)
			snprintf(err, errlen, "no usable CUDA device: cudaGetDeviceCount: %s (%s)",
				 cudaGetErrorString(e), cudaGetErrorName(e));
		else
			snprintf(err, errlen, "no CUDA device found");
		if (drv)
			dlclose(drv);
		return -1;
	}
	return count;
}

/* Device b->device, on a thread of its own (other devices open meanwhile):
 * everything but the loop's handles and the tenant workers (cuda_start). */
static int cuda_open(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen)
{
	cuda_backend *cb = calloc(1, sizeof(*cb));
	if (cb == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return -1;
	}
	cb->device = b->device;
	cb->host = b->host;
	pthread_mutex_init(&cb->lost_lock, NULL);
	b->impl = cb;
	libs_preload_start(cb);
	uint64_t t0 = uv_hrtime();
	if (device_open(cb, cfg, err, errlen) != 0)
		goto fail;
	uint64_t t_ctx = uv_hrtime();
	pool_config pc = {.device = cb->device,
			  .bin_growth = cfg->pool_bin_growth,
			  .min_bin = cfg->pool_min_bin,
			  .max_bin = cfg->pool_max_bin,
			  .max_cached = cfg->pool_max_cached,
			  .max_total = cfg->pool_max_total,
			  .reserve = cfg->pool_reserve};
	/* Tenant workers map whole driver allocations (CUDA IPC): the driver
	 * carves allocations below 2 MiB out of shared 2 MiB pages, so a worker
	 * given one block could reach its neighbours. With workers, every block
	 * is 2 MiB at least: an allocation of its own. */
	if (cfg->kernel_workers) {
		uint64_t bytes = 1;
		unsigned bin = 0;
		while (bytes < (2ull << 20)) {
			bytes *= cfg->pool_bin_growth;
			bin++;
		}
		if (pc.min_bin < bin)
			pc.min_bin = bin < pc.max_bin ? bin : pc.max_bin;
	}
	if (pool_create(&pc, &cb->pool, err, errlen) != 0 ||
	    streams_open(cb, cfg, err, errlen) != 0 || staging_open(cb, cfg, err, errlen) != 0 ||
	    verdict_open(cb, err, errlen) != 0 || stop_open(cb, err, errlen) != 0)
		goto fail;
	libs_open(cb);
	if (kernels_open(cb, err, errlen) != 0)
		goto fail;
	uint64_t t_warm = uv_hrtime();
	log_info("cuda backend: device %d %s (sm_%d%d, %d SMs, %.1f GiB), context %.0f ms, "
		 "%d kernel variants loaded and warmed in %.0f ms",
		 cb->device, cb->prop.name, cb->prop.major, cb->prop.minor,
		 cb->prop.multiProcessorCount, (double)cb->prop.totalGlobalMem / (1 << 30),
		 (double)(t_ctx - t0) / 1e6, cb->nvariants, (double)(t_warm - t_ctx) / 1e6);
	for (int i = 0; i < cb->nvariants && b->device == cfg->device_ids[0]; i++) {
		cuda_variant_attr *v = &cb->variants[i];
		log_info("  kernel %s<%s>: %d registers, %zu B shared, %zu B local, block %d, "
			 "sm_%d binary",
			 v->kernel, v->variant, v->registers, v->shared_bytes, v->local_bytes,
			 v->block, v->binary_version);
	}
	return 0;
fail:
	libs_close(cb);
	staging_close(cb);
	verdict_close(cb);
	stop_close(cb, 0);
	pool_destroy(cb->pool);
	free(cb);
	b->impl = NULL;
	return -1;
}

/* On the loop thread, before gpud serves: tenant workers and the handles
 * through which completions reach the loop. */
static int cuda_start(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	cuda_use(cb);
	if (tw_open(b, cfg, cb->tw_why, sizeof(cb->tw_why)) != 0) {
		if (cfg->kernel_workers)
			log_warn(
				"custom kernels run in gpud's own context, where a tenant's kernel "
				"can reach every tenant's buffers: tenant workers cannot be set up "
				"(%s)",
				cb->tw_why);
		else
			log_info("custom kernels run in gpud's own context (kernel_workers = off)");
	}
	/* Last: once the loop has these handles, the backend must be closed to free it. */
	return completion_start(b, cfg, err, errlen);
}

static void free_backend(uv_handle_t *h)
{
	cuda_backend *cb = h->data;
	if (--cb->handles_open == 0)
		free(cb);
}

/* After the last request (teardown): waits for frees on workers and the device. */
static void cuda_close(gpud_backend *b)
{
	cuda_backend *cb = b->impl;
	if (cb == NULL)
		return;
	cuda_use(cb);
	/* Tenant workers end first: their blocks go back to the pool. */
	tw_close(cb);
	/* Frees handed to workers use the pool: let them finish first. */
	while (atomic_load(&cb->frees_pending) > 0)
		usleep(1000);
	completion_stop(cb);
	if (!atomic_load(&cb->lost)) {
		cudaDeviceSynchronize();
		staging_close(cb);
		verdict_close(cb);
		for (int i = 0; i < cb->nfree_events; i++)
			cudaEventDestroy(cb->free_events[i]);
		libs_close(cb);
		for (int i = 0; i < cb->nstreams; i++)
			cudaStreamDestroy(cb->streams[i]);
		pool_destroy(cb->pool);
	}
	cuda_clearing *c, *ctmp;
	HASH_ITER(hh, cb->clearing, c, ctmp)
	{
		HASH_DEL(cb->clearing, c);
		free(c);
	}
	stop_close(cb, atomic_load(&cb->lost));
	b->impl = NULL;
	if (b->started)
		completion_close_handles(cb, free_backend); /* the last frees cb */
	else /* opened alone (another device failed): no handle was made */
		free(cb);
}

static int cuda_default_run_slots(gpud_backend *b, const gpud_config *cfg)
{
	cuda_backend *cb = b->impl;
	return cb->nstreams; /* one run per stream */
}

/* --- memory --------------------------------------------------------------------------- */

/* On a worker: a foreign block is zeroed here, before it is returned (this
 * thread's stream, waited for: the worker may wait, the loop never does). */
static dstatus cuda_alloc(gpud_backend *b, size_t bytes, uint64_t owner, void **mem, char *err,
			  size_t errlen)
{
	cuda_backend *cb = b->impl;
	int foreign = 0;
	OFF_LOOP("an allocation that may call cudaMalloc (the loop uses alloc_cached)");
	if (atomic_load(&cb->lost))
		return cuda_lost_error(cb, err, errlen);
	cuda_use(cb);
	switch (pool_alloc(cb->pool, bytes, owner, mem, &foreign, err, errlen)) {
	case POOL_OK:
		break;
	case POOL_OUT_OF_MEMORY:
		return ST_OUT_OF_MEMORY;
	default:
		return cuda_note_error(cb, cudaGetLastError(), err);
	}
	if (!foreign)
		return ST_OK;
	cudaError_t e = cudaMemsetAsync(*mem, 0, pool_block_bytes(cb->pool, *mem),
					cudaStreamPerThread);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(cudaStreamPerThread);
	if (e == cudaSuccess)
		return ST_OK;
	dstatus rv = cuda_note_error(
		cb, e, (cuda_fail(e, "cudaMemsetAsync (a new block's clear)", err, errlen), err));
	char ferr[256];
	if (pool_free(cb->pool, *mem, ferr, sizeof(ferr)) != 0)
		log_error("%s", ferr);
	*mem = NULL;
	return rv;
}

static dstatus cuda_alloc_cached(gpud_backend *b, size_t bytes, uint64_t owner, void **mem,
				 int *foreign, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	cuda_use(cb);
	if (atomic_load(&cb->lost))
		return cuda_lost_error(cb, err, errlen);
	switch (pool_alloc_cached(cb->pool, bytes, owner, mem, foreign, err, errlen)) {
	case POOL_OK:
		return ST_OK;
	case POOL_MISS:
		return ST_WOULD_BLOCK;
	case POOL_OUT_OF_MEMORY:
		return ST_OUT_OF_MEMORY;
	default:
		return cuda_note_error(cb, cudaGetLastError(), err);
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
	OFF_LOOP("giving a block back to CUDA");
	if (pool_free(f->cb->pool, f->mem, msg, sizeof(msg)) != 0) {
		log_error("%s", msg);
		cuda_note_error(f->cb, cudaGetLastError(), msg);
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
void cuda_free_block(gpud_backend *b, void *mem)
{
	cuda_backend *cb = b->impl;
	cuda_use(cb);
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
		cuda_note_error(cb, cudaGetLastError(), msg);
	}
}

/* A block a tenant worker maps goes back once the worker unmapped it; one
 * whose clear runs, once the clear is done (clear_done). */
static void cuda_free(gpud_backend *b, void *mem)
{
	cuda_backend *cb = b->impl;
	cuda_clearing *c;
	HASH_FIND_PTR(cb->clearing, &mem, c);
	if (c != NULL) {
		c->free_after = 1;
		return;
	}
	if (!atomic_load(&cb->lost) && tw_free_waits(cb, mem))
		return;
	cuda_free_block(b, mem);
}

/* --- clears: a block zeroed on the stream of its first user ------------------------------ */

typedef struct clear_job {
	gpud_backend *b;
	void *mem;
	backend_done_fn done;
	void *arg;
} clear_job;

static void clear_done(void *arg, dstatus status, const char *msg)
{
	clear_job *cj = arg;
	cuda_backend *cb = cj->b->impl;
	cuda_clearing *c;
	HASH_FIND_PTR(cb->clearing, &cj->mem, c);
	if (c != NULL && --c->n == 0) {
		int free_after = c->free_after;
		HASH_DEL(cb->clearing, c);
		free(c);
		if (free_after)
			cuda_free(cj->b, cj->mem);
	}
	if (cj->done)
		cj->done(cj->arg, status, msg);
	free(cj);
}

/*
 * cudaMemsetAsync from keep to the block's end on the queue's stream, then a
 * job whose done says it is in. Until then the block stays out of the pool
 * (cuda_free waits for it): another stream must never get it with zeros
 * still to land.
 */
static dstatus cuda_clear(gpud_backend *b, uint32_t queue, void *mem, size_t keep,
			  backend_done_fn done, void *arg, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	cuda_use(cb);
	if (atomic_load(&cb->lost))
		return cuda_lost_error(cb, err, errlen);
	uint64_t bytes = pool_block_bytes(cb->pool, mem);
	if (bytes == 0) {
		snprintf(err, errlen, "cuda backend: clear of %p: not a block of the pool", mem);
		return ST_INTERNAL;
	}
	clear_job *cj = malloc(sizeof(*cj));
	cuda_clearing *c = NULL;
	HASH_FIND_PTR(cb->clearing, &mem, c);
	int fresh = c == NULL;
	if (fresh)
		c = calloc(1, sizeof(*c));
	if (cj == NULL || c == NULL) {
		free(cj);
		if (fresh)
			free(c);
		snprintf(err, errlen, "cuda backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	*cj = (clear_job){.b = b, .mem = mem, .done = done, .arg = arg};
	cudaStream_t st = cb->streams[cuda_stream_index(cb, queue)];
	if (keep < bytes) {
		cudaError_t e = cudaMemsetAsync((char *)mem + keep, 0, bytes - keep, st);
		if (e != cudaSuccess) {
			free(cj);
			if (fresh)
				free(c);
			return cuda_note_error(
				cb, e, (cuda_fail(e, "cudaMemsetAsync (clear)", err, errlen), err));
		}
	}
	cuda_job *j = job_new(b, JOB_SYNC, st, clear_done, cj);
	if (j == NULL) { /* out of host memory: the zeros must land before it moves on */
		free(cj);
		if (fresh)
			free(c);
		cudaStreamSynchronize(st);
		snprintf(err, errlen, "cuda backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	if (fresh) {
		c->mem = mem;
		HASH_ADD_PTR(cb->clearing, mem, c);
	}
	c->n++;
	dstatus rv = job_enqueue_done(cb, j, err, errlen);
	if (rv != ST_OK) /* done (clear_done) reports it once the stream drained */
		job_fail_after_drain(j, rv, err);
	return ST_OK;
}

/* --- kernels: enqueued from the loop, completed by their end event ---------------------- */

extern const cuda_kernel cuda_kernel_lombscargle_batch; /* kernels/lombscargle/batch_kernel.h */

/*
 * A run's fetch (backend_fetch): its outputs copied into a piece of the
 * small copies' staging buffer (stage_small_take) right behind the kernel on the run's stream, which executes in order, and
 * an event after them that becomes the job's end. The job holds the buffer
 * piece until it completes (job_complete copies the bytes out, for a good run
 * only), so the DMA is over before the piece is anyone's again, on every
 * path (a failure is drained first). Nothing, with ST_OK, where the bytes
 * do not fit a buffer or none is free: the caller downloads them.
 */
static dstatus run_fetch(cuda_backend *cb, cuda_job *j, backend_fetch *f, char *err, size_t errlen)
{
	const char *call = "cudaMemcpyAsync (fetch)";
	cudaError_t e = cudaSuccess;
	size_t at = 0;
	uint8_t *piece;
	dstatus rv;

	if (f == NULL || f->n <= 0 || f->n > KERNEL_MAX_PARAMS || f->total > BACKEND_FETCH_MAX ||
	    (piece = stage_small_take(cb, j, f->total)) == NULL)
		return ST_OK;
	/* job_complete gives the piece back */
	if ((rv = job_take_event(cb, &j->fetch_ev, err, errlen)) != ST_OK)
		return rv;
	for (int i = 0; i < f->n && e == cudaSuccess; i++) {
		e = cudaMemcpyAsync(piece + at, f->src[i], f->len[i], cudaMemcpyDeviceToHost,
				    j->stream);
		at += f->len[i];
	}
	if (e == cudaSuccess) {
		call = "cudaEventRecord (fetch)";
		e = cudaEventRecord(j->fetch_ev, j->stream);
	}
	if (e != cudaSuccess)
		return cuda_note_error(cb, e, (cuda_fail(e, call, err, errlen), err));
	atomic_fetch_add(&cb->bytes_staged, f->total);
	j->fetch = f;
	return ST_OK;
}

static dstatus cuda_run(gpud_backend *b, uint32_t queue, const kernel_def *k, const kernel_args *a,
			const backend_tenant *t, const int *cancel, double *kernel_us,
			backend_fetch *fetch, backend_done_fn done, void *arg, char *err,
			size_t errlen)
{
	cuda_backend *cb = b->impl;
	const custom_kernel *uk = k->custom;
	/* a built-in's id is its place in the table, checked at open; gpud's
	 * own batching kernel is in no table */
	const cuda_kernel *ck = uk ? NULL
				: k->id == KERNEL_ID_LOMBSCARGLE_BATCH
					? &cuda_kernel_lombscargle_batch
					: cb->kernels[k->id];
	dstatus rv;

	if (ck == NULL && uk == NULL) {
		snprintf(err, errlen, "kernel %s has no CUDA implementation", k->name);
		return ST_UNSUPPORTED;
	}
	if (atomic_load(&cb->lost))
		return cuda_lost_error(cb, err, errlen);
	if (uk && uk->arch != cb->prop.major * 10 + cb->prop.minor) {
		snprintf(err, errlen,
			 "custom kernel %s was compiled for sm_%d, and device %d is sm_%d%d: gpud "
			 "compiles custom kernels for its first device's architecture",
			 k->name, uk->arch, cb->device, cb->prop.major, cb->prop.minor);
		return ST_UNSUPPORTED;
	}
	cuda_use(cb);
	int sidx = cuda_stream_index(cb, queue);
	cuda_job *j = job_new(b, JOB_RUN, cb->streams[sidx], done, arg);
	if (j == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	j->kernel_us = kernel_us;
	j->kdef = k;
	j->args = a;
	if (k->verdict_message && (j->verdict = verdict_take(cb)) < 0) {
		free(j);
		snprintf(err, errlen,
			 "cuda backend: %d runs of kernels that check their data are in flight, "
			 "the most it keeps; try again when some have finished",
			 MAX_VERDICTS);
		return ST_INTERNAL;
	}
	if ((rv = job_take_event(cb, &j->ev[0], err, errlen)) != ST_OK ||
	    (rv = job_take_event(cb, &j->ev[1], err, errlen)) != ST_OK) {
		if (j->ev[0]) /* nothing was enqueued: undo here */
			job_put_event(cb, j->ev[0]);
		if (j->verdict >= 0)
			verdict_put(cb, j->verdict);
		free(j);
		return rv;
	}
	cuda_launch_ctx lc = libs_stream_ctx(cb, sidx);
	lc.scratch = cuda_run_scratch;
	lc.scratch_arg = j;
	if (j->verdict >= 0)
		lc.verdict = cb->verdicts_dev + j->verdict;
	/* A built-in run of a tenant with a run_timeout (custom kernels have
	 * kernel_timeout, in their worker): from here every path ends in
	 * job_complete, which gives the word back. */
	if (ck && t && t->run_timeout_ms &&
	    (j->stop = stop_take(cb, k->name, t->run_timeout_ms)) >= 0)
		lc.stop = stop_word(cb, j->stop);
	custom_plan plan;
	int planned = uk ? custom_plan_make(cb, uk, a, &plan, err, errlen) : 0;
	cudaError_t e = cudaEventRecord(j->ev[0], j->stream);
	if (e != cudaSuccess)
		rv = cuda_note_error(cb, e, (cuda_fail(e, "cudaEventRecord", err, errlen), err));
	else if (planned < 0)
		rv = ST_INVALID;
	else if (planned == 1) /* no elements: nothing to launch */
		rv = ST_OK;
	else if (uk && cb->tw)
		rv = tw_run(b, j, uk, &plan, t, err, errlen);
	else if (uk ? custom_launch(uk, &plan, j->stream, err, errlen) < 0
		    : ck->launch(a, &lc, err, errlen) != 0)
		rv = uk && cudaPeekAtLastError() == cudaSuccess
			     ? ST_INVALID
			     : cuda_note_error(cb, cudaGetLastError(), err);
	if (rv == ST_OK) {
		if ((e = cudaEventRecord(j->ev[1], j->stream)) != cudaSuccess)
			rv = cuda_note_error(cb, e,
					     (cuda_fail(e, "cudaEventRecord", err, errlen), err));
		else /* the outputs behind the kernel */
			rv = run_fetch(cb, j, fetch, err, errlen);
		if (rv == ST_OK)
			rv = job_enqueue_done(cb, j, err, errlen);
	}
	/* The kernel, if launched, still reads the buffers: the job reports the
	 * failure once its stream has drained. */
	if (rv != ST_OK)
		job_fail_after_drain(j, rv, err);
	return ST_OK;
}

static dstatus cuda_sync(gpud_backend *b, uint32_t queue, backend_done_fn done, void *arg,
			 char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	cuda_use(cb);
	if (atomic_load(&cb->lost))
		return cuda_lost_error(cb, err, errlen);
	cuda_job *j = job_new(b, JOB_SYNC, cb->streams[cuda_stream_index(cb, queue)], done, arg);
	if (j == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	dstatus rv = job_enqueue_done(cb, j, err, errlen);
	if (rv != ST_OK) /* its end event was not recorded: nothing to wait for */
		free(j);
	return rv;
}

/* Device memory of b -> device memory of `to`, on b's stream of the queue
 * (after what it queued there). Peer access between the two is enabled at
 * start where the topology allows (cuda_link); cudaMemcpyPeerAsync goes
 * through host memory otherwise. */
static dstatus cuda_copy_peer(gpud_backend *b, uint32_t queue, gpud_backend *to, void *dst,
			      const void *src, size_t len, backend_done_fn done, void *arg,
			      char *err, size_t errlen)
{
	cuda_backend *cb = b->impl, *tb = to->impl;
	if (atomic_load(&cb->lost))
		return cuda_lost_error(cb, err, errlen);
	if (atomic_load(&tb->lost))
		return cuda_lost_error(tb, err, errlen);
	cuda_use(cb);
	cuda_job *j = job_new(b, JOB_PEER, cb->streams[cuda_stream_index(cb, queue)], done, arg);
	if (j == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	cudaError_t e = cudaMemcpyPeerAsync(dst, tb->device, src, cb->device, len, j->stream);
	dstatus rv;
	if (e != cudaSuccess) {
		char what[96];
		snprintf(what, sizeof(what), "cudaMemcpyPeerAsync (device %d to %d)", cb->device,
			 tb->device);
		rv = cuda_note_error(cb, e, (cuda_fail(e, what, err, errlen), err));
	} else {
		rv = job_enqueue_done(cb, j, err, errlen);
	}
	if (rv != ST_OK)
		job_fail_after_drain(j, rv, err);
	return ST_OK;
}

/* At start, for each other device: peer access from b's context to to's
 * memory where the topology allows. 1 if on, 0 if not. */
static int cuda_link(gpud_backend *b, gpud_backend *to)
{
	cuda_backend *cb = b->impl, *tb = to->impl;
	int can = 0;
	cuda_use(cb);
	if (cudaDeviceCanAccessPeer(&can, cb->device, tb->device) != cudaSuccess || !can) {
		cudaGetLastError();
		return 0;
	}
	cudaError_t e = cudaDeviceEnablePeerAccess(tb->device, 0);
	if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
		log_warn("cuda backend: peer access from device %d to %d: %s", cb->device,
			 tb->device, cudaGetErrorString(e));
		cudaGetLastError();
		return 0;
	}
	cudaGetLastError();
	return 1;
}

/* --- what status shows ----------------------------------------------------------------------- */

/* The device's free memory is read at most this often: cudaMemGetInfo costs
 * tens of microseconds (a driver call), more than a whole status round trip. */
#define MEM_INFO_NS 100000000ull

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cuda_devices(gpud_backend *b, backend_device *out, int max)
{
	cuda_backend *cb = b->impl;
	cuda_use(cb);
	size_t fr = 0, total = cb->prop.totalGlobalMem;

	if (max < 1)
		return 0;
	uint64_t now = mono_ns();
	if (!atomic_load(&cb->lost) &&
	    (cb->mem_free_ns == 0 || now - cb->mem_free_ns > MEM_INFO_NS)) {
		if (cudaMemGetInfo(&fr, &total) == cudaSuccess) {
			cb->mem_free = fr;
			cb->mem_free_ns = now;
		}
	}
	fr = cb->mem_free;
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
				    .hits = ps.hits,
				    .clears = ps.foreign};
	return 0;
}

const backend_ops backend_cuda_ops = {
	.name = "cuda",
	.queue_ordered = 1,     /* a stream per queue */
	.loss_ends_process = 1, /* backend.h: CUDA's sticky errors are the process's */
	.count = cuda_count,
	.open = cuda_open,
	.start = cuda_start,
	.close = cuda_close,
	.default_run_slots = cuda_default_run_slots,
	.alloc = cuda_alloc,
	.alloc_cached = cuda_alloc_cached,
	.clear = cuda_clear,
	.free = cuda_free,
	.upload = cuda_upload,
	.download = cuda_download,
	.run = cuda_run,
	.sync = cuda_sync,
	.copy_peer = cuda_copy_peer,
	.link = cuda_link,
	.devices = cuda_devices,
	.variants = cuda_variants,
	.pool_stats = cuda_pool_stats,
	.staging_stats = cuda_staging_stats,
	.host_register = cuda_host_register,
	.host_unregister = cuda_host_unregister,
	.compile = cuda_compile,
	.compile_now = cuda_compile_now,
	.release = cuda_release,
	.prepare_tenant = tw_prepare,
};
