/*
 * tests/fuzz/fuzz_corpus.c — writes the fuzzer's seed corpus: one file per kind
 * of request, good and bad, so the fuzzer starts from messages that reach
 * every verb's checks. Several messages in one file are separated by the
 * marker tests/fuzz/fuzz_request.c splits at.
 *
 *   fuzz_corpus DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend/tenant_worker/msg.h"

#include "proto/shm.h"
#include "proto/wire.h"

static const char *dir;
static unsigned char file[1 << 20];
static size_t flen;

static int overlap; /* the next message goes in without waiting for the one before */
static int marked;  /* the file starts with a marker only: the next message needs no separator */

static void add(Gpud__Request *req, const void *payload, size_t plen)
{
	nng_msg *m;
	req->version = GPUD_PROTOCOL_VERSION;
	if (req->id == 0)
		req->id = 7;
	if (wire_pack(&m, &req->base, payload, plen, NULL) != 0)
		exit(1);
	if (flen && !marked)
		memcpy(file + flen, overlap ? "\xffGPA" : "\xffGPM", 4), flen += 4;
	overlap = marked = 0;
	memcpy(file + flen, nng_msg_body(m), nng_msg_len(m));
	flen += nng_msg_len(m);
	nng_msg_free(m);
}

/* The next entry goes through the connection's request ring: kind, len, then the
 * packed request (or whatever the seed wants in the request area). */
static void add_ring(uint32_t kind, uint32_t len, Gpud__Request *req)
{
	nng_msg *m = NULL;
	if (req) {
		req->version = GPUD_PROTOCOL_VERSION;
		if (req->id == 0)
			req->id = 9;
		if (wire_pack(&m, &req->base, NULL, 0, NULL) != 0)
			exit(1);
		if (len == 0)
			len = (uint32_t)nng_msg_len(m);
	}
	if (flen)
		memcpy(file + flen, "\xffGPR", 4), flen += 4;
	memcpy(file + flen, &kind, 4);
	memcpy(file + flen + 4, &len, 4);
	flen += 8;
	if (m) {
		memcpy(file + flen, nng_msg_body(m), nng_msg_len(m));
		flen += nng_msg_len(m);
		nng_msg_free(m);
	}
}

/* The next entry is a packet of the tenant worker channel. */
static void add_worker(const tw_msg *m)
{
	size_t n = tw_msg_size(m->type, m->type == TW_RUN ? m->u.run.nargs : 0);
	if (flen)
		memcpy(file + flen, "\xffGPW", 4), flen += 4;
	memcpy(file + flen, m, n);
	flen += n;
}

/* The next entry is a file copy of the region socket (region 0: the connection's). */
static void add_copy(uint32_t flags, uint64_t offset, uint64_t length, uint64_t file_offset)
{
	shm_file_io m;
	memset(&m, 0, sizeof(m));
	memcpy(m.magic, GPUD_SHM_MAGIC, sizeof(m.magic));
	m.flags = flags;
	m.offset = offset;
	m.length = length;
	m.file_offset = file_offset;
	memcpy(file + flen, "\xffGPF", 4), flen += 4; /* first too: the marker says what it is */
	memcpy(file + flen, &m, sizeof(m));
	flen += sizeof(m);
}

static void save(const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(file, 1, flen, f) != flen || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	flen = 0;
}

static Gpud__Request alloc_req(Gpud__AllocRequest *a, Gpud__DType dt, uint64_t *shape, size_t nd,
			       int with_data, int keep)
{
	Gpud__Request r = GPUD__REQUEST__INIT;
	gpud__alloc_request__init(a);
	a->dtype = dt;
	a->shape = shape;
	a->n_shape = nd;
	a->with_data = with_data;
	a->keep = keep;
	r.body_case = GPUD__REQUEST__BODY_ALLOC;
	r.alloc = a;
	return r;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_corpus DIR\n");
		return 2;
	}
	dir = argv[1];
	Gpud__Request r;
	Gpud__AllocRequest a;
	float data[4] = {1, 2, 3, 4};
	uint64_t four = 4, huge[2] = {1ull << 40, 1ull << 40},
		 nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};

	/* a second hello, and hellos with a probe key (daemon/health.h): a
	 * forged one, and one of the wrong length */
	Gpud__HelloRequest hr = GPUD__HELLO_REQUEST__INIT;
	uint8_t probe[17] = {0x5a};
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_HELLO;
	r.hello = &hr;
	hr.client = "fuzz";
	add(&r, NULL, 0);
	hr.probe.data = probe;
	hr.probe.len = 16;
	add(&r, NULL, 0);
	hr.probe.len = 17;
	add(&r, NULL, 0);
	save("hello-probe");

	/* simple verbs */
	Gpud__StatusRequest st = GPUD__STATUS_REQUEST__INIT;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_STATUS;
	r.status = &st;
	add(&r, NULL, 0);
	save("status");
	st.without_variants = 1;
	add(&r, NULL, 0);
	save("status-without-variants");
	st.without_variants = 0;
	/* a status that carries the connection's hello (twice: the second on a
	 * connection that has its tenant), and one with a probe key */
	Gpud__HelloRequest sh = GPUD__HELLO_REQUEST__INIT;
	sh.client = "fuzz";
	st.hello = &sh;
	add(&r, NULL, 0);
	add(&r, NULL, 0);
	sh.probe.data = probe;
	sh.probe.len = 16;
	add(&r, NULL, 0);
	save("status-hello");
	st.hello = NULL;
	Gpud__KernelsRequest kr = GPUD__KERNELS_REQUEST__INIT;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_KERNELS;
	r.kernels = &kr;
	add(&r, NULL, 0);
	Gpud__ListRequest lr = GPUD__LIST_REQUEST__INIT;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_LIST;
	r.list = &lr;
	add(&r, NULL, 0);
	lr.all_tenants = 1; /* administrators: every tenant's kept buffers */
	add(&r, NULL, 0);
	Gpud__SyncRequest sy = GPUD__SYNC_REQUEST__INIT;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_SYNC;
	r.sync = &sy;
	add(&r, NULL, 0);
	save("kernels-list-sync");

	/* allocs: good, kept, 9-d, huge, short payload, int64 */
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_F32, &four, 1, 1, 0);
	add(&r, data, sizeof(data));
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_F32, &four, 1, 1, 1);
	add(&r, data, sizeof(data));
	save("alloc");
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_F64, nine, 9, 0, 0);
	add(&r, NULL, 0);
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_F64, huge, 2, 0, 0);
	add(&r, NULL, 0);
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_I64, &four, 1, 1, 0);
	add(&r, data, 5);
	uint64_t two = 2;
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_C64, &two, 1, 1, 0); /* complex64: 8 bytes each */
	add(&r, data, sizeof(data));
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_C128, &two, 1, 1, 0); /* 32 bytes wanted, 16 sent */
	add(&r, data, sizeof(data));
	r = alloc_req(&a, (Gpud__DType)99, &four, 1, 0, 0);
	add(&r, NULL, 0);
	uint64_t zero = 0, overflow[3] = {1ull << 31, 1ull << 31, 1ull << 31};
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_F32, &zero, 1, 1, 0); /* a zero-length array */
	add(&r, NULL, 0);
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_F64, overflow, 3, 0, 0); /* 2^93 x 8 bytes */
	add(&r, NULL, 0);
	save("alloc-bad");
	/* devices (the fuzzer's gpud has 3): pinned to 2, to one it lacks, negative */
	r = alloc_req(&a, GPUD__DTYPE__DTYPE_F32, &four, 1, 1, 0);
	a.pin_device = 1;
	a.device = 2;
	add(&r, data, sizeof(data));
	a.device = 7;
	add(&r, data, sizeof(data));
	a.device = -1;
	add(&r, data, sizeof(data));
	save("alloc-devices");

	/* upload, download, free of a made-up handle; with host refs */
	Gpud__UploadRequest up = GPUD__UPLOAD_REQUEST__INIT;
	Gpud__HostRef ref = GPUD__HOST_REF__INIT;
	up.handle = 0x1234;
	up.offset = 8;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_UPLOAD;
	r.upload = &up;
	add(&r, data, 8);
	ref.region = 5;
	ref.offset = 1ull << 62;
	up.from = &ref;
	up.length = 1ull << 62;
	add(&r, NULL, 0);
	Gpud__DownloadRequest dn = GPUD__DOWNLOAD_REQUEST__INIT;
	dn.handle = 0x1234;
	dn.length = UINT64_MAX;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_DOWNLOAD;
	r.download = &dn;
	add(&r, NULL, 0);
	uint64_t hs[3] = {1, 2, 0x1234};
	Gpud__FreeRequest fr = GPUD__FREE_REQUEST__INIT;
	fr.handles = hs;
	fr.n_handles = 3;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_FREE;
	r.free = &fr;
	add(&r, NULL, 0);
	fr.tenant = "bob"; /* administrators: another tenant's kept buffers */
	add(&r, NULL, 0);
	Gpud__UnmapRequest um = GPUD__UNMAP_REQUEST__INIT;
	um.regions = hs;
	um.n_regions = 2;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_UNMAP;
	r.unmap = &um;
	add(&r, NULL, 0);
	save("copies-bad");

	/* a one-trip lombscargle with inline arrays, and bad scalars */
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;
	Gpud__Argument args[5], *ap[5];
	Gpud__InlineArray ia[3];
	Gpud__Scalar sc[2];
	const char *names[3] = {"x", "y", "freqs"};
	float arrays[12] = {0.1f, 0.7f, 1.3f, 2.2f, 1, -1, 0.5f, 2, 0.2f, 0.9f, 1.7f, 3.1f};
	for (int i = 0; i < 3; i++) {
		gpud__argument__init(&args[i]);
		gpud__inline_array__init(&ia[i]);
		ia[i].dtype = GPUD__DTYPE__DTYPE_F32;
		ia[i].shape = &four;
		ia[i].n_shape = 1;
		args[i].name = (char *)names[i];
		args[i].value_case = GPUD__ARGUMENT__VALUE_ARRAY;
		args[i].array = &ia[i];
		ap[i] = &args[i];
	}
	run.kernel = "lombscargle";
	run.args = ap;
	run.n_args = 3;
	run.return_outputs = 1;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_RUN;
	r.run = &run;
	add(&r, arrays, sizeof(arrays));
	save("run-inline");
	run.pin_device = 1; /* on device 1; then on one the fuzzer's gpud lacks */
	run.device = 1;
	add(&r, arrays, sizeof(arrays));
	run.device = 99;
	add(&r, arrays, sizeof(arrays));
	save("run-devices");
	run.pin_device = 0;
	run.device = 0;
	/* A connection's first request carrying its hello (no automatic hello:
	 * "\xffGPH" first) with a malformed claim; then, the connection's
	 * tenant fixed by it, carried hellos that are ignored. */
	{
		Gpud__HelloRequest ch = GPUD__HELLO_REQUEST__INIT;
		static uint8_t nonce[GPUD_SHM_KEY_LEN] = {7, 1, 2, 3};
		memcpy(file, "\xffGPH", 4);
		flen = 4;
		marked = 1;
		ch.client = "fuzz";
		ch.claim.data = nonce;
		ch.claim.len = sizeof(nonce);
		r.carried_hello = &ch;
		ch.claim.len = 5;
		add(&r, arrays, sizeof(arrays));
		ch.claim.len = sizeof(nonce);
		add(&r, arrays, sizeof(arrays));
		ch.claim.len = 0;
		add(&r, arrays, sizeof(arrays));
		add(&r, arrays, sizeof(arrays));
		r.carried_hello = NULL;
		save("carried-hello");
	}
	/* outputs into a host region: one this connection never made (refused),
	 * and a room too small for them (they come in the reply instead) */
	{
		Gpud__HostRef to = GPUD__HOST_REF__INIT;
		to.region = 0x1234;
		to.offset = 64;
		run.outputs_to = &to;
		run.outputs_room = 1u << 20;
		add(&r, arrays, sizeof(arrays));
		run.outputs_room = 1;
		add(&r, arrays, sizeof(arrays));
		save("run-outputs-to");
		run.outputs_to = NULL;
		run.outputs_room = 0;
	}
	gpud__argument__init(&args[3]);
	gpud__scalar__init(&sc[0]);
	args[3].name = "precenter";
	args[3].value_case = GPUD__ARGUMENT__VALUE_SCALAR;
	sc[0].value_case = GPUD__SCALAR__VALUE_F64;
	sc[0].f64 = NAN;
	args[3].scalar = &sc[0];
	ap[3] = &args[3];
	gpud__argument__init(&args[4]);
	gpud__scalar__init(&sc[1]);
	args[4].name = "normalize";
	args[4].value_case = GPUD__ARGUMENT__VALUE_SCALAR;
	sc[1].value_case = GPUD__SCALAR__VALUE_I64;
	sc[1].i64 = INT64_MIN;
	args[4].scalar = &sc[1];
	ap[4] = &args[4];
	run.n_args = 5;
	add(&r, arrays, sizeof(arrays) - 4);
	run.kernel = "no_such_kernel";
	add(&r, arrays, sizeof(arrays));
	save("run-bad");

	/* runs in flight: only the first output kept, a cancel of the second
	 * (id 8) while it runs, a cancel of nothing, and one left for the close */
	{
		Gpud__CancelRequest cr = GPUD__CANCEL_REQUEST__INIT;
		Gpud__Request q;
		run.n_args = 3;
		run.kernel = "lombscargle";
		run.return_outputs = 0;
		run.limit_outputs = 1;
		run.max_outputs = 0;
		r = (Gpud__Request)GPUD__REQUEST__INIT;
		r.body_case = GPUD__REQUEST__BODY_RUN;
		r.run = &run;
		r.id = 7;
		overlap = 1;
		add(&r, arrays, sizeof(arrays));
		r.id = 8;
		overlap = 1;
		add(&r, arrays, sizeof(arrays));
		q = (Gpud__Request)GPUD__REQUEST__INIT;
		q.body_case = GPUD__REQUEST__BODY_CANCEL;
		q.cancel = &cr;
		q.id = 9;
		cr.request = 8;
		add(&q, NULL, 0);
		cr.request = 12345;
		q.id = 10;
		add(&q, NULL, 0);
		r.id = 11;
		run.limit_outputs = 0;
		run.return_outputs = 1;
		overlap = 1;
		add(&r, arrays, sizeof(arrays));
		r.id = 12;
		add(&r, arrays, sizeof(arrays));
		save("run-cancel");
		run.return_outputs = 1;
		run.limit_outputs = 0;
	}

	/* uniform and normal: a dtype by name (a text scalar), a bad name, a text for a number */
	{
		Gpud__RunRequest rr = GPUD__RUN_REQUEST__INIT;
		Gpud__Argument ra[3], *rap[3];
		Gpud__Scalar rs[3];
		const char *rn[3] = {"n", "seed", "dtype"};
		for (int i = 0; i < 3; i++) {
			gpud__argument__init(&ra[i]);
			gpud__scalar__init(&rs[i]);
			ra[i].name = (char *)rn[i];
			ra[i].value_case = GPUD__ARGUMENT__VALUE_SCALAR;
			ra[i].scalar = &rs[i];
			rap[i] = &ra[i];
		}
		rs[0].value_case = GPUD__SCALAR__VALUE_I64;
		rs[0].i64 = 5;
		rs[1].value_case = GPUD__SCALAR__VALUE_I64;
		rs[1].i64 = 42;
		rs[2].value_case = GPUD__SCALAR__VALUE_TEXT;
		rs[2].text = "float32";
		rr.kernel = "uniform";
		rr.args = rap;
		rr.n_args = 3;
		rr.return_outputs = 1;
		r = (Gpud__Request)GPUD__REQUEST__INIT;
		r.body_case = GPUD__REQUEST__BODY_RUN;
		r.run = &rr;
		add(&r, NULL, 0);
		rr.kernel = "normal";
		add(&r, NULL, 0);
		rs[2].text = "float16";
		add(&r, NULL, 0);
		rs[0].value_case = GPUD__SCALAR__VALUE_TEXT;
		rs[0].text = "five";
		add(&r, NULL, 0);
		save("run-random");
		/* through the ring: 30000 float32 (120 KB) back, in two chunks */
		rs[0].value_case = GPUD__SCALAR__VALUE_I64;
		rs[0].i64 = 30000;
		rs[2].text = "float32";
		rr.kernel = "uniform";
		add_ring(1, 0, &r);
		add_ring(2, 0, NULL);
		add_ring(2, 0, NULL);
		save("ring-chunks");
	}
	{
		/* tenant worker packets: each type once, a RUN of three arguments */
		static tw_msg w;
		flen = 0;
		memset(&w, 0, sizeof(w));
		w.type = TW_RUN;
		w.id = 3;
		w.u.run.slot = 5;
		w.u.run.nargs = 3;
		w.u.run.seq = 42;
		w.u.run.grid = 132;
		w.u.run.block = 256;
		w.u.run.args[0] = (tw_arg){.map = 1, .value = 0};
		w.u.run.args[1] = (tw_arg){.map = 2, .value = 64};
		w.u.run.args[2] = (tw_arg){.map = 0, .value = 4096};
		add_worker(&w);
		static const uint32_t others[] = {TW_INIT,  TW_LOAD,  TW_UNLOAD, TW_MAP,
						  TW_UNMAP, TW_READY, TW_DONE,   TW_UNMAPPED};
		for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
			memset(&w, 0, sizeof(w));
			w.type = others[i];
			w.id = 1;
			w.u.init.nevents = TW_SLOTS;
			if (w.type == TW_LOAD) {
				strcpy(w.u.load.entry, "scale");
				w.u.load.code_len = 1000;
			}
			add_worker(&w);
		}
		save("tenant-worker-packets");
	}
	/* Files copied into and out of the connection's region: in, out, at the
	 * edges, past them, the file ending first, bad flags. */
	add_copy(GPUD_SHM_READ, 0, 4096, 0);
	add_copy(GPUD_SHM_WRITE, 100, 5000, 77);
	add_copy(GPUD_SHM_READ, (1 << 16) - 8, 8, (1 << 17) - 8);
	add_copy(GPUD_SHM_READ, 0, 1 << 16, (1 << 17) - 100);
	add_copy(GPUD_SHM_WRITE, (1 << 16) - 8, 9, 0);
	add_copy(GPUD_SHM_READ | GPUD_SHM_WRITE, 0, 8, 0);
	add_copy(GPUD_SHM_WRITE, 0, 0, UINT64_MAX - 4);
	save("file-copies");

	/* custom kernels: an elementwise one, a raw one, a broken signature, unregister */
	Gpud__RegisterRequest rg = GPUD__REGISTER_REQUEST__INIT;
	rg.name = "my_saxpy_trig";
	rg.kind = GPUD__REGISTER_REQUEST__KIND__KIND_ELEMENTWISE;
	rg.in_params = "float32 x, float32 y, float32 a";
	rg.out_params = "float32 z";
	rg.source = "z = exp(a * sin(x) + cos(y))";
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_REGISTER;
	r.register_ = &rg;
	add(&r, NULL, 0);
	run.kernel = "my_saxpy_trig";
	run.n_args = 3;
	names[2] = "a";
	args[2].name = "a";
	Gpud__RunRequest *keep_run = &run;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_RUN;
	r.run = keep_run;
	add(&r, arrays, sizeof(arrays));
	Gpud__RegisterRequest raw = GPUD__REGISTER_REQUEST__INIT;
	raw.name = "scale";
	raw.kind = GPUD__REGISTER_REQUEST__KIND__KIND_RAW;
	raw.signature = "x:in f32[], y:out f32[], s:f32, n:i32";
	raw.entry = "scale";
	raw.source =
		"extern \"C\" __global__ void scale(const float *x, float *y, float s, int n) {}";
	raw.blocks_per_sm = 2;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_REGISTER;
	r.register_ = &raw;
	add(&r, NULL, 0);
	raw.name = "broken";
	raw.signature = "x:in f33[], ,";
	add(&r, NULL, 0);
	/* outputs declared in place of inputs (kernels/core/alias.c), and malformed ones */
	raw.name = "scale_inplace";
	raw.signature = "x:in f32[], w:in f32[], y:out f32[] inplace(x | w), n:i32";
	add(&r, NULL, 0);
	raw.name = "broken_inplace";
	raw.signature = "x:in f32[], y:out f32[] inplace(x, n:i32 inplace(y)";
	add(&r, NULL, 0);
	rg.name = "ew_inplace";
	rg.in_params = "float32 x, float32 y, float32 a";
	rg.out_params = "float32 z inplace(x|y), float32 w inplace(q)";
	r.register_ = &rg;
	add(&r, NULL, 0);
	rg.out_params = "float32 z inplace(x|y)";
	add(&r, NULL, 0);
	run.kernel = "ew_inplace";
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_RUN;
	r.run = keep_run;
	add(&r, arrays, sizeof(arrays));
	/* unpinned registrations past the custom_kernels quota (4, fuzz_request.c):
	 * the least recently used ones evicted; then the list, with their state */
	static const char *const unpinned[] = {"u0", "u1", "u2", "u3", "u4", "u5"};
	rg.out_params = "float32 z";
	rg.unpinned = 1;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_REGISTER;
	r.register_ = &rg;
	for (size_t i = 0; i < sizeof(unpinned) / sizeof(unpinned[0]); i++) {
		rg.name = (char *)unpinned[i];
		add(&r, NULL, 0);
	}
	rg.unpinned = 0;
	/* a reduction (CuPy's ReductionKernel), a run of it by rows, and a broken one */
	Gpud__RegisterRequest red = GPUD__REGISTER_REQUEST__INIT;
	red.name = "l2";
	red.kind = GPUD__REGISTER_REQUEST__KIND__KIND_REDUCTION;
	red.in_params = "float32 x, float32 y";
	red.out_params = "float32 z";
	red.map_expr = "x * y";
	red.reduce_expr = "a + b";
	red.post_map_expr = "z = sqrt(a)";
	red.identity = "0";
	red.reduce_type = "float64";
	r.register_ = &red;
	add(&r, NULL, 0);
	run.kernel = "l2";
	run.n_args = 2;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_RUN;
	r.run = keep_run;
	add(&r, arrays, sizeof(arrays));
	run.n_args = 3;
	red.name = "l2_broken";
	red.block = 96;
	red.reduce_type = "T";
	red.identity = "";
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_REGISTER;
	r.register_ = &red;
	add(&r, NULL, 0);
	Gpud__KernelsRequest kq = GPUD__KERNELS_REQUEST__INIT;
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_KERNELS;
	r.kernels = &kq;
	add(&r, NULL, 0);
	Gpud__UnregisterRequest ug = GPUD__UNREGISTER_REQUEST__INIT;
	ug.name = "my_saxpy_trig";
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_UNREGISTER;
	r.unregister = &ug;
	add(&r, NULL, 0);
	save("custom");

	/* the request ring: status; a download longer than the ring's area, in
	 * chunks; entries gpud refuses (too long, an unknown kind, MORE with
	 * nothing pending) */
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_STATUS;
	r.status = &st;
	add_ring(1, 0, &r);
	add_ring(2, 0, NULL);
	save("ring");
	r = (Gpud__Request)GPUD__REQUEST__INIT;
	r.body_case = GPUD__REQUEST__BODY_STATUS;
	r.status = &st;
	add_ring(1, (64u << 10) + 1, &r);
	add_ring(7, 16, &r);
	add_ring(2, 0, NULL);
	add_ring(1, 3, &r);
	save("ring-bad");

	/* not even a message */
	memcpy(file, "\x05\x00\x00\x00\xff\xff\xff\xff\xff", 9);
	flen = 9;
	save("garbage");
	return 0;
}
