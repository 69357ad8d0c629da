/*
 * daemon/backend/cpu.c — the cpu backend: buffers in host memory, copies and
 * kernels on libuv's work queue so the loop never waits on them. A kernel's
 * work items are split into chunks that run on the pool's threads in
 * parallel, the threads shared between tenants chunk by chunk, and a run
 * over its tenant's run_timeout stops between two chunks. This backend is
 * the correctness reference and what CI exercises.
 *
 * Work too small to be worth a worker's wake (a copy of up to
 * INLINE_COPY_BYTES, a run of up to INLINE_RUN_COST units, a sync) is done
 * on the loop itself when it is asked for, and its completion is reported
 * on the loop's next turn (the instance's `soon` list, an idle handle; work
 * that a completion starts, such as a run once its uploads are in, is done
 * and reported in that same turn): handing it to the pool and back would
 * cost two sleeping threads' wakes, more than the work. GPUD_CPU_INLINE=0 sends everything to the pool (the
 * comparison of bench/ring_latency.c). A run's fetch (backend.h: outputs
 * for the reply, at most BACKEND_FETCH_MAX bytes) is copied out on the loop
 * as the run reports its success.
 *
 * One instance per simulated device (cpu_devices: the placement and peer
 * copies of several devices, tested without a GPU; GPUD_CPU_LOSE_DEVICE
 * loses one). Threads: jobs are made and completed on the loop, and the
 * inline work is done there; the workers touch only their own job's chunk
 * (run_work, copy_work) or make a large buffer (alloc, for
 * request_alloc_off_loop); buffers' bytes come out of the host memory
 * budget, which is atomic (daemon/hostmem.h). The pool size is cpu_threads,
 * shared by every device.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/backend/backend.h"
#include "daemon/hostmem.h"
#include "daemon/log.h"
#include "kernels/core/cpu_kernel.h"

/* The pool's threads beyond cpu_threads: copies, and a tenant's first chunk
 * (the kernels' section below). */
#define POOL_SPARE 1

/* Done on the loop (the header comment): a copy of at most this many bytes
 * (a memcpy of 64 KiB takes a few microseconds, about one thread's wake)... */
#define INLINE_COPY_BYTES ((size_t)64 << 10)
/* ... and a run of at most this many units of cpu_kernel.item_cost (the
 * units of CHUNK_COST below: a few microseconds of work), of a kernel that
 * has an item_cost. */
#define INLINE_RUN_COST ((size_t)4096)

/* A completion due on the loop's next turn (work done inline). */
typedef struct soon_item soon_item;
struct soon_item {
	soon_item *next;
	void (*fire)(soon_item *it);
};

typedef struct cpu_backend {
	int threads;
	/* A simulated device loss (GPUD_CPU_LOSE_DEVICE=ID:RUNS, for tests of
	 * a lost device): this device's run number lose_at (from 1) fails as a
	 * sticky CUDA error would, and every later operation with it. 0: never.
	 * The loop's. */
	unsigned long lose_at, nruns;
	int lost;
	/* Completions of inline work, fired on the loop's next turn by the
	 * idle handle (started while the list is not empty). The loop's. */
	int inline_on; /* start made the handle, and GPUD_CPU_INLINE is not 0 */
	uv_idle_t soon_idle;
	soon_item *soon, **soon_tail;
} cpu_backend;

/*
 * Fires the completions due. What they start may be inline work of its own
 * (a run's uploads done, its run, then its downloads): that fires here too,
 * in the same turn, up to SOON_PER_TURN completions; the rest on the next
 * turn, so the loop's other work is not held up. Each fires from here, never
 * from inside the call that made it.
 */
#define SOON_PER_TURN 64

static void on_soon(uv_idle_t *h)
{
	cpu_backend *cb = h->data;
	unsigned fired = 0;
	while (cb->soon && fired < SOON_PER_TURN) {
		soon_item *it = cb->soon;
		cb->soon = NULL;
		cb->soon_tail = &cb->soon;
		while (it) {
			soon_item *next = it->next;
			if (fired++ >= SOON_PER_TURN) { /* the rest first on the next turn */
				soon_item **tail = &it->next;
				while (*tail)
					tail = &(*tail)->next;
				*tail = cb->soon;
				if (cb->soon == NULL)
					cb->soon_tail = tail;
				cb->soon = it;
				break;
			}
			it->fire(it);
			it = next;
		}
	}
	if (cb->soon == NULL)
		uv_idle_stop(h);
}

static void soon_push(gpud_backend *b, soon_item *it, void (*fire)(soon_item *))
{
	cpu_backend *cb = b->impl;
	it->next = NULL;
	it->fire = fire;
	if (cb->soon == NULL)
		uv_idle_start(&cb->soon_idle, on_soon);
	*cb->soon_tail = it;
	cb->soon_tail = &it->next;
}

static int cpu_count(const gpud_config *cfg, char *err, size_t errlen)
{
	return cfg->cpu_devices;
}

static int cpu_open(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen)
{
	cpu_backend *cb = calloc(1, sizeof(*cb));

	if (cb == NULL) {
		snprintf(err, errlen, "cpu backend: out of memory");
		return -1;
	}
	cb->threads = cfg->cpu_threads;
	b->impl = cb;
	/* every kernel's code from the cpu table (kernels/core/cpu_kernel.h), by id */
	if (cpu_kernel_tables_check(err, errlen) != 0)
		return -1;
	const char *lose = getenv("GPUD_CPU_LOSE_DEVICE");
	int id;
	unsigned long at;
	if (lose && sscanf(lose, "%d:%lu", &id, &at) == 2 && id == b->device) {
		cb->lose_at = at;
		log_warn("cpu backend: device %d will be lost at its run %lu "
			 "(GPUD_CPU_LOSE_DEVICE, a test of a lost device)",
			 id, at);
	}
	if (b->device > 0)
		return 0; /* the rest is said once */
	log_info("cpu backend: %d worker threads (and %d for copies and tenants' first chunks), "
		 "%d device%s",
		 cb->threads, POOL_SPARE, cfg->cpu_devices,
		 cfg->cpu_devices == 1 ? "" : "s (simulated)");
	/* Kernels that load a library (kernels/core/libs.h) load it now, not on a run. */
	size_t nk;
	const cpu_kernel *const *ks = cpu_kernel_list(&nk);
	char why[1024], last[1024] = "";
	for (size_t i = 0; i < nk; i++) {
		if (ks[i]->available && ks[i]->available(why, sizeof(why)) != 0 &&
		    strcmp(why, last) != 0) /* kernels sharing a library say it once */
			log_warn("%s", strcpy(last, why));
	}
	return 0;
}

/* On the loop: the idle handle of inline work's completions. */
static int cpu_start(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen)
{
	cpu_backend *cb = b->impl;
	const char *e = getenv("GPUD_CPU_INLINE");
	int rv = uv_idle_init(b->loop, &cb->soon_idle);
	if (rv != 0) {
		snprintf(err, errlen, "cpu backend: uv_idle_init: %s", uv_strerror(rv));
		return -1;
	}
	cb->soon_idle.data = cb;
	cb->soon = NULL;
	cb->soon_tail = &cb->soon;
	cb->inline_on = !(e && strcmp(e, "0") == 0);
	return 0;
}

static void free_backend(uv_handle_t *h)
{
	free(h->data);
}

static void cpu_close(gpud_backend *b)
{
	cpu_backend *cb = b->impl;
	b->impl = NULL;
	if (cb && b->started) /* the handle goes first; its close frees cb */
		uv_close((uv_handle_t *)&cb->soon_idle, free_backend);
	else
		free(cb);
}

/*
 * Twice the threads: one tenant may hold all slots but one (daemon/sched.h),
 * which fills every thread even with runs of one chunk each, and another
 * tenant's run always finds a slot; the threads are then shared chunk by
 * chunk (below), so a run holding a slot takes no more than its share.
 */
static int cpu_default_run_slots(gpud_backend *b, const gpud_config *cfg)
{
	cpu_backend *cb = b->impl;
	return 2 * cb->threads;
}

/*
 * Buffers are committed when granted: their bytes come out of the host
 * memory budget (daemon/hostmem.h) and every page is made now, zeroed (for
 * every owner: the heap hands back other tenants' freed blocks), so a
 * buffer gpud granted never turns into an OOM kill when it is first
 * written and never shows another tenant's bytes. A header before each block remembers what it took. Blocks below
 * CPU_MAP_BYTES come from the heap, on the loop; larger ones are mapped and
 * populated on a worker (alloc_cached says ST_WOULD_BLOCK: faulting in
 * 256 MiB takes tens of milliseconds) and unmapped when freed, so their
 * memory leaves the process at once instead of staying in glibc's heap
 * outside the budget.
 */
#define BLOCK_HEADER 64
#define CPU_MAP_BYTES ((size_t)1 << 20)

typedef struct block_header {
	size_t total; /* bytes taken from the budget: header and data (mapped: whole pages) */
	int mapped;
} block_header;

static dstatus cpu_alloc(gpud_backend *b, size_t bytes, uint64_t owner, void **mem, char *err,
			 size_t errlen)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t sz = (bytes + 63) & ~(size_t)63;
	if (sz < bytes || sz > SIZE_MAX - BLOCK_HEADER - page) {
		snprintf(err, errlen, "cpu backend: %zu bytes of host memory cannot be addressed",
			 bytes);
		return ST_OUT_OF_MEMORY;
	}
	int mapped = sz >= CPU_MAP_BYTES;
	size_t total = BLOCK_HEADER + sz;
	if (mapped)
		total = (total + page - 1) / page * page;
	if (hostmem_reserve(b->host, HOSTMEM_BUFFERS, total, err, errlen) != 0)
		return ST_OUT_OF_MEMORY;
	void *base = NULL;
	if (mapped) {
		base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			    0);
		if (base == MAP_FAILED) {
			base = NULL;
		} else if (madvise(base, total, MADV_POPULATE_WRITE) != 0) {
			if (errno == EINVAL) { /* a kernel before 5.14: touch every page */
				memset(base, 0, total);
			} else {
				int e = errno;
				munmap(base, total);
				hostmem_release(b->host, HOSTMEM_BUFFERS, total);
				snprintf(err, errlen,
					 "cpu backend: the kernel could not commit %zu bytes of "
					 "host memory: %s",
					 total, strerror(e));
				return ST_OUT_OF_MEMORY;
			}
		}
	} else if ((base = aligned_alloc(64, total)) != NULL) {
		memset(base, 0, total);
	}
	if (base == NULL) {
		hostmem_release(b->host, HOSTMEM_BUFFERS, total);
		snprintf(err, errlen, "cpu backend: cannot allocate %zu bytes of host memory",
			 bytes);
		return ST_OUT_OF_MEMORY;
	}
	*(block_header *)base = (block_header){.total = total, .mapped = mapped};
	*mem = (char *)base + BLOCK_HEADER;
	return ST_OK;
}

/* On the loop: small blocks now; a large one on a worker, unless the
 * budget refuses it already. */
static dstatus cpu_alloc_cached(gpud_backend *b, size_t bytes, uint64_t owner, void **mem,
				int *foreign, char *err, size_t errlen)
{
	*foreign = 0; /* zeroed for everyone */
	if (bytes < CPU_MAP_BYTES)
		return cpu_alloc(b, bytes, owner, mem, err, errlen);
	if (hostmem_fits(b->host, bytes, err, errlen) != 0)
		return ST_OUT_OF_MEMORY;
	return ST_WOULD_BLOCK;
}

static void cpu_free(gpud_backend *b, void *mem)
{
	if (mem == NULL)
		return;
	block_header *h = (block_header *)((char *)mem - BLOCK_HEADER);
	size_t total = h->total;
	if (h->mapped)
		munmap(h, total);
	else
		free(h);
	hostmem_release(b->host, HOSTMEM_BUFFERS, total);
}

/* --- copies ------------------------------------------------------------- */

typedef struct copy_job {
	uv_work_t work;
	soon_item soon; /* done inline: its completion */
	void *dst;
	const void *src;
	size_t len;
	backend_done_fn done;
	void *arg;
} copy_job;

static void copy_work(uv_work_t *w)
{
	copy_job *j = w->data;
	memcpy(j->dst, j->src, j->len);
}

static void copy_after(uv_work_t *w, int status)
{
	copy_job *j = w->data;
	backend_done_fn done = j->done;
	void *arg = j->arg;
	free(j);
	done(arg, status == 0 ? ST_OK : ST_INTERNAL,
	     status == 0 ? NULL : "cpu backend: copy cancelled");
}

static void copy_soon(soon_item *it)
{
	copy_job *j = (copy_job *)((char *)it - offsetof(copy_job, soon));
	backend_done_fn done = j->done;
	void *arg = j->arg;
	free(j);
	done(arg, ST_OK, NULL);
}

static dstatus lost_check(gpud_backend *b, int is_run, char *err, size_t errlen);

static dstatus cpu_copy(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
			unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	copy_job *j;
	int rv;
	dstatus lost = lost_check(b, 0, err, errlen);

	if (lost != ST_OK)
		return lost;
	if ((j = malloc(sizeof(*j))) == NULL) {
		snprintf(err, errlen, "cpu backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	*j = (copy_job){.dst = dst, .src = src, .len = len, .done = done, .arg = arg};
	if (len <= INLINE_COPY_BYTES && ((cpu_backend *)b->impl)->inline_on) {
		memcpy(dst, src, len);
		soon_push(b, &j->soon, copy_soon);
		return ST_OK;
	}
	j->work.data = j;
	if ((rv = uv_queue_work(b->loop, &j->work, copy_work, copy_after)) != 0) {
		free(j);
		snprintf(err, errlen, "cpu backend: uv_queue_work: %s", uv_strerror(rv));
		return ST_INTERNAL;
	}
	return ST_OK;
}

/* --- kernels -------------------------------------------------------------- */

/*
 * A run is cut into chunks of about CHUNK_COST units of work
 * (cpu_kernel.item_cost: a sine and cosine, a multiply-add), a few
 * milliseconds each, and the chunks of every run (of every device: the pool
 * is one) are handed to the pool's threads from the loop, cpu_threads at a
 * time, the next as one ends. So a cancelled run stops within a chunk.
 *
 * Which run's chunk goes next: the tenant with the fewest chunks on the
 * threads (ties: the one served longest ago), and of its runs the oldest
 * with a chunk left. A long run thus yields its thread at every chunk's end
 * when another tenant has work, and with two tenants busy each has half of
 * the threads. The pool has one thread more than cpu_threads
 * (backend_ops.pool_spare): copies, and the first chunk of a tenant that has
 * none on the threads, take it at once, so alice's short run (its upload,
 * its one chunk, its download) waits neither for bob's run nor for one of
 * his chunks; the cores are shared by the OS meanwhile. The chunks
 * themselves, and what they compute, are the same whatever the order (the
 * NUFFT's sub-grids follow the chunks' ranges), so results do not depend on
 * who else runs.
 */
#define CHUNK_COST ((size_t)1 << 20)

typedef struct run_job run_job;
typedef struct cpu_share cpu_share;

typedef struct run_chunk {
	uv_work_t work;
	run_job *job;
	size_t lo, hi;
	int skipped; /* the run was cancelled before this chunk began */
	int busy;    /* queued and not yet after'ed (loop only) */
} run_chunk;

/* A tenant with runs in the cpu backend ("" for work of no tenant). */
struct cpu_share {
	char name[GPUD_TENANT_NAME];
	run_job *runs, *runs_tail; /* oldest first */
	unsigned inflight;         /* its chunks queued on the pool */
	cpu_share *prev, *next;    /* the ring: served longest ago first */
};

struct run_job {
	const kernel_def *def; /* what the run is: its name, its verdicts' message */
	const cpu_kernel *k;   /* how: the cpu table's entry */
	const kernel_args *a;
	backend_done_fn done;
	void *arg;
	cpu_share *share;
	run_job *next_run;       /* its tenant's runs */
	size_t items, per_chunk; /* work items, and items per chunk */
	size_t next;             /* the first item not yet queued */
	int once;                /* an empty run: its one chunk of no items is still to queue */
	unsigned busy;           /* chunks queued and not yet after'ed */
	int failed;
	const int *cancel;                /* the request's flag, read by the workers */
	int skipped;                      /* a chunk found it set (run_after) */
	uint64_t deadline_ns, timeout_ms; /* run_timeout: 0, none */
	int timed_out;
	double *kernel_us;
	backend_fetch *fetch;   /* outputs to the host at its end (backend.h), or NULL */
	uint64_t t0_ns, end_ns; /* end_ns: a run done inline, when it ended (else 0) */
	soon_item soon;         /* done inline: its completion */
	unsigned verdict;       /* cpu_kernel.verdict's code: the first chunk's worker writes it */
	unsigned nchunks;       /* chunk slots: at most one chunk per pool thread */
	run_chunk chunks[];
};

/* The runs of every device and the pool's threads they share. The loop's. */
static struct {
	unsigned threads;  /* cpu_threads: chunks on the pool at once, but for the spare */
	unsigned inflight; /* chunks queued on the pool */
	cpu_share *head, *tail;
} pool;

static void run_work(uv_work_t *w)
{
	run_chunk *c = w->data;
	/* A cancelled run stops here, between chunks (run_after reads skipped
	 * on the loop once the work is done). */
	if (__atomic_load_n(c->job->cancel, __ATOMIC_ACQUIRE)) {
		c->skipped = 1;
		return;
	}
	/* Arguments whose values are wrong: the first chunk looks (the others
	 * run meanwhile; outputs of a run with a verdict hold no result). */
	if (c->lo == 0 && c->job->k->verdict)
		__atomic_store_n(&c->job->verdict, c->job->k->verdict(c->job->a), __ATOMIC_RELEASE);
	c->job->k->run(c->job->a, c->lo, c->hi);
}

static void run_after(uv_work_t *w, int status);

/* The run queues no further chunk: cancelled, failed, judged, or over its
 * run_timeout (noted here, at a chunk's end or before its next). */
static int run_stopping(run_job *j, uint64_t now)
{
	if (j->deadline_ns && !j->timed_out && now >= j->deadline_ns &&
	    (j->next < j->items || j->once))
		j->timed_out = 1;
	return j->failed || j->skipped || j->timed_out ||
	       __atomic_load_n(&j->verdict, __ATOMIC_ACQUIRE) != 0 ||
	       __atomic_load_n(j->cancel, __ATOMIC_ACQUIRE);
}

static int run_has_chunk(const run_job *j)
{
	return (j->next < j->items || j->once) && j->busy < j->nchunks;
}

/* The ring of shares: the one served last goes to its end. */
static void ring_unlink(cpu_share *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		pool.head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		pool.tail = s->prev;
	s->prev = s->next = NULL;
}

static void ring_append(cpu_share *s)
{
	s->prev = pool.tail;
	s->next = NULL;
	if (pool.tail)
		pool.tail->next = s;
	else
		pool.head = s;
	pool.tail = s;
}

/* The share of tenant name, made (at the ring's end) if it has no run yet. */
static cpu_share *share_of(const char *name)
{
	for (cpu_share *s = pool.head; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	cpu_share *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	snprintf(s->name, sizeof(s->name), "%s", name);
	ring_append(s);
	return s;
}

/* Queues j's next chunk into a free slot of its own. */
static void queue_chunk(uv_loop_t *loop, run_job *j)
{
	run_chunk *c = j->chunks;
	while (c->busy)
		c++;
	c->lo = j->next;
	c->hi = j->items - j->next > j->per_chunk ? j->next + j->per_chunk : j->items;
	j->next = c->hi;
	j->once = 0;
	c->skipped = 0;
	c->busy = 1;
	c->work.data = c;
	j->busy++;
	j->share->inflight++;
	pool.inflight++;
	/* uv_queue_work only fails on a NULL callback, which cannot happen here. */
	uv_queue_work(loop, &c->work, run_work, run_after);
}

/* Gives free threads chunks: the tenant with the fewest on the threads
 * (the first in the ring of those), its oldest run with a chunk left; the
 * spare thread only to a tenant with none there. */
static void pump(uv_loop_t *loop)
{
	uint64_t now = uv_hrtime();
	while (pool.inflight < pool.threads + POOL_SPARE) {
		cpu_share *best = NULL;
		run_job *pick = NULL;
		for (cpu_share *s = pool.head; s; s = s->next) {
			if (best && s->inflight >= best->inflight)
				continue;
			for (run_job *j = s->runs; j; j = j->next_run) {
				if (run_has_chunk(j) && !run_stopping(j, now)) {
					best = s;
					pick = j;
					break;
				}
			}
		}
		if (pick == NULL || (pool.inflight >= pool.threads && best->inflight > 0))
			return;
		queue_chunk(loop, pick);
		ring_unlink(best);
		ring_append(best);
	}
}

/* j has left its share (no chunk of it is queued): its outcome to done. */
static void run_end(run_job *j)
{
	uint64_t now = uv_hrtime();
	*j->kernel_us = (double)((j->end_ns ? j->end_ns : now) - j->t0_ns) / 1e3;
	backend_done_fn done = j->done;
	void *arg = j->arg;
	unsigned verdict = __atomic_load_n(&j->verdict, __ATOMIC_ACQUIRE);
	int left = j->next < j->items || j->once; /* items never queued */
	char msg[768];
	dstatus st = ST_OK;
	const char *m = NULL;
	if (verdict != 0 && !j->failed) {
		j->def->verdict_message(j->a, verdict, msg, sizeof(msg));
		st = ST_INVALID;
		m = msg;
	} else if (j->skipped || (left && __atomic_load_n(j->cancel, __ATOMIC_ACQUIRE))) {
		st = ST_CANCELLED;
		m = "cancelled: the cpu backend stopped between chunks";
	} else if (j->failed) {
		st = ST_INTERNAL;
		m = "cpu backend: kernel cancelled";
	} else if (j->timed_out && left) {
		snprintf(msg, sizeof(msg),
			 "run of %s stopped after %.1f s: over run_timeout (%g s); split the "
			 "work or ask the admin",
			 j->def->name, (double)(now - j->t0_ns) / 1e9, (double)j->timeout_ms / 1e3);
		st = ST_QUOTA;
		m = msg;
	}
	if (st == ST_OK && j->fetch) { /* the host's memory: at most BACKEND_FETCH_MAX bytes */
		backend_fetch *f = j->fetch;
		uint8_t *to = f->dst;
		for (int i = 0; i < f->n; i++) {
			memcpy(to, f->src[i], f->len[i]);
			to += f->len[i];
		}
		f->fetched = 1;
	}
	free(j);
	done(arg, st, m);
}

/*
 * After a chunk: runs that are over (every item done, or stopping) and have
 * nothing queued leave their share, free threads get chunks, then the runs
 * that left report. A run that stopped while it had no chunk queued (its
 * tenant's turn had not come) leaves here too, at the next chunk's end.
 */
static void run_after(uv_work_t *w, int status)
{
	run_chunk *c = w->data;
	run_job *j = c->job, *ended = NULL, **ended_tail = &ended;
	uv_loop_t *loop = w->loop;

	c->busy = 0;
	j->busy--;
	j->share->inflight--;
	pool.inflight--;
	if (status != 0)
		j->failed = 1;
	if (c->skipped)
		j->skipped = 1;
	uint64_t now = uv_hrtime();
	for (cpu_share *s = pool.head, *snext; s; s = snext) {
		snext = s->next;
		run_job **link = &s->runs, *last = NULL;
		while (*link) {
			run_job *r = *link;
			int over = run_stopping(r, now) || (r->next >= r->items && !r->once);
			if (r->busy > 0 || !over) {
				last = r;
				link = &r->next_run;
				continue;
			}
			*link = r->next_run;
			r->next_run = NULL;
			*ended_tail = r;
			ended_tail = &r->next_run;
		}
		s->runs_tail = last;
		if (s->runs == NULL) { /* nothing of it is queued either */
			ring_unlink(s);
			free(s);
		}
	}
	pump(loop);
	/* done may start other runs (cpu_run): the lists are consistent by now */
	while (ended) {
		run_job *r = ended;
		ended = r->next_run;
		run_end(r);
	}
}

/* A run done inline reports as one from the pool would (run_end). */
static void run_soon(soon_item *it)
{
	run_end((run_job *)((char *)it - offsetof(run_job, soon)));
}

/* A run small enough for the loop (INLINE_RUN_COST): done now, in one piece,
 * unless already cancelled or its arguments' values are refused. */
static dstatus run_inline(gpud_backend *b, const kernel_def *kd, const cpu_kernel *k,
			  const kernel_args *a, size_t items, const int *cancel, double *kernel_us,
			  backend_fetch *fetch, backend_done_fn done, void *arg, char *err,
			  size_t errlen)
{
	run_job *j = calloc(1, sizeof(*j));
	if (j == NULL) {
		snprintf(err, errlen, "cpu backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	*j = (run_job){.def = kd,
		       .k = k,
		       .a = a,
		       .done = done,
		       .arg = arg,
		       .items = items,
		       .next = items,
		       .cancel = cancel,
		       .kernel_us = kernel_us,
		       .fetch = fetch,
		       .t0_ns = uv_hrtime()};
	if (__atomic_load_n(cancel, __ATOMIC_ACQUIRE))
		j->skipped = 1;
	else if ((j->verdict = k->verdict ? k->verdict(a) : 0) == 0)
		k->run(a, 0, items);
	j->end_ns = uv_hrtime();
	soon_push(b, &j->soon, run_soon);
	return ST_OK;
}

/* --- a simulated lost device ---------------------------------------------- */

/* ST_BACKEND with err if the device is lost (or is lost by this run, which
 * then reports it through on_fatal before it fails, as the cuda backend does
 * on the loop once an operation met a sticky error). */
static dstatus lost_check(gpud_backend *b, int is_run, char *err, size_t errlen)
{
	cpu_backend *cb = b->impl;
	static const char why[] =
		"an illegal memory access was encountered (simulated: GPUD_CPU_LOSE_DEVICE)";
	if (!cb->lost && is_run && cb->lose_at && ++cb->nruns == cb->lose_at) {
		cb->lost = 1;
		if (b->on_fatal)
			b->on_fatal(b, why);
	}
	if (!cb->lost)
		return ST_OK;
	snprintf(err, errlen, "device %d is lost: %s", b->device, why);
	return ST_BACKEND;
}

static dstatus cpu_run(gpud_backend *b, uint32_t queue, const kernel_def *kd, const kernel_args *a,
		       const backend_tenant *t, const int *cancel, double *kernel_us,
		       backend_fetch *fetch, backend_done_fn done, void *arg, char *err,
		       size_t errlen)
{
	cpu_backend *cb = b->impl;
	/* a built-in's entry by its id (the tables were checked at open); none for a user's */
	const cpu_kernel *k = cpu_kernel_of(kd);
	dstatus lost = lost_check(b, 1, err, errlen);
	if (lost != ST_OK)
		return lost;
	if (k == NULL) {
		snprintf(
			err, errlen,
			"custom kernels need the cuda backend (this gpud runs the cpu backend; the "
			"arguments were checked and are fine)");
		return ST_UNSUPPORTED;
	}
	if (k->available && k->available(err, errlen) != 0)
		return ST_UNSUPPORTED;
	size_t items = k->items(a), cost = k->item_cost ? k->item_cost(a) : 1;
	size_t threads = (size_t)cb->threads;
	if (cost == 0)
		cost = 1;
	/* Only a kernel with an item_cost: without one an item may be any size. */
	if (cb->inline_on && k->item_cost && items <= INLINE_RUN_COST / cost)
		return run_inline(b, kd, k, a, items, cancel, kernel_us, fetch, done, arg, err,
				  errlen);
	/* Chunks of about CHUNK_COST, and at least one per thread where the items allow. */
	size_t per = CHUNK_COST / cost;
	if (per == 0)
		per = 1;
	if (items > 0 && per > (items + threads - 1) / threads)
		per = (items + threads - 1) / threads;
	if (per == 0)
		per = 1;
	size_t slots = items / per + (items % per != 0);
	if (slots > threads)
		slots = threads;
	if (slots == 0)
		slots = 1;
	run_job *j = calloc(1, sizeof(*j) + slots * sizeof(run_chunk));
	cpu_share *sh = j ? share_of(t && t->name ? t->name : "") : NULL;
	if (sh == NULL) {
		free(j);
		snprintf(err, errlen, "cpu backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	uint64_t t0 = uv_hrtime(), timeout_ms = t ? t->run_timeout_ms : 0;
	*j = (run_job){.def = kd,
		       .k = k,
		       .a = a,
		       .done = done,
		       .arg = arg,
		       .share = sh,
		       .items = items,
		       .per_chunk = per,
		       .once = items == 0, /* an empty run still runs once (its verdict) */
		       .cancel = cancel,
		       .timeout_ms = timeout_ms,
		       .deadline_ns = timeout_ms ? t0 + timeout_ms * 1000000u : 0,
		       .kernel_us = kernel_us,
		       .fetch = fetch,
		       .t0_ns = t0,
		       .nchunks = (unsigned)slots};
	for (size_t i = 0; i < slots; i++)
		j->chunks[i].job = j;
	if (sh->runs_tail)
		sh->runs_tail->next_run = j;
	else
		sh->runs = j;
	sh->runs_tail = j;
	pool.threads = (unsigned)threads; /* every device's: cpu_threads */
	pump(b->loop);
	return ST_OK;
}

/*
 * Every cpu operation has completed before its reply, so there is nothing
 * to wait for; done still comes from the loop, never from inside the call
 * (on its next turn).
 */
static void sync_work(uv_work_t *w)
{
}

static dstatus cpu_sync(gpud_backend *b, uint32_t queue, backend_done_fn done, void *arg, char *err,
			size_t errlen)
{
	copy_job *j = malloc(sizeof(*j));
	if (j == NULL) {
		snprintf(err, errlen, "cpu backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	*j = (copy_job){.done = done, .arg = arg};
	if (((cpu_backend *)b->impl)->inline_on) {
		soon_push(b, &j->soon, copy_soon);
		return ST_OK;
	}
	j->work.data = j;
	uv_queue_work(b->loop, &j->work, sync_work, copy_after);
	return ST_OK;
}

/* Device memory of one simulated device to another's: a copy as any other. */
static dstatus cpu_copy_peer(gpud_backend *b, uint32_t queue, gpud_backend *to, void *dst,
			     const void *src, size_t len, backend_done_fn done, void *arg,
			     char *err, size_t errlen)
{
	dstatus lost = lost_check(to, 0, err, errlen);
	if (lost != ST_OK)
		return lost;
	return cpu_copy(b, queue, dst, src, len, 0, done, arg, err, errlen);
}

/* A device of host memory: its size, and the worker threads as its "SMs". */
static int cpu_devices(gpud_backend *b, backend_device *out, int max)
{
	cpu_backend *cb = b->impl;
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out));
	out->index = b->device;
	snprintf(out->name, sizeof(out->name), "cpu (host memory)");
	long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES),
	     psz = sysconf(_SC_PAGESIZE);
	out->memory_total = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
	out->memory_free = avail > 0 && psz > 0 ? (uint64_t)avail * (uint64_t)psz : 0;
	out->sm_count = cb->threads;
	return 1;
}

const backend_ops backend_cpu_ops = {
	.name = "cpu",
	.pool_spare = POOL_SPARE,
	.count = cpu_count,
	.open = cpu_open,
	.start = cpu_start,
	.close = cpu_close,
	.default_run_slots = cpu_default_run_slots,
	.alloc = cpu_alloc,
	.alloc_cached = cpu_alloc_cached,
	.free = cpu_free,
	.upload = cpu_copy,
	.download = cpu_copy,
	.run = cpu_run,
	.sync = cpu_sync,
	.copy_peer = cpu_copy_peer,
	.devices = cpu_devices,
};
