/* daemon/placement.c — the device of a run or of fresh work (placement.h). */
#include <stdio.h>

#include "daemon/placement.h"

double place_load(const gpud_device *d)
{
	return (double)d->runs + (double)d->bytes_moving / (double)PLACE_BYTES_PER_RUN;
}

gpud_device *place_fresh(device_set *ds, const gpud_tenant *tn)
{
	gpud_device *best = NULL;
	if (tn) { /* affinity: where the tenant holds most, while it holds any */
		for (int i = 0; i < ds->n; i++) {
			gpud_device *d = &ds->dev[i];
			if (!d->lost && tn->aff_nbuffers[i] > 0 &&
			    (best == NULL || tn->aff_bytes[i] > tn->aff_bytes[best->slot]))
				best = d;
		}
		if (best)
			return best;
	}
	for (int i = 0; i < ds->n; i++) {
		gpud_device *d = &ds->dev[i];
		if (d->lost)
			continue;
		if (best == NULL || place_load(d) < place_load(best) ||
		    (place_load(d) == place_load(best) && d->bytes < best->bytes))
			best = d;
	}
	return best;
}

gpud_device *place_run(device_set *ds, const gpud_tenant *tn, gpud_device *want,
		       const place_arg *args, int n, dstatus *status, char *why, size_t whylen)
{
	gpud_device *out = NULL;
	const place_arg *out_arg = NULL;
	uint64_t bytes[GPUD_DEVICES_MAX] = {0};

	for (int i = 0; i < n; i++) {
		gpud_device *d = args[i].buf->dev;
		if (d->lost) {
			snprintf(why, whylen, "argument '%s' is on device %d, which is lost (%s)",
				 args[i].name, d->id, d->lost_msg);
			*status = ST_BACKEND;
			return NULL;
		}
		if (!args[i].output) {
			bytes[d->slot] += args[i].buf->nbytes;
			continue;
		}
		if (out && out != d) {
			snprintf(why, whylen,
				 "outputs '%s' (device %d) and '%s' (device %d) are on different "
				 "devices: a run writes on one device",
				 out_arg->name, out->id, args[i].name, d->id);
			*status = ST_INVALID;
			return NULL;
		}
		out = d;
		out_arg = &args[i];
	}
	gpud_device *to = want;
	if (to == NULL)
		to = out;
	if (to == NULL) {
		int best = -1;
		for (int s = 0; s < ds->n; s++)
			if (bytes[s] > 0 && (best < 0 || bytes[s] > bytes[best]))
				best = s;
		to = best >= 0 ? &ds->dev[best] : place_fresh(ds, tn);
	}
	if (to == NULL) {
		snprintf(why, whylen, "no device is left: every device of this gpud is lost");
		*status = ST_BACKEND;
		return NULL;
	}
	if (to->lost) {
		snprintf(why, whylen, "device %d is lost (%s)", to->id, to->lost_msg);
		*status = ST_BACKEND;
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		gpud_buffer *b = args[i].buf;
		if (b->dev == to)
			continue;
		if (args[i].output) {
			snprintf(why, whylen,
				 "output '%s' is on device %d, and the run was asked to run on "
				 "device %d: a run writes on its own device",
				 args[i].name, b->dev->id, to->id);
			*status = ST_INVALID;
			return NULL;
		}
		if (b->pinned) {
			snprintf(why, whylen,
				 "argument '%s' is pinned to device %d, and the run goes to device "
				 "%d: pinned buffers are not copied to other devices (allocate it "
				 "without a device, or run on device %d)",
				 args[i].name, b->dev->id, to->id, b->dev->id);
			*status = ST_INVALID;
			return NULL;
		}
	}
	return to;
}
