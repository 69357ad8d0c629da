/*
 * client/conn.c — a client's connection: dialing ipc://, tcp:// or
 * tls+tcp://, hello, the request/reply exchange every call goes through,
 * close, and the error text and accessors of gpud/client.h.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>

#include "client/internal.h"

gpud_status client_seterr(gpud_client *c, gpud_status st, const char *fmt, ...)
{
	va_list ap;
	if (c == NULL)
		return st;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	return st;
}

const char *gpud_strerror(gpud_status s)
{
	switch (s) {
	case GPUD_OK:
		return "success";
	case GPUD_EINVAL:
		return "invalid argument";
	case GPUD_ENOTFOUND:
		return "unknown handle";
	case GPUD_EUNKNOWN_KERNEL:
		return "unknown kernel";
	case GPUD_ENOMEM:
		return "out of memory";
	case GPUD_E2BIG:
		return "too large";
	case GPUD_EUNSUPPORTED:
		return "not supported by the backend";
	case GPUD_EPROTO:
		return "protocol error";
	case GPUD_EBACKEND:
		return "backend failure";
	case GPUD_ESHUTDOWN:
		return "daemon shutting down";
	case GPUD_EINTERNAL:
		return "internal error in gpud";
	case GPUD_EQUOTA:
		return "over quota";
	case GPUD_EACCESS:
		return "not authenticated";
	case GPUD_ECONNECT:
		return "cannot connect to gpud";
	case GPUD_ETRANSPORT:
		return "transport error";
	case GPUD_ETIMEDOUT:
		return "timed out";
	case GPUD_EARG:
		return "bad argument to a client call";
	}
	return "unknown status";
}

const char *gpud_errmsg(const gpud_client *c)
{
	return c ? c->msg : "out of memory";
}

const gpud_server_info *gpud_server(const gpud_client *c)
{
	return &c->info;
}

const char *gpud_url(const gpud_client *c)
{
	return c->url;
}

void gpud_set_timeout(gpud_client *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms;
	nng_duration d = timeout_ms > 0 ? timeout_ms : NNG_DURATION_INFINITE;
	nng_socket_set_ms(c->sock, NNG_OPT_RECVTIMEO, d);
	nng_socket_set_ms(c->sock, NNG_OPT_SENDTIMEO, d);
}

gpud_status client_call(gpud_client *c, Gpud__Request *req, const void *payload, size_t plen,
			Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload, size_t *rplen)
{
	nng_msg *m;
	int rv;

	c->msg[0] = '\0';
	if (!c->open)
		return client_seterr(c, GPUD_ECONNECT, "not connected");
	if (c->info.max_message_size && plen > c->info.max_message_size)
		return client_seterr(
			c, GPUD_E2BIG,
			"a payload of %zu bytes exceeds the daemon's message size limit of "
			"%" PRIu64 " bytes (max_message_size in gpud.conf)",
			plen, c->info.max_message_size);
	req->version = GPUD_PROTOCOL_VERSION;
	req->id = ++c->next_id;
	if ((rv = wire_pack(&m, &req->base, payload, plen, NULL)) != 0)
		return client_seterr(c, GPUD_ENOMEM, "cannot build a request of %zu bytes: %s",
				     plen, nng_strerror(rv));
	return client_exchange(c, m, req->id, resp, rmsg, rpayload, rplen);
}

gpud_status client_exchange(gpud_client *c, nng_msg *m, uint64_t id, Gpud__Response **resp,
			    nng_msg **rmsg, uint8_t **rpayload, size_t *rplen)
{
	int rv;

	if ((rv = nng_sendmsg(c->sock, m, 0)) != 0) {
		nng_msg_free(m);
		return client_seterr(c, rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
				     "sending to %s: %s", c->url, nng_strerror(rv));
	}
	if ((rv = nng_recvmsg(c->sock, &m, 0)) != 0)
		return client_seterr(c, rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
				     "waiting for the reply from %s: %s", c->url, nng_strerror(rv));
	return client_take_reply(c, m, id, resp, rmsg, rpayload, rplen);
}

gpud_status client_take_reply(gpud_client *c, nng_msg *m, uint64_t id, Gpud__Response **resp,
			      nng_msg **rmsg, uint8_t **rpayload, size_t *rplen)
{
	const uint8_t *hdr;
	size_t hlen;
	uint8_t *pl;
	size_t pll;
	char err[256];

	if (wire_split(m, &hdr, &hlen, &pl, &pll, err, sizeof(err)) != 0) {
		nng_msg_free(m);
		return client_seterr(c, GPUD_EPROTO, "malformed reply: %s", err);
	}
	Gpud__Response *r = gpud__response__unpack(NULL, hlen, hdr);
	if (r == NULL) {
		nng_msg_free(m);
		return client_seterr(c, GPUD_EPROTO,
				     "malformed reply: the header is not a gpud Response");
	}
	if (r->code != GPUD__STATUS__STATUS_OK) {
		gpud_status st = (gpud_status)r->code;
		if (r->code > GPUD__STATUS__STATUS_UNAUTHENTICATED)
			st = GPUD_EPROTO;
		client_seterr(c, st, "%s",
			      r->message && r->message[0] ? r->message : gpud_strerror(st));
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return st;
	}
	if (r->id != id) {
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return client_seterr(c, GPUD_EPROTO,
				     "reply to request %" PRIu64 " answers request %" PRIu64, id,
				     r->id);
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
	}
}

size_t client_chunk_limit(const gpud_client *c)
{
	return c->info.max_message_size ? (size_t)c->info.max_message_size : SIZE_MAX;
}

/*
 * tls+tcp://: the server's certificate is checked against $GPUD_TLS_CA (a PEM
 * file) and the URL's host name ($GPUD_TLS_SERVER_NAME overrides). Returns an
 * nng error, or -1 with the message set.
 */
static int dial_tls(gpud_client *c, const char *url)
{
	const char *ca = getenv("GPUD_TLS_CA"), *name = getenv("GPUD_TLS_SERVER_NAME");
	char host[256] = "";
	nng_tls_config *tc = NULL;
	nng_dialer d;
	int rv;

	if (ca == NULL || ca[0] == '\0') {
		c->open = 0;
		nng_close(c->sock);
		client_seterr(c, GPUD_ECONNECT,
			      "%s: set GPUD_TLS_CA to the PEM file of the CA that signed gpud's "
			      "certificate",
			      url);
		return -1;
	}
	if (name == NULL || name[0] == '\0') {
		/* tls+tcp://HOST:PORT */
		const char *h = url + strlen("tls+tcp://");
		const char *colon = strrchr(h, ':');
		size_t n = colon ? (size_t)(colon - h) : strlen(h);
		snprintf(host, sizeof(host), "%.*s", (int)(n < sizeof(host) ? n : sizeof(host) - 1),
			 h);
		name = host;
	}
	if ((rv = nng_dialer_create(&d, c->sock, url)) != 0)
		return rv;
	if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_CLIENT)) == 0 &&
	    (rv = nng_tls_config_auth_mode(tc, NNG_TLS_AUTH_MODE_REQUIRED)) == 0 &&
	    (rv = nng_tls_config_server_name(tc, name)) == 0 &&
	    (rv = nng_tls_config_ca_file(tc, ca)) != 0) {
		nng_tls_config_free(tc);
		c->open = 0;
		nng_close(c->sock);
		client_seterr(c, GPUD_ECONNECT, "GPUD_TLS_CA %s: %s", ca, nng_strerror(rv));
		return -1;
	}
	if (rv == 0)
		rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tc);
	if (tc)
		nng_tls_config_free(tc);
	if (rv == 0)
		rv = nng_dialer_start(d, 0);
	return rv;
}

gpud_status gpud_connect(const char *url, gpud_client **out)
{
	gpud_client *c = calloc(1, sizeof(*c));
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__HelloRequest hello = GPUD__HELLO_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;
	int rv;

	*out = c;
	if (c == NULL)
		return GPUD_ENOMEM;
	if (url == NULL || url[0] == '\0') {
		url = getenv("GPUD_URL");
		if (url == NULL || url[0] == '\0')
			url = GPUD_DEFAULT_URL;
	}
	snprintf(c->url, sizeof(c->url), "%s", url);
	c->timeout_ms = -1;
	if ((rv = nng_req0_open(&c->sock)) != 0)
		return client_seterr(c, GPUD_ECONNECT, "nng_req0_open: %s", nng_strerror(rv));
	c->open = 1;
	/* Requests are not idempotent (alloc, run): never resend one by itself. */
	nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, 0);
	if (strncmp(url, "tls+", 4) == 0)
		rv = dial_tls(c, url);
	else
		rv = nng_dial(c->sock, url, NULL, 0);
	if (rv == -1)
		return GPUD_ECONNECT; /* dial_tls said why */
	if (rv != 0) {
		c->open = 0;
		nng_close(c->sock);
		if (rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP)
			return client_seterr(c, GPUD_ECONNECT,
					     "cannot connect to '%s': %s (expected ipc://PATH or "
					     "tcp://HOST:PORT)",
					     url, nng_strerror(rv));
		return client_seterr(c, GPUD_ECONNECT, "cannot connect to gpud at %s: %s", url,
				     nng_strerror(rv));
	}
	req.body_case = GPUD__REQUEST__BODY_HELLO;
	req.hello = &hello;
	hello.client = "libgpud-client " GPUD_VERSION;
	/* tcp:// to a gpud with tokens: the tenant's bearer token. */
	const char *tok = getenv("GPUD_TOKEN");
	if (tok && tok[0])
		hello.token = (char *)tok;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_HELLO, "hello")) != GPUD_OK)
		return st;
	Gpud__HelloResponse *h = r->hello;
	snprintf(c->info.version, sizeof(c->info.version), "%s", h->server_version);
	snprintf(c->info.backend, sizeof(c->info.backend), "%s", h->backend);
	c->info.protocol_version = h->protocol_version;
	c->info.max_message_size = h->max_message_size;
	c->info.connection = h->connection;
	snprintf(c->info.tenant, sizeof(c->info.tenant), "%s", h->tenant ? h->tenant : "");
	client_copy_devices(&c->info, h->devices, h->n_devices);
	if (h->shm_socket && h->shm_socket[0] && h->session_key.len == GPUD_SHM_KEY_LEN &&
	    strlen(h->shm_socket) < sizeof(c->shm_path) && !getenv("GPUD_NO_SHM")) {
		snprintf(c->shm_path, sizeof(c->shm_path), "%s", h->shm_socket);
		memcpy(c->key, h->session_key.data, GPUD_SHM_KEY_LEN);
	}
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

void gpud_close(gpud_client *c)
{
	if (c == NULL)
		return;
	if (c->ar_open)
		for (int i = 0; i < 2; i++) {
			nng_aio_stop(c->ar[i].aio);
			nng_aio_free(c->ar[i].aio);
		}
	if (c->open)
		nng_close(c->sock); /* gpud drops the connection's regions */
	for (size_t i = 0; i < c->nregions; i++)
		munmap(c->regions[i].base, c->regions[i].size);
	if (c->scratch.base)
		munmap(c->scratch.base, c->scratch.size);
	free(c->regions);
	free(c);
}
