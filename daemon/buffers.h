/*
 * daemon/buffers.h — buffers, their handles, the sessions and the tenants
 * that own them.
 *
 * A session is one client connection (an nng pipe). A buffer belongs to the
 * session that allocated it and is freed when that connection goes away.
 * A handle is this gpud's 16-bit instance tag over 48 random bits: a handle
 * of an earlier run of gpud (a client across a restart) is told apart from
 * an unknown one (buffers_stale) and can never name a buffer of this run. A buffer is reference-counted: the table holds
 * one reference, and every request using it (a copy, a kernel run) holds
 * another, so freeing a buffer that is busy only takes it out of the table;
 * its memory goes back when the last request lets go. All of this is owned
 * by the loop thread. A tenant also carries state of two other owners, both
 * on the loop too: its run queue (daemon/sched.h) and its custom kernels
 * (daemon/registry.h).
 */
#ifndef GPUD_BUFFERS_H
#define GPUD_BUFFERS_H

#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include <gpud/types.h>

#include "daemon/backend/backend.h"
#include "daemon/metrics.h"
#include "daemon/sched.h"
#include "daemon/status.h"

typedef struct gpud_session gpud_session;
typedef struct gpud_tenant gpud_tenant;
struct host_region;
struct custom_entry;
struct gpud_device;
struct device_set;

typedef struct gpud_buffer {
	gpud_handle handle;
	gpud_dtype dtype;
	int ndim;
	uint64_t shape[GPUD_MAX_DIMS];
	size_t count; /* elements */
	size_t nbytes;
	void *mem; /* backend memory, on dev */
	struct gpud_device *dev;
	int pinned;          /* the client chose dev: never copied to another device */
	int temp;            /* goes with its request (buffers_temp): no affinity (placement.h) */
	gpud_session *owner; /* NULL when kept (then the tenant's) */
	gpud_tenant *tenant;
	int kept;
	int cleared; /* its allocation queued a clear of its block (buffers_alloc) */
	int refs;
	int live; /* reachable by handle */
	UT_hash_handle hh;
	struct gpud_buffer *sprev, *snext; /* the owner's list */
} gpud_buffer;

#define SESSION_KEY_LEN 16

/*
 * A tenant: who a connection is (an ipc:// peer's user, a tcp:// token's
 * name). Handles are scoped to it; its quota bounds what its connections
 * hold and do together. Tenants live as long as gpud.
 */
struct gpud_tenant {
	char name[GPUD_TENANT_NAME];
	uint64_t id; /* 1, 2, ... in order of first sight: its blocks' owner (backend.h: alloc) */
	tenant_quota quota;
	/* the uid of its last local (ipc://) hello, -1 before one: memory lent
	 * before hello (daemon/claims.h) is lent to the tenant of the peer's uid */
	int64_t local_uid;
	uint64_t bytes, nbuffers; /* all its buffers */
	uint64_t high_water;      /* the most bytes it held at once (its status) */
	/* ... on each device, by slot (daemon/devices.h) */
	uint64_t dev_bytes[GPUD_DEVICES_MAX], dev_nbuffers[GPUD_DEVICES_MAX];
	/* of them, the ones the client holds by handle (not a request's
	 * temporaries): what draws its fresh work (placement.h) */
	uint64_t aff_bytes[GPUD_DEVICES_MAX], aff_nbuffers[GPUD_DEVICES_MAX];
	uint64_t nkept;
	uint32_t in_flight;
	uint32_t file_io;  /* files gpud copies for it now (daemon/region_io.h) */
	gpud_buffer *kept; /* its kept buffers */
	/* runs waiting for a slot of each device's scheduler (daemon/sched.h) */
	sched_queue runs[GPUD_DEVICES_MAX];
	struct custom_entry *customs; /* its registered kernels (daemon/registry.h) */
	tenant_metrics metrics;       /* its counters (daemon/metrics.h) */
	UT_hash_handle hh;
};

#define SESSION_EARLY_CANCELS 16
struct gpud_session {
	uint32_t pipe_id;
	gpud_buffer *buffers;
	size_t nbuffers;
	uint64_t bytes;
	uint64_t requests;
	uint32_t in_flight;
	/* from a local endpoint (daemon/endpoint/endpoint.h: ipc://), set at
	 * connect: tenant by user, host regions, rings */
	int local;
	int64_t peer_uid;                 /* local: the peer's uid; -1 otherwise */
	int64_t peer_pid;                 /* local: the peer's pid; -1 where unknown */
	char peer_user[GPUD_TENANT_NAME]; /* local: its user's name ("": none), from its endpoint */
	char peer[64];                    /* for status and logs */
	uint8_t key[SESSION_KEY_LEN];     /* binds host regions to this connection */
	gpud_tenant *tenant;              /* set by a successful hello */
	int probe;              /* gpud's own health probe (daemon/health.h): left out of status */
	uint32_t failed_hellos; /* closed at GUARD_CONN_FAILURES (daemon/hello_guard.h) */
	struct host_region *regions; /* daemon/regions.h */
	uint64_t nregions, region_bytes;
	struct gpud_request *live; /* its requests in gpud now, for cancel (daemon/request.h) */
	/* Cancels that named a request not in gpud (yet: a cancel and its
	 * request may take different paths and overtake each other), the last
	 * SESSION_EARLY_CANCELS of them; a request arriving with one of these
	 * ids is cancelled at once (request_track). */
	uint64_t early_cancel[SESSION_EARLY_CANCELS];
	unsigned early_cancel_next;
	struct gpud_ring *ring; /* its request ring, if it made one (daemon/ring.h) */
	UT_hash_handle hh;
};

/*
 * Device blocks one request holds for its own allocations: the ones a worker
 * made after an allocation missed the pool (buffers_alloc never waits for
 * the device on the loop), and the ones it made before, kept when it starts
 * over; want: the size whose allocation would have waited.
 */
#define BUFFER_SPARES 40
typedef struct buffer_spares {
	struct gpud_device *dev; /* the device of its blocks (the request's) */
	void *mem[BUFFER_SPARES];
	size_t bytes[BUFFER_SPARES];
	int n;
	size_t want;
	uint64_t owner; /* whose blocks they are (gpud_tenant.id) */
	/* the worker's allocation failed: buffers_alloc of that size says so */
	dstatus fail;
	size_t fail_bytes;
	char fail_err[256];
} buffer_spares;

typedef struct buffer_table {
	struct device_set *devices;
	/* Called before a session's buffers go (its host regions go there). */
	void (*on_session_close)(void *arg, gpud_session *s);
	void *hook_arg;
	gpud_buffer *by_handle;
	gpud_session *sessions;
	size_t probes; /* sessions that are gpud's own health probe */
	gpud_tenant *tenants;
	size_t count;
	uint64_t bytes, high_water;
	uint64_t instance; /* this run of gpud, random; its top 16 bits tag every handle */
} buffer_table;

void buffers_init(buffer_table *t, struct device_set *devices);
/* Frees everything (shutdown). */
void buffers_fini(buffer_table *t);

/*
 * Allocates a buffer owned by s (or, with keep, by s's tenant) on device
 * dev (pinned: the client named it), its memory from sp (an exact fit, if
 * sp; sp's blocks are dev's) or the backend. Returns ST_OK, or a status
 * with err set (bad shape, size overflow, over the tenant's quota in all or
 * on dev, backend out of memory), or ST_WOULD_BLOCK with sp->want set where
 * the backend would wait for the device (sp NULL: never; the caller has the
 * block made on a worker: request_alloc_off_loop).
 *
 * Nothing stale: a block another tenant held last (or a fresh one) is
 * cleared on s's queue before anything of s's reads it, from byte 0, or
 * from nbytes where `filled` (the request writes the whole buffer first:
 * an upload, a copy); b->cleared says a clear was queued. A caller that
 * answers before any work of its own on the queue waits for it first
 * (backend_sync on the queue), since other sessions use other queues.
 */
dstatus buffers_alloc(buffer_table *t, gpud_session *s, int keep, struct gpud_device *dev,
		      int pinned, int filled, gpud_dtype dt, int ndim, const uint64_t *shape,
		      buffer_spares *sp, gpud_buffer **out, char *err, size_t errlen);
/* Releases b (as buffers_release) but puts its memory in sp where nobody else
 * holds b and sp has room; else releases it as usual. */
void buffers_release_to(buffer_table *t, gpud_buffer *b, buffer_spares *sp);
/* Gives every block of sp back to its device's backend. */
void buffers_spares_free(buffer_table *t, buffer_spares *sp);
/* A live buffer of tenant tn by handle, or NULL: another tenant's handle is
 * not found, like one that never existed. */
gpud_buffer *buffers_get(buffer_table *t, gpud_tenant *tn, gpud_handle h);
/* 1 if h was made by an earlier run of gpud (its instance tag is not ours). */
int buffers_stale(const buffer_table *t, gpud_handle h);
/* The tenant called name, created with quota q if new; NULL if out of memory. */
gpud_tenant *tenants_get(buffer_table *t, const char *name, const tenant_quota *q);
/* The tenant called name if gpud has seen it, else NULL. */
gpud_tenant *tenants_find(buffer_table *t, const char *name);
/* The tenant whose last local hello came from uid, else NULL. */
gpud_tenant *tenants_by_local_uid(buffer_table *t, int64_t uid);
/* Takes the buffer out of the table; memory goes when the last ref drops. */
void buffers_release(buffer_table *t, gpud_buffer *b);

/* b goes with its request (an inline array, a returned output, a peer
 * copy): it no longer draws its tenant's fresh work to its device. */
void buffers_temp(gpud_buffer *b);

void buffer_ref(gpud_buffer *b);
void buffer_unref(buffer_table *t, gpud_buffer *b);

/* The session of a pipe, created if create is set; NULL if absent. A new
 * session gets a random key and no peer (peer_uid -1). */
gpud_session *sessions_get(buffer_table *t, uint32_t pipe_id, int create);
/* The connection went away: release its buffers and forget it. */
void sessions_close(buffer_table *t, uint32_t pipe_id);
size_t sessions_count(const buffer_table *t);
/* The same less gpud's own health probes: the clients' connections. */
size_t sessions_count_clients(const buffer_table *t);
/* s is gpud's own health probe (once). */
void sessions_mark_probe(buffer_table *t, gpud_session *s);

#endif
