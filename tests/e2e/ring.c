/*
 * tests/e2e/ring.c — test case "ring": the request ring beside the socket
 * (proto/ring.h). Through the library: calls take the ring by default over
 * ipc:// and give the same results as the socket, in order, from several
 * threads at once; gpud_set_ring(c, 0) and a gpud with ring = 0 use the
 * socket alone. By hand: a ring registered on the region socket and written
 * entry by entry, with the malformed entries gpud must answer (and keep
 * serving everyone else), and a reply longer than the ring's area, fetched
 * in chunks.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

/* The ring's layout (proto/ring.h), restated here on purpose: the raw tests
 * are a second, independent reading of the protocol. */
typedef struct t_ring_hdr {
	uint32_t req_seq, req_kind, req_len, client_waiting;
	uint8_t pad0[48];
	uint32_t rep_seq, rep_for, rep_len, rep_flags;
	uint64_t rep_total, rep_off;
	uint8_t pad1[32];
	uint32_t gpud_sleeping;
	uint8_t pad2[60];
} t_ring_hdr;
#define T_RING_HDR 4096u
#define T_RING_CAP (64u << 10)
#define T_RING_SIZE (T_RING_HDR + 2 * T_RING_CAP)
#define T_SHM_RING 2u

typedef struct t_ring {
	t_ring_hdr *h;
	uint8_t *req, *rep;
	int efd;
	uint32_t seq, rep_seen;
} t_ring;

/* Registers a ring: memfd fd of size bytes and second descriptor fd2 (-1:
 * none). The region socket's status, its message in msg. */
static int ring_register(const char *path, const uint8_t *key, int fd, int fd2, uint64_t size,
			 char *msg, size_t msglen)
{
	int fds[2] = {fd, fd2};
	t_shm_reply rep = shm_send(path, key, size, T_SHM_RING, fds, fd2 >= 0 ? 2 : 1,
				   sizeof(t_shm_register));
	snprintf(msg, msglen, "%s", rep.message);
	return rep.status;
}

static int ring_memfd(uint64_t size)
{
	int fd = memfd_create("e2e-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
	return fd;
}

/* Writes entry (kind, len) and bumps req_seq; rings the doorbell if gpud sleeps. */
static void ring_post(t_ring *r, uint32_t kind, uint32_t len)
{
	atomic_store((_Atomic uint32_t *)&r->h->req_kind, kind);
	atomic_store((_Atomic uint32_t *)&r->h->req_len, len);
	atomic_store((_Atomic uint32_t *)&r->h->req_seq, ++r->seq);
	if (atomic_load((_Atomic uint32_t *)&r->h->gpud_sleeping)) {
		uint64_t one = 1;
		ck_assert_int_eq(write(r->efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	}
}

/* Waits (FUTEX_WAIT, no spinning) for the next reply chunk; 30 s is only a safety net. */
static void ring_wait(t_ring *r)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint32_t seen = r->rep_seen;
		atomic_store((_Atomic uint32_t *)&r->h->client_waiting, 1);
		if (atomic_load((_Atomic uint32_t *)&r->h->rep_seq) == seen) {
			struct timespec ts = {.tv_sec = 1};
			syscall(SYS_futex, &r->h->rep_seq, FUTEX_WAIT, seen, &ts, NULL, 0);
		}
		atomic_store((_Atomic uint32_t *)&r->h->client_waiting, 0);
		uint32_t now = atomic_load((_Atomic uint32_t *)&r->h->rep_seq);
		if (now != seen) {
			r->rep_seen = now;
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 30, "no reply in the ring within 30 s");
	}
}

/* One request through the ring; the whole reply (malloc'd, chunks joined) and its length. */
static uint8_t *ring_call(t_ring *r, const void *msg, uint32_t len, size_t *rlen, int *chunks)
{
	memcpy(r->req, msg, len);
	ring_post(r, 1, len);
	uint8_t *out = NULL;
	size_t got = 0, total = 0;
	*chunks = 0;
	for (;;) {
		ring_wait(r);
		t_ring_hdr *h = r->h;
		ck_assert_uint_eq(h->rep_for, r->seq);
		if (out == NULL) {
			total = (size_t)h->rep_total;
			ck_assert_msg(total >= 4 && total < (64u << 20), "rep_total %zu", total);
			out = malloc(total);
		}
		ck_assert_uint_eq(h->rep_total, total);
		ck_assert_uint_eq(h->rep_off, got);
		ck_assert_msg(h->rep_len > 0 && h->rep_len <= T_RING_CAP &&
				      h->rep_len <= total - got,
			      "rep_len %u at %zu of %zu", h->rep_len, got, total);
		memcpy(out + got, r->rep, h->rep_len);
		got += h->rep_len;
		++*chunks;
		if (got == total)
			break;
		ring_post(r, 2, 0); /* MORE */
	}
	*rlen = total;
	return out;
}

static raw_reply ring_raw(t_ring *r, const void *msg, uint32_t len)
{
	size_t n;
	int chunks;
	raw_reply rep;
	uint8_t *m = ring_call(r, msg, len, &n, &chunks);
	ck_assert_msg(parse_reply(m, n, &rep) == 0, "the ring's reply is not a framed Response");
	free(m);
	return rep;
}

START_TEST(test_ring_by_hand)
{
	nng_socket a = raw_open(30000);
	char path[256], msg[512];
	uint8_t key[16];
	raw_hello(a, path, sizeof(path), key);

	/* Refusals: no eventfd, a pipe for one, a wrong size. */
	int fd = ring_memfd(T_RING_SIZE), efd = eventfd(0, EFD_CLOEXEC), pfd[2];
	ck_assert_int_ge(efd, 0);
	ck_assert_int_eq(pipe(pfd), 0);
	int st = ring_register(path, key, fd, -1, T_RING_SIZE, msg, sizeof(msg));
	ck_assert_msg(st == ST_INVALID_ARGUMENT && strstr(msg, "two file descriptors"), "%d %s", st,
		      msg);
	st = ring_register(path, key, fd, pfd[0], T_RING_SIZE, msg, sizeof(msg));
	ck_assert_msg(st == ST_INVALID_ARGUMENT && strstr(msg, "eventfd"), "%d %s", st, msg);
	close(pfd[0]);
	close(pfd[1]);
	int odd = ring_memfd(T_RING_SIZE + 4096);
	st = ring_register(path, key, odd, efd, T_RING_SIZE + 4096, msg, sizeof(msg));
	ck_assert_msg(st == ST_INVALID_ARGUMENT && strstr(msg, "2 * cap"), "%d %s", st, msg);
	close(odd);

	st = ring_register(path, key, fd, efd, T_RING_SIZE, msg, sizeof(msg));
	ck_assert_msg(st == ST_OK, "registration: %d %s", st, msg);
	int fd2 = ring_memfd(T_RING_SIZE), efd2 = eventfd(0, EFD_CLOEXEC);
	st = ring_register(path, key, fd2, efd2, T_RING_SIZE, msg, sizeof(msg));
	ck_assert_msg(st == ST_INVALID_ARGUMENT && strstr(msg, "already has a request ring"),
		      "a second ring: %d %s", st, msg);
	close(fd2);
	close(efd2);

	uint8_t *base = mmap(NULL, T_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	close(fd);
	t_ring r = {.h = (t_ring_hdr *)base,
		    .req = base + T_RING_HDR,
		    .rep = base + T_RING_HDR + T_RING_CAP,
		    .efd = efd};

	/* status through the ring */
	pb empty = {.n = 0};
	pb hdr = pb_request(WIRE_VERSION, 40, 17, &empty);
	size_t len;
	uint8_t *m = frame(&hdr, NULL, 0, &len);
	raw_reply rep = ring_raw(&r, m, (uint32_t)len);
	free(m);
	ck_assert_msg(rep.code == ST_OK && rep.id == 40 && rep.body_field == 17,
		      "status through the ring: code %" PRIu64 " id %" PRIu64 " body %d %s",
		      rep.code, rep.id, rep.body_field, rep.message);

	/* Malformed entries: each answered with PROTOCOL, naming what is wrong. */
	ring_post(&r, 1, T_RING_CAP + 1);
	ring_wait(&r);
	ck_assert(parse_reply(r.rep, r.h->rep_len, &rep) == 0);
	ck_assert_msg(rep.code == ST_PROTOCOL && strstr(rep.message, "req_len"), "%s", rep.message);
	ring_post(&r, 9, 16);
	ring_wait(&r);
	ck_assert(parse_reply(r.rep, r.h->rep_len, &rep) == 0);
	ck_assert_msg(rep.code == ST_PROTOCOL && strstr(rep.message, "req_kind 9"), "%s",
		      rep.message);
	ring_post(&r, 2, 0);
	ring_wait(&r);
	ck_assert(parse_reply(r.rep, r.h->rep_len, &rep) == 0);
	ck_assert_msg(rep.code == ST_PROTOCOL && strstr(rep.message, "MORE"), "%s", rep.message);
	static const uint8_t junk[] = {200, 0, 0, 0, 1, 2, 3, 4, 5, 6};
	rep = ring_raw(&r, junk, sizeof(junk));
	ck_assert_msg(rep.code == ST_PROTOCOL && strstr(rep.message, "malformed message"), "%s",
		      rep.message);

	/* A reply longer than the ring's area comes in chunks: 100,000 doubles. */
	enum { N = 100000 };
	double *v = malloc(N * sizeof(double));
	for (int i = 0; i < N; i++)
		v[i] = 0.25 * i - 7.0;
	uint64_t h = raw_alloc_f64(a, N);
	pb up = {.n = 0};
	pb_uint(&up, 1, h);
	raw_reply ar = raw_body_on(a, 4, 12, &up, v, N * sizeof(double)); /* too big for the ring */
	ck_assert_msg(ar.code == ST_OK, "upload: %s", ar.message);
	pb down = {.n = 0};
	pb_uint(&down, 1, h);
	hdr = pb_request(WIRE_VERSION, 41, 13, &down);
	m = frame(&hdr, NULL, 0, &len);
	size_t rn;
	int chunks;
	uint8_t *whole = ring_call(&r, m, (uint32_t)len, &rn, &chunks);
	free(m);
	ck_assert_msg(chunks == (int)((rn + T_RING_CAP - 1) / T_RING_CAP) && chunks >= 13,
		      "%zu bytes in %d chunks", rn, chunks);
	ck_assert(parse_reply(whole, rn, &rep) == 0);
	ck_assert_msg(rep.code == ST_OK && rep.id == 41, "download: %s", rep.message);
	ck_assert_uint_ge(rn, N * sizeof(double));
	ck_assert_msg(memcmp(whole + rn - N * sizeof(double), v, N * sizeof(double)) == 0,
		      "the downloaded bytes differ from the uploaded ones");
	free(whole);

	/* A new request drops what is left of a long reply. */
	m = frame(&hdr, NULL, 0, &len);
	memcpy(r.req, m, len);
	ring_post(&r, 1, (uint32_t)len);
	ring_wait(&r); /* the first chunk only */
	ck_assert_uint_lt(r.h->rep_len, r.h->rep_total);
	hdr = pb_request(WIRE_VERSION, 42, 17, &empty);
	free(m);
	m = frame(&hdr, NULL, 0, &len);
	rep = ring_raw(&r, m, (uint32_t)len);
	free(m);
	ck_assert_msg(rep.code == ST_OK && rep.id == 42, "status after a dropped reply: %s",
		      rep.message);

	/* The ring goes with its connection; everyone else is served throughout. */
	free(v);
	munmap(base, T_RING_SIZE);
	close(efd);
	nng_close(a);
	assert_fresh_client_works("a ring written by hand");
}
END_TEST

static void fill(double *v, size_t n, double k)
{
	for (size_t i = 0; i < n; i++)
		v[i] = k * (double)(i % 101) - 3.5;
}

/* alloc with values, download, compare; through whatever path c takes now. */
static void round_trip(gpud_client *c, size_t n, double k)
{
	double *in = malloc(n * sizeof(double)), *out = malloc(n * sizeof(double));
	uint64_t shape = n;
	gpud_handle h;
	fill(in, n, k);
	for (size_t i = 0; i < n; i++)
		out[i] = -1e300;
	ck_assert_msg(gpud_alloc(c, GPUD_F64, 1, &shape, in, &h) == GPUD_OK, "alloc: %s",
		      gpud_errmsg(c));
	ck_assert_msg(gpud_download_range(c, h, 0, out, n * sizeof(double)) == GPUD_OK,
		      "download: %s", gpud_errmsg(c));
	ck_assert_msg(memcmp(in, out, n * sizeof(double)) == 0, "values differ (n %zu)", n);
	ck_assert_int_eq(gpud_free(c, &h, 1), GPUD_OK);
	free(in);
	free(out);
}

typedef struct worker {
	gpud_client *c;
	int id, errors;
} worker;

static void *worker_main(void *arg)
{
	worker *w = arg;
	for (int i = 0; i < 40; i++) {
		size_t n = 1 + (size_t)((w->id * 131 + i * 37) % 3000);
		double *in = malloc(n * sizeof(double)), *out = malloc(n * sizeof(double));
		uint64_t shape = n;
		gpud_handle h;
		fill(in, n, w->id + 0.5 * i);
		if (gpud_alloc(w->c, GPUD_F64, 1, &shape, in, &h) != GPUD_OK ||
		    gpud_download_range(w->c, h, 0, out, n * sizeof(double)) != GPUD_OK ||
		    memcmp(in, out, n * sizeof(double)) != 0 || gpud_free(w->c, &h, 1) != GPUD_OK)
			w->errors++;
		free(in);
		free(out);
	}
	return NULL;
}

START_TEST(test_ring_library)
{
	gpud_client *c = lib_connect();
	ck_assert_uint_eq(gpud_ring_calls(c), 0);
	/* A session's first call takes the socket (a one-call process makes no
	 * ring); the calls after it take the ring. */
	ck_assert_int_eq(gpud_sync(c), GPUD_OK);
	ck_assert_uint_eq(gpud_ring_calls(c), 0);
	round_trip(c, 1000, 1.5);
	uint64_t used = gpud_ring_calls(c);
	ck_assert_msg(used >= 3, "alloc, download and free should take the ring: %" PRIu64, used);
	/* Off: the socket; on again: the ring; results the same either way. */
	gpud_set_ring(c, 0);
	round_trip(c, 1000, 2.5);
	ck_assert_uint_eq(gpud_ring_calls(c), used);
	gpud_set_ring(c, 1);
	round_trip(c, 1000, 3.5);
	ck_assert_uint_gt(gpud_ring_calls(c), used);
	/* A buffer made through the ring, read through the socket, and back. */
	double in[64], out[64];
	uint64_t shape = 64;
	gpud_handle h;
	fill(in, 64, 0.125);
	ck_assert_int_eq(gpud_alloc(c, GPUD_F64, 1, &shape, in, &h), GPUD_OK);
	gpud_set_ring(c, 0);
	ck_assert_int_eq(gpud_download_range(c, h, 0, out, sizeof(out)), GPUD_OK);
	ck_assert(memcmp(in, out, sizeof(in)) == 0);
	fill(in, 64, -2.0);
	ck_assert_int_eq(gpud_upload(c, h, 0, in, sizeof(in)), GPUD_OK);
	gpud_set_ring(c, 1);
	ck_assert_int_eq(gpud_download_range(c, h, 0, out, sizeof(out)), GPUD_OK);
	ck_assert(memcmp(in, out, sizeof(in)) == 0);
	ck_assert_int_eq(gpud_free(c, &h, 1), GPUD_OK);

	/* Four threads on one client: one at a time takes the ring, the others the
	 * socket; every value comes back right. */
	pthread_t th[4];
	worker w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (worker){.c = c, .id = i};
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(w[i].errors == 0, "thread %d: %d errors (%s)", i, w[i].errors,
			      gpud_errmsg(c));
	}
	wait_no_buffers(c, E2E_SAFETY_S);
	gpud_close(c);
}
END_TEST

START_TEST(test_ring_off_in_gpud)
{
	gpud_client *c = lib_connect();
	round_trip(c, 2000, 0.75);
	ck_assert_uint_eq(gpud_ring_calls(c), 0);
	gpud_close(c);
}
END_TEST

static void setup_ring_off(void)
{
	start_gpud("[gpud]\nring = 0\n", NULL, NULL);
}

TCase *e2e_ring(void)
{
	TCase *tc = tcase_create("ring");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ring_by_hand);
	tcase_add_test(tc, test_ring_library);
	return tc;
}

TCase *e2e_ring_off(void)
{
	TCase *tc = tcase_create("ring_off");
	tcase_add_checked_fixture(tc, setup_ring_off, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ring_off_in_gpud);
	return tc;
}
