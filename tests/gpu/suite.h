/*
 * tests/gpu/suite.h — what the GPU suite's test case files share: the suite's
 * gpud (tests/gpu/fixture.c) and the test cases main.c puts in the suite, in
 * its order. The suite runs in one process (CK_NOFORK) on main's thread.
 */
#ifndef GPUD_TESTS_GPU_SUITE_H
#define GPUD_TESTS_GPU_SUITE_H

#include <check.h>

#include <gpud/client.h>

#include "tests/harness.h"

/* --- the suite's gpud (fixture.c) ------------------------------------------------------ */

extern harness_gpud gpud;
/* A client that gives up after 2 minutes instead of hanging on a stuck gpud. */
gpud_status connect_timeout(gpud_client **c);
/* gpud --backend cuda on a fresh socket, with config_text (NULL: none) or options o. */
void start_gpud_with(const char *config_text);
void start_gpud(void);
void start_gpud_opts(const harness_gpud_opts *o);
/* Two of gpud's devices: two GPUs where there are (ngpu), else the one GPU twice. */
void two_devices(harness_gpud_opts *o, int ngpu);
/* A custom kernel that writes to address 0x10: an illegal address. */
extern const gpud_kernel_spec crash_spec;
/* Stops gpud (SIGTERM, 10 s), removes its directory, and requires a clean exit. */
void stop_gpud(void);
gpud_daemon_status status_of(gpud_client *c);

/* --- the test cases, in the suite's order -------------------------------------------------- */

TCase *kernels_tcase(void); /* kernels.c */
TCase *pool_tcase(void);    /* pool.c */
TCase *copies_tcase(void);  /* copies.c */
TCase *custom_tcase(void);  /* custom.c */
/* isolation_tcase: tests/gpu/gpu_test.h (isolation.c) */
TCase *devices_tcase(void); /* devices.c */
TCase *batch_tcase(void);   /* batch.c */

#endif
