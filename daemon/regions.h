/*
 * daemon/regions.h — host regions: client memory shared with gpud through
 * the region socket (proto/shm.h), so uploads and downloads move bytes
 * between the client's pages and the device without crossing nng.
 *
 * A region belongs to the connection that registered it and is scoped to
 * it: another connection's region id is "unknown region". Like buffers,
 * regions are reference-counted: a copy in flight holds one, so unmapping
 * (or the connection closing) only takes the region out of reach; it is
 * unpinned and unmapped, on a worker, when the last copy lets go.
 *
 * Threads: regions and the socket are the loop's; a worker pins a new
 * region (its shm_conn, before the region exists) and unpins and unmaps one
 * whose last reference went (the region is out of every table by then).
 * A region of lent memory (daemon/lend.h) goes back to the lend pool instead.
 */
#ifndef GPUD_REGIONS_H
#define GPUD_REGIONS_H

#include <stddef.h>
#include <stdint.h>
#include <uthash.h>
#include <uv.h>

#include "daemon/buffers.h"
#include "daemon/claims.h"
#include "daemon/lend.h"

typedef struct host_region {
	uint64_t id;
	gpud_session *session; /* NULL once out of reach */
	void *base;
	size_t size;
	int pinned;
	int refs;
	lend_mem *lent; /* memory gpud lent (daemon/lend.h), given back, not unmapped */
	struct region_server *rs;
	uv_work_t work; /* unpin + unmap */
	UT_hash_handle hh;
	struct host_region *prev, *next; /* the session's list */
} host_region;

typedef struct region_server {
	uv_loop_t *loop;
	gpud_backend *backend;
	buffer_table *buffers;
	char path[108]; /* "" when off */
	int fd;
	uv_poll_t poll;
	int polling;
	host_region *by_id;
	uint64_t count, bytes;
	uint64_t max_bytes; /* per connection */
	int pending;        /* registrations and unmaps on workers */
	/* A GPUD_SHM_RING registration, checked like a region and mapped: the
	 * server's (daemon/ring.h); takes base and efd on 0, else err. */
	int (*on_ring)(void *arg, gpud_session *s, void *base, size_t size, int efd, char *err,
		       size_t errlen);
	void *ring_arg;
	lend_pool lend; /* host memory lent to clients (GPUD_SHM_LEND) */
	int lending;
	claim_table claims; /* lent before hello (daemon/claims.h), while lending */
	/* Files copied into and out of regions (daemon/region_io.h): copies on
	 * workers now, and the bytes moved since start. */
	uint32_t file_io;
	uint64_t file_io_read, file_io_written;
} region_server;

/*
 * Listens on path (a Unix SOCK_SEQPACKET socket, replacing a stale file)
 * if path is non-empty. 0, or -1 with err.
 */
int regions_start(region_server *rs, uv_loop_t *loop, gpud_backend *backend, buffer_table *bt,
		  const char *path, uint64_t max_bytes, char *err, size_t errlen);
/* Lends gpud's own host memory (daemon/lend.h) on this socket from now on. */
void regions_lend_start(region_server *rs, size_t unit, size_t spare, size_t keep, unsigned keep_s,
			unsigned claim_s);
/* Stops listening and removes the socket file (regions stay until closed). */
void regions_stop(region_server *rs);
/* Registrations or unmaps still running on workers (shutdown waits). */
int regions_pending(const region_server *rs);
/* Releases every region now, pinned ones unpinned on this thread (shutdown). */
void regions_fini(region_server *rs);

/* r (base, size, pinned, lent and one reference set) becomes session s's
 * region, under a fresh random id (or r->id where set: lent before hello).
 * 0, or -1 where r->id is another region's. */
int regions_add(region_server *rs, gpud_session *s, host_region *r);
/* A fresh random region id, nonzero, of no region and no parked claim. */
uint64_t regions_new_id(region_server *rs);
/* The session's region by id, or NULL. */
host_region *regions_get(region_server *rs, gpud_session *s, uint64_t id);
/* Out of reach now; unmapped once the last reference goes. */
void regions_release(region_server *rs, host_region *r);
/* Every region of a session (it is closing). */
void regions_session_closed(region_server *rs, gpud_session *s);

void region_ref(host_region *r);
void region_unref(host_region *r);

#endif
