/*
 * kernels/core/test_alias.c — unit tests of kernels/core/alias.c: which
 * overlaps of a run's arrays are refused (the same buffer, parts of one
 * allocation, two outputs) and which pass (in place where declared, inputs
 * sharing bytes, arrays that only touch, scalars, empty arrays), with the
 * messages naming both arguments; and every built-in kernel's in-place
 * declarations.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/kernel.h"
#include "kernels/elementwise/elementwise.h"
#include "tests/unit/suites.h"

enum { P_A, P_B, P_O, P_P, P_S };

static const kernel_param params[] = {
	[P_A] = {.name = "a", .role = KPARAM_IN, .dtypes = KDT_FLOAT, .ndim = -1},
	[P_B] = {.name = "b",
		 .role = KPARAM_IN,
		 .dtypes = KDT_FLOAT,
		 .ndim = -1,
		 .stype = KSCALAR_F64,
		 .broadcast = 1},
	[P_O] = {.name = "o",
		 .role = KPARAM_OUT,
		 .dtypes = KDT_FLOAT,
		 .ndim = -1,
		 .inplace_of = KPARAM_BIT(P_A)},
	[P_P] = {.name = "p", .role = KPARAM_OUT, .dtypes = KDT_FLOAT, .ndim = -1},
	[P_S] = {.name = "s", .role = KPARAM_SCALAR, .stype = KSCALAR_F64},
};

static const kernel_def tk = {
	.name = "aliask",
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
};

static double mem[64]; /* the arrays below are parts of this */
static kernel_args args;
static uint64_t handles[KERNEL_MAX_PARAMS];
static char err[512];

/* Param i bound to n elements of dt from byte offset at of mem, as buffer h. */
static void bind(int i, size_t at, size_t n, gpud_dtype dt, uint64_t h)
{
	kernel_value *v = &args.v[i];
	memset(v, 0, sizeof(*v));
	v->present = 1;
	v->arr.dtype = dt;
	v->arr.ndim = 1;
	v->arr.shape[0] = n;
	v->arr.count = n;
	v->arr.data = (char *)mem + at;
	handles[i] = h;
}

/* Separate arrays for every array param: nothing overlaps. */
static void fresh(void)
{
	memset(&args, 0, sizeof(args));
	memset(handles, 0, sizeof(handles));
	args.kernel = &tk;
	bind(P_A, 0, 8, GPUD_F64, 1);
	bind(P_B, 64, 8, GPUD_F64, 2);
	bind(P_O, 128, 8, GPUD_F64, 3);
	bind(P_P, 192, 8, GPUD_F64, 4);
	args.v[P_S].present = 1;
	err[0] = '\0';
}

static void assert_refused(const char *words)
{
	ck_assert_int_eq(kernel_alias_check(&args, handles, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, words) != NULL, "'%s' does not say '%s'", err, words);
}

static void assert_passes(void)
{
	ck_assert_msg(kernel_alias_check(&args, handles, err, sizeof(err)) == 0, "refused: %s",
		      err);
}

START_TEST(test_apart_passes)
{
	fresh();
	assert_passes();
	/* arrays that only touch (a [0, 64), p [64, 128), o [128, 192)) share no byte */
	bind(P_B, 256, 8, GPUD_F64, 2);
	bind(P_P, 64, 8, GPUD_F64, 4);
	assert_passes();
}
END_TEST

START_TEST(test_same_buffer_refused)
{
	fresh();
	bind(P_P, 0, 8, GPUD_F64, 1); /* p is a's buffer: p declares no in place */
	assert_refused("aliask: output 'p' overlaps input 'a' (handle 0000000000000001): the "
		       "same buffer; aliask does not write 'p' in place; give it a buffer of its "
		       "own");
	/* without handles: the bytes are named */
	ck_assert_int_eq(kernel_alias_check(&args, NULL, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "aliask: output 'p' overlaps input 'a': the same 64 bytes; aliask "
			      "does not write 'p' in place; give it a buffer of its own");
}
END_TEST

START_TEST(test_in_place_declared_passes)
{
	fresh();
	bind(P_O, 0, 8, GPUD_F64, 1); /* o in place of a: declared */
	assert_passes();
	/* ... but not of b */
	fresh();
	bind(P_O, 64, 8, GPUD_F64, 2);
	assert_refused("aliask: output 'o' overlaps input 'b' (handle 0000000000000002): the "
		       "same buffer; 'o' may be written in place of a only");
}
END_TEST

START_TEST(test_partial_overlap_refused)
{
	fresh();
	/* o over the second half of a and beyond: in place is for the very same array */
	bind(P_O, 32, 8, GPUD_F64, 9);
	assert_refused("aliask: output 'o' overlaps input 'a' (handle 0000000000000001): 32 of "
		       "its 64 bytes; an output may share bytes with an input only as the very "
		       "same array (in place), never in part");
	/* the same start, fewer elements */
	fresh();
	bind(P_O, 0, 4, GPUD_F64, 9);
	assert_refused("32 of its 32 bytes; an output may share bytes");
	/* the same bytes as another dtype: not the same array */
	fresh();
	bind(P_O, 0, 16, GPUD_F32, 9);
	assert_refused("output 'o' overlaps input 'a' (handle 0000000000000001): the same 64 "
		       "bytes; an output may share bytes with an input only as the very same "
		       "array");
	/* one byte in common is enough */
	fresh();
	bind(P_P, 63, 1, GPUD_I32, 9);
	assert_refused("output 'p' overlaps input 'a' (handle 0000000000000001): 1 of its 4 bytes");
}
END_TEST

START_TEST(test_outputs_refused)
{
	fresh();
	bind(P_P, 128, 8, GPUD_F64, 3); /* p is o's buffer */
	assert_refused("aliask: output 'o' overlaps output 'p' (handle 0000000000000003): the same "
		       "buffer; each output needs bytes of its own");
	/* o in place of a and p too: o and p still overlap */
	fresh();
	bind(P_O, 0, 8, GPUD_F64, 1);
	bind(P_P, 0, 8, GPUD_F64, 1);
	assert_refused("output 'o' overlaps output 'p'");
}
END_TEST

START_TEST(test_inputs_scalars_empty_pass)
{
	fresh();
	bind(P_B, 0, 8, GPUD_F64, 1); /* inputs may share bytes: both only read */
	assert_passes();
	/* b given a scalar: no array */
	fresh();
	bind(P_B, 128, 8, GPUD_F64, 3);
	args.v[P_B].scalar = 1;
	assert_passes();
	/* an empty array overlaps nothing */
	fresh();
	bind(P_P, 0, 0, GPUD_F64, 1);
	assert_passes();
	/* an output gpud allocates later (not bound yet) */
	fresh();
	memset(&args.v[P_P], 0, sizeof(args.v[P_P]));
	assert_passes();
}
END_TEST

START_TEST(test_custom_hint)
{
	kernel_def ck = tk;
	ck.custom = &ck; /* any non-NULL: a user's kernel */
	fresh();
	args.kernel = &ck;
	bind(P_P, 64, 8, GPUD_F64, 2);
	assert_refused("aliask: output 'p' overlaps input 'b' (handle 0000000000000002): the same "
		       "buffer; aliask does not declare 'p' in place of 'b' (inplace(b) after the "
		       "output's declaration)");
}
END_TEST

START_TEST(test_inplace_names)
{
	char buf[64];
	kernel_inplace_names(&tk, &params[P_O], buf, sizeof(buf));
	ck_assert_str_eq(buf, "a");
	kernel_inplace_names(&tk, &params[P_P], buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	kernel_inplace_names(&tk, &params[P_A], buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	kernel_inplace_names(&kernel_add, &kernel_add.params[EW_Z], buf, sizeof(buf));
	ck_assert_str_eq(buf, "x|y");
}
END_TEST

/* Every built-in's declarations name inputs that accept the output's dtypes (in
 * place is the very same array); the elementwise kernels declare z in place of
 * x and y, and nothing else declares any (lombscargle's pgram, reductions). */
START_TEST(test_builtin_declarations)
{
	size_t n;
	const kernel_def *const *ks = kernel_list(&n);
	int elementwise = 0;
	for (size_t i = 0; i < n; i++) {
		const kernel_def *k = ks[i];
		for (int j = 0; j < k->nparams; j++) {
			const kernel_param *p = &k->params[j];
			ck_assert_msg(p->inplace_of >> k->nparams == 0,
				      "%s.%s: in place of a parameter it does not have", k->name,
				      p->name);
			ck_assert_msg(p->role == KPARAM_OUT || p->inplace_of == 0,
				      "%s.%s: only outputs are written in place", k->name, p->name);
			for (int m = 0; m < k->nparams; m++) {
				if (!(p->inplace_of & KPARAM_BIT(m)))
					continue;
				ck_assert_msg(k->params[m].role == KPARAM_IN &&
						      (k->params[m].dtypes & p->dtypes) ==
							      p->dtypes,
					      "%s.%s in place of %s: not an input of its dtypes",
					      k->name, p->name, k->params[m].name);
			}
			if (ew_op_of(k) >= 0 && j == EW_Z) {
				ck_assert_uint_eq(p->inplace_of,
						  KPARAM_BIT(EW_X) | KPARAM_BIT(EW_Y));
				elementwise++;
			} else {
				ck_assert_msg(p->inplace_of == 0, "%s.%s: declared in place",
					      k->name, p->name);
			}
		}
	}
	ck_assert_int_eq(elementwise, EW_NOPS);
}
END_TEST

Suite *alias_suite(void)
{
	Suite *s = suite_create("alias");
	TCase *tc = tcase_create("alias");
	tcase_add_test(tc, test_apart_passes);
	tcase_add_test(tc, test_same_buffer_refused);
	tcase_add_test(tc, test_in_place_declared_passes);
	tcase_add_test(tc, test_partial_overlap_refused);
	tcase_add_test(tc, test_outputs_refused);
	tcase_add_test(tc, test_inputs_scalars_empty_pass);
	tcase_add_test(tc, test_custom_hint);
	tcase_add_test(tc, test_inplace_names);
	tcase_add_test(tc, test_builtin_declarations);
	suite_add_tcase(s, tc);
	return s;
}
