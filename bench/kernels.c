/*
 * bench/kernels.c — the kernel library against the hardware's roofline, in
 * one run on one device.
 *
 *   kernels GPUD [REPS] [LOG2N]
 *
 * Starts its own gpud (cuda backend) on an ipc:// socket, then measures:
 *  - in this process: the device-to-device copy bandwidth (cudaMemcpyAsync of
 *    N float32 = 1 GiB at LOG2N = 28; bytes moved = read + written), and
 *    cuBLAS at 8192 x 8192 (libcublas loaded with dlopen; cublasGemmEx with
 *    the compute type gpud uses: 32F, 32F_FAST_TF32 for the tf32 row, 64F);
 *  - in gpud: each kernel of the library at N float32 elements (matmul at
 *    8192 x 8192), REPS runs after two warm-up runs, the kernel's time as gpud
 *    measures it (CUDA events around the launch: RunResponse.kernel_us).
 * Inputs are random, uploaded once from a host region. Prints one row per
 * kernel: median time, bytes moved (what the kernel must read and write at
 * least), the rate, and the fraction of the copy bandwidth; for matmul the
 * FLOP rate and gpud's time over cuBLAS's in-process time.
 * Kernels this gpud does not have are listed as absent.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <gpud/client.h>

#include "tests/harness.h"

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "kernels: %s: %s\n", #call, cudaGetErrorString(e_));       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define MM 8192 /* matmul size */

static int reps = 10;
static gpud_client *c;

static double median(double *v, int n)
{
	return harness_median(v, (size_t)n);
}

/* --- in-process baselines --------------------------------------------------------- */

/* Median ms of reps device-to-device copies of bytes. */
static double copy_ms(size_t bytes)
{
	void *a, *b;
	cudaEvent_t e0, e1;
	double t[64];
	CK(cudaMalloc(&a, bytes));
	CK(cudaMalloc(&b, bytes));
	CK(cudaMemset(a, 1, bytes));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (int r = -2; r < reps; r++) {
		CK(cudaEventRecord(e0, 0));
		CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
		CK(cudaEventRecord(e1, 0));
		CK(cudaEventSynchronize(e1));
		float ms;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (r >= 0)
			t[r] = ms;
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	CK(cudaFree(a));
	CK(cudaFree(b));
	return median(t, reps);
}

/* cuBLAS, loaded as gpud loads it (dlopen), so the bench needs no link to it. */
static struct {
	__typeof__(&cublasCreate_v2) create;
	__typeof__(&cublasDestroy_v2) destroy;
	__typeof__(&cublasGemmEx) gemm;
} blas;

static int load_cublas(void)
{
	static const char *names[] = {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13",
				      "/usr/local/cuda-13.0/lib64/libcublas.so.13", "libcublas.so"};
	void *h = NULL;
	const char *env = getenv("GPUD_CUBLAS");
	if (env != NULL)
		h = dlopen(env, RTLD_NOW);
	for (size_t i = 0; h == NULL && i < sizeof(names) / sizeof(names[0]); i++)
		h = dlopen(names[i], RTLD_NOW);
	if (h == NULL) {
		fprintf(stderr, "kernels: cannot load cuBLAS: %s\n", dlerror());
		return -1;
	}
	*(void **)&blas.create = dlsym(h, "cublasCreate_v2");
	*(void **)&blas.destroy = dlsym(h, "cublasDestroy_v2");
	*(void **)&blas.gemm = dlsym(h, "cublasGemmEx");
	return blas.create && blas.destroy && blas.gemm ? 0 : -1;
}

/* One MM x MM x MM cublasGemmEx in this process, the call gpud makes: f64, or
 * f32 computed in f32 or (tf32) with TF32 tensor cores; a and b get the same
 * values as gpud's inputs. */
typedef struct gemm {
	int f64, tf32;
	void *a, *b, *c;
	cublasHandle_t h;
	cudaEvent_t e0, e1;
} gemm;

static void gemm_setup(gemm *g, int f64, int tf32)
{
	size_t bytes = (size_t)MM * MM * (f64 ? 8 : 4);
	g->f64 = f64;
	g->tf32 = tf32;
	CK(cudaMalloc(&g->a, bytes));
	CK(cudaMalloc(&g->b, bytes));
	CK(cudaMalloc(&g->c, bytes));
	if (blas.create(&g->h) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "kernels: cublasCreate failed\n");
		exit(1);
	}
	CK(cudaEventCreate(&g->e0));
	CK(cudaEventCreate(&g->e1));
}

static double gemm_once(gemm *g)
{
	const float one = 1, zero = 0;
	const double oned = 1, zerod = 0;
	cudaDataType_t ty = g->f64 ? CUDA_R_64F : CUDA_R_32F;
	cublasComputeType_t ct = g->f64    ? CUBLAS_COMPUTE_64F
				 : g->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
					   : CUBLAS_COMPUTE_32F;
	CK(cudaEventRecord(g->e0, 0));
	/* row-major c = a b as column-major c' = b' a', as gpud does */
	cublasStatus_t st = blas.gemm(g->h, CUBLAS_OP_N, CUBLAS_OP_N, MM, MM, MM,
				      g->f64 ? (const void *)&oned : (const void *)&one, g->b, ty,
				      MM, g->a, ty, MM,
				      g->f64 ? (const void *)&zerod : (const void *)&zero, g->c, ty,
				      MM, ct, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "kernels: cublasGemmEx failed (%d)\n", (int)st);
		exit(1);
	}
	CK(cudaEventRecord(g->e1, 0));
	CK(cudaEventSynchronize(g->e1));
	float ms;
	CK(cudaEventElapsedTime(&ms, g->e0, g->e1));
	return ms;
}

static void gemm_teardown(gemm *g)
{
	blas.destroy(g->h);
	CK(cudaEventDestroy(g->e0));
	CK(cudaEventDestroy(g->e1));
	CK(cudaFree(g->a));
	CK(cudaFree(g->b));
	CK(cudaFree(g->c));
}

/* --- gpud ----------------------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(void) /* [0, 1) */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) * 0x1p-53;
}

/* A buffer of n random dtype values in [lo, hi) in gpud, uploaded from a host
 * region; the same values to copy (device memory of this process) if not NULL. */
static gpud_handle upload_random(gpud_dtype dt, int ndim, const uint64_t *shape, double lo,
				 double hi, void *copy)
{
	size_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	size_t bytes = n * gpud_dtype_size(dt);
	void *p = gpud_host_alloc(c, bytes);
	if (p == NULL) {
		fprintf(stderr, "kernels: gpud_host_alloc(%zu): %s\n", bytes, gpud_errmsg(c));
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		double v = lo + (hi - lo) * urand();
		if (dt == GPUD_F32)
			((float *)p)[i] = (float)v;
		else
			((double *)p)[i] = v;
	}
	gpud_handle h;
	if (gpud_alloc(c, dt, ndim, shape, p, &h) != GPUD_OK) {
		fprintf(stderr, "kernels: upload: %s\n", gpud_errmsg(c));
		exit(1);
	}
	if (copy != NULL)
		CK(cudaMemcpy(copy, p, bytes, cudaMemcpyHostToDevice));
	gpud_host_free(c, p);
	return h;
}

static int has_kernel(const gpud_kernel_list *l, const char *name)
{
	for (size_t i = 0; i < l->count; i++)
		if (!strcmp(l->kernels[i].name, name))
			return 1;
	return 0;
}

/* One run; its kernel_us and elapsed_us in ms; outputs freed. */
static int run_once(const char *name, const gpud_arg *args, size_t nargs, double *kern_ms,
		    double *req_ms)
{
	gpud_output o[2];
	size_t no = 0;
	gpud_run_info info;
	if (gpud_run(c, name, args, nargs, o, 2, &no, &info) != GPUD_OK) {
		fprintf(stderr, "kernels: %s: %s\n", name, gpud_errmsg(c));
		return -1;
	}
	gpud_handle hs[2];
	for (size_t i = 0; i < no; i++)
		hs[i] = o[i].handle;
	if (no > 0 && gpud_free(c, hs, no) != GPUD_OK)
		return -1;
	*kern_ms = info.kernel_us / 1e3;
	*req_ms = info.elapsed_us / 1e3;
	return 0;
}

/* Medians of reps runs after two warm-ups. */
static int time_runs(const char *name, const gpud_arg *args, size_t nargs, double *kern_ms,
		     double *req_ms)
{
	double tk[64], tr[64], k, r;
	for (int i = -2; i < reps; i++) {
		if (run_once(name, args, nargs, &k, &r) != 0)
			return -1;
		if (i >= 0)
			tk[i] = k, tr[i] = r;
	}
	*kern_ms = median(tk, reps);
	*req_ms = median(tr, reps);
	return 0;
}

typedef struct bench_case {
	const char *kernel;
	const char *what; /* arguments, for the table */
	double bytes_per; /* bytes each element must move (read + written) */
	int args;         /* which argument set, below */
	int bins;         /* histogram */
} bench_case;

enum { A_X, A_XY, A_AXY, A_HIST, A_RANDOM };

static const bench_case cases[] = {
	{"add", "x, y", 12, A_XY, 0},
	{"sub", "x, y", 12, A_XY, 0},
	{"mul", "x, y", 12, A_XY, 0},
	{"div", "x, y", 12, A_XY, 0},
	{"axpy", "a, x, y", 12, A_AXY, 0},
	{"saxpy_trig", "a, x, y", 12, A_AXY, 0},
	{"rel_diff", "x, y", 12, A_XY, 0},
	{"sum_of_squares", "x, y", 12, A_XY, 0},
	{"sum", "x", 4, A_X, 0},
	{"asum", "x", 4, A_X, 0},
	{"min", "x", 4, A_X, 0},
	{"max", "x", 4, A_X, 0},
	{"mean", "x", 4, A_X, 0},
	{"dot", "x, y", 8, A_XY, 0},
	{"histogram", "x, 100 bins", 4, A_HIST, 100},
	{"histogram", "x, 256 bins", 4, A_HIST, 256},
	{"histogram", "x, 1000 bins", 4, A_HIST, 1000},
	{"histogram", "x, 16384 bins (CUB)", 4, A_HIST, 16384},
	{"uniform", "n, seed", 4, A_RANDOM, 0},
	{"normal", "n, seed", 4, A_RANDOM, 0},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: kernels GPUD [REPS] [LOG2N]\n");
		return 2;
	}
	if (argc > 2)
		reps = atoi(argv[2]);
	int log2n = argc > 3 ? atoi(argv[3]) : 28;
	if (reps < 1 || reps > 64 || log2n < 10 || log2n > 31) {
		fprintf(stderr, "kernels: REPS 1..64, LOG2N 10..31\n");
		return 2;
	}
	size_t n = (size_t)1 << log2n;

	harness_gpud srv = {0};
	harness_gpud_opts o = {.bin = argv[1],
			       .backend = "cuda",
			       .prefix = "gpud-kbench",
			       .timeout_s = 30};
	char msg[1024];
	if (harness_gpud_start(&srv, &o, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "kernels: gpud did not start: %s\n", msg);
		return 1;
	}
	if (gpud_connect(srv.url, &c) != GPUD_OK) {
		fprintf(stderr, "kernels: %s\n", gpud_errmsg(c));
		return 1;
	}
	gpud_set_timeout(c, 600000);
	printf("device: %s; gpud %s, backend %s; %d runs per row (medians), n = 2^%d float32\n\n",
	       gpud_server(c)->devices[0].name, gpud_server(c)->version, gpud_server(c)->backend,
	       reps, log2n);

	CK(cudaSetDevice(0));
	size_t copy_bytes = n * 4;
	double cms = copy_ms(copy_bytes);
	double copy_gbs = 2.0 * (double)copy_bytes / (cms * 1e-3) / 1e9;
	printf("device-to-device copy, %zu MiB in this process: %.3f ms, %.0f GB/s moved (read + "
	       "write)\n\n",
	       copy_bytes >> 20, cms, copy_gbs);

	gpud_kernel_list *kl = NULL;
	if (gpud_kernels(c, &kl) != GPUD_OK) {
		fprintf(stderr, "kernels: %s\n", gpud_errmsg(c));
		return 1;
	}
	uint64_t shape = n;
	gpud_handle hx = upload_random(GPUD_F32, 1, &shape, -1, 1, NULL);
	gpud_handle hy = upload_random(GPUD_F32, 1, &shape, 0.5, 2, NULL);

	printf("| kernel | arguments | kernel ms | request ms | bytes moved | GB/s | of copy "
	       "bandwidth |\n|---|---|---|---|---|---|---|\n");
	int failed = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const bench_case *bc = &cases[i];
		if (!has_kernel(kl, bc->kernel)) {
			printf("| %s | %s | absent from this gpud | | | | |\n", bc->kernel,
			       bc->what);
			continue;
		}
		gpud_arg args[6];
		size_t na = 0;
		switch (bc->args) {
		case A_X:
			args[na++] = gpud_arg_buffer("x", hx);
			break;
		case A_AXY:
			args[na++] = gpud_arg_f64("a", 0.5);
			/* fall through */
		case A_XY:
			args[na++] = gpud_arg_buffer("x", hx);
			args[na++] = gpud_arg_buffer("y", hy);
			break;
		case A_HIST:
			args[na++] = gpud_arg_buffer("x", hx);
			args[na++] = gpud_arg_i64("bins", bc->bins);
			args[na++] = gpud_arg_f64("range_min", -1);
			args[na++] = gpud_arg_f64("range_max", 1);
			break;
		case A_RANDOM:
			args[na++] = gpud_arg_i64("n", (int64_t)n);
			args[na++] = gpud_arg_i64("seed", 42);
			args[na++] = gpud_arg_dtype("dtype", GPUD_F32);
			break;
		}
		double kms, rms;
		if (time_runs(bc->kernel, args, na, &kms, &rms) != 0) {
			failed = 1;
			continue;
		}
		double bytes = bc->bytes_per * (double)n, gbs = bytes / (kms * 1e-3) / 1e9;
		printf("| %s | %s | %.3f | %.3f | %.2f GiB | %.0f | %.0f%% |\n", bc->kernel,
		       bc->what, kms, rms, bytes / (1 << 30), gbs, 100 * gbs / copy_gbs);
		fflush(stdout);
	}
	gpud_handle fr[2] = {hx, hy};
	gpud_free(c, fr, 2);

	/* matmul against cuBLAS in this process */
	printf("\n| matmul %dx%d | gpud kernel ms | request ms | cuBLAS in-process ms | gpud / "
	       "cuBLAS | TFLOP/s (gpud) |\n|---|---|---|---|---|---|\n",
	       MM, MM);
	if (!has_kernel(kl, "matmul")) {
		printf("| (absent from this gpud) | | | | | |\n");
	} else if (load_cublas() != 0) {
		failed = 1;
	} else {
		static const struct {
			const char *label;
			int f64, tf32;
		} mm[] = {{"float32", 0, 0}, {"float32, tf32=true", 0, 1}, {"float64", 1, 0}};
		for (size_t i = 0; i < sizeof(mm) / sizeof(mm[0]); i++) {
			gpud_dtype dt = mm[i].f64 ? GPUD_F64 : GPUD_F32;
			uint64_t sh[2] = {MM, MM};
			gemm g;
			gemm_setup(&g, mm[i].f64, mm[i].tf32);
			gpud_handle ha = upload_random(dt, 2, sh, -1, 1, g.a),
				    hb = upload_random(dt, 2, sh, -1, 1, g.b);
			gpud_arg args[3] = {gpud_arg_buffer("a", ha), gpud_arg_buffer("b", hb),
					    gpud_arg_bool("tf32", mm[i].tf32)};
			/* gpud's run and the in-process call alternate, on the same values:
			 * clocks and power (which depend on the data) are the same for both */
			double tk[64], tr[64], tb[64], k, r;
			int ok = 1;
			for (int j = -2; j < reps && ok; j++) {
				/* tf32 is refused for float64 */
				ok = run_once("matmul", args, mm[i].f64 ? 2 : 3, &k, &r) == 0;
				double b0 = gemm_once(&g);
				if (j >= 0)
					tk[j] = k, tr[j] = r, tb[j] = b0;
			}
			gpud_handle f2[2] = {ha, hb};
			gpud_free(c, f2, 2);
			gemm_teardown(&g);
			if (!ok) {
				failed = 1;
				continue;
			}
			double kms = median(tk, reps), rms = median(tr, reps),
			       base = median(tb, reps);
			printf("| %s | %.3f | %.3f | %.3f | %.3f | %.1f |\n", mm[i].label, kms, rms,
			       base, kms / base, 2.0 * MM * MM * (double)MM / (kms * 1e-3) / 1e12);
			fflush(stdout);
		}
	}
	gpud_kernel_list_free(kl);
	gpud_close(c);
	harness_gpud_stop(&srv, 60, NULL, 0);
	if (harness_gpud_remove(&srv) != 0)
		return 1;
	return failed;
}
