/*
 * tests/gpu/kernels.c — test case "kernels": every kernel of the list has a
 * GPU test (its folder's kernels/<folder>/gpu_test_<folder>.c, from
 * kernels/kernels.def), each kernel against its CPU reference on a gpud of its
 * own, and the kernel variants in status. Runs on main's thread (CK_NOFORK).
 */
#include <check.h>
#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpud/client.h>

#include "kernels/core/kernel.h"
#include "tests/gpu/gpu_test.h"
#include "tests/harness.h"
#include "tests/gpu/suite.h"

/* --- every kernel has a GPU test ---------------------------------------------------- */

/* Each kernel's test: its folder's, given the kernel's name. */
static const struct {
	const char *kernel;
	void (*run)(gpud_client *c, const char *kernel);
} gpu_tests[] = {
#define KERNEL(name, folder) {#name, gpu_test_##folder},
#include "kernels/kernels.def"
};

/* Every kernel in the list has a GPU test. */
START_TEST(every_kernel_has_a_gpu_test)
{
	size_t nk;
	const kernel_def *const *ks = kernel_list(&nk);
	ck_assert_uint_ge(nk, 1);
	for (size_t i = 0; i < nk; i++) {
		size_t j;
		for (j = 0; j < sizeof(gpu_tests) / sizeof(gpu_tests[0]); j++)
			if (!strcmp(gpu_tests[j].kernel, ks[i]->name))
				break;
		ck_assert_msg(j < sizeof(gpu_tests) / sizeof(gpu_tests[0]),
			      "kernel %s has no GPU test", ks[i]->name);
	}
}
END_TEST

/* name is one of the comma-separated list's entries */
static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

/* Kernel _i of the list against its CPU reference, each on its own gpud (a
 * loop test: one kernel's failure leaves the others tested). */
START_TEST(kernel_against_reference)
{
	gpud_client *c;
	size_t nk;
	const kernel_def *const *ks = kernel_list(&nk);
	ck_assert_uint_lt((size_t)_i, nk);
	const char *name = ks[_i]->name;
	size_t j;
	for (j = 0; j < sizeof(gpu_tests) / sizeof(gpu_tests[0]); j++)
		if (!strcmp(gpu_tests[j].kernel, name))
			break;
	ck_assert_msg(j < sizeof(gpu_tests) / sizeof(gpu_tests[0]), "kernel %s has no GPU test",
		      name);

	/* GPU_TEST_KERNELS=a,b,...: only those kernels' tests (a device run
	 * after a change to one kernel); the others say they were left out */
	const char *only = getenv("GPU_TEST_KERNELS");
	if (only && only[0] && !in_list(only, name)) {
		printf("kernel %-16s left out (GPU_TEST_KERNELS=%s)\n", name, only);
		return;
	}
	start_gpud();
	ck_assert_msg(connect_timeout(&c) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_str_eq(gpud_server(c)->backend, "cuda");
	ck_assert_int_ge(gpud_server(c)->ndevices, 1);
	printf("kernel %s on %s (sm_%d%d), seed %016llx\n", name, gpud_server(c)->devices[0].name,
	       gpud_server(c)->devices[0].cc_major, gpud_server(c)->devices[0].cc_minor,
	       (unsigned long long)rng_state);
	double t0 = wall();
	gpu_tests[j].run(c, name);
	printf("kernel %-16s tested in %.2f s\n", name, wall() - t0);
	fflush(stdout);
	gpud_daemon_status *st = malloc(sizeof(*st));
	ck_assert(st != NULL);
	ck_assert(gpud_status_get(c, st) == GPUD_OK);
	ck_assert_msg(st->buffers == 0, "kernel %s's test left %llu buffers", name,
		      (unsigned long long)st->buffers);
	free(st);
	gpud_close(c);
	stop_gpud();
}
END_TEST

/* The first status brings the kernel variants; later ones leave them out on
 * the wire, and the library gives the same list. */
START_TEST(status_lists_kernel_variants)
{
	gpud_client *c;
	start_gpud();
	ck_assert_msg(connect_timeout(&c) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_daemon_status *st = malloc(2 * sizeof(*st));
	ck_assert(st != NULL);
	ck_assert(gpud_status_get(c, &st[0]) == GPUD_OK);
	ck_assert_uint_eq(st[0].buffers, 0);
	ck_assert_int_ge(st[0].nvariants, 2);
	ck_assert(gpud_status_get(c, &st[1]) == GPUD_OK);
	ck_assert_int_eq(st[1].nvariants, st[0].nvariants);
	ck_assert(memcmp(st[1].variants, st[0].variants,
			 (size_t)st[0].nvariants * sizeof(st[0].variants[0])) == 0);
	ck_assert_uint_gt(st[1].variants[0].registers, 0);
	free(st);
	gpud_close(c);
	stop_gpud();
}
END_TEST

TCase *kernels_tcase(void)
{
	TCase *tc = tcase_create("kernels");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, every_kernel_has_a_gpu_test);
	size_t nk;
	kernel_list(&nk);
	tcase_add_loop_test(tc, kernel_against_reference, 0, (int)nk);
	tcase_add_test(tc, status_lists_kernel_variants);
	return tc;
}
