/*
 * daemon/registry.h — custom kernels: each tenant's own and the shared ones
 * (registered by admin_tenants, run by every tenant), and their copy on disk.
 *
 * A registration is parsed into a custom_kernel (kernels/custom/custom.h),
 * compiled by the backend on a worker, then added to its table: the tenant's
 * (gpud_tenant.customs) or the shared one here. The request that registered
 * it is kept as a file, KERNEL_CACHE/tenants/TENANT/NAME.reg or
 * KERNEL_CACHE/shared/NAME.reg (a packed RegisterRequest), and every file is
 * compiled again (or its code loaded from the compile cache) at start.
 *
 * Entries are reference-counted: the table holds one, every run in flight
 * another, so removing a kernel that is running only takes it out of reach.
 *
 * A table holds at most custom_kernels entries (the tenant's quota; the
 * shared table: [quota]'s). Each entry is pinned or not (RegisterRequest.
 * unpinned, kept in its .reg file) and records its last use (its last run
 * or its registration; not kept across a restart: loading counts as a use).
 * A registration into a full table evicts the least recently used unpinned
 * entry with no run in flight, and is refused if there is none.
 * Owned by the loop thread; registry_load runs at start, before gpud serves.
 */
#ifndef GPUD_REGISTRY_H
#define GPUD_REGISTRY_H

#include <stddef.h>
#include <uthash.h>

#include "daemon/backend/backend.h"
#include "daemon/buffers.h"
#include "daemon/config.h"
#include "daemon/status.h"
#include "gpud.pb-c.h"
#include "kernels/custom/custom.h"

typedef struct custom_entry {
	custom_kernel k;
	int refs;
	gpud_backend *backend; /* holds its compiled code */
	int shared;            /* for every tenant */
	int pinned;            /* never evicted to make room */
	uint64_t use_seq;      /* registry.tick at its last use: the LRU order */
	double last_used;      /* Unix seconds of its last use */
	UT_hash_handle hh;
} custom_entry;

typedef struct registry {
	const gpud_config *cfg;
	gpud_backend *backend;
	buffer_table *buffers; /* the tenants */
	custom_entry *shared;
	uint64_t tick; /* uses so far, for use_seq */
} registry;

void registry_init(registry *g, const gpud_config *cfg, gpud_backend *backend,
		   buffer_table *buffers);
/* Every registration kept on disk, compiled (or loaded from the cache) now. */
void registry_load(registry *g);
/* Drops every kernel of every tenant (shutdown, before the tenants go). */
void registry_fini(registry *g);

/* The kernel a run of tenant tn names: its own, else a shared one; with a
 * reference the caller gives back with registry_unref. NULL if none. */
custom_entry *registry_find(registry *g, gpud_tenant *tn, const char *name);
void registry_unref(custom_entry *e);

/* The entry of a kernel_def registry_visible gave (its k.def). */
static inline const custom_entry *registry_entry_of(const kernel_def *d)
{
	return (const custom_entry *)((const char *)d - offsetof(custom_entry, k.def));
}

/* The kernels tenant tn sees (its own, then shared ones it does not shadow),
 * up to max of them into out; returns how many there are. */
size_t registry_visible(registry *g, gpud_tenant *tn, const kernel_def **out, size_t max);
/* ", a, b": the tenant's own kernel names, for "unknown kernel" messages. */
void registry_names(gpud_tenant *tn, char *buf, size_t len);

/*
 * A registration, step one: may tn register it (admin_tenants for shared
 * ones, the count, names free), and is it well formed (name, signature,
 * source; not compiled)? The entry, with one reference, or NULL with *st and
 * err set.
 */
custom_entry *registry_prepare(registry *g, gpud_tenant *tn, const Gpud__RegisterRequest *q,
			       dstatus *st, char *err, size_t errlen);
/* 1 if the backend compiles kernels (registry_compile), 0 if it only keeps them. */
int registry_compiles(const registry *g);
/* Step two: the backend compiles e's code on a worker; done on the loop. */
dstatus registry_compile(registry *g, custom_entry *e, backend_done_fn done, void *arg, char *err,
			 size_t errlen);
/* Step three, once compiled: into its table (taking the caller's reference) and
 * onto disk, evicting the least recently used unpinned entry if the table is
 * full. ST_OK, or a status with err (registered meanwhile, or full of pinned
 * kernels) and e untouched. */
dstatus registry_add(registry *g, gpud_tenant *tn, custom_entry *e, const Gpud__RegisterRequest *q,
		     char *err, size_t errlen);
/* Out of tn's table (or the shared one) and off disk; runs in flight keep it. */
dstatus registry_remove(registry *g, gpud_tenant *tn, int shared, const char *name, char *err,
			size_t errlen);

#endif
