/*
 * bench/nng_fresh.c — the floor under a fresh gpuctl: what any fresh process
 * pays that reaches a peer over nng with the nng gpuctl links (the client
 * build, no PSA crypto start), with nothing of gpud's in it: no protobuf, no
 * hello, no gpud behind the socket. bench/fresh_gpuctl.py times its modes
 * beside `true` and `gpuctl status` in the same rounds.
 *
 *   nng_fresh serve URL   a REP socket on URL answering every request with
 *                         itself (an echo); prints "ready" once listening and
 *                         runs until stdin closes or it is killed
 *   nng_fresh start URL   a REQ socket opened (nng's start: its threads) and
 *                         the process gone
 *   nng_fresh dial URL    + a blocking dial of URL (connect, nng's handshake)
 *   nng_fresh ping URL    + one 16-byte request to the echo and its answer
 *   nng_fresh ping2 URL   + a second one (gpuctl's hello, then its request)
 *
 * Like gpuctl, the client modes exit without closing the socket.
 */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The client build's nng calls this in place of psa_crypto_init
 * (Makefile's NNG_CLIENT_LAZY_A); client/endpoint/tls.c defines it for
 * libgpud-client. No mode here sets up TLS, so PSA never starts, as in a
 * gpuctl that speaks ipc:// under mbed TLS 2.28.
 */
int client_psa_deferred(void);
int client_psa_deferred(void)
{
	return 0;
}

static int fail(const char *what, int rv)
{
	fprintf(stderr, "nng_fresh: %s: %s\n", what, nng_strerror(rv));
	return 1;
}

static void *stdin_watch(void *arg)
{
	char b[64];
	while (read(0, b, sizeof(b)) > 0)
		;
	exit(*(int *)arg);
}

static int serve(const char *url)
{
	nng_socket s;
	int rv, zero = 0;
	pthread_t t;
	if ((rv = nng_rep0_open(&s)) != 0)
		return fail("nng_rep0_open", rv);
	if ((rv = nng_listen(s, url, NULL, 0)) != 0)
		return fail(url, rv);
	if (pthread_create(&t, NULL, stdin_watch, &zero) != 0)
		return fail("pthread_create", NNG_ENOMEM);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		nng_msg *m;
		if ((rv = nng_recvmsg(s, &m, 0)) != 0)
			return fail("recv", rv);
		if ((rv = nng_sendmsg(s, m, 0)) != 0) {
			nng_msg_free(m);
			return fail("send", rv);
		}
	}
}

int main(int argc, char **argv)
{
	static const char *const modes[] = {"serve", "start", "dial", "ping", "ping2"};
	int mode = -1;
	for (int i = 0; argc == 3 && i < (int)(sizeof(modes) / sizeof(modes[0])); i++)
		if (strcmp(argv[1], modes[i]) == 0)
			mode = i;
	if (mode < 0) {
		fprintf(stderr, "usage: nng_fresh serve|start|dial|ping|ping2 URL\n");
		return 2;
	}
	const char *url = argv[2];
	if (mode == 0)
		return serve(url);
	nng_socket s;
	int rv;
	if ((rv = nng_req0_open(&s)) != 0)
		return fail("nng_req0_open", rv);
	if (mode == 1)
		return 0;
	if ((rv = nng_dial(s, url, NULL, 0)) != 0)
		return fail(url, rv);
	if (mode == 2)
		return 0;
	for (int k = 2; k < mode; k++) {
		char req[16] = "nng_fresh ping.", rep[32];
		size_t n = sizeof(rep);
		if ((rv = nng_send(s, req, sizeof(req), 0)) != 0)
			return fail("send", rv);
		if ((rv = nng_recv(s, rep, &n, 0)) != 0)
			return fail("recv", rv);
		if (n != sizeof(req) || memcmp(req, rep, n) != 0) {
			fprintf(stderr, "nng_fresh: the echo answered %zu bytes, not the 16 sent\n",
				n);
			return 1;
		}
	}
	return 0;
}
