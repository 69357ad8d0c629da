/*
 * client/client.c — libgpud-client: the only code that speaks gpud's
 * protocol. One nng REQ socket per client; each call is one request and one
 * reply. Array bytes go straight from the caller's memory into the request
 * message and from the reply message into the caller's memory: one copy each
 * way in user space, none through protobuf.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>

#include <gpud/client.h>

#include "proto/shm.h"
#include "proto/wire.h"

/* Transfers from ordinary memory of at least this many bytes go through a
 * host region (ipc:// only); smaller ones ride in the message. */
#define SHM_MIN (1u << 20)
/* The scratch region those transfers bounce through. */
#define SCRATCH_MAX (64u << 20)

typedef struct region {
	void *base;
	size_t size;
	uint64_t id;
} region;

struct gpud_client {
	nng_socket sock;
	int open;
	char url[1024];
	uint64_t next_id;
	gpud_server_info info;
	int timeout_ms;
	int keep;           /* gpud_set_keep */
	char shm_path[108]; /* "" when gpud offers no regions on this connection */
	uint8_t key[GPUD_SHM_KEY_LEN];
	region *regions;
	size_t nregions, cap;
	region scratch; /* base NULL until needed */
	/* Two requests in flight on contexts of their own: the scratch region's
	 * halves are filled (or emptied) while the other half's copy runs. */
	struct async_req {
		nng_ctx ctx;
		nng_aio *aio;
		uint64_t id;
		int busy;
	} ar[2];
	int ar_open;
	char msg[2048];
};

static gpud_status seterr(gpud_client *c, gpud_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static gpud_status seterr(gpud_client *c, gpud_status st, const char *fmt, ...)
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

static gpud_status exchange(gpud_client *c, nng_msg *m, uint64_t id, Gpud__Response **resp,
			    nng_msg **rmsg, uint8_t **rpayload, size_t *rplen);

/*
 * One round trip. On GPUD_OK, *resp is the unpacked reply (free with
 * gpud__response__free_unpacked) and, if rmsg is non-NULL, *rmsg holds the
 * reply message whose payload is at *payload.
 */
static gpud_status call(gpud_client *c, Gpud__Request *req, const void *payload, size_t plen,
			Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload, size_t *rplen)
{
	nng_msg *m;
	int rv;

	c->msg[0] = '\0';
	if (!c->open)
		return seterr(c, GPUD_ECONNECT, "not connected");
	if (c->info.max_message_size && plen > c->info.max_message_size)
		return seterr(c, GPUD_E2BIG,
			      "a payload of %zu bytes exceeds the daemon's message size limit of "
			      "%" PRIu64 " bytes (max_message_size in gpud.conf)",
			      plen, c->info.max_message_size);
	req->version = GPUD_PROTOCOL_VERSION;
	req->id = ++c->next_id;
	if ((rv = wire_pack(&m, &req->base, payload, plen, NULL)) != 0)
		return seterr(c, GPUD_ENOMEM, "cannot build a request of %zu bytes: %s", plen,
			      nng_strerror(rv));
	return exchange(c, m, req->id, resp, rmsg, rpayload, rplen);
}

/* Sends a packed request (taking m) and receives its reply, as call() does. */
static gpud_status take_reply(gpud_client *c, nng_msg *m, uint64_t id, Gpud__Response **resp,
			      nng_msg **rmsg, uint8_t **rpayload, size_t *rplen);

static gpud_status exchange(gpud_client *c, nng_msg *m, uint64_t id, Gpud__Response **resp,
			    nng_msg **rmsg, uint8_t **rpayload, size_t *rplen)
{
	int rv;

	if ((rv = nng_sendmsg(c->sock, m, 0)) != 0) {
		nng_msg_free(m);
		return seterr(c, rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
			      "sending to %s: %s", c->url, nng_strerror(rv));
	}
	if ((rv = nng_recvmsg(c->sock, &m, 0)) != 0)
		return seterr(c, rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
			      "waiting for the reply from %s: %s", c->url, nng_strerror(rv));
	return take_reply(c, m, id, resp, rmsg, rpayload, rplen);
}

/* Checks and unpacks a reply message (taking m), as exchange() returns it. */
static gpud_status take_reply(gpud_client *c, nng_msg *m, uint64_t id, Gpud__Response **resp,
			      nng_msg **rmsg, uint8_t **rpayload, size_t *rplen)
{
	const uint8_t *hdr;
	size_t hlen;
	uint8_t *pl;
	size_t pll;
	char err[256];

	if (wire_split(m, &hdr, &hlen, &pl, &pll, err, sizeof(err)) != 0) {
		nng_msg_free(m);
		return seterr(c, GPUD_EPROTO, "malformed reply: %s", err);
	}
	Gpud__Response *r = gpud__response__unpack(NULL, hlen, hdr);
	if (r == NULL) {
		nng_msg_free(m);
		return seterr(c, GPUD_EPROTO, "malformed reply: the header is not a gpud Response");
	}
	if (r->code != GPUD__STATUS__STATUS_OK) {
		gpud_status st = (gpud_status)r->code;
		if (r->code > GPUD__STATUS__STATUS_UNAUTHENTICATED)
			st = GPUD_EPROTO;
		seterr(c, st, "%s", r->message && r->message[0] ? r->message : gpud_strerror(st));
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return st;
	}
	if (r->id != id) {
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return seterr(c, GPUD_EPROTO,
			      "reply to request %" PRIu64 " answers request %" PRIu64, id, r->id);
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

/* Expects the reply body `want`; frees and fails otherwise. */
static gpud_status expect_body(gpud_client *c, Gpud__Response *r, Gpud__Response__BodyCase want,
			       const char *verb)
{
	if (r->body_case == want)
		return GPUD_OK;
	gpud__response__free_unpacked(r, NULL);
	return seterr(c, GPUD_EPROTO, "%s: the reply has no %s body", verb, verb);
}

static void copy_devices(gpud_server_info *info, Gpud__Device **devs, size_t n)
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
		seterr(c, GPUD_ECONNECT,
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
		seterr(c, GPUD_ECONNECT, "GPUD_TLS_CA %s: %s", ca, nng_strerror(rv));
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
		return seterr(c, GPUD_ECONNECT, "nng_req0_open: %s", nng_strerror(rv));
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
			return seterr(c, GPUD_ECONNECT,
				      "cannot connect to '%s': %s (expected ipc://PATH or "
				      "tcp://HOST:PORT)",
				      url, nng_strerror(rv));
		return seterr(c, GPUD_ECONNECT, "cannot connect to gpud at %s: %s", url,
			      nng_strerror(rv));
	}
	req.body_case = GPUD__REQUEST__BODY_HELLO;
	req.hello = &hello;
	hello.client = "libgpud-client " GPUD_VERSION;
	/* tcp:// to a gpud with tokens: the tenant's bearer token. */
	const char *tok = getenv("GPUD_TOKEN");
	if (tok && tok[0])
		hello.token = (char *)tok;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = expect_body(c, r, GPUD__RESPONSE__BODY_HELLO, "hello")) != GPUD_OK)
		return st;
	Gpud__HelloResponse *h = r->hello;
	snprintf(c->info.version, sizeof(c->info.version), "%s", h->server_version);
	snprintf(c->info.backend, sizeof(c->info.backend), "%s", h->backend);
	c->info.protocol_version = h->protocol_version;
	c->info.max_message_size = h->max_message_size;
	c->info.connection = h->connection;
	snprintf(c->info.tenant, sizeof(c->info.tenant), "%s", h->tenant ? h->tenant : "");
	copy_devices(&c->info, h->devices, h->n_devices);
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

/* --- host regions (proto/shm.h) ------------------------------------------------ */

void gpud_set_keep(gpud_client *c, int keep)
{
	c->keep = keep != 0;
}

gpud_status gpud_list(gpud_client *c, gpud_buffer_info **out, size_t *n)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__ListRequest l = GPUD__LIST_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	*out = NULL;
	*n = 0;
	req.body_case = GPUD__REQUEST__BODY_LIST;
	req.list = &l;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = expect_body(c, r, GPUD__RESPONSE__BODY_LIST, "list")) != GPUD_OK)
		return st;
	size_t k = r->list->n_buffers;
	gpud_buffer_info *v = calloc(k ? k : 1, sizeof(*v));
	if (v == NULL) {
		gpud__response__free_unpacked(r, NULL);
		return seterr(c, GPUD_ENOMEM, "list: out of memory");
	}
	for (size_t i = 0; i < k; i++) {
		Gpud__BufferInfo *b = r->list->buffers[i];
		v[i].handle = b->handle;
		v[i].dtype = (gpud_dtype)b->dtype;
		v[i].ndim = b->n_shape <= GPUD_MAX_DIMS ? (int)b->n_shape : 0;
		if (v[i].ndim)
			memcpy(v[i].shape, b->shape, (size_t)v[i].ndim * sizeof(uint64_t));
		v[i].nbytes = gpud_shape_bytes(v[i].shape, v[i].ndim, gpud_dtype_size(v[i].dtype));
		v[i].kept = b->kept;
	}
	gpud__response__free_unpacked(r, NULL);
	*out = v;
	*n = k;
	return GPUD_OK;
}

int gpud_has_shm(const gpud_client *c)
{
	return c && c->shm_path[0] != '\0';
}

/*
 * A sealed memfd of size bytes, mapped here and registered with gpud
 * (pinned there if pin). GPUD_OK with *out filled, or an error.
 */
static gpud_status region_make(gpud_client *c, size_t size, int pin, region *out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	shm_register msg;
	shm_reply rep;
	int fd, sock = -1;
	gpud_status st = GPUD_OK;
	void *base = MAP_FAILED;

	if (!gpud_has_shm(c))
		return seterr(c, GPUD_EUNSUPPORTED,
			      "shared host memory needs an ipc:// connection to a gpud that offers "
			      "it (%s)",
			      c->url);
	long page = sysconf(_SC_PAGESIZE);
	if (size == 0 || size > SIZE_MAX - (size_t)page)
		return seterr(c, GPUD_EARG, "gpud_host_alloc: cannot share %zu bytes", size);
	size = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
	if ((fd = memfd_create("gpud-region", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0)
		return seterr(c, GPUD_ENOMEM, "memfd_create: %s", strerror(errno));
	/* Sealed against shrinking, so gpud's mapping can never fault. */
	if (ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		st = seterr(c, GPUD_ENOMEM, "sizing a %zu-byte memfd: %s", size, strerror(errno));
		goto out;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		st = seterr(c, GPUD_ENOMEM, "mapping a %zu-byte memfd: %s", size, strerror(errno));
		goto out;
	}
	memset(&msg, 0, sizeof(msg));
	memcpy(msg.magic, GPUD_SHM_MAGIC, sizeof(msg.magic));
	memcpy(msg.key, c->key, sizeof(msg.key));
	msg.size = size;
	msg.flags = pin ? GPUD_SHM_PIN : 0;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	memset(&cbuf, 0, sizeof(cbuf));
	struct iovec iov = {.iov_base = &msg, .iov_len = sizeof(msg)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf.buf,
			    .msg_controllen = sizeof(cbuf.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	memcpy(sa.sun_path, c->shm_path, strlen(c->shm_path) + 1);
	if ((sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(sock, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		st = seterr(c, GPUD_ECONNECT, "region socket %s: %s", c->shm_path, strerror(errno));
		goto out;
	}
	if (c->timeout_ms > 0) {
		struct timeval tv = {.tv_sec = c->timeout_ms / 1000,
				     .tv_usec = (c->timeout_ms % 1000) * 1000};
		setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(msg)) {
		st = seterr(c, GPUD_ETRANSPORT, "region socket %s: send: %s", c->shm_path,
			    strerror(errno));
		goto out;
	}
	ssize_t n = recv(sock, &rep, sizeof(rep), 0);
	if (n != (ssize_t)sizeof(rep)) {
		st = seterr(c, n < 0 && errno == EAGAIN ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
			    "region socket %s: no reply (%s)", c->shm_path,
			    n < 0 ? strerror(errno) : "connection closed");
		goto out;
	}
	rep.message[sizeof(rep.message) - 1] = '\0';
	if (rep.status != 0) {
		st = seterr(c,
			    rep.status > GPUD__STATUS__STATUS_UNAUTHENTICATED
				    ? GPUD_EPROTO
				    : (gpud_status)rep.status,
			    "gpud refused the host region: %s", rep.message);
		goto out;
	}
	*out = (region){.base = base, .size = size, .id = rep.region};
	base = MAP_FAILED; /* kept */
out:
	if (base != MAP_FAILED)
		munmap(base, size);
	if (sock >= 0)
		close(sock);
	close(fd);
	return st;
}

static gpud_status region_unmap(gpud_client *c, uint64_t id)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UnmapRequest u = GPUD__UNMAP_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	u.n_regions = 1;
	u.regions = &id;
	req.body_case = GPUD__REQUEST__BODY_UNMAP;
	req.unmap = &u;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

void *gpud_host_alloc(gpud_client *c, size_t bytes)
{
	region rg;
	if (c == NULL)
		return NULL;
	c->msg[0] = '\0';
	if (c->nregions == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 8;
		region *nr = realloc(c->regions, ncap * sizeof(*nr));
		if (nr == NULL) {
			seterr(c, GPUD_ENOMEM, "gpud_host_alloc: out of memory");
			return NULL;
		}
		c->regions = nr;
		c->cap = ncap;
	}
	if (region_make(c, bytes, 1, &rg) != GPUD_OK)
		return NULL;
	c->regions[c->nregions++] = rg;
	return rg.base;
}

gpud_status gpud_host_free(gpud_client *c, void *p)
{
	for (size_t i = 0; i < c->nregions; i++) {
		if (c->regions[i].base != p)
			continue;
		region rg = c->regions[i];
		c->regions[i] = c->regions[--c->nregions];
		gpud_status st = region_unmap(c, rg.id);
		munmap(rg.base, rg.size);
		return st;
	}
	return seterr(c, GPUD_EARG, "gpud_host_free: %p is not from gpud_host_alloc", p);
}

/* The region holding [p, p+len), or NULL. */
static const region *region_of(const gpud_client *c, const void *p, size_t len, uint64_t *off)
{
	for (size_t i = 0; i < c->nregions; i++) {
		const region *rg = &c->regions[i];
		const char *b = rg->base;
		if ((const char *)p >= b && (size_t)((const char *)p - b) <= rg->size &&
		    len <= rg->size - (size_t)((const char *)p - b)) {
			*off = (uint64_t)((const char *)p - b);
			return rg;
		}
	}
	return NULL;
}

/* The pinned scratch region, at least want bytes (up to SCRATCH_MAX). */
static gpud_status scratch(gpud_client *c, size_t want)
{
	if (want > SCRATCH_MAX)
		want = SCRATCH_MAX;
	if (c->scratch.base && c->scratch.size >= want)
		return GPUD_OK;
	if (c->scratch.base) {
		region old = c->scratch;
		c->scratch.base = NULL;
		munmap(old.base, old.size);
		gpud_status st = region_unmap(c, old.id);
		if (st != GPUD_OK)
			return st;
	}
	/* Grown in steps, so a run of growing transfers pins a few times at most. */
	size_t size = 1u << 20;
	while (size < want)
		size *= 4;
	if (size > SCRATCH_MAX)
		size = SCRATCH_MAX;
	return region_make(c, size, 1, &c->scratch);
}

/* --- buffers ------------------------------------------------------------------ */

/* The handle an alloc reply carries; frees the reply. */
static gpud_status alloc_reply(gpud_client *c, Gpud__Response *r, gpud_handle *out)
{
	gpud_status st = expect_body(c, r, GPUD__RESPONSE__BODY_ALLOC, "alloc");
	if (st != GPUD_OK)
		return st;
	if (r->alloc->buffer == NULL)
		st = seterr(c, GPUD_EPROTO, "alloc: the reply has no buffer description");
	else
		*out = r->alloc->buffer->handle;
	gpud__response__free_unpacked(r, NULL);
	return st;
}

/* The most payload one request may carry: what the daemon said in hello. */
static size_t chunk_limit(const gpud_client *c)
{
	return c->info.max_message_size ? (size_t)c->info.max_message_size : SIZE_MAX;
}

gpud_status gpud_alloc(gpud_client *c, gpud_dtype dtype, int ndim, const uint64_t *shape,
		       const void *data, gpud_handle *out)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (ndim < 0 || ndim > GPUD_MAX_DIMS || (ndim > 0 && shape == NULL))
		return seterr(c, GPUD_EARG, "gpud_alloc: ndim must be 0 to %d with a shape, got %d",
			      GPUD_MAX_DIMS, ndim);
	size_t esize = gpud_dtype_size(dtype);
	if (esize == 0)
		return seterr(c, GPUD_EARG, "gpud_alloc: dtype %d is not a gpud_dtype", (int)dtype);
	size_t nbytes = gpud_shape_bytes(shape, ndim, esize);
	if (nbytes == SIZE_MAX)
		return seterr(c, GPUD_E2BIG, "gpud_alloc: the shape overflows size_t");
	/* Data in a host region is named, not sent. Other data that fits goes
	 * with the alloc; more (or, over ipc://, 1 MiB and up) is uploaded after. */
	Gpud__HostRef from = GPUD__HOST_REF__INIT;
	uint64_t roff = 0;
	const region *rg = data && nbytes ? region_of(c, data, nbytes, &roff) : NULL;
	int inline_data = data != NULL && rg == NULL && nbytes <= chunk_limit(c) &&
			  !(gpud_has_shm(c) && nbytes >= SHM_MIN);
	a.dtype = (Gpud__DType)dtype;
	a.n_shape = (size_t)ndim;
	a.shape = (uint64_t *)shape;
	a.with_data = inline_data;
	a.keep = c->keep;
	if (rg) {
		from.region = rg->id;
		from.offset = roff;
		a.from = &from;
		data = NULL; /* sent already */
	}
	req.body_case = GPUD__REQUEST__BODY_ALLOC;
	req.alloc = &a;
	if ((st = call(c, &req, data, inline_data ? nbytes : 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud_handle h;
	if ((st = alloc_reply(c, r, &h)) != GPUD_OK)
		return st;
	if (data != NULL && !inline_data && (st = gpud_upload(c, h, 0, data, nbytes)) != GPUD_OK) {
		char msg[sizeof(c->msg)];
		memcpy(msg, c->msg, sizeof(msg));
		gpud_free(c, &h, 1); /* keep the upload's error, not the free's */
		memcpy(c->msg, msg, sizeof(msg));
		return st;
	}
	*out = h;
	return GPUD_OK;
}

static gpud_status upload_one(gpud_client *c, gpud_handle h, uint64_t offset, const void *data,
			      size_t len)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UploadRequest u = GPUD__UPLOAD_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	u.handle = h;
	u.offset = offset;
	req.body_case = GPUD__REQUEST__BODY_UPLOAD;
	req.upload = &u;
	if ((st = call(c, &req, data, len, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

/* One request: len bytes at offset roff of region rg into h at offset. */
static gpud_status upload_region(gpud_client *c, gpud_handle h, uint64_t offset, const region *rg,
				 uint64_t roff, size_t len)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UploadRequest u = GPUD__UPLOAD_REQUEST__INIT;
	Gpud__HostRef from = GPUD__HOST_REF__INIT;
	Gpud__Response *r;
	gpud_status st;

	from.region = rg->id;
	from.offset = roff;
	u.handle = h;
	u.offset = offset;
	u.from = &from;
	u.length = len;
	req.body_case = GPUD__REQUEST__BODY_UPLOAD;
	req.upload = &u;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

typedef struct async_req async_req;

static gpud_status async_open(gpud_client *c)
{
	int rv;
	if (c->ar_open)
		return GPUD_OK;
	for (int i = 0; i < 2; i++) {
		if ((rv = nng_ctx_open(&c->ar[i].ctx, c->sock)) != 0 ||
		    (rv = nng_aio_alloc(&c->ar[i].aio, NULL, NULL)) != 0) {
			if (i == 1) {
				nng_aio_free(c->ar[0].aio);
				nng_ctx_close(c->ar[0].ctx);
			}
			return seterr(c, GPUD_ENOMEM, "nng context: %s", nng_strerror(rv));
		}
		nng_ctx_set_ms(c->ar[i].ctx, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
		c->ar[i].busy = 0;
	}
	c->ar_open = 1;
	return GPUD_OK;
}

/* Sends req on a's context and starts waiting for its reply. */
static gpud_status async_send(gpud_client *c, async_req *a, Gpud__Request *req)
{
	nng_msg *m;
	int rv;
	req->version = GPUD_PROTOCOL_VERSION;
	req->id = a->id = ++c->next_id;
	if ((rv = wire_pack(&m, &req->base, NULL, 0, NULL)) != 0)
		return seterr(c, GPUD_ENOMEM, "cannot build a request: %s", nng_strerror(rv));
	nng_aio_set_timeout(a->aio, c->timeout_ms > 0 ? c->timeout_ms : NNG_DURATION_INFINITE);
	nng_aio_set_msg(a->aio, m);
	nng_ctx_send(a->ctx, a->aio);
	nng_aio_wait(a->aio);
	if ((rv = nng_aio_result(a->aio)) != 0) {
		nng_msg_free(m);
		return seterr(c, rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
			      "sending to %s: %s", c->url, nng_strerror(rv));
	}
	nng_ctx_recv(a->ctx, a->aio);
	a->busy = 1;
	return GPUD_OK;
}

/* Waits for a's reply (if one is due); GPUD_OK if it says OK. */
static gpud_status async_wait(gpud_client *c, async_req *a)
{
	Gpud__Response *r;
	int rv;
	if (!a->busy)
		return GPUD_OK;
	a->busy = 0;
	nng_aio_wait(a->aio);
	if ((rv = nng_aio_result(a->aio)) != 0)
		return seterr(c, rv == NNG_ETIMEDOUT ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
			      "waiting for the reply from %s: %s", c->url, nng_strerror(rv));
	gpud_status st = take_reply(c, nng_aio_get_msg(a->aio), a->id, &r, NULL, NULL, NULL);
	if (st == GPUD_OK)
		gpud__response__free_unpacked(r, NULL);
	return st;
}

/* Waits for both; the first error wins. */
static gpud_status async_drain(gpud_client *c, gpud_status st)
{
	char msg[sizeof(c->msg)];
	memcpy(msg, c->msg, sizeof(msg));
	for (int i = 0; i < 2; i++) {
		gpud_status s2 = async_wait(c, &c->ar[i]);
		if (st == GPUD_OK)
			st = s2;
		else
			memcpy(c->msg, msg, sizeof(msg));
	}
	return st;
}

/* An upload or download of n bytes between h at offset and the scratch region at roff. */
static void scratch_request(gpud_client *c, int upload, gpud_handle h, uint64_t offset,
			    uint64_t roff, size_t n, Gpud__Request *req, Gpud__UploadRequest *u,
			    Gpud__DownloadRequest *d, Gpud__HostRef *ref)
{
	gpud__request__init(req);
	gpud__host_ref__init(ref);
	ref->region = c->scratch.id;
	ref->offset = roff;
	if (upload) {
		gpud__upload_request__init(u);
		u->handle = h;
		u->offset = offset;
		u->from = ref;
		u->length = n;
		req->body_case = GPUD__REQUEST__BODY_UPLOAD;
		req->upload = u;
	} else {
		gpud__download_request__init(d);
		d->handle = h;
		d->offset = offset;
		d->length = n;
		d->to = ref;
		req->body_case = GPUD__REQUEST__BODY_DOWNLOAD;
		req->download = d;
	}
}

/*
 * Ordinary memory through the scratch region, double-buffered: while gpud
 * copies one half to (or from) the device, this thread fills (or empties)
 * the other.
 */
static gpud_status bounce(gpud_client *c, int upload, gpud_handle h, uint64_t offset, char *mem,
			  size_t len)
{
	Gpud__Request req;
	Gpud__UploadRequest u;
	Gpud__DownloadRequest d;
	Gpud__HostRef ref;
	gpud_status st;
	size_t half = c->scratch.size / 2;
	size_t nchunks = (len + half - 1) / half;

	if ((st = async_open(c)) != GPUD_OK)
		return st;
	if (upload) {
		for (size_t k = 0; k < nchunks; k++) {
			async_req *a = &c->ar[k % 2];
			size_t off = k * half, n = len - off < half ? len - off : half;
			if ((st = async_wait(c, a)) != GPUD_OK)
				return async_drain(c, st);
			memcpy((char *)c->scratch.base + (k % 2) * half, mem + off, n);
			scratch_request(c, 1, h, offset + off, (k % 2) * half, n, &req, &u, &d,
					&ref);
			if ((st = async_send(c, a, &req)) != GPUD_OK)
				return async_drain(c, st);
		}
		return async_drain(c, GPUD_OK);
	}
	/* Downloads: chunk k+1 is requested before chunk k is copied out. */
	for (size_t k = 0; k <= nchunks; k++) {
		if (k < nchunks) {
			size_t off = k * half, n = len - off < half ? len - off : half;
			scratch_request(c, 0, h, offset + off, (k % 2) * half, n, &req, &u, &d,
					&ref);
			if ((st = async_send(c, &c->ar[k % 2], &req)) != GPUD_OK)
				return async_drain(c, st);
		}
		if (k > 0) {
			size_t j = k - 1, off = j * half, n = len - off < half ? len - off : half;
			if ((st = async_wait(c, &c->ar[j % 2])) != GPUD_OK)
				return async_drain(c, st);
			memcpy(mem + off, (char *)c->scratch.base + (j % 2) * half, n);
		}
	}
	return GPUD_OK;
}

/*
 * From a host region: one request. From other memory over ipc:// (1 MiB and
 * up): through the scratch region. Otherwise in message-sized pieces.
 */
gpud_status gpud_upload(gpud_client *c, gpud_handle h, uint64_t offset, const void *data,
			size_t len)
{
	size_t limit = chunk_limit(c), done = 0;
	uint64_t roff;
	const region *rg;
	gpud_status st;

	if (data == NULL && len > 0)
		return seterr(c, GPUD_EARG, "gpud_upload: data is NULL");
	if (len > 0 && (rg = region_of(c, data, len, &roff)) != NULL)
		return upload_region(c, h, offset, rg, roff, len);
	if (gpud_has_shm(c) && len >= SHM_MIN && scratch(c, len) == GPUD_OK)
		return bounce(c, 1, h, offset, (char *)data, len);
	c->msg[0] = '\0'; /* a scratch region refused: messages still work */
	do {
		size_t n = len - done < limit ? len - done : limit;
		if ((st = upload_one(c, h, offset + done, (const char *)data + done, n)) != GPUD_OK)
			return st;
		done += n;
	} while (done < len);
	return GPUD_OK;
}

/* Builds the alloc request once the .npy header is known; data goes into it. */
struct npy_req {
	gpud_client *c;
	nng_msg *msg;
	uint64_t id;
	gpud_status st;
	void *big;  /* more than one message: read here, then uploaded in pieces */
	region tmp; /* or read into this region (base NULL if not) */
};

static void *npy_into_request(void *ctx, const gpud_array *meta)
{
	struct npy_req *nr = ctx;
	gpud_client *c = nr->c;
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	void *payload;

	/* Over ipc://, a big file is read straight into a region gpud maps; not
	 * pinned: pinning costs more than it saves for one copy. */
	if (gpud_has_shm(c) && meta->nbytes >= SHM_MIN &&
	    region_make(c, meta->nbytes, 0, &nr->tmp) == GPUD_OK)
		return nr->tmp.base;
	c->msg[0] = '\0';
	if (meta->nbytes > chunk_limit(c))
		return nr->big = malloc(meta->nbytes);
	a.dtype = (Gpud__DType)meta->dtype;
	a.n_shape = (size_t)meta->ndim;
	a.shape = (uint64_t *)meta->shape;
	a.with_data = 1;
	a.keep = c->keep;
	req.body_case = GPUD__REQUEST__BODY_ALLOC;
	req.alloc = &a;
	req.version = GPUD_PROTOCOL_VERSION;
	req.id = nr->id = ++c->next_id;
	if (wire_pack(&nr->msg, &req.base, NULL, meta->nbytes, &payload) != 0) {
		nr->st = seterr(c, GPUD_ENOMEM, "cannot build a request of %zu bytes",
				meta->nbytes);
		return NULL;
	}
	return meta->nbytes ? payload : (void *)nng_msg_body(nr->msg);
}

/* An alloc whose contents are the start of region rg. */
static gpud_status alloc_from_region(gpud_client *c, const gpud_array *arr, const region *rg,
				     gpud_handle *out)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	Gpud__HostRef from = GPUD__HOST_REF__INIT;
	Gpud__Response *r;
	gpud_status st;

	from.region = rg->id;
	a.dtype = (Gpud__DType)arr->dtype;
	a.n_shape = (size_t)arr->ndim;
	a.shape = (uint64_t *)arr->shape;
	a.from = &from;
	a.keep = c->keep;
	req.body_case = GPUD__REQUEST__BODY_ALLOC;
	req.alloc = &a;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	return alloc_reply(c, r, out);
}

gpud_status gpud_alloc_npy(gpud_client *c, const char *path, gpud_handle *out, gpud_array *meta)
{
	struct npy_req nr = {.c = c, .st = GPUD_OK};
	gpud_array arr;
	Gpud__Response *r;
	char err[1024];
	gpud_status st;

	c->msg[0] = '\0';
	int lrv = gpud_npy_load_into(path, npy_into_request, &nr, &arr, err, sizeof(err));
	if (nr.tmp.base) {
		/* Allocated from the region, then the region goes. */
		st = lrv != 0 ? (nr.st != GPUD_OK ? nr.st : seterr(c, GPUD_EARG, "%s", err))
			      : alloc_from_region(c, &arr, &nr.tmp, out);
		char msg[sizeof(c->msg)];
		memcpy(msg, c->msg, sizeof(msg));
		region_unmap(c, nr.tmp.id);
		munmap(nr.tmp.base, nr.tmp.size);
		memcpy(c->msg, msg, sizeof(msg));
		if (st == GPUD_OK && meta) {
			*meta = arr;
			meta->data = NULL;
		}
		return st;
	}
	if (lrv != 0) {
		if (nr.msg)
			nng_msg_free(nr.msg);
		free(nr.big);
		if (nr.st != GPUD_OK)
			return nr.st;
		return seterr(c, GPUD_EARG, "%s", err);
	}
	if (nr.big) {
		st = gpud_alloc(c, arr.dtype, arr.ndim, arr.shape, nr.big, out);
		free(nr.big);
		if (st == GPUD_OK && meta) {
			*meta = arr;
			meta->data = NULL;
		}
		return st;
	}
	if ((st = exchange(c, nr.msg, nr.id, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = alloc_reply(c, r, out)) != GPUD_OK)
		return st;
	if (meta) {
		*meta = arr;
		meta->data = NULL;
	}
	return GPUD_OK;
}

/* Downloads [offset, offset+len) (len 0: to the end); the reply stays in *m. */
static gpud_status download(gpud_client *c, gpud_handle h, uint64_t offset, uint64_t len,
			    Gpud__Response **r, nng_msg **m, uint8_t **pl, size_t *pll)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	gpud_status st;

	d.handle = h;
	d.offset = offset;
	d.length = len;
	/* Over ipc://, the first piece of a big buffer is kept small: the rest
	 * comes through the scratch region. */
	if (len == 0 && gpud_has_shm(c))
		d.max_length = SHM_MIN;
	req.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	req.download = &d;
	if ((st = call(c, &req, NULL, 0, r, m, pl, pll)) != GPUD_OK)
		return st;
	if ((*r)->body_case != GPUD__RESPONSE__BODY_DOWNLOAD || (*r)->download->buffer == NULL) {
		gpud__response__free_unpacked(*r, NULL);
		nng_msg_free(*m);
		return seterr(c, GPUD_EPROTO, "download: the reply has no buffer description");
	}
	return GPUD_OK;
}

/*
 * The first piece of a whole-buffer download: the reply says the buffer's
 * dtype and shape (into *meta, data NULL) and carries as much as one message
 * may; the caller fetches the rest with gpud_download_range.
 */
static gpud_status download_first(gpud_client *c, gpud_handle h, gpud_array *meta,
				  Gpud__Response **r, nng_msg **m, uint8_t **pl, size_t *pll)
{
	gpud_status st;

	memset(meta, 0, sizeof(*meta));
	if ((st = download(c, h, 0, 0, r, m, pl, pll)) != GPUD_OK)
		return st;
	Gpud__BufferInfo *b = (*r)->download->buffer;
	size_t esize = gpud_dtype_size((gpud_dtype)b->dtype);
	size_t total = b->n_shape <= GPUD_MAX_DIMS
			       ? gpud_shape_bytes(b->shape, (int)b->n_shape, esize)
			       : SIZE_MAX;
	if (esize == 0 || total == SIZE_MAX || *pll > total) {
		gpud__response__free_unpacked(*r, NULL);
		nng_msg_free(*m);
		return seterr(
			c, GPUD_EPROTO,
			"download: %zu payload bytes do not match the buffer's dtype and shape",
			*pll);
	}
	meta->dtype = (gpud_dtype)b->dtype;
	meta->ndim = (int)b->n_shape;
	if (b->n_shape) /* protobuf-c gives NULL for an empty shape (0-d) */
		memcpy(meta->shape, b->shape, b->n_shape * sizeof(uint64_t));
	meta->nbytes = total;
	return GPUD_OK;
}

/* Into out->data (malloc'd, total bytes): the first piece, then the rest. */
static gpud_status download_whole(gpud_client *c, gpud_handle h, gpud_array *out)
{
	Gpud__Response *r;
	nng_msg *m;
	uint8_t *pl;
	size_t pll;
	gpud_status st;

	if ((st = download_first(c, h, out, &r, &m, &pl, &pll)) != GPUD_OK)
		return st;
	if ((out->data = malloc(out->nbytes ? out->nbytes : 1)) == NULL)
		st = seterr(c, GPUD_ENOMEM, "download: cannot allocate %zu bytes", out->nbytes);
	else
		memcpy(out->data, pl, pll);
	gpud__response__free_unpacked(r, NULL);
	nng_msg_free(m);
	if (st == GPUD_OK && pll < out->nbytes)
		st = gpud_download_range(c, h, pll, (char *)out->data + pll, out->nbytes - pll);
	if (st != GPUD_OK)
		gpud_array_free(out);
	return st;
}

gpud_status gpud_download(gpud_client *c, gpud_handle h, gpud_array *out)
{
	return download_whole(c, h, out);
}

gpud_status gpud_download_npy(gpud_client *c, gpud_handle h, const char *path)
{
	Gpud__Response *r;
	nng_msg *m;
	uint8_t *pl;
	size_t pll;
	char err[1024];
	gpud_status st;

	gpud_array view;
	if ((st = download_first(c, h, &view, &r, &m, &pl, &pll)) != GPUD_OK)
		return st;
	if (pll == view.nbytes) {
		view.data = pl; /* one message: written to the file straight from the reply */
		if (gpud_npy_save(path, &view, err, sizeof(err)) != 0)
			st = seterr(c, GPUD_EARG, "%s", err);
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return st;
	}
	gpud__response__free_unpacked(r, NULL);
	nng_msg_free(m);
	/* Larger than a message: gather the pieces, then write. */
	if ((st = download_whole(c, h, &view)) != GPUD_OK)
		return st;
	if (gpud_npy_save(path, &view, err, sizeof(err)) != 0)
		st = seterr(c, GPUD_EARG, "%s", err);
	gpud_array_free(&view);
	return st;
}

/* One request: len bytes of h at offset into region rg at roff. */
static gpud_status download_region(gpud_client *c, gpud_handle h, uint64_t offset, const region *rg,
				   uint64_t roff, size_t len)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	Gpud__HostRef to = GPUD__HOST_REF__INIT;
	Gpud__Response *r;
	gpud_status st;

	to.region = rg->id;
	to.offset = roff;
	d.handle = h;
	d.offset = offset;
	d.length = len;
	d.to = &to;
	req.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	req.download = &d;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

gpud_status gpud_download_range(gpud_client *c, gpud_handle h, uint64_t offset, void *dst,
				size_t len)
{
	Gpud__Response *r;
	nng_msg *m;
	uint8_t *pl;
	size_t pll;
	gpud_status st;

	if (len == 0)
		return GPUD_OK;
	if (dst == NULL)
		return seterr(c, GPUD_EARG, "gpud_download_range: dst is NULL");
	uint64_t roff;
	const region *rg = region_of(c, dst, len, &roff);
	if (rg)
		return download_region(c, h, offset, rg, roff, len);
	if (gpud_has_shm(c) && len >= SHM_MIN && scratch(c, len) == GPUD_OK)
		return bounce(c, 0, h, offset, dst, len);
	c->msg[0] = '\0';
	size_t limit = chunk_limit(c);
	for (size_t done = 0; done < len;) {
		size_t n = len - done < limit ? len - done : limit;
		if ((st = download(c, h, offset + done, n, &r, &m, &pl, &pll)) != GPUD_OK)
			return st;
		if (pll != n)
			st = seterr(c, GPUD_EPROTO, "download: asked for %zu bytes, got %zu", n,
				    pll);
		else
			memcpy((char *)dst + done, pl, n);
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		if (st != GPUD_OK)
			return st;
		done += n;
	}
	return GPUD_OK;
}

gpud_status gpud_sync(gpud_client *c)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__SyncRequest s = GPUD__SYNC_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	req.body_case = GPUD__REQUEST__BODY_SYNC;
	req.sync = &s;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	st = expect_body(c, r, GPUD__RESPONSE__BODY_SYNC, "sync");
	if (st == GPUD_OK)
		gpud__response__free_unpacked(r, NULL);
	return st;
}

gpud_status gpud_free(gpud_client *c, const gpud_handle *handles, size_t n)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__FreeRequest f = GPUD__FREE_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (n == 0)
		return GPUD_OK;
	f.n_handles = n;
	f.handles = (uint64_t *)handles;
	req.body_case = GPUD__REQUEST__BODY_FREE;
	req.free = &f;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

/* --- kernels -------------------------------------------------------------------- */

/* The protobuf arguments of a run (arrays point into args); free with run_args_free. */
typedef struct run_args {
	Gpud__Argument *pa;
	Gpud__Argument **pp;
	Gpud__Scalar *ps;
	Gpud__InlineArray *ia;
	Gpud__HostRef *hr;
	size_t payload; /* bytes of inline arrays that ride in the message */
} run_args;

static void run_args_free(run_args *ra)
{
	free(ra->pa);
	free(ra->pp);
	free(ra->ps);
	free(ra->ia);
	free(ra->hr);
}

static gpud_status run_args_build(gpud_client *c, const char *verb, const gpud_arg *args,
				  size_t nargs, int arrays_ok, run_args *ra)
{
	size_t n = nargs ? nargs : 1;
	memset(ra, 0, sizeof(*ra));
	ra->pa = calloc(n, sizeof(*ra->pa));
	ra->pp = calloc(n, sizeof(*ra->pp));
	ra->ps = calloc(n, sizeof(*ra->ps));
	ra->ia = calloc(n, sizeof(*ra->ia));
	ra->hr = calloc(n, sizeof(*ra->hr));
	if (!ra->pa || !ra->pp || !ra->ps || !ra->ia || !ra->hr)
		return seterr(c, GPUD_ENOMEM, "%s: out of memory", verb);
	for (size_t i = 0; i < nargs; i++) {
		Gpud__Argument *a = &ra->pa[i];
		Gpud__Scalar *sc = &ra->ps[i];
		gpud__argument__init(a);
		gpud__scalar__init(sc);
		a->name = (char *)(args[i].name ? args[i].name : "");
		ra->pp[i] = a;
		switch (args[i].kind) {
		case GPUD_ARG_BUFFER:
			a->value_case = GPUD__ARGUMENT__VALUE_BUFFER;
			a->buffer = args[i].v.buffer;
			continue;
		case GPUD_ARG_ARRAY: {
			const gpud_array *arr = args[i].v.array;
			if (!arrays_ok)
				return seterr(
					c, GPUD_EARG,
					"%s: argument '%s' is a host array; pass it to gpud_call, "
					"or gpud_alloc it and pass the handle",
					verb, a->name);
			if (arr == NULL || arr->ndim < 0 || arr->ndim > GPUD_MAX_DIMS ||
			    (arr->nbytes > 0 && arr->data == NULL))
				return seterr(c, GPUD_EARG,
					      "%s: argument '%s': a malformed gpud_array", verb,
					      a->name);
			size_t want = gpud_shape_bytes(arr->shape, arr->ndim,
						       gpud_dtype_size(arr->dtype));
			if (gpud_dtype_size(arr->dtype) == 0 || want != arr->nbytes)
				return seterr(
					c, GPUD_EARG,
					"%s: argument '%s': nbytes %zu does not match its dtype "
					"and shape (%zu bytes)",
					verb, a->name, arr->nbytes, want);
			Gpud__InlineArray *ia = &ra->ia[i];
			gpud__inline_array__init(ia);
			ia->dtype = (Gpud__DType)arr->dtype;
			ia->n_shape = (size_t)arr->ndim;
			ia->shape = (uint64_t *)arr->shape;
			uint64_t roff;
			const region *rg = arr->nbytes ? region_of(c, arr->data, arr->nbytes, &roff)
						       : NULL;
			if (rg) {
				gpud__host_ref__init(&ra->hr[i]);
				ra->hr[i].region = rg->id;
				ra->hr[i].offset = roff;
				ia->from = &ra->hr[i];
			} else {
				ra->payload += arr->nbytes;
			}
			a->value_case = GPUD__ARGUMENT__VALUE_ARRAY;
			a->array = ia;
			continue;
		}
		case GPUD_ARG_F64:
			sc->value_case = GPUD__SCALAR__VALUE_F64;
			sc->f64 = args[i].v.f64;
			break;
		case GPUD_ARG_I64:
			sc->value_case = GPUD__SCALAR__VALUE_I64;
			sc->i64 = args[i].v.i64;
			break;
		case GPUD_ARG_BOOL:
			sc->value_case = GPUD__SCALAR__VALUE_B;
			sc->b = args[i].v.b;
			break;
		case GPUD_ARG_TEXT:
			if (args[i].v.text == NULL)
				return seterr(c, GPUD_EARG, "%s: argument '%s' has a NULL text",
					      verb, a->name);
			sc->value_case = GPUD__SCALAR__VALUE_TEXT;
			sc->text = (char *)args[i].v.text;
			break;
		default:
			return seterr(c, GPUD_EARG, "%s: argument '%s' has kind %d", verb, a->name,
				      (int)args[i].kind);
		}
		a->value_case = GPUD__ARGUMENT__VALUE_SCALAR;
		a->scalar = sc;
	}
	return GPUD_OK;
}

gpud_status gpud_run(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		     gpud_output *outs, size_t cap, size_t *nouts, gpud_run_info *info)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__Response *r;
	run_args ra;
	gpud_status st;

	if (kernel == NULL || (nargs > 0 && args == NULL))
		return seterr(c, GPUD_EARG, "gpud_run: kernel name or args missing");
	if ((st = run_args_build(c, "gpud_run", args, nargs, 0, &ra)) != GPUD_OK)
		goto out;
	run.kernel = (char *)kernel;
	run.n_args = nargs;
	run.args = ra.pp;
	req.body_case = GPUD__REQUEST__BODY_RUN;
	req.run = &run;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		goto out;
	if ((st = expect_body(c, r, GPUD__RESPONSE__BODY_RUN, "run")) != GPUD_OK)
		goto out;
	size_t n = 0;
	for (size_t i = 0; i < r->run->n_outputs && n < cap; i++) {
		Gpud__Output *o = r->run->outputs[i];
		if (o->buffer == NULL || o->buffer->n_shape > GPUD_MAX_DIMS)
			continue;
		gpud_output *g = &outs[n++];
		snprintf(g->name, sizeof(g->name), "%s", o->name);
		g->handle = o->buffer->handle;
		g->dtype = (gpud_dtype)o->buffer->dtype;
		g->ndim = (int)o->buffer->n_shape;
		if (o->buffer->n_shape)
			memcpy(g->shape, o->buffer->shape, o->buffer->n_shape * sizeof(uint64_t));
	}
	if (nouts)
		*nouts = n;
	if (info) {
		info->elapsed_us = r->run->elapsed_us;
		info->kernel_us = r->run->kernel_us;
	}
	gpud__response__free_unpacked(r, NULL);
out:
	run_args_free(&ra);
	return st;
}

gpud_status gpud_call(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		      gpud_result *outs, size_t cap, size_t *nouts, gpud_run_info *info)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__Response *r = NULL;
	nng_msg *m = NULL, *rm = NULL;
	uint8_t *payload, *pl;
	size_t pll, got = 0;
	run_args ra;
	gpud_status st;
	int rv;

	if (nouts)
		*nouts = 0;
	c->msg[0] = '\0';
	if (kernel == NULL || (nargs > 0 && args == NULL) || (cap > 0 && outs == NULL))
		return seterr(c, GPUD_EARG, "gpud_call: kernel name, args or outs missing");
	if ((st = run_args_build(c, "gpud_call", args, nargs, 1, &ra)) != GPUD_OK)
		goto out;
	if (ra.payload > chunk_limit(c)) {
		st = seterr(c, GPUD_E2BIG,
			    "gpud_call: %zu bytes of inline arrays exceed one message (%" PRIu64
			    " bytes); gpud_alloc them and use gpud_run, or put them in "
			    "gpud_host_alloc memory",
			    ra.payload, c->info.max_message_size);
		goto out;
	}
	run.kernel = (char *)kernel;
	run.n_args = nargs;
	run.args = ra.pp;
	run.return_outputs = 1;
	req.body_case = GPUD__REQUEST__BODY_RUN;
	req.run = &run;
	req.version = GPUD_PROTOCOL_VERSION;
	req.id = ++c->next_id;
	if ((rv = wire_pack(&m, &req.base, NULL, ra.payload, (void **)&payload)) != 0) {
		st = seterr(c, GPUD_ENOMEM, "gpud_call: cannot build a %zu-byte request: %s",
			    ra.payload, nng_strerror(rv));
		goto out;
	}
	/* The arrays' bytes, in argument order: the one copy on this side. */
	for (size_t i = 0; i < nargs; i++)
		if (ra.pa[i].value_case == GPUD__ARGUMENT__VALUE_ARRAY && !ra.ia[i].from &&
		    args[i].v.array->nbytes) {
			memcpy(payload, args[i].v.array->data, args[i].v.array->nbytes);
			payload += args[i].v.array->nbytes;
		}
	if ((st = exchange(c, m, req.id, &r, &rm, &pl, &pll)) != GPUD_OK)
		goto out;
	if ((st = expect_body(c, r, GPUD__RESPONSE__BODY_RUN, "run")) != GPUD_OK) {
		r = NULL;
		goto out;
	}
	size_t off = 0, n = 0;
	for (size_t i = 0; i < r->run->n_outputs; i++) {
		Gpud__Output *o = r->run->outputs[i];
		if (o->buffer == NULL || o->buffer->n_shape > GPUD_MAX_DIMS ||
		    gpud_dtype_size((gpud_dtype)o->buffer->dtype) == 0) {
			st = seterr(c, GPUD_EPROTO, "gpud_call: output %zu is not described", i);
			goto out;
		}
		size_t bytes = gpud_shape_bytes(o->buffer->shape, (int)o->buffer->n_shape,
						gpud_dtype_size((gpud_dtype)o->buffer->dtype));
		if (bytes == SIZE_MAX || bytes > pll - off) {
			st = seterr(
				c, GPUD_EPROTO,
				"gpud_call: the reply's %zu payload bytes do not hold output '%s'",
				pll, o->name);
			goto out;
		}
		if (n < cap) {
			gpud_result *g = &outs[n++];
			memset(g, 0, sizeof(*g));
			snprintf(g->name, sizeof(g->name), "%s", o->name);
			g->array.dtype = (gpud_dtype)o->buffer->dtype;
			g->array.ndim = (int)o->buffer->n_shape;
			if (o->buffer->n_shape)
				memcpy(g->array.shape, o->buffer->shape,
				       o->buffer->n_shape * sizeof(uint64_t));
			g->array.nbytes = bytes;
			if ((g->array.data = malloc(bytes ? bytes : 1)) == NULL) {
				n--;
				st = seterr(c, GPUD_ENOMEM, "gpud_call: cannot allocate %zu bytes",
					    bytes);
				goto out;
			}
			memcpy(g->array.data, pl + off, bytes);
			got = n;
		}
		off += bytes;
	}
	if (off != pll) {
		st = seterr(c, GPUD_EPROTO, "gpud_call: %zu payload bytes for %zu bytes of outputs",
			    pll, off);
		goto out;
	}
	if (nouts)
		*nouts = n;
	if (info) {
		info->elapsed_us = r->run->elapsed_us;
		info->kernel_us = r->run->kernel_us;
	}
out:
	if (st != GPUD_OK)
		for (size_t i = 0; i < got; i++)
			gpud_array_free(&outs[i].array);
	if (r)
		gpud__response__free_unpacked(r, NULL);
	if (rm)
		nng_msg_free(rm);
	run_args_free(&ra);
	return st;
}

gpud_status gpud_register(gpud_client *c, const gpud_kernel_spec *spec)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__RegisterRequest q = GPUD__REGISTER_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (spec == NULL || spec->name == NULL || spec->source == NULL)
		return seterr(c, GPUD_EARG, "gpud_register: name and source are required");
	q.name = (char *)spec->name;
	q.kind = spec->elementwise ? GPUD__REGISTER_REQUEST__KIND__KIND_ELEMENTWISE
				   : GPUD__REGISTER_REQUEST__KIND__KIND_RAW;
	q.source = (char *)spec->source;
	q.entry = (char *)(spec->entry ? spec->entry : "");
	q.signature = (char *)(spec->signature ? spec->signature : "");
	q.in_params = (char *)(spec->in_params ? spec->in_params : "");
	q.out_params = (char *)(spec->out_params ? spec->out_params : "");
	q.block = spec->block;
	q.blocks_per_sm = spec->blocks_per_sm;
	q.fast_math = spec->fast_math;
	q.max_registers = spec->max_registers;
	q.shared = spec->shared;
	req.body_case = GPUD__REQUEST__BODY_REGISTER;
	req.register_ = &q;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	st = expect_body(c, r, GPUD__RESPONSE__BODY_REGISTER, "register");
	if (st == GPUD_OK)
		gpud__response__free_unpacked(r, NULL);
	return st;
}

static gpud_status unregister(gpud_client *c, const char *name, int shared)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UnregisterRequest q = GPUD__UNREGISTER_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	q.name = (char *)(name ? name : "");
	q.shared = shared;
	req.body_case = GPUD__REQUEST__BODY_UNREGISTER;
	req.unregister = &q;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

gpud_status gpud_unregister(gpud_client *c, const char *name)
{
	return unregister(c, name, 0);
}

gpud_status gpud_unregister_shared(gpud_client *c, const char *name)
{
	return unregister(c, name, 1);
}

void gpud_kernel_list_free(gpud_kernel_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->count; i++) {
		gpud_kernel_info *k = &l->kernels[i];
		for (size_t j = 0; j < k->nparams; j++) {
			free(k->params[j].name);
			free(k->params[j].default_value);
			free(k->params[j].type);
			free(k->params[j].doc);
		}
		free(k->params);
		free(k->name);
		free(k->doc);
	}
	free(l->kernels);
	free(l);
}

static char *dupstr(const char *s)
{
	return strdup(s ? s : "");
}

gpud_status gpud_kernels(gpud_client *c, gpud_kernel_list **out)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__KernelsRequest k = GPUD__KERNELS_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	*out = NULL;
	req.body_case = GPUD__REQUEST__BODY_KERNELS;
	req.kernels = &k;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = expect_body(c, r, GPUD__RESPONSE__BODY_KERNELS, "kernels")) != GPUD_OK)
		return st;
	Gpud__KernelsResponse *kr = r->kernels;
	gpud_kernel_list *l = calloc(1, sizeof(*l));
	if (l == NULL ||
	    (l->kernels = calloc(kr->n_kernels ? kr->n_kernels : 1, sizeof(*l->kernels))) == NULL)
		goto oom;
	for (size_t i = 0; i < kr->n_kernels; i++, l->count++) {
		Gpud__KernelInfo *ki = kr->kernels[i];
		gpud_kernel_info *o = &l->kernels[i];
		o->name = dupstr(ki->name);
		o->doc = dupstr(ki->doc);
		if ((o->params = calloc(ki->n_params ? ki->n_params : 1, sizeof(*o->params))) ==
		    NULL)
			goto oom;
		for (size_t j = 0; j < ki->n_params; j++, o->nparams++) {
			Gpud__Param *p = ki->params[j];
			gpud_param_info *q = &o->params[j];
			q->name = dupstr(p->name);
			q->role = (gpud_param_role)p->role;
			for (size_t t = 0; t < p->n_dtypes; t++)
				q->dtypes |= 1u << p->dtypes[t];
			q->ndim = p->ndim;
			q->optional = p->optional;
			q->default_value = dupstr(p->default_value);
			q->type = dupstr(p->type);
			q->doc = dupstr(p->doc);
		}
	}
	gpud__response__free_unpacked(r, NULL);
	*out = l;
	return GPUD_OK;
oom:
	gpud_kernel_list_free(l);
	gpud__response__free_unpacked(r, NULL);
	return seterr(c, GPUD_ENOMEM, "kernels: out of memory");
}

/* --- status ------------------------------------------------------------------------ */

gpud_status gpud_status_get(gpud_client *c, gpud_daemon_status *out)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__StatusRequest s = GPUD__STATUS_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	memset(out, 0, sizeof(*out));
	req.body_case = GPUD__REQUEST__BODY_STATUS;
	req.status = &s;
	if ((st = call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = expect_body(c, r, GPUD__RESPONSE__BODY_STATUS, "status")) != GPUD_OK)
		return st;
	Gpud__StatusResponse *sr = r->status;
	out->server = c->info;
	snprintf(out->server.version, sizeof(out->server.version), "%s", sr->server_version);
	snprintf(out->server.backend, sizeof(out->server.backend), "%s", sr->backend);
	copy_devices(&out->server, sr->devices, sr->n_devices);
	out->uptime_s = sr->uptime_s;
	out->requests = sr->requests;
	out->errors = sr->errors;
	out->connections = sr->connections;
	out->in_flight = sr->in_flight;
	out->buffers = sr->buffers;
	out->bytes_in_use = sr->bytes_in_use;
	out->bytes_high_water = sr->bytes_high_water;
	if (sr->pool) {
		out->has_pool = 1;
		out->pool_in_use = sr->pool->in_use;
		out->pool_cached = sr->pool->cached;
		out->pool_high_water = sr->pool->high_water;
		out->pool_limit = sr->pool->limit;
		out->pool_allocs = sr->pool->allocs;
		out->pool_hits = sr->pool->hits;
	}
	if (sr->staging) {
		out->has_staging = 1;
		out->staging_buffers = sr->staging->buffers;
		out->staging_free = sr->staging->free;
		out->staging_chunk = sr->staging->chunk;
		out->bytes_staged = sr->staging->bytes_staged;
	}
	out->nsessions_total = (unsigned)sr->n_sessions;
	for (size_t i = 0; i < sr->n_sessions && i < GPUD_MAX_SESSIONS; i++) {
		Gpud__Session *g = sr->sessions[i];
		gpud_session_info *o = &out->sessions[out->nsessions++];
		o->id = g->id;
		snprintf(o->peer, sizeof(o->peer), "%s", g->peer ? g->peer : "");
		o->buffers = g->buffers;
		o->bytes = g->bytes;
		o->requests = g->requests;
		o->in_flight = g->in_flight;
		o->regions = g->regions;
		o->region_bytes = g->region_bytes;
	}
	for (size_t i = 0; i < sr->n_variants && i < GPUD_MAX_VARIANTS; i++) {
		Gpud__KernelVariant *v = sr->variants[i];
		gpud_variant_info *o = &out->variants[out->nvariants++];
		snprintf(o->kernel, sizeof(o->kernel), "%s", v->kernel);
		snprintf(o->variant, sizeof(o->variant), "%s", v->variant);
		o->registers = v->registers;
		o->block = v->block;
		o->max_threads = v->max_threads;
		o->shared_bytes = v->shared_bytes;
		o->local_bytes = v->local_bytes;
	}
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}
