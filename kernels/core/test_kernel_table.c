/*
 * kernels/core/test_kernel_table.c — unit tests of kernels/core/table.c and
 * args.c: lookup, the ids and the CUDA table made from kernels/kernels.def,
 * parameter descriptions, binding arrays and scalars (the coercions and the
 * refusals, with their messages) and filling defaults. A small kernel of this
 * file's own covers the parameter kinds lombscargle does not have.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#ifdef GPUD_HAVE_CUDA
#include "kernels/core/cuda_kernel.h"
#endif
#include "tests/unit/suites.h"

#define assert_has(err, want)                                                                      \
	ck_assert_msg(strstr((err), (want)) != NULL, "message '%s' lacks '%s'", (err), (want))

/* --- a kernel with every kind of parameter ---------------------------------------- */

enum { T_A, T_M, T_O, T_N, T_SCALE, T_FLAG, T_K };

static const kernel_param tparams[] = {
	[T_A] = {"a", KPARAM_IN, KDT(GPUD_I32) | KDT(GPUD_I64), -1, 0, NULL, "any rank"},
	[T_M] = {"m", KPARAM_IN, KDT(GPUD_F64), 2, 0, NULL, "a matrix"},
	[T_O] = {"o", KPARAM_OUT, KDT_FLOAT | KDT(GPUD_I32) | KDT(GPUD_I64), 1, 0, NULL, "out"},
	[T_N] = {"n", KPARAM_SCALAR, 0, 0, KSCALAR_I64, NULL, "a required count"},
	[T_SCALE] = {"scale", KPARAM_SCALAR, 0, 0, KSCALAR_F64, "0.5", "a factor"},
	[T_FLAG] = {"flag", KPARAM_SCALAR, 0, 0, KSCALAR_BOOL, "true", "a switch"},
	[T_K] = {"k", KPARAM_SCALAR, 0, 0, KSCALAR_I64, "-42", "an offset"},
};

static const kernel_def tkernel = {
	.name = "testk",
	.doc = "parameters of every kind",
	.params = tparams,
	.nparams = sizeof(tparams) / sizeof(tparams[0]),
};

static const kernel_param badparams[] = {
	{"x", KPARAM_IN, KDT_FLOAT, 1, 0, NULL, "input", 0, 0, NULL},
	{"bad", KPARAM_SCALAR, 0, 0, KSCALAR_BOOL, "maybe", "a default that does not parse", 0, 0, NULL},
};

static const kernel_def badkernel = {
	.name = "badk",
	.params = badparams,
	.nparams = sizeof(badparams) / sizeof(badparams[0]),
};

static const kernel_def *ls(void)
{
	const kernel_def *k = kernel_find("lombscargle");

	ck_assert_ptr_nonnull(k);
	return k;
}

static kernel_array arr(gpud_dtype dt, int ndim, uint64_t d0, uint64_t d1, uint64_t d2)
{
	static double storage[64];
	uint64_t dims[3] = {d0, d1, d2};
	kernel_array a;

	memset(&a, 0, sizeof(a));
	a.dtype = dt;
	a.ndim = ndim;
	a.count = 1;
	for (int i = 0; i < ndim; i++) {
		a.shape[i] = dims[i];
		a.count *= (size_t)dims[i];
	}
	a.data = storage;
	return a;
}

/* --- lookup --------------------------------------------------------------------------- */

START_TEST(test_find)
{
	size_t n = 0;
	const kernel_def *const *all = kernel_list(&n);
	const kernel_def *k = ls();

	ck_assert_str_eq(k->name, "lombscargle");
	ck_assert_int_eq(k->nparams, 6);
	ck_assert_ptr_nonnull(k->check);
	ck_assert_ptr_nonnull(k->cpu_items);
	ck_assert_ptr_nonnull(k->cpu_run);
	ck_assert_ptr_null(kernel_find("nope"));
	ck_assert_ptr_null(kernel_find(""));
	ck_assert_ptr_null(kernel_find("LombScargle"));
	ck_assert_ptr_null(kernel_find("lombscargl"));
	ck_assert_ptr_null(kernel_find("lombscargle "));

	ck_assert_uint_ge(n, 1);
	int seen = 0;
	for (size_t i = 0; i < n; i++) {
		/* every entry is found by its own name, and names are unique */
		ck_assert_ptr_eq(kernel_find(all[i]->name), all[i]);
		ck_assert_int_le(all[i]->nparams, KERNEL_MAX_PARAMS);
		seen += all[i] == k;
	}
	ck_assert_int_eq(seen, 1);
}
END_TEST

/*
 * kernels/kernels.def made the table: entry i has id i (KERNEL_ID_<name>),
 * names are unique, and with CUDA the CUDA table lists the same kernels in
 * the same order.
 */
START_TEST(test_ids)
{
	size_t n = 0;
	const kernel_def *const *all = kernel_list(&n);

	ck_assert_uint_eq(n, KERNEL_COUNT);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(all[i]->id == (int)i, "kernel %s, entry %zu, has id %d", all[i]->name,
			      i, all[i]->id);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(all[i]->name, all[j]->name) != 0,
				      "entries %zu and %zu are both named %s", j, i, all[i]->name);
	}
	ck_assert_str_eq(all[KERNEL_ID_lombscargle]->name, "lombscargle");
	ck_assert_str_eq(all[KERNEL_ID_normal]->name, "normal");
	ck_assert_ptr_eq(kernel_find("histogram"), all[KERNEL_ID_histogram]);
	ck_assert_int_lt(KERNEL_ID_CUSTOM, 0);
#ifdef GPUD_HAVE_CUDA
	size_t nc = 0;
	const cuda_kernel *const *cs = cuda_kernel_list(&nc);
	char err[256] = "";
	ck_assert_uint_eq(nc, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(cs[i]->name, all[i]->name);
	ck_assert_msg(cuda_kernel_tables_check(err, sizeof(err)) == 0, "%s", err);
#endif
}
END_TEST

START_TEST(test_param_index)
{
	const kernel_def *k = ls();
	char names[256];

	ck_assert_int_eq(kernel_param_index(k, "x"), LS_X);
	ck_assert_int_eq(kernel_param_index(k, "y"), LS_Y);
	ck_assert_int_eq(kernel_param_index(k, "freqs"), LS_FREQS);
	ck_assert_int_eq(kernel_param_index(k, "pgram"), LS_PGRAM);
	ck_assert_int_eq(kernel_param_index(k, "precenter"), LS_PRECENTER);
	ck_assert_int_eq(kernel_param_index(k, "normalize"), LS_NORMALIZE);
	ck_assert_int_eq(kernel_param_index(k, "X"), -1);
	ck_assert_int_eq(kernel_param_index(k, "freq"), -1);
	ck_assert_int_eq(kernel_param_index(k, ""), -1);
	ck_assert_int_eq(kernel_param_index(&tkernel, "k"), T_K);
	ck_assert_int_eq(kernel_param_index(&tkernel, "x"), -1);

	kernel_param_names(k, names, sizeof(names));
	ck_assert_str_eq(names, "x, y, freqs, pgram, precenter, normalize");
	kernel_param_names(&tkernel, names, 9);
	ck_assert_str_eq(names, "a, m, o,");
}
END_TEST

START_TEST(test_describe)
{
	const kernel_def *k = ls();
	char buf[128];

	kernel_param_describe(&k->params[LS_X], buf, sizeof(buf));
	ck_assert_str_eq(buf, "float32|float64 1-d array");
	kernel_param_describe(&k->params[LS_FREQS], buf, sizeof(buf));
	ck_assert_str_eq(buf, "float32|float64 1-d array");
	kernel_param_describe(&k->params[LS_PGRAM], buf, sizeof(buf));
	ck_assert_str_eq(buf, "float32|float64 1-d array (output)");
	kernel_param_describe(&k->params[LS_PRECENTER], buf, sizeof(buf));
	ck_assert_str_eq(buf, "bool scalar (default false)");
	kernel_param_describe(&k->params[LS_NORMALIZE], buf, sizeof(buf));
	ck_assert_str_eq(buf, "bool scalar (default false)");

	kernel_param_describe(&tparams[T_A], buf, sizeof(buf));
	ck_assert_str_eq(buf, "int32|int64 array");
	kernel_param_describe(&tparams[T_M], buf, sizeof(buf));
	ck_assert_str_eq(buf, "float64 2-d array");
	kernel_param_describe(&tparams[T_O], buf, sizeof(buf));
	ck_assert_str_eq(buf, "float32|float64|int32|int64 1-d array (output)");
	kernel_param_describe(&tparams[T_N], buf, sizeof(buf));
	ck_assert_str_eq(buf, "int64 scalar");
	kernel_param_describe(&tparams[T_SCALE], buf, sizeof(buf));
	ck_assert_str_eq(buf, "float64 scalar (default 0.5)");
	kernel_param_describe(&tparams[T_K], buf, sizeof(buf));
	ck_assert_str_eq(buf, "int64 scalar (default -42)");

	/* a short buffer gets a terminated prefix */
	memset(buf, 'Z', sizeof(buf));
	kernel_param_describe(&k->params[LS_X], buf, 10);
	ck_assert_str_eq(buf, "float32|f");
	ck_assert_int_eq(buf[10], 'Z');
}
END_TEST

START_TEST(test_scalar_parse)
{
	kernel_value v;

	ck_assert_str_eq(kernel_scalar_type_name(KSCALAR_BOOL), "bool");
	ck_assert_str_eq(kernel_scalar_type_name(KSCALAR_I64), "int64");
	ck_assert_str_eq(kernel_scalar_type_name(KSCALAR_F64), "float64");

	v.s.b = 7;
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_BOOL, "true", &v), 0);
	ck_assert_int_eq(v.s.b, 1);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_BOOL, "False", &v), 0);
	ck_assert_int_eq(v.s.b, 0);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_BOOL, "1", &v), 0);
	ck_assert_int_eq(v.s.b, 1);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_BOOL, "0", &v), 0);
	ck_assert_int_eq(v.s.b, 0);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_BOOL, "yes", &v), -1);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_BOOL, "2", &v), -1);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_I64, "-42", &v), 0);
	ck_assert_int_eq(v.s.i64, -42);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_I64, "4x", &v), -1);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_I64, "", &v), -1);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_F64, "0.5", &v), 0);
	ck_assert_double_eq(v.s.f64, 0.5);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_F64, "-1e3", &v), 0);
	ck_assert_double_eq(v.s.f64, -1000.0);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_F64, "abc", &v), -1);
}
END_TEST

/* --- binding arrays ----------------------------------------------------------------- */

START_TEST(test_bind_array_ok)
{
	const kernel_def *k = ls();
	kernel_value v;
	char err[256] = "";

	memset(&v, 0, sizeof(v));
	kernel_array a = arr(GPUD_F32, 1, 12, 0, 0);
	ck_assert_msg(kernel_bind_array(k, &k->params[LS_Y], &a, &v, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.arr.dtype, GPUD_F32);
	ck_assert_int_eq(v.arr.ndim, 1);
	ck_assert_uint_eq(v.arr.shape[0], 12);
	ck_assert_uint_eq(v.arr.count, 12);
	ck_assert_ptr_eq(v.arr.data, a.data);

	/* any rank, either accepted dtype */
	memset(&v, 0, sizeof(v));
	a = arr(GPUD_I64, 3, 2, 3, 4);
	ck_assert_msg(kernel_bind_array(&tkernel, &tparams[T_A], &a, &v, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.arr.ndim, 3);
	ck_assert_uint_eq(v.arr.count, 24);
	memset(&v, 0, sizeof(v));
	a = arr(GPUD_I32, 0, 0, 0, 0);
	ck_assert_msg(kernel_bind_array(&tkernel, &tparams[T_A], &a, &v, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(v.present, 1);
	/* an output may be bound like an input */
	memset(&v, 0, sizeof(v));
	a = arr(GPUD_F64, 1, 5, 0, 0);
	ck_assert_msg(kernel_bind_array(k, &k->params[LS_PGRAM], &a, &v, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(v.present, 1);
}
END_TEST

START_TEST(test_bind_array_wrong_dtype)
{
	const kernel_def *k = ls();
	kernel_value v;
	char err[256] = "";

	memset(&v, 0, sizeof(v));
	kernel_array a = arr(GPUD_I32, 1, 4, 0, 0);
	ck_assert_int_eq(kernel_bind_array(k, &k->params[LS_X], &a, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle: argument 'x' must be float32|float64 1-d array, "
			      "got int32");
	ck_assert_int_eq(v.present, 0);

	a = arr(GPUD_F32, 2, 4, 4, 0);
	ck_assert_int_eq(kernel_bind_array(&tkernel, &tparams[T_M], &a, &v, err, sizeof(err)), -1);
	assert_has(err, "testk");
	assert_has(err, "'m'");
	assert_has(err, "float64 2-d array");
	assert_has(err, "got float32");
	ck_assert_int_eq(v.present, 0);

	a = arr(GPUD_F64, 1, 4, 0, 0);
	ck_assert_int_eq(kernel_bind_array(&tkernel, &tparams[T_A], &a, &v, err, sizeof(err)), -1);
	assert_has(err, "'a'");
	assert_has(err, "int32|int64 array");
	assert_has(err, "got float64");
	ck_assert_int_eq(v.present, 0);
}
END_TEST

START_TEST(test_bind_array_wrong_ndim)
{
	const kernel_def *k = ls();
	kernel_value v;
	char err[256] = "";

	memset(&v, 0, sizeof(v));
	kernel_array a = arr(GPUD_F64, 2, 3, 4, 0);
	ck_assert_int_eq(kernel_bind_array(k, &k->params[LS_FREQS], &a, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
			 "lombscargle: argument 'freqs' must be 1-d, got 2-d with shape (3, 4)");
	ck_assert_int_eq(v.present, 0);

	a = arr(GPUD_F64, 0, 0, 0, 0);
	ck_assert_int_eq(kernel_bind_array(k, &k->params[LS_X], &a, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle: argument 'x' must be 1-d, got 0-d with shape ()");

	a = arr(GPUD_F64, 1, 5, 0, 0);
	ck_assert_int_eq(kernel_bind_array(&tkernel, &tparams[T_M], &a, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "testk: argument 'm' must be 2-d, got 1-d with shape (5,)");

	a = arr(GPUD_F64, 3, 2, 1, 7);
	ck_assert_int_eq(kernel_bind_array(&tkernel, &tparams[T_M], &a, &v, err, sizeof(err)), -1);
	assert_has(err, "got 3-d with shape (2, 1, 7)");
	ck_assert_int_eq(v.present, 0);
}
END_TEST

START_TEST(test_bind_array_for_scalar)
{
	const kernel_def *k = ls();
	kernel_value v;
	char err[256] = "";

	memset(&v, 0, sizeof(v));
	kernel_array a = arr(GPUD_F64, 1, 1, 0, 0);
	ck_assert_int_eq(kernel_bind_array(k, &k->params[LS_PRECENTER], &a, &v, err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lombscargle: argument 'precenter' must be a bool scalar, got a "
			      "float64 array");
	ck_assert_int_eq(v.present, 0);
	a = arr(GPUD_I64, 0, 0, 0, 0);
	ck_assert_int_eq(kernel_bind_array(&tkernel, &tparams[T_SCALE], &a, &v, err, sizeof(err)),
			 -1);
	assert_has(err, "'scale' must be a float64 scalar");
	assert_has(err, "int64 array");
	ck_assert_int_eq(v.present, 0);
}
END_TEST

/* --- binding scalars ---------------------------------------------------------------- */

static int bind_s(const kernel_def *k, const kernel_param *p, kscalar_given kind, int b, int64_t i,
		  double d, kernel_value *v, char *err, size_t errlen)
{
	memset(v, 0, sizeof(*v));
	v->s.i64 = 0x5a5a5a5a5a5a5a5all; /* so a write of 0 shows */
	err[0] = '\0';
	return kernel_bind_scalar(k, p, kind, b, i, d, v, err, errlen);
}

START_TEST(test_bind_bool)
{
	const kernel_param *p = &ls()->params[LS_NORMALIZE];
	const kernel_def *k = ls();
	kernel_value v;
	char err[256];

	ck_assert_msg(bind_s(k, p, KGIVEN_BOOL, 1, 0, 0, &v, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.s.b, 1);
	ck_assert_msg(bind_s(k, p, KGIVEN_BOOL, 0, 0, 0, &v, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.s.b, 0);
	/* the integers 0 and 1 are bools */
	ck_assert_msg(bind_s(k, p, KGIVEN_I64, 0, 1, 0, &v, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.s.b, 1);
	ck_assert_msg(bind_s(k, p, KGIVEN_I64, 0, 0, 0, &v, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.s.b, 0);
	/* other integers are not */
	ck_assert_int_eq(bind_s(k, p, KGIVEN_I64, 0, 2, 0, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
			 "lombscargle: argument 'normalize' must be bool (true, false, 1 or 0), "
			 "got 2");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(bind_s(k, p, KGIVEN_I64, 0, -1, 0, &v, err, sizeof(err)), -1);
	assert_has(err, "got -1");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(bind_s(k, p, KGIVEN_I64, 0, INT64_MIN, 0, &v, err, sizeof(err)), -1);
	assert_has(err, "got -9223372036854775808");
	ck_assert_int_eq(v.present, 0);
}
END_TEST

START_TEST(test_bind_f64)
{
	const kernel_param *p = &tparams[T_SCALE];
	kernel_value v;
	char err[256];

	ck_assert_msg(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, -2.75, &v, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_double_eq(v.s.f64, -2.75);
	/* an integer is a float64 */
	ck_assert_msg(bind_s(&tkernel, p, KGIVEN_I64, 0, 7, 0, &v, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_double_eq(v.s.f64, 7.0);
	ck_assert_msg(bind_s(&tkernel, p, KGIVEN_I64, 0, -(INT64_C(1) << 53), 0, &v, err,
			     sizeof(err)) == 0,
		      "%s", err);
	ck_assert_double_eq(v.s.f64, -9007199254740992.0);
	/* a bool is not */
	ck_assert_int_eq(bind_s(&tkernel, p, KGIVEN_BOOL, 1, 0, 0, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "testk: argument 'scale' must be float64, got bool true");
	ck_assert_int_eq(v.present, 0);
}
END_TEST

START_TEST(test_bind_i64)
{
	const kernel_param *p = &tparams[T_N];
	kernel_value v;
	char err[256];

	ck_assert_msg(bind_s(&tkernel, p, KGIVEN_I64, 0, INT64_MAX, 0, &v, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.s.i64, INT64_MAX);
	/* integral float64 values are integers */
	ck_assert_msg(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, 3.0, &v, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.s.i64, 3);
	ck_assert_msg(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, -2.0, &v, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(v.s.i64, -2);
	ck_assert_msg(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, -0.0, &v, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(v.s.i64, 0);
	ck_assert_msg(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, 0x1p60, &v, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(v.s.i64, INT64_C(1) << 60);
	/* fractions and values past int64 are not */
	ck_assert_int_eq(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, 1.5, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "testk: argument 'n' must be int64, got 1.5");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, -0.25, &v, err, sizeof(err)), -1);
	assert_has(err, "got -0.25");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, 1e19, &v, err, sizeof(err)), -1);
	assert_has(err, "got 1e+19");
	ck_assert_int_eq(v.present, 0);
	/* nor is a bool */
	ck_assert_int_eq(bind_s(&tkernel, p, KGIVEN_BOOL, 0, 0, 0, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "testk: argument 'n' must be int64, got bool false");
	ck_assert_int_eq(v.present, 0);
}
END_TEST

/* NaN and the infinities, given for a parameter of each scalar type. */
START_TEST(test_bind_not_finite)
{
	static const double bad[] = {NAN, INFINITY, -INFINITY};
	static const int params[] = {T_N, T_SCALE, T_FLAG};
	kernel_value v;
	char err[256];

	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++) {
			const kernel_param *p = &tparams[params[j]];
			ck_assert_int_eq(bind_s(&tkernel, p, KGIVEN_F64, 0, 0, bad[i], &v, err,
						sizeof(err)),
					 -1);
			assert_has(err, "finite");
			assert_has(err, p->name);
			assert_has(err, kernel_scalar_type_name(p->stype));
			ck_assert_int_eq(v.present, 0);
		}
	}
	bind_s(&tkernel, &tparams[T_SCALE], KGIVEN_F64, 0, 0, -INFINITY, &v, err, sizeof(err));
	ck_assert_str_eq(err, "testk: argument 'scale' must be a finite float64, got -inf");
}
END_TEST

START_TEST(test_bind_scalar_for_buffer)
{
	const kernel_def *k = ls();
	kernel_value v;
	char err[256];

	ck_assert_int_eq(bind_s(k, &k->params[LS_X], KGIVEN_I64, 0, 3, 0, &v, err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lombscargle: argument 'x' must be a buffer (float32|float64 1-d "
			      "array), got a int64 scalar");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(bind_s(k, &k->params[LS_PGRAM], KGIVEN_F64, 0, 0, 1.0, &v, err,
				sizeof(err)),
			 -1);
	assert_has(err, "'pgram' must be a buffer");
	assert_has(err, "float64 scalar");
	ck_assert_int_eq(bind_s(k, &k->params[LS_Y], KGIVEN_BOOL, 1, 0, 0, &v, err, sizeof(err)),
			 -1);
	assert_has(err, "'y' must be a buffer");
	assert_has(err, "bool scalar");
	ck_assert_int_eq(v.present, 0);
}
END_TEST

/* --- finishing ----------------------------------------------------------------------- */

static void bind_ok(const kernel_def *k, kernel_args *a, int idx, gpud_dtype dt, int ndim)
{
	kernel_array x = arr(dt, ndim, 4, 4, 0);
	char err[256] = "";

	ck_assert_msg(kernel_bind_array(k, &k->params[idx], &x, &a->v[idx], err, sizeof(err)) == 0,
		      "%s", err);
}

START_TEST(test_finish_defaults)
{
	const kernel_def *k = ls();
	kernel_args a;
	char err[256] = "";

	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.v[LS_PRECENTER].s.b = 7;
	a.v[LS_NORMALIZE].s.b = 7;
	bind_ok(k, &a, LS_X, GPUD_F64, 1);
	bind_ok(k, &a, LS_Y, GPUD_F64, 1);
	bind_ok(k, &a, LS_FREQS, GPUD_F64, 1);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[LS_PRECENTER].s.b, 0);
	ck_assert_int_eq(a.v[LS_NORMALIZE].s.b, 0);
	/* the output is not required */
	ck_assert_int_eq(a.v[LS_PGRAM].present, 0);

	/* defaults of each type; a given value is kept */
	memset(&a, 0, sizeof(a));
	a.kernel = &tkernel;
	a.v[T_SCALE].s.f64 = 99;
	a.v[T_K].s.i64 = 99;
	bind_ok(&tkernel, &a, T_A, GPUD_I32, 1);
	bind_ok(&tkernel, &a, T_M, GPUD_F64, 2);
	ck_assert_int_eq(kernel_bind_scalar(&tkernel, &tparams[T_N], KGIVEN_I64, 0, 5, 0, &a.v[T_N],
					    err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(&tkernel, &tparams[T_FLAG], KGIVEN_BOOL, 0, 0, 0,
					    &a.v[T_FLAG], err, sizeof(err)),
			 0);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[T_N].s.i64, 5);
	ck_assert_double_eq(a.v[T_SCALE].s.f64, 0.5);
	ck_assert_int_eq(a.v[T_FLAG].s.b, 0); /* given false, default true */
	ck_assert_int_eq(a.v[T_K].s.i64, -42);
	ck_assert_int_eq(a.v[T_O].present, 0);
}
END_TEST

/*
 * kernel.h documents kernel_value.present as "given by the client (or, for
 * scalars, defaulted)": after finishing, every scalar is present.
 */
START_TEST(test_finish_defaults_present)
{
	const kernel_def *k = ls();
	kernel_args a;
	char err[256] = "";

	memset(&a, 0, sizeof(a));
	a.kernel = k;
	bind_ok(k, &a, LS_X, GPUD_F32, 1);
	bind_ok(k, &a, LS_Y, GPUD_F32, 1);
	bind_ok(k, &a, LS_FREQS, GPUD_F32, 1);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(a.v[LS_PRECENTER].present == 1, "defaulted 'precenter' is not present");
	ck_assert_msg(a.v[LS_NORMALIZE].present == 1, "defaulted 'normalize' is not present");
}
END_TEST

START_TEST(test_finish_missing)
{
	const kernel_def *k = ls();
	kernel_args a;
	char err[256] = "";

	memset(&a, 0, sizeof(a));
	a.kernel = k;
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle: missing argument 'x' (float32|float64 1-d array)");

	bind_ok(k, &a, LS_Y, GPUD_F64, 1);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle: missing argument 'x' (float32|float64 1-d array)");

	bind_ok(k, &a, LS_X, GPUD_F64, 1);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle: missing argument 'freqs' (float32|float64 1-d array)");

	/* a required scalar */
	memset(&a, 0, sizeof(a));
	a.kernel = &tkernel;
	bind_ok(&tkernel, &a, T_A, GPUD_I64, 1);
	bind_ok(&tkernel, &a, T_M, GPUD_F64, 2);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "testk: missing argument 'n' (int64 scalar)");
}
END_TEST

START_TEST(test_finish_bad_default)
{
	kernel_args a;
	char err[256] = "";

	memset(&a, 0, sizeof(a));
	a.kernel = &badkernel;
	bind_ok(&badkernel, &a, 0, GPUD_F64, 1);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "badk: bad default 'maybe' for 'bad'");
}
END_TEST

/* --- dtype names (KSCALAR_DTYPE) ------------------------------------------------------ */

static const kernel_param dparams[] = {
	{"n", KPARAM_SCALAR, 0, 0, KSCALAR_I64, NULL, "a count", 0, 0, NULL},
	{"dtype", KPARAM_SCALAR, KDT_FLOAT, 0, KSCALAR_DTYPE, "float64", "out's dtype", 0, 0, NULL},
};

static const kernel_def dkernel = {
	.name = "dk",
	.params = dparams,
	.nparams = sizeof(dparams) / sizeof(dparams[0]),
};

START_TEST(test_bind_dtype)
{
	const kernel_def *k = &dkernel;
	const kernel_param *p = &dparams[1];
	kernel_value v;
	char err[256], d[128];

	ck_assert_str_eq(kernel_scalar_type_name(KSCALAR_DTYPE), "dtype");
	kernel_param_describe(p, d, sizeof(d));
	ck_assert_str_eq(d, "dtype name float32|float64 (default float64)");
	ck_assert_int_eq(kernel_dtype_parse("float32"), GPUD_F32);
	ck_assert_int_eq(kernel_dtype_parse("int64"), GPUD_I64);
	ck_assert_int_eq(kernel_dtype_parse("Float32"), GPUD_DTYPE_INVALID);
	ck_assert_int_eq(kernel_dtype_parse(""), GPUD_DTYPE_INVALID);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_DTYPE, "float64", &v), 0);
	ck_assert_int_eq(v.s.dtype, GPUD_F64);
	ck_assert_int_eq(kernel_scalar_parse(KSCALAR_DTYPE, "double", &v), -1);

	memset(&v, 0, sizeof(v));
	ck_assert_msg(kernel_bind_text(k, p, "float32", &v, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(v.present, 1);
	ck_assert_int_eq(v.s.dtype, GPUD_F32);
	/* a dtype it may not name, a name that is no dtype, a number */
	memset(&v, 0, sizeof(v));
	ck_assert_int_eq(kernel_bind_text(k, p, "int32", &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "dk: argument 'dtype' must be a dtype name float32|float64 "
			      "(default float64), got 'int32'");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(kernel_bind_text(k, p, "float16", &v, err, sizeof(err)), -1);
	assert_has(err, "got 'float16'");
	ck_assert_int_eq(bind_s(k, p, KGIVEN_I64, 0, 32, 0, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "dk: argument 'dtype' must be a dtype name float32|float64 "
			      "(default float64), got 32");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(bind_s(k, p, KGIVEN_BOOL, 1, 0, 0, &v, err, sizeof(err)), -1);
	assert_has(err, "got bool true");
	/* text for other scalars and for arrays */
	ck_assert_int_eq(kernel_bind_text(ls(), &ls()->params[LS_NORMALIZE], "maybe", &v, err,
					  sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lombscargle: argument 'normalize' must be bool (true, false, 1 or "
			      "0); cannot parse 'maybe'");
	ck_assert_int_eq(kernel_bind_text(k, &dparams[0], "many", &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "dk: argument 'n' must be int64; cannot parse 'many'");
	ck_assert_int_eq(kernel_bind_text(ls(), &ls()->params[0], "x.np", &v, err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lombscargle: argument 'x' must be float32|float64 1-d array, got "
			      "the text 'x.np'");
	/* the default, when absent */
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.v[0].present = 1;
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[1].s.dtype, GPUD_F64);
}
END_TEST

Suite *kernel_table_suite(void)
{
	Suite *s = suite_create("kernel_table");
	TCase *tc;

	tc = tcase_create("lookup");
	tcase_add_test(tc, test_find);
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_param_index);
	tcase_add_test(tc, test_describe);
	tcase_add_test(tc, test_scalar_parse);
	suite_add_tcase(s, tc);

	tc = tcase_create("bind");
	tcase_add_test(tc, test_bind_array_ok);
	tcase_add_test(tc, test_bind_array_wrong_dtype);
	tcase_add_test(tc, test_bind_array_wrong_ndim);
	tcase_add_test(tc, test_bind_array_for_scalar);
	tcase_add_test(tc, test_bind_bool);
	tcase_add_test(tc, test_bind_f64);
	tcase_add_test(tc, test_bind_i64);
	tcase_add_test(tc, test_bind_not_finite);
	tcase_add_test(tc, test_bind_scalar_for_buffer);
	tcase_add_test(tc, test_bind_dtype);
	suite_add_tcase(s, tc);

	tc = tcase_create("finish");
	tcase_add_test(tc, test_finish_defaults);
	tcase_add_test(tc, test_finish_defaults_present);
	tcase_add_test(tc, test_finish_missing);
	tcase_add_test(tc, test_finish_bad_default);
	suite_add_tcase(s, tc);
	return s;
}
