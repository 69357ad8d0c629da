/*
 * tests/e2e/access.c — test case "access": who may connect over ipc://.
 * gpud gives its socket and region socket socket_mode and socket_group; a
 * user outside the group is refused by the kernel and told so ("permission
 * denied on SOCKET (mode 0660 owner root group G): ask to be added to group
 * G": GPUD_EPERM in C, gpuctl exit 77), never "is gpud running?"; a member
 * connects. A socket_group that does not exist, or that gpud's user is not
 * in, stops gpud at start with exit status 2 and the fix.
 *
 * Other users are played by uid 65534 (nobody), with no supplementary
 * groups or with the socket's group alone: this program's --access-as
 * helper mode for the library, gpuctl exec'd after dropping to it. Those
 * parts need root (CI runs as root) and are skipped, saying so, without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

#define OTHER_UID 65534

/* A group uid 65534 is not in: daemon (gid 1 on Debian), else root's group. */
static gid_t pick_group(char *name, size_t len)
{
	struct group *g = getgrnam("daemon");
	if (g == NULL)
		g = getgrgid(0);
	ck_assert_msg(g != NULL, "no group daemon and no group 0");
	snprintf(name, len, "%s", g->gr_name);
	for (char **m = g->gr_mem; *m; m++) {
		struct passwd *pw = getpwnam(*m);
		ck_assert_msg(pw == NULL || pw->pw_uid != OTHER_UID, "uid %d is in group %s",
			      OTHER_UID, name);
	}
	return g->gr_gid;
}

/* Drops this process to OTHER_UID, with group gid (-1: none) as its only
 * supplementary group. 0, or -1 with errno. */
static int become_other(long gid)
{
	gid_t g = (gid_t)gid;
	if (setgroups(gid >= 0 ? 1 : 0, gid >= 0 ? &g : NULL) != 0 ||
	    setgid((gid_t)OTHER_UID) != 0 || setuid((uid_t)OTHER_UID) != 0)
		return -1;
	return 0;
}

/* This program as OTHER_UID with group gid (-1: none): connect to url and
 * print "STATUS MESSAGE" (the tenant on success). */
int access_as_main(long gid, const char *url)
{
	if (become_other(gid) != 0) {
		printf("-1 drop privileges: %s\n", strerror(errno));
		return 1;
	}
	gpud_client *c;
	gpud_status st = gpud_connect(url, &c);
	printf("%d %s\n", (int)st, st == GPUD_OK ? gpud_server(c)->tenant : gpud_errmsg(c));
	gpud_close(c);
	return 0;
}

/* Runs --access-as gid url; its line. */
static void library_as_other(long gid, char *line, size_t len)
{
	char g[32], out[700];
	int st;
	snprintf(g, sizeof(g), "%ld", gid);
	path_in_dir(out, sizeof(out), "access-as.out");
	char *argv[] = {self_path, "--access-as", g, e2e_gpud.url, NULL};
	ck_assert(harness_run_timed(argv, out, &st) >= 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--access-as exited %d", st);
	ck_assert(harness_read_text(out, line, len) > 0);
}

/* gpuctl ARGS as OTHER_UID with group gid (-1: none), GPUD_URL the test's gpud. */
static void gpuctl_as_other(long gid, ctl_result *r, const char *const *args)
{
	char outp[700], errp[700];
	const char *argv[16];
	int n = 0;
	argv[n++] = gpuctl_bin;
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	path_in_dir(outp, sizeof(outp), "other.out");
	path_in_dir(errp, sizeof(errp), "other.err");
	snprintf(r->cmd, sizeof(r->cmd), "gpuctl %s (as uid %d)", args[0], OTHER_UID);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fo < 0 || fe < 0 || become_other(gid) != 0)
			_exit(126);
		dup2(fo, 1);
		dup2(fe, 2);
		setenv("GPUD_URL", e2e_gpud.url, 1);
		execv(gpuctl_bin, (char *const *)argv);
		_exit(127);
	}
	int st;
	if (harness_wait_pid(pid, 60.0, &st) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("'%s' did not finish within 60 s", r->cmd);
	}
	r->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	harness_read_text(outp, r->out, sizeof(r->out));
	harness_read_text(errp, r->err, sizeof(r->err));
}

static void assert_socket(const char *path, gid_t gid)
{
	struct stat sb;
	ck_assert_msg(stat(path, &sb) == 0, "stat %s: %s", path, strerror(errno));
	ck_assert_msg(S_ISSOCK(sb.st_mode), "%s is not a socket", path);
	ck_assert_msg((sb.st_mode & 07777) == 0660, "%s has mode %04o, expected 0660", path,
		      (unsigned)(sb.st_mode & 07777));
	ck_assert_msg(sb.st_gid == gid, "%s has group %u, expected %u", path, (unsigned)sb.st_gid,
		      (unsigned)gid);
	ck_assert_msg(sb.st_uid == geteuid(), "%s has owner %u: not gpud's user %u", path,
		      (unsigned)sb.st_uid, (unsigned)geteuid());
}

/*
 * socket_mode 0660 and a group: both socket files get them; uid 65534
 * outside the group gets GPUD_EPERM and gpuctl exit 77 with the socket, its
 * mode, owner and group and the group to ask for, and no word of starting
 * gpud; in the group, it connects. gpud serves on meanwhile.
 */
START_TEST(test_outside_the_group)
{
	if (getuid() != 0) {
		printf("access: skipped (needs root to play another user; CI runs as root)\n");
		return;
	}
	char group[64], conf[256], want[1024], line[2048];
	gid_t gid = pick_group(group, sizeof(group));
	snprintf(conf, sizeof(conf), "[gpud]\nsocket_mode = 0660\nsocket_group = %s\n", group);
	start_gpud(conf, NULL, NULL);
	const char *sock = e2e_gpud.url + strlen("ipc://");
	char shm[700];
	snprintf(shm, sizeof(shm), "%s.shm", sock);
	assert_socket(sock, gid);
	assert_socket(shm, gid);

	struct passwd *me = getpwuid(geteuid());
	ck_assert_ptr_nonnull(me);
	snprintf(want, sizeof(want),
		 "permission denied on %s (mode 0660 owner %s group %s): ask to be added to "
		 "group %s",
		 sock, me->pw_name, group, group);

	/* the library: GPUD_EPERM (105) with the whole story */
	library_as_other(-1, line, sizeof(line));
	int st = -1;
	ck_assert_msg(sscanf(line, "%d", &st) == 1 && st == GPUD_EPERM,
		      "uid %d outside group %s: expected status %d, got: %s", OTHER_UID, group,
		      GPUD_EPERM, line);
	ck_assert_msg(strstr(line, want), "the message does not say '%s': %s", want, line);
	ck_assert_msg(strstr(line, "usermod -aG ") && !strstr(line, "is gpud running"),
		      "the message: %s", line);

	/* gpuctl: exit 77 (EX_NOPERM), the same words, no hint to start gpud */
	static ctl_result r;
	static const char *const status[] = {"status", NULL};
	gpuctl_as_other(-1, &r, status);
	ck_assert_msg(r.code == 77, "'%s' exited %d, expected 77\nstderr: %s", r.cmd, r.code,
		      r.err);
	ck_assert_msg(strncmp(r.err, "gpuctl: error: ", 15) == 0 && strstr(r.err, want),
		      "'%s': stderr does not say '%s': %s", r.cmd, want, r.err);
	ck_assert_msg(!strstr(r.err, "is gpud running") && !strstr(r.err, "start gpud"),
		      "'%s' tells a user without access to start gpud: %s", r.cmd, r.err);

	/* a member of the group connects, as itself */
	library_as_other((long)gid, line, sizeof(line));
	struct passwd *other = getpwuid(OTHER_UID);
	char ok[128];
	snprintf(ok, sizeof(ok), "0 %s\n", other ? other->pw_name : "uid:65534");
	ck_assert_msg(strcmp(line, ok) == 0, "uid %d in group %s: expected '%s', got '%s'",
		      OTHER_UID, group, ok, line);
	assert_daemon_alive("users outside the socket's group");
}
END_TEST

/* gpud ARGS... with stdout and stderr to errf, as uid (-1: this process's);
 * its wait status. */
static int run_gpud(long uid, const char *errf, const char *const *args)
{
	const char *argv[16];
	int n = 0;
	argv[n++] = gpud_bin;
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	fflush(NULL);
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		int fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDONLY);
		if (fe < 0 || nul < 0 || (uid >= 0 && become_other(-1) != 0))
			_exit(126);
		dup2(nul, 0);
		dup2(fe, 1);
		dup2(fe, 2);
		execv(gpud_bin, (char *const *)argv);
		_exit(127);
	}
	int st;
	if (harness_wait_pid(pid, E2E_SAFETY_S, &st) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("gpud did not exit within %g s", E2E_SAFETY_S);
	}
	return st;
}

/* A directory of base_dir that uid 65534 may write in, and a config there. */
static void refusal_dir(char *dir, size_t len, const char *conf_text, char *conf, size_t clen)
{
	char msg[512];
	ck_assert_msg(harness_mkdtemp(dir, len, base_dir, "access", msg, sizeof(msg)) == 0, "%s",
		      msg);
	chmod(dir, 0777);
	snprintf(conf, clen, "%s/gpud.conf", dir);
	ck_assert_msg(harness_write_text(conf, conf_text, msg, sizeof(msg)) == 0, "%s", msg);
	chmod(conf, 0644);
}

static void assert_refused(int st, const char *errf, const char *sock, const char *const *want)
{
	char log[8192];
	ck_assert(harness_read_text(errf, log, sizeof(log)) >= 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2,
		      "gpud exited with wait status %d, expected exit 2:\n%s", st, log);
	for (const char *const *w = want; *w; w++)
		ck_assert_msg(strstr(log, *w), "gpud's error does not say '%s':\n%s", *w, log);
	ck_assert_msg(access(sock, F_OK) != 0 && errno == ENOENT, "%s was left behind:\n%s", sock,
		      log);
}

/* A socket_group that does not exist: exit 2 before anything is bound, with
 * how to create it. */
START_TEST(test_missing_group_refused)
{
	static const char *const want[] = {
		"error: socket_group 'gpud-e2e-no-such-group': no such group; create it: "
		"systemd-sysusers",
		"groupadd --system gpud-e2e-no-such-group", NULL};
	char dir[256], conf[300], sock[300], url[320], errf[300];
	refusal_dir(dir, sizeof(dir),
		    "[gpud]\nsocket_mode = 0660\nsocket_group = gpud-e2e-no-such-group\n", conf,
		    sizeof(conf));
	snprintf(sock, sizeof(sock), "%s/gpud.sock", dir);
	snprintf(url, sizeof(url), "ipc://%s", sock);
	snprintf(errf, sizeof(errf), "%s/gpud.err", dir);
	const char *const args[] = {"--backend", "cpu", "--config", conf, "--listen", url, NULL};
	assert_refused(run_gpud(-1, errf, args), errf, sock, want);
}
END_TEST

/* gpud's user is not in socket_group (uid 65534 and the group it is not in):
 * exit 2 before anything is bound, with the usermod line that fixes it. */
START_TEST(test_group_without_gpuds_user_refused)
{
	if (getuid() != 0) {
		printf("access: skipped (needs root to run gpud as another user)\n");
		return;
	}
	char head[3] = "";
	FILE *f = fopen(gpud_bin, "r");
	if (f && fgets(head, sizeof(head), f) && strcmp(head, "#!") == 0) {
		/* scripts/hardening-check.sh's tracing wrapper writes where only root may */
		printf("access: gpud's user outside socket_group skipped (GPUD_BIN %s is a "
		       "wrapper script, not gpud)\n",
		       gpud_bin);
		fclose(f);
		return;
	}
	if (f)
		fclose(f);
	char group[64], text[256], dir[256], conf[300], sock[300], url[320], errf[300];
	char w1[256], w2[256];
	pick_group(group, sizeof(group));
	struct passwd *pw = getpwuid(OTHER_UID);
	ck_assert_ptr_nonnull(pw);
	snprintf(text, sizeof(text), "[gpud]\nsocket_mode = 0660\nsocket_group = %s\n", group);
	refusal_dir(dir, sizeof(dir), text, conf, sizeof(conf));
	snprintf(sock, sizeof(sock), "%s/gpud.sock", dir);
	snprintf(url, sizeof(url), "ipc://%s", sock);
	snprintf(errf, sizeof(errf), "%s/gpud.err", dir);
	snprintf(w1, sizeof(w1), "socket_group '%s': gpud runs as user %s, who is not in group %s",
		 group, pw->pw_name, group);
	snprintf(w2, sizeof(w2), "add gpud's user to it: usermod -aG %s %s", group, pw->pw_name);
	const char *const want[] = {w1, w2, NULL};
	const char *const args[] = {"--backend", "cpu", "--config", conf, "--listen", url, NULL};
	assert_refused(run_gpud(OTHER_UID, errf, args), errf, sock, want);
}
END_TEST

TCase *e2e_access(void)
{
	TCase *tc = tcase_create("access");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_outside_the_group);
	tcase_add_test(tc, test_missing_group_refused);
	tcase_add_test(tc, test_group_without_gpuds_user_refused);
	return tc;
}
