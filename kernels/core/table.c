/*
 * kernels/core/table.c — the table of built-in kernels, made from
 * kernels/kernels.def: entry i is kernel_<name> of the i-th KERNEL line, whose
 * id is i (KERNEL_ID_<name>).
 */
#include <string.h>

#include "kernels/core/kernel.h"

#define KERNEL(name, folder) extern const kernel_def kernel_##name;
#include "kernels/kernels.def"

static const kernel_def *const table[KERNEL_COUNT] = {
#define KERNEL(name, folder) [KERNEL_ID_##name] = &kernel_##name,
#include "kernels/kernels.def"
};

const kernel_def *kernel_find(const char *name)
{
	for (size_t i = 0; i < KERNEL_COUNT; i++)
		if (strcmp(table[i]->name, name) == 0)
			return table[i];
	return NULL;
}

const kernel_def *const *kernel_list(size_t *n)
{
	*n = KERNEL_COUNT;
	return table;
}
