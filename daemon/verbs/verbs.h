/*
 * daemon/verbs/verbs.h — the verb table (table.c) and its handlers, one file
 * per group: buffers.c (alloc, upload, download, free, list, unmap, sync),
 * run.c, info.c (hello, status, kernels), register.c (register, unregister),
 * cancel.c.
 *
 * Every handler ends in exactly one reply (request_reply, request_fail or
 * request_send_msg), at once or from the backend's completion. Messages
 * name what was wrong, with expected and got, because clients show them
 * verbatim. Handlers reach the daemon through daemon/request.h only, and run
 * on the loop thread.
 */
#ifndef GPUD_VERBS_H
#define GPUD_VERBS_H

#include "daemon/request.h"

/* Runs r's verb (the server has checked the session, tenant and quotas). */
void verbs_dispatch(gpud_request *r);

void verb_hello(gpud_request *r);
void verb_status(gpud_request *r);
void verb_kernels(gpud_request *r);
void verb_alloc(gpud_request *r);
void verb_upload(gpud_request *r);
void verb_download(gpud_request *r);
void verb_free(gpud_request *r);
void verb_list(gpud_request *r);
void verb_unmap(gpud_request *r);
void verb_sync(gpud_request *r);
void verb_run(gpud_request *r);
void verb_register(gpud_request *r);
void verb_unregister(gpud_request *r);
void verb_cancel(gpud_request *r);

/* BufferInfo pointing into b (valid while b is). */
void verb_buffer_info(const gpud_buffer *b, Gpud__BufferInfo *info);
/* A completion that only has to say OK (resp) or pass the backend's error on. */
void verb_reply_empty(gpud_request *r, dstatus status, const char *msg, Gpud__Response *resp);

#endif
