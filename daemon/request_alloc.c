/*
 * daemon/request_alloc.c — an allocation of a request that would wait for
 * the device (buffers_alloc said ST_WOULD_BLOCK): what the request made and
 * holds so far is given back (the memory it made kept in its spares), the
 * block is made on a libuv worker, then the verb runs again on the loop and
 * finds it in r->spares (request.h: request_alloc_off_loop).
 *
 * Threads: the loop (request_alloc_off_loop, alloc_after); one libuv worker
 * per waiting request (alloc_work), which alone touches r->spares, and
 * r->alloc_status and alloc_err, until alloc_after.
 */
#include <stdio.h>

#include "daemon/devices.h"
#include "daemon/loop.h"
#include "daemon/regions.h"
#include "daemon/registry.h"
#include "daemon/request.h"

static void alloc_work(uv_work_t *w)
{
	gpud_request *r = w->data;
	void *mem = NULL;
	r->alloc_status = backend_alloc_wait(&r->spares.dev->be, r->spares.want, r->spares.owner,
					     &mem, r->alloc_err, sizeof(r->alloc_err));
	if (r->alloc_status == ST_OK) { /* the loop does not touch spares meanwhile */
		r->spares.mem[r->spares.n] = mem;
		r->spares.bytes[r->spares.n++] = r->spares.want;
	}
}

static void alloc_after(uv_work_t *w, int status)
{
	gpud_request *r = w->data;
	size_t want = r->spares.want;
	r->spares.want = 0;
	if (request_cancelled(r)) {
		request_fail(r, ST_CANCELLED, "cancelled (%s) while gpud allocated %zu bytes",
			     r->cancel_why, want);
		return;
	}
	if (r->alloc_status != ST_OK) { /* the verb says it, in its words */
		r->spares.fail = r->alloc_status;
		r->spares.fail_bytes = want;
		snprintf(r->spares.fail_err, sizeof(r->spares.fail_err), "%s", r->alloc_err);
	}
	r->redo(r);
}

void request_alloc_off_loop(gpud_request *r, void (*redo)(gpud_request *r))
{
	gpud_core *core = r->core;
	ON_LOOP("request_alloc_off_loop");
	/* Start over later: drop what this try holds; keep what it made. */
	for (int i = 0; i < r->nheld; i++)
		buffer_unref(core->buffers, r->held[i]);
	r->nheld = 0;
	for (int i = 0; i < r->ntemps; i++)
		buffers_release_to(core->buffers, r->temps[i], &r->spares);
	r->ntemps = 0;
	for (int i = 0; i < r->ncreated; i++)
		buffers_release_to(core->buffers, r->created[i], &r->spares);
	r->ncreated = 0;
	for (int i = 0; i < r->nregions; i++)
		region_unref(r->regions[i]);
	r->nregions = 0;
	r->pending = 0;
	r->pending_status = ST_OK;
	r->on_cancel = NULL;
	if (r->custom) { /* found again by the next try */
		registry_unref(r->custom);
		r->custom = NULL;
	}
	if (r->spares.n == BUFFER_SPARES) { /* cannot happen: a request makes fewer */
		request_fail(r, ST_INTERNAL, "too many allocations in one request");
		return;
	}
	r->redo = redo;
	r->alloc_work.data = r;
	uv_queue_work(core->loop, &r->alloc_work, alloc_work, alloc_after);
}
