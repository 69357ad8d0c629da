/*
 * tests/unit/test_config_files.c — the files the config names that gpud
 * refuses at start (daemon/auth.c): a tokens_file others may read, with a
 * malformed line or a token of two tenants, and a tls_key that is not
 * tls_cert's. Each test runs single-threaded in its own process (Check's fork
 * mode).
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

/* --- files the config names (daemon/auth.c) ------------------------------------------ */

/* A tokens_file of text with mode; its path in path. */
static void tokens_file(char *path, size_t len, const char *text, mode_t mode)
{
	write_temp(path, len, text);
	ck_assert_int_eq(chmod(path, mode), 0);
}

/* auth_load of a tokens_file: -1 with err, or 0 with a->ntokens. */
static int load_tokens(const char *path, auth *a, char *err, size_t errlen)
{
	gpud_config c;
	config_defaults(&c);
	ck_assert_uint_lt(strlen(path), sizeof(c.tokens_file));
	memcpy(c.tokens_file, path, strlen(path) + 1);
	err[0] = '\0';
	return auth_load(a, &c, err, errlen);
}

#define TOK_A "alice-0123456789abcdef"
#define TOK_B "bob-fedcba9876543210xx"

START_TEST(test_tokens_file_refused)
{
	char path[256], err[1024], want[1024];
	auth a;

	/* good: two tenants, a comment, a line given twice (nothing new) */
	tokens_file(path, sizeof(path),
		    "# tenant token\nalice " TOK_A "\nbob " TOK_B "\nalice " TOK_A "\n", 0600);
	ck_assert_msg(load_tokens(path, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.ntokens, 2);
	ck_assert_int_eq(a.tokens[1].line, 3);
	auth_fini(&a);
	ck_assert_int_eq(chmod(path, 0400), 0); /* read-only for its owner: fine too */
	ck_assert_msg(load_tokens(path, &a, err, sizeof(err)) == 0, "%s", err);
	auth_fini(&a);

	/* others or the group may read it: refused, with the mode and the fix */
	static const mode_t loose[] = {0644, 0640, 0604, 0660, 0601};
	for (size_t i = 0; i < sizeof(loose) / sizeof(loose[0]); i++) {
		ck_assert_int_eq(chmod(path, loose[i]), 0);
		ck_assert_int_eq(load_tokens(path, &a, err, sizeof(err)), -1);
		snprintf(want, sizeof(want),
			 "tokens_file %s has mode %04o: group or others may read it, and whoever "
			 "reads it can connect as every tenant in it; chmod 600 %s",
			 path, (unsigned)loose[i], path);
		ck_assert_str_eq(err, want);
		ck_assert_int_eq(a.ntokens, 0);
	}
	unlink(path);

	/* one token, two tenants: the line, both tenants, and never the token */
	tokens_file(path, sizeof(path),
		    "alice " TOK_A "\n\n# bob's\nbob " TOK_B "\ncarol " TOK_A "\n", 0600);
	ck_assert_int_eq(load_tokens(path, &a, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "tokens_file %s:5: tenant 'carol' has the token that line 1 gives tenant "
		 "'alice'; a token must name one tenant (give each its own)",
		 path);
	ck_assert_str_eq(err, want);
	ck_assert_ptr_null(strstr(err, TOK_A));
	ck_assert_int_eq(a.ntokens, 0);
	unlink(path);

	/* a malformed line: its number and the rule */
	tokens_file(path, sizeof(path), "alice " TOK_A "\nbob short\n", 0600);
	ck_assert_int_eq(load_tokens(path, &a, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "tokens_file %s:2: the token has 5 characters", path);
	assert_has(err, want);
	unlink(path);

	/* a line too long to read whole (its tail, a token line, is not read as one) */
	char text[1200];
	memset(text, '#', 600);
	snprintf(text + 600, sizeof(text) - 600, " eve " TOK_B "\nalice " TOK_A "\n");
	tokens_file(path, sizeof(path), text, 0600);
	ck_assert_int_eq(load_tokens(path, &a, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "tokens_file %s:1: the line is longer than 510 bytes, the most a line may have",
		 path);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(a.ntokens, 0);
	unlink(path);

	/* none at all */
	ck_assert_int_eq(load_tokens("/nonexistent-gpud-dir/tokens", &a, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
			 "tokens_file /nonexistent-gpud-dir/tokens: No such file or directory");
}
END_TEST

/* An RSA key of bits in PEM at path (a key of another kind than the fixture's EC one). */
static void write_rsa_key(const char *path, unsigned bits)
{
	mbedtls_pk_context pk;
	unsigned char pem[8192];
	mbedtls_pk_init(&pk);
	ck_assert_int_eq(mbedtls_pk_setup(&pk, mbedtls_pk_info_from_type(MBEDTLS_PK_RSA)), 0);
	ck_assert_int_eq(mbedtls_rsa_gen_key(mbedtls_pk_rsa(pk), test_tls_random, NULL, bits,
					     65537),
			 0);
	ck_assert_int_eq(mbedtls_pk_write_key_pem(&pk, pem, sizeof(pem)), 0);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs((const char *)pem, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	mbedtls_pk_free(&pk);
}

START_TEST(test_tls_key_must_match_cert)
{
	char cert[256], other[256], key[256], rsa[256], junk[256];
	char err[1536], want[1536];
	gpud_config c;

	write_temp(cert, sizeof(cert), test_tls_cert);
	write_temp(other, sizeof(other), other_tls_cert);
	write_temp(key, sizeof(key), test_tls_key);
	write_temp(junk, sizeof(junk), "not a key\n");
	write_temp(rsa, sizeof(rsa), "");
	write_rsa_key(rsa, 1024);
	config_defaults(&c);

	snprintf(c.tls_cert, sizeof(c.tls_cert), "%s", cert);
	snprintf(c.tls_key, sizeof(c.tls_key), "%s", key);
	ck_assert_msg(auth_tls_check(&c, err, sizeof(err)) == 0, "the fixture's pair: %s", err);

	/* another certificate's key pair, of the same kind */
	snprintf(c.tls_cert, sizeof(c.tls_cert), "%s", other);
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "tls_key %s does not match tls_cert %s (its first certificate, ", key, other);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "'%s' does not begin '%s'", err, want);
	assert_has(err, "): both are an EC key of 256 bits, but of different key pairs; every TLS "
			"handshake would fail");

	/* a key of another kind */
	snprintf(c.tls_cert, sizeof(c.tls_cert), "%s", cert);
	snprintf(c.tls_key, sizeof(c.tls_key), "%s", rsa);
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(
		want, sizeof(want),
		"tls_key %s does not match tls_cert %s (its first certificate, CN=localhost): the "
		"key is an RSA key of 1024 bits, the certificate's is an EC key of 256 bits; every "
		"TLS handshake would fail",
		rsa, cert);
	ck_assert_str_eq(err, want);

	/* not a key, not a certificate, not there */
	snprintf(c.tls_key, sizeof(c.tls_key), "%s", junk);
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "tls_key: key file %s: not a PEM private key without a password (as nng reads "
		 "it): ",
		 junk);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "'%s' does not begin '%s'", err, want);
	char gone[128];
	snprintf(gone, sizeof(gone), "%.100s.gone", junk);
	snprintf(c.tls_key, sizeof(c.tls_key), "%s", gone);
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "tls_key: key file %s: no such file", gone);
	ck_assert_str_eq(err, want);
	snprintf(c.tls_key, sizeof(c.tls_key), "%s", key);

	/* tls_ca: checked with the pair; not PEM, not there, a directory */
	snprintf(c.tls_ca, sizeof(c.tls_ca), "%s", other);
	ck_assert_msg(auth_tls_check(&c, err, sizeof(err)) == 0, "a CA file: %s", err);
	snprintf(c.tls_ca, sizeof(c.tls_ca), "%s", junk);
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "tls_ca: CA file %s: not a PEM certificate (no '-----BEGIN CERTIFICATE-----' "
		 "line)",
		 junk);
	ck_assert_str_eq(err, want);
	snprintf(c.tls_ca, sizeof(c.tls_ca), "%s", rsa); /* PEM, but a key */
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "tls_ca: CA file %s: not a PEM certificate (", rsa);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "'%s' does not begin '%s'", err, want);
	snprintf(c.tls_ca, sizeof(c.tls_ca), "%s", gone);
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "tls_ca: CA file %s: no such file", gone);
	ck_assert_str_eq(err, want);
	snprintf(c.tls_ca, sizeof(c.tls_ca), "/tmp");
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "tls_ca: CA file /tmp: a directory, not a file");
	c.tls_ca[0] = '\0';

	snprintf(c.tls_cert, sizeof(c.tls_cert), "%s", junk);
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "tls_cert: certificate file %s: not a PEM certificate chain (no '-----BEGIN "
		 "CERTIFICATE-----' line)",
		 junk);
	ck_assert_str_eq(err, want);
	snprintf(c.tls_cert, sizeof(c.tls_cert), "%s", gone);
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "tls_cert: certificate file %s: no such file", gone);
	ck_assert_str_eq(err, want);
	c.tls_key[0] = '\0';
	ck_assert_int_eq(auth_tls_check(&c, err, sizeof(err)), -1);
	assert_has(err, "tls+tcp:// listeners need tls_cert and tls_key");
	unlink(cert);
	unlink(other);
	unlink(key);
	unlink(rsa);
	unlink(junk);
}
END_TEST

void config_files_tests(TCase *tc)
{
	tcase_add_test(tc, test_tokens_file_refused);
	tcase_add_test(tc, test_tls_key_must_match_cert);
}
