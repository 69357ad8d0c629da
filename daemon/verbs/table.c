/* daemon/verbs/table.c — the verb table and what its handlers share. */
#include "daemon/log.h"
#include "daemon/verbs/verbs.h"

typedef struct verb {
	Gpud__Request__BodyCase body;
	const char *name;
	void (*handler)(gpud_request *r);
} verb;

static const verb verbs[] = {
	{GPUD__REQUEST__BODY_HELLO, "hello", verb_hello},
	{GPUD__REQUEST__BODY_ALLOC, "alloc", verb_alloc},
	{GPUD__REQUEST__BODY_UPLOAD, "upload", verb_upload},
	{GPUD__REQUEST__BODY_DOWNLOAD, "download", verb_download},
	{GPUD__REQUEST__BODY_FREE, "free", verb_free},
	{GPUD__REQUEST__BODY_RUN, "run", verb_run},
	{GPUD__REQUEST__BODY_KERNELS, "kernels", verb_kernels},
	{GPUD__REQUEST__BODY_STATUS, "status", verb_status},
	{GPUD__REQUEST__BODY_SYNC, "sync", verb_sync},
	{GPUD__REQUEST__BODY_UNMAP, "unmap", verb_unmap},
	{GPUD__REQUEST__BODY_LIST, "list", verb_list},
	{GPUD__REQUEST__BODY_REGISTER, "register", verb_register},
	{GPUD__REQUEST__BODY_UNREGISTER, "unregister", verb_unregister},
	{GPUD__REQUEST__BODY_CANCEL, "cancel", verb_cancel},
};

void verbs_dispatch(gpud_request *r)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (verbs[i].body == r->req->body_case) {
			request_log(r, LOG_DEBUG, "dispatched");
			verbs[i].handler(r);
			return;
		}
	}
	request_fail(r, ST_PROTOCOL, "unknown or missing verb (body field %d)",
		     (int)r->req->body_case);
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
