/*
 * daemon/peers.h — who is at the other end of each new connection, from the
 * moment nng tells it until the connection's session holds it.
 *
 * nng starts a pipe's protocol, so its first message may arrive, before it
 * calls NNG_PIPE_EV_ADD_POST: a connection's first request can reach the
 * loop before its add event does (server.c's overtaken). So the peer (its
 * address, uid and pid and, over ipc://, its user name: a user-database
 * lookup that sssd or LDAP can make slow, endpoint_peer_user) is found at
 * NNG_PIPE_EV_ADD_PRE, on nng's thread, before any message can arrive, and
 * kept here. The loop takes it when it opens the connection's session (at
 * the add event or the first request, whichever it sees first) and drops
 * what is left when the connection is gone. The loop never waits for the
 * user database.
 *
 * Threads: nng's threads put (ADD_PRE), the loop takes and drops; the mutex
 * guards the table. Bounded by the connections nng holds: every pipe that
 * got ADD_PRE gets REM_POST, whose event drops its entry if no session took
 * it.
 */
#ifndef GPUD_PEERS_H
#define GPUD_PEERS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/endpoint/endpoint.h"

typedef struct peer_entry peer_entry;

typedef struct peer_table {
	pthread_mutex_t mtx;
	peer_entry *by_pipe; /* uthash by pipe id */
} peer_table;

void peers_init(peer_table *t);
/* Frees what is left, once the socket is closed (no pipe is added any more);
 * the mutex stays usable. */
void peers_fini(peer_table *t);

/* Keeps pipe_id's peer (a copy); one already kept for it is replaced.
 * 0, or -1 when out of memory (the loop then finds the peer itself). */
int peers_put(peer_table *t, uint32_t pipe_id, const endpoint_peer *peer);

/* pipe_id's peer into *out and out of the table: 1; 0 when none is kept. */
int peers_take(peer_table *t, uint32_t pipe_id, endpoint_peer *out);

/* Forgets pipe_id's peer, if one is kept. */
void peers_drop(peer_table *t, uint32_t pipe_id);

/* How many peers are kept (tests, the status of a leak). */
size_t peers_count(peer_table *t);

#endif
