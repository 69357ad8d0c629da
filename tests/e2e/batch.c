/*
 * tests/e2e/batch.c — dynamic batching (batch_delay_us, batch_max): small
 * single-series lombscargle runs of several clients, two tenants among
 * them, run as one launch, each client getting its own result (checked
 * against the CPU reference); a series with bad weights fails alone; a run
 * cancelled, or whose client closes, while its group waits leaves it; a
 * stopping gpud runs the waiting group. Nothing here depends on timing: the
 * delay is a minute, and a group launches when its batch_max-th run comes
 * (or gpud stops); the tests wait on /metrics' gpud_batch_pending_runs.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/e2e/e2e.h"

#define NX 61
#define NF 40
#define F0 0.3
#define DF 0.05

static void setup_batch(void)
{
	/* kernel_workers = 0: on cuda too, both tenants' runs batch together */
	start_tenants("metrics_listen = 127.0.0.1:0\nbatch_delay_us = 60000000\n"
		      "batch_max = 4\nshutdown_timeout = 600\nkernel_workers = 0\n",
		      NULL, NULL, NULL);
	e2e_find_metrics_addr();
}

static double metric(const char *series)
{
	static char page[1 << 18];
	ck_assert_int_eq(e2e_http_get("/metrics", page, sizeof(page)), 200);
	return e2e_sample(page, series);
}

/* Waits until the sample reads want (a safety net, not a timing). */
static void wait_metric(const char *series, double want)
{
	double t0 = harness_now_s(), v = -1;
	while (harness_now_s() - t0 < E2E_SAFETY_S && (v = metric(series)) != want)
		harness_sleep_ms(10);
	ck_assert_msg(v == want, "%s: %g, expected %g", series, v, want);
}

/* One client's run: fresh random series, its own seed. */
typedef struct one_run {
	gpud_client *c;
	double x[NX], y[NX], w[NX], f[NF];
	int weights; /* 0 none, 1 good, -1 one negative */
	gpud_array ax, ay;
	gpud_handle h;
	gpud_job *job;
} one_run;

static void run_start(one_run *o, gpud_client *c, uint64_t seed, int weights)
{
	uint64_t n = NX;
	double fdummy[NF];
	o->c = c;
	o->weights = weights;
	gen_ls(seed, NX, NF, o->x, o->y, fdummy);
	for (int i = 0; i < NF; i++)
		o->f[i] = F0 + DF * i;
	for (int i = 0; i < NX; i++)
		o->w[i] = 0.5 + (double)((seed * 7919 + (uint64_t)i * 104729) % 1000) / 1000.0;
	if (weights < 0)
		o->w[NX / 2] = -1.0;
	/* x and y travel with the request (gpud uploads them), weights in a buffer */
	o->ax = (gpud_array){
		.dtype = GPUD_F64, .ndim = 1, .shape = {NX}, .data = o->x, .nbytes = sizeof(o->x)};
	o->ay = o->ax;
	o->ay.data = o->y;
	gpud_arg a[8];
	size_t na = 0;
	a[na++] = gpud_arg_array("x", &o->ax);
	a[na++] = gpud_arg_array("y", &o->ay);
	if (weights) {
		LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, o->w, &o->h));
		a[na++] = gpud_arg_buffer("weights", o->h);
	}
	a[na++] = gpud_arg_f64("f0", F0);
	a[na++] = gpud_arg_f64("df", DF);
	a[na++] = gpud_arg_i64("nf", NF);
	a[na++] = gpud_arg_bool("precenter", 1);
	LIB_OK(c, gpud_call_async(c, "lombscargle", a, na, NULL, NULL, &o->job));
}

/* The run ended well, its result (returned in the reply) the CPU reference's. */
static void run_check(one_run *o, const char *what)
{
	gpud_result out;
	size_t nout = 0;
	double re[NF];
	ls_opts opt = {.w = o->weights ? o->w : NULL, .precenter = 1};
	ck_assert_msg(gpud_job_wait(o->job, -1) == GPUD_OK, "%s: %s", what,
		      gpud_job_errmsg(o->job));
	LIB_OK(o->c, gpud_job_results(o->job, &out, 1, &nout, NULL));
	ck_assert_int_eq(nout, 1);
	ck_assert_int_eq(out.array.nbytes, NF * sizeof(double));
	ls_ref_full(o->x, o->y, NX, o->f, NF, &opt, re, NULL);
	assert_matches(out.array.data, GPUD_F64, re, NF, what);
	gpud_array_free(&out.array);
	gpud_job_free(o->job);
	o->job = NULL;
}

/* Four clients (two tenants, separate connections) each send one run: one
 * launch of four, each client its own result. */
START_TEST(test_batch_four_clients)
{
	gpud_client *c[4] = {connect_token(TOKEN_ALICE), connect_token(TOKEN_BOB),
			     connect_token(TOKEN_ALICE), connect_token(TOKEN_BOB)};
	static one_run r[4];
	for (int i = 0; i < 4; i++) {
		run_start(&r[i], c[i], 9100 + (uint64_t)i * 31 + (uint64_t)harness_now_s(), i % 2);
		if (i < 3) /* the group holds them until the fourth */
			wait_metric("gpud_batch_pending_runs", i + 1);
	}
	for (int i = 0; i < 4; i++)
		run_check(&r[i], "a batched run");
	ck_assert(metric("gpud_batches_total") == 1);
	ck_assert(metric("gpud_batched_runs_total") == 4);
	ck_assert(metric("gpud_batch_size_bucket{le=\"2\"}") == 0);
	ck_assert(metric("gpud_batch_size_bucket{le=\"4\"}") == 1);
	ck_assert(metric("gpud_batch_pending_runs") == 0);
	for (int i = 0; i < 4; i++)
		gpud_close(c[i]);
}
END_TEST

/* A series with a negative weight fails its own request only, with
 * lombscargle's message; the other three get their results. */
START_TEST(test_batch_bad_weights_fail_alone)
{
	gpud_client *c[4] = {connect_token(TOKEN_ALICE), connect_token(TOKEN_BOB),
			     connect_token(TOKEN_ALICE), connect_token(TOKEN_BOB)};
	static one_run r[4];
	for (int i = 0; i < 4; i++) {
		run_start(&r[i], c[i], 7300 + (uint64_t)i * 17 + (uint64_t)harness_now_s(),
			  i == 2 ? -1 : 1);
		if (i < 3)
			wait_metric("gpud_batch_pending_runs", i + 1);
	}
	gpud_status st = gpud_job_wait(r[2].job, -1);
	ck_assert_msg(st == GPUD_EINVAL, "bad weights: %s: %s", gpud_strerror(st),
		      gpud_job_errmsg(r[2].job));
	ck_assert_msg(strstr(gpud_job_errmsg(r[2].job), "weight") != NULL,
		      "bad weights' message: %s", gpud_job_errmsg(r[2].job));
	gpud_job_free(r[2].job);
	for (int i = 0; i < 4; i++)
		if (i != 2)
			run_check(&r[i], "a batched run beside bad weights");
	ck_assert(metric("gpud_batches_total") == 1);
	ck_assert(metric("gpud_batched_runs_total") == 4);
	for (int i = 0; i < 4; i++)
		gpud_close(c[i]);
}
END_TEST

/* A run cancelled while its group waits leaves it (CANCELLED); a client
 * closing while its run waits takes it out too; the group then launches
 * with the four that stayed. */
START_TEST(test_batch_cancel_and_close_while_waiting)
{
	gpud_client *c[6];
	static one_run r[6];
	for (int i = 0; i < 6; i++)
		c[i] = connect_token(i % 2 ? TOKEN_BOB : TOKEN_ALICE);
	uint64_t seed = 5100 + (uint64_t)harness_now_s();
	run_start(&r[0], c[0], seed, 0);
	run_start(&r[1], c[1], seed + 1, 1);
	wait_metric("gpud_batch_pending_runs", 2);
	LIB_OK(c[0], gpud_job_cancel(r[0].job));
	gpud_status st = gpud_job_wait(r[0].job, -1);
	ck_assert_msg(st == GPUD_ECANCELED, "cancelled while waiting: %s: %s", gpud_strerror(st),
		      gpud_job_errmsg(r[0].job));
	gpud_job_free(r[0].job);
	wait_metric("gpud_batch_pending_runs", 1);
	gpud_close(c[1]); /* its run waits: the connection's close cancels it */
	c[1] = NULL;
	wait_metric("gpud_batch_pending_runs", 0);
	for (int i = 2; i < 6; i++) {
		run_start(&r[i], c[i], seed + (uint64_t)i * 13, i % 2);
		if (i < 5)
			wait_metric("gpud_batch_pending_runs", i - 1);
	}
	for (int i = 2; i < 6; i++)
		run_check(&r[i], "a run of the group after a cancel and a close");
	ck_assert(metric("gpud_batches_total") == 1);
	ck_assert(metric("gpud_batched_runs_total") == 4);
	gpud_close(c[0]);
	for (int i = 2; i < 6; i++)
		gpud_close(c[i]);
}
END_TEST

/* A run that cannot join (a freqs array) goes alone at once, the group
 * untouched. */
START_TEST(test_batch_ineligible_runs_alone)
{
	gpud_client *c = connect_token(TOKEN_ALICE);
	double x[NX], y[NX], f[NF], got[NF], ref[NF];
	ls_result res;
	gen_ls(4400 + (uint64_t)harness_now_s(), NX, NF, x, y, f);
	ls_lib_run(c, GPUD_F64, x, y, NX, f, NF, 1, 0, 0, got, &res);
	ck_assert_msg(res.st == GPUD_OK, "%s", res.msg);
	ls_ref(x, y, NX, f, NF, 1, 0, ref);
	assert_matches(got, GPUD_F64, ref, NF, "a run with freqs beside batching");
	ck_assert(metric("gpud_batches_total") == 0);
	ck_assert(metric("gpud_batch_pending_runs") == 0);
	gpud_close(c);
}
END_TEST

/* gpud stopping (SIGTERM) launches the waiting group: its run completes. */
START_TEST(test_batch_waiting_group_runs_at_stop)
{
	gpud_client *c = connect_token(TOKEN_ALICE);
	static one_run r;
	run_start(&r, c, 6600 + (uint64_t)harness_now_s(), 1);
	wait_metric("gpud_batch_pending_runs", 1);
	ck_assert_int_eq(kill(e2e_gpud.pid, SIGTERM), 0);
	run_check(&r, "a waiting run when gpud stops");
	gpud_close(c);
}
END_TEST

TCase *e2e_batch(void)
{
	TCase *tc = tcase_create("batch");
	tcase_add_checked_fixture(tc, setup_batch, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_batch_four_clients);
	tcase_add_test(tc, test_batch_bad_weights_fail_alone);
	tcase_add_test(tc, test_batch_cancel_and_close_while_waiting);
	tcase_add_test(tc, test_batch_ineligible_runs_alone);
	tcase_add_test(tc, test_batch_waiting_group_runs_at_stop);
	return tc;
}
