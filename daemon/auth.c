/*
 * daemon/auth.c — tokens, tenant names, TLS listeners, socket file access,
 * and the log line for a failed inbound TLS handshake.
 *
 * Threads: auth_load, auth_tls_listener, auth_socket_group_check and
 * auth_socket_access run on the loop at start, auth_load, auth_tls_check and
 * auth_tls_config again at a reload (daemon/reload.c, on the loop);
 * auth_tenant on the loop (it looks no user up: the connection's endpoint
 * did, daemon/endpoint/endpoint.h); the handshake hook on nng's threads (its only
 * state: the log's rate limit and tls_cert's name, atomics).
 */
#include <errno.h>
#include <grp.h>
#include <stdatomic.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <time.h>

#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon/auth.h"
#include "daemon/endpoint/endpoint.h"
#include "daemon/log.h"
#include "proto/peek.h"

#if MBEDTLS_VERSION_MAJOR >= 3
#define SSL_FIELD(ssl, f) ((ssl)->MBEDTLS_PRIVATE(f))
#else
#define SSL_FIELD(ssl, f) ((ssl)->f)
#endif

/*
 * tokens_file: one "TENANT TOKEN" per line; '#' starts a comment. Refused
 * at start: a file group or others may read (whoever reads it is every
 * tenant), a malformed line, and a token given to two tenants (which one
 * a hello gets would be up to the file's order).
 */
int auth_load(auth *a, const gpud_config *cfg, char *err, size_t errlen)
{
	const char *path = cfg->tokens_file;
	char line[512];
	int lineno = 0;
	struct stat st;

	memset(a, 0, sizeof(*a));
	if (path[0] == '\0')
		return 0;
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		snprintf(err, errlen, "tokens_file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) != 0 || (st.st_mode & 077)) {
		snprintf(err, errlen,
			 "tokens_file %s has mode %04o: group or others may read it, and whoever "
			 "reads it can connect as every tenant in it; chmod 600 %s",
			 path, (unsigned)(st.st_mode & 07777), path);
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char tenant[sizeof(line)], token[sizeof(line)], extra[2], why[200] = "";
		lineno++;
		size_t len = strlen(line);
		if (len == sizeof(line) - 1 && line[len - 1] != '\n' && !feof(f)) {
			/* its rest would be read as a line of its own: a comment's tail as a token */
			snprintf(err, errlen,
				 "tokens_file %s:%d: the line is longer than %zu bytes, the most a "
				 "line may have",
				 path, lineno, sizeof(line) - 2);
			fclose(f);
			auth_fini(a);
			return -1;
		}
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		int n = sscanf(line, "%511s %511s %1s", tenant, token, extra);
		if (n <= 0)
			continue;
		if (n == 1)
			snprintf(why, sizeof(why), "tenant '%.64s' has no token", tenant);
		else if (n > 2)
			snprintf(why, sizeof(why), "more than two words");
		else if (strlen(tenant) >= GPUD_TENANT_NAME)
			snprintf(why, sizeof(why), "the tenant name has %zu characters",
				 strlen(tenant));
		else if (strlen(token) < 16 || strlen(token) >= 128)
			snprintf(why, sizeof(why), "the token has %zu characters", strlen(token));
		if (why[0]) {
			snprintf(err, errlen,
				 "tokens_file %s:%d: %s; expected 'TENANT TOKEN' (a name under %d "
				 "characters, a token of 16 to 127, no spaces in either)",
				 path, lineno, why, GPUD_TENANT_NAME);
			fclose(f);
			auth_fini(a);
			return -1;
		}
		int same = -1; /* the token named before, on the line of tokens[same] */
		for (int i = 0; i < a->ntokens && same < 0; i++)
			if (strcmp(a->tokens[i].token, token) == 0)
				same = i;
		if (same >= 0 && strcmp(a->tokens[same].tenant, tenant) != 0) {
			/* the token itself is never written out, not even here */
			snprintf(err, errlen,
				 "tokens_file %s:%d: tenant '%s' has the token that line %d gives "
				 "tenant '%s'; a token must name one tenant (give each its own)",
				 path, lineno, tenant, a->tokens[same].line,
				 a->tokens[same].tenant);
			fclose(f);
			auth_fini(a);
			return -1;
		}
		if (same >= 0)
			continue; /* the same line again: nothing new */
		auth_token *nt = realloc(a->tokens, (size_t)(a->ntokens + 1) * sizeof(*nt));
		if (nt == NULL) {
			snprintf(err, errlen, "tokens_file: out of memory");
			fclose(f);
			auth_fini(a);
			return -1;
		}
		a->tokens = nt;
		snprintf(nt[a->ntokens].tenant, sizeof(nt->tenant), "%s", tenant);
		snprintf(nt[a->ntokens].token, sizeof(nt->token), "%s", token);
		nt[a->ntokens].line = lineno;
		a->ntokens++;
	}
	fclose(f);
	log_info("tokens_file %s: %d tokens", path, a->ntokens);
	return 0;
}

void auth_fini(auth *a)
{
	free(a->tokens);
	a->tokens = NULL;
	a->ntokens = 0;
}

int auth_names_tenant(const auth *a, const char *name)
{
	if (a->ntokens == 0)
		return strcmp(name, "anonymous") == 0;
	for (int i = 0; i < a->ntokens; i++)
		if (strcmp(a->tokens[i].tenant, name) == 0)
			return 1;
	return 0;
}

/* Constant-time comparison of two NUL-terminated secrets. */
static int secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;
	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

dstatus auth_tenant(const auth *a, int local, int64_t peer_uid, const char *peer_user,
		    const char *token, char *name, size_t len, char *err, size_t errlen)
{
	if (local) {
		if (peer_user && peer_user[0] && strlen(peer_user) < len)
			snprintf(name, len, "%s", peer_user);
		else
			snprintf(name, len, "uid:%lld", (long long)peer_uid);
		return ST_OK;
	}
	if (a->ntokens == 0) {
		snprintf(name, len, "anonymous");
		return ST_OK;
	}
	const char *tok = token ? token : "";
	int found = -1;
	for (int i = 0; i < a->ntokens; i++) /* no early exit: same time for all */
		if (secret_equal(a->tokens[i].token, tok) && found < 0)
			found = i;
	if (found < 0 || tok[0] == '\0') {
		snprintf(err, errlen,
			 "hello: %s token; connections over tcp:// must present one from gpud's "
			 "tokens_file (gpuctl --token, GPUD_TOKEN)",
			 tok[0] ? "unknown" : "no");
		return ST_UNAUTHENTICATED;
	}
	snprintf(name, len, "%s", a->tokens[found].tenant);
	return ST_OK;
}

/*
 * A TLS file gpud is given (key: tls_cert, tls_key or tls_ca; desc: what it
 * holds), whole, NUL-terminated (mbed TLS parses PEM with its NUL, as nng
 * passes it); *len its bytes. NULL with err "tls_ca: CA file PATH: no such
 * file" (or why else it cannot be read).
 */
static char *read_file(const char *key, const char *desc, const char *path, size_t *len, char *err,
		       size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s file %s: %s", key, desc, path,
			 errno == ENOENT ? "no such file" : strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: %s file %s: a directory, not a file", key, desc, path);
		fclose(f);
		return NULL;
	}
	if ((buf = malloc(1 << 20)) != NULL)
		n = fread(buf, 1, (1 << 20) - 1, f);
	int bad = buf == NULL || ferror(f);
	fclose(f);
	if (bad || n == 0) {
		snprintf(err, errlen, "%s: %s file %s: %s", key, desc, path,
			 buf == NULL ? "out of memory"
			 : bad       ? "cannot be read"
				     : "empty");
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

#if MBEDTLS_VERSION_MAJOR >= 3
/* mbed TLS 3 asks for random bytes to parse and check a key (blinding). */
static int pk_random(void *arg, unsigned char *out, size_t n)
{
	(void)arg;
	while (n > 0) {
		ssize_t k = getrandom(out, n, 0);
		if (k <= 0)
			return MBEDTLS_ERR_PK_BAD_INPUT_DATA;
		out += k;
		n -= (size_t)k;
	}
	return 0;
}
#define PK_RANDOM , pk_random, NULL
#else
#define PK_RANDOM
#endif

/* "an RSA key of 2048 bits", "an EC key of 256 bits": what a key is, for a message. */
static void key_words(const mbedtls_pk_context *pk, char *out, size_t len)
{
	const char *name = mbedtls_pk_get_name(pk);
	snprintf(out, len, "an %s key of %zu bits", name ? name : "unknown",
		 mbedtls_pk_get_bitlen(pk));
}

static void tls_error(int rv, char *out, size_t len)
{
	out[0] = '\0';
#ifdef MBEDTLS_ERROR_C
	mbedtls_strerror(rv, out, len);
#else
	snprintf(out, len, "mbed TLS error -0x%04x", (unsigned)-rv);
#endif
}

/* PEM's marker of a certificate: nng reads only PEM. */
#define PEM_CERT "-----BEGIN CERTIFICATE-----"

/* A file of PEM certificates (tls_cert's chain, tls_ca's CAs) into crt. 0,
 * or -1 with err naming the key, the file and why. */
static int parse_certs(mbedtls_x509_crt *crt, const char *key, const char *desc, const char *what,
		       const char *path, char *err, size_t errlen)
{
	char why[256];
	size_t n;
	char *pem = read_file(key, desc, path, &n, err, errlen);
	if (pem == NULL)
		return -1;
	int marked = strstr(pem, PEM_CERT) != NULL;
	int rv = marked ? mbedtls_x509_crt_parse(crt, (unsigned char *)pem, n + 1) : 0;
	free(pem);
	if (marked && rv == 0)
		return 0;
	if (!marked)
		snprintf(why, sizeof(why), "no '" PEM_CERT "' line");
	else if (rv < 0)
		tls_error(rv, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%d of its certificates cannot be parsed", rv);
	snprintf(err, errlen, "%s: %s file %s: not %s (%s)", key, desc, path, what, why);
	return -1;
}

int auth_tls_check(const gpud_config *cfg, char *err, size_t errlen)
{
	mbedtls_x509_crt crt, ca;
	mbedtls_pk_context key;
	char why[256], *pem = NULL;
	size_t n;
	int rv, ret = -1;

	if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
		snprintf(
			err, errlen,
			"tls+tcp:// listeners need tls_cert and tls_key (PEM files) in the config");
		return -1;
	}
	mbedtls_x509_crt_init(&crt);
	mbedtls_x509_crt_init(&ca);
	mbedtls_pk_init(&key);
	if (parse_certs(&crt, "tls_cert", "certificate", "a PEM certificate chain", cfg->tls_cert,
			err, errlen) != 0)
		goto out;
	if ((pem = read_file("tls_key", "key", cfg->tls_key, &n, err, errlen)) == NULL)
		goto out;
	if ((rv = mbedtls_pk_parse_key(&key, (unsigned char *)pem, n + 1, NULL, 0 PK_RANDOM)) !=
	    0) {
		tls_error(rv, why, sizeof(why));
		snprintf(err, errlen,
			 "tls_key: key file %s: not a PEM private key without a password (as nng "
			 "reads it): %s",
			 cfg->tls_key, why);
		goto out;
	}
	/* The chain's first certificate is gpud's own: its public key must be
	 * the key's, or every handshake fails and clients blame their CA. */
	if ((rv = mbedtls_pk_check_pair(&crt.pk, &key PK_RANDOM)) != 0) {
		char subject[256] = "?", kw[96], cw[96];
		mbedtls_x509_dn_gets(subject, sizeof(subject), &crt.subject);
		key_words(&key, kw, sizeof(kw));
		key_words(&crt.pk, cw, sizeof(cw));
		if (strcmp(kw, cw) == 0)
			snprintf(why, sizeof(why), "both are %s, but of different key pairs", kw);
		else
			snprintf(why, sizeof(why), "the key is %s, the certificate's is %s", kw,
				 cw);
		snprintf(err, errlen,
			 "tls_key %s does not match tls_cert %s (its first certificate, %s): %s; "
			 "every TLS handshake would fail",
			 cfg->tls_key, cfg->tls_cert, subject, why);
		goto out;
	}
	/* The CAs client certificates are checked against (nng: "Cryptographic
	 * error" or "Entry not found" at the listener, without the file). */
	if (cfg->tls_ca[0] &&
	    parse_certs(&ca, "tls_ca", "CA", "a PEM certificate", cfg->tls_ca, err, errlen) != 0)
		goto out;
	ret = 0;
out:
	if (pem) {
		memset(pem, 0, n); /* the private key */
		free(pem);
	}
	mbedtls_pk_free(&key);
	mbedtls_x509_crt_free(&ca);
	mbedtls_x509_crt_free(&crt);
	return ret;
}

/*
 * tls_cert, for the log lines of failed handshakes (every TLS listener has
 * the same), read by nng's threads. Written on the loop only: by the first
 * auth_tls_listener before any TLS listener starts, and by a reload
 * (auth_tls_cert_name) into the slot readers are not pointed at, then
 * published; each slot keeps its last byte NUL, so even a reader that lost
 * the race of two reloads in a row reads a string (of a path gpud had).
 */
static char hs_cert[2][256];
static _Atomic int hs_cert_slot;

static const char *hs_cert_name(void)
{
	return hs_cert[atomic_load_explicit(&hs_cert_slot, memory_order_acquire)];
}

void auth_tls_cert_name(const char *path)
{
	int next = 1 - atomic_load_explicit(&hs_cert_slot, memory_order_relaxed);
	snprintf(hs_cert[next], sizeof(hs_cert[next]) - 1, "%.254s", path);
	atomic_store_explicit(&hs_cert_slot, next, memory_order_release);
}

int auth_tls_config(const gpud_config *cfg, const char *url, nng_tls_config **out, char *err,
		    size_t errlen)
{
	nng_tls_config *tc = NULL;
	char *cert = NULL, *key = NULL;
	int rv;

	*out = NULL;
	if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
		snprintf(err, errlen, "%s: set tls_cert and tls_key (PEM files) in the config",
			 url);
		return -1;
	}
	size_t n;
	if ((cert = read_file("tls_cert", "certificate", cfg->tls_cert, &n, err, errlen)) == NULL ||
	    (key = read_file("tls_key", "key", cfg->tls_key, &n, err, errlen)) == NULL)
		goto fail;
	if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_SERVER)) != 0 ||
	    (rv = nng_tls_config_own_cert(tc, cert, key, NULL)) != 0) {
		snprintf(err, errlen, "%s: tls_cert %s / tls_key %s: %s", url, cfg->tls_cert,
			 cfg->tls_key, nng_strerror(rv));
		goto fail;
	}
	if (cfg->tls_ca[0] &&
	    ((rv = nng_tls_config_ca_file(tc, cfg->tls_ca)) != 0 ||
	     (rv = nng_tls_config_auth_mode(tc, NNG_TLS_AUTH_MODE_OPTIONAL)) != 0)) {
		snprintf(err, errlen, "%s: tls_ca %s: %s", url, cfg->tls_ca, nng_strerror(rv));
		goto fail;
	}
	free(cert);
	free(key);
	*out = tc;
	return 0;
fail:
	if (tc)
		nng_tls_config_free(tc);
	free(cert);
	free(key);
	return -1;
}

/* The name of the user gpud runs as (its effective uid), else "uid N". */
static void my_user(char *out, size_t len)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	uid_t uid = geteuid();
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(out, len, "%s", pw.pw_name);
	else
		snprintf(out, len, "uid %u", (unsigned)uid);
}

/* socket_group's "no such group" and "gpud's user is not in it", with the fix. */
static void no_group(const char *group, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "socket_group '%s': no such group; create it: systemd-sysusers (the installed "
		 "sysusers.d/gpud.conf makes group gpud), or groupadd --system %s",
		 group, group);
}

static void not_member(const char *group, const char *path, char *err, size_t errlen)
{
	char user[64];
	my_user(user, sizeof(user));
	snprintf(err, errlen,
		 "socket_group '%s': gpud runs as user %s, who is not in group %s, so it cannot "
		 "give %s that group; add gpud's user to it: usermod -aG %s %s (then start gpud "
		 "again)",
		 group, user, group, path ? path : "its sockets", group, user);
}

int auth_socket_group_check(const gpud_config *cfg, char *err, size_t errlen)
{
	char shm[sizeof(cfg->shm_socket)];
	int files = 0; /* listeners that make a socket file */
	for (int i = 0; i < cfg->nlisten; i++)
		files |= endpoint_path(cfg->listen[i]) != NULL;
	config_shm_path(cfg, shm, sizeof(shm));
	if (cfg->socket_group[0] == '\0' || (!files && shm[0] == '\0'))
		return 0; /* no socket file to give it */
	struct group gr, *res = NULL;
	char buf[16384];
	if (getgrnam_r(cfg->socket_group, &gr, buf, sizeof(buf), &res) != 0 || res == NULL) {
		no_group(cfg->socket_group, err, errlen);
		return -1;
	}
	/* chown(2) to a group: its owner must be in it (root, with CAP_CHOWN,
	 * may give any; bind-time's EPERM says so if it cannot). */
	if (geteuid() == 0 || getegid() == gr.gr_gid)
		return 0;
	gid_t groups[256];
	int n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gr.gr_gid)
			return 0;
	not_member(cfg->socket_group, NULL, err, errlen);
	return -1;
}

/*
 * nng's TLS (mbedtls) with the certificate and key from tls_cert / tls_key;
 * with tls_ca, client certificates are asked for and, when given, checked
 * against it. Tenants come from tokens, as on tcp://.
 */
int auth_tls_listener(const gpud_config *cfg, nng_listener l, const char *url, char *err,
		      size_t errlen)
{
	nng_tls_config *tc;
	int rv;

	if (auth_tls_config(cfg, url, &tc, err, errlen) != 0)
		return -1;
	if ((rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, tc)) != 0) {
		snprintf(err, errlen, "%s: %s", url, nng_strerror(rv));
		nng_tls_config_free(tc);
		return -1;
	}
	nng_tls_config_free(tc);       /* the listener holds its own reference */
	if (hs_cert_name()[0] == '\0') /* the first TLS listener's: before any of them starts */
		auth_tls_cert_name(cfg->tls_cert);
	return 0;
}

int auth_socket_access(const gpud_config *cfg, const char *path, char *err, size_t errlen)
{
	if (cfg->socket_mode >= 0 && chmod(path, (mode_t)cfg->socket_mode) != 0) {
		snprintf(err, errlen, "socket_mode %04o on %s: %s", (unsigned)cfg->socket_mode,
			 path, strerror(errno));
		return -1;
	}
	if (cfg->socket_group[0]) {
		struct group gr, *res = NULL;
		char buf[16384];
		if (getgrnam_r(cfg->socket_group, &gr, buf, sizeof(buf), &res) != 0 ||
		    res == NULL) {
			no_group(cfg->socket_group, err, errlen);
			return -1;
		}
		if (chown(path, (uid_t)-1, gr.gr_gid) != 0) {
			if (errno == EPERM)
				not_member(cfg->socket_group, path, err, errlen);
			else
				snprintf(err, errlen, "socket_group %s on %s: %s",
					 cfg->socket_group, path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* --- failed inbound handshakes --------------------------------------------------------------- */

/* What an alert the client sent says of gpud's side (the words of the alerts
 * mbed TLS and OpenSSL clients send when they refuse a certificate). */
static const char *alert_meaning(uint8_t d)
{
	switch (d) {
	case 48: /* unknown_ca */
		return ": it does not trust the CA that signed gpud's certificate (its CA file, "
		       "GPUD_TLS_CA, is another)";
	case 45: /* certificate_expired */
		return ": gpud's certificate has expired";
	case 46: /* certificate_unknown */
		return ": it refused gpud's certificate (mbed TLS clients say so of one not yet "
		       "valid)";
	case 42: /* bad_certificate */
		return ": it refused gpud's certificate (mbed TLS clients say so of one not for "
		       "the name they dialed)";
	case 43: /* unsupported_certificate */
	case 44: /* certificate_revoked */
		return ": it refused gpud's certificate";
	case 40: /* handshake_failure */
	case 70: /* protocol_version */
	case 71: /* insufficient_security */
		return ": no TLS version or cipher in common (gpud's nng speaks TLS 1.2)";
	}
	return "";
}

void auth_handshake_cause(int rv, const uint8_t *first, size_t nfirst, int alert, uint32_t flags,
			  char *out, size_t len)
{
	char seen[64];
	enum peek_kind kind = peek_kind_of(first, nfirst);

	peek_describe(first, nfirst, seen, sizeof(seen));
	if (rv == 0) {
		char info[512] = "";
		int n = mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
		for (int i = 0; i < n; i++)
			if (info[i] == '\n')
				info[i] = i + 1 < n ? ';' : '\0';
		snprintf(out, len,
			 "its client certificate does not verify against tls_ca (%s); served "
			 "anyway: its token decides its tenant",
			 n > 0 ? info : "flags");
	} else if (kind == PEEK_SP)
		snprintf(
			out, len,
			"a plain tcp:// client at a TLS port (it sent %s): it must dial tls+tcp://",
			seen);
	else if (kind == PEEK_HTTP)
		snprintf(out, len, "an HTTP client at a TLS port (it sent %s)", seen);
	else if (rv == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE && alert >= 0)
		snprintf(out, len, "the client ended the handshake with alert %d (%s)%s", alert,
			 peek_tls_alert_name((uint8_t)alert), alert_meaning((uint8_t)alert));
	else if (kind == PEEK_OTHER)
		snprintf(out, len, "the client does not speak TLS (it sent %s)", seen);
	else {
		char e[160] = "";
#ifdef MBEDTLS_ERROR_C
		mbedtls_strerror(rv, e, sizeof(e));
#endif
		snprintf(out, len, "mbed TLS error -0x%04x%s%s", (unsigned)-rv, e[0] ? ": " : "",
			 e);
	}
}

/* "IP:PORT" of an nng address. */
static void addr_str(const nng_sockaddr *sa, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (sa->s_family == NNG_AF_INET) {
		inet_ntop(AF_INET, &sa->s_in.sa_addr, ip, sizeof(ip));
		snprintf(out, len, "%s:%u", ip, (unsigned)ntohs(sa->s_in.sa_port));
	} else if (sa->s_family == NNG_AF_INET6) {
		inet_ntop(AF_INET6, sa->s_in6.sa_addr, ip, sizeof(ip));
		snprintf(out, len, "[%s]:%u", ip, (unsigned)ntohs(sa->s_in6.sa_port));
	} else {
		snprintf(out, len, "?");
	}
}

/* At most HS_LOG_PER_S lines a second (a scanner must not flood the log);
 * the next line says how many were left out. */
#define HS_LOG_PER_S 10
static int64_t hs_second;
static int hs_lines, hs_dropped;

static int hs_may_log(int *dropped)
{
	int64_t now = (int64_t)time(NULL);
	int64_t was = __atomic_load_n(&hs_second, __ATOMIC_RELAXED);
	if (now != was && __atomic_compare_exchange_n(&hs_second, &was, now, 0, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED))
		__atomic_store_n(&hs_lines, 0, __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&hs_lines, 1, __ATOMIC_RELAXED) > HS_LOG_PER_S) {
		__atomic_add_fetch(&hs_dropped, 1, __ATOMIC_RELAXED);
		return 0;
	}
	*dropped = __atomic_exchange_n(&hs_dropped, 0, __ATOMIC_RELAXED);
	return 1;
}

/*
 * nng 1.5.2 drops a tls+tcp:// connection whose handshake failed and tells
 * the application nothing: no pipe event, no error, mbed TLS's reason kept
 * inside its TLS engine. gpud links nng and mbed TLS statically and its link
 * wraps mbedtls_ssl_handshake (-Wl,--wrap=mbedtls_ssl_handshake, the
 * Makefile's gpud rule), so each handshake step nng runs comes here: a
 * server's handshake that ends in an error is logged with its cause and the
 * peer's address, and so is one that succeeded with a client certificate
 * tls_ca does not verify (tls_ca makes client certificates optional). The
 * peer's address: nng's TLS engine gives mbed TLS its connection as the
 * bio's context, and that connection begins with its nng_stream (nng 1.5.2
 * to 1.10, src/supplemental/tls/tls_common.c), whose addresses nng's
 * stream API reads. Called on nng's threads; nng holds the connection's lock.
 * Programs that link without the wrap (the unit tests, the fuzzer) never
 * call it: __real_mbedtls_ssl_handshake is then a weak NULL.
 */
int __real_mbedtls_ssl_handshake(mbedtls_ssl_context *ssl) __attribute__((weak));
int __wrap_mbedtls_ssl_handshake(mbedtls_ssl_context *ssl);
int __wrap_mbedtls_ssl_handshake(mbedtls_ssl_context *ssl)
{
	int rv = __real_mbedtls_ssl_handshake ? __real_mbedtls_ssl_handshake(ssl)
					      : mbedtls_ssl_handshake(ssl);
	const mbedtls_ssl_config *conf = SSL_FIELD(ssl, conf);
	uint32_t flags = 0;
	int dropped = 0;

	if (rv == MBEDTLS_ERR_SSL_WANT_READ || rv == MBEDTLS_ERR_SSL_WANT_WRITE || conf == NULL ||
	    SSL_FIELD(conf, endpoint) != MBEDTLS_SSL_IS_SERVER)
		return rv;
	if (rv == 0 && (mbedtls_ssl_get_peer_cert(ssl) == NULL ||
			(flags = mbedtls_ssl_get_verify_result(ssl)) == 0))
		return rv;
	if (!hs_may_log(&dropped))
		return rv;

	const uint8_t *hdr = SSL_FIELD(ssl, in_hdr), *msg = SSL_FIELD(ssl, in_msg);
	size_t n = hdr ? SSL_FIELD(ssl, in_left) : 0;
	int alert = rv == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE && msg ? msg[1] : -1;
	char cause[600], local[80] = "?", peer[80] = "?";
	nng_stream *s = SSL_FIELD(ssl, p_bio);
	nng_sockaddr sa;

	auth_handshake_cause(rv, hdr, n < 8 ? n : 8, alert, flags, cause, sizeof(cause));
	if (s && nng_stream_get_addr(s, NNG_OPT_LOCADDR, &sa) == 0)
		addr_str(&sa, local, sizeof(local));
	if (s && nng_stream_get_addr(s, NNG_OPT_REMADDR, &sa) == 0)
		addr_str(&sa, peer, sizeof(peer));
	if (dropped)
		log_warn("tls+tcp://%s: %d more TLS handshake lines left out (at most %d a second)",
			 local, dropped, HS_LOG_PER_S);
	if (rv == 0)
		log_warn("tls+tcp://%s: client %s: %s", local, peer, cause);
	else if (alert >= 0)
		log_warn("tls+tcp://%s: TLS handshake with %s failed: %s (gpud's tls_cert: %s)",
			 local, peer, cause, hs_cert_name()[0] ? hs_cert_name() : "?");
	else
		log_warn("tls+tcp://%s: TLS handshake with %s failed: %s", local, peer, cause);
	return rv;
}
