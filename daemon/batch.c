/*
 * daemon/batch.c — dynamic batching's groups and their timer (batch.h).
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/batch.h"
#include "daemon/loop.h"

static void arm(batcher *b);

/* Takes g off the list of open groups and hands its items to flush. */
static void flush_group(batcher *b, batch_group *g)
{
	batch_group **pp;
	for (pp = &b->groups; *pp && *pp != g; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = g->next;
	batch_item *head = g->head;
	size_t n = g->n;
	for (batch_item *it = head; it; it = it->next)
		it->group = NULL;
	b->pending -= n;
	free(g);
	if (n > 0)
		b->flush(b->arg, head, n);
}

static void on_timer(uv_timer_t *t)
{
	batcher *b = t->data;
	uint64_t now = uv_now(b->loop);
	/* one group at a time: a flush may add items (a run failing at once) */
	for (;;) {
		batch_group *g;
		for (g = b->groups; g && g->due_ms > now; g = g->next)
			;
		if (g == NULL)
			break;
		flush_group(b, g);
	}
	arm(b);
}

/* The timer at the earliest deadline of the open groups, or stopped. */
static void arm(batcher *b)
{
	if (!b->timer_on)
		return;
	uint64_t due = UINT64_MAX;
	for (batch_group *g = b->groups; g; g = g->next)
		if (g->due_ms < due)
			due = g->due_ms;
	if (due == UINT64_MAX) {
		uv_timer_stop(&b->timer);
		return;
	}
	uint64_t now = uv_now(b->loop);
	uv_timer_start(&b->timer, on_timer, due > now ? due - now : 0, 0);
}

void batcher_init(batcher *b, uv_loop_t *loop, batch_flush_fn flush, void *arg)
{
	memset(b, 0, sizeof(*b));
	b->loop = loop;
	b->flush = flush;
	b->arg = arg;
	uv_timer_init(loop, &b->timer);
	uv_unref((uv_handle_t *)&b->timer);
	b->timer.data = b;
	b->timer_on = 1;
}

int batcher_add(batcher *b, batch_item *it, uint64_t delay_us, size_t max)
{
	ON_LOOP("batcher_add");
	if (b->stopped)
		return 0;
	batch_group *g;
	for (g = b->groups; g && memcmp(&g->key, &it->key, sizeof(it->key)) != 0; g = g->next)
		;
	if (g == NULL) {
		if ((g = calloc(1, sizeof(*g))) == NULL)
			return 0; /* out of memory: it runs alone */
		g->key = it->key;
		g->due_ms = uv_now(b->loop) + (delay_us + 999) / 1000;
		batch_group **pp;
		for (pp = &b->groups; *pp; pp = &(*pp)->next)
			;
		*pp = g;
		arm(b);
	}
	it->next = NULL;
	it->group = g;
	if (g->tail)
		g->tail->next = it;
	else
		g->head = it;
	g->tail = it;
	g->n++;
	b->pending++;
	if (max > 0 && g->n >= max) {
		flush_group(b, g);
		arm(b);
	}
	return 1;
}

int batcher_remove(batcher *b, batch_item *it)
{
	ON_LOOP("batcher_remove");
	batch_group *g = it->group;
	batch_item *prev = NULL, *cur;
	if (g == NULL)
		return 0;
	for (cur = g->head; cur && cur != it; cur = cur->next)
		prev = cur;
	if (cur == NULL)
		return 0;
	if (prev)
		prev->next = it->next;
	else
		g->head = it->next;
	if (g->tail == it)
		g->tail = prev;
	g->n--;
	b->pending--;
	it->next = NULL;
	it->group = NULL;
	if (g->n == 0) { /* an empty group closes */
		batch_group **pp;
		for (pp = &b->groups; *pp && *pp != g; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = g->next;
		free(g);
		arm(b);
	}
	return 1;
}

void batcher_flush_all(batcher *b)
{
	ON_LOOP("batcher_flush_all");
	while (b->groups)
		flush_group(b, b->groups);
	arm(b);
}

void batcher_stop(batcher *b)
{
	b->stopped = 1;
	batcher_flush_all(b);
}

void batcher_close(batcher *b)
{
	if (!b->timer_on)
		return;
	b->timer_on = 0;
	uv_timer_stop(&b->timer);
	if (!uv_is_closing((uv_handle_t *)&b->timer))
		uv_close((uv_handle_t *)&b->timer, NULL);
}
