/* kernels/elementwise/elementwise.c — the library's elementwise kernels: table entries,
 * checks and CPU references (kernels/elementwise/elementwise.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/elementwise/elementwise.h"

#define KDT_INT (KDT(GPUD_I32) | KDT(GPUD_I64))

/* z may be written in place of x or y: element i is read before z[i] is written. */
#define XY(dts)                                                                                    \
	{.name = "x",                                                                              \
	 .role = KPARAM_IN,                                                                        \
	 .dtypes = (dts),                                                                          \
	 .ndim = -1,                                                                               \
	 .stype = KSCALAR_F64,                                                                     \
	 .doc = "array or scalar",                                                                 \
	 .broadcast = 1},                                                                          \
		{.name = "y",                                                                      \
		 .role = KPARAM_IN,                                                                \
		 .dtypes = (dts),                                                                  \
		 .ndim = -1,                                                                       \
		 .stype = KSCALAR_F64,                                                             \
		 .doc = "array or scalar, same length as x",                                       \
		 .broadcast = 1},                                                                  \
	{                                                                                          \
		.name = "z", .role = KPARAM_OUT, .dtypes = (dts), .ndim = -1,                      \
		.doc = "result, the dtype and shape of the arrays",                                \
		.inplace_of = KPARAM_BIT(0) | KPARAM_BIT(1)                                        \
	}

static const kernel_param p_any[] = {XY(KDT_FLOAT | KDT_INT)};
static const kernel_param p_float[] = {XY(KDT_FLOAT)};
static const kernel_param p_float_a[] = {
	XY(KDT_FLOAT),
	{.name = "a", .role = KPARAM_SCALAR, .stype = KSCALAR_F64, .doc = "a scalar factor"},
};

static const kernel_def *const ew_kernels[EW_NOPS] = {&kernel_add,      &kernel_sub,
						      &kernel_mul,      &kernel_div,
						      &kernel_axpy,     &kernel_saxpy_trig,
						      &kernel_rel_diff, &kernel_sum_of_squares};

int ew_op_of(const kernel_def *k)
{
	for (int i = 0; i < EW_NOPS; i++)
		if (ew_kernels[i] == k)
			return i;
	return -1;
}

size_t ew_count(const kernel_args *a)
{
	for (int i = EW_X; i <= EW_Y; i++)
		if (!a->v[i].scalar)
			return a->v[i].arr.count;
	return 0;
}

static int ew_check(kernel_args *a, char *err, size_t errlen)
{
	const kernel_def *k = a->kernel;
	int first = -1;
	for (int i = EW_X; i <= EW_Y; i++) {
		const kernel_value *v = &a->v[i];
		if (v->scalar)
			continue;
		if (first < 0) {
			first = i;
			a->dtype = v->arr.dtype;
			continue;
		}
		if (v->arr.dtype != a->dtype) {
			snprintf(err, errlen,
				 "%s: 'y' is %s but 'x' is %s; the arrays must have one dtype",
				 k->name, gpud_dtype_name(v->arr.dtype), gpud_dtype_name(a->dtype));
			return -1;
		}
		if (v->arr.count != a->v[first].arr.count) {
			snprintf(err, errlen,
				 "%s: 'y' has %zu elements but 'x' has %zu; lengths must match "
				 "(scalars broadcast)",
				 k->name, v->arr.count, a->v[first].arr.count);
			return -1;
		}
	}
	if (first < 0) {
		snprintf(err, errlen, "%s: x or y must be an array", k->name);
		return -1;
	}
	for (int i = EW_X; i <= EW_Y; i++) {
		double s = a->v[i].s.f64;
		if (a->v[i].scalar && (a->dtype == GPUD_I32 || a->dtype == GPUD_I64) &&
		    (s != floor(s) || fabs(s) > 9.0e15 ||
		     (a->dtype == GPUD_I32 && (s < INT32_MIN || s > INT32_MAX)))) {
			snprintf(err, errlen,
				 "%s: '%s' is %g; with %s arrays it must be an integer%s", k->name,
				 k->params[i].name, s, gpud_dtype_name(a->dtype),
				 a->dtype == GPUD_I32 ? " that fits int32" : " (|v| < 9e15)");
			return -1;
		}
	}
	kernel_set_output(a, EW_Z, a->dtype, a->v[first].arr.ndim, a->v[first].arr.shape);
	return 0;
}

double ew_ref_f64(ew_op op, double x, double y, double a)
{
	switch (op) {
	case EW_ADD:
		return x + y;
	case EW_SUB:
		return x - y;
	case EW_MUL:
		return x * y;
	case EW_DIV:
		return x / y;
	case EW_AXPY:
		return a * x + y;
	case EW_SAXPY_TRIG:
		return exp(a * sin(x) + cos(y));
	case EW_REL_DIFF:
		return 2 * (x - y) / (x + y);
	case EW_SUM_OF_SQUARES:
		return x * x + y * y;
	default:
		return NAN;
	}
}

/* Integer ops wrap as numpy's do: computed in uint64, truncated to the dtype. */
static uint64_t ew_ref_int(ew_op op, uint64_t x, uint64_t y)
{
	switch (op) {
	case EW_ADD:
		return x + y;
	case EW_SUB:
		return x - y;
	case EW_MUL:
		return x * y;
	default: /* EW_SUM_OF_SQUARES */
		return x * x + y * y;
	}
}

static size_t ew_items(const kernel_args *a)
{
	return ew_count(a);
}

static double in_f(const kernel_value *v, size_t i)
{
	if (v->scalar)
		return v->s.f64;
	return v->arr.dtype == GPUD_F32 ? (double)((const float *)v->arr.data)[i]
					: ((const double *)v->arr.data)[i];
}

static uint64_t in_i(const kernel_value *v, size_t i)
{
	if (v->scalar) /* scalars are bound as float64; ew_check made sure it is integral */
		return (uint64_t)(int64_t)v->s.f64;
	return v->arr.dtype == GPUD_I32 ? (uint64_t)(int64_t)((const int32_t *)v->arr.data)[i]
					: (uint64_t)((const int64_t *)v->arr.data)[i];
}

static void ew_run(const kernel_args *a, size_t lo, size_t hi)
{
	ew_op op = (ew_op)ew_op_of(a->kernel);
	const kernel_value *x = &a->v[EW_X], *y = &a->v[EW_Y];
	void *z = a->v[EW_Z].arr.data;
	double s = op == EW_AXPY || op == EW_SAXPY_TRIG ? a->v[EW_A].s.f64 : 0;
	for (size_t i = lo; i < hi; i++) {
		switch (a->dtype) {
		case GPUD_F32:
			((float *)z)[i] = (float)ew_ref_f64(op, in_f(x, i), in_f(y, i), s);
			break;
		case GPUD_F64:
			((double *)z)[i] = ew_ref_f64(op, in_f(x, i), in_f(y, i), s);
			break;
		case GPUD_I32:
			((int32_t *)z)[i] = (int32_t)(uint32_t)ew_ref_int(op, in_i(x, i),
									  in_i(y, i));
			break;
		default:
			((int64_t *)z)[i] = (int64_t)ew_ref_int(op, in_i(x, i), in_i(y, i));
			break;
		}
	}
}

/*
 * Samples: the integer ops take int32 and int64 too (whole numbers, a sum and
 * a product that wrap int32); each op has a broadcast scalar on either side.
 */
static const char *const s_any[] = {
	"x=3,-7,12,2147483647 y=5,2,-9,1",
	"x=rand:1000:-100:100 y=-3",
	"x=7 y=rand:1000:-100:100",
	NULL,
};
static const char *const s_float[] = {
	"x=0.5,1.5,2.5 y=1,2,3",
	"x=rand:1000:0.5:3 y=rand:1000:0.5:3",
	"x=1.25 y=rand:1000:0.5:3",
	NULL,
};
static const char *const s_float_a[] = {
	"x=0.5,1.5,2.5 y=1,2,3 a=0.5",
	"x=rand:1000:-3:3 y=0.875 a=0.75",
	"x=1.25 y=rand:1000:-3:3 a=-2",
	NULL,
};

/* An element: a load or two, the operation, a store (a tiny run goes on the
 * cpu backend's loop by this cost: cpu_kernel.item_cost). */
static size_t ew_item_cost(const kernel_args *a)
{
	(void)a;
	return 1;
}

#define EW_DEF(nm, docstr, ps, smp)                                                                \
	const kernel_def kernel_##nm = {.name = #nm,                                               \
					.id = KERNEL_ID_##nm,                                      \
					.doc = docstr,                                             \
					.params = ps,                                              \
					.nparams = sizeof(ps) / sizeof(ps[0]),                     \
					.check = ew_check,                                         \
					.samples = smp};                                           \
	const cpu_kernel cpu_kernel_##nm = {.name = #nm,                                           \
					    .items = ew_items,                                     \
					    .run = ew_run,                                         \
					    .item_cost = ew_item_cost}

EW_DEF(add, "z = x + y", p_any, s_any);
EW_DEF(sub, "z = x - y", p_any, s_any);
EW_DEF(mul, "z = x * y", p_any, s_any);
EW_DEF(div, "z = x / y", p_float, s_float);
EW_DEF(axpy, "z = a * x + y", p_float_a, s_float_a);
EW_DEF(saxpy_trig, "z = exp(a * sin(x) + cos(y))", p_float_a, s_float_a);
EW_DEF(rel_diff, "z = 2 (x - y) / (x + y)", p_float, s_float);
EW_DEF(sum_of_squares, "z = x^2 + y^2", p_any, s_any);
