/*
 * daemon/peers.c — the peers of connections whose session is not open yet
 * (daemon/peers.h says why and who calls what). nng's threads and the loop
 * thread, under the table's mutex.
 */
#include <stdlib.h>
#include <uthash.h>

#include "daemon/peers.h"

struct peer_entry {
	uint32_t pipe_id;
	endpoint_peer peer;
	UT_hash_handle hh;
};

void peers_init(peer_table *t)
{
	pthread_mutex_init(&t->mtx, NULL);
	t->by_pipe = NULL;
}

void peers_fini(peer_table *t)
{
	peer_entry *e, *tmp;
	pthread_mutex_lock(&t->mtx);
	HASH_ITER(hh, t->by_pipe, e, tmp)
	{
		HASH_DEL(t->by_pipe, e);
		free(e);
	}
	pthread_mutex_unlock(&t->mtx);
}

int peers_put(peer_table *t, uint32_t pipe_id, const endpoint_peer *peer)
{
	peer_entry *e = malloc(sizeof(*e)), *old = NULL;
	if (e == NULL)
		return -1;
	e->pipe_id = pipe_id;
	e->peer = *peer;
	pthread_mutex_lock(&t->mtx);
	HASH_FIND(hh, t->by_pipe, &pipe_id, sizeof(pipe_id), old);
	if (old)
		HASH_DEL(t->by_pipe, old);
	HASH_ADD(hh, t->by_pipe, pipe_id, sizeof(e->pipe_id), e);
	pthread_mutex_unlock(&t->mtx);
	free(old);
	return 0;
}

static peer_entry *take(peer_table *t, uint32_t pipe_id)
{
	peer_entry *e = NULL;
	pthread_mutex_lock(&t->mtx);
	HASH_FIND(hh, t->by_pipe, &pipe_id, sizeof(pipe_id), e);
	if (e)
		HASH_DEL(t->by_pipe, e);
	pthread_mutex_unlock(&t->mtx);
	return e;
}

int peers_take(peer_table *t, uint32_t pipe_id, endpoint_peer *out)
{
	peer_entry *e = take(t, pipe_id);
	if (e == NULL)
		return 0;
	*out = e->peer;
	free(e);
	return 1;
}

void peers_drop(peer_table *t, uint32_t pipe_id)
{
	free(take(t, pipe_id));
}

size_t peers_count(peer_table *t)
{
	pthread_mutex_lock(&t->mtx);
	size_t n = HASH_COUNT(t->by_pipe);
	pthread_mutex_unlock(&t->mtx);
	return n;
}
