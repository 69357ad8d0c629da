/*
 * daemon/endpoint/endpoint.h — the kinds of endpoint gpud listens on, one
 * row each, found by the listen URL's scheme (as nng finds its transport):
 * ipc:// (ipc.c), tcp://, tcp4://, tcp6:// (tcp.c) and tls+tcp:// (tls.c).
 * Nothing else in gpud tests a URL's scheme; it asks the row.
 *
 * The contract of a row (endpoint_kind):
 *   schemes  the URL prefixes it takes; form names it in the refusal of
 *            a URL no row takes ("expected ipc://PATH, tcp://HOST:PORT or
 *            tls+tcp://HOST:PORT", the rows' forms in the table's order)
 *   local    its connections come from this machine and the kernel tells
 *            their user: such a connection's tenant is that user (no
 *            token), hello offers it the region socket, and host regions,
 *            lent memory and request rings are for it alone. The session
 *            keeps it (gpud_session.local), set from the row at connect.
 *            Otherwise the tenant comes from hello's token.
 *   tls      it takes tls_cert and tls_key: checked before anything is
 *            bound, set on the listener before it starts, a reload hands
 *            it a new configuration; gpud's own probe dials it with TLS
 *   check    the rest of the URL, as the config is read (NULL: anything)
 *   prepare  before the listener is made (NULL: nothing)
 *   setup    the listener made and not yet started (NULL: nothing)
 *   path     the socket file the listener makes, or NULL: its mode and
 *            group (socket_mode, socket_group) and, next to the first
 *            one, the region socket
 *   port     the port the system chose for a URL of port 0, or -1
 *   peer     who is at the other end of one of its connections
 *   dial     where gpud's own health probe dials the listener
 * A listener is named by its listen URL as configured: in the log, in
 * gpud_listener_up's label, in status's listen list and /readyz's reasons.
 *
 * A new kind of endpoint is a file with its row and the row's line in
 * endpoint.c's table.
 *
 * Threads: the table is constant. check runs where the config is read
 * (start, and a reload on the loop); endpoint_listen and dial at start,
 * before the loop runs; peer on nng's threads (a connection's ADD_PRE,
 * daemon/peers.h), on the loop only where no peer could be kept there.
 */
#ifndef GPUD_ENDPOINT_H
#define GPUD_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "daemon/config.h"

/* Who is at the other end of a connection, as its endpoint tells it. */
typedef struct endpoint_peer {
	int local;     /* from a local endpoint, its user known (see above) */
	int64_t uid;   /* local: the peer's user; -1 otherwise */
	int64_t pid;   /* the peer's process where the endpoint tells it; -1 otherwise */
	char addr[64]; /* for status and the log: "uid 1000", "10.0.0.7:51234", "[::1]:51234" */
	/* local: the name the system gives uid (its tenant), "" where it gives
	 * none; looked up by endpoint_peer_user on the thread that fills the
	 * peer (nng's, at a connection's ADD_PRE), not on the loop */
	char user[GPUD_TENANT_NAME];
} endpoint_peer;

typedef struct endpoint_kind {
	const char *name;           /* "ipc", "tcp", "tls+tcp" */
	const char *const *schemes; /* NULL-terminated: "tcp://", "tcp4://", ... */
	const char *form;           /* "tcp://HOST:PORT" */
	int local, tls;
	int (*check)(const char *url, size_t scheme_len, char *err, size_t errlen);
	void (*prepare)(const char *url);
	int (*setup)(const gpud_config *cfg, nng_listener l, const char *url, char *err,
		     size_t errlen);
	const char *(*path)(const char *url);
	int (*port)(const char *url, nng_listener l);
	void (*peer)(nng_pipe p, endpoint_peer *out);
	void (*dial)(const char *url, nng_listener l, char *out, size_t len);
} endpoint_kind;

/* The row whose scheme begins url (*scheme_len: that scheme's length, if
 * not NULL); NULL if none. */
const endpoint_kind *endpoint_find(const char *url, size_t *scheme_len);

/* A listen URL as the config takes it: a row's scheme, the rest as that
 * row checks it. 0, or -1 + err ("listen URL '...': ..."). */
int endpoint_check(const char *url, char *err, size_t errlen);

/* Properties of the row of url (0 when no row takes it). */
int endpoint_local(const char *url);
int endpoint_tls(const char *url);
/* The socket file a listener on url makes, or NULL. */
const char *endpoint_path(const char *url);

/*
 * A listener on url for sock, started: made (nng_listener_create), its
 * largest message recv_max, its row's setup, started, and logged
 * ("listening on URL", with the port the system chose for port 0).
 * 0, or -1 + err ("cannot listen on URL: why", or the setup's own); a
 * listener made and not started is left to sock's close.
 */
int endpoint_listen(nng_socket sock, const gpud_config *cfg, const char *url, size_t recv_max,
		    nng_listener *l, char *err, size_t errlen);

/* The peer of connection p, by the row of the listener that accepted it. */
void endpoint_pipe_peer(nng_pipe p, endpoint_peer *out);

/* peer->user from peer->uid (the user database, which may be a network
 * service: a call that can block), "" when it names none or is too long. */
void endpoint_peer_user(endpoint_peer *peer);

/* Where gpud's own probe dials the listener l on url (health.c). */
void endpoint_dial_url(const char *url, nng_listener l, char *out, size_t len);

#endif
