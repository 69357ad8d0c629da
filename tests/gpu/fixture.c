/*
 * tests/gpu/fixture.c — the GPU suite's gpud: started on the cuda backend on a
 * fresh socket (with a config, options or two devices), stopped and checked
 * to exit cleanly; a client with a 2-minute timeout, a status read, and the
 * custom kernel that faults. See tests/gpu/suite.h. The suite runs in one
 * process (CK_NOFORK) on main's thread; this state is that thread's.
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

harness_gpud gpud;

/* A client that gives up after 2 minutes instead of hanging on a stuck gpud. */
gpud_status connect_timeout(gpud_client **c)
{
	gpud_status st = gpud_connect(gpud.url, c);
	if (*c)
		gpud_set_timeout(*c, 120000);
	return st;
}

/* gpud --backend cuda on a fresh socket; context creation and the kernels'
 * self-tests take up to 30 s. */
void start_gpud_with(const char *config_text)
{
	char msg[512];
	harness_gpud_opts o = {.backend = "cuda", .config = config_text, .timeout_s = 30};
	memset(&gpud, 0, sizeof(gpud));
	if (harness_gpud_start(&gpud, &o, msg, sizeof(msg)) != 0) {
		harness_dump_file("gpud log", gpud.log);
		ck_abort_msg("%s", msg);
	}
}

void start_gpud(void)
{
	start_gpud_with(NULL);
}

/* gpud with opts o on a fresh socket (the suite's `gpud`). */
void start_gpud_opts(const harness_gpud_opts *o)
{
	char msg[512];
	memset(&gpud, 0, sizeof(gpud));
	if (harness_gpud_start(&gpud, o, msg, sizeof(msg)) != 0) {
		harness_dump_file("gpud log", gpud.log);
		ck_abort_msg("%s", msg);
	}
}

/* Two of gpud's devices: two GPUs where there are (ngpu), else the one GPU
 * twice (GPUD_DEVICES_REPEAT). */
void two_devices(harness_gpud_opts *o, int ngpu)
{
	static const char *two[] = {"--device", "0,1", NULL}, *twice[] = {"--device", "0,0", NULL};
	static const char *repeat_env[] = {"GPUD_DEVICES_REPEAT=1", NULL};
	o->args = ngpu >= 2 ? two : twice;
	o->env = ngpu >= 2 ? NULL : repeat_env;
}

/* A custom kernel that writes to address 0x10: an illegal address. */
const gpud_kernel_spec crash_spec = {
	.name = "crash",
	.source = "extern \"C\" __global__ void crash(float *y)\n{\n\tfloat *p = (float *)0x10;\n"
		  "\tp[threadIdx.x] = y[0];\n}\n",
	.entry = "crash",
	.signature = "y:out f32[]",
	.blocks_per_sm = 1};

void stop_gpud(void)
{
	char msg[512];
	int rv = harness_gpud_stop(&gpud, 10, msg, sizeof(msg));
	if (rv != 0)
		harness_dump_file("gpud log", gpud.log);
	harness_gpud_remove(&gpud);
	ck_assert_msg(rv == 0, "%s", msg);
}

gpud_daemon_status status_of(gpud_client *c)
{
	gpud_daemon_status st;
	ck_assert_msg(gpud_status_get(c, &st) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(st.has_pool, "the cuda backend reports no pool");
	return st;
}
