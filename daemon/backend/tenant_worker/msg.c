/* daemon/backend/tenant_worker/msg.c — the tenant worker channel's messages (msg.h). */
#include <stdio.h>
#include <string.h>

#include "daemon/backend/tenant_worker/msg.h"

#define HEAD offsetof(tw_msg, u)

size_t tw_msg_size(uint32_t type, uint32_t nargs)
{
	tw_msg *m = NULL;
	switch (type) {
	case TW_INIT:
		return HEAD + sizeof(m->u.init);
	case TW_LOAD:
		return HEAD + sizeof(m->u.load);
	case TW_UNLOAD:
	case TW_UNMAP:
	case TW_UNMAPPED:
		return HEAD;
	case TW_MAP:
		return HEAD + sizeof(m->u.map);
	case TW_RUN:
		if (nargs > TW_MAX_ARGS)
			return 0;
		return HEAD + offsetof(__typeof__(m->u.run), args) + nargs * sizeof(tw_arg);
	case TW_READY:
		return HEAD + sizeof(m->u.ready);
	case TW_DONE:
		return HEAD + sizeof(m->u.done);
	default:
		return 0;
	}
}

const char *tw_type_name(uint32_t type)
{
	switch (type) {
	case TW_INIT:
		return "INIT";
	case TW_LOAD:
		return "LOAD";
	case TW_UNLOAD:
		return "UNLOAD";
	case TW_MAP:
		return "MAP";
	case TW_UNMAP:
		return "UNMAP";
	case TW_RUN:
		return "RUN";
	case TW_READY:
		return "READY";
	case TW_DONE:
		return "DONE";
	case TW_UNMAPPED:
		return "UNMAPPED";
	default:
		return "unknown";
	}
}

static int terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

int tw_msg_decode(const void *buf, size_t len, tw_msg *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (len < HEAD) {
		snprintf(err, errlen, "a message of %zu bytes, shorter than its header (%zu)", len,
			 (size_t)HEAD);
		return -1;
	}
	memcpy(m, buf, HEAD);
	uint32_t nargs = 0;
	if (m->type == TW_RUN) {
		size_t at = HEAD + offsetof(__typeof__(m->u.run), nargs);
		if (len < at + sizeof(nargs)) {
			snprintf(err, errlen, "RUN of %zu bytes has no argument count", len);
			return -1;
		}
		memcpy(&nargs, (const char *)buf + at, sizeof(nargs));
		if (nargs > TW_MAX_ARGS) {
			snprintf(err, errlen, "RUN with %u arguments, at most %d", nargs,
				 TW_MAX_ARGS);
			return -1;
		}
	}
	size_t want = tw_msg_size(m->type, nargs);
	if (want == 0) {
		snprintf(err, errlen, "unknown message type %u", m->type);
		return -1;
	}
	if (len != want) {
		snprintf(err, errlen, "%s of %zu bytes, expected %zu", tw_type_name(m->type), len,
			 want);
		return -1;
	}
	memcpy(m, buf, len);
	switch (m->type) {
	case TW_INIT:
		if (m->u.init.nevents != TW_SLOTS || m->u.init.device < 0) {
			snprintf(err, errlen,
				 "INIT with %u events on device %d, expected %d events",
				 m->u.init.nevents, m->u.init.device, TW_SLOTS);
			return -1;
		}
		break;
	case TW_LOAD:
		if (!terminated(m->u.load.entry, sizeof(m->u.load.entry)) || !m->u.load.entry[0] ||
		    m->u.load.code_len == 0 || m->u.load.code_len > (1ull << 30)) {
			snprintf(err, errlen,
				 "LOAD of kernel %u: an entry name of 1 to %d bytes and code of 1 "
				 "byte to 1 GiB expected",
				 m->id, TW_NAME - 1);
			return -1;
		}
		break;
	case TW_MAP:
	case TW_UNMAP:
	case TW_UNMAPPED:
		if (m->id == 0) {
			snprintf(err, errlen, "%s of map 0 (map ids start at 1)",
				 tw_type_name(m->type));
			return -1;
		}
		break;
	case TW_RUN:
		if (m->u.run.slot >= TW_SLOTS || m->u.run.grid == 0 || m->u.run.block == 0 ||
		    m->u.run.block > 1024 || m->u.run.grid > 2147483647u) {
			snprintf(err, errlen,
				 "RUN in slot %u of grid %u and block %u: slot below %d, grid 1 to "
				 "2^31-1, block 1 to 1024 expected",
				 m->u.run.slot, m->u.run.grid, m->u.run.block, TW_SLOTS);
			return -1;
		}
		break;
	case TW_DONE:
		if (m->u.done.slot >= TW_SLOTS ||
		    !terminated(m->u.done.text, sizeof(m->u.done.text))) {
			snprintf(err, errlen,
				 "DONE in slot %u: a slot below %d and a text expected",
				 m->u.done.slot, TW_SLOTS);
			return -1;
		}
		break;
	default:
		break;
	}
	return 0;
}
