/*
 * tests/e2e/tenants_refused.c — in test case "tenants": configs gpud refuses
 * at start, each on a gpud of its own: a tokens_file it cannot use (a short
 * token, one token for two tenants, a mode others may read), a tls_key that
 * is not tls_cert's, a listen URL without a port (in the file and on the
 * command line). Each exits 2 with its message and binds nothing. Runs in the
 * test's process (Check's fork mode), on its thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"
#include "tests/tls_fixture.h"

/* The placeholders of expect_refused's texts and the paths they stand for. */
typedef struct refused_paths {
	const char *name[5];
	char path[5][400];
} refused_paths;

/* fmt with each placeholder replaced by its path, into out. */
static void fill_paths(char *out, size_t cap, const char *fmt, const refused_paths *rp)
{
	size_t n = 0;
	while (*fmt && n + 1 < cap) {
		int k;
		for (k = 0; k < 5 && strncmp(fmt, rp->name[k], strlen(rp->name[k])) != 0; k++)
			;
		if (k < 5) {
			int w = snprintf(out + n, cap - n, "%s", rp->path[k]);
			n = w > 0 && n + (size_t)w < cap ? n + (size_t)w : cap - 1;
			fmt += strlen(rp->name[k]);
		} else {
			out[n++] = *fmt++;
		}
	}
	out[n] = '\0';
}

/*
 * gpud started on a config it refuses: the config file's text (FILE for
 * its own path, TOK for the tokens file's, CERT, KEY, OTHER for the TLS
 * files) and --listen URL listen; the tokens file holds tokens (mode
 * tmode). Expects exit status 2, every one of want (NULL-ended,
 * placeholders replaced too) in its stderr, which is left in log, and no
 * socket file behind: nothing was bound.
 */
static void expect_refused(const char *conf_fmt, const char *tokens, mode_t tmode,
			   const char *listen, const char *const *want, char *log, size_t cap)
{
	refused_paths rp = {.name = {"FILE", "TOK", "CERT", "KEY", "OTHER"}};
	char dir[300], sock[400], errf[400], text[2400], line[4000], w[1200];
	snprintf(dir, sizeof(dir), "%s/refused-XXXXXX", base_dir);
	ck_assert(mkdtemp(dir) != NULL);
	static const char *const files[] = {"gpud.conf", "tokens", "cert.pem", "key.pem",
					    "other.pem"};
	for (int k = 0; k < 5; k++)
		snprintf(rp.path[k], sizeof(rp.path[k]), "%s/%s", dir, files[k]);
	snprintf(sock, sizeof(sock), "%s/gpud.sock", dir);
	snprintf(errf, sizeof(errf), "%s/stderr", dir);
	write_text(rp.path[1], tokens);
	chmod(rp.path[1], tmode);
	write_text(rp.path[2], test_tls_cert);
	write_text(rp.path[3], test_tls_key);
	chmod(rp.path[3], 0600);
	write_text(rp.path[4], other_tls_cert);
	fill_paths(text, sizeof(text), conf_fmt, &rp);
	write_text(rp.path[0], text);
	snprintf(line, sizeof(line),
		 "'%s' --backend cpu --config '%s' --listen 'ipc://%s' --listen '%s' 2>'%s'",
		 gpud_bin, rp.path[0], sock, listen, errf);
	char *argv[] = {"/bin/sh", "-c", line, NULL};
	int st = 0;
	ck_assert(harness_run_timed(argv, NULL, &st) >= 0);
	ck_assert(harness_read_text(errf, log, cap) >= 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "gpud exited with status %d:\n%s", st,
		      log);
	for (const char *const *p = want; *p; p++) {
		fill_paths(w, sizeof(w), *p, &rp);
		ck_assert_msg(strstr(log, w), "gpud's error does not say '%s':\n%s", w, log);
	}
	ck_assert_msg(access(sock, F_OK) != 0 && errno == ENOENT, "%s was left behind", sock);
	char shm[420];
	snprintf(shm, sizeof(shm), "%s.shm", sock);
	ck_assert_msg(access(shm, F_OK) != 0, "%s was left behind", shm);
}

/* A tokens_file gpud cannot use: it says which rule the line breaks, exits 2
 * (a config error) and leaves no socket file behind (the tokens are read
 * before anything is bound). */
START_TEST(test_bad_tokens_file_binds_nothing)
{
	static const char *const want[] = {"tokens_file TOK:1: the token has 5 characters",
					   "a token of 16 to 127", NULL};
	char log[8192];
	expect_refused("[gpud]\ntokens_file = TOK\n", "alice short\n", 0600, "tcp://127.0.0.1:0",
		       want, log, sizeof(log));
}
END_TEST

/* One token for two tenants: which would a hello get? Refused, naming both lines. */
START_TEST(test_token_of_two_tenants_refused)
{
	char log[8192];
	static const char *const want[] = {
		"tokens_file TOK:3: tenant 'bob' has the token that line 1 gives tenant 'alice'; "
		"a token must name one tenant",
		NULL};
	expect_refused("[gpud]\ntokens_file = TOK\n",
		       "alice " TOKEN_ALICE
		       "\n# bob's, pasted from alice's by mistake\nbob " TOKEN_ALICE "\n",
		       0600, "tcp://127.0.0.1:0", want, log, sizeof(log));
	ck_assert_msg(strstr(log, TOKEN_ALICE) == NULL, "gpud wrote the token out:\n%s", log);
}
END_TEST

/* A tokens_file others may read: refused with its mode and the fix. */
START_TEST(test_readable_tokens_file_refused)
{
	static const char *const want[] = {
		"tokens_file TOK has mode 0644: group or others may read it", "chmod 600 TOK",
		NULL};
	static const char *const want_group[] = {"tokens_file TOK has mode 0640", NULL};
	char log[8192];
	expect_refused("[gpud]\ntokens_file = TOK\n", "alice " TOKEN_ALICE "\n", 0644,
		       "tcp://127.0.0.1:0", want, log, sizeof(log));
	expect_refused("[gpud]\ntokens_file = TOK\n", "alice " TOKEN_ALICE "\n", 0640,
		       "tcp://127.0.0.1:0", want_group, log, sizeof(log));
}
END_TEST

/* A tls_key that is not tls_cert's: refused at start, both files named, not
 * left for every handshake to fail with clients told to blame their CA. */
START_TEST(test_tls_key_not_the_certs_refused)
{
	static const char *const want[] = {
		"tls_key KEY does not match tls_cert OTHER (its first certificate, ",
		"both are an EC key of 256 bits, but of different key pairs", NULL};
	char log[8192];
	/* with tokens too (read before): nothing of them left behind either */
	expect_refused("[gpud]\ntokens_file = TOK\ntls_cert = OTHER\ntls_key = KEY\n",
		       "alice " TOKEN_ALICE "\n", 0600, "tls+tcp://127.0.0.1:0", want, log,
		       sizeof(log));
}
END_TEST

/* listen = tcp://HOST without a port: nng would pick one at random. */
START_TEST(test_listen_without_port_refused)
{
	static const char *const in_file[] = {
		"gpud: error: config FILE:3: listen URL 'tcp://127.0.0.1' has no port",
		"expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:7878", NULL};
	static const char *const on_line[] = {
		"gpud: error: --listen: listen URL 'tls+tcp://127.0.0.1' has no port", NULL};
	char log[8192];
	expect_refused("[gpud]\n# a port was meant\nlisten = tcp://127.0.0.1\n", "", 0600,
		       "tcp://127.0.0.1:0", in_file, log, sizeof(log));
	expect_refused("[gpud]\n", "", 0600, "tls+tcp://127.0.0.1", on_line, log, sizeof(log));
}
END_TEST

void tenants_refused_tests(TCase *tc)
{
	tcase_add_test(tc, test_bad_tokens_file_binds_nothing);
	tcase_add_test(tc, test_token_of_two_tenants_refused);
	tcase_add_test(tc, test_readable_tokens_file_refused);
	tcase_add_test(tc, test_tls_key_not_the_certs_refused);
	tcase_add_test(tc, test_listen_without_port_refused);
}
