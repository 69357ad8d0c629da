/*
 * client/endpoint/tls.c — tls+tcp://HOST:PORT (and tls+tcp4://,
 * tls+tcp6://): TCP with TLS. Before the dial, the dialer gets its TLS
 * configuration: the server's certificate is checked against the CA file
 * (gpud_options.tls_ca, else $GPUD_TLS_CA) and the URL's host name
 * (tls_server_name, $GPUD_TLS_SERVER_NAME override it). A dial that failed
 * is explained by a second connection (tls_diag.c), else by the two usual
 * causes. The row is constant; its functions run on the dialing thread.
 *
 * mbed TLS's PSA crypto is started here, by a client's first TLS setup, not
 * when nng starts. nng's mbed TLS engine calls psa_crypto_init() from nng's
 * own start, for mbed TLS 3's TLS 1.3; Debian 12's mbed TLS 2.28 is built
 * without MBEDTLS_USE_PSA_CRYPTO, so its TLS never uses PSA, and that call
 * only seeds PSA's entropy with HAVEGE: 1.18 M of the 1.70 M instructions of
 * a whole `gpuctl status` over ipc:// (callgrind), a quarter of a
 * millisecond and more of every fresh client that dials no TLS at all. The
 * client libraries link a copy of the client's nng whose call goes to
 * client_psa_deferred instead (the Makefile's NNG_CLIENT_LAZY_A); with an
 * mbed TLS whose TLS does use PSA it starts PSA at once, as nng does.
 * State: psa_mu (any dialing thread) around psa_crypto_init, which mbed
 * TLS 2.28 does not make thread-safe; PSA's own state is mbed TLS's.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mbedtls/version.h>
#include <nng/supplemental/tls/tls.h>
#include <psa/crypto.h>

#include "client/endpoint/endpoint.h"
#include "client/internal.h"

/* The name the server's certificate must have: tls_server_name
 * ($GPUD_TLS_SERVER_NAME), else the host of tls+tcp://HOST:PORT. */
static const char *tls_name(const gpud_client *c, const char *url, char *host, size_t len)
{
	if (c->tls_server_name)
		return c->tls_server_name;
	const char *h = strstr(url, "://") + 3; /* after the scheme, whichever of the row's */
	const char *colon = strrchr(h, ':');
	size_t n = colon ? (size_t)(colon - h) : strlen(h);
	snprintf(host, len, "%.*s", (int)(n < len ? n : len - 1), h);
	return host;
}

static pthread_mutex_t psa_mu = PTHREAD_MUTEX_INITIALIZER;

static psa_status_t psa_start(void)
{
	pthread_mutex_lock(&psa_mu);
	psa_status_t st = psa_crypto_init(); /* at once where PSA has started */
	pthread_mutex_unlock(&psa_mu);
	return st;
}

/* nng's start calls this in place of psa_crypto_init (above). */
int client_psa_deferred(void);
int client_psa_deferred(void)
{
#if defined(MBEDTLS_USE_PSA_CRYPTO) || MBEDTLS_VERSION_MAJOR >= 3
	return (int)psa_start();
#else
	return 0;
#endif
}

/*
 * Dialer d keeps the configuration, so redials after a drop use the same.
 * Returns 0, an nng error, or -1 with the message set.
 */
static int tls_setup(gpud_client *c, nng_dialer d, const char *url)
{
	const char *ca = c->tls_ca, *name;
	char host[256] = "";
	nng_tls_config *tc = NULL;
	int rv;

	if (ca == NULL) {
		client_seterr(c, GPUD_ECONNECT,
			      "%s: no CA file configured: set GPUD_TLS_CA (or gpud_options.tls_ca) "
			      "to the PEM file of the CA that signed gpud's certificate",
			      url);
		return -1;
	}
	char why[256];
	if (client_tls_ca_check(ca, why, sizeof(why)) != 0) {
		client_seterr(
			c, GPUD_ECONNECT,
			"%s: CA file %s: %s; set GPUD_TLS_CA (or gpud_options.tls_ca) to the PEM "
			"file of the CA that signed gpud's certificate",
			url, ca, why);
		return -1;
	}
	psa_status_t ps = psa_start();
	if (ps != PSA_SUCCESS) {
		client_seterr(c, GPUD_ECONNECT, "%s: mbed TLS's PSA crypto did not start (%d)", url,
			      (int)ps);
		return -1;
	}
	name = tls_name(c, url, host, sizeof(host));
	if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_CLIENT)) == 0 &&
	    (rv = nng_tls_config_auth_mode(tc, NNG_TLS_AUTH_MODE_REQUIRED)) == 0 &&
	    (rv = nng_tls_config_server_name(tc, name)) == 0 &&
	    (rv = nng_tls_config_ca_file(tc, ca)) != 0) {
		nng_tls_config_free(tc);
		client_seterr(c, GPUD_ECONNECT, "%s: TLS CA file %s: %s", url, ca,
			      nng_strerror(rv));
		return -1;
	}
	if (rv == 0)
		rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tc);
	if (tc)
		nng_tls_config_free(tc);
	return rv;
}

/*
 * The cause found by client_tls_diagnose, else a message that names the CA
 * file and the two usual causes: nng 1.5.2 returns only NNG_ECRYPTO or
 * NNG_EPEERAUTH, never mbed TLS's reasons.
 */
static gpud_status tls_explain(gpud_client *c, const char *url, int rv)
{
	char why[1500], host[256] = "";
	if (!client_tls_handshake_error(rv))
		return GPUD_OK;
	const char *name = tls_name(c, url, host, sizeof(host));
	if (client_tls_diagnose(url, 1, c->tls_ca, name, c->connect_timeout_ms, why, sizeof(why)))
		return client_seterr(c, GPUD_ECONNECT, "%s: %s", url, why);
	return client_seterr(
		c, GPUD_ECONNECT,
		"%s: the TLS handshake failed (%s); the usual causes: the CA file %s "
		"(GPUD_TLS_CA) did not sign gpud's certificate, or that certificate is not "
		"for the name '%s' (GPUD_TLS_SERVER_NAME)",
		url, nng_strerror(rv), c->tls_ca, name);
}

static const char *const also[] = {"tls+tcp4://", "tls+tcp6://", NULL};

const client_endpoint client_endpoint_tls = {
	.kind = "tls",
	.scheme = "tls+tcp://",
	.also = also,
	.form = "tls+tcp://HOST:PORT",
	.local = 0,
	.tls = 1,
	.setup = tls_setup,
	.explain = tls_explain,
	.wedged = "the connection or nng's handshake did not complete (gpud is wedged, the host "
		  "drops the connection, or what listens there is not gpud)",
};
