/*
 * tests/e2e/reload.c — test case "reload": SIGHUP makes gpud read its config
 * again (daemon/reload.h). gpud goes on with its connections, their buffers
 * and the kept ones; a new token works and a removed one is refused; a
 * removed tenant's connections close and its buffers go while another
 * tenant's stay; a config with an error is refused whole (its file and line
 * in the log) and the running settings stay; options that need a restart
 * are named and keep their running value; a new log level and format apply;
 * a tls+tcp:// listener hands its new certificate to the very next client
 * while a connection made before goes on; /metrics counts the reloads.
 * Each reload is waited for by the log line that ends it ("config reloaded
 * from", "reload refused"), never by time.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"
#include "tests/tls_fixture.h"

#define RELOADED "config reloaded from "
#define REFUSED "reload refused: "
#define TOKEN_CAROL "carol-00112233445566778899"

static char logbuf[1 << 20];

/* How many times what occurs in gpud's log. */
static int log_count(const char *what)
{
	int n = 0;
	if (harness_read_text(e2e_gpud.log, logbuf, sizeof(logbuf)) <= 0)
		return 0;
	for (const char *p = logbuf; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

/* The last line of gpud's log that contains what, into line ("" if none). */
static void last_line(const char *what, char *line, size_t cap)
{
	const char *hit = NULL;
	line[0] = '\0';
	if (harness_read_text(e2e_gpud.log, logbuf, sizeof(logbuf)) <= 0)
		return;
	for (const char *p = logbuf; (p = strstr(p, what)) != NULL; p++)
		hit = p;
	if (hit == NULL)
		return;
	while (hit > logbuf && hit[-1] != '\n')
		hit--;
	snprintf(line, cap, "%.*s", (int)strcspn(hit, "\n"), hit);
}

/* A line of gpud's log has what (line gets it). */
static void log_has(const char *what, char *line, size_t cap)
{
	last_line(what, line, cap);
	ck_assert_msg(line[0], "gpud's log has no line with '%s':\n%s", what, logbuf);
}

/*
 * SIGHUP, then the line that ends that reload: want is RELOADED (applied) or
 * REFUSED; line gets it. gpud must still run.
 */
static void reload_expect(const char *want, char *line, size_t cap)
{
	int ok0 = log_count(RELOADED), no0 = log_count(REFUSED);
	double end = harness_now_s() + E2E_SAFETY_S;
	ck_assert(kill(e2e_gpud.pid, SIGHUP) == 0);
	for (;;) {
		int ok = log_count(RELOADED), no = log_count(REFUSED);
		if (ok > ok0 || no > no0) {
			ck_assert_msg((ok > ok0) == !strcmp(want, RELOADED),
				      "the reload was %s, expected '%s'; gpud's log:\n%s",
				      ok > ok0 ? "applied" : "refused", want, logbuf);
			break;
		}
		ck_assert_msg(harness_gpud_wait(&e2e_gpud, 0) != 0,
			      "gpud exited on SIGHUP; log:\n%s", logbuf);
		ck_assert_msg(harness_now_s() < end, "no reload ended within %g s; gpud's log:\n%s",
			      E2E_SAFETY_S, logbuf);
		harness_sleep_ms(10);
	}
	last_line(want, line, cap);
	printf("reload: gpud: %s\n", line);
}

#define HAS(line, words)                                                                           \
	ck_assert_msg(strstr((line), (words)) != NULL, "'%s' does not say '%s'", (line), (words))

/* A buffer of 4 float64 from base on c (kept with keep). */
static gpud_handle put(gpud_client *c, int keep, double base)
{
	uint64_t n = 4;
	double v[4] = {base, base + 1, base + 2, base + 3};
	gpud_handle h;
	gpud_set_keep(c, keep);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	gpud_set_keep(c, 0);
	return h;
}

/* Buffer h of c still holds what put(base) wrote. */
static void same(gpud_client *c, gpud_handle h, double base, const char *what)
{
	double got[4];
	LIB_OK(c, gpud_download_range(c, h, 0, got, sizeof(got)));
	for (int i = 0; i < 4; i++)
		ck_assert_msg(got[i] == base + i, "%s: element %d is %g, expected %g", what, i,
			      got[i], base + i);
}

/* gpud's settings from its config alone (listen too; no --log-level). */
static void start_from_config(const char *tail)
{
	static char conf[4096];
	char msg[2048];
	harness_gpud_opts o = {.bin = gpud_bin,
			       .backend = backend_env,
			       .parent = base_dir,
			       .prefix = "t",
			       .dir_mode = 0755,
			       .timeout_s = E2E_SAFETY_S,
			       .die_with_parent = 1,
			       .listen_in_config = 1};
	memset(&e2e_gpud, 0, sizeof(e2e_gpud));
	ck_assert_msg(harness_gpud_dir(&e2e_gpud, &o, msg, sizeof(msg)) == 0, "%s", msg);
	snprintf(conf, sizeof(conf), "[gpud]\nlisten = ipc://%s/gpud.sock\n%s", e2e_gpud.dir, tail);
	o.config = conf;
	if (harness_gpud_start(&e2e_gpud, &o, msg, sizeof(msg)) != 0) {
		harness_dump_file("gpud log", e2e_gpud.log);
		ck_abort_msg("%s", msg);
	}
}

/* --- /metrics ---------------------------------------------------------------------------------- */

/* The value of the sample that starts with name (its labels included). */
static double metric(const char *name)
{
	static char page[1 << 18];
	char addr[64] = "", line[512];
	int port;

	log_has("metrics on http://", line, sizeof(line));
	const char *p = strstr(line, "http://127.0.0.1:");
	ck_assert_msg(p && sscanf(p, "http://127.0.0.1:%d", &port) == 1, "no port in '%s'", line);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				.sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_msg(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0,
		      "cannot connect to the metrics port %d", port);
	const char *get = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	ck_assert(write(fd, get, strlen(get)) == (ssize_t)strlen(get));
	size_t n = 0;
	ssize_t k;
	long body = -1;
	while (n + 1 < sizeof(page) && (k = read(fd, page + n, sizeof(page) - 1 - n)) > 0) {
		n += (size_t)k;
		page[n] = '\0';
		const char *end = strstr(page, "\r\n\r\n"),
			   *cl = strcasestr(page, "content-length:");
		if (end && cl && cl < end)
			body = (long)(end + 4 - page) + atol(cl + 15);
		if (body >= 0 && (long)n >= body)
			break;
	}
	close(fd);
	page[n] = '\0';
	snprintf(addr, sizeof(addr), "\n%s ", name);
	p = strstr(page, addr);
	ck_assert_msg(p != NULL, "/metrics has no sample %s:\n%s", name, page);
	return strtod(p + strlen(addr), NULL);
}

/* --- the cases --------------------------------------------------------------------------------- */

/* The same config again: gpud runs on, nothing of anyone's is touched. */
START_TEST(test_reload_keeps_state)
{
	char line[2048];
	start_tenants(NULL, NULL, NULL, NULL);
	pid_t pid = e2e_gpud.pid;
	gpud_client *a = connect_token(TOKEN_ALICE), *i = lib_connect();
	gpud_handle kept = put(a, 1, 10), conn = put(a, 0, 20), mine = put(i, 0, 30);

	reload_expect(RELOADED, line, sizeof(line));
	HAS(line, "no live option changed; 2 tokens");
	ck_assert_int_eq(e2e_gpud.pid, pid);
	/* the connections are the same (a buffer of a connection goes with it) */
	same(a, conn, 20, "alice's connection's buffer");
	same(a, kept, 10, "alice's kept buffer");
	same(i, mine, 30, "the ipc:// connection's buffer");
	ck_assert_uint_eq(gpud_reconnects(a), 0);
	ck_assert_uint_eq(gpud_reconnects(i), 0);
	gpud_client *a2 = connect_token(TOKEN_ALICE);
	same(a2, kept, 10, "alice's kept buffer from a new connection");
	gpud_close(a2);
	gpud_close(a);
	gpud_close(i);
	assert_daemon_alive("SIGHUP");
}
END_TEST

/* Tokens: carol's is new, alice's went; alice's connection and buffers go,
 * bob's stay. */
START_TEST(test_reload_tokens_and_tenants)
{
	char line[2048];
	double got[4];
	start_tenants("admin_tenants = bob\n", NULL, NULL, NULL);
	gpud_client *a = connect_token(TOKEN_ALICE), *b = connect_token(TOKEN_BOB);
	put(a, 1, 1);
	gpud_handle ac = put(a, 0, 2), bk = put(b, 1, 3), bc = put(b, 0, 4);
	ck_assert_uint_eq(lib_status(b).buffers, 4);

	write_text(tenants_tokens, "bob " TOKEN_BOB "\ncarol " TOKEN_CAROL "\n");
	reload_expect(RELOADED, line, sizeof(line));
	HAS(line, "2 tokens");
	log_has("tenant alice removed", line, sizeof(line));
	HAS(line, "tenant=alice: ");
	HAS(line, "closed 1 tcp:// connections, freed 2 buffers (64 bytes)");

	/* bob: his connection and buffers; only they are left in gpud */
	same(b, bc, 4, "bob's connection's buffer");
	same(b, bk, 3, "bob's kept buffer");
	ck_assert_uint_eq(gpud_reconnects(b), 0);
	gpud_daemon_status st = lib_status(b); /* an administrator's: every tenant's */
	ck_assert_msg(
		st.buffers == 2 && st.bytes_in_use == 64,
		"after alice's removal gpud holds %llu buffers (%llu bytes), expected bob's 2 "
		"(64 bytes)",
		(unsigned long long)st.buffers, (unsigned long long)st.bytes_in_use);

	/* carol: the new token */
	gpud_client *c = connect_token(TOKEN_CAROL);
	ck_assert_str_eq(gpud_server(c)->tenant, "carol");
	same(c, put(c, 0, 5), 5, "carol's buffer");
	gpud_close(c);

	/* alice: her connection was closed, her token is refused */
	gpud_status s1 = gpud_download_range(a, ac, 0, got, sizeof(got));
	printf("reload: alice's old connection: %s: %s\n", gpud_strerror(s1), gpud_errmsg(a));
	ck_assert_msg(s1 != GPUD_OK, "alice's connection still downloads her buffer");
	gpud_close(a);
	gpud_options o = {.url = tenants_url, .token = TOKEN_ALICE, .timeout_ms = 120000};
	gpud_client *a2 = NULL;
	LIB_FAIL(a2, gpud_connect_opts(&o, &a2), GPUD_EACCESS, "unknown token");
	gpud_close(a2);
	gpud_close(b);
}
END_TEST

/* A config with an error, then tokens gpud refuses: nothing of either is
 * applied (bob, whom both would remove, still connects), and /metrics
 * counts them; then a good one. */
START_TEST(test_reload_refused)
{
	char line[2048], conf[2048], want[1024];
	start_tenants("metrics_listen = 127.0.0.1:0\n", NULL, NULL, NULL);
	ck_assert_double_eq(metric("gpud_config_last_reload_time_seconds"), 0);

	write_text(tenants_tokens, "alice " TOKEN_ALICE "\n");
	snprintf(conf, sizeof(conf),
		 "[gpud]\ntokens_file = %s\nnot a key and a value\nmetrics_listen = 127.0.0.1:0\n",
		 tenants_tokens);
	write_text(e2e_gpud.conf, conf);
	reload_expect(REFUSED, line, sizeof(line));
	snprintf(want, sizeof(want), "reload refused: config %s:3: syntax error", e2e_gpud.conf);
	HAS(line, want);
	HAS(line, "the running config stays");
	gpud_close(connect_token(TOKEN_BOB));

	/* a good config, but a tokens file others may read */
	snprintf(conf, sizeof(conf), "[gpud]\ntokens_file = %s\nmetrics_listen = 127.0.0.1:0\n",
		 tenants_tokens);
	write_text(e2e_gpud.conf, conf);
	chmod(tenants_tokens, 0644);
	reload_expect(REFUSED, line, sizeof(line));
	snprintf(want, sizeof(want), "tokens_file %s has mode 0644", tenants_tokens);
	HAS(line, want);
	gpud_close(connect_token(TOKEN_BOB));
	ck_assert_double_eq(metric("gpud_config_reloads_total{result=\"refused\"}"), 2);
	ck_assert_double_eq(metric("gpud_config_reloads_total{result=\"ok\"}"), 0);
	ck_assert_double_eq(metric("gpud_config_last_reload_successful"), 0);
	ck_assert(metric("gpud_config_last_reload_time_seconds") > 1e9);

	/* and right: now it applies */
	chmod(tenants_tokens, 0600);
	reload_expect(RELOADED, line, sizeof(line));
	HAS(line, "1 tokens");
	ck_assert_double_eq(metric("gpud_config_reloads_total{result=\"ok\"}"), 1);
	ck_assert_double_eq(metric("gpud_config_last_reload_successful"), 1);
	gpud_close(connect_token(TOKEN_ALICE));
}
END_TEST

/* listen and contexts need a restart: named, their running values kept; the
 * log's level and format change at once. */
START_TEST(test_reload_restart_and_log)
{
	char line[2048], conf[2048], tcp[64];
	start_from_config("log_level = info\n");
	gpud_close(lib_connect());
	ck_assert_msg(log_count(" debug: ") == 0, "debug lines at log_level = info:\n%s", logbuf);

	snprintf(tcp, sizeof(tcp), "tcp://127.0.0.1:%d", e2e_free_port());
	snprintf(conf, sizeof(conf),
		 "[gpud]\nlisten = ipc://%s/gpud.sock\nlisten = %s\ncontexts = 8\nlog_level = "
		 "debug\n",
		 e2e_gpud.dir, tcp);
	write_text(e2e_gpud.conf, conf);
	reload_expect(RELOADED, line, sizeof(line));
	HAS(line, "changed log_level");
	HAS(line, "some changes need a restart");
	log_has("listen changed", line, sizeof(line));
	HAS(line, " warn: reload: listen changed: needs a restart; the running value stays");
	log_has("contexts changed", line, sizeof(line));
	HAS(line, "contexts changed: needs a restart; the running value stays");
	/* the running listen URLs: no tcp:// one */
	gpud_client *t = NULL;
	LIB_FAIL(t, gpud_connect(tcp, &t), GPUD_ECONNECT, tcp);
	gpud_close(t);
	/* debug lines from now on: a connection's */
	gpud_close(lib_connect());
	double end = harness_now_s() + E2E_SAFETY_S;
	while (log_count(" debug: conn=") == 0) {
		ck_assert_msg(harness_now_s() < end, "no debug line after log_level = debug:\n%s",
			      logbuf);
		harness_sleep_ms(10);
	}

	/* JSON lines from the reload on */
	snprintf(conf, sizeof(conf), "[gpud]\nlisten = ipc://%s/gpud.sock\nlog_format = json\n",
		 e2e_gpud.dir);
	write_text(e2e_gpud.conf, conf);
	reload_expect(RELOADED, line, sizeof(line));
	ck_assert_msg(line[0] == '{' && strstr(line, "\"level\":\"info\""),
		      "not a JSON line after log_format = json: %s", line);
	HAS(line, "changed log_level, log_format");
}
END_TEST

static void make_cert(const char *cert, const char *key, const char *cn, int is_ca,
		      const char *icert, const char *ikey)
{
	char err[512];
	ck_assert_msg(test_tls_make_cert(cert, key, cn, is_ca ? NULL : "localhost", !is_ca, is_ca,
					 "20200101000000", "21200101000000", icert, ikey, err,
					 sizeof(err)) == 0,
		      "%s", err);
}

static void copy_file(const char *from, const char *to)
{
	static char buf[1 << 16];
	ck_assert_msg(harness_read_text(from, buf, sizeof(buf)) > 0, "cannot read %s", from);
	write_text(to, buf);
}

static char tls_url[64];

/* A tls+tcp:// connection trusting only the CA in ca: its status, *c the client. */
static gpud_status tls_connect(const char *ca, gpud_client **c)
{
	gpud_options o = {.url = tls_url,
			  .tls_ca = ca,
			  .tls_server_name = "localhost",
			  .timeout_ms = 120000};
	*c = NULL;
	return gpud_connect_opts(&o, c);
}

/* A new certificate from another CA: the next client that trusts only that
 * CA is served, the connection made before the reload goes on, a client of
 * the old CA is refused; a key that does not match is refused whole. */
START_TEST(test_reload_tls_certificate)
{
	static char p[10][700];
	static const char *names[] = {"ca1",  "ca1-key", "ca2",  "ca2-key", "cert1",
				      "key1", "cert2",   "key2", "cert",    "key"};
	static char conf[2048];
	static const char *extra[] = {"--listen", tls_url, NULL};
	char line[2048];
	gpud_client *old, *fresh, *refused;

	for (int i = 0; i < 10; i++)
		snprintf(p[i], sizeof(p[i]), "%s/reload-%s-%d.pem", base_dir, names[i],
			 (int)getpid());
	make_cert(p[0], p[1], "reload-ca-1", 1, NULL, NULL);
	make_cert(p[2], p[3], "reload-ca-2", 1, NULL, NULL);
	make_cert(p[4], p[5], "localhost", 0, p[0], p[1]);
	make_cert(p[6], p[7], "localhost", 0, p[2], p[3]);
	copy_file(p[4], p[8]);
	copy_file(p[5], p[9]);
	snprintf(tls_url, sizeof(tls_url), "tls+tcp://127.0.0.1:%d", e2e_free_port());
	snprintf(conf, sizeof(conf), "[gpud]\ntls_cert = %s\ntls_key = %s\n", p[8], p[9]);
	start_gpud(conf, extra, NULL);

	LIB_OK(old, tls_connect(p[0], &old));
	gpud_handle h = put(old, 0, 7);

	copy_file(p[6], p[8]);
	copy_file(p[7], p[9]);
	reload_expect(RELOADED, line, sizeof(line));
	HAS(line, "new TLS configuration on 1 listener");
	/* the very next client gets the new certificate */
	LIB_OK(fresh, tls_connect(p[2], &fresh));
	same(fresh, put(fresh, 0, 9), 9, "a buffer over the new certificate");
	gpud_close(fresh);
	ck_assert_msg(log_count("TLS handshake") == 0, "a handshake failed:\n%s", logbuf);
	/* the connection made before goes on, with its buffer */
	same(old, h, 7, "the buffer of the TLS connection made before the reload");
	ck_assert_uint_eq(gpud_reconnects(old), 0);
	/* the old CA no longer works for new clients */
	ck_assert_int_eq(tls_connect(p[0], &refused), GPUD_ECONNECT);
	printf("reload: a client of the old CA: %s\n", gpud_errmsg(refused));
	gpud_close(refused);

	/* the old key with the new certificate: refused, the new pair stays */
	copy_file(p[5], p[9]);
	reload_expect(REFUSED, line, sizeof(line));
	HAS(line, "does not match tls_cert");
	LIB_OK(fresh, tls_connect(p[2], &fresh));
	gpud_close(fresh);
	same(old, h, 7, "the buffer of the TLS connection made before both reloads");
	gpud_close(old);
}
END_TEST

TCase *e2e_reload(void)
{
	TCase *tc = tcase_create("reload");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reload_keeps_state);
	tcase_add_test(tc, test_reload_tokens_and_tenants);
	tcase_add_test(tc, test_reload_refused);
	tcase_add_test(tc, test_reload_restart_and_log);
	tcase_add_test(tc, test_reload_tls_certificate);
	return tc;
}
