/*
 * tests/e2e/hello.c — test case "hello": a later hello on a connection that
 * has its tenant. Over tcp:// (two_tenants.c's tokens, on a raw REQ socket,
 * since the library says hello once per connection): a wrong or missing
 * token is refused UNAUTHENTICATED as on a first hello, another tenant's
 * token is refused too, the tenant's own token is answered OK; none of them
 * changes the connection's tenant or what it holds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "tests/e2e/e2e.h"

#define ST_UNAUTHENTICATED 12
#define HELLO_FIELD 10 /* Request.hello */
#define HELLO_TENANT 9 /* HelloResponse.tenant */
#define HELLO_CONNECTION 8

static nng_socket dial_tenants(void)
{
	nng_socket s;
	int rv;
	ck_assert_int_eq(nng_req0_open(&s), 0);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 60000);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 60000);
	rv = nng_dial(s, tenants_url, NULL, 0);
	ck_assert_msg(rv == 0, "nng_dial %s: %s", tenants_url, nng_strerror(rv));
	return s;
}

/* hello{token} (NULL: none) on s. */
static raw_reply hello_with(nng_socket s, uint64_t id, const char *token)
{
	pb body = {.n = 0};
	if (token) {
		size_t n = strlen(token);
		pb_key(&body, 2, 2);
		pb_varint(&body, n);
		memcpy(body.b + body.n, token, n);
		body.n += n;
	}
	return raw_body_on(s, id, HELLO_FIELD, &body, NULL, 0);
}

/* The tenant a hello reply names ("" if none) and its connection id. */
static void hello_says(const raw_reply *r, char *tenant, size_t len, uint64_t *conn)
{
	const uint8_t *p;
	size_t n = 0;
	uint64_t v = 0;
	tenant[0] = '\0';
	ck_assert_int_eq(r->body_field, HELLO_FIELD);
	if (pb_find(r->body, r->body_len, HELLO_TENANT, &p, &n, &v) == 0 && n < len) {
		memcpy(tenant, p, n);
		tenant[n] = '\0';
	}
	*conn = 0;
	pb_find(r->body, r->body_len, HELLO_CONNECTION, &p, &n, conn);
}

#define REFUSED(r, words)                                                                          \
	ck_assert_msg((r).code == ST_UNAUTHENTICATED && strstr((r).message, (words)),              \
		      "a later hello: got %" PRIu64 " '%s', expected %d mentioning '%s'",          \
		      (r).code, (r).message, ST_UNAUTHENTICATED, (words))

START_TEST(test_second_hello)
{
	char tenant[64];
	uint64_t conn, conn2;
	double got[4];
	start_tenants(NULL, NULL, NULL, NULL);
	nng_socket s = dial_tenants();

	raw_reply r = hello_with(s, 1, TOKEN_ALICE);
	ck_assert_msg(r.code == ST_OK, "first hello: %s", r.message);
	hello_says(&r, tenant, sizeof(tenant), &conn);
	ck_assert_str_eq(tenant, "alice");
	uint64_t h = raw_alloc_f64(s, 4); /* alice's, made on this connection */

	/* A wrong token, none: refused as a first hello would be. */
	r = hello_with(s, 2, "alice-0123456789abcdeX");
	REFUSED(r, "hello: unknown token; connections over tcp:// must present one");
	r = hello_with(s, 3, NULL);
	REFUSED(r, "hello: no token");
	/* Another tenant's token: refused, the tenant is the first hello's. */
	r = hello_with(s, 4, TOKEN_BOB);
	REFUSED(r, "hello: this connection is tenant alice since its first hello; a hello "
		   "cannot change its tenant");

	/* The connection is alice's still: its requests are served as hers. */
	uint64_t h2 = raw_alloc_f64(s, 4);
	ck_assert_uint_ne(h2, 0);
	gpud_client *alice = connect_token(TOKEN_ALICE), *bob = connect_token(TOKEN_BOB);
	LIB_OK(alice, gpud_download_range(alice, h, 0, got, sizeof(got)));
	LIB_OK(alice, gpud_download_range(alice, h2, 0, got, sizeof(got)));
	LIB_FAIL(bob, gpud_download_range(bob, h2, 0, got, sizeof(got)), GPUD_ENOTFOUND,
		 "unknown handle");

	/* The tenant's own token again: answered, nothing changes. */
	r = hello_with(s, 5, TOKEN_ALICE);
	ck_assert_msg(r.code == ST_OK, "hello again with alice's token: %s", r.message);
	hello_says(&r, tenant, sizeof(tenant), &conn2);
	ck_assert_str_eq(tenant, "alice");
	ck_assert_uint_eq(conn2, conn);
	LIB_OK(alice, gpud_download_range(alice, h, 0, got, sizeof(got)));
	gpud_close(alice);
	gpud_close(bob);
	nng_close(s);
	assert_daemon_alive("later hellos");
}
END_TEST

TCase *e2e_hello(void)
{
	TCase *tc = tcase_create("hello");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_second_hello);
	return tc;
}
