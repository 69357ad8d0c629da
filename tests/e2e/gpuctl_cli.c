/*
 * tests/e2e/gpuctl_cli.c — test cases "gpuctl cli" and "gpuctl quota":
 * gpuctl as a Unix tool, driven through command lines (shell.c): help texts
 * (stdout, exit 0), usage errors (stderr, the usage line, exit 64), every
 * exit status the cpu backend can provoke, pipes (.npy on stdin and
 * stdout, into and out of python3's numpy), the value syntax and where it
 * could be read two ways, -o, and the progress bar on a terminal (and
 * nowhere else).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include <gpud/npy.h>
#include <jansson.h>

#include "client/gpuctl/switches.h" /* GPUCTL_RUN_ASYNC: whether runs draw a spinner */
#include "tests/e2e/e2e.h"

#include <nng/protocol/reqrep0/rep.h>

/* Runs line and expects exit status code with words on stderr (an error message when
 * code is not 0); a usage error must also show the usage line. */
static ctl_result *expect_at(int line, const char *cmd, int code, const char *words)
{
	ctl_result *r = sh_run(cmd);
	ck_assert_msg(r->code == code,
		      "line %d: '%s' exited %d, expected %d\nstdout: %s\nstderr: %s", line, r->cmd,
		      r->code, code, r->out, r->err);
	if (code != 0) /* notes may come first */
		ck_assert_msg(
			strncmp(r->err, "gpuctl: error: ", 15) == 0 ||
				strstr(r->err, "\ngpuctl: error: "),
			"line %d: '%s': no line starts with 'gpuctl: error: ' on stderr: '%s'",
			line, r->cmd, r->err);
	if (code == EX_USAGE)
		ck_assert_msg(strstr(r->err, "\nusage: gpuctl") &&
				      strstr(r->err, "Try 'gpuctl help"),
			      "line %d: '%s': no usage line on stderr: '%s'", line, r->cmd, r->err);
	if (words)
		ck_assert_msg(strstr(r->err, words) != NULL,
			      "line %d: '%s': stderr does not mention '%s': '%s'", line, r->cmd,
			      words, r->err);
	return r;
}
#define EXPECT(cmd, code, words) expect_at(__LINE__, cmd, code, words)

static int exists_in_dir(const char *name)
{
	char p[700];
	path_in_dir(p, sizeof(p), name);
	return access(p, F_OK) == 0;
}

static void hex_of(const void *p, size_t n, char *buf)
{
	for (size_t i = 0; i < n; i++)
		sprintf(buf + 2 * i, "%02x", ((const unsigned char *)p)[i]);
}

static gpud_array load(const char *name)
{
	char path[700], err[512];
	gpud_array a;
	path_in_dir(path, sizeof(path), name);
	ck_assert_msg(gpud_npy_load(path, &a, err, sizeof(err)) == 0, "%s", err);
	return a;
}

/* x.npy and y.npy (float64, 50), f.npy (float64, 20) in the test's directory. */
static void make_inputs(double *x, double *y, double *f)
{
	char p[700];
	gen_ls(77, 50, 20, x, y, f);
	path_in_dir(p, sizeof(p), "x.npy");
	save_vec(p, GPUD_F64, x, 50);
	path_in_dir(p, sizeof(p), "y.npy");
	save_vec(p, GPUD_F64, y, 50);
	path_in_dir(p, sizeof(p), "f.npy");
	save_vec(p, GPUD_F64, f, 20);
}

/* A kept buffer of x.npy: its handle (16 hex digits) into h. */
static void upload_kept(const char *file, char *h)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "gpuctl upload --keep %s", file);
	ctl_result *r = sh_run(cmd);
	assert_sh_ok(r);
	ck_assert_msg(sscanf(r->out, "%16s", h) == 1 && strlen(h) == 16, "upload printed '%s'",
		      r->out);
}

static const char *const commands[] = {"run",     "upload", "download", "free", "ls",
				       "kernels", "kernel", "status",   "demo", "help"};
#define NCMD (sizeof(commands) / sizeof(commands[0]))

START_TEST(test_help_texts)
{
	static char main_help[65536], cmd_help[65536];
	static const char *const codes[] = {"\n  0   success",
					    "\n  64  ",
					    "\n  65  ",
					    "\n  66  ",
					    "\n  69  ",
					    "\n  70  ",
					    "\n  74  ",
					    "\n  75  ",
					    "\n  76  ",
					    "\n  77  ",
					    "\n  79  gpud is shutting down"};

	ctl_result *r = EXPECT("gpuctl help", 0, NULL);
	ck_assert_str_eq(r->err, "");
	ck_assert_msg(strncmp(r->out, "usage: gpuctl ", 14) == 0, "%s", r->out);
	for (size_t i = 0; i < NCMD; i++) {
		char line[64];
		snprintf(line, sizeof(line), "\n  %-10s ", commands[i]);
		ck_assert_msg(strstr(r->out, line), "gpuctl help does not list %s:\n%s",
			      commands[i], r->out);
	}
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		ck_assert_msg(strstr(r->out, codes[i]), "gpuctl help lacks exit status '%s':\n%s",
			      codes[i] + 1, r->out);
	ck_assert_msg(strstr(r->out, "GPUD_URL") && strstr(r->out, "GPUCTL_PROGRESS_DELAY"), "%s",
		      r->out);
	snprintf(main_help, sizeof(main_help), "%s", r->out);
	ck_assert_str_eq(EXPECT("gpuctl --help", 0, NULL)->out, main_help);
	ck_assert_str_eq(EXPECT("gpuctl -h", 0, NULL)->out, main_help);
	/* Help needs no gpud. */
	ck_assert_str_eq(EXPECT("GPUD_URL=ipc:///nonexistent/gpud.sock gpuctl -h", 0, NULL)->out,
			 main_help);

	for (size_t i = 0; i < NCMD; i++) {
		char cmd[128], want[64];
		snprintf(cmd, sizeof(cmd), "gpuctl help %s", commands[i]);
		r = EXPECT(cmd, 0, NULL);
		ck_assert_str_eq(r->err, "");
		snprintf(want, sizeof(want), "usage: gpuctl %s", commands[i]);
		ck_assert_msg(strncmp(r->out, want, strlen(want)) == 0, "'%s': %s", cmd, r->out);
		ck_assert_msg(strlen(r->out) > strlen(want) + 40, "'%s' says too little: %s", cmd,
			      r->out);
		snprintf(cmd_help, sizeof(cmd_help), "%s", r->out);
		snprintf(cmd, sizeof(cmd), "gpuctl %s --help", commands[i]);
		ck_assert_str_eq(EXPECT(cmd, 0, NULL)->out, cmd_help);
		snprintf(cmd, sizeof(cmd), "gpuctl %s -h", commands[i]);
		ck_assert_str_eq(EXPECT(cmd, 0, NULL)->out, cmd_help);
	}
	/* -h anywhere among a command's arguments, before anything is read or sent */
	r = EXPECT("gpuctl run lombscargle x=@nothing.npy -o out.npy -h", 0, NULL);
	ck_assert_msg(strncmp(r->out, "usage: gpuctl run KERNEL", 24) == 0, "%s", r->out);
	ck_assert(!exists_in_dir("out.npy"));
	r = EXPECT("gpuctl kernel add k --elementwise --help", 0, NULL);
	ck_assert_msg(strncmp(r->out, "usage: gpuctl kernel add", 24) == 0, "%s", r->out);
	/* the run help documents the value forms and the decimal rule */
	r = EXPECT("gpuctl help run", 0, NULL);
	ck_assert_msg(strstr(r->out, "@FILE.npy") && strstr(r->out, "%HANDLE") &&
			      strstr(r->out, "010 is") && strstr(r->out, "-o -"),
		      "%s", r->out);
	r = EXPECT("gpuctl --version", 0, NULL);
	ck_assert_msg(strncmp(r->out, "gpuctl ", 7) == 0, "%s", r->out);
}
END_TEST

START_TEST(test_usage_errors)
{
	static const struct {
		const char *cmd, *words;
	} cases[] = {
		{"gpuctl", "missing COMMAND"},
		{"gpuctl frobnicate", "unknown command 'frobnicate' (commands: run, upload"},
		{"gpuctl --frob status", "unknown option '--frob'"},
		{"gpuctl -x status", "unknown option '-x'"},
		{"gpuctl --url", "option '--url' needs a value"},
		{"gpuctl --timeout soon status", "--timeout: expected seconds"},
		{"gpuctl status --url ipc:///x",
		 "--url is an option of gpuctl itself: put it before"},
		{"gpuctl run add -q x=1", "-q is an option of gpuctl itself"},
		{"gpuctl run", "missing KERNEL"},
		{"gpuctl run x=1", "expected KERNEL first, got 'x=1'"},
		{"gpuctl run add x", "argument 'x': expected NAME=VALUE"},
		{"gpuctl run add x=1 x=2", "argument 'x' given twice"},
		{"gpuctl run add x=", "argument 'x' has an empty value"},
		{"gpuctl run add x=%zz", "argument 'x': expected %HANDLE (1 to 16 hex digits"},
		{"gpuctl run add x=%0", "0 names no buffer"},
		{"gpuctl run add x=@", "expected a file name after '@'"},
		{"gpuctl run add x=1 -o", "-o needs a value"},
		{"gpuctl run add x=1 -o ''", "-o : expected a file name"},
		{"gpuctl run add x=1 --frob", "unknown option '--frob'"},
		{"gpuctl help nosuch", "no command 'nosuch' (commands: run, upload"},
		{"gpuctl upload", "missing FILE.npy (or - for stdin)"},
		{"gpuctl upload a.npy b.npy", "one FILE at a time"},
		{"gpuctl upload --kept a.npy", "unknown option '--kept'"},
		{"gpuctl download 1234", "missing -o FILE.npy"},
		{"gpuctl download -o x.npy", "missing HANDLE"},
		{"gpuctl download zz -o x.npy",
		 "'zz' is not a handle: expected 1 to 16 hex digits"},
		{"gpuctl download 12345678901234567 -o x.npy", "is not a handle"},
		{"gpuctl download 1234 -o out=x.npy", "download writes one buffer"},
		{"gpuctl free", "missing HANDLE"},
		{"gpuctl free xyz", "'xyz' is not a handle"},
		{"gpuctl ls extra", "unexpected argument 'extra'"},
		{"gpuctl run add x=1 --json -o -", "-o - and --json both write stdout"},
		{"gpuctl status --jsonn", "unknown option '--jsonn'"},
		{"gpuctl kernels --all", "unknown option '--all'"},
		{"gpuctl status --wait soon",
		 "--wait: expected seconds from 0 to 86400, got 'soon'"},
		{"gpuctl status --wait -1", "--wait: expected seconds"},
		{"gpuctl demo --runs 0", "--runs: expected an integer from 1 to 1000, got '0'"},
		{"gpuctl demo --runs 5x", "--runs: expected an integer from 1 to 1000, got '5x'"},
		{"gpuctl kernel frob",
		 "expected 'kernel add NAME ...' or 'kernel rm NAME', got 'frob'"},
		{"gpuctl kernel add k --entry k", "needs --source FILE.cu"},
		{"gpuctl kernel add k --elementwise 'float32 x'", "unknown or incomplete option"},
		{"gpuctl kernel rm", "kernel rm: missing NAME"},
		{"GPUCTL_PROGRESS_DELAY=soon gpuctl upload x.npy",
		 "$GPUCTL_PROGRESS_DELAY: expected"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ctl_result *r = EXPECT(cases[i].cmd, EX_USAGE, cases[i].words);
		ck_assert_msg(r->out[0] == '\0', "'%s' wrote to stdout: %s", r->cmd, r->out);
	}
	/* The usage line is the command's own. */
	ctl_result *r = EXPECT("gpuctl run add x", EX_USAGE, "usage: gpuctl run KERNEL ARG=VALUE");
	ck_assert_msg(strstr(r->err, "Try 'gpuctl help run' for more."), "%s", r->err);
	EXPECT("gpuctl download zz -o x.npy", EX_USAGE, "usage: gpuctl download HANDLE -o");
	r = EXPECT("gpuctl frobnicate", EX_USAGE, "usage: gpuctl [--url URL]");
	ck_assert_msg(strstr(r->err, "Try 'gpuctl help' for more."), "%s", r->err);
	assert_daemon_alive("usage errors");
}
END_TEST

/* A server at a URL that answers every request with bytes that are not gpud's reply. */
static void *garbage_server(void *arg)
{
	nng_socket s = *(nng_socket *)arg;
	nng_msg *m;
	while (nng_recvmsg(s, &m, 0) == 0) {
		nng_msg_clear(m);
		nng_msg_append(m, "\xff\xff\xff\x7fgarbage", 11);
		if (nng_sendmsg(s, m, 0) != 0)
			nng_msg_free(m);
	}
	return NULL;
}

START_TEST(test_exit_statuses)
{
	double x[50], y[50], f[20];
	char cmd[1024], h[32], dead[700];
	make_inputs(x, y, f);
	char bad[700];
	path_in_dir(bad, sizeof(bad), "bad.npy");
	write_text(bad, "this is not a numpy file\n");

	/* 65: gpud refused an argument, the kernel name or a handle; data that is not .npy */
	EXPECT("gpuctl run lombscargel x=@x.npy", EX_DATAERR, "unknown kernel 'lombscargel'");
	EXPECT("gpuctl run histogram x=@x.npy bins=0 range_min=0 range_max=1", EX_DATAERR,
	       "argument 'bins' must be at least 1, got 0");
	EXPECT("gpuctl run lombscargle x=@x.npy y=@y.npy", EX_DATAERR,
	       "missing the frequencies: give freqs (an array) or the grid f0, df, nf");
	EXPECT("gpuctl run sum x=@bad.npy", EX_DATAERR, "argument 'x': bad.npy: not a .npy");
	EXPECT("gpuctl upload bad.npy", EX_DATAERR, "not a .npy");
	upload_kept("x.npy", h); /* a handle of this gpud, freed: unknown */
	snprintf(cmd, sizeof(cmd), "gpuctl free %s", h);
	assert_sh_ok(sh_run(cmd));
	EXPECT(cmd, EX_DATAERR, "unknown handle");
	snprintf(cmd, sizeof(cmd), "gpuctl download %s -o got.npy", h);
	/* the verb once: gpud's message names it already */
	EXPECT(cmd, EX_DATAERR, "gpuctl: error: download: unknown handle ");
	ck_assert_msg(!exists_in_dir("got.npy"), "a refused download left got.npy");
	/* one that was never this gpud's (as after a restart) */
	EXPECT("gpuctl free 123456789abcdef0", EX_DATAERR, "gpud restarted");

	/* 66: an input file that is not there */
	EXPECT("gpuctl run sum x=@missing.npy", EX_NOINPUT,
	       "argument 'x': cannot open missing.npy: No such file or directory");
	EXPECT("gpuctl run sum x=missing.npy", EX_NOINPUT, "cannot open missing.npy");
	EXPECT("gpuctl upload missing.npy", EX_NOINPUT, "cannot open missing.npy");
	EXPECT("gpuctl run sum x=@.", EX_NOINPUT, "Is a directory");
	EXPECT("gpuctl kernel add k --source missing.cu --entry k --sig 'x:in f32[]'", EX_NOINPUT,
	       "--source missing.cu: cannot open");

	/* 69: nothing at the URL; the message names it and says what to do */
	snprintf(dead, sizeof(dead), "ipc://%s/nobody.sock", e2e_gpud.dir);
	snprintf(cmd, sizeof(cmd), "gpuctl --url %s run sum x=@x.npy", dead);
	ctl_result *r = EXPECT(cmd, EX_UNAVAILABLE, "cannot connect to gpud at ");
	ck_assert_msg(strstr(r->err, dead) && strstr(r->err, "is from --url") &&
			      strstr(r->err, "systemctl start gpud") &&
			      strstr(r->err, "gpud --listen ") && strstr(r->err, "make demo") &&
			      strstr(r->err, "--url URL") && strstr(r->err, "GPUD_URL=URL"),
		      "%s", r->err);
	ck_assert_str_eq(r->out, "");
	snprintf(cmd, sizeof(cmd), "GPUD_URL=%s gpuctl status", dead);
	r = EXPECT(cmd, EX_UNAVAILABLE, dead);
	ck_assert_msg(strstr(r->err, "is from $GPUD_URL"), "%s", r->err);
	snprintf(cmd, sizeof(cmd), "GPUD_URL=%s gpuctl status --wait 0.2", dead);
	EXPECT(cmd, EX_UNAVAILABLE, "(gave up waiting after 0.2 s)");

	/* 70: a kernel the backend cannot run (custom kernels on the cpu backend) */
	assert_sh_ok(sh_run("gpuctl kernel add twice --elementwise 'float64 x' 'float64 z' "
			    "'z = 2 * x'"));
	if (!strcmp(expected_backend(), "cpu"))
		EXPECT("gpuctl run twice x=@x.npy", EX_SOFTWARE,
		       "custom kernels need the cuda backend");
	assert_sh_ok(sh_run("gpuctl kernel rm twice"));

	/* 74: an output that cannot be written */
	EXPECT("gpuctl run uniform n=3 seed=1 -o nodir/u.npy", EX_IOERR,
	       "output 'out': cannot open nodir/u.npy for writing: No such file or directory");
	EXPECT("gpuctl run uniform n=3 seed=1 -o - >/dev/full", EX_IOERR,
	       "output 'out': writing stdout failed: No space left on device");
	upload_kept("x.npy", h);
	snprintf(cmd, sizeof(cmd), "gpuctl download %s -o - >/dev/full", h);
	EXPECT(cmd, EX_IOERR, "download: writing stdout failed: No space left on device");
	snprintf(cmd, sizeof(cmd), "gpuctl free %s", h);
	assert_sh_ok(sh_run(cmd));

	/* 76: something at the URL that is not gpud */
	nng_socket s;
	pthread_t t;
	char fake[700];
	snprintf(fake, sizeof(fake), "ipc://%s/fake.sock", e2e_gpud.dir);
	ck_assert_int_eq(nng_rep0_open(&s), 0);
	ck_assert_int_eq(nng_listen(s, fake, NULL, 0), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, garbage_server, &s), 0);
	snprintf(cmd, sizeof(cmd), "gpuctl --url %s status", fake);
	r = sh_run(cmd);
	nng_close(s);
	pthread_join(t, NULL);
	ck_assert_msg(r->code == EX_PROTOCOL && strstr(r->err, "gpuctl: error: "),
		      "'%s' exited %d, expected %d: %s", r->cmd, r->code, EX_PROTOCOL, r->err);

	assert_daemon_alive("the exit statuses");
}
END_TEST

/* gpuctl CMD --json parsed; its schema and version checked. */
static json_t *ctl_json(const char *cmd, const char *schema)
{
	json_error_t je;
	ctl_result *r = sh_run(cmd);
	assert_sh_ok(r);
	json_t *d = json_loads(r->out, 0, &je);
	ck_assert_msg(d != NULL, "'%s': not JSON (line %d: %s):\n%s", cmd, je.line, je.text,
		      r->out);
	ck_assert_str_eq(json_string_value(json_object_get(d, "schema")), schema);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "schema_version")), 1);
	return d;
}

/* --json: status, kernels and ls as documents whose values are gpud's. */
START_TEST(test_json)
{
	double x[50], y[50], f[20];
	char h[32], cmd[256];
	make_inputs(x, y, f);
	upload_kept("x.npy", h);

	json_t *d = ctl_json("gpuctl ls --json", "gpuctl.ls");
	char tenant[64];
	snprintf(tenant, sizeof(tenant), "%s", json_string_value(json_object_get(d, "tenant")));
	ck_assert(tenant[0] != '\0');
	json_t *bs = json_object_get(d, "buffers");
	ck_assert_uint_eq(json_array_size(bs), 1);
	json_t *b = json_array_get(bs, 0);
	ck_assert_str_eq(json_string_value(json_object_get(b, "handle")), h);
	ck_assert_str_eq(json_string_value(json_object_get(b, "dtype")), "float64");
	ck_assert_uint_eq(json_array_size(json_object_get(b, "shape")), 1);
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(b, "shape"), 0)), 50);
	ck_assert_int_eq(json_integer_value(json_object_get(b, "bytes")), 400);
	json_decref(d);

	d = ctl_json("gpuctl status --json", "gpuctl.status");
	ck_assert_str_eq(json_string_value(json_object_get(d, "backend")), expected_backend());
	ck_assert_int_eq(json_integer_value(json_object_get(d, "buffers")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "bytes_in_use")), 400);
	json_t *ss = json_object_get(d, "sessions");
	size_t mine = 0;
	for (size_t i = 0; i < json_array_size(ss); i++) {
		json_t *g = json_array_get(ss, i);
		if (!json_is_true(json_object_get(g, "this_client")))
			continue;
		mine++;
		ck_assert_str_eq(json_string_value(json_object_get(g, "tenant")), tenant);
	}
	ck_assert_uint_eq(mine, 1);
	ck_assert(json_is_array(json_object_get(d, "kernel_variants")));
	json_decref(d);

	d = ctl_json("gpuctl kernels --json", "gpuctl.kernels");
	json_t *ks = json_object_get(d, "kernels"), *ls = NULL;
	for (size_t i = 0; i < json_array_size(ks); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(ks, i), "name")),
			    "lombscargle"))
			ls = json_array_get(ks, i);
	ck_assert_msg(ls != NULL, "no lombscargle in gpuctl kernels --json");
	json_t *ps = json_object_get(ls, "params");
	int found = 0;
	for (size_t i = 0; i < json_array_size(ps); i++) {
		json_t *p = json_array_get(ps, i);
		const char *name = json_string_value(json_object_get(p, "name"));
		if (!strcmp(name, "pgram")) {
			ck_assert_str_eq(json_string_value(json_object_get(p, "role")), "out");
			found++;
		} else if (!strcmp(name, "x")) {
			json_t *dts = json_object_get(p, "dtypes");
			ck_assert_uint_eq(json_array_size(dts), 2);
			ck_assert_str_eq(json_string_value(json_array_get(dts, 0)), "float32");
			ck_assert_int_eq(json_integer_value(json_object_get(p, "ndim")), 1);
			found++;
		}
	}
	ck_assert_int_eq(found, 2);
	json_decref(d);

	/* run: without -o the first values, with -o the file */
	static const float u32_42[5] = {0x1.39d5ep-1, 0x1.dfd524p-2, 0x1.2bf50ap-4, 0x1.5d0adp-2,
					0x1.499bb4p-7};
	d = ctl_json("gpuctl run uniform n=5 seed=42 dtype=float32 --json", "gpuctl.run");
	ck_assert_str_eq(json_string_value(json_object_get(d, "kernel")), "uniform");
	ck_assert(json_real_value(json_object_get(d, "kernel_us")) >= 0);
	json_t *outs = json_object_get(d, "outputs"), *o = json_array_get(outs, 0);
	ck_assert_uint_eq(json_array_size(outs), 1);
	ck_assert_str_eq(json_string_value(json_object_get(o, "dtype")), "float32");
	ck_assert(json_is_null(json_object_get(o, "file")));
	json_t *head = json_object_get(o, "head");
	ck_assert_uint_eq(json_array_size(head), 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_msg(fabs(json_real_value(json_array_get(head, i)) - u32_42[i]) <=
				      1e-9 * u32_42[i],
			      "head[%zu] %.9g, expected %.9g", i,
			      json_real_value(json_array_get(head, i)), (double)u32_42[i]);
	json_decref(d);
	d = ctl_json("gpuctl run lombscargle x=x.npy y=y.npy freqs=f.npy -o pg.npy --json",
		     "gpuctl.run");
	o = json_array_get(json_object_get(d, "outputs"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "name")), "pgram");
	ck_assert_str_eq(json_string_value(json_object_get(o, "file")), "pg.npy");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "bytes")), 20 * 8);
	ck_assert_uint_eq(json_array_size(json_object_get(o, "head")), 0);
	ck_assert(exists_in_dir("pg.npy"));
	json_decref(d);

	snprintf(cmd, sizeof(cmd), "gpuctl free %s", h);
	assert_sh_ok(sh_run(cmd));
	d = ctl_json("gpuctl ls --json", "gpuctl.ls");
	ck_assert_uint_eq(json_array_size(json_object_get(d, "buffers")), 0);
	json_decref(d);
}
END_TEST

/* kernels --names and --args KERNEL (for scripts and shell completion): gpud's kernels and
 * their parameters as --json gives them, one per line, and errors for a bad KERNEL. */
START_TEST(test_kernels_names_args)
{
	static char names[8192], args[4096];
	size_t n = 0, a = 0;
	json_t *d = ctl_json("gpuctl kernels --json", "gpuctl.kernels");
	json_t *ks = json_object_get(d, "kernels");
	ck_assert_uint_ge(json_array_size(ks), 10);
	for (size_t i = 0; i < json_array_size(ks); i++) {
		json_t *k = json_array_get(ks, i), *ps = json_object_get(k, "params");
		const char *name = json_string_value(json_object_get(k, "name"));
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s\n", name);
		for (size_t j = 0; !strcmp(name, "lombscargle") && j < json_array_size(ps); j++) {
			json_t *p = json_array_get(ps, j);
			a += (size_t)snprintf(args + a, sizeof(args) - a, "%s %s\n",
					      json_string_value(json_object_get(p, "name")),
					      json_string_value(json_object_get(p, "role")));
		}
	}
	json_decref(d);
	ck_assert(n < sizeof(names) && a > 0 && a < sizeof(args));

	ctl_result *r = sh_run("gpuctl kernels --names");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, names);
	ck_assert_str_eq(r->err, "");
	r = sh_run("gpuctl kernels --args lombscargle");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, args);
	ck_assert_str_eq(r->err, "");
	ck_assert_str_eq(sh_run("gpuctl kernels --args=axpy")->out,
			 "x in\ny in\nz out inplace=x|y\na scalar\n");

	r = EXPECT("gpuctl kernels --args nosuch", EX_DATAERR,
		   "kernels --args: no kernel 'nosuch' ('gpuctl kernels --names' lists them)");
	ck_assert_str_eq(r->out, "");
	static const struct {
		const char *cmd, *words;
	} usage[] = {
		{"gpuctl kernels --args", "--args needs a value: a KERNEL name"},
		{"gpuctl kernels --names --json", "--json, --names, --custom and --args KERNEL"},
		{"gpuctl kernels --custom --names", "give one of them"},
		{"gpuctl kernels --args add --names", "give one of them"},
		{"gpuctl kernels --names add", "unexpected argument 'add'"},
	};
	for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++)
		ck_assert_str_eq(EXPECT(usage[i].cmd, EX_USAGE, usage[i].words)->out, "");
}
END_TEST

START_TEST(test_pipes)
{
	double x[50], y[50], f[20];
	char cmd[2048], h[32], want[1200];
	static char hex[1024];
	make_inputs(x, y, f);

	/* -o -: the .npy on stdout and nothing else; numpy reads it from the pipe */
	static const float u32_42[5] = {0x1.39d5ep-1, 0x1.dfd524p-2, 0x1.2bf50ap-4, 0x1.5d0adp-2,
					0x1.499bb4p-7};
	hex_of(u32_42, sizeof(u32_42), hex);
	ctl_result *r = sh_run(
		"gpuctl run uniform n=5 seed=42 dtype=float32 -o - | python3 -c 'import io, sys, "
		"numpy; f = io.BytesIO(sys.stdin.buffer.read()); a = numpy.lib.format.read_array(f); "
		"assert f.read() == b\"\", \"more than the array on stdout\"; "
		"print(a.dtype, a.shape, a.tobytes().hex())'");
	assert_sh_ok(r);
	snprintf(want, sizeof(want), "float32 (5,) %s\n", hex);
	ck_assert_str_eq(r->out, want);

	/* download -o -: a kept buffer, bit for bit */
	upload_kept("x.npy", h);
	hex_of(x, sizeof(x), hex);
	snprintf(cmd, sizeof(cmd),
		 "gpuctl download %s -o - | python3 -c 'import io, sys, numpy; "
		 "a = numpy.load(io.BytesIO(sys.stdin.buffer.read())); "
		 "print(a.dtype, a.shape, a.tobytes().hex())'",
		 h);
	r = sh_run(cmd);
	assert_sh_ok(r);
	ck_assert_msg(strncmp(r->out, "float64 (50,) ", 14) == 0 &&
			      strncmp(r->out + 14, hex, strlen(hex)) == 0,
		      "%s", r->out);
	snprintf(cmd, sizeof(cmd), "gpuctl free %s", h);
	assert_sh_ok(sh_run(cmd));

	/* x=- and x=@-: an array from stdin */
	r = sh_run("python3 -c 'import sys, numpy; numpy.save(sys.stdout.buffer, "
		   "numpy.arange(10, dtype=numpy.int64))' | gpuctl run sum x=-");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, "out: int64 () [45]\n");
	r = sh_run("python3 -c 'import sys, numpy; numpy.save(sys.stdout.buffer, "
		   "numpy.array([[1.5, 2], [3, 4]]))' | gpuctl run sum x=@-");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, "out: float64 () [10.5]\n");
	r = sh_run("gpuctl run sum x=- < x.npy");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, sh_run("gpuctl run sum x=@x.npy")->out);

	/* upload -: stdin into a kept buffer */
	r = sh_run("python3 -c 'import sys, numpy; numpy.save(sys.stdout.buffer, "
		   "numpy.arange(6, dtype=numpy.float32))' | gpuctl upload --keep -");
	assert_sh_ok(r);
	ck_assert_int_eq(sscanf(r->out, "%16s", h), 1);
	snprintf(cmd, sizeof(cmd), "gpuctl download %%%s -o got.npy && gpuctl free %s", h, h);
	assert_sh_ok(sh_run(cmd));
	gpud_array a = load("got.npy");
	ck_assert(a.dtype == GPUD_F32 && a.ndim == 1 && a.shape[0] == 6);
	for (int i = 0; i < 6; i++)
		ck_assert(((float *)a.data)[i] == (float)i);
	gpud_array_free(&a);

	/* Bigger than one round trip (uploaded, downloaded): gpuctl to gpuctl to numpy */
	assert_sh_ok(sh_run("gpuctl run uniform n=300000 seed=5 -o u.npy"));
	r = sh_run("gpuctl run uniform n=300000 seed=5 -o - | gpuctl run add x=- y=1 -o - | "
		   "python3 -c 'import io, sys, numpy; f = io.BytesIO(sys.stdin.buffer.read()); "
		   "a = numpy.lib.format.read_array(f); assert f.read() == b\"\"; "
		   "u = numpy.load(\"u.npy\"); print(a.shape, bool((a == u + 1).all()))'");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, "(300000,) True\n");
	r = sh_run("gpuctl run uniform n=300000 seed=5 -o - | gpuctl run sum x=-");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, sh_run("gpuctl run sum x=@u.npy")->out);

	/* What cannot work is refused */
	EXPECT("echo hello | gpuctl run sum x=-", EX_DATAERR, "argument 'x': stdin: not a .npy");
	EXPECT("gpuctl run sum x=-", EX_DATAERR, "stdin: not a .npy file (the file is empty)");
	EXPECT("gpuctl run add x=- y=@-", EX_USAGE,
	       "arguments 'x' and 'y' both read stdin: only one argument may");
	r = sh_run_tty("gpuctl run sum x=- </dev/tty");
	ck_assert_msg(r->code == EX_USAGE && strstr(r->err, "stdin is a terminal"), "%d %s",
		      r->code, r->err);
	r = sh_run_tty("gpuctl run uniform n=3 seed=1 -o - >/dev/tty");
	ck_assert_msg(r->code == EX_USAGE && strstr(r->err, "-o -: stdout is a terminal"), "%d %s",
		      r->code, r->err);
	r = sh_run_tty("gpuctl download 1234 -o - >/dev/tty");
	ck_assert_msg(r->code == EX_USAGE && strstr(r->err, "stdout is a terminal"), "%d %s",
		      r->code, r->err);

	gpud_client *c = lib_connect();
	gpud_daemon_status st = wait_no_buffers(c, E2E_SAFETY_S);
	ck_assert_msg(st.buffers == 0, "%" PRIu64 " buffers left", st.buffers);
	gpud_close(c);
}
END_TEST

START_TEST(test_values)
{
	double x[50], y[50], f[20];
	char cmd[1024], h[32], p[700];
	make_inputs(x, y, f);

	/* Integers are decimal, leading zero or not; 0x is hex */
	assert_sh_ok(sh_run("gpuctl run uniform n=010 seed=1 -o u.npy"));
	gpud_array a = load("u.npy");
	ck_assert_uint_eq(a.shape[0], 10);
	gpud_array_free(&a);
	assert_sh_ok(sh_run("gpuctl run histogram x=@x.npy bins=010 range_min=0 range_max=20 "
			    "-o c.npy"));
	a = load("c.npy");
	ck_assert_uint_eq(a.shape[0], 10);
	gpud_array_free(&a);
	assert_sh_ok(sh_run("gpuctl run uniform n=0x0C seed=+1 -o u.npy"));
	a = load("u.npy");
	ck_assert_uint_eq(a.shape[0], 12);
	gpud_array_free(&a);
	EXPECT("gpuctl run uniform n=10x seed=1", EX_USAGE,
	       "argument 'n': expected a number (a decimal integer such as 42, 0x and hex digits, "
	       "or a decimal such as 0.5 or 1e-3), got '10x'");
	EXPECT("gpuctl run uniform n=1_000 seed=1", EX_USAGE, "got '1_000'");
	EXPECT("gpuctl run uniform n=0x seed=1", EX_USAGE, "got '0x'");
	EXPECT("gpuctl run uniform n=08.5.1 seed=1", EX_USAGE, "got '08.5.1'");
	EXPECT("gpuctl run uniform n=3 seed=9223372036854775808", EX_USAGE,
	       "argument 'seed': expected an integer from -9223372036854775808 to "
	       "9223372036854775807 (int64), got 9223372036854775808");
	EXPECT("gpuctl run uniform n=3 seed=0x10000000000000000", EX_USAGE, "(int64)");
	EXPECT("gpuctl run uniform n=3 seed=-9223372036854775808", EX_DATAERR,
	       "argument 'seed' must be 0 to 2^63 - 1, got -9223372036854775808");
	EXPECT("gpuctl run axpy x=@x.npy y=@y.npy a=1e999", EX_USAGE,
	       "argument 'a': expected a float64 from -1.8e308 to 1.8e308 (or inf), got 1e999");
	/* Numbers of every form reach gpud as numbers */
	assert_sh_ok(sh_run("gpuctl run axpy x=@x.npy y=@y.npy a=-.5 -o z.npy"));
	a = load("z.npy");
	for (int i = 0; i < 50; i++)
		ck_assert(((double *)a.data)[i] == -0.5 * x[i] + y[i]);
	gpud_array_free(&a);
	EXPECT("gpuctl run histogram x=@x.npy range_min=-inf range_max=1", EX_DATAERR,
	       "argument 'range_min' must be a finite float64, got -inf");

	/* A value that reads as a scalar is the scalar, even with a file of that name here */
	static const double two[2] = {1.5, 2.5};
	static const char *const shadows[] = {"2", "true", "float32", "data"};
	for (size_t i = 0; i < 4; i++) {
		path_in_dir(p, sizeof(p), shadows[i]);
		save_vec(p, GPUD_F64, two, 2);
	}
	ctl_result *r = sh_run("gpuctl run uniform n=2 seed=1 dtype=float32 -o u.npy");
	assert_sh_ok(r);
	ck_assert_msg(strstr(r->err, "gpuctl: note: n=2 is the integer 2; a file named '2' is "
				     "here too: write n=@2 for the file") &&
			      strstr(r->err, "dtype=float32 is a word") &&
			      strstr(r->err, "write dtype=@float32 for the file"),
		      "%s", r->err);
	a = load("u.npy");
	ck_assert(a.dtype == GPUD_F32 && a.shape[0] == 2);
	gpud_array_free(&a);
	r = sh_run("gpuctl -q run uniform n=2 seed=1 dtype=float32 -o u.npy");
	assert_sh_ok(r);
	ck_assert_str_eq(r->err, "");
	r = sh_run("gpuctl run lombscargle x=@x.npy y=@y.npy freqs=@f.npy normalize=true "
		   "-o p1.npy && gpuctl -q run lombscargle x=@x.npy y=@y.npy freqs=@f.npy "
		   "normalize=1 -o p2.npy && cmp p1.npy p2.npy");
	assert_sh_ok(r);
	ck_assert_msg(strstr(r->err, "normalize=true is the boolean true"), "%s", r->err);
	r = sh_run("gpuctl run sum x=@2");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, "out: float64 () [4]\n");
	r = EXPECT("gpuctl run sum x=data", EX_DATAERR, "gpuctl: note: x=data is a word");
	ck_assert_msg(strstr(r->err, "write x=@data for the file"), "%s", r->err);

	/* The older forms still work: FILE.npy and paths without @, @HANDLE */
	assert_sh_ok(sh_run("gpuctl run sum x=x.npy"));
	r = sh_run("gpuctl run sum x=./x.npy");
	assert_sh_ok(r);
	ck_assert_str_eq(r->out, sh_run("gpuctl run sum x=@x.npy")->out);
	upload_kept("x.npy", h);
	for (int i = 0; i < 2; i++) {
		char v[64];
		snprintf(v, sizeof(v), "%c%s", i ? '@' : '%', h);
		snprintf(cmd, sizeof(cmd), "gpuctl run dot x=%s y=@y.npy -o d%d.npy", v, i);
		assert_sh_ok(sh_run(cmd));
	}
	ck_assert(sh_run("cmp d0.npy d1.npy")->code == 0);
	/* handles to download and free: bare, %, @ or 0x */
	static const char *const prefixes[] = {"", "%", "@", "0x"};
	for (int i = 0; i < 4; i++) {
		char v[64];
		snprintf(v, sizeof(v), "%s%s", prefixes[i], h);
		snprintf(cmd, sizeof(cmd), "gpuctl download %s -o back.npy && cmp back.npy x.npy",
			 v);
		assert_sh_ok(sh_run(cmd));
	}
	/* An output passed in as %HANDLE stays the caller's */
	snprintf(cmd, sizeof(cmd),
		 "gpuctl run add x=@y.npy y=1 z=%%%s -o got.npy && gpuctl download %s -o back.npy "
		 "&& cmp got.npy back.npy",
		 h, h);
	assert_sh_ok(sh_run(cmd));
	snprintf(cmd, sizeof(cmd), "gpuctl free 0x%s", h);
	assert_sh_ok(sh_run(cmd));
}
END_TEST

START_TEST(test_outputs)
{
	double x[50], y[50], f[20];
	make_inputs(x, y, f);

	/* Two -o for one output: an error naming it; nothing is written */
	EXPECT("gpuctl run uniform n=3 seed=1 -o a.npy -o b.npy", EX_USAGE,
	       "output 'out' is given two -o: 'a.npy' and 'b.npy'; give each output one");
	EXPECT("gpuctl run uniform n=3 seed=1 -o out=a.npy -o out=b.npy", EX_USAGE,
	       "output 'out' is given two -o: 'out=a.npy' and 'out=b.npy'");
	EXPECT("gpuctl run uniform n=3 seed=1 -o a.npy --output=out=b.npy", EX_USAGE,
	       "output 'out' is given two -o");
	EXPECT("gpuctl run uniform n=3 seed=1 -o - -oout=-", EX_USAGE,
	       "-o - and -o out=- both write stdout");
	ck_assert_msg(!exists_in_dir("a.npy") && !exists_in_dir("b.npy"),
		      "a refused -o wrote a file");
	EXPECT("gpuctl run uniform n=3 seed=1 -o nosuch=a.npy", EX_USAGE,
	       "-o nosuch=a.npy: uniform has no output 'nosuch' (its outputs: out)");
	EXPECT("gpuctl download 1234 -o a.npy -o b.npy", EX_USAGE,
	       "-o given twice ('a.npy' and 'b.npy')");

	/* -o NAME=@FILE is FILE; -oFILE and --output=FILE are -o FILE */
	assert_sh_ok(sh_run("gpuctl run uniform n=3 seed=1 -o out=@u1.npy && "
			    "gpuctl run uniform n=3 seed=1 -ou2.npy && "
			    "gpuctl run uniform n=3 seed=1 --output=u3.npy && "
			    "cmp u1.npy u2.npy && cmp u1.npy u3.npy"));

	/* A kernel with two outputs: each takes its own -o, never the same file */
	assert_sh_ok(sh_run("gpuctl kernel add two --elementwise 'float64 x' "
			    "'float64 p, float64 q' 'p = x; q = 2 * x'"));
	EXPECT("gpuctl run two x=@x.npy -o p=f.npy -o q=f.npy", EX_USAGE,
	       "outputs 'p' and 'q' both go to f.npy");
	EXPECT("gpuctl run two x=@x.npy -o p=- -o q=-", EX_USAGE, "both write stdout");
	EXPECT("gpuctl run two x=@x.npy -o f.npy", EX_USAGE,
	       "-o f.npy: two has 2 outputs (p, q); name each with -o NAME=FILE");
	assert_sh_ok(sh_run("gpuctl kernel rm two"));
}
END_TEST

/* Bytes of two files equal. */
static void assert_same_file(const char *a, const char *b)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "cmp %s %s", a, b);
	ctl_result *r = sh_run(cmd);
	ck_assert_msg(r->code == 0, "%s and %s differ: %s", a, b, r->out);
}

START_TEST(test_progress_on_terminal)
{
	char cmd[512], h[32];

	/* 12 MiB: moved in pieces under a bar when stderr is a terminal */
	assert_sh_ok(sh_run("gpuctl run uniform n=1500000 seed=9 -o big.npy"));
	ctl_result *r = sh_run_tty("GPUCTL_PROGRESS_DELAY=0 gpuctl upload --keep big.npy");
	assert_sh_ok(r);
	ck_assert_msg(strstr(r->err, "gpuctl: upload big.npy [") &&
			      strstr(r->err, "100% 11.4/11.4 MiB"),
		      "the terminal showed: %s", r->err);
	ck_assert_int_eq(sscanf(r->out, "%16s", h), 1);
	snprintf(cmd, sizeof(cmd), "GPUCTL_PROGRESS_DELAY=0 gpuctl download %s -o back.npy", h);
	r = sh_run_tty(cmd);
	assert_sh_ok(r);
	ck_assert_msg(strstr(r->err, "gpuctl: download ") && strstr(r->err, "100%"), "%s", r->err);
	assert_same_file("big.npy", "back.npy");
	snprintf(cmd, sizeof(cmd), "gpuctl free %s", h);
	assert_sh_ok(sh_run(cmd));

	/* run: inputs uploaded and outputs downloaded in pieces give what one call gives */
	r = sh_run_tty("GPUCTL_PROGRESS_DELAY=0 gpuctl run add x=@big.npy y=1 -o plus.npy");
	assert_sh_ok(r);
	ck_assert_msg(strstr(r->err, "gpuctl: upload big.npy") &&
			      strstr(r->err, "gpuctl: download z into plus.npy") &&
			      strstr(r->err, "100%"),
		      "%s", r->err);
	r = sh_run("GPUCTL_PROGRESS_DELAY=0 gpuctl run add x=@big.npy y=1 -o plus1.npy");
	assert_sh_ok(r);
	ck_assert_str_eq(r->err, ""); /* stderr not a terminal: no bar */
	assert_same_file("plus.npy", "plus1.npy");
	gpud_array a = load("big.npy"), b = load("plus.npy");
	for (size_t i = 0; i < a.shape[0]; i++)
		ck_assert(((double *)b.data)[i] == ((double *)a.data)[i] + 1);
	gpud_array_free(&a);
	gpud_array_free(&b);

	/* In a pipe, stdout carries the data and the terminal the bars */
	r = sh_run_tty("GPUCTL_PROGRESS_DELAY=0 gpuctl run add x=@big.npy y=1 -o - | "
		       "GPUCTL_PROGRESS_DELAY=0 gpuctl run sum x=-");
	assert_sh_ok(r);
	ck_assert_msg(strstr(r->err, "gpuctl: download z into stdout") &&
			      strstr(r->err, "gpuctl: upload stdin"),
		      "%s", r->err);
	ck_assert_str_eq(r->out, sh_run("gpuctl run sum x=@plus.npy")->out);

	/* -q: nothing drawn */
	r = sh_run_tty("GPUCTL_PROGRESS_DELAY=0 gpuctl -q run add x=@big.npy y=1 -o plus2.npy");
	assert_sh_ok(r);
	ck_assert_msg(r->err[0] == '\0', "-q drew: %s", r->err);
	assert_same_file("plus.npy", "plus2.npy");

	/* The run itself: a spinner while waiting, when runs are jobs */
	r = sh_run_tty("GPUCTL_PROGRESS_DELAY=0 gpuctl run sum x=@plus.npy");
	assert_sh_ok(r);
	if (GPUCTL_RUN_ASYNC)
		ck_assert_msg(strstr(r->err, "gpuctl: run sum") && strstr(r->err, "done in"), "%s",
			      r->err);
	else
		ck_assert_msg(strstr(r->err, "gpuctl: run") == NULL, "%s", r->err);

	gpud_client *c = lib_connect();
	gpud_daemon_status st = wait_no_buffers(c, E2E_SAFETY_S);
	ck_assert_msg(st.buffers == 0, "%" PRIu64 " buffers left", st.buffers);
	gpud_close(c);
}
END_TEST

/* 75: over a quota (device_bytes = 1 MiB in this gpud) */
static void setup_quota(void)
{
	start_gpud("[quota]\ndevice_bytes = 1MiB\n", NULL, NULL);
}

START_TEST(test_quota_exit_status)
{
	/* 1.6 MB: more than the quota allows */
	static double v[200000];
	char p[700];
	for (int i = 0; i < 200000; i++)
		v[i] = i;
	path_in_dir(p, sizeof(p), "big.npy");
	save_vec(p, GPUD_F64, v, 200000);
	EXPECT("gpuctl upload --keep big.npy", EX_TEMPFAIL, "device_bytes quota of tenant");
	EXPECT("gpuctl run add x=@big.npy y=1 -o z.npy", EX_TEMPFAIL, "device_bytes quota");
	ctl_result *r = sh_run_tty("GPUCTL_PROGRESS_DELAY=0 gpuctl upload --keep big.npy");
	ck_assert_msg(r->code == EX_TEMPFAIL && strstr(r->err, "device_bytes quota"), "%d %s",
		      r->code, r->err);
	/* under it, all is well */
	r = sh_run("gpuctl run uniform n=1000 seed=1 -o - | gpuctl run sum x=-");
	assert_sh_ok(r);
}
END_TEST

TCase *e2e_gpuctl_cli(void)
{
	TCase *tc = tcase_create("gpuctl cli");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_help_texts);
	tcase_add_test(tc, test_usage_errors);
	tcase_add_test(tc, test_exit_statuses);
	tcase_add_test(tc, test_pipes);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_kernels_names_args);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_outputs);
	tcase_add_test(tc, test_progress_on_terminal);
	return tc;
}

TCase *e2e_gpuctl_quota(void)
{
	TCase *tc = tcase_create("gpuctl quota");
	tcase_add_checked_fixture(tc, setup_quota, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_quota_exit_status);
	return tc;
}
