/*
 * tests/e2e/client_session.c — test case "client", part 1: one
 * libgpud-client client across gpud restarts (SIGTERM and SIGKILL, over
 * ipc:// and tcp://): the next call says hello again and works, handles from
 * before get GPUD_ESTALE, host memory is handed to the new gpud, a call
 * while gpud is down fails GPUD_EUNAVAILABLE naming the URL. The other parts
 * are client_threads.c and client_jobs.c; this file makes the test case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

/* Uploads n doubles, adds the buffer to itself with "add", downloads and checks 2*v. */
static void add_roundtrip(gpud_client *c, const double *v, size_t n)
{
	uint64_t sn = n;
	gpud_handle h;
	gpud_output o;
	size_t no;
	double got[64];
	ck_assert(n <= 64);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &sn, v, &h));
	gpud_arg a[] = {gpud_arg_buffer("x", h), gpud_arg_buffer("y", h)};
	LIB_OK(c, gpud_run(c, "add", a, 2, &o, 1, &no, NULL));
	ck_assert_uint_eq(no, 1);
	LIB_OK(c, gpud_download_range(c, o.handle, 0, got, n * sizeof(double)));
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(got[i] == 2 * v[i], "add[%zu] = %g, expected %g", i, got[i],
			      2 * v[i]);
	gpud_handle both[] = {h, o.handle};
	LIB_OK(c, gpud_free(c, both, 2));
}

/* A restart on the same socket: fresh calls work, old handles are STALE. */
static void across_restart(int hard)
{
	double v[16], got[16];
	uint64_t n = 16;
	gpud_handle h;
	for (int i = 0; i < 16; i++)
		v[i] = 0.25 * i - 1;
	gpud_client *c = lib_connect();
	uint64_t instance = gpud_server(c)->instance;
	ck_assert_uint_ne(instance, 0);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	ck_assert_uint_eq(h >> 48, instance >> 48); /* handles carry gpud's instance */
	double *host = gpud_has_shm(c) ? gpud_host_alloc(c, 1 << 20) : NULL;
	ck_assert_uint_eq(gpud_reconnects(c), 0);

	stop_gpud_now(hard);
	start_gpud_again();

	/* The next call says hello to the new gpud by itself. */
	gpud_daemon_status s;
	LIB_OK(c, gpud_status_get(c, &s));
	ck_assert_uint_eq(gpud_reconnects(c), 1);
	ck_assert_uint_ne(gpud_server(c)->instance, instance);
	ck_assert_uint_eq(s.buffers, 0);
	LIB_FAIL(c, gpud_download_range(c, h, 0, got, sizeof(got)), GPUD_ESTALE,
		 "from before gpud restarted");
	gpud_arg a[] = {gpud_arg_buffer("x", h), gpud_arg_buffer("y", h)};
	gpud_output o;
	size_t no;
	LIB_FAIL(c, gpud_run(c, "add", a, 2, &o, 1, &no, NULL), GPUD_ESTALE,
		 "argument 'x': handle");
	add_roundtrip(c, v, 16);
	if (host) { /* the region is handed to the new gpud on its first use */
		for (int i = 0; i < 16; i++)
			host[i] = v[i] * 3;
		gpud_handle hh;
		LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, host, &hh));
		LIB_OK(c, gpud_download_range(c, hh, 0, got, sizeof(got)));
		for (int i = 0; i < 16; i++)
			ck_assert(got[i] == v[i] * 3);
		memset(host, 0, 16 * sizeof(double));
		LIB_OK(c, gpud_download_range(c, hh, 0, host, 16 * sizeof(double)));
		ck_assert(host[5] == v[5] * 3);
		LIB_OK(c, gpud_free(c, &hh, 1));
		LIB_OK(c, gpud_host_free(c, host));
	}
	ck_assert_uint_eq(gpud_reconnects(c), 1);
	gpud_close(c);
}

START_TEST(test_restart_sigterm)
{
	across_restart(0);
}
END_TEST

START_TEST(test_restart_crash)
{
	across_restart(1);
}
END_TEST

/* gpud down: a call waits up to the timeout, then UNAVAILABLE with the URL; up again: works. */
START_TEST(test_outage)
{
	double v[4] = {1, 2, 3, 4};
	gpud_client *c = lib_connect();
	stop_gpud_now(0);
	gpud_set_timeout(c, 300);
	gpud_daemon_status s;
	LIB_FAIL(c, gpud_status_get(c, &s), GPUD_EUNAVAILABLE, e2e_gpud.url);
	LIB_FAIL(c, gpud_sync(c), GPUD_EUNAVAILABLE, "not reachable");
	start_gpud_again();
	gpud_set_timeout(c, 30000);
	add_roundtrip(c, v, 4);
	ck_assert_uint_ge(gpud_reconnects(c), 1);
	gpud_close(c);
}
END_TEST

#define TOKEN_CAROL "carol-5c2d9e0f1a7b3c4d"

/* Over tcp:// with a token: the same token is presented again after a crash. */
START_TEST(test_restart_tcp)
{
	static char url[64], conf[1200], tokens[700];
	double v[8] = {1, -2, 3, -4, 5, -6, 7, -8};
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", e2e_free_port());
	snprintf(tokens, sizeof(tokens), "%s/tokens-client-%d", base_dir, (int)getpid());
	write_text(tokens, "carol " TOKEN_CAROL "\n");
	chmod(tokens, 0600);
	snprintf(conf, sizeof(conf), "[gpud]\ntokens_file = %s\n", tokens);
	const char *extra[] = {"--listen", url, NULL};
	gpud_teardown(); /* the fixture's, for one that listens on tcp:// too */
	start_gpud(conf, extra, NULL);

	gpud_options o = {.url = url, .token = TOKEN_CAROL, .timeout_ms = 30000};
	gpud_client *c;
	gpud_status st = gpud_connect_opts(&o, &c);
	ck_assert_msg(st == GPUD_OK, "connect %s: %s", url, gpud_errmsg(c));
	ck_assert_str_eq(gpud_server(c)->tenant, "carol");
	uint64_t n = 8;
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));

	stop_gpud_now(1);
	start_gpud_again();

	double got[8];
	LIB_FAIL(c, gpud_download_range(c, h, 0, got, sizeof(got)), GPUD_ESTALE, "restarted");
	ck_assert_str_eq(gpud_server(c)->tenant, "carol");
	add_roundtrip(c, v, 8);
	ck_assert_uint_eq(gpud_reconnects(c), 1);
	gpud_close(c);
	unlink(tokens);
}
END_TEST

/* The new statuses have their own short text. */
START_TEST(test_status_texts)
{
	gpud_status all[] = {GPUD_ESTALE, GPUD_ECANCELED, GPUD_ENOSESSION, GPUD_EUNAVAILABLE};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		ck_assert_str_ne(gpud_strerror(all[i]), "unknown status");
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(gpud_strerror(all[i]), gpud_strerror(all[j]));
	}
}
END_TEST

TCase *e2e_client(void)
{
	TCase *tc = tcase_create("client");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_status_texts);
	tcase_add_test(tc, test_restart_sigterm);
	tcase_add_test(tc, test_restart_crash);
	tcase_add_test(tc, test_outage);
	tcase_add_test(tc, test_restart_tcp);
	client_threads_tests(tc);
	client_jobs_tests(tc);
	return tc;
}
