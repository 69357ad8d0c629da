/*
 * kernels/core/cuda_table.c — the CUDA table, made from kernels/kernels.def:
 * entry i is cuda_kernel_<name> of the i-th KERNEL line, as kernel_list()'s
 * entry i is kernel_<name>.
 */
#include <stdio.h>
#include <string.h>

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
	size_t n, nc;
	const kernel_def *const *ks = kernel_list(&n);
	const cuda_kernel *const *cs = cuda_kernel_list(&nc);

	if (n != nc) {
		snprintf(err, errlen, "the kernel tables disagree: %zu kernels, %zu CUDA kernels",
			 n, nc);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (ks[i]->id != (int)i || strcmp(ks[i]->name, cs[i]->name) != 0) {
			snprintf(err, errlen,
				 "the kernel tables disagree at entry %zu: kernel %s (id %d), CUDA "
				 "kernel %s",
				 i, ks[i]->name, ks[i]->id, cs[i]->name);
			return -1;
		}
	}
	return 0;
}
