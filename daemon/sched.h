/*
 * daemon/sched.h — the run scheduler.
 *
 * At most `slots` kernel runs are in the backend at once; further runs wait
 * in their tenant's queue, and as slots free the tenants with waiting runs
 * are served in turn, one run each. A tenant that floods gpud thus queues
 * behind itself: another tenant's run waits for the runs in the backend and
 * at most one of each other waiting tenant.
 *
 * One tenant holds at most slots - 1 slots (`per_queue`; all of them when
 * there is only one): the last slot is always another tenant's to take, so
 * a tenant whose long runs fill the backend cannot make a second tenant's
 * short run wait for one of them to end. The backend then shares its
 * compute between the runs it holds (the cpu backend chunk by chunk,
 * tenants in turn: daemon/backend/cpu.c).
 *
 * The scheduler knows nothing of requests or tenants: a run is a sched_item
 * (embedded in the request) with a start function, a tenant's queue a
 * sched_queue (embedded in the tenant). Owned by the loop thread.
 */
#ifndef GPUD_SCHED_H
#define GPUD_SCHED_H

#include <stdint.h>

typedef struct sched_item {
	/* Called when the item gets a slot (within sched_submit or sched_release). */
	void (*start)(struct sched_item *it);
	int has_slot;
	struct sched_item *next;    /* its queue */
	struct sched_queue *queued; /* the queue it waits in; NULL when not waiting */
	struct sched_queue *owner;  /* the queue it was submitted to (NULL: no tenant's) */
} sched_item;

typedef struct sched_queue {
	sched_item *head, *tail;
	uint32_t queued;
	uint32_t running;              /* its items holding a slot */
	struct sched_queue *ring_next; /* the ring of queues with waiting items */
	int in_ring;
} sched_queue;

typedef struct sched {
	int slots, busy;
	int per_queue; /* slots one queue may hold: slots - 1, or 1 when slots is 1 */
	sched_queue *ring_head, *ring_tail;
} sched;

void sched_init(sched *s, int slots);
/*
 * Starts it now if a slot is free and q holds fewer than per_queue, else
 * appends it to q. A NULL q (work of no tenant) never waits.
 */
void sched_submit(sched *s, sched_queue *q, sched_item *it);
/* it is done with its slot (it must hold one): the next waiting tenant's item starts. */
void sched_release(sched *s, sched_item *it);
/* Takes a waiting it out of its queue (it never starts): 1, or 0 if it was not waiting. */
int sched_cancel(sched *s, sched_item *it);

#endif
