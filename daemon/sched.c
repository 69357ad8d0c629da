/* daemon/sched.c — run slots and the round-robin ring of tenant queues. */
#include <stddef.h>

#include "daemon/loop.h"
#include "daemon/sched.h"

void sched_init(sched *s, int slots)
{
	s->slots = slots > 0 ? slots : 1;
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
	it->has_slot = 1;
	it->start(it);
}

void sched_submit(sched *s, sched_queue *q, sched_item *it)
{
	ON_LOOP("sched_submit");
	it->has_slot = 0;
	it->next = NULL;
	it->queued = NULL;
	if (q == NULL || s->busy < s->slots) {
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

void sched_release(sched *s, sched_item *it)
{
	ON_LOOP("sched_release");
	it->has_slot = 0;
	s->busy--;
	/* A start may fail at once and release its slot again (re-entering
	 * here): every field is consistent before each start. */
	while (s->busy < s->slots && s->ring_head) {
		sched_queue *q = s->ring_head;
		sched_item *next = q->head;
		s->ring_head = q->ring_next;
		if (s->ring_head == NULL)
			s->ring_tail = NULL;
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
