/*
 * tests/gpu/pool.c — test case "pool": the cuda backend's memory pool, its
 * accounting back to zero, an out-of-memory that leaves other buffers
 * intact, and misses served off the loop. Runs on main's thread (CK_NOFORK).
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

/* --- the memory pool ---------------------------------------------------------------- */

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

TCase *pool_tcase(void)
{
	TCase *tc = tcase_create("pool");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, pool_accounting_returns_to_zero);
	tcase_add_test(tc, pool_out_of_memory_leaves_others_intact);
	tcase_add_test(tc, pool_misses_off_the_loop);
	return tc;
}
