/*
 * kernels/core/cpu_table.c — the cpu table, made from kernels/kernels.def:
 * entry i is cpu_kernel_<name> of the i-th KERNEL line, as kernel_list()'s
 * entry i is kernel_<name>. No state but the constant table.
 */
#include <stdio.h>

#include "kernels/core/cpu_kernel.h"

#define KERNEL(name, folder) extern const cpu_kernel cpu_kernel_##name;
#include "kernels/kernels.def"

static const cpu_kernel *const table[KERNEL_COUNT] = {
#define KERNEL(name, folder) [KERNEL_ID_##name] = &cpu_kernel_##name,
#include "kernels/kernels.def"
};

const cpu_kernel *const *cpu_kernel_list(size_t *n)
{
	*n = KERNEL_COUNT;
	return table;
}

extern const cpu_kernel cpu_kernel_lombscargle_batch;

const cpu_kernel *cpu_kernel_of(const kernel_def *k)
{
	if (k->id == KERNEL_ID_LOMBSCARGLE_BATCH) /* gpud's own, in no table */
		return &cpu_kernel_lombscargle_batch;
	return k->id >= 0 && k->id < KERNEL_COUNT ? table[k->id] : NULL;
}

int cpu_kernel_tables_check(char *err, size_t errlen)
{
	size_t n;
	const kernel_def *const *ks = kernel_list(&n);

	if (kernel_tables_check("cpu", (const void *const *)table, KERNEL_COUNT, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const cpu_kernel *c = table[i];
		if (c->items == NULL || c->run == NULL) {
			snprintf(err, errlen, "cpu kernel %s has no items or no run", c->name);
			return -1;
		}
		if ((c->verdict == NULL) != (ks[i]->verdict_message == NULL)) {
			snprintf(err, errlen,
				 "kernel %s has half of the verdict functions: the cpu kernel's "
				 "verdict %s, the kernel's verdict_message %s",
				 c->name, c->verdict ? "set" : "unset",
				 ks[i]->verdict_message ? "set" : "unset");
			return -1;
		}
	}
	return 0;
}
