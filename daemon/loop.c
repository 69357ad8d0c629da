/* daemon/loop.c — the loop thread's identity and the ON_LOOP/OFF_LOOP checks. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "daemon/log.h"
#include "daemon/loop.h"

static pthread_t loop_thread;
static atomic_int loop_known;
#ifndef GPUD_DEBUG_LOOP
static atomic_int violations;
#endif

void loop_thread_set(void)
{
	loop_thread = pthread_self();
	atomic_store(&loop_known, 1);
}

int loop_is_current(void)
{
	return atomic_load(&loop_known) && pthread_equal(pthread_self(), loop_thread);
}

void loop_violation(const char *what, int on_loop)
{
	/* Before the loop exists (start-up) every thread may do anything. */
	if (!atomic_load(&loop_known))
		return;
#ifndef GPUD_DEBUG_LOOP
	if (atomic_fetch_add(&violations, 1) > 0)
		return;
#endif
	if (on_loop)
		log_error("blocking work (%s) on the loop thread", what);
	else
		log_error("loop-owned state (%s) touched off the loop thread", what);
#ifdef GPUD_DEBUG_LOOP
	abort();
#endif
}
