/*
 * daemon/lend.h — host memory gpud lends to its ipc:// clients: sealed
 * memfds gpud made, mapped and (cuda) page-locked once, handed to a client
 * as one of its connection's host regions (GPUD_SHM_LEND, proto/shm.h).
 * A fresh client process then pays neither the pinning (~0.35 ms per MiB on
 * an H200) nor the page faults of fresh memory.
 *
 * A client that was lent a memfd can keep the descriptor, so memory once
 * lent to a tenant belongs to that tenant for good: when its region goes, it
 * is zeroed (on a worker) and kept for that tenant's next lend, never lent to
 * another. gpud keeps `lend_spare` bytes of memory lent to nobody yet, ready
 * in units of `lend_unit` bytes, and makes more on a worker as spares are
 * taken; a tenant keeps at most `lend_keep` bytes of returned memory, each
 * piece for at most `lend_keep_s` seconds unused; beyond that it is unpinned
 * and closed.
 *
 * Threads: the pool and its lists are the loop's; workers make memory
 * (memfd, map, fault in, pin), zero returned memory and free memory, each on
 * a piece no list holds meanwhile.
 */
#ifndef GPUD_LEND_H
#define GPUD_LEND_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/backend/backend.h"
#include "daemon/buffers.h"

typedef struct lend_mem {
	int fd;
	void *base; /* gpud's own mapping */
	size_t size;
	int pinned;
	gpud_tenant *tenant; /* NULL while a spare */
	uint64_t idle_since_ns;
	struct lend_pool *pool;
	uv_work_t work;
	/* the lend waiting for this piece to be made */
	void (*cb)(void *arg, struct lend_mem *lm, dstatus st, const char *err);
	void *cb_arg;
	char err[256];
	struct lend_mem *prev, *next; /* spares or kept */
} lend_mem;

typedef void (*lend_cb)(void *arg, lend_mem *lm, dstatus st, const char *err);

typedef struct lend_stats {
	uint64_t spare_bytes, kept_bytes, lent_bytes;
	uint64_t from_kept, from_spare, made; /* lends by where the memory came from */
} lend_stats;

typedef struct lend_pool {
	uv_loop_t *loop;
	gpud_backend *backend;
	size_t unit, spare_target, keep;
	uint64_t keep_ns;
	lend_mem *spares; /* lent to nobody yet, each unit bytes */
	lend_mem *kept;   /* returned, zeroed, each its tenant's */
	size_t making;    /* spare bytes being made */
	int pending;      /* pieces on workers */
	int stopping;
	int timer_on;
	uv_timer_t sweep;
	lend_stats st;
} lend_pool;

/* Starts making the spares on workers (unit, spare and keep bytes, keep_s seconds). */
void lend_start(lend_pool *lp, uv_loop_t *loop, gpud_backend *backend, size_t unit, size_t spare,
		size_t keep, unsigned keep_s);
/*
 * Memory of at least size bytes for tenant t: the smallest piece it kept that
 * fits, else a spare (size <= unit), else a piece made for it on a worker.
 * cb gets it (now, or once made) or a status and a reason.
 */
void lend_take(lend_pool *lp, gpud_tenant *t, size_t size, lend_cb cb, void *arg);
/* The client's region of lm is gone: zeroed on a worker, then kept for its tenant or freed. */
void lend_give_back(lend_pool *lp, lend_mem *lm);
/* Pieces on workers (shutdown waits for them). */
int lend_pending(const lend_pool *lp);
/* Stops making spares and the sweep timer (before the loop's last turns). */
void lend_stop(lend_pool *lp);
/* Frees the spares and kept pieces on this thread (shutdown, after lend_pending is 0). */
void lend_fini(lend_pool *lp);
/* Frees a piece nobody holds now, on this thread (one still lent at shutdown). */
void lend_free_now(lend_pool *lp, lend_mem *lm);

#endif
