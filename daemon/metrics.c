/*
 * daemon/metrics.c — recording gpud's counters and histograms (the loop's;
 * see metrics.h). Rendering is metrics_text.c's.
 */
#include <stddef.h>

#include "daemon/loop.h"
#include "daemon/metrics.h"

const double metrics_bucket_le[METRICS_BUCKETS] = {
	1e-5,   2.5e-5, 5e-5, 1e-4,   2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
	2.5e-2, 5e-2,   1e-1, 2.5e-1, 5e-1,   1.0,  2.5,  5.0,    10.0,
};

static const char *const quota_names[QUOTA_KINDS] = {
	[QUOTA_DEVICE_BYTES] = "device_bytes",
	[QUOTA_KEPT_BUFFERS] = "kept_buffers",
	[QUOTA_REQUESTS_IN_FLIGHT] = "requests_in_flight",
	[QUOTA_MESSAGE_SIZE] = "message_size",
	[QUOTA_KERNELS] = "custom_kernels",
	[QUOTA_RUN_TIMEOUT] = "run_timeout",
};

const char *quota_kind_name(quota_kind q)
{
	return (unsigned)q < QUOTA_KINDS ? quota_names[q] : "unknown";
}

void histogram_observe(histogram *h, double seconds)
{
	if (!(seconds >= 0)) /* NaN or negative: a clock step; count it as 0 */
		seconds = 0;
	for (int i = 0; i < METRICS_BUCKETS; i++)
		if (seconds <= metrics_bucket_le[i]) {
			h->bucket[i]++;
			break;
		}
	h->count++; /* above the last bound: only in +Inf, which is count */
	h->sum += seconds;
}

void metrics_request(metrics *m, tenant_metrics *t, int verb, dstatus status, uint64_t up,
		     uint64_t down, double seconds)
{
	ON_LOOP("metrics_request");
	if (t == NULL)
		t = &m->no_tenant;
	if (verb < 0 || verb >= METRICS_VERBS)
		verb = VERB_UNKNOWN; /* apart from every verb and from none */
	if ((int)status < 0 || (int)status >= METRICS_STATUSES)
		status = ST_INTERNAL;
	t->requests[verb][status]++;
	t->upload_bytes += up;
	t->download_bytes += down;
	histogram_observe(&m->request_seconds[verb], seconds);
}

static int kernel_index(int kernel_id)
{
	return kernel_id >= 0 && kernel_id < KERNEL_COUNT ? kernel_id : METRICS_KERNEL_CUSTOM;
}

void metrics_queued(metrics *m, int kernel_id, double queue_s)
{
	ON_LOOP("metrics_queued");
	histogram_observe(&m->queue_seconds[kernel_index(kernel_id)], queue_s);
}

void metrics_ran(metrics *m, tenant_metrics *t, int kernel_id, double kernel_s)
{
	ON_LOOP("metrics_ran");
	histogram_observe(&m->kernel_seconds[kernel_index(kernel_id)], kernel_s);
	if (t == NULL)
		t = &m->no_tenant;
	t->runs++;
	t->kernel_seconds += kernel_s;
}

void metrics_batch(metrics *m, uint64_t n)
{
	int i = 0;
	while (i < METRICS_BATCH_BUCKETS - 1 && ((uint64_t)1 << i) < n)
		i++;
	m->batches++;
	m->batched_runs += n;
	m->batch_size_bucket[i]++;
}
