/*
 * tests/gpu/main.c — the GPU suite, through a real gpud on the cuda backend:
 * every kernel's GPU implementation against its CPU reference (the cpu
 * backend's code, linked in), each by its folder's test
 * (kernels/<folder>/gpu_test_<folder>.c, listed from kernels/kernels.def),
 * then the pool, the copy paths, overlapping sessions and custom kernels.
 * Inputs are fresh random data at several sizes (the seed is printed);
 * outputs are pre-filled with a NaN of a payload no arithmetic produces, so
 * an element the kernel never wrote is caught even where NaN is a legitimate
 * result.
 *
 * Needs a GPU: `make test-gpu`. GPUD_BIN names the daemon.
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

static harness_gpud gpud;

/* A client that gives up after 2 minutes instead of hanging on a stuck gpud. */
static gpud_status connect_timeout(gpud_client **c)
{
	gpud_status st = gpud_connect(gpud.url, c);
	if (*c)
		gpud_set_timeout(*c, 120000);
	return st;
}

/* gpud --backend cuda on a fresh socket; context creation and the kernels'
 * self-tests take up to 30 s. */
static void start_gpud_with(const char *config_text)
{
	char msg[512];
	harness_gpud_opts o = {.backend = "cuda", .config = config_text, .timeout_s = 30};
	memset(&gpud, 0, sizeof(gpud));
	if (harness_gpud_start(&gpud, &o, msg, sizeof(msg)) != 0) {
		harness_dump_file("gpud log", gpud.log);
		ck_abort_msg("%s", msg);
	}
}

static void start_gpud(void)
{
	start_gpud_with(NULL);
}

/* gpud with opts o on a fresh socket (the suite's `gpud`). */
static void start_gpud_opts(const harness_gpud_opts *o)
{
	char msg[512];
	memset(&gpud, 0, sizeof(gpud));
	if (harness_gpud_start(&gpud, o, msg, sizeof(msg)) != 0) {
		harness_dump_file("gpud log", gpud.log);
		ck_abort_msg("%s", msg);
	}
}

/* Two of gpud's devices: two GPUs where there are (ngpu), else the one GPU
 * twice (GPUD_DEVICES_REPEAT). */
static void two_devices(harness_gpud_opts *o, int ngpu)
{
	static const char *two[] = {"--device", "0,1", NULL}, *twice[] = {"--device", "0,0", NULL};
	static const char *repeat_env[] = {"GPUD_DEVICES_REPEAT=1", NULL};
	o->args = ngpu >= 2 ? two : twice;
	o->env = ngpu >= 2 ? NULL : repeat_env;
}

/* A custom kernel that writes to address 0x10: an illegal address. */
static const gpud_kernel_spec crash_spec = {
	.name = "crash",
	.source = "extern \"C\" __global__ void crash(float *y)\n{\n\tfloat *p = (float *)0x10;\n"
		  "\tp[threadIdx.x] = y[0];\n}\n",
	.entry = "crash",
	.signature = "y:out f32[]",
	.blocks_per_sm = 1};

static void stop_gpud(void)
{
	char msg[512];
	int rv = harness_gpud_stop(&gpud, 10, msg, sizeof(msg));
	if (rv != 0)
		harness_dump_file("gpud log", gpud.log);
	harness_gpud_remove(&gpud);
	ck_assert_msg(rv == 0, "%s", msg);
}

/* --- every kernel has a GPU test ---------------------------------------------------- */

/* Each kernel's test: its folder's, given the kernel's name. */
static const struct {
	const char *kernel;
	void (*run)(gpud_client *c, const char *kernel);
} gpu_tests[] = {
#define KERNEL(name, folder) {#name, gpu_test_##folder},
#include "kernels/kernels.def"
};

/* Every kernel in the list has a GPU test. */
START_TEST(every_kernel_has_a_gpu_test)
{
	size_t nk;
	const kernel_def *const *ks = kernel_list(&nk);
	ck_assert_uint_ge(nk, 1);
	for (size_t i = 0; i < nk; i++) {
		size_t j;
		for (j = 0; j < sizeof(gpu_tests) / sizeof(gpu_tests[0]); j++)
			if (!strcmp(gpu_tests[j].kernel, ks[i]->name))
				break;
		ck_assert_msg(j < sizeof(gpu_tests) / sizeof(gpu_tests[0]),
			      "kernel %s has no GPU test", ks[i]->name);
	}
}
END_TEST

/* Kernel _i of the list against its CPU reference, each on its own gpud (a
 * loop test: one kernel's failure leaves the others tested). */
START_TEST(kernel_against_reference)
{
	gpud_client *c;
	size_t nk;
	const kernel_def *const *ks = kernel_list(&nk);
	ck_assert_uint_lt((size_t)_i, nk);
	const char *name = ks[_i]->name;
	size_t j;
	for (j = 0; j < sizeof(gpu_tests) / sizeof(gpu_tests[0]); j++)
		if (!strcmp(gpu_tests[j].kernel, name))
			break;
	ck_assert_msg(j < sizeof(gpu_tests) / sizeof(gpu_tests[0]), "kernel %s has no GPU test",
		      name);

	start_gpud();
	ck_assert_msg(connect_timeout(&c) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_str_eq(gpud_server(c)->backend, "cuda");
	ck_assert_int_ge(gpud_server(c)->ndevices, 1);
	printf("kernel %s on %s (sm_%d%d), seed %016llx\n", name, gpud_server(c)->devices[0].name,
	       gpud_server(c)->devices[0].cc_major, gpud_server(c)->devices[0].cc_minor,
	       (unsigned long long)rng_state);
	double t0 = wall();
	gpu_tests[j].run(c, name);
	printf("kernel %-16s tested in %.2f s\n", name, wall() - t0);
	fflush(stdout);
	gpud_daemon_status *st = malloc(sizeof(*st));
	ck_assert(st != NULL);
	ck_assert(gpud_status_get(c, st) == GPUD_OK);
	ck_assert_msg(st->buffers == 0, "kernel %s's test left %llu buffers", name,
		      (unsigned long long)st->buffers);
	free(st);
	gpud_close(c);
	stop_gpud();
}
END_TEST

/* The first status brings the kernel variants; later ones leave them out on
 * the wire, and the library gives the same list. */
START_TEST(status_lists_kernel_variants)
{
	gpud_client *c;
	start_gpud();
	ck_assert_msg(connect_timeout(&c) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_daemon_status *st = malloc(2 * sizeof(*st));
	ck_assert(st != NULL);
	ck_assert(gpud_status_get(c, &st[0]) == GPUD_OK);
	ck_assert_uint_eq(st[0].buffers, 0);
	ck_assert_int_ge(st[0].nvariants, 2);
	ck_assert(gpud_status_get(c, &st[1]) == GPUD_OK);
	ck_assert_int_eq(st[1].nvariants, st[0].nvariants);
	ck_assert(memcmp(st[1].variants, st[0].variants,
			 (size_t)st[0].nvariants * sizeof(st[0].variants[0])) == 0);
	ck_assert_uint_gt(st[1].variants[0].registers, 0);
	free(st);
	gpud_close(c);
	stop_gpud();
}
END_TEST

/* --- the memory pool ---------------------------------------------------------------- */

static gpud_daemon_status status_of(gpud_client *c)
{
	gpud_daemon_status st;
	ck_assert_msg(gpud_status_get(c, &st) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(st.has_pool, "the cuda backend reports no pool");
	return st;
}

/* Buffers of a closed connection go back to the pool; reuse hits the cache. */
START_TEST(pool_accounting_returns_to_zero)
{
	gpud_client *a, *b;
	start_gpud();
	ck_assert(connect_timeout(&b) == GPUD_OK);
	gpud_daemon_status st0 = status_of(b);
	ck_assert_uint_eq(st0.pool_in_use, 0);
	ck_assert_uint_gt(st0.pool_cached, 0); /* the start-up reservation */

	for (int round = 0; round < 3; round++) {
		ck_assert(connect_timeout(&a) == GPUD_OK);
		static const uint64_t sizes[] = {1, 1000, 1 << 20, 3 << 20, 64 << 20};
		for (int i = 0; i < 5; i++) {
			gpud_handle h;
			ck_assert_msg(gpud_alloc(a, GPUD_F32, 1, &sizes[i], NULL, &h) == GPUD_OK,
				      "%s", gpud_errmsg(a));
		}
		gpud_daemon_status st = status_of(b);
		ck_assert_uint_ge(st.pool_in_use,
				  (1 + 1000 + (1 << 20) + (3 << 20) + (64 << 20)) * 4ull);
		gpud_close(a); /* no free: the connection's buffers are released */
		for (int i = 0; i < 200 && (st = status_of(b)).pool_in_use != 0; i++)
			usleep(10000);
		ck_assert_msg(st.pool_in_use == 0 && st.buffers == 0,
			      "after disconnect: pool %llu bytes in use, %llu buffers",
			      (unsigned long long)st.pool_in_use, (unsigned long long)st.buffers);
	}
	gpud_daemon_status st = status_of(b);
	printf("pool: %llu allocations, %llu from the cache, high-water %llu bytes, %llu cached\n",
	       (unsigned long long)st.pool_allocs, (unsigned long long)st.pool_hits,
	       (unsigned long long)st.pool_high_water, (unsigned long long)st.pool_cached);
	ck_assert_uint_eq(st.pool_allocs, 15);
	ck_assert_uint_ge(st.pool_hits, 10); /* rounds 2 and 3 reuse round 1's blocks */
	gpud_close(b);
	stop_gpud();
}
END_TEST

/* Over the pool's limit: that request fails, nobody else's data moves. */
START_TEST(pool_out_of_memory_leaves_others_intact)
{
	gpud_client *a, *b;
	uint64_t n = 64ull << 20; /* 64 Mi floats = 256 MiB */
	float *data = malloc(n * sizeof(float)), probe[1024];

	start_gpud_with("[gpud]\npool_max_total = 1GiB\npool_reserve = 0\n");
	ck_assert(connect_timeout(&a) == GPUD_OK);
	ck_assert(connect_timeout(&b) == GPUD_OK);
	for (uint64_t i = 0; i < n; i++)
		data[i] = (float)(i % 1000003) + 0.5f;
	gpud_handle keep, big;
	ck_assert_msg(gpud_alloc(b, GPUD_F32, 1, &n, NULL, &keep) == GPUD_OK, "%s", gpud_errmsg(b));
	ck_assert_msg(gpud_upload(b, keep, 0, data, 1u << 20) == GPUD_OK, "%s", gpud_errmsg(b));
	ck_assert_msg(gpud_upload(b, keep, (n - (1u << 18)) * 4, data + n - (1u << 18), 1u << 20) ==
			      GPUD_OK,
		      "%s", gpud_errmsg(b));

	uint64_t too_big = 200ull << 20; /* 800 MiB of floats: over 1 GiB with the 256 MiB */
	gpud_status st = gpud_alloc(a, GPUD_F32, 1, &too_big, NULL, &big);
	printf("over the limit: %s: %s\n", gpud_strerror(st), gpud_errmsg(a));
	ck_assert_int_eq(st, GPUD_ENOMEM);
	ck_assert_msg(strstr(gpud_errmsg(a), "asked for 838860800 bytes") != NULL, "message: %s",
		      gpud_errmsg(a));
	ck_assert_msg(strstr(gpud_errmsg(a), "limit") != NULL, "message: %s", gpud_errmsg(a));

	/* The other client's buffer still holds its data, at both ends. */
	ck_assert(gpud_download_range(b, keep, 0, probe, sizeof(probe)) == GPUD_OK);
	ck_assert(memcmp(probe, data, sizeof(probe)) == 0);
	ck_assert(gpud_download_range(b, keep, (n - 1024) * 4, probe, sizeof(probe)) == GPUD_OK);
	ck_assert(memcmp(probe, data + n - 1024, sizeof(probe)) == 0);
	/* And the failed client can still work within the limit. */
	uint64_t small = 1 << 20;
	ck_assert_msg(gpud_alloc(a, GPUD_F32, 1, &small, NULL, &big) == GPUD_OK, "%s",
		      gpud_errmsg(a));
	gpud_close(a);
	gpud_close(b);
	free(data);
	stop_gpud();
}
END_TEST

/*
 * With no start-up reservation every first allocation misses the pool: it is
 * made on a worker (the loop never calls cudaMalloc) and the request goes on.
 * An alloc with data, and a run whose inline inputs and output all miss,
 * come back right; the same run again (all hits) gives the same numbers.
 */
START_TEST(pool_misses_off_the_loop)
{
	gpud_client *c;
	start_gpud_with("[gpud]\npool_reserve = 0\n");
	ck_assert(connect_timeout(&c) == GPUD_OK);
	gpud_daemon_status st0 = status_of(c);
	ck_assert_uint_eq(st0.pool_cached, 0);

	uint64_t n = 5u << 20; /* 20 MiB of int32: a 32 MiB bin, empty */
	int32_t *v = malloc(n * 4), *back = malloc(n * 4);
	for (uint64_t i = 0; i < n; i++)
		v[i] = (int32_t)(rnd() & 0x7fffffff);
	memset(back, 0xA5, n * 4);
	gpud_handle h;
	ck_assert_msg(gpud_alloc(c, GPUD_I32, 1, &n, v, &h) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert(gpud_download_range(c, h, 0, back, n * 4) == GPUD_OK);
	ck_assert_msg(memcmp(v, back, n * 4) == 0, "an alloc made off the loop lost its data");
	gpud_free(c, &h, 1);

	/* lombscargle on inline arrays: x, y (3000 floats), freqs and the output (2^18) */
	enum { NX = 3000, NF = 1 << 18 };
	float *x = malloc(NX * 4), *y = malloc(NX * 4), *f = malloc(NF * 4);
	for (int i = 0; i < NX; i++) {
		x[i] = 0.01f * (float)i + 0.001f * (float)(rnd() % 1000);
		y[i] = sinf(0.7f * x[i]) + 0.001f * (float)(rnd() % 100);
	}
	for (int i = 0; i < NF; i++)
		f[i] = 0.05f + 2e-5f * (float)i;
	gpud_array ax = {.dtype = GPUD_F32, .ndim = 1, .shape = {NX}, .data = x, .nbytes = NX * 4},
		   ay = {.dtype = GPUD_F32, .ndim = 1, .shape = {NX}, .data = y, .nbytes = NX * 4},
		   af = {.dtype = GPUD_F32, .ndim = 1, .shape = {NF}, .data = f, .nbytes = NF * 4};
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_array("freqs", &af)};
	gpud_result r1, r2;
	size_t no;
	gpud_daemon_status s1 = status_of(c);
	ck_assert_msg(gpud_call(c, "lombscargle", args, 3, &r1, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	gpud_daemon_status s2 = status_of(c);
	ck_assert_msg(gpud_call(c, "lombscargle", args, 3, &r2, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	gpud_daemon_status s3 = status_of(c);
	printf("pool misses: first call %llu allocations (%llu hits), second %llu (%llu hits)\n",
	       (unsigned long long)(s2.pool_allocs - s1.pool_allocs),
	       (unsigned long long)(s2.pool_hits - s1.pool_hits),
	       (unsigned long long)(s3.pool_allocs - s2.pool_allocs),
	       (unsigned long long)(s3.pool_hits - s2.pool_hits));
	ck_assert_uint_lt(s2.pool_hits - s1.pool_hits, s2.pool_allocs - s1.pool_allocs);
	ck_assert_uint_eq(s3.pool_hits - s2.pool_hits, s3.pool_allocs - s2.pool_allocs);
	ck_assert_uint_eq(r1.array.nbytes, NF * 4);
	ck_assert_msg(memcmp(r1.array.data, r2.array.data, NF * 4) == 0,
		      "the run made off the loop differs from the same run on cached blocks");
	const float *p = r1.array.data;
	int finite = 1, positive = 0;
	for (int i = 0; i < NF; i++) {
		finite &= isfinite(p[i]) != 0;
		positive += p[i] > 0;
	}
	ck_assert_msg(finite && positive > NF / 2, "periodogram: finite %d, %d of %d positive",
		      finite, positive, NF);
	gpud_array_free(&r1.array);
	gpud_array_free(&r2.array);
	free(x);
	free(y);
	free(f);
	free(v);
	free(back);
	gpud_close(c);
	stop_gpud();
}
END_TEST

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

/* --- custom kernels ---------------------------------------------------------------- */

static char cache_conf[256];

static gpud_kernel_spec ew_spec(const char *name, const char *in, const char *out, const char *body)
{
	gpud_kernel_spec s = {
		.name = name, .elementwise = 1, .in_params = in, .out_params = out, .source = body};
	return s;
}

static const char scale_src[] =
	"extern \"C\" __global__ void scale(const float *x, float *y, float s, long long n)\n"
	"{\n"
	"\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
	"\t     i += (long long)gridDim.x * blockDim.x)\n"
	"\t\ty[i] = s * x[i];\n"
	"}\n";

START_TEST(custom_kernels_against_cpu)
{
	char dir[128];
	snprintf(dir, sizeof(dir), "/tmp/gpud-kcache-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cache_conf, sizeof(cache_conf), "[gpud]\nkernel_cache = %s\n", dir);
	start_gpud_with(cache_conf);
	gpud_client *c;
	ck_assert(connect_timeout(&c) == GPUD_OK);

	/* elementwise float32: z = exp(a * sin(x) + cos(y)), a broadcast */
	gpud_kernel_spec st = ew_spec("my_saxpy_trig", "float32 x, float32 y, float32 a",
				      "float32 z", "z = exp(a * sin(x) + cos(y))");
	ck_assert_msg(gpud_register(c, &st) == GPUD_OK, "%s", gpud_errmsg(c));
	uint64_t n = (1u << 20) + 7;
	float *x = make_array(GPUD_F32, n, -3, 3, 0), *y = make_array(GPUD_F32, n, -3, 3, 0);
	float *z = malloc(n * 4);
	gpud_handle hx, hy, hz = poisoned(c, GPUD_F32, n);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &n, x, &hx) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &n, y, &hy) == GPUD_OK);
	gpud_arg args[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hy),
			   gpud_arg_f64("a", 0.7), gpud_arg_buffer("z", hz)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, "my_saxpy_trig", args, 4, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert(gpud_download_range(c, hz, 0, z, n * 4) == GPUD_OK);
	double worst = 0;
	size_t unwritten = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (is_poison(GPUD_F32, z, i)) {
			unwritten++;
			continue;
		}
		double ref = exp(0.7 * sin((double)x[i]) + cos((double)y[i]));
		double e = fabs(z[i] - ref) / fabs(ref);
		if (!(e <= worst))
			worst = e;
	}
	printf("custom my_saxpy_trig f32, n=%llu: max rel err %.2e, unwritten %zu\n",
	       (unsigned long long)n, worst, unwritten);
	ck_assert_uint_eq(unwritten, 0);
	ck_assert_msg(worst < 1e-5, "saxpy_trig max relative error %g", worst);

	/* elementwise float64 with both inputs arrays, through gpud_call */
	gpud_kernel_spec rd = ew_spec("rel_diff_c", "float64 x, float64 y", "float64 d",
				      "d = 2 * (x - y) / (x + y)");
	ck_assert_msg(gpud_register(c, &rd) == GPUD_OK, "%s", gpud_errmsg(c));
	uint64_t m = 100003;
	double *dx = make_array(GPUD_F64, m, 1, 5, 0), *dy = make_array(GPUD_F64, m, 1, 5, 0);
	gpud_array ax = {.dtype = GPUD_F64, .ndim = 1, .shape = {m}, .data = dx, .nbytes = m * 8},
		   ay = {.dtype = GPUD_F64, .ndim = 1, .shape = {m}, .data = dy, .nbytes = m * 8};
	gpud_arg cargs[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay)};
	gpud_result res;
	ck_assert_msg(gpud_call(c, "rel_diff_c", cargs, 2, &res, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	for (uint64_t i = 0; i < m; i++) {
		double ref = 2 * (dx[i] - dy[i]) / (dx[i] + dy[i]);
		ck_assert_msg(fabs(((double *)res.array.data)[i] - ref) <= 1e-12 * (1 + fabs(ref)),
			      "rel_diff_c[%llu] = %.17g, expected %.17g", (unsigned long long)i,
			      ((double *)res.array.data)[i], ref);
	}
	gpud_array_free(&res.array);

	/* raw, grid-stride (SMs x 2 blocks), and raw with _grid/_block per run */
	gpud_kernel_spec sc = {.name = "scale_gs",
			       .source = scale_src,
			       .entry = "scale",
			       .signature = "x:in f32[], y:out f32[], s:f32, n:i64",
			       .blocks_per_sm = 2};
	ck_assert_msg(gpud_register(c, &sc) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_kernel_spec sc2 = sc;
	sc2.name = "scale_explicit";
	sc2.blocks_per_sm = 0;
	ck_assert_msg(gpud_register(c, &sc2) == GPUD_OK, "%s", gpud_errmsg(c));
	for (int variant = 0; variant < 2; variant++) {
		gpud_handle hy2 = poisoned(c, GPUD_F32, n);
		gpud_arg ra[6] = {gpud_arg_buffer("x", hx),
				  gpud_arg_buffer("y", hy2),
				  gpud_arg_f64("s", -2.5),
				  gpud_arg_i64("n", (int64_t)n),
				  gpud_arg_i64("_grid", (int64_t)((n + 255) / 256)),
				  gpud_arg_i64("_block", 256)};
		ck_assert_msg(gpud_run(c, variant ? "scale_explicit" : "scale_gs", ra,
				       variant ? 6 : 4, &o, 1, &no, NULL) == GPUD_OK,
			      "%s", gpud_errmsg(c));
		ck_assert(gpud_download_range(c, hy2, 0, z, n * 4) == GPUD_OK);
		for (uint64_t i = 0; i < n; i++)
			ck_assert_msg(z[i] == -2.5f * x[i], "%s y[%llu] = %g, expected %g",
				      variant ? "explicit" : "grid-stride", (unsigned long long)i,
				      (double)z[i], (double)(-2.5f * x[i]));
		gpud_free(c, &hy2, 1);
	}

	/* a source that does not compile: NVRTC's log, with the line */
	gpud_kernel_spec bad = {
		.name = "broken",
		.source =
			"extern \"C\" __global__ void broken(float *y)\n{\n\ty[0] = undefined_thing;\n}\n",
		.entry = "broken",
		.signature = "y:out f32[]",
		.blocks_per_sm = 1};
	ck_assert_int_eq(gpud_register(c, &bad), GPUD_EINVAL);
	printf("compile error: %s\n", gpud_errmsg(c));
	ck_assert_msg(strstr(gpud_errmsg(c), "undefined_thing") && strstr(gpud_errmsg(c), "(3)"),
		      "the log should name the identifier and line 3: %s", gpud_errmsg(c));
	/* a bad _block is refused before the launch */
	gpud_arg badl[6] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hz),
			    gpud_arg_f64("s", 1),     gpud_arg_i64("n", 1),
			    gpud_arg_i64("_grid", 1), gpud_arg_i64("_block", 4096)};
	ck_assert_int_eq(gpud_run(c, "scale_explicit", badl, 6, &o, 1, &no, NULL), GPUD_EINVAL);
	ck_assert_msg(strstr(gpud_errmsg(c), "_block"), "%s", gpud_errmsg(c));
	gpud_close(c);
	stop_gpud();

	/* a restart: the registrations come back, their code from the cache */
	start_gpud_with(cache_conf);
	ck_assert(connect_timeout(&c) == GPUD_OK);
	gpud_kernel_list *kl;
	ck_assert(gpud_kernels(c, &kl) == GPUD_OK);
	int found = 0;
	for (size_t i = 0; i < kl->count; i++)
		if (!strcmp(kl->kernels[i].name, "my_saxpy_trig")) {
			found = 1;
			ck_assert_msg(strstr(kl->kernels[i].doc, "loaded from the compile cache"),
				      "after a restart: %s", kl->kernels[i].doc);
		}
	gpud_kernel_list_free(kl);
	ck_assert_msg(found, "my_saxpy_trig did not survive the restart");
	gpud_array a32 = {.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .data = x, .nbytes = n * 4},
		   b32 = {.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .data = y, .nbytes = n * 4};
	gpud_arg after[] = {gpud_arg_array("x", &a32), gpud_arg_array("y", &b32),
			    gpud_arg_f64("a", 0.7)};
	ck_assert_msg(gpud_call(c, "my_saxpy_trig", after, 3, &res, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	for (uint64_t i = 0; i < n; i += 997) {
		double ref = exp(0.7 * sin((double)x[i]) + cos((double)y[i]));
		ck_assert(fabs(((float *)res.array.data)[i] - ref) <= 1e-5 * fabs(ref));
	}
	gpud_array_free(&res.array);
	ck_assert(gpud_unregister(c, "my_saxpy_trig") == GPUD_OK);
	gpud_close(c);
	stop_gpud();
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(x);
	free(y);
	free(z);
	free(dx);
	free(dy);
}
END_TEST

/*
 * With kernel_workers = 0, custom kernels run in gpud's own context: a
 * fault there gives its client the CUDA error, every other request after it
 * the same, and gpud exits 1 for its supervisor to start a fresh one (one
 * context serves every tenant; docs/lab-node.md says so). tests/gpu/isolation.c has
 * the default, tenant workers.
 */
START_TEST(custom_kernel_fault_ends_the_context)
{
	/* device_lost = exit: with several devices (GPUD_TEST_DEVICES) the
	 * others would serve on otherwise (tests/e2e/devices.c) */
	start_gpud_with("[gpud]\nkernel_workers = 0\ndevice_lost = exit\n");
	gpud_client *c, *other;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	ck_assert(connect_timeout(&other) == GPUD_OK);
	ck_assert_msg(gpud_register(c, &crash_spec) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_handle y = poisoned(c, GPUD_F32, 32);
	gpud_arg args[] = {gpud_arg_buffer("y", y)};
	gpud_output o;
	size_t no;
	gpud_status st = gpud_run(c, "crash", args, 1, &o, 1, &no, NULL);
	printf("a faulting kernel: %s: %s\n", gpud_strerror(st), gpud_errmsg(c));
	ck_assert_int_eq(st, GPUD_EBACKEND);
	ck_assert_msg(strstr(gpud_errmsg(c), "cuda") || strstr(gpud_errmsg(c), "CUDA") ||
			      strstr(gpud_errmsg(c), "illegal"),
		      "%s", gpud_errmsg(c));
	ck_assert_msg(harness_gpud_wait(&gpud, 10) == 0,
		      "gpud still runs after losing its context");
	int wst = gpud.wstatus;
	ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 1,
		      "gpud should exit 1 after losing its context (status %d)", wst);
	gpud_close(c);
	gpud_close(other);
	ck_assert_int_eq(harness_gpud_remove(&gpud), 0);
}
END_TEST

/* --- several devices -------------------------------------------------------------------- */

/* n random doubles uploaded to device dev (pinned there, dev >= 0) or placed (-1). */
static gpud_handle put_on(gpud_client *c, int dev, const double *v, uint64_t n)
{
	gpud_handle h;
	gpud_set_device(c, dev);
	ck_assert_msg(gpud_alloc(c, GPUD_F64, 1, &n, v, &h) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_set_device(c, -1);
	return h;
}

/* lombscargle of (x, y) on the grid, its pgram downloaded; the run's device in *dev. */
static double *ls_grid(gpud_client *c, gpud_handle x, gpud_handle y, int on, size_t nf, int *dev)
{
	/* direct: deterministic, so equal bit for bit (the NUFFT's spreading adds
	 * with atomics, in no fixed order) */
	gpud_arg a[] = {gpud_arg_buffer("x", x),         gpud_arg_buffer("y", y),
			gpud_arg_f64("f0", 0.1),         gpud_arg_f64("df", 0.01),
			gpud_arg_i64("nf", (int64_t)nf), gpud_arg_text("method", "direct")};
	gpud_output o;
	size_t no = 0;
	gpud_set_device(c, on);
	gpud_status st = gpud_run(c, "lombscargle", a, 6, &o, 1, &no, NULL);
	gpud_set_device(c, -1);
	ck_assert_msg(st == GPUD_OK, "lombscargle: %s", gpud_errmsg(c));
	double *p = malloc(nf * sizeof(double));
	poison(GPUD_F64, p, nf);
	ck_assert(gpud_download_range(c, o.handle, 0, p, nf * sizeof(double)) == GPUD_OK);
	*dev = o.device;
	ck_assert(gpud_free(c, &o.handle, 1) == GPUD_OK);
	return p;
}

/*
 * gpud's devices on the cuda backend: --device all (every GPU here) runs on
 * each; then two gpud devices (on two GPUs, or twice the one GPU with
 * GPUD_DEVICES_REPEAT) take a run whose inputs lie on both: the input on
 * the other device is copied peer to peer and the periodogram equals, bit
 * for bit, the one of the same inputs on one device; a pinned input there
 * is refused.
 */
START_TEST(devices_place_and_copy)
{
	static const char *all[] = {"--device", "all", NULL};
	harness_gpud_opts o = {.backend = "cuda", .args = all, .timeout_s = 60};
	start_gpud_opts(&o);
	gpud_client *c;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	int ngpu = gpud_server(c)->ndevices;
	ck_assert_int_ge(ngpu, 1);
	const size_t n = 20000, nf = 50000;
	double *x = make_array(GPUD_F64, n, 0, 1000, 1), *y = random_of(GPUD_F64, n, -1, 1);
	double *ref = NULL;
	for (int d = 0; d < ngpu; d++) {
		int id = gpud_server(c)->devices[d].index, got;
		gpud_handle hx = put_on(c, id, x, n), hy = put_on(c, id, y, n);
		double *p = ls_grid(c, hx, hy, -1, nf, &got);
		ck_assert_int_eq(got, id); /* where its inputs are */
		if (ref == NULL) {
			ref = p;
		} else {
			ck_assert_msg(memcmp(p, ref, nf * sizeof(double)) == 0,
				      "device %d's periodogram differs from device %d's", id,
				      gpud_server(c)->devices[0].index);
			free(p);
		}
		gpud_handle hs[] = {hx, hy};
		ck_assert(gpud_free(c, hs, 2) == GPUD_OK);
	}
	printf("devices: --device all: %d device%s, the same periodogram on each\n", ngpu,
	       ngpu == 1 ? "" : "s");
	gpud_close(c);
	stop_gpud();

	two_devices(&o, ngpu);
	start_gpud_opts(&o);
	ck_assert(connect_timeout(&c) == GPUD_OK);
	ck_assert_int_eq(gpud_server(c)->ndevices, 2);
	int d0 = gpud_server(c)->devices[0].index, d1 = gpud_server(c)->devices[1].index, got;
	/* unpinned inputs on each device: runs' outputs there (copy x, y in place) */
	gpud_handle px = put_on(c, d0, x, n), py = put_on(c, d1, y, n);
	gpud_output ox, oy;
	size_t no;
	gpud_arg cx[] = {gpud_arg_buffer("x", px), gpud_arg_f64("y", 0.0)};
	gpud_arg cy[] = {gpud_arg_buffer("x", py), gpud_arg_f64("y", 0.0)};
	ck_assert_msg(gpud_run(c, "add", cx, 2, &ox, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert_msg(gpud_run(c, "add", cy, 2, &oy, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert_int_eq(ox.device, d0);
	ck_assert_int_eq(oy.device, d1);
	/* equal bytes: the run goes to the first device; y comes from the second */
	double t0 = wall();
	double *p = ls_grid(c, ox.handle, oy.handle, -1, nf, &got);
	double t_cross = wall() - t0;
	ck_assert_int_eq(got, d0);
	ck_assert_msg(memcmp(p, ref, nf * sizeof(double)) == 0,
		      "the periodogram of inputs on two devices differs from one device's");
	free(p);
	/* named: the second device, x copied there */
	p = ls_grid(c, ox.handle, oy.handle, d1, nf, &got);
	ck_assert_int_eq(got, d1);
	ck_assert_msg(memcmp(p, ref, nf * sizeof(double)) == 0,
		      "the periodogram on the named device differs");
	free(p);
	/* a pinned input on the other device: refused */
	gpud_arg a[] = {gpud_arg_buffer("x", ox.handle), gpud_arg_buffer("y", py),
			gpud_arg_f64("f0", 0.1), gpud_arg_f64("df", 0.01), gpud_arg_i64("nf", 10)};
	gpud_output oo;
	gpud_set_device(c, d0);
	gpud_status st = gpud_run(c, "lombscargle", a, 5, &oo, 1, &no, NULL);
	gpud_set_device(c, -1);
	ck_assert_int_eq(st, GPUD_EINVAL);
	ck_assert_msg(strstr(gpud_errmsg(c), "pinned to device"), "%s", gpud_errmsg(c));
	gpud_daemon_status s;
	ck_assert(gpud_status_get(c, &s) == GPUD_OK);
	ck_assert_int_eq(s.server.ndevices, 2);
	ck_assert_uint_ge(s.server.devices[0].runs_total, 2);
	ck_assert_uint_ge(s.server.devices[1].runs_total, 2);
	ck_assert_int_eq(s.degraded, 0);
	printf("devices: %s: inputs on two devices, the second copied peer to peer: the same "
	       "periodogram bit for bit (N=%zu, M=%zu, %.2f ms through gpud)\n",
	       ngpu >= 2 ? "--device 0,1" : "--device 0,0 (GPUD_DEVICES_REPEAT: one GPU)", n, nf,
	       t_cross * 1e3);
	gpud_handle hs[] = {px, py, ox.handle, oy.handle};
	ck_assert(gpud_free(c, hs, 4) == GPUD_OK);
	gpud_close(c);
	stop_gpud();
	free(ref);
	free(x);
	free(y);
	/* one device's open or start fails: the other, opened or started on
	 * the cuda backend, closes without aborting (its loop handles exist
	 * only once started) and gpud exits 1 naming the device */
	char fmsg[2048];
	o.timeout_s = 120;
	ck_assert_msg(harness_gpud_device_faults(&o, 2, fmsg, sizeof(fmsg)) == 0, "%s", fmsg);
	printf("devices: %s: a failed open or start of either device ends gpud's start with "
	       "exit 1, the other closed\n",
	       ngpu >= 2 ? "--device 0,1" : "--device 0,0");
}
END_TEST

/*
 * A device lost for real: with kernel_workers = 0, a custom kernel that
 * faults on device 1 ends that device's context. CUDA then refuses further
 * work in the whole process (device 0's cudaMalloc failed with device 1's
 * error when gpud served on), so gpud exits 1 for its supervisor even with
 * device_lost = serve, saying why, and never serves a device it cannot use.
 * On two GPUs, or twice the one GPU (GPUD_DEVICES_REPEAT).
 */
START_TEST(device_lost_ends_gpud)
{
	static const char *all[] = {"--device", "all", NULL};
	harness_gpud_opts o = {.backend = "cuda", .args = all, .timeout_s = 60};
	start_gpud_opts(&o);
	gpud_client *c;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	int ngpu = gpud_server(c)->ndevices;
	gpud_close(c);
	stop_gpud();
	two_devices(&o, ngpu);
	o.config = "[gpud]\nkernel_workers = 0\ndevice_lost = serve\n";
	start_gpud_opts(&o);
	ck_assert(connect_timeout(&c) == GPUD_OK);
	ck_assert_int_eq(gpud_server(c)->ndevices, 2);
	int d1 = gpud_server(c)->devices[1].index;
	ck_assert_msg(gpud_register(c, &crash_spec) == GPUD_OK, "%s", gpud_errmsg(c));
	uint64_t ny = 32;
	gpud_handle y1;
	gpud_set_device(c, d1);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &ny, NULL, &y1) == GPUD_OK);
	gpud_arg ca[] = {gpud_arg_buffer("y", y1)};
	gpud_output o1;
	size_t no;
	gpud_status st = gpud_run(c, "crash", ca, 1, &o1, 1, &no, NULL);
	gpud_set_device(c, -1);
	printf("devices: a faulting kernel on device %d: %s: %s\n", d1, gpud_strerror(st),
	       gpud_errmsg(c));
	ck_assert_int_eq(st, GPUD_EBACKEND);
	ck_assert_msg(harness_gpud_wait(&gpud, 30) == 0, "gpud still runs after losing device %d",
		      d1);
	int wst = gpud.wstatus;
	char log[1 << 16];
	ck_assert(harness_read_text(gpud.log, log, sizeof(log)) > 0);
	int said = strstr(log, "stops every device's work in the process") != NULL;
	if (!(WIFEXITED(wst) && WEXITSTATUS(wst) == 1 && said))
		harness_dump_file("gpud log", gpud.log);
	ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 1,
		      "gpud should exit 1 after losing a device (status %d)", wst);
	ck_assert_msg(said, "gpud's log does not say why it exits with device_lost = serve");
	printf("devices: %s: device %d lost: gpud exited 1 for a restart (device_lost = serve "
	       "holds on the cpu backend only)\n",
	       ngpu >= 2 ? "--device 0,1" : "--device 0,0", d1);
	gpud_close(c);
	ck_assert_int_eq(harness_gpud_remove(&gpud), 0);
}
END_TEST

int main(void)
{
	if (getrandom(&rng_state, sizeof(rng_state), 0) != sizeof(rng_state))
		rng_state = (uint64_t)time(NULL);
	Suite *s = suite_create("gpu");
	TCase *tc = tcase_create("kernels");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, every_kernel_has_a_gpu_test);
	size_t nk;
	kernel_list(&nk);
	tcase_add_loop_test(tc, kernel_against_reference, 0, (int)nk);
	tcase_add_test(tc, status_lists_kernel_variants);
	suite_add_tcase(s, tc);
	tc = tcase_create("pool");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, pool_accounting_returns_to_zero);
	tcase_add_test(tc, pool_out_of_memory_leaves_others_intact);
	tcase_add_test(tc, pool_misses_off_the_loop);
	suite_add_tcase(s, tc);
	tc = tcase_create("copies and streams");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, copy_paths_at_their_edges);
	tcase_add_test(tc, sessions_overlap);
	tcase_add_test(tc, early_runs);
	suite_add_tcase(s, tc);
	tc = tcase_create("custom kernels");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, custom_kernels_against_cpu);
	tcase_add_test(tc, custom_kernel_fault_ends_the_context);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, isolation_tcase());
	tc = tcase_create("devices");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, devices_place_and_copy);
	tcase_add_test(tc, device_lost_ends_gpud);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
