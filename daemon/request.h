/*
 * daemon/request.h — one request from decode to reply, and the layer the
 * verbs call: reply, fail, hold what the request uses, and the parts of the
 * daemon a request may reach (gpud_core).
 *
 * The server (daemon/server.c) fills a gpud_request per received message,
 * checks the session, tenant and quotas, and hands it to verbs_dispatch
 * (daemon/verbs/). A verb ends in exactly one reply — request_reply,
 * request_fail or request_send_msg — at once or from a backend completion;
 * the reply releases everything the request held and gives the message to
 * the server's send function. Verbs include this header, never server.h.
 *
 * gpud_request holds what every verb shares. A verb with state of its own
 * has a request type that embeds gpud_request first (a run's: run_request,
 * daemon/verbs/run.h) and resets that state itself when it starts; the
 * server keeps each request in a verb_request (daemon/verbs/verbs.h), room
 * for the largest. request_begin is the one reset of the common part.
 *
 * Functions whose names end in _or_fail reply with the error themselves
 * when they fail; the caller then returns without replying. After its reply
 * a request belongs to the server again (an injected one is freed): nothing
 * of r may be touched once a reply function has been called.
 *
 * Everything here runs on the loop thread (checked with ON_LOOP).
 */
#ifndef GPUD_REQUEST_H
#define GPUD_REQUEST_H

#include <stdint.h>
#include <uv.h>

#include <nng/nng.h>

#include "daemon/buffers.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/status.h"
#include "gpud.pb-c.h"

/* What the common part names without needing whole: the verbs include
 * their headers (daemon/verbs/verbs.h). */
typedef struct gpud_config gpud_config;
typedef struct device_set device_set;
typedef struct gpud_device gpud_device;
typedef struct region_server region_server;
typedef struct host_region host_region;
typedef struct registry registry;
typedef struct custom_entry custom_entry;
typedef struct auth auth;
typedef struct hostmem hostmem;

/* The most arguments a request binds (a run: one per kernel parameter,
 * KERNEL_MAX_PARAMS, checked in daemon/verbs/run.h); it holds, makes and
 * copies through at most one more. */
#define REQUEST_MAX_ARGS 16

/* Counters for status, kept by the server and the request layer. */
typedef struct request_stats {
	uint64_t started_ns;
	uint64_t requests, errors;
	uint64_t cancelled,
		cancelled_closed; /* ended ST_CANCELLED; of them, their connection closed */
	uint32_t in_flight;
} request_stats;

/* The parts of gpud a request may reach, owned by the server. */
typedef struct gpud_core {
	uv_loop_t *loop;
	const gpud_config *cfg;
	device_set *devices;   /* each with its backend and run scheduler */
	buffer_table *buffers; /* sessions, tenants, buffers */
	region_server *regions;
	registry *registry;
	const auth *auth;
	struct hello_guard *guard; /* failed hellos per peer (daemon/hello_guard.h) */
	request_stats *stats;
	metrics *metrics;      /* counters for /metrics (daemon/metrics.h) */
	hostmem *host;         /* the host memory budget (daemon/hostmem.h), or NULL */
	struct health *health; /* the self-probe's key (daemon/health.h), or NULL */
	struct batcher *batch; /* dynamic batching's groups (daemon/batch.h), or NULL */
} gpud_core;

typedef struct gpud_request gpud_request;
/* The server's: sends m (NULL: no reply could be built) and frees the request's slot. */
typedef void (*request_send_fn)(gpud_request *r, nng_msg *m);

struct gpud_request {
	/* Set by the server for every request. */
	gpud_core *core;
	request_send_fn send;
	void *sender; /* the server's context */
	nng_msg *msg; /* the request; payload points into it */
	Gpud__Request *req;
	uint8_t *payload;
	size_t payload_len;
	uint32_t pipe_id;
	gpud_session *session;
	gpud_tenant *tenant; /* counted in its in_flight until the reply */
	uint64_t t0_ns;
	dstatus status;                /* how it failed (request_fail), for metrics */
	uint64_t bytes_up, bytes_down; /* array bytes its copies moved, for metrics */
	/* The device it works on (placement.h): its run, its new buffers. With
	 * run_counted it counts in dev->runs until the reply; moving: bytes it
	 * counts in moving_dev->bytes_moving until the reply. */
	gpud_device *dev;
	int run_counted;
	int dev_busy; /* its kernel is in dev's backend (device_run_started) */
	gpud_device *moving_dev;
	uint64_t moving;

	/* What the request holds until its reply, released by it. */
	gpud_buffer *held[REQUEST_MAX_ARGS + 1]; /* a reference each */
	int nheld;
	gpud_buffer *created[REQUEST_MAX_ARGS + 1]; /* released if the request fails */
	int ncreated;
	gpud_buffer *temps[REQUEST_MAX_ARGS]; /* inline arrays, returned outputs */
	int ntemps;
	host_region *regions[REQUEST_MAX_ARGS + 1]; /* host regions copied from or to */
	int nregions;
	nng_msg *reply;      /* a reply being filled by the backend (download) */
	uint64_t host_bytes; /* its messages' bytes in the host memory budget */
	/* device blocks made off the loop for this request's allocations, and
	 * the verb to run again once the one it waits for is made */
	buffer_spares spares;
	void (*redo)(gpud_request *r);
	uv_work_t alloc_work;
	dstatus alloc_status;
	char alloc_err[256];
	custom_entry *custom; /* a custom kernel it runs or registers */
	/* the answer to the hello it carried (verbs_carried_hello), sent with
	 * its reply and freed with it; and the regions a hello claimed */
	Gpud__HelloResponse *carried_hello;
	uint32_t claimed;

	/* several copies in flight (sync, a run's uploads and returned
	 * outputs): how many, and the first error among them */
	int pending;
	dstatus pending_status;
	char pending_msg[512];
	/* The verb's own clean-up at the reply (a run gives back its slot):
	 * called once, first, by the reply's release of everything r holds. */
	void (*on_release)(gpud_request *r);

	/* Cancelling (a CancelRequest, or the connection closing): the request
	 * is in its session's list from dispatch to reply; a verb that can stop
	 * part-way sets on_cancel. cancelled is also read by backend workers. */
	struct gpud_request *snext, *sprev;
	int tracked;
	int cancelled;
	const char *cancel_why;
	void (*on_cancel)(gpud_request *r);

	/* Who it is for in logs and traces once its session has closed (the
	 * session's tenant while it lives: hello may set it); its NVTX range
	 * (daemon/trace.h) from dispatch to reply. */
	int session_gone;
	gpud_tenant *who;
	int traced;
	uint64_t trace_id;
};

/*
 * Message bytes of HOSTMEM_MESSAGE_MIN or more that r holds until its reply
 * (its payload, a reply it builds) count in the host memory budget; smaller
 * ones are left to the budget's headroom, so a full budget still lets every
 * tenant's small requests and downloads through.
 */
#define HOSTMEM_MESSAGE_MIN ((uint64_t)1 << 20)
/* Counts bytes of a message r holds (see above): 0, or -1 after replying
 * OUT_OF_MEMORY with "what: host memory: ... asked, ... in use". */
int request_hold_host_or_fail(gpud_request *r, const char *what, uint64_t bytes);

/* Readies r for a new message (the server, before it checks anything). */
void request_begin(gpud_request *r, gpud_core *core, request_send_fn send, void *sender,
		   nng_msg *msg, uint32_t pipe_id);
/* A reply's head: its version, id, and the answer to a hello r carried
 * (request_reply fills it in; a verb that packs its own reply calls it). */
void request_reply_head(gpud_request *r, Gpud__Response *resp);
/* Packs resp (code, message, id and version filled in here) + payload and sends it. */
void request_reply(gpud_request *r, Gpud__Response *resp, const void *payload, size_t len);
/* Replies with an error status and a formatted message. */
void request_fail(gpud_request *r, dstatus status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Sends a reply message already built (a download's). */
void request_send_msg(gpud_request *r, nng_msg *m);

/*
 * One of r's allocations would wait for the device (buffers_alloc said
 * ST_WOULD_BLOCK; r->spares.want is its size): gives back what r made and
 * holds so far (the memory of what it made is kept in r->spares), makes the
 * block on a worker, then runs redo(r) on the loop, which finds it in
 * r->spares. A request cancelled meanwhile fails with CANCELLED instead.
 * The verb returns at once after calling this.
 */
void request_alloc_off_loop(gpud_request *r, void (*redo)(gpud_request *r));

/* r's kernel has left its device's backend (it ran, failed or never began):
 * the device's utilisation stops counting it. Once; no-op if not busy. */
void request_run_ended(gpud_request *r);
/* Copies of bytes issued on d for r: d's load until r's reply (placement.h). */
void request_moving(gpud_request *r, gpud_device *d, uint64_t bytes);
/* The device r should allocate on and run on: the one the request names
 * (pin_device, device: *pinned set), or where placement puts fresh work.
 * NULL after replying an error. */
gpud_device *request_device_or_fail(gpud_request *r, const char *verb, int pin, int32_t id,
				    int *pinned);

/* Holds a reference on b until the reply. */
void request_hold(gpud_request *r, gpud_buffer *b);
/* A buffer the request made: released if it fails, the client's if it succeeds. */
void request_created(gpud_request *r, gpud_buffer *b);
/* A buffer that goes with the request, whatever the outcome. */
void request_temp(gpud_request *r, gpud_buffer *b);

/* Replies NOT_FOUND "WHAT: unknown handle", or STALE for an earlier gpud's handle. */
void request_fail_handle(gpud_request *r, const char *what, uint64_t h);
/* The tenant's live buffer of handle h; NULL after request_fail_handle. */
gpud_buffer *request_buffer_or_fail(gpud_request *r, const char *verb, uint64_t h);
/*
 * The host memory a HostRef names: len bytes at ref->offset of one of the
 * connection's regions, held until the reply; *flags gets BACKEND_HOST_*.
 * NULL after replying the error.
 */
void *request_host_or_fail(gpud_request *r, const char *verb, const Gpud__HostRef *ref,
			   uint64_t len, unsigned *flags);

/* Puts r in its session's list of requests in gpud (the server, before
 * dispatch) and starts its trace range (daemon/trace.h); cancels it at once
 * if a cancel named it first. */
void request_track(gpud_request *r);
/* A cancel named request id of s, not in gpud: cancel it if it arrives (the
 * last SESSION_EARLY_CANCELS such ids are kept). */
void request_cancel_early(gpud_session *s, uint64_t id);
/* The request of session s with Request.id id still in gpud, or NULL. */
gpud_request *request_find(gpud_session *s, uint64_t id);
/* Marks r cancelled (why: for its error) and calls its on_cancel, which may reply. */
void request_cancel(gpud_request *r, const char *why);
/* s is closing: every request of it still in gpud is cancelled. */
void request_session_closed(gpud_session *s);
/* 1 once r is cancelled. */
int request_cancelled(const gpud_request *r);

/* The name of the verb whose Request body field is body_case (the verb
 * table's, daemon/verbs/table.h: the field's name, "run"), or NULL for none
 * and for a field the table has no row for. */
const char *request_verb_name(int body_case);
/* Its verb's name ("run", the Request body field's), or "-" before one is decoded. */
const char *request_verb(const gpud_request *r);
/* Its tenant's name, or NULL before hello fixed one. */
const char *request_tenant_name(const gpud_request *r);
/*
 * A log line about r: "conn=7 tenant=alice verb=run request=12: MESSAGE" in
 * text, those as fields in JSON (daemon/log.h). Every line about a request
 * goes through here.
 */
void request_log(const gpud_request *r, enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Several copies in flight: one finished with status; 1 if it was the last. */
int request_pending_done(gpud_request *r, dstatus status, const char *msg);

#endif
