/*
 * client/ring.c — the request ring (proto/ring.h): the local fast path
 * beside the nng socket for ipc:// connections. The first call of a session
 * takes the socket; the second makes the ring (a sealed memfd and an
 * eventfd, handed to gpud on the region socket), so that a process making
 * a single call sets none up; after that one call at a time writes its packed request
 * into the ring instead of the socket, spins for the reply, then sleeps on
 * it (FUTEX_WAIT). Calls that find the ring busy, and requests larger than
 * its area, take the socket: nothing changes for them.
 *
 * The ring carries the very bytes the socket would, so the reply is checked
 * by the same code (client_take_reply). A ring that failed once (a timeout,
 * gpud out of step) is not used again in that session. gpud_set_ring(c, 0)
 * (or GPUD_NO_RING=1 in the environment) turns it off; GPUD_RING_SPIN_US
 * sets the spin (default 200 us; 0: sleep at once).
 *
 * Threads: everything here runs under c->ring_mu (one call at a time).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client/internal.h"

/* Each area: a request up to this (payloads under SHM_MIN ride in messages). */
#define RING_CAP (2u << 20)
/* Spinning without yielding the core, at first: about gpud's time for the
 * smallest request. Past it the spin yields between looks, so that gpud's
 * loop (or its worker) runs at once when it shares this core (a machine of
 * two cores shared by gpud, clients and others): a longer pure spin delays
 * every reply by itself there. With nobody else to run, a yield returns at
 * once. */
#define RING_PURE_SPIN_NS 2000u
/* The spin, when replies lately took longer than the whole spin. */
#define RING_SHORT_SPIN_NS 20000u
/* How long a waiting call sleeps between looks at its connection. */
#define RING_SLICE_MS 5

#define LOAD(p) atomic_load_explicit((_Atomic uint32_t *)(p), memory_order_relaxed)
#define LOAD_ACQ(p) atomic_load_explicit((_Atomic uint32_t *)(p), memory_order_acquire)
#define LOAD_SC(p) atomic_load_explicit((_Atomic uint32_t *)(p), memory_order_seq_cst)
#define STORE(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_relaxed)
#define STORE_SC(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_seq_cst)

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static uint64_t spin_ns(void)
{
	static _Atomic int64_t cached = -1;
	int64_t v = atomic_load(&cached);
	if (v < 0) {
		const char *e = getenv("GPUD_RING_SPIN_US");
		char *end;
		long us = e ? strtol(e, &end, 10) : 200;
		if (e && (*e == '\0' || *end != '\0' || us < 0 || us > 1000000))
			us = 200;
		v = (int64_t)us * 1000;
		atomic_store(&cached, v);
	}
	return (uint64_t)v;
}

static void ring_close(client_ring *g)
{
	if (g->base)
		munmap(g->base, g->size);
	if (g->efd >= 0)
		close(g->efd);
	*g = (client_ring){.efd = -1};
}

void client_ring_free(gpud_client *c)
{
	pthread_mutex_lock(&c->ring_mu);
	ring_close(&c->ring);
	pthread_mutex_unlock(&c->ring_mu);
}

/* Makes the ring of session gen and hands it to gpud; GPUD_OK or an error (not fatal). */
static gpud_status ring_open(gpud_client *c, uint64_t gen)
{
	char path[108];
	uint8_t key[GPUD_SHM_KEY_LEN];
	uint64_t g, id;
	size_t size = GPUD_RING_HDR + 2 * (size_t)RING_CAP;
	client_ring *r = &c->ring;
	gpud_status st;

	if (!client_shm(c, path, sizeof(path), key, &g) || g != gen)
		return GPUD_EUNSUPPORTED;
	int fd = memfd_create("gpud-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return GPUD_ENOMEM;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	void *base = MAP_FAILED;
	if (efd < 0 || ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
	    (base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		st = GPUD_ENOMEM;
		goto fail;
	}
	if ((st = client_shm_register(c, fd, efd, size, GPUD_SHM_RING, path, key, &id)) != GPUD_OK)
		goto fail;
	close(fd);
	*r = (client_ring){.base = base,
			   .size = size,
			   .cap = RING_CAP,
			   .hdr = base,
			   .req = (uint8_t *)base + GPUD_RING_HDR,
			   .rep = (uint8_t *)base + GPUD_RING_HDR + RING_CAP,
			   .efd = efd,
			   .gen = gen};
	return GPUD_OK;
fail:
	if (base != MAP_FAILED)
		munmap(base, size);
	if (efd >= 0)
		close(efd);
	close(fd);
	return st;
}

/* Bumps req_seq for the entry just written; rings the doorbell if gpud sleeps. */
static void ring_post(client_ring *g, uint32_t kind, uint32_t len)
{
	STORE(&g->hdr->req_kind, kind);
	STORE(&g->hdr->req_len, len);
	STORE_SC(&g->hdr->req_seq, ++g->seq);
	if (LOAD_SC(&g->hdr->gpud_sleeping)) {
		uint64_t one = 1;
		if (write(g->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return; /* gpud is gone: the wait notices the connection */
	}
}

static int session_lost(gpud_client *c, uint64_t gen)
{
	pthread_mutex_lock(&c->mu);
	int lost = c->lost || c->gen != gen;
	pthread_mutex_unlock(&c->mu);
	return lost;
}

/*
 * Waits for the next reply chunk: GPUD_OK, GPUD_ETIMEDOUT at the deadline
 * (0: none), or GPUD_ETRANSPORT when the connection went.
 */
static gpud_status ring_wait(gpud_client *c, client_ring *g, uint64_t gen, uint64_t deadline)
{
	uint64_t t0 = mono_ns(), spin = spin_ns(), now;
	/* Replies that took longer than the spin lately (a long kernel, or a
	 * machine whose cores gpud's workers need): a short spin, then sleep. */
	if (g->avg_wait_ns > spin && spin > RING_SHORT_SPIN_NS)
		spin = RING_SHORT_SPIN_NS;
	unsigned n = 0;
	while (LOAD_ACQ(&g->hdr->rep_seq) == g->rep_seen) {
		if ((++n & 63) != 0) {
			cpu_relax();
			continue;
		}
		if ((now = mono_ns()) - t0 >= spin)
			goto sleep;
		/* Past the first microseconds, give the core to whoever needs it
		 * (gpud's loop or workers, on a small machine) between looks. */
		if (now - t0 >= RING_PURE_SPIN_NS)
			sched_yield();
	}
	return GPUD_OK;
sleep:
	for (;;) {
		uint32_t seen = g->rep_seen;
		STORE_SC(&g->hdr->client_waiting, 1);
		if (LOAD_SC(&g->hdr->rep_seq) == seen) {
			struct timespec ts = {.tv_sec = 0, .tv_nsec = RING_SLICE_MS * 1000000L};
			syscall(SYS_futex, &g->hdr->rep_seq, FUTEX_WAIT, seen, &ts, NULL, 0);
		}
		STORE(&g->hdr->client_waiting, 0);
		if (LOAD_ACQ(&g->hdr->rep_seq) != seen)
			return GPUD_OK;
		if (session_lost(c, gen))
			return GPUD_ETRANSPORT;
		if (deadline && mono_ns() >= deadline)
			return GPUD_ETIMEDOUT;
	}
}

int client_ring_exchange(gpud_client *c, uint64_t gen, nng_msg *m, uint64_t id,
			 Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload, size_t *rplen,
			 gpud_status *st)
{
	client_ring *g = &c->ring;
	size_t len = nng_msg_len(m);

	/* gen 0, no session (a status before hello, or carrying hello): the socket */
	if (gen == 0 || len > RING_CAP || pthread_mutex_trylock(&c->ring_mu) != 0)
		return 0;
	if (g->base && g->gen != gen)
		ring_close(g); /* of a session before: gpud dropped it with the connection */
	if (__atomic_load_n(&c->ring_off, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&c->ring_mu);
		return 0;
	}
	if (g->base == NULL) {
		/* A session's first call takes the socket: a process that makes one
		 * or two calls (gpuctl status) pays for no ring; the second makes it. */
		if (c->ring_first_gen != gen) {
			c->ring_first_gen = gen;
			pthread_mutex_unlock(&c->ring_mu);
			return 0;
		}
		if (c->ring_tried_gen == gen || ring_open(c, gen) != GPUD_OK) {
			c->ring_tried_gen = gen;
			pthread_mutex_unlock(&c->ring_mu);
			return 0;
		}
		c->ring_tried_gen = gen;
	}
	if (g->broken) {
		pthread_mutex_unlock(&c->ring_mu);
		return 0;
	}

	int t = client_timeout(c);
	uint64_t deadline = t > 0 ? mono_ns() + (uint64_t)t * 1000000ull : 0;
	nng_msg *rm = NULL;
	size_t got = 0, total = 0;
	gpud_status w;

	memcpy(g->req, nng_msg_body(m), len);
	nng_msg_free(m);
	uint64_t t0 = mono_ns();
	ring_post(g, GPUD_RING_REQUEST, (uint32_t)len);
	for (;;) {
		if ((w = ring_wait(c, g, gen, deadline)) != GPUD_OK)
			break;
		g->rep_seen = LOAD_ACQ(&g->hdr->rep_seq);
		if (rm == NULL) { /* the first chunk: how long gpud took, averaged */
			uint64_t dt = mono_ns() - t0;
			g->avg_wait_ns = g->avg_wait_ns ? (7 * g->avg_wait_ns + dt) / 8 : dt;
		}
		uint32_t rfor = LOAD(&g->hdr->rep_for), rlen = LOAD(&g->hdr->rep_len);
		uint64_t rtot = atomic_load_explicit((_Atomic uint64_t *)&g->hdr->rep_total,
						     memory_order_relaxed);
		uint64_t roff = atomic_load_explicit((_Atomic uint64_t *)&g->hdr->rep_off,
						     memory_order_relaxed);
		if (rm == NULL) {
			total = (size_t)rtot;
			if (rtot == 0 || rtot > (uint64_t)client_reply_limit(c) + (2u << 20) ||
			    nng_msg_alloc(&rm, total) != 0) {
				w = GPUD_EPROTO;
				break;
			}
		}
		if (rfor != g->seq || rtot != total || roff != got || rlen > g->cap ||
		    rlen > total - got || rlen == 0) {
			w = GPUD_EPROTO;
			break;
		}
		memcpy((uint8_t *)nng_msg_body(rm) + got, g->rep, rlen);
		got += rlen;
		if (got == total)
			break;
		ring_post(g, GPUD_RING_MORE, 0);
	}
	if (w != GPUD_OK) {
		g->broken = 1;
		if (rm)
			nng_msg_free(rm);
	}
	pthread_mutex_unlock(&c->ring_mu);
	switch (w) {
	case GPUD_OK:
		__atomic_add_fetch(&c->ring_calls, 1, __ATOMIC_RELAXED);
		*st = client_take_reply(c, gen, rm, id, resp, rmsg, rpayload, rplen);
		break;
	case GPUD_ETIMEDOUT:
		client_cancel_async(c, id); /* gpud stops what nobody will collect */
		*st = client_seterr(
			c, GPUD_ETIMEDOUT,
			"no reply from %s within %d ms; the request is cancelled in gpud",
			client_url(c), t);
		break;
	case GPUD_ETRANSPORT:
		client_session_lost(c, gen);
		if ((*st = client_closed_draining(c, gen, NNG_ECONNRESET, 1)) != GPUD_OK)
			break;
		*st = client_seterr(c, GPUD_ETRANSPORT,
				    "the connection to gpud at %s was lost while the call was in "
				    "flight: gpud restarted or the link dropped; the call may or "
				    "may not have taken effect, and the next call reconnects",
				    client_url(c));
		break;
	default:
		*st = client_seterr(c, GPUD_EPROTO,
				    "the request ring's reply is out of step (rep_for, offsets or "
				    "length); the ring is not used again in this session");
		break;
	}
	return 1;
}

void gpud_set_ring(gpud_client *c, int on)
{
	if (c)
		__atomic_store_n(&c->ring_off, !on, __ATOMIC_RELAXED);
}

uint64_t gpud_ring_calls(const gpud_client *c)
{
	return c ? __atomic_load_n(&c->ring_calls, __ATOMIC_RELAXED) : 0;
}
