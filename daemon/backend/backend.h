/*
 * daemon/backend.h — the backend ops table, gpud's seam between requests
 * and the hardware (in the manner of nng's transport ops and RMM's memory
 * resources). `cpu` is the reference and what CI runs end to end; `cuda` is
 * the product.
 *
 * Every op is called on the loop thread. Ops that take a backend_done_fn
 * never block the loop: they start the work and return 0, and later call
 * done exactly once, on the loop thread, with a status (a Gpud__Status value)
 * and a message for errors. If they return non-zero (with err set), done is
 * never called.
 */
#ifndef GPUD_BACKEND_H
#define GPUD_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/config.h"
#include "kernels/core/kernel.h"

typedef struct gpud_backend gpud_backend;
struct custom_kernel;
typedef void (*backend_done_fn)(void *arg, int status, const char *msg);

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
} backend_pool_stats;

typedef struct backend_staging_stats {
	uint32_t buffers, free;
	uint64_t chunk, bytes_staged;
} backend_staging_stats;

/* Copy flags. */
enum {
	/* The host side is page-locked (a pinned host region): the copy can be
	 * DMA straight from/to it, with no staging. */
	BACKEND_HOST_PINNED = 1u << 0,
};

typedef struct backend_ops {
	const char *name;
	int (*open)(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen);
	void (*close)(gpud_backend *b);
	/* Synchronous and quick (a pool hit). 0, or a Gpud__Status + err. */
	int (*alloc)(gpud_backend *b, size_t bytes, void **mem, char *err, size_t errlen);
	void (*free)(gpud_backend *b, void *mem);
	/*
	 * `queue` names the session: one queue's operations execute in order,
	 * different queues' may overlap (cuda: one stream per queue, from a
	 * fixed set).
	 */
	/* Host src (lives until done) -> backend dst. flags: BACKEND_HOST_*. */
	int (*upload)(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		      unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen);
	/* Backend src -> host dst (lives until done). */
	int (*download)(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
			unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen);
	/* Runs a bound, checked kernel; arrays live until done. *kernel_us is set
	 * (before done) to the kernel's own time. */
	int (*run)(gpud_backend *b, uint32_t queue, const kernel_def *k, const kernel_args *a,
		   double *kernel_us, backend_done_fn done, void *arg, char *err, size_t errlen);
	/* done once everything queued on `queue` before it has completed. */
	int (*sync)(gpud_backend *b, uint32_t queue, backend_done_fn done, void *arg, char *err,
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
	int (*host_register)(gpud_backend *b, void *p, size_t len, char *err, size_t errlen);
	void (*host_unregister)(gpud_backend *b, void *p);
	/*
	 * Custom kernels (kernels/custom.h). NULL where the backend runs none
	 * (cpu). compile: build k's code, or load it from the cache directory
	 * (may be ""), on a worker; done on the loop, with the compiler's log as
	 * the message on failure. compile_now: the same on this thread (at start,
	 * before gpud serves). release: give the code back (after the last run).
	 */
	int (*compile)(gpud_backend *b, struct custom_kernel *k, const char *cache_dir,
		       backend_done_fn done, void *arg, char *err, size_t errlen);
	int (*compile_now)(gpud_backend *b, struct custom_kernel *k, const char *cache_dir,
			   char *err, size_t errlen);
	void (*release)(gpud_backend *b, struct custom_kernel *k);
} backend_ops;

struct gpud_backend {
	const backend_ops *ops;
	uv_loop_t *loop;
	void *impl;
	/*
	 * Set by the owner: called on the loop when the backend can no longer
	 * work (a sticky CUDA error). The owner fails everything and exits.
	 */
	void (*on_fatal)(gpud_backend *b, const char *msg);
	void *owner;
};

extern const backend_ops backend_cpu_ops;
#ifdef GPUD_HAVE_CUDA
extern const backend_ops backend_cuda_ops;
#endif

/*
 * Opens the backend named in cfg->backend ("auto" picks cuda when a device
 * is present, else cpu with a warning). 0 or -1 + err.
 */
int backend_open(gpud_backend *b, uv_loop_t *loop, const gpud_config *cfg, char *err,
		 size_t errlen);
void backend_close(gpud_backend *b);

#endif
