/*
 * daemon/server.c — the nng REP socket, its contexts, the event queue into
 * the loop, connections' sessions (their peers, as their endpoints tell
 * them: daemon/endpoint/), the checks every request passes before its
 * verb, and orderly shutdown. Start-up is daemon/server_start.c's.
 *
 * Each context runs: recv (nng thread) -> posted to the loop -> decoded,
 * checked and dispatched on the loop -> reply sent (nng thread) -> recv
 * again. A context's state changes under its mutex, so shutdown can tell an
 * idle context (cancel its recv) from a busy one (let it finish, then stop).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "daemon/drain.h"
#include "daemon/endpoint/endpoint.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/metrics_text.h"
#include "daemon/notify.h"
#include "daemon/server.h"
#include "daemon/server_internal.h"
#include "daemon/verbs/verbs.h"
#include "proto/wire.h"

enum ctx_state { CTX_RECV, CTX_BUSY, CTX_SEND, CTX_STOPPED };

/* Room for a request's protobuf header beyond max_message_size of payload. */
#define REQUEST_HEADER_ROOM (64u << 10)
enum event_type { EV_REQUEST, EV_CTX_STOPPED, EV_PIPE_ADD, EV_PIPE_REM };

typedef struct server_event {
	enum event_type type;
	server_ctx *ctx;
	uint32_t pipe_id; /* pipe add and removal; the peer waits in gpud_server.peers */
	int heap;         /* malloc'd (pipe events) rather than embedded in a context */
	struct server_event *next;
} server_event;

struct server_ctx {
	gpud_server *srv;
	nng_ctx ctx;
	nng_aio *aio;
	pthread_mutex_t mtx;
	enum ctx_state state;
	int stopping;
	server_event ev;
	nng_msg *msg;     /* received, not yet taken by the loop */
	verb_request req; /* the request, with room for its verb's state */
	/* server_inject: a request that came from a test, not from nng */
	int counted; /* its reply is counted in gpud_server.sending */
	int injected;
	uint32_t inject_pipe;
	int64_t inject_uid;
	void (*inject_cb)(void *arg, nng_msg *reply);
	void *inject_arg;
};

/* --- event queue (any thread -> loop) ------------------------------------ */

static void post_event(gpud_server *s, server_event *ev)
{
	ev->next = NULL;
	pthread_mutex_lock(&s->qlock);
	if (s->qtail)
		s->qtail->next = ev;
	else
		s->qhead = ev;
	s->qtail = ev;
	pthread_mutex_unlock(&s->qlock);
	uv_async_send(&s->wake);
}

static void handle_request(server_ctx *c);
static gpud_session *session_open(gpud_server *s, uint32_t pipe_id, const endpoint_peer *peer);
static gpud_session *connection_open(gpud_server *s, uint32_t pipe_id);
static void overtaken(gpud_server *s, server_ctx *c);
static void teardown(gpud_server *s);

/*
 * Shutdown (SIGTERM, SIGINT, a lost GPU), in stages checked by a 10 ms
 * timer; what each verb gets meanwhile is daemon/drain.c's rule:
 *  1. the grace: connected clients take their jobs' next steps; hello gets
 *     SHUTTING_DOWN (new connections are still accepted, so that a new
 *     client is told why rather than left waiting).
 *  2. after the grace, new work gets SHUTTING_DOWN while the requests in
 *     flight complete and reply; once none is left,
 *  3. the contexts stop receiving (busy ones after their reply) and new
 *     connections are refused. A request that arrives now is never taken:
 *     its client finds the connection closed in stage 4, and knows it was
 *     not done from the draining mark every reply since the signal carries
 *     (wire_mark_draining; the library reports GPUD_ESHUTDOWN then).
 *  4. linger: nng completes a send when the pipe has taken the reply, not
 *     when it has reached the client, so the socket closes only when the
 *     clients have gone or LINGER_NS after the last reply was handed over,
 *     and a reply going out through a request ring in chunks has been
 *     fetched (or its client stalled for LINGER_NS).
 * Clients that keep calling do not hold it up: their new requests are
 * refused at once (SHUTTING_DOWN) and stop nothing from reaching stage 3.
 */
#define LINGER_NS 1000000000ull

static void stop_contexts(gpud_server *s)
{
	for (int i = 0; i < s->nctx; i++) {
		server_ctx *c = &s->ctxs[i];
		pthread_mutex_lock(&c->mtx);
		c->stopping = 1;
		enum ctx_state st = c->state;
		pthread_mutex_unlock(&c->mtx);
		/* Idle contexts stop now; busy ones stop after their reply. A recv
		 * that completed meanwhile makes this a no-op and is served. */
		if (st == CTX_RECV)
			nng_aio_cancel(c->aio);
	}
}

static void on_stop_tick(uv_timer_t *t)
{
	gpud_server *s = t->data;
	uint64_t now = now_ns(), last_reply = atomic_load(&s->last_reply_ns);
	uint64_t last = last_reply > s->last_request_ns ? last_reply : s->last_request_ns;

	if (!s->drain.grace_over) {
		if (!drain_grace_check(&s->drain, now, sessions_count(&s->buffers),
				       s->stats.in_flight, last))
			return;
		log_info("shutdown: %s after %.2f s: new work gets SHUTTING_DOWN; %u requests in "
			 "flight finish",
			 s->drain.ended, (double)(now - s->drain.started_ns) / 1e9,
			 s->stats.in_flight);
	}
	if (!s->contexts_stopping) {
		if (s->stats.in_flight > 0)
			return;
		s->contexts_stopping = 1;
		atomic_store(&s->refusing, 1);
		stop_contexts(s);
		return;
	}
	/* Requests through the rings still come in (and are refused): wait for
	 * any in flight, as for the contexts. */
	if (s->stopped_ctxs < s->nctx || regions_pending(&s->regions) > 0 || s->stats.in_flight > 0)
		return;
	if (s->rings.replying > 0 && now - s->rings.last_chunk_ns < LINGER_NS)
		return;
	if (sessions_count(&s->buffers) > 0 && now - last_reply < LINGER_NS)
		return;
	uv_timer_stop(t);
	log_info("shutdown: closing the connections (%llu requests got SHUTTING_DOWN)",
		 (unsigned long long)s->drain.refused);
	teardown(s);
}

static void on_wake(uv_async_t *h)
{
	gpud_server *s = h->data;
	server_event *ev;

	pthread_mutex_lock(&s->qlock);
	ev = s->qhead;
	s->qhead = s->qtail = NULL;
	pthread_mutex_unlock(&s->qlock);

	while (ev) {
		/* Read the links first: a handler may send the context's reply,
		 * after which the embedded event can be posted again. */
		server_event *next = ev->next;
		int heap = ev->heap;
		switch (ev->type) {
		case EV_REQUEST:
			overtaken(s, ev->ctx);
			handle_request(ev->ctx);
			break;
		case EV_CTX_STOPPED:
			s->stopped_ctxs++;
			break;
		case EV_PIPE_ADD: {
			/* Sessions are the connections: a removal nng reports for a pipe
			 * that never got here finds none and counts nothing. */
			gpud_session *sess = connection_open(s, ev->pipe_id);
			s->metrics.connections_total++;
			log_conn(LOG_DEBUG, ev->pipe_id, NULL, "connection opened (%s)",
				 sess ? sess->peer : "");
			break;
		}
		case EV_PIPE_REM: {
			peers_drop(&s->peers, ev->pipe_id); /* one no session took */
			gpud_session *gone = sessions_get(&s->buffers, ev->pipe_id, 0);
			const gpud_tenant *tn = gone ? gone->tenant : NULL; /* tenants stay */
			sessions_close(&s->buffers, ev->pipe_id);
			log_conn(LOG_DEBUG, ev->pipe_id, tn ? tn->name : NULL, "connection closed");
			break;
		}
		}
		if (heap)
			free(ev);
		ev = next;
	}
}

static void on_pipe_event(nng_pipe p, nng_pipe_ev what, void *arg)
{
	gpud_server *s = arg;

	if (what == NNG_PIPE_EV_ADD_PRE) {
		/* Stopping: refuse new connections (closing the listeners would
		 * also close the connections whose replies are still to be sent). */
		if (atomic_load(&s->refusing)) {
			nng_pipe_close(p);
			return;
		}
		/* The peer, its user looked up here, before nng starts the pipe
		 * and its first request can reach the loop (daemon/peers.h). */
		endpoint_peer peer;
		endpoint_pipe_peer(p, &peer);
		peers_put(&s->peers, (uint32_t)nng_pipe_id(p), &peer);
		return;
	}
	server_event *ev = calloc(1, sizeof(*ev));

	if (ev == NULL)
		return; /* the session then lingers until shutdown; nothing unsafe */
	ev->type = what == NNG_PIPE_EV_ADD_POST ? EV_PIPE_ADD : EV_PIPE_REM;
	ev->pipe_id = (uint32_t)nng_pipe_id(p);
	ev->heap = 1;
	post_event(s, ev);
}

/* --- contexts (nng threads) ----------------------------------------------- */

static void ctx_post(server_ctx *c, enum event_type t)
{
	c->ev.type = t;
	c->ev.ctx = c;
	c->ev.heap = 0;
	post_event(c->srv, &c->ev);
}

static void ctx_cb(void *arg)
{
	server_ctx *c = arg;
	int rv = nng_aio_result(c->aio);

	pthread_mutex_lock(&c->mtx);
	switch (c->state) {
	case CTX_RECV:
		if (rv == 0) {
			c->msg = nng_aio_get_msg(c->aio);
			c->state = CTX_BUSY;
			ctx_post(c, EV_REQUEST);
		} else if (rv == NNG_ECLOSED || rv == NNG_ECANCELED || c->stopping) {
			c->state = CTX_STOPPED;
			ctx_post(c, EV_CTX_STOPPED);
		} else {
			/* A transient failure of one receive; keep serving. */
			nng_ctx_recv(c->ctx, c->aio);
		}
		break;
	case CTX_SEND:
		atomic_store(&c->srv->last_reply_ns, now_ns());
		if (c->counted) {
			atomic_fetch_sub(&c->srv->sending, 1);
			c->counted = 0;
		}
		if (rv != 0) {
			/* The client went away before its reply; drop it. */
			nng_msg_free(nng_aio_get_msg(c->aio));
			nng_aio_set_msg(c->aio, NULL);
		}
		if (c->stopping) {
			c->state = CTX_STOPPED;
			ctx_post(c, EV_CTX_STOPPED);
		} else {
			c->state = CTX_RECV;
			nng_ctx_recv(c->ctx, c->aio);
		}
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&c->mtx);
}

/* --- requests (loop thread) ----------------------------------------------- */

/* The request layer's send: the reply leaves on the context's nng aio, or
 * goes to the test that injected the request. */
static void ctx_send(gpud_request *r, nng_msg *m)
{
	server_ctx *c = r->sender;

	/* Unmarked (no memory), a cut call's client reports a transport error. */
	if (m && c->srv->drain.on)
		wire_mark_draining(m);
	if (m)
		memtrim_note(&c->srv->trim, nng_msg_len(m));
	if (c->injected) {
		gpud_server *s = c->srv;
		c->inject_cb(c->inject_arg, m);
		if (s->inject_spare == NULL) { /* the next injected request's */
			s->inject_spare = c;
			return;
		}
		pthread_mutex_destroy(&c->mtx);
		free(c);
		return;
	}
	pthread_mutex_lock(&c->mtx);
	c->state = CTX_SEND;
	nng_aio_set_msg(c->aio, m);
	if (m) {
		c->counted = 1;
		atomic_fetch_add(&c->srv->sending, 1);
		nng_ctx_send(c->ctx, c->aio);
	}
	pthread_mutex_unlock(&c->mtx);
	if (m == NULL)
		ctx_cb(c); /* no reply could be built: re-arm or stop, as after a send */
}

/* True while nng still knows the pipe: a request from a connection that has
 * already gone must not create a session nobody will close. */
static int pipe_alive(nng_pipe p)
{
	return nng_socket_id(nng_pipe_socket(p)) > 0;
}

static void handle_request(server_ctx *c)
{
	gpud_request *r = &c->req.common;
	gpud_server *s = c->srv;
	const uint8_t *hdr;
	size_t hlen;
	char err[256];

	nng_pipe p = nng_msg_get_pipe(c->msg);
	request_begin(r, &s->core, ctx_send, c, c->msg,
		      c->injected ? c->inject_pipe : (uint32_t)nng_pipe_id(p));
	c->msg = NULL;
	memtrim_note(&s->trim, nng_msg_len(r->msg));
	s->stats.requests++;
	s->stats.in_flight++;
	s->last_request_ns = r->t0_ns;

	if (wire_split(r->msg, &hdr, &hlen, &r->payload, &r->payload_len, err, sizeof(err)) != 0) {
		request_fail(r, ST_PROTOCOL, "malformed message: %s", err);
		return;
	}
	r->req = gpud__request__unpack(NULL, hlen, hdr);
	if (r->req == NULL) {
		request_fail(r, ST_PROTOCOL,
			     "malformed message: the %zu-byte header is not a gpud Request", hlen);
		return;
	}
	if (r->payload_len > s->cfg->max_message_size) {
		request_fail(r, ST_TOO_LARGE,
			     "request payload of %zu bytes exceeds max_message_size (%llu bytes)",
			     r->payload_len, (unsigned long long)s->cfg->max_message_size);
		return;
	}
	if (r->req->version != GPUD_PROTOCOL_VERSION) {
		request_fail(r, ST_PROTOCOL,
			     "protocol version %u is not supported; this gpud speaks version %u",
			     r->req->version, GPUD_PROTOCOL_VERSION);
		return;
	}
	/* What this verb may do before hello, when the GPU is lost, against the
	 * quotas: its flags in the verb table (daemon/verbs/table.h). */
	unsigned rules = verb_request_flags(r->req);
	gpud_session *prev = sessions_get(&s->buffers, r->pipe_id, 0);
	if (s->fatal && !(rules & VERB_ON_LOST_DEVICE)) {
		request_fail(r, ST_BACKEND,
			     "the GPU context is lost (%s); gpud is exiting for its supervisor to "
			     "restart it",
			     s->fatal);
		return;
	}
	r->session = prev;
	if (r->session == NULL && (c->injected || pipe_alive(p))) {
		/* The request overtook its pipe's add event (on_wake and server_inject
		 * made its session already, unless memory ran out): made as that
		 * event would make it, local or not as its endpoint says. */
		endpoint_peer peer = {.local = c->inject_uid >= 0, .uid = c->inject_uid, .pid = -1};
		if (c->injected)
			snprintf(peer.addr, sizeof(peer.addr), "injected");
		else
			endpoint_pipe_peer(p, &peer);
		r->session = session_open(s, r->pipe_id, &peer);
	}
	if (r->session == NULL) {
		/* The connection is gone (or memory is): nobody will read a reply. */
		request_fail(r, ST_INTERNAL, "connection closed");
		return;
	}
	const char *refused = drain_refusal(&s->drain, rules);
	if (refused) { /* before NO_SESSION: a client told to say hello would be refused then */
		s->drain.refused++;
		request_fail(r, ST_SHUTTING_DOWN, "%s", refused);
		return;
	}
	/* A hello carried by the connection's first request is said first (a
	 * hello or a status has its own). */
	if (r->req->carried_hello && r->session->tenant == NULL && !(rules & VERB_BEFORE_HELLO) &&
	    verbs_carried_hello(r) != 0)
		return;
	if (r->session->tenant == NULL && !(rules & VERB_BEFORE_HELLO)) {
		request_fail(r, ST_NO_SESSION,
			     "send hello first: only hello and status are served before it on a "
			     "connection (the client library says hello on connect, and again "
			     "when gpud restarted or the connection was re-made)");
		return;
	}
	gpud_tenant *tn = r->session->tenant;
	if (tn && tn->quota.message_size && r->payload_len > tn->quota.message_size) {
		tn->metrics.quota_refused[QUOTA_MESSAGE_SIZE]++;
		request_fail(r, ST_QUOTA,
			     "over the message_size quota of tenant %s: a %zu-byte payload, the "
			     "limit is %llu",
			     tn->name, r->payload_len, (unsigned long long)tn->quota.message_size);
		return;
	}
	/* A verb not counted (VERB_NOT_COUNTED) is always served: a tenant at
	 * its limit can still see why. */
	int counted = !(rules & VERB_NOT_COUNTED);
	if (tn && counted && tn->quota.requests_in_flight &&
	    tn->in_flight >= tn->quota.requests_in_flight) {
		tn->metrics.quota_refused[QUOTA_REQUESTS_IN_FLIGHT]++;
		request_fail(r, ST_QUOTA,
			     "over the requests_in_flight quota of tenant %s: %u in flight, the "
			     "limit is %llu",
			     tn->name, tn->in_flight,
			     (unsigned long long)tn->quota.requests_in_flight);
		return;
	}
	r->session->requests++;
	r->session->in_flight++;
	request_track(r);
	if (tn && counted) {
		r->tenant = tn;
		tn->in_flight++;
	}
	if (request_hold_host_or_fail(r, "request payload", r->payload_len) != 0)
		return;
	verbs_dispatch(r);
}

/* --- requests from tests (the fuzzer) ---------------------------------------- */

int server_inject(gpud_server *s, uint32_t pipe_id, int64_t peer_uid, nng_msg *m,
		  void (*cb)(void *arg, nng_msg *reply), void *arg)
{
	/* The last one's context if it is free (one request ring's requests
	 * follow one another): no 7 KiB calloc and free per request. */
	server_ctx *c = s->inject_spare;
	if (c != NULL) {
		s->inject_spare = NULL;
		pthread_mutex_destroy(&c->mtx);
		memset(c, 0, sizeof(*c));
	} else if ((c = calloc(1, sizeof(*c))) == NULL) {
		nng_msg_free(m);
		return -1;
	}
	c->srv = s;
	pthread_mutex_init(&c->mtx, NULL);
	c->state = CTX_BUSY;
	c->injected = 1;
	c->inject_pipe = pipe_id;
	c->inject_uid = peer_uid;
	c->inject_cb = cb;
	c->inject_arg = arg;
	c->msg = m;
	if (sessions_get(&s->buffers, pipe_id, 0) == NULL) {
		/* a pseudo connection, local (as over ipc://) when it has a peer uid */
		endpoint_peer peer = {.local = peer_uid >= 0, .uid = peer_uid, .pid = -1};
		snprintf(peer.addr, sizeof(peer.addr), "injected");
		endpoint_peer_user(&peer);
		session_open(s, pipe_id, &peer);
	}
	handle_request(c);
	return 0;
}

void server_inject_close(gpud_server *s, uint32_t pipe_id)
{
	sessions_close(&s->buffers, pipe_id);
}

/* --- connections' sessions (loop thread) --------------------------------------- */

/*
 * The session of connection pipe_id, made at its connection: its peer as its
 * endpoint told it (daemon/endpoint/endpoint.h), local or not. A session
 * already made keeps the peer it has.
 */
static gpud_session *session_open(gpud_server *s, uint32_t pipe_id, const endpoint_peer *peer)
{
	gpud_session *sess = sessions_get(&s->buffers, pipe_id, 1);
	if (sess && sess->peer[0] == '\0') {
		sess->local = peer->local;
		sess->peer_uid = peer->uid;
		sess->peer_pid = peer->local ? peer->pid : -1;
		snprintf(sess->peer_user, sizeof(sess->peer_user), "%s", peer->user);
		snprintf(sess->peer, sizeof(sess->peer), "%s", peer->addr);
	}
	return sess;
}

/*
 * A connection's session, opened by its add event or by its first request,
 * whichever the loop sees first, with the peer nng's thread found at
 * ADD_PRE (daemon/peers.h). gpud's own health probe is known by its pid from
 * the start where its endpoint tells the pid (ipc://), else by its hello's
 * probe key. Where no peer was kept (out of memory at ADD_PRE), the loop
 * finds it itself.
 */
static gpud_session *connection_open(gpud_server *s, uint32_t pipe_id)
{
	endpoint_peer peer;
	gpud_session *sess;
	if (!peers_take(&s->peers, pipe_id, &peer)) {
		if ((sess = sessions_get(&s->buffers, pipe_id, 0)) != NULL)
			return sess; /* opened already: the peer was taken then */
		nng_pipe p = NNG_PIPE_INITIALIZER;
		p.id = pipe_id;
		endpoint_pipe_peer(p, &peer);
	}
	sess = session_open(s, pipe_id, &peer);
	if (sess && peer.pid == (int64_t)getpid())
		sessions_mark_probe(&s->buffers, sess);
	return sess;
}

/* A request that overtook its connection's add event: the session is made
 * now, as that event would make it, so its first request already knows
 * whether the connection is local. A connection already gone gets none. */
static void overtaken(gpud_server *s, server_ctx *c)
{
	nng_pipe p = nng_msg_get_pipe(c->msg);
	if (sessions_get(&s->buffers, (uint32_t)nng_pipe_id(p), 0) != NULL || !pipe_alive(p))
		return;
	connection_open(s, (uint32_t)nng_pipe_id(p));
}

/* --- start and shutdown ----------------------------------------------------- */

static void on_signal(uv_signal_t *h, int signum)
{
	gpud_server *s = h->data;
	if (s->drain.on) {
		/* A second Ctrl-C means "now"; a repeated SIGTERM (process-group
		 * delivery, supervisors) does not: the shutdown timeout bounds it. */
		if (signum == SIGINT) {
			log_warn("second SIGINT: exiting now with %u requests in flight",
				 s->stats.in_flight);
			exit(1);
		}
		return;
	}
	server_shutdown(s);
	log_info("%s: stopping: %u requests in flight finish; connected clients have %g s "
		 "(drain_grace) to take their jobs' next steps, then new work gets SHUTTING_DOWN",
		 signum == SIGINT ? "SIGINT" : "SIGTERM", s->stats.in_flight, s->drain.grace_s);
}

static void on_shutdown_timeout(uv_timer_t *t)
{
	gpud_server *s = t->data;
	log_error("shutdown: %u requests still in flight after %.0f s; exiting", s->stats.in_flight,
		  s->cfg->shutdown_timeout);
	exit(1);
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void teardown(gpud_server *s)
{
	/* The probe first: its last exchange (a hello refused while gpud
	 * drained) is over, or ends within its 2 s timeout; then no
	 * connection of its own is half made when the listeners close. */
	s->nng_quiet = health_stop(&s->health, 5000);
	observe_stop(&s->observe);
	nng_close(s->sock);
	for (int i = 0; i < s->nctx; i++) {
		nng_aio_free(s->ctxs[i].aio);
		pthread_mutex_destroy(&s->ctxs[i].mtx);
	}
	free(s->ctxs);
	s->ctxs = NULL;
	if (s->inject_spare) {
		pthread_mutex_destroy(&s->inject_spare->mtx);
		free(s->inject_spare);
		s->inject_spare = NULL;
	}
	/* Events posted while the socket closed (pipe removals) are moot now. */
	pthread_mutex_lock(&s->qlock);
	for (server_event *ev = s->qhead, *n; ev; ev = n) {
		n = ev->next;
		if (ev->heap)
			free(ev);
	}
	s->qhead = s->qtail = NULL;
	pthread_mutex_unlock(&s->qlock);
	peers_fini(&s->peers);
	regions_stop(&s->regions);
	regions_fini(&s->regions);
	registry_fini(&s->registry);
	buffers_fini(&s->buffers);
	ring_server_fini(&s->rings);
	devices_close(&s->devices);
	close_handle((uv_handle_t *)&s->wake);
	close_handle((uv_handle_t *)&s->sigint);
	close_handle((uv_handle_t *)&s->sigterm);
	close_handle((uv_handle_t *)&s->shutdown_timer);
	close_handle((uv_handle_t *)&s->stop_timer);
	batcher_close(&s->batch);
	reload_close(s);
	memtrim_stop(&s->trim);
	guard_fini(&s->guard);
	log_info("stopped after %llu requests", (unsigned long long)s->stats.requests);
	free(s->fatal);
	s->fatal = NULL;
	auth_fini(&s->auth);
}

void server_shutdown(gpud_server *s)
{
	if (s->drain.on)
		return;
	health_stop(&s->health, 0); /* no more probes: they would be refused */
	batcher_stop(&s->batch);    /* waiting batches launch now; later runs go alone */
	/* A lost GPU serves nothing but status: no grace. */
	drain_start(&s->drain, now_ns(), s->fatal ? 0 : s->cfg->drain_grace,
		    s->cfg->shutdown_timeout);
	observe_set_state(&s->observe, s->fatal ? OBSERVE_LOST : OBSERVE_STOPPING);
	if (s->fatal)
		notify_stopping(
			"lost the GPU context (%s): draining %zu connections, then exiting 1 "
			"for a restart",
			s->fatal, sessions_count(&s->buffers));
	else
		notify_stopping("stopping: draining %zu connections, %u requests in flight",
				sessions_count(&s->buffers), s->stats.in_flight);
	regions_stop(&s->regions);
	uv_timer_start(&s->shutdown_timer, on_shutdown_timeout,
		       (uint64_t)(s->cfg->shutdown_timeout * 1000.0), 0);
	uv_unref((uv_handle_t *)&s->shutdown_timer);
	uv_timer_start(&s->stop_timer, on_stop_tick, 0, 10);
}

/*
 * A device is lost (devices.c marked it): its work fails with the CUDA
 * error, placement leaves it out, and the others keep serving. gpud exits
 * (1, for its supervisor to restart it) when no device is left, or at once
 * with device_lost = exit: a restart drops every tenant's buffers on the
 * healthy devices too, so by default it waits until nothing is left to
 * serve with; an administrator who wants the lost GPU back sooner restarts
 * gpud, or sets exit.
 */
void server_on_device_lost(void *owner, gpud_device *d)
{
	gpud_server *s = owner;
	char msg[768];
	if (s->fatal)
		return;
	snprintf(msg, sizeof(msg), "device %d: %s", d->id, d->lost_msg);
	int ends = d->be.ops && d->be.ops->loss_ends_process;
	if (s->devices.nlive > 0 && !s->cfg->device_lost_exit && !ends) {
		log_error("%s; serving on the %d other device%s (degraded; device_lost = serve)",
			  msg, s->devices.nlive, s->devices.nlive == 1 ? "" : "s");
		notify_status("degraded: lost device %d (%s); serving on %d device%s", d->id,
			      d->lost_msg, s->devices.nlive, s->devices.nlive == 1 ? "" : "s");
		return;
	}
	s->fatal = strdup(msg);
	s->exit_code = 1;
	observe_set_state(&s->observe, OBSERVE_LOST);
	log_error("backend failed: %s; failing all requests and exiting for a restart%s", msg,
		  s->devices.nlive == 0 ? ""
		  : ends ? " (on the cuda backend a sticky error stops every device's work in "
			   "the process, whatever device_lost says)"
			 : " (device_lost = exit)");
	notify_status("lost the GPU context: %s", msg); /* also when stopping already */
	server_shutdown(s);
}

void server_on_session_close(void *arg, gpud_session *sess)
{
	gpud_server *s = arg;
	ring_session_closed(&s->rings, sess); /* replies to its requests are dropped */
	request_session_closed(sess);
	regions_session_closed(&s->regions, sess);
}

/* --- what start-up (server_start.c) takes from here ---------------------------- */

/*
 * The transport refuses (drops the connection on) a message over this; one a
 * little over max_message_size still arrives and gets a clear TOO_LARGE.
 */
size_t server_request_cap(const gpud_config *cfg)
{
	return (size_t)cfg->max_message_size + REQUEST_HEADER_ROOM + GPUD_WIRE_PREFIX;
}

/* The nng REP socket (no listener yet), its connections' events, and the
 * loop's handles: the event queue's wake-up, signals, shutdown timers. */
int server_socket_open(gpud_server *s, uv_loop_t *loop, const gpud_config *cfg, char *err,
		       size_t errlen)
{
	int rv;
	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		snprintf(err, errlen, "nng_rep0_open: %s", nng_strerror(rv));
		return -1;
	}
	/* Requests carry the payload; leave room for the header and framing. */
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, server_request_cap(cfg));
	nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_PRE, on_pipe_event, s);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_POST, on_pipe_event, s);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, on_pipe_event, s);

	uv_async_init(loop, &s->wake, on_wake);
	s->wake.data = s;
	uv_signal_init(loop, &s->sigint);
	uv_signal_init(loop, &s->sigterm);
	s->sigint.data = s->sigterm.data = s;
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	uv_timer_init(loop, &s->shutdown_timer);
	s->shutdown_timer.data = s;
	uv_timer_init(loop, &s->stop_timer);
	s->stop_timer.data = s;
	return 0;
}

/* The contexts, each waiting for a request. */
int server_contexts_start(gpud_server *s, const gpud_config *cfg, char *err, size_t errlen)
{
	int rv;
	s->nctx = cfg->contexts;
	s->ctxs = calloc((size_t)s->nctx, sizeof(server_ctx));
	if (s->ctxs == NULL) {
		snprintf(err, errlen, "out of memory for %d contexts", s->nctx);
		return -1;
	}
	for (int i = 0; i < s->nctx; i++) {
		server_ctx *c = &s->ctxs[i];
		c->srv = s;
		pthread_mutex_init(&c->mtx, NULL);
		if ((rv = nng_aio_alloc(&c->aio, ctx_cb, c)) != 0 ||
		    (rv = nng_ctx_open(&c->ctx, s->sock)) != 0) {
			snprintf(err, errlen, "nng context %d: %s", i, nng_strerror(rv));
			return -1;
		}
		c->state = CTX_RECV;
		nng_ctx_recv(c->ctx, c->aio);
	}
	return 0;
}
