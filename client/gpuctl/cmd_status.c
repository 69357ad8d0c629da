/*
 * client/gpuctl/cmd_status.c — gpuctl status [--wait SECONDS]: the daemon's
 * state (backend, devices, memory pool, staging buffers, connections,
 * loaded kernel variants); --wait retries until gpud answers, for scripts
 * that start it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "client/gpuctl/gpuctl.h"

int cmd_status(int argc, char **argv)
{
	double wait_s = 0;
	gpud_daemon_status st;
	gpud_status rc;
	char a[32], b[32];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--wait") && i + 1 < argc)
			wait_s = parse_seconds("status", "--wait", argv[++i], 0, 86400);
		else if (!strncmp(argv[i], "--wait=", 7))
			wait_s = parse_seconds("status", "--wait", argv[i] + 7, 0, 86400);
		else if (argv[i][0] == '-')
			die_unknown_option("status", argv[i]);
		else
			die_usage("status", "unexpected argument '%s'", argv[i]);
	}
	gpud_client *c = ctl_connect_wait(wait_s);
	if ((rc = gpud_status_get(c, &st)) != GPUD_OK)
		die_call(c, rc, NULL);
	printf("gpud %s at %s (protocol %u)\n", st.server.version, gpud_url(c),
	       st.server.protocol_version);
	printf("backend      %s\n", st.server.backend);
	printf("uptime       %.1f s\n", st.uptime_s);
	printf("connections  %u (in flight: %u requests)\n", st.connections, st.in_flight);
	printf("requests     %" PRIu64 " (%" PRIu64 " failed)\n", st.requests, st.errors);
	human_bytes(st.bytes_in_use, a, sizeof(a));
	human_bytes(st.bytes_high_water, b, sizeof(b));
	printf("buffers      %" PRIu64 " (%s in use, high-water %s)\n", st.buffers, a, b);
	for (int i = 0; i < st.server.ndevices; i++) {
		gpud_device_info *d = &st.server.devices[i];
		human_bytes(d->memory_free, a, sizeof(a));
		human_bytes(d->memory_total, b, sizeof(b));
		printf("device %d     %s (sm_%d%d, %d SMs), %s free of %s\n", d->index, d->name,
		       d->cc_major, d->cc_minor, d->sm_count, a, b);
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
	if (st.nsessions > 0)
		printf("sessions     %-10s %-22s %8s %10s %9s %7s %10s\n", "id", "peer", "buffers",
		       "bytes", "requests", "regions", "mapped");
	for (int i = 0; i < st.nsessions; i++) {
		gpud_session_info *g = &st.sessions[i];
		char by[32], rb[32];
		human_bytes(g->bytes, by, sizeof(by));
		human_bytes(g->region_bytes, rb, sizeof(rb));
		printf("             %-10u %-22s %8" PRIu64 " %10s %9" PRIu64 " %7" PRIu64
		       " %10s%s\n",
		       g->id, g->peer[0] ? g->peer : "-", g->buffers, by, g->requests, g->regions,
		       rb, g->id == gpud_server(c)->connection ? "  (this gpuctl)" : "");
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
	gpud_close(c);
	return 0;
}
