/*
 * daemon/health.h — whether gpud serves, as /readyz, gpud_ready,
 * gpud_listener_up and systemd's watchdog say it:
 *
 *   listeners  a self-probe: a thread of its own says hello through every
 *              listener every health_probe_interval seconds (its own nng REQ
 *              socket dialled at the listener's address, TLS where the
 *              listener has it, gpud's probe key in the hello); a listener
 *              whose last two probes failed is down
 *   the loop   a timer on the loop stores when it last ran; a loop that has
 *              not run for twice health_probe_interval (3 s at least) is
 *              stalled
 *   devices    how many of the devices are lost (the loop counts them)
 *
 * Not ready (/readyz 503, gpud_ready 0) when a listener is down, the loop
 * stalled or a device lost. The watchdog stops pinging (systemd then
 * restarts gpud) only when a listener completes no handshake (the probe's
 * hello could not even be sent) or the loop stalled: an unanswered hello
 * with the handshake done means every context is busy, which a restart
 * would not mend, and a lost device is device_lost's to decide.
 *
 * Threads: the probe thread owns its sockets and writes each target's
 * atomics (and `why` under mu); the loop owns the timer, writes `beat_ns`
 * and `lost`, and starts and stops the thread; nng's HTTP threads and the
 * loop read.
 */
#ifndef GPUD_HEALTH_H
#define GPUD_HEALTH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon/config.h"

#define HEALTH_KEY_LEN 16
#define HEALTH_DOWN_AFTER 2    /* failed probes in a row that make a listener down */
#define HEALTH_TIMEOUT_MS 2000 /* a probe's connect, and its hello's answer, each */

typedef struct health_target {
	char url[256];      /* as gpud listens on it */
	char dial[256];     /* where the probe dials (a wildcard host made loopback) */
	int tls;            /* dialled with TLS (its endpoint's; daemon/endpoint/endpoint.h) */
	atomic_int fails;   /* failed probes in a row (0: the last one answered) */
	atomic_int no_pipe; /* the last failure: the handshake never completed */
	atomic_uint_fast64_t probes, failures;
	char why[256]; /* the last failure, under health.mu */
} health_target;

typedef struct health {
	int n;
	health_target t[GPUD_MAX_LISTEN];
	uint8_t key[HEALTH_KEY_LEN]; /* this run's probe key: a hello with it is gpud's own */
	unsigned interval_ms;        /* 0: no self-probe */
	uint64_t stall_ns;           /* the loop has not run for this long: stalled */
	pthread_t thr;
	int thr_on;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	nng_tls_config *tls;
	nng_aio *aio; /* the probe's sends and receives (its thread's alone) */
	uv_timer_t beat;
	uv_signal_t stall_test; /* GPUD_FAIL_LOOP_STALL: SIGUSR2 blocks the loop (health.c) */
	double stall_test_s;
	int stall_on; /* stall_test is open */
	int beat_on;
	_Atomic uint64_t beat_ns; /* when the loop last ran the timer */
	atomic_int lost;          /* devices lost */
	atomic_int rounds;        /* probe rounds done */
	/* the loop's: how many devices are lost now */
	int (*count_lost)(void *arg);
	void *arg;
} health;

/* Starts the heartbeat and (interval > 0) the probe thread, for the listeners
 * urls[0..n) as bound (ls: their nng listeners, for a port the system chose).
 * On the loop. 0, or -1 with err. */
int health_start(health *h, uv_loop_t *loop, const gpud_config *cfg, const nng_listener *ls, int n,
		 int (*count_lost)(void *), void *arg, char *err, size_t errlen);
/* Stops the timer and tells the probe to stop (after its send or receive
 * in flight); with wait_ms > 0 waits up to that long for its thread to
 * end, then frees what it used. Never blocks on nng. On the loop. 1 when
 * no probe thread is left (none was started, or it ended), 0 while one may
 * still be inside nng. */
int health_stop(health *h, int wait_ms);
/* Whether key is this run's probe key (constant time). */
int health_probe_key_ok(const health *h, const uint8_t *key, size_t len);
/* NULL while gpud serves, else why not, in buf. watchdog: only what should
 * make systemd restart gpud. Any thread. */
const char *health_why_not(health *h, int watchdog, char *buf, size_t len);
/* Listener i: 1 up, 0 down, -1 not probed yet. */
int health_listener_up(health *h, int i);

#endif
