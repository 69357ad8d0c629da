/*
 * proto/shm.h — the region socket: how a client shares host memory with gpud
 * so bulk array bytes never cross the nng socket.
 *
 * nng carries requests, not file descriptors, so memory is handed over on a
 * second Unix socket next to gpud's ipc:// socket (`shm_socket` in hello):
 *
 *   1. The client makes a memfd (memfd_create with MFD_ALLOW_SEALING), sizes
 *      it, and seals it with at least F_SEAL_SHRINK (and F_SEAL_GROW,
 *      F_SEAL_SEAL): gpud maps it, and a file that could shrink under that
 *      mapping would fault gpud (SIGBUS) on its next access.
 *   2. It connects a SOCK_SEQPACKET socket to shm_socket and sends one
 *      shm_register message with the memfd as SCM_RIGHTS ancillary data.
 *      `key` is the session_key hello returned on the nng connection, which
 *      binds the region to that connection.
 *   3. gpud checks the peer's uid (SO_PEERCRED) against the connection's
 *      (NNG_OPT_IPC_PEER_UID), the key, the seals, that the file is a plain
 *      tmpfs memfd (not hugetlbfs, whose faults can also SIGBUS) of the
 *      declared size; maps it; pins it if asked (cudaHostRegister, so copies
 *      are DMA from the client's own pages); and answers one shm_reply.
 *
 * Lent memory instead (GPUD_SHM_LEND): the client sends the same message
 * with no descriptor and the bytes it wants in `size`; gpud answers with a
 * memfd of its own as SCM_RIGHTS on the reply, sealed, already mapped and
 * pinned in gpud (daemon/lend.h), of reply.size >= size bytes, zero-filled,
 * and already the connection's region reply.region. The client maps it
 * (MAP_SHARED). Memory lent to a tenant is only ever lent to that tenant
 * again (zeroed first): a client may keep the descriptor after its region is
 * gone. A gpud without lending answers INVALID (no descriptor came).
 *
 * Lent before hello (GPUD_SHM_LEND | GPUD_SHM_CLAIM), so a fresh process
 * reaches gpud in one nng round trip (hello carried in its first request,
 * proto/gpud.proto): `key` is then a nonce the client drew (16 random
 * bytes, not all zero), and the socket's path is its ipc:// path with
 * ".shm" (gpud's default). gpud lends to the tenant that the peer's uid
 * said hello as before (NOT_FOUND where none has since gpud started: the
 * client says hello first then) and parks the region, bound to the peer's
 * pid and uid and to the nonce, until a hello from a connection of that
 * same process and tenant claims it (HelloRequest.claim); the region keeps
 * the id this reply gives. Unclaimed, it is given back after lend_claim_s
 * (30 s). A file copy into or out of it before the hello names it by the
 * nonce instead of a session key (GPUD_SHM_READ or GPUD_SHM_WRITE with
 * GPUD_SHM_CLAIM), from the same process. At most
 * 4 parked per tenant and 32 in all (QUOTA beyond), each within
 * shm_max_bytes.
 *
 * A file's bytes into a region, or a region's into a file (GPUD_SHM_READ,
 * GPUD_SHM_WRITE): the client sends one shm_file_io message with one
 * descriptor, a regular file it opened (readable for a read, writable for a
 * write), and gpud moves length bytes between the file at file_offset and
 * region at offset itself, through its own mapping of the region, whose
 * pages are already in its page tables (gpud lent or pinned them): the
 * client's process never maps them (a 4 MiB file in lent memory in 0.55 ms
 * where sendfile onto the memfd took 0.66, docs/performance.md). The same key and
 * user checks as a registration; the region must be one of that
 * connection's; gpud keeps no descriptor. The reply's size is the bytes
 * moved (length, or status INVALID_ARGUMENT where the file ended first).
 * gpud does one such copy at a time per tenant and two in all (each holds
 * one of its worker threads): QUOTA beyond, and the client copies the bytes
 * itself.
 *
 * Requests then name bytes as HostRef{region, offset} (proto/gpud.proto).
 * Regions belong to the connection: they go with it, or with UnmapRequest.
 * All integers little-endian (the socket never leaves the host).
 */
#ifndef GPUD_PROTO_SHM_H
#define GPUD_PROTO_SHM_H

#include <stdint.h>

#define GPUD_SHM_MAGIC "gpudshm1"
#define GPUD_SHM_KEY_LEN 16

enum {
	GPUD_SHM_PIN = 1u << 0, /* page-lock the region for the device (cuda) */
	/* The memfd is the connection's request ring (proto/ring.h) and a
	 * second descriptor, an eventfd, its doorbell; region is then 0. */
	GPUD_SHM_RING = 1u << 1,
	/* No descriptor comes: gpud lends one of its own (see above). */
	GPUD_SHM_LEND = 1u << 2,
	/* shm_file_io: the file's bytes into the region; or the region's into the file. */
	GPUD_SHM_READ = 1u << 3,
	GPUD_SHM_WRITE = 1u << 4,
	/* With GPUD_SHM_LEND: lent before hello, claimed by it (see above). */
	GPUD_SHM_CLAIM = 1u << 5,
};

typedef struct shm_register {
	char magic[8]; /* GPUD_SHM_MAGIC, no NUL */
	uint8_t key[GPUD_SHM_KEY_LEN];
	uint64_t size;  /* bytes of the memfd to map */
	uint32_t flags; /* GPUD_SHM_* */
	uint32_t reserved;
} shm_register;

/* GPUD_SHM_READ or GPUD_SHM_WRITE, with one descriptor (a regular file). */
typedef struct shm_file_io {
	char magic[8]; /* GPUD_SHM_MAGIC, no NUL */
	uint8_t key[GPUD_SHM_KEY_LEN];
	uint32_t flags;    /* GPUD_SHM_READ or GPUD_SHM_WRITE, nothing else */
	uint32_t reserved; /* 0 */
	uint64_t region;   /* one of the connection's regions */
	uint64_t offset;   /* bytes into the region */
	uint64_t length;   /* bytes to move, at least 1 */
	uint64_t file_offset;
} shm_file_io;

typedef struct shm_reply {
	int32_t status;    /* a Gpud__Status value; 0 is OK */
	uint32_t pinned;   /* 1 if gpud page-locked the region */
	uint64_t region;   /* the region's id for HostRef, when status is 0 */
	uint64_t size;     /* the region's bytes (a lend's may exceed the asked) */
	char message[488]; /* NUL-terminated reason when status is not 0 */
} shm_reply;

#endif
