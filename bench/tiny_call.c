/*
 * bench/tiny_call.c — the C side of bench/python_first_result.py's warm
 * comparison: gpud_call of a tiny lombscargle (float32, 8 samples x 1024
 * frequencies, inputs in the request, the output in the reply) on a warm
 * client, as the Python package's client.run does it.
 *
 *   tiny_call URL REPS     prints "p50_us P p99_us Q" of REPS calls after 50 warm-up calls
 */
#include <gpud/client.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/harness.h"

enum { NX = 8, NF = 1024 };

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: tiny_call URL REPS\n");
		return 2;
	}
	int reps = atoi(argv[2]);
	if (reps < 1) {
		fprintf(stderr, "tiny_call: REPS must be a positive integer, got '%s'\n", argv[2]);
		return 2;
	}
	float x[NX], y[NX], f[NF];
	for (int i = 0; i < NX; i++) {
		x[i] = 0.1f + 3.0f * (float)i / NX;
		y[i] = cosf(x[i]);
	}
	for (int i = 0; i < NF; i++)
		f[i] = 0.1f + 5.0f * (float)i / NF;
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
	double *t = malloc((size_t)reps * sizeof(double));
	if (t == NULL)
		return 1;
	for (int r = -50; r < reps; r++) {
		gpud_result res;
		size_t n;
		double t0 = harness_now_s();
		if (gpud_call(c, "lombscargle", args, 3, &res, 1, &n, NULL) != GPUD_OK) {
			fprintf(stderr, "tiny_call: %s\n", gpud_errmsg(c));
			return 1;
		}
		gpud_array_free(&res.array);
		if (r >= 0)
			t[r] = (harness_now_s() - t0) * 1e6;
	}
	printf("p50_us %.2f p99_us %.2f\n", harness_median(t, (size_t)reps),
	       harness_percentile(t, (size_t)reps, 0.99));
	free(t);
	gpud_close(c);
	return 0;
}
