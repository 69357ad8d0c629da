/*
 * daemon/hello_guard.h — failed hellos, counted per peer: the peer as its
 * endpoint names it (daemon/endpoint/endpoint.h, endpoint_peer.addr:
 * "uid N" over ipc://, an address over tcp:// and tls+tcp://), less a port
 * (guard_key).
 *
 * A peer's first GUARD_FREE_FAILURES wrong or missing tokens are answered
 * as they are; each further one makes it back off: for GUARD_BACKOFF_FIRST_S
 * seconds, doubling with every further failure up to GUARD_BACKOFF_MAX_S,
 * its hellos are refused ("too many failed hellos, try again in N s")
 * without their tokens being looked at, so guessing gets nowhere however
 * fast a peer sends. Nothing waits: a refusal is an answer like any other.
 * A connection is closed after GUARD_CONN_FAILURES failed hellos of either
 * kind (hello, daemon/verbs/info.c, counts them on the session; the close
 * waits GUARD_CLOSE_GRACE_MS, so that the last answer leaves first). A peer
 * that fails no hello for GUARD_FORGET_S starts afresh.
 *
 * The log gets at most one line per peer a minute: the first failure at
 * once, later ones counted and said in the next line (the failure after a
 * quiet minute, or the minute's tick). The table holds GUARD_PEERS_MAX peers
 * at most: a scanner with many addresses makes the one that failed longest
 * ago give way, so memory stays bounded.
 *
 * The loop's: hello asks and tells it, its timers tick on the loop. Time is
 * given in (monotonic ns), so the unit tests drive the back-off by counts
 * and stated times, never by waiting.
 */
#ifndef GPUD_HELLO_GUARD_H
#define GPUD_HELLO_GUARD_H

#include <stddef.h>
#include <stdint.h>
#include <uthash.h>
#include <uv.h>

#define GUARD_FREE_FAILURES 3
#define GUARD_BACKOFF_FIRST_S 10
#define GUARD_BACKOFF_MAX_S 900
#define GUARD_FORGET_S 3600
#define GUARD_CONN_FAILURES 5
#define GUARD_LOG_PERIOD_S 60
#define GUARD_PEERS_MAX 1024
#define GUARD_CLOSE_GRACE_MS 200
#define GUARD_CLOSING_MAX 64
#define GUARD_KEY_LEN 64

/* The kinds of failed hello (the metric's reason label, in this order). */
typedef enum guard_failure {
	GUARD_TOKEN,   /* a wrong or missing token */
	GUARD_BACKOFF, /* refused unread: its peer backs off */
	GUARD_FAILURE_KINDS
} guard_failure;

/* "token", "backoff". */
const char *guard_failure_name(guard_failure f);

typedef struct guard_peer {
	char key[GUARD_KEY_LEN];
	uint32_t failures;  /* wrong or missing tokens: the back-off's exponent */
	uint64_t total;     /* its failed hellos of both kinds, since it was added */
	uint64_t last_ns;   /* its last failed hello */
	uint64_t until_ns;  /* its hellos are refused before this */
	uint64_t logged_ns; /* its last log line; 0: none yet */
	uint32_t unlogged[GUARD_FAILURE_KINDS]; /* failed hellos since that line */
	uint32_t lines;                         /* log lines about it */
	UT_hash_handle hh;
} guard_peer;

typedef struct hello_guard {
	guard_peer *peers; /* by key */
	size_t npeers;
	uint64_t evicted; /* peers that gave way to a new one */
	/* The server's close of a connection (nng), and connections to close. */
	void (*close_conn)(void *arg, uint32_t pipe_id);
	void *close_arg;
	struct {
		uint32_t pipe_id;
		uint64_t due_ns;
	} closing[GUARD_CLOSING_MAX];
	int nclosing;
	/* loop NULL at init (the unit tests): no timers; guard_tick by hand */
	uv_timer_t tick, closer;
	int timers;
} hello_guard;

/* loop may be NULL (no timers). close_conn closes a connection by its id. */
void guard_init(hello_guard *g, uv_loop_t *loop, void (*close_conn)(void *arg, uint32_t pipe_id),
		void *arg);
/* Closes the timers (on the loop, at teardown) and frees the table. */
void guard_fini(hello_guard *g);

/* A peer's key from a session's peer text: "10.0.0.7:5123" -> "10.0.0.7",
 * "[::1]:5123" -> "[::1]", "uid 1000" as it is. */
void guard_key(const char *peer, char *key, size_t len);

/*
 * Before a hello's token is looked at: 0 when the peer may try, else the
 * whole seconds it still backs off, and the hello counts as failed
 * (GUARD_BACKOFF).
 */
uint32_t guard_check(hello_guard *g, const char *key, uint64_t now_ns);
/* A hello's token was wrong or missing (GUARD_TOKEN): counted. Returns the
 * seconds the peer backs off from now on (0: none yet). */
uint32_t guard_failed(hello_guard *g, const char *key, uint64_t now_ns);
/* The seconds a peer backs off after its nth wrong or missing token (0: none). */
uint32_t guard_backoff_s(uint32_t failures);
/* How many peers back off at now. */
size_t guard_backing_off(const hello_guard *g, uint64_t now_ns);
/* The peer of key, or NULL: not in the table. */
const guard_peer *guard_find(const hello_guard *g, const char *key);

/* Closes connection pipe_id GUARD_CLOSE_GRACE_MS from now (at once without timers). */
void guard_close_later(hello_guard *g, uint32_t pipe_id, uint64_t now_ns);
/*
 * The minute's work, also the timer's: a line for each peer with failed
 * hellos not yet logged whose last line is a minute old; peers quiet for
 * GUARD_FORGET_S (and no longer backing off) leave the table.
 */
void guard_tick(hello_guard *g, uint64_t now_ns);

#endif
