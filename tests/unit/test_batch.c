/*
 * tests/unit/test_batch.c — dynamic batching's parts on their own: the
 * batcher's groups (daemon/batch.h: keys, batch_max, leaving a group, the
 * oldest first, stopping, the delay's timer on a real loop), which
 * lombscargle runs may join a batch and what they share
 * (kernels/lombscargle/batch_kernel.h), and lombscargle_batch's cpu entry
 * against lombscargle's own, series by series, a bad series failing alone.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "daemon/batch.h"
#include "daemon/loop.h"
#include "kernels/core/cpu_kernel.h"
#include "kernels/core/sample.h"
#include "kernels/lombscargle/batch_kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "tests/unit/suites.h"

extern const kernel_def kernel_lombscargle;

/* --- the batcher ------------------------------------------------------------------------- */

typedef struct item {
	batch_item it;
	char name[8];
} item;

static uv_loop_t loop;
static batcher b;
static char flushed[256]; /* "a1 a2 | b1 |": each flush's items, in order */
static int nflush;

static void on_flush(void *arg, batch_item *head, size_t n)
{
	size_t seen = 0;
	ck_assert_ptr_eq(arg, &b);
	for (batch_item *it = head; it; it = it->next, seen++) {
		ck_assert_ptr_null(it->group);
		strcat(flushed, ((item *)it)->name);
		strcat(flushed, " ");
	}
	ck_assert_uint_eq(seen, n);
	strcat(flushed, "| ");
	nflush++;
}

static void setup(void)
{
	loop_thread_set();
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	batcher_init(&b, &loop, on_flush, &b);
	flushed[0] = '\0';
	nflush = 0;
}

static void teardown(void)
{
	batcher_close(&b);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}

static int add(item *x, const char *name, uint64_t key, uint64_t delay_us, size_t max)
{
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->it.key.w[0] = key;
	return batcher_add(&b, &x->it, delay_us, max);
}

START_TEST(test_groups_by_key_and_flush_at_max)
{
	item x[6];
	ck_assert(add(&x[0], "a1", 7, 60000000, 3));
	ck_assert(add(&x[1], "b1", 8, 60000000, 3));
	ck_assert(add(&x[2], "a2", 7, 60000000, 3));
	ck_assert_int_eq(nflush, 0);
	ck_assert_uint_eq(b.pending, 3);
	ck_assert(add(&x[3], "a3", 7, 60000000, 3)); /* the third of key 7: its group goes */
	ck_assert_str_eq(flushed, "a1 a2 a3 | ");
	ck_assert_uint_eq(b.pending, 1);
	ck_assert(add(&x[4], "a4", 7, 60000000, 3)); /* a new group of key 7 */
	ck_assert(add(&x[5], "b2", 8, 60000000, 3));
	ck_assert_uint_eq(b.pending, 3);
	batcher_flush_all(&b); /* the oldest group first */
	ck_assert_str_eq(flushed, "a1 a2 a3 | b1 b2 | a4 | ");
	ck_assert_uint_eq(b.pending, 0);
	ck_assert_ptr_null(b.groups);
}
END_TEST

START_TEST(test_remove_leaves_the_group)
{
	item x[4];
	add(&x[0], "a1", 1, 60000000, 3);
	add(&x[1], "a2", 1, 60000000, 3);
	ck_assert_int_eq(batcher_remove(&b, &x[0].it), 1);
	ck_assert_int_eq(batcher_remove(&b, &x[0].it), 0); /* not waiting any more */
	ck_assert_uint_eq(b.pending, 1);
	add(&x[2], "a3", 1, 60000000, 3);
	add(&x[3], "a4", 1, 60000000, 3); /* three again: a2 a3 a4 */
	ck_assert_str_eq(flushed, "a2 a3 a4 | ");
	ck_assert_int_eq(batcher_remove(&b, &x[3].it), 0); /* flushed: no longer its to take */
	add(&x[0], "b1", 2, 60000000, 3);
	ck_assert_int_eq(batcher_remove(&b, &x[0].it), 1); /* the last one: the group closes */
	ck_assert_ptr_null(b.groups);
	ck_assert_uint_eq(b.pending, 0);
}
END_TEST

START_TEST(test_stop_flushes_and_refuses)
{
	item x[3];
	add(&x[0], "a1", 1, 60000000, 8);
	add(&x[1], "b1", 2, 60000000, 8);
	batcher_stop(&b);
	ck_assert_str_eq(flushed, "a1 | b1 | ");
	ck_assert_int_eq(add(&x[2], "a2", 1, 60000000, 8), 0); /* runs alone */
	ck_assert_ptr_null(x[2].it.group);
	ck_assert_uint_eq(b.pending, 0);
}
END_TEST

/* The delay's timer flushes a group that never fills: the loop runs until
 * it fires (the timer, unreferenced in gpud, is referenced here). */
START_TEST(test_delay_flushes_on_the_loop)
{
	item x[3];
	add(&x[0], "a1", 1, 2000, 8);
	add(&x[1], "a2", 1, 2000, 8);
	add(&x[2], "b1", 2, 60000000, 8);
	uv_ref((uv_handle_t *)&b.timer);
	while (nflush == 0)
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_str_eq(flushed, "a1 a2 | ");
	ck_assert_uint_eq(b.pending, 1); /* b1's minute has not passed */
	ck_assert(uv_is_active((uv_handle_t *)&b.timer));
	batcher_flush_all(&b);
	ck_assert(!uv_is_active((uv_handle_t *)&b.timer));
}
END_TEST

/* --- which runs join ------------------------------------------------------------------- */

static int shared_of(const char *text, gpud_dtype dt, ls_many *p, long long *work)
{
	kernel_sample s;
	char err[512], why[128];
	int rv = kernel_sample_build(&kernel_lombscargle, text, dt, &s, err, sizeof(err));
	ck_assert_msg(rv == 0, "%s: %s", text, err);
	rv = ls_batch_shared(&s.a, p, work, why, sizeof(why));
	kernel_sample_free(&s);
	return rv;
}

START_TEST(test_which_runs_join)
{
	ls_many p, q;
	long long work;
	ck_assert_int_eq(shared_of("x=rand:50:0:10 y=rand:50:-1:1 f0=0.1 df=0.05 nf=30", GPUD_F64,
				   &p, &work),
			 0);
	ck_assert_int_eq(work, 50 * 30);
	ck_assert_int_eq(p.dtype, GPUD_F64);
	ck_assert_int_eq(p.m, 30);
	ck_assert(p.f0 == 0.1 && p.df == 0.05 && p.freqs == NULL);
	ck_assert_int_eq(p.no_weights, 0); /* a batch may mix weights and none */
	/* other options: joins, but shares other parameters */
	ck_assert_int_eq(shared_of("x=rand:20:0:10 y=rand:20:-1:1 f0=0.1 df=0.05 nf=30 "
				   "precenter=true normalize=amplitude method=direct",
				   GPUD_F32, &q, &work),
			 0);
	ck_assert_int_eq(q.dtype, GPUD_F32);
	ck_assert_int_eq(q.precenter, 1);
	ck_assert_int_eq(q.normalize, LS_AMPLITUDE);
	ck_assert_int_eq(shared_of("x=rand:20:0:10 y=rand:20:-1:1 f0=0.1 df=0.05 nf=30 "
				   "floating_mean=true legacy=false",
				   GPUD_F64, &q, &work),
			 0);
	ck_assert_int_eq(q.floating_mean, 1);
	/* a freqs array, or nufft: alone */
	ck_assert_int_eq(shared_of("x=rand:20:0:10 y=rand:20:-1:1 freqs=rand:30:0.1:3", GPUD_F64,
				   &q, &work),
			 -1);
	ck_assert_int_eq(shared_of("x=rand:20:0:10 y=rand:20:-1:1 f0=0.1 df=0.05 nf=30 "
				   "method=nufft",
				   GPUD_F64, &q, &work),
			 -1);
}
END_TEST

/* --- lombscargle_batch's cpu entry ------------------------------------------------------ */

START_TEST(test_batch_kernel_equals_lombscargle)
{
	static const char *const texts[] = {
		"x=rand:37:0:10 y=rand:37:-2:2 f0=0.2 df=0.03 nf=25 precenter=true",
		"x=rand:5:0:3 y=rand:5:-1:1 weights=rand:5:0.1:2 f0=0.2 df=0.03 nf=25 "
		"precenter=true",
		"x=rand:80:0:40 y=rand:80:-3:3 weights=rand:80:0.1:1 f0=0.2 df=0.03 nf=25 "
		"precenter=true",
	};
	enum { B = 3, M = 25 };
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	size_t es = gpud_dtype_size(dt);
	kernel_sample s[B];
	ls_series tab[B];
	unsigned verdicts[B];
	char err[512];
	ls_many p;
	long long work, max_n = 0;
	srand((unsigned)time(NULL) + (unsigned)_i);
	for (int i = 0; i < B; i++) {
		ck_assert_msg(kernel_sample_build(&kernel_lombscargle, texts[i], dt, &s[i], err,
						  sizeof(err)) == 0,
			      "%s", err);
		ck_assert_int_eq(ls_batch_shared(&s[i].a, &p, &work, err, sizeof(err)), 0);
		ls_batch_series(&s[i].a, &tab[i]);
		kernel_sample_poison(dt, s[i].a.v[LS_PGRAM].arr.data, M);
		if (tab[i].n > max_n)
			max_n = tab[i].n;
		verdicts[i] = 99;
	}
	/* series 1 gets a negative weight: it fails alone */
	if (dt == GPUD_F64)
		((double *)s[1].a.v[LS_WEIGHTS].arr.data)[2] = -0.5;
	else
		((float *)s[1].a.v[LS_WEIGHTS].arr.data)[2] = -0.5f;
	memset(verdicts, 0, sizeof(verdicts));
	kernel_args a;
	ls_batch_args(&p, tab, verdicts, B, max_n, &a);
	const cpu_kernel *ck = cpu_kernel_of(&kernel_lombscargle_batch);
	ck_assert_ptr_nonnull(ck);
	ck_assert_uint_eq(ck->items(&a), B);
	ck->run(&a, 0, 1); /* in two ranges, as the backend's chunks */
	ck->run(&a, 1, B);
	ck_assert_uint_eq(verdicts[0], 0);
	ck_assert_uint_eq(verdicts[1], LS_BAD_WEIGHT);
	ck_assert_uint_eq(verdicts[2], 0);
	for (int i = 0; i < B; i++) {
		void *got = s[i].a.v[LS_PGRAM].arr.data;
		if (i == 1) { /* left unwritten */
			for (int k = 0; k < M; k++)
				ck_assert(kernel_sample_is_poison(dt, got, (size_t)k));
			continue;
		}
		void *want = malloc((size_t)M * es);
		memcpy(want, got, (size_t)M * es);
		s[i].a.v[LS_PGRAM].arr.data = want;
		lombscargle_ref_run(&s[i].a, 0, M);
		s[i].a.v[LS_PGRAM].arr.data = got;
		ck_assert_msg(memcmp(got, want, (size_t)M * es) == 0,
			      "series %d: the batch differs from lombscargle's reference", i);
		free(want);
	}
	for (int i = 0; i < B; i++)
		kernel_sample_free(&s[i]);
}
END_TEST

Suite *batch_suite(void)
{
	Suite *su = suite_create("batch");
	TCase *tc = tcase_create("batcher");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_groups_by_key_and_flush_at_max);
	tcase_add_test(tc, test_remove_leaves_the_group);
	tcase_add_test(tc, test_stop_flushes_and_refuses);
	tcase_add_test(tc, test_delay_flushes_on_the_loop);
	suite_add_tcase(su, tc);
	tc = tcase_create("batch_kernel");
	tcase_add_test(tc, test_which_runs_join);
	tcase_add_loop_test(tc, test_batch_kernel_equals_lombscargle, 0, 2);
	suite_add_tcase(su, tc);
	return su;
}
