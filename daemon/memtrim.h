/*
 * daemon/memtrim.h — memory given back once gpud goes quiet.
 *
 * A busy gpud keeps the heap it freed (main.c: M_TRIM_THRESHOLD 256 MiB,
 * messages up to 32 MiB on the heap), so the next request reuses pages
 * already faulted in. Without more, that heap stayed for good: up to 256 MiB
 * of it, and more in other threads' arenas (a gigabyte through tcp:// left
 * 50 MiB on a quiet gpud of 72 MiB, more with clients side by side). memtrim counts the bytes
 * that went through gpud (requests and replies, noted by the server, and
 * host memory released from the budget, daemon/hostmem.h); once a tick
 * (MEMTRIM_TICK_MS) has seen less than MEMTRIM_QUIET_BYTES (a status poll
 * does not keep gpud busy) with no reply still being sent, after at least
 * MEMTRIM_MIN_BYTES moved, malloc_trim(0) runs on a libuv
 * worker (it walks the heap: milliseconds, never on the loop) and the free
 * pages go back to the kernel: the free chunks of every arena and the top
 * of the main heap. The top of another thread's arena, where nng's threads
 * put request bodies, stays (tens of megabytes after a gigabyte; main.c
 * says why gpud keeps glibc's arenas).
 *
 * Threads: the loop owns all of it (memtrim_note, the tick); the trim runs
 * on a worker with nothing of the loop's; `sending` is the server's (nng's
 * threads and the loop, atomic).
 */
#ifndef GPUD_MEMTRIM_H
#define GPUD_MEMTRIM_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/hostmem.h"

#define MEMTRIM_TICK_MS 1000
#define MEMTRIM_MIN_BYTES (4u << 20)
#define MEMTRIM_QUIET_BYTES (1u << 20)

typedef struct memtrim {
	uv_loop_t *loop;
	uv_timer_t tick;
	uv_work_t work;
	hostmem *host;
	const atomic_int *sending; /* replies nng has not sent yet */
	uint64_t noted;            /* bytes memtrim_note was given */
	uint64_t seen;             /* noted + the budget's released bytes, at the last tick */
	uint64_t owed;             /* bytes moved since the last trim */
	uint64_t trimmed_for;      /* what was owed when the running trim began */
	uint64_t trims;            /* trims done */
	int ticking, trimming, started;
	int waited;           /* quiet ticks a trim waited for replies being sent */
	unsigned long rss[2]; /* resident KiB before and after a trim (its worker's) */
} memtrim;

/* Starts watching (the tick runs only while something is owed). */
void memtrim_start(memtrim *t, uv_loop_t *loop, hostmem *host, const atomic_int *sending);
/* bytes of a request or a reply went through gpud (on the loop). */
void memtrim_note(memtrim *t, uint64_t bytes);
/* Stops the tick (a trim on a worker finishes by itself). */
void memtrim_stop(memtrim *t);

#endif
