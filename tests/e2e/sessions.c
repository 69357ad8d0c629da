/*
 * tests/e2e/sessions.c — test case "sessions": what belongs to a connection
 * (buffers freed when it closes; host regions: shared memory for bulk bytes,
 * the region socket's refusals, files copied into and out of regions by
 * gpud) and one-round-trip calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/e2e/e2e.h"

/* --- host regions: shared memory for bulk bytes ------------------------------------------ */

static gpud_session_info *own_session(gpud_daemon_status *s, gpud_client *c)
{
	for (int i = 0; i < s->nsessions; i++)
		if (s->sessions[i].id == gpud_server(c)->connection)
			return &s->sessions[i];
	ck_abort_msg("status lists no session %u (this client)", gpud_server(c)->connection);
	return NULL;
}

START_TEST(test_host_regions_library)
{
	gpud_client *c = lib_connect();
	const size_t n = (3u << 20) / 8 + 5, bytes = n * sizeof(double);
	uint64_t shape = n, seed = 4242;

	ck_assert_msg(gpud_has_shm(c), "an ipc:// connection should be offered host regions");
	double *p = gpud_host_alloc(c, bytes), *q = gpud_host_alloc(c, bytes);
	ck_assert_msg(p && q, "gpud_host_alloc: %s", gpud_errmsg(c));
	ck_assert_msg(p[0] == 0 && p[n - 1] == 0, "fresh host memory is zero-filled");
	for (size_t i = 0; i < n; i++)
		p[i] = harness_rng_unit(&seed) * 2 - 1;

	/* alloc from a region, download into another: no bytes through the socket */
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &shape, p, &h));
	for (size_t i = 0; i < n; i++)
		q[i] = NAN;
	LIB_OK(c, gpud_download_range(c, h, 0, q, bytes));
	ck_assert_msg(memcmp(p, q, bytes) == 0, "region -> gpud -> region changed the bytes");

	/* ordinary memory: through the scratch region, at offsets */
	double *m = malloc(bytes), *back = malloc(bytes);
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(back);
	for (size_t i = 0; i < n; i++)
		m[i] = harness_rng_unit(&seed);
	LIB_OK(c, gpud_upload(c, h, 8, m + 1, bytes - 8));
	gpud_array whole;
	LIB_OK(c, gpud_download(c, h, &whole));
	ck_assert_uint_eq(whole.nbytes, bytes);
	ck_assert_msg(((double *)whole.data)[0] == p[0], "the first element was not written");
	ck_assert_msg(memcmp((double *)whole.data + 1, m + 1, bytes - 8) == 0,
		      "malloc'd memory -> gpud -> gpud_download changed the bytes");
	gpud_array_free(&whole);
	for (size_t i = 0; i < n; i++)
		back[i] = NAN;
	LIB_OK(c, gpud_download_range(c, h, 16, back, bytes - 16));
	ck_assert_msg(memcmp(back, m + 2, bytes - 16) == 0, "a ranged download changed the bytes");

	/* a .npy file bigger than SHM_MIN is read straight into a region */
	char path[700];
	path_in_dir(path, sizeof(path), "big.npy");
	save_npy(path, GPUD_F64, 1, &shape, m);
	gpud_handle hn;
	gpud_array meta;
	LIB_OK(c, gpud_alloc_npy(c, path, &hn, &meta));
	ck_assert_uint_eq(meta.shape[0], n);
	LIB_OK(c, gpud_download_range(c, hn, 0, q, bytes));
	ck_assert_msg(memcmp(q, m, bytes) == 0, "a .npy through a region changed the bytes");

	/* status: this connection's regions (two of ours + the scratch) and buffers */
	gpud_daemon_status st = lib_status(c);
	gpud_session_info *me = own_session(&st, c);
	ck_assert_uint_eq(me->buffers, 2);
	ck_assert_uint_eq(me->bytes, 2 * bytes);
	ck_assert_uint_eq(me->regions, 3);
	ck_assert_uint_ge(me->region_bytes, 2 * bytes);
	ck_assert_msg(strncmp(me->peer, "uid ", 4) == 0, "peer '%s' should be a uid", me->peer);

	LIB_OK(c, gpud_host_free(c, p));
	LIB_OK(c, gpud_host_free(c, q));
	LIB_FAIL(c, gpud_host_free(c, m), GPUD_EARG, "not from gpud_host_alloc");
	st = lib_status(c);
	ck_assert_uint_eq(own_session(&st, c)->regions, 1);
	LIB_OK(c, gpud_free(c, (gpud_handle[]){h, hn}, 2));
	unsigned id = gpud_server(c)->connection;
	gpud_close(c);

	/* The connection's regions and buffers went with it. */
	gpud_client *c2 = lib_connect();
	double deadline = harness_now_s() + E2E_SAFETY_S;
	int gone = 0;
	while (!gone && harness_now_s() < deadline) {
		st = lib_status(c2);
		gone = 1;
		for (int i = 0; i < st.nsessions; i++)
			if (st.sessions[i].id == id)
				gone = 0;
		if (!gone)
			harness_sleep_ms(10);
	}
	ck_assert_msg(gone, "session %u still listed after its client closed", id);
	ck_assert_uint_eq(st.buffers, 0);
	gpud_close(c2);
	free(m);
	free(back);
}
END_TEST

/* A memfd of size bytes, sealed with seals (0: none). */
static int make_memfd(size_t size, int seals)
{
	int fd = memfd_create("e2e", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	if (seals)
		ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

/* One registration on the region socket at path (fd < 0: no descriptor). */
static t_shm_reply shm_try(const char *path, const uint8_t *key, uint64_t size, int fd,
			   size_t msg_len)
{
	return shm_send(path, key, size, 0, &fd, fd >= 0 ? 1 : 0, msg_len);
}

#define SHM_EXPECT(rep, code, words)                                                               \
	do {                                                                                       \
		t_shm_reply r_ = (rep);                                                            \
		ck_assert_msg(r_.status == (code) && strstr(r_.message, (words)),                  \
			      "region socket: got %d '%s', expected %d mentioning '%s'",           \
			      r_.status, r_.message, (code), (words));                             \
	} while (0)

/* Upload request: handle, offset, from {region, offset}, length. */
static raw_reply raw_upload_from(nng_socket s, uint64_t handle, uint64_t region, uint64_t roff,
				 uint64_t length)
{
	pb up = {.n = 0}, ref = {.n = 0};
	pb_uint(&up, 1, handle);
	pb_uint(&ref, 1, region);
	pb_uint(&ref, 2, roff);
	pb_sub(&up, 3, &ref);
	pb_uint(&up, 4, length);
	return raw_body_on(s, 5, 12, &up, NULL, 0);
}

START_TEST(test_host_region_refusals)
{
	nng_socket a = raw_open(10000), b = raw_open(10000);
	char path[256], pathb[256];
	uint8_t key[16], keyb[16], bad[16];
	const size_t sz = 1 << 16;
	const int seal = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

	raw_hello(a, path, sizeof(path), key);
	raw_hello(b, pathb, sizeof(pathb), keyb);
	ck_assert_str_eq(path, pathb);
	ck_assert_msg(memcmp(key, keyb, 16) != 0, "two connections got the same key");
	memcpy(bad, key, 16);
	bad[5] ^= 0x40;

	int fd = make_memfd(sz, seal);
	SHM_EXPECT(shm_try(path, bad, sz, fd, sizeof(t_shm_register)), ST_NOT_FOUND,
		   "unknown session key");
	SHM_EXPECT(shm_try(path, key, sz, -1, sizeof(t_shm_register)), ST_INVALID_ARGUMENT,
		   "exactly one file descriptor");
	SHM_EXPECT(shm_try(path, key, sz, fd, 12), ST_PROTOCOL,
		   "expected one 40-byte registration message (or a 64-byte file copy), got 12 "
		   "bytes");
	/* A whole message of the right size with another magic: said so, in hex. */
	t_shm_register wrong = {.size = sz};
	memcpy(wrong.magic, "gpudshm2", 8);
	memcpy(wrong.key, key, 16);
	SHM_EXPECT(shm_send_bytes(path, &wrong, sizeof(wrong), &fd, 1), ST_PROTOCOL,
		   "bad magic 0x6770756473686d32, expected 0x6770756473686d31 (\"gpudshm1\")");
	char longer[sizeof(t_shm_register) + 8] = "gpudshm1";
	SHM_EXPECT(shm_send_bytes(path, longer, sizeof(longer), &fd, 1), ST_PROTOCOL,
		   "expected one 40-byte registration message (or a 64-byte file copy), got 48 "
		   "bytes");
	char longest[sizeof(t_shm_file_io) + 8] = "gpudshm1";
	SHM_EXPECT(shm_send_bytes(path, longest, sizeof(longest), &fd, 1), ST_PROTOCOL,
		   "got more than 64 bytes");
	int five[5] = {fd, fd, fd, fd, fd};
	t_shm_register right = wrong;
	memcpy(right.magic, "gpudshm1", 8);
	SHM_EXPECT(shm_send_bytes(path, &right, sizeof(right), five, 5), ST_PROTOCOL,
		   "at most 2 file descriptors, got more");
	SHM_EXPECT(shm_try(path, key, sz + 4096, fd, sizeof(t_shm_register)), ST_INVALID_ARGUMENT,
		   "does not match");
	int unsealed = make_memfd(sz, 0);
	SHM_EXPECT(shm_try(path, key, sz, unsealed, sizeof(t_shm_register)), ST_INVALID_ARGUMENT,
		   "F_SEAL_SHRINK");
	close(unsealed);
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	SHM_EXPECT(shm_try(path, key, sz, pfd[0], sizeof(t_shm_register)), ST_INVALID_ARGUMENT,
		   "memfd on tmpfs");
	close(pfd[0]);
	close(pfd[1]);

	/* A good one, for connection a. */
	t_shm_reply ok = shm_try(path, key, sz, fd, sizeof(t_shm_register));
	ck_assert_msg(ok.status == 0 && ok.region != 0, "registration: %d %s", ok.status,
		      ok.message);
	double *mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(mem, MAP_FAILED);
	close(fd);
	for (size_t i = 0; i < sz / 8; i++)
		mem[i] = (double)i * 0.5;

	uint64_t ha = raw_alloc_f64(a, 64), hb = raw_alloc_f64(b, 64);
	raw_reply r = raw_upload_from(a, ha, ok.region, 0, 64 * 8);
	ck_assert_msg(r.code == ST_OK, "upload from a's region: %s", r.message);
	r = raw_upload_from(a, ha, ok.region, sz - 8, 16);
	ck_assert_msg(r.code == ST_INVALID_ARGUMENT &&
			      strstr(r.message, "do not fit in host region"),
		      "an overrun of the region: %" PRIu64 " %s", r.code, r.message);
	/* b names a's region: the same answer as a region that never existed */
	r = raw_upload_from(b, hb, ok.region, 0, 64 * 8);
	ck_assert_msg(r.code == ST_NOT_FOUND && strstr(r.message, "unknown host region"),
		      "another connection's region: %" PRIu64 " %s", r.code, r.message);
	r = raw_upload_from(b, hb, ok.region ^ 1, 0, 8);
	ck_assert_msg(r.code == ST_NOT_FOUND && strstr(r.message, "unknown host region"),
		      "a made-up region: %" PRIu64 " %s", r.code, r.message);

	/* unmap; then the region is unknown to a as well */
	pb um = {.n = 0};
	pb_uint(&um, 1, ok.region);
	r = raw_body_on(a, 6, 19, &um, NULL, 0);
	ck_assert_msg(r.code == ST_OK, "unmap: %s", r.message);
	r = raw_upload_from(a, ha, ok.region, 0, 8);
	ck_assert_msg(r.code == ST_NOT_FOUND, "upload from an unmapped region: %s", r.message);
	munmap(mem, sz);
	nng_close(a);
	nng_close(b);
	assert_fresh_client_works("refused host regions");
}
END_TEST

/* A file copy (GPUD_SHM_READ 8, GPUD_SHM_WRITE 16) on the region socket at path. */
static t_shm_reply copy_try(const char *path, const uint8_t *key, uint32_t flags, uint64_t region,
			    uint64_t off, uint64_t len, uint64_t file_off, const int *fds, int nfds)
{
	t_shm_file_io m = {.flags = flags,
			   .region = region,
			   .offset = off,
			   .length = len,
			   .file_offset = file_off};
	memcpy(m.magic, "gpudshm1", 8);
	memcpy(m.key, key, 16);
	return shm_send_bytes(path, &m, sizeof(m), fds, nfds);
}

/* By hand on the region socket: gpud copies a file into a region and a region
 * into a file, for the region's connection only, within the region, from and
 * to a regular file open for it; every refusal says why, and gpud serves on. */
START_TEST(test_region_file_copies)
{
	enum { SZ = 1 << 16, N = 5000, FILE_BYTES = 20000 };
	const int seal = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	nng_socket a = raw_open(10000), b = raw_open(10000);
	char path[256], pathb[256], fpath[PATH_MAX];
	uint8_t key[16], keyb[16];
	raw_hello(a, path, sizeof(path), key);
	raw_hello(b, pathb, sizeof(pathb), keyb);
	int mfd = make_memfd(SZ, seal);
	t_shm_reply ok = shm_try(path, key, SZ, mfd, sizeof(t_shm_register));
	ck_assert_msg(ok.status == 0, "registration: %s", ok.message);
	unsigned char *mem = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ck_assert_ptr_ne(mem, MAP_FAILED);
	memset(mem, 0xEE, SZ);

	unsigned char want[FILE_BYTES], got[FILE_BYTES];
	srand48((long)(harness_now_s() * 1e6));
	for (int i = 0; i < FILE_BYTES; i++)
		want[i] = (unsigned char)(lrand48() >> 9);
	snprintf(fpath, sizeof(fpath), "%s/copy.bin", e2e_gpud.dir);
	int fd = open(fpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, want, FILE_BYTES), FILE_BYTES);

	/* in: N bytes from file byte 77 to region byte 100, nothing around touched */
	t_shm_reply r = copy_try(path, key, 8, ok.region, 100, N, 77, &fd, 1);
	ck_assert_msg(r.status == 0 && r.size == N, "copy in: %d %s (size %" PRIu64 ")", r.status,
		      r.message, r.size);
	ck_assert(memcmp(mem + 100, want + 77, N) == 0);
	ck_assert_uint_eq(mem[99], 0xEE);
	ck_assert_uint_eq(mem[100 + N], 0xEE);
	/* out: those bytes to file byte 9000 */
	r = copy_try(path, key, 16, ok.region, 100, N, 9000, &fd, 1);
	ck_assert_msg(r.status == 0 && r.size == N, "copy out: %d %s", r.status, r.message);
	ck_assert_int_eq(pread(fd, got, FILE_BYTES, 0), FILE_BYTES);
	ck_assert(memcmp(got + 9000, want + 77, N) == 0);
	ck_assert(memcmp(got, want, 9000) == 0);
	ck_assert(memcmp(got + 9000 + N, want + 9000 + N, FILE_BYTES - 9000 - N) == 0);

	/* another connection's key, a made-up key or region */
	SHM_EXPECT(copy_try(pathb, keyb, 8, ok.region, 0, N, 0, &fd, 1), ST_NOT_FOUND,
		   "unknown host region");
	uint8_t bad[16];
	memcpy(bad, key, 16);
	bad[3] ^= 1;
	SHM_EXPECT(copy_try(path, bad, 8, ok.region, 0, N, 0, &fd, 1), ST_NOT_FOUND,
		   "unknown session key");
	SHM_EXPECT(copy_try(path, key, 8, ok.region ^ 2, 0, N, 0, &fd, 1), ST_NOT_FOUND,
		   "unknown host region");
	/* the message itself */
	SHM_EXPECT(copy_try(path, key, 24, ok.region, 0, N, 0, &fd, 1), ST_INVALID_ARGUMENT,
		   "GPUD_SHM_READ (8) or GPUD_SHM_WRITE (16) alone");
	SHM_EXPECT(copy_try(path, key, 4, ok.region, 0, N, 0, &fd, 1), ST_INVALID_ARGUMENT,
		   "got flags 4");
	SHM_EXPECT(copy_try(path, key, 8, ok.region, 0, N, 0, NULL, 0), ST_INVALID_ARGUMENT,
		   "exactly one file descriptor (the file), got 0");
	int two[2] = {fd, fd};
	SHM_EXPECT(copy_try(path, key, 8, ok.region, 0, N, 0, two, 2), ST_INVALID_ARGUMENT,
		   "exactly one file descriptor (the file), got 2");
	SHM_EXPECT(copy_try(path, key, 8, ok.region, SZ - 10, 11, 0, &fd, 1), ST_INVALID_ARGUMENT,
		   "do not fit in host region");
	SHM_EXPECT(copy_try(path, key, 8, ok.region, 0, 0, 0, &fd, 1), ST_INVALID_ARGUMENT,
		   "(a length of 0)");
	SHM_EXPECT(copy_try(path, key, 8, ok.region, 0, N, UINT64_MAX - 5, &fd, 1),
		   ST_INVALID_ARGUMENT, "go past 2^63");
	/* the file: regular, open for the copy, not O_APPEND; one that ends first */
	int pp[2];
	ck_assert_int_eq(pipe(pp), 0);
	SHM_EXPECT(copy_try(path, key, 8, ok.region, 0, N, 0, &pp[0], 1), ST_INVALID_ARGUMENT,
		   "must be a regular file, got a pipe or FIFO");
	close(pp[0]);
	close(pp[1]);
	int wo = open(fpath, O_WRONLY | O_CLOEXEC), ro = open(fpath, O_RDONLY | O_CLOEXEC),
	    ap = open(fpath, O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert(wo >= 0 && ro >= 0 && ap >= 0);
	SHM_EXPECT(copy_try(path, key, 8, ok.region, 0, N, 0, &wo, 1), ST_INVALID_ARGUMENT,
		   "not open for reading");
	SHM_EXPECT(copy_try(path, key, 16, ok.region, 0, N, 0, &ro, 1), ST_INVALID_ARGUMENT,
		   "not open for writing");
	SHM_EXPECT(copy_try(path, key, 16, ok.region, 0, N, 0, &ap, 1), ST_INVALID_ARGUMENT,
		   "O_APPEND");
	t_shm_reply end = copy_try(path, key, 8, ok.region, 0, N, FILE_BYTES - 10, &ro, 1);
	SHM_EXPECT(end, ST_INVALID_ARGUMENT,
		   "the file ends at byte 20000: 10 of the 5000 bytes asked were there");
	ck_assert_uint_eq(end.size, 10);
	close(wo);
	close(ro);
	close(ap);
	close(fd);

	munmap(mem, SZ);
	close(mfd);
	nng_close(a);
	nng_close(b);
	assert_fresh_client_works("file copies on the region socket");
}
END_TEST

/* One job, one round trip: inputs with the request, outputs in the reply. */
static gpud_array vec_array(gpud_dtype dt, void *data, size_t n)
{
	gpud_array a;
	memset(&a, 0, sizeof(a));
	a.dtype = dt;
	a.ndim = 1;
	a.shape[0] = n;
	a.data = data;
	a.nbytes = n * gpud_dtype_size(dt);
	return a;
}

static int one_buffer(const gpud_daemon_status *s)
{
	return s->buffers == 1;
}

START_TEST(test_call_one_round_trip)
{
	const size_t nx = 37, nf = 300;
	double x[37], y[37], f[300], ref[300];
	gpud_client *c = lib_connect();

	for (int d = 0; d < 2; d++) {
		gpud_dtype dt = d ? GPUD_F32 : GPUD_F64;
		gen_ls(900 + (uint64_t)d, nx, nf, x, y, f);
		if (dt == GPUD_F32) {
			round_to_f32(x, nx);
			round_to_f32(y, nx);
			round_to_f32(f, nf);
		}
		ls_ref(x, y, nx, f, nf, 1, 1, ref);
		void *bx = to_dtype(x, nx, dt), *by = to_dtype(y, nx, dt),
		     *bf = to_dtype(f, nf, dt);
		gpud_array ax = vec_array(dt, bx, nx), ay = vec_array(dt, by, nx),
			   af = vec_array(dt, bf, nf);
		gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
				   gpud_arg_array("freqs", &af), gpud_arg_bool("precenter", 1),
				   gpud_arg_bool("normalize", 1)};
		gpud_daemon_status before = lib_status(c);
		uint64_t req0 = own_session(&before, c)->requests;
		gpud_result out[2];
		size_t nout = 0;
		LIB_OK(c, gpud_call(c, "lombscargle", args, 5, out, 2, &nout, NULL));
		gpud_daemon_status after = lib_status(c);
		/* the call was one request (the second status is the other) */
		ck_assert_uint_eq(own_session(&after, c)->requests - req0, 2);
		ck_assert_uint_eq(after.buffers, 0); /* nothing kept */
		ck_assert_uint_eq(nout, 1);
		ck_assert_str_eq(out[0].name, "pgram");
		ck_assert_int_eq(out[0].array.dtype, dt);
		ck_assert_uint_eq(out[0].array.shape[0], nf);
		assert_matches(out[0].array.data, dt, ref, nf, "gpud_call lombscargle");
		gpud_array_free(&out[0].array);
		free(bx);
		free(by);
		free(bf);
	}

	/* mixed: a kept buffer, an array from host memory shared with gpud, scalars */
	gen_ls(950, nx, nf, x, y, f);
	ls_ref(x, y, nx, f, nf, 0, 0, ref);
	uint64_t sf = nf;
	gpud_handle hf;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, f, &hf));
	double *shared = gpud_host_alloc(c, sizeof(y));
	ck_assert_msg(shared != NULL, "%s", gpud_errmsg(c));
	memcpy(shared, y, sizeof(y));
	gpud_array ax = vec_array(GPUD_F64, x, nx), ay = vec_array(GPUD_F64, shared, nx);
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_buffer("freqs", hf)};
	gpud_result out[1];
	size_t nout;
	LIB_OK(c, gpud_call(c, "lombscargle", args, 3, out, 1, &nout, NULL));
	assert_matches(out[0].array.data, GPUD_F64, ref, nf,
		       "gpud_call with a handle and a region");
	gpud_array_free(&out[0].array);
	gpud_daemon_status st = lib_status(c);
	ck_assert_uint_eq(st.buffers, 1); /* only freqs, which the client made */

	/* errors: each names the argument; nothing is left behind */
	gpud_array bad_y = vec_array(GPUD_F32, y, nx);
	gpud_arg mism[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &bad_y),
			   gpud_arg_buffer("freqs", hf)};
	LIB_FAIL(c, gpud_call(c, "lombscargle", mism, 3, out, 1, &nout, NULL), GPUD_EINVAL, "y");
	gpud_array pg = vec_array(GPUD_F64, f, nf);
	gpud_arg asout[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			    gpud_arg_buffer("freqs", hf), gpud_arg_array("pgram", &pg)};
	LIB_FAIL(c, gpud_call(c, "lombscargle", asout, 4, out, 1, &nout, NULL), GPUD_EINVAL,
		 "an output");
	gpud_arg in_run[] = {gpud_arg_array("x", &ax)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", in_run, 1, NULL, 0, NULL, NULL), GPUD_EARG,
		 "gpud_call");
	gpud_array liar = ax;
	liar.nbytes += 8;
	gpud_arg lies[] = {gpud_arg_array("x", &liar)};
	LIB_FAIL(c, gpud_call(c, "lombscargle", lies, 1, out, 1, &nout, NULL), GPUD_EARG,
		 "does not match");
	/* The failed calls' inline arrays are gone: freqs alone remains. */
	st = wait_status(c, one_buffer, E2E_SAFETY_S);
	ck_assert_uint_eq(st.buffers, 1);
	LIB_OK(c, gpud_free(c, &hf, 1));
	LIB_OK(c, gpud_host_free(c, shared));
	gpud_close(c);
}
END_TEST

START_TEST(test_call_raw_payload_mismatch)
{
	/* run lombscargle with x inline (f64, 4 elements) but 40 payload bytes */
	pb run = {.n = 0}, arg = {.n = 0}, ia = {.n = 0}, shape = {.n = 0};
	pb_key(&run, 1, 2);
	pb_varint(&run, 11);
	memcpy(run.b + run.n, "lombscargle", 11);
	run.n += 11;
	pb_key(&arg, 1, 2);
	pb_varint(&arg, 1);
	arg.b[arg.n++] = 'x';
	pb_uint(&ia, 1, 2);
	pb_varint(&shape, 4);
	pb_sub(&ia, 2, &shape);
	pb_sub(&arg, 4, &ia);
	pb_sub(&run, 2, &arg);
	pb_uint(&run, 3, 1);
	pb hdr = pb_request(WIRE_VERSION, 77, 15, &run);
	size_t len;
	char payload[40] = {0};
	uint8_t *m = frame(&hdr, payload, sizeof(payload), &len);
	raw_expect(m, len, ST_INVALID_ARGUMENT, "the inline arrays take 32",
		   "a run whose payload is longer than its inline arrays");
	free(m);
	m = frame(&hdr, payload, 16, &len);
	raw_expect(m, len, ST_INVALID_ARGUMENT, "needs 32 bytes", "a run with a short payload");
	free(m);
	gpud_client *c = lib_connect();
	gpud_daemon_status st = lib_status(c);
	ck_assert_uint_eq(st.buffers, 0);
	gpud_close(c);
}
END_TEST

/* --- buffers belong to their connection -------------------------------------------------- */

START_TEST(test_buffers_freed_on_close)
{
	gpud_client *a = lib_connect(), *b = lib_connect();
	double v[100];
	uint64_t n = 100;
	gpud_handle h[3];

	for (int i = 0; i < 100; i++)
		v[i] = i + 0.5;
	for (int i = 0; i < 3; i++)
		LIB_OK(a, gpud_alloc(a, GPUD_F64, 1, &n, v, &h[i]));
	gpud_daemon_status s = lib_status(b);
	ck_assert_uint_eq(s.buffers, 3);
	ck_assert_uint_eq(s.bytes_in_use, 3 * 800);
	ck_assert_uint_ge(s.connections, 2);

	/* Buffers belong to their connection: A goes away without freeing. */
	gpud_close(a);
	s = wait_no_buffers(b, E2E_SAFETY_S);
	ck_assert_msg(s.buffers == 0 && s.bytes_in_use == 0,
		      "after client A closed: %" PRIu64 " buffers, %" PRIu64 " bytes in use",
		      s.buffers, s.bytes_in_use);
	ck_assert_uint_ge(s.bytes_high_water, 2400);
	double back;
	LIB_FAIL(b, gpud_download_range(b, h[0], 0, &back, 8), GPUD_ENOTFOUND, "unknown handle");
	gpud_close(b);
}
END_TEST

TCase *e2e_sessions(void)
{
	TCase *tc = tcase_create("sessions");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_buffers_freed_on_close);
	tcase_add_test(tc, test_host_regions_library);
	tcase_add_test(tc, test_host_region_refusals);
	tcase_add_test(tc, test_region_file_copies);
	tcase_add_test(tc, test_call_one_round_trip);
	tcase_add_test(tc, test_call_raw_payload_mismatch);
	return tc;
}
