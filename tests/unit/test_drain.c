/*
 * tests/unit/test_drain.c — unit tests of daemon/drain.c: what a stopping
 * gpud serves per verb, before and after the grace, and when the grace
 * ends (its time, no connection left, gpud idle; at most half of
 * shutdown_timeout).
 */
#include <check.h>
#include <string.h>

#include "daemon/drain.h"
#include "daemon/verbs/table.h"
#include "gpud.pb-c.h"
#include "tests/unit/suites.h"

#define S 1000000000ull /* a second in ns */
#define T0 (1000 * S)   /* when the drain starts */

static const Gpud__Request__BodyCase every_verb[] = {
	GPUD__REQUEST__BODY_HELLO,      GPUD__REQUEST__BODY_ALLOC,  GPUD__REQUEST__BODY_UPLOAD,
	GPUD__REQUEST__BODY_DOWNLOAD,   GPUD__REQUEST__BODY_FREE,   GPUD__REQUEST__BODY_RUN,
	GPUD__REQUEST__BODY_KERNELS,    GPUD__REQUEST__BODY_STATUS, GPUD__REQUEST__BODY_SYNC,
	GPUD__REQUEST__BODY_UNMAP,      GPUD__REQUEST__BODY_LIST,   GPUD__REQUEST__BODY_REGISTER,
	GPUD__REQUEST__BODY_UNREGISTER, GPUD__REQUEST__BODY_CANCEL, GPUD__REQUEST__BODY__NOT_SET,
};
#define NVERBS (sizeof(every_verb) / sizeof(every_verb[0]))

/* What the server asks: the rule for the verb of Request body field v. */
static const char *refusal(const drain_state *d, Gpud__Request__BodyCase v)
{
	return drain_refusal(d, verb_flags(verb_index((int)v)));
}

static int always_served(Gpud__Request__BodyCase v)
{
	return v == GPUD__REQUEST__BODY_STATUS || v == GPUD__REQUEST__BODY_FREE ||
	       v == GPUD__REQUEST__BODY_UNMAP || v == GPUD__REQUEST__BODY_CANCEL;
}

START_TEST(test_not_draining_serves_everything)
{
	drain_state d;
	memset(&d, 0, sizeof(d));
	for (size_t i = 0; i < NVERBS; i++)
		ck_assert_msg(refusal(&d, every_verb[i]) == NULL, "verb %d refused",
			      (int)every_verb[i]);
	/* and has no grace to end */
	ck_assert_int_eq(drain_grace_check(&d, T0, 0, 0, 0), 0);
}
END_TEST

START_TEST(test_rule_per_verb)
{
	drain_state d;
	drain_start(&d, T0, 2, 30);
	/* the grace: everything but hello */
	for (size_t i = 0; i < NVERBS; i++) {
		const char *why = refusal(&d, every_verb[i]);
		if (every_verb[i] == GPUD__REQUEST__BODY_HELLO) {
			ck_assert_ptr_nonnull(why);
			ck_assert_msg(strstr(why, "shutting down") &&
					      strstr(why, "no new sessions"),
				      "hello's refusal: %s", why);
		} else {
			ck_assert_msg(why == NULL, "verb %d refused in the grace: %s",
				      (int)every_verb[i], why);
		}
	}
	/* after it: status, free, unmap and cancel only */
	ck_assert_int_eq(drain_grace_check(&d, T0 + 2 * S, 3, 1, T0 + 2 * S), 1);
	for (size_t i = 0; i < NVERBS; i++) {
		const char *why = refusal(&d, every_verb[i]);
		if (always_served(every_verb[i])) {
			ck_assert_msg(why == NULL, "verb %d refused after the grace: %s",
				      (int)every_verb[i], why);
		} else {
			ck_assert_msg(why != NULL, "verb %d served after the grace",
				      (int)every_verb[i]);
			ck_assert_msg(strstr(why, "shutting down"), "refusal: %s", why);
		}
	}
	ck_assert_ptr_nonnull(strstr(refusal(&d, GPUD__REQUEST__BODY_RUN), "nothing was done"));
}
END_TEST

START_TEST(test_grace_ends_at_its_time)
{
	drain_state d;
	drain_start(&d, T0, 2, 30);
	ck_assert_double_eq(d.grace_s, 2);
	/* busy: requests in flight, one just now */
	ck_assert_int_eq(drain_grace_check(&d, T0, 8, 8, T0), 0);
	ck_assert_int_eq(drain_grace_check(&d, T0 + 2 * S - 1, 8, 8, T0 + 2 * S - 1), 0);
	ck_assert_int_eq(d.grace_over, 0);
	ck_assert_int_eq(drain_grace_check(&d, T0 + 2 * S, 8, 8, T0 + 2 * S), 1);
	ck_assert_int_eq(d.grace_over, 1);
	ck_assert_ptr_nonnull(strstr(d.ended, "grace"));
	/* over stays over */
	ck_assert_int_eq(drain_grace_check(&d, T0 + 2 * S, 8, 8, T0 + 2 * S), 1);
}
END_TEST

START_TEST(test_grace_ends_early)
{
	drain_state d;
	/* no connection left */
	drain_start(&d, T0, 2, 30);
	ck_assert_int_eq(drain_grace_check(&d, T0 + 1, 0, 0, T0), 1);
	ck_assert_ptr_nonnull(strstr(d.ended, "no connection"));
	/* idle: nothing in flight and no request for DRAIN_IDLE_NS */
	drain_start(&d, T0, 2, 30);
	ck_assert_int_eq(drain_grace_check(&d, T0 + DRAIN_IDLE_NS - 1, 2, 0, T0), 0);
	ck_assert_int_eq(drain_grace_check(&d, T0 + DRAIN_IDLE_NS, 2, 1, T0), 0); /* in flight */
	ck_assert_int_eq(drain_grace_check(&d, T0 + DRAIN_IDLE_NS, 2, 0, T0), 1);
	ck_assert_ptr_nonnull(strstr(d.ended, "no job is in progress"));
	/* a request 100 ms ago keeps it going */
	drain_start(&d, T0, 2, 30);
	ck_assert_int_eq(drain_grace_check(&d, T0 + S, 2, 0, T0 + S - S / 10), 0);
}
END_TEST

START_TEST(test_grace_bounded_by_shutdown_timeout)
{
	drain_state d;
	drain_start(&d, T0, 10, 6);
	ck_assert_double_eq(d.grace_s, 3);
	ck_assert_int_eq(drain_grace_check(&d, T0 + 3 * S - 1, 1, 1, T0 + 3 * S - 1), 0);
	ck_assert_int_eq(drain_grace_check(&d, T0 + 3 * S, 1, 1, T0 + 3 * S), 1);
	/* no grace: over at once, hello refused as before */
	drain_start(&d, T0, 0, 30);
	ck_assert_int_eq(drain_grace_check(&d, T0, 5, 5, T0), 1);
	ck_assert_ptr_nonnull(refusal(&d, GPUD__REQUEST__BODY_UPLOAD));
	ck_assert_ptr_null(refusal(&d, GPUD__REQUEST__BODY_FREE));
}
END_TEST

Suite *drain_suite(void)
{
	Suite *s = suite_create("drain");
	TCase *tc = tcase_create("drain");
	tcase_add_test(tc, test_not_draining_serves_everything);
	tcase_add_test(tc, test_rule_per_verb);
	tcase_add_test(tc, test_grace_ends_at_its_time);
	tcase_add_test(tc, test_grace_ends_early);
	tcase_add_test(tc, test_grace_bounded_by_shutdown_timeout);
	suite_add_tcase(s, tc);
	return s;
}
