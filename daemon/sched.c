/* daemon/sched.c — run slots and the round-robin ring of tenant queues. */
#include <stddef.h>

#include "daemon/loop.h"
#include "daemon/sched.h"

void sched_init(sched *s, int slots)
{
	s->slots = slots > 0 ? slots : 1;
	s->per_queue = s->slots > 1 ? s->slots - 1 : 1;
	s->busy = 0;
	s->ring_head = s->ring_tail = NULL;
}

static void ring_append(sched *s, sched_queue *q)
{
	q->ring_next = NULL;
	if (s->ring_tail)
		s->ring_tail->ring_next = q;
	else
		s->ring_head = q;
	s->ring_tail = q;
}

static void grant(sched *s, sched_item *it)
{
	it->queued = NULL;
	s->busy++;
	if (it->owner)
		it->owner->running++;
	it->has_slot = 1;
	it->start(it);
}

void sched_submit(sched *s, sched_queue *q, sched_item *it)
{
	ON_LOOP("sched_submit");
	it->has_slot = 0;
	it->next = NULL;
	it->queued = NULL;
	it->owner = q;
	/* q's earlier items, if any wait, go first (they wait for q's share). */
	if (q == NULL ||
	    (s->busy < s->slots && q->running < (uint32_t)s->per_queue && q->head == NULL)) {
		grant(s, it);
		return;
	}
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->queued++;
	it->queued = q;
	if (!q->in_ring) {
		q->in_ring = 1;
		ring_append(s, q);
	}
}

/* The first queue of the ring that may take another slot, taken off the
 * ring (and put back at its end if more of it waits); NULL if none may.
 * Queues at their share keep their place: they go first once under it. */
static sched_queue *ring_next_eligible(sched *s)
{
	sched_queue *prev = NULL, *q;
	for (q = s->ring_head; q && q->running >= (uint32_t)s->per_queue; q = q->ring_next)
		prev = q;
	if (q == NULL)
		return NULL;
	if (prev)
		prev->ring_next = q->ring_next;
	else
		s->ring_head = q->ring_next;
	if (s->ring_tail == q)
		s->ring_tail = prev;
	return q;
}

void sched_release(sched *s, sched_item *it)
{
	ON_LOOP("sched_release");
	it->has_slot = 0;
	s->busy--;
	if (it->owner)
		it->owner->running--;
	/* A start may fail at once and release its slot again (re-entering
	 * here): every field is consistent before each start. */
	sched_queue *q;
	while (s->busy < s->slots && (q = ring_next_eligible(s)) != NULL) {
		sched_item *next = q->head;
		q->head = next->next;
		if (q->head == NULL)
			q->tail = NULL;
		q->queued--;
		if (q->head) /* back of the ring */
			ring_append(s, q);
		else
			q->in_ring = 0;
		grant(s, next);
	}
}

int sched_cancel(sched *s, sched_item *it)
{
	ON_LOOP("sched_cancel");
	sched_queue *q = it->queued;
	sched_item *prev = NULL, *cur;

	if (q == NULL)
		return 0;
	for (cur = q->head; cur && cur != it; cur = cur->next)
		prev = cur;
	if (cur == NULL)
		return 0;
	if (prev)
		prev->next = it->next;
	else
		q->head = it->next;
	if (q->tail == it)
		q->tail = prev;
	q->queued--;
	it->next = NULL;
	it->queued = NULL;
	if (q->head == NULL && q->in_ring) { /* an empty queue leaves the ring */
		sched_queue *rp = NULL, *rc;
		for (rc = s->ring_head; rc && rc != q; rc = rc->ring_next)
			rp = rc;
		if (rc) {
			if (rp)
				rp->ring_next = q->ring_next;
			else
				s->ring_head = q->ring_next;
			if (s->ring_tail == q)
				s->ring_tail = rp;
		}
		q->in_ring = 0;
		q->ring_next = NULL;
	}
	return 1;
}
