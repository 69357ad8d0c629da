/*
 * tests/unit/test_peers.c — unit tests of daemon/peers.c: a peer kept at a
 * connection's start is taken once, whole; a second put replaces; drop and
 * fini free what no session took; nng's threads putting while the loop takes
 * lose and mix up nothing.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "daemon/peers.h"
#include "tests/unit/suites.h"

static endpoint_peer peer_of(uint32_t id)
{
	endpoint_peer p;
	memset(&p, 0, sizeof(p));
	p.local = (int)(id & 1);
	p.uid = 1000 + (int64_t)id;
	p.pid = 40000 + (int64_t)id;
	snprintf(p.addr, sizeof(p.addr), "uid %u", 1000 + id);
	snprintf(p.user, sizeof(p.user), "user%u", id);
	return p;
}

START_TEST(test_take_once)
{
	peer_table t;
	peers_init(&t);
	endpoint_peer in = peer_of(7), out;
	ck_assert_int_eq(peers_put(&t, 7, &in), 0);
	ck_assert_uint_eq(peers_count(&t), 1);
	ck_assert_int_eq(peers_take(&t, 8, &out), 0);
	ck_assert_int_eq(peers_take(&t, 7, &out), 1);
	ck_assert_int_eq(out.local, 1);
	ck_assert_int_eq(out.uid, 1007);
	ck_assert_int_eq(out.pid, 40007);
	ck_assert_str_eq(out.addr, "uid 1007");
	ck_assert_str_eq(out.user, "user7");
	ck_assert_int_eq(peers_take(&t, 7, &out), 0); /* once */
	ck_assert_uint_eq(peers_count(&t), 0);
	peers_fini(&t);
}
END_TEST

START_TEST(test_replace_drop_fini)
{
	peer_table t;
	peers_init(&t);
	endpoint_peer a = peer_of(3), b = peer_of(5), out;
	ck_assert_int_eq(peers_put(&t, 3, &a), 0);
	ck_assert_int_eq(peers_put(&t, 3, &b), 0); /* a pipe id nng gave again */
	ck_assert_uint_eq(peers_count(&t), 1);
	ck_assert_int_eq(peers_take(&t, 3, &out), 1);
	ck_assert_str_eq(out.user, "user5");
	ck_assert_int_eq(peers_put(&t, 9, &a), 0);
	ck_assert_int_eq(peers_put(&t, 10, &b), 0);
	peers_drop(&t, 9);
	peers_drop(&t, 11); /* none kept: nothing */
	ck_assert_uint_eq(peers_count(&t), 1);
	peers_fini(&t); /* frees 10's (valgrind's run checks) */
	ck_assert_uint_eq(peers_count(&t), 0);
}
END_TEST

enum { PUTTERS = 4, PER = 2000 };

static void *putter(void *arg)
{
	peer_table *t = arg;
	static _Atomic uint32_t next = 1;
	for (int i = 0; i < PER; i++) {
		uint32_t id = next++;
		endpoint_peer p = peer_of(id);
		ck_assert_int_eq(peers_put(t, id, &p), 0);
	}
	return NULL;
}

/* Four threads put 8,000 peers while this one takes each id as it comes:
 * every one taken exactly once, each the peer put under its id. */
START_TEST(test_threads)
{
	peer_table t;
	peers_init(&t);
	pthread_t th[PUTTERS];
	for (int i = 0; i < PUTTERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, putter, &t), 0);
	static unsigned char seen[PUTTERS * PER + 1];
	memset(seen, 0, sizeof(seen));
	size_t taken = 0;
	while (taken < PUTTERS * PER) {
		for (uint32_t id = 1; id <= PUTTERS * PER; id++) {
			endpoint_peer out;
			if (!seen[id] && peers_take(&t, id, &out)) {
				char want[32];
				snprintf(want, sizeof(want), "user%u", id);
				ck_assert_str_eq(out.user, want);
				ck_assert_int_eq(out.uid, 1000 + (int64_t)id);
				seen[id] = 1;
				taken++;
			}
		}
	}
	for (int i = 0; i < PUTTERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(peers_count(&t), 0);
	peers_fini(&t);
}
END_TEST

Suite *peers_suite(void)
{
	Suite *s = suite_create("peers");
	TCase *tc = tcase_create("peers");
	tcase_add_test(tc, test_take_once);
	tcase_add_test(tc, test_replace_drop_fini);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	return s;
}
