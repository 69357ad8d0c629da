/*
 * bench/custom_kernels.c — what a user's own kernel costs through gpud, and
 * the same kernels through CuPy in fresh Python processes, in one run.
 *
 *   custom_kernels GPUD GPUCTL [PYTHON] [REPS]
 *
 * For saxpy_trig (elementwise: z = exp(a*sin(x) + cos(y)), float32) and a
 * raw scale kernel, each measured from a fresh process (fork, exec, wait):
 *   - `gpuctl kernel add` against a gpud with an empty compile cache
 *     (compile on register);
 *   - the first `gpuctl run` after it;
 *   - the first `gpuctl run` after a gpud restart (code from the disk cache);
 *   - CuPy ElementwiseKernel / RawKernel first call in a fresh Python process,
 *     with an empty CuPy cache and with a warm one.
 * Medians over REPS (default 5) repetitions; n = 4096 elements.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <gpud/npy.h>

#include "tests/harness.h"

/* gpud, restarted in its directory (config, kernel cache, inputs) as the runs need */
static harness_gpud srv;
static harness_gpud_opts gpud_opts = {.backend = "cuda", .prefix = "gpud-custom", .timeout_s = 30};
static const char *gpuctl_bin, *python;

/* fork + exec + wait, stdout to /dev/null; wall milliseconds; exits on failure. */
static double timed(char *const argv[], int may_fail)
{
	int st = 0;
	double t = harness_run_timed(argv, "/dev/null", &st) * 1e3;
	int ok = t >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (!may_fail && !ok) {
		fprintf(stderr, "custom_kernels: %s %s failed (status %d)\n", argv[0],
			argv[1] ? argv[1] : "", st);
		exit(1);
	}
	return ok ? t : -1;
}

static void start_gpud(void)
{
	char msg[1024];
	if (harness_gpud_start(&srv, &gpud_opts, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "custom_kernels: %s\n", msg);
		exit(1);
	}
}

static void stop_gpud(void)
{
	harness_gpud_stop(&srv, 60, NULL, 0);
}

static void save(const char *name, int n, float scale)
{
	char path[256], err[256];
	gpud_array a = {.dtype = GPUD_F32,
			.ndim = 1,
			.shape = {(uint64_t)n},
			.nbytes = (size_t)n * 4};
	a.data = malloc(a.nbytes);
	for (int i = 0; i < n; i++)
		((float *)a.data)[i] = scale * (float)((i * 37) % 1000) / 1000.0f - 0.5f * scale;
	snprintf(path, sizeof(path), "%s/%s", srv.dir, name);
	if (gpud_npy_save(path, &a, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	gpud_array_free(&a);
}

/* scale's output must be passed: "y=@HANDLE" of a kept buffer (gpuctl upload --keep). */
static char *kept_y(void)
{
	static char arg[80];
	char cmd[512], h[64] = "";
	snprintf(cmd, sizeof(cmd), "%s --url %s upload %s/x.npy --keep 2>/dev/null", gpuctl_bin,
		 srv.url, srv.dir);
	FILE *p = popen(cmd, "r");
	if (p == NULL || fscanf(p, "%63s", h) != 1) {
		fprintf(stderr, "custom_kernels: gpuctl upload --keep failed\n");
		exit(1);
	}
	pclose(p);
	snprintf(arg, sizeof(arg), "y=@%s", h);
	return arg;
}

static const char scale_src[] =
	"extern \"C\" __global__ void scale(const float *x, float *y, float s, long long n)\n"
	"{\n"
	"\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
	"\t     i += (long long)gridDim.x * blockDim.x)\n"
	"\t\ty[i] = s * x[i];\n"
	"}\n";

static const char cupy_ew[] =
	"import time, sys; t0 = time.perf_counter()\n"
	"import cupy as cp\n"
	"k = cp.ElementwiseKernel('float32 x, float32 y, float32 a', 'float32 z',\n"
	"                         'z = exp(a * sin(x) + cos(y))', 'my_saxpy_trig')\n"
	"n = 4096\n"
	"x = cp.linspace(-1, 1, n, dtype=cp.float32); y = cp.linspace(0, 2, n, dtype=cp.float32)\n"
	"z = k(x, y, cp.float32(0.5)); z.get()\n";

static const char cupy_raw[] =
	"import time, sys\n"
	"import cupy as cp\n"
	"src = open(sys.argv[1]).read()\n"
	"k = cp.RawKernel(src, 'scale')\n"
	"n = 4096\n"
	"x = cp.linspace(-1, 1, n, dtype=cp.float32); y = cp.empty_like(x)\n"
	"k((132 * 2,), (256,), (x, y, cp.float32(2.5), cp.int64(n))); y.get()\n";

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: custom_kernels GPUD GPUCTL [PYTHON] [REPS]\n");
		return 2;
	}
	gpud_opts.bin = argv[1];
	gpuctl_bin = argv[2];
	python = argc > 3 ? argv[3] : "python3";
	int reps = argc > 4 ? atoi(argv[4]) : 5;
	char msg[1024], cache[300], conf[400];
	if (harness_gpud_dir(&srv, &gpud_opts, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "custom_kernels: %s\n", msg);
		return 1;
	}
	snprintf(cache, sizeof(cache), "%s/kcache", srv.dir);
	snprintf(conf, sizeof(conf), "[gpud]\nkernel_cache = %s\n", cache);
	gpud_opts.config = conf; /* DIR/gpud.conf */
	FILE *f;
	char srcp[160], ewp[160], rawp[160];
	snprintf(srcp, sizeof(srcp), "%s/scale.cu", srv.dir);
	snprintf(ewp, sizeof(ewp), "%s/ew.py", srv.dir);
	snprintf(rawp, sizeof(rawp), "%s/raw.py", srv.dir);
	f = fopen(srcp, "w");
	fputs(scale_src, f);
	fclose(f);
	f = fopen(ewp, "w");
	fputs(cupy_ew, f);
	fclose(f);
	f = fopen(rawp, "w");
	fputs(cupy_raw, f);
	fclose(f);
	save("x.npy", 4096, 2.0f);
	save("y.npy", 4096, 4.0f);
	char x[160], y[160], o[160];
	snprintf(x, sizeof(x), "x=%s/x.npy", srv.dir);
	snprintf(y, sizeof(y), "y=%s/y.npy", srv.dir);
	snprintf(o, sizeof(o), "%s/out.npy", srv.dir);

	enum { ADD, FIRST, RESTART, NK = 2 };
	double t[NK][3][64];
	char *add[NK][20] = {{(char *)gpuctl_bin, "--url", srv.url, "kernel", "add",
			      "my_saxpy_trig", "--elementwise", "float32 x, float32 y, float32 a",
			      "float32 z", "z = exp(a * sin(x) + cos(y))", NULL},
			     {(char *)gpuctl_bin, "--url", srv.url, "kernel", "add", "scale",
			      "--source", srcp, "--entry", "scale", "--sig",
			      "x:in f32[], y:out f32[], s:f32, n:i64", "--blocks-per-sm", "2",
			      NULL}};
	char *run[NK][12] = {{(char *)gpuctl_bin, "--url", srv.url, "run", "my_saxpy_trig", x, y,
			      "a=0.5", "-o", o, NULL},
			     {(char *)gpuctl_bin, "--url", srv.url, "run", "scale", x, "s=2.5",
			      "n=4096", NULL, NULL, NULL}};
	for (int r = 0; r < reps; r++) {
		if (harness_rm_tree(cache) != 0)
			return 1;
		start_gpud();
		for (int k = 0; k < NK; k++) {
			t[k][ADD][r] = timed(add[k], 0);
			if (k == 1)
				run[1][8] = kept_y();
			t[k][FIRST][r] = timed(run[k], 0);
		}
		stop_gpud();
		start_gpud(); /* the registrations and their code come back from the cache */
		for (int k = 0; k < NK; k++) {
			if (k == 1)
				run[1][8] = kept_y();
			t[k][RESTART][r] = timed(run[k], 0);
		}
		stop_gpud();
	}
	/* CuPy, fresh processes: an empty kernel cache, then a warm one */
	double cp_t[NK][2][64];
	int have_cupy = 1;
	for (int r = 0; r < reps && have_cupy; r++) {
		char cdir[320], env[360];
		snprintf(cdir, sizeof(cdir), "%s/cupy-%d", srv.dir, r);
		snprintf(env, sizeof(env), "CUPY_CACHE_DIR=%s", cdir);
		putenv(env);
		for (int k = 0; k < NK; k++) {
			char *py[] = {(char *)python, k ? rawp : ewp, srcp, NULL};
			cp_t[k][0][r] = timed(py, 1);
			cp_t[k][1][r] = timed(py, 1);
			if (cp_t[k][0][r] < 0 || cp_t[k][1][r] < 0)
				have_cupy = 0;
		}
		if (harness_rm_tree(cdir) != 0)
			return 1;
	}
	const char *names[NK] = {"my_saxpy_trig (elementwise)", "scale (raw)"};
	printf("custom kernels, n = 4096 float32; medians of %d fresh processes each "
	       "(ms, fork to exit)\n\n",
	       reps);
	printf("   %-26s %12s %12s %14s %14s %14s\n", "kernel", "gpuctl add", "first run",
	       "run after", "CuPy first", "CuPy first");
	printf("   %-26s %12s %12s %14s %14s %14s\n", "", "(compiles)", "after add", "gpud restart",
	       "(cold cache)", "(warm cache)");
	for (int k = 0; k < NK; k++) {
		printf("   %-26s %12.2f %12.2f %14.2f", names[k],
		       harness_median(t[k][ADD], (size_t)reps),
		       harness_median(t[k][FIRST], (size_t)reps),
		       harness_median(t[k][RESTART], (size_t)reps));
		if (have_cupy)
			printf(" %14.1f %14.1f\n", harness_median(cp_t[k][0], (size_t)reps),
			       harness_median(cp_t[k][1], (size_t)reps));
		else
			printf(" %14s %14s\n", "n/a", "n/a");
	}
	printf("\n   CuPy: python3 -c 'import cupy; ...' start to result, its compile cache in a "
	       "fresh directory, then again\n");
	return harness_gpud_remove(&srv) == 0 ? 0 : 1;
}
