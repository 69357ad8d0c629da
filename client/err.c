/*
 * client/err.c — the bottom of libgpud-client: each thread's error text for
 * a client (a thread-local buffer, and c->msg under c->msg_mu for
 * gpud_errmsg from a thread that made no call), the text of a status, the
 * call timeout every layer reads, and the list of endpoints' failures in one
 * message. Calls nothing else of the client's. Any thread.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/internal.h"

/* The calling thread's last message, and the client it was about. */
static __thread const gpud_client *tls_client;
static __thread char tls_msg[2048];

gpud_status client_seterr(gpud_client *c, gpud_status st, const char *fmt, ...)
{
	va_list ap;
	if (c == NULL)
		return st;
	va_start(ap, fmt);
	vsnprintf(tls_msg, sizeof(tls_msg), fmt, ap);
	va_end(ap);
	tls_client = c;
	pthread_mutex_lock(&c->msg_mu);
	memcpy(c->msg, tls_msg, sizeof(c->msg));
	pthread_mutex_unlock(&c->msg_mu);
	return st;
}

void client_clear(gpud_client *c)
{
	tls_client = c;
	tls_msg[0] = '\0';
}

const char *client_msg(const gpud_client *c)
{
	return tls_client == c ? tls_msg : "";
}

int client_timeout(const gpud_client *c)
{
	return __atomic_load_n(&c->timeout_ms, __ATOMIC_RELAXED);
}

const char *gpud_strerror(gpud_status s)
{
	switch (s) {
	case GPUD_OK:
		return "success";
	case GPUD_EINVAL:
		return "invalid argument";
	case GPUD_ENOTFOUND:
		return "unknown handle";
	case GPUD_EUNKNOWN_KERNEL:
		return "unknown kernel";
	case GPUD_ENOMEM:
		return "out of memory";
	case GPUD_E2BIG:
		return "too large";
	case GPUD_EUNSUPPORTED:
		return "not supported by the backend";
	case GPUD_EPROTO:
		return "protocol error";
	case GPUD_EBACKEND:
		return "backend failure";
	case GPUD_ESHUTDOWN:
		return "daemon shutting down";
	case GPUD_EINTERNAL:
		return "internal error in gpud";
	case GPUD_EQUOTA:
		return "over quota";
	case GPUD_EACCESS:
		return "not authenticated";
	case GPUD_ESTALE:
		return "handle from before gpud restarted";
	case GPUD_ECANCELED:
		return "cancelled";
	case GPUD_ENOSESSION:
		return "no session (gpud restarted or the connection was re-made)";
	case GPUD_EUNAVAILABLE:
		return "gpud unavailable";
	case GPUD_EPERM:
		return "permission denied on gpud's socket";
	case GPUD_ECONNECT:
		return "cannot connect to gpud";
	case GPUD_ETRANSPORT:
		return "transport error";
	case GPUD_ETIMEDOUT:
		return "timed out";
	case GPUD_EARG:
		return "bad argument to a client call";
	}
	return "unknown status";
}

const char *gpud_errmsg(const gpud_client *c)
{
	if (c == NULL)
		return "out of memory";
	/* The calling thread's own message; a thread that made no call on c
	 * sees the last failed call's of any thread. */
	return tls_client == c ? tls_msg : c->msg;
}

void client_forget(const gpud_client *c)
{
	if (tls_client == c)
		tls_client = NULL;
}

size_t client_append_why(char *buf, size_t cap, size_t used, int i, const char *msg)
{
	if (used < cap) {
		int k = snprintf(buf + used, cap - used, "%s[%d] %s", used ? "; " : "", i + 1, msg);
		used = k < 0 ? used : used + (size_t)k < cap ? used + (size_t)k : cap;
	}
	return used;
}
