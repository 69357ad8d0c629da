/*
 * kernels/lombscargle/device.cuh — device helpers the direct kernel
 * (lombscargle.cu) and the NUFFT path (nufft.cu) share: a load of either
 * float type as double, and a block's sum of a double. Inline device code
 * only, in each includer's anonymous namespace; no state.
 */
#ifndef GPUD_LOMBSCARGLE_DEVICE_CUH
#define GPUD_LOMBSCARGLE_DEVICE_CUH

/* Element i of an array of T (float or double), as double. */
template <typename T> __device__ __forceinline__ double ld(const void *p, long long i)
{
	return (double)((const T *)p)[i];
}

/*
 * The sum of v over a block of NT threads (a multiple of 32); every thread
 * gets it. scratch: NT / 32 doubles of shared memory, free again on return
 * (the last barrier), so calls may follow each other.
 */
template <int NT> __device__ double block_sum(double v, double *scratch)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		scratch[threadIdx.x >> 5] = v;
	__syncthreads();
	double t = 0;
	for (int i = 0; i < NT / 32; i++)
		t += scratch[i];
	__syncthreads();
	return t;
}

#endif
