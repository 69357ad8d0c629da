/*
 * tests/fuzz/fuzz_request.c — libFuzzer target over gpud's request decoder and
 * dispatcher: a real gpud_server on the cpu backend (no listeners), fed
 * through server_inject, the same path nng's messages take.
 *
 * Each input is one or more messages for one pseudo connection, after an
 * automatic hello (so every verb is reachable): the input is split at the
 * 4-byte markers "\xffGPM" (the message before it is answered before the
 * next goes in) and "\xffGPA" (the next goes in at once: requests overlap,
 * so a cancel can find a run in flight); none: the whole input is one
 * message; "\xffGPR" (what follows is an entry for the connection's request
 * ring: [u32 req_kind][u32 req_len][the request area], taken the way gpud
 * takes a client's ring entries, answered into the ring); "\xffGPW" (what
 * follows is a packet of the tenant worker channel, decoded as gpud and a
 * worker decode each other's, daemon/backend/tenant_worker/msg.h); "\xffGPF"
 * (what follows is a file copy of the region socket, proto/shm.h
 * shm_file_io, zero-padded, handed to region_io_start as daemon/regions.c
 * does: region 0 names the connection's one region of 64 KiB, made at its
 * first copy, and the file is a memfd of 128 KiB). An input that starts
 * with "\xffGPH" gets no automatic hello: its first request may carry the
 * hello (Request.carried_hello). The connection
 * closes right after the last message goes in,
 * with whatever is still in flight (cancelled by the close), and everything
 * it made must go; LSan reports what does not. Quotas bound what one input
 * may allocate. Every input is also read as the first bytes a peer sent to
 * a TLS listener (proto/peek.h, auth_handshake_cause: what gpud logs for a
 * failed handshake): the phrase must end within its buffer. gpud's text log
 * (at level debug, into a memfd: log_set_fd) must hold, after every input,
 * whole lines only, none with a control character or a byte that is not
 * UTF-8 (daemon/log.h): whatever the input sent, no log line is forged.
 *
 *   make fuzz                     # builds with clang, runs FUZZ_SECONDS (60)
 *   build/fuzz/tests/fuzz_request CORPUS_DIR -max_total_time=60
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/auth.h"
#include "daemon/backend/tenant_worker/msg.h"
#include "daemon/log.h"
#include "daemon/region_io.h"
#include "daemon/ring.h"
#include "daemon/server.h"
#include "proto/peek.h"
#include "proto/wire.h"

static uv_loop_t loop;
static gpud_server srv;
static gpud_config cfg;
static int outstanding; /* injected, not yet answered */
static uint64_t requests, nonzero_replies;
static int log_fd = -1; /* gpud's log records, checked and emptied after each input */

static void on_reply(void *arg, nng_msg *reply)
{
	(void)arg;
	outstanding--;
	requests++;
	if (reply) {
		const uint8_t *hdr;
		size_t hlen, plen;
		uint8_t *pl;
		char err[128];
		/* Every reply must be a well-formed Response. */
		if (wire_split(reply, &hdr, &hlen, &pl, &plen, err, sizeof(err)) != 0)
			abort();
		Gpud__Response *r = gpud__response__unpack(NULL, hlen, hdr);
		if (r == NULL)
			abort();
		nonzero_replies += r->code != 0;
		/* Every error says what was wrong. */
		if (r->code != 0 && (r->message == NULL || r->message[0] == '\0'))
			abort();
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(reply);
	}
}

static void inject(uint32_t pipe, const uint8_t *d, size_t n)
{
	nng_msg *m;
	if (nng_msg_alloc(&m, 0) != 0 || nng_msg_append(m, d, n) != 0)
		abort();
	outstanding++;
	if (server_inject(&srv, pipe, (int64_t)getuid(), m, on_reply, NULL) != 0)
		abort();
}

static void drain(void)
{
	while (outstanding > 0)
		uv_run(&loop, UV_RUN_ONCE);
}

static void init(void)
{
	char err[512];
	config_defaults(&cfg);
	snprintf(cfg.backend, sizeof(cfg.backend), "cpu");
	cfg.cpu_threads = 2;
	cfg.cpu_devices = 3; /* placement, pinning and peer copies are fuzzed too */
	cfg.contexts = 1;
	cfg.max_message_size = 1 << 20;
	cfg.quota.device_bytes = 64u << 20;
	cfg.host_memory_limit = 512u << 20; /* not the machine's: the same budget everywhere */
	cfg.quota.kept_buffers = 64;
	cfg.quota.custom_kernels = 4; /* the corpus registers more: evictions */
	/* Every record, into a file of its own (stderr stays libFuzzer's). */
	if ((log_fd = memfd_create("gpud-fuzz-log", MFD_CLOEXEC)) < 0)
		abort();
	log_set_fd(log_fd);
	log_set_format(LOG_FORMAT_TEXT);
	log_set_level(LOG_DEBUG);
	uv_loop_init(&loop);
	if (server_start(&srv, &loop, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_request: %s\n", err);
		abort();
	}
}

/* Request{version 1, id 1, hello{}} framed. */
static const uint8_t hello_msg[] = {6, 0, 0, 0, 0x08, 0x01, 0x10, 0x01, 0x52, 0x00};

/* The pseudo connection's request ring, made at its first ring entry. */
enum { RING_CAP = GPUD_RING_MIN_CAP, RING_SIZE = GPUD_RING_HDR + 2 * RING_CAP };
static uint8_t *ring_mem;
static uint32_t ring_seq;

/*
 * A ring entry: [u32 kind][u32 len][the request area's bytes], written into
 * the connection's ring as a client would (the area first, then req_seq),
 * then gpud looks and answers into the ring; waits for the answer. Every
 * reply chunk must lie within the area and the reply, and a reply that fits
 * in one chunk must be a Response that says what was wrong.
 */
/* A tenant worker channel packet: decoded, and a decoded one re-sized. */
static void worker_packet(const uint8_t *d, size_t n)
{
	static tw_msg m;
	char err[256];
	if (tw_msg_decode(d, n, &m, err, sizeof(err)) == 0) {
		size_t want = tw_msg_size(m.type, m.type == TW_RUN ? m.u.run.nargs : 0);
		if (want != n)
			abort(); /* the decoder took a packet of the wrong size */
		if (m.type == TW_RUN && (m.u.run.slot >= TW_SLOTS || m.u.run.nargs > TW_MAX_ARGS))
			abort();
	} else if (err[0] == '\0') {
		abort(); /* a refusal must say why */
	}
}

/* A file copy (region_io_start), waited for; its answer must fit what was asked. */
enum { COPY_REGION = 1 << 16, COPY_FILE = 1 << 17 };
static int copy_fd = -1, copy_done;
static dstatus copy_st;
static uint64_t copy_moved;

static void copy_answer(void *arg, dstatus st, uint64_t moved, const char *why)
{
	(void)arg;
	if (st != ST_OK && (why == NULL || why[0] == '\0'))
		abort(); /* a refusal must say why */
	copy_done = 1;
	copy_st = st;
	copy_moved = moved;
}

static void file_copy(uint32_t pipe, const uint8_t *d, size_t n)
{
	gpud_session *s = sessions_get(&srv.buffers, pipe, 0);
	if (s == NULL)
		return;
	if (s->regions == NULL) {
		host_region *r = calloc(1, sizeof(*r));
		void *base = mmap(NULL, COPY_REGION, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (r == NULL || base == MAP_FAILED)
			abort();
		*r = (host_region){.base = base, .size = COPY_REGION, .refs = 1};
		regions_add(&srv.regions, s, r);
	}
	if (copy_fd < 0 && (copy_fd = memfd_create("gpud-fuzz-file", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(copy_fd, COPY_FILE) != 0) /* a write may have grown it */
		abort();
	shm_file_io m;
	memset(&m, 0, sizeof(m));
	memcpy(&m, d, n < sizeof(m) ? n : sizeof(m));
	if (m.region == 0)
		m.region = s->regions->id;
	int fd = dup(copy_fd);
	if (fd < 0)
		abort();
	copy_done = 0;
	region_io_start(&srv.regions, s->tenant, regions_get(&srv.regions, s, m.region), &m, fd,
			copy_answer, NULL);
	while (!copy_done)
		uv_run(&loop, UV_RUN_ONCE);
	if (copy_moved > m.length || (copy_st == ST_OK && copy_moved != m.length))
		abort(); /* more than asked, or less called done */
}

static void ring_write(uint32_t pipe, const uint8_t *d, size_t n)
{
	gpud_session *s = sessions_get(&srv.buffers, pipe, 0);
	char err[256];
	if (s == NULL || n < 8)
		return;
	if (s->ring == NULL) {
		if (ring_mem == NULL && (ring_mem = aligned_alloc(4096, RING_SIZE)) == NULL)
			abort();
		memset(ring_mem, 0, RING_SIZE);
		ring_seq = 0;
		if (ring_attach(&srv.rings, s, ring_mem, RING_SIZE, 0, -1, err, sizeof(err)) != 0)
			abort();
	}
	gpud_ring_hdr *h = (gpud_ring_hdr *)ring_mem;
	uint32_t kind, len, before = h->rep_seq;
	memcpy(&kind, d, 4);
	memcpy(&len, d + 4, 4);
	n -= 8;
	memcpy(ring_mem + GPUD_RING_HDR, d + 8, n < RING_CAP ? n : RING_CAP);
	h->req_kind = kind;
	h->req_len = len;
	h->req_seq = ++ring_seq;
	ring_poll_session(s);
	while (h->rep_seq == before)
		uv_run(&loop, UV_RUN_ONCE);
	if (h->rep_len > RING_CAP || h->rep_off > h->rep_total ||
	    h->rep_len > h->rep_total - h->rep_off || h->rep_for != ring_seq)
		abort();
	if (h->rep_off == 0 && h->rep_len == h->rep_total) {
		nng_msg *m;
		if (nng_msg_alloc(&m, 0) != 0 ||
		    nng_msg_append(m, ring_mem + GPUD_RING_HDR + RING_CAP, h->rep_len) != 0)
			abort();
		outstanding++;
		on_reply(NULL, m); /* the same checks as a socket's reply */
	}
}

/*
 * The log since the last look: whole lines, each byte printable ASCII or part
 * of a UTF-8 sequence (RFC 3629) that is no C1 control: a second reading of
 * daemon/log.c's rule, written apart from it. Then the file is emptied.
 */
static void check_log(void)
{
	static uint8_t buf[1 << 16];
	off_t end = lseek(log_fd, 0, SEEK_CUR), at = 0;
	uint8_t last = '\n';
	size_t carry = 0; /* bytes of a sequence that straddles two reads */

	while (at < end) {
		ssize_t n = pread(log_fd, buf + carry, sizeof(buf) - carry, at);
		if (n <= 0)
			abort();
		at += n;
		size_t len = carry + (size_t)n, i = 0;
		while (i < len) {
			uint8_t c = buf[i];
			size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
			if (i + k > len && at < end)
				break; /* finish it with the next read */
			if (c < 0x80) {
				if ((c < 0x20 && c != '\n') || c == 0x7f)
					abort(); /* a raw control character in a log line */
			} else {
				if (c < 0xc2 || c > 0xf4 || i + k > len)
					abort(); /* not UTF-8 */
				for (size_t j = 1; j < k; j++)
					if ((buf[i + j] & 0xc0) != 0x80)
						abort();
				if ((c == 0xe0 && buf[i + 1] < 0xa0) ||
				    (c == 0xed && buf[i + 1] > 0x9f) ||
				    (c == 0xf0 && buf[i + 1] < 0x90) ||
				    (c == 0xf4 && buf[i + 1] > 0x8f))
					abort(); /* overlong, a surrogate, past U+10FFFF */
				if (c == 0xc2 && buf[i + 1] < 0xa0)
					abort(); /* a C1 control */
			}
			last = buf[i + k - 1];
			i += k;
		}
		carry = len - i;
		memmove(buf, buf + i, carry);
	}
	if (carry != 0 || last != '\n')
		abort(); /* a record that is not a whole line */
	if (ftruncate(log_fd, 0) != 0 || lseek(log_fd, 0, SEEK_SET) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint32_t pipe = 1000;
	static int ready;
	if (!ready) {
		init();
		ready = 1;
	}
	/* the input as a peer's first bytes at a TLS port (the alert: its 7th byte) */
	char cause[600];
	peek_describe(data, size, cause, sizeof(cause));
	auth_handshake_cause(size > 1 ? -(int)(data[0] | data[1] << 8) : -0x7900, data,
			     size < 8 ? size : 8, size > 6 ? data[6] : -1, 0, cause, sizeof(cause));
	if (memchr(cause, '\0', sizeof(cause)) == NULL)
		abort();
	pipe++;
	if (size >= 4 && memcmp(data, "\xffGPH", 4) == 0) { /* no hello: the first may carry it */
		data += 4;
		size -= 4;
	} else {
		inject(pipe, hello_msg, sizeof(hello_msg));
		drain();
	}
	size_t start = 0;
	int in_ring = 0;   /* the segment from start on is a ring entry */
	int in_worker = 0; /* ... or a tenant worker packet */
	int in_copy = 0;   /* ... or a file copy */
	for (size_t i = 0; i + 4 <= size; i++) {
		int wait = memcmp(data + i, "\xffGPM", 4) == 0;
		int ring = memcmp(data + i, "\xffGPR", 4) == 0;
		int worker = memcmp(data + i, "\xffGPW", 4) == 0;
		int copy = memcmp(data + i, "\xffGPF", 4) == 0;
		if (wait || ring || worker || copy || memcmp(data + i, "\xffGPA", 4) == 0) {
			if (in_copy) {
				file_copy(pipe, data + start, i - start);
			} else if (in_worker) {
				worker_packet(data + start, i - start);
			} else if (in_ring) {
				ring_write(pipe, data + start, i - start);
			} else {
				inject(pipe, data + start, i - start);
				if (wait || ring)
					drain();
			}
			in_ring = ring;
			in_worker = worker;
			in_copy = copy;
			start = i + 4;
			i += 3;
		}
	}
	if (in_copy)
		file_copy(pipe, data + start, size - start);
	else if (in_worker)
		worker_packet(data + start, size - start);
	else if (in_ring)
		ring_write(pipe, data + start, size - start);
	else
		inject(pipe, data + start, size - start);
	server_inject_close(&srv, pipe); /* what is in flight is cancelled */
	drain();
	/* Kept buffers outlive the connection; free them too, as a client would. */
	gpud_tenant *tn, *tmp;
	HASH_ITER(hh, srv.buffers.tenants, tn, tmp)
	{
		while (tn->kept)
			buffers_release(&srv.buffers, tn->kept);
	}
	registry_fini(&srv.registry); /* and kernels it registered */
	/* Work handed to threads (a free, a copy) finishes before the next input. */
	while (uv_run(&loop, UV_RUN_NOWAIT) != 0 && srv.stats.in_flight > 0)
		;
	check_log();
	return 0;
}
