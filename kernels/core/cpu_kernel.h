/*
 * kernels/core/cpu_kernel.h — the cpu side of the kernel table: for every
 * built-in kernel the host code that computes it, which is also the
 * reference every other backend is compared against (the self-test,
 * kernels/core/selftest.h, and the unit and GPU tests). Each kernel's folder
 * defines its cpu_kernel cpu_kernel_<name> in <folder>.c beside its
 * kernel_def; the table is made from kernels/kernels.def
 * (kernels/core/cpu_table.c) as the CUDA table is (cuda_kernel.h).
 *
 * No state: the functions run on the cpu backend's workers (run, verdict:
 * any thread, ranges [lo, hi) each), on the loop (items, item_cost,
 * available) and in the tests and self-tests on the calling thread.
 */
#ifndef GPUD_CPU_KERNEL_H
#define GPUD_CPU_KERNEL_H

#include <stddef.h>

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpu_kernel {
	const char *name; /* matches the kernel_def (every backend's entry starts with it) */
	/* Independent work items, and the function computing items [lo, hi). */
	size_t (*items)(const kernel_args *a);
	void (*run)(const kernel_args *a, size_t lo, size_t hi);
	/*
	 * Optional: the work of one item in units of about a multiply-add or a
	 * sine (lombscargle: a frequency costs ~2 per sample); NULL means 1.
	 * The backend cuts runs into chunks of about equal work, so a cancelled
	 * run stops within milliseconds, and does a run of a few microseconds'
	 * work on the loop itself (no worker's wake): only a kernel that has an
	 * item_cost, since without one an item may be any size (one item: a
	 * whole reduction).
	 */
	size_t (*item_cost)(const kernel_args *a);
	/*
	 * Optional: 0 when run can work in this process, else -1 with why in
	 * err (a library it loads at run time is missing). The cpu backend asks
	 * at start (loading the library there, not on a run) and before each
	 * run; the self-test and the tests ask before using it as the reference.
	 */
	int (*available)(char *err, size_t errlen);
	/*
	 * Optional, for a kernel with verdicts (kernel_def.verdict_message):
	 * 0, or the kernel's own code when the arguments' values are wrong
	 * (negative weights). The cpu backend asks it on a worker, with the run;
	 * the CUDA kernel writes the same codes to cuda_launch_ctx.verdict.
	 */
	unsigned (*verdict)(const kernel_args *a);
} cpu_kernel;

/*
 * The cpu table, made from kernels/kernels.def: entry i is cpu_kernel_<name>
 * of kernel_list()'s entry i (kernels/core/cpu_table.c).
 */
const cpu_kernel *const *cpu_kernel_list(size_t *n);

/* k's entry (by its id; gpud's own lombscargle_batch's by KERNEL_ID_LOMBSCARGLE_BATCH);
 * NULL for a user's kernel (KERNEL_ID_CUSTOM). */
const cpu_kernel *cpu_kernel_of(const kernel_def *k);

/*
 * 0 when cpu_kernel_list() and kernel_list() agree (kernel_tables_check),
 * and every entry has items and run, and verdict exactly where its kernel has
 * verdict_message; else -1 with the first difference in err.
 */
int cpu_kernel_tables_check(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
