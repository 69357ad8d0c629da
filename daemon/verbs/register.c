/*
 * daemon/verbs/register.c — a tenant's own kernels (daemon/registry.h):
 * register (checked, compiled by the backend on a worker, then kept) and
 * unregister. Built-in names cannot be taken; a tenant's names are its own
 * (another tenant may use the same). The cpu backend runs no custom kernel
 * but checks and keeps them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/verbs/verbs.h"

/* The request is answered once the backend has compiled the kernel. */
static void register_done(void *arg, dstatus status, const char *msg)
{
	gpud_request *r = arg;
	gpud_tenant *tn = r->tenant; /* the session may have closed meanwhile; tenants stay */
	custom_entry *e = r->custom;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__RegisterResponse rr = GPUD__REGISTER_RESPONSE__INIT;
	char err[512];

	r->custom = NULL; /* kept or freed here, not by the request's clean-up */
	if (status != ST_OK) {
		/* The compiler's log verbatim: it names lines of the source. */
		size_t n = strlen(msg ? msg : "") + 256;
		char *m = malloc(n);
		if (m)
			snprintf(m, n, "register %s: does not compile:\n%s", e->k.name,
				 msg ? msg : "");
		resp.code = (Gpud__Status)status_wire(status);
		resp.message = m ? m : "register: does not compile";
		request_log(r, LOG_INFO, "failed: %s: register %s: does not compile",
			    status_name(status), e->k.name);
		request_reply(r, &resp, NULL, 0);
		free(m);
		registry_unref(e);
		return;
	}
	dstatus st = registry_add(r->core->registry, tn, e, r->req->register_, err, sizeof(err));
	if (st != ST_OK) {
		request_fail(r, st, "%s", err);
		registry_unref(e);
		return;
	}
	request_log(r, LOG_INFO, "registered kernel %s (%s, %.1f ms)", e->k.name,
		    e->k.cached ? "from the cache" : "compiled", e->k.compile_ms);
	rr.compile_ms = e->k.compile_ms;
	rr.cached = e->k.cached;
	rr.log = "";
	resp.body_case = GPUD__RESPONSE__BODY_REGISTER;
	resp.register_ = &rr;
	request_reply(r, &resp, NULL, 0);
}

void verb_register(gpud_request *r)
{
	Gpud__RegisterRequest *q = r->req->register_;
	registry *g = r->core->registry;
	char err[768];
	dstatus st;

	custom_entry *e = registry_prepare(g, r->session->tenant, q, &st, err, sizeof(err));
	if (e == NULL) {
		request_fail(r, st, "%s", err);
		return;
	}
	r->custom = e;
	if (!registry_compiles(g)) {
		register_done(r, ST_OK, NULL);
		return;
	}
	/* The tenant's worker (cuda) starts while NVRTC compiles, not on the
	 * first run. */
	if (!e->shared) {
		/* its worker on the device its runs will most likely go to */
		gpud_device *d = place_fresh(r->core->devices, r->session->tenant);
		if (d)
			backend_prepare_tenant(&d->be, r->session->tenant->name);
	}
	st = registry_compile(g, e, register_done, r, err, sizeof(err));
	if (st != ST_OK) {
		r->custom = NULL;
		registry_unref(e);
		request_fail(r, st, "register %s: %s", q->name ? q->name : "", err);
	}
}

void verb_unregister(gpud_request *r)
{
	Gpud__UnregisterRequest *u = r->req->unregister;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__UnregisterResponse ur = GPUD__UNREGISTER_RESPONSE__INIT;
	char err[512];

	dstatus st = registry_remove(r->core->registry, r->session->tenant, u->shared,
				     u->name ? u->name : "", err, sizeof(err));
	if (st != ST_OK) {
		request_fail(r, st, "%s", err);
		return;
	}
	resp.body_case = GPUD__RESPONSE__BODY_UNREGISTER;
	resp.unregister = &ur;
	request_reply(r, &resp, NULL, 0);
}
