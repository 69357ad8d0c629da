/*
 * client/call.c — one round trip, as every call makes it: the session
 * (client_session says hello first where needed), the request packed, then
 * sent through the request ring when it can take it, else on an nng context
 * of its own within the client's timeout, and its reply taken. Any caller
 * thread.
 */
#include <nng/nng.h>

#include "client/internal.h"

gpud_status client_call(gpud_client *c, Gpud__Request *req, const void *payload, size_t plen,
			Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload, size_t *rplen)
{
	nng_msg *m;
	uint64_t gen;
	gpud_status st;

	if (!c->open)
		return client_seterr(c, GPUD_ECONNECT, "not connected");
	if ((st = client_session(c, &gen)) != GPUD_OK)
		return st;
	if ((st = client_pack(c, req, payload, plen, &m, NULL)) != GPUD_OK)
		return st;
	return client_exchange(c, gen, m, req->id, resp, rmsg, rpayload, rplen);
}

gpud_status client_exchange(gpud_client *c, uint64_t gen, nng_msg *m, uint64_t id,
			    Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload,
			    size_t *rplen)
{
	int t = client_timeout(c);
	int rv;
	gpud_status st;

	/* The request ring when it can take the request (ipc://), else the socket. */
	if (client_ring_exchange(c, gen, m, id, resp, rmsg, rpayload, rplen, &st))
		return st;
	call_ctx *x = client_ctx_get(c);
	if (x == NULL) {
		nng_msg_free(m);
		return GPUD_ENOMEM;
	}
	/* Sending waits for a connection at most this long (gpud restarting). */
	nng_aio_set_timeout(x->aio, t > 0 ? t : c->connect_timeout_ms);
	nng_aio_set_msg(x->aio, m);
	nng_ctx_send(x->ctx, x->aio);
	nng_aio_wait(x->aio);
	if ((rv = nng_aio_result(x->aio)) != 0) {
		nng_msg_free(m);
		client_ctx_put(c, x);
		gpud_status down = client_closed_draining(c, gen, rv, 0);
		if (down != GPUD_OK)
			return down;
		if (rv == NNG_ETIMEDOUT && t <= 0)
			return client_seterr(c, GPUD_EUNAVAILABLE,
					     "gpud at %s is not reachable: no connection within "
					     "%d ms (it is down or restarting)",
					     client_url(c), c->connect_timeout_ms);
		return client_seterr(c, client_nng_status(rv), "sending to %s: %s", client_url(c),
				     nng_strerror(rv));
	}
	nng_aio_set_timeout(x->aio, t > 0 ? t : NNG_DURATION_INFINITE);
	nng_ctx_recv(x->ctx, x->aio);
	nng_aio_wait(x->aio);
	rv = nng_aio_result(x->aio);
	m = rv == 0 ? nng_aio_get_msg(x->aio) : NULL;
	client_ctx_put(c, x);
	if (rv == NNG_ETIMEDOUT) {
		client_cancel_async(c, id); /* gpud stops what nobody will collect */
		return client_seterr(c, GPUD_ETIMEDOUT,
				     "no reply from %s within %d ms; the request is cancelled "
				     "in gpud",
				     client_url(c), t);
	}
	if (rv != 0) {
		client_session_lost(c, gen);
		gpud_status down = client_closed_draining(c, gen, rv, 1);
		if (down != GPUD_OK)
			return down;
		return client_seterr(c, client_nng_status(rv),
				     "the connection to gpud at %s was lost while the call was in "
				     "flight (%s): gpud restarted or the link dropped; the call "
				     "may or may not have taken effect, and the next call "
				     "reconnects",
				     client_url(c), nng_strerror(rv));
	}
	return client_take_reply(c, gen, m, id, resp, rmsg, rpayload, rplen);
}
