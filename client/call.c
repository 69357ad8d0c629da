/*
 * client/call.c — the RPC core every call goes through: nng contexts (one
 * per call in flight, kept on a free list under c->ctx_mu), packing a
 * request, one round trip within the client's timeout, checking and
 * unpacking the reply, and cancelling a request in gpud when its caller
 * stopped waiting for it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client/internal.h"

call_ctx *client_ctx_get(gpud_client *c)
{
	call_ctx *x;
	int rv;

	pthread_mutex_lock(&c->ctx_mu);
	if ((x = c->free_ctx) != NULL)
		c->free_ctx = x->next;
	pthread_mutex_unlock(&c->ctx_mu);
	if (x)
		return x;
	if ((x = calloc(1, sizeof(*x))) == NULL) {
		client_seterr(c, GPUD_ENOMEM, "out of memory for an nng context");
		return NULL;
	}
	if ((rv = nng_ctx_open(&x->ctx, c->sock)) != 0) {
		free(x);
		client_seterr(c, rv == NNG_ECLOSED ? GPUD_ECONNECT : GPUD_ENOMEM, "nng context: %s",
			      nng_strerror(rv));
		return NULL;
	}
	if ((rv = nng_aio_alloc(&x->aio, NULL, NULL)) != 0) {
		nng_ctx_close(x->ctx);
		free(x);
		client_seterr(c, GPUD_ENOMEM, "nng aio: %s", nng_strerror(rv));
		return NULL;
	}
	nng_ctx_set_ms(x->ctx, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	return x;
}

void client_ctx_put(gpud_client *c, call_ctx *x)
{
	pthread_mutex_lock(&c->ctx_mu);
	x->next = c->free_ctx;
	c->free_ctx = x;
	pthread_mutex_unlock(&c->ctx_mu);
}

void client_cancels_wait(gpud_client *c)
{
	pthread_mutex_lock(&c->ctx_mu);
	while (c->cancels > 0)
		pthread_cond_wait(&c->cancels_cv, &c->ctx_mu);
	pthread_mutex_unlock(&c->ctx_mu);
}

void client_ctx_free_all(gpud_client *c)
{
	pthread_mutex_lock(&c->ctx_mu);
	call_ctx *x = c->free_ctx;
	c->free_ctx = NULL;
	pthread_mutex_unlock(&c->ctx_mu);
	while (x) {
		call_ctx *next = x->next;
		nng_aio_free(x->aio);
		nng_ctx_close(x->ctx);
		free(x);
		x = next;
	}
}

gpud_status client_nng_status(int rv)
{
	switch (rv) {
	case NNG_ETIMEDOUT:
		return GPUD_ETIMEDOUT;
	case NNG_ECANCELED:
		return GPUD_ECANCELED;
	case NNG_ENOMEM:
		return GPUD_ENOMEM;
	default:
		return GPUD_ETRANSPORT;
	}
}

size_t client_chunk_limit(gpud_client *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t m = c->info.max_message_size;
	pthread_mutex_unlock(&c->mu);
	return m ? (size_t)m : SIZE_MAX;
}

size_t client_reply_limit(gpud_client *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t m = c->max_message;
	pthread_mutex_unlock(&c->mu);
	return m ? (size_t)m : SIZE_MAX;
}

const char *client_limit_name(gpud_client *c, char *buf, size_t len)
{
	pthread_mutex_lock(&c->mu);
	if (c->quota_message && c->quota_message == c->info.max_message_size)
		snprintf(buf, len, "the message_size quota of tenant %s", c->info.tenant);
	else
		snprintf(buf, len,
			 "the daemon's message size limit (max_message_size in gpud.conf)");
	pthread_mutex_unlock(&c->mu);
	return buf;
}

gpud_status client_pack(gpud_client *c, Gpud__Request *req, const void *data, size_t plen,
			nng_msg **m, void **payload)
{
	size_t limit = client_chunk_limit(c);
	char what[160];
	int rv;
	if (limit != SIZE_MAX && plen > limit)
		return client_seterr(c, GPUD_E2BIG,
				     "a payload of %zu bytes exceeds %s of %zu bytes", plen,
				     client_limit_name(c, what, sizeof(what)), limit);
	req->version = GPUD_PROTOCOL_VERSION;
	req->id = __atomic_add_fetch(&c->next_id, 1, __ATOMIC_RELAXED);
	if ((rv = wire_pack(m, &req->base, data, plen, payload)) != 0)
		return client_seterr(c, GPUD_ENOMEM, "cannot build a request of %zu bytes: %s",
				     plen, nng_strerror(rv));
	return GPUD_OK;
}

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

gpud_status client_parse_reply(nng_msg *m, uint64_t id, Gpud__Response **resp, nng_msg **rmsg,
			       uint8_t **rpayload, size_t *rplen, char *msg, size_t msglen,
			       int *draining)
{
	const uint8_t *hdr;
	size_t hlen;
	uint8_t *pl;
	size_t pll;
	char err[256];

	if (wire_split(m, &hdr, &hlen, &pl, &pll, err, sizeof(err)) != 0) {
		nng_msg_free(m);
		snprintf(msg, msglen, "malformed reply: %s", err);
		return GPUD_EPROTO;
	}
	Gpud__Response *r = gpud__response__unpack(NULL, hlen, hdr);
	if (r == NULL) {
		nng_msg_free(m);
		snprintf(msg, msglen, "malformed reply: the header is not a gpud Response");
		return GPUD_EPROTO;
	}
	if (draining)
		*draining = r->draining;
	if (r->code != GPUD__STATUS__STATUS_OK) {
		gpud_status st = (gpud_status)r->code;
		if (r->code > GPUD__STATUS__STATUS_NO_SESSION)
			st = GPUD_EPROTO;
		snprintf(msg, msglen, "%s",
			 r->message && r->message[0] ? r->message : gpud_strerror(st));
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return st;
	}
	if (r->id != id) {
		snprintf(msg, msglen, "reply to request %" PRIu64 " answers request %" PRIu64, id,
			 r->id);
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return GPUD_EPROTO;
	}
	*resp = r;
	if (rmsg) {
		*rmsg = m;
		*rpayload = pl;
		*rplen = pll;
	} else {
		nng_msg_free(m);
	}
	return GPUD_OK;
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

gpud_status client_expect_body(gpud_client *c, Gpud__Response *r, Gpud__Response__BodyCase want,
			       const char *verb)
{
	if (r->body_case == want)
		return GPUD_OK;
	gpud__response__free_unpacked(r, NULL);
	return client_seterr(c, GPUD_EPROTO, "%s: the reply has no %s body", verb, verb);
}

void client_copy_devices(gpud_server_info *info, Gpud__Device **devs, size_t n)
{
	info->ndevices = 0;
	for (size_t i = 0; i < n && i < GPUD_MAX_DEVICES; i++) {
		gpud_device_info *d = &info->devices[info->ndevices++];
		d->index = devs[i]->index;
		snprintf(d->name, sizeof(d->name), "%s", devs[i]->name ? devs[i]->name : "");
		d->cc_major = devs[i]->cc_major;
		d->cc_minor = devs[i]->cc_minor;
		d->memory_total = devs[i]->memory_total;
		d->memory_free = devs[i]->memory_free;
		d->sm_count = devs[i]->sm_count;
		d->lost = devs[i]->lost;
		snprintf(d->lost_message, sizeof(d->lost_message), "%s",
			 devs[i]->lost_message ? devs[i]->lost_message : "");
		d->runs = devs[i]->runs;
		d->slots = devs[i]->slots;
		d->bytes_moving = devs[i]->bytes_moving;
		d->buffers = devs[i]->buffers;
		d->bytes_in_use = devs[i]->bytes_in_use;
		d->runs_total = devs[i]->runs_total;
		d->busy_s = devs[i]->busy_s;
		d->has_pool = devs[i]->pool != NULL;
		if (devs[i]->pool) {
			d->pool_in_use = devs[i]->pool->in_use;
			d->pool_cached = devs[i]->pool->cached;
			d->pool_high_water = devs[i]->pool->high_water;
			d->pool_limit = devs[i]->pool->limit;
		}
	}
}

/* --- cancelling without waiting ------------------------------------------------------ */

/* A Cancel request on a context of its own; freed by its own callback. */
typedef struct cancel_req {
	gpud_client *c;
	nng_ctx ctx;
	nng_aio *aio;
	int sent;
} cancel_req;

/* One cancel fewer in flight (gpud_close waits for none). */
static void cancel_gone(gpud_client *c)
{
	pthread_mutex_lock(&c->ctx_mu);
	if (--c->cancels == 0)
		pthread_cond_broadcast(&c->cancels_cv);
	pthread_mutex_unlock(&c->ctx_mu);
}

static void cancel_step(void *arg)
{
	cancel_req *q = arg;
	int rv = nng_aio_result(q->aio);
	if (rv != 0 && !q->sent)
		nng_msg_free(nng_aio_get_msg(q->aio));
	if (rv == 0 && !q->sent) {
		q->sent = 1;
		nng_ctx_recv(q->ctx, q->aio); /* the reply is only awaited, not read */
		return;
	}
	if (rv == 0)
		nng_msg_free(nng_aio_get_msg(q->aio));
	gpud_client *c = q->c;
	nng_ctx_close(q->ctx);
	nng_aio_reap(q->aio);
	free(q);
	cancel_gone(c);
}

void client_cancel_async(gpud_client *c, uint64_t id)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__CancelRequest cr = GPUD__CANCEL_REQUEST__INIT;
	nng_msg *m;
	cancel_req *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return;
	q->c = c;
	cr.request = id;
	req.body_case = GPUD__REQUEST__BODY_CANCEL;
	req.cancel = &cr;
	req.version = GPUD_PROTOCOL_VERSION;
	req.id = __atomic_add_fetch(&c->next_id, 1, __ATOMIC_RELAXED);
	if (wire_pack(&m, &req.base, NULL, 0, NULL) != 0) {
		free(q);
		return;
	}
	if (nng_ctx_open(&q->ctx, c->sock) != 0) {
		nng_msg_free(m);
		free(q);
		return;
	}
	if (nng_aio_alloc(&q->aio, cancel_step, q) != 0) {
		nng_ctx_close(q->ctx);
		nng_msg_free(m);
		free(q);
		return;
	}
	nng_ctx_set_ms(q->ctx, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	pthread_mutex_lock(&c->ctx_mu);
	c->cancels++;
	pthread_mutex_unlock(&c->ctx_mu);
	nng_aio_set_timeout(q->aio, 5000);
	nng_aio_set_msg(q->aio, m);
	nng_ctx_send(q->ctx, q->aio);
}
