/*
 * daemon/observe.h — gpud's HTTP endpoint for monitoring (metrics_listen in
 * gpud.conf), served by nng's HTTP server:
 *
 *   /metrics  the Prometheus text format (daemon/metrics_text.c), made on the
 *             loop thread, which owns everything it reports
 *   /healthz  200 while the process answers (from nng's threads, so also
 *             while the backend warms up)
 *   /readyz   200 once the backend is warm and every listener bound, 503 with
 *             the reason while starting, shutting down, or after the GPU
 *             context was lost
 *
 * Threads: nng's HTTP threads run the handlers. /healthz and /readyz read
 * only the atomic `state`; /metrics hands its aio to the loop (a locked list
 * and a uv_async), where the page is rendered and the aio finished. The
 * loop sets the state and stops the endpoint.
 */
#ifndef GPUD_OBSERVE_H
#define GPUD_OBSERVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <uv.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

typedef enum observe_state {
	OBSERVE_STARTING, /* the backend is opening and warming up */
	OBSERVE_READY,    /* serving */
	OBSERVE_STOPPING, /* SIGTERM: draining */
	OBSERVE_LOST      /* the backend's context is lost; gpud exits */
} observe_state;

struct observe_pending;

typedef struct observe {
	nng_http_server *http; /* NULL: no endpoint (metrics_listen unset) */
	char addr[128];        /* where it listens, as bound ("127.0.0.1:9400") */
	atomic_int state;      /* observe_state */
	/* NULL while ready, else why not (in buf); any thread. NULL: none. */
	const char *(*why_not)(void *arg, char *buf, size_t len);
	void *why_arg;
	/* Renders /metrics (on the loop). */
	void (*render)(void *arg, FILE *out);
	void *arg;
	/* /metrics requests waiting for the loop; closing: answered 503 at once */
	uv_async_t wake;
	pthread_mutex_t mu;
	struct observe_pending *pending;
	int closing;
	int wake_open;
} observe;

/*
 * Starts the endpoint on listen ("HOST:PORT"; "" leaves it off). Call on the
 * loop's thread before uv_run. 0, or -1 with err naming metrics_listen and
 * what is wrong with it. Warns when the address is not a loopback one.
 */
int observe_start(observe *o, uv_loop_t *loop, const char *listen,
		  void (*render)(void *arg, FILE *out), void *arg, char *err, size_t errlen);
void observe_set_state(observe *o, observe_state st);
/* Answers what waits, stops the server and closes the loop's handle (on the loop). */
void observe_stop(observe *o);

#endif
