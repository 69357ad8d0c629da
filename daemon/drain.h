/*
 * daemon/drain.h — what a stopping gpud still serves, and when the grace
 * for jobs in progress ends (the rule is drain.c's header comment; the
 * stages of the shutdown itself are server.c's).
 *
 * Threads: the loop only (the server's request checks and its shutdown
 * timer).
 */
#ifndef GPUD_DRAIN_H
#define GPUD_DRAIN_H

#include <stddef.h>
#include <stdint.h>

/* The grace ends early once gpud has had nothing in flight and no request
 * for this long. */
#define DRAIN_IDLE_NS 250000000ull

typedef struct drain_state {
	int on;         /* draining: SIGTERM, SIGINT, or a lost GPU */
	int grace_over; /* new work gets SHUTTING_DOWN */
	uint64_t started_ns;
	double grace_s;    /* the grace this drain has (drain_start's choice) */
	const char *ended; /* why the grace ended, for the log */
	uint64_t refused;  /* requests answered SHUTTING_DOWN */
} drain_state;

/*
 * Draining starts at now. The grace is grace_s (drain_grace), at most half
 * of shutdown_timeout: the other half is for the requests in flight at its
 * end.
 */
void drain_start(drain_state *d, uint64_t now, double grace_s, double shutdown_timeout);

/*
 * 1 once the grace is over: at its end, or earlier when no connection is
 * left (connections) or gpud is idle (nothing in flight, and last_ns, its
 * last request or reply, DRAIN_IDLE_NS ago). Sets grace_over and ended.
 */
int drain_grace_check(drain_state *d, uint64_t now, size_t connections, uint32_t in_flight,
		      uint64_t last_ns);

/* NULL when a request of a verb with these flags (daemon/verbs/table.h's
 * VERB_*) is served now; else why it gets SHUTTING_DOWN. */
const char *drain_refusal(const drain_state *d, unsigned verb_flags);

#endif
