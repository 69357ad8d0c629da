/*
 * tests/e2e/fairness.c — fair compute between tenants: a short run of one
 * tenant is answered while another tenant's long runs hold the backend, and
 * a built-in run over its tenant's run_timeout fails QUOTA, saying so.
 *
 * alice and bob are tenants of their own over tcp:// (tokens). Nothing here
 * measures time: the tests wait on replies and assert on their order and
 * on what gpud reports (alice's reply comes while each of bob's jobs is
 * still unanswered). bob's long runs take minutes on the cpu backend (and
 * stop between chunks when cancelled), alice's sum a few milliseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

/* bob's runs at once: more than the slots a tenant may hold (3 of 4 with
 * cpu_threads = 2), so one of them waits in his queue */
#define BOB_RUNS 4

/* gpud on tcp:// with alice's and bob's tokens, two cpu threads, and conf_extra. */
static void start_fair(const char *conf_extra)
{
	static char tail[1024];
	snprintf(tail, sizeof(tail), "cpu_threads = 2\n%s", conf_extra);
	start_tenants(tail, NULL, NULL, NULL);
}

/* A lombscargle of nx samples x nf frequencies (float64) on c's new buffers. */
static void long_inputs(gpud_client *c, uint64_t nx, uint64_t nf, gpud_handle *h, gpud_arg *a)
{
	double *x = malloc(nx * sizeof(double)), *f = malloc(nf * sizeof(double));
	ck_assert(x && f);
	for (uint64_t i = 0; i < nx; i++)
		x[i] = (double)i * 0.01 + 0.001 * (double)(i % 7);
	for (uint64_t i = 0; i < nf; i++)
		f[i] = 0.1 + (double)i * 1e-4;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &nx, x, &h[0]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &nx, x, &h[1]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &nf, f, &h[2]));
	free(x);
	free(f);
	a[0] = gpud_arg_buffer("x", h[0]);
	a[1] = gpud_arg_buffer("y", h[1]);
	a[2] = gpud_arg_buffer("freqs", h[2]);
}

/* alice's sum of 1..10, one trip (inline array in, the result back): 55. */
static void alice_sums(gpud_client *c)
{
	double v[10];
	for (int i = 0; i < 10; i++)
		v[i] = i + 1;
	gpud_array arr = {
		.dtype = GPUD_F64, .ndim = 1, .shape = {10}, .data = v, .nbytes = sizeof(v)};
	gpud_arg a[] = {gpud_arg_array("x", &arr)};
	gpud_result out;
	size_t no;
	LIB_OK(c, gpud_call(c, "sum", a, 1, &out, 1, &no, NULL));
	ck_assert_uint_eq(no, 1);
	ck_assert(*(const double *)out.array.data == 55);
	gpud_array_free(&out.array);
}

static unsigned want_runs;
static int runs_placed(const gpud_daemon_status *s)
{
	return s->server.ndevices > 0 && s->server.devices[0].runs >= want_runs;
}

/*
 * bob starts BOB_RUNS long lombscargles (minutes each on the cpu backend):
 * three hold run slots, the fourth waits in his queue. alice's sum is
 * answered while every one of bob's jobs is still unanswered and gpud still
 * has all of them; then bob cancels them.
 */
START_TEST(test_short_run_answered_beside_long_ones)
{
	if (strcmp(expected_backend(), "cpu") != 0) {
		/* on a GPU the long run takes milliseconds: no order to assert */
		fprintf(stderr, "fairness: a short run beside long ones is checked on the cpu "
				"backend only\n");
		return;
	}
	start_fair("");
	gpud_client *bob = connect_token(TOKEN_BOB), *alice = connect_token(TOKEN_ALICE);
	gpud_handle h[3];
	gpud_arg a[3];
	long_inputs(bob, 20000, 500000, h, a);
	gpud_job *jobs[BOB_RUNS];
	for (int i = 0; i < BOB_RUNS; i++)
		LIB_OK(bob, gpud_run_async(bob, "lombscargle", a, 3, NULL, NULL, &jobs[i]));
	want_runs = BOB_RUNS;
	gpud_daemon_status s = wait_status(alice, runs_placed, E2E_SAFETY_S);
	ck_assert_uint_eq(s.server.devices[0].slots, 4); /* twice cpu_threads */
	ck_assert_uint_eq(s.server.devices[0].runs, BOB_RUNS);

	alice_sums(alice);
	for (int i = 0; i < BOB_RUNS; i++)
		ck_assert_msg(!gpud_job_done(jobs[i]),
			      "bob's run %d was answered before alice's sum: %s", i,
			      gpud_job_errmsg(jobs[i]));
	s = lib_status(alice);
	ck_assert_uint_eq(s.server.devices[0].runs, BOB_RUNS); /* all of bob's, still in gpud */
	alice_sums(alice); /* and again, with every slot bob may take taken */

	for (int i = 0; i < BOB_RUNS; i++)
		LIB_OK(bob, gpud_job_cancel(jobs[i]));
	for (int i = 0; i < BOB_RUNS; i++) {
		ck_assert_int_eq(gpud_job_wait(jobs[i], -1), GPUD_ECANCELED);
		gpud_job_free(jobs[i]);
	}
	LIB_OK(bob, gpud_free(bob, h, 3));
	gpud_close(alice);
	gpud_close(bob);
}
END_TEST

/*
 * bob's run_timeout is 1 s: his long lombscargle (far longer on either
 * backend) fails QUOTA with the message, after no less than the second, and
 * stopped part-way: the last frequencies of the output he passed still hold
 * what he put there. alice (the default limit) and bob's next short run are
 * not touched.
 */
START_TEST(test_run_over_run_timeout_fails_quota)
{
	start_fair("[tenant bob]\nrun_timeout = 1\n");
	gpud_client *bob = connect_token(TOKEN_BOB), *alice = connect_token(TOKEN_ALICE);
	/* 10^6 samples x 10^7 frequencies: hours on the cpu backend, tens of
	 * seconds on a GPU */
	const uint64_t nx = 1000000, nf = 10000000;
	gpud_handle h[4];
	gpud_arg a[4];
	long_inputs(bob, nx, nf, h, a);
	double *sentinel = malloc(nf * sizeof(double));
	ck_assert(sentinel);
	for (uint64_t i = 0; i < nf; i++)
		sentinel[i] = -1; /* a power is never negative */
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &nf, sentinel, &h[3]));
	free(sentinel);
	a[3] = gpud_arg_buffer("pgram", h[3]);
	size_t no;
	LIB_FAIL(bob, gpud_run(bob, "lombscargle", a, 4, NULL, 0, &no, NULL), GPUD_EQUOTA,
		 "over run_timeout (1 s); split the work or ask the admin");
	const char *msg = gpud_errmsg(bob);
	double after = 0;
	const char *p = strstr(msg, "run of lombscargle stopped after ");
	ck_assert_msg(p && sscanf(p, "run of lombscargle stopped after %lf s", &after) == 1,
		      "message: %s", msg);
	ck_assert_msg(after >= 1.0, "stopped after %.1f s, before its run_timeout: %s", after, msg);
	double last = 0;
	LIB_OK(bob, gpud_download_range(bob, h[3], (nf - 1) * sizeof(double), &last, sizeof(last)));
	ck_assert_msg(last == -1, "pgram[%llu] = %g: the run went on to its end",
		      (unsigned long long)(nf - 1), last);
	ck_assert_uint_eq(lib_status(bob).buffers, 4); /* it made none */

	alice_sums(alice);
	gpud_handle hs[3];
	gpud_arg sa[3];
	gpud_output o;
	long_inputs(bob, 100, 100, hs, sa); /* a short run of bob's still runs */
	LIB_OK(bob, gpud_run(bob, "lombscargle", sa, 3, &o, 1, &no, NULL));
	ck_assert_uint_eq(no, 1);
	LIB_OK(bob, gpud_free(bob, &o.handle, 1));
	LIB_OK(bob, gpud_free(bob, hs, 3));
	LIB_OK(bob, gpud_free(bob, h, 4));

	char log[1 << 16];
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	ck_assert_msg(strstr(log, "tenant=bob verb=run") &&
			      strstr(log, "failed: QUOTA: run of lombscargle stopped after"),
		      "gpud's log does not show bob's run failing QUOTA");
	gpud_close(alice);
	gpud_close(bob);
}
END_TEST

TCase *e2e_fairness(void)
{
	TCase *tc = tcase_create("fairness");
	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_add_test(tc, test_short_run_answered_beside_long_ones);
	tcase_add_test(tc, test_run_over_run_timeout_fails_quota);
	return tc;
}
