/*
 * bench/fairness.c — one tenant floods gpud, another runs small jobs: the
 * second one's latency alone and during the flood, in one run.
 *
 *   fairness GPUD [cuda|cpu] [SECONDS]
 *
 * Starts its own gpud on tcp://127.0.0.1 with two tokens: tenant "flood"
 * (32 connections, each running lombscargle jobs back to back: inputs in,
 * run, output back) and tenant "quiet" (one connection: a tiny run on kept
 * buffers, repeated). Prints quiet's p50/p99 alone and under the flood, and
 * the flood's jobs/s.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpud/client.h>

#include "tests/harness.h"

#define FLOODERS 32
#define TOKEN_FLOOD "flood-000000000000000000"
#define TOKEN_QUIET "quiet-111111111111111111"

static char url[64];
static atomic_int stop;
static atomic_long flood_jobs, flood_errors;

static double now_us(void)
{
	return harness_now_s() * 1e6;
}

static gpud_client *connect_token(const char *token)
{
	gpud_client *c;
	setenv("GPUD_TOKEN", token, 1);
	gpud_status st = gpud_connect(url, &c);
	if (st != GPUD_OK) {
		fprintf(stderr, "fairness: connect: %s\n", gpud_errmsg(c));
		exit(1);
	}
	gpud_set_timeout(c, 60000);
	return c;
}

static void *flooder(void *arg)
{
	(void)arg;
	enum { NX = 100, NF = 65536 };
	static float x[NX], y[NX], f[NF];
	for (int i = 0; i < NX; i++) {
		x[i] = (float)i * 0.37f;
		y[i] = (float)((i * 7) % 11) - 5.0f + 0.5f;
	}
	for (int i = 0; i < NF; i++)
		f[i] = 0.01f + (float)i * 1e-4f;
	gpud_client *c = connect_token(TOKEN_FLOOD);
	gpud_array
		ax = {.dtype = GPUD_F32, .ndim = 1, .shape = {NX}, .data = x, .nbytes = sizeof(x)},
		ay = {.dtype = GPUD_F32, .ndim = 1, .shape = {NX}, .data = y, .nbytes = sizeof(y)},
		af = {.dtype = GPUD_F32, .ndim = 1, .shape = {NF}, .data = f, .nbytes = sizeof(f)};
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_array("freqs", &af)};
	while (!atomic_load(&stop)) {
		gpud_result out;
		size_t no;
		if (gpud_call(c, "lombscargle", args, 3, &out, 1, &no, NULL) == GPUD_OK) {
			gpud_array_free(&out.array);
			atomic_fetch_add(&flood_jobs, 1);
		} else {
			atomic_fetch_add(&flood_errors, 1);
		}
	}
	gpud_close(c);
	return NULL;
}

/* quiet's tiny runs for seconds: p50 and p99 in us. */
static void quiet_runs(gpud_client *c, gpud_handle *h, double seconds, double *p50, double *p99,
		       int *n)
{
	static double t[1 << 20];
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			   gpud_arg_buffer("freqs", h[2]), gpud_arg_buffer("pgram", h[3])};
	double end = now_us() + seconds * 1e6;
	*n = 0;
	while (now_us() < end && *n < (1 << 20)) {
		gpud_output o;
		size_t no;
		double t0 = now_us();
		if (gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL) != GPUD_OK) {
			fprintf(stderr, "fairness: quiet run: %s\n", gpud_errmsg(c));
			exit(1);
		}
		t[(*n)++] = now_us() - t0;
	}
	harness_sort(t, (size_t)*n); /* ranks rounded down, as for README */
	*p50 = t[(int)(0.5 * (*n - 1))];
	*p99 = t[(int)(0.99 * (*n - 1))];
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fairness GPUD [cuda|cpu] [SECONDS]\n");
		return 2;
	}
	const char *backend = argc > 2 ? argv[2] : "cuda";
	double seconds = argc > 3 ? atof(argv[3]) : 5;
	char conf[600], tokens[300], msg[1024];
	harness_gpud srv = {0};
	harness_gpud_opts o = {.bin = argv[1],
			       .backend = backend,
			       .listen = url,
			       .prefix = "gpud-fairness",
			       .timeout_s = 30};
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", 30000 + (int)(getpid() % 20000));
	if (harness_gpud_dir(&srv, &o, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "fairness: %s\n", msg);
		return 1;
	}
	snprintf(tokens, sizeof(tokens), "%s/tokens", srv.dir);
	FILE *f = fopen(tokens, "w");
	fprintf(f, "flood %s\nquiet %s\n", TOKEN_FLOOD, TOKEN_QUIET);
	fclose(f);
	chmod(tokens, 0600); /* gpud refuses a tokens_file others may read */
	snprintf(conf, sizeof(conf), "[gpud]\ntokens_file = %s\n", tokens);
	o.config = conf;
	gpud_client *q = NULL;
	setenv("GPUD_TOKEN", TOKEN_QUIET, 1); /* the harness's hello needs a token too */
	if (harness_gpud_start(&srv, &o, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "fairness: gpud did not start (%s)\n", msg);
		return 1;
	}
	if (gpud_connect(url, &q) != GPUD_OK) {
		fprintf(stderr, "fairness: connect: %s\n", gpud_errmsg(q));
		return 1;
	}
	enum { NX = 8, NF = 1024 };
	float x[NX], y[NX], fr[NF];
	for (int i = 0; i < NX; i++) {
		x[i] = (float)i * 1.3f;
		y[i] = (float)(i % 3) - 0.7f;
	}
	for (int i = 0; i < NF; i++)
		fr[i] = 0.05f + (float)i * 0.01f;
	uint64_t nx = NX, nf = NF;
	gpud_handle h[4];
	if (gpud_alloc(q, GPUD_F32, 1, &nx, x, &h[0]) ||
	    gpud_alloc(q, GPUD_F32, 1, &nx, y, &h[1]) ||
	    gpud_alloc(q, GPUD_F32, 1, &nf, fr, &h[2]) ||
	    gpud_alloc(q, GPUD_F32, 1, &nf, NULL, &h[3])) {
		fprintf(stderr, "fairness: alloc: %s\n", gpud_errmsg(q));
		return 1;
	}
	double a50, a99, b50, b99;
	int na, nb;
	quiet_runs(q, h, 0.5, &a50, &a99, &na); /* warm */
	quiet_runs(q, h, seconds, &a50, &a99, &na);
	pthread_t th[FLOODERS];
	for (int i = 0; i < FLOODERS; i++)
		pthread_create(&th[i], NULL, flooder, NULL);
	usleep(300000);
	long j0 = atomic_load(&flood_jobs);
	double t0 = now_us();
	quiet_runs(q, h, seconds, &b50, &b99, &nb);
	double rate = (double)(atomic_load(&flood_jobs) - j0) / ((now_us() - t0) / 1e6);
	atomic_store(&stop, 1);
	for (int i = 0; i < FLOODERS; i++)
		pthread_join(th[i], NULL);
	gpud_close(q);
	printf("fairness on %s (backend %s, tcp://127.0.0.1): tenant 'quiet' runs lombscargle "
	       "(8 x 1024, kept buffers) back to back;\n"
	       "tenant 'flood' has %d connections running lombscargle jobs (100 x 65536, inputs in, "
	       "output back) back to back\n\n",
	       backend, backend, FLOODERS);
	printf("   %-30s %8s %12s %12s\n", "", "runs", "p50 (us)", "p99 (us)");
	printf("   %-30s %8d %12.1f %12.1f\n", "quiet alone", na, a50, a99);
	printf("   %-30s %8d %12.1f %12.1f\n", "quiet while flood floods", nb, b50, b99);
	printf("   %-30s %8s %11.1fx %11.1fx\n", "ratio", "", b50 / a50, b99 / a99);
	printf("   flood: %.0f jobs/s, %ld errors\n", rate, atomic_load(&flood_errors));
	harness_gpud_stop(&srv, 60, NULL, 0);
	return harness_gpud_remove(&srv) == 0 && atomic_load(&flood_errors) == 0 ? 0 : 1;
}
