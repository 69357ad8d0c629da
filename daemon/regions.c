/*
 * daemon/regions.c — the region socket and the host regions it creates
 * (protocol in proto/shm.h).
 *
 * nng moves messages, not file descriptors, so the memfd a client shares
 * comes over a small Unix SOCK_SEQPACKET socket of our own: one message in
 * (with the fd), one reply out, then the connection closes. A file copy
 * into or out of a region comes the same way and is daemon/region_io.c's.
 * Everything runs on the loop except pinning and unmapping, which take
 * milliseconds per GiB and go to libuv's workers. A region gpud pins is reserved in the host
 * memory budget (daemon/hostmem.h, atomic) first: pinning faults in and
 * locks every page, charged to gpud where the client never touched them.
 * Where the budget refuses, the region is kept unpinned (copies from it
 * are staged), as where pinning fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>
#include <utlist.h>

#include "daemon/hostmem.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/region_io.h"
#include "daemon/regions.h"
#include "proto/shm.h"

/* A connection that has not sent its one message by then is dropped. */
#define CONN_TIMEOUT_MS 5000

typedef struct shm_conn {
	region_server *rs;
	int fd;
	uv_poll_t poll;
	uv_timer_t timer;
	int handles_open;
	uv_work_t work;
	uint32_t pipe_id;
	void *base;
	size_t size;
	int pin, pinned;
	lend_mem *lent;      /* a lend: the memory gpud lends, and its descriptor for the reply */
	region_claim *claim; /* a lend before hello, until parked (daemon/claims.h) */
	char pin_err[256];
} shm_conn;

/* --- regions --------------------------------------------------------------------- */

void region_ref(host_region *r)
{
	r->refs++;
}

static void unmap_work(uv_work_t *w)
{
	host_region *r = w->data;
	gpud_backend *b = r->rs->backend;
	if (r->pinned && b->ops->host_unregister)
		b->ops->host_unregister(b, r->base);
	munmap(r->base, r->size);
	if (r->pinned)
		hostmem_release(b->host, HOSTMEM_PINNED, r->size);
}

static void unmap_after(uv_work_t *w, int status)
{
	host_region *r = w->data;
	r->rs->pending--;
	free(r);
}

void region_unref(host_region *r)
{
	if (--r->refs > 0)
		return;
	if (r->lent) { /* zeroed and kept for the tenant (daemon/lend.h) */
		lend_give_back(&r->rs->lend, r->lent);
		free(r);
		return;
	}
	r->rs->pending++;
	r->work.data = r;
	uv_queue_work(r->rs->loop, &r->work, unmap_work, unmap_after);
}

void regions_release(region_server *rs, host_region *r)
{
	ON_LOOP("regions_release");
	if (r->session == NULL)
		return;
	HASH_DELETE(hh, rs->by_id, r);
	DL_DELETE(r->session->regions, r);
	r->session->nregions--;
	r->session->region_bytes -= r->size;
	r->session = NULL;
	rs->count--;
	rs->bytes -= r->size;
	region_unref(r);
}

void regions_session_closed(region_server *rs, gpud_session *s)
{
	if (s->nregions)
		log_conn(LOG_DEBUG, s->pipe_id, s->tenant ? s->tenant->name : NULL,
			 "connection closed: unmapping %" PRIu64 " host regions", s->nregions);
	while (s->regions)
		regions_release(rs, s->regions);
}

uint64_t regions_new_id(region_server *rs)
{
	uint64_t id;
	host_region *r;
	do {
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			abort(); /* cannot fail for 8 bytes once the pool is seeded */
		HASH_FIND(hh, rs->by_id, &id, sizeof(id), r);
	} while (id == 0 || r != NULL || (rs->lending && claims_has_id(&rs->claims, id)));
	return id;
}

int regions_add(region_server *rs, gpud_session *s, host_region *r)
{
	ON_LOOP("regions_add");
	if (r->id == 0) {
		r->id = regions_new_id(rs);
	} else {
		host_region *old;
		HASH_FIND(hh, rs->by_id, &r->id, sizeof(r->id), old);
		if (old)
			return -1;
	}
	r->rs = rs;
	r->session = s;
	HASH_ADD(hh, rs->by_id, id, sizeof(r->id), r);
	DL_APPEND(s->regions, r);
	s->nregions++;
	s->region_bytes += r->size;
	rs->count++;
	rs->bytes += r->size;
	return 0;
}

host_region *regions_get(region_server *rs, gpud_session *s, uint64_t id)
{
	host_region *r;
	ON_LOOP("regions_get");
	HASH_FIND(hh, rs->by_id, &id, sizeof(id), r);
	return r && r->session == s ? r : NULL;
}

int regions_pending(const region_server *rs)
{
	return rs->pending + (rs->lending ? lend_pending(&rs->lend) : 0);
}

void regions_fini(region_server *rs)
{
	host_region *r, *tmp;
	HASH_ITER(hh, rs->by_id, r, tmp)
	{
		HASH_DELETE(hh, rs->by_id, r);
		if (r->session) {
			DL_DELETE(r->session->regions, r);
			r->session->nregions--;
			r->session->region_bytes -= r->size;
		}
		if (r->lent) {
			lend_free_now(&rs->lend, r->lent);
		} else {
			r->work.data = r;
			unmap_work(&r->work);
		}
		free(r);
	}
	rs->count = rs->bytes = 0;
	if (rs->lending) {
		claims_fini(&rs->claims, rs);
		lend_fini(&rs->lend);
	}
	rs->lending = 0;
}

/* --- the socket -------------------------------------------------------------------- */

static void conn_handle_closed(uv_handle_t *h)
{
	shm_conn *c = h->data;
	if (--c->handles_open == 0)
		free(c);
}

static void conn_close(shm_conn *c)
{
	if (c->fd >= 0) {
		uv_poll_stop(&c->poll);
		uv_timer_stop(&c->timer);
		close(c->fd);
		c->fd = -1;
		uv_close((uv_handle_t *)&c->poll, conn_handle_closed);
		uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
	}
}

/* The one reply, with lent memory's descriptor when lent is set; closes c. */
static void conn_send(shm_conn *c, shm_reply *rep, const lend_mem *lent)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {.iov_base = rep, .iov_len = sizeof(*rep)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	memset(&cbuf, 0, sizeof(cbuf));
	if (lent) {
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &lent->fd, sizeof(int));
	}
	/* One small datagram on a fresh socket; a client that left misses it. */
	if (c->fd >= 0 && sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("region socket: reply not delivered: %s", strerror(errno));
	conn_close(c);
}

static void conn_reply(shm_conn *c, dstatus status, uint64_t region, int pinned, const char *fmt,
		       ...) __attribute__((format(printf, 5, 6)));

static void conn_reply(shm_conn *c, dstatus status, uint64_t region, int pinned, const char *fmt,
		       ...)
{
	shm_reply rep;
	memset(&rep, 0, sizeof(rep));
	rep.status = status_wire(status);
	rep.region = region;
	rep.pinned = (uint32_t)pinned;
	rep.size = c->size;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(rep.message, sizeof(rep.message), fmt, ap);
		va_end(ap);
		log_conn(LOG_INFO, c->pipe_id, NULL, "region socket: refused: %s", rep.message);
	}
	conn_send(c, &rep, status == ST_OK ? c->lent : NULL);
}

static void on_conn_timeout(uv_timer_t *t)
{
	shm_conn *c = t->data;
	conn_reply(c, ST_PROTOCOL, 0, 0, "no registration within %d ms", CONN_TIMEOUT_MS);
}

static void pin_work(uv_work_t *w)
{
	shm_conn *c = w->data;
	gpud_backend *b = c->rs->backend;
	if (b->ops->host_register(b, c->base, c->size, c->pin_err, sizeof(c->pin_err)) == ST_OK)
		c->pinned = 1;
}

/* On the loop once the region is mapped (and pinned, if asked). */
static void register_finish(shm_conn *c)
{
	region_server *rs = c->rs;
	gpud_session *s = sessions_get(rs->buffers, c->pipe_id, 0);
	host_region *r = calloc(1, sizeof(*r));

	if (s == NULL || r == NULL || rs->fd < 0) {
		const char *why = s == NULL   ? "its connection closed meanwhile"
				  : r == NULL ? "gpud is out of memory"
					      : "gpud is shutting down";
		if (r == NULL)
			r = calloc(1, sizeof(*r));
		if (r) { /* unpin and unmap on a worker like any region (lent: given back) */
			*r = (host_region){.base = c->base,
					   .size = c->size,
					   .pinned = c->pinned,
					   .lent = c->lent,
					   .refs = 1,
					   .rs = rs};
			region_unref(r);
		}
		c->lent = NULL;
		conn_reply(c, s == NULL ? ST_NOT_FOUND : ST_OUT_OF_MEMORY, 0, 0,
			   "region not kept: %s", why);
		return;
	}
	if (c->pin && !c->pinned && c->pin_err[0])
		log_conn(LOG_WARN, c->pipe_id, s->tenant ? s->tenant->name : NULL,
			 "region of %zu bytes not pinned (%s); copies from it are staged", c->size,
			 c->pin_err);
	*r = (host_region){
		.base = c->base, .size = c->size, .pinned = c->pinned, .lent = c->lent, .refs = 1};
	regions_add(rs, s, r);
	log_conn(LOG_DEBUG, c->pipe_id, s->tenant ? s->tenant->name : NULL,
		 "host region %016" PRIx64 " of %zu bytes%s%s", r->id, r->size,
		 r->pinned ? ", pinned" : "", r->lent ? ", lent" : "");
	conn_reply(c, ST_OK, r->id, r->pinned, NULL);
}

static void pin_after(uv_work_t *w, int status)
{
	shm_conn *c = w->data;
	c->rs->pending--;
	if (!c->pinned) /* reserved for the pinning that failed */
		hostmem_release(c->rs->backend->host, HOSTMEM_PINNED, c->size);
	register_finish(c);
}

/* The lend pool's answer: the memory becomes the connection's region (or the refusal goes back). */
static void lent_ready(void *arg, lend_mem *lm, dstatus st, const char *err)
{
	shm_conn *c = arg;
	if (lm == NULL) {
		conn_reply(c, st, 0, 0, "%s", err);
		return;
	}
	c->lent = lm;
	c->base = lm->base;
	c->size = lm->size;
	c->pinned = lm->pinned;
	register_finish(c);
}

/* The lend pool's answer to a lend before hello: parked, and its id and
 * descriptor sent (daemon/claims.h). */
static void claim_lent(void *arg, lend_mem *lm, dstatus st, const char *err)
{
	shm_conn *c = arg;
	region_server *rs = c->rs;
	region_claim *cl = c->claim;
	host_region *r = NULL;
	char full[384];
	c->claim = NULL;
	if (lm == NULL) {
		free(cl);
		conn_reply(c, st, 0, 0, "%s", err);
		return;
	}
	/* Made to order on a worker, others may have parked meanwhile: the limits again. */
	if (claims_room(&rs->claims, cl->tenant, full, sizeof(full)) != 0) {
		lend_give_back(&rs->lend, lm);
		free(cl);
		conn_reply(c, ST_QUOTA, 0, 0, "%s", full);
		return;
	}
	if (rs->fd < 0 || (r = calloc(1, sizeof(*r))) == NULL) {
		lend_give_back(&rs->lend, lm);
		free(cl);
		conn_reply(c, rs->fd < 0 ? ST_SHUTTING_DOWN : ST_OUT_OF_MEMORY, 0, 0,
			   "memory not lent: %s",
			   rs->fd < 0 ? "gpud is shutting down" : "gpud is out of memory");
		return;
	}
	*r = (host_region){.base = lm->base,
			   .size = lm->size,
			   .pinned = lm->pinned,
			   .lent = lm,
			   .refs = 1,
			   .rs = rs};
	r->id = regions_new_id(rs);
	cl->region = r;
	claims_park(&rs->claims, cl);
	log_debug("host region %016" PRIx64 " of %zu bytes lent before hello to tenant %s "
		  "(pid %" PRId64 "), parked for its hello",
		  r->id, r->size, cl->tenant->name, cl->pid);
	c->lent = lm;
	c->size = lm->size;
	conn_reply(c, ST_OK, r->id, r->pinned, NULL);
}

/*
 * A lend before hello (GPUD_SHM_LEND | GPUD_SHM_CLAIM): to the tenant of
 * the peer's uid, parked for a hello of the peer's process that presents
 * the nonce in m->key (daemon/claims.h). The reply is sent, now or once the
 * memory is made.
 */
static void conn_claim_lend(shm_conn *c, const shm_register *m)
{
	region_server *rs = c->rs;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char err[384];
	static const uint8_t zero[GPUD_SHM_KEY_LEN];

	if (!rs->lending) {
		conn_reply(c, ST_UNSUPPORTED, 0, 0, "this gpud lends no host memory");
		return;
	}
	if (m->flags & ~(uint32_t)(GPUD_SHM_LEND | GPUD_SHM_CLAIM | GPUD_SHM_PIN)) {
		conn_reply(c, ST_INVALID, 0, 0,
			   "a lend before hello takes flags GPUD_SHM_LEND | GPUD_SHM_CLAIM "
			   "(and GPUD_SHM_PIN), got 0x%x",
			   m->flags);
		return;
	}
	if (memcmp(m->key, zero, sizeof(zero)) == 0) {
		conn_reply(c, ST_INVALID, 0, 0,
			   "a lend before hello needs a nonce in key (16 random bytes), got zeros");
		return;
	}
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
		conn_reply(c, ST_INTERNAL, 0, 0, "SO_PEERCRED: %s", strerror(errno));
		return;
	}
	gpud_tenant *t = tenants_by_local_uid(rs->buffers, (int64_t)cred.uid);
	if (t == NULL || cred.pid <= 0) {
		conn_reply(c, ST_NOT_FOUND, 0, 0,
			   "no tenant for uid %u yet: memory is lent before hello only to a user "
			   "that said hello over ipc:// since gpud started (say hello first)",
			   (unsigned)cred.uid);
		return;
	}
	if (m->size == 0 || m->size > SIZE_MAX / 2 || m->size > rs->max_bytes) {
		conn_reply(c, m->size == 0 ? ST_INVALID : ST_TOO_LARGE, 0, 0,
			   "a lend of %" PRIu64 " bytes: expected 1 to %" PRIu64
			   " bytes (shm_max_bytes)",
			   m->size, rs->max_bytes);
		return;
	}
	if (claims_room(&rs->claims, t, err, sizeof(err)) != 0) {
		conn_reply(c, ST_QUOTA, 0, 0, "%s", err);
		return;
	}
	region_claim *cl = calloc(1, sizeof(*cl));
	if (cl == NULL) {
		conn_reply(c, ST_OUT_OF_MEMORY, 0, 0, "gpud is out of memory");
		return;
	}
	memcpy(cl->nonce, m->key, sizeof(cl->nonce));
	cl->uid = (int64_t)cred.uid;
	cl->pid = (int64_t)cred.pid;
	cl->tenant = t;
	c->claim = cl;
	lend_take(&rs->lend, t, (size_t)m->size, claim_lent, c);
}

static int key_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	for (int i = 0; i < SESSION_KEY_LEN; i++)
		d |= (uint8_t)(a[i] ^ b[i]);
	return d == 0;
}

static gpud_session *session_by_key(region_server *rs, const uint8_t *key)
{
	gpud_session *s, *tmp;
	HASH_ITER(hh, rs->buffers->sessions, s, tmp)
	{
		if (key_equal(s->key, key))
			return s;
	}
	return NULL;
}

/* 1 if fd is an eventfd (a ring's doorbell must be one: gpud reads it, nothing else). */
static int is_eventfd(int fd)
{
	char path[64], link[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = '\0';
	return strcmp(link, "anon_inode:[eventfd]") == 0;
}

/* 1 if magic is GPUD_SHM_MAGIC, else 0 with the refusal sent. */
static int magic_ok(shm_conn *c, const char *magic)
{
	char got[2 * 8 + 1], want[2 * 8 + 1];
	if (memcmp(magic, GPUD_SHM_MAGIC, 8) == 0)
		return 1;
	for (size_t i = 0; i < 8; i++) {
		snprintf(got + 2 * i, 3, "%02x", (unsigned char)magic[i]);
		snprintf(want + 2 * i, 3, "%02x", (unsigned char)GPUD_SHM_MAGIC[i]);
	}
	conn_reply(c, ST_PROTOCOL, 0, 0,
		   "bad magic 0x%s, expected 0x%s (\"%s\"): not a gpud registration message", got,
		   want, GPUD_SHM_MAGIC);
	return 0;
}

/* The session whose key this is, of the peer's user; else NULL with the refusal sent. */
static gpud_session *peer_session(shm_conn *c, const uint8_t *key)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
		conn_reply(c, ST_INTERNAL, 0, 0, "SO_PEERCRED: %s", strerror(errno));
		return NULL;
	}
	/* An unknown key and another user's key get the same answer. */
	gpud_session *s = session_by_key(c->rs, key);
	if (s == NULL || !s->local || (uint64_t)s->peer_uid != (uint64_t)cred.uid) {
		conn_reply(c, ST_NOT_FOUND, 0, 0,
			   "unknown session key (from hello on an ipc:// connection of this user)");
		return NULL;
	}
	return s;
}

/* A file copy's answer (daemon/region_io.h), on the loop: the reply, then c closes. */
static void file_io_done(void *arg, dstatus st, uint64_t moved, const char *why)
{
	shm_conn *c = arg;
	c->size = (size_t)moved;
	if (why)
		conn_reply(c, st, 0, 0, "%s", why);
	else
		conn_reply(c, st, 0, 0, NULL);
}

/* A GPUD_SHM_READ or GPUD_SHM_WRITE message with its nfds descriptors (taken);
 * more: more than came through. */
static void conn_file_io(shm_conn *c, const shm_file_io *m, const int *fds, int nfds, int more)
{
	if (nfds != 1 || more) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		conn_reply(c, more ? ST_PROTOCOL : ST_INVALID, 0, 0,
			   "a file copy takes exactly one file descriptor (the file), got %s%d",
			   more ? "more than " : "", nfds);
		return;
	}
	gpud_session *s;
	if (!magic_ok(c, m->magic)) {
		close(fds[0]);
		return;
	}
	if (m->flags & GPUD_SHM_CLAIM) { /* into memory lent before hello: key is the nonce */
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		region_claim *cl = NULL;
		if (c->rs->lending && getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
			cl = claims_find(&c->rs->claims, (int64_t)cred.uid, (int64_t)cred.pid,
					 m->key, m->region);
		if (cl == NULL) {
			close(fds[0]);
			conn_reply(c, ST_NOT_FOUND, 0, 0,
				   "a file copy: no host region %016" PRIx64
				   " lent before hello to this process under this nonce (or "
				   "claimed already: use the session key)",
				   m->region);
			return;
		}
		region_io_start(c->rs, cl->tenant, cl->region, m, fds[0], file_io_done, c);
		return;
	}
	if ((s = peer_session(c, m->key)) == NULL) {
		close(fds[0]);
		return;
	}
	c->pipe_id = s->pipe_id;
	region_io_start(c->rs, s->tenant, s->tenant ? regions_get(c->rs, s, m->region) : NULL, m,
			fds[0], file_io_done, c);
}

/* Checks the message and the memfd; maps it. 0, or a status with the reply sent. */
static void on_conn_readable(uv_poll_t *h, int status, int events)
{
	shm_conn *c = h->data;
	region_server *rs = c->rs;
	shm_register msg;
	union {
		shm_register reg;
		shm_file_io io;
	} in;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} cbuf;
	struct iovec iov = {.iov_base = &in, .iov_len = sizeof(in)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf.buf,
			    .msg_controllen = sizeof(cbuf.buf)};
	int fds[4], nfds = 0, fd = -1;

	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	uv_poll_stop(&c->poll);
	uv_timer_stop(&c->timer); /* pinning or making memory may take longer */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && nfds < 4; i++)
			memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	if (n == (ssize_t)sizeof(in.io) && !(mh.msg_flags & MSG_TRUNC)) {
		conn_file_io(c, &in.io, fds, nfds, (mh.msg_flags & MSG_CTRUNC) != 0);
		return;
	}
	memcpy(&msg, &in, sizeof(msg));
	/* Whatever arrives is closed below unless it becomes the mapping's fd
	 * (or the ring's doorbell). */
	int ring = n == (ssize_t)sizeof(msg) && (msg.flags & GPUD_SHM_RING) != 0, efd = -1;
	int lend = n == (ssize_t)sizeof(msg) && (msg.flags & GPUD_SHM_LEND) != 0 && !ring;
	if (lend && nfds > 0) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		conn_reply(c, ST_INVALID, 0, 0,
			   "a lend (GPUD_SHM_LEND) takes no file descriptor, got %d", nfds);
		return;
	}
	if (nfds == 1 + ring) {
		fd = fds[0];
		efd = ring ? fds[1] : -1;
	} else {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
	}

	struct statfs sfs;
	struct stat st;
	gpud_session *s;
	int seals;

	if (n != (ssize_t)sizeof(msg) || (mh.msg_flags & MSG_TRUNC)) {
		conn_reply(c, ST_PROTOCOL, 0, 0,
			   "expected one %zu-byte registration message (or a %zu-byte file copy), "
			   "got %s%zd bytes",
			   sizeof(msg), sizeof(in.io),
			   (mh.msg_flags & MSG_TRUNC) ? "more than " : "",
			   (mh.msg_flags & MSG_TRUNC) ? (ssize_t)sizeof(in) : n);
		goto out;
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		conn_reply(c, ST_PROTOCOL, 0, 0,
			   "a registration message carries at most 2 file descriptors, got more");
		goto out;
	}
	if (!magic_ok(c, msg.magic))
		goto out;
	if (msg.flags & GPUD_SHM_CLAIM) {
		if (lend)
			conn_claim_lend(c, &msg);
		else
			conn_reply(c, ST_INVALID, 0, 0,
				   "GPUD_SHM_CLAIM goes with GPUD_SHM_LEND (flags 0x%x)",
				   msg.flags);
		goto out;
	}
	if (fd < 0 && !lend) {
		conn_reply(c, ST_INVALID, 0, 0,
			   ring ? "expected two file descriptors (a memfd, then an eventfd), got %d"
				: "expected exactly one file descriptor (a memfd), got %d",
			   nfds);
		goto out;
	}
	if (ring && !is_eventfd(efd)) {
		conn_reply(c, ST_INVALID, 0, 0,
			   "a request ring's second file descriptor must be an eventfd");
		goto out;
	}
	if ((s = peer_session(c, msg.key)) == NULL)
		goto out;
	if (lend) {
		if (!rs->lending || s->tenant == NULL) {
			conn_reply(c, ST_UNSUPPORTED, 0, 0, "this gpud lends no host memory");
			goto out;
		}
		if (msg.size == 0 || msg.size > SIZE_MAX / 2 ||
		    s->region_bytes + msg.size > rs->max_bytes) {
			conn_reply(c, msg.size == 0 ? ST_INVALID : ST_TOO_LARGE, 0, 0,
				   "a lend of %" PRIu64 " bytes: expected 1 to %" PRIu64
				   " bytes (connection %u holds %" PRIu64
				   " bytes of host regions; shm_max_bytes %" PRIu64 ")",
				   msg.size,
				   rs->max_bytes > s->region_bytes ? rs->max_bytes - s->region_bytes
								   : 0,
				   s->pipe_id, s->region_bytes, rs->max_bytes);
			goto out;
		}
		c->pipe_id = s->pipe_id;
		lend_take(&rs->lend, s->tenant, (size_t)msg.size, lent_ready, c);
		goto out;
	}
	if (fstatfs(fd, &sfs) != 0 || sfs.f_type != TMPFS_MAGIC) {
		conn_reply(c, ST_INVALID, 0, 0,
			   "the file descriptor must be a memfd on tmpfs (not hugetlbfs or a "
			   "regular file)");
		goto out;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		conn_reply(c, ST_INVALID, 0, 0,
			   "the memfd must be sealed with F_SEAL_SHRINK (seals: %d)", seals);
		goto out;
	}
	if (fstat(fd, &st) != 0 || msg.size == 0 || (uint64_t)st.st_size != msg.size) {
		conn_reply(c, ST_INVALID, 0, 0,
			   "declared size %" PRIu64 " bytes does not match the memfd's %lld bytes",
			   msg.size, (long long)st.st_size);
		goto out;
	}
	if (ring && rs->on_ring == NULL) {
		conn_reply(c, ST_UNSUPPORTED, 0, 0,
			   "request rings are off in this gpud (ring = false in gpud.conf)");
		goto out;
	}
	if (!ring && (s->region_bytes + msg.size > rs->max_bytes || msg.size > SIZE_MAX)) {
		conn_reply(c, ST_TOO_LARGE, 0, 0,
			   "a %" PRIu64 "-byte region would bring connection %u to %" PRIu64
			   " bytes of host regions; the limit is %" PRIu64 " (shm_max_bytes)",
			   msg.size, s->pipe_id, s->region_bytes + msg.size, rs->max_bytes);
		goto out;
	}
	c->size = (size_t)msg.size;
	c->base = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c->base == MAP_FAILED) {
		c->base = NULL;
		conn_reply(c, ST_INVALID, 0, 0, "cannot map the memfd read-write: %s",
			   strerror(errno));
		goto out;
	}
	c->pipe_id = s->pipe_id;
	if (ring) {
		char err[256];
		if (rs->on_ring(rs->ring_arg, s, c->base, c->size, efd, err, sizeof(err)) != 0) {
			munmap(c->base, c->size);
			conn_reply(c, ST_INVALID, 0, 0, "request ring refused: %s", err);
			goto out;
		}
		efd = -1; /* the ring's now */
		log_conn(LOG_DEBUG, s->pipe_id, s->tenant ? s->tenant->name : NULL,
			 "request ring of %zu bytes", c->size);
		conn_reply(c, ST_OK, 0, 0, NULL);
		goto out;
	}
	c->pin = (msg.flags & GPUD_SHM_PIN) != 0;
	if (c->pin && rs->backend->ops->host_register &&
	    hostmem_reserve(rs->backend->host, HOSTMEM_PINNED, c->size, c->pin_err,
			    sizeof(c->pin_err)) == 0) {
		rs->pending++;
		c->work.data = c;
		uv_queue_work(rs->loop, &c->work, pin_work, pin_after);
	} else {
		register_finish(c);
	}
out:
	if (fd >= 0)
		close(fd); /* the mapping keeps the memory */
	if (efd >= 0)
		close(efd);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	region_server *rs = h->data;
	for (;;) {
		int fd = accept4(rs->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("region socket: accept: %s", strerror(errno));
			return;
		}
		shm_conn *c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->rs = rs;
		c->fd = fd;
		c->handles_open = 2;
		uv_poll_init(rs->loop, &c->poll, fd);
		uv_timer_init(rs->loop, &c->timer);
		c->poll.data = c->timer.data = c;
		uv_poll_start(&c->poll, UV_READABLE, on_conn_readable);
		uv_timer_start(&c->timer, on_conn_timeout, CONN_TIMEOUT_MS, 0);
	}
}

int regions_start(region_server *rs, uv_loop_t *loop, gpud_backend *backend, buffer_table *bt,
		  const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;

	memset(rs, 0, sizeof(*rs));
	rs->loop = loop;
	rs->backend = backend;
	rs->buffers = bt;
	rs->fd = -1;
	rs->max_bytes = max_bytes;
	if (path == NULL || path[0] == '\0')
		return 0;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "region socket path '%s' is longer than %zu bytes", path,
			 sizeof(sa.sun_path) - 1);
		return -1;
	}
	snprintf(rs->path, sizeof(rs->path), "%s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A socket left by a gpud that died; never remove anything else. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	rs->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (rs->fd < 0 || bind(rs->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(rs->fd, 128) != 0) {
		snprintf(err, errlen, "region socket %s: %s", path, strerror(errno));
		if (rs->fd >= 0)
			close(rs->fd);
		rs->fd = -1;
		rs->path[0] = '\0';
		return -1;
	}
	uv_poll_init(loop, &rs->poll, rs->fd);
	rs->poll.data = rs;
	uv_poll_start(&rs->poll, UV_READABLE, on_accept);
	rs->polling = 1;
	log_info("host regions: %s", path);
	return 0;
}

void regions_lend_start(region_server *rs, size_t unit, size_t spare, size_t keep, unsigned keep_s,
			unsigned claim_s)
{
	if (rs->fd < 0)
		return;
	lend_start(&rs->lend, rs->loop, rs->backend, unit, spare, keep, keep_s);
	claims_init(&rs->claims, rs->loop, claim_s * 1000u);
	rs->lending = 1;
	log_info("host memory lent to clients: %zu bytes spare in %zu-byte pieces, up to %zu "
		 "bytes kept per tenant for %u s",
		 spare, unit, keep, keep_s);
}

void regions_stop(region_server *rs)
{
	if (rs->lending) {
		lend_stop(&rs->lend);
		claims_stop(&rs->claims);
	}
	if (rs->fd < 0)
		return;
	uv_poll_stop(&rs->poll);
	uv_close((uv_handle_t *)&rs->poll, NULL);
	close(rs->fd);
	rs->fd = -1;
	unlink(rs->path);
}
