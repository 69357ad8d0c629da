/*
 * daemon/config_tenants.h — the config file's [quota] and [tenant NAME]
 * sections (config_tenants.c), for daemon/config.c: the [gpud] options are
 * config.c's table; these sections are what each tenant may hold and do.
 * config_quota (config.h) reads them.
 *
 * Threads: config.c's (read at start; a reload builds new settings on the
 * loop).
 */
#ifndef GPUD_CONFIG_TENANTS_H
#define GPUD_CONFIG_TENANTS_H

#include <stddef.h>

#include "daemon/config.h"

/*
 * key = value in section: 1 if section is [quota] or [tenant NAME] and the
 * key was taken; -1 with err ("key = 'value': ..." or "[tenant NAME]: ...")
 * if it was refused; 0 if section is neither. A [tenant NAME] starts from
 * [quota] as read so far.
 */
int config_tenant_key(gpud_config *c, const char *section, const char *key, const char *value,
		      char *err, size_t errlen);
/* 1 if a and b have the same [tenant NAME] sections, in the same order. */
int config_tenants_same(const gpud_config *a, const gpud_config *b);

#endif
