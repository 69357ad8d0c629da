/*
 * bench/lombscargle.c — lombscargle's kernel time in gpud, every variant, for
 * the side-by-side with the CuPy peer (../shared/anchors/lombscargle_peers.py
 * `inproc`, run by `make bench-lombscargle` in the same call on the same
 * device).
 *
 *   lombscargle GPUD [REPS] [NX] [NF]
 *
 * Starts its own gpud (cuda backend). The signal is the peers': NX sample
 * times uniform on [0.01, 10 pi] (sorted), y = 2 cos(x + pi/2), NF angular
 * frequencies evenly spaced on [0.01, 10] — as an uploaded array, or as the
 * grid f0 = 0.01, df = (10 - 0.01) / (NF - 1), nf = NF. For each dtype,
 * frequency form and mode (plain; weights; floating_mean; amplitude; all
 * three) it runs REPS times after two warm-up runs and prints the median of
 * gpud's kernel time (CUDA events around the launch: RunResponse.kernel_us)
 * and its ratio to the plain mode. Accuracy: the float32 results of the
 * plain mode against float64's on the same (float32-rounded) inputs, max
 * |error| over max |value| (every input is float32-rounded for both dtypes,
 * so the difference is the kernels' alone).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpud/client.h>

#include "tests/harness.h"

static gpud_client *c;

static void die(const char *what)
{
	fprintf(stderr, "lombscargle bench: %s: %s\n", what, gpud_errmsg(c));
	exit(1);
}

static gpud_handle upload(gpud_dtype dt, const double *v, uint64_t n)
{
	size_t es = gpud_dtype_size(dt);
	void *buf = malloc(n * es);
	gpud_handle h;
	for (uint64_t i = 0; i < n; i++) {
		if (dt == GPUD_F32)
			((float *)buf)[i] = (float)v[i];
		else
			((double *)buf)[i] = v[i];
	}
	if (gpud_alloc(c, dt, 1, &n, buf, &h) != GPUD_OK)
		die("upload");
	free(buf);
	return h;
}

enum { PLAIN, WEIGHTS, FLOATING, AMPLITUDE, ALL, NMODES };
static const char *const mode_names[] = {"plain", "weights", "floating_mean", "amplitude",
					 "all three"};

/* Median kernel µs of lombscargle; the output's handle in *out (kept). */
static double time_run(gpud_dtype dt, const gpud_handle in[4], int grid, int mode, uint64_t nf,
		       int reps, gpud_handle *out)
{
	gpud_arg args[12];
	size_t na = 0;
	args[na++] = gpud_arg_buffer("x", in[0]);
	args[na++] = gpud_arg_buffer("y", in[1]);
	if (grid) {
		args[na++] = gpud_arg_f64("f0", 0.01);
		args[na++] = gpud_arg_f64("df", (10.0 - 0.01) / (double)(nf - 1));
		args[na++] = gpud_arg_i64("nf", (int64_t)nf);
	} else {
		args[na++] = gpud_arg_buffer("freqs", in[2]);
	}
	if (mode == WEIGHTS || mode == ALL)
		args[na++] = gpud_arg_buffer("weights", in[3]);
	if (mode == FLOATING || mode == ALL)
		args[na++] = gpud_arg_bool("floating_mean", 1);
	if (mode == AMPLITUDE || mode == ALL)
		args[na++] = gpud_arg_text("normalize", "amplitude");
	double *t = malloc((size_t)reps * sizeof(double));
	for (int r = -2; r < reps; r++) {
		gpud_output o;
		size_t no;
		gpud_run_info info;
		if (gpud_run(c, "lombscargle", args, na, &o, 1, &no, &info) != GPUD_OK)
			die("run");
		if (r >= 0)
			t[r] = info.kernel_us;
		if (r + 1 < reps)
			gpud_free(c, &o.handle, 1);
		else
			*out = o.handle;
	}
	double m = harness_median(t, (size_t)reps);
	free(t);
	return m;
}

static double *fetch(gpud_dtype dt, gpud_handle h, uint64_t n)
{
	size_t es = gpud_dtype_size(dt);
	void *buf = malloc(n * es);
	double *v = malloc(n * sizeof(double));
	if (gpud_download_range(c, h, 0, buf, n * es) != GPUD_OK)
		die("download");
	for (uint64_t i = 0; i < n; i++)
		v[i] = dt == GPUD_F32 ? (double)((float *)buf)[i] : ((double *)buf)[i];
	free(buf);
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: lombscargle GPUD [REPS] [NX] [NF]\n");
		return 2;
	}
	int reps = argc > 2 ? atoi(argv[2]) : 20;
	uint64_t nx = argc > 3 ? strtoull(argv[3], NULL, 10) : 114;
	uint64_t nf = argc > 4 ? strtoull(argv[4], NULL, 10) : (1u << 20);
	harness_gpud srv;
	memset(&srv, 0, sizeof(srv));
	harness_gpud_opts gopts = {.bin = argv[1],
				   .backend = "cuda",
				   .prefix = "gpud-bench-ls",
				   .timeout_s = 120};
	char msg[1024];
	if (harness_gpud_start(&srv, &gopts, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "lombscargle bench: %s\n", msg);
		return 1;
	}
	if (gpud_connect(srv.url, &c) != GPUD_OK)
		die("connect");
	const gpud_server_info *si = gpud_server(c);
	printf("device: %s (sm_%d%d, %d SMs); lombscargle, %llu samples x %llu frequencies; "
	       "median kernel time of %d runs (CUDA events in gpud)\n\n",
	       si->devices[0].name, si->devices[0].cc_major, si->devices[0].cc_minor,
	       si->devices[0].sm_count, (unsigned long long)nx, (unsigned long long)nf, reps);

	uint64_t rng = 12345;
	double *x = malloc(nx * sizeof(double)), *y = malloc(nx * sizeof(double));
	double *w = malloc(nx * sizeof(double)), *f = malloc(nf * sizeof(double));
	for (uint64_t i = 0; i < nx; i++)
		x[i] = 0.01 + (10 * M_PI - 0.01) * harness_rng_unit(&rng);
	harness_sort(x, nx);
	for (uint64_t i = 0; i < nx; i++) {
		y[i] = 2.0 * cos(x[i] + 0.5 * M_PI);
		w[i] = 0.5 + harness_rng_unit(&rng);
	}
	for (uint64_t i = 0; i < nf; i++)
		f[i] = (float)(0.01 + (10.0 - 0.01) * (double)i / (double)(nf - 1));
	/* both dtypes get the same values: float32's */
	for (uint64_t i = 0; i < nx; i++) {
		x[i] = (float)x[i];
		y[i] = (float)y[i];
		w[i] = (float)w[i];
	}

	static const gpud_dtype dts[] = {GPUD_F32, GPUD_F64};
	printf("%-8s %-6s %-14s %12s %9s\n", "dtype", "freqs", "mode", "kernel_us", "/plain");
	double *res[2][2] = {{NULL, NULL}, {NULL, NULL}};
	for (int d = 0; d < 2; d++) {
		gpud_handle in[4] = {upload(dts[d], x, nx), upload(dts[d], y, nx),
				     upload(dts[d], f, nf), upload(dts[d], w, nx)};
		for (int grid = 0; grid < 2; grid++) {
			double plain = 0;
			for (int m = 0; m < NMODES; m++) {
				gpud_handle out;
				double us = time_run(dts[d], in, grid, m, nf, reps, &out);
				if (m == PLAIN) {
					plain = us;
					res[d][grid] = fetch(dts[d], out, nf);
				}
				gpud_free(c, &out, 1);
				printf("%-8s %-6s %-14s %12.1f %9.2f\n", gpud_dtype_name(dts[d]),
				       grid ? "grid" : "array", mode_names[m], us, us / plain);
				fflush(stdout);
			}
		}
		gpud_free(c, in, 4);
	}
	/* float32 against float64 (both gpud): the float32 kernels' accuracy */
	printf("\n");
	for (int grid = 0; grid < 2; grid++) {
		double maxref = 0, maxerr = 0;
		for (uint64_t i = 0; i < nf; i++) {
			maxref = fmax(maxref, fabs(res[1][grid][i]));
			maxerr = fmax(maxerr, fabs(res[0][grid][i] - res[1][grid][i]));
		}
		printf("float32 %s vs float64: max |error| / max |value| = %.2e\n",
		       grid ? "grid " : "array", maxerr / maxref);
	}
	double gd = 0, gm = 0;
	for (uint64_t i = 0; i < nf; i++) {
		gm = fmax(gm, fabs(res[1][0][i]));
		gd = fmax(gd, fabs(res[1][1][i] - res[1][0][i]));
	}
	printf("float64 grid vs float64 array: max |difference| / max |value| = %.2e\n", gd / gm);
	gpud_close(c);
	harness_gpud_stop(&srv, 30, msg, sizeof(msg));
	harness_gpud_remove(&srv);
	return 0;
}
