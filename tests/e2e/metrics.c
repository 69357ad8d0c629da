/*
 * tests/e2e/metrics.c — test case "metrics": gpud's monitoring endpoint
 * (metrics_listen). /metrics scraped after a known sequence of requests by
 * two tenants, its values asserted and the page checked by promtool (when
 * $PROMTOOL names it: make test-e2e does); /healthz and /readyz through
 * start, ready and shutdown. Failed hellos from one peer (wrong tokens over
 * tcp://): counted, backing off, their connections closed, one log line a
 * minute, and another peer served meanwhile (daemon/hello_guard.h).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tests/e2e/e2e.h"

#include <nng/protocol/reqrep0/req.h>

#include <nng/supplemental/http/http.h>

char e2e_metrics_addr[128];

/* The address gpud's log says the endpoint is bound to (port 0 was asked for). */
void e2e_find_metrics_addr(void)
{
	static char log[1 << 16];
	const char *key = "metrics on http://";
	double deadline = harness_now_s() + E2E_SAFETY_S;
	e2e_metrics_addr[0] = '\0';
	while (e2e_metrics_addr[0] == '\0' && harness_now_s() < deadline) {
		if (harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0) {
			const char *p = strstr(log, key);
			if (p) {
				p += strlen(key);
				size_t n = strcspn(p, "/ \n");
				snprintf(e2e_metrics_addr, sizeof(e2e_metrics_addr), "%.*s", (int)n,
					 p);
				break;
			}
		}
		harness_sleep_ms(10);
	}
	ck_assert_msg(e2e_metrics_addr[0], "gpud's log (%s) never said where metrics are",
		      e2e_gpud.log);
}

static void setup_metrics(void)
{
	/* the draining case's run takes seconds, more on a loaded machine than
	 * the default 30 s limit: this one is a safety net */
	start_tenants("metrics_listen = 127.0.0.1:0\nshutdown_timeout = 600\n"
		      "[tenant bob]\ndevice_bytes = 64KiB\n",
		      NULL, NULL, NULL);
	e2e_find_metrics_addr();
}

/* GET http://e2e_metrics_addr/path: the status (0 if no answer) and the body. */
int e2e_http_get(const char *path, char *body, size_t cap)
{
	char url[256];
	nng_url *u = NULL;
	nng_http_client *cli = NULL;
	nng_http_req *req = NULL;
	nng_http_res *res = NULL;
	nng_aio *aio = NULL;
	int code = 0;

	body[0] = '\0';
	snprintf(url, sizeof(url), "http://%s%s", e2e_metrics_addr, path);
	if (nng_url_parse(&u, url) == 0 && nng_http_client_alloc(&cli, u) == 0 &&
	    nng_http_req_alloc(&req, u) == 0 && nng_http_res_alloc(&res) == 0 &&
	    nng_aio_alloc(&aio, NULL, NULL) == 0) {
		nng_aio_set_timeout(aio, 30000);
		nng_http_client_transact(cli, req, res, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) == 0) {
			void *data;
			size_t len;
			code = nng_http_res_get_status(res);
			nng_http_res_get_data(res, &data, &len);
			if (len >= cap)
				len = cap - 1;
			memcpy(body, data, len);
			body[len] = '\0';
		}
	}
	if (aio)
		nng_aio_free(aio);
	if (res)
		nng_http_res_free(res);
	if (req)
		nng_http_req_free(req);
	if (cli)
		nng_http_client_free(cli);
	if (u)
		nng_url_free(u);
	return code;
}

/* The value of the sample named exactly `series` (name{labels}), or -1. */
double e2e_sample(const char *page, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = page; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (*p != '#' && strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	}
	return -1;
}

#define ASSERT_SAMPLE(page, series, want)                                                          \
	do {                                                                                       \
		double got_ = e2e_sample((page), (series));                                        \
		ck_assert_msg(got_ == (double)(want), "%s: %g, expected %g", (series), got_,       \
			      (double)(want));                                                     \
	} while (0)

/* promtool check metrics on the page, where $PROMTOOL names promtool. */
static void promtool_check(const char *page)
{
	const char *promtool = getenv("PROMTOOL");
	if (promtool == NULL || promtool[0] == '\0') {
		printf("metrics: PROMTOOL not set, promtool check skipped\n");
		return;
	}
	char path[512], cmd[1400], out[8192];
	path_in_dir(path, sizeof(path), "metrics.txt");
	write_text(path, page);
	snprintf(cmd, sizeof(cmd), "'%s' check metrics < '%s' > '%s.out' 2>&1", promtool, path,
		 path);
	int st = system(cmd);
	snprintf(cmd, sizeof(cmd), "%s.out", path);
	harness_read_text(cmd, out, sizeof(out));
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "promtool check metrics failed (status %d) on %s:\n%s", st, path, out);
}

START_TEST(test_metrics_count_known_requests)
{
	static char page[1 << 20];
	enum { NX = 300, NF = 500 };
	double x[NX], y[NX], f[NF];
	uint64_t nx = NX, nf = NF, big = 16384; /* 128 KiB of f64: over bob's 64 KiB */
	gpud_handle h[3], hb;
	gpud_client *alice = connect_token(TOKEN_ALICE);
	gpud_client *bob = connect_token(TOKEN_BOB);

	gen_ls(77, NX, NF, x, y, f);
	LIB_OK(alice, gpud_alloc(alice, GPUD_F64, 1, &nx, x, &h[0]));
	LIB_OK(alice, gpud_alloc(alice, GPUD_F64, 1, &nx, y, &h[1]));
	LIB_OK(alice, gpud_alloc(alice, GPUD_F64, 1, &nf, f, &h[2]));
	gpud_arg args[3] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			    gpud_arg_buffer("freqs", h[2])};
	gpud_output out;
	size_t nout = 0;
	gpud_run_info info;
	LIB_OK(alice, gpud_run(alice, "lombscargle", args, 3, &out, 1, &nout, &info));
	static double pgram[NF];
	LIB_OK(alice, gpud_download_range(alice, out.handle, 0, pgram, sizeof(pgram)));
	LIB_OK(alice, gpud_free(alice, &h[2], 1));

	LIB_FAIL(bob, gpud_alloc(bob, GPUD_F64, 1, &big, NULL, &hb), GPUD_EQUOTA, "device_bytes");
	gpud_handle nothing = h[0]; /* alice's: for bob, no such handle */
	LIB_FAIL(bob, gpud_free(bob, &nothing, 1), GPUD_ENOTFOUND, "");

	gpud_daemon_status hs = lib_status(alice);
	ck_assert_int_eq(e2e_http_get("/metrics", page, sizeof(page)), 200);
	/* the host memory budget, as status says it (cpu: alice's buffers are host memory) */
	ck_assert(hs.has_host_memory && hs.host_limit > 0);
	ASSERT_SAMPLE(page, "gpud_host_memory_limit_bytes", hs.host_limit);
	ASSERT_SAMPLE(page, "gpud_host_memory_bytes{use=\"buffers\"}", hs.host_buffers);
	ASSERT_SAMPLE(page, "gpud_host_memory_bytes{use=\"messages\"}", 0);
	ASSERT_SAMPLE(page, "gpud_host_memory_refusals_total", 0);
	if (strcmp(expected_backend(), "cpu") == 0)
		ck_assert_uint_ge(hs.host_buffers, (2 * NX + NF) * 8);
	ck_assert_msg(e2e_sample(page, "gpud_host_memory_high_water_bytes") >= hs.host_buffers,
		      "the high-water mark is below what is in use");
	/* requests, by tenant, verb and status */
	ASSERT_SAMPLE(page, "gpud_requests_total{tenant=\"alice\",verb=\"alloc\",status=\"ok\"}",
		      3);
	ASSERT_SAMPLE(page, "gpud_requests_total{tenant=\"alice\",verb=\"run\",status=\"ok\"}", 1);
	ASSERT_SAMPLE(page, "gpud_requests_total{tenant=\"alice\",verb=\"download\",status=\"ok\"}",
		      1);
	ASSERT_SAMPLE(page, "gpud_requests_total{tenant=\"alice\",verb=\"free\",status=\"ok\"}", 1);
	ASSERT_SAMPLE(page, "gpud_requests_total{tenant=\"bob\",verb=\"alloc\",status=\"quota\"}",
		      1);
	ASSERT_SAMPLE(page,
		      "gpud_requests_total{tenant=\"bob\",verb=\"free\",status=\"not_found\"}", 1);
	ck_assert_msg(
		e2e_sample(page,
			   "gpud_requests_total{tenant=\"bob\",verb=\"alloc\",status=\"ok\"}") < 0,
		"bob made no buffer, yet a successful alloc is counted");
	/* bytes: alice's three arrays up, the periodogram down; bob's refused alloc moved none */
	ASSERT_SAMPLE(page, "gpud_upload_bytes_total{tenant=\"alice\"}", (2 * NX + NF) * 8);
	ASSERT_SAMPLE(page, "gpud_download_bytes_total{tenant=\"alice\"}", NF * 8);
	ASSERT_SAMPLE(page, "gpud_upload_bytes_total{tenant=\"bob\"}", 0);
	/* quotas */
	ASSERT_SAMPLE(page, "gpud_quota_refusals_total{tenant=\"bob\",quota=\"device_bytes\"}", 1);
	ASSERT_SAMPLE(page, "gpud_quota_refusals_total{tenant=\"alice\",quota=\"device_bytes\"}",
		      0);
	ASSERT_SAMPLE(page, "gpud_tenant_device_bytes_limit{tenant=\"bob\"}", 65536);
	/* what each holds now: x, y and the output (freqs was freed) */
	ASSERT_SAMPLE(page, "gpud_tenant_buffers{tenant=\"alice\"}", 3);
	ASSERT_SAMPLE(page, "gpud_tenant_buffer_bytes{tenant=\"alice\"}", (2 * NX + NF) * 8);
	ASSERT_SAMPLE(page, "gpud_tenant_buffers{tenant=\"bob\"}", 0);
	ASSERT_SAMPLE(page, "gpud_connections{tenant=\"alice\"}", 1);
	ASSERT_SAMPLE(page, "gpud_connections{tenant=\"bob\"}", 1);
	ASSERT_SAMPLE(page, "gpud_buffers", 3);
	/* the run: one, in the kernel histogram and the queue histogram */
	ASSERT_SAMPLE(page, "gpud_kernel_run_seconds_count{kernel=\"lombscargle\"}", 1);
	ASSERT_SAMPLE(page, "gpud_kernel_run_seconds_bucket{kernel=\"lombscargle\",le=\"+Inf\"}",
		      1);
	ASSERT_SAMPLE(page, "gpud_kernel_queue_seconds_count{kernel=\"lombscargle\"}", 1);
	ASSERT_SAMPLE(page, "gpud_kernel_runs_total{tenant=\"alice\"}", 1);
	ck_assert_msg(e2e_sample(page, "gpud_kernel_seconds_total{tenant=\"alice\"}") > 0,
		      "alice's kernel time is not counted");
	ASSERT_SAMPLE(page, "gpud_request_duration_seconds_count{verb=\"run\"}", 1);
	/* the daemon */
	ASSERT_SAMPLE(page, "gpud_ready", 1);
	char series[256];
	snprintf(series, sizeof(series), "gpud_backend_up{backend=\"%s\"}", expected_backend());
	ASSERT_SAMPLE(page, series, 1);
	snprintf(series, sizeof(series),
		 "gpud_build_info{version=\"%s\",protocol=\"%u\",backend=\"%s\"}",
		 gpud_server(alice)->version, 1u, expected_backend());
	ASSERT_SAMPLE(page, series, 1);
	ck_assert_msg(e2e_sample(page, "gpud_connections_accepted_total") >= 2,
		      "two connections were accepted");
	promtool_check(page);

	/* Closing alice's connection releases what it held; the counters stay. */
	gpud_close(alice);
	gpud_daemon_status s = wait_no_buffers(bob, E2E_SAFETY_S);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_int_eq(e2e_http_get("/metrics", page, sizeof(page)), 200);
	ASSERT_SAMPLE(page, "gpud_tenant_buffers{tenant=\"alice\"}", 0);
	ASSERT_SAMPLE(page, "gpud_connections{tenant=\"alice\"}", 0);
	ASSERT_SAMPLE(page, "gpud_host_memory_bytes{use=\"buffers\"}", 0);
	ASSERT_SAMPLE(page, "gpud_requests_total{tenant=\"alice\",verb=\"alloc\",status=\"ok\"}",
		      3);
	gpud_close(bob);
}
END_TEST

/* /healthz and /readyz while serving; wrong paths and methods are refused. */
START_TEST(test_health_endpoints)
{
	char body[4096];
	ck_assert_int_eq(e2e_http_get("/healthz", body, sizeof(body)), 200);
	ck_assert_str_eq(body, "ok\n");
	ck_assert_int_eq(e2e_http_get("/readyz", body, sizeof(body)), 200);
	ck_assert_str_eq(body, "ready\n");
	ck_assert_int_eq(e2e_http_get("/nothing", body, sizeof(body)), 404);
	assert_daemon_alive("a request for an unknown path");
}
END_TEST

typedef struct long_job {
	size_t nx, nf;    /* sized to take seconds on the backend */
	atomic_int state; /* 1: the run was sent; 2: it returned; -1: setting up failed */
	gpud_status st;
} long_job;

static void *long_job_thread(void *arg)
{
	long_job *j = arg;
	size_t nx = j->nx, nf = j->nf;
	double *x = malloc(nx * sizeof(double)), *y = malloc(nx * sizeof(double)),
	       *f = malloc(nf * sizeof(double));
	gpud_client *c = NULL;
	gpud_handle h[3];
	uint64_t sx = nx, sf = nf;
	gen_ls(99, nx, nf, x, y, f);
	if (gpud_connect(e2e_gpud.url, &c) != GPUD_OK ||
	    gpud_alloc(c, GPUD_F64, 1, &sx, x, &h[0]) != GPUD_OK ||
	    gpud_alloc(c, GPUD_F64, 1, &sx, y, &h[1]) != GPUD_OK ||
	    gpud_alloc(c, GPUD_F64, 1, &sf, f, &h[2]) != GPUD_OK) {
		atomic_store(&j->state, -1);
	} else {
		gpud_arg args[3] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
				    gpud_arg_buffer("freqs", h[2])};
		gpud_output out;
		size_t nout;
		gpud_run_info info;
		atomic_store(&j->state, 1);
		j->st = gpud_run(c, "lombscargle", args, 3, &out, 1, &nout, &info);
		atomic_store(&j->state, 2);
	}
	gpud_close(c);
	free(x);
	free(y);
	free(f);
	return NULL;
}

static int two_in_flight(const gpud_daemon_status *s)
{
	return s->in_flight >= 2; /* the long run and this status */
}

/* SIGTERM with a run in flight: gpud drains it; meanwhile /readyz says
 * "shutting down" (503) and /healthz still answers. */
START_TEST(test_readyz_while_shutting_down)
{
	char body[4096], page[1 << 16];
	long_job j = {0};
	pthread_t t;
	gpud_client *c = lib_connect();
	int cpu = !strcmp(gpud_server(c)->backend, "cpu");
	/* Seconds on 2 cpu cores; the GPU gets 2^22 frequencies (as the shutdown case). */
	j.nx = cpu ? 2000 : 8000;
	j.nf = cpu ? (size_t)1 << 17 : (size_t)1 << 22;

	ck_assert_int_eq(pthread_create(&t, NULL, long_job_thread, &j), 0);
	while (atomic_load(&j.state) == 0)
		harness_sleep_ms(1);
	ck_assert_msg(atomic_load(&j.state) > 0, "setting up the long run failed");
	gpud_daemon_status s = wait_status(c, two_in_flight, 60);
	ck_assert_msg(s.in_flight >= 2, "the run never showed in flight");
	gpud_close(c);
	ck_assert_int_eq(kill(e2e_gpud.pid, SIGTERM), 0);
	/* The loop takes the signal on its next turn; from then on /readyz says
	 * so while the run drains, the endpoint up. */
	int code = 200;
	double deadline = harness_now_s() + E2E_SAFETY_S;
	while (code == 200 && atomic_load(&j.state) != 2 && harness_now_s() < deadline)
		code = e2e_http_get("/readyz", body, sizeof(body));
	int run_over = atomic_load(&j.state) == 2 && code == 200;
	ck_assert_msg(!run_over, "the run ended before /readyz was asked: make it longer");
	ck_assert_msg(code == 503 && strstr(body, "shutting down"),
		      "/readyz while draining: %d '%s', expected 503 'shutting down'", code, body);
	ck_assert_int_eq(e2e_http_get("/healthz", body, sizeof(body)), 200);
	ck_assert_int_eq(e2e_http_get("/metrics", page, sizeof(page)), 200);
	ASSERT_SAMPLE(page, "gpud_ready", 0);
	pthread_join(t, NULL);
	ck_assert_msg(j.st == GPUD_OK, "the run in flight at SIGTERM failed: %s",
		      gpud_strerror(j.st));
	ck_assert_msg(harness_gpud_wait(&e2e_gpud, E2E_SAFETY_S) == 0,
		      "gpud did not exit after draining");
	ck_assert_msg(WIFEXITED(e2e_gpud.wstatus) && WEXITSTATUS(e2e_gpud.wstatus) == 0,
		      "gpud exited with wait status %d", e2e_gpud.wstatus);
	/* and once it has exited, nothing answers */
	ck_assert_int_eq(e2e_http_get("/healthz", body, sizeof(body)), 0);
}
END_TEST

/* A metrics_listen gpud cannot use stops it as a config error (exit 2, the
 * file and the line), before it listens. */
START_TEST(test_bad_metrics_listen)
{
	char line[4096], errf[512], log[4096], where[600];
	path_in_dir(errf, sizeof(errf), "bad-metrics.err");
	snprintf(where, sizeof(where), "gpud: error: config %s.conf:2: metrics_listen = '", errf);
	const char *bad[] = {"9400", "127.0.0.1:http", "::1:9400", "127.0.0.1:99999",
			     "192.0.2.1:9400"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(
			line, sizeof(line),
			"GPUD_METRICS='%s'; printf '[gpud]\\nmetrics_listen = %%s\\n' \"$GPUD_METRICS\" "
			"> '%s.conf'; '%s' --backend cpu --config '%s.conf' --listen 'ipc://%s.sock' "
			"2>'%s'",
			bad[i], errf, gpud_bin, errf, errf, errf);
		char *argv[] = {"/bin/sh", "-c", line, NULL};
		int st = 0;
		ck_assert(harness_run_timed(argv, NULL, &st) >= 0);
		ck_assert(harness_read_text(errf, log, sizeof(log)) > 0);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2,
			      "gpud with metrics_listen = %s: status %d, expected exit 2: %s",
			      bad[i], st, log);
		ck_assert_msg(strstr(log, where) && strstr(log, bad[i]),
			      "the error for metrics_listen = %s does not say '%s%s': %s", bad[i],
			      where, bad[i], log);
	}
}
END_TEST

/* --- failed hellos ------------------------------------------------------------------- */

#define WIRE_UNAUTHENTICATED 12 /* proto/gpud.proto's STATUS_UNAUTHENTICATED */
#define BACKOFF_FIRST_S 10      /* daemon/hello_guard.h's GUARD_BACKOFF_FIRST_S */

static atomic_int conns_closed;

static void on_pipe_removed(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	(void)p;
	(void)ev;
	atomic_fetch_add((atomic_int *)arg, 1);
}

/* A REQ socket connected to url that counts its connection's end in conns_closed
 * and does not dial again within the test. */
static nng_socket raw_at(const char *url)
{
	nng_socket s;
	int rv;
	ck_assert_int_eq(nng_req0_open(&s), 0);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 30000);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 30000);
	nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 3600000);
	nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 3600000);
	nng_pipe_notify(s, NNG_PIPE_EV_REM_POST, on_pipe_removed, &conns_closed);
	rv = nng_dial(s, url, NULL, 0);
	ck_assert_msg(rv == 0, "nng_dial %s: %s", url, nng_strerror(rv));
	return s;
}

/* hello with token tok on s: the reply. */
static raw_reply hello_with(nng_socket s, uint64_t id, const char *tok)
{
	pb h = {.n = 0};
	size_t n = strlen(tok);
	pb_key(&h, 2, 2); /* HelloRequest.token */
	pb_varint(&h, n);
	memcpy(h.b + h.n, tok, n);
	h.n += n;
	return raw_body_on(s, id, 10, &h, NULL, 0);
}

/* Waits until conns_closed reaches want (a safety timeout, not a timing). */
static void wait_closed(int want)
{
	double deadline = harness_now_s() + E2E_SAFETY_S;
	while (atomic_load(&conns_closed) < want && harness_now_s() < deadline)
		harness_sleep_ms(5);
	ck_assert_msg(atomic_load(&conns_closed) == want, "%d connections closed, expected %d",
		      atomic_load(&conns_closed), want);
}

/* Lines of gpud's log that hold what. */
static int log_lines_with(const char *what)
{
	static char log[1 << 20];
	int n = 0;
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	for (const char *p = log; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

/*
 * Five wrong tokens on one connection from 127.0.0.1: the first three
 * answered as they are, the fourth starts the peer's back-off, the fifth is
 * refused unread and ends the connection (gpud closes it). Asserted on
 * counts and contents; where a check needs the back-off still running, it
 * is made only if the clock says so (a stalled machine skips it, says so).
 */
START_TEST(test_failed_hellos_back_off)
{
	static char page[1 << 20];
	char url2[128];
	raw_reply r;
	double t0 = harness_now_s(), t4 = 0;
	int refused_unread = 0;

	atomic_store(&conns_closed, 0);
	nng_socket s = raw_at(tenants_url);
	for (int i = 1; i <= 5; i++) {
		r = hello_with(s, (uint64_t)i, "wrong-token-0123456789");
		ck_assert_msg(r.code == WIRE_UNAUTHENTICATED, "hello %d: %llu %s", i,
			      (unsigned long long)r.code, r.message);
		ck_assert_msg(strstr(r.message, "wrong-token") == NULL,
			      "gpud repeats the token it was sent: %s", r.message);
		if (i <= 3)
			ck_assert_msg(strstr(r.message, "unknown token") &&
					      !strstr(r.message, "refused") &&
					      !strstr(r.message, "closed"),
				      "hello %d: %s", i, r.message);
		if (i == 4) {
			t4 = harness_now_s();
			ck_assert_msg(strstr(r.message, "unknown token") &&
					      strstr(r.message, "too many failed hellos from "
								"127.0.0.1: its hellos are refused "
								"for 10 s"),
				      "hello 4: %s", r.message);
		}
		if (i == 5) {
			ck_assert_msg(strstr(r.message, "gpud closes this connection after its "
							"5 failed hellos"),
				      "hello 5: %s", r.message);
			if (harness_now_s() - t4 < BACKOFF_FIRST_S)
				ck_assert_msg(strstr(r.message, "too many failed hellos from "
								"127.0.0.1, try again in ") &&
						      strstr(r.message, "was not looked at"),
					      "hello 5, in the back-off: %s", r.message);
			else
				printf("metrics: the machine stalled past the back-off; hello 5 "
				       "not checked as refused\n");
			refused_unread += strstr(r.message, "try again in") != NULL;
		}
	}
	wait_closed(1); /* gpud ended the connection: no reconnect here */
	nng_close(s);

	/* The same peer with a right token is refused while it backs off. */
	gpud_options o = {.url = tenants_url, .token = TOKEN_ALICE, .timeout_ms = 30000};
	gpud_client *c = NULL;
	gpud_status st = gpud_connect_opts(&o, &c);
	if (harness_now_s() - t4 < BACKOFF_FIRST_S)
		ck_assert_msg(st == GPUD_EACCESS && strstr(gpud_errmsg(c), "try again in"),
			      "alice from the backing-off peer: %s: %s", gpud_strerror(st),
			      gpud_errmsg(c));
	refused_unread += st != GPUD_OK && strstr(gpud_errmsg(c), "try again in") != NULL;
	gpud_close(c);

	/* Another peer (127.0.0.2 is loopback too) with a right token: served at once. */
	snprintf(url2, sizeof(url2), "tcp://127.0.0.2;%s", tenants_url + 6);
	nng_socket s2 = raw_at(url2);
	r = hello_with(s2, 1, TOKEN_BOB);
	ck_assert_msg(r.code == 0, "bob from 127.0.0.2: %llu %s", (unsigned long long)r.code,
		      r.message);
	nng_close(s2);

	/* A second connection of the first peer: five more, closed again, no new line. */
	s = raw_at(tenants_url);
	for (int i = 1; i <= 5; i++) {
		r = hello_with(s, (uint64_t)i, "wrong-token-0123456789");
		ck_assert_msg(r.code == WIRE_UNAUTHENTICATED, "hello %d again: %s", i, r.message);
		if (strstr(r.message, "try again in"))
			refused_unread++;
	}
	wait_closed(3); /* s2's end counted too */
	nng_close(s);

	ck_assert_int_eq(e2e_http_get("/metrics", page, sizeof(page)), 200);
	double tok = e2e_sample(page, "gpud_auth_failures_total{reason=\"token\"}");
	double off = e2e_sample(page, "gpud_auth_failures_total{reason=\"backoff\"}");
	/* every failed hello counted once: ten raw ones, and alice's if refused */
	ck_assert_msg(tok + off == 10 + (st != GPUD_OK), "failed hellos: %g token + %g backoff",
		      tok, off);
	ck_assert_msg(off == refused_unread, "%g refused unread, the test saw %d", off,
		      refused_unread);
	ck_assert_msg(tok >= 4, "%g wrong tokens counted", tok);
	ASSERT_SAMPLE(page, "gpud_auth_connections_closed_total", 2);
	ASSERT_SAMPLE(page, "gpud_auth_peers{state=\"counted\"}", 1); /* 127.0.0.2 failed none */
	promtool_check(page);

	/* One line for the peer however many hellos failed (one more a minute at most). */
	int lines = log_lines_with(" warn: failed hellos from 127.0.0.1: ");
	int minutes = (int)((harness_now_s() - t0) / 60);
	ck_assert_msg(lines >= 1 && lines <= 1 + minutes,
		      "%d lines about 127.0.0.1's failed hellos in %d whole minutes", lines,
		      minutes);
	ck_assert_int_eq(log_lines_with("failed hellos from 127.0.0.2"), 0);
	ck_assert_int_eq(log_lines_with("wrong-token-"), 0); /* tokens are never logged */
	assert_daemon_alive("failed hellos");
}
END_TEST

TCase *e2e_metrics(void)
{
	TCase *tc = tcase_create("metrics");
	tcase_add_checked_fixture(tc, setup_metrics, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_metrics_count_known_requests);
	tcase_add_test(tc, test_health_endpoints);
	tcase_add_test(tc, test_readyz_while_shutting_down);
	tcase_add_test(tc, test_bad_metrics_listen);
	tcase_add_test(tc, test_failed_hellos_back_off);
	return tc;
}
