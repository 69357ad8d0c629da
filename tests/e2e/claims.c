/*
 * tests/e2e/claims.c — test cases "claims" and "claims expiry": host memory
 * lent before hello (proto/shm.h GPUD_SHM_CLAIM, daemon/claims.h) and the
 * hello that claims it (HelloRequest.claim), carried by a connection's first
 * request (Request.carried_hello).
 *
 * By hand on the region socket and raw connections: a lend before hello is
 * refused with reasons (a zero nonce, without GPUD_SHM_LEND, 0 bytes, over
 * the limit, a fifth one parked for the tenant, a uid that never said
 * hello); a parked region is nobody's (another connection cannot unmap it);
 * a hello with a malformed claim, another nonce, or from another process
 * (this program run again) claims nothing and says so; the same process's
 * hello with the nonce claims all of them, and they are that connection's
 * alone. Through the library and gpuctl: on a connection whose dial goes on
 * behind (gpud_connect_start) gpud_host_alloc is lent before hello (where
 * nothing listens, the dial's failure comes at gpud_connect_wait and every
 * call), a 4 MiB file is read into it by
 * gpud (named by the nonce), and gpud_call_to, its first call, carries the
 * hello: the outputs in that memory equal a connected client's, counted on
 * /metrics; gpuctl run does the same, byte-identical to GPUD_NO_CLAIM=1.
 * With lend_claim_s = 1, a region nobody claims is given back, and its
 * nonce then claims nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

#define UNIT (4u << 20)
#define SHM_LEND 4u   /* proto/shm.h, restated */
#define SHM_CLAIM 32u /* GPUD_SHM_CLAIM */
#define SHM_READ 8u
#define ST_QUOTA 11
#define WAIT_S 60.0 /* a deadline for failures only: the waits end on the event */

static void setup_claims(void)
{
	start_gpud("[gpud]\nsocket_mode = 0666\nlend_unit = 4MiB\nlend_spare = 8MiB\n"
		   "lend_keep = 64MiB\nshm_max_bytes = 64MiB\nmetrics_listen = 127.0.0.1:0\n",
		   NULL, NULL);
	e2e_find_metrics_addr();
}

static void setup_claims_expiry(void)
{
	start_gpud("[gpud]\nsocket_mode = 0666\nlend_unit = 4MiB\nlend_spare = 8MiB\n"
		   "lend_claim_s = 1\nmetrics_listen = 127.0.0.1:0\n",
		   NULL, NULL);
	e2e_find_metrics_addr();
}

/* A sample of /metrics now (-1 where it is not there). */
static double metric(const char *series)
{
	static char page[1 << 18];
	ck_assert_int_eq(e2e_http_get("/metrics", page, sizeof(page)), 200);
	return e2e_sample(page, series);
}

#define CLAIMED "gpud_host_lends_before_hello_total{outcome=\"claimed\"}"
#define EXPIRED "gpud_host_lends_before_hello_total{outcome=\"expired\"}"
#define PARKED "gpud_host_lends_parked"

static void random_nonce(uint8_t n[16])
{
	ck_assert_int_eq(getrandom(n, 16, 0), 16);
	n[0] |= 1; /* never all zero */
}

/* A hello body (field 10 of Request) with a claim of len bytes of nonce. */
static pb hello_claiming(const uint8_t *nonce, size_t len)
{
	pb h = {.n = 0};
	pb_key(&h, 4, 2);
	pb_varint(&h, len);
	memcpy(h.b + h.n, nonce, len);
	h.n += len;
	return h;
}

/* HelloResponse.claimed of a hello reply (0 where absent). */
static uint64_t claimed_of(const raw_reply *r)
{
	uint64_t v = 0;
	if (pb_find(r->body, r->body_len, 12, NULL, NULL, &v) != 0)
		return 0;
	return v;
}

/*
 * A raw connection of this process that said hello, so gpud knows the
 * tenant of this uid: *s, the region socket's path, a fresh nonce. 0 where
 * gpud offers no region socket (*s closed then).
 */
static int said_hello(nng_socket *s, char path[108], uint8_t nonce[16])
{
	uint8_t key[16];
	*s = raw_open(30000);
	raw_hello(*s, path, 108, key);
	if (path[0] == '\0') {
		nng_close(*s);
		return 0;
	}
	random_nonce(nonce);
	return 1;
}

static raw_reply unmap_on(nng_socket s, uint64_t region)
{
	pb u = {.n = 0};
	pb_uint(&u, 1, region);
	return raw_body_on(s, 5, 19, &u, NULL, 0);
}

START_TEST(test_claim_by_hand)
{
	char path[108];
	uint8_t nonce[16], other[16], zero[16] = {0};
	uint64_t ids[4];
	nng_socket s0;

	if (!said_hello(&s0, path, nonce))
		return;
	random_nonce(other);

	t_shm_reply r = shm_send(path, zero, 4096, SHM_LEND | SHM_CLAIM, NULL, 0,
				 sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_INVALID_ARGUMENT && strstr(r.message, "got zeros"), "%d %s",
		      r.status, r.message);
	r = shm_send(path, nonce, 4096, SHM_CLAIM, NULL, 0, sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_INVALID_ARGUMENT &&
			      strstr(r.message, "GPUD_SHM_CLAIM goes with GPUD_SHM_LEND"),
		      "%d %s", r.status, r.message);
	r = shm_send(path, nonce, 0, SHM_LEND | SHM_CLAIM, NULL, 0, sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_INVALID_ARGUMENT && strstr(r.message, "a lend of 0 bytes"),
		      "%d %s", r.status, r.message);
	r = shm_send(path, nonce, 1ull << 30, SHM_LEND | SHM_CLAIM, NULL, 0,
		     sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_TOO_LARGE && strstr(r.message, "shm_max_bytes"), "%d %s",
		      r.status, r.message);

	/* four parked for the tenant, the fifth refused */
	for (int i = 0; i < 4; i++) {
		r = shm_send(path, nonce, 4096, SHM_LEND | SHM_CLAIM, NULL, 0,
			     sizeof(t_shm_register));
		ck_assert_msg(r.status == ST_OK && r.region != 0 && r.size == UNIT,
			      "lend %d: %d %s", i, r.status, r.message);
		ids[i] = r.region;
	}
	r = shm_send(path, other, 4096, SHM_LEND | SHM_CLAIM, NULL, 0, sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_QUOTA && strstr(r.message, "the most it may have"), "%d %s",
		      r.status, r.message);
	ck_assert_int_eq((int)metric(PARKED), 4);

	/* parked: no connection's, not even one of this process that said hello */
	raw_reply rr = unmap_on(s0, ids[0]);
	ck_assert_msg(rr.code == ST_NOT_FOUND && strstr(rr.message, "unknown host region"),
		      "%" PRIu64 " %s", rr.code, rr.message);

	/* a fresh connection: a malformed claim, another nonce, another process */
	nng_socket s1 = raw_open(30000);
	pb h = hello_claiming(nonce, 5);
	rr = raw_body_on(s1, 1, 10, &h, NULL, 0);
	ck_assert_msg(rr.code == ST_INVALID_ARGUMENT && strstr(rr.message, "16-byte nonce"),
		      "%" PRIu64 " %s", rr.code, rr.message);
	h = hello_claiming(other, 16);
	rr = raw_body_on(s1, 2, 10, &h, NULL, 0);
	ck_assert_msg(rr.code == ST_NOT_FOUND && strstr(rr.message, "no memory lent before hello"),
		      "%" PRIu64 " %s", rr.code, rr.message);
	h = hello_claiming(nonce, 16);
	pb hdr = pb_request(1, 3, 10, &h);
	size_t len;
	uint8_t *msg = frame(&hdr, NULL, 0, &len);
	ck_assert_int_eq(raw_call_isolated(msg, len, 30000, &rr), 0);
	free(msg);
	ck_assert_msg(rr.code == ST_NOT_FOUND && strstr(rr.message, "to this process"),
		      "another process claimed: %" PRIu64 " %s", rr.code, rr.message);
	ck_assert_int_eq((int)metric(PARKED), 4);

	/* this process, the nonce: all four are s1's, and s1's alone */
	rr = raw_body_on(s1, 4, 10, &h, NULL, 0);
	ck_assert_msg(rr.code == ST_OK, "%" PRIu64 " %s", rr.code, rr.message);
	ck_assert_uint_eq(claimed_of(&rr), 4);
	ck_assert_int_eq((int)metric(PARKED), 0);
	ck_assert_int_eq((int)metric(CLAIMED), 4);
	rr = unmap_on(s0, ids[1]);
	ck_assert_msg(rr.code == ST_NOT_FOUND, "%" PRIu64 " %s", rr.code, rr.message);
	for (int i = 0; i < 4; i++) {
		rr = unmap_on(s1, ids[i]);
		ck_assert_msg(rr.code == ST_OK, "unmap %d: %" PRIu64 " %s", i, rr.code, rr.message);
	}
	/* claimed once: the nonce finds nothing again */
	rr = raw_body_on(s1, 6, 10, &h, NULL, 0);
	ck_assert_msg(rr.code == ST_NOT_FOUND, "%" PRIu64 " %s", rr.code, rr.message);
	nng_close(s1);
	nng_close(s0);
	assert_daemon_alive("claims by hand");
}
END_TEST

/* A lend before hello sent on a region connection of its own, its reply not
 * read yet (shm_reply_of): the connection. */
static int lend_sent(const char *path, const uint8_t *nonce, uint64_t size)
{
	t_shm_register m = {.size = size, .flags = SHM_LEND | SHM_CLAIM};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(m.magic, "gpudshm1", 8);
	memcpy(m.key, nonce, 16);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(send(s, &m, sizeof(m), MSG_NOSIGNAL), (ssize_t)sizeof(m));
	return s;
}

static t_shm_reply shm_reply_of(int s)
{
	t_shm_reply r;
	struct timeval tv = {.tv_sec = 60};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (recv(s, &r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r.status = -1;
	close(s);
	r.message[sizeof(r.message) - 1] = '\0';
	return r;
}

/*
 * The tenant's limit holds for lends made to order too (bigger than a
 * spare, made on a worker): with 3 parked, two such lends at once park one
 * and refuse the other, whichever order their memory is made in.
 */
START_TEST(test_claim_limit_made_to_order)
{
	char path[108];
	uint8_t nonce[16];
	nng_socket s0;
	if (!said_hello(&s0, path, nonce))
		return;
	for (int i = 0; i < 3; i++) {
		t_shm_reply r = shm_send(path, nonce, 4096, SHM_LEND | SHM_CLAIM, NULL, 0,
					 sizeof(t_shm_register));
		ck_assert_msg(r.status == ST_OK, "lend %d: %d %s", i, r.status, r.message);
	}
	int a = lend_sent(path, nonce, 2 * UNIT), b = lend_sent(path, nonce, 2 * UNIT);
	t_shm_reply ra = shm_reply_of(a), rb = shm_reply_of(b);
	int ok = (ra.status == ST_OK) + (rb.status == ST_OK);
	const t_shm_reply *refused = ra.status == ST_OK ? &rb : &ra;
	ck_assert_msg(ok == 1 && refused->status == ST_QUOTA &&
			      strstr(refused->message, "the most it may have"),
		      "%d %s / %d %s", ra.status, ra.message, rb.status, rb.message);
	ck_assert_int_eq((int)metric(PARKED), 4);
	/* all four claimed by this process's hello: none left parked */
	nng_socket s1 = raw_open(30000);
	pb h = hello_claiming(nonce, 16);
	raw_reply rr = raw_body_on(s1, 1, 10, &h, NULL, 0);
	ck_assert_msg(rr.code == ST_OK, "%" PRIu64 " %s", rr.code, rr.message);
	ck_assert_uint_eq(claimed_of(&rr), 4);
	ck_assert_int_eq((int)metric(PARKED), 0);
	nng_close(s1);
	nng_close(s0);
	assert_daemon_alive("lends before hello made to order at the limit");
}
END_TEST

/*
 * main() with --claim-uid UID PATH: as uid UID, one lend before hello on the
 * region socket at PATH; prints the reply's status and message. A program of
 * its own, not a fork of the test: under valgrind a fork's exit reports what
 * the test's nng was still freeing.
 */
int claim_uid_main(long uid, const char *path)
{
	t_shm_register m = {.size = 4096, .flags = SHM_LEND | SHM_CLAIM};
	t_shm_reply r = {.status = -1};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0) {
		printf("-1 setuid %ld: %s\n", uid, strerror(errno));
		return 1;
	}
	/* by hand: check's assertions report to a test, and this is none */
	memcpy(m.magic, "gpudshm1", 8);
	if (getrandom(m.key, sizeof(m.key), 0) != (ssize_t)sizeof(m.key))
		return 1;
	m.key[0] |= 1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    send(s, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m) ||
	    recv(s, &r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		printf("-1 region socket %s: %s\n", path, strerror(errno));
		return 1;
	}
	r.message[sizeof(r.message) - 1] = '\0';
	printf("%d %s\n", r.status, r.message);
	return 0;
}

START_TEST(test_claim_uid_without_tenant)
{
	char path[108], cmd[PATH_MAX + 200], line[600] = "";
	uint8_t nonce[16];
	nng_socket s0;
	if (getuid() != 0) {
		printf("a lend before hello to a uid without a tenant: skipped (needs root)\n");
		return;
	}
	if (!said_hello(&s0, path, nonce))
		return;
	nng_close(s0);
	/* uid 65534 never said hello: no tenant to lend to before it */
	snprintf(cmd, sizeof(cmd), "%s --claim-uid 65534 %s", self_path, path);
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(fgets(line, sizeof(line), f) != NULL, "the uid-65534 lend said nothing");
	int rc = pclose(f);
	ck_assert_msg(rc == 0, "the uid-65534 lend: status %d: %s", rc, line);
	int status = -2;
	ck_assert_msg(sscanf(line, "%d", &status) == 1 && status == ST_NOT_FOUND &&
			      strstr(line, "no tenant for uid 65534"),
		      "uid 65534's lend: %s", line);
	ck_assert_int_eq((int)metric(PARKED), 0);
	assert_daemon_alive("a lend before hello of a uid without a tenant");
}
END_TEST

/* A file of n random bytes at path (into keep): its descriptor. */
static int random_file(const char *path, unsigned char *keep, size_t n)
{
	for (size_t i = 0; i < n; i += 256)
		ck_assert_int_eq(getrandom(keep + i, n - i < 256 ? n - i : 256, 0),
				 (ssize_t)(n - i < 256 ? n - i : 256));
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, keep, n), (ssize_t)n);
	return fd;
}

START_TEST(test_claim_call_and_run)
{
	enum { NX = 200, NF = 4096, FILE_BYTES = (4 << 20) + 4096 };
	static double x[NX], y[NX], f[NF];
	char file[PATH_MAX];

	gpud_client *first = lib_connect(); /* this uid's tenant, known to gpud */
	if (!gpud_has_shm(first)) {
		gpud_close(first);
		return;
	}
	gen_ls(20261129, NX, NF, x, y, f);

	/* a connection whose dial goes on behind: memory lent before hello */
	gpud_options o = {.url = e2e_gpud.url, .timeout_ms = 60000};
	gpud_client *c;
	LIB_OK(c, gpud_connect_start(&o, &c));
	ck_assert(gpud_has_shm(c));
	size_t in = (2 * NX + NF) * sizeof(double), out_at = FILE_BYTES + 4096;
	unsigned char *mem = gpud_host_alloc(c, out_at + NF * sizeof(double) + 4096);
	ck_assert_msg(mem != NULL, "gpud_host_alloc: %s", gpud_errmsg(c));
	ck_assert_int_eq((int)metric(PARKED), 1);
	ck_assert_str_eq(gpud_server(c)->tenant, ""); /* no hello yet */

	/* a 4 MiB file read into it by gpud, the region named by the nonce */
	static unsigned char want[FILE_BYTES];
	path_in_dir(file, sizeof(file), "claim.bin");
	int fd = random_file(file, want, FILE_BYTES);
	double before = metric("gpud_host_file_copy_bytes_total{direction=\"in\"}");
	memset(mem, 0xEE, FILE_BYTES); /* poisoned */
	LIB_OK(c, gpud_host_read(c, mem, fd, 0, FILE_BYTES));
	ck_assert_int_eq(memcmp(mem, want, FILE_BYTES), 0);
	ck_assert_double_eq(metric("gpud_host_file_copy_bytes_total{direction=\"in\"}") - before,
			    (double)FILE_BYTES);
	close(fd);

	LIB_OK(c, gpud_connect_wait(c));
	ck_assert_str_eq(gpud_server(c)->tenant, ""); /* dialed, still no hello */
	/* the inputs in it; the call carries the hello, the outputs land in it */
	double *xin = (double *)(void *)mem, *yin = xin + NX, *fin = yin + NX;
	memcpy(xin, x, sizeof(x));
	memcpy(yin, y, sizeof(y));
	memcpy(fin, f, sizeof(f));
	ck_assert_uint_le(in, FILE_BYTES);
	uint64_t sx = NX, sf = NF;
	gpud_array ax = {.dtype = GPUD_F64, .ndim = 1, .data = xin, .nbytes = sizeof(x)};
	gpud_array ay = ax, af = {.dtype = GPUD_F64, .ndim = 1, .data = fin, .nbytes = sizeof(f)};
	ax.shape[0] = ay.shape[0] = sx;
	ay.data = yin;
	af.shape[0] = sf;
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_array("freqs", &af)};
	memset(mem + out_at, 0xEE, NF * sizeof(double));
	gpud_result res[2];
	size_t n = 0;
	int in_dst = 0;
	LIB_OK(c, gpud_call_to(c, "lombscargle", args, 3, mem + out_at, NF * sizeof(double) + 4096,
			       res, 2, &n, NULL, &in_dst));
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(in_dst, 1);
	ck_assert_ptr_eq(res[0].array.data, mem + out_at);
	ck_assert_str_eq(gpud_server(c)->tenant, gpud_server(first)->tenant);
	ck_assert_int_eq((int)metric(PARKED), 0);
	ck_assert_int_eq((int)metric(CLAIMED), 1);

	/* the same call on a connected client, from its own memory */
	gpud_arg args2[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			    gpud_arg_array("freqs", &af)};
	gpud_result ref[2];
	size_t n2 = 0;
	LIB_OK(first, gpud_call(first, "lombscargle", args2, 3, ref, 2, &n2, NULL));
	ck_assert_uint_eq(n2, 1);
	ck_assert_uint_eq(ref[0].array.nbytes, NF * sizeof(double));
	ck_assert_int_eq(memcmp(ref[0].array.data, mem + out_at, NF * sizeof(double)), 0);
	gpud_array_free(&ref[0].array);

	/* the claimed memory is the session's: freed as any */
	LIB_OK(c, gpud_host_free(c, mem));
	gpud_close(c);
	gpud_close(first);

	/* gpuctl run: lent before hello, byte-identical to a run that says hello first */
	char px[700], py[700], pf[700], xa[720], ya[720], fa[720], o1[PATH_MAX], o2[PATH_MAX];
	save_ls_inputs("claim", x, y, NX, f, NF, px, py, pf);
	snprintf(xa, sizeof(xa), "x=%s", px);
	snprintf(ya, sizeof(ya), "y=%s", py);
	snprintf(fa, sizeof(fa), "freqs=%s", pf);
	path_in_dir(o1, sizeof(o1), "claim_out1.npy");
	path_in_dir(o2, sizeof(o2), "claim_out2.npy");
	double claimed = metric(CLAIMED);
	ctl_result *cr = CTL("run", "lombscargle", xa, ya, fa, "-o", o1);
	assert_ctl_ok(cr);
	ck_assert_double_eq(metric(CLAIMED), claimed + 1);
	setenv("GPUD_NO_CLAIM", "1", 1);
	cr = CTL("run", "lombscargle", xa, ya, fa, "-o", o2);
	unsetenv("GPUD_NO_CLAIM");
	assert_ctl_ok(cr);
	ck_assert_double_eq(metric(CLAIMED), claimed + 1);
	char cmd[2 * PATH_MAX + 20];
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", o1, o2);
	ck_assert_msg(system(cmd) == 0, "gpuctl run's output differs with GPUD_NO_CLAIM=1");
	assert_daemon_alive("claims through the library and gpuctl");
}
END_TEST

/* gpud_connect_start where nothing listens: the dial's failure comes at
 * gpud_connect_wait and every call after, as gpud_connect_deferred's would. */
START_TEST(test_connect_start_refused)
{
	char url[PATH_MAX + 16], path[PATH_MAX];
	path_in_dir(path, sizeof(path), "nobody.sock");
	snprintf(url, sizeof(url), "ipc://%s", path);
	gpud_options o = {.url = url};
	gpud_client *c;
	ck_assert_int_eq(gpud_connect_start(&o, &c), GPUD_OK);
	ck_assert_ptr_null(gpud_host_alloc(c, 4096)); /* no region socket, then the dial's error */
	ck_assert_msg(strstr(gpud_errmsg(c), "cannot connect to gpud at"), "%s", gpud_errmsg(c));
	ck_assert_int_eq(gpud_connect_wait(c), GPUD_ECONNECT);
	ck_assert_msg(strstr(gpud_errmsg(c), "cannot connect to gpud at") &&
			      strstr(gpud_errmsg(c), path),
		      "%s", gpud_errmsg(c));
	gpud_daemon_status s;
	ck_assert_int_eq(gpud_status_get(c, &s), GPUD_ECONNECT);
	ck_assert_msg(strstr(gpud_errmsg(c), "cannot connect to gpud at"), "%s", gpud_errmsg(c));
	gpud_close(c);
	/* the test's gpud, at another socket, serves on */
	assert_daemon_alive("a dial behind that failed");
}
END_TEST

START_TEST(test_claim_expires)
{
	char path[108];
	uint8_t nonce[16];
	nng_socket s0;
	if (!said_hello(&s0, path, nonce))
		return;
	gpud_client *c = lib_connect();
	double lent0 = (double)lib_status(c).lend_lent_bytes;
	t_shm_reply r = shm_send(path, nonce, 4096, SHM_LEND | SHM_CLAIM, NULL, 0,
				 sizeof(t_shm_register));
	ck_assert_msg(r.status == ST_OK, "%d %s", r.status, r.message);
	/* lend_claim_s = 1: given back by gpud's timer; waited for on /metrics */
	double t0 = harness_now_s();
	while (metric(EXPIRED) < 1) {
		ck_assert_msg(harness_now_s() - t0 < WAIT_S, "not given back within %g s", WAIT_S);
		usleep(20000);
	}
	ck_assert_int_eq((int)metric(PARKED), 0);
	ck_assert_double_eq((double)lib_status(c).lend_lent_bytes, lent0);
	nng_socket s1 = raw_open(30000);
	pb h = hello_claiming(nonce, 16);
	raw_reply rr = raw_body_on(s1, 1, 10, &h, NULL, 0);
	ck_assert_msg(rr.code == ST_NOT_FOUND && strstr(rr.message, "given back 1 s after"),
		      "%" PRIu64 " %s", rr.code, rr.message);
	nng_close(s1);
	nng_close(s0);
	gpud_close(c);
	assert_daemon_alive("a claim given back");
}
END_TEST

TCase *e2e_claims(void)
{
	TCase *tc = tcase_create("claims");
	tcase_add_checked_fixture(tc, setup_claims, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_claim_by_hand);
	tcase_add_test(tc, test_claim_uid_without_tenant);
	tcase_add_test(tc, test_claim_limit_made_to_order);
	tcase_add_test(tc, test_claim_call_and_run);
	tcase_add_test(tc, test_connect_start_refused);
	return tc;
}

TCase *e2e_claims_expiry(void)
{
	TCase *tc = tcase_create("claims expiry");
	tcase_add_checked_fixture(tc, setup_claims_expiry, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_claim_expires);
	return tc;
}
