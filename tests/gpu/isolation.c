/*
 * tests/gpu/isolation.c — tenant workers (daemon/backend/cuda/tworkers.c):
 * a tenant's custom kernels run in a process of its own, so they cannot
 * reach another tenant's memory, and a fault, an endless kernel or a killed
 * worker ends that tenant's run only. Two tenants, alice and bob, over
 * tcp:// with tokens; alice runs lombscargle in a loop (checked against the
 * CPU reference) while bob misbehaves, and must see no error.
 *
 * And nothing stale: a block alice freed reaches bob zeroed, the whole block.
 *
 * gpud runs with --log-level debug: its log names each buffer's device
 * address (no client learns it otherwise), which is how bob's kernels get
 * alice's addresses to try.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/client.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "tests/gpu/gpu_test.h"
#include "tests/harness.h"

#define TOKEN_ALICE "alice-0123456789abcdef0123"
#define TOKEN_BOB "bob-0123456789abcdef012345"

static harness_gpud gpud;
static char url[64];

static void start(const char *extra_conf)
{
	char conf[2048], tokens[300], msg[512];
	memset(&gpud, 0, sizeof(gpud));
	static int starts;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d",
		 30000 + (int)(getpid() % 20000) + starts++);
	/* the harness waits on its ipc:// socket; the tenants come over tcp:// */
	harness_gpud_opts o = {.backend = "cuda", .timeout_s = 30};
	const char *args[] = {"--log-level", "debug", "--listen", url, NULL};
	o.args = args;
	ck_assert_int_eq(harness_gpud_dir(&gpud, &o, msg, sizeof(msg)), 0);
	snprintf(tokens, sizeof(tokens), "%s/tokens", gpud.dir);
	ck_assert_int_eq(harness_write_text(tokens, "alice " TOKEN_ALICE "\nbob " TOKEN_BOB "\n",
					    msg, sizeof(msg)),
			 0);
	chmod(tokens, 0600);
	snprintf(conf, sizeof(conf), "[gpud]\ntokens_file = %s\n%s", tokens,
		 extra_conf ? extra_conf : "");
	o.config = conf;
	if (harness_gpud_start(&gpud, &o, msg, sizeof(msg)) != 0) {
		harness_dump_file("gpud log", gpud.log);
		ck_abort_msg("%s", msg);
	}
}

static void stop(void)
{
	char msg[512];
	int rv = harness_gpud_stop(&gpud, 20, msg, sizeof(msg));
	if (rv != 0)
		harness_dump_file("gpud log", gpud.log);
	harness_gpud_remove(&gpud);
	ck_assert_msg(rv == 0, "%s", msg);
}

static gpud_client *as(const char *token)
{
	gpud_options o = {.url = url, .token = token, .timeout_ms = 120000};
	gpud_client *c;
	gpud_status st = gpud_connect_opts(&o, &c);
	ck_assert_msg(st == GPUD_OK, "connect: %s", gpud_errmsg(c));
	return c;
}

/* The device address gpud's log gives for handle h ("buffer H of tenant T: N bytes at P"). */
static uint64_t address_of(gpud_handle h)
{
	static char text[1 << 24];
	char key[64];
	long n = harness_read_text(gpud.log, text, sizeof(text));
	ck_assert_msg(n > 0, "cannot read %s", gpud.log);
	snprintf(key, sizeof(key), "buffer %016llx of tenant", (unsigned long long)h);
	char *p = strstr(text, key);
	ck_assert_msg(p != NULL, "gpud's log has no address for %s", key);
	char *at = strstr(p, " at 0x");
	ck_assert_ptr_nonnull(at);
	return strtoull(at + 4, NULL, 16);
}

static void reg(gpud_client *c, const char *name, const char *src, const char *sig)
{
	gpud_kernel_spec k = {
		.name = name, .source = src, .entry = name, .signature = sig, .blocks_per_sm = 1};
	ck_assert_msg(gpud_register(c, &k) == GPUD_OK, "register %s: %s", name, gpud_errmsg(c));
}

/* bob's kernels: copy n floats from any address; report the address of a
 * buffer as the worker sees it; fault; never end (unless told to by *stop). */
static const char *peek_src =
	"extern \"C\" __global__ void peek(long long addr, float *out, long long n)\n"
	"{\n\tconst float *p = (const float *)addr;\n"
	"\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
	"\t     i += (long long)gridDim.x * blockDim.x)\n\t\tout[i] = p[i];\n}\n";
static const char *where_src =
	"extern \"C\" __global__ void where(const float *x, long long *out)\n"
	"{\n\tif (threadIdx.x == 0 && blockIdx.x == 0)\n\t\tout[0] = (long long)x;\n}\n";
static const char *crash_src =
	"extern \"C\" __global__ void crash(float *y)\n{\n\tfloat *p = (float *)0x10;\n"
	"\tp[threadIdx.x] = y[0];\n}\n";
static const char *spin_src = "extern \"C\" __global__ void spin(float *y, long long cycles)\n{\n"
			      "\tlong long t0 = clock64();\n"
			      "\twhile (cycles == 0 || clock64() - t0 < cycles)\n"
			      "\t\tif (((volatile float *)y)[0] == 12345.0f) break;\n"
			      "\ty[threadIdx.x] = 1.0f;\n}\n";

/* --- alice's lombscargle loop ------------------------------------------------------------ */

#define LS_NX 1000
#define LS_NF 4000

typedef struct alice_loop {
	gpud_client *c;
	double x[LS_NX], y[LS_NX], f[LS_NF], want[LS_NF];
	volatile int stop;
	int runs, errors, wrong;
	char first_error[512];
	double lat[100000];
	double max_gap;
	pthread_t th;
} alice_loop;

static void ls_reference(alice_loop *a)
{
	const kernel_def *k = kernel_find("lombscargle");
	kernel_args ka;
	char err[256];
	memset(&ka, 0, sizeof(ka));
	ka.kernel = k;
	kernel_array arr = {.dtype = GPUD_F64, .ndim = 1};
	int idx[3] = {LS_X, LS_Y, LS_FREQS};
	double *ptrs[3] = {a->x, a->y, a->f};
	size_t lens[3] = {LS_NX, LS_NX, LS_NF};
	for (int i = 0; i < 3; i++) {
		arr.shape[0] = arr.count = lens[i];
		arr.data = ptrs[i];
		ck_assert_int_eq(kernel_bind_array(k, &k->params[idx[i]], &arr, &ka.v[idx[i]], err,
						   sizeof(err)),
				 0);
	}
	ck_assert_msg(kernel_args_finish(&ka, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(k->check(&ka, err, sizeof(err)) == 0, "%s", err);
	ka.v[LS_PGRAM].arr = ka.v[LS_PGRAM].expect;
	ka.v[LS_PGRAM].arr.data = a->want;
	ka.v[LS_PGRAM].present = 1;
	cpu_kernel_of(k)->run(&ka, 0, LS_NF);
}

static void *alice_work(void *p)
{
	alice_loop *a = p;
	gpud_array ax = {.dtype = GPUD_F64,
			 .ndim = 1,
			 .shape = {LS_NX},
			 .data = a->x,
			 .nbytes = sizeof(a->x)},
		   ay = ax,
		   af = {.dtype = GPUD_F64,
			 .ndim = 1,
			 .shape = {LS_NF},
			 .data = a->f,
			 .nbytes = sizeof(a->f)};
	ay.data = a->y;
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_array("freqs", &af)};
	double last = wall();
	while (!a->stop && a->runs < (int)(sizeof(a->lat) / sizeof(a->lat[0]))) {
		gpud_result res;
		size_t no;
		double t0 = wall();
		gpud_status st = gpud_call(a->c, "lombscargle", args, 3, &res, 1, &no, NULL);
		double t1 = wall();
		if (st != GPUD_OK) {
			if (a->errors++ == 0)
				snprintf(a->first_error, sizeof(a->first_error), "%s: %s",
					 gpud_strerror(st), gpud_errmsg(a->c));
			continue;
		}
		const double *g = res.array.data;
		for (int i = 0; i < LS_NF; i++)
			if (!(fabs(g[i] - a->want[i]) <= 1e-9 * (1 + fabs(a->want[i])))) {
				a->wrong++;
				break;
			}
		gpud_array_free(&res.array);
		a->lat[a->runs++] = t1 - t0;
		if (t1 - last > a->max_gap)
			a->max_gap = t1 - last;
		last = t1;
	}
	return NULL;
}

static void alice_start(alice_loop *a, gpud_client *c)
{
	memset(a, 0, sizeof(*a));
	a->c = c;
	double t = 0;
	for (int i = 0; i < LS_NX; i++) {
		t += uniform(0.5, 1.5);
		a->x[i] = t;
		a->y[i] = sin(0.3 * t) + uniform(-0.5, 0.5);
	}
	for (int i = 0; i < LS_NF; i++)
		a->f[i] = 0.01 + 2.0 * i / LS_NF;
	ls_reference(a);
	ck_assert_int_eq(pthread_create(&a->th, NULL, alice_work, a), 0);
	/* a first result before bob starts */
	while (a->runs == 0 && a->errors == 0)
		usleep(1000);
}

static void alice_stop(alice_loop *a, const char *during)
{
	a->stop = 1;
	pthread_join(a->th, NULL);
	harness_sort(a->lat, (size_t)a->runs);
	printf("alice's lombscargle (nx=%d, nf=%d, f64) during %s: %d runs, p50 %.0f us, p99 %.0f "
	       "us, longest gap %.1f ms, %d errors, %d wrong\n",
	       LS_NX, LS_NF, during, a->runs,
	       harness_percentile(a->lat, (size_t)a->runs, 0.5) * 1e6,
	       harness_percentile(a->lat, (size_t)a->runs, 0.99) * 1e6, a->max_gap * 1e3, a->errors,
	       a->wrong);
	ck_assert_msg(a->errors == 0, "alice saw %d errors during %s, the first: %s", a->errors,
		      during, a->first_error);
	ck_assert_msg(a->wrong == 0, "alice got %d wrong results during %s", a->wrong, during);
	ck_assert_int_gt(a->runs, 0);
}

/* pids of gpud's tenant workers of tenant (/proc/PID/cmdline "gpud\0--tenant-worker\0T"). */
static int worker_pids(const char *tenant, pid_t *out, int max)
{
	char path[64], cmd[512];
	int n = 0;
	DIR *d = opendir("/proc");
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; n < max && (e = readdir(d)) != NULL;) {
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		size_t len = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
		cmd[len] = '\0';
		size_t a = strlen(cmd) + 1;
		if (!(a < len && strcmp(cmd + a, "--tenant-worker") == 0 && a + 16 < len &&
		      strcmp(cmd + a + 16, tenant) == 0))
			continue;
		/* this gpud's, not one a failed test left behind */
		char st[2048];
		int ppid = -1;
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if (harness_read_text(path, st, sizeof(st)) > 0 && strstr(st, "PPid:"))
			ppid = atoi(strstr(st, "PPid:") + 5);
		if (ppid == (int)gpud.pid)
			out[n++] = pid;
	}
	closedir(d);
	return n;
}

/* In-flight requests of c's tenant (tenant) but the status asking, by
 * gpud's status: a tenant sees its own requests, not another's. */
static unsigned tenant_in_flight(gpud_client *c, const char *tenant)
{
	static gpud_daemon_status st;
	ck_assert_msg(gpud_status_get(c, &st) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_int_eq(st.scope, GPUD_SCOPE_TENANT);
	ck_assert_str_eq(st.tenant, tenant);
	ck_assert_uint_ge(st.in_flight, 1);
	return st.in_flight - 1;
}

/* The buffer of n floats at handle h, downloaded. */
static void download(gpud_client *c, gpud_handle h, float *out, size_t n)
{
	ck_assert_msg(gpud_download_range(c, h, 0, out, n * 4) == GPUD_OK, "%s", gpud_errmsg(c));
}

/* bob's spin kernel for a moment: his (replaced) worker runs it. */
static void bob_spins_briefly(gpud_client *bob, gpud_handle y)
{
	gpud_arg a[] = {gpud_arg_buffer("y", y), gpud_arg_i64("cycles", 1000)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(bob, "spin", a, 2, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(bob));
}

static void finish(gpud_client *alice, gpud_client *bob, alice_loop *al)
{
	gpud_close(alice);
	gpud_close(bob);
	stop();
	free(al);
}

/* --- the tests ---------------------------------------------------------------------------------- */

/*
 * bob's kernel reads addresses of alice's buffer — where gpud has it, and
 * where alice's own worker maps it — and addresses near bob's own buffer:
 * each run faults (bob's worker ends, is replaced) or returns none of
 * alice's data. alice's lombscargle loop meanwhile sees no error, her buffer
 * is intact, her own custom kernel still works; after alice frees her
 * buffer, her worker's old mapping of it is gone too.
 */
START_TEST(tenant_kernel_cannot_reach_another_tenants_buffer)
{
	start(NULL);
	gpud_client *alice = as(TOKEN_ALICE), *bob = as(TOKEN_BOB);
	ck_assert_str_eq(gpud_server(alice)->tenant, "alice");
	ck_assert_str_eq(gpud_server(bob)->tenant, "bob");
	uint64_t n = 1 << 16;
	float *secret = make_array(GPUD_F32, n, 1, 2, 0), *got = malloc(n * 4);
	gpud_handle hs, hw, hb;
	ck_assert(gpud_alloc(alice, GPUD_F32, 1, &n, secret, &hs) == GPUD_OK);
	uint64_t one = 1;
	ck_assert(gpud_alloc(alice, GPUD_I64, 1, &one, NULL, &hw) == GPUD_OK);
	reg(alice, "where", where_src, "x:in f32[], out:out i64[]");
	gpud_arg wa[] = {gpud_arg_buffer("x", hs), gpud_arg_buffer("out", hw)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(alice, "where", wa, 2, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(alice));
	long long in_worker = 0;
	ck_assert(gpud_download_range(alice, hw, 0, &in_worker, 8) == GPUD_OK);
	uint64_t in_gpud = address_of(hs);
	printf("alice's buffer: at %#" PRIx64 " in gpud, %#llx in her worker\n", in_gpud,
	       in_worker);
	ck_assert_msg(in_worker != 0, "where reported no address");

	reg(bob, "peek", peek_src, "addr:i64, out:out f32[], n:i64");
	ck_assert(gpud_alloc(bob, GPUD_F32, 1, &n, NULL, &hb) == GPUD_OK);
	uint64_t bob_at = address_of(hb);
	alice_loop *al = malloc(sizeof(*al));
	alice_start(al, alice);
	uint64_t tries[] = {in_gpud, (uint64_t)in_worker, bob_at + (64u << 20),
			    bob_at - (64u << 20), in_gpud + 4096};
	int faults = 0, clean = 0;
	for (size_t t = 0; t < sizeof(tries) / sizeof(tries[0]); t++) {
		poison(GPUD_F32, got, n);
		ck_assert(gpud_upload(bob, hb, 0, got, n * 4) == GPUD_OK);
		gpud_arg pa[] = {gpud_arg_i64("addr", (int64_t)tries[t]),
				 gpud_arg_buffer("out", hb), gpud_arg_i64("n", 1024)};
		gpud_status st = gpud_run(bob, "peek", pa, 3, &o, 1, &no, NULL);
		if (st != GPUD_OK) {
			printf("bob reads %#" PRIx64 ": %s: %s\n", tries[t], gpud_strerror(st),
			       gpud_errmsg(bob));
			ck_assert_int_eq(st, GPUD_EBACKEND);
			/* a fault, however the device names it: an illegal access, or
			 * (an address in the shared window's range, seen on the H200)
			 * cudaErrorInvalidAddressSpace; the worker is replaced either way */
			const char *m = gpud_errmsg(bob);
			ck_assert_msg(strstr(m, "peek") &&
					      (strstr(m, "illegal") ||
					       strstr(m, "cudaErrorInvalidAddressSpace")) &&
					      strstr(m, "was replaced"),
				      "%s", m);
			faults++;
			continue;
		}
		download(bob, hb, got, 1024);
		size_t same = 0;
		for (size_t i = 0; i < 1024; i++)
			for (size_t j = 0; j < 1024; j++)
				same += got[i] == secret[j];
		printf("bob reads %#" PRIx64 ": the run worked; %zu of its values are alice's\n",
		       tries[t], same);
		ck_assert_msg(same == 0, "bob's kernel read %zu of alice's values at %#" PRIx64,
			      same, tries[t]);
		clean++;
	}
	alice_stop(al, "bob's reads of her addresses");
	printf("bob's 5 reads: %d faulted, %d read none of alice's data\n", faults, clean);
	ck_assert_int_ge(faults, 2); /* alice's addresses are mapped nowhere in bob's worker */

	/* alice: her buffer intact, her worker untouched */
	download(alice, hs, got, n);
	ck_assert_int_eq(memcmp(got, secret, n * 4), 0);
	ck_assert_msg(gpud_run(alice, "where", wa, 2, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(alice));
	long long again = 0;
	ck_assert(gpud_download_range(alice, hw, 0, &again, 8) == GPUD_OK);
	ck_assert_int_eq(again, in_worker);
	/* bob's replaced worker runs his next read of his own memory */
	gpud_arg own[] = {gpud_arg_i64("addr", (int64_t)0), gpud_arg_buffer("out", hb),
			  gpud_arg_i64("n", 0)};
	ck_assert_msg(gpud_run(bob, "peek", own, 3, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(bob));

	/* alice frees her buffer and bob gets its block: alice's worker must not
	 * reach it through its old mapping (her output is mapped first, so the
	 * run maps nothing that could take the old address) */
	reg(alice, "peek", peek_src, "addr:i64, out:out f32[], n:i64");
	gpud_handle ho;
	ck_assert(gpud_alloc(alice, GPUD_F32, 1, &n, NULL, &ho) == GPUD_OK);
	gpud_arg map_ho[] = {gpud_arg_i64("addr", 0), gpud_arg_buffer("out", ho),
			     gpud_arg_i64("n", 0)};
	ck_assert_msg(gpud_run(alice, "peek", map_ho, 3, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(alice));
	ck_assert(gpud_free(alice, &hs, 1) == GPUD_OK);
	float *bobs_big = make_array(GPUD_F32, n, 5, 6, 0);
	gpud_handle hb2;
	ck_assert(gpud_alloc(bob, GPUD_F32, 1, &n, bobs_big, &hb2) == GPUD_OK);
	printf("bob's new buffer is at %#" PRIx64 " in gpud (alice's freed one was at %#" PRIx64
	       ")\n",
	       address_of(hb2), in_gpud);
	gpud_arg stale[] = {gpud_arg_i64("addr", in_worker), gpud_arg_buffer("out", ho),
			    gpud_arg_i64("n", 1024)};
	gpud_status st = gpud_run(alice, "peek", stale, 3, &o, 1, &no, NULL);
	printf("alice reads her freed buffer's old mapping: %s: %s\n", gpud_strerror(st),
	       st == GPUD_OK ? "" : gpud_errmsg(alice));
	if (st == GPUD_OK) {
		download(alice, ho, got, 1024);
		for (int i = 0; i < 1024; i++)
			ck_assert_msg(got[i] != bobs_big[i], "alice's worker read bob's value %d",
				      i);
	}
	free(bobs_big);

	/* small buffers side by side: bob's next to alice's in gpud, and alice's
	 * kernel reads where bob's would be relative to hers in her worker (the
	 * driver suballocates small allocations, and CUDA IPC maps whole ones) */
	uint64_t small = 64;
	float bobs[64];
	for (int i = 0; i < 64; i++)
		bobs[i] = 777.0f + (float)i;
	gpud_handle hbs, has, hao;
	ck_assert(gpud_alloc(bob, GPUD_F32, 1, &small, bobs, &hbs) == GPUD_OK);
	ck_assert(gpud_alloc(alice, GPUD_F32, 1, &small, NULL, &has) == GPUD_OK);
	ck_assert(gpud_alloc(alice, GPUD_F32, 1, &small, NULL, &hao) == GPUD_OK);
	gpud_arg wa2[] = {gpud_arg_buffer("x", has), gpud_arg_buffer("out", hw)};
	ck_assert_msg(gpud_run(alice, "where", wa2, 2, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(alice));
	long long as_worker = 0;
	ck_assert(gpud_download_range(alice, hw, 0, &as_worker, 8) == GPUD_OK);
	int64_t delta = (int64_t)(address_of(hbs) - address_of(has));
	printf("small buffers: bob's is %+" PRId64 " bytes from alice's in gpud\n", delta);
	gpud_arg nb[] = {gpud_arg_i64("addr", as_worker + delta), gpud_arg_buffer("out", hao),
			 gpud_arg_i64("n", 64)};
	st = gpud_run(alice, "peek", nb, 3, &o, 1, &no, NULL);
	printf("alice reads where bob's small buffer would be: %s: %s\n", gpud_strerror(st),
	       st == GPUD_OK ? "" : gpud_errmsg(alice));
	if (st == GPUD_OK) {
		float seen[64];
		download(alice, hao, seen, 64);
		for (int i = 0; i < 64; i++)
			ck_assert_msg(seen[i] != bobs[i], "alice's kernel read bob's value %d", i);
	}
	gpud_close(alice);
	gpud_close(bob);
	stop();
	free(al);
	free(secret);
	free(got);
}
END_TEST

/*
 * bob's kernel faults: only his run fails, with the CUDA error; his worker
 * is replaced and his next run works; alice sees nothing; gpud serves on.
 */
START_TEST(faulting_kernel_fails_only_its_run)
{
	start(NULL);
	gpud_client *alice = as(TOKEN_ALICE), *bob = as(TOKEN_BOB);
	reg(bob, "crash", crash_src, "y:out f32[]");
	uint64_t n = 32;
	gpud_handle y = poisoned(bob, GPUD_F32, n);
	alice_loop *al = malloc(sizeof(*al));
	alice_start(al, alice);
	gpud_arg args[] = {gpud_arg_buffer("y", y)};
	gpud_output o;
	size_t no;
	for (int round = 0; round < 3; round++) {
		gpud_status st = gpud_run(bob, "crash", args, 1, &o, 1, &no, NULL);
		printf("a faulting kernel, round %d: %s: %s\n", round, gpud_strerror(st),
		       gpud_errmsg(bob));
		ck_assert_int_eq(st, GPUD_EBACKEND);
		ck_assert_msg(strstr(gpud_errmsg(bob), "crash") &&
				      strstr(gpud_errmsg(bob), "cudaErrorIllegalAddress"),
			      "%s", gpud_errmsg(bob));
	}
	alice_stop(al, "bob's three faults");
	/* his buffer is still his, and a good kernel of his runs */
	reg(bob, "spin", spin_src, "y:out f32[], cycles:i64");
	bob_spins_briefly(bob, y);
	float got[32];
	download(bob, y, got, 32);
	for (int i = 0; i < 32; i++)
		ck_assert_msg(got[i] == 1.0f, "y[%d] = %g after spin", i, (double)got[i]);
	ck_assert_uint_eq(tenant_in_flight(bob, "bob"), 0); /* gpud serves, bob's runs ended */
	finish(alice, bob, al);
}
END_TEST

/*
 * bob's kernel never ends: kernel_timeout (1 s for bob) ends his worker and
 * fails the run saying so; alice's loop meanwhile sees no error (her p99
 * is printed); bob's next run works.
 */
START_TEST(endless_kernel_stopped_at_kernel_timeout)
{
	start("[tenant bob]\nkernel_timeout = 1\n");
	gpud_client *alice = as(TOKEN_ALICE), *bob = as(TOKEN_BOB);
	reg(bob, "spin", spin_src, "y:out f32[], cycles:i64");
	uint64_t n = 32;
	gpud_handle y = poisoned(bob, GPUD_F32, n);
	alice_loop *al = malloc(sizeof(*al));
	alice_start(al, alice);
	gpud_arg sa[] = {gpud_arg_buffer("y", y), gpud_arg_i64("cycles", 0)};
	gpud_output o;
	size_t no;
	double t0 = wall();
	gpud_status st = gpud_run(bob, "spin", sa, 2, &o, 1, &no, NULL);
	double took = wall() - t0;
	printf("an endless kernel: %s after %.2f s: %s\n", gpud_strerror(st), took,
	       gpud_errmsg(bob));
	alice_stop(al, "bob's endless kernel");
	ck_assert_int_eq(st, GPUD_EBACKEND);
	ck_assert_msg(strstr(gpud_errmsg(bob), "kernel_timeout") &&
			      strstr(gpud_errmsg(bob), "spin"),
		      "%s", gpud_errmsg(bob));
	ck_assert_msg(took >= 0.9, "stopped after %.2f s, before its 1 s", took);
	bob_spins_briefly(bob, y);
	finish(alice, bob, al);
}
END_TEST

/* bob's worker killed from outside mid-run: his run fails saying so, his next works. */
START_TEST(killed_worker_fails_only_its_run)
{
	start(NULL);
	gpud_client *alice = as(TOKEN_ALICE), *bob = as(TOKEN_BOB);
	reg(bob, "spin", spin_src, "y:out f32[], cycles:i64");
	uint64_t n = 32;
	gpud_handle y = poisoned(bob, GPUD_F32, n);
	pid_t pids[4];
	ck_assert_int_eq(worker_pids("bob", pids, 4), 1);
	alice_loop *al = malloc(sizeof(*al));
	alice_start(al, alice);
	gpud_arg sa[] = {gpud_arg_buffer("y", y), gpud_arg_i64("cycles", 0)};
	gpud_job *job;
	ck_assert(gpud_run_async(bob, "spin", sa, 2, NULL, NULL, &job) == GPUD_OK);
	/* gpud hands a run to the worker in the same turn of its loop as it takes
	 * the request: once status shows it in flight, it is in the worker */
	while (tenant_in_flight(bob, "bob") == 0)
		usleep(1000);
	ck_assert_int_eq(kill(pids[0], SIGKILL), 0);
	gpud_status st = gpud_job_wait(job, -1);
	printf("a killed worker: %s: %s\n", gpud_strerror(st), gpud_job_errmsg(job));
	alice_stop(al, "bob's killed worker");
	ck_assert_int_eq(st, GPUD_EBACKEND);
	ck_assert_msg(strstr(gpud_job_errmsg(job), "signal 9"), "%s", gpud_job_errmsg(job));
	gpud_job_free(job);
	bob_spins_briefly(bob, y);
	finish(alice, bob, al);
}
END_TEST

/*
 * Nothing stale: a block alice freed reaches bob zeroed (daemon/buffers.c:
 * buffers_alloc, the pool's owners). Every power of two from 16 B to 64 MiB
 * (tests/harness.c: harness_stale_round); gpud's log shows that the rounds
 * handed bob alice's blocks. Then the whole block, not just bob's bytes: a
 * kernel in bob's worker (which maps whole allocations) reads all 4 MiB of
 * the block under his 3 MiB buffer. Within one tenant a block is handed
 * back as it is (no clear to pay).
 */
static const char *tail_src =
	"extern \"C\" __global__ void tail(const long long *x, long long *out, long long n)\n"
	"{\n\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
	"\t     i += (long long)gridDim.x * blockDim.x)\n\t\tout[i] = x[i];\n}\n";

START_TEST(freed_blocks_reach_another_tenant_cleared)
{
	start(NULL);
	gpud_client *alice = as(TOKEN_ALICE), *bob = as(TOKEN_BOB);
	char msg[512];
	int rounds = 0, reused = 0;
	for (size_t bytes = 16; bytes <= (64u << 20); bytes *= 2, rounds++) {
		gpud_handle a, b;
		ck_assert_msg(harness_stale_round(alice, bob, bytes, &a, &b, msg, sizeof(msg)) == 0,
			      "%s", msg);
		reused += address_of(a) == address_of(b);
		ck_assert(gpud_free(bob, &b, 1) == GPUD_OK);
	}
	printf("stale: %d sizes from 16 B to 64 MiB, bob got alice's freed block in %d: zeros "
	       "in every one\n",
	       rounds, reused);
	ck_assert_int_ge(reused, rounds / 2); /* the rounds tested reused blocks */

	const uint64_t block = 4u << 20, words = block / 8, mine = ((3u << 20) + 8) / 8;
	uint64_t *v = malloc(block);
	for (uint64_t i = 0; i < words; i++)
		v[i] = HARNESS_MARKER | i;
	gpud_handle ha, hx, ho;
	ck_assert(gpud_alloc(alice, GPUD_I64, 1, &words, v, &ha) == GPUD_OK);
	uint64_t alice_at = address_of(ha);
	ck_assert(gpud_free(alice, &ha, 1) == GPUD_OK);
	ck_assert(gpud_alloc(bob, GPUD_I64, 1, &mine, NULL, &hx) == GPUD_OK);
	ck_assert(gpud_alloc(bob, GPUD_I64, 1, &words, NULL, &ho) == GPUD_OK);
	reg(bob, "tail", tail_src, "x:in i64[], out:out i64[], n:i64");
	gpud_arg ta[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("out", ho),
			 gpud_arg_i64("n", (int64_t)words)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(bob, "tail", ta, 3, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(bob));
	memset(v, 0x5a, block);
	ck_assert(gpud_download_range(bob, ho, 0, v, block) == GPUD_OK);
	size_t nonzero = 0, markers = 0;
	for (uint64_t i = 0; i < words; i++) {
		nonzero += v[i] != 0;
		markers += (v[i] & ~0xFFFFFFFFFFFull) == HARNESS_MARKER;
	}
	printf("stale: bob's %llu-byte buffer %s alice's freed 4 MiB block; his worker reads the "
	       "whole block: %zu non-zero words, %zu of them alice's\n",
	       (unsigned long long)(mine * 8), address_of(hx) == alice_at ? "took" : "did not take",
	       nonzero, markers);
	ck_assert_uint_eq(address_of(hx), alice_at);
	ck_assert_uint_eq(nonzero, 0);

	/* alice again: her own block comes back as she left it */
	const uint64_t small = 1u << 17;
	for (uint64_t i = 0; i < small; i++)
		v[i] = HARNESS_MARKER | i;
	ck_assert(gpud_alloc(alice, GPUD_I64, 1, &small, v, &ha) == GPUD_OK);
	uint64_t at = address_of(ha);
	ck_assert(gpud_free(alice, &ha, 1) == GPUD_OK);
	ck_assert(gpud_alloc(alice, GPUD_I64, 1, &small, NULL, &ha) == GPUD_OK);
	if (address_of(ha) == at) {
		ck_assert(gpud_download_range(alice, ha, 0, v, small * 8) == GPUD_OK);
		ck_assert_msg(v[small - 1] == (HARNESS_MARKER | (small - 1)),
			      "alice's own block was cleared for her: a clear within one tenant");
		printf("stale: alice's own freed block came back to her uncleared (no clear "
		       "within a tenant)\n");
	}
	gpud_handle all[] = {hx, ho};
	ck_assert(gpud_free(bob, all, 2) == GPUD_OK);
	ck_assert(gpud_free(alice, &ha, 1) == GPUD_OK);
	free(v);
	gpud_close(alice);
	gpud_close(bob);
	stop();
}
END_TEST

TCase *isolation_tcase(void)
{
	TCase *tc = tcase_create("tenant workers");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, tenant_kernel_cannot_reach_another_tenants_buffer);
	tcase_add_test(tc, faulting_kernel_fails_only_its_run);
	tcase_add_test(tc, endless_kernel_stopped_at_kernel_timeout);
	tcase_add_test(tc, killed_worker_fails_only_its_run);
	tcase_add_test(tc, freed_blocks_reach_another_tenant_cleared);
	return tc;
}
