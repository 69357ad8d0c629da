/*
 * client/gpuctl/state.c — the bottom of gpuctl: the state every file
 * reads (the global options, which main.c fills before any command runs;
 * the monotonic clock) and whether a bar or spinner left stderr's line
 * open (progress.c draws them; every message ends that line first). Calls
 * nothing of gpuctl's. gpuctl's one thread.
 */
#include <stdio.h>
#include <time.h>

#include "client/gpuctl/gpuctl.h"

gpuctl_opts opt;

/* A bar or spinner's line is on the terminal now (not ended by a newline). */
static int line_open;

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void stderr_line_open(int open)
{
	line_open = open;
}

void progress_break_line(void)
{
	if (line_open) {
		fputc('\n', stderr);
		line_open = 0;
	}
}
