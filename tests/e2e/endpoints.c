/*
 * tests/e2e/endpoints.c — test case "endpoints": a client given a list of
 * gpud endpoints (GPUD_URL=URL,URL,...): it connects to the first that
 * answers, in order; a lost session moves to the next one that answers (the
 * old handles GPUD_ESTALE there: no job spans two gpuds); none answering
 * fails with every endpoint's reason; malformed lists are refused; gpuctl
 * takes the same list; gpud --help names every scheme gpud listens on. Two
 * cpu-backend gpuds: the fixture's and one of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/e2e.h"

/* A second gpud, in its own directory of base_dir (ipc://DIR/gpud.sock). */
static harness_gpud second;

static void start_second(void)
{
	char msg[2048];
	harness_gpud_opts o = {.bin = gpud_bin,
			       .backend = backend_env,
			       .parent = base_dir,
			       .prefix = "second",
			       .timeout_s = E2E_SAFETY_S,
			       .die_with_parent = 1};
	memset(&second, 0, sizeof(second));
	if (harness_gpud_start(&second, &o, msg, sizeof(msg)) != 0) {
		if (second.log[0])
			harness_dump_file("second gpud log", second.log);
		ck_abort_msg("%s", msg);
	}
}

static void stop_second(void)
{
	char msg[2048];
	ck_assert_msg(harness_gpud_stop(&second, 30, msg, sizeof(msg)) == 0, "%s", msg);
	harness_gpud_remove(&second);
}

/* An ipc:// URL where no gpud listens: a path in the fixture's directory. */
static void dead_url(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "ipc://%s/%s.sock", e2e_gpud.dir, name);
}

static gpud_client *connect_list(const char *list, int connect_timeout_ms)
{
	gpud_options o = {.url = list, .connect_timeout_ms = connect_timeout_ms};
	gpud_client *c = NULL;
	gpud_status st = gpud_connect_opts(&o, &c);
	ck_assert_msg(st == GPUD_OK, "connect to %s: %s: %s", list, gpud_strerror(st),
		      gpud_errmsg(c));
	return c;
}

/* Uploads 8 doubles, runs add(x, x), checks 2x; frees. */
static void add_works(gpud_client *c)
{
	double v[8], got[8];
	uint64_t n = 8;
	gpud_handle h;
	gpud_output o;
	size_t no = 0;
	for (int i = 0; i < 8; i++)
		v[i] = 1.5 * i - 3;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	gpud_arg a[] = {gpud_arg_buffer("x", h), gpud_arg_buffer("y", h)};
	LIB_OK(c, gpud_run(c, "add", a, 2, &o, 1, &no, NULL));
	LIB_OK(c, gpud_download_range(c, o.handle, 0, got, sizeof(got)));
	for (int i = 0; i < 8; i++)
		ck_assert_msg(got[i] == 2 * v[i], "add[%d] = %g, expected %g", i, got[i], 2 * v[i]);
	gpud_handle both[] = {h, o.handle};
	LIB_OK(c, gpud_free(c, both, 2));
}

/* The first endpoint that answers, in order: a dead one is passed over. */
START_TEST(test_first_that_answers)
{
	char dead[300], list[1200];
	dead_url(dead, sizeof(dead), "nobody");
	snprintf(list, sizeof(list), "%s, %s", dead, e2e_gpud.url);
	gpud_client *c = connect_list(list, 0);
	ck_assert_str_eq(gpud_url(c), e2e_gpud.url);
	add_works(c);
	ck_assert_uint_eq(gpud_reconnects(c), 0);
	gpud_close(c);

	/* both alive: the first of the list */
	start_second();
	snprintf(list, sizeof(list), "%s,%s", second.url, e2e_gpud.url);
	c = connect_list(list, 0);
	ck_assert_str_eq(gpud_url(c), second.url);
	gpud_close(c);
	/* a status-only connection takes the first reachable one too */
	snprintf(list, sizeof(list), "%s,%s,%s", dead, second.url, e2e_gpud.url);
	gpud_options o = {.url = list};
	ck_assert_int_eq(gpud_connect_for_status(&o, &c), GPUD_OK);
	ck_assert_str_eq(gpud_url(c), second.url);
	gpud_daemon_status s;
	LIB_OK(c, gpud_status_get(c, &s));
	gpud_close(c);
	/* hello left to the first call: not with a list, which is tried until an
	 * endpoint answers hello, so the answer is there at once */
	ck_assert_int_eq(gpud_connect_deferred(&o, &c), GPUD_OK);
	ck_assert_str_eq(gpud_url(c), second.url);
	ck_assert_msg(gpud_server(c)->version[0] && gpud_server(c)->tenant[0],
		      "a deferred connection to a list has not said hello: version '%s'",
		      gpud_server(c)->version);
	LIB_OK(c, gpud_status_get(c, &s));
	ck_assert_int_ne(s.scope, GPUD_SCOPE_BEFORE_HELLO);
	gpud_close(c);
	stop_second();
}
END_TEST

/* None answers: one error naming every endpoint and its reason. */
START_TEST(test_none_answers)
{
	char d1[300], d2[300], list[1200];
	dead_url(d1, sizeof(d1), "one");
	dead_url(d2, sizeof(d2), "two");
	snprintf(list, sizeof(list), "%s,%s", d1, d2);
	gpud_options o = {.url = list};
	gpud_client *c = NULL;
	ck_assert_int_eq(gpud_connect_opts(&o, &c), GPUD_ECONNECT);
	const char *m = gpud_errmsg(c);
	ck_assert_msg(strstr(m, "none of the 2 gpud endpoints answered") && strstr(m, "[1]") &&
			      strstr(m, "[2]") && strstr(m, d1) && strstr(m, d2),
		      "%s", m);
	gpud_close(c);
}
END_TEST

/* Malformed lists: an empty entry, too many endpoints. */
START_TEST(test_bad_lists)
{
	char list[4096];
	gpud_client *c = NULL;
	snprintf(list, sizeof(list), "%s,,ipc:///tmp/x.sock", e2e_gpud.url);
	gpud_options o = {.url = list};
	ck_assert_int_eq(gpud_connect_opts(&o, &c), GPUD_ECONNECT);
	ck_assert_msg(strstr(gpud_errmsg(c), "has an empty entry (number 2)"), "%s",
		      gpud_errmsg(c));
	gpud_close(c);
	size_t n = 0;
	for (int i = 0; i < 9; i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%sipc:///tmp/e%d.sock",
				      i ? "," : "", i);
	ck_assert_int_eq(gpud_connect_opts(&o, &c), GPUD_ECONNECT);
	ck_assert_msg(strstr(gpud_errmsg(c), "has more than 8 endpoints"), "%s", gpud_errmsg(c));
	gpud_close(c);
}
END_TEST

/*
 * Failover: the session's gpud stops; the next call moves to the next
 * endpoint, where the old handle is stale and new work runs. Both down: the
 * call fails naming both. The first back: the next call is served there.
 */
START_TEST(test_failover)
{
	char list[1200];
	double v[4] = {1, 2, 3, 4}, got[4];
	uint64_t n = 4;
	gpud_handle h;
	start_second();
	snprintf(list, sizeof(list), "%s,%s", e2e_gpud.url, second.url);
	/* the lost endpoint is waited for 300 ms (it is dead: nothing comes) */
	gpud_client *c = connect_list(list, 300);
	ck_assert_str_eq(gpud_url(c), e2e_gpud.url);
	uint64_t first = gpud_server(c)->instance;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));

	stop_gpud_now(0);
	gpud_daemon_status s;
	LIB_OK(c, gpud_status_get(c, &s));
	ck_assert_str_eq(gpud_url(c), second.url);
	ck_assert_uint_eq(gpud_reconnects(c), 1);
	ck_assert_uint_ne(gpud_server(c)->instance, first);
	ck_assert_uint_eq(s.buffers, 0);
	LIB_FAIL(c, gpud_download_range(c, h, 0, got, sizeof(got)), GPUD_ESTALE,
		 "from before gpud restarted");
	add_works(c);

	stop_second();
	gpud_set_timeout(c, 300);
	LIB_FAIL(c, gpud_status_get(c, &s), GPUD_EUNAVAILABLE,
		 "none of the 2 gpud endpoints answered after the session was lost");
	const char *m = gpud_errmsg(c);
	ck_assert_msg(strstr(m, e2e_gpud.url) && strstr(m, second.url), "%s", m);

	start_gpud_again();
	gpud_set_timeout(c, 0);
	add_works(c);
	ck_assert_str_eq(gpud_url(c), e2e_gpud.url);
	ck_assert_uint_eq(gpud_reconnects(c), 2);
	gpud_close(c);
}
END_TEST

/* gpuctl takes the list from GPUD_URL and --url; none answering: exit 69 with both named. */
START_TEST(test_gpuctl_list)
{
	char dead[300], list[1200];
	dead_url(dead, sizeof(dead), "nobody");
	snprintf(list, sizeof(list), "%s,%s", dead, e2e_gpud.url);
	ctl_result *r = CTL_AT(list, "status", "--json");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "\"backend\""), "%s", r->out);
	snprintf(list, sizeof(list), "%s,%s", dead, dead);
	r = CTL_AT(list, "status");
	ck_assert_int_eq(r->code, 69);
	ck_assert_msg(strstr(r->err, "none of the 2 gpud endpoints answered") &&
			      strstr(r->err, "every endpoint of the list was tried"),
		      "%s", r->err);
}
END_TEST

/* gpud --help names each listen URL's form (the rows of daemon/endpoint/). */
START_TEST(test_help_names_schemes)
{
	static const char *const forms[] = {"ipc://PATH", "tcp://HOST:PORT", "tls+tcp://HOST:PORT"};
	char cmd[1200], out[8192];
	snprintf(cmd, sizeof(cmd), "'%s' --help", gpud_bin);
	FILE *p = popen(cmd, "r");
	ck_assert_msg(p != NULL, "popen %s", cmd);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	ck_assert_int_eq(pclose(p), 0);
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		ck_assert_msg(strstr(out, forms[i]) != NULL, "gpud --help lacks %s: '%s'", forms[i],
			      out);
}
END_TEST

TCase *e2e_endpoints(void)
{
	TCase *tc = tcase_create("endpoints");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_first_that_answers);
	tcase_add_test(tc, test_none_answers);
	tcase_add_test(tc, test_bad_lists);
	tcase_add_test(tc, test_failover);
	tcase_add_test(tc, test_gpuctl_list);
	tcase_add_test(tc, test_help_names_schemes);
	return tc;
}
