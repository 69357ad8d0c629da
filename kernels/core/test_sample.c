/*
 * kernels/core/test_sample.c — unit tests of kernels/core/sample.c and
 * selftest.c: every built-in kernel's every sample through parse, bind,
 * check and the CPU reference on the host, by the self-test's loop with a
 * run of the host's own (a broken sample fails here, without a GPU); the
 * sample syntax, its refusals with their messages, the dtypes the samples run
 * for, and the comparison the self-test makes.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/core/sample.h"
#include "kernels/core/selftest.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/histogram/histogram.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/matmul/matmul.h"
#include "kernels/random/random.h"
#include "tests/unit/suites.h"

#define assert_has(err, want)                                                                      \
	ck_assert_msg(strstr((err), (want)) != NULL, "message '%s' lacks '%s'", (err), (want))

static const kernel_def *find(const char *name)
{
	const kernel_def *k = kernel_find(name);
	ck_assert_ptr_nonnull(k);
	return k;
}

/* Builds text of kernel name for dt, expecting 0. */
static void build_ok(const char *name, const char *text, gpud_dtype dt, kernel_sample *s)
{
	char err[512] = "";
	int rv = kernel_sample_build(find(name), text, dt, s, err, sizeof(err));
	ck_assert_msg(rv == 0, "%s \"%s\" %s: %d: %s", name, text, gpud_dtype_name(dt), rv, err);
}

/* Builds text of kernel name for dt, expecting rv, and returns the message. */
static const char *build_fails(const char *name, const char *text, gpud_dtype dt, int rv)
{
	static char err[512];
	kernel_sample s;
	err[0] = '\0';
	int got = kernel_sample_build(find(name), text, dt, &s, err, sizeof(err));
	kernel_sample_free(&s);
	ck_assert_msg(got == rv, "%s \"%s\": %d, expected %d (%s)", name, text, got, rv, err);
	return err;
}

static double at(const kernel_array *a, size_t i)
{
	switch (a->dtype) {
	case GPUD_F32:
		return ((const float *)a->data)[i];
	case GPUD_F64:
		return ((const double *)a->data)[i];
	case GPUD_I32:
		return ((const int32_t *)a->data)[i];
	default:
		return (double)((const int64_t *)a->data)[i];
	}
}

/* --- every sample of every kernel ------------------------------------------------------ */

/*
 * The host's run of a built sample, in the shape of the CUDA self-test's
 * (kernels/core/cuda_selftest.c): the cpu entry again, into outputs poisoned
 * first; every output written, finite, and equal to the reference. arg
 * counts the runs.
 */
static int host_run(const kernel_sample *s, int have_ref, const char *where, void *arg, char *err,
		    size_t errlen)
{
	const kernel_def *k = s->a.kernel;
	const cpu_kernel *ck = cpu_kernel_of(k);
	kernel_args a = s->a;
	void *got[KERNEL_MAX_PARAMS] = {0};
	char msg[512];
	int rv = 0;

	++*(int *)arg;
	if (!have_ref) /* the bound arguments are all there is to see */
		return 0;
	for (int p = 0; p < k->nparams; p++) {
		if (k->params[p].role != KPARAM_OUT)
			continue;
		size_t bytes = kernel_sample_bytes(s, p);
		ck_assert_ptr_nonnull(got[p] = malloc(bytes ? bytes : 1));
		kernel_sample_poison(a.v[p].arr.dtype, got[p], a.v[p].arr.count);
		a.v[p].arr.data = got[p];
	}
	ck->run(&a, 0, ck->items(&a));
	for (int p = 0; p < k->nparams && rv == 0; p++) {
		if (got[p] == NULL)
			continue;
		if (kernel_sample_compare(s, p, got[p], 0, msg, sizeof(msg)) != 0 ||
		    kernel_sample_compare(s, p, got[p], 1, msg, sizeof(msg)) != 0) {
			snprintf(err, errlen, "%s: the reference: %s", where, msg);
			rv = -1;
		}
	}
	for (int p = 0; p < KERNEL_MAX_PARAMS; p++)
		free(got[p]);
	return rv;
}

START_TEST(test_every_sample)
{
	size_t nk;
	const kernel_def *const *ks = kernel_list(&nk);
	int runs = 0;
	char err[1024];

	for (size_t i = 0; i < nk; i++)
		ck_assert_msg(kernel_selftest_samples(ks[i], 1, host_run, &runs, err,
						      sizeof(err)) == 0,
			      "%s", err);
	ck_assert_int_ge(runs, 100);
}
END_TEST

/* --- the dtypes a sample runs for ------------------------------------------------------- */

static const kernel_param noparams[] = {
	{.name = "n", .role = KPARAM_SCALAR, .stype = KSCALAR_I64, .doc = "a count"},
	{.name = "out", .role = KPARAM_OUT, .dtypes = KDT(GPUD_I64), .ndim = 1, .doc = "out"},
};
static const kernel_def nodtype = {
	.name = "nodtype",
	.id = KERNEL_ID_CUSTOM,
	.params = noparams,
	.nparams = 2,
};

START_TEST(test_dtypes)
{
	gpud_dtype d[4];

	ck_assert_int_eq(kernel_sample_dtypes(find("lombscargle"), d), 2);
	ck_assert_int_eq(d[0], GPUD_F32);
	ck_assert_int_eq(d[1], GPUD_F64);
	ck_assert_int_eq(kernel_sample_dtypes(find("add"), d), 4);
	ck_assert_int_eq(d[2], GPUD_I32);
	ck_assert_int_eq(d[3], GPUD_I64);
	ck_assert_int_eq(kernel_sample_dtypes(find("histogram"), d), 4);
	/* no input array: the dtype-name scalar's */
	ck_assert_int_eq(kernel_sample_dtypes(find("normal"), d), 2);
	ck_assert_int_eq(d[1], GPUD_F64);
	ck_assert_int_eq(kernel_sample_dtypes(&nodtype, d), 1);
	ck_assert_int_eq(d[0], GPUD_DTYPE_INVALID);
}
END_TEST

/* --- the syntax ---------------------------------------------------------------------------- */

START_TEST(test_lists_and_scalars)
{
	kernel_sample s;

	build_ok("lombscargle", "x=0.1,0.7,1.9 y=1,-0.5,2  freqs=0.5\tprecenter=true", GPUD_F32,
		 &s);
	const kernel_array *x = &s.a.v[LS_X].arr, *f = &s.a.v[LS_FREQS].arr;
	ck_assert_int_eq(x->dtype, GPUD_F32);
	ck_assert_int_eq(x->ndim, 1);
	ck_assert_uint_eq(x->shape[0], 3);
	ck_assert_uint_eq(x->count, 3);
	ck_assert(at(x, 1) == (double)0.7f);
	ck_assert(at(&s.a.v[LS_Y].arr, 1) == -0.5);
	ck_assert_uint_eq(f->count, 1); /* one value: one element */
	ck_assert_int_eq(s.a.v[LS_PRECENTER].s.b, 1);
	ck_assert_int_eq(s.a.v[LS_NORMALIZE].s.i64, LS_POWER); /* the default */
	ck_assert_int_eq(s.a.v[LS_WEIGHTS].present, 0);        /* optional, left out */
	ck_assert_int_eq(s.a.v[LS_NF].present, 0);
	/* the output, as check says, in host memory */
	ck_assert_int_eq(s.a.v[LS_PGRAM].present, 1);
	ck_assert_int_eq(s.a.v[LS_PGRAM].arr.dtype, GPUD_F32);
	ck_assert_uint_eq(s.a.v[LS_PGRAM].arr.count, 1);
	ck_assert_ptr_eq(s.a.v[LS_PGRAM].arr.data, s.host[LS_PGRAM]);
	ck_assert_uint_eq(kernel_sample_bytes(&s, LS_PGRAM), 4);
	ck_assert_uint_eq(kernel_sample_bytes(&s, LS_PRECENTER), 0);
	kernel_sample_free(&s);

	/* a word as text, the grid's scalars, optional weights; a complex output */
	static const gpud_dtype cdt[3] = {[GPUD_F32] = GPUD_C64, [GPUD_F64] = GPUD_C128};
	for (gpud_dtype dt = GPUD_F32; dt <= GPUD_F64; dt++) {
		build_ok("lombscargle",
			 "x=0.1,0.7,1.9 y=1,-0.5,2 weights=1,2,3 f0=0.5 df=0.25 nf=3 "
			 "normalize=amplitude floating_mean=true",
			 dt, &s);
		ck_assert_int_eq(s.a.v[LS_NORMALIZE].s.i64, LS_AMPLITUDE);
		ck_assert_int_eq(s.a.v[LS_FLOATING_MEAN].s.b, 1);
		ck_assert_int_eq(s.a.v[LS_FREQS].present, 0);
		ck_assert_int_eq(s.a.v[LS_F0].present, 1);
		ck_assert_double_eq(s.a.v[LS_F0].s.f64, 0.5);
		ck_assert_double_eq(s.a.v[LS_DF].s.f64, 0.25);
		ck_assert_int_eq(s.a.v[LS_NF].s.i64, 3);
		ck_assert_int_eq(s.a.v[LS_WEIGHTS].arr.dtype, dt);
		ck_assert(at(&s.a.v[LS_WEIGHTS].arr, 2) == 3);
		ck_assert_int_eq(s.a.v[LS_PGRAM].arr.dtype, cdt[dt]);
		ck_assert_uint_eq(s.a.v[LS_PGRAM].arr.count, 3);
		ck_assert_uint_eq(kernel_sample_bytes(&s, LS_PGRAM), 3 * 2 * gpud_dtype_size(dt));
		kernel_sample_free(&s);
	}
	/* a bool and an integer for the word */
	build_ok("lombscargle", "x=1,2 y=1,2 freqs=1 normalize=true", GPUD_F64, &s);
	ck_assert_int_eq(s.a.v[LS_NORMALIZE].s.i64, LS_NORMALIZED);
	ck_assert_int_eq(s.a.v[LS_PGRAM].arr.dtype, GPUD_F64);
	kernel_sample_free(&s);
	build_ok("lombscargle", "x=1,2 y=1,2 freqs=1 normalize=0 legacy=true", GPUD_F32, &s);
	ck_assert_int_eq(s.a.v[LS_NORMALIZE].s.i64, LS_POWER);
	ck_assert_int_eq(s.a.v[LS_LEGACY].s.b, 1);
	kernel_sample_free(&s);

	/* DIMS: a 2-d array; integers exact in int64 */
	build_ok("matmul", "a=2x3:1,2,3,4,5,6 b=3x1:-1,0,1", GPUD_F64, &s);
	ck_assert_int_eq(s.a.v[MM_A].arr.ndim, 2);
	ck_assert_uint_eq(s.a.v[MM_A].arr.shape[0], 2);
	ck_assert_uint_eq(s.a.v[MM_A].arr.shape[1], 3);
	ck_assert(at(&s.a.v[MM_A].arr, 5) == 6);
	ck_assert_uint_eq(s.a.v[MM_C].arr.shape[0], 2);
	ck_assert_uint_eq(s.a.v[MM_C].arr.shape[1], 1);
	kernel_sample_free(&s);
	build_ok("histogram", "x=9007199254740993,-2147483649 bins=3 range_min=0 range_max=1",
		 GPUD_I64, &s);
	ck_assert(((int64_t *)s.a.v[HIST_X].arr.data)[0] == INT64_C(9007199254740993));
	ck_assert(((int64_t *)s.a.v[HIST_X].arr.data)[1] == INT64_C(-2147483649));
	ck_assert_int_eq(s.a.v[HIST_BINS].s.i64, 3);
	ck_assert_double_eq(s.a.v[HIST_MAX].s.f64, 1.0); /* an integer, for a float64 */
	kernel_sample_free(&s);

	/* a broadcast input given one number is that scalar; with a comma, an array */
	build_ok("axpy", "x=1.25 y=1,2 a=-2", GPUD_F32, &s);
	ck_assert_int_eq(s.a.v[EW_X].scalar, 1);
	ck_assert_double_eq(s.a.v[EW_X].s.f64, 1.25);
	ck_assert_ptr_null(s.host[EW_X]);
	ck_assert_int_eq(s.a.v[EW_Y].scalar, 0);
	ck_assert_uint_eq(s.a.v[EW_Z].arr.count, 2);
	ck_assert_double_eq(s.a.v[EW_A].s.f64, -2);
	kernel_sample_free(&s);
	build_ok("add", "x=1:4 y=2", GPUD_I32, &s); /* DIMS makes a one-element array */
	ck_assert_int_eq(s.a.v[EW_X].scalar, 0);
	ck_assert_uint_eq(s.a.v[EW_X].arr.count, 1);
	ck_assert_int_eq(s.a.v[EW_Y].scalar, 1);
	kernel_sample_free(&s);

	/* the dtype-name scalar is each run's dtype */
	build_ok("uniform", "n=5 seed=1", GPUD_F32, &s);
	ck_assert_int_eq(s.a.v[RND_DTYPE].s.dtype, GPUD_F32);
	ck_assert_int_eq(s.a.v[RND_OUT].arr.dtype, GPUD_F32);
	ck_assert_uint_eq(s.a.v[RND_OUT].arr.count, 5);
	kernel_sample_free(&s);
}
END_TEST

START_TEST(test_rand)
{
	kernel_sample s, t;

	build_ok("matmul", "a=rand:64x48 b=rand:48x40", GPUD_F64, &s);
	build_ok("matmul", "b=rand:48x40 a=rand:64x48", GPUD_F64, &t);
	const kernel_array *a = &s.a.v[MM_A].arr, *b = &s.a.v[MM_B].arr;
	ck_assert_uint_eq(a->count, 64 * 48);
	ck_assert_uint_eq(b->shape[1], 40);
	/* the word alone decides the values: the same in another sample, another for b */
	ck_assert(memcmp(a->data, t.a.v[MM_A].arr.data, a->count * 8) == 0);
	ck_assert(memcmp(b->data, t.a.v[MM_B].arr.data, b->count * 8) == 0);
	ck_assert(memcmp(a->data, b->data, b->count * 8) != 0);
	double lo = 1, hi = -1;
	for (size_t i = 0; i < a->count; i++) {
		lo = fmin(lo, at(a, i));
		hi = fmax(hi, at(a, i));
	}
	ck_assert(lo >= -1 && lo < -0.9 && hi < 1 && hi > 0.9);
	kernel_sample_free(&s);
	kernel_sample_free(&t);

	/* a range; integers are whole numbers in [LO, HI], both ends reached */
	build_ok("sum", "x=rand:2000:2.5:6", GPUD_F32, &s);
	for (size_t i = 0; i < 2000; i++)
		ck_assert(at(&s.a.v[0].arr, i) >= 2.5 && at(&s.a.v[0].arr, i) <= 6);
	kernel_sample_free(&s);
	build_ok("sum", "x=rand:2000:-2.5:3", GPUD_I32, &s);
	int seen[6] = {0};
	for (size_t i = 0; i < 2000; i++) {
		double v = at(&s.a.v[0].arr, i);
		ck_assert_msg(v >= -2 && v <= 3, "%g", v);
		seen[(int)v + 2]++;
	}
	for (int i = 0; i < 6; i++)
		ck_assert_int_gt(seen[i], 0);
	kernel_sample_free(&s);
	build_ok("sum", "x=rand:2x3x4", GPUD_I64, &s);
	ck_assert_int_eq(s.a.v[0].arr.ndim, 3);
	ck_assert_uint_eq(s.a.v[0].arr.count, 24);
	kernel_sample_free(&s);
}
END_TEST

/* --- refusals -------------------------------------------------------------------------------- */

/* Broken samples (-1), refused ones (1), and what they say ("" where it does not matter). */
static const struct {
	const char *kernel, *text;
	gpud_dtype dt;
	int rv;
	const char *says;
} refusals[] = {
	{"add", "x=1,2 y=1,2 w=3", GPUD_F32, -1,
	 "add: sample argument 'w=3': no parameter 'w' (parameters: x, y, z)"},
	{"add", "x=1,2 x=1,2", GPUD_F32, -1, "'x' is given twice"},
	{"add", "x=1,2 y=1,2 z=1,2", GPUD_F32, -1, "'z' is an output"},
	{"add", "x=1,2 y", GPUD_F32, -1, "'y' is not name=value"},
	{"add", "x=1,2 y=", GPUD_F32, -1, "is not name=value"},
	{"add", "=1 y=1", GPUD_F32, -1, "is not name=value"},
	{"add", "x=1,2,,3 y=1", GPUD_F32, -1, "expected 4 numbers separated by commas at ',3'"},
	{"add", "x=1,2.5 y=1", GPUD_I64, -1,
	 "expected 2 whole numbers separated by commas at '2.5'"},
	{"add", "x=1,2147483648 y=1", GPUD_I32, -1, "at '2147483648'"},
	{"add", "x=1,2x y=1", GPUD_F64, -1, "at '2x'"},
	{"add", "x=2x2:1,2,3 y=1", GPUD_F64, -1, "expected 4 numbers"},
	{"add", "x=2x2:1,2,3,4,5 y=1", GPUD_F64, -1, "expected 4 numbers"},
	{"add", "x=2y2:1,2,3,4 y=1", GPUD_F64, -1, "expected DIMS"},
	{"add", "x=rand: y=1", GPUD_F64, -1, "expected DIMS"},
	{"add", "x=rand:9x y=1", GPUD_F64, -1, "expected DIMS"},
	{"add", "x=rand:5000x5000 y=1", GPUD_F64, -1, "at most 16777216 elements"},
	{"add", "x=rand:5:1 y=1", GPUD_F64, -1, "expected rand:DIMS or rand:DIMS:LO:HI"},
	{"add", "x=rand:5:2:1 y=1", GPUD_F64, -1, "rand needs finite LO <= HI"},
	{"add", "x=rand:5:0.2:0.8 y=1", GPUD_I32, -1, "no int32 whole numbers in [0.2, 0.8]"},
	{"uniform", "n=5 seed=1 dtype=float32", GPUD_F32, -1,
	 "'dtype' is set to each dtype the samples run for"},
	/* the binding's own messages */
	{"lombscargle", "x=1,2 y=1,2 freqs=2x1:1,2", GPUD_F32, -1,
	 "lombscargle: argument 'freqs' must be 1-d, got 2-d with shape (2, 1)"},
	{"lombscargle", "x=1,2 y=1,2 freqs=1 precenter=maybe", GPUD_F64, -1,
	 "argument 'precenter' must be a bool, got the text 'maybe'"},
	{"lombscargle", "x=1,2 freqs=1", GPUD_F64, -1, "lombscargle: missing argument 'y'"},
	{"lombscargle", "x=1,2 y=1,2 freqs=1 normalize=sometimes", GPUD_F64, -1,
	 "lombscargle: argument 'normalize' must be one of power|normalize|amplitude or bool "
	 "(default power), got 'sometimes'"},
	{"lombscargle", "x=1,2 y=1,2 freqs=1 normalize=2", GPUD_F32, -1,
	 "argument 'normalize' must be one of power|normalize|amplitude or bool (default power), "
	 "got 2"},
	{"lombscargle", "x=1,2 y=1,2 f0=1 df=1 nf=many", GPUD_F64, -1,
	 "argument 'nf' must be an int64, got the text 'many'"},
	{"lombscargle", "x=1,2 y=1,2 f0=1 df=1 nf=2 weights=2x1:1,2", GPUD_F64, -1,
	 "argument 'weights' must be 1-d"},
	{"histogram", "x=1 range_min=0 range_max=1 bins=1,2", GPUD_F64, -1,
	 "argument 'bins' must be an int64, got the text '1,2'"},
	/* the check's: that dtype is skipped for that sample */
	{"matmul", "a=rand:4x3 b=rand:3x2 tf32=true", GPUD_F64, 1,
	 "matmul: tf32 applies to float32 only"},
	{"add", "x=1,2 y=1,2,3", GPUD_F64, 1, "lengths must match"},
	{"add", "x=1,2 y=0.5", GPUD_I32, 1, "must be an integer"},
	{"histogram", "x=1 bins=0 range_min=0 range_max=1", GPUD_F32, 1, "`bins` must be positive"},
	{"lombscargle", "x=1,2 y=1,2 freqs=1 f0=1", GPUD_F64, 1, "not both"},
	{"lombscargle", "x=1,2 y=1,2 f0=1 df=1", GPUD_F32, 1, "'nf' is missing"},
	{"lombscargle", "x=1,2 y=1,2 f0=1 df=1 nf=0", GPUD_F64, 1,
	 "nf must be between 1 and 2^40, got 0"},
	{"lombscargle", "x=1,2 y=1,2 freqs=1 weights=1", GPUD_F64, 1,
	 "weights must have the length of x, got 1 for 2 samples"},
	{"lombscargle", "x=1,2 y=1,2 freqs=1 weights=1,2 legacy=true", GPUD_F32, 1,
	 "legacy=true (scipy <= 1.14) has no weights"},
	/* and one that is neither */
	{"add", " x=1,2\ty=1,2 ", GPUD_F32, 0, ""},
};

START_TEST(test_refusals)
{
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		assert_has(build_fails(refusals[i].kernel, refusals[i].text, refusals[i].dt,
				       refusals[i].rv),
			   refusals[i].says);
}
END_TEST

/* --- comparing ------------------------------------------------------------------------------- */

START_TEST(test_compare)
{
	kernel_sample s;
	char err[256];
	float got[3];

	build_ok("add", "x=1,2,3 y=10,20,30", GPUD_F32, &s);
	float *ref = s.host[EW_Z];
	ref[0] = 11, ref[1] = 22, ref[2] = 33;
	memcpy(got, ref, sizeof(got));
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 1, err, sizeof(err)), 0);
	got[1] = 22.3f; /* within 1e-2 of max(1, 33) */
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 1, err, sizeof(err)), 0);
	got[1] = 22.4f;
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 1, err, sizeof(err)), -1);
	assert_has(err, "output 'z'[1] = 22.3999996, expected 22 (tolerance 0.33)");
	got[1] = NAN;
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 1, err, sizeof(err)), -1);
	assert_has(err, "output 'z'[1] = nan, expected 22");
	ref[1] = NAN; /* not finite in the reference: anything written */
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 1, err, sizeof(err)), 0);
	kernel_sample_poison(GPUD_F32, got + 2, 1);
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "output 'z'[2] was never written");
	/* without a reference: written and finite */
	got[1] = 1e30f;
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "output 'z'[2] was never written");
	got[2] = -4;
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 0, err, sizeof(err)), 0);
	got[0] = INFINITY;
	ck_assert_int_eq(kernel_sample_compare(&s, EW_Z, got, 0, err, sizeof(err)), -1);
	assert_has(err, "output 'z'[0] = inf, not finite");
	kernel_sample_free(&s);

	/* integers: exact */
	build_ok("histogram", "x=1,2 bins=2 range_min=0 range_max=4", GPUD_I32, &s);
	int64_t *rc = s.host[HIST_COUNTS], gc[2] = {1, 1};
	rc[0] = 1, rc[1] = 1;
	ck_assert_int_eq(kernel_sample_compare(&s, HIST_COUNTS, gc, 1, err, sizeof(err)), 0);
	gc[1] = 2;
	ck_assert_int_eq(kernel_sample_compare(&s, HIST_COUNTS, gc, 1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "output 'counts'[1] = 2, expected 1");
	kernel_sample_poison(GPUD_I64, gc, 2);
	ck_assert_int_eq(kernel_sample_compare(&s, HIST_COUNTS, gc, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "output 'counts'[0] was never written");
	kernel_sample_free(&s);

	/* complex: each component compared, real and imaginary in turn */
	build_ok("lombscargle", "x=0,1,2 y=1,2,0 f0=1 df=1 nf=2 normalize=amplitude", GPUD_F64, &s);
	double *rz = s.host[LS_PGRAM], gz[4];
	rz[0] = 1, rz[1] = -2, rz[2] = 0.5, rz[3] = 4; /* 1 - 2i, 0.5 + 4i: the scale is 4 */
	memcpy(gz, rz, sizeof(gz));
	ck_assert_int_eq(kernel_sample_compare(&s, LS_PGRAM, gz, 1, err, sizeof(err)), 0);
	gz[3] = 4 + 3e-8; /* the imaginary part of element 1, within 1e-8 * 4 */
	ck_assert_int_eq(kernel_sample_compare(&s, LS_PGRAM, gz, 1, err, sizeof(err)), 0);
	gz[3] = 4 + 5e-8;
	ck_assert_int_eq(kernel_sample_compare(&s, LS_PGRAM, gz, 1, err, sizeof(err)), -1);
	assert_has(err, "output 'pgram'");
	assert_has(err, "expected 4 (tolerance 4e-08)");
	gz[3] = 4;
	gz[1] = 2; /* element 0's imaginary part, the sign wrong */
	ck_assert_int_eq(kernel_sample_compare(&s, LS_PGRAM, gz, 1, err, sizeof(err)), -1);
	assert_has(err, "= 2, expected -2");
	gz[1] = -2;
	kernel_sample_poison(GPUD_F64, gz + 2, 1); /* only element 1's real part */
	ck_assert_int_eq(kernel_sample_compare(&s, LS_PGRAM, gz, 0, err, sizeof(err)), -1);
	assert_has(err, "was never written");
	ck_assert(kernel_sample_is_poison(GPUD_C128, gz, 1));
	ck_assert(!kernel_sample_is_poison(GPUD_C128, gz, 0));
	kernel_sample_poison(GPUD_C128, gz, 2);
	for (int i = 0; i < 4; i++)
		ck_assert(kernel_sample_is_poison(GPUD_F64, gz, (size_t)i));
	kernel_sample_free(&s);
	build_ok("lombscargle", "x=0,1,2 y=1,2,0 f0=1 df=1 nf=2 normalize=amplitude", GPUD_F32, &s);
	float *rc64 = s.host[LS_PGRAM], gc64[4];
	rc64[0] = 1, rc64[1] = -2, rc64[2] = 0.5f, rc64[3] = 4;
	memcpy(gc64, rc64, sizeof(gc64));
	gc64[2] = 0.53f; /* within 1e-2 * 4 */
	ck_assert_int_eq(kernel_sample_compare(&s, LS_PGRAM, gc64, 1, err, sizeof(err)), 0);
	gc64[1] = -2.05f;
	ck_assert_int_eq(kernel_sample_compare(&s, LS_PGRAM, gc64, 1, err, sizeof(err)), -1);
	assert_has(err, "expected -2");
	gc64[1] = INFINITY; /* without the reference: written and finite */
	ck_assert_int_eq(kernel_sample_compare(&s, LS_PGRAM, gc64, 0, err, sizeof(err)), -1);
	assert_has(err, "not finite");
	kernel_sample_free(&s);

	/* float64: 1e-8 */
	build_ok("mean", "x=1,2", GPUD_F64, &s);
	double *rm = s.host[1], gm = 1.5 + 1e-9;
	*rm = 1.5;
	ck_assert_int_eq(kernel_sample_compare(&s, 1, &gm, 1, err, sizeof(err)), 0);
	gm = 1.5 + 2e-8;
	ck_assert_int_eq(kernel_sample_compare(&s, 1, &gm, 1, err, sizeof(err)), -1);
	assert_has(err, "output 'out'[0]");
	kernel_sample_free(&s);
}
END_TEST

Suite *sample_suite(void)
{
	Suite *s = suite_create("sample");
	TCase *tc;

	tc = tcase_create("kernels");
	tcase_add_test(tc, test_every_sample);
	tcase_add_test(tc, test_dtypes);
	suite_add_tcase(s, tc);

	tc = tcase_create("syntax");
	tcase_add_test(tc, test_lists_and_scalars);
	tcase_add_test(tc, test_rand);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);

	tc = tcase_create("compare");
	tcase_add_test(tc, test_compare);
	suite_add_tcase(s, tc);
	return s;
}
