/*
 * tests/unit/test_config.h — what the config unit tests (test_config.c,
 * test_config_listen.c, test_config_files.c) share: the name the texts are
 * loaded as, the message checks, a temporary file, and the tests each file
 * adds to config_suite's "errors" test case. Each test runs single-threaded in
 * its own process (Check's fork mode).
 */
#ifndef GPUD_TESTS_UNIT_TEST_CONFIG_H
#define GPUD_TESTS_UNIT_TEST_CONFIG_H

#include <check.h>
#include <stddef.h>
#include <string.h>

#define NAME "test.conf"

/* Asserts that err contains want. */
#define assert_has(err, want)                                                                      \
	ck_assert_msg(strstr((err), (want)) != NULL, "message '%s' lacks '%s'", (err), (want))

/* Asserts that err begins with "NAME:line: ". */
void assert_where(const char *err, const char *name, int line);
/* Loads text into a fresh config and expects it to fail at line. */
void expect_load_error(const char *text, int line, char *err, size_t errlen);
/* A temporary file of text; its path in path. */
void write_temp(char *path, size_t len, const char *text);

/* The tests of test_config_listen.c and test_config_files.c, in the suite's order. */
void config_listen_tests(TCase *tc);
void config_files_tests(TCase *tc);

#endif
