/*
 * client/internal.h — what the files of libgpud-client share: the
 * gpud_client struct, the request/reply exchange, the error setter, the host
 * regions and the requests that bounce through them. Not installed; the
 * client_* functions are hidden in both libraries, so gpud/client.h and
 * gpud/npy.h stay the whole API.
 *
 * libgpud-client is the only code that speaks gpud's protocol. One nng REQ
 * socket per client; each call is one request and one reply. Array bytes go
 * straight from the caller's memory into the request message and from the
 * reply message into the caller's memory: one copy each way in user space,
 * none through protobuf.
 *
 *   conn.c      connecting, hello, the exchange, close, errors, accessors
 *   region.c    memfd host regions handed to gpud, the scratch region
 *   transfer.c  alloc, upload, download (.npy too), sync, free
 *   run.c       run and call: building the arguments
 *   admin.c     keep, list, register, kernels, status
 *
 * Thread-safety: a gpud_client is used by one thread at a time (the caller
 * serialises, as gpud/client.h says), so nothing here locks. Every function
 * taking a client may change it: its message, next_id, regions, scratch.
 */
#ifndef GPUD_CLIENT_INTERNAL_H
#define GPUD_CLIENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

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

/* A request in flight on an nng context of its own (transfer.c's bounce). */
typedef struct async_req {
	nng_ctx ctx;
	nng_aio *aio;
	uint64_t id;
	int busy;
} async_req;

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
	async_req ar[2];
	int ar_open;
	char msg[2048];
};

/* --- conn.c --------------------------------------------------------------- */

/* Sets c's message (when c is not NULL) and returns st. */
gpud_status client_seterr(gpud_client *c, gpud_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * One round trip. On GPUD_OK, *resp is the unpacked reply (free with
 * gpud__response__free_unpacked) and, if rmsg is non-NULL, *rmsg holds the
 * reply message whose payload is at *rpayload.
 */
gpud_status client_call(gpud_client *c, Gpud__Request *req, const void *payload, size_t plen,
			Gpud__Response **resp, nng_msg **rmsg, uint8_t **rpayload, size_t *rplen);
/* Sends a packed request (taking m) and receives its reply, as client_call() does. */
gpud_status client_exchange(gpud_client *c, nng_msg *m, uint64_t id, Gpud__Response **resp,
			    nng_msg **rmsg, uint8_t **rpayload, size_t *rplen);
/* Checks and unpacks a reply message (taking m), as client_exchange() returns it. */
gpud_status client_take_reply(gpud_client *c, nng_msg *m, uint64_t id, Gpud__Response **resp,
			      nng_msg **rmsg, uint8_t **rpayload, size_t *rplen);
/* Expects the reply body `want`; frees and fails otherwise. */
gpud_status client_expect_body(gpud_client *c, Gpud__Response *r, Gpud__Response__BodyCase want,
			       const char *verb);
/* The most payload one request may carry: what the daemon said in hello. */
size_t client_chunk_limit(const gpud_client *c);
/* The devices of a hello or status reply, up to GPUD_MAX_DEVICES. */
void client_copy_devices(gpud_server_info *info, Gpud__Device **devs, size_t n);

/* --- region.c ------------------------------------------------------------- */

/*
 * A sealed memfd of size bytes, mapped here and registered with gpud
 * (pinned there if pin). GPUD_OK with *out filled, or an error.
 */
gpud_status client_region_make(gpud_client *c, size_t size, int pin, region *out);
/* Asks gpud to drop region id; unmapping it here is the caller's. */
gpud_status client_region_unmap(gpud_client *c, uint64_t id);
/* The gpud_host_alloc region holding [p, p+len), or NULL. */
const region *client_region_of(const gpud_client *c, const void *p, size_t len, uint64_t *off);
/* The pinned scratch region, at least want bytes (up to SCRATCH_MAX). */
gpud_status client_scratch(gpud_client *c, size_t want);

#endif /* GPUD_CLIENT_INTERNAL_H */
