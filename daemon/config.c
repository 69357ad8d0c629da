/*
 * daemon/config.c — the config file is INI, parsed by libinih (Debian's
 * libinih-dev); this file maps keys to fields through one table of options
 * and checks values. Each option of the table says whether a reload
 * (SIGHUP) applies it live or it needs a restart (OPT_LIVE). A listen URL
 * is checked by its endpoint kind (daemon/endpoint/); the [quota] and
 * [tenant NAME] sections are config_tenants.c's, sizes config_size.c's.
 *
 * Threads: read at start, before any thread exists; a reload builds a new
 * gpud_config on the loop thread and copies its live options into the
 * running one there (daemon/reload.c). The running settings are the
 * loop's: no other thread reads a live option (the log's level and format
 * are copied into daemon/log.c's atomics).
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <ctype.h>
#include <stddef.h>
#include <stdbool.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/config_tenants.h"
#include "daemon/endpoint/endpoint.h"
#include "daemon/log.h"

void config_defaults(gpud_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->backend, sizeof(c->backend), "auto");
	c->device_ids[0] = 0;
	c->ndevice_ids = 1;
	c->cpu_devices = 1;
	c->log_level = LOG_INFO;
	c->log_format = LOG_FORMAT_TEXT;
	c->max_message_size = 256ull << 20;
	c->contexts = 64;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	c->cpu_threads = n > 0 ? (int)n : 4;
	c->shutdown_timeout = 30.0;
	c->health_probe_interval = 5.0;
	c->drain_grace = 2.0;
	c->metrics_tenants = 64;
	c->batch_max = 256;
	c->batch_max_work = 1 << 20;
	c->streams = 16;
	c->pool_bin_growth = 2;
	c->pool_min_bin = 9;  /* 512 B */
	c->pool_max_bin = 31; /* 2 GiB: larger blocks are allocated exactly */
	c->pool_max_cached = 4ull << 30;
	c->pool_max_total = 0; /* the device's memory */
	c->pool_reserve = 256ull << 20;
	c->shm_max_bytes = 64ull << 30;
	c->lend_spare = 64ull << 20;
	c->lend_unit = 32ull << 20;
	c->lend_keep = 64ull << 20;
	c->lend_keep_s = 300;
	c->lend_claim_s = 30;
	c->staging_buffers = 8;
	c->staging_chunk = 4ull << 20;
	c->poll_us = 1000;
	c->ring = 1;
	c->ring_spin_us = 200;
	c->quota = (tenant_quota){.device_bytes = 0,
				  .kept_buffers = 1024,
				  .requests_in_flight = 64,
				  .message_size = 0,
				  .kernel_timeout_ms = 10000,
				  .run_timeout_ms = 3600000,
				  .custom_kernels = CONFIG_CUSTOM_KERNELS_DEFAULT};
	c->kernel_workers = 1;
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
		const char *path = endpoint_path(c->listen[i]);
		if (path) {
			snprintf(out, outlen, "%s.shm", path);
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

/* A host name: labels of letters, digits and '-' between dots. */
static int is_host_name(const char *h)
{
	size_t n = strlen(h), label = 0;
	if (n == 0 || n > 253)
		return 0;
	for (const char *p = h; *p; p++) {
		if (*p == '.') {
			if (label == 0)
				return 0;
			label = 0;
		} else if (isalnum((unsigned char)*p) || *p == '-') {
			if (++label > 63)
				return 0;
		} else {
			return 0;
		}
	}
	return label > 0 || h[n - 1] == '.';
}

/* host (an address or a name, without brackets) is one this host can listen
 * on: it resolves, and a socket binds to it (port 0, closed at once). */
static int check_local(const char *key, const char *value, const char *host, char *err,
		       size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res, *ai;
	int rv = getaddrinfo(host, "0", &hints, &res), e = 0;
	if (rv != 0) {
		snprintf(err, errlen, "%s = '%s': the host '%s' does not resolve: %s", key, value,
			 host, gai_strerror(rv));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			e = errno;
			continue;
		}
		rv = bind(fd, ai->ai_addr, ai->ai_addrlen);
		e = rv ? errno : 0;
		close(fd);
		if (rv == 0)
			break;
	}
	freeaddrinfo(res);
	if (ai == NULL) {
		snprintf(err, errlen, "%s = '%s': gpud cannot listen on '%s' (%s)", key, value,
			 host, strerror(e));
		return -1;
	}
	return 0;
}

int config_check_hostport(const char *key, const char *value, char *err, size_t errlen)
{
	const char *colon = strrchr(value, ':');
	char host[256], inner[256];
	unsigned char addr[16];

	if (colon == NULL || colon == value || colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(colon + 1) > 5 ||
	    atol(colon + 1) > 65535 || (size_t)(colon - value) >= sizeof(host)) {
		snprintf(err, errlen,
			 "%s = '%s': expected HOST:PORT with a port from 0 to 65535, e.g. "
			 "127.0.0.1:9400 or [::1]:9400",
			 key, value);
		return -1;
	}
	memcpy(host, value, (size_t)(colon - value));
	host[colon - value] = '\0';
	size_t hl = strlen(host);
	if (host[0] == '[') {
		snprintf(inner, sizeof(inner), "%.*s", hl > 2 ? (int)hl - 2 : 0, host + 1);
		if (host[hl - 1] != ']' || inet_pton(AF_INET6, inner, addr) != 1) {
			snprintf(err, errlen,
				 "%s = '%s': '%s' is not an IPv6 address in brackets, e.g. [::1]",
				 key, value, host);
			return -1;
		}
		return check_local(key, value, inner, err, errlen);
	}
	if (strchr(host, ':')) {
		snprintf(err, errlen,
			 "%s = '%s': an IPv6 address goes in brackets, e.g. [::1]:9400", key,
			 value);
		return -1;
	}
	if (strspn(host, "0123456789.") == hl ? inet_pton(AF_INET, host, addr) != 1
					      : !is_host_name(host)) {
		snprintf(err, errlen,
			 "%s = '%s': '%s' is not an IPv4 address or a host name, e.g. 127.0.0.1 or "
			 "localhost",
			 key, value, host);
		return -1;
	}
	return check_local(key, value, host, err, errlen);
}

int config_add_listen(gpud_config *c, const char *url, char *err, size_t errlen)
{
	if (endpoint_check(url, err, errlen) != 0)
		return -1;
	if (c->nlisten == GPUD_MAX_LISTEN) {
		snprintf(err, errlen, "listen URL '%s': at most %d listen URLs", url,
			 GPUD_MAX_LISTEN);
		return -1;
	}
	c->listen[c->nlisten++] = strdup(url);
	return 0;
}

/*
 * The options of [gpud] (and the command line), one row each, in the manner
 * of Redis's config table: the type says how the text is parsed and checked,
 * and every message is written once per type.
 */
typedef enum opt_type {
	OPT_INT,     /* an int field, lo..hi */
	OPT_SIZE,    /* a uint64_t of bytes ("256MiB"), lo..hi (hi 0: no bound) */
	OPT_DOUBLE,  /* a double, lo..hi */
	OPT_STRING,  /* a char[size] */
	OPT_CHOICE,  /* one of choices: into a char[size], or (size 0) its index into an int */
	OPT_OCTAL,   /* an int file mode, 0..0777 */
	OPT_LISTEN,  /* appended to the listen URLs */
	OPT_LOG,     /* a log level's name (daemon/log.h) into an int */
	OPT_DEVICES, /* "all" or a list of device ids "0,2" */
} opt_type;

enum {
	STR_ABSOLUTE = 1u << 0, /* an absolute path */
	STR_OFF = 1u << 1,      /* ... or "off" */
	STR_EMPTY = 1u << 2,    /* ... or nothing */
	SIZE_AUTO = 1u << 3,    /* OPT_SIZE: or "auto", stored as 0 */
	/* A reload (SIGHUP) applies a new value at once; without it the option
	 * needs a restart and a reload leaves its running value as it is. */
	OPT_LIVE = 1u << 4,
	OPT_ALIAS = 1u << 5,    /* another name of the row before: compared there */
	STR_HOSTPORT = 1u << 6, /* HOST:PORT (config_check_hostport), or nothing */
};

typedef struct config_option {
	const char *name;
	opt_type type;
	size_t offset, size; /* the field in gpud_config */
	uint64_t lo, hi;
	const char *what; /* OPT_SIZE: an example; OPT_DOUBLE: the unit; OPT_STRING: a noun */
	const char *note; /* appended to OPT_SIZE's message */
	unsigned flags;   /* OPT_LIVE, OPT_ALIAS; OPT_STRING: STR_*; OPT_SIZE: SIZE_AUTO */
	const char *const *choices;
	void (*after)(gpud_config *c); /* derived fields, once the value is in */
} config_option;

#define FIELD(f) .offset = offsetof(gpud_config, f), .size = sizeof(((gpud_config *)0)->f)
#define INT(n, f, l, h)                                                                            \
	{                                                                                          \
		.name = n, .type = OPT_INT, FIELD(f), .lo = l, .hi = h                             \
	}
#define SIZE(n, f, l, h, ex, nt)                                                                   \
	{                                                                                          \
		.name = n, .type = OPT_SIZE, FIELD(f), .lo = l, .hi = h, .what = ex, .note = nt    \
	}
#define STRING(n, f, noun, fl)                                                                     \
	{                                                                                          \
		.name = n, .type = OPT_STRING, FIELD(f), .what = noun, .flags = fl                 \
	}

static const char *const backends[] = {"auto", "cpu", "cuda", NULL};
/* In device_lost_exit's order. */
static const char *const device_lost_choices[] = {"serve", "exit", NULL};

/* devices = all | ID[,ID...]: distinct ids, 0..1023, at most GPUD_DEVICES_MAX. */
static int set_devices(gpud_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	int ids[GPUD_DEVICES_MAX], n = 0;
	const char *p = value;

	if (strcmp(value, "all") == 0) {
		c->devices_all = 1;
		c->ndevice_ids = 0;
		return 0;
	}
	while (*p) {
		char *end;
		while (*p == ' ')
			p++;
		if (!isdigit((unsigned char)*p))
			goto bad;
		long d = strtol(p, &end, 10);
		if (d > 1024)
			goto bad;
		/* GPUD_DEVICES_REPEAT=1: a device may be listed twice (two gpud
		 * devices on one GPU: the multi-device paths on a one-GPU machine) */
		const char *repeat = getenv("GPUD_DEVICES_REPEAT");
		for (int i = 0; i < n && !(repeat && !strcmp(repeat, "1")); i++)
			if (ids[i] == (int)d) {
				snprintf(err, errlen, "%s = '%s': device %ld is listed twice", key,
					 value, d);
				return -1;
			}
		if (n == GPUD_DEVICES_MAX) {
			snprintf(err, errlen, "%s = '%s': at most %d devices", key, value,
				 GPUD_DEVICES_MAX);
			return -1;
		}
		ids[n++] = (int)d;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == ',' && p[1] != '\0')
			p++;
		else if (*p != '\0')
			goto bad;
	}
	if (n == 0)
		goto bad;
	memcpy(c->device_ids, ids, sizeof(ids));
	c->ndevice_ids = n;
	c->devices_all = 0;
	return 0;
bad:
	snprintf(err, errlen,
		 "%s = '%s': expected all, or device ids separated by commas (e.g. 0 or 0,2)", key,
		 value);
	return -1;
}
/* In enum log_format's order (daemon/log.h). */
static const char *const log_formats[] = {"text", "json", NULL};

static void derive_kernel_cache_dir(gpud_config *c)
{
	snprintf(c->kernel_cache_dir, sizeof(c->kernel_cache_dir), "%s%s", c->kernel_cache,
		 c->kernel_cache[0] ? "/cubin" : "");
}

/*
 * OPT_LIVE: what a reload applies — who may connect and what each tenant
 * may hold (tokens_file, the sections, admin_tenants), the TLS files of
 * tls+tcp:// listeners, the log, and what the loop reads at the moment it
 * acts (device_lost, shutdown_timeout, metrics_tenants). The rest shapes
 * what start made once (sockets, the backend and its devices, threads,
 * pools, rings, the region socket, budgets) and needs a restart.
 */
static const config_option options[] = {
	{.name = "listen", .type = OPT_LISTEN},
	{.name = "backend", .type = OPT_CHOICE, FIELD(backend), .choices = backends},
	{.name = "log_level", .type = OPT_LOG, FIELD(log_level), .flags = OPT_LIVE},
	/* size 0: the choice's index into the int */
	{.name = "log_format",
	 .type = OPT_CHOICE,
	 .offset = offsetof(gpud_config, log_format),
	 .choices = log_formats,
	 .flags = OPT_LIVE},
	{.name = "devices", .type = OPT_DEVICES},
	{.name = "device", .type = OPT_DEVICES, .flags = OPT_ALIAS},
	INT("cpu_devices", cpu_devices, 1, GPUD_DEVICES_MAX),
	{.name = "device_lost",
	 .type = OPT_CHOICE,
	 .offset = offsetof(gpud_config, device_lost_exit),
	 .choices = device_lost_choices,
	 .flags = OPT_LIVE},
	SIZE("max_message_size", max_message_size, 4096, 4ull << 30, "256MiB", NULL),
	INT("contexts", contexts, 1, 4096),
	INT("cpu_threads", cpu_threads, 1, 1024),
	INT("streams", streams, 1, 256),
	INT("run_slots", run_slots, 0, 4096),
	{.name = "batch_delay_us",
	 .type = OPT_INT,
	 FIELD(batch_delay_us),
	 .lo = 0,
	 .hi = 60000000,
	 .flags = OPT_LIVE},
	{.name = "batch_max",
	 .type = OPT_INT,
	 FIELD(batch_max),
	 .lo = 2,
	 .hi = 65536,
	 .flags = OPT_LIVE},
	{.name = "batch_max_work",
	 .type = OPT_INT,
	 FIELD(batch_max_work),
	 .lo = 1,
	 .hi = 1 << 30,
	 .flags = OPT_LIVE},
	INT("poll_us", poll_us, 0, 1000000),
	INT("ring", ring, 0, 1),
	INT("kernel_workers", kernel_workers, 0, 1),
	INT("ring_spin_us", ring_spin_us, 0, 1000000),
	INT("staging_buffers", staging_buffers, 2, 1024),
	SIZE("staging_chunk", staging_chunk, 64u << 10, 1ull << 30, "4MiB", NULL),
	INT("pool_bin_growth", pool_bin_growth, 2, 62),
	INT("pool_min_bin", pool_min_bin, 0, 62),
	INT("pool_max_bin", pool_max_bin, 0, 62),
	SIZE("pool_max_cached", pool_max_cached, 0, 0, "4GiB", " (0 for none)"),
	SIZE("pool_max_total", pool_max_total, 0, 0, "4GiB", " (0 for none)"),
	SIZE("pool_reserve", pool_reserve, 0, 0, "4GiB", " (0 for none)"),
	STRING("shm_socket", shm_socket, "path", STR_ABSOLUTE | STR_OFF),
	SIZE("shm_max_bytes", shm_max_bytes, 0, 0, "64GiB", NULL),
	SIZE("lend_spare", lend_spare, 0, 0, "64MiB", " (0 for none)"),
	SIZE("lend_unit", lend_unit, 1u << 20, 1ull << 30, "32MiB", NULL),
	SIZE("lend_keep", lend_keep, 0, 0, "64MiB", " (0 for none)"),
	INT("lend_keep_s", lend_keep_s, 0, 86400),
	INT("lend_claim_s", lend_claim_s, 1, 3600),
	{.name = "host_memory_limit",
	 .type = OPT_SIZE,
	 FIELD(host_memory_limit),
	 .lo = 1u << 20,
	 .what = "4GiB",
	 .note = ", or auto",
	 .flags = SIZE_AUTO},
	STRING("admin_tenants", admin_tenants, "list of tenant names", OPT_LIVE),
	STRING("metrics_listen", metrics_listen, "HOST:PORT", STR_HOSTPORT),
	{.name = "metrics_tenants",
	 .type = OPT_INT,
	 FIELD(metrics_tenants),
	 .lo = 1,
	 .hi = 100000,
	 .flags = OPT_LIVE},
	{.name = "kernel_cache",
	 .type = OPT_STRING,
	 FIELD(kernel_cache),
	 .what = "directory",
	 .flags = STR_ABSOLUTE | STR_EMPTY,
	 .after = derive_kernel_cache_dir},
	STRING("tokens_file", tokens_file, "path", OPT_LIVE),
	STRING("tls_cert", tls_cert, "path", OPT_LIVE),
	STRING("tls_key", tls_key, "path", OPT_LIVE),
	STRING("tls_ca", tls_ca, "path", OPT_LIVE),
	{.name = "socket_mode", .type = OPT_OCTAL, FIELD(socket_mode), .lo = 0, .hi = 0777},
	STRING("socket_group", socket_group, "name", 0),
	{.name = "health_probe_interval",
	 .type = OPT_DOUBLE,
	 FIELD(health_probe_interval),
	 .lo = 0,
	 .hi = 3600,
	 .what = "seconds"},
	{.name = "shutdown_timeout",
	 .type = OPT_DOUBLE,
	 FIELD(shutdown_timeout),
	 .lo = 0,
	 .hi = 86400,
	 .what = "seconds",
	 .flags = OPT_LIVE},
	{.name = "drain_grace",
	 .type = OPT_DOUBLE,
	 FIELD(drain_grace),
	 .lo = 0,
	 .hi = 3600,
	 .what = "seconds",
	 .flags = OPT_LIVE},
};

/* 4096 -> "4KiB", 1 << 30 -> "1GiB": a bound in a message. */
static void size_text(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	while (u < 4 && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)v, units[u]);
}

static int set_int(const config_option *o, int *field, const char *value, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long v = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v < (long)o->lo || v > (long)o->hi) {
		snprintf(err, errlen, "%s = '%s': expected an integer from %ld to %ld", o->name,
			 value, (long)o->lo, (long)o->hi);
		return -1;
	}
	*field = (int)v;
	return 0;
}

static int set_size(const config_option *o, uint64_t *field, const char *value, char *err,
		    size_t errlen)
{
	uint64_t v;
	if ((o->flags & SIZE_AUTO) && strcmp(value, "auto") == 0) {
		*field = 0;
		return 0;
	}
	if (config_parse_size(value, &v) == 0 && v >= o->lo && (o->hi == 0 || v <= o->hi)) {
		*field = v;
		return 0;
	}
	if (o->hi) {
		char lo[32], hi[32];
		size_text(o->lo, lo, sizeof(lo));
		size_text(o->hi, hi, sizeof(hi));
		snprintf(err, errlen, "%s = '%s': expected a size from %s to %s, e.g. %s", o->name,
			 value, lo, hi, o->what);
	} else if (o->lo) {
		char lo[32];
		size_text(o->lo, lo, sizeof(lo));
		snprintf(err, errlen, "%s = '%s': expected a size of at least %s, e.g. %s%s",
			 o->name, value, lo, o->what, o->note ? o->note : "");
	} else {
		snprintf(err, errlen, "%s = '%s': expected a size, e.g. %s%s", o->name, value,
			 o->what, o->note ? o->note : "");
	}
	return -1;
}

static int set_double(const config_option *o, double *field, const char *value, char *err,
		      size_t errlen)
{
	char *end;
	double d = strtod(value, &end);
	if (end == value || *end != '\0' || !(d >= (double)o->lo && d <= (double)o->hi)) {
		snprintf(err, errlen, "%s = '%s': expected %s from %g to %g", o->name, value,
			 o->what, (double)o->lo, (double)o->hi);
		return -1;
	}
	*field = d;
	return 0;
}

static int set_string(const config_option *o, char *field, const char *value, char *err,
		      size_t errlen)
{
	int ok = strlen(value) < o->size;
	if (o->flags & STR_ABSOLUTE)
		ok = ok &&
		     (value[0] == '/' || ((o->flags & STR_OFF) && strcmp(value, "off") == 0) ||
		      ((o->flags & STR_EMPTY) && value[0] == '\0'));
	if (ok && (o->flags & STR_HOSTPORT) && value[0] &&
	    config_check_hostport(o->name, value, err, errlen) != 0)
		return -1;
	if (ok) {
		snprintf(field, o->size, "%s", value);
		return 0;
	}
	if (o->flags & STR_ABSOLUTE)
		snprintf(err, errlen, "%s = '%s': expected an absolute %s shorter than %zu bytes%s",
			 o->name, value, o->what, o->size,
			 (o->flags & STR_OFF)     ? ", or off"
			 : (o->flags & STR_EMPTY) ? " (or nothing)"
						  : "");
	else
		snprintf(err, errlen, "%s: a %s shorter than %zu bytes", o->name, o->what, o->size);
	return -1;
}

static int set_choice(const config_option *o, void *field, const char *value, char *err,
		      size_t errlen)
{
	char list[128];
	size_t n = 0;
	for (int i = 0; o->choices[i]; i++) {
		if (strcmp(value, o->choices[i]) == 0) {
			if (o->size)
				snprintf(field, o->size, "%s", value);
			else
				*(int *)field = i;
			return 0;
		}
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      i == 0              ? ""
				      : o->choices[i + 1] ? ", "
							  : " or ",
				      o->choices[i]);
	}
	snprintf(err, errlen, "%s = '%s': expected %s", o->name, value, list);
	return -1;
}

static int set_octal(const config_option *o, int *field, const char *value, char *err,
		     size_t errlen)
{
	char *end;
	long m = strtol(value, &end, 8);
	if (end == value || *end != '\0' || m < (long)o->lo || m > (long)o->hi) {
		snprintf(err, errlen, "%s = '%s': expected an octal mode, e.g. 0660", o->name,
			 value);
		return -1;
	}
	*field = (int)m;
	return 0;
}

int config_set(gpud_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		const config_option *o = &options[i];
		if (strcmp(key, o->name) != 0)
			continue;
		void *field = (char *)c + o->offset;
		int rv = -1;
		switch (o->type) {
		case OPT_INT:
			rv = set_int(o, field, value, err, errlen);
			break;
		case OPT_SIZE:
			rv = set_size(o, field, value, err, errlen);
			break;
		case OPT_DOUBLE:
			rv = set_double(o, field, value, err, errlen);
			break;
		case OPT_STRING:
			rv = set_string(o, field, value, err, errlen);
			break;
		case OPT_CHOICE:
			rv = set_choice(o, field, value, err, errlen);
			break;
		case OPT_OCTAL:
			rv = set_octal(o, field, value, err, errlen);
			break;
		case OPT_LISTEN:
			rv = config_add_listen(c, value, err, errlen);
			break;
		case OPT_DEVICES:
			rv = set_devices(c, key, value, err, errlen);
			break;
		case OPT_LOG:
			if ((rv = log_level_parse(value)) >= 0) {
				*(int *)field = rv;
				rv = 0;
			} else
				snprintf(err, errlen,
					 "%s = '%s': expected error, warn, info or debug", key,
					 value);
			break;
		}
		if (rv == 0 && o->after)
			o->after(c);
		return rv;
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
	int rv = config_tenant_key(ctx->c, section, name, value, ctx->err, ctx->errlen);
	if (rv != 0) { /* [quota] or [tenant NAME] */
		ctx->failed = rv < 0;
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

/*
 * Every line of text (len bytes) fits libinih's line: it reads a line in
 * pieces of CONFIG_LINE_MAX + 1 bytes (newline included) and takes the rest
 * of a longer one as a line of its own, so a long comment's tail would be
 * read as a key. A NUL would end the text there unread. 0, or -1 with err
 * saying name:line.
 */
static int check_lines(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
	const char *p = text, *end = text + len;
	for (int line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		if (memchr(p, '\0', n) != NULL) {
			snprintf(err, errlen, "%s:%d: a NUL byte (the file is not text)", name,
				 line);
			return -1;
		}
		if (n > CONFIG_LINE_MAX) {
			snprintf(err, errlen,
				 "%s:%d: the line is %zu bytes long; a line of the config file has "
				 "at most %d",
				 name, line, n, CONFIG_LINE_MAX);
			return -1;
		}
		p += n + 1;
	}
	return 0;
}

static int load_text(gpud_config *c, const char *text, size_t len, const char *name, char *err,
		     size_t errlen)
{
	char buf[512] = "";
	if (check_lines(text, len, name, err, errlen) != 0)
		return -1;
	/* Stop at the first error, so the line inih reports is the line that failed. */
	ini_stop_on_first_error = true;
	struct ini_ctx ctx = {c, buf, sizeof(buf), 0};
	return ini_result(ini_parse_string(text, on_ini_pair, &ctx), &ctx, name, err, errlen);
}

int config_build(gpud_config *c, const config_source *src, char *err, size_t errlen)
{
	char why[1024];

	config_defaults(c);
	if (src->path && config_load_file(c, src->path, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "config %s", why);
		goto fail;
	}
	if (src->listen_flags)
		config_clear_listen(c);
	for (int i = 0; i < src->nflags; i++)
		if (config_set(c, src->flags[i].key, src->flags[i].value, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "--%s: %s", src->flags[i].key, why);
			goto fail;
		}
	if (c->nlisten == 0) {
		const char *env = getenv("GPUD_URL");
		int from_env = env && *env;
		if (config_add_listen(c, from_env ? env : GPUD_DEFAULT_URL, why, sizeof(why)) !=
		    0) {
			snprintf(err, errlen, "%s%s", from_env ? "GPUD_URL: " : "", why);
			goto fail;
		}
	}
	return 0;
fail:
	config_free(c);
	return -1;
}

/* 1 if option o has the same value in a and b. */
static int option_same(const config_option *o, const gpud_config *a, const gpud_config *b)
{
	const char *fa = (const char *)a + o->offset, *fb = (const char *)b + o->offset;

	switch (o->type) {
	case OPT_LISTEN:
		if (a->nlisten != b->nlisten)
			return 0;
		for (int i = 0; i < a->nlisten; i++)
			if (strcmp(a->listen[i], b->listen[i]) != 0)
				return 0;
		return 1;
	case OPT_DEVICES:
		return a->devices_all == b->devices_all && a->ndevice_ids == b->ndevice_ids &&
		       memcmp(a->device_ids, b->device_ids,
			      (size_t)a->ndevice_ids * sizeof(a->device_ids[0])) == 0;
	case OPT_STRING:
		return strcmp(fa, fb) == 0;
	case OPT_CHOICE:
		/* size 0: the choice's index in an int */
		return o->size ? strcmp(fa, fb) == 0 : memcmp(fa, fb, sizeof(int)) == 0;
	default:
		return memcmp(fa, fb, o->size) == 0;
	}
}

void config_changes(const gpud_config *cur, const gpud_config *next,
		    void (*fn)(void *arg, const char *name, int live), void *arg)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		const config_option *o = &options[i];
		if (!(o->flags & OPT_ALIAS) && !option_same(o, cur, next))
			fn(arg, o->name, (o->flags & OPT_LIVE) != 0);
	}
	if (memcmp(&cur->quota, &next->quota, sizeof(tenant_quota)) != 0)
		fn(arg, "[quota]", 1);
	if (!config_tenants_same(cur, next))
		fn(arg, "[tenant]", 1);
}

void config_apply_live(gpud_config *cur, const gpud_config *next)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		const config_option *o = &options[i];
		if (!(o->flags & OPT_LIVE))
			continue;
		size_t size = o->size ? o->size : sizeof(int); /* an OPT_CHOICE index */
		memcpy((char *)cur + o->offset, (const char *)next + o->offset, size);
		if (o->after)
			o->after(cur);
	}
	cur->quota = next->quota;
	memcpy(cur->tenants, next->tenants, sizeof(cur->tenants));
	cur->ntenants = next->ntenants;
}

int config_load_file(gpud_config *c, const char *path, char *err, size_t errlen)
{
	/* Read whole, then checked and parsed: the lines checked are the lines parsed. */
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	char *text = malloc(CONFIG_FILE_MAX + 1);
	size_t n = text ? fread(text, 1, CONFIG_FILE_MAX + 1, f) : 0;
	int bad = text == NULL || ferror(f), e = errno;
	fclose(f);
	if (bad) {
		snprintf(err, errlen, "%s: cannot read: %s", path,
			 text ? strerror(e) : "out of memory");
		free(text);
		return -1;
	}
	if (n > CONFIG_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes; a config file has at most that",
			 path, CONFIG_FILE_MAX);
		free(text);
		return -1;
	}
	text[n] = '\0';
	int rv = load_text(c, text, n, path, err, errlen);
	free(text);
	return rv;
}

int config_load_string(gpud_config *c, const char *text, const char *name, char *err, size_t errlen)
{
	return load_text(c, text, strlen(text), name, err, errlen);
}
