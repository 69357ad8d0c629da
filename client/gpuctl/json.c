/*
 * client/gpuctl/json.c — --json output: one JSON document per command on
 * stdout, built with jansson, each naming its schema and the schema's
 * version (docs/user-guide.md, "`--json`"). A field is added without a new version;
 * one renamed, removed or changing meaning bumps it.
 */
#include <stdlib.h>
#include <sysexits.h>

#include "client/gpuctl/gpuctl.h"
#include "client/gpuctl/json.h"

json_t *json_u64(uint64_t v)
{
	/* json_int_t is long long: counts and byte sizes fit */
	return json_integer((json_int_t)v);
}

json_t *json_doc(const char *schema, int version)
{
	json_t *doc = json_pack("{s:s, s:i}", "schema", schema, "schema_version", version);
	if (doc == NULL)
		die(EX_SOFTWARE, "--json: out of memory");
	return doc;
}

void json_emit(json_t *doc)
{
	char *text = json_dumps(doc,
				JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
	json_decref(doc);
	if (text == NULL)
		die(EX_SOFTWARE, "--json: cannot encode the document");
	puts(text);
	free(text);
}
