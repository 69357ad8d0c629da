/*
 * tests/unit/test_sched.c — the run scheduler (daemon/sched.h) on its own:
 * slots, a tenant's share of them (all but one), the round-robin ring of
 * tenant queues, work of no tenant, and a start that fails at once
 * (releases its slot inside sched_submit or sched_release).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "daemon/sched.h"
#include "tests/unit/suites.h"

/* A run of the test: its name, and where the order of starts is written. */
typedef struct run {
	sched_item it;
	char name[8];
	int fail; /* releases its slot as soon as it starts */
} run;

static sched s;
static char order[256];
static int started;

static void on_start(sched_item *it)
{
	run *r = (run *)it;
	ck_assert(it->has_slot);
	started++;
	strcat(order, r->name);
	strcat(order, " ");
	if (r->fail)
		sched_release(&s, it);
}

static void submit(run *r, sched_queue *q, const char *name)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->it.start = on_start;
	sched_submit(&s, q, &r->it);
}

static void setup(void)
{
	order[0] = '\0';
	started = 0;
}

/*
 * Three slots: a tenant takes two at most, so the third is B's at once
 * though A had asked first; then each release starts the next tenant's
 * oldest run, A's flood behind B and C.
 */
START_TEST(test_slots_then_round_robin)
{
	sched_queue a = {0}, b = {0}, c = {0};
	run ra[5], rb[2], rc[1];
	sched_init(&s, 3);
	ck_assert_int_eq(s.per_queue, 2);
	submit(&ra[0], &a, "A1");
	submit(&ra[1], &a, "A2");
	submit(&ra[2], &a, "A3"); /* waits: A holds its two, the last slot is another's */
	ck_assert_str_eq(order, "A1 A2 ");
	ck_assert_int_eq(s.busy, 2);
	ck_assert_uint_eq(a.running, 2);
	submit(&ra[3], &a, "A4");
	submit(&ra[4], &a, "A5");
	submit(&rb[0], &b, "B1");
	ck_assert_str_eq(order, "A1 A2 B1 ");
	submit(&rb[1], &b, "B2");
	submit(&rc[0], &c, "C1");
	ck_assert_int_eq(started, 3);
	ck_assert_int_eq(s.busy, 3);
	ck_assert_uint_eq(a.queued, 3);
	ck_assert_uint_eq(b.queued, 1);
	ck_assert_uint_eq(c.queued, 1);
	sched_release(&s, &ra[0].it); /* A is first in the ring */
	sched_release(&s, &rb[0].it);
	sched_release(&s, &ra[1].it); /* C's turn, though A freed the slot */
	ck_assert_str_eq(order, "A1 A2 B1 A3 B2 C1 ");
	ck_assert(!b.in_ring && !c.in_ring);
	sched_release(&s, &ra[2].it);
	sched_release(&s, &rc[0].it);
	ck_assert_str_eq(order, "A1 A2 B1 A3 B2 C1 A4 A5 ");
	ck_assert_uint_eq(a.queued + b.queued + c.queued, 0);
	ck_assert(!a.in_ring);
	ck_assert_ptr_null(s.ring_head);
	ck_assert_uint_eq(a.running, 2);
	sched_release(&s, &rb[1].it);
	sched_release(&s, &ra[3].it);
	sched_release(&s, &ra[4].it);
	ck_assert_int_eq(s.busy, 0);
	ck_assert_uint_eq(a.running + b.running + c.running, 0);
	ck_assert(!ra[4].it.has_slot);
}
END_TEST

/*
 * Two slots, bob's long runs: he holds one, his second waits though a slot
 * is free, and alice's run takes that slot at once; bob's second starts
 * only when his first ends, never in alice's place.
 */
START_TEST(test_one_tenant_leaves_a_slot)
{
	sched_queue bob = {0}, alice = {0};
	run rb[3], ra[2];
	sched_init(&s, 2);
	ck_assert_int_eq(s.per_queue, 1);
	submit(&rb[0], &bob, "B1");
	submit(&rb[1], &bob, "B2");
	submit(&rb[2], &bob, "B3");
	ck_assert_str_eq(order, "B1 ");
	ck_assert_int_eq(s.busy, 1);
	ck_assert_uint_eq(bob.queued, 2);
	submit(&ra[0], &alice, "A1");
	ck_assert_str_eq(order, "B1 A1 ");
	sched_release(&s, &ra[0].it); /* bob is at his share: the slot stays free */
	ck_assert_str_eq(order, "B1 A1 ");
	ck_assert_int_eq(s.busy, 1);
	submit(&ra[1], &alice, "A2");
	ck_assert_str_eq(order, "B1 A1 A2 ");
	sched_release(&s, &rb[0].it);
	ck_assert_str_eq(order, "B1 A1 A2 B2 ");
	sched_release(&s, &ra[1].it);
	sched_release(&s, &rb[1].it);
	ck_assert_str_eq(order, "B1 A1 A2 B2 B3 ");
	sched_release(&s, &rb[2].it);
	ck_assert_int_eq(s.busy, 0);
	ck_assert_ptr_null(s.ring_head);
}
END_TEST

/* One slot: a tenant may hold it (there is no other to keep it for). */
START_TEST(test_one_slot_is_anyones)
{
	sched_queue a = {0}, b = {0};
	run r[3];
	sched_init(&s, 1);
	ck_assert_int_eq(s.per_queue, 1);
	submit(&r[0], &a, "A1");
	submit(&r[1], &a, "A2");
	submit(&r[2], &b, "B1");
	ck_assert_str_eq(order, "A1 ");
	sched_release(&s, &r[0].it);
	ck_assert_str_eq(order, "A1 A2 "); /* A asked first */
	sched_release(&s, &r[1].it);
	ck_assert_str_eq(order, "A1 A2 B1 ");
	sched_release(&s, &r[2].it);
	ck_assert_int_eq(s.busy, 0);
}
END_TEST

START_TEST(test_no_tenant_never_waits)
{
	sched_queue a = {0};
	run r[3];
	sched_init(&s, 1);
	submit(&r[0], &a, "A1");
	submit(&r[1], &a, "A2"); /* waits: one slot */
	submit(&r[2], NULL, "X");
	ck_assert_str_eq(order, "A1 X ");
	ck_assert_int_eq(s.busy, 2); /* counted, over the slots */
	sched_release(&s, &r[2].it);
	ck_assert_str_eq(order, "A1 X "); /* still full: A1 holds the one slot */
	sched_release(&s, &r[0].it);
	ck_assert_str_eq(order, "A1 X A2 ");
	sched_release(&s, &r[1].it);
	ck_assert_int_eq(s.busy, 0);
}
END_TEST

/* A run whose start fails gives its slot back within the call: the next
 * waiting runs start, and the counts stay right. */
START_TEST(test_failing_start_passes_the_slot_on)
{
	sched_queue a = {0}, b = {0};
	run r[4];
	sched_init(&s, 1);
	submit(&r[0], &a, "A1");
	memset(&r[1], 0, sizeof(r[1]));
	snprintf(r[1].name, sizeof(r[1].name), "B1");
	r[1].fail = 1;
	r[1].it.start = on_start;
	sched_submit(&s, &b, &r[1].it);
	submit(&r[2], &a, "A2");
	submit(&r[3], &b, "B2");
	sched_release(&s, &r[0].it); /* B1 starts and fails; A2 gets the slot */
	ck_assert_str_eq(order, "A1 B1 A2 ");
	ck_assert_int_eq(s.busy, 1);
	sched_release(&s, &r[2].it);
	ck_assert_str_eq(order, "A1 B1 A2 B2 ");
	sched_release(&s, &r[3].it);
	ck_assert_int_eq(s.busy, 0);
	ck_assert_ptr_null(s.ring_head);
}
END_TEST

/* A cancelled waiting run never starts; its tenant leaves the ring when
 * nothing of it waits any more; a running or unknown item is not taken. */
START_TEST(test_cancel_waiting)
{
	sched_queue a = {0}, b = {0};
	run r[5];
	sched_init(&s, 1);
	submit(&r[0], &a, "A1");
	submit(&r[1], &a, "A2");
	submit(&r[2], &b, "B1");
	submit(&r[3], &a, "A3");
	submit(&r[4], &b, "B2");
	ck_assert_int_eq(sched_cancel(&s, &r[0].it), 0); /* it runs */
	ck_assert_int_eq(sched_cancel(&s, &r[3].it), 1); /* A's tail */
	ck_assert_ptr_eq(a.tail, &r[1].it);
	ck_assert_int_eq(sched_cancel(&s, &r[3].it), 0); /* already out */
	ck_assert_int_eq(sched_cancel(&s, &r[2].it), 1); /* B's head */
	ck_assert_uint_eq(b.queued, 1);
	ck_assert_int_eq(sched_cancel(&s, &r[4].it), 1); /* B is empty: out of the ring */
	ck_assert(!b.in_ring);
	ck_assert_ptr_eq(s.ring_head, &a);
	ck_assert_ptr_eq(s.ring_tail, &a);
	sched_release(&s, &r[0].it);
	ck_assert_str_eq(order, "A1 A2 ");
	sched_release(&s, &r[1].it);
	ck_assert_str_eq(order, "A1 A2 ");
	ck_assert_int_eq(s.busy, 0);
	ck_assert_ptr_null(s.ring_head);
	ck_assert_ptr_null(s.ring_tail);
}
END_TEST

START_TEST(test_slots_at_least_one)
{
	sched_init(&s, 0);
	ck_assert_int_eq(s.slots, 1);
}
END_TEST

Suite *sched_suite(void)
{
	Suite *su = suite_create("sched");
	TCase *tc = tcase_create("sched");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_slots_then_round_robin);
	tcase_add_test(tc, test_one_tenant_leaves_a_slot);
	tcase_add_test(tc, test_one_slot_is_anyones);
	tcase_add_test(tc, test_no_tenant_never_waits);
	tcase_add_test(tc, test_failing_start_passes_the_slot_on);
	tcase_add_test(tc, test_cancel_waiting);
	tcase_add_test(tc, test_slots_at_least_one);
	suite_add_tcase(su, tc);
	return su;
}
