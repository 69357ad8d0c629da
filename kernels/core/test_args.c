/*
 * kernels/core/test_args.c — unit tests of kernels/core/args.c: parameter
 * lookup and descriptions, binding arrays and scalars (the coercions and the
 * refusals, with their messages), dtype names and word scalars, and filling
 * defaults. Small kernels of this file's own cover the parameter kinds
 * lombscargle does not have; one has word scalars (KSCALAR_WORD) and optional
 * inputs and scalars besides lombscargle's normalize, weights and grid.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
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
	{"x", KPARAM_IN, KDT_FLOAT, 1, 0, NULL, "input", 0, 0, NULL, 0, 0},
	{"bad", KPARAM_SCALAR, 0, 0, KSCALAR_BOOL, "maybe", "a default that does not parse", 0, 0,
	 NULL, 0, 0},
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

/* --- parameters ---------------------------------------------------------------------- */

START_TEST(test_param_index)
{
	static const struct {
		const char *name;
		int want;
	} cases[] = {{"x", LS_X},
		     {"y", LS_Y},
		     {"freqs", LS_FREQS},
		     {"pgram", LS_PGRAM},
		     {"precenter", LS_PRECENTER},
		     {"normalize", LS_NORMALIZE},
		     {"weights", LS_WEIGHTS},
		     {"floating_mean", LS_FLOATING_MEAN},
		     {"f0", LS_F0},
		     {"df", LS_DF},
		     {"nf", LS_NF},
		     {"legacy", LS_LEGACY},
		     {"X", -1},
		     {"freq", -1},
		     {"", -1}};
	const kernel_def *k = ls();
	char names[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(kernel_param_index(k, cases[i].name) == cases[i].want,
			      "'%s': %d, expected %d", cases[i].name,
			      kernel_param_index(k, cases[i].name), cases[i].want);
	ck_assert_int_eq(kernel_param_index(&tkernel, "k"), T_K);
	ck_assert_int_eq(kernel_param_index(&tkernel, "x"), -1);

	kernel_param_names(k, names, sizeof(names));
	ck_assert_str_eq(names, "x, y, freqs, pgram, precenter, normalize, weights, floating_mean, "
				"f0, df, nf, legacy, method, eps");
	kernel_param_names(&tkernel, names, 9);
	ck_assert_str_eq(names, "a, m, o,");
}
END_TEST

START_TEST(test_describe)
{
	const kernel_def *k = ls();
	const kernel_param *lp = k->params;
	const struct {
		const kernel_param *p;
		const char *want;
	} cases[] = {
		{&lp[LS_X], "float32|float64 1-d array"},
		{&lp[LS_Y], "float32|float64 array"}, /* 1-d or a batch: any rank */
		{&lp[LS_FREQS], "float32|float64 1-d array (optional)"},
		{&lp[LS_PGRAM], "float32|float64|complex64|complex128 array (output)"},
		{&lp[LS_PRECENTER], "bool scalar (default false)"},
		{&lp[LS_NORMALIZE], "power|normalize|amplitude or bool (default power)"},
		{&lp[LS_WEIGHTS], "float32|float64 1-d array (optional)"},
		{&lp[LS_FLOATING_MEAN], "bool scalar (default false)"},
		{&lp[LS_F0], "float64 scalar (optional)"},
		{&lp[LS_DF], "float64 scalar (optional)"},
		{&lp[LS_NF], "int64 scalar (optional)"},
		{&lp[LS_LEGACY], "bool scalar (default false)"},
		{&tparams[T_A], "int32|int64 array"},
		{&tparams[T_M], "float64 2-d array"},
		{&tparams[T_O], "float32|float64|int32|int64 1-d array (output)"},
		{&tparams[T_N], "int64 scalar"},
		{&tparams[T_SCALE], "float64 scalar (default 0.5)"},
		{&tparams[T_K], "int64 scalar (default -42)"},
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kernel_param_describe(cases[i].p, buf, sizeof(buf));
		ck_assert_str_eq(buf, cases[i].want);
	}

	/* a short buffer gets a terminated prefix */
	memset(buf, 'Z', sizeof(buf));
	kernel_param_describe(&k->params[LS_X], buf, 10);
	ck_assert_str_eq(buf, "float32|f");
	ck_assert_int_eq(buf[10], 'Z');
}
END_TEST

START_TEST(test_scalar_parse)
{
	/* text as its type: rv, and the value read (bool and int64 as numbers) */
	static const struct {
		kscalar_type t;
		const char *text;
		int rv;
		double want;
	} cases[] = {
		{KSCALAR_BOOL, "true", 0, 1},
		{KSCALAR_BOOL, "False", 0, 0},
		{KSCALAR_BOOL, "1", 0, 1},
		{KSCALAR_BOOL, "0", 0, 0},
		{KSCALAR_BOOL, "yes", -1, 0},
		{KSCALAR_BOOL, "2", -1, 0},
		{KSCALAR_I64, "-42", 0, -42},
		{KSCALAR_I64, "4x", -1, 0},
		{KSCALAR_I64, "", -1, 0},
		{KSCALAR_F64, "0.5", 0, 0.5},
		{KSCALAR_F64, "-1e3", 0, -1000.0},
		{KSCALAR_F64, "abc", -1, 0},
		/* words need their parameter's list: kernel_bind_text */
		{KSCALAR_WORD, "power", -1, 0},
		{KSCALAR_WORD, "true", -1, 0},
	};
	kernel_value v;

	ck_assert_str_eq(kernel_scalar_type_name(KSCALAR_BOOL), "bool");
	ck_assert_str_eq(kernel_scalar_type_name(KSCALAR_I64), "int64");
	ck_assert_str_eq(kernel_scalar_type_name(KSCALAR_F64), "float64");
	ck_assert_str_eq(kernel_scalar_type_name(KSCALAR_WORD), "word");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v.s.i64 = 0x5a5a5a5a5a5a5a5all; /* so a write of 0 shows */
		ck_assert_msg(kernel_scalar_parse(cases[i].t, cases[i].text, &v) == cases[i].rv,
			      "'%s' as %s", cases[i].text, kernel_scalar_type_name(cases[i].t));
		if (cases[i].rv != 0)
			continue;
		double got = cases[i].t == KSCALAR_BOOL  ? v.s.b
			     : cases[i].t == KSCALAR_I64 ? (double)v.s.i64
							 : v.s.f64;
		ck_assert_msg(got == cases[i].want, "'%s' as %s: %g, expected %g", cases[i].text,
			      kernel_scalar_type_name(cases[i].t), got, cases[i].want);
	}
}
END_TEST

/* --- binding arrays ----------------------------------------------------------------- */

/* a bound to p of k, which must bind: the value, present */
static kernel_value bound_arr(const kernel_def *k, const kernel_param *p, kernel_array a)
{
	kernel_value v;
	char err[256] = "";

	memset(&v, 0, sizeof(v));
	ck_assert_msg(kernel_bind_array(k, p, &a, &v, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(v.present, 1);
	return v;
}

START_TEST(test_bind_array_ok)
{
	const kernel_def *k = ls();
	kernel_array a = arr(GPUD_F32, 1, 12, 0, 0);
	kernel_value v = bound_arr(k, &k->params[LS_Y], a);

	ck_assert_int_eq(v.arr.dtype, GPUD_F32);
	ck_assert_int_eq(v.arr.ndim, 1);
	ck_assert_uint_eq(v.arr.shape[0], 12);
	ck_assert_uint_eq(v.arr.count, 12);
	ck_assert_ptr_eq(v.arr.data, a.data);

	/* any rank, either accepted dtype */
	v = bound_arr(&tkernel, &tparams[T_A], arr(GPUD_I64, 3, 2, 3, 4));
	ck_assert_int_eq(v.arr.ndim, 3);
	ck_assert_uint_eq(v.arr.count, 24);
	bound_arr(&tkernel, &tparams[T_A], arr(GPUD_I32, 0, 0, 0, 0));
	/* an output may be bound like an input */
	bound_arr(k, &k->params[LS_PGRAM], arr(GPUD_F64, 1, 5, 0, 0));
	/* a complex one too (lombscargle's amplitude), and an optional input */
	v = bound_arr(k, &k->params[LS_PGRAM], arr(GPUD_C64, 1, 5, 0, 0));
	ck_assert_int_eq(v.arr.dtype, GPUD_C64);
	bound_arr(k, &k->params[LS_WEIGHTS], arr(GPUD_F64, 1, 5, 0, 0));
}
END_TEST

/* a bound to p of k, which must be refused: the message; nothing is bound */
static const char *refused_arr(const kernel_def *k, const kernel_param *p, kernel_array a)
{
	static char err[256];
	kernel_value v;

	memset(&v, 0, sizeof(v));
	err[0] = '\0';
	ck_assert_int_eq(kernel_bind_array(k, p, &a, &v, err, sizeof(err)), -1);
	ck_assert_int_eq(v.present, 0);
	return err;
}

START_TEST(test_bind_array_wrong_dtype)
{
	const kernel_def *k = ls();
	const char *err;

	ck_assert_str_eq(refused_arr(k, &k->params[LS_X], arr(GPUD_I32, 1, 4, 0, 0)),
			 "lombscargle: argument 'x' must be float32|float64 1-d array, got int32");
	/* complex inputs: no */
	ck_assert_str_eq(refused_arr(k, &k->params[LS_Y], arr(GPUD_C128, 1, 4, 0, 0)),
			 "lombscargle: argument 'y' must be float32|float64 array, got complex128");
	/* an optional input says so */
	ck_assert_str_eq(refused_arr(k, &k->params[LS_WEIGHTS], arr(GPUD_I64, 1, 4, 0, 0)),
			 "lombscargle: argument 'weights' must be float32|float64 1-d array "
			 "(optional), got int64");

	err = refused_arr(&tkernel, &tparams[T_M], arr(GPUD_F32, 2, 4, 4, 0));
	assert_has(err, "testk");
	assert_has(err, "'m'");
	assert_has(err, "float64 2-d array");
	assert_has(err, "got float32");

	err = refused_arr(&tkernel, &tparams[T_A], arr(GPUD_F64, 1, 4, 0, 0));
	assert_has(err, "'a'");
	assert_has(err, "int32|int64 array");
	assert_has(err, "got float64");
}
END_TEST

START_TEST(test_bind_array_wrong_ndim)
{
	const kernel_def *k = ls();

	ck_assert_str_eq(refused_arr(k, &k->params[LS_FREQS], arr(GPUD_F64, 2, 3, 4, 0)),
			 "lombscargle: argument 'freqs' must be 1-d, got 2-d with shape (3, 4)");
	ck_assert_str_eq(refused_arr(k, &k->params[LS_X], arr(GPUD_F64, 0, 0, 0, 0)),
			 "lombscargle: argument 'x' must be 1-d, got 0-d with shape ()");
	ck_assert_str_eq(refused_arr(&tkernel, &tparams[T_M], arr(GPUD_F64, 1, 5, 0, 0)),
			 "testk: argument 'm' must be 2-d, got 1-d with shape (5,)");
	assert_has(refused_arr(&tkernel, &tparams[T_M], arr(GPUD_F64, 3, 2, 1, 7)),
		   "got 3-d with shape (2, 1, 7)");
}
END_TEST

START_TEST(test_bind_array_for_scalar)
{
	const kernel_def *k = ls();
	const char *err;

	ck_assert_str_eq(refused_arr(k, &k->params[LS_PRECENTER], arr(GPUD_F64, 1, 1, 0, 0)),
			 "lombscargle: argument 'precenter' must be a bool scalar, got a float64 "
			 "array");
	err = refused_arr(&tkernel, &tparams[T_SCALE], arr(GPUD_I64, 0, 0, 0, 0));
	assert_has(err, "'scale' must be a float64 scalar");
	assert_has(err, "int64 array");
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

/* bind_s, which must bind: the value, present. */
static kernel_value bound(const kernel_def *k, const kernel_param *p, kscalar_given kind, int b,
			  int64_t i, double d)
{
	kernel_value v;
	char err[256];

	ck_assert_msg(bind_s(k, p, kind, b, i, d, &v, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(v.present, 1);
	return v;
}

START_TEST(test_bind_bool)
{
	const kernel_param *p = &ls()->params[LS_PRECENTER];
	const kernel_def *k = ls();
	kernel_value v;
	char err[256];

	ck_assert_int_eq(bound(k, p, KGIVEN_BOOL, 1, 0, 0).s.b, 1);
	ck_assert_int_eq(bound(k, p, KGIVEN_BOOL, 0, 0, 0).s.b, 0);
	/* the integers 0 and 1 are bools */
	ck_assert_int_eq(bound(k, p, KGIVEN_I64, 0, 1, 0).s.b, 1);
	ck_assert_int_eq(bound(k, p, KGIVEN_I64, 0, 0, 0).s.b, 0);
	/* other integers are not */
	ck_assert_int_eq(bind_s(k, p, KGIVEN_I64, 0, 2, 0, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
			 "lombscargle: argument 'precenter' must be bool (true, false, 1 or 0), "
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

	ck_assert_double_eq(bound(&tkernel, p, KGIVEN_F64, 0, 0, -2.75).s.f64, -2.75);
	/* an integer is a float64 */
	ck_assert_double_eq(bound(&tkernel, p, KGIVEN_I64, 0, 7, 0).s.f64, 7.0);
	ck_assert_double_eq(bound(&tkernel, p, KGIVEN_I64, 0, -(INT64_C(1) << 53), 0).s.f64,
			    -9007199254740992.0);
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

	ck_assert_int_eq(bound(&tkernel, p, KGIVEN_I64, 0, INT64_MAX, 0).s.i64, INT64_MAX);
	/* integral float64 values are integers */
	ck_assert_int_eq(bound(&tkernel, p, KGIVEN_F64, 0, 0, 3.0).s.i64, 3);
	ck_assert_int_eq(bound(&tkernel, p, KGIVEN_F64, 0, 0, -2.0).s.i64, -2);
	ck_assert_int_eq(bound(&tkernel, p, KGIVEN_F64, 0, 0, -0.0).s.i64, 0);
	ck_assert_int_eq(bound(&tkernel, p, KGIVEN_F64, 0, 0, 0x1p60).s.i64, INT64_C(1) << 60);
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
	a.v[LS_NORMALIZE].s.i64 = 7;
	a.v[LS_FLOATING_MEAN].s.b = 7;
	a.v[LS_LEGACY].s.b = 7;
	bind_ok(k, &a, LS_X, GPUD_F64, 1);
	bind_ok(k, &a, LS_Y, GPUD_F64, 1);
	bind_ok(k, &a, LS_FREQS, GPUD_F64, 1);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[LS_PRECENTER].s.b, 0);
	ck_assert_int_eq(a.v[LS_NORMALIZE].s.i64, LS_POWER); /* the default word's index */
	ck_assert_int_eq(a.v[LS_FLOATING_MEAN].s.b, 0);
	ck_assert_int_eq(a.v[LS_LEGACY].s.b, 0);
	/* the output is not required, nor the optional inputs and scalars */
	ck_assert_int_eq(a.v[LS_PGRAM].present, 0);
	ck_assert_int_eq(a.v[LS_WEIGHTS].present, 0);
	ck_assert_int_eq(a.v[LS_F0].present, 0);
	ck_assert_int_eq(a.v[LS_DF].present, 0);
	ck_assert_int_eq(a.v[LS_NF].present, 0);

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
	static const int defaulted[] = {LS_PRECENTER, LS_NORMALIZE, LS_FLOATING_MEAN, LS_LEGACY};
	kernel_args a;
	char err[256] = "";

	memset(&a, 0, sizeof(a));
	a.kernel = k;
	bind_ok(k, &a, LS_X, GPUD_F32, 1);
	bind_ok(k, &a, LS_Y, GPUD_F32, 1);
	bind_ok(k, &a, LS_FREQS, GPUD_F32, 1);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	for (size_t i = 0; i < sizeof(defaulted) / sizeof(defaulted[0]); i++)
		ck_assert_msg(a.v[defaulted[i]].present == 1, "defaulted '%s' is not present",
			      k->params[defaulted[i]].name);
	/* optional scalars have no default: absent stays absent */
	ck_assert_msg(a.v[LS_NF].present == 0, "absent 'nf' is present");
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

	/* freqs is optional (or the grid): finishing passes, and check says what is missing */
	bind_ok(k, &a, LS_X, GPUD_F64, 1);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[LS_FREQS].present, 0);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle: missing the frequencies: give freqs (an array) or the "
			      "grid f0, df, nf");

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
	{"n", KPARAM_SCALAR, 0, 0, KSCALAR_I64, NULL, "a count", 0, 0, NULL, 0, 0},
	{"dtype", KPARAM_SCALAR, KDT_FLOAT, 0, KSCALAR_DTYPE, "float64", "out's dtype", 0, 0, NULL,
	 0, 0},
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
	ck_assert_int_eq(kernel_bind_text(ls(), &ls()->params[LS_PRECENTER], "maybe", &v, err,
					  sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lombscargle: argument 'precenter' must be a bool, got the text "
			      "'maybe': gpud reads text only for dtype and word arguments; send "
			      "the boolean itself");
	ck_assert_int_eq(kernel_bind_text(ls(), &ls()->params[LS_NORMALIZE], "maybe", &v, err,
					  sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lombscargle: argument 'normalize' must be one of "
			      "power|normalize|amplitude or bool (default power), got 'maybe'");
	ck_assert_int_eq(kernel_bind_text(ls(), &ls()->params[LS_NF], "many", &v, err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lombscargle: argument 'nf' must be an int64, got the text 'many': "
			      "gpud reads text only for dtype and word arguments; send the number "
			      "itself");
	ck_assert_int_eq(kernel_bind_text(k, &dparams[0], "many", &v, err, sizeof(err)), -1);
	ck_assert_int_eq(kernel_bind_text(k, &dparams[0], "10", &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "dk: argument 'n' must be an int64, got the text '10': gpud reads "
			      "text only for dtype and word arguments; send the number itself");
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

/* --- word scalars (KSCALAR_WORD) and optional parameters ------------------------------- */

static const char *const modes[] = {"off", "on", "auto", NULL};
static const char *const colours[] = {"red", "green", NULL};

enum { W_IN, W_OPT, W_MODE, W_COLOUR, W_LIMIT, W_OUT };

static const kernel_param wparams[] = {
	[W_IN] = {.name = "in",
		  .role = KPARAM_IN,
		  .dtypes = KDT(GPUD_F64),
		  .ndim = 1,
		  .doc = "an input"},
	[W_OPT] = {.name = "opt",
		   .role = KPARAM_IN,
		   .dtypes = KDT(GPUD_F64),
		   .ndim = 1,
		   .optional = 1,
		   .doc = "an optional input"},
	[W_MODE] = {.name = "mode",
		    .role = KPARAM_SCALAR,
		    .stype = KSCALAR_WORD,
		    .words = modes,
		    .default_value = "auto",
		    .doc = "a word with a default"},
	[W_COLOUR] = {.name = "colour",
		      .role = KPARAM_SCALAR,
		      .stype = KSCALAR_WORD,
		      .words = colours,
		      .doc = "a word without one"},
	[W_LIMIT] = {.name = "limit",
		     .role = KPARAM_SCALAR,
		     .stype = KSCALAR_I64,
		     .optional = 1,
		     .doc = "an optional scalar"},
	[W_OUT] = {.name = "out",
		   .role = KPARAM_OUT,
		   .dtypes = KDT_FLOAT | KDT_COMPLEX,
		   .ndim = -1,
		   .doc = "out"},
};

static const kernel_def wkernel = {
	.name = "wk",
	.doc = "words and optional parameters",
	.params = wparams,
	.nparams = sizeof(wparams) / sizeof(wparams[0]),
};

static const char *const yesno[] = {"no", "yes", NULL};
static const kernel_param badwparams[] = {
	{.name = "mode",
	 .role = KPARAM_SCALAR,
	 .stype = KSCALAR_WORD,
	 .words = yesno,
	 .default_value = "maybe",
	 .doc = "a default that is none of the words"},
};

static const kernel_def badwkernel = {
	.name = "badwk",
	.params = badwparams,
	.nparams = 1,
};

START_TEST(test_word_describe)
{
	char buf[128];

	kernel_param_describe(&wparams[W_MODE], buf, sizeof(buf));
	ck_assert_str_eq(buf, "off|on|auto or bool (default auto)");
	kernel_param_describe(&wparams[W_COLOUR], buf, sizeof(buf));
	ck_assert_str_eq(buf, "red|green or bool");
	kernel_param_describe(&wparams[W_LIMIT], buf, sizeof(buf));
	ck_assert_str_eq(buf, "int64 scalar (optional)");
	kernel_param_describe(&wparams[W_OPT], buf, sizeof(buf));
	ck_assert_str_eq(buf, "float64 1-d array (optional)");
	kernel_param_describe(&wparams[W_OUT], buf, sizeof(buf));
	ck_assert_str_eq(buf, "float32|float64|complex64|complex128 array (output)");
	/* a short buffer gets a terminated prefix */
	memset(buf, 'Z', sizeof(buf));
	kernel_param_describe(&wparams[W_MODE], buf, 8);
	ck_assert_str_eq(buf, "off|on|");
	ck_assert_int_eq(buf[8], 'Z');
}
END_TEST

/* Binds text to p of k into a fresh v (its value poisoned, so a write of 0 shows). */
static int bind_t(const kernel_def *k, const kernel_param *p, const char *text, kernel_value *v,
		  char *err, size_t errlen)
{
	memset(v, 0, sizeof(*v));
	v->s.i64 = 0x5a5a5a5a5a5a5a5all;
	err[0] = '\0';
	return kernel_bind_text(k, p, text, v, err, errlen);
}

/* bind_t, which must bind: the value, present. */
static kernel_value bound_t(const kernel_def *k, const kernel_param *p, const char *text)
{
	kernel_value v;
	char err[256];

	ck_assert_msg(bind_t(k, p, text, &v, err, sizeof(err)) == 0, "%s: %s", text, err);
	ck_assert_int_eq(v.present, 1);
	return v;
}

/* Words as text: one of the words (as written), or true and false (any case) for the first
 * two; the value is the word's index. */
START_TEST(test_bind_word_text)
{
	static const struct {
		const char *text;
		int64_t want;
	} ok[] = {{"off", 0},  {"on", 1},   {"auto", 2}, {"false", 0},
		  {"true", 1}, {"TRUE", 1}, {"False", 0}};
	const kernel_param *p = &wparams[W_MODE];
	kernel_value v;
	char err[256];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(bind_t(&wkernel, p, ok[i].text, &v, err, sizeof(err)) == 0, "%s: %s",
			      ok[i].text, err);
		ck_assert_int_eq(v.present, 1);
		ck_assert_int_eq(v.scalar, 0);
		ck_assert_msg(v.s.i64 == ok[i].want, "'%s' is %lld, expected %lld", ok[i].text,
			      (long long)v.s.i64, (long long)ok[i].want);
	}
	/* not a word: its case matters, no spaces, no numbers as text */
	ck_assert_int_eq(bind_t(&wkernel, p, "On", &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
			 "wk: argument 'mode' must be one of off|on|auto or bool (default auto), "
			 "got 'On'");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(bind_t(&wkernel, p, "", &v, err, sizeof(err)), -1);
	assert_has(err, "got ''");
	ck_assert_int_eq(bind_t(&wkernel, p, "auto ", &v, err, sizeof(err)), -1);
	assert_has(err, "got 'auto '");
	ck_assert_int_eq(bind_t(&wkernel, p, "yes", &v, err, sizeof(err)), -1);
	ck_assert_int_eq(v.present, 0);
	/* a long text is cut in the message */
	char longtext[200];
	memset(longtext, 'w', sizeof(longtext) - 1);
	longtext[sizeof(longtext) - 1] = '\0';
	ck_assert_int_eq(bind_t(&wkernel, p, longtext, &v, err, sizeof(err)), -1);
	ck_assert_msg(strlen(err) < 180, "'%s'", err);
	/* a word without a default */
	p = &wparams[W_COLOUR];
	ck_assert_int_eq(bound_t(&wkernel, p, "green").s.i64, 1);
	ck_assert_int_eq(bound_t(&wkernel, p, "false").s.i64, 0);
	ck_assert_int_eq(bind_t(&wkernel, p, "blue", &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "wk: argument 'colour' must be one of red|green or bool, got 'blue'");
	/* lombscargle's normalize */
	p = &ls()->params[LS_NORMALIZE];
	ck_assert_int_eq(bound_t(ls(), p, "power").s.i64, LS_POWER);
	ck_assert_int_eq(bound_t(ls(), p, "normalize").s.i64, LS_NORMALIZED);
	ck_assert_int_eq(bound_t(ls(), p, "amplitude").s.i64, LS_AMPLITUDE);
	ck_assert_int_eq(bound_t(ls(), p, "true").s.i64, LS_NORMALIZED);
	ck_assert_int_eq(bound_t(ls(), p, "false").s.i64, LS_POWER);
	ck_assert_int_eq(bind_t(ls(), p, "Amplitude", &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle: argument 'normalize' must be one of "
			      "power|normalize|amplitude or bool (default power), got 'Amplitude'");
	ck_assert_int_eq(bind_t(ls(), p, "normalized", &v, err, sizeof(err)), -1);
	assert_has(err, "got 'normalized'");
}
END_TEST

/* Words as numbers: a bool, or the integers 0 and 1, stand for the first two words. */
START_TEST(test_bind_word_scalar)
{
	const kernel_param *p = &wparams[W_MODE];
	kernel_value v;
	char err[256];

	ck_assert_int_eq(bound(&wkernel, p, KGIVEN_BOOL, 1, 0, 0).s.i64, 1);
	ck_assert_int_eq(bound(&wkernel, p, KGIVEN_BOOL, 0, 0, 0).s.i64, 0);
	ck_assert_int_eq(bound(&wkernel, p, KGIVEN_I64, 0, 1, 0).s.i64, 1);
	ck_assert_int_eq(bound(&wkernel, p, KGIVEN_I64, 0, 0, 0).s.i64, 0);
	/* other integers are not (2 is not "auto": only bools stand for words) */
	ck_assert_int_eq(bind_s(&wkernel, p, KGIVEN_I64, 0, 2, 0, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "wk: argument 'mode' must be one of off|on|auto or bool (default "
			      "auto), got 2");
	ck_assert_int_eq(v.present, 0);
	ck_assert_int_eq(bind_s(&wkernel, p, KGIVEN_I64, 0, -1, 0, &v, err, sizeof(err)), -1);
	assert_has(err, "got -1");
	ck_assert_int_eq(bind_s(&wkernel, p, KGIVEN_I64, 0, INT64_MAX, 0, &v, err, sizeof(err)),
			 -1);
	assert_has(err, "got 9223372036854775807");
	/* nor are floats, even whole ones */
	ck_assert_int_eq(bind_s(&wkernel, p, KGIVEN_F64, 0, 0, 1.0, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "wk: argument 'mode' must be one of off|on|auto or bool (default "
			      "auto), got 1");
	ck_assert_int_eq(bind_s(&wkernel, p, KGIVEN_F64, 0, 0, 0.5, &v, err, sizeof(err)), -1);
	assert_has(err, "got 0.5");
	ck_assert_int_eq(bind_s(&wkernel, p, KGIVEN_F64, 0, 0, NAN, &v, err, sizeof(err)), -1);
	assert_has(err, "'mode'");
	assert_has(err, "finite");
	ck_assert_int_eq(v.present, 0);
	/* a word without a default says so */
	ck_assert_int_eq(bind_s(&wkernel, &wparams[W_COLOUR], KGIVEN_I64, 0, 5, 0, &v, err,
				sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "wk: argument 'colour' must be one of red|green or bool, got 5");
	/* lombscargle's normalize: true is "normalize", false "power" */
	p = &ls()->params[LS_NORMALIZE];
	ck_assert_int_eq(bound(ls(), p, KGIVEN_BOOL, 1, 0, 0).s.i64, LS_NORMALIZED);
	ck_assert_int_eq(bound(ls(), p, KGIVEN_I64, 0, 0, 0).s.i64, LS_POWER);
	ck_assert_int_eq(bind_s(ls(), p, KGIVEN_I64, 0, 2, 0, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle: argument 'normalize' must be one of "
			      "power|normalize|amplitude or bool (default power), got 2");
	ck_assert_int_eq(bind_s(ls(), p, KGIVEN_BOOL, 0, 0, 0, &v, err, sizeof(err)), 0);
	/* an array for a word */
	kernel_array a = arr(GPUD_F64, 1, 2, 0, 0);
	memset(&v, 0, sizeof(v));
	ck_assert_int_eq(kernel_bind_array(ls(), p, &a, &v, err, sizeof(err)), -1);
	assert_has(err, "argument 'normalize' must be a");
	assert_has(err, "got a float64 array");
	ck_assert_int_eq(v.present, 0);
}
END_TEST

/* Optional inputs and scalars stay absent; a word's default is its index; a word without one
 * is required; a default that is none of the words is the kernel's bug. */
START_TEST(test_finish_word_and_optional)
{
	kernel_args a;
	char err[256] = "";

	memset(&a, 0, sizeof(a));
	a.kernel = &wkernel;
	a.v[W_MODE].s.i64 = 99;
	a.v[W_LIMIT].s.i64 = 99;
	bind_ok(&wkernel, &a, W_IN, GPUD_F64, 1);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "wk: missing argument 'colour' (red|green or bool)");
	ck_assert_msg(kernel_bind_text(&wkernel, &wparams[W_COLOUR], "red", &a.v[W_COLOUR], err,
				       sizeof(err)) == 0,
		      "%s", err);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[W_MODE].present, 1);
	ck_assert_int_eq(a.v[W_MODE].s.i64, 2); /* "auto" */
	ck_assert_int_eq(a.v[W_COLOUR].s.i64, 0);
	ck_assert_int_eq(a.v[W_OPT].present, 0);
	ck_assert_int_eq(a.v[W_LIMIT].present, 0);
	ck_assert_int_eq(a.v[W_OUT].present, 0);
	/* given ones are kept */
	memset(&a, 0, sizeof(a));
	a.kernel = &wkernel;
	bind_ok(&wkernel, &a, W_IN, GPUD_F64, 1);
	bind_ok(&wkernel, &a, W_OPT, GPUD_F64, 1);
	ck_assert_int_eq(kernel_bind_scalar(&wkernel, &wparams[W_MODE], KGIVEN_BOOL, 0, 0, 0,
					    &a.v[W_MODE], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(&wkernel, &wparams[W_COLOUR], KGIVEN_BOOL, 1, 0, 0,
					    &a.v[W_COLOUR], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(&wkernel, &wparams[W_LIMIT], KGIVEN_I64, 0, -5, 0,
					    &a.v[W_LIMIT], err, sizeof(err)),
			 0);
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[W_MODE].s.i64, 0);
	ck_assert_int_eq(a.v[W_COLOUR].s.i64, 1);
	ck_assert_int_eq(a.v[W_OPT].present, 1);
	ck_assert_int_eq(a.v[W_LIMIT].present, 1);
	ck_assert_int_eq(a.v[W_LIMIT].s.i64, -5);
	/* a bad default */
	memset(&a, 0, sizeof(a));
	a.kernel = &badwkernel;
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "badwk: bad default 'maybe' for 'mode'");
}
END_TEST

Suite *kernel_args_suite(void)
{
	Suite *s = suite_create("kernel_args");
	TCase *tc;

	tc = tcase_create("params");
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
	tcase_add_test(tc, test_word_describe);
	tcase_add_test(tc, test_bind_word_text);
	tcase_add_test(tc, test_bind_word_scalar);
	suite_add_tcase(s, tc);

	tc = tcase_create("finish");
	tcase_add_test(tc, test_finish_defaults);
	tcase_add_test(tc, test_finish_defaults_present);
	tcase_add_test(tc, test_finish_missing);
	tcase_add_test(tc, test_finish_bad_default);
	tcase_add_test(tc, test_finish_word_and_optional);
	suite_add_tcase(s, tc);
	return s;
}
