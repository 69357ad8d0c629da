/*
 * tests/unit/test_npy.c — unit tests of client/npy.c: save/load round trips,
 * hand-built .npy buffers of every accepted and refused kind (each run through
 * both gpud_npy_parse and gpud_npy_load), streams (pipes, offsets, the header
 * alone), and, where numpy is installed, a cross-check in both directions with
 * numpy itself.
 */
#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/npy.h>

/* Not the PATH one: that may be a virtualenv or pyenv without numpy. */
#define PYTHON "/usr/bin/python3"

static char tmpdir[PATH_MAX - 64];

/* --- helpers ----------------------------------------------------------------------- */

static void tmp_setup(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/gpud-npy-XXXXXX", t && *t ? t : "/tmp");
	ck_assert_msg(mkdtemp(tmpdir) != NULL, "mkdtemp %s failed", tmpdir);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void tmp_teardown(void)
{
	if (tmpdir[0])
		nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = '\0';
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f != NULL, "cannot create %s", path);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* A whole file into a malloc'd buffer. */
static unsigned char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	b = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* A .npy image: magic, version major.minor, header length, header, data. */
static unsigned char *build(int major, int minor, const char *header, const void *data, size_t dlen,
			    size_t *len)
{
	size_t hl = strlen(header), lb = major == 1 ? 2 : 4, pre = 8 + lb;
	unsigned char *b = malloc(pre + hl + dlen + 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b, "\x93NUMPY", 6);
	b[6] = (unsigned char)major;
	b[7] = (unsigned char)minor;
	for (size_t i = 0; i < lb; i++)
		b[8 + i] = (unsigned char)(hl >> (8 * i));
	memcpy(b + pre, header, hl);
	if (dlen)
		memcpy(b + pre + hl, data, dlen);
	*len = pre + hl + dlen;
	return b;
}

/*
 * Runs buf through gpud_npy_parse (named as the file) and, written to a file,
 * through gpud_npy_load; both must agree on the result and on the message.
 * Returns the status, with the loaded array in *out and the message in err.
 */
static int run_both(const unsigned char *buf, size_t len, const char *fname, gpud_array *out,
		    char *err, size_t errlen)
{
	char path[PATH_MAX], perr[512];
	gpud_array pa;
	int prc, lrc;

	tmp_path(path, sizeof(path), fname);
	prc = gpud_npy_parse(buf, len, path, &pa, perr, sizeof(perr));
	write_file(path, buf, len);
	lrc = gpud_npy_load(path, out, err, errlen);
	ck_assert_int_eq(prc, lrc);
	if (lrc) {
		ck_assert_str_eq(perr, err);
	} else {
		ck_assert_int_eq(pa.dtype, out->dtype);
		ck_assert_int_eq(pa.ndim, out->ndim);
		ck_assert_mem_eq(pa.shape, out->shape, sizeof(pa.shape));
		ck_assert_uint_eq(pa.nbytes, out->nbytes);
		ck_assert_ptr_nonnull(out->data);
		if (out->nbytes)
			ck_assert_mem_eq(pa.data, out->data, out->nbytes);
	}
	gpud_array_free(&pa);
	return lrc;
}

/* Builds a version 1.0 image of header + data and expects it refused. */
static void expect_error(const char *header, const void *data, size_t dlen, const char *want)
{
	char err[512], path[PATH_MAX];
	unsigned char *b;
	gpud_array a;
	size_t len;

	b = build(1, 0, header, data, dlen, &len);
	ck_assert_int_eq(run_both(b, len, "bad.npy", &a, err, sizeof(err)), -1);
	tmp_path(path, sizeof(path), "bad.npy");
	ck_assert_msg(strncmp(err, path, strlen(path)) == 0 &&
			      strncmp(err + strlen(path), ": ", 2) == 0,
		      "error \"%s\" does not start with \"%s: \"", err, path);
	ck_assert_msg(strstr(err, want) != NULL, "error \"%s\" lacks \"%s\" (header %s)", err, want,
		      header);
	free(b);
}

#define assert_has(err, s)                                                                         \
	ck_assert_msg(strstr((err), (s)) != NULL, "error \"%s\" lacks \"%s\"", (err), (s))

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* Random non-zero values of a's dtype. */
static void fill_random(gpud_array *a, uint64_t seed)
{
	size_t n = gpud_array_count(a);

	for (size_t i = 0; i < n; i++) {
		uint64_t r = rng_next(&seed);
		int64_t v = (int64_t)(r % 2000000) - 1000000;

		if (v == 0)
			v = 7;
		switch (a->dtype) {
		case GPUD_F32:
			((float *)a->data)[i] = (float)v / 16.0f;
			break;
		case GPUD_F64:
			((double *)a->data)[i] = (double)v / 1024.0 + (double)(r >> 40) * 1e-9;
			break;
		case GPUD_I32:
			((int32_t *)a->data)[i] = (int32_t)v;
			break;
		default:
			((int64_t *)a->data)[i] = v * (int64_t)(r >> 44 | 1);
			break;
		}
	}
}

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

/* --- refused headers and files ------------------------------------------------------------ */

START_TEST(test_fortran)
{
	const double v[6] = {0};

	expect_error("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", v, sizeof(v),
		     "Fortran");
	expect_error("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", v, sizeof(v),
		     "np.ascontiguousarray");
}
END_TEST

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

START_TEST(test_truncated_data)
{
	unsigned char v[100] = {0};

	expect_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1024,), }", v, sizeof(v),
		     "truncated: header declares 4096 bytes of data, file has 100");
	expect_error("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", v, 7,
		     "header declares 8 bytes of data, file has 7");
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

START_TEST(test_too_many_dims)
{
	const double v[2] = {0};

	expect_error(
		"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
		v, sizeof(v), "shape has 9 dimensions; at most 8 are supported");
	expect_error(
		"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4), }",
		v, sizeof(v), "shape has 12 dimensions");
}
END_TEST

START_TEST(test_bad_shape)
{
	const unsigned char v[64] = {0};

	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (-1,), }", v, sizeof(v),
		     "negative dimension -1");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -30), }", v, sizeof(v),
		     "negative dimension -30");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': ('a',), }", v, sizeof(v),
		     "expected a non-negative integer in 'shape', got '''");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2.5,), }", v, sizeof(v),
		     "expected a non-negative integer in 'shape', got '2'");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (3x,), }", v, sizeof(v),
		     "non-negative integer");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2,,), }", v, sizeof(v),
		     "non-negative integer");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': [2, 3], }", v, sizeof(v),
		     "expected a tuple");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2 3), }", v, sizeof(v),
		     "expected ',' or ')'");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }",
		     v, sizeof(v), "does not fit in 64 bits");
	expect_error(
		"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
		v, sizeof(v), "is too large: its byte count overflows");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615,), }",
		     v, sizeof(v), "overflows");
}
END_TEST

START_TEST(test_malformed_header)
{
	const unsigned char v[64] = {0};

	expect_error("", v, sizeof(v), "expected '{' opening the header dict, got the end");
	expect_error("{'descr': '<f8', 'fortran_order': False}", v, sizeof(v),
		     "missing key 'shape'");
	expect_error("{'descr': '<f8', 'shape': (1,)}", v, sizeof(v),
		     "missing key 'fortran_order'");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'extra': 1}", v,
		     sizeof(v), "unexpected key 'extra'");
	expect_error("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (1,)}", v,
		     sizeof(v), "key 'descr' appears twice");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (1,)} x", v, sizeof(v),
		     "nothing but padding after the header dict, got 'x'");
	expect_error("{'descr': '<f8' 'fortran_order': False, 'shape': (1,)}", v, sizeof(v),
		     "at offset 16: expected ',' or '}' in the header dict, got '''");
	expect_error("{'descr': '<f8', 'fortran_order': False, 'shape': (1,)", v, sizeof(v),
		     "expected ',' or '}' in the header dict, got the end of the header");
	expect_error("{'descr': '<f8', 'fortran_order': 0, 'shape': (1,)}", v, sizeof(v),
		     "expected True or False");
	expect_error("{'descr': '<f8', 'fortran_order': Falsey, 'shape': (1,)}", v, sizeof(v),
		     "expected True or False");
	expect_error("{descr: '<f8', 'fortran_order': False, 'shape': (1,)}", v, sizeof(v),
		     "at offset 1: expected a quoted string, got 'd'");
	expect_error("{'descr' '<f8', 'fortran_order': False, 'shape': (1,)}", v, sizeof(v),
		     "expected ':' after a key");
	expect_error("{'descr': '<f8\n', 'fortran_order': False, 'shape': (1,)}", v, sizeof(v),
		     "string at offset 10 is not terminated");
	expect_error("{'descr': 'x\\'y', 'fortran_order': False, 'shape': (1,)}", v, sizeof(v),
		     "escape sequences");
	expect_error("{'descr': 8, 'fortran_order': False, 'shape': (1,)}", v, sizeof(v),
		     "expected a quoted string, got '8'");
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

/* --- numpy itself ---------------------------------------------------------------------- */

static int run_python(const char *script)
{
	char spath[PATH_MAX], cmd[3 * PATH_MAX];
	int st;

	tmp_path(spath, sizeof(spath), "check.py");
	write_file(spath, script, strlen(script));
	snprintf(cmd, sizeof(cmd), PYTHON " '%s' '%s'", spath, tmpdir);
	st = system(cmd);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static gpud_array load_ok(const char *name)
{
	char path[PATH_MAX], err[256];
	gpud_array a;

	tmp_path(path, sizeof(path), name);
	ck_assert_msg(gpud_npy_load(path, &a, err, sizeof(err)) == 0, "%s", err);
	return a;
}

START_TEST(test_numpy_writes)
{
	static const char script[] =
		"import sys, os, numpy as np\n"
		"d = sys.argv[1]\n"
		"p = lambda n: os.path.join(d, n)\n"
		"np.save(p('a.npy'), np.arange(1, 7, dtype='<f4').reshape(2, 3) * np.float32(0.5))\n"
		"np.save(p('b.npy'), np.array([1.5, -2.25, 1e300], dtype='>f8'))\n"
		"np.save(p('c.npy'), (np.arange(24) - 12).astype('>i4').reshape(2, 3, 4))\n"
		"np.save(p('d.npy'), np.array(-1234567890123, dtype='<i8'))\n"
		"for v in (2, 3):\n"
		"    with open(p('v%d.npy' % v), 'wb') as f:\n"
		"        np.lib.format.write_array(f, np.array([5, -6, 7], dtype='<i8'), version=(v, 0))\n"
		"np.save(p('e.npy'), np.zeros((0, 3), dtype='<f8'))\n"
		"np.save(p('f.npy'), np.asfortranarray(np.ones((2, 3))))\n"
		"np.save(p('g.npy'), np.array([1, 2], dtype='<u2'))\n"
		"np.save(p('h.npy'), np.array([1.0 + 2j, -0.5 - 1e300j]))\n"
		"np.save(p('i.npy'), np.array([[1.5 - 2j], [3 + 0.25j]], dtype='>c8'))\n"
		"np.save(p('j.npy'), np.array([1 + 1j], dtype='<c16').astype('<c32'))\n";
	const float a_want[6] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f};
	const double b_want[3] = {1.5, -2.25, 1e300};
	const int64_t v_want[3] = {5, -6, 7};
	char path[PATH_MAX], err[256];
	gpud_array a;

	ck_assert_int_eq(run_python(script), 0);

	a = load_ok("a.npy");
	ck_assert_int_eq(a.dtype, GPUD_F32);
	ck_assert_int_eq(a.ndim, 2);
	ck_assert_uint_eq(a.shape[0], 2);
	ck_assert_uint_eq(a.shape[1], 3);
	ck_assert_mem_eq(a.data, a_want, sizeof(a_want));
	gpud_array_free(&a);

	a = load_ok("b.npy");
	ck_assert_int_eq(a.dtype, GPUD_F64);
	ck_assert_mem_eq(a.data, b_want, sizeof(b_want));
	gpud_array_free(&a);

	a = load_ok("c.npy");
	ck_assert_int_eq(a.dtype, GPUD_I32);
	ck_assert_int_eq(a.ndim, 3);
	ck_assert_uint_eq(gpud_array_count(&a), 24);
	for (int i = 0; i < 24; i++)
		ck_assert_int_eq(((int32_t *)a.data)[i], i - 12);
	gpud_array_free(&a);

	a = load_ok("d.npy");
	ck_assert_int_eq(a.dtype, GPUD_I64);
	ck_assert_int_eq(a.ndim, 0);
	ck_assert(*(int64_t *)a.data == -1234567890123LL);
	gpud_array_free(&a);

	a = load_ok("v2.npy");
	ck_assert_mem_eq(a.data, v_want, sizeof(v_want));
	gpud_array_free(&a);
	a = load_ok("v3.npy");
	ck_assert_mem_eq(a.data, v_want, sizeof(v_want));
	gpud_array_free(&a);

	a = load_ok("e.npy");
	ck_assert_uint_eq(a.nbytes, 0);
	ck_assert_int_eq(a.ndim, 2);
	ck_assert_uint_eq(a.shape[1], 3);
	gpud_array_free(&a);

	tmp_path(path, sizeof(path), "f.npy");
	ck_assert_int_eq(gpud_npy_load(path, &a, err, sizeof(err)), -1);
	assert_has(err, "Fortran-order arrays are not supported");
	tmp_path(path, sizeof(path), "g.npy");
	ck_assert_int_eq(gpud_npy_load(path, &a, err, sizeof(err)), -1);
	assert_has(err, "'<u2'");
	a = load_ok("h.npy"); /* complex128: real, imaginary */
	ck_assert_int_eq(a.dtype, GPUD_C128);
	ck_assert_uint_eq(a.nbytes, 32);
	const double h_want[4] = {1.0, 2.0, -0.5, -1e300};
	ck_assert_mem_eq(a.data, h_want, sizeof(h_want));
	gpud_array_free(&a);
	a = load_ok("i.npy"); /* big-endian complex64: each half swapped on its own */
	ck_assert_int_eq(a.dtype, GPUD_C64);
	ck_assert_int_eq(a.ndim, 2);
	const float i_want[4] = {1.5f, -2.0f, 3.0f, 0.25f};
	ck_assert_mem_eq(a.data, i_want, sizeof(i_want));
	gpud_array_free(&a);
	tmp_path(path, sizeof(path), "j.npy");
	ck_assert_int_eq(gpud_npy_load(path, &a, err, sizeof(err)), -1);
	assert_has(err, "'<c32'");
}
END_TEST

START_TEST(test_numpy_reads)
{
	static const char script[] =
		"import sys, os, numpy as np\n"
		"d = sys.argv[1]\n"
		"def check(name, want):\n"
		"    got = np.load(os.path.join(d, name))\n"
		"    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):\n"
		"        print('mismatch in', name, got.dtype, got.shape, got, file=sys.stderr)\n"
		"        sys.exit(1)\n"
		"check('f4.npy', np.arange(1, 7, dtype=np.float32).reshape(3, 2) / np.float32(4))\n"
		"check('f8.npy', np.array(-0.125))\n"
		"check('i4.npy', (np.arange(24, dtype=np.int32) * -3).reshape(2, 3, 4))\n"
		"check('i8.npy', np.array([2**40, -(2**62), 1], dtype=np.int64))\n"
		"check('e.npy', np.zeros((2, 0), dtype=np.float64))\n"
		"check('c8.npy', np.array([1.5 - 2j, 0.25 + 4j], dtype=np.complex64))\n"
		"check('c16.npy', np.array(-1e300 + 0.5j))\n";
	float f4[6];
	double f8 = -0.125;
	int32_t i4[24];
	int64_t i8[3] = {1LL << 40, -(1LL << 62), 1};
	float c8[4] = {1.5f, -2.0f, 0.25f, 4.0f};
	double c16[2] = {-1e300, 0.5};
	gpud_array arrs[7] = {
		{.dtype = GPUD_F32, .ndim = 2, .shape = {3, 2}, .data = f4, .nbytes = sizeof(f4)},
		{.dtype = GPUD_F64, .ndim = 0, .data = &f8, .nbytes = sizeof(f8)},
		{.dtype = GPUD_I32,
		 .ndim = 3,
		 .shape = {2, 3, 4},
		 .data = i4,
		 .nbytes = sizeof(i4)},
		{.dtype = GPUD_I64, .ndim = 1, .shape = {3}, .data = i8, .nbytes = sizeof(i8)},
		{.dtype = GPUD_F64, .ndim = 2, .shape = {2, 0}, .data = NULL, .nbytes = 0},
		{.dtype = GPUD_C64, .ndim = 1, .shape = {2}, .data = c8, .nbytes = sizeof(c8)},
		{.dtype = GPUD_C128, .ndim = 0, .data = c16, .nbytes = sizeof(c16)},
	};
	static const char *names[7] = {"f4.npy", "f8.npy", "i4.npy", "i8.npy",
				       "e.npy",  "c8.npy", "c16.npy"};
	char path[PATH_MAX], err[256];

	for (int i = 0; i < 6; i++)
		f4[i] = (float)(i + 1) / 4.0f;
	for (int i = 0; i < 24; i++)
		i4[i] = i * -3;
	for (int i = 0; i < 7; i++) {
		tmp_path(path, sizeof(path), names[i]);
		ck_assert_msg(gpud_npy_save(path, &arrs[i], err, sizeof(err)) == 0, "%s", err);
	}
	ck_assert_int_eq(run_python(script), 0);
}
END_TEST

/* numpy is optional: its test case is only registered when it can be imported. */
static int have_numpy(void)
{
	int st;

	if (access(PYTHON, X_OK) != 0)
		return 0;
	st = system(PYTHON " -c 'import numpy' >/dev/null 2>&1");
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

#include "tests/unit/suites.h"

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

	tc = tcase_create("refused");
	tcase_add_unchecked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_fortran);
	tcase_add_test(tc, test_unsupported_descr);
	tcase_add_test(tc, test_bad_magic);
	tcase_add_test(tc, test_truncated_data);
	tcase_add_test(tc, test_truncated_header);
	tcase_add_test(tc, test_bad_version);
	tcase_add_test(tc, test_too_many_dims);
	tcase_add_test(tc, test_bad_shape);
	tcase_add_test(tc, test_malformed_header);
	tcase_add_test(tc, test_out_zeroed_on_error);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_small_errlen);
	tcase_add_test(tc, test_save_errors);
	suite_add_tcase(s, tc);

	if (have_numpy()) {
		tc = tcase_create("numpy");
		tcase_add_unchecked_fixture(tc, tmp_setup, tmp_teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_numpy_writes);
		tcase_add_test(tc, test_numpy_reads);
		suite_add_tcase(s, tc);
	}
	return s;
}
