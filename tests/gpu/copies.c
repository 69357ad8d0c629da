/*
 * tests/gpu/copies.c — test case "copies and streams": every copy path at its
 * edges, sessions that overlap (copy engines and SMs at once), and one-trip
 * calls (a run right behind its uploads). Runs on main's thread (CK_NOFORK),
 * with the overlap test's client threads.
 */
#include <check.h>
#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpud/client.h>

#include "kernels/core/kernel.h"
#include "tests/gpu/gpu_test.h"
#include "tests/harness.h"
#include "tests/gpu/suite.h"

/*
 * Every copy path of the cuda backend at sizes around its edges: through
 * messages (small on the loop via one staging buffer; larger streamed through
 * the staging buffers in chunks, more chunks than buffers), the scratch
 * region, and a pinned host region. Downloads land in memory poisoned first.
 */
static void copy_roundtrip(gpud_client *c, const char *how, uint8_t *src, uint8_t *dst, size_t n)
{
	gpud_handle h;
	uint64_t count = n / 4;
	for (size_t i = 0; i < n; i++)
		src[i] = (uint8_t)rnd();
	memset(dst, 0xA5, n);
	ck_assert_msg(gpud_alloc(c, GPUD_I32, 1, &count, NULL, &h) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert_msg(gpud_upload(c, h, 0, src, n) == GPUD_OK, "%s upload of %zu: %s", how, n,
		      gpud_errmsg(c));
	ck_assert_msg(gpud_download_range(c, h, 0, dst, n) == GPUD_OK, "%s download of %zu: %s",
		      how, n, gpud_errmsg(c));
	size_t bad = n;
	for (size_t i = 0; i < n && bad == n; i++)
		if (src[i] != dst[i])
			bad = i;
	ck_assert_msg(bad == n, "%s: %zu bytes came back different from byte %zu", how, n, bad);
	/* An offset upload of the middle; the ends must keep their bytes. */
	if (n >= 16) {
		memset(src + 4, 0x3C, n - 8);
		ck_assert(gpud_upload(c, h, 4, src + 4, n - 8) == GPUD_OK);
		memset(dst, 0xA5, n);
		ck_assert(gpud_download_range(c, h, 0, dst, n) == GPUD_OK);
		ck_assert_msg(memcmp(src, dst, n) == 0, "%s: offset upload of %zu bytes", how,
			      n - 8);
	}
	gpud_free(c, &h, 1);
}

START_TEST(copy_paths_at_their_edges)
{
	static const size_t sizes[] = {4,       60 << 10,       (64 << 10) + 4, (4 << 20) - 4,
				       4 << 20, (9 << 20) + 12, 37 << 20};
	const size_t maxn = 37 << 20;
	gpud_client *msg, *shm;
	uint8_t *src = malloc(maxn), *dst = malloc(maxn);

	start_gpud_with("[gpud]\nstaging_buffers = 4\nstaging_chunk = 4MiB\n");
	setenv("GPUD_NO_SHM", "1", 1);
	ck_assert(connect_timeout(&msg) == GPUD_OK);
	unsetenv("GPUD_NO_SHM");
	ck_assert(connect_timeout(&shm) == GPUD_OK);
	ck_assert(!gpud_has_shm(msg) && gpud_has_shm(shm));
	uint8_t *hsrc = gpud_host_alloc(shm, maxn), *hdst = gpud_host_alloc(shm, maxn);
	ck_assert_msg(hsrc && hdst, "gpud_host_alloc: %s", gpud_errmsg(shm));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		copy_roundtrip(msg, "messages", src, dst, sizes[i]);
		copy_roundtrip(shm, "scratch region", src, dst, sizes[i]);
		copy_roundtrip(shm, "host region", hsrc, hdst, sizes[i]);
	}
	gpud_daemon_status st = status_of(msg);
	ck_assert(st.has_staging);
	/* 4 per device (GPUD_TEST_DEVICES may list several) */
	unsigned nstaging = 4u * (unsigned)gpud_server(msg)->ndevices;
	ck_assert_uint_eq(st.staging_buffers, nstaging);
	ck_assert_uint_eq(st.staging_free, nstaging); /* every buffer came back */
	ck_assert_uint_ge(st.bytes_staged, 2 * (37u << 20));
	printf("copies: %" PRIu64 " bytes staged through %u pinned buffers of %" PRIu64 " bytes\n",
	       st.bytes_staged, st.staging_buffers, st.staging_chunk);
	gpud_close(msg);
	gpud_close(shm);
	free(src);
	free(dst);
	stop_gpud();
}
END_TEST

/*
 * Different sessions overlap: one client's DMA (1 GiB from a pinned region,
 * on the copy engines) and another's kernel (on the SMs) take about the
 * longer of the two together, not their sum.
 */
typedef struct overlap_arg {
	gpud_client *c;
	gpud_handle h[4];
	void *region;
	size_t n;
	int kind; /* 0 copy, 1 kernel */
	int reps;
	double seconds;
	gpud_status st;
} overlap_arg;

static void *overlap_work(void *p)
{
	overlap_arg *a = p;
	double t0 = wall();
	for (int r = 0; r < a->reps && a->st == GPUD_OK; r++) {
		if (a->kind == 0) {
			a->st = gpud_upload(a->c, a->h[0], 0, a->region, a->n);
		} else {
			gpud_arg args[4] = {gpud_arg_buffer("x", a->h[0]),
					    gpud_arg_buffer("y", a->h[1]),
					    gpud_arg_buffer("freqs", a->h[2]),
					    gpud_arg_buffer("pgram", a->h[3])};
			gpud_output o;
			size_t no;
			a->st = gpud_run(a->c, "lombscargle", args, 4, &o, 1, &no, NULL);
		}
	}
	a->seconds = wall() - t0;
	return NULL;
}

START_TEST(sessions_overlap)
{
	overlap_arg cp = {.kind = 0, .reps = 8, .n = 1u << 30}, kr = {.kind = 1, .reps = 8};
	uint64_t nx = 2048, nf = 1u << 21, nwords = cp.n / 4;

	start_gpud();
	ck_assert(connect_timeout(&cp.c) == GPUD_OK);
	ck_assert(connect_timeout(&kr.c) == GPUD_OK);
	cp.region = gpud_host_alloc(cp.c, cp.n);
	ck_assert_msg(cp.region != NULL, "%s", gpud_errmsg(cp.c));
	memset(cp.region, 7, cp.n);
	ck_assert(gpud_alloc(cp.c, GPUD_I32, 1, &nwords, NULL, &cp.h[0]) == GPUD_OK);
	float *x = make_array(GPUD_F32, nx, 0, 100, 1), *y = make_array(GPUD_F32, nx, -1, 1, 0),
	      *f = make_array(GPUD_F32, nf, 0.01, 20, 0);
	ck_assert(gpud_alloc(kr.c, GPUD_F32, 1, &nx, x, &kr.h[0]) == GPUD_OK);
	ck_assert(gpud_alloc(kr.c, GPUD_F32, 1, &nx, y, &kr.h[1]) == GPUD_OK);
	ck_assert(gpud_alloc(kr.c, GPUD_F32, 1, &nf, f, &kr.h[2]) == GPUD_OK);
	ck_assert(gpud_alloc(kr.c, GPUD_F32, 1, &nf, NULL, &kr.h[3]) == GPUD_OK);
	/* warm, then each alone, then both at once */
	overlap_arg w1 = cp, w2 = kr;
	w1.reps = w2.reps = 1;
	overlap_work(&w1);
	overlap_work(&w2);
	overlap_work(&cp);
	overlap_work(&kr);
	ck_assert_msg(cp.st == GPUD_OK && kr.st == GPUD_OK, "alone: %s / %s", gpud_errmsg(cp.c),
		      gpud_errmsg(kr.c));
	double alone_cp = cp.seconds, alone_kr = kr.seconds;
	pthread_t t1, t2;
	double t0 = wall();
	pthread_create(&t1, NULL, overlap_work, &cp);
	pthread_create(&t2, NULL, overlap_work, &kr);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	double both = wall() - t0;
	ck_assert_msg(cp.st == GPUD_OK && kr.st == GPUD_OK, "together: %s / %s", gpud_errmsg(cp.c),
		      gpud_errmsg(kr.c));
	printf("overlap: 8 x 1 GiB uploads alone %.1f ms, 8 lombscargle runs alone %.1f ms, "
	       "both at once %.1f ms (sum %.1f ms)\n",
	       alone_cp * 1e3, alone_kr * 1e3, both * 1e3, (alone_cp + alone_kr) * 1e3);
	/* at least half of the shorter session's time hidden under the longer's */
	double longer = alone_cp > alone_kr ? alone_cp : alone_kr;
	double shorter = alone_cp + alone_kr - longer;
	ck_assert_msg(both < longer + 0.5 * shorter,
		      "two sessions did not overlap: %.1f ms together vs %.1f + %.1f ms alone",
		      both * 1e3, alone_cp * 1e3, alone_kr * 1e3);
	gpud_close(cp.c);
	gpud_close(kr.c);
	free(x);
	free(y);
	free(f);
	stop_gpud();
}
END_TEST

/* --- one-trip calls: the run right behind its uploads ------------------------------ */

static gpud_array f32_array(float *p, uint64_t n)
{
	return (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .data = p, .nbytes = n * sizeof(float)};
}

/*
 * On the cuda backend a gpud_call's run is issued right behind its inline
 * uploads (verbs/run.c, "early"): its result equals the same job on resident
 * buffers, bit for bit; a kernel's verdict (a negative weight) and a cancel
 * while it waits for gpud's one run slot come back as on the other path, and
 * the call leaves no buffer behind.
 */
START_TEST(early_runs)
{
	start_gpud_with("[gpud]\nrun_slots = 1\n");
	gpud_client *c;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	uint64_t nx = 300, nf = 5000;
	float *x = make_array(GPUD_F32, nx, 0, 30, 1), *y = make_array(GPUD_F32, nx, -3, 3, 0),
	      *f = make_array(GPUD_F32, nf, 0.5, 10, 0), *w = make_array(GPUD_F32, nx, 0.1, 2, 0);
	gpud_array ax = f32_array(x, nx), ay = f32_array(y, nx), af = f32_array(f, nf),
		   aw = f32_array(w, nx);
	gpud_arg ca[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			 gpud_arg_array("freqs", &af), gpud_arg_array("weights", &aw)};

	/* the same job on resident buffers */
	gpud_handle h[5];
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &nx, x, &h[0]) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &nx, y, &h[1]) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &nf, f, &h[2]) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &nx, w, &h[3]) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &nf, NULL, &h[4]) == GPUD_OK);
	gpud_arg ra[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			 gpud_arg_buffer("freqs", h[2]), gpud_arg_buffer("weights", h[3]),
			 gpud_arg_buffer("pgram", h[4])};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, "lombscargle", ra, 5, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	float *want = malloc(nf * sizeof(float));
	ck_assert(gpud_download_range(c, h[4], 0, want, nf * sizeof(float)) == GPUD_OK);
	ck_assert(gpud_free(c, &h[4], 1) == GPUD_OK);
	unsigned resident = 4;

	gpud_result res;
	for (int rep = 0; rep < 20; rep++) {
		ck_assert_msg(gpud_call(c, "lombscargle", ca, 4, &res, 1, &no, NULL) == GPUD_OK,
			      "%s", gpud_errmsg(c));
		ck_assert_uint_eq(res.array.nbytes, nf * sizeof(float));
		ck_assert_msg(memcmp(res.array.data, want, nf * sizeof(float)) == 0,
			      "call %d differs from the run on resident buffers", rep);
		gpud_array_free(&res.array);
	}

	/* the kernel's verdict on its data */
	float w7 = w[7];
	w[7] = -1.0f;
	ck_assert_int_eq(gpud_call(c, "lombscargle", ca, 4, &res, 1, &no, NULL), GPUD_EINVAL);
	ck_assert_msg(strstr(gpud_errmsg(c), "negative or NaN weight"), "%s", gpud_errmsg(c));
	w[7] = w7;

	/* a call waiting behind a long run (seconds' worth of samples) is cancelled */
	uint64_t lnx = 20000, lnf = 1u << 22;
	double *lx = make_array(GPUD_F64, lnx, 0, 100, 1),
	       *ly = make_array(GPUD_F64, lnx, -1, 1, 0),
	       *lf = make_array(GPUD_F64, lnf, 0.01, 20, 0);
	gpud_handle lh[3];
	ck_assert(gpud_alloc(c, GPUD_F64, 1, &lnx, lx, &lh[0]) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F64, 1, &lnx, ly, &lh[1]) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F64, 1, &lnf, lf, &lh[2]) == GPUD_OK);
	gpud_arg la[] = {gpud_arg_buffer("x", lh[0]), gpud_arg_buffer("y", lh[1]),
			 gpud_arg_buffer("freqs", lh[2])};
	gpud_job *first, *second;
	ck_assert(gpud_run_async(c, "lombscargle", la, 3, NULL, NULL, &first) == GPUD_OK);
	/* The long run holds the slot before the call goes (the two may take
	 * different paths to gpud: the socket and the ring): gpud counts it in
	 * flight beside this status. */
	gpud_daemon_status st;
	do {
		ck_assert_msg(!gpud_job_done(first), "the long run ended before the call was sent");
		ck_assert(gpud_status_get(c, &st) == GPUD_OK);
	} while (st.in_flight < 2);
	ck_assert(gpud_call_async(c, "lombscargle", ca, 4, NULL, NULL, &second) == GPUD_OK);
	/* and the call is in gpud, waiting, before the cancel goes (a cancel
	 * that overtakes its request finds nothing to cancel) */
	do {
		ck_assert_msg(!gpud_job_done(first) && !gpud_job_done(second),
			      "a job ended before the cancel was sent");
		ck_assert(gpud_status_get(c, &st) == GPUD_OK);
	} while (st.in_flight < 3);
	ck_assert(gpud_job_cancel(second) == GPUD_OK);
	ck_assert_int_eq(gpud_job_wait(second, -1), GPUD_ECANCELED);
	ck_assert_msg(strstr(gpud_job_errmsg(second), "cancelled"), "%s", gpud_job_errmsg(second));
	printf("early runs: a call behind a long run, cancelled: %s\n", gpud_job_errmsg(second));
	ck_assert_int_eq(gpud_job_wait(first, -1), GPUD_OK);
	gpud_output lo;
	ck_assert(gpud_job_outputs(first, &lo, 1, &no, NULL) == GPUD_OK);
	gpud_job_free(first);
	gpud_job_free(second);
	/* left: the resident four, the long run's three inputs and its output */
	ck_assert(gpud_status_get(c, &st) == GPUD_OK);
	ck_assert_uint_eq(st.buffers, resident + 4);
	ck_assert(gpud_free(c, &lo.handle, 1) == GPUD_OK);
	ck_assert(gpud_free(c, lh, 3) == GPUD_OK);
	ck_assert(gpud_free(c, h, 4) == GPUD_OK);
	/* and gpud goes on: one more call, still right */
	ck_assert(gpud_call(c, "lombscargle", ca, 4, &res, 1, &no, NULL) == GPUD_OK);
	ck_assert(memcmp(res.array.data, want, nf * sizeof(float)) == 0);
	gpud_array_free(&res.array);
	ck_assert(gpud_status_get(c, &st) == GPUD_OK);
	ck_assert_uint_eq(st.buffers, 0);
	gpud_close(c);
	free(x);
	free(y);
	free(f);
	free(w);
	free(want);
	free(lx);
	free(ly);
	free(lf);
	stop_gpud();
}
END_TEST

TCase *copies_tcase(void)
{
	TCase *tc = tcase_create("copies and streams");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, copy_paths_at_their_edges);
	tcase_add_test(tc, sessions_overlap);
	tcase_add_test(tc, early_runs);
	return tc;
}
