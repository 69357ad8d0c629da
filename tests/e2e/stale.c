/*
 * tests/e2e/stale.c — test case "stale": memory one tenant freed never
 * reaches another. alice (tcp://, a token) fills a buffer with marker words
 * and frees it; bob allocates the same size without data and reads it back:
 * zeros, at every power of two from 16 B to 64 MiB and a few sizes between
 * (tests/harness.c: harness_stale_round). On the cuda backend the GPU suite
 * runs the same rounds against the pool's reused blocks (tests/gpu/stale.c).
 */
#include <stdio.h>

#include "tests/e2e/e2e.h"

static void setup_stale(void)
{
	start_tenants(NULL, NULL, NULL, NULL);
}

START_TEST(test_freed_data_never_reaches_another_tenant)
{
	gpud_client *alice = connect_token(TOKEN_ALICE), *bob = connect_token(TOKEN_BOB);
	static const size_t between[] = {24, 1000, 4104, (3u << 20) + 8};
	char msg[512];
	int rounds = 0;
	for (size_t bytes = 16; bytes <= (64u << 20); bytes *= 2, rounds++) {
		gpud_handle a, b;
		ck_assert_msg(harness_stale_round(alice, bob, bytes, &a, &b, msg, sizeof(msg)) == 0,
			      "%s", msg);
		LIB_OK(bob, gpud_free(bob, &b, 1));
	}
	for (size_t i = 0; i < sizeof(between) / sizeof(between[0]); i++, rounds++) {
		gpud_handle a, b;
		/* and back: bob's marker words never reach alice */
		ck_assert_msg(harness_stale_round(bob, alice, between[i], &a, &b, msg,
						  sizeof(msg)) == 0,
			      "%s", msg);
		LIB_OK(alice, gpud_free(alice, &b, 1));
	}
	ck_assert_int_eq(rounds, 23 + 4);
	gpud_close(alice);
	gpud_close(bob);
}
END_TEST

TCase *e2e_stale(void)
{
	TCase *tc = tcase_create("stale");
	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup_stale, gpud_teardown);
	tcase_add_test(tc, test_freed_data_never_reaches_another_tenant);
	return tc;
}
