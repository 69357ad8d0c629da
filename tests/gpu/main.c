/*
 * tests/gpu/main.c — the GPU suite, through a real gpud on the cuda backend:
 * every kernel's GPU implementation against its CPU reference (the cpu
 * backend's code, linked in), each by its folder's test
 * (kernels/<folder>/gpu_test_<folder>.c, listed from kernels/kernels.def),
 * then the pool, the copy paths, overlapping sessions and custom kernels.
 * Inputs are fresh random data at several sizes (the seed is printed);
 * outputs are pre-filled with a NaN of a payload no arithmetic produces, so
 * an element the kernel never wrote is caught even where NaN is a legitimate
 * result.
 *
 * The gpud fixture is in fixture.c, each test case in a file of its own
 * (suite.h lists them); this file makes the suite, in this order, and runs it.
 *
 * Needs a GPU: `make test-gpu`. GPUD_BIN names the daemon.
 */
#include <check.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

#include "tests/gpu/gpu_test.h"
#include "tests/gpu/suite.h"

int main(void)
{
	if (getrandom(&rng_state, sizeof(rng_state), 0) != sizeof(rng_state))
		rng_state = (uint64_t)time(NULL);
	Suite *s = suite_create("gpu");
	suite_add_tcase(s, kernels_tcase());
	suite_add_tcase(s, pool_tcase());
	suite_add_tcase(s, copies_tcase());
	suite_add_tcase(s, custom_tcase());
	suite_add_tcase(s, isolation_tcase());
	suite_add_tcase(s, devices_tcase());
	suite_add_tcase(s, batch_tcase());
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
