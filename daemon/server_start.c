/*
 * daemon/server_start.c — gpud's start-up, as a short list of named steps
 * (start_steps): the state, the checks of the config's files, the devices
 * and the core, the nng socket, the three ways in (nng's listeners by
 * their endpoint kind, the region socket, the request rings), the
 * contexts, readiness; and the hooks start-up hands the parts it starts
 * (the rings' way in, the hello guard's close, /metrics and readiness).
 * server_start undoes what a failed step leaves.
 *
 * Threads: the main thread, before the loop runs (loop_thread_set marks
 * the loop's from the registry's load on); the hooks run on the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "daemon/endpoint/endpoint.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/metrics_text.h"
#include "daemon/notify.h"
#include "daemon/server.h"
#include "daemon/server_internal.h"
#include "daemon/verbs/run.h"

/* The request rings' way in: the same path as an injected message. */
static int ring_deliver(void *arg, uint32_t pipe_id, nng_msg *m,
			void (*done)(void *done_arg, nng_msg *reply), void *done_arg)
{
	gpud_server *s = arg;
	gpud_session *sess = sessions_get(&s->buffers, pipe_id, 0);
	return server_inject(s, pipe_id, sess ? sess->peer_uid : -1, m, done, done_arg);
}

static int ring_register(void *arg, gpud_session *sess, void *base, size_t size, int efd, char *err,
			 size_t errlen)
{
	gpud_server *s = arg;
	return ring_attach(&s->rings, sess, base, size, 1, efd, err, errlen);
}

/* The hello guard's close of a connection that kept failing hello. */
static void close_conn(void *arg, uint32_t pipe_id)
{
	nng_pipe p = NNG_PIPE_INITIALIZER;
	(void)arg;
	p.id = pipe_id;
	nng_pipe_close(p); /* gone already: nothing to do */
}

/* /metrics (daemon/observe.c), on the loop. */
static const char *why_not_ready(void *arg, char *buf, size_t len)
{
	gpud_server *s = arg;
	return health_why_not(&s->health, 0, buf, len);
}

static const char *why_no_ping(void *arg, char *buf, size_t len)
{
	gpud_server *s = arg;
	return health_why_not(&s->health, 1, buf, len);
}

static int count_lost(void *arg)
{
	gpud_server *s = arg;
	return s->devices.n - s->devices.nlive;
}

static void render_metrics(void *arg, FILE *out)
{
	gpud_server *s = arg;
	char why[512];
	metrics_page p = {.m = &s->metrics,
			  .ready = atomic_load(&s->observe.state) == OBSERVE_READY &&
				   why_not_ready(s, why, sizeof(why)) == NULL,
			  .backend_lost = s->fatal != NULL,
			  .nlisteners = s->nlisteners,
			  .listen = (const char *const *)s->cfg->listen};
	for (int i = 0; i < s->nlisteners && i < GPUD_MAX_LISTEN; i++)
		p.listener_up[i] = health_listener_up(&s->health, i);
	metrics_text(out, &s->core, &p);
}

/*
 * The host memory budget: host_memory_limit, or (auto) a share of the
 * cgroup's limit or of the machine's memory. A limit set above the cgroup's
 * is kept, with a warning: the kernel would end gpud before it refuses.
 */
static int host_budget(gpud_server *s, const gpud_config *cfg, char *err, size_t errlen)
{
	uint64_t limit = cfg->host_memory_limit, cg;
	const char *file;
	char why[256] = "host_memory_limit", a[32], b[32];
	if (limit == 0 && hostmem_default_limit("", &limit, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "host_memory_limit = auto: %s; set host_memory_limit", why);
		return -1;
	}
	hostmem_init(&s->hostmem, limit);
	hostmem_format(limit, a, sizeof(a));
	log_info("host memory limit: %s (%s)", a, why);
	if (cfg->host_memory_limit && hostmem_cgroup_limit("", &cg, &file) == 0 && limit > cg) {
		hostmem_format(cg, b, sizeof(b));
		log_warn(
			"host_memory_limit %s is above the cgroup's %s %s: the kernel may end gpud "
			"before gpud refuses what clients ask",
			a, file, b);
	}
	return 0;
}

static void start_state(gpud_server *s, uv_loop_t *loop, gpud_config *cfg)
{
	memset(s, 0, sizeof(*s));
	s->regions.fd = -1;
	s->loop = loop;
	s->cfg = cfg;
	s->stats.started_ns = now_ns();
	pthread_mutex_init(&s->qlock, NULL);
	peers_init(&s->peers);
	/* SIGHUP from now on: one during the backend's warm-up is handled
	 * once the loop runs, never the default action (the end of gpud). */
	reload_init(s);
	notify_status("starting: opening the %s backend, loading and self-testing its kernels",
		      cfg->backend);
}

/* Tokens and TLS files first: a tokens_file or tls_key gpud refuses stops
 * it before it binds anything (and before the backend's warm-up), as a
 * config error. 0 or SERVER_BAD_CONFIG. */
static int start_checks(gpud_server *s, const gpud_config *cfg, char *err, size_t errlen)
{
	if (auth_load(&s->auth, cfg, err, errlen) != 0)
		return SERVER_BAD_CONFIG;
	if (auth_socket_group_check(cfg, err, errlen) != 0) {
		auth_fini(&s->auth);
		return SERVER_BAD_CONFIG;
	}
	for (int i = 0; i < cfg->nlisten; i++)
		if (endpoint_tls(cfg->listen[i])) {
			if (auth_tls_check(cfg, err, errlen) != 0) {
				auth_fini(&s->auth);
				return SERVER_BAD_CONFIG;
			}
			break;
		}
	return 0;
}

/* The devices and the state requests reach through the core. */
static int start_core(gpud_server *s, uv_loop_t *loop, gpud_config *cfg, char *err, size_t errlen)
{
	if (host_budget(s, cfg, err, errlen) != 0 ||
	    devices_open(&s->devices, loop, cfg, &s->hostmem, err, errlen) != 0)
		return -1;
	s->devices.on_lost = server_on_device_lost;
	s->devices.owner = s;
	buffers_init(&s->buffers, &s->devices);
	s->buffers.on_session_close = server_on_session_close;
	s->buffers.hook_arg = s;
	/* Custom kernels compile once, on the first device (their code loads
	 * into every device's context: cudaLibraryLoadData). */
	registry_init(&s->registry, cfg, &s->devices.dev[0].be, &s->buffers);
	s->core = (gpud_core){.loop = loop,
			      .cfg = cfg,
			      .devices = &s->devices,
			      .buffers = &s->buffers,
			      .regions = &s->regions,
			      .registry = &s->registry,
			      .auth = &s->auth,
			      .guard = &s->guard,
			      .stats = &s->stats,
			      .metrics = &s->metrics,
			      .host = &s->hostmem,
			      .batch = &s->batch};
	batcher_init(&s->batch, loop, run_batch_flush, &s->core);
	return 0;
}

/* Way in 1: nng's listeners, one per listen URL, each made by its
 * endpoint kind (daemon/endpoint/); then what the config leaves open on
 * them, and their socket files' mode and group. 0, -1 or SERVER_BAD_CONFIG. */
static int start_listeners(gpud_server *s, const gpud_config *cfg, char *err, size_t errlen)
{
	for (int i = 0; i < cfg->nlisten; i++) {
		if (endpoint_listen(s->sock, cfg, cfg->listen[i], server_request_cap(cfg),
				    &s->listeners[i], err, errlen) != 0)
			return -1;
		s->nlisteners++;
	}
	for (int i = 0; i < cfg->nlisten; i++)
		if (!endpoint_local(cfg->listen[i]) && s->auth.ntokens == 0)
			log_warn("%s: no tokens_file, so every tcp:// client is tenant 'anonymous' "
				 "and they share one another's buffers",
				 cfg->listen[i]);
	for (int i = 0; i < s->nlisteners; i++) {
		const char *path = endpoint_path(cfg->listen[i]);
		if (path && auth_socket_access(cfg, path, err, errlen) != 0)
			return SERVER_BAD_CONFIG;
	}
	return 0;
}

/* Way in 2: the region socket (host regions, lent memory; daemon/regions.h).
 * 0, -1 or SERVER_BAD_CONFIG. */
static int start_regions(gpud_server *s, uv_loop_t *loop, const gpud_config *cfg, char *err,
			 size_t errlen)
{
	char shm[sizeof(cfg->shm_socket)];
	config_shm_path(cfg, shm, sizeof(shm));
	/* Host memory is pinned through the first device, for every device
	 * (cuda: cudaHostRegisterPortable). */
	if (regions_start(&s->regions, loop, &s->devices.dev[0].be, &s->buffers, shm,
			  cfg->shm_max_bytes, err, errlen) != 0)
		return -1;

	if (s->regions.fd >= 0 && auth_socket_access(cfg, shm, err, errlen) != 0)
		return SERVER_BAD_CONFIG;
	return 0;
}

/* Way in 3: the request rings (daemon/ring.h), registered through the
 * region socket; their entries take the injected path. */
static void start_rings(gpud_server *s, uv_loop_t *loop, const gpud_config *cfg)
{
	ring_server_init(&s->rings, loop, (uint64_t)cfg->ring_spin_us, server_request_cap(cfg),
			 ring_deliver, s);
	s->rings.host = &s->hostmem;
	if (cfg->ring) {
		s->regions.on_ring = ring_register;
		s->regions.ring_arg = s;
	}
}

/* Ready, as long as every listener answers gpud's own hello, the loop
 * runs and no device is lost (daemon/health.h). */
static int start_ready(gpud_server *s, uv_loop_t *loop, const gpud_config *cfg, char *err,
		       size_t errlen)
{
	s->core.health = &s->health;
	if (health_start(&s->health, loop, cfg, s->listeners, s->nlisteners, count_lost, s, err,
			 errlen) != 0)
		return -1;
	s->observe.why_not = why_not_ready;
	s->observe.why_arg = s;
	notify_watchdog_gate(why_no_ping, s);
	observe_set_state(&s->observe, OBSERVE_READY);
	return 0;
}

/* Start-up, in order; server_start undoes what a failed step leaves. */
static int start_steps(gpud_server *s, uv_loop_t *loop, gpud_config *cfg, char *err, size_t errlen)
{
	int rv;

	start_state(s, loop, cfg);
	if ((rv = start_checks(s, cfg, err, errlen)) != 0)
		return rv;
	guard_init(&s->guard, loop, close_conn, s);
	/* The health endpoint answers while the backend warms up. */
	rv = observe_start(&s->observe, loop, cfg->metrics_listen, render_metrics, s, err, errlen);
	if (rv != 0 || start_core(s, loop, cfg, err, errlen) != 0 ||
	    server_socket_open(s, loop, cfg, err, errlen) != 0)
		return -1;
	/* The ways in: nng's listeners, the region socket, the request rings. */
	if ((rv = start_listeners(s, cfg, err, errlen)) != 0 ||
	    (rv = start_regions(s, loop, cfg, err, errlen)) != 0)
		return rv;
	start_rings(s, loop, cfg);
	regions_lend_start(&s->regions, (size_t)cfg->lend_unit, (size_t)cfg->lend_spare,
			   (size_t)cfg->lend_keep, (unsigned)cfg->lend_keep_s,
			   (unsigned)cfg->lend_claim_s);

	registry_load(&s->registry);
	/* From here on the loop owns the state (start-up itself may wait). */
	loop_thread_set();
	memtrim_start(&s->trim, loop, &s->hostmem, &s->sending);
	if (server_contexts_start(s, cfg, err, errlen) != 0)
		return -1;
	return start_ready(s, loop, cfg, err, errlen);
}

/* Starts gpud; on failure leaves no socket file behind (nng unlinks its ipc://
 * paths on close; the region socket's is ours). */
int server_start(gpud_server *s, uv_loop_t *loop, gpud_config *cfg, char *err, size_t errlen)
{
	int rv = start_steps(s, loop, cfg, err, errlen);
	if (rv != 0) {
		health_stop(&s->health, 3000);
		observe_stop(&s->observe);
		if (nng_socket_id(s->sock) > 0)
			nng_close(s->sock);
		if (s->regions.fd >= 0)
			regions_stop(&s->regions);
	}
	return rv;
}
