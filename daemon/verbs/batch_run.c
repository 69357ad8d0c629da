/*
 * daemon/verbs/batch_run.c — dynamic batching of run requests: small
 * single-series lombscargle runs of any clients that share their parameters
 * (kernels/lombscargle/batch_kernel.h: dtype, precenter, normalize,
 * floating_mean, legacy, the grid f0/df/nf) and their device wait in a
 * group of the batcher (daemon/batch.h) for batch_delay_us, or until
 * batch_max of them are in, and then run as one launch of gpud's own
 * kernel lombscargle_batch through the backend's ordinary run op:
 *
 *   run_submit -> run_batch_take -> batcher_add ... flush -> run_batch_flush
 *     -> table of descriptors (each request's own x, y, weights and pgram,
 *        used in place: nothing is copied) -> a block of the device (owner
 *        gpud; on a worker where it would wait) -> upload of the table and
 *        the zeroed verdict words, and (queue_ordered backends) a sync of
 *        every other member's queue -> a slot of the run scheduler (in the
 *        queue of the group's first tenant) -> backend_run on the first
 *        member's queue -> download of the verdicts -> each request ends
 *        on its own (run_ended): its output already holds its result; a
 *        series with a verdict (bad weights) fails only its request, with
 *        lombscargle's message.
 *
 * A request cancelled, or whose connection closed, while its group waits
 * leaves the group and fails CANCELLED; once the launch is under way it
 * ends as a run cancelled while it ran. A batch that cannot be set up
 * (memory) lets each of its runs go alone; one whose launch fails fails
 * each run with the backend's message. With batch_delay_us = 0 nothing
 * here is reached. Runs of different tenants batch together (the built-in
 * kernels run in gpud's own context), except with kernel_workers on a
 * backend that has tenant workers (cuda), where each tenant's runs batch
 * apart.
 *
 * Loop thread, but for the block made on a worker (alloc_work).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/batch.h"
#include "daemon/verbs/run.h"
#include "daemon/verbs/verbs.h"
#include "kernels/lombscargle/batch_kernel.h"
#include "kernels/lombscargle/lombscargle.h"

extern const kernel_def kernel_lombscargle;

typedef struct batch_job {
	gpud_core *core;
	gpud_device *dev;
	uint32_t queue; /* the first member's: the table, the launch and the verdicts go there */
	ls_many p;
	long long max_n;
	size_t n;
	ls_series *table; /* host: n descriptors, then n verdict words */
	size_t bytes;
	void *mem; /* the device's copy */
	kernel_args kargs;
	double kernel_us;
	int cancel; /* never set: a launch runs for all its runs */
	sched_item slot;
	int pending; /* copies and syncs in flight before the launch */
	dstatus status;
	char msg[512];
	uv_work_t work; /* the block made on a worker */
	char tenant[64];
	run_request *q[]; /* the members, in the order they came */
} batch_job;

static run_request *run_of_item(batch_item *it)
{
	return (run_request *)((char *)it - offsetof(run_request, batch));
}

static unsigned *verdicts_of(batch_job *j)
{
	return (unsigned *)(j->table + j->n);
}

/* --- which runs join, and their key ----------------------------------------------------- */

/* 0 and *key when q may join a batch, else -1. */
static int batch_key_of(run_request *q, batch_key *key)
{
	gpud_request *r = &q->r;
	const gpud_config *cfg = r->core->cfg;
	ls_many p;
	long long work;
	char why[128];

	if (r->core->batch == NULL || cfg->batch_delay_us <= 0 || q->kernel == NULL ||
	    q->kernel->id != KERNEL_ID_lombscargle || r->dev == NULL)
		return -1;
	if (ls_batch_shared(&q->kargs, &p, &work, why, sizeof(why)) != 0 ||
	    work > (long long)cfg->batch_max_work)
		return -1;
	memset(key, 0, sizeof(*key));
	key->w[0] = (uint64_t)(uintptr_t)r->dev;
	/* tenant workers (kernel_workers, on a backend that runs users'
	 * kernels: cuda): each tenant's runs apart */
	key->w[1] = cfg->kernel_workers && r->dev->be.ops->compile ? (uint64_t)(uintptr_t)r->tenant
								   : 0;
	key->w[2] = (uint64_t)p.dtype;
	key->w[3] = (uint64_t)p.precenter;
	key->w[4] = (uint64_t)p.normalize;
	key->w[5] = (uint64_t)p.floating_mean;
	key->w[6] = (uint64_t)p.legacy;
	memcpy(&key->w[7], &p.f0, sizeof(double));
	memcpy(&key->w[8], &p.df, sizeof(double));
	key->w[9] = (uint64_t)p.m;
	return 0;
}

int run_batch_wanted(run_request *q)
{
	batch_key k;
	return batch_key_of(q, &k) == 0;
}

/* Cancelled while its group waits: out of the group, failed; later, the
 * launch runs on and run_finish fails it. */
static void batch_cancel(gpud_request *r)
{
	run_request *q = run_of(r);
	if (!batcher_remove(r->core->batch, &q->batch))
		return;
	char m[320];
	snprintf(m, sizeof(m), "run %s: cancelled (%s) before it started", q->kernel->name,
		 r->cancel_why);
	run_ended(q, ST_CANCELLED, m, 1);
}

int run_batch_take(run_request *q)
{
	gpud_request *r = &q->r;
	const gpud_config *cfg = r->core->cfg;
	/* issued behind its uploads on its own queue (early.c): it stays there */
	if (q->early.on || batch_key_of(q, &q->batch.key) != 0)
		return 0;
	r->on_cancel = batch_cancel; /* before: a full group flushes within batcher_add */
	if (batcher_add(r->core->batch, &q->batch, (uint64_t)cfg->batch_delay_us,
			(size_t)cfg->batch_max))
		return 1;
	return 0; /* stopping: it goes alone (run_alone sets its cancel back) */
}

/* --- the launch ------------------------------------------------------------------------------ */

static void job_free(batch_job *j)
{
	if (j->mem)
		backend_free(&j->dev->be, j->mem);
	free(j->table);
	free(j);
}

/* Setting up failed before anything ran: each run goes alone. */
static void job_alone(batch_job *j, const char *why)
{
	log_warn("a batch of %zu lombscargle runs could not be set up (%s): each runs alone", j->n,
		 why);
	size_t n = j->n;
	run_request **qs = malloc(n * sizeof(*qs));
	if (qs)
		memcpy(qs, j->q, n * sizeof(*qs));
	j->n = 0;
	job_free(j);
	for (size_t i = 0; qs && i < n; i++)
		run_alone(qs[i]);
	free(qs);
}

/* The launch failed: every run of it fails with the backend's message. */
static void job_fail(batch_job *j, dstatus st, const char *msg)
{
	for (size_t i = 0; i < j->n; i++)
		run_ended(j->q[i], st, msg, 0);
	job_free(j);
}

/* The verdicts are in: each run ends on its own. */
static void verdicts_done(void *arg, dstatus st, const char *msg)
{
	batch_job *j = arg;
	if (st != ST_OK) {
		char m[600];
		snprintf(m, sizeof(m), "batched launch: reading its verdicts: %s",
			 msg ? msg : "backend failure");
		job_fail(j, st, m);
		return;
	}
	const unsigned *v = verdicts_of(j);
	for (size_t i = 0; i < j->n; i++) {
		run_request *q = j->q[i];
		q->kernel_us = j->kernel_us;
		if (v[i] != 0) {
			char m[768];
			kernel_lombscargle.verdict_message(&q->kargs, v[i], m, sizeof(m));
			run_ended(q, ST_INVALID, m, 0);
		} else {
			run_ended(q, ST_OK, NULL, 0);
		}
	}
	job_free(j);
}

static void launch_done(void *arg, dstatus st, const char *msg)
{
	batch_job *j = arg;
	char err[512];
	device_run_ended(j->dev);
	sched_release(&j->dev->sched, &j->slot);
	if (st != ST_OK) {
		job_fail(j, st, msg ? msg : "backend failure");
		return;
	}
	dstatus rv = backend_download(&j->dev->be, j->queue, verdicts_of(j),
				      (const char *)j->mem + j->n * sizeof(ls_series),
				      j->n * sizeof(unsigned), 0, verdicts_done, j, err,
				      sizeof(err));
	if (rv != ST_OK)
		verdicts_done(j, rv, err);
}

/* The scheduler gave the batch a slot: the launch. */
static void job_start(sched_item *it)
{
	batch_job *j = (batch_job *)((char *)it - offsetof(batch_job, slot));
	char err[768];
	backend_tenant t = {.name = j->tenant};
	uint64_t now = now_ns();
	metrics *m = j->core->metrics;
	if (m) {
		metrics_batch(m, j->n);
		for (size_t i = 0; i < j->n; i++)
			metrics_queued(m, KERNEL_ID_lombscargle,
				       (double)(now - j->q[i]->queued_ns) / 1e9);
	}
	log_debug("a batch of %zu lombscargle runs launches on device %d", j->n, j->dev->id);
	device_run_started(j->dev);
	dstatus rv = backend_run(&j->dev->be, j->queue, &kernel_lombscargle_batch, &j->kargs, &t,
				 &j->cancel, &j->kernel_us, NULL, launch_done, j, err, sizeof(err));
	if (rv != ST_OK)
		launch_done(j, rv, err);
}

/* The table is on the device and the other queues' earlier work done. */
static void ready_done(void *arg, dstatus st, const char *msg)
{
	batch_job *j = arg;
	if (st != ST_OK && j->status == ST_OK) {
		j->status = st;
		snprintf(j->msg, sizeof(j->msg), "%s", msg ? msg : "backend failure");
	}
	if (--j->pending > 0)
		return;
	if (j->status != ST_OK) {
		char m[600];
		snprintf(m, sizeof(m), "batched launch: %s", j->msg);
		job_fail(j, j->status, m);
		return;
	}
	gpud_tenant *tn = j->q[0]->r.tenant;
	sched_submit(&j->dev->sched, tn ? &tn->runs[j->dev->slot] : NULL, &j->slot);
}

/* The block is made: the table goes up, the other members' queues drain. */
static void job_upload(batch_job *j)
{
	char err[512];
	gpud_backend *be = &j->dev->be;
	ls_batch_args(&j->p, j->mem, (char *)j->mem + j->n * sizeof(ls_series), j->n, j->max_n,
		      &j->kargs);
	j->pending = 1;
	j->status = ST_OK;
	j->pending++;
	dstatus rv = backend_upload(be, j->queue, j->mem, j->table, j->bytes, 0, ready_done, j, err,
				    sizeof(err));
	if (rv != ST_OK)
		ready_done(j, rv, err);
	/* queue_ordered backends: an output's clear or a copy may still be
	 * queued on a member's own queue; the launch goes on the first's */
	for (size_t i = 0; be->ops->queue_ordered && i < j->n; i++) {
		uint32_t qi = j->q[i]->r.pipe_id;
		size_t k;
		for (k = 0; k < i && j->q[k]->r.pipe_id != qi; k++)
			;
		if (qi == j->queue || k < i)
			continue;
		j->pending++;
		rv = backend_sync(be, qi, ready_done, j, err, sizeof(err));
		if (rv != ST_OK)
			ready_done(j, rv, err);
	}
	ready_done(j, ST_OK, NULL);
}

static void alloc_work(uv_work_t *w)
{
	batch_job *j = w->data;
	j->status = backend_alloc_wait(&j->dev->be, j->bytes, 0, &j->mem, j->msg, sizeof(j->msg));
}

static void alloc_after(uv_work_t *w, int status)
{
	batch_job *j = w->data;
	if (status != 0 || j->status != ST_OK) {
		j->mem = NULL;
		job_alone(j, status != 0 ? "cancelled" : j->msg);
		return;
	}
	job_upload(j);
}

void run_batch_flush(void *arg, batch_item *head, size_t n)
{
	gpud_core *core = arg;
	run_request *first = run_of_item(head);
	if (n == 1) { /* alone in its group: an ordinary run */
		run_alone(first);
		return;
	}
	batch_job *j = calloc(1, sizeof(*j) + n * sizeof(run_request *));
	if (j == NULL) {
		for (batch_item *it = head, *nx; it; it = nx) {
			nx = it->next;
			run_alone(run_of_item(it));
		}
		return;
	}
	j->core = core;
	j->slot.start = job_start;
	j->dev = first->r.dev;
	j->queue = first->r.pipe_id;
	j->n = n;
	snprintf(j->tenant, sizeof(j->tenant), "%s", first->r.tenant ? first->r.tenant->name : "");
	long long work;
	char why[128];
	ls_batch_shared(&first->kargs, &j->p, &work, why, sizeof(why));
	j->bytes = n * (sizeof(ls_series) + sizeof(unsigned));
	j->table = calloc(1, j->bytes);
	size_t i = 0;
	for (batch_item *it = head; it && i < n; it = it->next, i++) {
		j->q[i] = run_of_item(it);
		if (j->table) {
			ls_batch_series(&j->q[i]->kargs, &j->table[i]);
			if (j->table[i].n > j->max_n)
				j->max_n = j->table[i].n;
		}
	}
	if (j->table == NULL) {
		job_alone(j, "out of memory");
		return;
	}
	char err[512];
	int foreign = 0;
	/* gpud's own block (owner 0): the whole of what the kernel reads is uploaded */
	dstatus rv = backend_alloc(&j->dev->be, j->bytes, 0, &j->mem, &foreign, err, sizeof(err));
	if (rv == ST_WOULD_BLOCK) { /* made on a worker */
		j->mem = NULL;
		j->work.data = j;
		if (uv_queue_work(core->loop, &j->work, alloc_work, alloc_after) != 0)
			job_alone(j, "no worker");
		return;
	}
	if (rv != ST_OK) {
		j->mem = NULL;
		job_alone(j, err);
		return;
	}
	job_upload(j);
}
