/*
 * tests/unit/test_hello_guard.c — unit tests of daemon/hello_guard.c with
 * stated times (no waiting): the back-off's schedule by failure count, a
 * peer refused until it has passed and the others not, refusals that do not
 * lengthen it, a fresh start after a quiet hour, peers' keys, the log's one
 * line a minute per peer (its counts), the bounded table (the peer that
 * failed longest ago gives way), and closing a connection after the grace
 * on a real loop.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/hello_guard.h"
#include "daemon/log.h"
#include "tests/unit/suites.h"

#define S 1000000000ull
#define T0 (1000 * S) /* any monotonic time */

static FILE *log_file;

/* gpud's log into a file of the test's (read back with logged()). */
static void setup(void)
{
	log_file = tmpfile();
	ck_assert_ptr_nonnull(log_file);
	log_set_fd(fileno(log_file));
	log_set_format(LOG_FORMAT_TEXT);
	log_set_level(LOG_INFO);
}

static void teardown(void)
{
	log_set_fd(2);
	fclose(log_file);
}

/* What was logged since the last call. */
static const char *logged(void)
{
	static char buf[1 << 20];
	static off_t from;
	off_t end = lseek(fileno(log_file), 0, SEEK_CUR);
	if (end < from)
		from = 0;
	ssize_t n = pread(fileno(log_file), buf, sizeof(buf) - 1, from);
	buf[n > 0 ? n : 0] = '\0';
	from = end;
	return buf;
}

static int count_of(const char *text, const char *what)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

START_TEST(test_backoff_schedule)
{
	static const struct {
		uint32_t failures, seconds;
	} want[] = {{0, 0},    {1, 0},    {2, 0},      {3, 0},           {4, 10},   {5, 20},
		    {6, 40},   {7, 80},   {8, 160},    {9, 320},         {10, 640}, {11, 900},
		    {12, 900}, {40, 900}, {1000, 900}, {UINT32_MAX, 900}};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(guard_backoff_s(want[i].failures) == want[i].seconds,
			      "after %u failures: %u s, expected %u", want[i].failures,
			      guard_backoff_s(want[i].failures), want[i].seconds);
}
END_TEST

START_TEST(test_keys)
{
	static const char *const cases[][2] = {{"10.0.0.7:5123", "10.0.0.7"},
					       {"[::1]:5123", "[::1]"},
					       {"[2001:db8::7]:80", "[2001:db8::7]"},
					       {"uid 1000", "uid 1000"},
					       {"injected", "injected"},
					       {"", ""}};
	char key[GUARD_KEY_LEN];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		guard_key(cases[i][0], key, sizeof(key));
		ck_assert_str_eq(key, cases[i][1]);
	}
}
END_TEST

START_TEST(test_peer_backs_off)
{
	hello_guard g;
	guard_init(&g, NULL, NULL, NULL);
	const char *a = "10.0.0.7", *b = "10.0.0.8";
	uint64_t t = T0;

	/* three free failures: answered as they are, never refused */
	for (int i = 1; i <= GUARD_FREE_FAILURES; i++) {
		ck_assert_uint_eq(guard_check(&g, a, t), 0);
		ck_assert_uint_eq(guard_failed(&g, a, t), 0);
		t += S / 10;
	}
	/* the fourth starts the back-off: 10 s from that failure */
	ck_assert_uint_eq(guard_check(&g, a, t), 0);
	uint64_t t4 = t;
	ck_assert_uint_eq(guard_failed(&g, a, t4), 10);
	ck_assert_uint_eq(guard_check(&g, a, t4 + 1), 10);            /* rounded up */
	ck_assert_uint_eq(guard_check(&g, a, t4 + 9 * S + S / 2), 1); /* half a second: 1 */
	ck_assert_uint_eq(guard_check(&g, b, t4 + 1), 0);             /* another peer: no */
	ck_assert_ptr_null(guard_find(&g, b));
	ck_assert_uint_eq(guard_backing_off(&g, t4 + 1), 1);
	/* refusals do not lengthen it, however many */
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_ge(guard_check(&g, a, t4 + 2 * S), 8);
	ck_assert_uint_eq(guard_check(&g, a, t4 + 10 * S), 0); /* passed */
	ck_assert_uint_eq(guard_backing_off(&g, t4 + 10 * S), 0);
	/* the next failure doubles it */
	ck_assert_uint_eq(guard_failed(&g, a, t4 + 10 * S), 20);
	ck_assert_uint_eq(guard_check(&g, a, t4 + 29 * S), 1);
	ck_assert_uint_eq(guard_check(&g, a, t4 + 30 * S), 0);

	const guard_peer *p = guard_find(&g, a);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->failures, 5);
	ck_assert_uint_eq(p->total, 5 + 2 + 1000 + 1); /* both kinds counted */
	ck_assert_uint_eq(g.npeers, 1);
	guard_fini(&g);
}
END_TEST

/* An hour without a failed hello: the peer's count starts over. */
START_TEST(test_quiet_hour_forgets)
{
	hello_guard g;
	guard_init(&g, NULL, NULL, NULL);
	uint64_t t = T0;
	for (int i = 0; i < 6; i++)
		guard_failed(&g, "uid 1000", t);
	ck_assert_uint_eq(guard_find(&g, "uid 1000")->failures, 6);
	/* 59 minutes on: still remembered (a back-off of 40 s, long passed) */
	t += 59 * 60 * S;
	ck_assert_uint_eq(guard_failed(&g, "uid 1000", t), guard_backoff_s(7));
	/* an hour after that one: afresh, the first failure is free again */
	t += GUARD_FORGET_S * S;
	ck_assert_uint_eq(guard_failed(&g, "uid 1000", t), 0);
	ck_assert_uint_eq(guard_find(&g, "uid 1000")->failures, 1);
	/* the minute's tick drops peers quiet for an hour (not one still logging) */
	guard_tick(&g, t + GUARD_FORGET_S * S);
	ck_assert_ptr_null(guard_find(&g, "uid 1000"));
	ck_assert_uint_eq(g.npeers, 0);
	guard_fini(&g);
}
END_TEST

/* One line per peer a minute at most, with the counts since the last. */
START_TEST(test_log_once_a_minute)
{
	hello_guard g;
	guard_init(&g, NULL, NULL, NULL);
	const char *k = "192.0.2.9";
	uint64_t t = T0;
	logged();

	for (int i = 0; i < 1000; i++) /* 1000 in 59.9 s */
		guard_failed(&g, k, t + (uint64_t)i * (S / 17));
	const char *o = logged();
	ck_assert_int_eq(count_of(o, "\n"), 1);
	ck_assert_msg(strstr(o, " warn: failed hellos from 192.0.2.9: 1 (a wrong or no token); "
				"more are counted and logged at most once a minute\n"),
		      "%s", o);
	ck_assert_uint_eq(guard_find(&g, k)->lines, 1);
	uint64_t last = t + 999 * (S / 17);
	/* refusals while it backs off are counted too */
	for (int i = 0; i < 5; i++)
		guard_check(&g, k, last + 1);
	ck_assert_str_eq(logged(), "");

	/* a minute after the line: the next failure says the counts */
	guard_failed(&g, k, t + 60 * S);
	o = logged();
	ck_assert_int_eq(count_of(o, "\n"), 1);
	ck_assert_msg(strstr(o, "failed hellos from 192.0.2.9: 1005 more in 60 s (1000 with a "
				"wrong or no token, 5 refused unread during its back-off), 1006 in "
				"all; its hellos are refused for the next 900 s\n"),
		      "%s", o);

	/* the minute's tick says what came after, once a minute has passed */
	for (int i = 1; i <= 3; i++)
		guard_check(&g, k, t + 60 * S + (uint64_t)i * S);
	guard_tick(&g, t + 119 * S);
	ck_assert_str_eq(logged(), "");
	guard_tick(&g, t + 120 * S);
	o = logged();
	ck_assert_msg(count_of(o, "\n") == 1 && strstr(o, ": 3 more in 60 s (0 with a wrong or no "
							  "token, 3 refused unread"),
		      "%s", o);
	guard_tick(&g, t + 500 * S); /* nothing new: nothing said */
	ck_assert_str_eq(logged(), "");
	ck_assert_uint_eq(guard_find(&g, k)->lines, 3);
	guard_fini(&g);
}
END_TEST

/* A scanner of many addresses: the table stays at GUARD_PEERS_MAX. */
START_TEST(test_table_bounded)
{
	hello_guard g;
	char key[32];
	guard_init(&g, NULL, NULL, NULL);
	log_set_level(LOG_ERROR); /* a line per new peer: not wanted here */
	uint64_t t = T0;
	for (int i = 0; i < GUARD_PEERS_MAX + 500; i++) {
		snprintf(key, sizeof(key), "10.1.%d.%d", i / 256, i % 256);
		guard_failed(&g, key, t + (uint64_t)i * S);
		/* one peer keeps failing: always among the newest, never evicted */
		for (int k = 0; k < 4; k++)
			guard_failed(&g, "198.51.100.1", t + (uint64_t)i * S + 1);
	}
	ck_assert_uint_eq(g.npeers, GUARD_PEERS_MAX);
	ck_assert_uint_eq(g.evicted, 501);
	ck_assert_ptr_nonnull(guard_find(&g, "198.51.100.1"));
	ck_assert_uint_gt(guard_check(&g, "198.51.100.1", t + (GUARD_PEERS_MAX + 500) * S), 0);
	ck_assert_ptr_null(guard_find(&g, "10.1.0.0")); /* the oldest went first */
	ck_assert_ptr_null(guard_find(&g, "10.1.1.244"));
	ck_assert_ptr_nonnull(guard_find(&g, "10.1.1.245"));
	snprintf(key, sizeof(key), "10.1.%d.%d", (GUARD_PEERS_MAX + 499) / 256,
		 (GUARD_PEERS_MAX + 499) % 256);
	ck_assert_ptr_nonnull(guard_find(&g, key));
	size_t n = 0;
	for (const guard_peer *p = g.peers; p; p = p->hh.next)
		n++;
	ck_assert_uint_eq(n, GUARD_PEERS_MAX);
	guard_fini(&g);
}
END_TEST

static uint32_t closed[8];
static int nclosed;

static void on_close(void *arg, uint32_t pipe_id)
{
	ck_assert_ptr_eq(arg, &closed);
	ck_assert_int_lt(nclosed, 8);
	closed[nclosed++] = pipe_id;
}

/* Closing a connection: after the grace on a loop (run until it fires), at once without one. */
START_TEST(test_close_later)
{
	hello_guard g;
	uv_loop_t loop;
	nclosed = 0;
	guard_init(&g, NULL, on_close, &closed);
	guard_close_later(&g, 41, T0);
	ck_assert_int_eq(nclosed, 1);
	ck_assert_uint_eq(closed[0], 41);
	guard_fini(&g);

	ck_assert_int_eq(uv_loop_init(&loop), 0);
	guard_init(&g, &loop, on_close, &closed);
	guard_close_later(&g, 7, uv_hrtime());
	guard_close_later(&g, 8, uv_hrtime());
	ck_assert_int_eq(nclosed, 1); /* not yet: its answer leaves first */
	/* the minute's timer keeps no loop alive: this returns once both are closed */
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(nclosed, 3);
	ck_assert_uint_eq(closed[1], 7);
	ck_assert_uint_eq(closed[2], 8);
	guard_fini(&g);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

Suite *hello_guard_suite(void)
{
	Suite *s = suite_create("hello_guard");
	TCase *tc = tcase_create("guard");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_backoff_schedule);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_peer_backs_off);
	tcase_add_test(tc, test_quiet_hour_forgets);
	tcase_add_test(tc, test_log_once_a_minute);
	tcase_add_test(tc, test_table_bounded);
	tcase_add_test(tc, test_close_later);
	suite_add_tcase(s, tc);
	return s;
}
