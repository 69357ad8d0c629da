/*
 * bench/net_floor.c — what the host itself allows for bytes in messages, to
 * set beside bench/transfer's msg, tcp and tls rows (no gpud, no GPU):
 *
 *   1. a bare TCP stream over loopback (4 MiB writes, one reader thread);
 *   2. nng REQ/REP over tcp:// and ipc:// loopback, 4 MiB requests (alloc,
 *      fill, send) answered by empty replies: nng's own upload path;
 *   3. mbedtls's AEAD ciphers on one core, 16 KiB records (TLS's record
 *      size): what one side of a tls+tcp:// connection can encrypt.
 *
 *   net_floor [MIB]     MIB per measurement (default 256); medians of 5
 */
#include <arpa/inet.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/gcm.h>
#include <mbedtls/version.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness.h"

enum { CHUNK = 4 << 20, RECORD = 16 << 10, REPS = 5 };
static size_t total;
static char *buf;

static void die(const char *what, const char *why)
{
	fprintf(stderr, "net_floor: %s: %s\n", what, why);
	exit(1);
}

/* --- 1. a bare TCP stream ------------------------------------------------------------- */

static int listen_fd;

static void *tcp_sink(void *arg)
{
	int fd = accept(listen_fd, NULL, NULL);
	char *b = malloc(CHUNK);
	size_t got = 0;
	while (fd >= 0 && b && got < total) {
		ssize_t n = read(fd, b, CHUNK);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (fd >= 0 && write(fd, "k", 1) != 1)
		got = 0;
	if (fd >= 0)
		close(fd);
	free(b);
	*(size_t *)arg = got;
	return NULL;
}

static double tcp_once(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	pthread_t th;
	size_t got = 0;
	char k;

	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sl) != 0 ||
	    listen(listen_fd, 1) != 0 || getsockname(listen_fd, (struct sockaddr *)&sa, &sl) != 0)
		die("tcp listen", "failed");
	pthread_create(&th, NULL, tcp_sink, &got);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sl) != 0)
		die("tcp connect", "failed");
	double t0 = harness_now_s();
	for (size_t sent = 0; sent < total;) {
		ssize_t n = write(fd, buf, CHUNK);
		if (n <= 0)
			die("tcp write", "failed");
		sent += (size_t)n;
	}
	if (read(fd, &k, 1) != 1)
		die("tcp read", "no acknowledgement");
	double t = harness_now_s() - t0;
	close(fd);
	pthread_join(th, NULL);
	close(listen_fd);
	if (got != total)
		die("tcp", "the reader got fewer bytes than were sent");
	return (double)total / t / 1e9;
}

/* --- 2. nng REQ/REP ------------------------------------------------------------------- */

static nng_socket rep;

static void *echo_main(void *arg)
{
	for (;;) {
		nng_msg *m;
		if (nng_recvmsg(rep, &m, 0) != 0)
			return arg;
		nng_msg_clear(m);
		if (nng_sendmsg(rep, m, 0) != 0)
			nng_msg_free(m);
	}
}

static double nng_gbs(const char *url)
{
	nng_socket req;
	pthread_t th;
	double v[REPS];
	int rv;

	if ((rv = nng_rep0_open(&rep)) || (rv = nng_listen(rep, url, NULL, 0)) ||
	    (rv = nng_req0_open(&req)) || (rv = nng_dial(req, url, NULL, 0)))
		die(url, nng_strerror(rv));
	pthread_create(&th, NULL, echo_main, NULL);
	for (int r = -1; r < REPS; r++) { /* one warm-up */
		double t0 = harness_now_s();
		for (size_t sent = 0; sent < total; sent += CHUNK) {
			nng_msg *m;
			if ((rv = nng_msg_alloc(&m, CHUNK)) != 0)
				die("nng_msg_alloc", nng_strerror(rv));
			memcpy(nng_msg_body(m), buf, CHUNK);
			if ((rv = nng_sendmsg(req, m, 0)) || (rv = nng_recvmsg(req, &m, 0)))
				die(url, nng_strerror(rv));
			nng_msg_free(m);
		}
		if (r >= 0)
			v[r] = (double)total / (harness_now_s() - t0) / 1e9;
	}
	nng_close(req);
	nng_close(rep);
	pthread_join(th, NULL);
	return harness_median(v, REPS);
}

/* --- 3. mbedtls's ciphers ------------------------------------------------------------- */

static double aead_gbs(int which)
{
	unsigned char key[32] = {1}, iv[12] = {2}, tag[16];
	unsigned char *in = (unsigned char *)buf, *out = malloc(RECORD);
	double v[REPS];
	mbedtls_gcm_context g;
	mbedtls_chachapoly_context c;

	mbedtls_gcm_init(&g);
	mbedtls_chachapoly_init(&c);
	if (which < 2 ? mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, key, which ? 256 : 128)
		      : mbedtls_chachapoly_setkey(&c, key))
		die("mbedtls", "setkey failed");
	for (int r = 0; r < REPS; r++) {
		double t0 = harness_now_s();
		for (size_t d = 0; d < total; d += RECORD) {
			iv[0]++;
			int rv = which < 2
					 ? mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT,
								     RECORD, iv, 12, NULL, 0, in,
								     out, 16, tag)
					 : mbedtls_chachapoly_encrypt_and_tag(&c, RECORD, iv, NULL,
									      0, in, out, tag);
			if (rv != 0)
				die("mbedtls", "encrypt failed");
		}
		v[r] = (double)total / (harness_now_s() - t0) / 1e9;
	}
	mbedtls_gcm_free(&g);
	mbedtls_chachapoly_free(&c);
	free(out);
	return harness_median(v, REPS);
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 256;
	if (argc > 2 || mib < 4) {
		fprintf(stderr, "usage: net_floor [MIB]   (MIB >= 4; default 256)\n");
		return 2;
	}
	total = (size_t)mib << 20;
	total -= total % CHUNK;
	if ((buf = malloc(CHUNK)) == NULL)
		die("malloc", "out of memory");
	memset(buf, 1, CHUNK);

	double v[REPS];
	for (int r = 0; r < REPS; r++)
		v[r] = tcp_once();
	printf("net floors (no gpud), GB/s, medians of %d x %ld MiB:\n", REPS, mib);
	printf("   bare TCP stream over loopback, 4 MiB writes        %6.2f\n",
	       harness_median(v, REPS));
	char url[128];
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", 30000 + (int)(getpid() % 20000));
	printf("   nng REQ/REP tcp:// loopback, 4 MiB requests        %6.2f\n", nng_gbs(url));
	snprintf(url, sizeof(url), "ipc:///tmp/gpud-net-floor-%d.sock", (int)getpid());
	printf("   nng REQ/REP ipc://, 4 MiB requests                 %6.2f\n", nng_gbs(url));
	unlink(url + strlen("ipc://"));
	static const char *names[] = {"AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305"};
	for (int i = 0; i < 3; i++)
		printf("   %s %-17s 16 KiB records, one core %6.2f\n", MBEDTLS_VERSION_STRING_FULL,
		       names[i], aead_gbs(i));
	free(buf);
	return 0;
}
