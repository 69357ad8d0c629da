/*
 * tests/unit/test_hostmem.c — the host memory budget (daemon/hostmem.h):
 * reserve and release, their messages, threads sharing one budget, the
 * default limit read from fake cgroup and /proc trees, the config key, and
 * what comes out of the budget: the cpu backend's buffers, request rings'
 * reply areas.
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/backend/backend.h"
#include "daemon/config.h"
#include "daemon/hostmem.h"
#include "daemon/loop.h"
#include "daemon/ring.h"
#include "proto/ring.h"
#include "tests/unit/suites.h"

#define MiB (1ull << 20)

START_TEST(test_reserve_release)
{
	hostmem h;
	char err[256] = "";
	hostmem_init(&h, 100 * MiB);
	ck_assert_int_eq(hostmem_reserve(&h, HOSTMEM_BUFFERS, 60 * MiB, err, sizeof(err)), 0);
	ck_assert_int_eq(hostmem_reserve(&h, HOSTMEM_BUFFERS, 50 * MiB, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "host memory: 50.0 MiB asked, 60.0 MiB of the 100.0 MiB limit "
			      "(host_memory_limit) in use");
	ck_assert_int_eq(hostmem_fits(&h, 40 * MiB, err, sizeof(err)), 0);
	ck_assert_int_eq(hostmem_fits(&h, 40 * MiB + 1, err, sizeof(err)), -1);
	ck_assert_int_eq(hostmem_reserve(&h, HOSTMEM_LENT, 40 * MiB, err, sizeof(err)), 0);
	ck_assert_int_eq(hostmem_reserve(&h, HOSTMEM_MESSAGES, 1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "host memory: 1 B asked, 100.0 MiB of the 100.0 MiB limit "
			      "(host_memory_limit) in use");

	hostmem_stats s = hostmem_get(&h);
	ck_assert_uint_eq(s.limit, 100 * MiB);
	ck_assert_uint_eq(s.used, 100 * MiB);
	ck_assert_uint_eq(s.by_use[HOSTMEM_BUFFERS], 60 * MiB);
	ck_assert_uint_eq(s.by_use[HOSTMEM_LENT], 40 * MiB);
	ck_assert_uint_eq(s.by_use[HOSTMEM_MESSAGES], 0);
	ck_assert_uint_eq(s.refused, 3); /* two reserves and one fits */

	hostmem_release(&h, HOSTMEM_BUFFERS, 60 * MiB);
	s = hostmem_get(&h);
	ck_assert_uint_eq(s.used, 40 * MiB);
	ck_assert_uint_eq(s.by_use[HOSTMEM_BUFFERS], 0);
	ck_assert_uint_eq(s.high_water, 100 * MiB);
	/* more than the whole limit is refused even when nothing is used */
	hostmem_release(&h, HOSTMEM_LENT, 40 * MiB);
	ck_assert_int_eq(hostmem_reserve(&h, HOSTMEM_BUFFERS, 100 * MiB + 1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "host memory: 100.0 MiB asked, 0 B of the 100.0 MiB limit "
			      "(host_memory_limit) in use");
	ck_assert_uint_eq(hostmem_get(&h).used, 0);
	/* no budget: everything is granted, nothing counted */
	ck_assert_int_eq(hostmem_reserve(NULL, HOSTMEM_BUFFERS, UINT64_MAX, err, sizeof(err)), 0);
	ck_assert_int_eq(hostmem_fits(NULL, UINT64_MAX, err, sizeof(err)), 0);
	hostmem_release(NULL, HOSTMEM_BUFFERS, 1);
	ck_assert_str_eq(hostmem_use_name(HOSTMEM_PINNED), "pinned");
	ck_assert_str_eq(hostmem_use_name(HOSTMEM_STAGING), "staging");
}
END_TEST

START_TEST(test_format)
{
	static const struct {
		uint64_t v;
		const char *text;
	} cases[] = {
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{256 * MiB, "256.0 MiB"},
		{1288490188, "1.2 GiB"}, /* 80% of 1.5 GiB */
		{3ull << 40, "3.0 TiB"},
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hostmem_format(cases[i].v, buf, sizeof(buf));
		ck_assert_str_eq(buf, cases[i].text);
	}
}
END_TEST

/* Threads taking and giving back pieces of one budget: used never passes
 * the limit, and every grant is given back. */
#define THREADS 4
#define ROUNDS 20000
#define PIECE 1000u
static hostmem shared;
static void *hammer(void *arg)
{
	uint64_t *granted = arg, over = 0;
	char err[256];
	for (int i = 0; i < ROUNDS; i++) {
		hostmem_use use = (hostmem_use)(i % HOSTMEM_USES);
		if (hostmem_reserve(&shared, use, PIECE, err, sizeof(err)) != 0)
			continue;
		(*granted)++;
		if (atomic_load(&shared.used) > shared.limit)
			over++;
		hostmem_release(&shared, use, PIECE);
	}
	return (void *)(uintptr_t)over;
}

START_TEST(test_threads)
{
	pthread_t t[THREADS];
	uint64_t granted[THREADS] = {0};
	hostmem_init(&shared, 2 * PIECE + PIECE / 2); /* two pieces at once at most */
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &granted[i]), 0);
	uint64_t total = 0;
	for (int i = 0; i < THREADS; i++) {
		void *over;
		pthread_join(t[i], &over);
		ck_assert_msg((uintptr_t)over == 0, "thread %d saw used over the limit", i);
		total += granted[i];
	}
	hostmem_stats s = hostmem_get(&shared);
	ck_assert_uint_eq(s.used, 0);
	for (int i = 0; i < HOSTMEM_USES; i++)
		ck_assert_uint_eq(s.by_use[i], 0);
	ck_assert_uint_le(s.high_water, 2 * PIECE);
	ck_assert_uint_eq(total + s.refused, (uint64_t)THREADS * ROUNDS);
}
END_TEST

/* --- the default limit, from fake trees ---------------------------------------------- */

static char root[256];

static void put(const char *path, const char *text)
{
	char full[PATH_MAX];
	snprintf(full, sizeof(full), "%s%s", root, path);
	/* make the directories on the way */
	for (char *p = full + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		ck_assert_msg(mkdir(full, 0755) == 0 || errno == EEXIST, "mkdir %s", full);
		*p = '/';
	}
	FILE *f = fopen(full, "w");
	ck_assert_msg(f != NULL, "cannot write %s", full);
	fputs(text, f);
	fclose(f);
}

static void fresh_root(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/gpud-hostmem-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_msg(mkdtemp(root) != NULL, "mkdtemp %s: %s", root, strerror(errno));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void drop_root(void)
{
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#define MEMINFO_16G "MemTotal:       16777216 kB\nMemFree:         1000 kB\n"
#define MOUNT_V2                                                                                   \
	"25 1 0:22 / /proc rw - proc proc rw\n"                                                    \
	"30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"

START_TEST(test_default_v2)
{
	uint64_t limit, b;
	const char *file;
	char why[256];
	put("/proc/meminfo", MEMINFO_16G);
	put("/proc/self/cgroup", "0::/system.slice/gpud.service\n");
	put("/proc/self/mountinfo", MOUNT_V2);
	put("/sys/fs/cgroup/system.slice/memory.max", "max\n");
	put("/sys/fs/cgroup/system.slice/gpud.service/memory.max", "536870912\n");
	ck_assert_int_eq(hostmem_meminfo_total(root, &b), 0);
	ck_assert_uint_eq(b, 16ull << 30);
	ck_assert_int_eq(hostmem_cgroup_limit(root, &b, &file), 0);
	ck_assert_uint_eq(b, 512 * MiB);
	ck_assert_str_eq(file, "memory.max");
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), 0);
	ck_assert_uint_eq(limit, 429496729); /* 80% of 512 MiB */
	ck_assert_str_eq(why, "80% of the cgroup's memory.max 512.0 MiB");

	/* an ancestor's smaller limit holds its children too */
	put("/sys/fs/cgroup/system.slice/memory.max", "268435456\n");
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), 0);
	ck_assert_uint_eq(limit, 214748364);
	ck_assert_str_eq(why, "80% of the cgroup's memory.max 256.0 MiB");

	/* no limit anywhere: MemTotal */
	put("/sys/fs/cgroup/system.slice/memory.max", "max\n");
	put("/sys/fs/cgroup/system.slice/gpud.service/memory.max", "max\n");
	ck_assert_int_eq(hostmem_cgroup_limit(root, &b, &file), -1);
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), 0);
	ck_assert_uint_eq(limit, 13743895347); /* 80% of 16 GiB, rounded down */
	ck_assert_str_eq(why, "80% of MemTotal 16.0 GiB");

	/* a cgroup limit above the machine's memory: MemTotal */
	put("/sys/fs/cgroup/system.slice/gpud.service/memory.max", "68719476736\n");
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "80% of MemTotal 16.0 GiB");
}
END_TEST

/* cgroup v1 beside a v2 hierarchy without the memory controller (hybrid). */
START_TEST(test_default_v1_hybrid)
{
	uint64_t limit;
	char why[256];
	put("/proc/meminfo", MEMINFO_16G);
	put("/proc/self/cgroup", "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n"
				 "0::/process_api/abc\n");
	put("/proc/self/mountinfo",
	    "40 30 0:30 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
	    "41 30 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
	    "42 30 0:32 / /sys/fs/cgroup/memory rw shared:9 - cgroup cgroup rw,memory\n");
	put("/sys/fs/cgroup/unified/process_api/abc/cgroup.procs", "1\n");
	put("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "9223372036854771712\n");
	put("/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", "1610612736\n");
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), 0);
	ck_assert_uint_eq(limit, 1288490188); /* 80% of 1.5 GiB */
	ck_assert_str_eq(why, "80% of the cgroup's memory.limit_in_bytes 1.5 GiB");
	/* the cpuset hierarchy's files are not memory limits */
	put("/sys/fs/cgroup/cpuset/process_api/abc/memory.limit_in_bytes", "1048576\n");
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), 0);
	ck_assert_uint_eq(limit, 1288490188);
}
END_TEST

/* A container's view: the mount shows the hierarchy from the container's
 * own cgroup down, while /proc/self/cgroup names it from the host's root. */
START_TEST(test_default_container_mount)
{
	uint64_t limit;
	char why[256];
	put("/proc/meminfo", MEMINFO_16G);
	put("/proc/self/cgroup", "5:memory:/docker/0123abcd\n");
	put("/proc/self/mountinfo",
	    "50 40 0:40 /docker/0123abcd /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n");
	put("/sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824\n");
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), 0);
	ck_assert_uint_eq(limit, 858993459);
	ck_assert_str_eq(why, "80% of the cgroup's memory.limit_in_bytes 1.0 GiB");
}
END_TEST

START_TEST(test_default_unreadable)
{
	uint64_t limit = 1;
	char why[512];
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), -1);
	ck_assert_uint_eq(limit, 0);
	ck_assert_msg(strstr(why, "/proc/meminfo could be read") != NULL, "%s", why);
	/* MemTotal alone is enough */
	put("/proc/meminfo", "MemTotal:        2097152 kB\n");
	ck_assert_int_eq(hostmem_default_limit(root, &limit, why, sizeof(why)), 0);
	ck_assert_uint_eq(limit, 1717986918);
	ck_assert_str_eq(why, "80% of MemTotal 2.0 GiB");
}
END_TEST

/* --- the config key ---------------------------------------------------------------- */

START_TEST(test_config_key)
{
	gpud_config c;
	char err[512] = "";
	config_defaults(&c);
	ck_assert_uint_eq(c.host_memory_limit, 0); /* auto */
	ck_assert_int_eq(config_load_string(&c, "[gpud]\nhost_memory_limit = 2GiB\n", "t", err,
					    sizeof(err)),
			 0);
	ck_assert_uint_eq(c.host_memory_limit, 2ull << 30);
	ck_assert_int_eq(config_set(&c, "host_memory_limit", "auto", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.host_memory_limit, 0);
	ck_assert_int_eq(config_set(&c, "host_memory_limit", "512KiB", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "host_memory_limit = '512KiB': expected a size of at least 1MiB, "
			      "e.g. 4GiB, or auto");
	ck_assert_int_eq(config_set(&c, "host_memory_limit", "lots", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "host_memory_limit = 'lots'") != NULL, "%s", err);
	ck_assert_uint_eq(c.host_memory_limit, 0);
	config_free(&c);
}
END_TEST

/* --- the cpu backend's buffers ----------------------------------------------------- */

extern const backend_ops backend_cpu_ops;

START_TEST(test_cpu_buffers)
{
	hostmem h;
	gpud_backend b = {.ops = &backend_cpu_ops, .host = &h};
	char err[256] = "";
	void *small, *big, *none = NULL;
	int foreign = -1;
	hostmem_init(&h, 8 * MiB);

	/* small: made at once, on the loop; committed and zeroed */
	ck_assert_int_eq(backend_cpu_ops.alloc_cached(&b, 1000, 1, &small, &foreign, err,
						      sizeof(err)),
			 ST_OK);
	ck_assert_int_eq(foreign, 0); /* the cpu backend zeroes every block itself */
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(((unsigned char *)small)[i], 0);
	uint64_t small_bytes = hostmem_get(&h).by_use[HOSTMEM_BUFFERS];
	ck_assert_uint_ge(small_bytes, 1000);
	ck_assert_uint_le(small_bytes, 1000 + 128);
	/* large: left to a worker where it fits, refused at once where it does not */
	ck_assert_int_eq(backend_cpu_ops.alloc_cached(&b, 4 * MiB, 1, &big, &foreign, err,
						      sizeof(err)),
			 ST_WOULD_BLOCK);
	ck_assert_int_eq(backend_cpu_ops.alloc_cached(&b, 9 * MiB, 1, &none, &foreign, err,
						      sizeof(err)),
			 ST_OUT_OF_MEMORY);
	ck_assert_msg(strstr(err, "host memory: 9.0 MiB asked") != NULL, "%s", err);
	ck_assert_ptr_null(none);
	ck_assert_int_eq(backend_cpu_ops.alloc(&b, 4 * MiB, 1, &big, err, sizeof(err)), ST_OK);
	ck_assert_uint_eq((uintptr_t)big % 64, 0);
	for (size_t i = 0; i < 4 * MiB; i += 4096)
		ck_assert_int_eq(((unsigned char *)big)[i], 0);
	memset(big, 0xab, 4 * MiB);
	uint64_t used = hostmem_get(&h).used;
	ck_assert_uint_ge(used, small_bytes + 4 * MiB);
	ck_assert_uint_le(used, small_bytes + 4 * MiB + 8192);
	/* what is left is less than another 4 MiB */
	ck_assert_int_eq(backend_cpu_ops.alloc(&b, 4 * MiB, 1, &none, err, sizeof(err)),
			 ST_OUT_OF_MEMORY);
	ck_assert_msg(strstr(err, "host memory: 4.0 MiB asked") != NULL &&
			      strstr(err, "of the 8.0 MiB limit (host_memory_limit) in use"),
		      "%s", err);
	backend_cpu_ops.free(&b, big);
	ck_assert_uint_eq(hostmem_get(&h).used, small_bytes);
	backend_cpu_ops.free(&b, small);
	ck_assert_uint_eq(hostmem_get(&h).used, 0);
	ck_assert_uint_eq(hostmem_get(&h).refused, 2);
}
END_TEST

/* --- request rings' reply areas ----------------------------------------------------- */

START_TEST(test_ring_reply_area)
{
	hostmem h;
	uv_loop_t loop;
	ring_server rs;
	char err[256] = "";
	size_t cap = 2 * MiB, size = GPUD_RING_HDR + 2 * cap;
	void *m1 = calloc(1, size), *m2 = calloc(1, size);
	gpud_session s1 = {.pipe_id = 1}, s2 = {.pipe_id = 2};
	ck_assert(m1 && m2);
	hostmem_init(&h, 3 * MiB);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	loop_thread_set();
	ring_server_init(&rs, &loop, 0, 1u << 20, NULL, NULL);
	rs.host = &h;
	ck_assert_int_eq(ring_attach(&rs, &s1, m1, size, 0, -1, err, sizeof(err)), 0);
	ck_assert_uint_eq(hostmem_get(&h).by_use[HOSTMEM_RINGS], cap);
	/* a second ring does not fit: refused, the connection keeps its socket */
	ck_assert_int_eq(ring_attach(&rs, &s2, m2, size, 0, -1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "host memory: 2.0 MiB asked, 2.0 MiB of the 3.0 MiB limit "
			      "(host_memory_limit) in use");
	ck_assert_ptr_null(s2.ring);
	ring_session_closed(&rs, &s1);
	ck_assert_uint_eq(hostmem_get(&h).used, 0);
	ck_assert_int_eq(ring_attach(&rs, &s2, m2, size, 0, -1, err, sizeof(err)), 0);
	ring_session_closed(&rs, &s2);
	ck_assert_uint_eq(hostmem_get(&h).used, 0);
	ring_server_fini(&rs);
	uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	free(m1);
	free(m2);
}
END_TEST

Suite *hostmem_suite(void)
{
	Suite *s = suite_create("hostmem");
	TCase *tc = tcase_create("budget");
	tcase_add_test(tc, test_reserve_release);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_config_key);
	tcase_add_test(tc, test_cpu_buffers);
	tcase_add_test(tc, test_ring_reply_area);
	suite_add_tcase(s, tc);
	tc = tcase_create("default");
	tcase_add_checked_fixture(tc, fresh_root, drop_root);
	tcase_add_test(tc, test_default_v2);
	tcase_add_test(tc, test_default_v1_hybrid);
	tcase_add_test(tc, test_default_container_mount);
	tcase_add_test(tc, test_default_unreadable);
	suite_add_tcase(s, tc);
	return s;
}
