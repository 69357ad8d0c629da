/*
 * bench/pool_alloc.c — allocation + free latency through gpud's device pool
 * (daemon/backend/cuda/pool.h, CUB's caching allocator) against cudaMalloc + cudaFree,
 * at 1 KiB, 1 MiB and 256 MiB, in one process on one device. Prints medians
 * and p99 of repeated pairs and the ratio; then the cost of clearing a block
 * that changes tenant (pool.h: owners).
 *
 *   pool_alloc [REPS]
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "daemon/backend/cuda/pool.h"
#include "tests/harness.h"

static double now_us(void)
{
	return harness_now_s() * 1e6;
}

/* Sorts v; its own ranks (p99 of 100 is the largest), as for docs/performance.md. */
static void pct(double *v, int n, double *p50, double *p99)
{
	harness_sort(v, (size_t)n);
	*p50 = v[n / 2];
	*p99 = v[(int)(n * 0.99)];
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 2001;
	static const size_t sizes[] = {1 << 10, 1 << 20, 256u << 20};
	static const char *names[] = {"1 KiB", "1 MiB", "256 MiB"};
	char err[512];
	struct cudaDeviceProp prop;
	gpud_pool *pool;

	if (cudaSetDevice(0) != cudaSuccess || cudaFree(NULL) != cudaSuccess ||
	    cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
		fprintf(stderr, "pool_alloc: no CUDA device\n");
		return 1;
	}
	pool_config pc = {.device = 0,
			  .bin_growth = 2,
			  .min_bin = 9,
			  .max_bin = 31,
			  .max_cached = 4ull << 30,
			  .max_total = 0,
			  .reserve = 256ull << 20};
	if (pool_create(&pc, &pool, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	double *t = malloc((size_t)reps * sizeof(double));
	printf("device: %s; alloc+free pairs, %d repetitions per size (256 MiB: %d)\n\n", prop.name,
	       reps, reps / 20);
	printf("%-8s %14s %14s %16s %16s %9s\n", "size", "pool p50 (us)", "pool p99 (us)",
	       "cudaMalloc p50", "cudaMalloc p99", "ratio");
	for (int s = 0; s < 3; s++) {
		int n = s == 2 ? reps / 20 : reps;
		double pp50, pp99, cp50, cp99;
		void *p;
		for (int r = 0; r < n; r++) {
			double t0 = now_us();
			int foreign;
			if (pool_alloc(pool, sizes[s], 1, &p, &foreign, err, sizeof(err)) !=
				    POOL_OK ||
			    pool_free(pool, p, err, sizeof(err)) != 0) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			t[r] = now_us() - t0;
		}
		pct(t, n, &pp50, &pp99);
		for (int r = 0; r < n; r++) {
			double t0 = now_us();
			if (cudaMalloc(&p, sizes[s]) != cudaSuccess || cudaFree(p) != cudaSuccess) {
				fprintf(stderr, "cudaMalloc/cudaFree failed\n");
				return 1;
			}
			t[r] = now_us() - t0;
		}
		pct(t, n, &cp50, &cp99);
		printf("%-8s %14.2f %14.2f %16.2f %16.2f %8.0fx\n", names[s], pp50, pp99, cp50,
		       cp99, cp50 / pp50);
	}
	/*
	 * Clearing between tenants (pool.h: owners): within one tenant a block
	 * is handed out as it is (the pairs above, owner 1 throughout); when it
	 * changes tenant it is zeroed on the stream of its first use. Here the
	 * owner alternates, so every allocation is foreign: the host's cost of
	 * the pair with the clear queued, the clear's own time on the GPU (event
	 * timing), and alloc + clear + stream synchronize (what an alloc without
	 * data waits before its reply).
	 */
	cudaStream_t st;
	cudaEvent_t e0, e1;
	if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
		fprintf(stderr, "pool_alloc: stream or events\n");
		return 1;
	}
	printf("\nclearing a block that changes tenant (owner alternates: every allocation "
	       "foreign)\n");
	printf("%-8s %20s %16s %22s %9s\n", "size", "pair+clear p50 (us)", "clear GPU (us)",
	       "alloc+clear+sync (us)", "foreign");
	double *g = malloc((size_t)reps * sizeof(double)),
	       *w = malloc((size_t)reps * sizeof(double));
	for (int s = 0; s < 3; s++) {
		int n = s == 2 ? reps / 20 : reps, nforeign = 0;
		void *p;
		for (int r = 0; r < n; r++) {
			int foreign;
			double t0 = now_us();
			if (pool_alloc(pool, sizes[s], 2 + (uint64_t)(r & 1), &p, &foreign, err,
				       sizeof(err)) != POOL_OK) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			cudaEventRecord(e0, st);
			if (foreign)
				cudaMemsetAsync(p, 0, pool_block_bytes(pool, p), st);
			cudaEventRecord(e1, st);
			double t1 = now_us();
			cudaStreamSynchronize(st);
			double t2 = now_us();
			if (pool_free(pool, p, err, sizeof(err)) != 0) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			t[r] = t1 - t0 + (now_us() - t2); /* the host's share: no waiting */
			w[r] = now_us() - t0;
			float ms = 0;
			cudaEventElapsedTime(&ms, e0, e1);
			g[r] = ms * 1e3;
			nforeign += foreign;
		}
		double a50, a99, g50, g99, w50, w99;
		pct(t, n, &a50, &a99);
		pct(g, n, &g50, &g99);
		pct(w, n, &w50, &w99);
		printf("%-8s %20.2f %16.2f %22.2f %5d/%d\n", names[s], a50, g50, w50, nforeign, n);
	}
	free(g);
	free(w);
	cudaStreamDestroy(st);
	pool_stats ps;
	pool_get_stats(pool, &ps);
	printf("\npool: %llu allocations, %llu from the cache, %llu foreign (cleared)\n",
	       (unsigned long long)ps.allocs, (unsigned long long)ps.hits,
	       (unsigned long long)ps.foreign);
	pool_destroy(pool);
	free(t);
	return 0;
}
