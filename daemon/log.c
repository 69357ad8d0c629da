/*
 * daemon/log.c — levelled logging to stderr, one record per line:
 *
 *   text      2026-11-25T06:48:00.123Z gpud[4242] info: conn=7 tenant=alice verb=run ...
 *   journald  <6>conn=7 tenant=alice verb=run ...   (journald adds time and pid)
 *   json      {"ts":"2026-11-25T06:48:00.123Z","level":"info","pid":4242,"msg":"...",
 *              "conn":7,"tenant":"alice","verb":"run","request":12}
 *
 * JSON is written with jansson (escaping, UTF-8 checks); under journald a
 * JSON record gets the priority prefix too. Callable from any thread: the
 * settings are words set before threads start (the journald check may run
 * again, harmlessly, on a race), and each record is formatted first and
 * written with one write(2).
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"

static volatile enum log_level current_level = LOG_INFO;
static volatile enum log_format current_format = LOG_FORMAT_TEXT;
static volatile int journal = -1; /* -1: not looked yet; 1: stderr is journald's stream */
static const char *const level_names[] = {"error", "warn", "info", "debug"};
/* syslog priorities, as sd-daemon.h's SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG */
static const char *const level_prio[] = {"<3>", "<4>", "<6>", "<7>"};

/* A record's text: the message as formatted is cut here (as before JSON). */
#define LOG_MSG_MAX 2048
/* A whole line: the prefixes, and a journald message's continuation prefixes. */
#define LOG_LINE_MAX 8192

void log_set_level(enum log_level lvl)
{
	current_level = lvl;
}

enum log_level log_get_level(void)
{
	return current_level;
}

void log_set_format(enum log_format fmt)
{
	current_format = fmt;
}

int log_level_parse(const char *s)
{
	for (int i = 0; i <= LOG_DEBUG; i++)
		if (strcasecmp(s, level_names[i]) == 0)
			return i;
	if (strcasecmp(s, "warning") == 0)
		return LOG_WARN;
	return -1;
}

void log_init(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int end = 0, on = 0;

	/* "DEV:INODE" of the stream systemd connected stdout/stderr to; a child
	 * whose stderr was redirected elsewhere inherits the variable. */
	if (js && sscanf(js, "%llu:%llu%n", &dev, &ino, &end) == 2 && js[end] == '\0' &&
	    fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino)
		on = 1;
	journal = on;
}

static int under_journal(void)
{
	if (journal < 0)
		log_init();
	return journal;
}

static void write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, p, n);
		if (w <= 0)
			return; /* nowhere to say it */
		p += w;
		n -= (size_t)w;
	}
}

/* "2026-11-25T06:48:00.123Z" */
static void timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* A JSON string of s; bytes that are not UTF-8 (a client's kernel name) become '?'. */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s);
	if (j != NULL)
		return j;
	size_t n = strlen(s);
	char *copy = malloc(n + 1);
	if (copy == NULL)
		return NULL;
	for (size_t i = 0; i <= n; i++)
		copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	j = json_string(copy);
	free(copy);
	return j;
}

static void write_json(enum log_level lvl, const log_about *a, const char *msg, int journald)
{
	char ts[64], line[LOG_LINE_MAX];
	json_t *o = json_object();

	if (o == NULL)
		return;
	timestamp(ts, sizeof(ts));
	json_object_set_new(o, "ts", json_string(ts));
	json_object_set_new(o, "level", json_string(level_names[lvl]));
	json_object_set_new(o, "pid", json_integer(getpid()));
	json_object_set_new(o, "msg", json_text(msg));
	if (a && a->conn)
		json_object_set_new(o, "conn", json_integer(a->conn));
	if (a && a->tenant)
		json_object_set_new(o, "tenant", json_text(a->tenant));
	if (a && a->verb)
		json_object_set_new(o, "verb", json_text(a->verb));
	if (a && a->request)
		json_object_set_new(o, "request", json_integer((json_int_t)a->request));

	size_t pre = journald ? strlen(level_prio[lvl]) : 0;
	memcpy(line, level_prio[lvl], pre);
	size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
	size_t n = json_dumpb(o, line + pre, sizeof(line) - pre - 1, flags);
	if (n > 0 && n <= sizeof(line) - pre - 1) {
		line[pre + n] = '\n';
		write_all(line, pre + n + 1);
	} else if (n > 0) { /* escaping made it longer than the line: one on the heap */
		char *big = json_dumps(o, flags);
		size_t bn = big ? strlen(big) : 0;
		char *whole = big ? malloc(pre + bn + 1) : NULL;
		if (whole) {
			memcpy(whole, level_prio[lvl], pre);
			memcpy(whole + pre, big, bn);
			whole[pre + bn] = '\n';
			write_all(whole, pre + bn + 1);
		}
		free(whole);
		free(big);
	}
	json_decref(o);
}

/* "conn=7 tenant=alice verb=run request=12: " (a request's: all three named, "-" if not known). */
static size_t about_prefix(const log_about *a, char *buf, size_t len)
{
	size_t n = 0;
	const char *sep = "";
#define ADD(...)                                                                                   \
	do {                                                                                       \
		int k_ = snprintf(buf + n, len - n, __VA_ARGS__);                                  \
		if (k_ > 0)                                                                        \
			n = n + (size_t)k_ < len ? n + (size_t)k_ : len - 1;                       \
		sep = " ";                                                                         \
	} while (0)
	buf[0] = '\0';
	if (a == NULL)
		return 0;
	if (a->conn || a->is_request)
		ADD("%sconn=%" PRIu32, sep, a->conn);
	if (a->tenant || a->is_request)
		ADD("%stenant=%s", sep, a->tenant ? a->tenant : "-");
	if (a->verb || a->is_request)
		ADD("%sverb=%s", sep, a->verb ? a->verb : "-");
	if (a->request)
		ADD("%srequest=%" PRIu64, sep, a->request);
	if (n > 0)
		ADD(": ");
#undef ADD
	return n;
}

static void write_text(enum log_level lvl, const log_about *a, const char *msg, int journald)
{
	char line[LOG_LINE_MAX];
	size_t n, cap = sizeof(line) - 1; /* room for the '\n' */

	if (journald) {
		n = strlen(level_prio[lvl]);
		memcpy(line, level_prio[lvl], n);
	} else {
		char ts[64];
		timestamp(ts, sizeof(ts));
		int k = snprintf(line, cap, "%s gpud[%d] %s: ", ts, (int)getpid(),
				 level_names[lvl]);
		n = k > 0 ? (size_t)k : 0;
	}
	n += about_prefix(a, line + n, cap - n);
	for (const char *p = msg; *p && n < cap; p++) {
		line[n++] = *p;
		/* journald reads each line as a record: continuation lines keep the priority */
		if (*p == '\n' && journald && p[1] != '\0' && n + 3 < cap) {
			memcpy(line + n, level_prio[lvl], 3);
			n += 3;
		}
	}
	line[n++] = '\n';
	write_all(line, n);
}

void log_about_vmsg(enum log_level lvl, const log_about *about, const char *fmt, va_list ap)
{
	char msg[LOG_MSG_MAX];

	if (lvl > current_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	int journald = under_journal();
	if (current_format == LOG_FORMAT_JSON)
		write_json(lvl, about, msg, journald);
	else
		write_text(lvl, about, msg, journald);
}

void log_about_msg(enum log_level lvl, const log_about *about, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_about_vmsg(lvl, about, fmt, ap);
	va_end(ap);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_about_vmsg(lvl, NULL, fmt, ap);
	va_end(ap);
}
