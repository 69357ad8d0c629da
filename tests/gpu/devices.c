/*
 * tests/gpu/devices.c — test case "devices": buffers placed and copied across
 * several devices (two GPUs where there are, else one GPU twice), and a lost
 * device that ends gpud. Runs on main's thread (CK_NOFORK).
 */
#include <check.h>
#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpud/client.h>

#include "kernels/core/kernel.h"
#include "tests/gpu/gpu_test.h"
#include "tests/harness.h"
#include "tests/gpu/suite.h"

/* --- several devices -------------------------------------------------------------------- */

/* n random doubles uploaded to device dev (pinned there, dev >= 0) or placed (-1). */
static gpud_handle put_on(gpud_client *c, int dev, const double *v, uint64_t n)
{
	gpud_handle h;
	gpud_set_device(c, dev);
	ck_assert_msg(gpud_alloc(c, GPUD_F64, 1, &n, v, &h) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_set_device(c, -1);
	return h;
}

/* lombscargle of (x, y) on the grid, its pgram downloaded; the run's device in *dev. */
static double *ls_grid(gpud_client *c, gpud_handle x, gpud_handle y, int on, size_t nf, int *dev)
{
	/* direct: deterministic, so equal bit for bit (the NUFFT's spreading adds
	 * with atomics, in no fixed order) */
	gpud_arg a[] = {gpud_arg_buffer("x", x),         gpud_arg_buffer("y", y),
			gpud_arg_f64("f0", 0.1),         gpud_arg_f64("df", 0.01),
			gpud_arg_i64("nf", (int64_t)nf), gpud_arg_text("method", "direct")};
	gpud_output o;
	size_t no = 0;
	gpud_set_device(c, on);
	gpud_status st = gpud_run(c, "lombscargle", a, 6, &o, 1, &no, NULL);
	gpud_set_device(c, -1);
	ck_assert_msg(st == GPUD_OK, "lombscargle: %s", gpud_errmsg(c));
	double *p = malloc(nf * sizeof(double));
	poison(GPUD_F64, p, nf);
	ck_assert(gpud_download_range(c, o.handle, 0, p, nf * sizeof(double)) == GPUD_OK);
	*dev = o.device;
	ck_assert(gpud_free(c, &o.handle, 1) == GPUD_OK);
	return p;
}

/*
 * gpud's devices on the cuda backend: --device all (every GPU here) runs on
 * each; then two gpud devices (on two GPUs, or twice the one GPU with
 * GPUD_DEVICES_REPEAT) take a run whose inputs lie on both: the input on
 * the other device is copied peer to peer and the periodogram equals, bit
 * for bit, the one of the same inputs on one device; a pinned input there
 * is refused.
 */
START_TEST(devices_place_and_copy)
{
	static const char *all[] = {"--device", "all", NULL};
	harness_gpud_opts o = {.backend = "cuda", .args = all, .timeout_s = 60};
	start_gpud_opts(&o);
	gpud_client *c;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	int ngpu = gpud_server(c)->ndevices;
	ck_assert_int_ge(ngpu, 1);
	const size_t n = 20000, nf = 50000;
	double *x = make_array(GPUD_F64, n, 0, 1000, 1), *y = random_of(GPUD_F64, n, -1, 1);
	double *ref = NULL;
	for (int d = 0; d < ngpu; d++) {
		int id = gpud_server(c)->devices[d].index, got;
		gpud_handle hx = put_on(c, id, x, n), hy = put_on(c, id, y, n);
		double *p = ls_grid(c, hx, hy, -1, nf, &got);
		ck_assert_int_eq(got, id); /* where its inputs are */
		if (ref == NULL) {
			ref = p;
		} else {
			ck_assert_msg(memcmp(p, ref, nf * sizeof(double)) == 0,
				      "device %d's periodogram differs from device %d's", id,
				      gpud_server(c)->devices[0].index);
			free(p);
		}
		gpud_handle hs[] = {hx, hy};
		ck_assert(gpud_free(c, hs, 2) == GPUD_OK);
	}
	printf("devices: --device all: %d device%s, the same periodogram on each\n", ngpu,
	       ngpu == 1 ? "" : "s");
	gpud_close(c);
	stop_gpud();

	two_devices(&o, ngpu);
	start_gpud_opts(&o);
	ck_assert(connect_timeout(&c) == GPUD_OK);
	ck_assert_int_eq(gpud_server(c)->ndevices, 2);
	int d0 = gpud_server(c)->devices[0].index, d1 = gpud_server(c)->devices[1].index, got;
	/* unpinned inputs on each device: runs' outputs there (copy x, y in place) */
	gpud_handle px = put_on(c, d0, x, n), py = put_on(c, d1, y, n);
	gpud_output ox, oy;
	size_t no;
	gpud_arg cx[] = {gpud_arg_buffer("x", px), gpud_arg_f64("y", 0.0)};
	gpud_arg cy[] = {gpud_arg_buffer("x", py), gpud_arg_f64("y", 0.0)};
	ck_assert_msg(gpud_run(c, "add", cx, 2, &ox, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert_msg(gpud_run(c, "add", cy, 2, &oy, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert_int_eq(ox.device, d0);
	ck_assert_int_eq(oy.device, d1);
	/* equal bytes: the run goes to the first device; y comes from the second */
	double t0 = wall();
	double *p = ls_grid(c, ox.handle, oy.handle, -1, nf, &got);
	double t_cross = wall() - t0;
	ck_assert_int_eq(got, d0);
	ck_assert_msg(memcmp(p, ref, nf * sizeof(double)) == 0,
		      "the periodogram of inputs on two devices differs from one device's");
	free(p);
	/* named: the second device, x copied there */
	p = ls_grid(c, ox.handle, oy.handle, d1, nf, &got);
	ck_assert_int_eq(got, d1);
	ck_assert_msg(memcmp(p, ref, nf * sizeof(double)) == 0,
		      "the periodogram on the named device differs");
	free(p);
	/* a pinned input on the other device: refused */
	gpud_arg a[] = {gpud_arg_buffer("x", ox.handle), gpud_arg_buffer("y", py),
			gpud_arg_f64("f0", 0.1), gpud_arg_f64("df", 0.01), gpud_arg_i64("nf", 10)};
	gpud_output oo;
	gpud_set_device(c, d0);
	gpud_status st = gpud_run(c, "lombscargle", a, 5, &oo, 1, &no, NULL);
	gpud_set_device(c, -1);
	ck_assert_int_eq(st, GPUD_EINVAL);
	ck_assert_msg(strstr(gpud_errmsg(c), "pinned to device"), "%s", gpud_errmsg(c));
	gpud_daemon_status s;
	ck_assert(gpud_status_get(c, &s) == GPUD_OK);
	ck_assert_int_eq(s.server.ndevices, 2);
	ck_assert_uint_ge(s.server.devices[0].runs_total, 2);
	ck_assert_uint_ge(s.server.devices[1].runs_total, 2);
	ck_assert_int_eq(s.degraded, 0);
	printf("devices: %s: inputs on two devices, the second copied peer to peer: the same "
	       "periodogram bit for bit (N=%zu, M=%zu, %.2f ms through gpud)\n",
	       ngpu >= 2 ? "--device 0,1" : "--device 0,0 (GPUD_DEVICES_REPEAT: one GPU)", n, nf,
	       t_cross * 1e3);
	gpud_handle hs[] = {px, py, ox.handle, oy.handle};
	ck_assert(gpud_free(c, hs, 4) == GPUD_OK);
	gpud_close(c);
	stop_gpud();
	free(ref);
	free(x);
	free(y);
	/* one device's open or start fails: the other, opened or started on
	 * the cuda backend, closes without aborting (its loop handles exist
	 * only once started) and gpud exits 1 naming the device */
	char fmsg[2048];
	o.timeout_s = 120;
	ck_assert_msg(harness_gpud_device_faults(&o, 2, fmsg, sizeof(fmsg)) == 0, "%s", fmsg);
	printf("devices: %s: a failed open or start of either device ends gpud's start with "
	       "exit 1, the other closed\n",
	       ngpu >= 2 ? "--device 0,1" : "--device 0,0");
}
END_TEST

/*
 * A device lost for real: with kernel_workers = 0, a custom kernel that
 * faults on device 1 ends that device's context. CUDA then refuses further
 * work in the whole process (device 0's cudaMalloc failed with device 1's
 * error when gpud served on), so gpud exits 1 for its supervisor even with
 * device_lost = serve, saying why, and never serves a device it cannot use.
 * On two GPUs, or twice the one GPU (GPUD_DEVICES_REPEAT).
 */
START_TEST(device_lost_ends_gpud)
{
	static const char *all[] = {"--device", "all", NULL};
	harness_gpud_opts o = {.backend = "cuda", .args = all, .timeout_s = 60};
	start_gpud_opts(&o);
	gpud_client *c;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	int ngpu = gpud_server(c)->ndevices;
	gpud_close(c);
	stop_gpud();
	two_devices(&o, ngpu);
	o.config = "[gpud]\nkernel_workers = 0\ndevice_lost = serve\n";
	start_gpud_opts(&o);
	ck_assert(connect_timeout(&c) == GPUD_OK);
	ck_assert_int_eq(gpud_server(c)->ndevices, 2);
	int d1 = gpud_server(c)->devices[1].index;
	ck_assert_msg(gpud_register(c, &crash_spec) == GPUD_OK, "%s", gpud_errmsg(c));
	uint64_t ny = 32;
	gpud_handle y1;
	gpud_set_device(c, d1);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &ny, NULL, &y1) == GPUD_OK);
	gpud_arg ca[] = {gpud_arg_buffer("y", y1)};
	gpud_output o1;
	size_t no;
	gpud_status st = gpud_run(c, "crash", ca, 1, &o1, 1, &no, NULL);
	gpud_set_device(c, -1);
	printf("devices: a faulting kernel on device %d: %s: %s\n", d1, gpud_strerror(st),
	       gpud_errmsg(c));
	ck_assert_int_eq(st, GPUD_EBACKEND);
	ck_assert_msg(harness_gpud_wait(&gpud, 30) == 0, "gpud still runs after losing device %d",
		      d1);
	int wst = gpud.wstatus;
	char log[1 << 16];
	ck_assert(harness_read_text(gpud.log, log, sizeof(log)) > 0);
	int said = strstr(log, "stops every device's work in the process") != NULL;
	if (!(WIFEXITED(wst) && WEXITSTATUS(wst) == 1 && said))
		harness_dump_file("gpud log", gpud.log);
	ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 1,
		      "gpud should exit 1 after losing a device (status %d)", wst);
	ck_assert_msg(said, "gpud's log does not say why it exits with device_lost = serve");
	printf("devices: %s: device %d lost: gpud exited 1 for a restart (device_lost = serve "
	       "holds on the cpu backend only)\n",
	       ngpu >= 2 ? "--device 0,1" : "--device 0,0", d1);
	gpud_close(c);
	ck_assert_int_eq(harness_gpud_remove(&gpud), 0);
}
END_TEST

TCase *devices_tcase(void)
{
	TCase *tc = tcase_create("devices");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, devices_place_and_copy);
	tcase_add_test(tc, device_lost_ends_gpud);
	return tc;
}
