/*
 * kernels/core/list.h — the ids of the built-in kernels, generated from
 * kernels/kernels.def: KERNEL_ID_<name> is the kernel's position in
 * kernel_list() and in every backend's table (cpu_kernel_list(),
 * cuda_kernel_list()), and its kernel_def's id.
 */
#ifndef GPUD_KERNELS_LIST_H
#define GPUD_KERNELS_LIST_H

#ifdef __cplusplus
extern "C" {
#endif

enum kernel_id {
#define KERNEL(name, folder) KERNEL_ID_##name,
#include "kernels/kernels.def"
	KERNEL_COUNT
};

/* The id of a user's kernel (kernels/custom/): in no table. */
#define KERNEL_ID_CUSTOM (-1)
/* gpud's own kernel behind dynamic batching, lombscargle_batch
 * (kernels/lombscargle/batch_kernel.h): in no table, no client names it;
 * cpu_kernel_of and the cuda backend find its entries by this id. */
#define KERNEL_ID_LOMBSCARGLE_BATCH (-2)

#ifdef __cplusplus
}
#endif
#endif
