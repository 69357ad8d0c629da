/*
 * tests/harness.c — gpud on a temporary socket for tests and benches, timed
 * processes, statistics; see harness.h.
 */
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpud/client.h>

extern char **environ;

__attribute__((format(printf, 3, 4))) static int fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (msg != NULL && len > 0) {
		va_start(ap, fmt);
		vsnprintf(msg, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* --- time and statistics ------------------------------------------------------------------- */

double harness_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void harness_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void harness_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(double), cmp_double);
}

double harness_median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	harness_sort(v, n);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double harness_percentile(double *v, size_t n, double p)
{
	if (n == 0)
		return NAN;
	harness_sort(v, n);
	return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

uint64_t harness_rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double harness_rng_unit(uint64_t *state)
{
	return (double)(harness_rng_next(state) >> 11) * 0x1.0p-53;
}

/* --- processes and files ------------------------------------------------------------------- */

void harness_describe_wait(int wstatus, char *buf, size_t len)
{
	if (WIFEXITED(wstatus))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(wstatus),
			 strsignal(WTERMSIG(wstatus)));
	else
		snprintf(buf, len, "ended with wait status 0x%x", wstatus);
}

int harness_wait_pid(pid_t pid, double timeout_s, int *wstatus)
{
	double deadline = harness_now_s() + timeout_s;
	for (;;) {
		pid_t r = waitpid(pid, wstatus, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR) {
			*wstatus = 0x7f00; /* "exited with status 127": lost track of it */
			return 0;
		}
		if (harness_now_s() >= deadline)
			return -1;
		harness_sleep_ms(5);
	}
}

double harness_run_timed(char *const argv[], const char *stdout_path, int *wstatus)
{
	fflush(NULL); /* what we printed comes before what the child prints */
	double t0 = harness_now_s();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (stdout_path != NULL) {
			int fd = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || dup2(fd, 1) < 0)
				_exit(127);
			if (fd != 1)
				close(fd);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	pid_t r;
	while ((r = waitpid(pid, wstatus, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		*wstatus = 0x7f00; /* lost track of it: "exited with status 127" */
	return harness_now_s() - t0;
}

const char *harness_tmp_parent(void)
{
	const char *tmp = getenv("TMPDIR");
	return tmp != NULL && tmp[0] != '\0' && strlen(tmp) <= 48 ? tmp : "/tmp";
}

int harness_mkdtemp(char *buf, size_t buflen, const char *parent, const char *prefix, char *msg,
		    size_t len)
{
	int n = snprintf(buf, buflen, "%s/%s-XXXXXX", parent ? parent : harness_tmp_parent(),
			 prefix ? prefix : "gpud");
	if (n < 0 || (size_t)n >= buflen)
		return fail(msg, len, "directory name too long: %s", buf);
	if (mkdtemp(buf) == NULL)
		return fail(msg, len, "mkdtemp %s: %s", buf, strerror(errno));
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int harness_rm_tree(const char *path)
{
	struct stat st;
	if (path == NULL || path[0] == '\0' || (lstat(path, &st) != 0 && errno == ENOENT))
		return 0; /* nothing to remove */
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int harness_write_text(const char *path, const char *text, char *msg, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (f == NULL)
		return fail(msg, len, "cannot create %s: %s", path, strerror(errno));
	int bad = fputs(text, f) < 0;
	if (fclose(f) != 0 || bad)
		return fail(msg, len, "cannot write %s: %s", path, strerror(errno));
	return 0;
}

long harness_read_text(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	buf[0] = '\0';
	if (f == NULL)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (long)n;
}

void harness_dump_file(const char *title, const char *path)
{
	char *buf = malloc(1 << 20);
	if (buf == NULL)
		return;
	if (harness_read_text(path, buf, 1 << 20) >= 0) {
		fprintf(stderr, "----- %s (%s) -----\n%s%s----- end of %s -----\n", title, path,
			buf, buf[0] && buf[strlen(buf) - 1] != '\n' ? "\n" : "", title);
	}
	free(buf);
}

/* --- gpud ---------------------------------------------------------------------------------- */

int harness_gpud_dir(harness_gpud *g, const harness_gpud_opts *opts, char *msg, size_t len)
{
	static const harness_gpud_opts none;
	if (opts == NULL)
		opts = &none;
	if (g->dir[0] != '\0')
		return 0;
	if (harness_mkdtemp(g->dir, sizeof(g->dir), opts->parent, opts->prefix, msg, len) != 0) {
		g->dir[0] = '\0';
		return -1;
	}
	snprintf(g->log, sizeof(g->log), "%s/gpud.log", g->dir);
	if (opts->dir_mode != 0 && chmod(g->dir, (mode_t)opts->dir_mode) != 0)
		return fail(msg, len, "chmod %s: %s", g->dir, strerror(errno));
	return 0;
}

/* environ with the NAME=VALUE strings of add in place of their names' entries; malloc'd. */
static char **env_with(const char *const *add)
{
	size_t n = 0, k = 0, na = 0;
	while (environ[n] != NULL)
		n++;
	while (add != NULL && add[na] != NULL)
		na++;
	char **env = malloc((n + na + 1) * sizeof(char *));
	if (env == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int replaced = 0;
		for (size_t j = 0; j < na && !replaced; j++) {
			size_t name = strcspn(add[j], "=");
			replaced = !strncmp(environ[i], add[j], name) && environ[i][name] == '=';
		}
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < na; j++)
		env[k++] = (char *)add[j];
	env[k] = NULL;
	return env;
}

/* The calling process into the cgroup at dir (v1 and v2 both take a pid in
 * cgroup.procs). Between fork and exec: only async-signal-safe calls. */
static int join_cgroup(const char *dir)
{
	char path[512], pid[24];
	int n = snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* the pid in decimal, by hand: snprintf is not async-signal-safe */
	char *p = pid + sizeof(pid);
	*--p = '\0';
	for (long v = (long)getpid(); v > 0 || *p == '\0'; v /= 10)
		*--p = (char)('0' + v % 10);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, p, strlen(p));
	int e = errno;
	close(fd);
	errno = e;
	return w == (ssize_t)strlen(p) ? 0 : -1;
}

int harness_gpud_start(harness_gpud *g, const harness_gpud_opts *opts, char *msg, size_t len)
{
	static const harness_gpud_opts none;
	const char *argv[64];
	char how[160], last[512] = "";
	int n = 0;

	if (opts == NULL)
		opts = &none;
	if (g->pid > 0 && !g->reaped)
		return fail(msg, len, "gpud is running already (pid %d)", (int)g->pid);
	const char *bin = opts->bin ? opts->bin : getenv("GPUD_BIN");
	const char *backend = opts->backend ? opts->backend : getenv("GPUD_BACKEND");
	if (backend == NULL || backend[0] == '\0')
		backend = opts->default_backend;
	if (bin == NULL || bin[0] == '\0')
		return fail(msg, len, "no gpud to start: pass its path or set GPUD_BIN");
	if (harness_gpud_dir(g, opts, msg, len) != 0)
		return -1;
	int un = opts->listen ? snprintf(g->url, sizeof(g->url), "%s", opts->listen)
			      : snprintf(g->url, sizeof(g->url), "ipc://%s/gpud.sock", g->dir);
	if (un < 0 || (size_t)un >= sizeof(g->url))
		return fail(msg, len, "listen URL too long: %s", g->url);
	g->conf[0] = '\0';
	if (opts->config != NULL) {
		snprintf(g->conf, sizeof(g->conf), "%s/gpud.conf", g->dir);
		if (harness_write_text(g->conf, opts->config, msg, len) != 0)
			return -1;
	}

	argv[n++] = bin;
	if (!opts->listen_in_config) {
		argv[n++] = "--listen";
		argv[n++] = g->url;
	}
	if (backend != NULL) {
		argv[n++] = "--backend";
		argv[n++] = backend;
	}
	if (opts->config != NULL) {
		argv[n++] = "--config";
		argv[n++] = g->conf;
	}
	/* GPUD_TEST_DEVICES (e.g. 0,1): the suites on several GPUs; a test's own
	 * --device comes later and wins */
	const char *devs = getenv("GPUD_TEST_DEVICES");
	if (devs && devs[0] && backend && strcmp(backend, "cpu") != 0) {
		argv[n++] = "--device";
		argv[n++] = devs;
	}
	for (int i = 0; opts->args != NULL && opts->args[i] != NULL; i++) {
		if (n == 63)
			return fail(msg, len, "too many arguments for gpud");
		argv[n++] = opts->args[i];
	}
	argv[n] = NULL;

	int logfd = open(g->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0)
		return fail(msg, len, "cannot open %s: %s", g->log, strerror(errno));
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	char **env = env_with(opts->env);
	if (nul < 0 || env == NULL) {
		close(logfd);
		if (nul >= 0)
			close(nul);
		free(env);
		return fail(msg, len, "cannot prepare gpud's stdin or environment");
	}
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		if (opts->die_with_parent) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent) /* the parent went before prctl */
				_exit(127);
		}
		if (dup2(nul, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
			_exit(127);
		if (opts->cgroup && join_cgroup(opts->cgroup) != 0) {
			dprintf(2, "harness: cannot join the cgroup %s: %s\n", opts->cgroup,
				strerror(errno));
			_exit(126);
		}
		execve(bin, (char *const *)argv, env);
		dprintf(2, "harness: cannot exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	int fork_errno = errno;
	close(logfd);
	close(nul);
	free(env);
	if (pid < 0)
		return fail(msg, len, "fork: %s", strerror(fork_errno));
	g->pid = pid;
	g->reaped = g->killed = g->wstatus = 0;
	g->backend = backend;
	if (opts->no_wait)
		return 0;

	double timeout = opts->timeout_s > 0 ? opts->timeout_s : 10.0;
	double deadline = harness_now_s() + timeout;
	for (;;) {
		if (waitpid(pid, &g->wstatus, WNOHANG) == pid) {
			g->reaped = 1;
			harness_describe_wait(g->wstatus, how, sizeof(how));
			return fail(msg, len, "gpud %s while starting (log: %s)", how, g->log);
		}
		gpud_client *c;
		if (gpud_connect(g->url, &c) == GPUD_OK) {
			gpud_close(c);
			return 0;
		}
		snprintf(last, sizeof(last), "%s", gpud_errmsg(c));
		gpud_close(c);
		if (harness_now_s() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &g->wstatus, 0);
			g->reaped = g->killed = 1;
			return fail(msg, len, "gpud did not answer on %s within %g s: %s (log: %s)",
				    g->url, timeout, last, g->log);
		}
		harness_sleep_ms(20);
	}
}

int harness_stale_round(gpud_client *a, gpud_client *b, size_t bytes, gpud_handle *a_freed,
			gpud_handle *b_new, char *msg, size_t len)
{
	uint64_t n = bytes / 8;
	uint64_t *v = malloc(n ? n * 8 : 8);
	if (v == NULL)
		return fail(msg, len, "out of memory for %zu bytes", bytes);
	for (uint64_t i = 0; i < n; i++)
		v[i] = HARNESS_MARKER | i;
	gpud_status st = gpud_alloc(a, GPUD_I64, 1, &n, v, a_freed);
	if (st != GPUD_OK) {
		free(v);
		return fail(msg, len, "%zu bytes: the first tenant's alloc: %s", bytes,
			    gpud_errmsg(a));
	}
	if ((st = gpud_free(a, a_freed, 1)) != GPUD_OK) {
		free(v);
		return fail(msg, len, "%zu bytes: the first tenant's free: %s", bytes,
			    gpud_errmsg(a));
	}
	if ((st = gpud_alloc(b, GPUD_I64, 1, &n, NULL, b_new)) != GPUD_OK) {
		free(v);
		return fail(msg, len, "%zu bytes: the second tenant's alloc: %s", bytes,
			    gpud_errmsg(b));
	}
	memset(v, 0x5a, n * 8); /* what a download that wrote nothing would leave */
	if (n > 0 && (st = gpud_download_range(b, *b_new, 0, v, n * 8)) != GPUD_OK) {
		free(v);
		return fail(msg, len, "%zu bytes: the second tenant's download: %s", bytes,
			    gpud_errmsg(b));
	}
	for (uint64_t i = 0; i < n; i++)
		if (v[i] != 0) {
			uint64_t w = v[i];
			free(v);
			return fail(msg, len,
				    "%zu bytes: the second tenant's new buffer holds %#llx at byte "
				    "%llu (%s), expected zeros",
				    bytes, (unsigned long long)w, (unsigned long long)(i * 8),
				    (w & ~0xFFFFFFFFFFFull) == HARNESS_MARKER
					    ? "the first tenant's freed data"
					    : "not a marker");
		}
	free(v);
	return 0;
}

int harness_gpud_device_faults(const harness_gpud_opts *opts, int ndev, char *msg, size_t len)
{
	static const char *const steps[] = {"open", "start"};
	for (int st = 0; st < 2; st++)
		for (int slot = 0; slot < ndev; slot++) {
			char fault[64], want[96], log[1 << 16], how[160];
			const char *env[34];
			int ne = 0;
			snprintf(fault, sizeof(fault), "GPUD_FAIL_DEVICE=%s:%d", steps[st], slot);
			env[ne++] = fault;
			for (int i = 0; opts->env && opts->env[i] && ne < 33; i++)
				env[ne++] = opts->env[i];
			env[ne] = NULL;
			harness_gpud_opts o = *opts;
			o.env = env;
			harness_gpud g;
			memset(&g, 0, sizeof(g));
			int rv = harness_gpud_start(&g, &o, msg, len);
			if (rv == 0) {
				harness_gpud_remove(&g);
				return fail(msg, len, "%s: gpud started", fault + 17);
			}
			if (!g.reaped) {
				harness_gpud_remove(&g);
				return -1; /* msg says why */
			}
			harness_describe_wait(g.wstatus, how, sizeof(how));
			snprintf(want, sizeof(want),
				 "its %s failed (simulated: GPUD_FAIL_DEVICE=%s:%d", steps[st],
				 steps[st], slot);
			int ok = WIFEXITED(g.wstatus) && WEXITSTATUS(g.wstatus) == 1 &&
				 harness_read_text(g.log, log, sizeof(log)) >= 0 &&
				 strstr(log, want);
			if (!ok)
				harness_dump_file("gpud log", g.log);
			harness_gpud_remove(&g);
			if (!ok)
				return fail(msg, len,
					    "%s: gpud %s, expected exit status 1 with '%s' in its "
					    "log (above)",
					    fault + 17, how, want);
		}
	return 0;
}

int harness_gpud_wait(harness_gpud *g, double timeout_s)
{
	if (g->pid <= 0 || g->reaped)
		return 0;
	if (harness_wait_pid(g->pid, timeout_s, &g->wstatus) != 0)
		return -1;
	g->reaped = 1;
	return 0;
}

int harness_gpud_stop(harness_gpud *g, double timeout_s, char *msg, size_t len)
{
	char how[160];

	if (g->pid <= 0)
		return 0;
	if (!g->reaped) {
		kill(g->pid, SIGTERM);
		if (harness_wait_pid(g->pid, timeout_s, &g->wstatus) != 0) {
			kill(g->pid, SIGKILL);
			waitpid(g->pid, &g->wstatus, 0);
			g->killed = 1;
		}
		g->reaped = 1;
	}
	if (g->killed)
		return fail(msg, len,
			    "gpud was killed: it did not exit within %g s of SIGTERM "
			    "(log: %s)",
			    timeout_s, g->log);
	if (!WIFEXITED(g->wstatus) || WEXITSTATUS(g->wstatus) != 0) {
		harness_describe_wait(g->wstatus, how, sizeof(how));
		return fail(msg, len, "gpud %s, expected exit status 0 (log: %s)", how, g->log);
	}
	return 0;
}

int harness_gpud_remove(harness_gpud *g)
{
	if (g->pid > 0 && !g->reaped) {
		kill(g->pid, SIGKILL);
		waitpid(g->pid, &g->wstatus, 0);
	}
	int rv = harness_rm_tree(g->dir);
	memset(g, 0, sizeof(*g));
	return rv;
}
