/*
 * tests/e2e/host_memory.c — test case "host_memory": the host memory budget
 * (host_memory_limit). One tenant asks for more than the budget holds; what
 * goes over is refused with the numbers, gpud stays up, and another tenant's
 * buffers, runs and downloads keep working. Once with a small limit set in
 * gpud.conf (every machine), once with the default inside a memory cgroup
 * of 512 MiB that the test makes (cgroup v2 or v1; skipped, saying why,
 * where none can be made): there, without the budget, gpud is OOM-killed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

#define MiB (1ull << 20)
#define ALICE_N 32768 /* float64: 256 KiB, under the 1 MiB messages begin to count from */

/* gpud on tcp:// with tokens for alice and bob, and the [gpud] lines given. */
static void start_hostmem(const char *gpud_lines, const char *cgroup)
{
	/* A gpud built with AddressSanitizer (make test-asan) keeps up to 256 MiB
	 * of freed memory in its quarantine, outside any budget: off for this one
	 * (other builds ignore the variable). */
	static char asan[1024];
	const char *had = getenv("ASAN_OPTIONS");
	snprintf(asan, sizeof(asan), "ASAN_OPTIONS=%s%squarantine_size_mb=0", had ? had : "",
		 had && had[0] ? ":" : "");
	const char *env[] = {asan, NULL};
	start_tenants(gpud_lines, NULL, env, cgroup);
}

/* alice's x (x[i] = i / 2) and z, her buffers before bob comes. */
typedef struct alice_state {
	gpud_client *c;
	gpud_handle x, z;
} alice_state;

static double alice_x(size_t i)
{
	return (double)i * 0.5;
}

/* z = x + a through add, into z when into_z, else into an output gpud makes
 * (freed after); its values checked. */
static void alice_add(alice_state *a, double plus, int into_z)
{
	uint64_t n = ALICE_N;
	static double got[ALICE_N];
	gpud_arg args[3] = {gpud_arg_buffer("x", a->x), gpud_arg_f64("y", plus),
			    gpud_arg_buffer("z", a->z)};
	gpud_output out;
	size_t nout = 0;
	LIB_OK(a->c, gpud_run(a->c, "add", args, into_z ? 3 : 2, &out, 1, &nout, NULL));
	gpud_handle h = into_z ? a->z : out.handle;
	LIB_OK(a->c, gpud_download_range(a->c, h, 0, got, n * sizeof(double)));
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(got[i] == alice_x(i) + plus, "alice's z[%zu] = %g, expected %g", i,
			      got[i], alice_x(i) + plus);
	if (!into_z)
		LIB_OK(a->c, gpud_free(a->c, &h, 1));
}

static void alice_start(alice_state *a)
{
	uint64_t n = ALICE_N;
	static double x[ALICE_N];
	for (size_t i = 0; i < n; i++)
		x[i] = alice_x(i);
	a->c = connect_token(TOKEN_ALICE);
	LIB_OK(a->c, gpud_alloc(a->c, GPUD_F64, 1, &n, x, &a->x));
	LIB_OK(a->c, gpud_alloc(a->c, GPUD_F64, 1, &n, NULL, &a->z));
	alice_add(a, 2.0, 1);
}

/* Alice after bob filled the budget: her buffers hold their values, a run
 * into her own buffer and one that makes its output both work. */
static void alice_still_served(alice_state *a)
{
	static double got[ALICE_N];
	LIB_OK(a->c, gpud_download_range(a->c, a->x, 0, got, sizeof(got)));
	for (size_t i = 0; i < ALICE_N; i++)
		ck_assert_msg(got[i] == alice_x(i), "alice's x[%zu] = %g after bob, expected %g", i,
			      got[i], alice_x(i));
	alice_add(a, 3.0, 1);
	alice_add(a, 4.0, 0);
}

/*
 * Bob uploads arrays of `each` bytes until gpud refuses one (at most tries):
 * the refusal is OUT_OF_MEMORY with the budget's numbers. Returns how many
 * were made; bob keeps them until his connection closes.
 */
static int bob_fills(gpud_client *bob, uint64_t each, int tries, const char *limit_text)
{
	uint64_t n = each / sizeof(double);
	double *data = malloc(each);
	ck_assert_ptr_nonnull(data);
	for (uint64_t i = 0; i < n; i++)
		data[i] = (double)(i % 1000);
	char asked[64], of_limit[96];
	snprintf(asked, sizeof(asked), "host memory: %.1f MiB asked", (double)each / MiB);
	snprintf(of_limit, sizeof(of_limit), "of the %s limit (host_memory_limit) in use",
		 limit_text);
	int made = 0;
	for (; made < tries; made++) {
		gpud_handle h;
		gpud_status st = gpud_alloc(bob, GPUD_F64, 1, &n, data, &h);
		if (st == GPUD_OK)
			continue;
		ck_assert_msg(st == GPUD_ENOMEM, "bob's array %d: %s: %s, expected out of memory",
			      made, gpud_strerror(st), gpud_errmsg(bob));
		ck_assert_msg(strstr(gpud_errmsg(bob), asked) && strstr(gpud_errmsg(bob), of_limit),
			      "bob's refusal '%s' does not say '%s ... %s'", gpud_errmsg(bob),
			      asked, of_limit);
		break;
	}
	free(data);
	ck_assert_msg(made < tries, "bob made %d arrays of %" PRIu64 " bytes: none was refused",
		      made, each);
	return made;
}

/* The budget in status: within its limit, nothing held for messages once
 * requests are answered, the refusals counted. */
static gpud_daemon_status budget_ok(gpud_client *c, uint64_t limit, const char *when)
{
	gpud_daemon_status s = lib_status(c);
	ck_assert_msg(s.has_host_memory, "%s: status has no host memory", when);
	ck_assert_msg(s.host_limit == limit, "%s: host_limit %" PRIu64 ", expected %" PRIu64, when,
		      s.host_limit, limit);
	ck_assert_msg(s.host_used <= s.host_limit && s.host_high_water <= s.host_limit,
		      "%s: %" PRIu64 " used, high-water %" PRIu64 ", over the limit %" PRIu64, when,
		      s.host_used, s.host_high_water, s.host_limit);
	ck_assert_msg(s.host_used == s.host_buffers + s.host_lent + s.host_pinned + s.host_staging +
					     s.host_messages + s.host_rings,
		      "%s: used %" PRIu64 " is not the sum of its parts", when, s.host_used);
	ck_assert_msg(s.host_messages == 0, "%s: %" PRIu64 " bytes of messages still held", when,
		      s.host_messages);
	return s;
}

static uint64_t want_buffers;
static int buffers_back(const gpud_daemon_status *s)
{
	return s->host_buffers == want_buffers;
}

/*
 * cuda: buffers are device memory; the budget holds the staging buffers
 * (reserved at start) and the payloads requests hold, so one 80 MiB array
 * beside 32 MiB of staging is refused, and alice is served on.
 */
static void cuda_limit_case(alice_state *a, const gpud_daemon_status *s0)
{
	ck_assert_msg(s0->has_staging &&
			      s0->host_staging == (uint64_t)s0->staging_buffers * s0->staging_chunk,
		      "%" PRIu64 " bytes of staging in the budget, expected %u of %" PRIu64,
		      s0->host_staging, s0->staging_buffers, s0->staging_chunk);
	gpud_client *bob = connect_token(TOKEN_BOB);
	ck_assert_int_eq(bob_fills(bob, 80 * MiB, 1, "96.0 MiB"), 0);
	alice_still_served(a);
	gpud_daemon_status s = budget_ok(a->c, 96 * MiB, "bob refused");
	ck_assert_uint_ge(s.host_refused, 1);
	gpud_close(bob);
}

/* A limit in gpud.conf: bob's 16 MiB arrays fill 96 MiB (cpu). */
START_TEST(test_host_memory_limit)
{
	start_hostmem("host_memory_limit = 96MiB\nlend_spare = 0\n", NULL);
	char log[1 << 16];
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	ck_assert_msg(strstr(log, "host memory limit: 96.0 MiB (host_memory_limit)") != NULL,
		      "gpud's log does not state the limit");
	alice_state a;
	alice_start(&a);
	gpud_daemon_status s = budget_ok(a.c, 96 * MiB, "alice's buffers");
	ck_assert_uint_eq(s.host_refused, 0);
	if (strcmp(expected_backend(), "cpu") != 0) {
		cuda_limit_case(&a, &s);
		gpud_close(a.c);
		return;
	}
	uint64_t alice_bytes = s.host_buffers;
	ck_assert_uint_ge(alice_bytes, 2 * ALICE_N * sizeof(double));
	ck_assert_uint_lt(alice_bytes, 2 * ALICE_N * sizeof(double) + 8192);

	gpud_client *bob = connect_token(TOKEN_BOB);
	int made = bob_fills(bob, 16 * MiB, 12, "96.0 MiB");
	/* each array held its payload and its buffer at once: at most (96 - 32) / 16 + 1 */
	ck_assert_msg(made >= 3 && made <= 5, "bob made %d arrays of 16 MiB under 96 MiB", made);
	s = budget_ok(a.c, 96 * MiB, "bob refused");
	ck_assert_uint_ge(s.host_refused, 1);
	ck_assert_uint_ge(s.host_buffers, alice_bytes + (uint64_t)made * 16 * MiB);
	/* one more is refused before any work: the budget answers at once */
	uint64_t big = 64 * MiB / sizeof(double);
	gpud_handle hb;
	LIB_FAIL(bob, gpud_alloc(bob, GPUD_F64, 1, &big, NULL, &hb), GPUD_ENOMEM,
		 "host memory: 64.0 MiB asked");
	alice_still_served(&a);
	assert_daemon_alive("bob filled the host memory budget");

	/* bob's buffers go with his connection, and the budget with them */
	gpud_close(bob);
	want_buffers = alice_bytes;
	s = wait_status(a.c, buffers_back, E2E_SAFETY_S);
	ck_assert_msg(s.host_buffers == alice_bytes,
		      "after bob left, %" PRIu64 " bytes of buffers, expected alice's %" PRIu64,
		      s.host_buffers, alice_bytes);
	bob = connect_token(TOKEN_BOB);
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &big, NULL, &hb));
	gpud_close(bob);
	gpud_close(a.c);
}
END_TEST

/* --- in a memory cgroup ------------------------------------------------------------------ */

#define CGROUP_LIMIT (512 * MiB)

static char cgroup_dir[600];
static int cgroup_v2; /* cgroup_dir is in the unified hierarchy */

/* The first line of path into buf, without its newline: 0, or -1. */
static int read_line(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	char *got = fgets(buf, (int)cap, f);
	fclose(f);
	if (got == NULL)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* 1 if the comma-separated list has word. */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ", ");
		if (k == n && strncmp(p, word, n) == 0)
			return 1;
		p += k + (p[k] != '\0');
	}
	return 0;
}

/* This process's cgroup directory in the hierarchy with the memory controller
 * (v2: the unified one where it offers memory; v1: the memory one), through
 * /proc/self/cgroup and /proc/self/mountinfo. 0 with dir, or -1. */
static int own_cgroup_dir(int v2, char *dir, size_t len)
{
	char line[4096], path[2048] = "", mnt[1024] = "", mroot[1024] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL)
			continue;
		*c2 = '\0';
		if (v2 ? strcmp(line, "0:") == 0 : has_word(c1 + 1, "memory"))
			snprintf(path, sizeof(path), "%s", c2 + 1);
	}
	fclose(f);
	if ((f = fopen("/proc/self/mountinfo", "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char root[1024], point[1024];
		const char *dash = strstr(line, " - ");
		char fstype[64], source[256], opts[1024];
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 || dash == NULL ||
		    sscanf(dash + 3, "%63s %255s %1023s", fstype, source, opts) != 3)
			continue;
		if (v2 ? strcmp(fstype, "cgroup2") == 0
		       : strcmp(fstype, "cgroup") == 0 && has_word(opts, "memory")) {
			snprintf(mnt, sizeof(mnt), "%s", point);
			snprintf(mroot, sizeof(mroot), "%s", root);
		}
	}
	fclose(f);
	if (path[0] == '\0' || mnt[0] == '\0')
		return -1;
	size_t rl = strlen(mroot);
	const char *rel = path;
	if (strcmp(mroot, "/") != 0)
		rel = strncmp(path, mroot, rl) == 0 ? path + rl : "";
	snprintf(dir, len, "%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel);
	return 0;
}

/* Children of own left by earlier runs whose test process is gone (a failed
 * test's process exits before its teardown). */
static void drop_stale(const char *own)
{
	DIR *d = opendir(own);
	struct dirent *e;
	char path[1024];
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		int pid;
		if (sscanf(e->d_name, "gpud-e2e-%d", &pid) != 1 || pid <= 0 || kill(pid, 0) == 0 ||
		    errno != ESRCH)
			continue; /* not ours, or its process lives */
		snprintf(path, sizeof(path), "%s/%s", own, e->d_name);
		rmdir(path); /* EBUSY while its gpud is still dying: the next run's */
	}
	closedir(d);
}

/*
 * A child of this process's cgroup whose memory is limited to CGROUP_LIMIT
 * (swap off where the hierarchy has it), in cgroup_dir: 0, or -1 with why.
 * Both kinds are tried: v2 where the unified hierarchy offers the memory
 * controller, else v1's memory hierarchy.
 */
static int make_memory_cgroup(char *why, size_t wl)
{
	char own[512], path[700], text[256], limit[32];
	snprintf(limit, sizeof(limit), "%llu", (unsigned long long)CGROUP_LIMIT);
	why[0] = '\0';
	if (geteuid() != 0) {
		snprintf(why, wl, "not root");
		return -1;
	}
	for (int v2 = 1; v2 >= 0; v2--) {
		if (own_cgroup_dir(v2, own, sizeof(own)) != 0)
			continue;
		if (v2) {
			snprintf(path, sizeof(path), "%s/cgroup.controllers", own);
			if (read_line(path, text, sizeof(text)) != 0 || !has_word(text, "memory")) {
				snprintf(why, wl, "cgroup v2 at %s offers no memory controller; ",
					 own);
				continue;
			}
		}
		drop_stale(own);
		snprintf(cgroup_dir, sizeof(cgroup_dir), "%s/gpud-e2e-%d", own, (int)getpid());
		if (mkdir(cgroup_dir, 0755) != 0 && errno != EEXIST) {
			snprintf(why + strlen(why), wl - strlen(why), "mkdir %s: %s; ", cgroup_dir,
				 strerror(errno));
			continue;
		}
		const char *file = v2 ? "memory.max" : "memory.limit_in_bytes";
		snprintf(path, sizeof(path), "%s/%s", cgroup_dir, file);
		if (v2 && access(path, F_OK) != 0) { /* memory not enabled below own yet */
			char ctl[600];
			snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", own);
			if (write_file(ctl, "+memory") != 0) {
				snprintf(why + strlen(why), wl - strlen(why),
					 "cannot enable memory in %s: %s; ", ctl, strerror(errno));
				rmdir(cgroup_dir);
				continue;
			}
		}
		if (write_file(path, limit) != 0) {
			snprintf(why + strlen(why), wl - strlen(why), "writing %s: %s; ", path,
				 strerror(errno));
			rmdir(cgroup_dir);
			continue;
		}
		/* swap would hide the limit: the memory swaps out instead of failing */
		snprintf(path, sizeof(path), "%s/%s", cgroup_dir,
			 v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes");
		if (access(path, F_OK) == 0)
			write_file(path, v2 ? "0" : limit);
		cgroup_v2 = v2;
		return 0;
	}
	if (why[0] == '\0')
		snprintf(why, wl, "no cgroup hierarchy with the memory controller is mounted");
	cgroup_dir[0] = '\0';
	return -1;
}

static void drop_cgroup(void)
{
	if (cgroup_dir[0] && rmdir(cgroup_dir) != 0)
		fprintf(stderr, "host_memory: rmdir %s: %s\n", cgroup_dir, strerror(errno));
	cgroup_dir[0] = '\0';
}

/* The cgroup's count of processes the kernel's OOM killer ended (v2:
 * memory.events; v1: memory.oom_control), or -1 where it says none. */
static long oom_kills(void)
{
	char path[700], line[256];
	long v = -1;
	const char *names[] = {"memory.events", "memory.oom_control"};
	for (int i = 0; i < 2 && v < 0; i++) {
		snprintf(path, sizeof(path), "%s/%s", cgroup_dir, names[i]);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "oom_kill %ld", &v) == 1)
				break;
		fclose(f);
	}
	return v;
}

/* The most the cgroup's processes used at once (v2: memory.peak, from
 * Linux 5.19; v1: memory.max_usage_in_bytes), or 0 where it does not say. */
static uint64_t cgroup_peak(void)
{
	char path[700], line[64];
	const char *names[] = {"memory.peak", "memory.max_usage_in_bytes"};
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", cgroup_dir, names[i]);
		if (read_line(path, line, sizeof(line)) == 0)
			return strtoull(line, NULL, 10);
	}
	return 0;
}

/* The default limit inside a 512 MiB cgroup; bob asks for 640 MiB in 8 MiB
 * arrays, then for one of 256 MiB. */
START_TEST(test_host_memory_cgroup)
{
	char why[1024], log[1 << 16], path[64], procs[4096], want[160];
	if (strcmp(expected_backend(), "cpu") != 0) { /* a CUDA context alone needs more */
		printf("host_memory: the cgroup case runs on the cpu backend, whose buffers are "
		       "host memory; skipped on %s\n",
		       expected_backend());
		return;
	}
	if (make_memory_cgroup(why, sizeof(why)) != 0) {
		printf("host_memory: no memory cgroup could be made here (%s): the cgroup case "
		       "is skipped\n",
		       why);
		return;
	}
	printf("host_memory: gpud runs in %s (cgroup v%d), its memory limited to 512 MiB\n",
	       cgroup_dir, cgroup_v2 ? 2 : 1);
	start_hostmem("", cgroup_dir);
	/* gpud is in it, and took its limit from it */
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)e2e_gpud.pid);
	ck_assert(harness_read_text(path, procs, sizeof(procs)) > 0);
	ck_assert_msg(strstr(procs, strrchr(cgroup_dir, '/')) != NULL,
		      "gpud (pid %d) is not in %s: %s", (int)e2e_gpud.pid, cgroup_dir, procs);
	uint64_t limit = 429496729; /* 80% of 512 MiB, rounded down */
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	snprintf(want, sizeof(want),
		 "host memory limit: 409.6 MiB (80%% of the cgroup's %s 512.0 MiB)",
		 cgroup_v2 ? "memory.max" : "memory.limit_in_bytes");
	ck_assert_msg(strstr(log, want) != NULL, "gpud's log does not say '%s'", want);

	alice_state a;
	alice_start(&a);
	budget_ok(a.c, limit, "alice's buffers");
	gpud_client *bob = connect_token(TOKEN_BOB);
	int made = bob_fills(bob, 8 * MiB, 80, "409.6 MiB");
	ck_assert_msg(made >= 20, "bob made only %d arrays of 8 MiB under 409.6 MiB", made);
	uint64_t big = 256 * MiB / sizeof(double);
	gpud_handle hb;
	LIB_FAIL(bob, gpud_alloc(bob, GPUD_F64, 1, &big, NULL, &hb), GPUD_ENOMEM,
		 "host memory: 256.0 MiB asked");
	gpud_daemon_status s = budget_ok(a.c, limit, "bob refused");
	ck_assert_uint_ge(s.host_buffers, (uint64_t)made * 8 * MiB);
	alice_still_served(&a);
	assert_daemon_alive("bob filled the host memory budget in a 512 MiB cgroup");
	ck_assert_msg(kill(e2e_gpud.pid, 0) == 0, "gpud is gone");
	long kills = oom_kills();
	ck_assert_msg(kills <= 0, "the OOM killer ended %ld processes in %s", kills, cgroup_dir);
	printf("host_memory: bob made %d arrays of 8 MiB; the cgroup's peak was %.1f MiB of 512\n",
	       made, (double)cgroup_peak() / MiB);
	gpud_close(bob);
	gpud_close(a.c);
	gpud_teardown();
	drop_cgroup();
}
END_TEST

static void host_memory_teardown(void)
{
	gpud_teardown();
	drop_cgroup();
}

TCase *e2e_host_memory(void)
{
	TCase *tc = tcase_create("host_memory");
	tcase_add_checked_fixture(tc, NULL, host_memory_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_host_memory_limit);
	tcase_add_test(tc, test_host_memory_cgroup);
	return tc;
}
