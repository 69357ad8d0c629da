/*
 * kernels/core/test_kernel_table.c — unit tests of the tables made from
 * kernels/kernels.def: kernel_defs (table.c) found by name, their ids, what
 * every entry declares, and every backend's table (cpu_table.c, and with
 * CUDA cuda_table.c) against them by kernel_tables_check, whose refusals are
 * tested on tables of this file's own. Binding arguments against the
 * parameters is test_args.c's.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#ifdef GPUD_HAVE_CUDA
#include "kernels/core/cuda_kernel.h"
#endif
#include "tests/unit/suites.h"

static const kernel_def *ls(void)
{
	const kernel_def *k = kernel_find("lombscargle");

	ck_assert_ptr_nonnull(k);
	return k;
}

/* --- lookup --------------------------------------------------------------------------- */

START_TEST(test_find)
{
	size_t n = 0;
	const kernel_def *const *all = kernel_list(&n);
	const kernel_def *k = ls();
	const cpu_kernel *ck = cpu_kernel_of(k);

	ck_assert_str_eq(k->name, "lombscargle");
	ck_assert_int_eq(k->nparams, 14);
	ck_assert_ptr_nonnull(k->check);
	ck_assert_ptr_nonnull(ck);
	ck_assert_ptr_nonnull(ck->items);
	ck_assert_ptr_nonnull(ck->run);
	ck_assert_ptr_nonnull(ck->verdict);
	ck_assert_ptr_nonnull(k->verdict_message);
	ck_assert_ptr_null(kernel_find("nope"));
	ck_assert_ptr_null(kernel_find(""));
	ck_assert_ptr_null(kernel_find("LombScargle"));
	ck_assert_ptr_null(kernel_find("lombscargl"));
	ck_assert_ptr_null(kernel_find("lombscargle "));

	ck_assert_uint_ge(n, 1);
	int seen = 0;
	for (size_t i = 0; i < n; i++) {
		/* every entry is found by its own name, and names are unique */
		ck_assert_ptr_eq(kernel_find(all[i]->name), all[i]);
		ck_assert_int_le(all[i]->nparams, KERNEL_MAX_PARAMS);
		seen += all[i] == k;
		/* a kernel with verdicts has both halves */
		ck_assert_msg((cpu_kernel_of(all[i])->verdict == NULL) ==
				      (all[i]->verdict_message == NULL),
			      "kernel %s has half of the verdict functions", all[i]->name);
		for (int j = 0; j < all[i]->nparams; j++) {
			const kernel_param *p = &all[i]->params[j];
			/* words only for word scalars, which have at least two (false, true) */
			ck_assert_msg((p->stype == KSCALAR_WORD && p->role == KPARAM_SCALAR) ==
					      (p->words != NULL),
				      "%s.%s: words", all[i]->name, p->name);
			if (p->words)
				ck_assert_msg(p->words[0] && p->words[1],
					      "%s.%s: fewer than 2 words", all[i]->name, p->name);
			/* optional: an input, or a scalar without a default */
			if (p->optional)
				ck_assert_msg(p->role == KPARAM_IN || (p->role == KPARAM_SCALAR &&
								       p->default_value == NULL),
					      "%s.%s: optional", all[i]->name, p->name);
		}
	}
	ck_assert_int_eq(seen, 1);
}
END_TEST

/*
 * kernels/kernels.def made the tables: entry i has id i (KERNEL_ID_<name>),
 * names are unique, and every backend's table lists the same kernels in the
 * same order (the cpu table always, the CUDA table with CUDA); a user's
 * kernel is in none.
 */
START_TEST(test_ids)
{
	size_t n = 0, nc = 0;
	const kernel_def *const *all = kernel_list(&n);
	const cpu_kernel *const *cpu = cpu_kernel_list(&nc);
	const kernel_def custom = {.name = "mine", .id = KERNEL_ID_CUSTOM};
	char err[256] = "";

	ck_assert_uint_eq(n, KERNEL_COUNT);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(all[i]->id == (int)i, "kernel %s, entry %zu, has id %d", all[i]->name,
			      i, all[i]->id);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(all[i]->name, all[j]->name) != 0,
				      "entries %zu and %zu are both named %s", j, i, all[i]->name);
	}
	ck_assert_str_eq(all[KERNEL_ID_lombscargle]->name, "lombscargle");
	ck_assert_str_eq(all[KERNEL_ID_normal]->name, "normal");
	ck_assert_ptr_eq(kernel_find("histogram"), all[KERNEL_ID_histogram]);
	ck_assert_int_lt(KERNEL_ID_CUSTOM, 0);

	ck_assert_uint_eq(nc, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(cpu[i]->name, all[i]->name);
		ck_assert_ptr_eq(cpu_kernel_of(all[i]), cpu[i]);
	}
	ck_assert_ptr_null(cpu_kernel_of(&custom));
	ck_assert_msg(cpu_kernel_tables_check(err, sizeof(err)) == 0, "%s", err);
#ifdef GPUD_HAVE_CUDA
	const cuda_kernel *const *cs = cuda_kernel_list(&nc);
	ck_assert_uint_eq(nc, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(cs[i]->name, all[i]->name);
	ck_assert_msg(cuda_kernel_tables_check(err, sizeof(err)) == 0, "%s", err);
#endif
}
END_TEST

/*
 * kernel_tables_check against tables that disagree with kernel_list(): one
 * entry short, two entries swapped, a name misspelt. Each entry here is a
 * backend's entry as far as the check sees: a struct whose first member is
 * the name.
 */
typedef struct fake_entry {
	const char *name;
} fake_entry;

START_TEST(test_tables_check)
{
	static fake_entry entries[KERNEL_COUNT];
	static const void *table[KERNEL_COUNT];
	size_t n;
	const kernel_def *const *all = kernel_list(&n);
	char err[256] = "";

	ck_assert_int_ge(KERNEL_COUNT, 2);
	for (size_t i = 0; i < n; i++) {
		entries[i].name = all[i]->name;
		table[i] = &entries[i];
	}
	ck_assert_msg(kernel_tables_check("test", table, n, err, sizeof(err)) == 0, "%s", err);

	ck_assert_int_eq(kernel_tables_check("test", table, n - 1, err, sizeof(err)), -1);
	char want[128];
	snprintf(want, sizeof(want), "the kernel tables disagree: %zu kernels, %zu test kernels", n,
		 n - 1);
	ck_assert_str_eq(err, want);

	/* entries 0 and 1 swapped: the first difference is at 0 */
	entries[0].name = all[1]->name;
	entries[1].name = all[0]->name;
	ck_assert_int_eq(kernel_tables_check("test", table, n, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "the kernel tables disagree at entry 0: kernel %s (id 0), test kernel %s",
		 all[0]->name, all[1]->name);
	ck_assert_str_eq(err, want);
	/* a name misspelt */
	entries[0].name = all[0]->name;
	entries[1].name = "lombscargle2";
	ck_assert_int_eq(kernel_tables_check("test", table, n, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "the kernel tables disagree at entry 1: kernel %s (id 1), test kernel "
		 "lombscargle2",
		 all[1]->name);
	ck_assert_str_eq(err, want);
}
END_TEST

Suite *kernel_table_suite(void)
{
	Suite *s = suite_create("kernel_table");
	TCase *tc = tcase_create("lookup");

	tcase_add_test(tc, test_find);
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_tables_check);
	suite_add_tcase(s, tc);
	return s;
}
