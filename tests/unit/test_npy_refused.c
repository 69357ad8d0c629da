/*
 * tests/unit/test_npy_refused.c — .npy images client/npy.c refuses, each run
 * through both gpud_npy_parse and gpud_npy_load with the same message: the
 * headers of a table (Fortran order, truncated data, too many dimensions, bad
 * shapes, malformed dicts), unsupported dtypes, bad magic, truncated headers,
 * unknown versions; the output zeroed on error, missing files, short message
 * buffers and refused saves. Each test runs single-threaded in its own
 * process (Check's fork mode).
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/unit/test_npy_util.h"

/* --- refused headers ---------------------------------------------------------------------- */

/*
 * A version 1.0 image of the header and dlen zero bytes of data: refused, the message
 * naming the file and holding want (expect_error).
 */
static const struct refused_header {
	const char *what, *header;
	size_t dlen;
	const char *want;
} refused_headers[] = {
	{"fortran", "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 48, "Fortran"},
	{"fortran", "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 48,
	 "np.ascontiguousarray"},
	{"truncated_data", "{'descr': '<f4', 'fortran_order': False, 'shape': (1024,), }", 100,
	 "truncated: header declares 4096 bytes of data, file has 100"},
	{"truncated_data", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 7,
	 "header declares 8 bytes of data, file has 7"},
	{"too_many_dims",
	 "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 16,
	 "shape has 9 dimensions; at most 8 are supported"},
	{"too_many_dims",
	 "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4), }",
	 16, "shape has 12 dimensions"},
	{"bad_shape", "{'descr': '<f8', 'fortran_order': False, 'shape': (-1,), }", 64,
	 "negative dimension -1"},
	{"bad_shape", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, -30), }", 64,
	 "negative dimension -30"},
	{"bad_shape", "{'descr': '<f8', 'fortran_order': False, 'shape': ('a',), }", 64,
	 "expected a non-negative integer in 'shape', got '''"},
	{"bad_shape", "{'descr': '<f8', 'fortran_order': False, 'shape': (2.5,), }", 64,
	 "expected a non-negative integer in 'shape', got '2'"},
	{"bad_shape", "{'descr': '<f8', 'fortran_order': False, 'shape': (3x,), }", 64,
	 "non-negative integer"},
	{"bad_shape", "{'descr': '<f8', 'fortran_order': False, 'shape': (2,,), }", 64,
	 "non-negative integer"},
	{"bad_shape", "{'descr': '<f8', 'fortran_order': False, 'shape': [2, 3], }", 64,
	 "expected a tuple"},
	{"bad_shape", "{'descr': '<f8', 'fortran_order': False, 'shape': (2 3), }", 64,
	 "expected ',' or ')'"},
	{"bad_shape",
	 "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", 64,
	 "does not fit in 64 bits"},
	{"bad_shape",
	 "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
	 64, "is too large: its byte count overflows"},
	{"bad_shape",
	 "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615,), }", 64,
	 "overflows"},
	{"malformed_header", "", 64, "expected '{' opening the header dict, got the end"},
	{"malformed_header", "{'descr': '<f8', 'fortran_order': False}", 64, "missing key 'shape'"},
	{"malformed_header", "{'descr': '<f8', 'shape': (1,)}", 64, "missing key 'fortran_order'"},
	{"malformed_header", "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
	 64, "unexpected key 'extra'"},
	{"malformed_header",
	 "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (1,)}", 64,
	 "key 'descr' appears twice"},
	{"malformed_header", "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)} x", 64,
	 "nothing but padding after the header dict, got 'x'"},
	{"malformed_header", "{'descr': '<f8' 'fortran_order': False, 'shape': (1,)}", 64,
	 "at offset 16: expected ',' or '}' in the header dict, got '''"},
	{"malformed_header", "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)", 64,
	 "expected ',' or '}' in the header dict, got the end of the header"},
	{"malformed_header", "{'descr': '<f8', 'fortran_order': 0, 'shape': (1,)}", 64,
	 "expected True or False"},
	{"malformed_header", "{'descr': '<f8', 'fortran_order': Falsey, 'shape': (1,)}", 64,
	 "expected True or False"},
	{"malformed_header", "{descr: '<f8', 'fortran_order': False, 'shape': (1,)}", 64,
	 "at offset 1: expected a quoted string, got 'd'"},
	{"malformed_header", "{'descr' '<f8', 'fortran_order': False, 'shape': (1,)}", 64,
	 "expected ':' after a key"},
	{"malformed_header", "{'descr': '<f8\n', 'fortran_order': False, 'shape': (1,)}", 64,
	 "string at offset 10 is not terminated"},
	{"malformed_header", "{'descr': 'x\\'y', 'fortran_order': False, 'shape': (1,)}", 64,
	 "escape sequences"},
	{"malformed_header", "{'descr': 8, 'fortran_order': False, 'shape': (1,)}", 64,
	 "expected a quoted string, got '8'"},
};

START_TEST(test_refused_header)
{
	static const unsigned char zeros[100];
	const struct refused_header *r = &refused_headers[_i];

	ck_assert_msg(r->dlen <= sizeof(zeros), "row %d (%s): dlen %zu", _i, r->what, r->dlen);
	expect_error(r->header, zeros, r->dlen, r->want);
}
END_TEST

/* --- refused files and other refusals ------------------------------------------------------- */

START_TEST(test_unsupported_descr)
{
	static const char *descrs[] = {"|O",   "<c32", "|b1", "<u4", "<f2",
				       "<f16", "f8",   "<i2", "<c4", ""};
	const unsigned char v[64] = {0};
	char hdr[256];

	for (size_t i = 0; i < sizeof(descrs) / sizeof(descrs[0]); i++) {
		char want[32];

		snprintf(hdr, sizeof(hdr),
			 "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }", descrs[i]);
		snprintf(want, sizeof(want), "'%s'", descrs[i]);
		expect_error(hdr, v, sizeof(v), want);
		expect_error(hdr, v, sizeof(v),
			     "supported: '<f4', '<f8', '<i4', '<i8', '<c8', '<c16'");
	}
	expect_error(
		"{'descr': [('x', '<f4'), ('y', '<i4')], 'fortran_order': False, 'shape': (2,), }",
		v, sizeof(v), "[('x', '<f4'), ('y', '<i4')]");
	expect_error("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2,), }", v,
		     sizeof(v), "structured");

	/* A NUL (or any other unprintable byte) in the descr: refused, and shown
	 * escaped, never as the supported descr before it. */
	static const struct {
		const char *descr; /* '@' stands for a NUL byte */
		const char *want;
	} odd[] = {
		{"<f4@", "unsupported dtype descr '<f4\\x00'; supported: "},
		{"<f@", "unsupported dtype descr '<f\\x00'; supported: "},
		{"@<f4", "unsupported dtype descr '\\x00<f4'; supported: "},
		{"<c16@", "unsupported dtype descr '<c16\\x00'; supported: "},
		{"<f4\x7f", "unsupported dtype descr '<f4\\x7f'; supported: "},
	};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		char err[512];
		gpud_array a;
		size_t len;
		snprintf(hdr, sizeof(hdr),
			 "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }", odd[i].descr);
		unsigned char *b = build(1, 0, hdr, v, 16, &len);
		for (unsigned char *q = b + 10; q < b + len - 16; q++)
			if (*q == '@')
				*q = '\0';
		ck_assert_int_eq(run_both(b, len, "nul.npy", &a, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, odd[i].want) != NULL, "error \"%s\" lacks \"%s\"", err,
			      odd[i].want);
		free(b);
	}
	/* and a key with one, the same way */
	{
		char err[512];
		gpud_array a;
		size_t len;
		unsigned char *b =
			build(1, 0, "{'descr': '<f4', 'sh@pe': (2,), 'fortran_order': False, }", v,
			      8, &len);
		for (unsigned char *q = b + 10; q < b + len - 8; q++)
			if (*q == '@')
				*q = '\0';
		ck_assert_int_eq(run_both(b, len, "nulkey.npy", &a, err, sizeof(err)), -1);
		assert_has(err, "unexpected key 'sh\\x00pe'");
		free(b);
	}
}
END_TEST

START_TEST(test_bad_magic)
{
	static const char notnpy[] = "hello world, this is not numpy";
	static const char zip[] = "PK\x03\x04 and then some";
	char err[256], path[PATH_MAX];
	gpud_array a;

	ck_assert_int_eq(run_both((const unsigned char *)notnpy, sizeof(notnpy) - 1, "m.npy", &a,
				  err, sizeof(err)),
			 -1);
	tmp_path(path, sizeof(path), "m.npy");
	ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "%s", err);
	assert_has(err, ": not a .npy file (bad magic)");
	ck_assert_int_eq(run_both((const unsigned char *)zip, sizeof(zip) - 1, "m.npy", &a, err,
				  sizeof(err)),
			 -1);
	assert_has(err, "not a .npy");
	assert_has(err, "zip");
	ck_assert_int_eq(run_both((const unsigned char *)"", 0, "m.npy", &a, err, sizeof(err)), -1);
	assert_has(err, "not a .npy");
	/* A magic prefix alone is a truncated file, not a foreign one. */
	ck_assert_int_eq(run_both((const unsigned char *)"\x93NUM", 4, "m.npy", &a, err,
				  sizeof(err)),
			 -1);
	assert_has(err, "truncated preamble");
	ck_assert_int_eq(gpud_npy_parse(NULL, 0, "mem", &a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "mem: not a .npy file (the file is empty)");
}
END_TEST

START_TEST(test_truncated_header)
{
	const char *hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }"
			  "                                                          \n";
	char err[256], want[128];
	unsigned char *b;
	gpud_array a;
	size_t len, hl = strlen(hdr);

	b = build(1, 0, hdr, NULL, 0, &len);
	ck_assert_int_eq(run_both(b, 10 + 50, "th.npy", &a, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "truncated header: preamble declares %zu bytes of header, file has 50", hl);
	assert_has(err, want);
	/* Version 2.0: the 4-byte length field itself cut short. */
	free(b);
	b = build(2, 0, hdr, NULL, 0, &len);
	ck_assert_int_eq(run_both(b, 10, "th.npy", &a, err, sizeof(err)), -1);
	assert_has(err, "truncated preamble: file has 10 bytes");
	free(b);
}
END_TEST

START_TEST(test_bad_version)
{
	static const int vers[][2] = {{4, 0}, {1, 1}, {0, 0}, {255, 0}};
	const char *hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
	const double v = 1.0;

	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
		char err[256], want[64];
		unsigned char *b;
		gpud_array a;
		size_t len;

		b = build(vers[i][0], vers[i][1], hdr, &v, sizeof(v), &len);
		ck_assert_int_eq(run_both(b, len, "v.npy", &a, err, sizeof(err)), -1);
		snprintf(want, sizeof(want), "unsupported .npy format version %d.%d", vers[i][0],
			 vers[i][1]);
		assert_has(err, want);
		assert_has(err, "supported: 1.0, 2.0, 3.0");
		free(b);
	}
}
END_TEST

START_TEST(test_out_zeroed_on_error)
{
	const gpud_array zero = {0};
	char err[256];
	gpud_array a;

	memset(&a, 0x5a, sizeof(a));
	ck_assert_int_eq(gpud_npy_parse("junkjunkjunk", 12, "j", &a, err, sizeof(err)), -1);
	ck_assert_mem_eq(&a, &zero, sizeof(a));
	memset(&a, 0x5a, sizeof(a));
	ck_assert_int_eq(gpud_npy_load("/nonexistent/dir/x.npy", &a, err, sizeof(err)), -1);
	ck_assert_mem_eq(&a, &zero, sizeof(a));
}
END_TEST

START_TEST(test_missing_file)
{
	char err[256], path[PATH_MAX];
	gpud_array a;

	tmp_path(path, sizeof(path), "does-not-exist.npy");
	ck_assert_int_eq(gpud_npy_load(path, &a, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "%s", err);
	assert_has(err, ": cannot open: No such file or directory");
	/* A directory opens on Linux but cannot be read. */
	ck_assert_int_eq(gpud_npy_load(tmpdir, &a, err, sizeof(err)), -1);
	assert_has(err, "Is a directory");
}
END_TEST

/* Tiny message buffers are filled and terminated, never overrun. */
START_TEST(test_small_errlen)
{
	static const size_t sizes[] = {1, 2, 8, 13};
	unsigned char bad[] = "not a numpy file at all";

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char buf[64];
		gpud_array a;
		size_t n = sizes[i];

		memset(buf, 0xa5, sizeof(buf));
		ck_assert_int_eq(gpud_npy_parse(bad, sizeof(bad), "some-long-name.npy", &a, buf, n),
				 -1);
		ck_assert_uint_eq(strlen(buf), n - 1);
		ck_assert_mem_eq(buf, "some-long-name.npy", n - 1);
		for (size_t j = n; j < sizeof(buf); j++)
			ck_assert_int_eq((unsigned char)buf[j], 0xa5);

		memset(buf, 0xa5, sizeof(buf));
		ck_assert_int_eq(gpud_npy_load("/nonexistent/x.npy", &a, buf, n), -1);
		ck_assert_uint_eq(strlen(buf), n - 1);
		for (size_t j = n; j < sizeof(buf); j++)
			ck_assert_int_eq((unsigned char)buf[j], 0xa5);
	}
	/* A short name leaves room for part of the message. */
	{
		char buf[16];
		gpud_array a;

		memset(buf, 0xa5, sizeof(buf));
		ck_assert_int_eq(gpud_npy_parse(bad, sizeof(bad), "a", &a, buf, 8), -1);
		ck_assert_str_eq(buf, "a: not ");
		for (size_t j = 8; j < sizeof(buf); j++)
			ck_assert_int_eq((unsigned char)buf[j], 0xa5);
	}
	/* No buffer at all. */
	{
		gpud_array a;

		ck_assert_int_eq(gpud_npy_parse(bad, sizeof(bad), "x", &a, NULL, 0), -1);
	}
}
END_TEST

START_TEST(test_save_errors)
{
	double v[4] = {1, 2, 3, 4};
	gpud_array a = {.dtype = GPUD_F64, .ndim = 1, .shape = {4}, .data = v, .nbytes = 32};
	char err[256], path[PATH_MAX];

	tmp_path(path, sizeof(path), "no-such-dir/x.npy");
	ck_assert_int_eq(gpud_npy_save(path, &a, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "%s", err);
	assert_has(err, "cannot open for writing: No such file or directory");

	tmp_path(path, sizeof(path), "unsaved.npy");
	a.nbytes = 24;
	ck_assert_int_eq(gpud_npy_save(path, &a, err, sizeof(err)), -1);
	assert_has(err, "nbytes is 24, but shape (4,) of float64 needs 32");
	a.nbytes = 32;
	a.dtype = GPUD_DTYPE_INVALID;
	ck_assert_int_eq(gpud_npy_save(path, &a, err, sizeof(err)), -1);
	assert_has(err, "cannot save dtype 0");
	a.dtype = GPUD_F64;
	a.ndim = GPUD_MAX_DIMS + 1;
	ck_assert_int_eq(gpud_npy_save(path, &a, err, sizeof(err)), -1);
	assert_has(err, "9 dimensions");
	a.ndim = 1;
	a.data = NULL;
	ck_assert_int_eq(gpud_npy_save(path, &a, err, sizeof(err)), -1);
	assert_has(err, "no data");
	ck_assert_int_eq(access(path, F_OK), -1);
	/* Writing to a full device: the partial file is removed. */
	if (access("/dev/full", W_OK) == 0) {
		a.data = v;
		ck_assert_int_eq(gpud_npy_save("/dev/full", &a, err, sizeof(err)), -1);
		assert_has(err, "/dev/full: write failed: No space left on device");
	}
}
END_TEST

TCase *npy_refused_tcase(void)
{
	TCase *tc = tcase_create("refused");

	tcase_add_unchecked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_loop_test(tc, test_refused_header, 0,
			    (int)(sizeof(refused_headers) / sizeof(refused_headers[0])));
	tcase_add_test(tc, test_unsupported_descr);
	tcase_add_test(tc, test_bad_magic);
	tcase_add_test(tc, test_truncated_header);
	tcase_add_test(tc, test_bad_version);
	tcase_add_test(tc, test_out_zeroed_on_error);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_small_errlen);
	tcase_add_test(tc, test_save_errors);
	return tc;
}
