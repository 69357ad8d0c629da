/*
 * daemon/config_tenants.c — the [quota] and [tenant NAME] sections of the
 * config file: their keys (quota_set), a tenant's quota (config_quota), and
 * the comparison a reload makes (see config_tenants.h).
 *
 * Threads: daemon/config.c's: read at start, before any thread exists; a
 * reload builds new settings on the loop thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config_tenants.h"

tenant_quota config_quota(const gpud_config *c, const char *name)
{
	for (int i = 0; i < c->ntenants; i++)
		if (strcmp(c->tenants[i].name, name) == 0)
			return c->tenants[i].quota;
	return c->quota;
}

/* kernel_timeout (custom kernels) and run_timeout (built-in ones): seconds,
 * to the millisecond, 0 for no limit. */
static int set_timeout(uint64_t *ms, const char *key, const char *value, char *err, size_t errlen)
{
	char *end;
	double sec = strtod(value, &end);
	if (end == value || *end != '\0' || !(sec >= 0.0 && sec <= 86400.0)) {
		snprintf(err, errlen, "%s = '%s': expected %s from %g to %g", key, value,
			 "seconds (0: no limit)", 0.0, 86400.0);
		return -1;
	}
	*ms = (uint64_t)(sec * 1000 + 0.5);
	if (sec > 0 && *ms == 0)
		*ms = 1;
	return 0;
}

/* custom_kernels: a count, 1 to CONFIG_CUSTOM_KERNELS_MAX (no "no limit":
 * registrations are kept on disk and compiled again at every start). */
static int set_custom_kernels(uint64_t *n, const char *key, const char *value, char *err,
			      size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(value, &end, 10);
	if (end == value || *end != '\0' || value[0] == '-' || errno != 0 || v < 1 ||
	    v > CONFIG_CUSTOM_KERNELS_MAX) {
		snprintf(err, errlen, "%s = '%s': expected a number of kernels from 1 to %d", key,
			 value, CONFIG_CUSTOM_KERNELS_MAX);
		return -1;
	}
	*n = v;
	return 0;
}

/* A key of [quota] or [tenant NAME]. */
static int quota_set(tenant_quota *q, const char *key, const char *value, char *err, size_t errlen)
{
	if (!strcmp(key, "custom_kernels"))
		return set_custom_kernels(&q->custom_kernels, key, value, err, errlen);
	if (!strcmp(key, "kernel_timeout"))
		return set_timeout(&q->kernel_timeout_ms, key, value, err, errlen);
	if (!strcmp(key, "run_timeout"))
		return set_timeout(&q->run_timeout_ms, key, value, err, errlen);
	if (!strncmp(key, "device_bytes.", 13)) {
		char *end;
		long d = strtol(key + 13, &end, 10);
		if (end == key + 13 || *end != '\0' || d < 0 || d >= GPUD_DEVICES_MAX) {
			snprintf(err, errlen,
				 "quota key '%s': expected device_bytes.N with N a device id, 0 to "
				 "%d",
				 key, GPUD_DEVICES_MAX - 1);
			return -1;
		}
		if (config_parse_size(value, &q->device_bytes_on[d]) != 0) {
			snprintf(err, errlen,
				 "%s = '%s': expected a number or a size (0: no limit)", key,
				 value);
			return -1;
		}
		return 0;
	}
	uint64_t *f = !strcmp(key, "device_bytes")         ? &q->device_bytes
		      : !strcmp(key, "kept_buffers")       ? &q->kept_buffers
		      : !strcmp(key, "requests_in_flight") ? &q->requests_in_flight
		      : !strcmp(key, "message_size")       ? &q->message_size
							   : NULL;
	if (f == NULL) {
		snprintf(err, errlen,
			 "unknown quota key '%s' (device_bytes, device_bytes.N, kept_buffers, "
			 "requests_in_flight, message_size, kernel_timeout, run_timeout, "
			 "custom_kernels)",
			 key);
		return -1;
	}
	if (config_parse_size(value, f) != 0) {
		snprintf(err, errlen, "%s = '%s': expected a number or a size (0: no limit)", key,
			 value);
		return -1;
	}
	return 0;
}

int config_tenant_key(gpud_config *c, const char *section, const char *key, const char *value,
		      char *err, size_t errlen)
{
	if (strcmp(section, "quota") == 0)
		return quota_set(&c->quota, key, value, err, errlen) == 0 ? 1 : -1;
	if (strncmp(section, "tenant ", 7) != 0 || section[7] == '\0')
		return 0;
	const char *tn = section + 7;
	int i;
	for (i = 0; i < c->ntenants && strcmp(c->tenants[i].name, tn) != 0; i++)
		;
	if (i == c->ntenants) {
		if (c->ntenants == GPUD_MAX_TENANT_RULES || strlen(tn) >= GPUD_TENANT_NAME) {
			snprintf(err, errlen,
				 "[tenant %s]: at most %d tenant sections, names under %d "
				 "characters",
				 tn, GPUD_MAX_TENANT_RULES, GPUD_TENANT_NAME);
			return -1;
		}
		/* Starts from [quota] as read so far: put [quota] first. */
		snprintf(c->tenants[i].name, sizeof(c->tenants[i].name), "%s", tn);
		c->tenants[i].quota = c->quota;
		c->ntenants++;
	}
	return quota_set(&c->tenants[i].quota, key, value, err, errlen) == 0 ? 1 : -1;
}

int config_tenants_same(const gpud_config *a, const gpud_config *b)
{
	if (a->ntenants != b->ntenants)
		return 0;
	for (int i = 0; i < a->ntenants; i++)
		if (strcmp(a->tenants[i].name, b->tenants[i].name) != 0 ||
		    memcmp(&a->tenants[i].quota, &b->tenants[i].quota, sizeof(tenant_quota)) != 0)
			return 0;
	return 1;
}
