/*
 * client/gpuctl/switches.h — gpuctl's compile-time switches, apart so the
 * tests can see them too.
 */
#ifndef GPUD_GPUCTL_SWITCHES_H
#define GPUD_GPUCTL_SWITCHES_H

/*
 * 1: runs are submitted as jobs (gpud_run_async / gpud_call_async) and
 * waited for with gpud_job_wait, drawing an elapsed-time spinner on a
 * terminal; 0: plain gpud_run / gpud_call, no spinner. gpud/client.h
 * declares the job API; set this to 1 (or build with -DGPUCTL_RUN_ASYNC=1)
 * once libgpud-client implements it.
 */
#ifndef GPUCTL_RUN_ASYNC
#define GPUCTL_RUN_ASYNC 0
#endif

#endif
