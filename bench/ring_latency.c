/*
 * bench/ring_latency.c — a warm client's round trips over the request ring
 * (client/ring.c, daemon/ring.c), on any backend: what gpud's request path
 * costs above the work itself. Four probes, each after 200 warm-up calls:
 *
 *   status  gpud_status_get: the request path and no backend work
 *   run     gpud_run of add (1024 float32, z = x + y) on resident buffers,
 *           the output written in place: one backend run, nothing copied
 *   calladd gpud_call of add (x and y, 1024 float32 each, in the request; z
 *           in the reply): a one-trip job whose work is negligible on any
 *           backend (the cpu backend's lombscargle costs far more than its trip)
 *   call    gpud_call of lombscargle (float32, 8 samples x 1024 frequencies,
 *           inputs in the request, the output in the reply): a one-trip job
 *
 *   ring_latency URL REPS [status|run|calladd|call]...
 *       prints "PROBE p50_us P p99_us Q ring_calls N" for each (default: all four)
 *
 * Single-threaded; the client is the only one of its process.
 */
#include <gpud/client.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"

enum { NX = 8, NF = 1024, NADD = 1024, WARM = 200 };

typedef struct probe {
	gpud_client *c;
	gpud_arg run_args[3];
	gpud_arg call_args[3];
	gpud_arg add_args[2];
} probe;

static int one_status(probe *p)
{
	gpud_daemon_status s;
	return gpud_status_get(p->c, &s) == GPUD_OK ? 0 : -1;
}

static int one_run(probe *p)
{
	size_t n;
	return gpud_run(p->c, "add", p->run_args, 3, NULL, 0, &n, NULL) == GPUD_OK ? 0 : -1;
}

/* A one-trip gpud_call of kernel on args, its one output freed. */
static int call_one(probe *p, const char *kernel, const gpud_arg *args, size_t nargs)
{
	gpud_result res;
	size_t n;
	if (gpud_call(p->c, kernel, args, nargs, &res, 1, &n, NULL) != GPUD_OK)
		return -1;
	gpud_array_free(&res.array);
	return 0;
}

static int one_call(probe *p)
{
	return call_one(p, "lombscargle", p->call_args, 3);
}

static int one_calladd(probe *p)
{
	return call_one(p, "add", p->add_args, 2);
}

static int measure(probe *p, const char *name, int (*fn)(probe *), int reps, double *t)
{
	uint64_t calls0 = 0;
	for (int r = -WARM; r < reps; r++) {
		if (r == 0)
			calls0 = gpud_ring_calls(p->c);
		double t0 = harness_now_s();
		if (fn(p) != 0) {
			fprintf(stderr, "ring_latency: %s: %s\n", name, gpud_errmsg(p->c));
			return -1;
		}
		if (r >= 0)
			t[r] = (harness_now_s() - t0) * 1e6;
	}
	uint64_t calls = gpud_ring_calls(p->c) - calls0;
	printf("%-6s p50_us %.2f p99_us %.2f ring_calls %llu\n", name,
	       harness_median(t, (size_t)reps), harness_percentile(t, (size_t)reps, 0.99),
	       (unsigned long long)calls);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ring_latency URL REPS [status|run|calladd|call]...\n");
		return 2;
	}
	int reps = atoi(argv[2]);
	if (reps < 1) {
		fprintf(stderr, "ring_latency: REPS must be a positive integer, got '%s'\n",
			argv[2]);
		return 2;
	}
	static float x[NX], y[NX], f[NF], a[NADD], b[NADD];
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)harness_now_s();
	for (int i = 0; i < NX; i++) {
		x[i] = 0.1f + 3.0f * (float)i / NX + 0.01f * (float)harness_rng_unit(&seed);
		y[i] = cosf(x[i]);
	}
	for (int i = 0; i < NF; i++)
		f[i] = 0.1f + 5.0f * (float)i / NF;
	for (int i = 0; i < NADD; i++) {
		a[i] = (float)harness_rng_unit(&seed);
		b[i] = (float)harness_rng_unit(&seed);
	}
	probe p = {0};
	if (gpud_connect(argv[1], &p.c) != GPUD_OK) {
		fprintf(stderr, "ring_latency: %s\n", gpud_errmsg(p.c));
		gpud_close(p.c);
		return 1;
	}
	uint64_t shape[1] = {NADD};
	gpud_handle ha, hb, hz;
	if (gpud_alloc(p.c, GPUD_F32, 1, shape, a, &ha) != GPUD_OK ||
	    gpud_alloc(p.c, GPUD_F32, 1, shape, b, &hb) != GPUD_OK ||
	    gpud_alloc(p.c, GPUD_F32, 1, shape, NULL, &hz) != GPUD_OK) {
		fprintf(stderr, "ring_latency: buffers: %s\n", gpud_errmsg(p.c));
		gpud_close(p.c);
		return 1;
	}
	p.run_args[0] = gpud_arg_buffer("x", ha);
	p.run_args[1] = gpud_arg_buffer("y", hb);
	p.run_args[2] = gpud_arg_buffer("z", hz);
	static gpud_array ax, ay, af, aa, ab;
	aa = (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {NADD}, .data = a, .nbytes = sizeof(a)};
	ab = (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {NADD}, .data = b, .nbytes = sizeof(b)};
	p.add_args[0] = gpud_arg_array("x", &aa);
	p.add_args[1] = gpud_arg_array("y", &ab);
	ax = (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {NX}, .data = x, .nbytes = sizeof(x)};
	ay = (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {NX}, .data = y, .nbytes = sizeof(y)};
	af = (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {NF}, .data = f, .nbytes = sizeof(f)};
	p.call_args[0] = gpud_arg_array("x", &ax);
	p.call_args[1] = gpud_arg_array("y", &ay);
	p.call_args[2] = gpud_arg_array("freqs", &af);

	/* The run's result is checked once: z = x + y. */
	if (one_run(&p) != 0) {
		fprintf(stderr, "ring_latency: run: %s\n", gpud_errmsg(p.c));
		return 1;
	}
	static float z[NADD];
	if (gpud_download_range(p.c, hz, 0, z, sizeof(z)) != GPUD_OK) {
		fprintf(stderr, "ring_latency: download: %s\n", gpud_errmsg(p.c));
		return 1;
	}
	for (int i = 0; i < NADD; i++)
		if (z[i] != a[i] + b[i]) {
			fprintf(stderr, "ring_latency: add: z[%d] = %g, expected %g\n", i,
				(double)z[i], (double)(a[i] + b[i]));
			return 1;
		}

	double *t = malloc((size_t)reps * sizeof(double));
	if (t == NULL)
		return 1;
	int rc = 0;
	for (int i = 3; i < argc || (argc == 3 && i < 7); i++) {
		const char *w = argc == 3 ? (const char *[]){"status", "run", "calladd",
							     "call"}[i - 3]
					  : argv[i];
		int (*fn)(probe *) = strcmp(w, "status") == 0    ? one_status
				     : strcmp(w, "run") == 0     ? one_run
				     : strcmp(w, "calladd") == 0 ? one_calladd
				     : strcmp(w, "call") == 0    ? one_call
								 : NULL;
		if (fn == NULL) {
			fprintf(stderr,
				"ring_latency: probe must be status, run, calladd or call, got '%s'\n",
				w);
			rc = 2;
			break;
		}
		if (measure(&p, w, fn, reps, t) != 0) {
			rc = 1;
			break;
		}
	}
	free(t);
	gpud_close(p.c);
	return rc;
}
