/*
 * tests/e2e/faults.c — test case "faults": a client killed in the middle of
 * an upload, a run or with a host region mapped; everything it had goes back
 * and gpud serves on.
 */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

/* This program as a client that is killed (see main): prints "ready" just
 * before its blocking call. kind: upload (a big upload through messages),
 * run (a slow one-trip run), region (host memory mapped, then a run). */
int doomed_main(const char *u, const char *kind)
{
	gpud_client *c;
	if (!strcmp(kind, "upload"))
		setenv("GPUD_NO_SHM", "1", 1);
	if (gpud_connect(u, &c) != GPUD_OK) {
		printf("connect: %s\n", gpud_errmsg(c));
		return 1;
	}
	uint64_t n = 24u << 20; /* 24 Mi doubles: 192 MiB */
	gpud_handle h;
	if (!strcmp(kind, "upload")) {
		double *v = calloc(n, sizeof(double));
		if (v == NULL || gpud_alloc(c, GPUD_F64, 1, &n, NULL, &h) != GPUD_OK)
			return 1;
		printf("ready\n");
		fflush(stdout);
		gpud_upload(c, h, 0, v, n * sizeof(double));
		for (;;)
			pause();
	}
	const size_t nx = 4000, nf = 200000;
	float *x = gpud_host_alloc(c, nx * 4), *y = malloc(nx * 4), *f = malloc(nf * 4);
	if (x == NULL && !strcmp(kind, "region")) {
		printf("host alloc: %s\n", gpud_errmsg(c));
		return 1;
	}
	if (x == NULL)
		x = malloc(nx * 4);
	for (size_t i = 0; i < nx; i++) {
		x[i] = (float)i * 0.01f;
		y[i] = (float)(i % 5) - 2.0f + 0.25f;
	}
	for (size_t i = 0; i < nf; i++)
		f[i] = 0.01f + (float)i * 1e-5f;
	gpud_array ax = {.dtype = GPUD_F32, .ndim = 1, .shape = {nx}, .data = x, .nbytes = nx * 4},
		   ay = {.dtype = GPUD_F32, .ndim = 1, .shape = {nx}, .data = y, .nbytes = nx * 4},
		   af = {.dtype = GPUD_F32, .ndim = 1, .shape = {nf}, .data = f, .nbytes = nf * 4};
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_array("freqs", &af)};
	gpud_result out;
	size_t no;
	/* A session's first call takes the socket, the second makes the request
	 * ring (ipc://); the run then takes it. */
	if (gpud_sync(c) != GPUD_OK || gpud_sync(c) != GPUD_OK) {
		printf("sync: %s\n", gpud_errmsg(c));
		return 1;
	}
	printf("ready, %llu ring calls\n", (unsigned long long)gpud_ring_calls(c));
	fflush(stdout);
	gpud_call(c, "lombscargle", args, 3, &out, 1, &no, NULL);
	/* A fast device may be done already: stay connected until killed. */
	for (;;)
		pause();
}

static int only_this_connection(const gpud_daemon_status *s)
{
	return s->connections == 1;
}

/* The doomed client's run is in gpud (its request and this status call). */
static int its_run_in_gpud(const gpud_daemon_status *s)
{
	return s->connections == 2 && s->in_flight == 2;
}

static gpud_daemon_status kill_base;

/* Everything the killed client had is back, and its run ended (cancelled,
 * or done where the device was faster than the kill). */
static int all_back(const gpud_daemon_status *s)
{
	return s->buffers == kill_base.buffers && s->bytes_in_use == kill_base.bytes_in_use &&
	       s->connections == kill_base.connections && s->in_flight == 1;
}

/*
 * Kills a client in the middle of an upload or a run, then waits for what
 * gpud reports (status: buffers, bytes, connections, requests in flight, the
 * cancelled counters), never for a time: the deadlines are safety nets far
 * above the worst case measured with two CPU hogs on 2 cores (printed).
 */
static void kill_mid_way(const char *kind)
{
	int run = strcmp(kind, "upload") != 0;
	int cpu = !strcmp(expected_backend(), "cpu");
	gpud_client *c = lib_connect();
	/* The baseline once only this connection is left: the fixture's readiness
	 * check may still be closing (gpud counts it until it has). */
	kill_base = wait_status(c, only_this_connection, E2E_SAFETY_S);
	ck_assert_uint_eq(kill_base.connections, 1);
	int out[2];
	ck_assert_int_eq(pipe(out), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execl(self_path, self_path, "--doomed", e2e_gpud.url, kind, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	FILE *fo = fdopen(out[0], "r");
	char line[256] = "";
	ck_assert_msg(fgets(line, sizeof(line), fo) && !strncmp(line, "ready", 5), "%s client: %s",
		      kind, line);
	gpud_daemon_status mid;
	if (run) {
		/* The run's client has its request ring: it dies with a request in it. */
		ck_assert_msg(!strcmp(line, "ready, 1 ring calls\n"), "%s client: %s", kind, line);
	}
	if (run && cpu) {
		/* Its run is in gpud: on the cpu backend it takes seconds, still running. */
		mid = wait_status(c, its_run_in_gpud, E2E_SAFETY_S);
		ck_assert_msg(its_run_in_gpud(&mid), "the %s client's run never reached gpud",
			      kind);
	} else {
		/* an upload, or a GPU run that may be done already: either is a test */
		harness_sleep_ms(30);
		mid = lib_status(c);
	}
	kill(pid, SIGKILL);
	double t_kill = harness_now_s();
	int st;
	waitpid(pid, &st, 0);
	fclose(fo);
	/* Everything it had goes back; the daemon serves on. */
	gpud_daemon_status s = wait_status(c, all_back, E2E_SAFETY_S);
	double back_s = harness_now_s() - t_kill;
	printf("killed mid-%s: %" PRIu64 " buffers, %u connections, %u in flight while it ran; "
	       "after %.3f s: %" PRIu64 " buffers (%" PRIu64 " bytes), %u connections, "
	       "%" PRIu64 " cancelled as their connection closed\n",
	       kind, mid.buffers, mid.connections, mid.in_flight, back_s, s.buffers, s.bytes_in_use,
	       s.connections, s.cancelled_closed);
	ck_assert_msg(mid.connections == kill_base.connections + 1,
		      "the %s client was not connected when killed", kind);
	ck_assert_uint_eq(s.buffers, kill_base.buffers);
	ck_assert_uint_eq(s.bytes_in_use, kill_base.bytes_in_use);
	ck_assert_uint_eq(s.connections, kill_base.connections);
	ck_assert_uint_eq(s.in_flight, 1);
	for (int i = 0; i < s.nsessions; i++)
		ck_assert_msg(s.sessions[i].regions == 0, "session %u keeps %" PRIu64 " regions",
			      s.sessions[i].id, s.sessions[i].regions);
	/* The cpu backend's run takes seconds: the kill cancelled it (stopped
	 * between chunks), and status counts it. A GPU may have finished first. */
	if (run && cpu) {
		ck_assert_uint_eq(s.cancelled_closed, kill_base.cancelled_closed + 1);
		ck_assert_uint_eq(s.cancelled, kill_base.cancelled + 1);
	}
	ck_assert_uint_ge(s.cancelled, s.cancelled_closed);
	/* Another client's run, queued behind nothing now, gives the right values. */
	enum { NX = 300, NF = 500 };
	double x[NX], y[NX], f[NF], ref[NF], got[NF];
	gen_ls(0xdead + (uint64_t)getpid(), NX, NF, x, y, f);
	ls_ref(x, y, NX, f, NF, 1, 1, ref);
	for (size_t i = 0; i < NF; i++)
		got[i] = NAN; /* poisoned */
	ls_result res;
	ls_lib_run(c, GPUD_F64, x, y, NX, f, NF, 1, 1, 0, got, &res);
	ck_assert_msg(res.st == GPUD_OK, "a run after the kill: %s", res.msg);
	assert_matches(got, GPUD_F64, ref, NF, "a run after the kill");
	gpud_close(c);
	assert_fresh_client_works("a client killed mid-way");
}

START_TEST(test_killed_mid_upload)
{
	kill_mid_way("upload");
}
END_TEST

START_TEST(test_killed_mid_run)
{
	kill_mid_way("run");
}
END_TEST

START_TEST(test_killed_with_a_region)
{
	kill_mid_way("region");
}
END_TEST

TCase *e2e_faults(void)
{
	TCase *tc = tcase_create("faults");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_killed_mid_upload);
	tcase_add_test(tc, test_killed_mid_run);
	tcase_add_test(tc, test_killed_with_a_region);
	return tc;
}
