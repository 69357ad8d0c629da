/*
 * daemon/hostmem.h — the budget of host memory gpud may commit on its
 * clients' behalf (host_memory_limit), so that what clients ask for is
 * refused with a message before the kernel's OOM killer ends gpud and every
 * tenant's buffers with it.
 *
 * What it bounds: every host allocation whose size a client drives. The cpu
 * backend's buffers (backend/cpu.c), memory gpud lends (lend.c: spares, kept
 * and lent pieces), client regions gpud pins (regions.c, cuda), the cuda
 * backend's pinned staging buffers (backend/cuda/staging.c, reserved at
 * open), request payloads and large replies while a request holds them
 * (request.c, verbs), and the reply areas of request rings (ring.c: gpud
 * writes them, so their pages are charged to gpud). Each is reserved before the memory is made and
 * committed at once (touched, populated or pinned), so a grant never turns
 * into an OOM kill later, and released when the memory is freed.
 *
 * The default limit (host_memory_limit = auto) is HOSTMEM_DEFAULT_PERCENT of
 * the smaller of the cgroup's memory limit (v2: memory.max; v1:
 * memory.limit_in_bytes; the least of gpud's cgroup and its ancestors) and
 * the machine's MemTotal. The rest is left for gpud itself: its code, nng's
 * buffers and messages not yet taken by the loop, libuv's and CUDA's own
 * memory, the heap glibc keeps after frees.
 *
 * Threads: reserve and release are called from the loop, libuv's workers
 * and backend open threads; the counters are atomics (a compare-and-swap
 * keeps `used` at most `limit`). limit is set once, before any thread.
 */
#ifndef GPUD_HOSTMEM_H
#define GPUD_HOSTMEM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define HOSTMEM_DEFAULT_PERCENT 80

typedef enum hostmem_use {
	HOSTMEM_BUFFERS,  /* cpu backend: buffers */
	HOSTMEM_LENT,     /* lent memory: spare, kept or in a client's hands */
	HOSTMEM_PINNED,   /* clients' host regions gpud page-locked */
	HOSTMEM_STAGING,  /* cuda backend: pinned staging buffers */
	HOSTMEM_MESSAGES, /* request payloads and replies a request holds */
	HOSTMEM_RINGS,    /* request rings' reply areas, which gpud writes */
	HOSTMEM_USES
} hostmem_use;

typedef struct hostmem {
	uint64_t limit; /* bytes; set by hostmem_init, read-only afterwards */
	_Atomic uint64_t used;
	_Atomic uint64_t high_water;
	_Atomic uint64_t by_use[HOSTMEM_USES];
	_Atomic uint64_t refused;  /* reservations refused */
	_Atomic uint64_t released; /* bytes given back, ever (daemon/memtrim.h watches it) */
} hostmem;

typedef struct hostmem_stats {
	uint64_t limit, used, high_water, refused;
	uint64_t by_use[HOSTMEM_USES];
} hostmem_stats;

void hostmem_init(hostmem *h, uint64_t limit);
/*
 * Takes bytes of the budget for use: 0, or -1 with err saying "host memory:
 * 256.0 MiB asked, 1.1 GiB of the 1.2 GiB limit (host_memory_limit) in use".
 * h NULL: no budget, always 0. Any thread.
 */
int hostmem_reserve(hostmem *h, hostmem_use use, uint64_t bytes, char *err, size_t errlen);
/* 0 if bytes would be granted now (nothing taken), else -1 with err as
 * hostmem_reserve's (a refusal, counted as one): a refusal said before
 * work is queued that would be refused anyway. */
int hostmem_fits(hostmem *h, uint64_t bytes, char *err, size_t errlen);
/* Gives back what a reserve of the same use took. h NULL: nothing. Any thread. */
void hostmem_release(hostmem *h, hostmem_use use, uint64_t bytes);
/* Bytes released since hostmem_init (h NULL: 0). Any thread. */
uint64_t hostmem_released(hostmem *h);
/* A snapshot (each counter read atomically; not all at one instant). */
hostmem_stats hostmem_get(const hostmem *h);
/* The label of a use in metrics: "buffers", "lent", "pinned", "staging", "messages",
 * "rings". */
const char *hostmem_use_name(hostmem_use use);

/* "512 B", "256.0 MiB", "1.2 GiB": sizes in messages. */
void hostmem_format(uint64_t bytes, char *buf, size_t len);

/* --- the default limit ------------------------------------------------------------------ */

/*
 * Each reader takes `root`, prefixed to every path it opens ("" for the
 * machine's own /proc and /sys), so tests can feed a fake tree.
 */

/* MemTotal of root/proc/meminfo in bytes: 0, or -1 if unreadable. */
int hostmem_meminfo_total(const char *root, uint64_t *bytes);
/*
 * The memory limit of this process's cgroup: the least memory.max (v2) or
 * memory.limit_in_bytes (v1) of its cgroup and the ancestors below the
 * hierarchy's mount, found through root/proc/self/cgroup and
 * root/proc/self/mountinfo. 0 with *bytes and *file (the limit's file name)
 * set, or -1 where no limit is set or none can be read.
 */
int hostmem_cgroup_limit(const char *root, uint64_t *bytes, const char **file);
/*
 * host_memory_limit = auto: HOSTMEM_DEFAULT_PERCENT of the cgroup's limit, or
 * of MemTotal where there is none (or it is larger). Writes what it is based
 * on into why ("80% of the cgroup's memory.max 512.0 MiB"). 0, or -1 if
 * neither can be read (then *limit is 0 and why says so).
 */
int hostmem_default_limit(const char *root, uint64_t *limit, char *why, size_t whylen);

#endif
