/* kernels/reduce/reduce.c — the library's reductions: table entries, checks and
 * CPU references (kernels/reduce/reduce.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/reduce/reduce.h"

#define KDT_INT (KDT(GPUD_I32) | KDT(GPUD_I64))

#define X_OUT(dts)                                                                                 \
	{.name = "x", .role = KPARAM_IN, .dtypes = (dts), .ndim = -1, .doc = "any shape"},         \
	{                                                                                          \
		.name = "out", .role = KPARAM_OUT, .dtypes = (dts) | KDT(GPUD_I64), .ndim = 0,     \
		.doc = "0-d result"                                                                \
	}

static const kernel_param p_any[] = {X_OUT(KDT_FLOAT | KDT_INT)};
static const kernel_param p_float[] = {X_OUT(KDT_FLOAT)};
static const kernel_param p_dot[] = {
	{.name = "x", .role = KPARAM_IN, .dtypes = KDT_FLOAT, .ndim = -1, .doc = "any shape"},
	{.name = "y",
	 .role = KPARAM_IN,
	 .dtypes = KDT_FLOAT,
	 .ndim = -1,
	 .doc = "as many elements as x"},
	{.name = "out", .role = KPARAM_OUT, .dtypes = KDT_FLOAT, .ndim = 0, .doc = "0-d result"},
};

static const kernel_def *const red_kernels[RED_NOPS] = {&kernel_sum, &kernel_asum, &kernel_min,
							&kernel_max, &kernel_mean, &kernel_dot};

int red_op_of(const kernel_def *k)
{
	for (int i = 0; i < RED_NOPS; i++)
		if (red_kernels[i] == k)
			return i;
	return -1;
}

int red_out(const kernel_def *k)
{
	return k == &kernel_dot ? 2 : 1;
}

static int red_check(kernel_args *a, char *err, size_t errlen)
{
	const kernel_def *k = a->kernel;
	int op = red_op_of(k);
	const kernel_array *x = &a->v[RED_X].arr;
	a->dtype = x->dtype;
	if (op == RED_DOT) {
		const kernel_array *y = &a->v[1].arr;
		if (y->dtype != x->dtype) {
			snprintf(err, errlen, "dot: 'y' is %s but 'x' is %s; one dtype",
				 gpud_dtype_name(y->dtype), gpud_dtype_name(x->dtype));
			return -1;
		}
		if (y->count != x->count) {
			snprintf(err, errlen, "dot: 'y' has %zu elements but 'x' has %zu", y->count,
				 x->count);
			return -1;
		}
	}
	if (x->count == 0 && (op == RED_MIN || op == RED_MAX || op == RED_MEAN)) {
		snprintf(err, errlen, "%s: 'x' is empty; %s of no elements is not defined", k->name,
			 k->name);
		return -1;
	}
	gpud_dtype out = x->dtype;
	if (op == RED_SUM && (out == GPUD_I32 || out == GPUD_I64))
		out = GPUD_I64;
	kernel_set_output(a, red_out(k), out, 0, NULL);
	return 0;
}

static size_t red_items(const kernel_args *a)
{
	(void)a;
	return 1; /* one work item: the whole reduction, sequential */
}

static double fget(const kernel_array *v, size_t i)
{
	return v->dtype == GPUD_F32 ? (double)((const float *)v->data)[i]
				    : ((const double *)v->data)[i];
}

static int64_t iget(const kernel_array *v, size_t i)
{
	return v->dtype == GPUD_I32 ? ((const int32_t *)v->data)[i] : ((const int64_t *)v->data)[i];
}

static void red_run(const kernel_args *a, size_t lo, size_t hi)
{
	(void)lo;
	(void)hi;
	int op = red_op_of(a->kernel);
	const kernel_array *x = &a->v[RED_X].arr;
	void *out = a->v[red_out(a->kernel)].arr.data;
	size_t n = x->count;

	if (x->dtype == GPUD_I32 || x->dtype == GPUD_I64) {
		if (op == RED_SUM) {
			uint64_t s = 0;
			for (size_t i = 0; i < n; i++)
				s += (uint64_t)iget(x, i);
			*(int64_t *)out = (int64_t)s;
			return;
		}
		int64_t m = iget(x, 0);
		for (size_t i = 1; i < n; i++) {
			int64_t v = iget(x, i);
			if (op == RED_MIN ? v < m : v > m)
				m = v;
		}
		if (x->dtype == GPUD_I32)
			*(int32_t *)out = (int32_t)m;
		else
			*(int64_t *)out = m;
		return;
	}
	double r = 0;
	switch (op) {
	case RED_SUM:
	case RED_MEAN:
	case RED_ASUM:
	case RED_DOT: {
		/* Neumaier's compensated sum: within 2^-52 |S| + O(n 2^-106) sum|x| */
		const kernel_array *y = op == RED_DOT ? &a->v[1].arr : NULL;
		double c = 0;
		for (size_t i = 0; i < n; i++) {
			double v = fget(x, i);
			if (op == RED_ASUM)
				v = fabs(v);
			else if (y != NULL)
				v *= fget(y, i);
			double t = r + v;
			c += fabs(r) >= fabs(v) ? (r - t) + v : (v - t) + r;
			r = t;
		}
		if (r - r == 0) /* not when an infinity or NaN was summed */
			r += c;
		if (op == RED_MEAN)
			r /= (double)n;
		break;
	}
	default: /* min, max: NaN wins, as in numpy */
		r = fget(x, 0);
		for (size_t i = 1; i < n && r == r; i++) {
			double v = fget(x, i);
			if (v != v || (op == RED_MIN ? v < r : v > r))
				r = v;
		}
		break;
	}
	if (x->dtype == GPUD_F32)
		*(float *)out = (float)r;
	else
		*(double *)out = r;
}

/* Samples: a few values, 1000, and a 2-d x (any shape is reduced whole). */
static const char *const s_any[] = {
	"x=3,-2,4,9",
	"x=rand:1000:-100:100",
	"x=rand:7x9:-50:50",
	NULL,
};
static const char *const s_float[] = {
	"x=1.5,-2,4",
	"x=rand:1000:-2:3",
	"x=rand:7x9",
	NULL,
};
static const char *const s_dot[] = {
	"x=1.5,-2,4 y=0.5,3,-1",
	"x=rand:1000:-2:3 y=rand:1000",
	"x=rand:7x9 y=rand:63",
	NULL,
};

#define RED_DEF(nm, docstr, ps, smp)                                                               \
	const kernel_def kernel_##nm = {.name = #nm,                                               \
					.id = KERNEL_ID_##nm,                                      \
					.doc = docstr,                                             \
					.params = ps,                                              \
					.nparams = sizeof(ps) / sizeof(ps[0]),                     \
					.check = red_check,                                        \
					.samples = smp};                                           \
	const cpu_kernel cpu_kernel_##nm = {.name = #nm, .items = red_items, .run = red_run}

RED_DEF(sum, "sum of x (integers: int64); float32 accumulates in float64", p_any, s_any);
RED_DEF(asum, "sum of |x|; float32 accumulates in float64", p_float, s_float);
RED_DEF(min, "smallest element of x (NaN if any)", p_any, s_any);
RED_DEF(max, "largest element of x (NaN if any)", p_any, s_any);
RED_DEF(mean, "mean of x; float32 accumulates in float64", p_float, s_float);
RED_DEF(dot, "sum of x * y; float32 accumulates in float64", p_dot, s_dot);
