/*
 * kernels/lombscargle/test_lombscargle_check.c — lombscargle's check, called
 * the way gpud calls it: every refusal with its exact message (lengths,
 * dtypes, emptiness, the frequencies as freqs or the grid, legacy, method and
 * eps, a batch's shape), the output it expects; then the verdict on the
 * weights' values and its message. Harness: test_lombscargle_util.c. Each
 * test runs single-threaded in its own process.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/test_lombscargle.h"

/* --- check --------------------------------------------------------------------------- */

/*
 * check on the lengths, the dtypes and emptiness: a case of ls_pcase(n, nf)
 * with y of ny samples, the weights (w) of nw, y's, freqs' and the weights'
 * dtypes (0: x's), and with grid the grid f0 = 1, df = 1, nf = 3 for freqs;
 * in dtype dt, refused with exactly want (NULL: passes). What is checked
 * first comes first: the dtype before the lengths, x and y before the
 * weights, a mismatch before emptiness.
 */
#define SAME -1 /* ny or nw: x's length */
static const struct check_row {
	const char *what;
	gpud_dtype dt;
	size_t n, nf;
	long ny;
	int w;
	long nw;
	gpud_dtype dty, dtf, dtw;
	int grid;
	const char *want;
} check_rows[] = {
	{"length", GPUD_F64, 5, 3, 7, 0, SAME, 0, 0, 0, 0,
	 "lombscargle: x and y must have the same length, got 5 and 7"},
	{"length", GPUD_F32, 12, 3, 11, 0, SAME, 0, 0, 0, 0,
	 "lombscargle: x and y must have the same length, got 12 and 11"},
	{"weights", GPUD_F64, 5, 3, SAME, 1, 4, 0, 0, 0, 0,
	 "lombscargle: weights must have the length of x, got 4 for 5 samples"},
	{"weights", GPUD_F32, 5, 3, SAME, 1, 6, 0, 0, 0, 0,
	 "lombscargle: weights must have the length of x, got 6 for 5 samples"},
	{"weights", GPUD_F64, 5, 3, SAME, 1, 0, 0, 0, 0, 0,
	 "lombscargle: weights must have the length of x, got 0 for 5 samples"},
	{"weights", GPUD_F64, 5, 3, SAME, 1, 5, 0, 0, 0, 0, NULL},
	{"x and y first", GPUD_F64, 5, 3, 4, 1, 3, 0, 0, 0, 0,
	 "lombscargle: x and y must have the same length, got 5 and 4"},
	{"dtype", GPUD_F64, 4, 3, SAME, 0, SAME, GPUD_F32, 0, 0, 0,
	 "lombscargle: x, y, freqs and weights must have one dtype: 'y' is float32 but 'x' is float64"},
	{"dtype", GPUD_F32, 4, 3, SAME, 0, SAME, 0, GPUD_F64, 0, 0,
	 "lombscargle: x, y, freqs and weights must have one dtype: 'freqs' is float64 but 'x' is float32"},
	{"dtype", GPUD_F64, 4, 3, SAME, 1, SAME, 0, 0, GPUD_F32, 0,
	 "lombscargle: x, y, freqs and weights must have one dtype: 'weights' is float32 but 'x' is float64"},
	{"dtype", GPUD_F32, 4, 3, SAME, 1, SAME, 0, 0, GPUD_F64, 0,
	 "lombscargle: x, y, freqs and weights must have one dtype: 'weights' is float64 but 'x' is float32"},
	{"dtype, the grid", GPUD_F32, 4, 3, SAME, 1, SAME, 0, 0, GPUD_F64, 1,
	 "lombscargle: x, y, freqs and weights must have one dtype: 'weights' is float64 but 'x' is float32"},
	{"dtype before lengths", GPUD_F64, 4, 3, 5, 0, SAME, GPUD_F32, 0, 0, 0,
	 "lombscargle: x, y, freqs and weights must have one dtype: 'y' is float32 but 'x' is float64"},
	{"empty", GPUD_F64, 0, 3, SAME, 0, SAME, 0, 0, 0, 0,
	 "lombscargle: x and y must not be empty"},
	{"mismatch before empty", GPUD_F64, 0, 3, 2, 0, SAME, 0, 0, 0, 0,
	 "lombscargle: x and y must have the same length, got 0 and 2"},
	{"empty, weights", GPUD_F32, 0, 3, SAME, 1, SAME, 0, 0, 0, 0,
	 "lombscargle: x and y must not be empty"},
	{"no freqs", GPUD_F64, 3, 0, SAME, 0, SAME, 0, 0, 0, 0,
	 "lombscargle: freqs must not be empty"},
	{"no freqs", GPUD_F32, 3, 0, SAME, 0, SAME, 0, 0, 0, 0,
	 "lombscargle: freqs must not be empty"},
};

START_TEST(test_check_shapes)
{
	const struct check_row *r = &check_rows[_i];
	ls_case c = ls_pcase(r->n, r->nf);

	if (r->ny != SAME)
		c.ny = (size_t)r->ny;
	if (r->w)
		c.w = ls_pool;
	if (r->nw != SAME)
		c.nw = (size_t)r->nw;
	c.dty = r->dty;
	c.dtf = r->dtf;
	c.dtw = r->dtw;
	if (r->grid) {
		c.f = NULL;
		ls_set_grid(&c, 1, 1, 3);
	}
	if (r->want)
		ls_check_refuses(r->dt, &c, r->want);
	else
		ls_check_passes(r->dt, &c);
}
END_TEST

/*
 * An output the client passes of the wrong dtype passes check, which sets
 * only what it expects: the daemon's comparison of the two (outputs_or_fail
 * in daemon/verbs/run.c) refuses it, naming the output.
 */
START_TEST(test_check_given_output_dtype)
{
	const kernel_def *k = ls_kernel();
	static double buf[8];
	ls_bound b;
	char err[512];

	memset(&b, 0, sizeof(b));
	b.a.kernel = k;
	ls_bind_array(k, &b.a, LS_X, GPUD_F64, buf, 4);
	ls_bind_array(k, &b.a, LS_Y, GPUD_F64, buf, 4);
	ls_bind_array(k, &b.a, LS_FREQS, GPUD_F64, buf, 2);
	ls_bind_array(k, &b.a, LS_PGRAM, GPUD_F32, buf, 2);
	ck_assert_msg(kernel_args_finish(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(k->check(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(b.a.v[LS_PGRAM].arr.dtype, GPUD_F32);
	ck_assert_int_eq(b.a.v[LS_PGRAM].expect.dtype, GPUD_F64);
	/* a complex output binds (for amplitude); the same comparison refuses it here */
	memset(&b, 0, sizeof(b));
	b.a.kernel = k;
	ls_bind_array(k, &b.a, LS_X, GPUD_F64, buf, 4);
	ls_bind_array(k, &b.a, LS_Y, GPUD_F64, buf, 4);
	ls_bind_array(k, &b.a, LS_FREQS, GPUD_F64, buf, 2);
	ls_bind_array(k, &b.a, LS_PGRAM, GPUD_C128, buf, 2);
	ck_assert_msg(kernel_args_finish(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(k->check(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(b.a.v[LS_PGRAM].expect.dtype, GPUD_F64);
}
END_TEST

/* freqs or the grid: one of them, all of the grid, nf from 1 to 2^40. */
START_TEST(test_check_frequencies)
{
	static const char *const missing[] = {
		"lombscargle: the grid needs f0, df and nf; 'f0' is missing",
		"lombscargle: the grid needs f0, df and nf; 'df' is missing",
		"lombscargle: the grid needs f0, df and nf; 'nf' is missing",
	};
	ls_case c = ls_pcase(4, 0);

	c.f = NULL;
	ls_check_refuses(GPUD_F64, &c,
			 "lombscargle: missing the frequencies: give freqs (an array) or the grid "
			 "f0, df, nf");
	/* each of the grid's scalars alone, each left out */
	for (int i = 0; i < 3; i++) {
		c.grid = 1 << i;
		c.f = ls_pool;
		c.nf = 3;
		c.f0 = 0.5;
		c.df = 0.25;
		c.ngrid = 3;
		ls_check_refuses(
			GPUD_F64, &c,
			"lombscargle: give the frequencies as freqs or as the grid f0, df, "
			"nf, not both");
		c.grid = GRID & ~(1 << i);
		ls_check_refuses(
			GPUD_F32, &c,
			"lombscargle: give the frequencies as freqs or as the grid f0, df, "
			"nf, not both");
		c.f = NULL;
		ls_check_refuses(GPUD_F64, &c, missing[i]);
		c.grid = 1 << i;
		ls_check_refuses(GPUD_F32, &c, missing[i == 0 ? 1 : 0]);
	}
	/* nf */
	c = ls_pcase(4, 0);
	c.f = NULL;
	ls_set_grid(&c, 0.5, 0.25, 0);
	ls_check_refuses(GPUD_F64, &c, "lombscargle: nf must be between 1 and 2^40, got 0");
	c.ngrid = -1;
	ls_check_refuses(GPUD_F64, &c, "lombscargle: nf must be between 1 and 2^40, got -1");
	c.ngrid = INT64_MIN;
	ls_check_refuses(GPUD_F32, &c,
			 "lombscargle: nf must be between 1 and 2^40, got -9223372036854775808");
	c.ngrid = (INT64_C(1) << 40) + 1;
	ls_check_refuses(GPUD_F64, &c,
			 "lombscargle: nf must be between 1 and 2^40, got 1099511627777");
	c.ngrid = INT64_C(1) << 40; /* check allows it; allocating it is the daemon's matter */
	kernel_array e = ls_check_passes(GPUD_F64, &c);
	ck_assert_uint_eq(e.count, UINT64_C(1) << 40);
	c.ngrid = 1;
	e = ls_check_passes(GPUD_F32, &c);
	ck_assert_uint_eq(e.count, 1);
	/* any f0 and df, even negative (scipy takes any frequencies) */
	ls_set_grid(&c, -3, -0.5, 7);
	e = ls_check_passes(GPUD_F64, &c);
	ck_assert_uint_eq(e.count, 7);
}
END_TEST

/* legacy=true is scipy <= 1.14, which had no weights, floating_mean or amplitude. */
START_TEST(test_check_legacy)
{
	ls_case c = ls_pcase(4, 3);

	c.legacy = 1;
	c.w = ls_pool;
	ls_check_refuses(
		GPUD_F64, &c,
		"lombscargle: legacy=true (scipy <= 1.14) has no weights; leave out legacy "
		"for today's scipy");
	c.w = NULL;
	c.floating_mean = 1;
	ls_check_refuses(
		GPUD_F32, &c,
		"lombscargle: legacy=true (scipy <= 1.14) has no floating_mean=true; leave "
		"out legacy for today's scipy");
	c.floating_mean = 0;
	c.normalize = LS_AMPLITUDE;
	ls_check_refuses(
		GPUD_F64, &c,
		"lombscargle: legacy=true (scipy <= 1.14) has no normalize=amplitude; leave "
		"out legacy for today's scipy");
	/* the rest is legacy's: power, normalize, precenter, the grid */
	c.normalize = LS_NORMALIZED;
	c.precenter = 1;
	ls_check_passes(GPUD_F64, &c);
	c.f = NULL;
	ls_set_grid(&c, 1, 1, 3);
	c.normalize = LS_POWER;
	ls_check_passes(GPUD_F32, &c);
	/* legacy=false takes them all */
	c = ls_pcase(4, 3);
	c.legacy = 0;
	c.w = ls_pool;
	c.floating_mean = 1;
	c.normalize = LS_AMPLITUDE;
	ls_check_passes(GPUD_F64, &c);
}
END_TEST

START_TEST(test_check_output_expect)
{
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	gpud_dtype cdt = _i ? GPUD_C64 : GPUD_C128;
	ls_case c = ls_pcase(6, 9);

	kernel_array e = ls_check_passes(dt, &c);
	ck_assert_int_eq(e.dtype, dt);
	ck_assert_int_eq(e.ndim, 1);
	ck_assert_uint_eq(e.shape[0], 9);
	ck_assert_uint_eq(e.count, 9);
	/* the output's length follows freqs, not x */
	c = ls_pcase(40, 1);
	e = ls_check_passes(dt, &c);
	ck_assert_uint_eq(e.shape[0], 1);
	ck_assert_uint_eq(e.count, 1);
	/* or the grid's nf */
	c.f = NULL;
	ls_set_grid(&c, 0.1, 0.1, 1000);
	e = ls_check_passes(dt, &c);
	ck_assert_int_eq(e.dtype, dt);
	ck_assert_uint_eq(e.shape[0], 1000);
	ck_assert_uint_eq(e.count, 1000);
	/* amplitude: x's complex dtype; the other words and bools: x's */
	for (int as = NZ_WORD; as <= NZ_INT; as++) {
		for (int mode = LS_POWER; mode <= LS_AMPLITUDE; mode++) {
			c.normalize = mode;
			c.normalize_as = as;
			c.w = ls_pool;
			e = ls_check_passes(dt, &c);
			ck_assert_int_eq(e.dtype, mode == LS_AMPLITUDE ? cdt : dt);
			ck_assert_uint_eq(e.count, 1000);
		}
	}
}
END_TEST

START_TEST(test_check_method)
{
	ls_case c = ls_pcase(4, 3);

	c.method = LS_NUFFT;
	ls_check_refuses(
		GPUD_F64, &c,
		"lombscargle: method=nufft needs the uniform grid f0, df, nf; got the array "
		"freqs (use method=direct or auto for arrays)");
	c.f = NULL;
	ls_set_grid(&c, 1, 0.5, 3);
	ls_check_passes(GPUD_F64, &c);
	c.ngrid = (1ll << 29) + 1;
	ls_check_refuses(
		GPUD_F32, &c,
		"lombscargle: method=nufft takes at most 2^29 frequencies, got nf=536870913 "
		"(use method=direct, or split the grid)");
	c.ngrid = 3;
	c.eps = 1e-20;
	ls_check_refuses(GPUD_F64, &c,
			 "lombscargle: eps must be between 1e-14 and 0.1 for float64, got 1e-20");
	c.eps = 1e-7;
	ls_check_refuses(GPUD_F32, &c,
			 "lombscargle: eps must be between 1e-06 and 0.1 for float32, got 1e-07");
	ls_check_passes(GPUD_F64, &c);
	c.eps = 0.5;
	ls_check_refuses(GPUD_F64, &c,
			 "lombscargle: eps must be between 1e-14 and 0.1 for float64, got 0.5");
	/* method takes its words only: no bool stands for one */
	{
		const kernel_def *k = ls_kernel();
		const kernel_param *pm = &k->params[LS_METHOD];
		kernel_value v;
		char err[256], desc[128];
		memset(&v, 0, sizeof(v));
		ck_assert_int_eq(kernel_bind_scalar(k, pm, KGIVEN_BOOL, 1, 0, 0, &v, err,
						    sizeof(err)),
				 -1);
		ck_assert_str_eq(err, "lombscargle: argument 'method' must be one of "
				      "auto|direct|nufft (default auto), got bool true");
		ck_assert_int_eq(kernel_bind_scalar(k, pm, KGIVEN_I64, 0, 1, 0, &v, err,
						    sizeof(err)),
				 -1);
		kernel_param_describe(pm, desc, sizeof(desc));
		ck_assert_str_eq(desc, "auto|direct|nufft (default auto)");
		ck_assert_int_eq(kernel_bind_text(k, pm, "nufft", &v, err, sizeof(err)), 0);
		ck_assert_int_eq(v.s.i64, LS_NUFFT);
	}
	/* auto and direct take arrays */
	c = ls_pcase(4, 3);
	c.method = LS_AUTO;
	ls_check_passes(GPUD_F64, &c);
	c.method = LS_DIRECT;
	ls_check_passes(GPUD_F32, &c);
}
END_TEST

/* A batch must be 2-d with x's length last. */
START_TEST(test_check_batch)
{
	const kernel_def *k = ls_kernel();
	double v[12] = {0};
	for (int i = 0; i < 12; i++)
		v[i] = 0.1 * i;
	kernel_args a;
	char err[512] = "";
	/* (3, 4) against 4 samples passes; (4, 3) against 4 does not */
	ck_assert_msg(ls_bind_batch(&a, GPUD_F64, v, v, v, 4, 3, 10, 0, err, sizeof(err)) == 0,
		      "%s", err);
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	ls_bind_array(k, &a, LS_X, GPUD_F64, v, 4);
	kernel_array y = ls_array1(GPUD_F64, v, 12);
	y.ndim = 2;
	y.shape[0] = 4;
	y.shape[1] = 3;
	ck_assert(kernel_bind_array(k, &k->params[LS_Y], &y, &a.v[LS_Y], err, sizeof(err)) == 0);
	ls_bind_scalar(k, &a, LS_F0, KGIVEN_F64, 0, 0, 0.5);
	ls_bind_scalar(k, &a, LS_DF, KGIVEN_F64, 0, 0, 0.5);
	ls_bind_scalar(k, &a, LS_NF, KGIVEN_I64, 0, 10, 0);
	ck_assert(kernel_args_finish(&a, err, sizeof(err)) == 0);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "a batch y (B, N) must have x's length in its last dimension: x "
				  "has 4 samples, y is (4, 3)"),
		      "%s", err);
	/* 3-d */
	y.ndim = 3;
	y.shape[0] = 1;
	y.shape[1] = 3;
	y.shape[2] = 4;
	ck_assert(kernel_bind_array(k, &k->params[LS_Y], &y, &a.v[LS_Y], err, sizeof(err)) == 0);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "y must be 1-d (N samples) or 2-d (B series of N samples), got "
				  "3-d"),
		      "%s", err);
}
END_TEST

/* --- the verdict on the weights' values ------------------------------------------------ */

/* The verdict cpu_verdict gives on these weights (in dtype dt), with its message in msg. */
static unsigned verdict_of(gpud_dtype dt, const double *w, size_t n, char *msg, size_t len)
{
	const kernel_def *k = ls_kernel();
	ls_case c = ls_pcase(n, 2);
	ls_bound b;
	char err[512];

	c.w = w;
	ck_assert_msg(ls_bind(dt, &c, &b, err, sizeof(err)) == 0, "%s", err);
	unsigned v = ls_test_verdict(&b.a);
	msg[0] = '\0';
	if (v != 0)
		k->verdict_message(&b.a, v, msg, len);
	ls_unbind(&b);
	return v;
}

START_TEST(test_verdict)
{
	static const char bad[] =
		"lombscargle: argument 'weights' must hold only non-negative "
		"values that sum to a positive value; got a negative or NaN weight";
	static const char zero[] = "lombscargle: argument 'weights' must hold only non-negative "
				   "values that sum to a positive value; got weights that sum to 0";
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	const kernel_def *k = ls_kernel();
	char msg[512];

	ls_assert_cpu_verdict();
	ck_assert_ptr_nonnull(k->verdict_message);
	/* no weights, positive ones, some zero, -0, +inf (scipy's check passes it too) */
	ls_case c = ls_pcase(3, 2);
	ls_bound b;
	ck_assert_msg(ls_bind(dt, &c, &b, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_uint_eq(ls_test_verdict(&b.a), 0);
	ls_unbind(&b);
	const double ok1[3] = {1, 2, 3}, ok2[3] = {0, 0, 1e-30}, ok3[3] = {-0.0, 1, 0},
		     ok4[3] = {INFINITY, 1, 1};
	ck_assert_uint_eq(verdict_of(dt, ok1, 3, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(verdict_of(dt, ok2, 3, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(verdict_of(dt, ok3, 3, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(verdict_of(dt, ok4, 3, msg, sizeof(msg)), 0);
	/* negative, anywhere */
	const double neg1[3] = {-1, 2, 3}, neg2[3] = {1, 2, -1e-30}, neg3[3] = {5, -INFINITY, 5};
	ck_assert_uint_eq(verdict_of(dt, neg1, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	ck_assert_str_eq(msg, bad);
	ck_assert_uint_eq(verdict_of(dt, neg2, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	ck_assert_str_eq(msg, bad);
	ck_assert_uint_eq(verdict_of(dt, neg3, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	/* NaN (which scipy's weights >= 0 refuses) */
	const double nan1[3] = {1, NAN, 1}, nan2[3] = {NAN, NAN, NAN};
	ck_assert_uint_eq(verdict_of(dt, nan1, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	ck_assert_str_eq(msg, bad);
	ck_assert_uint_eq(verdict_of(dt, nan2, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	/* all zero, -0 too */
	const double z1[3] = {0, 0, 0}, z2[3] = {-0.0, 0, -0.0};
	ck_assert_uint_eq(verdict_of(dt, z1, 3, msg, sizeof(msg)), LS_ZERO_WEIGHTS);
	ck_assert_str_eq(msg, zero);
	ck_assert_uint_eq(verdict_of(dt, z2, 3, msg, sizeof(msg)), LS_ZERO_WEIGHTS);
	ck_assert_str_eq(msg, zero);
	ck_assert_uint_eq(verdict_of(dt, z1, 1, msg, sizeof(msg)), LS_ZERO_WEIGHTS);
	/* a negative weight with the rest zero: the bad weight is named */
	const double nz[3] = {0, -2, 0};
	ck_assert_uint_eq(verdict_of(dt, nz, 3, msg, sizeof(msg)), LS_BAD_WEIGHT);
	ck_assert_str_eq(msg, bad);
	/* the CUDA kernel may report both bits: the bad weight is named */
	ck_assert_msg(ls_bind(dt, &c, &b, msg, sizeof(msg)) == 0, "%s", msg);
	k->verdict_message(&b.a, LS_BAD_WEIGHT | LS_ZERO_WEIGHTS, msg, sizeof(msg));
	ck_assert_str_eq(msg, bad);
	k->verdict_message(&b.a, LS_ZERO_WEIGHTS, msg, sizeof(msg));
	ck_assert_str_eq(msg, zero);
	/* a short buffer: a terminated prefix */
	k->verdict_message(&b.a, LS_ZERO_WEIGHTS, msg, 12);
	ck_assert_str_eq(msg, "lombscargle");
	ls_unbind(&b);
}
END_TEST

void lombscargle_check_tcases(Suite *s)
{
	TCase *tc = tcase_create("check");

	tcase_add_loop_test(tc, test_check_shapes, 0,
			    (int)(sizeof(check_rows) / sizeof(check_rows[0])));
	tcase_add_test(tc, test_check_given_output_dtype);
	tcase_add_test(tc, test_check_frequencies);
	tcase_add_test(tc, test_check_legacy);
	tcase_add_test(tc, test_check_method);
	tcase_add_test(tc, test_check_batch);
	tcase_add_loop_test(tc, test_check_output_expect, 0, 2);
	suite_add_tcase(s, tc);
}

void lombscargle_verdict_tcases(Suite *s)
{
	TCase *tc = tcase_create("verdict");

	tcase_add_loop_test(tc, test_verdict, 0, 2);
	suite_add_tcase(s, tc);
}
