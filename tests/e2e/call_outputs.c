/*
 * tests/e2e/call_outputs.c — test case "call_outputs": a one-trip call's
 * outputs in the reply (gpud_call), which gpud brings to the host right
 * behind the kernel where they fit BACKEND_FETCH_MAX (64 KiB) and downloads
 * after the run otherwise: both sides of that size, over the request ring
 * and over the socket, exact against the CPU's sums; a run its kernel
 * refuses (lombscargle's negative weight, the kernel's verdict) fails with
 * that verdict and no outputs, and the calls after it come back right.
 * Fresh random inputs each call.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/e2e.h"

static void fill(float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (float)(drand48() * 2.0 - 1.0);
}

/* gpud_call of add on n fresh float32 pairs: the one output, exact. */
static void call_add(gpud_client *c, size_t n, const char *how)
{
	float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
	ck_assert(x && y);
	fill(x, n);
	fill(y, n);
	gpud_array ax = {.dtype = GPUD_F32,
			 .ndim = 1,
			 .shape = {n},
			 .data = x,
			 .nbytes = n * sizeof(float)},
		   ay = ax;
	ay.data = y;
	gpud_arg a[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay)};
	gpud_result r;
	size_t no = 0;
	LIB_OK(c, gpud_call(c, "add", a, 2, &r, 1, &no, NULL));
	ck_assert_msg(no == 1, "%s: add of %zu: %zu outputs", how, n, no);
	ck_assert_int_eq(r.array.dtype, GPUD_F32);
	ck_assert_uint_eq(r.array.shape[0], n);
	const float *z = r.array.data;
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(z[i] == x[i] + y[i], "%s: add of %zu: z[%zu] = %g, expected %g", how,
			      n, i, (double)z[i], (double)(x[i] + y[i]));
	gpud_array_free(&r.array);
	free(x);
	free(y);
}

/* lombscargle with weights, one of them negative: the kernel's verdict. */
static void call_refused(gpud_client *c, const char *how)
{
	const size_t nx = 64, nf = 100;
	double x[64], y[64], f[100], w[64];
	gen_ls((uint64_t)(drand48() * 1e9), nx, nf, x, y, f);
	for (size_t i = 0; i < nx; i++)
		w[i] = 0.5 + drand48();
	w[(size_t)(drand48() * (double)nx)] = -0.25;
	gpud_array
		ax = {.dtype = GPUD_F64, .ndim = 1, .shape = {nx}, .data = x, .nbytes = sizeof(x)},
		ay = ax, aw = ax,
		af = {.dtype = GPUD_F64, .ndim = 1, .shape = {nf}, .data = f, .nbytes = sizeof(f)};
	ay.data = y;
	aw.data = w;
	gpud_arg a[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			gpud_arg_array("freqs", &af), gpud_arg_array("weights", &aw)};
	gpud_result r;
	size_t no = 99;
	LIB_FAIL(c, gpud_call(c, "lombscargle", a, 4, &r, 1, &no, NULL), GPUD_EINVAL, "negative");
	ck_assert_msg(no == 0, "%s: a refused run gave %zu outputs", how, no);
}

static void check_outputs(gpud_client *c, const char *how)
{
	/* 4 B, 4 KB, exactly 64 KiB, one float over, and well over */
	static const size_t sizes[] = {1, 1000, 16384, 16385, 40000};
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			call_add(c, sizes[i], how);
	for (int round = 0; round < 3; round++) {
		call_refused(c, how);
		call_add(c, 1000, how);
		call_add(c, 40000, how);
	}
}

START_TEST(test_call_outputs_ring)
{
	srand48((long)(harness_now_s() * 1e6));
	gpud_client *c = lib_connect();
	uint64_t before = gpud_ring_calls(c);
	check_outputs(c, "ring");
	if (gpud_has_shm(c))
		ck_assert_msg(gpud_ring_calls(c) > before, "no call took the request ring");
	gpud_close(c);
	assert_daemon_alive("one-trip calls' outputs");
}
END_TEST

START_TEST(test_call_outputs_socket)
{
	srand48((long)(harness_now_s() * 1e6) + 1);
	gpud_client *c = lib_connect();
	gpud_set_ring(c, 0);
	check_outputs(c, "socket");
	gpud_close(c);
}
END_TEST

TCase *e2e_call_outputs(void)
{
	TCase *tc = tcase_create("call_outputs");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_call_outputs_ring);
	tcase_add_test(tc, test_call_outputs_socket);
	return tc;
}
