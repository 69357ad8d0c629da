/*
 * gpud/client.h — libgpud-client, the C API of gpud.
 *
 * A client connects to a running gpud, uploads arrays into buffers that live
 * in the daemon (on the GPU with the cuda backend), runs named kernels on
 * them and downloads results. As the body of a function (make test-examples
 * compiles and runs it; build with the flags of pkg-config gpud-client):
 *
 * @code{.c}
 *     double xs[] = {0.0, 1.0, 2.5, 3.1}, ys[] = {1.0, -0.5, 0.25, 2.0};
 *     double fs[] = {0.5, 1.0, 2.0}, pgram[3];
 *     uint64_t n = 4, nf = 3;
 *     gpud_client *c;
 *     if (gpud_connect(NULL, &c) != GPUD_OK) {      // NULL: $GPUD_URL or default
 *             fprintf(stderr, "%s\n", gpud_errmsg(c));
 *             gpud_close(c);
 *             return 1;
 *     }
 *     gpud_handle x, y, f;
 *     gpud_alloc(c, GPUD_F64, 1, &n, xs, &x);        // allocate + upload
 *     gpud_alloc(c, GPUD_F64, 1, &n, ys, &y);
 *     gpud_alloc(c, GPUD_F64, 1, &nf, fs, &f);
 *     gpud_arg args[] = {gpud_arg_buffer("x", x), gpud_arg_buffer("y", y),
 *                        gpud_arg_buffer("freqs", f), gpud_arg_bool("normalize", 1)};
 *     gpud_output out;
 *     size_t nout;
 *     if (gpud_run(c, "lombscargle", args, 4, &out, 1, &nout, NULL) != GPUD_OK ||
 *         gpud_download_range(c, out.handle, 0, pgram, sizeof(pgram)) != GPUD_OK) {
 *             fprintf(stderr, "%s\n", gpud_errmsg(c));   // which argument, what was wrong
 *             gpud_close(c);
 *             return 1;
 *     }
 *     printf("%g %g %g\n", pgram[0], pgram[1], pgram[2]);
 *     gpud_handle done[] = {x, y, f, out.handle};
 *     gpud_free(c, done, 4);
 *     gpud_close(c);                                  // frees what is left, too
 *     return 0;
 * @endcode
 *
 * The version of the headers is in gpud/version.h (GPUD_VERSION_STRING),
 * with the library's ABI policy; gpud_version() gives the library's.
 *
 * Errors: every call returns a gpud_status. GPUD_OK is 0. On failure,
 * gpud_errmsg() gives the reason: the daemon's message verbatim for errors
 * the daemon reports (which argument, expected vs got), or the client's own
 * (connection, transport, bad arguments to the call).
 *
 * Threads: a gpud_client may be used from any number of threads at once;
 * every call in flight has an nng context of its own on the client's one
 * socket, so calls overlap in the daemon. gpud_errmsg(c) gives the message
 * of the calling thread's last call on c. Only gpud_close must not race
 * with other calls on the same client. gpud_strerror() and the gpud/npy.h
 * functions are safe from any thread.
 *
 * Reconnecting: when gpud restarts or the connection drops, the next call
 * re-establishes the session by itself (hello again, with the same URL,
 * token and TLS settings) and succeeds if it needs nothing from before.
 * Buffers of the lost connection are gone: a handle from before a restart
 * gets GPUD_ESTALE, never another buffer. A call during the outage waits
 * for gpud to come back up to the client's timeout (or, with none, the
 * connect timeout, 10 s by default) and then fails with GPUD_EUNAVAILABLE.
 * A call in flight at the moment the connection drops fails with
 * GPUD_ETRANSPORT: it may or may not have taken effect. Host memory from
 * gpud_host_alloc is handed to the new gpud again. gpud_reconnects() counts
 * the reconnections.
 *
 * Asynchronous jobs: gpud_run_async and gpud_call_async return a gpud_job at
 * once; wait for it, poll it or get a callback, and cancel it in gpud.
 *
 * Buffers belong to the connection that allocated them: closing the client
 * (or the process ending) frees them in the daemon.
 */
#ifndef GPUD_CLIENT_H
#define GPUD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <gpud/npy.h>
#include <gpud/types.h>
#include <gpud/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUD_DEFAULT_URL "ipc:///run/gpud/gpud.sock"

typedef enum gpud_status {
	GPUD_OK = 0,
	/* Reported by the daemon (the protocol's Status codes). */
	GPUD_EINVAL = 1,          /* a request field or kernel argument is wrong */
	GPUD_ENOTFOUND = 2,       /* unknown handle */
	GPUD_EUNKNOWN_KERNEL = 3, /* no kernel of that name */
	GPUD_ENOMEM = 4,          /* out of memory (daemon or device) */
	GPUD_E2BIG = 5,           /* over a size limit */
	GPUD_EUNSUPPORTED = 6,    /* the backend cannot do it */
	GPUD_EPROTO = 7,          /* malformed message or protocol version mismatch */
	GPUD_EBACKEND = 8,        /* the backend failed (e.g. a CUDA error) */
	GPUD_ESHUTDOWN = 9,       /* the daemon is stopping: the call was not done (never resent) */
	GPUD_EINTERNAL = 10,      /* a bug in gpud */
	GPUD_EQUOTA = 11,         /* over one of the tenant's quotas */
	GPUD_EACCESS = 12,        /* not authenticated (a bad token, not an administrator) */
	GPUD_ESTALE = 13,         /* a handle from before gpud restarted: its buffer is gone */
	GPUD_ECANCELED = 14,      /* the job was cancelled (gpud_job_cancel, a timeout) */
	GPUD_ENOSESSION = 15,     /* no hello on this connection (the library says it again) */
	/* Raised by the client library itself. */
	GPUD_ECONNECT = 100,     /* cannot reach the daemon (gpud_connect) */
	GPUD_ETRANSPORT = 101,   /* send or receive failed (the connection dropped mid-call) */
	GPUD_ETIMEDOUT = 102,    /* no reply within the client's timeout */
	GPUD_EARG = 103,         /* bad argument to a client call */
	GPUD_EUNAVAILABLE = 104, /* gpud went away and did not come back within the timeout */
	/* ipc://: the socket's mode and group do not let this user connect (the
	 * message names the socket, its mode, owner and group, and what to ask for) */
	GPUD_EPERM = 105,
} gpud_status;

typedef struct gpud_client gpud_client;

/* What the daemon said about itself in hello. */
typedef struct gpud_device_info {
	int index; /* the device's id: what gpud_set_device and runs name */
	char name[128];
	int cc_major, cc_minor;
	uint64_t memory_total, memory_free;
	int sm_count;
	/* lost: a sticky error took it out of service until gpud restarts */
	int lost;
	char lost_message[256];
	/* gpud_status_get only: gpud's use of it. Runs placed there and not
	 * yet answered, bytes of copies in flight, its buffers, seconds with a
	 * kernel run in flight (the rate of busy_s is its utilisation), runs
	 * done, runs it takes at once; its pool (has_pool) */
	unsigned runs, slots;
	uint64_t bytes_moving, buffers, bytes_in_use, runs_total;
	double busy_s;
	int has_pool;
	uint64_t pool_in_use, pool_cached, pool_high_water, pool_limit;
} gpud_device_info;

#define GPUD_MAX_DEVICES 16

typedef struct gpud_server_info {
	char version[32];
	unsigned protocol_version;
	char backend[16];
	/* largest payload of one request this connection may send, bytes: gpud's
	 * max_message_size, or the tenant's message_size quota where that is
	 * smaller (the library splits uploads to fit it) */
	uint64_t max_message_size;
	unsigned connection; /* this connection's id in gpud (status sessions) */
	char tenant[64];     /* who gpud takes this client for (quotas, handles) */
	uint64_t instance;   /* this run of gpud: changes when gpud restarts */
	int ndevices;
	gpud_device_info devices[GPUD_MAX_DEVICES];
} gpud_server_info;

/* A compiled kernel variant the cuda backend has loaded. */
typedef struct gpud_variant_info {
	char kernel[GPUD_NAME_MAX];
	char variant[32];
	int registers, block, max_threads;
	uint64_t shared_bytes, local_bytes;
} gpud_variant_info;

#define GPUD_MAX_VARIANTS 32

#define GPUD_MAX_SESSIONS 64

/* One connection's share of the daemon. */
typedef struct gpud_session_info {
	unsigned id;   /* gpud_server(c)->connection for one's own */
	char peer[64]; /* "uid 1000" over ipc://, HOST:PORT over tcp:// */
	uint64_t buffers, bytes, requests;
	unsigned in_flight;
	uint64_t regions, region_bytes; /* shared host memory mapped */
	char tenant[64];                /* who gpud takes the connection for ("" before hello) */
} gpud_session_info;

/*
 * What gpud showed in a status (gpud_daemon_status.scope), by who asked.
 * Another tenant's connections, peers, names and holdings are never shown to
 * a tenant.
 */
typedef enum gpud_status_scope {
	/* an administrator (gpud.conf's admin_tenants): everything */
	GPUD_SCOPE_ALL = 0,
	/* a tenant: connections, in_flight, requests, errors, cancelled,
	 * cancelled_closed, buffers, bytes_in_use, bytes_high_water, each
	 * device's buffers and bytes_in_use and sessions are its own; the
	 * devices' load and gpud's shared memory (pool, staging, lending) and
	 * the kernel variants are gpud's */
	GPUD_SCOPE_TENANT = 1,
	/* no hello on the connection (gpud_connect_for_status): server's
	 * version, protocol_version, backend and devices (what they are, their
	 * memory, lost or not) and degraded; everything else zero */
	GPUD_SCOPE_BEFORE_HELLO = 2,
} gpud_status_scope;

typedef struct gpud_daemon_status {
	gpud_server_info server; /* version, backend, devices (free memory: within 0.1 s) */
	int nvariants;
	gpud_variant_info variants[GPUD_MAX_VARIANTS];
	double uptime_s;
	uint64_t requests, errors;
	/* requests that ended cancelled: by their client (gpud_job_cancel, a
	 * timeout) or, cancelled_closed of them, because their connection closed
	 * (queued ones dropped, running ones stopped) */
	uint64_t cancelled, cancelled_closed;
	unsigned connections, in_flight;
	uint64_t buffers, bytes_in_use, bytes_high_water;
	/* cuda backend: the device memory pool (has_pool 0 on the cpu backend) */
	int has_pool;
	uint64_t pool_in_use, pool_cached, pool_high_water, pool_limit, pool_allocs, pool_hits;
	/* cuda backend: pinned staging buffers for copies through messages */
	int has_staging;
	unsigned staging_buffers, staging_free;
	uint64_t staging_chunk, bytes_staged;
	/* host memory gpud lends to ipc:// clients (has_lending 0 where it lends none):
	 * bytes ready for anyone, kept zeroed for their tenants, in clients' hands;
	 * lends served from a tenant's kept memory, from the spares, made to order */
	int has_lending;
	uint64_t lend_spare_bytes, lend_kept_bytes, lend_lent_bytes;
	uint64_t lend_from_kept, lend_from_spare, lend_made;
	/* host memory gpud commits for its clients (has_host_memory 0 from a gpud
	 * without the budget): used of limit (host_memory_limit), its high-water,
	 * requests refused for it, and used by part: the cpu backend's buffers,
	 * lent memory, client regions gpud pinned, cuda staging buffers, messages
	 * requests hold, request rings' reply areas */
	int has_host_memory;
	uint64_t host_used, host_limit, host_high_water, host_refused;
	uint64_t host_buffers, host_lent, host_pinned, host_staging, host_messages, host_rings;
	/* a device is lost and the others serve (gpud exits when none is left) */
	int degraded;
	/* per connection: the first GPUD_MAX_SESSIONS of nsessions_total */
	int nsessions;
	unsigned nsessions_total;
	gpud_session_info sessions[GPUD_MAX_SESSIONS];
	/* what this status covers (gpud_status_scope) and whose it is: the
	 * caller's tenant ("" before hello) */
	int scope;
	char tenant[64];
} gpud_daemon_status;

/* --- connection ------------------------------------------------------------ */

/*
 * Connects to url (NULL: $GPUD_URL, else GPUD_DEFAULT_URL) and says hello.
 * *out is set whenever memory allows, also on failure, so gpud_errmsg(*out)
 * can say why; always pass it to gpud_close().
 */
GPUD_API gpud_status gpud_connect(const char *url, gpud_client **out);

/* Everything a connection may be given; zero-filled fields take the defaults. */
typedef struct gpud_options {
	const char *url;             /* NULL: $GPUD_URL, else GPUD_DEFAULT_URL */
	const char *token;           /* tcp://: the tenant's bearer token; NULL: $GPUD_TOKEN */
	const char *tls_ca;          /* tls+tcp://: the CA's PEM file; NULL: $GPUD_TLS_CA */
	const char *tls_server_name; /* NULL: $GPUD_TLS_SERVER_NAME, else the URL's host */
	int timeout_ms;              /* per call, as gpud_set_timeout, and connecting; 0: none */
	int connect_timeout_ms;      /* connect + hello, and waiting for a restarted gpud
					when no timeout is set; 0: 10000 */
} gpud_options;

/*
 * As gpud_connect, with options (NULL: all defaults). Connecting (the dial,
 * nng's handshake and hello) ends within connect_timeout_ms and timeout_ms,
 * whichever is shorter (connect_timeout_ms 0: timeout_ms, else 10 s); a list
 * of endpoints shares that time, each getting at least an equal part of
 * what is left. Failures: GPUD_ECONNECT
 * (nothing listens there), GPUD_ETIMEDOUT (something accepted the connection
 * but did not answer in time: a wedged gpud), GPUD_EPERM (ipc://: the
 * socket's mode and group refuse this user), GPUD_EACCESS (a token refused).
 */
GPUD_API gpud_status gpud_connect_opts(const gpud_options *opts, gpud_client **out);
/*
 * Connects without saying hello, so without a token: gpud answers status
 * before hello (a monitor needs no tenant), and gpud_status_get is the one
 * call served on such a connection (others fail, GPUD_ENOSESSION).
 * gpud_server(c) stays empty. For gpuctl status against a tcp:// gpud the
 * caller has no token for.
 */
GPUD_API gpud_status gpud_connect_for_status(const gpud_options *opts, gpud_client **out);
/*
 * Connects as gpud_connect_opts but leaves hello to the first call, one
 * round trip fewer for a short-lived process: a gpud_status_get carries the
 * hello inside its own request (gpuctl status), and any other first call
 * says hello before itself. Until then gpud_server(c) is empty and nothing
 * is known of the tenant; a refused token (GPUD_EACCESS) or a gpud that is
 * shutting down (GPUD_ESHUTDOWN) shows on that first call, which then gave
 * no status, and the next call tries hello again. Connecting fails only
 * where gpud_connect_for_status would (nothing reachable at the URL). With
 * a list of endpoints it says hello at connect, as gpud_connect_opts: the
 * list is tried in order until one answers hello.
 * Over ipc://, gpud_host_alloc before the first call is memory gpud lends
 * before hello (proto/shm.h: GPUD_SHM_CLAIM) where it can, and a
 * gpud_call_to on it is the first call: it carries the hello, which claims
 * that memory (a fresh `gpuctl run` in one round trip). GPUD_NO_CLAIM=1
 * says hello first instead.
 */
GPUD_API gpud_status gpud_connect_deferred(const gpud_options *opts, gpud_client **out);
/*
 * As gpud_connect_deferred, but with one endpoint it returns before the
 * dial is done: the dial goes on, on a thread of its own, while the caller
 * prepares its first call (over ipc://, gpud_host_alloc's memory lent
 * before hello and a gpud_host_read into it need no connection yet: `gpuctl
 * run` reads its inputs meanwhile). The first call and gpud_connect_wait
 * wait for it; a dial that failed fails them, and every later call, with
 * what gpud_connect_deferred would have returned (GPUD_ECONNECT, GPUD_EPERM,
 * GPUD_ETIMEDOUT, with its message). With a list of endpoints: as
 * gpud_connect_deferred. Errors of its own: GPUD_ENOMEM, a URL that does
 * not parse.
 */
GPUD_API gpud_status gpud_connect_start(const gpud_options *opts, gpud_client **out);
/* Waits for gpud_connect_start's dial: GPUD_OK, or how it failed (gpud_errmsg
 * says why). GPUD_OK at once on a connection made otherwise. */
GPUD_API gpud_status gpud_connect_wait(gpud_client *c);
/* Closes the connection; no other call on c may be in flight. */
GPUD_API void gpud_close(gpud_client *c);

/* Per-call timeout in milliseconds for later calls; 0 (default) waits forever. */
GPUD_API void gpud_set_timeout(gpud_client *c, int timeout_ms);

/* How many times c has re-established its session (gpud restarted, the link dropped). */
GPUD_API unsigned gpud_reconnects(const gpud_client *c);

GPUD_API const gpud_server_info *gpud_server(const gpud_client *c);
GPUD_API const char *gpud_url(const gpud_client *c);

/* Message of the last failed call on c ("" after a success). c may be NULL. */
GPUD_API const char *gpud_errmsg(const gpud_client *c);
/* Short fixed text for a status: "invalid argument". */
GPUD_API const char *gpud_strerror(gpud_status s);

/* --- buffers ----------------------------------------------------------------
 *
 * Arrays larger than the daemon's max_message_size are sent and fetched in
 * message-sized pieces by these calls; callers need not split them.
 */

/*
 * Allocates an array of dtype and shape in the daemon. With data non-NULL it
 * is uploaded in the same round trip (dtype size x product(shape) bytes).
 */
GPUD_API gpud_status gpud_alloc(gpud_client *c, gpud_dtype dtype, int ndim, const uint64_t *shape,
				const void *data, gpud_handle *out);
/*
 * Reads a .npy file straight into a new buffer: the file's data goes from
 * the page cache into the request with no intermediate copy. meta (may be
 * NULL) receives the array's dtype and shape (its data is NULL). A file that
 * gpud_npy_load refuses is refused with the same message (GPUD_EARG).
 */
GPUD_API gpud_status gpud_alloc_npy(gpud_client *c, const char *path, gpud_handle *out,
				    gpud_array *meta);
/* Downloads a whole buffer straight into a .npy file at path. */
GPUD_API gpud_status gpud_download_npy(gpud_client *c, gpud_handle h, const char *path);

/* Writes len bytes at byte offset. */
GPUD_API gpud_status gpud_upload(gpud_client *c, gpud_handle h, uint64_t offset, const void *data,
				 size_t len);
/* Reads a whole buffer into a new gpud_array (free with gpud_array_free). */
GPUD_API gpud_status gpud_download(gpud_client *c, gpud_handle h, gpud_array *out);
/* Reads len bytes at byte offset into dst. With len 0 gpud still checks the
 * handle and the offset (an offset past the end is refused). */
GPUD_API gpud_status gpud_download_range(gpud_client *c, gpud_handle h, uint64_t offset, void *dst,
					 size_t len);
/*
 * Returns once everything this client queued before has completed in the
 * daemon (its stream on the GPU is idle).
 */
GPUD_API gpud_status gpud_sync(gpud_client *c);

/* Frees n buffers; if any handle is unknown, none is freed. */
GPUD_API gpud_status gpud_free(gpud_client *c, const gpud_handle *handles, size_t n);

/*
 * keep 1: buffers that later gpud_alloc / gpud_alloc_npy calls make are kept:
 * they belong to the tenant (this client's user over ipc://, its token's
 * name over tcp://), outlive the connection and count against the tenant's
 * kept_buffers quota until gpud_free. keep 0 (the default): they go when
 * the connection closes.
 */
GPUD_API void gpud_set_keep(gpud_client *c, int keep);

/*
 * device >= 0: later gpud_alloc / gpud_alloc_npy calls put their buffers
 * on that device (gpud_server(c)->devices[i].index) and pin them there, and
 * later runs and calls run on it (their new outputs live there, unpinned;
 * input buffers on other devices are copied to it, pinned ones refused). -1 (the
 * default): gpud places them: a run where its buffers are, fresh work where
 * the tenant's buffers are, else on the least-loaded device. A device gpud
 * does not have is an error of the call that names it.
 */
GPUD_API void gpud_set_device(gpud_client *c, int device);

typedef struct gpud_buffer_info {
	gpud_handle handle;
	gpud_dtype dtype;
	int ndim;
	uint64_t shape[GPUD_MAX_DIMS];
	size_t nbytes;
	int kept;
	int device; /* where it lives */
	int pinned; /* its device was chosen (gpud_set_device): never copied off it */
} gpud_buffer_info;

/* The tenant's kept buffers; *out is malloc'd (free()), *n of them. */
GPUD_API gpud_status gpud_list(gpud_client *c, gpud_buffer_info **out, size_t *n);

/* A kept buffer and its tenant (gpud_list_all). */
typedef struct gpud_tenant_buffer {
	char tenant[64];
	gpud_buffer_info info;
} gpud_tenant_buffer;

/*
 * Administrators (a tenant in gpud.conf's admin_tenants): every tenant's
 * kept buffers; *out is malloc'd (free()), *n of them. GPUD_EACCESS for
 * other tenants. gpud logs each call.
 */
GPUD_API gpud_status gpud_list_all(gpud_client *c, gpud_tenant_buffer **out, size_t *n);
/*
 * Administrators: frees n kept buffers of tenant (handles as gpud_list_all
 * gives them); if any is not a kept buffer of that tenant, none is freed.
 * GPUD_EACCESS for other tenants. gpud logs each call.
 */
GPUD_API gpud_status gpud_free_tenant(gpud_client *c, const char *tenant,
				      const gpud_handle *handles, size_t n);

/* --- host memory shared with gpud ---------------------------------------------
 *
 * Over ipc://, gpud can map the client's memory (proto/shm.h): array bytes
 * then go between these pages and the device by DMA, never through the
 * socket. gpud_host_alloc returns such memory, page-locked by gpud so copies
 * run at the device's full host-link speed; pass pointers into it to
 * gpud_alloc, gpud_upload and gpud_download_range and they use it directly
 * (one request whatever the size, no message size limit).
 *
 * Without calling these, the library still uses shared memory on its own for
 * transfers of 1 MiB and more over ipc://: through a pinned 64 MiB scratch
 * region (one memcpy on the client's side), and .npy files are read straight
 * into a region. Over tcp:// everything goes through messages.
 */

/*
 * bytes of page-locked memory shared with gpud, page-aligned, zero-filled;
 * NULL on failure (gpud_errmsg says why; GPUD_EUNSUPPORTED over tcp:// or
 * when gpud has no region socket). Valid until gpud_host_free or
 * gpud_close.
 */
GPUD_API void *gpud_host_alloc(gpud_client *c, size_t bytes);
/* Gives back memory from gpud_host_alloc (the pointer it returned). */
GPUD_API gpud_status gpud_host_free(gpud_client *c, void *p);
/*
 * Reads len bytes of the file fd from offset into memory dst. Into host
 * memory of c (gpud_host_alloc's), 4 MiB and more from a regular file, gpud
 * reads them itself through its own mapping of that memory, whose pages it
 * has already mapped; else the kernel copies them straight into the pages
 * (sendfile on the memory's descriptor). Either way this process need not
 * have touched them: 4 MiB into fresh lent memory in 0.55 ms (gpud) or 0.66
 * (sendfile) where mapping the pages and read() took 0.98 (H200 host,
 * docs/performance.md). Anywhere else, and from a file sendfile cannot
 * read, pread. fd must be readable at an offset (not a pipe or a socket);
 * its own offset is not used.
 * GPUD_EARG, with a message naming the file's descriptor and the offset,
 * when the file ends before offset + len or cannot be read (the system's
 * error).
 */
GPUD_API gpud_status gpud_host_read(gpud_client *c, void *dst, int fd, uint64_t offset, size_t len);
/*
 * Writes len bytes of memory src into the file fd at offset. From host
 * memory of c (gpud_host_alloc's), 8 MiB and more, into a regular file, gpud
 * writes them itself through its own mapping of that memory, so this
 * process never maps those pages (gpud_set_populate). Anywhere else, or
 * where gpud does not, pwrite. fd must be writable at an offset (not
 * O_APPEND, a pipe or a socket); its own offset is not used.
 * GPUD_EARG, with a message naming the descriptor and the offset, when the
 * file cannot be written (the system's error).
 */
GPUD_API gpud_status gpud_host_write(gpud_client *c, const void *src, int fd, uint64_t offset,
				     size_t len);
/* 1 if this connection can share memory with gpud (ipc:// and offered);
 * on a gpud_connect_deferred connection before its first call, 1 for
 * ipc:// (gpud_host_alloc then finds out). */
GPUD_API int gpud_has_shm(const gpud_client *c);

/*
 * The request ring: over ipc://, calls travel through memory shared with
 * gpud instead of the socket (several times less latency for small calls),
 * one call at a time; the others, and requests of 2 MiB or more, take the
 * socket, as does a session's first call (the ring is made at its second:
 * a process that makes one call sets none up). On by default where gpud offers it ($GPUD_NO_RING=1 turns the
 * default off); on = 0 sends every later call through the socket.
 */
GPUD_API void gpud_set_ring(gpud_client *c, int on);
/* How many calls of c went through the request ring so far. */
GPUD_API uint64_t gpud_ring_calls(const gpud_client *c);

/* --- kernels ---------------------------------------------------------------- */

typedef enum gpud_arg_kind {
	GPUD_ARG_BUFFER,
	GPUD_ARG_F64,
	GPUD_ARG_I64,
	GPUD_ARG_BOOL,
	GPUD_ARG_ARRAY, /* gpud_call only: host data sent with the request */
	GPUD_ARG_TEXT,  /* a name: a dtype for kernels that choose their output's */
} gpud_arg_kind;

typedef struct gpud_arg {
	const char *name;
	gpud_arg_kind kind;
	union {
		gpud_handle buffer;
		double f64;
		int64_t i64;
		int b;
		const gpud_array *array;
		const char *text;
	} v;
} gpud_arg;

/*
 * The arguments of a run or call, by name. Exported functions (not inline),
 * so FFI layers can call them too. Strings and arrays are pointed to, not
 * copied: they must live until the call that takes the argument returns.
 */
/* A buffer in gpud, by handle. */
GPUD_API gpud_arg gpud_arg_buffer(const char *name, gpud_handle h);
/* An input array in host memory (gpud_call): dtype, shape and data. */
GPUD_API gpud_arg gpud_arg_array(const char *name, const gpud_array *a);
/* Scalars: a float, an integer, a boolean (any non-zero v is true). */
GPUD_API gpud_arg gpud_arg_f64(const char *name, double v);
GPUD_API gpud_arg gpud_arg_i64(const char *name, int64_t v);
GPUD_API gpud_arg gpud_arg_bool(const char *name, int v);
/* A text scalar: a dtype's name, or one of a word argument's words (numbers
 * and booleans go as themselves: gpud_arg_i64, gpud_arg_f64, gpud_arg_bool). */
GPUD_API gpud_arg gpud_arg_text(const char *name, const char *text);
/* A dtype by name, e.g. gpud_arg_dtype("dtype", GPUD_F32) for uniform and normal. */
GPUD_API gpud_arg gpud_arg_dtype(const char *name, gpud_dtype t);

/* An output of a run: a buffer the daemon made (or the one passed in). */
typedef struct gpud_output {
	char name[GPUD_NAME_MAX];
	gpud_handle handle;
	gpud_dtype dtype;
	int ndim;
	uint64_t shape[GPUD_MAX_DIMS];
	int device; /* where it lives (the run's device) */
} gpud_output;

/* Timings of one run, measured inside the daemon. */
typedef struct gpud_run_info {
	double elapsed_us; /* request decoded to kernel done */
	double kernel_us;  /* the kernel alone (CUDA events on the cuda backend) */
} gpud_run_info;

/*
 * Runs kernel with args. Outputs not passed as buffer arguments are
 * allocated by the daemon; up to cap are written to outs and their number to
 * *nouts. Outputs past cap are not kept: gpud frees the ones it made in the
 * same request (cap 0: the run's effect on buffers passed in is all that
 * stays). info (may be NULL) receives the daemon's timings. A run that times
 * out is cancelled in gpud.
 */
GPUD_API gpud_status gpud_run(gpud_client *c, const char *kernel, const gpud_arg *args,
			      size_t nargs, gpud_output *outs, size_t cap, size_t *nouts,
			      gpud_run_info *info);

typedef enum gpud_param_role { GPUD_PARAM_IN, GPUD_PARAM_OUT, GPUD_PARAM_SCALAR } gpud_param_role;

typedef struct gpud_param_info {
	char *name;
	gpud_param_role role;
	unsigned dtypes; /* bit (1u << dtype) for each accepted dtype */
	int ndim;        /* required rank, -1 any */
	int optional;
	char *default_value; /* "" if none */
	char *type;          /* for people: "float32|float64 1-d array" */
	char *doc;
	/* an output: the inputs a run may give it in place of (the very same
	 * buffer), "x|y"; "" if none. gpud refuses any other overlap of an
	 * output with an input or another output. */
	char *inplace_of;
} gpud_param_info;

typedef struct gpud_kernel_info {
	char *name;
	char *doc;
	size_t nparams;
	gpud_param_info *params;
} gpud_kernel_info;

typedef struct gpud_kernel_list {
	size_t count;
	gpud_kernel_info *kernels;
} gpud_kernel_list;

/* An output that came back with gpud_call. */
typedef struct gpud_result {
	char name[GPUD_NAME_MAX];
	gpud_array array; /* data malloc'd; release with gpud_array_free */
} gpud_result;

/*
 * One job in one round trip: array arguments (gpud_arg_array) travel with
 * the request (their bytes in the message, or named where they lie in
 * gpud_host_alloc memory), buffer and scalar arguments as in gpud_run, the
 * kernel runs, and every output comes back in the reply; gpud keeps nothing.
 * Inputs and outputs must each fit in one message (max_message_size); use
 * gpud_alloc + gpud_run for bigger ones. Up to cap outputs go to outs.
 */
GPUD_API gpud_status gpud_call(gpud_client *c, const char *kernel, const gpud_arg *args,
			       size_t nargs, gpud_result *outs, size_t cap, size_t *nouts,
			       gpud_run_info *info);

/*
 * gpud_call with the outputs written by gpud straight into dst, room bytes of
 * gpud_host_alloc memory: nothing crosses the socket or is copied on this
 * side. Where they fit (each output at a multiple of 64 bytes from dst, in
 * output order), *in_dst is 1 and outs[i].array.data points into dst: do not
 * gpud_array_free those. Otherwise (too big, or dst is not gpud_host_alloc
 * memory of an ipc:// connection) they come back as with gpud_call, *in_dst
 * is 0 and the arrays are the caller's to free. Outputs written into dst
 * have their pages mapped into this process at once (reading them then takes
 * no page faults) unless gpud_set_populate(c, 0).
 */
GPUD_API gpud_status gpud_call_to(gpud_client *c, const char *kernel, const gpud_arg *args,
				  size_t nargs, void *dst, size_t room, gpud_result *outs,
				  size_t cap, size_t *nouts, gpud_run_info *info, int *in_dst);
/*
 * on = 0: gpud_call_to leaves the pages of the outputs gpud wrote into dst
 * unmapped in this process, for a caller that hands them on unread
 * (gpud_host_write: an 8 MiB output is then written to its file in 1.47 ms
 * where mapping its pages and pwrite took 1.64, docs/performance.md; smaller
 * ones it maps itself, in one call).
 * 1, the default: they are mapped at once, in one call.
 */
GPUD_API void gpud_set_populate(gpud_client *c, int on);

/*
 * gpud_call with the outputs copied into arrays of the caller's, no
 * allocation: into[i] (i < ninto) describes the output i the caller expects
 * (dtype, ndim, shape) and where it may go (data, nbytes: the memory for
 * exactly that). Output i with that very dtype and shape is copied there out
 * of the reply; outs[i].array.data is then into[i].data (not to be freed).
 * Any other output comes back as with gpud_call (malloc'd, the caller's to
 * gpud_array_free). *nused (may be NULL) receives how many outputs went into
 * the caller's arrays: ninto and *nouts both when every one was as expected.
 * On an error nothing of the caller's is freed.
 */
GPUD_API gpud_status gpud_call_into(gpud_client *c, const char *kernel, const gpud_arg *args,
				    size_t nargs, const gpud_array *into, size_t ninto,
				    gpud_result *outs, size_t cap, size_t *nouts, size_t *nused,
				    gpud_run_info *info);

/* A custom kernel to register (see kernels/custom/custom.h for the syntax). */
typedef struct gpud_kernel_spec {
	const char *name;
	int elementwise;    /* 0: raw CUDA C with a signature */
	const char *source; /* raw: the CUDA C; elementwise: the body, "z = x + y" */
	const char *entry;  /* raw: the extern "C" __global__ function */
	/* raw: "x:in f32[], out:out f32[], a:f32"; an output followed by
	 * inplace(x) (or inplace(x|w)) may be given the very buffer of input x */
	const char *signature;
	/* elementwise: "float32 x, float32 y", "float32 z" (or "float32 z inplace(x)") */
	const char *in_params, *out_params;
	unsigned block;         /* threads per block, 0: 256 */
	unsigned blocks_per_sm; /* grid-stride launch with SMs x this blocks; raw 0: _grid and
				   _block are run arguments */
	int fast_math;
	unsigned max_registers;
	int shared; /* for every tenant: administrators only (admin_tenants) */
} gpud_kernel_spec;

/*
 * Registers a kernel for this client's tenant: checked, compiled by gpud,
 * then run by name with gpud_run / gpud_call like a built-in. The compiler's
 * log comes back in gpud_errmsg on failure.
 */
GPUD_API gpud_status gpud_register(gpud_client *c, const gpud_kernel_spec *spec);
/*
 * gpud_register with flags: GPUD_REGISTER_UNPINNED registers the kernel
 * unpinned: at the tenant's custom_kernels quota (gpud.conf), registering
 * another kernel evicts the least recently used unpinned one. gpud_register
 * registers kernels pinned (they stay until removed).
 */
#define GPUD_REGISTER_UNPINNED 1u
GPUD_API gpud_status gpud_register_flags(gpud_client *c, const gpud_kernel_spec *spec,
					 unsigned flags);

/*
 * A reduction kernel, CuPy's ReductionKernel: in_params and out_params (one
 * output) as elementwise ones; map_expr of the inputs, reduce_expr of a and
 * b, identity, post_map_expr of a setting the output ("y = a"); reduce_type
 * a dtype name, NULL or "" for the output's. A run reduces the whole arrays
 * to a 0-d output, or with _axis -1 the last axis of 2-d arrays.
 */
typedef struct gpud_reduction_spec {
	const char *name;
	const char *in_params, *out_params;
	const char *map_expr, *reduce_expr, *post_map_expr, *identity, *reduce_type;
	unsigned block; /* threads per block, a power of two; 0: 256 */
	int fast_math;
	unsigned max_registers;
	int shared; /* for every tenant: administrators only (admin_tenants) */
} gpud_reduction_spec;
/* Registers a reduction kernel; flags as gpud_register_flags'. */
GPUD_API gpud_status gpud_register_reduction(gpud_client *c, const gpud_reduction_spec *spec,
					     unsigned flags);
GPUD_API gpud_status gpud_unregister(gpud_client *c, const char *name);
/* Removes a shared kernel (administrators only). */
GPUD_API gpud_status gpud_unregister_shared(gpud_client *c, const char *name);

/* Lists the daemon's kernels; free with gpud_kernel_list_free. */
GPUD_API gpud_status gpud_kernels(gpud_client *c, gpud_kernel_list **out);
GPUD_API void gpud_kernel_list_free(gpud_kernel_list *l);

/* How kernel i of a gpud_kernels list stands in gpud's registry. */
typedef struct gpud_kernel_registration {
	int custom;       /* 0: built in (and the rest 0) */
	int shared;       /* registered by an administrator for every tenant */
	int pinned;       /* never evicted to make room (see gpud_register_flags) */
	double last_used; /* Unix seconds of its last run, or of its registration or
			     of gpud's start if later; 0 from a gpud too old to say */
} gpud_kernel_registration;
/* GPUD_EARG if l is NULL, out is NULL or i is not under l->count. */
GPUD_API gpud_status gpud_kernel_registration_get(const gpud_kernel_list *l, size_t i,
						  gpud_kernel_registration *out);

/* --- asynchronous jobs ---------------------------------------------------------
 *
 * gpud_run_async and gpud_call_async send the request and return at once
 * with a job; one thread may keep many jobs in flight. The arguments (names,
 * texts, inline arrays' bytes) are copied before they return, except bytes
 * in gpud_host_alloc memory, which gpud reads while the job runs. A job ends
 * exactly once: gpud_job_wait returns, gpud_job_done turns 1, and the
 * callback (if any) runs, on a thread of the library's, where it must not
 * wait for other jobs. The client's timeout applies to each job.
 */
typedef struct gpud_job gpud_job;
typedef void (*gpud_job_fn)(gpud_job *job, void *arg);

/* gpud_run as a job: outputs with gpud_job_outputs. *out is NULL on failure. */
GPUD_API gpud_status gpud_run_async(gpud_client *c, const char *kernel, const gpud_arg *args,
				    size_t nargs, gpud_job_fn done, void *arg, gpud_job **out);
/* gpud_call as a job: results with gpud_job_results. */
GPUD_API gpud_status gpud_call_async(gpud_client *c, const char *kernel, const gpud_arg *args,
				     size_t nargs, gpud_job_fn done, void *arg, gpud_job **out);
/*
 * Waits up to timeout_ms (< 0: forever) for the job to end. Its status, or
 * GPUD_ETIMEDOUT if it has not ended yet (it goes on; wait again or cancel).
 */
GPUD_API gpud_status gpud_job_wait(gpud_job *job, int timeout_ms);
/* 1 once the job has ended. */
GPUD_API int gpud_job_done(const gpud_job *job);
/*
 * Asks gpud to drop the job: queued, it never runs; running, it finishes and
 * gpud frees the outputs it made. The job then ends with GPUD_ECANCELED,
 * unless its result was already on the way (then it ends as it would have).
 */
GPUD_API gpud_status gpud_job_cancel(gpud_job *job);
/* A run job's outputs, as gpud_run gives them (outputs past cap are freed in gpud). */
GPUD_API gpud_status gpud_job_outputs(gpud_job *job, gpud_output *outs, size_t cap, size_t *nouts,
				      gpud_run_info *info);
/* A call job's results, as gpud_call gives them; the arrays become the caller's. */
GPUD_API gpud_status gpud_job_results(gpud_job *job, gpud_result *outs, size_t cap, size_t *nouts,
				      gpud_run_info *info);
/* The job's error message ("" if it succeeded or has not ended). */
GPUD_API const char *gpud_job_errmsg(const gpud_job *job);
/*
 * Releases the job. A job not yet ended is cancelled first and waited for;
 * a run job's outputs not taken with gpud_job_outputs are freed in gpud.
 * Not from the job's own callback. Jobs still there when their client is
 * closed end then (GPUD_ETRANSPORT) and may be freed after it.
 */
GPUD_API void gpud_job_free(gpud_job *job);

/* --- daemon status ------------------------------------------------------------ */

GPUD_API gpud_status gpud_status_get(gpud_client *c, gpud_daemon_status *out);

#ifdef __cplusplus
}
#endif
#endif /* GPUD_CLIENT_H */
