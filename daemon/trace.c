/*
 * daemon/trace.c — NVTX ranges for requests (see trace.h). Loop thread only.
 */
#include "daemon/trace.h"

#if GPUD_HAVE_NVTX

#include <inttypes.h>
#include <stdio.h>

#include <nvtx3/nvToolsExt.h>

#include "daemon/loop.h"

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

int trace_on(void)
{
	trace_init();
	return domain != NULL;
}

int trace_request_start(const trace_about *t, uint64_t *id)
{
	char msg[256];

	ON_LOOP("trace_request_start");
	trace_init();
	if (domain == NULL)
		return 0;
	unsigned verb = t->category;
	const char *name = t->verb ? t->verb : "-";
	snprintf(msg, sizeof(msg),
		 "tenant=%s verb=%s%s%.64s bytes=%" PRIu64 " conn=%" PRIu32 " request=%" PRIu64,
		 t->tenant ? t->tenant : "-", name, t->kernel ? " kernel=" : "",
		 t->kernel ? t->kernel : "", t->bytes, t->conn, t->request);
	if (verb < 64 && !(named & (1ull << verb))) {
		named |= 1ull << verb;
		nvtxDomainNameCategoryA(domain, verb, name);
	}
	nvtxEventAttributes_t a = {0};
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = verb;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = colors[verb % (sizeof(colors) / sizeof(colors[0]))];
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = t->bytes;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = msg;
	*id = nvtxDomainRangeStartEx(domain, &a);
	return 1;
}

void trace_request_end(uint64_t id)
{
	ON_LOOP("trace_request_end");
	nvtxDomainRangeEnd(domain, id);
}

#else /* no NVTX headers at build time: nothing to trace with */

void trace_init(void)
{
}

int trace_on(void)
{
	return 0;
}

int trace_request_start(const trace_about *a, uint64_t *id)
{
	(void)a;
	(void)id;
	return 0;
}

void trace_request_end(uint64_t id)
{
	(void)id;
}

#endif
