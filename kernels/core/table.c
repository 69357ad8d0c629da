/*
 * kernels/core/table.c — the table of built-in kernels, made from
 * kernels/kernels.def: entry i is kernel_<name> of the i-th KERNEL line, whose
 * id is i (KERNEL_ID_<name>); and the check every backend's table passes
 * against it. No state but the constant table.
 */
#include <stdio.h>
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

int kernel_tables_check(const char *backend, const void *const *entries, size_t n, char *err,
			size_t errlen)
{
	if (n != KERNEL_COUNT) {
		snprintf(err, errlen, "the kernel tables disagree: %d kernels, %zu %s kernels",
			 KERNEL_COUNT, n, backend);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		/* an entry's first member is its name */
		const char *name = *(const char *const *)entries[i];
		if (table[i]->id != (int)i || strcmp(table[i]->name, name) != 0) {
			snprintf(err, errlen,
				 "the kernel tables disagree at entry %zu: kernel %s (id %d), %s "
				 "kernel %s",
				 i, table[i]->name, table[i]->id, backend, name);
			return -1;
		}
	}
	return 0;
}
