/* daemon/status.c — dstatus to the protocol's Status: the one place they meet. */
#include "daemon/status.h"
#include "proto/wire.h"

int status_wire(dstatus s)
{
	switch (s) {
	case ST_OK:
		return GPUD__STATUS__STATUS_OK;
	case ST_INVALID:
		return GPUD__STATUS__STATUS_INVALID_ARGUMENT;
	case ST_NOT_FOUND:
		return GPUD__STATUS__STATUS_NOT_FOUND;
	case ST_UNKNOWN_KERNEL:
		return GPUD__STATUS__STATUS_UNKNOWN_KERNEL;
	case ST_OUT_OF_MEMORY:
		return GPUD__STATUS__STATUS_OUT_OF_MEMORY;
	case ST_TOO_LARGE:
		return GPUD__STATUS__STATUS_TOO_LARGE;
	case ST_UNSUPPORTED:
		return GPUD__STATUS__STATUS_UNSUPPORTED;
	case ST_PROTOCOL:
		return GPUD__STATUS__STATUS_PROTOCOL;
	case ST_BACKEND:
		return GPUD__STATUS__STATUS_BACKEND;
	case ST_SHUTTING_DOWN:
		return GPUD__STATUS__STATUS_SHUTTING_DOWN;
	case ST_QUOTA:
		return GPUD__STATUS__STATUS_QUOTA;
	case ST_UNAUTHENTICATED:
		return GPUD__STATUS__STATUS_UNAUTHENTICATED;
	case ST_STALE:
		return GPUD__STATUS__STATUS_STALE;
	case ST_CANCELLED:
		return GPUD__STATUS__STATUS_CANCELLED;
	case ST_NO_SESSION:
		return GPUD__STATUS__STATUS_NO_SESSION;
	case ST_INTERNAL:
	case ST_WOULD_BLOCK:
		break;
	}
	return GPUD__STATUS__STATUS_INTERNAL;
}

const char *status_name(dstatus s)
{
	return wire_status_name((Gpud__Status)status_wire(s));
}
