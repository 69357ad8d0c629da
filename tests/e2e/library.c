/*
 * tests/e2e/library.c — test case "library": libgpud-client against a real
 * gpud (connect, buffers of every dtype, ranges, handles, kernels, status,
 * lombscargle against the reference, one session's order) and malformed
 * messages on a raw socket.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/e2e.h"

START_TEST(test_connect_server_info)
{
	gpud_client *c = lib_connect();
	const gpud_server_info *si = gpud_server(c);

	if (!strcmp(expected_backend(), "cpu") || !strcmp(expected_backend(), "cuda"))
		ck_assert_str_eq(si->backend, expected_backend());
	else
		ck_assert_msg(!strcmp(si->backend, "cpu") || !strcmp(si->backend, "cuda"),
			      "backend '%s'", si->backend);
	ck_assert_uint_eq(si->protocol_version, WIRE_VERSION);
	ck_assert_msg(si->version[0] != '\0', "empty server version");
	ck_assert_uint_eq(si->max_message_size, 256ull << 20); /* the default */
	ck_assert_str_eq(gpud_url(c), e2e_gpud.url);
	ck_assert_int_ge(si->ndevices, 1); /* cpu: one device of host memory */
	if (!strcmp(si->backend, "cpu")) {
		ck_assert_int_eq(si->ndevices, 1);
		ck_assert_int_eq(si->devices[0].index, 0);
		ck_assert_str_eq(si->devices[0].name, "cpu (host memory)");
		ck_assert_uint_gt(si->devices[0].memory_total, 0);
	}
	ck_assert_int_eq(si->devices[0].lost, 0);
	ck_assert_str_eq(gpud_errmsg(c), "");

	/* The same through status. */
	gpud_daemon_status s = lib_status(c);
	ck_assert_str_eq(s.server.backend, si->backend);
	ck_assert_str_eq(s.server.version, si->version);
	ck_assert_uint_ge(s.connections, 1);
	ck_assert_uint_eq(s.in_flight, 1); /* the status request itself */
	ck_assert_msg(s.uptime_s >= 0 && s.uptime_s < 60, "uptime %g", s.uptime_s);
	gpud_close(c);
}
END_TEST

START_TEST(test_roundtrip_dtypes)
{
	static const gpud_dtype dts[] = {GPUD_F32, GPUD_F64, GPUD_I32, GPUD_I64};
	const uint64_t shape[3] = {3, 4, 5};
	const size_t n = 60;
	uint64_t seed = 1234;
	gpud_client *c = lib_connect();

	for (size_t d = 0; d < 4; d++) {
		gpud_dtype dt = dts[d];
		size_t es = gpud_dtype_size(dt);
		unsigned char *data = malloc(n * es);
		ck_assert_ptr_nonnull(data);
		for (size_t i = 0; i < n; i++) {
			double v = (harness_rng_unit(&seed) - 0.5) * 2e6;
			if (fabs(v) < 1)
				v = 7;
			switch (dt) {
			case GPUD_F32:
				((float *)data)[i] = (float)(v * 1.000123);
				break;
			case GPUD_F64:
				((double *)data)[i] = v * 1.000000123456789;
				break;
			case GPUD_I32:
				((int32_t *)data)[i] = (int32_t)v;
				break;
			default:
				((int64_t *)data)[i] = (int64_t)v * 1000003;
				break;
			}
		}
		gpud_handle h;
		LIB_OK(c, gpud_alloc(c, dt, 3, shape, data, &h));
		ck_assert_msg(h != 0, "handle 0");
		gpud_array a;
		LIB_OK(c, gpud_download(c, h, &a));
		ck_assert_int_eq(a.dtype, dt);
		ck_assert_int_eq(a.ndim, 3);
		ck_assert_uint_eq(a.shape[0], 3);
		ck_assert_uint_eq(a.shape[1], 4);
		ck_assert_uint_eq(a.shape[2], 5);
		ck_assert_uint_eq(a.nbytes, n * es);
		ck_assert_uint_eq(gpud_array_count(&a), n);
		ck_assert_msg(memcmp(a.data, data, n * es) == 0, "%s: downloaded bytes differ",
			      gpud_dtype_name(dt));
		gpud_array_free(&a);
		LIB_OK(c, gpud_free(c, &h, 1));
		free(data);
	}

	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

/* A 0-d array (shape (), one element): the wire carries an empty shape. */
START_TEST(test_zero_dim_array)
{
	gpud_client *c = lib_connect();
	double one = -3.25, back = 0;
	gpud_handle h0;
	gpud_array a0;

	LIB_OK(c, gpud_alloc(c, GPUD_F64, 0, NULL, &one, &h0));
	ck_assert_uint_eq(lib_status(c).bytes_in_use, 8);
	LIB_OK(c, gpud_download(c, h0, &a0));
	ck_assert_int_eq(a0.dtype, GPUD_F64);
	ck_assert_int_eq(a0.ndim, 0);
	ck_assert_uint_eq(a0.nbytes, 8);
	ck_assert_uint_eq(gpud_array_count(&a0), 1);
	memcpy(&back, a0.data, 8);
	ck_assert_double_eq(back, one);
	gpud_array_free(&a0);
	LIB_OK(c, gpud_download_range(c, h0, 0, &back, 8));
	ck_assert_double_eq(back, one);
	LIB_OK(c, gpud_free(c, &h0, 1));
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_upload_offset_download_range)
{
	double a[100], b[10], got[14];
	uint64_t n = 100, seed = 99;
	gpud_client *c = lib_connect();
	gpud_handle h;

	for (int i = 0; i < 100; i++)
		a[i] = 1.0 + harness_rng_unit(&seed);
	for (int i = 0; i < 10; i++)
		b[i] = -100.0 - i - harness_rng_unit(&seed);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, a, &h));
	LIB_OK(c, gpud_upload(c, h, 40 * sizeof(double), b, sizeof(b)));
	LIB_OK(c, gpud_download_range(c, h, 38 * sizeof(double), got, sizeof(got)));
	for (int i = 0; i < 14; i++) {
		int k = 38 + i;
		double want = (k >= 40 && k < 50) ? b[k - 40] : a[k];
		ck_assert_msg(got[i] == want, "element %d: got %.17g, expected %.17g", k, got[i],
			      want);
	}
	/* The whole buffer, and a range not aligned to elements. */
	gpud_array all;
	LIB_OK(c, gpud_download(c, h, &all));
	ck_assert_uint_eq(all.nbytes, sizeof(a));
	for (int k = 0; k < 100; k++) {
		double want = (k >= 40 && k < 50) ? b[k - 40] : a[k];
		ck_assert_msg(((double *)all.data)[k] == want, "element %d after upload", k);
	}
	unsigned char raw[5];
	LIB_OK(c, gpud_download_range(c, h, 3, raw, 5));
	ck_assert_int_eq(memcmp(raw, (unsigned char *)all.data + 3, 5), 0);
	gpud_array_free(&all);

	/* Out of bounds both ways. */
	LIB_FAIL(c, gpud_upload(c, h, 95 * sizeof(double), b, sizeof(b)), GPUD_EINVAL,
		 "do not fit");
	LIB_FAIL(c, gpud_download_range(c, h, 99 * sizeof(double), got, 2 * sizeof(double)),
		 GPUD_EINVAL, "past the end");
	LIB_OK(c, gpud_free(c, &h, 1));

	/* No bytes: at the end is fine, past it is refused all the same (both ways). */
	uint64_t n16 = 16;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n16, NULL, &h)); /* 128 bytes */
	char hex[17];
	snprintf(hex, sizeof(hex), "%016" PRIx64, h);
	LIB_OK(c, gpud_download_range(c, h, 128, got, 0));
	LIB_OK(c, gpud_download_range(c, h, 5, NULL, 0));
	LIB_OK(c, gpud_upload(c, h, 128, b, 0));
	char want[160];
	snprintf(want, sizeof(want),
		 "download: offset 129 is past the end of buffer %s (128 bytes)", hex);
	LIB_FAIL(c, gpud_download_range(c, h, 129, got, 0), GPUD_EINVAL, want);
	LIB_FAIL(c, gpud_upload(c, h, 129, b, 0), GPUD_EINVAL,
		 "upload: 0 bytes at offset 129 do not fit in buffer ");
	LIB_OK(c, gpud_free(c, &h, 1));
	/* and a freed buffer is unknown, with no bytes too */
	LIB_FAIL(c, gpud_download_range(c, h, 0, got, 0), GPUD_ENOTFOUND, "unknown handle");
	gpud_close(c);
}
END_TEST

START_TEST(test_free_and_unknown_handles)
{
	double v[4] = {1, 2, 3, 4};
	uint64_t n = 4;
	char hex[32];
	gpud_client *c = lib_connect();
	gpud_handle h, keep;
	gpud_array a;

	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &keep));
	LIB_OK(c, gpud_free(c, &h, 1));
	snprintf(hex, sizeof(hex), "%016" PRIx64, h);
	LIB_FAIL(c, gpud_download(c, h, &a), GPUD_ENOTFOUND, hex);
	LIB_FAIL(c, gpud_download(c, h, &a), GPUD_ENOTFOUND, "unknown handle");
	LIB_FAIL(c, gpud_upload(c, h, 0, v, 8), GPUD_ENOTFOUND, hex);
	/* Free of a handle that is gone, or never was. */
	LIB_FAIL(c, gpud_free(c, &h, 1), GPUD_ENOTFOUND, hex);
	gpud_handle bogus = 0x0000567890abcdefull; /* tag 0: no gpud makes it */
	LIB_FAIL(c, gpud_free(c, &bogus, 1), GPUD_ENOTFOUND, "0000567890abcdef");
	/* All or nothing: a list with one unknown handle frees none. */
	gpud_handle pair[2] = {keep, bogus};
	LIB_FAIL(c, gpud_free(c, pair, 2), GPUD_ENOTFOUND, "unknown handle");
	double back[4];
	LIB_OK(c, gpud_download_range(c, keep, 0, back, sizeof(back)));
	ck_assert_double_eq(back[3], 4.0);
	ck_assert_uint_eq(lib_status(c).buffers, 1);
	LIB_OK(c, gpud_free(c, &keep, 1));
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_kernels_list)
{
	static const unsigned real = (1u << GPUD_F32) | (1u << GPUD_F64);
	static const struct {
		const char *name;
		gpud_param_role role;
		unsigned dtypes;
		int optional;
		const char *default_value, *type;
	} want[] = {
		{"x", GPUD_PARAM_IN, real, 0, "", "float32|float64 1-d array"},
		{"y", GPUD_PARAM_IN, real, 0, "", "float32|float64 array"},
		{"freqs", GPUD_PARAM_IN, real, 1, "", "float32|float64 1-d array (optional)"},
		{"pgram", GPUD_PARAM_OUT, real | (1u << GPUD_C64) | (1u << GPUD_C128), 1, "",
		 "float32|float64|complex64|complex128 array (output)"},
		{"precenter", GPUD_PARAM_SCALAR, 0, 1, "false", "bool scalar (default false)"},
		{"normalize", GPUD_PARAM_SCALAR, 0, 1, "power",
		 "power|normalize|amplitude or bool (default power)"},
		{"weights", GPUD_PARAM_IN, real, 1, "", "float32|float64 1-d array (optional)"},
		{"floating_mean", GPUD_PARAM_SCALAR, 0, 1, "false", "bool scalar (default false)"},
		{"f0", GPUD_PARAM_SCALAR, 1u << GPUD_F64, 1, "", "float64 scalar (optional)"},
		{"df", GPUD_PARAM_SCALAR, 1u << GPUD_F64, 1, "", "float64 scalar (optional)"},
		{"nf", GPUD_PARAM_SCALAR, 1u << GPUD_I64, 1, "", "int64 scalar (optional)"},
		{"legacy", GPUD_PARAM_SCALAR, 0, 1, "false", "bool scalar (default false)"},
		{"method", GPUD_PARAM_SCALAR, 0, 1, "auto", "auto|direct|nufft (default auto)"},
		{"eps", GPUD_PARAM_SCALAR, 1u << GPUD_F64, 1, "", "float64 scalar (optional)"},
	};
	gpud_client *c = lib_connect();
	gpud_kernel_list *l;

	LIB_OK(c, gpud_kernels(c, &l));
	ck_assert_ptr_nonnull(l);
	gpud_kernel_info *k = NULL;
	for (size_t i = 0; i < l->count; i++)
		if (!strcmp(l->kernels[i].name, "lombscargle"))
			k = &l->kernels[i];
	ck_assert_msg(k != NULL, "lombscargle is not among the %zu kernels", l->count);
	ck_assert_msg(strstr(k->doc, "Lomb-Scargle") != NULL, "doc '%s'", k->doc);
	ck_assert_uint_eq(k->nparams, sizeof(want) / sizeof(want[0]));
	for (size_t j = 0; j < sizeof(want) / sizeof(want[0]); j++) {
		gpud_param_info *p = &k->params[j];
		ck_assert_str_eq(p->name, want[j].name);
		ck_assert_int_eq(p->role, want[j].role);
		ck_assert_msg(p->doc[0], "param %s lacks doc", p->name);
		ck_assert_msg(p->dtypes == want[j].dtypes, "param %s: dtypes 0x%x, expected 0x%x",
			      p->name, p->dtypes, want[j].dtypes);
		/* y and pgram take a batch (any rank: the kernel's check wants 1 or 2) */
		int want_ndim = p->role == GPUD_PARAM_SCALAR                         ? 0
				: !strcmp(p->name, "y") || !strcmp(p->name, "pgram") ? -1
										     : 1;
		ck_assert_msg(p->ndim == want_ndim, "param %s: ndim %d, expected %d", p->name,
			      p->ndim, want_ndim);
		ck_assert_msg(p->optional == want[j].optional, "param %s: optional %d", p->name,
			      p->optional);
		ck_assert_str_eq(p->default_value, want[j].default_value);
		ck_assert_str_eq(p->type, want[j].type);
	}
	gpud_kernel_list_free(l);
	gpud_close(c);
}
END_TEST

START_TEST(test_status_counts)
{
	gpud_client *c = lib_connect();
	double d[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	float fl[6] = {1, 2, 3, 4, 5, 6};
	int64_t iv[7] = {1, 2, 3, 4, 5, 6, 7};
	uint64_t s1 = 10, s2[2] = {2, 3}, s3 = 7;
	gpud_handle h[3];

	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(s.bytes_in_use, 0);
	uint64_t req0 = s.requests, err0 = s.errors;

	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &s1, d, &h[0]));
	LIB_OK(c, gpud_alloc(c, GPUD_F32, 2, s2, fl, &h[1]));
	LIB_OK(c, gpud_alloc(c, GPUD_I64, 1, &s3, iv, &h[2]));
	s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 3);
	ck_assert_uint_eq(s.bytes_in_use, 80 + 24 + 56);
	ck_assert_uint_ge(s.bytes_high_water, 160);
	ck_assert_uint_eq(s.requests, req0 + 4); /* 3 allocs + this status */
	ck_assert_uint_eq(s.errors, err0);

	LIB_OK(c, gpud_free(c, &h[1], 1));
	s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 2);
	ck_assert_uint_eq(s.bytes_in_use, 136);

	gpud_array a;
	LIB_FAIL(c, gpud_download(c, h[1], &a), GPUD_ENOTFOUND, "unknown handle");
	s = lib_status(c);
	ck_assert_uint_eq(s.errors, err0 + 1);

	gpud_handle rest[2] = {h[0], h[2]};
	LIB_OK(c, gpud_free(c, rest, 2));
	s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(s.bytes_in_use, 0);
	ck_assert_uint_ge(s.bytes_high_water, 160);
	gpud_close(c);
}
END_TEST

START_TEST(test_lombscargle_library)
{
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	const size_t nx = 157, nf = 211;
	double x[157], y[157], f[211], ref[211], got[211];
	gpud_client *c = lib_connect();

	for (int d = 0; d < 2; d++) {
		for (int combo = 0; combo < 4; combo++) {
			gpud_dtype dt = dts[d];
			int pre = combo & 1, norm = (combo >> 1) & 1;
			char what[96];
			ls_result res;

			gen_ls(1000 + (uint64_t)(d * 4 + combo), nx, nf, x, y, f);
			if (dt == GPUD_F32) {
				round_to_f32(x, nx);
				round_to_f32(y, nx);
				round_to_f32(f, nf);
			}
			ls_ref(x, y, nx, f, nf, pre, norm, ref);
			ls_lib_run(c, dt, x, y, nx, f, nf, pre, norm, 0, got, &res);
			snprintf(what, sizeof(what), "lombscargle %s precenter=%d normalize=%d",
				 gpud_dtype_name(dt), pre, norm);
			ck_assert_msg(res.st == GPUD_OK, "%s: %s", what, res.msg);
			ck_assert_uint_eq(res.nout, 1);
			ck_assert_str_eq(res.out.name, "pgram");
			ck_assert_int_eq(res.out.dtype, dt);
			ck_assert_int_eq(res.out.ndim, 1);
			ck_assert_uint_eq(res.out.shape[0], nf);
			ck_assert_msg(res.info.elapsed_us > 0 && res.info.kernel_us > 0 &&
					      res.info.kernel_us <= res.info.elapsed_us * 1.01 + 1,
				      "%s: elapsed_us %g, kernel_us %g", what, res.info.elapsed_us,
				      res.info.kernel_us);
			assert_matches(got, dt, ref, nf, what);
		}
	}
	/* Everything the runs made was freed. */
	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0);
	ck_assert_uint_eq(s.bytes_in_use, 0);
	gpud_close(c);
}
END_TEST

/*
 * One session's requests run in order: runs writing one output buffer from
 * changing inputs, then sync, leave the last run's result; sync on an idle
 * connection answers too.
 */
START_TEST(test_session_order_and_sync)
{
	const size_t nx = 40, nf = 257;
	double x[40], y[40], f[257], ref[257], got[257];
	gpud_client *c = lib_connect();
	uint64_t sx = nx, sf = nf;
	gpud_handle h[4];

	LIB_OK(c, gpud_sync(c));
	gen_ls(77, nx, nf, x, y, f);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, x, &h[0]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, y, &h[1]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, f, &h[2]));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, NULL, &h[3]));
	gpud_arg args[4] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			    gpud_arg_buffer("freqs", h[2]), gpud_arg_buffer("pgram", h[3])};
	for (int round = 0; round < 5; round++) {
		gen_ls(100 + (uint64_t)round, nx, nf, x, y, f);
		LIB_OK(c, gpud_upload(c, h[1], 0, y, sizeof(y)));
		gpud_output o;
		size_t no;
		LIB_OK(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL));
		ck_assert_uint_eq(o.handle, h[3]);
	}
	LIB_OK(c, gpud_sync(c));
	/* x and freqs are still seed 77's; y is round 4's. */
	double x77[40], y77[40], f77[257];
	gen_ls(77, nx, nf, x77, y77, f77);
	ls_ref(x77, y, nx, f77, nf, 0, 0, ref);
	LIB_OK(c, gpud_download_range(c, h[3], 0, got, sizeof(got)));
	assert_matches(got, GPUD_F64, ref, nf, "the last of five ordered runs");
	LIB_OK(c, gpud_free(c, h, 4));
	LIB_OK(c, gpud_sync(c));
	gpud_close(c);
}
END_TEST

START_TEST(test_lombscargle_into_given_output)
{
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	const size_t nx = 64, nf = 97;
	double x[64], y[64], f[97], ref[97], nan_d[97], got[97];
	gpud_client *c = lib_connect();

	for (size_t i = 0; i < nf; i++)
		nan_d[i] = NAN;
	for (int d = 0; d < 2; d++) {
		gpud_dtype dt = dts[d];
		uint64_t snf = nf;
		gpud_handle pg;
		ls_result res;

		gen_ls(77 + (uint64_t)d, nx, nf, x, y, f);
		if (dt == GPUD_F32) {
			round_to_f32(x, nx);
			round_to_f32(y, nx);
			round_to_f32(f, nf);
		}
		ls_ref(x, y, nx, f, nf, 1, 0, ref);
		void *poison = to_dtype(nan_d, nf, dt);
		LIB_OK(c, gpud_alloc(c, dt, 1, &snf, poison, &pg));
		free(poison);
		ls_lib_run(c, dt, x, y, nx, f, nf, 1, 0, pg, got, &res);
		ck_assert_msg(res.st == GPUD_OK, "%s: %s", gpud_dtype_name(dt), res.msg);
		ck_assert_uint_eq(res.nout, 1);
		ck_assert_msg(res.out.handle == pg,
			      "the output is %016" PRIx64 ", not the given %016" PRIx64,
			      res.out.handle, pg);
		for (size_t i = 0; i < nf; i++)
			ck_assert_msg(!isnan(elem(got, dt, i)),
				      "%s: pgram[%zu] was not overwritten (NaN)",
				      gpud_dtype_name(dt), i);
		assert_matches(got, dt, ref, nf, "lombscargle into a given pgram");
		/* The output is still the caller's; exactly one buffer is left. */
		ck_assert_uint_eq(lib_status(c).buffers, 1);
		LIB_OK(c, gpud_free(c, &pg, 1));
	}

	/* A given output of the wrong length or dtype is refused. */
	uint64_t wrong = 5, sx = nx, sf = nf;
	gpud_handle hx, hy, hf, hw, hd;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, x, &hx));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sx, y, &hy));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sf, f, &hf));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &wrong, NULL, &hw));
	LIB_OK(c, gpud_alloc(c, GPUD_F32, 1, &sf, NULL, &hd));
	gpud_arg args[4] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hy),
			    gpud_arg_buffer("freqs", hf), gpud_arg_buffer("pgram", hw)};
	gpud_output o;
	size_t no;
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL), GPUD_EINVAL,
		 "output 'pgram' must be");
	args[3] = gpud_arg_buffer("pgram", hd);
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL), GPUD_EINVAL, "pgram");
	gpud_handle all[5] = {hx, hy, hf, hw, hd};
	LIB_OK(c, gpud_free(c, all, 5));
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_library_errors)
{
	gpud_client *c = lib_connect();
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	uint64_t n = 8, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 8};
	gpud_handle hx, bogus = 0x0000facecafebeefull, hn;
	gpud_output o;
	size_t no;

	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &hx));
	gpud_arg args[3] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", bogus),
			    gpud_arg_buffer("freqs", hx)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 3, &o, 1, &no, NULL), GPUD_ENOTFOUND,
		 "unknown handle");
	ck_assert_msg(strstr(gpud_errmsg(c), "0000facecafebeef") && strstr(gpud_errmsg(c), "'y'"),
		      "message '%s' should name argument 'y' and the handle", gpud_errmsg(c));
	LIB_FAIL(c, gpud_run(c, "nosuchkernel", args, 3, &o, 1, &no, NULL), GPUD_EUNKNOWN_KERNEL,
		 "unknown kernel 'nosuchkernel'");
	/* ndim 9: refused by the library before anything is sent. */
	LIB_FAIL(c, gpud_alloc(c, GPUD_F64, 9, nine, v, &hn), GPUD_EARG, "ndim");
	LIB_FAIL(c, gpud_alloc(c, (gpud_dtype)9, 1, &n, v, &hn), GPUD_EARG, "dtype");
	/* A scalar where a buffer belongs, and the other way round. */
	gpud_arg mixed[3] = {gpud_arg_f64("x", 1.5), gpud_arg_buffer("y", hx),
			     gpud_arg_buffer("freqs", hx)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", mixed, 3, &o, 1, &no, NULL), GPUD_EINVAL,
		 "must be a buffer");
	gpud_arg mixed2[4] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hx),
			      gpud_arg_buffer("freqs", hx), gpud_arg_buffer("normalize", hx)};
	LIB_FAIL(c, gpud_run(c, "lombscargle", mixed2, 4, &o, 1, &no, NULL), GPUD_EINVAL,
		 "argument 'normalize' must be a");
	/* a word that is none of normalize's */
	gpud_arg word[4] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hx),
			    gpud_arg_buffer("freqs", hx), gpud_arg_text("normalize", "amplitudes")};
	LIB_FAIL(c, gpud_run(c, "lombscargle", word, 4, &o, 1, &no, NULL), GPUD_EINVAL,
		 "lombscargle: argument 'normalize' must be one of power|normalize|amplitude or "
		 "bool (default power), got 'amplitudes'");
	/* Failed runs leave nothing behind, and the connection is still good. */
	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 1);
	LIB_OK(c, gpud_free(c, &hx, 1));
	gpud_close(c);
}
END_TEST

/* x, y and weights of dtype dt in the daemon: h[0..2]. */
static void upload_xyw(gpud_client *c, gpud_dtype dt, const double *x, const double *y,
		       const double *w, size_t n, gpud_handle h[3])
{
	uint64_t sn = n;
	const double *src[3] = {x, y, w};
	for (int i = 0; i < 3; i++) {
		void *b = to_dtype(src[i], n, dt);
		LIB_OK(c, gpud_alloc(c, dt, 1, &sn, b, &h[i]));
		free(b);
	}
}

/*
 * scipy >= 1.15's arguments through the library: weights, floating_mean and
 * each normalize word (amplitude's output complex), the frequencies as the
 * grid f0 + df k (float64 scalars, nothing uploaded); against the reference.
 */
START_TEST(test_lombscargle_weights_grid)
{
	static const char *const words[] = {"power", "normalize", "amplitude"};
	const size_t nx = 90, nf = 300;
	double x[90], y[90], w[90], f[300], ref[300], ref_im[300];
	const double f0 = 0.3, df = 0.0125;
	gpud_client *c = lib_connect();

	gen_ls(4321, nx, nf, x, y, f);
	uint64_t ws = 99;
	for (size_t j = 0; j < nx; j++)
		w[j] = 0.1 + 2 * harness_rng_unit(&ws);
	w[7] = 0; /* zero weights are allowed */
	for (size_t i = 0; i < nf; i++)
		f[i] = f0 + df * (double)i; /* the grid, as gpud computes it (float64) */
	for (int d = 0; d < 2; d++) {
		gpud_dtype dt = d ? GPUD_F32 : GPUD_F64;
		double xr[90], yr[90], wr[90];
		memcpy(xr, x, sizeof(x));
		memcpy(yr, y, sizeof(y));
		memcpy(wr, w, sizeof(w));
		if (dt == GPUD_F32) {
			round_to_f32(xr, nx);
			round_to_f32(yr, nx);
			round_to_f32(wr, nx);
		}
		gpud_handle h[3];
		upload_xyw(c, dt, xr, yr, wr, nx, h);
		for (int combo = 0; combo < 6; combo++) {
			int mode = combo % 3, fm = combo / 3;
			gpud_arg args[] = {gpud_arg_buffer("x", h[0]),
					   gpud_arg_buffer("y", h[1]),
					   gpud_arg_buffer("weights", h[2]),
					   gpud_arg_f64("f0", f0),
					   gpud_arg_f64("df", df),
					   gpud_arg_i64("nf", (int64_t)nf),
					   gpud_arg_text("normalize", words[mode]),
					   gpud_arg_bool("floating_mean", fm)};
			gpud_output o;
			size_t no;
			char what[128];
			snprintf(what, sizeof(what),
				 "%s weights, grid, normalize=%s floating_mean=%d",
				 gpud_dtype_name(dt), words[mode], fm);
			LIB_OK(c, gpud_run(c, "lombscargle", args, 8, &o, 1, &no, NULL));
			ck_assert_uint_eq(no, 1);
			gpud_dtype odt = mode == 2 ? (dt == GPUD_F32 ? GPUD_C64 : GPUD_C128) : dt;
			ck_assert_msg(o.dtype == odt, "%s: output %s", what,
				      gpud_dtype_name(o.dtype));
			ck_assert_int_eq(o.ndim, 1);
			ck_assert_uint_eq(o.shape[0], nf);
			gpud_array a;
			LIB_OK(c, gpud_download(c, o.handle, &a));
			LIB_OK(c, gpud_free(c, &o.handle, 1));
			ls_opts opts = {.w = wr, .floating_mean = fm, .normalize = mode};
			ls_ref_full(xr, yr, nx, f, nf, &opts, ref, ref_im);
			if (mode != 2) {
				assert_matches(a.data, dt, ref, nf, what);
			} else { /* the real and the imaginary parts, each as an array */
				size_t es = gpud_dtype_size(dt);
				char *re = malloc(nf * es), *im = malloc(nf * es);
				ck_assert(re && im);
				for (size_t i = 0; i < nf; i++) { /* parts in x's dtype */
					memcpy(re + i * es, (char *)a.data + 2 * i * es, es);
					memcpy(im + i * es, (char *)a.data + (2 * i + 1) * es, es);
				}
				assert_matches(re, dt, ref, nf, what);
				assert_matches(im, dt, ref_im, nf, what);
				free(re);
				free(im);
			}
			gpud_array_free(&a);
		}
		LIB_OK(c, gpud_free(c, h, 3));
	}
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

/*
 * Weights whose values are wrong are found in the run (the verdict):
 * GPUD_EINVAL with the kernel's message; nothing the run made is left, a
 * given output stays the caller's, and the connection goes on.
 */
START_TEST(test_lombscargle_verdict)
{
	static const char bad[] =
		"lombscargle: argument 'weights' must hold only non-negative "
		"values that sum to a positive value; got a negative or NaN weight";
	static const char zero[] = "lombscargle: argument 'weights' must hold only non-negative "
				   "values that sum to a positive value; got weights that sum to 0";
	const size_t nx = 30, nf = 40;
	double x[30], y[30], f[40], w[30], ref[40], got[40];
	gpud_client *c = lib_connect();
	gpud_output o;
	size_t no;
	uint64_t snf = nf;
	gpud_handle h[3], hf, hp;

	gen_ls(777, nx, nf, x, y, f);
	for (size_t j = 0; j < nx; j++)
		w[j] = 1;
	upload_xyw(c, GPUD_F64, x, y, w, nx, h);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &snf, f, &hf));
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &snf, NULL, &hp));
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			   gpud_arg_buffer("freqs", hf), gpud_arg_buffer("weights", h[2]),
			   gpud_arg_buffer("pgram", hp)};
	static const struct {
		size_t at;
		double v;
		int all;
		const char *says;
	} cases[] = {{3, -1, 0, bad},
		     {29, -1e-300, 0, bad},
		     {0, NAN, 0, bad},
		     {0, 0, 1, zero},
		     {0, -0.0, 1, zero}};
	uint64_t err0 = lib_status(c).errors;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double wb[30];
		for (size_t j = 0; j < nx; j++)
			wb[j] = cases[i].all ? cases[i].v : 1;
		wb[cases[i].at] = cases[i].v;
		LIB_OK(c, gpud_upload(c, h[2], 0, wb, sizeof(wb)));
		/* the daemon makes the output */
		LIB_FAIL(c, gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL), GPUD_EINVAL,
			 cases[i].says);
		ck_assert_str_eq(gpud_errmsg(c), cases[i].says);
		/* into a given output */
		LIB_FAIL(c, gpud_run(c, "lombscargle", args, 5, &o, 1, &no, NULL), GPUD_EINVAL,
			 cases[i].says);
		/* nothing left behind: x, y, weights, freqs and the given pgram */
		ck_assert_uint_eq(lib_status(c).buffers, 5);
	}
	ck_assert_uint_eq(lib_status(c).errors, err0 + 10);
	/* good weights again: the same connection and buffers work */
	LIB_OK(c, gpud_upload(c, h[2], 0, w, sizeof(w)));
	LIB_OK(c, gpud_run(c, "lombscargle", args, 5, &o, 1, &no, NULL));
	ck_assert_uint_eq(o.handle, hp);
	LIB_OK(c, gpud_download_range(c, hp, 0, got, sizeof(got)));
	ls_ref(x, y, nx, f, nf, 0, 0, ref);
	assert_matches(got, GPUD_F64, ref, nf, "after the verdicts");
	/* the weights' shape is check's: refused before the run */
	gpud_handle hs;
	uint64_t short_n = nx - 1;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &short_n, w, &hs));
	args[3] = gpud_arg_buffer("weights", hs);
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 5, &o, 1, &no, NULL), GPUD_EINVAL,
		 "lombscargle: weights must have the length of x, got 29 for 30 samples");
	gpud_handle all[6] = {h[0], h[1], h[2], hf, hp, hs};
	LIB_OK(c, gpud_free(c, all, 6));
	ck_assert_uint_eq(lib_status(c).buffers, 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_raw_protocol_errors)
{
	pb empty = {.n = 0}, hdr;
	uint8_t *m;
	size_t len;

	/* Shorter than the frame prefix. */
	static const uint8_t two[2] = {0x01, 0x02};
	raw_expect(two, sizeof(two), ST_PROTOCOL, "malformed", "a 2-byte message");

	/* A prefix declaring more header than there is. */
	static const uint8_t overlong[8] = {0xff, 0xff, 0x00, 0x00, 1, 2, 3, 4};
	raw_expect(overlong, sizeof(overlong), ST_PROTOCOL, "malformed",
		   "a prefix declaring a 65535-byte header");

	/* A header that is not a protobuf Request (wire type 7 does not exist). */
	static const uint8_t junkhdr[9] = {5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff};
	raw_expect(junkhdr, sizeof(junkhdr), ST_PROTOCOL, "not a gpud Request",
		   "a header that is not a Request");

	/* Another protocol version. */
	hdr = pb_request(99, 7, 17, &empty);
	m = frame(&hdr, NULL, 0, &len);
	raw_expect(m, len, ST_PROTOCOL, "version", "a version 99 status request");
	{
		raw_reply r;
		ck_assert_int_eq(raw_call(m, len, 10000, &r), 0);
		ck_assert_msg(strstr(r.message, "99") && strstr(r.message, "1"),
			      "the version message should name 99 and 1: '%s'", r.message);
	}
	free(m);

	/* A well-formed request without a verb. */
	pb noverb = {.n = 0};
	pb_uint(&noverb, 1, WIRE_VERSION);
	pb_uint(&noverb, 2, 8);
	m = frame(&noverb, NULL, 0, &len);
	raw_expect(m, len, ST_PROTOCOL, "verb", "a request without a verb");
	free(m);

	/* A raw alloc of 9 dimensions reaches the daemon's own check. */
	pb alloc = {.n = 0}, shape = {.n = 0};
	pb_uint(&alloc, 1, 2); /* DTYPE_F64 */
	for (int i = 0; i < 9; i++)
		pb_varint(&shape, 1);
	pb_sub(&alloc, 2, &shape);
	hdr = pb_request(WIRE_VERSION, 9, 11, &alloc);
	m = frame(&hdr, NULL, 0, &len);
	raw_expect(m, len, ST_INVALID_ARGUMENT, "at most 8 dimensions", "a raw alloc of 9-d");
	free(m);

	/* An alloc whose payload does not match its shape. */
	pb alloc2 = {.n = 0}, shape2 = {.n = 0};
	pb_uint(&alloc2, 1, 2);
	pb_varint(&shape2, 4);
	pb_sub(&alloc2, 2, &shape2);
	pb_uint(&alloc2, 3, 1); /* with_data */
	hdr = pb_request(WIRE_VERSION, 10, 11, &alloc2);
	m = frame(&hdr, "0123456789", 10, &len);
	raw_expect(m, len, ST_INVALID_ARGUMENT, "needs 32", "an alloc with a short payload");
	free(m);

	/* A good raw status request is answered OK, with the id echoed. */
	hdr = pb_request(WIRE_VERSION, 4242, 17, &empty);
	m = frame(&hdr, NULL, 0, &len);
	{
		raw_reply r;
		ck_assert_int_eq(raw_call(m, len, 10000, &r), 0);
		ck_assert_uint_eq(r.code, ST_OK);
		ck_assert_uint_eq(r.id, 4242);
		ck_assert_int_eq(r.body_field, 17);
	}
	free(m);

	assert_fresh_client_works("malformed raw messages");
	gpud_client *c = lib_connect();
	gpud_daemon_status s = lib_status(c);
	ck_assert_uint_eq(s.buffers, 0); /* the failed allocs left nothing */
	ck_assert_uint_ge(s.errors, 7);
	gpud_close(c);
}
END_TEST

TCase *e2e_library(void)
{
	TCase *tc = tcase_create("library");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_connect_server_info);
	tcase_add_test(tc, test_roundtrip_dtypes);
	tcase_add_test(tc, test_zero_dim_array);
	tcase_add_test(tc, test_upload_offset_download_range);
	tcase_add_test(tc, test_free_and_unknown_handles);
	tcase_add_test(tc, test_kernels_list);
	tcase_add_test(tc, test_status_counts);
	tcase_add_test(tc, test_lombscargle_library);
	tcase_add_test(tc, test_lombscargle_into_given_output);
	tcase_add_test(tc, test_lombscargle_weights_grid);
	tcase_add_test(tc, test_lombscargle_verdict);
	tcase_add_test(tc, test_session_order_and_sync);
	tcase_add_test(tc, test_library_errors);
	tcase_add_test(tc, test_raw_protocol_errors);
	return tc;
}
