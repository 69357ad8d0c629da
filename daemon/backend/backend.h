/*
 * daemon/backend/backend.h — the backend ops table, gpud's seam between
 * requests and the hardware (in the manner of nng's transport ops and RMM's
 * memory resources). `cpu` (backend/cpu.c) is the reference and what CI runs
 * end to end; `cuda` (backend/cuda/) is the product. backend.c keeps the
 * table of backends by name.
 *
 * Every op is called on the loop thread (the backend_* wrappers below check
 * it), except host_register/host_unregister and compile_now, noted there.
 * Ops that take a backend_done_fn never block the loop, error paths
 * included: they start the work and return ST_OK, and later call done
 * exactly once, on the loop thread, with a status and a message for errors.
 * If they return another status (with err set), nothing was started and done
 * is never called. A backend never replies to requests and never reaches
 * above this interface: it reports a lost device through on_fatal.
 */
#ifndef GPUD_BACKEND_H
#define GPUD_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/config.h"
#include "daemon/status.h"
#include "kernels/core/kernel.h"

typedef struct gpud_backend gpud_backend;
struct custom_kernel;
struct hostmem;
typedef void (*backend_done_fn)(void *arg, dstatus status, const char *msg);

typedef struct backend_device {
	int index;
	char name[128];
	int cc_major, cc_minor;
	uint64_t memory_total, memory_free;
	int sm_count;
} backend_device;

typedef struct backend_variant {
	char kernel[64], variant[32];
	int registers, block, max_threads;
	uint64_t shared_bytes, local_bytes;
} backend_variant;

typedef struct backend_pool_stats {
	uint64_t in_use, cached, high_water, limit, allocs, hits;
	uint64_t clears; /* blocks zeroed before an owner got them (backend.h: alloc) */
} backend_pool_stats;

/* Who a run is for: custom kernels run in that tenant's worker (cuda); the
 * cpu backend shares its threads between tenants by name. */
typedef struct backend_tenant {
	const char *name;
	uint64_t kernel_timeout_ms; /* a custom kernel's run at most; 0: no limit */
	/* a built-in kernel's run at most; 0: no limit. A run over it is
	 * stopped where the backend can (cpu: between chunks; cuda: kernels
	 * that read cuda_launch_ctx.stop) and fails ST_QUOTA, saying so */
	uint64_t run_timeout_ms;
} backend_tenant;

typedef struct backend_staging_stats {
	uint32_t buffers, free;
	uint64_t chunk, bytes_staged;
} backend_staging_stats;

/*
 * A run's outputs copied to the host right behind its kernel (run's fetch),
 * to save a one-trip call the round of a separate download after the run's
 * done. Best effort: a backend that cannot (too many bytes, no staging
 * buffer, none of its own) leaves `fetched` 0 and the caller downloads them
 * as usual. The caller owns it and dst, both living until done.
 */
#define BACKEND_FETCH_MAX ((size_t)64 << 10) /* bytes a fetch may ask for */
typedef struct backend_fetch {
	int n;
	const void *src[KERNEL_MAX_PARAMS]; /* backend memory: an output's bytes */
	size_t len[KERNEL_MAX_PARAMS];
	size_t total; /* the sum of len, at most BACKEND_FETCH_MAX */
	uint8_t *dst; /* host memory: the n ranges one after the other */
	int fetched;  /* set before a done of ST_OK: dst holds them; else untouched */
} backend_fetch;

/* Copy flags. */
enum {
	/* The host side is page-locked (a pinned host region): the copy can be
	 * DMA straight from/to it, with no staging. */
	BACKEND_HOST_PINNED = 1u << 0,
	/* upload, queue_ordered backends: enqueue it in the queue's order
	 * before returning (a run issued next executes after it), or return
	 * ST_WOULD_BLOCK having done nothing (cuda: a copy a worker would
	 * stage later). Its done may come no sooner than that of the operation
	 * issued next on the queue (cuda: they share one end event), or the
	 * loop's next turn where none was. */
	BACKEND_IN_ORDER = 1u << 1,
};

typedef struct backend_ops {
	const char *name;
	int queue_ordered; /* see upload below */
	/* A lost device (on_fatal) leaves the others unable to work too: gpud
	 * exits for a restart whatever device_lost says. cuda: CUDA documents
	 * that after a sticky error further CUDA work in the process returns
	 * that error (on two H200s a cudaMalloc on device 0 failed with device
	 * 1's illegal address). */
	int loss_ends_process;
	/* libuv's pool threads beyond cpu_threads (cpu: 1, see cpu.c's kernels) */
	int pool_spare;
	/* How many devices this machine offers the backend (ids 0..n-1), or
	 * -1 with err saying why none. Any thread, before any open. */
	int (*count)(const gpud_config *cfg, char *err, size_t errlen);
	/* Opens device b->device: 0, or -1 with err (then nothing is left
	 * open). Called on a thread of its own, at the same time as other
	 * devices' opens: it touches no loop handle (start does that). */
	int (*open)(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen);
	/* On the loop thread after open, before gpud serves: what needs the
	 * loop (handles, child processes). NULL: nothing. 0, or -1 + err. */
	int (*start)(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen);
	/* After the last request, or after open alone when start was never
	 * called or failed (b->started says which: an instance that never
	 * started has no loop handles to close). May wait for the device. */
	void (*close)(gpud_backend *b);
	/* Kernel runs the backend takes at once when run_slots is 0 (auto). */
	int (*default_run_slots)(gpud_backend *b, const gpud_config *cfg);
	/*
	 * Memory passes between tenants: `owner` names who the block is for
	 * (a tenant's number; 0: gpud's own, never read by a client). What
	 * alloc returns holds nothing another owner wrote (zeros, or what this
	 * owner wrote before): the whole block, its rounding included, since a
	 * tenant worker maps whole allocations.
	 *
	 * alloc: synchronous; may wait for the device (cuda: cudaMalloc on a
	 * pool miss, a clear), so called on a worker where alloc_cached is set.
	 * ST_OK, or a status + err. Safe from any thread.
	 */
	dstatus (*alloc)(gpud_backend *b, size_t bytes, uint64_t owner, void **mem, char *err,
			 size_t errlen);
	/* On the loop: alloc where it needs no waiting (cuda: a pool hit; cpu:
	 * a small block), else ST_WOULD_BLOCK with nothing done (cpu: a large
	 * block, whose pages are made on a worker). The block is handed out as
	 * it is: *foreign is 1 when it may hold another owner's bytes, and then
	 * the caller clears it (clear) before anything reads it (cpu: never).
	 * NULL: alloc never waits. */
	dstatus (*alloc_cached)(gpud_backend *b, size_t bytes, uint64_t owner, void **mem,
				int *foreign, char *err, size_t errlen);
	/* Zeroes the block holding mem from byte `keep` to its end, queued on
	 * `queue` (in order with what queue_ordered backends run there before
	 * and after it); done (may be NULL) once the zeros are in. A block
	 * freed while its clear runs goes back to the pool after it. NULL where
	 * alloc_cached never hands out foreign blocks. */
	dstatus (*clear)(gpud_backend *b, uint32_t queue, void *mem, size_t keep,
			 backend_done_fn done, void *arg, char *err, size_t errlen);
	void (*free)(gpud_backend *b, void *mem);
	/*
	 * `queue` names the session. Where queue_ordered is set, one queue's
	 * operations execute in the order they were issued (cuda: one stream
	 * per queue, from a fixed set), so a run may be issued behind uploads
	 * whose done has not come yet; elsewhere (cpu: any worker takes any
	 * job) they may overlap, and gpud waits for each copy before the run
	 * that reads it. Different queues' operations may always overlap.
	 */
	/* Host src (lives until done) -> backend dst. flags: BACKEND_HOST_*. */
	dstatus (*upload)(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
			  unsigned flags, backend_done_fn done, void *arg, char *err,
			  size_t errlen);
	/* Backend src -> host dst (lives until done). */
	dstatus (*download)(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
			    unsigned flags, backend_done_fn done, void *arg, char *err,
			    size_t errlen);
	/* Runs a bound, checked kernel; arrays live until done. *kernel_us is set
	 * (before done) to the kernel's own time. *cancel (read with
	 * __atomic_load_n from any thread) turns 1 when the run is cancelled: a
	 * backend that can stop part-way does (cpu: between chunks) and reports
	 * ST_CANCELLED; one that cannot (cuda) runs to the end. done's
	 * ST_INVALID is the kernel's verdict on its argument values: msg is
	 * k->verdict_message's, which names the kernel as check's errors do;
	 * done's ST_QUOTA is a built-in run over t->run_timeout_ms: msg is the
	 * whole message ("run of K stopped after ..."). t: the tenant it runs
	 * for (custom kernels run in its worker). fetch (may be NULL): the
	 * outputs to bring to the host behind the kernel (backend_fetch); the
	 * backend writes its dst and fetched only just before a done of ST_OK. */
	dstatus (*run)(gpud_backend *b, uint32_t queue, const kernel_def *k, const kernel_args *a,
		       const backend_tenant *t, const int *cancel, double *kernel_us,
		       backend_fetch *fetch, backend_done_fn done, void *arg, char *err,
		       size_t errlen);
	/* Device memory of b -> device memory of `to` (another device of this
	 * backend): ordered after what `queue` of b has queued before it, done
	 * as upload's once the bytes are in dst. cuda: cudaMemcpyPeerAsync on
	 * b's stream (peer to peer where the devices have access, else through
	 * host memory by the driver). */
	dstatus (*copy_peer)(gpud_backend *b, uint32_t queue, gpud_backend *to, void *dst,
			     const void *src, size_t len, backend_done_fn done, void *arg,
			     char *err, size_t errlen);
	/* At start, on the loop thread, for every ordered pair of devices:
	 * direct access from b to to's memory where the machine allows (cuda:
	 * peer access). 1 if on, 0 if copies go another way. NULL: 0. */
	int (*link)(gpud_backend *b, gpud_backend *to);
	/* done once everything queued on `queue` before it has completed. */
	dstatus (*sync)(gpud_backend *b, uint32_t queue, backend_done_fn done, void *arg, char *err,
			size_t errlen);
	/* Devices for hello and status; returns how many were written. */
	int (*devices)(gpud_backend *b, backend_device *out, int max);
	/* Loaded kernel variants for status (NULL: none). */
	int (*variants)(gpud_backend *b, backend_variant *out, int max);
	/* Memory pool statistics; 0 if filled, -1 if the backend has no pool. */
	int (*pool_stats)(gpud_backend *b, backend_pool_stats *out);
	/* Staging statistics; 0 if filled, -1 if the backend stages nothing. */
	int (*staging_stats)(gpud_backend *b, backend_staging_stats *out);
	/*
	 * Page-lock host memory (a shared host region) for fast copies, and
	 * undo it. NULL where pinning means nothing (cpu). Called on a worker
	 * thread, never on the loop: pinning takes milliseconds per GiB.
	 */
	dstatus (*host_register)(gpud_backend *b, void *p, size_t len, char *err, size_t errlen);
	void (*host_unregister)(gpud_backend *b, void *p);
	/*
	 * Custom kernels (kernels/custom/custom.h). NULL where the backend runs
	 * none (cpu). compile: build k's code, or load it from the cache
	 * directory (may be ""), on a worker; done on the loop, with the
	 * compiler's log as the message on failure. compile_now: the same on the
	 * calling thread (at start, before gpud serves); 0 or -1 + err. release:
	 * give the code back (after the last run).
	 */
	dstatus (*compile)(gpud_backend *b, struct custom_kernel *k, const char *cache_dir,
			   backend_done_fn done, void *arg, char *err, size_t errlen);
	int (*compile_now)(gpud_backend *b, struct custom_kernel *k, const char *cache_dir,
			   char *err, size_t errlen);
	void (*release)(gpud_backend *b, struct custom_kernel *k);
	/* The tenant registered a custom kernel: start what its runs need
	 * (cuda: its worker process) now, not on its first run. NULL: nothing. */
	void (*prepare_tenant)(gpud_backend *b, const char *tenant);
} backend_ops;

struct gpud_backend {
	const backend_ops *ops;
	uv_loop_t *loop;
	void *impl;
	int device; /* the device it drives (its id), set before open */
	/* The host memory budget (daemon/hostmem.h) the backend's host memory
	 * comes out of (cpu: buffers; cuda: staging); NULL: none. */
	struct hostmem *host;
	int started; /* start returned 0 (backend_start): close undoes it too */
	/*
	 * Set by the owner: called on the loop when the backend can no longer
	 * work (a sticky CUDA error). The owner takes the device out of
	 * service (daemon/devices.h).
	 */
	void (*on_fatal)(gpud_backend *b, const char *msg);
	void *owner;
};

/*
 * The backend named in cfg->backend: "cpu", "cuda", or "auto" (cuda when it
 * counts a device, else cpu with a warning), and how many devices it offers
 * (*count). Sets libuv's pool size for it. NULL with err if none.
 */
const backend_ops *backend_pick(const gpud_config *cfg, int *count, char *err, size_t errlen);
/* Opens device `device` with ops (thread-safe across devices), its host
 * memory out of host (NULL: no budget). 0 or -1 + err. */
int backend_open(gpud_backend *b, uv_loop_t *loop, const backend_ops *ops, const gpud_config *cfg,
		 struct hostmem *host, int device, char *err, size_t errlen);
/* ops->start, on the loop thread. 0 or -1 + err. */
int backend_start(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen);
void backend_close(gpud_backend *b);
/* The backends this gpud was built with, for messages: "cuda, cpu". */
const char *backend_names(void);

/* The ops, called on the loop (checked). */
int backend_default_run_slots(gpud_backend *b, const gpud_config *cfg);
/* On the loop: ST_WOULD_BLOCK where the block needs backend_alloc_wait;
 * *foreign: see alloc_cached (0 where alloc zeroes for owner itself). */
dstatus backend_alloc(gpud_backend *b, size_t bytes, uint64_t owner, void **mem, int *foreign,
		      char *err, size_t errlen);
/* On a worker (checked): an allocation that may wait for the device. */
dstatus backend_alloc_wait(gpud_backend *b, size_t bytes, uint64_t owner, void **mem, char *err,
			   size_t errlen);
/* ops->clear: see there. */
dstatus backend_clear(gpud_backend *b, uint32_t queue, void *mem, size_t keep, backend_done_fn done,
		      void *arg, char *err, size_t errlen);
void backend_free(gpud_backend *b, void *mem);
dstatus backend_upload(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		       unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen);
dstatus backend_download(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
			 unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen);
dstatus backend_run(gpud_backend *b, uint32_t queue, const kernel_def *k, const kernel_args *a,
		    const backend_tenant *t, const int *cancel, double *kernel_us,
		    backend_fetch *fetch, backend_done_fn done, void *arg, char *err,
		    size_t errlen);
dstatus backend_sync(gpud_backend *b, uint32_t queue, backend_done_fn done, void *arg, char *err,
		     size_t errlen);
dstatus backend_copy_peer(gpud_backend *b, uint32_t queue, gpud_backend *to, void *dst,
			  const void *src, size_t len, backend_done_fn done, void *arg, char *err,
			  size_t errlen);
void backend_prepare_tenant(gpud_backend *b, const char *tenant);

#endif
