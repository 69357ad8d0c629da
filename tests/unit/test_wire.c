/*
 * tests/unit/test_wire.c — unit tests of proto/wire.c: every request verb and
 * every response body packed into an nng message (without a payload, with a
 * copied one, with one written into the room wire_pack leaves), split and
 * unpacked again field by field. Broken frames and status names:
 * test_wire_framing.c.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "tests/unit/suites.h"
#include "tests/unit/test_wire.h"

/* --- helpers ----------------------------------------------------------------------- */

/* Random bytes, none of them zero, from a fixed seed (xorshift64). */
void fill_nonzero(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t s = seed | 1;

	for (size_t i = 0; i < n; i++) {
		do {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
		} while ((uint8_t)s == 0);
		p[i] = (uint8_t)s;
	}
}

/*
 * How the payload travels in each loop iteration: none, copied by wire_pack,
 * written by the caller into the room wire_pack returns, a single copied byte.
 */
enum { PL_NONE, PL_COPY, PL_ROOM, PL_ONE, PL_MODES };
static const size_t payload_sizes[PL_MODES] = {0, 4099, 65536 + 7, 1};

typedef struct framed {
	nng_msg *m;
	const uint8_t *hdr;
	size_t hdr_len;
	uint8_t payload[65536 + 7];
	size_t payload_len;
} framed;

/*
 * Packs msg with a payload as mode says, checks the frame (prefix, lengths,
 * payload bytes) and leaves the header range in f for the caller to unpack.
 */
static void pack_and_split(const ProtobufCMessage *msg, int mode, framed *f)
{
	size_t plen = payload_sizes[mode], hlen = protobuf_c_message_get_packed_size(msg);
	void *room = NULL;
	uint8_t *pl = NULL;
	size_t pl_len = 12345;
	char err[256] = "";

	f->payload_len = plen;
	fill_nonzero(f->payload, plen, 0x9e3779b97f4a7c15ull + (uint64_t)mode);
	ck_assert_int_eq(wire_pack(&f->m, msg, mode == PL_ROOM ? NULL : f->payload, plen, &room),
			 0);
	ck_assert_ptr_nonnull(f->m);
	ck_assert_uint_eq(nng_msg_len(f->m), GPUD_WIRE_PREFIX + hlen + plen);
	uint8_t *body = nng_msg_body(f->m);
	ck_assert_ptr_eq(room, body + GPUD_WIRE_PREFIX + hlen);
	if (mode == PL_ROOM)
		memcpy(room, f->payload, plen);
	/* little-endian u32 header length */
	ck_assert_uint_eq((uint32_t)body[0] | (uint32_t)body[1] << 8 | (uint32_t)body[2] << 16 |
				  (uint32_t)body[3] << 24,
			  hlen);

	ck_assert_msg(wire_split(f->m, &f->hdr, &f->hdr_len, &pl, &pl_len, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_ptr_eq(f->hdr, body + GPUD_WIRE_PREFIX);
	ck_assert_uint_eq(f->hdr_len, hlen);
	ck_assert_ptr_eq(pl, body + GPUD_WIRE_PREFIX + hlen);
	ck_assert_uint_eq(pl_len, plen);
	ck_assert_msg(memcmp(pl, f->payload, plen) == 0, "payload bytes changed");
}

static Gpud__Request *request_roundtrip(const Gpud__Request *in, int mode, framed *f)
{
	Gpud__Request *out;

	pack_and_split(&in->base, mode, f);
	out = gpud__request__unpack(NULL, f->hdr_len, f->hdr);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(out->version, in->version);
	ck_assert_uint_eq(out->id, in->id);
	ck_assert_int_eq(out->body_case, in->body_case);
	nng_msg_free(f->m);
	return out;
}

static Gpud__Response *response_roundtrip(const Gpud__Response *in, int mode, framed *f)
{
	Gpud__Response *out;

	pack_and_split(&in->base, mode, f);
	out = gpud__response__unpack(NULL, f->hdr_len, f->hdr);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(out->version, in->version);
	ck_assert_uint_eq(out->id, in->id);
	ck_assert_int_eq(out->code, in->code);
	ck_assert_str_eq(out->message, in->message);
	ck_assert_int_eq(out->body_case, in->body_case);
	nng_msg_free(f->m);
	return out;
}

static framed *new_framed(void)
{
	framed *f = calloc(1, sizeof(*f));

	ck_assert_ptr_nonnull(f);
	return f;
}

#define REQUEST_INIT(r)                                                                            \
	Gpud__Request r = GPUD__REQUEST__INIT;                                                     \
	r.version = GPUD_PROTOCOL_VERSION;                                                         \
	r.id = 0xfedcba9876543210ull + (uint64_t)_i

/* --- requests, one verb each ------------------------------------------------------ */

START_TEST(test_req_empty)
{
	framed *f = new_framed();
	REQUEST_INIT(rq);
	Gpud__Request *out = request_roundtrip(&rq, _i, f);

	ck_assert_int_eq(out->body_case, GPUD__REQUEST__BODY__NOT_SET);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_req_hello)
{
	framed *f = new_framed();
	Gpud__HelloRequest h = GPUD__HELLO_REQUEST__INIT;
	REQUEST_INIT(rq);

	h.client = "gpuctl 0.1.0 (pid 4242) \xc3\xa9";
	rq.body_case = GPUD__REQUEST__BODY_HELLO;
	rq.hello = &h;
	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	ck_assert_ptr_nonnull(out->hello);
	ck_assert_str_eq(out->hello->client, h.client);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_req_alloc)
{
	framed *f = new_framed();
	uint64_t shape[] = {3, 1, 0x100000001ull, 7};
	Gpud__AllocRequest a = GPUD__ALLOC_REQUEST__INIT;
	REQUEST_INIT(rq);

	a.dtype = GPUD__DTYPE__DTYPE_F64;
	a.n_shape = 4;
	a.shape = shape;
	a.with_data = 1;
	rq.body_case = GPUD__REQUEST__BODY_ALLOC;
	rq.alloc = &a;
	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	ck_assert_ptr_nonnull(out->alloc);
	ck_assert_int_eq(out->alloc->dtype, GPUD__DTYPE__DTYPE_F64);
	ck_assert_uint_eq(out->alloc->n_shape, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(out->alloc->shape[i], shape[i]);
	ck_assert_int_eq(out->alloc->with_data, 1);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_req_upload)
{
	framed *f = new_framed();
	Gpud__UploadRequest u = GPUD__UPLOAD_REQUEST__INIT;
	REQUEST_INIT(rq);

	u.handle = 0x8000000000000001ull;
	u.offset = 0x123456789ull;
	rq.body_case = GPUD__REQUEST__BODY_UPLOAD;
	rq.upload = &u;
	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	ck_assert_ptr_nonnull(out->upload);
	ck_assert_uint_eq(out->upload->handle, u.handle);
	ck_assert_uint_eq(out->upload->offset, u.offset);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_req_download)
{
	framed *f = new_framed();
	Gpud__DownloadRequest d = GPUD__DOWNLOAD_REQUEST__INIT;
	REQUEST_INIT(rq);

	d.handle = UINT64_MAX;
	d.offset = 8;
	d.length = 4096;
	rq.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	rq.download = &d;
	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	ck_assert_ptr_nonnull(out->download);
	ck_assert_uint_eq(out->download->handle, UINT64_MAX);
	ck_assert_uint_eq(out->download->offset, 8);
	ck_assert_uint_eq(out->download->length, 4096);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_req_free)
{
	framed *f = new_framed();
	uint64_t handles[] = {1, 0xdeadbeefcafef00dull, UINT64_MAX, 42, 0x7fffffffffffffffull};
	Gpud__FreeRequest fr = GPUD__FREE_REQUEST__INIT;
	REQUEST_INIT(rq);

	fr.n_handles = 5;
	fr.handles = handles;
	rq.body_case = GPUD__REQUEST__BODY_FREE;
	rq.free = &fr;
	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	ck_assert_ptr_nonnull(out->free);
	ck_assert_uint_eq(out->free->n_handles, 5);
	for (int i = 0; i < 5; i++)
		ck_assert_uint_eq(out->free->handles[i], handles[i]);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_req_run)
{
	framed *f = new_framed();
	Gpud__Scalar sb = GPUD__SCALAR__INIT, si = GPUD__SCALAR__INIT, sd = GPUD__SCALAR__INIT;
	Gpud__Argument ax = GPUD__ARGUMENT__INIT, ab = GPUD__ARGUMENT__INIT,
		       ai = GPUD__ARGUMENT__INIT, ad = GPUD__ARGUMENT__INIT;
	Gpud__Argument *args[] = {&ax, &ab, &ai, &ad};
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	REQUEST_INIT(rq);

	ax.name = "x";
	ax.value_case = GPUD__ARGUMENT__VALUE_BUFFER;
	ax.buffer = 0x1122334455667788ull;
	sb.value_case = GPUD__SCALAR__VALUE_B;
	sb.b = 1;
	ab.name = "precenter";
	ab.value_case = GPUD__ARGUMENT__VALUE_SCALAR;
	ab.scalar = &sb;
	si.value_case = GPUD__SCALAR__VALUE_I64;
	si.i64 = INT64_MIN + 3;
	ai.name = "count";
	ai.value_case = GPUD__ARGUMENT__VALUE_SCALAR;
	ai.scalar = &si;
	sd.value_case = GPUD__SCALAR__VALUE_F64;
	sd.f64 = -1.25e-300;
	ad.name = "scale";
	ad.value_case = GPUD__ARGUMENT__VALUE_SCALAR;
	ad.scalar = &sd;
	run.kernel = "lombscargle";
	run.n_args = 4;
	run.args = args;
	rq.body_case = GPUD__REQUEST__BODY_RUN;
	rq.run = &run;

	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	Gpud__RunRequest *r = out->run;
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->kernel, "lombscargle");
	ck_assert_uint_eq(r->n_args, 4);
	ck_assert_str_eq(r->args[0]->name, "x");
	ck_assert_int_eq(r->args[0]->value_case, GPUD__ARGUMENT__VALUE_BUFFER);
	ck_assert_uint_eq(r->args[0]->buffer, 0x1122334455667788ull);
	ck_assert_str_eq(r->args[1]->name, "precenter");
	ck_assert_int_eq(r->args[1]->value_case, GPUD__ARGUMENT__VALUE_SCALAR);
	ck_assert_int_eq(r->args[1]->scalar->value_case, GPUD__SCALAR__VALUE_B);
	ck_assert_int_eq(r->args[1]->scalar->b, 1);
	ck_assert_str_eq(r->args[2]->name, "count");
	ck_assert_int_eq(r->args[2]->value_case, GPUD__ARGUMENT__VALUE_SCALAR);
	ck_assert_int_eq(r->args[2]->scalar->value_case, GPUD__SCALAR__VALUE_I64);
	ck_assert_int_eq(r->args[2]->scalar->i64, INT64_MIN + 3);
	ck_assert_str_eq(r->args[3]->name, "scale");
	ck_assert_int_eq(r->args[3]->value_case, GPUD__ARGUMENT__VALUE_SCALAR);
	ck_assert_int_eq(r->args[3]->scalar->value_case, GPUD__SCALAR__VALUE_F64);
	ck_assert_double_eq(r->args[3]->scalar->f64, -1.25e-300);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

/* A oneof member set to its zero value is still sent: false, 0 and 0.0 keep their kind. */
START_TEST(test_req_run_zero_scalars)
{
	framed *f = new_framed();
	Gpud__Scalar s[3] = {GPUD__SCALAR__INIT, GPUD__SCALAR__INIT, GPUD__SCALAR__INIT};
	Gpud__Argument a[3] = {GPUD__ARGUMENT__INIT, GPUD__ARGUMENT__INIT, GPUD__ARGUMENT__INIT};
	Gpud__Argument *args[] = {&a[0], &a[1], &a[2]};
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	REQUEST_INIT(rq);

	s[0].value_case = GPUD__SCALAR__VALUE_B;
	s[1].value_case = GPUD__SCALAR__VALUE_I64;
	s[2].value_case = GPUD__SCALAR__VALUE_F64;
	for (int i = 0; i < 3; i++) {
		a[i].name = "z";
		a[i].value_case = GPUD__ARGUMENT__VALUE_SCALAR;
		a[i].scalar = &s[i];
	}
	run.kernel = "k";
	run.n_args = 3;
	run.args = args;
	rq.body_case = GPUD__REQUEST__BODY_RUN;
	rq.run = &run;
	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	ck_assert_uint_eq(out->run->n_args, 3);
	ck_assert_int_eq(out->run->args[0]->scalar->value_case, GPUD__SCALAR__VALUE_B);
	ck_assert_int_eq(out->run->args[0]->scalar->b, 0);
	ck_assert_int_eq(out->run->args[1]->scalar->value_case, GPUD__SCALAR__VALUE_I64);
	ck_assert_int_eq(out->run->args[1]->scalar->i64, 0);
	ck_assert_int_eq(out->run->args[2]->scalar->value_case, GPUD__SCALAR__VALUE_F64);
	ck_assert_double_eq(out->run->args[2]->scalar->f64, 0.0);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_req_kernels)
{
	framed *f = new_framed();
	Gpud__KernelsRequest k = GPUD__KERNELS_REQUEST__INIT;
	REQUEST_INIT(rq);

	rq.body_case = GPUD__REQUEST__BODY_KERNELS;
	rq.kernels = &k;
	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	ck_assert_ptr_nonnull(out->kernels);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_req_status)
{
	framed *f = new_framed();
	Gpud__StatusRequest s = GPUD__STATUS_REQUEST__INIT;
	REQUEST_INIT(rq);

	rq.body_case = GPUD__REQUEST__BODY_STATUS;
	rq.status = &s;
	Gpud__Request *out = request_roundtrip(&rq, _i, f);
	ck_assert_ptr_nonnull(out->status);
	gpud__request__free_unpacked(out, NULL);
	free(f);
}
END_TEST

/* --- responses, one body each ---------------------------------------------------- */

#define RESPONSE_INIT(r, c, msg)                                                                   \
	Gpud__Response r = GPUD__RESPONSE__INIT;                                                   \
	r.version = GPUD_PROTOCOL_VERSION;                                                         \
	r.id = 0x0123456789abcdefull + (uint64_t)_i;                                               \
	r.code = (c);                                                                              \
	r.message = (msg)

static void assert_device(const Gpud__Device *got, const Gpud__Device *want)
{
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(got->index, want->index);
	ck_assert_str_eq(got->name, want->name);
	ck_assert_int_eq(got->cc_major, want->cc_major);
	ck_assert_int_eq(got->cc_minor, want->cc_minor);
	ck_assert_uint_eq(got->memory_total, want->memory_total);
	ck_assert_uint_eq(got->memory_free, want->memory_free);
	ck_assert_int_eq(got->sm_count, want->sm_count);
}

static void set_devices(Gpud__Device d[2])
{
	d[0].index = 0;
	d[0].name = "NVIDIA H100 80GB HBM3";
	d[0].cc_major = 9;
	d[0].cc_minor = 0;
	d[0].memory_total = 85520809984ull;
	d[0].memory_free = 84987740160ull;
	d[0].sm_count = 132;
	d[1].index = 1;
	d[1].name = "cpu";
	d[1].cc_major = -1;
	d[1].cc_minor = 5;
	d[1].memory_total = 1;
	d[1].memory_free = UINT64_MAX;
	d[1].sm_count = 16;
}

static void assert_buffer_info(const Gpud__BufferInfo *got, const Gpud__BufferInfo *want)
{
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(got->handle, want->handle);
	ck_assert_int_eq(got->dtype, want->dtype);
	ck_assert_uint_eq(got->n_shape, want->n_shape);
	for (size_t i = 0; i < want->n_shape; i++)
		ck_assert_uint_eq(got->shape[i], want->shape[i]);
}

START_TEST(test_resp_error_no_body)
{
	framed *f = new_framed();
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_NOT_FOUND,
		      "download: unknown handle 00000000deadbeef");
	Gpud__Response *out = response_roundtrip(&rs, _i, f);

	ck_assert_int_eq(out->code, GPUD__STATUS__STATUS_NOT_FOUND);
	ck_assert_str_eq(out->message, "download: unknown handle 00000000deadbeef");
	ck_assert_int_eq(out->body_case, GPUD__RESPONSE__BODY__NOT_SET);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_resp_hello)
{
	framed *f = new_framed();
	Gpud__Device d[2] = {GPUD__DEVICE__INIT, GPUD__DEVICE__INIT};
	Gpud__Device *dp[] = {&d[0], &d[1]};
	Gpud__HelloResponse h = GPUD__HELLO_RESPONSE__INIT;
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_OK, "hello");

	set_devices(d);
	h.server_version = "0.1.0";
	h.protocol_version = GPUD_PROTOCOL_VERSION;
	h.backend = "cuda";
	h.n_devices = 2;
	h.devices = dp;
	h.max_message_size = 256ull << 20;
	rs.body_case = GPUD__RESPONSE__BODY_HELLO;
	rs.hello = &h;
	Gpud__Response *out = response_roundtrip(&rs, _i, f);
	ck_assert_ptr_nonnull(out->hello);
	ck_assert_str_eq(out->hello->server_version, "0.1.0");
	ck_assert_uint_eq(out->hello->protocol_version, GPUD_PROTOCOL_VERSION);
	ck_assert_str_eq(out->hello->backend, "cuda");
	ck_assert_uint_eq(out->hello->n_devices, 2);
	assert_device(out->hello->devices[0], &d[0]);
	assert_device(out->hello->devices[1], &d[1]);
	ck_assert_uint_eq(out->hello->max_message_size, 256ull << 20);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_resp_alloc)
{
	framed *f = new_framed();
	uint64_t shape[] = {1000, 3};
	Gpud__BufferInfo b = GPUD__BUFFER_INFO__INIT;
	Gpud__AllocResponse a = GPUD__ALLOC_RESPONSE__INIT;
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_OK, "");

	b.handle = 0xa5a5a5a55a5a5a5aull;
	b.dtype = GPUD__DTYPE__DTYPE_I32;
	b.n_shape = 2;
	b.shape = shape;
	a.buffer = &b;
	rs.body_case = GPUD__RESPONSE__BODY_ALLOC;
	rs.alloc = &a;
	Gpud__Response *out = response_roundtrip(&rs, _i, f);
	ck_assert_ptr_nonnull(out->alloc);
	assert_buffer_info(out->alloc->buffer, &b);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_resp_upload)
{
	framed *f = new_framed();
	Gpud__UploadResponse u = GPUD__UPLOAD_RESPONSE__INIT;
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_OK, "uploaded");

	rs.body_case = GPUD__RESPONSE__BODY_UPLOAD;
	rs.upload = &u;
	Gpud__Response *out = response_roundtrip(&rs, _i, f);
	ck_assert_ptr_nonnull(out->upload);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_resp_download)
{
	framed *f = new_framed();
	Gpud__BufferInfo b = GPUD__BUFFER_INFO__INIT;
	Gpud__DownloadResponse d = GPUD__DOWNLOAD_RESPONSE__INIT;
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_OK, "");

	/* a 0-d buffer: no shape entries */
	b.handle = 77;
	b.dtype = GPUD__DTYPE__DTYPE_I64;
	d.buffer = &b;
	d.offset = 0x100000000ull;
	rs.body_case = GPUD__RESPONSE__BODY_DOWNLOAD;
	rs.download = &d;
	Gpud__Response *out = response_roundtrip(&rs, _i, f);
	ck_assert_ptr_nonnull(out->download);
	assert_buffer_info(out->download->buffer, &b);
	ck_assert_uint_eq(out->download->buffer->n_shape, 0);
	ck_assert_uint_eq(out->download->offset, 0x100000000ull);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_resp_free)
{
	framed *f = new_framed();
	Gpud__FreeResponse fr = GPUD__FREE_RESPONSE__INIT;
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_OK, "freed 5");

	rs.body_case = GPUD__RESPONSE__BODY_FREE;
	rs.free = &fr;
	Gpud__Response *out = response_roundtrip(&rs, _i, f);
	ck_assert_ptr_nonnull(out->free);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_resp_run)
{
	framed *f = new_framed();
	uint64_t s0[] = {4096}, s1[] = {2, 2, 2};
	Gpud__BufferInfo b[2] = {GPUD__BUFFER_INFO__INIT, GPUD__BUFFER_INFO__INIT};
	Gpud__Output o[2] = {GPUD__OUTPUT__INIT, GPUD__OUTPUT__INIT};
	Gpud__Output *op[] = {&o[0], &o[1]};
	Gpud__RunResponse run = GPUD__RUN_RESPONSE__INIT;
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_OK, "");

	b[0].handle = 11;
	b[0].dtype = GPUD__DTYPE__DTYPE_F32;
	b[0].n_shape = 1;
	b[0].shape = s0;
	b[1].handle = 0xffffffff00000000ull;
	b[1].dtype = GPUD__DTYPE__DTYPE_F64;
	b[1].n_shape = 3;
	b[1].shape = s1;
	o[0].name = "pgram";
	o[0].buffer = &b[0];
	o[1].name = "other";
	o[1].buffer = &b[1];
	run.n_outputs = 2;
	run.outputs = op;
	run.elapsed_us = 1234.5625;
	rs.body_case = GPUD__RESPONSE__BODY_RUN;
	rs.run = &run;
	Gpud__Response *out = response_roundtrip(&rs, _i, f);
	ck_assert_ptr_nonnull(out->run);
	ck_assert_uint_eq(out->run->n_outputs, 2);
	ck_assert_str_eq(out->run->outputs[0]->name, "pgram");
	assert_buffer_info(out->run->outputs[0]->buffer, &b[0]);
	ck_assert_str_eq(out->run->outputs[1]->name, "other");
	assert_buffer_info(out->run->outputs[1]->buffer, &b[1]);
	ck_assert_double_eq(out->run->elapsed_us, 1234.5625);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_resp_kernels)
{
	framed *f = new_framed();
	Gpud__DType fl[] = {GPUD__DTYPE__DTYPE_F32, GPUD__DTYPE__DTYPE_F64};
	Gpud__DType bl[] = {GPUD__DTYPE__DTYPE_I64};
	Gpud__Param p[2] = {GPUD__PARAM__INIT, GPUD__PARAM__INIT};
	Gpud__Param *pp[] = {&p[0], &p[1]};
	Gpud__KernelInfo ki = GPUD__KERNEL_INFO__INIT;
	Gpud__KernelInfo *kp[] = {&ki};
	Gpud__KernelsResponse kr = GPUD__KERNELS_RESPONSE__INIT;
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_OK, "");

	p[0].name = "pgram";
	p[0].role = GPUD__PARAM__ROLE__ROLE_OUT;
	p[0].n_dtypes = 2;
	p[0].dtypes = fl;
	p[0].ndim = -1;
	p[0].optional = 1;
	p[0].doc = "periodogram";
	p[0].type = "float32|float64 array (output)";
	p[1].name = "precenter";
	p[1].role = GPUD__PARAM__ROLE__ROLE_SCALAR;
	p[1].n_dtypes = 1;
	p[1].dtypes = bl;
	p[1].ndim = 2;
	p[1].doc = "subtract mean(y)";
	p[1].default_value = "false";
	p[1].type = "bool scalar (default false)";
	ki.name = "lombscargle";
	ki.doc = "Lomb-Scargle periodogram";
	ki.n_params = 2;
	ki.params = pp;
	kr.n_kernels = 1;
	kr.kernels = kp;
	rs.body_case = GPUD__RESPONSE__BODY_KERNELS;
	rs.kernels = &kr;
	Gpud__Response *out = response_roundtrip(&rs, _i, f);
	ck_assert_ptr_nonnull(out->kernels);
	ck_assert_uint_eq(out->kernels->n_kernels, 1);
	Gpud__KernelInfo *k = out->kernels->kernels[0];
	ck_assert_str_eq(k->name, "lombscargle");
	ck_assert_str_eq(k->doc, "Lomb-Scargle periodogram");
	ck_assert_uint_eq(k->n_params, 2);
	for (int i = 0; i < 2; i++) {
		Gpud__Param *g = k->params[i];
		ck_assert_str_eq(g->name, p[i].name);
		ck_assert_int_eq(g->role, p[i].role);
		ck_assert_uint_eq(g->n_dtypes, p[i].n_dtypes);
		for (size_t j = 0; j < p[i].n_dtypes; j++)
			ck_assert_int_eq(g->dtypes[j], p[i].dtypes[j]);
		ck_assert_int_eq(g->ndim, p[i].ndim);
		ck_assert_int_eq(g->optional, p[i].optional);
		ck_assert_str_eq(g->doc, p[i].doc);
		ck_assert_str_eq(g->default_value, p[i].default_value);
		ck_assert_str_eq(g->type, p[i].type);
	}
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

START_TEST(test_resp_status)
{
	framed *f = new_framed();
	Gpud__Device d[2] = {GPUD__DEVICE__INIT, GPUD__DEVICE__INIT};
	Gpud__Device *dp[] = {&d[0], &d[1]};
	char *listen[] = {"ipc:///run/gpud/gpud.sock", "tcp://127.0.0.1:7100"};
	Gpud__StatusResponse s = GPUD__STATUS_RESPONSE__INIT;
	RESPONSE_INIT(rs, GPUD__STATUS__STATUS_OK, "");

	set_devices(d);
	s.server_version = "0.1.0";
	s.backend = "cpu";
	s.uptime_s = 86400.125;
	s.requests = 1000001;
	s.errors = 17;
	s.connections = 3;
	s.buffers = 9;
	s.bytes_in_use = 0x1234567890ull;
	s.bytes_high_water = 0x2234567890ull;
	s.n_devices = 2;
	s.devices = dp;
	s.n_listen = 2;
	s.listen = listen;
	s.in_flight = 4;
	rs.body_case = GPUD__RESPONSE__BODY_STATUS;
	rs.status = &s;
	Gpud__Response *out = response_roundtrip(&rs, _i, f);
	Gpud__StatusResponse *g = out->status;
	ck_assert_ptr_nonnull(g);
	ck_assert_str_eq(g->server_version, "0.1.0");
	ck_assert_str_eq(g->backend, "cpu");
	ck_assert_double_eq(g->uptime_s, 86400.125);
	ck_assert_uint_eq(g->requests, 1000001);
	ck_assert_uint_eq(g->errors, 17);
	ck_assert_uint_eq(g->connections, 3);
	ck_assert_uint_eq(g->buffers, 9);
	ck_assert_uint_eq(g->bytes_in_use, 0x1234567890ull);
	ck_assert_uint_eq(g->bytes_high_water, 0x2234567890ull);
	ck_assert_uint_eq(g->n_devices, 2);
	assert_device(g->devices[0], &d[0]);
	assert_device(g->devices[1], &d[1]);
	ck_assert_uint_eq(g->n_listen, 2);
	ck_assert_str_eq(g->listen[0], listen[0]);
	ck_assert_str_eq(g->listen[1], listen[1]);
	ck_assert_uint_eq(g->in_flight, 4);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

/* Every status code travels in a response. */
START_TEST(test_resp_every_code)
{
	framed *f = new_framed();
	const ProtobufCEnumValue *v = &gpud__status__descriptor.values[_i];
	RESPONSE_INIT(rs, (Gpud__Status)v->value, (char *)v->name);
	Gpud__Response *out = response_roundtrip(&rs, PL_ONE, f);

	ck_assert_int_eq(out->code, v->value);
	ck_assert_str_eq(out->message, v->name);
	gpud__response__free_unpacked(out, NULL);
	free(f);
}
END_TEST

Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc;

	tc = tcase_create("request");
	tcase_add_loop_test(tc, test_req_empty, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_hello, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_alloc, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_upload, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_download, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_free, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_run, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_run_zero_scalars, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_kernels, 0, PL_MODES);
	tcase_add_loop_test(tc, test_req_status, 0, PL_MODES);
	suite_add_tcase(s, tc);

	tc = tcase_create("response");
	tcase_add_loop_test(tc, test_resp_error_no_body, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_hello, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_alloc, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_upload, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_download, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_free, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_run, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_kernels, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_status, 0, PL_MODES);
	tcase_add_loop_test(tc, test_resp_every_code, 0, (int)gpud__status__descriptor.n_values);
	suite_add_tcase(s, tc);

	suite_add_tcase(s, wire_framing_tcase());
	return s;
}
