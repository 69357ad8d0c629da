/*
 * tests/unit/test_npy_util.h — what the .npy unit tests (test_npy.c,
 * test_npy_refused.c, test_npy_numpy.c) share: test_npy_util.c's helpers and
 * the test cases npy_suite puts together. Each test runs single-threaded in
 * its own process (Check's fork mode).
 */
#ifndef GPUD_TESTS_UNIT_TEST_NPY_UTIL_H
#define GPUD_TESTS_UNIT_TEST_NPY_UTIL_H

#include <check.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <gpud/npy.h>

/* Not the PATH one: that may be a virtualenv or pyenv without numpy. */
#define PYTHON "/usr/bin/python3"

#define assert_has(err, s)                                                                         \
	ck_assert_msg(strstr((err), (s)) != NULL, "error \"%s\" lacks \"%s\"", (err), (s))

/* The test case's scratch directory (the fixture makes and removes it). */
extern char tmpdir[PATH_MAX - 64];
void tmp_setup(void);
void tmp_teardown(void);
void tmp_path(char *buf, size_t len, const char *name);
void write_file(const char *path, const void *buf, size_t len);
unsigned char *read_file(const char *path, size_t *len);
/* A .npy image: magic, version major.minor, header length, header, data. */
unsigned char *build(int major, int minor, const char *header, const void *data, size_t dlen,
		     size_t *len);
/* buf through gpud_npy_parse and gpud_npy_load, which must agree: the status. */
int run_both(const unsigned char *buf, size_t len, const char *fname, gpud_array *out, char *err,
	     size_t errlen);
/* Builds a version 1.0 image of header + data and expects it refused with want. */
void expect_error(const char *header, const void *data, size_t dlen, const char *want);
uint64_t rng_next(uint64_t *s);
/* Random non-zero values of a's dtype. */
void fill_random(gpud_array *a, uint64_t seed);

/* The test cases of test_npy_refused.c and test_npy_numpy.c (NULL: no numpy here). */
TCase *npy_refused_tcase(void);
TCase *npy_numpy_tcase(void);

#endif
