/*
 * tests/unit/test_log.c — unit tests of daemon/log.c's three forms, read
 * back from a pipe that stderr is pointed at: text ("TIME gpud[PID] LEVEL:
 * "), journald's (a syslog priority prefix, no time or pid, when
 * $JOURNAL_STREAM names stderr's device:inode, and not when it names
 * another), and JSON lines parsed with jansson (fields, escaping of quotes,
 * backslashes, control characters and non-ASCII text, a record longer than
 * the line buffer once escaped); text's escaping of what a client may put
 * in a message (control characters, DEL, C1 controls, invalid UTF-8; valid
 * UTF-8 kept), the cut of a long message, log_escape and log_clip; and
 * request_log's prefix and fields (daemon/request.h).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/request.h"
#include "tests/unit/suites.h"

static int saved_fd = -1, pipe_fd[2] = {-1, -1};
static char out[1 << 16];

/* stderr into a fresh pipe (JOURNAL_STREAM then names it if journald). */
static void capture(int journald)
{
	fflush(stderr);
	ck_assert_int_eq(pipe(pipe_fd), 0);
	saved_fd = dup(STDERR_FILENO);
	ck_assert_int_ge(saved_fd, 0);
	ck_assert_int_ge(dup2(pipe_fd[1], STDERR_FILENO), 0);
	if (journald) {
		struct stat st;
		char v[64];
		ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
		snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		setenv("JOURNAL_STREAM", v, 1);
	} else {
		unsetenv("JOURNAL_STREAM");
	}
	log_init();
}

/* stderr back; what was written, terminated, in out. */
static const char *captured(void)
{
	ck_assert_int_ge(dup2(saved_fd, STDERR_FILENO), 0);
	close(saved_fd);
	close(pipe_fd[1]);
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(out) - 1 && (r = read(pipe_fd[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(pipe_fd[0]);
	return out;
}

static void setup(void)
{
	log_set_level(LOG_INFO);
	log_set_format(LOG_FORMAT_TEXT);
}

static void teardown(void)
{
	unsetenv("JOURNAL_STREAM");
	log_init();
	log_set_level(LOG_INFO);
	log_set_format(LOG_FORMAT_TEXT);
}

static const log_about req_about = {
	.conn = 7, .tenant = "alice", .verb = "run", .request = 12, .is_request = 1};

/* Asserts line is "YYYY-MM-DDTHH:MM:SS.mmmZ gpud[PID] LEVEL: " + rest. */
static void assert_text(const char *line, const char *level, const char *rest)
{
	int y, mo, d, h, mi, s, ms, pid, n = 0;
	char lv[16];
	ck_assert_msg(sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ gpud[%d] %15[a-z]: %n", &y, &mo,
			     &d, &h, &mi, &s, &ms, &pid, lv, &n) == 9 &&
			      n > 0,
		      "'%s' is not a text record", line);
	ck_assert_int_ge(y, 2024);
	ck_assert_int_eq(pid, getpid());
	ck_assert_str_eq(lv, level);
	ck_assert_msg(!strncmp(line + n, rest, strlen(rest)) && line[n + strlen(rest)] == '\n',
		      "'%s' does not end in '%s'", line, rest);
}

START_TEST(test_text)
{
	capture(0);
	log_info("hello %d", 42);
	log_debug("not at level info");
	log_about_msg(LOG_WARN, &req_about, "failed: %s", "why");
	log_conn(LOG_ERROR, 5, NULL, "closed");
	log_about_msg(LOG_INFO, &(log_about){.is_request = 1, .conn = 3}, "before hello");
	const char *o = captured();
	const char *l2 = strchr(o, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
	const char *l4 = strchr(l3, '\n') + 1;
	assert_text(o, "info", "hello 42");
	assert_text(l2, "warn", "conn=7 tenant=alice verb=run request=12: failed: why");
	assert_text(l3, "error", "conn=5: closed");
	assert_text(l4, "info", "conn=3 tenant=- verb=-: before hello");
	ck_assert_int_eq(strchr(l4, '\n')[1], '\0'); /* nothing more */
	ck_assert_ptr_null(strstr(o, "not at level"));
}
END_TEST

START_TEST(test_journald)
{
	log_set_level(LOG_DEBUG);
	capture(1);
	log_error("e");
	log_warn("w");
	log_info("i");
	log_debug("d");
	log_about_msg(LOG_INFO, &req_about, "failed: %s", "why");
	log_warn("two\nlines");
	/* one record, one line: journald never sees a second record in it */
	ck_assert_str_eq(captured(), "<3>e\n<4>w\n<6>i\n<7>d\n"
				     "<6>conn=7 tenant=alice verb=run request=12: failed: why\n"
				     "<4>two\\nlines\n");
}
END_TEST

/* What a client may put in a message, each case as the text record shows it. */
static const struct {
	const char *in, *shown;
} escapes[] = {
	{"arg\nFORGED line", "arg\\nFORGED line"},
	{"tab\there, cr\r, bell\a, bs\b, vt\v, ff\f",
	 "tab\\there, cr\\r, bell\\a, bs\\b, vt\\v, ff\\f"},
	{"\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"},
	{"del\x7f, unit sep\x1f, soh\x01", "del\\x7f, unit sep\\x1f, soh\\x01"},
	{"C:\\new\\dir", "C:\\\\new\\\\dir"}, /* a backslash itself: no fake escapes */
	/* valid UTF-8 passes: 2, 3 and 4 bytes */
	{"caf\xc3\xa9 \xe2\x9c\x93 \xe6\x97\xa5 \xf0\x9f\x98\x80",
	 "caf\xc3\xa9 \xe2\x9c\x93 \xe6\x97\xa5 \xf0\x9f\x98\x80"},
	/* bytes that are not UTF-8: each as \xNN */
	{"bad \xff\xfe.", "bad \\xff\\xfe."},
	{"overlong \xc0\xaf \xe0\x80\xaf", "overlong \\xc0\\xaf \\xe0\\x80\\xaf"},
	{"surrogate \xed\xa0\x80", "surrogate \\xed\\xa0\\x80"},
	{"past U+10FFFF \xf4\x90\x80\x80", "past U+10FFFF \\xf4\\x90\\x80\\x80"},
	{"lone continuation \x80 and cut \xe2\x9c", "lone continuation \\x80 and cut \\xe2\\x9c"},
	{"lead then ASCII \xc3(", "lead then ASCII \\xc3("},
	/* valid UTF-8 that is still a control: C1 (CSI), line and paragraph separators */
	{"csi \xc2\x9b"
	 "31m, nel \xc2\x85",
	 "csi \\xc2\\x9b"
	 "31m, nel \\xc2\\x85"},
	{"ls \xe2\x80\xa8 ps \xe2\x80\xa9", "ls \\xe2\\x80\\xa8 ps \\xe2\\x80\\xa9"},
	{"nbsp \xc2\xa0 stays", "nbsp \xc2\xa0 stays"},
};

START_TEST(test_text_escapes)
{
	capture(0);
	for (size_t i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++)
		log_info("%s", escapes[i].in);
	/* the record's tenant too (a name from a tokens_file or a user database) */
	log_about_msg(LOG_WARN, &(log_about){.conn = 2, .tenant = "ev\nil"}, "x");
	const char *o = captured(), *l = o;
	for (size_t i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
		assert_text(l, "info", escapes[i].shown);
		l = strchr(l, '\n') + 1;
	}
	assert_text(l, "warn", "conn=2 tenant=ev\\nil: x");
	ck_assert_int_eq(strchr(l, '\n')[1], '\0');
	/* no byte of the whole output is a control character but the line ends */
	for (const unsigned char *p = (const unsigned char *)o; *p; p++)
		ck_assert_msg(*p == '\n' || (*p >= 0x20 && *p != 0x7f),
			      "byte 0x%02x at %zu of the output", *p,
			      (size_t)(p - (const unsigned char *)o));
}
END_TEST

/* A message longer than a record's 2 KiB: cut on a UTF-8 boundary, its length said. */
START_TEST(test_text_long_message)
{
	static char big[2202 + 1];
	big[0] = big[1] = 'x'; /* then 1100 2-byte characters: 2047 falls inside one */
	for (int i = 0; i < 1100; i++)
		memcpy(big + 2 + 2 * i, "\xc3\xa9", 2);
	big[2202] = '\0';
	capture(0);
	log_info("%s", big);
	log_info("%s\n", big); /* escaping at the end of a cut message does not double it */
	const char *o = captured();
	char want[4096];
	memcpy(want, big, 2046); /* xx and 1022 whole characters */
	snprintf(want + 2046, sizeof(want) - 2046, "...(2202 bytes)");
	assert_text(o, "info", want);
	snprintf(want + 2046, sizeof(want) - 2046, "...(2203 bytes)");
	assert_text(strchr(o, '\n') + 1, "info", want);
}
END_TEST

START_TEST(test_escape_and_clip)
{
	char e[64];
	/* an escape is never cut: the third newline does not fit in 6 bytes */
	ck_assert_uint_eq(log_escape("\n\n\n", 3, e, 6), 2);
	ck_assert_str_eq(e, "\\n\\n");
	ck_assert_uint_eq(log_escape("a\x1b", 2, e, 5), 1); /* \x1b needs 4 + NUL */
	ck_assert_str_eq(e, "a");
	ck_assert_uint_eq(log_escape("\xe2\x9c\x93!", 4, e, sizeof(out)), 4);
	ck_assert_str_eq(e, "\xe2\x9c\x93!");
	ck_assert_uint_eq(log_escape("\xe2\x9c\x93", 2, e, sizeof(out)), 2); /* n cuts it */
	ck_assert_str_eq(e, "\\xe2\\x9c");

	char buf[LOG_CLIP_SIZE], s[400], want[400];
	const char *shortname = "short";
	ck_assert_ptr_eq(log_clip(buf, shortname), shortname);
	ck_assert_str_eq(log_clip(buf, NULL), "(null)");
	memset(s, 'a', 200);
	s[200] = '\0';
	ck_assert_ptr_eq(log_clip(buf, s), s); /* 200 bytes: kept whole */
	memset(s, 'a', 300);
	s[300] = '\0';
	memset(want, 'a', 200);
	snprintf(want + 200, sizeof(want) - 200, "...(300 bytes)");
	ck_assert_str_eq(log_clip(buf, s), want);
	/* a + 150 2-byte characters: byte 200 is inside one, cut before it */
	s[0] = 'a';
	for (int i = 0; i < 150; i++)
		memcpy(s + 1 + 2 * i, "\xc3\xa9", 2);
	s[301] = '\0';
	memcpy(want, s, 199);
	snprintf(want + 199, sizeof(want) - 199, "...(301 bytes)");
	ck_assert_str_eq(LOG_CLIP(s), want);
}
END_TEST

/* JOURNAL_STREAM set for another stream (stderr redirected under systemd): text. */
START_TEST(test_journald_other_stream)
{
	capture(1);
	struct stat st;
	char v[64];
	ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", v, 1);
	log_init();
	log_info("not journald's");
	setenv("JOURNAL_STREAM", "garbage", 1);
	log_init();
	log_info("nor this");
	const char *o = captured();
	assert_text(o, "info", "not journald's");
	assert_text(strchr(o, '\n') + 1, "info", "nor this");
}
END_TEST

/* The lines of out as JSON objects (asserting each is one); *n of them. */
static json_t **json_lines(const char *text, int *n)
{
	static json_t *objs[16];
	static char copy[sizeof(out)];
	snprintf(copy, sizeof(copy), "%s", text);
	*n = 0;
	for (char *l = strtok(copy, "\n"); l && *n < 16; l = strtok(NULL, "\n")) {
		json_error_t err;
		objs[*n] = json_loads(l, 0, &err);
		ck_assert_msg(json_is_object(objs[*n]), "not a JSON object (%s): %s", err.text, l);
		(*n)++;
	}
	return objs;
}

static const char *str_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	ck_assert_msg(json_is_string(v), "no string '%s'", key);
	return json_string_value(v);
}

START_TEST(test_json)
{
	/* quotes, a backslash, a newline, a tab, a control character, non-ASCII */
	static const char tricky[] = "say \"hi\" C:\\dir\nnext\tline \x01 caf\xc3\xa9 \xe2\x9c\x93 "
				     "\xe6\x97\xa5\xe6\x9c\xac";
	log_set_format(LOG_FORMAT_JSON);
	capture(0);
	log_info("%s", tricky);
	log_about_msg(LOG_WARN, &req_about, "failed: %s", "NOT_FOUND");
	log_conn(LOG_ERROR, 9, NULL, "x");
	log_info("bad utf-8: \xff\xfe.");
	const char *o = captured();
	int n;
	json_t **js = json_lines(o, &n);
	ck_assert_int_eq(n, 4);
	int lines = 0;
	for (const char *p = o; (p = strchr(p, '\n')) != NULL; p++)
		lines++;
	ck_assert_msg(lines == 4, "4 records on %d lines: %s", lines, o);

	const char *ts = str_of(js[0], "ts");
	int y, mo, d, h, mi, s, ms, k = 0;
	ck_assert_msg(sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &y, &mo, &d, &h, &mi, &s, &ms,
			     &k) == 7 &&
			      ts[k] == '\0',
		      "ts '%s'", ts);
	ck_assert_str_eq(str_of(js[0], "level"), "info");
	ck_assert_int_eq(json_integer_value(json_object_get(js[0], "pid")), getpid());
	ck_assert_str_eq(str_of(js[0], "msg"), tricky);
	ck_assert_ptr_null(json_object_get(js[0], "conn"));
	ck_assert_ptr_null(json_object_get(js[0], "tenant"));

	ck_assert_str_eq(str_of(js[1], "level"), "warn");
	ck_assert_str_eq(str_of(js[1], "msg"), "failed: NOT_FOUND");
	ck_assert_int_eq(json_integer_value(json_object_get(js[1], "conn")), 7);
	ck_assert_str_eq(str_of(js[1], "tenant"), "alice");
	ck_assert_str_eq(str_of(js[1], "verb"), "run");
	ck_assert_int_eq(json_integer_value(json_object_get(js[1], "request")), 12);

	ck_assert_str_eq(str_of(js[2], "level"), "error");
	ck_assert_int_eq(json_integer_value(json_object_get(js[2], "conn")), 9);
	ck_assert_ptr_null(json_object_get(js[2], "tenant")); /* not known: left out */
	ck_assert_ptr_null(json_object_get(js[2], "verb"));
	/* bytes that are not UTF-8 cannot be JSON text: replaced, the record kept */
	ck_assert_str_eq(str_of(js[3], "msg"), "bad utf-8: ??.");
	for (int i = 0; i < n; i++)
		json_decref(js[i]);
}
END_TEST

/* Under journald a JSON record carries the priority too; a long one, escaped
 * past the line buffer, is still one whole record. */
START_TEST(test_json_journald_and_long)
{
	static char big[4096];
	memset(big, '\x02', sizeof(big) - 1); /* each one "\u0002" once escaped */
	log_set_format(LOG_FORMAT_JSON);
	capture(1);
	log_warn("%s", big);
	const char *o = captured();
	ck_assert_msg(!strncmp(o, "<4>{", 4), "'%.40s...' lacks the priority", o);
	ck_assert_int_eq(o[strlen(o) - 1], '\n');
	int n;
	json_t **js = json_lines(o + 3, &n);
	ck_assert_int_eq(n, 1);
	const char *msg = str_of(js[0], "msg");
	ck_assert_uint_eq(strlen(msg), 2047); /* a record's message is cut at 2 KiB */
	ck_assert_int_eq(msg[0], '\x02');
	json_decref(js[0]);
}
END_TEST

/* request_log: the request's connection, tenant (its session's, or who it
 * was for once the session went), verb (the body field's name) and id. */
START_TEST(test_request_log)
{
	Gpud__Request q = GPUD__REQUEST__INIT;
	gpud_tenant tn = {.name = "bob"};
	gpud_session s = {.pipe_id = 4, .tenant = &tn};
	gpud_request r = {.pipe_id = 4, .req = &q, .session = &s};
	q.id = 33;
	q.body_case = GPUD__REQUEST__BODY_REGISTER;
	capture(0);
	request_log(&r, LOG_INFO, "registered %s", "k");
	s.tenant = NULL; /* before hello */
	q.body_case = GPUD__REQUEST__BODY_HELLO;
	request_log(&r, LOG_INFO, "hi");
	r.session_gone = 1; /* its connection closed: r->who says */
	r.who = &tn;
	q.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	request_log(&r, LOG_WARN, "gone");
	r.req = NULL; /* not decoded */
	r.session = NULL;
	r.session_gone = 0;
	r.who = NULL;
	request_log(&r, LOG_INFO, "malformed");
	request_log(&r, LOG_DEBUG, "not at level info");
	const char *o = captured();
	const char *l2 = strchr(o, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
	const char *l4 = strchr(l3, '\n') + 1;
	assert_text(o, "info", "conn=4 tenant=bob verb=register request=33: registered k");
	assert_text(l2, "info", "conn=4 tenant=- verb=hello request=33: hi");
	assert_text(l3, "warn", "conn=4 tenant=bob verb=download request=33: gone");
	assert_text(l4, "info", "conn=4 tenant=- verb=-: malformed");
	ck_assert_ptr_null(strstr(o, "not at level"));
	ck_assert_str_eq(request_verb(&r), "-");
}
END_TEST

Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("formats");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_journald);
	tcase_add_test(tc, test_journald_other_stream);
	tcase_add_test(tc, test_text_escapes);
	tcase_add_test(tc, test_text_long_message);
	tcase_add_test(tc, test_escape_and_clip);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_json_journald_and_long);
	tcase_add_test(tc, test_request_log);
	suite_add_tcase(s, tc);
	return s;
}
