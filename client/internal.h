/*
 * client/internal.h — what the files of libgpud-client share: the
 * gpud_client struct, the session and the request/reply exchange, the error
 * setter, the host regions and the requests that bounce through them. Not
 * installed; the client_* functions are hidden in both libraries, so
 * gpud/client.h and gpud/npy.h stay the whole API.
 *
 * libgpud-client is the only code that speaks gpud's protocol. One nng REQ
 * socket per client; every call in flight has an nng context of its own, so
 * threads share a client and calls overlap. Array bytes go straight from the
 * caller's memory into the request message and from the reply message into
 * the caller's memory: one copy each way in user space, none through
 * protobuf.
 *
 * The files, in layers: each calls only the layers under it (and its
 * own), never up. A lower layer that must tell a higher one something
 * leaves it to the top: gpud_close (close.c) alone knows every part.
 *
 *   0  err.c       each thread's error text, gpud_strerror, gpud_errmsg,
 *                  the call timeout; clock.c (monotonic ms, deadlines);
 *                  beside them, calling nothing of the connection: types.c,
 *                  args.c (gpud_arg_*), npy.c, version.c
 *   1  endpoint/   the kinds of endpoint, one row and file each (ipc.c,
 *                  tcp.c, tls.c; endpoint.[ch] the table, by scheme: kind,
 *                  scheme, local, tls, the dialer's setup, a failed dial's
 *                  cause); access.c (why a Unix socket refused this user),
 *                  tls_diag.c (why a tcp:// or tls+tcp:// dial failed)
 *   2  dial.c      the list of endpoints, dialing one within a time limit
 *   3  ctx.c       nng contexts, cancels in flight
 *      msg.c       packing a request, checking and unpacking a reply
 *      shm.c       the region socket: a memfd handed to gpud
 *   4  session.c   hello, and saying it again after gpud restarted or the
 *                  connection dropped (the pipe events that tell), failover;
 *                  a hello carried by a first status (gpud_connect_deferred)
 *   5  ring.c      the request ring: the local fast path beside the socket
 *   6  call.c      one round trip: the ring, else the socket
 *   7  region.c    memfd host regions handed to gpud, the scratch region
 *      host_io.c   a file read into host memory, or memory written into a
 *                  file: by gpud (the region socket), else here
 *      transfer.c  alloc, upload, download (.npy too), sync, free
 *      run.c       run and call: the request, and what its reply gives
 *      job.c       asynchronous jobs (gpud_run_async, gpud_call_async)
 *      admin.c     keep, list, register, kernels, status
 *      (in that order: host_io.c and run.c use region.c, run.c
 *      transfer.c, job.c run.c)
 *   8  open.c      gpud_connect*, and what a connection says of itself
 *      close.c     gpud_close: frees jobs, regions, ring, contexts
 *
 * Who touches what (threads: any number of callers, plus nng's own threads
 * for pipe events and job completions):
 *   - fixed at connect, read by all: sock, url, token, TLS settings,
 *     connect_timeout_ms;
 *   - atomics (__atomic builtins): timeout_ms, keep, device1, next_id, reconnects,
 *     populate_off;
 *   - under mu: the session (gen, lost, helloing, session_pipe, info and
 *     the message limits, shm path and key), the host regions, the list of jobs and the kernel
 *     variants status last gave;
 *   - under scratch_mu: the scratch region and its two contexts (one
 *     bounced transfer at a time);
 *   - under host_io_mu: the file offsets of the host regions' memfds
 *     (gpud_host_read: one copy into host memory at a time);
 *   - under ring_mu: the request ring (one call at a time; others use
 *     the socket meanwhile);
 *   - under ctx_mu: the free contexts, the cancels in flight;
 *   - error text: each thread's own (a thread-local buffer), and c->msg
 *     under msg_mu for gpud_errmsg from a thread that made no call.
 */
#ifndef GPUD_CLIENT_INTERNAL_H
#define GPUD_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nng/nng.h>

#include <gpud/client.h>

#include "proto/ring.h"
#include "proto/shm.h"
#include "proto/wire.h"

/* Transfers from ordinary memory of at least this many bytes go through a
 * host region (ipc:// only); smaller ones ride in the message. */
#define SHM_MIN (1u << 20)
/* The scratch region those transfers bounce through. */
#define SCRATCH_MAX (64u << 20)
/* connect + hello, and the wait for a restarted gpud, when no timeout is set. */
#define CONNECT_TIMEOUT_MS 10000
/* How often one call says hello again and resends before giving up. */
#define SESSION_TRIES 3

typedef struct region {
	void *base;
	size_t size;
	uint64_t id;  /* gpud's id in session gen; 0: not registered now */
	uint64_t gen; /* the session it is registered in */
	int fd;       /* the memfd, kept to hand it to a restarted gpud (-1: not kept) */
	int pin;
	int claimed; /* lent before hello (GPUD_SHM_CLAIM): gen 0 until a hello claims it */
} region;

/* The connection's request ring (proto/ring.h), ring.c's. */
typedef struct client_ring {
	void *base; /* NULL: none */
	size_t size, cap;
	gpud_ring_hdr *hdr;
	uint8_t *req, *rep;   /* its two areas */
	int efd;              /* gpud's doorbell */
	uint64_t gen;         /* the session it belongs to */
	uint32_t seq;         /* the last req_seq written */
	uint32_t rep_seen;    /* the last rep_seq read */
	int broken;           /* a call gave up on it: the socket from now on */
	uint64_t avg_wait_ns; /* replies' recent wait (sets how long a call spins) */
} client_ring;

/* An nng context with its aio, for one call at a time (ctx.c's free list). */
typedef struct call_ctx {
	nng_ctx ctx;
	nng_aio *aio;
	struct call_ctx *next;
} call_ctx;

/* A request in flight on an nng context of its own (transfer.c's bounce). */
typedef struct async_req {
	call_ctx *x;
	uint64_t id;
	int busy;
} async_req;

/* Endpoints a client may be given (GPUD_URL=URL,URL,...), at most. */
#define CLIENT_MAX_ENDPOINTS 8

struct gpud_client {
	nng_socket sock;
	int open;
	/* The endpoints, in the order given (fixed after connect), the one in use
	 * (url: one of urls[], swapped atomically by the thread saying hello,
	 * read through client_url()) and its dialer (that thread's). */
	char urls[CLIENT_MAX_ENDPOINTS][1024];
	int nurls;
	const char *url;
	nng_dialer dialer;
	char *token, *tls_ca, *tls_server_name;
	int connect_timeout_ms;
	int timeout_ms; /* atomic */
	int keep;       /* atomic; gpud_set_keep */
	int device1;    /* atomic; gpud_set_device's device + 1 (0: gpud places) */
	uint64_t next_id;
	unsigned reconnects;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t gen;          /* sessions so far: 1 after connect */
	int lost;              /* the session's pipe went away */
	int helloing;          /* a thread is saying hello */
	int no_hello;          /* gpud_connect_for_status: never says hello (set at connect) */
	int defer_hello;       /* gpud_connect_deferred: the first status carries hello */
	uint32_t session_pipe; /* the pipe hello answered on */
	/* Memory lent before hello (client_region_claim): the nonce the next
	 * hello carries as its claim (CLAIM_LENT), carried (CLAIM_SENT); and
	 * whether the hello answered claimed it. */
	uint8_t claim[GPUD_SHM_KEY_LEN];
	enum { CLAIM_NONE, CLAIM_LENT, CLAIM_SENT } claim_state;
	int claim_ok;
	/* info.max_message_size is the smaller of these two (where set) */
	uint64_t max_message;   /* gpud's max_message_size */
	uint64_t quota_message; /* the tenant's message_size quota (0: none) */
	/* The session whose gpud said it is shutting down (a reply marked
	 * draining); 0: none. Its calls that then find the connection closed
	 * were not done: GPUD_ESHUTDOWN, never resent. */
	uint64_t draining_gen;
	gpud_server_info info;
	char shm_path[108]; /* "" when gpud offers no regions on this connection */
	uint8_t key[GPUD_SHM_KEY_LEN];
	region *regions;
	size_t nregions, cap;
	/* The kernel variants of gpud's run variants_instance (fixed for a run;
	 * status asks without them once it has them); nvariants -1: none yet. */
	uint64_t variants_instance;
	int nvariants;
	gpud_variant_info variants[GPUD_MAX_VARIANTS];
	struct gpud_job *jobs; /* not yet freed (job.c) */

	pthread_mutex_t scratch_mu;
	region scratch; /* base NULL until needed */
	pthread_mutex_t host_io_mu;
	/* Two requests in flight: the scratch region's halves are filled (or
	 * emptied) while the other half's copy runs. */
	async_req ar[2];

	pthread_mutex_t ctx_mu;
	call_ctx *free_ctx;
	unsigned cancels; /* client_cancel_async requests in flight */
	pthread_cond_t cancels_cv;

	pthread_mutex_t msg_mu;
	char msg[2048];
	/* gpud_connect_start: the dial runs on a thread of its own (dial_lazy,
	 * set before it starts, never cleared) until the first call or
	 * gpud_connect_wait joins it (client_dial_join); its outcome in dial_st
	 * and dial_msg. Under dial_mu after the start. */
	int dial_lazy, dial_pending, dial_budget;
	pthread_mutex_t dial_mu;
	pthread_t dial_thread;
	gpud_status dial_st;
	char dial_msg[2048];

	/* One call at a time uses the ring (a trylock: the others take the
	 * socket); tried_gen: the session a ring was last tried in. */
	pthread_mutex_t ring_mu;
	client_ring ring;
	uint64_t ring_tried_gen;
	uint64_t ring_first_gen; /* the session whose first call went by the socket */
	int ring_off;            /* atomic; gpud_set_ring(c, 0), or $GPUD_NO_RING */
	int populate_off;        /* atomic; gpud_set_populate(c, 0) */
	uint64_t ring_calls;     /* atomic; gpud_ring_calls */
};

/* --- err.c ---------------------------------------------------------------- */

/* Sets the calling thread's message for c (and c's) and returns st. */
gpud_status client_seterr(gpud_client *c, gpud_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A call on c begins: the calling thread's message for c is "". */
void client_clear(gpud_client *c);
/* The calling thread's message for c. */
const char *client_msg(const gpud_client *c);
/* The call timeout (gpud_set_timeout), in ms; 0: none. */
int client_timeout(const gpud_client *c);
/* c is being freed: the calling thread's message is about no client now. */
void client_forget(const gpud_client *c);
/* Appends "[i+1] msg" (after "; ") to buf, which holds used bytes; the new length. */
size_t client_append_why(char *buf, size_t cap, size_t used, int i, const char *msg);

/*
 * Runs expr (a gpud_status) again while it says GPUD_ENOSESSION: the request
 * reached a connection without hello (gpud restarted, or the link was
 * re-made) and was not done; the next try says hello first and rebuilds
 * every request (host regions get new ids in a new session).
 */
#define CLIENT_RETRY(c, expr)                                                                      \
	do {                                                                                       \
		gpud_status st_;                                                                   \
		int tries_ = 0;                                                                    \
		client_clear(c);                                                                   \
		while ((st_ = (expr)) == GPUD_ENOSESSION && ++tries_ < SESSION_TRIES)              \
			client_clear(c);                                                           \
		return st_;                                                                        \
	} while (0)

/* --- clock.c -------------------------------------------------------------- */

/* CLOCK_MONOTONIC in milliseconds; the milliseconds until deadline, at least 1. */
int64_t client_now_ms(void);
int client_left_ms(int64_t deadline);

/* --- dial.c --------------------------------------------------------------- */

/*
 * list as a list of endpoints, URL[,URL]... (spaces around each allowed),
 * into c->urls; c->url the first. -1 with the message when one is empty or
 * too long, or there are more than CLIENT_MAX_ENDPOINTS.
 */
int client_endpoints_parse(gpud_client *c, const char *list);
/* Dials endpoint i (c->url becomes it, c->dialer its dialer); flags 0 waits
 * for the connection (nng's handshake included) at most wait_ms (<= 0: as
 * long as nng takes; GPUD_ETIMEDOUT past it), NNG_FLAG_NONBLOCK dials in the
 * background (nng keeps trying); on failure the message says why (dial.c;
 * the connecting thread, or the one saying hello). */
gpud_status client_dial(gpud_client *c, int i, int flags, int wait_ms);
/* The endpoint in use (dial.c): any thread. */
static inline const char *client_url(const gpud_client *c)
{
	return __atomic_load_n(&c->url, __ATOMIC_ACQUIRE);
}

/* --- ctx.c ---------------------------------------------------------------- */

/* A context for one call, and back. NULL with the message set. */
call_ctx *client_ctx_get(gpud_client *c);
void client_ctx_put(gpud_client *c, call_ctx *x);
void client_ctx_free_all(gpud_client *c);
/* Waits until no client_cancel_async request is in flight (after the socket closed). */
void client_cancels_wait(gpud_client *c);
/* Asks gpud to cancel request id, without waiting (safe from any thread). */
void client_cancel_async(gpud_client *c, uint64_t id);

/* --- msg.c ---------------------------------------------------------------- */

/* Packs req (id and version filled in) with room for plen payload bytes at *payload. */
gpud_status client_pack(gpud_client *c, Gpud__Request *req, const void *data, size_t plen,
			nng_msg **m, void **payload);
/*
 * Checks and unpacks a reply message (taking m), as client_exchange()
 * returns it; errors go to msg (not the thread's message): for jobs.
 * *draining (may be NULL): 1 if the reply said gpud is shutting down, also
 * on an error reply.
 */
gpud_status client_parse_reply(nng_msg *m, uint64_t id, Gpud__Response **resp, nng_msg **rmsg,
			       uint8_t **rpayload, size_t *rplen, char *msg, size_t msglen,
			       int *draining);
/* Expects the reply body `want`; frees and fails otherwise. */
gpud_status client_expect_body(gpud_client *c, Gpud__Response *r, Gpud__Response__BodyCase want,
			       const char *verb);

/* The status for an nng error of a round trip's send or receive. */
gpud_status client_nng_status(int rv);
/* The most payload one request may carry: what hello said (gpud's
 * max_message_size, or the tenant's message_size quota where smaller). */
size_t client_chunk_limit(gpud_client *c);
/* The most payload one reply may carry (gpud's max_message_size): downloads. */
size_t client_reply_limit(gpud_client *c);
/* What sets client_chunk_limit, for messages: "the message_size quota of
 * tenant T" or "the daemon's message size limit (max_message_size ...)". */
const char *client_limit_name(gpud_client *c, char *buf, size_t len);
/* The devices of a hello or status reply, up to GPUD_MAX_DEVICES. */
void client_copy_devices(gpud_server_info *info, Gpud__Device **devs, size_t n);

/* --- shm.c ---------------------------------------------------------------- */

/*
 * One registration on the region socket shm_path (key: the session's): the
 * memfd fd (-1: none) and the doorbell efd (-1: none) of size bytes with
 * flags; gpud's reply in *rep, a descriptor that came with it in *rfd (else
 * -1). GPUD_OK, or the status with the message set.
 */
gpud_status client_shm_exchange(gpud_client *c, int fd, int efd, size_t size, uint32_t flags,
				const char *shm_path, const uint8_t *key, shm_reply *rep, int *rfd);
/*
 * gpud copies length bytes between the regular file fd at file_offset and
 * the session's region region_id at offset (flags GPUD_SHM_READ: the file into the
 * region; GPUD_SHM_WRITE: the region into the file). GPUD_OK once all are
 * moved, or the status with the message set.
 */
gpud_status client_shm_file_io(gpud_client *c, int fd, uint32_t flags, uint64_t region_id,
			       uint64_t offset, uint64_t length, uint64_t file_offset,
			       const char *shm_path, const uint8_t *key);
/* Hands memfd fd (and efd, if not -1) to gpud on the region socket; *id on success. */
gpud_status client_shm_register(gpud_client *c, int fd, int efd, size_t size, uint32_t flags,
				const char *shm_path, const uint8_t *key, uint64_t *id);

/* --- session.c ------------------------------------------------------------ */

/* Says hello if the session is lost (or none yet); *gen is the session's. */
gpud_status client_session(gpud_client *c, uint64_t *gen);
/* Waits for gpud_connect_start's dial (open.c): GPUD_OK, or how it failed. */
gpud_status client_dial_join(gpud_client *c);
/* The first hello, at connect (no other thread has c yet), within wait_ms,
 * what is left of limit_ms (named in messages). */
gpud_status client_session_first(gpud_client *c, int wait_ms, int limit_ms);
/*
 * For a call that can carry the connection's first hello (a status): 1 when
 * it should (gpud_connect_deferred, no session yet), with h filled; the
 * caller then holds helloing and ends it with client_session_carried.
 * Else 0, and *st and *gen as client_session gives them.
 */
int client_session_carry(gpud_client *c, Gpud__HelloRequest *h, uint64_t *gen, gpud_status *st);
/* The round trip of req, which carries the hello, as hello's own (its limits
 * and messages): *r the reply, *pipe the connection it came on. */
gpud_status client_session_greet(gpud_client *c, Gpud__Request *req, Gpud__Response **r,
				 uint32_t *pipe);
/* The carried hello's end: its answer hr from the reply that came on pipe,
 * with the devices the reply listed (the session is made), or NULL (it
 * failed, or an older gpud did not take it: from then on each call says
 * hello itself when there is no session). */
void client_session_carried(gpud_client *c, const Gpud__HelloResponse *hr, uint32_t pipe,
			    Gpud__Device **devs, size_t ndevs);
/* A request of session gen found no session: the next call says hello. */
void client_session_lost(gpud_client *c, uint64_t gen);
/* gpud said in session gen that it is shutting down (a reply marked draining). */
void client_session_draining(gpud_client *c, uint64_t gen);
/*
 * A round trip of session gen failed with nng's rv, in its send or (sent)
 * its receive: GPUD_ESHUTDOWN with the message when the connection closed,
 * or none came to send on, after gpud said it is shutting down (then gpud
 * never took the call); else GPUD_OK and nothing set (the caller's own
 * timeout included).
 */
gpud_status client_closed_draining(gpud_client *c, uint64_t gen, int rv, int sent);
/* Watches c's pipes (once, at connect). */
void client_session_watch(gpud_client *c);
/* The session's shm state, copied under mu: 0 if none. */
int client_shm(gpud_client *c, char *path, size_t plen, uint8_t *key, uint64_t *gen);
/* client_parse_reply with the thread's message; NO_SESSION marks session gen lost. */
gpud_status client_take_reply(gpud_client *c, uint64_t gen, nng_msg *m, uint64_t id,
			      Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload,
			      size_t *rplen);

/* --- ring.c --------------------------------------------------------------- */

/*
 * The round trip of packed request m (id, session gen) through the
 * connection's request ring, made on first use: 1 with the outcome in *st
 * (m taken) as client_exchange() gives it, or 0 (m untouched) when the
 * ring cannot take it (none, in use by another call, m too large): the
 * caller uses the socket.
 */
int client_ring_exchange(gpud_client *c, uint64_t gen, nng_msg *m, uint64_t id,
			 Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload, size_t *rplen,
			 gpud_status *st);
/* Unmaps the ring (gpud_close). */
void client_ring_free(gpud_client *c);

/* --- call.c --------------------------------------------------------------- */

/*
 * One round trip. On GPUD_OK, *resp is the unpacked reply (free with
 * gpud__response__free_unpacked) and, if rmsg is non-NULL, *rmsg holds the
 * reply message whose payload is at *rpayload. GPUD_ENOSESSION: not done
 * (see CLIENT_RETRY).
 */
gpud_status client_call(gpud_client *c, Gpud__Request *req, const void *payload, size_t plen,
			Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload, size_t *rplen);
/* Sends a packed request of session gen (taking m) and receives its reply, as client_call(). */
gpud_status client_exchange(gpud_client *c, uint64_t gen, nng_msg *m, uint64_t id,
			    Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload,
			    size_t *rplen);

/* --- region.c ------------------------------------------------------------- */

/*
 * A sealed memfd of size bytes, mapped here and registered with gpud
 * (pinned there if pin); keep_fd keeps the memfd (to register it again
 * after a reconnect). GPUD_OK with *out filled, or an error.
 */
gpud_status client_region_make(gpud_client *c, size_t size, int pin, int keep_fd, region *out);
/*
 * 1 where gpud_host_alloc may lend before hello (client_region_claim): a
 * gpud_connect_deferred connection to one ipc:// URL with no session yet,
 * and GPUD_NO_CLAIM unset.
 */
int client_may_claim(gpud_client *c);
/*
 * Memory gpud lends before hello (GPUD_SHM_CLAIM), parked in gpud for the
 * hello that carries c->claim; *out (gen 0, claimed) on GPUD_OK.
 */
gpud_status client_region_claim(gpud_client *c, size_t size, region *out);
/* 1 with the region socket's path and the claim's nonce where c has memory
 * lent before hello that no hello claimed yet (GPUD_SHM_CLAIM copies). */
int client_claim_shm(gpud_client *c, char *path, size_t plen, uint8_t *nonce);
/* Asks gpud to drop region id; unmapping it here is the caller's. */
gpud_status client_region_unmap(gpud_client *c, uint64_t id);
/*
 * The id of the gpud_host_alloc region holding [p, p+len) in the current
 * session (registered again first if gpud restarted), or 0.
 */
uint64_t client_region_of(gpud_client *c, const void *p, size_t len, uint64_t *off);
/* A descriptor of the memfd of host memory [p, p + len) of c (a dup, the
 * caller closes it) and p's offset in it; -1 when no region with a kept
 * descriptor holds all of it. */
int client_region_fd_dup(gpud_client *c, const void *p, size_t len, off_t *off);
/* The pinned scratch region, at least want bytes (up to SCRATCH_MAX); scratch_mu held. */
gpud_status client_scratch(gpud_client *c, size_t want);
/* Unmaps every region here (gpud_close). */
void client_regions_free(gpud_client *c);

/* Maps the pages of [p, p + len) of a shared region now, in one call, instead
 * of a fault per page (write: about to be written; else read). */
void client_populate(const void *p, size_t len, int write);

/* --- run.c ---------------------------------------------------------------- */

/* The outputs of a run reply, up to cap, as gpud_run gives them. */
void client_run_outputs(const Gpud__Response *r, gpud_output *outs, size_t cap, size_t *nouts,
			gpud_run_info *info);
/* Where gpud_call_to asks for the outputs: room bytes of gpud_host_alloc memory at base;
 * where gpud_call_into copies them: the caller's arrays into[0..ninto). */
typedef struct call_dst {
	uint8_t *base;
	size_t room;
	int offered;     /* client_run_msg named it in the request */
	uint64_t offset; /* base's offset in its region */
	const gpud_array *into;
	size_t ninto;
	size_t used;     /* outputs copied into the caller's arrays */
	int no_populate; /* outputs written into base: their pages not mapped here at once */
} call_dst;
/* The results of a call reply (payload pl, pll bytes), as gpud_call gives them;
 * outputs gpud wrote into dst's memory point there (*in_dst 1); outputs that
 * match dst->into[i] are copied there (dst->used). */
gpud_status client_call_results(const Gpud__Response *r, const uint8_t *pl, size_t pll,
				call_dst *dst, gpud_result *outs, size_t cap, size_t *nouts,
				gpud_run_info *info, int *in_dst, char *msg, size_t msglen);
/*
 * The packed run request (return_outputs for gpud_call); with limit, gpud
 * keeps only the first max_outputs outputs; with dst (and return_outputs),
 * the outputs go there where they fit. *names: the buffer arguments' names
 * joined by '\n' (malloc'd; NULL to skip), for jobs.
 */
gpud_status client_run_msg(gpud_client *c, const char *verb, const char *kernel,
			   const gpud_arg *args, size_t nargs, int return_outputs, int limit,
			   uint32_t max_outputs, call_dst *dst, nng_msg **m, uint64_t *id,
			   char **names, Gpud__HelloRequest *hello);

/* --- job.c ---------------------------------------------------------------- */

/* The socket has closed: waits for every job's end and detaches them from c. */
void client_jobs_orphan(gpud_client *c);

/* gpud_set_device into a request's pin_device and device. */
static inline void client_device_into(gpud_client *c, protobuf_c_boolean *pin, int32_t *device)
{
	int d1 = __atomic_load_n(&c->device1, __ATOMIC_RELAXED);
	*pin = d1 > 0;
	*device = d1 > 0 ? d1 - 1 : 0;
}

#endif /* GPUD_CLIENT_INTERNAL_H */
