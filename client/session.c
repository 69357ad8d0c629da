/*
 * client/session.c — the session on a client's connection: hello, and hello
 * again when the connection was re-made (gpud restarted, or the link
 * dropped and nng dialed again). gpud binds a session to one pipe, so the
 * client watches its pipes: when the pipe hello answered on goes away, the
 * session is lost and the next call says hello before its request. A
 * request that still reaches a new pipe first comes back NO_SESSION, undone
 * (client_session_lost; CLIENT_RETRY sends it again).
 *
 * State under c->mu: gen, lost, helloing, session_pipe, info, shm_path, key.
 * One thread says hello at a time (helloing); the others wait on c->cv.
 * A client connected with gpud_connect_deferred has no session until its
 * first call: a status carries the hello in its own request (one round
 * trip: client_session_carry, client_session_carried), so does gpud_call_to
 * in the request's carried_hello, any other call says hello first as here.
 * The next hello after memory was lent before hello (client_region_claim)
 * carries its claim; once a hello answered that it claimed it, those
 * regions take the new session's gen (session_made). Also under c->mu:
 * claim, claim_state, claim_ok.
 * With a list of endpoints (GPUD_URL=URL,URL,...) that thread also moves a
 * lost session to the next endpoint that answers (failover): it alone
 * writes c->url (atomically: other threads read it for messages) and
 * c->dialer.
 * The pipe callback runs on an nng thread and only takes c->mu.
 *
 * Every hello keeps a time limit, sending and answer together: the call's
 * timeout (else the connect timeout); at connect, what is left of the
 * connect's. A peer that takes the hello and never answers fails it with
 * GPUD_ETIMEDOUT; failover shares the call's timeout among the endpoints.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "client/internal.h"

static void on_pipe_removed(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	gpud_client *c = arg;
	pthread_mutex_lock(&c->mu);
	if ((uint32_t)nng_pipe_id(p) == c->session_pipe)
		c->lost = 1;
	pthread_mutex_unlock(&c->mu);
}

void client_session_watch(gpud_client *c)
{
	nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, on_pipe_removed, c);
}

void client_session_lost(gpud_client *c, uint64_t gen)
{
	pthread_mutex_lock(&c->mu);
	if (c->gen == gen)
		c->lost = 1;
	pthread_mutex_unlock(&c->mu);
}

void client_session_draining(gpud_client *c, uint64_t gen)
{
	pthread_mutex_lock(&c->mu);
	if (gen > c->draining_gen)
		c->draining_gen = gen;
	pthread_mutex_unlock(&c->mu);
}

gpud_status client_closed_draining(gpud_client *c, uint64_t gen, int rv, int sent)
{
	/* A send that timed out found no connection to send on: after gpud said
	 * it is shutting down, that is gpud gone, not the caller's limit. */
	if (rv == NNG_ENOMEM || rv == NNG_ECANCELED || rv == NNG_ECLOSED || /* ours */
	    (rv == NNG_ETIMEDOUT && sent))
		return GPUD_OK;
	pthread_mutex_lock(&c->mu);
	int draining = gen > 0 && c->draining_gen == gen;
	pthread_mutex_unlock(&c->mu);
	if (!draining)
		return GPUD_OK;
	return client_seterr(c, GPUD_ESHUTDOWN,
			     "gpud at %s is shutting down and closed the connection %s: the "
			     "call was not done",
			     client_url(c),
			     sent ? "before taking the call" : "before the call could be sent");
}

int client_shm(gpud_client *c, char *path, size_t plen, uint8_t *key, uint64_t *gen)
{
	pthread_mutex_lock(&c->mu);
	int ok = c->shm_path[0] != '\0';
	if (ok) {
		snprintf(path, plen, "%s", c->shm_path);
		memcpy(key, c->key, GPUD_SHM_KEY_LEN);
	}
	if (gen)
		*gen = c->gen;
	pthread_mutex_unlock(&c->mu);
	return ok;
}

int gpud_has_shm(const gpud_client *c)
{
	gpud_client *m = (gpud_client *)c;
	if (c == NULL)
		return 0;
	pthread_mutex_lock(&m->mu);
	int ok = c->shm_path[0] != '\0';
	int before = c->defer_hello && c->gen == 0; /* gpud_host_alloc finds out */
	pthread_mutex_unlock(&m->mu);
	return ok || (before && c->nurls == 1 && strncmp(client_url(m), "ipc://", 6) == 0 &&
		      !getenv("GPUD_NO_SHM"));
}

/*
 * A hello that got no answer: gpud is not there for this client (down,
 * restarting, or it closed the connection as it stopped), never a call cut
 * in flight (hello changes nothing); or (timed out) the caller's limit ran
 * out first.
 */
static gpud_status hello_status(int rv)
{
	return rv == NNG_ENOMEM      ? GPUD_ENOMEM
	       : rv == NNG_ECANCELED ? GPUD_ECANCELED
	       : rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT
				     : GPUD_EUNAVAILABLE;
}

/* The session hello's answer hr (from the reply that came on pipe) makes: c's
 * state of it. Under c->mu. */
static void session_take(gpud_client *c, const Gpud__HelloResponse *hr, uint32_t pipe)
{
	memset(&c->info, 0, sizeof(c->info));
	snprintf(c->info.version, sizeof(c->info.version), "%s", hr->server_version);
	snprintf(c->info.backend, sizeof(c->info.backend), "%s", hr->backend);
	c->info.protocol_version = hr->protocol_version;
	/* what one request may carry: gpud's limit, or the tenant's quota
	 * where smaller (uploads are split to fit it) */
	c->max_message = hr->max_message_size;
	c->quota_message = hr->message_size;
	c->info.max_message_size = hr->message_size && (hr->max_message_size == 0 ||
							hr->message_size < hr->max_message_size)
					   ? hr->message_size
					   : hr->max_message_size;
	c->info.connection = hr->connection;
	c->info.instance = hr->instance;
	snprintf(c->info.tenant, sizeof(c->info.tenant), "%s", hr->tenant ? hr->tenant : "");
	client_copy_devices(&c->info, hr->devices, hr->n_devices);
	c->shm_path[0] = '\0';
	if (hr->shm_socket && hr->shm_socket[0] && hr->session_key.len == GPUD_SHM_KEY_LEN &&
	    strlen(hr->shm_socket) < sizeof(c->shm_path) && !getenv("GPUD_NO_SHM")) {
		snprintf(c->shm_path, sizeof(c->shm_path), "%s", hr->shm_socket);
		memcpy(c->key, hr->session_key.data, GPUD_SHM_KEY_LEN);
	}
	c->session_pipe = pipe;
	c->claim_ok = hr->claimed > 0;
}

/* What hello fills in h: who says it, and the tenant's token where there is one. */
static void hello_request(gpud_client *c, Gpud__HelloRequest *h)
{
	h->client = "libgpud-client " GPUD_VERSION;
	if (c->token) /* tcp:// to a gpud with tokens: the tenant's bearer token */
		h->token = c->token;
	pthread_mutex_lock(&c->mu);
	if (c->claim_state == CLAIM_LENT) { /* once: a claim that failed is not tried again */
		h->claim.data = c->claim;
		h->claim.len = sizeof(c->claim);
		c->claim_state = CLAIM_SENT;
	}
	pthread_mutex_unlock(&c->mu);
}

/*
 * The round trip of a request that says hello (hello, or a status carrying
 * it: req) within wait_ms, sending and answer together (gpud may be
 * restarting: the send waits for a connection); messages name limit_ms, the
 * limit the caller set (wait_ms is what is left of it). On GPUD_OK *r is
 * the reply and *pipe the connection it came on.
 */
static gpud_status greet(gpud_client *c, Gpud__Request *req, int wait_ms, int limit_ms,
			 Gpud__Response **r, uint32_t *pipe)
{
	nng_msg *m, *rm;
	gpud_status st;
	int rv;
	const int64_t deadline = client_now_ms() + wait_ms;

	if ((st = client_pack(c, req, NULL, 0, &m, NULL)) != GPUD_OK)
		return st;
	call_ctx *x = client_ctx_get(c);
	if (x == NULL) {
		nng_msg_free(m);
		return GPUD_ENOMEM;
	}
	nng_aio_set_timeout(x->aio, wait_ms);
	nng_aio_set_msg(x->aio, m);
	nng_ctx_send(x->ctx, x->aio);
	nng_aio_wait(x->aio);
	if ((rv = nng_aio_result(x->aio)) != 0) {
		nng_msg_free(m);
		client_ctx_put(c, x);
		if (rv == NNG_ETIMEDOUT)
			return client_seterr(
				c, GPUD_EUNAVAILABLE,
				"gpud at %s is not reachable: no connection within %d ms (it is "
				"down or restarting; start it with `gpud` or `systemctl start "
				"gpud`, or point GPUD_URL at the one you mean)",
				client_url(c), limit_ms);
		return client_seterr(c, hello_status(rv), "hello to %s: %s", client_url(c),
				     nng_strerror(rv));
	}
	/* the answer gets what is left of wait_ms */
	nng_aio_set_timeout(x->aio, client_left_ms(deadline));
	nng_ctx_recv(x->ctx, x->aio);
	nng_aio_wait(x->aio);
	rv = nng_aio_result(x->aio);
	rm = rv == 0 ? nng_aio_get_msg(x->aio) : NULL;
	client_ctx_put(c, x);
	if (rv == NNG_ETIMEDOUT)
		return client_seterr(c, GPUD_ETIMEDOUT,
				     "gpud at %s took the hello but did not answer it within %d ms "
				     "(gpud is wedged, or what listens there is not gpud)",
				     client_url(c), limit_ms);
	if (rv != 0)
		return client_seterr(c, hello_status(rv), "hello to %s: no answer: %s%s",
				     client_url(c), nng_strerror(rv),
				     rv == NNG_ECONNRESET || rv == NNG_ECLOSED
					     ? " (gpud closed the connection: it is stopping or "
					       "restarting)"
					     : "");
	*pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(rm));
	char err[1024];
	st = client_parse_reply(rm, req->id, r, NULL, NULL, NULL, err, sizeof(err), NULL);
	if (st != GPUD_OK) /* SHUTTING_DOWN too: nothing is sent after it */
		return client_seterr(c, st, "%s", err);
	return GPUD_OK;
}

/*
 * One hello round trip within wait_ms (greet). On GPUD_OK the session's
 * state is in c (under mu).
 */
static gpud_status hello(gpud_client *c, int wait_ms, int limit_ms)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__HelloRequest h = GPUD__HELLO_REQUEST__INIT;
	Gpud__Response *r = NULL;
	uint32_t pipe;
	gpud_status st;

	req.body_case = GPUD__REQUEST__BODY_HELLO;
	req.hello = &h;
	hello_request(c, &h);
	if ((st = greet(c, &req, wait_ms, limit_ms, &r, &pipe)) != GPUD_OK)
		return st;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_HELLO, "hello")) != GPUD_OK)
		return st;
	pthread_mutex_lock(&c->mu);
	session_take(c, r->hello, pipe);
	pthread_mutex_unlock(&c->mu);
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

/*
 * The session was lost and its endpoint did not answer: the next endpoint
 * of the list (in order after it, wrapping, itself last) that answers
 * hello. A job never spans two gpuds: the new session is a new gpud's, and
 * handles from before get GPUD_ESTALE there as after a restart. When none
 * answers, the first endpoint is dialed again in the background (nng
 * retries it) and the message lists each one's failure. With deadline > 0
 * the endpoints share the time until it (each at least an equal part of
 * what is left); else each gets wait_ms to connect and answer.
 */
static gpud_status failover(gpud_client *c, int wait_ms, int64_t deadline)
{
	char why[4096] = "";
	const int cur = (int)((c->url - c->urls[0]) / (ptrdiff_t)sizeof(c->urls[0]));
	size_t used = client_append_why(why, sizeof(why), 0, cur, gpud_errmsg(c));
	gpud_status st = GPUD_EUNAVAILABLE;
	nng_dialer_close(c->dialer);
	for (int k = 1; k <= c->nurls; k++) {
		const int i = (cur + k) % c->nurls;
		const int share = deadline > 0 ? client_left_ms(deadline) / (c->nurls - k + 1) + 1
					       : wait_ms;
		const int64_t mine = client_now_ms() + share;
		if ((st = client_dial(c, i, 0, share)) == GPUD_OK) {
			if ((st = hello(c, client_left_ms(mine), share)) == GPUD_OK)
				return GPUD_OK;
			nng_dialer_close(c->dialer);
		}
		if (i != cur)
			used = client_append_why(why, sizeof(why), used, i, gpud_errmsg(c));
	}
	/* the first endpoint again, in the background (TLS settings included):
	 * the next call's hello gets it as soon as it is back */
	if (client_dial(c, 0, NNG_FLAG_NONBLOCK, 0) != GPUD_OK)
		__atomic_store_n(&c->url, c->urls[0], __ATOMIC_RELEASE);
	return client_seterr(c, st == GPUD_ECONNECT ? GPUD_EUNAVAILABLE : st,
			     "none of the %d gpud endpoints answered after the session was lost: "
			     "%s",
			     c->nurls, why);
}

/* The session is c's now (gen 1, or the next after a reconnect). */
static void session_made(gpud_client *c)
{
	if (c->gen > 0)
		__atomic_add_fetch(&c->reconnects, 1, __ATOMIC_RELAXED);
	c->gen++;
	c->lost = 0;
	if (c->claim_ok) /* the memory lent before hello is this session's now */
		for (size_t i = 0; i < c->nregions; i++)
			if (c->regions[i].claimed && c->regions[i].gen == 0)
				c->regions[i].gen = c->gen;
	c->claim_ok = 0;
}

gpud_status client_session_first(gpud_client *c, int wait_ms, int limit_ms)
{
	gpud_status st = hello(c, wait_ms, limit_ms);
	pthread_mutex_lock(&c->mu);
	if (st == GPUD_OK)
		session_made(c);
	pthread_mutex_unlock(&c->mu);
	return st;
}

gpud_status client_session_greet(gpud_client *c, Gpud__Request *req, Gpud__Response **r,
				 uint32_t *pipe)
{
	int t = client_timeout(c);
	int wait = t > 0 ? t : c->connect_timeout_ms;
	return greet(c, req, wait, wait, r, pipe);
}

int client_session_carry(gpud_client *c, Gpud__HelloRequest *h, uint64_t *gen, gpud_status *st)
{
	if ((*st = client_dial_join(c)) != GPUD_OK)
		return 0;
	pthread_mutex_lock(&c->mu);
	while (c->helloing)
		pthread_cond_wait(&c->cv, &c->mu);
	if (c->defer_hello && c->gen == 0) {
		c->helloing = 1;
		pthread_mutex_unlock(&c->mu);
		hello_request(c, h);
		*gen = 0;
		*st = GPUD_OK;
		return 1;
	}
	pthread_mutex_unlock(&c->mu);
	*st = client_session(c, gen);
	return 0;
}

void client_session_carried(gpud_client *c, const Gpud__HelloResponse *hr, uint32_t pipe,
			    Gpud__Device **devs, size_t ndevs)
{
	pthread_mutex_lock(&c->mu);
	if (hr) {
		session_take(c, hr, pipe);
		client_copy_devices(&c->info, devs, ndevs);
		session_made(c);
	} else {
		c->defer_hello = 0;
	}
	c->helloing = 0;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

gpud_status client_session(gpud_client *c, uint64_t *gen)
{
	gpud_status st = GPUD_OK;

	if ((st = client_dial_join(c)) != GPUD_OK)
		return st;
	if (c->no_hello) { /* status only: served before hello */
		*gen = 0;
		return GPUD_OK;
	}
	pthread_mutex_lock(&c->mu);
	while (c->helloing)
		pthread_cond_wait(&c->cv, &c->mu);
	if (c->gen > 0 && !c->lost) {
		*gen = c->gen;
		pthread_mutex_unlock(&c->mu);
		return GPUD_OK;
	}
	if (c->gen > 0 && c->draining_gen == c->gen) {
		/* gpud said it is shutting down, then closed the connection: this
		 * call is not tried (once; the next one looks for a gpud again) */
		c->draining_gen = 0;
		pthread_mutex_unlock(&c->mu);
		return client_seterr(c, GPUD_ESHUTDOWN,
				     "gpud at %s is shutting down and closed the connection: the "
				     "call was not done",
				     client_url(c));
	}
	c->helloing = 1;
	pthread_mutex_unlock(&c->mu);

	int t = client_timeout(c);
	int wait = t > 0 ? t : c->connect_timeout_ms;
	if (c->gen > 0 && c->nurls > 1) {
		/* a list: the lost endpoint up to the connect timeout (it may be
		 * restarting), then the others. With a call timeout, all of it
		 * within that: the lost endpoint half, the others the rest.
		 * Without, one that accepts the connection gets the longer of
		 * the connect timeout and 10 s to answer. */
		int lost = wait < c->connect_timeout_ms ? wait : c->connect_timeout_ms;
		int64_t deadline = t > 0 ? client_now_ms() + t : 0;
		if (t > 0 && lost > t / 2)
			lost = t / 2 > 0 ? t / 2 : 1;
		int answer = c->connect_timeout_ms > CONNECT_TIMEOUT_MS ? c->connect_timeout_ms
									: CONNECT_TIMEOUT_MS;
		st = hello(c, lost, lost);
		if (st != GPUD_OK)
			st = failover(c, answer, deadline);
	} else {
		st = hello(c, wait, wait);
	}

	pthread_mutex_lock(&c->mu);
	c->helloing = 0;
	if (st == GPUD_OK)
		session_made(c);
	*gen = c->gen;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return st;
}

gpud_status client_take_reply(gpud_client *c, uint64_t gen, nng_msg *m, uint64_t id,
			      Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload,
			      size_t *rplen)
{
	char err[2048];
	int draining = 0;
	gpud_status st = client_parse_reply(m, id, resp, rmsg, rpayload, rplen, err, sizeof(err),
					    &draining);
	if (draining)
		client_session_draining(c, gen);
	if (st == GPUD_ENOSESSION)
		client_session_lost(c, gen);
	if (st != GPUD_OK)
		return client_seterr(c, st, "%s", err);
	return GPUD_OK;
}
