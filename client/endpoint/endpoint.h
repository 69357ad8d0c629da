/*
 * client/endpoint/endpoint.h — the kinds of endpoint a client dials: one
 * row per kind, each in a file of its own (ipc.c, tcp.c, tls.c), found by
 * the URL's scheme. A row says what the kind is (local: gpud on the same
 * host, where its hello may offer host regions and the request ring; tls:
 * the connection is TLS), what a dial of it needs first (the TLS
 * configuration) and what explains a dial of it that failed (access.c's
 * socket permissions, tls_diag.c's second connection). Every test of a
 * URL's scheme in libgpud-client goes through client_endpoint_of. The rows
 * are constant: read by any thread.
 *
 * The rows (ipc.c, tcp.c, tls.c) call access.c and tls_diag.c; the table
 * (endpoint.c) reads the rows; dial.c, above, reads the table. A new kind:
 * its file here (its row), its row's name below, and the row in
 * endpoint.c's table.
 */
#ifndef GPUD_CLIENT_ENDPOINT_H
#define GPUD_CLIENT_ENDPOINT_H

#include <stddef.h>

#include <nng/nng.h>

#include <gpud/client.h>

typedef struct client_endpoint {
	const char *kind;        /* "ipc", "tcp", "tls" */
	const char *scheme;      /* what its URLs start with: "ipc://" */
	const char *const *also; /* other schemes of the kind (nng's "tcp4://"...), NULL-ended */
	const char *form;        /* its URLs in messages: "ipc://PATH" */
	int local;               /* gpud is on this host */
	int tls;                 /* the connection is TLS */
	/* Before dialer d of url starts (may be NULL): 0, an nng error, or -1
	 * with c's message set. */
	int (*setup)(gpud_client *c, nng_dialer d, const char *url);
	/* A dial of url failed with nng's rv (may be NULL): the status with c's
	 * message set when the cause is found, else GPUD_OK. */
	gpud_status (*explain)(gpud_client *c, const char *url, int rv);
	/* Why a dial past its time did not complete, for the message. */
	const char *wedged;
} client_endpoint;

/* The rows (ipc.c, tcp.c, tls.c). */
extern const client_endpoint client_endpoint_ipc, client_endpoint_tcp, client_endpoint_tls;

/* The row of url's scheme; NULL for a scheme gpud does not speak (nng's
 * dial then says what is wrong with it). */
const client_endpoint *client_endpoint_of(const char *url);
/* Every row's form for messages: "ipc://PATH, tcp://HOST:PORT or
 * tls+tcp://HOST:PORT", into buf; buf. */
const char *client_endpoint_forms(char *buf, size_t len);

/* --- access.c ------------------------------------------------------------- */

/*
 * connect() to the Unix socket at path failed with EACCES: GPUD_EPERM with
 * the message "permission denied on WHATPATH (mode 0660 owner gpud group
 * gpud): ask to be added to group gpud ..." (or the directory that keeps
 * this user out, or "log in again" for a group joined since).
 */
gpud_status client_access_denied(gpud_client *c, const char *what, const char *path);

/* --- tls_diag.c ----------------------------------------------------------- */

/*
 * After a dial of url failed: a connection of its own to the same host and
 * port, with mbed TLS directly, to say why. tls: url is TLS, checked
 * against the CA file ca (may be NULL) for server name name; else plain
 * TCP, and a server that speaks TLS is the cause looked for. 1 with why set
 * (what follows "URL: " in a message), or 0 when it found no cause.
 */
int client_tls_diagnose(const char *url, int tls, const char *ca, const char *name, int timeout_ms,
			char *why, size_t len);
/* The CA file ca can be read and holds PEM certificates nng will take: 0, or
 * -1 with why ("no such file", "not a PEM certificate (...)"). */
int client_tls_ca_check(const char *ca, char *why, size_t len);
/* nng's rv from a dial is one a handshake gives (TLS refused, or the peer
 * closed while the two sides said what they speak): worth a diagnosis. */
int client_tls_handshake_error(int rv);

#endif /* GPUD_CLIENT_ENDPOINT_H */
