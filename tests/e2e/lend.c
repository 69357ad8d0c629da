/*
 * tests/e2e/lend.c — test case "lend": host memory gpud lends (proto/shm.h
 * GPUD_SHM_LEND, daemon/lend.h) and outputs written into it (gpud_call_to).
 * gpud_host_alloc is served from the spares, zero-filled; memory given back
 * is zeroed and kept for its tenant, lent to it again, never to another
 * tenant (a second uid, where the suite runs as root); a lend bigger than a
 * spare is made to order; gpud_call_to's outputs land in the memory and equal
 * gpud_call's, and come back as gpud_call's where they do not fit. By hand on
 * the region socket: a lend with a descriptor, of 0 bytes and over the
 * connection's limit are refused with reasons, and gpud serves on. Files
 * copied into and out of lent memory by gpud (gpud_host_read of 4 MiB and
 * more, gpud_host_write of 8 MiB and more; gpuctl run's output written
 * that way),
 * counted on /metrics; what gpud will not take is copied by the library,
 * which says why that cannot be.
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
		   "shm_max_bytes = 64MiB\nmetrics_listen = 127.0.0.1:0\n",
		   NULL, NULL);
	e2e_find_metrics_addr();
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

/* gpud_host_file_copy_bytes_total{direction="in"} or "out" on /metrics now. */
static double copied(const char *direction)
{
	static char page[1 << 18];
	char series[96];
	ck_assert_int_eq(e2e_http_get("/metrics", page, sizeof(page)), 200);
	snprintf(series, sizeof(series), "gpud_host_file_copy_bytes_total{direction=\"%s\"}",
		 direction);
	double v = e2e_sample(page, series);
	ck_assert_msg(v >= 0, "no %s on /metrics", series);
	return v;
}

/* A file of n bytes at path, each byte fill: its descriptor (O_RDWR). */
static int filled_file(const char *path, size_t n, int fill)
{
	unsigned char *b = malloc(n);
	ck_assert_ptr_nonnull(b);
	memset(b, fill, n);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, n), (ssize_t)n);
	free(b);
	return fd;
}

START_TEST(test_host_copies_by_gpud)
{
	/* past both sizes where the library asks gpud to copy: 4 MiB in, 8 MiB out */
	enum { FILE_BYTES = 12 << 20, AT = 4099, LEN = (9 << 20) + 12345, OFF = 333, WAT = 1000 };
	gpud_client *c = lib_connect();
	if (!gpud_has_shm(c)) {
		printf("lend: skipped (no shared memory here)\n");
		gpud_close(c);
		return;
	}
	unsigned char *want = malloc(FILE_BYTES), *back = malloc(FILE_BYTES);
	ck_assert(want && back);
	srand48((long)(harness_now_s() * 1e6)); /* fresh bytes each run */
	for (size_t i = 0; i < FILE_BYTES; i++)
		want[i] = (unsigned char)(lrand48() >> 7);
	char in_path[PATH_MAX], out_path[PATH_MAX];
	snprintf(in_path, sizeof(in_path), "%s/copy_in.bin", e2e_gpud.dir);
	snprintf(out_path, sizeof(out_path), "%s/copy_out.bin", e2e_gpud.dir);
	int fd = filled_file(in_path, FILE_BYTES, 0);
	ck_assert_int_eq(pwrite(fd, want, FILE_BYTES, 0), FILE_BYTES);

	/* 9 MiB into lent memory, poisoned around: gpud reads them in */
	unsigned char *p = gpud_host_alloc(c, 10 << 20);
	ck_assert_msg(p != NULL, "gpud_host_alloc: %s", gpud_errmsg(c));
	memset(p, 0xEE, 10 << 20);
	double in0 = copied("in"), out0 = copied("out");
	LIB_OK(c, gpud_host_read(c, p + OFF, fd, AT, LEN));
	ck_assert(memcmp(p + OFF, want + AT, LEN) == 0);
	ck_assert_uint_eq(p[OFF - 1], 0xEE);
	ck_assert_uint_eq(p[OFF + LEN], 0xEE);
	ck_assert_msg(copied("in") == in0 + LEN, "gpud read %g bytes in, expected %d",
		      copied("in") - in0, LEN);

	/* and out again into another file at an offset, its other bytes kept */
	int out = filled_file(out_path, FILE_BYTES, 0x11);
	LIB_OK(c, gpud_host_write(c, p + OFF, out, WAT, LEN));
	ck_assert_msg(copied("out") == out0 + LEN, "gpud wrote %g bytes out, expected %d",
		      copied("out") - out0, LEN);
	ck_assert_int_eq(pread(out, back, FILE_BYTES, 0), FILE_BYTES);
	ck_assert(memcmp(back + WAT, want + AT, LEN) == 0);
	ck_assert_uint_eq(back[WAT - 1], 0x11);
	ck_assert_uint_eq(back[WAT + LEN], 0x11);

	/* ordinary memory is written here: the same bytes, gpud's count unchanged */
	LIB_OK(c, gpud_host_write(c, want, out, 0, LEN));
	ck_assert_int_eq(pread(out, back, LEN, 0), LEN);
	ck_assert(memcmp(back, want, LEN) == 0);
	ck_assert(copied("out") == out0 + LEN);

	/* gpud takes a regular file in the mode the copy needs; else the library
	 * copies here, and says why that fails */
	int ro = open(out_path, O_RDONLY | O_CLOEXEC), ap = open(out_path, O_WRONLY | O_APPEND);
	ck_assert(ro >= 0 && ap >= 0);
	LIB_FAIL(c, gpud_host_write(c, p + OFF, ro, 0, LEN), GPUD_EARG, "Bad file descriptor");
	LIB_FAIL(c, gpud_host_write(c, p + OFF, ap, 0, LEN), GPUD_EARG,
		 "is open with O_APPEND, which writes at its end, not at byte 0");
	/* a file that ends first: gpud stops there (its bytes counted), the library says so */
	LIB_FAIL(c, gpud_host_read(c, p, fd, FILE_BYTES - 1000, 5 << 20), GPUD_EARG,
		 "ends at byte 12582912, before the 5241880 bytes asked");
	ck_assert(copied("out") == out0 + LEN);
	ck_assert(copied("in") == in0 + LEN + 1000);
	close(ro);
	close(ap);

	/* below those sizes the library copies: the same bytes, gpud's counts unchanged */
	double in1 = copied("in");
	LIB_OK(c, gpud_host_read(c, p + OFF, fd, 7, (4 << 20) - 1));
	ck_assert(memcmp(p + OFF, want + 7, (4 << 20) - 1) == 0);
	LIB_OK(c, gpud_host_write(c, p + OFF, out, 0, (8 << 20) - 1));
	ck_assert_int_eq(pread(out, back, (8 << 20) - 1, 0), (8 << 20) - 1);
	ck_assert(memcmp(back, want + 7, (4 << 20) - 1) == 0);
	ck_assert(copied("in") == in1 && copied("out") == out0 + LEN);

	/* gpuctl run: an output of 8 MiB written by gpud from lent memory, the same
	 * bytes as one that came in the reply (no shared memory) */
	double x[60], y[60], f[4];
	gen_ls(9191, 60, 4, x, y, f);
	uint64_t nx = 60;
	char xp[PATH_MAX + 16], yp[PATH_MAX + 16], cmd[3 * PATH_MAX];
	snprintf(xp, sizeof(xp), "%s/lx.npy", e2e_gpud.dir);
	snprintf(yp, sizeof(yp), "%s/ly.npy", e2e_gpud.dir);
	save_npy(xp, GPUD_F64, 1, &nx, x);
	save_npy(yp, GPUD_F64, 1, &nx, y);
	const char *run = "gpuctl run lombscargle x=lx.npy y=ly.npy f0=0.1 df=0.0001 nf=1048576";
	out0 = copied("out");
	snprintf(cmd, sizeof(cmd), "%s -o by_gpud.npy", run);
	assert_sh_ok(sh_run(cmd));
	ck_assert_msg(copied("out") == out0 + 1048576 * 8, "gpud wrote %g bytes of the output",
		      copied("out") - out0);
	snprintf(cmd, sizeof(cmd), "GPUD_NO_SHM=1 %s -o in_reply.npy", run);
	assert_sh_ok(sh_run(cmd));
	assert_sh_ok(sh_run("cmp by_gpud.npy in_reply.npy"));

	close(fd);
	close(out);
	free(want);
	free(back);
	gpud_close(c);
	assert_daemon_alive("host copies by gpud");
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
	tcase_add_test(tc, test_host_copies_by_gpud);
	tcase_add_test(tc, test_lend_other_tenant);
	tcase_add_test(tc, test_lend_refusals);
	return tc;
}
