/*
 * tests/e2e/lend.c — test case "lend": host memory gpud lends (proto/shm.h
 * GPUD_SHM_LEND, daemon/lend.h) and outputs written into it (gpud_call_to).
 * gpud_host_alloc is served from the spares, zero-filled; memory given back
 * is zeroed and kept for its tenant, lent to it again, never to another
 * tenant (a second uid, where the suite runs as root); a lend bigger than a
 * spare is made to order; gpud_call_to's outputs land in the memory and equal
 * gpud_call's, and come back as gpud_call's where they do not fit. By hand on
 * the region socket: a lend with a descriptor, of 0 bytes and over the
 * connection's limit are refused with reasons, and gpud serves on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

#define UNIT (4u << 20)
#define SHM_LEND 4u /* proto/shm.h GPUD_SHM_LEND, restated */
#define WAIT_S 60.0 /* a deadline for failures only: the waits end on the event */

static void setup_lend(void)
{
	start_gpud("[gpud]\nsocket_mode = 0666\nlend_unit = 4MiB\nlend_spare = 8MiB\n"
		   "lend_keep = 64MiB\n"
		   "shm_max_bytes = 64MiB\n",
		   NULL, NULL);
}

static int spares_ready(const gpud_daemon_status *s)
{
	return s->lend_spare_bytes == 2 * UNIT;
}

static int one_kept(const gpud_daemon_status *s)
{
	return s->lend_kept_bytes == UNIT && s->lend_lent_bytes == 0;
}

static size_t nonzero(const unsigned char *p, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i] != 0;
	return k;
}

static void call_uniform(gpud_client *c, void *dst, size_t room, gpud_result *r, int *in_dst)
{
	gpud_arg a[] = {gpud_arg_i64("n", 1000), gpud_arg_i64("seed", 7),
			gpud_arg_dtype("dtype", GPUD_F64)};
	size_t n = 0;
	LIB_OK(c, gpud_call_to(c, "uniform", a, 3, dst, room, r, 1, &n, NULL, in_dst));
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(r->array.nbytes, 8000);
}

START_TEST(test_lend_and_call_to)
{
	gpud_client *c = lib_connect();
	if (!gpud_has_shm(c)) {
		printf("lend: skipped (no shared memory here)\n");
		gpud_close(c);
		return;
	}
	gpud_daemon_status s = wait_status(c, spares_ready, WAIT_S);
	ck_assert_msg(s.has_lending && s.lend_spare_bytes == 2 * UNIT,
		      "spares: %" PRIu64 " bytes, expected %u", s.lend_spare_bytes, 2 * UNIT);

	/* From a spare, zero-filled. */
	unsigned char *p = gpud_host_alloc(c, 1 << 20);
	ck_assert_msg(p != NULL, "gpud_host_alloc: %s", gpud_errmsg(c));
	ck_assert_uint_eq(nonzero(p, 1 << 20), 0);
	s = lib_status(c);
	ck_assert_uint_eq(s.lend_from_spare, 1);
	ck_assert_uint_eq(s.lend_lent_bytes, UNIT);

	/* Outputs into it, equal to gpud_call's (whose come in the reply). */
	gpud_result ref, got;
	size_t n = 0;
	gpud_arg a[] = {gpud_arg_i64("n", 1000), gpud_arg_i64("seed", 7),
			gpud_arg_dtype("dtype", GPUD_F64)};
	LIB_OK(c, gpud_call(c, "uniform", a, 3, &ref, 1, &n, NULL));
	memset(p, 0xEE, 1 << 20); /* poisoned */
	int in_dst = -1;
	call_uniform(c, p + 128, (1 << 20) - 128, &got, &in_dst);
	ck_assert_int_eq(in_dst, 1);
	ck_assert_ptr_eq(got.array.data, p + 128);
	ck_assert(memcmp(got.array.data, ref.array.data, 8000) == 0);
	ck_assert_uint_eq(p[127], 0xEE); /* nothing before it written */
	/* Too little room: in the reply, the caller's to free. */
	call_uniform(c, p, 100, &got, &in_dst);
	ck_assert_int_eq(in_dst, 0);
	ck_assert(memcmp(got.array.data, ref.array.data, 8000) == 0);
	gpud_array_free(&got.array);
	/* Not gpud_host_alloc memory: in the reply too. */
	void *plain = malloc(1 << 16);
	call_uniform(c, plain, 1 << 16, &got, &in_dst);
	ck_assert_int_eq(in_dst, 0);
	ck_assert(memcmp(got.array.data, ref.array.data, 8000) == 0);
	gpud_array_free(&got.array);
	free(plain);
	gpud_array_free(&ref.array);

	/* Given back: zeroed and kept for this tenant, then lent to it again. */
	memset(p, 0xA5, 1 << 20);
	LIB_OK(c, gpud_host_free(c, p));
	s = wait_status(c, one_kept, WAIT_S);
	ck_assert_msg(s.lend_kept_bytes == UNIT && s.lend_lent_bytes == 0,
		      "kept %" PRIu64 ", lent %" PRIu64, s.lend_kept_bytes, s.lend_lent_bytes);
	unsigned char *q = gpud_host_alloc(c, 1 << 20);
	ck_assert_msg(q != NULL, "gpud_host_alloc: %s", gpud_errmsg(c));
	ck_assert_uint_eq(nonzero(q, UNIT), 0);
	s = lib_status(c);
	ck_assert_uint_eq(s.lend_from_kept, 1);
	ck_assert_uint_eq(s.lend_kept_bytes, 0);

	/* Bigger than a spare: made to order, pinned while the client waits. */
	unsigned char *big = gpud_host_alloc(c, 6u << 20);
	ck_assert_msg(big != NULL, "gpud_host_alloc: %s", gpud_errmsg(c));
	ck_assert_uint_eq(nonzero(big, 6u << 20), 0);
	s = lib_status(c);
	ck_assert_uint_eq(s.lend_made, 1);
	ck_assert_uint_eq(s.lend_lent_bytes, UNIT + (6u << 20));
	/* Over the connection's limit (shm_max_bytes 64 MiB): refused, saying why. */
	ck_assert_ptr_null(gpud_host_alloc(c, 80u << 20));
	ck_assert_msg(strstr(gpud_errmsg(c), "shm_max_bytes"), "%s", gpud_errmsg(c));
	gpud_close(c);
	assert_daemon_alive("lends");
}
END_TEST

/*
 * gpud_host_read: a file's bytes at an offset, copied by the kernel into
 * lent memory (poisoned around them), which gpud then reads as the client
 * wrote them (an upload from it, downloaded back); the same into ordinary
 * memory (pread); a file that ends early, a pipe and no descriptor refused
 * with reasons.
 */
START_TEST(test_host_read)
{
	enum { FILE_BYTES = 300000, AT = 777, LEN = 200000 };
	gpud_client *c = lib_connect();
	if (!gpud_has_shm(c)) {
		printf("lend: skipped (no shared memory here)\n");
		gpud_close(c);
		return;
	}
	unsigned char *want = malloc(FILE_BYTES), *plain = malloc(LEN);
	ck_assert(want && plain);
	srand48((long)(harness_now_s() * 1e6)); /* fresh bytes each run */
	for (size_t i = 0; i < FILE_BYTES; i++)
		want[i] = (unsigned char)(lrand48() >> 7);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/host_read.bin", e2e_gpud.dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, want, FILE_BYTES), FILE_BYTES);

	unsigned char *p = gpud_host_alloc(c, 1 << 20);
	ck_assert_msg(p != NULL, "gpud_host_alloc: %s", gpud_errmsg(c));
	memset(p, 0xEE, 1 << 20);
	LIB_OK(c, gpud_host_read(c, p + 104, fd, AT, LEN));
	ck_assert(memcmp(p + 104, want + AT, LEN) == 0);
	ck_assert_uint_eq(p[103], 0xEE);
	ck_assert_uint_eq(p[104 + LEN], 0xEE);
	/* gpud reads what the kernel wrote: uploaded from the memory, downloaded back */
	uint64_t n = LEN / 8;
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, p + 104, &h));
	memset(plain, 0, LEN);
	LIB_OK(c, gpud_download_range(c, h, 0, plain, LEN));
	ck_assert(memcmp(plain, want + AT, LEN) == 0);
	LIB_OK(c, gpud_free(c, &h, 1));

	/* ordinary memory: the same bytes */
	memset(plain, 0, LEN);
	LIB_OK(c, gpud_host_read(c, plain, fd, AT, LEN));
	ck_assert(memcmp(plain, want + AT, LEN) == 0);

	/* refusals, each saying why */
	LIB_FAIL(c, gpud_host_read(c, p, fd, FILE_BYTES - 1000, 5000), GPUD_EARG,
		 "ends at byte 300000, before the 4000 bytes asked");
	LIB_FAIL(c, gpud_host_read(c, plain, fd, FILE_BYTES - 10, 11), GPUD_EARG,
		 "ends at byte 300000, before the 1 bytes asked");
	int pp[2];
	ck_assert_int_eq(pipe(pp), 0);
	ck_assert_int_eq(write(pp[1], want, 64), 64);
	LIB_FAIL(c, gpud_host_read(c, p, pp[0], 0, 64), GPUD_EARG, "Illegal seek");
	close(pp[0]);
	close(pp[1]);
	LIB_FAIL(c, gpud_host_read(c, p, -1, 0, 64), GPUD_EARG, "no file descriptor");
	LIB_OK(c, gpud_host_read(c, p, fd, 0, 0)); /* nothing asked: nothing done */

	close(fd);
	free(want);
	free(plain);
	gpud_close(c);
	assert_daemon_alive("host reads");
}
END_TEST

/* As uid: borrow 1 MiB, print "TENANT NONZERO-BYTES", scribble on it, leave. */
int lend_uid_main(long uid, const char *url)
{
	gpud_client *c = connect_as_uid(uid, url);
	if (c == NULL)
		return 1;
	unsigned char *p = gpud_host_alloc(c, 1 << 20);
	if (p == NULL) {
		printf("host_alloc: %s\n", gpud_errmsg(c));
		return 1;
	}
	printf("%s %zu\n", gpud_server(c)->tenant, nonzero(p, 1 << 20));
	memset(p, 0x5A, 1 << 20);
	gpud_close(c);
	return 0;
}

START_TEST(test_lend_other_tenant)
{
	if (getuid() != 0) {
		printf("lend to another tenant: skipped (needs root to setuid; CI runs as root)\n");
		return;
	}
	gpud_client *c = lib_connect();
	if (!gpud_has_shm(c)) {
		gpud_close(c);
		return;
	}
	wait_status(c, spares_ready, WAIT_S);
	unsigned char *p = gpud_host_alloc(c, 1 << 20);
	ck_assert_msg(p != NULL, "gpud_host_alloc: %s", gpud_errmsg(c));
	memset(p, 0xA5, 1 << 20); /* root's secret */
	LIB_OK(c, gpud_host_free(c, p));
	gpud_daemon_status s = wait_status(c, one_kept, WAIT_S);
	ck_assert_uint_eq(s.lend_kept_bytes, UNIT);

	/* uid 65534 borrows: not root's kept memory, and zero. */
	char cmd[PATH_MAX + 300];
	snprintf(cmd, sizeof(cmd), "%s --lend-uid 65534 %s", self_path, e2e_gpud.url);
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	char line[512], tenant[64];
	size_t nz = 1;
	ck_assert_msg(fgets(line, sizeof(line), f) != NULL, "the uid-65534 client said nothing");
	int rc = pclose(f);
	ck_assert_msg(rc == 0, "the uid-65534 client: status %d: %s", rc, line);
	ck_assert_msg(sscanf(line, "%63s %zu", tenant, &nz) == 2, "uid 65534: %s", line);
	ck_assert_str_ne(tenant, "root");
	ck_assert_uint_eq(nz, 0);
	s = lib_status(c);
	ck_assert_uint_eq(s.lend_from_kept, 0);
	ck_assert_uint_eq(s.lend_from_spare, 2);

	/* root's kept piece is still root's: lent to root again, zeroed. */
	unsigned char *q = gpud_host_alloc(c, 1 << 20);
	ck_assert_msg(q != NULL, "gpud_host_alloc: %s", gpud_errmsg(c));
	ck_assert_uint_eq(nonzero(q, UNIT), 0);
	s = lib_status(c);
	ck_assert_uint_eq(s.lend_from_kept, 1);
	gpud_close(c);
}
END_TEST

START_TEST(test_lend_refusals)
{
	char path[108];
	uint8_t key[16];
	nng_socket s = raw_open(30000);
	raw_hello(s, path, sizeof(path), key);
	if (path[0] == '\0') {
		nng_close(s);
		return;
	}
	int fd = dup(0);
	t_shm_reply r = shm_send(path, key, 4096, SHM_LEND, &fd, 1, sizeof(t_shm_register));
	close(fd);
	ck_assert_msg(r.status == ST_INVALID_ARGUMENT && strstr(r.message, "no file descriptor"),
		      "%d %s", r.status, r.message);
	r = shm_send(path, key, 0, SHM_LEND, NULL, 0, sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_INVALID_ARGUMENT && strstr(r.message, "expected 1 to"),
		      "%d %s", r.status, r.message);
	r = shm_send(path, key, 1ull << 30, SHM_LEND, NULL, 0, sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_TOO_LARGE && strstr(r.message, "shm_max_bytes"), "%d %s",
		      r.status, r.message);
	uint8_t bad[16] = {1};
	r = shm_send(path, bad, 4096, SHM_LEND, NULL, 0, sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_NOT_FOUND && strstr(r.message, "unknown session key"), "%d %s",
		      r.status, r.message);
	/* A good one by hand: the region and its size come back. */
	r = shm_send(path, key, 4096, SHM_LEND, NULL, 0, sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_OK && r.region != 0 && r.size == UNIT, "%d %s", r.status,
		      r.message);
	nng_close(s);
	assert_daemon_alive("lend refusals");
}
END_TEST

TCase *e2e_lend(void)
{
	TCase *tc = tcase_create("lend");
	tcase_add_checked_fixture(tc, setup_lend, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_lend_and_call_to);
	tcase_add_test(tc, test_host_read);
	tcase_add_test(tc, test_lend_other_tenant);
	tcase_add_test(tc, test_lend_refusals);
	return tc;
}
