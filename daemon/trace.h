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
 * request_cleanup), whatever the backend. NVTX3 is header-only (the CUDA
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

struct gpud_request;

/* Creates the domain (and loads an attached tool); optional, else done on the first range. */
void trace_init(void);
/* r is dispatched: its range starts (r->trace_id, r->traced). */
void trace_request_start(struct gpud_request *r);
/* r's reply is made: its range ends, if it has one. */
void trace_request_end(struct gpud_request *r);

#endif
