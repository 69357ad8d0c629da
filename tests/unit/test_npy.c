/*
 * tests/unit/test_npy.c — unit tests of client/npy.c: save/load round trips,
 * hand-built .npy buffers of every accepted and refused kind (each run through
 * both gpud_npy_parse and gpud_npy_load), streams (pipes, offsets, the header
 * alone), and, where numpy is installed, a cross-check in both directions with
 * numpy itself. Refused images: test_npy_refused.c; numpy: test_npy_numpy.c;
 * the helpers: test_npy_util.c.
 */
#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/unit/suites.h"
#include "tests/unit/test_npy_util.h"

/* --- round trips ---------------------------------------------------------------------- */

static const gpud_dtype all_dtypes[] = {GPUD_F32, GPUD_F64, GPUD_I32, GPUD_I64};

/* _i picks the dtype (_i / 3) and the rank (0, 1 or 3). */
START_TEST(test_roundtrip)
{
	static const uint64_t shapes[3][3] = {{0}, {7}, {2, 3, 4}};
	static const int ndims[3] = {0, 1, 3};
	gpud_array a = {0}, b;
	char path[PATH_MAX], err[256];

	a.dtype = all_dtypes[_i / 3];
	a.ndim = ndims[_i % 3];
	memcpy(a.shape, shapes[_i % 3], sizeof(shapes[0]));
	a.nbytes = gpud_array_count(&a) * gpud_dtype_size(a.dtype);
	a.data = malloc(a.nbytes);
	ck_assert_ptr_nonnull(a.data);
	fill_random(&a, 0x9E3779B97F4A7C15ULL + (uint64_t)_i);

	tmp_path(path, sizeof(path), "rt.npy");
	ck_assert_msg(gpud_npy_save(path, &a, err, sizeof(err)) == 0, "save: %s", err);
	ck_assert_msg(gpud_npy_load(path, &b, err, sizeof(err)) == 0, "load: %s", err);
	ck_assert_int_eq(b.dtype, a.dtype);
	ck_assert_int_eq(b.ndim, a.ndim);
	ck_assert_mem_eq(b.shape, a.shape, sizeof(a.shape));
	ck_assert_uint_eq(b.nbytes, a.nbytes);
	ck_assert_uint_eq(gpud_array_count(&b), _i % 3 == 0 ? 1 : _i % 3 == 1 ? 7 : 24);
	ck_assert_mem_eq(b.data, a.data, a.nbytes);
	gpud_array_free(&b);
	free(a.data);
}
END_TEST

/* The exact bytes numpy would write: version 1.0, padded to 64 with a final '\n'. */
START_TEST(test_save_layout)
{
	static const struct {
		gpud_dtype dtype;
		int ndim;
		uint64_t shape[3];
		const char *dict;
	} cases[] = {
		{GPUD_F64, 0, {0}, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"},
		{GPUD_F32, 1, {5}, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"},
		{GPUD_I32,
		 2,
		 {2, 3},
		 "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }"},
		{GPUD_I64,
		 3,
		 {1, 0, 4},
		 "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 0, 4), }"},
		{GPUD_C64, 1, {3}, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }"},
		{GPUD_C128, 1, {2}, "{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }"},
	};
	char path[PATH_MAX], err[256];
	unsigned char data[8 * 6] = {1, 2, 3, 4, 5, 6, 7, 8};

	tmp_path(path, sizeof(path), "layout.npy");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gpud_array a = {.dtype = cases[i].dtype, .ndim = cases[i].ndim, .data = data};
		size_t len, hlen, dl = strlen(cases[i].dict);
		unsigned char *f;

		memcpy(a.shape, cases[i].shape, sizeof(cases[i].shape));
		a.nbytes = gpud_array_count(&a) * gpud_dtype_size(a.dtype);
		ck_assert_msg(gpud_npy_save(path, &a, err, sizeof(err)) == 0, "save: %s", err);
		f = read_file(path, &len);
		ck_assert_mem_eq(f, "\x93NUMPY\x01\x00", 8);
		hlen = (size_t)f[8] | (size_t)f[9] << 8;
		ck_assert_uint_eq((10 + hlen) % 64, 0);
		ck_assert_uint_eq(len, 10 + hlen + a.nbytes);
		ck_assert_mem_eq(f + 10, cases[i].dict, dl);
		for (size_t j = 10 + dl; j < 10 + hlen - 1; j++)
			ck_assert_int_eq(f[j], ' ');
		ck_assert_int_eq(f[10 + hlen - 1], '\n');
		if (a.nbytes)
			ck_assert_mem_eq(f + 10 + hlen, data, a.nbytes);
		free(f);
	}
}
END_TEST

/* --- streams: file descriptors and the header alone ------------------------------------- */

/* Two arrays back to back through a pipe: each load stops where its array ends. */
START_TEST(test_fd_pipe_stream)
{
	double v[5] = {1.5, -2, 3.25, 4, -5.5};
	int32_t w[2][3] = {{1, 2, 3}, {-4, 5, -6}};
	gpud_array a = {.dtype = GPUD_F64, .ndim = 1, .shape = {5}, .data = v, .nbytes = sizeof(v)};
	gpud_array b = {
		.dtype = GPUD_I32, .ndim = 2, .shape = {2, 3}, .data = w, .nbytes = sizeof(w)};
	gpud_array got;
	char err[256];
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	/* Small enough for the pipe's buffer: written before anything is read. */
	ck_assert_msg(gpud_npy_save_fd(p[1], "pipe", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(gpud_npy_save_fd(p[1], "pipe", &b, err, sizeof(err)) == 0, "%s", err);
	close(p[1]);
	ck_assert_msg(gpud_npy_load_fd(p[0], "stdin", NULL, NULL, &got, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(got.dtype, GPUD_F64);
	ck_assert_int_eq(got.ndim, 1);
	ck_assert_uint_eq(got.shape[0], 5);
	ck_assert_mem_eq(got.data, v, sizeof(v));
	gpud_array_free(&got);
	ck_assert_msg(gpud_npy_load_fd(p[0], "stdin", NULL, NULL, &got, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(got.dtype, GPUD_I32);
	ck_assert_uint_eq(got.shape[0], 2);
	ck_assert_uint_eq(got.shape[1], 3);
	ck_assert_mem_eq(got.data, w, sizeof(w));
	gpud_array_free(&got);
	/* Then the end of the stream: an empty input is not a .npy, named as given. */
	ck_assert_int_eq(gpud_npy_load_fd(p[0], "stdin", NULL, NULL, &got, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "stdin: ", 7) == 0, "%s", err);
	close(p[0]);
}
END_TEST

/* A pipe that ends early: the data it lacks is named, as for a file. */
START_TEST(test_fd_pipe_truncated)
{
	double v[8] = {0};
	gpud_array a = {.dtype = GPUD_F64, .ndim = 1, .shape = {8}, .data = v, .nbytes = sizeof(v)};
	unsigned char hdr[GPUD_NPY_HEADER_MAX];
	gpud_array got;
	char err[256];
	int p[2];

	size_t hl = gpud_npy_header(&a, hdr, sizeof(hdr), err, sizeof(err));
	ck_assert_msg(hl > 0, "%s", err);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], hdr, hl), (ssize_t)hl);
	ck_assert_int_eq(write(p[1], v, 20), 20);
	close(p[1]);
	ck_assert_int_eq(gpud_npy_load_fd(p[0], NULL, NULL, NULL, &got, err, sizeof(err)), -1);
	assert_has(err, "truncated: header declares 64 bytes of data, file has 20");
	char want[32];
	snprintf(want, sizeof(want), "(fd %d): ", p[0]);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
	close(p[0]);
}
END_TEST

/* A regular file read from its current offset, two arrays in it. */
START_TEST(test_fd_file_offset)
{
	int64_t v[3] = {7, -8, 9};
	gpud_array a = {.dtype = GPUD_I64, .ndim = 1, .shape = {3}, .data = v, .nbytes = sizeof(v)};
	gpud_array got;
	char path[PATH_MAX], err[256];

	tmp_path(path, sizeof(path), "two.npy");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(gpud_npy_save_fd(fd, path, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(gpud_npy_save_fd(fd, path, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(gpud_npy_load_fd(fd, path, NULL, NULL, &got, err, sizeof(err)) == 0,
			      "array %d: %s", i, err);
		ck_assert_mem_eq(got.data, v, sizeof(v));
		gpud_array_free(&got);
	}
	/* The second array alone, cut short: its size is checked against what is left. */
	off_t end = lseek(fd, 0, SEEK_CUR);
	ck_assert_int_eq(ftruncate(fd, end - 4), 0);
	ck_assert_int_eq(lseek(fd, end / 2, SEEK_SET), end / 2);
	ck_assert_int_eq(gpud_npy_load_fd(fd, path, NULL, NULL, &got, err, sizeof(err)), -1);
	assert_has(err, "truncated: header declares 24 bytes of data, file has 20");
	close(fd);
	ck_assert_int_eq(gpud_npy_load_fd(-1, "x", NULL, NULL, &got, err, sizeof(err)), -1);
	assert_has(err, "x: no file descriptor given");
}
END_TEST

/* gpud_npy_header is the start of what gpud_npy_save writes; too small a buffer is refused. */
/*
 * gpud_npy_open: the header only, the file left open at its data. Version 1
 * and 2 files (offset = their preamble and header), a big-endian one (1, for
 * the caller to load and swap), a truncated one, a directory, a FIFO (never
 * opened for blocking) and a missing file (-1, nothing left open).
 */
START_TEST(test_open_header_only)
{
	static const double v[3] = {0.5, -3.25, 1e300};
	static const unsigned char be[] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
	char path[PATH_MAX], err[256];
	gpud_array m;
	uint64_t off;
	size_t len;
	int fd;

	for (int major = 1; major <= 2; major++) {
		unsigned char *b =
			build(major, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
			      v, sizeof(v), &len);
		tmp_path(path, sizeof(path), "open.npy");
		write_file(path, b, len);
		ck_assert_msg(gpud_npy_open(path, &m, &fd, &off, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(m.dtype, GPUD_F64);
		ck_assert_int_eq(m.ndim, 1);
		ck_assert_uint_eq(m.shape[0], 3);
		ck_assert_uint_eq(m.nbytes, sizeof(v));
		ck_assert_ptr_null(m.data);
		ck_assert_uint_eq(off, len - sizeof(v));
		double got[3];
		ck_assert_int_eq(pread(fd, got, sizeof(got), (off_t)off), (ssize_t)sizeof(got));
		ck_assert_mem_eq(got, v, sizeof(v));
		close(fd);
		free(b);
	}

	unsigned char *b = build(1, 0, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }",
				 be, sizeof(be), &len);
	tmp_path(path, sizeof(path), "be-open.npy");
	write_file(path, b, len);
	ck_assert_int_eq(gpud_npy_open(path, &m, &fd, &off, err, sizeof(err)), 1);
	ck_assert_int_eq(m.dtype, GPUD_F64);
	ck_assert_uint_eq(m.nbytes, 8);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* cut short: the header promises 8 bytes, the file has 3 */
	tmp_path(path, sizeof(path), "short-open.npy");
	write_file(path, b, len - 5);
	free(b);
	ck_assert_int_eq(gpud_npy_open(path, &m, &fd, &off, err, sizeof(err)), -1);
	ck_assert_int_eq(fd, -1);
	ck_assert_msg(strstr(err, "short-open.npy: truncated: header declares 8 bytes of data, "
				  "file has 3"),
		      "%s", err);

	tmp_path(path, sizeof(path), "");
	ck_assert_int_eq(gpud_npy_open(path, &m, &fd, &off, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "not a regular file"), "a directory: %s", err);
	tmp_path(path, sizeof(path), "fifo.npy");
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(gpud_npy_open(path, &m, &fd, &off, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "not a regular file"), "a FIFO: %s", err);
	ck_assert_int_eq(fd, -1);
	tmp_path(path, sizeof(path), "missing.npy");
	ck_assert_int_eq(gpud_npy_open(path, &m, &fd, &off, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "missing.npy: cannot open: No such file"), "%s", err);
}
END_TEST

START_TEST(test_header_alone)
{
	float v[6] = {1, 2, 3, 4, 5, 6};
	gpud_array a = {
		.dtype = GPUD_F32, .ndim = 2, .shape = {3, 2}, .data = v, .nbytes = sizeof(v)};
	unsigned char hdr[GPUD_NPY_HEADER_MAX];
	char path[PATH_MAX], err[256];
	size_t len;

	tmp_path(path, sizeof(path), "hdr.npy");
	ck_assert_msg(gpud_npy_save(path, &a, err, sizeof(err)) == 0, "%s", err);
	unsigned char *f = read_file(path, &len);
	a.data = NULL; /* not needed for the header */
	size_t hl = gpud_npy_header(&a, hdr, sizeof(hdr), err, sizeof(err));
	ck_assert_msg(hl > 0, "%s", err);
	ck_assert_uint_eq(hl % 64, 0);
	ck_assert_uint_eq(len, hl + sizeof(v));
	ck_assert_mem_eq(f, hdr, hl);
	free(f);
	ck_assert_uint_eq(gpud_npy_header(&a, hdr, hl - 1, err, sizeof(err)), 0);
	assert_has(err, "the header needs 128 bytes, the buffer has 127");
	a.nbytes = 4;
	ck_assert_uint_eq(gpud_npy_header(&a, hdr, sizeof(hdr), err, sizeof(err)), 0);
	assert_has(err, "nbytes is 4, but shape (3, 2) of float32 needs 24");
	/* The longest header there is fits GPUD_NPY_HEADER_MAX. */
	gpud_array big = {.dtype = GPUD_I64, .ndim = GPUD_MAX_DIMS};
	for (int i = 0; i < GPUD_MAX_DIMS; i++)
		big.shape[i] = i == 0 ? 0 : UINT64_MAX;
	ck_assert_msg(gpud_npy_header(&big, hdr, sizeof(hdr), err, sizeof(err)) > 0, "%s", err);
	/* A full device: gpud_npy_save_fd says so. */
	int full = open("/dev/full", O_WRONLY);
	if (full >= 0) {
		a.nbytes = sizeof(v);
		a.data = v;
		ck_assert_int_eq(gpud_npy_save_fd(full, "stdout", &a, err, sizeof(err)), -1);
		assert_has(err, "stdout: write failed: No space left on device");
		close(full);
	}
}
END_TEST

/* --- accepted headers ---------------------------------------------------------------- */

/* Format versions 1.0, 2.0 and 3.0 (_i = major). */
START_TEST(test_versions)
{
	const double v[4] = {1.5, -2.25, 1e300, -0.0};
	const char *hdr =
		_i == 3 ? "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }  \n"
			: "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }\n";
	char err[256];
	unsigned char *b;
	gpud_array a;
	size_t len;

	b = build(_i, 0, hdr, v, sizeof(v), &len);
	ck_assert_msg(run_both(b, len, "ver.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, GPUD_F64);
	ck_assert_int_eq(a.ndim, 2);
	ck_assert_uint_eq(a.shape[0], 2);
	ck_assert_uint_eq(a.shape[1], 2);
	ck_assert_uint_eq(a.nbytes, sizeof(v));
	ck_assert_mem_eq(a.data, v, sizeof(v));
	gpud_array_free(&a);
	free(b);
}
END_TEST

START_TEST(test_double_quotes_any_order)
{
	const int64_t v[3] = {1, -2, INT64_MAX};
	static const char *hdrs[] = {
		"{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (3,)}",
		"{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i8\", }",
		"{'fortran_order': False, \"shape\": (3,), 'descr': \"<i8\"}",
		"  {\n\t'shape' :( 3 , ) ,\n 'descr':'<i8',\r\n'fortran_order'\t:\tFalse ,\n}\n   \n",
		"{u'descr': u'<i8', u'fortran_order': False, u'shape': (3L,), }",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		unsigned char *b;
		gpud_array a;
		size_t len;

		b = build(1, 0, hdrs[i], v, sizeof(v), &len);
		ck_assert_msg(run_both(b, len, "q.npy", &a, err, sizeof(err)) == 0, "header %s: %s",
			      hdrs[i], err);
		ck_assert_int_eq(a.dtype, GPUD_I64);
		ck_assert_int_eq(a.ndim, 1);
		ck_assert_uint_eq(a.shape[0], 3);
		ck_assert_mem_eq(a.data, v, sizeof(v));
		gpud_array_free(&a);
		free(b);
	}
}
END_TEST

START_TEST(test_big_endian)
{
	static const unsigned char f8[] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0,  /* 1.5 */
					   0xc0, 0x02, 0, 0, 0, 0, 0, 0}; /* -2.25 */
	static const unsigned char i4[] = {0x01, 0x02, 0x03, 0x04, 0xff, 0xff, 0xff, 0xfe};
	static const unsigned char f4[] = {0x3f, 0xc0, 0x00, 0x00}; /* 1.5 */
	static const unsigned char i8[] = {1, 2, 3, 4, 5, 6, 7, 8};
	char err[256];
	unsigned char *b;
	gpud_array a;
	size_t len;

	b = build(1, 0, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", f8, sizeof(f8),
		  &len);
	ck_assert_msg(run_both(b, len, "be.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, GPUD_F64);
	ck_assert_double_eq(((double *)a.data)[0], 1.5);
	ck_assert_double_eq(((double *)a.data)[1], -2.25);
	gpud_array_free(&a);
	free(b);

	b = build(1, 0, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", i4, sizeof(i4),
		  &len);
	ck_assert_msg(run_both(b, len, "be.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, GPUD_I32);
	ck_assert_int_eq(((int32_t *)a.data)[0], 0x01020304);
	ck_assert_int_eq(((int32_t *)a.data)[1], -2);
	gpud_array_free(&a);
	free(b);

	b = build(1, 0, "{'descr': '>f4', 'fortran_order': False, 'shape': (), }", f4, sizeof(f4),
		  &len);
	ck_assert_msg(run_both(b, len, "be.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, GPUD_F32);
	ck_assert_float_eq(((float *)a.data)[0], 1.5f);
	gpud_array_free(&a);
	free(b);

	b = build(1, 0, "{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }", i8, sizeof(i8),
		  &len);
	ck_assert_msg(run_both(b, len, "be.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, GPUD_I64);
	ck_assert(((int64_t *)a.data)[0] == 0x0102030405060708LL);
	gpud_array_free(&a);
	free(b);
}
END_TEST

START_TEST(test_native_prefixes)
{
	const int32_t i4[2] = {7, -9};
	const double f8[1] = {3.25};
	char err[256];
	unsigned char *b;
	gpud_array a;
	size_t len;

	b = build(1, 0, "{'descr': '|i4', 'fortran_order': False, 'shape': (2,), }", i4, sizeof(i4),
		  &len);
	ck_assert_msg(run_both(b, len, "n.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, GPUD_I32);
	ck_assert_mem_eq(a.data, i4, sizeof(i4));
	gpud_array_free(&a);
	free(b);

	b = build(1, 0, "{'descr': '=f8', 'fortran_order': False, 'shape': (1,), }", f8, sizeof(f8),
		  &len);
	ck_assert_msg(run_both(b, len, "n.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.dtype, GPUD_F64);
	ck_assert_double_eq(((double *)a.data)[0], 3.25);
	gpud_array_free(&a);
	free(b);
}
END_TEST

START_TEST(test_zero_d)
{
	const float v = -4.5f;
	char err[256];
	unsigned char *b;
	gpud_array a;
	size_t len;

	b = build(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", &v, sizeof(v),
		  &len);
	ck_assert_msg(run_both(b, len, "z.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.ndim, 0);
	ck_assert_uint_eq(gpud_array_count(&a), 1);
	ck_assert_uint_eq(a.nbytes, 4);
	ck_assert_float_eq(*(float *)a.data, -4.5f);
	gpud_array_free(&a);
	free(b);
}
END_TEST

START_TEST(test_zero_length)
{
	static const char *hdrs[] = {
		"{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }",
		"{'descr': '<i4', 'fortran_order': False, 'shape': (3, 0, 2), }",
	};
	char err[256];

	for (size_t i = 0; i < 2; i++) {
		unsigned char *b;
		gpud_array a;
		size_t len;

		b = build(1, 0, hdrs[i], NULL, 0, &len);
		ck_assert_msg(run_both(b, len, "empty.npy", &a, err, sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(a.nbytes, 0);
		ck_assert_uint_eq(gpud_array_count(&a), 0);
		ck_assert_int_eq(a.ndim, i == 0 ? 1 : 3);
		gpud_array_free(&a);
		ck_assert_ptr_null(a.data);
		free(b);
	}
}
END_TEST

/* numpy reads only what the header declares; so do we. */
START_TEST(test_trailing_bytes_ignored)
{
	const int32_t v[3] = {10, 20, 30};
	char err[256];
	unsigned char *b;
	gpud_array a;
	size_t len;

	b = build(1, 0, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", v, sizeof(v),
		  &len);
	ck_assert_msg(run_both(b, len, "tail.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(a.nbytes, 8);
	ck_assert_mem_eq(a.data, v, 8);
	gpud_array_free(&a);
	free(b);
}
END_TEST

START_TEST(test_max_dims)
{
	const double v = 2.0;
	char err[256];
	unsigned char *b;
	gpud_array a;
	size_t len;

	b = build(1, 0,
		  "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1), }",
		  &v, sizeof(v), &len);
	ck_assert_msg(run_both(b, len, "d8.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.ndim, GPUD_MAX_DIMS);
	ck_assert_double_eq(*(double *)a.data, 2.0);
	gpud_array_free(&a);
	free(b);
}
END_TEST

/* A single entry without its comma, as (5), is taken as (5,). */
START_TEST(test_lenient_shape)
{
	const int32_t v[5] = {1, 2, 3, 4, 5};
	char err[256];
	unsigned char *b;
	gpud_array a;
	size_t len;

	b = build(1, 0, "{'descr': '<i4', 'fortran_order': False, 'shape': (5)}", v, sizeof(v),
		  &len);
	ck_assert_msg(run_both(b, len, "l.npy", &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.ndim, 1);
	ck_assert_uint_eq(a.shape[0], 5);
	gpud_array_free(&a);
	free(b);
}
END_TEST

START_TEST(test_array_helpers)
{
	gpud_array a = {0};

	ck_assert_uint_eq(gpud_array_count(&a), 1);
	gpud_array_free(&a);
	gpud_array_free(NULL);
	a.ndim = 2;
	a.shape[0] = 3;
	a.shape[1] = 5;
	ck_assert_uint_eq(gpud_array_count(&a), 15);
	a.data = malloc(8);
	gpud_array_free(&a);
	ck_assert_ptr_null(a.data);
	ck_assert_int_eq(a.ndim, 0);
	ck_assert_uint_eq(a.shape[0], 0);
}
END_TEST

Suite *npy_suite(void)
{
	Suite *s = suite_create("npy");
	TCase *tc;

	tc = tcase_create("roundtrip");
	tcase_add_unchecked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_loop_test(tc, test_roundtrip, 0, 12);
	tcase_add_test(tc, test_save_layout);
	tcase_add_test(tc, test_array_helpers);
	suite_add_tcase(s, tc);

	tc = tcase_create("streams");
	tcase_add_unchecked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_fd_pipe_stream);
	tcase_add_test(tc, test_fd_pipe_truncated);
	tcase_add_test(tc, test_fd_file_offset);
	tcase_add_test(tc, test_header_alone);
	tcase_add_test(tc, test_open_header_only);
	suite_add_tcase(s, tc);

	tc = tcase_create("accepted");
	tcase_add_unchecked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_loop_test(tc, test_versions, 1, 4);
	tcase_add_test(tc, test_double_quotes_any_order);
	tcase_add_test(tc, test_big_endian);
	tcase_add_test(tc, test_native_prefixes);
	tcase_add_test(tc, test_zero_d);
	tcase_add_test(tc, test_zero_length);
	tcase_add_test(tc, test_trailing_bytes_ignored);
	tcase_add_test(tc, test_max_dims);
	tcase_add_test(tc, test_lenient_shape);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, npy_refused_tcase());
	tc = npy_numpy_tcase();
	if (tc)
		suite_add_tcase(s, tc);
	return s;
}
