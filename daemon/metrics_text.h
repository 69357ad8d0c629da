/*
 * daemon/metrics_text.h — gpud's state as a Prometheus text page (the
 * loop's; see metrics_text.c for the families and their labels).
 */
#ifndef GPUD_METRICS_TEXT_H
#define GPUD_METRICS_TEXT_H

#include <stdio.h>

#include "daemon/metrics.h"
#include "daemon/request.h"

/* What the page says beyond the core's state. */
typedef struct metrics_page {
	const metrics *m;
	int ready;        /* serving (as /readyz) */
	int backend_lost; /* the backend's context is lost */
	int nlisteners;   /* listen[0..nlisteners): the listen URLs */
	const char *const *listen;
	int listener_up[GPUD_MAX_LISTEN]; /* 1 up, 0 down, -1 not probed (yet, or at all) */
} metrics_page;

/* Writes the page to f (on the loop thread). */
void metrics_text(FILE *f, const gpud_core *core, const metrics_page *p);

#endif
