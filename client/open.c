/*
 * client/open.c — the top of libgpud-client, with close.c: connecting
 * (gpud_connect*: the options, the socket, every endpoint of the list in
 * turn, dialed (dial.c) and greeted (session.c) within the caller's time,
 * or greeted later: by the first call, or never)
 * and what a connection says of itself (gpud_server, gpud_url,
 * gpud_reconnects, gpud_set_timeout). The connecting thread, before any
 * other has the client; the accessors any thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client/internal.h"

const gpud_server_info *gpud_server(const gpud_client *c)
{
	return &c->info;
}

const char *gpud_url(const gpud_client *c)
{
	return client_url(c);
}

unsigned gpud_reconnects(const gpud_client *c)
{
	return __atomic_load_n(&c->reconnects, __ATOMIC_RELAXED);
}

void gpud_set_timeout(gpud_client *c, int timeout_ms)
{
	__atomic_store_n(&c->timeout_ms, timeout_ms > 0 ? timeout_ms : 0, __ATOMIC_RELAXED);
}

/* The value, else the environment variable's, else NULL; copied. */
static char *option(const char *v, const char *env)
{
	if (v == NULL || v[0] == '\0')
		v = getenv(env);
	return v && v[0] ? strdup(v) : NULL;
}

gpud_status gpud_connect(const char *url, gpud_client **out)
{
	gpud_options o = {.url = url};
	return gpud_connect_opts(&o, out);
}

/* How a connection says hello: at connect, never (status only), or with its
 * first call (a status carries it). */
enum hello_when { HELLO_AT_CONNECT, HELLO_NEVER, HELLO_FIRST_CALL };

/* Dialed: what the connection does now of hello (HELLO_AT_CONNECT: says it). */
static gpud_status dialed(gpud_client *c, enum hello_when hello, int wait_ms, int limit_ms)
{
	if (hello == HELLO_NEVER)
		c->no_hello = 1;
	if (hello == HELLO_FIRST_CALL)
		c->defer_hello = 1;
	if (hello != HELLO_AT_CONNECT)
		return GPUD_OK;
	return client_session_first(c, wait_ms, limit_ms);
}

/* gpud_connect_start's thread: the one endpoint's dial, as connect_opts makes it. */
static void *dial_main(void *arg)
{
	gpud_client *c = arg;
	c->dial_st = client_dial(c, 0, 0, c->dial_budget);
	if (c->dial_st != GPUD_OK)
		snprintf(c->dial_msg, sizeof(c->dial_msg), "%s", client_msg(c));
	return NULL;
}

gpud_status client_dial_join(gpud_client *c)
{
	if (!c->dial_lazy)
		return GPUD_OK;
	pthread_mutex_lock(&c->dial_mu);
	if (c->dial_pending) {
		pthread_join(c->dial_thread, NULL);
		c->dial_pending = 0;
	}
	gpud_status st = c->dial_st;
	pthread_mutex_unlock(&c->dial_mu);
	if (st != GPUD_OK)
		return client_seterr(c, st, "%s", c->dial_msg);
	return GPUD_OK;
}

gpud_status gpud_connect_wait(gpud_client *c)
{
	if (c == NULL)
		return GPUD_EARG;
	client_clear(c);
	return client_dial_join(c);
}

static gpud_status connect_opts(const gpud_options *opts, gpud_client **out, enum hello_when hello,
				int lazy)
{
	static const gpud_options none;
	gpud_client *c = calloc(1, sizeof(*c));
	int rv;

	*out = c;
	if (c == NULL)
		return GPUD_ENOMEM;
	if (opts == NULL)
		opts = &none;
	pthread_mutex_init(&c->mu, NULL);
	c->nvariants = -1;
	pthread_cond_init(&c->cv, NULL);
	pthread_mutex_init(&c->scratch_mu, NULL);
	pthread_mutex_init(&c->host_io_mu, NULL);
	pthread_mutex_init(&c->ctx_mu, NULL);
	pthread_cond_init(&c->cancels_cv, NULL);
	pthread_mutex_init(&c->msg_mu, NULL);
	pthread_mutex_init(&c->ring_mu, NULL);
	pthread_mutex_init(&c->dial_mu, NULL);
	c->ring.efd = -1;
	const char *no_ring = getenv("GPUD_NO_RING");
	c->ring_off = no_ring && no_ring[0] && strcmp(no_ring, "0") != 0;
	client_clear(c);
	c->url = c->urls[0]; /* "" until parsed */
	const char *url = opts->url;
	if (url == NULL || url[0] == '\0') {
		url = getenv("GPUD_URL");
		if (url == NULL || url[0] == '\0')
			url = GPUD_DEFAULT_URL;
	}
	if (client_endpoints_parse(c, url) != 0)
		return GPUD_ECONNECT;
	/* A list is tried in order until an endpoint answers hello (one draining or
	 * refusing is passed over): a hello left to the first call could not. */
	if (hello == HELLO_FIRST_CALL && c->nurls > 1)
		hello = HELLO_AT_CONNECT;
	c->token = option(opts->token, "GPUD_TOKEN");
	c->tls_ca = option(opts->tls_ca, "GPUD_TLS_CA");
	c->tls_server_name = option(opts->tls_server_name, "GPUD_TLS_SERVER_NAME");
	c->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms
							     : CONNECT_TIMEOUT_MS;
	gpud_set_timeout(c, opts->timeout_ms);
	if ((rv = nng_req0_open(&c->sock)) != 0)
		return client_seterr(c, GPUD_ECONNECT, "nng_req0_open: %s", nng_strerror(rv));
	c->open = 1;
	/* Requests are not idempotent (alloc, run): never resend one by itself;
	 * a request in flight when the connection drops fails (ECONNRESET). */
	nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, 0);
	/* After a drop nng dials again by itself: soon, then backing off to 1 s. */
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 20);
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 1000);
	client_session_watch(c);
	/* Connecting keeps every limit the caller set: the connect timeout, and
	 * the call timeout where that is shorter (or the call timeout alone
	 * when no connect timeout was given). */
	int t = client_timeout(c), budget = c->connect_timeout_ms;
	if (t > 0 && (opts->connect_timeout_ms <= 0 || t < budget))
		budget = t;
	const int64_t deadline = client_now_ms() + budget;
	if (c->nurls == 1 && lazy && hello == HELLO_FIRST_CALL) {
		/* the dial on a thread of its own; the first call joins it */
		c->defer_hello = 1;
		c->dial_budget = budget;
		c->dial_lazy = c->dial_pending = 1;
		if (pthread_create(&c->dial_thread, NULL, dial_main, c) == 0)
			return GPUD_OK;
		c->dial_lazy = c->dial_pending = 0;
	}
	if (c->nurls == 1) { /* one endpoint: its own messages, unchanged */
		gpud_status st = client_dial(c, 0, 0, budget);
		if (st != GPUD_OK)
			return st;
		return dialed(c, hello, client_left_ms(deadline), budget);
	}
	/* A list: the first endpoint, in order, that is reachable (no hello at
	 * connect) or answers hello; each one's failure kept for the message. Each gets
	 * an equal part of the time left, at least. */
	char why[4096] = "";
	size_t used = 0;
	gpud_status st = GPUD_ECONNECT;
	for (int i = 0; i < c->nurls; i++) {
		const int share = client_left_ms(deadline) / (c->nurls - i) + 1;
		const int64_t mine = client_now_ms() + share;
		if ((st = client_dial(c, i, 0, share)) == GPUD_OK) {
			if ((st = dialed(c, hello, client_left_ms(mine), share)) == GPUD_OK)
				return GPUD_OK;
			nng_dialer_close(c->dialer);
		}
		used = client_append_why(why, sizeof(why), used, i, gpud_errmsg(c));
	}
	__atomic_store_n(&c->url, c->urls[0], __ATOMIC_RELEASE);
	return client_seterr(c, st, "none of the %d gpud endpoints answered (%s): %s", c->nurls,
			     hello == HELLO_AT_CONNECT ? "hello" : "a connection", why);
}

gpud_status gpud_connect_opts(const gpud_options *opts, gpud_client **out)
{
	return connect_opts(opts, out, HELLO_AT_CONNECT, 0);
}

gpud_status gpud_connect_deferred(const gpud_options *opts, gpud_client **out)
{
	return connect_opts(opts, out, HELLO_FIRST_CALL, 0);
}

gpud_status gpud_connect_start(const gpud_options *opts, gpud_client **out)
{
	return connect_opts(opts, out, HELLO_FIRST_CALL, 1);
}

gpud_status gpud_connect_for_status(const gpud_options *opts, gpud_client **out)
{
	return connect_opts(opts, out, HELLO_NEVER, 0);
}
