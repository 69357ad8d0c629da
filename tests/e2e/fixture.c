/*
 * tests/e2e/fixture.c — the end-to-end suite's gpud and gpuctl: every test's
 * gpud (a checked fixture on tests/harness.h: a private ipc:// socket in a
 * fresh directory of base_dir; stopped with SIGTERM and required to exit 0),
 * its restart, and the gpuctl runner with its checks. The rest of the shared
 * parts: fixture_data.c (inputs, the reference periodogram, .npy files),
 * fixture_client.c (libgpud-client helpers), fixture_raw.c (requests made and
 * read by hand). See e2e.h. Each test runs single-threaded in its own process
 * (Check's fork mode); this state is that process's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
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

void test_library(const char *name, const char *prefix, char *so, size_t solen, char *rec,
		  size_t reclen)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", self_path);
	snprintf(so, solen, "%s/tests/%s", dirname(dir), name);
	ck_assert_msg(access(so, R_OK) == 0, "%s is missing (make builds it with test-e2e)", so);
	snprintf(rec, reclen, "%s/%s-%d.rec", base_dir, prefix, (int)getpid());
	unlink(rec);
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
