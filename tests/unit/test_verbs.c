/*
 * tests/unit/test_verbs.c — the verbs through the server's injection hook
 * (server_inject, the path the fuzzer takes): a real gpud_server on the cpu
 * backend with no listeners, requests built and replies read here, one
 * pseudo connection per client. Checks values and messages, and that what a
 * connection made goes when it closes.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/metrics_text.h"
#include "daemon/server.h"
#include "proto/wire.h"
#include "tests/unit/suites.h"

static uv_loop_t loop;
static gpud_server srv;
static gpud_config cfg;
static uint64_t next_id = 1;

/* A reply, decoded, with a copy of its payload. */
typedef struct reply {
	Gpud__Response *r;
	uint8_t *payload;
	size_t len;
	int got;
} reply;

static void on_reply(void *arg, nng_msg *m)
{
	reply *out = arg;
	const uint8_t *hdr;
	uint8_t *pl;
	size_t hlen, plen;
	char err[128];

	out->got = 1;
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(wire_split(m, &hdr, &hlen, &pl, &plen, err, sizeof(err)), 0);
	out->r = gpud__response__unpack(NULL, hlen, hdr);
	ck_assert_ptr_nonnull(out->r);
	out->payload = malloc(plen ? plen : 1);
	memcpy(out->payload, pl, plen);
	out->len = plen;
	nng_msg_free(m);
}

static void reply_free(reply *rp)
{
	if (rp->r)
		gpud__response__free_unpacked(rp->r, NULL);
	free(rp->payload);
	memset(rp, 0, sizeof(*rp));
}

/* Sends q (+ payload) on connection pipe of a peer of user uid and turns
 * the loop until the reply. */
static reply call_as(int64_t uid, uint32_t pipe, Gpud__Request *q, const void *payload, size_t len)
{
	reply rp = {0};
	nng_msg *m;
	q->version = GPUD_PROTOCOL_VERSION;
	q->id = next_id++;
	ck_assert_int_eq(wire_pack(&m, &q->base, payload, len, NULL), 0);
	ck_assert_int_eq(server_inject(&srv, pipe, uid, m, on_reply, &rp), 0);
	while (!rp.got)
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_uint_eq(rp.r->id, q->id);
	return rp;
}

/* ... as this process's user. */
static reply call(uint32_t pipe, Gpud__Request *q, const void *payload, size_t len)
{
	return call_as((int64_t)getuid(), pipe, q, payload, len);
}

static void expect_error(reply *rp, Gpud__Status code, const char *words)
{
	ck_assert_msg(rp->r->code == code, "status %d, expected %d (%s)", rp->r->code, code,
		      rp->r->message);
	ck_assert_msg(strstr(rp->r->message, words) != NULL, "'%s' lacks '%s'", rp->r->message,
		      words);
	reply_free(rp);
}

static void hello(uint32_t pipe)
{
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__HelloRequest h = GPUD__HELLO_REQUEST__INIT;
	q.body_case = GPUD__REQUEST__BODY_HELLO;
	q.hello = &h;
	reply rp = call(pipe, &q, NULL, 0);
	ck_assert_int_eq(rp.r->code, GPUD__STATUS__STATUS_OK);
	ck_assert_str_eq(rp.r->hello->backend, "cpu");
	ck_assert_uint_eq(rp.r->hello->connection, pipe);
	ck_assert_uint_eq(rp.r->hello->max_message_size, cfg.max_message_size);
	ck_assert_uint_eq(rp.r->hello->message_size, 300000);
	reply_free(&rp);
}

/* A float64 vector uploaded with alloc; its handle. */
static uint64_t alloc_f64(uint32_t pipe, const double *v, uint64_t n)
{
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	a.dtype = GPUD__DTYPE__DTYPE_F64;
	a.n_shape = 1;
	a.shape = &n;
	a.with_data = 1;
	q.body_case = GPUD__REQUEST__BODY_ALLOC;
	q.alloc = &a;
	reply rp = call(pipe, &q, v, n * sizeof(double));
	ck_assert_msg(rp.r->code == 0, "%s", rp.r->message);
	uint64_t h = rp.r->alloc->buffer->handle;
	ck_assert_uint_ne(h, 0);
	reply_free(&rp);
	return h;
}

static reply download(uint32_t pipe, uint64_t h)
{
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	d.handle = h;
	q.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	q.download = &d;
	return call(pipe, &q, NULL, 0);
}

/* Status as connection pipe sees it (its tenant's own, once it said hello). */
static Gpud__StatusResponse *status_of(uint32_t pipe, reply *rp)
{
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__StatusRequest s = GPUD__STATUS_REQUEST__INIT;
	q.body_case = GPUD__REQUEST__BODY_STATUS;
	q.status = &s;
	*rp = call(pipe, &q, NULL, 0);
	ck_assert_int_eq(rp->r->code, 0);
	return rp->r->status;
}

/* run_slots 0: the backend's default */
static void start_server(int run_slots)
{
	char err[512];
	log_set_level(LOG_ERROR);
	config_defaults(&cfg);
	snprintf(cfg.backend, sizeof(cfg.backend), "cpu");
	cfg.cpu_threads = 2;
	cfg.run_slots = run_slots;
	cfg.max_message_size = 1 << 20;
	cfg.quota.device_bytes = 1 << 20;
	cfg.quota.message_size = 300000; /* hello tells the tenant */
	uv_loop_init(&loop);
	ck_assert_msg(server_start(&srv, &loop, &cfg, err, sizeof(err)) == 0, "%s", err);
}

static void setup(void)
{
	start_server(0);
}

static void teardown(void)
{
	server_shutdown(&srv);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(srv.exit_code, 0);
	uv_loop_close(&loop);
}

/* The server again with one run slot: a tenant's second run waits for its first. */
static void restart_with_one_slot(void)
{
	teardown();
	start_server(1);
}

START_TEST(test_hello_first)
{
	reply rp = download(7, 1);
	expect_error(&rp, GPUD__STATUS__STATUS_NO_SESSION, "send hello first");
	hello(7);
	rp = download(7, 1);
	expect_error(&rp, GPUD__STATUS__STATUS_NOT_FOUND,
		     "download: unknown handle 0000000000000001");
}
END_TEST

START_TEST(test_alloc_run_download_free)
{
	const double x[4] = {1.5, -2, 3.25, 8}, y[4] = {0.5, 4, -1.25, 2};
	hello(2);
	uint64_t hx = alloc_f64(2, x, 4), hy = alloc_f64(2, y, 4);

	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__Argument ax = GPUD__ARGUMENT__INIT, ay = GPUD__ARGUMENT__INIT;
	Gpud__Argument *args[] = {&ax, &ay};
	ax.name = "x";
	ax.value_case = GPUD__ARGUMENT__VALUE_BUFFER;
	ax.buffer = hx;
	ay.name = "y";
	ay.value_case = GPUD__ARGUMENT__VALUE_BUFFER;
	ay.buffer = hy;
	run.kernel = "sub";
	run.n_args = 2;
	run.args = args;
	q.body_case = GPUD__REQUEST__BODY_RUN;
	q.run = &run;
	reply rp = call(2, &q, NULL, 0);
	ck_assert_msg(rp.r->code == 0, "%s", rp.r->message);
	ck_assert_uint_eq(rp.r->run->n_outputs, 1);
	ck_assert_str_eq(rp.r->run->outputs[0]->name, "z");
	uint64_t hz = rp.r->run->outputs[0]->buffer->handle;
	reply_free(&rp);

	rp = download(2, hz);
	ck_assert_int_eq(rp.r->code, 0);
	ck_assert_uint_eq(rp.len, 4 * sizeof(double));
	const double *z = (const double *)rp.payload;
	for (int i = 0; i < 4; i++)
		ck_assert_double_eq(z[i], x[i] - y[i]);
	reply_free(&rp);

	/* The same run with return_outputs: the bytes come in the reply, nothing is kept. */
	run.return_outputs = 1;
	rp = call(2, &q, NULL, 0);
	ck_assert_int_eq(rp.r->code, 0);
	ck_assert_uint_eq(rp.r->run->outputs[0]->buffer->handle, 0);
	ck_assert_uint_eq(rp.len, 4 * sizeof(double));
	ck_assert_double_eq(((const double *)rp.payload)[3], 6);
	reply_free(&rp);

	/* Free is all or nothing. */
	Gpud__Request fq = GPUD__REQUEST__INIT;
	Gpud__FreeRequest f = GPUD__FREE_REQUEST__INIT;
	uint64_t hs[] = {hx, 12345, hy};
	f.n_handles = 3;
	f.handles = hs;
	fq.body_case = GPUD__REQUEST__BODY_FREE;
	fq.free = &f;
	rp = call(2, &fq, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_NOT_FOUND, "free: unknown handle 0000000000003039");
	Gpud__StatusResponse *st = status_of(2, &rp);
	ck_assert_uint_eq(st->buffers, 3);
	reply_free(&rp);
	hs[1] = hz;
	rp = call(2, &fq, NULL, 0);
	ck_assert_int_eq(rp.r->code, 0);
	reply_free(&rp);
	st = status_of(2, &rp);
	ck_assert_uint_eq(st->buffers, 0);
	ck_assert_uint_eq(st->bytes_in_use, 0);
	reply_free(&rp);
}
END_TEST

START_TEST(test_run_refusals)
{
	const double x[3] = {1, 2, 3};
	hello(3);
	uint64_t hx = alloc_f64(3, x, 3);
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__Argument ax = GPUD__ARGUMENT__INIT, ab = GPUD__ARGUMENT__INIT;
	Gpud__Scalar s = GPUD__SCALAR__INIT;
	Gpud__Argument *args[] = {&ax, &ab};
	ax.name = "x";
	ax.value_case = GPUD__ARGUMENT__VALUE_BUFFER;
	ax.buffer = hx;
	q.body_case = GPUD__REQUEST__BODY_RUN;
	q.run = &run;
	run.args = args;

	run.kernel = "no_such_kernel";
	reply rp = call(3, &q, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_UNKNOWN_KERNEL,
		     "run: unknown kernel 'no_such_kernel' (known: lombscargle, ");

	run.kernel = "histogram";
	run.n_args = 1;
	rp = call(3, &q, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_INVALID_ARGUMENT,
		     "histogram: missing argument 'range_min' (float64 scalar)");

	ab.name = "bins";
	ab.value_case = GPUD__ARGUMENT__VALUE_SCALAR;
	ab.scalar = &s;
	s.value_case = GPUD__SCALAR__VALUE_TEXT;
	s.text = "many";
	run.n_args = 2;
	rp = call(3, &q, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_INVALID_ARGUMENT,
		     "histogram: argument 'bins' must be an int64, got the text 'many': gpud reads "
		     "text only for dtype and word arguments; send the number itself");
	/* a number as text is not read as the number either (gpud_arg_text("bins", "10")) */
	s.text = "10";
	rp = call(3, &q, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_INVALID_ARGUMENT,
		     "histogram: argument 'bins' must be an int64, got the text '10': gpud reads "
		     "text only for dtype and word arguments; send the number itself");

	ab.name = "x";
	rp = call(3, &q, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_INVALID_ARGUMENT,
		     "histogram: argument 'x' given twice");

	/* The payload must be exactly what the inline arrays take. */
	run.kernel = "sum";
	run.n_args = 1;
	rp = call(3, &q, x, sizeof(x));
	expect_error(&rp, GPUD__STATUS__STATUS_INVALID_ARGUMENT,
		     "sum: the payload has 24 bytes but the inline arrays take 0");

	/* Over the device_bytes quota (1 MiB): gpud allocates nothing. */
	Gpud__Request aq = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	uint64_t n = 1 << 18;
	a.dtype = GPUD__DTYPE__DTYPE_F64;
	a.n_shape = 1;
	a.shape = &n;
	aq.body_case = GPUD__REQUEST__BODY_ALLOC;
	aq.alloc = &a;
	rp = call(3, &aq, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_QUOTA, "over the device_bytes quota of tenant");
	Gpud__StatusResponse *st = status_of(3, &rp);
	ck_assert_uint_eq(st->buffers, 1);
	reply_free(&rp);
}
END_TEST

/* A tenant's own kernel, registered, listed, run (the cpu backend refuses to
 * run custom code, after checking the arguments), removed. */
START_TEST(test_register_list_unregister)
{
	hello(4);
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__RegisterRequest reg = GPUD__REGISTER_REQUEST__INIT;
	reg.name = "twice";
	reg.kind = GPUD__REGISTER_REQUEST__KIND__KIND_ELEMENTWISE;
	reg.in_params = "float64 x";
	reg.out_params = "float64 z";
	reg.source = "z = 2 * x";
	q.body_case = GPUD__REQUEST__BODY_REGISTER;
	q.register_ = &reg;
	reply rp = call(4, &q, NULL, 0);
	ck_assert_msg(rp.r->code == 0, "%s", rp.r->message);
	reply_free(&rp);

	Gpud__Request kq = GPUD__REQUEST__INIT;
	Gpud__KernelsRequest k = GPUD__KERNELS_REQUEST__INIT;
	kq.body_case = GPUD__REQUEST__BODY_KERNELS;
	kq.kernels = &k;
	rp = call(4, &kq, NULL, 0);
	ck_assert_int_eq(rp.r->code, 0);
	size_t nb;
	kernel_list(&nb);
	ck_assert_uint_eq(rp.r->kernels->n_kernels, nb + 1);
	Gpud__KernelInfo *mine = rp.r->kernels->kernels[nb];
	ck_assert_str_eq(mine->name, "twice");
	ck_assert_str_eq(mine->doc, "custom elementwise kernel");
	ck_assert_uint_eq(mine->n_params, 2);
	reply_free(&rp);
	/* Another tenant's connection does not see it: pipe 5 is the same
	 * user here, so the same tenant; the count is the same. */

	const double x[2] = {1, 2};
	Gpud__Request rq = GPUD__REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__Argument ax = GPUD__ARGUMENT__INIT;
	Gpud__InlineArray ia = GPUD__INLINE_ARRAY__INIT;
	Gpud__Argument *args[] = {&ax};
	uint64_t two = 2;
	ia.dtype = GPUD__DTYPE__DTYPE_F64;
	ia.n_shape = 1;
	ia.shape = &two;
	ax.name = "x";
	ax.value_case = GPUD__ARGUMENT__VALUE_ARRAY;
	ax.array = &ia;
	run.kernel = "twice";
	run.n_args = 1;
	run.args = args;
	rq.body_case = GPUD__REQUEST__BODY_RUN;
	rq.run = &run;
	rp = call(4, &rq, x, sizeof(x));
	expect_error(&rp, GPUD__STATUS__STATUS_UNSUPPORTED,
		     "run twice: custom kernels need the cuda backend");

	Gpud__Request uq = GPUD__REQUEST__INIT;
	Gpud__UnregisterRequest un = GPUD__UNREGISTER_REQUEST__INIT;
	un.name = "twice";
	uq.body_case = GPUD__REQUEST__BODY_UNREGISTER;
	uq.unregister = &un;
	rp = call(4, &uq, NULL, 0);
	ck_assert_int_eq(rp.r->code, 0);
	reply_free(&rp);
	rp = call(4, &uq, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_UNKNOWN_KERNEL, "unregister: no kernel 'twice'");
	rp = call(4, &rq, x, sizeof(x));
	expect_error(&rp, GPUD__STATUS__STATUS_UNKNOWN_KERNEL, "unknown kernel 'twice'");
	/* The failed runs' inline arrays went with them. */
	Gpud__StatusResponse *st = status_of(4, &rp);
	ck_assert_uint_eq(st->buffers, 0);
	reply_free(&rp);
}
END_TEST

START_TEST(test_connection_close_releases)
{
	const double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	hello(6);
	alloc_f64(6, v, 8);
	alloc_f64(6, v, 4);
	reply rp;
	Gpud__StatusResponse *st = status_of(6, &rp);
	ck_assert_uint_eq(st->buffers, 2);
	ck_assert_uint_eq(st->bytes_in_use, 12 * sizeof(double));
	ck_assert_uint_eq(st->requests, 4); /* hello, 2 allocs, this status */
	reply_free(&rp);
	server_inject_close(&srv, 6);
	hello(5);
	st = status_of(5, &rp);
	ck_assert_uint_eq(st->buffers, 0);
	ck_assert_uint_eq(st->bytes_in_use, 0);
	ck_assert_uint_eq(st->in_flight, 1); /* this status */
	ck_assert_uint_eq(st->connections, 1);
	ck_assert_uint_ge(st->bytes_high_water, 12 * sizeof(double));
	reply_free(&rp);
}
END_TEST

/* hello as user uid on pipe: the tenant gpud names (the caller frees it). */
static char *hello_as(int64_t uid, uint32_t pipe)
{
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__HelloRequest h = GPUD__HELLO_REQUEST__INIT;
	q.body_case = GPUD__REQUEST__BODY_HELLO;
	q.hello = &h;
	reply rp = call_as(uid, pipe, &q, NULL, 0);
	ck_assert_msg(rp.r->code == 0, "%s", rp.r->message);
	char *name = strdup(rp.r->hello->tenant);
	reply_free(&rp);
	return name;
}

static const Gpud__Session *session_of(const Gpud__StatusResponse *st, uint32_t id)
{
	for (size_t i = 0; i < st->n_sessions; i++)
		if (st->sessions[i]->id == id)
			return st->sessions[i];
	return NULL;
}

/*
 * What status shows whom: two users' tenants, each seeing its own
 * connections, buffers and requests and nothing of the other's; a
 * connection before hello only version, protocol and devices; an
 * administrator everything.
 */
START_TEST(test_status_scopes)
{
	const double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	int64_t other = getuid() == 65534 ? 65533 : 65534;
	char *me = hello_as((int64_t)getuid(), 10);
	char *them = hello_as(other, 11);
	ck_assert_str_ne(me, them);
	alloc_f64(10, v, 8);
	alloc_f64(10, v, 8);
	Gpud__Request aq = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	uint64_t n = 3;
	a.dtype = GPUD__DTYPE__DTYPE_F64;
	a.n_shape = 1;
	a.shape = &n;
	a.with_data = 1;
	aq.body_case = GPUD__REQUEST__BODY_ALLOC;
	aq.alloc = &a;
	reply rp = call_as(other, 11, &aq, v, 3 * sizeof(double));
	ck_assert_msg(rp.r->code == 0, "%s", rp.r->message);
	reply_free(&rp);
	Gpud__Request dq = GPUD__REQUEST__INIT;
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	d.handle = 99;
	dq.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	dq.download = &d;
	rp = call_as(other, 11, &dq, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_NOT_FOUND, "unknown handle");

	/* the other tenant: its connection, buffer, requests; nothing of mine */
	Gpud__Request sq = GPUD__REQUEST__INIT;
	Gpud__StatusRequest s = GPUD__STATUS_REQUEST__INIT;
	sq.body_case = GPUD__REQUEST__BODY_STATUS;
	sq.status = &s;
	rp = call_as(other, 11, &sq, NULL, 0);
	Gpud__StatusResponse *st = rp.r->status;
	ck_assert_int_eq(st->scope, GPUD__STATUS_RESPONSE__SCOPE__SCOPE_TENANT);
	ck_assert_str_eq(st->tenant, them);
	ck_assert_uint_eq(st->connections, 1);
	ck_assert_uint_eq(st->n_sessions, 1);
	ck_assert_uint_eq(st->sessions[0]->id, 11);
	ck_assert_str_eq(st->sessions[0]->tenant, them);
	ck_assert_uint_eq(st->sessions[0]->buffers, 1);
	ck_assert_uint_eq(st->buffers, 1);
	ck_assert_uint_eq(st->bytes_in_use, 3 * sizeof(double));
	ck_assert_uint_eq(st->bytes_high_water, 3 * sizeof(double));
	ck_assert_uint_eq(st->requests, 4); /* hello, alloc, download, this status */
	ck_assert_uint_eq(st->errors, 1);
	ck_assert_uint_eq(st->in_flight, 1);
	ck_assert_uint_eq(st->n_devices, 1);
	ck_assert_uint_eq(st->devices[0]->buffers, 1);
	ck_assert_uint_eq(st->devices[0]->bytes_in_use, 3 * sizeof(double));
	ck_assert_uint_eq(st->protocol_version, GPUD_PROTOCOL_VERSION);
	reply_free(&rp);

	/* mine: two buffers, no error */
	st = status_of(10, &rp);
	ck_assert_int_eq(st->scope, GPUD__STATUS_RESPONSE__SCOPE__SCOPE_TENANT);
	ck_assert_str_eq(st->tenant, me);
	ck_assert_uint_eq(st->connections, 1);
	ck_assert_uint_eq(st->n_sessions, 1);
	ck_assert_ptr_null(session_of(st, 11));
	ck_assert_uint_eq(st->buffers, 2);
	ck_assert_uint_eq(st->bytes_in_use, 16 * sizeof(double));
	ck_assert_uint_eq(st->requests, 4); /* hello, 2 allocs, this status */
	ck_assert_uint_eq(st->errors, 0);
	ck_assert_uint_eq(st->devices[0]->buffers, 2);
	reply_free(&rp);

	/* before hello: what gpud is, nothing of what it does */
	st = status_of(12, &rp);
	ck_assert_int_eq(st->scope, GPUD__STATUS_RESPONSE__SCOPE__SCOPE_BEFORE_HELLO);
	ck_assert_str_eq(st->tenant, "");
	ck_assert_str_eq(st->server_version, GPUD_VERSION);
	ck_assert_uint_eq(st->protocol_version, GPUD_PROTOCOL_VERSION);
	ck_assert_str_eq(st->backend, "cpu");
	ck_assert_uint_eq(st->n_devices, 1);
	ck_assert_str_ne(st->devices[0]->name, "");
	ck_assert_uint_eq(st->devices[0]->buffers, 0);
	ck_assert_uint_eq(st->devices[0]->bytes_in_use, 0);
	ck_assert_uint_eq(st->devices[0]->slots, 0);
	ck_assert_uint_eq(st->n_sessions, 0);
	ck_assert_uint_eq(st->connections, 0);
	ck_assert_uint_eq(st->buffers, 0);
	ck_assert_uint_eq(st->bytes_in_use, 0);
	ck_assert_uint_eq(st->requests, 0);
	ck_assert_uint_eq(st->in_flight, 0);
	ck_assert(st->uptime_s == 0);
	ck_assert_uint_eq(st->n_listen, 0);
	ck_assert_ptr_null(st->lending);
	ck_assert_ptr_null(st->pool);
	reply_free(&rp);

	/* an administrator: every connection, each with its tenant */
	snprintf(cfg.admin_tenants, sizeof(cfg.admin_tenants), "%s", me);
	st = status_of(10, &rp);
	ck_assert_int_eq(st->scope, GPUD__STATUS_RESPONSE__SCOPE__SCOPE_ALL);
	ck_assert_str_eq(st->tenant, me);
	ck_assert_uint_eq(st->connections, 3); /* 10, 11 and 12 (no tenant yet) */
	ck_assert_uint_eq(st->n_sessions, 3);
	ck_assert_uint_eq(st->buffers, 3);
	ck_assert_uint_eq(st->devices[0]->buffers, 3);
	const Gpud__Session *theirs = session_of(st, 11);
	ck_assert_ptr_nonnull(theirs);
	ck_assert_str_eq(theirs->tenant, them);
	ck_assert_uint_eq(theirs->buffers, 1);
	reply_free(&rp);
	cfg.admin_tenants[0] = '\0';
	free(me);
	free(them);
}
END_TEST

START_TEST(test_malformed)
{
	nng_msg *m;
	reply rp = {0};
	ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
	ck_assert_int_eq(nng_msg_append(m, "\x03\x00\x00\x00\xff\xff\xff", 7), 0);
	ck_assert_int_eq(server_inject(&srv, 9, -1, m, on_reply, &rp), 0);
	while (!rp.got)
		uv_run(&loop, UV_RUN_ONCE);
	expect_error(&rp, GPUD__STATUS__STATUS_PROTOCOL, "malformed message");

	Gpud__Request q = GPUD__REQUEST__INIT; /* no verb */
	rp = call(9, &q, NULL, 0);
	expect_error(&rp, GPUD__STATUS__STATUS_PROTOCOL, "unknown or missing verb (body field 0)");
}
END_TEST

/* A float32 vector of n elements, values i * step, uploaded with alloc; its handle. */
static uint64_t alloc_f32(uint32_t pipe, uint64_t n, float step)
{
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	float *v = malloc(n * sizeof(float));
	for (uint64_t i = 0; i < n; i++)
		v[i] = (float)i * step + 0.01f;
	a.dtype = GPUD__DTYPE__DTYPE_F32;
	a.n_shape = 1;
	a.shape = &n;
	a.with_data = 1;
	q.body_case = GPUD__REQUEST__BODY_ALLOC;
	q.alloc = &a;
	reply rp = call(pipe, &q, v, n * sizeof(float));
	free(v);
	ck_assert_msg(rp.r->code == 0, "%s", rp.r->message);
	uint64_t h = rp.r->alloc->buffer->handle;
	reply_free(&rp);
	return h;
}

/* Sends q without waiting; *rp is filled when its reply comes. Returns its id. */
static uint64_t send_only(uint32_t pipe, Gpud__Request *q, reply *rp)
{
	nng_msg *m;
	memset(rp, 0, sizeof(*rp));
	q->version = GPUD_PROTOCOL_VERSION;
	q->id = next_id++;
	ck_assert_int_eq(wire_pack(&m, &q->base, NULL, 0, NULL), 0);
	ck_assert_int_eq(server_inject(&srv, pipe, (int64_t)getuid(), m, on_reply, rp), 0);
	return q->id;
}

static int cancel(uint32_t pipe, uint64_t id)
{
	Gpud__Request q = GPUD__REQUEST__INIT;
	Gpud__CancelRequest c = GPUD__CANCEL_REQUEST__INIT;
	c.request = id;
	q.body_case = GPUD__REQUEST__BODY_CANCEL;
	q.cancel = &c;
	reply rp = call(pipe, &q, NULL, 0);
	ck_assert_msg(rp.r->code == 0, "%s", rp.r->message);
	ck_assert_int_eq(rp.r->body_case, GPUD__RESPONSE__BODY_CANCEL);
	int found = rp.r->cancel->found;
	reply_free(&rp);
	return found;
}

/* A lombscargle of 4000 samples x 60000 frequencies (seconds on the cpu backend) on
 * connection pipe's newly uploaded inputs: the request, ready to send. */
typedef struct long_run {
	Gpud__Request q;
	Gpud__RunRequest run;
	Gpud__Argument a[3];
	Gpud__Argument *args[3];
} long_run;

static void long_run_make(long_run *lr, uint32_t pipe)
{
	static const char *names[] = {"x", "y", "freqs"};
	uint64_t hs[] = {alloc_f32(pipe, 4000, 0.003f), alloc_f32(pipe, 4000, 0.5f),
			 alloc_f32(pipe, 60000, 0.001f)};
	gpud__request__init(&lr->q);
	gpud__run_request__init(&lr->run);
	for (int i = 0; i < 3; i++) {
		gpud__argument__init(&lr->a[i]);
		lr->a[i].name = (char *)names[i];
		lr->a[i].value_case = GPUD__ARGUMENT__VALUE_BUFFER;
		lr->a[i].buffer = hs[i];
		lr->args[i] = &lr->a[i];
	}
	lr->run.kernel = "lombscargle";
	lr->run.n_args = 3;
	lr->run.args = lr->args;
	lr->q.body_case = GPUD__REQUEST__BODY_RUN;
	lr->q.run = &lr->run;
}

/*
 * One run slot: a long run runs, a second waits. Cancelling the waiting one
 * fails it at once; the running one stops between chunks and fails; the
 * outputs they made go; an unknown id is not found.
 */
START_TEST(test_cancel)
{
	long_run lr;
	restart_with_one_slot();
	hello(3);
	long_run_make(&lr, 3);
	Gpud__Argument *a = lr.a;
	reply ra, rb;
	uint64_t ida = send_only(3, &lr.q, &ra), idb = send_only(3, &lr.q, &rb);
	ck_assert_uint_eq(srv.buffers.count, 5); /* the inputs and the two outputs */
	ck_assert(cancel(3, idb));
	ck_assert(rb.got); /* the waiting run failed within the cancel */
	expect_error(&rb, GPUD__STATUS__STATUS_CANCELLED, "cancelled (by its client) before it");
	ck_assert(!ra.got);
	ck_assert(cancel(3, ida));
	while (!ra.got)
		uv_run(&loop, UV_RUN_ONCE);
	expect_error(&ra, GPUD__STATUS__STATUS_CANCELLED, "cancelled (by its client) while it ran");
	ck_assert_uint_eq(srv.buffers.count, 3);
	ck_assert(!cancel(3, ida)); /* gone */
	ck_assert(!cancel(3, 12345));

	/* limit_outputs: the client takes none; the output gpud made goes in the request. */
	Gpud__Request sq = GPUD__REQUEST__INIT;
	Gpud__RunRequest small = GPUD__RUN_REQUEST__INIT;
	Gpud__Argument *xy[] = {&a[0], &a[0]};
	a[0].name = "x";
	Gpud__Argument ay = a[0];
	ay.name = "y";
	xy[1] = &ay;
	small.kernel = "add";
	small.n_args = 2;
	small.args = xy;
	small.limit_outputs = 1;
	small.max_outputs = 0;
	sq.body_case = GPUD__REQUEST__BODY_RUN;
	sq.run = &small;
	reply rp = call(3, &sq, NULL, 0);
	ck_assert_msg(rp.r->code == 0, "%s", rp.r->message);
	ck_assert_uint_eq(rp.r->run->n_outputs, 0);
	reply_free(&rp);
	ck_assert_uint_eq(srv.buffers.count, 3);
}
END_TEST

/* A connection that closes with a run waiting and one running: both are cancelled. */
START_TEST(test_close_cancels_runs)
{
	long_run lr;
	restart_with_one_slot();
	hello(4);
	long_run_make(&lr, 4);
	reply ra, rb;
	send_only(4, &lr.q, &ra);
	send_only(4, &lr.q, &rb);
	server_inject_close(&srv, 4);
	ck_assert(rb.got);
	expect_error(&rb, GPUD__STATUS__STATUS_CANCELLED, "its connection closed");
	while (!ra.got)
		uv_run(&loop, UV_RUN_ONCE);
	expect_error(&ra, GPUD__STATUS__STATUS_CANCELLED, "its connection closed");
	ck_assert_uint_eq(srv.buffers.count, 0);
}
END_TEST

/* /metrics' page (daemon/metrics_text.c) from the server's own state:
 * label values escaped, tenants past metrics_tenants summed as "_other",
 * histogram buckets cumulative. */
START_TEST(test_metrics_page)
{
	double v[4] = {1, 2, 3, 4};
	tenant_quota q = {0};
	char *page = NULL;
	size_t len = 0;

	cfg.metrics_tenants = 2;
	hello(1); /* the first tenant: this user */
	alloc_f64(1, v, 4);
	gpud_tenant *odd = tenants_get(&srv.buffers, "a\"b\\c", &q);
	gpud_tenant *late1 = tenants_get(&srv.buffers, "late-1", &q);
	gpud_tenant *late2 = tenants_get(&srv.buffers, "late-2", &q);
	ck_assert_ptr_nonnull(odd);
	ck_assert_uint_eq(odd->metrics.ordinal, 1);
	ck_assert_uint_eq(late2->metrics.ordinal, 3);
	late1->metrics.quota_refused[QUOTA_DEVICE_BYTES] = 2;
	late2->metrics.quota_refused[QUOTA_DEVICE_BYTES] = 5;
	metrics_ran(&srv.metrics, &late1->metrics, KERNEL_ID_CUSTOM, 0.003);
	metrics_ran(&srv.metrics, &late2->metrics, KERNEL_ID_CUSTOM,
		    20.0); /* past the last bucket */

	FILE *f = open_memstream(&page, &len);
	ck_assert_ptr_nonnull(f);
	metrics_page p = {.m = &srv.metrics, .ready = 1};
	metrics_text(f, &srv.core, &p);
	fclose(f);
	ck_assert_msg(strstr(page, "gpud_quota_refusals_total{tenant=\"a\\\"b\\\\c\","
				   "quota=\"device_bytes\"} 0\n"),
		      "the odd tenant's label is not escaped:\n%s", page);
	ck_assert_msg(strstr(page, "gpud_quota_refusals_total{tenant=\"_other\","
				   "quota=\"device_bytes\"} 7\n"),
		      "tenants past metrics_tenants are not summed:\n%s", page);
	ck_assert_msg(strstr(page, "late-1") == NULL, "late-1 has a label of its own");
	ck_assert_msg(strstr(page, "gpud_kernel_runs_total{tenant=\"_other\"} 2\n"), "%s", page);
	ck_assert_msg(
		strstr(page,
		       "gpud_kernel_run_seconds_bucket{kernel=\"custom\",le=\"0.001\"} 0\n") &&
			strstr(page,
			       "gpud_kernel_run_seconds_bucket{kernel=\"custom\",le=\"0.005\"} 1\n") &&
			strstr(page,
			       "gpud_kernel_run_seconds_bucket{kernel=\"custom\",le=\"10\"} 1\n") &&
			strstr(page,
			       "gpud_kernel_run_seconds_bucket{kernel=\"custom\",le=\"+Inf\"} 2\n") &&
			strstr(page, "gpud_kernel_run_seconds_count{kernel=\"custom\"} 2\n"),
		"the custom kernels' histogram is wrong:\n%s", page);
	ck_assert_msg(strstr(page, "gpud_requests_total{tenant=\"\",verb=\"none\"") == NULL, "%s",
		      page);
	ck_assert_msg(strstr(page, "verb=\"alloc\",status=\"ok\"} 1\n"), "%s", page);
	ck_assert_msg(strstr(page, "gpud_upload_bytes_total{tenant=\"") && strstr(page, "\"} 32\n"),
		      "the alloc's 32 bytes are not counted:\n%s", page);
	ck_assert_msg(strstr(page, "gpud_buffers 1\n") && strstr(page, "gpud_ready 1\n") &&
			      strstr(page, "gpud_backend_up{backend=\"cpu\"} 1\n"),
		      "%s", page);
	free(page);
	cfg.metrics_tenants = 64;
}
END_TEST

Suite *verbs_suite(void)
{
	Suite *s = suite_create("verbs");
	TCase *tc = tcase_create("verbs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_hello_first);
	tcase_add_test(tc, test_alloc_run_download_free);
	tcase_add_test(tc, test_run_refusals);
	tcase_add_test(tc, test_register_list_unregister);
	tcase_add_test(tc, test_connection_close_releases);
	tcase_add_test(tc, test_status_scopes);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_close_cancels_runs);
	tcase_add_test(tc, test_metrics_page);
	suite_add_tcase(s, tc);
	return s;
}
