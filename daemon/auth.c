/* daemon/auth.c — tokens, tenant names, TLS listeners, socket file access. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon/auth.h"
#include "daemon/log.h"

/*
 * tokens_file: one "TENANT TOKEN" per line; '#' starts a comment. A file
 * others can read gets a warning: anyone who reads it is every tenant.
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
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
		log_warn("tokens_file %s is readable by group or others (mode %03o); chmod 600",
			 path, (unsigned)(st.st_mode & 0777));
	while (fgets(line, sizeof(line), f)) {
		char tenant[sizeof(line)], token[sizeof(line)], extra[2], why[160] = "";
		lineno++;
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

/* Constant-time comparison of two NUL-terminated secrets. */
static int secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;
	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

dstatus auth_tenant(const auth *a, int64_t peer_uid, const char *token, char *name, size_t len,
		    char *err, size_t errlen)
{
	if (peer_uid >= 0) {
		struct passwd pw, *res = NULL;
		char buf[1024];
		if (getpwuid_r((uid_t)peer_uid, &pw, buf, sizeof(buf), &res) == 0 && res &&
		    strlen(pw.pw_name) < len)
			snprintf(name, len, "%s", pw.pw_name);
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

/* A whole (small) file into a NUL-terminated string; NULL with err on failure. */
static char *read_file(const char *what, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0;
	if (f == NULL) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		return NULL;
	}
	if ((buf = malloc(1 << 20)) != NULL)
		n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	if (buf == NULL || n == 0) {
		snprintf(err, errlen, "%s %s: empty or unreadable", what, path);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/*
 * nng's TLS (mbedtls) with the certificate and key from tls_cert / tls_key;
 * with tls_ca, client certificates are asked for and, when given, checked
 * against it. Tenants come from tokens, as on tcp://.
 */
int auth_tls_listener(const gpud_config *cfg, nng_listener l, const char *url, char *err,
		      size_t errlen)
{
	nng_tls_config *tc = NULL;
	char *cert = NULL, *key = NULL;
	int rv;

	if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
		snprintf(err, errlen, "%s: set tls_cert and tls_key (PEM files) in the config",
			 url);
		return -1;
	}
	if ((cert = read_file("tls_cert", cfg->tls_cert, err, errlen)) == NULL ||
	    (key = read_file("tls_key", cfg->tls_key, err, errlen)) == NULL)
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
	if ((rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, tc)) != 0) {
		snprintf(err, errlen, "%s: %s", url, nng_strerror(rv));
		goto fail;
	}
	nng_tls_config_free(tc); /* the listener holds its own reference */
	free(cert);
	free(key);
	return 0;
fail:
	if (tc)
		nng_tls_config_free(tc);
	free(cert);
	free(key);
	return -1;
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
		char buf[4096];
		if (getgrnam_r(cfg->socket_group, &gr, buf, sizeof(buf), &res) != 0 ||
		    res == NULL) {
			snprintf(err, errlen, "socket_group '%s': no such group",
				 cfg->socket_group);
			return -1;
		}
		if (chown(path, (uid_t)-1, gr.gr_gid) != 0) {
			snprintf(err, errlen, "socket_group %s on %s: %s", cfg->socket_group, path,
				 strerror(errno));
			return -1;
		}
	}
	return 0;
}
