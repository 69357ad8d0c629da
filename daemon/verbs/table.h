/*
 * daemon/verbs/table.h — the verb table: every verb of the protocol (a
 * Request body field) with its name and its flags, the rules the server
 * checks before the verb's handler runs (one place: server.c's per-message
 * path reads them here and names no verb), and each verb's dense index,
 * which /metrics counts by. The rows are verbs.def's.
 *
 * Data only, constant: any thread may read it. It sits at the bottom of the
 * daemon's layers (it reaches nothing of gpud's), so the request layer (a
 * verb's name in logs and traces, its metrics index), the metrics, the
 * server and the dispatcher (verbs/dispatch.c, the handlers) all read it.
 */
#ifndef GPUD_VERBS_TABLE_H
#define GPUD_VERBS_TABLE_H

/* What the server checks per verb before its handler (verbs.def's flags). */
enum verb_flag {
	/* served on a connection before hello fixed its tenant */
	VERB_BEFORE_HELLO = 1u << 0,
	/* not counted in its tenant's requests in flight, so never refused by
	 * the requests_in_flight quota: a tenant at its limit can still see why */
	VERB_NOT_COUNTED = 1u << 1,
	/* served after the GPU context is lost, while gpud exits */
	VERB_ON_LOST_DEVICE = 1u << 2,
	/* served however long gpud drains: it changes nothing, or gives back or
	 * stops (daemon/drain.c); other verbs only during the drain's grace */
	VERB_WHILE_DRAINING = 1u << 3,
	/* opens a session: refused from the start of a drain */
	VERB_OPENS_SESSION = 1u << 4,
};

/* A verb's dense index: VERB_NONE, the rows of verbs.def in order, VERB_UNKNOWN. */
enum verb_index {
	VERB_NONE, /* no verb: a message that did not decode, or a Request without a body */
#define VERB(BODY, name, flags) VERB_##BODY,
#include "daemon/verbs/verbs.def"
#undef VERB
	/* a body field the table has no row for: counted here, apart from
	 * every verb (protobuf-c cannot decode one today; test_verbs.c checks
	 * that every body field has a row) */
	VERB_UNKNOWN,
	VERB_INDEXES
};

/* The index of the verb whose Request body field number is body_case:
 * VERB_NONE for 0 (no body), VERB_UNKNOWN for a field without a row. */
int verb_index(int body_case);
/* The verb's name ("run", its body field's); "none" and "unknown" for those two. */
const char *verb_name(int index);
/* Its VERB_* flags; VERB_NONE: VERB_BEFORE_HELLO (its handler refuses it as
 * PROTOCOL, as before hello), VERB_UNKNOWN: none. */
unsigned verb_flags(int index);
/* Its Request body field number (0 for VERB_NONE and VERB_UNKNOWN). */
int verb_body(int index);

struct Gpud__Request;
/* The rules for request req: its verb's flags, but hello's for a status
 * that carries a hello (StatusRequest.hello): that request opens a session. */
unsigned verb_request_flags(const struct Gpud__Request *req);

#endif
