/*
 * daemon/auth.h — who a connection is, and who may connect.
 *
 * A connection's tenant: over a local endpoint (ipc://) the peer's user (by
 * name, else "uid:N"); over the others (tcp://, tls+tcp://) the tenant
 * whose bearer token hello presents (tokens_file: "TENANT TOKEN" lines), or
 * "anonymous" when gpud has no tokens. Listeners of a TLS endpoint get the
 * certificate and key of tls_cert / tls_key (and, with tls_ca, ask clients
 * for certificates); socket files (ipc://) get socket_mode / socket_group.
 * Which endpoint is which: daemon/endpoint/endpoint.h.
 *
 * Loaded at start on the loop thread; a reload (SIGHUP, daemon/reload.c)
 * loads a new one on the loop and puts it in the old one's place. A failed inbound
 * TLS handshake is logged from nng's threads (auth.c's mbedtls_ssl_handshake
 * wrap), with its cause and the peer's address.
 */
#ifndef GPUD_AUTH_H
#define GPUD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon/config.h"
#include "daemon/status.h"

typedef struct auth_token {
	char tenant[GPUD_TENANT_NAME];
	char token[128];
	int line; /* of tokens_file, for messages */
} auth_token;

typedef struct auth {
	auth_token *tokens;
	int ntokens;
} auth;

/*
 * Reads cfg->tokens_file (if set). 0, or -1 with err naming the file and
 * line: unreadable, readable by group or others, a malformed line, a token
 * given to two tenants.
 */
int auth_load(auth *a, const gpud_config *cfg, char *err, size_t errlen);
void auth_fini(auth *a);

/*
 * The tenant name of a connection: a local one (gpud_session.local, from its
 * endpoint: daemon/endpoint/endpoint.h) by its peer's user name, peer_user
 * (looked up when the connection was made), or "uid:N" where the system
 * names none; otherwise by the token hello presented (may be "" or NULL).
 * ST_OK with name set, or ST_UNAUTHENTICATED with err (an unknown or
 * missing token). Looks nothing up itself: no call that can block.
 */
dstatus auth_tenant(const auth *a, int local, int64_t peer_uid, const char *peer_user,
		    const char *token, char *name, size_t len, char *err, size_t errlen);

/*
 * 1 if a tcp:// or tls+tcp:// hello may still be tenant name: a token of a
 * names it, or name is "anonymous" and a has no tokens.
 */
int auth_names_tenant(const auth *a, const char *name);

/*
 * tls_cert and tls_key as tls+tcp:// listeners will take them: both set and
 * readable, a certificate chain and a private key in PEM, and the key the
 * pair of the chain's first certificate (mbed TLS's check). 0, or -1 with
 * err naming both files and what does not match.
 */
int auth_tls_check(const gpud_config *cfg, char *err, size_t errlen);
/*
 * A server TLS configuration from cfg's tls_cert, tls_key and tls_ca, for
 * the listener of url (named in err): *out, the caller's reference
 * (nng_tls_config_free). 0, or -1 with err.
 */
int auth_tls_config(const gpud_config *cfg, const char *url, nng_tls_config **out, char *err,
		    size_t errlen);
/* The tls_cert the log lines of failed handshakes name (on the loop; a reload). */
void auth_tls_cert_name(const char *path);
/* Sets up TLS on a tls+tcp:// listener from cfg. 0, or -1 with err. */
int auth_tls_listener(const gpud_config *cfg, nng_listener l, const char *url, char *err,
		      size_t errlen);
/*
 * Why an inbound TLS handshake failed, for the log: rv (mbed TLS's error;
 * 0: it succeeded but the client's certificate has verify flags), the first
 * bytes the client sent (the record header mbed TLS read), the alert it sent
 * (-1: none). Pure; the handshake hook (auth.c) and the tests call it.
 */
void auth_handshake_cause(int rv, const uint8_t *first, size_t nfirst, int alert, uint32_t flags,
			  char *out, size_t len);
/*
 * socket_group, checked before anything is bound: the group exists and
 * gpud's user may give files to it (root, or a member). 0, or -1 with err
 * saying how to fix it (create the group; add gpud's user to it).
 */
int auth_socket_group_check(const gpud_config *cfg, char *err, size_t errlen);
/* socket_mode and socket_group on a socket file gpud made. 0, or -1 with err
 * (a chown refused: gpud's user is not in the group, and the fix). */
int auth_socket_access(const gpud_config *cfg, const char *path, char *err, size_t errlen);

#endif
