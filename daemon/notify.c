/*
 * daemon/notify.c — READY=1, STATUS=, RELOADING=1, STOPPING=1 and WATCHDOG=1 to systemd
 * through libsystemd's sd_notify, loaded with dlopen; see notify.h. The
 * loop thread's only.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h> /* the prototypes only: nothing of libsystemd is linked */

#include "daemon/log.h"
#include "daemon/notify.h"

#define LIBSYSTEMD "libsystemd.so.0"

typedef int (*sd_notify_fn)(int unset_environment, const char *state);
typedef int (*sd_watchdog_enabled_fn)(int unset_environment, uint64_t *usec);
_Static_assert(__builtin_types_compatible_p(__typeof__(&sd_notify), sd_notify_fn),
	       "sd_notify's prototype in <systemd/sd-daemon.h> differs from sd_notify_fn");
_Static_assert(__builtin_types_compatible_p(__typeof__(&sd_watchdog_enabled),
					    sd_watchdog_enabled_fn),
	       "sd_watchdog_enabled's prototype in <systemd/sd-daemon.h> differs");

static struct {
	void *lib;
	sd_notify_fn notify;
	sd_watchdog_enabled_fn watchdog_enabled;
	int ready_sent;
	int send_failed; /* warned once about a failing sd_notify */
	uv_timer_t wd;
	int wd_on; /* wd is initialised and not closed */
} n;

void notify_init(void)
{
	const char *sock = getenv("NOTIFY_SOCKET");
	const char *why = NULL;

	if (sock == NULL || sock[0] == '\0' || n.lib != NULL)
		return;
	dlerror();
	n.lib = dlopen(LIBSYSTEMD, RTLD_NOW | RTLD_LOCAL);
	if (n.lib == NULL) {
		why = dlerror();
	} else {
		*(void **)&n.notify = dlsym(n.lib, "sd_notify");
		*(void **)&n.watchdog_enabled = dlsym(n.lib, "sd_watchdog_enabled");
		if (n.notify == NULL || n.watchdog_enabled == NULL) {
			why = dlerror();
			dlclose(n.lib);
			n.lib = NULL;
			n.notify = NULL;
			n.watchdog_enabled = NULL;
		}
	}
	if (n.lib == NULL)
		log_warn("NOTIFY_SOCKET is set (%s) but " LIBSYSTEMD " cannot be loaded (%s): "
			 "systemd will not hear that gpud is ready or stopping, so a Type=notify "
			 "unit times out; install libsystemd0",
			 sock, why ? why : "sd_notify or sd_watchdog_enabled is missing");
}

int notify_enabled(void)
{
	return n.notify != NULL;
}

/* head (assignments ending in '\n', or "") then STATUS=<the text on one line>. */
__attribute__((format(printf, 2, 0))) static void send_state(const char *head, const char *fmt,
							     va_list ap)
{
	char text[512], msg[600];

	if (n.notify == NULL)
		return;
	vsnprintf(text, sizeof(text), fmt, ap);
	for (char *p = text; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	snprintf(msg, sizeof(msg), "%sSTATUS=%s", head, text);
	int rv = n.notify(0, msg);
	if (rv < 0 && !n.send_failed) {
		n.send_failed = 1;
		log_warn("sd_notify to $NOTIFY_SOCKET failed: %s", strerror(-rv));
	} else if (rv >= 0 && log_get_level() >= LOG_DEBUG) {
		for (char *p = msg; *p; p++)
			if (*p == '\n')
				*p = ' ';
		log_debug("sd_notify: %s", msg);
	}
}

void notify_status(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	send_state("", fmt, ap);
	va_end(ap);
}

void notify_ready(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	send_state(n.ready_sent ? "" : "READY=1\n", fmt, ap);
	va_end(ap);
	n.ready_sent = 1;
}

void notify_reloading(const char *fmt, ...)
{
	struct timespec ts;
	char head[96];
	va_list ap;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(head, sizeof(head), "RELOADING=1\nMONOTONIC_USEC=%llu\n",
		 (unsigned long long)ts.tv_sec * 1000000ull +
			 (unsigned long long)ts.tv_nsec / 1000);
	va_start(ap, fmt);
	send_state(head, fmt, ap);
	va_end(ap);
}

void notify_reloaded(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	send_state("READY=1\n", fmt, ap);
	va_end(ap);
}

void notify_stopping(const char *fmt, ...)
{
	va_list ap;
	notify_watchdog_stop();
	va_start(ap, fmt);
	send_state("STOPPING=1\n", fmt, ap);
	va_end(ap);
}

static const char *(*gate)(void *arg, char *buf, size_t len);
static void *gate_arg;
static int gate_closed;

void notify_watchdog_gate(const char *(*why_not)(void *arg, char *buf, size_t len), void *arg)
{
	gate = why_not;
	gate_arg = arg;
}

static void on_watchdog(uv_timer_t *t)
{
	char why[512];
	(void)t;
	if (n.notify == NULL)
		return;
	if (gate && gate(gate_arg, why, sizeof(why))) {
		if (!gate_closed)
			log_error("watchdog: not pinging systemd (it restarts gpud after "
				  "WatchdogSec): %s",
				  why);
		gate_closed = 1;
		return;
	}
	if (gate_closed)
		log_info("watchdog: pinging systemd again");
	gate_closed = 0;
	n.notify(0, "WATCHDOG=1");
}

uint64_t notify_watchdog_start(uv_loop_t *loop)
{
	uint64_t usec = 0;

	if (n.watchdog_enabled == NULL || n.wd_on)
		return 0;
	int rv = n.watchdog_enabled(0, &usec);
	if (rv < 0) {
		log_warn("watchdog: $WATCHDOG_USEC or $WATCHDOG_PID is malformed (%s); not pinging",
			 strerror(-rv));
		return 0;
	}
	if (rv == 0 || usec == 0)
		return 0;
	uint64_t ms = usec / 2000; /* half the interval, in ms */
	if (ms == 0)
		ms = 1;
	uv_timer_init(loop, &n.wd);
	uv_timer_start(&n.wd, on_watchdog, ms, ms);
	uv_unref((uv_handle_t *)&n.wd);
	n.wd_on = 1;
	on_watchdog(&n.wd);
	log_info("watchdog: WatchdogSec=%.3f s, pinging systemd from the loop every %llu ms",
		 (double)usec / 1e6, (unsigned long long)ms);
	return usec;
}

void notify_watchdog_stop(void)
{
	if (!n.wd_on)
		return;
	n.wd_on = 0;
	uv_timer_stop(&n.wd);
	uv_close((uv_handle_t *)&n.wd, NULL);
}
