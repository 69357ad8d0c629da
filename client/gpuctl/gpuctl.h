/*
 * client/gpuctl/gpuctl.h — what gpuctl's files share: the global options,
 * the command table, exit statuses and errors, connecting, reading
 * command-line values, .npy streams and transfers with a progress bar, and
 * waiting for runs. gpuctl is the command line over libgpud-client; each
 * file owns one of these concerns and its header comment says which.
 *
 * The files, in layers: each calls only the layers under it (and its
 * own), never up; where a lower one needs a higher one's answer (a usage
 * error's usage line, from the command table), the higher one hands it a
 * function (main.c registers commands.c's with errors.c).
 *
 *   0  state.c      the global options (opt), now_s, whether a bar or
 *                   spinner holds stderr's line; switches.h (compile-time
 *                   switches, GPUCTL_RUN_ASYNC)
 *   1  url.c        which URL, from where; the hints when gpud is not
 *                   reachable there
 *   2  errors.c     exit statuses (sysexits.h), gpud_status -> exit status,
 *                   errors, usage errors, notes, -v's step times
 *   3  values.c     run's ARG=VALUE forms, integers, numbers, handles, -o
 *      json.c       --json output (json.h)
 *   4  progress.c   the progress bar and the elapsed-time spinner on stderr
 *      streams.c    .npy from stdin, .npy to files and stdout
 *      connect.c    connecting (--timeout, status --wait)
 *   5  transfer.c   uploads and downloads, in pieces under a progress bar
 *      wait.c       waiting for a run (plain, or a job with a spinner)
 *   6  cmd_*.c      the commands
 *   7  commands.c   the command table: handlers, synopses, help texts; help
 *   8  main.c       global options, dispatch (-h/--help of every command)
 *   completion.bash  bash completion (its switch tables follow commands.c;
 *                make test-completion checks them against 'gpuctl help')
 */
#ifndef GPUD_GPUCTL_H
#define GPUD_GPUCTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gpud/client.h>
#include <gpud/npy.h>

#include "client/gpuctl/switches.h"

/* --- shared state (state.c) ------------------------------------------------------------ */

typedef struct gpuctl_opts {
	const char *url; /* --url, or NULL: $GPUD_URL, else the default */
	int timeout_ms;  /* --timeout; 0: none */
	int verbose;     /* -v: step times on stderr */
	int quiet;       /* -q: no progress, spinner or notes */
	double t_start;  /* when gpuctl started (monotonic seconds) */
} gpuctl_opts;

extern gpuctl_opts opt;

/* CLOCK_MONOTONIC in seconds. */
double now_s(void);
/* A bar or spinner left stderr's line open (1), or ended it with a newline (0). */
void stderr_line_open(int open);
/* Ends whatever line a bar or spinner left, so a message starts on its own line. */
void progress_break_line(void);

/* --- the URL (url.c) -------------------------------------------------------------------- */

/* The URL gpuctl tries, and where it came from ("--url", "$GPUD_URL", "the default"). */
const char *ctl_url(const char **from);
/* Lines saying how to start gpud or point gpuctl at one, to stderr. */
void hint_unreachable(const char *url);

/* --- commands (commands.c) ------------------------------------------------------------ */

typedef struct ctl_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis; /* after "usage: "; several lines for several forms */
	const char *summary;  /* one line for the list of commands */
	const char *help;     /* description, options, examples */
} ctl_command;

const ctl_command *command_find(const char *name);
/* "run, upload, ..." */
void command_names(char *buf, size_t len);
void print_main_help(FILE *f);
void print_command_help(FILE *f, const ctl_command *cmd);
/* "usage: gpuctl [OPTIONS] COMMAND ..." or the command's synopsis, to f. */
void print_usage_line(FILE *f, const ctl_command *cmd);
/* A usage error's last lines: the usage line of command cmd (NULL: gpuctl's own)
 * and where to read more, to f (errors.c's hook). */
void print_usage_hint(FILE *f, const char *cmd);

int cmd_help(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_upload(int argc, char **argv);
int cmd_download(int argc, char **argv);
int cmd_free(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_kernel(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_demo(int argc, char **argv);

/* --- exit statuses and messages (errors.c) --------------------------------------------- */

/*
 * gpud is shutting down and refused the command (GPUD_ESHUTDOWN): nothing was
 * done; try again once it is back. gpuctl's own, past sysexits.h's range.
 */
#define EXIT_SHUTDOWN 79
/* The exit status for a libgpud-client status: one place for all of them. */
int exit_for_status(gpud_status st);
/* The documented exit statuses, one line each ("  65  ..."), to f. */
void print_exit_statuses(FILE *f, const char *indent);

#define PRINTF(a, b) __attribute__((format(printf, a, b)))

/* "gpuctl: error: ..." and exit with code. */
_Noreturn void die(int code, const char *fmt, ...) PRINTF(2, 3);
/* The same for a failed call: the exit status that st maps to, c's message (and,
 * when gpud is unreachable, what to do about it). what may be NULL. */
_Noreturn void die_call(gpud_client *c, gpud_status st, const char *what);
/* The same with a message given (a job's); the hint needs the URL. */
_Noreturn void die_status(gpud_status st, const char *url, const char *what, const char *msg);
/* main.c hands over the command table's usage lines (commands.c) before any usage error. */
void errors_usage_hook(void (*hint)(FILE *f, const char *cmd));
/* A usage error of cmd (NULL: gpuctl's own): the message, the usage line, exit EX_USAGE. */
_Noreturn void die_usage(const char *cmd, const char *fmt, ...) PRINTF(2, 3);
/* "gpuctl: note: ...", unless -q. */
void note(const char *fmt, ...) PRINTF(1, 2);
/* With -v: the time since start and since the last step, to stderr. */
void trace(const char *fmt, ...) PRINTF(1, 2);

/* --- connecting (connect.c) ---------------------------------------------------------- */

/* Connects to the URL (--url, $GPUD_URL or the default), or dies saying what to do. */
gpud_client *ctl_connect(void);
/* How ctl_connect_as connects: hello at connect; left to the first call,
 * which carries it (gpud_connect_deferred); that, and the dial goes on
 * behind the caller until ctl_connected (gpud_connect_start). */
typedef enum { CTL_HELLO_AT_CONNECT, CTL_HELLO_FIRST_CALL, CTL_DIAL_BEHIND } ctl_hello;
gpud_client *ctl_connect_as(ctl_hello how);
/* CTL_DIAL_BEHIND's dial is done, or gpuctl dies as ctl_connect would have. */
void ctl_connected(gpud_client *c);
/* Connects and gets gpud's status into st, its hello carried by the status
 * request (gpud_connect_deferred), retrying for up to wait_s seconds while gpud
 * is not reachable; a refused hello (no or a bad token) falls back to a
 * connection without hello (gpud_connect_for_status), saying so. */
gpud_client *ctl_status(double wait_s, gpud_daemon_status *st);
/* A command that exits right after: its connection is closed by the exit. */
void ctl_leave(gpud_client *c);

/* --- command-line values (values.c) -------------------------------------------------- */

typedef enum value_kind {
	VAL_FILE,   /* @FILE, FILE.npy, a path with '/' */
	VAL_STDIN,  /* - or @- */
	VAL_HANDLE, /* %HANDLE (and the old @HANDLE) */
	VAL_BOOL,
	VAL_INT,
	VAL_FLOAT,
	VAL_TEXT, /* a word: a dtype name, checked by gpud */
} value_kind;

typedef struct ctl_value {
	value_kind kind;
	const char *path; /* VAL_FILE */
	gpud_handle handle;
	int64_t i;
	double f;
	int b;
	const char *text;
} ctl_value;

/* Reads run's ARG=VALUE value for argument name; a usage error of cmd if malformed. */
void parse_value(const char *cmd, const char *name, const char *text, ctl_value *v);
/* Decimal (leading zeros allowed: 010 is ten) or 0x hex, the whole string: 0, or -1 with
 * *why ("not an integer", "out of range"). */
int parse_int64(const char *s, int64_t *out, const char **why);
/* A handle as a command's argument: HEX, %HEX, @HEX or 0xHEX, 1 to 16 hex digits. */
gpud_handle parse_handle_arg(const char *cmd, const char *text);
/* A count for an option: decimal, min..max, else a usage error naming the option. */
long parse_count(const char *cmd, const char *option, const char *text, long min, long max);
/* Seconds for an option: a finite decimal, min..max. */
double parse_seconds(const char *cmd, const char *option, const char *text, double min, double max);

/* A usage error for an option cmd does not take; gpuctl's own options are told to go first. */
_Noreturn void die_unknown_option(const char *cmd, const char *a);

/* An -o: [NAME=][@]PATH; PATH "-" is stdout. */
typedef struct out_spec {
	const char *arg; /* as given, for messages */
	char name[GPUD_NAME_MAX];
	int named;
	const char *path;
	int to_stdout;
} out_spec;

void parse_out_spec(const char *cmd, const char *text, out_spec *o);
/* If argv[*i] is -o/--output (with its value inline or next), reads it into o, advances *i
 * and returns 1; 0 if it is not an -o. */
int take_out_option(const char *cmd, int argc, char **argv, int *i, out_spec *o);

/* --- .npy streams (streams.c) ------------------------------------------------------------ */

/* Reads one .npy array from stdin (malloc'd data); what names the reader in errors. */
void read_stdin_npy(const char *cmd, const char *what, gpud_array *out);
/* An input file that cannot be opened for reading: EX_NOINPUT, naming it. */
void check_readable(const char *what, const char *path);
/* Refuses (usage error of cmd) to write .npy bytes to stdout when it is a terminal. */
void check_stdout_not_tty(const char *cmd);

/* An output being written: a file (removed again if writing fails) or stdout. */
typedef struct npy_out {
	const char *path; /* as given; "-" for stdout */
	const char *what; /* for messages: "output 'pgram'" */
	int fd;
	int is_reg;       /* a regular file gpuctl created: removed on failure */
	uint64_t written; /* bytes so far: a regular file is cut there on close */
} npy_out;

void out_open(npy_out *o, const char *path, const char *what);
void out_write(npy_out *o, const void *buf, size_t n);
void out_close(npy_out *o);
/* Closes and removes a partly written file (before dying of another error). */
void out_abort(npy_out *o);
/* A whole array in memory into path ("-": stdout). */
void save_array(const char *path, const char *what, const gpud_array *a);
/* The same for an array in c's host memory (gpud_host_alloc's): into a regular
 * file its bytes are written by gpud (gpud_host_write), never mapped here. */
void save_host_array(gpud_client *c, const char *path, const char *what, const gpud_array *a);

/* --- transfers (transfer.c) -------------------------------------------------------------- */

/* Pieces of this size when a progress bar may be drawn. */
#define PIECE_BYTES (4u << 20)

/* An array in memory into a new buffer. */
void upload_array(gpud_client *c, const gpud_array *a, const char *label, const char *what,
		  gpud_handle *out);
/* A .npy file into a new buffer; meta (may be NULL) gets its dtype and shape. */
void upload_file(gpud_client *c, const char *path, const char *what, gpud_handle *out,
		 gpud_array *meta);
/* Buffer h of meta's dtype and shape into path ("-": stdout) as .npy. */
void download_to(gpud_client *c, gpud_handle h, const gpud_array *meta, const char *path,
		 const char *label, const char *what);

/* --- progress on stderr (progress.c) --------------------------------------------------- */

typedef struct progress {
	const char *verb, *label;
	uint64_t total, done; /* total 0: a spinner */
	double t0, drawn_at;
	int shown;
	unsigned ticks;
} progress;

/* Reads $GPUCTL_PROGRESS_DELAY (a usage error if it is not seconds). */
void progress_init(void);
/* 1 if a bar or spinner may be drawn at all: stderr is a terminal and no -q. */
int progress_possible(void);
void progress_start(progress *p, const char *verb, const char *label, uint64_t total);
void progress_update(progress *p, uint64_t done);
/* The final state (when anything was drawn) and a newline. */
void progress_finish(progress *p);
/* --- waiting for runs (wait.c) ---------------------------------------------------------- */

/* gpud_run / gpud_call, behind a spinner on a terminal when GPUCTL_RUN_ASYNC is 1. The error
 * message goes into msg. */
gpud_status wait_run(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		     gpud_output *outs, size_t cap, size_t *nouts, gpud_run_info *info, char *msg,
		     size_t msglen);
gpud_status wait_call(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		      gpud_result *outs, size_t cap, size_t *nouts, gpud_run_info *info, char *msg,
		      size_t msglen);
/* gpud_call_to, blocking (no spinner). */
gpud_status wait_call_to(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
			 void *dst, size_t room, gpud_result *outs, size_t cap, size_t *nouts,
			 gpud_run_info *info, int *in_dst, char *msg, size_t msglen);

/* "1.5 MiB" into buf; returns the unit ("MiB"). */
const char *human_bytes(uint64_t b, char *buf, size_t len);

#endif
