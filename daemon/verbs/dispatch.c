/*
 * daemon/verbs/dispatch.c — from a verb's index to its handler (verb_<name>
 * of verbs.def's row), and what the handlers share. Loop thread.
 */
#include "daemon/log.h"
#include "daemon/verbs/verbs.h"

static void (*const handlers[VERB_INDEXES])(gpud_request *r) = {
#define VERB(BODY, name, flags) [VERB_##BODY] = verb_##name,
#include "daemon/verbs/verbs.def"
#undef VERB
};

void verbs_dispatch(gpud_request *r)
{
	void (*handler)(gpud_request * r) = handlers[verb_index((int)r->req->body_case)];
	if (handler == NULL) {
		request_fail(r, ST_PROTOCOL, "unknown or missing verb (body field %d)",
			     (int)r->req->body_case);
		return;
	}
	request_log(r, LOG_DEBUG, "dispatched");
	handler(r);
}

void verb_buffer_info(const gpud_buffer *b, Gpud__BufferInfo *info)
{
	gpud__buffer_info__init(info);
	info->handle = b->handle;
	info->dtype = (Gpud__DType)b->dtype;
	info->n_shape = (size_t)b->ndim;
	info->shape = (uint64_t *)b->shape;
	info->kept = b->kept;
	info->device = b->dev->id;
	info->pinned = b->pinned;
}

void verb_reply_empty(gpud_request *r, dstatus status, const char *msg, Gpud__Response *resp)
{
	if (status != ST_OK) {
		request_fail(r, status, "%s", msg ? msg : "backend failure");
		return;
	}
	request_reply(r, resp, NULL, 0);
}
