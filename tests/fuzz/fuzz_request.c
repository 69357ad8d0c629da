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
 * message. The connection closes right after the last message goes in,
 * with whatever is still in flight (cancelled by the close), and everything
 * it made must go; LSan reports what does not. Quotas bound what one input
 * may allocate.
 *
 *   make fuzz                     # builds with clang, runs FUZZ_SECONDS (60)
 *   build/fuzz/tests/fuzz_request CORPUS_DIR -max_total_time=60
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/server.h"
#include "proto/wire.h"

static uv_loop_t loop;
static gpud_server srv;
static gpud_config cfg;
static int outstanding; /* injected, not yet answered */
static uint64_t requests, nonzero_replies;

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
	cfg.contexts = 1;
	cfg.max_message_size = 1 << 20;
	cfg.quota.device_bytes = 64u << 20;
	cfg.quota.kept_buffers = 64;
	log_set_level(LOG_ERROR);
	uv_loop_init(&loop);
	if (server_start(&srv, &loop, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_request: %s\n", err);
		abort();
	}
}

/* Request{version 1, id 1, hello{}} framed. */
static const uint8_t hello_msg[] = {6, 0, 0, 0, 0x08, 0x01, 0x10, 0x01, 0x52, 0x00};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint32_t pipe = 1000;
	static int ready;
	if (!ready) {
		init();
		ready = 1;
	}
	pipe++;
	inject(pipe, hello_msg, sizeof(hello_msg));
	drain();
	size_t start = 0;
	for (size_t i = 0; i + 4 <= size; i++) {
		int wait = memcmp(data + i, "\xffGPM", 4) == 0;
		if (wait || memcmp(data + i, "\xffGPA", 4) == 0) {
			inject(pipe, data + start, i - start);
			if (wait)
				drain();
			start = i + 4;
			i += 3;
		}
	}
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
	return 0;
}
