/*
 * daemon/config.c — the config file is INI, parsed by libinih (Debian's
 * libinih-dev); this file only maps keys to fields and checks values.
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/log.h"

void config_defaults(gpud_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->backend, sizeof(c->backend), "auto");
	c->device = 0;
	c->log_level = LOG_INFO;
	c->max_message_size = 256ull << 20;
	c->contexts = 64;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	c->cpu_threads = n > 0 ? (int)n : 4;
	c->shutdown_timeout = 30.0;
	c->streams = 16;
	c->pool_bin_growth = 2;
	c->pool_min_bin = 9;  /* 512 B */
	c->pool_max_bin = 31; /* 2 GiB: larger blocks are allocated exactly */
	c->pool_max_cached = 4ull << 30;
	c->pool_max_total = 0; /* the device's memory */
	c->pool_reserve = 256ull << 20;
	c->shm_max_bytes = 64ull << 30;
	c->staging_buffers = 8;
	c->staging_chunk = 4ull << 20;
	c->poll_us = 1000;
	c->quota = (tenant_quota){.device_bytes = 0,
				  .kept_buffers = 1024,
				  .requests_in_flight = 64,
				  .message_size = 0};
	c->socket_mode = -1;
}

int config_is_admin(const gpud_config *c, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = c->admin_tenants; *p;) {
		p += strspn(p, " ,");
		size_t len = strcspn(p, " ,");
		if (len == n && n > 0 && strncmp(p, name, n) == 0)
			return 1;
		p += len;
	}
	return 0;
}

tenant_quota config_quota(const gpud_config *c, const char *name)
{
	for (int i = 0; i < c->ntenants; i++)
		if (strcmp(c->tenants[i].name, name) == 0)
			return c->tenants[i].quota;
	return c->quota;
}

/* A key of [quota] or [tenant NAME]. */
static int quota_set(tenant_quota *q, const char *key, const char *value, char *err, size_t errlen)
{
	uint64_t *f = !strcmp(key, "device_bytes")         ? &q->device_bytes
		      : !strcmp(key, "kept_buffers")       ? &q->kept_buffers
		      : !strcmp(key, "requests_in_flight") ? &q->requests_in_flight
		      : !strcmp(key, "message_size")       ? &q->message_size
							   : NULL;
	if (f == NULL) {
		snprintf(err, errlen,
			 "unknown quota key '%s' (device_bytes, kept_buffers, requests_in_flight, "
			 "message_size)",
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

void config_shm_path(const gpud_config *c, char *out, size_t outlen)
{
	out[0] = '\0';
	if (strcmp(c->shm_socket, "off") == 0)
		return;
	if (c->shm_socket[0]) {
		snprintf(out, outlen, "%s", c->shm_socket);
		return;
	}
	for (int i = 0; i < c->nlisten; i++) {
		if (strncmp(c->listen[i], "ipc://", 6) == 0) {
			snprintf(out, outlen, "%s.shm", c->listen[i] + 6);
			return;
		}
	}
}

void config_clear_listen(gpud_config *c)
{
	for (int i = 0; i < c->nlisten; i++)
		free(c->listen[i]);
	c->nlisten = 0;
}

void config_free(gpud_config *c)
{
	config_clear_listen(c);
}

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

int config_add_listen(gpud_config *c, const char *url, char *err, size_t errlen)
{
	if (strncmp(url, "ipc://", 6) != 0 && strncmp(url, "tcp://", 6) != 0 &&
	    strncmp(url, "tcp4://", 7) != 0 && strncmp(url, "tcp6://", 7) != 0 &&
	    strncmp(url, "tls+tcp://", 10) != 0) {
		snprintf(err, errlen,
			 "listen URL '%s': expected ipc://PATH, tcp://HOST:PORT or "
			 "tls+tcp://HOST:PORT",
			 url);
		return -1;
	}
	if (c->nlisten == GPUD_MAX_LISTEN) {
		snprintf(err, errlen, "listen URL '%s': at most %d listen URLs", url,
			 GPUD_MAX_LISTEN);
		return -1;
	}
	c->listen[c->nlisten++] = strdup(url);
	return 0;
}

static int parse_int(const char *key, const char *value, long lo, long hi, long *out, char *err,
		     size_t errlen)
{
	char *end;
	errno = 0;
	long v = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v < lo || v > hi) {
		snprintf(err, errlen, "%s = '%s': expected an integer from %ld to %ld", key, value,
			 lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int config_set(gpud_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	long v;

	if (strcmp(key, "listen") == 0)
		return config_add_listen(c, value, err, errlen);
	if (strcmp(key, "backend") == 0) {
		if (strcmp(value, "auto") && strcmp(value, "cpu") && strcmp(value, "cuda")) {
			snprintf(err, errlen, "backend = '%s': expected auto, cpu or cuda", value);
			return -1;
		}
		snprintf(c->backend, sizeof(c->backend), "%s", value);
		return 0;
	}
	if (strcmp(key, "log_level") == 0) {
		int l = log_level_parse(value);
		if (l < 0) {
			snprintf(err, errlen,
				 "log_level = '%s': expected error, warn, info or debug", value);
			return -1;
		}
		c->log_level = l;
		return 0;
	}
	if (strcmp(key, "max_message_size") == 0) {
		uint64_t sz;
		if (config_parse_size(value, &sz) != 0 || sz < 4096 || sz > (4ull << 30)) {
			snprintf(err, errlen,
				 "max_message_size = '%s': expected a size from 4KiB to 4GiB, "
				 "e.g. 256MiB",
				 value);
			return -1;
		}
		c->max_message_size = sz;
		return 0;
	}
	if (strcmp(key, "device") == 0) {
		if (parse_int(key, value, 0, 1024, &v, err, errlen))
			return -1;
		c->device = (int)v;
		return 0;
	}
	if (strcmp(key, "contexts") == 0) {
		if (parse_int(key, value, 1, 4096, &v, err, errlen))
			return -1;
		c->contexts = (int)v;
		return 0;
	}
	if (strcmp(key, "streams") == 0) {
		if (parse_int(key, value, 1, 256, &v, err, errlen))
			return -1;
		c->streams = (int)v;
		return 0;
	}
	if (strcmp(key, "run_slots") == 0) {
		if (parse_int(key, value, 0, 4096, &v, err, errlen))
			return -1;
		c->run_slots = (int)v;
		return 0;
	}
	if (strcmp(key, "poll_us") == 0) {
		if (parse_int(key, value, 0, 1000000, &v, err, errlen))
			return -1;
		c->poll_us = (int)v;
		return 0;
	}
	if (strcmp(key, "staging_buffers") == 0) {
		if (parse_int(key, value, 2, 1024, &v, err, errlen))
			return -1;
		c->staging_buffers = (int)v;
		return 0;
	}
	if (strcmp(key, "staging_chunk") == 0) {
		uint64_t sz;
		if (config_parse_size(value, &sz) != 0 || sz < (64u << 10) || sz > (1ull << 30)) {
			snprintf(
				err, errlen,
				"staging_chunk = '%s': expected a size from 64KiB to 1GiB, e.g. 4MiB",
				value);
			return -1;
		}
		c->staging_chunk = sz;
		return 0;
	}
	if (strcmp(key, "shm_socket") == 0) {
		if (strlen(value) >= sizeof(c->shm_socket) ||
		    (strcmp(value, "off") != 0 && value[0] != '/')) {
			snprintf(
				err, errlen,
				"shm_socket = '%s': expected an absolute path shorter than %zu bytes, "
				"or off",
				value, sizeof(c->shm_socket));
			return -1;
		}
		snprintf(c->shm_socket, sizeof(c->shm_socket), "%s", value);
		return 0;
	}
	if (strcmp(key, "admin_tenants") == 0) {
		if (strlen(value) >= sizeof(c->admin_tenants)) {
			snprintf(err, errlen, "admin_tenants: at most %zu characters",
				 sizeof(c->admin_tenants) - 1);
			return -1;
		}
		snprintf(c->admin_tenants, sizeof(c->admin_tenants), "%s", value);
		return 0;
	}
	if (strcmp(key, "kernel_cache") == 0) {
		if (strlen(value) >= sizeof(c->kernel_cache) || (value[0] && value[0] != '/')) {
			snprintf(err, errlen,
				 "kernel_cache = '%s': expected an absolute directory shorter than "
				 "%zu bytes (or nothing)",
				 value, sizeof(c->kernel_cache));
			return -1;
		}
		snprintf(c->kernel_cache, sizeof(c->kernel_cache), "%s", value);
		snprintf(c->kernel_cache_dir, sizeof(c->kernel_cache_dir), "%s%s", value,
			 value[0] ? "/cubin" : "");
		return 0;
	}
	if (strcmp(key, "tokens_file") == 0) {
		if (strlen(value) >= sizeof(c->tokens_file)) {
			snprintf(err, errlen, "tokens_file: a path shorter than %zu bytes",
				 sizeof(c->tokens_file));
			return -1;
		}
		snprintf(c->tokens_file, sizeof(c->tokens_file), "%s", value);
		return 0;
	}
	char *tls = !strcmp(key, "tls_cert")  ? c->tls_cert
		    : !strcmp(key, "tls_key") ? c->tls_key
		    : !strcmp(key, "tls_ca")  ? c->tls_ca
					      : NULL;
	if (tls) {
		if (strlen(value) >= sizeof(c->tls_cert)) {
			snprintf(err, errlen, "%s: a path shorter than %zu bytes", key,
				 sizeof(c->tls_cert));
			return -1;
		}
		snprintf(tls, sizeof(c->tls_cert), "%s", value);
		return 0;
	}
	if (strcmp(key, "socket_mode") == 0) {
		char *end;
		long m = strtol(value, &end, 8);
		if (end == value || *end != '\0' || m < 0 || m > 0777) {
			snprintf(err, errlen,
				 "socket_mode = '%s': expected an octal mode, e.g. 0660", value);
			return -1;
		}
		c->socket_mode = (int)m;
		return 0;
	}
	if (strcmp(key, "socket_group") == 0) {
		if (strlen(value) >= sizeof(c->socket_group)) {
			snprintf(err, errlen, "socket_group: a name shorter than %zu bytes",
				 sizeof(c->socket_group));
			return -1;
		}
		snprintf(c->socket_group, sizeof(c->socket_group), "%s", value);
		return 0;
	}
	if (strcmp(key, "shm_max_bytes") == 0) {
		if (config_parse_size(value, &c->shm_max_bytes) != 0) {
			snprintf(err, errlen, "shm_max_bytes = '%s': expected a size, e.g. 64GiB",
				 value);
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "cpu_threads") == 0) {
		if (parse_int(key, value, 1, 1024, &v, err, errlen))
			return -1;
		c->cpu_threads = (int)v;
		return 0;
	}
	/* The pool's bins: see daemon/pool.h. */
	unsigned *bin = !strcmp(key, "pool_bin_growth") ? &c->pool_bin_growth
			: !strcmp(key, "pool_min_bin")  ? &c->pool_min_bin
			: !strcmp(key, "pool_max_bin")  ? &c->pool_max_bin
							: NULL;
	if (bin) {
		if (parse_int(key, value, bin == &c->pool_bin_growth ? 2 : 0, 62, &v, err, errlen))
			return -1;
		*bin = (unsigned)v;
		return 0;
	}
	uint64_t *size = !strcmp(key, "pool_max_cached")  ? &c->pool_max_cached
			 : !strcmp(key, "pool_max_total") ? &c->pool_max_total
			 : !strcmp(key, "pool_reserve")   ? &c->pool_reserve
							  : NULL;
	if (size) {
		if (config_parse_size(value, size) != 0) {
			snprintf(err, errlen, "%s = '%s': expected a size, e.g. 4GiB (0 for none)",
				 key, value);
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "shutdown_timeout") == 0) {
		char *end;
		double d = strtod(value, &end);
		if (end == value || *end != '\0' || !(d >= 0 && d <= 86400)) {
			snprintf(err, errlen,
				 "shutdown_timeout = '%s': expected seconds from 0 to 86400",
				 value);
			return -1;
		}
		c->shutdown_timeout = d;
		return 0;
	}
	snprintf(err, errlen, "unknown key '%s'", key);
	return -1;
}

struct ini_ctx {
	gpud_config *c;
	char *err;
	size_t errlen;
	int failed;
};

static int on_ini_pair(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *ctx = user;

	if (ctx->failed)
		return 0;
	gpud_config *c = ctx->c;
	if (strcmp(section, "quota") == 0) {
		if (quota_set(&c->quota, name, value, ctx->err, ctx->errlen) != 0)
			ctx->failed = 1;
		return !ctx->failed;
	}
	if (strncmp(section, "tenant ", 7) == 0 && section[7] != '\0') {
		const char *tn = section + 7;
		int i;
		for (i = 0; i < c->ntenants && strcmp(c->tenants[i].name, tn) != 0; i++)
			;
		if (i == c->ntenants) {
			if (c->ntenants == GPUD_MAX_TENANT_RULES ||
			    strlen(tn) >= GPUD_TENANT_NAME) {
				snprintf(ctx->err, ctx->errlen,
					 "[tenant %s]: at most %d tenant sections, names under %d "
					 "characters",
					 tn, GPUD_MAX_TENANT_RULES, GPUD_TENANT_NAME);
				ctx->failed = 1;
				return 0;
			}
			/* Starts from [quota] as read so far: put [quota] first. */
			snprintf(c->tenants[i].name, sizeof(c->tenants[i].name), "%s", tn);
			c->tenants[i].quota = c->quota;
			c->ntenants++;
		}
		if (quota_set(&c->tenants[i].quota, name, value, ctx->err, ctx->errlen) != 0)
			ctx->failed = 1;
		return !ctx->failed;
	}
	if (section[0] != '\0' && strcmp(section, "gpud") != 0) {
		snprintf(ctx->err, ctx->errlen,
			 "unknown section [%s] (expected [gpud], [quota] or [tenant NAME])",
			 section);
		ctx->failed = 1;
		return 0;
	}
	if (config_set(ctx->c, name, value, ctx->err, ctx->errlen) != 0) {
		ctx->failed = 1;
		return 0;
	}
	return 1;
}

/* Turns inih's result (0, -1 for open, -2 for memory, or a line) into a message. */
static int ini_result(int rv, struct ini_ctx *ctx, const char *name, char *err, size_t errlen)
{
	char what[512];

	if (rv == 0)
		return 0;
	if (rv == -1) {
		snprintf(err, errlen, "%s: cannot open: %s", name, strerror(errno));
		return -1;
	}
	if (rv == -2) {
		snprintf(err, errlen, "%s: out of memory while parsing", name);
		return -1;
	}
	snprintf(what, sizeof(what), "%s", ctx->failed ? ctx->err : "syntax error");
	snprintf(err, errlen, "%s:%d: %s", name, rv, what);
	return -1;
}

int config_load_file(gpud_config *c, const char *path, char *err, size_t errlen)
{
	char buf[512] = "";
	/* Stop at the first error, so the line inih reports is the line that failed. */
	ini_stop_on_first_error = true;
	struct ini_ctx ctx = {c, buf, sizeof(buf), 0};
	return ini_result(ini_parse(path, on_ini_pair, &ctx), &ctx, path, err, errlen);
}

int config_load_string(gpud_config *c, const char *text, const char *name, char *err, size_t errlen)
{
	char buf[512] = "";
	ini_stop_on_first_error = true;
	struct ini_ctx ctx = {c, buf, sizeof(buf), 0};
	return ini_result(ini_parse_string(text, on_ini_pair, &ctx), &ctx, name, err, errlen);
}
