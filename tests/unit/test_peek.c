/*
 * tests/unit/test_peek.c — unit tests of what a peer speaks, from its first
 * bytes (proto/peek.h: TLS record, nng's SP header, HTTP, other; the SP
 * protocol; the phrase for a message; TLS alert names), and of the cause
 * gpud logs for a failed inbound TLS handshake (daemon/auth.h,
 * auth_handshake_cause). Pure functions: no threads, no state.
 */
#include <check.h>
#include <string.h>

#include <mbedtls/ssl.h>
#include <mbedtls/x509.h>

#include "daemon/auth.h"
#include "proto/peek.h"
#include "tests/unit/suites.h"

static const uint8_t sp_req[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};
static const uint8_t sp_rep[8] = {0, 'S', 'P', 0, 0, 0x31, 0, 0};
static const uint8_t hello[5] = {0x16, 3, 1, 0, 0x80};
static const uint8_t alert[7] = {0x15, 3, 3, 0, 2, 2, 48};

START_TEST(test_kinds)
{
	ck_assert_int_eq(peek_kind_of(sp_req, 0), PEEK_NOTHING);
	ck_assert_int_eq(peek_kind_of(sp_req, 8), PEEK_SP);
	ck_assert_int_eq(peek_kind_of(sp_req, 4), PEEK_SP);
	ck_assert_int_eq(peek_kind_of(sp_req, 3), PEEK_OTHER); /* too few to say */
	ck_assert_int_eq(peek_kind_of(hello, 5), PEEK_TLS);
	ck_assert_int_eq(peek_kind_of(alert, 3), PEEK_TLS);
	ck_assert_int_eq(peek_kind_of(hello, 2), PEEK_OTHER);
	static const uint8_t v2[3] = {0x16, 2, 0}, type[3] = {0x18, 3, 3}, v5[3] = {0x17, 3, 5};
	ck_assert_int_eq(peek_kind_of(v2, 3), PEEK_OTHER);
	ck_assert_int_eq(peek_kind_of(type, 3), PEEK_OTHER);
	ck_assert_int_eq(peek_kind_of(v5, 3), PEEK_OTHER);
	ck_assert_int_eq(peek_kind_of((const uint8_t *)"GET / HTTP/1.1", 14), PEEK_HTTP);
	ck_assert_int_eq(peek_kind_of((const uint8_t *)"HTTP/1.1 400", 12), PEEK_HTTP);
	ck_assert_int_eq(peek_kind_of((const uint8_t *)"GET", 3), PEEK_OTHER);
	ck_assert_int_eq(peek_kind_of((const uint8_t *)"SSH-2.0", 7), PEEK_OTHER);
}
END_TEST

START_TEST(test_sp_protocol)
{
	ck_assert_str_eq(peek_sp_protocol(sp_req, 8), "req0");
	ck_assert_str_eq(peek_sp_protocol(sp_rep, 6), "rep0");
	ck_assert_ptr_null(peek_sp_protocol(sp_req, 5)); /* mbed TLS's 5-byte record header */
	ck_assert_ptr_null(peek_sp_protocol(hello, 5));
	static const uint8_t odd[6] = {0, 'S', 'P', 0, 0x12, 0x34};
	ck_assert_ptr_null(peek_sp_protocol(odd, 6));
}
END_TEST

START_TEST(test_describe)
{
	char s[64];
	peek_describe(sp_req, 8, s, sizeof(s));
	ck_assert_str_eq(s, "nng's tcp:// header (req0)");
	peek_describe(sp_req, 5, s, sizeof(s));
	ck_assert_str_eq(s, "nng's tcp:// header");
	peek_describe(hello, 5, s, sizeof(s));
	ck_assert_str_eq(s, "a TLS record");
	peek_describe((const uint8_t *)"POST /x", 7, s, sizeof(s));
	ck_assert_str_eq(s, "an HTTP request");
	peek_describe((const uint8_t *)"HTTP/1.0", 8, s, sizeof(s));
	ck_assert_str_eq(s, "an HTTP response");
	peek_describe(sp_req, 0, s, sizeof(s));
	ck_assert_str_eq(s, "nothing");
	static const uint8_t junk[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	peek_describe(junk, 3, s, sizeof(s));
	ck_assert_str_eq(s, "bytes 01 02 03");
	peek_describe(junk, 12, s, sizeof(s)); /* at most 8 */
	ck_assert_str_eq(s, "bytes 01 02 03 04 05 06 07 08");
	/* a short buffer: cut, terminated, nothing written past it */
	char small[12];
	memset(small, 'x', sizeof(small));
	peek_describe(junk, 12, small, 8);
	ck_assert_str_eq(small, "bytes 0");
	ck_assert_int_eq(small[8], 'x');
	peek_describe(junk, 12, small, 3);
	ck_assert_str_eq(small, "by");
}
END_TEST

START_TEST(test_alert_names)
{
	ck_assert_str_eq(peek_tls_alert_name(48), "unknown_ca");
	ck_assert_str_eq(peek_tls_alert_name(45), "certificate_expired");
	ck_assert_str_eq(peek_tls_alert_name(42), "bad_certificate");
	ck_assert_str_eq(peek_tls_alert_name(200), "unlisted");
}
END_TEST

/* The causes gpud logs for an inbound handshake. */
START_TEST(test_handshake_causes)
{
	char s[600];
	auth_handshake_cause(MBEDTLS_ERR_SSL_BAD_HS_CLIENT_HELLO, sp_req, 5, -1, 0, s, sizeof(s));
	ck_assert_msg(strstr(s,
			     "a plain tcp:// client at a TLS port (it sent nng's tcp:// header)"),
		      "%s", s);
	ck_assert_msg(strstr(s, "tls+tcp://"), "%s", s);
	auth_handshake_cause(MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE, alert, 5, 48, 0, s, sizeof(s));
	ck_assert_msg(strstr(s, "alert 48 (unknown_ca)") && strstr(s, "GPUD_TLS_CA"), "%s", s);
	auth_handshake_cause(MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE, alert, 5, 45, 0, s, sizeof(s));
	ck_assert_msg(strstr(s, "alert 45 (certificate_expired): gpud's certificate has expired"),
		      "%s", s);
	auth_handshake_cause(MBEDTLS_ERR_SSL_BAD_HS_CLIENT_HELLO, (const uint8_t *)"GET /", 5, -1,
			     0, s, sizeof(s));
	ck_assert_msg(strstr(s, "an HTTP client at a TLS port"), "%s", s);
	static const uint8_t junk[5] = {1, 2, 3, 4, 5};
	auth_handshake_cause(MBEDTLS_ERR_SSL_BAD_HS_CLIENT_HELLO, junk, 5, -1, 0, s, sizeof(s));
	ck_assert_msg(strstr(s, "does not speak TLS (it sent bytes 01 02 03 04 05)"), "%s", s);
	auth_handshake_cause(MBEDTLS_ERR_SSL_BAD_HS_PROTOCOL_VERSION, hello, 5, -1, 0, s,
			     sizeof(s));
	ck_assert_msg(strstr(s, "mbed TLS error -0x"), "%s", s);
	auth_handshake_cause(0, hello, 5, -1, MBEDTLS_X509_BADCERT_NOT_TRUSTED, s, sizeof(s));
	ck_assert_msg(strstr(s, "client certificate does not verify against tls_ca") &&
			      strstr(s, "served anyway"),
		      "%s", s);
	/* nothing read, a tiny buffer */
	char small[10];
	auth_handshake_cause(MBEDTLS_ERR_SSL_CONN_EOF, NULL, 0, -1, 0, small, sizeof(small));
	ck_assert_int_lt(strlen(small), sizeof(small));
}
END_TEST

Suite *peek_suite(void)
{
	Suite *s = suite_create("peek");
	TCase *tc = tcase_create("peek");
	tcase_add_test(tc, test_kinds);
	tcase_add_test(tc, test_sp_protocol);
	tcase_add_test(tc, test_describe);
	tcase_add_test(tc, test_alert_names);
	tcase_add_test(tc, test_handshake_causes);
	suite_add_tcase(s, tc);
	return s;
}
