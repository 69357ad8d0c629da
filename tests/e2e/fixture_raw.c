/*
 * tests/e2e/fixture_raw.c — the end-to-end suite's requests made and read by
 * hand: protobuf written field by field, frames, replies parsed, a plain nng
 * REQ socket (hello included), shared-memory sends over the Unix socket,
 * requests from a separate process, and the check that a fresh client still
 * works afterwards. See e2e.h. Called from the test's own thread (and the
 * child processes it forks).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/e2e/e2e.h"

#include <nng/protocol/reqrep0/req.h>

/* --- raw wire messages (a plain nng REQ socket and hand-made protobuf) --------------------- */

void pb_varint(pb *p, uint64_t v)
{
	while (v >= 0x80) {
		p->b[p->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p->b[p->n++] = (uint8_t)v;
}

void pb_key(pb *p, unsigned field, unsigned wiretype)
{
	pb_varint(p, (uint64_t)field << 3 | wiretype);
}

void pb_uint(pb *p, unsigned field, uint64_t v)
{
	pb_key(p, field, 0);
	pb_varint(p, v);
}

void pb_sub(pb *p, unsigned field, const pb *sub)
{
	pb_key(p, field, 2);
	pb_varint(p, sub->n);
	memcpy(p->b + p->n, sub->b, sub->n);
	p->n += sub->n;
}

/* Request{version, id, <body field> = body}. */
pb pb_request(uint32_t version, uint64_t id, unsigned body_field, const pb *body)
{
	pb p = {.n = 0};
	pb_uint(&p, 1, version);
	pb_uint(&p, 2, id);
	pb_sub(&p, body_field, body);
	return p;
}

/* [u32 LE header length][header][payload_len bytes of payload]; malloc'd. */
uint8_t *frame(const pb *hdr, const void *payload, size_t payload_len, size_t *total)
{
	*total = 4 + hdr->n + payload_len;
	uint8_t *m = malloc(*total);
	ck_assert_ptr_nonnull(m);
	m[0] = (uint8_t)hdr->n;
	m[1] = (uint8_t)(hdr->n >> 8);
	m[2] = (uint8_t)(hdr->n >> 16);
	m[3] = (uint8_t)(hdr->n >> 24);
	memcpy(m + 4, hdr->b, hdr->n);
	if (payload_len)
		memcpy(m + 4 + hdr->n, payload, payload_len);
	return m;
}

static int pb_read_varint(const uint8_t *b, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*i >= n)
			return -1;
		uint8_t c = b[(*i)++];
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/* Parses a framed Response by hand. 0, or -1 if it is not one. */
int parse_reply(const uint8_t *m, size_t len, raw_reply *r)
{
	memset(r, 0, sizeof(*r));
	if (len < 4)
		return -1;
	size_t hlen = (size_t)m[0] | (size_t)m[1] << 8 | (size_t)m[2] << 16 | (size_t)m[3] << 24;
	if (hlen > len - 4)
		return -1;
	const uint8_t *b = m + 4;
	size_t i = 0;
	while (i < hlen) {
		uint64_t key, v;
		if (pb_read_varint(b, hlen, &i, &key) != 0)
			return -1;
		unsigned field = (unsigned)(key >> 3), wt = (unsigned)(key & 7);
		switch (wt) {
		case 0:
			if (pb_read_varint(b, hlen, &i, &v) != 0)
				return -1;
			if (field == 1)
				r->version = v;
			else if (field == 2)
				r->id = v;
			else if (field == 3)
				r->code = v;
			break;
		case 2:
			if (pb_read_varint(b, hlen, &i, &v) != 0 || v > hlen - i)
				return -1;
			if (field == 4)
				snprintf(r->message, sizeof(r->message), "%.*s", (int)v,
					 (const char *)b + i);
			else if (field >= 10) {
				r->body_field = (int)field;
				r->body_len = v < sizeof(r->body) ? (size_t)v : sizeof(r->body);
				memcpy(r->body, b + i, r->body_len);
			}
			i += (size_t)v;
			break;
		case 1:
			i += 8;
			break;
		case 5:
			i += 4;
			break;
		default:
			return -1;
		}
	}
	return i == hlen ? 0 : -1;
}

/* Field `field` of a message: a length-delimited one (*p, *n) or a varint
 * (*v). 0 if found, -1 if not. */
int pb_find(const uint8_t *b, size_t n, unsigned field, const uint8_t **p, size_t *len, uint64_t *v)
{
	size_t i = 0;
	while (i < n) {
		uint64_t key, x;
		if (pb_read_varint(b, n, &i, &key) != 0)
			return -1;
		unsigned wt = (unsigned)(key & 7);
		if (wt == 0) {
			if (pb_read_varint(b, n, &i, &x) != 0)
				return -1;
			if ((key >> 3) == field && v)
				return *v = x, 0;
		} else if (wt == 2) {
			if (pb_read_varint(b, n, &i, &x) != 0 || x > n - i)
				return -1;
			if ((key >> 3) == field && p)
				return *p = b + i, *len = (size_t)x, 0;
			i += (size_t)x;
		} else if (wt == 1) {
			i += 8;
		} else if (wt == 5) {
			i += 4;
		} else {
			return -1;
		}
	}
	return -1;
}

uint64_t raw_alloc_f64(nng_socket s, uint64_t n)
{
	pb alloc = {.n = 0}, shape = {.n = 0};
	pb_uint(&alloc, 1, 2);
	pb_varint(&shape, n);
	pb_sub(&alloc, 2, &shape);
	raw_reply r = raw_body_on(s, 3, 11, &alloc, NULL, 0);
	ck_assert_uint_eq(r.code, ST_OK);
	const uint8_t *p;
	size_t bn;
	uint64_t h = 0;
	ck_assert(pb_find(r.body, r.body_len, 1, &p, &bn, NULL) == 0); /* buffer */
	ck_assert(pb_find(p, bn, 1, NULL, NULL, &h) == 0);             /* handle */
	return h;
}

void raw_hello(nng_socket s, char *path, size_t pathlen, uint8_t key[16])
{
	pb empty = {.n = 0};
	raw_reply r = raw_body_on(s, 1, 10, &empty, NULL, 0);
	ck_assert_uint_eq(r.code, ST_OK);
	const uint8_t *p;
	size_t n;
	ck_assert_msg(pb_find(r.body, r.body_len, 6, &p, &n, NULL) == 0 && n < pathlen,
		      "hello on ipc:// should name the region socket");
	snprintf(path, pathlen, "%.*s", (int)n, (const char *)p);
	ck_assert_msg(pb_find(r.body, r.body_len, 7, &p, &n, NULL) == 0 && n == 16,
		      "hello should carry a 16-byte session key");
	memcpy(key, p, 16);
}

t_shm_reply shm_send(const char *path, const uint8_t *key, uint64_t size, uint32_t flags,
		     const int *fds, int nfds, size_t msg_len)
{
	t_shm_register msg;
	memset(&msg, 0, sizeof(msg));
	memcpy(msg.magic, "gpudshm1", 8);
	memcpy(msg.key, key, 16);
	msg.size = size;
	msg.flags = flags;
	ck_assert_uint_le(msg_len, sizeof(msg));
	return shm_send_bytes(path, &msg, msg_len, fds, nfds);
}

t_shm_reply shm_send_bytes(const char *path, const void *bytes, size_t len, const int *fds,
			   int nfds)
{
	t_shm_reply rep;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memset(&rep, 0, sizeof(rep));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_msg(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s: %s", path,
		      strerror(errno));
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(8 * sizeof(int))];
	} cbuf;
	memset(&cbuf, 0, sizeof(cbuf));
	struct iovec iov = {.iov_base = (void *)bytes, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ck_assert_int_le(nfds, 8);
	if (nfds > 0) {
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	ck_assert_int_eq(sendmsg(s, &mh, MSG_NOSIGNAL), (ssize_t)len);
	struct timeval tv = {.tv_sec = 30};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (recv(s, &rep, sizeof(rep), 0) != (ssize_t)sizeof(rep))
		rep.status = -1;
	close(s);
	rep.message[sizeof(rep.message) - 1] = '\0';
	return rep;
}

/* A plain hello on s (tenant assigned; nothing checked beyond OK). */
void raw_say_hello(nng_socket s)
{
	pb empty = {.n = 0};
	raw_reply r = raw_body_on(s, 1, 10, &empty, NULL, 0);
	ck_assert_msg(r.code == ST_OK, "raw hello: %" PRIu64 " %s", r.code, r.message);
}

nng_socket raw_open(int timeout_ms)
{
	nng_socket s;
	int rv;
	ck_assert_msg((rv = nng_req0_open(&s)) == 0, "nng_req0_open: %s", nng_strerror(rv));
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, timeout_ms);
	rv = nng_dial(s, e2e_gpud.url, NULL, 0);
	ck_assert_msg(rv == 0, "nng_dial %s: %s", e2e_gpud.url, nng_strerror(rv));
	return s;
}

/*
 * Sends len bytes as one message on a fresh REQ socket and waits up to
 * timeout_ms for the reply. Returns 0 with *r filled, or the nng error of the
 * receive (NNG_ETIMEDOUT when the daemon dropped the message).
 */
int raw_call(const void *msg, size_t len, int timeout_ms, raw_reply *r)
{
	nng_socket s = raw_open(timeout_ms);
	nng_msg *m;
	int rv;

	raw_say_hello(s); /* only hello and status are served before it */

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
	ck_assert_int_eq(nng_msg_append(m, msg, len), 0);
	if ((rv = nng_sendmsg(s, m, 0)) != 0) {
		nng_msg_free(m);
		nng_close(s);
		return rv;
	}
	rv = nng_recvmsg(s, &m, 0);
	nng_close(s);
	if (rv != 0)
		return rv;
	int prv = parse_reply(nng_msg_body(m), nng_msg_len(m), r);
	size_t mlen = nng_msg_len(m);
	nng_msg_free(m);
	ck_assert_msg(prv == 0, "the daemon's %zu-byte reply is not a framed Response", mlen);
	return 0;
}

/* One request on an open REQ socket (its connection is one session). */
void raw_call_on(nng_socket s, const void *msg, size_t len, raw_reply *r)
{
	nng_msg *m;
	int rv;
	ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
	ck_assert_int_eq(nng_msg_append(m, msg, len), 0);
	ck_assert_msg((rv = nng_sendmsg(s, m, 0)) == 0, "send: %s", nng_strerror(rv));
	ck_assert_msg((rv = nng_recvmsg(s, &m, 0)) == 0, "recv: %s", nng_strerror(rv));
	ck_assert_msg(parse_reply(nng_msg_body(m), nng_msg_len(m), r) == 0,
		      "the reply is not a framed Response");
	nng_msg_free(m);
}

/* Request{version, id, <field> = body} + payload on s; the reply. */
raw_reply raw_body_on(nng_socket s, uint64_t id, unsigned field, const pb *body,
		      const void *payload, size_t plen)
{
	pb hdr = pb_request(WIRE_VERSION, id, field, body);
	size_t len;
	uint8_t *m = frame(&hdr, payload, plen, &len);
	raw_reply r;
	raw_call_on(s, m, len, &r);
	free(m);
	return r;
}

/*
 * The same in a helper process (this program run again with --raw-send), for
 * messages the daemon may drop: nng 1.5's nng_close() of a REQ socket whose
 * peer dropped the connection in the middle of a large send can block forever
 * (the reaper waits in req0_pipe_stop), so the helper exits without closing.
 * Returns 0 with *r filled, or a non-zero nng error.
 */
int raw_call_isolated(const void *msg, size_t len, int timeout_ms, raw_reply *r)
{
	char msgpath[700], outpath[700], tbuf[32], how[128];
	static char out[4096];
	FILE *f;

	memset(r, 0, sizeof(*r));
	path_in_dir(msgpath, sizeof(msgpath), "raw.msg");
	path_in_dir(outpath, sizeof(outpath), "raw.out");
	f = fopen(msgpath, "wb");
	ck_assert_msg(f != NULL, "cannot create %s", msgpath);
	ck_assert_uint_eq(fwrite(msg, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(tbuf, sizeof(tbuf), "%d", timeout_ms);

	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		execl(self_path, self_path, "--raw-send", e2e_gpud.url, msgpath, tbuf,
		      (char *)NULL);
		_exit(127);
	}
	int st;
	if (harness_wait_pid(pid, timeout_ms / 1000.0 + 20.0, &st) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("the --raw-send helper did not finish within %d ms + 20 s",
			     timeout_ms);
	}
	harness_describe_wait(st, how, sizeof(how));
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the --raw-send helper %s", how);
	harness_read_text(outpath, out, sizeof(out));
	unlink(msgpath);
	unlink(outpath);
	int err;
	if (sscanf(out, "error %d", &err) == 1)
		return err;
	char *nl = strchr(out, '\n');
	ck_assert_msg(nl != NULL && sscanf(out, "reply %" SCNu64 " %" SCNu64 " %" SCNu64, &r->code,
					   &r->id, &r->version) == 3,
		      "the --raw-send helper said '%s'", out);
	snprintf(r->message, sizeof(r->message), "%s", nl + 1);
	return 0;
}

/* main() with --raw-send URL FILE TIMEOUT_MS: sends FILE as one message. */
int raw_send_main(const char *u, const char *path, int timeout_ms)
{
	static unsigned char buf[8 << 20];
	FILE *f = fopen(path, "rb");
	nng_socket s;
	nng_msg *m;
	raw_reply r;
	int rv;

	if (f == NULL)
		return 2;
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if ((rv = nng_req0_open(&s)) != 0) {
		printf("error %d\n", rv);
		return 0;
	}
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, timeout_ms);
	/*
	 * Never redial: gpud drops this connection on purpose, and a redial cut
	 * short by the _exit below aborts an SP negotiation, after which nng
	 * 1.5's listener accepts no more connections (nng issue #1518, fixed in
	 * 1.6.0; Debian 12 ships 1.5.2): every later test would hang in hello.
	 */
	nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 3600 * 1000);
	nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 3600 * 1000);
	if ((rv = nng_dial(s, u, NULL, 0)) != 0 || (rv = nng_msg_alloc(&m, 0)) != 0 ||
	    (rv = nng_msg_append(m, buf, len)) != 0) {
		printf("error %d\n", rv);
		fflush(stdout);
		_exit(0);
	}
	if ((rv = nng_sendmsg(s, m, 0)) == 0)
		rv = nng_recvmsg(s, &m, 0);
	if (rv != 0)
		printf("error %d\n", rv);
	else if (parse_reply(nng_msg_body(m), nng_msg_len(m), &r) != 0)
		printf("garbage reply of %zu bytes\n", nng_msg_len(m));
	else
		printf("reply %" PRIu64 " %" PRIu64 " %" PRIu64 "\n%s", r.code, r.id, r.version,
		       r.message);
	fflush(stdout);
	_exit(0); /* no nng_close: see raw_call_isolated */
}

/* A raw call that must be answered with an error code and words in the message. */
void raw_expect(const void *msg, size_t len, uint64_t want_code, const char *words,
		const char *what)
{
	raw_reply r;
	int rv = raw_call(msg, len, 10000, &r);
	ck_assert_msg(rv == 0, "%s: no reply: %s", what, nng_strerror(rv));
	ck_assert_msg(r.code == want_code, "%s: reply code %" PRIu64 " ('%s'), expected %" PRIu64,
		      what, r.code, r.message, want_code);
	ck_assert_msg(r.version == WIRE_VERSION, "%s: reply version %" PRIu64, what, r.version);
	ck_assert_msg(strstr(r.message, words) != NULL, "%s: message '%s' does not mention '%s'",
		      what, r.message, words);
}

void assert_fresh_client_works(const char *after)
{
	gpud_client *c;
	gpud_daemon_status s;
	gpud_status st = gpud_connect(e2e_gpud.url, &c);
	ck_assert_msg(st == GPUD_OK, "after %s: a fresh client cannot connect: %s", after,
		      gpud_errmsg(c));
	gpud_set_timeout(c, 10000);
	st = gpud_status_get(c, &s);
	ck_assert_msg(st == GPUD_OK, "after %s: status on a fresh client: %s", after,
		      gpud_errmsg(c));
	gpud_close(c);
}
