/*
 * daemon/drain.c — what a stopping gpud still serves.
 *
 * On SIGTERM or SIGINT gpud drains (server_shutdown). A job is several
 * requests (upload, run, download), so first comes a grace of drain_grace
 * seconds (default 2, at most half of shutdown_timeout) in which a job in
 * progress takes its next steps; it ends early once no connection is left,
 * or once gpud is idle (nothing in flight, no request for DRAIN_IDLE_NS).
 * After the grace new work gets SHUTTING_DOWN. Requests in flight are never
 * cut: they complete and their replies reach the client (server.c's stages).
 *
 * Per verb, while draining (the verb table's flags, daemon/verbs/verbs.def):
 *   status               served (VERB_WHILE_DRAINING): it changes nothing, and monitors see gpud stop
 *   free, unmap, cancel  served (VERB_WHILE_DRAINING): they give back or stop, nothing new starts
 *   hello                SHUTTING_DOWN from the start (VERB_OPENS_SESSION): no new sessions (a new
 *                        client, or one whose connection was re-made, has no
 *                        job in progress here)
 *   every other verb     served during the grace, SHUTTING_DOWN after it:
 *                        alloc, upload, download, run (and call), sync, list,
 *                        kernels, register, unregister. A download of a
 *                        finished run's result too: its job had the grace.
 * A lost GPU drains with no grace (nothing but status is served then).
 *
 * Threads: the loop only.
 */
#include <stdio.h>

#include "daemon/drain.h"
#include "daemon/verbs/table.h"

void drain_start(drain_state *d, uint64_t now, double grace_s, double shutdown_timeout)
{
	*d = (drain_state){.on = 1, .started_ns = now, .grace_s = grace_s};
	if (d->grace_s > shutdown_timeout / 2)
		d->grace_s = shutdown_timeout / 2;
	if (d->grace_s < 0)
		d->grace_s = 0;
}

int drain_grace_check(drain_state *d, uint64_t now, size_t connections, uint32_t in_flight,
		      uint64_t last_ns)
{
	if (!d->on)
		return 0;
	if (d->grace_over)
		return 1;
	if (now - d->started_ns >= (uint64_t)(d->grace_s * 1e9))
		d->ended = "the grace for jobs in progress is over";
	else if (connections == 0)
		d->ended = "no connection is left";
	else if (in_flight == 0 && now - last_ns >= DRAIN_IDLE_NS)
		d->ended = "no job is in progress (nothing in flight, no request for 250 ms)";
	else
		return 0;
	d->grace_over = 1;
	return 1;
}

const char *drain_refusal(const drain_state *d, unsigned verb_flags)
{
	if (!d->on || (verb_flags & VERB_WHILE_DRAINING))
		return NULL;
	if (verb_flags & VERB_OPENS_SESSION)
		return "gpud is shutting down and takes no new sessions; connect again once it "
		       "is back";
	return d->grace_over ? "gpud is shutting down and takes no new work (the grace "
			       "for jobs in progress is over); nothing was done"
			     : NULL;
}
