/*
 * tests/e2e/limits.c — test case "limits": a gpud with --max-message-size
 * 64KiB; the library and gpuctl move bigger arrays in pieces, and oversized
 * or junk messages are refused or dropped without harm. Test case
 * "message_quota": a tenant's message_size quota of 64 KiB (gpud's limit
 * 256 MiB), which hello sends: uploads are split to fit it as well.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpud/npy.h>

#include "tests/e2e/e2e.h"

static void setup_small_messages(void)
{
	static const char *const extra[] = {"--max-message-size", "64KiB", NULL};
	start_gpud(NULL, extra, NULL);
}

START_TEST(test_message_size_limit)
{
	gpud_client *c = lib_connect();
	const size_t big = 1u << 20;
	uint64_t n = big / sizeof(double);
	double *data = calloc(n, sizeof(double));
	gpud_handle h;
	uint8_t *m;
	size_t len;

	ck_assert_ptr_nonnull(data);
	ck_assert_uint_eq(gpud_server(c)->max_message_size, 65536);
	/* Over the limit: the library sends and fetches it in message-sized pieces. */
	for (uint64_t i = 0; i < n; i++)
		data[i] = (double)i * 0.5 + 1.0;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, data, &h));
	gpud_array back;
	LIB_OK(c, gpud_download(c, h, &back));
	ck_assert_uint_eq(back.nbytes, big);
	ck_assert_msg(memcmp(back.data, data, big) == 0,
		      "1 MiB round trip in 64 KiB pieces differs");
	gpud_array_free(&back);
	LIB_OK(c, gpud_free(c, &h, 1));
	/* Up to the limit is fine. */
	uint64_t ok_n = 65536 / sizeof(double);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &ok_n, data, &h));
	LIB_OK(c, gpud_free(c, &h, 1));

	/* 1 MiB of junk on a plain REQ socket: far over the limit, nng drops the connection. */
	uint8_t *junk = malloc(2 * big);
	uint64_t seed = 31337;
	ck_assert_ptr_nonnull(junk);
	for (size_t i = 0; i < 2 * big; i++)
		junk[i] = (uint8_t)(harness_rng_next(&seed) | 0x80);
	raw_reply r;
	int rv = raw_call_isolated(junk, big, 1500, &r);
	ck_assert_msg(rv != 0,
		      "1 MiB of junk to a daemon limited to 64 KiB was answered (code %" PRIu64
		      " '%s'); expected a dropped connection",
		      r.code, r.message);
	assert_fresh_client_works("1 MiB of junk");
	rv = raw_call_isolated(junk, 2 * big, 1500, &r);
	ck_assert_msg(rv != 0, "2 MiB of junk was answered (code %" PRIu64 " '%s')", r.code,
		      r.message);
	assert_fresh_client_works("2 MiB of junk");

	/*
	 * Well-formed allocs from a client that does not check the limit itself:
	 * 1 MiB of payload is refused (TOO_LARGE or a drop), and a payload just
	 * over the limit (65544 bytes) gets TOO_LARGE naming both sizes. Neither
	 * is stored.
	 */
	pb alloc = {.n = 0}, shape = {.n = 0}, hdr;
	pb_uint(&alloc, 1, 2); /* DTYPE_F64 */
	pb_varint(&shape, n);
	pb_sub(&alloc, 2, &shape);
	pb_uint(&alloc, 3, 1); /* with_data */
	hdr = pb_request(WIRE_VERSION, 1, 11, &alloc);
	m = frame(&hdr, data, big, &len);
	rv = raw_call_isolated(m, len, 3000, &r);
	free(m);
	ck_assert_msg(rv != 0 || r.code == ST_TOO_LARGE,
		      "an alloc with a %zu-byte payload on a daemon limited to 65536 bytes was "
		      "answered with code %" PRIu64 " ('%s'), expected TOO_LARGE (%d) or a drop",
		      big, r.code, r.message, ST_TOO_LARGE);
	assert_fresh_client_works("an alloc of 1 MiB");

	pb alloc2 = {.n = 0}, shape2 = {.n = 0};
	pb_uint(&alloc2, 1, 2);
	pb_varint(&shape2, 8193); /* 65544 bytes */
	pb_sub(&alloc2, 2, &shape2);
	pb_uint(&alloc2, 3, 1);
	hdr = pb_request(WIRE_VERSION, 2, 11, &alloc2);
	m = frame(&hdr, data, 8193 * sizeof(double), &len);
	rv = raw_call_isolated(m, len, 3000, &r);
	free(m);
	ck_assert_msg(rv == 0, "an alloc 8 bytes over the limit got no reply: %s",
		      nng_strerror(rv));
	ck_assert_msg(r.code == ST_TOO_LARGE,
		      "an alloc 8 bytes over the limit: code %" PRIu64 " ('%s')", r.code,
		      r.message);
	ck_assert_msg(strstr(r.message, "65544") && strstr(r.message, "65536"),
		      "the message should name 65544 and 65536: '%s'", r.message);
	assert_fresh_client_works("an oversized alloc");

	/* The first client's connection was never disturbed. */
	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0);
	free(junk);
	free(data);
	gpud_close(c);
}
END_TEST

START_TEST(test_download_in_ranges)
{
	/* An output bigger than one message: fetched in pieces, whole or by range. */
	const size_t nx = 20, nf = 16384; /* 128 KiB of float64 */
	double x[20], y[20], *f = malloc(nf * sizeof(double)), *ref = malloc(nf * sizeof(double));
	double *got = malloc(nf * sizeof(double));
	gpud_client *c = lib_connect();
	uint64_t sx = nx, sf = nf;
	gpud_handle h[4];

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(ref);
	ck_assert_ptr_nonnull(got);
	gen_ls(2718, nx, nf, x, y, f);
	ls_ref(x, y, nx, f, nf, 0, 1, ref);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, x, &h[0]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, y, &h[1]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, NULL, &h[2]));
	LIB_OK(c, gpud_upload(c, h[2], 0, f, 65536));
	LIB_OK(c, gpud_upload(c, h[2], 65536, (char *)f + 65536, nf * sizeof(double) - 65536));
	gpud_arg args[4] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			    gpud_arg_buffer("freqs", h[2]), gpud_arg_bool("normalize", 1)};
	gpud_output o;
	size_t no;
	LIB_OK(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL));
	h[3] = o.handle;
	gpud_array a;
	LIB_OK(c, gpud_download(c, o.handle, &a));
	ck_assert_uint_eq(a.nbytes, nf * sizeof(double));
	assert_matches(a.data, GPUD_F64, ref, nf, "lombscargle downloaded whole, in pieces");
	gpud_array_free(&a);
	memset(got, 0, nf * sizeof(double));
	LIB_OK(c, gpud_download_range(c, o.handle, 0, got, 65536));
	LIB_OK(c, gpud_download_range(c, o.handle, 65536, (char *)got + 65536,
				      nf * sizeof(double) - 65536));
	assert_matches(got, GPUD_F64, ref, nf, "lombscargle downloaded in two ranges");
	LIB_OK(c, gpud_free(c, h, 4));
	gpud_close(c);
	free(f);
	free(ref);
	free(got);
}
END_TEST

/* gpuctl with files larger than one message: read, uploaded and written in pieces. */
START_TEST(test_gpuctl_over_message_limit)
{
	const size_t nx = 50, nf = 20000; /* 160 KiB of float64 freqs and pgram, limit 64 KiB */
	double x[50], y[50], *f = malloc(nf * sizeof(double)), *ref = malloc(nf * sizeof(double));
	char px[700], py[700], pf[700], po[700], ax[720], ay[720], afr[720], err[512];

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(ref);
	gen_ls(4242, nx, nf, x, y, f);
	ls_ref(x, y, nx, f, nf, 1, 0, ref);
	save_ls_inputs("b", x, y, nx, f, nf, px, py, pf);
	path_in_dir(po, sizeof(po), "bo.npy");
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(afr, sizeof(afr), "freqs=%s", pf);
	ctl_result *r = CTL("run", "lombscargle", ax, ay, afr, "precenter=true", "-o", po);
	assert_ctl_ok(r);
	gpud_array a;
	ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(a.shape[0], nf);
	assert_matches(a.data, GPUD_F64, ref, nf, "gpuctl run over the message limit");
	gpud_array_free(&a);
	free(f);
	free(ref);
}
END_TEST

/* --- the tenant's message_size quota --------------------------------------------------- */

#define QUOTA_BYTES 65536

/* Every tenant may send 64 KiB of payload in one request; gpud's own limit
 * stays 256 MiB. */
static void setup_message_quota(void)
{
	char conf[128];
	snprintf(conf, sizeof(conf), "[quota]\nmessage_size = %d\n", QUOTA_BYTES);
	start_gpud(conf, NULL, NULL);
}

/* n float64 of a known pattern (the index and the seed in every value). */
static double *pattern(size_t n, double seed)
{
	double *v = malloc(n * sizeof(double));
	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++)
		v[i] = seed + (double)i * 0.25 - (double)(i % 7);
	return v;
}

/* Uploads n float64 (with the alloc, then again with gpud_upload at an
 * offset) and downloads them whole and in a range: the values checked. */
static void round_trip(gpud_client *c, size_t n, const char *how)
{
	double *v = pattern(n, 3.5), *w = pattern(n, -11.0);
	uint64_t sn = n;
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sn, v, &h));
	gpud_array a;
	LIB_OK(c, gpud_download(c, h, &a));
	ck_assert_uint_eq(a.nbytes, n * sizeof(double));
	ck_assert_msg(memcmp(a.data, v, a.nbytes) == 0, "%s: %zu float64 came back changed", how,
		      n);
	gpud_array_free(&a);
	/* the second half overwritten from offset n/2 */
	size_t half = n / 2, rest = n - half;
	LIB_OK(c, gpud_upload(c, h, half * sizeof(double), w + half, rest * sizeof(double)));
	double *got = calloc(rest, sizeof(double));
	ck_assert_ptr_nonnull(got);
	LIB_OK(c, gpud_download_range(c, h, half * sizeof(double), got, rest * sizeof(double)));
	ck_assert_msg(memcmp(got, w + half, rest * sizeof(double)) == 0,
		      "%s: the upload at offset %zu came back changed", how, half * sizeof(double));
	LIB_OK(c, gpud_download_range(c, h, 0, got, half * sizeof(double)));
	ck_assert_msg(memcmp(got, v, half * sizeof(double)) == 0,
		      "%s: the first half changed under an upload at offset %zu", how,
		      half * sizeof(double));
	LIB_OK(c, gpud_free(c, &h, 1));
	free(got);
	free(v);
	free(w);
}

/*
 * The quota comes in hello: the library sends arrays several times larger
 * in pieces that fit it, through messages (under 1 MiB over ipc://, and
 * 5 MiB with shared memory off, as over tcp://); a payload it cannot split
 * (a call's inline array) is refused before sending, naming the quota; a
 * client that does not split still meets gpud's refusal.
 */
START_TEST(test_uploads_fit_the_quota)
{
	gpud_client *c = lib_connect();
	ck_assert_uint_eq(gpud_server(c)->max_message_size, QUOTA_BYTES);
	round_trip(c, 5 * QUOTA_BYTES / sizeof(double), "320 KiB through messages");

	double *v = pattern(3 * QUOTA_BYTES / sizeof(double), 1.0);
	gpud_array in = {.dtype = GPUD_F64,
			 .ndim = 1,
			 .shape = {3 * QUOTA_BYTES / sizeof(double)},
			 .data = v,
			 .nbytes = 3 * QUOTA_BYTES};
	gpud_arg arg = gpud_arg_array("x", &in);
	gpud_result out;
	size_t nout;
	LIB_FAIL(c, gpud_call(c, "sum", &arg, 1, &out, 1, &nout, NULL), GPUD_E2BIG,
		 "message_size quota of tenant root");
	free(v);
	gpud_close(c);

	setenv("GPUD_NO_SHM", "1", 1); /* this test's process only (fork mode) */
	c = lib_connect();
	ck_assert_msg(!gpud_has_shm(c), "GPUD_NO_SHM=1 left shared memory on");
	round_trip(c, (5u << 20) / sizeof(double), "5 MiB through messages");
	gpud_close(c);
	unsetenv("GPUD_NO_SHM");

	/* gpud still refuses a payload over the quota from a client that sends it whole */
	nng_socket s = raw_open(10000);
	raw_say_hello(s);
	double *big = pattern(QUOTA_BYTES / sizeof(double) + 1, 0.0);
	pb alloc = {.n = 0}, shape = {.n = 0};
	pb_uint(&alloc, 1, 2); /* DTYPE_F64 */
	pb_varint(&shape, QUOTA_BYTES / sizeof(double) + 1);
	pb_sub(&alloc, 2, &shape);
	pb_uint(&alloc, 3, 1); /* with_data */
	raw_reply r = raw_body_on(s, 7, 11, &alloc, big, QUOTA_BYTES + sizeof(double));
	ck_assert_msg(r.code == 11 && strstr(r.message, "over the message_size quota of tenant "
							"root: a 65544-byte payload"),
		      "an alloc 8 bytes over the quota: code %" PRIu64 " '%s'", r.code, r.message);
	free(big);
	nng_close(s);
	assert_daemon_alive("uploads over the message_size quota");
}
END_TEST

/* gpuctl upload and download of a file four times the quota: the values back. */
START_TEST(test_gpuctl_fits_the_quota)
{
	const size_t n = 4 * QUOTA_BYTES / sizeof(double);
	double *v = pattern(n, 42.0);
	char pin[700], pout[700], err[512], handle[64];
	path_in_dir(pin, sizeof(pin), "q.npy");
	path_in_dir(pout, sizeof(pout), "q-back.npy");
	save_npy(pin, GPUD_F64, 1, (uint64_t[]){n}, v);
	ctl_result *r = CTL("upload", "--keep", pin);
	assert_ctl_ok(r);
	snprintf(handle, sizeof(handle), "%.*s", (int)strcspn(r->out, "\n"), r->out);
	assert_ctl_ok(CTL("download", handle, "-o", pout));
	gpud_array a;
	ck_assert_msg(gpud_npy_load(pout, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(a.shape[0], n);
	ck_assert_msg(memcmp(a.data, v, n * sizeof(double)) == 0,
		      "gpuctl's 256 KiB round trip under a 64 KiB quota came back changed");
	gpud_array_free(&a);
	assert_ctl_ok(CTL("free", handle));
	free(v);
}
END_TEST

TCase *e2e_msg_quota(void)
{
	TCase *tc = tcase_create("message_quota");
	tcase_add_checked_fixture(tc, setup_message_quota, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_uploads_fit_the_quota);
	tcase_add_test(tc, test_gpuctl_fits_the_quota);
	return tc;
}

TCase *e2e_limits(void)
{
	TCase *tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, setup_small_messages, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_message_size_limit);
	tcase_add_test(tc, test_download_in_ranges);
	tcase_add_test(tc, test_gpuctl_over_message_limit);
	return tc;
}
