/* proto/wire.c — packing and splitting of framed gpud messages. */
#include <stdio.h>
#include <string.h>

#include "proto/wire.h"

int wire_pack(nng_msg **out, const ProtobufCMessage *hdr, const void *payload, size_t payload_len,
	      void **payload_out)
{
	size_t hlen = protobuf_c_message_get_packed_size(hdr);
	nng_msg *m;
	int rv;

	if (hlen > GPUD_WIRE_MAX_HEADER)
		return NNG_EMSGSIZE;
	if (payload_len > SIZE_MAX - GPUD_WIRE_PREFIX - hlen)
		return NNG_EMSGSIZE;
	if ((rv = nng_msg_alloc(&m, GPUD_WIRE_PREFIX + hlen + payload_len)) != 0)
		return rv;
	uint8_t *p = nng_msg_body(m);
	p[0] = (uint8_t)hlen;
	p[1] = (uint8_t)(hlen >> 8);
	p[2] = (uint8_t)(hlen >> 16);
	p[3] = (uint8_t)(hlen >> 24);
	protobuf_c_message_pack(hdr, p + GPUD_WIRE_PREFIX);
	uint8_t *body = p + GPUD_WIRE_PREFIX + hlen;
	if (payload != NULL && payload_len > 0)
		memcpy(body, payload, payload_len);
	if (payload_out != NULL)
		*payload_out = body;
	*out = m;
	return 0;
}

int wire_split(nng_msg *m, const uint8_t **hdr, size_t *hdr_len, uint8_t **payload,
	       size_t *payload_len, char *err, size_t errlen)
{
	size_t len = nng_msg_len(m);
	uint8_t *p = nng_msg_body(m);

	if (len < GPUD_WIRE_PREFIX) {
		snprintf(err, errlen,
			 "message of %zu bytes is shorter than the 4-byte frame prefix", len);
		return -1;
	}
	size_t hlen = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
	if (hlen > GPUD_WIRE_MAX_HEADER) {
		snprintf(err, errlen,
			 "frame declares a %zu-byte header (the message has %zu bytes after the "
			 "prefix); the limit is %u bytes",
			 hlen, len - GPUD_WIRE_PREFIX, GPUD_WIRE_MAX_HEADER);
		return -1;
	}
	if (hlen > len - GPUD_WIRE_PREFIX) {
		snprintf(
			err, errlen,
			"frame declares a %zu-byte header but the message has %zu bytes after the prefix",
			hlen, len - GPUD_WIRE_PREFIX);
		return -1;
	}
	*hdr = p + GPUD_WIRE_PREFIX;
	*hdr_len = hlen;
	*payload = p + GPUD_WIRE_PREFIX + hlen;
	*payload_len = len - GPUD_WIRE_PREFIX - hlen;
	return 0;
}

int wire_mark_draining(nng_msg *m)
{
	Gpud__Response only = GPUD__RESPONSE__INIT;
	uint8_t add[GPUD_WIRE_PREFIX + 16], prefix[GPUD_WIRE_PREFIX];
	size_t len = nng_msg_len(m);
	const uint8_t *p = nng_msg_body(m);
	int rv;

	only.draining = 1;
	size_t n = gpud__response__get_packed_size(&only);
	if (len < GPUD_WIRE_PREFIX || n > sizeof(add) - GPUD_WIRE_PREFIX)
		return NNG_EINVAL;
	size_t hlen = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
	if (hlen > len - GPUD_WIRE_PREFIX || hlen + n > GPUD_WIRE_MAX_HEADER)
		return NNG_EINVAL;
	hlen += n;
	add[0] = (uint8_t)hlen;
	add[1] = (uint8_t)(hlen >> 8);
	add[2] = (uint8_t)(hlen >> 16);
	add[3] = (uint8_t)(hlen >> 24);
	gpud__response__pack(&only, add + GPUD_WIRE_PREFIX);
	memcpy(prefix, p, GPUD_WIRE_PREFIX);
	if ((rv = nng_msg_trim(m, GPUD_WIRE_PREFIX)) != 0)
		return rv;
	if ((rv = nng_msg_insert(m, add, GPUD_WIRE_PREFIX + n)) != 0) {
		/* the prefix goes back where trimming left room for it */
		nng_msg_insert(m, prefix, GPUD_WIRE_PREFIX);
		return rv;
	}
	return 0;
}

const char *wire_status_name(Gpud__Status s)
{
	switch (s) {
	case GPUD__STATUS__STATUS_OK:
		return "OK";
	case GPUD__STATUS__STATUS_INVALID_ARGUMENT:
		return "INVALID_ARGUMENT";
	case GPUD__STATUS__STATUS_NOT_FOUND:
		return "NOT_FOUND";
	case GPUD__STATUS__STATUS_UNKNOWN_KERNEL:
		return "UNKNOWN_KERNEL";
	case GPUD__STATUS__STATUS_OUT_OF_MEMORY:
		return "OUT_OF_MEMORY";
	case GPUD__STATUS__STATUS_TOO_LARGE:
		return "TOO_LARGE";
	case GPUD__STATUS__STATUS_UNSUPPORTED:
		return "UNSUPPORTED";
	case GPUD__STATUS__STATUS_PROTOCOL:
		return "PROTOCOL";
	case GPUD__STATUS__STATUS_BACKEND:
		return "BACKEND";
	case GPUD__STATUS__STATUS_QUOTA:
		return "QUOTA";
	case GPUD__STATUS__STATUS_UNAUTHENTICATED:
		return "UNAUTHENTICATED";
	case GPUD__STATUS__STATUS_SHUTTING_DOWN:
		return "SHUTTING_DOWN";
	case GPUD__STATUS__STATUS_INTERNAL:
		return "INTERNAL";
	case GPUD__STATUS__STATUS_STALE:
		return "STALE";
	case GPUD__STATUS__STATUS_CANCELLED:
		return "CANCELLED";
	case GPUD__STATUS__STATUS_NO_SESSION:
		return "NO_SESSION";
	default:
		return "UNKNOWN_STATUS";
	}
}
