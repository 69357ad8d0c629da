/*
 * tests/e2e/user_lookup.c — an ipc:// peer's user name is looked up on
 * nng's threads, never on gpud's loop, even with a user database slow
 * enough that the connection's first request reaches the loop before nng
 * has finished adding the connection (daemon/peers.h): gpud runs with
 * tests/nss/pw_record.c preloaded, every getpwuid_r recorded by thread and
 * made to take 300 ms. Three clients connect one after another; each is
 * the tenant its user names, and the record holds their lookups, none from
 * the main thread. (The delay only makes the overtaking sure where gpud
 * would get it wrong; the checks hold at any speed.)
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

START_TEST(test_user_lookup_off_the_loop)
{
	char so[PATH_MAX + 40], rec[PATH_MAX], e1[PATH_MAX + 64], e2[PATH_MAX + 64];
	test_library("libpw-record.so", "pw", so, sizeof(so), rec, sizeof(rec));
	snprintf(e1, sizeof(e1), "LD_PRELOAD=%s", so);
	snprintf(e2, sizeof(e2), "GPUD_PW_RECORD=%s", rec);
	/* A gpud built with AddressSanitizer (make test-asan) wants its runtime
	 * first among the libraries: the preload comes before it here (other
	 * builds ignore the variable). */
	static char asan[1024];
	const char *had = getenv("ASAN_OPTIONS");
	snprintf(asan, sizeof(asan), "ASAN_OPTIONS=%s%sverify_asan_link_order=0", had ? had : "",
		 had && had[0] ? ":" : "");
	const char *env[] = {e1, e2, "GPUD_PW_DELAY_MS=300", asan, NULL};
	start_gpud(NULL, NULL, env);

	/* the tenant a connection of this user gets: its name, else uid:N */
	char want[64], buf[4096];
	struct passwd pw, *res = NULL;
	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(want, sizeof(want), "%s", pw.pw_name);
	else
		snprintf(want, sizeof(want), "uid:%u", (unsigned)getuid());
	for (int i = 0; i < 3; i++) {
		gpud_client *c = lib_connect();
		ck_assert_str_eq(gpud_server(c)->tenant, want);
		gpud_daemon_status st;
		LIB_OK(c, gpud_status_get(c, &st));
		ck_assert_str_eq(st.tenant, want);
		gpud_close(c);
	}

	FILE *f = fopen(rec, "r");
	ck_assert_msg(f != NULL, "no lookup was recorded in %s", rec);
	char line[128];
	int on_loop = 0, elsewhere = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned uid;
		char who[16];
		ck_assert_msg(sscanf(line, "%15s %u", who, &uid) == 2, "malformed line '%s'", line);
		if (strcmp(who, "main") == 0)
			on_loop++;
		else
			elsewhere++;
	}
	fclose(f);
	ck_assert_msg(on_loop == 0, "%d user lookups on gpud's loop thread", on_loop);
	ck_assert_msg(elsewhere >= 3, "%d user lookups for 3 connections", elsewhere);
	unlink(rec);
}
END_TEST

TCase *e2e_user_lookup(void)
{
	TCase *tc = tcase_create("user_lookup");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_user_lookup_off_the_loop);
	return tc;
}
