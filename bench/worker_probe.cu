/*
 * bench/worker_probe.cu — what a per-tenant worker process (a second CUDA
 * context beside gpud's) would cost and contain, measured without gpud:
 *
 *   1. the worker's own context start, cudaIpcOpenMemHandle of a buffer of
 *      the first process, and a kernel reading it there;
 *   2. a kernel in the worker that faults (an illegal address): the worker's
 *      context ends; the first process's context and buffer must not;
 *   3. a kernel in the worker that never ends, the worker then SIGKILLed: the
 *      GPU is free again and the first process's context and buffer intact.
 *
 *   worker_probe          (the worker mode is the program run again by itself)
 *
 * Prints one line per step; exits 1 if the first process's buffer or context
 * did not survive a step.
 */
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void check(cudaError_t e, const char *who, const char *what)
{
	if (e != cudaSuccess) {
		printf("%s: %s: %s\n", who, what, cudaGetErrorString(e));
		fflush(stdout);
		exit(3);
	}
}

__global__ void sum_words(const unsigned *a, size_t n, unsigned long long *out)
{
	unsigned long long s = 0;
	for (size_t i = threadIdx.x; i < n; i += blockDim.x)
		s += a[i];
	atomicAdd(out, s);
}

__global__ void write_to(unsigned *p)
{
	p[threadIdx.x] = 1;
}

__global__ void spin_until(volatile int *flag)
{
	while (*flag == 0)
		;
}

static const size_t N = 1u << 18; /* words in the first process's buffer */

static unsigned long long device_sum(const unsigned *a, const char *who)
{
	unsigned long long *o, r = 0;
	check(cudaMalloc(&o, sizeof(r)), who, "cudaMalloc");
	check(cudaMemset(o, 0, sizeof(r)), who, "cudaMemset");
	sum_words<<<1, 256>>>(a, N, o);
	check(cudaMemcpy(&r, o, sizeof(r), cudaMemcpyDeviceToHost), who, "sum");
	check(cudaFree(o), who, "cudaFree");
	return r;
}

/* The worker: argv = self "worker" HANDLE-HEX MODE; reports on stdout. */
static int worker(const char *hex, const char *mode)
{
	const char *who = "worker";
	cudaIpcMemHandle_t h;
	if (strlen(hex) != 2 * sizeof(h))
		return 2;
	for (size_t i = 0; i < sizeof(h); i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return 2;
		((unsigned char *)&h)[i] = (unsigned char)v;
	}
	double t0 = now_ms();
	check(cudaFree(0), who, "context");
	double t_ctx = now_ms() - t0;
	void *a;
	t0 = now_ms();
	check(cudaIpcOpenMemHandle(&a, h, cudaIpcMemLazyEnablePeerAccess), who,
	      "cudaIpcOpenMemHandle");
	double t_open = now_ms() - t0;
	t0 = now_ms();
	unsigned long long s = device_sum((const unsigned *)a, who);
	printf("worker: context %.1f ms, cudaIpcOpenMemHandle %.3f ms, first kernel on the "
	       "shared buffer + copy %.3f ms, its sum %llu\n",
	       t_ctx, t_open, now_ms() - t0, s);
	check(cudaIpcCloseMemHandle(a), who, "cudaIpcCloseMemHandle");
	if (!strcmp(mode, "fault")) {
		write_to<<<1, 32>>>((unsigned *)0x10);
		printf("worker: a kernel writing to address 0x10: %s\n",
		       cudaGetErrorString(cudaDeviceSynchronize()));
	} else if (!strcmp(mode, "spin")) {
		int *flag;
		check(cudaMalloc(&flag, sizeof(int)), who, "cudaMalloc");
		check(cudaMemset(flag, 0, sizeof(int)), who, "cudaMemset");
		spin_until<<<1, 1>>>(flag);
		printf("worker: a kernel that never ends is running\n");
		fflush(stdout);
		cudaDeviceSynchronize(); /* until SIGKILL */
	}
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "worker"))
		return worker(argv[2], argv[3]);
	if (argc != 1) {
		fprintf(stderr, "usage: worker_probe\n");
		return 2;
	}
	const char *who = "gpud-like process";
	double t0 = now_ms();
	check(cudaFree(0), who, "context");
	printf("first process: context %.1f ms\n", now_ms() - t0);
	unsigned *host = (unsigned *)malloc(N * sizeof(unsigned)), *a;
	unsigned long long want = 0;
	for (size_t i = 0; i < N; i++) {
		host[i] = (unsigned)((i * 2654435761u) >> 12);
		want += host[i];
	}
	check(cudaMalloc(&a, N * sizeof(unsigned)), who, "cudaMalloc");
	check(cudaMemcpy(a, host, N * sizeof(unsigned), cudaMemcpyHostToDevice), who, "upload");
	cudaIpcMemHandle_t h;
	check(cudaIpcGetMemHandle(&h, a), who, "cudaIpcGetMemHandle");
	char hex[2 * sizeof(h) + 1];
	for (size_t i = 0; i < sizeof(h); i++)
		snprintf(hex + 2 * i, 3, "%02x", ((unsigned char *)&h)[i]);

	static const char *modes[] = {"read", "fault", "spin"};
	int bad = 0;
	for (int m = 0; m < 3; m++) {
		int fds[2];
		if (pipe(fds) != 0)
			return 1;
		fflush(stdout);
		t0 = now_ms();
		pid_t p = fork();
		if (p == 0) {
			dup2(fds[1], 1);
			close(fds[0]);
			execl(argv[0], argv[0], "worker", hex, modes[m], (char *)NULL);
			_exit(9);
		}
		close(fds[1]);
		FILE *in = fdopen(fds[0], "r");
		char line[512];
		while (fgets(line, sizeof(line), in)) {
			fputs(line, stdout);
			if (strstr(line, "never ends")) /* it runs: stop it from outside */
				kill(p, SIGKILL);
		}
		fclose(in);
		int st;
		waitpid(p, &st, 0);
		printf("worker '%s' ended (%s %d) %.1f ms after its start\n", modes[m],
		       WIFEXITED(st) ? "exit" : "signal",
		       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), now_ms() - t0);
		unsigned long long s = device_sum(a, who);
		printf("first process after it: context works, its buffer %s\n",
		       s == want ? "intact" : "CHANGED");
		bad |= s != want;
	}
	check(cudaFree(a), who, "cudaFree");
	free(host);
	return bad;
}
