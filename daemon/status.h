/*
 * daemon/status.h — the daemon's own result codes.
 *
 * Every layer under the request (buffers, regions, backends, the registry,
 * auth) returns a dstatus; nothing below the verbs knows the protocol. The
 * mapping to the wire's Status is written once, in status_wire (status.c),
 * and used where a reply leaves gpud (request.c, and the region socket's own
 * reply in regions.c).
 */
#ifndef GPUD_STATUS_H
#define GPUD_STATUS_H

typedef enum dstatus {
	ST_OK = 0,
	ST_INVALID,         /* a request field or kernel argument is wrong */
	ST_NOT_FOUND,       /* an unknown handle or host region */
	ST_UNKNOWN_KERNEL,  /* no kernel of that name for this tenant */
	ST_OUT_OF_MEMORY,   /* device or host memory */
	ST_TOO_LARGE,       /* over a size limit */
	ST_UNSUPPORTED,     /* the backend cannot do it */
	ST_PROTOCOL,        /* a malformed message or a version gpud does not speak */
	ST_BACKEND,         /* the backend failed (a CUDA error) */
	ST_SHUTTING_DOWN,   /* gpud is stopping and takes no new work */
	ST_INTERNAL,        /* a fault of gpud's own */
	ST_QUOTA,           /* over one of the tenant's quotas */
	ST_UNAUTHENTICATED, /* a bad token, or not an administrator */
	ST_STALE,           /* a handle of an earlier run of gpud */
	ST_CANCELLED,       /* cancelled by its client, or its connection closed */
	ST_NO_SESSION,      /* no hello on this connection yet */
	ST_WOULD_BLOCK      /* internal: the loop would wait (a pool miss); never sent */
} dstatus;

/* "INVALID_ARGUMENT", as the protocol names it: for logs. */
const char *status_name(dstatus s);
/* The protocol's Status value (a Gpud__Status) for s. */
int status_wire(dstatus s);

#endif
