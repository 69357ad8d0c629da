/*
 * bench/batch_clients.c — many clients, each sending single small
 * lombscargle series: the load gpud's dynamic batcher (batch_delay_us) is
 * for. bench/survey.py runs it against a gpud with batching off and one with
 * it on, in the same call, and prints the ratio.
 *
 *   batch_clients URL CLIENTS CALLS N M DTYPE
 *
 * CLIENTS threads, each with its own connection (its own gpud_client), each
 * making CALLS gpud_call runs of lombscargle: N samples (x, y in the request),
 * the grid f0 = 0.1, df = 0.01, nf = M, method auto (gpud's choice: alone,
 * its cost model's; in a batch, the direct method), the periodogram in the
 * reply; every client's series its own. The threads start together (a barrier) after one
 * warm-up call each. Prints
 *   runs R seconds S runs_per_s T p50_us P p99_us Q
 * (T = R / S over the whole run, P and Q over every call of every client),
 * after checking each client's last result against its first (the same
 * data: to 1e-3 of the maximum in float32, 1e-7 in float64).
 */
#include <gpud/client.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"

typedef struct worker {
	const char *url;
	int index, calls;
	long long n, m;
	gpud_dtype dt;
	pthread_barrier_t *go;
	double *lat; /* calls latencies, µs */
	int failed;
	char err[512];
} worker;

static void fill(worker *w, void *x, void *y)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(w->index + 1);
	for (long long i = 0; i < w->n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		double t = (double)i * 0.37 + (double)(s >> 40) * 1e-7;
		double v = sin(0.7 * t + w->index) + (double)((s >> 20) & 1023) / 4096.0;
		if (w->dt == GPUD_F32) {
			((float *)x)[i] = (float)t;
			((float *)y)[i] = (float)v;
		} else {
			((double *)x)[i] = t;
			((double *)y)[i] = v;
		}
	}
}

/* max |a - b| over max |a|, of m values */
static double max_rel_diff(gpud_dtype dt, const void *a, const void *b, long long m)
{
	double mx = 0, d = 0;
	for (long long i = 0; i < m; i++) {
		double u = dt == GPUD_F32 ? ((const float *)a)[i] : ((const double *)a)[i];
		double v = dt == GPUD_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
		mx = fmax(mx, fabs(u));
		d = fmax(d, fabs(u - v));
	}
	return mx > 0 ? d / mx : d;
}

static void *run(void *arg)
{
	worker *w = arg;
	size_t es = w->dt == GPUD_F32 ? 4 : 8, nb = (size_t)w->n * es;
	void *x = malloc(nb), *y = malloc(nb), *first = malloc((size_t)w->m * es);
	gpud_client *c = NULL;
	if (!x || !y || !first) {
		snprintf(w->err, sizeof(w->err), "out of memory");
		w->failed = 1;
		pthread_barrier_wait(w->go);
		return NULL;
	}
	fill(w, x, y);
	gpud_array ax = {.dtype = w->dt, .ndim = 1, .shape = {w->n}, .data = x, .nbytes = nb},
		   ay = {.dtype = w->dt, .ndim = 1, .shape = {w->n}, .data = y, .nbytes = nb};
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_f64("f0", 0.1), gpud_arg_f64("df", 0.01),
			   gpud_arg_i64("nf", w->m)};
	const size_t nargs = sizeof(args) / sizeof(args[0]);
	gpud_result res;
	size_t nout;
	if (gpud_connect(w->url, &c) != GPUD_OK ||
	    gpud_call(c, "lombscargle", args, nargs, &res, 1, &nout, NULL) != GPUD_OK) {
		snprintf(w->err, sizeof(w->err), "client %d: %s", w->index, gpud_errmsg(c));
		w->failed = 1;
		pthread_barrier_wait(w->go);
		gpud_close(c);
		return NULL;
	}
	memcpy(first, res.array.data, (size_t)w->m * es);
	gpud_array_free(&res.array);
	pthread_barrier_wait(w->go);
	for (int i = 0; i < w->calls && !w->failed; i++) {
		double t0 = harness_now_s();
		if (gpud_call(c, "lombscargle", args, nargs, &res, 1, &nout, NULL) != GPUD_OK) {
			snprintf(w->err, sizeof(w->err), "client %d call %d: %s", w->index, i,
				 gpud_errmsg(c));
			w->failed = 1;
			break;
		}
		w->lat[i] = (harness_now_s() - t0) * 1e6;
		if (i == w->calls - 1) {
			/* the same series must give the same periodogram, to the method's
			 * accuracy (the NUFFT's spreading adds in no fixed order) */
			double d = max_rel_diff(w->dt, first, res.array.data, w->m);
			if (d > (w->dt == GPUD_F32 ? 1e-3 : 1e-7)) {
				snprintf(w->err, sizeof(w->err),
					 "client %d: the last call's result differs from its first "
					 "by %.3g of the maximum",
					 w->index, d);
				w->failed = 1;
			}
		}
		gpud_array_free(&res.array);
	}
	gpud_close(c);
	free(x);
	free(y);
	free(first);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: batch_clients URL CLIENTS CALLS N M float32|float64\n");
		return 2;
	}
	int clients = atoi(argv[2]), calls = atoi(argv[3]);
	long long n = atoll(argv[4]), m = atoll(argv[5]);
	gpud_dtype dt;
	if (!strcmp(argv[6], "float32"))
		dt = GPUD_F32;
	else if (!strcmp(argv[6], "float64"))
		dt = GPUD_F64;
	else {
		fprintf(stderr, "batch_clients: DTYPE must be float32 or float64, got '%s'\n",
			argv[6]);
		return 2;
	}
	if (clients < 1 || clients > 1024 || calls < 1 || n < 1 || m < 1) {
		fprintf(stderr, "batch_clients: CLIENTS (1..1024), CALLS, N and M must be positive "
				"integers\n");
		return 2;
	}
	worker *w = calloc((size_t)clients, sizeof(*w));
	pthread_t *th = calloc((size_t)clients, sizeof(*th));
	double *lat = calloc((size_t)clients * (size_t)calls, sizeof(double));
	pthread_barrier_t go;
	if (!w || !th || !lat)
		return 1;
	pthread_barrier_init(&go, NULL, (unsigned)clients + 1);
	for (int i = 0; i < clients; i++) {
		w[i] = (worker){.url = argv[1],
				.index = i,
				.calls = calls,
				.n = n,
				.m = m,
				.dt = dt,
				.go = &go,
				.lat = lat + (size_t)i * (size_t)calls};
		if (pthread_create(&th[i], NULL, run, &w[i]) != 0) {
			fprintf(stderr, "batch_clients: cannot start thread %d\n", i);
			return 1;
		}
	}
	pthread_barrier_wait(&go);
	double t0 = harness_now_s();
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	double secs = harness_now_s() - t0;
	int bad = 0;
	for (int i = 0; i < clients; i++)
		if (w[i].failed) {
			fprintf(stderr, "batch_clients: %s\n", w[i].err);
			bad = 1;
		}
	if (bad)
		return 1;
	size_t total = (size_t)clients * (size_t)calls;
	printf("runs %zu seconds %.4f runs_per_s %.1f p50_us %.1f p99_us %.1f\n", total, secs,
	       (double)total / secs, harness_median(lat, total),
	       harness_percentile(lat, total, 0.99));
	free(lat);
	free(th);
	free(w);
	return 0;
}
