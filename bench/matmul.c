/*
 * bench/matmul.c — matmul through gpud against the same cuBLAS call made
 * in-process, on one device: c = a b at n x n x n (default 8192) for
 * float32, float32 with tf32, and float64, from the same random inputs.
 *
 *   in-process  cublasGemmEx on a stream of its own, with a handle bound to
 *               it and a workspace of the size gpud uses (as gpud's handles
 *               are); CUDA events around each call; median of the runs.
 *   gpud        the same through `matmul` with a, b and c resident in gpud:
 *               kernel_us (gpud's events around the launch) and the round
 *               trip the client sees, medians of the runs.
 *
 *   matmul GPUD [N ...]
 *
 * Starts its own gpud (cuda backend) on a temporary socket. The in-process
 * side loads cuBLAS as gpud does (kernels/libs.h, $GPUD_CUBLAS).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include <gpud/client.h>

#include "kernels/libs.h"

#define RUNS 20

#define CK(call)                                                                             \
	do {                                                                                 \
		cudaError_t e_ = (call);                                                     \
		if (e_ != cudaSuccess) {                                                     \
			fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));          \
			exit(1);                                                             \
		}                                                                            \
	} while (0)

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp);
	return v[n / 2];
}

/* n*n random values in [-1, 1) of dt. */
static void *random_matrix(gpud_dtype dt, size_t n, uint64_t seed)
{
	void *p = malloc(n * n * gpud_dtype_size(dt));
	uint64_t s = seed;
	for (size_t i = 0; i < n * n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		double v = (double)(s >> 11) / 9007199254740992.0 * 2 - 1;
		if (dt == GPUD_F32)
			((float *)p)[i] = (float)v;
		else
			((double *)p)[i] = v;
	}
	return p;
}

/* Median ms of RUNS in-process gemms (row-major c = a b, as gpud calls it). */
static double in_process(const libs_cublas *bl, libs_cublas_handle h, cudaStream_t s,
			 gpud_dtype dt, int tf32, size_t n, const void *ha, const void *hb)
{
	size_t bytes = n * n * gpud_dtype_size(dt);
	void *a, *b, *c;
	CK(cudaMalloc(&a, bytes));
	CK(cudaMalloc(&b, bytes));
	CK(cudaMalloc(&c, bytes));
	CK(cudaMemcpy(a, ha, bytes, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(b, hb, bytes, cudaMemcpyHostToDevice));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	double ms[RUNS + 1];
	int in = (int)n;
	for (int r = 0; r <= RUNS; r++) { /* the first is a warm-up */
		const float f1 = 1, f0 = 0;
		const double d1 = 1, d0 = 0;
		int type = dt == GPUD_F32 ? LIBS_CUDA_R_32F : LIBS_CUDA_R_64F;
		int compute = dt == GPUD_F64 ? LIBS_CUBLAS_COMPUTE_64F
				  : tf32     ? LIBS_CUBLAS_COMPUTE_32F_FAST_TF32
					     : LIBS_CUBLAS_COMPUTE_32F;
		CK(cudaEventRecord(e0, s));
		int st = bl->gemm_ex(h, LIBS_CUBLAS_OP_N, LIBS_CUBLAS_OP_N, in, in, in,
				     dt == GPUD_F32 ? (const void *)&f1 : (const void *)&d1, b, type, in,
				     a, type, in, dt == GPUD_F32 ? (const void *)&f0 : (const void *)&d0,
				     c, type, in, compute, LIBS_CUBLAS_GEMM_DEFAULT);
		if (st != 0) {
			fprintf(stderr, "cublasGemmEx: %s\n", bl->status_string(st));
			exit(1);
		}
		CK(cudaEventRecord(e1, s));
		CK(cudaEventSynchronize(e1));
		float t;
		CK(cudaEventElapsedTime(&t, e0, e1));
		ms[r] = t;
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	cudaFree(a);
	cudaFree(b);
	cudaFree(c);
	return median(ms + 1, RUNS);
}

/* Medians of RUNS gpud runs: kernel_us and the round trip, in ms. */
static void through_gpud(gpud_client *c, gpud_dtype dt, int tf32, size_t n, const void *ha,
			 const void *hb, double *kernel_ms, double *trip_ms)
{
	uint64_t shape[2] = {n, n};
	gpud_handle a, b, out;
	if (gpud_alloc(c, dt, 2, shape, ha, &a) != GPUD_OK ||
	    gpud_alloc(c, dt, 2, shape, hb, &b) != GPUD_OK ||
	    gpud_alloc(c, dt, 2, shape, NULL, &out) != GPUD_OK) {
		fprintf(stderr, "gpud_alloc: %s\n", gpud_errmsg(c));
		exit(1);
	}
	gpud_arg args[4] = {gpud_arg_buffer("a", a), gpud_arg_buffer("b", b),
			    gpud_arg_buffer("c", out), gpud_arg_bool("tf32", tf32)};
	double k[RUNS + 1], w[RUNS + 1];
	for (int r = 0; r <= RUNS; r++) {
		gpud_output o;
		size_t no;
		gpud_run_info info;
		double t0 = now_us();
		if (gpud_run(c, "matmul", args, 4, &o, 1, &no, &info) != GPUD_OK) {
			fprintf(stderr, "matmul: %s\n", gpud_errmsg(c));
			exit(1);
		}
		w[r] = (now_us() - t0) / 1e3;
		k[r] = info.kernel_us / 1e3;
	}
	*kernel_ms = median(k + 1, RUNS);
	*trip_ms = median(w + 1, RUNS);
	gpud_handle fr[3] = {a, b, out};
	gpud_free(c, fr, 3);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: matmul GPUD [N ...]\n");
		return 2;
	}
	char dir[64] = "/tmp/gpud-matmul-XXXXXX", url[128], logp[128], err[1024];
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(url, sizeof(url), "ipc://%s/gpud.sock", dir);
	snprintf(logp, sizeof(logp), "%s/gpud.log", dir);
	fflush(stdout);
	pid_t gp = fork();
	if (gp == 0) {
		if (freopen(logp, "w", stderr) == NULL)
			_exit(127);
		execl(argv[1], argv[1], "--listen", url, "--backend", "cuda", (char *)NULL);
		_exit(127);
	}
	gpud_client *c = NULL;
	for (int i = 0; i < 600; i++) {
		if (gpud_connect(url, &c) == GPUD_OK)
			break;
		gpud_close(c);
		c = NULL;
		usleep(50000);
	}
	if (c == NULL) {
		fprintf(stderr, "matmul: gpud did not start (see %s)\n", logp);
		return 1;
	}
	gpud_set_timeout(c, 600000);
	const libs_cublas *bl = libs_get_cublas(err, sizeof(err));
	if (bl == NULL) {
		fprintf(stderr, "matmul: %s\n", err);
		return 1;
	}
	CK(cudaSetDevice(0));
	CK(cudaFree(NULL));
	struct cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	size_t ws_bytes = (size_t)(prop.major >= 9 ? 32 : 4) << 20;
	void *ws;
	CK(cudaMalloc(&ws, ws_bytes));
	libs_cublas_handle h;
	if (bl->create(&h) != 0 || bl->set_stream(h, s) != 0 ||
	    bl->set_workspace(h, ws, ws_bytes) != 0 || bl->set_math_mode(h, LIBS_CUBLAS_DEFAULT_MATH) != 0) {
		fprintf(stderr, "matmul: cannot set up a cuBLAS handle\n");
		return 1;
	}
	printf("device: %s; %s; gpud %s; medians of %d runs\n\n", prop.name, bl->describe,
	       gpud_server(c)->version, RUNS);
	printf("%-14s %6s %14s %14s %9s %14s %10s\n", "dtype", "n", "in-process ms", "gpud kernel ms",
	       "gpud/in", "gpud trip ms", "TFLOP/s");
	int nn = argc > 2 ? argc - 2 : 1;
	for (int i = 0; i < nn; i++) {
		size_t n = argc > 2 ? (size_t)atol(argv[2 + i]) : 8192;
		for (int mode = 0; mode < 3; mode++) {
			gpud_dtype dt = mode == 2 ? GPUD_F64 : GPUD_F32;
			int tf32 = mode == 1;
			void *ha = random_matrix(dt, n, 1), *hb = random_matrix(dt, n, 2);
			double in = in_process(bl, h, s, dt, tf32, n, ha, hb), km, tm;
			through_gpud(c, dt, tf32, n, ha, hb, &km, &tm);
			printf("%-14s %6zu %14.3f %14.3f %9.3f %14.3f %10.1f\n",
			       tf32 ? "float32 tf32" : gpud_dtype_name(dt), n, in, km, km / in, tm,
			       2.0 * (double)n * n * n / (in * 1e-3) / 1e12);
			fflush(stdout);
			free(ha);
			free(hb);
		}
	}
	gpud_close(c);
	kill(gp, SIGTERM);
	int st;
	waitpid(gp, &st, 0);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return 0;
}
