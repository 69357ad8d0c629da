/*
 * daemon/hello_guard.c — failed hellos per peer: the back-off, the log's
 * lines about them, the bounded table, and closing connections that keep
 * failing (see hello_guard.h for the rules).
 *
 * Owned by the loop thread: hello calls it, its two timers run there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/hello_guard.h"
#include "daemon/log.h"

#define NS 1000000000ull

const char *guard_failure_name(guard_failure f)
{
	return f == GUARD_TOKEN ? "token" : "backoff";
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

static void on_tick(uv_timer_t *t)
{
	guard_tick(t->data, mono_ns());
}

static void on_closer(uv_timer_t *t)
{
	guard_tick(t->data, mono_ns());
}

void guard_init(hello_guard *g, uv_loop_t *loop, void (*close_conn)(void *arg, uint32_t pipe_id),
		void *arg)
{
	memset(g, 0, sizeof(*g));
	g->close_conn = close_conn;
	g->close_arg = arg;
	if (loop == NULL)
		return;
	uv_timer_init(loop, &g->tick);
	uv_timer_init(loop, &g->closer);
	g->tick.data = g->closer.data = g;
	/* The minute's lines; never what keeps the loop running. */
	uv_timer_start(&g->tick, on_tick, GUARD_LOG_PERIOD_S * 1000, GUARD_LOG_PERIOD_S * 1000);
	uv_unref((uv_handle_t *)&g->tick);
	g->timers = 1;
}

void guard_fini(hello_guard *g)
{
	guard_peer *p, *tmp;
	HASH_ITER(hh, g->peers, p, tmp)
	{
		HASH_DEL(g->peers, p);
		free(p);
	}
	g->npeers = 0;
	g->nclosing = 0;
	if (g->timers) {
		uv_close((uv_handle_t *)&g->tick, NULL);
		uv_close((uv_handle_t *)&g->closer, NULL);
		g->timers = 0;
	}
}

void guard_key(const char *peer, char *key, size_t len)
{
	size_t n = strlen(peer);
	const char *colon = strrchr(peer, ':');
	if (peer[0] == '[') { /* [v6]:port */
		const char *rb = strchr(peer, ']');
		if (rb)
			n = (size_t)(rb + 1 - peer);
	} else if (colon && strchr(peer, ':') == colon && strncmp(peer, "uid ", 4) != 0) {
		n = (size_t)(colon - peer); /* v4:port */
	}
	snprintf(key, len, "%.*s", (int)n, peer);
}

uint32_t guard_backoff_s(uint32_t failures)
{
	if (failures <= GUARD_FREE_FAILURES)
		return 0;
	uint32_t steps = failures - GUARD_FREE_FAILURES - 1;
	uint64_t s = (uint64_t)GUARD_BACKOFF_FIRST_S << (steps < 20 ? steps : 20);
	return s < GUARD_BACKOFF_MAX_S ? (uint32_t)s : GUARD_BACKOFF_MAX_S;
}

size_t guard_backing_off(const hello_guard *g, uint64_t now)
{
	size_t n = 0;
	for (const guard_peer *p = g->peers; p; p = p->hh.next)
		n += now < p->until_ns;
	return n;
}

const guard_peer *guard_find(const hello_guard *g, const char *key)
{
	guard_peer *p;
	HASH_FIND_STR(g->peers, key, p);
	return p;
}

/* The peer of key, added (the table full: the one that failed longest ago
 * gives way); NULL only without memory. */
static guard_peer *peer_get(hello_guard *g, const char *key)
{
	guard_peer *p, *tmp, *oldest = NULL;
	HASH_FIND_STR(g->peers, key, p);
	if (p)
		return p;
	if (g->npeers >= GUARD_PEERS_MAX) {
		HASH_ITER(hh, g->peers, p, tmp)
		{
			if (oldest == NULL || p->last_ns < oldest->last_ns)
				oldest = p;
		}
		HASH_DEL(g->peers, oldest);
		free(oldest);
		g->npeers--;
		g->evicted++;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	snprintf(p->key, sizeof(p->key), "%s", key);
	HASH_ADD_STR(g->peers, key, p);
	g->npeers++;
	return p;
}

/* Seconds from now to t, rounded up: what a client is told to wait. */
static uint32_t secs_until(uint64_t t, uint64_t now)
{
	return t > now ? (uint32_t)((t - now + NS - 1) / NS) : 0;
}

static void log_line(guard_peer *p, uint64_t now)
{
	uint32_t tok = p->unlogged[GUARD_TOKEN], off = p->unlogged[GUARD_BACKOFF];
	uint32_t wait = secs_until(p->until_ns, now);
	char then[64] = "";

	if (wait)
		snprintf(then, sizeof(then), "; its hellos are refused for the next %u s", wait);
	/* The key is gpud's own text of the peer's address or uid; the token is
	 * never logged. */
	if (p->logged_ns == 0)
		log_warn("failed hellos from %s: %u (a wrong or no token)%s; more are counted and "
			 "logged at most once a minute",
			 p->key, tok + off, then);
	else
		log_warn("failed hellos from %s: %u more in %.0f s (%u with a wrong or no token, "
			 "%u refused unread during its back-off), %llu in all%s",
			 p->key, tok + off, (double)(now - p->logged_ns) / 1e9, tok, off,
			 (unsigned long long)p->total, then);
	p->unlogged[GUARD_TOKEN] = p->unlogged[GUARD_BACKOFF] = 0;
	p->logged_ns = now;
	p->lines++;
}

/* A failed hello of kind f: counted, and logged if the peer's last line is a minute old. */
static void count(guard_peer *p, guard_failure f, uint64_t now)
{
	p->unlogged[f]++;
	p->total++;
	p->last_ns = now;
	if (p->logged_ns == 0 || now - p->logged_ns >= GUARD_LOG_PERIOD_S * NS)
		log_line(p, now);
}

uint32_t guard_check(hello_guard *g, const char *key, uint64_t now)
{
	guard_peer *p;
	HASH_FIND_STR(g->peers, key, p);
	if (p == NULL || now >= p->until_ns)
		return 0;
	count(p, GUARD_BACKOFF, now);
	return secs_until(p->until_ns, now);
}

uint32_t guard_failed(hello_guard *g, const char *key, uint64_t now)
{
	guard_peer *p = peer_get(g, key);
	if (p == NULL)
		return 0;
	if (p->failures > 0 && now - p->last_ns >= GUARD_FORGET_S * NS)
		p->failures = 0; /* quiet for an hour: a fresh start */
	p->failures++;
	uint32_t wait = guard_backoff_s(p->failures);
	if (wait)
		p->until_ns = now + (uint64_t)wait * NS;
	count(p, GUARD_TOKEN, now);
	return wait;
}

void guard_close_later(hello_guard *g, uint32_t pipe_id, uint64_t now)
{
	if (!g->timers || g->nclosing == GUARD_CLOSING_MAX) {
		if (g->close_conn)
			g->close_conn(g->close_arg, pipe_id);
		return;
	}
	g->closing[g->nclosing].pipe_id = pipe_id;
	g->closing[g->nclosing].due_ns = now + GUARD_CLOSE_GRACE_MS * 1000000ull;
	if (g->nclosing++ == 0)
		uv_timer_start(&g->closer, on_closer, GUARD_CLOSE_GRACE_MS, 0);
}

void guard_tick(hello_guard *g, uint64_t now)
{
	int kept = 0;
	for (int i = 0; i < g->nclosing; i++) {
		if (g->closing[i].due_ns <= now) {
			if (g->close_conn)
				g->close_conn(g->close_arg, g->closing[i].pipe_id);
		} else {
			g->closing[kept++] = g->closing[i];
		}
	}
	g->nclosing = kept;
	if (kept && g->timers) /* the timer fired early: the rest on the next turn */
		uv_timer_start(&g->closer, on_closer, 1 + (g->closing[0].due_ns - now) / 1000000,
			       0);

	guard_peer *p, *tmp;
	HASH_ITER(hh, g->peers, p, tmp)
	{
		if ((p->unlogged[GUARD_TOKEN] || p->unlogged[GUARD_BACKOFF]) &&
		    now - p->logged_ns >= GUARD_LOG_PERIOD_S * NS)
			log_line(p, now);
		if (now - p->last_ns >= GUARD_FORGET_S * NS && now >= p->until_ns &&
		    !p->unlogged[GUARD_TOKEN] && !p->unlogged[GUARD_BACKOFF]) {
			HASH_DEL(g->peers, p);
			free(p);
			g->npeers--;
		}
	}
}
