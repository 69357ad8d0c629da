/*
 * daemon/endpoint/endpoint.c — the table of endpoint kinds (see endpoint.h
 * for the contract of a row), its lookup by URL scheme, and what every
 * kind shares: the config's check, making and starting a listener, a
 * connection's peer, the probe's address.
 *
 * Threads: the table is constant; callers as endpoint.h says.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/endpoint/endpoint.h"
#include "daemon/log.h"

extern const endpoint_kind endpoint_kind_ipc, endpoint_kind_tcp, endpoint_kind_tls;

/* In this order in the refusal of an unknown scheme. */
static const endpoint_kind *const kinds[] = {&endpoint_kind_ipc, &endpoint_kind_tcp,
					     &endpoint_kind_tls};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const endpoint_kind *endpoint_find(const char *url, size_t *scheme_len)
{
	for (size_t i = 0; url && i < NKINDS; i++)
		for (const char *const *s = kinds[i]->schemes; *s; s++)
			if (strncmp(url, *s, strlen(*s)) == 0) {
				if (scheme_len)
					*scheme_len = strlen(*s);
				return kinds[i];
			}
	return NULL;
}

int endpoint_check(const char *url, char *err, size_t errlen)
{
	size_t scheme_len;
	const endpoint_kind *k = endpoint_find(url, &scheme_len);
	if (k == NULL) {
		char forms[256];
		size_t n = 0;
		for (size_t i = 0; i < NKINDS; i++)
			n += (size_t)snprintf(forms + n, sizeof(forms) - n, "%s%s",
					      i == 0           ? ""
					      : i + 1 < NKINDS ? ", "
							       : " or ",
					      kinds[i]->form);
		snprintf(err, errlen, "listen URL '%s': expected %s", url, forms);
		return -1;
	}
	return k->check ? k->check(url, scheme_len, err, errlen) : 0;
}

int endpoint_local(const char *url)
{
	const endpoint_kind *k = endpoint_find(url, NULL);
	return k && k->local;
}

int endpoint_tls(const char *url)
{
	const endpoint_kind *k = endpoint_find(url, NULL);
	return k && k->tls;
}

const char *endpoint_path(const char *url)
{
	const endpoint_kind *k = endpoint_find(url, NULL);
	return k && k->path ? k->path(url) : NULL;
}

int endpoint_listen(nng_socket sock, const gpud_config *cfg, const char *url, size_t recv_max,
		    nng_listener *l, char *err, size_t errlen)
{
	const endpoint_kind *k = endpoint_find(url, NULL);
	int rv;

	if (k == NULL) { /* the config took it: never */
		snprintf(err, errlen, "cannot listen on %s: %s", url, nng_strerror(NNG_ENOTSUP));
		return -1;
	}
	if (k->prepare)
		k->prepare(url);
	rv = nng_listener_create(l, sock, url);
	if (rv == 0)
		rv = nng_listener_set_size(*l, NNG_OPT_RECVMAXSZ, recv_max);
	if (rv == 0 && k->setup && k->setup(cfg, *l, url, err, errlen) != 0)
		return -1;
	if (rv == 0)
		rv = nng_listener_start(*l, 0);
	if (rv != 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", url, nng_strerror(rv));
		return -1;
	}
	int port = k->port ? k->port(url, *l) : -1;
	if (port >= 0) /* port 0: the system's choice, which clients need to know */
		log_info("listening on %s (port %d)", url, port);
	else
		log_info("listening on %s", url);
	return 0;
}

void endpoint_pipe_peer(nng_pipe p, endpoint_peer *out)
{
	char *url = NULL;
	const endpoint_kind *k = NULL;

	memset(out, 0, sizeof(*out));
	out->uid = out->pid = -1;
	/* A pipe answers for its listener's URL (nng_pipe_get: the endpoint's
	 * options after the transport's). */
	if (nng_pipe_get_string(p, NNG_OPT_URL, &url) == 0) {
		k = endpoint_find(url, NULL);
		nng_strfree(url);
	}
	if (k && k->peer)
		k->peer(p, out);
}

void endpoint_peer_user(endpoint_peer *peer)
{
	struct passwd pw, *res = NULL;
	char small[1024], *buf = small;
	size_t size = sizeof(small);
	int rv;

	peer->user[0] = '\0';
	if (peer->uid < 0)
		return;
	/* an entry larger than small (long GECOS fields, a directory service's
	 * extras): a larger buffer, up to 1 MiB */
	while ((rv = getpwuid_r((uid_t)peer->uid, &pw, buf, size, &res)) == ERANGE &&
	       size < (1u << 20)) {
		char *more = realloc(buf == small ? NULL : buf, size * 4);
		if (more == NULL)
			break;
		buf = more;
		size *= 4;
	}
	if (rv == 0 && res && strlen(pw.pw_name) < sizeof(peer->user))
		snprintf(peer->user, sizeof(peer->user), "%s", pw.pw_name);
	if (buf != small)
		free(buf);
}

void endpoint_dial_url(const char *url, nng_listener l, char *out, size_t len)
{
	const endpoint_kind *k = endpoint_find(url, NULL);
	if (k && k->dial)
		k->dial(url, l, out, len);
	else
		snprintf(out, len, "%s", url);
}
