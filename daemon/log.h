/*
 * daemon/log.h — levelled logging to stderr: text lines (with a timestamp
 * and pid, or under journald a syslog priority prefix instead) or one JSON
 * object per line (log_format = json). A record may say what it is about
 * (log_about: connection, tenant, verb, request), which text prefixes and
 * JSON carries as fields; request_log (daemon/request.h) fills it from a
 * request. Callable from any thread.
 *
 * Text records cannot be forged: a message may hold what a client sent
 * (argument and kernel names, hello's client text, its peer's address), so
 * the text formatter shows every control character of it escaped, as
 * systemd does (\n, \t, \x1b, \x7f; a backslash as \\), keeps valid UTF-8
 * (but C1 controls and U+2028/U+2029, escaped by their bytes) and shows
 * invalid bytes as \xNN: one record is one line, whatever a client sent.
 * JSON records are escaped by jansson.
 */
#ifndef GPUD_LOG_H
#define GPUD_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };
/* The config's log_format choices, in their order (daemon/config.c). */
enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON };

/* Level and format may change while other threads log (a reload: SIGHUP). */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* "error", "warn", "info", "debug" -> level; -1 if unknown. */
int log_level_parse(const char *s);
void log_set_format(enum log_format fmt);
/* Where records go: stderr (2) unless a test (the fuzzer) points them elsewhere. */
void log_set_fd(int fd);

/*
 * Looks again whether stderr is journald's stream ($JOURNAL_STREAM names
 * stderr's device:inode, systemd.exec(5)): then text records carry a
 * syslog priority prefix ("<4>") and no timestamp or pid, which journald
 * adds itself. Done on the first record anyway; tests call it after
 * pointing stderr elsewhere.
 */
void log_init(void);

/* What a record is about; unset fields (0, NULL) are left out. */
typedef struct log_about {
	uint32_t conn;      /* the connection (nng pipe id, never 0) */
	const char *tenant; /* NULL: none (yet); a request's lines print "-" */
	const char *verb;
	uint64_t request; /* the client's Request.id */
	int is_request;   /* a request's line: text always names conn, tenant and verb */
} log_about;

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text: "conn=7 tenant=alice verb=run request=12: " before the message; JSON: fields. */
void log_about_msg(enum log_level lvl, const log_about *about, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_about_vmsg(enum log_level lvl, const log_about *about, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * s escaped for a text record, as the formatter does it, into out (cap > 0
 * bytes, NUL-terminated; an escape is never cut). Returns the bytes of s
 * taken: all n unless out filled up first.
 */
size_t log_escape(const char *s, size_t n, char *out, size_t cap);

/*
 * A client's string in a message or log line: itself when it has at most
 * LOG_CLIP_BYTES bytes, else its first ones (cut on a UTF-8 boundary) in buf
 * followed by "...(N bytes)", its whole length. LOG_CLIP(s) gives it a
 * buffer that lives to the end of the enclosing block:
 *   request_fail(r, ST_INVALID, "unknown kernel '%s'", LOG_CLIP(name));
 */
#define LOG_CLIP_BYTES 200
#define LOG_CLIP_SIZE (LOG_CLIP_BYTES + 32)
const char *log_clip(char *buf, const char *s);
#define LOG_CLIP(s) log_clip((char[LOG_CLIP_SIZE]){0}, (s))

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (log_get_level() >= LOG_DEBUG)                                                  \
			log_msg(LOG_DEBUG, __VA_ARGS__);                                           \
	} while (0)
/* A line about connection conn (tenant: NULL if not known). */
#define log_conn(lvl, conn_, tenant_, ...)                                                         \
	do {                                                                                       \
		if (log_get_level() >= (lvl))                                                      \
			log_about_msg((lvl), &(log_about){.conn = (conn_), .tenant = (tenant_)},   \
				      __VA_ARGS__);                                                \
	} while (0)

#endif
