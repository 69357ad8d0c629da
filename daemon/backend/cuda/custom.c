/*
 * daemon/backend/cuda/custom.c — users' kernels on the GPU: compiled by
 * NVRTC (nvrtc.c) on a worker, kept in a cubin cache on disk, loaded with
 * the runtime's library API (cudaLibraryLoadData), and a run's launch
 * planned (custom_plan_make: shape and argument bytes) on the loop. The plan
 * goes to the tenant's worker process (tworkers.c), or, with kernel_workers
 * off, is launched here with cudaLaunchKernel. The cubin is also kept as a
 * sealed memfd (code_fd), which is how workers get it.
 *
 * Threads: compiling and loading on a worker (or at start, before gpud
 * serves); unloading on a worker after the last run; launches on the loop.
 * A custom_kernel's code fields (lib, fn, code_*) are written before the
 * kernel is added to its table and cleared after it left it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/backend/cuda/internal.h"
#include "daemon/backend/cuda/nvrtc.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "kernels/core/cuda_check.h"

static atomic_uint next_code_id = 1; /* tenant workers know code by these */

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* mkdir -p */
static void make_dirs(const char *path)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", path);
	for (char *q = p + 1; *q; q++) {
		if (*q == '/') {
			*q = '\0';
			mkdir(p, 0755);
			*q = '/';
		}
	}
	mkdir(p, 0755);
}

/*
 * The cache file of a compilation: DIR/<fnv64 of the key>.cubin holding
 * "gpud-cubin 1\n", the key's length (8 bytes), the key (NVRTC version, arch,
 * options, entry, source) and the cubin. A file whose key differs (a hash
 * collision, another NVRTC) is not used.
 */
static void *cache_read(const char *path, const char *key, size_t klen, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char magic[13];
	uint64_t kl;
	void *cubin = NULL;
	char *k2 = NULL;
	long end;
	if (f == NULL)
		return NULL;
	if (fread(magic, 1, 13, f) != 13 || memcmp(magic, "gpud-cubin 1\n", 13) != 0 ||
	    fread(&kl, 8, 1, f) != 1 || kl != klen || (k2 = malloc(klen)) == NULL ||
	    fread(k2, 1, klen, f) != klen || memcmp(k2, key, klen) != 0)
		goto out;
	long start = ftell(f);
	if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) <= start ||
	    fseek(f, start, SEEK_SET) != 0)
		goto out;
	*len = (size_t)(end - start);
	if ((cubin = malloc(*len)) != NULL && fread(cubin, 1, *len, f) != *len) {
		free(cubin);
		cubin = NULL;
	}
out:
	free(k2);
	fclose(f);
	return cubin;
}

static void cache_write(const char *dir, const char *path, const char *key, size_t klen,
			const void *cubin, size_t len)
{
	char tmp[4200];
	uint64_t kl = klen;
	make_dirs(dir);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	FILE *f = fopen(tmp, "wb");
	if (f == NULL) {
		log_warn("kernel cache %s: %s", tmp, strerror(errno));
		return;
	}
	int ok = fwrite("gpud-cubin 1\n", 1, 13, f) == 13 && fwrite(&kl, 8, 1, f) == 1 &&
		 fwrite(key, 1, klen, f) == klen && fwrite(cubin, 1, len, f) == len;
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
		log_warn("kernel cache %s: cannot write", path);
		unlink(tmp);
	}
}

/* Compiles (or loads from the cache) and loads k's code; blocks for as long as
 * NVRTC takes. On a worker, or at start before gpud serves. */
int cuda_compile_now(gpud_backend *b, custom_kernel *k, const char *cache_dir, char *err,
		     size_t errlen)
{
	cuda_backend *cb = b->impl;
	int arch = cb->prop.major * 10 + cb->prop.minor;
	char opt1[64] = "", opt2[64] = "", *key = NULL, path[4200] = "";
	const char *opts[2];
	int nopts = 0;
	void *cubin = NULL;
	size_t len = 0;
	uint64_t t0 = uv_hrtime();
	cudaError_t e;
	int rv = -1;

	const char *ver = nvrtc_version(err, errlen);
	if (ver == NULL)
		return -1;
	if (k->fast_math)
		opts[nopts++] = strcpy(opt1, "--use_fast_math");
	/* Launch bounds from the block size: elementwise code carries
	 * __launch_bounds__(block); a raw kernel's registers are capped so that a
	 * block of that size always fits an SM's register file. */
	unsigned maxreg = k->max_registers;
	if (maxreg == 0 && k->kind == CUSTOM_RAW && k->block > 256)
		maxreg = (unsigned)(cb->prop.regsPerBlock / (int)k->block);
	if (maxreg) {
		snprintf(opt2, sizeof(opt2), "--maxrregcount=%u", maxreg);
		opts[nopts++] = opt2;
	}
	size_t klen = strlen(k->source) + 512;
	if ((key = malloc(klen)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	klen = (size_t)snprintf(key, klen, "nvrtc %s\narch sm_%d\nopts %s %s\nentry %s\n%s", ver,
				arch, opt1, opt2, k->entry, k->source);
	if (cache_dir && cache_dir[0]) {
		snprintf(path, sizeof(path), "%s/%016" PRIx64 ".cubin", cache_dir,
			 fnv1a(key, klen));
		if ((cubin = cache_read(path, key, klen, &len)) != NULL)
			k->cached = 1;
	}
	if (cubin == NULL) {
		if (nvrtc_compile(k->name, k->source, arch, opts, nopts, &cubin, &len, err,
				  errlen) != 0)
			goto out;
		if (path[0])
			cache_write(cache_dir, path, key, klen, cubin, len);
	}
	cudaLibrary_t lib;
	cudaKernel_t kern;
	struct cudaFuncAttributes attr;
	if ((e = cudaSetDevice(cb->device)) != cudaSuccess ||
	    (e = cudaLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0)) != cudaSuccess) {
		cuda_fail(e, "cudaLibraryLoadData", err, errlen);
		cudaGetLastError();
		goto out;
	}
	if ((e = cudaLibraryGetKernel(&kern, lib, k->entry)) != cudaSuccess) {
		snprintf(err, errlen,
			 "the compiled code has no kernel '%s' (declare it extern \"C\" "
			 "__global__): %s",
			 k->entry, cudaGetErrorString(e));
		cudaGetLastError();
		cudaLibraryUnload(lib);
		goto out;
	}
	if (cudaFuncGetAttributes(&attr, (const void *)kern) == cudaSuccess)
		k->registers = attr.numRegs;
	cudaGetLastError();
	/* The cubin kept for tenant workers (tworkers.c): a sealed memfd. */
	if (k->code_len == 0) {
		int fd = memfd_create("gpud-kernel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0 || write(fd, cubin, len) != (ssize_t)len ||
		    fcntl(fd, F_ADD_SEALS,
			  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
			snprintf(err, errlen, "keeping the code of %s: %s", k->name,
				 strerror(errno));
			if (fd >= 0)
				close(fd);
			cudaLibraryUnload(lib);
			goto out;
		}
		k->code_fd = fd;
		k->code_len = len;
		k->code_id = atomic_fetch_add(&next_code_id, 1);
	}
	k->lib = lib;
	k->fn = kern;
	k->arch = arch;
	k->compile_ms = (double)(uv_hrtime() - t0) / 1e6;
	rv = 0;
out:
	free(key);
	free(cubin);
	return rv;
}

typedef struct compile_job {
	uv_work_t work;
	gpud_backend *b;
	custom_kernel *k;
	char cache_dir[4096];
	backend_done_fn done;
	void *arg;
	int rv;
	char err[16384];
} compile_job;

static void compile_work(uv_work_t *w)
{
	compile_job *j = w->data;
	OFF_LOOP("compiling a custom kernel");
	j->rv = cuda_compile_now(j->b, j->k, j->cache_dir, j->err, sizeof(j->err));
}

static void compile_after(uv_work_t *w, int status)
{
	compile_job *j = w->data;
	j->done(j->arg, j->rv == 0 && status == 0 ? ST_OK : ST_INVALID, j->rv == 0 ? NULL : j->err);
	free(j);
}

dstatus cuda_compile(gpud_backend *b, custom_kernel *k, const char *cache_dir, backend_done_fn done,
		     void *arg, char *err, size_t errlen)
{
	compile_job *j = calloc(1, sizeof(*j));
	if (j == NULL) {
		snprintf(err, errlen, "out of memory");
		return ST_OUT_OF_MEMORY;
	}
	*j = (compile_job){.b = b, .k = k, .done = done, .arg = arg};
	snprintf(j->cache_dir, sizeof(j->cache_dir), "%s", cache_dir ? cache_dir : "");
	j->work.data = j;
	uv_queue_work(b->loop, &j->work, compile_work, compile_after);
	return ST_OK;
}

static void unload_work(uv_work_t *w)
{
	cudaLibraryUnload((cudaLibrary_t)w->data);
}

static void unload_after(uv_work_t *w, int status)
{
	free(w);
}

void cuda_release(gpud_backend *b, custom_kernel *k)
{
	cuda_backend *cb = b->impl;
	if (k->code_len) {
		if (cb)
			tw_release_kernel(cb, k);
		close(k->code_fd);
		k->code_len = 0;
	}
	if (k->lib == NULL || cb == NULL || atomic_load(&cb->lost))
		return;
	uv_work_t *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return;
	w->data = k->lib;
	k->lib = k->fn = NULL;
	uv_queue_work(b->loop, w, unload_work, unload_after);
}

/* An argument's bytes as the kernel reads them (little-endian, from the start). */
static uint64_t scalar_bits(gpud_dtype dt, const kernel_value *kv)
{
	uint64_t v = 0;
	switch (dt) {
	case GPUD_F32: {
		float f = (float)kv->s.f64;
		memcpy(&v, &f, sizeof(f));
		break;
	}
	case GPUD_F64:
		memcpy(&v, &kv->s.f64, sizeof(double));
		break;
	case GPUD_I32: {
		int i = (int)kv->s.i64;
		memcpy(&v, &i, sizeof(i));
		break;
	}
	default: {
		long long ll = (long long)kv->s.i64;
		memcpy(&v, &ll, sizeof(ll));
		break;
	}
	}
	return v;
}

static void plan_add(custom_plan *p, uint64_t v, int is_ptr)
{
	p->vals[p->nargs] = v;
	p->is_ptr[p->nargs] = (unsigned char)is_ptr;
	p->nargs++;
}

int custom_plan_make(cuda_backend *cb, const custom_kernel *k, const kernel_args *a, custom_plan *p,
		     char *err, size_t errlen)
{
	long long grid = (long long)cb->prop.multiProcessorCount * k->blocks_per_sm,
		  block = k->block;

	p->nargs = 0;
	if (k->kind == CUSTOM_REDUCTION) {
		/* One block per output value: the whole arrays (rows 1), or each row
		 * of 2-d arrays with _axis (kernels/custom/custom.c checked it). */
		long long n = -1, rows = 1;
		for (int i = 0; i < k->nparams && n < 0; i++)
			if (k->params[i].role == KPARAM_IN && !a->v[i].scalar) {
				n = (long long)a->v[i].arr.count;
				if (a->v[k->nparams].present) {
					rows = (long long)a->v[i].arr.shape[0];
					n = rows ? n / rows : 0;
				}
			}
		if (rows <= 0)
			return 1; /* nothing to do */
		if (rows > 2147483647LL) {
			snprintf(err, errlen, "%s: %lld rows: at most 2^31-1 (one block each)",
				 k->name, rows);
			return -1;
		}
		plan_add(p, (uint64_t)(n < 0 ? 0 : n), 0);
		for (int i = 0; i < k->nparams; i++) {
			const kernel_value *v = &a->v[i];
			if (k->params[i].role == KPARAM_OUT) {
				plan_add(p, (uint64_t)(uintptr_t)v->arr.data, 1);
				continue;
			}
			plan_add(p, v->scalar ? 0 : (uint64_t)(uintptr_t)v->arr.data, !v->scalar);
			plan_add(p, v->scalar ? scalar_bits(k->params[i].dtype, v) : 0, 0);
			plan_add(p, (uint64_t)!v->scalar, 0);
		}
		grid = rows;
	} else if (k->kind == CUSTOM_ELEMENTWISE) {
		long long n = -1;
		for (int i = 0; i < k->nparams && n < 0; i++)
			if (k->params[i].role == KPARAM_IN && !a->v[i].scalar)
				n = (long long)a->v[i].arr.count;
		if (n <= 0)
			return 1; /* nothing to do */
		plan_add(p, (uint64_t)n, 0);
		for (int i = 0; i < k->nparams; i++) {
			const kernel_value *v = &a->v[i];
			if (k->params[i].role == KPARAM_OUT) {
				plan_add(p, (uint64_t)(uintptr_t)v->arr.data, 1);
				continue;
			}
			plan_add(p, v->scalar ? 0 : (uint64_t)(uintptr_t)v->arr.data, !v->scalar);
			plan_add(p, v->scalar ? scalar_bits(k->params[i].dtype, v) : 0, 0);
			plan_add(p, (uint64_t)!v->scalar, 0);
		}
		long long need = (n + block - 1) / block;
		if (need < grid)
			grid = need;
	} else {
		for (int i = 0; i < k->nparams; i++) {
			if (k->params[i].role == KPARAM_SCALAR)
				plan_add(p, scalar_bits(k->params[i].dtype, &a->v[i]), 0);
			else
				plan_add(p, (uint64_t)(uintptr_t)a->v[i].arr.data, 1);
		}
		if (k->blocks_per_sm == 0) {
			grid = a->v[k->nparams].s.i64;
			block = a->v[k->nparams + 1].s.i64;
			if (grid < 1 || grid > 2147483647 || block < 1 || block > 1024) {
				snprintf(
					err, errlen,
					"%s: _grid must be 1 to 2^31-1 and _block 1 to 1024, got %lld "
					"and %lld",
					k->name, grid, block);
				return -1;
			}
		}
	}
	p->grid = (unsigned)grid;
	p->block = (unsigned)block;
	return 0;
}

int custom_launch(const custom_kernel *k, const custom_plan *p, cudaStream_t stream, char *err,
		  size_t errlen)
{
	void *args[TW_MAX_ARGS];
	if (k->fn == NULL) {
		snprintf(err, errlen, "kernel %s is not loaded", k->name);
		return -1;
	}
	for (int i = 0; i < p->nargs; i++)
		args[i] = (void *)&p->vals[i];
	dim3 g = {p->grid, 1, 1}, bl = {p->block, 1, 1};
	cudaError_t e = cudaLaunchKernel(k->fn, g, bl, args, 0, stream);
	if (e != cudaSuccess) {
		cuda_fail(e, "cudaLaunchKernel", err, errlen);
		return -1;
	}
	return 0;
}
