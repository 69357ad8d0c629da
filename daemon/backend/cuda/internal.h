/*
 * daemon/backend/cuda/internal.h — what the cuda backend's files share.
 *
 *   backend.c     open and close, memory (the pool), runs, sync, errors, info
 *   completion.c  jobs and their end events: polled on the loop while young,
 *                 then watched by the waiter thread; the drain for error paths
 *   staging.c     copies: pinned, staged on the loop, staged by workers
 *   custom.c      users' kernels: NVRTC, the cubin cache, launch plans
 *   tworkers.c    tenant workers: the processes custom kernels run in
 *   tworker_main.c  a tenant worker's program (gpud --tenant-worker)
 *   libs.c        each stream's cuBLAS handle and cuRAND generator
 *   pool.cu       the device memory pool over CUB (pool.h)
 *   nvrtc.c       NVRTC, loaded with dlopen (nvrtc.h)
 *   verdict.c     the mapped words in which kernels report bad argument values
 *   run_timeout.c the mapped words that ask kernels to stop (run_timeout), the timer
 *
 * Four kinds of thread touch a cuda_backend: the loop (ops, completions),
 * libuv's workers (staged copies, pinning, frees that give memory back to
 * CUDA, compiles, drains), the waiter (old jobs' events) and, during open
 * only, the preload thread. The struct groups its fields by who owns them;
 * a field is touched only by its owner, or under the lock named with it.
 */
#ifndef GPUD_CUDA_INTERNAL_H
#define GPUD_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include <cuda_runtime_api.h>
#include <uthash.h>

#include "daemon/backend/backend.h"
#include "daemon/backend/cuda/pool.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/core/list.h"
#include "daemon/backend/tenant_worker/msg.h"
#include "kernels/custom/custom.h"

#define MAX_VARIANTS 64
#define MAX_STREAMS 256
#define MAX_EVENTS 4096
#define MAX_STAGING 1024
#define MAX_VERDICTS 4096 /* runs of verdict-reporting kernels in flight, at most */
#define MAX_STOPS 4096    /* runs with a run_timeout in flight, at most */
#define JOB_MAX_SCRATCH 4 /* scratch blocks one run's launch may take */

/* A stream's handles of the libraries kernels call (kernels/core/libs.h). */
typedef struct stream_libs {
	void *blas;    /* cublasHandle_t, bound to the stream */
	void *blas_ws; /* its workspace: device memory of its own */
	void *rng;     /* curandGenerator_t, Philox4_32_10, bound to the stream */
	void *fft;     /* libs_fft_cache: its cuFFT plans, made on first use (the loop's) */
} stream_libs;

typedef struct cuda_job cuda_job;

/* A block with clears in flight (backend.c: cuda_clear): kept out of the
 * pool until they are done. The loop's. */
typedef struct cuda_clearing {
	void *mem;
	int n;          /* clears in flight */
	int free_after; /* freed meanwhile: goes back after the last */
	UT_hash_handle hh;
} cuda_clearing;

typedef struct cuda_backend {
	/* Set by open, read-only afterwards: any thread. */
	int device;
	struct cudaDeviceProp prop;
	cudaStream_t streams[MAX_STREAMS];
	int nstreams;
	stream_libs libs[MAX_STREAMS];
	size_t blas_ws_bytes;
	char blas_why[768], rng_why[768]; /* why there are no handles */
	cuda_variant_attr variants[MAX_VARIANTS];
	int nvariants;
	const cuda_kernel *kernels[KERNEL_COUNT]; /* by kernel_def.id, bound at open */
	gpud_pool *pool;          /* thread-safe: CUB's allocator takes its own mutex */
	struct hostmem *host;     /* the host memory budget (daemon/hostmem.h), or NULL */
	uint64_t stage_reserved;  /* the staging buffers' bytes in it */
	void *stage[MAX_STAGING]; /* pinned staging buffers, and their events */
	cudaEvent_t stage_ev[MAX_STAGING];
	int nstage;
	size_t stage_chunk;
	uint64_t poll_ns;

	/* Open only: the thread that loads cuBLAS and cuRAND meanwhile. */
	pthread_t preload;
	int preload_started;

	/* The loop's. */
	cudaEvent_t free_events[MAX_EVENTS]; /* idle events for reuse */
	int nfree_events;
	uv_idle_t poll_idle; /* polls young jobs' end events */
	size_t mem_free;     /* cudaMemGetInfo's free bytes, as of mem_free_ns */
	uint64_t mem_free_ns;
	volatile unsigned *verdicts; /* mapped host words (verdict.c), set at open */
	unsigned *verdicts_dev;      /* the same words as the device sees them */
	int verdict_free[MAX_VERDICTS];
	int nverdict_free;
	struct stop_state *stops;        /* run_timeout.c: words and deadlines (made at open) */
	uv_timer_t stop_timer;           /* run_timeout.c: the earliest deadline to come */
	cuda_job *poll_head, *poll_tail; /* young jobs, oldest first (completion.c) */
	int npoll;                       /* how many */
	cuda_job *riders;                /* in-order copies awaiting a later job's end (job_ride) */
	cuda_clearing *clearing;         /* blocks being cleared, by address */
	uv_async_t done_async;           /* the waiter's finished jobs, to the loop */
	int handles_open;
	int fatal_reported;

	/* The waiter's, under wait_lock: old jobs it watches. */
	pthread_t waiter;
	int waiter_started;
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	cuda_job *wait_head;
	int wait_stop;

	/* Jobs the waiter finished, under done_lock, for the loop. */
	pthread_mutex_t done_lock;
	cuda_job *done_head;

	/* Staging buffers' state, under stage_lock (loop and workers). */
	pthread_mutex_t stage_lock;
	pthread_cond_t stage_cond;
	int stage_free[MAX_STAGING];
	int stage_inflight[MAX_STAGING]; /* its DMA runs until stage_ev */
	int nstage_free;

	/* Small copies' shared staging buffer (stage_small_take): the loop's. */
	int small_cur;               /* the buffer small copies are carved from, or -1 */
	size_t small_off;            /* its first free byte */
	int small_refs[MAX_STAGING]; /* jobs holding a piece of each buffer */

	/* The loop's: tenant workers (tworkers.c); NULL when custom kernels run
	 * in this context (kernel_workers off, or workers unavailable). */
	struct tw_state *tw;
	char tw_why[256]; /* why they run here */

	/* Any thread. */
	_Atomic uint64_t bytes_staged;
	atomic_int frees_pending; /* frees running on workers */
	atomic_int lost;          /* a sticky error happened; lost_msg is set before */
	pthread_mutex_t lost_lock;
	char lost_msg[512];
} cuda_backend;

/*
 * One operation on a stream, from its submission on the loop to its done on
 * the loop. A job is touched by one thread at a time: the loop, then the
 * worker it was handed to (staging, drain) or the waiter, then the loop again.
 */
/* JOB_PEER: device to device, on the source device's stream (copy_peer). */
typedef enum job_kind { JOB_H2D, JOB_D2H, JOB_PEER, JOB_RUN, JOB_SYNC } job_kind;

struct cuda_job {
	uv_work_t work;
	gpud_backend *b;
	job_kind kind;
	cudaStream_t stream;
	void *dst;
	const void *src;
	size_t len;
	cudaEvent_t ev[2]; /* runs: around the kernel; others: ev[1] at the end; NULL: none */
	/* runs with a fetch (backend_fetch): the outputs' copies behind the
	 * kernel, into staging buffer stage_idx, end with this event, which is
	 * then the job's end (job_end_event); NULL: none */
	cudaEvent_t fetch_ev;
	backend_fetch *fetch;
	int stage_idx;    /* a staging buffer it holds a piece of until it completes, or -1 */
	size_t stage_off; /* where its piece starts (stage_small_take) */
	double *kernel_us;
	/* runs of a kernel with verdicts: its word (verdict.c), or -1 */
	int verdict;
	/* built-in runs with a run_timeout: its stop word (run_timeout.c), or -1 */
	int stop;
	int tw_slot; /* runs through a tenant worker: its slot (tworkers.c), or -1 */
	/* runs: scratch blocks the launch took (cuda_launch_ctx.scratch), given
	 * back to the pool when the job finishes */
	void *scratch[JOB_MAX_SCRATCH];
	int nscratch;
	const kernel_def *kdef;
	const kernel_args *args;
	backend_done_fn done;
	void *arg;
	dstatus status; /* a worker's outcome, or the error a drain reports */
	cudaError_t cuda_status;
	char msg[512];
	int completed;
	uint64_t poll_start;
	/* copies that end with this job's end event (job_ride), in issue order;
	 * and the link of that list, or of the loop's riders */
	cuda_job *riders, *ride_next;
	cuda_job *next;          /* the done queue */
	cuda_job *pprev, *pnext; /* the poll list (loop) or the waiter's */
};

/* --- backend.c --- */
/* Records a failure; a sticky one marks the backend lost. Returns ST_BACKEND. */
dstatus cuda_note_error(cuda_backend *cb, cudaError_t e, const char *msg);
/* ST_BACKEND with err saying the context is lost. */
dstatus cuda_lost_error(cuda_backend *cb, char *err, size_t errlen);
/* Makes cb's device the calling thread's current one: every op and loop
 * callback starts with it (one gpud may drive several devices). */
void cuda_use(const cuda_backend *cb);
/* On the loop, after an operation: report a lost context to the owner, once. */
void cuda_check_fatal(gpud_backend *b);
/* Gives a block back to the pool now (no worker maps it). */
void cuda_free_block(gpud_backend *b, void *mem);
/* The stream of a queue (a session): queue modulo the streams. */
int cuda_stream_index(cuda_backend *cb, uint32_t queue);
/* cuda_launch_ctx.scratch of a run: a pool block its job (scratch_arg) holds
 * until job_finish. The loop's. */
void *cuda_run_scratch(const cuda_launch_ctx *ctx, size_t bytes, char *err, size_t errlen);

/* --- completion.c --- */
cuda_job *job_new(gpud_backend *b, job_kind kind, cudaStream_t s, backend_done_fn done, void *arg);
/* An event from the loop's pool (or a new one). ST_OK, or a status with err. */
dstatus job_take_event(cuda_backend *cb, cudaEvent_t *ev, char *err, size_t errlen);
void job_put_event(cuda_backend *cb, cudaEvent_t ev);
/* The event whose passing ends j: its fetch's, else ev[1]. */
static inline cudaEvent_t job_end_event(const cuda_job *j)
{
	return j->fetch_ev ? j->fetch_ev : j->ev[1];
}
/* Records the job's end event (runs have theirs) and starts watching it;
 * the copies riding on its stream (job_ride) end with it. */
dstatus job_enqueue_done(cuda_backend *cb, cuda_job *j, char *err, size_t errlen);
/* A copy issued in its stream's order (BACKEND_IN_ORDER) that records no end
 * event: it completes with the next job on its stream that records one
 * (job_enqueue_done), at the latest one the loop's next turn makes. */
void job_ride(cuda_backend *cb, cuda_job *j);
/* Reports the outcome (done), gives back its events and staging buffer, frees j. Loop. */
void job_finish(cuda_job *j, dstatus status, const char *msg);
/*
 * The error path of a job that may have enqueued work on its stream: the
 * memory it names must stay until that work is done, and the loop must not
 * wait for it. A worker waits for the stream; then, on the loop, the job
 * finishes with status and msg.
 */
void job_fail_after_drain(cuda_job *j, dstatus status, const char *msg);
/* The poller, the waiter thread and the done queue: made at open, ended at close. */
int completion_start(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen);
void completion_stop(cuda_backend *cb);
void completion_close_handles(cuda_backend *cb, uv_close_cb last);

/* --- verdict.c (the free list is the loop's) --- */
int verdict_open(cuda_backend *cb, char *err, size_t errlen);
void verdict_close(cuda_backend *cb);
/* A zeroed word's index, or -1 when all MAX_VERDICTS are taken. */
int verdict_take(cuda_backend *cb);
/* Gives word idx back; returns the code the kernel left there. */
unsigned verdict_put(cuda_backend *cb, int idx);

/* --- run_timeout.c (the loop's, but open and close) --- */
int stop_open(cuda_backend *cb, char *err, size_t errlen);
/* device_gone: the context is lost (its mapped memory with it). */
void stop_close(cuda_backend *cb, int device_gone);
/* The timer, on the loop (completion_start), and its close (the backend's last handles). */
void stop_start(cuda_backend *cb, uv_loop_t *loop);
void stop_close_handle(cuda_backend *cb, uv_close_cb last);
/* A run of kernel with a run_timeout of timeout_ms starts now: its word's
 * index (zeroed; the timer writes it at the deadline), or -1 if every word
 * is taken (the run then has no limit). */
int stop_take(cuda_backend *cb, const char *kernel, uint64_t timeout_ms);
/* Word idx as the device sees it: cuda_launch_ctx.stop. */
const unsigned *stop_word(cuda_backend *cb, int idx);
/* The run of word idx has completed: the word goes back; 1 with the
 * failure's message in msg if it was over its run_timeout, else 0. */
int stop_put(cuda_backend *cb, int idx, char *msg, size_t msglen);

/* --- staging.c --- */
/* A staging buffer's index, or -1 if none is free and !wait (the loop never waits). */
int stage_take(cuda_backend *cb, int wait);
int staging_open(cuda_backend *cb, const gpud_config *cfg, char *err, size_t errlen);
void staging_close(cuda_backend *cb);
/* Gives a staging buffer back (the job that held one completed). */
void stage_put(cuda_backend *cb, int idx);
/*
 * On the loop: len (at most stage_chunk) pinned bytes for one small copy's
 * job, carved from the staging buffer small copies share: the job's
 * stage_idx and stage_off are set, and the piece is the job's until
 * stage_small_put at its completion. NULL (the job untouched) when the piece
 * does not fit and no buffer is free.
 */
void *stage_small_take(cuda_backend *cb, cuda_job *j, size_t len);
void stage_small_put(cuda_backend *cb, cuda_job *j);
dstatus cuda_upload(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		    unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen);
dstatus cuda_download(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		      unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen);
dstatus cuda_host_register(gpud_backend *b, void *p, size_t len, char *err, size_t errlen);
void cuda_host_unregister(gpud_backend *b, void *p);
int cuda_staging_stats(gpud_backend *b, backend_staging_stats *out);

/* --- custom.c --- */
/* A custom kernel's launch: its shape and each argument's bytes. */
typedef struct custom_plan {
	unsigned grid, block;
	int nargs;
	uint64_t vals[TW_MAX_ARGS];
	unsigned char is_ptr[TW_MAX_ARGS]; /* vals[i] is a device address */
} custom_plan;
int cuda_compile_now(gpud_backend *b, custom_kernel *k, const char *cache_dir, char *err,
		     size_t errlen);
dstatus cuda_compile(gpud_backend *b, custom_kernel *k, const char *cache_dir, backend_done_fn done,
		     void *arg, char *err, size_t errlen);
void cuda_release(gpud_backend *b, custom_kernel *k);
/* k's launch for a: 0, 1 (nothing to do: no elements), or -1 with err. */
int custom_plan_make(cuda_backend *cb, const custom_kernel *k, const kernel_args *a, custom_plan *p,
		     char *err, size_t errlen);
/* Enqueues the plan on stream in this context: 0, or -1 with err. */
int custom_launch(const custom_kernel *k, const custom_plan *p, cudaStream_t stream, char *err,
		  size_t errlen);

/* --- tworkers.c (the loop's) --- */
/* Sets cb->tw up after the streams: 0, or -1 with why (then custom kernels
 * run in gpud's context). */
int tw_open(gpud_backend *b, const gpud_config *cfg, char *why, size_t whylen);
/* Ends and reaps every worker, answers their runs, gives their blocks back. */
void tw_close(cuda_backend *cb);
/* Enqueues on j's stream the wait for a run of k in t's worker and sends it
 * (j->tw_slot set). ST_OK, or a status + err (then j may still hold a slot
 * whose word is written: finish it through the drain). */
dstatus tw_run(gpud_backend *b, cuda_job *j, const custom_kernel *k, const custom_plan *plan,
	       const backend_tenant *t, char *err, size_t errlen);
/* At j's completion: the worker's outcome over status/msg (msg into buf). */
void tw_job_result(cuda_backend *cb, cuda_job *j, dstatus *status, const char **msg, char *buf,
		   size_t buflen);
/* 1 if mem is mapped in a worker: its free then happens (cuda_free_block)
 * once the worker unmapped it; 0 if it may be freed now. */
int tw_free_waits(cuda_backend *cb, void *mem);
/* Starts tenant's worker ahead of its first run. */
void tw_prepare(gpud_backend *b, const char *tenant);
/* k's code leaves every worker. */
void tw_release_kernel(cuda_backend *cb, const custom_kernel *k);

/* --- libs.c --- */
/* Starts loading the libraries on a thread of their own (while the context is made). */
void libs_preload_start(cuda_backend *cb);
/* Waits for the preload, then makes every stream's handles (or says why not). */
void libs_open(cuda_backend *cb);
void libs_close(cuda_backend *cb);
/* The launch context of stream idx, with its library handles. */
cuda_launch_ctx libs_stream_ctx(cuda_backend *cb, int idx);

#endif
