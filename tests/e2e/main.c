/*
 * tests/e2e/main.c — end-to-end tests: every test gets a real gpud of its own
 * (started by a checked fixture on a private ipc:// socket, stopped with
 * SIGTERM and required to exit 0), driven through libgpud-client, through the
 * gpuctl binary, and through a plain nng REQ socket speaking the wire format
 * by hand. The fixture and helpers are in fixture*.c, the tests in a file per
 * area (e2e.h lists them); this file makes the suite and runs it.
 *
 *   GPUD_BIN=/abs/gpud GPUCTL_BIN=/abs/gpuctl [GPUD_BACKEND=cpu|cuda|auto] e2e
 *
 * Works in fork mode (the default) and with CK_FORK=no (make test-valgrind).
 * Random inputs come from fixed seeds, so a failure reproduces.
 */
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

static Suite *e2e_suite(void)
{
	Suite *s = suite_create("e2e");
	suite_add_tcase(s, e2e_library());
	suite_add_tcase(s, e2e_sessions());
	suite_add_tcase(s, e2e_gpuctl());
	suite_add_tcase(s, e2e_no_libraries());
	suite_add_tcase(s, e2e_gpuctl_cli());
	suite_add_tcase(s, e2e_gpuctl_quota());
	suite_add_tcase(s, e2e_readme());
	suite_add_tcase(s, e2e_limits());
	suite_add_tcase(s, e2e_shutdown());
	suite_add_tcase(s, e2e_drain());
	suite_add_tcase(s, e2e_drain_grace());
	suite_add_tcase(s, e2e_tenants());
	suite_add_tcase(s, e2e_user_lookup());
	suite_add_tcase(s, e2e_stale());
	suite_add_tcase(s, e2e_faults());
	suite_add_tcase(s, e2e_concurrency());
	suite_add_tcase(s, e2e_ring());
	suite_add_tcase(s, e2e_ring_off());
	suite_add_tcase(s, e2e_lend());
	suite_add_tcase(s, e2e_claims());
	suite_add_tcase(s, e2e_claims_expiry());
	suite_add_tcase(s, e2e_call_into());
	suite_add_tcase(s, e2e_call_outputs());
	suite_add_tcase(s, e2e_notify());
	suite_add_tcase(s, e2e_client());
	suite_add_tcase(s, e2e_trace());
	suite_add_tcase(s, e2e_logs());
	suite_add_tcase(s, e2e_metrics());
	suite_add_tcase(s, e2e_batch());
	suite_add_tcase(s, e2e_tls_errors());
	suite_add_tcase(s, e2e_alias());
	suite_add_tcase(s, e2e_endpoints());
	suite_add_tcase(s, e2e_devices());
	suite_add_tcase(s, e2e_devices_lost());
	suite_add_tcase(s, e2e_fairness());
	suite_add_tcase(s, e2e_host_memory());
	suite_add_tcase(s, e2e_wedge());
	suite_add_tcase(s, e2e_health());
	suite_add_tcase(s, e2e_access());
	suite_add_tcase(s, e2e_wedged());
	suite_add_tcase(s, e2e_msg_quota());
	suite_add_tcase(s, e2e_reload());
	suite_add_tcase(s, e2e_hello());
	suite_add_tcase(s, e2e_memory());
	return s;
}

/* After the run: a directory left behind is a test that failed in fork mode
 * (no teardown ran); show its gpud log. */
static int show_leftover(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	size_t n = strlen(path);
	if (flag == FTW_F && ftw->level == 2 && n > 9 && !strcmp(path + n - 9, "/gpud.log"))
		harness_dump_file("gpud log of a failed test", path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "--raw-send"))
		return raw_send_main(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "--doomed"))
		return doomed_main(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "--as-uid"))
		return as_uid_main(atol(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "--access-as"))
		return access_as_main(atol(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "--lend-uid"))
		return lend_uid_main(atol(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "--claim-uid"))
		return claim_uid_main(atol(argv[2]), argv[3]);
	ssize_t sl = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (sl <= 0) {
		fprintf(stderr, "test_e2e: readlink /proc/self/exe: %s\n", strerror(errno));
		return 2;
	}
	self_path[sl] = '\0';

	gpud_bin = getenv("GPUD_BIN");
	gpuctl_bin = getenv("GPUCTL_BIN");
	backend_env = getenv("GPUD_BACKEND");
	if (backend_env == NULL || backend_env[0] == '\0')
		backend_env = "cpu";
	if (!gpud_bin || !gpuctl_bin || gpud_bin[0] != '/' || gpuctl_bin[0] != '/') {
		fprintf(stderr, "test_e2e: set GPUD_BIN and GPUCTL_BIN to absolute paths "
				"('make test-e2e' does)\n");
		return 2;
	}
	if (access(gpud_bin, X_OK) != 0 || access(gpuctl_bin, X_OK) != 0) {
		fprintf(stderr, "test_e2e: %s or %s is not executable\n", gpud_bin, gpuctl_bin);
		return 2;
	}
	/* The tests' directories live in it: other users reach their sockets through it. */
	char msg[512];
	if (harness_mkdtemp(base_dir, sizeof(base_dir), NULL, "gpud-e2e", msg, sizeof(msg)) != 0) {
		fprintf(stderr, "test_e2e: %s\n", msg);
		return 2;
	}
	chmod(base_dir, 0755);
	signal(SIGPIPE, SIG_IGN);
	printf("e2e: gpud %s, gpuctl %s, backend %s, work in %s\n", gpud_bin, gpuctl_bin,
	       backend_env, base_dir);
	fflush(stdout);

	/* Cases that set no limit of their own get this one, not Check's 4 s: a
	 * loaded 2-core machine (CI's, make test-stress) needs more, and a hang
	 * still ends. */
	setenv("CK_DEFAULT_TIMEOUT", "120", 0);
	double t0 = harness_now_s();
	SRunner *sr = srunner_create(e2e_suite());
	srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY=verbose lists every test */
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	nftw(base_dir, show_leftover, 16, FTW_PHYS);
	harness_rm_tree(base_dir);
	nng_fini(); /* with CK_FORK=no the tests ran here: no threads left for valgrind */
	printf("e2e: %.1f s\n", harness_now_s() - t0);
	return failed == 0 ? 0 : 1;
}
