/*
 * kernels/lombscargle/cuda_batch_kernel.c — lombscargle_batch's cuda entry
 * (batch_kernel.h): one ls_many_launch over the table of descriptors, each
 * series' verdict into its word. Its run never fails on a verdict: gpud
 * reads the words and fails only those series' requests. No state; runs on
 * the thread launching on the stream (the loop).
 */
#include "kernels/core/cuda_kernel.h"
#include "kernels/lombscargle/batch_kernel.h"

static int batch_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	ls_many p;
	size_t b;
	long long max_n;
	ls_batch_params(a, &p, &b, &max_n);
	return ls_many_launch(&p, a->v[LB_SERIES].arr.data, b, max_n, a->v[LB_VERDICTS].arr.data,
			      ctx, err, errlen);
}

const cuda_kernel cuda_kernel_lombscargle_batch = {
	.name = "lombscargle_batch",
	.launch = batch_launch,
};
