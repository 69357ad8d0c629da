/*
 * daemon/server.h — gpud's core: the libuv loop that owns all state, the nng
 * REP socket with its contexts, and the request lifecycle.
 *
 * Threads: nng's threads receive and send; they only hand events to the loop
 * (a locked queue plus uv_async). The loop thread decodes, dispatches through
 * the verb table (daemon/verbs.c), calls the backend, and replies. Nothing on
 * the loop waits for the backend: ops complete through callbacks.
 */
#ifndef GPUD_SERVER_H
#define GPUD_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include <nng/nng.h>

#include "daemon/backend/backend.h"
#include "daemon/buffers.h"
#include "daemon/config.h"
#include "daemon/regions.h"
#include "kernels/custom/custom.h"
#include "kernels/core/kernel.h"
#include "proto/wire.h"

/* A tenant's registered kernel; runs hold a reference while in flight. */
typedef struct custom_entry {
	custom_kernel k;
	int refs;
	gpud_backend *backend; /* holds its compiled code */
	int shared;            /* for every tenant */
	UT_hash_handle hh;
} custom_entry;

typedef struct gpud_server gpud_server;
typedef struct server_ctx server_ctx;

/* The request a context is working on, from decode to reply. */
typedef struct gpud_request {
	gpud_server *srv;
	server_ctx *sc;
	nng_msg *msg; /* the request; payload points into it */
	Gpud__Request *req;
	uint8_t *payload;
	size_t payload_len;
	uint32_t pipe_id;
	gpud_session *session;
	gpud_tenant *tenant; /* counted in its in_flight until the reply */
	uint64_t t0_ns;
	/* Buffers this request holds a reference on, dropped at reply. */
	gpud_buffer *held[KERNEL_MAX_PARAMS + 1];
	int nheld;
	/* Buffers this request allocated and must release if it fails. */
	gpud_buffer *created[KERNEL_MAX_PARAMS + 1];
	int ncreated;
	nng_msg *reply; /* a reply being filled by the backend (download) */
	/* host regions this request copies from or to */
	host_region *regions[KERNEL_MAX_PARAMS + 1];
	int nregions;
	gpud_buffer *bound[KERNEL_MAX_PARAMS]; /* run: the buffer of each parameter */
	const kernel_def *kernel;
	kernel_args kargs;
	double kernel_us;
	/* run with inline arrays / return_outputs: buffers freed at the reply,
	 * copies in flight, the first error among them */
	gpud_buffer *temps[KERNEL_MAX_PARAMS];
	int ntemps;
	int pending;
	int pending_status;
	char pending_msg[512];
	struct gpud_request *qnext; /* its tenant's queue of runs (scheduler) */
	custom_entry *custom;       /* a custom kernel this run holds */
	int has_slot;               /* holds a backend run slot */
} gpud_request;

struct gpud_server {
	uv_loop_t *loop;
	gpud_config *cfg;
	gpud_backend backend;
	buffer_table buffers;
	region_server regions;

	nng_socket sock;
	nng_listener listeners[GPUD_MAX_LISTEN];
	int nlisteners;
	server_ctx *ctxs;
	int nctx;

	uv_async_t wake;
	pthread_mutex_t qlock;
	struct server_event *qhead, *qtail;

	uv_signal_t sigint, sigterm;
	uv_timer_t shutdown_timer;
	uv_timer_t stop_timer;
	uint64_t stop_started_ns, last_request_ns;
	int contexts_stopping;
	_Atomic uint64_t last_reply_ns; /* when nng last took a reply */
	atomic_int refusing;            /* stopping: new connections are closed */
	int stopping;
	int stopped_ctxs;
	int exit_code;

	/* tcp:// bearer tokens (tokens_file): tenant name and token */
	struct gpud_token {
		char tenant[GPUD_TENANT_NAME];
		char token[128];
	} * tokens;
	int ntokens;

	/* runs in the backend at once (run_slots), and the tenants waiting for
	 * a slot, served round-robin: one tenant's flood queues behind itself */
	int run_slots, runs_busy;
	gpud_tenant *ring_head, *ring_tail;

	uint64_t started_ns;
	uint64_t requests, errors;
	uint32_t in_flight;
	char *fatal; /* the backend's last words, once it cannot work any more */
};

uint64_t now_ns(void);

/* Opens the backend, binds every listen URL, starts the contexts. 0 or -1 + err. */
int server_start(gpud_server *s, uv_loop_t *loop, gpud_config *cfg, char *err, size_t errlen);
/* Stop accepting; finish in-flight requests; then the loop ends. */
void server_shutdown(gpud_server *s);

/*
 * For tests and the fuzzer: runs message m (taken) through the request path
 * as if it came on connection pipe_id from a peer of uid peer_uid (-1: not
 * ipc), on the loop thread. cb gets the reply (NULL if none could be built;
 * the callee frees nothing of it: cb owns it) once the request is done, which
 * may be after further turns of the loop.
 */
int server_inject(gpud_server *s, uint32_t pipe_id, int64_t peer_uid, nng_msg *m,
		  void (*cb)(void *arg, nng_msg *reply), void *arg);
/* The pseudo connection went away: its buffers and regions go. */
void server_inject_close(gpud_server *s, uint32_t pipe_id);

/* --- for verb handlers --- */

/* Packs resp (code, message, id and version filled in here) + payload and sends it. */
void request_reply(gpud_request *r, Gpud__Response *resp, const void *payload, size_t len);
/* Replies with an error status and a formatted message. */
void request_fail(gpud_request *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Sends a reply message already built (download). */
void request_send_msg(gpud_request *r, nng_msg *m);
/* Holds a reference on b until the reply. */
void request_hold(gpud_request *r, gpud_buffer *b);
/* Holds a reference on a host region until the reply. */
void request_hold_region(gpud_request *r, host_region *hr);

/* daemon/verbs.c */
void verbs_dispatch(gpud_request *r);
/* A run gives its backend slot back; the next waiting tenant's run starts. */
void sched_release(gpud_request *r);
void custom_unref(custom_entry *e);
/* Every custom kernel of every tenant (shutdown). */
void customs_fini(buffer_table *t);
/* The registrations kept in kernel_cache, at start. */
void customs_load(gpud_server *s);

#endif
