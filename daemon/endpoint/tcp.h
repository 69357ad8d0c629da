/*
 * daemon/endpoint/tcp.h — what tcp:// (tcp.c) and tls+tcp:// (tls.c)
 * share: a HOST:PORT after the scheme, a peer known by its address, the
 * probe dialling the loopback address for a wildcard host.
 *
 * Threads: endpoint.h's. No state.
 */
#ifndef GPUD_ENDPOINT_TCP_H
#define GPUD_ENDPOINT_TCP_H

#include "daemon/endpoint/endpoint.h"

/* The URL has a port, 0 to 65535 (see tcp.c). */
int endpoint_tcp_check(const char *url, size_t scheme_len, char *err, size_t errlen);
/* For a URL of port 0, the port the system chose; else -1. */
int endpoint_tcp_port(const char *url, nng_listener l);
/* The peer's address and port. */
void endpoint_tcp_peer(nng_pipe p, endpoint_peer *out);
/* The URL with a wildcard host made loopback and port 0 the bound port. */
void endpoint_tcp_dial(const char *url, nng_listener l, char *out, size_t len);

#endif
