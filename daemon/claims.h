/*
 * daemon/claims.h — host memory lent before hello (GPUD_SHM_LEND |
 * GPUD_SHM_CLAIM, proto/shm.h), so a fresh client reaches gpud in one nng
 * round trip: its hello rides in its first request (Request.carried_hello)
 * and claims the memory it was lent meanwhile (HelloRequest.claim).
 *
 * A lend before hello is made to the tenant whose last local hello came
 * from the peer's uid (a tenant is an ipc:// peer's user), and parked here,
 * bound to the peer's pid and uid, that tenant and the client's 16-byte
 * nonce, under the region id its reply gave. A hello from a connection of
 * that same process (the pipe's peer pid and uid) and tenant that presents
 * the nonce makes every such region that connection's. Another process, or
 * another user, with the nonce finds nothing. Unclaimed, a region goes back
 * to the lend pool (zeroed, still its tenant's) after lend_claim_s (30 s).
 * At most CLAIMS_PER_TENANT parked per tenant and CLAIMS_MAX in all.
 *
 * Threads: the loop's (the region socket parks, hello claims, the timer
 * gives back).
 */
#ifndef GPUD_CLAIMS_H
#define GPUD_CLAIMS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/buffers.h"
#include "proto/shm.h"

#define CLAIMS_MAX 32
#define CLAIMS_PER_TENANT 4

struct host_region;
struct region_server;

typedef struct region_claim {
	uint8_t nonce[GPUD_SHM_KEY_LEN];
	int64_t uid, pid;
	gpud_tenant *tenant;
	struct host_region *region; /* in no session, one reference */
	uint64_t deadline_ns;
	struct region_claim *prev, *next;
} region_claim;

typedef struct claim_table {
	region_claim *list;
	int count;
	uv_timer_t timer;
	int timer_on;
	unsigned timeout_ms;               /* lend_claim_s */
	uint64_t parked, claimed, expired; /* since start */
} claim_table;

void claims_init(claim_table *ct, uv_loop_t *loop, unsigned timeout_ms);
/* 0 if tenant t may park one more; else -1 with err (the limits). */
int claims_room(const claim_table *ct, const gpud_tenant *t, char *err, size_t errlen);
/* 1 if a parked region has this id. */
int claims_has_id(const claim_table *ct, uint64_t id);
/* cl (nonce, uid, pid, tenant, region set; malloc'd) is parked from now on. */
void claims_park(claim_table *ct, region_claim *cl);
/*
 * Every region parked for session s's process and tenant under nonce, made
 * s's (regions_add, keeping its id). The count, or -1 with err where one
 * would take s over rs->max_bytes (those after it stay parked).
 */
int claims_take(claim_table *ct, struct region_server *rs, gpud_session *s, const uint8_t *nonce,
		char *err, size_t errlen);
/* The region parked under id for process pid of uid under nonce, or NULL. */
region_claim *claims_find(const claim_table *ct, int64_t uid, int64_t pid, const uint8_t *nonce,
			  uint64_t id);
/* Parked now (status, tests). */
int claims_count(const claim_table *ct);
/* Stops the timer (before the loop's last turns). */
void claims_stop(claim_table *ct);
/* Every parked region freed on this thread (shutdown, after regions_stop). */
void claims_fini(claim_table *ct, struct region_server *rs);

#endif
