/*
 * tests/unit/test_npy_util.c — what the .npy tests share (test_npy_util.h): a
 * scratch directory per test case, files written and read back, .npy images
 * built by hand, running one through both gpud_npy_parse and gpud_npy_load,
 * expecting it refused, and seeded random contents. Each test runs
 * single-threaded in its own process (Check's fork mode).
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

#include "tests/unit/test_npy_util.h"

char tmpdir[PATH_MAX - 64];

/* --- helpers ----------------------------------------------------------------------- */

void tmp_setup(void)
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

void tmp_teardown(void)
{
	if (tmpdir[0])
		nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = '\0';
}

void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f != NULL, "cannot create %s", path);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* A whole file into a malloc'd buffer. */
unsigned char *read_file(const char *path, size_t *len)
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
unsigned char *build(int major, int minor, const char *header, const void *data, size_t dlen,
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
int run_both(const unsigned char *buf, size_t len, const char *fname, gpud_array *out, char *err,
	     size_t errlen)
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
void expect_error(const char *header, const void *data, size_t dlen, const char *want)
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

uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* Random non-zero values of a's dtype. */
void fill_random(gpud_array *a, uint64_t seed)
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
