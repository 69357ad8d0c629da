/*
 * tests/e2e/health.c — test case "health": readiness that tells the truth
 * (daemon/health.h). gpud says hello to itself through each listener; a
 * listener that stops answering (its socket file removed), a loop that
 * stalls (GPUD_FAIL_LOOP_STALL) and a lost device each make /readyz 503
 * with the reason and gpud_ready 0; gpud_listener_up says which listener;
 * the watchdog stops pinging for the listener and the stall; a hello with a
 * probe key that is not gpud's is a failed hello. /healthz stays 200.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

static char tcp_url[64];

/* gpud on its ipc:// socket and a tcp:// port, probing every 0.2 s, with
 * its HTTP endpoint; more config after, env for gpud. */
static void start_probed(const char *more, const char *const *env)
{
	static char conf[1024];
	static const char *extra[] = {"--listen", tcp_url, NULL, NULL, NULL, NULL, NULL};
	if (more && !strcmp(more, "2 cpu devices")) {
		extra[2] = "--backend";
		extra[3] = "cpu";
		extra[4] = "--cpu-devices";
		extra[5] = "2";
		more = NULL;
	}
	snprintf(tcp_url, sizeof(tcp_url), "tcp://127.0.0.1:%d", e2e_free_port());
	snprintf(conf, sizeof(conf),
		 "[gpud]\nmetrics_listen = 127.0.0.1:0\nhealth_probe_interval = 0.2\n%s",
		 more ? more : "");
	start_gpud(conf, extra, env);
	e2e_find_metrics_addr();
}

/* The /metrics page once gpud_listener_up{listener=url} is want (the test
 * fails after E2E_SAFETY_S). */
static void wait_listener(const char *url, int want, char *page, size_t cap)
{
	char series[512];
	double end = harness_now_s() + E2E_SAFETY_S;
	snprintf(series, sizeof(series), "gpud_listener_up{listener=\"%s\"}", url);
	for (;;) {
		if (e2e_http_get("/metrics", page, cap) == 200 &&
		    e2e_sample(page, series) == (double)want)
			return;
		ck_assert_msg(harness_now_s() < end, "%s never became %d:\n%s", series, want, page);
		harness_sleep_ms(20);
	}
}

/* /readyz once its status is code and its body holds words (safety net). */
static void wait_readyz(int code, const char *words)
{
	char body[1024];
	int got = 0;
	double end = harness_now_s() + E2E_SAFETY_S;
	while ((got = e2e_http_get("/readyz", body, sizeof(body))) != code ||
	       (words && !strstr(body, words))) {
		ck_assert_msg(harness_now_s() < end, "/readyz: %d '%s', waited for %d '%s'", got,
			      body, code, words ? words : "");
		harness_sleep_ms(20);
	}
	printf("health: /readyz %d %s", got, body);
}

/* gpud's log has a line with words (safety net). */
static void wait_log(const char *words)
{
	static char log[1 << 20];
	double end = harness_now_s() + E2E_SAFETY_S;
	while (harness_read_text(e2e_gpud.log, log, sizeof(log)) <= 0 || !strstr(log, words)) {
		ck_assert_msg(harness_now_s() < end, "gpud's log never said '%s'", words);
		harness_sleep_ms(20);
	}
}

START_TEST(test_listeners_answer)
{
	static char page[1 << 17];
	char body[256];
	start_probed(NULL, NULL);
	wait_listener(e2e_gpud.url, 1, page, sizeof(page));
	wait_listener(tcp_url, 1, page, sizeof(page));
	ck_assert_int_eq((int)e2e_sample(page, "gpud_ready"), 1);
	wait_readyz(200, "ready");

	/* a hello with a probe key that is not gpud's: a failed hello */
	pb hello = {0}, req;
	uint8_t key[16];
	memset(key, 0x5a, sizeof(key));
	pb_key(&hello, 3, 2);
	pb_varint(&hello, sizeof(key));
	memcpy(hello.b + hello.n, key, sizeof(key));
	hello.n += sizeof(key);
	req = pb_request(WIRE_VERSION, 7, 10, &hello);
	size_t len;
	uint8_t *msg = frame(&req, NULL, 0, &len);
	raw_expect(msg, len, 12 /* UNAUTHENTICATED */, "not gpud's own", "a forged probe key");
	free(msg);
	ck_assert_int_eq(e2e_http_get("/healthz", body, sizeof(body)), 200);
}
END_TEST

/* The ipc:// socket file removed (a cleanup of /run, an admin's rm): new
 * clients cannot reach that listener, gpud says so everywhere, and the
 * watchdog stops pinging so that systemd restarts gpud. */
START_TEST(test_listener_down)
{
	static char page[1 << 17];
	static const char *env[] = {"WATCHDOG_USEC=200000", NULL};
	char body[256], sock[700], notify[400];

	/* a NOTIFY_SOCKET nobody reads: gpud pings into it */
	snprintf(notify, sizeof(notify), "%s/notify-%d", base_dir, (int)getpid());
	setenv("NOTIFY_SOCKET", notify, 1);
	start_probed(NULL, env);
	unsetenv("NOTIFY_SOCKET");
	wait_listener(e2e_gpud.url, 1, page, sizeof(page));
	snprintf(sock, sizeof(sock), "%s", e2e_gpud.url + 6);
	ck_assert_int_eq(unlink(sock), 0);
	wait_listener(e2e_gpud.url, 0, page, sizeof(page));
	ck_assert_int_eq((int)e2e_sample(page, "gpud_ready"), 0);
	wait_listener(tcp_url, 1, page, sizeof(page));
	wait_readyz(503, "is down: gpud's own hello failed");
	wait_log("watchdog: not pinging systemd");
	ck_assert_int_eq(e2e_http_get("/healthz", body, sizeof(body)), 200);
	/* the other listener serves on */
	gpud_options o = {.url = tcp_url, .connect_timeout_ms = 60000};
	gpud_client *c;
	ck_assert_int_eq(gpud_connect_opts(&o, &c), GPUD_OK);
	gpud_close(c);
}
END_TEST

/* A loop that stops running (blocking work on it): not ready while it
 * stalls, ready again after. The stall starts when gpud is up and the test
 * watches (SIGUSR2). */
START_TEST(test_loop_stall)
{
	static const char *env[] = {"GPUD_FAIL_LOOP_STALL=8", NULL};
	start_probed(NULL, env);
	wait_readyz(200, "ready");
	ck_assert_int_eq(kill(e2e_gpud.pid, SIGUSR2), 0);
	wait_readyz(503, "the loop has not run for");
	wait_readyz(200, "ready");
}
END_TEST

/* A lost device (device_lost = serve, the cpu backend's simulated ones):
 * gpud serves on with the others, and is not ready. */
START_TEST(test_device_lost)
{
	static const char *env[] = {"GPUD_CPU_LOSE_DEVICE=1:1", NULL};
	start_probed("2 cpu devices", env);
	gpud_client *c = lib_connect();
	uint64_t n = 4;
	double v[4] = {1, 2, 3, 4};
	gpud_handle h;
	gpud_set_device(c, 1);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	gpud_output o;
	size_t no;
	gpud_arg a[] = {gpud_arg_buffer("x", h), gpud_arg_buffer("y", h)};
	ck_assert_int_eq(gpud_run(c, "add", a, 2, &o, 1, &no, NULL), GPUD_EBACKEND);
	gpud_close(c);
	wait_readyz(503, "1 device lost");
}
END_TEST

TCase *e2e_health(void)
{
	TCase *tc = tcase_create("health");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_listeners_answer);
	tcase_add_test(tc, test_listener_down);
	tcase_add_test(tc, test_loop_stall);
	tcase_add_test(tc, test_device_lost);
	return tc;
}
