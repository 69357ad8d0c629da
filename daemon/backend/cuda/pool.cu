/*
 * daemon/backend/cuda/pool.cu — gpud_pool over cub::CachingDeviceAllocator. CUDA C++ only
 * because CUB is a C++ library; the rest of gpud sees daemon/backend/cuda/pool.h.
 *
 * Every block is associated with one private stream on which nothing else
 * runs: gpud returns a block only after every operation on it has completed,
 * so the event CUB records at free is already complete and the block can be
 * reused at once, from any stream.
 *
 * Owners (pool.h): a live block's owner is kept from its allocation to its
 * free; a freed block that CUB keeps cached keeps its owner while cached. A
 * block counts as taken from the cache only when it had such an entry and
 * CUB's idle bytes fell by exactly its size; anything else (a cudaMalloc,
 * a cache CUB emptied to retry, a free racing with the count) is foreign,
 * which costs at worst a clear that was not needed.
 */
#include <cub/util_allocator.cuh>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <new>
#include <unordered_map>

#include "daemon/backend/cuda/pool.h"
#include "kernels/core/cuda_check.h"

struct gpud_pool {
	cub::CachingDeviceAllocator *cub;
	cudaStream_t stream;
	int device;
	unsigned bin_growth, min_bin, max_bin;
	uint64_t max_total;
	std::mutex mtx; /* guards the counters and maps below */
	uint64_t in_use, high_water, allocs, hits, frees, foreign;
	std::unordered_map<void *, uint64_t> live_owner;   /* handed out: its owner */
	std::unordered_map<void *, uint64_t> cached_owner; /* idle in CUB's cache: who held it */
};

/* CUB's own rounding and bin limits, so the accounting matches its blocks. */
uint64_t pool_rounded(const gpud_pool *p, size_t bytes)
{
	unsigned bin;
	size_t rounded;
	p->cub->NearestPowerOf(bin, rounded, p->bin_growth, bytes);
	if (bin > p->max_bin)
		return bytes; /* allocated exactly, not cached */
	if (bin < p->min_bin)
		return p->cub->min_bin_bytes;
	return rounded;
}

int pool_create(const pool_config *cfg, gpud_pool **out, char *err, size_t errlen)
{
	*out = nullptr;
	if (cfg->bin_growth < 2 || cfg->min_bin > cfg->max_bin) {
		snprintf(err, errlen,
			 "pool: bin_growth %u must be >= 2 and min_bin %u <= max_bin %u",
			 cfg->bin_growth, cfg->min_bin, cfg->max_bin);
		return -1;
	}
	/* CUB computes bin sizes in 32-bit arithmetic. */
	uint64_t top = 1;
	for (unsigned i = 0; i < cfg->max_bin; i++)
		top *= cfg->bin_growth;
	if (top > 0x80000000ull) {
		snprintf(err, errlen, "pool: the top bin (%u^%u bytes) must be at most 2 GiB",
			 cfg->bin_growth, cfg->max_bin);
		return -1;
	}
	gpud_pool *p = new (std::nothrow) gpud_pool();
	if (p == nullptr) {
		snprintf(err, errlen, "pool: out of memory");
		return -1;
	}
	p->device = cfg->device;
	p->bin_growth = cfg->bin_growth;
	p->min_bin = cfg->min_bin;
	p->max_bin = cfg->max_bin;
	p->max_total = cfg->max_total;
	p->in_use = p->high_water = p->allocs = p->hits = p->frees = p->foreign = 0;
	cudaError_t e = cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		cuda_fail(e, "cudaStreamCreateWithFlags (pool)", err, errlen);
		delete p;
		return -1;
	}
	p->cub = new (std::nothrow)
		cub::CachingDeviceAllocator(cfg->bin_growth, cfg->min_bin, cfg->max_bin,
					    (size_t)cfg->max_cached, true);
	if (p->cub == nullptr) {
		snprintf(err, errlen, "pool: out of memory");
		cudaStreamDestroy(p->stream);
		delete p;
		return -1;
	}
	if (p->max_total == 0) {
		size_t fr = 0, total = 0;
		cudaMemGetInfo(&fr, &total);
		p->max_total = total;
	}
	/*
	 * Warm the pool: one block of each bin from the smallest up while the
	 * reserve lasts, all returned at once so they stay cached.
	 */
	void *warm[64];
	int nwarm = 0;
	uint64_t left = cfg->reserve, size = 1;
	for (unsigned i = 0; i < cfg->min_bin; i++)
		size *= cfg->bin_growth;
	for (unsigned k = cfg->min_bin; k <= cfg->max_bin && nwarm < 64;
	     k++, size *= cfg->bin_growth) {
		if (size > left || size > cfg->max_cached)
			break;
		if (p->cub->DeviceAllocate(p->device, &warm[nwarm], size, p->stream) != cudaSuccess)
			break;
		nwarm++;
		left -= size;
	}
	cudaGetLastError();
	/* no owner's yet: cached without an owner, so foreign to their first */
	for (int i = 0; i < nwarm; i++)
		p->cub->DeviceFree(p->device, warm[i]);
	*out = p;
	return 0;
}

void pool_destroy(gpud_pool *p)
{
	if (p == nullptr)
		return;
	p->cub->FreeAllCached();
	delete p->cub;
	cudaStreamDestroy(p->stream);
	delete p;
}

static uint64_t cached_free(gpud_pool *p)
{
	std::lock_guard<std::mutex> c(p->cub->mutex);
	return p->cub->cached_bytes[p->device].free;
}

/* 1 if CUB's DeviceAllocate would take a cached block for bytes (its own search,
 * on p->stream, which every block of the pool was allocated and freed on). */
static bool cached_fit(gpud_pool *p, size_t bytes)
{
	cub::CachingDeviceAllocator::BlockDescriptor key(p->device);
	key.associated_stream = p->stream;
	p->cub->NearestPowerOf(key.bin, key.bytes, p->bin_growth, bytes);
	if (key.bin > p->max_bin)
		return false; /* allocated exactly, never cached */
	if (key.bin < p->min_bin) {
		key.bin = p->min_bin;
		key.bytes = p->cub->min_bin_bytes;
	}
	std::lock_guard<std::mutex> c(p->cub->mutex);
	auto it = p->cub->cached_blocks.lower_bound(key);
	return it != p->cub->cached_blocks.end() && it->device == p->device && it->bin == key.bin &&
	       it->associated_stream == p->stream;
}

/* Under p->mtx throughout, so a block cached_fit saw is still there for
 * DeviceAllocate (every allocation of the pool goes through here). */
/* The block at ptr among CUB's cached ones of its bin (under CUB's mutex). */
static bool is_cached(gpud_pool *p, void *ptr, unsigned bin, size_t bytes)
{
	cub::CachingDeviceAllocator::BlockDescriptor key(p->device);
	key.bin = bin;
	key.bytes = bytes;
	key.associated_stream = nullptr;
	/* cached_blocks is ordered by device and size */
	for (auto it = p->cub->cached_blocks.lower_bound(key);
	     it != p->cub->cached_blocks.end() && it->device == p->device && it->bytes == bytes;
	     ++it)
		if (it->d_ptr == ptr)
			return true;
	return false;
}

/* The live block at ptr (under CUB's mutex): its bin and bytes; false if none. */
static bool live_block(gpud_pool *p, void *ptr, unsigned *bin, size_t *bytes)
{
	cub::CachingDeviceAllocator::BlockDescriptor key(ptr, p->device);
	auto it = p->cub->live_blocks.find(key);
	if (it == p->cub->live_blocks.end())
		return false;
	*bin = it->bin;
	*bytes = it->bytes;
	return true;
}

static int alloc_locked(gpud_pool *p, size_t bytes, uint64_t owner, void **ptr, int *foreign,
			bool cached_only, char *err, size_t errlen)
{
	uint64_t rounded = pool_rounded(p, bytes ? bytes : 1);
	std::lock_guard<std::mutex> g(p->mtx);

	if (p->in_use + rounded > p->max_total) {
		snprintf(
			err, errlen,
			"out of device memory: asked for %zu bytes (%llu with rounding); the pool has "
			"%llu of its %llu-byte limit in use",
			bytes, (unsigned long long)rounded, (unsigned long long)p->in_use,
			(unsigned long long)p->max_total);
		return POOL_OUT_OF_MEMORY;
	}
	if (cached_only && !cached_fit(p, bytes ? bytes : 1)) {
		snprintf(err, errlen, "no cached block of %zu bytes", bytes);
		return POOL_MISS;
	}
	uint64_t before = cached_free(p);
	cudaError_t e = p->cub->DeviceAllocate(p->device, ptr, bytes ? bytes : 1, p->stream);
	if (e != cudaSuccess) {
		if (e == cudaErrorMemoryAllocation) {
			cudaGetLastError(); /* not sticky: clear it */
			size_t fr = 0, total = 0;
			cudaMemGetInfo(&fr, &total);
			snprintf(
				err, errlen,
				"out of device memory: asked for %zu bytes; %zu of %zu bytes free on "
				"device %d (pool: %llu bytes in use)",
				bytes, fr, total, p->device, (unsigned long long)p->in_use);
			return POOL_OUT_OF_MEMORY;
		}
		cuda_fail(e, "cudaMalloc (pool)", err, errlen);
		return POOL_CUDA_ERROR;
	}
	uint64_t after = cached_free(p);
	p->allocs++;
	p->hits += after < before; /* taken from the cache, no cudaMalloc */
	/* foreign unless it is the cached block it seems: its entry, and CUB's
	 * idle bytes fell by its size alone */
	unsigned bin = 0;
	size_t block = 0;
	{
		std::lock_guard<std::mutex> c(p->cub->mutex);
		live_block(p, *ptr, &bin, &block);
	}
	if (before > after && before - after > block)
		p->cached_owner.clear(); /* CUB emptied its cache: those blocks are gone */
	auto it = p->cached_owner.find(*ptr);
	bool from_cache = it != p->cached_owner.end() && before - after == block;
	*foreign = !from_cache || it->second != owner;
	if (it != p->cached_owner.end())
		p->cached_owner.erase(it);
	p->live_owner[*ptr] = owner;
	p->foreign += *foreign;
	p->in_use += rounded;
	if (p->in_use > p->high_water)
		p->high_water = p->in_use;
	return POOL_OK;
}

int pool_alloc(gpud_pool *p, size_t bytes, uint64_t owner, void **ptr, int *foreign, char *err,
	       size_t errlen)
{
	return alloc_locked(p, bytes, owner, ptr, foreign, false, err, errlen);
}

int pool_alloc_cached(gpud_pool *p, size_t bytes, uint64_t owner, void **ptr, int *foreign,
		      char *err, size_t errlen)
{
	return alloc_locked(p, bytes, owner, ptr, foreign, true, err, errlen);
}

uint64_t pool_block_bytes(gpud_pool *p, void *ptr)
{
	unsigned bin;
	size_t bytes;
	std::lock_guard<std::mutex> c(p->cub->mutex);
	return live_block(p, ptr, &bin, &bytes) ? bytes : 0;
}

int pool_free(gpud_pool *p, void *ptr, char *err, size_t errlen)
{
	size_t bytes = 0;
	unsigned bin = 0;
	uint64_t owner = 0;
	bool owned = false;
	{
		/* The block's size, before CUB forgets it. */
		std::lock_guard<std::mutex> c(p->cub->mutex);
		live_block(p, ptr, &bin, &bytes);
	}
	{
		std::lock_guard<std::mutex> g(p->mtx);
		auto it = p->live_owner.find(ptr);
		if (it != p->live_owner.end()) {
			owner = it->second;
			owned = true;
			p->live_owner.erase(it);
		}
	}
	/* Not under p->mtx: a block CUB gives back is cudaFree, which waits for
	 * the device (on a worker), and the loop's allocations must not wait. */
	cudaError_t e = p->cub->DeviceFree(p->device, ptr);
	std::lock_guard<std::mutex> g(p->mtx);
	if (owned && e == cudaSuccess && bin != cub::CachingDeviceAllocator::INVALID_BIN) {
		std::lock_guard<std::mutex> c(p->cub->mutex);
		if (is_cached(p, ptr, bin, bytes))
			p->cached_owner[ptr] = owner;
	}
	p->in_use -= bytes;
	p->frees++;
	if (e != cudaSuccess)
		return cuda_fail(e, "cudaFree (pool)", err, errlen);
	return 0;
}

int pool_free_is_cached(gpud_pool *p, void *ptr)
{
	std::lock_guard<std::mutex> c(p->cub->mutex);
	cub::CachingDeviceAllocator::BlockDescriptor key(ptr, p->device);
	auto it = p->cub->live_blocks.find(key);
	if (it == p->cub->live_blocks.end())
		return 1; /* not ours: pool_free reports it */
	/* CUB's own test in DeviceFree: a binned block that fits in the cache. */
	return it->bin != cub::CachingDeviceAllocator::INVALID_BIN &&
	       p->cub->cached_bytes[p->device].free + it->bytes <= p->cub->max_cached_bytes;
}

void pool_get_stats(gpud_pool *p, pool_stats *out)
{
	std::lock_guard<std::mutex> g(p->mtx);
	out->in_use = p->in_use;
	out->high_water = p->high_water;
	out->max_total = p->max_total;
	out->allocs = p->allocs;
	out->hits = p->hits;
	out->frees = p->frees;
	out->foreign = p->foreign;
	std::lock_guard<std::mutex> c(p->cub->mutex);
	out->cached = p->cub->cached_bytes[p->device].free;
}
