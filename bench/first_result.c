/*
 * bench/first_result.c — what gpud saves a fresh process: the wall time from
 * process start to result in hand for lombscargle on the demo signal,
 * `gpuctl run` against a warm gpud versus the standalone in-process program
 * (context, fatbin, alloc, copies, launch), both started fresh each run;
 * plus the kernel's own time inside gpud versus in-process (CUDA events).
 * gpuctl runs twice: with freqs as a .npy file (what the standalone program
 * reads) and with the frequencies as the grid f0, df, nf (nothing to read or
 * upload for them; gpud makes f0 + df k in float64).
 *
 *   first_result GPUD GPUCTL STANDALONE [RUNS]
 *
 * Starts its own gpud (cuda backend) on a temporary socket. Prints medians
 * over RUNS (default 15) fresh processes and the ratios, measured in one run
 * on one device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <gpud/client.h>
#include <gpud/npy.h>

#include "client/demo.h"
#include "tests/harness.h"

static harness_gpud srv; /* its directory holds the inputs and outputs too */

/* fork + exec + wait; returns wall seconds, exits on failure. */
static double timed_run(char *const argv[], const char *capture)
{
	int st = 0;
	double t = harness_run_timed(argv, capture, &st);
	if (t < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "first_result: %s failed (status %d)\n", argv[0], st);
		exit(1);
	}
	return t;
}

static void save(const char *name, gpud_dtype dt, const double *v, size_t n)
{
	char path[256], err[256];
	gpud_array a = {.dtype = dt, .ndim = 1, .shape = {n}, .nbytes = n * gpud_dtype_size(dt)};
	a.data = malloc(a.nbytes);
	for (size_t i = 0; i < n; i++) {
		if (dt == GPUD_F32)
			((float *)a.data)[i] = (float)v[i];
		else
			((double *)a.data)[i] = v[i];
	}
	snprintf(path, sizeof(path), "%s/%s", srv.dir, name);
	if (gpud_npy_save(path, &a, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	gpud_array_free(&a);
}

static double load_at(const char *name, size_t i, gpud_array *a)
{
	char path[256], err[256];
	if (a->data == NULL) {
		snprintf(path, sizeof(path), "%s/%s", srv.dir, name);
		if (gpud_npy_load(path, a, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
	}
	return a->dtype == GPUD_F32 ? (double)((float *)a->data)[i] : ((double *)a->data)[i];
}

/*
 * Kernel time inside gpud: median of reps runs on uploaded inputs, writing
 * into one output buffer as the standalone program does (no allocation
 * between launches on either side).
 */
static double gpud_kernel_us(gpud_dtype dt, const demo_signal *s, int reps)
{
	gpud_client *c;
	gpud_handle h[4];
	uint64_t nx = DEMO_KEPT, nf = DEMO_FREQS;
	size_t es = gpud_dtype_size(dt);
	double *t = malloc((size_t)reps * sizeof(double));
	void *buf = malloc(DEMO_FREQS * es);
	const double *src[3] = {s->x, s->y, s->freqs};
	uint64_t *shape[3] = {&nx, &nx, &nf};

	if (gpud_connect(srv.url, &c) != GPUD_OK) {
		fprintf(stderr, "%s\n", gpud_errmsg(c));
		exit(1);
	}
	for (int i = 0; i < 3; i++) {
		for (uint64_t j = 0; j < *shape[i]; j++) {
			if (dt == GPUD_F32)
				((float *)buf)[j] = (float)src[i][j];
			else
				((double *)buf)[j] = src[i][j];
		}
		if (gpud_alloc(c, dt, 1, shape[i], buf, &h[i]) != GPUD_OK) {
			fprintf(stderr, "%s\n", gpud_errmsg(c));
			exit(1);
		}
	}
	if (gpud_alloc(c, dt, 1, &nf, NULL, &h[3]) != GPUD_OK) {
		fprintf(stderr, "%s\n", gpud_errmsg(c));
		exit(1);
	}
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			   gpud_arg_buffer("freqs", h[2]), gpud_arg_buffer("pgram", h[3])};
	for (int r = 0; r < reps; r++) {
		gpud_output o;
		size_t no;
		gpud_run_info info;
		if (gpud_run(c, "lombscargle", args, 4, &o, 1, &no, &info) != GPUD_OK) {
			fprintf(stderr, "%s\n", gpud_errmsg(c));
			exit(1);
		}
		t[r] = info.kernel_us;
	}
	gpud_close(c);
	double m = harness_median(t, (size_t)reps);
	free(t);
	free(buf);
	return m;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: first_result GPUD GPUCTL STANDALONE [RUNS]\n");
		return 2;
	}
	const char *gpud = argv[1], *gpuctl = argv[2], *standalone = argv[3];
	int runs = argc > 4 ? atoi(argv[4]) : 15;
	demo_signal s;

	harness_gpud_opts gopts = {.bin = gpud,
				   .backend = "cuda",
				   .prefix = "gpud-bench",
				   .timeout_s = 60};
	char msg[1024];
	if (harness_gpud_dir(&srv, &gopts, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "first_result: %s\n", msg);
		return 1;
	}
	if (demo_signal_make(&s, 42) != 0)
		return 1;
	static const gpud_dtype dts[] = {GPUD_F32, GPUD_F64};
	static const char *tag[] = {"f32", "f64"};
	for (int d = 0; d < 2; d++) {
		char n[32];
		snprintf(n, sizeof(n), "x_%s.npy", tag[d]);
		save(n, dts[d], s.x, DEMO_KEPT);
		snprintf(n, sizeof(n), "y_%s.npy", tag[d]);
		save(n, dts[d], s.y, DEMO_KEPT);
		snprintf(n, sizeof(n), "f_%s.npy", tag[d]);
		save(n, dts[d], s.freqs, DEMO_FREQS);
	}

	double t_start = harness_now_s();
	if (harness_gpud_start(&srv, &gopts, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "first_result: %s\n", msg);
		return 1;
	}
	double t_ready = harness_now_s() - t_start;

	gpud_client *c;
	if (gpud_connect(srv.url, &c) != GPUD_OK) {
		fprintf(stderr, "%s\n", gpud_errmsg(c));
		return 1;
	}
	printf("device: %s (sm_%d%d, %d SMs); gpud ready %.0f ms after exec (context + warm-up)\n",
	       gpud_server(c)->devices[0].name, gpud_server(c)->devices[0].cc_major,
	       gpud_server(c)->devices[0].cc_minor, gpud_server(c)->devices[0].sm_count,
	       t_ready * 1e3);
	gpud_close(c);
	printf("job: lombscargle, %d samples, %u frequencies; medians of %d fresh processes\n\n",
	       DEMO_KEPT, DEMO_FREQS, runs);
	printf("%-8s %12s %12s %16s %8s %14s %16s %8s %9s\n", "dtype", "gpuctl file", "gpuctl grid",
	       "standalone (ms)", "ratio", "kernel gpud", "kernel in-proc", "ratio", "peak");

	double trace_ms[2][2] = {{0}};
	double *ta = malloc((size_t)runs * sizeof(double)),
	       *tb = malloc((size_t)runs * sizeof(double)),
	       *tg = malloc((size_t)runs * sizeof(double));
	for (int d = 0; d < 2; d++) {
		char x[256], y[256], f[256], o1[256], o2[256], o3[256], xa[300], ya[300], fa[300],
			kr[32], f0a[64], dfa[64], nfa[64];
		snprintf(x, sizeof(x), "%s/x_%s.npy", srv.dir, tag[d]);
		snprintf(y, sizeof(y), "%s/y_%s.npy", srv.dir, tag[d]);
		snprintf(f, sizeof(f), "%s/f_%s.npy", srv.dir, tag[d]);
		snprintf(o1, sizeof(o1), "%s/out_gpud_%s.npy", srv.dir, tag[d]);
		snprintf(o2, sizeof(o2), "%s/out_alone_%s.npy", srv.dir, tag[d]);
		snprintf(o3, sizeof(o3), "%s/out_grid_%s.npy", srv.dir, tag[d]);
		snprintf(f0a, sizeof(f0a), "f0=%.17g", DEMO_F0);
		snprintf(dfa, sizeof(dfa), "df=%.17g", DEMO_DF);
		snprintf(nfa, sizeof(nfa), "nf=%u", DEMO_FREQS);
		snprintf(xa, sizeof(xa), "x=%s", x);
		snprintf(ya, sizeof(ya), "y=%s", y);
		snprintf(fa, sizeof(fa), "freqs=%s", f);
		char *g_argv[] = {(char *)gpuctl, "--url", srv.url, "run",
				  "lombscargle",  xa,      ya,      fa,
				  "-o",           o1,      NULL};
		char *q_argv[] = {(char *)gpuctl,
				  "--url",
				  srv.url,
				  "run",
				  "lombscargle",
				  xa,
				  ya,
				  f0a,
				  dfa,
				  nfa,
				  "-o",
				  o3,
				  NULL};
		char *s_argv[] = {(char *)standalone, x, y, f, o2, NULL};
		/* Interleave them so drift in the machine hits all alike. */
		for (int r = 0; r < runs; r++) {
			ta[r] = timed_run(g_argv, NULL);
			tg[r] = timed_run(q_argv, NULL);
			tb[r] = timed_run(s_argv, NULL);
		}
		double mg = harness_median(ta, (size_t)runs), ms = harness_median(tb, (size_t)runs),
		       mq = harness_median(tg, (size_t)runs);

		/* The two results must agree, and peak near 1 rad/s. */
		gpud_array A = {0}, B = {0}, G = {0};
		double maxv = 0, maxe = 0, maxg = 0;
		size_t best = 0;
		for (size_t i = 0; i < DEMO_FREQS; i++) {
			double a = load_at(strrchr(o1, '/') + 1, i, &A);
			double b = load_at(strrchr(o2, '/') + 1, i, &B);
			double g = load_at(strrchr(o3, '/') + 1, i, &G);
			if (fabs(b) > maxv)
				maxv = fabs(b);
			if (fabs(a - b) > maxe)
				maxe = fabs(a - b);
			if (fabs(g - b) > maxg)
				maxg = fabs(g - b);
			if (a > load_at(NULL, best, &A))
				best = i;
		}
		gpud_array_free(&A);
		gpud_array_free(&B);
		gpud_array_free(&G);
		/* the grid is float64 where the float32 file rounds the frequencies */
		double gtol = dts[d] == GPUD_F32 ? 1e-4 : 1e-6;
		if (maxe > 1e-6 * maxv || maxg > gtol * maxv) {
			fprintf(stderr,
				"first_result: gpud and standalone disagree: file %.3g, grid %.3g "
				"of %.3g\n",
				maxe, maxg, maxv);
			return 1;
		}

		/* Where a fresh process's time goes: one more of each with gpuctl -v. */
		for (int g = 0; g < 2; g++) {
			char line[4096], cap[300], buf[1];
			snprintf(cap, sizeof(cap), "%s/trace_%s_%d.txt", srv.dir, tag[d], g);
			if (g == 0)
				snprintf(
					line, sizeof(line),
					"'%s' -v --url '%s' run lombscargle '%s' '%s' '%s' -o '%s' 2>'%s'",
					gpuctl, srv.url, xa, ya, fa, o1, cap);
			else
				snprintf(
					line, sizeof(line),
					"'%s' -v --url '%s' run lombscargle '%s' '%s' %s %s %s -o '%s' 2>'%s'",
					gpuctl, srv.url, xa, ya, f0a, dfa, nfa, o3, cap);
			char *sh_argv[] = {"/bin/sh", "-c", line, NULL};
			trace_ms[d][g] = timed_run(sh_argv, NULL) * 1e3;
			(void)buf;
		}

		/* Kernel time: events inside gpud vs in the standalone program. */
		double kg = gpud_kernel_us(dts[d], &s, 51);
		snprintf(kr, sizeof(kr), "51");
		char cap[300];
		snprintf(cap, sizeof(cap), "%s/kernel_%s.txt", srv.dir, tag[d]);
		char *k_argv[] = {(char *)standalone, x, y, f, o2, "--kernel-reps", kr, NULL};
		timed_run(k_argv, cap);
		FILE *fp = fopen(cap, "r");
		double ki = 0;
		if (fp == NULL || fscanf(fp, "kernel_us %lf", &ki) != 1) {
			fprintf(stderr,
				"first_result: no kernel time from the standalone program\n");
			return 1;
		}
		fclose(fp);
		printf("%-8s %9.2f ms %9.2f ms %16.2f %7.1fx %11.1f us %13.1f us %7.3f %9.4f\n",
		       gpud_dtype_name(dts[d]), mg * 1e3, mq * 1e3, ms * 1e3, ms / mg, kg, ki,
		       kg / ki, s.freqs[best]);
	}
	printf("\nwhere a fresh gpuctl's time goes (one more run each, gpuctl -v, ms since start):\n");
	for (int d = 0; d < 2; d++)
		for (int g = 0; g < 2; g++) {
			char cap[300], buf[512];
			snprintf(cap, sizeof(cap), "%s/trace_%s_%d.txt", srv.dir, tag[d], g);
			printf("  %s, freqs as %s (%.2f ms from fork to exit, through /bin/sh):\n",
			       gpud_dtype_name(dts[d]), g ? "a grid" : "a file", trace_ms[d][g]);
			FILE *tf = fopen(cap, "r");
			while (tf && fgets(buf, sizeof(buf), tf))
				printf("    %s", buf);
			if (tf)
				fclose(tf);
		}
	/* The floors under a fresh gpuctl, same run: the program's own exec,
	 * dynamic loading and exit (no connection), and connect + hello + one
	 * request (a status) + close + exit (nng starts its threads there). */
	{
		char *v_argv[] = {(char *)gpuctl, "--version", NULL};
		char *s_argv[] = {(char *)gpuctl, "--url", srv.url, "status", NULL};
		char cap[300];
		snprintf(cap, sizeof(cap), "%s/floor.txt", srv.dir);
		for (int r = 0; r < runs; r++) {
			ta[r] = timed_run(v_argv, cap);
			tb[r] = timed_run(s_argv, cap);
		}
		printf("\nfloors (medians of %d fresh processes): gpuctl --version %.2f ms (exec, "
		       "loading, exit); gpuctl status %.2f ms (+ connect, hello, one request, "
		       "close)\n",
		       runs, harness_median(ta, (size_t)runs) * 1e3,
		       harness_median(tb, (size_t)runs) * 1e3);
	}
	printf("\nratio: standalone / gpuctl with the file (higher is better for gpud); kernel "
	       "ratio: gpud / in-process (1.0 = no overhead)\n");
	int stopped = harness_gpud_stop(&srv, 60, msg, sizeof(msg));
	if (stopped != 0)
		fprintf(stderr, "first_result: %s\n", msg);
	if (harness_gpud_remove(&srv) != 0)
		return 1;
	free(ta);
	free(tb);
	free(tg);
	demo_signal_free(&s);
	return stopped == 0 ? 0 : 1;
}
