/*
 * tests/e2e/concurrency.c — test case "concurrency": many clients at once,
 * each checking its own runs against the reference.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tests/e2e/e2e.h"

#define NTHREADS 16
#define NITER 8

typedef struct worker {
	int id;
	int ok_runs;
	char msg[1200];
} worker;

static void *worker_main(void *arg)
{
	worker *w = arg;
	gpud_client *c;
	gpud_dtype dt = (w->id & 1) ? GPUD_F32 : GPUD_F64;

	if (gpud_connect(e2e_gpud.url, &c) != GPUD_OK) {
		snprintf(w->msg, sizeof(w->msg), "connect: %s", gpud_errmsg(c));
		gpud_close(c);
		return NULL;
	}
	gpud_set_timeout(c, 60000);
	for (int it = 0; it < NITER; it++) {
		size_t nx = 20 + (size_t)w->id, nf = 30 + (size_t)it * 3;
		double x[64], y[64], f[64], ref[64], got[64];
		ls_result res;
		size_t bad;

		gen_ls((uint64_t)(w->id * 1000 + it), nx, nf, x, y, f);
		if (dt == GPUD_F32) {
			round_to_f32(x, nx);
			round_to_f32(y, nx);
			round_to_f32(f, nf);
		}
		ls_ref(x, y, nx, f, nf, it & 1, (it >> 1) & 1, ref);
		ls_lib_run(c, dt, x, y, nx, f, nf, it & 1, (it >> 1) & 1, 0, got, &res);
		if (res.st != GPUD_OK) {
			snprintf(w->msg, sizeof(w->msg), "iteration %d: %s", it, res.msg);
			break;
		}
		double e = rel_err(got, dt, ref, nf, &bad);
		if (!(e <= tol_for(dt))) {
			snprintf(w->msg, sizeof(w->msg),
				 "iteration %d: relative error %.3g at element %zu (got %.17g, "
				 "expected %.17g)",
				 it, e, bad, elem(got, dt, bad), ref[bad]);
			break;
		}
		w->ok_runs++;
	}
	gpud_close(c);
	return NULL;
}

START_TEST(test_many_clients_at_once)
{
	pthread_t t[NTHREADS];
	worker w[NTHREADS];

	for (int i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_msg(w[i].ok_runs == NITER, "client %d: %d of %d runs succeeded: %s", i,
			      w[i].ok_runs, NITER, w[i].msg);

	gpud_client *c = lib_connect();
	gpud_daemon_status s = wait_no_buffers(c, E2E_SAFETY_S);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(s.bytes_in_use, 0);
	ck_assert_uint_eq(s.errors, 0);
	/* hello + NITER x (3 allocs, run, download, free) per client, at least. */
	ck_assert_uint_ge(s.requests, (uint64_t)NTHREADS * (1 + NITER * 6));
	gpud_close(c);
}
END_TEST

TCase *e2e_concurrency(void)
{
	TCase *tc = tcase_create("concurrency");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_many_clients_at_once);
	return tc;
}
