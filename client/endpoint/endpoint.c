/*
 * client/endpoint/endpoint.c — the table of endpoint kinds (endpoint.h):
 * a URL's row by its scheme, and the rows' forms for messages. Constant:
 * any thread.
 */
#include <stdio.h>
#include <string.h>

#include "client/endpoint/endpoint.h"

/* In the order messages name them. */
static const client_endpoint *const table[] = {
	&client_endpoint_ipc,
	&client_endpoint_tcp,
	&client_endpoint_tls,
};
#define NROWS (sizeof(table) / sizeof(table[0]))

/* The scheme of e that url starts with, or NULL. */
static const char *scheme_of(const client_endpoint *e, const char *url)
{
	if (strncmp(url, e->scheme, strlen(e->scheme)) == 0)
		return e->scheme;
	for (const char *const *a = e->also; a && *a; a++)
		if (strncmp(url, *a, strlen(*a)) == 0)
			return *a;
	return NULL;
}

const client_endpoint *client_endpoint_of(const char *url)
{
	for (size_t i = 0; i < NROWS; i++)
		if (scheme_of(table[i], url))
			return table[i];
	return NULL;
}

const char *client_endpoint_forms(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < NROWS && used < len; i++) {
		const char *sep = i == 0 ? "" : ", ";
		if (i > 0 && i + 1 == NROWS)
			sep = " or ";
		int k = snprintf(buf + used, len - used, "%s%s", sep, table[i]->form);
		used = k < 0 ? len : used + (size_t)k;
	}
	return buf;
}
