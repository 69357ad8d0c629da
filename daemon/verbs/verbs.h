/*
 * daemon/verbs/verbs.h — the verbs' handlers, one file per group:
 * buffers.c (alloc, upload, download, free, list, unmap, sync), run.c (with
 * run.h and early.c), info.c (hello, status, kernels), register.c (register,
 * unregister), cancel.c; the dispatcher (dispatch.c) finds them from the
 * verb table (table.h, rows in verbs.def).
 *
 * Every handler ends in exactly one reply (request_reply, request_fail or
 * request_send_msg), at once or from the backend's completion. Messages
 * name what was wrong, with expected and got, because clients show them
 * verbatim. Handlers reach the daemon through daemon/request.h only, and run
 * on the loop thread.
 */
#ifndef GPUD_VERBS_H
#define GPUD_VERBS_H

#include "daemon/auth.h"
#include "daemon/backend/backend.h"
#include "daemon/config.h"
#include "daemon/devices.h"
#include "daemon/hostmem.h"
#include "daemon/placement.h"
#include "daemon/regions.h"
#include "daemon/registry.h"
#include "daemon/request.h"
#include "daemon/sched.h"
#include "daemon/verbs/run.h"
#include "daemon/verbs/table.h"

/*
 * Room for any verb's request: the common part, or the type of a verb with
 * state of its own, which embeds it first. The server keeps each request
 * in one of these and hands the verbs &common.
 */
typedef union verb_request {
	gpud_request common;
	run_request run;
} verb_request;

/* Runs r's verb (the server has checked the session, tenant and quotas). */
void verbs_dispatch(gpud_request *r);
/*
 * The hello r carries (Request.carried_hello) on a connection without a
 * tenant, said before r itself (daemon/verbs/info.c): 0 with
 * r->carried_hello set for r's reply, or -1 after failing r with hello's
 * code and message.
 */
int verbs_carried_hello(gpud_request *r);

/* The handlers: verb_<name> for each row of verbs.def. */
#define VERB(BODY, name, flags) void verb_##name(gpud_request *r);
#include "daemon/verbs/verbs.def"
#undef VERB

/* BufferInfo pointing into b (valid while b is). */
void verb_buffer_info(const gpud_buffer *b, Gpud__BufferInfo *info);
/* A completion that only has to say OK (resp) or pass the backend's error on. */
void verb_reply_empty(gpud_request *r, dstatus status, const char *msg, Gpud__Response *resp);

#endif
