/*
 * tests/unit/test_wire_framing.c — unit tests of proto/wire.c's frames: too
 * short, a header past the end, over the maximum or empty; the room wire_pack
 * leaves for a payload; a response marked draining in place; a header too
 * large to pack; and every status's name. Each test runs single-threaded in
 * its own process (Check's fork mode).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "tests/unit/test_wire.h"

/* --- framing ---------------------------------------------------------------------- */

/* A message of len bytes whose first four say hlen (when there is room for them). */
static nng_msg *raw_msg(size_t len, uint32_t hlen)
{
	nng_msg *m;

	ck_assert_int_eq(nng_msg_alloc(&m, len), 0);
	uint8_t *p = nng_msg_body(m);
	uint8_t le[4] = {(uint8_t)hlen, (uint8_t)(hlen >> 8), (uint8_t)(hlen >> 16),
			 (uint8_t)(hlen >> 24)};
	if (len > 0) {
		memset(p, 0xab, len);
		memcpy(p, le, len < 4 ? len : 4);
	}
	return m;
}

static int split(nng_msg *m, char *err, size_t errlen, size_t *hlen, size_t *plen)
{
	const uint8_t *hdr = NULL;
	uint8_t *pl = NULL;

	return wire_split(m, &hdr, hlen, &pl, plen, err, errlen);
}

START_TEST(test_split_short)
{
	char err[256] = "", want[64];
	size_t hlen, plen;
	nng_msg *m = raw_msg((size_t)_i, 0);

	ck_assert_int_eq(split(m, err, sizeof(err), &hlen, &plen), -1);
	snprintf(want, sizeof(want), "message of %d bytes", _i);
	assert_has(err, want);
	assert_has(err, "4-byte");
	nng_msg_free(m);
}
END_TEST

START_TEST(test_split_header_past_end)
{
	char err[256] = "";
	size_t hlen, plen;
	nng_msg *m = raw_msg(4 + 9, 10);

	ck_assert_int_eq(split(m, err, sizeof(err), &hlen, &plen), -1);
	assert_has(err, "10-byte header");
	assert_has(err, "9 bytes");
	nng_msg_free(m);

	m = raw_msg(4, 1);
	ck_assert_int_eq(split(m, err, sizeof(err), &hlen, &plen), -1);
	assert_has(err, "1-byte header");
	assert_has(err, "0 bytes");
	nng_msg_free(m);

	m = raw_msg(4 + 100, UINT32_MAX);
	ck_assert_int_eq(split(m, err, sizeof(err), &hlen, &plen), -1);
	assert_has(err, "4294967295-byte header");
	assert_has(err, "100 bytes");
	nng_msg_free(m);
}
END_TEST

/* Over the limit is refused even when the message holds that many bytes. */
START_TEST(test_split_header_over_max)
{
	char err[256] = "", want[64];
	size_t hlen = 0, plen = 0;
	nng_msg *m = raw_msg(4 + GPUD_WIRE_MAX_HEADER + 1 + 16, GPUD_WIRE_MAX_HEADER + 1);

	ck_assert_int_eq(split(m, err, sizeof(err), &hlen, &plen), -1);
	snprintf(want, sizeof(want), "%u-byte header", GPUD_WIRE_MAX_HEADER + 1);
	assert_has(err, want);
	nng_msg_free(m);

	/* exactly at the limit is fine */
	m = raw_msg(4 + GPUD_WIRE_MAX_HEADER + 16, GPUD_WIRE_MAX_HEADER);
	ck_assert_msg(split(m, err, sizeof(err), &hlen, &plen) == 0, "%s", err);
	ck_assert_uint_eq(hlen, GPUD_WIRE_MAX_HEADER);
	ck_assert_uint_eq(plen, 16);
	nng_msg_free(m);
}
END_TEST

START_TEST(test_split_empty_header)
{
	char err[256] = "";
	size_t hlen = 99, plen = 99;
	nng_msg *m = raw_msg(4, 0);

	ck_assert_msg(split(m, err, sizeof(err), &hlen, &plen) == 0, "%s", err);
	ck_assert_uint_eq(hlen, 0);
	ck_assert_uint_eq(plen, 0);
	nng_msg_free(m);

	m = raw_msg(4 + 5, 0);
	ck_assert_msg(split(m, err, sizeof(err), &hlen, &plen) == 0, "%s", err);
	ck_assert_uint_eq(hlen, 0);
	ck_assert_uint_eq(plen, 5);
	nng_msg_free(m);
}
END_TEST

START_TEST(test_pack_room)
{
	Gpud__DownloadResponse d = GPUD__DOWNLOAD_RESPONSE__INIT;
	Gpud__Response rs = GPUD__RESPONSE__INIT;
	size_t hlen, sizes[] = {0, 1, 4096, 1u << 20};
	uint8_t *want;
	nng_msg *m;
	void *room;

	d.offset = 64;
	rs.version = GPUD_PROTOCOL_VERSION;
	rs.body_case = GPUD__RESPONSE__BODY_DOWNLOAD;
	rs.download = &d;
	hlen = gpud__response__get_packed_size(&rs);
	ck_assert_uint_gt(hlen, 0);
	want = malloc(1u << 20);
	ck_assert_ptr_nonnull(want);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		room = NULL;
		ck_assert_int_eq(wire_pack(&m, &rs.base, NULL, sizes[i], &room), 0);
		ck_assert_uint_eq(nng_msg_len(m), 4 + hlen + sizes[i]);
		ck_assert_ptr_eq(room, (uint8_t *)nng_msg_body(m) + 4 + hlen);
		/* all of the room is writable (ASan would catch an overrun) */
		fill_nonzero(want, sizes[i], i + 1);
		memcpy(room, want, sizes[i]);

		const uint8_t *hdr;
		uint8_t *pl;
		size_t hl, pll;
		char err[256];
		ck_assert_int_eq(wire_split(m, &hdr, &hl, &pl, &pll, err, sizeof(err)), 0);
		ck_assert_uint_eq(pll, sizes[i]);
		ck_assert_int_eq(memcmp(pl, want, sizes[i]), 0);
		/* the payload did not overwrite the header */
		Gpud__Response *out = gpud__response__unpack(NULL, hl, hdr);
		ck_assert_ptr_nonnull(out);
		ck_assert_int_eq(out->body_case, GPUD__RESPONSE__BODY_DOWNLOAD);
		ck_assert_uint_eq(out->download->offset, 64);
		gpud__response__free_unpacked(out, NULL);
		nng_msg_free(m);
	}
	/* payload_out may be NULL when the payload is given */
	fill_nonzero(want, 8, 99);
	ck_assert_int_eq(wire_pack(&m, &rs.base, want, 8, NULL), 0);
	ck_assert_uint_eq(nng_msg_len(m), 4 + hlen + 8);
	ck_assert_int_eq(memcmp((uint8_t *)nng_msg_body(m) + 4 + hlen, want, 8), 0);
	nng_msg_free(m);
	free(want);
}
END_TEST

/*
 * A reply marked draining (a stopping gpud's, daemon/server.c) reads as the
 * same reply with draining set: every field and the payload unchanged, the
 * payload not moved in the message. An error reply without a body too.
 */
START_TEST(test_mark_draining)
{
	Gpud__DownloadResponse d = GPUD__DOWNLOAD_RESPONSE__INIT;
	Gpud__Response rs = GPUD__RESPONSE__INIT;
	const size_t sizes[] = {0, 1, 4096, (1u << 20) + 3};
	uint8_t *want = malloc((1u << 20) + 3);

	ck_assert_ptr_nonnull(want);
	d.offset = 77;
	rs.version = GPUD_PROTOCOL_VERSION;
	rs.id = 123456789;
	rs.body_case = GPUD__RESPONSE__BODY_DOWNLOAD;
	rs.download = &d;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		nng_msg *m;
		const uint8_t *hdr;
		uint8_t *pl;
		size_t hl, pll, len;
		char err[256];
		fill_nonzero(want, sizes[i], i + 5);
		ck_assert_int_eq(wire_pack(&m, &rs.base, want, sizes[i], NULL), 0);
		len = nng_msg_len(m);
		ck_assert_int_eq(wire_mark_draining(m), 0);
		ck_assert_uint_eq(nng_msg_len(m), len + 2); /* field 5, varint 1 */
		ck_assert_int_eq(wire_split(m, &hdr, &hl, &pl, &pll, err, sizeof(err)), 0);
		ck_assert_uint_eq(pll, sizes[i]);
		ck_assert_int_eq(memcmp(pl, want, sizes[i]), 0);
		Gpud__Response *out = gpud__response__unpack(NULL, hl, hdr);
		ck_assert_ptr_nonnull(out);
		ck_assert_int_eq(out->draining, 1);
		ck_assert_uint_eq(out->version, GPUD_PROTOCOL_VERSION);
		ck_assert_uint_eq(out->id, 123456789);
		ck_assert_int_eq(out->code, GPUD__STATUS__STATUS_OK);
		ck_assert_int_eq(out->body_case, GPUD__RESPONSE__BODY_DOWNLOAD);
		ck_assert_uint_eq(out->download->offset, 77);
		gpud__response__free_unpacked(out, NULL);
		nng_msg_free(m);
	}
	free(want);

	Gpud__Response e = GPUD__RESPONSE__INIT;
	nng_msg *m;
	const uint8_t *hdr;
	uint8_t *pl;
	size_t hl, pll;
	char err[256];
	e.version = GPUD_PROTOCOL_VERSION;
	e.id = 9;
	e.code = GPUD__STATUS__STATUS_SHUTTING_DOWN;
	e.message = "gpud is shutting down";
	ck_assert_int_eq(wire_pack(&m, &e.base, NULL, 0, NULL), 0);
	ck_assert_int_eq(wire_mark_draining(m), 0);
	ck_assert_int_eq(wire_split(m, &hdr, &hl, &pl, &pll, err, sizeof(err)), 0);
	ck_assert_uint_eq(pll, 0);
	Gpud__Response *out = gpud__response__unpack(NULL, hl, hdr);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(out->draining, 1);
	ck_assert_uint_eq(out->id, 9);
	ck_assert_int_eq(out->code, GPUD__STATUS__STATUS_SHUTTING_DOWN);
	ck_assert_str_eq(out->message, "gpud is shutting down");
	gpud__response__free_unpacked(out, NULL);
	nng_msg_free(m);

	/* not a framed message: refused, left as it was */
	ck_assert_int_eq(nng_msg_alloc(&m, 3), 0);
	ck_assert_int_eq(wire_mark_draining(m), NNG_EINVAL);
	ck_assert_uint_eq(nng_msg_len(m), 3);
	nng_msg_free(m);
	ck_assert_int_eq(nng_msg_alloc(&m, 8), 0);
	memcpy(nng_msg_body(m), "\x10\0\0\0abcd", 8); /* a 16-byte header in 4 bytes */
	ck_assert_int_eq(wire_mark_draining(m), NNG_EINVAL);
	ck_assert_int_eq(memcmp(nng_msg_body(m), "\x10\0\0\0abcd", 8), 0);
	nng_msg_free(m);
}
END_TEST

START_TEST(test_pack_header_too_large)
{
	Gpud__HelloRequest h = GPUD__HELLO_REQUEST__INIT;
	Gpud__Request rq = GPUD__REQUEST__INIT;
	char *big = malloc(GPUD_WIRE_MAX_HEADER + 1);
	nng_msg *m = NULL;

	ck_assert_ptr_nonnull(big);
	memset(big, 'a', GPUD_WIRE_MAX_HEADER);
	big[GPUD_WIRE_MAX_HEADER] = '\0';
	h.client = big;
	rq.body_case = GPUD__REQUEST__BODY_HELLO;
	rq.hello = &h;
	ck_assert_uint_gt(gpud__request__get_packed_size(&rq), GPUD_WIRE_MAX_HEADER);
	ck_assert_int_eq(wire_pack(&m, &rq.base, NULL, 0, NULL), NNG_EMSGSIZE);
	ck_assert_ptr_null(m);
	free(big);
}
END_TEST

/* --- status names ----------------------------------------------------------------- */

START_TEST(test_status_names)
{
	static const struct {
		Gpud__Status s;
		const char *name;
	} names[] = {
		{GPUD__STATUS__STATUS_OK, "OK"},
		{GPUD__STATUS__STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
		{GPUD__STATUS__STATUS_NOT_FOUND, "NOT_FOUND"},
		{GPUD__STATUS__STATUS_UNKNOWN_KERNEL, "UNKNOWN_KERNEL"},
		{GPUD__STATUS__STATUS_OUT_OF_MEMORY, "OUT_OF_MEMORY"},
		{GPUD__STATUS__STATUS_TOO_LARGE, "TOO_LARGE"},
		{GPUD__STATUS__STATUS_UNSUPPORTED, "UNSUPPORTED"},
		{GPUD__STATUS__STATUS_PROTOCOL, "PROTOCOL"},
		{GPUD__STATUS__STATUS_BACKEND, "BACKEND"},
		{GPUD__STATUS__STATUS_SHUTTING_DOWN, "SHUTTING_DOWN"},
		{GPUD__STATUS__STATUS_INTERNAL, "INTERNAL"},
		{GPUD__STATUS__STATUS_QUOTA, "QUOTA"},
		{GPUD__STATUS__STATUS_UNAUTHENTICATED, "UNAUTHENTICATED"},
		{GPUD__STATUS__STATUS_STALE, "STALE"},
		{GPUD__STATUS__STATUS_CANCELLED, "CANCELLED"},
		{GPUD__STATUS__STATUS_NO_SESSION, "NO_SESSION"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_str_eq(wire_status_name(names[i].s), names[i].name);
	ck_assert_str_eq(wire_status_name((Gpud__Status)16), "UNKNOWN_STATUS");
	ck_assert_str_eq(wire_status_name((Gpud__Status)-1), "UNKNOWN_STATUS");
	/* and every code of the schema has its name there, less "STATUS_" */
	ck_assert_uint_eq(gpud__status__descriptor.n_values, sizeof(names) / sizeof(names[0]));
	for (unsigned i = 0; i < gpud__status__descriptor.n_values; i++) {
		const ProtobufCEnumValue *v = &gpud__status__descriptor.values[i];
		ck_assert_str_eq(wire_status_name((Gpud__Status)v->value), v->name + 7);
	}
}
END_TEST

TCase *wire_framing_tcase(void)
{
	TCase *tc = tcase_create("framing");

	tcase_add_loop_test(tc, test_split_short, 0, 4);
	tcase_add_test(tc, test_split_header_past_end);
	tcase_add_test(tc, test_split_header_over_max);
	tcase_add_test(tc, test_split_empty_header);
	tcase_add_test(tc, test_pack_room);
	tcase_add_test(tc, test_pack_header_too_large);
	tcase_add_test(tc, test_mark_draining);
	tcase_add_test(tc, test_status_names);
	return tc;
}
