/*
 * daemon/hostmem.c — the host memory budget (daemon/hostmem.h): reserve and
 * release with atomics, and the default limit read from the cgroup and
 * /proc/meminfo. Any thread; the readers run once, at start.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/hostmem.h"

void hostmem_init(hostmem *h, uint64_t limit)
{
	memset(h, 0, sizeof(*h));
	h->limit = limit;
}

void hostmem_format(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	double v = (double)bytes / 1024;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* bytes do not fit beside used: counts the refusal and says it. */
static int refuse(hostmem *h, uint64_t bytes, uint64_t used, char *err, size_t errlen)
{
	char a[32], u[32], l[32];
	atomic_fetch_add_explicit(&h->refused, 1, memory_order_relaxed);
	hostmem_format(bytes, a, sizeof(a));
	hostmem_format(used, u, sizeof(u));
	hostmem_format(h->limit, l, sizeof(l));
	snprintf(err, errlen,
		 "host memory: %s asked, %s of the %s limit (host_memory_limit) in use", a, u, l);
	return -1;
}

int hostmem_fits(hostmem *h, uint64_t bytes, char *err, size_t errlen)
{
	if (h == NULL)
		return 0;
	uint64_t cur = atomic_load_explicit(&h->used, memory_order_relaxed);
	return bytes > h->limit || cur > h->limit - bytes ? refuse(h, bytes, cur, err, errlen) : 0;
}

int hostmem_reserve(hostmem *h, hostmem_use use, uint64_t bytes, char *err, size_t errlen)
{
	if (h == NULL)
		return 0;
	uint64_t cur = atomic_load_explicit(&h->used, memory_order_relaxed);
	do {
		if (bytes > h->limit || cur > h->limit - bytes)
			return refuse(h, bytes, cur, err, errlen);
	} while (!atomic_compare_exchange_weak_explicit(&h->used, &cur, cur + bytes,
							memory_order_relaxed,
							memory_order_relaxed));
	atomic_fetch_add_explicit(&h->by_use[use], bytes, memory_order_relaxed);
	uint64_t now = cur + bytes, hw = atomic_load_explicit(&h->high_water, memory_order_relaxed);
	while (hw < now &&
	       !atomic_compare_exchange_weak_explicit(&h->high_water, &hw, now,
						      memory_order_relaxed, memory_order_relaxed))
		;
	return 0;
}

void hostmem_release(hostmem *h, hostmem_use use, uint64_t bytes)
{
	if (h == NULL || bytes == 0)
		return;
	atomic_fetch_sub_explicit(&h->by_use[use], bytes, memory_order_relaxed);
	atomic_fetch_sub_explicit(&h->used, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->released, bytes, memory_order_relaxed);
}

uint64_t hostmem_released(hostmem *h)
{
	return h ? atomic_load_explicit(&h->released, memory_order_relaxed) : 0;
}

hostmem_stats hostmem_get(const hostmem *h)
{
	hostmem_stats s;
	memset(&s, 0, sizeof(s));
	if (h == NULL)
		return s;
	/* The atomics are read through a cast: C11 has no const atomic load. */
	hostmem *m = (hostmem *)h;
	s.limit = m->limit;
	s.used = atomic_load(&m->used);
	s.high_water = atomic_load(&m->high_water);
	s.refused = atomic_load(&m->refused);
	for (int i = 0; i < HOSTMEM_USES; i++)
		s.by_use[i] = atomic_load(&m->by_use[i]);
	return s;
}

const char *hostmem_use_name(hostmem_use use)
{
	static const char *const names[HOSTMEM_USES] = {"buffers", "lent",     "pinned",
							"staging", "messages", "rings"};
	return use < HOSTMEM_USES ? names[use] : "?";
}

/* --- the default limit ---------------------------------------------------------------- */

static FILE *open_at(const char *root, const char *path)
{
	char full[PATH_MAX];
	if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >= sizeof(full))
		return NULL;
	return fopen(full, "re");
}

int hostmem_meminfo_total(const char *root, uint64_t *bytes)
{
	FILE *f = open_at(root, "/proc/meminfo");
	char line[256];
	int rv = -1;
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1 && kb > 0) {
			*bytes = (uint64_t)kb * 1024;
			rv = 0;
			break;
		}
	}
	fclose(f);
	return rv;
}

/* A limit file's value: bytes, or UINT64_MAX for none ("max", or v1's
 * "unlimited", which is the largest page count: anything from 2^62 up). */
static int read_limit(const char *path, uint64_t *bytes)
{
	FILE *f = fopen(path, "re");
	char text[64];
	if (f == NULL)
		return -1;
	char *got = fgets(text, sizeof(text), f);
	fclose(f);
	if (got == NULL)
		return -1;
	text[strcspn(text, "\n")] = '\0';
	if (strcmp(text, "max") == 0) {
		*bytes = UINT64_MAX;
		return 0;
	}
	char *end;
	unsigned long long v = strtoull(text, &end, 10);
	if (end == text || *end != '\0')
		return -1;
	*bytes = v >= (1ull << 62) ? UINT64_MAX : (uint64_t)v;
	return 0;
}

/* This process's path in a hierarchy, from /proc/self/cgroup: v2 (the "0::"
 * line), or the v1 hierarchy that has the memory controller. */
static int own_cgroup(const char *root, int v2, char *path, size_t len)
{
	FILE *f = open_at(root, "/proc/self/cgroup");
	char line[PATH_MAX + 128];
	int rv = -1;
	if (f == NULL)
		return -1;
	while (rv != 0 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL)
			continue;
		*c2 = '\0';
		const char *ctls = c1 + 1;
		int match = 0;
		if (v2) { /* "0::/path": hierarchy 0, no controllers */
			match = strcmp(line, "0:") == 0;
		} else {
			for (const char *p = ctls; *p;) {
				size_t n = strcspn(p, ",");
				if (n == 6 && strncmp(p, "memory", 6) == 0)
					match = 1;
				p += n + (p[n] == ',');
			}
		}
		if (match && (size_t)snprintf(path, len, "%s", c2 + 1) < len)
			rv = 0;
	}
	fclose(f);
	return rv;
}

/* Where the hierarchy is mounted (from /proc/self/mountinfo): its mount
 * point and the cgroup path at that mount's root. */
static int hierarchy_mount(const char *root, int v2, char *mnt, char *mroot, size_t len)
{
	FILE *f = open_at(root, "/proc/self/mountinfo");
	char line[2 * PATH_MAX];
	int rv = -1;
	if (f == NULL)
		return -1;
	while (rv != 0 && fgets(line, sizeof(line), f)) {
		char *fields[6], *save = NULL, *tok;
		int n = 0;
		line[strcspn(line, "\n")] = '\0';
		for (tok = strtok_r(line, " ", &save); tok && n < 6;
		     tok = strtok_r(NULL, " ", &save))
			fields[n++] = tok;
		if (n < 6)
			continue;
		/* optional fields, then "-", the file system type, its source and options */
		while (tok && strcmp(tok, "-") != 0)
			tok = strtok_r(NULL, " ", &save);
		char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
		char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
		char *opts = source ? strtok_r(NULL, " ", &save) : NULL;
		if (fstype == NULL)
			continue;
		int match = v2 ? strcmp(fstype, "cgroup2") == 0 : 0;
		if (!v2 && strcmp(fstype, "cgroup") == 0 && opts) {
			for (const char *p = opts; *p;) {
				size_t k = strcspn(p, ",");
				if (k == 6 && strncmp(p, "memory", 6) == 0)
					match = 1;
				p += k + (p[k] == ',');
			}
		}
		if (match && strlen(fields[4]) < len && strlen(fields[3]) < len) {
			snprintf(mnt, len, "%s", fields[4]);
			snprintf(mroot, len, "%s", fields[3]);
			rv = 0;
		}
	}
	fclose(f);
	return rv;
}

/* The least limit of one hierarchy (v2 or v1) on the way from this
 * process's cgroup up to the mount: 0 with *bytes (UINT64_MAX: none), or -1. */
static int hierarchy_limit(const char *root, int v2, uint64_t *bytes)
{
	char cg[PATH_MAX], mnt[PATH_MAX], mroot[PATH_MAX], dir[2 * PATH_MAX + 8];
	const char *file = v2 ? "memory.max" : "memory.limit_in_bytes";
	if (own_cgroup(root, v2, cg, sizeof(cg)) != 0 ||
	    hierarchy_mount(root, v2, mnt, mroot, sizeof(mnt)) != 0)
		return -1;
	/* The mount shows the hierarchy from mroot down (a container's view):
	 * the path below it, or the mount itself where the cgroup lies outside. */
	const char *rel = cg;
	size_t rl = strlen(mroot);
	if (strcmp(mroot, "/") != 0)
		rel = strncmp(cg, mroot, rl) == 0 && (cg[rl] == '/' || cg[rl] == '\0') ? cg + rl
										       : "";
	int n = snprintf(dir, sizeof(dir), "%s%s%s", root, mnt, strcmp(rel, "/") == 0 ? "" : rel);
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -1;
	size_t top = strlen(root) + strlen(mnt);
	int found = -1;
	*bytes = UINT64_MAX;
	for (;;) {
		char path[sizeof(dir) + 32];
		uint64_t v;
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (read_limit(path, &v) == 0) {
			found = 0;
			if (v < *bytes)
				*bytes = v;
		}
		char *slash = strrchr(dir, '/');
		if (strlen(dir) <= top || slash == NULL || (size_t)(slash - dir) < top)
			break;
		*slash = '\0';
	}
	return found;
}

int hostmem_cgroup_limit(const char *root, uint64_t *bytes, const char **file)
{
	uint64_t v2 = UINT64_MAX, v1 = UINT64_MAX;
	int has2 = hierarchy_limit(root, 1, &v2) == 0, has1 = hierarchy_limit(root, 0, &v1) == 0;
	if ((!has2 || v2 == UINT64_MAX) && (!has1 || v1 == UINT64_MAX))
		return -1;
	*bytes = v2 <= v1 ? v2 : v1;
	*file = v2 <= v1 ? "memory.max" : "memory.limit_in_bytes";
	return 0;
}

int hostmem_default_limit(const char *root, uint64_t *limit, char *why, size_t whylen)
{
	uint64_t total = 0, cg = 0;
	const char *file = NULL;
	char a[32];
	int has_total = hostmem_meminfo_total(root, &total) == 0;
	int has_cg = hostmem_cgroup_limit(root, &cg, &file) == 0;
	*limit = 0;
	if (has_cg && (!has_total || cg < total)) {
		hostmem_format(cg, a, sizeof(a));
		*limit = cg / 100 * HOSTMEM_DEFAULT_PERCENT +
			 cg % 100 * HOSTMEM_DEFAULT_PERCENT / 100;
		snprintf(why, whylen, "%d%% of the cgroup's %s %s", HOSTMEM_DEFAULT_PERCENT, file,
			 a);
		return 0;
	}
	if (has_total) {
		hostmem_format(total, a, sizeof(a));
		*limit = total / 100 * HOSTMEM_DEFAULT_PERCENT +
			 total % 100 * HOSTMEM_DEFAULT_PERCENT / 100;
		snprintf(why, whylen, "%d%% of MemTotal %s", HOSTMEM_DEFAULT_PERCENT, a);
		return 0;
	}
	snprintf(why, whylen, "neither a cgroup memory limit nor %s/proc/meminfo could be read",
		 root);
	return -1;
}
