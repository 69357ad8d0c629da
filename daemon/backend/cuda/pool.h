/*
 * daemon/backend/cuda/pool.h — the device memory pool of the cuda backend: CUB's
 * CachingDeviceAllocator (shipped with the CUDA Toolkit's CCCL) behind a
 * small C interface, in the spirit of RMM's pool resource.
 *
 * Blocks are rounded up to bins (bin_growth^k bytes, min_bin <= k <=
 * max_bin) and kept when freed, so a warm pool answers without cudaMalloc or
 * cudaFree (cudaFree synchronises the whole device). Requests above the top
 * bin are allocated exactly and not cached. max_cached bounds the bytes kept
 * idle; max_total bounds what the pool hands out at once (0: the device's
 * memory). At creation one block of each bin, smallest first, is allocated
 * while `reserve` bytes last and returned, so early requests hit warm memory.
 *
 * Blocks pass between tenants: each allocation names its owner (a tenant's
 * number; 0 is gpud's own, scratch), and says whether the block may hold
 * bytes its owner did not write (`foreign`): a fresh block from cudaMalloc,
 * or a cached one another owner held last. The caller clears a foreign
 * block before its owner can read it (the cuda backend's clear op); a block
 * that passes within one owner is handed out as it is.
 *
 * Safe from any thread (CUB's allocator takes a mutex; the owners' maps are
 * under the pool's).
 */
#ifndef GPUD_POOL_H
#define GPUD_POOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpud_pool gpud_pool;

typedef struct pool_config {
	int device;
	unsigned bin_growth; /* >= 2 */
	unsigned min_bin, max_bin;
	uint64_t max_cached; /* bytes kept idle at most */
	uint64_t max_total;  /* bytes handed out at once at most; 0: the device's */
	uint64_t reserve;    /* bytes to warm at creation */
} pool_config;

typedef struct pool_stats {
	uint64_t in_use;     /* bytes handed out (rounded to bins) */
	uint64_t cached;     /* bytes idle in the pool */
	uint64_t high_water; /* most bytes in use at once */
	uint64_t max_total;
	uint64_t allocs, hits, frees; /* hits: answered without cudaMalloc */
	uint64_t foreign;             /* allocations handed out foreign (to be cleared) */
} pool_stats;

/* 0, or -1 with err set. */
int pool_create(const pool_config *cfg, gpud_pool **out, char *err, size_t errlen);
void pool_destroy(gpud_pool *p);

enum { POOL_OK = 0, POOL_OUT_OF_MEMORY = 1, POOL_CUDA_ERROR = 2, POOL_MISS = 3 };

/*
 * A block of at least bytes for owner; *foreign as above. Returns POOL_OK,
 * POOL_OUT_OF_MEMORY (err says how much was asked and how much the pool and
 * the device have) or POOL_CUDA_ERROR (err names the call).
 */
int pool_alloc(gpud_pool *p, size_t bytes, uint64_t owner, void **ptr, int *foreign, char *err,
	       size_t errlen);
/*
 * pool_alloc from the cache only: POOL_MISS (nothing done) where it would
 * call cudaMalloc (no cached block of that bin, or a size above the top
 * bin); never waits for the device. For the loop; the miss is then
 * pool_alloc on a worker.
 */
int pool_alloc_cached(gpud_pool *p, size_t bytes, uint64_t owner, void **ptr, int *foreign,
		      char *err, size_t errlen);
/* Returns a block; 0, or -1 with err naming the CUDA failure. */
int pool_free(gpud_pool *p, void *ptr, char *err, size_t errlen);
/* 1 if pool_free(ptr) would keep the block cached (no cudaFree, which
 * waits for the whole device), 0 if it would give it back to CUDA. */
int pool_free_is_cached(gpud_pool *p, void *ptr);
/* What pool_alloc would hand out for bytes (the bin size). */
uint64_t pool_rounded(const gpud_pool *p, size_t bytes);
/* The bytes of the block at ptr as the pool handed it out (its bin's size:
 * what an owner may reach through it); 0 if ptr is no live block of the pool. */
uint64_t pool_block_bytes(gpud_pool *p, void *ptr);

void pool_get_stats(gpud_pool *p, pool_stats *out);

#ifdef __cplusplus
}
#endif
#endif
