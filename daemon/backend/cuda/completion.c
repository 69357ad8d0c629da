/*
 * daemon/backend/cuda/completion.c — how the loop learns that work on a
 * stream is done, without waiting for it and without stream callbacks.
 *
 * A callback (cudaStreamAddCallback, cudaLaunchHostFunc) stalls its stream
 * until the host has run it, tens of microseconds per operation; an event
 * does not. Every job ends with an event. For poll_us after it is enqueued
 * the loop asks that event on every turn (cudaEventQuery never waits) and
 * completes the job the moment it is done; the loop spins meanwhile. Older
 * jobs, and new ones while POLL_MAX_JOBS are polled, go to the waiter
 * thread, which asks their events with a backoff of up to
 * WAITER_MAX_SLEEP_US and hands the finished ones to the loop (done_lock,
 * done_async).
 *
 * A copy issued in its queue's order (BACKEND_IN_ORDER) records no event:
 * it rides on the end event of the job issued behind it on its stream
 * (riders, below). A run's fetch (backend_fetch) ends the run's job with the
 * event after its copies (job_end_event).
 *
 * Error paths: a job that may have left work on its stream is drained by a
 * worker (cudaStreamSynchronize off the loop) before it reports, so the
 * memory that work touches is released only once nothing touches it.
 *
 * Threads: the poll list and the event pool are the loop's; the wait list is
 * the waiter's (wait_lock); the done queue is handed over under done_lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/backend/cuda/internal.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "kernels/core/cuda_check.h"

#define WAITER_MAX_SLEEP_US 1000
/*
 * Young jobs the loop polls at most; more go to the waiter at once. Polling
 * is for latency when few jobs are in flight; under load the loop's turns
 * are its work, and asking events on every one of them costs more than the
 * waiter's hand-over: 64 clients' small runs (bench/batch_profile.py, H200)
 * went at 9,226 runs/s with every job polled and 14,081 with none.
 */
#define POLL_MAX_JOBS 8

/* --- events (loop) ------------------------------------------------------------------ */

dstatus job_take_event(cuda_backend *cb, cudaEvent_t *ev, char *err, size_t errlen)
{
	if (cb->nfree_events > 0) {
		*ev = cb->free_events[--cb->nfree_events];
		return ST_OK;
	}
	cudaError_t e = cudaEventCreate(ev);
	if (e != cudaSuccess) {
		*ev = NULL;
		cuda_fail(e, "cudaEventCreate", err, errlen);
		return cuda_note_error(cb, e, err);
	}
	return ST_OK;
}

/* Keeps up to MAX_EVENTS idle events for reuse; destroys the rest. */
void job_put_event(cuda_backend *cb, cudaEvent_t ev)
{
	if (cb->nfree_events < MAX_EVENTS)
		cb->free_events[cb->nfree_events++] = ev;
	else
		cudaEventDestroy(ev);
}

/* --- jobs ---------------------------------------------------------------------------- */

cuda_job *job_new(gpud_backend *b, job_kind kind, cudaStream_t s, backend_done_fn done, void *arg)
{
	cuda_job *j = calloc(1, sizeof(*j));
	if (j == NULL)
		return NULL;
	j->b = b;
	j->kind = kind;
	j->stream = s;
	j->done = done;
	j->arg = arg;
	j->work.data = j;
	j->stage_idx = -1;
	j->verdict = -1;
	j->stop = -1;
	j->tw_slot = -1;
	return j;
}

/* Reports a job's outcome, once. */
static void job_complete(cuda_job *j, dstatus status, const char *msg)
{
	gpud_backend *b = j->b;
	cuda_backend *cb = b->impl;
	if (j->completed)
		return;
	j->completed = 1;
	char vmsg[768];
	if (j->verdict >= 0) {
		/* The kernel has finished (its end event passed, or a drain). */
		unsigned code = verdict_put(cb, j->verdict);
		j->verdict = -1;
		if (code != 0 && status == ST_OK) {
			j->kdef->verdict_message(j->args, code, vmsg, sizeof(vmsg));
			status = ST_INVALID;
			msg = vmsg;
		}
	}
	char smsg[400];
	if (j->stop >= 0) { /* over run_timeout: no result, whether it stopped early or not */
		int over = stop_put(cb, j->stop, smsg, sizeof(smsg));
		j->stop = -1;
		if (over && status == ST_OK) {
			status = ST_QUOTA;
			msg = smsg;
		}
	}
	char twmsg[768];
	if (j->tw_slot >= 0) { /* a tenant worker's run: its outcome and time */
		tw_job_result(cb, j, &status, &msg, twmsg, sizeof(twmsg));
	} else if (j->kind == JOB_RUN && status == ST_OK) {
		float ms = 0;
		/* Both events have completed: this does not wait. */
		cudaEventElapsedTime(&ms, j->ev[0], j->ev[1]);
		*j->kernel_us = (double)ms * 1e3;
	}
	if (j->stage_idx >= 0) {
		/* Its DMA is over (the end event passed, or a drain). A small
		 * download, or a run's fetch once the run is known good: out of
		 * the staging buffer, on the loop. */
		const uint8_t *st = (const uint8_t *)cb->stage[j->stage_idx] + j->stage_off;
		if (status == ST_OK && j->kind == JOB_D2H)
			memcpy(j->dst, st, j->len);
		if (status == ST_OK && j->kind == JOB_RUN && j->fetch) {
			backend_fetch *f = j->fetch;
			memcpy(f->dst, st, f->total);
			f->fetched = 1;
		}
		stage_small_put(cb, j);
	}
	j->done(j->arg, status, status != ST_OK ? (msg ? msg : "") : NULL);
	cuda_check_fatal(b);
}

void job_finish(cuda_job *j, dstatus status, const char *msg)
{
	cuda_backend *cb = j->b->impl;
	ON_LOOP("cuda job_finish");
	/* The copies before it on its stream that rode on its end: done first,
	 * as its end event (or its drain) says, whatever its own verdicts. */
	for (cuda_job *r = j->riders, *next; r; r = next) {
		next = r->ride_next;
		job_finish(r, status, msg);
	}
	j->riders = NULL;
	job_complete(j, status, msg);
	for (int i = 0; i < 2; i++)
		if (j->ev[i]) /* the events it holds */
			job_put_event(cb, j->ev[i]);
	if (j->fetch_ev)
		job_put_event(cb, j->fetch_ev);
	for (int i = 0; i < j->nscratch; i++) /* its work on the stream is done */
		cuda_free_block(j->b, j->scratch[i]);
	free(j);
}

/* On the loop: the job's end event said e (done, or an error). */
static void job_event_done(cuda_backend *cb, cuda_job *j, cudaError_t e)
{
	char msg[512];
	if (e == cudaSuccess) {
		job_finish(j, ST_OK, NULL);
		return;
	}
	cuda_fail(e, j->kind == JOB_RUN ? "kernel" : "stream", msg, sizeof(msg));
	job_finish(j, cuda_note_error(cb, e, msg), msg);
}

/* --- the drain: error paths wait on a worker ---------------------------------------------- */

static void drain_work(uv_work_t *w)
{
	cuda_job *j = w->data;
	cuda_backend *cb = j->b->impl;
	OFF_LOOP("draining a stream after an error");
	cudaSetDevice(cb->device);
	cudaStreamSynchronize(j->stream);
	cudaGetLastError(); /* the job's own error is the one reported */
}

static void drain_after(uv_work_t *w, int status)
{
	cuda_job *j = w->data;
	cuda_use(j->b->impl);
	job_finish(j, j->status, j->msg);
}

void job_fail_after_drain(cuda_job *j, dstatus status, const char *msg)
{
	ON_LOOP("job_fail_after_drain");
	j->status = status;
	if (msg != j->msg)
		snprintf(j->msg, sizeof(j->msg), "%s", msg ? msg : "");
	j->work.data = j;
	uv_queue_work(j->b->loop, &j->work, drain_work, drain_after);
}

/* --- young jobs: the loop polls ---------------------------------------------------------- */

static void list_remove(cuda_job **head, cuda_job *j)
{
	if (j->pprev)
		j->pprev->pnext = j->pnext;
	else
		*head = j->pnext;
	if (j->pnext)
		j->pnext->pprev = j->pprev;
	j->pprev = j->pnext = NULL;
}

static void list_push(cuda_job **head, cuda_job *j)
{
	j->pprev = NULL;
	j->pnext = *head;
	if (*head)
		(*head)->pprev = j;
	*head = j;
}

static void to_waiter(cuda_backend *cb, cuda_job *j)
{
	pthread_mutex_lock(&cb->wait_lock);
	list_push(&cb->wait_head, j);
	pthread_cond_signal(&cb->wait_cond);
	pthread_mutex_unlock(&cb->wait_lock);
}

/* --- riders: in-order copies that end with a later job -------------------------------- */

/*
 * A copy issued with BACKEND_IN_ORDER has the run it feeds issued right
 * behind it on its stream (early.c), and a stream executes in order: the
 * run's end event says the copy is done too. Such a copy records no event of
 * its own (one driver call fewer, one event fewer asked on every turn): it
 * waits on the loop's riders until the next job on its stream that records
 * an end event (job_enqueue_done; that event is recorded after the rider was
 * enqueued, both on the loop) takes it, and it finishes just before that job
 * (job_finish). Riders the loop's next turn finds still waiting (the run
 * waits for a slot, or failed before it was enqueued) get an event then
 * (riders_flush): the last of a stream records one and carries the others.
 */
static void on_poll(uv_idle_t *h);

void job_ride(cuda_backend *cb, cuda_job *j)
{
	cuda_job **t = &cb->riders;
	while (*t)
		t = &(*t)->ride_next;
	j->ride_next = NULL;
	*t = j;
	uv_idle_start(&cb->poll_idle, on_poll); /* its flush, on the next turn */
}

/* The riders of j's stream move onto j's, in order. */
static void riders_take(cuda_backend *cb, cuda_job *j)
{
	cuda_job **from = &cb->riders, **to = &j->riders;
	while (*to)
		to = &(*to)->ride_next;
	while (*from) {
		cuda_job *r = *from;
		if (r->stream != j->stream) {
			from = &r->ride_next;
			continue;
		}
		*from = r->ride_next;
		r->ride_next = NULL;
		*to = r;
		to = &r->ride_next;
	}
}

/* Riders no job took: per stream, the last one records an end event. */
static void riders_flush(cuda_backend *cb)
{
	char err[512];
	while (cb->riders) {
		cuda_job **link = NULL;
		for (cuda_job **p = &cb->riders; *p; p = &(*p)->ride_next)
			if ((*p)->stream == cb->riders->stream)
				link = p;
		cuda_job *last = *link;
		*link = last->ride_next;
		last->ride_next = NULL;
		dstatus rv = job_enqueue_done(cb, last, err, sizeof(err));
		if (rv != ST_OK) { /* its stream drains; the others fail with it */
			riders_take(cb, last);
			job_fail_after_drain(last, rv, err);
		}
	}
}

static void poll_remove(cuda_backend *cb, cuda_job *j)
{
	if (cb->poll_tail == j)
		cb->poll_tail = j->pprev;
	list_remove(&cb->poll_head, j);
	cb->npoll--;
}

/*
 * Each turn asks the young jobs' events, oldest first. A stream runs its
 * work in order, and every job's end event is recorded on its own stream
 * when it joins the list (on the loop): once a job's event is not ready,
 * no later job of its stream can be, so their events are not asked this
 * turn. With many jobs in flight a turn thus costs at most one query per
 * busy stream plus one per finished job, not one per job.
 */
static void on_poll(uv_idle_t *h)
{
	cuda_backend *cb = h->data;
	cuda_use(cb);
	if (cb->riders)
		riders_flush(cb);
	uint64_t now = uv_hrtime();
	cudaStream_t busy[32]; /* streams seen not done this turn (more: asked anyway) */
	int nbusy = 0;
	for (cuda_job *j = cb->poll_head, *next; j; j = next) {
		next = j->pnext;
		int behind = 0;
		for (int i = 0; i < nbusy && !behind; i++)
			behind = busy[i] == j->stream;
		cudaError_t e = behind ? cudaErrorNotReady : cudaEventQuery(job_end_event(j));
		if (e == cudaErrorNotReady) {
			if (!behind && nbusy < (int)(sizeof(busy) / sizeof(busy[0])))
				busy[nbusy++] = j->stream;
			if (now - j->poll_start > cb->poll_ns) {
				poll_remove(cb, j);
				to_waiter(cb, j);
			}
			continue;
		}
		poll_remove(cb, j);
		job_event_done(cb, j, e);
	}
	if (cb->poll_head == NULL)
		uv_idle_stop(&cb->poll_idle);
}

dstatus job_enqueue_done(cuda_backend *cb, cuda_job *j, char *err, size_t errlen)
{
	dstatus rv;
	if (j->kind != JOB_RUN) {
		if ((rv = job_take_event(cb, &j->ev[1], err, errlen)) != ST_OK)
			return rv;
		cudaError_t e = cudaEventRecord(j->ev[1], j->stream);
		if (e != cudaSuccess) {
			job_put_event(cb, j->ev[1]);
			j->ev[1] = NULL;
			cuda_fail(e, "cudaEventRecord", err, errlen);
			return cuda_note_error(cb, e, err);
		}
	}
	riders_take(cb, j); /* its end event follows them on the stream */
	j->poll_start = uv_hrtime();
	if (cb->poll_ns == 0 || (cb->npoll >= POLL_MAX_JOBS && cb->waiter_started)) {
		to_waiter(cb, j);
		return ST_OK;
	}
	cb->npoll++;
	j->pnext = NULL; /* the newest: at the tail */
	j->pprev = cb->poll_tail;
	if (cb->poll_tail)
		cb->poll_tail->pnext = j;
	else
		cb->poll_head = j;
	cb->poll_tail = j;
	uv_idle_start(&cb->poll_idle, on_poll);
	return ST_OK;
}

/* --- old jobs: the waiter thread ------------------------------------------------------------ */

/*
 * Old jobs' events, asked in turn; finished ones to the loop. The waiter
 * takes the whole list and asks the events without wait_lock, so the loop's
 * to_waiter never waits behind a round of queries; what is not done goes
 * back on the list.
 */
static void *waiter_main(void *arg)
{
	cuda_backend *cb = arg;
	useconds_t nap = 10;

	cudaSetDevice(cb->device);
	for (;;) {
		pthread_mutex_lock(&cb->wait_lock);
		while (cb->wait_head == NULL && !cb->wait_stop)
			pthread_cond_wait(&cb->wait_cond, &cb->wait_lock);
		cuda_job *mine = cb->wait_head;
		cb->wait_head = NULL;
		pthread_mutex_unlock(&cb->wait_lock);
		if (mine == NULL) /* stopping, nothing left */
			break;
		int finished = 0;
		for (cuda_job *j = mine, *next; j; j = next) {
			next = j->pnext;
			cudaError_t e = cudaEventQuery(job_end_event(j));
			if (e == cudaErrorNotReady)
				continue;
			list_remove(&mine, j);
			j->cuda_status = e;
			pthread_mutex_lock(&cb->done_lock);
			j->next = cb->done_head;
			cb->done_head = j;
			pthread_mutex_unlock(&cb->done_lock);
			finished++;
		}
		if (mine) {
			pthread_mutex_lock(&cb->wait_lock);
			for (cuda_job *j = mine, *next; j; j = next) {
				next = j->pnext;
				list_push(&cb->wait_head, j);
			}
			pthread_mutex_unlock(&cb->wait_lock);
		}
		if (finished) {
			uv_async_send(&cb->done_async);
			nap = 10;
			continue;
		}
		usleep(nap);
		nap = nap * 2 > WAITER_MAX_SLEEP_US ? WAITER_MAX_SLEEP_US : nap * 2;
	}
	return NULL;
}

static void on_done_async(uv_async_t *h)
{
	cuda_backend *cb = h->data;
	cuda_use(cb);
	pthread_mutex_lock(&cb->done_lock);
	cuda_job *j = cb->done_head, *next;
	cb->done_head = NULL;
	pthread_mutex_unlock(&cb->done_lock);
	for (; j; j = next) {
		next = j->next;
		job_event_done(cb, j, j->cuda_status);
	}
}

/* --- start and stop ------------------------------------------------------------------------ */

int completion_start(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;

	pthread_mutex_init(&cb->done_lock, NULL);
	uv_async_init(b->loop, &cb->done_async, on_done_async);
	cb->done_async.data = cb;
	uv_idle_init(b->loop, &cb->poll_idle);
	cb->poll_idle.data = cb;
	stop_start(cb, b->loop);
	cb->handles_open = 3;
	pthread_mutex_init(&cb->wait_lock, NULL);
	pthread_cond_init(&cb->wait_cond, NULL);
	if (pthread_create(&cb->waiter, NULL, waiter_main, cb) == 0) {
		cb->waiter_started = 1;
		pthread_setname_np(cb->waiter, "gpud:waiter"); /* top -H, /proc/PID/task */
	} else
		log_warn("cuda backend: no waiter thread; jobs complete by polling only");
	cb->poll_ns = (uint64_t)cfg->poll_us * 1000u;
	return 0;
}

void completion_stop(cuda_backend *cb)
{
	if (!cb->waiter_started)
		return;
	pthread_mutex_lock(&cb->wait_lock);
	cb->wait_stop = 1;
	pthread_cond_signal(&cb->wait_cond);
	pthread_mutex_unlock(&cb->wait_lock);
	pthread_join(cb->waiter, NULL);
	cb->waiter_started = 0;
}

void completion_close_handles(cuda_backend *cb, uv_close_cb last)
{
	uv_close((uv_handle_t *)&cb->done_async, last);
	uv_close((uv_handle_t *)&cb->poll_idle, last);
	stop_close_handle(cb, last);
}
