/*
 * daemon/trace.h — NVTX ranges for requests, so an Nsight Systems timeline
 * shows who ran what: each request's work, from its dispatch to its reply,
 * is one start/end range in the "gpud" domain (requests are asynchronous,
 * so not push/pop), named "tenant=alice verb=run kernel=lombscargle
 * bytes=4096 conn=7 request=12", with a category and a color per verb and
 * the bytes as its payload. bytes: the buffer's size for alloc, upload and
 * download; the request's payload otherwise. hello's range names no tenant:
 * hello is what fixes it.
 *
 * The request layer calls both ends, once each (request.c: request_track,
 * request_cleanup), whatever the backend, with plain values: this file
 * knows nothing of requests, sessions or buffers. NVTX3 is header-only (the CUDA
 * Toolkit's nvtx3/): with no tool attached (NVTX_INJECTION64_PATH unset) a
 * range costs a predicted branch. Built without the toolkit's headers
 * (GPUD_HAVE_NVTX unset), these functions do nothing.
 *
 * Owned by the loop thread: the domain handle and the named categories are
 * set there (trace_init at start, or on the first range), and every range
 * starts and ends there.
 */
#ifndef GPUD_TRACE_H
#define GPUD_TRACE_H

#include <stdint.h>

/* What a request's range says. */
typedef struct trace_about {
	const char *tenant; /* NULL: "-" */
	const char *verb;   /* its name ("run"), or NULL: "-" */
	unsigned category;  /* its Request body field number: the range's category and color */
	const char *kernel; /* run: the kernel it names; NULL otherwise */
	uint64_t bytes;     /* the range's payload */
	uint32_t conn;      /* its connection (nng pipe id) */
	uint64_t request;   /* its Request.id */
} trace_about;

/* Creates the domain (and loads an attached tool); optional, else done on the first range. */
void trace_init(void);
/* 1 when ranges are recorded (a tool is attached): a request's range is
 * worth working out only then. */
int trace_on(void);
/* A request is dispatched: its range starts. 1 and the range's id in *id,
 * or 0 when nothing traces (no tool attached, or built without NVTX). */
int trace_request_start(const trace_about *a, uint64_t *id);
/* A request's reply is made: the range id (trace_request_start's) ends. */
void trace_request_end(uint64_t id);

#endif
