/*
 * daemon/endpoint/tls.c — tls+tcp://HOST:PORT: tcp:// (tcp.c) with TLS.
 * Not local: tenants come by token, as over tcp://. The listener takes
 * the certificate and key of tls_cert / tls_key (and, with tls_ca, asks
 * clients for certificates: daemon/auth.c), checked before anything is
 * bound; a reload (daemon/reload.c) hands it a new configuration, and
 * gpud's own probe dials it with TLS (daemon/health.c).
 *
 * Threads: endpoint.h's (setup at start, before the listener starts). No
 * state.
 */
#include "daemon/auth.h"
#include "daemon/endpoint/tcp.h"

static const char *const schemes[] = {"tls+tcp://", NULL};

const endpoint_kind endpoint_kind_tls = {
	.name = "tls+tcp",
	.schemes = schemes,
	.form = "tls+tcp://HOST:PORT",
	.tls = 1,
	.check = endpoint_tcp_check,
	.setup = auth_tls_listener,
	.port = endpoint_tcp_port,
	.peer = endpoint_tcp_peer,
	.dial = endpoint_tcp_dial,
};
