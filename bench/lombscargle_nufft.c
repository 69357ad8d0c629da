/*
 * bench/lombscargle_nufft.c — lombscargle's grid form in gpud, method=direct
 * against method=nufft, warm, as a client sees it: upload x and y, run, and
 * download the periodogram (gpud_alloc with the data, gpud_run,
 * gpud_download_range, gpud_free), timed on the client's clock; with gpud's
 * kernel time (RunResponse.kernel_us) beside it.
 *
 *   lombscargle_nufft GPUD [REPS] [SIZES]
 *
 * Starts its own gpud (cuda backend). SIZES: "N:M,N:M,..." (default the
 * issue's: N = 10^3, 10^4, 10^5 by M = 10^5, 10^6, 10^7, and 10^4 by 2^20).
 * The signal is the CuPy peer's (../shared/anchors/lombscargle_peers.py with
 * LS_SAMPLES=N): N sample times uniform on [0.01, 10 pi] (sorted),
 * y = 2 cos(x + pi/2), the grid f0 = 0.01, df = (10 - 0.01) / (M - 1), both
 * dtypes given the same float32-rounded values. Per size and dtype: REPS runs
 * after a warm-up (direct: fewer where one run takes over a second), the
 * median and the range; errors, max |error| / max |value| against float64
 * direct: the NUFFT's (eps default) and float32 direct's.
 *
 * "nufft, host mem": the same NUFFT runs with x, y and the periodogram in
 * memory from gpud_host_alloc (lent by gpud over ipc://, page-locked): the
 * library then moves them as host-region copies instead of through
 * messages and fresh malloc pages, the path docs/user-guide.md's "Moving bulk data"
 * recommends for large arrays. Its inputs are copied there once per size.
 *
 * BATCH=B (environment): per size also the NUFFT on a batch of B series
 * sharing x, one run against B runs of one series (batch_bench).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpud/client.h>

#include "tests/harness.h"

static gpud_client *c;
/* gpud_host_alloc memory for the host-mem runs: x, y and the result */
static void *hx, *hy, *hres;

static void die(const char *what)
{
	fprintf(stderr, "lombscargle_nufft bench: %s: %s\n", what, gpud_errmsg(c));
	exit(1);
}

typedef struct timing {
	double med, lo, hi; /* ms, client's clock */
	double kus;         /* median kernel µs */
	int reps;
} timing;

/* One run with the client's transfers: the result (as doubles) into res if
 * not NULL. host: x, y and the result in hx, hy, hres (gpud_host_alloc). */
static double one(gpud_dtype dt, const void *x, const void *y, uint64_t n, uint64_t m,
		  const char *method, int host, double *kus, double *res)
{
	if (host) {
		x = hx;
		y = hy;
	}
	double t0 = harness_now_s();
	gpud_handle h[2];
	if (gpud_alloc(c, dt, 1, &n, x, &h[0]) != GPUD_OK ||
	    gpud_alloc(c, dt, 1, &n, y, &h[1]) != GPUD_OK)
		die("upload");
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]),
			   gpud_arg_buffer("y", h[1]),
			   gpud_arg_f64("f0", 0.01),
			   gpud_arg_f64("df", (10.0 - 0.01) / (double)(m - 1)),
			   gpud_arg_i64("nf", (int64_t)m),
			   gpud_arg_text("method", method)};
	gpud_output o;
	size_t no;
	gpud_run_info info;
	if (gpud_run(c, "lombscargle", args, 6, &o, 1, &no, &info) != GPUD_OK)
		die("run");
	size_t es = gpud_dtype_size(dt);
	void *buf = host ? hres : malloc(m * es);
	if (buf == NULL || gpud_download_range(c, o.handle, 0, buf, m * es) != GPUD_OK)
		die("download");
	gpud_free(c, h, 2);
	gpud_free(c, &o.handle, 1);
	double t = (harness_now_s() - t0) * 1e3;
	*kus = info.kernel_us;
	if (res)
		for (uint64_t i = 0; i < m; i++)
			res[i] = dt == GPUD_F32 ? (double)((float *)buf)[i] : ((double *)buf)[i];
	if (!host)
		free(buf);
	return t;
}

static timing time_it(gpud_dtype dt, const void *x, const void *y, uint64_t n, uint64_t m,
		      const char *method, int host, int reps, double *res)
{
	double kus, t[64], k[64];
	timing r;
	double first = one(dt, x, y, n, m, method, host, &kus, res); /* warm-up, and the result */
	if (first > 1000 && reps > 3)
		reps = 3;
	if (reps > 64)
		reps = 64;
	for (int i = 0; i < reps; i++)
		t[i] = one(dt, x, y, n, m, method, host, &k[i], NULL);
	r.reps = reps;
	r.kus = harness_median(k, (size_t)reps);
	r.med = harness_median(t, (size_t)reps);
	r.lo = r.hi = t[0];
	for (int i = 1; i < reps; i++) {
		r.lo = fmin(r.lo, t[i]);
		r.hi = fmax(r.hi, t[i]);
	}
	return r;
}

/* A batch run: y (nb, n) on one x, the NUFFT, transfers included; its ms, kernel µs in kus. */
static double one_batch(gpud_dtype dt, const void *x, const void *yb, uint64_t n, uint64_t nb,
			uint64_t m, double *kus)
{
	double t0 = harness_now_s();
	gpud_handle h[2];
	uint64_t shape[2] = {nb, n};
	if (gpud_alloc(c, dt, 1, &n, x, &h[0]) != GPUD_OK ||
	    gpud_alloc(c, dt, 2, shape, yb, &h[1]) != GPUD_OK)
		die("upload (batch)");
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]),
			   gpud_arg_buffer("y", h[1]),
			   gpud_arg_f64("f0", 0.01),
			   gpud_arg_f64("df", (10.0 - 0.01) / (double)(m - 1)),
			   gpud_arg_i64("nf", (int64_t)m),
			   gpud_arg_text("method", "nufft")};
	gpud_output o;
	size_t no;
	gpud_run_info info;
	if (gpud_run(c, "lombscargle", args, 6, &o, 1, &no, &info) != GPUD_OK)
		die("run (batch)");
	size_t bytes = nb * m * gpud_dtype_size(dt);
	void *buf = malloc(bytes);
	if (buf == NULL || gpud_download_range(c, o.handle, 0, buf, bytes) != GPUD_OK)
		die("download (batch)");
	free(buf);
	gpud_free(c, h, 2);
	gpud_free(c, &o.handle, 1);
	*kus = info.kernel_us;
	return (harness_now_s() - t0) * 1e3;
}

/*
 * BATCH=B: the NUFFT on B series sharing x (y of B rows: the signal times
 * 1 + b/B), one run, against B runs of one series each: medians of reps
 * (client ms with transfers, and kernel µs).
 */
static void batch_bench(gpud_dtype dt, const double *xd, const double *yd, uint64_t n, uint64_t m,
			uint64_t nb, int reps)
{
	size_t es = gpud_dtype_size(dt);
	void *x = malloc(n * es), *yb = malloc(nb * n * es);
	for (uint64_t i = 0; i < n; i++) {
		if (dt == GPUD_F32)
			((float *)x)[i] = (float)xd[i];
		else
			((double *)x)[i] = xd[i];
	}
	for (uint64_t b = 0; b < nb; b++)
		for (uint64_t i = 0; i < n; i++) {
			double v = yd[i] * (1 + (double)b / (double)nb);
			if (dt == GPUD_F32)
				((float *)yb)[b * n + i] = (float)v;
			else
				((double *)yb)[b * n + i] = v;
		}
	double kus, t[64], k[64], ts[64], ks[64];
	if (reps > 64)
		reps = 64;
	one_batch(dt, x, yb, n, nb, m, &kus); /* warm-up */
	one(dt, x, yb, n, m, "nufft", 0, &kus, NULL);
	for (int r = 0; r < reps; r++) {
		t[r] = one_batch(dt, x, yb, n, nb, m, &k[r]);
		ts[r] = ks[r] = 0;
		for (uint64_t b = 0; b < nb; b++) {
			ts[r] += one(dt, x, (char *)yb + b * n * es, n, m, "nufft", 0, &kus, NULL);
			ks[r] += kus;
		}
	}
	double bk = harness_median(k, (size_t)reps), sk = harness_median(ks, (size_t)reps);
	double bt = harness_median(t, (size_t)reps), st = harness_median(ts, (size_t)reps);
	printf("batch %-7s N=%llu M=%llu B=%llu: one run %.2f ms [kernel %.0f us], %llu runs of "
	       "one series %.2f ms [kernel %.0f us]: %.1fx (kernel %.1fx), median of %d\n",
	       gpud_dtype_name(dt), (unsigned long long)n, (unsigned long long)m,
	       (unsigned long long)nb, bt, bk, (unsigned long long)nb, st, sk, st / bt, sk / bk,
	       reps);
	fflush(stdout);
	free(x);
	free(yb);
}

static double rel_err(const double *a, const double *ref, uint64_t m)
{
	double big = 0, err = 0;
	for (uint64_t i = 0; i < m; i++) {
		big = fmax(big, fabs(ref[i]));
		err = fmax(err, fabs(a[i] - ref[i]));
	}
	return err / big;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: lombscargle_nufft GPUD [REPS] [N:M,...]\n");
		return 2;
	}
	int reps = argc > 2 ? atoi(argv[2]) : 10;
	const char *sizes = argc > 3 ? argv[3]
				     : "1000:100000,1000:1000000,1000:10000000,10000:100000,"
				       "10000:1048576,10000:1000000,10000:10000000,100000:100000,"
				       "100000:1000000,100000:10000000";
	harness_gpud srv;
	memset(&srv, 0, sizeof(srv));
	harness_gpud_opts gopts = {.bin = argv[1],
				   .backend = "cuda",
				   .prefix = "gpud-bench-nufft",
				   .timeout_s = 120};
	char msg[1024];
	if (harness_gpud_start(&srv, &gopts, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "lombscargle_nufft bench: %s\n", msg);
		return 1;
	}
	if (gpud_connect(srv.url, &c) != GPUD_OK)
		die("connect");
	const gpud_server_info *si = gpud_server(c);
	printf("device: %s (sm_%d%d, %d SMs); lombscargle grid, warm, client transfers included "
	       "(upload x, y; run; download pgram); ms: median [min, max] of REPS runs; kernel: "
	       "gpud's median kernel_us\n\n",
	       si->devices[0].name, si->devices[0].cc_major, si->devices[0].cc_minor,
	       si->devices[0].sm_count);
	printf("%-7s %7s %9s | %-27s %9s | %-27s %9s | %8s | %-27s | %9s %9s\n", "dtype", "N", "M",
	       "direct ms", "kernel_us", "nufft ms", "kernel_us", "speedup", "nufft, host mem ms",
	       "nufft err", "f32dir err");
	fflush(stdout);
	const char *p = sizes;
	while (*p) {
		uint64_t n = strtoull(p, (char **)&p, 10), m = 0;
		if (*p == ':')
			m = strtoull(p + 1, (char **)&p, 10);
		if (*p == ',')
			p++;
		if (n == 0 || m < 2)
			break;
		uint64_t rng = 12345;
		double *xd = malloc(n * sizeof(double)), *yd = malloc(n * sizeof(double));
		float *xf = malloc(n * sizeof(float)), *yf = malloc(n * sizeof(float));
		for (uint64_t i = 0; i < n; i++)
			xd[i] = 0.01 + (10 * M_PI - 0.01) * harness_rng_unit(&rng);
		harness_sort(xd, n);
		for (uint64_t i = 0; i < n; i++) {
			xf[i] = (float)xd[i];
			yf[i] = (float)(2.0 * cos(xd[i] + 0.5 * M_PI));
			xd[i] = xf[i];
			yd[i] = yf[i];
		}
		double *ref = malloc(m * sizeof(double)), *got = malloc(m * sizeof(double));
		double *f32d = malloc(m * sizeof(double));
		hx = gpud_host_alloc(c, n * sizeof(double));
		hy = gpud_host_alloc(c, n * sizeof(double));
		hres = gpud_host_alloc(c, m * sizeof(double));
		if (hx == NULL || hy == NULL || hres == NULL)
			die("gpud_host_alloc");
		static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
		for (int d = 0; d < 2; d++) {
			gpud_dtype dt = dts[d];
			const void *x = dt == GPUD_F32 ? (const void *)xf : (const void *)xd;
			const void *y = dt == GPUD_F32 ? (const void *)yf : (const void *)yd;
			memcpy(hx, x, n * gpud_dtype_size(dt));
			memcpy(hy, y, n * gpud_dtype_size(dt));
			timing td = time_it(dt, x, y, n, m, "direct", 0, reps, d == 0 ? ref : f32d);
			timing tn = time_it(dt, x, y, n, m, "nufft", 0, reps, got);
			timing th = time_it(dt, x, y, n, m, "nufft", 1, reps, NULL);
			char a[64], b[64], hb[64];
			snprintf(a, sizeof(a), "%.2f [%.2f, %.2f] x%d", td.med, td.lo, td.hi,
				 td.reps);
			snprintf(b, sizeof(b), "%.2f [%.2f, %.2f] x%d", tn.med, tn.lo, tn.hi,
				 tn.reps);
			snprintf(hb, sizeof(hb), "%.2f [%.2f, %.2f] x%d", th.med, th.lo, th.hi,
				 th.reps);
			printf("%-7s %7llu %9llu | %-27s %9.0f | %-27s %9.0f | %7.1fx | %-27s | "
			       "%9.2e %9s\n",
			       gpud_dtype_name(dt), (unsigned long long)n, (unsigned long long)m, a,
			       td.kus, b, tn.kus, td.med / tn.med, hb, rel_err(got, ref, m),
			       d == 0 ? "-" : "");
			if (d == 1)
				printf("%-7s %7s %9s   float32 direct vs float64 direct: %.2e\n",
				       "", "", "", rel_err(f32d, ref, m));
			fflush(stdout);
		}
		const char *batch = getenv("BATCH");
		if (batch && atoi(batch) > 1)
			for (int d = 0; d < 2; d++)
				batch_bench(dts[d], xd, yd, n, m, (uint64_t)atoi(batch), reps);
		free(xd);
		free(yd);
		free(xf);
		free(yf);
		free(ref);
		free(got);
		free(f32d);
		gpud_host_free(c, hx);
		gpud_host_free(c, hy);
		gpud_host_free(c, hres);
	}
	gpud_close(c);
	harness_gpud_stop(&srv, 30, msg, sizeof(msg));
	harness_gpud_remove(&srv);
	return 0;
}
