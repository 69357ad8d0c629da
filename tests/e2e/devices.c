/*
 * tests/e2e/devices.c — test case "devices": one gpud driving several
 * devices, simulated by the cpu backend (--cpu-devices 3) whatever backend
 * the suite runs: every device in hello, status and gpuctl status; buffers
 * pinned to the device a client names; a run placed where its buffers are,
 * inputs on other devices copied to it (values checked), pinned ones
 * refused; fresh work by tenant affinity, else the device with least load;
 * a per-device quota; a lost device (GPUD_CPU_LOSE_DEVICE) failing its own
 * work while the others serve, and gpud exiting once none is left (or at
 * once with device_lost = exit); a device whose open or start fails
 * (GPUD_FAIL_DEVICE) ending gpud's start with exit 1, the others closed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

static void start_devices(int n, const char *config, const char *const *env)
{
	static char count[16];
	static const char *extra[] = {"--backend", "cpu", "--cpu-devices", count, NULL};
	snprintf(count, sizeof(count), "%d", n);
	start_gpud(config, extra, env);
}

static void setup_three(void)
{
	/* alice and bob over tcp:// (tenants of their own); 1 MiB per tenant on
	 * device 1 */
	static const char *extra[] = {"--backend", "cpu", "--cpu-devices", "3", NULL};
	start_tenants("socket_mode = 0666\ncpu_threads = 2\n[quota]\ndevice_bytes.1 = 1MiB\n",
		      extra, NULL, NULL);
}

/* n doubles of a known pattern, uploaded (kept: gpud_list tells the device). */
static gpud_handle put(gpud_client *c, int device, size_t n, double scale)
{
	double *v = malloc(n * sizeof(double));
	uint64_t shape = n;
	gpud_handle h;
	for (size_t i = 0; i < n; i++)
		v[i] = scale * ((double)i - 7.25);
	gpud_set_device(c, device);
	gpud_set_keep(c, 1);
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, &shape, v, &h));
	gpud_set_device(c, -1);
	free(v);
	return h;
}

/* The device and pinning of kept buffer h, from gpud_list. */
static int device_of(gpud_client *c, gpud_handle h, int *pinned)
{
	gpud_buffer_info *b;
	size_t n;
	int dev = -1;
	LIB_OK(c, gpud_list(c, &b, &n));
	for (size_t i = 0; i < n; i++)
		if (b[i].handle == h) {
			dev = b[i].device;
			if (pinned)
				*pinned = b[i].pinned;
		}
	free(b);
	ck_assert_msg(dev >= 0, "buffer %016" PRIx64 " is not in gpud_list", h);
	return dev;
}

/* add(x, y) -> its output, checked against x + y computed here. */
static gpud_output add_checked(gpud_client *c, gpud_handle x, double sx, gpud_handle y, double sy,
			       size_t n)
{
	gpud_output o;
	size_t no = 0;
	gpud_arg a[] = {gpud_arg_buffer("x", x), gpud_arg_buffer("y", y)};
	LIB_OK(c, gpud_run(c, "add", a, 2, &o, 1, &no, NULL));
	ck_assert_uint_eq(no, 1);
	double *got = malloc(n * sizeof(double));
	for (size_t i = 0; i < n; i++)
		got[i] = -1e300; /* poisoned */
	LIB_OK(c, gpud_download_range(c, o.handle, 0, got, n * sizeof(double)));
	for (size_t i = 0; i < n; i++) {
		double want = (sx + sy) * ((double)i - 7.25);
		ck_assert_msg(got[i] == want, "add[%zu] = %.17g, expected %.17g", i, got[i], want);
	}
	free(got);
	return o;
}

START_TEST(test_every_device_listed)
{
	gpud_client *c = lib_connect();
	const gpud_server_info *si = gpud_server(c);
	ck_assert_int_eq(si->ndevices, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(si->devices[i].index, i);
		ck_assert_int_eq(si->devices[i].lost, 0);
	}
	gpud_daemon_status s = lib_status(c);
	ck_assert_int_eq(s.server.ndevices, 3);
	ck_assert_int_eq(s.degraded, 0);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(s.server.devices[i].slots, 4); /* cpu: twice cpu_threads */
	ctl_result *r = CTL("status");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "device 2 ") != NULL, "gpuctl status:\n%s", r->out);
	ck_assert_msg(strstr(r->out, "runs in flight of 4 slots") != NULL, "gpuctl status:\n%s",
		      r->out);
	gpud_close(c);
}
END_TEST

/* A buffer goes to the device named and is pinned there; a run goes where
 * its buffers are; a device gpud lacks is an error naming the ones it has. */
START_TEST(test_pinned_and_run_follows_inputs)
{
	gpud_client *c = lib_connect();
	int pinned = 0;
	gpud_handle x = put(c, 2, 100, 1.0), y = put(c, 2, 100, 3.0);
	ck_assert_int_eq(device_of(c, x, &pinned), 2);
	ck_assert_int_eq(pinned, 1);
	gpud_output o = add_checked(c, x, 1.0, y, 3.0, 100);
	ck_assert_int_eq(o.device, 2);
	/* a named device that does not exist */
	uint64_t n = 4;
	gpud_handle h;
	gpud_set_device(c, 7);
	LIB_FAIL(c, gpud_alloc(c, GPUD_F64, 1, &n, NULL, &h), GPUD_EINVAL,
		 "device 7: this gpud has devices 0, 1, 2");
	gpud_arg a[] = {gpud_arg_buffer("x", x), gpud_arg_buffer("y", y)};
	gpud_output o2;
	size_t no;
	LIB_FAIL(c, gpud_run(c, "add", a, 2, &o2, 1, &no, NULL), GPUD_EINVAL,
		 "device 7: this gpud has devices 0, 1, 2");
	gpud_set_device(c, -1);
	gpud_handle all[] = {x, y, o.handle};
	LIB_OK(c, gpud_free(c, all, 3));
	gpud_close(c);
}
END_TEST

/* Inputs on two devices: the run goes to the one with more of its bytes
 * and the other input is copied peer to peer (the sum proves the bytes
 * arrived); a pinned input elsewhere is refused with both devices named. */
START_TEST(test_cross_device_inputs)
{
	gpud_client *c = lib_connect();
	gpud_output ox, oy, os;
	size_t no;
	/* unpinned buffers on devices 0 and 1: outputs of runs named there */
	gpud_set_device(c, 0);
	gpud_arg u0[] = {gpud_arg_i64("n", 3000), gpud_arg_i64("seed", 11)};
	LIB_OK(c, gpud_run(c, "uniform", u0, 2, &ox, 1, &no, NULL));
	gpud_set_device(c, 1);
	gpud_arg u1[] = {gpud_arg_i64("n", 3000), gpud_arg_i64("seed", 12)};
	LIB_OK(c, gpud_run(c, "uniform", u1, 2, &oy, 1, &no, NULL));
	gpud_set_device(c, -1);
	ck_assert_int_eq(ox.device, 0);
	ck_assert_int_eq(oy.device, 1);
	double *x = malloc(3000 * sizeof(double)), *y = malloc(3000 * sizeof(double)),
	       *s = malloc(3000 * sizeof(double));
	LIB_OK(c, gpud_download_range(c, ox.handle, 0, x, 3000 * sizeof(double)));
	LIB_OK(c, gpud_download_range(c, oy.handle, 0, y, 3000 * sizeof(double)));
	/* equal bytes: the run goes to the lower slot, device 0; y is copied 1 -> 0 */
	gpud_arg a[] = {gpud_arg_buffer("x", ox.handle), gpud_arg_buffer("y", oy.handle)};
	LIB_OK(c, gpud_run(c, "add", a, 2, &os, 1, &no, NULL));
	ck_assert_int_eq(os.device, 0);
	for (int i = 0; i < 3000; i++)
		s[i] = -1e300;
	LIB_OK(c, gpud_download_range(c, os.handle, 0, s, 3000 * sizeof(double)));
	for (int i = 0; i < 3000; i++)
		ck_assert_msg(s[i] == x[i] + y[i], "add[%d] = %.17g, expected %.17g", i, s[i],
			      x[i] + y[i]);
	/* named device 2: both copied there */
	gpud_output o2;
	gpud_set_device(c, 2);
	LIB_OK(c, gpud_run(c, "add", a, 2, &o2, 1, &no, NULL));
	gpud_set_device(c, -1);
	ck_assert_int_eq(o2.device, 2);
	LIB_OK(c, gpud_download_range(c, o2.handle, 0, s, 3000 * sizeof(double)));
	for (int i = 0; i < 3000; i++)
		ck_assert_msg(s[i] == x[i] + y[i], "add on 2 [%d] = %.17g", i, s[i]);
	/* a pinned input on another device than the run's: refused, nothing run */
	gpud_handle p1 = put(c, 1, 3000, 2.0);
	gpud_arg b[] = {gpud_arg_buffer("x", ox.handle), gpud_arg_buffer("y", p1)};
	gpud_set_device(c, 0);
	LIB_FAIL(c, gpud_run(c, "add", b, 2, &o2, 1, &no, NULL), GPUD_EINVAL,
		 "argument 'y' is pinned to device 1, and the run goes to device 0");
	gpud_set_device(c, -1);
	/* an output buffer decides: y's device (1), x copied there */
	gpud_arg d[] = {gpud_arg_buffer("x", ox.handle), gpud_arg_buffer("y", oy.handle),
			gpud_arg_buffer("z", p1)};
	LIB_OK(c, gpud_run(c, "add", d, 3, &o2, 1, &no, NULL));
	ck_assert_int_eq(o2.device, 1);
	LIB_OK(c, gpud_download_range(c, p1, 0, s, 3000 * sizeof(double)));
	for (int i = 0; i < 3000; i++)
		ck_assert_msg(s[i] == x[i] + y[i], "add into out [%d] = %.17g", i, s[i]);
	/* the output's device decides; a pinned input elsewhere is refused */
	gpud_handle p2 = put(c, 2, 3000, 1.0);
	gpud_arg e[] = {gpud_arg_buffer("x", p1), gpud_arg_buffer("y", p1),
			gpud_arg_buffer("z", p2)};
	LIB_FAIL(c, gpud_run(c, "add", e, 3, &o2, 1, &no, NULL), GPUD_EINVAL,
		 "argument 'x' is pinned to device 1, and the run goes to device 2");
	gpud_daemon_status st = lib_status(c);
	ck_assert_uint_ge(st.server.devices[0].runs_total, 2);
	ck_assert_uint_ge(st.server.devices[2].runs_total, 1);
	free(x);
	free(y);
	free(s);
	gpud_handle all[] = {ox.handle, oy.handle, os.handle, o2.handle, p2};
	LIB_OK(c, gpud_free(c, all, 5));
	gpud_close(c);
}
END_TEST

/* Fresh work: a tenant's buffers stay where it has buffers (affinity); a
 * tenant with none gets the least-loaded device (idle here: the one with
 * fewest bytes); device_bytes.1 holds on device 1 alone. */
START_TEST(test_affinity_least_loaded_and_quota)
{
	gpud_client *a = connect_token(TOKEN_ALICE), *b = connect_token(TOKEN_BOB);
	gpud_handle a0 = put(a, 0, 4096, 1.0), a1 = put(a, 1, 1024, 1.0);
	/* alice: affinity to device 0 (most of her bytes) */
	gpud_handle af = put(a, -1, 16, 1.0);
	int pinned = 1;
	ck_assert_int_eq(device_of(a, af, &pinned), 0);
	ck_assert_int_eq(pinned, 0);
	/* bob has none: device 2 has no bytes at all */
	gpud_handle bf = put(b, -1, 16, 1.0);
	ck_assert_int_eq(device_of(b, bf, NULL), 2);
	gpud_handle bf2 = put(b, -1, 100000, 1.0); /* and stays there */
	ck_assert_int_eq(device_of(b, bf2, NULL), 2);
	/* device_bytes.1 = 1MiB: bob may put 1 MiB there, not more; device 0 takes it */
	uint64_t n = (1u << 20) / 8 + 1;
	gpud_handle h;
	gpud_set_device(b, 1);
	LIB_FAIL(b, gpud_alloc(b, GPUD_F64, 1, &n, NULL, &h), GPUD_EQUOTA,
		 "over the device_bytes.1 quota of tenant bob");
	gpud_set_device(b, 0);
	LIB_OK(b, gpud_alloc(b, GPUD_F64, 1, &n, NULL, &h));
	gpud_set_device(b, -1);
	gpud_handle ah[] = {a0, a1, af}, bh[] = {bf, bf2, h};
	LIB_OK(a, gpud_free(a, ah, 3));
	LIB_OK(b, gpud_free(b, bh, 3));
	gpud_close(a);
	gpud_close(b);
}
END_TEST

/* Device 1 is lost at its first run: that run fails with the error, the
 * device leaves placement and service, buffers and runs on the others go
 * on, and gpud keeps serving (degraded). */
static void setup_lost(void)
{
	static const char *env[] = {"GPUD_CPU_LOSE_DEVICE=1:1", NULL};
	start_devices(3, NULL, env);
}

START_TEST(test_lost_device_others_serve)
{
	setup_lost();
	gpud_client *c = lib_connect();
	gpud_handle x0 = put(c, 0, 500, 1.0), y0 = put(c, 0, 500, 2.0);
	gpud_handle x1 = put(c, 1, 500, 1.0);
	gpud_output o;
	size_t no;
	gpud_arg a[] = {gpud_arg_buffer("x", x1), gpud_arg_buffer("y", x1)};
	LIB_FAIL(c, gpud_run(c, "add", a, 2, &o, 1, &no, NULL), GPUD_EBACKEND,
		 "device 1 is lost: an illegal memory access was encountered");
	gpud_daemon_status st = lib_status(c);
	ck_assert_int_eq(st.degraded, 1);
	ck_assert_int_eq(st.server.devices[1].lost, 1);
	ck_assert_msg(strstr(st.server.devices[1].lost_message, "illegal memory access"),
		      "lost_message '%s'", st.server.devices[1].lost_message);
	ck_assert_int_eq(st.server.devices[0].lost, 0);
	/* its buffer: reads fail naming the device; the others' work */
	double v[500];
	LIB_FAIL(c, gpud_download_range(c, x1, 0, v, sizeof(v)), GPUD_EBACKEND, "device 1");
	gpud_output s = add_checked(c, x0, 1.0, y0, 2.0, 500);
	ck_assert_int_eq(s.device, 0);
	/* naming it fails; fresh work goes elsewhere */
	uint64_t n = 4;
	gpud_handle h;
	gpud_set_device(c, 1);
	LIB_FAIL(c, gpud_alloc(c, GPUD_F64, 1, &n, NULL, &h), GPUD_EBACKEND, "device 1 is lost");
	gpud_set_device(c, -1);
	for (int i = 0; i < 6; i++) {
		gpud_handle f = put(c, -1, 8, 1.0);
		ck_assert_int_ne(device_of(c, f, NULL), 1);
		LIB_OK(c, gpud_free(c, &f, 1));
	}
	ctl_result *r = CTL("status");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "LOST: ") && strstr(r->out, "degraded"), "gpuctl status:\n%s",
		      r->out);
	gpud_handle all[] = {x0, y0, x1, s.handle};
	LIB_OK(c, gpud_free(c, all, 4)); /* the lost device's buffer goes too */
	gpud_close(c);
	ck_assert_int_eq(kill(e2e_gpud.pid, 0), 0); /* still running */
}
END_TEST

/* With device_lost = exit, or when the last device is lost, gpud exits 1
 * for its supervisor. */
static void lost_exits(const char *config, int devices)
{
	static const char *env[] = {"GPUD_CPU_LOSE_DEVICE=0:1", NULL};
	start_devices(devices, config, env);
	gpud_client *c = lib_connect();
	gpud_handle x = put(c, 0, 8, 1.0);
	gpud_output o;
	size_t no;
	gpud_arg a[] = {gpud_arg_buffer("x", x), gpud_arg_buffer("y", x)};
	gpud_status st = gpud_run(c, "add", a, 2, &o, 1, &no, NULL);
	ck_assert_msg(st == GPUD_EBACKEND || st == GPUD_ESHUTDOWN || st == GPUD_EUNAVAILABLE ||
			      st == GPUD_ETRANSPORT,
		      "run on the lost device: %s: %s", gpud_strerror(st), gpud_errmsg(c));
	gpud_close(c);
	int ws = 0;
	ck_assert_msg(harness_wait_pid(e2e_gpud.pid, E2E_SAFETY_S, &ws) == 0,
		      "gpud did not exit after losing device 0");
	e2e_gpud.reaped = 1;
	e2e_gpud.wstatus = ws;
	if (!(WIFEXITED(ws) && WEXITSTATUS(ws) == 1))
		harness_dump_file("gpud log", e2e_gpud.log);
	ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 1, "gpud ended with status %d", ws);
	harness_gpud_remove(&e2e_gpud);
	e2e_gpud.pid = 0; /* exited as it should: nothing for the teardown to stop */
}

START_TEST(test_lost_last_device_exits)
{
	lost_exits(NULL, 1);
}
END_TEST

START_TEST(test_lost_device_exit_policy)
{
	lost_exits("[gpud]\ndevice_lost = exit\n", 2);
}
END_TEST

/* A device whose open or start fails (GPUD_FAIL_DEVICE) stops gpud's start
 * with exit 1 and the device named: the others, opened and perhaps
 * started, close cleanly (no abort, ASan-clean in make test-asan). */
START_TEST(test_device_start_faults)
{
	static const char *args[] = {"--cpu-devices", "3", NULL};
	harness_gpud_opts o = {.bin = gpud_bin,
			       .backend = "cpu",
			       .args = args,
			       .parent = base_dir,
			       .prefix = "f",
			       .timeout_s = E2E_SAFETY_S};
	char msg[2048];
	ck_assert_msg(harness_gpud_device_faults(&o, 3, msg, sizeof(msg)) == 0, "%s", msg);
}
END_TEST

TCase *e2e_devices(void)
{
	TCase *tc = tcase_create("devices");
	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup_three, gpud_teardown);
	tcase_add_test(tc, test_every_device_listed);
	tcase_add_test(tc, test_pinned_and_run_follows_inputs);
	tcase_add_test(tc, test_cross_device_inputs);
	tcase_add_test(tc, test_affinity_least_loaded_and_quota);
	return tc;
}

TCase *e2e_devices_lost(void)
{
	TCase *tc = tcase_create("devices_lost");
	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_add_test(tc, test_lost_device_others_serve);
	tcase_add_test(tc, test_lost_last_device_exits);
	tcase_add_test(tc, test_lost_device_exit_policy);
	tcase_add_test(tc, test_device_start_faults);
	return tc;
}
