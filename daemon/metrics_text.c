/*
 * daemon/metrics_text.c — gpud's state in the Prometheus text exposition
 * format (version 0.0.4), for the /metrics endpoint (daemon/observe.c).
 *
 * Runs on the loop thread, which owns everything it reads: the counters of
 * daemon/metrics.h and, as gauges, the sessions, tenants and buffers, the
 * scheduler, the backend's pool, staging and devices, lent memory, and the
 * host memory budget (daemon/hostmem.h: atomics, read as they are).
 * Names follow Prometheus' conventions: base units (seconds, bytes),
 * counters end in _total, one family per quantity with labels for its parts.
 * Tenants past metrics_tenants (in the order gpud first saw them) are summed
 * into tenant="_other"; requests of connections without a tenant (before
 * hello) carry tenant="".
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "daemon/config.h"
#include "daemon/devices.h"
#include "daemon/hello_guard.h"
#include "daemon/hostmem.h"
#include "daemon/batch.h"
#include "daemon/metrics_text.h"
#include "daemon/regions.h"
#include "daemon/registry.h"
#include "proto/wire.h"

/* One tenant label's numbers: a tenant's own, or the sum over "_other". */
typedef struct tenant_row {
	char label[GPUD_TENANT_NAME];
	tenant_metrics m;
	uint64_t connections, buffers, bytes, kept, queued;
	uint64_t device_bytes_limit; /* 0: no quota (or summed: not shown) */
	int used;
} tenant_row;

/* A label value with \, " and newline escaped. */
static void put_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f), fputc(*v, f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_u(FILE *f, const char *name, uint64_t v)
{
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/* name{label="value"} v: one sample of a family split by one label. */
static void sample_label_u(FILE *f, const char *name, const char *label, const char *value,
			   uint64_t v)
{
	fprintf(f, "%s{%s=\"%s\"} %llu\n", name, label, value, (unsigned long long)v);
}

static void status_label(dstatus s, char *out, size_t len)
{
	size_t i = 0;
	for (const char *p = status_name(s); *p && i + 1 < len; p++)
		out[i++] = (char)tolower((unsigned char)*p);
	out[i] = '\0';
}

static const char *kernel_label(int k)
{
	size_t n;
	const kernel_def *const *ks = kernel_list(&n);
	return k < (int)n ? ks[k]->name : "custom";
}

static void histogram_write(FILE *f, const char *name, const char *lname, const char *lvalue,
			    const histogram *h)
{
	uint64_t cum = 0;
	for (int i = 0; i < METRICS_BUCKETS; i++) {
		cum += h->bucket[i];
		fprintf(f, "%s_bucket{%s=\"%s\",le=\"%g\"} %llu\n", name, lname, lvalue,
			metrics_bucket_le[i], (unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %llu\n", name, lname, lvalue,
		(unsigned long long)h->count);
	fprintf(f, "%s_sum{%s=\"%s\"} %.9g\n", name, lname, lvalue, h->sum);
	fprintf(f, "%s_count{%s=\"%s\"} %llu\n", name, lname, lvalue, (unsigned long long)h->count);
}

static void add_counters(tenant_metrics *to, const tenant_metrics *from)
{
	for (int v = 0; v < METRICS_VERBS; v++)
		for (int s = 0; s < METRICS_STATUSES; s++)
			to->requests[v][s] += from->requests[v][s];
	to->upload_bytes += from->upload_bytes;
	to->download_bytes += from->download_bytes;
	for (int q = 0; q < QUOTA_KINDS; q++)
		to->quota_refused[q] += from->quota_refused[q];
	to->runs += from->runs;
	to->custom_evicted += from->custom_evicted;
	to->kernel_seconds += from->kernel_seconds;
}

/*
 * The rows: [0] no tenant, [1..n] tenants with a label of their own (by
 * ordinal), [cap+1] "_other". Returns the array (cap + 2 rows) or NULL.
 */
static tenant_row *tenant_rows(const gpud_core *core, const metrics *m, uint32_t cap)
{
	tenant_row *rows = calloc((size_t)cap + 2, sizeof(*rows));
	if (rows == NULL)
		return NULL;
	rows[0].used = 1;
	rows[0].m = m->no_tenant;
	snprintf(rows[cap + 1].label, sizeof(rows[cap + 1].label), "_other");
	gpud_tenant *tn, *tmp;
	HASH_ITER(hh, core->buffers->tenants, tn, tmp)
	{
		uint32_t o = tn->metrics.ordinal;
		tenant_row *r = o < cap ? &rows[o + 1] : &rows[cap + 1];
		if (o < cap) {
			snprintf(r->label, sizeof(r->label), "%s", tn->name);
			r->device_bytes_limit = tn->quota.device_bytes;
		}
		r->used = 1;
		add_counters(&r->m, &tn->metrics);
		r->buffers += tn->nbuffers;
		r->bytes += tn->bytes;
		r->kept += tn->nkept;
		for (int d = 0; d < GPUD_DEVICES_MAX; d++)
			r->queued += tn->runs[d].queued;
	}
	gpud_session *s, *stmp;
	HASH_ITER(hh, core->buffers->sessions, s, stmp)
	{
		uint32_t o = s->tenant ? s->tenant->metrics.ordinal : 0;
		tenant_row *r = s->tenant == NULL ? &rows[0]
				: o < cap         ? &rows[o + 1]
						  : &rows[cap + 1];
		r->connections++;
	}
	return rows;
}

#define FOR_ROWS(rows, n, r)                                                                       \
	for (tenant_row *r = (rows); r < (rows) + (n); r++)                                        \
		if (r->used)

static void tenant_families(FILE *f, tenant_row *rows, size_t n)
{
	char st[32];
	family(f, "gpud_requests_total", "counter",
	       "Requests answered, by tenant, verb and status (ok, or the error's status).");
	FOR_ROWS(rows, n, r)
	for (int v = 0; v < METRICS_VERBS; v++)
		for (int s = 0; s < METRICS_STATUSES; s++) {
			if (r->m.requests[v][s] == 0)
				continue;
			status_label((dstatus)s, st, sizeof(st));
			fputs("gpud_requests_total{tenant=\"", f);
			put_label(f, r->label);
			fprintf(f, "\",verb=\"%s\",status=\"%s\"} %llu\n", verb_name(v), st,
				(unsigned long long)r->m.requests[v][s]);
		}

	struct {
		const char *name, *type, *help;
		size_t off; /* of a uint64_t in tenant_row */
		int skip_zero_row0;
	} fams[] = {
		{"gpud_upload_bytes_total", "counter",
		 "Array bytes copied into gpud's buffers (uploads, allocs with data, inline run "
		 "inputs), by tenant.",
		 offsetof(tenant_row, m.upload_bytes), 0},
		{"gpud_download_bytes_total", "counter",
		 "Array bytes copied out of gpud's buffers (downloads, returned run outputs), by "
		 "tenant.",
		 offsetof(tenant_row, m.download_bytes), 0},
		{"gpud_kernel_runs_total", "counter", "Kernel runs completed, by tenant.",
		 offsetof(tenant_row, m.runs), 0},
		{"gpud_connections", "gauge", "Connections open now, by tenant.",
		 offsetof(tenant_row, connections), 0},
		{"gpud_tenant_buffers", "gauge", "Buffers held, by tenant.",
		 offsetof(tenant_row, buffers), 1},
		{"gpud_tenant_buffer_bytes", "gauge", "Bytes of the buffers held, by tenant.",
		 offsetof(tenant_row, bytes), 1},
		{"gpud_tenant_kept_buffers", "gauge",
		 "Kept buffers (outliving their connection), by tenant.",
		 offsetof(tenant_row, kept), 1},
		{"gpud_tenant_runs_queued", "gauge", "Runs waiting for a run slot, by tenant.",
		 offsetof(tenant_row, queued), 1},
		{"gpud_custom_kernels_evicted_total", "counter",
		 "Unpinned custom kernels removed to make room for another (custom_kernels "
		 "quota), by tenant.",
		 offsetof(tenant_row, m.custom_evicted), 1},
	};
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		family(f, fams[i].name, fams[i].type, fams[i].help);
		FOR_ROWS(rows, n, r)
		{
			if (fams[i].skip_zero_row0 && r == rows)
				continue; /* no tenant holds nothing */
			fprintf(f, "%s{tenant=\"", fams[i].name);
			put_label(f, r->label);
			fprintf(f, "\"} %llu\n",
				(unsigned long long)*(const uint64_t *)((const char *)r +
									fams[i].off));
		}
	}
	family(f, "gpud_kernel_seconds_total", "counter",
	       "Kernel time of the completed runs, by tenant.");
	FOR_ROWS(rows, n, r)
	{
		fputs("gpud_kernel_seconds_total{tenant=\"", f);
		put_label(f, r->label);
		fprintf(f, "\"} %.9g\n", r->m.kernel_seconds);
	}
	family(f, "gpud_quota_refusals_total", "counter",
	       "Requests refused for going over a quota, by tenant and quota (its gpud.conf key).");
	FOR_ROWS(rows, n, r)
	{
		if (r == rows)
			continue; /* quotas are tenants' */
		for (int q = 0; q < QUOTA_KINDS; q++) {
			fputs("gpud_quota_refusals_total{tenant=\"", f);
			put_label(f, r->label);
			fprintf(f, "\",quota=\"%s\"} %llu\n", quota_kind_name((quota_kind)q),
				(unsigned long long)r->m.quota_refused[q]);
		}
	}
	family(f, "gpud_tenant_device_bytes_limit", "gauge",
	       "The tenant's device_bytes quota, where one is set.");
	FOR_ROWS(rows, n, r)
	{
		if (r->device_bytes_limit == 0)
			continue;
		fputs("gpud_tenant_device_bytes_limit{tenant=\"", f);
		put_label(f, r->label);
		fprintf(f, "\"} %llu\n", (unsigned long long)r->device_bytes_limit);
	}
}

static void time_families(FILE *f, const metrics *m)
{
	family(f, "gpud_request_duration_seconds", "histogram",
	       "Time from a request's arrival to its reply, by verb.");
	for (int v = 0; v < METRICS_VERBS; v++)
		if (m->request_seconds[v].count)
			histogram_write(f, "gpud_request_duration_seconds", "verb", verb_name(v),
					&m->request_seconds[v]);
	family(f, "gpud_kernel_run_seconds", "histogram",
	       "Kernel time of completed runs, by kernel (users' kernels together as custom).");
	for (int k = 0; k < METRICS_KERNELS; k++)
		if (m->kernel_seconds[k].count)
			histogram_write(f, "gpud_kernel_run_seconds", "kernel", kernel_label(k),
					&m->kernel_seconds[k]);
	family(f, "gpud_kernel_queue_seconds", "histogram",
	       "Time runs waited for a run slot, by kernel.");
	for (int k = 0; k < METRICS_KERNELS; k++)
		if (m->queue_seconds[k].count)
			histogram_write(f, "gpud_kernel_queue_seconds", "kernel", kernel_label(k),
					&m->queue_seconds[k]);
}

/* Each device's families, labelled device="ID" (its slot's values in v). */
static void per_device(FILE *f, const gpud_core *core, const char *name, const char *labels,
		       const uint64_t *v)
{
	const device_set *ds = core->devices;
	for (int i = 0; i < ds->n; i++)
		fprintf(f, "%s{device=\"%d\"%s%s} %llu\n", name, ds->dev[i].id,
			labels[0] ? "," : "", labels, (unsigned long long)v[i]);
}

static void backend_families(FILE *f, const gpud_core *core)
{
	device_set *ds = core->devices;
	uint64_t a[GPUD_DEVICES_MAX], b[GPUD_DEVICES_MAX], c[GPUD_DEVICES_MAX], d[GPUD_DEVICES_MAX];
	backend_pool_stats ps[GPUD_DEVICES_MAX];
	backend_staging_stats ss[GPUD_DEVICES_MAX];
	int has_pool = 1, has_staging = 1;

	for (int i = 0; i < ds->n; i++) {
		gpud_backend *be = &ds->dev[i].be;
		if (!be->ops->pool_stats || be->ops->pool_stats(be, &ps[i]) != 0)
			has_pool = 0;
		if (!be->ops->staging_stats || be->ops->staging_stats(be, &ss[i]) != 0)
			has_staging = 0;
	}
	family(f, "gpud_device_up", "gauge",
	       "1 while the device serves, 0 once it is lost (a sticky error in its context).");
	for (int i = 0; i < ds->n; i++) {
		a[i] = !ds->dev[i].lost;
		b[i] = ds->dev[i].runs;
		c[i] = ds->dev[i].bytes_moving;
		d[i] = ds->dev[i].bytes;
	}
	per_device(f, core, "gpud_device_up", "", a);
	family(f, "gpud_device_runs", "gauge",
	       "Runs placed on the device and not yet answered (waiting or running).");
	per_device(f, core, "gpud_device_runs", "", b);
	family(f, "gpud_device_moving_bytes", "gauge", "Bytes of copies in flight to or from it.");
	per_device(f, core, "gpud_device_moving_bytes", "", c);
	family(f, "gpud_device_buffer_bytes", "gauge", "Bytes of the buffers on the device.");
	per_device(f, core, "gpud_device_buffer_bytes", "", d);
	family(f, "gpud_device_busy_seconds_total", "counter",
	       "Time the device has had a kernel run of gpud in flight (its rate: utilisation).");
	for (int i = 0; i < ds->n; i++)
		fprintf(f, "gpud_device_busy_seconds_total{device=\"%d\"} %.6f\n", ds->dev[i].id,
			device_busy_s(&ds->dev[i]));
	family(f, "gpud_run_slots", "gauge",
	       "Kernel runs each device takes at once (run_slots): busy or free.");
	for (int i = 0; i < ds->n; i++) {
		a[i] = (uint64_t)ds->dev[i].sched.busy;
		b[i] = (uint64_t)(ds->dev[i].sched.slots - ds->dev[i].sched.busy);
	}
	per_device(f, core, "gpud_run_slots", "state=\"busy\"", a);
	per_device(f, core, "gpud_run_slots", "state=\"free\"", b);
	if (has_pool && ds->n > 0) {
		family(f, "gpud_pool_bytes", "gauge",
		       "Device memory of the pool: in use by buffers, or cached for reuse.");
		for (int i = 0; i < ds->n; i++) {
			a[i] = ps[i].in_use;
			b[i] = ps[i].cached;
			c[i] = ps[i].hits;
			d[i] = ps[i].allocs - ps[i].hits;
		}
		per_device(f, core, "gpud_pool_bytes", "state=\"in_use\"", a);
		per_device(f, core, "gpud_pool_bytes", "state=\"cached\"", b);
		family(f, "gpud_pool_allocations_total", "counter",
		       "Pool allocations: served from the cache (hit) or from the driver (miss).");
		per_device(f, core, "gpud_pool_allocations_total", "result=\"hit\"", c);
		per_device(f, core, "gpud_pool_allocations_total", "result=\"miss\"", d);
		for (int i = 0; i < ds->n; i++) {
			a[i] = ps[i].high_water;
			b[i] = ps[i].limit;
		}
		family(f, "gpud_pool_high_water_bytes", "gauge",
		       "The most device memory the pool has held in use.");
		per_device(f, core, "gpud_pool_high_water_bytes", "", a);
		for (int i = 0; i < ds->n; i++)
			a[i] = ps[i].clears;
		family(f, "gpud_pool_clears_total", "counter",
		       "Blocks zeroed before a tenant got them: fresh ones, and ones another "
		       "tenant held last.");
		per_device(f, core, "gpud_pool_clears_total", "", a);
		family(f, "gpud_pool_limit_bytes", "gauge",
		       "The pool's limit (pool_max_total), 0 for none.");
		per_device(f, core, "gpud_pool_limit_bytes", "", b);
	}
	if (has_staging && ds->n > 0) {
		family(f, "gpud_staging_buffers", "gauge",
		       "Pinned staging buffers for pageable copies: free or in use.");
		for (int i = 0; i < ds->n; i++) {
			a[i] = ss[i].free;
			b[i] = ss[i].buffers - ss[i].free;
			c[i] = ss[i].chunk;
			d[i] = ss[i].bytes_staged;
		}
		per_device(f, core, "gpud_staging_buffers", "state=\"free\"", a);
		per_device(f, core, "gpud_staging_buffers", "state=\"in_use\"", b);
		family(f, "gpud_staging_buffer_bytes", "gauge", "The size of one staging buffer.");
		per_device(f, core, "gpud_staging_buffer_bytes", "", c);
		family(f, "gpud_staged_bytes_total", "counter",
		       "Bytes copied through the staging buffers.");
		per_device(f, core, "gpud_staged_bytes_total", "", d);
	}
	backend_device devs[GPUD_DEVICES_MAX];
	int nd = 0;
	for (int i = 0; i < ds->n; i++)
		if (ds->dev[i].be.ops->devices(&ds->dev[i].be, &devs[nd], 1) == 1)
			devs[nd++].index = ds->dev[i].id; /* as clients name it */
	if (nd > 0) {
		family(f, "gpud_device_memory_total_bytes", "gauge", "The device's memory.");
		for (int i = 0; i < nd; i++) {
			fprintf(f, "gpud_device_memory_total_bytes{device=\"%d\",name=\"",
				devs[i].index);
			put_label(f, devs[i].name);
			fprintf(f, "\"} %llu\n", (unsigned long long)devs[i].memory_total);
		}
		family(f, "gpud_device_memory_free_bytes", "gauge",
		       "The device's free memory, as its driver reports it.");
		for (int i = 0; i < nd; i++) {
			fprintf(f, "gpud_device_memory_free_bytes{device=\"%d\",name=\"",
				devs[i].index);
			put_label(f, devs[i].name);
			fprintf(f, "\"} %llu\n", (unsigned long long)devs[i].memory_free);
		}
	}
}

static void process_families(FILE *f, const gpud_core *core, const metrics_page *p)
{
	struct timespec rt, mt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	double up = ((double)mt.tv_sec + mt.tv_nsec / 1e9) - (double)core->stats->started_ns / 1e9;

	family(f, "gpud_build_info", "gauge", "gpud's version, protocol and backend (always 1).");
	fprintf(f, "gpud_build_info{version=\"%s\",protocol=\"%u\",backend=\"%s\"} 1\n",
		GPUD_VERSION, GPUD_PROTOCOL_VERSION, core->devices->backend);
	family(f, "gpud_start_time_seconds", "gauge", "When gpud started, in Unix time.");
	fprintf(f, "gpud_start_time_seconds %.3f\n", (double)rt.tv_sec + rt.tv_nsec / 1e9 - up);
	family(f, "gpud_ready", "gauge",
	       "1 while gpud serves (as /readyz), 0 while starting or stopping.");
	fprintf(f, "gpud_ready %d\n", p->ready);
	family(f, "gpud_backend_up", "gauge",
	       "1 while the backend works on some device, 0 once gpud exits for a lost device "
	       "(each device: gpud_device_up).");
	fprintf(f, "gpud_backend_up{backend=\"%s\"} %d\n", core->devices->backend,
		p->backend_lost ? 0 : 1);
	family(f, "gpud_listener_up", "gauge",
	       "1 while the listener answers gpud's own hello (health_probe_interval), 0 once two "
	       "in a row failed; absent while not probed.");
	for (int i = 0; i < p->nlisteners; i++) {
		if (p->listener_up[i] < 0)
			continue;
		fputs("gpud_listener_up{listener=\"", f);
		put_label(f, p->listen[i]);
		fprintf(f, "\"} %d\n", p->listener_up[i]);
	}
	family(f, "gpud_connections_accepted_total", "counter", "Connections gpud has accepted.");
	sample_u(f, "gpud_connections_accepted_total", p->m->connections_total);
	family(f, "gpud_auth_failures_total", "counter",
	       "Failed hellos: a wrong or missing token (token), or refused unread while their "
	       "peer backs off after failed hellos (backoff).");
	for (int k = 0; k < METRICS_AUTH_FAILURES; k++)
		fprintf(f, "gpud_auth_failures_total{reason=\"%s\"} %llu\n",
			guard_failure_name((guard_failure)k),
			(unsigned long long)p->m->auth_failures[k]);
	family(f, "gpud_auth_connections_closed_total", "counter",
	       "Connections gpud closed after their failed hellos.");
	sample_u(f, "gpud_auth_connections_closed_total", p->m->auth_closed);
	if (core->guard) {
		family(f, "gpud_auth_peers", "gauge",
		       "Peers (a uid, an address) whose failed hellos gpud counts: all of them "
		       "(at most 1024), and those backing off now.");
		fprintf(f, "gpud_auth_peers{state=\"counted\"} %zu\n", core->guard->npeers);
		fprintf(f, "gpud_auth_peers{state=\"backing_off\"} %zu\n",
			guard_backing_off(core->guard, now_ns()));
	}
	family(f, "gpud_batches_total", "counter",
	       "Launches of dynamically batched lombscargle runs (batch_delay_us).");
	sample_u(f, "gpud_batches_total", p->m->batches);
	family(f, "gpud_batched_runs_total", "counter",
	       "Runs that went through a dynamic batch (each its own request and result).");
	sample_u(f, "gpud_batched_runs_total", p->m->batched_runs);
	family(f, "gpud_batch_pending_runs", "gauge",
	       "Runs waiting in a dynamic batch's group for batch_delay_us or batch_max.");
	sample_u(f, "gpud_batch_pending_runs", core->batch ? core->batch->pending : 0);
	family(f, "gpud_batch_size", "histogram", "Runs per dynamically batched launch.");
	{
		uint64_t cum = 0;
		for (int i = 0; i < METRICS_BATCH_BUCKETS; i++) {
			cum += p->m->batch_size_bucket[i];
			fprintf(f, "gpud_batch_size_bucket{le=\"%llu\"} %llu\n", 1ull << i,
				(unsigned long long)cum);
		}
		fprintf(f, "gpud_batch_size_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
		fprintf(f, "gpud_batch_size_sum %llu\n", (unsigned long long)p->m->batched_runs);
		fprintf(f, "gpud_batch_size_count %llu\n", (unsigned long long)p->m->batches);
	}
	family(f, "gpud_config_reloads_total", "counter",
	       "Config reloads (SIGHUP): applied (ok), or refused whole for an error in the "
	       "config, the tokens_file or the TLS files (refused: the running config stays).");
	sample_label_u(f, "gpud_config_reloads_total", "result", "ok", p->m->reloads_ok);
	sample_label_u(f, "gpud_config_reloads_total", "result", "refused", p->m->reloads_refused);
	family(f, "gpud_config_last_reload_time_seconds", "gauge",
	       "When the last config reload ended, in Unix time (0: none since gpud started).");
	fprintf(f, "gpud_config_last_reload_time_seconds %.3f\n", p->m->reload_last_s);
	family(f, "gpud_config_last_reload_successful", "gauge",
	       "1 if the last config reload was applied (or none was tried), 0 if it was "
	       "refused.");
	fprintf(f, "gpud_config_last_reload_successful %d\n",
		p->m->reload_last_s > 0 ? p->m->reload_last_ok : 1);
	family(f, "gpud_requests_in_flight", "gauge", "Requests taken and not yet answered.");
	sample_u(f, "gpud_requests_in_flight", core->stats->in_flight);
	family(f, "gpud_buffers", "gauge", "Buffers in gpud, all tenants.");
	sample_u(f, "gpud_buffers", core->buffers->count);
	family(f, "gpud_buffer_bytes", "gauge", "Bytes of the buffers in gpud, all tenants.");
	sample_u(f, "gpud_buffer_bytes", core->buffers->bytes);
	family(f, "gpud_buffer_high_water_bytes", "gauge",
	       "The most bytes gpud's buffers have held at once.");
	sample_u(f, "gpud_buffer_high_water_bytes", core->buffers->high_water);
	if (core->regions->lending) {
		const lend_stats *ls = &core->regions->lend.st;
		family(f, "gpud_lent_host_bytes", "gauge",
		       "Pinned host memory for lending to clients: made ahead (spare), kept "
		       "for a tenant, or lent now.");
		sample_label_u(f, "gpud_lent_host_bytes", "state", "spare", ls->spare_bytes);
		sample_label_u(f, "gpud_lent_host_bytes", "state", "kept", ls->kept_bytes);
		sample_label_u(f, "gpud_lent_host_bytes", "state", "lent", ls->lent_bytes);
		const claim_table *ct = &core->regions->claims;
		family(f, "gpud_host_lends_before_hello_total", "counter",
		       "Host memory lent before hello (a fresh client's one round trip), by "
		       "outcome: claimed by its process's hello, or given back unclaimed after "
		       "lend_claim_s.");
		sample_label_u(f, "gpud_host_lends_before_hello_total", "outcome", "claimed",
			       ct->claimed);
		sample_label_u(f, "gpud_host_lends_before_hello_total", "outcome", "expired",
			       ct->expired);
		family(f, "gpud_host_lends_parked", "gauge",
		       "Host regions lent before hello and not yet claimed by a hello.");
		sample_u(f, "gpud_host_lends_parked", (uint64_t)ct->count);
	}
	if (core->regions->fd >= 0) {
		family(f, "gpud_host_file_copy_bytes_total", "counter",
		       "Bytes gpud copied between clients' files and their host regions "
		       "(direction in: a file into a region; out: a region into a file).");
		sample_label_u(f, "gpud_host_file_copy_bytes_total", "direction", "in",
			       core->regions->file_io_read);
		sample_label_u(f, "gpud_host_file_copy_bytes_total", "direction", "out",
			       core->regions->file_io_written);
	}
	if (core->host) {
		hostmem_stats hs = hostmem_get(core->host);
		family(f, "gpud_host_memory_bytes", "gauge",
		       "Host memory gpud has committed for its clients, by use; their sum is held "
		       "under gpud_host_memory_limit_bytes.");
		for (int i = 0; i < HOSTMEM_USES; i++)
			fprintf(f, "gpud_host_memory_bytes{use=\"%s\"} %llu\n",
				hostmem_use_name((hostmem_use)i), (unsigned long long)hs.by_use[i]);
		family(f, "gpud_host_memory_limit_bytes", "gauge",
		       "host_memory_limit: what gpud commits at most; more is refused.");
		sample_u(f, "gpud_host_memory_limit_bytes", hs.limit);
		family(f, "gpud_host_memory_high_water_bytes", "gauge",
		       "The most host memory gpud has committed at once.");
		sample_u(f, "gpud_host_memory_high_water_bytes", hs.high_water);
		family(f, "gpud_host_memory_refusals_total", "counter",
		       "Requests for host memory refused because the limit was reached.");
		sample_u(f, "gpud_host_memory_refusals_total", hs.refused);
	}
}

void metrics_text(FILE *f, const gpud_core *core, const metrics_page *p)
{
	uint32_t cap = (uint32_t)core->cfg->metrics_tenants;
	process_families(f, core, p);
	backend_families(f, core);
	time_families(f, p->m);
	tenant_row *rows = tenant_rows(core, p->m, cap);
	if (rows) {
		tenant_families(f, rows, (size_t)cap + 2);
		free(rows);
	}
}
