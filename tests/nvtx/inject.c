/*
 * tests/nvtx/inject.c — an NVTX tool for tests: built as
 * $(BUILD)/tests/libnvtx-record.so and loaded by a program's NVTX (NVTX3,
 * header-only) when NVTX_INJECTION64_PATH names it. It writes every range
 * that starts and ends, in any domain, to the file $GPUD_NVTX_RECORD, one
 * line per event, each with one write(2) (O_APPEND):
 *
 *   domain NAME                              a domain was created
 *   category DOMAIN ID NAME                  a category was named
 *   start DOMAIN ID CATEGORY PAYLOAD MESSAGE a range started (push: ID is "push")
 *   end DOMAIN ID                            a range ended (pop: ID is "pop")
 *
 * DOMAIN is the domain's name ("-" for the default domain; spaces become
 * '_'), ID the range id this tool handed out, PAYLOAD an unsigned 64-bit
 * payload or "-", MESSAGE the rest of the line (a registered string
 * resolved; newlines become spaces).
 *
 * How it attaches (nvtx3/nvtxDetail/nvtxInit.h, nvtxTypes.h): NVTX calls
 * InitializeInjectionNvtx2 with its export-table getter; the callbacks
 * table's GetModuleFunctionTable gives, per module (CORE, CORE2), an array
 * of pointers to NVTX's function-pointer slots indexed by callback id, and
 * the tool writes its functions into the slots it implements (NVTX makes
 * the others no-ops). Each NVTX instance in a process (gpud's, and any a
 * loaded library carries) calls the initializer once; they share the file.
 *
 * Threads: any (the program's); state is the file descriptor, set once
 * under a mutex, and atomic counters.
 */
#define NVTX_NO_IMPL /* the types and ids only: this is the tool's side */
#include <nvtx3/nvToolsExt.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What NVTX's opaque handles are to this tool. */
struct nvtxDomainRegistration_st {
	char name[64];
};
struct nvtxStringRegistration_st {
	char *text;
};

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -1;
static atomic_uint_fast64_t next_id = 1;

__attribute__((format(printf, 1, 2))) static void record(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	for (int i = 0; i < n; i++)
		if (line[i] == '\n')
			line[i] = ' ';
	line[n++] = '\n';
	ssize_t w = write(out_fd, line, (size_t)n);
	(void)w;
}

static const char *domain_name(nvtxDomainHandle_t d)
{
	return d ? d->name : "-";
}

static const char *message_of(const nvtxEventAttributes_t *a)
{
	if (a == NULL)
		return "";
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return a->message.ascii ? a->message.ascii : "";
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return a->message.registered ? a->message.registered->text : "";
	default:
		return "(unicode or no message)";
	}
}

static void payload_of(const nvtxEventAttributes_t *a, char *buf, size_t len)
{
	if (a && a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64)
		snprintf(buf, len, "%llu", (unsigned long long)a->payload.ullValue);
	else if (a && a->payloadType == NVTX_PAYLOAD_TYPE_INT64)
		snprintf(buf, len, "%lld", (long long)a->payload.llValue);
	else
		snprintf(buf, len, "-");
}

static nvtxRangeId_t start_in(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char payload[32];
	nvtxRangeId_t id = atomic_fetch_add(&next_id, 1);
	payload_of(a, payload, sizeof(payload));
	record("start %s %llu %u %s %s", domain_name(d), (unsigned long long)id,
	       a ? a->category : 0u, payload, message_of(a));
	return id;
}

/* --- CORE: the default domain --------------------------------------------------------- */

static nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t *a)
{
	return start_in(NULL, a);
}

static nvtxRangeId_t range_start_a(const char *message)
{
	nvtxRangeId_t id = atomic_fetch_add(&next_id, 1);
	record("start - %llu 0 - %s", (unsigned long long)id, message ? message : "");
	return id;
}

static void range_end(nvtxRangeId_t id)
{
	record("end - %llu", (unsigned long long)id);
}

static int range_push_ex(const nvtxEventAttributes_t *a)
{
	char payload[32];
	payload_of(a, payload, sizeof(payload));
	record("start - push %u %s %s", a ? a->category : 0u, payload, message_of(a));
	return 0;
}

static int range_push_a(const char *message)
{
	record("start - push 0 - %s", message ? message : "");
	return 0;
}

static int range_pop(void)
{
	record("end - pop");
	return 0;
}

static void name_category_a(uint32_t category, const char *name)
{
	record("category - %u %s", category, name ? name : "");
}

/* --- CORE2: domains --------------------------------------------------------------------- */

static nvtxDomainHandle_t domain_create_a(const char *name)
{
	nvtxDomainHandle_t d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
	for (char *p = d->name; *p; p++)
		if (*p == ' ' || *p == '\n')
			*p = '_';
	record("domain %s", d->name);
	return d;
}

static void domain_destroy(nvtxDomainHandle_t d)
{
	(void)d; /* kept: a range may still name it */
}

static nvtxStringHandle_t domain_register_string_a(nvtxDomainHandle_t d, const char *text)
{
	(void)d;
	nvtxStringHandle_t s = calloc(1, sizeof(*s));
	if (s != NULL && (s->text = strdup(text ? text : "")) == NULL) {
		free(s);
		s = NULL;
	}
	return s;
}

static void domain_name_category_a(nvtxDomainHandle_t d, uint32_t category, const char *name)
{
	record("category %s %u %s", domain_name(d), category, name ? name : "");
}

static nvtxRangeId_t domain_range_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return start_in(d, a);
}

static void domain_range_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	record("end %s %llu", domain_name(d), (unsigned long long)id);
}

static int domain_range_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char payload[32];
	payload_of(a, payload, sizeof(payload));
	record("start %s push %u %s %s", domain_name(d), a ? a->category : 0u, payload,
	       message_of(a));
	return 0;
}

static int domain_range_pop(nvtxDomainHandle_t d)
{
	record("end %s pop", domain_name(d));
	return 0;
}

/* --- attaching ---------------------------------------------------------------------------- */

typedef struct slot {
	unsigned id;
	NvtxFunctionPointer fn;
} slot;

#define FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

static const slot core_slots[] = {
	{NVTX_CBID_CORE_RangeStartEx, FN(range_start_ex)},
	{NVTX_CBID_CORE_RangeStartA, FN(range_start_a)},
	{NVTX_CBID_CORE_RangeEnd, FN(range_end)},
	{NVTX_CBID_CORE_RangePushEx, FN(range_push_ex)},
	{NVTX_CBID_CORE_RangePushA, FN(range_push_a)},
	{NVTX_CBID_CORE_RangePop, FN(range_pop)},
	{NVTX_CBID_CORE_NameCategoryA, FN(name_category_a)},
};

static const slot core2_slots[] = {
	{NVTX_CBID_CORE2_DomainCreateA, FN(domain_create_a)},
	{NVTX_CBID_CORE2_DomainDestroy, FN(domain_destroy)},
	{NVTX_CBID_CORE2_DomainRegisterStringA, FN(domain_register_string_a)},
	{NVTX_CBID_CORE2_DomainNameCategoryA, FN(domain_name_category_a)},
	{NVTX_CBID_CORE2_DomainRangeStartEx, FN(domain_range_start_ex)},
	{NVTX_CBID_CORE2_DomainRangeEnd, FN(domain_range_end)},
	{NVTX_CBID_CORE2_DomainRangePushEx, FN(domain_range_push_ex)},
	{NVTX_CBID_CORE2_DomainRangePop, FN(domain_range_pop)},
};

/* Writes fns into the module's slots: 1, or 0 if NVTX has no such table. */
static int fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const slot *slots,
		size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!cb->GetModuleFunctionTable(module, &table, &size) || table == NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (slots[i].id < size && table[slots[i].id] != NULL)
			*table[slots[i].id] = slots[i].fn;
	return 1;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
	NvtxGetExportTableFunc_t get_export_table);

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
	NvtxGetExportTableFunc_t get_export_table)
{
	const char *path = getenv("GPUD_NVTX_RECORD");
	if (path == NULL || path[0] == '\0' || get_export_table == NULL)
		return 0; /* nowhere to write: NVTX goes on without a tool */
	pthread_mutex_lock(&init_mu);
	if (out_fd < 0)
		out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int fd = out_fd;
	pthread_mutex_unlock(&init_mu);
	if (fd < 0)
		return 0;
	const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
	if (cb == NULL || cb->struct_size < sizeof(*cb))
		return 0;
	if (!fill(cb, NVTX_CB_MODULE_CORE, core_slots,
		  sizeof(core_slots) / sizeof(core_slots[0])) ||
	    !fill(cb, NVTX_CB_MODULE_CORE2, core2_slots,
		  sizeof(core2_slots) / sizeof(core2_slots[0])))
		return 0;
	const NvtxExportTableVersionInfo *vi = get_export_table(NVTX_ETID_VERSIONINFO);
	if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
		vi->SetInjectionNvtxVersion(NVTX_VERSION);
	return 1;
}
