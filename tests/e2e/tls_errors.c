/*
 * tests/e2e/tls_errors.c — test case "tls_errors": a failed TLS connect says
 * why, through libgpud-client (gpud_errmsg) and gpuctl (stderr, exit status
 * != 0), and gpud logs the failed handshakes it sees with the peer's address
 * and goes on serving. The certificates are made here, in the test's
 * directory, with mbed TLS (tests/tls_fixture.h): a CA, another CA, and
 * gpud certificates the CA signed: good (localhost, 127.0.0.1), expired, not
 * yet valid, and for another name; a client certificate another CA signed.
 * Each test starts a gpud listening on tcp:// and tls+tcp:// loopback ports
 * of its own.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include "tests/e2e/e2e.h"
#include "tests/tls_fixture.h"

static char ca_path[700], other_ca_path[700], cert_path[700];
static char tcp_url[64], tls_url[64];

static void make_cert(const char *cert, const char *key, const char *cn, const char *dns, int ip,
		      int is_ca, const char *from, const char *to, const char *icert,
		      const char *ikey)
{
	char err[512];
	ck_assert_msg(test_tls_make_cert(cert, key, cn, dns, ip, is_ca, from, to, icert, ikey, err,
					 sizeof(err)) == 0,
		      "%s", err);
}

/*
 * gpud with a certificate the test CA signed for cn (SANs dns, and
 * 127.0.0.1), valid from..to, on tcp_url and tls_url. The CA's files are in
 * base_dir (the test's own directory is made by start_gpud).
 */
static void start_tls_gpud(const char *cn, const char *dns, const char *from, const char *to)
{
	static char conf[2048], key_path[700], ca_key[700], other_key[700];
	static const char *extra[] = {"--listen", tcp_url, "--listen", tls_url, NULL};
	int pid = (int)getpid();

	int p1 = e2e_free_port(), p2;
	while ((p2 = e2e_free_port()) == p1)
		;
	snprintf(tcp_url, sizeof(tcp_url), "tcp://127.0.0.1:%d", p1);
	snprintf(tls_url, sizeof(tls_url), "tls+tcp://127.0.0.1:%d", p2);
	snprintf(ca_path, sizeof(ca_path), "%s/tls-ca-%d.pem", base_dir, pid);
	snprintf(ca_key, sizeof(ca_key), "%s/tls-ca-key-%d.pem", base_dir, pid);
	snprintf(other_ca_path, sizeof(other_ca_path), "%s/tls-other-ca-%d.pem", base_dir, pid);
	snprintf(other_key, sizeof(other_key), "%s/tls-other-ca-key-%d.pem", base_dir, pid);
	snprintf(cert_path, sizeof(cert_path), "%s/tls-cert-%d.pem", base_dir, pid);
	snprintf(key_path, sizeof(key_path), "%s/tls-key-%d.pem", base_dir, pid);
	make_cert(ca_path, ca_key, "gpud-test-ca", NULL, 0, 1, "20200101000000", "21200101000000",
		  NULL, NULL);
	make_cert(other_ca_path, other_key, "other-ca", NULL, 0, 1, "20200101000000",
		  "21200101000000", NULL, NULL);
	make_cert(cert_path, key_path, cn, dns, 1, 0, from, to, ca_path, ca_key);
	snprintf(conf, sizeof(conf), "[gpud]\nsocket_mode = 0666\ntls_cert = %s\ntls_key = %s\n",
		 cert_path, key_path);
	start_gpud(conf, extra, NULL);
}

/* A connect to url that must fail with GPUD_ECONNECT and a message that
 * contains url and each of the words (NULL-terminated). */
static void connect_fails(const char *url, ...)
{
	gpud_client *c;
	gpud_status st = gpud_connect(url, &c);
	const char *msg = gpud_errmsg(c);
	va_list ap;
	printf("tls_errors: %s\n", msg);
	ck_assert_msg(st == GPUD_ECONNECT, "connect %s: %s (%s), expected ECONNECT", url,
		      gpud_strerror(st), msg);
	ck_assert_msg(strstr(msg, url) != NULL, "message does not name %s: %s", url, msg);
	va_start(ap, url);
	for (const char *w; (w = va_arg(ap, const char *)) != NULL;)
		ck_assert_msg(strstr(msg, w) != NULL, "message does not say '%s': %s", w, msg);
	va_end(ap);
	gpud_close(c);
}
#define CONNECT_FAILS(url, ...) connect_fails(url, __VA_ARGS__, (const char *)NULL)

/* The same through `gpuctl status`: exit status != 0, the words on stderr. */
static void gpuctl_fails(const char *url, const char *words)
{
	ctl_result *r = CTL_AT(url, "status");
	ck_assert_msg(r->code != 0 && strstr(r->err, "gpuctl: error: ") && strstr(r->err, url) &&
			      strstr(r->err, words),
		      "'%s' exited %d; expected != 0 and '%s' on stderr:\n%s", r->cmd, r->code,
		      words, r->err);
}

/* gpud's log gets a line with each of the words within timeout_s (a safety
 * net: the line is written before gpud closes the connection). */
static void log_says(double timeout_s, const char *w1, const char *w2)
{
	static char buf[1 << 20];
	double end = harness_now_s() + timeout_s;
	for (;;) {
		if (harness_read_text(e2e_gpud.log, buf, sizeof(buf)) > 0) {
			for (char *p = buf; (p = strstr(p, w1)) != NULL; p++) {
				char *bol = p, *eol = strchr(p, '\n');
				while (bol > buf && bol[-1] != '\n')
					bol--;
				if (eol)
					*eol = '\0';
				if (strstr(bol, w2)) {
					printf("tls_errors: gpud: %s\n", bol);
					return;
				}
				if (eol)
					*eol = '\n';
			}
		}
		ck_assert_msg(harness_now_s() < end,
			      "gpud's log has no line with '%s' and '%s':\n%s", w1, w2, buf);
		usleep(20000);
	}
}

/* A good client still gets served, over tls+tcp:// (when gpud's certificate
 * is good) and over ipc://. */
static void still_serving(int tls)
{
	uint64_t n = 4;
	double v[4] = {1, 2, 3, 4}, got[4];
	gpud_handle h;
	gpud_client *c;
	gpud_options o = {.url = tls_url, .tls_ca = ca_path, .tls_server_name = "localhost"};

	if (tls) {
		LIB_OK(c, gpud_connect_opts(&o, &c));
		LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
		LIB_OK(c, gpud_download_range(c, h, 0, got, sizeof(got)));
		ck_assert(memcmp(got, v, sizeof(v)) == 0);
		gpud_close(c);
	}
	assert_daemon_alive("failed TLS handshakes");
}

static void unset_tls_env(void)
{
	unsetenv("GPUD_TLS_CA");
	unsetenv("GPUD_TLS_SERVER_NAME");
}

/* A good certificate: no CA, the wrong CA, an IP where the names are DNS
 * names, TLS at a plain port and plain TCP at a TLS port. */
START_TEST(test_tls_causes)
{
	char want[1024];
	start_tls_gpud("localhost", "localhost", "20200101000000", "21200101000000");

	/* no CA configured */
	unset_tls_env();
	CONNECT_FAILS(tls_url, "no CA file configured: set GPUD_TLS_CA");
	gpuctl_fails(tls_url, "no CA file configured: set GPUD_TLS_CA");

	/* a CA file that is not there, not PEM, or PEM but no certificate (nng
	 * said "Entry not found" and "Cryptographic error") */
	char missing[700], junk[700], broken[700];
	path_in_dir(missing, sizeof(missing), "no-such-ca.pem");
	path_in_dir(junk, sizeof(junk), "junk-ca.pem");
	path_in_dir(broken, sizeof(broken), "broken-ca.pem");
	write_text(junk, "this is not a certificate\n");
	write_text(broken, "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n");
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	const struct {
		const char *path, *says;
	} bad_ca[] = {
		{missing, "no such file"},
		{junk, "not a PEM certificate (no '-----BEGIN CERTIFICATE-----' line)"},
		{broken, "not a PEM certificate ("},
	};
	for (size_t i = 0; i < sizeof(bad_ca) / sizeof(bad_ca[0]); i++) {
		setenv("GPUD_TLS_CA", bad_ca[i].path, 1);
		snprintf(want, sizeof(want), "%s: CA file %s: %s", tls_url, bad_ca[i].path,
			 bad_ca[i].says);
		CONNECT_FAILS(tls_url, want);
		gpuctl_fails(tls_url, want);
	}

	/* a CA file that did not sign gpud's certificate */
	setenv("GPUD_TLS_CA", other_ca_path, 1);
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	snprintf(want, sizeof(want),
		 "the server's certificate is not trusted by the CA file %s (issuer "
		 "CN=gpud-test-ca)",
		 other_ca_path);
	CONNECT_FAILS(tls_url, want);
	gpuctl_fails(tls_url, want);
	/* the client's alert, in gpud's log with the client's address */
	log_says(E2E_SAFETY_S, "TLS handshake with 127.0.0.1:", "alert 48 (unknown_ca)");

	/* the right CA, but the URL's host is an IP address: mbed TLS 2 matches
	 * DNS names only */
	setenv("GPUD_TLS_CA", ca_path, 1);
	unsetenv("GPUD_TLS_SERVER_NAME");
	CONNECT_FAILS(tls_url,
		      "the server's certificate is for 'localhost' (SANs: localhost, "
		      "127.0.0.1), not '127.0.0.1'",
		      "GPUD_TLS_SERVER_NAME");

	/* a tls+tcp:// client at gpud's tcp:// port */
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	char tls_at_tcp[80];
	snprintf(tls_at_tcp, sizeof(tls_at_tcp), "tls+%s", tcp_url);
	snprintf(want, sizeof(want), "the server speaks plain TCP, not TLS: use %s", tcp_url);
	CONNECT_FAILS(tls_at_tcp, want);
	gpuctl_fails(tls_at_tcp, want);

	/* a tcp:// client at gpud's tls+tcp:// port; gpud logs it */
	char tcp_at_tls[80];
	snprintf(tcp_at_tls, sizeof(tcp_at_tls), "%s", tls_url + strlen("tls+"));
	snprintf(want, sizeof(want), "the server speaks TLS, not plain TCP: use %s", tls_url);
	CONNECT_FAILS(tcp_at_tls, want);
	gpuctl_fails(tcp_at_tls, want);
	log_says(E2E_SAFETY_S, "TLS handshake with 127.0.0.1:",
		 "a plain tcp:// client at a TLS port (it sent nng's tcp:// header)");

	still_serving(1);
	unset_tls_env();
}
END_TEST

/* Certificates the CA signed that are expired, not yet valid, or for
 * another name: each says so, with its dates or its names; the client's
 * alert is in gpud's log. */
START_TEST(test_tls_expired)
{
	const char *want = "the server's certificate expired on 2021-01-01 00:00 UTC";
	start_tls_gpud("localhost", "localhost", "20200101000000", "20210101000000");
	setenv("GPUD_TLS_CA", ca_path, 1);
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	CONNECT_FAILS(tls_url, want);
	gpuctl_fails(tls_url, want);
	log_says(E2E_SAFETY_S, "TLS handshake with 127.0.0.1:", "alert 45 (certificate_expired)");
	still_serving(0);
	unset_tls_env();
}
END_TEST

START_TEST(test_tls_not_yet_valid)
{
	const char *want = "the server's certificate is not valid until 2100-01-01 00:00 UTC";
	start_tls_gpud("localhost", "localhost", "21000101000000", "21200101000000");
	setenv("GPUD_TLS_CA", ca_path, 1);
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	CONNECT_FAILS(tls_url, want);
	gpuctl_fails(tls_url, want);
	log_says(E2E_SAFETY_S, "TLS handshake with 127.0.0.1:", "(certificate_");
	still_serving(0);
	unset_tls_env();
}
END_TEST

START_TEST(test_tls_wrong_name)
{
	const char *want = "the server's certificate is for 'gpud.example' (SANs: gpud.example, "
			   "gpu2.example, 127.0.0.1), not 'localhost'";
	start_tls_gpud("gpud.example", "gpud.example,gpu2.example", "20200101000000",
		       "21200101000000");
	setenv("GPUD_TLS_CA", ca_path, 1);
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	CONNECT_FAILS(tls_url, want);
	gpuctl_fails(tls_url, want);
	log_says(E2E_SAFETY_S, "TLS handshake with 127.0.0.1:", "alert 42 (bad_certificate)");
	/* and with the name it has, it connects */
	setenv("GPUD_TLS_SERVER_NAME", "gpu2.example", 1);
	gpud_client *c;
	gpud_status st = gpud_connect(tls_url, &c);
	ck_assert_msg(st == GPUD_OK, "connect as gpu2.example: %s", gpud_errmsg(c));
	gpud_close(c);
	still_serving(0);
	unset_tls_env();
}
END_TEST

/* A handshake of mbed TLS's own, presenting the certificate and key in
 * cert / key, not checking gpud's; 0 when it completed. */
static int handshake_with_cert(const char *url, const char *cert, const char *key)
{
	const char *port = strrchr(url, ':') + 1;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				.sin_port = htons((uint16_t)atoi(port))};
	mbedtls_ssl_config conf;
	mbedtls_ssl_context ssl;
	mbedtls_x509_crt crt;
	mbedtls_pk_context pk;
	int fd = socket(AF_INET, SOCK_STREAM, 0), rv = -1;

	mbedtls_ssl_config_init(&conf);
	mbedtls_ssl_init(&ssl);
	mbedtls_x509_crt_init(&crt);
	mbedtls_pk_init(&pk);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    mbedtls_x509_crt_parse_file(&crt, cert) == 0 &&
	    mbedtls_pk_parse_keyfile(&pk, key, NULL) == 0 &&
	    mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
					MBEDTLS_SSL_PRESET_DEFAULT) == 0) {
		mbedtls_ssl_conf_rng(&conf, test_tls_random, NULL);
		mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_NONE);
		if (mbedtls_ssl_conf_own_cert(&conf, &crt, &pk) == 0 &&
		    mbedtls_ssl_setup(&ssl, &conf) == 0) {
			mbedtls_ssl_set_bio(&ssl, &fd, mbedtls_net_send, mbedtls_net_recv, NULL);
			rv = mbedtls_ssl_handshake(&ssl);
			if (rv == 0)
				mbedtls_ssl_close_notify(&ssl);
		}
	}
	mbedtls_ssl_free(&ssl);
	mbedtls_ssl_config_free(&conf);
	mbedtls_x509_crt_free(&crt);
	mbedtls_pk_free(&pk);
	if (fd >= 0)
		close(fd);
	return rv;
}

/* With tls_ca, gpud asks for client certificates (optional): one its CA did
 * not sign is logged with the client's address, and served (tokens decide
 * tenants). */
START_TEST(test_tls_client_certificate)
{
	static char conf[4096], key_path[700], ca_key[700], ccert[700], ckey[700], okey[700];
	static const char *extra[] = {"--listen", tls_url, NULL};
	int pid = (int)getpid();

	snprintf(tls_url, sizeof(tls_url), "tls+tcp://127.0.0.1:%d", e2e_free_port());
	snprintf(ca_path, sizeof(ca_path), "%s/tls-ca-%d.pem", base_dir, pid);
	snprintf(ca_key, sizeof(ca_key), "%s/tls-ca-key-%d.pem", base_dir, pid);
	snprintf(other_ca_path, sizeof(other_ca_path), "%s/tls-other-ca-%d.pem", base_dir, pid);
	snprintf(okey, sizeof(okey), "%s/tls-other-ca-key-%d.pem", base_dir, pid);
	snprintf(cert_path, sizeof(cert_path), "%s/tls-cert-%d.pem", base_dir, pid);
	snprintf(key_path, sizeof(key_path), "%s/tls-key-%d.pem", base_dir, pid);
	snprintf(ccert, sizeof(ccert), "%s/tls-client-%d.pem", base_dir, pid);
	snprintf(ckey, sizeof(ckey), "%s/tls-client-key-%d.pem", base_dir, pid);
	make_cert(ca_path, ca_key, "gpud-test-ca", NULL, 0, 1, "20200101000000", "21200101000000",
		  NULL, NULL);
	make_cert(other_ca_path, okey, "other-ca", NULL, 0, 1, "20200101000000", "21200101000000",
		  NULL, NULL);
	make_cert(cert_path, key_path, "localhost", "localhost", 1, 0, "20200101000000",
		  "21200101000000", ca_path, ca_key);
	make_cert(ccert, ckey, "some-client", NULL, 0, 0, "20200101000000", "21200101000000",
		  other_ca_path, okey);
	snprintf(conf, sizeof(conf),
		 "[gpud]\nsocket_mode = 0666\ntls_cert = %s\ntls_key = %s\ntls_ca = %s\n",
		 cert_path, key_path, ca_path);
	start_gpud(conf, extra, NULL);
	ck_assert_int_eq(handshake_with_cert(tls_url, ccert, ckey), 0);
	log_says(E2E_SAFETY_S, "client 127.0.0.1:",
		 "its client certificate does not verify against tls_ca (The certificate is "
		 "not correctly signed by the trusted CA)");
	still_serving(1);
}
END_TEST

TCase *e2e_tls_errors(void)
{
	TCase *tc = tcase_create("tls_errors");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tls_causes);
	tcase_add_test(tc, test_tls_expired);
	tcase_add_test(tc, test_tls_not_yet_valid);
	tcase_add_test(tc, test_tls_wrong_name);
	tcase_add_test(tc, test_tls_client_certificate);
	return tc;
}
