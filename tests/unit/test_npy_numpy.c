/*
 * tests/unit/test_npy_numpy.c — .npy files checked against numpy itself, where
 * /usr/bin/python3 has it: what client/npy.c writes, numpy reads back equal;
 * what numpy writes (every dtype, order and version it makes), npy.c loads
 * equal. Each test runs single-threaded in its own process (Check's fork
 * mode); the scripts run in a child process.
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/unit/test_npy_util.h"

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

TCase *npy_numpy_tcase(void)
{
	TCase *tc;

	if (!have_numpy())
		return NULL;
	tc = tcase_create("numpy");
	tcase_add_unchecked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_numpy_writes);
	tcase_add_test(tc, test_numpy_reads);
	return tc;
}
