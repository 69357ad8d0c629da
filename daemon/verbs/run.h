/*
 * daemon/verbs/run.h — a run request's own state, and what run.c (binding,
 * placement, outputs, the scheduler, the reply) and early.c (the inline
 * uploads, and the run issued behind them) share.
 *
 * run_request embeds the common gpud_request first (the server keeps every
 * request in a verb_request, room for this); run_of gives it back from the
 * gpud_request a callback carries. verb_run resets the run's state when it
 * starts (run_begin: the first try, and again after an allocation made off
 * the loop), so nothing else resets it.
 *
 * Loop thread only; `r.cancelled` is also read by backend workers.
 */
#ifndef GPUD_VERBS_RUN_H
#define GPUD_VERBS_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/batch.h"
#include "daemon/request.h"
#include "daemon/sched.h"
#include "kernels/core/kernel.h"

_Static_assert(KERNEL_MAX_PARAMS == REQUEST_MAX_ARGS,
	       "a run binds one argument per kernel parameter: request.h's arrays hold them");

/* Where a run stands against its inline uploads (early.c). */
typedef struct run_early {
	/* issued behind its inline uploads: the run counts in r.pending with
	 * them, and how it ended waits here until the uploads' dones are in */
	int on;
	int final; /* it never started: msg is the whole failure message */
	dstatus status;
	char msg[768];
} run_early;

typedef struct run_request {
	gpud_request r; /* first: the common part */
	/* the kernel, its bound arguments and the buffer of each parameter */
	const kernel_def *kernel;
	kernel_args kargs;
	gpud_buffer *bound[KERNEL_MAX_PARAMS];
	double kernel_us;
	sched_item slot;    /* its place in the run scheduler */
	uint64_t queued_ns; /* when it asked the scheduler for a slot */
	uint8_t *out_host;  /* return_outputs into a host region (outputs_to): where */
	unsigned out_flags; /* and its BACKEND_HOST_* */
	run_early early;
	/* return_outputs into the reply: the outputs the backend brings to the
	 * host behind the kernel (fetch.dst: malloc'd in run_start, freed with
	 * the request), or fetch.n 0 */
	backend_fetch fetch;
	batch_item batch; /* its place in a dynamic batch's group (batch_run.c) */
} run_request;

/* The run request r is the common part of. */
static inline run_request *run_of(gpud_request *r)
{
	return (run_request *)((char *)r - offsetof(run_request, r));
}

/* An inline array's bytes: where they are and where they go; or (from
 * set) an input on another device, copied peer to peer to the run's. */
typedef struct inline_upload {
	void *dst;
	const void *src;
	size_t len;
	unsigned flags;
	gpud_device *from;
} inline_upload;

/* run.c: the run asks the scheduler for a slot (fails it if cancelled). */
void run_submit(run_request *q);
/* run.c: the run has ended (early: and its uploads too): its reply, or its failure. */
void run_finish(run_request *q, dstatus status, const char *msg);

/* run.c: the run takes a slot of its own (not batched), cancellable as any. */
void run_alone(run_request *q);

/* batch_run.c: a run that may join a dynamic batch (batch_delay_us on, a
 * small single-series lombscargle run with a grid): 1. Its uploads then
 * complete before it is submitted (no early run: the batch's launch goes on
 * another queue). */
int run_batch_wanted(run_request *q);
/* batch_run.c: run_submit's: 1 if the run joined a batch's group (the batch
 * replies to it), 0 if it goes alone. */
int run_batch_take(run_request *q);
/* batch_run.c: the batcher's flush (daemon/batch.h; arg: the gpud_core):
 * the group's runs in one launch, each request completed on its own. */
void run_batch_flush(void *arg, batch_item *head, size_t n);

/* early.c: uploads up[0..nup) to the run's device, then submits the run:
 * after the last upload's done, or at once behind them (early). */
void run_uploads_start(run_request *q, const inline_upload *up, int nup);
/* early.c: the run ended as the backend said (final 0), or could not start
 * (final 1: msg is the whole failure message): on with its reply or
 * failure now, or (early) once its uploads' dones are in. */
void run_ended(run_request *q, dstatus status, const char *msg, int final);

#endif
