/*
 * tests/e2e/logs.c — test case "logs": gpud's log lines about a request name
 * its connection and tenant (daemon/request.h, request_log), in text
 * ("conn=N tenant=T verb=V request=K: ...") and with log_format = json
 * (fields of one JSON object per line, every line of the log an object).
 * The request is one that fails: a download of a freed buffer.
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

TCase *e2e_logs(void)
{
	TCase *tc = tcase_create("logs");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_text_line_names_conn_and_tenant);
	tcase_add_test(tc, test_json_line_names_conn_and_tenant);
	return tc;
}
