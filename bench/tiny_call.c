/*
 * bench/tiny_call.c — the C side of the Python package's warm comparisons
 * (bench/python_first_result.py, bench/python_hot.py): gpud_call on a warm
 * client, inputs in the request and the output in the reply, as the Python
 * package's client.run does it. Either a tiny lombscargle (float32, 8
 * samples x 1024 frequencies) or add of two float32 arrays of N elements
 * (fresh random values, the sum checked once). One thread.
 *
 *   tiny_call URL REPS          lombscargle
 *   tiny_call URL REPS add N    add, x and y of N float32
 *
 * prints "p50_us P p99_us Q" of REPS calls after 50 warm-up calls.
 */
#include <gpud/client.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"

enum { NX = 8, NF = 1024 };

static int usage(void)
{
	fprintf(stderr, "usage: tiny_call URL REPS [add N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 5)
		return usage();
	int reps = atoi(argv[2]);
	if (reps < 1) {
		fprintf(stderr, "tiny_call: REPS must be a positive integer, got '%s'\n", argv[2]);
		return 2;
	}
	int add = argc == 5;
	long n = 0;
	if (add) {
		if (strcmp(argv[3], "add") != 0)
			return usage();
		n = atol(argv[4]);
		if (n < 1 || n > (1L << 24)) {
			fprintf(stderr,
				"tiny_call: N must be an integer in 1..16777216, got '%s'\n",
				argv[4]);
			return 2;
		}
	}
	float x[NX], y[NX], f[NF];
	for (int i = 0; i < NX; i++) {
		x[i] = 0.1f + 3.0f * (float)i / NX;
		y[i] = cosf(x[i]);
	}
	for (int i = 0; i < NF; i++)
		f[i] = 0.1f + 5.0f * (float)i / NF;
	float *ax_d = NULL, *ay_d = NULL;
	if (add) {
		ax_d = malloc((size_t)n * sizeof(float));
		ay_d = malloc((size_t)n * sizeof(float));
		if (ax_d == NULL || ay_d == NULL)
			return 1;
		srand48(harness_now_s() * 1e6);
		for (long i = 0; i < n; i++) {
			ax_d[i] = (float)drand48();
			ay_d[i] = (float)drand48() - 0.5f;
		}
	}
	gpud_client *c;
	if (gpud_connect(argv[1], &c) != GPUD_OK) {
		fprintf(stderr, "tiny_call: %s\n", gpud_errmsg(c));
		gpud_close(c);
		return 1;
	}
	gpud_array
		ax = {.dtype = GPUD_F32, .ndim = 1, .shape = {NX}, .data = x, .nbytes = sizeof(x)},
		ay = {.dtype = GPUD_F32, .ndim = 1, .shape = {NX}, .data = y, .nbytes = sizeof(y)},
		af = {.dtype = GPUD_F32, .ndim = 1, .shape = {NF}, .data = f, .nbytes = sizeof(f)};
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_array("freqs", &af)};
	size_t nargs = 3;
	const char *kernel = "lombscargle";
	if (add) {
		size_t nb = (size_t)n * sizeof(float);
		ax = (gpud_array){
			.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .data = ax_d, .nbytes = nb};
		ay = (gpud_array){
			.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .data = ay_d, .nbytes = nb};
		nargs = 2;
		kernel = "add";
	}
	double *t = malloc((size_t)reps * sizeof(double));
	if (t == NULL)
		return 1;
	for (int r = -50; r < reps; r++) {
		gpud_result res;
		size_t nout;
		double t0 = harness_now_s();
		if (gpud_call(c, kernel, args, nargs, &res, 1, &nout, NULL) != GPUD_OK) {
			fprintf(stderr, "tiny_call: %s\n", gpud_errmsg(c));
			return 1;
		}
		double t1 = harness_now_s();
		if (add && r == -50) {
			const float *z = res.array.data;
			for (long i = 0; i < n; i++)
				if (nout != 1 || z[i] != ax_d[i] + ay_d[i]) {
					fprintf(stderr,
						"tiny_call: add gave %g at %ld, expected %g\n",
						(double)z[i], i, (double)(ax_d[i] + ay_d[i]));
					return 1;
				}
		}
		gpud_array_free(&res.array);
		if (r >= 0)
			t[r] = (t1 - t0) * 1e6;
	}
	printf("p50_us %.2f p99_us %.2f\n", harness_median(t, (size_t)reps),
	       harness_percentile(t, (size_t)reps, 0.99));
	free(t);
	free(ax_d);
	free(ay_d);
	gpud_close(c);
	return 0;
}
