/*
 * bench/transfer.c — the GPU runtime's costs as a client sees them, against
 * the same work done in-process, in one run on one device:
 *
 *   1. round trip of a tiny run (lombscargle, 1024 frequencies x 8 samples),
 *      a status and a one-trip job from a warm client, p50/p99, through the
 *      request ring and through the socket, vs an nng echo, launch +
 *      stream sync in-process, and the one-trip job in-process both with a
 *      stream sync and with gpud's own CUDA calls (staged, event polled);
 *   1b. survey (b)'s CUDA calls a run (copies, events, the launch), issued
 *      from one thread in-process: the ceiling of a loop that does only that,
 *      alone and with a second thread asking the events as gpud's waiter does;
 *   2. upload and download bandwidth through gpud at 1 MiB, 64 MiB, 1 GiB
 *      (bytes in messages; the caller's memory through the scratch region;
 *      gpud_host_alloc memory) vs in-process cudaMemcpy from pinned and from
 *      pageable memory; bytes in messages over tcp:// and tls+tcp:// loopback;
 *   3. 1, 4, 16 and 64 concurrent clients, each running lombscargle jobs
 *      (upload x, y, freqs; run; download; free): jobs/s and per-client p99.
 *   4. 64 jobs in flight three ways: 64 clients, one client shared by 64
 *      threads, one thread keeping 64 gpud_call_async jobs in flight.
 *
 *   transfer GPUD GPUCTL [quick]
 *
 * Starts its own gpud (cuda backend) on a temporary socket.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include <gpud/client.h>

#include "kernels/core/cuda_kernel.h"
#include "kernels/core/list.h"
#include "kernels/lombscargle/lombscargle.h"
#include "tests/harness.h"
#include "tests/tls_fixture.h"

static harness_gpud srv;
static const char *url = srv.url; /* the running gpud's */
/* The same gpud over tcp:// and tls+tcp:// loopback, with a token. */
#define BENCH_TOKEN "bench-0123456789abcdef"
static char tcp_url[64], tls_url[64], ca_path[300];

static double now_us(void)
{
	return harness_now_s() * 1e6;
}

/* Sorts v; the value at rank round(p (n - 1)). */
static double pctl(double *v, int n, double p)
{
	return harness_percentile(v, (size_t)n, p);
}

static void die_client(gpud_client *c, const char *what)
{
	fprintf(stderr, "transfer: %s: %s\n", what, gpud_errmsg(c));
	exit(1);
}

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "transfer: %s: %s\n", #call, cudaGetErrorString(e_));      \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void fill(float *p, size_t n, float scale)
{
	for (size_t i = 0; i < n; i++)
		p[i] = scale * (float)(i % 977 + 1) / 977.0f;
}

/* --- 1. tiny run ------------------------------------------------------------------ */

/* The transport's own floor: an nng REQ/REP echo over ipc://, no gpud. */
static char echo_url[sizeof(srv.url) + 8];
static nng_socket echo_sock;

static void *echo_main(void *arg)
{
	for (;;) {
		nng_msg *m;
		if (nng_recvmsg(echo_sock, &m, 0) != 0)
			return NULL;
		if (nng_sendmsg(echo_sock, m, 0) != 0)
			nng_msg_free(m);
	}
}

static void nng_floor(int reps, double *p50, double *p99)
{
	nng_socket req;
	pthread_t th;
	double *t = malloc((size_t)reps * sizeof(double));
	char buf[64] = {0};
	snprintf(echo_url, sizeof(echo_url), "%s.echo", url);
	if (nng_rep0_open(&echo_sock) || nng_listen(echo_sock, echo_url, NULL, 0) ||
	    nng_req0_open(&req) || nng_dial(req, echo_url, NULL, 0)) {
		fprintf(stderr, "transfer: nng echo setup failed\n");
		exit(1);
	}
	pthread_create(&th, NULL, echo_main, NULL);
	for (int r = -50; r < reps; r++) {
		nng_msg *m;
		double t0 = now_us();
		if (nng_msg_alloc(&m, 0) || nng_msg_append(m, buf, sizeof(buf)) ||
		    nng_sendmsg(req, m, 0) || nng_recvmsg(req, &m, 0)) {
			fprintf(stderr, "transfer: nng echo failed\n");
			exit(1);
		}
		nng_msg_free(m);
		if (r >= 0)
			t[r] = now_us() - t0;
	}
	*p50 = pctl(t, reps, 0.5);
	*p99 = pctl(t, reps, 0.99);
	nng_close(req);
	nng_close(echo_sock);
	pthread_join(th, NULL);
	free(t);
}

/* p50/p99 of a tiny run, a status and a one-trip job on a warm client, with the
 * request ring on or off (the socket). */
typedef struct call_times {
	double run50, run99, st50, st99, call50, call99;
	uint64_t ring_calls;
} call_times;

static call_times tiny_calls(int reps, int ring, const float *x, const float *y, const float *f,
			     int nx, int nf)
{
	uint64_t unx = (uint64_t)nx, unf = (uint64_t)nf;
	gpud_client *c;
	gpud_handle h[4];
	double *t = malloc((size_t)reps * sizeof(double));
	call_times ct;

	if (gpud_connect(url, &c) != GPUD_OK)
		die_client(c, "connect");
	gpud_set_ring(c, ring);
	if (gpud_alloc(c, GPUD_F32, 1, &unx, x, &h[0]) ||
	    gpud_alloc(c, GPUD_F32, 1, &unx, y, &h[1]) ||
	    gpud_alloc(c, GPUD_F32, 1, &unf, f, &h[2]) ||
	    gpud_alloc(c, GPUD_F32, 1, &unf, NULL, &h[3]))
		die_client(c, "alloc");
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			   gpud_arg_buffer("freqs", h[2]), gpud_arg_buffer("pgram", h[3])};
	for (int r = -50; r < reps; r++) {
		gpud_output o;
		size_t no;
		double t0 = now_us();
		if (gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL) != GPUD_OK)
			die_client(c, "run");
		if (r >= 0)
			t[r] = now_us() - t0;
	}
	ct.run50 = pctl(t, reps, 0.5);
	ct.run99 = pctl(t, reps, 0.99);
	/* The protocol's own floor: a status request touches no GPU. */
	static gpud_daemon_status ds;
	for (int r = -50; r < reps; r++) {
		double t0 = now_us();
		if (gpud_status_get(c, &ds) != GPUD_OK)
			die_client(c, "status");
		if (r >= 0)
			t[r] = now_us() - t0;
	}
	ct.st50 = pctl(t, reps, 0.5);
	ct.st99 = pctl(t, reps, 0.99);
	/* The whole job in one trip: inputs in the request, the output in the reply. */
	gpud_array ax = {.dtype = GPUD_F32,
			 .ndim = 1,
			 .shape = {unx},
			 .data = (void *)x,
			 .nbytes = unx * sizeof(float)},
		   ay = {.dtype = GPUD_F32,
			 .ndim = 1,
			 .shape = {unx},
			 .data = (void *)y,
			 .nbytes = unx * sizeof(float)},
		   af = {.dtype = GPUD_F32,
			 .ndim = 1,
			 .shape = {unf},
			 .data = (void *)f,
			 .nbytes = unf * sizeof(float)};
	gpud_arg cargs[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay),
			    gpud_arg_array("freqs", &af)};
	for (int r = -50; r < reps; r++) {
		gpud_result res;
		size_t no;
		double t0 = now_us();
		if (gpud_call(c, "lombscargle", cargs, 3, &res, 1, &no, NULL) != GPUD_OK)
			die_client(c, "call");
		if (r >= 0)
			t[r] = now_us() - t0;
		gpud_array_free(&res.array);
	}
	ct.call50 = pctl(t, reps, 0.5);
	ct.call99 = pctl(t, reps, 0.99);
	ct.ring_calls = gpud_ring_calls(c);
	gpud_free(c, h, 4);
	gpud_close(c);
	free(t);
	return ct;
}

static void tiny_run(int reps, const char *label)
{
	enum { NX = 8, NF = 1024 };
	float x[NX], y[NX], f[NF];
	double *t = malloc((size_t)reps * sizeof(double));

	fill(x, NX, 30.0f);
	fill(y, NX, 2.0f);
	fill(f, NF, 10.0f);
	call_times rg = tiny_calls(reps, 1, x, y, f, NX, NF);
	call_times sk = tiny_calls(reps, 0, x, y, f, NX, NF);
	if (rg.ring_calls < 3u * (unsigned)reps || sk.ring_calls != 0) {
		fprintf(stderr,
			"transfer: the ring took %llu of the ring client's calls and %llu of "
			"the socket client's\n",
			(unsigned long long)rg.ring_calls, (unsigned long long)sk.ring_calls);
		exit(1);
	}

	/* In-process: the same kernel object, launch + cudaStreamSynchronize. */
	struct cudaDeviceProp prop;
	void *d;
	char err[256];
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaMalloc(&d, (2 * NX + 2 * NF) * sizeof(float)));
	CK(cudaMemcpy(d, x, sizeof(x), cudaMemcpyHostToDevice));
	CK(cudaMemcpy((float *)d + NX, y, sizeof(y), cudaMemcpyHostToDevice));
	CK(cudaMemcpy((float *)d + 2 * NX, f, sizeof(f), cudaMemcpyHostToDevice));
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = kernel_find("lombscargle");
	a.dtype = GPUD_F32;
	size_t counts[4] = {NX, NX, NF, NF}, offs[4] = {0, NX, 2 * NX, 2 * NX + NF};
	for (int i = 0; i < 4; i++) {
		kernel_array *arr = &a.v[i].arr;
		arr->dtype = GPUD_F32;
		arr->ndim = 1;
		arr->shape[0] = arr->count = counts[i];
		arr->data = (float *)d + offs[i];
		a.v[i].present = 1;
	}
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cuda_launch_ctx lc = {.stream = s, .sm_count = prop.multiProcessorCount, .device = 0};
	size_t nk;
	const cuda_kernel *ck = cuda_kernel_list(&nk)[KERNEL_ID_lombscargle];
	for (int r = -50; r < reps; r++) {
		double t0 = now_us();
		if (ck->launch(&a, &lc, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		CK(cudaStreamSynchronize(s));
		if (r >= 0)
			t[r] = now_us() - t0;
	}
	double i50 = pctl(t, reps, 0.5), i99 = pctl(t, reps, 0.99);
	/* The tiny run with gpud's CUDA calls: the kernel between its two
	 * timing events, the second polled (cudaEventQuery) rather than waited
	 * on, its time read. */
	cudaEvent_t ev[3];
	for (int i = 0; i < 3; i++)
		CK(cudaEventCreateWithFlags(&ev[i], i == 2 ? cudaEventDisableTiming : 0));
	for (int r = -50; r < reps; r++) {
		double t0 = now_us();
		CK(cudaEventRecord(ev[0], s));
		if (ck->launch(&a, &lc, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		CK(cudaEventRecord(ev[1], s));
		cudaError_t q;
		while ((q = cudaEventQuery(ev[1])) == cudaErrorNotReady)
			;
		CK(q);
		float ms;
		CK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
		if (r >= 0)
			t[r] = now_us() - t0;
	}
	double p50 = pctl(t, reps, 0.5), p99 = pctl(t, reps, 0.99);
	/* The one-trip job in-process: three copies in from pinned memory, the
	 * launch, the output's copy back, one sync. */
	float *hp;
	CK(cudaMallocHost((void **)&hp, (2 * NX + 2 * NF) * sizeof(float)));
	memcpy(hp, x, sizeof(x));
	memcpy(hp + NX, y, sizeof(y));
	memcpy(hp + 2 * NX, f, sizeof(f));
	for (int r = -50; r < reps; r++) {
		double t0 = now_us();
		for (int i = 0; i < 3; i++)
			CK(cudaMemcpyAsync((float *)d + offs[i], hp + offs[i],
					   counts[i] * sizeof(float), cudaMemcpyHostToDevice, s));
		if (ck->launch(&a, &lc, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		CK(cudaMemcpyAsync(hp + offs[3], (float *)d + offs[3], NF * sizeof(float),
				   cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		if (r >= 0)
			t[r] = now_us() - t0;
	}
	double c50 = pctl(t, reps, 0.5), c99 = pctl(t, reps, 0.99);
	/* The same job with gpud's own sequence of CUDA calls and nothing else
	 * (no request, no reply): inputs copied from the caller's memory into a
	 * pinned staging piece and up, the kernel between its two timing
	 * events, the output down into the piece behind an event that is
	 * polled (cudaEventQuery, as gpud's loop does) rather than waited on,
	 * then copied out into fresh memory; the kernel's time read. What a
	 * one-trip call costs beyond this is gpud's request path. */
	const float *src[3] = {x, y, f};
	for (int r = -50; r < reps; r++) {
		double t0 = now_us();
		for (int i = 0; i < 3; i++) {
			memcpy(hp + offs[i], src[i], counts[i] * sizeof(float));
			CK(cudaMemcpyAsync((float *)d + offs[i], hp + offs[i],
					   counts[i] * sizeof(float), cudaMemcpyHostToDevice, s));
		}
		CK(cudaEventRecord(ev[0], s));
		if (ck->launch(&a, &lc, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		CK(cudaEventRecord(ev[1], s));
		CK(cudaMemcpyAsync(hp + offs[3], (float *)d + offs[3], NF * sizeof(float),
				   cudaMemcpyDeviceToHost, s));
		CK(cudaEventRecord(ev[2], s));
		cudaError_t q;
		while ((q = cudaEventQuery(ev[2])) == cudaErrorNotReady)
			;
		CK(q);
		float ms, *out = malloc(NF * sizeof(float));
		CK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
		memcpy(out, hp + offs[3], NF * sizeof(float));
		free(out);
		if (r >= 0)
			t[r] = now_us() - t0;
	}
	double g50 = pctl(t, reps, 0.5), g99 = pctl(t, reps, 0.99);
	for (int i = 0; i < 3; i++)
		CK(cudaEventDestroy(ev[i]));
	CK(cudaFreeHost(hp));
	CK(cudaFree(d));
	CK(cudaStreamDestroy(s));
	printf("1. tiny run (lombscargle float32, 1024 freqs x 8 samples), %d runs; gpud %s\n",
	       reps, label);
	printf("   %-42s %10s %10s\n", "", "p50 (us)", "p99 (us)");
	printf("   %-42s %10.1f %10.1f\n", "gpud run, warm client, request ring", rg.run50,
	       rg.run99);
	printf("   %-42s %10.1f %10.1f\n", "gpud run, warm client, socket (ipc)", sk.run50,
	       sk.run99);
	printf("   %-42s %10.1f %10.1f\n", "gpud status (no GPU work), ring", rg.st50, rg.st99);
	printf("   %-42s %10.1f %10.1f\n", "gpud status (no GPU work), socket", sk.st50, sk.st99);
	double e50, e99;
	nng_floor(reps, &e50, &e99);
	printf("   %-42s %10.1f %10.1f\n", "nng REQ/REP echo, ipc (no gpud)", e50, e99);
	printf("   %-42s %10.1f %10.1f\n", "gpud_call: copy in, run, copy out; ring", rg.call50,
	       rg.call99);
	printf("   %-42s %10.1f %10.1f\n", "gpud_call: copy in, run, copy out; socket", sk.call50,
	       sk.call99);
	printf("   %-42s %10.1f %10.1f\n", "in-process launch + sync", i50, i99);
	printf("   %-42s %10.1f %10.1f\n", "in-process, gpud's CUDA calls (events, polled)", p50,
	       p99);
	printf("   %-42s %10.1f %10.1f\n", "in-process 3 copies in, launch, copy out, sync", c50,
	       c99);
	printf("   %-42s %10.1f %10.1f\n", "in-process, gpud's CUDA calls (staged, polled)", g50,
	       g99);
	printf("   %-42s %9.1fx %9.1fx\n", "ratio gpud run (ring) / in-process", rg.run50 / i50,
	       rg.run99 / i99);
	printf("   %-42s %9.1fx %9.1fx\n\n", "ratio socket / ring (run)", sk.run50 / rg.run50,
	       sk.run99 / rg.run99);
	free(t);
}

/* --- 1b. survey (b)'s CUDA work a run, in-process ------------------------------------ */

/*
 * What gpud's loop asks of CUDA for each of survey (b)'s runs (one series of
 * MN samples, MM frequencies, float32), issued from one thread with MSLOTS
 * runs in flight on as many streams and nothing else: x and y copied into
 * pinned staging and up, the output down behind an event, that event polled
 * before the slot is used again and the output copied out. "alone" adds the
 * kernel between its two timing events (an unbatched run); "batch member"
 * is a member of a batch without its share of the one launch. The rate is
 * the ceiling of a loop that does only this.
 */
#define MN 3000
#define MM 1000
#define MSLOTS 64

/* A second thread asking the slots' end events, as gpud's waiter does (a
 * round of cudaEventQuery, then a nap of 10 us), while the loop issues. */
typedef struct asker {
	cudaEvent_t *ev;
	int n;
	atomic_int stop;
	long long queries;
} asker;

static void *asker_main(void *arg)
{
	asker *a = arg;
	while (!atomic_load(&a->stop)) {
		for (int i = 0; i < a->n; i++) {
			(void)cudaEventQuery(a->ev[i]);
			a->queries++;
		}
		usleep(10);
	}
	return NULL;
}

static void member_floor(int runs)
{
	static float hx[MN], hy[MN], hf[MM];
	fill(hx, MN, 30.0f);
	fill(hy, MN, 2.0f);
	fill(hf, MM, 10.0f);
	const size_t per = 2 * MN + 2 * MM; /* x, y, freqs, pgram */
	float *pin, *d;
	CK(cudaMallocHost((void **)&pin, MSLOTS * per * sizeof(float)));
	CK(cudaMalloc((void **)&d, MSLOTS * per * sizeof(float)));
	cudaStream_t st[MSLOTS];
	cudaEvent_t ev[MSLOTS][3];
	kernel_args a[MSLOTS];
	size_t counts[4] = {MN, MN, MM, MM}, offs[4] = {0, MN, 2 * MN, 2 * MN + MM};
	for (int k = 0; k < MSLOTS; k++) {
		CK(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking));
		for (int i = 0; i < 3; i++)
			CK(cudaEventCreateWithFlags(&ev[k][i],
						    i == 2 ? cudaEventDisableTiming : 0));
		CK(cudaMemcpy(d + k * per + offs[2], hf, sizeof(hf), cudaMemcpyHostToDevice));
		memset(&a[k], 0, sizeof(a[k]));
		a[k].kernel = kernel_find("lombscargle");
		a[k].dtype = GPUD_F32;
		for (int i = 0; i < 4; i++) {
			kernel_array *arr = &a[k].v[i].arr;
			arr->dtype = GPUD_F32;
			arr->ndim = 1;
			arr->shape[0] = arr->count = counts[i];
			arr->data = d + k * per + offs[i];
			a[k].v[i].present = 1;
		}
	}
	struct cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	size_t nk;
	const cuda_kernel *ck = cuda_kernel_list(&nk)[KERNEL_ID_lombscargle];
	char err[256];
	float out[MM];
	printf("1b. survey (b)'s CUDA work a run in-process (N = %d, M = %d, float32), %d runs, "
	       "%d in flight, one thread\n",
	       MN, MM, runs, MSLOTS);
	cudaEvent_t ends[MSLOTS];
	for (int k = 0; k < MSLOTS; k++)
		ends[k] = ev[k][2];
	for (int mode = 0; mode < 4; mode++) {
		int alone = mode % 2 == 0, asked = mode >= 2;
		int busy[MSLOTS] = {0};
		asker ak = {.ev = ends, .n = MSLOTS};
		pthread_t at;
		if (asked && pthread_create(&at, NULL, asker_main, &ak) != 0) {
			fprintf(stderr, "transfer: pthread_create failed\n");
			exit(1);
		}
		struct timespec c0, c1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
		double t0 = now_us();
		for (int r = 0; r < runs + MSLOTS; r++) {
			int k = r % MSLOTS;
			float *p = pin + k * per, *dk = d + k * per;
			if (busy[k]) {
				cudaError_t q;
				while ((q = cudaEventQuery(ev[k][2])) == cudaErrorNotReady)
					;
				CK(q);
				if (alone) {
					float ms;
					CK(cudaEventElapsedTime(&ms, ev[k][0], ev[k][1]));
				}
				memcpy(out, p + offs[3], sizeof(out));
				busy[k] = 0;
			}
			if (r >= runs)
				continue;
			memcpy(p, hx, sizeof(hx));
			CK(cudaMemcpyAsync(dk, p, sizeof(hx), cudaMemcpyHostToDevice, st[k]));
			memcpy(p + MN, hy, sizeof(hy));
			CK(cudaMemcpyAsync(dk + MN, p + MN, sizeof(hy), cudaMemcpyHostToDevice,
					   st[k]));
			if (alone) {
				cuda_launch_ctx lc = {.stream = st[k],
						      .sm_count = prop.multiProcessorCount,
						      .device = 0};
				CK(cudaEventRecord(ev[k][0], st[k]));
				if (ck->launch(&a[k], &lc, err, sizeof(err)) != 0) {
					fprintf(stderr, "%s\n", err);
					exit(1);
				}
				CK(cudaEventRecord(ev[k][1], st[k]));
			}
			CK(cudaMemcpyAsync(p + offs[3], dk + offs[3], MM * sizeof(float),
					   cudaMemcpyDeviceToHost, st[k]));
			CK(cudaEventRecord(ev[k][2], st[k]));
			busy[k] = 1;
		}
		double wall = now_us() - t0;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
		double cpu = (c1.tv_sec - c0.tv_sec) * 1e6 + (c1.tv_nsec - c0.tv_nsec) / 1e3;
		if (asked) {
			atomic_store(&ak.stop, 1);
			pthread_join(at, NULL);
		}
		char what[96];
		snprintf(what, sizeof(what), "%s%s",
			 alone ? "alone (copies, launch, events)" : "batch member (copies, event)",
			 asked ? ", + asker" : "");
		printf("   %-48s %8.0f runs/s, %.1f us of CPU a run", what, runs / (wall / 1e6),
		       cpu / runs);
		if (asked)
			printf(" (asker: %.1f queries a run)", (double)ak.queries / runs);
		printf("\n");
	}
	printf("\n");
	for (int k = 0; k < MSLOTS; k++) {
		for (int i = 0; i < 3; i++)
			CK(cudaEventDestroy(ev[k][i]));
		CK(cudaStreamDestroy(st[k]));
	}
	CK(cudaFreeHost(pin));
	CK(cudaFree(d));
}

/* --- 2. bandwidth ------------------------------------------------------------------- */

static double bw_median(double *t, int reps, size_t n)
{
	return (double)n / pctl(t, reps, 0.5) / 1e3; /* bytes/us -> GB/s */
}

/* Median GB/s of reps uploads then downloads of n bytes through c from/to p. */
static void gpud_updown(gpud_client *c, gpud_handle h, char *p, size_t n, int reps, double *up,
			double *down)
{
	double *t = malloc((size_t)reps * 2 * sizeof(double));
	for (int r = 0; r < reps; r++) {
		double t0 = now_us();
		if (gpud_upload(c, h, 0, p, n) != GPUD_OK)
			die_client(c, "upload");
		double t1 = now_us();
		if (gpud_download_range(c, h, 0, p, n) != GPUD_OK)
			die_client(c, "download");
		t[r] = t1 - t0;
		t[reps + r] = now_us() - t1;
	}
	*up = bw_median(t, reps, n);
	*down = bw_median(t + reps, reps, n);
	free(t);
}

static void bandwidth(int quick)
{
	static const size_t sizes[] = {1u << 20, 64u << 20, 1u << 30};
	static const char *names[] = {"1 MiB", "64 MiB", "1 GiB"};
	gpud_client *c, *cm;
	size_t maxs = quick ? (64u << 20) : (1u << 30);
	char *host = malloc(maxs), *pinned, *region;
	void *dev;

	memset(host, 1, maxs); /* pageable, faulted in: the fair pageable baseline */
	CK(cudaMallocHost((void **)&pinned, maxs));
	memset(pinned, 1, maxs);
	CK(cudaMalloc(&dev, maxs));
	if (gpud_connect(url, &c) != GPUD_OK)
		die_client(c, "connect");
	/* A second client that never shares memory: everything through messages. */
	setenv("GPUD_NO_SHM", "1", 1);
	if (gpud_connect(url, &cm) != GPUD_OK)
		die_client(cm, "connect");
	unsetenv("GPUD_NO_SHM");
	double t0 = now_us();
	if ((region = gpud_host_alloc(c, maxs)) == NULL)
		die_client(c, "gpud_host_alloc");
	double t_reg = now_us() - t0;
	memset(region, 1, maxs);
	printf("2. bandwidth, GB/s (median); gpud_host_alloc of %zu MiB (memfd + gpud maps and "
	       "pins it) took %.1f ms\n",
	       maxs >> 20, t_reg / 1e3);
	printf("   msg: bytes in nng messages (max_message_size %llu); shm: the caller's malloc'd "
	       "memory through\n   the pinned scratch region; region: gpud_host_alloc memory, DMA "
	       "straight from/to it\n",
	       (unsigned long long)gpud_server(c)->max_message_size);
	printf("   %-7s %7s %7s %7s %7s %7s %7s | %7s %7s %8s %8s\n", "size", "msg up", "msg dn",
	       "shm up", "shm dn", "reg up", "reg dn", "pin H2D", "pin D2H", "page H2D",
	       "page D2H");
	for (int s = 0; s < 3; s++) {
		size_t n = sizes[s];
		if (n > maxs)
			break;
		int reps = n >= (1u << 30) ? 5 : n >= (64u << 20) ? 9 : 51;
		double gbs[10];
		gpud_handle h;
		if (gpud_alloc(c, GPUD_I32, 1, (uint64_t[]){n / 4}, NULL, &h) != GPUD_OK)
			die_client(c, "alloc");
		gpud_handle hm;
		if (gpud_alloc(cm, GPUD_I32, 1, (uint64_t[]){n / 4}, NULL, &hm) != GPUD_OK)
			die_client(cm, "alloc");
		gpud_updown(cm, hm, host, n, n >= (1u << 30) ? 3 : reps, &gbs[0], &gbs[1]);
		gpud_updown(c, h, host, n, reps, &gbs[2], &gbs[3]);
		gpud_updown(c, h, region, n, reps, &gbs[4], &gbs[5]);
		double *t = malloc((size_t)reps * 4 * sizeof(double));
		for (int r = 0; r < reps; r++) {
			double a = now_us();
			CK(cudaMemcpy(dev, pinned, n, cudaMemcpyHostToDevice));
			double b = now_us();
			CK(cudaMemcpy(pinned, dev, n, cudaMemcpyDeviceToHost));
			double cc = now_us();
			CK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
			double d = now_us();
			CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
			double e = now_us();
			t[r] = b - a;
			t[reps + r] = cc - b;
			t[2 * reps + r] = d - cc;
			t[3 * reps + r] = e - d;
		}
		for (int k = 0; k < 4; k++)
			gbs[6 + k] = bw_median(t + k * reps, reps, n);
		printf("   %-7s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f %8.2f %8.2f\n",
		       names[s], gbs[0], gbs[1], gbs[2], gbs[3], gbs[4], gbs[5], gbs[6], gbs[7],
		       gbs[8], gbs[9]);
		if (s == 2 || (quick && s == 1))
			printf("   upload / in-process pageable H2D at %s: msg %.0f%%, shm %.0f%%, "
			       "region %.0f%%\n",
			       names[s], 100.0 * gbs[0] / gbs[8], 100.0 * gbs[2] / gbs[8],
			       100.0 * gbs[4] / gbs[8]);
		gpud_free(c, &h, 1);
		gpud_free(cm, &hm, 1);
		free(t);
	}
	/* Messages over the network transports (what a client on another machine has). */
	gpud_client *ct, *cs;
	gpud_options to = {.url = tcp_url, .token = BENCH_TOKEN},
		     so = {.url = tls_url,
			   .token = BENCH_TOKEN,
			   .tls_ca = ca_path,
			   .tls_server_name = "localhost"};
	if (gpud_connect_opts(&to, &ct) != GPUD_OK)
		die_client(ct, "connect over tcp");
	if (gpud_connect_opts(&so, &cs) != GPUD_OK)
		die_client(cs, "connect over tls");
	printf("   bytes in messages over loopback (GB/s, median):\n");
	printf("   %-7s %7s %7s %7s %7s\n", "size", "tcp up", "tcp dn", "tls up", "tls dn");
	for (int s = 0; s < 3; s++) {
		size_t n = sizes[s];
		if (n > maxs)
			break;
		int reps = n >= (1u << 30) ? 3 : n >= (64u << 20) ? 9 : 51;
		double gbs[4];
		gpud_handle ht, hs;
		if (gpud_alloc(ct, GPUD_I32, 1, (uint64_t[]){n / 4}, NULL, &ht) != GPUD_OK)
			die_client(ct, "alloc");
		if (gpud_alloc(cs, GPUD_I32, 1, (uint64_t[]){n / 4}, NULL, &hs) != GPUD_OK)
			die_client(cs, "alloc");
		gpud_updown(ct, ht, host, n, reps, &gbs[0], &gbs[1]);
		gpud_updown(cs, hs, host, n, reps, &gbs[2], &gbs[3]);
		printf("   %-7s %7.2f %7.2f %7.2f %7.2f\n", names[s], gbs[0], gbs[1], gbs[2],
		       gbs[3]);
		gpud_free(ct, &ht, 1);
		gpud_free(cs, &hs, 1);
	}
	gpud_close(ct);
	gpud_close(cs);
	printf("\n");
	gpud_host_free(c, region);
	gpud_close(c);
	gpud_close(cm);
	CK(cudaFreeHost(pinned));
	CK(cudaFree(dev));
	free(host);
}

/* --- 3. concurrent clients ------------------------------------------------------------ */

typedef struct job_client {
	pthread_t th;
	int jobs;
	double *lat;
	int failed;
	char msg[256];
} job_client;

enum { JX = 100, JF = 1 << 16 };
static float jx[JX], jy[JX], jf[JF];

static void *job_loop(void *arg)
{
	job_client *jc = arg;
	gpud_client *c;
	uint64_t nx = JX, nf = JF;
	float *out = malloc(JF * sizeof(float));

	if (gpud_connect(url, &c) != GPUD_OK) {
		snprintf(jc->msg, sizeof(jc->msg), "connect: %s", gpud_errmsg(c));
		jc->failed = jc->jobs;
		gpud_close(c);
		free(out);
		return NULL;
	}
	for (int j = 0; j < jc->jobs; j++) {
		gpud_handle h[4];
		gpud_output o;
		size_t no;
		double t0 = now_us();
		if (gpud_alloc(c, GPUD_F32, 1, &nx, jx, &h[0]) ||
		    gpud_alloc(c, GPUD_F32, 1, &nx, jy, &h[1]) ||
		    gpud_alloc(c, GPUD_F32, 1, &nf, jf, &h[2])) {
			jc->failed++;
			snprintf(jc->msg, sizeof(jc->msg), "alloc: %s", gpud_errmsg(c));
			continue;
		}
		gpud_arg args[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
				   gpud_arg_buffer("freqs", h[2])};
		if (gpud_run(c, "lombscargle", args, 3, &o, 1, &no, NULL) != GPUD_OK ||
		    gpud_download_range(c, o.handle, 0, out, JF * sizeof(float)) != GPUD_OK) {
			jc->failed++;
			snprintf(jc->msg, sizeof(jc->msg), "run: %s", gpud_errmsg(c));
			continue;
		}
		h[3] = o.handle;
		gpud_free(c, h, 4);
		jc->lat[j] = now_us() - t0;
		if (!(out[JF / 2] == out[JF / 2])) {
			jc->failed++;
			snprintf(jc->msg, sizeof(jc->msg), "NaN in the output");
		}
	}
	gpud_close(c);
	free(out);
	return NULL;
}

static void concurrency(int quick)
{
	static const int counts[] = {1, 4, 16, 64};
	fill(jx, JX, 30.0f);
	fill(jy, JX, 2.0f);
	fill(jf, JF, 10.0f);
	printf("3. concurrent clients, each running lombscargle jobs (float32, %d samples, %d "
	       "freqs: upload, run, download, free)\n",
	       JX, JF);
	printf("   %-8s %8s %10s %16s %16s %16s %8s\n", "clients", "jobs", "jobs/s",
	       "median p99 (ms)", "worst p99 (ms)", "worst/median", "errors");
	for (int k = 0; k < 4; k++) {
		int n = counts[k], jobs = quick ? 10 : 40;
		job_client *jc = calloc((size_t)n, sizeof(*jc));
		double t0 = now_us();
		for (int i = 0; i < n; i++) {
			jc[i].jobs = jobs;
			jc[i].lat = calloc((size_t)jobs, sizeof(double));
			pthread_create(&jc[i].th, NULL, job_loop, &jc[i]);
		}
		int errors = 0;
		for (int i = 0; i < n; i++) {
			pthread_join(jc[i].th, NULL);
			errors += jc[i].failed;
			if (jc[i].failed)
				fprintf(stderr, "client %d: %s\n", i, jc[i].msg);
		}
		double secs = (now_us() - t0) / 1e6;
		double *p99 = malloc((size_t)n * sizeof(double));
		for (int i = 0; i < n; i++)
			p99[i] = pctl(jc[i].lat, jobs, 0.99) / 1e3;
		double med = pctl(p99, n, 0.5), worst = p99[n - 1];
		printf("   %-8d %8d %10.1f %16.2f %16.2f %15.2fx %8d\n", n, n * jobs,
		       (double)(n * jobs) / secs, med, worst, worst / med, errors);
		for (int i = 0; i < n; i++)
			free(jc[i].lat);
		free(jc);
		free(p99);
	}
}

/* --- 4. one client with many jobs in flight, against many clients ---------------------- */

enum { KX = 100, KF = 4096, INFLIGHT = 64 };
static float kx[KX], ky[KX], kf[KF];
static gpud_array ka[3];

/* One job: lombscargle with its inputs in the request and the output in the reply. */
static gpud_arg kargs[3];

static int check_result(gpud_result *r)
{
	int ok = r->array.nbytes == KF * sizeof(float) &&
		 ((float *)r->array.data)[KF / 2] == ((float *)r->array.data)[KF / 2];
	gpud_array_free(&r->array);
	return ok;
}

typedef struct call_worker {
	pthread_t th;
	gpud_client *shared; /* NULL: a client of its own */
	int jobs, failed;
	char msg[256];
} call_worker;

static void *call_loop(void *arg)
{
	call_worker *w = arg;
	gpud_client *c = w->shared;
	if (c == NULL && gpud_connect(url, &c) != GPUD_OK) {
		snprintf(w->msg, sizeof(w->msg), "connect: %s", gpud_errmsg(c));
		w->failed = w->jobs;
		gpud_close(c);
		return NULL;
	}
	for (int j = 0; j < w->jobs; j++) {
		gpud_result r;
		size_t n;
		if (gpud_call(c, "lombscargle", kargs, 3, &r, 1, &n, NULL) != GPUD_OK || n != 1) {
			w->failed++;
			snprintf(w->msg, sizeof(w->msg), "call: %s", gpud_errmsg(c));
			continue;
		}
		w->failed += !check_result(&r);
	}
	if (w->shared == NULL)
		gpud_close(c);
	return NULL;
}

/* n threads of jobs calls each; shared: one client for all of them. jobs/s, errors in *err. */
static double threads_rate(int n, int jobs, int shared, int *err)
{
	gpud_client *c = NULL;
	if (shared && gpud_connect(url, &c) != GPUD_OK) {
		fprintf(stderr, "connect: %s\n", gpud_errmsg(c));
		exit(1);
	}
	call_worker *w = calloc((size_t)n, sizeof(*w));
	double t0 = now_us();
	for (int i = 0; i < n; i++) {
		w[i].jobs = jobs;
		w[i].shared = c;
		pthread_create(&w[i].th, NULL, call_loop, &w[i]);
	}
	*err = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		*err += w[i].failed;
		if (w[i].failed)
			fprintf(stderr, "thread %d: %s\n", i, w[i].msg);
	}
	double secs = (now_us() - t0) / 1e6;
	free(w);
	gpud_close(c);
	return (double)n * jobs / secs;
}

/* One thread, one client, INFLIGHT jobs in flight: a finished job's slot takes the next. */
static double async_rate(int total, int *err)
{
	gpud_client *c;
	gpud_job *slot[INFLIGHT] = {0};
	if (gpud_connect(url, &c) != GPUD_OK) {
		fprintf(stderr, "connect: %s\n", gpud_errmsg(c));
		exit(1);
	}
	*err = 0;
	int submitted = 0, finished = 0;
	double t0 = now_us();
	while (finished < total) {
		for (int i = 0; i < INFLIGHT; i++) {
			if (slot[i] && gpud_job_done(slot[i])) {
				gpud_result r;
				size_t n;
				if (gpud_job_results(slot[i], &r, 1, &n, NULL) != GPUD_OK || n != 1)
					(*err)++;
				else
					*err += !check_result(&r);
				gpud_job_free(slot[i]);
				slot[i] = NULL;
				finished++;
			}
			if (slot[i] == NULL && submitted < total) {
				if (gpud_call_async(c, "lombscargle", kargs, 3, NULL, NULL,
						    &slot[i]) != GPUD_OK) {
					fprintf(stderr, "submit: %s\n", gpud_errmsg(c));
					exit(1);
				}
				submitted++;
			}
		}
		/* Wait on the oldest job in flight rather than spinning. */
		for (int i = 0; i < INFLIGHT; i++)
			if (slot[i]) {
				gpud_job_wait(slot[i], 1);
				break;
			}
	}
	double secs = (now_us() - t0) / 1e6;
	gpud_close(c);
	return (double)total / secs;
}

static void inflight(int quick)
{
	int per = quick ? 20 : 100, e1, e2, e3;
	fill(kx, KX, 30.0f);
	fill(ky, KX, 2.0f);
	fill(kf, KF, 10.0f);
	ka[0] = (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {KX}, .data = kx, .nbytes = sizeof(kx)};
	ka[1] = (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {KX}, .data = ky, .nbytes = sizeof(ky)};
	ka[2] = (gpud_array){
		.dtype = GPUD_F32, .ndim = 1, .shape = {KF}, .data = kf, .nbytes = sizeof(kf)};
	kargs[0] = gpud_arg_array("x", &ka[0]);
	kargs[1] = gpud_arg_array("y", &ka[1]);
	kargs[2] = gpud_arg_array("freqs", &ka[2]);
	printf("4. %d jobs in flight: gpud_call of lombscargle (float32, %d samples, %d freqs, "
	       "inputs in the request, output in the reply), %d jobs\n",
	       INFLIGHT, KX, KF, INFLIGHT * per);
	double a = threads_rate(INFLIGHT, per, 0, &e1);
	double b = threads_rate(INFLIGHT, per, 1, &e2);
	double d = async_rate(INFLIGHT * per, &e3);
	printf("   %-44s %10.1f jobs/s  errors %d\n", "64 clients, one thread each", a, e1);
	printf("   %-44s %10.1f jobs/s  errors %d  (%.2fx)\n", "1 client shared by 64 threads", b,
	       e2, b / a);
	printf("   %-44s %10.1f jobs/s  errors %d  (%.2fx)\n",
	       "1 client, 1 thread, 64 gpud_call_async jobs", d, e3, d / a);
}

/* A loopback TCP port nothing listens on now (bound with port 0, released). */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &al) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: transfer GPUD GPUCTL [quick]\n");
		return 2;
	}
	int quick = argc > 3 && !strcmp(argv[3], "quick");
	harness_gpud_opts o = {.bin = argv[1],
			       .backend = "cuda",
			       .prefix = "gpud-transfer",
			       .timeout_s = 30};
	char msg[1024], key_path[300], tokens_path[300], conf[2048];
	if (harness_gpud_dir(&srv, &o, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "transfer: %s\n", msg);
		return 1;
	}
	/* ipc:// (the default URL) plus tcp:// and tls+tcp:// on loopback ports */
	snprintf(ca_path, sizeof(ca_path), "%s/cert.pem", srv.dir);
	snprintf(key_path, sizeof(key_path), "%s/key.pem", srv.dir);
	snprintf(tokens_path, sizeof(tokens_path), "%s/tokens", srv.dir);
	if (harness_write_text(ca_path, test_tls_cert, msg, sizeof(msg)) ||
	    harness_write_text(key_path, test_tls_key, msg, sizeof(msg)) ||
	    harness_write_text(tokens_path, "bench " BENCH_TOKEN "\n", msg, sizeof(msg)) ||
	    chmod(key_path, 0600) || chmod(tokens_path, 0600)) {
		fprintf(stderr, "transfer: %s\n", msg);
		return 1;
	}
	/* ports the system has free now (ports made of the pid could be a
	 * connection's own, in the ephemeral range: gpud then could not listen) */
	int p1 = free_port(), p2;
	while ((p2 = free_port()) == p1)
		;
	snprintf(tcp_url, sizeof(tcp_url), "tcp://127.0.0.1:%d", p1);
	snprintf(tls_url, sizeof(tls_url), "tls+tcp://127.0.0.1:%d", p2);
	snprintf(conf, sizeof(conf), "[gpud]\ntokens_file = %s\ntls_cert = %s\ntls_key = %s\n",
		 tokens_path, ca_path, key_path);
	char ipc_url[300];
	snprintf(ipc_url, sizeof(ipc_url), "ipc://%s/gpud.sock", srv.dir);
	const char *extra[] = {"--listen", tcp_url, "--listen", tls_url, NULL};
	o.config = conf;
	o.args = extra;
	o.listen = ipc_url;
	if (harness_gpud_start(&srv, &o, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "transfer: gpud did not start: %s\n", msg);
		harness_dump_file("gpud's log", srv.log);
		return 1;
	}
	gpud_client *c = NULL;
	if (gpud_connect(url, &c) != GPUD_OK) {
		fprintf(stderr, "transfer: %s\n", gpud_errmsg(c));
		return 1;
	}
	printf("device: %s; gpud %s, backend %s\n\n", gpud_server(c)->devices[0].name,
	       gpud_server(c)->version, gpud_server(c)->backend);
	gpud_close(c);
	CK(cudaSetDevice(0));
	CK(cudaFree(NULL));

	tiny_run(quick ? 200 : 2000, "as configured (poll_us = 1000: the loop polls young jobs)");
	member_floor(quick ? 6400 : 64000);
	bandwidth(quick);
	concurrency(quick);
	inflight(quick);

	int stopped = harness_gpud_stop(&srv, 60, msg, sizeof(msg));
	if (stopped != 0)
		fprintf(stderr, "transfer: %s\n", msg);

	/* The same tiny run with completions from stream callbacks only: another gpud
	 * in the same directory, on a socket of its own. */
	char url2[200];
	snprintf(url2, sizeof(url2), "ipc://%s/gpud2.sock", srv.dir);
	o.listen = url2;
	o.args = NULL;
	o.config = "[gpud]\npoll_us = 0\n";
	if (harness_gpud_start(&srv, &o, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "transfer: %s\n", msg);
		return 1;
	}
	printf("\n");
	tiny_run(quick ? 200 : 2000, "with poll_us = 0 (stream callbacks only)");
	harness_gpud_stop(&srv, 60, NULL, 0); /* as before, only the first gpud's exit counts */
	if (harness_gpud_remove(&srv) != 0)
		return 1;
	return stopped == 0 ? 0 : 1;
}
