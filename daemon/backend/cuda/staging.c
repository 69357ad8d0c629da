/*
 * daemon/backend/cuda/staging.c — copies between host and device.
 *
 * Three paths, by where the host bytes live:
 *  - pinned (a page-locked host region): cudaMemcpyAsync straight from the
 *    loop; it only enqueues the DMA.
 *  - small (<= SMALL_COPY) pageable bytes: staged on the loop (a memcpy of a
 *    few microseconds) through a piece of the staging buffer that small
 *    copies share (stage_small_take: pieces are carved one after another,
 *    and the buffer goes back once no job holds a piece), then as above; the
 *    copy's job holds its piece until its end event (job_complete). One
 *    buffer each would let only staging_buffers small copies be in flight,
 *    and with many clients the rest would wait on workers.
 *  - larger pageable bytes (a message payload): a worker streams them through
 *    the staging buffers in chunks, double-buffered: while chunk i is in
 *    flight to (or from) the device, the worker copies chunk i+1 into (or
 *    chunk i-1 out of) another buffer. An upload's buffer is free again once
 *    its chunk's event has passed (stage_reclaim); a download's worker waits
 *    for the chunk's event.
 * A pageable cudaMemcpyAsync would block its caller until the bytes are
 * staged by the driver; none is issued anywhere. Every copy is a job
 * (completion.c) that ends with an event: its own, or, issued in its
 * queue's order (BACKEND_IN_ORDER), that of the job behind it (job_ride).
 *
 * Threads: submission on the loop, staged copies on workers; the staging
 * buffers' free list and in-flight marks are shared under stage_lock. Host
 * regions are pinned and unpinned on workers. The staging buffers' bytes
 * are reserved in the host memory budget (daemon/hostmem.h, atomic) at
 * open and given back at close.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend/cuda/internal.h"
#include "daemon/hostmem.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "kernels/core/cuda_check.h"

#define SMALL_COPY (64u << 10)
#define SMALL_ALIGN 256u /* each piece starts on a DMA-friendly boundary */

int staging_open(cuda_backend *cb, const gpud_config *cfg, char *err, size_t errlen)
{
	cudaError_t e;
	char why[256];
	pthread_mutex_init(&cb->stage_lock, NULL);
	pthread_cond_init(&cb->stage_cond, NULL);
	cb->stage_chunk = (size_t)cfg->staging_chunk;
	cb->small_cur = -1;
	int n = cfg->staging_buffers < MAX_STAGING ? cfg->staging_buffers : MAX_STAGING;
	/* Pinned for gpud's life: out of the host memory budget, all at once. */
	uint64_t want = (uint64_t)n * cb->stage_chunk;
	if (hostmem_reserve(cb->host, HOSTMEM_STAGING, want, why, sizeof(why)) != 0) {
		snprintf(err, errlen,
			 "cuda backend: device %d: %d staging buffers of %zu bytes "
			 "(staging_buffers, staging_chunk): %s",
			 cb->device, n, cb->stage_chunk, why);
		return -1;
	}
	cb->stage_reserved = want;
	for (int i = 0; i < n; i++) {
		if ((e = cudaHostAlloc(&cb->stage[i], cb->stage_chunk, cudaHostAllocDefault)) !=
		    cudaSuccess)
			return cuda_fail(e, "cudaHostAlloc (staging)", err, errlen);
		cb->nstage++;
		if ((e = cudaEventCreateWithFlags(&cb->stage_ev[i], cudaEventDisableTiming)) !=
		    cudaSuccess)
			return cuda_fail(e, "cudaEventCreate (staging)", err, errlen);
		cb->stage_free[cb->nstage_free++] = i;
	}
	return 0;
}

void staging_close(cuda_backend *cb)
{
	for (int i = 0; i < cb->nstage; i++) {
		cudaFreeHost(cb->stage[i]);
		if (cb->stage_ev[i])
			cudaEventDestroy(cb->stage_ev[i]);
	}
	cb->nstage = 0;
	hostmem_release(cb->host, HOSTMEM_STAGING, cb->stage_reserved);
	cb->stage_reserved = 0;
}

/* Under stage_lock: buffers whose DMA has finished become free again. */
static void stage_reclaim(cuda_backend *cb)
{
	for (int i = 0; i < cb->nstage; i++) {
		if (cb->stage_inflight[i] && cudaEventQuery(cb->stage_ev[i]) != cudaErrorNotReady) {
			cudaGetLastError(); /* an error here also shows on the job's own event */
			cb->stage_inflight[i] = 0;
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
int stage_take(cuda_backend *cb, int wait)
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
			if (cb->stage_inflight[i])
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

void stage_put(cuda_backend *cb, int idx)
{
	pthread_mutex_lock(&cb->stage_lock);
	cb->stage_free[cb->nstage_free++] = idx;
	pthread_cond_signal(&cb->stage_cond);
	pthread_mutex_unlock(&cb->stage_lock);
}

void *stage_small_take(cuda_backend *cb, cuda_job *j, size_t len)
{
	ON_LOOP("stage_small_take");
	size_t need = (len + SMALL_ALIGN - 1) & ~(size_t)(SMALL_ALIGN - 1);
	if (need > cb->stage_chunk)
		return NULL;
	if (cb->small_cur >= 0 && cb->small_off + need > cb->stage_chunk) {
		/* full: its holders give it back; the next piece starts a new one */
		int full = cb->small_cur;
		cb->small_cur = -1;
		if (cb->small_refs[full] == 0)
			stage_put(cb, full);
	}
	if (cb->small_cur < 0) {
		int idx = stage_take(cb, 0);
		if (idx < 0)
			return NULL;
		cb->small_cur = idx;
		cb->small_off = 0;
	}
	j->stage_idx = cb->small_cur;
	j->stage_off = cb->small_off;
	cb->small_off += need;
	cb->small_refs[j->stage_idx]++;
	return (uint8_t *)cb->stage[j->stage_idx] + j->stage_off;
}

void stage_small_put(cuda_backend *cb, cuda_job *j)
{
	ON_LOOP("stage_small_put");
	int idx = j->stage_idx;
	j->stage_idx = -1;
	if (--cb->small_refs[idx] > 0)
		return;
	if (idx == cb->small_cur) /* nobody holds a piece: free for large copies too */
		cb->small_cur = -1;
	stage_put(cb, idx);
}

/*
 * Enqueues host->device of one staged chunk; the buffer is free again when
 * its event has passed. On failure the caller still holds the buffer, and
 * the copy may still read it: the caller drains the stream before giving it
 * back (stage_put).
 */
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
	if (e != cudaSuccess)
		return e;
	atomic_fetch_add(&cb->bytes_staged, n);
	pthread_mutex_lock(&cb->stage_lock);
	cb->stage_inflight[idx] = 1;
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
	int idx = -1;

	OFF_LOOP("staged upload");
	for (size_t off = 0; e == cudaSuccess && off < j->len; off += cb->stage_chunk) {
		size_t n = j->len - off < cb->stage_chunk ? j->len - off : cb->stage_chunk;
		idx = stage_take(cb, 1);
		memcpy(cb->stage[idx], (const char *)j->src + off, n);
		if ((e = stage_h2d(cb, idx, (char *)j->dst + off, n, j->stream, &call)) ==
		    cudaSuccess)
			idx = -1;
	}
	if (e != cudaSuccess) {
		cuda_fail(e, call, j->msg, sizeof(j->msg));
		j->status = cuda_note_error(cb, e, j->msg);
		/* Chunks already enqueued write into the buffer, and the failed one
		 * may still read its staging buffer: let them finish (a worker may
		 * wait) before the request lets go of either. */
		cudaStreamSynchronize(j->stream);
		if (idx >= 0)
			stage_put(cb, idx);
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
		j->status = cuda_note_error(cb, e, j->msg);
	}
}

/* On the loop after a staged copy's worker. */
static void staged_after(uv_work_t *w, int status)
{
	cuda_job *j = w->data;
	cuda_backend *cb = j->b->impl;
	char err[512];

	cuda_use(cb);
	if (status != 0) {
		job_finish(j, ST_INTERNAL, "cuda backend: copy cancelled");
		return;
	}
	if (j->status != ST_OK || j->kind == JOB_D2H) {
		job_finish(j, j->status, j->msg);
		return;
	}
	/* An upload's chunks are enqueued; it is done when the stream says so. */
	dstatus rv = job_enqueue_done(cb, j, err, sizeof(err));
	if (rv != ST_OK)
		job_fail_after_drain(j, rv, err); /* the chunks may still be running */
}

static dstatus submit_copy(gpud_backend *b, job_kind kind, uint32_t queue, void *dst,
			   const void *src, size_t len, unsigned flags, backend_done_fn done,
			   void *arg, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	const char *call = "cudaMemcpyAsync";
	cudaError_t e = cudaSuccess;
	void *piece;
	dstatus rv;

	if (atomic_load(&cb->lost))
		return cuda_lost_error(cb, err, errlen);
	cuda_use(cb);
	cuda_job *j = job_new(b, kind, cb->streams[cuda_stream_index(cb, queue)], done, arg);
	if (j == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	j->dst = dst;
	j->src = src;
	j->len = len;
	enum cudaMemcpyKind dir = kind == JOB_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;

	if (flags & BACKEND_HOST_PINNED) {
		e = cudaMemcpyAsync(dst, src, len, dir, j->stream);
	} else if (len <= SMALL_COPY && (piece = stage_small_take(cb, j, len)) != NULL) {
		/* The job holds its piece until it completes: a failed upload's
		 * DMA may still read it, a download lands in it. */
		if (kind == JOB_H2D) {
			/* The job's own end event frees the piece (job_complete):
			 * no event of its own, one driver call fewer per copy. */
			memcpy(piece, src, len);
			e = cudaMemcpyAsync(dst, piece, len, dir, j->stream);
			if (e == cudaSuccess)
				atomic_fetch_add(&cb->bytes_staged, len);
		} else {
			/* Copied out of the piece when the stream is done. */
			e = cudaMemcpyAsync(piece, src, len, dir, j->stream);
			if (e == cudaSuccess)
				atomic_fetch_add(&cb->bytes_staged, len);
		}
	} else if (flags & BACKEND_IN_ORDER) {
		free(j); /* a worker would enqueue it later: out of the queue's order */
		snprintf(err, errlen, "cuda backend: the copy cannot be enqueued at once");
		return ST_WOULD_BLOCK;
	} else {
		uv_queue_work(b->loop, &j->work,
			      kind == JOB_H2D ? staged_upload_work : staged_download_work,
			      staged_after);
		return ST_OK;
	}
	if (e != cudaSuccess) {
		cuda_fail(e, call, err, errlen);
		rv = cuda_note_error(cb, e, err);
	} else if (flags & BACKEND_IN_ORDER) { /* the run behind it ends it (job_ride) */
		job_ride(cb, j);
		return ST_OK;
	} else {
		rv = job_enqueue_done(cb, j, err, errlen);
	}
	/* What was enqueued may still touch the memory: the job reports the error
	 * once its stream has drained, and the loop does not wait for it. */
	if (rv != ST_OK)
		job_fail_after_drain(j, rv, err);
	return ST_OK;
}

dstatus cuda_upload(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		    unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	return submit_copy(b, JOB_H2D, queue, dst, src, len, flags, done, arg, err, errlen);
}

dstatus cuda_download(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		      unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	return submit_copy(b, JOB_D2H, queue, dst, src, len, flags, done, arg, err, errlen);
}

/* --- host regions (workers) ------------------------------------------------------------- */

/* Portable: page-locked for every device's context, whichever device pins it. */
dstatus cuda_host_register(gpud_backend *b, void *p, size_t len, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	cudaError_t e;

	OFF_LOOP("cudaHostRegister");
	if (atomic_load(&cb->lost))
		return cuda_lost_error(cb, err, errlen);
	if ((e = cudaSetDevice(cb->device)) != cudaSuccess ||
	    (e = cudaHostRegister(p, len, cudaHostRegisterPortable)) != cudaSuccess) {
		cuda_fail(e, "cudaHostRegister", err, errlen);
		cudaGetLastError(); /* not sticky: the region is then used unpinned */
		return ST_BACKEND;
	}
	return ST_OK;
}

void cuda_host_unregister(gpud_backend *b, void *p)
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

int cuda_staging_stats(gpud_backend *b, backend_staging_stats *out)
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
