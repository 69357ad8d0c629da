/*
 * bench/devices.c — one gpud on one device against one gpud on two: the
 * throughput of independent lombscargle jobs from CLIENTS clients, and the
 * latency of a job whose inputs sit on the other device (the peer copy: an
 * add of two buffers there against the same add where they lie).
 *
 *   devices GPUD [SECONDS] [CLIENTS] [DEVICES] [cuda|cpu]
 *
 * DEVICES (default 0,1) is the second gpud's --device list. Each client
 * thread has a connection of its own and runs gpud_call jobs back to back:
 * x and y (N float32 samples) travel with the run, the periodogram on the
 * grid (f0, df, nf: nothing uploaded) comes back in the reply. gpud places
 * each job on the least-loaded device (bench/README: placement). Then, on
 * the second gpud, jobs whose x and y are buffers on the second device run
 * on the first (copied peer to peer) against the same jobs on the second:
 * medians over REPS runs, for a small and a large input. Prints the device
 * (nvidia-smi) and a line per measurement.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpud/client.h>

#include "tests/harness.h"

#define NX 20000
#define NF 100000
#define MAX_CLIENTS 64
/* the jobs' size: NX, NF on the GPU; a hundredth on the cpu backend */
static int nx = NX, nf = NF;

static const char *url;
static atomic_int stop;
static atomic_long jobs, errors;
static float xs[NX], ys[NX];

static gpud_client *connect_or_die(void)
{
	gpud_client *c;
	if (gpud_connect(url, &c) != GPUD_OK) {
		fprintf(stderr, "devices: connect %s: %s\n", url, gpud_errmsg(c));
		exit(1);
	}
	gpud_set_timeout(c, 120000);
	return c;
}

static void *client_main(void *arg)
{
	(void)arg;
	gpud_client *c = connect_or_die();
	gpud_array ax = {.dtype = GPUD_F32,
			 .ndim = 1,
			 .shape = {(uint64_t)nx},
			 .data = xs,
			 .nbytes = (size_t)nx * sizeof(float)},
		   ay = {.dtype = GPUD_F32,
			 .ndim = 1,
			 .shape = {(uint64_t)nx},
			 .data = ys,
			 .nbytes = (size_t)nx * sizeof(float)};
	gpud_arg args[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			   gpud_arg_f64("f0", 0.01), gpud_arg_f64("df", 0.002),
			   gpud_arg_i64("nf", nf),   gpud_arg_text("method", "direct")};
	while (!atomic_load(&stop)) {
		gpud_result out;
		size_t no;
		if (gpud_call(c, "lombscargle", args, 6, &out, 1, &no, NULL) == GPUD_OK) {
			gpud_array_free(&out.array);
			atomic_fetch_add(&jobs, 1);
		} else {
			fprintf(stderr, "devices: job: %s\n", gpud_errmsg(c));
			atomic_fetch_add(&errors, 1);
		}
	}
	gpud_close(c);
	return NULL;
}

static const char *backend = "cuda";

/* gpud on devices (cpu backend: as many simulated devices as listed). */
static int start(harness_gpud *g, const char *bin, const char *devices)
{
	static const char *args[3];
	static char count[16];
	char msg[1024];
	int n = 1;
	for (const char *p = devices; *p; p++)
		n += *p == ',';
	snprintf(count, sizeof(count), "%d", n);
	args[0] = strcmp(backend, "cpu") ? "--device" : "--cpu-devices";
	args[1] = strcmp(backend, "cpu") ? devices : count;
	args[2] = NULL;
	harness_gpud_opts o = {.bin = bin,
			       .backend = backend,
			       .args = args,
			       .prefix = "gpud-devices",
			       .timeout_s = 120};
	memset(g, 0, sizeof(*g));
	if (harness_gpud_start(g, &o, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "devices: gpud --device %s did not start: %s\n", devices, msg);
		if (g->log[0])
			harness_dump_file("gpud log", g->log);
		return -1;
	}
	url = g->url;
	return 0;
}

/* Jobs per second from clients threads over seconds (after a warm-up). */
static double throughput(int clients, double seconds, int *ndev)
{
	pthread_t th[MAX_CLIENTS];
	gpud_client *c = connect_or_die();
	*ndev = gpud_server(c)->ndevices;
	atomic_store(&stop, 0);
	for (int i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client_main, NULL);
	usleep(1000000);
	long j0 = atomic_load(&jobs);
	double t0 = harness_now_s();
	usleep((useconds_t)(seconds * 1e6));
	double rate = (double)(atomic_load(&jobs) - j0) / (harness_now_s() - t0);
	atomic_store(&stop, 1);
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	gpud_daemon_status s;
	if (gpud_status_get(c, &s) == GPUD_OK)
		for (int i = 0; i < s.server.ndevices; i++)
			printf("    device %d: %" PRIu64 " runs, busy %.2f s\n",
			       s.server.devices[i].index, s.server.devices[i].runs_total,
			       s.server.devices[i].busy_s);
	gpud_close(c);
	return rate;
}

/* Median ms of reps runs of add(x, y) (buffers) on device on: a kernel of
 * microseconds, so that the difference between its inputs there and
 * elsewhere is the peer copy. */
static double job_ms(gpud_client *c, gpud_handle x, gpud_handle y, int on, int reps)
{
	double t[64];
	gpud_arg a[] = {gpud_arg_buffer("x", x), gpud_arg_buffer("y", y)};
	gpud_set_device(c, on);
	for (int i = 0; i < reps + 1; i++) {
		gpud_output o;
		size_t no;
		double t0 = harness_now_s();
		if (gpud_run(c, "add", a, 2, &o, 1, &no, NULL) != GPUD_OK ||
		    gpud_free(c, &o.handle, 1) != GPUD_OK) {
			fprintf(stderr, "devices: run: %s\n", gpud_errmsg(c));
			exit(1);
		}
		if (i > 0) /* the first warms the size up */
			t[i - 1] = (harness_now_s() - t0) * 1e3;
	}
	gpud_set_device(c, -1);
	return harness_median(t, (size_t)reps);
}

/* Unpinned copies of n float32 on device dev: outputs of add(x, 0) run there. */
static gpud_handle unpinned_on(gpud_client *c, int dev, const float *v, uint64_t n)
{
	gpud_handle h;
	gpud_output o;
	size_t no;
	gpud_set_device(c, dev);
	if (gpud_alloc(c, GPUD_F32, 1, &n, v, &h) != GPUD_OK) {
		fprintf(stderr, "devices: alloc: %s\n", gpud_errmsg(c));
		exit(1);
	}
	gpud_arg a[] = {gpud_arg_buffer("x", h), gpud_arg_f64("y", 0.0)};
	if (gpud_run(c, "add", a, 2, &o, 1, &no, NULL) != GPUD_OK) {
		fprintf(stderr, "devices: add: %s\n", gpud_errmsg(c));
		exit(1);
	}
	gpud_free(c, &h, 1);
	gpud_set_device(c, -1);
	return o.handle;
}

static void peer_latency(int reps)
{
	gpud_client *c = connect_or_die();
	if (gpud_server(c)->ndevices < 2) {
		printf("  one device: no peer copy to time\n");
		gpud_close(c);
		return;
	}
	int d0 = gpud_server(c)->devices[0].index, d1 = gpud_server(c)->devices[1].index;
	const uint64_t sizes[] = {(uint64_t)nx, (uint64_t)nx * 200};
	for (size_t k = 0; k < 2; k++) {
		uint64_t n = sizes[k];
		float *v = malloc(n * sizeof(float));
		for (uint64_t i = 0; i < n; i++)
			v[i] = (float)i * 0.001f;
		gpud_handle x = unpinned_on(c, d1, v, n), y = unpinned_on(c, d1, v, n);
		double same = job_ms(c, x, y, d1, reps), other = job_ms(c, x, y, d0, reps);
		double mb = 2.0 * (double)n * 4 / 1e6;
		printf("  N = %-8llu (x and y %.1f MB) on device %d: add with its inputs there %.3f "
		       "ms, run on device %d (inputs copied peer to peer) %.3f ms: +%.3f ms, "
		       "%.1f GB/s\n",
		       (unsigned long long)n, mb, d1, same, d0, other, other - same,
		       other > same ? mb / 1e3 / ((other - same) / 1e3) : 0.0);
		gpud_handle hs[] = {x, y};
		gpud_free(c, hs, 2);
		free(v);
	}
	gpud_close(c);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: devices GPUD [SECONDS] [CLIENTS] [DEVICES] [cuda|cpu]\n");
		return 2;
	}
	double seconds = argc > 2 ? atof(argv[2]) : 5;
	int clients = argc > 3 ? atoi(argv[3]) : 16;
	const char *two = argc > 4 ? argv[4] : "0,1";
	backend = argc > 5 ? argv[5] : "cuda"; /* cpu: placement alone, on simulated devices */
	if (!strcmp(backend, "cpu")) {
		nx /= 100;
		nf /= 100;
	}
	if (clients < 1 || clients > MAX_CLIENTS)
		clients = 16;
	for (int i = 0; i < NX; i++) {
		xs[i] = (float)i * 0.05f + 0.01f * (float)(i % 7);
		ys[i] = (float)((i * 13) % 17) - 8.0f;
	}
	harness_gpud g;
	int n1, n2;
	if (start(&g, argv[1], "0") != 0)
		return 1;
	printf("devices: %d clients, independent lombscargle jobs (float32, N = %d, %d grid "
	       "frequencies, direct: x, y in the request, the periodogram in the reply), %.0f s "
	       "each\n",
	       clients, nx, nf, seconds);
	double r1 = throughput(clients, seconds, &n1);
	printf("  --device 0: %.0f jobs/s\n", r1);
	/* half the clients on one device: what each device of two gets; where
	 * it nears the whole, the device is saturated with half of them */
	double rh = throughput(clients / 2 > 0 ? clients / 2 : 1, seconds, &n1);
	printf("  --device 0, %d clients: %.0f jobs/s\n", clients / 2 > 0 ? clients / 2 : 1, rh);
	harness_gpud_stop(&g, 60, NULL, 0);
	harness_gpud_remove(&g);
	if (start(&g, argv[1], two) != 0)
		return 1;
	double r2 = throughput(clients, seconds, &n2);
	printf("  --device %s (%d devices): %.0f jobs/s: %.2fx one device\n", two, n2, r2, r2 / r1);
	peer_latency(15);
	harness_gpud_stop(&g, 60, NULL, 0);
	harness_gpud_remove(&g);
	return atomic_load(&errors) == 0 ? 0 : 1;
}
