/*
 * proto/wire.h — framing of one gpud message, shared by gpud and
 * libgpud-client.
 *
 *   [u32 LE header length][protobuf Request or Response][raw payload]
 *
 * The protobuf header is small; array bytes travel as the raw payload behind
 * it and never pass through protobuf encode or decode.
 */
#ifndef GPUD_WIRE_H
#define GPUD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <protobuf-c/protobuf-c.h>

#include "gpud.pb-c.h"

#define GPUD_PROTOCOL_VERSION 1u
#define GPUD_WIRE_PREFIX 4u
/* Largest protobuf header either side accepts; payload bytes are not counted. */
#define GPUD_WIRE_MAX_HEADER (1u << 20)

/*
 * Builds a message holding hdr packed, then payload_len bytes of room for the
 * payload. If payload is non-NULL it is copied in; otherwise *payload_out
 * points at the room so the caller can fill it (a download writes straight
 * into the message). Returns 0 or an nng error.
 */
int wire_pack(nng_msg **out, const ProtobufCMessage *hdr, const void *payload, size_t payload_len,
	      void **payload_out);

/*
 * Splits a received message. Returns 0 and sets the header and payload
 * ranges, or -1 with a reason in err when the framing is broken.
 */
int wire_split(nng_msg *m, const uint8_t **hdr, size_t *hdr_len, uint8_t **payload,
	       size_t *payload_len, char *err, size_t errlen);

/*
 * Marks a packed Response (as wire_pack built it) draining: the field goes
 * in front of the header (protobuf merges the fields of concatenated
 * messages), so the payload behind it is not moved. 0, or an nng error with
 * m unchanged.
 */
int wire_mark_draining(nng_msg *m);

/* Status codes as text, for messages: "INVALID_ARGUMENT". */
const char *wire_status_name(Gpud__Status s);

#endif /* GPUD_WIRE_H */
