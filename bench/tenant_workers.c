/*
 * bench/tenant_workers.c — what running custom kernels in tenant workers
 * (daemon/backend/cuda/tworkers.c) costs, against running them in gpud's own
 * context (kernel_workers = 0), in one run on one device:
 *   - a warm run of a tiny raw kernel (256 floats, buffers kept), p50/p99
 *     over REPS runs (default 3000), both ways;
 *   - each worker's start (from gpud's log: spawn to ready, and the context's
 *     part of it), and the first run right after the register that started it;
 *   - each worker's device memory (nvidia-smi, by pid);
 *   - two tenants (over tcp:// with tokens) each running a 1-block kernel of
 *     ~2 ms, one after the other and then at once: how much their kernels
 *     overlap (1.0: not at all, time-sliced; 2.0: fully, as under MPS).
 *
 *   tenant_workers GPUD [REPS]
 * Run it under MPS by starting nvidia-cuda-mps-control -d first (docs/lab-node.md,
 * "Custom kernels run in tenant workers").
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpud/client.h>

#include "tests/harness.h"

#define TOKEN_A "alice-0123456789abcdef0123"
#define TOKEN_B "bob-0123456789abcdef012345"

static const char *tiny_src =
	"extern \"C\" __global__ void tiny(const float *x, float *y, float s, long long n)\n"
	"{\n\tlong long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
	"\tif (i < n)\n\t\ty[i] = s * x[i];\n}\n";
static const char *busy_src =
	"extern \"C\" __global__ void busy(float *y, long long cycles)\n{\n"
	"\tlong long t0 = clock64();\n\twhile (clock64() - t0 < cycles)\n\t\t;\n"
	"\ty[threadIdx.x] = 1.0f;\n}\n";

static harness_gpud srv;
static char tcp_url[64];

static void die(const char *what, gpud_client *c)
{
	fprintf(stderr, "tenant_workers: %s: %s\n", what, c ? gpud_errmsg(c) : "");
	harness_gpud_stop(&srv, 20, NULL, 0);
	exit(1);
}

static void start(const char *gpud_bin, int workers)
{
	char msg[1024], tokens[300], conf[1024];
	static int n;
	memset(&srv, 0, sizeof(srv));
	snprintf(tcp_url, sizeof(tcp_url), "tcp://127.0.0.1:%d",
		 31000 + (int)(getpid() % 20000) + n++);
	const char *args[] = {"--listen", tcp_url, NULL};
	harness_gpud_opts o = {.bin = gpud_bin,
			       .backend = "cuda",
			       .prefix = "gpud-tw",
			       .timeout_s = 30,
			       .args = args};
	if (harness_gpud_dir(&srv, &o, msg, sizeof(msg)) != 0)
		die(msg, NULL);
	snprintf(tokens, sizeof(tokens), "%s/tokens", srv.dir);
	harness_write_text(tokens, "alice " TOKEN_A "\nbob " TOKEN_B "\n", msg, sizeof(msg));
	chmod(tokens, 0600);
	snprintf(conf, sizeof(conf), "[gpud]\ntokens_file = %s\nkernel_workers = %d\n", tokens,
		 workers);
	o.config = conf;
	if (harness_gpud_start(&srv, &o, msg, sizeof(msg)) != 0) {
		harness_dump_file("gpud log", srv.log);
		die(msg, NULL);
	}
}

static gpud_client *as(const char *token)
{
	gpud_options o = {.url = tcp_url, .token = token, .timeout_ms = 60000};
	gpud_client *c;
	if (gpud_connect_opts(&o, &c) != GPUD_OK)
		die("connect", c);
	return c;
}

static void reg(gpud_client *c, const char *name, const char *src, const char *sig, unsigned bps)
{
	gpud_kernel_spec k = {
		.name = name, .source = src, .entry = name, .signature = sig, .blocks_per_sm = bps};
	if (gpud_register(c, &k) != GPUD_OK)
		die("register", c);
}

/* p50/p99 of REPS warm runs of tiny; also the first run after the register. */
static void warm_runs(int workers, int reps, double *p50, double *p99, double *first_ms)
{
	gpud_client *c = as(TOKEN_A);
	uint64_t n = 256;
	float x[256];
	for (int i = 0; i < 256; i++)
		x[i] = (float)i;
	gpud_handle hx, hy;
	if (gpud_alloc(c, GPUD_F32, 1, &n, x, &hx) != GPUD_OK ||
	    gpud_alloc(c, GPUD_F32, 1, &n, NULL, &hy) != GPUD_OK)
		die("alloc", c);
	reg(c, "tiny", tiny_src, "x:in f32[], y:out f32[], s:f32, n:i64", 0);
	gpud_arg a[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hy),
			gpud_arg_f64("s", 2),     gpud_arg_i64("n", 256),
			gpud_arg_i64("_grid", 1), gpud_arg_i64("_block", 256)};
	gpud_output o;
	size_t no;
	double t0 = harness_now_s();
	if (gpud_run(c, "tiny", a, 6, &o, 1, &no, NULL) != GPUD_OK)
		die("first run", c);
	*first_ms = (harness_now_s() - t0) * 1e3;
	for (int i = 0; i < 300; i++)
		if (gpud_run(c, "tiny", a, 6, &o, 1, &no, NULL) != GPUD_OK)
			die("warm-up run", c);
	double *t = malloc(sizeof(double) * (size_t)reps);
	for (int i = 0; i < reps; i++) {
		double s = harness_now_s();
		if (gpud_run(c, "tiny", a, 6, &o, 1, &no, NULL) != GPUD_OK)
			die("run", c);
		t[i] = (harness_now_s() - s) * 1e6;
	}
	float y[256];
	if (gpud_download_range(c, hy, 0, y, sizeof(y)) != GPUD_OK)
		die("download", c);
	for (int i = 0; i < 256; i++)
		if (y[i] != 2.0f * x[i])
			die("tiny computed a wrong value", NULL);
	harness_sort(t, (size_t)reps);
	*p50 = harness_percentile(t, (size_t)reps, 0.5);
	*p99 = harness_percentile(t, (size_t)reps, 0.99);
	free(t);
	gpud_close(c);
	printf("  kernel_workers = %d: tiny run p50 %.1f us, p99 %.1f us (%d runs); first run "
	       "after its register %.2f ms\n",
	       workers, *p50, *p99, reps, *first_ms);
	fflush(stdout);
}

typedef struct busy_arg {
	const char *token;
	int runs;
	long long cycles;
	double wall;
	gpud_client *c;
	gpud_handle y;
} busy_arg;

static void *busy_loop(void *p)
{
	busy_arg *b = p;
	gpud_arg a[] = {gpud_arg_buffer("y", b->y), gpud_arg_i64("cycles", b->cycles),
			gpud_arg_i64("_grid", 1), gpud_arg_i64("_block", 32)};
	gpud_output o;
	size_t no;
	double t0 = harness_now_s();
	for (int i = 0; i < b->runs; i++)
		if (gpud_run(b->c, "busy", a, 4, &o, 1, &no, NULL) != GPUD_OK)
			die("busy run", b->c);
	b->wall = harness_now_s() - t0;
	return NULL;
}

/* Two tenants' ~2 ms kernels: alone one after the other, then at once. */
static void overlap(void)
{
	busy_arg b[2] = {{.token = TOKEN_A}, {.token = TOKEN_B}};
	for (int i = 0; i < 2; i++) {
		b[i].c = as(b[i].token);
		uint64_t n = 32;
		if (gpud_alloc(b[i].c, GPUD_F32, 1, &n, NULL, &b[i].y) != GPUD_OK)
			die("alloc", b[i].c);
		reg(b[i].c, "busy", busy_src, "y:out f32[], cycles:i64", 0);
		b[i].runs = 50;
		b[i].cycles = 3600000; /* ~2 ms at 1.8 GHz */
	}
	/* each warm, then alone */
	double alone = 0;
	for (int i = 0; i < 2; i++) {
		busy_loop(&b[i]);
		busy_loop(&b[i]);
		alone += b[i].wall;
	}
	pthread_t th[2];
	double t0 = harness_now_s();
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, busy_loop, &b[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	double both = harness_now_s() - t0;
	printf("  two tenants' 1-block kernels (50 runs of ~2 ms each): alone %.0f ms in all, at "
	       "once %.0f ms: overlap %.2f (1: time-sliced, 2: concurrent)\n",
	       alone * 1e3, both * 1e3, alone / both);
	for (int i = 0; i < 2; i++)
		gpud_close(b[i].c);
}

/* Worker starts and memory, from gpud's log and nvidia-smi. */
static void worker_facts(void)
{
	static char text[1 << 22];
	long n = harness_read_text(srv.log, text, sizeof(text));
	for (char *p = text; n > 0 && (p = strstr(p, "tenant worker of '")) != NULL; p++) {
		char *eol = strchr(p, '\n');
		if (strstr(p, "ready:") && (!eol || strstr(p, "ready:") < eol))
			printf("  %.*s\n", eol ? (int)(eol - p) : 200, p);
	}
	FILE *f = popen("nvidia-smi --query-compute-apps=pid,process_name,used_memory "
			"--format=csv,noheader 2>&1",
			"r");
	char line[512];
	while (f && fgets(line, sizeof(line), f))
		printf("  nvidia-smi: %s", line);
	if (f)
		pclose(f);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: tenant_workers GPUD [REPS]\n");
		return 2;
	}
	int reps = argc > 2 ? atoi(argv[2]) : 3000;
	double p50[2], p99[2], first[2];
	const char *mps = getenv("CUDA_MPS_PIPE_DIRECTORY");
	printf("tenant workers (%s)\n", mps ? "MPS running" : "no MPS: contexts time-slice");
	for (int workers = 1; workers >= 0; workers--) {
		start(argv[1], workers);
		warm_runs(workers, reps, &p50[workers], &p99[workers], &first[workers]);
		overlap();
		if (workers)
			worker_facts();
		harness_gpud_stop(&srv, 30, NULL, 0);
		harness_gpud_remove(&srv);
	}
	printf("  a custom run through a worker costs %+.1f us p50, %+.1f us p99 over one in "
	       "gpud's context\n",
	       p50[1] - p50[0], p99[1] - p99[0]);
	return 0;
}
