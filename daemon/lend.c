/*
 * daemon/lend.c — host memory gpud lends (daemon/lend.h): spares made ahead
 * on workers, pieces bound to a tenant once lent, zeroed on return and kept
 * for that tenant, swept when unused. Every piece's bytes are reserved in
 * the host memory budget (daemon/hostmem.h, atomic) before it is made and
 * given back when it is freed (free_work, on a worker or at shutdown).
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <utlist.h>

#include "daemon/clock.h"
#include "daemon/hostmem.h"
#include "daemon/lend.h"
#include "daemon/log.h"
#include "daemon/loop.h"

#define SWEEP_MS 10000
#define ALIGN_BYTES (2u << 20) /* pieces made to order: whole huge pages */

/* --- on workers ----------------------------------------------------------------------- */

/* A sealed memfd of lm->size bytes, mapped, faulted in and pinned (where the backend pins). */
static void make_work(uv_work_t *w)
{
	lend_mem *lm = w->data;
	gpud_backend *b = lm->pool->backend;

	lm->fd = memfd_create("gpud-lend", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (lm->fd < 0) {
		snprintf(lm->err, sizeof(lm->err), "memfd_create: %s", strerror(errno));
		return;
	}
	/* Sealed: a client cannot shrink it under gpud's mapping (SIGBUS) or grow it. */
	if (ftruncate(lm->fd, (off_t)lm->size) != 0 ||
	    fcntl(lm->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		snprintf(lm->err, sizeof(lm->err), "sizing a %zu-byte memfd: %s", lm->size,
			 strerror(errno));
		goto fail;
	}
	lm->base = mmap(NULL, lm->size, PROT_READ | PROT_WRITE, MAP_SHARED, lm->fd, 0);
	if (lm->base == MAP_FAILED) {
		lm->base = NULL;
		snprintf(lm->err, sizeof(lm->err), "mapping a %zu-byte memfd: %s", lm->size,
			 strerror(errno));
		goto fail;
	}
	/* Huge pages where the host offers them for shmem (fewer faults for the
	 * client too); then every page made now, not on a client's first touch. */
	(void)madvise(lm->base, lm->size, MADV_HUGEPAGE);
	if (madvise(lm->base, lm->size, MADV_POPULATE_WRITE) != 0)
		memset(lm->base, 0, lm->size);
	if (b->ops->host_register) {
		char err[256];
		if (b->ops->host_register(b, lm->base, lm->size, err, sizeof(err)) == ST_OK)
			lm->pinned = 1;
		else
			log_warn("lent memory of %zu bytes not pinned (%s); copies from it are "
				 "staged",
				 lm->size, err);
	}
	return;
fail:
	close(lm->fd);
	lm->fd = -1;
}

static void wipe_work(uv_work_t *w)
{
	lend_mem *lm = w->data;
	memset(lm->base, 0, lm->size);
}

static void free_work(uv_work_t *w)
{
	lend_mem *lm = w->data;
	gpud_backend *b = lm->pool->backend;
	if (lm->base) {
		if (lm->pinned && b->ops->host_unregister)
			b->ops->host_unregister(b, lm->base);
		munmap(lm->base, lm->size);
	}
	if (lm->fd >= 0)
		close(lm->fd);
	/* A client may still map the memfd, but gpud no longer commits to it. */
	hostmem_release(b->host, HOSTMEM_LENT, lm->size);
}

/* --- on the loop ---------------------------------------------------------------------- */

static void free_after(uv_work_t *w, int status)
{
	lend_mem *lm = w->data;
	lm->pool->pending--;
	free(lm);
}

static void free_later(lend_pool *lp, lend_mem *lm)
{
	lp->pending++;
	lm->work.data = lm;
	uv_queue_work(lp->loop, &lm->work, free_work, free_after);
}

static void refill(lend_pool *lp);

static void made_after(uv_work_t *w, int status)
{
	lend_mem *lm = w->data;
	lend_pool *lp = lm->pool;
	lp->pending--;
	lend_cb cb = lm->cb;
	void *arg = lm->cb_arg;
	lm->cb = NULL;
	if (lm->fd < 0) {
		hostmem_release(lp->backend->host, HOSTMEM_LENT, lm->size);
		if (cb) {
			char err[300];
			snprintf(err, sizeof(err), "cannot make %zu bytes to lend: %s", lm->size,
				 lm->err);
			cb(arg, NULL, ST_OUT_OF_MEMORY, err);
		} else {
			log_warn("lent memory: cannot make a %zu-byte spare: %s", lm->size,
				 lm->err);
			lp->making -= lm->size;
		}
		free(lm);
		return;
	}
	if (cb) { /* made to order: its tenant's from now on */
		lp->st.made++;
		lp->st.lent_bytes += lm->size;
		cb(arg, lm, ST_OK, NULL);
		return;
	}
	lp->making -= lm->size;
	if (lp->stopping) {
		free_later(lp, lm);
		return;
	}
	DL_APPEND(lp->spares, lm);
	lp->st.spare_bytes += lm->size;
	log_debug("lent memory: a %zu-byte spare ready (%" PRIu64 " bytes spare)", lm->size,
		  lp->st.spare_bytes);
}

static lend_mem *new_piece(lend_pool *lp, size_t size)
{
	lend_mem *lm = calloc(1, sizeof(*lm));
	if (lm == NULL)
		return NULL;
	lm->fd = -1;
	lm->size = size;
	lm->pool = lp;
	return lm;
}

static void make(lend_pool *lp, lend_mem *lm)
{
	lp->pending++;
	lm->work.data = lm;
	uv_queue_work(lp->loop, &lm->work, make_work, made_after);
}

static void refill(lend_pool *lp)
{
	char why[256];
	while (!lp->stopping && lp->unit > 0 &&
	       lp->st.spare_bytes + lp->making + lp->unit <= lp->spare_target) {
		/* Spares are a convenience: none while clients' memory fills the budget. */
		if (hostmem_reserve(lp->backend->host, HOSTMEM_LENT, lp->unit, why, sizeof(why)) !=
		    0) {
			log_debug("lent memory: no spare made: %s", why);
			return;
		}
		lend_mem *lm = new_piece(lp, lp->unit);
		if (lm == NULL) {
			hostmem_release(lp->backend->host, HOSTMEM_LENT, lp->unit);
			return;
		}
		lp->making += lm->size;
		make(lp, lm);
	}
}

static uint64_t kept_by(const lend_pool *lp, const gpud_tenant *t)
{
	uint64_t n = 0;
	const lend_mem *lm;
	DL_FOREACH(lp->kept, lm)
	{
		if (lm->tenant == t)
			n += lm->size;
	}
	return n;
}

/* Kept pieces unused for keep_s go. */
static void on_sweep(uv_timer_t *h)
{
	lend_pool *lp = h->data;
	uint64_t now = now_ns();
	lend_mem *lm, *tmp;
	DL_FOREACH_SAFE(lp->kept, lm, tmp)
	{
		if (now - lm->idle_since_ns < lp->keep_ns)
			continue;
		DL_DELETE(lp->kept, lm);
		lp->st.kept_bytes -= lm->size;
		log_conn(LOG_DEBUG, 0, lm->tenant->name,
			 "lent memory: %zu bytes of tenant %s unused for %.0f s, released",
			 lm->size, lm->tenant->name, (double)lp->keep_ns / 1e9);
		free_later(lp, lm);
	}
}

void lend_start(lend_pool *lp, uv_loop_t *loop, gpud_backend *backend, size_t unit, size_t spare,
		size_t keep, unsigned keep_s)
{
	memset(lp, 0, sizeof(*lp));
	lp->loop = loop;
	lp->backend = backend;
	lp->unit = unit;
	lp->spare_target = spare;
	lp->keep = keep;
	lp->keep_ns = (uint64_t)keep_s * 1000000000ull;
	uv_timer_init(loop, &lp->sweep);
	lp->sweep.data = lp;
	uv_timer_start(&lp->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
	uv_unref((uv_handle_t *)&lp->sweep);
	lp->timer_on = 1;
	refill(lp);
}

void lend_take(lend_pool *lp, gpud_tenant *t, size_t size, lend_cb cb, void *arg)
{
	lend_mem *lm, *best = NULL;

	ON_LOOP("lend_take");
	DL_FOREACH(lp->kept, lm)
	{
		if (lm->tenant == t && lm->size >= size && (best == NULL || lm->size < best->size))
			best = lm;
	}
	if (best) {
		DL_DELETE(lp->kept, best);
		lp->st.kept_bytes -= best->size;
		lp->st.lent_bytes += best->size;
		lp->st.from_kept++;
		cb(arg, best, ST_OK, NULL);
		return;
	}
	if (size <= lp->unit && lp->spares) {
		lm = lp->spares;
		DL_DELETE(lp->spares, lm);
		lp->st.spare_bytes -= lm->size;
		lp->st.lent_bytes += lm->size;
		lp->st.from_spare++;
		lm->tenant = t;
		refill(lp);
		cb(arg, lm, ST_OK, NULL);
		return;
	}
	size_t want = size <= lp->unit ? lp->unit
				       : (size + ALIGN_BYTES - 1) / ALIGN_BYTES * ALIGN_BYTES;
	char why[256], msg[320];
	if (want < size) {
		cb(arg, NULL, ST_OUT_OF_MEMORY, "gpud is out of memory");
		return;
	}
	if (hostmem_reserve(lp->backend->host, HOSTMEM_LENT, want, why, sizeof(why)) != 0) {
		snprintf(msg, sizeof(msg), "cannot lend %zu bytes: %s", size, why);
		cb(arg, NULL, ST_OUT_OF_MEMORY, msg);
		return;
	}
	if ((lm = new_piece(lp, want)) == NULL) {
		hostmem_release(lp->backend->host, HOSTMEM_LENT, want);
		cb(arg, NULL, ST_OUT_OF_MEMORY, "gpud is out of memory");
		return;
	}
	lm->tenant = t;
	lm->cb = cb;
	lm->cb_arg = arg;
	make(lp, lm);
}

static void wiped_after(uv_work_t *w, int status)
{
	lend_mem *lm = w->data;
	lend_pool *lp = lm->pool;
	lp->pending--;
	if (lp->stopping || kept_by(lp, lm->tenant) + lm->size > lp->keep || lp->keep_ns == 0) {
		free_later(lp, lm);
		return;
	}
	lm->idle_since_ns = now_ns();
	DL_PREPEND(lp->kept, lm);
	lp->st.kept_bytes += lm->size;
}

void lend_give_back(lend_pool *lp, lend_mem *lm)
{
	ON_LOOP("lend_give_back");
	lp->st.lent_bytes -= lm->size;
	if (lp->stopping || lp->keep_ns == 0 || kept_by(lp, lm->tenant) + lm->size > lp->keep) {
		free_later(lp, lm); /* never lent again: nothing to zero */
		return;
	}
	lp->pending++;
	lm->work.data = lm;
	uv_queue_work(lp->loop, &lm->work, wipe_work, wiped_after);
}

int lend_pending(const lend_pool *lp)
{
	return lp->pending;
}

void lend_stop(lend_pool *lp)
{
	lp->stopping = 1;
	if (lp->timer_on) {
		uv_timer_stop(&lp->sweep);
		uv_close((uv_handle_t *)&lp->sweep, NULL);
		lp->timer_on = 0;
	}
}

void lend_free_now(lend_pool *lp, lend_mem *lm)
{
	free_work(&(uv_work_t){.data = lm});
	free(lm);
}

void lend_fini(lend_pool *lp)
{
	lend_mem *lm, *tmp;
	lend_stop(lp);
	DL_FOREACH_SAFE(lp->spares, lm, tmp)
	{
		DL_DELETE(lp->spares, lm);
		lend_free_now(lp, lm);
	}
	DL_FOREACH_SAFE(lp->kept, lm, tmp)
	{
		DL_DELETE(lp->kept, lm);
		lend_free_now(lp, lm);
	}
	lp->st.spare_bytes = lp->st.kept_bytes = 0;
}
