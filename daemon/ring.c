/*
 * daemon/ring.c — request rings (daemon/ring.h, layout in proto/ring.h):
 * taking an entry out of a client's ring, handing it to the request path,
 * writing the reply back (in chunks when it is longer than the ring's
 * area), and watching the rings: polled on every turn of the loop while hot,
 * woken by their eventfd while asleep.
 *
 * Threads: the loop only. A ring's memory is shared with its client, which
 * may write anything at any time: nothing read from it is trusted or read
 * twice. Its reply area's bytes are reserved in the host memory budget
 * (daemon/hostmem.h, atomic) while the ring lives; a ring the budget cannot
 * hold is refused and its client uses the socket.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utlist.h>

#include "daemon/hostmem.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/request.h"
#include "daemon/ring.h"
#include "daemon/status.h"
#include "proto/wire.h"

struct gpud_ring {
	ring_server *rs;
	gpud_session *session; /* NULL once the connection closed */
	uint32_t pipe_id;
	void *base;
	size_t size, cap;
	int unmap;
	gpud_ring_hdr *hdr;
	uint8_t *req, *rep; /* the two areas */
	int efd;
	uv_poll_t poll;
	uint32_t seen;    /* the last req_seq taken */
	uint32_t rep_seq; /* the last rep_seq written */
	int busy;         /* its request is in gpud */
	nng_msg *pending; /* a reply going out in chunks, and how much has gone */
	size_t pending_off;
	int hot;
	uint64_t hot_until;
	gpud_ring *hot_prev, *hot_next;
	int refs; /* the session, a request in gpud, the poll handle */
};

/* The client's fields: shared memory another process writes. */
#define LOAD(p) atomic_load_explicit((_Atomic uint32_t *)(p), memory_order_relaxed)
#define LOAD_ACQ(p) atomic_load_explicit((_Atomic uint32_t *)(p), memory_order_acquire)
#define LOAD_SC(p) atomic_load_explicit((_Atomic uint32_t *)(p), memory_order_seq_cst)
#define STORE(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_relaxed)
#define STORE_SC(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_seq_cst)

int ring_peek(const gpud_ring_hdr *h, uint32_t seen, ring_entry *e)
{
	uint32_t seq = LOAD_ACQ(&h->req_seq);
	if (seq == seen)
		return 0;
	e->seq = seq;
	e->kind = LOAD(&h->req_kind);
	e->len = LOAD(&h->req_len);
	return 1;
}

int ring_check(const ring_entry *e, size_t cap, size_t max_len, int replying, char *err,
	       size_t errlen)
{
	switch (e->kind) {
	case GPUD_RING_REQUEST:
		if (e->len < GPUD_WIRE_PREFIX || e->len > cap || e->len > max_len) {
			snprintf(err, errlen,
				 "malformed ring entry: req_len %u is outside [%u, %zu] (the "
				 "ring's area is %zu bytes, a message at most %zu)",
				 e->len, GPUD_WIRE_PREFIX, cap < max_len ? cap : max_len, cap,
				 max_len);
			return -1;
		}
		return 0;
	case GPUD_RING_MORE:
		if (!replying) {
			snprintf(
				err, errlen,
				"malformed ring entry: req_kind MORE (%d) with no reply being sent "
				"in chunks",
				GPUD_RING_MORE);
			return -1;
		}
		return 0;
	default:
		snprintf(err, errlen,
			 "malformed ring entry: req_kind %u is neither REQUEST (%d) nor MORE (%d)",
			 e->kind, GPUD_RING_REQUEST, GPUD_RING_MORE);
		return -1;
	}
}

/* --- lifetime ------------------------------------------------------------------------ */

/* The reply going out in chunks, if any, is dropped. */
static void drop_pending(gpud_ring *r)
{
	if (r->pending == NULL)
		return;
	nng_msg_free(r->pending);
	r->pending = NULL;
	r->rs->replying--;
}

static void ring_unref(gpud_ring *r)
{
	if (--r->refs > 0)
		return;
	drop_pending(r);
	if (r->unmap)
		munmap(r->base, r->size);
	hostmem_release(r->rs->host, HOSTMEM_RINGS, r->cap);
	free(r);
}

static void on_poll_closed(uv_handle_t *h)
{
	gpud_ring *r = h->data;
	close(r->efd);
	ring_unref(r);
}

static void hot_remove(gpud_ring *r)
{
	if (!r->hot)
		return;
	DL_DELETE2(r->rs->hot, r, hot_prev, hot_next);
	r->hot = 0;
}

/* --- replies --------------------------------------------------------------------------- */

/* The next chunk of the pending reply into the reply area; the client is told. */
static void write_chunk(gpud_ring *r)
{
	size_t total = nng_msg_len(r->pending);
	size_t len = total - r->pending_off;
	if (len > r->cap)
		len = r->cap;
	memcpy(r->rep, (uint8_t *)nng_msg_body(r->pending) + r->pending_off, len);
	gpud_ring_hdr *h = r->hdr;
	STORE(&h->rep_for, r->seen);
	STORE(&h->rep_len, (uint32_t)len);
	STORE(&h->rep_flags, 0);
	atomic_store_explicit((_Atomic uint64_t *)&h->rep_total, (uint64_t)total,
			      memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&h->rep_off, (uint64_t)r->pending_off,
			      memory_order_relaxed);
	STORE_SC(&h->rep_seq, ++r->rep_seq);
	if (LOAD_SC(&h->client_waiting))
		syscall(SYS_futex, &h->rep_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	r->pending_off += len;
	r->rs->last_chunk_ns = now_ns();
	if (r->pending_off == total)
		drop_pending(r); /* all of it has gone */
}

static void send_reply(gpud_ring *r, nng_msg *m)
{
	drop_pending(r);
	r->pending = m;
	r->rs->replying++;
	r->pending_off = 0;
	write_chunk(r);
}

/* A reply of gpud's own: the entry could not be taken. */
static void send_error(gpud_ring *r, dstatus st, const char *msg)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	nng_msg *m;
	resp.code = (Gpud__Status)status_wire(st);
	resp.message = (char *)msg;
	resp.version = GPUD_PROTOCOL_VERSION;
	if (wire_pack(&m, &resp.base, NULL, 0, NULL) != 0)
		return; /* out of memory: the client's call times out */
	send_reply(r, m);
}

static void ring_hot(gpud_ring *r);

static void on_done(void *arg, nng_msg *reply)
{
	gpud_ring *r = arg;
	r->busy = 0;
	if (r->session == NULL) { /* the connection went: nobody reads it */
		if (reply)
			nng_msg_free(reply);
	} else if (reply == NULL) {
		send_error(r, ST_INTERNAL, "gpud could not build the reply (out of memory)");
		ring_hot(r);
	} else {
		send_reply(r, reply);
		ring_hot(r);
	}
	ring_unref(r);
}

/* --- taking entries ---------------------------------------------------------------- */

static void ring_take(gpud_ring *r)
{
	ring_entry e;
	char err[256];

	if (r->session == NULL || r->busy || !ring_peek(r->hdr, r->seen, &e))
		return;
	r->seen = e.seq;
	r->hot_until = now_ns() + r->rs->spin_ns;
	if (ring_check(&e, r->cap, r->rs->max_len, r->pending != NULL, err, sizeof(err)) != 0) {
		log_conn(LOG_DEBUG, r->pipe_id,
			 r->session->tenant ? r->session->tenant->name : NULL, "request ring: %s",
			 err);
		send_error(r, ST_PROTOCOL, err);
		return;
	}
	if (e.kind == GPUD_RING_MORE) {
		write_chunk(r);
		return;
	}
	drop_pending(r); /* a new request: the rest of the last reply is not wanted */
	nng_msg *m;
	if (nng_msg_alloc(&m, e.len) != 0) {
		send_error(r, ST_OUT_OF_MEMORY, "gpud is out of memory for the request");
		return;
	}
	/* One copy out of the shared memory; only the copy is decoded. */
	memcpy(nng_msg_body(m), r->req, e.len);
	r->busy = 1;
	r->refs++;
	r->rs->requests++;
	if (r->rs->deliver(r->rs->deliver_arg, r->pipe_id, m, on_done, r) != 0) {
		r->busy = 0;
		r->refs--;
		send_error(r, ST_INTERNAL, "gpud could not take the request");
	}
}

/* --- watching ------------------------------------------------------------------------ */

/*
 * A turn of the loop while rings are hot. Past RING_PURE_SPIN_NS since the
 * last entry or reply, a turn that found nothing gives the core away
 * (sched_yield): the client that is about to write the next request may be
 * waiting for this very core (two cores shared by gpud, its clients and
 * others), and a loop that only spins would keep it from running until the
 * ring's spin_us is over. With nobody else to run, the yield returns at once
 * (a syscall, as each turn's epoll_wait is); the pure spin first keeps a
 * client that answers at once (its next call) from waiting for another
 * process's time slice on gpud's core.
 */
#define RING_PURE_SPIN_NS 2000u

static void on_idle(uv_idle_t *h)
{
	ring_server *rs = h->data;
	uint64_t now = now_ns();
	gpud_ring *r, *tmp;
	int took = 0;
	DL_FOREACH_SAFE2(rs->hot, r, tmp, hot_next)
	{
		uint32_t seen = r->seen;
		ring_take(r);
		took |= r->seen != seen;
		if (r->busy) {
			hot_remove(r); /* nothing to look for until its reply */
		} else if (now > r->hot_until) {
			/* Asleep: the client rings the eventfd from now on. The flag
			 * goes up before the last look, so no bump is missed. */
			STORE_SC(&r->hdr->gpud_sleeping, 1);
			hot_remove(r);
			if (LOAD_SC(&r->hdr->req_seq) != r->seen)
				ring_hot(r);
		}
	}
	if (rs->hot == NULL && rs->idling) {
		uv_idle_stop(&rs->idle);
		rs->idling = 0;
	} else if (took) {
		rs->active_ns = now;
	} else if ((int64_t)(now - rs->active_ns) > (int64_t)RING_PURE_SPIN_NS) {
		sched_yield();
	}
}

static void ring_hot(gpud_ring *r)
{
	ring_server *rs = r->rs;
	rs->active_ns = now_ns();
	r->hot_until = rs->active_ns + rs->spin_ns;
	if (!r->hot) {
		STORE_SC(&r->hdr->gpud_sleeping, 0);
		DL_APPEND2(rs->hot, r, hot_prev, hot_next);
		r->hot = 1;
	}
	if (!rs->idling) {
		uv_idle_start(&rs->idle, on_idle);
		rs->idling = 1;
	}
}

static void on_doorbell(uv_poll_t *h, int status, int events)
{
	gpud_ring *r = h->data;
	uint64_t v;
	(void)events;
	if (status == 0)
		while (read(r->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			;
	if (r->session == NULL)
		return;
	ring_hot(r);
	ring_take(r);
}

/* --- attaching --------------------------------------------------------------------- */

void ring_server_init(ring_server *rs, uv_loop_t *loop, uint64_t spin_us, size_t max_len,
		      ring_deliver_fn deliver, void *deliver_arg)
{
	memset(rs, 0, sizeof(*rs));
	rs->loop = loop;
	rs->spin_ns = spin_us * 1000u;
	rs->max_len = max_len;
	rs->deliver = deliver;
	rs->deliver_arg = deliver_arg;
	uv_idle_init(loop, &rs->idle);
	rs->idle.data = rs;
	rs->inited = 1;
}

void ring_server_fini(ring_server *rs)
{
	if (!rs->inited)
		return;
	if (rs->idling)
		uv_idle_stop(&rs->idle);
	rs->idling = 0;
	if (!uv_is_closing((uv_handle_t *)&rs->idle))
		uv_close((uv_handle_t *)&rs->idle, NULL);
	rs->inited = 0;
}

int ring_attach(ring_server *rs, gpud_session *s, void *base, size_t size, int unmap, int efd,
		char *err, size_t errlen)
{
	ON_LOOP("ring_attach");
	if (s->ring != NULL) {
		snprintf(err, errlen, "connection %u already has a request ring", s->pipe_id);
		return -1;
	}
	size_t cap = size > GPUD_RING_HDR ? (size - GPUD_RING_HDR) / 2 : 0;
	if (size <= GPUD_RING_HDR || size != GPUD_RING_HDR + 2 * cap || cap % 4096 != 0 ||
	    cap < GPUD_RING_MIN_CAP || cap > GPUD_RING_MAX_CAP) {
		snprintf(err, errlen,
			 "a request ring is %u + 2 * cap bytes with cap a multiple of 4096 in "
			 "[%u, %u]; got %zu bytes",
			 GPUD_RING_HDR, GPUD_RING_MIN_CAP, GPUD_RING_MAX_CAP, size);
		return -1;
	}
	/* gpud writes the reply area: its pages are charged to gpud. */
	if (hostmem_reserve(rs->host, HOSTMEM_RINGS, cap, err, errlen) != 0)
		return -1;
	gpud_ring *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		hostmem_release(rs->host, HOSTMEM_RINGS, cap);
		snprintf(err, errlen, "gpud is out of memory");
		return -1;
	}
	*r = (gpud_ring){.rs = rs,
			 .session = s,
			 .pipe_id = s->pipe_id,
			 .base = base,
			 .size = size,
			 .cap = cap,
			 .unmap = unmap,
			 .hdr = base,
			 .req = (uint8_t *)base + GPUD_RING_HDR,
			 .rep = (uint8_t *)base + GPUD_RING_HDR + cap,
			 .efd = efd,
			 .refs = 1};
	/* Whatever the client wrote so far is not a request: start from there. */
	r->seen = LOAD_SC(&r->hdr->req_seq);
	r->rep_seq = LOAD(&r->hdr->rep_seq);
	if (efd >= 0) {
		int rv = uv_poll_init(rs->loop, &r->poll, efd);
		if (rv != 0) {
			snprintf(err, errlen, "the ring's eventfd cannot be watched: %s",
				 uv_strerror(rv));
			hostmem_release(rs->host, HOSTMEM_RINGS, cap);
			free(r);
			return -1;
		}
		r->poll.data = r;
		r->refs++;
		uv_poll_start(&r->poll, UV_READABLE, on_doorbell);
	}
	s->ring = r;
	rs->count++;
	ring_hot(r);
	return 0;
}

void ring_session_closed(ring_server *rs, gpud_session *s)
{
	gpud_ring *r = s->ring;
	if (r == NULL)
		return;
	s->ring = NULL;
	r->session = NULL;
	rs->count--;
	hot_remove(r);
	drop_pending(r); /* nobody fetches the rest */
	if (r->efd >= 0) {
		uv_poll_stop(&r->poll);
		uv_close((uv_handle_t *)&r->poll, on_poll_closed);
	}
	ring_unref(r); /* the session's */
}

void ring_poll_session(gpud_session *s)
{
	if (s->ring)
		ring_take(s->ring);
}
