/*
 * daemon/metrics.h — what gpud counts for its /metrics endpoint: requests by
 * tenant, verb and status, bytes copied in and out, quota refusals, and
 * histograms of request, kernel and queue times.
 *
 * Owned by the loop thread: recorded there (the request layer, the run verb,
 * the quota checks of the server, buffers and registry) and read there when
 * the endpoint renders (daemon/metrics_text.c). Counters only ever grow; the
 * gauges (connections, buffers, pool, devices) are read from their owners at
 * render time and kept nowhere here.
 *
 * Cardinality is bounded by construction: verbs and statuses are the
 * protocol's, kernels are the built-in list plus one "custom" series, and
 * tenants beyond the first `metrics_tenants` (gpud.conf) share the label
 * tenant="_other" when rendered.
 */
#ifndef GPUD_METRICS_H
#define GPUD_METRICS_H

#include <stdint.h>

#include "daemon/status.h"
#include "daemon/verbs/table.h"
#include "kernels/core/list.h"

/* Request verbs by their dense index (daemon/verbs/table.h): "none", every
 * verb, "unknown" (a body field the verb table has no row for). */
#define METRICS_VERBS VERB_INDEXES
#define METRICS_STATUSES ((int)ST_WOULD_BLOCK + 1)
/* Kernels: the built-in ids, then one series for every user's kernel. */
#define METRICS_KERNELS (KERNEL_COUNT + 1)
#define METRICS_KERNEL_CUSTOM KERNEL_COUNT
/* Failed hellos: daemon/hello_guard.h's guard_failure kinds. */
#define METRICS_AUTH_FAILURES 2

typedef enum quota_kind {
	QUOTA_DEVICE_BYTES,
	QUOTA_KEPT_BUFFERS,
	QUOTA_REQUESTS_IN_FLIGHT,
	QUOTA_MESSAGE_SIZE,
	QUOTA_KERNELS,     /* registered kernels */
	QUOTA_RUN_TIMEOUT, /* a built-in run stopped over run_timeout */
	QUOTA_KINDS
} quota_kind;

/* The config key each quota_kind is set by: the label's value. */
const char *quota_kind_name(quota_kind q);

/* A tenant's counters (embedded in gpud_tenant; the loop's). */
typedef struct tenant_metrics {
	uint64_t requests[METRICS_VERBS][METRICS_STATUSES];
	uint64_t upload_bytes, download_bytes; /* array bytes into and out of gpud's buffers */
	uint64_t quota_refused[QUOTA_KINDS];
	uint64_t runs;         /* kernel runs that completed */
	double kernel_seconds; /* their kernel time */
	uint32_t ordinal;      /* 0 for the first tenant gpud saw (set by tenants_get):
				  below metrics_tenants, the tenant has a label of its own */
	/* requests that ended cancelled because their connection closed (for
	 * the tenant's status; requests[][ST_CANCELLED] counts them all) */
	uint64_t cancelled_closed;
	/* its unpinned custom kernels removed to make room for another
	 * (daemon/registry.h) */
	uint64_t custom_evicted;
} tenant_metrics;

/* Batch sizes (runs per launch), upper bounds: 1, 2, 4, ... 65536. */
#define METRICS_BATCH_BUCKETS 17

/* Prometheus histogram buckets (upper bounds, seconds): 10 µs to 10 s. */
#define METRICS_BUCKETS 19
extern const double metrics_bucket_le[METRICS_BUCKETS];

typedef struct histogram {
	uint64_t bucket[METRICS_BUCKETS]; /* observations <= le[i] and > le[i-1] */
	uint64_t count;
	double sum;
} histogram;

typedef struct metrics {
	tenant_metrics no_tenant; /* requests before hello, or of a connection with none */
	histogram request_seconds[METRICS_VERBS];
	histogram kernel_seconds[METRICS_KERNELS];
	histogram queue_seconds[METRICS_KERNELS];
	uint64_t connections_total; /* connections gpud accepted */
	/* failed hellos by guard_failure (daemon/hello_guard.h), and the
	 * connections closed for them */
	uint64_t auth_failures[METRICS_AUTH_FAILURES];
	uint64_t auth_closed;
	/* config reloads (SIGHUP, daemon/reload.c): applied (ok) or refused
	 * whole; the last one's end (Unix time, 0: none yet) and result */
	uint64_t reloads_ok, reloads_refused;
	double reload_last_s;
	int reload_last_ok;
	/* dynamic batching (daemon/verbs/batch_run.c): launches of batched runs,
	 * the runs they carried, and how many each carried (buckets: batch_le) */
	uint64_t batches, batched_runs;
	uint64_t batch_size_bucket[METRICS_BATCH_BUCKETS];
} metrics;

void histogram_observe(histogram *h, double seconds);

/* A batch of n runs was launched. */
void metrics_batch(metrics *m, uint64_t n);

/* A request ended with status (verb: its index, verb_index; one out of range
 * counts as VERB_UNKNOWN), having copied
 * up/down array bytes, after seconds. t: its tenant's counters, or NULL. */
void metrics_request(metrics *m, tenant_metrics *t, int verb, dstatus status, uint64_t up,
		     uint64_t down, double seconds);
/* A run of kernel id (KERNEL_ID_CUSTOM for a user's) waited queue_s for a slot. */
void metrics_queued(metrics *m, int kernel_id, double queue_s);
/* A run completed, its kernel taking kernel_s. */
void metrics_ran(metrics *m, tenant_metrics *t, int kernel_id, double kernel_s);

#endif
