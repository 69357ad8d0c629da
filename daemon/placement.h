/*
 * daemon/placement.h — which device work goes to, when the request names
 * none (daemon/devices.h holds what it weighs).
 *
 *   - A run goes where its output buffers are, else where most bytes of its
 *     input buffers are; inputs elsewhere are copied peer to peer for it
 *     (verbs/run.c), unless they were pinned to their device.
 *   - Fresh work (an alloc, a run of inline arrays only) goes to the device
 *     where its tenant holds most bytes while it holds any on a live device
 *     (affinity: buffers it holds by handle; a request's inline arrays and
 *     returned outputs do not count, so independent one-trip jobs spread),
 *     else to the least-loaded live device: runs placed there
 *     and not yet answered, plus the bytes of its copies in flight counted
 *     at PLACE_BYTES_PER_RUN a run; ties go to the device with fewer bytes
 *     of buffers, then the lower id. Not a round-robin counter: a device
 *     busy with long runs gets less.
 *
 * Everything here is the loop thread's.
 */
#ifndef GPUD_PLACEMENT_H
#define GPUD_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/buffers.h"
#include "daemon/devices.h"
#include "daemon/status.h"

/* Bytes of copies in flight that weigh as much as one queued run (about a
 * millisecond of copying over PCIe 5 or NVLink). */
#define PLACE_BYTES_PER_RUN (64ull << 20)

/* How busy d is, in runs. */
double place_load(const gpud_device *d);
/* The device for fresh work of tn (NULL: no tenant); NULL if none is live. */
gpud_device *place_fresh(device_set *ds, const gpud_tenant *tn);

/* A buffer argument of a run, as placement sees it. */
typedef struct place_arg {
	const char *name; /* the parameter, for messages */
	gpud_buffer *buf;
	int output;
} place_arg;

/*
 * The device a run of these buffer arguments goes to; `want` is the device
 * the request named (NULL: gpud places). NULL with why (and *status) when
 * no device can take it: a lost device holds one of its buffers or was
 * named (ST_BACKEND), outputs lie on different devices, or a pinned buffer
 * lies on another device than the run's (ST_INVALID).
 */
gpud_device *place_run(device_set *ds, const gpud_tenant *tn, gpud_device *want,
		       const place_arg *args, int n, dstatus *status, char *why, size_t whylen);

#endif
