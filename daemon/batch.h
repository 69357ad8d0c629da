/*
 * daemon/batch.h — dynamic batching: items that may run together wait in
 * a group of their key (every byte of it equal) until the group is full
 * (max items) or its delay has passed since it opened, then the whole group
 * is handed to the flush function in the order the items came. Runs of one
 * kernel with the same shared parameters on one device and context are
 * such items (daemon/verbs/batch_run.c says which and runs them).
 *
 * The batcher knows nothing of requests: an item is a batch_item embedded
 * in its owner (as sched_item is), its key made by the caller. The groups'
 * deadlines share one loop timer (libuv's: millisecond resolution, so a
 * delay is rounded up to whole milliseconds).
 *
 * Owned by the loop thread: every function is called there.
 */
#ifndef GPUD_BATCH_H
#define GPUD_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* What must be equal for two items to run together (compared bytewise:
 * zero the whole key before filling it). */
typedef struct batch_key {
	uint64_t w[12];
} batch_key;

struct batch_group;
typedef struct batch_item {
	batch_key key;
	struct batch_item *next;   /* its group's list */
	struct batch_group *group; /* the group it waits in; NULL when not waiting */
} batch_item;

typedef struct batch_group {
	batch_key key;
	batch_item *head, *tail;
	size_t n;
	uint64_t due_ms; /* the loop's time (uv_now) it flushes at */
	struct batch_group *next;
} batch_group;

/* Called with a group's n items, linked by next from head (the first to
 * come); the group is gone already: the items are the callee's. */
typedef void (*batch_flush_fn)(void *arg, batch_item *head, size_t n);

typedef struct batcher {
	uv_loop_t *loop;
	uv_timer_t timer;
	int timer_on;        /* initialised (batcher_init) and not closed */
	batch_group *groups; /* open groups, oldest first */
	size_t pending;      /* items in them */
	int stopped;         /* batcher_stop: nothing more is taken */
	batch_flush_fn flush;
	void *arg;
} batcher;

/* Ready on loop (its timer made there, unreferenced: it holds no loop open). */
void batcher_init(batcher *b, uv_loop_t *loop, batch_flush_fn flush, void *arg);
/*
 * Puts it in the group of its key, opening one (due delay_us from now) if
 * none is open; a group that reaches max items flushes at once, within
 * this call. 1 if taken; 0 after batcher_stop (the caller runs it alone).
 */
int batcher_add(batcher *b, batch_item *it, uint64_t delay_us, size_t max);
/* Takes a waiting it out of its group (an emptied group closes): 1, or 0
 * if it was not waiting (flushed already). */
int batcher_remove(batcher *b, batch_item *it);
/* Flushes every open group now, oldest first. */
void batcher_flush_all(batcher *b);
/* gpud stops: open groups flush now and later items are refused (run alone). */
void batcher_stop(batcher *b);
/* Closes the timer (after the last request, when no group is open: batcher_stop
 * flushed them). */
void batcher_close(batcher *b);

#endif
