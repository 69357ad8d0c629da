/*
 * daemon/reload.c — SIGHUP: read the settings again and apply what can
 * change live (see reload.h for what a reload does and promises).
 *
 * A reload runs on the loop, in two steps. Prepare: build the new settings
 * (config_build: the file, then the command line's options), load the
 * tokens_file (auth_load) and, when gpud has tls+tcp:// listeners, check
 * the TLS files and make a TLS configuration for each listener; an error
 * anywhere frees what was made and refuses the reload. Commit, which cannot
 * fail: name the options that need a restart, copy the live ones into the
 * running settings, swap the tokens, give every tenant its quota, close
 * what removed tenants had, hand the TLS listeners their new configuration.
 * It reads a few small files on the loop (the config, the tokens, the PEM
 * files), as start does, once per SIGHUP.
 *
 * TLS, in nng (1.5.2, which gpud links today, and 1.12.0 alike; read in
 * their src/supplemental/tls/tls_common.c, src/sp/transport/tls/tls.c,
 * src/core/listener.c and src/core/socket.c):
 *  - an nng_tls_config is locked once a connection has used it: its setters
 *    (own_cert, ca_chain, auth_mode, ...) return NNG_EBUSY from then on. A
 *    running listener's certificate cannot be changed in place.
 *  - closing a listener closes every pipe it accepted
 *    (nni_listener_shutdown closes l_pipes), so closing the listener and
 *    making it again would drop the connections; and the port is its until
 *    then.
 *  - but NNG_OPT_TLS_CONFIG may be set on a started tls+tcp:// listener: the
 *    transport passes it to its TLS stream listener (tls_listener_set_config),
 *    which swaps its configuration under its lock, holding the new one and
 *    letting go of the old. Each connection took a reference of the
 *    configuration it was accepted with (tls_alloc), so established
 *    connections keep theirs, and the old one is freed with the last of
 *    them.
 *  - the configuration is taken when an accept is posted, not when a
 *    connection arrives: the transport keeps one TLS accept waiting, made
 *    with the configuration of that moment, so the first connection after
 *    the swap would still get the old certificate. gpud therefore connects
 *    to the listener itself (a probe: TCP only, closed at once): the kernel
 *    queues connections in order, so the probe takes that waiting accept,
 *    and the transport posts its next accept — with the new configuration —
 *    before any later client is taken. A client that connected between the
 *    swap and the probe gets the old certificate, as it would have just
 *    before the reload. The probe never says hello and shows up nowhere but
 *    in nng (a connection that ended before its SP header: nng's listener
 *    waits 100 ms before its next accept at the SP level; TCP accepts go
 *    on). The reload is over, READY=1 and its last log line, once every
 *    probe is connected (or, after PROBE_TIMEOUT_MS, given up with a
 *    warning).
 *
 * Threads: the loop only (the SIGHUP handle, the probes and their timer).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <uthash.h>
#include <utlist.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon/endpoint/endpoint.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/notify.h"
#include "daemon/reload.h"
#include "daemon/server.h"

#define PROBE_TIMEOUT_MS 5000

typedef struct reload_probe {
	uv_tcp_t tcp;
	uv_connect_t req;
	gpud_server *s;
	int slot;        /* in reload.probes */
	const char *url; /* the listener's (cfg->listen) */
	char addr[INET6_ADDRSTRLEN + 8];
} reload_probe;

static void finish(gpud_server *s);

static double unix_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *source_name(const gpud_server *s)
{
	return s->source && s->source->path
		       ? s->source->path
		       : "the command line (gpud was started without --config)";
}

/* --- probes of the TLS listeners -------------------------------------------------------------- */

static void probe_closed(uv_handle_t *h)
{
	reload_probe *p = h->data;
	gpud_server *s = p->s;
	s->reload.probes[p->slot] = NULL;
	free(p);
	if (--s->reload.nprobes == 0) {
		uv_timer_stop(&s->reload.probe_timer);
		finish(s);
	}
}

static void probe_connected(uv_connect_t *req, int status)
{
	reload_probe *p = req->data;
	if (status < 0)
		log_warn("%s: reload: could not connect to %s to hand its waiting accept the old "
			 "certificate (%s): the next connection may still get the old one",
			 p->url, p->addr, uv_strerror(status));
	uv_close((uv_handle_t *)&p->tcp, probe_closed);
}

static void on_probe_timeout(uv_timer_t *t)
{
	gpud_server *s = t->data;
	for (int i = 0; i < GPUD_MAX_LISTEN; i++) {
		reload_probe *p = s->reload.probes[i];
		if (p && !uv_is_closing((uv_handle_t *)&p->tcp))
			uv_close((uv_handle_t *)&p->tcp, probe_closed); /* connect: ECANCELED */
	}
}

/*
 * Where to reach listener l: its bound address, the loopback one of its
 * family where it is bound to every address. 0, or -1 (the reason logged).
 */
static int listener_addr(nng_listener l, const char *url, struct sockaddr_storage *ss, char *text,
			 size_t len)
{
	nng_sockaddr sa;
	int rv = nng_listener_get_addr(l, NNG_OPT_LOCADDR, &sa);
	memset(ss, 0, sizeof(*ss));
	if (rv == 0 && sa.s_family == NNG_AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = sa.s_in.sa_port;
		in->sin_addr.s_addr = sa.s_in.sa_addr ? sa.s_in.sa_addr : htonl(INADDR_LOOPBACK);
		inet_ntop(AF_INET, &in->sin_addr, text, (socklen_t)len);
	} else if (rv == 0 && sa.s_family == NNG_AF_INET6) {
		static const uint8_t any[16];
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = sa.s_in6.sa_port;
		if (memcmp(sa.s_in6.sa_addr, any, 16) == 0)
			in6->sin6_addr = in6addr_loopback;
		else
			memcpy(&in6->sin6_addr, sa.s_in6.sa_addr, 16);
		in6->sin6_scope_id = sa.s_in6.sa_scope;
		inet_ntop(AF_INET6, &in6->sin6_addr, text, (socklen_t)len);
	} else {
		log_warn("%s: reload: the listener's address is unknown (%s): the next connection "
			 "may still get the old certificate",
			 url, rv ? nng_strerror(rv) : "not an IP address");
		return -1;
	}
	size_t n = strlen(text);
	snprintf(text + n, len - n, ":%u",
		 (unsigned)ntohs(ss->ss_family == AF_INET
					 ? ((struct sockaddr_in *)ss)->sin_port
					 : ((struct sockaddr_in6 *)ss)->sin6_port));
	return 0;
}

static void probe_start(gpud_server *s, int i)
{
	struct sockaddr_storage ss;
	reload_probe *p = calloc(1, sizeof(*p));
	int rv;

	if (p == NULL) {
		log_warn("%s: reload: out of memory for its probe: the next connection may still "
			 "get the old certificate",
			 s->cfg->listen[i]);
		return;
	}
	p->s = s;
	p->slot = i;
	p->url = s->cfg->listen[i];
	if (listener_addr(s->listeners[i], p->url, &ss, p->addr, sizeof(p->addr)) != 0) {
		free(p);
		return;
	}
	uv_tcp_init(s->loop, &p->tcp);
	p->tcp.data = p;
	p->req.data = p;
	s->reload.probes[i] = p;
	s->reload.nprobes++;
	if ((rv = uv_tcp_connect(&p->req, &p->tcp, (struct sockaddr *)&ss, probe_connected)) != 0)
		probe_connected(&p->req, rv);
}

/* --- tenants ----------------------------------------------------------------------------------- */

/* What reload_tenants found: a removed tenant's connections and buffers. */
typedef struct gone {
	size_t conns, buffers, ipc_left;
	uint64_t bytes;
} gone;

/*
 * Tenant tn can no longer come over tcp:// or tls+tcp://: those of its
 * connections close (their buffers freed, their requests' replies dropped,
 * as when a client goes) and, unless one of its ipc:// connections is left,
 * its kept buffers go too.
 */
static gone close_tenant(gpud_server *s, gpud_tenant *tn)
{
	gone g = {0};
	uint32_t *ids = NULL;
	size_t n = 0;
	gpud_session *sess, *tmp;

	HASH_ITER(hh, s->buffers.sessions, sess, tmp)
	{
		if (sess->tenant != tn)
			continue;
		if (sess->local) { /* its tenant is its user, not a token */
			g.ipc_left++;
			continue;
		}
		uint32_t *more = realloc(ids, (n + 1) * sizeof(*ids));
		if (more == NULL)
			break; /* the rest close when their clients go */
		ids = more;
		ids[n++] = sess->pipe_id;
		g.buffers += sess->nbuffers;
		g.bytes += sess->bytes;
	}
	for (size_t i = 0; i < n; i++) {
		nng_pipe p = NNG_PIPE_INITIALIZER;
		sessions_close(&s->buffers, ids[i]);
		p.id = ids[i];
		nng_pipe_close(p); /* its removal event then finds no session */
	}
	g.conns = n;
	free(ids);
	if (g.ipc_left == 0)
		while (tn->kept) {
			g.buffers++;
			g.bytes += tn->kept->nbytes;
			buffers_release(&s->buffers, tn->kept);
		}
	return g;
}

/* The tenants a tcp:// hello could be under a: its tokens' names, or "anonymous". */
static int tenant_names(const auth *a, char (**names)[GPUD_TENANT_NAME])
{
	int n = 0;
	*names = calloc((size_t)(a->ntokens ? a->ntokens : 1), GPUD_TENANT_NAME);
	if (*names == NULL)
		return 0;
	if (a->ntokens == 0) {
		snprintf((*names)[n++], GPUD_TENANT_NAME, "anonymous");
		return n;
	}
	for (int i = 0; i < a->ntokens; i++) {
		int seen = 0;
		for (int j = 0; j < n && !seen; j++)
			seen = strcmp((*names)[j], a->tokens[i].tenant) == 0;
		if (!seen)
			snprintf((*names)[n++], GPUD_TENANT_NAME, "%s", a->tokens[i].tenant);
	}
	return n;
}

static void over_quota(const gpud_tenant *tn, const char *what, uint64_t has, uint64_t limit)
{
	if (limit && has > limit)
		log_about_msg(LOG_WARN, &(log_about){.tenant = tn->name},
			      "reload: tenant %s holds %llu %s, over its new %s quota of %llu: it "
			      "keeps them, and gets no more until it is under the limit",
			      tn->name, (unsigned long long)has,
			      strcmp(what, "kept_buffers") ? "bytes" : "kept buffers", what,
			      (unsigned long long)limit);
}

/* Every tenant's quota from the new settings; the removed ones' connections closed. */
static void reload_tenants(gpud_server *s, const auth *old)
{
	gpud_tenant *tn, *tmp;
	HASH_ITER(hh, s->buffers.tenants, tn, tmp)
	{
		tenant_quota q = config_quota(s->cfg, tn->name);
		if (memcmp(&q, &tn->quota, sizeof(q)) == 0)
			continue;
		tn->quota = q;
		log_about_msg(LOG_INFO, &(log_about){.tenant = tn->name},
			      "reload: tenant %s has its new quota from now on", tn->name);
		over_quota(tn, "device_bytes", tn->bytes, q.device_bytes);
		over_quota(tn, "kept_buffers", tn->nkept, q.kept_buffers);
	}

	char(*names)[GPUD_TENANT_NAME];
	int n = tenant_names(old, &names);
	for (int i = 0; i < n; i++) {
		if (auth_names_tenant(&s->auth, names[i]))
			continue;
		tn = tenants_find(&s->buffers, names[i]);
		gone g = tn ? close_tenant(s, tn) : (gone){0};
		log_about_msg(LOG_WARN, &(log_about){.tenant = names[i]},
			      "reload: tenant %s removed (no token of the new tokens_file names "
			      "it): closed %zu tcp:// connections, freed %zu buffers (%llu "
			      "bytes)%s",
			      names[i], g.conns, g.buffers, (unsigned long long)g.bytes,
			      g.ipc_left ? "; its kept buffers stay with its ipc:// connections"
					 : "");
	}
	free(names);
}

/* --- the reload -------------------------------------------------------------------------------- */

typedef struct changes {
	char live[512];
	int nrestart;
} changes;

static void on_change(void *arg, const char *name, int live)
{
	changes *c = arg;
	if (!live) {
		log_warn("reload: %s changed: needs a restart; the running value stays", name);
		c->nrestart++;
		return;
	}
	size_t n = strlen(c->live);
	snprintf(c->live + n, sizeof(c->live) - n, "%s%s", n ? ", " : "", name);
}

static void finish(gpud_server *s)
{
	reload *r = &s->reload;
	r->active = 0;
	s->metrics.reloads_ok++;
	s->metrics.reload_last_s = unix_now();
	s->metrics.reload_last_ok = 1;
	log_info("%s", r->summary);
	notify_reloaded("serving; %s", r->summary);
	if (r->again && !s->drain.on) {
		r->again = 0;
		reload_run(s);
	}
}

static void refuse(gpud_server *s, const char *why)
{
	s->metrics.reloads_refused++;
	s->metrics.reload_last_s = unix_now();
	s->metrics.reload_last_ok = 0;
	s->reload.active = 0;
	log_error("reload refused: %s; the running config stays (nothing of the new one is "
		  "applied)",
		  why);
	notify_reloaded("serving; reload refused: %s", why);
}

void reload_run(gpud_server *s)
{
	reload *r = &s->reload;
	gpud_config next;
	auth fresh;
	nng_tls_config *tls[GPUD_MAX_LISTEN] = {0};
	char err[1024];
	int ntls = 0;

	ON_LOOP("reload");
	r->active = 1;
	notify_reloading("reloading the config from %s", source_name(s));
	log_info("SIGHUP: reloading the config from %s", source_name(s));

	/* Prepare: everything read and checked; nothing applied. */
	if (config_build(&next, s->source ? s->source : &(config_source){0}, err, sizeof(err)) !=
	    0) {
		refuse(s, err);
		return;
	}
	if (auth_load(&fresh, &next, err, sizeof(err)) != 0) {
		config_free(&next);
		refuse(s, err);
		return;
	}
	for (int i = 0; i < s->nlisteners; i++) {
		if (!endpoint_tls(s->cfg->listen[i]))
			continue;
		if ((ntls == 0 && auth_tls_check(&next, err, sizeof(err)) != 0) ||
		    auth_tls_config(&next, s->cfg->listen[i], &tls[i], err, sizeof(err)) != 0) {
			for (int j = 0; j < i; j++)
				if (tls[j])
					nng_tls_config_free(tls[j]);
			auth_fini(&fresh);
			config_free(&next);
			refuse(s, err);
			return;
		}
		ntls++;
	}

	/* Commit. */
	changes ch = {.live = ""};
	config_changes(s->cfg, &next, on_change, &ch);
	config_apply_live(s->cfg, &next);
	config_free(&next);
	log_set_level((enum log_level)s->cfg->log_level);
	log_set_format((enum log_format)s->cfg->log_format);
	auth old = s->auth;
	s->auth = fresh; /* core.auth points here */
	reload_tenants(s, &old);
	auth_fini(&old);
	snprintf(r->summary, sizeof(r->summary), "config reloaded from %s: %s%s; %d tokens%s%s%s",
		 source_name(s), ch.live[0] ? "changed " : "no live option changed", ch.live,
		 s->auth.ntokens, ntls ? "; new TLS configuration on " : "",
		 ntls ? (ntls == 1 ? "1 listener" : "the tls+tcp:// listeners") : "",
		 ch.nrestart ? "; some changes need a restart (warnings above)" : "");
	if (ntls)
		auth_tls_cert_name(s->cfg->tls_cert);
	for (int i = 0; i < s->nlisteners; i++) {
		if (!tls[i])
			continue;
		int rv = nng_listener_set_ptr(s->listeners[i], NNG_OPT_TLS_CONFIG, tls[i]);
		nng_tls_config_free(tls[i]); /* the listener holds its own reference */
		if (rv != 0)
			log_error(
				"%s: reload: the listener refused its new TLS configuration (%s): "
				"it keeps the old certificate",
				s->cfg->listen[i], nng_strerror(rv));
		else
			probe_start(s, i);
	}
	if (r->nprobes > 0)
		uv_timer_start(&r->probe_timer, on_probe_timeout, PROBE_TIMEOUT_MS, 0);
	else
		finish(s);
}

static void on_sighup(uv_signal_t *h, int signum)
{
	gpud_server *s = h->data;
	(void)signum;
	if (s->drain.on) {
		log_warn("SIGHUP: gpud is stopping; the config is not reloaded");
		return;
	}
	if (s->reload.active) {
		if (!s->reload.again)
			log_info("SIGHUP during a reload: reloading once more when it is over");
		s->reload.again = 1;
		return;
	}
	reload_run(s);
}

void reload_init(gpud_server *s)
{
	reload *r = &s->reload;
	uv_signal_init(s->loop, &r->sighup);
	r->sighup.data = s;
	uv_signal_start(&r->sighup, on_sighup, SIGHUP);
	uv_timer_init(s->loop, &r->probe_timer);
	r->probe_timer.data = s;
	r->on = 1;
}

void reload_close(gpud_server *s)
{
	reload *r = &s->reload;
	if (!r->on)
		return;
	r->on = 0;
	uv_close((uv_handle_t *)&r->sighup, NULL);
	uv_close((uv_handle_t *)&r->probe_timer, NULL);
	/* libuv gives SIGHUP its default action back (the end of the process)
	 * as its last handle closes; gpud is exiting by itself by now. */
	signal(SIGHUP, SIG_IGN);
}
