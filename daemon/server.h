/*
 * daemon/server.h — gpud's core: the libuv loop that owns all state, the nng
 * REP socket with its contexts, the event queue into the loop, start and
 * orderly shutdown. Only main.c, server.c, server_start.c (start-up),
 * reload.c (SIGHUP) and the tests' injection hook (the fuzzer, the verb
 * tests) include this; verbs reach the daemon through daemon/request.h.
 *
 * Threads: nng's threads receive and send; they only hand events to the loop
 * (a locked queue plus uv_async) and flip their context's state under its
 * mutex. The loop thread decodes, checks the session and quotas, dispatches
 * through the verb table (daemon/verbs/) and replies. Every part the server
 * owns below (backend, buffers, regions, scheduler, registry, auth) is the
 * loop's, except where its own header says otherwise.
 */
#ifndef GPUD_SERVER_H
#define GPUD_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include <nng/nng.h>

#include "daemon/auth.h"
#include "daemon/devices.h"
#include "daemon/drain.h"
#include "daemon/hello_guard.h"
#include "daemon/health.h"
#include "daemon/batch.h"
#include "daemon/memtrim.h"
#include "daemon/observe.h"
#include "daemon/peers.h"
#include "daemon/regions.h"
#include "daemon/registry.h"
#include "daemon/reload.h"
#include "daemon/request.h"
#include "daemon/ring.h"

typedef struct gpud_server gpud_server;
typedef struct server_ctx server_ctx;
struct server_event;

struct gpud_server {
	uv_loop_t *loop;
	gpud_config *cfg;

	/* The parts requests reach (core points at them). */
	hostmem hostmem;    /* host memory gpud may commit (daemon/hostmem.h) */
	device_set devices; /* daemon/devices.h: a backend per device */
	buffer_table buffers;
	region_server regions;
	ring_server rings; /* request rings beside nng (ipc:// clients) */
	sched sched;
	registry registry;
	auth auth;
	hello_guard guard; /* failed hellos per peer */
	request_stats stats;
	metrics metrics; /* counters for /metrics */
	observe observe; /* the metrics and health endpoint */
	health health;   /* the self-probe and heartbeat behind readiness (daemon/health.h) */
	batcher batch;   /* dynamic batching's groups (daemon/batch.h) */
	gpud_core core;

	/* nng: the socket, its listeners and contexts (server_ctx: server.c) */
	nng_socket sock;
	nng_listener listeners[GPUD_MAX_LISTEN];
	int nlisteners;
	server_ctx *ctxs;
	/* An injected request's context (server_inject: the request rings,
	 * the fuzzer) kept after its reply for the next one; loop only. */
	server_ctx *inject_spare;
	int nctx;

	/* events from nng's threads to the loop */
	uv_async_t wake;
	pthread_mutex_t qlock;
	struct server_event *qhead, *qtail;
	/* new connections' peers until their sessions hold them: nng's threads
	 * put, the loop takes (daemon/peers.h) */
	peer_table peers;

	/* SIGHUP (daemon/reload.h): where the settings came from (main.c's;
	 * set once server_start returns), and the reload's state */
	const config_source *source;
	reload reload;

	/* shutdown (its stages: server.c; what is served meanwhile: drain.h) */
	uv_signal_t sigint, sigterm;
	uv_timer_t shutdown_timer;
	uv_timer_t stop_timer;
	drain_state drain;
	uint64_t last_request_ns;
	int contexts_stopping;
	_Atomic uint64_t last_reply_ns; /* when nng last took a reply (nng threads) */
	atomic_int sending;             /* replies handed to nng and not yet sent */
	memtrim trim;                   /* freed heap given back once quiet (the loop's) */
	atomic_int refusing; /* contexts stopped: new connections are closed (nng threads) */
	int stopped_ctxs;
	int exit_code;
	/* teardown closed gpud's socket and no thread of gpud's is left inside
	 * nng (the self-probe ended): main may end nng itself (nng_fini), so
	 * that nng's threads finish with what they still hold before exit */
	int nng_quiet;
	char *fatal; /* the backend's last words, once it cannot work any more */
};

/* server_start's refusal of the settings themselves (gpud exits 2 for it). */
#define SERVER_BAD_CONFIG (-2)
/*
 * Opens the backend, binds every listen URL, starts the contexts. 0; or
 * SERVER_BAD_CONFIG + err for a tokens_file, TLS files or a socket_group
 * gpud refuses (checked first, before anything is bound or opened; also a
 * socket_mode or socket_group that fails on a socket file after bind); or
 * -1 + err.
 */
int server_start(gpud_server *s, uv_loop_t *loop, gpud_config *cfg, char *err, size_t errlen);
/* Drain (daemon/drain.h), finish in-flight requests; then the loop ends. */
void server_shutdown(gpud_server *s);

/*
 * For tests, the fuzzer and the request rings: runs message m (taken)
 * through the request path as if it came on connection pipe_id from a peer
 * of uid peer_uid: a local connection, as over ipc:// (-1: not local, as
 * over tcp://; a connection new to gpud gets its session so), on the loop
 * thread. cb gets the reply (NULL if none could be built; the callee frees
 * nothing of it: cb owns it) once the request is done, which may be after
 * further turns of the loop.
 */
int server_inject(gpud_server *s, uint32_t pipe_id, int64_t peer_uid, nng_msg *m,
		  void (*cb)(void *arg, nng_msg *reply), void *arg);
/* The pseudo connection went away: its buffers and regions go. */
void server_inject_close(gpud_server *s, uint32_t pipe_id);

#endif
