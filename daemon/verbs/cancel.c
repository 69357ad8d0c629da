/*
 * daemon/verbs/cancel.c — cancel: a request of the same connection still in
 * gpud, by its Request.id (a client whose call timed out, or
 * gpud_job_cancel). What cancelling does is the request's own business
 * (request_cancel, and run.c's run_cancel); this verb only finds it. One not
 * found may still be on its way (the cancel overtook it): it is cancelled
 * when it arrives (request_cancel_early).
 */
#include "daemon/verbs/verbs.h"

void verb_cancel(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__CancelResponse cr = GPUD__CANCEL_RESPONSE__INIT;
	gpud_request *target = request_find(r->session, r->req->cancel->request);

	if (target == r) /* a request cannot cancel itself */
		target = NULL;
	cr.found = target != NULL;
	if (target)
		request_cancel(target, "by its client");
	else if (r->req->cancel->request != r->req->id)
		request_cancel_early(r->session, r->req->cancel->request);
	resp.body_case = GPUD__RESPONSE__BODY_CANCEL;
	resp.cancel = &cr;
	request_reply(r, &resp, NULL, 0);
}
