/*
 * tests/unit/main.c — the unit test runner: every suite of tests/unit/suites.h
 * in one SRunner. Check's CK_FORK, CK_RUN_SUITE, CK_RUN_CASE and CK_VERBOSITY
 * environment variables apply as usual (the fork mode is left unset here).
 */
#include <stdlib.h>

#include "tests/unit/suites.h"

int main(void)
{
	/* Check's 4 s per test is below what a loaded 2-core machine (CI's, make
	 * test-stress, ASan) needs for the slower kernel cases; a hang still ends. */
	setenv("CK_DEFAULT_TIMEOUT", "120", 0);
	SRunner *sr = srunner_create(npy_suite());
	int failed;

	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, config_reload_suite());
	srunner_add_suite(sr, wire_suite());
	srunner_add_suite(sr, kernel_table_suite());
	srunner_add_suite(sr, kernel_args_suite());
	srunner_add_suite(sr, alias_suite());
	srunner_add_suite(sr, sample_suite());
	srunner_add_suite(sr, custom_suite());
	srunner_add_suite(sr, sched_suite());
	srunner_add_suite(sr, batch_suite());
	srunner_add_suite(sr, registry_suite());
	srunner_add_suite(sr, verbs_suite());
	srunner_add_suite(sr, verb_table_suite());
	srunner_add_suite(sr, ring_suite());
	srunner_add_suite(sr, log_suite());
	srunner_add_suite(sr, peek_suite());
	srunner_add_suite(sr, placement_suite());
	srunner_add_suite(sr, hello_guard_suite());
	srunner_add_suite(sr, peers_suite());
	srunner_add_suite(sr, hostmem_suite());
	srunner_add_suite(sr, drain_suite());
	srunner_add_suite(sr, client_endpoint_suite());
	srunner_add_suite(sr, endpoint_suite());
	srunner_add_suite(sr, cpu_backend_suite());
	/* each kernel folder's suite (kernels/kernels.def) */
#define KERNEL_FOLDER(folder) srunner_add_suite(sr, folder##_suite());
#include "kernels/kernels.def"
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
