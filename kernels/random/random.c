/* kernels/random/random.c — uniform and normal: table entries, checks, and the cpu
 * backend's numbers from cuRAND's host generator (kernels/random/random.h). */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/libs.h"
#include "kernels/random/random.h"

#define RND_PARAMS(p1, d1, doc1, p2, d2, doc2)                                                     \
	{                                                                                          \
		[RND_N] = {.name = "n",                                                            \
			   .role = KPARAM_SCALAR,                                                  \
			   .stype = KSCALAR_I64,                                                   \
			   .doc = "how many numbers"},                                             \
		[RND_SEED] = {.name = "seed",                                                      \
			      .role = KPARAM_SCALAR,                                               \
			      .stype = KSCALAR_I64,                                                \
			      .doc = "the generator's seed, 0 to 2^63 - 1"},                       \
		[RND_DTYPE] = {.name = "dtype",                                                    \
			       .role = KPARAM_SCALAR,                                              \
			       .stype = KSCALAR_DTYPE,                                             \
			       .dtypes = KDT_FLOAT,                                                \
			       .default_value = "float64",                                         \
			       .doc = "out's dtype"},                                              \
		[RND_P1] = {.name = p1,                                                            \
			    .role = KPARAM_SCALAR,                                                 \
			    .stype = KSCALAR_F64,                                                  \
			    .default_value = d1,                                                   \
			    .doc = doc1},                                                          \
		[RND_P2] = {.name = p2,                                                            \
			    .role = KPARAM_SCALAR,                                                 \
			    .stype = KSCALAR_F64,                                                  \
			    .default_value = d2,                                                   \
			    .doc = doc2},                                                          \
		[RND_OUT] = {.name = "out",                                                        \
			     .role = KPARAM_OUT,                                                   \
			     .dtypes = KDT_FLOAT,                                                  \
			     .ndim = 1,                                                            \
			     .doc = "n numbers"},                                                  \
	}

static const kernel_param p_uniform[] =
	RND_PARAMS("low", "0", "out = low + (high - low) u, u in (0, 1]", "high", "1", "see low");
static const kernel_param p_normal[] = RND_PARAMS("mean", "0", "the distribution's mean", "stddev",
						  "1", "its standard deviation, 0 or more");

static int rnd_check(kernel_args *a, char *err, size_t errlen)
{
	const kernel_def *k = a->kernel;
	int normal = k == &kernel_normal;
	int64_t n = a->v[RND_N].s.i64, seed = a->v[RND_SEED].s.i64;
	double p1 = a->v[RND_P1].s.f64, p2 = a->v[RND_P2].s.f64;
	gpud_dtype dt = a->v[RND_DTYPE].s.dtype;

	if (n < 0) {
		snprintf(err, errlen, "%s: argument 'n' must be 0 or more, got %lld", k->name,
			 (long long)n);
		return -1;
	}
	if (seed < 0) {
		snprintf(err, errlen, "%s: argument 'seed' must be 0 to 2^63 - 1, got %lld",
			 k->name, (long long)seed);
		return -1;
	}
	if (normal && p2 < 0) {
		snprintf(err, errlen, "normal: argument 'stddev' must be 0 or more, got %g", p2);
		return -1;
	}
	if (!normal && !isfinite(p2 - p1)) {
		snprintf(err, errlen, "uniform: high - low must be finite, got high %g and low %g",
			 p2, p1);
		return -1;
	}
	if (dt == GPUD_F32 && (fabs(p1) > FLT_MAX || fabs(p2) > FLT_MAX)) {
		snprintf(err, errlen,
			 "%s: '%s' and '%s' must be within float32's range for dtype "
			 "float32, got %g and %g",
			 k->name, k->params[RND_P1].name, k->params[RND_P2].name, p1, p2);
		return -1;
	}
	a->dtype = dt;
	uint64_t shape = (uint64_t)n;
	kernel_set_output(a, RND_OUT, dt, 1, &shape);
	return 0;
}

static size_t rnd_items(const kernel_args *a)
{
	(void)a;
	return 1; /* one generator produces the whole sequence, in order */
}

/*
 * cuRAND loads, and its host generator works here: checked once (the first
 * cpu backend to start asks), since a run has no way to fail.
 */
static struct {
	int ok;
	char why[900];
} host_gen;
static pthread_once_t host_gen_once = PTHREAD_ONCE_INIT;

static void host_gen_probe(void)
{
	char why[768];
	const libs_curand *cr = libs_get_curand(why, sizeof(why));
	libs_curand_gen g;
	int st;
	if (cr == NULL) {
		snprintf(host_gen.why, sizeof(host_gen.why), "%s", why);
		return;
	}
	if ((st = cr->create_host(&g, LIBS_CURAND_RNG_PSEUDO_PHILOX4_32_10)) !=
	    LIBS_CURAND_SUCCESS) {
		snprintf(host_gen.why, sizeof(host_gen.why),
			 "%s: its host generator does not start: curandCreateGeneratorHost: %s",
			 cr->describe, libs_curand_status(st));
		return;
	}
	cr->destroy(g);
	host_gen.ok = 1;
}

static int rnd_available(char *err, size_t errlen)
{
	pthread_once(&host_gen_once, host_gen_probe);
	if (host_gen.ok)
		return 0;
	snprintf(err, errlen, "uniform and normal are unavailable on the cpu backend: %s",
		 host_gen.why);
	return -1;
}

static void fill_nan(const kernel_array *o)
{
	for (size_t i = 0; i < o->count; i++) {
		if (o->dtype == GPUD_F32)
			((float *)o->data)[i] = NAN;
		else
			((double *)o->data)[i] = NAN;
	}
}

static void rnd_run(const kernel_args *a, size_t lo, size_t hi)
{
	(void)lo;
	(void)hi;
	const kernel_array *o = &a->v[RND_OUT].arr;
	const libs_curand *cr = libs_get_curand(NULL, 0);
	int normal = a->kernel == &kernel_normal, f32 = o->dtype == GPUD_F32;
	double p1 = a->v[RND_P1].s.f64, p2 = a->v[RND_P2].s.f64;
	size_t n = o->count;
	libs_curand_gen g;

	if (n == 0)
		return;
	/* Without cuRAND the backend refused the run (cpu_kernel.available); NaN all the same. */
	if (cr == NULL || cr->create_host(&g, LIBS_CURAND_RNG_PSEUDO_PHILOX4_32_10) != 0) {
		fill_nan(o);
		return;
	}
	int st = cr->set_ordering(g, LIBS_CURAND_ORDERING_PSEUDO_DEFAULT);
	if (st == 0)
		st = cr->set_seed(g, (unsigned long long)a->v[RND_SEED].s.i64);
	if (st == 0)
		st = cr->set_offset(g, 0);
	if (st == 0 && normal)
		st = f32 ? cr->normal(g, o->data, n, (float)p1, (float)p2)
			 : cr->normal_double(g, o->data, n, p1, p2);
	else if (st == 0)
		st = f32 ? cr->uniform(g, o->data, n) : cr->uniform_double(g, o->data, n);
	cr->destroy(g);
	if (st != 0) {
		fill_nan(o);
		return;
	}
	if (normal || (p1 == 0 && p2 == 1))
		return;
	/* low + (high - low) u in float64, one rounding per operation, as on the GPU */
	double w = p2 - p1;
	for (size_t i = 0; i < n; i++) {
		double u = f32 ? (double)((float *)o->data)[i] : ((double *)o->data)[i];
		double t = w * u;
		double r = p1 + t;
		if (f32)
			((float *)o->data)[i] = (float)r;
		else
			((double *)o->data)[i] = r;
	}
}

/* Both dtypes; odd n (normal: a pair generated past the end) and even. */
static const char *const uniform_samples[] = {
	"n=7 seed=1234 low=2 high=6",
	"n=8 seed=42",
	NULL,
};
static const char *const normal_samples[] = {
	"n=7 seed=1234",
	"n=8 seed=5 mean=3 stddev=0.25",
	NULL,
};

const kernel_def kernel_uniform = {
	.name = "uniform",
	.id = KERNEL_ID_uniform,
	.doc = "n uniform numbers in (low, high] from cuRAND's Philox4_32_10 with seed",
	.params = p_uniform,
	.nparams = sizeof(p_uniform) / sizeof(p_uniform[0]),
	.check = rnd_check,
	.samples = uniform_samples,
};

const cpu_kernel cpu_kernel_uniform = {
	.name = "uniform",
	.items = rnd_items,
	.run = rnd_run,
	.available = rnd_available,
};

const kernel_def kernel_normal = {
	.name = "normal",
	.id = KERNEL_ID_normal,
	.doc = "n normal numbers (mean, stddev) from cuRAND's Philox4_32_10 with seed",
	.params = p_normal,
	.nparams = sizeof(p_normal) / sizeof(p_normal[0]),
	.check = rnd_check,
	.samples = normal_samples,
};

const cpu_kernel cpu_kernel_normal = {
	.name = "normal",
	.items = rnd_items,
	.run = rnd_run,
	.available = rnd_available,
};
