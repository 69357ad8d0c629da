/*
 * tests/unit/test_config_reload.c — unit tests of what daemon/config.c gives a
 * reload (SIGHUP, daemon/reload.c): config_build (the file, then the command
 * line's options over it, then $GPUD_URL), config_changes (each option that
 * differs, live or needing a restart, as the table marks it) and
 * config_apply_live (live options and the tenant sections copied, the others
 * left as they run).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/log.h"
#include "tests/unit/suites.h"

static void load(gpud_config *c, const char *text)
{
	char err[512];
	config_defaults(c);
	ck_assert_msg(config_load_string(c, text, "t.conf", err, sizeof(err)) == 0, "%s", err);
}

/* What config_changes reported: "name=live" words, in order, space-separated. */
typedef struct seen {
	char text[1024];
} seen;

static void note(void *arg, const char *name, int live)
{
	seen *s = arg;
	size_t n = strlen(s->text);
	snprintf(s->text + n, sizeof(s->text) - n, "%s%s=%d", n ? " " : "", name, live);
}

static const char *changes(const gpud_config *cur, const gpud_config *next, seen *s)
{
	s->text[0] = '\0';
	config_changes(cur, next, note, s);
	return s->text;
}

START_TEST(test_same_config_no_changes)
{
	gpud_config a, b;
	seen s;
	const char *text = "[gpud]\nlisten = ipc:///tmp/a.sock\nadmin_tenants = root\n"
			   "[quota]\nkept_buffers = 3\n[tenant bob]\ndevice_bytes = 1M\n";
	load(&a, text);
	load(&b, text);
	ck_assert_str_eq(changes(&a, &b, &s), "");
	/* a string set longer, then shorter, compares by its text only */
	config_set(&b, "admin_tenants", "rootandmore", s.text, sizeof(s.text));
	config_set(&b, "admin_tenants", "root", s.text, sizeof(s.text));
	ck_assert_str_eq(changes(&a, &b, &s), "");
	config_free(&a);
	config_free(&b);
}
END_TEST

START_TEST(test_changes_live_or_restart)
{
	gpud_config a, b;
	seen s;
	load(&a, "[gpud]\nlisten = ipc:///tmp/a.sock\n");
	load(&b, "[gpud]\nlisten = ipc:///tmp/a.sock\nlisten = tcp://127.0.0.1:1\ncontexts = 8\n"
		 "log_level = debug\nlog_format = json\ndevice = 1\ntls_cert = /x.pem\n"
		 "[quota]\nkept_buffers = 3\n[tenant bob]\ndevice_bytes = 1M\n");
	/* in the table's order; devices once (device is its other name); sections last */
	ck_assert_str_eq(changes(&a, &b, &s), "listen=0 log_level=1 log_format=1 devices=0 "
					      "contexts=0 tls_cert=1 [quota]=1 [tenant]=1");
	config_free(&a);
	config_free(&b);
}
END_TEST

/* Dynamic batching's keys: defaults, bounds, and applied at a reload. */
START_TEST(test_batch_keys)
{
	gpud_config a, b;
	seen s;
	char err[512];
	load(&a, "[gpud]\n");
	ck_assert_int_eq(a.batch_delay_us, 0); /* off unless asked for */
	ck_assert_int_eq(a.batch_max, 256);
	ck_assert_int_eq(a.batch_max_work, 1 << 20);
	load(&b, "[gpud]\nbatch_delay_us = 250\nbatch_max = 32\nbatch_max_work = 4096\n");
	ck_assert_str_eq(changes(&a, &b, &s), "batch_delay_us=1 batch_max=1 batch_max_work=1");
	config_apply_live(&a, &b);
	ck_assert_int_eq(a.batch_delay_us, 250);
	ck_assert_int_eq(a.batch_max, 32);
	ck_assert_int_eq(a.batch_max_work, 4096);
	config_free(&a);
	config_free(&b);
	config_defaults(&a);
	ck_assert_int_eq(config_load_string(&a, "[gpud]\nbatch_max = 1\n", "t.conf", err,
					    sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "batch_max = '1': expected an integer from 2 to 65536"), "%s",
		      err);
	ck_assert_int_eq(config_load_string(&a, "[gpud]\nbatch_delay_us = -5\n", "t.conf", err,
					    sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "batch_delay_us = '-5': expected an integer from 0 to 60000000"),
		      "%s", err);
	ck_assert_int_eq(config_load_string(&a, "[gpud]\nbatch_max_work = 0\n", "t.conf", err,
					    sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "batch_max_work"), "%s", err);
	config_free(&a);
}
END_TEST

START_TEST(test_apply_live_only)
{
	gpud_config a, b;
	seen s;
	load(&a, "[gpud]\nlisten = ipc:///tmp/a.sock\n[tenant carol]\nkept_buffers = 1\n");
	load(&b, "[gpud]\nlisten = tcp://127.0.0.1:1\ncontexts = 8\nlog_level = debug\n"
		 "admin_tenants = bob\ndevice_lost = exit\nshutdown_timeout = 5\n"
		 "tokens_file = /t\n[tenant bob]\ndevice_bytes = 1M\ncustom_kernels = 7\n");
	config_apply_live(&a, &b);
	/* live: applied */
	ck_assert_int_eq(a.log_level, LOG_DEBUG);
	ck_assert_str_eq(a.admin_tenants, "bob");
	ck_assert_int_eq(a.device_lost_exit, 1);
	ck_assert(a.shutdown_timeout == 5.0);
	ck_assert_str_eq(a.tokens_file, "/t");
	ck_assert_int_eq(a.ntenants, 1);
	ck_assert_str_eq(a.tenants[0].name, "bob");
	ck_assert_uint_eq(config_quota(&a, "bob").device_bytes, 1u << 20);
	ck_assert_uint_eq(config_quota(&a, "bob").custom_kernels, 7); /* live, as quotas are */
	ck_assert_uint_eq(config_quota(&a, "carol").kept_buffers, a.quota.kept_buffers);
	/* restart: as they ran */
	ck_assert_int_eq(a.nlisten, 1);
	ck_assert_str_eq(a.listen[0], "ipc:///tmp/a.sock");
	ck_assert_int_eq(a.contexts, 64);
	/* and what still differs is what needs a restart */
	ck_assert_str_eq(changes(&a, &b, &s), "listen=0 contexts=0");
	config_free(&a);
	config_free(&b);
}
END_TEST

START_TEST(test_build_file_then_flags)
{
	char path[] = "/tmp/gpud-reload-XXXXXX", err[1024];
	gpud_config c;
	config_source src = {.path = path};
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	const char *text = "[gpud]\nlisten = ipc:///tmp/f.sock\nlog_level = info\ncontexts = 9\n";
	ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);

	ck_assert_msg(config_build(&c, &src, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.nlisten, 1);
	ck_assert_int_eq(c.contexts, 9);
	config_free(&c);

	/* the command line over the file; --listen replaces its list */
	src.flags[0].key = "log_level";
	src.flags[0].value = "debug";
	src.flags[1].key = "listen";
	src.flags[1].value = "tcp://127.0.0.1:7";
	src.nflags = 2;
	src.listen_flags = 1;
	ck_assert_msg(config_build(&c, &src, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.log_level, LOG_DEBUG);
	ck_assert_int_eq(c.nlisten, 1);
	ck_assert_str_eq(c.listen[0], "tcp://127.0.0.1:7");
	ck_assert_int_eq(c.contexts, 9);
	config_free(&c);

	/* errors say where: the file and line, or the option */
	src.flags[0].value = "loud";
	ck_assert_int_eq(config_build(&c, &src, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
			 "--log_level: log_level = 'loud': expected error, warn, info or debug");
	FILE *f = fopen(path, "w");
	ck_assert(f != NULL);
	fputs("[gpud]\ncontexts = 0\n", f);
	fclose(f);
	char want[256];
	snprintf(want, sizeof(want), "config %s:2: contexts = '0': expected an integer", path);
	ck_assert_int_eq(config_build(&c, &src, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "'%s' does not begin '%s'", err, want);
	unlink(path);

	/* no listen anywhere: $GPUD_URL */
	config_source none = {0};
	setenv("GPUD_URL", "ipc:///tmp/env.sock", 1);
	ck_assert_msg(config_build(&c, &none, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.listen[0], "ipc:///tmp/env.sock");
	config_free(&c);
	setenv("GPUD_URL", "http://x", 1);
	ck_assert_int_eq(config_build(&c, &none, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "GPUD_URL: listen URL 'http://x'", 31) == 0, "%s", err);
	unsetenv("GPUD_URL");
}
END_TEST

Suite *config_reload_suite(void)
{
	Suite *s = suite_create("config_reload");
	TCase *tc = tcase_create("reload");
	tcase_add_test(tc, test_same_config_no_changes);
	tcase_add_test(tc, test_changes_live_or_restart);
	tcase_add_test(tc, test_apply_live_only);
	tcase_add_test(tc, test_batch_keys);
	tcase_add_test(tc, test_build_file_then_flags);
	suite_add_tcase(s, tc);
	return s;
}
