/* kernels/cuda_table.c — the kernels that have a CUDA implementation. */
#include <string.h>

#include "kernels/core/cuda_kernel.h"

extern const cuda_kernel cuda_kernel_lombscargle, cuda_kernel_add, cuda_kernel_sub, cuda_kernel_mul,
	cuda_kernel_div, cuda_kernel_axpy, cuda_kernel_saxpy_trig, cuda_kernel_rel_diff,
	cuda_kernel_sum_of_squares, cuda_kernel_sum, cuda_kernel_asum, cuda_kernel_min,
	cuda_kernel_max, cuda_kernel_mean, cuda_kernel_dot, cuda_kernel_histogram,
	cuda_kernel_matmul, cuda_kernel_uniform, cuda_kernel_normal;

static const cuda_kernel *const table[] = {
	&cuda_kernel_lombscargle, &cuda_kernel_add,      &cuda_kernel_sub,
	&cuda_kernel_mul,         &cuda_kernel_div,      &cuda_kernel_axpy,
	&cuda_kernel_saxpy_trig,  &cuda_kernel_rel_diff, &cuda_kernel_sum_of_squares,
	&cuda_kernel_sum,         &cuda_kernel_asum,     &cuda_kernel_min,
	&cuda_kernel_max,         &cuda_kernel_mean,     &cuda_kernel_dot,
	&cuda_kernel_histogram,   &cuda_kernel_matmul,   &cuda_kernel_uniform,
	&cuda_kernel_normal,
};

const cuda_kernel *cuda_kernel_find(const char *name)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i]->name, name) == 0)
			return table[i];
	return NULL;
}

const cuda_kernel *const *cuda_kernel_list(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}
