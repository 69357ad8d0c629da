/*
 * daemon/reload.h — SIGHUP: the settings read again from where gpud took
 * them at start (the config file of --config, then the command line's
 * options over it), and what of them can change while gpud runs applied
 * without dropping a connection, a buffer or a job, as nginx's and
 * systemd's reload do: the tokens (tokens_file), the tenants' quotas
 * ([quota], [tenant NAME]), admin_tenants, the log's level and format, the
 * TLS certificate, key and CA of tls+tcp:// listeners, and the options the
 * config table marks live (daemon/config.c, OPT_LIVE). Every other option
 * that changed is named in the log as needing a restart and keeps its
 * running value.
 *
 * A reload is all or nothing: the config file, the tokens_file and the TLS
 * files are all read and checked first, and any error refuses the whole of
 * it (the log says which file and line; the running settings stay). Then:
 *  - tenants a tcp:// or tls+tcp:// hello can no longer be (their tokens
 *    went) lose those connections — closed, their buffers freed — and,
 *    unless an ipc:// connection of theirs (the user of that name) is left,
 *    their kept buffers; each such tenant's line in the log says what went;
 *  - every tenant's quota is its new one from then on: what it holds over a
 *    lowered limit stays (nothing is taken away), and it gets nothing more
 *    until it is under the limit again (a warning names it);
 *  - each tls+tcp:// listener takes a new TLS configuration for its next
 *    connections; the established ones keep theirs (reload.c says how nng
 *    does that).
 *
 * systemd: RELOADING=1 when a reload starts, READY=1 when it is over
 * (applied or refused; daemon/notify.h). A SIGHUP while a reload waits for
 * its TLS listeners makes one more reload when it is over (several make
 * one); a SIGHUP while gpud stops is logged and ignored; one that comes
 * while gpud starts is handled once it serves.
 *
 * Owns: the SIGHUP handle, the state of a reload in progress and its
 * probes of the TLS listeners. The counts /metrics shows are in the
 * server's metrics (daemon/metrics.h). Threads: the loop only.
 */
#ifndef GPUD_RELOAD_H
#define GPUD_RELOAD_H

#include <uv.h>

#include "daemon/config.h"

struct gpud_server;
struct reload_probe;

typedef struct reload {
	uv_signal_t sighup;
	uv_timer_t probe_timer; /* gives up on probes that do not connect */
	int on;                 /* the handles are initialised and not closed */
	int active;             /* a reload waits for its probes */
	int again;              /* a SIGHUP came meanwhile */
	int nprobes;
	struct reload_probe *probes[GPUD_MAX_LISTEN];
	char summary[768]; /* the log line that ends the reload */
} reload;

/* Handles SIGHUP on s's loop from now on (server_start, before the backend opens). */
void reload_init(struct gpud_server *s);
/* Closes the handles (teardown). */
void reload_close(struct gpud_server *s);
/* Reloads now, as on SIGHUP (on the loop). */
void reload_run(struct gpud_server *s);

#endif
