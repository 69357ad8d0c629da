/*
 * client/endpoint/ipc.c — ipc://PATH, gpud's Unix socket on this host: the
 * kind whose hello may offer host regions and the request ring. A dial
 * that the socket's permissions refused says so (access.c): gpud is there.
 * The row is constant: any thread.
 */
#include <string.h>

#include "client/endpoint/endpoint.h"
#include "client/internal.h"

/* nng's ipc:// dialer reports connect()'s EACCES as NNG_EPERM: gpud is
 * there, the socket's mode and group keep this user out. */
static gpud_status ipc_explain(gpud_client *c, const char *url, int rv)
{
	if (rv != NNG_EPERM)
		return GPUD_OK;
	return client_access_denied(c, "", url + strlen(client_endpoint_ipc.scheme));
}

const client_endpoint client_endpoint_ipc = {
	.kind = "ipc",
	.scheme = "ipc://",
	.form = "ipc://PATH",
	.local = 1,
	.tls = 0,
	.explain = ipc_explain,
	.wedged = "its socket took the connection but nothing answered nng's handshake (gpud "
		  "is wedged, or what listens there is not gpud)",
};
