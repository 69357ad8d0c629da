/*
 * daemon/backend/backend.c — the table of backends, opening one by name,
 * and the op wrappers the request layer calls (each checks it runs on the
 * loop thread).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend/backend.h"
#include "daemon/log.h"
#include "daemon/loop.h"

extern const backend_ops backend_cpu_ops;
#ifdef GPUD_HAVE_CUDA
extern const backend_ops backend_cuda_ops;
#define CUDA_OPS (&backend_cuda_ops)
#else
#define CUDA_OPS NULL
#endif

/* In the order "auto" tries them. ops NULL: not built into this gpud (why says why). */
static const struct backend_entry {
	const char *name;
	const backend_ops *ops;
	const char *why;
} backends[] = {
	{"cuda", CUDA_OPS,
	 "this gpud was built without CUDA (rebuild with nvcc on PATH or CUDA=1)"},
	{"cpu", &backend_cpu_ops, NULL},
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

const char *backend_names(void)
{
	static char names[64];
	if (names[0] == '\0') {
		size_t n = 0;
		for (size_t i = 0; i < NBACKENDS; i++)
			if (backends[i].ops)
				n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
						      n ? ", " : "", backends[i].name);
	}
	return names;
}

const backend_ops *backend_pick(const gpud_config *cfg, int *count, char *err, size_t errlen)
{
	int automatic = strcmp(cfg->backend, "auto") == 0;

	for (size_t i = 0; i < NBACKENDS; i++) {
		const struct backend_entry *e = &backends[i];
		if (!automatic && strcmp(cfg->backend, e->name) != 0)
			continue;
		if (e->ops == NULL) {
			snprintf(err, errlen, "backend %s: %s", e->name, e->why);
			if (!automatic)
				return NULL;
			log_warn("backend auto: %s; trying the %s backend", e->why,
				 backends[i + 1].name);
			continue;
		}
		int n = e->ops->count(cfg, err, errlen);
		if (n > 0) {
			/* libuv sizes its pool from the environment when the first
			 * work is queued: copies and runs wait for the GPU there
			 * (cuda: at least 4), or run kernels (cpu: cpu_threads of
			 * them, and one spare for copies and a tenant's first
			 * chunk). */
			char threads[16];
			int t = cfg->cpu_threads + e->ops->pool_spare;
			if (e->ops->queue_ordered && t < 4)
				t = 4;
			snprintf(threads, sizeof(threads), "%d", t);
			setenv("UV_THREADPOOL_SIZE", threads, 1);
			*count = n;
			return e->ops;
		}
		if (!automatic)
			return NULL;
		if (i + 1 < NBACKENDS)
			log_warn("backend auto: %s; trying the %s backend", err,
				 backends[i + 1].name);
	}
	if (!automatic)
		snprintf(err, errlen, "backend '%s': this gpud has %s", cfg->backend,
			 backend_names());
	return NULL;
}

int backend_open(gpud_backend *b, uv_loop_t *loop, const backend_ops *ops, const gpud_config *cfg,
		 struct hostmem *host, int device, char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	b->loop = loop;
	b->ops = ops;
	b->device = device;
	b->host = host;
	if (ops->open(b, cfg, err, errlen) == 0)
		return 0;
	b->ops = NULL;
	return -1;
}

int backend_start(gpud_backend *b, const gpud_config *cfg, char *err, size_t errlen)
{
	int rv = b->ops->start ? b->ops->start(b, cfg, err, errlen) : 0;
	b->started = rv == 0;
	return rv;
}

void backend_close(gpud_backend *b)
{
	if (b->ops && b->ops->close)
		b->ops->close(b);
	b->ops = NULL;
	b->started = 0;
}

int backend_default_run_slots(gpud_backend *b, const gpud_config *cfg)
{
	return b->ops->default_run_slots ? b->ops->default_run_slots(b, cfg) : 1;
}

dstatus backend_alloc(gpud_backend *b, size_t bytes, uint64_t owner, void **mem, int *foreign,
		      char *err, size_t errlen)
{
	ON_LOOP("backend alloc");
	*foreign = 0;
	if (b->ops->alloc_cached)
		return b->ops->alloc_cached(b, bytes, owner, mem, foreign, err, errlen);
	return b->ops->alloc(b, bytes, owner, mem, err, errlen);
}

dstatus backend_alloc_wait(gpud_backend *b, size_t bytes, uint64_t owner, void **mem, char *err,
			   size_t errlen)
{
	OFF_LOOP("backend alloc that may wait");
	return b->ops->alloc(b, bytes, owner, mem, err, errlen);
}

dstatus backend_clear(gpud_backend *b, uint32_t queue, void *mem, size_t keep, backend_done_fn done,
		      void *arg, char *err, size_t errlen)
{
	ON_LOOP("backend clear");
	if (b->ops->clear == NULL) {
		snprintf(err, errlen, "%s backend: no clear (its blocks are never foreign)",
			 b->ops->name);
		return ST_INTERNAL;
	}
	return b->ops->clear(b, queue, mem, keep, done, arg, err, errlen);
}

void backend_free(gpud_backend *b, void *mem)
{
	ON_LOOP("backend free");
	b->ops->free(b, mem);
}

dstatus backend_upload(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
		       unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	ON_LOOP("backend upload");
	return b->ops->upload(b, queue, dst, src, len, flags, done, arg, err, errlen);
}

dstatus backend_download(gpud_backend *b, uint32_t queue, void *dst, const void *src, size_t len,
			 unsigned flags, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	ON_LOOP("backend download");
	return b->ops->download(b, queue, dst, src, len, flags, done, arg, err, errlen);
}

dstatus backend_run(gpud_backend *b, uint32_t queue, const kernel_def *k, const kernel_args *a,
		    const backend_tenant *t, const int *cancel, double *kernel_us,
		    backend_fetch *fetch, backend_done_fn done, void *arg, char *err, size_t errlen)
{
	ON_LOOP("backend run");
	if (fetch)
		fetch->fetched = 0;
	return b->ops->run(b, queue, k, a, t, cancel, kernel_us, fetch, done, arg, err, errlen);
}

void backend_prepare_tenant(gpud_backend *b, const char *tenant)
{
	ON_LOOP("backend prepare_tenant");
	if (b->ops->prepare_tenant)
		b->ops->prepare_tenant(b, tenant);
}

dstatus backend_sync(gpud_backend *b, uint32_t queue, backend_done_fn done, void *arg, char *err,
		     size_t errlen)
{
	ON_LOOP("backend sync");
	return b->ops->sync(b, queue, done, arg, err, errlen);
}

dstatus backend_copy_peer(gpud_backend *b, uint32_t queue, gpud_backend *to, void *dst,
			  const void *src, size_t len, backend_done_fn done, void *arg, char *err,
			  size_t errlen)
{
	ON_LOOP("backend copy_peer");
	return b->ops->copy_peer(b, queue, to, dst, src, len, done, arg, err, errlen);
}
