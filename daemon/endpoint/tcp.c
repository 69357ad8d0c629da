/*
 * daemon/endpoint/tcp.c — tcp://HOST:PORT (and tcp4://, tcp6://): TCP
 * without TLS. Not local: a connection's tenant is the one its hello's
 * token names ("anonymous" when gpud has no tokens_file), and it has no
 * host regions or rings. Also what tls+tcp:// (tls.c) shares with it
 * (tcp.h): the port's check, the peer's address, the probe's address.
 *
 * Threads: endpoint.h's. No state.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/endpoint/tcp.h"

/*
 * A tcp:// or tls+tcp:// listen URL's port: nng takes one left out for 0,
 * a port chosen at random that no client knows. An explicit 0 stays
 * allowed (tests; gpud logs the port it got). 0, or -1 with err.
 */
int endpoint_tcp_check(const char *url, size_t scheme_len, char *err, size_t errlen)
{
	const char *host = url + scheme_len, *colon;

	if (host[0] == '[') { /* an IPv6 address: [::1]:7878 */
		const char *rb = strchr(host, ']');
		colon = rb && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = strrchr(host, ':');
	}
	if (colon == NULL || colon[1] == '\0') {
		snprintf(err, errlen,
			 "listen URL '%s' has no port (nng would listen on one chosen at random, "
			 "which no client knows); expected %.*sHOST:PORT, e.g. %.*s127.0.0.1:7878",
			 url, (int)scheme_len, url, (int)scheme_len, url);
		return -1;
	}
	const char *p = colon + 1;
	size_t digits = strspn(p, "0123456789");
	if (digits == 0 || digits > 5 || p[digits] != '\0' || atol(p) > 65535) {
		snprintf(err, errlen,
			 "listen URL '%s': the port '%s' is not a number from 0 to 65535", url, p);
		return -1;
	}
	return 0;
}

int endpoint_tcp_port(const char *url, nng_listener l)
{
	int port = -1;
	if (strcmp(strrchr(url, ':'), ":0") == 0)
		nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port);
	return port;
}

void endpoint_tcp_peer(nng_pipe p, endpoint_peer *out)
{
	nng_sockaddr sa;
	if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0)
		return;
	if (sa.s_family == NNG_AF_INET) {
		const uint8_t *a = (const uint8_t *)&sa.s_in.sa_addr;
		snprintf(out->addr, sizeof(out->addr), "%u.%u.%u.%u:%u", a[0], a[1], a[2], a[3],
			 (unsigned)ntohs(sa.s_in.sa_port));
	} else if (sa.s_family == NNG_AF_INET6) {
		char ip[INET6_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET6, sa.s_in6.sa_addr, ip, sizeof(ip));
		snprintf(out->addr, sizeof(out->addr), "[%s]:%u", ip,
			 (unsigned)ntohs(sa.s_in6.sa_port));
	}
}

/*
 * Where the probe dials for a listen URL: a wildcard host (empty, "*",
 * 0.0.0.0, [::]) becomes the loopback address of its family, port 0 the
 * port the system chose.
 */
void endpoint_tcp_dial(const char *url, nng_listener l, char *out, size_t len)
{
	const char *hp = strstr(url, "://"), *colon = strrchr(url, ':');
	int port = -1;
	if (hp == NULL || colon == NULL || colon < hp + 3) {
		snprintf(out, len, "%s", url);
		return;
	}
	hp += 3;
	if (!strcmp(colon, ":0"))
		nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port);
	size_t hlen = (size_t)(colon - hp);
	char host[200];
	snprintf(host, sizeof(host), "%.*s", (int)(hlen < sizeof(host) ? hlen : sizeof(host) - 1),
		 hp);
	const char *h = host;
	if (!host[0] || !strcmp(host, "*") || !strcmp(host, "0.0.0.0"))
		h = "127.0.0.1";
	else if (!strcmp(host, "[::]"))
		h = "[::1]";
	char portbuf[16];
	if (port >= 0)
		snprintf(portbuf, sizeof(portbuf), "%d", port);
	snprintf(out, len, "%.*s%s:%s", (int)(hp - url), url, h, port >= 0 ? portbuf : colon + 1);
}

static const char *const schemes[] = {"tcp://", "tcp4://", "tcp6://", NULL};

const endpoint_kind endpoint_kind_tcp = {
	.name = "tcp",
	.schemes = schemes,
	.form = "tcp://HOST:PORT",
	.check = endpoint_tcp_check,
	.port = endpoint_tcp_port,
	.peer = endpoint_tcp_peer,
	.dial = endpoint_tcp_dial,
};
