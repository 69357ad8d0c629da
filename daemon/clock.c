/*
 * daemon/clock.c — gpud's monotonic clock (see clock.h). No state; any thread.
 */
#include <time.h>

#include "daemon/clock.h"

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
