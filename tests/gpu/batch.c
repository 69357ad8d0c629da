/*
 * tests/gpu/batch.c — test case "dynamic batching" on the GPU: eight
 * clients (their own connections, so their own streams) each send one small
 * lombscargle series of its own length, some with weights, into poisoned
 * output buffers of their own; batch_max = 8 and a minute's delay, so the
 * eighth run launches the batch (lombscargle_batch: ls_many_launch) and
 * every client's answer comes well within the minute. Each result is
 * compared with the CPU reference (ls_many_cpu); one series with a negative
 * weight fails its own request alone. Both dtypes. Runs on main's thread.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpud/client.h>

#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/many.h"
#include "tests/gpu/gpu_test.h"
#include "tests/gpu/suite.h"

enum { CLIENTS = 8, M = 200, BAD = 5 };
#define F0 0.5
#define DF 0.02

typedef struct member {
	gpud_client *c;
	size_t n;
	void *x, *y, *w; /* w: NULL for none */
	gpud_handle hx, hy, hw, out;
	gpud_job *job;
} member;

static void send_one(member *m, gpud_dtype dt, int i)
{
	uint64_t n;
	ck_assert_int_eq(connect_timeout(&m->c), GPUD_OK);
	m->n = 8 + (size_t)(rnd() % 300);
	n = m->n;
	m->x = make_array(dt, m->n, 0, 30, 1);
	m->y = make_array(dt, m->n, -3, 3, 0);
	m->w = i % 2 ? make_array(dt, m->n, 0.1, 2, 0) : NULL;
	if (i == BAD) { /* a negative weight: this request alone fails */
		if (dt == GPUD_F64)
			((double *)m->w)[m->n / 2] = -1;
		else
			((float *)m->w)[m->n / 2] = -1;
	}
	ck_assert_int_eq(gpud_alloc(m->c, dt, 1, &n, m->x, &m->hx), GPUD_OK);
	ck_assert_int_eq(gpud_alloc(m->c, dt, 1, &n, m->y, &m->hy), GPUD_OK);
	m->out = poisoned(m->c, dt, M);
	gpud_arg a[9];
	size_t na = 0;
	a[na++] = gpud_arg_buffer("x", m->hx);
	a[na++] = gpud_arg_buffer("y", m->hy);
	if (m->w) {
		ck_assert_int_eq(gpud_alloc(m->c, dt, 1, &n, m->w, &m->hw), GPUD_OK);
		a[na++] = gpud_arg_buffer("weights", m->hw);
	}
	a[na++] = gpud_arg_buffer("pgram", m->out);
	a[na++] = gpud_arg_f64("f0", F0);
	a[na++] = gpud_arg_f64("df", DF);
	a[na++] = gpud_arg_i64("nf", M);
	a[na++] = gpud_arg_bool("precenter", 1);
	ck_assert_msg(gpud_run_async(m->c, "lombscargle", a, na, NULL, NULL, &m->job) == GPUD_OK,
		      "%s", gpud_errmsg(m->c));
}

static void batch_of(gpud_dtype dt)
{
	member ms[CLIENTS];
	size_t es = gpud_dtype_size(dt);
	const double tol = dt == GPUD_F64 ? 1e-8 : 2e-3;
	memset(ms, 0, sizeof(ms));
	for (int i = 0; i < CLIENTS; i++)
		send_one(&ms[i], dt, i);
	for (int i = 0; i < CLIENTS; i++) {
		member *m = &ms[i];
		/* the eighth launched the batch: nobody waits for the minute */
		gpud_status st = gpud_job_wait(m->job, 30000);
		if (i == BAD) {
			ck_assert_msg(st == GPUD_EINVAL, "bad weights: %s: %s", gpud_strerror(st),
				      gpud_job_errmsg(m->job));
			ck_assert_msg(strstr(gpud_job_errmsg(m->job), "weight") != NULL, "%s",
				      gpud_job_errmsg(m->job));
		} else {
			ck_assert_msg(st == GPUD_OK, "client %d: %s: %s", i, gpud_strerror(st),
				      gpud_job_errmsg(m->job));
			void *got = malloc(M * es), *ref = malloc(M * es);
			ck_assert_int_eq(gpud_download_range(m->c, m->out, 0, got, M * es),
					 GPUD_OK);
			ls_many p = {.dtype = dt, .precenter = 1, .f0 = F0, .df = DF, .m = M};
			ls_series s = {
				.x = m->x, .y = m->y, .w = m->w, .out = ref, .n = (long long)m->n};
			unsigned v = 0;
			ls_many_cpu(&p, &s, 0, 1, &v);
			ck_assert_uint_eq(v, 0);
			double maxref = 0, worst = 0;
			for (size_t k = 0; k < M; k++)
				if (fabs(get(dt, ref, k)) > maxref)
					maxref = fabs(get(dt, ref, k));
			for (size_t k = 0; k < M; k++) {
				ck_assert_msg(!is_poison(dt, got, k),
					      "client %d: output %zu unwritten", i, k);
				double e = fabs(get(dt, got, k) - get(dt, ref, k)) /
					   (maxref > 0 ? maxref : 1);
				if (e > worst)
					worst = e;
			}
			ck_assert_msg(worst <= tol, "client %d (n=%zu): error %.3e of its max", i,
				      m->n, worst);
			free(got);
			free(ref);
		}
		gpud_job_free(m->job);
		gpud_close(m->c);
		free(m->x);
		free(m->y);
		free(m->w);
	}
	printf("dynamic batching %s: %d clients, one launch, each its own result\n",
	       gpud_dtype_name(dt), CLIENTS);
}

START_TEST(batched_runs_match_the_reference)
{
	start_gpud_with("[gpud]\nbatch_delay_us = 60000000\nbatch_max = 8\n");
	batch_of(GPUD_F64);
	batch_of(GPUD_F32);
	stop_gpud();
}
END_TEST

TCase *batch_tcase(void)
{
	TCase *tc = tcase_create("dynamic batching");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, batched_runs_match_the_reference);
	return tc;
}
