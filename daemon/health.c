/*
 * daemon/health.c — the self-probe through every listener, the loop's
 * heartbeat and the readiness they make (see health.h for who owns what).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon/endpoint/endpoint.h"
#include "daemon/health.h"
#include "daemon/log.h"
#include "proto/wire.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* clock's time ms from now, for a timed wait on that clock. */
static struct timespec after_ms(clockid_t clock, unsigned ms)
{
	struct timespec t;
	clock_gettime(clock, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/*
 * A send (send) or receive on s with the probe's aio, waited for: its
 * result; NNG_ECANCELED without starting once gpud stops. Nothing else
 * ever touches the probe's socket or aio: closing or cancelling a REQ
 * socket's operation from another thread can leave nng_close waiting
 * for good (nng #1813), and with it every later close in gpud.
 */
static int aio_op(health *h, nng_socket s, int send)
{
	pthread_mutex_lock(&h->mu);
	int stop = h->stop;
	pthread_mutex_unlock(&h->mu);
	if (stop)
		return NNG_ECANCELED;
	if (send)
		nng_send_aio(s, h->aio);
	else
		nng_recv_aio(s, h->aio);
	nng_aio_wait(h->aio);
	return nng_aio_result(h->aio);
}

/* One hello through t. 0 when answered OK; else -1 with why, and *no_pipe
 * when the hello could not even be sent (no handshake completed). */
static int probe_once(health *h, health_target *t, int timeout_ms, char *why, size_t len,
		      int *no_pipe)
{
	nng_socket s;
	nng_dialer d;
	nng_msg *m = NULL;
	int rv;
	Gpud__HelloRequest hello = GPUD__HELLO_REQUEST__INIT;
	Gpud__Request req = GPUD__REQUEST__INIT;

	*no_pipe = 0;
	if ((rv = nng_req0_open(&s)) != 0) {
		snprintf(why, len, "nng_req0_open: %s", nng_strerror(rv));
		return -1;
	}
	nng_aio_set_timeout(h->aio, timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	if ((rv = nng_dialer_create(&d, s, t->dial)) == 0 && t->tls)
		rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, h->tls);
	if (rv == 0)
		rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK);
	if (rv != 0) {
		snprintf(why, len, "dial %s: %s", t->dial, nng_strerror(rv));
		goto out;
	}
	hello.client = "gpud self-probe";
	hello.probe.data = h->key;
	hello.probe.len = sizeof(h->key);
	req.version = GPUD_PROTOCOL_VERSION;
	req.id = 1;
	req.body_case = GPUD__REQUEST__BODY_HELLO;
	req.hello = &hello;
	if ((rv = wire_pack(&m, &req.base, NULL, 0, NULL)) != 0) {
		snprintf(why, len, "packing the hello: %s", nng_strerror(rv));
		goto out;
	}
	nng_aio_set_msg(h->aio, m);
	if ((rv = aio_op(h, s, 1)) != 0) {
		/* not sent: the message is still ours */
		nng_aio_set_msg(h->aio, NULL);
		*no_pipe = rv == NNG_ETIMEDOUT;
		snprintf(why, len, "no handshake completed within %d ms (%s)", timeout_ms,
			 nng_strerror(rv));
		goto out;
	}
	m = NULL;
	rv = aio_op(h, s, 0);
	m = rv == 0 ? nng_aio_get_msg(h->aio) : NULL;
	if (rv != 0) {
		snprintf(why, len, "hello sent, no answer within %d ms (%s)", timeout_ms,
			 nng_strerror(rv));
		goto out;
	}
	const uint8_t *hdr;
	uint8_t *payload;
	size_t hlen, plen;
	char err[128];
	rv = -1;
	if (wire_split(m, &hdr, &hlen, &payload, &plen, err, sizeof(err)) != 0) {
		snprintf(why, len, "a broken answer: %s", err);
		goto out;
	}
	Gpud__Response *resp = gpud__response__unpack(NULL, hlen, hdr);
	if (resp == NULL) {
		snprintf(why, len, "an answer that does not decode");
		goto out;
	}
	if (resp->code != GPUD__STATUS__STATUS_OK || resp->body_case != GPUD__RESPONSE__BODY_HELLO)
		snprintf(why, len, "hello answered %s: %s", wire_status_name(resp->code),
			 resp->message ? resp->message : "");
	else
		rv = 0;
	gpud__response__free_unpacked(resp, NULL);
out:
	if (m)
		nng_msg_free(m);
	pthread_mutex_lock(&h->mu);
	int stop = h->stop;
	pthread_mutex_unlock(&h->mu);
	if (!stop) /* stopping: the socket goes with the process (see aio_op) */
		nng_close(s);
	return rv == 0 ? 0 : -1;
}

static void *probe_main(void *arg)
{
	health *h = arg;
	/* 2 s: a loaded machine's hello may take a while, and a stop waits
	 * for the probe in flight (health_stop) */
	int timeout_ms = HEALTH_TIMEOUT_MS;

	for (;;) {
		/* the first round one interval after the start, as every later one */
		struct timespec until = after_ms(CLOCK_MONOTONIC, h->interval_ms);
		pthread_mutex_lock(&h->mu);
		while (!h->stop && pthread_cond_timedwait(&h->cv, &h->mu, &until) != ETIMEDOUT)
			;
		int stopped = h->stop;
		pthread_mutex_unlock(&h->mu);
		if (stopped)
			return NULL;
		for (int i = 0; i < h->n; i++) {
			health_target *t = &h->t[i];
			char why[256];
			int no_pipe, was = atomic_load(&t->fails);
			int rv = probe_once(h, t, timeout_ms, why, sizeof(why), &no_pipe);
			pthread_mutex_lock(&h->mu);
			int stop = h->stop;
			if (rv != 0 && !stop)
				snprintf(t->why, sizeof(t->why), "%s", why);
			pthread_mutex_unlock(&h->mu);
			if (stop)
				return NULL;
			atomic_fetch_add(&t->probes, 1);
			if (rv == 0) {
				atomic_store(&t->fails, 0);
				atomic_store(&t->no_pipe, 0);
				if (was >= HEALTH_DOWN_AFTER)
					log_info("health: %s answers gpud's hello again", t->url);
				continue;
			}
			atomic_fetch_add(&t->failures, 1);
			atomic_store(&t->no_pipe, no_pipe);
			atomic_store(&t->fails, was + 1);
			if (was + 1 == HEALTH_DOWN_AFTER)
				log_error(
					"health: %s is down: gpud's own hello failed %d times in a "
					"row: %s",
					t->url, HEALTH_DOWN_AFTER, why);
			else
				log_warn("health: gpud's own hello through %s failed: %s", t->url,
					 why);
		}
		atomic_fetch_add(&h->rounds, 1);
	}
}

/* GPUD_FAIL_LOOP_STALL=SECONDS (tests): on SIGUSR2 the loop blocks that
 * long, once, as blocking work on it would. The test sends the signal when
 * it watches /readyz: a stall at a time of gpud's choosing could fall while
 * the test still waits for gpud's first answer (a slow start), and pass
 * unseen. */
static void stall_close(health *h)
{
	if (!h->stall_on)
		return;
	h->stall_on = 0;
	uv_signal_stop(&h->stall_test);
	uv_close((uv_handle_t *)&h->stall_test, NULL);
}

static void on_stall(uv_signal_t *sig, int signum)
{
	(void)signum;
	health *h = sig->data;
	log_warn("GPUD_FAIL_LOOP_STALL: blocking the loop for %.1f s", h->stall_test_s);
	usleep((useconds_t)(h->stall_test_s * 1e6));
	stall_close(h);
}

static void on_beat(uv_timer_t *timer)
{
	health *h = timer->data;
	atomic_store(&h->beat_ns, mono_ns());
	if (h->count_lost)
		atomic_store(&h->lost, h->count_lost(h->arg));
}

int health_start(health *h, uv_loop_t *loop, const gpud_config *cfg, const nng_listener *ls, int n,
		 int (*count_lost)(void *), void *arg, char *err, size_t errlen)
{
	int rv;
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cv, &ca);
	pthread_condattr_destroy(&ca);
	h->count_lost = count_lost;
	h->arg = arg;
	h->n = n;
	h->interval_ms = (unsigned)(cfg->health_probe_interval * 1000.0 + 0.5);
	h->stall_ns = 2ull * h->interval_ms * 1000000ull;
	if (h->stall_ns < 3000000000ull)
		h->stall_ns = 3000000000ull;
	for (int i = 0; i < n; i++) {
		snprintf(h->t[i].url, sizeof(h->t[i].url), "%s", cfg->listen[i]);
		endpoint_dial_url(cfg->listen[i], ls[i], h->t[i].dial, sizeof(h->t[i].dial));
		h->t[i].tls = endpoint_tls(cfg->listen[i]);
	}
	if (getrandom(h->key, sizeof(h->key), 0) != (ssize_t)sizeof(h->key)) {
		snprintf(err, errlen, "health: getrandom: %s", strerror(errno));
		return -1;
	}
	uv_timer_init(loop, &h->beat);
	h->beat.data = h;
	h->beat_on = 1;
	on_beat(&h->beat);
	uv_timer_start(&h->beat, on_beat, 1000, 1000);
	uv_unref((uv_handle_t *)&h->beat);
	const char *stall = getenv("GPUD_FAIL_LOOP_STALL");
	if (stall && (h->stall_test_s = strtod(stall, NULL)) > 0) {
		uv_signal_init(loop, &h->stall_test);
		h->stall_test.data = h;
		uv_signal_start(&h->stall_test, on_stall, SIGUSR2);
		uv_unref((uv_handle_t *)&h->stall_test);
		h->stall_on = 1;
	}
	if (h->interval_ms == 0 || n == 0)
		return 0;
	/* The probe checks that a listener answers, not who it is: no
	 * certificate check (gpud's own certificate may name another host). */
	if ((rv = nng_aio_alloc(&h->aio, NULL, NULL)) != 0 ||
	    (rv = nng_tls_config_alloc(&h->tls, NNG_TLS_MODE_CLIENT)) != 0 ||
	    (rv = nng_tls_config_auth_mode(h->tls, NNG_TLS_AUTH_MODE_NONE)) != 0) {
		snprintf(err, errlen, "health: TLS configuration for the self-probe: %s",
			 nng_strerror(rv));
		return -1;
	}
	if ((rv = pthread_create(&h->thr, NULL, probe_main, h)) != 0) {
		snprintf(err, errlen, "health: cannot start the self-probe's thread: %s",
			 strerror(rv));
		return -1;
	}
	h->thr_on = 1;
	pthread_setname_np(h->thr, "gpud:health");
	log_info("health: gpud says hello to itself through each listener every %.3g s",
		 (double)h->interval_ms / 1000.0);
	return 0;
}

int health_stop(health *h, int wait_ms)
{
	stall_close(h);
	if (h->beat_on) {
		h->beat_on = 0;
		uv_timer_stop(&h->beat);
		uv_close((uv_handle_t *)&h->beat, NULL);
	}
	if (!h->thr_on)
		goto free;
	/* The loop never waits on nng here: the probe sees stop after its send
	 * or receive in flight (its timeout, or gpud closing its listeners,
	 * ends that). */
	pthread_mutex_lock(&h->mu);
	h->stop = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (wait_ms <= 0)
		return 0;
	struct timespec until = after_ms(CLOCK_REALTIME, (unsigned)wait_ms);
	if (pthread_timedjoin_np(h->thr, NULL, &until) != 0) {
		log_warn("health: the self-probe's thread did not end within %d ms; gpud exits "
			 "without it",
			 wait_ms);
		return 0; /* its socket and TLS configuration go with the process */
	}
	h->thr_on = 0;
free:
	if (h->aio) {
		nng_aio_free(h->aio);
		h->aio = NULL;
	}
	if (h->tls) {
		nng_tls_config_free(h->tls);
		h->tls = NULL;
	}
	return 1;
}

int health_probe_key_ok(const health *h, const uint8_t *key, size_t len)
{
	unsigned diff = len != sizeof(h->key);
	for (size_t i = 0; i < sizeof(h->key); i++)
		diff |= (unsigned)(h->key[i] ^ (i < len ? key[i] : 0));
	return diff == 0;
}

int health_listener_up(health *h, int i)
{
	if (i < 0 || i >= h->n || h->interval_ms == 0 || atomic_load(&h->t[i].probes) == 0)
		return -1;
	return atomic_load(&h->t[i].fails) < HEALTH_DOWN_AFTER;
}

const char *health_why_not(health *h, int watchdog, char *buf, size_t len)
{
	uint64_t beat = atomic_load(&h->beat_ns), now = mono_ns();
	if (beat && now > beat && now - beat > h->stall_ns) {
		snprintf(buf, len, "the loop has not run for %.1f s", (double)(now - beat) / 1e9);
		return buf;
	}
	for (int i = 0; i < h->n; i++) {
		health_target *t = &h->t[i];
		int fails = atomic_load(&t->fails);
		if (fails < HEALTH_DOWN_AFTER || (watchdog && !atomic_load(&t->no_pipe)))
			continue;
		pthread_mutex_lock(&h->mu);
		snprintf(buf, len, "listener %s is down: gpud's own hello failed %d times: %s",
			 t->url, fails, t->why);
		pthread_mutex_unlock(&h->mu);
		return buf;
	}
	int lost = atomic_load(&h->lost);
	if (!watchdog && lost > 0) {
		snprintf(buf, len, "%d device%s lost", lost, lost == 1 ? "" : "s");
		return buf;
	}
	return NULL;
}
