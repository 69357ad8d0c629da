/*
 * daemon/clock.h — gpud's clock: monotonic nanoseconds, for every duration
 * and deadline the daemon measures (request times, the lend sweep, rings,
 * the tenant worker's spin).
 *
 * The bottom layer: it includes nothing of gpud's and holds no state; any
 * thread may call it.
 */
#ifndef GPUD_CLOCK_H
#define GPUD_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void);

#endif
