/*
 * client/conn.c — a client's connection: options, dialing ipc://, tcp:// or
 * tls+tcp://, close, the error text (each thread's own) and the accessors
 * of gpud/client.h. The session on top of the connection (hello, and hello
 * again after a restart) is session.c's; the round trips are call.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>

#include "client/internal.h"

/* The calling thread's last message, and the client it was about. */
static __thread const gpud_client *tls_client;
static __thread char tls_msg[2048];

gpud_status client_seterr(gpud_client *c, gpud_status st, const char *fmt, ...)
{
	va_list ap;
	if (c == NULL)
		return st;
	va_start(ap, fmt);
	vsnprintf(tls_msg, sizeof(tls_msg), fmt, ap);
	va_end(ap);
	tls_client = c;
	pthread_mutex_lock(&c->msg_mu);
	memcpy(c->msg, tls_msg, sizeof(c->msg));
	pthread_mutex_unlock(&c->msg_mu);
	return st;
}

void client_clear(gpud_client *c)
{
	tls_client = c;
	tls_msg[0] = '\0';
}

const char *client_msg(const gpud_client *c)
{
	return tls_client == c ? tls_msg : "";
}

int client_timeout(const gpud_client *c)
{
	return __atomic_load_n(&c->timeout_ms, __ATOMIC_RELAXED);
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
	case GPUD_ESTALE:
		return "handle from before gpud restarted";
	case GPUD_ECANCELED:
		return "cancelled";
	case GPUD_ENOSESSION:
		return "no session (gpud restarted or the connection was re-made)";
	case GPUD_EUNAVAILABLE:
		return "gpud unavailable";
	case GPUD_EPERM:
		return "permission denied on gpud's socket";
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
	if (c == NULL)
		return "out of memory";
	/* The calling thread's own message; a thread that made no call on c
	 * sees the last failed call's of any thread. */
	return tls_client == c ? tls_msg : c->msg;
}

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

/* The name the server's certificate must have: tls_server_name
 * ($GPUD_TLS_SERVER_NAME), else the host of tls+tcp://HOST:PORT. */
static const char *tls_name(const gpud_client *c, const char *url, char *host, size_t len)
{
	if (c->tls_server_name)
		return c->tls_server_name;
	const char *h = url + strlen("tls+tcp://");
	const char *colon = strrchr(h, ':');
	size_t n = colon ? (size_t)(colon - h) : strlen(h);
	snprintf(host, len, "%.*s", (int)(n < len ? n : len - 1), h);
	return host;
}

/*
 * tls+tcp://: the server's certificate is checked against the CA file
 * (gpud_options.tls_ca, else $GPUD_TLS_CA) and the URL's host name
 * (tls_server_name, $GPUD_TLS_SERVER_NAME override it). Dialer d keeps the
 * configuration, so redials after a drop use the same. Returns 0, an nng
 * error, or -1 with the message set.
 */
static int tls_setup(gpud_client *c, nng_dialer d, const char *url)
{
	const char *ca = c->tls_ca, *name;
	char host[256] = "";
	nng_tls_config *tc = NULL;
	int rv;

	if (ca == NULL) {
		client_seterr(c, GPUD_ECONNECT,
			      "%s: no CA file configured: set GPUD_TLS_CA (or gpud_options.tls_ca) "
			      "to the PEM file of the CA that signed gpud's certificate",
			      url);
		return -1;
	}
	char why[256];
	if (client_tls_ca_check(ca, why, sizeof(why)) != 0) {
		client_seterr(
			c, GPUD_ECONNECT,
			"%s: CA file %s: %s; set GPUD_TLS_CA (or gpud_options.tls_ca) to the PEM "
			"file of the CA that signed gpud's certificate",
			url, ca, why);
		return -1;
	}
	name = tls_name(c, url, host, sizeof(host));
	if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_CLIENT)) == 0 &&
	    (rv = nng_tls_config_auth_mode(tc, NNG_TLS_AUTH_MODE_REQUIRED)) == 0 &&
	    (rv = nng_tls_config_server_name(tc, name)) == 0 &&
	    (rv = nng_tls_config_ca_file(tc, ca)) != 0) {
		nng_tls_config_free(tc);
		client_seterr(c, GPUD_ECONNECT, "%s: TLS CA file %s: %s", url, ca,
			      nng_strerror(rv));
		return -1;
	}
	if (rv == 0)
		rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tc);
	if (tc)
		nng_tls_config_free(tc);
	return rv;
}

/*
 * A blocking dial that keeps the caller's time limit. nng_dialer_start
 * without NNG_FLAG_NONBLOCK returns once the connection is made and nng's
 * handshake (8 bytes each way) is done, and nng gives that handshake 10 s
 * (a TCP connect the system's own timeout, minutes): against a peer that
 * accepts and never speaks, a call with a 3 s timeout would take 10. A
 * watcher thread closes the dialer at the deadline, which ends the dial at
 * once (NNG_ECLOSED) and is then reported as DIAL_TIMEDOUT. The watcher
 * lives for one dial and touches only its dial_watch.
 */
#define DIAL_TIMEDOUT (-2)

typedef struct dial_watch {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC */
	struct timespec deadline;
	nng_dialer d;
	int done;  /* the dial returned */
	int fired; /* the deadline came first: the watcher closed d */
} dial_watch;

static void *watch_dial(void *arg)
{
	dial_watch *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->done && !w->fired)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &w->deadline) == ETIMEDOUT && !w->done)
			w->fired = 1;
	pthread_mutex_unlock(&w->mu);
	if (w->fired)
		nng_dialer_close(w->d);
	return NULL;
}

/* Starts dialer d: in the background (NNG_FLAG_NONBLOCK), or waiting for the
 * connection at most wait_ms (<= 0: as long as nng takes). 0, nng's error
 * (d is then the caller's to close) or DIAL_TIMEDOUT (d is closed). */
static int dialer_start(nng_dialer d, int flags, int wait_ms)
{
	if ((flags & NNG_FLAG_NONBLOCK) || wait_ms <= 0)
		return nng_dialer_start(d, flags);
	dial_watch w = {.d = d};
	pthread_condattr_t ca;
	pthread_t th;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w.cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&w.mu, NULL);
	clock_gettime(CLOCK_MONOTONIC, &w.deadline);
	w.deadline.tv_sec += wait_ms / 1000;
	w.deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (w.deadline.tv_nsec >= 1000000000L) {
		w.deadline.tv_sec++;
		w.deadline.tv_nsec -= 1000000000L;
	}
	/* Without a thread the dial is only as bounded as nng makes it. */
	int watching = pthread_create(&th, NULL, watch_dial, &w) == 0;
	int rv = nng_dialer_start(d, flags);
	if (watching) {
		pthread_mutex_lock(&w.mu);
		w.done = 1;
		pthread_cond_signal(&w.cv);
		pthread_mutex_unlock(&w.mu);
		pthread_join(th, NULL);
	}
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
	return w.fired ? DIAL_TIMEDOUT : rv;
}

/*
 * A dial of url failed with nng's rv in a way a handshake does (TLS refused,
 * or the peer closed while the two sides said what they speak): the cause,
 * found by client_tls_diagnose, as c's message; 0 when it is not that kind
 * of failure. Over tls+tcp:// without a cause found, the message names the
 * CA file and the two usual causes: nng 1.5.2 returns only NNG_ECRYPTO or
 * NNG_EPEERAUTH, never mbed TLS's reasons.
 */
static int explain_dial(gpud_client *c, const char *url, int rv)
{
	int tls = strncmp(url, "tls+tcp://", 10) == 0;
	char why[1500], host[256] = "";
	const char *name;

	if (!tls && strncmp(url, "tcp://", 6) != 0)
		return 0;
	if (rv != NNG_ECRYPTO && rv != NNG_EPEERAUTH && rv != NNG_ECLOSED && rv != NNG_ECONNSHUT &&
	    rv != NNG_ECONNRESET && rv != NNG_EPROTO)
		return 0;
	name = tls ? tls_name(c, url, host, sizeof(host)) : NULL;
	if (client_tls_diagnose(url, tls, c->tls_ca, name, c->connect_timeout_ms, why,
				sizeof(why))) {
		client_seterr(c, GPUD_ECONNECT, "%s: %s", url, why);
		return 1;
	}
	if (!tls)
		return 0;
	client_seterr(c, GPUD_ECONNECT,
		      "%s: the TLS handshake failed (%s); the usual causes: the CA file %s "
		      "(GPUD_TLS_CA) did not sign gpud's certificate, or that certificate is not "
		      "for the name '%s' (GPUD_TLS_SERVER_NAME)",
		      url, nng_strerror(rv), c->tls_ca, name);
	return 1;
}

/*
 * url as a list of endpoints, URL[,URL]... (spaces around each allowed),
 * into c->urls; c->url the first. -1 with the message when one is empty or
 * too long, or there are more than CLIENT_MAX_ENDPOINTS.
 */
static int parse_endpoints(gpud_client *c, const char *list)
{
	const char *p = list;
	c->nurls = 0;
	for (;;) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		while (n > 0 && (*p == ' ' || *p == '\t'))
			p++, n--;
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 0) {
			client_seterr(c, GPUD_ECONNECT,
				      "the gpud URL list '%s' has an empty entry (number %d): "
				      "expected URL[,URL]... of ipc://PATH, tcp://HOST:PORT or "
				      "tls+tcp://HOST:PORT",
				      list, c->nurls + 1);
			return -1;
		}
		if (c->nurls == CLIENT_MAX_ENDPOINTS || n >= sizeof(c->urls[0])) {
			client_seterr(
				c, GPUD_ECONNECT,
				c->nurls == CLIENT_MAX_ENDPOINTS
					? "the gpud URL list '%.900s' has more than %d endpoints"
					: "the gpud URL list '%.900s': an endpoint is longer than "
					  "%d bytes",
				list,
				c->nurls == CLIENT_MAX_ENDPOINTS ? CLIENT_MAX_ENDPOINTS
								 : (int)sizeof(c->urls[0]) - 1);
			return -1;
		}
		memcpy(c->urls[c->nurls], p, n);
		c->urls[c->nurls][n] = '\0';
		c->nurls++;
		if (e == NULL)
			break;
		p = e + 1;
	}
	c->url = c->urls[0];
	return 0;
}

size_t client_append_why(char *buf, size_t cap, size_t used, int i, const char *msg)
{
	if (used < cap) {
		int k = snprintf(buf + used, cap - used, "%s[%d] %s", used ? "; " : "", i + 1, msg);
		used = k < 0 ? used : used + (size_t)k < cap ? used + (size_t)k : cap;
	}
	return used;
}

gpud_status client_dial(gpud_client *c, int i, int flags, int wait_ms)
{
	const char *url = c->urls[i];
	nng_dialer d;
	int rv;
	__atomic_store_n(&c->url, url, __ATOMIC_RELEASE);
	if ((rv = nng_dialer_create(&d, c->sock, url)) == 0) {
		if (strncmp(url, "tls+", 4) == 0 && (rv = tls_setup(c, d, url)) != 0) {
			nng_dialer_close(d);
			if (rv == -1)
				return GPUD_ECONNECT; /* tls_setup said why */
		} else if ((rv = dialer_start(d, flags, wait_ms)) == 0) {
			c->dialer = d;
			return GPUD_OK;
		} else if (rv != DIAL_TIMEDOUT) {
			nng_dialer_close(d);
		}
	}
	if (rv == DIAL_TIMEDOUT)
		return client_seterr(
			c, GPUD_ETIMEDOUT,
			strncmp(url, "ipc://", 6) == 0
				? "gpud at %s did not answer within %d ms: its socket took the "
				  "connection but nothing answered nng's handshake (gpud is wedged, "
				  "or what listens there is not gpud)"
				: "gpud at %s did not answer within %d ms: the connection or nng's "
				  "handshake did not complete (gpud is wedged, the host drops the "
				  "connection, or what listens there is not gpud)",
			url, wait_ms);
	/* nng's ipc:// dialer reports connect()'s EACCES as NNG_EPERM: gpud is
	 * there, the socket's mode and group keep this user out */
	if (rv == NNG_EPERM && strncmp(url, "ipc://", 6) == 0)
		return client_access_denied(c, "", url + 6);
	if (explain_dial(c, url, rv))
		return GPUD_ECONNECT;
	if (rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP)
		return client_seterr(c, GPUD_ECONNECT,
				     "cannot connect to '%s': %s (expected ipc://PATH, "
				     "tcp://HOST:PORT or tls+tcp://HOST:PORT)",
				     url, nng_strerror(rv));
	return client_seterr(c, GPUD_ECONNECT,
			     "cannot connect to gpud at %s: %s (is gpud running? start it "
			     "with `gpud` or `systemctl start gpud`, or point GPUD_URL at "
			     "the one you mean)",
			     url, nng_strerror(rv));
}

int64_t client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int client_left_ms(int64_t deadline)
{
	int64_t left = deadline - client_now_ms();
	return left < 1 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
}

gpud_status gpud_connect(const char *url, gpud_client **out)
{
	gpud_options o = {.url = url};
	return gpud_connect_opts(&o, out);
}

static gpud_status connect_opts(const gpud_options *opts, gpud_client **out, int hello)
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
	pthread_mutex_init(&c->ctx_mu, NULL);
	pthread_cond_init(&c->cancels_cv, NULL);
	pthread_mutex_init(&c->msg_mu, NULL);
	pthread_mutex_init(&c->ring_mu, NULL);
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
	if (parse_endpoints(c, url) != 0)
		return GPUD_ECONNECT;
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
	if (c->nurls == 1) { /* one endpoint: its own messages, unchanged */
		gpud_status st = client_dial(c, 0, 0, budget);
		if (st != GPUD_OK)
			return st;
		if (!hello) {
			c->no_hello = 1;
			return GPUD_OK;
		}
		return client_session_first(c, client_left_ms(deadline), budget);
	}
	/* A list: the first endpoint, in order, that is reachable (status only)
	 * or answers hello; each one's failure kept for the message. Each gets
	 * an equal part of the time left, at least. */
	char why[4096] = "";
	size_t used = 0;
	gpud_status st = GPUD_ECONNECT;
	for (int i = 0; i < c->nurls; i++) {
		const int share = client_left_ms(deadline) / (c->nurls - i) + 1;
		const int64_t mine = client_now_ms() + share;
		if ((st = client_dial(c, i, 0, share)) == GPUD_OK) {
			if (!hello) {
				c->no_hello = 1;
				return GPUD_OK;
			}
			if ((st = client_session_first(c, client_left_ms(mine), share)) == GPUD_OK)
				return GPUD_OK;
			nng_dialer_close(c->dialer);
		}
		used = client_append_why(why, sizeof(why), used, i, gpud_errmsg(c));
	}
	__atomic_store_n(&c->url, c->urls[0], __ATOMIC_RELEASE);
	return client_seterr(c, st, "none of the %d gpud endpoints answered (%s): %s", c->nurls,
			     hello ? "hello" : "a connection", why);
}

gpud_status gpud_connect_opts(const gpud_options *opts, gpud_client **out)
{
	return connect_opts(opts, out, 1);
}

gpud_status gpud_connect_for_status(const gpud_options *opts, gpud_client **out)
{
	return connect_opts(opts, out, 0);
}

void gpud_close(gpud_client *c)
{
	if (c == NULL)
		return;
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
	pthread_mutex_destroy(&c->ctx_mu);
	pthread_cond_destroy(&c->cancels_cv);
	pthread_mutex_destroy(&c->msg_mu);
	pthread_mutex_destroy(&c->ring_mu);
	if (tls_client == c)
		tls_client = NULL;
	free(c);
}
