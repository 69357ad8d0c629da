/*
 * daemon/loop.h — which thread may do what.
 *
 * gpud's state (sessions, buffers, regions, tenants, the scheduler, the
 * registry, requests) belongs to the libuv loop thread, and the loop thread
 * never waits: no GPU synchronisation, no pinning, no compiling. The other
 * threads are nng's (receive and send, handing events to the loop), libuv's
 * workers (copies, cpu kernels, pinning, compiling) and the cuda backend's
 * waiter; each file's header says which of them touch its state.
 *
 * ON_LOOP(what) marks code that touches loop-owned state; OFF_LOOP(what)
 * marks a call that may block. A build with LOOP_CHECK=1 (GPUD_DEBUG_LOOP)
 * aborts on a violation, naming it; other builds log the first one.
 */
#ifndef GPUD_LOOP_H
#define GPUD_LOOP_H

/* The calling thread is the loop (server_start, or a test driving the loop). */
void loop_thread_set(void);
/* 1 on the loop thread, 0 elsewhere or before loop_thread_set. */
int loop_is_current(void);

void loop_violation(const char *what, int on_loop);

#define ON_LOOP(what)                                                                              \
	do {                                                                                       \
		if (!loop_is_current())                                                            \
			loop_violation((what), 0);                                                 \
	} while (0)
#define OFF_LOOP(what)                                                                             \
	do {                                                                                       \
		if (loop_is_current())                                                             \
			loop_violation((what), 1);                                                 \
	} while (0)

#endif
