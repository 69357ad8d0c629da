/*
 * tests/e2e/notify.c — test case "notify": gpud as systemd sees it
 * (Type=notify, daemon/notify.h). The test plays systemd: it binds an
 * AF_UNIX datagram socket, starts gpud with $NOTIFY_SOCKET naming it, and
 * reads what arrives, each datagram's sender checked (SCM_CREDENTIALS) to be
 * gpud's own pid. READY=1 must mean serving: the moment it arrives a client
 * connects and says hello at the first try. STATUS= names the backend;
 * SIGHUP brings RELOADING=1 (with the monotonic time) and then READY=1,
 * whether the reload applies or is refused; SIGTERM brings STOPPING=1
 * while connections are still being drained, and no watchdog ping after it. Every wait is for a datagram or for gpud's exit
 * (poll, with a generous limit), never a sleep.
 *
 * gpud loads libsystemd.so.0 at run time: where it is missing these tests
 * fail (and say so), they do not skip. Without $NOTIFY_SOCKET gpud loads
 * nothing; with it and a broken libsystemd it warns once and serves.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

typedef struct notify_rx {
	int fd;
	char path[200];
	char all[16384]; /* every datagram so far, each on its own line ('\n' -> '|') */
	int ready;       /* READY=1 seen */
	int stopping;    /* STOPPING=1 seen */
	int pings;       /* WATCHDOG=1 datagrams */
	int pings_before_ready, pings_after_stopping, readies;
} notify_rx;

static notify_rx rx;

/* Binds DIR/notify.sock (a datagram socket passing its senders' credentials). */
static void rx_open(const char *dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int on = 1;

	memset(&rx, 0, sizeof(rx));
	snprintf(rx.path, sizeof(rx.path), "%s/notify.sock", dir);
	ck_assert_msg(strlen(rx.path) < sizeof(sa.sun_path), "socket path too long: %s", rx.path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", rx.path);
	rx.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_msg(rx.fd >= 0, "socket: %s", strerror(errno));
	ck_assert_msg(setsockopt(rx.fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == 0,
		      "SO_PASSCRED: %s", strerror(errno));
	ck_assert_msg(bind(rx.fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s", rx.path,
		      strerror(errno));
}

static void rx_close(void)
{
	if (rx.fd > 0)
		close(rx.fd);
	rx.fd = -1;
}

/* Takes one datagram into buf (text, terminated): 1; 0 if none is queued. Checks its sender. */
static int rx_take(char *buf, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(struct ucred))];
	struct iovec iov = {.iov_base = buf, .iov_len = len - 1};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(rx.fd, &mh, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	ck_assert_msg(n >= 0, "recvmsg on %s: %s", rx.path, strerror(errno));
	buf[n] = '\0';
	pid_t sender = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred uc;
			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			sender = uc.pid;
		}
	ck_assert_msg(sender == e2e_gpud.pid,
		      "datagram '%s' came from pid %d, not from gpud (pid %d): NotifyAccess=main "
		      "would drop it",
		      buf, (int)sender, (int)e2e_gpud.pid);
	/* Note it: flags, counts and the running transcript. */
	int watchdog = !strcmp(buf, "WATCHDOG=1");
	if (strstr(buf, "READY=1")) {
		rx.readies++;
		rx.ready = 1;
	}
	if (watchdog) {
		rx.pings++;
		rx.pings_before_ready += !rx.ready;
		rx.pings_after_stopping += rx.stopping;
	}
	if (strstr(buf, "STOPPING=1"))
		rx.stopping = 1;
	if (!watchdog || rx.pings <= 3) {
		size_t at = strlen(rx.all);
		snprintf(rx.all + at, sizeof(rx.all) - at, "%s\n", buf);
		for (char *p = rx.all + at; *p && p[1]; p++)
			if (*p == '\n')
				*p = '|';
	}
	return 1;
}

/*
 * Waits up to timeout_s for a datagram containing want, taking every one
 * before it; the matching one goes into buf. Fails, with gpud's log, when
 * gpud exits first or nothing matching comes in time.
 */
static void rx_wait_for(const char *want, double timeout_s, char *buf, size_t len)
{
	double deadline = harness_now_s() + timeout_s;
	for (;;) {
		while (rx_take(buf, len))
			if (strstr(buf, want))
				return;
		if (e2e_gpud.reaped || harness_gpud_wait(&e2e_gpud, 0) == 0) {
			char how[160];
			harness_describe_wait(e2e_gpud.wstatus, how, sizeof(how));
			harness_dump_file("gpud log", e2e_gpud.log);
			ck_abort_msg(
				"gpud %s before sending %s; it sent:\n%s(a gpud log line about "
				"libsystemd.so.0 above means the library is missing)",
				how, want, rx.all);
		}
		/* gpud says so at once when it cannot load libsystemd: no need to wait. */
		static char log[65536];
		if (harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0 &&
		    strstr(log, "libsystemd.so.0 cannot be loaded")) {
			harness_dump_file("gpud log", e2e_gpud.log);
			ck_abort_msg(
				"gpud cannot load libsystemd.so.0 (log above), so no %s comes: "
				"install libsystemd0 (scripts/install-deps.sh does)",
				want);
		}
		double left = deadline - harness_now_s();
		if (left <= 0) {
			harness_dump_file("gpud log", e2e_gpud.log);
			ck_abort_msg("no %s on $NOTIFY_SOCKET within %.0f s; gpud sent:\n%s(a gpud "
				     "log line about libsystemd.so.0 above means the library is "
				     "missing: gpud needs it at run time under systemd)",
				     want, timeout_s, rx.all);
		}
		/* Wake for the next datagram, or now and then to see whether gpud still runs. */
		struct pollfd p = {.fd = rx.fd, .events = POLLIN};
		poll(&p, 1, left < 0.2 ? (int)(left * 1000) + 1 : 200);
	}
}

/* Starts the test's gpud with $NOTIFY_SOCKET (and more environment, and the
 * config text, if any), not waiting for it. */
static void start_notified(const char *config, const char *const *more_env)
{
	char msg[2048], sockenv[256];
	const char *env[8];
	int n = 0;
	static const char *const args[] = {"--log-level", "debug", NULL};

	memset(&e2e_gpud, 0, sizeof(e2e_gpud));
	harness_gpud_opts o = {.bin = gpud_bin,
			       .backend = backend_env,
			       .config = config,
			       .args = args,
			       .env = env,
			       .parent = base_dir,
			       .prefix = "n",
			       .dir_mode = 0755,
			       .die_with_parent = 1,
			       .no_wait = 1};
	ck_assert_msg(harness_gpud_dir(&e2e_gpud, &o, msg, sizeof(msg)) == 0, "%s", msg);
	rx_open(e2e_gpud.dir);
	snprintf(sockenv, sizeof(sockenv), "NOTIFY_SOCKET=%s", rx.path);
	env[n++] = sockenv;
	for (int i = 0; more_env && more_env[i] && n < 7; i++)
		env[n++] = more_env[i];
	env[n] = NULL;
	ck_assert_msg(harness_gpud_start(&e2e_gpud, &o, msg, sizeof(msg)) == 0, "%s", msg);
}

/* Whether gpud's memory map holds a library whose name contains what. */
static int maps_have(pid_t pid, const char *what)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	char line[1024];
	int found = 0;
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

static void notify_teardown(void)
{
	rx_close();
	gpud_teardown();
}

START_TEST(test_ready_means_serving)
{
	char buf[1024], want[512];

	start_notified(NULL, NULL);
	rx_wait_for("READY=1", 60, buf, sizeof(buf));
	/* Ready means serving: hello at the first try, no retrying. */
	gpud_client *c;
	gpud_status st = gpud_connect(e2e_gpud.url, &c);
	ck_assert_msg(st == GPUD_OK,
		      "READY=1 arrived but gpud_connect(%s) failed: %s: %s (gpud sent:\n%s)",
		      e2e_gpud.url, gpud_strerror(st), gpud_errmsg(c), rx.all);
	ck_assert_str_eq(gpud_server(c)->backend, expected_backend());
	assert_ctl_ok(CTL("status"));
	/* STATUS= says where it serves, on which backend and devices (the default:
	 * 0; GPUD_TEST_DEVICES on a GPU backend, e.g. 0,1: "0, 1") */
	const char *devs = getenv("GPUD_TEST_DEVICES");
	char list[128] = "0";
	if (devs && devs[0] && strcmp(expected_backend(), "cpu") != 0) {
		size_t at = 0;
		for (const char *d = devs; *d && at + 3 < sizeof(list); d++) {
			if (*d == ',')
				list[at++] = *d, list[at++] = ' ';
			else
				list[at++] = *d;
		}
		list[at] = '\0';
	}
	snprintf(want, sizeof(want), "READY=1\nSTATUS=serving on %s, backend %s, devices %s",
		 e2e_gpud.url, expected_backend(), list);
	ck_assert_msg(!strcmp(buf, want), "READY datagram '%s', expected '%s'", buf, want);
	snprintf(want, sizeof(want), "STATUS=starting: opening the %s backend", expected_backend());
	ck_assert_msg(strstr(rx.all, want) != NULL, "no '%s' before READY=1; gpud sent:\n%s", want,
		      rx.all);
	ck_assert_msg(maps_have(e2e_gpud.pid, "libsystemd.so.0"),
		      "gpud does not have libsystemd.so.0 loaded");

	/* SIGTERM: STOPPING=1 as the drain starts, our connection still open. */
	ck_assert_int_eq(kill(e2e_gpud.pid, SIGTERM), 0);
	rx_wait_for("STOPPING=1", 30, buf, sizeof(buf));
	unsigned conns = 0;
	ck_assert_msg(sscanf(buf,
			     "STOPPING=1\nSTATUS=stopping: draining %u connections, 0 requests "
			     "in flight",
			     &conns) == 1 &&
			      conns >= 1,
		      "STOPPING datagram '%s', expected one naming our open connection", buf);
	gpud_close(c);
	ck_assert_msg(harness_gpud_wait(&e2e_gpud, E2E_SAFETY_S) == 0,
		      "gpud did not exit after SIGTERM");
	ck_assert_msg(WIFEXITED(e2e_gpud.wstatus) && WEXITSTATUS(e2e_gpud.wstatus) == 0,
		      "gpud exit status 0x%x after SIGTERM", e2e_gpud.wstatus);
	while (rx_take(buf, sizeof(buf)))
		;
	ck_assert_msg(rx.readies == 1, "READY=1 sent %d times:\n%s", rx.readies, rx.all);
	ck_assert_msg(rx.pings == 0, "%d watchdog pings without $WATCHDOG_USEC", rx.pings);
}
END_TEST

START_TEST(test_watchdog_pings_from_the_loop)
{
	char buf[1024], log[65536];
	static const char *const env[] = {"WATCHDOG_USEC=300000", NULL}; /* no WATCHDOG_PID: any */

	start_notified(NULL, env);
	rx_wait_for("READY=1", 60, buf, sizeof(buf));
	for (int i = 0; i < 3; i++)
		rx_wait_for("WATCHDOG=1", 30, buf, sizeof(buf));
	ck_assert_msg(rx.pings_before_ready == 0, "%d watchdog pings before READY=1",
		      rx.pings_before_ready);
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	ck_assert_msg(strstr(log, "watchdog: WatchdogSec=0.300 s, pinging systemd from the loop "
				  "every 150 ms"),
		      "gpud's log does not name the watchdog interval:\n%s", log);
	ck_assert_int_eq(kill(e2e_gpud.pid, SIGTERM), 0);
	rx_wait_for("STOPPING=1", 30, buf, sizeof(buf));
	ck_assert_msg(harness_gpud_wait(&e2e_gpud, E2E_SAFETY_S) == 0,
		      "gpud did not exit after SIGTERM");
	while (rx_take(buf, sizeof(buf)))
		;
	/* The ping timer stops on the loop thread before STOPPING=1 is sent. */
	ck_assert_msg(rx.pings_after_stopping == 0, "%d watchdog pings after STOPPING=1",
		      rx.pings_after_stopping);
}
END_TEST

static unsigned long long monotonic_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}

/* SIGHUP, then RELOADING=1 with MONOTONIC_USEC= between the signal and its
 * arrival; then the READY=1 (and its STATUS=) that ends the reload. */
static void reload_notified(char *buf, size_t len)
{
	unsigned long long t0 = monotonic_us(), us = 0;
	ck_assert_int_eq(kill(e2e_gpud.pid, SIGHUP), 0);
	rx_wait_for("RELOADING=1", 30, buf, len);
	unsigned long long t1 = monotonic_us();
	const char *m = strstr(buf, "MONOTONIC_USEC=");
	ck_assert_msg(m && sscanf(m, "MONOTONIC_USEC=%llu", &us) == 1 && us >= t0 && us <= t1,
		      "RELOADING datagram '%s': expected MONOTONIC_USEC= from %llu to %llu", buf,
		      t0, t1);
	ck_assert_msg(strstr(buf, "STATUS=reloading the config from ") != NULL,
		      "RELOADING datagram '%s' has no STATUS= saying so", buf);
	rx_wait_for("READY=1", 30, buf, len);
}

START_TEST(test_reload_notifies)
{
	char buf[1024], want[512];

	start_notified("[gpud]\nshutdown_timeout = 30\n", NULL);
	rx_wait_for("READY=1", 60, buf, sizeof(buf));
	reload_notified(buf, sizeof(buf));
	snprintf(want, sizeof(want),
		 "READY=1\nSTATUS=serving; config reloaded from %s: ", e2e_gpud.conf);
	ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "datagram '%s', expected '%s...'", buf,
		      want);
	/* refused: READY=1 all the same, STATUS= says why */
	write_text(e2e_gpud.conf, "[gpud]\nshutdown_timeout = never\n");
	reload_notified(buf, sizeof(buf));
	snprintf(want, sizeof(want),
		 "READY=1\nSTATUS=serving; reload refused: config %s:2: shutdown_timeout = "
		 "'never'",
		 e2e_gpud.conf);
	ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "datagram '%s', expected '%s...'", buf,
		      want);
	ck_assert_msg(rx.readies == 3, "READY=1 sent %d times, expected 3:\n%s", rx.readies,
		      rx.all);
}
END_TEST

START_TEST(test_no_socket_no_libsystemd)
{
	/* Outside systemd gpud loads nothing of it (an empty variable counts as unset: the
	 * suite may itself run under a service manager). */
	static const char *const env[] = {"NOTIFY_SOCKET=", NULL};
	start_gpud(NULL, NULL, env);
	ck_assert_msg(!maps_have(e2e_gpud.pid, "libsystemd"),
		      "gpud loaded libsystemd without $NOTIFY_SOCKET");
	char log[65536];
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) >= 0);
	ck_assert_msg(!strstr(log, "sd_notify") && !strstr(log, "NOTIFY_SOCKET"),
		      "gpud's log mentions notifying without $NOTIFY_SOCKET:\n%s", log);
}
END_TEST

START_TEST(test_broken_libsystemd_warns_once)
{
	/* An empty libsystemd.so.0 first on the search path: dlopen fails. */
	char dir[300], lib[400], ldpath[420], sockenv[300], log[65536], msg[1024], buf[256];
	snprintf(dir, sizeof(dir), "%s/nolib-XXXXXX", base_dir);
	ck_assert(mkdtemp(dir) != NULL);
	snprintf(lib, sizeof(lib), "%s/libsystemd.so.0", dir);
	write_text(lib, "");
	snprintf(ldpath, sizeof(ldpath), "LD_LIBRARY_PATH=%s", dir);
	memset(&rx, 0, sizeof(rx));
	rx_open(dir);
	snprintf(sockenv, sizeof(sockenv), "NOTIFY_SOCKET=%s", rx.path);
	const char *env[] = {ldpath, sockenv, NULL};
	start_gpud(NULL, NULL, env); /* waits until gpud answers: it serves anyway */
	assert_ctl_ok(CTL("status"));
	ck_assert_msg(harness_gpud_stop(&e2e_gpud, 30, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	const char *w = strstr(log, "NOTIFY_SOCKET is set");
	ck_assert_msg(w && strstr(w, "libsystemd.so.0 cannot be loaded"),
		      "gpud did not warn that libsystemd.so.0 cannot be loaded:\n%s", log);
	ck_assert_msg(!strstr(w + 1, "NOTIFY_SOCKET is set"), "gpud warned twice:\n%s", log);
	ck_assert_msg(rx_take(buf, sizeof(buf)) == 0, "a datagram came without libsystemd: %s",
		      buf);
}
END_TEST

TCase *e2e_notify(void)
{
	TCase *tc = tcase_create("notify");
	tcase_add_checked_fixture(tc, NULL, notify_teardown);
	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, test_ready_means_serving);
	tcase_add_test(tc, test_watchdog_pings_from_the_loop);
	tcase_add_test(tc, test_reload_notifies);
	tcase_add_test(tc, test_no_socket_no_libsystemd);
	tcase_add_test(tc, test_broken_libsystemd_warns_once);
	return tc;
}
