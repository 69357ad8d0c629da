/*
 * tests/e2e/drain.c — test cases "drain" (SIGTERM under load) and
 * "drain_grace" (what a draining gpud serves: daemon/drain.c's rule).
 *
 * Under load: eight clients call in a loop (upload, run, download, free; six
 * through the request ring, two through the socket) and keep calling after
 * SIGTERM. Each sees only successes, then GPUD_ESHUTDOWN, then (gpud gone) a
 * failed connect; never a call cut in flight (GPUD_ETRANSPORT). gpud exits 0
 * by itself with shutdown_timeout at a minute: the drain ended on its own.
 *
 * After the grace, while a run is still in flight: a connected client's
 * upload gets SHUTTING_DOWN, its status and free are served, a new client is
 * refused at hello (gpuctl exits 79); the run completes and replies, and the
 * next call of its client gets GPUD_ESHUTDOWN.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/e2e/e2e.h"

#define LOADERS 8
#define LOADERS_RING 6 /* the others take the socket */
#define N 4096         /* doubles per array: 32 KiB, within the ring's area */

typedef struct loader {
	int id;
	gpud_client *c;
	gpud_handle x, y;
	double *xv, *yv, *zv;
	atomic_int rounds;  /* rounds of upload, run, download, free done */
	int told;           /* calls that got GPUD_ESHUTDOWN */
	gpud_status end;    /* the failed connect that ended it */
	gpud_status bad;    /* a status out of order (GPUD_OK: none) */
	char bad_call[32];  /* and the call that got it */
	char bad_msg[1024]; /* and its message */
	long wrong;         /* a downloaded element that is not x + y, or -1 */
} loader;

/* After GPUD_ESHUTDOWN: gpud gone (its socket refused or removed). */
static int gone(gpud_status st)
{
	return st == GPUD_ECONNECT || st == GPUD_EUNAVAILABLE;
}

/* Records an unexpected status of call and stops the loader (returns 0). */
static int unexpected(loader *l, const char *call, gpud_status st)
{
	l->bad = st == GPUD_OK ? GPUD_EINTERNAL : st;
	snprintf(l->bad_call, sizeof(l->bad_call), "%s", call);
	snprintf(l->bad_msg, sizeof(l->bad_msg), "%s: %s", gpud_strerror(st),
		 st == GPUD_OK ? "served after gpud said it is shutting down" : gpud_errmsg(l->c));
	return 0;
}

/*
 * One call's status while serving: 1 to go on, 0 to stop (told, gone, or
 * out of order). Successes, then GPUD_ESHUTDOWN (or a failed connect, when
 * this client sent nothing between the signal and gpud's exit).
 */
static int serving(loader *l, const char *call, gpud_status st)
{
	if (st == GPUD_OK)
		return 1;
	if (st == GPUD_ESHUTDOWN) {
		l->told++;
		return 0;
	}
	if (gone(st)) {
		l->end = st;
		return 0;
	}
	return unexpected(l, call, st);
}

static void *loader_thread(void *arg)
{
	loader *l = arg;
	gpud_status st;
	for (int k = 0;; k++) {
		for (size_t i = 0; i < N; i++) /* integers: the sums are exact */
			l->xv[i] = (double)(l->id * 1000000 + k * 10 + (int)(i % 7));
		if (!serving(l, "upload", gpud_upload(l->c, l->x, 0, l->xv, N * sizeof(double))))
			break;
		gpud_arg a[] = {gpud_arg_buffer("x", l->x), gpud_arg_buffer("y", l->y)};
		gpud_output o;
		size_t no = 0;
		if (!serving(l, "run", gpud_run(l->c, "add", a, 2, &o, 1, &no, NULL)))
			break;
		st = gpud_download_range(l->c, o.handle, 0, l->zv, N * sizeof(double));
		if (st == GPUD_OK)
			for (size_t i = 0; i < N && l->wrong < 0; i++)
				if (l->zv[i] != l->xv[i] + l->yv[i])
					l->wrong = (long)i;
		if (!serving(l, "download", st) || l->wrong >= 0)
			break;
		/* free is served while draining: it only gives back */
		if (!serving(l, "free", gpud_free(l->c, &o.handle, 1)))
			break;
		atomic_fetch_add(&l->rounds, 1);
	}
	if (l->bad != GPUD_OK || l->wrong >= 0 || l->end != GPUD_OK)
		return NULL;
	/* Told: it keeps calling, and is told again until gpud has gone. */
	for (;;) {
		st = gpud_upload(l->c, l->x, 0, l->xv, N * sizeof(double));
		if (st == GPUD_ESHUTDOWN) {
			l->told++;
			harness_sleep_ms(5); /* pace: the log records every refusal */
			continue;
		}
		if (gone(st))
			l->end = st;
		else
			unexpected(l, "upload after GPUD_ESHUTDOWN", st);
		return NULL;
	}
}

/* shutdown_timeout a minute: an exit 0 proves the drain ended on its own,
 * not by it. The grace is wide: a client starved of the cores for all of it
 * would only be told by a refused call, with no draining reply before. */
static void setup_drain(void)
{
	start_gpud("[gpud]\nshutdown_timeout = 60\ndrain_grace = 5\n", NULL, NULL);
}

/* The default grace, 2 s. */
static void setup_grace(void)
{
	start_gpud("[gpud]\nshutdown_timeout = 60\n", NULL, NULL);
}

START_TEST(test_sigterm_under_load)
{
	loader l[LOADERS];
	pthread_t t[LOADERS];
	gpud_options o = {.url = e2e_gpud.url, .connect_timeout_ms = 3000};
	uint64_t shape = N;

	memset(l, 0, sizeof(l));
	for (int i = 0; i < LOADERS; i++) {
		loader *p = &l[i];
		p->id = i;
		p->wrong = -1;
		p->xv = calloc(N, sizeof(double));
		p->yv = calloc(N, sizeof(double));
		p->zv = calloc(N, sizeof(double));
		ck_assert(p->xv && p->yv && p->zv);
		for (size_t j = 0; j < N; j++)
			p->yv[j] = 0.5 * (double)j;
		gpud_status st = gpud_connect_opts(&o, &p->c);
		ck_assert_msg(st == GPUD_OK, "connect: %s", gpud_errmsg(p->c));
		if (i >= LOADERS_RING)
			gpud_set_ring(p->c, 0);
		LIB_OK(p->c, gpud_alloc(p->c, GPUD_F64, 1, &shape, NULL, &p->x));
		LIB_OK(p->c, gpud_alloc(p->c, GPUD_F64, 1, &shape, p->yv, &p->y));
	}
	for (int i = 0; i < LOADERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, loader_thread, &l[i]), 0);

	/* SIGTERM once every client is calling in its loop */
	double deadline = harness_now_s() + E2E_SAFETY_S;
	int calling = 0;
	while (!calling && harness_now_s() < deadline) {
		calling = 1;
		for (int i = 0; i < LOADERS; i++)
			calling &= atomic_load(&l[i].rounds) >= 3 || l[i].bad != GPUD_OK;
		if (!calling)
			harness_sleep_ms(5);
	}
	ck_assert_msg(calling, "the clients were not all calling within %.0f s", E2E_SAFETY_S);
	ck_assert_int_eq(kill(e2e_gpud.pid, SIGTERM), 0);
	for (int i = 0; i < LOADERS; i++)
		pthread_join(t[i], NULL);

	char how[128];
	ck_assert_msg(harness_gpud_wait(&e2e_gpud, E2E_SAFETY_S) == 0,
		      "gpud still running %.0f s after SIGTERM", E2E_SAFETY_S);
	int ws = e2e_gpud.wstatus;
	harness_describe_wait(ws, how, sizeof(how));
	if (!(WIFEXITED(ws) && WEXITSTATUS(ws) == 0))
		harness_dump_file("gpud log", e2e_gpud.log);
	ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
		      "gpud %s after SIGTERM under load, expected exit status 0 (log above)", how);

	int told = 0;
	for (int i = 0; i < LOADERS; i++) {
		loader *p = &l[i];
		printf("drain: client %d (%s): %d rounds, told %d times, then %s\n", i,
		       i < LOADERS_RING ? "ring" : "socket", atomic_load(&p->rounds), p->told,
		       gpud_strerror(p->end));
		ck_assert_msg(p->bad == GPUD_OK, "client %d: %s: %s", i, p->bad_call, p->bad_msg);
		ck_assert_msg(p->wrong < 0, "client %d: z[%ld] = %g, expected %g", i, p->wrong,
			      p->zv[p->wrong], p->xv[p->wrong] + p->yv[p->wrong]);
		ck_assert_msg(gone(p->end), "client %d did not end on a failed connect: %s", i,
			      gpud_strerror(p->end));
		if (i < LOADERS_RING)
			ck_assert_msg(gpud_ring_calls(p->c) > 0, "client %d never used the ring",
				      i);
		else
			ck_assert_uint_eq(gpud_ring_calls(p->c), 0);
		told += p->told > 0;
		gpud_close(p->c);
		free(p->xv);
		free(p->yv);
		free(p->zv);
	}
	fflush(stdout);
	ck_assert_msg(told > 0, "no client was told GPUD_ESHUTDOWN");
}
END_TEST

/* --- after the grace, while a run is in flight -------------------------------------------- */

typedef struct long_run {
	gpud_client *c;
	gpud_handle h[3];
	atomic_int state; /* 1: sent, 2: returned */
	gpud_status st;
	gpud_output out;
	size_t nout;
	char msg[1024];
} long_run;

static int lr_direct; /* the long run names method=direct (a GPU's) */

static void *long_run_thread(void *arg)
{
	long_run *lr = arg;
	gpud_arg args[5] = {gpud_arg_buffer("x", lr->h[0]), gpud_arg_buffer("y", lr->h[1]),
			    gpud_arg_buffer("freqs", lr->h[2]), gpud_arg_bool("precenter", 1),
			    gpud_arg_text("method", "direct")};
	atomic_store(&lr->state, 1);
	lr->st = gpud_run(lr->c, "lombscargle", args, lr_direct ? 5 : 4, &lr->out, 1, &lr->nout,
			  NULL);
	snprintf(lr->msg, sizeof(lr->msg), "%s", gpud_errmsg(lr->c));
	atomic_store(&lr->state, 2);
	return NULL;
}

static int two_in_flight(const gpud_daemon_status *s)
{
	return s->in_flight >= 2; /* the long run and this status */
}

/* Waits until gpud's log has line (a safety net, not a timing); 1 if it came. */
static int wait_log(const char *line)
{
	static char log[1 << 20];
	double deadline = harness_now_s() + E2E_SAFETY_S;
	while (harness_now_s() < deadline) {
		if (harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0 && strstr(log, line))
			return 1;
		harness_sleep_ms(10);
	}
	return 0;
}

START_TEST(test_served_and_refused_after_the_grace)
{
	gpud_client *c = lib_connect();
	int cpu = !strcmp(gpud_server(c)->backend, "cpu");
	/* Seconds on 2 cpu cores (as the shutdown case); the grace is 2 s of them.
	 * On a GPU the direct kernel (method=direct: auto would take the NUFFT)
	 * over 800,000 samples and 4M frequencies: about 6 s on an H200. */
	size_t nx = cpu ? 2000 : 800000, nf = cpu ? (size_t)1 << 17 : (size_t)1 << 22;
	lr_direct = !cpu;
	double *x = malloc(nx * sizeof(double)), *y = malloc(nx * sizeof(double)),
	       *f = malloc(nf * sizeof(double));
	uint64_t sx = nx, sf = nf, one = 1;
	long_run lr;
	pthread_t t;
	gpud_handle spare;

	ck_assert(x && y && f);
	memset(&lr, 0, sizeof(lr));
	gen_ls(4242, nx, nf, x, y, f);
	lr.c = lib_connect();
	LIB_OK(lr.c, gpud_alloc(lr.c, GPUD_F64, 1, &sx, x, &lr.h[0]));
	LIB_OK(lr.c, gpud_alloc(lr.c, GPUD_F64, 1, &sx, y, &lr.h[1]));
	LIB_OK(lr.c, gpud_alloc(lr.c, GPUD_F64, 1, &sf, f, &lr.h[2]));
	double v = 1.5;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &one, &v, &spare));
	ck_assert_int_eq(pthread_create(&t, NULL, long_run_thread, &lr), 0);
	gpud_daemon_status s = wait_status(c, two_in_flight, E2E_SAFETY_S);
	ck_assert_msg(s.in_flight >= 2, "the run never showed in flight");

	ck_assert_int_eq(kill(e2e_gpud.pid, SIGTERM), 0);
	ck_assert_msg(wait_log("shutdown: the grace for jobs in progress is over"),
		      "gpud never said its grace was over");
	ck_assert_msg(atomic_load(&lr.state) == 1,
		      "the run ended within the grace; make it longer");

	/* new work is refused, saying why; status and free are served */
	LIB_FAIL(c, gpud_upload(c, spare, 0, &v, sizeof(v)), GPUD_ESHUTDOWN,
		 "gpud is shutting down and takes no new work");
	LIB_FAIL(c, gpud_sync(c), GPUD_ESHUTDOWN, "shutting down");
	s = lib_status(c);
	ck_assert_uint_ge(s.in_flight, 2);
	LIB_OK(c, gpud_free(c, &spare, 1));
	/* a new client is told at hello */
	gpud_client *late;
	gpud_status lst = gpud_connect(e2e_gpud.url, &late);
	ck_assert_msg(lst == GPUD_ESHUTDOWN && strstr(gpud_errmsg(late), "no new sessions"),
		      "connect while draining: %s: %s", gpud_strerror(lst), gpud_errmsg(late));
	gpud_close(late);
	/* gpuctl: exit 79, gpud's words */
	ctl_result *r = CTL("ls");
	ck_assert_msg(r->code == 79 && strstr(r->err, "gpud is shutting down"),
		      "gpuctl ls while draining: exit %d, stderr: %s", r->code, r->err);
	/* all of that while the run was in flight */
	ck_assert_msg(atomic_load(&lr.state) == 1,
		      "the run ended before the checks were done; make it longer");

	/* the run in flight completes and replies; its client's next call is refused */
	pthread_join(t, NULL);
	ck_assert_msg(lr.st == GPUD_OK, "the run in flight: %s: %s", gpud_strerror(lr.st), lr.msg);
	ck_assert_uint_eq(lr.nout, 1);
	ck_assert_str_eq(lr.out.name, "pgram");
	ck_assert_uint_eq(lr.out.shape[0], nf);
	LIB_FAIL(lr.c, gpud_download_range(lr.c, lr.out.handle, 0, f, nf * sizeof(double)),
		 GPUD_ESHUTDOWN, "shutting down");

	ck_assert_msg(harness_gpud_wait(&e2e_gpud, E2E_SAFETY_S) == 0,
		      "gpud still running after the run's reply");
	int ws = e2e_gpud.wstatus;
	if (!(WIFEXITED(ws) && WEXITSTATUS(ws) == 0))
		harness_dump_file("gpud log", e2e_gpud.log);
	ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "gpud exit status 0x%x", ws);
	gpud_close(c);
	gpud_close(lr.c);
	free(x);
	free(y);
	free(f);
}
END_TEST

TCase *e2e_drain(void)
{
	TCase *tc = tcase_create("drain");
	tcase_add_checked_fixture(tc, setup_drain, gpud_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_sigterm_under_load);
	return tc;
}

TCase *e2e_drain_grace(void)
{
	TCase *tc = tcase_create("drain_grace");
	tcase_add_checked_fixture(tc, setup_grace, gpud_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_served_and_refused_after_the_grace);
	return tc;
}
