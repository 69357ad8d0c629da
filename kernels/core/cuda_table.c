/*
 * kernels/core/cuda_table.c — the CUDA table, made from kernels/kernels.def:
 * entry i is cuda_kernel_<name> of the i-th KERNEL line, as kernel_list()'s
 * entry i is kernel_<name>. No state but the constant table.
 */
#include "kernels/core/cuda_kernel.h"

#define KERNEL(name, folder) extern const cuda_kernel cuda_kernel_##name;
#include "kernels/kernels.def"

static const cuda_kernel *const table[KERNEL_COUNT] = {
#define KERNEL(name, folder) [KERNEL_ID_##name] = &cuda_kernel_##name,
#include "kernels/kernels.def"
};

const cuda_kernel *const *cuda_kernel_list(size_t *n)
{
	*n = KERNEL_COUNT;
	return table;
}

int cuda_kernel_tables_check(char *err, size_t errlen)
{
	return kernel_tables_check("CUDA", (const void *const *)table, KERNEL_COUNT, err, errlen);
}
