/*
 * kernels/lombscargle/test_lombscargle_many.c — the lombscargle_many
 * kernel's unit tests: every series of a run equals lombscargle's run on
 * that series alone (fresh random series of their own lengths, one sample
 * included, every mode, grids and arrays, both dtypes, in ranges as the cpu
 * backend cuts them), ls_many_cpu likewise with its verdicts, method=nufft
 * (and auto) against ls_many_cpu's direct sums to eps with a bad series'
 * verdict, and each of check's and the verdict's refusals word for word. Tests only; each test
 * runs single-threaded in its own process.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/core/sample.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/many.h"
#include "kernels/lombscargle/many_kernel.h"
#include "kernels/lombscargle/test_lombscargle.h"

/* A run's inputs, in doubles: nb series, offsets into x, y, w (t samples). */
typedef struct many_in {
	size_t nb, t, m;
	int64_t *off;
	double *x, *y, *w, *f; /* w NULL: no weights; f NULL: the grid */
	double f0, df;
	int precenter, normalize, floating_mean, legacy;
	const char *method; /* NULL: the default (auto) */
	double eps;         /* > 0: given */
} many_in;

static void seed(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ls_rng_state = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ 0x9e3779b9ull;
	printf("lombscargle_many: seed %llu\n", (unsigned long long)ls_rng_state);
}

/* nb series of 1 (the first) to maxn samples, each with its own sorted times. */
static void make_in(many_in *in, size_t nb, size_t maxn, int weights, int grid, size_t m)
{
	memset(in, 0, sizeof(*in));
	in->nb = nb;
	in->m = m;
	in->off = calloc(nb + 1, sizeof(int64_t));
	size_t *len = calloc(nb, sizeof(size_t));
	for (size_t b = 0; b < nb; b++) {
		len[b] = b == 0 ? 1 : 1 + (size_t)ls_uniform(0, (double)maxn);
		in->off[b + 1] = in->off[b] + (int64_t)len[b];
	}
	in->t = (size_t)in->off[nb];
	in->x = malloc(in->t * sizeof(double));
	in->y = malloc(in->t * sizeof(double));
	in->w = weights ? malloc(in->t * sizeof(double)) : NULL;
	for (size_t b = 0; b < nb; b++) {
		double t = 0;
		for (int64_t j = in->off[b]; j < in->off[b + 1]; j++) {
			t += ls_uniform(0.01, 0.5);
			in->x[j] = t;
			in->y[j] = ls_uniform(-3, 3);
			if (in->w)
				in->w[j] = ls_uniform(0.05, 2);
		}
	}
	if (grid) {
		in->f0 = ls_uniform(0.1, 0.5);
		in->df = ls_uniform(0.005, 0.05);
	} else {
		in->f = malloc(m * sizeof(double));
		for (size_t i = 0; i < m; i++)
			in->f[i] = ls_uniform(0.1, 10);
	}
	free(len);
}

static void free_in(many_in *in)
{
	free(in->off);
	free(in->x);
	free(in->y);
	free(in->w);
	free(in->f);
}

typedef struct many_bound {
	kernel_args a;
	void *mem[5];
} many_bound;

static const kernel_def *lm_kernel(void)
{
	const kernel_def *k = kernel_find("lombscargle_many");
	ck_assert_ptr_nonnull(k);
	return k;
}

/* in bound as a request (dt for x, y, w, freqs; offsets as given; off_n
 * values of offsets when > 0, else nb + 1), checked: 0, or -1 with err. */
static int bind_many(gpud_dtype dt, const many_in *in, size_t off_n, many_bound *b, char *err,
		     size_t errlen)
{
	const kernel_def *k = lm_kernel();
	memset(b, 0, sizeof(*b));
	b->a.kernel = k;
	b->mem[0] = ls_convert(dt, in->x, in->t);
	b->mem[1] = ls_convert(dt, in->y, in->t);
	ls_bind_array(k, &b->a, LM_X, dt, b->mem[0], in->t);
	ls_bind_array(k, &b->a, LM_Y, dt, b->mem[1], in->t);
	ls_bind_array(k, &b->a, LM_OFFSETS, GPUD_I64, in->off, off_n ? off_n : in->nb + 1);
	if (in->w) {
		b->mem[2] = ls_convert(dt, in->w, in->t);
		ls_bind_array(k, &b->a, LM_WEIGHTS, dt, b->mem[2], in->t);
	}
	if (in->f) {
		b->mem[3] = ls_convert(dt, in->f, in->m);
		ls_bind_array(k, &b->a, LM_FREQS, dt, b->mem[3], in->m);
	} else {
		ls_bind_scalar(k, &b->a, LM_F0, KGIVEN_F64, 0, 0, in->f0);
		ls_bind_scalar(k, &b->a, LM_DF, KGIVEN_F64, 0, 0, in->df);
		ls_bind_scalar(k, &b->a, LM_NF, KGIVEN_I64, 0, (int64_t)in->m, 0);
	}
	ls_bind_scalar(k, &b->a, LM_PRECENTER, KGIVEN_BOOL, in->precenter, 0, 0);
	ls_bind_scalar(k, &b->a, LM_FLOATING_MEAN, KGIVEN_BOOL, in->floating_mean, 0, 0);
	ls_bind_scalar(k, &b->a, LM_LEGACY, KGIVEN_BOOL, in->legacy, 0, 0);
	if (in->method)
		ck_assert(kernel_bind_text(k, &k->params[LM_METHOD], in->method, &b->a.v[LM_METHOD],
					   err, errlen) == 0);
	if (in->eps > 0)
		ls_bind_scalar(k, &b->a, LM_EPS, KGIVEN_F64, 0, 0, in->eps);
	ck_assert(
		kernel_bind_text(k, &k->params[LM_NORMALIZE],
				 (const char *[]){"power", "normalize", "amplitude"}[in->normalize],
				 &b->a.v[LM_NORMALIZE], err, errlen) == 0);
	ck_assert_msg(kernel_args_finish(&b->a, err, errlen) == 0, "%s", err);
	if (k->check(&b->a, err, errlen) != 0)
		return -1;
	kernel_value *pv = &b->a.v[LM_PGRAM];
	pv->arr = pv->expect;
	b->mem[4] = malloc(pv->arr.count * gpud_dtype_size(pv->arr.dtype));
	ck_assert_ptr_nonnull(b->mem[4]);
	pv->arr.data = b->mem[4];
	pv->present = 1;
	return 0;
}

static void unbind_many(many_bound *b)
{
	for (int i = 0; i < 5; i++)
		free(b->mem[i]);
}

/* Series b's lombscargle alone (method direct): its m results into re, im. */
static void single(gpud_dtype dt, const many_in *in, size_t b, double *re, double *im)
{
	const int64_t o = in->off[b];
	ls_case c = ls_lcase(in->x + o, in->y + o, (size_t)(in->off[b + 1] - o));
	if (in->w)
		c.w = in->w + o;
	if (in->f) {
		c.f = in->f;
		c.nf = in->m;
	} else {
		ls_set_grid(&c, in->f0, in->df, (int64_t)in->m);
	}
	c.precenter = in->precenter;
	c.floating_mean = in->floating_mean;
	c.legacy = in->legacy;
	c.normalize = in->normalize;
	c.method = LS_DIRECT;
	ls_run_plain(dt, &c, re, im);
}

static int same(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

/* Every output of a many run equals the series' own lombscargle run. */
static void assert_equals_singles(gpud_dtype dt, const many_in *in, const kernel_array *o)
{
	const int amp = in->normalize == LS_AMPLITUDE;
	double *re = malloc(in->m * sizeof(double)), *im = malloc(in->m * sizeof(double));
	for (size_t b = 0; b < in->nb; b++) {
		single(dt, in, b, re, im);
		for (size_t i = 0; i < in->m; i++) {
			size_t k = b * in->m + i;
			double g = ls_get(o, amp ? 2 * k : k);
			ck_assert_msg(same(g, re[i]),
				      "series %zu (n=%lld) frequency %zu: %.17g, alone %.17g", b,
				      (long long)(in->off[b + 1] - in->off[b]), i, g, re[i]);
			if (amp)
				ck_assert_msg(same(ls_get(o, 2 * k + 1), im[i]),
					      "series %zu frequency %zu: imaginary part", b, i);
		}
	}
	free(re);
	free(im);
}

/* _i: dtype (bit 0), grid (bit 1), and 12 modes (i >> 2): normalize x
 * weights x floating_mean, then legacy with and without precenter. */
START_TEST(test_many_equals_singles)
{
	const gpud_dtype dt = _i & 1 ? GPUD_F32 : GPUD_F64;
	const int grid = (_i >> 1) & 1, mode = _i >> 2;
	many_in in;
	seed();
	make_in(&in, 9, 300, mode < 12 && (mode & 1), grid, 37);
	if (mode < 12) {
		in.normalize = mode % 3 == 0   ? LS_POWER
			       : mode % 3 == 1 ? LS_NORMALIZED
					       : LS_AMPLITUDE;
		in.floating_mean = (mode >> 1) & 1;
		in.precenter = (mode >> 2) & 1;
	} else {
		in.legacy = 1;
		in.precenter = mode == 12;
		in.normalize = mode == 12 ? LS_NORMALIZED : LS_POWER;
	}
	many_bound b;
	char err[512] = "";
	ck_assert_msg(bind_many(dt, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
	const cpu_kernel *ck = cpu_kernel_of(b.a.kernel);
	const kernel_array *o = &b.a.v[LM_PGRAM].arr;
	ck_assert_int_eq(o->ndim, 2);
	ck_assert_uint_eq(o->shape[0], in.nb);
	ck_assert_uint_eq(o->shape[1], in.m);
	ck_assert_int_eq(o->dtype, in.normalize != LS_AMPLITUDE ? dt
				   : dt == GPUD_F32             ? GPUD_C64
								: GPUD_C128);
	const size_t items = ck->items(&b.a);
	ck_assert_uint_eq(items, in.nb * in.m);
	ck_assert_uint_eq(ck->verdict(&b.a), 0);
	/* in ranges that cut series, the last first */
	ls_poison(o);
	const size_t cuts[] = {0, 5, in.m + 3, 4 * in.m, items - 2, items};
	for (size_t c = sizeof(cuts) / sizeof(cuts[0]) - 1; c > 0; c--)
		ck->run(&b.a, cuts[c - 1], cuts[c]);
	assert_equals_singles(dt, &in, o);

	/* ls_many_cpu over the same table: the same bytes, and its verdicts */
	const size_t bytes = o->count * gpud_dtype_size(o->dtype);
	void *whole = malloc(bytes);
	memcpy(whole, o->data, bytes);
	ls_poison(o);
	ls_many p;
	lm_params(&b.a, &p);
	ck_assert_int_eq(p.no_weights, in.w == NULL);
	ls_series *s = calloc(in.nb, sizeof(ls_series));
	const size_t es = gpud_dtype_size(dt), oes = gpud_dtype_size(o->dtype);
	for (size_t i = 0; i < in.nb; i++) {
		s[i].x = (char *)b.mem[0] + in.off[i] * es;
		s[i].y = (char *)b.mem[1] + in.off[i] * es;
		s[i].w = in.w ? (char *)b.mem[2] + in.off[i] * es : NULL;
		s[i].out = (char *)o->data + i * in.m * oes;
		s[i].n = in.off[i + 1] - in.off[i];
	}
	unsigned *v = malloc(in.nb * sizeof(unsigned));
	memset(v, 0xff, in.nb * sizeof(unsigned));
	ls_many_cpu(&p, s, 0, 4, v);
	ls_many_cpu(&p, s, 4, in.nb, v);
	for (size_t i = 0; i < in.nb; i++)
		ck_assert_uint_eq(v[i], 0);
	ck_assert_msg(memcmp(whole, o->data, bytes) == 0, "ls_many_cpu differs from the kernel");
	free(v);
	free(s);
	free(whole);
	unbind_many(&b);
	free_in(&in);
}
END_TEST

/* ls_many_cpu's verdicts: a series with a negative weight, one with zero
 * weights; their outputs left unwritten, the others computed. */
START_TEST(test_many_cpu_verdicts)
{
	many_in in;
	seed();
	make_in(&in, 4, 50, 1, 1, 16);
	in.w[in.off[1] + (in.off[2] - in.off[1]) / 2] = -0.5;
	for (int64_t j = in.off[3]; j < in.off[4]; j++)
		in.w[j] = 0;
	many_bound b;
	char err[512] = "";
	ck_assert_msg(bind_many(GPUD_F64, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
	ls_many p;
	lm_params(&b.a, &p);
	ls_series s[4];
	const kernel_array *o = &b.a.v[LM_PGRAM].arr;
	for (size_t i = 0; i < 4; i++) {
		s[i].x = (double *)b.mem[0] + in.off[i];
		s[i].y = (double *)b.mem[1] + in.off[i];
		s[i].w = (double *)b.mem[2] + in.off[i];
		s[i].out = (double *)o->data + i * in.m;
		s[i].n = in.off[i + 1] - in.off[i];
	}
	unsigned v[4];
	kernel_sample_poison(GPUD_F64, o->data, o->count);
	ls_many_cpu(&p, s, 0, 4, v);
	ck_assert_uint_eq(v[0], 0);
	ck_assert_uint_eq(v[1], LS_BAD_WEIGHT);
	ck_assert_uint_eq(v[2], 0);
	ck_assert_uint_eq(v[3], LS_ZERO_WEIGHTS);
	for (size_t i = 0; i < in.m; i++) {
		ck_assert(!isnan(((double *)o->data)[i]));
		ck_assert(kernel_sample_is_poison(GPUD_F64, o->data, in.m + i));
		ck_assert(kernel_sample_is_poison(GPUD_F64, o->data, 3 * in.m + i));
	}
	/* the kernel's verdict names the first bad series */
	const kernel_def *k = lm_kernel();
	unsigned code = cpu_kernel_of(k)->verdict(&b.a);
	ck_assert_uint_eq(code & 7u, LS_BAD_WEIGHT);
	k->verdict_message(&b.a, code, err, sizeof(err));
	ck_assert_str_eq(err, "lombscargle_many: argument 'weights' must hold only non-negative "
			      "values that sum to a positive value in every series; series 1 has "
			      "a negative or NaN weight");
	in.w[in.off[1] + (in.off[2] - in.off[1]) / 2] = 0.5;
	((double *)b.mem[2])[in.off[1] + (in.off[2] - in.off[1]) / 2] = 0.5;
	code = cpu_kernel_of(k)->verdict(&b.a);
	k->verdict_message(&b.a, code, err, sizeof(err));
	ck_assert_str_eq(err, "lombscargle_many: argument 'weights' must hold only non-negative "
			      "values that sum to a positive value in every series; series 3 has "
			      "weights that sum to 0");
	unbind_many(&b);
	free_in(&in);
}
END_TEST

/* Bad offsets' values: the verdict names offsets' first bad index; the run
 * beside it stays in x's memory (its outputs are no result). */
START_TEST(test_many_bad_offsets)
{
	static const struct {
		int64_t off[5];
		unsigned at;
	} bad[] = {
		{{1, 3, 5, 8, 10}, 0},  /* offsets[0] must be 0 */
		{{0, 3, 3, 8, 10}, 2},  /* an empty series */
		{{0, 6, 5, 8, 10}, 2},  /* falling */
		{{0, 3, 5, 12, 10}, 3}, /* beyond T */
		{{0, 3, 5, 8, 9}, 4},   /* not ending at T */
	};
	many_in in;
	seed();
	make_in(&in, 4, 3, 0, 1, 8);
	free(in.x), free(in.y);
	in.t = 10;
	in.x = malloc(10 * sizeof(double));
	in.y = malloc(10 * sizeof(double));
	for (int j = 0; j < 10; j++)
		in.x[j] = j + ls_uniform(0, 0.5), in.y[j] = ls_uniform(-1, 1);
	const kernel_def *k = lm_kernel();
	for (size_t c = 0; c < sizeof(bad) / sizeof(bad[0]); c++) {
		memcpy(in.off, bad[c].off, sizeof(bad[c].off));
		many_bound b;
		char err[512] = "", want[512];
		ck_assert_msg(bind_many(GPUD_F64, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
		unsigned code = cpu_kernel_of(k)->verdict(&b.a);
		ck_assert_uint_eq(code & LM_BAD_OFFSETS, LM_BAD_OFFSETS);
		k->verdict_message(&b.a, code, err, sizeof(err));
		snprintf(want, sizeof(want),
			 "lombscargle_many: argument 'offsets' must rise from offsets[0] = 0 to "
			 "offsets[B] = T = 10, each series at least one sample (offsets[b] > "
			 "offsets[b-1]); the first bad value is offsets[%u]",
			 bad[c].at);
		ck_assert_str_eq(err, want);
		cpu_kernel_of(k)->run(&b.a, 0, cpu_kernel_of(k)->items(&b.a));
		unbind_many(&b);
	}
	int64_t good[5] = {0, 3, 5, 8, 10};
	memcpy(in.off, good, sizeof(good));
	many_bound b;
	char err[512] = "";
	ck_assert_msg(bind_many(GPUD_F64, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(cpu_kernel_of(k)->verdict(&b.a), 0);
	unbind_many(&b);
	free_in(&in);
}
END_TEST

/* nb series of 10 to maxn samples with gaps (ls_gapped), a grid of m
 * frequencies up to a few times the mean sampling rate. */
static void make_gapped(many_in *in, size_t nb, size_t maxn, int weights, size_t m)
{
	memset(in, 0, sizeof(*in));
	in->nb = nb;
	in->m = m;
	in->off = calloc(nb + 1, sizeof(int64_t));
	for (size_t b = 0; b < nb; b++)
		in->off[b + 1] = in->off[b] + 10 + (int64_t)ls_uniform(0, (double)(maxn - 10));
	in->t = (size_t)in->off[nb];
	in->x = malloc(in->t * sizeof(double));
	in->y = malloc(in->t * sizeof(double));
	double *w = malloc(in->t * sizeof(double));
	const double span = ls_uniform(50, 500);
	for (size_t b = 0; b < nb; b++) {
		const int64_t o = in->off[b];
		ls_gapped((size_t)(in->off[b + 1] - o), in->x + o, in->y + o, w + o, span);
	}
	if (weights)
		in->w = w;
	else
		free(w);
	const double fmax = ls_uniform(1, 4) * 2 * M_PI * (double)(in->t / nb) / span;
	in->f0 = ls_uniform(2, 20) * 2 * M_PI / span;
	in->df = (fmax - in->f0) / (double)m;
}

/* Rows of o (nb series of m, amplitude: complex) into re, im (doubles). */
static void rows_of(const kernel_array *o, size_t nb, size_t m, int amp, double *re, double *im)
{
	for (size_t k = 0; k < nb * m; k++) {
		re[k] = ls_get(o, amp ? 2 * k : k);
		im[k] = amp ? ls_get(o, 2 * k + 1) : 0;
	}
}

/*
 * method=nufft (and auto) against the direct sums (ls_many_cpu), each
 * series to eps of its own max |pgram|, run in ranges that cut series as
 * the cpu backend does, the output poisoned first: _i's dtype (bit 0) and
 * mode (_i >> 1, test_lombscargle_nufft.c's: normalize, precenter,
 * floating_mean, weights, legacy); eps given in some.
 */
START_TEST(test_many_nufft)
{
	static const int modes[][5] = {
		{LS_POWER, 0, 0, 0, 0},      {LS_NORMALIZED, 1, 0, 0, 0},
		{LS_POWER, 0, 1, 1, 0},      {LS_NORMALIZED, 0, 1, 1, 0},
		{LS_AMPLITUDE, 0, 1, 1, 0},  {LS_AMPLITUDE, 1, 0, 1, 0},
		{LS_NORMALIZED, 1, 0, 0, 1}, {LS_POWER, 0, 0, 0, 1},
		{LS_NORMALIZED, 1, 1, 1, 0},
	};
	char why[512];
	if (!ls_nufft_cpu_available(why, sizeof(why)))
		fprintf(stderr, "test_many_nufft: no FFTW3, the direct path only: %s\n", why);
	const gpud_dtype dt = _i & 1 ? GPUD_F32 : GPUD_F64;
	const int *md = modes[_i >> 1];
	many_in in;
	seed();
	make_gapped(&in, 7, 400, md[3], 1500 + (size_t)ls_uniform(0, 1000));
	in.normalize = md[0];
	in.precenter = md[1];
	in.floating_mean = md[2];
	in.legacy = md[4];
	in.method = "nufft";
	in.eps = (_i >> 1) == 3 && dt == GPUD_F64 ? 1e-11 : (_i >> 1) == 4 ? 1e-4 : 0;
	const double eps = in.eps > 0 ? in.eps : dt == GPUD_F32 ? 1e-5 : 1e-9;
	many_bound b;
	char err[512] = "";
	ck_assert_msg(bind_many(dt, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
	const cpu_kernel *ck = cpu_kernel_of(b.a.kernel);
	const kernel_array *o = &b.a.v[LM_PGRAM].arr;
	const size_t items = ck->items(&b.a), m = in.m;
	ck_assert_uint_eq(items, in.nb * m);
	ck_assert_int_eq(lm_cpu_uses_nufft(&b.a), 1);
	ck_assert_uint_eq(ck->verdict(&b.a), 0);
	ls_poison(o);
	const size_t cuts[] = {0, 7, m + 3, 3 * m - 1, 3 * m, items - 2, items};
	for (size_t c = sizeof(cuts) / sizeof(cuts[0]) - 1; c > 0; c--)
		ck->run(&b.a, cuts[c - 1], cuts[c]);
	const int amp = in.normalize == LS_AMPLITUDE;
	double *re = malloc(items * sizeof(double)), *im = malloc(items * sizeof(double));
	double *dre = malloc(items * sizeof(double)), *dim = malloc(items * sizeof(double));
	double *nre = malloc(items * sizeof(double)), *nim = malloc(items * sizeof(double));
	rows_of(o, in.nb, m, amp, re, im);

	/* the direct reference over the same table (ls_many_cpu); and
	 * ls_many_nufft_cpu's results, the kernel's bit for bit where its
	 * ranges were whole series */
	ls_many p;
	lm_params(&b.a, &p);
	ck_assert(p.eps == in.eps);
	ls_series *s = calloc(in.nb, sizeof(ls_series));
	const size_t es = gpud_dtype_size(dt), oes = gpud_dtype_size(o->dtype);
	for (size_t i = 0; i < in.nb; i++) {
		s[i].x = (char *)b.mem[0] + in.off[i] * es;
		s[i].y = (char *)b.mem[1] + in.off[i] * es;
		s[i].w = in.w ? (char *)b.mem[2] + in.off[i] * es : NULL;
		s[i].out = (char *)o->data + i * m * oes;
		s[i].n = in.off[i + 1] - in.off[i];
	}
	unsigned v[7];
	ls_poison(o);
	ls_many_nufft_cpu(&p, s, 0, in.nb, v);
	for (size_t i = 0; i < in.nb; i++)
		ck_assert_uint_eq(v[i], 0);
	rows_of(o, in.nb, m, amp, nre, nim);
	for (size_t i = 3; i < in.nb - 1; i++) /* series 3 to 5 were one range each */
		for (size_t k = i * m; k < (i + 1) * m; k++)
			ck_assert_msg(
				nre[k] == re[k] && nim[k] == im[k],
				"series %zu frequency %zu: ls_many_nufft_cpu %.17g, the kernel "
				"%.17g",
				i, k - i * m, nre[k], re[k]);
	ls_poison(o);
	ls_many_cpu(&p, s, 0, in.nb, v);
	rows_of(o, in.nb, m, amp, dre, dim);
	for (size_t i = 0; i < in.nb; i++) {
		double e = ls_rel_err(m, re + i * m, im + i * m, dre + i * m, dim + i * m);
		ck_assert_msg(e <= eps,
			      "%s mode %d series %zu (n=%lld, nf=%zu): nufft vs direct %.3g > eps "
			      "%.3g",
			      gpud_dtype_name(dt), _i >> 1, i, (long long)s[i].n, m, e, eps);
	}

	/* one series' bad weights: the verdict names it, the NUFFT leaves its
	 * row unwritten in ls_many_nufft_cpu, the others as before */
	if (in.w) {
		const size_t bad = 1 + (size_t)ls_uniform(0, (double)(in.nb - 1));
		const size_t at = (size_t)in.off[bad] + (size_t)(s[bad].n / 2);
		if (dt == GPUD_F32)
			((float *)b.mem[2])[at] = -1.0f;
		else
			((double *)b.mem[2])[at] = -1.0;
		unsigned code = ck->verdict(&b.a);
		ck_assert_uint_eq(code & 7u, LS_BAD_WEIGHT);
		ck_assert_uint_eq(code >> LM_VERDICT_SHIFT, bad + 1);
		kernel_sample_poison(o->dtype, o->data, o->count);
		ls_many_nufft_cpu(&p, s, 0, in.nb, v);
		for (size_t i = 0; i < in.nb; i++) {
			ck_assert_uint_eq(v[i], i == bad ? LS_BAD_WEIGHT : 0);
			for (size_t k = i * m; k < (i + 1) * m; k++) {
				if (i == bad)
					ck_assert(kernel_sample_is_poison(o->dtype, o->data, k));
				else
					ck_assert(ls_get(o, amp ? 2 * k : k) == nre[k] &&
						  (!amp || ls_get(o, 2 * k + 1) == nim[k]));
			}
		}
	}
	free(s);
	free(re);
	free(im);
	free(dre);
	free(dim);
	free(nre);
	free(nim);
	unbind_many(&b);
	free_in(&in);
}
END_TEST

/* method=auto: the cpu's cost model for the average series; arrays and small
 * grids direct (bit for bit), a long grid the NUFFT (to eps). */
START_TEST(test_many_auto)
{
	many_in in;
	seed();
	char why[512];
	const int fftw = ls_nufft_cpu_available(why, sizeof(why));
	/* a grid of 30000 over series of 400 samples: the NUFFT */
	make_gapped(&in, 3, 800, 1, 30000);
	many_bound b;
	char err[512] = "";
	ck_assert_msg(bind_many(GPUD_F64, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(lm_cpu_uses_nufft(&b.a), fftw);
	const cpu_kernel *ck = cpu_kernel_of(b.a.kernel);
	const kernel_array *o = &b.a.v[LM_PGRAM].arr;
	const size_t items = ck->items(&b.a);
	ls_poison(o);
	ck->run(&b.a, 0, items);
	double *re = malloc(items * sizeof(double)), *dre = malloc(items * sizeof(double));
	double *im = calloc(items, sizeof(double));
	rows_of(o, in.nb, in.m, 0, re, im);
	ls_poison(o);
	in.method = "direct";
	unbind_many(&b);
	ck_assert_msg(bind_many(GPUD_F64, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(lm_cpu_uses_nufft(&b.a), 0);
	ck->run(&b.a, 0, items);
	rows_of(&b.a.v[LM_PGRAM].arr, in.nb, in.m, 0, dre, im);
	for (size_t i = 0; i < in.nb; i++)
		ck_assert(ls_rel_err(in.m, re + i * in.m, im, dre + i * in.m, im) <= 1e-9);
	unbind_many(&b);
	free_in(&in);
	free(re);
	free(dre);
	free(im);
	/* a short grid: direct; an array: direct */
	make_gapped(&in, 3, 100, 0, 100);
	ck_assert_msg(bind_many(GPUD_F64, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(lm_cpu_uses_nufft(&b.a), 0);
	unbind_many(&b);
	free_in(&in);
	make_in(&in, 3, 800, 0, 0, 30000);
	ck_assert_msg(bind_many(GPUD_F64, &in, 0, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(lm_cpu_uses_nufft(&b.a), 0);
	unbind_many(&b);
	free_in(&in);
}
END_TEST

static void refuses(gpud_dtype dt, const many_in *in, size_t off_n, const char *want)
{
	many_bound b;
	char err[512] = "";
	ck_assert_int_eq(bind_many(dt, in, off_n, &b, err, sizeof(err)), -1);
	ck_assert_str_eq(err, want);
	unbind_many(&b);
}

/* Each of check's refusals, word for word. */
START_TEST(test_many_check)
{
	many_in in;
	seed();
	make_in(&in, 3, 5, 1, 0, 4);
	refuses(GPUD_F64, &in, 1,
		"lombscargle_many: offsets must hold B + 1 >= 2 values (0, the end of each "
		"series), got 1");
	in.legacy = 1;
	refuses(GPUD_F64, &in, 0,
		"lombscargle_many: legacy=true (scipy <= 1.14) has no weights; leave out legacy "
		"for today's scipy");
	free(in.w);
	in.w = NULL;
	in.floating_mean = 1;
	refuses(GPUD_F64, &in, 0,
		"lombscargle_many: legacy=true (scipy <= 1.14) has no floating_mean=true; leave "
		"out legacy for today's scipy");
	in.floating_mean = 0;
	in.normalize = LS_AMPLITUDE;
	refuses(GPUD_F64, &in, 0,
		"lombscargle_many: legacy=true (scipy <= 1.14) has no normalize=amplitude; leave "
		"out legacy for today's scipy");
	in.legacy = 0;
	in.normalize = LS_POWER;

	/* more series than samples */
	int64_t *off = in.off;
	size_t nb = in.nb;
	in.off = calloc(in.t + 2, sizeof(int64_t));
	in.nb = in.t + 1;
	char want[512];
	snprintf(want, sizeof(want),
		 "lombscargle_many: offsets gives %zu series but x has only %zu samples (each "
		 "series needs at least one)",
		 in.t + 1, in.t);
	refuses(GPUD_F64, &in, 0, want);
	free(in.off);
	in.off = off;
	in.nb = nb;

	/* the grid: missing parts, nf's range, both ways at once, method=nufft */
	const kernel_def *k = lm_kernel();
	many_bound b;
	char err[512] = "";
	void *x = ls_convert(GPUD_F64, in.x, in.t);
	struct {
		int f0, df, nf, freqs;
		int64_t nfv;
		const char *method, *want;
	} cases[] = {
		{0, 0, 0, 0, 0, NULL,
		 "lombscargle_many: missing the frequencies: give freqs (an array) or the grid "
		 "f0, df, nf"},
		{1, 0, 1, 0, 5, NULL,
		 "lombscargle_many: the grid needs f0, df and nf; 'df' is missing"},
		{1, 1, 1, 0, 0, NULL, "lombscargle_many: nf must be between 1 and 2^40, got 0"},
		{1, 1, 1, 1, 5, NULL,
		 "lombscargle_many: give the frequencies as freqs or as the grid f0, df, nf, not "
		 "both"},
		{0, 0, 0, 1, 0, "nufft",
		 "lombscargle_many: method=nufft needs the uniform grid f0, df, nf; got the "
		 "array freqs (use method=direct or auto for arrays)"},
		{1, 1, 1, 0, (1ll << 29) + 1, "nufft",
		 "lombscargle_many: method=nufft takes at most 2^29 frequencies, got "
		 "nf=536870913 (use method=direct, or split the grid)"},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		memset(&b, 0, sizeof(b));
		b.a.kernel = k;
		ls_bind_array(k, &b.a, LM_X, GPUD_F64, x, in.t);
		ls_bind_array(k, &b.a, LM_Y, GPUD_F64, x, in.t);
		ls_bind_array(k, &b.a, LM_OFFSETS, GPUD_I64, in.off, in.nb + 1);
		if (cases[c].f0)
			ls_bind_scalar(k, &b.a, LM_F0, KGIVEN_F64, 0, 0, 0.1);
		if (cases[c].df)
			ls_bind_scalar(k, &b.a, LM_DF, KGIVEN_F64, 0, 0, 0.1);
		if (cases[c].nf)
			ls_bind_scalar(k, &b.a, LM_NF, KGIVEN_I64, 0, cases[c].nfv, 0);
		if (cases[c].freqs)
			ls_bind_array(k, &b.a, LM_FREQS, GPUD_F64, x, 2);
		if (cases[c].method)
			ck_assert(kernel_bind_text(k, &k->params[LM_METHOD], cases[c].method,
						   &b.a.v[LM_METHOD], err, sizeof(err)) == 0);
		ck_assert_msg(kernel_args_finish(&b.a, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(k->check(&b.a, err, sizeof(err)), -1);
		ck_assert_str_eq(err, cases[c].want);
	}
	/* eps's range, by dtype */
	in.method = "nufft";
	in.eps = 1e-15;
	free(in.f);
	in.f = NULL;
	in.f0 = 0.1, in.df = 0.01;
	refuses(GPUD_F64, &in, 0,
		"lombscargle_many: eps must be between 1e-14 and 0.1 for float64, got 1e-15");
	in.eps = 1e-7;
	refuses(GPUD_F32, &in, 0,
		"lombscargle_many: eps must be between 1e-06 and 0.1 for float32, got 1e-07");
	in.eps = 0.5;
	refuses(GPUD_F64, &in, 0,
		"lombscargle_many: eps must be between 1e-14 and 0.1 for float64, got 0.5");
	in.eps = 0;
	in.method = NULL;
	/* lengths and dtypes */
	memset(&b, 0, sizeof(b));
	b.a.kernel = k;
	float *yf = ls_convert(GPUD_F32, in.y, in.t);
	ls_bind_array(k, &b.a, LM_X, GPUD_F64, x, in.t);
	ls_bind_array(k, &b.a, LM_Y, GPUD_F32, yf, in.t);
	ls_bind_array(k, &b.a, LM_OFFSETS, GPUD_I64, in.off, in.nb + 1);
	ls_bind_scalar(k, &b.a, LM_F0, KGIVEN_F64, 0, 0, 0.1);
	ls_bind_scalar(k, &b.a, LM_DF, KGIVEN_F64, 0, 0, 0.1);
	ls_bind_scalar(k, &b.a, LM_NF, KGIVEN_I64, 0, 3, 0);
	ck_assert_msg(kernel_args_finish(&b.a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(k->check(&b.a, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "lombscargle_many: x, y, freqs and weights must have one dtype: 'y' "
			      "is float32 but 'x' is float64");
	ls_bind_array(k, &b.a, LM_Y, GPUD_F64, x, in.t - 1);
	ck_assert_int_eq(k->check(&b.a, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "lombscargle_many: x and y must have the same length (T, every series "
		 "concatenated), got %zu and %zu",
		 in.t, in.t - 1);
	ck_assert_str_eq(err, want);
	ls_bind_array(k, &b.a, LM_Y, GPUD_F64, x, in.t);
	ls_bind_array(k, &b.a, LM_WEIGHTS, GPUD_F64, x, 2);
	ck_assert_int_eq(k->check(&b.a, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "lombscargle_many: weights must have the length of x, got 2 for %zu samples",
		 in.t);
	ck_assert_str_eq(err, want);
	/* offsets' dtype is the binding's */
	kernel_array od = ls_array1(GPUD_I32, in.off, in.nb + 1);
	ck_assert_int_eq(kernel_bind_array(k, &k->params[LM_OFFSETS], &od, &b.a.v[LM_OFFSETS], err,
					   sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lombscargle_many: argument 'offsets' must be int64 1-d array, got "
			      "int32");
	free(yf);
	free(x);
	free_in(&in);
}
END_TEST

void lombscargle_many_tcases(Suite *s)
{
	TCase *tc = tcase_create("many");
	tcase_add_loop_test(tc, test_many_equals_singles, 0, 4 * 14);
	tcase_add_test(tc, test_many_cpu_verdicts);
	tcase_add_test(tc, test_many_bad_offsets);
	tcase_add_test(tc, test_many_check);
	tcase_add_loop_test(tc, test_many_nufft, 0, 2 * 9);
	tcase_add_test(tc, test_many_auto);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
}
