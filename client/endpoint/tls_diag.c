/*
 * client/endpoint/tls_diag.c — why a dial failed, when nng says only
 * "Cryptographic error" or "Connection shutdown": a second connection of
 * its own to the same host and port, made with mbed TLS directly over a
 * plain socket. The tcp and tls rows' cause of a failed dial (tcp.c,
 * tls.c).
 *
 * nng 1.5.2 maps every failed mbed TLS handshake to NNG_ECRYPTO or
 * NNG_EPEERAUTH and keeps mbed TLS's context (its verify flags, the peer's
 * certificate) to itself. So after a tls+tcp:// dial fails, this handshakes
 * again with the same CA file and server name, in VERIFY_OPTIONAL mode: the
 * handshake completes, and mbedtls_ssl_get_verify_result() and the peer's
 * certificate say what was wrong (not trusted by the CA file, expired, not
 * yet valid, another name). The first bytes the server sent tell a plain
 * tcp:// gpud (nng's SP header, proto/peek.h) from a TLS one; after a tcp://
 * dial fails, a handshake that succeeds says the port speaks TLS.
 *
 * Before any dial, client_tls_ca_check says what is wrong with the CA file
 * itself (nng says "Entry not found" or "Cryptographic error").
 *
 * Runs on the connecting thread; every piece of state is on its stack.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/oid.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "client/endpoint/endpoint.h"
#include "client/internal.h"
#include "proto/peek.h"

/* The longest the diagnosis may take, whatever the connect timeout. */
#define DIAG_MAX_MS 5000

typedef struct diag_io {
	int fd;
	uint8_t first[16]; /* the first bytes the server sent */
	size_t nfirst;
} diag_io;

static int diag_send(void *arg, const unsigned char *b, size_t n)
{
	diag_io *io = arg;
	ssize_t k = send(io->fd, b, n, MSG_NOSIGNAL);
	if (k >= 0)
		return (int)k;
	return errno == EAGAIN || errno == EWOULDBLOCK ? MBEDTLS_ERR_SSL_TIMEOUT
						       : MBEDTLS_ERR_NET_SEND_FAILED;
}

static int diag_recv(void *arg, unsigned char *b, size_t n)
{
	diag_io *io = arg;
	ssize_t k = recv(io->fd, b, n, 0);
	if (k < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? MBEDTLS_ERR_SSL_TIMEOUT
							       : MBEDTLS_ERR_NET_RECV_FAILED;
	if (k == 0)
		return MBEDTLS_ERR_SSL_CONN_EOF;
	for (ssize_t i = 0; i < k && io->nfirst < sizeof(io->first); i++)
		io->first[io->nfirst++] = b[i];
	return (int)k;
}

static int diag_random(void *arg, unsigned char *b, size_t n)
{
	(void)arg;
	while (n > 0) {
		ssize_t k = getrandom(b, n, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return MBEDTLS_ERR_SSL_INTERNAL_ERROR;
		}
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* "tls+tcp://HOST:PORT" or "tcp://HOST:PORT" (HOST may be [v6]) -> host, port. */
static int split_url(const char *url, char *host, size_t hlen, char *port, size_t plen)
{
	const char *h = strstr(url, "://"), *colon;
	if (h == NULL)
		return -1;
	h += 3;
	if (*h == '[') {
		const char *end = strchr(h, ']');
		if (end == NULL || end[1] != ':')
			return -1;
		snprintf(host, hlen, "%.*s", (int)(end - h - 1), h + 1);
		colon = end + 1;
	} else {
		if ((colon = strrchr(h, ':')) == NULL)
			return -1;
		snprintf(host, hlen, "%.*s", (int)(colon - h), h);
	}
	snprintf(port, plen, "%s", colon + 1);
	return port[0] ? 0 : -1;
}

/* A TCP connection to host:port within timeout_ms; send and receive then time
 * out after timeout_ms each. -1 when none. */
static int tcp_connect(const char *host, const char *port, int timeout_ms)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	int fd = -1;

	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0)
		return -1;
	for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    a->ai_protocol);
		if (fd < 0)
			continue;
		int ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
		if (!ok && errno == EINPROGRESS) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int err = 0;
			socklen_t el = sizeof(err);
			ok = poll(&p, 1, timeout_ms) == 1 &&
			     getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0;
		}
		if (!ok) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd >= 0) {
		/* blocking from here on, each send and receive bounded */
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

/* The subject's CN, or "". */
static void cert_cn(const mbedtls_x509_crt *crt, char *out, size_t len)
{
	out[0] = '\0';
	for (const mbedtls_x509_name *n = &crt->subject; n; n = n->next)
		if (n->oid.p && MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &n->oid) == 0) {
			snprintf(out, len, "%.*s", (int)n->val.len, (const char *)n->val.p);
			return;
		}
}

/* Its subject alternative names (DNS names and IP addresses), ", " between. */
static void cert_sans(const mbedtls_x509_crt *crt, char *out, size_t len)
{
	size_t at = 0;
	out[0] = '\0';
	for (const mbedtls_x509_sequence *s = &crt->subject_alt_names; s && s->buf.p && at < len;
	     s = s->next) {
		const unsigned char *p = s->buf.p;
		int tag = s->buf.tag & ~(MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED);
		if (tag == MBEDTLS_X509_SAN_DNS_NAME)
			at += (size_t)snprintf(out + at, len - at, "%s%.*s", at ? ", " : "",
					       (int)s->buf.len, (const char *)p);
		else if (tag == 7 && s->buf.len == 4) /* iPAddress, v4 */
			at += (size_t)snprintf(out + at, len - at, "%s%u.%u.%u.%u", at ? ", " : "",
					       p[0], p[1], p[2], p[3]);
	}
}

static void x509_time_str(const mbedtls_x509_time *t, char *out, size_t len)
{
	snprintf(out, len, "%04d-%02d-%02d %02d:%02d UTC", t->year, t->mon, t->day, t->hour,
		 t->min);
}

/* Appends "; " (unless at the start) and the formatted text. */
static void add(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *out, size_t len, const char *fmt, ...)
{
	size_t at = strlen(out);
	va_list ap;
	if (at > 0 && at + 2 < len) {
		memcpy(out + at, "; ", 3);
		at += 2;
	}
	if (at + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(out + at, len - at, fmt, ap);
	va_end(ap);
}

/* What mbed TLS's verify flags say of the server's certificate crt. */
static void describe_flags(uint32_t flags, const mbedtls_x509_crt *crt, const char *ca,
			   const char *name, char *out, size_t len)
{
	const uint32_t known = MBEDTLS_X509_BADCERT_NOT_TRUSTED | MBEDTLS_X509_BADCERT_EXPIRED |
			       MBEDTLS_X509_BADCERT_FUTURE | MBEDTLS_X509_BADCERT_CN_MISMATCH;
	char a[512], b[512];

	out[0] = '\0';
	if (crt && (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED)) {
		if (mbedtls_x509_dn_gets(a, sizeof(a), &crt->issuer) < 0)
			snprintf(a, sizeof(a), "?");
		add(out, len,
		    "the server's certificate is not trusted by the CA file %s (issuer %s)", ca, a);
	}
	if (crt && (flags & MBEDTLS_X509_BADCERT_EXPIRED)) {
		x509_time_str(&crt->valid_to, a, sizeof(a));
		add(out, len, "the server's certificate expired on %s", a);
	}
	if (crt && (flags & MBEDTLS_X509_BADCERT_FUTURE)) {
		x509_time_str(&crt->valid_from, a, sizeof(a));
		add(out, len, "the server's certificate is not valid until %s (is a clock wrong?)",
		    a);
	}
	if (crt && (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH)) {
		cert_cn(crt, a, sizeof(a));
		cert_sans(crt, b, sizeof(b));
		unsigned char ip[16];
		int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
		add(out, len,
		    "the server's certificate is for '%s' (SANs: %s), not '%s'%s: connect by one "
		    "of its names, or set GPUD_TLS_SERVER_NAME (gpud_options.tls_server_name) to "
		    "one",
		    a[0] ? a : "(no CN)", b[0] ? b : "none", name,
		    is_ip ? " (mbed TLS 2 matches DNS names only, never IP addresses)" : "");
	}
	if ((flags & ~known) || crt == NULL) {
		/* the rest in mbed TLS's words, one line per flag */
		char info[1024];
		int n = mbedtls_x509_crt_verify_info(info, sizeof(info), "",
						     crt ? flags & ~known : flags);
		for (int i = 0; i < n; i++)
			if (info[i] == '\n')
				info[i] = i + 1 < n ? ';' : '\0';
		if (n > 0)
			add(out, len, "the server's certificate: %s", info);
	}
}

int client_tls_handshake_error(int rv)
{
	return rv == NNG_ECRYPTO || rv == NNG_EPEERAUTH || rv == NNG_ECLOSED ||
	       rv == NNG_ECONNSHUT || rv == NNG_ECONNRESET || rv == NNG_EPROTO;
}

static const char *after_scheme(const char *url)
{
	const char *p = strstr(url, "://");
	return p ? p + 3 : url;
}

int client_tls_diagnose(const char *url, int tls, const char *ca, const char *name, int timeout_ms,
			char *why, size_t len)
{
	char host[256], port[32], seen[64];
	mbedtls_ssl_config conf;
	mbedtls_ssl_context ssl;
	mbedtls_x509_crt cas;
	diag_io io = {.fd = -1};
	int rv, found = 0;

	why[0] = '\0';
	if (split_url(url, host, sizeof(host), port, sizeof(port)) != 0)
		return 0;
	if (timeout_ms <= 0 || timeout_ms > DIAG_MAX_MS)
		timeout_ms = DIAG_MAX_MS;
	if ((io.fd = tcp_connect(host, port, timeout_ms)) < 0)
		return 0;
	mbedtls_ssl_config_init(&conf);
	mbedtls_ssl_init(&ssl);
	mbedtls_x509_crt_init(&cas);
	if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
					MBEDTLS_SSL_PRESET_DEFAULT) != 0)
		goto out;
	mbedtls_ssl_conf_rng(&conf, diag_random, NULL);
	/* VERIFY_OPTIONAL: the handshake goes on past a bad certificate, and
	 * the flags say what was bad */
	if (tls && ca && mbedtls_x509_crt_parse_file(&cas, ca) >= 0 && cas.version != 0) {
		mbedtls_ssl_conf_ca_chain(&conf, &cas, NULL);
		mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_OPTIONAL);
	} else {
		mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_NONE);
	}
	if (mbedtls_ssl_setup(&ssl, &conf) != 0 ||
	    (tls && name && mbedtls_ssl_set_hostname(&ssl, name) != 0))
		goto out;
	mbedtls_ssl_set_bio(&ssl, &io, diag_send, diag_recv, NULL);
	do
		rv = mbedtls_ssl_handshake(&ssl);
	while (rv == MBEDTLS_ERR_SSL_WANT_READ || rv == MBEDTLS_ERR_SSL_WANT_WRITE);

	enum peek_kind kind = peek_kind_of(io.first, io.nfirst);
	peek_describe(io.first, io.nfirst, seen, sizeof(seen));
	if (!tls) {
		if (rv == 0 || kind == PEEK_TLS) {
			snprintf(why, len,
				 "the server speaks TLS, not plain TCP: use tls+tcp://%s (and set "
				 "GPUD_TLS_CA to the CA file that signed its certificate)",
				 after_scheme(url));
			found = 1;
		}
	} else if (rv == 0) {
		uint32_t flags = mbedtls_ssl_get_verify_result(&ssl);
		if (flags != 0) {
			describe_flags(flags, mbedtls_ssl_get_peer_cert(&ssl), ca ? ca : "(none)",
				       name ? name : host, why, len);
			found = why[0] != '\0';
		}
		mbedtls_ssl_close_notify(&ssl);
	} else if (kind == PEEK_SP) {
		snprintf(why, len, "the server speaks plain TCP, not TLS: use tcp://%s",
			 after_scheme(url));
		found = 1;
	} else if (kind == PEEK_HTTP || kind == PEEK_OTHER) {
		snprintf(why, len,
			 "the server does not speak TLS (it sent %s): is %s:%s gpud's port?", seen,
			 host, port);
		found = 1;
	} else if (kind == PEEK_TLS && rv == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE && ssl.in_msg) {
		snprintf(why, len, "the server refused the TLS handshake (alert %u, %s)",
			 ssl.in_msg[1], peek_tls_alert_name(ssl.in_msg[1]));
		found = 1;
	}
out:
	mbedtls_ssl_free(&ssl);
	mbedtls_ssl_config_free(&conf);
	mbedtls_x509_crt_free(&cas);
	close(io.fd);
	return found;
}

#define PEM_CERT "-----BEGIN CERTIFICATE-----"

int client_tls_ca_check(const char *ca, char *why, size_t len)
{
	FILE *f = fopen(ca, "r");
	struct stat st;
	char *pem = NULL;
	size_t n = 0;
	if (f == NULL) {
		snprintf(why, len, "%s", errno == ENOENT ? "no such file" : strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		snprintf(why, len, "a directory, not a file");
		return -1;
	}
	if ((pem = malloc(1 << 20)) != NULL)
		n = fread(pem, 1, (1 << 20) - 1, f);
	int bad = pem == NULL || ferror(f);
	fclose(f);
	if (bad || n == 0) {
		snprintf(why, len, "%s",
			 pem == NULL ? "out of memory"
			 : bad       ? "cannot be read"
				     : "empty");
		free(pem);
		return -1;
	}
	pem[n] = '\0';
	int rv = -1;
	if (strstr(pem, PEM_CERT) == NULL) {
		snprintf(why, len, "not a PEM certificate (no '" PEM_CERT "' line)");
	} else {
		mbedtls_x509_crt crt;
		mbedtls_x509_crt_init(&crt);
		rv = mbedtls_x509_crt_parse(&crt, (const unsigned char *)pem, n + 1);
		mbedtls_x509_crt_free(&crt);
		if (rv < 0) {
			char e[160] = "";
#ifdef MBEDTLS_ERROR_C
			mbedtls_strerror(rv, e, sizeof(e));
#else
			snprintf(e, sizeof(e), "mbed TLS error -0x%04x", (unsigned)-rv);
#endif
			snprintf(why, len, "not a PEM certificate (%s)", e);
		} else if (rv > 0) {
			snprintf(why, len,
				 "not a PEM certificate (%d of its certificates cannot be "
				 "parsed)",
				 rv);
		}
	}
	free(pem);
	return rv == 0 ? 0 : -1;
}
