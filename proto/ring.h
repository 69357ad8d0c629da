/*
 * proto/ring.h — the request ring: a local fast path beside nng for ipc://
 * clients. One request at a time travels through shared memory instead of
 * a socket; the bytes are exactly an nng message's (proto/wire.h), so gpud
 * decodes and checks a ring entry as it does a message.
 *
 * Set-up: after hello, the client makes a memfd of GPUD_RING_HDR + 2 * cap
 * bytes (cap a multiple of 4096 within [GPUD_RING_MIN_CAP,
 * GPUD_RING_MAX_CAP]) and an eventfd, and registers both on the region
 * socket (proto/shm.h) with flags GPUD_SHM_RING, the memfd first. gpud
 * checks them as it checks a host region (peer uid, session key, seals,
 * tmpfs, size) and the ring belongs to that connection from then on: it goes
 * when the connection goes. One ring per connection; a second replaces none
 * and is refused.
 *
 * Layout: the header (below) at 0, the request area at GPUD_RING_HDR, the
 * reply area at GPUD_RING_HDR + cap. A round trip:
 *
 *   client: writes the message into the request area, req_kind =
 *           GPUD_RING_REQUEST, req_len, then bumps req_seq (release; every
 *           store before it is visible first). If gpud_sleeping is set, it
 *           writes 1 to the eventfd (the doorbell).
 *   gpud:   sees req_seq change (it polls while the ring is busy, else waits
 *           on the eventfd), copies req_len bytes out (never reading them
 *           in place), handles the message, writes the reply (or its first
 *           cap bytes) into the reply area with rep_for = the req_seq it
 *           answers, rep_off, rep_len and rep_total, then bumps rep_seq
 *           (release). If client_waiting is set it wakes rep_seq's futex.
 *   client: spins on rep_seq, then sets client_waiting and sleeps in
 *           FUTEX_WAIT on it. A reply longer than cap comes in chunks: the
 *           client asks for the next with req_kind = GPUD_RING_MORE and a
 *           new req_seq.
 *
 * Both sides set their flag before their last look at the other's counter
 * (sequentially consistent), so a bump is never missed by a side that went
 * to sleep. gpud trusts nothing in the ring: it keeps its own copy of every
 * counter it writes, reads each client field once, and checks it.
 * A malformed entry is answered with a PROTOCOL error in the reply area.
 * Integers are little-endian (the memory never leaves the host).
 */
#ifndef GPUD_PROTO_RING_H
#define GPUD_PROTO_RING_H

#include <stdint.h>

#define GPUD_RING_HDR 4096u
#define GPUD_RING_MIN_CAP (64u << 10)
#define GPUD_RING_MAX_CAP (64u << 20)

enum {
	GPUD_RING_REQUEST = 1, /* the request area holds a message */
	GPUD_RING_MORE = 2,    /* the next chunk of the reply, please */
};

typedef struct gpud_ring_hdr {
	/* written by the client (one cache line) */
	uint32_t req_seq;        /* bumped after an entry is written */
	uint32_t req_kind;       /* GPUD_RING_REQUEST or GPUD_RING_MORE */
	uint32_t req_len;        /* bytes of the message in the request area */
	uint32_t client_waiting; /* the client sleeps (FUTEX_WAIT) on rep_seq */
	uint8_t pad0[48];
	/* written by gpud (one cache line) */
	uint32_t rep_seq;   /* bumped after a reply chunk is written */
	uint32_t rep_for;   /* the req_seq this chunk answers */
	uint32_t rep_len;   /* bytes of this chunk in the reply area */
	uint32_t rep_flags; /* 0 */
	uint64_t rep_total; /* bytes of the whole reply */
	uint64_t rep_off;   /* where this chunk starts in the reply */
	uint8_t pad1[32];
	/* written by gpud (one cache line) */
	uint32_t gpud_sleeping; /* 1: gpud waits on the eventfd, ring it */
	uint8_t pad2[60];
} gpud_ring_hdr;

#endif
