/*
 * daemon/trace.c — NVTX ranges for requests (see trace.h). Loop thread only.
 */
#include "daemon/trace.h"

#if GPUD_HAVE_NVTX

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include <nvtx3/nvToolsExt.h>

#include "daemon/loop.h"
#include "daemon/request.h"

static nvtxDomainHandle_t domain;
static int inited;
static uint64_t named; /* the verbs (body field numbers) whose category has its name */

/* A color per verb (ARGB), by body field number. */
static const uint32_t colors[] = {
	0xff4e79a7, 0xfff28e2b, 0xffe15759, 0xff76b7b2, 0xff59a14f, 0xffedc948, 0xffb07aa1,
	0xffff9da7, 0xff9c755f, 0xffbab0ac, 0xff1f77b4, 0xffd62728, 0xff2ca02c, 0xff9467bd,
};

void trace_init(void)
{
	if (inited)
		return;
	inited = 1;
	/* NULL when no tool is attached: every range after is one test of it. */
	domain = nvtxDomainCreateA("gpud");
}

/* The bytes a range carries: the buffer's size for alloc, upload and download. */
static uint64_t request_bytes(const gpud_request *r)
{
	const Gpud__Request *q = r->req;
	const gpud_buffer *b = NULL;
	gpud_tenant *tn = r->session ? r->session->tenant : NULL;

	switch (q->body_case) {
	case GPUD__REQUEST__BODY_ALLOC: {
		size_t n = gpud_shape_bytes(q->alloc->shape, (int)q->alloc->n_shape,
					    gpud_dtype_size((gpud_dtype)q->alloc->dtype));
		return n == SIZE_MAX ? 0 : n;
	}
	case GPUD__REQUEST__BODY_UPLOAD:
		b = tn ? buffers_get(r->core->buffers, tn, q->upload->handle) : NULL;
		break;
	case GPUD__REQUEST__BODY_DOWNLOAD:
		b = tn ? buffers_get(r->core->buffers, tn, q->download->handle) : NULL;
		break;
	default:
		return r->payload_len;
	}
	return b ? b->nbytes : 0; /* an unknown handle: the request fails */
}

void trace_request_start(gpud_request *r)
{
	char msg[256];

	ON_LOOP("trace_request_start");
	trace_init();
	if (domain == NULL || r->req == NULL)
		return;
	unsigned verb = (unsigned)r->req->body_case;
	const char *tenant = request_tenant_name(r);
	uint64_t bytes = request_bytes(r);
	const char *kernel = r->req->body_case == GPUD__REQUEST__BODY_RUN ? r->req->run->kernel
									  : NULL;
	snprintf(msg, sizeof(msg),
		 "tenant=%s verb=%s%s%.64s bytes=%" PRIu64 " conn=%" PRIu32 " request=%" PRIu64,
		 tenant ? tenant : "-", request_verb(r), kernel ? " kernel=" : "",
		 kernel ? kernel : "", bytes, r->pipe_id, r->req->id);
	if (verb < 64 && !(named & (1ull << verb))) {
		named |= 1ull << verb;
		nvtxDomainNameCategoryA(domain, verb, request_verb(r));
	}
	nvtxEventAttributes_t a = {0};
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = verb;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = colors[verb % (sizeof(colors) / sizeof(colors[0]))];
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = bytes;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = msg;
	r->trace_id = nvtxDomainRangeStartEx(domain, &a);
	r->traced = 1;
}

void trace_request_end(gpud_request *r)
{
	if (!r->traced)
		return;
	ON_LOOP("trace_request_end");
	r->traced = 0;
	nvtxDomainRangeEnd(domain, r->trace_id);
}

#else /* no NVTX headers at build time: nothing to trace with */

void trace_init(void)
{
}

void trace_request_start(struct gpud_request *r)
{
	(void)r;
}

void trace_request_end(struct gpud_request *r)
{
	(void)r;
}

#endif
