/*
 * daemon/observe.c — the monitoring endpoint: /metrics, /healthz, /readyz on
 * nng's HTTP server (see observe.h for which thread does what).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/observe.h"

typedef struct observe_pending {
	nng_aio *aio;
	struct observe_pending *next;
} observe_pending;

static const char *const state_text[] = {
	[OBSERVE_STARTING] = "not ready: starting (opening and warming the backend)\n",
	[OBSERVE_READY] = "ready\n",
	[OBSERVE_STOPPING] = "not ready: shutting down (finishing the requests in flight)\n",
	[OBSERVE_LOST] = "not ready: the GPU context is lost; gpud is exiting\n",
};

/* Finishes a handler's aio with a response (or, out of memory, an error that
 * makes nng close the connection). */
static void reply(nng_aio *aio, uint16_t code, const char *ctype, const void *body, size_t len)
{
	nng_http_res *res;
	int rv = nng_http_res_alloc(&res);
	if (rv == 0 && (rv = nng_http_res_set_status(res, code)) == 0 &&
	    (rv = nng_http_res_set_header(res, "Content-Type", ctype)) == 0 &&
	    (rv = nng_http_res_set_header(res, "Cache-Control", "no-store")) == 0)
		rv = nng_http_res_copy_data(res, body, len);
	if (rv != 0) {
		if (res)
			nng_http_res_free(res);
		nng_aio_finish(aio, rv);
		return;
	}
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

static void reply_text(nng_aio *aio, uint16_t code, const char *text)
{
	reply(aio, code, "text/plain; charset=utf-8", text, strlen(text));
}

static observe *handler_observe(nng_aio *aio)
{
	return nng_http_handler_get_data(nng_aio_get_input(aio, 1));
}

/* nng's threads */
static void on_healthz(nng_aio *aio)
{
	reply_text(aio, 200, "ok\n");
}

/* nng's threads */
static void on_readyz(nng_aio *aio)
{
	observe *o = handler_observe(aio);
	int st = atomic_load(&o->state);
	char why[512], text[600];
	if (st == OBSERVE_READY && o->why_not && o->why_not(o->why_arg, why, sizeof(why))) {
		snprintf(text, sizeof(text), "not ready: %s\n", why);
		reply_text(aio, 503, text);
		return;
	}
	reply_text(aio, st == OBSERVE_READY ? 200 : 503, state_text[st]);
}

/* nng's threads: the page is the loop's to make. */
static void on_metrics(nng_aio *aio)
{
	observe *o = handler_observe(aio);
	observe_pending *p = malloc(sizeof(*p));
	if (p == NULL) {
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	p->aio = aio;
	pthread_mutex_lock(&o->mu);
	if (o->closing) {
		pthread_mutex_unlock(&o->mu);
		free(p);
		reply_text(aio, 503, "gpud is stopping\n");
		return;
	}
	p->next = o->pending;
	o->pending = p;
	pthread_mutex_unlock(&o->mu);
	uv_async_send(&o->wake);
}

static observe_pending *take_pending(observe *o, int closing)
{
	pthread_mutex_lock(&o->mu);
	observe_pending *list = o->pending;
	o->pending = NULL;
	if (closing)
		o->closing = 1;
	pthread_mutex_unlock(&o->mu);
	return list;
}

/* The loop: renders the page once for every request waiting. */
static void on_wake(uv_async_t *h)
{
	observe *o = h->data;
	observe_pending *list = take_pending(o, 0);
	if (list == NULL)
		return;
	char *page = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&page, &len);
	if (f != NULL) {
		o->render(o->arg, f);
		if (fclose(f) != 0) {
			free(page);
			page = NULL;
		}
	}
	while (list) {
		observe_pending *next = list->next;
		if (page)
			reply(list->aio, 200, "text/plain; version=0.0.4; charset=utf-8", page,
			      len);
		else
			reply_text(list->aio, 500,
				   "gpud could not render its metrics (out of memory)\n");
		free(list);
		list = next;
	}
	free(page);
}

/* "HOST:PORT" -> "http://HOST:PORT"; host and port checked (as the config
 * was when it was read). 0 or -1 + err. */
static int listen_url(const char *listen, char *url, size_t len, int *loopback, char *err,
		      size_t errlen)
{
	if (config_check_hostport("metrics_listen", listen, err, errlen) != 0)
		return -1;
	*loopback = !strncmp(listen, "127.", 4) || !strncmp(listen, "localhost:", 10) ||
		    !strncmp(listen, "[::1]:", 6);
	snprintf(url, len, "http://%s", listen);
	return 0;
}

static int add_handler(observe *o, const char *path, void (*cb)(nng_aio *))
{
	nng_http_handler *h;
	int rv = nng_http_handler_alloc(&h, path, cb);
	if (rv != 0)
		return rv;
	if ((rv = nng_http_handler_set_method(h, "GET")) != 0 ||
	    (rv = nng_http_handler_set_data(h, o, NULL)) != 0 ||
	    (rv = nng_http_server_add_handler(o->http, h)) != 0) {
		nng_http_handler_free(h);
		return rv;
	}
	return 0;
}

/* o->addr from the bound socket (the port, when 0 was asked for). */
static void bound_addr(observe *o, const char *listen)
{
	nng_sockaddr sa;
	char ip[INET6_ADDRSTRLEN];
	snprintf(o->addr, sizeof(o->addr), "%s", listen);
	if (nng_http_server_get_addr(o->http, &sa) != 0)
		return;
	if (sa.s_family == NNG_AF_INET &&
	    inet_ntop(AF_INET, &sa.s_in.sa_addr, ip, sizeof(ip)) != NULL)
		snprintf(o->addr, sizeof(o->addr), "%s:%u", ip, ntohs(sa.s_in.sa_port));
	else if (sa.s_family == NNG_AF_INET6 &&
		 inet_ntop(AF_INET6, sa.s_in6.sa_addr, ip, sizeof(ip)) != NULL)
		snprintf(o->addr, sizeof(o->addr), "[%s]:%u", ip, ntohs(sa.s_in6.sa_port));
}

int observe_start(observe *o, uv_loop_t *loop, const char *listen,
		  void (*render)(void *arg, FILE *out), void *arg, char *err, size_t errlen)
{
	char url[160];
	nng_url *u = NULL;
	int loopback, rv;

	memset(o, 0, sizeof(*o));
	atomic_store(&o->state, OBSERVE_STARTING);
	if (listen == NULL || listen[0] == '\0')
		return 0;
	if (listen_url(listen, url, sizeof(url), &loopback, err, errlen) != 0)
		return -1;
	o->render = render;
	o->arg = arg;
	pthread_mutex_init(&o->mu, NULL);
	uv_async_init(loop, &o->wake, on_wake);
	o->wake.data = o;
	o->wake_open = 1;
	if ((rv = nng_url_parse(&u, url)) != 0 || (rv = nng_http_server_hold(&o->http, u)) != 0) {
		snprintf(err, errlen, "metrics_listen = '%s': %s", listen, nng_strerror(rv));
		goto fail;
	}
	if ((rv = add_handler(o, "/metrics", on_metrics)) != 0 ||
	    (rv = add_handler(o, "/healthz", on_healthz)) != 0 ||
	    (rv = add_handler(o, "/readyz", on_readyz)) != 0) {
		snprintf(err, errlen, "metrics_listen: adding the handlers: %s", nng_strerror(rv));
		goto fail;
	}
	if ((rv = nng_http_server_start(o->http)) != 0) {
		snprintf(err, errlen, "metrics_listen = '%s': cannot listen: %s", listen,
			 nng_strerror(rv));
		goto fail;
	}
	nng_url_free(u);
	bound_addr(o, listen);
	log_info("metrics on http://%s/metrics, health on /healthz and /readyz", o->addr);
	if (!loopback)
		log_warn("metrics_listen = '%s' is not a loopback address: whoever reaches it "
			 "reads every tenant's name and activity (the endpoint has no "
			 "authentication; keep it behind a firewall or on 127.0.0.1)",
			 listen);
	return 0;
fail:
	if (u)
		nng_url_free(u);
	observe_stop(o);
	return -1;
}

void observe_set_state(observe *o, observe_state st)
{
	atomic_store(&o->state, (int)st);
}

static void free_pending(observe_pending *list)
{
	while (list) {
		observe_pending *next = list->next;
		reply_text(list->aio, 503, "gpud is stopping\n");
		free(list);
		list = next;
	}
}

void observe_stop(observe *o)
{
	if (o->wake_open) {
		free_pending(take_pending(o, 1));
		uv_close((uv_handle_t *)&o->wake, NULL);
		o->wake_open = 0;
	}
	if (o->http) {
		/* Handlers running now answer (closing) without the loop. */
		nng_http_server_stop(o->http);
		nng_http_server_release(o->http);
		o->http = NULL;
	}
}
