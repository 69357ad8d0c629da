/*
 * daemon/registry.c — custom kernel tables, registration steps, the copy on
 * disk, and the eviction of the least recently used unpinned kernel at the
 * custom_kernels quota. Owned by the loop thread.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/registry.h"

void registry_init(registry *g, const gpud_config *cfg, gpud_backend *backend,
		   buffer_table *buffers)
{
	memset(g, 0, sizeof(*g));
	g->cfg = cfg;
	g->backend = backend;
	g->buffers = buffers;
}

/* A run of e (or its registration): last in the LRU order from now. */
static void touch(registry *g, custom_entry *e)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	e->use_seq = ++g->tick;
	e->last_used = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void registry_unref(custom_entry *e)
{
	if (--e->refs > 0)
		return;
	if (e->backend && e->backend->ops->release)
		e->backend->ops->release(e->backend, &e->k);
	custom_free(&e->k);
	free(e);
}

static void table_clear(custom_entry **table)
{
	custom_entry *e, *tmp;
	HASH_ITER(hh, *table, e, tmp)
	{
		HASH_DELETE(hh, *table, e);
		registry_unref(e);
	}
}

void registry_fini(registry *g)
{
	for (gpud_tenant *tn = g->buffers->tenants; tn; tn = tn->hh.next)
		table_clear(&tn->customs);
	table_clear(&g->shared);
}

custom_entry *registry_find(registry *g, gpud_tenant *tn, const char *name)
{
	custom_entry *e = NULL;
	ON_LOOP("registry_find");
	if (tn)
		HASH_FIND_STR(tn->customs, name, e);
	if (e == NULL)
		HASH_FIND_STR(g->shared, name, e);
	if (e) {
		e->refs++; /* until the reply: an unregister meanwhile cannot free it */
		touch(g, e);
	}
	return e;
}

size_t registry_visible(registry *g, gpud_tenant *tn, const kernel_def **out, size_t max)
{
	size_t n = 0;
	for (custom_entry *e = tn ? tn->customs : NULL; e; e = e->hh.next, n++)
		if (n < max)
			out[n] = &e->k.def;
	for (custom_entry *e = g->shared; e; e = e->hh.next) {
		custom_entry *mine = NULL;
		if (tn)
			HASH_FIND_STR(tn->customs, e->k.name, mine);
		if (mine == NULL) { /* a tenant's own kernel of that name comes first */
			if (n < max)
				out[n] = &e->k.def;
			n++;
		}
	}
	return n;
}

void registry_names(gpud_tenant *tn, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (custom_entry *e = tn ? tn->customs : NULL; e; e = e->hh.next)
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, ", %s", e->k.name);
}

/* What `gpuctl kernels` says of a custom kernel: kind, and how its code came. */
static void describe(custom_entry *e)
{
	custom_kernel *k = &e->k;
	char how[96] = "";
	if (k->fn)
		snprintf(how, sizeof(how), "; %s, %d registers",
			 k->cached ? "loaded from the compile cache" : "compiled", k->registers);
	snprintf(k->doc, sizeof(k->doc), "%s %s kernel%s%s", e->shared ? "shared" : "custom",
		 k->kind == CUSTOM_RAW         ? "raw"
		 : k->kind == CUSTOM_REDUCTION ? "reduction"
					       : "elementwise",
		 k->kind == CUSTOM_RAW && k->blocks_per_sm == 0 ? " (_grid and _block per run)"
								: "",
		 how);
}

/*
 * A custom kernel from a registration: name, parameters and source checked
 * (not compiled). NULL with err and *st set.
 */
static custom_entry *parse(const Gpud__RegisterRequest *q, dstatus *st, char *err, size_t errlen)
{
	int raw = q->kind == GPUD__REGISTER_REQUEST__KIND__KIND_RAW,
	    red = q->kind == GPUD__REGISTER_REQUEST__KIND__KIND_REDUCTION;
	custom_reduction rx = {.map_expr = q->map_expr,
			       .reduce_expr = q->reduce_expr,
			       .post_map_expr = q->post_map_expr,
			       .identity = q->identity,
			       .reduce_type = q->reduce_type};
	const char *name = q->name ? q->name : "";
	char perr[512];
	custom_entry *e;

	*st = ST_INVALID;
	if (kernel_find(name) != NULL) {
		snprintf(err, errlen, "register: '%s' is a built-in kernel; pick another name",
			 name);
		return NULL;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		*st = ST_OUT_OF_MEMORY;
		snprintf(err, errlen, "register: out of memory");
		return NULL;
	}
	custom_kernel *k = &e->k;
	k->block = q->block;
	k->blocks_per_sm = q->blocks_per_sm ? q->blocks_per_sm : (raw ? 0 : 4);
	k->fast_math = q->fast_math;
	k->max_registers = q->max_registers;
	int rv = raw ? custom_parse_signature(q->signature ? q->signature : "", k->params,
					      KERNEL_MAX_PARAMS, &k->nparams, perr, sizeof(perr))
		     : custom_parse_ew_params(q->in_params ? q->in_params : "", KPARAM_IN,
					      k->params, KERNEL_MAX_PARAMS, &k->nparams, perr,
					      sizeof(perr));
	const char *what = raw ? "signature" : "input parameters";
	if (rv == 0 && !raw) {
		what = "output parameters";
		rv = custom_parse_ew_params(q->out_params ? q->out_params : "", KPARAM_OUT,
					    k->params, KERNEL_MAX_PARAMS, &k->nparams, perr,
					    sizeof(perr));
	}
	if (rv != 0) {
		snprintf(err, errlen, "register %s: %s: %s", LOG_CLIP(name), what, perr);
		free(e);
		return NULL;
	}
	if (q->kind != GPUD__REGISTER_REQUEST__KIND__KIND_ELEMENTWISE && !raw && !red) {
		snprintf(err, errlen,
			 "register %s: kind %d: expected raw (0), elementwise (1) or "
			 "reduction (2)",
			 LOG_CLIP(name), (int)q->kind);
		free(e);
		return NULL;
	}
	k->red = red ? &rx : NULL;
	int built = custom_build(k, name,
				 raw   ? CUSTOM_RAW
				 : red ? CUSTOM_REDUCTION
				       : CUSTOM_ELEMENTWISE,
				 q->source, q->entry, perr, sizeof(perr));
	k->red = NULL; /* rx is this function's */
	if (built != 0) {
		snprintf(err, errlen, "register: %s", perr);
		custom_free(k);
		free(e);
		return NULL;
	}
	e->refs = 1;
	return e;
}

/* Where a registration lives: a tenant's table, or the shared one (with its
 * directory under kernel_cache: tenants/TENANT or shared). */
typedef struct home {
	custom_entry **table;
	char rel[GPUD_TENANT_NAME + 16];
	const char *who; /* for messages */
	gpud_tenant *tn; /* NULL: the shared table */
	uint64_t cap;    /* custom_kernels: the tenant's, or [quota]'s for the shared one */
} home;

static home home_of(registry *g, gpud_tenant *tn, int shared)
{
	home h;
	h.tn = shared ? NULL : tn;
	h.cap = shared ? g->cfg->quota.custom_kernels : tn->quota.custom_kernels;
	if (h.cap == 0) /* a config not read from a file */
		h.cap = CONFIG_CUSTOM_KERNELS_DEFAULT;
	if (shared) {
		h.table = &g->shared;
		snprintf(h.rel, sizeof(h.rel), "shared");
		h.who = "the shared kernels";
	} else {
		h.table = &tn->customs;
		snprintf(h.rel, sizeof(h.rel), "tenants/%s", tn->name);
		h.who = tn->name;
	}
	return h;
}

/* The registration file of a kernel: KERNEL_CACHE/REL/NAME.reg; -1: none kept. */
static int reg_path(const gpud_config *cfg, const char *rel, const char *name, char *out,
		    size_t len)
{
	const char *last = strrchr(rel, '/');
	last = last ? last + 1 : rel;
	if (!cfg->kernel_cache[0] || last[0] == '.' || strstr(rel, "..") ||
	    (strncmp(rel, "tenants/", 8) == 0 && strchr(rel + 8, '/')))
		return -1;
	snprintf(out, len, "%s/%s/%s.reg", cfg->kernel_cache, rel, name);
	return 0;
}

static void reg_save(registry *g, const gpud_tenant *tn, const char *rel,
		     const Gpud__RegisterRequest *q)
{
	char path[1024], dir[1024], tmp[1100];
	if (reg_path(g->cfg, rel, q->name, path, sizeof(path)) != 0)
		return;
	snprintf(dir, sizeof(dir), "%s/%s", g->cfg->kernel_cache, rel);
	char *slash = dir;
	while ((slash = strchr(slash + 1, '/')) != NULL) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	mkdir(dir, 0700);
	size_t n = gpud__register_request__get_packed_size(q);
	uint8_t *buf = malloc(n ? n : 1);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = buf ? fopen(tmp, "wb") : NULL;
	if (f == NULL || fwrite(buf, 1, gpud__register_request__pack(q, buf), f) != n ||
	    fclose(f) != 0 || rename(tmp, path) != 0) {
		log_conn(LOG_WARN, 0, tn->name, "cannot keep the registration of %s in %s", q->name,
			 path);
		if (f)
			unlink(tmp);
	}
	free(buf);
}

/* The entry evicted next from table: the least recently used unpinned one
 * with no run in flight (the table's own reference only); NULL if none. */
static custom_entry *lru_victim(custom_entry *table)
{
	custom_entry *v = NULL;
	for (custom_entry *e = table; e; e = e->hh.next)
		if (!e->pinned && e->refs == 1 && (v == NULL || e->use_seq < v->use_seq))
			v = e;
	return v;
}

static void evict(registry *g, home *h, custom_entry *e, const char *for_name)
{
	struct timespec ts;
	char path[1024];
	clock_gettime(CLOCK_REALTIME, &ts);
	HASH_DELETE(hh, *h->table, e);
	if (reg_path(g->cfg, h->rel, e->k.name, path, sizeof(path)) == 0)
		unlink(path);
	log_conn(LOG_INFO, 0, h->tn ? h->tn->name : NULL,
		 "evicted custom kernel %s of %s%s (unpinned, last used %.0f s ago) to make room "
		 "for %s: custom_kernels = %llu",
		 LOG_CLIP(e->k.name), h->tn ? "tenant " : "", h->who,
		 (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - e->last_used, LOG_CLIP(for_name),
		 (unsigned long long)h->cap);
	if (h->tn)
		h->tn->metrics.custom_evicted++;
	registry_unref(e); /* runs in flight: none (lru_victim) */
}

/*
 * Room for one more entry in h's table: as many least recently used unpinned
 * entries as it takes to be under the cap (more than one after a reload
 * lowered it) evicted, unless check_only. 0, or -1 with err if the evictable
 * ones are too few (nothing evicted then).
 */
static int make_room(registry *g, home *h, const char *name, int check_only, char *err,
		     size_t errlen)
{
	uint64_t n = HASH_COUNT(*h->table), evictable = 0;
	if (n < h->cap)
		return 0;
	uint64_t need = n + 1 - h->cap;
	for (custom_entry *e = *h->table; e; e = e->hh.next)
		evictable += !e->pinned && e->refs == 1;
	if (evictable < need) {
		if (h->tn)
			h->tn->metrics.quota_refused[QUOTA_KERNELS]++;
		snprintf(
			err, errlen,
			"register %s: %s%s %s %llu custom kernels, at the custom_kernels quota of "
			"%llu, and %llu of them could be evicted (unpinned, not running): remove "
			"some (gpuctl kernels --custom lists them; gpuctl kernel rm NAME), register "
			"kernels unpinned (gpuctl kernel add --unpinned), or raise custom_kernels "
			"in gpud.conf ([quota] or [tenant %s])",
			LOG_CLIP(name), h->tn ? "tenant " : "", h->who, h->tn ? "has" : "have",
			(unsigned long long)n, (unsigned long long)h->cap,
			(unsigned long long)evictable, h->tn ? h->tn->name : "NAME");
		return -1;
	}
	while (!check_only && need-- > 0)
		evict(g, h, lru_victim(*h->table), name);
	return 0;
}

custom_entry *registry_prepare(registry *g, gpud_tenant *tn, const Gpud__RegisterRequest *q,
			       dstatus *st, char *err, size_t errlen)
{
	const char *name = q->name ? q->name : "";
	custom_entry *old;

	ON_LOOP("registry_prepare");
	if (q->shared && !config_is_admin(g->cfg, tn->name)) {
		*st = ST_UNAUTHENTICATED;
		snprintf(err, errlen,
			 "register %s: shared kernels are for administrators; tenant %s is not in "
			 "admin_tenants",
			 LOG_CLIP(name), tn->name);
		return NULL;
	}
	home h = home_of(g, tn, q->shared);
	*st = ST_INVALID;
	if (!q->shared) {
		HASH_FIND_STR(g->shared, name, old);
		if (old != NULL) {
			snprintf(err, errlen,
				 "register: '%s' is a shared kernel; pick another name", name);
			return NULL;
		}
	}
	HASH_FIND_STR(*h.table, name, old);
	if (old != NULL) {
		snprintf(err, errlen,
			 "register: kernel '%s' is registered already; remove it first (gpuctl "
			 "kernel rm %s)",
			 name, name);
		return NULL;
	}
	if (make_room(g, &h, name, 1, err, errlen) != 0) {
		*st = ST_QUOTA;
		return NULL;
	}
	custom_entry *e = parse(q, st, err, errlen);
	if (e)
		e->backend = g->backend;
	return e;
}

int registry_compiles(const registry *g)
{
	return g->backend->ops->compile != NULL;
}

dstatus registry_compile(registry *g, custom_entry *e, backend_done_fn done, void *arg, char *err,
			 size_t errlen)
{
	gpud_backend *be = g->backend;
	ON_LOOP("registry_compile");
	return be->ops->compile(be, &e->k, g->cfg->kernel_cache_dir, done, arg, err, errlen);
}

dstatus registry_add(registry *g, gpud_tenant *tn, custom_entry *e, const Gpud__RegisterRequest *q,
		     char *err, size_t errlen)
{
	custom_entry *old;

	ON_LOOP("registry_add");
	home h = home_of(g, tn, q->shared);
	HASH_FIND_STR(*h.table, e->k.name, old);
	if (old != NULL) { /* registered meanwhile by another connection */
		snprintf(err, errlen, "register: kernel '%s' is registered already", e->k.name);
		return ST_INVALID;
	}
	if (make_room(g, &h, e->k.name, 0, err, errlen) != 0)
		return ST_QUOTA; /* filled meanwhile by other connections */
	e->shared = q->shared;
	e->pinned = !q->unpinned;
	touch(g, e);
	describe(e);
	HASH_ADD_STR(*h.table, k.name, e);
	reg_save(g, tn, h.rel, q);
	return ST_OK;
}

dstatus registry_remove(registry *g, gpud_tenant *tn, int shared, const char *name, char *err,
			size_t errlen)
{
	custom_entry *e;

	ON_LOOP("registry_remove");
	if (shared && !config_is_admin(g->cfg, tn->name)) {
		snprintf(err, errlen,
			 "unregister %s: shared kernels are for administrators; tenant %s is not "
			 "in admin_tenants",
			 LOG_CLIP(name), tn->name);
		return ST_UNAUTHENTICATED;
	}
	home h = home_of(g, tn, shared);
	HASH_FIND_STR(*h.table, name, e);
	if (e == NULL) {
		snprintf(err, errlen, "unregister: no kernel '%s' among %s%s", LOG_CLIP(name),
			 shared ? "the shared kernels" : tn->name,
			 kernel_find(name) ? " (built-in kernels stay)" : "");
		return ST_UNKNOWN_KERNEL;
	}
	HASH_DELETE(hh, *h.table, e);
	char path[1024];
	if (reg_path(g->cfg, h.rel, name, path, sizeof(path)) == 0)
		unlink(path);
	registry_unref(e); /* runs in flight keep it until they are answered */
	return ST_OK;
}

/* One .reg file of directory tdir (tenant tdir's name, or the shared kernels). */
static int load_one(registry *g, const char *path, const char *tenant, int shared)
{
	FILE *fp = fopen(path, "rb");
	static uint8_t buf[1 << 16];
	char err[16384];
	size_t len = fp ? fread(buf, 1, sizeof(buf), fp) : 0;
	int ok = 0;
	dstatus st;

	if (fp)
		fclose(fp);
	Gpud__RegisterRequest *q = gpud__register_request__unpack(NULL, len, buf);
	custom_entry *e = q ? parse(q, &st, err, sizeof(err)) : NULL;
	gpud_backend *be = g->backend;
	tenant_quota quota = config_quota(g->cfg, tenant);
	gpud_tenant *tn = shared ? NULL : tenants_get(g->buffers, tenant, &quota);
	custom_entry **table = shared ? &g->shared : tn ? &tn->customs : NULL;
	custom_entry *old = NULL;
	if (e && table)
		HASH_FIND_STR(*table, e->k.name, old);
	if (e && table && !old &&
	    (be->ops->compile_now == NULL ||
	     be->ops->compile_now(be, &e->k, g->cfg->kernel_cache_dir, err, sizeof(err)) == 0)) {
		e->backend = be;
		e->shared = shared;
		e->pinned = !q->unpinned;
		touch(g, e); /* last use is not kept on disk: loading is a use */
		describe(e);
		HASH_ADD_STR(*table, k.name, e);
		ok = 1;
	} else {
		log_warn("kernel registration %s not loaded: %.300s", path,
			 q == NULL ? "unreadable" : err);
		if (e)
			registry_unref(e);
	}
	if (q)
		gpud__register_request__free_unpacked(q, NULL);
	return ok;
}

void registry_load(registry *g)
{
	char dir[1024];
	int loaded = 0, failed = 0;

	if (!g->cfg->kernel_cache[0])
		return;
	for (int shared = 1; shared >= 0; shared--) {
		snprintf(dir, sizeof(dir), "%s/%s", g->cfg->kernel_cache, shared ? "" : "tenants");
		DIR *d = opendir(dir);
		if (d == NULL)
			continue;
		for (struct dirent *t; (t = readdir(d)) != NULL;) {
			if (t->d_name[0] == '.' || (shared && strcmp(t->d_name, "shared") != 0))
				continue;
			char tdir[1400];
			snprintf(tdir, sizeof(tdir), "%s/%s", dir, t->d_name);
			DIR *td = opendir(tdir);
			if (td == NULL)
				continue;
			for (struct dirent *f; (f = readdir(td)) != NULL;) {
				size_t n = strlen(f->d_name);
				if (n < 5 || strcmp(f->d_name + n - 4, ".reg") != 0)
					continue;
				char path[1700];
				snprintf(path, sizeof(path), "%s/%s", tdir, f->d_name);
				if (load_one(g, path, t->d_name, shared))
					loaded++;
				else
					failed++;
			}
			closedir(td);
		}
		closedir(d);
	}
	log_info("custom kernels: %d loaded from %s, %d not", loaded, g->cfg->kernel_cache, failed);
}
