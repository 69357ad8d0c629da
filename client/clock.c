/*
 * client/clock.c — CLOCK_MONOTONIC in milliseconds, and what is left of a
 * deadline: the time limits of connecting and saying hello. No state; any
 * thread.
 */
#include <stdint.h>
#include <time.h>

#include "client/internal.h"

int64_t client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int client_left_ms(int64_t deadline)
{
	int64_t left = deadline - client_now_ms();
	return left < 1 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
}
