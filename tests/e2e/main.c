/*
 * tests/test_e2e.c — end-to-end tests: every test gets a real gpud of its own
 * (started by a checked fixture on a private ipc:// socket, stopped with
 * SIGTERM and required to exit 0), driven through libgpud-client, through the
 * gpuctl binary, and through a plain nng REQ socket speaking the wire format
 * by hand.
 *
 *   GPUD_BIN=/abs/gpud GPUCTL_BIN=/abs/gpuctl [GPUD_BACKEND=cpu|cuda|auto] e2e
 *
 * Works in fork mode (the default) and with CK_FORK=no (make test-valgrind).
 * Random inputs come from fixed seeds, so a failure reproduces.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include <gpud/client.h>
#include <gpud/npy.h>

/* Protocol constants, restated here (not taken from proto/) on purpose: the
 * raw tests are a second, independent reading of proto/gpud.proto. */
#define WIRE_VERSION 1u
#define ST_OK 0
#define ST_INVALID_ARGUMENT 1
#define ST_TOO_LARGE 5
#define ST_PROTOCOL 7
#define ST_NOT_FOUND 2

/* The region socket's messages (proto/shm.h), restated for the same reason. */
typedef struct t_shm_register {
	char magic[8];
	uint8_t key[16];
	uint64_t size;
	uint32_t flags, reserved;
} t_shm_register;
typedef struct t_shm_reply {
	int32_t status;
	uint32_t pinned;
	uint64_t region;
	char message[496];
} t_shm_reply;

static const char *gpud_bin, *gpuctl_bin, *backend_env;
static char base_dir[256];       /* made by main; every test's directory lives in it */
static char self_path[PATH_MAX]; /* this program, for --raw-send */

/* The fixture's gpud. */
static char dir[512], url[600], logpath[600];
static pid_t gpud_pid = -1;
static int gpud_reaped, gpud_wstatus;

/* --- small helpers ------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void path_in_dir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Reads a whole text file into buf (cap bytes, always terminated); -1 if unreadable. */
static long read_text(const char *path, char *buf, size_t cap)
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

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	ck_assert_msg(f != NULL, "cannot create %s: %s", path, strerror(errno));
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

static void dump_file(const char *title, const char *path)
{
	char *buf = malloc(1 << 20);
	if (buf == NULL)
		return;
	if (read_text(path, buf, 1 << 20) >= 0) {
		fprintf(stderr, "----- %s (%s) -----\n%s%s----- end of %s -----\n", title, path,
			buf, buf[0] && buf[strlen(buf) - 1] != '\n' ? "\n" : "", title);
	}
	free(buf);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_tree(const char *path)
{
	if (path[0])
		nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void describe_wait(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "ended with wait status 0x%x", st);
}

/* Waits up to timeout_s for pid; 0 with *st set, or -1 if it is still running. */
static int wait_pid_timeout(pid_t pid, double timeout_s, int *st)
{
	double deadline = now_s() + timeout_s;
	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR) {
			*st = 0x7f00; /* "exited with 127": lost track of it */
			return 0;
		}
		if (now_s() >= deadline)
			return -1;
		sleep_ms(5);
	}
}

/* SplitMix64: a deterministic generator per seed, usable from any thread. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) /* [0, 1) */
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

/* --- the gpud fixture --------------------------------------------------------------- */

static const char *expected_backend(void)
{
	return backend_env;
}

static const char *gpud_config_text; /* written to DIR/gpud.conf and passed, if set */

static void start_gpud(const char *const *extra)
{
	const char *argv[32];
	int n = 0;
	char confpath[700];

	snprintf(dir, sizeof(dir), "%s/t-XXXXXX", base_dir);
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	/* Other users reach the socket only through traversable directories. */
	chmod(base_dir, 0755);
	chmod(dir, 0755);
	snprintf(confpath, sizeof(confpath), "%s/gpud.conf", dir);
	if (gpud_config_text)
		write_text(confpath, gpud_config_text);
	snprintf(url, sizeof(url), "ipc://%s/gpud.sock", dir);
	snprintf(logpath, sizeof(logpath), "%s/gpud.log", dir);
	gpud_reaped = 0;
	gpud_wstatus = 0;

	argv[n++] = gpud_bin;
	argv[n++] = "--listen";
	argv[n++] = url;
	argv[n++] = "--backend";
	argv[n++] = backend_env;
	argv[n++] = "--log-level";
	argv[n++] = "debug";
	if (gpud_config_text) {
		argv[n++] = "--config";
		argv[n++] = confpath;
	}
	for (int i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;

	pid_t parent = getpid();
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* A test that fails in fork mode _exits without teardown: take gpud along. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDONLY);
		if (fd < 0 || nul < 0)
			_exit(127);
		dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(gpud_bin, (char *const *)argv);
		dprintf(2, "test_e2e: cannot exec %s: %s\n", gpud_bin, strerror(errno));
		_exit(127);
	}
	gpud_pid = pid;

	/* Wait until it answers a hello. */
	double deadline = now_s() + 10.0;
	char last[2048] = "";
	for (;;) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			char how[128];
			describe_wait(st, how, sizeof(how));
			gpud_reaped = 1;
			gpud_wstatus = st;
			dump_file("gpud log", logpath);
			ck_abort_msg("gpud %s while starting (log above)", how);
		}
		gpud_client *c;
		gpud_status rv = gpud_connect(url, &c);
		if (rv == GPUD_OK) {
			gpud_close(c);
			return;
		}
		snprintf(last, sizeof(last), "%s", gpud_errmsg(c));
		gpud_close(c);
		if (now_s() >= deadline) {
			dump_file("gpud log", logpath);
			ck_abort_msg("gpud did not answer on %s within 10 s: %s", url, last);
		}
		sleep_ms(20);
	}
}

/*
 * Sends SIGTERM (unless already reaped) and waits up to timeout_s. Returns 0
 * with the wait status in *st, or -1 when it had to be killed.
 */
static int stop_gpud(double timeout_s, int *st)
{
	if (gpud_pid <= 0)
		return *st = 0, 0;
	if (!gpud_reaped) {
		kill(gpud_pid, SIGTERM);
		if (wait_pid_timeout(gpud_pid, timeout_s, &gpud_wstatus) != 0) {
			kill(gpud_pid, SIGKILL);
			waitpid(gpud_pid, &gpud_wstatus, 0);
			gpud_reaped = 1;
			*st = gpud_wstatus;
			return -1;
		}
		gpud_reaped = 1;
	}
	*st = gpud_wstatus;
	return 0;
}

static void setup_default(void)
{
	start_gpud(NULL);
}

static void setup_small_messages(void)
{
	static const char *const extra[] = {"--max-message-size", "64KiB", NULL};
	start_gpud(extra);
}

static void gpud_teardown(void)
{
	int st = 0, killed;
	char how[128];

	if (gpud_pid <= 0)
		return; /* nothing started, or torn down already (nofork re-entry) */
	killed = stop_gpud(10.0, &st) != 0;
	int ok = !killed && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	describe_wait(st, how, sizeof(how));
	if (!ok)
		dump_file("gpud log", logpath);
	rm_tree(dir);
	gpud_pid = -1;
	ck_assert_msg(!killed, "gpud did not exit within 10 s of SIGTERM; killed it (log above)");
	ck_assert_msg(ok, "gpud %s after SIGTERM, expected exit status 0 (log above)", how);
}

/* --- gpuctl --------------------------------------------------------------------------- */

typedef struct ctl_result {
	int code; /* exit status, or 128 + signal */
	char cmd[1024];
	char out[65536];
	char err[16384];
} ctl_result;

/* Runs gpuctl ARGS... (NULL-terminated) with GPUD_URL=u, in the test's directory. */
static void ctl_runv(ctl_result *r, const char *u, va_list ap)
{
	static int seq;
	const char *argv[48];
	char outp[700], errp[700];
	int n = 0;
	size_t cl;

	argv[n++] = gpuctl_bin;
	cl = (size_t)snprintf(r->cmd, sizeof(r->cmd), "gpuctl");
	const char *a;
	while ((a = va_arg(ap, const char *)) != NULL && n < 47) {
		argv[n++] = a;
		if (cl < sizeof(r->cmd))
			cl += (size_t)snprintf(r->cmd + cl, sizeof(r->cmd) - cl, " %s", a);
	}
	argv[n] = NULL;
	seq++;
	snprintf(outp, sizeof(outp), "%s/ctl-%d.out", dir, seq);
	snprintf(errp, sizeof(errp), "%s/ctl-%d.err", dir, seq);

	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDONLY);
		if (fo < 0 || fe < 0 || nul < 0 || chdir(dir) != 0)
			_exit(126);
		dup2(nul, 0);
		dup2(fo, 1);
		dup2(fe, 2);
		setenv("GPUD_URL", u, 1);
		execv(gpuctl_bin, (char *const *)argv);
		dprintf(2, "test_e2e: cannot exec %s: %s\n", gpuctl_bin, strerror(errno));
		_exit(127);
	}
	int st;
	if (wait_pid_timeout(pid, 60.0, &st) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("'%s' did not finish within 60 s", r->cmd);
	}
	r->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	read_text(outp, r->out, sizeof(r->out));
	read_text(errp, r->err, sizeof(r->err));
	unlink(outp);
	unlink(errp);
}

static ctl_result *ctl_url(const char *u, ...)
{
	static ctl_result r;
	va_list ap;
	va_start(ap, u);
	ctl_runv(&r, u, ap);
	va_end(ap);
	return &r;
}

#define CTL(...) ctl_url(url, __VA_ARGS__, (const char *)NULL)
#define CTL_AT(u, ...) ctl_url(u, __VA_ARGS__, (const char *)NULL)

static void assert_ctl_ok(const ctl_result *r)
{
	ck_assert_msg(r->code == 0, "'%s' exited %d, expected 0\nstdout: %s\nstderr: %s", r->cmd,
		      r->code, r->out, r->err);
}

/* `gpuctl status` still works: the daemon survived whatever came before. */
static void assert_daemon_alive(const char *after)
{
	ctl_result *r = CTL("status");
	ck_assert_msg(r->code == 0 && strstr(r->out, "backend") != NULL,
		      "after %s: 'gpuctl status' exited %d\nstdout: %s\nstderr: %s", after, r->code,
		      r->out, r->err);
}

/*
 * Runs gpuctl with the given arguments and expects a failure: exit status
 * != 0 (or == want_code when that is > 0), stderr starting with
 * "gpuctl: error:" and containing `words`; then checks the daemon is alive.
 */
static void ctl_expect_error(int line, int want_code, const char *words, ...)
{
	static ctl_result r;
	va_list ap;

	va_start(ap, words);
	ctl_runv(&r, url, ap);
	va_end(ap);
	ck_assert_msg(r.code != 0,
		      "line %d: '%s' succeeded, expected an error with '%s'\nstdout: %s", line,
		      r.cmd, words, r.out);
	if (want_code > 0)
		ck_assert_msg(r.code == want_code,
			      "line %d: '%s' exited %d, expected %d\nstderr: %s", line, r.cmd,
			      r.code, want_code, r.err);
	ck_assert_msg(r.code < 128, "line %d: '%s' died of signal %d\nstderr: %s", line, r.cmd,
		      r.code - 128, r.err);
	ck_assert_msg(strncmp(r.err, "gpuctl: error:", 14) == 0,
		      "line %d: '%s': stderr does not start with 'gpuctl: error:': '%s'", line,
		      r.cmd, r.err);
	ck_assert_msg(strstr(r.err, words) != NULL,
		      "line %d: '%s': stderr does not mention '%s': '%s'", line, r.cmd, words,
		      r.err);
	char what[1100];
	snprintf(what, sizeof(what), "'%s' (line %d)", r.cmd, line);
	assert_daemon_alive(what);
}

#define CTL_FAIL(code, words, ...)                                                                 \
	ctl_expect_error(__LINE__, code, words, __VA_ARGS__, (const char *)NULL)

/* --- data and the reference periodogram ------------------------------------------------- */

/* Random non-uniform sample times, non-zero values of both signs, frequencies > 0. */
static void gen_ls(uint64_t seed, size_t nx, size_t nf, double *x, double *y, double *f)
{
	uint64_t s = seed;
	for (size_t i = 0; i < nx; i++) {
		x[i] = 20.0 * rng_unit(&s);
		double mag = 0.1 + 2.0 * rng_unit(&s);
		y[i] = (rng_next(&s) & 1) ? mag : -mag * 0.5;
		y[i] += 0.3 * cos(1.7 * x[i]); /* a tone to find; stays non-zero */
		if (y[i] == 0)
			y[i] = 0.25;
	}
	for (size_t i = 0; i < nf; i++)
		f[i] = 0.01 + 5.0 * rng_unit(&s);
}

static void round_to_f32(double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (double)(float)v[i];
}

/* v as a malloc'd array of dtype dt (F32, F64, I32 or I64). */
static void *to_dtype(const double *v, size_t n, gpud_dtype dt)
{
	void *p = malloc(n * gpud_dtype_size(dt) + 1);
	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++) {
		switch (dt) {
		case GPUD_F32:
			((float *)p)[i] = (float)v[i];
			break;
		case GPUD_F64:
			((double *)p)[i] = v[i];
			break;
		case GPUD_I32:
			((int32_t *)p)[i] = (int32_t)v[i];
			break;
		case GPUD_I64:
			((int64_t *)p)[i] = (int64_t)v[i];
			break;
		default:
			break;
		}
	}
	return p;
}

static double elem(const void *p, gpud_dtype dt, size_t i)
{
	return dt == GPUD_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* scipy.signal.lombscargle (scipy <= 1.14), written out as its Cython loop. */
static void ls_ref(const double *x, const double *y, size_t nx, const double *f, size_t nf,
		   int precenter, int normalize, double *out)
{
	double mean = 0, dot = 0;
	for (size_t j = 0; j < nx; j++) {
		mean += y[j];
		dot += y[j] * y[j];
	}
	mean /= (double)nx;
	for (size_t i = 0; i < nf; i++) {
		double xc = 0, xs = 0, cc = 0, ss = 0, cs = 0;
		for (size_t j = 0; j < nx; j++) {
			double yj = precenter ? y[j] - mean : y[j];
			double c = cos(f[i] * x[j]), s = sin(f[i] * x[j]);
			xc += yj * c;
			xs += yj * s;
			cc += c * c;
			ss += s * s;
			cs += c * s;
		}
		double tau = atan2(2 * cs, cc - ss) / (2 * f[i]);
		double c_tau = cos(f[i] * tau), s_tau = sin(f[i] * tau);
		double c_tau2 = c_tau * c_tau, s_tau2 = s_tau * s_tau, cs_tau = 2 * c_tau * s_tau;
		out[i] = 0.5 * (((c_tau * xc + s_tau * xs) * (c_tau * xc + s_tau * xs)) /
					(c_tau2 * cc + cs_tau * cs + s_tau2 * ss) +
				((c_tau * xs - s_tau * xc) * (c_tau * xs - s_tau * xc)) /
					(c_tau2 * ss - cs_tau * cs + s_tau2 * cc));
		if (normalize)
			out[i] *= 2 / dot;
	}
}

/*
 * Compares got (dtype dt) with ref: returns max |got - ref| / max |ref|, or
 * INFINITY if got has a NaN or infinity. *bad gets the worst index.
 */
static double rel_err(const void *got, gpud_dtype dt, const double *ref, size_t n, size_t *bad)
{
	double maxref = 0, maxerr = 0;
	*bad = 0;
	for (size_t i = 0; i < n; i++)
		if (fabs(ref[i]) > maxref)
			maxref = fabs(ref[i]);
	for (size_t i = 0; i < n; i++) {
		double g = elem(got, dt, i);
		if (!isfinite(g)) {
			*bad = i;
			return INFINITY;
		}
		if (fabs(g - ref[i]) > maxerr) {
			maxerr = fabs(g - ref[i]);
			*bad = i;
		}
	}
	return maxref > 0 ? maxerr / maxref : maxerr;
}

static double tol_for(gpud_dtype dt)
{
	return dt == GPUD_F64 ? 1e-9 : 1e-4;
}

static void assert_matches(const void *got, gpud_dtype dt, const double *ref, size_t n,
			   const char *what)
{
	size_t bad;
	double e = rel_err(got, dt, ref, n, &bad);
	ck_assert_msg(e <= tol_for(dt),
		      "%s: %s result differs from the reference: relative error %.3g > %.0g "
		      "(element %zu: got %.17g, expected %.17g)",
		      what, gpud_dtype_name(dt), e, tol_for(dt), bad, elem(got, dt, bad), ref[bad]);
}

static void save_npy(const char *path, gpud_dtype dt, int ndim, const uint64_t *shape,
		     const void *data)
{
	gpud_array a;
	char err[512];
	memset(&a, 0, sizeof(a));
	a.dtype = dt;
	a.ndim = ndim;
	memcpy(a.shape, shape, (size_t)ndim * sizeof(uint64_t));
	a.data = (void *)data;
	a.nbytes = gpud_shape_bytes(shape, ndim, gpud_dtype_size(dt));
	ck_assert_msg(gpud_npy_save(path, &a, err, sizeof(err)) == 0, "gpud_npy_save: %s", err);
}

static void save_vec(const char *path, gpud_dtype dt, const double *v, size_t n)
{
	uint64_t shape[1] = {n};
	void *p = to_dtype(v, n, dt);
	save_npy(path, dt, 1, shape, p);
	free(p);
}

/* --- libgpud-client helpers ---------------------------------------------------------------- */

/* x, y and freqs as float64 .npy files PREFIXx.npy, PREFIXy.npy, PREFIXf.npy in the test's
 * directory; their paths (700 bytes each) in px, py, pf. */
static void save_ls_inputs(const char *prefix, const double *x, const double *y, size_t nx,
			   const double *f, size_t nf, char *px, char *py, char *pf)
{
	char name[64];
	snprintf(name, sizeof(name), "%sx.npy", prefix);
	path_in_dir(px, 700, name);
	snprintf(name, sizeof(name), "%sy.npy", prefix);
	path_in_dir(py, 700, name);
	snprintf(name, sizeof(name), "%sf.npy", prefix);
	path_in_dir(pf, 700, name);
	save_vec(px, GPUD_F64, x, nx);
	save_vec(py, GPUD_F64, y, nx);
	save_vec(pf, GPUD_F64, f, nf);
}

static gpud_client *lib_connect(void)
{
	gpud_client *c;
	gpud_status st = gpud_connect(url, &c);
	ck_assert_msg(st == GPUD_OK, "gpud_connect(%s): %s: %s", url, gpud_strerror(st),
		      gpud_errmsg(c));
	gpud_set_timeout(c, 60000);
	return c;
}

#define LIB_OK(c, call)                                                                            \
	do {                                                                                       \
		gpud_status st_ = (call);                                                          \
		ck_assert_msg(st_ == GPUD_OK, "%s: %s: %s", #call, gpud_strerror(st_),             \
			      gpud_errmsg(c));                                                     \
	} while (0)

/* Expects call to fail with status want and a message containing words. */
#define LIB_FAIL(c, call, want, words)                                                             \
	do {                                                                                       \
		gpud_status st_ = (call);                                                          \
		ck_assert_msg(st_ == (want), "%s: got %d (%s: %s), expected %d (%s)", #call,       \
			      (int)st_, gpud_strerror(st_), gpud_errmsg(c), (int)(want),           \
			      gpud_strerror(want));                                                \
		ck_assert_msg(strstr(gpud_errmsg(c), (words)) != NULL,                             \
			      "%s: message '%s' does not mention '%s'", #call, gpud_errmsg(c),     \
			      (words));                                                            \
	} while (0)

static gpud_daemon_status lib_status(gpud_client *c)
{
	gpud_daemon_status s;
	LIB_OK(c, gpud_status_get(c, &s));
	return s;
}

/* Waits (up to timeout_s) until the daemon holds no buffers; returns the last status. */
static gpud_daemon_status wait_no_buffers(gpud_client *c, double timeout_s)
{
	double deadline = now_s() + timeout_s;
	gpud_daemon_status s;
	for (;;) {
		s = lib_status(c);
		if ((s.buffers == 0 && s.bytes_in_use == 0) || now_s() >= deadline)
			return s;
		sleep_ms(10);
	}
}

typedef struct ls_result {
	gpud_status st;
	char msg[1024];
	gpud_output out;
	size_t nout;
	gpud_run_info info;
} ls_result;

/*
 * One lombscargle through the library without asserting (usable from any
 * thread): upload, run (into pgram_buf if non-zero), download into result
 * (nf elements of dt), free what it made.
 */
static void ls_lib_run(gpud_client *c, gpud_dtype dt, const double *x, const double *y, size_t nx,
		       const double *f, size_t nf, int precenter, int normalize,
		       gpud_handle pgram_buf, void *result, ls_result *res)
{
	uint64_t snx = nx, snf = nf;
	gpud_handle h[4] = {0, 0, 0, 0};
	int nh = 0;
	void *bx = to_dtype(x, nx, dt), *by = to_dtype(y, nx, dt), *bf = to_dtype(f, nf, dt);
	const char *step = "alloc x";

	memset(res, 0, sizeof(*res));
	if ((res->st = gpud_alloc(c, dt, 1, &snx, bx, &h[nh])) != GPUD_OK)
		goto out;
	nh++;
	step = "alloc y";
	if ((res->st = gpud_alloc(c, dt, 1, &snx, by, &h[nh])) != GPUD_OK)
		goto out;
	nh++;
	step = "alloc freqs";
	if ((res->st = gpud_alloc(c, dt, 1, &snf, bf, &h[nh])) != GPUD_OK)
		goto out;
	nh++;
	gpud_arg args[6];
	size_t na = 0;
	args[na++] = gpud_arg_buffer("x", h[0]);
	args[na++] = gpud_arg_buffer("y", h[1]);
	args[na++] = gpud_arg_buffer("freqs", h[2]);
	args[na++] = gpud_arg_bool("precenter", precenter);
	args[na++] = gpud_arg_bool("normalize", normalize);
	if (pgram_buf)
		args[na++] = gpud_arg_buffer("pgram", pgram_buf);
	step = "run";
	res->st = gpud_run(c, "lombscargle", args, na, &res->out, 1, &res->nout, &res->info);
	if (res->st != GPUD_OK)
		goto out;
	if (!pgram_buf && res->nout == 1)
		h[nh++] = res->out.handle;
	step = "download";
	if (res->nout == 1)
		res->st = gpud_download_range(c, res->out.handle, 0, result,
					      nf * gpud_dtype_size(dt));
out:
	if (res->st != GPUD_OK)
		snprintf(res->msg, sizeof(res->msg), "%s: %s: %s", step, gpud_strerror(res->st),
			 gpud_errmsg(c));
	if (nh > 0) {
		gpud_status fs = gpud_free(c, h, (size_t)nh);
		if (fs != GPUD_OK && res->st == GPUD_OK) {
			res->st = fs;
			snprintf(res->msg, sizeof(res->msg), "free: %s", gpud_errmsg(c));
		}
	}
	free(bx);
	free(by);
	free(bf);
}

/* --- raw wire messages (a plain nng REQ socket and hand-made protobuf) --------------------- */

typedef struct pb {
	uint8_t b[512];
	size_t n;
} pb;

static void pb_varint(pb *p, uint64_t v)
{
	while (v >= 0x80) {
		p->b[p->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p->b[p->n++] = (uint8_t)v;
}

static void pb_key(pb *p, unsigned field, unsigned wiretype)
{
	pb_varint(p, (uint64_t)field << 3 | wiretype);
}

static void pb_uint(pb *p, unsigned field, uint64_t v)
{
	pb_key(p, field, 0);
	pb_varint(p, v);
}

static void pb_sub(pb *p, unsigned field, const pb *sub)
{
	pb_key(p, field, 2);
	pb_varint(p, sub->n);
	memcpy(p->b + p->n, sub->b, sub->n);
	p->n += sub->n;
}

/* Request{version, id, <body field> = body}. */
static pb pb_request(uint32_t version, uint64_t id, unsigned body_field, const pb *body)
{
	pb p = {.n = 0};
	pb_uint(&p, 1, version);
	pb_uint(&p, 2, id);
	pb_sub(&p, body_field, body);
	return p;
}

/* [u32 LE header length][header][payload_len bytes of payload]; malloc'd. */
static uint8_t *frame(const pb *hdr, const void *payload, size_t payload_len, size_t *total)
{
	*total = 4 + hdr->n + payload_len;
	uint8_t *m = malloc(*total);
	ck_assert_ptr_nonnull(m);
	m[0] = (uint8_t)hdr->n;
	m[1] = (uint8_t)(hdr->n >> 8);
	m[2] = (uint8_t)(hdr->n >> 16);
	m[3] = (uint8_t)(hdr->n >> 24);
	memcpy(m + 4, hdr->b, hdr->n);
	if (payload_len)
		memcpy(m + 4 + hdr->n, payload, payload_len);
	return m;
}

typedef struct raw_reply {
	uint64_t version, id, code;
	char message[1024];
	int body_field;     /* the oneof body present, 0 if none */
	uint8_t body[1024]; /* its bytes (first 1024) */
	size_t body_len;
} raw_reply;

static int pb_read_varint(const uint8_t *b, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*i >= n)
			return -1;
		uint8_t c = b[(*i)++];
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/* Parses a framed Response by hand. 0, or -1 if it is not one. */
static int parse_reply(const uint8_t *m, size_t len, raw_reply *r)
{
	memset(r, 0, sizeof(*r));
	if (len < 4)
		return -1;
	size_t hlen = (size_t)m[0] | (size_t)m[1] << 8 | (size_t)m[2] << 16 | (size_t)m[3] << 24;
	if (hlen > len - 4)
		return -1;
	const uint8_t *b = m + 4;
	size_t i = 0;
	while (i < hlen) {
		uint64_t key, v;
		if (pb_read_varint(b, hlen, &i, &key) != 0)
			return -1;
		unsigned field = (unsigned)(key >> 3), wt = (unsigned)(key & 7);
		switch (wt) {
		case 0:
			if (pb_read_varint(b, hlen, &i, &v) != 0)
				return -1;
			if (field == 1)
				r->version = v;
			else if (field == 2)
				r->id = v;
			else if (field == 3)
				r->code = v;
			break;
		case 2:
			if (pb_read_varint(b, hlen, &i, &v) != 0 || v > hlen - i)
				return -1;
			if (field == 4)
				snprintf(r->message, sizeof(r->message), "%.*s", (int)v,
					 (const char *)b + i);
			else if (field >= 10) {
				r->body_field = (int)field;
				r->body_len = v < sizeof(r->body) ? (size_t)v : sizeof(r->body);
				memcpy(r->body, b + i, r->body_len);
			}
			i += (size_t)v;
			break;
		case 1:
			i += 8;
			break;
		case 5:
			i += 4;
			break;
		default:
			return -1;
		}
	}
	return i == hlen ? 0 : -1;
}

/* Field `field` of a message: a length-delimited one (*p, *n) or a varint
 * (*v). 0 if found, -1 if not. */
static int pb_find(const uint8_t *b, size_t n, unsigned field, const uint8_t **p, size_t *len,
		   uint64_t *v)
{
	size_t i = 0;
	while (i < n) {
		uint64_t key, x;
		if (pb_read_varint(b, n, &i, &key) != 0)
			return -1;
		unsigned wt = (unsigned)(key & 7);
		if (wt == 0) {
			if (pb_read_varint(b, n, &i, &x) != 0)
				return -1;
			if ((key >> 3) == field && v)
				return *v = x, 0;
		} else if (wt == 2) {
			if (pb_read_varint(b, n, &i, &x) != 0 || x > n - i)
				return -1;
			if ((key >> 3) == field && p)
				return *p = b + i, *len = (size_t)x, 0;
			i += (size_t)x;
		} else if (wt == 1) {
			i += 8;
		} else if (wt == 5) {
			i += 4;
		} else {
			return -1;
		}
	}
	return -1;
}

static raw_reply raw_body_on(nng_socket s, uint64_t id, unsigned field, const pb *body,
			     const void *payload, size_t plen);

/* A plain hello on s (tenant assigned; nothing checked beyond OK). */
static void raw_say_hello(nng_socket s)
{
	pb empty = {.n = 0};
	raw_reply r = raw_body_on(s, 1, 10, &empty, NULL, 0);
	ck_assert_msg(r.code == ST_OK, "raw hello: %" PRIu64 " %s", r.code, r.message);
}

static nng_socket raw_open(int timeout_ms)
{
	nng_socket s;
	int rv;
	ck_assert_msg((rv = nng_req0_open(&s)) == 0, "nng_req0_open: %s", nng_strerror(rv));
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, timeout_ms);
	rv = nng_dial(s, url, NULL, 0);
	ck_assert_msg(rv == 0, "nng_dial %s: %s", url, nng_strerror(rv));
	return s;
}

/*
 * Sends len bytes as one message on a fresh REQ socket and waits up to
 * timeout_ms for the reply. Returns 0 with *r filled, or the nng error of the
 * receive (NNG_ETIMEDOUT when the daemon dropped the message).
 */
static int raw_call(const void *msg, size_t len, int timeout_ms, raw_reply *r)
{
	nng_socket s = raw_open(timeout_ms);
	nng_msg *m;
	int rv;

	raw_say_hello(s); /* only hello and status are served before it */

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
	ck_assert_int_eq(nng_msg_append(m, msg, len), 0);
	if ((rv = nng_sendmsg(s, m, 0)) != 0) {
		nng_msg_free(m);
		nng_close(s);
		return rv;
	}
	rv = nng_recvmsg(s, &m, 0);
	nng_close(s);
	if (rv != 0)
		return rv;
	int prv = parse_reply(nng_msg_body(m), nng_msg_len(m), r);
	size_t mlen = nng_msg_len(m);
	nng_msg_free(m);
	ck_assert_msg(prv == 0, "the daemon's %zu-byte reply is not a framed Response", mlen);
	return 0;
}

/* One request on an open REQ socket (its connection is one session). */
static void raw_call_on(nng_socket s, const void *msg, size_t len, raw_reply *r)
{
	nng_msg *m;
	int rv;
	ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
	ck_assert_int_eq(nng_msg_append(m, msg, len), 0);
	ck_assert_msg((rv = nng_sendmsg(s, m, 0)) == 0, "send: %s", nng_strerror(rv));
	ck_assert_msg((rv = nng_recvmsg(s, &m, 0)) == 0, "recv: %s", nng_strerror(rv));
	ck_assert_msg(parse_reply(nng_msg_body(m), nng_msg_len(m), r) == 0,
		      "the reply is not a framed Response");
	nng_msg_free(m);
}

/* Request{version, id, <field> = body} + payload on s; the reply. */
static raw_reply raw_body_on(nng_socket s, uint64_t id, unsigned field, const pb *body,
			     const void *payload, size_t plen)
{
	pb hdr = pb_request(WIRE_VERSION, id, field, body);
	size_t len;
	uint8_t *m = frame(&hdr, payload, plen, &len);
	raw_reply r;
	raw_call_on(s, m, len, &r);
	free(m);
	return r;
}

/*
 * The same in a helper process (this program run again with --raw-send), for
 * messages the daemon may drop: nng 1.5's nng_close() of a REQ socket whose
 * peer dropped the connection in the middle of a large send can block forever
 * (the reaper waits in req0_pipe_stop), so the helper exits without closing.
 * Returns 0 with *r filled, or a non-zero nng error.
 */
static int raw_call_isolated(const void *msg, size_t len, int timeout_ms, raw_reply *r)
{
	char msgpath[700], outpath[700], tbuf[32], how[128];
	static char out[4096];
	FILE *f;

	memset(r, 0, sizeof(*r));
	path_in_dir(msgpath, sizeof(msgpath), "raw.msg");
	path_in_dir(outpath, sizeof(outpath), "raw.out");
	f = fopen(msgpath, "wb");
	ck_assert_msg(f != NULL, "cannot create %s", msgpath);
	ck_assert_uint_eq(fwrite(msg, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(tbuf, sizeof(tbuf), "%d", timeout_ms);

	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		execl(self_path, self_path, "--raw-send", url, msgpath, tbuf, (char *)NULL);
		_exit(127);
	}
	int st;
	if (wait_pid_timeout(pid, timeout_ms / 1000.0 + 20.0, &st) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("the --raw-send helper did not finish within %d ms + 20 s",
			     timeout_ms);
	}
	describe_wait(st, how, sizeof(how));
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the --raw-send helper %s", how);
	read_text(outpath, out, sizeof(out));
	unlink(msgpath);
	unlink(outpath);
	int err;
	if (sscanf(out, "error %d", &err) == 1)
		return err;
	char *nl = strchr(out, '\n');
	ck_assert_msg(nl != NULL && sscanf(out, "reply %" SCNu64 " %" SCNu64 " %" SCNu64, &r->code,
					   &r->id, &r->version) == 3,
		      "the --raw-send helper said '%s'", out);
	snprintf(r->message, sizeof(r->message), "%s", nl + 1);
	return 0;
}

/* main() with --raw-send URL FILE TIMEOUT_MS: sends FILE as one message. */
static int raw_send_main(const char *u, const char *path, int timeout_ms)
{
	static unsigned char buf[8 << 20];
	FILE *f = fopen(path, "rb");
	nng_socket s;
	nng_msg *m;
	raw_reply r;
	int rv;

	if (f == NULL)
		return 2;
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if ((rv = nng_req0_open(&s)) != 0) {
		printf("error %d\n", rv);
		return 0;
	}
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, timeout_ms);
	if ((rv = nng_dial(s, u, NULL, 0)) != 0 || (rv = nng_msg_alloc(&m, 0)) != 0 ||
	    (rv = nng_msg_append(m, buf, len)) != 0) {
		printf("error %d\n", rv);
		fflush(stdout);
		_exit(0);
	}
	if ((rv = nng_sendmsg(s, m, 0)) == 0)
		rv = nng_recvmsg(s, &m, 0);
	if (rv != 0)
		printf("error %d\n", rv);
	else if (parse_reply(nng_msg_body(m), nng_msg_len(m), &r) != 0)
		printf("garbage reply of %zu bytes\n", nng_msg_len(m));
	else
		printf("reply %" PRIu64 " %" PRIu64 " %" PRIu64 "\n%s", r.code, r.id, r.version,
		       r.message);
	fflush(stdout);
	_exit(0); /* no nng_close: see raw_call_isolated */
}

/* A raw call that must be answered with an error code and words in the message. */
static void raw_expect(const void *msg, size_t len, uint64_t want_code, const char *words,
		       const char *what)
{
	raw_reply r;
	int rv = raw_call(msg, len, 10000, &r);
	ck_assert_msg(rv == 0, "%s: no reply: %s", what, nng_strerror(rv));
	ck_assert_msg(r.code == want_code, "%s: reply code %" PRIu64 " ('%s'), expected %" PRIu64,
		      what, r.code, r.message, want_code);
	ck_assert_msg(r.version == WIRE_VERSION, "%s: reply version %" PRIu64, what, r.version);
	ck_assert_msg(strstr(r.message, words) != NULL, "%s: message '%s' does not mention '%s'",
		      what, r.message, words);
}

static void assert_fresh_client_works(const char *after)
{
	gpud_client *c;
	gpud_daemon_status s;
	gpud_status st = gpud_connect(url, &c);
	ck_assert_msg(st == GPUD_OK, "after %s: a fresh client cannot connect: %s", after,
		      gpud_errmsg(c));
	gpud_set_timeout(c, 10000);
	st = gpud_status_get(c, &s);
	ck_assert_msg(st == GPUD_OK, "after %s: status on a fresh client: %s", after,
		      gpud_errmsg(c));
	gpud_close(c);
}

/* ========================================================================================= */
/* client library                                                                            */
/* ========================================================================================= */

START_TEST(test_connect_server_info)
{
	gpud_client *c = lib_connect();
	const gpud_server_info *si = gpud_server(c);

	if (!strcmp(expected_backend(), "cpu") || !strcmp(expected_backend(), "cuda"))
		ck_assert_str_eq(si->backend, expected_backend());
	else
		ck_assert_msg(!strcmp(si->backend, "cpu") || !strcmp(si->backend, "cuda"),
			      "backend '%s'", si->backend);
	ck_assert_uint_eq(si->protocol_version, WIRE_VERSION);
	ck_assert_msg(si->version[0] != '\0', "empty server version");
	ck_assert_uint_eq(si->max_message_size, 256ull << 20); /* the default */
	ck_assert_str_eq(gpud_url(c), url);
	if (!strcmp(si->backend, "cpu"))
		ck_assert_int_eq(si->ndevices, 0);
	else
		ck_assert_int_ge(si->ndevices, 1);
	ck_assert_str_eq(gpud_errmsg(c), "");

	/* The same through status. */
	gpud_daemon_status s = lib_status(c);
	ck_assert_str_eq(s.server.backend, si->backend);
	ck_assert_str_eq(s.server.version, si->version);
	ck_assert_uint_ge(s.connections, 1);
	ck_assert_uint_eq(s.in_flight, 1); /* the status request itself */
	ck_assert_msg(s.uptime_s >= 0 && s.uptime_s < 60, "uptime %g", s.uptime_s);
	gpud_close(c);
}
END_TEST

START_TEST(test_roundtrip_dtypes)
{
	static const gpud_dtype dts[] = {GPUD_F32, GPUD_F64, GPUD_I32, GPUD_I64};
	const uint64_t shape[3] = {3, 4, 5};
	const size_t n = 60;
	uint64_t seed = 1234;
	gpud_client *c = lib_connect();

	for (size_t d = 0; d < 4; d++) {
		gpud_dtype dt = dts[d];
		size_t es = gpud_dtype_size(dt);
		unsigned char *data = malloc(n * es);
		ck_assert_ptr_nonnull(data);
		for (size_t i = 0; i < n; i++) {
			double v = (rng_unit(&seed) - 0.5) * 2e6;
			if (fabs(v) < 1)
				v = 7;
			switch (dt) {
			case GPUD_F32:
				((float *)data)[i] = (float)(v * 1.000123);
				break;
			case GPUD_F64:
				((double *)data)[i] = v * 1.000000123456789;
				break;
			case GPUD_I32:
				((int32_t *)data)[i] = (int32_t)v;
				break;
			default:
				((int64_t *)data)[i] = (int64_t)v * 1000003;
				break;
			}
		}
		gpud_handle h;
		LIB_OK(c, gpud_alloc(c, dt, 3, shape, data, &h));
		ck_assert_msg(h != 0, "handle 0");
		gpud_array a;
		LIB_OK(c, gpud_download(c, h, &a));
		ck_assert_int_eq(a.dtype, dt);
		ck_assert_int_eq(a.ndim, 3);
		ck_assert_uint_eq(a.shape[0], 3);
		ck_assert_uint_eq(a.shape[1], 4);
		ck_assert_uint_eq(a.shape[2], 5);
		ck_assert_uint_eq(a.nbytes, n * es);
		ck_assert_uint_eq(gpud_array_count(&a), n);
		ck_assert_msg(memcmp(a.data, data, n * es) == 0, "%s: downloaded bytes differ",
			      gpud_dtype_name(dt));
		gpud_array_free(&a);
		LIB_OK(c, gpud_free(c, &h, 1));
		free(data);
	}

	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

/* A 0-d array (shape (), one element): the wire carries an empty shape. */
START_TEST(test_zero_dim_array)
{
	gpud_client *c = lib_connect();
	double one = -3.25, back = 0;
	gpud_handle h0;
	gpud_array a0;

	LIB_OK(c, gpud_alloc(c, GPUD_F64, 0, NULL, &one, &h0));
	ck_assert_uint_eq(lib_status(c).bytes_in_use, 8);
	LIB_OK(c, gpud_download(c, h0, &a0));
	ck_assert_int_eq(a0.dtype, GPUD_F64);
	ck_assert_int_eq(a0.ndim, 0);
	ck_assert_uint_eq(a0.nbytes, 8);
	ck_assert_uint_eq(gpud_array_count(&a0), 1);
	memcpy(&back, a0.data, 8);
	ck_assert_double_eq(back, one);
	gpud_array_free(&a0);
	LIB_OK(c, gpud_download_range(c, h0, 0, &back, 8));
	ck_assert_double_eq(back, one);
	LIB_OK(c, gpud_free(c, &h0, 1));
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_upload_offset_download_range)
{
	double a[100], b[10], got[14];
	uint64_t n = 100, seed = 99;
	gpud_client *c = lib_connect();
	gpud_handle h;

	for (int i = 0; i < 100; i++)
		a[i] = 1.0 + rng_unit(&seed);
	for (int i = 0; i < 10; i++)
		b[i] = -100.0 - i - rng_unit(&seed);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, a, &h));
	LIB_OK(c, gpud_upload(c, h, 40 * sizeof(double), b, sizeof(b)));
	LIB_OK(c, gpud_download_range(c, h, 38 * sizeof(double), got, sizeof(got)));
	for (int i = 0; i < 14; i++) {
		int k = 38 + i;
		double want = (k >= 40 && k < 50) ? b[k - 40] : a[k];
		ck_assert_msg(got[i] == want, "element %d: got %.17g, expected %.17g", k, got[i],
			      want);
	}
	/* The whole buffer, and a range not aligned to elements. */
	gpud_array all;
	LIB_OK(c, gpud_download(c, h, &all));
	ck_assert_uint_eq(all.nbytes, sizeof(a));
	for (int k = 0; k < 100; k++) {
		double want = (k >= 40 && k < 50) ? b[k - 40] : a[k];
		ck_assert_msg(((double *)all.data)[k] == want, "element %d after upload", k);
	}
	unsigned char raw[5];
	LIB_OK(c, gpud_download_range(c, h, 3, raw, 5));
	ck_assert_int_eq(memcmp(raw, (unsigned char *)all.data + 3, 5), 0);
	gpud_array_free(&all);

	/* Out of bounds both ways. */
	LIB_FAIL(c, gpud_upload(c, h, 95 * sizeof(double), b, sizeof(b)), GPUD_EINVAL,
		 "do not fit");
	LIB_FAIL(c, gpud_download_range(c, h, 99 * sizeof(double), got, 2 * sizeof(double)),
		 GPUD_EINVAL, "past the end");
	LIB_OK(c, gpud_free(c, &h, 1));
	gpud_close(c);
}
END_TEST

START_TEST(test_free_and_unknown_handles)
{
	double v[4] = {1, 2, 3, 4};
	uint64_t n = 4;
	char hex[32];
	gpud_client *c = lib_connect();
	gpud_handle h, keep;
	gpud_array a;

	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &keep));
	LIB_OK(c, gpud_free(c, &h, 1));
	snprintf(hex, sizeof(hex), "%016" PRIx64, h);
	LIB_FAIL(c, gpud_download(c, h, &a), GPUD_ENOTFOUND, hex);
	LIB_FAIL(c, gpud_download(c, h, &a), GPUD_ENOTFOUND, "unknown handle");
	LIB_FAIL(c, gpud_upload(c, h, 0, v, 8), GPUD_ENOTFOUND, hex);
	/* Free of a handle that is gone, or never was. */
	LIB_FAIL(c, gpud_free(c, &h, 1), GPUD_ENOTFOUND, hex);
	gpud_handle bogus = 0x1234567890abcdefull;
	LIB_FAIL(c, gpud_free(c, &bogus, 1), GPUD_ENOTFOUND, "1234567890abcdef");
	/* All or nothing: a list with one unknown handle frees none. */
	gpud_handle pair[2] = {keep, bogus};
	LIB_FAIL(c, gpud_free(c, pair, 2), GPUD_ENOTFOUND, "unknown handle");
	double back[4];
	LIB_OK(c, gpud_download_range(c, keep, 0, back, sizeof(back)));
	ck_assert_double_eq(back[3], 4.0);
	ck_assert_uint_eq(lib_status(c).buffers, 1);
	LIB_OK(c, gpud_free(c, &keep, 1));
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_kernels_list)
{
	static const char *names[] = {"x", "y", "freqs", "pgram", "precenter", "normalize"};
	static const gpud_param_role roles[] = {GPUD_PARAM_IN,     GPUD_PARAM_IN,
						GPUD_PARAM_IN,     GPUD_PARAM_OUT,
						GPUD_PARAM_SCALAR, GPUD_PARAM_SCALAR};
	gpud_client *c = lib_connect();
	gpud_kernel_list *l;

	LIB_OK(c, gpud_kernels(c, &l));
	ck_assert_ptr_nonnull(l);
	gpud_kernel_info *k = NULL;
	for (size_t i = 0; i < l->count; i++)
		if (!strcmp(l->kernels[i].name, "lombscargle"))
			k = &l->kernels[i];
	ck_assert_msg(k != NULL, "lombscargle is not among the %zu kernels", l->count);
	ck_assert_msg(strstr(k->doc, "Lomb-Scargle") != NULL, "doc '%s'", k->doc);
	ck_assert_uint_eq(k->nparams, 6);
	for (size_t j = 0; j < 6; j++) {
		gpud_param_info *p = &k->params[j];
		ck_assert_str_eq(p->name, names[j]);
		ck_assert_int_eq(p->role, roles[j]);
		ck_assert_msg(p->doc[0] && p->type[0], "param %s lacks doc or type", p->name);
		if (p->role != GPUD_PARAM_SCALAR) {
			ck_assert_uint_eq(p->dtypes, (1u << GPUD_F32) | (1u << GPUD_F64));
			ck_assert_int_eq(p->ndim, 1);
			ck_assert_msg(strstr(p->type, "float32") && strstr(p->type, "float64"),
				      "type '%s'", p->type);
		} else {
			ck_assert_int_eq(p->optional, 1);
			ck_assert_str_eq(p->default_value, "false");
			ck_assert_msg(strstr(p->type, "bool") != NULL, "type '%s'", p->type);
		}
	}
	ck_assert_int_eq(k->params[0].optional, 0);
	ck_assert_int_eq(k->params[2].optional, 0);
	ck_assert_int_eq(k->params[3].optional, 1); /* outputs may be omitted */
	gpud_kernel_list_free(l);
	gpud_close(c);
}
END_TEST

START_TEST(test_status_counts)
{
	gpud_client *c = lib_connect();
	double d[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	float fl[6] = {1, 2, 3, 4, 5, 6};
	int64_t iv[7] = {1, 2, 3, 4, 5, 6, 7};
	uint64_t s1 = 10, s2[2] = {2, 3}, s3 = 7;
	gpud_handle h[3];

	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(s.bytes_in_use, 0);
	uint64_t req0 = s.requests, err0 = s.errors;

	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &s1, d, &h[0]));
	LIB_OK(c, gpud_alloc(c, GPUD_F32, 2, s2, fl, &h[1]));
	LIB_OK(c, gpud_alloc(c, GPUD_I64, 1, &s3, iv, &h[2]));
	s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 3);
	ck_assert_uint_eq(s.bytes_in_use, 80 + 24 + 56);
	ck_assert_uint_ge(s.bytes_high_water, 160);
	ck_assert_uint_eq(s.requests, req0 + 4); /* 3 allocs + this status */
	ck_assert_uint_eq(s.errors, err0);

	LIB_OK(c, gpud_free(c, &h[1], 1));
	s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 2);
	ck_assert_uint_eq(s.bytes_in_use, 136);

	gpud_array a;
	LIB_FAIL(c, gpud_download(c, h[1], &a), GPUD_ENOTFOUND, "unknown handle");
	s = lib_status(c);
	ck_assert_uint_eq(s.errors, err0 + 1);

	gpud_handle rest[2] = {h[0], h[2]};
	LIB_OK(c, gpud_free(c, rest, 2));
	s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(s.bytes_in_use, 0);
	ck_assert_uint_ge(s.bytes_high_water, 160);
	gpud_close(c);
}
END_TEST

START_TEST(test_lombscargle_library)
{
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	const size_t nx = 157, nf = 211;
	double x[157], y[157], f[211], ref[211], got[211];
	gpud_client *c = lib_connect();

	for (int d = 0; d < 2; d++) {
		for (int combo = 0; combo < 4; combo++) {
			gpud_dtype dt = dts[d];
			int pre = combo & 1, norm = (combo >> 1) & 1;
			char what[96];
			ls_result res;

			gen_ls(1000 + (uint64_t)(d * 4 + combo), nx, nf, x, y, f);
			if (dt == GPUD_F32) {
				round_to_f32(x, nx);
				round_to_f32(y, nx);
				round_to_f32(f, nf);
			}
			ls_ref(x, y, nx, f, nf, pre, norm, ref);
			ls_lib_run(c, dt, x, y, nx, f, nf, pre, norm, 0, got, &res);
			snprintf(what, sizeof(what), "lombscargle %s precenter=%d normalize=%d",
				 gpud_dtype_name(dt), pre, norm);
			ck_assert_msg(res.st == GPUD_OK, "%s: %s", what, res.msg);
			ck_assert_uint_eq(res.nout, 1);
			ck_assert_str_eq(res.out.name, "pgram");
			ck_assert_int_eq(res.out.dtype, dt);
			ck_assert_int_eq(res.out.ndim, 1);
			ck_assert_uint_eq(res.out.shape[0], nf);
			ck_assert_msg(res.info.elapsed_us > 0 && res.info.kernel_us > 0 &&
					      res.info.kernel_us <= res.info.elapsed_us * 1.01 + 1,
				      "%s: elapsed_us %g, kernel_us %g", what, res.info.elapsed_us,
				      res.info.kernel_us);
			assert_matches(got, dt, ref, nf, what);
		}
	}
	/* Everything the runs made was freed. */
	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(s.bytes_in_use, 0);
	gpud_close(c);
}
END_TEST

/*
 * One session's requests run in order: runs writing one output buffer from
 * changing inputs, then sync, leave the last run's result; sync on an idle
 * connection answers too.
 */
START_TEST(test_session_order_and_sync)
{
	const size_t nx = 40, nf = 257;
	double x[40], y[40], f[257], ref[257], got[257];
	gpud_client *c = lib_connect();
	uint64_t sx = nx, sf = nf;
	gpud_handle h[4];

	LIB_OK(c, gpud_sync(c));
	gen_ls(77, nx, nf, x, y, f);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, x, &h[0]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, y, &h[1]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, f, &h[2]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, NULL, &h[3]));
	gpud_arg args[4] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			    gpud_arg_buffer("freqs", h[2]), gpud_arg_buffer("pgram", h[3])};
	for (int round = 0; round < 5; round++) {
		gen_ls(100 + (uint64_t)round, nx, nf, x, y, f);
		LIB_OK(c, gpud_upload(c, h[1], 0, y, sizeof(y)));
		gpud_output o;
		size_t no;
		LIB_OK(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL));
		ck_assert_uint_eq(o.handle, h[3]);
	}
	LIB_OK(c, gpud_sync(c));
	/* x and freqs are still seed 77's; y is round 4's. */
	double x77[40], y77[40], f77[257];
	gen_ls(77, nx, nf, x77, y77, f77);
	ls_ref(x77, y, nx, f77, nf, 0, 0, ref);
	LIB_OK(c, gpud_download_range(c, h[3], 0, got, sizeof(got)));
	assert_matches(got, GPUD_F64, ref, nf, "the last of five ordered runs");
	LIB_OK(c, gpud_free(c, h, 4));
	LIB_OK(c, gpud_sync(c));
	gpud_close(c);
}
END_TEST

START_TEST(test_lombscargle_into_given_output)
{
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	const size_t nx = 64, nf = 97;
	double x[64], y[64], f[97], ref[97], nan_d[97], got[97];
	gpud_client *c = lib_connect();

	for (size_t i = 0; i < nf; i++)
		nan_d[i] = NAN;
	for (int d = 0; d < 2; d++) {
		gpud_dtype dt = dts[d];
		uint64_t snf = nf;
		gpud_handle pg;
		ls_result res;

		gen_ls(77 + (uint64_t)d, nx, nf, x, y, f);
		if (dt == GPUD_F32) {
			round_to_f32(x, nx);
			round_to_f32(y, nx);
			round_to_f32(f, nf);
		}
		ls_ref(x, y, nx, f, nf, 1, 0, ref);
		void *poison = to_dtype(nan_d, nf, dt);
		LIB_OK(c, gpud_alloc(c, dt, 1, &snf, poison, &pg));
		free(poison);
		ls_lib_run(c, dt, x, y, nx, f, nf, 1, 0, pg, got, &res);
		ck_assert_msg(res.st == GPUD_OK, "%s: %s", gpud_dtype_name(dt), res.msg);
		ck_assert_uint_eq(res.nout, 1);
		ck_assert_msg(res.out.handle == pg,
			      "the output is %016" PRIx64 ", not the given %016" PRIx64,
			      res.out.handle, pg);
		for (size_t i = 0; i < nf; i++)
			ck_assert_msg(!isnan(elem(got, dt, i)),
				      "%s: pgram[%zu] was not overwritten (NaN)",
				      gpud_dtype_name(dt), i);
		assert_matches(got, dt, ref, nf, "lombscargle into a given pgram");
		/* The output is still the caller's; exactly one buffer is left. */
		ck_assert_uint_eq(lib_status(c).buffers, 1);
		LIB_OK(c, gpud_free(c, &pg, 1));
	}

	/* A given output of the wrong length or dtype is refused. */
	uint64_t wrong = 5, sx = nx, sf = nf;
	gpud_handle hx, hy, hf, hw, hd;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, x, &hx));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, y, &hy));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, f, &hf));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &wrong, NULL, &hw));
	LIB_OK(c, gpud_alloc(c, GPUD_F32, 1, &sf, NULL, &hd));
	gpud_arg args[4] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hy),
			    gpud_arg_buffer("freqs", hf), gpud_arg_buffer("pgram", hw)};
	gpud_output o;
	size_t no;
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL), GPUD_EINVAL,
		 "output 'pgram' must be");
	args[3] = gpud_arg_buffer("pgram", hd);
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL), GPUD_EINVAL, "pgram");
	gpud_handle all[5] = {hx, hy, hf, hw, hd};
	LIB_OK(c, gpud_free(c, all, 5));
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_library_errors)
{
	gpud_client *c = lib_connect();
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	uint64_t n = 8, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 8};
	gpud_handle hx, bogus = 0xfeedfacecafebeefull, hn;
	gpud_output o;
	size_t no;

	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &hx));
	gpud_arg args[3] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", bogus),
			    gpud_arg_buffer("freqs", hx)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 3, &o, 1, &no, NULL), GPUD_ENOTFOUND,
		 "unknown handle");
	ck_assert_msg(strstr(gpud_errmsg(c), "feedfacecafebeef") && strstr(gpud_errmsg(c), "'y'"),
		      "message '%s' should name argument 'y' and the handle", gpud_errmsg(c));
	LIB_FAIL(c, gpud_run(c, "nosuchkernel", args, 3, &o, 1, &no, NULL), GPUD_EUNKNOWN_KERNEL,
		 "unknown kernel 'nosuchkernel'");
	/* ndim 9: refused by the library before anything is sent. */
	LIB_FAIL(c, gpud_alloc(c, GPUD_F64, 9, nine, v, &hn), GPUD_EARG, "ndim");
	LIB_FAIL(c, gpud_alloc(c, (gpud_dtype)9, 1, &n, v, &hn), GPUD_EARG, "dtype");
	/* A scalar where a buffer belongs, and the other way round. */
	gpud_arg mixed[3] = {gpud_arg_f64("x", 1.5), gpud_arg_buffer("y", hx),
			     gpud_arg_buffer("freqs", hx)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", mixed, 3, &o, 1, &no, NULL), GPUD_EINVAL,
		 "must be a buffer");
	gpud_arg mixed2[4] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hx),
			      gpud_arg_buffer("freqs", hx), gpud_arg_buffer("normalize", hx)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", mixed2, 4, &o, 1, &no, NULL), GPUD_EINVAL,
		 "must be a bool scalar");
	/* Failed runs leave nothing behind, and the connection is still good. */
	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 1);
	LIB_OK(c, gpud_free(c, &hx, 1));
	gpud_close(c);
}
END_TEST

START_TEST(test_raw_protocol_errors)
{
	pb empty = {.n = 0}, hdr;
	uint8_t *m;
	size_t len;

	/* Shorter than the frame prefix. */
	static const uint8_t two[2] = {0x01, 0x02};
	raw_expect(two, sizeof(two), ST_PROTOCOL, "malformed", "a 2-byte message");

	/* A prefix declaring more header than there is. */
	static const uint8_t overlong[8] = {0xff, 0xff, 0x00, 0x00, 1, 2, 3, 4};
	raw_expect(overlong, sizeof(overlong), ST_PROTOCOL, "malformed",
		   "a prefix declaring a 65535-byte header");

	/* A header that is not a protobuf Request (wire type 7 does not exist). */
	static const uint8_t junkhdr[9] = {5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff};
	raw_expect(junkhdr, sizeof(junkhdr), ST_PROTOCOL, "not a gpud Request",
		   "a header that is not a Request");

	/* Another protocol version. */
	hdr = pb_request(99, 7, 17, &empty);
	m = frame(&hdr, NULL, 0, &len);
	raw_expect(m, len, ST_PROTOCOL, "version", "a version 99 status request");
	{
		raw_reply r;
		ck_assert_int_eq(raw_call(m, len, 10000, &r), 0);
		ck_assert_msg(strstr(r.message, "99") && strstr(r.message, "1"),
			      "the version message should name 99 and 1: '%s'", r.message);
	}
	free(m);

	/* A well-formed request without a verb. */
	pb noverb = {.n = 0};
	pb_uint(&noverb, 1, WIRE_VERSION);
	pb_uint(&noverb, 2, 8);
	m = frame(&noverb, NULL, 0, &len);
	raw_expect(m, len, ST_PROTOCOL, "verb", "a request without a verb");
	free(m);

	/* A raw alloc of 9 dimensions reaches the daemon's own check. */
	pb alloc = {.n = 0}, shape = {.n = 0};
	pb_uint(&alloc, 1, 2); /* DTYPE_F64 */
	for (int i = 0; i < 9; i++)
		pb_varint(&shape, 1);
	pb_sub(&alloc, 2, &shape);
	hdr = pb_request(WIRE_VERSION, 9, 11, &alloc);
	m = frame(&hdr, NULL, 0, &len);
	raw_expect(m, len, ST_INVALID_ARGUMENT, "at most 8 dimensions", "a raw alloc of 9-d");
	free(m);

	/* An alloc whose payload does not match its shape. */
	pb alloc2 = {.n = 0}, shape2 = {.n = 0};
	pb_uint(&alloc2, 1, 2);
	pb_varint(&shape2, 4);
	pb_sub(&alloc2, 2, &shape2);
	pb_uint(&alloc2, 3, 1); /* with_data */
	hdr = pb_request(WIRE_VERSION, 10, 11, &alloc2);
	m = frame(&hdr, "0123456789", 10, &len);
	raw_expect(m, len, ST_INVALID_ARGUMENT, "needs 32", "an alloc with a short payload");
	free(m);

	/* A good raw status request is answered OK, with the id echoed. */
	hdr = pb_request(WIRE_VERSION, 4242, 17, &empty);
	m = frame(&hdr, NULL, 0, &len);
	{
		raw_reply r;
		ck_assert_int_eq(raw_call(m, len, 10000, &r), 0);
		ck_assert_uint_eq(r.code, ST_OK);
		ck_assert_uint_eq(r.id, 4242);
		ck_assert_int_eq(r.body_field, 17);
	}
	free(m);

	assert_fresh_client_works("malformed raw messages");
	gpud_client *c = lib_connect();
	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0); /* the failed allocs left nothing */
	ck_assert_uint_ge(s.errors, 7);
	gpud_close(c);
}
END_TEST

/* ========================================================================================= */
/* host regions: shared memory for bulk bytes                                                */
/* ========================================================================================= */

static gpud_session_info *own_session(gpud_daemon_status *s, gpud_client *c)
{
	for (int i = 0; i < s->nsessions; i++)
		if (s->sessions[i].id == gpud_server(c)->connection)
			return &s->sessions[i];
	ck_abort_msg("status lists no session %u (this client)", gpud_server(c)->connection);
	return NULL;
}

START_TEST(test_host_regions_library)
{
	gpud_client *c = lib_connect();
	const size_t n = (3u << 20) / 8 + 5, bytes = n * sizeof(double);
	uint64_t shape = n, seed = 4242;

	ck_assert_msg(gpud_has_shm(c), "an ipc:// connection should be offered host regions");
	double *p = gpud_host_alloc(c, bytes), *q = gpud_host_alloc(c, bytes);
	ck_assert_msg(p && q, "gpud_host_alloc: %s", gpud_errmsg(c));
	ck_assert_msg(p[0] == 0 && p[n - 1] == 0, "fresh host memory is zero-filled");
	for (size_t i = 0; i < n; i++)
		p[i] = rng_unit(&seed) * 2 - 1;

	/* alloc from a region, download into another: no bytes through the socket */
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &shape, p, &h));
	for (size_t i = 0; i < n; i++)
		q[i] = NAN;
	LIB_OK(c, gpud_download_range(c, h, 0, q, bytes));
	ck_assert_msg(memcmp(p, q, bytes) == 0, "region -> gpud -> region changed the bytes");

	/* ordinary memory: through the scratch region, at offsets */
	double *m = malloc(bytes), *back = malloc(bytes);
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(back);
	for (size_t i = 0; i < n; i++)
		m[i] = rng_unit(&seed);
	LIB_OK(c, gpud_upload(c, h, 8, m + 1, bytes - 8));
	gpud_array whole;
	LIB_OK(c, gpud_download(c, h, &whole));
	ck_assert_uint_eq(whole.nbytes, bytes);
	ck_assert_msg(((double *)whole.data)[0] == p[0], "the first element was not written");
	ck_assert_msg(memcmp((double *)whole.data + 1, m + 1, bytes - 8) == 0,
		      "malloc'd memory -> gpud -> gpud_download changed the bytes");
	gpud_array_free(&whole);
	for (size_t i = 0; i < n; i++)
		back[i] = NAN;
	LIB_OK(c, gpud_download_range(c, h, 16, back, bytes - 16));
	ck_assert_msg(memcmp(back, m + 2, bytes - 16) == 0, "a ranged download changed the bytes");

	/* a .npy file bigger than SHM_MIN is read straight into a region */
	char path[700];
	path_in_dir(path, sizeof(path), "big.npy");
	save_npy(path, GPUD_F64, 1, &shape, m);
	gpud_handle hn;
	gpud_array meta;
	LIB_OK(c, gpud_alloc_npy(c, path, &hn, &meta));
	ck_assert_uint_eq(meta.shape[0], n);
	LIB_OK(c, gpud_download_range(c, hn, 0, q, bytes));
	ck_assert_msg(memcmp(q, m, bytes) == 0, "a .npy through a region changed the bytes");

	/* status: this connection's regions (two of ours + the scratch) and buffers */
	gpud_daemon_status st = lib_status(c);
	gpud_session_info *me = own_session(&st, c);
	ck_assert_uint_eq(me->buffers, 2);
	ck_assert_uint_eq(me->bytes, 2 * bytes);
	ck_assert_uint_eq(me->regions, 3);
	ck_assert_uint_ge(me->region_bytes, 2 * bytes);
	ck_assert_msg(strncmp(me->peer, "uid ", 4) == 0, "peer '%s' should be a uid", me->peer);

	LIB_OK(c, gpud_host_free(c, p));
	LIB_OK(c, gpud_host_free(c, q));
	LIB_FAIL(c, gpud_host_free(c, m), GPUD_EARG, "not from gpud_host_alloc");
	st = lib_status(c);
	ck_assert_uint_eq(own_session(&st, c)->regions, 1);
	LIB_OK(c, gpud_free(c, (gpud_handle[]){h, hn}, 2));
	unsigned id = gpud_server(c)->connection;
	gpud_close(c);

	/* The connection's regions and buffers went with it. */
	gpud_client *c2 = lib_connect();
	double deadline = now_s() + 5;
	int gone = 0;
	while (!gone && now_s() < deadline) {
		st = lib_status(c2);
		gone = 1;
		for (int i = 0; i < st.nsessions; i++)
			if (st.sessions[i].id == id)
				gone = 0;
		if (!gone)
			sleep_ms(10);
	}
	ck_assert_msg(gone, "session %u still listed after its client closed", id);
	ck_assert_uint_eq(st.buffers, 0);
	gpud_close(c2);
	free(m);
	free(back);
}
END_TEST

/* A memfd of size bytes, sealed with seals (0: none). */
static int make_memfd(size_t size, int seals)
{
	int fd = memfd_create("e2e", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	if (seals)
		ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

/* One registration on the region socket at path: the reply (status -1: none). */
static t_shm_reply shm_try(const char *path, const uint8_t *key, uint64_t size, int fd,
			   size_t msg_len)
{
	t_shm_register msg;
	t_shm_reply rep;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memset(&msg, 0, sizeof(msg));
	memset(&rep, 0, sizeof(rep));
	memcpy(msg.magic, "gpudshm1", 8);
	memcpy(msg.key, key, 16);
	msg.size = size;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_msg(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s: %s", path,
		      strerror(errno));
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	memset(&cbuf, 0, sizeof(cbuf));
	struct iovec iov = {.iov_base = &msg, .iov_len = msg_len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	ck_assert_int_eq(sendmsg(s, &mh, MSG_NOSIGNAL), (ssize_t)msg_len);
	struct timeval tv = {.tv_sec = 10};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (recv(s, &rep, sizeof(rep), 0) != (ssize_t)sizeof(rep))
		rep.status = -1;
	close(s);
	rep.message[sizeof(rep.message) - 1] = '\0';
	return rep;
}

#define SHM_EXPECT(rep, code, words)                                                               \
	do {                                                                                       \
		t_shm_reply r_ = (rep);                                                            \
		ck_assert_msg(r_.status == (code) && strstr(r_.message, (words)),                  \
			      "region socket: got %d '%s', expected %d mentioning '%s'",           \
			      r_.status, r_.message, (code), (words));                             \
	} while (0)

/* hello on a raw connection: its region socket path and key. */
static void raw_hello(nng_socket s, char *path, size_t pathlen, uint8_t key[16])
{
	pb empty = {.n = 0};
	raw_reply r = raw_body_on(s, 1, 10, &empty, NULL, 0);
	ck_assert_uint_eq(r.code, ST_OK);
	const uint8_t *p;
	size_t n;
	ck_assert_msg(pb_find(r.body, r.body_len, 6, &p, &n, NULL) == 0 && n < pathlen,
		      "hello on ipc:// should name the region socket");
	snprintf(path, pathlen, "%.*s", (int)n, (const char *)p);
	ck_assert_msg(pb_find(r.body, r.body_len, 7, &p, &n, NULL) == 0 && n == 16,
		      "hello should carry a 16-byte session key");
	memcpy(key, p, 16);
}

/* Upload request: handle, offset, from {region, offset}, length. */
static raw_reply raw_upload_from(nng_socket s, uint64_t handle, uint64_t region, uint64_t roff,
				 uint64_t length)
{
	pb up = {.n = 0}, ref = {.n = 0};
	pb_uint(&up, 1, handle);
	pb_uint(&ref, 1, region);
	pb_uint(&ref, 2, roff);
	pb_sub(&up, 3, &ref);
	pb_uint(&up, 4, length);
	return raw_body_on(s, 5, 12, &up, NULL, 0);
}

static uint64_t raw_alloc_f64(nng_socket s, uint64_t n)
{
	pb alloc = {.n = 0}, shape = {.n = 0};
	pb_uint(&alloc, 1, 2);
	pb_varint(&shape, n);
	pb_sub(&alloc, 2, &shape);
	raw_reply r = raw_body_on(s, 3, 11, &alloc, NULL, 0);
	ck_assert_uint_eq(r.code, ST_OK);
	const uint8_t *p;
	size_t bn;
	uint64_t h = 0;
	ck_assert(pb_find(r.body, r.body_len, 1, &p, &bn, NULL) == 0); /* buffer */
	ck_assert(pb_find(p, bn, 1, NULL, NULL, &h) == 0);             /* handle */
	return h;
}

START_TEST(test_host_region_refusals)
{
	nng_socket a = raw_open(10000), b = raw_open(10000);
	char path[256], pathb[256];
	uint8_t key[16], keyb[16], bad[16];
	const size_t sz = 1 << 16;
	const int seal = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

	raw_hello(a, path, sizeof(path), key);
	raw_hello(b, pathb, sizeof(pathb), keyb);
	ck_assert_str_eq(path, pathb);
	ck_assert_msg(memcmp(key, keyb, 16) != 0, "two connections got the same key");
	memcpy(bad, key, 16);
	bad[5] ^= 0x40;

	int fd = make_memfd(sz, seal);
	SHM_EXPECT(shm_try(path, bad, sz, fd, sizeof(t_shm_register)), ST_NOT_FOUND,
		   "unknown session key");
	SHM_EXPECT(shm_try(path, key, sz, -1, sizeof(t_shm_register)), ST_INVALID_ARGUMENT,
		   "exactly one file descriptor");
	SHM_EXPECT(shm_try(path, key, sz, fd, 12), ST_PROTOCOL, "registration message");
	SHM_EXPECT(shm_try(path, key, sz + 4096, fd, sizeof(t_shm_register)), ST_INVALID_ARGUMENT,
		   "does not match");
	int unsealed = make_memfd(sz, 0);
	SHM_EXPECT(shm_try(path, key, sz, unsealed, sizeof(t_shm_register)), ST_INVALID_ARGUMENT,
		   "F_SEAL_SHRINK");
	close(unsealed);
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	SHM_EXPECT(shm_try(path, key, sz, pfd[0], sizeof(t_shm_register)), ST_INVALID_ARGUMENT,
		   "memfd on tmpfs");
	close(pfd[0]);
	close(pfd[1]);

	/* A good one, for connection a. */
	t_shm_reply ok = shm_try(path, key, sz, fd, sizeof(t_shm_register));
	ck_assert_msg(ok.status == 0 && ok.region != 0, "registration: %d %s", ok.status,
		      ok.message);
	double *mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(mem, MAP_FAILED);
	close(fd);
	for (size_t i = 0; i < sz / 8; i++)
		mem[i] = (double)i * 0.5;

	uint64_t ha = raw_alloc_f64(a, 64), hb = raw_alloc_f64(b, 64);
	raw_reply r = raw_upload_from(a, ha, ok.region, 0, 64 * 8);
	ck_assert_msg(r.code == ST_OK, "upload from a's region: %s", r.message);
	r = raw_upload_from(a, ha, ok.region, sz - 8, 16);
	ck_assert_msg(r.code == ST_INVALID_ARGUMENT &&
			      strstr(r.message, "do not fit in host region"),
		      "an overrun of the region: %" PRIu64 " %s", r.code, r.message);
	/* b names a's region: the same answer as a region that never existed */
	r = raw_upload_from(b, hb, ok.region, 0, 64 * 8);
	ck_assert_msg(r.code == ST_NOT_FOUND && strstr(r.message, "unknown host region"),
		      "another connection's region: %" PRIu64 " %s", r.code, r.message);
	r = raw_upload_from(b, hb, ok.region ^ 1, 0, 8);
	ck_assert_msg(r.code == ST_NOT_FOUND && strstr(r.message, "unknown host region"),
		      "a made-up region: %" PRIu64 " %s", r.code, r.message);

	/* unmap; then the region is unknown to a as well */
	pb um = {.n = 0};
	pb_uint(&um, 1, ok.region);
	r = raw_body_on(a, 6, 19, &um, NULL, 0);
	ck_assert_msg(r.code == ST_OK, "unmap: %s", r.message);
	r = raw_upload_from(a, ha, ok.region, 0, 8);
	ck_assert_msg(r.code == ST_NOT_FOUND, "upload from an unmapped region: %s", r.message);
	munmap(mem, sz);
	nng_close(a);
	nng_close(b);
	assert_fresh_client_works("refused host regions");
}
END_TEST

/* One job, one round trip: inputs with the request, outputs in the reply. */
static gpud_array vec_array(gpud_dtype dt, void *data, size_t n)
{
	gpud_array a;
	memset(&a, 0, sizeof(a));
	a.dtype = dt;
	a.ndim = 1;
	a.shape[0] = n;
	a.data = data;
	a.nbytes = n * gpud_dtype_size(dt);
	return a;
}

START_TEST(test_call_one_round_trip)
{
	const size_t nx = 37, nf = 300;
	double x[37], y[37], f[300], ref[300];
	gpud_client *c = lib_connect();

	for (int d = 0; d < 2; d++) {
		gpud_dtype dt = d ? GPUD_F32 : GPUD_F64;
		gen_ls(900 + (uint64_t)d, nx, nf, x, y, f);
		if (dt == GPUD_F32) {
			round_to_f32(x, nx);
			round_to_f32(y, nx);
			round_to_f32(f, nf);
		}
		ls_ref(x, y, nx, f, nf, 1, 1, ref);
		void *bx = to_dtype(x, nx, dt), *by = to_dtype(y, nx, dt),
		     *bf = to_dtype(f, nf, dt);
		gpud_array ax = vec_array(dt, bx, nx), ay = vec_array(dt, by, nx),
			   af = vec_array(dt, bf, nf);
		gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
				   gpud_arg_array("freqs", &af), gpud_arg_bool("precenter", 1),
				   gpud_arg_bool("normalize", 1)};
		gpud_daemon_status before = lib_status(c);
		uint64_t req0 = own_session(&before, c)->requests;
		gpud_result out[2];
		size_t nout = 0;
		LIB_OK(c, gpud_call(c, "lombscargle", args, 5, out, 2, &nout, NULL));
		gpud_daemon_status after = lib_status(c);
		/* the call was one request (the second status is the other) */
		ck_assert_uint_eq(own_session(&after, c)->requests - req0, 2);
		ck_assert_uint_eq(after.buffers, 0); /* nothing kept */
		ck_assert_uint_eq(nout, 1);
		ck_assert_str_eq(out[0].name, "pgram");
		ck_assert_int_eq(out[0].array.dtype, dt);
		ck_assert_uint_eq(out[0].array.shape[0], nf);
		assert_matches(out[0].array.data, dt, ref, nf, "gpud_call lombscargle");
		gpud_array_free(&out[0].array);
		free(bx);
		free(by);
		free(bf);
	}

	/* mixed: a kept buffer, an array from host memory shared with gpud, scalars */
	gen_ls(950, nx, nf, x, y, f);
	ls_ref(x, y, nx, f, nf, 0, 0, ref);
	uint64_t sf = nf;
	gpud_handle hf;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, f, &hf));
	double *shared = gpud_host_alloc(c, sizeof(y));
	ck_assert_msg(shared != NULL, "%s", gpud_errmsg(c));
	memcpy(shared, y, sizeof(y));
	gpud_array ax = vec_array(GPUD_F64, x, nx), ay = vec_array(GPUD_F64, shared, nx);
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_buffer("freqs", hf)};
	gpud_result out[1];
	size_t nout;
	LIB_OK(c, gpud_call(c, "lombscargle", args, 3, out, 1, &nout, NULL));
	assert_matches(out[0].array.data, GPUD_F64, ref, nf,
		       "gpud_call with a handle and a region");
	gpud_array_free(&out[0].array);
	gpud_daemon_status st = lib_status(c);
	ck_assert_uint_eq(st.buffers, 1); /* only freqs, which the client made */

	/* errors: each names the argument; nothing is left behind */
	gpud_array bad_y = vec_array(GPUD_F32, y, nx);
	gpud_arg mism[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &bad_y),
			   gpud_arg_buffer("freqs", hf)};
	LIB_FAIL(c, gpud_call(c, "lombscargle", mism, 3, out, 1, &nout, NULL), GPUD_EINVAL, "y");
	gpud_array pg = vec_array(GPUD_F64, f, nf);
	gpud_arg asout[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			    gpud_arg_buffer("freqs", hf), gpud_arg_array("pgram", &pg)};
	LIB_FAIL(c, gpud_call(c, "lombscargle", asout, 4, out, 1, &nout, NULL), GPUD_EINVAL,
		 "an output");
	gpud_arg in_run[] = {gpud_arg_array("x", &ax)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", in_run, 1, NULL, 0, NULL, NULL), GPUD_EARG,
		 "gpud_call");
	gpud_array liar = ax;
	liar.nbytes += 8;
	gpud_arg lies[] = {gpud_arg_array("x", &liar)};
	LIB_FAIL(c, gpud_call(c, "lombscargle", lies, 1, out, 1, &nout, NULL), GPUD_EARG,
		 "does not match");
	st = wait_no_buffers(c, 0.5); /* freqs remains: expect exactly one */
	ck_assert_uint_eq(st.buffers, 1);
	LIB_OK(c, gpud_free(c, &hf, 1));
	LIB_OK(c, gpud_host_free(c, shared));
	gpud_close(c);
}
END_TEST

START_TEST(test_call_raw_payload_mismatch)
{
	/* run lombscargle with x inline (f64, 4 elements) but 40 payload bytes */
	pb run = {.n = 0}, arg = {.n = 0}, ia = {.n = 0}, shape = {.n = 0};
	pb_key(&run, 1, 2);
	pb_varint(&run, 11);
	memcpy(run.b + run.n, "lombscargle", 11);
	run.n += 11;
	pb_key(&arg, 1, 2);
	pb_varint(&arg, 1);
	arg.b[arg.n++] = 'x';
	pb_uint(&ia, 1, 2);
	pb_varint(&shape, 4);
	pb_sub(&ia, 2, &shape);
	pb_sub(&arg, 4, &ia);
	pb_sub(&run, 2, &arg);
	pb_uint(&run, 3, 1);
	pb hdr = pb_request(WIRE_VERSION, 77, 15, &run);
	size_t len;
	char payload[40] = {0};
	uint8_t *m = frame(&hdr, payload, sizeof(payload), &len);
	raw_expect(m, len, ST_INVALID_ARGUMENT, "the inline arrays take 32",
		   "a run whose payload is longer than its inline arrays");
	free(m);
	m = frame(&hdr, payload, 16, &len);
	raw_expect(m, len, ST_INVALID_ARGUMENT, "needs 32 bytes", "a run with a short payload");
	free(m);
	gpud_client *c = lib_connect();
	gpud_daemon_status st = lib_status(c);
	ck_assert_uint_eq(st.buffers, 0);
	gpud_close(c);
}
END_TEST

/* ========================================================================================= */
/* sessions                                                                                  */
/* ========================================================================================= */

START_TEST(test_buffers_freed_on_close)
{
	gpud_client *a = lib_connect(), *b = lib_connect();
	double v[100];
	uint64_t n = 100;
	gpud_handle h[3];

	for (int i = 0; i < 100; i++)
		v[i] = i + 0.5;
	for (int i = 0; i < 3; i++)
		LIB_OK(a, gpud_alloc(a, GPUD_F64, 1, &n, v, &h[i]));
	gpud_daemon_status s = lib_status(b);
	ck_assert_uint_eq(s.buffers, 3);
	ck_assert_uint_eq(s.bytes_in_use, 3 * 800);
	ck_assert_uint_ge(s.connections, 2);

	/* Buffers belong to their connection: A goes away without freeing. */
	gpud_close(a);
	s = wait_no_buffers(b, 2.0);
	ck_assert_msg(s.buffers == 0 && s.bytes_in_use == 0,
		      "2 s after client A closed: %" PRIu64 " buffers, %" PRIu64 " bytes in use",
		      s.buffers, s.bytes_in_use);
	ck_assert_uint_ge(s.bytes_high_water, 2400);
	double back;
	LIB_FAIL(b, gpud_download_range(b, h[0], 0, &back, 8), GPUD_ENOTFOUND, "unknown handle");
	gpud_close(b);
}
END_TEST

/* ========================================================================================= */
/* gpuctl                                                                                    */
/* ========================================================================================= */

START_TEST(test_gpuctl_run_writes_output)
{
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	const size_t nx = 120, nf = 333;
	double x[120], y[120], f[333], ref[333];
	char px[700], py[700], pf[700], po[700], err[512];

	path_in_dir(px, sizeof(px), "x.npy");
	path_in_dir(py, sizeof(py), "y.npy");
	path_in_dir(pf, sizeof(pf), "freqs.npy");
	path_in_dir(po, sizeof(po), "out.npy");
	for (int d = 0; d < 2; d++) {
		for (int combo = 0; combo < 4; combo++) {
			gpud_dtype dt = dts[d];
			int pre = combo & 1, norm = combo >> 1;
			char ax[720], ay[720], afr[720], ao[720], what[96];

			gen_ls(555 + (uint64_t)(d * 4 + combo), nx, nf, x, y, f);
			if (dt == GPUD_F32) {
				round_to_f32(x, nx);
				round_to_f32(y, nx);
				round_to_f32(f, nf);
			}
			save_vec(px, dt, x, nx);
			save_vec(py, dt, y, nx);
			save_vec(pf, dt, f, nf);
			ls_ref(x, y, nx, f, nf, pre, norm, ref);
			snprintf(ax, sizeof(ax), "x=%s", px);
			snprintf(ay, sizeof(ay), "y=%s", py);
			snprintf(afr, sizeof(afr), "freqs=%s", pf);
			snprintf(ao, sizeof(ao), "pgram=%s", po);
			unlink(po);
			ctl_result *r;
			if (combo == 3) /* named output, numeric booleans */
				r = CTL("run", "lombscargle", ax, ay, afr, "precenter=1",
					"normalize=1", "-o", ao);
			else
				r = CTL("run", "lombscargle", ax, ay, afr,
					pre ? "precenter=true" : "precenter=false",
					norm ? "normalize=TRUE" : "normalize=false", "-o", po);
			assert_ctl_ok(r);
			ck_assert_msg(r->err[0] == '\0', "'%s' wrote to stderr: %s", r->cmd,
				      r->err);

			gpud_array a;
			ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
			ck_assert_int_eq(a.dtype, dt);
			ck_assert_int_eq(a.ndim, 1);
			ck_assert_uint_eq(a.shape[0], nf);
			snprintf(what, sizeof(what), "gpuctl run %s precenter=%d normalize=%d",
				 gpud_dtype_name(dt), pre, norm);
			assert_matches(a.data, dt, ref, nf, what);
			gpud_array_free(&a);
		}
	}

	/* Without -o: a summary line per output on stdout. */
	char ax[720], ay[720], afr[720];
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(afr, sizeof(afr), "freqs=%s", pf);
	ctl_result *r = CTL("run", "lombscargle", ax, ay, afr);
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "pgram: float32 (333,) [") != NULL, "summary: '%s'", r->out);

	/* gpuctl freed everything it uploaded. */
	gpud_client *c = lib_connect();
	gpud_daemon_status s = wait_no_buffers(c, 2.0);
	ck_assert_uint_eq(s.buffers, 0);
	gpud_close(c);
}
END_TEST

/* The library's elementwise kernels through gpuctl: arrays and a broadcast scalar. */
START_TEST(test_gpuctl_elementwise)
{
	char px[700], py[700], po[700], ax[720], ay[720], err[512];
	double x[5] = {1, -2, 3.5, 0.25, 8}, y[5] = {0.5, 4, -1, 2, 3};
	path_in_dir(px, sizeof(px), "ex.npy");
	path_in_dir(py, sizeof(py), "ey.npy");
	path_in_dir(po, sizeof(po), "ez.npy");
	save_vec(px, GPUD_F64, x, 5);
	save_vec(py, GPUD_F64, y, 5);
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	assert_ctl_ok(CTL("run", "axpy", ax, ay, "a=-2", "-o", po));
	gpud_array z;
	ck_assert_msg(gpud_npy_load(po, &z, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(((double *)z.data)[i] == -2 * x[i] + y[i], "axpy[%d]", i);
	gpud_array_free(&z);
	assert_ctl_ok(CTL("run", "sub", ax, "y=0.5", "-o", po));
	ck_assert_msg(gpud_npy_load(po, &z, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 5; i++)
		ck_assert(((double *)z.data)[i] == x[i] - 0.5);
	gpud_array_free(&z);
	CTL_FAIL(1, "x or y must be an array", "run", "mul", "x=1", "y=2");
	/* reductions give a 0-d array */
	assert_ctl_ok(CTL("run", "dot", ax, ay, "-o", po));
	ck_assert_msg(gpud_npy_load(po, &z, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(z.ndim, 0);
	double want = 0;
	for (int i = 0; i < 5; i++)
		want += x[i] * y[i];
	ck_assert_msg(((double *)z.data)[0] == want, "dot = %g, want %g", ((double *)z.data)[0],
		      want);
	gpud_array_free(&z);
	CTL_FAIL(1, "argument 'y' must be a buffer", "run", "dot", ax, "y=1");
	CTL_FAIL(1, "missing argument 'a'", "run", "saxpy_trig", ax, ay);
	ctl_result *r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "sum_of_squares") && strstr(r->out, "rel_diff"), "%s", r->out);
}
END_TEST

/* histogram through gpuctl: numpy's counts, int64; bad arguments named. */
START_TEST(test_gpuctl_histogram)
{
	char px[700], pi[700], po[700], ax[720], ai[720], err[512];
	double x[9] = {0, 0.25, 0.5, 1, 1.5, 2, -1, 2.5, NAN};
	double xi[6] = {0, 1, 2, 3, 4, 5};
	path_in_dir(px, sizeof(px), "hx.npy");
	path_in_dir(pi, sizeof(pi), "hi.npy");
	path_in_dir(po, sizeof(po), "hcounts.npy");
	save_vec(px, GPUD_F32, x, 9);
	save_vec(pi, GPUD_I32, xi, 6);
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ai, sizeof(ai), "x=%s", pi);

	/* edges 0, .5, 1, 1.5, 2: the last bin closed; -1, 2.5 and NaN dropped */
	ctl_result *r = CTL("run", "histogram", ax, "bins=4", "range_min=0", "range_max=2", "-o",
			    po);
	assert_ctl_ok(r);
	ck_assert_msg(r->err[0] == '\0', "'%s' wrote to stderr: %s", r->cmd, r->err);
	gpud_array c;
	ck_assert_msg(gpud_npy_load(po, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.dtype, GPUD_I64);
	ck_assert_int_eq(c.ndim, 1);
	ck_assert_uint_eq(c.shape[0], 4);
	const int64_t want[4] = {2, 1, 1, 2};
	for (int i = 0; i < 4; i++)
		ck_assert_msg(((int64_t *)c.data)[i] == want[i], "counts[%d] = %lld, want %lld", i,
			      (long long)((int64_t *)c.data)[i], (long long)want[i]);
	gpud_array_free(&c);
	/* integers; range_max given as a float */
	assert_ctl_ok(
		CTL("run", "histogram", ai, "bins=5", "range_min=0", "range_max=5.0", "-o", po));
	ck_assert_msg(gpud_npy_load(po, &c, err, sizeof(err)) == 0, "%s", err);
	const int64_t wanti[5] = {1, 1, 1, 1, 2};
	for (int i = 0; i < 5; i++)
		ck_assert_msg(((int64_t *)c.data)[i] == wanti[i], "int counts[%d] = %lld", i,
			      (long long)((int64_t *)c.data)[i]);
	gpud_array_free(&c);
	/* without -o: the summary; bins defaults to 10 */
	r = CTL("run", "histogram", ax, "range_min=0", "range_max=2");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "counts: int64 (10,) [") != NULL, "summary: '%s'", r->out);

	CTL_FAIL(1, "argument 'bins' must be at least 1, got 0", "run", "histogram", ax, "bins=0",
		 "range_min=0", "range_max=1");
	CTL_FAIL(1, "max must be larger than min in range parameter", "run", "histogram", ax,
		 "range_min=3", "range_max=1");
	CTL_FAIL(1, "argument 'range_min' must be a finite float64, got inf", "run", "histogram",
		 ax, "range_min=inf", "range_max=1");
	CTL_FAIL(1, "missing argument 'range_max'", "run", "histogram", ax, "range_min=0");
	CTL_FAIL(1, "argument 'bins' must be int64, got 2.5", "run", "histogram", ax, "bins=2.5",
		 "range_min=0", "range_max=1");
	r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "histogram") && strstr(r->out, "range_min") &&
			      strstr(r->out, "numpy.histogram"),
		      "%s", r->out);
}
END_TEST

/* matmul, uniform and normal through gpuctl (CPU BLAS / cuBLAS, cuRAND), and bad arguments. */
START_TEST(test_gpuctl_libraries)
{
	char pa[700], pbm[700], pc[700], aa[720], ab[720], err[512];
	double a[6] = {0, 1, 2, 3, 4, 5}, b[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
	double want[8] = {20, 23, 26, 29, 56, 68, 80, 92};
	uint64_t sa[2] = {2, 3}, sb[2] = {3, 4};
	path_in_dir(pa, sizeof(pa), "ma.npy");
	path_in_dir(pbm, sizeof(pbm), "mb.npy");
	path_in_dir(pc, sizeof(pc), "mc.npy");
	save_npy(pa, GPUD_F64, 2, sa, a);
	save_npy(pbm, GPUD_F64, 2, sb, b);
	snprintf(aa, sizeof(aa), "a=%s", pa);
	snprintf(ab, sizeof(ab), "b=%s", pbm);
	assert_ctl_ok(CTL("run", "matmul", aa, ab, "-o", pc));
	gpud_array c;
	ck_assert_msg(gpud_npy_load(pc, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.ndim, 2);
	ck_assert(c.shape[0] == 2 && c.shape[1] == 4 && c.dtype == GPUD_F64);
	for (int i = 0; i < 8; i++)
		ck_assert_msg(((double *)c.data)[i] == want[i], "c[%d] = %g", i,
			      ((double *)c.data)[i]);
	gpud_array_free(&c);
	/* b . a: b has 3 columns, a 2 rows */
	snprintf(aa, sizeof(aa), "a=%s", pbm);
	snprintf(ab, sizeof(ab), "b=%s", pa);
	CTL_FAIL(1, "matmul: b has 2 rows, expected 4 (a's columns)", "run", "matmul", aa, ab);
	CTL_FAIL(1, "matmul: missing argument 'b'", "run", "matmul", aa);
	snprintf(aa, sizeof(aa), "a=%s", pa);
	snprintf(ab, sizeof(ab), "b=%s", pbm);
	CTL_FAIL(1, "matmul: tf32 applies to float32 only; a and b are float64", "run", "matmul",
		 aa, ab, "tf32=true");

	/* uniform: cuRAND's numbers for seed 42, the same on both backends, bit for bit */
	static const float u32_42[5] = {0x1.39d5ep-1, 0x1.dfd524p-2, 0x1.2bf50ap-4, 0x1.5d0adp-2,
					0x1.499bb4p-7};
	assert_ctl_ok(CTL("run", "uniform", "n=5", "seed=42", "dtype=float32", "-o", pc));
	ck_assert_msg(gpud_npy_load(pc, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert(c.ndim == 1 && c.shape[0] == 5 && c.dtype == GPUD_F32);
	ck_assert_msg(memcmp(c.data, u32_42, sizeof(u32_42)) == 0, "uniform: %a %a ...",
		      ((float *)c.data)[0], ((float *)c.data)[1]);
	gpud_array_free(&c);
	assert_ctl_ok(CTL("run", "uniform", "n=1000", "seed=3", "low=-1", "high=1", "-o", pc));
	ck_assert_msg(gpud_npy_load(pc, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert(c.dtype == GPUD_F64 && c.shape[0] == 1000);
	for (int i = 0; i < 1000; i++)
		ck_assert(((double *)c.data)[i] > -1 && ((double *)c.data)[i] <= 1);
	gpud_array_free(&c);
	/* normal, odd n: cuRAND's numbers (the device's Box-Muller may differ in the last bits) */
	static const double n64_42[7] = {0x1.0938d6e3710a3p+0,  -0x1.54abf38e526c1p-1,
					 0x1.b1706d3b4c821p-2,  -0x1.6f13555a03774p+0,
					 -0x1.f9be3fcfaa932p+0, -0x1.f19db84702aa2p-2,
					 0x1.08add93cd83fp-3};
	assert_ctl_ok(CTL("run", "normal", "n=7", "seed=42", "-o", pc));
	ck_assert_msg(gpud_npy_load(pc, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert(c.ndim == 1 && c.shape[0] == 7 && c.dtype == GPUD_F64);
	for (int i = 0; i < 7; i++)
		ck_assert_msg(fabs(((double *)c.data)[i] - n64_42[i]) <= 1e-13 * fabs(n64_42[i]),
			      "normal[%d] = %a, want %a", i, ((double *)c.data)[i], n64_42[i]);
	gpud_array_free(&c);
	CTL_FAIL(1,
		 "normal: argument 'dtype' must be a dtype name float32|float64 (default "
		 "float64), got 'float16'",
		 "run", "normal", "n=7", "seed=1", "dtype=float16");
	CTL_FAIL(1, "uniform: argument 'n' must be 0 or more, got -3", "run", "uniform", "n=-3",
		 "seed=1");
	CTL_FAIL(1, "normal: argument 'stddev' must be 0 or more, got -2", "run", "normal", "n=3",
		 "seed=1", "stddev=-2");
	CTL_FAIL(1, "uniform: missing argument 'seed' (int64 scalar)", "run", "uniform", "n=3");
	CTL_FAIL(1, "uniform: argument 'seed' must be int64; cannot parse 'lucky'", "run",
		 "uniform", "n=3", "seed=lucky");
	ctl_result *r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "dtype name float32|float64 (default float64)"), "%s", r->out);
}
END_TEST

/* gpud whose libraries cannot be loaded: it serves the rest, and says why for these. */
static void setup_no_libraries(void)
{
	setenv("GPUD_BLAS", "/nonexistent/libopenblas.so.0", 1);
	setenv("GPUD_CUBLAS", "/nonexistent/libcublas.so.13", 1);
	setenv("GPUD_CURAND", "/nonexistent/libcurand.so.10", 1);
	start_gpud(NULL);
	unsetenv("GPUD_BLAS");
	unsetenv("GPUD_CUBLAS");
	unsetenv("GPUD_CURAND");
}

START_TEST(test_libraries_missing)
{
	char pa[700], aa[720], ab[720];
	double a[4] = {1, 2, 3, 4};
	uint64_t sa[2] = {2, 2};
	int cuda = strcmp(expected_backend(), "cuda") == 0;
	path_in_dir(pa, sizeof(pa), "ma.npy");
	save_npy(pa, GPUD_F64, 2, sa, a);
	snprintf(aa, sizeof(aa), "a=%s", pa);
	snprintf(ab, sizeof(ab), "b=%s", pa);
	CTL_FAIL(1,
		 cuda ? "matmul is unavailable on the cuda backend: cuBLAS could not be loaded"
		      : "matmul is unavailable on the cpu backend: the CPU BLAS",
		 "run", "matmul", aa, ab);
	CTL_FAIL(1,
		 cuda ? "$GPUD_CUBLAS (/nonexistent/libcublas.so.13)"
		      : "$GPUD_BLAS "
			"(/nonexistent/libopenblas.so.0)",
		 "run", "matmul", aa, ab);
	CTL_FAIL(1, "cannot open shared object file", "run", "matmul", aa, ab);
	CTL_FAIL(1, "unavailable on the", "run", "uniform", "n=4", "seed=1");
	CTL_FAIL(1, "$GPUD_CURAND (/nonexistent/libcurand.so.10)", "run", "normal", "n=4",
		 "seed=1");
	/* the arguments are still checked first */
	CTL_FAIL(1, "normal: argument 'n' must be 0 or more", "run", "normal", "n=-4", "seed=1");
	/* everything else works */
	snprintf(ab, sizeof(ab), "y=%s", pa);
	snprintf(aa, sizeof(aa), "x=%s", pa);
	assert_ctl_ok(CTL("run", "add", aa, ab));
	static char log[65536];
	read_text(logpath, log, sizeof(log));
	ck_assert_msg(strstr(log, "matmul is unavailable") && strstr(log, "GPUD_CURAND"),
		      "the log does not say what is unavailable:\n%s", log);
}
END_TEST

START_TEST(test_gpuctl_kernels_and_status)
{
	ctl_result *r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "lombscargle") && strstr(r->out, "freqs") &&
			      strstr(r->out, "pgram") && strstr(r->out, "normalize"),
		      "kernels output: '%s'", r->out);

	r = CTL("status");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "backend") != NULL, "status output: '%s'", r->out);
	ck_assert_msg(strstr(r->out, url) != NULL, "status does not show the URL: '%s'", r->out);
	if (!strcmp(expected_backend(), "cpu") || !strcmp(expected_backend(), "cuda")) {
		char line[64];
		snprintf(line, sizeof(line), "backend      %s", expected_backend());
		ck_assert_msg(strstr(r->out, line) != NULL, "status output lacks '%s': '%s'", line,
			      r->out);
	}
	ck_assert_msg(strstr(r->out, "buffers      0") != NULL, "status output: '%s'", r->out);

	r = CTL("status", "--wait", "5");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "backend") != NULL, "status --wait output: '%s'", r->out);

	/* --url wins over GPUD_URL. */
	char bad[700];
	snprintf(bad, sizeof(bad), "ipc://%s/nobody.sock", dir);
	r = CTL_AT(bad, "--url", url, "status");
	assert_ctl_ok(r);
}
END_TEST

START_TEST(test_gpuctl_dead_url)
{
	char dead[700];
	snprintf(dead, sizeof(dead), "ipc://%s/dead.sock", dir);
	ctl_result *r = CTL_AT(dead, "status");
	ck_assert_msg(r->code == 1, "'%s' at a dead URL exited %d, expected 1\nstderr: %s", r->cmd,
		      r->code, r->err);
	ck_assert_msg(strncmp(r->err, "gpuctl: error: cannot connect", 29) == 0, "stderr: '%s'",
		      r->err);
	ck_assert_msg(strstr(r->err, "dead.sock") != NULL, "stderr does not name the URL: '%s'",
		      r->err);
	ck_assert_str_eq(r->out, "");

	/* --wait gives up after its time, and says so. */
	double t0 = now_s();
	r = CTL_AT(dead, "status", "--wait", "0.3");
	double took = now_s() - t0;
	ck_assert_int_eq(r->code, 1);
	ck_assert_msg(strstr(r->err, "cannot connect") && strstr(r->err, "gave up waiting"),
		      "stderr: '%s'", r->err);
	ck_assert_msg(took >= 0.25 && took < 10, "status --wait 0.3 took %.2f s", took);

	/* The daemon of this test is unaffected. */
	assert_daemon_alive("a dead URL");
}
END_TEST

START_TEST(test_gpuctl_errors)
{
	const size_t nx = 50, nf = 40;
	double x[50], y[50], f[40], sq[100];
	char p[16][700], a[16][720];
	uint64_t shape2[2] = {10, 10};

	gen_ls(4242, nx, nf, x, y, f);
	for (int i = 0; i < 100; i++)
		sq[i] = 1.0 + i;
	static const char *files[] = {"x.npy",  "y.npy",     "freqs.npy", "x32.npy",     "y49.npy",
				      "sq.npy", "trunc.npy", "text.npy",  "missing.npy", "out.npy"};
	for (int i = 0; i < 10; i++)
		path_in_dir(p[i], sizeof(p[i]), files[i]);
	save_vec(p[0], GPUD_F64, x, nx);
	save_vec(p[1], GPUD_F64, y, nx);
	save_vec(p[2], GPUD_F64, f, nf);
	save_vec(p[3], GPUD_F32, x, nx);
	save_vec(p[4], GPUD_F64, y, nx - 1);
	save_npy(p[5], GPUD_F64, 2, shape2, sq);
	save_vec(p[6], GPUD_F64, x, nx);
	struct stat sb;
	ck_assert_int_eq(stat(p[6], &sb), 0);
	ck_assert_int_eq(truncate(p[6], sb.st_size - 100), 0);
	write_text(p[7], "this is not a numpy file\n");

	snprintf(a[0], sizeof(a[0]), "x=%s", p[0]);
	snprintf(a[1], sizeof(a[1]), "y=%s", p[1]);
	snprintf(a[2], sizeof(a[2]), "freqs=%s", p[2]);
	snprintf(a[3], sizeof(a[3]), "x=%s", p[3]);
	snprintf(a[4], sizeof(a[4]), "y=%s", p[4]);
	snprintf(a[5], sizeof(a[5]), "x=%s", p[5]);
	snprintf(a[6], sizeof(a[6]), "x=%s", p[6]);
	snprintf(a[7], sizeof(a[7]), "x=%s", p[7]);
	snprintf(a[8], sizeof(a[8]), "x=%s", p[8]);
	snprintf(a[9], sizeof(a[9]), "nosuch=%s", p[9]);
	snprintf(a[10], sizeof(a[10]), "z=%s", p[0]);

	/* Sanity: the good arguments work. */
	assert_ctl_ok(CTL("run", "lombscargle", a[0], a[1], a[2]));

	CTL_FAIL(1, "unknown kernel 'lombscargel'", "run", "lombscargel", a[0], a[1], a[2]);
	CTL_FAIL(1, "missing argument 'freqs'", "run", "lombscargle", a[0], a[1]);
	CTL_FAIL(1, "unknown argument 'z'", "run", "lombscargle", a[0], a[1], a[2], a[10]);
	CTL_FAIL(1, "same length", "run", "lombscargle", a[0], a[4], a[2]);
	CTL_FAIL(1, "one dtype", "run", "lombscargle", a[3], a[1], a[2]);
	CTL_FAIL(1, "must be 1-d", "run", "lombscargle", a[5], a[1], a[2]);
	CTL_FAIL(1, "No such file", "run", "lombscargle", a[8], a[1], a[2]);
	CTL_FAIL(1, "truncated", "run", "lombscargle", a[6], a[1], a[2]);
	CTL_FAIL(1, "not a .npy", "run", "lombscargle", a[7], a[1], a[2]);
	CTL_FAIL(1, "cannot parse 'maybe'", "run", "lombscargle", a[0], a[1], a[2],
		 "precenter=maybe");
	CTL_FAIL(1, "must be bool", "run", "lombscargle", a[0], a[1], a[2], "precenter=2");
	CTL_FAIL(1, "must be bool", "run", "lombscargle", a[0], a[1], a[2], "normalize=0.5");
	CTL_FAIL(0, "has no output 'nosuch'", "run", "lombscargle", a[0], a[1], a[2], "-o", a[9]);
	ck_assert_msg(access(p[9], F_OK) != 0, "%s was written despite the error", p[9]);
	/* Usage errors exit 2. */
	CTL_FAIL(2, "given twice", "run", "lombscargle", a[0], a[0], a[1], a[2]);
	CTL_FAIL(2, "unknown command", "frobnicate");
	CTL_FAIL(2, "missing KERNEL", "run");

	/* None of the failures left buffers behind (gpuctl exits; its connection closes). */
	gpud_client *c = lib_connect();
	gpud_daemon_status s = wait_no_buffers(c, 2.0);
	ck_assert_msg(s.buffers == 0 && s.bytes_in_use == 0,
		      "after the failed runs: %" PRIu64 " buffers, %" PRIu64 " bytes", s.buffers,
		      s.bytes_in_use);
	gpud_close(c);
}
END_TEST

/* ========================================================================================= */
/* size limits (gpud --max-message-size 64KiB)                                               */
/* ========================================================================================= */

START_TEST(test_message_size_limit)
{
	gpud_client *c = lib_connect();
	const size_t big = 1u << 20;
	uint64_t n = big / sizeof(double);
	double *data = calloc(n, sizeof(double));
	gpud_handle h;
	uint8_t *m;
	size_t len;

	ck_assert_ptr_nonnull(data);
	ck_assert_uint_eq(gpud_server(c)->max_message_size, 65536);
	/* Over the limit: the library sends and fetches it in message-sized pieces. */
	for (uint64_t i = 0; i < n; i++)
		data[i] = (double)i * 0.5 + 1.0;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, data, &h));
	gpud_array back;
	LIB_OK(c, gpud_download(c, h, &back));
	ck_assert_uint_eq(back.nbytes, big);
	ck_assert_msg(memcmp(back.data, data, big) == 0,
		      "1 MiB round trip in 64 KiB pieces differs");
	gpud_array_free(&back);
	LIB_OK(c, gpud_free(c, &h, 1));
	/* Up to the limit is fine. */
	uint64_t ok_n = 65536 / sizeof(double);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &ok_n, data, &h));
	LIB_OK(c, gpud_free(c, &h, 1));

	/* 1 MiB of junk on a plain REQ socket: far over the limit, nng drops the connection. */
	uint8_t *junk = malloc(2 * big);
	uint64_t seed = 31337;
	ck_assert_ptr_nonnull(junk);
	for (size_t i = 0; i < 2 * big; i++)
		junk[i] = (uint8_t)(rng_next(&seed) | 0x80);
	raw_reply r;
	int rv = raw_call_isolated(junk, big, 1500, &r);
	ck_assert_msg(rv != 0,
		      "1 MiB of junk to a daemon limited to 64 KiB was answered (code %" PRIu64
		      " '%s'); expected a dropped connection",
		      r.code, r.message);
	assert_fresh_client_works("1 MiB of junk");
	rv = raw_call_isolated(junk, 2 * big, 1500, &r);
	ck_assert_msg(rv != 0, "2 MiB of junk was answered (code %" PRIu64 " '%s')", r.code,
		      r.message);
	assert_fresh_client_works("2 MiB of junk");

	/*
	 * Well-formed allocs from a client that does not check the limit itself:
	 * 1 MiB of payload is refused (TOO_LARGE or a drop), and a payload just
	 * over the limit (65544 bytes) gets TOO_LARGE naming both sizes. Neither
	 * is stored.
	 */
	pb alloc = {.n = 0}, shape = {.n = 0}, hdr;
	pb_uint(&alloc, 1, 2); /* DTYPE_F64 */
	pb_varint(&shape, n);
	pb_sub(&alloc, 2, &shape);
	pb_uint(&alloc, 3, 1); /* with_data */
	hdr = pb_request(WIRE_VERSION, 1, 11, &alloc);
	m = frame(&hdr, data, big, &len);
	rv = raw_call_isolated(m, len, 3000, &r);
	free(m);
	ck_assert_msg(rv != 0 || r.code == ST_TOO_LARGE,
		      "an alloc with a %zu-byte payload on a daemon limited to 65536 bytes was "
		      "answered with code %" PRIu64 " ('%s'), expected TOO_LARGE (%d) or a drop",
		      big, r.code, r.message, ST_TOO_LARGE);
	assert_fresh_client_works("an alloc of 1 MiB");

	pb alloc2 = {.n = 0}, shape2 = {.n = 0};
	pb_uint(&alloc2, 1, 2);
	pb_varint(&shape2, 8193); /* 65544 bytes */
	pb_sub(&alloc2, 2, &shape2);
	pb_uint(&alloc2, 3, 1);
	hdr = pb_request(WIRE_VERSION, 2, 11, &alloc2);
	m = frame(&hdr, data, 8193 * sizeof(double), &len);
	rv = raw_call_isolated(m, len, 3000, &r);
	free(m);
	ck_assert_msg(rv == 0, "an alloc 8 bytes over the limit got no reply: %s",
		      nng_strerror(rv));
	ck_assert_msg(r.code == ST_TOO_LARGE,
		      "an alloc 8 bytes over the limit: code %" PRIu64 " ('%s')", r.code,
		      r.message);
	ck_assert_msg(strstr(r.message, "65544") && strstr(r.message, "65536"),
		      "the message should name 65544 and 65536: '%s'", r.message);
	assert_fresh_client_works("an oversized alloc");

	/* The first client's connection was never disturbed. */
	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0);
	free(junk);
	free(data);
	gpud_close(c);
}
END_TEST

START_TEST(test_download_in_ranges)
{
	/* An output bigger than one message: fetched in pieces, whole or by range. */
	const size_t nx = 20, nf = 16384; /* 128 KiB of float64 */
	double x[20], y[20], *f = malloc(nf * sizeof(double)), *ref = malloc(nf * sizeof(double));
	double *got = malloc(nf * sizeof(double));
	gpud_client *c = lib_connect();
	uint64_t sx = nx, sf = nf;
	gpud_handle h[4];

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(ref);
	ck_assert_ptr_nonnull(got);
	gen_ls(2718, nx, nf, x, y, f);
	ls_ref(x, y, nx, f, nf, 0, 1, ref);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, x, &h[0]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, y, &h[1]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, NULL, &h[2]));
	LIB_OK(c, gpud_upload(c, h[2], 0, f, 65536));
	LIB_OK(c, gpud_upload(c, h[2], 65536, (char *)f + 65536, nf * sizeof(double) - 65536));
	gpud_arg args[4] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			    gpud_arg_buffer("freqs", h[2]), gpud_arg_bool("normalize", 1)};
	gpud_output o;
	size_t no;
	LIB_OK(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL));
	h[3] = o.handle;
	gpud_array a;
	LIB_OK(c, gpud_download(c, o.handle, &a));
	ck_assert_uint_eq(a.nbytes, nf * sizeof(double));
	assert_matches(a.data, GPUD_F64, ref, nf, "lombscargle downloaded whole, in pieces");
	gpud_array_free(&a);
	memset(got, 0, nf * sizeof(double));
	LIB_OK(c, gpud_download_range(c, o.handle, 0, got, 65536));
	LIB_OK(c, gpud_download_range(c, o.handle, 65536, (char *)got + 65536,
				      nf * sizeof(double) - 65536));
	assert_matches(got, GPUD_F64, ref, nf, "lombscargle downloaded in two ranges");
	LIB_OK(c, gpud_free(c, h, 4));
	gpud_close(c);
	free(f);
	free(ref);
	free(got);
}
END_TEST

/* gpuctl with files larger than one message: read, uploaded and written in pieces. */
START_TEST(test_gpuctl_over_message_limit)
{
	const size_t nx = 50, nf = 20000; /* 160 KiB of float64 freqs and pgram, limit 64 KiB */
	double x[50], y[50], *f = malloc(nf * sizeof(double)), *ref = malloc(nf * sizeof(double));
	char px[700], py[700], pf[700], po[700], ax[720], ay[720], afr[720], err[512];

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(ref);
	gen_ls(4242, nx, nf, x, y, f);
	ls_ref(x, y, nx, f, nf, 1, 0, ref);
	save_ls_inputs("b", x, y, nx, f, nf, px, py, pf);
	path_in_dir(po, sizeof(po), "bo.npy");
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(afr, sizeof(afr), "freqs=%s", pf);
	ctl_result *r = CTL("run", "lombscargle", ax, ay, afr, "precenter=true", "-o", po);
	assert_ctl_ok(r);
	gpud_array a;
	ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(a.shape[0], nf);
	assert_matches(a.data, GPUD_F64, ref, nf, "gpuctl run over the message limit");
	gpud_array_free(&a);
	free(f);
	free(ref);
}
END_TEST

/* ========================================================================================= */
/* shutdown                                                                                  */
/* ========================================================================================= */

typedef struct long_run {
	size_t nx, nf;
	double *x, *y, *f;
	atomic_int started; /* set just before gpud_run is sent */
	double t_done;      /* when gpud_run returned */
	ls_result res;
	char msg[1024];
	double *out;       /* the output, if the daemon still serves a download */
	gpud_status dl_st; /* that download's status */
	char dl_msg[1024];
} long_run;

static void *long_run_thread(void *arg)
{
	long_run *lr = arg;
	gpud_client *c;
	uint64_t sx = lr->nx, sf = lr->nf;
	gpud_handle h[3];

	memset(&lr->res, 0, sizeof(lr->res));
	if ((lr->res.st = gpud_connect(url, &c)) != GPUD_OK) {
		snprintf(lr->msg, sizeof(lr->msg), "connect: %s", gpud_errmsg(c));
		gpud_close(c);
		atomic_store(&lr->started, -1);
		return NULL;
	}
	gpud_set_timeout(c, 120000);
	if ((lr->res.st = gpud_alloc(c, GPUD_F64, 1, &sx, lr->x, &h[0])) != GPUD_OK ||
	    (lr->res.st = gpud_alloc(c, GPUD_F64, 1, &sx, lr->y, &h[1])) != GPUD_OK ||
	    (lr->res.st = gpud_alloc(c, GPUD_F64, 1, &sf, lr->f, &h[2])) != GPUD_OK) {
		snprintf(lr->msg, sizeof(lr->msg), "alloc: %s", gpud_errmsg(c));
		gpud_close(c);
		atomic_store(&lr->started, -1);
		return NULL;
	}
	gpud_arg args[4] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			    gpud_arg_buffer("freqs", h[2]), gpud_arg_bool("precenter", 1)};
	atomic_store(&lr->started, 1);
	lr->res.st = gpud_run(c, "lombscargle", args, 4, &lr->res.out, 1, &lr->res.nout,
			      &lr->res.info);
	lr->t_done = now_s();
	if (lr->res.st != GPUD_OK) {
		snprintf(lr->msg, sizeof(lr->msg), "run: %s: %s", gpud_strerror(lr->res.st),
			 gpud_errmsg(c));
	} else {
		/* A stopping gpud serves nothing new, so this normally fails (after at
		 * most the timeout); if it is served, the output gets checked. */
		gpud_set_timeout(c, 2000);
		lr->dl_st = gpud_download_range(c, lr->res.out.handle, 0, lr->out,
						lr->nf * sizeof(double));
		snprintf(lr->dl_msg, sizeof(lr->dl_msg), "%s", gpud_errmsg(c));
	}
	gpud_close(c);
	return NULL;
}

START_TEST(test_sigterm_drains_inflight_run)
{
	gpud_client *c = lib_connect();
	int cpu = !strcmp(gpud_server(c)->backend, "cpu");
	long_run lr;
	pthread_t t;

	memset(&lr, 0, sizeof(lr));
	/* Seconds on 2 cpu cores; the GPU gets 2^22 frequencies. */
	lr.nx = cpu ? 2000 : 8000;
	lr.nf = cpu ? (size_t)1 << 17 : (size_t)1 << 22;
	lr.x = malloc(lr.nx * sizeof(double));
	lr.y = malloc(lr.nx * sizeof(double));
	lr.f = malloc(lr.nf * sizeof(double));
	lr.out = malloc(lr.nf * sizeof(double));
	ck_assert_msg(lr.x && lr.y && lr.f && lr.out, "out of memory");
	gen_ls(8080, lr.nx, lr.nf, lr.x, lr.y, lr.f);
	ck_assert_int_eq(pthread_create(&t, NULL, long_run_thread, &lr), 0);

	/* Wait until the run is inside the daemon: in_flight counts it and our status. */
	double deadline = now_s() + 30;
	int seen = 0;
	while (!seen && now_s() < deadline) {
		if (atomic_load(&lr.started) == 0) {
			sleep_ms(1);
			continue;
		}
		if (atomic_load(&lr.started) < 0)
			break;
		gpud_daemon_status s = lib_status(c);
		seen = s.in_flight >= 2;
	}
	gpud_close(c);
	double t_term = now_s();
	ck_assert_int_eq(kill(gpud_pid, SIGTERM), 0);
	pthread_join(t, NULL);
	ck_assert_msg(atomic_load(&lr.started) > 0, "setting up the long run failed: %s", lr.msg);
	ck_assert_msg(seen, "never saw the run in flight");

	ck_assert_msg(lr.res.st == GPUD_OK,
		      "the run in flight at SIGTERM did not complete: %s (status %d)", lr.msg,
		      (int)lr.res.st);
	ck_assert_msg(lr.t_done > t_term, "the run finished before SIGTERM; make it longer");
	ck_assert_uint_eq(lr.res.nout, 1);
	ck_assert_str_eq(lr.res.out.name, "pgram");
	ck_assert_int_eq(lr.res.out.dtype, GPUD_F64);
	ck_assert_uint_eq(lr.res.out.shape[0], lr.nf);
	ck_assert_msg(lr.res.out.handle != 0, "no output handle");
	ck_assert_msg(lr.res.info.elapsed_us > 0, "elapsed_us %g", lr.res.info.elapsed_us);

	printf("shutdown: the run finished %.2f s after SIGTERM (%.2f s in gpud); a download "
	       "after it: %s\n",
	       lr.t_done - t_term, lr.res.info.elapsed_us / 1e6,
	       lr.dl_st == GPUD_OK ? "served" : gpud_strerror(lr.dl_st));
	fflush(stdout);
	if (lr.dl_st == GPUD_OK) {
		/* Still served: no NaN anywhere, and spot checks against the reference. */
		for (size_t i = 0; i < lr.nf; i++)
			ck_assert_msg(isfinite(lr.out[i]), "pgram[%zu] = %g", i, lr.out[i]);
		for (size_t k = 0; k < 8; k++) {
			size_t i = k * (lr.nf / 8) + k;
			double want;
			ls_ref(lr.x, lr.y, lr.nx, &lr.f[i], 1, 1, 0, &want);
			ck_assert_msg(fabs(lr.out[i] - want) <= 1e-9 * fabs(want) + 1e-12,
				      "pgram[%zu] = %.17g, expected %.17g", i, lr.out[i], want);
		}
	} else {
		/* Refused cleanly, not hung and not a bogus success. */
		ck_assert_msg(lr.dl_st == GPUD_ETRANSPORT || lr.dl_st == GPUD_ETIMEDOUT ||
				      lr.dl_st == GPUD_ESHUTDOWN || lr.dl_st == GPUD_ECONNECT,
			      "download after SIGTERM: %s: %s", gpud_strerror(lr.dl_st), lr.dl_msg);
	}

	/* Then gpud exits 0 by itself. */
	int st;
	char how[128];
	ck_assert_msg(wait_pid_timeout(gpud_pid, 20.0, &st) == 0,
		      "gpud still running 20 s after SIGTERM and the run's reply");
	gpud_reaped = 1;
	gpud_wstatus = st;
	describe_wait(st, how, sizeof(how));
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		dump_file("gpud log", logpath);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "gpud %s after draining, expected exit status 0 (log above)", how);

	/* New connections are refused now. */
	gpud_client *late;
	gpud_status lst = gpud_connect(url, &late);
	ck_assert_msg(lst == GPUD_ECONNECT, "connect after shutdown: %s", gpud_strerror(lst));
	gpud_close(late);
	free(lr.x);
	free(lr.y);
	free(lr.f);
	free(lr.out);
}
END_TEST

/* ========================================================================================= */
/* concurrency                                                                               */
/* ========================================================================================= */

#define NTHREADS 16
#define NITER 8

typedef struct worker {
	int id;
	int ok_runs;
	char msg[1200];
} worker;

static void *worker_main(void *arg)
{
	worker *w = arg;
	gpud_client *c;
	gpud_dtype dt = (w->id & 1) ? GPUD_F32 : GPUD_F64;

	if (gpud_connect(url, &c) != GPUD_OK) {
		snprintf(w->msg, sizeof(w->msg), "connect: %s", gpud_errmsg(c));
		gpud_close(c);
		return NULL;
	}
	gpud_set_timeout(c, 60000);
	for (int it = 0; it < NITER; it++) {
		size_t nx = 20 + (size_t)w->id, nf = 30 + (size_t)it * 3;
		double x[64], y[64], f[64], ref[64], got[64];
		ls_result res;
		size_t bad;

		gen_ls((uint64_t)(w->id * 1000 + it), nx, nf, x, y, f);
		if (dt == GPUD_F32) {
			round_to_f32(x, nx);
			round_to_f32(y, nx);
			round_to_f32(f, nf);
		}
		ls_ref(x, y, nx, f, nf, it & 1, (it >> 1) & 1, ref);
		ls_lib_run(c, dt, x, y, nx, f, nf, it & 1, (it >> 1) & 1, 0, got, &res);
		if (res.st != GPUD_OK) {
			snprintf(w->msg, sizeof(w->msg), "iteration %d: %s", it, res.msg);
			break;
		}
		double e = rel_err(got, dt, ref, nf, &bad);
		if (!(e <= tol_for(dt))) {
			snprintf(w->msg, sizeof(w->msg),
				 "iteration %d: relative error %.3g at element %zu (got %.17g, "
				 "expected %.17g)",
				 it, e, bad, elem(got, dt, bad), ref[bad]);
			break;
		}
		w->ok_runs++;
	}
	gpud_close(c);
	return NULL;
}

START_TEST(test_many_clients_at_once)
{
	pthread_t t[NTHREADS];
	worker w[NTHREADS];

	for (int i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_msg(w[i].ok_runs == NITER, "client %d: %d of %d runs succeeded: %s", i,
			      w[i].ok_runs, NITER, w[i].msg);

	gpud_client *c = lib_connect();
	gpud_daemon_status s = wait_no_buffers(c, 2.0);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(s.bytes_in_use, 0);
	ck_assert_uint_eq(s.errors, 0);
	/* hello + NITER x (3 allocs, run, download, free) per client, at least. */
	ck_assert_uint_ge(s.requests, (uint64_t)NTHREADS * (1 + NITER * 6));
	gpud_close(c);
}
END_TEST

/* ========================================================================================= */
/* tenants                                                                                   */
/* ========================================================================================= */

/* A self-signed certificate (CN=localhost, IP 127.0.0.1, EC P-256, valid to
 * 2126) for the tls+tcp:// tests, and another that did not sign it. */
static const char test_tls_cert[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBmzCCAUGgAwIBAgIUQhUT6joIZ6dzgyinZmSomb6UF6cwCgYIKoZIzj0EAwIw\n"
	"FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMTA3MjE1OVoYDzIxMjYxMDI4\n"
	"MDcyMTU5WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
	"PQMBBwNCAAR/j/lQzRcfoJFasTISDyVdwZZVuhIWvs8XIHYjSFt+B6YeQurgw8Y/\n"
	"vpN7tF2pYPfGiT/Hl5QXKuf3Teex6VtNo28wbTAdBgNVHQ4EFgQU5KhkAZKLCxkQ\n"
	"q/OTOK9ShP1SXT0wHwYDVR0jBBgwFoAU5KhkAZKLCxkQq/OTOK9ShP1SXT0wDwYD\n"
	"VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\n"
	"zj0EAwIDSAAwRQIgQjpjO8JHfC9AguRJ3ADw4UfhZpMBQDc8hEs3vIxdXIACIQCn\n"
	"ViXNkSNa+JGFtY6+1pUvIrPjguoywDpnRegSApE07w==\n"
	"-----END CERTIFICATE-----\n";
static const char test_tls_key[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtWLULh1ok4h1Eas+\n"
	"fVFGjWUJ0udkGgMd/8fTM4HMoeyhRANCAAR/j/lQzRcfoJFasTISDyVdwZZVuhIW\n"
	"vs8XIHYjSFt+B6YeQurgw8Y/vpN7tF2pYPfGiT/Hl5QXKuf3Teex6VtN\n"
	"-----END PRIVATE KEY-----\n";
static const char other_tls_cert[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBmzCCAUGgAwIBAgIUa6Zpxjbm+KN3h2BnoFSTNstPtBQwCgYIKoZIzj0EAwIw\n"
	"FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMTA3MjIyM1oYDzIxMjYxMDI4\n"
	"MDcyMjIzWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
	"PQMBBwNCAASD7m6mCuUGi5OxqQ2Q+8I06xjaWfGGI6qZvI/9ZtDmFQdDZk3SVLCH\n"
	"22bRyM1S729DszO92d1Gm12dcwJs96xko28wbTAdBgNVHQ4EFgQURCD3ndQpkXsb\n"
	"I/pDnz3wIH0kRfswHwYDVR0jBBgwFoAURCD3ndQpkXsbI/pDnz3wIH0kRfswDwYD\n"
	"VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\n"
	"zj0EAwIDSAAwRQIgZ3C8A3Wwu0lE++4yTvflcwMMKhbmZUt8xrpZ90jTzKACIQDo\n"
	"okCpW4r9QcXO6TjQe72OFiPi621dcIOnomghAAlHVg==\n"
	"-----END CERTIFICATE-----\n";

static char tcp_url[64], tls_url[64], tokens_path[700], cert_path[700], other_path[700];
#define TOKEN_ALICE "alice-0123456789abcdef"
#define TOKEN_BOB "bob-fedcba9876543210xx"

static void setup_tenants(void)
{
	/* quota: 1 MiB of device memory, 2 kept buffers, 1 request in flight;
	 * bob: 3 kept buffers and 64 KiB messages */
	static char conf[4096];
	static const char *extra[] = {"--listen", tcp_url, "--listen", tls_url, NULL};
	static char key_path[700];
	snprintf(tcp_url, sizeof(tcp_url), "tcp://127.0.0.1:%d", 20000 + (int)(getpid() % 20000));
	snprintf(tls_url, sizeof(tls_url), "tls+tcp://127.0.0.1:%d",
		 40000 + (int)(getpid() % 20000));
	snprintf(cert_path, sizeof(cert_path), "%s/cert-%d.pem", base_dir, (int)getpid());
	snprintf(key_path, sizeof(key_path), "%s/key-%d.pem", base_dir, (int)getpid());
	snprintf(other_path, sizeof(other_path), "%s/other-%d.pem", base_dir, (int)getpid());
	write_text(cert_path, test_tls_cert);
	write_text(key_path, test_tls_key);
	chmod(key_path, 0600);
	write_text(other_path, other_tls_cert);
	snprintf(tokens_path, sizeof(tokens_path), "%s/tokens-%d", base_dir, (int)getpid());
	write_text(tokens_path, "# tenant token\nalice " TOKEN_ALICE "\nbob " TOKEN_BOB "\n");
	chmod(tokens_path, 0600);
	snprintf(conf, sizeof(conf),
		 "[gpud]\nsocket_mode = 0666\ntokens_file = %s\ntls_cert = %s\ntls_key = %s\n"
		 "admin_tenants = alice\n"
		 "[quota]\ndevice_bytes = 1MiB\nkept_buffers = 2\nrequests_in_flight = 1\n"
		 "[tenant bob]\nkept_buffers = 3\nmessage_size = 64KiB\n",
		 tokens_path, cert_path, key_path);
	gpud_config_text = conf;
	start_gpud(extra);
	gpud_config_text = NULL;
}

static gpud_client *connect_as(const char *u, const char *token, gpud_status want)
{
	gpud_client *c;
	if (token)
		setenv("GPUD_TOKEN", token, 1);
	else
		unsetenv("GPUD_TOKEN");
	gpud_status st = gpud_connect(u, &c);
	unsetenv("GPUD_TOKEN");
	ck_assert_msg(st == want, "connect %s with %s: %s: %s", u, token ? token : "no token",
		      gpud_strerror(st), gpud_errmsg(c));
	if (st != GPUD_OK) {
		gpud_close(c);
		return NULL;
	}
	gpud_set_timeout(c, 30000);
	return c;
}

/* gpuctl over tcp:// with --token: upload, ls, free; without: refused. */
static void gpuctl_token_checks(void)
{
	char px[700];
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	path_in_dir(px, sizeof(px), "tok.npy");
	save_vec(px, GPUD_F64, v, 8);
	ctl_result *r = CTL_AT(tcp_url, "upload", px);
	ck_assert_msg(r->code == 1 && strstr(r->err, "no token"), "gpuctl without a token: %d %s",
		      r->code, r->err);
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "upload", px, "--keep");
	assert_ctl_ok(r);
	char handle[32];
	ck_assert_int_eq(sscanf(r->out, "%31s", handle), 1);
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "ls");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, handle) && strstr(r->out, "tenant bob"), "ls: %s", r->out);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "ls");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, handle) == NULL, "alice's ls shows bob's buffer: %s", r->out);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "free", handle);
	ck_assert_msg(r->code == 1 && strstr(r->err, "unknown handle"), "alice frees bob's: %s",
		      r->err);
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "free", handle);
	assert_ctl_ok(r);
}

START_TEST(test_tcp_tokens_and_isolation)
{
	gpud_client *none = NULL, *alice, *bob, *alice2;
	uint64_t n = 16;
	double v[16], got[16];
	for (int i = 0; i < 16; i++)
		v[i] = i * 1.5;

	/* no token, a wrong one: refused at hello, named */
	gpud_status st = gpud_connect(tcp_url, &none);
	ck_assert_int_eq(st, GPUD_EACCESS);
	ck_assert_msg(strstr(gpud_errmsg(none), "no token"), "%s", gpud_errmsg(none));
	gpud_close(none);
	setenv("GPUD_TOKEN", "alice-0123456789abcdeX", 1);
	st = gpud_connect(tcp_url, &none);
	unsetenv("GPUD_TOKEN");
	ck_assert_int_eq(st, GPUD_EACCESS);
	ck_assert_msg(strstr(gpud_errmsg(none), "unknown token"), "%s", gpud_errmsg(none));
	gpud_close(none);

	alice = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK);
	bob = connect_as(tcp_url, TOKEN_BOB, GPUD_OK);
	ck_assert_str_eq(gpud_server(alice)->tenant, "alice");
	ck_assert_str_eq(gpud_server(bob)->tenant, "bob");
	ck_assert(!gpud_has_shm(alice)); /* host regions need ipc:// */
	ck_assert_ptr_null(gpud_host_alloc(alice, 4096));
	ck_assert_msg(strstr(gpud_errmsg(alice), "ipc://") != NULL, "%s", gpud_errmsg(alice));

	gpud_handle ha, hb, made_up = 0x0123456789abcdefull;
	LIB_OK(alice, gpud_alloc(alice, GPUD_F64, 1, &n, v, &ha));
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &n, v, &hb));
	/* bob names alice's handle: the same answer as one that never existed */
	char msg_theirs[512], msg_none[512];
	LIB_FAIL(bob, gpud_download_range(bob, ha, 0, got, sizeof(got)), GPUD_ENOTFOUND,
		 "unknown handle");
	snprintf(msg_theirs, sizeof(msg_theirs), "%s", gpud_errmsg(bob));
	LIB_FAIL(bob, gpud_download_range(bob, made_up, 0, got, sizeof(got)), GPUD_ENOTFOUND,
		 "unknown handle");
	snprintf(msg_none, sizeof(msg_none), "%s", gpud_errmsg(bob));
	ck_assert_uint_eq(strlen(msg_theirs), strlen(msg_none)); /* but for the digits */
	LIB_FAIL(bob, gpud_free(bob, &ha, 1), GPUD_ENOTFOUND, "unknown handle");
	LIB_FAIL(bob, gpud_upload(bob, ha, 0, v, 8), GPUD_ENOTFOUND, "unknown handle");
	gpud_arg args[] = {gpud_arg_buffer("x", ha), gpud_arg_buffer("y", hb),
			   gpud_arg_buffer("freqs", hb)};
	LIB_FAIL(bob, gpud_run(bob, "lombscargle", args, 3, NULL, 0, NULL, NULL), GPUD_ENOTFOUND,
		 "unknown handle");
	/* alice's data untouched; another connection of alice's sees it */
	alice2 = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK);
	LIB_OK(alice2, gpud_download_range(alice2, ha, 0, got, sizeof(got)));
	ck_assert(memcmp(got, v, sizeof(v)) == 0);

	/* bob's message_size quota (64 KiB) holds, named with the numbers */
	uint64_t big = 20000;
	double *bv = calloc(big, sizeof(double));
	gpud_handle hbig;
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &big, NULL, &hbig));
	LIB_FAIL(bob, gpud_upload(bob, hbig, 0, bv, big * sizeof(double)), GPUD_EQUOTA,
		 "message_size quota of tenant bob");
	free(bv);
	gpuctl_token_checks();
	gpud_close(alice);
	gpud_close(alice2);
	gpud_close(bob);
}
END_TEST

START_TEST(test_tls_with_tokens)
{
	gpud_client *c;
	uint64_t n = 8;
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8];

	/* no CA to check gpud against: refused before connecting, with the fix */
	unsetenv("GPUD_TLS_CA");
	gpud_status st = gpud_connect(tls_url, &c);
	ck_assert_int_eq(st, GPUD_ECONNECT);
	ck_assert_msg(strstr(gpud_errmsg(c), "GPUD_TLS_CA"), "%s", gpud_errmsg(c));
	gpud_close(c);
	/* a CA that did not sign gpud's certificate: the handshake fails */
	setenv("GPUD_TLS_CA", other_path, 1);
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	setenv("GPUD_TOKEN", TOKEN_ALICE, 1);
	st = gpud_connect(tls_url, &c);
	ck_assert_msg(st != GPUD_OK, "connected over TLS with the wrong CA");
	printf("tls with the wrong CA: %s\n", gpud_errmsg(c));
	gpud_close(c);
	/* the right CA and a token: tenant alice, over an encrypted connection
	 * (mbedtls matches DNS names, so the name to check is given) */
	setenv("GPUD_TLS_CA", cert_path, 1);
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	st = gpud_connect(tls_url, &c);
	unsetenv("GPUD_TOKEN");
	ck_assert_msg(st == GPUD_OK, "tls connect: %s", gpud_errmsg(c));
	ck_assert_str_eq(gpud_server(c)->tenant, "alice");
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	LIB_OK(c, gpud_download_range(c, h, 0, got, sizeof(got)));
	ck_assert(memcmp(got, v, sizeof(v)) == 0);
	gpud_close(c);
	/* and without a token the hello is refused, as on tcp:// */
	st = gpud_connect(tls_url, &c);
	ck_assert_int_eq(st, GPUD_EACCESS);
	gpud_close(c);
	unsetenv("GPUD_TLS_CA");
	unsetenv("GPUD_TLS_SERVER_NAME");
}
END_TEST

/* Custom kernels on the cpu backend: registered and checked, not run. */
START_TEST(test_custom_kernels_registered)
{
	const char *ew_in = "float32 x, float32 y, float32 a", *ew_out = "float32 z",
		   *body = "z = exp(a * sin(x) + cos(y))";
	ctl_result *r = CTL("kernel", "add", "my_saxpy_trig", "--elementwise", ew_in, ew_out, body);
	if (strcmp(expected_backend(), "cpu") != 0) {
		/* compiled and run on the GPU: make test-gpu covers that */
		assert_ctl_ok(r);
		assert_ctl_ok(CTL("kernel", "rm", "my_saxpy_trig"));
		return;
	}
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "registered my_saxpy_trig"), "%s", r->out);
	r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "my_saxpy_trig") && strstr(r->out, "float32 array or scalar"),
		      "kernels: %s", r->out);

	float x[4] = {0.1f, 0.2f, 0.3f, 0.4f}, y[5] = {1, 2, 3, 4, 5};
	char px[700], py[700], py5[700], px64[700], ax[720], ay[720], ay5[720], ax64[720];
	uint64_t s4 = 4, s5 = 5;
	path_in_dir(px, sizeof(px), "cx.npy");
	path_in_dir(py, sizeof(py), "cy.npy");
	path_in_dir(py5, sizeof(py5), "cy5.npy");
	path_in_dir(px64, sizeof(px64), "cx64.npy");
	save_npy(px, GPUD_F32, 1, &s4, x);
	save_npy(py, GPUD_F32, 1, &s4, y);
	save_npy(py5, GPUD_F32, 1, &s5, y);
	double x64[4] = {0.1, 0.2, 0.3, 0.4};
	save_npy(px64, GPUD_F64, 1, &s4, x64);
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(ay5, sizeof(ay5), "y=%s", py5);
	snprintf(ax64, sizeof(ax64), "x=%s", px64);
	/* checked like a built-in, then the cpu backend says it cannot run it */
	CTL_FAIL(1, "custom kernels need the cuda backend", "run", "my_saxpy_trig", ax, ay,
		 "a=0.5");
	CTL_FAIL(1, "'y' has 5 elements but 'x' has 4", "run", "my_saxpy_trig", ax, ay5, "a=0.5");
	CTL_FAIL(1, "'x'", "run", "my_saxpy_trig", ax64, ay, "a=0.5");
	CTL_FAIL(1, "missing argument 'a'", "run", "my_saxpy_trig", ax, ay);
	CTL_FAIL(1, "is a built-in kernel", "kernel", "add", "lombscargle", "--elementwise", ew_in,
		 ew_out, body);
	CTL_FAIL(1, "registered already", "kernel", "add", "my_saxpy_trig", "--elementwise", ew_in,
		 ew_out, body);
	CTL_FAIL(1, "declares no output", "kernel", "add", "noout", "--elementwise", ew_in, "",
		 body);

	/* raw: the signature and source are checked */
	char src[700];
	path_in_dir(src, sizeof(src), "scale.cu");
	write_text(src, "extern \"C\" __global__ void scale(const float *x, float *y, float s, "
			"int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = "
			"s * x[i]; }\n");
	CTL_FAIL(1, "unknown type 'f33'", "kernel", "add", "scale", "--source", src, "--entry",
		 "scale", "--sig", "x:in f33[], y:out f32[]");
	CTL_FAIL(1, "has no 'scal'", "kernel", "add", "scale", "--source", src, "--entry", "scal",
		 "--sig", "x:in f32[], y:out f32[], s:f32, n:i32");
	CTL_FAIL(2, "needs --source FILE.cu", "kernel", "add", "scale", "--entry", "scale");
	r = CTL("kernel", "add", "scale", "--source", src, "--entry", "scale", "--sig",
		"x:in f32[], y:out f32[], s:f32, n:i32", "--blocks-per-sm", "2");
	assert_ctl_ok(r);
	CTL_FAIL(1, "output 'y' must be passed as a buffer", "run", "scale", ax, "s=2", "n=4");

	/* another tenant sees none of it, and has a namespace of its own */
	gpud_client *bob = connect_as(tcp_url, TOKEN_BOB, GPUD_OK);
	gpud_kernel_list *kl;
	LIB_OK(bob, gpud_kernels(bob, &kl));
	for (size_t i = 0; i < kl->count; i++)
		ck_assert_msg(strcmp(kl->kernels[i].name, "my_saxpy_trig") != 0,
			      "bob sees the other tenant's kernel");
	gpud_kernel_list_free(kl);
	LIB_FAIL(bob, gpud_run(bob, "my_saxpy_trig", NULL, 0, NULL, 0, NULL, NULL),
		 GPUD_EUNKNOWN_KERNEL, "unknown kernel 'my_saxpy_trig'");
	gpud_kernel_spec spec = {.name = "my_saxpy_trig",
				 .elementwise = 1,
				 .source = "z = x",
				 .in_params = "float64 x",
				 .out_params = "float64 z"};
	LIB_OK(bob, gpud_register(bob, &spec));
	gpud_close(bob);

	r = CTL("kernel", "rm", "my_saxpy_trig");
	assert_ctl_ok(r);
	CTL_FAIL(1, "unknown kernel 'my_saxpy_trig'", "run", "my_saxpy_trig", ax, ay, "a=0.5");
	CTL_FAIL(1, "no kernel 'my_saxpy_trig'", "kernel", "rm", "my_saxpy_trig");
	assert_daemon_alive("custom kernel registrations");
}
END_TEST

/* Kernels an administrator shares with every tenant. */
START_TEST(test_shared_kernels)
{
	gpud_client *alice = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK),
		    *bob = connect_as(tcp_url, TOKEN_BOB, GPUD_OK);
	gpud_kernel_spec spec = {.name = "double_it",
				 .elementwise = 1,
				 .source = "y = 2 * x",
				 .in_params = "float64 x",
				 .out_params = "float64 y",
				 .shared = 1};
	LIB_FAIL(bob, gpud_register(bob, &spec), GPUD_EACCESS, "not in admin_tenants");
	LIB_OK(alice, gpud_register(alice, &spec));
	/* bob sees it, runs it (checked; the cpu backend then declines), cannot take its name */
	gpud_kernel_list *kl;
	LIB_OK(bob, gpud_kernels(bob, &kl));
	int seen = 0;
	for (size_t i = 0; i < kl->count; i++)
		if (!strcmp(kl->kernels[i].name, "double_it"))
			seen = strstr(kl->kernels[i].doc, "shared") != NULL;
	gpud_kernel_list_free(kl);
	ck_assert_msg(seen, "bob does not see the shared kernel");
	double v[3] = {1, 2, 3};
	gpud_array a = {.dtype = GPUD_F64, .ndim = 1, .shape = {3}, .data = v, .nbytes = 24};
	gpud_arg args[] = {gpud_arg_array("x", &a)};
	gpud_result out;
	size_t no;
	if (!strcmp(expected_backend(), "cpu"))
		LIB_FAIL(bob, gpud_call(bob, "double_it", args, 1, &out, 1, &no, NULL),
			 GPUD_EUNSUPPORTED, "need the cuda backend");
	gpud_kernel_spec mine = spec;
	mine.shared = 0;
	LIB_FAIL(bob, gpud_register(bob, &mine), GPUD_EINVAL, "is a shared kernel");
	LIB_FAIL(bob, gpud_unregister_shared(bob, "double_it"), GPUD_EACCESS, "admin_tenants");
	LIB_FAIL(bob, gpud_unregister(bob, "double_it"), GPUD_EUNKNOWN_KERNEL, "no kernel");
	LIB_OK(alice, gpud_unregister_shared(alice, "double_it"));
	LIB_FAIL(bob, gpud_call(bob, "double_it", args, 1, &out, 1, &no, NULL),
		 GPUD_EUNKNOWN_KERNEL, "unknown kernel 'double_it'");
	gpud_close(alice);
	gpud_close(bob);
}
END_TEST

START_TEST(test_hello_first)
{
	nng_socket s = raw_open(10000);
	pb alloc = {.n = 0}, shape = {.n = 0}, empty = {.n = 0};
	pb_uint(&alloc, 1, 2);
	pb_varint(&shape, 4);
	pb_sub(&alloc, 2, &shape);
	raw_reply r = raw_body_on(s, 3, 11, &alloc, NULL, 0);
	ck_assert_msg(r.code == 12 && strstr(r.message, "send hello first"), "%" PRIu64 " %s",
		      r.code, r.message);
	r = raw_body_on(s, 4, 17, &empty, NULL, 0); /* status is served */
	ck_assert_uint_eq(r.code, ST_OK);
	raw_say_hello(s);
	r = raw_body_on(s, 5, 11, &alloc, NULL, 0);
	ck_assert_msg(r.code == ST_OK, "alloc after hello: %s", r.message);
	nng_close(s);
}
END_TEST

/* This program as another user (see main): alloc, print "tenant handle", then
 * try the handle read from stdin and print the status and message. */
static int as_uid_main(long uid, const char *u)
{
	gpud_client *c;
	if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0) {
		printf("setuid %ld: %s\n", uid, strerror(errno));
		return 2;
	}
	if (gpud_connect(u, &c) != GPUD_OK) {
		printf("connect: %s\n", gpud_errmsg(c));
		return 1;
	}
	uint64_t n = 4;
	double v[4] = {1, 2, 3, 4}, got[4];
	gpud_handle h;
	if (gpud_alloc(c, GPUD_F64, 1, &n, v, &h) != GPUD_OK) {
		printf("alloc: %s\n", gpud_errmsg(c));
		return 1;
	}
	printf("%s %016llx\n", gpud_server(c)->tenant, (unsigned long long)h);
	fflush(stdout);
	char line[64];
	if (fgets(line, sizeof(line), stdin) == NULL)
		return 1;
	gpud_status st = gpud_download_range(c, strtoull(line, NULL, 16), 0, got, sizeof(got));
	printf("%d %s\n", (int)st, st ? gpud_errmsg(c) : "read");
	fflush(stdout);
	gpud_close(c);
	return 0;
}

START_TEST(test_two_uids_over_ipc)
{
	if (getuid() != 0) {
		printf("two uids: skipped (needs root to setuid; CI runs as root)\n");
		return;
	}
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(self_path, self_path, "--as-uid", "65534", url, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	FILE *fo = fdopen(out[0], "r"), *fi = fdopen(in[1], "w");
	char line[1024], tenant[64];
	unsigned long long theirs;
	ck_assert_msg(fgets(line, sizeof(line), fo) != NULL, "the uid-65534 client said nothing");
	ck_assert_msg(sscanf(line, "%63s %llx", tenant, &theirs) == 2, "uid 65534: %s", line);

	gpud_client *c = lib_connect();
	ck_assert_str_eq(gpud_server(c)->tenant, "root");
	ck_assert_str_ne(tenant, "root");
	uint64_t n = 4;
	double v[4] = {9, 8, 7, 6}, got[4];
	gpud_handle mine;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &mine));
	/* root names the other user's handle: not found */
	LIB_FAIL(c, gpud_download_range(c, theirs, 0, got, sizeof(got)), GPUD_ENOTFOUND,
		 "unknown handle");
	/* the other user names root's */
	fprintf(fi, "%016llx\n", (unsigned long long)mine);
	fflush(fi);
	ck_assert(fgets(line, sizeof(line), fo) != NULL);
	ck_assert_msg(strncmp(line, "2 ", 2) == 0 && strstr(line, "unknown handle"),
		      "uid 65534 reading root's handle: %s", line);
	int st;
	waitpid(pid, &st, 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fclose(fo);
	fclose(fi);
	/* status lists both tenants' connections while they lasted; root's data intact */
	LIB_OK(c, gpud_download_range(c, mine, 0, got, sizeof(got)));
	ck_assert(memcmp(got, v, sizeof(v)) == 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_kept_buffers_and_quotas)
{
	char px[700], py[700], pf[700], po[700], ax[720], ay[720], af[720], err[512];
	const size_t nx = 30, nf = 50;
	double x[30], y[30], f[50], ref[50];

	/* gpuctl upload --keep: outlives gpuctl; run with @HANDLE; download; free */
	gen_ls(31, nx, nf, x, y, f);
	ls_ref(x, y, nx, f, nf, 0, 0, ref);
	save_ls_inputs("k", x, y, nx, f, nf, px, py, pf);
	path_in_dir(po, sizeof(po), "ko.npy");
	ctl_result *r = CTL("upload", px, "--keep");
	assert_ctl_ok(r);
	char hx[40];
	ck_assert_int_eq(sscanf(r->out, "%31s", hx + 1), 1);
	hx[0] = '@';
	r = CTL("upload", py); /* not kept: gone when that gpuctl exits */
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->err, "without --keep"), "%s", r->err);
	r = CTL("ls");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "1 kept buffers") && strstr(r->out, hx + 1), "ls: %s", r->out);
	snprintf(ax, sizeof(ax), "x=%s", hx);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(af, sizeof(af), "freqs=%s", pf);
	r = CTL("run", "lombscargle", ax, ay, af, "-o", po);
	assert_ctl_ok(r);
	gpud_array a;
	ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
	assert_matches(a.data, GPUD_F64, ref, nf, "run with x=@HANDLE");
	gpud_array_free(&a);
	r = CTL("download", hx + 1, "-o", po);
	assert_ctl_ok(r);
	ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert(a.nbytes == sizeof(x) && memcmp(a.data, x, sizeof(x)) == 0);
	gpud_array_free(&a);
	CTL_FAIL(2, "not a handle", "free", "zz");

	gpud_client *c = lib_connect();
	gpud_daemon_status st = lib_status(c);
	ck_assert_uint_eq(st.buffers, 1); /* only the kept one */

	/* kept_buffers = 2 (one in use): a second is fine, a third is over */
	uint64_t n = 4;
	double v[4] = {1, 2, 3, 4};
	gpud_handle k2, k3, h1, h2;
	gpud_set_keep(c, 1);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &k2));
	LIB_FAIL(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &k3), GPUD_EQUOTA,
		 "kept_buffers quota of tenant");
	ck_assert_msg(strstr(gpud_errmsg(c), "keeps 2 of 2"), "%s", gpud_errmsg(c));
	gpud_set_keep(c, 0);
	/* device_bytes = 1 MiB: 600 KiB fits, another 600 KiB does not */
	uint64_t m = 600 * 1024 / 8;
	double *big = malloc(m * sizeof(double));
	for (uint64_t i = 0; i < m; i++)
		big[i] = (double)i;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &m, big, &h1));
	LIB_FAIL(c, gpud_alloc(c, GPUD_F64, 1, &m, NULL, &h2), GPUD_EQUOTA,
		 "device_bytes quota of tenant");
	ck_assert_msg(strstr(gpud_errmsg(c), "614400 bytes asked") &&
			      strstr(gpud_errmsg(c), "1048576"),
		      "%s", gpud_errmsg(c));
	/* nothing of the tenant's was touched */
	double *back = malloc(m * sizeof(double));
	LIB_OK(c, gpud_download_range(c, h1, 0, back, m * sizeof(double)));
	ck_assert(memcmp(back, big, m * sizeof(double)) == 0);
	free(back);
	free(big);
	LIB_OK(c, gpud_free(c, &h1, 1));
	r = CTL("free", hx + 1);
	assert_ctl_ok(r);
	LIB_OK(c, gpud_free(c, &k2, 1));
	r = CTL("ls");
	ck_assert_msg(strstr(r->out, "0 kept buffers"), "ls: %s", r->out);
	gpud_close(c);
}
END_TEST

/* requests_in_flight = 1: a second request of the tenant while one runs is refused. */
static void *slow_run(void *arg)
{
	ls_result *res = arg;
	const size_t nx = 3000, nf = 60000;
	float *x = malloc(nx * 4), *y = malloc(nx * 4), *f = malloc(nf * 4);
	for (size_t i = 0; i < nx; i++) {
		x[i] = (float)i * 0.01f;
		y[i] = (float)((i * 7) % 13) - 6.0f + 0.5f;
	}
	for (size_t i = 0; i < nf; i++)
		f[i] = 0.01f + (float)i * 1e-4f;
	gpud_client *c;
	res->st = gpud_connect(url, &c);
	if (res->st == GPUD_OK) {
		gpud_array ax = {.dtype = GPUD_F32,
				 .ndim = 1,
				 .shape = {nx},
				 .data = x,
				 .nbytes = nx * 4},
			   ay = {.dtype = GPUD_F32,
				 .ndim = 1,
				 .shape = {nx},
				 .data = y,
				 .nbytes = nx * 4},
			   af = {.dtype = GPUD_F32,
				 .ndim = 1,
				 .shape = {nf},
				 .data = f,
				 .nbytes = nf * 4};
		gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
				   gpud_arg_array("freqs", &af)};
		gpud_result out;
		size_t no;
		res->st = gpud_call(c, "lombscargle", args, 3, &out, 1, &no, &res->info);
		if (res->st == GPUD_OK)
			gpud_array_free(&out.array);
		else
			snprintf(res->msg, sizeof(res->msg), "%s", gpud_errmsg(c));
	}
	gpud_close(c);
	free(x);
	free(y);
	free(f);
	return NULL;
}

START_TEST(test_requests_in_flight_quota)
{
	if (strcmp(expected_backend(), "cpu") != 0) {
		/* The quota is the daemon's, not the backend's; a GPU finishes the
		 * run before a second request can find it in flight. */
		printf("requests_in_flight: checked on the cpu backend (runs there are slow enough)\n");
		return;
	}
	ls_result res;
	memset(&res, 0, sizeof(res));
	gpud_client *c = lib_connect();
	pthread_t th;
	pthread_create(&th, NULL, slow_run, &res);
	gpud_status st = GPUD_OK;
	double deadline = now_s() + 10;
	/* status is always served; an alloc of the same tenant is over the quota */
	while (now_s() < deadline) {
		gpud_daemon_status ds = lib_status(c);
		if (ds.in_flight >= 2) { /* the run and this status */
			uint64_t n = 4;
			gpud_handle h;
			st = gpud_alloc(c, GPUD_F64, 1, &n, NULL, &h);
			break;
		}
		sleep_ms(5);
	}
	ck_assert_msg(st == GPUD_EQUOTA && strstr(gpud_errmsg(c), "requests_in_flight quota"),
		      "an alloc while the tenant's run is in flight: %s: %s", gpud_strerror(st),
		      gpud_errmsg(c));
	pthread_join(th, NULL);
	ck_assert_msg(res.st == GPUD_OK, "the slow run: %s", res.msg);
	gpud_close(c);
}
END_TEST

/* ========================================================================================= */

/* ========================================================================================= */
/* clients killed in the middle                                                              */
/* ========================================================================================= */

/* This program as a client that is killed (see main): prints "ready" just
 * before its blocking call. kind: upload (a big upload through messages),
 * run (a slow one-trip run), region (host memory mapped, then a run). */
static int doomed_main(const char *u, const char *kind)
{
	gpud_client *c;
	if (!strcmp(kind, "upload"))
		setenv("GPUD_NO_SHM", "1", 1);
	if (gpud_connect(u, &c) != GPUD_OK) {
		printf("connect: %s\n", gpud_errmsg(c));
		return 1;
	}
	uint64_t n = 24u << 20; /* 24 Mi doubles: 192 MiB */
	gpud_handle h;
	if (!strcmp(kind, "upload")) {
		double *v = calloc(n, sizeof(double));
		if (v == NULL || gpud_alloc(c, GPUD_F64, 1, &n, NULL, &h) != GPUD_OK)
			return 1;
		printf("ready\n");
		fflush(stdout);
		gpud_upload(c, h, 0, v, n * sizeof(double));
		for (;;)
			pause();
	}
	const size_t nx = 4000, nf = 200000;
	float *x = gpud_host_alloc(c, nx * 4), *y = malloc(nx * 4), *f = malloc(nf * 4);
	if (x == NULL && !strcmp(kind, "region")) {
		printf("host alloc: %s\n", gpud_errmsg(c));
		return 1;
	}
	if (x == NULL)
		x = malloc(nx * 4);
	for (size_t i = 0; i < nx; i++) {
		x[i] = (float)i * 0.01f;
		y[i] = (float)(i % 5) - 2.0f + 0.25f;
	}
	for (size_t i = 0; i < nf; i++)
		f[i] = 0.01f + (float)i * 1e-5f;
	gpud_array ax = {.dtype = GPUD_F32, .ndim = 1, .shape = {nx}, .data = x, .nbytes = nx * 4},
		   ay = {.dtype = GPUD_F32, .ndim = 1, .shape = {nx}, .data = y, .nbytes = nx * 4},
		   af = {.dtype = GPUD_F32, .ndim = 1, .shape = {nf}, .data = f, .nbytes = nf * 4};
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_array("freqs", &af)};
	gpud_result out;
	size_t no;
	printf("ready\n");
	fflush(stdout);
	gpud_call(c, "lombscargle", args, 3, &out, 1, &no, NULL);
	/* A fast device may be done already: stay connected until killed. */
	for (;;)
		pause();
}

static void kill_mid_way(const char *kind)
{
	gpud_client *c = lib_connect();
	gpud_daemon_status base = lib_status(c);
	int out[2];
	ck_assert_int_eq(pipe(out), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execl(self_path, self_path, "--doomed", url, kind, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	FILE *fo = fdopen(out[0], "r");
	char line[256] = "";
	ck_assert_msg(fgets(line, sizeof(line), fo) && !strcmp(line, "ready\n"), "%s client: %s",
		      kind, line);
	sleep_ms(30); /* into the upload or the run */
	gpud_daemon_status mid = lib_status(c);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	fclose(fo);
	/* Everything it had goes back; the daemon serves on. */
	double deadline = now_s() + 20;
	gpud_daemon_status s;
	for (;;) {
		s = lib_status(c);
		if ((s.buffers == base.buffers && s.bytes_in_use == base.bytes_in_use &&
		     s.connections == base.connections && s.in_flight == 1) ||
		    now_s() > deadline)
			break;
		sleep_ms(20);
	}
	printf("killed mid-%s: %" PRIu64 " buffers, %u connections, %u in flight while it ran; "
	       "after: %" PRIu64 " buffers (%" PRIu64 " bytes), %u connections\n",
	       kind, mid.buffers, mid.connections, mid.in_flight, s.buffers, s.bytes_in_use,
	       s.connections);
	ck_assert_msg(mid.connections == base.connections + 1,
		      "the %s client was not connected when killed", kind);
	ck_assert_uint_eq(s.buffers, base.buffers);
	ck_assert_uint_eq(s.bytes_in_use, base.bytes_in_use);
	ck_assert_uint_eq(s.connections, base.connections);
	for (int i = 0; i < s.nsessions; i++)
		ck_assert_msg(s.sessions[i].regions == 0, "session %u keeps %" PRIu64 " regions",
			      s.sessions[i].id, s.sessions[i].regions);
	gpud_close(c);
	assert_fresh_client_works("a client killed mid-way");
}

START_TEST(test_killed_mid_upload)
{
	kill_mid_way("upload");
}
END_TEST

START_TEST(test_killed_mid_run)
{
	kill_mid_way("run");
}
END_TEST

START_TEST(test_killed_with_a_region)
{
	kill_mid_way("region");
}
END_TEST

static Suite *e2e_suite(void)
{
	Suite *s = suite_create("e2e");
	TCase *tc;

	tc = tcase_create("library");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_connect_server_info);
	tcase_add_test(tc, test_roundtrip_dtypes);
	tcase_add_test(tc, test_zero_dim_array);
	tcase_add_test(tc, test_upload_offset_download_range);
	tcase_add_test(tc, test_free_and_unknown_handles);
	tcase_add_test(tc, test_kernels_list);
	tcase_add_test(tc, test_status_counts);
	tcase_add_test(tc, test_lombscargle_library);
	tcase_add_test(tc, test_lombscargle_into_given_output);
	tcase_add_test(tc, test_session_order_and_sync);
	tcase_add_test(tc, test_library_errors);
	tcase_add_test(tc, test_raw_protocol_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("sessions");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_buffers_freed_on_close);
	tcase_add_test(tc, test_host_regions_library);
	tcase_add_test(tc, test_host_region_refusals);
	tcase_add_test(tc, test_call_one_round_trip);
	tcase_add_test(tc, test_call_raw_payload_mismatch);
	suite_add_tcase(s, tc);

	tc = tcase_create("gpuctl");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_gpuctl_run_writes_output);
	tcase_add_test(tc, test_gpuctl_kernels_and_status);
	tcase_add_test(tc, test_gpuctl_elementwise);
	tcase_add_test(tc, test_gpuctl_histogram);
	tcase_add_test(tc, test_gpuctl_libraries);
	tcase_add_test(tc, test_gpuctl_dead_url);
	tcase_add_test(tc, test_gpuctl_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("no libraries");
	tcase_add_checked_fixture(tc, setup_no_libraries, gpud_teardown);
	tcase_add_test(tc, test_libraries_missing);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, setup_small_messages, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_message_size_limit);
	tcase_add_test(tc, test_download_in_ranges);
	tcase_add_test(tc, test_gpuctl_over_message_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("shutdown");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_sigterm_drains_inflight_run);
	suite_add_tcase(s, tc);

	tc = tcase_create("tenants");
	tcase_add_checked_fixture(tc, setup_tenants, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tcp_tokens_and_isolation);
	tcase_add_test(tc, test_tls_with_tokens);
	tcase_add_test(tc, test_custom_kernels_registered);
	tcase_add_test(tc, test_shared_kernels);
	tcase_add_test(tc, test_hello_first);
	tcase_add_test(tc, test_two_uids_over_ipc);
	tcase_add_test(tc, test_kept_buffers_and_quotas);
	tcase_add_test(tc, test_requests_in_flight_quota);
	suite_add_tcase(s, tc);

	tc = tcase_create("faults");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_killed_mid_upload);
	tcase_add_test(tc, test_killed_mid_run);
	tcase_add_test(tc, test_killed_with_a_region);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrency");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_many_clients_at_once);
	suite_add_tcase(s, tc);
	return s;
}

/* After the run: a directory left behind is a test that failed in fork mode
 * (no teardown ran); show its gpud log. */
static int show_leftover(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	size_t n = strlen(path);
	if (flag == FTW_F && ftw->level == 2 && n > 9 && !strcmp(path + n - 9, "/gpud.log"))
		dump_file("gpud log of a failed test", path);
	return 0;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");

	if (argc == 5 && !strcmp(argv[1], "--raw-send"))
		return raw_send_main(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "--doomed"))
		return doomed_main(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "--as-uid"))
		return as_uid_main(atol(argv[2]), argv[3]);
	ssize_t sl = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (sl <= 0) {
		fprintf(stderr, "test_e2e: readlink /proc/self/exe: %s\n", strerror(errno));
		return 2;
	}
	self_path[sl] = '\0';

	gpud_bin = getenv("GPUD_BIN");
	gpuctl_bin = getenv("GPUCTL_BIN");
	backend_env = getenv("GPUD_BACKEND");
	if (backend_env == NULL || backend_env[0] == '\0')
		backend_env = "cpu";
	if (!gpud_bin || !gpuctl_bin || gpud_bin[0] != '/' || gpuctl_bin[0] != '/') {
		fprintf(stderr, "test_e2e: set GPUD_BIN and GPUCTL_BIN to absolute paths "
				"('make test-e2e' does)\n");
		return 2;
	}
	if (access(gpud_bin, X_OK) != 0 || access(gpuctl_bin, X_OK) != 0) {
		fprintf(stderr, "test_e2e: %s or %s is not executable\n", gpud_bin, gpuctl_bin);
		return 2;
	}
	/* ipc:// paths must fit in sun_path (108 bytes). */
	if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 48)
		tmp = "/tmp";
	snprintf(base_dir, sizeof(base_dir), "%s/gpud-e2e-XXXXXX", tmp);
	if (mkdtemp(base_dir) == NULL) {
		fprintf(stderr, "test_e2e: mkdtemp %s: %s\n", base_dir, strerror(errno));
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	printf("e2e: gpud %s, gpuctl %s, backend %s, work in %s\n", gpud_bin, gpuctl_bin,
	       backend_env, base_dir);
	fflush(stdout);

	double t0 = now_s();
	SRunner *sr = srunner_create(e2e_suite());
	srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY=verbose lists every test */
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	nftw(base_dir, show_leftover, 16, FTW_PHYS);
	rm_tree(base_dir);
	nng_fini(); /* with CK_FORK=no the tests ran here: no threads left for valgrind */
	printf("e2e: %.1f s\n", now_s() - t0);
	return failed == 0 ? 0 : 1;
}
