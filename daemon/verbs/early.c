/*
 * daemon/verbs/early.c — a run's inline uploads, and the run issued right
 * behind them ("early"): the one place that knows how a run and its uploads
 * end together. Loop thread.
 *
 * Without uploads in flight a run's end goes straight on (run_finish, or
 * its failure). With uploads, the run is submitted once the last upload's
 * done is in (inline_done), unless every upload was enqueued in its
 * queue's order on a backend whose queues execute in order (queue_ordered:
 * cuda's streams; BACKEND_IN_ORDER): then the run is submitted at once,
 * behind them, and counts in r.pending with them. Its states (run_early):
 *
 *   not early --(all uploads in order)--> early, pending = uploads + run
 *   early: the run ends or cannot start -> early_end: kept in q->early,
 *          its slot given back, one pending done
 *   early: an upload's done              -> one pending done
 *   early: the last pending done         -> early_go_on: the first upload
 *          failure, else the run's failure, else run_finish
 *
 * Nothing fails or replies while an upload is still in flight.
 */
#include <stdio.h>

#include "daemon/verbs/run.h"
#include "daemon/verbs/verbs.h"

/* An early run's uploads and run are all in: on with the first failure among
 * the uploads, else with how the run ended. */
static void early_go_on(run_request *q)
{
	gpud_request *r = &q->r;
	if (r->pending_status != ST_OK)
		request_fail(r, r->pending_status, "run %s: inline arrays: %s", q->kernel->name,
			     r->pending_msg);
	else if (q->early.final)
		request_fail(r, q->early.status, "%s", q->early.msg);
	else
		run_finish(q, q->early.status, q->early.status == ST_OK ? NULL : q->early.msg);
}

/* An early run ended (see run_ended); it goes on once the uploads' dones are in. */
static void early_end(run_request *q, dstatus status, const char *msg, int final)
{
	gpud_request *r = &q->r;
	if (q->slot.has_slot) /* the kernel is done, or never ran: the slot is others' now */
		sched_release(&r->dev->sched, &q->slot);
	q->early.status = status;
	q->early.final = final;
	snprintf(q->early.msg, sizeof(q->early.msg), "%s", msg ? msg : "");
	if (request_pending_done(r, ST_OK, NULL))
		early_go_on(q);
}

void run_ended(run_request *q, dstatus status, const char *msg, int final)
{
	if (q->early.on)
		early_end(q, status, msg, final);
	else if (final)
		request_fail(&q->r, status, "%s", msg); /* releases the slot */
	else
		run_finish(q, status, msg);
}

/* The inline arrays are in: on to the scheduler (early: the run too, on),
 * or report the first failure. */
static void inline_done(void *arg, dstatus status, const char *msg)
{
	gpud_request *r = arg;
	run_request *q = run_of(r);
	if (!request_pending_done(r, status, msg))
		return;
	if (q->early.on) {
		early_go_on(q);
		return;
	}
	if (r->pending_status != ST_OK) {
		request_fail(r, r->pending_status, "run %s: inline arrays: %s", q->kernel->name,
			     r->pending_msg);
		return;
	}
	run_submit(q);
}

void run_uploads_start(run_request *q, const inline_upload *up, int nup)
{
	gpud_request *r = &q->r;
	char err[768];
	gpud_backend *be = &r->dev->be;
	/* a run that may join a dynamic batch waits for its uploads: the
	 * batch launches on one queue for all its runs */
	int in_order = be->ops->queue_ordered && !run_batch_wanted(q);

	r->pending = 1;
	r->pending_status = ST_OK;
	for (int i = 0; i < nup; i++) {
		r->pending++;
		dstatus rv = ST_WOULD_BLOCK;
		if (up[i].from) { /* on the other device's queue: the run waits for its done */
			in_order = 0;
			rv = backend_copy_peer(&up[i].from->be, r->pipe_id, be, up[i].dst,
					       up[i].src, up[i].len, inline_done, r, err,
					       sizeof(err));
			if (rv != ST_OK)
				inline_done(r, rv, err);
			else
				request_moving(r, r->dev, up[i].len);
			continue;
		}
		if (in_order) /* a copy left to a worker cannot go early: nor can the run */
			rv = backend_upload(be, r->pipe_id, up[i].dst, up[i].src, up[i].len,
					    up[i].flags | BACKEND_IN_ORDER, inline_done, r, err,
					    sizeof(err));
		if (rv == ST_WOULD_BLOCK) {
			in_order = 0;
			rv = backend_upload(be, r->pipe_id, up[i].dst, up[i].src, up[i].len,
					    up[i].flags, inline_done, r, err, sizeof(err));
		}
		if (rv != ST_OK) {
			inline_done(r, rv, err);
		} else {
			r->bytes_up += up[i].len;
			request_moving(r, r->dev, up[i].len);
		}
	}
	if (in_order && r->pending_status == ST_OK) {
		q->early.on = 1;
		r->pending++; /* the run's own end (early_end) */
		run_submit(q);
	}
	inline_done(r, ST_OK, NULL);
}
