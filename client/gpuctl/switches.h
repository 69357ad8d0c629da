/*
 * client/gpuctl/switches.h — gpuctl's compile-time switches, apart so the
 * tests can see them too.
 */
#ifndef GPUD_GPUCTL_SWITCHES_H
#define GPUD_GPUCTL_SWITCHES_H

/*
 * 1: on a terminal, runs are submitted as jobs (gpud_run_async /
 * gpud_call_async) and waited for with gpud_job_wait, drawing an
 * elapsed-time spinner; 0: always the plain gpud_run / gpud_call, no
 * spinner (for a libgpud-client without jobs; -DGPUCTL_RUN_ASYNC=0).
 */
#ifndef GPUCTL_RUN_ASYNC
#define GPUCTL_RUN_ASYNC 1
#endif

#endif
