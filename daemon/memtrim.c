/*
 * daemon/memtrim.c — freed heap given back once gpud goes quiet (see
 * daemon/memtrim.h for when, and which thread does what).
 */
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/memtrim.h"

/* Ticks a trim waits for replies nng is still sending (a client that reads
 * none would hold it off for ever). */
#define MEMTRIM_WAIT_TICKS 10

/* This process's resident memory, KiB (0 if unknown). */
static unsigned long rss_kib(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * ((unsigned long)sysconf(_SC_PAGESIZE) / 1024);
}

/* On a worker: glibc walks its heap and gives free pages back. */
static void trim_work(uv_work_t *w)
{
	unsigned long *rss = w->data;
	rss[0] = rss_kib();
	malloc_trim(0);
	rss[1] = rss_kib();
}

static void trim_after(uv_work_t *w, int status)
{
	memtrim *t = (memtrim *)((char *)w - offsetof(memtrim, work));
	unsigned long *rss = w->data;
	t->trimming = 0;
	t->trims++;
	log_debug("memory: freed heap given back once quiet (%.1f MiB of messages and host memory "
		  "since the last time): resident %lu -> %lu KiB",
		  (double)t->trimmed_for / (1 << 20), rss[0], rss[1]);
}

static void on_tick(uv_timer_t *h)
{
	memtrim *t = h->data;
	uint64_t now = t->noted + hostmem_released(t->host), moved = now - t->seen;

	t->seen = now;
	t->owed += moved;
	if (moved >= MEMTRIM_QUIET_BYTES) { /* still busy: a trim waits for a quiet tick */
		t->waited = 0;
		return;
	}
	if (t->trimming)
		return;
	if (t->owed >= MEMTRIM_MIN_BYTES) {
		/* a reply's body is freed once nng has sent it */
		if (atomic_load(t->sending) > 0 && ++t->waited < MEMTRIM_WAIT_TICKS)
			return;
		t->trimmed_for = t->owed;
		t->owed = 0;
		t->waited = 0;
		t->trimming = 1;
		t->work.data = t->rss;
		uv_queue_work(t->loop, &t->work, trim_work, trim_after);
		return;
	}
	if (moved == 0) { /* idle with little owed: no tick until the next note */
		uv_timer_stop(&t->tick);
		t->ticking = 0;
	}
}

void memtrim_start(memtrim *t, uv_loop_t *loop, hostmem *host, const atomic_int *sending)
{
	memset(t, 0, sizeof(*t));
	t->loop = loop;
	t->host = host;
	t->sending = sending;
	t->seen = hostmem_released(host);
	uv_timer_init(loop, &t->tick);
	t->tick.data = t;
	uv_unref((uv_handle_t *)&t->tick);
	t->started = 1;
}

void memtrim_note(memtrim *t, uint64_t bytes)
{
	ON_LOOP("memtrim_note");
	if (!t->started || bytes == 0)
		return;
	t->noted += bytes;
	if (!t->ticking) {
		t->ticking = 1;
		uv_timer_start(&t->tick, on_tick, MEMTRIM_TICK_MS, MEMTRIM_TICK_MS);
	}
}

void memtrim_stop(memtrim *t)
{
	if (!t->started)
		return;
	t->started = 0;
	t->ticking = 0;
	uv_timer_stop(&t->tick);
	uv_close((uv_handle_t *)&t->tick, NULL);
}
