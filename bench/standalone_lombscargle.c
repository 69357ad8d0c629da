/*
 * bench/standalone_lombscargle.c — the baseline for bench/first_result: the
 * same job as `gpuctl run lombscargle` done in-process, the way a program
 * without gpud must: create the CUDA context, load the same embedded fatbin
 * (the same kernel object gpud links), allocate, copy in, launch, copy out,
 * write the .npy.
 *
 *   standalone_lombscargle X.npy Y.npy FREQS.npy OUT.npy [--kernel-reps N]
 *   standalone_lombscargle --versions
 *
 * With --kernel-reps, it then times N more launches with CUDA events and
 * prints "kernel_us MEDIAN" (the in-process kernel time). --versions prints
 * "cuda_runtime MAJOR.MINOR cuda_driver MAJOR.MINOR": the CUDA runtime linked
 * statically here (gpud's, from the same toolkit) and the driver's CUDA version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <gpud/npy.h>

#include "kernels/core/cuda_kernel.h"
#include "kernels/core/list.h"
#include "kernels/lombscargle/lombscargle.h"

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	gpud_array in[3];
	char err[512];
	int reps = 0;

	if (argc == 2 && !strcmp(argv[1], "--versions")) {
		int rt = 0, drv = 0;
		CHECK(cudaRuntimeGetVersion(&rt));
		CHECK(cudaDriverGetVersion(&drv));
		printf("cuda_runtime %d.%d cuda_driver %d.%d\n", rt / 1000, rt % 1000 / 10,
		       drv / 1000, drv % 1000 / 10);
		return 0;
	}
	if (argc < 5) {
		fprintf(stderr,
			"usage: %s X.npy Y.npy FREQS.npy OUT.npy [--kernel-reps N]\n"
			"       %s --versions\n",
			argv[0], argv[0]);
		return 2;
	}
	if (argc == 7 && !strcmp(argv[5], "--kernel-reps"))
		reps = atoi(argv[6]);
	for (int i = 0; i < 3; i++)
		if (gpud_npy_load(argv[1 + i], &in[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
	gpud_dtype dt = in[0].dtype;
	size_t es = gpud_dtype_size(dt), nf = gpud_array_count(&in[2]);

	struct cudaDeviceProp prop;
	CHECK(cudaSetDevice(0));
	CHECK(cudaFree(NULL));
	CHECK(cudaGetDeviceProperties(&prop, 0));
	void *d[4];
	for (int i = 0; i < 3; i++) {
		CHECK(cudaMalloc(&d[i], in[i].nbytes));
		CHECK(cudaMemcpy(d[i], in[i].data, in[i].nbytes, cudaMemcpyHostToDevice));
	}
	CHECK(cudaMalloc(&d[3], nf * es));

	const kernel_def *k = kernel_find("lombscargle");
	size_t nk;
	const cuda_kernel *ck = cuda_kernel_list(&nk)[KERNEL_ID_lombscargle];
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	for (int i = 0; i < 3; i++) {
		kernel_array *arr = &a.v[i].arr;
		arr->dtype = dt;
		arr->ndim = 1;
		arr->shape[0] = arr->count = gpud_array_count(&in[i]);
		arr->data = d[i];
		a.v[i].present = 1;
	}
	a.v[LS_PGRAM].arr = a.v[LS_FREQS].arr;
	a.v[LS_PGRAM].arr.data = d[3];
	cuda_launch_ctx lc = {.stream = 0, .sm_count = prop.multiProcessorCount, .device = 0};
	if (ck->launch(&a, &lc, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	gpud_array out = {.dtype = dt, .ndim = 1, .shape = {nf}, .nbytes = nf * es};
	out.data = malloc(out.nbytes);
	CHECK(cudaMemcpy(out.data, d[3], out.nbytes, cudaMemcpyDeviceToHost));
	if (gpud_npy_save(argv[4], &out, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (reps > 0) {
		double *t = malloc((size_t)reps * sizeof(double));
		cudaEvent_t e0, e1;
		CHECK(cudaEventCreate(&e0));
		CHECK(cudaEventCreate(&e1));
		for (int r = 0; r < reps; r++) {
			float ms;
			CHECK(cudaEventRecord(e0, 0));
			if (ck->launch(&a, &lc, err, sizeof(err)) != 0)
				return 1;
			CHECK(cudaEventRecord(e1, 0));
			CHECK(cudaEventSynchronize(e1));
			CHECK(cudaEventElapsedTime(&ms, e0, e1));
			t[r] = ms * 1e3;
		}
		qsort(t, (size_t)reps, sizeof(double), cmp);
		printf("kernel_us %.3f\n", t[reps / 2]);
		free(t);
	}
	return 0;
}
