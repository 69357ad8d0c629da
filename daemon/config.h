/*
 * daemon/config.h — gpud's settings: defaults, the config file (INI, read
 * with libinih) and the command line, in that order of precedence; and what
 * a reload (SIGHUP, daemon/reload.c) may change of them while gpud runs:
 * each option of the table is live (applied at once) or needs a restart.
 */
#ifndef GPUD_CONFIG_H
#define GPUD_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define GPUD_MAX_LISTEN 16
/* The longest line of the config file, newline not counted (libinih's
 * INI_MAX_LINE, 200 with its NUL, less the newline), and the largest file. */
#define CONFIG_LINE_MAX 198
#define CONFIG_FILE_MAX (1 << 20)
#define GPUD_DEFAULT_URL "ipc:///run/gpud/gpud.sock"

#define GPUD_MAX_TENANT_RULES 64
#define GPUD_TENANT_NAME 64
/* Devices one gpud drives at most (daemon/devices.h). */
#define GPUD_DEVICES_MAX 16

/* custom_kernels: its default, and the most it may be set to */
#define CONFIG_CUSTOM_KERNELS_DEFAULT 256
#define CONFIG_CUSTOM_KERNELS_MAX 65536

/* What one tenant may hold and do at once; 0 means no limit. */
typedef struct tenant_quota {
	uint64_t device_bytes; /* bytes of buffers, connection-owned and kept */
	uint64_t kept_buffers; /* buffers created with keep */
	uint64_t requests_in_flight;
	uint64_t message_size;      /* payload bytes of one request (also max_message_size) */
	uint64_t kernel_timeout_ms; /* a custom kernel's run (config: kernel_timeout, seconds) */
	uint64_t run_timeout_ms;    /* a built-in kernel's run (config: run_timeout, seconds) */
	/* custom kernels registered at once (daemon/registry.h): at the cap a
	 * registration evicts the least recently used unpinned one */
	uint64_t custom_kernels;
	/* device_bytes.N: bytes of buffers on device N alone (0: only the total) */
	uint64_t device_bytes_on[GPUD_DEVICES_MAX];
} tenant_quota;

typedef struct tenant_rule {
	char name[GPUD_TENANT_NAME];
	tenant_quota quota;
} tenant_rule;

typedef struct gpud_config {
	char *listen[GPUD_MAX_LISTEN];
	int nlisten;
	char backend[8]; /* "auto", "cpu" or "cuda" */
	/* devices (and device, its old name): "all", or ids "0,2" (cuda: CUDA
	 * ordinals); the cpu backend simulates cpu_devices devices 0..n-1 */
	int devices_all;
	int device_ids[GPUD_DEVICES_MAX];
	int ndevice_ids;
	int cpu_devices;
	/* a device lost (a sticky error in its context): 0 "serve" with the
	 * others, exit when none is left; 1 "exit" at once */
	int device_lost_exit;
	int log_level;                /* enum log_level */
	int log_format;               /* enum log_format: text or json lines */
	uint64_t max_message_size;    /* largest request gpud reads, bytes */
	int contexts;                 /* nng contexts: requests handled at once */
	int cpu_threads;              /* libuv work-queue threads (cpu: kernels; cuda: >= 4) */
	int streams;                  /* cuda backend: streams sessions are spread over */
	double shutdown_timeout;      /* seconds to finish in-flight work on SIGTERM */
	double drain_grace;           /* seconds jobs in progress go on after SIGTERM (drain.h) */
	double health_probe_interval; /* seconds between self-probes of the listeners; 0: none */
	/* cuda backend memory pool (daemon/backend/cuda/pool.h) */
	unsigned pool_bin_growth, pool_min_bin, pool_max_bin;
	uint64_t pool_max_cached, pool_max_total, pool_reserve;
	/* host regions (daemon/regions.h): the region socket ("": next to the
	 * first ipc:// socket, "off": none) and bytes one connection may map */
	char shm_socket[108];
	uint64_t shm_max_bytes;
	/* host memory lent to clients (daemon/lend.h): spare bytes made ahead,
	 * the size of each spare, bytes kept per tenant and for how long unused */
	uint64_t lend_spare, lend_unit, lend_keep;
	int lend_keep_s;
	int lend_claim_s; /* memory lent before hello, unclaimed, given back after (daemon/claims.h) */
	/* host memory gpud may commit for clients (daemon/hostmem.h); 0: auto */
	uint64_t host_memory_limit;
	/* cuda backend: pinned staging buffers for copies through messages */
	int staging_buffers;
	uint64_t staging_chunk;
	/* cuda backend: microseconds the loop polls a young job's completion */
	int poll_us;
	/* request rings (daemon/ring.h) for ipc:// clients: on (1) or off (0),
	 * and the microseconds the loop polls a ring after its last use */
	int ring;
	int ring_spin_us;
	/* tenants that may register kernels shared with every tenant, and see
	 * and free every tenant's kept buffers */
	char admin_tenants[512];
	/* the metrics and health endpoint (daemon/observe.h): "HOST:PORT", ""
	 * for none; and how many tenants get a label of their own there */
	char metrics_listen[128];
	int metrics_tenants;
	/* custom kernels: registrations and compiled code kept here ("": none) */
	char kernel_cache[512];
	char kernel_cache_dir[600]; /* kernel_cache/cubin, derived */
	/* custom kernels run in a process per tenant (cuda), 1; or in gpud's
	 * own context, 0 */
	int kernel_workers;
	/* kernel runs in the backend at once (0: streams on cuda, twice
	 * cpu_threads on cpu); more wait, tenants served round-robin */
	int run_slots;
	/* dynamic batching (daemon/batch.h, daemon/verbs/batch_run.c): small
	 * single-series lombscargle runs arriving within batch_delay_us of the
	 * first (0: off) run as one launch of at most batch_max series, each
	 * of work n * nf at most batch_max_work */
	int batch_delay_us;
	int batch_max;
	int batch_max_work;
	/* tenants: [quota] defaults, [tenant NAME] overrides, tcp:// tokens */
	tenant_quota quota;
	tenant_rule tenants[GPUD_MAX_TENANT_RULES];
	int ntenants;
	char tokens_file[256];
	/* tls+tcp:// listeners: the server's certificate chain and key (PEM),
	 * and optionally a CA that client certificates are checked against */
	char tls_cert[256], tls_key[256], tls_ca[256];
	/* ipc:// socket files (and the region socket): mode and group */
	int socket_mode; /* -1: as created (umask) */
	char socket_group[64];
} gpud_config;

/* 1 if name is listed in admin_tenants. */
int config_is_admin(const gpud_config *c, const char *name);
/* The quota of tenant name: its [tenant NAME] section over [quota]
 * (daemon/config_tenants.c). */
tenant_quota config_quota(const gpud_config *c, const char *name);

/* The region socket for cfg: "" when none (off, or no listener makes a
 * socket file: daemon/endpoint/endpoint.h, path); by default next to the
 * first listener's socket file. */
void config_shm_path(const gpud_config *c, char *out, size_t outlen);

void config_defaults(gpud_config *c);
void config_free(gpud_config *c);

/* Reads an INI file into c. 0, or -1 with "FILE:LINE: what" in err. */
int config_load_file(gpud_config *c, const char *path, char *err, size_t errlen);
/* The same from a string (tests); name is used in messages. */
int config_load_string(gpud_config *c, const char *text, const char *name, char *err,
		       size_t errlen);

/* Sets one key; used by the file parser and the command line. 0 or -1 + err. */
int config_set(gpud_config *c, const char *key, const char *value, char *err, size_t errlen);

/* "256MiB", "1G", "4096", "64k" -> bytes. 0 or -1 on a malformed size. */
int config_parse_size(const char *s, uint64_t *out);

/*
 * Where the settings come from, kept for a reload: the config file (-c) and
 * the command line's options in their order, applied over the file's (a
 * --listen replaces the file's whole list). The strings are argv's.
 */
#define CONFIG_MAX_FLAGS 64
typedef struct config_source {
	const char *path; /* NULL: no config file */
	struct {
		const char *key, *value;
	} flags[CONFIG_MAX_FLAGS];
	int nflags;
	int listen_flags; /* how many of them are listen */
} config_source;

/*
 * c from the defaults, src's file and flags, then $GPUD_URL (or
 * GPUD_DEFAULT_URL) where no listen URL was given. 0, or -1 with c freed and
 * err saying what and where: "config FILE:LINE: what", "--KEY: what" or
 * "GPUD_URL: what".
 */
int config_build(gpud_config *c, const config_source *src, char *err, size_t errlen);

/*
 * What a reload does with the options that differ between the running
 * settings cur and the file's next: fn gets each, in the table's order,
 * with live 1 (config_apply_live applies it) or 0 (it needs a restart: the
 * running value stays). The [quota] and [tenant NAME] sections come as
 * "[quota]" and "[tenant]" (live).
 */
void config_changes(const gpud_config *cur, const gpud_config *next,
		    void (*fn)(void *arg, const char *name, int live), void *arg);
/* Copies next's live options and its [quota] and [tenant NAME] sections into cur. */
void config_apply_live(gpud_config *cur, const gpud_config *next);
/* value of key is HOST:PORT: an IPv4 address, a host name or an IPv6 address
 * in brackets, and a port from 0 to 65535 (metrics_listen). 0 or -1 + err
 * ("key = 'value': ..."). */
int config_check_hostport(const char *key, const char *value, char *err, size_t errlen);

/* Appends a listen URL, checked by its endpoint kind (endpoint_check:
 * daemon/endpoint/endpoint.h). 0 or -1 + err. */
int config_add_listen(gpud_config *c, const char *url, char *err, size_t errlen);
void config_clear_listen(gpud_config *c);

#endif
