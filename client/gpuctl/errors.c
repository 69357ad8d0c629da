/*
 * client/gpuctl/errors.c — how gpuctl ends and what it says on stderr: the
 * table of exit statuses (sysexits.h values and gpuctl's own EXIT_SHUTDOWN,
 * documented by `gpuctl help`), the one mapping from every gpud_status to an
 * exit status, errors ("gpuctl: error: ..."), usage errors (with the
 * command's usage line, which the command table above gives through a hook
 * main.c registers), notes (silenced by -q) and -v's step times. Calls only
 * state.c and url.c (the hints when gpud is not reachable).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "client/gpuctl/gpuctl.h"

/* Every exit status gpuctl uses, in the order `gpuctl help` lists them. */
static const struct {
	int code;
	const char *meaning;
} exit_table[] = {
	{0, "success"},
	{EX_USAGE, "the command line is wrong: unknown option, malformed value, -o twice"},
	{EX_DATAERR, "gpud refused an argument, a handle or the kernel name; bad .npy data"},
	{EX_NOINPUT, "an input file does not exist or cannot be read"},
	{EX_UNAVAILABLE, "gpud is not reachable at the URL, or went away"},
	{EX_SOFTWARE, "the kernel or the backend failed, or cannot run this kernel"},
	{EX_IOERR, "writing an output failed"},
	{EX_TEMPFAIL, "try again later: over a quota, out of memory, timed out, cancelled"},
	{EX_PROTOCOL, "protocol error: not gpud at the URL, or a version it does not speak"},
	{EX_NOPERM, "not permitted: a missing or wrong token, not an administrator, or not in "
		    "the ipc:// socket's group"},
	{EXIT_SHUTDOWN, "gpud is shutting down and refused the request (not done): try later"},
};

int exit_for_status(gpud_status st)
{
	/* No default: a status added to gpud/client.h fails the build until it is mapped. */
	switch (st) {
	case GPUD_OK:
		return 0;
	case GPUD_EINVAL:
	case GPUD_ENOTFOUND:
	case GPUD_EUNKNOWN_KERNEL:
	case GPUD_E2BIG:
	case GPUD_EARG:
	case GPUD_ESTALE: /* a handle from before gpud restarted names nothing now */
		return EX_DATAERR;
	case GPUD_EUNSUPPORTED:
	case GPUD_EBACKEND:
	case GPUD_EINTERNAL:
		return EX_SOFTWARE;
	case GPUD_ENOMEM:
	case GPUD_EQUOTA:
	case GPUD_ETIMEDOUT:
	case GPUD_ECANCELED:
		return EX_TEMPFAIL;
	case GPUD_ESHUTDOWN: /* nothing was done: a script may wait for gpud to be back */
		return EXIT_SHUTDOWN;
	case GPUD_ECONNECT:
	case GPUD_ETRANSPORT:
	case GPUD_EUNAVAILABLE:
		return EX_UNAVAILABLE;
	case GPUD_EPROTO:
	case GPUD_ENOSESSION:
		return EX_PROTOCOL;
	case GPUD_EACCESS:
	case GPUD_EPERM:
		return EX_NOPERM;
	}
	return EX_SOFTWARE; /* a value outside the enum */
}

void print_exit_statuses(FILE *f, const char *indent)
{
	for (size_t i = 0; i < sizeof(exit_table) / sizeof(exit_table[0]); i++)
		fprintf(f, "%s%-3d %s\n", indent, exit_table[i].code, exit_table[i].meaning);
}

static void vsay(const char *kind, const char *fmt, va_list ap)
{
	progress_break_line();
	fprintf(stderr, "gpuctl: %s: ", kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay("error", fmt, ap);
	va_end(ap);
	exit(code);
}

static int unreachable(gpud_status st)
{
	return st == GPUD_ECONNECT || st == GPUD_EUNAVAILABLE;
}

/*
 * msg without the prefix "VERB: " it shares with the end of what: gpud's
 * messages name their verb, so "download" and "download: unknown handle ..."
 * say "download: unknown handle ...", not "download: download: ...".
 */
static const char *without_repeat(const char *what, const char *msg)
{
	const char *tail = what, *p;
	while ((p = strstr(tail, ": ")) != NULL)
		tail = p + 2;
	size_t n = strlen(tail);
	if (n > 0 && strncmp(msg, tail, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
		return msg + n + 2;
	return msg;
}

void die_status(gpud_status st, const char *url, const char *what, const char *msg)
{
	if (msg == NULL || msg[0] == '\0')
		msg = gpud_strerror(st);
	else if (what)
		msg = without_repeat(what, msg);
	progress_break_line();
	if (what)
		fprintf(stderr, "gpuctl: error: %s: %s\n", what, msg);
	else
		fprintf(stderr, "gpuctl: error: %s\n", msg);
	if (unreachable(st) && url)
		hint_unreachable(url);
	exit(exit_for_status(st));
}

void die_call(gpud_client *c, gpud_status st, const char *what)
{
	die_status(st, c ? gpud_url(c) : NULL, what, gpud_errmsg(c));
}

/* The command table's usage lines (commands.c, registered by main.c). */
static void (*usage_hint)(FILE *f, const char *cmd);

void errors_usage_hook(void (*hint)(FILE *f, const char *cmd))
{
	usage_hint = hint;
}

void die_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("error", fmt, ap);
	va_end(ap);
	if (usage_hint)
		usage_hint(stderr, cmd);
	exit(EX_USAGE);
}

void note(const char *fmt, ...)
{
	va_list ap;
	if (opt.quiet)
		return;
	va_start(ap, fmt);
	vsay("note", fmt, ap);
	va_end(ap);
}

void trace(const char *fmt, ...)
{
	static double last;
	va_list ap;
	if (!opt.verbose)
		return;
	double t = now_s();
	if (last == 0)
		last = opt.t_start;
	progress_break_line();
	fprintf(stderr, "gpuctl: %8.3f ms (+%7.3f) ", (t - opt.t_start) * 1e3, (t - last) * 1e3);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	last = t;
}
