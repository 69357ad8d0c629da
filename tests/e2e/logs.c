/*
 * tests/e2e/logs.c — test case "logs": gpud's log lines about a request name
 * its connection and tenant (daemon/request.h, request_log), in text
 * ("conn=N tenant=T verb=V request=K: ...") and with log_format = json
 * (fields of one JSON object per line, every line of the log an object).
 * The request is one that fails: a download of a freed buffer. And what a
 * client sends cannot forge a line of the text log: argument and kernel
 * names holding a newline and terminal escapes show escaped, a long one cut
 * with its length (daemon/log.h).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tests/e2e/e2e.h"

/* Makes the request fail; conn and tenant get the client's connection and tenant. */
static void fail_a_request(unsigned *conn, char *tenant, size_t len)
{
	gpud_client *c = lib_connect();
	uint64_t shape[1] = {4};
	gpud_handle h;
	float got[4];
	*conn = gpud_server(c)->connection;
	snprintf(tenant, len, "%s", gpud_server(c)->tenant);
	LIB_OK(c, gpud_alloc(c, GPUD_F32, 1, shape, NULL, &h));
	LIB_OK(c, gpud_free(c, &h, 1));
	LIB_FAIL(c, gpud_download_range(c, h, 0, got, sizeof(got)), GPUD_ENOTFOUND,
		 "unknown handle");
	gpud_close(c);
}

/* The log's line that contains what (the log is read into buf). */
static const char *log_line(char *buf, size_t cap, const char *what)
{
	ck_assert_msg(harness_read_text(e2e_gpud.log, buf, cap) > 0, "cannot read %s",
		      e2e_gpud.log);
	char *p = strstr(buf, what);
	ck_assert_msg(p != NULL, "gpud's log has no line with '%s':\n%s", what, buf);
	while (p > buf && p[-1] != '\n')
		p--;
	char *end = strchr(p, '\n');
	if (end)
		*end = '\0';
	return p;
}

START_TEST(test_text_line_names_conn_and_tenant)
{
	static char buf[1 << 20];
	char want[256], tenant[64];
	unsigned conn;

	start_gpud(NULL, NULL, NULL);
	fail_a_request(&conn, tenant, sizeof(tenant));
	const char *line = log_line(buf, sizeof(buf),
				    "failed: NOT_FOUND: download: unknown handle");
	snprintf(want, sizeof(want), " info: conn=%u tenant=%s verb=download request=", conn,
		 tenant);
	ck_assert_msg(strstr(line, want) != NULL, "'%s' does not say '%s'", line, want);
	ck_assert_msg(strstr(line, " gpud[") && line[4] == '-' && strchr(line, 'Z'),
		      "'%s' lacks the timestamp and pid of text outside journald", line);
}
END_TEST

START_TEST(test_json_line_names_conn_and_tenant)
{
	static char buf[1 << 20];
	char tenant[64];
	unsigned conn;

	start_gpud("[gpud]\nlog_format = json\n", NULL, NULL);
	fail_a_request(&conn, tenant, sizeof(tenant));
	/* Every line of the log is one JSON object: nothing else writes to it. */
	ck_assert(harness_read_text(e2e_gpud.log, buf, sizeof(buf)) > 0);
	int lines = 0, found = 0;
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
		json_error_t err;
		json_t *o = json_loads(l, 0, &err);
		ck_assert_msg(json_is_object(o), "not a JSON object (%s): '%s'", err.text, l);
		ck_assert_msg(json_is_string(json_object_get(o, "ts")) &&
				      json_is_string(json_object_get(o, "level")) &&
				      json_integer_value(json_object_get(o, "pid")) ==
					      e2e_gpud.pid &&
				      json_is_string(json_object_get(o, "msg")),
			      "line without ts, level, pid or msg: '%s'", l);
		const char *msg = json_string_value(json_object_get(o, "msg"));
		if (strstr(msg, "failed: NOT_FOUND: download: unknown handle")) {
			found++;
			ck_assert_str_eq(json_string_value(json_object_get(o, "level")), "info");
			ck_assert_int_eq(json_integer_value(json_object_get(o, "conn")), conn);
			ck_assert_msg(json_is_string(json_object_get(o, "tenant")), "'%s'", l);
			ck_assert_str_eq(json_string_value(json_object_get(o, "tenant")), tenant);
			ck_assert_str_eq(json_string_value(json_object_get(o, "verb")), "download");
			ck_assert_int_gt(json_integer_value(json_object_get(o, "request")), 0);
			ck_assert_msg(!strstr(msg, "conn="), "the fields are also in msg: '%s'", l);
		}
		json_decref(o);
		lines++;
	}
	ck_assert_msg(found == 1, "%d lines say the download failed, expected 1", found);
	ck_assert_int_gt(lines, 3);
}
END_TEST

/* Every line of gpud's log holds no control character: one line per record. */
static void assert_log_lines_clean(const char *log)
{
	for (const unsigned char *p = (const unsigned char *)log; *p; p++)
		ck_assert_msg(*p == '\n' || (*p >= 0x20 && *p != 0x7f),
			      "gpud's log has the control byte 0x%02x at %zu:\n%s", *p,
			      (size_t)(p - (const unsigned char *)log), log);
}

START_TEST(test_client_strings_cannot_forge_lines)
{
	static char buf[1 << 20];
	static char longname[5000];
	uint64_t shape[1] = {4};
	gpud_handle h;

	start_gpud("[gpud]\nlog_level = debug\n", NULL, NULL);
	gpud_client *c = lib_connect();
	LIB_OK(c, gpud_alloc(c, GPUD_F32, 1, shape, NULL, &h));
	gpud_arg forged[] = {gpud_arg_buffer("\nFORGED line", h)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", forged, 1, NULL, 0, NULL, NULL), GPUD_EINVAL,
		 "unknown argument");
	LIB_FAIL(c, gpud_run(c, "\x1b[2J\r\nFORGED kernel\x7f", NULL, 0, NULL, 0, NULL, NULL),
		 GPUD_EUNKNOWN_KERNEL, "unknown kernel");
	memset(longname, 'n', sizeof(longname) - 1);
	gpud_arg longarg[] = {gpud_arg_buffer(longname, h)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", longarg, 1, NULL, 0, NULL, NULL), GPUD_EINVAL,
		 "...(4999 bytes)");
	/* the reply names the kernel's arguments after the cut name: the clip kept room */
	ck_assert_msg(strstr(gpud_errmsg(c), "(arguments: "), "%s", gpud_errmsg(c));
	gpud_close(c);

	ck_assert(harness_read_text(e2e_gpud.log, buf, sizeof(buf)) > 0);
	assert_log_lines_clean(buf);
	int lines = 0;
	for (const char *l = buf; *l; l = strchr(l, '\n') + 1) {
		lines++;
		const char *msg = strstr(l, ": ");
		ck_assert_msg(strncmp(l, "FORGED", 6) != 0 &&
				      (msg == NULL || strncmp(msg + 2, "FORGED", 6) != 0),
			      "a client forged a line of gpud's log:\n%s", buf);
		if (strchr(l, '\n') == NULL)
			break;
	}
	ck_assert_int_gt(lines, 3);
	/* the records are there, the client's bytes shown escaped */
	ck_assert_msg(strstr(buf, "unknown argument '\\nFORGED line'"),
		      "no escaped argument name in gpud's log:\n%s", buf);
	ck_assert_msg(strstr(buf, "unknown kernel '\\x1b[2J\\r\\nFORGED kernel\\x7f'"),
		      "no escaped kernel name in gpud's log:\n%s", buf);
	ck_assert_msg(strstr(buf, "nnnn...(4999 bytes)' (arguments: "),
		      "no cut argument name in gpud's log:\n%s", buf);
}
END_TEST

TCase *e2e_logs(void)
{
	TCase *tc = tcase_create("logs");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_text_line_names_conn_and_tenant);
	tcase_add_test(tc, test_json_line_names_conn_and_tenant);
	tcase_add_test(tc, test_client_strings_cannot_forge_lines);
	return tc;
}
