/*
 * proto/peek.h — what a peer speaks, from the first bytes it sent: a TLS
 * record, nng's SP header (what a tcp:// peer sends first), HTTP, or none of
 * these. Header-only and pure (no state, no threads): gpud reads a failed
 * TLS handshake's record header with it (daemon/auth.c), libgpud-client the
 * first bytes a server sent back to a failed dial (client/tls_diag.c); the
 * unit suite and the fuzzer call it on any bytes.
 */
#ifndef GPUD_PROTO_PEEK_H
#define GPUD_PROTO_PEEK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum peek_kind {
	PEEK_NOTHING = 0, /* no bytes */
	PEEK_TLS,         /* a TLS record: content type 20..23, version 3.x */
	PEEK_SP,          /* nng's SP header: 00 'S' 'P' 00, then the protocol */
	PEEK_HTTP,        /* an HTTP request or response line */
	PEEK_OTHER,
};

/*
 * The kind of the first n bytes b a peer sent. SP needs 4 bytes, TLS 3 (type
 * and version); fewer that agree so far are PEEK_OTHER.
 */
static inline enum peek_kind peek_kind_of(const uint8_t *b, size_t n)
{
	static const char *const http[] = {"HTTP/", "GET ",    "POST ",    "PUT ",
					   "HEAD ", "DELETE ", "OPTIONS ", "CONNECT "};
	if (n == 0)
		return PEEK_NOTHING;
	if (n >= 4 && b[0] == 0 && b[1] == 'S' && b[2] == 'P' && b[3] == 0)
		return PEEK_SP;
	if (n >= 3 && b[0] >= 20 && b[0] <= 23 && b[1] == 3 && b[2] <= 4)
		return PEEK_TLS;
	for (size_t i = 0; i < sizeof(http) / sizeof(http[0]); i++) {
		size_t k = strlen(http[i]);
		if (n >= k && memcmp(b, http[i], k) == 0)
			return PEEK_HTTP;
	}
	return PEEK_OTHER;
}

/* The SP protocol an SP header names ("req0", "rep0", ...), or NULL: bytes
 * 4 and 5 are the protocol number (16 bits, big-endian). */
static inline const char *peek_sp_protocol(const uint8_t *b, size_t n)
{
	if (n < 6 || peek_kind_of(b, n) != PEEK_SP)
		return NULL;
	switch ((unsigned)b[4] << 8 | b[5]) {
	case 0x10:
		return "pair0";
	case 0x20:
		return "pub0";
	case 0x21:
		return "sub0";
	case 0x30:
		return "req0";
	case 0x31:
		return "rep0";
	case 0x50:
		return "push0";
	case 0x51:
		return "pull0";
	case 0x62:
		return "surveyor0";
	case 0x63:
		return "respondent0";
	case 0x70:
		return "bus0";
	}
	return NULL;
}

/*
 * A phrase for what the peer sent, for a message: "nng's tcp:// header
 * (req0)", "a TLS record", "an HTTP request", "bytes 16 03 01 00" (at most
 * 8, in hex). Always NUL-terminated within len (len > 0).
 */
static inline void peek_describe(const uint8_t *b, size_t n, char *out, size_t len)
{
	const char *proto;
	size_t k, at;
	switch (peek_kind_of(b, n)) {
	case PEEK_NOTHING:
		snprintf(out, len, "nothing");
		return;
	case PEEK_SP:
		proto = peek_sp_protocol(b, n);
		snprintf(out, len, "nng's tcp:// header%s%s%s", proto ? " (" : "",
			 proto ? proto : "", proto ? ")" : "");
		return;
	case PEEK_TLS:
		snprintf(out, len, "a TLS record");
		return;
	case PEEK_HTTP:
		snprintf(out, len, "%s", b[0] == 'H' ? "an HTTP response" : "an HTTP request");
		return;
	case PEEK_OTHER:
		break;
	}
	at = (size_t)snprintf(out, len, "bytes");
	for (k = 0; k < n && k < 8 && at < len; k++)
		at += (size_t)snprintf(out + at, len - at, " %02x", b[k]);
}

/* A TLS alert's description (RFC 8446 6.2, RFC 5246 7.2): "unknown_ca",
 * ...; "unlisted" for one not listed here. */
static inline const char *peek_tls_alert_name(uint8_t d)
{
	switch (d) {
	case 0:
		return "close_notify";
	case 10:
		return "unexpected_message";
	case 20:
		return "bad_record_mac";
	case 22:
		return "record_overflow";
	case 40:
		return "handshake_failure";
	case 42:
		return "bad_certificate";
	case 43:
		return "unsupported_certificate";
	case 44:
		return "certificate_revoked";
	case 45:
		return "certificate_expired";
	case 46:
		return "certificate_unknown";
	case 47:
		return "illegal_parameter";
	case 48:
		return "unknown_ca";
	case 49:
		return "access_denied";
	case 50:
		return "decode_error";
	case 51:
		return "decrypt_error";
	case 70:
		return "protocol_version";
	case 71:
		return "insufficient_security";
	case 80:
		return "internal_error";
	case 90:
		return "user_canceled";
	case 109:
		return "missing_extension";
	case 110:
		return "unsupported_extension";
	case 112:
		return "unrecognized_name";
	case 116:
		return "certificate_required";
	case 120:
		return "no_application_protocol";
	}
	return "unlisted";
}

#endif
