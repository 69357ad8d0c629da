/*
 * daemon/log.h — levelled logging to stderr: text lines (with a timestamp
 * and pid, or under journald a syslog priority prefix instead) or one JSON
 * object per line (log_format = json). A record may say what it is about
 * (log_about: connection, tenant, verb, request), which text prefixes and
 * JSON carries as fields; request_log (daemon/request.h) fills it from a
 * request. Callable from any thread.
 */
#ifndef GPUD_LOG_H
#define GPUD_LOG_H

#include <stdarg.h>
#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };
/* The config's log_format choices, in their order (daemon/config.c). */
enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON };

void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* "error", "warn", "info", "debug" -> level; -1 if unknown. */
int log_level_parse(const char *s);
void log_set_format(enum log_format fmt);

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
