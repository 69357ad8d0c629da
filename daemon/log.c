/*
 * daemon/log.c — levelled logging to stderr, one record per line:
 *
 *   text      2026-11-25T06:48:00.123Z gpud[4242] info: conn=7 tenant=alice verb=run ...
 *   journald  <6>conn=7 tenant=alice verb=run ...   (journald adds time and pid)
 *   json      {"ts":"2026-11-25T06:48:00.123Z","level":"info","pid":4242,"msg":"...",
 *              "conn":7,"tenant":"alice","verb":"run","request":12}
 *
 * JSON is written with jansson (escaping, UTF-8 checks); under journald a
 * JSON record gets the priority prefix too. Text is escaped here
 * (log_escape: control characters, invalid UTF-8), once for every record,
 * so that no call site can let a client's newline or terminal escape into
 * the log; a message longer than LOG_MSG_MAX is cut and says its length.
 * Callable from any thread: the level and format are atomics (set at start
 * and by a reload on the loop, daemon/reload.c), the other settings words
 * set before threads start (the journald check may run again, harmlessly,
 * on a race), and each record is formatted first and written with one
 * write(2).
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"

/* Set at start and by a reload (SIGHUP, on the loop) while every thread logs. */
static _Atomic int current_level = LOG_INFO;
static _Atomic int current_format = LOG_FORMAT_TEXT;
static volatile int journal = -1; /* -1: not looked yet; 1: stderr is journald's stream */
static volatile int log_fd = STDERR_FILENO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};
/* syslog priorities, as sd-daemon.h's SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG */
static const char *const level_prio[] = {"<3>", "<4>", "<6>", "<7>"};

/* A record's text: the message as formatted is cut here (as before JSON). */
#define LOG_MSG_MAX 2048
/* A whole line: the prefixes and the message, each byte of it escaped to at
 * most 4 ("\x1b"), and the note of a cut. */
#define LOG_LINE_MAX (4 * LOG_MSG_MAX + 1024)
/* What a record's tenant and verb are cut at (a tenant's name is shorter). */
#define LOG_NAME_MAX 64

void log_set_level(enum log_level lvl)
{
	atomic_store_explicit(&current_level, (int)lvl, memory_order_relaxed);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&current_level, memory_order_relaxed);
}

void log_set_format(enum log_format fmt)
{
	atomic_store_explicit(&current_format, (int)fmt, memory_order_relaxed);
}

void log_set_fd(int fd)
{
	log_fd = fd;
	journal = -1;
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
	    fstat(log_fd, &st) == 0 && (unsigned long long)st.st_dev == dev &&
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
		ssize_t w = write(log_fd, p, n);
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

/*
 * The length of the UTF-8 sequence at p (at most n bytes) if it is one
 * that RFC 3629 allows (no overlong forms, surrogates or code points past
 * U+10FFFF), else 0.
 */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* Valid UTF-8 that still must not reach a terminal or viewer as it is: C1
 * controls (U+0080..U+009F: CSI is U+009B) and the line and paragraph
 * separators U+2028, U+2029, which some viewers break lines at. */
static int utf8_control(const unsigned char *p, size_t len)
{
	return (len == 2 && p[0] == 0xc2 && p[1] < 0xa0) ||
	       (len == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9));
}

size_t log_escape(const char *s, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;

	while (i < n) {
		char e[16];
		size_t el = 0, take = 1;
		unsigned char c = p[i];
		const char *named = NULL;
		switch (c) {
		case '\\':
			named = "\\\\";
			break;
		case '\a':
			named = "\\a";
			break;
		case '\b':
			named = "\\b";
			break;
		case '\t':
			named = "\\t";
			break;
		case '\n':
			named = "\\n";
			break;
		case '\v':
			named = "\\v";
			break;
		case '\f':
			named = "\\f";
			break;
		case '\r':
			named = "\\r";
			break;
		}
		if (named) {
			el = strlen(named);
			memcpy(e, named, el);
		} else if (c >= 0x20 && c < 0x7f) {
			e[el++] = (char)c;
		} else {
			size_t len = c >= 0x80 ? utf8_seq(p + i, n - i) : 0;
			if (len > 0 && !utf8_control(p + i, len)) {
				memcpy(e, p + i, len);
				el = take = len;
			} else {
				/* a control character, or a byte that is not UTF-8 (a
				 * C1 control or separator: each of its bytes) */
				take = len > 0 ? len : 1;
				for (size_t k = 0; k < take; k++) {
					e[el++] = '\\';
					e[el++] = 'x';
					e[el++] = hex[p[i + k] >> 4];
					e[el++] = hex[p[i + k] & 15];
				}
			}
		}
		if (o + el + 1 > cap)
			break;
		memcpy(out + o, e, el);
		o += el;
		i += take;
	}
	if (cap > 0)
		out[o] = '\0';
	return i;
}

/* n, less a UTF-8 sequence that s[0..n) ends in the middle of: a cut
 * there leaves no half character. */
static size_t utf8_cut(const char *s, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = (unsigned char)s[n - back];
		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: its lead is further back */
		size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return len > back ? n - back : n;
	}
	return n;
}

const char *log_clip(char *buf, const char *s)
{
	if (s == NULL)
		return "(null)";
	size_t n = strlen(s);
	if (n <= LOG_CLIP_BYTES)
		return s;
	size_t k = utf8_cut(s, LOG_CLIP_BYTES);
	snprintf(buf, LOG_CLIP_SIZE, "%.*s...(%zu bytes)", (int)k, s, n);
	return buf;
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

/* "conn=7 tenant=alice verb=run request=12: " (a request's: all three named, "-" if not
 * known); the tenant and verb escaped as the message is. */
static size_t about_prefix(const log_about *a, char *buf, size_t len)
{
	size_t n = 0;
	const char *sep = "";
	char tenant[4 * LOG_NAME_MAX + 1], verb[4 * LOG_NAME_MAX + 1];
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
	const char *tn = a->tenant ? a->tenant : "-", *vb = a->verb ? a->verb : "-";
	log_escape(tn, strnlen(tn, LOG_NAME_MAX), tenant, sizeof(tenant));
	log_escape(vb, strnlen(vb, LOG_NAME_MAX), verb, sizeof(verb));
	if (a->conn || a->is_request)
		ADD("%sconn=%" PRIu32, sep, a->conn);
	if (a->tenant || a->is_request)
		ADD("%stenant=%s", sep, tenant);
	if (a->verb || a->is_request)
		ADD("%sverb=%s", sep, verb);
	if (a->request)
		ADD("%srequest=%" PRIu64, sep, a->request);
	if (n > 0)
		ADD(": ");
#undef ADD
	return n;
}

/* full: the message's length before it was cut to msg (LOG_MSG_MAX). */
static void write_text(enum log_level lvl, const log_about *a, const char *msg, size_t full,
		       int journald)
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
	size_t len = strlen(msg);
	if (full > len)
		len = utf8_cut(msg, len);
	/* One line whatever the message holds: no raw control character
	 * (journald would take a newline for a record of its own). */
	size_t took = log_escape(msg, len, line + n, cap - n);
	n += strlen(line + n);
	if (full > took) {
		int k = snprintf(line + n, cap - n, "...(%zu bytes)", full);
		if (k > 0)
			n = n + (size_t)k < cap ? n + (size_t)k : cap;
	}
	line[n++] = '\n';
	write_all(line, n);
}

void log_about_vmsg(enum log_level lvl, const log_about *about, const char *fmt, va_list ap)
{
	char msg[LOG_MSG_MAX];

	if (lvl > log_get_level())
		return;
	int full = vsnprintf(msg, sizeof(msg), fmt, ap);
	int journald = under_journal();
	if (atomic_load_explicit(&current_format, memory_order_relaxed) == LOG_FORMAT_JSON)
		write_json(lvl, about, msg, journald);
	else
		write_text(lvl, about, msg, full > 0 ? (size_t)full : 0, journald);
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
