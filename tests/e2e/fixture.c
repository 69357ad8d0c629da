/*
 * tests/e2e/fixture.c — the end-to-end suite's shared parts: every test's gpud
 * (a checked fixture on tests/harness.h: a private ipc:// socket in a fresh
 * directory of base_dir; stopped with SIGTERM and required to exit 0), the
 * gpuctl runner, libgpud-client helpers, the reference periodogram, and
 * requests made and read by hand on a plain nng REQ socket. See e2e.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/e2e/e2e.h"

#include <nng/protocol/reqrep0/req.h>

const char *gpud_bin, *gpuctl_bin, *backend_env;
char base_dir[256];
char self_path[PATH_MAX];
harness_gpud e2e_gpud;

/* --- the gpud fixture --------------------------------------------------------------- */

const char *expected_backend(void)
{
	return backend_env;
}

/* The last start's options, for restart_gpud (the strings are the caller's). */
static const char *last_args[32];
static harness_gpud_opts last_opts;

void start_gpud(const char *config, const char *const *extra, const char *const *env)
{
	start_gpud_in_cgroup(config, extra, env, NULL);
}

void start_gpud_in_cgroup(const char *config, const char *const *extra, const char *const *env,
			  const char *cgroup)
{
	const char **args = last_args;
	int n = 2;
	char msg[2048];

	args[0] = "--log-level";
	args[1] = "debug";
	for (int i = 0; extra && extra[i] && n < 31; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	harness_gpud_opts o = {
		.bin = gpud_bin,
		.backend = backend_env,
		.config = config,
		.args = args,
		.env = env,
		.parent = base_dir,
		.prefix = "t",
		.dir_mode = 0755,          /* other users reach the socket only through it */
		.timeout_s = E2E_SAFETY_S, /* until it answers hello: a loaded machine is slow */
		/* A test that fails in fork mode _exits without teardown: take gpud along. */
		.die_with_parent = 1,
		.cgroup = cgroup,
	};
	memset(&e2e_gpud, 0, sizeof(e2e_gpud)); /* a fresh directory, whatever came before */
	last_opts = o;
	if (harness_gpud_start(&e2e_gpud, &o, msg, sizeof(msg)) != 0) {
		if (e2e_gpud.log[0])
			harness_dump_file("gpud log", e2e_gpud.log);
		ck_abort_msg("%s", msg);
	}
}

void stop_gpud_now(int hard)
{
	char msg[2048];
	if (hard) {
		kill(e2e_gpud.pid, SIGKILL);
		ck_assert_msg(harness_gpud_wait(&e2e_gpud, 30) == 0, "gpud survived SIGKILL");
	} else {
		ck_assert_msg(harness_gpud_stop(&e2e_gpud, 30, msg, sizeof(msg)) == 0, "%s", msg);
	}
}

void start_gpud_again(void)
{
	char msg[2048];
	if (harness_gpud_start(&e2e_gpud, &last_opts, msg, sizeof(msg)) != 0) {
		harness_dump_file("gpud log", e2e_gpud.log);
		ck_abort_msg("%s", msg);
	}
}

void setup_default(void)
{
	start_gpud(NULL, NULL, NULL);
}

void gpud_teardown(void)
{
	char how[128];

	if (e2e_gpud.pid <= 0)
		return; /* nothing started, or torn down already (nofork re-entry) */
	harness_gpud_stop(&e2e_gpud, 10.0, NULL, 0);
	int killed = e2e_gpud.killed, st = e2e_gpud.wstatus;
	int ok = !killed && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	harness_describe_wait(st, how, sizeof(how));
	if (!ok)
		harness_dump_file("gpud log", e2e_gpud.log);
	harness_gpud_remove(&e2e_gpud);
	ck_assert_msg(!killed, "gpud did not exit within 10 s of SIGTERM; killed it (log above)");
	ck_assert_msg(ok, "gpud %s after SIGTERM, expected exit status 0 (log above)", how);
}

/*
 * A loopback TCP port nothing listens on now: bound with port 0 (the kernel
 * picks one from its ephemeral range) and released. A port derived from the
 * pid instead could be any process's ephemeral port at that moment, as one
 * CI run found ("Address in use").
 */
int e2e_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert(fd >= 0);
	ck_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	ck_assert(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
	close(fd);
	return ntohs(a.sin_port);
}

void path_in_dir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", e2e_gpud.dir, name);
}

void write_text(const char *path, const char *text)
{
	char msg[1024];
	ck_assert_msg(harness_write_text(path, text, msg, sizeof(msg)) == 0, "%s", msg);
}

/* --- gpuctl --------------------------------------------------------------------------- */

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
	snprintf(outp, sizeof(outp), "%s/ctl-%d.out", e2e_gpud.dir, seq);
	snprintf(errp, sizeof(errp), "%s/ctl-%d.err", e2e_gpud.dir, seq);

	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDONLY);
		if (fo < 0 || fe < 0 || nul < 0 || chdir(e2e_gpud.dir) != 0)
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
	if (harness_wait_pid(pid, 60.0, &st) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("'%s' did not finish within 60 s", r->cmd);
	}
	r->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	harness_read_text(outp, r->out, sizeof(r->out));
	harness_read_text(errp, r->err, sizeof(r->err));
	unlink(outp);
	unlink(errp);
}

ctl_result *ctl_url(const char *u, ...)
{
	static ctl_result r;
	va_list ap;
	va_start(ap, u);
	ctl_runv(&r, u, ap);
	va_end(ap);
	return &r;
}

void assert_ctl_ok(const ctl_result *r)
{
	ck_assert_msg(r->code == 0, "'%s' exited %d, expected 0\nstdout: %s\nstderr: %s", r->cmd,
		      r->code, r->out, r->err);
}

/* `gpuctl status` still works: the daemon survived whatever came before. */
void assert_daemon_alive(const char *after)
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
void ctl_expect_error(int line, int want_code, const char *words, ...)
{
	static ctl_result r;
	va_list ap;

	va_start(ap, words);
	ctl_runv(&r, e2e_gpud.url, ap);
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

/* --- data and the reference periodogram ------------------------------------------------- */

/* Random non-uniform sample times, non-zero values of both signs, frequencies > 0. */
void gen_ls(uint64_t seed, size_t nx, size_t nf, double *x, double *y, double *f)
{
	uint64_t s = seed;
	for (size_t i = 0; i < nx; i++) {
		x[i] = 20.0 * harness_rng_unit(&s);
		double mag = 0.1 + 2.0 * harness_rng_unit(&s);
		y[i] = (harness_rng_next(&s) & 1) ? mag : -mag * 0.5;
		y[i] += 0.3 * cos(1.7 * x[i]); /* a tone to find; stays non-zero */
		if (y[i] == 0)
			y[i] = 0.25;
	}
	for (size_t i = 0; i < nf; i++)
		f[i] = 0.01 + 5.0 * harness_rng_unit(&s);
}

void round_to_f32(double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (double)(float)v[i];
}

/* v as a malloc'd array of dtype dt (F32, F64, I32 or I64). */
void *to_dtype(const double *v, size_t n, gpud_dtype dt)
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

double elem(const void *p, gpud_dtype dt, size_t i)
{
	return dt == GPUD_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* scipy <= 1.14 (legacy=true), written out as its Cython loop (Townsend). */
static void ls_ref_legacy(const double *x, const double *y, size_t nx, const double *f, size_t nf,
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
 * scipy.signal.lombscargle (scipy >= 1.15) from its definition: at each
 * frequency the weighted least-squares fit y ~ A cos(f x) + B sin(f x)
 * (+ c with floating_mean), weights normalised to sum 1, solved through its
 * normal equations (Cramer's rule); p = 2 sum w (fit - offset)^2, the offset
 * being the weighted mean of y with floating_mean and 0 without. power:
 * p N / 4; normalize: p / (2 YY), YY = sum w y^2 (- mean^2 with floating_mean);
 * amplitude: A + iB. y is centred first (unweighted mean) with precenter.
 */
void ls_ref_full(const double *x, const double *y, size_t nx, const double *f, size_t nf,
		 const ls_opts *o, double *re, double *im)
{
	if (o->legacy) {
		ls_ref_legacy(x, y, nx, f, nf, o->precenter, o->normalize == 1, re);
		if (im)
			memset(im, 0, nf * sizeof(double));
		return;
	}
	double *w = malloc(nx * sizeof(double)), *v = malloc(nx * sizeof(double));
	double wsum = 0, mean = 0, ybar = 0, yy = 0;
	ck_assert(w && v);
	for (size_t j = 0; j < nx; j++) {
		wsum += o->w ? o->w[j] : 1;
		mean += y[j];
	}
	mean /= (double)nx;
	for (size_t j = 0; j < nx; j++) {
		w[j] = (o->w ? o->w[j] : 1) / wsum;
		v[j] = o->precenter ? y[j] - mean : y[j];
		ybar += w[j] * v[j];
		yy += w[j] * v[j] * v[j];
	}
	if (!o->floating_mean)
		ybar = 0;
	yy -= ybar * ybar;
	for (size_t i = 0; i < nf; i++) {
		/* sums of w times cc, cs, ss, c, s, and of w y times c, s */
		double cc = 0, cs = 0, ss = 0, c1 = 0, s1 = 0, yc = 0, ys = 0, a, b;
		for (size_t j = 0; j < nx; j++) {
			double c = cos(f[i] * x[j]), s = sin(f[i] * x[j]);
			cc += w[j] * c * c;
			cs += w[j] * c * s;
			ss += w[j] * s * s;
			c1 += w[j] * c;
			s1 += w[j] * s;
			yc += w[j] * v[j] * c;
			ys += w[j] * v[j] * s;
		}
		if (o->floating_mean) { /* the 3x3 system with the constant, by Cramer's rule */
			double m[3][3] = {{cc, cs, c1}, {cs, ss, s1}, {c1, s1, 1}};
			double r[3] = {yc, ys, ybar};
#define DET3(a00, a01, a02, a10, a11, a12, a20, a21, a22)                                          \
	((a00) * ((a11) * (a22) - (a12) * (a21)) - (a01) * ((a10) * (a22) - (a12) * (a20)) +       \
	 (a02) * ((a10) * (a21) - (a11) * (a20)))
			double d = DET3(m[0][0], m[0][1], m[0][2], m[1][0], m[1][1], m[1][2],
					m[2][0], m[2][1], m[2][2]);
			a = DET3(r[0], m[0][1], m[0][2], r[1], m[1][1], m[1][2], r[2], m[2][1],
				 m[2][2]) /
			    d;
			b = DET3(m[0][0], r[0], m[0][2], m[1][0], r[1], m[1][2], m[2][0], r[2],
				 m[2][2]) /
			    d;
#undef DET3
		} else {
			double d = cc * ss - cs * cs;
			a = (yc * ss - ys * cs) / d;
			b = (ys * cc - yc * cs) / d;
		}
		double p = 0, off = 0;
		if (o->floating_mean) /* the fit's offset: the mean the fit leaves */
			off = ybar - a * c1 - b * s1;
		for (size_t j = 0; j < nx; j++) {
			double fit = a * cos(f[i] * x[j]) + b * sin(f[i] * x[j]) + off - ybar;
			p += w[j] * fit * fit;
		}
		p *= 2;
		if (im)
			im[i] = 0;
		if (o->normalize == 2) {
			re[i] = a;
			if (im)
				im[i] = b;
		} else if (o->normalize == 1) {
			re[i] = p / (2 * yy);
		} else {
			re[i] = p * (double)nx / 4;
		}
	}
	free(w);
	free(v);
}

/* scipy.signal.lombscargle(x, y, f, precenter, normalize) of today's scipy (ls_ref_full). */
void ls_ref(const double *x, const double *y, size_t nx, const double *f, size_t nf, int precenter,
	    int normalize, double *out)
{
	ls_opts o = {.precenter = precenter, .normalize = normalize ? 1 : 0};
	ls_ref_full(x, y, nx, f, nf, &o, out, NULL);
}

/*
 * Compares got (dtype dt) with ref: returns max |got - ref| / max |ref|, or
 * INFINITY if got has a NaN or infinity. *bad gets the worst index.
 */
double rel_err(const void *got, gpud_dtype dt, const double *ref, size_t n, size_t *bad)
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

double tol_for(gpud_dtype dt)
{
	return dt == GPUD_F64 ? 1e-9 : 1e-4;
}

void assert_matches(const void *got, gpud_dtype dt, const double *ref, size_t n, const char *what)
{
	size_t bad;
	double e = rel_err(got, dt, ref, n, &bad);
	ck_assert_msg(e <= tol_for(dt),
		      "%s: %s result differs from the reference: relative error %.3g > %.0g "
		      "(element %zu: got %.17g, expected %.17g)",
		      what, gpud_dtype_name(dt), e, tol_for(dt), bad, elem(got, dt, bad), ref[bad]);
}

void save_npy(const char *path, gpud_dtype dt, int ndim, const uint64_t *shape, const void *data)
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

void npy_arg(char *arg, size_t len, const char *name, const char *file, gpud_dtype dt,
	     const double *v, size_t n)
{
	char path[700];
	path_in_dir(path, sizeof(path), file);
	save_vec(path, dt, v, n);
	snprintf(arg, len, "%s=%s", name, path);
}

void save_vec(const char *path, gpud_dtype dt, const double *v, size_t n)
{
	uint64_t shape[1] = {n};
	void *p = to_dtype(v, n, dt);
	save_npy(path, dt, 1, shape, p);
	free(p);
}

/* --- libgpud-client helpers ---------------------------------------------------------------- */

/* x, y and freqs as float64 .npy files PREFIXx.npy, PREFIXy.npy, PREFIXf.npy in the test's
 * directory; their paths (700 bytes each) in px, py, pf. */
void save_ls_inputs(const char *prefix, const double *x, const double *y, size_t nx,
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

gpud_client *lib_connect(void)
{
	gpud_client *c;
	gpud_status st = gpud_connect(e2e_gpud.url, &c);
	ck_assert_msg(st == GPUD_OK, "gpud_connect(%s): %s: %s", e2e_gpud.url, gpud_strerror(st),
		      gpud_errmsg(c));
	gpud_set_timeout(c, 60000);
	return c;
}

gpud_daemon_status lib_status(gpud_client *c)
{
	gpud_daemon_status s;
	LIB_OK(c, gpud_status_get(c, &s));
	return s;
}

gpud_daemon_status wait_status(gpud_client *c, int (*pred)(const gpud_daemon_status *),
			       double timeout_s)
{
	double deadline = harness_now_s() + timeout_s;
	gpud_daemon_status s;
	for (;;) {
		s = lib_status(c);
		if (pred(&s) || harness_now_s() >= deadline)
			return s;
		harness_sleep_ms(5);
	}
}

static int no_buffers(const gpud_daemon_status *s)
{
	return s->buffers == 0 && s->bytes_in_use == 0;
}

/* Waits (up to timeout_s) until the daemon holds no buffers; returns the last status. */
gpud_daemon_status wait_no_buffers(gpud_client *c, double timeout_s)
{
	return wait_status(c, no_buffers, timeout_s);
}

gpud_client *connect_as_uid(long uid, const char *url)
{
	gpud_client *c;
	if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0) {
		printf("setuid %ld: %s\n", uid, strerror(errno));
		return NULL;
	}
	if (gpud_connect(url, &c) != GPUD_OK) {
		printf("connect: %s\n", gpud_errmsg(c));
		return NULL;
	}
	return c;
}

/* gpud holds no buffers once the connections of what ran `after` have closed. */
void assert_no_buffers_left(const char *after)
{
	gpud_client *c = lib_connect();
	gpud_daemon_status s = wait_no_buffers(c, E2E_SAFETY_S);
	ck_assert_msg(s.buffers == 0 && s.bytes_in_use == 0,
		      "after %s: %" PRIu64 " buffers, %" PRIu64 " bytes", after, s.buffers,
		      s.bytes_in_use);
	gpud_close(c);
}

/*
 * One lombscargle through the library without asserting (usable from any
 * thread): upload, run (into pgram_buf if non-zero), download into result
 * (nf elements of dt), free what it made.
 */
void ls_lib_run(gpud_client *c, gpud_dtype dt, const double *x, const double *y, size_t nx,
		const double *f, size_t nf, int precenter, int normalize, gpud_handle pgram_buf,
		void *result, ls_result *res)
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

void pb_varint(pb *p, uint64_t v)
{
	while (v >= 0x80) {
		p->b[p->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p->b[p->n++] = (uint8_t)v;
}

void pb_key(pb *p, unsigned field, unsigned wiretype)
{
	pb_varint(p, (uint64_t)field << 3 | wiretype);
}

void pb_uint(pb *p, unsigned field, uint64_t v)
{
	pb_key(p, field, 0);
	pb_varint(p, v);
}

void pb_sub(pb *p, unsigned field, const pb *sub)
{
	pb_key(p, field, 2);
	pb_varint(p, sub->n);
	memcpy(p->b + p->n, sub->b, sub->n);
	p->n += sub->n;
}

/* Request{version, id, <body field> = body}. */
pb pb_request(uint32_t version, uint64_t id, unsigned body_field, const pb *body)
{
	pb p = {.n = 0};
	pb_uint(&p, 1, version);
	pb_uint(&p, 2, id);
	pb_sub(&p, body_field, body);
	return p;
}

/* [u32 LE header length][header][payload_len bytes of payload]; malloc'd. */
uint8_t *frame(const pb *hdr, const void *payload, size_t payload_len, size_t *total)
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
int parse_reply(const uint8_t *m, size_t len, raw_reply *r)
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
int pb_find(const uint8_t *b, size_t n, unsigned field, const uint8_t **p, size_t *len, uint64_t *v)
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

uint64_t raw_alloc_f64(nng_socket s, uint64_t n)
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

void raw_hello(nng_socket s, char *path, size_t pathlen, uint8_t key[16])
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

t_shm_reply shm_send(const char *path, const uint8_t *key, uint64_t size, uint32_t flags,
		     const int *fds, int nfds, size_t msg_len)
{
	t_shm_register msg;
	memset(&msg, 0, sizeof(msg));
	memcpy(msg.magic, "gpudshm1", 8);
	memcpy(msg.key, key, 16);
	msg.size = size;
	msg.flags = flags;
	ck_assert_uint_le(msg_len, sizeof(msg));
	return shm_send_bytes(path, &msg, msg_len, fds, nfds);
}

t_shm_reply shm_send_bytes(const char *path, const void *bytes, size_t len, const int *fds,
			   int nfds)
{
	t_shm_reply rep;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memset(&rep, 0, sizeof(rep));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_msg(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s: %s", path,
		      strerror(errno));
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(8 * sizeof(int))];
	} cbuf;
	memset(&cbuf, 0, sizeof(cbuf));
	struct iovec iov = {.iov_base = (void *)bytes, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ck_assert_int_le(nfds, 8);
	if (nfds > 0) {
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	ck_assert_int_eq(sendmsg(s, &mh, MSG_NOSIGNAL), (ssize_t)len);
	struct timeval tv = {.tv_sec = 30};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (recv(s, &rep, sizeof(rep), 0) != (ssize_t)sizeof(rep))
		rep.status = -1;
	close(s);
	rep.message[sizeof(rep.message) - 1] = '\0';
	return rep;
}

/* A plain hello on s (tenant assigned; nothing checked beyond OK). */
void raw_say_hello(nng_socket s)
{
	pb empty = {.n = 0};
	raw_reply r = raw_body_on(s, 1, 10, &empty, NULL, 0);
	ck_assert_msg(r.code == ST_OK, "raw hello: %" PRIu64 " %s", r.code, r.message);
}

nng_socket raw_open(int timeout_ms)
{
	nng_socket s;
	int rv;
	ck_assert_msg((rv = nng_req0_open(&s)) == 0, "nng_req0_open: %s", nng_strerror(rv));
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, timeout_ms);
	rv = nng_dial(s, e2e_gpud.url, NULL, 0);
	ck_assert_msg(rv == 0, "nng_dial %s: %s", e2e_gpud.url, nng_strerror(rv));
	return s;
}

/*
 * Sends len bytes as one message on a fresh REQ socket and waits up to
 * timeout_ms for the reply. Returns 0 with *r filled, or the nng error of the
 * receive (NNG_ETIMEDOUT when the daemon dropped the message).
 */
int raw_call(const void *msg, size_t len, int timeout_ms, raw_reply *r)
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
void raw_call_on(nng_socket s, const void *msg, size_t len, raw_reply *r)
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
raw_reply raw_body_on(nng_socket s, uint64_t id, unsigned field, const pb *body,
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
int raw_call_isolated(const void *msg, size_t len, int timeout_ms, raw_reply *r)
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
		execl(self_path, self_path, "--raw-send", e2e_gpud.url, msgpath, tbuf,
		      (char *)NULL);
		_exit(127);
	}
	int st;
	if (harness_wait_pid(pid, timeout_ms / 1000.0 + 20.0, &st) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("the --raw-send helper did not finish within %d ms + 20 s",
			     timeout_ms);
	}
	harness_describe_wait(st, how, sizeof(how));
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the --raw-send helper %s", how);
	harness_read_text(outpath, out, sizeof(out));
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
int raw_send_main(const char *u, const char *path, int timeout_ms)
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
	/*
	 * Never redial: gpud drops this connection on purpose, and a redial cut
	 * short by the _exit below aborts an SP negotiation, after which nng
	 * 1.5's listener accepts no more connections (nng issue #1518, fixed in
	 * 1.6.0; Debian 12 ships 1.5.2): every later test would hang in hello.
	 */
	nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 3600 * 1000);
	nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 3600 * 1000);
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
void raw_expect(const void *msg, size_t len, uint64_t want_code, const char *words,
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

void assert_fresh_client_works(const char *after)
{
	gpud_client *c;
	gpud_daemon_status s;
	gpud_status st = gpud_connect(e2e_gpud.url, &c);
	ck_assert_msg(st == GPUD_OK, "after %s: a fresh client cannot connect: %s", after,
		      gpud_errmsg(c));
	gpud_set_timeout(c, 10000);
	st = gpud_status_get(c, &s);
	ck_assert_msg(st == GPUD_OK, "after %s: status on a fresh client: %s", after,
		      gpud_errmsg(c));
	gpud_close(c);
}
