/*
 * tests/unit/test_endpoint.c — unit tests of daemon/endpoint/: each scheme
 * finds its row (and the length of its scheme), a URL no row takes is
 * refused with the config's message, each row's local and TLS properties
 * and socket file, the rows' own checks of a URL, where gpud's probe dials
 * each, and the peer of a real connection over ipc:// (local, its uid and
 * pid) and tcp:// (its address) through endpoint_listen's listener.
 */
#include <check.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "daemon/endpoint/endpoint.h"
#include "tests/unit/suites.h"

#define UNKNOWN "expected ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT"

START_TEST(test_rows_by_scheme)
{
	static const struct {
		const char *url, *name;
		size_t scheme_len;
		int local, tls;
	} rows[] = {
		{"ipc:///run/gpud/gpud.sock", "ipc", 6, 1, 0},
		{"tcp://127.0.0.1:7100", "tcp", 6, 0, 0},
		{"tcp4://0.0.0.0:7100", "tcp", 7, 0, 0},
		{"tcp6://[::1]:7100", "tcp", 7, 0, 0},
		{"tls+tcp://0.0.0.0:7101", "tls+tcp", 10, 0, 1},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t len = 0;
		const endpoint_kind *k = endpoint_find(rows[i].url, &len);
		ck_assert_msg(k != NULL, "%s: no row", rows[i].url);
		ck_assert_str_eq(k->name, rows[i].name);
		ck_assert_uint_eq(len, rows[i].scheme_len);
		ck_assert_int_eq(k->local, rows[i].local);
		ck_assert_int_eq(k->tls, rows[i].tls);
		ck_assert_int_eq(endpoint_local(rows[i].url), rows[i].local);
		ck_assert_int_eq(endpoint_tls(rows[i].url), rows[i].tls);
		ck_assert_ptr_eq(endpoint_find(rows[i].url, NULL), k);
	}
	/* The socket file: ipc:// alone makes one. */
	ck_assert_str_eq(endpoint_path("ipc:///run/gpud/gpud.sock"), "/run/gpud/gpud.sock");
	ck_assert_ptr_null(endpoint_path("tcp://127.0.0.1:7100"));
	ck_assert_ptr_null(endpoint_path("tls+tcp://127.0.0.1:7100"));
}
END_TEST

START_TEST(test_unknown_scheme)
{
	static const char *const refused[] = {
		"http://localhost:80", "ws://h:1",       "inproc://x", "ipc:/x", "tcp:/h:1", "",
		"/run/gpud.sock",      "tls+tcp4://h:1", "TCP://h:1"};
	char err[512], want[512];
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		ck_assert_ptr_null(endpoint_find(refused[i], NULL));
		ck_assert_int_eq(endpoint_local(refused[i]), 0);
		ck_assert_int_eq(endpoint_tls(refused[i]), 0);
		ck_assert_ptr_null(endpoint_path(refused[i]));
		err[0] = '\0';
		ck_assert_int_eq(endpoint_check(refused[i], err, sizeof(err)), -1);
		snprintf(want, sizeof(want), "listen URL '%s': " UNKNOWN, refused[i]);
		ck_assert_str_eq(err, want);
	}
	ck_assert_ptr_null(endpoint_find(NULL, NULL));
}
END_TEST

/* Each row checks the rest of its URL: tcp:// and tls+tcp:// need a port. */
START_TEST(test_row_checks)
{
	static const char *const good[] = {"ipc:///tmp/x.sock", "tcp://127.0.0.1:0", "tcp://:7100",
					   "tcp6://[::1]:65535", "tls+tcp://localhost:7101"};
	char err[512];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(endpoint_check(good[i], err, sizeof(err)) == 0, "%s: %s", good[i],
			      err);
	ck_assert_int_eq(endpoint_check("tls+tcp://127.0.0.1", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "listen URL 'tls+tcp://127.0.0.1' has no port (nng would listen on "
			      "one chosen at random, which no client knows); expected "
			      "tls+tcp://HOST:PORT, e.g. tls+tcp://127.0.0.1:7878");
	ck_assert_int_eq(endpoint_check("tcp://[::1]", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "has no port"));
	ck_assert_int_eq(endpoint_check("tcp://h:65536", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "listen URL 'tcp://h:65536': the port '65536' is not a number "
			      "from 0 to 65535");
}
END_TEST

/* Where gpud's own probe dials: a wildcard host made loopback. */
START_TEST(test_dial)
{
	static const char *const cases[][2] = {
		{"ipc:///tmp/gpud.sock", "ipc:///tmp/gpud.sock"},
		{"tcp://0.0.0.0:7100", "tcp://127.0.0.1:7100"},
		{"tcp://:7100", "tcp://127.0.0.1:7100"},
		{"tcp://*:7100", "tcp://127.0.0.1:7100"},
		{"tcp4://10.0.0.7:7100", "tcp4://10.0.0.7:7100"},
		{"tcp6://[::]:7100", "tcp6://[::1]:7100"},
		{"tls+tcp://0.0.0.0:7101", "tls+tcp://127.0.0.1:7101"},
	};
	char out[256];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		endpoint_dial_url(cases[i][0], (nng_listener)NNG_LISTENER_INITIALIZER, out,
				  sizeof(out));
		ck_assert_str_eq(out, cases[i][1]);
	}
}
END_TEST

/* One request from a fresh REQ socket dialled at dial, through l (made by
 * endpoint_listen on rep): the peer of the connection it came on. */
static void peer_of_request(nng_socket rep, const char *dial, endpoint_peer *peer)
{
	nng_socket req;
	nng_msg *m;
	ck_assert_int_eq(nng_req0_open(&req), 0);
	ck_assert_int_eq(nng_dial(req, dial, NULL, 0), 0);
	ck_assert_int_eq(nng_send(req, "hi", 2, 0), 0);
	ck_assert_int_eq(nng_recvmsg(rep, &m, 0), 0);
	endpoint_pipe_peer(nng_msg_get_pipe(m), peer);
	nng_msg_free(m);
	nng_close(req);
}

START_TEST(test_peer_ipc)
{
	char dir[] = "/tmp/gpud-endpoint-XXXXXX", url[128], err[256];
	nng_socket rep;
	nng_listener l;
	endpoint_peer peer;
	char want[64];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* its directory is made if missing */
	snprintf(url, sizeof(url), "ipc://%s/sub/gpud.sock", dir);
	ck_assert_int_eq(nng_rep0_open(&rep), 0);
	ck_assert_msg(endpoint_listen(rep, NULL, url, 1 << 20, &l, err, sizeof(err)) == 0, "%s",
		      err);
	nng_socket_set_ms(rep, NNG_OPT_RECVTIMEO, 5000);
	peer_of_request(rep, url, &peer);
	ck_assert_int_eq(peer.local, 1);
	ck_assert_int_eq(peer.uid, (int64_t)getuid());
	ck_assert_int_eq(peer.pid, (int64_t)getpid());
	snprintf(want, sizeof(want), "uid %u", (unsigned)getuid());
	ck_assert_str_eq(peer.addr, want);
	/* a connection from gpud's own process (its health probe's case) gets no
	 * user name looked up: that probe never says hello as a user (e2e
	 * tenants checks the names of other processes' connections) */
	ck_assert_str_eq(peer.user, "");
	nng_close(rep);
	snprintf(url, sizeof(url), "%s/sub", dir);
	rmdir(url);
	rmdir(dir);
}
END_TEST

START_TEST(test_peer_tcp)
{
	char err[256], dial[128], prefix[64];
	nng_socket rep;
	nng_listener l;
	endpoint_peer peer;

	ck_assert_int_eq(nng_rep0_open(&rep), 0);
	ck_assert_msg(endpoint_listen(rep, NULL, "tcp://127.0.0.1:0", 1 << 20, &l, err,
				      sizeof(err)) == 0,
		      "%s", err);
	nng_socket_set_ms(rep, NNG_OPT_RECVTIMEO, 5000);
	endpoint_dial_url("tcp://127.0.0.1:0", l, dial, sizeof(dial));
	ck_assert_msg(strcmp(dial, "tcp://127.0.0.1:0") != 0, "no bound port in %s", dial);
	peer_of_request(rep, dial, &peer);
	ck_assert_int_eq(peer.local, 0);
	ck_assert_int_eq(peer.uid, -1);
	ck_assert_int_eq(peer.pid, -1);
	ck_assert_str_eq(peer.user, "");
	snprintf(prefix, sizeof(prefix), "127.0.0.1:");
	ck_assert_msg(strncmp(peer.addr, prefix, strlen(prefix)) == 0, "peer '%s'", peer.addr);
	nng_close(rep);
}
END_TEST

/* A uid's name, none for a uid without an entry or no uid at all; an entry
 * too large for the first buffer (ERANGE) gets a larger one. */
START_TEST(test_peer_user)
{
	endpoint_peer peer = {.local = 1, .uid = 0};
	endpoint_peer_user(&peer);
	struct passwd *pw = getpwuid(0);
	ck_assert_str_eq(peer.user, pw ? pw->pw_name : "");

	/* no entry: the tenant is then uid:N (daemon/auth.h) */
	peer.uid = 2147480001;
	ck_assert_ptr_null(getpwuid((uid_t)peer.uid));
	snprintf(peer.user, sizeof(peer.user), "stale");
	endpoint_peer_user(&peer);
	ck_assert_str_eq(peer.user, "");

	peer.uid = -1;
	snprintf(peer.user, sizeof(peer.user), "stale");
	endpoint_peer_user(&peer);
	ck_assert_str_eq(peer.user, "");
}
END_TEST

Suite *endpoint_suite(void)
{
	Suite *s = suite_create("endpoint");
	TCase *tc = tcase_create("endpoint");
	tcase_add_test(tc, test_rows_by_scheme);
	tcase_add_test(tc, test_unknown_scheme);
	tcase_add_test(tc, test_row_checks);
	tcase_add_test(tc, test_dial);
	tcase_add_test(tc, test_peer_ipc);
	tcase_add_test(tc, test_peer_tcp);
	tcase_add_test(tc, test_peer_user);
	suite_add_tcase(s, tc);
	return s;
}
