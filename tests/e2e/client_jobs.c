/*
 * tests/e2e/client_jobs.c — test case "client", part 3: asynchronous jobs
 * (many in flight from one thread, each with its own result, callbacks,
 * waits that time out), cancelling (a run waiting for a slot, a running one,
 * a call that timed out), and nothing left behind in gpud: the daemon's
 * buffer count is checked after each case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/e2e.h"

#define NJOBS 64

static int callbacks;

static void on_done(gpud_job *job, void *arg)
{
	int *mine = arg;
	ck_assert(gpud_job_done(job));
	__atomic_add_fetch(mine, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&callbacks, 1, __ATOMIC_RELAXED);
}

/* 64 calls in flight from one thread: each job's results are its own inputs' squares. */
START_TEST(test_jobs_in_flight)
{
	gpud_client *c = lib_connect();
	static double v[NJOBS][16];
	static gpud_array arr[NJOBS];
	gpud_job *jobs[NJOBS];
	int mine[NJOBS] = {0};
	callbacks = 0;
	for (int k = 0; k < NJOBS; k++) {
		for (int i = 0; i < 16; i++)
			v[k][i] = k * 100 + i;
		arr[k] = (gpud_array){.dtype = GPUD_F64, .ndim = 1, .data = v[k]};
		arr[k].shape[0] = 16;
		arr[k].nbytes = sizeof(v[k]);
		gpud_arg a[] = {gpud_arg_array("x", &arr[k]), gpud_arg_array("y", &arr[k])};
		LIB_OK(c, gpud_call_async(c, "mul", a, 2, on_done, &mine[k], &jobs[k]));
	}
	/* The arguments were copied at submission: overwriting them changes nothing. */
	memset(v, 0, sizeof(v));
	for (int k = NJOBS - 1; k >= 0; k--) {
		ck_assert_int_eq(gpud_job_wait(jobs[k], -1), GPUD_OK);
		ck_assert(gpud_job_done(jobs[k]));
		gpud_result r;
		size_t n;
		gpud_run_info info;
		LIB_OK(c, gpud_job_results(jobs[k], &r, 1, &n, &info));
		ck_assert_uint_eq(n, 1);
		ck_assert_str_eq(r.name, "z");
		for (int i = 0; i < 16; i++) {
			double x = k * 100 + i;
			ck_assert_msg(((double *)r.array.data)[i] == x * x, "job %d [%d]", k, i);
		}
		gpud_array_free(&r.array);
		LIB_FAIL(c, gpud_job_results(jobs[k], &r, 1, &n, NULL), GPUD_EARG, "already taken");
		gpud_job_free(jobs[k]); /* waits for the callback to have returned */
		ck_assert_int_eq(mine[k], 1);
	}
	ck_assert_int_eq(callbacks, NJOBS);

	/* Run jobs: outputs stay in gpud until taken or freed with the job. */
	uint64_t n16 = 16;
	double w[16];
	for (int i = 0; i < 16; i++)
		w[i] = i - 7.5;
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n16, w, &h));
	gpud_arg a[] = {gpud_arg_buffer("x", h), gpud_arg_buffer("y", h)};
	gpud_job *j1, *j2;
	LIB_OK(c, gpud_run_async(c, "add", a, 2, NULL, NULL, &j1));
	LIB_OK(c, gpud_run_async(c, "add", a, 2, NULL, NULL, &j2));
	ck_assert_int_eq(gpud_job_wait(j1, -1), GPUD_OK);
	ck_assert_int_eq(gpud_job_wait(j2, -1), GPUD_OK);
	ck_assert_uint_eq(lib_status(c).buffers, 3);
	gpud_output o;
	size_t no;
	LIB_OK(c, gpud_job_outputs(j1, &o, 1, &no, NULL));
	double got[16];
	LIB_OK(c, gpud_download_range(c, o.handle, 0, got, sizeof(got)));
	for (int i = 0; i < 16; i++)
		ck_assert(got[i] == 2 * w[i]);
	gpud_job_free(j2); /* its output was not taken: freed in gpud */
	ck_assert_uint_eq(lib_status(c).buffers, 2);
	gpud_job_free(j1); /* taken: stays */
	ck_assert_uint_eq(lib_status(c).buffers, 2);
	gpud_handle both[] = {h, o.handle};
	LIB_OK(c, gpud_free(c, both, 2));
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

/* cap 0: the outputs gpud made are freed in the same request. */
START_TEST(test_cap_zero_leaves_nothing)
{
	gpud_client *c = lib_connect();
	uint64_t n = 8;
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	gpud_arg a[] = {gpud_arg_buffer("x", h), gpud_arg_buffer("y", h)};
	size_t no = 99;
	LIB_OK(c, gpud_run(c, "add", a, 2, NULL, 0, &no, NULL));
	ck_assert_uint_eq(no, 0);
	ck_assert_uint_eq(lib_status(c).buffers, 1);
	/* an output passed in stays the caller's either way */
	gpud_handle out;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, NULL, &out));
	gpud_arg b[] = {gpud_arg_buffer("x", h), gpud_arg_buffer("y", h),
			gpud_arg_buffer("z", out)};
	LIB_OK(c, gpud_run(c, "add", b, 3, NULL, 0, &no, NULL));
	ck_assert_uint_eq(lib_status(c).buffers, 2);
	double got[8];
	LIB_OK(c, gpud_download_range(c, out, 0, got, sizeof(got)));
	ck_assert(got[7] == 16);
	/* gpud_call with cap 0: nothing comes back, nothing stays */
	gpud_array arr = {.dtype = GPUD_F64, .ndim = 1, .data = v, .nbytes = sizeof(v)};
	arr.shape[0] = 8;
	gpud_arg ca[] = {gpud_arg_array("x", &arr), gpud_arg_array("y", &arr)};
	LIB_OK(c, gpud_call(c, "add", ca, 2, NULL, 0, &no, NULL));
	ck_assert_uint_eq(no, 0);
	ck_assert_uint_eq(lib_status(c).buffers, 2);
	gpud_handle both[] = {h, out};
	LIB_OK(c, gpud_free(c, both, 2));
	gpud_close(c);
}
END_TEST

/* A lombscargle of nx samples x nf frequencies: minutes of work on the cpu backend. */
#define LONG_NX 20000
#define LONG_NF 500000

static void long_inputs(gpud_client *c, gpud_handle *h)
{
	uint64_t nx = LONG_NX, nf = LONG_NF;
	double *x = malloc(LONG_NX * sizeof(double)), *f = malloc(LONG_NF * sizeof(double));
	ck_assert(x && f);
	for (int i = 0; i < LONG_NX; i++)
		x[i] = i * 0.01 + 0.001 * (i % 7);
	for (int i = 0; i < LONG_NF; i++)
		f[i] = 0.1 + i * 1e-4;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &nx, x, &h[0]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &nx, x, &h[1]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &nf, f, &h[2]));
	free(x);
	free(f);
}

/* Waits until gpud holds want buffers (and nothing runs); returns the last status. */
static gpud_daemon_status wait_buffers(gpud_client *c, uint64_t want)
{
	double deadline = harness_now_s() + 120;
	gpud_daemon_status s;
	do {
		s = lib_status(c);
		if (s.buffers == want && s.in_flight <= 1) /* the status request itself */
			return s;
		harness_sleep_ms(20);
	} while (harness_now_s() < deadline);
	return s;
}

/*
 * The cancelling cases need a run that lasts: on the cpu backend the long
 * lombscargle takes minutes (and stops between chunks when cancelled); on a
 * GPU it takes milliseconds, and a kernel cannot be stopped, so they say so
 * and pass there.
 */
static int needs_cpu(void)
{
	if (strcmp(expected_backend(), "cpu") == 0)
		return 1;
	fprintf(stderr, "client: cancelling a running run is checked on the cpu backend only\n");
	return 0;
}

/* A gpud of one run slot and two cpu threads, a client, the long run's inputs and arguments. */
static gpud_client *one_slot(gpud_handle *h, gpud_arg *a)
{
	gpud_teardown();
	start_gpud("[gpud]\ncpu_threads = 2\nrun_slots = 1\n", NULL, NULL);
	gpud_client *c = lib_connect();
	long_inputs(c, h);
	a[0] = gpud_arg_buffer("x", h[0]);
	a[1] = gpud_arg_buffer("y", h[1]);
	a[2] = gpud_arg_buffer("freqs", h[2]);
	return c;
}

/* Until n of the client's runs have reached the device's scheduler (holding
 * its slot or queued for it): being in gpud is not enough, a run's outputs
 * may still be made off the loop (a large cpu buffer, a cuda pool miss), and
 * jobs sent one after the other may arrive in either order. */
static unsigned want_runs;
static int enough_runs(const gpud_daemon_status *s)
{
	return s->server.ndevices > 0 && s->server.devices[0].runs >= want_runs;
}
static void wait_in_gpud(gpud_client *c, unsigned n)
{
	want_runs = n;
	gpud_daemon_status s = wait_status(c, enough_runs, 60);
	ck_assert_msg(s.server.ndevices > 0 && s.server.devices[0].runs >= n,
		      "gpud's device has %u runs placed, expected %u",
		      s.server.ndevices > 0 ? s.server.devices[0].runs : 0, n);
}

/* One slot: the first run runs, the second waits; both are cancelled. */
START_TEST(test_cancel_waiting_and_running)
{
	if (!needs_cpu())
		return;
	gpud_handle h[3];
	gpud_arg a[3];
	gpud_client *c = one_slot(h, a);
	gpud_job *first, *second;
	LIB_OK(c, gpud_run_async(c, "lombscargle", a, 3, NULL, NULL, &first));
	wait_in_gpud(c, 1); /* the first holds the slot before the second is sent */
	LIB_OK(c, gpud_run_async(c, "lombscargle", a, 3, NULL, NULL, &second));
	wait_in_gpud(c, 2);
	ck_assert_int_eq(gpud_job_wait(second, 50), GPUD_ETIMEDOUT); /* still going */
	ck_assert(!gpud_job_done(second));
	LIB_OK(c, gpud_job_cancel(second));
	ck_assert_int_eq(gpud_job_wait(second, -1), GPUD_ECANCELED);
	ck_assert_msg(strstr(gpud_job_errmsg(second), "cancelled") != NULL, "%s",
		      gpud_job_errmsg(second));
	LIB_OK(c, gpud_job_cancel(first));
	ck_assert_int_eq(gpud_job_wait(first, -1), GPUD_ECANCELED);
	ck_assert_msg(strstr(gpud_job_errmsg(first), "cancelled (by its client)") != NULL, "%s",
		      gpud_job_errmsg(first));
	gpud_output o;
	size_t no;
	LIB_FAIL(c, gpud_job_outputs(first, &o, 1, &no, NULL), GPUD_ECANCELED, "cancelled");
	gpud_job_free(first);
	gpud_job_free(second);
	/* Their outputs went with them: only the three inputs are left. */
	ck_assert_uint_eq(wait_buffers(c, 3).buffers, 3);
	char log[1 << 16];
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	ck_assert_msg(strstr(log, "CANCELLED: run lombscargle: cancelled (by its client) before it "
				  "started") != NULL &&
			      strstr(log,
				     "CANCELLED: run lombscargle: cancelled (by its client) while "
				     "it ran") != NULL,
		      "gpud's log does not show one run dropped and one stopped");
	LIB_OK(c, gpud_free(c, h, 3));
	gpud_close(c);
}
END_TEST

/*
 * A cancel sent right after its job (no wait between) may reach gpud first:
 * the two take different contexts. gpud keeps it and cancels the job when
 * it arrives; either way both jobs end cancelled, three times over (without
 * that, the first job of the first round already ran to its end).
 */
START_TEST(test_cancel_right_after_sending)
{
	if (!needs_cpu())
		return;
	gpud_handle h[3];
	gpud_arg a[3];
	gpud_client *c = one_slot(h, a);
	for (int rep = 0; rep < 3; rep++) {
		gpud_job *first, *second;
		LIB_OK(c, gpud_run_async(c, "lombscargle", a, 3, NULL, NULL, &first));
		LIB_OK(c, gpud_job_cancel(first));
		LIB_OK(c, gpud_run_async(c, "lombscargle", a, 3, NULL, NULL, &second));
		LIB_OK(c, gpud_job_cancel(second));
		ck_assert_int_eq(gpud_job_wait(first, -1), GPUD_ECANCELED);
		ck_assert_int_eq(gpud_job_wait(second, -1), GPUD_ECANCELED);
		ck_assert_msg(strstr(gpud_job_errmsg(second), "cancelled (by its client)"), "%s",
			      gpud_job_errmsg(second));
		gpud_job_free(first);
		gpud_job_free(second);
	}
	ck_assert_uint_eq(wait_buffers(c, 3).buffers, 3);
	LIB_OK(c, gpud_free(c, h, 3));
	gpud_close(c);
}
END_TEST

/* A call that times out is cancelled in gpud: its output goes, and the slot frees. */
START_TEST(test_timeout_cancels)
{
	if (!needs_cpu())
		return;
	gpud_handle h[3];
	gpud_arg a[3];
	gpud_client *c = one_slot(h, a);
	gpud_output o;
	size_t no;
	gpud_daemon_status before = lib_status(c);
	gpud_set_timeout(c, 200);
	LIB_FAIL(c, gpud_run(c, "lombscargle", a, 3, &o, 1, &no, NULL), GPUD_ETIMEDOUT,
		 "cancelled in gpud");
	gpud_set_timeout(c, 60000);
	gpud_daemon_status after = wait_buffers(c, 3);
	ck_assert_uint_eq(after.buffers, 3);
	/* status counts it: cancelled by its client, its connection still open */
	ck_assert_uint_eq(after.cancelled, before.cancelled + 1);
	ck_assert_uint_eq(after.cancelled_closed, before.cancelled_closed);
	/* The one slot is free again: a small run goes through. */
	uint64_t n = 4;
	double v[4] = {1, 2, 3, 4}, got[4];
	gpud_handle s;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &s));
	gpud_arg b[] = {gpud_arg_buffer("x", s), gpud_arg_buffer("y", s)};
	LIB_OK(c, gpud_run(c, "mul", b, 2, &o, 1, &no, NULL));
	LIB_OK(c, gpud_download_range(c, o.handle, 0, got, sizeof(got)));
	ck_assert(got[3] == 16);
	gpud_handle rest[] = {h[0], h[1], h[2], s, o.handle};
	LIB_OK(c, gpud_free(c, rest, 5));
	/* A job whose wait runs out keeps going; the client's own timeout ends it. */
	gpud_set_timeout(c, 200);
	gpud_job *j;
	long_inputs(c, h);
	gpud_arg d[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			gpud_arg_buffer("freqs", h[2])};
	LIB_OK(c, gpud_run_async(c, "lombscargle", d, 3, NULL, NULL, &j));
	ck_assert_int_eq(gpud_job_wait(j, -1), GPUD_ETIMEDOUT);
	ck_assert(gpud_job_done(j));
	gpud_job_free(j);
	gpud_set_timeout(c, 60000);
	ck_assert_uint_eq(wait_buffers(c, 3).buffers, 3);
	LIB_OK(c, gpud_free(c, h, 3));
	gpud_close(c);
}
END_TEST

/* A client that goes away: its waiting and running runs are cancelled. */
START_TEST(test_close_cancels)
{
	if (!needs_cpu())
		return;
	gpud_handle h[3];
	gpud_arg a[3];
	gpud_client *c = one_slot(h, a), *watch = lib_connect();
	gpud_job *j[2];
	LIB_OK(c, gpud_run_async(c, "lombscargle", a, 3, NULL, NULL, &j[0]));
	LIB_OK(c, gpud_run_async(c, "lombscargle", a, 3, NULL, NULL, &j[1]));
	ck_assert_int_eq(gpud_job_wait(j[1], 50), GPUD_ETIMEDOUT);
	gpud_close(c); /* the jobs end with the connection */
	ck_assert(gpud_job_done(j[0]) && gpud_job_done(j[1]));
	ck_assert_int_ne(gpud_job_wait(j[0], 0), GPUD_OK);
	gpud_job_free(j[0]); /* after their client: they touch nothing of it */
	gpud_job_free(j[1]);
	ck_assert_uint_eq(wait_buffers(watch, 0).buffers, 0);
	char log[1 << 16];
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	ck_assert_msg(strstr(log, "cancelled (its connection closed)") != NULL,
		      "gpud's log does not show the runs cancelled");
	gpud_close(watch);
}
END_TEST

void client_jobs_tests(TCase *tc)
{
	tcase_add_test(tc, test_jobs_in_flight);
	tcase_add_test(tc, test_cap_zero_leaves_nothing);
	tcase_add_test(tc, test_cancel_waiting_and_running);
	tcase_add_test(tc, test_cancel_right_after_sending);
	tcase_add_test(tc, test_timeout_cancels);
	tcase_add_test(tc, test_close_cancels);
}
