/*
 * daemon/verbs/table.c — the verb table's rows (verbs.def) and the lookups
 * by body field number and by index (see table.h). Constant data: any
 * thread.
 */
#include <stddef.h>

#include "daemon/verbs/table.h"
#include "gpud.pb-c.h"

typedef struct verb_row {
	int body; /* Request body field number */
	const char *name;
	unsigned flags;
} verb_row;

static const verb_row rows[VERB_INDEXES] = {
	[VERB_NONE] = {0, "none", VERB_BEFORE_HELLO},
#define VERB(BODY, name, flags) [VERB_##BODY] = {GPUD__REQUEST__BODY_##BODY, #name, flags},
#include "daemon/verbs/verbs.def"
#undef VERB
	[VERB_UNKNOWN] = {0, "unknown", 0},
};

int verb_index(int body_case)
{
	if (body_case == 0)
		return VERB_NONE;
	for (int i = VERB_NONE + 1; i < VERB_UNKNOWN; i++)
		if (rows[i].body == body_case)
			return i;
	return VERB_UNKNOWN;
}

const char *verb_name(int index)
{
	return index >= 0 && index < VERB_INDEXES ? rows[index].name : "unknown";
}

unsigned verb_flags(int index)
{
	return index >= 0 && index < VERB_INDEXES ? rows[index].flags : 0;
}

int verb_body(int index)
{
	return index >= 0 && index < VERB_INDEXES ? rows[index].body : 0;
}

unsigned verb_request_flags(const Gpud__Request *req)
{
	if (req->body_case == GPUD__REQUEST__BODY_STATUS && req->status && req->status->hello)
		return rows[VERB_HELLO].flags;
	return verb_flags(verb_index((int)req->body_case));
}
