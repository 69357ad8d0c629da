/*
 * client/gpuctl/wait.c — waiting for a kernel run. With GPUCTL_RUN_ASYNC 1
 * (switches.h) and a terminal on stderr, the run is submitted as a job
 * (gpud_run_async / gpud_call_async) and waited for in steps of 100 ms with
 * gpud_job_wait, drawing an elapsed-time spinner once it has taken
 * $GPUCTL_PROGRESS_DELAY seconds; otherwise, and always while the switch is
 * 0, it is the plain blocking gpud_run / gpud_call. gpud_call_to (outputs
 * into lent memory) is always the blocking call: run uses it only where no
 * spinner could be drawn.
 */
#include <stdio.h>
#include <string.h>

#include "client/gpuctl/gpuctl.h"

#if GPUCTL_RUN_ASYNC
/* Waits for job under a spinner; its status, its message in msg. */
static gpud_status wait_job(gpud_job *job, const char *kernel, char *msg, size_t msglen)
{
	progress p;
	gpud_status st;

	progress_start(&p, "run", kernel, 0);
	for (;;) {
		st = gpud_job_wait(job, 100);
		if (st != GPUD_ETIMEDOUT || gpud_job_done(job))
			break;
		progress_update(&p, 0);
	}
	if (st == GPUD_OK) {
		progress_finish(&p);
	} else {
		progress_break_line(); /* the error follows on a line of its own */
		snprintf(msg, msglen, "%s", gpud_job_errmsg(job));
	}
	return st;
}
#endif

/* A run (call 0: outs are gpud_output) or a call (1: gpud_result), waited for. */
static gpud_status wait_kernel(int call, gpud_client *c, const char *kernel, const gpud_arg *args,
			       size_t nargs, void *outs, size_t cap, size_t *nouts,
			       gpud_run_info *info, char *msg, size_t msglen)
{
	gpud_status st;

	msg[0] = '\0';
#if GPUCTL_RUN_ASYNC
	if (progress_possible()) {
		gpud_job *job;
		st = call ? gpud_call_async(c, kernel, args, nargs, NULL, NULL, &job)
			  : gpud_run_async(c, kernel, args, nargs, NULL, NULL, &job);
		if (st != GPUD_OK) {
			snprintf(msg, msglen, "%s", gpud_errmsg(c));
			return st;
		}
		if ((st = wait_job(job, kernel, msg, msglen)) == GPUD_OK &&
		    (st = call ? gpud_job_results(job, outs, cap, nouts, info)
			       : gpud_job_outputs(job, outs, cap, nouts, info)) != GPUD_OK)
			snprintf(msg, msglen, "%s", gpud_job_errmsg(job));
		gpud_job_free(job);
		return st;
	}
#endif
	st = call ? gpud_call(c, kernel, args, nargs, outs, cap, nouts, info)
		  : gpud_run(c, kernel, args, nargs, outs, cap, nouts, info);
	if (st != GPUD_OK)
		snprintf(msg, msglen, "%s", gpud_errmsg(c));
	return st;
}

gpud_status wait_run(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		     gpud_output *outs, size_t cap, size_t *nouts, gpud_run_info *info, char *msg,
		     size_t msglen)
{
	return wait_kernel(0, c, kernel, args, nargs, outs, cap, nouts, info, msg, msglen);
}

gpud_status wait_call(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
		      gpud_result *outs, size_t cap, size_t *nouts, gpud_run_info *info, char *msg,
		      size_t msglen)
{
	return wait_kernel(1, c, kernel, args, nargs, outs, cap, nouts, info, msg, msglen);
}

gpud_status wait_call_to(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
			 void *dst, size_t room, gpud_result *outs, size_t cap, size_t *nouts,
			 gpud_run_info *info, int *in_dst, char *msg, size_t msglen)
{
	msg[0] = '\0';
	gpud_status st = gpud_call_to(c, kernel, args, nargs, dst, room, outs, cap, nouts, info,
				      in_dst);
	if (st != GPUD_OK)
		snprintf(msg, msglen, "%s", gpud_errmsg(c));
	return st;
}
