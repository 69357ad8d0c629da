/*
 * daemon/devices.c — opening the devices (in parallel), starting them,
 * linking each pair (peer access), taking a lost one out of service, and
 * its utilisation. Threads: see devices.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/devices.h"
#include "daemon/log.h"
#include "daemon/loop.h"

/* A backend lost its device (on the loop): out of service from now on. */
static void device_fatal(gpud_backend *b, const char *msg)
{
	gpud_device *d = b->owner;
	device_set *ds = d->set;
	if (d->lost)
		return;
	d->lost = 1;
	snprintf(d->lost_msg, sizeof(d->lost_msg), "%s", msg);
	ds->nlive--;
	log_error("device %d lost: %s; %d of %d devices left", d->id, msg, ds->nlive, ds->n);
	if (ds->on_lost)
		ds->on_lost(ds->owner, d);
}

/* A fault injected into one device's open or start, for the tests of the
 * paths that undo the others (GPUD_FAIL_DEVICE=open:SLOT or start:SLOT,
 * SLOT a place in the device list). -1 where none. */
static int failing_slot(const char *step)
{
	const char *v = getenv("GPUD_FAIL_DEVICE");
	size_t n = strlen(step);
	int slot;
	if (v == NULL || strncmp(v, step, n) != 0 || v[n] != ':' ||
	    sscanf(v + n + 1, "%d", &slot) != 1)
		return -1;
	return slot;
}

typedef struct open_arg {
	gpud_device *d;
	uv_loop_t *loop;
	const backend_ops *ops;
	const gpud_config *cfg;
	hostmem *host;
	pthread_t thread;
	int started, rv;
	char err[1024];
} open_arg;

static void *open_main(void *p)
{
	open_arg *a = p;
	if (a->d->slot == failing_slot("open")) {
		snprintf(a->err, sizeof(a->err),
			 "its open failed (simulated: GPUD_FAIL_DEVICE=open:%d, a test)",
			 a->d->slot);
		a->rv = -1;
		return NULL;
	}
	a->rv = backend_open(&a->d->be, a->loop, a->ops, a->cfg, a->host, a->d->ordinal, a->err,
			     sizeof(a->err));
	return NULL;
}

/* The ids to open: cpu: 0..cpu_devices-1; else `devices` (all: every one). */
static int device_ids(const gpud_config *cfg, const backend_ops *ops, int count, int *ids,
		      char *err, size_t errlen)
{
	int n = 0;
	int cpu = strcmp(ops->name, "cpu") == 0;
	if (cpu && (cfg->devices_all || cfg->ndevice_ids != 1 || cfg->device_ids[0] != 0))
		log_warn("cpu backend: devices (--device) name GPUs and are ignored here; it "
			 "simulates cpu_devices = %d devices (--cpu-devices)",
			 cfg->cpu_devices);
	if (cpu || cfg->devices_all) {
		for (int i = 0; i < count && i < GPUD_DEVICES_MAX; i++)
			ids[n++] = i;
		return n;
	}
	for (int i = 0; i < cfg->ndevice_ids; i++) {
		if (cfg->device_ids[i] >= count) {
			snprintf(err, errlen,
				 "device %d does not exist: this machine has %d %s device%s (ids 0 "
				 "to %d)",
				 cfg->device_ids[i], count, ops->name, count == 1 ? "" : "s",
				 count - 1);
			return -1;
		}
		ids[n++] = cfg->device_ids[i];
	}
	return n;
}

int devices_open(device_set *ds, uv_loop_t *loop, const gpud_config *cfg, hostmem *host, char *err,
		 size_t errlen)
{
	int count = 0, ids[GPUD_DEVICES_MAX];
	open_arg args[GPUD_DEVICES_MAX];

	memset(ds, 0, sizeof(*ds));
	const backend_ops *ops = backend_pick(cfg, &count, err, errlen);
	if (ops == NULL)
		return -1;
	int n = device_ids(cfg, ops, count, ids, err, errlen);
	if (n < 0)
		return -1;
	ds->backend = ops->name;
	memset(args, 0, sizeof(args));
	int repeats = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			repeats |= ids[i] == ids[j];
	if (repeats)
		log_warn("a device is listed more than once (GPUD_DEVICES_REPEAT): gpud's devices "
			 "are named 0 to %d by their place in the list, and share GPUs",
			 n - 1);
	for (int i = 0; i < n; i++) {
		gpud_device *d = &ds->dev[i];
		d->ordinal = ids[i];
		d->id = repeats ? i : ids[i];
		d->slot = i;
		d->set = ds;
		args[i] = (open_arg){.d = d, .loop = loop, .ops = ops, .cfg = cfg, .host = host};
	}
	/* Each device warms up (context, pool, kernels' self-test) on a thread
	 * of its own; one device opens here. */
	uint64_t t0 = uv_hrtime();
	for (int i = 1; i < n; i++)
		args[i].started = pthread_create(&args[i].thread, NULL, open_main, &args[i]) == 0;
	for (int i = 0; i < n; i++)
		if (i == 0 || !args[i].started)
			open_main(&args[i]);
	int failed = -1;
	for (int i = 0; i < n; i++) {
		if (args[i].started)
			pthread_join(args[i].thread, NULL);
		if (args[i].rv != 0 && failed < 0)
			failed = i;
	}
	if (failed >= 0) {
		if (n > 1)
			snprintf(err, errlen, "device %d: %s", ids[failed], args[failed].err);
		else
			snprintf(err, errlen, "%s", args[failed].err);
		for (int i = 0; i < n; i++)
			if (args[i].rv == 0)
				backend_close(&ds->dev[i].be);
		return -1;
	}
	ds->n = ds->nlive = n;
	for (int i = 0; i < n; i++) {
		gpud_device *d = &ds->dev[i];
		d->be.on_fatal = device_fatal;
		d->be.owner = d;
		int rv;
		if (i == failing_slot("start")) {
			snprintf(
				err, errlen,
				"device %d: its start failed (simulated: GPUD_FAIL_DEVICE=start:%d, "
				"a test)",
				d->id, i);
			rv = -1;
		} else {
			rv = backend_start(&d->be, cfg, err, errlen);
		}
		/* the others, started or not, close (backend.h: close after open alone) */
		if (rv != 0) {
			for (int j = 0; j < n; j++)
				backend_close(&ds->dev[j].be);
			ds->n = 0;
			return -1;
		}
		sched_init(&d->sched, cfg->run_slots > 0 ? cfg->run_slots
							 : backend_default_run_slots(&d->be, cfg));
	}
	int links = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n && ops->link; j++)
			if (i != j)
				links += ops->link(&ds->dev[i].be, &ds->dev[j].be);
	if (n > 1) {
		char list[256];
		log_info("%d %s devices (%s) opened in parallel in %.0f ms; peer access between "
			 "%d of %d ordered pairs",
			 n, ops->name, devices_list(ds, list, sizeof(list)),
			 (double)(uv_hrtime() - t0) / 1e6, links, n * (n - 1));
	}
	return 0;
}

void devices_close(device_set *ds)
{
	for (int i = 0; i < ds->n; i++)
		backend_close(&ds->dev[i].be);
	ds->n = ds->nlive = 0;
}

gpud_device *devices_find(device_set *ds, int id)
{
	for (int i = 0; i < ds->n; i++)
		if (ds->dev[i].id == id)
			return &ds->dev[i];
	return NULL;
}

const char *devices_list(const device_set *ds, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < ds->n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%d%s", i ? ", " : "", ds->dev[i].id,
				       ds->dev[i].lost ? " (lost)" : "");
	return buf;
}

void device_run_started(gpud_device *d)
{
	if (d->running++ == 0)
		d->busy_since = uv_hrtime();
}

void device_run_ended(gpud_device *d)
{
	if (d->running == 0)
		return;
	if (--d->running == 0)
		d->busy_ns += uv_hrtime() - d->busy_since;
	d->runs_total++;
}

double device_busy_s(const gpud_device *d)
{
	uint64_t ns = d->busy_ns + (d->running ? uv_hrtime() - d->busy_since : 0);
	return (double)ns / 1e9;
}
