/*
 * tests/e2e/shell.c — command lines run as a user types them, for the gpuctl
 * command-line tests and the README's examples: `bash -c LINE` in the test's
 * directory, with the gpuctl under test first on PATH (then the folder of
 * $E2E_PYTHON if set, a python3 with numpy, then /usr/bin, /bin: Debian's
 * python3 with numpy) and GPUD_URL set to the test's gpud; its
 * stdout, stderr and exit status captured. sh_run_tty does the same with
 * stderr on a pseudo-terminal (120 columns; also the line's /dev/tty), to see
 * what gpuctl draws there.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

/* In the child: the environment every line gets. */
static void child_env(void)
{
	static char path[2 * PATH_MAX + 32];
	char bin[PATH_MAX], py[PATH_MAX] = "";
	const char *e = getenv("E2E_PYTHON");
	snprintf(bin, sizeof(bin), "%s", gpuctl_bin);
	if (e && e[0] == '/') {
		char tmp[PATH_MAX];
		snprintf(tmp, sizeof(tmp), "%s", e);
		snprintf(py, sizeof(py), "%s:", dirname(tmp));
	}
	snprintf(path, sizeof(path), "%s:%s/usr/bin:/bin", dirname(bin), py);
	setenv("PATH", path, 1);
	setenv("GPUD_URL", e2e_gpud.url, 1);
	unsetenv("GPUD_TOKEN");
	unsetenv("GPUCTL_PROGRESS_DELAY");
}

static void describe(ctl_result *r, const char *line)
{
	snprintf(r->cmd, sizeof(r->cmd), "%s", line);
}

static void finish(ctl_result *r, pid_t pid, const char *outp, const char *errp)
{
	int st;
	if (harness_wait_pid(pid, 60.0, &st) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("'%s' did not finish within 60 s", r->cmd);
	}
	r->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	harness_read_text(outp, r->out, sizeof(r->out));
	unlink(outp);
	if (errp) {
		harness_read_text(errp, r->err, sizeof(r->err));
		unlink(errp);
	}
}

ctl_result *sh_run(const char *line)
{
	static ctl_result r;
	static int seq;
	char outp[700], errp[700];

	describe(&r, line);
	seq++;
	snprintf(outp, sizeof(outp), "%s/sh-%d.out", e2e_gpud.dir, seq);
	snprintf(errp, sizeof(errp), "%s/sh-%d.err", e2e_gpud.dir, seq);
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
		child_env();
		signal(SIGPIPE, SIG_DFL); /* the suite ignores it; a shell's pipes need it */
		execl("/bin/bash", "bash", "-c", line, (char *)NULL);
		_exit(127);
	}
	finish(&r, pid, outp, errp);
	return &r;
}

ctl_result *sh_run_tty(const char *line)
{
	static ctl_result r;
	static int seq;
	char outp[700];
	size_t got = 0;

	describe(&r, line);
	seq++;
	snprintf(outp, sizeof(outp), "%s/tty-%d.out", e2e_gpud.dir, seq);
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	ck_assert_msg(m >= 0, "posix_openpt: %s", strerror(errno));
	ck_assert_msg(grantpt(m) == 0 && unlockpt(m) == 0, "grantpt: %s", strerror(errno));
	const char *sname = ptsname(m);
	ck_assert_ptr_nonnull(sname);
	struct winsize ws = {.ws_row = 24, .ws_col = 120};
	ioctl(m, TIOCSWINSZ, &ws);
	/* Opened here, so the terminal has a writer from the start: until the child's copy
	 * is closed, reading the master waits rather than failing. */
	int s = open(sname, O_RDWR | O_NOCTTY);
	ck_assert_msg(s >= 0, "open %s: %s", sname, strerror(errno));
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		setsid();
		int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDONLY);
		if (fo < 0 || nul < 0 || chdir(e2e_gpud.dir) != 0)
			_exit(126);
		close(m);
		dup2(nul, 0);
		dup2(fo, 1);
		dup2(s, 2);
		close(s);
		ioctl(2, TIOCSCTTY, 0); /* its terminal: /dev/tty names it */
		child_env();
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/bash", "bash", "-c", line, (char *)NULL);
		_exit(127);
	}
	close(s);
	/* Read what the terminal shows until every writer has closed it (EIO). */
	double deadline = harness_now_s() + E2E_SAFETY_S;
	for (;;) {
		struct pollfd p = {.fd = m, .events = POLLIN};
		int n = poll(&p, 1, 100);
		if (n > 0) {
			ssize_t k = read(m, r.err + got, sizeof(r.err) - 1 - got);
			if (k <= 0)
				break; /* EIO: the slave side is closed */
			got += (size_t)k;
			if (got == sizeof(r.err) - 1)
				break;
		}
		ck_assert_msg(harness_now_s() < deadline, "'%s' kept its terminal open for 60 s",
			      line);
	}
	r.err[got] = '\0';
	close(m);
	finish(&r, pid, outp, NULL);
	return &r;
}

void assert_sh_ok(const ctl_result *r)
{
	ck_assert_msg(r->code == 0, "'%s' exited %d, expected 0\nstdout: %s\nstderr: %s", r->cmd,
		      r->code, r->out, r->err);
}
