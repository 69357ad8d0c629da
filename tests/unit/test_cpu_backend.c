/*
 * tests/unit/test_cpu_backend.c — the cpu backend's copies, runs and syncs
 * driven on a loop of the test's own (daemon/backend/cpu.c): small ones
 * done on the loop, large ones on the pool, every completion reported from
 * the loop and never from inside the call, with the same bytes either way
 * (and with GPUD_CPU_INLINE=0); work a completion starts; the handle closed
 * with the backend. The test's thread is the loop thread.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "daemon/backend/backend.h"
#include "daemon/config.h"
#include "daemon/hostmem.h"
#include "daemon/loop.h"
#include "kernels/core/kernel.h"
#include "tests/unit/suites.h"

extern const backend_ops backend_cpu_ops;

/* Fresh inputs each run: xorshift64* seeded from the clock. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static uint64_t fresh_seed(void)
{
	return (uv_hrtime() * 0x9e3779b97f4a7c15ull) | 1;
}

typedef struct fixture {
	uv_loop_t loop;
	hostmem host;
	gpud_config cfg;
	gpud_backend b;
} fixture;

static void open_backend(fixture *f, const char *inline_env)
{
	char err[256] = "";
	if (inline_env)
		setenv("GPUD_CPU_INLINE", inline_env, 1);
	else
		unsetenv("GPUD_CPU_INLINE");
	loop_thread_set();
	ck_assert_int_eq(uv_loop_init(&f->loop), 0);
	hostmem_init(&f->host, 1ull << 30);
	config_defaults(&f->cfg);
	f->cfg.cpu_threads = 2;
	ck_assert_msg(backend_open(&f->b, &f->loop, &backend_cpu_ops, &f->cfg, &f->host, 0, err,
				   sizeof(err)) == 0,
		      "open: %s", err);
	ck_assert_msg(backend_start(&f->b, &f->cfg, err, sizeof(err)) == 0, "start: %s", err);
}

/* The backend's handle goes with it: the loop closes with nothing left. */
static void close_backend(fixture *f)
{
	backend_close(&f->b);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&f->loop), 0);
	config_free(&f->cfg);
	unsetenv("GPUD_CPU_INLINE");
}

typedef struct done_rec {
	int calls;
	dstatus status;
	int inside; /* set while the call that made the job runs */
	int from_inside;
} done_rec;

static void on_done(void *arg, dstatus status, const char *msg)
{
	done_rec *d = arg;
	(void)msg;
	d->calls++;
	d->status = status;
	d->from_inside |= d->inside;
}

static void wait_done(fixture *f, const done_rec *d, int calls)
{
	while (d->calls < calls)
		ck_assert_msg(uv_run(&f->loop, UV_RUN_ONCE) != 0 || d->calls >= calls,
			      "the loop ran dry with %d of %d completions", d->calls, calls);
}

static void fill_random(uint8_t *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng_next(seed);
}

/* An upload of len bytes: the bytes arrive, done comes once, from the loop. */
static void check_copy(fixture *f, size_t len, uint64_t *seed)
{
	char err[256] = "";
	uint8_t *src = malloc(len), *dst = malloc(len);
	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(dst);
	fill_random(src, len, seed);
	memset(dst, 0xa5, len);
	dst[0] = (uint8_t)~src[0]; /* poisoned, whatever src is */
	done_rec d = {.inside = 1};
	ck_assert_int_eq(backend_upload(&f->b, 0, dst, src, len, 0, on_done, &d, err, sizeof(err)),
			 ST_OK);
	d.inside = 0;
	ck_assert_int_eq(d.calls, 0);
	wait_done(f, &d, 1);
	ck_assert_int_eq(d.calls, 1);
	ck_assert_int_eq(d.status, ST_OK);
	ck_assert_int_eq(d.from_inside, 0);
	ck_assert_msg(memcmp(dst, src, len) == 0, "a %zu-byte copy differs", len);
	free(src);
	free(dst);
}

/* add over n float32: z = x + y, done once and from the loop. */
static void check_add(fixture *f, size_t n, uint64_t *seed)
{
	char err[256] = "";
	const kernel_def *k = kernel_find("add");
	float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)),
	      *z = malloc(n * sizeof(float));
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(y);
	ck_assert_ptr_nonnull(z);
	for (size_t i = 0; i < n; i++) {
		x[i] = (float)rng_unit(seed) - 0.5f;
		y[i] = (float)rng_unit(seed) * 4.0f;
		z[i] = -1e30f;
	}
	kernel_args ka;
	memset(&ka, 0, sizeof(ka));
	ka.kernel = k;
	float *in[2] = {x, y};
	for (int i = 0; i < 2; i++) {
		kernel_array ar = {
			.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .count = n, .data = in[i]};
		ck_assert_msg(kernel_bind_array(k, &k->params[i], &ar, &ka.v[i], err,
						sizeof(err)) == 0,
			      "%s", err);
	}
	ck_assert_msg(k->check(&ka, err, sizeof(err)) == 0, "%s", err);
	ka.v[2].arr =
		(kernel_array){.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .count = n, .data = z};
	ka.v[2].present = 1;
	int cancel = 0;
	double kernel_us = -1;
	done_rec d = {.inside = 1};
	ck_assert_int_eq(backend_run(&f->b, 0, k, &ka, NULL, &cancel, &kernel_us, NULL, on_done, &d,
				     err, sizeof(err)),
			 ST_OK);
	d.inside = 0;
	ck_assert_int_eq(d.calls, 0);
	wait_done(f, &d, 1);
	ck_assert_int_eq(d.status, ST_OK);
	ck_assert_int_eq(d.from_inside, 0);
	ck_assert(kernel_us >= 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(z[i] == x[i] + y[i], "z[%zu] = %g, want %g", i, (double)z[i],
			      (double)(x[i] + y[i]));
	free(x);
	free(y);
	free(z);
}

static void check_all(const char *inline_env)
{
	fixture f;
	uint64_t seed = fresh_seed();
	open_backend(&f, inline_env);
	check_copy(&f, 1000, &seed);     /* on the loop, when inline */
	check_copy(&f, 64 << 10, &seed); /* the largest done on the loop */
	check_copy(&f, 3 << 20, &seed);  /* on the pool */
	check_add(&f, 1000, &seed);      /* a tiny run */
	check_add(&f, 1 << 20, &seed);   /* a run in chunks on the pool */
	char err[256] = "";
	done_rec d = {.inside = 1};
	ck_assert_int_eq(backend_sync(&f.b, 0, on_done, &d, err, sizeof(err)), ST_OK);
	d.inside = 0;
	ck_assert_int_eq(d.calls, 0);
	wait_done(&f, &d, 1);
	ck_assert_int_eq(d.status, ST_OK);
	ck_assert_int_eq(d.from_inside, 0);
	close_backend(&f);
}

START_TEST(test_inline_and_pool)
{
	check_all(NULL);
}
END_TEST

START_TEST(test_pool_only)
{
	check_all("0");
}
END_TEST

/* A completion that starts more inline work: each done once, in order. */
typedef struct chain {
	fixture *f;
	uint8_t a[4096], b[4096], c[4096];
	int step;
	dstatus status;
} chain;

static void chain_done(void *arg, dstatus status, const char *msg)
{
	chain *ch = arg;
	char err[256] = "";
	(void)msg;
	ch->step++;
	if (status != ST_OK)
		ch->status = status;
	if (ch->step == 1) { /* a -> b done: now b -> c, from this completion */
		int step = ch->step;
		ck_assert_int_eq(backend_upload(&ch->f->b, 0, ch->c, ch->b, sizeof(ch->c), 0,
						chain_done, ch, err, sizeof(err)),
				 ST_OK);
		ck_assert_int_eq(ch->step, step); /* not from inside the call */
	}
}

START_TEST(test_completion_starts_work)
{
	fixture f;
	static chain ch;
	uint64_t seed = fresh_seed();
	char err[256] = "";
	open_backend(&f, NULL);
	memset(&ch, 0, sizeof(ch));
	ch.f = &f;
	fill_random(ch.a, sizeof(ch.a), &seed);
	memset(ch.b, 0x11, sizeof(ch.b));
	memset(ch.c, 0x22, sizeof(ch.c));
	ck_assert_int_eq(backend_upload(&f.b, 0, ch.b, ch.a, sizeof(ch.a), 0, chain_done, &ch, err,
					sizeof(err)),
			 ST_OK);
	ck_assert_int_eq(ch.step, 0);
	while (ch.step < 2)
		ck_assert(uv_run(&f.loop, UV_RUN_ONCE) != 0 || ch.step >= 2);
	ck_assert_int_eq(ch.step, 2);
	ck_assert_int_eq(ch.status, ST_OK);
	ck_assert(memcmp(ch.c, ch.a, sizeof(ch.a)) == 0);
	close_backend(&f);
}
END_TEST

Suite *cpu_backend_suite(void)
{
	Suite *s = suite_create("cpu_backend");
	TCase *tc = tcase_create("cpu_backend");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_inline_and_pool);
	tcase_add_test(tc, test_pool_only);
	tcase_add_test(tc, test_completion_starts_work);
	suite_add_tcase(s, tc);
	return s;
}
