/*
 * tests/e2e/wedged.c — test case "wedged": the client's timeouts bound
 * connecting too. Two stand-ins for a wedged gpud, made in this process:
 * a Unix socket that takes connections and never speaks (nng's handshake
 * never completes), and an nng REP socket that receives the hello and
 * never replies. gpuctl --timeout and gpud_connect_opts's timeouts end
 * there with the timeout's exit status and GPUD_ETIMEDOUT. Each is timed
 * only against a watchdog, ten times the timeout (nng alone gives its
 * handshake 10 s), never to an exact figure. A list of endpoints whose
 * first is wedged reaches the second within the connect timeout. A connect
 * made in a job's callback, on the library's own thread, keeps its limit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

#include <nng/protocol/reqrep0/rep.h>

/* The timeout the tests give (ms), and the watchdog over it. */
#define WEDGE_TIMEOUT_MS 1000
#define WATCHDOG_S (10 * WEDGE_TIMEOUT_MS / 1000.0)

/* A Unix socket at path that listens and never accepts or speaks: the
 * kernel completes connects into its backlog. The listening fd. */
static int mute_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	ck_assert_msg(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 16) == 0,
		      "bind/listen %s: %s", path, strerror(errno));
	return fd;
}

/* An nng REP socket listening on url that nobody answers from. */
static nng_socket silent_rep(const char *url)
{
	nng_socket s;
	int rv;
	ck_assert_msg((rv = nng_rep0_open(&s)) == 0, "nng_rep0_open: %s", nng_strerror(rv));
	ck_assert_msg((rv = nng_listen(s, url, NULL, 0)) == 0, "nng_listen %s: %s", url,
		      nng_strerror(rv));
	return s;
}

/* gpuctl --timeout 1 status at url: exit 75 (EX_TEMPFAIL: timed out), with
 * words, within the watchdog. */
static void gpuctl_times_out(const char *url, const char *words)
{
	char t[16];
	snprintf(t, sizeof(t), "%g", WEDGE_TIMEOUT_MS / 1000.0);
	double t0 = harness_now_s();
	ctl_result *r = CTL_AT(url, "--timeout", t, "status");
	double took = harness_now_s() - t0;
	ck_assert_msg(r->code == 75, "'%s' at %s exited %d, expected 75 (timed out)\nstderr: %s",
		      r->cmd, url, r->code, r->err);
	ck_assert_msg(took < WATCHDOG_S, "'%s' took %.1f s with --timeout %s", r->cmd, took, t);
	char within[64];
	snprintf(within, sizeof(within), "within %d ms", WEDGE_TIMEOUT_MS);
	ck_assert_msg(strstr(r->err, words) && strstr(r->err, within),
		      "'%s': stderr does not say '%s' %s: %s", r->cmd, words, within, r->err);
	ck_assert_msg(!strstr(r->err, "start gpud"), "'%s' says to start gpud: %s", r->cmd, r->err);
}

/* gpud_connect_opts at url with the call timeout or the connect timeout
 * WEDGE_TIMEOUT_MS: GPUD_ETIMEDOUT with words, within the watchdog. The
 * client of the last try is left open in *keep (for the REP socket's test
 * to see the hello arrive while its pipe lives). */
static void library_times_out(const char *url, const char *words, gpud_client **keep)
{
	for (int which = 0; which < 2; which++) {
		gpud_options o = {.url = url};
		if (which == 0)
			o.timeout_ms = WEDGE_TIMEOUT_MS;
		else
			o.connect_timeout_ms = WEDGE_TIMEOUT_MS;
		gpud_client *c = NULL;
		double t0 = harness_now_s();
		gpud_status st = gpud_connect_opts(&o, &c);
		double took = harness_now_s() - t0;
		ck_assert_msg(st == GPUD_ETIMEDOUT, "%s with %s %d: got %d (%s: %s), expected %d",
			      url, which ? "connect_timeout_ms" : "timeout_ms", WEDGE_TIMEOUT_MS,
			      (int)st, gpud_strerror(st), gpud_errmsg(c), GPUD_ETIMEDOUT);
		ck_assert_msg(took < WATCHDOG_S, "gpud_connect_opts took %.1f s with a %d ms limit",
			      took, WEDGE_TIMEOUT_MS);
		ck_assert_msg(strstr(gpud_errmsg(c), words) && strstr(gpud_errmsg(c), url),
			      "the message does not say '%s' and the URL: %s", words,
			      gpud_errmsg(c));
		if (which == 1 && keep)
			*keep = c;
		else
			gpud_close(c);
	}
}

/* Something takes the connection and never says a word. */
START_TEST(test_handshake_never_completes)
{
	char path[300], url[320];
	path_in_dir(path, sizeof(path), "mute.sock");
	snprintf(url, sizeof(url), "ipc://%s", path);
	int fd = mute_socket(path);
	library_times_out(url, "nothing answered nng's handshake", NULL);
	gpuctl_times_out(url, "nothing answered nng's handshake");
	close(fd);
	unlink(path);
}
END_TEST

/* An nng peer takes the hello and never answers it. */
START_TEST(test_hello_never_answered)
{
	char path[300], url[320];
	path_in_dir(path, sizeof(path), "silent.sock");
	snprintf(url, sizeof(url), "ipc://%s", path);
	nng_socket rep = silent_rep(url);
	gpud_client *c = NULL;
	library_times_out(url, "took the hello but did not answer it", &c);
	/* the hello did reach it: the stand-in is what the test means */
	nng_msg *m = NULL;
	nng_socket_set_ms(rep, NNG_OPT_RECVTIMEO, (int)(E2E_SAFETY_S * 1000));
	int rv = nng_recvmsg(rep, &m, 0);
	ck_assert_msg(rv == 0 && nng_msg_len(m) > 0, "the REP socket got no hello: %s",
		      nng_strerror(rv));
	nng_msg_free(m);
	gpud_close(c);
	gpuctl_times_out(url, "took the hello but did not answer it");
	nng_close(rep);
}
END_TEST

/* A list whose first endpoint is wedged: the second, a gpud, within the
 * connect timeout (each endpoint gets a part of it). */
START_TEST(test_list_past_a_wedged_endpoint)
{
	char path[300], list[800];
	path_in_dir(path, sizeof(path), "mute.sock");
	int fd = mute_socket(path);
	snprintf(list, sizeof(list), "ipc://%s,%s", path, e2e_gpud.url);
	/* the wedged one gets half (3 s), the gpud what is left (3 s at least,
	 * for a hello it answers in milliseconds); one that took it all would
	 * leave the gpud nothing */
	gpud_options o = {.url = list, .connect_timeout_ms = 6000};
	gpud_client *c = NULL;
	gpud_status st = gpud_connect_opts(&o, &c);
	ck_assert_msg(st == GPUD_OK, "connect to %s: %s: %s", list, gpud_strerror(st),
		      gpud_errmsg(c));
	ck_assert_str_eq(gpud_url(c), e2e_gpud.url);
	gpud_daemon_status s;
	LIB_OK(c, gpud_status_get(c, &s));
	gpud_close(c);
	close(fd);
	unlink(path);
}
END_TEST

/* A connect made in a job's completion callback (on one of the library's
 * nng threads): what it saw, for the test's thread to check. */
typedef struct in_callback {
	const char *url;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	gpud_status st;
	double took;
	char msg[1024];
	gpud_client *c; /* closed by the test's thread */
} in_callback;

static void connect_in_callback(gpud_job *job, void *arg)
{
	in_callback *w = arg;
	gpud_options o = {.url = w->url, .connect_timeout_ms = WEDGE_TIMEOUT_MS};
	gpud_client *c = NULL;
	double t0 = harness_now_s();
	gpud_status st = gpud_connect_opts(&o, &c);
	double took = harness_now_s() - t0;
	pthread_mutex_lock(&w->mu);
	w->st = st;
	w->took = took;
	snprintf(w->msg, sizeof(w->msg), "%s", gpud_errmsg(c));
	w->c = c;
	w->done = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* The connect timeout holds for a dial made on one of the library's own
 * threads too (a job's callback), where the deadline cannot take the task
 * thread the dial itself holds: GPUD_ETIMEDOUT within the watchdog. */
START_TEST(test_dial_in_a_job_callback)
{
	char path[300], url[320];
	path_in_dir(path, sizeof(path), "mute.sock");
	snprintf(url, sizeof(url), "ipc://%s", path);
	int fd = mute_socket(path);
	gpud_client *c = lib_connect();
	in_callback w = {.url = url};
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	double v[8];
	for (int i = 0; i < 8; i++)
		v[i] = rand() / (double)RAND_MAX + 0.5;
	gpud_array a = {.dtype = GPUD_F64, .ndim = 1, .shape = {8}, .data = v, .nbytes = sizeof(v)};
	gpud_arg args[] = {gpud_arg_array("x", &a), gpud_arg_array("y", &a)};
	gpud_job *job = NULL;
	LIB_OK(c, gpud_call_async(c, "mul", args, 2, connect_in_callback, &w, &job));
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(2 * WATCHDOG_S);
	pthread_mutex_lock(&w.mu);
	while (!w.done && pthread_cond_timedwait(&w.cv, &w.mu, &until) == 0)
		;
	int done = w.done;
	pthread_mutex_unlock(&w.mu);
	ck_assert_msg(done, "the callback's connect did not end within %.0f s", 2 * WATCHDOG_S);
	ck_assert_msg(w.st == GPUD_ETIMEDOUT, "the callback's connect: %d (%s: %s), expected %d",
		      (int)w.st, gpud_strerror(w.st), w.msg, GPUD_ETIMEDOUT);
	ck_assert_msg(w.took < WATCHDOG_S, "the callback's connect took %.1f s with a %d ms limit",
		      w.took, WEDGE_TIMEOUT_MS);
	ck_assert_msg(strstr(w.msg, "nothing answered nng's handshake"), "message: %s", w.msg);
	ck_assert_int_eq(gpud_job_wait(job, 0), GPUD_OK);
	gpud_job_free(job);
	gpud_close(w.c);
	gpud_close(c);
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
	close(fd);
	unlink(path);
}
END_TEST

TCase *e2e_wedged(void)
{
	TCase *tc = tcase_create("wedged");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_handshake_never_completes);
	tcase_add_test(tc, test_hello_never_answered);
	tcase_add_test(tc, test_list_past_a_wedged_endpoint);
	tcase_add_test(tc, test_dial_in_a_job_callback);
	return tc;
}
