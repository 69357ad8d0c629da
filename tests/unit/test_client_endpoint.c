/*
 * tests/unit/test_client_endpoint.c — unit tests of libgpud-client's table
 * of endpoint kinds (client/endpoint/endpoint.h): the row each scheme finds
 * (nng's tcp4:// and tls+tcp6:// forms too), the values of each row (kind,
 * scheme, local, tls, what it does before and after a dial), the forms
 * messages list, and a URL of another scheme refused at connect with the
 * message it has always had. The table is linked in from a test object of
 * the client's endpoint layer (the Makefile's CLIENT_ENDPOINT_OBJ); the
 * connect goes through libgpud-client itself. And mbed TLS's PSA crypto:
 * left unstarted by a client that dials no TLS endpoint, started by the
 * first TLS setup (client/endpoint/tls.c). No threads of its own.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpud/client.h>
#include <psa/crypto.h>

#include "client/endpoint/endpoint.h"
#include "tests/tls_fixture.h"
#include "tests/unit/suites.h"

#define FORMS "ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT"

START_TEST(test_schemes_found)
{
	static const struct {
		const char *url;
		const client_endpoint *row;
	} cases[] = {
		{"ipc:///run/gpud/gpud.sock", &client_endpoint_ipc},
		{"ipc://relative.sock", &client_endpoint_ipc},
		{"tcp://127.0.0.1:7000", &client_endpoint_tcp},
		{"tcp://[::1]:7000", &client_endpoint_tcp},
		{"tcp4://127.0.0.1:7000", &client_endpoint_tcp},
		{"tcp6://[::1]:7000", &client_endpoint_tcp},
		{"tls+tcp://gpud.example:7443", &client_endpoint_tls},
		{"tls+tcp4://127.0.0.1:7443", &client_endpoint_tls},
		{"tls+tcp6://[::1]:7443", &client_endpoint_tls},
		/* gpud speaks none of these: nng's dial says what is wrong */
		{"http://localhost:80", NULL},
		{"ws://h:1", NULL},
		{"inproc://x", NULL},
		{"abstract://x", NULL},
		{"ipc:/x", NULL},
		{"tcp:/h:1", NULL},
		{"tls://h:1", NULL},
		{"IPC:///x", NULL},
		{"/run/gpud/gpud.sock", NULL},
		{"", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(client_endpoint_of(cases[i].url) == cases[i].row, "%s: row %s",
			      cases[i].url,
			      client_endpoint_of(cases[i].url)
				      ? client_endpoint_of(cases[i].url)->kind
				      : "none");
}
END_TEST

START_TEST(test_rows)
{
	const client_endpoint *ipc = &client_endpoint_ipc, *tcp = &client_endpoint_tcp,
			      *tls = &client_endpoint_tls;

	ck_assert_str_eq(ipc->kind, "ipc");
	ck_assert_str_eq(ipc->scheme, "ipc://");
	ck_assert_str_eq(ipc->form, "ipc://PATH");
	ck_assert_int_eq(ipc->local, 1);
	ck_assert_int_eq(ipc->tls, 0);
	ck_assert_ptr_null(ipc->setup);
	ck_assert_ptr_nonnull(ipc->explain); /* the socket's permissions (access.c) */
	ck_assert_ptr_nonnull(strstr(ipc->wedged, "its socket took the connection"));

	ck_assert_str_eq(tcp->kind, "tcp");
	ck_assert_str_eq(tcp->scheme, "tcp://");
	ck_assert_str_eq(tcp->form, "tcp://HOST:PORT");
	ck_assert_int_eq(tcp->local, 0);
	ck_assert_int_eq(tcp->tls, 0);
	ck_assert_ptr_null(tcp->setup);
	ck_assert_ptr_nonnull(tcp->explain); /* a server that speaks TLS (tls_diag.c) */
	ck_assert_ptr_nonnull(strstr(tcp->wedged, "the connection or nng's handshake"));

	ck_assert_str_eq(tls->kind, "tls");
	ck_assert_str_eq(tls->scheme, "tls+tcp://");
	ck_assert_str_eq(tls->form, "tls+tcp://HOST:PORT");
	ck_assert_int_eq(tls->local, 0);
	ck_assert_int_eq(tls->tls, 1);
	ck_assert_ptr_nonnull(tls->setup); /* the CA file and server name */
	ck_assert_ptr_nonnull(tls->explain);
	ck_assert_str_eq(tls->wedged, tcp->wedged);
}
END_TEST

START_TEST(test_forms)
{
	char buf[256];
	ck_assert_str_eq(client_endpoint_forms(buf, sizeof(buf)), FORMS);
	/* cut short, never past the buffer */
	ck_assert_str_eq(client_endpoint_forms(buf, 12), "ipc://PATH,");
}
END_TEST

/* gpud_connect(url) fails with st and exactly msg. */
static void assert_refused(const char *url, gpud_status st, const char *msg)
{
	gpud_client *c = NULL;
	gpud_options o = {.url = url, .connect_timeout_ms = 2000};
	ck_assert_int_eq(gpud_connect_opts(&o, &c), st);
	ck_assert_str_eq(gpud_errmsg(c), msg);
	gpud_close(c);
}

START_TEST(test_unknown_refused)
{
	unsetenv("GPUD_URL");
	assert_refused("http://localhost:80", GPUD_ECONNECT,
		       "cannot connect to 'http://localhost:80': Not supported (expected " FORMS
		       ")");
	assert_refused("gopher://h:70", GPUD_ECONNECT,
		       "cannot connect to 'gopher://h:70': Not supported (expected " FORMS ")");
	assert_refused("ipc:///a, ,tcp://h:1", GPUD_ECONNECT,
		       "the gpud URL list 'ipc:///a, ,tcp://h:1' has an empty entry (number 2): "
		       "expected URL[,URL]... of " FORMS);
}
END_TEST

/*
 * A client that dials ipc:// (nothing listens there) has started nng, and
 * with it nng's mbed TLS engine, but not PSA crypto: PSA's RNG says so
 * (PSA_ERROR_BAD_STATE). A tls+tcp:// dial (to a closed port, with a CA
 * file) sets TLS up first, which starts it. PSA's state is the process's:
 * Check's fork mode gives the test a process of its own; without it an
 * earlier test may have started PSA, so the test says so and checks nothing.
 */
START_TEST(test_psa_started_by_tls_only)
{
	const char *fork_env = getenv("CK_FORK");
	if (fork_env && strcmp(fork_env, "no") == 0) {
		printf("client_endpoint: test_psa_started_by_tls_only needs Check's fork mode\n");
		return;
	}
	unsigned char b[8];
	char dir[] = "/tmp/gpud-psa-XXXXXX", ipc[128], ca[128];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(ipc, sizeof(ipc), "ipc://%s/none.sock", dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	FILE *f = fopen(ca, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(test_tls_cert, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);

	gpud_client *c = NULL;
	gpud_options o = {.url = ipc, .connect_timeout_ms = 300};
	ck_assert_int_eq(gpud_connect_opts(&o, &c), GPUD_ECONNECT);
	gpud_close(c);
	ck_assert_int_eq(psa_generate_random(b, sizeof(b)), PSA_ERROR_BAD_STATE);

	gpud_options t = {.url = "tls+tcp://127.0.0.1:1", .tls_ca = ca, .connect_timeout_ms = 300};
	ck_assert_int_eq(gpud_connect_opts(&t, &c), GPUD_ECONNECT);
	ck_assert_msg(strstr(gpud_errmsg(c), "tls+tcp://127.0.0.1:1") != NULL, "%s",
		      gpud_errmsg(c));
	gpud_close(c);
	ck_assert_int_eq(psa_generate_random(b, sizeof(b)), PSA_SUCCESS);
	unlink(ca);
	rmdir(dir);
}
END_TEST

Suite *client_endpoint_suite(void)
{
	Suite *s = suite_create("client_endpoint");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, test_schemes_found);
	tcase_add_test(tc, test_rows);
	tcase_add_test(tc, test_forms);
	tcase_add_test(tc, test_unknown_refused);
	tcase_add_test(tc, test_psa_started_by_tls_only);
	suite_add_tcase(s, tc);
	return s;
}
