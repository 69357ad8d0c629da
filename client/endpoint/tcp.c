/*
 * client/endpoint/tcp.c — tcp://HOST:PORT (and nng's tcp4://, tcp6://),
 * plain TCP to a gpud here or elsewhere. A dial that failed in nng's
 * handshake is explained by a second connection (tls_diag.c): a server
 * that speaks TLS is the cause looked for. The row is constant: any
 * thread.
 */
#include "client/endpoint/endpoint.h"
#include "client/internal.h"

static gpud_status tcp_explain(gpud_client *c, const char *url, int rv)
{
	char why[1500];
	if (!client_tls_handshake_error(rv))
		return GPUD_OK;
	if (!client_tls_diagnose(url, 0, c->tls_ca, NULL, c->connect_timeout_ms, why, sizeof(why)))
		return GPUD_OK;
	return client_seterr(c, GPUD_ECONNECT, "%s: %s", url, why);
}

static const char *const also[] = {"tcp4://", "tcp6://", NULL};

const client_endpoint client_endpoint_tcp = {
	.kind = "tcp",
	.scheme = "tcp://",
	.also = also,
	.form = "tcp://HOST:PORT",
	.local = 0,
	.tls = 0,
	.explain = tcp_explain,
	.wedged = "the connection or nng's handshake did not complete (gpud is wedged, the host "
		  "drops the connection, or what listens there is not gpud)",
};
