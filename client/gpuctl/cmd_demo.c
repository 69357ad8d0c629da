/*
 * client/gpuctl/cmd_demo.c — gpuctl demo [--runs N]: lombscargle on the
 * built-in benchmark signal (client/demo.h), float64 and float32, the first
 * call in a new connection and warm calls on it, timed. The frequencies go
 * as the grid f0, df, nf: gpud makes them, nothing is uploaded for them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "client/demo.h"
#include "client/gpuctl/gpuctl.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One whole job on an open client: upload, run, download, free. Returns seconds. */
static double demo_job(gpud_client *c, gpud_dtype dt, const demo_signal *s, void *out,
		       gpud_run_info *info)
{
	uint64_t nx = DEMO_KEPT, nf = DEMO_FREQS;
	size_t es = gpud_dtype_size(dt);
	static float xf[DEMO_KEPT], yf[DEMO_KEPT];
	const void *x = s->x, *y = s->y;
	gpud_handle h[3];
	gpud_output o;
	gpud_status st;
	size_t no;

	if (dt == GPUD_F32) {
		for (int i = 0; i < DEMO_KEPT; i++) {
			xf[i] = (float)s->x[i];
			yf[i] = (float)s->y[i];
		}
		x = xf;
		y = yf;
	}
	double t0 = now_s();
	if ((st = gpud_alloc(c, dt, 1, &nx, x, &h[0])) != GPUD_OK ||
	    (st = gpud_alloc(c, dt, 1, &nx, y, &h[1])) != GPUD_OK)
		die_call(c, st, "demo: upload");
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			   gpud_arg_f64("f0", DEMO_F0), gpud_arg_f64("df", DEMO_DF),
			   gpud_arg_i64("nf", DEMO_FREQS)};
	if ((st = gpud_run(c, "lombscargle", args, 5, &o, 1, &no, info)) != GPUD_OK)
		die_call(c, st, "demo: run");
	h[2] = o.handle;
	if ((st = gpud_download_range(c, o.handle, 0, out, nf * es)) != GPUD_OK)
		die_call(c, st, "demo: download");
	double t = now_s() - t0;
	if ((st = gpud_free(c, h, 3)) != GPUD_OK)
		die_call(c, st, "demo: free");
	return t;
}

int cmd_demo(int argc, char **argv)
{
	int runs = 5;
	demo_signal s;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = (int)parse_count("demo", "--runs", argv[++i], 1, 1000);
		else if (argv[i][0] == '-')
			die_unknown_option("demo", argv[i]);
		else
			die_usage("demo", "unexpected argument '%s'", argv[i]);
	}
	if (demo_signal_make(&s, 42) != 0)
		die(EX_TEMPFAIL, "out of memory");
	void *out = malloc(DEMO_FREQS * sizeof(double));
	double *times = malloc((size_t)runs * sizeof(double));
	if (!out || !times)
		die(EX_TEMPFAIL, "out of memory");

	static const gpud_dtype dtypes[] = {GPUD_F64, GPUD_F32};
	for (int di = 0; di < 2; di++) {
		gpud_dtype dt = dtypes[di];
		/* The first call includes connecting, as a fresh process would. */
		double t0 = now_s();
		gpud_run_info info;
		gpud_client *c = ctl_connect();
		demo_job(c, dt, &s, out, &info);
		double first = now_s() - t0;
		if (di == 0) {
			printf("lombscargle on the built-in signal: %d samples of y = 2 cos(x + pi/2), "
			       "%u frequencies (the grid f0=%g df=%.6g nf=%u)\n",
			       DEMO_KEPT, DEMO_FREQS, DEMO_F0, DEMO_DF, DEMO_FREQS);
			printf("gpud %s at %s, backend %s\n\n", gpud_server(c)->version,
			       gpud_url(c), gpud_server(c)->backend);
			printf("%-8s %10s %14s %22s %14s\n", "dtype", "peak freq", "first call",
			       "warm call (median)", "kernel");
		}
		for (int r = 0; r < runs; r++)
			times[r] = demo_job(c, dt, &s, out, &info);
		qsort(times, (size_t)runs, sizeof(double), cmp_double);
		double warm = times[runs / 2];
		size_t best = 0;
		for (size_t i = 1; i < DEMO_FREQS; i++) {
			double v = dt == GPUD_F64 ? ((double *)out)[i] : ((float *)out)[i];
			double bv = dt == GPUD_F64 ? ((double *)out)[best] : ((float *)out)[best];
			if (v > bv)
				best = i;
		}
		printf("%-8s %10.4f %11.2f ms %13.2f ms (n=%d) %11.2f ms\n", gpud_dtype_name(dt),
		       s.freqs[best], first * 1e3, warm * 1e3, runs, info.kernel_us / 1e3);
		gpud_close(c);
	}
	printf("\nfirst call: connect + upload + run + download in a new connection;\n"
	       "warm call: the same job again on the open connection; kernel: time inside gpud.\n");
	free(out);
	free(times);
	demo_signal_free(&s);
	return 0;
}
