/*
 * bench/fairness.c — a quiet tenant's latency while another tenant loads
 * gpud, and alone, in one run.
 *
 *   fairness GPUD [cuda|cpu] [SECONDS] [flood|long|both]
 *
 * Starts its own gpud on tcp://127.0.0.1 with three tokens.
 *
 * flood (the default): tenant "flood" (32 connections, each running
 * lombscargle jobs back to back: inputs in, run, output back) and tenant
 * "quiet" (one connection: a tiny run on kept buffers, repeated). Prints
 * quiet's p50/p99 alone and under the flood, and the flood's jobs/s.
 *
 * long: tenant "bob" (BOB_CONNS connections, more than one tenant may hold
 * run slots at once on the cpu backend of 2 threads, each running a long
 * lombscargle back to back: 20000 samples x FAIRNESS_LONG_NF frequencies,
 * 500000 by default, minutes each on the cpu backend) and tenant "alice"
 * (one connection: a sum of 10 numbers as one trip, inline array in and the
 * result back, repeated). Prints alice's p50/p99 alone and while bob's long
 * runs run, and how many of bob's runs ended meanwhile (0 on the cpu
 * backend: his runs are still going when alice's are answered). bob's runs
 * in flight at the end are cancelled.
 *
 * long measures FAIRNESS_ROUNDS (3) windows of SECONDS each way and prints
 * the median of the windows' percentiles with their range. Percentiles are
 * ranks of the sorted latencies, rounded down.
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
#define BOB_CONNS 4
#define TOKEN_FLOOD "flood-000000000000000000"
#define TOKEN_QUIET "quiet-111111111111111111"
#define TOKEN_BOB "bob-22222222222222222222"
#define TOKEN_ALICE "alice-333333333333333333"

static char url[64];
static atomic_int stop;
static atomic_long flood_jobs, flood_errors;
static atomic_long bob_started, bob_ended, bob_errors;

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
	harness_sort(t, (size_t)*n); /* ranks rounded down, as for docs/performance.md */
	*p50 = t[(int)(0.5 * (*n - 1))];
	*p99 = t[(int)(0.99 * (*n - 1))];
}

/* --- long: bob's long runs, alice's one-trip sums ---------------------------------------- */

enum { LONG_NX = 20000 };
static size_t long_nf = 500000;

/* One of bob's connections: long lombscargles back to back until stop; the
 * one in flight then is cancelled. */
static void *bob_conn(void *arg)
{
	(void)arg;
	gpud_client *c = connect_token(TOKEN_BOB);
	uint64_t nx = LONG_NX, nf = long_nf;
	double *x = malloc(LONG_NX * sizeof(double)), *f = malloc(long_nf * sizeof(double));
	for (int i = 0; i < LONG_NX; i++)
		x[i] = i * 0.01 + 0.001 * (i % 7);
	for (size_t i = 0; i < long_nf; i++)
		f[i] = 0.1 + (double)i * 1e-4;
	gpud_handle h[3];
	if (gpud_alloc(c, GPUD_F64, 1, &nx, x, &h[0]) ||
	    gpud_alloc(c, GPUD_F64, 1, &nx, x, &h[1]) ||
	    gpud_alloc(c, GPUD_F64, 1, &nf, f, &h[2])) {
		fprintf(stderr, "fairness: bob's inputs: %s\n", gpud_errmsg(c));
		exit(1);
	}
	free(x);
	free(f);
	gpud_arg a[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			gpud_arg_buffer("freqs", h[2])};
	while (!atomic_load(&stop)) {
		gpud_job *j;
		if (gpud_run_async(c, "lombscargle", a, 3, NULL, NULL, &j) != GPUD_OK) {
			atomic_fetch_add(&bob_errors, 1);
			break;
		}
		atomic_fetch_add(&bob_started, 1);
		gpud_status st;
		while ((st = gpud_job_wait(j, 50)) == GPUD_ETIMEDOUT && !atomic_load(&stop))
			;
		if (st == GPUD_ETIMEDOUT) { /* stopping: cancel it */
			gpud_job_cancel(j);
			gpud_job_wait(j, -1);
		} else if (st == GPUD_OK) {
			gpud_output o;
			size_t no;
			if (gpud_job_outputs(j, &o, 1, &no, NULL) == GPUD_OK && no == 1)
				gpud_free(c, &o.handle, 1);
			atomic_fetch_add(&bob_ended, 1);
		} else {
			atomic_fetch_add(&bob_errors, 1);
		}
		gpud_job_free(j);
	}
	gpud_free(c, h, 3);
	gpud_close(c);
	return NULL;
}

/* alice's sums of 10 numbers, one trip each, for seconds: p50, p99 in us. */
static void alice_sums(gpud_client *c, double seconds, double *p50, double *p99, int *n)
{
	static double t[1 << 20];
	double v[10];
	for (int i = 0; i < 10; i++)
		v[i] = i + 1;
	gpud_array arr = {
		.dtype = GPUD_F64, .ndim = 1, .shape = {10}, .data = v, .nbytes = sizeof(v)};
	gpud_arg args[] = {gpud_arg_array("x", &arr)};
	double end = now_us() + seconds * 1e6;
	*n = 0;
	while (now_us() < end && *n < (1 << 20)) {
		gpud_result out;
		size_t no;
		double t0 = now_us();
		if (gpud_call(c, "sum", args, 1, &out, 1, &no, NULL) != GPUD_OK) {
			fprintf(stderr, "fairness: alice's sum: %s\n", gpud_errmsg(c));
			exit(1);
		}
		t[(*n)++] = now_us() - t0;
		double got = *(const double *)out.array.data;
		gpud_array_free(&out.array);
		if (got != 55) {
			fprintf(stderr, "fairness: alice's sum is %g, not 55\n", got);
			exit(1);
		}
	}
	harness_sort(t, (size_t)*n);
	*p50 = t[(int)(0.5 * (*n - 1))];
	*p99 = t[(int)(0.99 * (*n - 1))];
}

/* Until gpud has want of bob's runs in flight (or 30 s). */
static void wait_bob_running(gpud_client *c, long want)
{
	for (int i = 0; i < 3000 && atomic_load(&bob_started) < want; i++)
		usleep(10000);
	gpud_daemon_status *s = malloc(sizeof(*s));
	for (int i = 0; i < 3000; i++) {
		if (gpud_status_get(c, s) == GPUD_OK && s->server.ndevices > 0 &&
		    s->server.devices[0].runs >= (unsigned)want)
			break;
		usleep(10000);
	}
	free(s);
}

#define MAX_ROUNDS 15

/* The median of n values (n odd: the middle one) and their range. */
static void med(const double *v, int n, double *m, double *lo, double *hi)
{
	double t[MAX_ROUNDS];
	memcpy(t, v, (size_t)n * sizeof(double));
	harness_sort(t, (size_t)n);
	*m = t[(n - 1) / 2];
	*lo = t[0];
	*hi = t[n - 1];
}

static void print_row(const char *what, int runs, const double *p50, const double *p99, int rounds)
{
	double m50, l50, h50, m99, l99, h99;
	med(p50, rounds, &m50, &l50, &h50);
	med(p99, rounds, &m99, &l99, &h99);
	printf("   %-30s %8d %10.0f (%6.0f-%6.0f) %10.0f (%6.0f-%6.0f)\n", what, runs, m50, l50,
	       h50, m99, l99, h99);
}

/*
 * rounds windows of alice alone (the baseline), then bob's connections
 * start and, once gpud has their runs, rounds windows of alice beside them.
 */
static int long_mode(const char *backend, double seconds, int rounds)
{
	gpud_client *al = connect_token(TOKEN_ALICE);
	double a50[MAX_ROUNDS], a99[MAX_ROUNDS], b50[MAX_ROUNDS], b99[MAX_ROUNDS], w50, w99;
	int na = 0, nb = 0, n;
	alice_sums(al, 0.5, &w50, &w99, &n); /* warm */
	for (int r = 0; r < rounds; r++) {
		alice_sums(al, seconds, &a50[r], &a99[r], &n);
		na += n;
	}
	pthread_t th[BOB_CONNS];
	for (int i = 0; i < BOB_CONNS; i++)
		pthread_create(&th[i], NULL, bob_conn, NULL);
	wait_bob_running(al, BOB_CONNS);
	gpud_daemon_status *s = malloc(sizeof(*s));
	unsigned slots = gpud_status_get(al, s) == GPUD_OK ? s->server.devices[0].slots : 0;
	long e0 = atomic_load(&bob_ended);
	for (int r = 0; r < rounds; r++) {
		alice_sums(al, seconds, &b50[r], &b99[r], &n);
		nb += n;
	}
	long ended = atomic_load(&bob_ended) - e0;
	atomic_store(&stop, 1);
	for (int i = 0; i < BOB_CONNS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&stop, 0);
	free(s);
	gpud_close(al);
	printf("fairness on %s (backend %s, tcp://127.0.0.1, %u run slots): tenant 'alice' sums 10 "
	       "numbers (one trip: inline in, result back) back to back;\n"
	       "tenant 'bob' has %d connections running lombscargle (%d x %zu, float64, kept "
	       "buffers) back to back\n"
	       "(%d rounds of %.1f s each; medians of the rounds' percentiles, their range in "
	       "parentheses)\n\n",
	       backend, backend, slots, BOB_CONNS, LONG_NX, long_nf, rounds, seconds);
	printf("   %-30s %8s %10s %15s %10s %15s\n", "", "runs", "p50 (us)", "", "p99 (us)", "");
	print_row("alice alone", na, a50, a99, rounds);
	print_row("alice while bob's long runs", nb, b50, b99, rounds);
	printf("   bob: %ld runs started, %ld ended while alice measured, %ld errors\n\n",
	       atomic_load(&bob_started), ended, atomic_load(&bob_errors));
	return atomic_load(&bob_errors) == 0 ? 0 : 1;
}

static int flood_mode(gpud_client *q, const char *backend, double seconds)
{
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
	atomic_store(&stop, 0);
	gpud_free(q, h, 4);
	printf("fairness on %s (backend %s, tcp://127.0.0.1): tenant 'quiet' runs lombscargle "
	       "(8 x 1024, kept buffers) back to back;\n"
	       "tenant 'flood' has %d connections running lombscargle jobs (100 x 65536, inputs in, "
	       "output back) back to back\n\n",
	       backend, backend, FLOODERS);
	printf("   %-30s %8s %12s %12s\n", "", "runs", "p50 (us)", "p99 (us)");
	printf("   %-30s %8d %12.1f %12.1f\n", "quiet alone", na, a50, a99);
	printf("   %-30s %8d %12.1f %12.1f\n", "quiet while flood floods", nb, b50, b99);
	printf("   %-30s %8s %11.1fx %11.1fx\n", "ratio", "", b50 / a50, b99 / a99);
	printf("   flood: %.0f jobs/s, %ld errors\n\n", rate, atomic_load(&flood_errors));
	return atomic_load(&flood_errors) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fairness GPUD [cuda|cpu] [SECONDS] [flood|long|both]\n");
		return 2;
	}
	const char *backend = argc > 2 ? argv[2] : "cuda";
	double seconds = argc > 3 ? atof(argv[3]) : 5;
	const char *mode = argc > 4 ? argv[4] : "flood";
	if (strcmp(mode, "flood") && strcmp(mode, "long") && strcmp(mode, "both")) {
		fprintf(stderr, "fairness: mode '%s': expected flood, long or both\n", mode);
		return 2;
	}
	const char *nf_env = getenv("FAIRNESS_LONG_NF"), *rounds_env = getenv("FAIRNESS_ROUNDS");
	if (nf_env && atol(nf_env) > 0)
		long_nf = (size_t)atol(nf_env);
	int rounds = rounds_env ? atoi(rounds_env) : 3;
	if (rounds < 1 || rounds > MAX_ROUNDS || rounds % 2 == 0) {
		fprintf(stderr, "fairness: FAIRNESS_ROUNDS: an odd number from 1 to %d\n",
			MAX_ROUNDS);
		return 2;
	}
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
	fprintf(f, "flood %s\nquiet %s\nbob %s\nalice %s\n", TOKEN_FLOOD, TOKEN_QUIET, TOKEN_BOB,
		TOKEN_ALICE);
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
	int rv = 0;
	if (strcmp(mode, "long") != 0)
		rv |= flood_mode(q, backend, seconds);
	if (strcmp(mode, "flood") != 0)
		rv |= long_mode(backend, seconds, rounds);
	gpud_close(q);
	harness_gpud_stop(&srv, 60, NULL, 0);
	return harness_gpud_remove(&srv) == 0 ? rv : 1;
}
