/*
 * daemon/notify.h — telling the service manager how gpud is doing, through
 * systemd's notify socket (sd_notify(3)): READY=1 once gpud serves (the
 * backend open and warm, its kernels self-tested, every listener bound),
 * STATUS= lines at the moments an admin would ask about ("systemctl status
 * gpud"), RELOADING=1 and READY=1 around a reload (SIGHUP: "systemctl
 * reload gpud", daemon/reload.c), STOPPING=1 when shutdown starts, and WATCHDOG=1 pings from a timer
 * on the loop when the unit sets WatchdogSec= (a ping then proves that the
 * loop, which owns all of gpud's state, still turns).
 *
 * libsystemd.so.0 is opened at run time (dlopen), and only when
 * $NOTIFY_SOCKET is set: gpud is linked statically but for libc and runs on
 * machines without libsystemd, where it does none of this. With
 * $NOTIFY_SOCKET set and no libsystemd it logs one warning and goes on.
 *
 * Owns: the library handle, its two functions, the watchdog timer.
 * Threads: the loop thread only — main.c before and after uv_run (the same
 * thread), the server's start, shutdown and failure paths, and a reload. The verbs and
 * the backends never call it.
 *
 * The environment is left as it is: tenant workers (gpud's children) inherit
 * $NOTIFY_SOCKET and never use it; the unit's NotifyAccess=main would make
 * systemd ignore them anyway.
 */
#ifndef GPUD_NOTIFY_H
#define GPUD_NOTIFY_H

#include <stdint.h>
#include <uv.h>

/* Loads libsystemd when $NOTIFY_SOCKET is set. Call once, before the others. */
void notify_init(void);
/* 1 when messages go somewhere (a notify socket and libsystemd). */
int notify_enabled(void);

/* STATUS=<text>: one line (newlines become spaces). */
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* READY=1 with STATUS=<text>; only the first call sends READY=1. */
void notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* RELOADING=1 with MONOTONIC_USEC= (which systemd 253 and later need to
 * tell this reload from an earlier one) and STATUS=<text>. */
void notify_reloading(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* READY=1 with STATUS=<text>: the reload is over, whatever its result. */
void notify_reloaded(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STOPPING=1 with STATUS=<text>; ends the watchdog pings (systemd stops
 * watching a service that says it stops). */
void notify_stopping(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * When the unit sets WatchdogSec= ($WATCHDOG_USEC, for this process), pings
 * WATCHDOG=1 now and then every half of it from a timer on loop; the timer
 * does not keep the loop alive. Returns the interval in microseconds, or 0
 * when there is no watchdog.
 */
uint64_t notify_watchdog_start(uv_loop_t *loop);
/* Stops the pings and closes the timer (idempotent). */
void notify_watchdog_stop(void);
/* The watchdog pings only while why_not(arg) returns NULL (else its text is
 * logged once, and systemd restarts gpud after WatchdogSec). On the loop. */
void notify_watchdog_gate(const char *(*why_not)(void *arg, char *buf, size_t len), void *arg);

#endif
