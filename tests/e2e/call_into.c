/*
 * tests/e2e/call_into.c — test case "call_into": gpud_call_into copies each
 * output that has the dtype and shape the caller described straight into
 * the caller's array (outs[i].array.data is that array, *nused counts it),
 * over the request ring and over the socket; an output of another shape or
 * dtype, or past the arrays described, comes back malloc'd as gpud_call's
 * and leaves the caller's memory as it was; an error frees nothing of the
 * caller's. Fresh random inputs, outputs poisoned, values against the CPU's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/e2e.h"

#define N 1000
#define POISON 0xA7

static void fill(float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (float)(drand48() * 2.0 - 1.0);
}

static void assert_sum(const float *z, const float *x, const float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(z[i] == x[i] + y[i], "z[%zu] = %g, expected %g", i, (double)z[i],
			      (double)(x[i] + y[i]));
}

/* add of x and y (n float32) into dst described as dst_n float32 of dtype dt. */
static gpud_status call_add(gpud_client *c, const float *x, const float *y, size_t n, void *dst,
			    size_t dst_n, gpud_dtype dt, gpud_result *r, size_t *nouts,
			    size_t *nused)
{
	gpud_array ax = {.dtype = GPUD_F32,
			 .ndim = 1,
			 .shape = {n},
			 .data = (void *)x,
			 .nbytes = n * sizeof(float)},
		   ay = ax;
	ay.data = (void *)y;
	gpud_array into = {.dtype = dt,
			   .ndim = 1,
			   .shape = {dst_n},
			   .data = dst,
			   .nbytes = dst_n * gpud_dtype_size(dt)};
	gpud_arg a[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay)};
	return gpud_call_into(c, "add", a, 2, &into, 1, r, 1, nouts, nused, NULL);
}

static void check_into(gpud_client *c, const char *how)
{
	float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
	float *z = malloc((N + 1) * sizeof(float));
	ck_assert(x && y && z);
	for (int round = 0; round < 3; round++) {
		fill(x, N);
		fill(y, N);
		memset(z, POISON, (N + 1) * sizeof(float));
		gpud_result r;
		size_t n = 99, used = 99;
		LIB_OK(c, call_add(c, x, y, N, z, N, GPUD_F32, &r, &n, &used));
		ck_assert_msg(n == 1 && used == 1, "%s: nouts %zu, nused %zu", how, n, used);
		ck_assert_ptr_eq(r.array.data, z);
		ck_assert_int_eq(r.array.dtype, GPUD_F32);
		ck_assert_uint_eq(r.array.shape[0], N);
		assert_sum(z, x, y, N);
		ck_assert_uint_eq(((unsigned char *)z)[N * sizeof(float)], POISON);
	}

	/* Another shape than described: malloc'd, the caller's memory untouched. */
	fill(x, N);
	fill(y, N);
	memset(z, POISON, (N + 1) * sizeof(float));
	gpud_result r;
	size_t n = 0, used = 99;
	LIB_OK(c, call_add(c, x, y, N, z, N + 1, GPUD_F32, &r, &n, &used));
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(used, 0);
	ck_assert_ptr_ne(r.array.data, z);
	assert_sum(r.array.data, x, y, N);
	for (size_t i = 0; i < (N + 1) * sizeof(float); i++)
		ck_assert_uint_eq(((unsigned char *)z)[i], POISON);
	gpud_array_free(&r.array);

	/* Another dtype than described (the same size): malloc'd too. */
	LIB_OK(c, call_add(c, x, y, N, z, N, GPUD_I32, &r, &n, &used));
	ck_assert_uint_eq(used, 0);
	ck_assert_ptr_ne(r.array.data, z);
	assert_sum(r.array.data, x, y, N);
	ck_assert_uint_eq(((unsigned char *)z)[0], POISON);
	gpud_array_free(&r.array);

	/* No arrays described: gpud_call's results. */
	gpud_array ax = {.dtype = GPUD_F32,
			 .ndim = 1,
			 .shape = {N},
			 .data = x,
			 .nbytes = N * sizeof(float)},
		   ay = ax;
	ay.data = y;
	gpud_arg a[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay)};
	LIB_OK(c, gpud_call_into(c, "add", a, 2, NULL, 0, &r, 1, &n, NULL, NULL));
	ck_assert_uint_eq(n, 1);
	assert_sum(r.array.data, x, y, N);
	gpud_array_free(&r.array);

	/* An error (y of another length): the caller's array neither freed nor written. */
	ay.shape[0] = N - 1;
	ay.nbytes = (N - 1) * sizeof(float);
	gpud_array into = {
		.dtype = GPUD_F32, .ndim = 1, .shape = {N}, .data = z, .nbytes = N * sizeof(float)};
	used = 99;
	gpud_status st = gpud_call_into(c, "add", a, 2, &into, 1, &r, 1, &n, &used, NULL);
	ck_assert_msg(st == GPUD_EINVAL || st == GPUD_EARG, "%s: status %d: %s", how, (int)st,
		      gpud_errmsg(c));
	ck_assert_msg(strstr(gpud_errmsg(c), "y") != NULL, "%s", gpud_errmsg(c));
	ck_assert_uint_eq(used, 0);
	ck_assert_uint_eq(((unsigned char *)z)[0], POISON);
	free(x);
	free(y);
	free(z);
}

START_TEST(test_call_into_ring)
{
	srand48((long)(harness_now_s() * 1e6));
	gpud_client *c = lib_connect();
	uint64_t before = gpud_ring_calls(c);
	check_into(c, "ring");
	if (gpud_has_shm(c))
		ck_assert_msg(gpud_ring_calls(c) > before, "no call took the request ring");
	gpud_close(c);
	assert_daemon_alive("calls into the caller's arrays");
}
END_TEST

START_TEST(test_call_into_socket)
{
	srand48((long)(harness_now_s() * 1e6) + 1);
	gpud_client *c = lib_connect();
	gpud_set_ring(c, 0);
	uint64_t before = gpud_ring_calls(c);
	check_into(c, "socket");
	ck_assert_uint_eq(gpud_ring_calls(c), before);
	gpud_close(c);
}
END_TEST

TCase *e2e_call_into(void)
{
	TCase *tc = tcase_create("call_into");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_call_into_ring);
	tcase_add_test(tc, test_call_into_socket);
	return tc;
}
