/*
 * daemon/config_size.c — a size as gpud.conf writes it ("256MiB", "1G",
 * "4096", "64k") in bytes: the options of daemon/config.c and the quotas of
 * daemon/config_tenants.c read sizes here (declared in config.h).
 *
 * Threads: any (no state).
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/config.h"

int config_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!isdigit((unsigned char)*s))
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	while (*end == ' ')
		end++;
	unsigned shift = 0;
	if (*end != '\0') {
		switch (toupper((unsigned char)*end)) {
		case 'K':
			shift = 10;
			break;
		case 'M':
			shift = 20;
			break;
		case 'G':
			shift = 30;
			break;
		case 'T':
			shift = 40;
			break;
		case 'B':
			break;
		default:
			return -1;
		}
		if (toupper((unsigned char)*end) != 'B') {
			end++;
			if (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0)
				end += strlen(end);
		} else {
			end++;
		}
		if (*end != '\0')
			return -1;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}
