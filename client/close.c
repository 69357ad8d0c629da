/*
 * client/close.c — gpud_close: the top of libgpud-client, the one file
 * that knows every part a client holds and frees them in order: the
 * bounced transfer's contexts, the free contexts, the socket (gpud drops
 * the connection's regions), then, once nothing can complete any more, the
 * cancels in flight, the jobs (orphaned: a job outlives its client), the
 * host regions, the request ring, the options and the locks. The closing
 * thread, once no other call on the client is in flight.
 */
#include <pthread.h>
#include <stdlib.h>

#include <nng/nng.h>

#include "client/internal.h"

void gpud_close(gpud_client *c)
{
	if (c == NULL)
		return;
	(void)client_dial_join(c); /* gpud_connect_start's dial, ended first */
	pthread_mutex_lock(&c->scratch_mu);
	for (int i = 0; i < 2; i++)
		if (c->ar[i].x) {
			nng_aio_stop(c->ar[i].x->aio);
			client_ctx_put(c, c->ar[i].x);
			c->ar[i].x = NULL;
		}
	pthread_mutex_unlock(&c->scratch_mu);
	client_ctx_free_all(c);
	if (c->open)
		nng_close(c->sock); /* gpud drops the connection's regions */
	client_cancels_wait(c);     /* they end at once: the socket is closed */
	client_jobs_orphan(c);
	client_regions_free(c);
	client_ring_free(c);
	free(c->token);
	free(c->tls_ca);
	free(c->tls_server_name);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->scratch_mu);
	pthread_mutex_destroy(&c->host_io_mu);
	pthread_mutex_destroy(&c->ctx_mu);
	pthread_cond_destroy(&c->cancels_cv);
	pthread_mutex_destroy(&c->msg_mu);
	pthread_mutex_destroy(&c->ring_mu);
	pthread_mutex_destroy(&c->dial_mu);
	client_forget(c);
	free(c);
}
