/*
 * tests/tls_fixture.h — key material for tls+tcp:// in tests and benchmarks
 * (tests/e2e/tenants.c, bench/transfer.c): never used outside them. Fixed
 * PEM texts, and test_tls_make_cert, which makes a key and a certificate
 * with mbed TLS's x509 write API (tests/e2e/tls_errors.c: a CA, and
 * certificates it signed that are expired, not yet valid, for another name).
 * No state; call it from one thread at a time per output file.
 */
#ifndef GPUD_TESTS_TLS_FIXTURE_H
#define GPUD_TESTS_TLS_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <mbedtls/ecp.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <mbedtls/x509_csr.h>

/* A self-signed certificate (CN=localhost, IP 127.0.0.1, EC P-256, valid to
 * 2126) for the tls+tcp:// tests, and another that did not sign it. */
static const char test_tls_cert[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBmzCCAUGgAwIBAgIUQhUT6joIZ6dzgyinZmSomb6UF6cwCgYIKoZIzj0EAwIw\n"
	"FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMTA3MjE1OVoYDzIxMjYxMDI4\n"
	"MDcyMTU5WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
	"PQMBBwNCAAR/j/lQzRcfoJFasTISDyVdwZZVuhIWvs8XIHYjSFt+B6YeQurgw8Y/\n"
	"vpN7tF2pYPfGiT/Hl5QXKuf3Teex6VtNo28wbTAdBgNVHQ4EFgQU5KhkAZKLCxkQ\n"
	"q/OTOK9ShP1SXT0wHwYDVR0jBBgwFoAU5KhkAZKLCxkQq/OTOK9ShP1SXT0wDwYD\n"
	"VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\n"
	"zj0EAwIDSAAwRQIgQjpjO8JHfC9AguRJ3ADw4UfhZpMBQDc8hEs3vIxdXIACIQCn\n"
	"ViXNkSNa+JGFtY6+1pUvIrPjguoywDpnRegSApE07w==\n"
	"-----END CERTIFICATE-----\n";
static const char test_tls_key[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtWLULh1ok4h1Eas+\n"
	"fVFGjWUJ0udkGgMd/8fTM4HMoeyhRANCAAR/j/lQzRcfoJFasTISDyVdwZZVuhIW\n"
	"vs8XIHYjSFt+B6YeQurgw8Y/vpN7tF2pYPfGiT/Hl5QXKuf3Teex6VtN\n"
	"-----END PRIVATE KEY-----\n";
static const char other_tls_cert[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBmzCCAUGgAwIBAgIUa6Zpxjbm+KN3h2BnoFSTNstPtBQwCgYIKoZIzj0EAwIw\n"
	"FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMTA3MjIyM1oYDzIxMjYxMDI4\n"
	"MDcyMjIzWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
	"PQMBBwNCAASD7m6mCuUGi5OxqQ2Q+8I06xjaWfGGI6qZvI/9ZtDmFQdDZk3SVLCH\n"
	"22bRyM1S729DszO92d1Gm12dcwJs96xko28wbTAdBgNVHQ4EFgQURCD3ndQpkXsb\n"
	"I/pDnz3wIH0kRfswHwYDVR0jBBgwFoAURCD3ndQpkXsbI/pDnz3wIH0kRfswDwYD\n"
	"VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\n"
	"zj0EAwIDSAAwRQIgZ3C8A3Wwu0lE++4yTvflcwMMKhbmZUt8xrpZ90jTzKACIQDo\n"
	"okCpW4r9QcXO6TjQe72OFiPi621dcIOnomghAAlHVg==\n"
	"-----END CERTIFICATE-----\n";

static inline int test_tls_random(void *arg, unsigned char *b, size_t n)
{
	(void)arg;
	while (n > 0) {
		ssize_t k = getrandom(b, n, 0);
		if (k < 0 && errno != EINTR)
			return -1;
		if (k > 0) {
			b += k;
			n -= (size_t)k;
		}
	}
	return 0;
}

static inline int test_tls_write(const char *path, const unsigned char *pem, char *err,
				 size_t errlen)
{
	FILE *f = fopen(path, "w");
	if (f == NULL || fputs((const char *)pem, f) < 0 || fclose(f) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * An EC P-256 key (PEM, to key_path) and a certificate for it (PEM, to
 * cert_path): subject CN=cn; subject alternative names the DNS names of dns
 * (comma-separated, or NULL) and, with ip, 127.0.0.1; valid from not_before
 * to not_after ("YYYYMMDDhhmmss", UTC); a CA (basicConstraints) if is_ca;
 * signed by the certificate and key in issuer_cert / issuer_key, or
 * self-signed when they are NULL. 0, or -1 with err.
 */
static inline int test_tls_make_cert(const char *cert_path, const char *key_path, const char *cn,
				     const char *dns, int ip, int is_ca, const char *not_before,
				     const char *not_after, const char *issuer_cert,
				     const char *issuer_key, char *err, size_t errlen)
{
	mbedtls_pk_context key, ikey;
	mbedtls_x509_crt icrt;
	mbedtls_x509write_cert w;
	mbedtls_mpi serial;
	unsigned char pem[4096], san[512], rnd[16];
	char subject[300], issuer[300];
	size_t n = 2;
	int rv = -1, e;

	mbedtls_pk_init(&key);
	mbedtls_pk_init(&ikey);
	mbedtls_x509_crt_init(&icrt);
	mbedtls_x509write_crt_init(&w);
	mbedtls_mpi_init(&serial);
	snprintf(subject, sizeof(subject), "CN=%s", cn);
	snprintf(issuer, sizeof(issuer), "%s", subject);
	if ((e = mbedtls_pk_setup(&key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY))) != 0 ||
	    (e = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key), test_tls_random,
				     NULL)) != 0 ||
	    (e = mbedtls_pk_write_key_pem(&key, pem, sizeof(pem))) != 0) {
		snprintf(err, errlen, "key for %s: mbedtls -0x%04x", cn, (unsigned)-e);
		goto out;
	}
	if (test_tls_write(key_path, pem, err, errlen) != 0)
		goto out;
	if (issuer_cert) {
		if ((e = mbedtls_x509_crt_parse_file(&icrt, issuer_cert)) != 0 ||
		    (e = mbedtls_pk_parse_keyfile(&ikey, issuer_key, NULL)) != 0) {
			snprintf(err, errlen, "issuer %s / %s: mbedtls -0x%04x", issuer_cert,
				 issuer_key, (unsigned)-e);
			goto out;
		}
		mbedtls_x509_dn_gets(issuer, sizeof(issuer), &icrt.subject);
	}
	/* subjectAltName: SEQUENCE { [2] dNSName ..., [7] iPAddress } */
	for (const char *d = dns; d && *d;) {
		size_t k = strcspn(d, ",");
		if (n + 2 + k > 120)
			break;
		san[n++] = 0x82;
		san[n++] = (unsigned char)k;
		memcpy(san + n, d, k);
		n += k;
		d += k + (d[k] == ',');
	}
	if (ip) {
		static const unsigned char lo[] = {0x87, 4, 127, 0, 0, 1};
		memcpy(san + n, lo, sizeof(lo));
		n += sizeof(lo);
	}
	san[0] = 0x30;
	san[1] = (unsigned char)(n - 2);
	test_tls_random(NULL, rnd, sizeof(rnd));
	rnd[0] &= 0x7f;
	mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&w, &key);
	mbedtls_x509write_crt_set_issuer_key(&w, issuer_cert ? &ikey : &key);
	if ((e = mbedtls_mpi_read_binary(&serial, rnd, sizeof(rnd))) != 0 ||
	    (e = mbedtls_x509write_crt_set_serial(&w, &serial)) != 0 ||
	    (e = mbedtls_x509write_crt_set_subject_name(&w, subject)) != 0 ||
	    (e = mbedtls_x509write_crt_set_issuer_name(&w, issuer)) != 0 ||
	    (e = mbedtls_x509write_crt_set_validity(&w, not_before, not_after)) != 0 ||
	    (e = mbedtls_x509write_crt_set_basic_constraints(&w, is_ca, -1)) != 0 ||
	    (n > 2 && (e = mbedtls_x509write_crt_set_extension(
			       &w, MBEDTLS_OID_SUBJECT_ALT_NAME,
			       MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0, san, n)) != 0) ||
	    (e = mbedtls_x509write_crt_pem(&w, pem, sizeof(pem), test_tls_random, NULL)) != 0) {
		snprintf(err, errlen, "certificate for %s: mbedtls -0x%04x", cn, (unsigned)-e);
		goto out;
	}
	rv = test_tls_write(cert_path, pem, err, errlen);
out:
	mbedtls_pk_free(&key);
	mbedtls_pk_free(&ikey);
	mbedtls_x509_crt_free(&icrt);
	mbedtls_x509write_crt_free(&w);
	mbedtls_mpi_free(&serial);
	return rv;
}

#endif
