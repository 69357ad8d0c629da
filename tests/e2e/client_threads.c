/*
 * tests/e2e/client_threads.c — test case "client", part 2: one gpud_client
 * shared by 16 threads, 1,000 mixed calls each (alloc with data, run,
 * download, status, free, and a call that fails on purpose), every result
 * checked and every error message the calling thread's own. make test-tsan
 * runs this under ThreadSanitizer.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tests/e2e/e2e.h"

#define THREADS 16
#define CALLS 1000

typedef struct worker {
	gpud_client *c;
	int index;
	int calls, failed;
	char first_failure[512];
} worker;

static void failure(worker *w, const char *what, gpud_status st)
{
	if (w->failed++ == 0)
		snprintf(w->first_failure, sizeof(w->first_failure), "thread %d: %s: %s: %s",
			 w->index, what, gpud_strerror(st), gpud_errmsg(w->c));
}

static void *work(void *arg)
{
	worker *w = arg;
	gpud_client *c = w->c;
	uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(w->index + 1), n = 32;
	double v[32], got[32];
	gpud_status st;

	while (w->calls < CALLS) {
		for (int i = 0; i < 32; i++)
			v[i] = harness_rng_unit(&rng) - 0.5;
		gpud_handle h, out;
		w->calls++;
		if ((st = gpud_alloc(c, GPUD_F64, 1, &n, v, &h)) != GPUD_OK) {
			failure(w, "alloc", st);
			continue;
		}
		gpud_arg a[] = {gpud_arg_buffer("x", h), gpud_arg_buffer("y", h)};
		gpud_output o;
		size_t no = 0;
		w->calls++;
		if ((st = gpud_run(c, "mul", a, 2, &o, 1, &no, NULL)) != GPUD_OK || no != 1) {
			failure(w, "run", st);
			continue;
		}
		out = o.handle;
		w->calls++;
		if ((st = gpud_download_range(c, out, 0, got, sizeof(got))) != GPUD_OK) {
			failure(w, "download", st);
		} else {
			for (int i = 0; i < 32; i++)
				if (got[i] != v[i] * v[i]) {
					failure(w, "mul gave a wrong value", GPUD_OK);
					break;
				}
		}
		/* A call that must fail, with this thread's message. */
		gpud_handle gone = 0x0000000000000001ull + (uint64_t)w->index;
		w->calls++;
		st = gpud_download_range(c, gone, 0, got, 8);
		char want[64];
		snprintf(want, sizeof(want), "unknown handle %016llx", (unsigned long long)gone);
		if (st != GPUD_ENOTFOUND || strstr(gpud_errmsg(c), want) == NULL)
			failure(w, "the failing call's own message", st);
		if (w->calls % 20 == 0) {
			gpud_daemon_status s;
			w->calls++;
			if ((st = gpud_status_get(c, &s)) != GPUD_OK)
				failure(w, "status", st);
		}
		gpud_handle both[] = {h, out};
		w->calls++;
		if ((st = gpud_free(c, both, 2)) != GPUD_OK)
			failure(w, "free", st);
	}
	return NULL;
}

START_TEST(test_threads_share_a_client)
{
	gpud_client *c = lib_connect();
	pthread_t t[THREADS];
	worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (worker){.c = c, .index = i};
		ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	int calls = 0, failed = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		calls += w[i].calls;
		failed += w[i].failed;
		if (w[i].failed)
			fprintf(stderr, "%s (%d failures)\n", w[i].first_failure, w[i].failed);
	}
	ck_assert_int_ge(calls, THREADS * CALLS);
	ck_assert_int_eq(failed, 0);
	gpud_daemon_status s = wait_no_buffers(c, E2E_SAFETY_S);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(gpud_reconnects(c), 0);
	gpud_close(c);
}
END_TEST

void client_threads_tests(TCase *tc)
{
	tcase_add_test(tc, test_threads_share_a_client);
}
