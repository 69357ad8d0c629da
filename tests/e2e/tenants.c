/*
 * tests/e2e/tenants.c — test case "tenants": tokens over tcp:// and
 * tls+tcp://, isolation between tenants (and between uids over ipc://),
 * custom and shared kernels, hello first, kept buffers and quotas. The
 * configs gpud refuses at start (tokens, TLS key, listen URLs) are in
 * tenants_refused.c, in the same test case.
 */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/npy.h>

#include <jansson.h>

#include "tests/e2e/e2e.h"
#include "tests/tls_fixture.h"

static char tcp_url[64], tls_url[64], tokens_path[700], cert_path[700], other_path[700];

static void setup_tenants(void)
{
	/* quota: 1 MiB of device memory, 2 kept buffers, 1 request in flight;
	 * bob: 3 kept buffers and 64 KiB messages */
	static char conf[4096];
	static const char *extra[] = {"--listen", tcp_url, "--listen", tls_url, NULL};
	static char key_path[700];
	int tcp_port = e2e_free_port(), tls_port;
	while ((tls_port = e2e_free_port()) == tcp_port)
		;
	snprintf(tcp_url, sizeof(tcp_url), "tcp://127.0.0.1:%d", tcp_port);
	snprintf(tls_url, sizeof(tls_url), "tls+tcp://127.0.0.1:%d", tls_port);
	snprintf(cert_path, sizeof(cert_path), "%s/cert-%d.pem", base_dir, (int)getpid());
	snprintf(key_path, sizeof(key_path), "%s/key-%d.pem", base_dir, (int)getpid());
	snprintf(other_path, sizeof(other_path), "%s/other-%d.pem", base_dir, (int)getpid());
	write_text(cert_path, test_tls_cert);
	write_text(key_path, test_tls_key);
	chmod(key_path, 0600);
	write_text(other_path, other_tls_cert);
	snprintf(tokens_path, sizeof(tokens_path), "%s/tokens-%d", base_dir, (int)getpid());
	write_text(tokens_path, "# tenant token\nalice " TOKEN_ALICE "\nbob " TOKEN_BOB "\n");
	chmod(tokens_path, 0600);
	snprintf(conf, sizeof(conf),
		 "[gpud]\nsocket_mode = 0666\ntokens_file = %s\ntls_cert = %s\ntls_key = %s\n"
		 "admin_tenants = alice\n"
		 "[quota]\ndevice_bytes = 1MiB\nkept_buffers = 2\nrequests_in_flight = 1\n"
		 "[tenant bob]\nkept_buffers = 3\nmessage_size = 64KiB\n",
		 tokens_path, cert_path, key_path);
	start_gpud(conf, extra, NULL);
}

static gpud_client *connect_as(const char *u, const char *token, gpud_status want)
{
	gpud_client *c;
	if (token)
		setenv("GPUD_TOKEN", token, 1);
	else
		unsetenv("GPUD_TOKEN");
	gpud_status st = gpud_connect(u, &c);
	unsetenv("GPUD_TOKEN");
	ck_assert_msg(st == want, "connect %s with %s: %s: %s", u, token ? token : "no token",
		      gpud_strerror(st), gpud_errmsg(c));
	if (st != GPUD_OK) {
		gpud_close(c);
		return NULL;
	}
	gpud_set_timeout(c, 30000);
	return c;
}

/* gpuctl over tcp:// with --token: upload, ls, free; without: refused. */
static void gpuctl_token_checks(void)
{
	char px[700];
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	path_in_dir(px, sizeof(px), "tok.npy");
	save_vec(px, GPUD_F64, v, 8);
	ctl_result *r = CTL_AT(tcp_url, "upload", px);
	ck_assert_msg(r->code == EX_NOPERM && strstr(r->err, "no token"),
		      "gpuctl without a token: %d %s", r->code, r->err);
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "upload", px, "--keep");
	assert_ctl_ok(r);
	char handle[32];
	ck_assert_int_eq(sscanf(r->out, "%31s", handle), 1);
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "ls");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, handle) && strstr(r->out, "tenant bob"), "ls: %s", r->out);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "ls");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, handle) == NULL, "alice's ls shows bob's buffer: %s", r->out);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "free", handle);
	ck_assert_msg(r->code == EX_DATAERR && strstr(r->err, "unknown handle"),
		      "alice frees bob's: %s", r->err);
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "free", handle);
	assert_ctl_ok(r);
}

START_TEST(test_tcp_tokens_and_isolation)
{
	gpud_client *none = NULL, *alice, *bob, *alice2;
	uint64_t n = 16;
	double v[16], got[16];
	for (int i = 0; i < 16; i++)
		v[i] = i * 1.5;

	/* no token, a wrong one: refused at hello, named */
	gpud_status st = gpud_connect(tcp_url, &none);
	ck_assert_int_eq(st, GPUD_EACCESS);
	ck_assert_msg(strstr(gpud_errmsg(none), "no token"), "%s", gpud_errmsg(none));
	gpud_close(none);
	setenv("GPUD_TOKEN", "alice-0123456789abcdeX", 1);
	st = gpud_connect(tcp_url, &none);
	unsetenv("GPUD_TOKEN");
	ck_assert_int_eq(st, GPUD_EACCESS);
	ck_assert_msg(strstr(gpud_errmsg(none), "unknown token"), "%s", gpud_errmsg(none));
	gpud_close(none);

	alice = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK);
	bob = connect_as(tcp_url, TOKEN_BOB, GPUD_OK);
	ck_assert_str_eq(gpud_server(alice)->tenant, "alice");
	ck_assert_str_eq(gpud_server(bob)->tenant, "bob");
	ck_assert(!gpud_has_shm(alice)); /* host regions need ipc:// */
	ck_assert_ptr_null(gpud_host_alloc(alice, 4096));
	ck_assert_msg(strstr(gpud_errmsg(alice), "ipc://") != NULL, "%s", gpud_errmsg(alice));

	gpud_handle ha, hb, made_up = 0x0000456789abcdefull;
	LIB_OK(alice, gpud_alloc(alice, GPUD_F64, 1, &n, v, &ha));
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &n, v, &hb));
	/* bob names alice's handle: the same answer as one that never existed */
	char msg_theirs[512], msg_none[512];
	LIB_FAIL(bob, gpud_download_range(bob, ha, 0, got, sizeof(got)), GPUD_ENOTFOUND,
		 "unknown handle");
	snprintf(msg_theirs, sizeof(msg_theirs), "%s", gpud_errmsg(bob));
	LIB_FAIL(bob, gpud_download_range(bob, made_up, 0, got, sizeof(got)), GPUD_ENOTFOUND,
		 "unknown handle");
	snprintf(msg_none, sizeof(msg_none), "%s", gpud_errmsg(bob));
	ck_assert_uint_eq(strlen(msg_theirs), strlen(msg_none)); /* but for the digits */
	LIB_FAIL(bob, gpud_free(bob, &ha, 1), GPUD_ENOTFOUND, "unknown handle");
	LIB_FAIL(bob, gpud_upload(bob, ha, 0, v, 8), GPUD_ENOTFOUND, "unknown handle");
	gpud_arg args[] = {gpud_arg_buffer("x", ha), gpud_arg_buffer("y", hb),
			   gpud_arg_buffer("freqs", hb)};
	LIB_FAIL(bob, gpud_run(bob, "lombscargle", args, 3, NULL, 0, NULL, NULL), GPUD_ENOTFOUND,
		 "unknown handle");
	/* alice's data untouched; another connection of alice's sees it */
	alice2 = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK);
	LIB_OK(alice2, gpud_download_range(alice2, ha, 0, got, sizeof(got)));
	ck_assert(memcmp(got, v, sizeof(v)) == 0);

	/* bob's message_size quota (64 KiB) comes in hello: his 160 KB upload
	 * goes in pieces that fit it, and comes back intact */
	ck_assert_uint_eq(gpud_server(bob)->max_message_size, 65536);
	ck_assert_uint_eq(gpud_server(alice)->max_message_size, 256u << 20);
	uint64_t big = 20000;
	double *bv = calloc(big, sizeof(double)), *bback = calloc(big, sizeof(double));
	for (uint64_t i = 0; i < big; i++)
		bv[i] = (double)i - 0.5;
	gpud_handle hbig;
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &big, NULL, &hbig));
	LIB_OK(bob, gpud_upload(bob, hbig, 0, bv, big * sizeof(double)));
	LIB_OK(bob, gpud_download_range(bob, hbig, 0, bback, big * sizeof(double)));
	ck_assert_msg(memcmp(bv, bback, big * sizeof(double)) == 0,
		      "bob's upload under his message_size quota came back changed");
	LIB_OK(bob, gpud_free(bob, &hbig, 1));
	free(bv);
	free(bback);
	gpuctl_token_checks();
	gpud_close(alice);
	gpud_close(alice2);
	gpud_close(bob);
}
END_TEST

START_TEST(test_tls_with_tokens)
{
	gpud_client *c;
	uint64_t n = 8;
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8];

	/* no CA to check gpud against: refused before connecting, with the fix */
	unsetenv("GPUD_TLS_CA");
	gpud_status st = gpud_connect(tls_url, &c);
	ck_assert_int_eq(st, GPUD_ECONNECT);
	ck_assert_msg(strstr(gpud_errmsg(c), "GPUD_TLS_CA"), "%s", gpud_errmsg(c));
	gpud_close(c);
	/* a CA that did not sign gpud's certificate: the handshake fails */
	setenv("GPUD_TLS_CA", other_path, 1);
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	setenv("GPUD_TOKEN", TOKEN_ALICE, 1);
	st = gpud_connect(tls_url, &c);
	ck_assert_msg(st != GPUD_OK, "connected over TLS with the wrong CA");
	printf("tls with the wrong CA: %s\n", gpud_errmsg(c));
	gpud_close(c);
	/* the right CA and a token: tenant alice, over an encrypted connection
	 * (mbedtls matches DNS names, so the name to check is given) */
	setenv("GPUD_TLS_CA", cert_path, 1);
	setenv("GPUD_TLS_SERVER_NAME", "localhost", 1);
	st = gpud_connect(tls_url, &c);
	unsetenv("GPUD_TOKEN");
	ck_assert_msg(st == GPUD_OK, "tls connect: %s", gpud_errmsg(c));
	ck_assert_str_eq(gpud_server(c)->tenant, "alice");
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &h));
	LIB_OK(c, gpud_download_range(c, h, 0, got, sizeof(got)));
	ck_assert(memcmp(got, v, sizeof(v)) == 0);
	gpud_close(c);
	/* and without a token the hello is refused, as on tcp:// */
	st = gpud_connect(tls_url, &c);
	ck_assert_int_eq(st, GPUD_EACCESS);
	gpud_close(c);
	unsetenv("GPUD_TLS_CA");
	unsetenv("GPUD_TLS_SERVER_NAME");
}
END_TEST

/* Custom kernels on the cpu backend: registered and checked, not run. */
START_TEST(test_custom_kernels_registered)
{
	const char *ew_in = "float32 x, float32 y, float32 a", *ew_out = "float32 z",
		   *body = "z = exp(a * sin(x) + cos(y))";
	ctl_result *r = CTL("kernel", "add", "my_saxpy_trig", "--elementwise", ew_in, ew_out, body);
	if (strcmp(expected_backend(), "cpu") != 0) {
		/* compiled and run on the GPU: make test-gpu covers that */
		assert_ctl_ok(r);
		assert_ctl_ok(CTL("kernel", "rm", "my_saxpy_trig"));
		return;
	}
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "registered my_saxpy_trig"), "%s", r->out);
	r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "my_saxpy_trig") && strstr(r->out, "float32 array or scalar"),
		      "kernels: %s", r->out);
	/* columns apart: name, role and type each followed by two blanks */
	ck_assert_msg(strstr(r->out, "\n    x  in   float32 array or scalar\n"), "kernels: %s",
		      r->out);
	r = CTL("kernels", "--custom");
	assert_ctl_ok(r);
	ck_assert_msg(strncmp(r->out, "NAME           SCOPE   PIN       LAST USED\n", 43) == 0 &&
			      strstr(r->out, "\nmy_saxpy_trig  own     pinned    20"),
		      "kernels --custom: %s", r->out);

	float x[4] = {0.1f, 0.2f, 0.3f, 0.4f}, y[5] = {1, 2, 3, 4, 5};
	char px[700], py[700], py5[700], px64[700], ax[720], ay[720], ay5[720], ax64[720];
	uint64_t s4 = 4, s5 = 5;
	path_in_dir(px, sizeof(px), "cx.npy");
	path_in_dir(py, sizeof(py), "cy.npy");
	path_in_dir(py5, sizeof(py5), "cy5.npy");
	path_in_dir(px64, sizeof(px64), "cx64.npy");
	save_npy(px, GPUD_F32, 1, &s4, x);
	save_npy(py, GPUD_F32, 1, &s4, y);
	save_npy(py5, GPUD_F32, 1, &s5, y);
	double x64[4] = {0.1, 0.2, 0.3, 0.4};
	save_npy(px64, GPUD_F64, 1, &s4, x64);
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(ay5, sizeof(ay5), "y=%s", py5);
	snprintf(ax64, sizeof(ax64), "x=%s", px64);
	/* checked like a built-in, then the cpu backend says it cannot run it */
	CTL_FAIL(EX_SOFTWARE, "custom kernels need the cuda backend", "run", "my_saxpy_trig", ax,
		 ay, "a=0.5");
	CTL_FAIL(EX_DATAERR, "'y' has 5 elements but 'x' has 4", "run", "my_saxpy_trig", ax, ay5,
		 "a=0.5");
	CTL_FAIL(EX_DATAERR, "'x'", "run", "my_saxpy_trig", ax64, ay, "a=0.5");
	CTL_FAIL(EX_DATAERR, "missing argument 'a'", "run", "my_saxpy_trig", ax, ay);
	CTL_FAIL(EX_DATAERR, "is a built-in kernel", "kernel", "add", "lombscargle",
		 "--elementwise", ew_in, ew_out, body);
	CTL_FAIL(EX_DATAERR, "registered already", "kernel", "add", "my_saxpy_trig",
		 "--elementwise", ew_in, ew_out, body);
	CTL_FAIL(EX_DATAERR, "declares no output", "kernel", "add", "noout", "--elementwise", ew_in,
		 "", body);

	/* raw: the signature and source are checked */
	char src[700];
	path_in_dir(src, sizeof(src), "scale.cu");
	write_text(src, "extern \"C\" __global__ void scale(const float *x, float *y, float s, "
			"int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = "
			"s * x[i]; }\n");
	CTL_FAIL(EX_DATAERR, "unknown type 'f33'", "kernel", "add", "scale", "--source", src,
		 "--entry", "scale", "--sig", "x:in f33[], y:out f32[]");
	CTL_FAIL(EX_DATAERR, "has no 'scal'", "kernel", "add", "scale", "--source", src, "--entry",
		 "scal", "--sig", "x:in f32[], y:out f32[], s:f32, n:i32");
	CTL_FAIL(EX_USAGE, "needs --source FILE.cu", "kernel", "add", "scale", "--entry", "scale");
	r = CTL("kernel", "add", "scale", "--source", src, "--entry", "scale", "--sig",
		"x:in f32[], y:out f32[], s:f32, n:i32", "--blocks-per-sm", "2");
	assert_ctl_ok(r);
	CTL_FAIL(EX_DATAERR, "output 'y' must be passed as a buffer", "run", "scale", ax, "s=2",
		 "n=4");

	/* another tenant sees none of it, and has a namespace of its own */
	gpud_client *bob = connect_as(tcp_url, TOKEN_BOB, GPUD_OK);
	gpud_kernel_list *kl;
	LIB_OK(bob, gpud_kernels(bob, &kl));
	for (size_t i = 0; i < kl->count; i++)
		ck_assert_msg(strcmp(kl->kernels[i].name, "my_saxpy_trig") != 0,
			      "bob sees the other tenant's kernel");
	gpud_kernel_list_free(kl);
	LIB_FAIL(bob, gpud_run(bob, "my_saxpy_trig", NULL, 0, NULL, 0, NULL, NULL),
		 GPUD_EUNKNOWN_KERNEL, "unknown kernel 'my_saxpy_trig'");
	gpud_kernel_spec spec = {.name = "my_saxpy_trig",
				 .elementwise = 1,
				 .source = "z = x",
				 .in_params = "float64 x",
				 .out_params = "float64 z"};
	LIB_OK(bob, gpud_register(bob, &spec));
	gpud_close(bob);

	r = CTL("kernel", "rm", "my_saxpy_trig");
	assert_ctl_ok(r);
	CTL_FAIL(EX_DATAERR, "unknown kernel 'my_saxpy_trig'", "run", "my_saxpy_trig", ax, ay,
		 "a=0.5");
	CTL_FAIL(EX_DATAERR, "no kernel 'my_saxpy_trig'", "kernel", "rm", "my_saxpy_trig");
	assert_daemon_alive("custom kernel registrations");
}
END_TEST

/* Kernels an administrator shares with every tenant. */
START_TEST(test_shared_kernels)
{
	gpud_client *alice = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK),
		    *bob = connect_as(tcp_url, TOKEN_BOB, GPUD_OK);
	gpud_kernel_spec spec = {.name = "double_it",
				 .elementwise = 1,
				 .source = "y = 2 * x",
				 .in_params = "float64 x",
				 .out_params = "float64 y",
				 .shared = 1};
	LIB_FAIL(bob, gpud_register(bob, &spec), GPUD_EACCESS, "not in admin_tenants");
	LIB_OK(alice, gpud_register(alice, &spec));
	/* bob sees it, runs it (checked; the cpu backend then declines), cannot take its name */
	gpud_kernel_list *kl;
	LIB_OK(bob, gpud_kernels(bob, &kl));
	int seen = 0;
	for (size_t i = 0; i < kl->count; i++)
		if (!strcmp(kl->kernels[i].name, "double_it"))
			seen = strstr(kl->kernels[i].doc, "shared") != NULL;
	gpud_kernel_list_free(kl);
	ck_assert_msg(seen, "bob does not see the shared kernel");
	double v[3] = {1, 2, 3};
	gpud_array a = {.dtype = GPUD_F64, .ndim = 1, .shape = {3}, .data = v, .nbytes = 24};
	gpud_arg args[] = {gpud_arg_array("x", &a)};
	gpud_result out;
	size_t no;
	if (!strcmp(expected_backend(), "cpu"))
		LIB_FAIL(bob, gpud_call(bob, "double_it", args, 1, &out, 1, &no, NULL),
			 GPUD_EUNSUPPORTED, "need the cuda backend");
	gpud_kernel_spec mine = spec;
	mine.shared = 0;
	LIB_FAIL(bob, gpud_register(bob, &mine), GPUD_EINVAL, "is a shared kernel");
	LIB_FAIL(bob, gpud_unregister_shared(bob, "double_it"), GPUD_EACCESS, "admin_tenants");
	LIB_FAIL(bob, gpud_unregister(bob, "double_it"), GPUD_EUNKNOWN_KERNEL, "no kernel");
	LIB_OK(alice, gpud_unregister_shared(alice, "double_it"));
	LIB_FAIL(bob, gpud_call(bob, "double_it", args, 1, &out, 1, &no, NULL),
		 GPUD_EUNKNOWN_KERNEL, "unknown kernel 'double_it'");
	gpud_close(alice);
	gpud_close(bob);
}
END_TEST

START_TEST(test_hello_first)
{
	nng_socket s = raw_open(10000);
	pb alloc = {.n = 0}, shape = {.n = 0}, empty = {.n = 0};
	pb_uint(&alloc, 1, 2);
	pb_varint(&shape, 4);
	pb_sub(&alloc, 2, &shape);
	raw_reply r = raw_body_on(s, 3, 11, &alloc, NULL, 0);
	ck_assert_msg(r.code == 15 && strstr(r.message, "send hello first"), "%" PRIu64 " %s",
		      r.code, r.message);
	r = raw_body_on(s, 4, 17, &empty, NULL, 0); /* status is served */
	ck_assert_uint_eq(r.code, ST_OK);
	raw_say_hello(s);
	r = raw_body_on(s, 5, 11, &alloc, NULL, 0);
	ck_assert_msg(r.code == ST_OK, "alloc after hello: %s", r.message);
	nng_close(s);
}
END_TEST

/* This program as another user (see main): alloc, print "tenant handle", then
 * try the handle read from stdin and print the status and message. */
int as_uid_main(long uid, const char *u)
{
	gpud_client *c = connect_as_uid(uid, u);
	if (c == NULL)
		return 1;
	uint64_t n = 4;
	double v[4] = {1, 2, 3, 4}, got[4];
	gpud_handle h;
	if (gpud_alloc(c, GPUD_F64, 1, &n, v, &h) != GPUD_OK) {
		printf("alloc: %s\n", gpud_errmsg(c));
		return 1;
	}
	printf("%s %016llx\n", gpud_server(c)->tenant, (unsigned long long)h);
	fflush(stdout);
	char line[64];
	if (fgets(line, sizeof(line), stdin) == NULL)
		return 1;
	gpud_status st = gpud_download_range(c, strtoull(line, NULL, 16), 0, got, sizeof(got));
	printf("%d %s\n", (int)st, st ? gpud_errmsg(c) : "read");
	fflush(stdout);
	gpud_close(c);
	return 0;
}

START_TEST(test_two_uids_over_ipc)
{
	if (getuid() != 0) {
		printf("two uids: skipped (needs root to setuid; CI runs as root)\n");
		return;
	}
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(self_path, self_path, "--as-uid", "65534", e2e_gpud.url, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	FILE *fo = fdopen(out[0], "r"), *fi = fdopen(in[1], "w");
	char line[1024], tenant[64];
	unsigned long long theirs;
	ck_assert_msg(fgets(line, sizeof(line), fo) != NULL, "the uid-65534 client said nothing");
	ck_assert_msg(sscanf(line, "%63s %llx", tenant, &theirs) == 2, "uid 65534: %s", line);

	gpud_client *c = lib_connect();
	ck_assert_str_eq(gpud_server(c)->tenant, "root");
	/* the other user's name, looked up as its connection was made */
	struct passwd *pw = getpwuid(65534);
	ck_assert_str_eq(tenant, pw ? pw->pw_name : "uid:65534");
	uint64_t n = 4;
	double v[4] = {9, 8, 7, 6}, got[4];
	gpud_handle mine;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &mine));
	/* root names the other user's handle: not found */
	LIB_FAIL(c, gpud_download_range(c, theirs, 0, got, sizeof(got)), GPUD_ENOTFOUND,
		 "unknown handle");
	/* the other user names root's */
	fprintf(fi, "%016llx\n", (unsigned long long)mine);
	fflush(fi);
	ck_assert(fgets(line, sizeof(line), fo) != NULL);
	ck_assert_msg(strncmp(line, "2 ", 2) == 0 && strstr(line, "unknown handle"),
		      "uid 65534 reading root's handle: %s", line);
	int st;
	waitpid(pid, &st, 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fclose(fo);
	fclose(fi);
	/* status lists both tenants' connections while they lasted; root's data intact */
	LIB_OK(c, gpud_download_range(c, mine, 0, got, sizeof(got)));
	ck_assert(memcmp(got, v, sizeof(v)) == 0);
	gpud_close(c);
}
END_TEST

START_TEST(test_kept_buffers_and_quotas)
{
	char px[700], py[700], pf[700], po[700], ax[720], ay[720], af[720], err[512];
	const size_t nx = 30, nf = 50;
	double x[30], y[30], f[50], ref[50];

	/* gpuctl upload --keep: outlives gpuctl; run with @HANDLE; download; free */
	gen_ls(31, nx, nf, x, y, f);
	ls_ref(x, y, nx, f, nf, 0, 0, ref);
	save_ls_inputs("k", x, y, nx, f, nf, px, py, pf);
	path_in_dir(po, sizeof(po), "ko.npy");
	ctl_result *r = CTL("upload", px, "--keep");
	assert_ctl_ok(r);
	char hx[40];
	ck_assert_int_eq(sscanf(r->out, "%31s", hx + 1), 1);
	hx[0] = '@';
	r = CTL("upload", py); /* not kept: gone when that gpuctl exits */
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->err, "without --keep"), "%s", r->err);
	r = CTL("ls");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "1 kept buffers") && strstr(r->out, hx + 1), "ls: %s", r->out);
	snprintf(ax, sizeof(ax), "x=%s", hx);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(af, sizeof(af), "freqs=%s", pf);
	r = CTL("run", "lombscargle", ax, ay, af, "-o", po);
	assert_ctl_ok(r);
	gpud_array a;
	ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
	assert_matches(a.data, GPUD_F64, ref, nf, "run with x=@HANDLE");
	gpud_array_free(&a);
	r = CTL("download", hx + 1, "-o", po);
	assert_ctl_ok(r);
	ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
	ck_assert(a.nbytes == sizeof(x) && memcmp(a.data, x, sizeof(x)) == 0);
	gpud_array_free(&a);
	CTL_FAIL(EX_USAGE, "not a handle", "free", "zz");

	gpud_client *c = lib_connect();
	gpud_daemon_status st = lib_status(c);
	ck_assert_uint_eq(st.buffers, 1); /* only the kept one */

	/* kept_buffers = 2 (one in use): a second is fine, a third is over */
	uint64_t n = 4;
	double v[4] = {1, 2, 3, 4};
	gpud_handle k2, k3, h1, h2;
	gpud_set_keep(c, 1);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &k2));
	LIB_FAIL(c, gpud_alloc(c, GPUD_F64, 1, &n, v, &k3), GPUD_EQUOTA,
		 "kept_buffers quota of tenant");
	ck_assert_msg(strstr(gpud_errmsg(c), "keeps 2 of 2"), "%s", gpud_errmsg(c));
	gpud_set_keep(c, 0);
	/* device_bytes = 1 MiB: 600 KiB fits, another 600 KiB does not */
	uint64_t m = 600 * 1024 / 8;
	double *big = malloc(m * sizeof(double));
	for (uint64_t i = 0; i < m; i++)
		big[i] = (double)i;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &m, big, &h1));
	LIB_FAIL(c, gpud_alloc(c, GPUD_F64, 1, &m, NULL, &h2), GPUD_EQUOTA,
		 "device_bytes quota of tenant");
	ck_assert_msg(strstr(gpud_errmsg(c), "614400 bytes asked") &&
			      strstr(gpud_errmsg(c), "1048576"),
		      "%s", gpud_errmsg(c));
	/* nothing of the tenant's was touched */
	double *back = malloc(m * sizeof(double));
	LIB_OK(c, gpud_download_range(c, h1, 0, back, m * sizeof(double)));
	ck_assert(memcmp(back, big, m * sizeof(double)) == 0);
	free(back);
	free(big);
	LIB_OK(c, gpud_free(c, &h1, 1));
	r = CTL("free", hx + 1);
	assert_ctl_ok(r);
	LIB_OK(c, gpud_free(c, &k2, 1));
	r = CTL("ls");
	ck_assert_msg(strstr(r->out, "0 kept buffers"), "ls: %s", r->out);
	gpud_close(c);
}
END_TEST

/* requests_in_flight = 1: a second request of the tenant while one runs is refused. */
static void *slow_run(void *arg)
{
	ls_result *res = arg;
	const size_t nx = 3000, nf = 60000;
	float *x = malloc(nx * 4), *y = malloc(nx * 4), *f = malloc(nf * 4);
	for (size_t i = 0; i < nx; i++) {
		x[i] = (float)i * 0.01f;
		y[i] = (float)((i * 7) % 13) - 6.0f + 0.5f;
	}
	for (size_t i = 0; i < nf; i++)
		f[i] = 0.01f + (float)i * 1e-4f;
	gpud_client *c;
	res->st = gpud_connect(e2e_gpud.url, &c);
	if (res->st == GPUD_OK) {
		gpud_array ax = {.dtype = GPUD_F32,
				 .ndim = 1,
				 .shape = {nx},
				 .data = x,
				 .nbytes = nx * 4},
			   ay = {.dtype = GPUD_F32,
				 .ndim = 1,
				 .shape = {nx},
				 .data = y,
				 .nbytes = nx * 4},
			   af = {.dtype = GPUD_F32,
				 .ndim = 1,
				 .shape = {nf},
				 .data = f,
				 .nbytes = nf * 4};
		gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
				   gpud_arg_array("freqs", &af)};
		gpud_result out;
		size_t no;
		res->st = gpud_call(c, "lombscargle", args, 3, &out, 1, &no, &res->info);
		if (res->st == GPUD_OK)
			gpud_array_free(&out.array);
		else
			snprintf(res->msg, sizeof(res->msg), "%s", gpud_errmsg(c));
	}
	gpud_close(c);
	free(x);
	free(y);
	free(f);
	return NULL;
}

START_TEST(test_requests_in_flight_quota)
{
	if (strcmp(expected_backend(), "cpu") != 0) {
		/* The quota is the daemon's, not the backend's; a GPU finishes the
		 * run before a second request can find it in flight. */
		printf("requests_in_flight: checked on the cpu backend (runs there are slow enough)\n");
		return;
	}
	ls_result res;
	memset(&res, 0, sizeof(res));
	gpud_client *c = lib_connect();
	pthread_t th;
	pthread_create(&th, NULL, slow_run, &res);
	gpud_status st = GPUD_OK;
	double deadline = harness_now_s() + E2E_SAFETY_S;
	/* status is always served; an alloc of the same tenant is over the quota */
	while (harness_now_s() < deadline) {
		gpud_daemon_status ds = lib_status(c);
		if (ds.in_flight >= 2) { /* the run and this status */
			uint64_t n = 4;
			gpud_handle h;
			st = gpud_alloc(c, GPUD_F64, 1, &n, NULL, &h);
			break;
		}
		harness_sleep_ms(5);
	}
	ck_assert_msg(st == GPUD_EQUOTA && strstr(gpud_errmsg(c), "requests_in_flight quota"),
		      "an alloc while the tenant's run is in flight: %s: %s", gpud_strerror(st),
		      gpud_errmsg(c));
	pthread_join(th, NULL);
	ck_assert_msg(res.st == GPUD_OK, "the slow run: %s", res.msg);
	gpud_close(c);
}
END_TEST

/* gpuctl status over tcp:// needs no token: gpud serves status before
 * hello (what gpud is: version, protocol, devices), and gpuctl says it is
 * showing that; other commands stay refused. */
START_TEST(test_status_over_tcp_without_token)
{
	ctl_result *r = CTL_AT(tcp_url, "status");
	ck_assert_msg(r->code == 0, "gpuctl status without a token: %d %s", r->code, r->err);
	char backend_line[64];
	snprintf(backend_line, sizeof(backend_line), "backend      %s", expected_backend());
	ck_assert_msg(strstr(r->out, "(protocol 1)") && strstr(r->out, backend_line) &&
			      strstr(r->out, "device 0 ") &&
			      strstr(r->out, "before hello: version, protocol and devices only"),
		      "status without a token: %s", r->out);
	ck_assert_msg(strstr(r->out, "connections  ") == NULL && strstr(r->out, "uptime") == NULL &&
			      strstr(r->out, "sessions") == NULL,
		      "status without a token shows what gpud does: %s", r->out);
	ck_assert_msg(strstr(r->err, "status gpud gives before hello"),
		      "gpuctl does not say it shows the status before hello: %s", r->err);
	r = CTL_AT(tcp_url, "--token", "not-a-token-of-anyone", "status", "--json");
	ck_assert_msg(r->code == 0 && strstr(r->out, "\"schema\": \"gpuctl.status\""),
		      "status --json with a bad token: %d %s %s", r->code, r->out, r->err);
	json_error_t je;
	json_t *doc = json_loads(r->out, 0, &je);
	ck_assert_msg(doc, "status --json: %s: %s", je.text, r->out);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "scope")), "before_hello");
	ck_assert(json_is_null(json_object_get(doc, "tenant")));
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "protocol_version")), 1);
	gpud_client *who = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK); /* how many devices */
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "devices")),
			  (size_t)gpud_server(who)->ndevices);
	gpud_close(who);
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "sessions")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "connections")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "requests")), 0);
	json_decref(doc);
	r = CTL_AT(tcp_url, "ls");
	ck_assert_msg(r->code == EX_NOPERM, "ls without a token: %d %s", r->code, r->err);
}
END_TEST

/* The session of connection id in s, or NULL. */
static const gpud_session_info *session_in(const gpud_daemon_status *s, unsigned id)
{
	for (int i = 0; i < s->nsessions; i++)
		if (s->sessions[i].id == id)
			return &s->sessions[i];
	return NULL;
}

/*
 * A status carries the connection's hello (gpud_connect_deferred, as gpuctl
 * status connects): one request, after which the connection is its
 * tenant's with all hello gave; a token gpud does not know fails it as a
 * hello fails, and gpud serves the others; a probe key inside a status is
 * refused and leaves the connection before hello.
 */
START_TEST(test_status_carries_hello)
{
	gpud_options o = {.url = tcp_url, .token = TOKEN_BOB, .timeout_ms = 30000};
	gpud_client *bob;
	gpud_daemon_status s;
	ck_assert_int_eq(gpud_connect_deferred(&o, &bob), GPUD_OK);
	ck_assert_str_eq(gpud_server(bob)->tenant, "");
	ck_assert_str_eq(gpud_server(bob)->version, "");
	LIB_OK(bob, gpud_status_get(bob, &s));
	ck_assert_int_eq(s.scope, GPUD_SCOPE_TENANT);
	ck_assert_str_eq(s.tenant, "bob");
	const gpud_server_info *si = gpud_server(bob);
	ck_assert_str_eq(si->tenant, "bob");
	ck_assert_str_eq(si->version, s.server.version);
	ck_assert_str_eq(si->backend, expected_backend());
	ck_assert_uint_eq(si->protocol_version, 1);
	ck_assert_int_gt(si->ndevices, 0);
	ck_assert_int_eq(si->ndevices, s.server.ndevices);
	ck_assert_str_eq(si->devices[0].name, s.server.devices[0].name);
	ck_assert_uint_eq(si->max_message_size, 64 * 1024); /* bob's message_size quota */
	ck_assert_uint_ne(si->instance, 0);
	const gpud_session_info *own = session_in(&s, si->connection);
	ck_assert_msg(own, "connection %u is not among bob's sessions", si->connection);
	ck_assert_uint_eq(own->requests, 1); /* the status alone: no hello of its own */
	/* bob's work goes on the session without another hello */
	uint64_t n = 4;
	double v[4] = {1, 2, 3, 4};
	gpud_handle h;
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &n, v, &h));
	s = lib_status(bob);
	own = session_in(&s, si->connection);
	ck_assert_msg(own, "connection %u is not among bob's sessions", si->connection);
	ck_assert_uint_eq(own->requests, 3);
	ck_assert_uint_eq(own->buffers, 1);
	ck_assert_uint_eq(gpud_reconnects(bob), 0);
	LIB_OK(bob, gpud_free(bob, &h, 1));
	gpud_close(bob);

	/* an unknown token: refused as a hello is, no status given */
	o.token = "not-a-token-of-anyone";
	gpud_client *bad;
	ck_assert_int_eq(gpud_connect_deferred(&o, &bad), GPUD_OK);
	LIB_FAIL(bad, gpud_status_get(bad, &s), GPUD_EACCESS, "hello: unknown token");
	ck_assert_int_eq(s.scope, 0);
	ck_assert_str_eq(s.server.version, "");
	ck_assert_str_eq(gpud_server(bad)->tenant, "");
	gpud_close(bad);
	gpud_client *alice = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK);
	s = lib_status(alice);
	ck_assert_int_eq(s.scope, GPUD_SCOPE_ALL);
	gpud_close(alice);

	/* a probe key inside a status (hand-made: StatusRequest.hello.probe) */
	nng_socket raw = raw_open(10000);
	pb key = {.n = 16}, hello = {.n = 0}, status = {.n = 0}, alloc = {.n = 0}, shape = {.n = 0};
	memset(key.b, 0x5a, 16);
	pb_sub(&hello, 3, &key);
	pb_sub(&status, 2, &hello);
	raw_reply r = raw_body_on(raw, 2, 17, &status, NULL, 0);
	ck_assert_msg(r.code == ST_PROTOCOL && strstr(r.message, "probe key"),
		      "a status with a probe hello: %" PRIu64 " %s", r.code, r.message);
	pb_uint(&alloc, 1, 2);
	pb_varint(&shape, 4);
	pb_sub(&alloc, 2, &shape);
	r = raw_body_on(raw, 3, 11, &alloc, NULL, 0);
	ck_assert_msg(r.code == ST_NO_SESSION, "alloc after it: %" PRIu64 " %s", r.code, r.message);
	nng_close(raw);
}
END_TEST

/*
 * Status shows each caller its own: bob (a tenant) his connections,
 * buffers and requests and nothing of alice's, by name or address; alice (in
 * admin_tenants) everyone's; a connection without a token what gpud is and
 * nothing of what it does.
 */
START_TEST(test_status_shows_each_its_own)
{
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	uint64_t n5 = 5, n2 = 2, n3 = 3;
	gpud_handle ha[2], hb, hk;
	gpud_client *alice = connect_as(tcp_url, TOKEN_ALICE, GPUD_OK);
	gpud_client *bob = connect_as(tcp_url, TOKEN_BOB, GPUD_OK);
	LIB_OK(alice, gpud_alloc(alice, GPUD_F64, 1, &n3, v, &ha[0]));
	LIB_OK(alice, gpud_alloc(alice, GPUD_F64, 1, &n3, v, &ha[1]));
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &n5, v, &hb));
	gpud_set_keep(bob, 1);
	LIB_OK(bob, gpud_alloc(bob, GPUD_F64, 1, &n2, v, &hk));
	gpud_set_keep(bob, 0);

	/* alice, an administrator: both tenants' connections, with their peers */
	gpud_daemon_status sa = lib_status(alice);
	ck_assert_int_eq(sa.scope, GPUD_SCOPE_ALL);
	ck_assert_str_eq(sa.tenant, "alice");
	/* alice's and bob's, and perhaps the fixture's readiness probe over ipc://
	 * if gpud has not seen it close yet */
	int tenants_seen = 0;
	for (int i = 0; i < sa.nsessions; i++)
		tenants_seen += !strcmp(sa.sessions[i].tenant, "alice") ||
				!strcmp(sa.sessions[i].tenant, "bob");
	ck_assert_int_eq(tenants_seen, 2);
	ck_assert_uint_ge(sa.connections, 2);
	ck_assert_uint_eq(sa.buffers, 4);
	const gpud_session_info *her = session_in(&sa, gpud_server(alice)->connection);
	const gpud_session_info *his = session_in(&sa, gpud_server(bob)->connection);
	ck_assert_msg(her && his, "alice's status lacks a connection");
	ck_assert_str_eq(her->tenant, "alice");
	ck_assert_str_eq(his->tenant, "bob");
	ck_assert_uint_eq(his->buffers, 1);
	char alice_peer[64];
	snprintf(alice_peer, sizeof(alice_peer), "%s", her->peer);
	ck_assert_msg(!strncmp(alice_peer, "127.0.0.1:", 10), "alice's peer: %s", alice_peer);

	/* bob: his own, counted right; nothing of alice's */
	gpud_daemon_status sb = lib_status(bob);
	ck_assert_int_eq(sb.scope, GPUD_SCOPE_TENANT);
	ck_assert_str_eq(sb.tenant, "bob");
	ck_assert_int_eq(sb.nsessions, 1);
	ck_assert_uint_eq(sb.nsessions_total, 1);
	ck_assert_uint_eq(sb.connections, 1);
	ck_assert_uint_eq(sb.sessions[0].id, gpud_server(bob)->connection);
	ck_assert_str_eq(sb.sessions[0].tenant, "bob");
	ck_assert_uint_eq(sb.sessions[0].buffers, 1); /* the kept one is the tenant's */
	ck_assert_uint_eq(sb.sessions[0].bytes, 5 * sizeof(double));
	ck_assert_uint_eq(sb.sessions[0].requests, 4); /* hello, 2 allocs, this status */
	ck_assert_uint_eq(sb.buffers, 2);
	ck_assert_uint_eq(sb.bytes_in_use, 7 * sizeof(double));
	/* over every device (a GPU suite may run with several: GPUD_TEST_DEVICES) */
	uint64_t dev_buffers = 0, dev_bytes = 0;
	for (int i = 0; i < sb.server.ndevices; i++) {
		dev_buffers += sb.server.devices[i].buffers;
		dev_bytes += sb.server.devices[i].bytes_in_use;
	}
	ck_assert_uint_eq(dev_buffers, 2);
	ck_assert_uint_eq(dev_bytes, 7 * sizeof(double));
	ck_assert_uint_eq(sb.requests, 4);
	ck_assert_uint_eq(sb.errors, 0);
	ck_assert_uint_eq(sb.in_flight, 1); /* this status */
	ck_assert_msg(strcmp(sb.sessions[0].peer, alice_peer) != 0, "bob sees alice's peer");

	/* gpuctl as bob: the same, and a line on what is left out */
	ctl_result *r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "status");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "scope        tenant bob's own;") &&
			      strstr(r->out, "sessions of other tenants are not shown; admin "
					     "tenants see them"),
		      "bob's gpuctl status does not say what it leaves out:\n%s", r->out);
	ck_assert_msg(strstr(r->out, "alice") == NULL && strstr(r->out, alice_peer) == NULL,
		      "bob's gpuctl status names alice (%s):\n%s", alice_peer, r->out);
	ck_assert_msg(strstr(r->out, "(this gpuctl)") && strstr(r->out, "buffers      2 ("),
		      "bob's gpuctl status:\n%s", r->out);
	/* that gpuctl has exited, but gpud may not have seen its connection
	 * close yet: wait until bob's library client is his only session */
	for (double t_end = harness_now_s() + E2E_SAFETY_S;;) {
		gpud_daemon_status sw = lib_status(bob);
		if (sw.nsessions == 1)
			break;
		ck_assert_msg(harness_now_s() < t_end,
			      "bob's first gpuctl's session still open after %.0f s", E2E_SAFETY_S);
		usleep(10000);
	}
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "status", "--json");
	assert_ctl_ok(r);
	json_error_t je;
	json_t *doc = json_loads(r->out, 0, &je);
	ck_assert_msg(doc, "status --json: %s: %s", je.text, r->out);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "scope")), "tenant");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "tenant")), "bob");
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "buffers")), 2);
	json_t *ss = json_object_get(doc, "sessions");
	ck_assert_uint_eq(json_array_size(ss), 2); /* his library client and this gpuctl */
	for (size_t i = 0; i < json_array_size(ss); i++)
		ck_assert_str_eq(json_string_value(
					 json_object_get(json_array_get(ss, i), "tenant")),
				 "bob");
	json_decref(doc);
	ck_assert_msg(strstr(r->out, "alice") == NULL && strstr(r->out, alice_peer) == NULL,
		      "bob's status --json names alice:\n%s", r->out);

	/* gpuctl as alice: both */
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "status");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, " bob ") && strstr(r->out, " alice ") &&
			      strstr(r->out, "every tenant (alice is in admin_tenants)"),
		      "alice's gpuctl status does not list both tenants:\n%s", r->out);

	/* no token: version, protocol, devices; nothing else */
	gpud_options o = {.url = tcp_url};
	gpud_client *anon;
	ck_assert_int_eq(gpud_connect_for_status(&o, &anon), GPUD_OK);
	gpud_daemon_status s0;
	LIB_OK(anon, gpud_status_get(anon, &s0));
	ck_assert_int_eq(s0.scope, GPUD_SCOPE_BEFORE_HELLO);
	ck_assert_str_eq(s0.tenant, "");
	ck_assert_str_eq(s0.server.version, gpud_server(bob)->version);
	ck_assert_uint_eq(s0.server.protocol_version, gpud_server(bob)->protocol_version);
	ck_assert_str_eq(s0.server.backend, expected_backend());
	ck_assert_int_eq(s0.server.ndevices, gpud_server(bob)->ndevices);
	ck_assert_str_eq(s0.server.devices[0].name, gpud_server(bob)->devices[0].name);
	ck_assert_uint_eq(s0.server.devices[0].buffers, 0);
	ck_assert_uint_eq(s0.server.devices[0].bytes_in_use, 0);
	ck_assert_int_eq(s0.nsessions, 0);
	ck_assert_uint_eq(s0.nsessions_total, 0);
	ck_assert_uint_eq(s0.connections, 0);
	ck_assert_uint_eq(s0.in_flight, 0);
	ck_assert_uint_eq(s0.requests, 0);
	ck_assert_uint_eq(s0.errors, 0);
	ck_assert_uint_eq(s0.buffers, 0);
	ck_assert_uint_eq(s0.bytes_in_use, 0);
	ck_assert_uint_eq(s0.bytes_high_water, 0);
	ck_assert(s0.uptime_s == 0);
	ck_assert_int_eq(s0.has_pool, 0);
	ck_assert_int_eq(s0.has_lending, 0);
	ck_assert_int_eq(s0.nvariants, 0);
	gpud_close(anon);
	r = CTL_AT(tcp_url, "status");
	ck_assert_msg(r->code == 0 && strstr(r->out, "alice") == NULL &&
			      strstr(r->out, "bob") == NULL && strstr(r->out, alice_peer) == NULL,
		      "status without a token: %d\n%s", r->code, r->out);

	LIB_OK(bob, gpud_free(bob, &hk, 1));
	gpud_close(alice);
	gpud_close(bob);
}
END_TEST

/* An administrator (alice, in admin_tenants) lists every tenant's kept
 * buffers and frees another's; bob, no administrator, can do neither; gpud
 * logs what the administrator did. */
START_TEST(test_admin_lists_and_frees_every_tenant)
{
	char px[700], handle[32], other[32];
	double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	path_in_dir(px, sizeof(px), "adm.npy");
	save_vec(px, GPUD_F64, v, 8);
	ctl_result *r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "upload", px, "--keep");
	assert_ctl_ok(r);
	ck_assert_int_eq(sscanf(r->out, "%31s", handle), 1);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "upload", px, "--keep");
	assert_ctl_ok(r);
	ck_assert_int_eq(sscanf(r->out, "%31s", other), 1);

	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "ls", "--all");
	assert_ctl_ok(r);
	char want[128];
	snprintf(want, sizeof(want), "bob              %s  float64", handle);
	ck_assert_msg(strstr(r->out, "2 kept buffers of all tenants") && strstr(r->out, want),
		      "ls --all does not show bob's buffer as '%s':\n%s", want, r->out);
	snprintf(want, sizeof(want), "alice            %s", other);
	ck_assert_msg(strstr(r->out, want), "ls --all does not show alice's own:\n%s", r->out);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "ls", "--all", "--json");
	assert_ctl_ok(r);
	json_error_t je;
	json_t *doc = json_loads(r->out, 0, &je);
	ck_assert_msg(doc, "ls --all --json: %s: %s", je.text, r->out);
	ck_assert(json_is_true(json_object_get(doc, "all_tenants")));
	json_t *bs = json_object_get(doc, "buffers");
	ck_assert_uint_eq(json_array_size(bs), 2);
	int seen_bob = 0;
	for (size_t i = 0; i < json_array_size(bs); i++) {
		json_t *b = json_array_get(bs, i);
		if (!strcmp(json_string_value(json_object_get(b, "handle")), handle)) {
			ck_assert_str_eq(json_string_value(json_object_get(b, "tenant")), "bob");
			ck_assert_int_eq(json_integer_value(json_object_get(b, "bytes")), 64);
			seen_bob = 1;
		}
	}
	json_decref(doc);
	ck_assert_msg(seen_bob, "ls --all --json lacks bob's buffer");

	/* bob is no administrator */
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "ls", "--all");
	ck_assert_msg(r->code != 0 && strstr(r->err, "not in admin_tenants") &&
			      strstr(r->err, "bob"),
		      "bob's ls --all: %d %s", r->code, r->err);
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "free", "--tenant", "alice", other);
	ck_assert_msg(r->code != 0 && strstr(r->err, "not in admin_tenants"),
		      "bob frees alice's: %d %s", r->code, r->err);
	/* wrong tenant, unknown tenant, no handle */
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "free", "--tenant", "bob", other);
	ck_assert_msg(r->code != 0 && strstr(r->err, "is not a buffer of tenant bob"),
		      "freeing alice's buffer as bob's: %d %s", r->code, r->err);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "free", "--tenant", "carol", handle);
	ck_assert_msg(r->code != 0 && strstr(r->err, "no tenant of that name"),
		      "--tenant carol: %d %s", r->code, r->err);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "free", "--tenant");
	ck_assert_msg(r->code != 0 && strstr(r->err, "--tenant needs a tenant name"),
		      "--tenant without a name: %d %s", r->code, r->err);

	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "free", "--tenant", "bob", handle);
	assert_ctl_ok(r);
	r = CTL_AT(tcp_url, "--token", TOKEN_BOB, "ls");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "0 kept buffers of tenant bob"), "bob's ls after: %s", r->out);
	r = CTL_AT(tcp_url, "--token", TOKEN_ALICE, "free", other);
	assert_ctl_ok(r);
	char log[1 << 16];
	ck_assert(harness_read_text(e2e_gpud.log, log, sizeof(log)) > 0);
	ck_assert_msg(strstr(log, "administrator alice") &&
			      strstr(log, "freed 1 kept buffers (64 bytes) of tenant bob") &&
			      strstr(log, "listed the kept buffers of every tenant (2)"),
		      "gpud's log does not record what the administrator did (%s)", e2e_gpud.log);
	assert_daemon_alive("the administrator's requests");
}
END_TEST

TCase *e2e_tenants(void)
{
	TCase *tc = tcase_create("tenants");
	tcase_add_checked_fixture(tc, setup_tenants, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tcp_tokens_and_isolation);
	tcase_add_test(tc, test_tls_with_tokens);
	tcase_add_test(tc, test_custom_kernels_registered);
	tcase_add_test(tc, test_shared_kernels);
	tcase_add_test(tc, test_hello_first);
	tcase_add_test(tc, test_status_carries_hello);
	tcase_add_test(tc, test_two_uids_over_ipc);
	tcase_add_test(tc, test_kept_buffers_and_quotas);
	tcase_add_test(tc, test_requests_in_flight_quota);
	tenants_refused_tests(tc);
	tcase_add_test(tc, test_admin_lists_and_frees_every_tenant);
	tcase_add_test(tc, test_status_over_tcp_without_token);
	tcase_add_test(tc, test_status_shows_each_its_own);
	return tc;
}
