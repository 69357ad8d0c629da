/*
 * daemon/claims.c — host memory lent before hello, parked until that
 * process's hello claims it (daemon/claims.h). Loop thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "daemon/claims.h"
#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/regions.h"

void claims_init(claim_table *ct, uv_loop_t *loop, unsigned timeout_ms)
{
	memset(ct, 0, sizeof(*ct));
	ct->timeout_ms = timeout_ms;
	uv_timer_init(loop, &ct->timer);
	uv_unref((uv_handle_t *)&ct->timer);
	ct->timer.data = ct;
	ct->timer_on = 1;
}

int claims_room(const claim_table *ct, const gpud_tenant *t, char *err, size_t errlen)
{
	const region_claim *cl;
	int mine = 0;
	DL_FOREACH(ct->list, cl)
	{
		mine += cl->tenant == t;
	}
	if (mine >= CLAIMS_PER_TENANT) {
		snprintf(err, errlen,
			 "tenant %s has %d lends before hello not yet claimed by a hello, the most "
			 "it may have (each is given back %d s after its lend)",
			 t->name, mine, ct->timeout_ms / 1000);
		return -1;
	}
	if (ct->count >= CLAIMS_MAX) {
		snprintf(err, errlen,
			 "gpud has %d lends before hello not yet claimed, the most it keeps: say "
			 "hello first",
			 ct->count);
		return -1;
	}
	return 0;
}

int claims_has_id(const claim_table *ct, uint64_t id)
{
	const region_claim *cl;
	DL_FOREACH(ct->list, cl)
	{
		if (cl->region->id == id)
			return 1;
	}
	return 0;
}

static int nonce_equal(const uint8_t *a, const uint8_t *b);

region_claim *claims_find(const claim_table *ct, int64_t uid, int64_t pid, const uint8_t *nonce,
			  uint64_t id)
{
	region_claim *cl;
	DL_FOREACH(ct->list, cl)
	{
		if (cl->region->id == id && cl->uid == uid && cl->pid == pid &&
		    nonce_equal(cl->nonce, nonce))
			return cl;
	}
	return NULL;
}

int claims_count(const claim_table *ct)
{
	return ct->count;
}

static void drop(claim_table *ct, region_claim *cl)
{
	DL_DELETE(ct->list, cl);
	ct->count--;
	free(cl);
}

static void arm(claim_table *ct);

/* The timer: every claim past its deadline goes back to the lend pool. */
static void on_expire(uv_timer_t *t)
{
	claim_table *ct = t->data;
	region_claim *cl, *tmp;
	uint64_t now = now_ns();
	DL_FOREACH_SAFE(ct->list, cl, tmp)
	{
		if (cl->deadline_ns > now)
			continue;
		log_debug("host region %016" PRIx64 " lent before hello to tenant %s (pid %" PRId64
			  ") not claimed within %d s: given back",
			  cl->region->id, cl->tenant->name, cl->pid, ct->timeout_ms / 1000);
		region_unref(cl->region);
		ct->expired++;
		drop(ct, cl);
	}
	arm(ct);
}

/* The timer set for the earliest deadline (the list is in deadline order). */
static void arm(claim_table *ct)
{
	if (!ct->timer_on || ct->list == NULL)
		return;
	uint64_t now = now_ns(), at = ct->list->deadline_ns;
	uint64_t ms = at > now ? (at - now + 999999) / 1000000 : 0;
	uv_timer_start(&ct->timer, on_expire, ms, 0);
}

void claims_park(claim_table *ct, region_claim *cl)
{
	ON_LOOP("claims_park");
	cl->deadline_ns = now_ns() + (uint64_t)ct->timeout_ms * 1000000u;
	DL_APPEND(ct->list, cl); /* deadlines only grow: the list stays in order */
	ct->count++;
	ct->parked++;
	if (ct->list == cl)
		arm(ct);
}

static int nonce_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	for (int i = 0; i < GPUD_SHM_KEY_LEN; i++)
		d |= (uint8_t)(a[i] ^ b[i]);
	return d == 0;
}

int claims_take(claim_table *ct, region_server *rs, gpud_session *s, const uint8_t *nonce,
		char *err, size_t errlen)
{
	region_claim *cl, *tmp;
	int n = 0;
	ON_LOOP("claims_take");
	if (!s->local || s->peer_pid <= 0 || s->tenant == NULL)
		return 0;
	DL_FOREACH_SAFE(ct->list, cl, tmp)
	{
		if (!nonce_equal(cl->nonce, nonce) || cl->uid != s->peer_uid ||
		    cl->pid != s->peer_pid || cl->tenant != s->tenant)
			continue;
		host_region *r = cl->region;
		if (s->region_bytes + r->size > rs->max_bytes) {
			snprintf(err, errlen,
				 "a %zu-byte region lent before hello would bring connection %u to "
				 "%" PRIu64 " bytes of host regions; the limit is %" PRIu64
				 " (shm_max_bytes)",
				 r->size, s->pipe_id, s->region_bytes + r->size, rs->max_bytes);
			return -1;
		}
		if (regions_add(rs, s, r) != 0) { /* its id taken meanwhile (1 in 2^64) */
			snprintf(err, errlen, "host region %016" PRIx64 " is taken", r->id);
			return -1;
		}
		ct->claimed++;
		drop(ct, cl);
		n++;
	}
	if (ct->list == NULL && ct->timer_on)
		uv_timer_stop(&ct->timer);
	return n;
}

void claims_stop(claim_table *ct)
{
	if (!ct->timer_on)
		return;
	ct->timer_on = 0;
	uv_timer_stop(&ct->timer);
	uv_close((uv_handle_t *)&ct->timer, NULL);
}

void claims_fini(claim_table *ct, region_server *rs)
{
	region_claim *cl, *tmp;
	DL_FOREACH_SAFE(ct->list, cl, tmp)
	{
		lend_free_now(&rs->lend, cl->region->lent);
		free(cl->region);
		drop(ct, cl);
	}
}
