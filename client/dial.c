/*
 * client/dial.c — the list of endpoints a client is given (URL[,URL]...),
 * and dialing one of them within the caller's time: the endpoint's kind
 * (endpoint/) configures the dialer first and explains a dial that failed.
 * The connecting thread, or the one saying hello (which alone swaps c->url
 * and c->dialer); a dial's deadline (a timer on nng's task threads, or a
 * watcher thread) touches only its dial_watch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>

#include "client/endpoint/endpoint.h"
#include "client/internal.h"

int client_endpoints_parse(gpud_client *c, const char *list)
{
	const char *p = list;
	char forms[256];
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
				      "expected URL[,URL]... of %s",
				      list, c->nurls + 1,
				      client_endpoint_forms(forms, sizeof(forms)));
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

/*
 * A blocking dial that keeps the caller's time limit. nng_dialer_start
 * without NNG_FLAG_NONBLOCK returns once the connection is made and nng's
 * handshake (8 bytes each way) is done, or with the dial's error (refused,
 * no such socket: what the messages below explain); and nng gives that
 * handshake 10 s (a TCP connect the system's own timeout, minutes): against
 * a peer that accepts and never speaks, a call with a 3 s timeout would
 * take 10. Closing the dialer at the deadline ends the dial at once
 * (NNG_ECLOSED), reported as DIAL_TIMEDOUT.
 *
 * The deadline is a timer on nng's own threads (nng_sleep_aio): no thread
 * is made for a dial (one fewer for every fresh process). The dial that
 * connects in time cancels it; nng_aio_stop returns once its callback has
 * run. Closing a dialer waits for its connect's callback, which runs on
 * nng's task threads, as the timer's callback does: one such close runs at
 * a time (closing_mu, tried; a timer that finds it held looks again 1 ms
 * later), so that a task thread is left to finish the dial. A dial made on
 * one of nng's threads (a job's completion callback that connects) could
 * hold that other thread itself: there a watcher thread of the dial's own
 * closes the dialer instead.
 */
#define DIAL_TIMEDOUT (-2)

typedef struct dial_watch {
	nng_dialer d;
	int fired; /* the deadline came first: d was closed (atomic) */
	nng_aio *timer;
	/* the watcher thread's */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC */
	struct timespec deadline;
	int done; /* the dial returned */
} dial_watch;

static pthread_mutex_t closing_mu = PTHREAD_MUTEX_INITIALIZER;

/* nng's task thread: the deadline (0), or the dial returned first (cancelled). */
static void dial_deadline(void *arg)
{
	dial_watch *w = arg;
	if (nng_aio_result(w->timer) != 0)
		return;
	if (pthread_mutex_trylock(&closing_mu) != 0) {
		nng_sleep_aio(1, w->timer);
		return;
	}
	__atomic_store_n(&w->fired, 1, __ATOMIC_RELEASE);
	nng_dialer_close(w->d);
	pthread_mutex_unlock(&closing_mu);
}

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

/* The dial under a watcher thread; DIAL_TIMEDOUT, or nng's result. */
static int dial_watched(dial_watch *w, int flags, int wait_ms)
{
	pthread_condattr_t ca;
	pthread_t th;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&w->mu, NULL);
	clock_gettime(CLOCK_MONOTONIC, &w->deadline);
	w->deadline.tv_sec += wait_ms / 1000;
	w->deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (w->deadline.tv_nsec >= 1000000000L) {
		w->deadline.tv_sec++;
		w->deadline.tv_nsec -= 1000000000L;
	}
	/* Without a thread the dial is only as bounded as nng makes it. */
	int watching = pthread_create(&th, NULL, watch_dial, w) == 0;
	int rv = nng_dialer_start(w->d, flags);
	if (watching) {
		pthread_mutex_lock(&w->mu);
		w->done = 1;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(th, NULL);
	}
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	return w->fired ? DIAL_TIMEDOUT : rv;
}

/* 1 on one of nng's threads (they are named "nng:..."). */
static int on_nng_thread(void)
{
	char name[16];
	return pthread_getname_np(pthread_self(), name, sizeof(name)) == 0 &&
	       strncmp(name, "nng:", 4) == 0;
}

/* Starts dialer d: in the background (NNG_FLAG_NONBLOCK), or waiting for the
 * connection at most wait_ms (<= 0: as long as nng takes). 0, nng's error
 * (d is then the caller's to close) or DIAL_TIMEDOUT (d is closed). */
static int dialer_start(nng_dialer d, int flags, int wait_ms)
{
	if ((flags & NNG_FLAG_NONBLOCK) || wait_ms <= 0)
		return nng_dialer_start(d, flags);
	dial_watch w = {.d = d};
	if (on_nng_thread() || nng_aio_alloc(&w.timer, dial_deadline, &w) != 0)
		return dial_watched(&w, flags, wait_ms);
	nng_sleep_aio(wait_ms, w.timer);
	int rv = nng_dialer_start(d, flags);
	nng_aio_stop(w.timer); /* cancelled; its callback has run: w.fired is final */
	nng_aio_free(w.timer);
	return __atomic_load_n(&w.fired, __ATOMIC_ACQUIRE) ? DIAL_TIMEDOUT : rv;
}

gpud_status client_dial(gpud_client *c, int i, int flags, int wait_ms)
{
	const char *url = c->urls[i];
	const client_endpoint *e = client_endpoint_of(url);
	char forms[256];
	nng_dialer d;
	int rv;
	gpud_status st;
	__atomic_store_n(&c->url, url, __ATOMIC_RELEASE);
	if ((rv = nng_dialer_create(&d, c->sock, url)) == 0) {
		if (e && e->setup && (rv = e->setup(c, d, url)) != 0) {
			nng_dialer_close(d);
			if (rv == -1)
				return GPUD_ECONNECT; /* setup said why */
		} else if ((rv = dialer_start(d, flags, wait_ms)) == 0) {
			c->dialer = d;
			return GPUD_OK;
		} else if (rv != DIAL_TIMEDOUT) {
			nng_dialer_close(d);
		}
	}
	if (rv == DIAL_TIMEDOUT)
		return client_seterr(c, GPUD_ETIMEDOUT,
				     "gpud at %s did not answer within %d ms: %s", url, wait_ms,
				     (e ? e : &client_endpoint_tcp)->wedged);
	if (e && e->explain && (st = e->explain(c, url, rv)) != GPUD_OK)
		return st;
	if (rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP)
		return client_seterr(c, GPUD_ECONNECT, "cannot connect to '%s': %s (expected %s)",
				     url, nng_strerror(rv),
				     client_endpoint_forms(forms, sizeof(forms)));
	return client_seterr(c, GPUD_ECONNECT,
			     "cannot connect to gpud at %s: %s (is gpud running? start it "
			     "with `gpud` or `systemctl start gpud`, or point GPUD_URL at "
			     "the one you mean)",
			     url, nng_strerror(rv));
}
