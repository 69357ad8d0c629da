/*
 * tests/unit/test_wire.h — what the wire unit tests (test_wire.c,
 * test_wire_framing.c) share: a message check, seeded non-zero bytes, and
 * the framing test case wire_suite adds. Each test runs single-threaded in its
 * own process (Check's fork mode).
 */
#ifndef GPUD_TESTS_UNIT_TEST_WIRE_H
#define GPUD_TESTS_UNIT_TEST_WIRE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define assert_has(err, want)                                                                      \
	ck_assert_msg(strstr((err), (want)) != NULL, "message '%s' lacks '%s'", (err), (want))

/* Random bytes, none of them zero, from a fixed seed (xorshift64). */
void fill_nonzero(uint8_t *p, size_t n, uint64_t seed);

/* test_wire_framing.c: broken frames, the room wire_pack leaves, draining, status names. */
TCase *wire_framing_tcase(void);

#endif
