/*
 * daemon/ring.h — the request ring (proto/ring.h): a transport beside nng
 * for ipc:// clients, one ring per connection, whose entries enter the same
 * request path as nng's messages (through the server's deliver function:
 * decode, session, tenant, quotas, verbs) and whose replies go back into the
 * ring.
 *
 * gpud watches a ring without a thread of its own: while a ring has been
 * used within spin_us, the loop polls it on every turn (a uv_idle handle,
 * so the loop does not block while any ring is hot; past a short pure spin
 * a turn that finds nothing yields the core, which a client on it may
 * need); after that it sets
 * gpud_sleeping and waits on the ring's eventfd (a uv_poll handle), which
 * the client writes only when it sees that flag. Idle rings cost nothing.
 *
 * Threads: everything here is the loop's. The client's process writes the
 * ring's memory at any time; gpud reads each field it needs once, copies a
 * request out before decoding it, and writes only its own fields and the
 * reply area.
 */
#ifndef GPUD_RING_H
#define GPUD_RING_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include <nng/nng.h>

#include "daemon/buffers.h"
#include "proto/ring.h"

typedef struct gpud_ring gpud_ring;

/*
 * The server's: runs message m (taken) through the request path as
 * connection pipe_id's; done(done_arg, reply) gets the reply (taken; NULL if
 * none could be built) once the request ends, on the loop. 0, or -1 (m freed).
 */
typedef int (*ring_deliver_fn)(void *arg, uint32_t pipe_id, nng_msg *m,
			       void (*done)(void *done_arg, nng_msg *reply), void *done_arg);

typedef struct ring_server {
	uv_loop_t *loop;
	ring_deliver_fn deliver;
	void *deliver_arg;
	uint64_t spin_ns; /* how long a used ring is polled before gpud sleeps on it */
	size_t max_len;   /* the largest request message gpud takes */
	uv_idle_t idle;   /* polls the hot rings while any is hot */
	int idling, inited;
	uint64_t active_ns; /* the last entry taken or reply written: the pure spin's start */
	gpud_ring *hot;     /* the rings polled on every turn of the loop */
	uint64_t count;     /* rings attached now */
	uint64_t requests;  /* requests that came through a ring */
	/* rings whose reply goes out in chunks now, and when a chunk last went
	 * (a stopping gpud waits for them: daemon/server.c) */
	unsigned replying;
	uint64_t last_chunk_ns;
	/* the host memory budget its rings' reply areas are reserved in (NULL: none) */
	struct hostmem *host;
} ring_server;

/* What a client asked for in its ring's header, each field read once. */
typedef struct ring_entry {
	uint32_t seq, kind, len;
} ring_entry;

/*
 * 1 and *e filled if the client bumped req_seq past seen (the fields are
 * read after req_seq, with acquire ordering), else 0.
 */
int ring_peek(const gpud_ring_hdr *h, uint32_t seen, ring_entry *e);
/*
 * Whether e can be served by a ring whose areas hold cap bytes, taking
 * messages up to max_len, with a reply being sent in chunks (replying) or
 * not: 0, or -1 with the reason in err.
 */
int ring_check(const ring_entry *e, size_t cap, size_t max_len, int replying, char *err,
	       size_t errlen);

/* Sets up rs (nothing runs until a ring is attached). */
void ring_server_init(ring_server *rs, uv_loop_t *loop, uint64_t spin_us, size_t max_len,
		      ring_deliver_fn deliver, void *deliver_arg);
/* Closes the idle handle (rings went with their sessions). */
void ring_server_fini(ring_server *rs);

/*
 * Makes the mapped memory [base, base + size) session s's ring, with efd its
 * doorbell (-1: none, the ring is then polled while hot and by ring_poll).
 * Takes base (unmapped when the ring goes, if unmap is set) and efd on
 * success; on failure the caller keeps them. 0, or -1 with err.
 */
int ring_attach(ring_server *rs, gpud_session *s, void *base, size_t size, int unmap, int efd,
		char *err, size_t errlen);
/* s is closing: its ring stops; it is freed when no request of it is left in gpud. */
void ring_session_closed(ring_server *rs, gpud_session *s);
/* Looks at s's ring once, as the loop does while it is hot (tests, the fuzzer). */
void ring_poll_session(gpud_session *s);

#endif
