/*
 * client/gpuctl/json.h — --json output (json.c): documents built with
 * jansson, printed with their schema name and version.
 */
#ifndef GPUD_GPUCTL_JSON_H
#define GPUD_GPUCTL_JSON_H

#include <stdint.h>

#include <jansson.h>

/* An unsigned count or byte size as a JSON integer. */
json_t *json_u64(uint64_t v);
/* A new document: an object that begins with "schema" and "schema_version". */
json_t *json_doc(const char *schema, int version);
/* Prints doc on stdout and frees it; exits with an error if it cannot. */
void json_emit(json_t *doc);

#endif
