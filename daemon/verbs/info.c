/*
 * daemon/verbs/info.c — what gpud is and has: hello (which also fixes the
 * connection's tenant and claims memory lent before it, daemon/claims.h),
 * status (as the caller may see it: a tenant its own, an administrator
 * everything, before hello what gpud is; a status may carry the
 * connection's hello, answered first), any request's carried hello
 * (Request.carried_hello: said before the request), and the kernels a
 * tenant may run. Loop thread.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "daemon/health.h"
#include "daemon/hello_guard.h"
#include "daemon/log.h"
#include "daemon/regions.h"
#include "daemon/verbs/verbs.h"
#include "proto/wire.h"

/* --- hello, status, kernels ----------------------------------------------- */

/* Every device: what it is; with full (status), gpud's use of it too, and
 * with own, of gpud's buffers there only own's (a tenant's status). The
 * pools and staging of pb[i] point into pool[i], staging[i]. */
typedef struct device_infos {
	backend_device d[GPUD_DEVICES_MAX];
	Gpud__Device pb[GPUD_DEVICES_MAX], *ptrs[GPUD_DEVICES_MAX];
	Gpud__MemoryPool pool[GPUD_DEVICES_MAX];
	Gpud__Staging staging[GPUD_DEVICES_MAX];
} device_infos;

static int fill_devices(device_set *ds, device_infos *di, int full, const gpud_tenant *own)
{
	int n = 0;
	for (int i = 0; i < ds->n; i++) {
		gpud_device *dev = &ds->dev[i];
		gpud_backend *be = &dev->be;
		backend_device *d = &di->d[n];
		Gpud__Device *pb = &di->pb[n];
		memset(d, 0, sizeof(*d));
		if (be->ops->devices(be, d, 1) != 1) {
			d->index = dev->id;
			snprintf(d->name, sizeof(d->name), "%s", ds->backend);
		}
		gpud__device__init(pb);
		pb->index = dev->id;
		pb->name = d->name;
		pb->cc_major = d->cc_major;
		pb->cc_minor = d->cc_minor;
		pb->memory_total = d->memory_total;
		pb->memory_free = d->memory_free;
		pb->sm_count = d->sm_count;
		pb->lost = dev->lost;
		if (full) {
			pb->lost_message = dev->lost_msg;
			pb->runs = dev->runs;
			pb->bytes_moving = dev->bytes_moving;
			pb->buffers = own ? own->dev_nbuffers[dev->slot] : dev->nbuffers;
			pb->bytes_in_use = own ? own->dev_bytes[dev->slot] : dev->bytes;
			pb->busy_s = device_busy_s(dev);
			pb->runs_total = dev->runs_total;
			pb->slots = (uint32_t)dev->sched.slots;
			backend_pool_stats ps;
			if (be->ops->pool_stats && be->ops->pool_stats(be, &ps) == 0) {
				Gpud__MemoryPool *p = &di->pool[n];
				gpud__memory_pool__init(p);
				p->in_use = ps.in_use;
				p->cached = ps.cached;
				p->high_water = ps.high_water;
				p->limit = ps.limit;
				p->allocs = ps.allocs;
				p->hits = ps.hits;
				pb->pool = p;
			}
			backend_staging_stats ss;
			if (be->ops->staging_stats && be->ops->staging_stats(be, &ss) == 0) {
				Gpud__Staging *g = &di->staging[n];
				gpud__staging__init(g);
				g->buffers = ss.buffers;
				g->chunk = ss.chunk;
				g->free = ss.free;
				g->bytes_staged = ss.bytes_staged;
				pb->staging = g;
			}
		}
		di->ptrs[n] = pb;
		n++;
	}
	return n;
}

#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(METRICS_AUTH_FAILURES == GUARD_FAILURE_KINDS, "metrics.h's auth_failures");

/*
 * A failed hello of kind f (daemon/hello_guard.h): counted; the connection's
 * GUARD_CONN_FAILURES-th is answered, and then the connection is closed.
 */
static void fail_hello(gpud_request *r, guard_failure f, const char *msg)
{
	gpud_core *core = r->core;
	uint32_t pipe_id = r->pipe_id;
	/* the one that reaches the limit closes it (any later, before the close, are answered) */
	int close = ++r->session->failed_hellos == GUARD_CONN_FAILURES;

	core->metrics->auth_failures[f]++;
	if (close)
		core->metrics->auth_closed++;
	request_fail(r, ST_UNAUTHENTICATED, "%s%s", msg,
		     close ? "; gpud closes this connection after its " STR(
				     GUARD_CONN_FAILURES) " failed hellos"
			   : "");
	if (close)
		guard_close_later(core->guard, pipe_id, now_ns());
}

/*
 * The memory this connection's process was lent before hello under h's
 * claim, made the connection's (daemon/claims.h); r->claimed counts it.
 * 0, or -1 after replying: a claim that finds nothing fails the hello.
 */
static int hello_claim(gpud_request *r, const Gpud__HelloRequest *h)
{
	gpud_session *sess = r->session;
	region_server *rs = r->core->regions;
	char err[512];
	if (h->claim.len == 0)
		return 0;
	if (h->claim.len != GPUD_SHM_KEY_LEN) {
		request_fail(r, ST_INVALID, "hello: claim is a %d-byte nonce, got %zu bytes",
			     GPUD_SHM_KEY_LEN, h->claim.len);
		return -1;
	}
	int n = 0;
	if (rs->lending && sess->local)
		n = claims_take(&rs->claims, rs, sess, h->claim.data, err, sizeof(err));
	if (n < 0) {
		request_fail(r, ST_TOO_LARGE, "hello: %s", err);
		return -1;
	}
	if (n == 0) {
		request_fail(
			r, ST_NOT_FOUND,
			"hello: no memory lent before hello under this claim to this process "
			"(pid %lld) as tenant %s (over ipc://; each such lend is given back %d s "
			"after it)",
			(long long)sess->peer_pid, sess->tenant->name,
			rs->claims.timeout_ms / 1000);
		return -1;
	}
	r->claimed = (uint32_t)n;
	request_log(r, LOG_DEBUG, "hello claimed %d host regions lent before it", n);
	return 0;
}

/*
 * Who this connection is (daemon/auth.h): fixed by its first hello. 0, or
 * -1 after replying. h: the hello (a Request's, or a status's). A peer
 * that backs off after failed hellos is refused
 * before its token is looked at. A later hello on the connection is checked
 * as the first was (a bad token is a failed hello, counted and throttled
 * alike) and changes nothing: its token must be of the connection's tenant.
 */
static int assign_tenant_or_fail(gpud_request *r, const Gpud__HelloRequest *h)
{
	gpud_session *sess = r->session;
	char name[GPUD_TENANT_NAME], err[512], key[GUARD_KEY_LEN];

	guard_key(sess->peer, key, sizeof(key));
	uint32_t wait = guard_check(r->core->guard, key, r->t0_ns);
	if (wait) {
		snprintf(err, sizeof(err),
			 "hello: too many failed hellos from %s, try again in %u s (each wrong "
			 "token doubles the wait; this hello's token was not looked at)",
			 key, wait);
		fail_hello(r, GUARD_BACKOFF, err);
		return -1;
	}
	dstatus st = auth_tenant(r->core->auth, sess->local, sess->peer_uid, sess->peer_user,
				 h->token, name, sizeof(name), err, sizeof(err));
	if (st == ST_UNAUTHENTICATED) {
		uint32_t backoff = guard_failed(r->core->guard, key, r->t0_ns);
		size_t n = strlen(err);
		if (backoff)
			snprintf(
				err + n, sizeof(err) - n,
				"; too many failed hellos from %s: its hellos are refused for %u s",
				key, backoff);
		fail_hello(r, GUARD_TOKEN, err);
		return -1;
	}
	if (st != ST_OK) {
		request_fail(r, st, "%s", err);
		return -1;
	}
	if (sess->tenant) {
		if (strcmp(sess->tenant->name, name) == 0)
			return hello_claim(r, h);
		request_fail(r, ST_UNAUTHENTICATED,
			     "hello: this connection is tenant %s since its first hello; a hello "
			     "cannot change its tenant (open another connection with the other "
			     "token)",
			     sess->tenant->name);
		return -1;
	}
	tenant_quota q = config_quota(r->core->cfg, name);
	if ((sess->tenant = tenants_get(r->core->buffers, name, &q)) == NULL) {
		request_fail(r, ST_OUT_OF_MEMORY, "hello: out of memory");
		return -1;
	}
	if (sess->local && sess->peer_uid >= 0)
		sess->tenant->local_uid = sess->peer_uid; /* lends before hello (daemon/claims.h) */
	request_log(r, LOG_INFO, "connection from %s is tenant %s", sess->peer, name);
	return hello_claim(r, h);
}

/* What hello answers a connection whose tenant it fixed (verb_hello, and
 * a status that carries a hello); the devices are the caller's. */
static void hello_answer(gpud_request *r, const Gpud__HelloRequest *h, Gpud__HelloResponse *hello)
{
	hello->server_version = GPUD_VERSION;
	hello->protocol_version = GPUD_PROTOCOL_VERSION;
	hello->tenant = r->session->tenant->name;
	hello->backend = (char *)r->core->devices->backend;
	hello->max_message_size = r->core->cfg->max_message_size;
	hello->message_size = r->session->tenant->quota.message_size;
	hello->connection = r->pipe_id;
	hello->instance = r->core->buffers->instance;
	hello->claimed = r->claimed;
	/* Host regions need the peer's uid, so only over a local endpoint (ipc://). */
	if (r->core->regions->fd >= 0 && r->session->local) {
		hello->shm_socket = r->core->regions->path;
		hello->session_key.data = r->session->key;
		hello->session_key.len = sizeof(r->session->key);
	}
	if (h->client && h->client[0])
		request_log(r, LOG_DEBUG, "hello from %s", LOG_CLIP(h->client));
}

/*
 * gpud's own hello through one of its listeners (daemon/health.h): with
 * this run's probe key it is answered with what gpud is, no tenant, and the
 * connection is left out of status; a wrong key is a failed hello.
 */
static void hello_probe(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__HelloResponse hello = GPUD__HELLO_RESPONSE__INIT;
	const ProtobufCBinaryData *k = &r->req->hello->probe;

	if (r->core->health == NULL || !health_probe_key_ok(r->core->health, k->data, k->len)) {
		fail_hello(r, GUARD_TOKEN, "hello: a probe key that is not gpud's own");
		return;
	}
	if (r->session->tenant == NULL)
		sessions_mark_probe(r->core->buffers, r->session);
	hello.server_version = GPUD_VERSION;
	hello.protocol_version = GPUD_PROTOCOL_VERSION;
	hello.backend = (char *)r->core->devices->backend;
	hello.max_message_size = r->core->cfg->max_message_size;
	hello.connection = r->pipe_id;
	hello.instance = r->core->buffers->instance;
	resp.body_case = GPUD__RESPONSE__BODY_HELLO;
	resp.hello = &hello;
	request_reply(r, &resp, NULL, 0);
}

void verb_hello(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__HelloResponse hello = GPUD__HELLO_RESPONSE__INIT;
	device_infos di;

	if (r->req->hello->probe.len) {
		hello_probe(r);
		return;
	}
	if (assign_tenant_or_fail(r, r->req->hello) != 0)
		return;
	hello_answer(r, r->req->hello, &hello);
	hello.n_devices = (size_t)fill_devices(r->core->devices, &di, 0, NULL);
	hello.devices = di.ptrs;
	resp.body_case = GPUD__RESPONSE__BODY_HELLO;
	resp.hello = &hello;
	request_reply(r, &resp, NULL, 0);
}

/*
 * Who a status reply is for. Other tenants' connections, peers, names and
 * holdings are theirs: a tenant sees its own, an administrator
 * (admin_tenants) everything, a connection before hello (a monitor, a
 * client without a token) only what gpud is. What is about the devices and
 * gpud's shared memory (load, busy time, free memory, pool, staging, lent
 * memory) names nobody and stays for tenants: they need it to understand
 * their own waits and refusals.
 */
static Gpud__StatusResponse__Scope status_scope(const gpud_request *r)
{
	const gpud_tenant *tn = r->session->tenant;
	if (tn == NULL)
		return GPUD__STATUS_RESPONSE__SCOPE__SCOPE_BEFORE_HELLO;
	if (config_is_admin(r->core->cfg, tn->name))
		return GPUD__STATUS_RESPONSE__SCOPE__SCOPE_ALL;
	return GPUD__STATUS_RESPONSE__SCOPE__SCOPE_TENANT;
}

/* gpud's counts, every tenant's together (an administrator's status). */
static void status_counts_all(const gpud_core *core, Gpud__StatusResponse *st)
{
	st->requests = core->stats->requests;
	st->errors = core->stats->errors;
	st->cancelled = core->stats->cancelled;
	st->cancelled_closed = core->stats->cancelled_closed;
	st->connections = (uint32_t)sessions_count_clients(core->buffers);
	st->in_flight = core->stats->in_flight;
	st->buffers = core->buffers->count;
	st->bytes_in_use = core->buffers->bytes;
	st->bytes_high_water = core->buffers->high_water;
}

/*
 * The same figures of tenant tn alone: its connections; its requests in
 * flight (tn->in_flight counts them also once their connection closed, but
 * not hello and status, which its connections' lists hold); its requests
 * answered (its /metrics counters) and in flight, as gpud's count requests
 * from their arrival; its buffers, kept ones too.
 */
static void status_counts_own(const gpud_core *core, const gpud_tenant *tn,
			      Gpud__StatusResponse *st)
{
	gpud_session *g, *tmp;
	const gpud_request *q;
	st->in_flight = tn->in_flight;
	HASH_ITER(hh, core->buffers->sessions, g, tmp)
	{
		if (g->tenant != tn)
			continue;
		st->connections++;
		DL_FOREACH2(g->live, q, snext)
		{
			if (q->tenant == NULL)
				st->in_flight++;
		}
	}
	const tenant_metrics *m = &tn->metrics;
	for (int v = 0; v < METRICS_VERBS; v++)
		for (int c = 0; c < METRICS_STATUSES; c++) {
			st->requests += m->requests[v][c];
			if (c != ST_OK)
				st->errors += m->requests[v][c];
			if (c == ST_CANCELLED)
				st->cancelled += m->requests[v][c];
		}
	st->requests += st->in_flight;
	st->cancelled_closed = m->cancelled_closed;
	st->buffers = tn->nbuffers;
	st->bytes_in_use = tn->bytes;
	st->bytes_high_water = tn->high_water;
}

/* The cuda backend's loaded kernel variants (built-in kernels only). */
static size_t status_variants(gpud_request *r, backend_variant *bv, Gpud__KernelVariant *kv,
			      Gpud__KernelVariant **kvp, int max)
{
	gpud_backend *be = &r->core->devices->dev[0].be; /* every device loads the same */
	int nv = be->ops->variants && !r->req->status->without_variants
			 ? be->ops->variants(be, bv, max)
			 : 0;
	for (int i = 0; i < nv; i++) {
		gpud__kernel_variant__init(&kv[i]);
		kv[i].kernel = bv[i].kernel;
		kv[i].variant = bv[i].variant;
		kv[i].registers = bv[i].registers;
		kv[i].shared_bytes = bv[i].shared_bytes;
		kv[i].local_bytes = bv[i].local_bytes;
		kv[i].block = bv[i].block;
		kv[i].max_threads = bv[i].max_threads;
		kvp[i] = &kv[i];
	}
	return (size_t)nv;
}

/* Connections in pipe order (uthash keeps insertion order): every one, or
 * only own's. sess and sptr have room for all. */
static size_t status_sessions(const gpud_core *core, const gpud_tenant *own, Gpud__Session *sess,
			      Gpud__Session **sptr)
{
	gpud_session *g, *tmp;
	size_t i = 0;
	HASH_ITER(hh, core->buffers->sessions, g, tmp)
	{
		if ((own && g->tenant != own) || g->probe)
			continue;
		gpud__session__init(&sess[i]);
		sess[i].id = g->pipe_id;
		sess[i].peer = g->peer;
		sess[i].tenant = g->tenant ? g->tenant->name : "";
		sess[i].buffers = g->nbuffers;
		sess[i].bytes = g->bytes;
		sess[i].requests = g->requests;
		sess[i].in_flight = g->in_flight;
		sess[i].regions = g->nregions;
		sess[i].region_bytes = g->region_bytes;
		sptr[i] = &sess[i];
		i++;
	}
	return i;
}

/* The status as r's connection may see it; hello: the answer to the hello
 * it carried, or NULL. */
static void status_reply(gpud_request *r, Gpud__HelloResponse *hello)
{
	gpud_core *core = r->core;
	device_set *ds = core->devices;
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__StatusResponse st = GPUD__STATUS_RESPONSE__INIT;
	Gpud__StatusResponse__Scope scope = status_scope(r);
	const gpud_tenant *tn = r->session->tenant;
	const gpud_tenant *own = scope == GPUD__STATUS_RESPONSE__SCOPE__SCOPE_TENANT ? tn : NULL;
	int served = scope != GPUD__STATUS_RESPONSE__SCOPE__SCOPE_BEFORE_HELLO;
	device_infos *di = malloc(sizeof(*di));
	size_t ns = sessions_count(core->buffers);
	Gpud__Session *sess = calloc(ns ? ns : 1, sizeof(*sess));
	Gpud__Session **sptr = calloc(ns ? ns : 1, sizeof(*sptr));

	if (di == NULL || sess == NULL || sptr == NULL) {
		request_fail(r, ST_OUT_OF_MEMORY, "status: out of memory");
		goto out;
	}
	st.scope = scope;
	st.tenant = tn ? (char *)tn->name : "";
	st.hello = hello;
	st.server_version = GPUD_VERSION;
	st.protocol_version = GPUD_PROTOCOL_VERSION;
	st.backend = (char *)ds->backend;
	st.degraded = ds->nlive < ds->n;
	st.n_devices = (size_t)fill_devices(ds, di, served, own);
	st.devices = di->ptrs;
	if (!served) /* before hello: what gpud is, nothing of what it does */
		goto reply;
	st.uptime_s = (double)(now_ns() - core->stats->started_ns) / 1e9;
	if (own)
		status_counts_own(core, own, &st);
	else
		status_counts_all(core, &st);
	if (own == NULL) { /* the listeners are the operator's configuration */
		st.n_listen = (size_t)core->cfg->nlisten;
		st.listen = (char **)core->cfg->listen;
	}
	backend_variant bv[64];
	Gpud__KernelVariant kv[64], *kvp[64];
	st.n_variants = status_variants(r, bv, kv, kvp, 64);
	st.variants = kvp;
	/* The pool and staging of every device together (each device's own
	 * are in its Device). */
	Gpud__MemoryPool pool = GPUD__MEMORY_POOL__INIT;
	Gpud__Staging staging = GPUD__STAGING__INIT;
	for (size_t i = 0; i < st.n_devices; i++) {
		const Gpud__MemoryPool *p = di->pb[i].pool;
		const Gpud__Staging *g = di->pb[i].staging;
		if (p) {
			pool.in_use += p->in_use;
			pool.cached += p->cached;
			pool.high_water += p->high_water;
			pool.limit += p->limit;
			pool.allocs += p->allocs;
			pool.hits += p->hits;
			st.pool = &pool;
		}
		if (g) {
			staging.buffers += g->buffers;
			staging.chunk = g->chunk;
			staging.free += g->free;
			staging.bytes_staged += g->bytes_staged;
			st.staging = &staging;
		}
	}
	Gpud__Lending lending = GPUD__LENDING__INIT;
	if (core->regions->lending) {
		const lend_stats *ls = &core->regions->lend.st;
		lending.spare_bytes = ls->spare_bytes;
		lending.kept_bytes = ls->kept_bytes;
		lending.lent_bytes = ls->lent_bytes;
		lending.from_kept = ls->from_kept;
		lending.from_spare = ls->from_spare;
		lending.made = ls->made;
		st.lending = &lending;
	}
	Gpud__HostMemory host = GPUD__HOST_MEMORY__INIT;
	if (core->host) {
		hostmem_stats hs = hostmem_get(core->host);
		host.used = hs.used;
		host.limit = hs.limit;
		host.high_water = hs.high_water;
		host.refused = hs.refused;
		host.buffers = hs.by_use[HOSTMEM_BUFFERS];
		host.lent = hs.by_use[HOSTMEM_LENT];
		host.pinned = hs.by_use[HOSTMEM_PINNED];
		host.staging = hs.by_use[HOSTMEM_STAGING];
		host.messages = hs.by_use[HOSTMEM_MESSAGES];
		host.rings = hs.by_use[HOSTMEM_RINGS];
		st.host_memory = &host;
	}
	st.n_sessions = status_sessions(core, own, sess, sptr);
	st.sessions = sptr;
reply:
	resp.body_case = GPUD__RESPONSE__BODY_STATUS;
	resp.status = &st;
	request_reply(r, &resp, NULL, 0);
out:
	free(sess);
	free(sptr);
	free(di);
}

void verb_status(gpud_request *r)
{
	const Gpud__HelloRequest *h = r->req->status->hello;
	Gpud__HelloResponse hello = GPUD__HELLO_RESPONSE__INIT;

	if (h == NULL) {
		status_reply(r, NULL);
		return;
	}
	/* A hello first (the server checked it under hello's rules: a drain
	 * refuses it from the start), then the status as its tenant's. */
	if (h->probe.len) {
		request_fail(r, ST_PROTOCOL,
			     "status.hello: a hello with a probe key comes alone, not inside a "
			     "status (it is gpud's own health probe)");
		return;
	}
	if (assign_tenant_or_fail(r, h) != 0)
		return;
	hello_answer(r, h, &hello);
	status_reply(r, &hello);
}

/* A carried hello's answer, kept with its request until the reply (which
 * may come after the connection closed: nothing points into the session). */
typedef struct carried_answer {
	Gpud__HelloResponse hello; /* first: the request frees the block by it */
	char tenant[GPUD_TENANT_NAME];
	uint8_t key[SESSION_KEY_LEN];
	device_infos di;
} carried_answer;

int verbs_carried_hello(gpud_request *r)
{
	const Gpud__HelloRequest *h = r->req->carried_hello;
	if (h->probe.len) {
		request_fail(r, ST_PROTOCOL,
			     "carried_hello: a hello with a probe key comes alone, not carried by "
			     "another request (it is gpud's own health probe)");
		return -1;
	}
	if (assign_tenant_or_fail(r, h) != 0)
		return -1;
	carried_answer *a = calloc(1, sizeof(*a));
	if (a == NULL) {
		request_fail(r, ST_OUT_OF_MEMORY, "hello: out of memory");
		return -1;
	}
	gpud__hello_response__init(&a->hello);
	hello_answer(r, h, &a->hello);
	snprintf(a->tenant, sizeof(a->tenant), "%s", r->session->tenant->name);
	a->hello.tenant = a->tenant;
	if (a->hello.session_key.len) {
		memcpy(a->key, r->session->key, sizeof(a->key));
		a->hello.session_key.data = a->key;
	}
	a->hello.n_devices = (size_t)fill_devices(r->core->devices, &a->di, 0, NULL);
	a->hello.devices = a->di.ptrs;
	r->carried_hello = &a->hello;
	return 0;
}

void verb_kernels(gpud_request *r)
{
	Gpud__Response resp = GPUD__RESPONSE__INIT;
	Gpud__KernelsResponse kr = GPUD__KERNELS_RESPONSE__INIT;
	size_t nb, total = 0;
	const kernel_def *const *builtins = kernel_list(&nb);
	gpud_tenant *tn = r->session->tenant;
	size_t nc = registry_visible(r->core->registry, tn, NULL, 0);
	size_t nk = nb + nc;
	const kernel_def **ks = calloc(nk ? nk : 1, sizeof(*ks));
	if (ks == NULL) {
		request_fail(r, ST_OUT_OF_MEMORY, "kernels: out of memory");
		return;
	}
	for (size_t i = 0; i < nb; i++)
		ks[i] = builtins[i];
	registry_visible(r->core->registry, tn, ks + nb, nc);
	for (size_t i = 0; i < nk; i++)
		total += (size_t)ks[i]->nparams;
	Gpud__KernelInfo *infos = calloc(nk ? nk : 1, sizeof(*infos));
	Gpud__KernelInfo **iptrs = calloc(nk ? nk : 1, sizeof(*iptrs));
	Gpud__Param *params = calloc(total ? total : 1, sizeof(*params));
	Gpud__Param **pptrs = calloc(total ? total : 1, sizeof(*pptrs));
	Gpud__DType *dts = calloc(total ? total * 4 : 1, sizeof(*dts));
	char(*types)[96] = calloc(total ? total : 1, sizeof(*types));
	char **inplace = calloc(total ? total * KERNEL_MAX_PARAMS : 1, sizeof(*inplace));
	if (!infos || !iptrs || !params || !pptrs || !dts || !types || !inplace) {
		request_fail(r, ST_OUT_OF_MEMORY, "kernels: out of memory");
		goto out;
	}
	size_t pi = 0;
	for (size_t i = 0; i < nk; i++) {
		const kernel_def *k = ks[i];
		gpud__kernel_info__init(&infos[i]);
		infos[i].name = (char *)k->name;
		infos[i].doc = (char *)k->doc;
		infos[i].params = &pptrs[pi];
		infos[i].n_params = (size_t)k->nparams;
		if (i >= nb) { /* a custom kernel: how it stands in the registry */
			const custom_entry *e = registry_entry_of(k);
			infos[i].custom = 1;
			infos[i].shared = e->shared;
			infos[i].pinned = e->pinned;
			infos[i].last_used = e->last_used;
		}
		for (int j = 0; j < k->nparams; j++, pi++) {
			const kernel_param *p = &k->params[j];
			Gpud__Param *q = &params[pi];
			gpud__param__init(q);
			q->name = (char *)p->name;
			q->doc = (char *)p->doc;
			q->role = p->role == KPARAM_IN    ? GPUD__PARAM__ROLE__ROLE_IN
				  : p->role == KPARAM_OUT ? GPUD__PARAM__ROLE__ROLE_OUT
							  : GPUD__PARAM__ROLE__ROLE_SCALAR;
			q->dtypes = &dts[pi * 4];
			if (p->role == KPARAM_SCALAR) {
				/* Scalars: f64 and i64 as their dtypes; bool has none; a
				 * dtype name lists the dtypes it may name. */
				if (p->stype == KSCALAR_F64)
					q->dtypes[q->n_dtypes++] = GPUD__DTYPE__DTYPE_F64;
				else if (p->stype == KSCALAR_I64)
					q->dtypes[q->n_dtypes++] = GPUD__DTYPE__DTYPE_I64;
				else if (p->stype == KSCALAR_DTYPE)
					for (int t = GPUD_F32; t <= GPUD_C128; t++)
						if (p->dtypes & KDT(t))
							q->dtypes[q->n_dtypes++] = (Gpud__DType)t;
				q->ndim = 0;
			} else {
				for (int t = GPUD_F32; t <= GPUD_C128; t++)
					if (p->dtypes & KDT(t))
						q->dtypes[q->n_dtypes++] = (Gpud__DType)t;
				q->ndim = p->ndim;
			}
			q->optional = p->role == KPARAM_OUT || p->default_value != NULL ||
				      p->optional;
			q->default_value = (char *)(p->default_value ? p->default_value : "");
			kernel_param_describe(p, types[pi], sizeof(types[pi]));
			q->type = types[pi];
			/* an output: the inputs it may be written in place of */
			q->inplace_of = &inplace[pi * KERNEL_MAX_PARAMS];
			for (int m = 0; p->role == KPARAM_OUT && m < k->nparams; m++)
				if (p->inplace_of & KPARAM_BIT(m))
					q->inplace_of[q->n_inplace_of++] =
						(char *)k->params[m].name;
			pptrs[pi] = q;
		}
		iptrs[i] = &infos[i];
	}
	kr.n_kernels = nk;
	kr.kernels = iptrs;
	resp.body_case = GPUD__RESPONSE__BODY_KERNELS;
	resp.kernels = &kr;
	request_reply(r, &resp, NULL, 0);
out:
	free(ks);
	free(infos);
	free(iptrs);
	free(params);
	free(pptrs);
	free(dts);
	free(types);
	free(inplace);
}
