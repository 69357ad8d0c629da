/*
 * client/gpuctl/connect.c — connecting to gpud at the URL url.c gives,
 * --timeout (which bounds connecting too), retrying for `status --wait`,
 * and, when gpud is not reachable, an error that names the URL tried
 * (errors.c adds url.c's hints on how to start gpud or point gpuctl at
 * one); and leaving a connection to the process's exit (ctl_leave).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "client/gpuctl/gpuctl.h"

/* The URL to dial and --timeout, which bounds connecting too: the dial, nng's
 * handshake and hello. */
static gpud_options ctl_options(void)
{
	const char *from;
	return (gpud_options){.url = ctl_url(&from), .timeout_ms = opt.timeout_ms};
}

static gpud_client *try_connect(gpud_status *st, ctl_hello how)
{
	gpud_client *c;
	gpud_options o = ctl_options();
	*st = how == CTL_DIAL_BEHIND        ? gpud_connect_start(&o, &c)
	      : how == CTL_HELLO_FIRST_CALL ? gpud_connect_deferred(&o, &c)
					    : gpud_connect_opts(&o, &c);
	if (c == NULL)
		die(EX_TEMPFAIL, "out of memory");
	return c;
}

/* A failed connect: the message names the URL (the library's usually does). */
static _Noreturn void die_connect(gpud_client *c, gpud_status st, const char *suffix)
{
	const char *from;
	const char *url = ctl_url(&from);
	const char *msg = gpud_errmsg(c);
	char buf[2600];

	/* no answer at the URL: nothing to retry later there. A timeout stays one
	 * (exit 75): something took the connection and did not answer in time;
	 * a permission refused stays one too (exit 77): gpud is there. */
	if (st == GPUD_ECONNECT || st == GPUD_ETRANSPORT)
		st = GPUD_EUNAVAILABLE;
	/* Something answered and the library said why it was refused (TLS: the
	 * certificate, the CA file, plain TCP against TLS): no hints on starting
	 * gpud then. */
	int answered = strstr(msg, ": the server") != NULL || strstr(msg, "CA file") != NULL;
	if (strstr(msg, url) == NULL && strchr(url, ',') == NULL) /* a list's names each */
		snprintf(buf, sizeof(buf), "cannot connect to gpud at %s: %s%s", url, msg, suffix);
	else
		snprintf(buf, sizeof(buf), "%s%s", msg, suffix);
	gpud_close(c);
	die_status(st, answered ? NULL : url, NULL, buf);
}

gpud_client *ctl_connect(void)
{
	return ctl_connect_as(CTL_HELLO_AT_CONNECT);
}

gpud_client *ctl_connect_as(ctl_hello how)
{
	gpud_status st;
	gpud_client *c = try_connect(&st, how);
	if (st != GPUD_OK)
		die_connect(c, st, "");
	if (opt.timeout_ms > 0)
		gpud_set_timeout(c, opt.timeout_ms);
	trace("%s %s", how == CTL_DIAL_BEHIND ? "dialing" : "connected to", gpud_url(c));
	return c;
}

void ctl_connected(gpud_client *c)
{
	gpud_status st = gpud_connect_wait(c);
	if (st != GPUD_OK)
		die_connect(c, st, "");
}

/* Status without a token (or with a refused one): gpud serves status before
 * hello, so a monitor connects without saying it. */
static gpud_client *status_before_hello(gpud_client *c, gpud_daemon_status *st)
{
	gpud_options o = ctl_options();
	gpud_client *s;
	gpud_status rc;
	fprintf(stderr, "gpuctl: %s; showing the status gpud gives before hello\n", gpud_errmsg(c));
	gpud_close(c);
	if ((rc = gpud_connect_for_status(&o, &s)) != GPUD_OK)
		die_connect(s, rc, "");
	if (opt.timeout_ms > 0)
		gpud_set_timeout(s, opt.timeout_ms);
	if ((rc = gpud_status_get(s, st)) != GPUD_OK)
		die_call(s, rc, NULL);
	return s;
}

gpud_client *ctl_status(double wait_s, gpud_daemon_status *st)
{
	double deadline = now_s() + wait_s;
	gpud_options o = ctl_options();
	for (;;) {
		/* hello rides on the status request: one round trip */
		gpud_client *c;
		gpud_status rc = gpud_connect_deferred(&o, &c);
		int dialed = rc == GPUD_OK;
		if (c == NULL)
			die(EX_TEMPFAIL, "out of memory");
		if (dialed) {
			if (opt.timeout_ms > 0)
				gpud_set_timeout(c, opt.timeout_ms);
			trace("connected to %s", gpud_url(c));
			if ((rc = gpud_status_get(c, st)) == GPUD_OK)
				return c;
		}
		if (rc == GPUD_EACCESS)
			return status_before_hello(c, st);
		/* Only an absent gpud is waited for: a refusal (a bad token) is final. */
		int absent = rc == GPUD_ECONNECT || rc == GPUD_ETRANSPORT ||
			     rc == GPUD_EUNAVAILABLE || rc == GPUD_ESHUTDOWN;
		if (dialed && !absent)
			die_call(c, rc, NULL);
		if (!absent || now_s() >= deadline) {
			char suffix[64] = "";
			if (absent && wait_s > 0)
				snprintf(suffix, sizeof(suffix), " (gave up waiting after %g s)",
					 wait_s);
			die_connect(c, rc, suffix);
		}
		gpud_close(c);
		usleep(20000);
	}
}

/*
 * The end of a command that exits right after: the connection is left to
 * the process's exit, which closes its socket (gpud then drops what the
 * connection held, as after gpud_close) and frees its memory at once;
 * gpud_close would first wait for nng's threads to wind the socket down.
 * Kept reachable here, so that a leak checker sees nothing lost.
 */
static gpud_client *left_to_exit;

void ctl_leave(gpud_client *c)
{
	left_to_exit = c;
	trace("leaving the connection to the process's exit");
}
