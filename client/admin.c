/*
 * client/admin.c — requests about the daemon rather than one transfer:
 * keeping buffers and listing them, registering custom kernels, the kernel
 * list, and the daemon's status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

void gpud_set_keep(gpud_client *c, int keep)
{
	__atomic_store_n(&c->keep, keep != 0, __ATOMIC_RELAXED);
}

void gpud_set_device(gpud_client *c, int device)
{
	__atomic_store_n(&c->device1, device < 0 ? 0 : device + 1, __ATOMIC_RELAXED);
}

static void buffer_info_from(gpud_buffer_info *v, const Gpud__BufferInfo *b)
{
	v->handle = b->handle;
	v->dtype = (gpud_dtype)b->dtype;
	v->ndim = b->n_shape <= GPUD_MAX_DIMS ? (int)b->n_shape : 0;
	if (v->ndim)
		memcpy(v->shape, b->shape, (size_t)v->ndim * sizeof(uint64_t));
	v->nbytes = gpud_shape_bytes(v->shape, v->ndim, gpud_dtype_size(v->dtype));
	v->kept = b->kept;
	v->device = b->device;
	v->pinned = b->pinned;
}

/* The list request: the reply's buffers, each in one of out_own or out_all. */
static gpud_status list_once(gpud_client *c, int all, gpud_buffer_info **out_own,
			     gpud_tenant_buffer **out_all, size_t *n)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__ListRequest l = GPUD__LIST_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (out_own)
		*out_own = NULL;
	if (out_all)
		*out_all = NULL;
	*n = 0;
	l.all_tenants = all;
	req.body_case = GPUD__REQUEST__BODY_LIST;
	req.list = &l;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_LIST, "list")) != GPUD_OK)
		return st;
	size_t k = r->list->n_buffers;
	gpud_buffer_info *v = out_own ? calloc(k ? k : 1, sizeof(*v)) : NULL;
	gpud_tenant_buffer *t = out_all ? calloc(k ? k : 1, sizeof(*t)) : NULL;
	if (v == NULL && t == NULL) {
		gpud__response__free_unpacked(r, NULL);
		return client_seterr(c, GPUD_ENOMEM, "list: out of memory");
	}
	for (size_t i = 0; i < k; i++) {
		const Gpud__BufferInfo *b = r->list->buffers[i];
		if (v) {
			buffer_info_from(&v[i], b);
		} else {
			buffer_info_from(&t[i].info, b);
			snprintf(t[i].tenant, sizeof(t[i].tenant), "%s",
				 b->tenant ? b->tenant : "");
		}
	}
	gpud__response__free_unpacked(r, NULL);
	if (out_own)
		*out_own = v;
	else
		*out_all = t;
	*n = k;
	return GPUD_OK;
}

static gpud_status register_once(gpud_client *c, const gpud_kernel_spec *spec, unsigned flags)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__RegisterRequest q = GPUD__REGISTER_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (spec == NULL || spec->name == NULL || spec->source == NULL)
		return client_seterr(c, GPUD_EARG, "gpud_register: name and source are required");
	if (flags & ~GPUD_REGISTER_UNPINNED)
		return client_seterr(
			c, GPUD_EARG,
			"gpud_register_flags: flags: expected 0 or GPUD_REGISTER_UNPINNED "
			"(1), got %u",
			flags);
	q.name = (char *)spec->name;
	q.kind = spec->elementwise ? GPUD__REGISTER_REQUEST__KIND__KIND_ELEMENTWISE
				   : GPUD__REGISTER_REQUEST__KIND__KIND_RAW;
	q.source = (char *)spec->source;
	q.entry = (char *)(spec->entry ? spec->entry : "");
	q.signature = (char *)(spec->signature ? spec->signature : "");
	q.in_params = (char *)(spec->in_params ? spec->in_params : "");
	q.out_params = (char *)(spec->out_params ? spec->out_params : "");
	q.block = spec->block;
	q.blocks_per_sm = spec->blocks_per_sm;
	q.fast_math = spec->fast_math;
	q.max_registers = spec->max_registers;
	q.shared = spec->shared;
	q.unpinned = (flags & GPUD_REGISTER_UNPINNED) != 0;
	req.body_case = GPUD__REQUEST__BODY_REGISTER;
	req.register_ = &q;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	st = client_expect_body(c, r, GPUD__RESPONSE__BODY_REGISTER, "register");
	if (st == GPUD_OK)
		gpud__response__free_unpacked(r, NULL);
	return st;
}

static gpud_status register_reduction_once(gpud_client *c, const gpud_reduction_spec *spec,
					   unsigned flags)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__RegisterRequest q = GPUD__REGISTER_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	if (spec == NULL || spec->name == NULL || spec->map_expr == NULL)
		return client_seterr(c, GPUD_EARG,
				     "gpud_register_reduction: name and map_expr are required");
	if (flags & ~GPUD_REGISTER_UNPINNED)
		return client_seterr(c, GPUD_EARG,
				     "gpud_register_reduction: flags: expected 0 or "
				     "GPUD_REGISTER_UNPINNED (1), got %u",
				     flags);
	q.name = (char *)spec->name;
	q.kind = GPUD__REGISTER_REQUEST__KIND__KIND_REDUCTION;
	q.source = "";
	q.entry = "";
	q.signature = "";
	q.in_params = (char *)(spec->in_params ? spec->in_params : "");
	q.out_params = (char *)(spec->out_params ? spec->out_params : "");
	q.map_expr = (char *)spec->map_expr;
	q.reduce_expr = (char *)(spec->reduce_expr ? spec->reduce_expr : "");
	q.post_map_expr = (char *)(spec->post_map_expr ? spec->post_map_expr : "");
	q.identity = (char *)(spec->identity ? spec->identity : "");
	q.reduce_type = (char *)(spec->reduce_type ? spec->reduce_type : "");
	q.block = spec->block;
	q.fast_math = spec->fast_math;
	q.max_registers = spec->max_registers;
	q.shared = spec->shared;
	q.unpinned = (flags & GPUD_REGISTER_UNPINNED) != 0;
	req.body_case = GPUD__REQUEST__BODY_REGISTER;
	req.register_ = &q;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	st = client_expect_body(c, r, GPUD__RESPONSE__BODY_REGISTER, "register");
	if (st == GPUD_OK)
		gpud__response__free_unpacked(r, NULL);
	return st;
}

gpud_status gpud_register_reduction(gpud_client *c, const gpud_reduction_spec *spec, unsigned flags)
{
	CLIENT_RETRY(c, register_reduction_once(c, spec, flags));
}

static gpud_status unregister(gpud_client *c, const char *name, int shared)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UnregisterRequest q = GPUD__UNREGISTER_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	q.name = (char *)(name ? name : "");
	q.shared = shared;
	req.body_case = GPUD__REQUEST__BODY_UNREGISTER;
	req.unregister = &q;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

gpud_status gpud_unregister(gpud_client *c, const char *name)
{
	CLIENT_RETRY(c, unregister(c, name, 0));
}

gpud_status gpud_unregister_shared(gpud_client *c, const char *name)
{
	CLIENT_RETRY(c, unregister(c, name, 1));
}

/* A gpud_kernels list as allocated: the public list, then each kernel's
 * registration (gpud_kernel_registration_get). */
typedef struct kernel_list_full {
	gpud_kernel_list pub;
	gpud_kernel_registration *reg;
} kernel_list_full;

gpud_status gpud_kernel_registration_get(const gpud_kernel_list *l, size_t i,
					 gpud_kernel_registration *out)
{
	if (l == NULL || out == NULL || i >= l->count)
		return GPUD_EARG;
	*out = ((const kernel_list_full *)l)->reg[i];
	return GPUD_OK;
}

void gpud_kernel_list_free(gpud_kernel_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->count; i++) {
		gpud_kernel_info *k = &l->kernels[i];
		for (size_t j = 0; j < k->nparams; j++) {
			free(k->params[j].name);
			free(k->params[j].default_value);
			free(k->params[j].type);
			free(k->params[j].doc);
			free(k->params[j].inplace_of);
		}
		free(k->params);
		free(k->name);
		free(k->doc);
	}
	free(l->kernels);
	free(((kernel_list_full *)l)->reg);
	free(l);
}

static char *dupstr(const char *s)
{
	return strdup(s ? s : "");
}

/* "x|y" of names, malloc'd; NULL if out of memory. */
static char *join_names(char *const *names, size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(names[i] ? names[i] : "") + 1;
	char *s = malloc(len), *at = s;
	if (s == NULL)
		return NULL;
	*at = '\0';
	for (size_t i = 0; i < n; i++)
		at += sprintf(at, "%s%s", i ? "|" : "", names[i] ? names[i] : "");
	return s;
}

static gpud_status kernels_once(gpud_client *c, gpud_kernel_list **out)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__KernelsRequest k = GPUD__KERNELS_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	*out = NULL;
	req.body_case = GPUD__REQUEST__BODY_KERNELS;
	req.kernels = &k;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_KERNELS, "kernels")) != GPUD_OK)
		return st;
	Gpud__KernelsResponse *kr = r->kernels;
	kernel_list_full *full = calloc(1, sizeof(*full));
	gpud_kernel_list *l = full ? &full->pub : NULL;
	if (l == NULL ||
	    (l->kernels = calloc(kr->n_kernels ? kr->n_kernels : 1, sizeof(*l->kernels))) == NULL ||
	    (full->reg = calloc(kr->n_kernels ? kr->n_kernels : 1, sizeof(*full->reg))) == NULL)
		goto oom;
	for (size_t i = 0; i < kr->n_kernels; i++, l->count++) {
		Gpud__KernelInfo *ki = kr->kernels[i];
		gpud_kernel_info *o = &l->kernels[i];
		o->name = dupstr(ki->name);
		o->doc = dupstr(ki->doc);
		full->reg[i] = (gpud_kernel_registration){.custom = ki->custom,
							  .shared = ki->shared,
							  .pinned = ki->pinned,
							  .last_used = ki->last_used};
		if ((o->params = calloc(ki->n_params ? ki->n_params : 1, sizeof(*o->params))) ==
		    NULL)
			goto oom;
		for (size_t j = 0; j < ki->n_params; j++, o->nparams++) {
			Gpud__Param *p = ki->params[j];
			gpud_param_info *q = &o->params[j];
			q->name = dupstr(p->name);
			q->role = (gpud_param_role)p->role;
			for (size_t t = 0; t < p->n_dtypes; t++)
				q->dtypes |= 1u << p->dtypes[t];
			q->ndim = p->ndim;
			q->optional = p->optional;
			q->default_value = dupstr(p->default_value);
			q->type = dupstr(p->type);
			q->doc = dupstr(p->doc);
			if ((q->inplace_of = join_names(p->inplace_of, p->n_inplace_of)) == NULL)
				goto oom;
		}
	}
	gpud__response__free_unpacked(r, NULL);
	*out = l;
	return GPUD_OK;
oom:
	gpud_kernel_list_free(l);
	gpud__response__free_unpacked(r, NULL);
	return client_seterr(c, GPUD_ENOMEM, "kernels: out of memory");
}

/* --- status ------------------------------------------------------------------------ */

/*
 * The status request's round trip; on a connection that leaves hello to its
 * first call (gpud_connect_deferred) that carries the hello too, and the
 * session is made from its answer. An older gpud that does not know the
 * carried hello answers the status as before hello: the call is made again,
 * after a hello of its own.
 */
static gpud_status status_call(gpud_client *c, Gpud__Request *req, Gpud__Response **r)
{
	Gpud__HelloRequest h = GPUD__HELLO_REQUEST__INIT;
	nng_msg *m;
	uint32_t pipe;
	uint64_t gen;
	gpud_status st;

	if (!c->open)
		return client_seterr(c, GPUD_ECONNECT, "not connected");
	if (!client_session_carry(c, &h, &gen, &st)) {
		if (st != GPUD_OK)
			return st;
		if ((st = client_pack(c, req, NULL, 0, &m, NULL)) != GPUD_OK)
			return st;
		return client_exchange(c, gen, m, req->id, r, NULL, NULL, NULL);
	}
	req->status->hello = &h;
	st = client_session_greet(c, req, r, &pipe);
	req->status->hello = NULL;
	if (st == GPUD_OK && (*r)->body_case == GPUD__RESPONSE__BODY_STATUS &&
	    (*r)->status->hello) {
		const Gpud__StatusResponse *sr = (*r)->status;
		client_session_carried(c, sr->hello, pipe, sr->devices, sr->n_devices);
		return GPUD_OK;
	}
	client_session_carried(c, NULL, 0, NULL, 0);
	if (st != GPUD_OK)
		return st;
	gpud__response__free_unpacked(*r, NULL);
	return status_call(c, req, r); /* an older gpud: hello first now */
}

static gpud_status status_get_once(gpud_client *c, gpud_daemon_status *out)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__StatusRequest s = GPUD__STATUS_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	memset(out, 0, sizeof(*out));
	/* The variants once per run of gpud: after that, from c. */
	pthread_mutex_lock(&c->mu);
	uint64_t instance = c->info.instance;
	s.without_variants = c->nvariants >= 0 && c->variants_instance == instance;
	pthread_mutex_unlock(&c->mu);
	req.body_case = GPUD__REQUEST__BODY_STATUS;
	req.status = &s;
	if ((st = status_call(c, &req, &r)) != GPUD_OK)
		return st;
	if ((st = client_expect_body(c, r, GPUD__RESPONSE__BODY_STATUS, "status")) != GPUD_OK)
		return st;
	Gpud__StatusResponse *sr = r->status;
	pthread_mutex_lock(&c->mu);
	out->server = c->info;
	pthread_mutex_unlock(&c->mu);
	snprintf(out->server.version, sizeof(out->server.version), "%s", sr->server_version);
	snprintf(out->server.backend, sizeof(out->server.backend), "%s", sr->backend);
	if (sr->protocol_version) /* before hello, hello gave none */
		out->server.protocol_version = sr->protocol_version;
	client_copy_devices(&out->server, sr->devices, sr->n_devices);
	out->scope = (int)sr->scope;
	snprintf(out->tenant, sizeof(out->tenant), "%s", sr->tenant ? sr->tenant : "");
	out->uptime_s = sr->uptime_s;
	out->requests = sr->requests;
	out->errors = sr->errors;
	out->cancelled = sr->cancelled;
	out->cancelled_closed = sr->cancelled_closed;
	out->degraded = sr->degraded;
	out->connections = sr->connections;
	out->in_flight = sr->in_flight;
	out->buffers = sr->buffers;
	out->bytes_in_use = sr->bytes_in_use;
	out->bytes_high_water = sr->bytes_high_water;
	if (sr->pool) {
		out->has_pool = 1;
		out->pool_in_use = sr->pool->in_use;
		out->pool_cached = sr->pool->cached;
		out->pool_high_water = sr->pool->high_water;
		out->pool_limit = sr->pool->limit;
		out->pool_allocs = sr->pool->allocs;
		out->pool_hits = sr->pool->hits;
	}
	if (sr->staging) {
		out->has_staging = 1;
		out->staging_buffers = sr->staging->buffers;
		out->staging_free = sr->staging->free;
		out->staging_chunk = sr->staging->chunk;
		out->bytes_staged = sr->staging->bytes_staged;
	}
	if (sr->lending) {
		out->has_lending = 1;
		out->lend_spare_bytes = sr->lending->spare_bytes;
		out->lend_kept_bytes = sr->lending->kept_bytes;
		out->lend_lent_bytes = sr->lending->lent_bytes;
		out->lend_from_kept = sr->lending->from_kept;
		out->lend_from_spare = sr->lending->from_spare;
		out->lend_made = sr->lending->made;
	}
	if (sr->host_memory) {
		const Gpud__HostMemory *h = sr->host_memory;
		out->has_host_memory = 1;
		out->host_used = h->used;
		out->host_limit = h->limit;
		out->host_high_water = h->high_water;
		out->host_refused = h->refused;
		out->host_buffers = h->buffers;
		out->host_lent = h->lent;
		out->host_pinned = h->pinned;
		out->host_staging = h->staging;
		out->host_messages = h->messages;
		out->host_rings = h->rings;
	}
	out->nsessions_total = (unsigned)sr->n_sessions;
	for (size_t i = 0; i < sr->n_sessions && i < GPUD_MAX_SESSIONS; i++) {
		Gpud__Session *g = sr->sessions[i];
		gpud_session_info *o = &out->sessions[out->nsessions++];
		o->id = g->id;
		snprintf(o->peer, sizeof(o->peer), "%s", g->peer ? g->peer : "");
		snprintf(o->tenant, sizeof(o->tenant), "%s", g->tenant ? g->tenant : "");
		o->buffers = g->buffers;
		o->bytes = g->bytes;
		o->requests = g->requests;
		o->in_flight = g->in_flight;
		o->regions = g->regions;
		o->region_bytes = g->region_bytes;
	}
	for (size_t i = 0; i < sr->n_variants && i < GPUD_MAX_VARIANTS; i++) {
		Gpud__KernelVariant *v = sr->variants[i];
		gpud_variant_info *o = &out->variants[out->nvariants++];
		snprintf(o->kernel, sizeof(o->kernel), "%s", v->kernel);
		snprintf(o->variant, sizeof(o->variant), "%s", v->variant);
		o->registers = v->registers;
		o->block = v->block;
		o->max_threads = v->max_threads;
		o->shared_bytes = v->shared_bytes;
		o->local_bytes = v->local_bytes;
	}
	pthread_mutex_lock(&c->mu);
	if (s.without_variants) {
		if (c->variants_instance == instance && c->nvariants >= 0) {
			out->nvariants = c->nvariants;
			memcpy(out->variants, c->variants,
			       (size_t)c->nvariants * sizeof(out->variants[0]));
		}
	} else {
		c->variants_instance = instance;
		c->nvariants = out->nvariants;
		memcpy(c->variants, out->variants,
		       (size_t)out->nvariants * sizeof(out->variants[0]));
	}
	pthread_mutex_unlock(&c->mu);
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

gpud_status gpud_list(gpud_client *c, gpud_buffer_info **out, size_t *n)
{
	CLIENT_RETRY(c, list_once(c, 0, out, NULL, n));
}

gpud_status gpud_list_all(gpud_client *c, gpud_tenant_buffer **out, size_t *n)
{
	CLIENT_RETRY(c, list_once(c, 1, NULL, out, n));
}

gpud_status gpud_register(gpud_client *c, const gpud_kernel_spec *spec)
{
	CLIENT_RETRY(c, register_once(c, spec, 0));
}

gpud_status gpud_register_flags(gpud_client *c, const gpud_kernel_spec *spec, unsigned flags)
{
	CLIENT_RETRY(c, register_once(c, spec, flags));
}

gpud_status gpud_kernels(gpud_client *c, gpud_kernel_list **out)
{
	CLIENT_RETRY(c, kernels_once(c, out));
}

gpud_status gpud_status_get(gpud_client *c, gpud_daemon_status *out)
{
	CLIENT_RETRY(c, status_get_once(c, out));
}
