/*
 * client/gpuctl/cmd_status.c — gpuctl status [--wait SECONDS]: the daemon's
 * state (backend, devices, memory pool, staging buffers, connections,
 * loaded kernel variants) as gpud shows it to this caller (a tenant its
 * own, an administrator everything, before hello what gpud is), and a line
 * saying what was left out; --wait retries until gpud answers, for scripts
 * that start it; --json prints it as the schema gpuctl.status (docs/user-guide.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "client/gpuctl/gpuctl.h"
#include "client/gpuctl/json.h"

static const char *scope_name(int scope)
{
	switch (scope) {
	case GPUD_SCOPE_ALL:
		return "all";
	case GPUD_SCOPE_TENANT:
		return "tenant";
	case GPUD_SCOPE_BEFORE_HELLO:
		return "before_hello";
	}
	return "unknown";
}

/* Schema gpuctl.status, version 1: every field of gpud_daemon_status, sizes
 * in bytes, times in seconds; pool, staging, lending and host_memory null
 * where the backend has none (or gpud showed none: scope before_hello). */
static void status_json(gpud_client *c, const gpud_daemon_status *st)
{
	json_t *doc = json_doc("gpuctl.status", 1), *devs = json_array(), *sess = json_array(),
	       *vars = json_array();
	json_object_set_new(doc, "url", json_string(gpud_url(c)));
	json_object_set_new(doc, "scope", json_string(scope_name(st->scope)));
	json_object_set_new(doc, "tenant", st->tenant[0] ? json_string(st->tenant) : json_null());
	json_object_set_new(doc, "version", json_string(st->server.version));
	json_object_set_new(doc, "protocol_version", json_integer(st->server.protocol_version));
	json_object_set_new(doc, "backend", json_string(st->server.backend));
	json_object_set_new(doc, "uptime_s", json_real(st->uptime_s));
	json_object_set_new(doc, "connections", json_integer(st->connections));
	json_object_set_new(doc, "in_flight", json_integer(st->in_flight));
	json_object_set_new(doc, "requests", json_u64(st->requests));
	json_object_set_new(doc, "errors", json_u64(st->errors));
	json_object_set_new(doc, "cancelled", json_u64(st->cancelled));
	json_object_set_new(doc, "cancelled_closed", json_u64(st->cancelled_closed));
	json_object_set_new(doc, "buffers", json_u64(st->buffers));
	json_object_set_new(doc, "bytes_in_use", json_u64(st->bytes_in_use));
	json_object_set_new(doc, "bytes_high_water", json_u64(st->bytes_high_water));
	for (int i = 0; i < st->server.ndevices; i++) {
		const gpud_device_info *d = &st->server.devices[i];
		json_t *o = json_pack("{s:i, s:s, s:i, s:i, s:i, s:o, s:o}", "index", d->index,
				      "name", d->name, "cc_major", d->cc_major, "cc_minor",
				      d->cc_minor, "sm_count", d->sm_count, "memory_free",
				      json_u64(d->memory_free), "memory_total",
				      json_u64(d->memory_total));
		json_object_set_new(o, "lost", json_boolean(d->lost));
		json_object_set_new(o, "lost_message",
				    d->lost ? json_string(d->lost_message) : json_null());
		json_object_set_new(o, "runs", json_integer(d->runs));
		json_object_set_new(o, "slots", json_integer(d->slots));
		json_object_set_new(o, "runs_total", json_u64(d->runs_total));
		json_object_set_new(o, "busy_s", json_real(d->busy_s));
		json_object_set_new(o, "bytes_moving", json_u64(d->bytes_moving));
		json_object_set_new(o, "buffers", json_u64(d->buffers));
		json_object_set_new(o, "bytes_in_use", json_u64(d->bytes_in_use));
		json_object_set_new(o, "pool",
				    d->has_pool ? json_pack("{s:o, s:o, s:o, s:o}", "in_use",
							    json_u64(d->pool_in_use), "cached",
							    json_u64(d->pool_cached), "high_water",
							    json_u64(d->pool_high_water), "limit",
							    json_u64(d->pool_limit))
						: json_null());
		json_array_append_new(devs, o);
	}
	json_object_set_new(doc, "devices", devs);
	json_object_set_new(doc, "degraded", json_boolean(st->degraded));
	json_object_set_new(doc, "pool",
			    st->has_pool ? json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "in_use",
						     json_u64(st->pool_in_use), "cached",
						     json_u64(st->pool_cached), "high_water",
						     json_u64(st->pool_high_water), "limit",
						     json_u64(st->pool_limit), "allocations",
						     json_u64(st->pool_allocs), "hits",
						     json_u64(st->pool_hits))
					 : json_null());
	json_object_set_new(doc, "staging",
			    st->has_staging
				    ? json_pack("{s:i, s:i, s:o, s:o}", "buffers",
						st->staging_buffers, "free", st->staging_free,
						"chunk_bytes", json_u64(st->staging_chunk),
						"bytes_staged", json_u64(st->bytes_staged))
				    : json_null());
	json_object_set_new(doc, "lending",
			    st->has_lending
				    ? json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "spare_bytes",
						json_u64(st->lend_spare_bytes), "kept_bytes",
						json_u64(st->lend_kept_bytes), "lent_bytes",
						json_u64(st->lend_lent_bytes), "from_kept",
						json_u64(st->lend_from_kept), "from_spare",
						json_u64(st->lend_from_spare), "made",
						json_u64(st->lend_made))
				    : json_null());
	json_object_set_new(
		doc, "host_memory",
		st->has_host_memory
			? json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "used",
				    json_u64(st->host_used), "limit", json_u64(st->host_limit),
				    "high_water", json_u64(st->host_high_water), "refused",
				    json_u64(st->host_refused), "buffers",
				    json_u64(st->host_buffers), "lent", json_u64(st->host_lent),
				    "pinned", json_u64(st->host_pinned), "staging",
				    json_u64(st->host_staging), "messages",
				    json_u64(st->host_messages), "rings", json_u64(st->host_rings))
			: json_null());
	for (int i = 0; i < st->nsessions; i++) {
		const gpud_session_info *g = &st->sessions[i];
		json_array_append_new(
			sess,
			json_pack("{s:i, s:s, s:s, s:o, s:o, s:o, s:i, s:o, s:o, s:b}", "id", g->id,
				  "peer", g->peer, "tenant", g->tenant, "buffers",
				  json_u64(g->buffers), "bytes", json_u64(g->bytes), "requests",
				  json_u64(g->requests), "in_flight", g->in_flight, "regions",
				  json_u64(g->regions), "region_bytes", json_u64(g->region_bytes),
				  "this_client", g->id == gpud_server(c)->connection));
	}
	json_object_set_new(doc, "sessions", sess);
	json_object_set_new(doc, "sessions_total", json_integer(st->nsessions_total));
	for (int i = 0; i < st->nvariants; i++) {
		const gpud_variant_info *v = &st->variants[i];
		json_array_append_new(vars, json_pack("{s:s, s:s, s:i, s:i, s:i, s:o, s:o}",
						      "kernel", v->kernel, "variant", v->variant,
						      "registers", v->registers, "block", v->block,
						      "max_threads", v->max_threads, "shared_bytes",
						      json_u64(v->shared_bytes), "local_bytes",
						      json_u64(v->local_bytes)));
	}
	json_object_set_new(doc, "kernel_variants", vars);
	json_emit(doc);
}

/* What gpud left out, and why: the caller's scope. */
static void print_scope(const gpud_daemon_status *st)
{
	if (st->scope == GPUD_SCOPE_TENANT)
		printf("scope        tenant %s's own; sessions of other tenants are not shown; "
		       "admin tenants see them\n",
		       st->tenant);
	else if (st->scope == GPUD_SCOPE_ALL && st->tenant[0])
		printf("scope        every tenant (%s is in admin_tenants)\n", st->tenant);
}

/* What follows a device's name: " (sm_90, 132 SMs)" for a CUDA device; the
 * cpu backend's devices have no compute capability, and their sm_count is
 * its worker threads (", 2 worker threads"). */
static const char *device_kind(const gpud_device_info *d, char *buf, size_t len)
{
	if (d->cc_major > 0)
		snprintf(buf, len, " (sm_%d%d, %d SMs)", d->cc_major, d->cc_minor, d->sm_count);
	else
		snprintf(buf, len, ", %d worker thread%s", d->sm_count,
			 d->sm_count == 1 ? "" : "s");
	return buf;
}

/* Before hello gpud says what it is, nothing of what it does. */
static void print_before_hello(const gpud_daemon_status *st)
{
	char a[32], b[32];
	printf("scope        before hello: version, protocol and devices only; a tenant's token "
	       "shows its own\n");
	if (st->degraded)
		printf("degraded     a device is lost; the others serve\n");
	for (int i = 0; i < st->server.ndevices; i++) {
		const gpud_device_info *d = &st->server.devices[i];
		human_bytes(d->memory_free, a, sizeof(a));
		human_bytes(d->memory_total, b, sizeof(b));
		char kind[64];
		printf("device %-2d    %s%s, %s free of %s%s\n", d->index, d->name,
		       device_kind(d, kind, sizeof(kind)), a, b, d->lost ? "; LOST" : "");
	}
}

int cmd_status(int argc, char **argv)
{
	double wait_s = 0;
	int json = 0;
	gpud_daemon_status st;
	char a[32], b[32];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--wait") && i + 1 < argc)
			wait_s = parse_seconds("status", "--wait", argv[++i], 0, 86400);
		else if (!strncmp(argv[i], "--wait=", 7))
			wait_s = parse_seconds("status", "--wait", argv[i] + 7, 0, 86400);
		else if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (argv[i][0] == '-')
			die_unknown_option("status", argv[i]);
		else
			die_usage("status", "unexpected argument '%s'", argv[i]);
	}
	gpud_client *c = ctl_status(wait_s, &st);
	trace("status from gpud");
	if (json) {
		status_json(c, &st);
		ctl_leave(c);
		return 0;
	}
	printf("gpud %s at %s (protocol %u)\n", st.server.version, gpud_url(c),
	       st.server.protocol_version);
	printf("backend      %s\n", st.server.backend);
	if (st.scope == GPUD_SCOPE_BEFORE_HELLO) {
		print_before_hello(&st);
		ctl_leave(c);
		return 0;
	}
	printf("uptime       %.1f s\n", st.uptime_s);
	print_scope(&st);
	printf("connections  %u (in flight: %u requests)\n", st.connections, st.in_flight);
	printf("requests     %" PRIu64 " (%" PRIu64 " failed; %" PRIu64 " cancelled, %" PRIu64
	       " of them as their connection closed)\n",
	       st.requests, st.errors, st.cancelled, st.cancelled_closed);
	human_bytes(st.bytes_in_use, a, sizeof(a));
	human_bytes(st.bytes_high_water, b, sizeof(b));
	printf("buffers      %" PRIu64 " (%s in use, high-water %s)\n", st.buffers, a, b);
	if (st.degraded)
		printf("degraded     a device is lost; the others serve\n");
	for (int i = 0; i < st.server.ndevices; i++) {
		gpud_device_info *d = &st.server.devices[i];
		char u[32], busy[32] = "", kind[64];
		human_bytes(d->memory_free, a, sizeof(a));
		human_bytes(d->memory_total, b, sizeof(b));
		human_bytes(d->bytes_in_use, u, sizeof(u));
		if (st.uptime_s > 0)
			snprintf(busy, sizeof(busy), " (%.0f%% of uptime)",
				 100.0 * d->busy_s / st.uptime_s);
		printf("device %-2d    %s%s, %s free of %s\n", d->index, d->name,
		       device_kind(d, kind, sizeof(kind)), a, b);
		if (d->lost)
			printf("             LOST: %s\n", d->lost_message);
		printf("             %u runs in flight of %u slots, %" PRIu64
		       " done, busy %.1f s%s; "
		       "%" PRIu64 " buffers, %s%s\n",
		       d->runs, d->slots, d->runs_total, d->busy_s, busy, d->buffers, u,
		       st.scope == GPUD_SCOPE_TENANT ? " of this tenant" : "");
	}
	if (st.has_pool) {
		char cached[32], h[32], l[32];
		human_bytes(st.pool_in_use, a, sizeof(a));
		human_bytes(st.pool_cached, cached, sizeof(cached));
		human_bytes(st.pool_high_water, h, sizeof(h));
		human_bytes(st.pool_limit, l, sizeof(l));
		printf("pool         %s in use, %s cached, high-water %s, limit %s; "
		       "%" PRIu64 " allocations, %" PRIu64 " from the cache\n",
		       a, cached, h, l, st.pool_allocs, st.pool_hits);
	}
	if (st.has_staging) {
		char ch[32], tot[32];
		human_bytes(st.staging_chunk, ch, sizeof(ch));
		human_bytes(st.bytes_staged, tot, sizeof(tot));
		printf("staging      %u pinned buffers of %s (%u free), %s staged\n",
		       st.staging_buffers, ch, st.staging_free, tot);
	}
	if (st.has_lending) {
		char sp[32], kp[32], ln[32];
		human_bytes(st.lend_spare_bytes, sp, sizeof(sp));
		human_bytes(st.lend_kept_bytes, kp, sizeof(kp));
		human_bytes(st.lend_lent_bytes, ln, sizeof(ln));
		printf("lent memory  %s spare, %s kept for tenants, %s lent now; lends: %" PRIu64
		       " from kept, %" PRIu64 " from spares, %" PRIu64 " made\n",
		       sp, kp, ln, st.lend_from_kept, st.lend_from_spare, st.lend_made);
	}
	if (st.has_host_memory) {
		char h[32], l[32], p[6][32];
		const uint64_t parts[6] = {st.host_buffers, st.host_lent,     st.host_pinned,
					   st.host_staging, st.host_messages, st.host_rings};
		human_bytes(st.host_used, a, sizeof(a));
		human_bytes(st.host_limit, l, sizeof(l));
		human_bytes(st.host_high_water, h, sizeof(h));
		for (int i = 0; i < 6; i++)
			human_bytes(parts[i], p[i], sizeof(p[i]));
		printf("host memory  %s of %s (host_memory_limit), high-water %s, %" PRIu64
		       " refused; buffers %s, lent %s, pinned %s, staging %s, messages %s, "
		       "rings %s\n",
		       a, l, h, st.host_refused, p[0], p[1], p[2], p[3], p[4], p[5]);
	}
	if (st.nsessions > 0)
		printf("sessions     %-10s %-22s %-16s %8s %10s %9s %7s %10s\n", "id", "peer",
		       "tenant", "buffers", "bytes", "requests", "regions", "mapped");
	for (int i = 0; i < st.nsessions; i++) {
		gpud_session_info *g = &st.sessions[i];
		char by[32], rb[32];
		human_bytes(g->bytes, by, sizeof(by));
		human_bytes(g->region_bytes, rb, sizeof(rb));
		printf("             %-10u %-22s %-16s %8" PRIu64 " %10s %9" PRIu64 " %7" PRIu64
		       " %10s%s\n",
		       g->id, g->peer[0] ? g->peer : "-", g->tenant[0] ? g->tenant : "-",
		       g->buffers, by, g->requests, g->regions, rb,
		       g->id == gpud_server(c)->connection ? "  (this gpuctl)" : "");
	}
	if (st.nsessions_total > (unsigned)st.nsessions)
		printf("             ... and %u more\n",
		       st.nsessions_total - (unsigned)st.nsessions);
	if (st.nvariants > 0)
		printf("kernels      %-14s %-8s %5s %6s %10s %8s\n", "name", "variant", "regs",
		       "block", "shared", "local");
	for (int i = 0; i < st.nvariants; i++) {
		gpud_variant_info *v = &st.variants[i];
		printf("             %-14s %-8s %5d %6d %8" PRIu64 " B %6" PRIu64 " B\n", v->kernel,
		       v->variant, v->registers, v->block, v->shared_bytes, v->local_bytes);
	}
	ctl_leave(c);
	return 0;
}
