/*
 * tests/harness.h — what the test programs and the benches share: a gpud of
 * their own in a fresh temporary directory (start it, wait until it answers,
 * stop it), processes timed from fork to exit, order statistics and a seeded
 * random generator.
 *
 * It depends on no test framework (the benches do not link Check): a function
 * that can fail returns 0 or -1 and writes what went wrong into the caller's
 * buffer msg (len bytes; msg may be NULL). Check tests wrap the calls in
 * ck_assert; benches print the message and exit.
 *
 * Nothing here is thread-safe unless its comment says so.
 */
#ifndef GPUD_TESTS_HARNESS_H
#define GPUD_TESTS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gpud/client.h>

/* --- gpud ------------------------------------------------------------------------------- */

/* How to start gpud. Zero-initialise and set what you need. */
typedef struct harness_gpud_opts {
	const char *bin;             /* gpud's path (no PATH search); NULL: $GPUD_BIN */
	const char *backend;         /* --backend; NULL: $GPUD_BACKEND if set, else ... */
	const char *default_backend; /* ... this; NULL: no --backend (gpud's own default) */
	const char *config;          /* INI text for DIR/gpud.conf, passed with --config */
	const char *const *args;     /* more arguments, NULL-terminated */
	const char *listen;   /* --listen URL, where the harness waits; NULL: ipc://DIR/gpud.sock */
	int listen_in_config; /* no --listen: config's listen names that URL (a reload's tests) */
	const char *const *env; /* "NAME=VALUE" added to gpud's environment, NULL-terminated */
	const char *parent;     /* where DIR is made; NULL: harness_tmp_parent() */
	const char *prefix;     /* DIR is PARENT/PREFIX-XXXXXX; NULL: "gpud" */
	unsigned dir_mode;      /* chmod DIR (0755: other users reach the socket); 0: 0700 */
	double timeout_s;       /* how long to wait for the first answer; 0: 10 s */
	int die_with_parent;    /* PR_SET_PDEATHSIG SIGKILL: gpud goes when the thread that
					started it does (a forked test that _exits takes it along) */
	int no_wait;            /* return once gpud is started, without waiting for an answer:
				   the caller waits its own way (tests/e2e/notify.c: READY=1) */
	const char *cgroup;     /* a cgroup's directory gpud joins (its cgroup.procs) before
				   exec; a start that cannot join it fails, naming why */
} harness_gpud_opts;

/* A gpud and its directory. Zero-initialise before first use. */
typedef struct harness_gpud {
	char dir[128];       /* DIR: socket, log, config (an ipc:// path must fit in 108 bytes) */
	char url[256];       /* the URL gpud was started on (opts.listen or the ipc:// default) */
	char log[160];       /* DIR/gpud.log: gpud's stdout and stderr, appended to by each start */
	char conf[160];      /* DIR/gpud.conf when opts.config was given, else "" */
	const char *backend; /* the --backend given (NULL: none) */
	pid_t pid;           /* 0: never started */
	int reaped;          /* it has exited and was waited for: wstatus says how */
	int wstatus;         /* its wait status (see harness_describe_wait) */
	int killed;          /* it had to be killed (SIGKILL) */
} harness_gpud;

/*
 * Makes g->dir (PARENT/PREFIX-XXXXXX with mode opts->dir_mode) and sets
 * g->log, unless g->dir is set already. For callers that write files there
 * (inputs, a config naming them) before harness_gpud_start. opts may be NULL.
 */
int harness_gpud_dir(harness_gpud *g, const harness_gpud_opts *opts, char *msg, size_t len);

/*
 * Starts gpud in g->dir (made first unless set: a g whose gpud was stopped
 * starts again in the same directory): `BIN --listen URL [--backend B]
 * [--config DIR/gpud.conf] ARGS...` (no --listen URL with listen_in_config), stdin from /dev/null, stdout and stderr
 * appended to g->log. Then (unless opts->no_wait) waits, polling every 20 ms,
 * until a gpud_connect to g->url succeeds. Fails when gpud exits meanwhile (the message says how:
 * exit status or signal) or when opts->timeout_s pass (gpud is then killed);
 * either way the message names the log, and the directory stays for it.
 */
int harness_gpud_start(harness_gpud *g, const harness_gpud_opts *opts, char *msg, size_t len);

/* Waits up to timeout_s for gpud to exit by itself (nothing sent): 0 once it has (g->wstatus
 * says how; also when it had already), -1 while it still runs. */
int harness_gpud_wait(harness_gpud *g, double timeout_s);

/*
 * Stops gpud: SIGTERM (unless it has exited already), waits up to timeout_s,
 * then SIGKILL (g->killed). 0 if gpud exited with status 0 by itself, else -1
 * with the wait status described. 0 if it was never started.
 */
int harness_gpud_stop(harness_gpud *g, double timeout_s, char *msg, size_t len);

/* Kills gpud if it still runs, removes g->dir with everything in it, and zeroes g. */
int harness_gpud_remove(harness_gpud *g);

/*
 * Each step of GPUD_FAIL_DEVICE (open:SLOT, start:SLOT) for SLOT 0..ndev-1
 * injected in turn into a start with opts (which must list ndev devices):
 * gpud exits 1 (never a signal: closing the devices that opened, started or
 * not, must not abort) with the simulated failure and the device's slot in
 * its log. 0, or -1 with msg.
 */
/*
 * One round of the stale-data check between two tenants: a writes `bytes`
 * (a multiple of 8) of marker words (HARNESS_MARKER | i) into a new buffer
 * and frees it; b allocates as many bytes without data and reads them back:
 * each must be zero. *a_freed and *b_new get the handles (b's buffer is the
 * caller's to free). 0, or -1 with msg naming the first non-zero word.
 */
#define HARNESS_MARKER 0x57A1E00000000000ull
int harness_stale_round(gpud_client *a, gpud_client *b, size_t bytes, gpud_handle *a_freed,
			gpud_handle *b_new, char *msg, size_t len);

int harness_gpud_device_faults(const harness_gpud_opts *opts, int ndev, char *msg, size_t len);

/* --- processes and files ------------------------------------------------------------------- */

/* $TMPDIR when set and at most 48 bytes (an ipc:// path must fit in 108), else "/tmp". */
const char *harness_tmp_parent(void);

/* mkdtemp of PARENT/PREFIX-XXXXXX into buf (parent NULL: harness_tmp_parent()). */
int harness_mkdtemp(char *buf, size_t buflen, const char *parent, const char *prefix, char *msg,
		    size_t len);

/* rm -rf path (not following links): 0 (also when there was nothing), or -1 if something stayed. */
int harness_rm_tree(const char *path);

/* Writes text to path (created or truncated). */
int harness_write_text(const char *path, const char *text, char *msg, size_t len);

/* Reads a whole text file into buf (cap bytes, always terminated): its length, or -1. */
long harness_read_text(const char *path, char *buf, size_t cap);

/* Copies the file at path to stderr between "----- title (path) -----" lines (first MiB). */
void harness_dump_file(const char *title, const char *path);

/* "exited with status N", "was killed by signal N (name)", ... */
void harness_describe_wait(int wstatus, char *buf, size_t len);

/* waitpid for up to timeout_s: 0 with *wstatus set, or -1 while pid still runs. A pid
 * that cannot be waited for counts as exited with 127. Thread-safe. */
int harness_wait_pid(pid_t pid, double timeout_s, int *wstatus);

/*
 * fork + exec (argv[0] searched in PATH when it has no '/') + wait, with the
 * child's stdout to stdout_path (truncated; "/dev/null" to discard) unless
 * that is NULL. Flushes this process's stdio first. Returns the wall seconds
 * from fork to the end of the wait, with the wait status in *wstatus (127 if
 * the exec failed), or -1 if it could not fork.
 */
double harness_run_timed(char *const argv[], const char *stdout_path, int *wstatus);

/* --- time and statistics (thread-safe) ---------------------------------------------------- */

double harness_now_s(void); /* CLOCK_MONOTONIC, seconds */
void harness_sleep_ms(int ms);

void harness_sort(double *v, size_t n); /* ascending, in place */

/* Both sort v in place. The median of an even n is the mean of the middle two;
 * the p-th percentile (p in [0, 1]) is v[round(p * (n - 1))]. NaN if n is 0. */
double harness_median(double *v, size_t n);
double harness_percentile(double *v, size_t n, double p);

/* SplitMix64: the next number of the sequence *state, and a double in [0, 1)
 * from its top 53 bits. Thread-safe for distinct states. */
uint64_t harness_rng_next(uint64_t *state);
double harness_rng_unit(uint64_t *state);

#endif
