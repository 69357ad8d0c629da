/*
 * client/ctx.c — the nng contexts calls go through (one per call in flight,
 * kept on a free list under c->ctx_mu), and cancelling a request in gpud
 * when its caller stopped waiting for it (a Cancel request on a context of
 * its own, ended by its own callback on an nng thread; gpud_close waits for
 * those under ctx_mu). Any caller thread; the cancel's callback is nng's.
 */
#include <stdlib.h>

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
