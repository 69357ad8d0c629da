/*
 * tests/unit/test_ring.c — unit tests of daemon/ring.c's decoder: what
 * ring_peek reads from a ring's header (nothing until req_seq moves; each
 * field once after it) and what ring_check lets through (a request's length
 * against the area and the message limit, MORE only while a reply is being
 * sent in chunks, no other kind), with the words of each refusal.
 */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/ring.h"
#include "tests/unit/suites.h"

#define assert_has(err, want)                                                                      \
	ck_assert_msg(strstr((err), (want)) != NULL, "message '%s' lacks '%s'", (err), (want))

START_TEST(test_peek)
{
	gpud_ring_hdr h;
	ring_entry e = {.seq = 99, .kind = 99, .len = 99};
	memset(&h, 0, sizeof(h));
	h.req_seq = 5;
	h.req_kind = GPUD_RING_REQUEST;
	h.req_len = 123;
	ck_assert_int_eq(ring_peek(&h, 5, &e), 0); /* nothing new */
	ck_assert_uint_eq(e.seq, 99);
	ck_assert_int_eq(ring_peek(&h, 4, &e), 1);
	ck_assert_uint_eq(e.seq, 5);
	ck_assert_uint_eq(e.kind, GPUD_RING_REQUEST);
	ck_assert_uint_eq(e.len, 123);
	/* Wrapping counters: any change is new. */
	h.req_seq = 0;
	h.req_kind = GPUD_RING_MORE;
	h.req_len = 0;
	ck_assert_int_eq(ring_peek(&h, UINT32_MAX, &e), 1);
	ck_assert_uint_eq(e.seq, 0);
	ck_assert_uint_eq(e.kind, GPUD_RING_MORE);
}
END_TEST

START_TEST(test_check)
{
	char err[256];
	const size_t cap = 1u << 16, max = 1u << 20;
	ring_entry e = {.seq = 1, .kind = GPUD_RING_REQUEST, .len = 4};
	ck_assert_int_eq(ring_check(&e, cap, max, 0, err, sizeof(err)), 0);
	e.len = (uint32_t)cap;
	ck_assert_int_eq(ring_check(&e, cap, max, 1, err, sizeof(err)), 0);
	e.len = (uint32_t)cap + 1;
	ck_assert_int_eq(ring_check(&e, cap, max, 0, err, sizeof(err)), -1);
	assert_has(err, "req_len 65537 is outside [4, 65536]");
	e.len = 3;
	ck_assert_int_eq(ring_check(&e, cap, max, 0, err, sizeof(err)), -1);
	assert_has(err, "req_len 3");
	e.len = 5000; /* within the area, over the message limit */
	ck_assert_int_eq(ring_check(&e, cap, 4096, 0, err, sizeof(err)), -1);
	assert_has(err, "a message at most 4096");
	e.kind = GPUD_RING_MORE;
	ck_assert_int_eq(ring_check(&e, cap, max, 1, err, sizeof(err)), 0);
	ck_assert_int_eq(ring_check(&e, cap, max, 0, err, sizeof(err)), -1);
	assert_has(err, "MORE (2) with no reply being sent in chunks");
	e.kind = 0;
	ck_assert_int_eq(ring_check(&e, cap, max, 0, err, sizeof(err)), -1);
	assert_has(err, "req_kind 0 is neither REQUEST (1) nor MORE (2)");
	e.kind = UINT32_MAX;
	ck_assert_int_eq(ring_check(&e, cap, max, 1, err, sizeof(err)), -1);
	assert_has(err, "req_kind 4294967295");
}
END_TEST

/* The layout both sides agree on: one cache line per writer. */
START_TEST(test_layout)
{
	ck_assert_uint_eq(sizeof(gpud_ring_hdr), 192);
	ck_assert_uint_eq(offsetof(gpud_ring_hdr, rep_seq), 64);
	ck_assert_uint_eq(offsetof(gpud_ring_hdr, rep_total), 80);
	ck_assert_uint_eq(offsetof(gpud_ring_hdr, gpud_sleeping), 128);
	ck_assert_uint_le(sizeof(gpud_ring_hdr), GPUD_RING_HDR);
}
END_TEST

Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("decoder");
	tcase_add_test(tc, test_peek);
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_layout);
	suite_add_tcase(s, tc);
	return s;
}
