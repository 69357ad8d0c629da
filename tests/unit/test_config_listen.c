/*
 * tests/unit/test_config_listen.c — unit tests of daemon/config.c's listen
 * URLs: the schemes taken and refused, tcp:// and tls+tcp:// without a port
 * (on the command line and in a file, with its line), and metrics_listen's
 * HOST:PORT checked when the config is read. Each test runs single-threaded
 * in its own process (Check's fork mode).
 */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/rsa.h>
#include <sys/stat.h>

#include "daemon/auth.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "tests/tls_fixture.h"
#include "tests/unit/test_config.h"

/* --- listen URLs ----------------------------------------------------------------------- */

START_TEST(test_listen_schemes)
{
	static const char *const good[] = {"ipc:///run/gpud/gpud.sock", "tcp://127.0.0.1:7100",
					   "tcp4://0.0.0.0:7100", "tcp6://[::]:7100",
					   "tls+tcp://0.0.0.0:7101"};
	static const char *const refused[] = {
		"http://localhost:80", "ws://h:1", "inproc://x", "ipc:/x", "tcp:/h:1", "",
		"/run/gpud.sock"};
	char err[512];
	gpud_config c;

	config_defaults(&c);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(config_add_listen(&c, good[i], err, sizeof(err)) == 0, "%s: %s",
			      good[i], err);
		ck_assert_str_eq(c.listen[i], good[i]);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(config_add_listen(&c, refused[i], err, sizeof(err)) == -1,
			      "'%s' was accepted", refused[i]);
		assert_has(err, refused[i]);
		assert_has(err, "expected ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT");
	}
	ck_assert_int_eq(c.nlisten, 5);
	config_free(&c);
}
END_TEST

/* tcp:// and tls+tcp:// need a port: nng would take none for a random one. */
/* metrics_listen is checked when the config is read: file, line and why. */
START_TEST(test_metrics_listen)
{
	static const char *const good[] = {"127.0.0.1:0", "localhost:0", "0.0.0.0:0", ""};
	static const struct {
		const char *value, *says;
	} refused[] = {
		{"9400", "expected HOST:PORT with a port from 0 to 65535"},
		{":9400", "expected HOST:PORT"},
		{"127.0.0.1:http", "expected HOST:PORT"},
		{"127.0.0.1:99999", "expected HOST:PORT with a port from 0 to 65535"},
		{"::1:9400", "an IPv6 address goes in brackets, e.g. [::1]:9400"},
		{"[zz]:9400", "'[zz]' is not an IPv6 address in brackets"},
		{"999.1.1.1:9400", "'999.1.1.1' is not an IPv4 address or a host name"},
		{"bad_host!:9400", "'bad_host!' is not an IPv4 address or a host name"},
		{"no-such-host.invalid:9400", "the host 'no-such-host.invalid' does not resolve"},
		{"192.0.2.1:9400", "gpud cannot listen on '192.0.2.1' (Cannot assign requested "
				   "address)"},
	};
	char text[256], err[512], want[512];
	gpud_config c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "[gpud]\nmetrics_listen = %s\n", good[i]);
		config_defaults(&c);
		ck_assert_msg(config_load_string(&c, text, NAME, err, sizeof(err)) == 0, "%s: %s",
			      good[i], err);
		ck_assert_str_eq(c.metrics_listen, good[i]);
		config_free(&c);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(text, sizeof(text), "[gpud]\nbackend = cpu\nmetrics_listen = %s\n",
			 refused[i].value);
		expect_load_error(text, 3, err, sizeof(err));
		snprintf(want, sizeof(want), NAME ":3: metrics_listen = '%s': %s", refused[i].value,
			 refused[i].says);
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "'%s' does not begin '%s'",
			      err, want);
	}
}
END_TEST

START_TEST(test_listen_port)
{
	static const char *const good[] = {"tcp://127.0.0.1:0", "tcp://:7100", "tcp6://[::1]:65535",
					   "tls+tcp://localhost:7101"};
	static const struct {
		const char *url, *says;
	} refused[] = {
		{"tcp://127.0.0.1", "has no port"},
		{"tls+tcp://127.0.0.1", "has no port"},
		{"tcp://127.0.0.1:", "has no port"},
		{"tcp6://[::1]", "has no port"},
		{"tcp4://", "has no port"},
		{"tcp://h:http", "the port 'http' is not a number from 0 to 65535"},
		{"tcp://h:65536", "the port '65536' is not a number from 0 to 65535"},
		{"tcp://h:123456", "the port '123456' is not a number"},
		{"tls+tcp://h:7/x", "the port '7/x' is not a number"},
	};
	char err[512];
	gpud_config c;

	config_defaults(&c);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(config_add_listen(&c, good[i], err, sizeof(err)) == 0, "%s: %s",
			      good[i], err);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(config_add_listen(&c, refused[i].url, err, sizeof(err)) == -1,
			      "'%s' was accepted", refused[i].url);
		assert_has(err, refused[i].url);
		assert_has(err, refused[i].says);
	}
	ck_assert_int_eq(c.nlisten, 4);
	config_free(&c);

	/* in a file: its line, and the form the scheme wants */
	expect_load_error("[gpud]\nlisten = ipc:///tmp/ok.sock\nlisten = tls+tcp://127.0.0.1\n", 3,
			  err, sizeof(err));
	ck_assert_str_eq(err, NAME ":3: listen URL 'tls+tcp://127.0.0.1' has no port (nng would "
				   "listen on one chosen at random, which no client knows); "
				   "expected tls+tcp://HOST:PORT, e.g. tls+tcp://127.0.0.1:7878");
}
END_TEST

START_TEST(test_listen_http_in_file)
{
	char err[512];

	expect_load_error("[gpud]\nlisten = ipc:///tmp/ok.sock\nlisten = http://localhost:8080\n",
			  3, err, sizeof(err));
	ck_assert_str_eq(err, NAME ":3: listen URL 'http://localhost:8080': expected ipc://PATH, "
				   "tcp://HOST:PORT or tls+tcp://HOST:PORT");
}
END_TEST

void config_listen_tests(TCase *tc)
{
	tcase_add_test(tc, test_listen_schemes);
	tcase_add_test(tc, test_listen_http_in_file);
	tcase_add_test(tc, test_listen_port);
	tcase_add_test(tc, test_metrics_listen);
}
