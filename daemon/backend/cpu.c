/*
 * daemon/backend/cpu.c — the cpu backend: buffers in host memory, copies and
 * kernels on libuv's work queue so the loop never waits on them. A kernel's
 * work items are split into chunks that run on the pool's threads in
 * parallel. This backend is the correctness reference and what CI exercises.
 *
 * One instance per simulated device (cpu_devices: the placement and peer
 * copies of several devices, tested without a GPU; GPUD_CPU_LOSE_DEVICE
 * loses one). Threads: jobs are made and completed on the loop; the workers
 * touch only their own job's chunk (run_work, copy_work) or make a large
 * buffer (alloc, for request_alloc_off_loop); buffers' bytes come out of
 * the host memory budget, which is atomic (daemon/hostmem.h). The pool size
 * is cpu_threads, shared by every device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/backend/backend.h"
#include "daemon/hostmem.h"
#include "daemon/log.h"

typedef struct cpu_backend {
	int threads;
	/* A simulated device loss (GPUD_CPU_LOSE_DEVICE=ID:RUNS, for tests of
	 * a lost device): this device's run number lose_at (from 1) fails as a
	 * sticky CUDA error would, and every later operation with it. 0: never.
	 * The loop's. */
	unsigned long lose_at, nruns;
	int lost;
} cpu_backend;

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
	log_info("cpu backend: %d worker threads, %d device%s", cb->threads, cfg->cpu_devices,
		 cfg->cpu_devices == 1 ? "" : "s (simulated)");
	/* Kernels that load a library (kernels/core/libs.h) load it now, not on a run. */
	size_t nk;
	const kernel_def *const *ks = kernel_list(&nk);
	char why[1024], last[1024] = "";
	for (size_t i = 0; i < nk; i++) {
		if (ks[i]->cpu_available && ks[i]->cpu_available(why, sizeof(why)) != 0 &&
		    strcmp(why, last) != 0) /* kernels sharing a library say it once */
			log_warn("%s", strcpy(last, why));
	}
	return 0;
}

static void cpu_close(gpud_backend *b)
{
	free(b->impl);
	b->impl = NULL;
}

static int cpu_default_run_slots(gpud_backend *b, const gpud_config *cfg)
{
	return 1;
}

/*
 * Buffers are committed when granted: their bytes come out of the host
 * memory budget (daemon/hostmem.h) and every page is made now, zeroed, so a
 * buffer gpud granted never turns into an OOM kill when it is first
 * written. A header before each block remembers what it took. Blocks below
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

static dstatus cpu_alloc(gpud_backend *b, size_t bytes, void **mem, char *err, size_t errlen)
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
static dstatus cpu_alloc_cached(gpud_backend *b, size_t bytes, void **mem, char *err, size_t errlen)
{
	if (bytes < CPU_MAP_BYTES)
		return cpu_alloc(b, bytes, mem, err, errlen);
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
 * (kernel_def.cpu_item_cost: a sine and cosine, a multiply-add), a few
 * milliseconds each, and at most one chunk per worker thread is queued at a
 * time: the next is queued from the loop as one ends. So a cancelled run
 * (an explicit cancel, or its connection closed) stops within one chunk per
 * thread, whatever its size and however loaded the machine, and other
 * clients' copies and runs queued on the same pool never wait behind a whole
 * run's chunks.
 */
#define CHUNK_COST ((size_t)1 << 20)

typedef struct run_job run_job;
typedef struct run_chunk {
	uv_work_t work;
	run_job *job;
	size_t lo, hi;
	int skipped; /* the run was cancelled before this chunk began */
} run_chunk;

struct run_job {
	uv_loop_t *loop;
	const kernel_def *k;
	const kernel_args *a;
	backend_done_fn done;
	void *arg;
	size_t items, per_chunk; /* work items, and items per chunk */
	size_t next;             /* the first item not yet queued (loop only) */
	size_t busy;             /* chunks queued and not yet after'ed (loop only) */
	int failed;
	const int *cancel; /* the request's flag, read by the workers */
	int skipped;       /* a chunk found it set (run_after, on the loop) */
	double *kernel_us;
	uint64_t t0_ns;
	unsigned verdict;   /* kernel_def.cpu_verdict's code: the first chunk's worker writes it */
	run_chunk chunks[]; /* one slot per worker thread, reused */
};

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
	if (c->lo == 0 && c->job->k->cpu_verdict)
		__atomic_store_n(&c->job->verdict, c->job->k->cpu_verdict(c->job->a),
				 __ATOMIC_RELEASE);
	c->job->k->cpu_run(c->job->a, c->lo, c->hi);
}

static void run_after(uv_work_t *w, int status);

/* Queues the next chunk into slot c (on the loop). */
static void queue_chunk(run_job *j, run_chunk *c)
{
	c->lo = j->next;
	c->hi = j->items - j->next > j->per_chunk ? j->next + j->per_chunk : j->items;
	j->next = c->hi;
	c->skipped = 0;
	c->work.data = c;
	j->busy++;
	/* uv_queue_work only fails on a NULL callback, which cannot happen here. */
	uv_queue_work(j->loop, &c->work, run_work, run_after);
}

static void run_after(uv_work_t *w, int status)
{
	run_chunk *c = w->data;
	run_job *j = c->job;

	j->busy--;
	if (status != 0)
		j->failed = 1;
	if (c->skipped)
		j->skipped = 1;
	unsigned verdict = __atomic_load_n(&j->verdict, __ATOMIC_ACQUIRE);
	int stop = j->failed || j->skipped || verdict != 0 ||
		   __atomic_load_n(j->cancel, __ATOMIC_ACQUIRE);
	if (!stop && j->next < j->items) {
		queue_chunk(j, c); /* this slot is free again */
		return;
	}
	if (j->busy > 0)
		return;
	if (stop && j->next < j->items && !j->failed && verdict == 0)
		j->skipped = 1; /* cancelled with items never queued */
	*j->kernel_us = (double)(uv_hrtime() - j->t0_ns) / 1e3;
	backend_done_fn done = j->done;
	void *arg = j->arg;
	int failed = j->failed, skipped = j->skipped;
	char msg[768];
	if (verdict != 0 && !failed) {
		j->k->verdict_message(j->a, j->verdict, msg, sizeof(msg));
		free(j);
		done(arg, ST_INVALID, msg);
		return;
	}
	free(j);
	if (skipped)
		done(arg, ST_CANCELLED, "cancelled: the cpu backend stopped between chunks");
	else
		done(arg, failed ? ST_INTERNAL : ST_OK,
		     failed ? "cpu backend: kernel cancelled" : NULL);
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

static dstatus cpu_run(gpud_backend *b, uint32_t queue, const kernel_def *k, const kernel_args *a,
		       const backend_tenant *t, const int *cancel, double *kernel_us,
		       backend_done_fn done, void *arg, char *err, size_t errlen)
{
	cpu_backend *cb = b->impl;
	dstatus lost = lost_check(b, 1, err, errlen);
	if (lost != ST_OK)
		return lost;
	if (k->cpu_items == NULL || k->cpu_run == NULL) {
		snprintf(
			err, errlen,
			"custom kernels need the cuda backend (this gpud runs the cpu backend; the "
			"arguments were checked and are fine)");
		return ST_UNSUPPORTED;
	}
	if (k->cpu_available && k->cpu_available(err, errlen) != 0)
		return ST_UNSUPPORTED;
	size_t items = k->cpu_items(a), cost = k->cpu_item_cost ? k->cpu_item_cost(a) : 1;
	size_t threads = (size_t)cb->threads;
	if (cost == 0)
		cost = 1;
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
	if (j == NULL) {
		snprintf(err, errlen, "cpu backend: out of memory");
		return ST_OUT_OF_MEMORY;
	}
	*j = (run_job){.loop = b->loop,
		       .k = k,
		       .a = a,
		       .done = done,
		       .arg = arg,
		       .items = items,
		       .per_chunk = per,
		       .cancel = cancel,
		       .kernel_us = kernel_us,
		       .t0_ns = uv_hrtime()};
	for (size_t i = 0; i < slots; i++)
		j->chunks[i].job = j;
	if (items == 0) { /* an empty run still runs once (its verdict) */
		j->chunks[0].work.data = &j->chunks[0];
		j->busy = 1;
		uv_queue_work(b->loop, &j->chunks[0].work, run_work, run_after);
		return ST_OK;
	}
	for (size_t i = 0; i < slots; i++)
		queue_chunk(j, &j->chunks[i]);
	return ST_OK;
}

/*
 * Every cpu operation has completed before its reply, so there is nothing
 * to wait for; done still comes from the loop, never from inside the call.
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
	.count = cpu_count,
	.open = cpu_open,
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
