/*
 * daemon/devices.h — the devices one gpud drives: one backend instance per
 * device (its context, pool, streams, staging and library handles live in
 * the backend's own struct: daemon/backend/cuda/internal.h), its run
 * scheduler, what placement weighs (daemon/placement.h) and whether it is
 * lost.
 *
 * A device is named by its id: the CUDA ordinal on the cuda backend, 0..n-1
 * for the cpu backend's simulated devices (cpu_devices); where one GPU is
 * listed twice (GPUD_DEVICES_REPEAT, to test several devices on one GPU)
 * every device's id is its slot, its place in the set. Buffers and
 * requests point at the gpud_device.
 *
 * Owners: devices_open runs each backend's open on a thread of its own (the
 * devices warm up in parallel), then starts them on the calling thread
 * before the loop runs; afterwards every field here is the loop thread's.
 */
#ifndef GPUD_DEVICES_H
#define GPUD_DEVICES_H

#include <stdint.h>
#include <uv.h>

#include "daemon/backend/backend.h"
#include "daemon/config.h"
#include "daemon/hostmem.h"
#include "daemon/sched.h"

typedef struct device_set device_set;

typedef struct gpud_device {
	int id;      /* as clients name it: the ordinal (its slot where ordinals repeat) */
	int ordinal; /* the backend's device: the CUDA ordinal, the cpu device's number */
	int slot;    /* its index in the set */
	gpud_backend be;
	sched sched; /* its runs: at most its backend's slots at once */
	device_set *set;
	/* lost: a sticky error in its context; its work fails with lost_msg */
	int lost;
	char lost_msg[512];
	/* Load, for placement and status: runs placed here and not yet answered
	 * (waiting for a slot or running), and bytes of copies issued here and
	 * not yet done. */
	uint32_t runs;
	uint64_t bytes_moving;
	/* its buffers (all tenants) */
	uint64_t nbuffers, bytes;
	/* utilisation: runs finished, and the time with at least one kernel
	 * run in its backend (busy_since: when the current such stretch began) */
	uint64_t runs_total;
	uint32_t running;
	uint64_t busy_ns, busy_since;
} gpud_device;

struct device_set {
	gpud_device dev[GPUD_DEVICES_MAX];
	int n, nlive;
	const char *backend; /* its ops' name: "cuda", "cpu" */
	/* Called on the loop when device d is lost (after it is marked). */
	void (*on_lost)(void *owner, gpud_device *d);
	void *owner;
};

/*
 * Opens every device cfg names (devices / cpu_devices), in parallel, then
 * starts each on this thread; their host memory comes out of host (NULL:
 * no budget). 0, or -1 + err (nothing left open).
 */
int devices_open(device_set *ds, uv_loop_t *loop, const gpud_config *cfg, hostmem *host, char *err,
		 size_t errlen);
/* After the last request: closes every backend. */
void devices_close(device_set *ds);
/* The device of id, lost or not; NULL if gpud has none of that id. */
gpud_device *devices_find(device_set *ds, int id);
/* "0, 1, 2" (lost ones marked "(lost)"): for messages. */
const char *devices_list(const device_set *ds, char *buf, size_t len);
/* A run starts or ends on d (utilisation). */
void device_run_started(gpud_device *d);
void device_run_ended(gpud_device *d);
/* Seconds d has had a run in its backend, up to now. */
double device_busy_s(const gpud_device *d);

#endif
