/* kernels/custom/test_custom.c — custom kernels: signatures, elementwise parameters,
 * generated code and the binding of runs (kernels/custom/custom.c). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "kernels/custom/custom.h"
#include "tests/unit/suites.h"

#define assert_has(s, want)                                                                        \
	ck_assert_msg(strstr((s), (want)) != NULL, "'%s' lacks '%s'", (s), (want))

START_TEST(test_signature)
{
	custom_param p[KERNEL_MAX_PARAMS];
	int n;
	char err[256];

	ck_assert_int_eq(custom_parse_signature(" x:in f32[], out : out float32 [] ,a:f64, n:i64 ",
						p, KERNEL_MAX_PARAMS, &n, err, sizeof(err)),
			 0);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(p[0].name, "x");
	ck_assert_int_eq(p[0].role, KPARAM_IN);
	ck_assert_int_eq(p[0].dtype, GPUD_F32);
	ck_assert_str_eq(p[1].name, "out");
	ck_assert_int_eq(p[1].role, KPARAM_OUT);
	ck_assert_int_eq(p[2].role, KPARAM_SCALAR);
	ck_assert_int_eq(p[2].dtype, GPUD_F64);
	ck_assert_int_eq(p[3].dtype, GPUD_I64);

	static const struct {
		const char *sig, *words;
	} bad[] = {
		{"x:in f33[]", "unknown type 'f33'"},
		{"x in f32[]", "expected NAME:in TYPE[]"},
		{"x:f32[]", "an array is 'in' or 'out'"},
		{"x:in f32", "in and out are for arrays"},
		{"x:in f32[], x:out f32[]", "'x' is declared twice"},
		{"1x:in f32[]", "is not a parameter name"},
		{"_x:in f32[]", "is not a parameter name"},
		{"x:in f32[] junk", "unexpected 'junk'"},
		{"x:in f32[],, y:out f32[]", "item 2 is empty"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(custom_parse_signature(bad[i].sig, p, KERNEL_MAX_PARAMS, &n, err,
						     sizeof(err)) == -1,
			      "'%s' was accepted", bad[i].sig);
		assert_has(err, bad[i].words);
	}
}
END_TEST

START_TEST(test_elementwise_params)
{
	custom_param p[KERNEL_MAX_PARAMS];
	int n = 0;
	char err[256];

	ck_assert_int_eq(custom_parse_ew_params("float32 x, float32 y, f32 a", KPARAM_IN, p,
						KERNEL_MAX_PARAMS, &n, err, sizeof(err)),
			 0);
	ck_assert_int_eq(custom_parse_ew_params("float32 z", KPARAM_OUT, p, KERNEL_MAX_PARAMS, &n,
						err, sizeof(err)),
			 0);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(p[2].name, "a");
	ck_assert_int_eq(p[3].role, KPARAM_OUT);
	/* an output may not reuse an input's name */
	ck_assert_int_eq(custom_parse_ew_params("float64 x", KPARAM_OUT, p, KERNEL_MAX_PARAMS, &n,
						err, sizeof(err)),
			 -1);
	assert_has(err, "declared twice");
	n = 0;
	ck_assert_int_eq(custom_parse_ew_params("float33 x", KPARAM_IN, p, KERNEL_MAX_PARAMS, &n,
						err, sizeof(err)),
			 -1);
	assert_has(err, "TYPE NAME");
	ck_assert_int_eq(custom_parse_ew_params("float32 x y", KPARAM_IN, p, KERNEL_MAX_PARAMS, &n,
						err, sizeof(err)),
			 -1);
	assert_has(err, "'float32 x y'");
}
END_TEST

/* saxpy_trig of the issue: float32 x, y, a -> z = exp(a * sin(x) + cos(y)). */
static void build_saxpy_trig(custom_kernel *k)
{
	char err[256];
	memset(k, 0, sizeof(*k));
	ck_assert_int_eq(custom_parse_ew_params("float32 x, float32 y, float32 a", KPARAM_IN,
						k->params, KERNEL_MAX_PARAMS, &k->nparams, err,
						sizeof(err)),
			 0);
	ck_assert_int_eq(custom_parse_ew_params("float32 z", KPARAM_OUT, k->params,
						KERNEL_MAX_PARAMS, &k->nparams, err, sizeof(err)),
			 0);
	ck_assert_msg(custom_build(k, "saxpy_trig", CUSTOM_ELEMENTWISE,
				   "z = exp(a * sin(x) + cos(y))", NULL, err, sizeof(err)) == 0,
		      "%s", err);
}

START_TEST(test_elementwise_source)
{
	custom_kernel k;
	build_saxpy_trig(&k);
	ck_assert_str_eq(k.entry, "gpud_ew_saxpy_trig");
	assert_has(
		k.source,
		"extern \"C\" __global__ void __launch_bounds__(256) gpud_ew_saxpy_trig(long long _n");
	assert_has(k.source, "const float *__restrict__ _x_p, float _x_v, int _x_a");
	assert_has(k.source, "float *__restrict__ _z_p");
	assert_has(k.source, "const float a = _a_a ? _a_p[_i] : _a_v;");
	assert_has(k.source, "#line 1 \"saxpy_trig\"\nz = exp(a * sin(x) + cos(y));");
	assert_has(k.source, "_z_p[_i] = z;");
	assert_has(k.source, "_i += (long long)gridDim.x * blockDim.x");
	/* the generated kernel takes x, y, a as arrays or scalars; z is an output */
	ck_assert_int_eq(k.def.nparams, 4);
	ck_assert_int_eq(k.def.id, KERNEL_ID_CUSTOM); /* in no table */
	ck_assert_int_eq(k.kparams[2].broadcast, 1);
	ck_assert_int_eq(k.kparams[3].role, KPARAM_OUT);
	custom_free(&k);
}
END_TEST

static kernel_array vec(gpud_dtype dt, size_t n, void *data)
{
	kernel_array a;
	memset(&a, 0, sizeof(a));
	a.dtype = dt;
	a.ndim = 1;
	a.shape[0] = n;
	a.count = n;
	a.data = data;
	return a;
}

START_TEST(test_elementwise_binding)
{
	custom_kernel k;
	kernel_args a;
	char err[256];
	float buf[8];
	build_saxpy_trig(&k);

	/* x, y arrays of 4; a a scalar: z is float32 of shape (4,) */
	memset(&a, 0, sizeof(a));
	a.kernel = &k.def;
	kernel_array x = vec(GPUD_F32, 4, buf), y = vec(GPUD_F32, 4, buf + 4);
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[0], &x, &a.v[0], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[1], &y, &a.v[1], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(&k.def, &k.kparams[2], KGIVEN_F64, 0, 0, 0.5, &a.v[2],
					    err, sizeof(err)),
			 0);
	ck_assert_int_eq(a.v[2].scalar, 1);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), 0);
	ck_assert_msg(k.def.check(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[3].expect.dtype, GPUD_F32);
	ck_assert_uint_eq(a.v[3].expect.shape[0], 4);

	/* lengths must match */
	kernel_array y5 = vec(GPUD_F32, 5, buf);
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[1], &y5, &a.v[1], err, sizeof(err)),
			 0);
	ck_assert_int_eq(k.def.check(&a, err, sizeof(err)), -1);
	assert_has(err, "'y' has 5 elements but 'x' has 4");
	/* a dtype other than declared */
	kernel_array y64 = vec(GPUD_F64, 4, buf);
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[1], &y64, &a.v[1], err, sizeof(err)),
			 -1);
	assert_has(err, "'y'");
	/* all scalars: nothing gives the length */
	memset(&a, 0, sizeof(a));
	a.kernel = &k.def;
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(kernel_bind_scalar(&k.def, &k.kparams[i], KGIVEN_F64, 0, 0, 1.0,
						    &a.v[i], err, sizeof(err)),
				 0);
	ck_assert_int_eq(k.def.check(&a, err, sizeof(err)), -1);
	assert_has(err, "at least one input must be an array");
	custom_free(&k);
}
END_TEST

START_TEST(test_raw_kernels)
{
	custom_kernel k;
	kernel_args a;
	char err[256];
	float buf[4];
	const char *src =
		"extern \"C\" __global__ void scale(const float *x, float *y, float s, "
		"int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = "
		"s * x[i]; }";

	memset(&k, 0, sizeof(k));
	ck_assert_int_eq(custom_parse_signature("x:in f32[], y:out f32[], s:f32, n:i32", k.params,
						KERNEL_MAX_PARAMS, &k.nparams, err, sizeof(err)),
			 0);
	ck_assert_msg(custom_build(&k, "scale", CUSTOM_RAW, src, "scale", err, sizeof(err)) == 0,
		      "%s", err);
	/* no blocks_per_sm: _grid and _block are run arguments */
	ck_assert_int_eq(k.def.nparams, 6);
	ck_assert_str_eq(k.kparams[4].name, "_grid");
	ck_assert_int_eq(k.kparams[5].role, KPARAM_SCALAR);
	memset(&a, 0, sizeof(a));
	a.kernel = &k.def;
	kernel_array x = vec(GPUD_F32, 4, buf);
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[0], &x, &a.v[0], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(&k.def, &k.kparams[2], KGIVEN_F64, 0, 0, 2.0, &a.v[2],
					    err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(&k.def, &k.kparams[3], KGIVEN_I64, 0, 1ll << 40, 0,
					    &a.v[3], err, sizeof(err)),
			 0);
	ck_assert_int_eq(k.def.check(&a, err, sizeof(err)), -1);
	assert_has(err, "'n' is int32; 1099511627776 does not fit");
	a.v[3].s.i64 = 4;
	ck_assert_int_eq(k.def.check(&a, err, sizeof(err)), -1);
	assert_has(err, "output 'y' must be passed as a buffer");
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[1], &x, &a.v[1], err, sizeof(err)),
			 0);
	ck_assert_msg(k.def.check(&a, err, sizeof(err)) == 0, "%s", err);
	custom_free(&k);

	/* what a registration must have */
	static const struct {
		const char *name, *sig, *src, *entry, *words;
	} bad[] = {
		{"scale", "x:in f32[], s:f32", "void scale()", "scale", "declares no output"},
		{"scale", "y:out f32[]", "__global__ void other()", "scale", "has no 'scale'"},
		{"scale", "y:out f32[]", "   \n", "scale", "source is empty"},
		{"sc ale", "y:out f32[]", "scale", "scale", "kernel name 'sc ale'"},
		{"scale", "y:out f32[]", "scale", "", "entry '' is not a function name"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&k, 0, sizeof(k));
		ck_assert_int_eq(custom_parse_signature(bad[i].sig, k.params, KERNEL_MAX_PARAMS,
							&k.nparams, err, sizeof(err)),
				 0);
		err[0] = '\0';
		ck_assert_msg(custom_build(&k, bad[i].name, CUSTOM_RAW, bad[i].src, bad[i].entry,
					   err, sizeof(err)) == -1,
			      "case %zu was accepted", i);
		assert_has(err, bad[i].words);
		custom_free(&k);
	}
	memset(&k, 0, sizeof(k));
	k.block = 100;
	ck_assert_int_eq(custom_parse_signature("y:out f32[]", k.params, KERNEL_MAX_PARAMS,
						&k.nparams, err, sizeof(err)),
			 0);
	ck_assert_int_eq(custom_build(&k, "b", CUSTOM_RAW, "b", "b", err, sizeof(err)), -1);
	assert_has(err, "a multiple of 32");
}
END_TEST

/* inplace(...) after an output: parsed, resolved to the inputs' bits, listed by the
 * kernel_def, and refused where it names no input of the output's dtype. */
START_TEST(test_inplace)
{
	custom_kernel k;
	char err[256];

	memset(&k, 0, sizeof(k));
	ck_assert_int_eq(custom_parse_signature("x:in f32[], w:in f32[], y:out f32[] inplace ( x | "
						"w ), z:out f32[], n:i64",
						k.params, KERNEL_MAX_PARAMS, &k.nparams, err,
						sizeof(err)),
			 0);
	ck_assert_str_eq(k.params[2].inplace, "x|w");
	ck_assert_str_eq(k.params[3].inplace, "");
	ck_assert_msg(custom_build(&k, "r", CUSTOM_RAW, "r", "r", err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(k.kparams[2].inplace_of, KPARAM_BIT(0) | KPARAM_BIT(1));
	ck_assert_uint_eq(k.kparams[3].inplace_of, 0);
	char names[64];
	kernel_inplace_names(&k.def, &k.kparams[2], names, sizeof(names));
	ck_assert_str_eq(names, "x|w");
	custom_free(&k);

	/* elementwise: the pointers that may be one array lose __restrict__ */
	memset(&k, 0, sizeof(k));
	ck_assert_int_eq(custom_parse_ew_params("float32 x, float32 y", KPARAM_IN, k.params,
						KERNEL_MAX_PARAMS, &k.nparams, err, sizeof(err)),
			 0);
	ck_assert_int_eq(custom_parse_ew_params("float32 z inplace(x)", KPARAM_OUT, k.params,
						KERNEL_MAX_PARAMS, &k.nparams, err, sizeof(err)),
			 0);
	ck_assert_msg(custom_build(&k, "e", CUSTOM_ELEMENTWISE, "z = x + y", NULL, err,
				   sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(k.kparams[2].inplace_of, KPARAM_BIT(0));
	assert_has(k.source, "const float *_x_p, float _x_v");
	assert_has(k.source, "const float *__restrict__ _y_p");
	assert_has(k.source, "float *_z_p");
	custom_free(&k);

	static const struct {
		const char *sig, *words;
	} bad_parse[] = {
		{"x:in f32[] inplace(y), y:out f32[]", "inplace(...) is for outputs"},
		{"x:in f32[], n:i64 inplace(x), y:out f32[]", "inplace(...) is for outputs"},
		{"x:in f32[], y:out f32[] inplace(x", "expected inplace(INPUT)"},
		{"x:in f32[], y:out f32[] inplace()", "expected inplace(INPUT)"},
		{"x:in f32[], y:out f32[] inplace x", "expected inplace(INPUT)"},
		{"x:in f32[], y:out f32[] inplace(x) junk", "unexpected 'junk'"},
	};
	for (size_t i = 0; i < sizeof(bad_parse) / sizeof(bad_parse[0]); i++) {
		memset(&k, 0, sizeof(k));
		err[0] = '\0';
		ck_assert_msg(custom_parse_signature(bad_parse[i].sig, k.params, KERNEL_MAX_PARAMS,
						     &k.nparams, err, sizeof(err)) == -1,
			      "'%s' was accepted", bad_parse[i].sig);
		assert_has(err, bad_parse[i].words);
	}
	static const struct {
		const char *sig, *words;
	} bad_build[] = {
		{"x:in f32[], y:out f32[] inplace(q)", "r: output 'y' inplace(q): 'q' is not a "
						       "parameter"},
		{"x:in f64[], y:out f32[] inplace(x)",
		 "r: output 'y' inplace(x): 'x' is float64 but 'y' is float32; in place needs one "
		 "dtype"},
		{"n:i64, y:out f32[] inplace(n)", "'n' is not an input array"},
		{"z:out f32[], y:out f32[] inplace(z)", "'z' is not an input array"},
	};
	for (size_t i = 0; i < sizeof(bad_build) / sizeof(bad_build[0]); i++) {
		memset(&k, 0, sizeof(k));
		err[0] = '\0';
		ck_assert_int_eq(custom_parse_signature(bad_build[i].sig, k.params,
							KERNEL_MAX_PARAMS, &k.nparams, err,
							sizeof(err)),
				 0);
		ck_assert_msg(custom_build(&k, "r", CUSTOM_RAW, "r", "r", err, sizeof(err)) == -1,
			      "'%s' was built", bad_build[i].sig);
		assert_has(err, bad_build[i].words);
		custom_free(&k);
	}
}
END_TEST

/* A 300-character name is echoed clipped, with its length, and the reason
 * after it is whole in a message of the daemon's size (512 bytes). */
START_TEST(test_long_names_clipped)
{
	custom_param p[KERNEL_MAX_PARAMS];
	custom_kernel k;
	char name[301], text[400], err[512];
	const char *reason = "' is not a parameter name (a letter, then letters, digits or _, at "
			     "most 63)";
	int n = 0;

	memset(name, 'a', 300);
	name[300] = '\0';
	snprintf(text, sizeof(text), "%s:in f32[]", name);
	ck_assert_int_eq(custom_parse_signature(text, p, KERNEL_MAX_PARAMS, &n, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err,
			     "item 1 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaa...(309 bytes)': 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaa...(300 bytes)") == err,
		      "'%s' does not echo the item and the name clipped", err);
	ck_assert_msg(strlen(err) > strlen(reason) &&
			      strcmp(err + strlen(err) - strlen(reason), reason) == 0,
		      "'%s' does not end with the whole reason", err);

	snprintf(text, sizeof(text), "float32 %s", name);
	ck_assert_int_eq(custom_parse_ew_params(text, KPARAM_IN, p, KERNEL_MAX_PARAMS, &n, err,
						sizeof(err)),
			 -1);
	assert_has(err, "...(308 bytes)': '");
	assert_has(err, "...(300 bytes)");
	ck_assert_msg(strcmp(err + strlen(err) - strlen(reason), reason) == 0,
		      "'%s' does not end with the whole reason", err);

	snprintf(text, sizeof(text), "x:in %s[]", name);
	ck_assert_int_eq(custom_parse_signature(text, p, KERNEL_MAX_PARAMS, &n, err, sizeof(err)),
			 -1);
	assert_has(err, "unknown type 'aaaa");
	assert_has(err, "...(300 bytes)' (f32, f64, i32, i64 or float32, float64, int32, int64)");

	memset(&k, 0, sizeof(k));
	ck_assert_int_eq(custom_build(&k, name, CUSTOM_RAW, "r", "r", err, sizeof(err)), -1);
	assert_has(err, "...(300 bytes)': a letter, then letters, digits or _, at most 63 "
			"characters");
	custom_free(&k);
}
END_TEST

/* sum of squares, then a square root: CuPy's L2-norm example */
static int build_l2(custom_kernel *k, const char *in, const char *out, unsigned block,
		    const custom_reduction *r, char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	k->block = block;
	if (custom_parse_ew_params(in, KPARAM_IN, k->params, KERNEL_MAX_PARAMS, &k->nparams, err,
				   errlen) != 0 ||
	    custom_parse_ew_params(out, KPARAM_OUT, k->params, KERNEL_MAX_PARAMS, &k->nparams, err,
				   errlen) != 0)
		return -1;
	k->red = r;
	int rv = custom_build(k, "l2", CUSTOM_REDUCTION, NULL, NULL, err, errlen);
	k->red = NULL;
	return rv;
}

START_TEST(test_reduction)
{
	custom_kernel k;
	kernel_args a;
	char err[512];
	float buf[12];
	custom_reduction r = {.map_expr = "x * x * w",
			      .reduce_expr = "a + b",
			      .post_map_expr = "y = sqrt(a)",
			      .identity = "0",
			      .reduce_type = "float64"};
	ck_assert_msg(build_l2(&k, "float32 x, float32 w", "float32 y", 0, &r, err, sizeof(err)) ==
			      0,
		      "%s", err);
	ck_assert_str_eq(k.entry, "gpud_red_l2");
	assert_has(k.source, "typedef double _gpud_rt;");
	assert_has(k.source, "__launch_bounds__(256) gpud_red_l2(long long _n");
	assert_has(k.source, "__shared__ _gpud_rt _s[256];");
	assert_has(k.source, "#line 1 \"l2 map_expr\"\nx * x * w\n");
	assert_has(k.source, "const _gpud_rt a = _acc, b = _m;");
	assert_has(k.source, "#line 1 \"l2 post_map_expr\"\ny = sqrt(a);");
	assert_has(k.source, "_y_p[blockIdx.x] = y;");
	ck_assert_str_eq(k.def.doc, "custom reduction kernel");
	ck_assert_int_eq(k.def.nparams, 4); /* x, w, y, _axis */
	ck_assert_str_eq(k.kparams[3].name, "_axis");
	ck_assert_int_eq(k.kparams[3].optional, 1);
	ck_assert_int_eq(k.kparams[1].broadcast, 1);

	/* the whole arrays: a 0-d output; w a scalar broadcast */
	memset(&a, 0, sizeof(a));
	a.kernel = &k.def;
	kernel_array x = vec(GPUD_F32, 6, buf), x5 = vec(GPUD_F32, 5, buf + 6);
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[0], &x, &a.v[0], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(&k.def, &k.kparams[1], KGIVEN_F64, 0, 0, 2.0, &a.v[1],
					    err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), 0);
	ck_assert_msg(k.def.check(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[2].expect.dtype, GPUD_F32);
	ck_assert_int_eq(a.v[2].expect.ndim, 0);
	/* arrays must match */
	memset(&a, 0, sizeof(a));
	a.kernel = &k.def;
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[0], &x, &a.v[0], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[1], &x5, &a.v[1], err, sizeof(err)),
			 0);
	ck_assert_int_eq(k.def.check(&a, err, sizeof(err)), -1);
	assert_has(err, "l2: 'w' has 5 elements but 'x' has 6; a reduction's arrays must match");
	/* _axis -1 of a 2-d array: one value per row */
	kernel_array m = vec(GPUD_F32, 6, buf);
	m.ndim = 2;
	m.shape[0] = 2;
	m.shape[1] = 3;
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[0], &m, &a.v[0], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_array(&k.def, &k.kparams[1], &m, &a.v[1], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(&k.def, &k.kparams[3], KGIVEN_I64, 0, -1, 0, &a.v[3],
					    err, sizeof(err)),
			 0);
	ck_assert_msg(k.def.check(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(a.v[2].expect.ndim, 1);
	ck_assert_uint_eq(a.v[2].expect.shape[0], 2);
	/* any other axis, or a 1-d array with _axis: refused */
	ck_assert_int_eq(kernel_bind_scalar(&k.def, &k.kparams[3], KGIVEN_I64, 0, 0, 0, &a.v[3],
					    err, sizeof(err)),
			 0);
	ck_assert_int_eq(k.def.check(&a, err, sizeof(err)), -1);
	assert_has(err, "l2: _axis 0 of a 2-d array: gpud reduces the whole arrays (no _axis) or "
			"the last axis of 2-d arrays (_axis -1 or 1)");
	custom_free(&k);

	/* what a reduction must have */
	static const struct {
		const char *in, *out;
		unsigned block;
		custom_reduction r;
		const char *want;
	} bad[] = {
		{"float32 x",
		 "float32 y, float32 z",
		 0,
		 {"x", "a + b", "y = a", "0", NULL},
		 "l2: a reduction has exactly one output, got 2"},
		{"float32 x",
		 "float32 y inplace(x)",
		 0,
		 {"x", "a + b", "y = a", "0", NULL},
		 "l2: a reduction's output 'y' cannot be inplace(x)"},
		{"float32 x",
		 "float32 y",
		 96,
		 {"x", "a + b", "y = a", "0", NULL},
		 "l2: block 96: a reduction's block is a power of two (32 to 1024)"},
		{"float32 x",
		 "float32 y",
		 0,
		 {"x", " ", "y = a", "0", NULL},
		 "l2: the reduce_expr is empty"},
		{"float32 x",
		 "float32 y",
		 0,
		 {"x", "a + b", "y = a", "", NULL},
		 "l2: the identity is empty"},
		{"float32 x",
		 "float32 y",
		 0,
		 {"", "a + b", "y = a", "0", NULL},
		 "l2: the map_expr is empty"},
		{"float32 x",
		 "float32 y",
		 0,
		 {"x", "a + b", "y = a", "0", "T"},
		 "l2: reduce_type 'T': expected float32, float64, int32 or int64"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(build_l2(&k, bad[i].in, bad[i].out, bad[i].block, &bad[i].r, err,
					  sizeof(err)),
				 -1);
		assert_has(err, bad[i].want);
		custom_free(&k);
	}
}
END_TEST

Suite *custom_suite(void)
{
	Suite *s = suite_create("custom");
	TCase *tc = tcase_create("custom");
	tcase_add_test(tc, test_signature);
	tcase_add_test(tc, test_elementwise_params);
	tcase_add_test(tc, test_elementwise_source);
	tcase_add_test(tc, test_elementwise_binding);
	tcase_add_test(tc, test_raw_kernels);
	tcase_add_test(tc, test_inplace);
	tcase_add_test(tc, test_reduction);
	suite_add_tcase(s, tc);
	tc = tcase_create("custom_messages");
	tcase_add_test(tc, test_long_names_clipped);
	suite_add_tcase(s, tc);
	return s;
}
