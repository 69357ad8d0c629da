/*
 * tests/unit/test_config.c — unit tests of daemon/config.c: defaults, INI text and
 * files (sections, comments, repeated keys), sizes, and the error message of
 * every key's bad value ("NAME:LINE: key = 'value': expected ..."), listen
 * URLs without a port. Listen URLs and metrics_listen: test_config_listen.c;
 * the files the config names: test_config_files.c.
 */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/rsa.h>
#include <sys/stat.h>

#include "daemon/auth.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "tests/tls_fixture.h"
#include "tests/unit/suites.h"
#include "tests/unit/test_config.h"

/* Asserts that err begins with "NAME:line: ". */
void assert_where(const char *err, const char *name, int line)
{
	char prefix[PATH_MAX + 32];

	snprintf(prefix, sizeof(prefix), "%s:%d: ", name, line);
	ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "message '%s' does not begin '%s'",
		      err, prefix);
}

/* Loads text into a fresh config and expects it to fail at line. */
void expect_load_error(const char *text, int line, char *err, size_t errlen)
{
	gpud_config c;

	config_defaults(&c);
	err[0] = '\0';
	ck_assert_msg(config_load_string(&c, text, NAME, err, errlen) == -1, "'%s' was accepted",
		      text);
	assert_where(err, NAME, line);
	config_free(&c);
}

/* --- defaults and well-formed text -------------------------------------------------- */

START_TEST(test_defaults)
{
	gpud_config c;

	memset(&c, 0x5a, sizeof(c));
	config_defaults(&c);
	ck_assert_int_eq(c.nlisten, 0);
	ck_assert_str_eq(c.backend, "auto");
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 0);
	ck_assert_int_eq(c.log_level, LOG_INFO);
	ck_assert_uint_eq(c.max_message_size, 256ull << 20);
	ck_assert_int_eq(c.contexts, 64);
	ck_assert_int_ge(c.cpu_threads, 1);
	ck_assert_double_eq(c.shutdown_timeout, 30.0);
	ck_assert_double_eq(c.drain_grace, 2.0);
	config_free(&c);
	ck_assert_int_eq(c.nlisten, 0);
}
END_TEST

START_TEST(test_gpud_section)
{
	static const char text[] = "[gpud]\n"
				   "listen = ipc:///tmp/gpud-test.sock\n"
				   "backend = cpu\n"
				   "device = 3\n"
				   "log_level = debug\n"
				   "max_message_size = 64MiB\n"
				   "contexts = 8\n"
				   "cpu_threads = 2\n"
				   "shutdown_timeout = 2.5\n"
				   "drain_grace = 0.5\n";
	char err[512] = "";
	gpud_config c;

	config_defaults(&c);
	ck_assert_msg(config_load_string(&c, text, NAME, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.nlisten, 1);
	ck_assert_str_eq(c.listen[0], "ipc:///tmp/gpud-test.sock");
	ck_assert_str_eq(c.backend, "cpu");
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 3);
	ck_assert_int_eq(c.log_level, LOG_DEBUG);
	ck_assert_uint_eq(c.max_message_size, 64ull << 20);
	ck_assert_int_eq(c.contexts, 8);
	ck_assert_int_eq(c.cpu_threads, 2);
	ck_assert_double_eq(c.shutdown_timeout, 2.5);
	ck_assert_double_eq(c.drain_grace, 0.5);
	config_free(&c);
}
END_TEST

START_TEST(test_keys_before_section)
{
	static const char text[] = "backend = cuda\n"
				   "contexts = 5\n"
				   "\n"
				   "[gpud]\n"
				   "device = 1\n"
				   "log_level = warning\n";
	char err[512] = "";
	gpud_config c;

	config_defaults(&c);
	ck_assert_msg(config_load_string(&c, text, NAME, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.backend, "cuda");
	ck_assert_int_eq(c.contexts, 5);
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 1);
	ck_assert_int_eq(c.log_level, LOG_WARN);
	/* untouched keys keep their defaults */
	ck_assert_uint_eq(c.max_message_size, 256ull << 20);
	ck_assert_double_eq(c.shutdown_timeout, 30.0);
	config_free(&c);
}
END_TEST

START_TEST(test_listen_accumulates)
{
	static const char text[] = "[gpud]\n"
				   "listen = ipc:///tmp/a.sock\n"
				   "listen = tcp://127.0.0.1:7000\n"
				   "listen = tcp4://0.0.0.0:7001\n"
				   "listen = tcp6://[::1]:7002\n";
	char err[512] = "";
	gpud_config c;

	config_defaults(&c);
	ck_assert_int_eq(config_add_listen(&c, "ipc:///tmp/first.sock", err, sizeof(err)), 0);
	ck_assert_msg(config_load_string(&c, text, NAME, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.nlisten, 5);
	ck_assert_str_eq(c.listen[0], "ipc:///tmp/first.sock");
	ck_assert_str_eq(c.listen[1], "ipc:///tmp/a.sock");
	ck_assert_str_eq(c.listen[2], "tcp://127.0.0.1:7000");
	ck_assert_str_eq(c.listen[3], "tcp4://0.0.0.0:7001");
	ck_assert_str_eq(c.listen[4], "tcp6://[::1]:7002");
	config_clear_listen(&c);
	ck_assert_int_eq(c.nlisten, 0);
	/* the list is usable again after clearing */
	ck_assert_int_eq(config_add_listen(&c, "tcp://h:1", err, sizeof(err)), 0);
	ck_assert_int_eq(c.nlisten, 1);
	ck_assert_str_eq(c.listen[0], "tcp://h:1");
	config_free(&c);
}
END_TEST

START_TEST(test_listen_limit)
{
	char text[2048], err[512] = "";
	size_t n = 0;

	n += (size_t)snprintf(text + n, sizeof(text) - n, "[gpud]\n");
	for (int i = 0; i <= GPUD_MAX_LISTEN; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "listen = ipc:///tmp/s%d\n", i);
	ck_assert_uint_lt(n, sizeof(text));
	/* line 1 is [gpud]; URL number GPUD_MAX_LISTEN (from 0) is one too many */
	expect_load_error(text, GPUD_MAX_LISTEN + 2, err, sizeof(err));
	assert_has(err, "listen");
	assert_has(err, "at most 16");
}
END_TEST

START_TEST(test_inline_comments)
{
	static const char text[] = "; a comment line\n"
				   "# another one\n"
				   "[gpud] ; the only section\n"
				   "backend = cpu ; not cuda\n"
				   "contexts = 12  ; twelve\n"
				   "listen = ipc:///tmp/c.sock ; the socket\n";
	char err[512] = "";
	gpud_config c;

	config_defaults(&c);
	ck_assert_msg(config_load_string(&c, text, NAME, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.backend, "cpu");
	ck_assert_int_eq(c.contexts, 12);
	ck_assert_int_eq(c.nlisten, 1);
	ck_assert_str_eq(c.listen[0], "ipc:///tmp/c.sock");
	config_free(&c);
}
END_TEST

START_TEST(test_boundaries_accepted)
{
	static const char text[] = "[gpud]\n"
				   "device = 1024\n"
				   "contexts = 4096\n"
				   "cpu_threads = 1024\n"
				   "shutdown_timeout = 86400\n"
				   "max_message_size = 4GiB\n";
	static const char text2[] = "[gpud]\n"
				    "device = 0\n"
				    "contexts = 1\n"
				    "cpu_threads = 1\n"
				    "shutdown_timeout = 0\n"
				    "max_message_size = 4096\n";
	char err[512] = "";
	gpud_config c;

	config_defaults(&c);
	ck_assert_msg(config_load_string(&c, text, NAME, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 1024);
	ck_assert_int_eq(c.contexts, 4096);
	ck_assert_int_eq(c.cpu_threads, 1024);
	ck_assert_double_eq(c.shutdown_timeout, 86400.0);
	ck_assert_uint_eq(c.max_message_size, 4ull << 30);
	ck_assert_msg(config_load_string(&c, text2, NAME, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 0);
	ck_assert_int_eq(c.contexts, 1);
	ck_assert_int_eq(c.cpu_threads, 1);
	ck_assert_double_eq(c.shutdown_timeout, 0.0);
	ck_assert_uint_eq(c.max_message_size, 4096);
	config_free(&c);
}
END_TEST

/* --- sizes ---------------------------------------------------------------------------- */

static const struct {
	const char *text;
	int ok;
	uint64_t bytes;
} sizes[] = {
	{"256MiB", 1, 256ull << 20},
	{"1G", 1, 1ull << 30},
	{"64k", 1, 64ull << 10},
	{"4096", 1, 4096},
	{"64KiB", 1, 64ull << 10},
	{"64kb", 1, 64ull << 10},
	{"2T", 1, 2ull << 40},
	{"12B", 1, 12},
	{"1 M", 1, 1ull << 20},
	{"0", 1, 0},
	{"18446744073709551615", 1, UINT64_MAX},
	{"17179869183G", 1, 17179869183ull << 30},
	{"1.5G", 0, 0},
	{"", 0, 0},
	{"M", 0, 0},
	{"-1", 0, 0},
	{" 1G", 0, 0},
	{"1X", 0, 0},
	{"1Gi", 0, 0},
	{"1GiBs", 0, 0},
	{"1G ", 0, 0},
	{"18446744073709551616", 0, 0},
	{"17179869184G", 0, 0},
	{"16777216T", 0, 0},
};

START_TEST(test_parse_size)
{
	uint64_t got = 0xdeadbeef;
	int rv = config_parse_size(sizes[_i].text, &got);

	if (sizes[_i].ok) {
		ck_assert_msg(rv == 0, "'%s' was refused", sizes[_i].text);
		ck_assert_msg(got == sizes[_i].bytes, "'%s' -> %llu, want %llu", sizes[_i].text,
			      (unsigned long long)got, (unsigned long long)sizes[_i].bytes);
	} else {
		ck_assert_msg(rv == -1, "'%s' was accepted as %llu", sizes[_i].text,
			      (unsigned long long)got);
	}
}
END_TEST

/* --- bad values -------------------------------------------------------------------- */

static const struct {
	const char *key, *value, *expected;
} bad[] = {
	{"listen", "http://example.com:80",
	 "expected ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT"},
	{"listen", "ipc:/tmp/one-slash",
	 "expected ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT"},
	{"backend", "gpu", "expected auto, cpu or cuda"},
	{"backend", "CPU", "expected auto, cpu or cuda"},
	{"log_level", "verbose", "expected error, warn, info or debug"},
	{"max_message_size", "1.5G", "expected a size from 4KiB to 4GiB"},
	{"max_message_size", "1k", "expected a size from 4KiB to 4GiB"},
	{"max_message_size", "5G", "expected a size from 4KiB to 4GiB"},
	{"max_message_size", "lots", "expected a size from 4KiB to 4GiB"},
	{"device", "-1", "expected all, or device ids separated by commas"},
	{"device", "1025", "expected all, or device ids separated by commas"},
	{"device", "1.0", "expected all, or device ids separated by commas"},
	{"devices", "0,", "expected all, or device ids separated by commas"},
	{"devices", "0,,1", "expected all, or device ids separated by commas"},
	{"devices", "", "expected all, or device ids separated by commas"},
	{"devices", "some", "expected all, or device ids separated by commas"},
	{"devices", "0,1,0", "device 0 is listed twice"},
	{"devices", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "at most 16 devices"},
	{"cpu_devices", "0", "expected an integer from 1 to 16"},
	{"cpu_devices", "17", "expected an integer from 1 to 16"},
	{"device_lost", "restart", "expected serve or exit"},
	{"contexts", "0", "expected an integer from 1 to 4096"},
	{"contexts", "4097", "expected an integer from 1 to 4096"},
	{"contexts", "many", "expected an integer from 1 to 4096"},
	{"cpu_threads", "0", "expected an integer from 1 to 1024"},
	{"cpu_threads", "99999999999999999999", "expected an integer from 1 to 1024"},
	{"shutdown_timeout", "-1", "expected seconds from 0 to 86400"},
	{"shutdown_timeout", "86401", "expected seconds from 0 to 86400"},
	{"shutdown_timeout", "nan", "expected seconds from 0 to 86400"},
	{"shutdown_timeout", "inf", "expected seconds from 0 to 86400"},
	{"shutdown_timeout", "10s", "expected seconds from 0 to 86400"},
	{"drain_grace", "-0.5", "expected seconds from 0 to 3600"},
	{"drain_grace", "3601", "expected seconds from 0 to 3600"},
	{"drain_grace", "2s", "expected seconds from 0 to 3600"},
};

/* Each bad value on a line of its own, after a good line; the message names the line. */
START_TEST(test_bad_value)
{
	char text[256], err[512];
	int line = 3 + _i % 4;

	int n = snprintf(text, sizeof(text), "[gpud]\nbackend = cpu\n%.*s%s = %s\ncontexts = 2\n",
			 _i % 4, "\n\n\n", bad[_i].key, bad[_i].value);
	ck_assert_int_lt(n, (int)sizeof(text));
	expect_load_error(text, line, err, sizeof(err));
	assert_has(err, bad[_i].key);
	assert_has(err, bad[_i].value);
	assert_has(err, bad[_i].expected);
}
END_TEST

/* The same values through config_set (the command line): no file position. */
START_TEST(test_bad_value_set)
{
	char err[512] = "";
	gpud_config c;

	config_defaults(&c);
	ck_assert_int_eq(config_set(&c, bad[_i].key, bad[_i].value, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, bad[_i].key, strlen(bad[_i].key)) == 0,
		      "message '%s' does not begin with the key", err);
	assert_has(err, bad[_i].value);
	assert_has(err, bad[_i].expected);
	/* the field keeps its default */
	ck_assert_int_eq(c.nlisten, 0);
	ck_assert_str_eq(c.backend, "auto");
	ck_assert_int_eq(c.log_level, LOG_INFO);
	ck_assert_uint_eq(c.max_message_size, 256ull << 20);
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 0);
	ck_assert_int_eq(c.contexts, 64);
	ck_assert_double_eq(c.shutdown_timeout, 30.0);
	config_free(&c);
}
END_TEST

START_TEST(test_unknown_key)
{
	char err[512];

	expect_load_error("[gpud]\nbackend = cpu\nbackedn = cuda\n", 3, err, sizeof(err));
	ck_assert_str_eq(err, NAME ":3: unknown key 'backedn'");
	expect_load_error("port = 7\n", 1, err, sizeof(err));
	ck_assert_str_eq(err, NAME ":1: unknown key 'port'");
}
END_TEST

START_TEST(test_unknown_section)
{
	char err[512];

	expect_load_error("[gpud]\nbackend = cpu\n\n[server]\nport = 7\n", 5, err, sizeof(err));
	assert_has(err, "unknown section [server]");
	assert_has(err, "expected [gpud]");
	/* a section name is case-sensitive */
	expect_load_error("[GPUD]\nbackend = cpu\n", 2, err, sizeof(err));
	assert_has(err, "unknown section [GPUD]");
}
END_TEST

START_TEST(test_syntax_error)
{
	char err[512];

	expect_load_error("[gpud]\nbackend = cpu\nthis line has no value\n", 3, err, sizeof(err));
	ck_assert_str_eq(err, NAME ":3: syntax error");
	expect_load_error("[gpud\nbackend = cpu\n", 1, err, sizeof(err));
	ck_assert_str_eq(err, NAME ":1: syntax error");
}
END_TEST

/*
 * Lines longer than libinih reads whole are refused with their number, length
 * and the limit (a longer line's rest would have been read as a line of its
 * own: a comment's tail as a key); the longest that fits is read whole.
 */
START_TEST(test_long_lines)
{
	char text[1024], path[PATH_MAX], err[PATH_MAX + 512];
	const char *pre = "admin_tenants = ";
	gpud_config c;

	/* CONFIG_LINE_MAX bytes: read whole, and the next line keeps its number */
	snprintf(text, sizeof(text), "[gpud]\n%s%0*d\nbogus = 1\n", pre,
		 CONFIG_LINE_MAX - (int)strlen(pre), 0);
	expect_load_error(text, 3, err, sizeof(err));
	ck_assert_str_eq(err, NAME ":3: unknown key 'bogus'");
	snprintf(text, sizeof(text), "[gpud]\n%s%0*d\r\n", pre,
		 CONFIG_LINE_MAX - 1 - (int)strlen(pre), 0);
	config_defaults(&c);
	ck_assert_msg(config_load_string(&c, text, NAME, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(strlen(c.admin_tenants), CONFIG_LINE_MAX - 1 - strlen(pre));
	config_free(&c);

	/* one more: refused, saying so */
	snprintf(text, sizeof(text), "[gpud]\n%s%0*d\n", pre,
		 CONFIG_LINE_MAX + 1 - (int)strlen(pre), 0);
	expect_load_error(text, 2, err, sizeof(err));
	ck_assert_str_eq(err,
			 NAME ":2: the line is 199 bytes long; a line of the config file has at "
			      "most 198");

	/* a long comment whose tail reads as a key, in a file */
	char comment[301];
	memset(comment, 'x', 300);
	comment[300] = '\0';
	memcpy(comment + 250, " log_level = debug ", 19);
	snprintf(text, sizeof(text), "[gpud]\nbackend = cpu\n# %s\n", comment);
	write_temp(path, sizeof(path), text);
	config_defaults(&c);
	ck_assert_int_eq(config_load_file(&c, path, err, sizeof(err)), -1);
	char want[PATH_MAX + 128];
	snprintf(want, sizeof(want),
		 "%s:3: the line is 302 bytes long; a line of the config file has at most 198",
		 path);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(c.log_level, LOG_INFO);
	config_free(&c);

	/* a NUL would end the text unread */
	ck_assert_int_eq(truncate(path, 0), 0);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite("[gpud]\nbackend = cpu\0\nbogus = 1\n", 1, 32, f), 32);
	ck_assert_int_eq(fclose(f), 0);
	config_defaults(&c);
	ck_assert_int_eq(config_load_file(&c, path, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:2: a NUL byte (the file is not text)", path);
	ck_assert_str_eq(err, want);
	config_free(&c);
	unlink(path);
}
END_TEST

/*
 * A syntax error followed by a bad value: the message must describe the line
 * it names (either the first error, line 2, as a syntax error, or line 3 with
 * the value's message), never one line's number with another line's text.
 */
START_TEST(test_syntax_error_then_bad_value)
{
	char err[512];
	gpud_config c;

	config_defaults(&c);
	ck_assert_int_eq(config_load_string(&c, "[gpud]\nnot a pair\nbackend = gpu\n", NAME, err,
					    sizeof(err)),
			 -1);
	ck_assert_msg(strcmp(err, NAME ":2: syntax error") == 0 ||
			      strncmp(err, NAME ":3: backend = 'gpu'", 23) == 0,
		      "message '%s' pairs line 2 (the syntax error) with line 3's text", err);
	config_free(&c);
}
END_TEST

/* --- files --------------------------------------------------------------------------- */

void write_temp(char *path, size_t len, const char *text)
{
	const char *t = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/gpud-config-XXXXXX", t && *t ? t : "/tmp");
	fd = mkstemp(path);
	ck_assert_msg(fd >= 0, "mkstemp %s failed", path);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	ck_assert_int_eq(close(fd), 0);
}

START_TEST(test_load_file)
{
	char path[PATH_MAX], err[512] = "";
	gpud_config c;

	write_temp(path, sizeof(path),
		   "# gpud.conf\n[gpud]\nlisten = ipc:///tmp/f.sock\nbackend = cpu\n"
		   "max_message_size = 1G\nshutdown_timeout = 0.25\n");
	config_defaults(&c);
	int rv = config_load_file(&c, path, err, sizeof(err));
	unlink(path);
	ck_assert_msg(rv == 0, "%s", err);
	ck_assert_int_eq(c.nlisten, 1);
	ck_assert_str_eq(c.listen[0], "ipc:///tmp/f.sock");
	ck_assert_str_eq(c.backend, "cpu");
	ck_assert_uint_eq(c.max_message_size, 1ull << 30);
	ck_assert_double_eq(c.shutdown_timeout, 0.25);
	config_free(&c);
}
END_TEST

START_TEST(test_load_file_error)
{
	char path[PATH_MAX], err[PATH_MAX + 512] = "";
	gpud_config c;

	write_temp(path, sizeof(path), "[gpud]\n\ncontexts = 0\n");
	config_defaults(&c);
	int rv = config_load_file(&c, path, err, sizeof(err));
	unlink(path);
	ck_assert_int_eq(rv, -1);
	assert_where(err, path, 3);
	assert_has(err, "contexts = '0'");
	assert_has(err, "expected an integer from 1 to 4096");
	config_free(&c);
}
END_TEST

START_TEST(test_missing_file)
{
	static const char path[] = "/nonexistent-gpud-dir/gpud.conf";
	char err[512] = "";
	gpud_config c;

	config_defaults(&c);
	ck_assert_int_eq(config_load_file(&c, path, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "message '%s' lacks the path", err);
	assert_has(err, "cannot open");
	assert_has(err, "No such file or directory");
	config_free(&c);
}
END_TEST

/* The cuda backend's pool settings: defaults, sizes, bins, errors. */
START_TEST(test_pool_keys)
{
	gpud_config c;
	char err[512] = "";

	config_defaults(&c);
	ck_assert_uint_eq(c.pool_bin_growth, 2);
	ck_assert_uint_eq(c.pool_min_bin, 9);
	ck_assert_uint_eq(c.pool_max_bin, 31);
	ck_assert_uint_eq(c.pool_max_cached, 4ull << 30);
	ck_assert_uint_eq(c.pool_max_total, 0);
	ck_assert_uint_eq(c.pool_reserve, 256ull << 20);
	ck_assert_int_eq(config_load_string(&c,
					    "[gpud]\npool_bin_growth = 4\npool_min_bin = 5\n"
					    "pool_max_bin = 15\npool_max_cached = 1GiB\n"
					    "pool_max_total = 64GiB\npool_reserve = 0\n",
					    NAME, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(c.pool_bin_growth, 4);
	ck_assert_uint_eq(c.pool_min_bin, 5);
	ck_assert_uint_eq(c.pool_max_bin, 15);
	ck_assert_uint_eq(c.pool_max_cached, 1ull << 30);
	ck_assert_uint_eq(c.pool_max_total, 64ull << 30);
	ck_assert_uint_eq(c.pool_reserve, 0);
	config_free(&c);

	expect_load_error("[gpud]\npool_bin_growth = 1\n", 2, err, sizeof(err));
	assert_has(err, "pool_bin_growth");
	assert_has(err, "from 2 to");
	expect_load_error("[gpud]\n\npool_max_total = lots\n", 3, err, sizeof(err));
	assert_has(err, "pool_max_total = 'lots'");
	assert_has(err, "expected a size");
}
END_TEST

START_TEST(test_transfer_keys)
{
	gpud_config c;
	char err[512] = "", path[108];

	config_defaults(&c);
	ck_assert_int_eq(c.staging_buffers, 8);
	ck_assert_uint_eq(c.staging_chunk, 4ull << 20);
	ck_assert_int_eq(c.poll_us, 1000);
	ck_assert_int_eq(c.run_slots, 0);
	ck_assert_uint_eq(c.shm_max_bytes, 64ull << 30);
	/* The region socket sits next to the first ipc:// socket. */
	ck_assert_int_eq(config_add_listen(&c, "tcp://127.0.0.1:7878", err, sizeof(err)), 0);
	config_shm_path(&c, path, sizeof(path));
	ck_assert_str_eq(path, "");
	ck_assert_int_eq(config_add_listen(&c, "ipc:///run/gpud/a.sock", err, sizeof(err)), 0);
	ck_assert_int_eq(config_add_listen(&c, "ipc:///run/gpud/b.sock", err, sizeof(err)), 0);
	config_shm_path(&c, path, sizeof(path));
	ck_assert_str_eq(path, "/run/gpud/a.sock.shm");
	ck_assert_int_eq(
		config_load_string(&c,
				   "[gpud]\nstaging_buffers = 3\nstaging_chunk = 64KiB\n"
				   "poll_us = 0\nshm_socket = /tmp/x.shm\nshm_max_bytes = 1GiB\n"
				   "run_slots = 3\n",
				   NAME, err, sizeof(err)),
		0);
	ck_assert_int_eq(c.staging_buffers, 3);
	ck_assert_uint_eq(c.staging_chunk, 64u << 10);
	ck_assert_int_eq(c.poll_us, 0);
	ck_assert_int_eq(c.run_slots, 3);
	ck_assert_uint_eq(c.shm_max_bytes, 1ull << 30);
	config_shm_path(&c, path, sizeof(path));
	ck_assert_str_eq(path, "/tmp/x.shm");
	ck_assert_int_eq(config_load_string(&c, "[gpud]\nshm_socket = off\n", NAME, err,
					    sizeof(err)),
			 0);
	config_shm_path(&c, path, sizeof(path));
	ck_assert_str_eq(path, "");
	config_free(&c);

	expect_load_error("[gpud]\nstaging_buffers = 1\n", 2, err, sizeof(err));
	assert_has(err, "staging_buffers");
	assert_has(err, "from 2 to 1024");
	expect_load_error("[gpud]\nstaging_chunk = 4KiB\n", 2, err, sizeof(err));
	assert_has(err, "from 64KiB to 1GiB");
	expect_load_error("[gpud]\nrun_slots = -1\n", 2, err, sizeof(err));
	assert_has(err, "run_slots");
	expect_load_error("[gpud]\npoll_us = -5\n", 2, err, sizeof(err));
	assert_has(err, "poll_us");
	expect_load_error("[gpud]\nshm_socket = relative/path\n", 2, err, sizeof(err));
	assert_has(err, "absolute path");
	expect_load_error("[gpud]\nshm_max_bytes = many\n", 2, err, sizeof(err));
	assert_has(err, "shm_max_bytes = 'many'");
}
END_TEST

START_TEST(test_quota_sections)
{
	gpud_config c;
	char err[512] = "";

	config_defaults(&c);
	tenant_quota d = config_quota(&c, "anyone");
	ck_assert_uint_eq(d.device_bytes, 0);
	ck_assert_uint_eq(d.kept_buffers, 1024);
	ck_assert_uint_eq(d.requests_in_flight, 64);
	ck_assert_uint_eq(d.kernel_timeout_ms, 10000);
	ck_assert_uint_eq(d.run_timeout_ms, 3600000);
	ck_assert_uint_eq(d.custom_kernels, 256);
	ck_assert_int_eq(c.kernel_workers, 1);
	ck_assert_int_eq(
		config_load_string(&c,
				   "[gpud]\ntokens_file = /etc/gpud/tokens\n"
				   "socket_mode = 0660\nsocket_group = gpu\n"
				   "[quota]\ndevice_bytes = 2GiB\nkept_buffers = 10\n"
				   "kernel_timeout = 2.5\nrun_timeout = 600\ncustom_kernels = 32\n"
				   "[tenant alice]\ndevice_bytes = 40GiB\nkernel_timeout = 0\n"
				   "custom_kernels = 1000\n"
				   "run_timeout = 0\n"
				   "[tenant bob]\nrequests_in_flight = 2\nmessage_size = 1MiB\n"
				   "run_timeout = 0.0004\n",
				   NAME, err, sizeof(err)),
		0);
	ck_assert_str_eq(c.tokens_file, "/etc/gpud/tokens");
	ck_assert_int_eq(c.socket_mode, 0660);
	ck_assert_str_eq(c.socket_group, "gpu");
	tenant_quota a = config_quota(&c, "alice"), b = config_quota(&c, "bob"),
		     o = config_quota(&c, "carol");
	ck_assert_uint_eq(a.device_bytes, 40ull << 30);
	ck_assert_uint_eq(a.kept_buffers, 10); /* from [quota], read before */
	ck_assert_uint_eq(b.device_bytes, 2ull << 30);
	ck_assert_uint_eq(b.requests_in_flight, 2);
	ck_assert_uint_eq(b.message_size, 1u << 20);
	ck_assert_uint_eq(o.device_bytes, 2ull << 30);
	ck_assert_uint_eq(o.requests_in_flight, 64);
	ck_assert_uint_eq(a.kernel_timeout_ms, 0); /* no limit for alice */
	ck_assert_uint_eq(b.kernel_timeout_ms, 2500);
	ck_assert_uint_eq(o.kernel_timeout_ms, 2500);
	ck_assert_uint_eq(a.run_timeout_ms, 0); /* no limit for alice */
	ck_assert_uint_eq(b.run_timeout_ms, 1); /* under a millisecond, not none */
	ck_assert_uint_eq(o.run_timeout_ms, 600000);
	ck_assert_uint_eq(o.kernel_timeout_ms, 2500); /* the two keys set their own fields */
	ck_assert_uint_eq(a.custom_kernels, 1000);
	ck_assert_uint_eq(b.custom_kernels, 32); /* from [quota] */
	ck_assert_uint_eq(o.custom_kernels, 32);
	config_free(&c);

	ck_assert_int_eq(config_load_string(&c,
					    "[gpud]\nkernel_cache = /var/cache/gpud\n"
					    "admin_tenants = root, alice\n",
					    NAME, err, sizeof(err)),
			 0);
	ck_assert_str_eq(c.kernel_cache_dir, "/var/cache/gpud/cubin");
	ck_assert(config_is_admin(&c, "alice") && config_is_admin(&c, "root"));
	ck_assert(!config_is_admin(&c, "ali") && !config_is_admin(&c, "bob") &&
		  !config_is_admin(&c, ""));
	config_free(&c);
	expect_load_error("[gpud]\nkernel_cache = relative\n", 2, err, sizeof(err));
	assert_has(err, "absolute directory");
	expect_load_error("[quota]\ndevice_byte = 1\n", 2, err, sizeof(err));
	assert_has(err, "unknown quota key 'device_byte'");
	expect_load_error("[tenant x]\nkernel_timeout = -1\n", 2, err, sizeof(err));
	assert_has(err, "kernel_timeout = '-1': expected seconds");
	expect_load_error("[quota]\nrun_timeout = 1 minute\n", 2, err, sizeof(err));
	assert_has(err, "run_timeout = '1 minute': expected seconds (0: no limit) from 0 to 86400");
	expect_load_error("[tenant x]\nkept_buffers = many\n", 2, err, sizeof(err));
	assert_has(err, "kept_buffers = 'many'");
	const char *bad_counts[] = {"0", "-1", "65537", "many", "12 kernels", ""};
	for (size_t i = 0; i < sizeof(bad_counts) / sizeof(bad_counts[0]); i++) {
		char text[96], want[96];
		snprintf(text, sizeof(text), "[tenant x]\ncustom_kernels = %s\n", bad_counts[i]);
		expect_load_error(text, 2, err, sizeof(err));
		snprintf(want, sizeof(want),
			 "custom_kernels = '%s': expected a number of kernels from 1 to 65536",
			 bad_counts[i]);
		assert_has(err, want);
	}
	expect_load_error("[gpud]\nsocket_mode = 999\n", 2, err, sizeof(err));
	assert_has(err, "octal");
	expect_load_error("[tenants]\nx = 1\n", 2, err, sizeof(err));
	assert_has(err, "[tenant NAME]");
}
END_TEST

/* devices: all, a list; cpu_devices; device_lost; device_bytes.N */
START_TEST(test_devices)
{
	gpud_config c;
	char err[512] = "";

	config_defaults(&c);
	ck_assert_int_eq(c.devices_all, 0);
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 0);
	ck_assert_int_eq(c.cpu_devices, 1);
	ck_assert_int_eq(c.device_lost_exit, 0);
	ck_assert_msg(config_set(&c, "devices", "2, 0,5", err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.ndevice_ids, 3);
	ck_assert_int_eq(c.device_ids[0], 2);
	ck_assert_int_eq(c.device_ids[1], 0);
	ck_assert_int_eq(c.device_ids[2], 5);
	ck_assert_int_eq(c.devices_all, 0);
	ck_assert_msg(config_set(&c, "device", "all", err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.devices_all, 1);
	ck_assert_msg(config_set(&c, "device", "1", err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.devices_all, 0);
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 1);
	/* a bad list leaves the old one */
	ck_assert_int_eq(config_set(&c, "devices", "1,x", err, sizeof(err)), -1);
	ck_assert_int_eq(c.ndevice_ids, 1);
	ck_assert_int_eq(c.device_ids[0], 1);
	ck_assert_int_eq(config_load_string(&c,
					    "[gpud]\ncpu_devices = 3\ndevice_lost = exit\n"
					    "[quota]\ndevice_bytes = 8GiB\ndevice_bytes.1 = 1GiB\n"
					    "[tenant alice]\ndevice_bytes.15 = 2MiB\n",
					    NAME, err, sizeof(err)),
			 0);
	ck_assert_int_eq(c.cpu_devices, 3);
	ck_assert_int_eq(c.device_lost_exit, 1);
	tenant_quota a = config_quota(&c, "alice"), o = config_quota(&c, "bob");
	ck_assert_uint_eq(o.device_bytes, 8ull << 30);
	ck_assert_uint_eq(o.device_bytes_on[1], 1ull << 30);
	ck_assert_uint_eq(o.device_bytes_on[0], 0);
	ck_assert_uint_eq(o.device_bytes_on[15], 0);
	ck_assert_uint_eq(a.device_bytes_on[1], 1ull << 30); /* from [quota], read before */
	ck_assert_uint_eq(a.device_bytes_on[15], 2ull << 20);
	config_free(&c);
	expect_load_error("[quota]\ndevice_bytes.16 = 1\n", 2, err, sizeof(err));
	assert_has(err, "expected device_bytes.N with N a device id, 0 to 15");
	expect_load_error("[quota]\ndevice_bytes.x = 1\n", 2, err, sizeof(err));
	assert_has(err, "device_bytes.N");
	expect_load_error("[quota]\ndevice_bytes.0 = lots\n", 2, err, sizeof(err));
	assert_has(err, "device_bytes.0 = 'lots'");
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("load");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_gpud_section);
	tcase_add_test(tc, test_keys_before_section);
	tcase_add_test(tc, test_listen_accumulates);
	tcase_add_test(tc, test_listen_limit);
	tcase_add_test(tc, test_inline_comments);
	tcase_add_test(tc, test_boundaries_accepted);
	tcase_add_test(tc, test_load_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("sizes");
	tcase_add_loop_test(tc, test_parse_size, 0, (int)(sizeof(sizes) / sizeof(sizes[0])));
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_loop_test(tc, test_bad_value, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_loop_test(tc, test_bad_value_set, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, test_unknown_key);
	tcase_add_test(tc, test_unknown_section);
	tcase_add_test(tc, test_syntax_error);
	tcase_add_test(tc, test_syntax_error_then_bad_value);
	tcase_add_test(tc, test_long_lines);
	tcase_add_test(tc, test_load_file_error);
	tcase_add_test(tc, test_missing_file);
	config_listen_tests(tc);
	config_files_tests(tc);
	tcase_add_test(tc, test_pool_keys);
	tcase_add_test(tc, test_transfer_keys);
	tcase_add_test(tc, test_quota_sections);
	tcase_add_test(tc, test_devices);
	suite_add_tcase(s, tc);
	return s;
}
