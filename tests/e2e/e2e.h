/*
 * tests/e2e/e2e.h — what the end-to-end suite's files share: the gpud fixture
 * and the gpuctl runner (fixture.c, on top of tests/harness.h), the reference
 * periodogram (fixture_data.c), libgpud-client helpers (fixture_client.c),
 * and a raw-protocol encoder and decoder (fixture_raw.c).
 * Each area file (library.c, sessions.c, gpuctl.c, gpuctl_cli.c, readme.c,
 * limits.c, shutdown.c, drain.c, tenants.c, faults.c, concurrency.c, client_*.c,
 * trace.c, logs.c, endpoints.c, fairness.c, batch.c,
 * host_memory.c, access.c, wedged.c, reload.c, hello.c, memory.c, wedge.c,
 * health.c) makes its Check test cases;
 * main.c puts them in one suite. shell.c runs command lines.
 */
#ifndef GPUD_TESTS_E2E_H
#define GPUD_TESTS_E2E_H

#include <check.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <nng/nng.h>

#include <gpud/client.h>

#include "tests/harness.h"

/* Protocol constants, restated here (not taken from proto/) on purpose: the
 * raw tests are a second, independent reading of proto/gpud.proto. */
/*
 * How long a test waits for something gpud reports (status, a counter, a
 * log line) before it fails: a safety net, not a timing. The waits end on
 * the event; the slowest measured with two busy loops on 2 cores (make
 * test-stress) was well under a second.
 */
#define E2E_SAFETY_S 60.0

#define WIRE_VERSION 1u
#define ST_OK 0
#define ST_INVALID_ARGUMENT 1
#define ST_TOO_LARGE 5
#define ST_PROTOCOL 7
#define ST_NOT_FOUND 2
#define ST_NO_SESSION 15

/* --- the program and the fixture's gpud (fixture.c; main sets them) ------------------------ */

extern const char *gpud_bin, *gpuctl_bin, *backend_env;
extern char base_dir[256];       /* made by main; every test's directory lives in it */
extern char self_path[PATH_MAX]; /* this program, for its helper modes */
extern harness_gpud e2e_gpud;    /* the test's gpud: its dir, url, log and pid */

const char *expected_backend(void);
/* Starts the test's gpud (--log-level debug) in a fresh directory of base_dir: with
 * config text (or NULL), extra arguments and environment (NULL-terminated, or NULL). */
void start_gpud(const char *config, const char *const *extra, const char *const *env);
/* The same, gpud joining the cgroup at directory cgroup (NULL: none) before exec. */
void start_gpud_in_cgroup(const char *config, const char *const *extra, const char *const *env,
			  const char *cgroup);
void setup_default(void);
/* Stops it with SIGTERM; it must exit 0 within 10 s. */
void gpud_teardown(void);
/* Stops the test's gpud (hard: SIGKILL, as a crash) and starts it again in the same
 * directory, on the same URL, with the same options. */
void stop_gpud_now(int hard);
void start_gpud_again(void);
/* A test library built beside this program (BUILD/tests/NAME: make builds them
 * with test-e2e) into so, and a fresh record file for it in base_dir
 * (PREFIX-PID.rec, none yet) into rec; fails the test if the library is missing. */
void test_library(const char *name, const char *prefix, char *so, size_t solen, char *rec,
		  size_t reclen);

/* --- two tenants over tcp:// (two_tenants.c) ---------------------------------------------- */

#define TOKEN_ALICE "alice-0123456789abcdef"
#define TOKEN_BOB "bob-fedcba9876543210xx"
extern char tenants_url[64];     /* start_tenants' tcp:// URL */
extern char tenants_tokens[700]; /* and its tokens file */
/* start_gpud_in_cgroup with a tokens file for alice and bob (TOKEN_*), "--listen
 * tenants_url" (a free port) before extra, and conf_tail after the tokens_file line of
 * [gpud] (more [gpud] keys, then any sections). */
void start_tenants(const char *conf_tail, const char *const *extra, const char *const *env,
		   const char *cgroup);
/* A connection to tenants_url with token (120 s timeout); the test fails if none. */
gpud_client *connect_token(const char *token);

void path_in_dir(char *buf, size_t len, const char *name); /* a file in the test's directory */
/* A loopback TCP port nothing listens on now (bound with port 0, released). */
int e2e_free_port(void);
void write_text(const char *path, const char *text);

/* --- gpuctl ----------------------------------------------------------------------------- */

typedef struct ctl_result {
	int code; /* exit status, or 128 + signal */
	char cmd[1024];
	char out[65536];
	char err[16384];
} ctl_result;

/* Runs gpuctl ARGS... (NULL-terminated) with GPUD_URL=u, in the test's directory; the
 * result is static, overwritten by the next call. */
ctl_result *ctl_url(const char *u, ...);
#define CTL(...) ctl_url(e2e_gpud.url, __VA_ARGS__, (const char *)NULL)
#define CTL_AT(u, ...) ctl_url(u, __VA_ARGS__, (const char *)NULL)

void assert_ctl_ok(const ctl_result *r);
void assert_daemon_alive(const char *after);
void ctl_expect_error(int line, int want_code, const char *words, ...);
#define CTL_FAIL(code, words, ...)                                                                 \
	ctl_expect_error(__LINE__, code, words, __VA_ARGS__, (const char *)NULL)

/* --- command lines as a user types them (shell.c) ---------------------------------------- */

/* bash -c line in the test's directory, gpuctl first on PATH, GPUD_URL the test's gpud; the
 * result is static, overwritten by the next call. */
ctl_result *sh_run(const char *line);
/* The same with stderr (and /dev/tty) a pseudo-terminal: err is what it showed. */
ctl_result *sh_run_tty(const char *line);
void assert_sh_ok(const ctl_result *r);

/* --- data and the reference periodogram (fixture_data.c) ------------------------------- */

void gen_ls(uint64_t seed, size_t nx, size_t nf, double *x, double *y, double *f);
void round_to_f32(double *v, size_t n);
void *to_dtype(const double *v, size_t n, gpud_dtype dt);
double elem(const void *p, gpud_dtype dt, size_t i);
/* scipy.signal.lombscargle(x, y, f, precenter, normalize) of scipy >= 1.15 (no weights). */
void ls_ref(const double *x, const double *y, size_t nx, const double *f, size_t nf, int precenter,
	    int normalize, double *out);
/* Its other arguments; ls_ref_full writes the result's real parts to re and, where im is not
 * NULL, its imaginary parts (0 but for amplitude) to im. */
typedef struct ls_opts {
	const double *w; /* the weights, or NULL */
	int precenter, floating_mean;
	int normalize; /* 0 power, 1 normalize, 2 amplitude */
	int legacy;    /* scipy <= 1.14: precenter and normalize only */
} ls_opts;
void ls_ref_full(const double *x, const double *y, size_t nx, const double *f, size_t nf,
		 const ls_opts *o, double *re, double *im);
double rel_err(const void *got, gpud_dtype dt, const double *ref, size_t n, size_t *bad);
double tol_for(gpud_dtype dt);
void assert_matches(const void *got, gpud_dtype dt, const double *ref, size_t n, const char *what);
void save_npy(const char *path, gpud_dtype dt, int ndim, const uint64_t *shape, const void *data);
void save_vec(const char *path, gpud_dtype dt, const double *v, size_t n);
/* v saved as FILE (dt) in the test's directory; arg gets "NAME=its path". */
void npy_arg(char *arg, size_t len, const char *name, const char *file, gpud_dtype dt,
	     const double *v, size_t n);
void save_ls_inputs(const char *prefix, const double *x, const double *y, size_t nx,
		    const double *f, size_t nf, char *px, char *py, char *pf);

/* --- libgpud-client helpers (fixture_client.c) ------------------------------------------ */

gpud_client *lib_connect(void);

#define LIB_OK(c, call)                                                                            \
	do {                                                                                       \
		gpud_status st_ = (call);                                                          \
		ck_assert_msg(st_ == GPUD_OK, "%s: %s: %s", #call, gpud_strerror(st_),             \
			      gpud_errmsg(c));                                                     \
	} while (0)

/* Expects call to fail with status want and a message containing words. */
#define LIB_FAIL(c, call, want, words)                                                             \
	do {                                                                                       \
		gpud_status st_ = (call);                                                          \
		ck_assert_msg(st_ == (want), "%s: got %d (%s: %s), expected %d (%s)", #call,       \
			      (int)st_, gpud_strerror(st_), gpud_errmsg(c), (int)(want),           \
			      gpud_strerror(want));                                                \
		ck_assert_msg(strstr(gpud_errmsg(c), (words)) != NULL,                             \
			      "%s: message '%s' does not mention '%s'", #call, gpud_errmsg(c),     \
			      (words));                                                            \
	} while (0)

gpud_daemon_status lib_status(gpud_client *c);
/* The status once pred holds, or the last one at timeout_s (for the caller to assert on). */
gpud_daemon_status wait_status(gpud_client *c, int (*pred)(const gpud_daemon_status *),
			       double timeout_s);
gpud_daemon_status wait_no_buffers(gpud_client *c, double timeout_s);
/* The helper modes' start: this process as uid (needs root), connected to url; NULL after
 * printing why. */
gpud_client *connect_as_uid(long uid, const char *url);
/* gpud holds no buffers once the connections of what ran `after` have closed. */
void assert_no_buffers_left(const char *after);
void assert_fresh_client_works(const char *after);

typedef struct ls_result {
	gpud_status st;
	char msg[1024];
	gpud_output out;
	size_t nout;
	gpud_run_info info;
} ls_result;

void ls_lib_run(gpud_client *c, gpud_dtype dt, const double *x, const double *y, size_t nx,
		const double *f, size_t nf, int precenter, int normalize, gpud_handle pgram_buf,
		void *result, ls_result *res);

/* --- gpud's HTTP endpoint (metrics.c) ----------------------------------------------------- */

extern char e2e_metrics_addr[128]; /* HOST:PORT, set by e2e_find_metrics_addr */
/* Reads where the test's gpud serves metrics_listen (asked for port 0) from its log. */
void e2e_find_metrics_addr(void);
/* GET http://e2e_metrics_addr/path: the status (0 if no answer) and the body. */
int e2e_http_get(const char *path, char *body, size_t cap);
/* The value of the sample named exactly `series` (name{labels}) on a /metrics page, or -1. */
double e2e_sample(const char *page, const char *series);

/* --- raw wire messages (a plain nng REQ socket and hand-made protobuf; fixture_raw.c) ------ */

typedef struct pb {
	uint8_t b[512];
	size_t n;
} pb;

void pb_varint(pb *p, uint64_t v);
void pb_key(pb *p, unsigned field, unsigned wiretype);
void pb_uint(pb *p, unsigned field, uint64_t v);
void pb_sub(pb *p, unsigned field, const pb *sub);
pb pb_request(uint32_t version, uint64_t id, unsigned body_field, const pb *body);
uint8_t *frame(const pb *hdr, const void *payload, size_t payload_len, size_t *total);

typedef struct raw_reply {
	uint64_t version, id, code;
	char message[1024];
	int body_field;     /* the oneof body present, 0 if none */
	uint8_t body[1024]; /* its bytes (first 1024) */
	size_t body_len;
} raw_reply;

int parse_reply(const uint8_t *m, size_t len, raw_reply *r);
int pb_find(const uint8_t *b, size_t n, unsigned field, const uint8_t **p, size_t *len,
	    uint64_t *v);
nng_socket raw_open(int timeout_ms);
/* alloc of n float64 (no data) on a raw connection: the new buffer's handle. */
uint64_t raw_alloc_f64(nng_socket s, uint64_t n);
/* hello on a raw connection over ipc://: its region socket path and session key. */
void raw_hello(nng_socket s, char *path, size_t pathlen, uint8_t key[16]);

/* The region socket's messages (proto/shm.h), restated (not taken from proto/) on
 * purpose: the raw tests are a second, independent reading of the protocol. */
typedef struct t_shm_register {
	char magic[8];
	uint8_t key[16];
	uint64_t size;
	uint32_t flags, reserved;
} t_shm_register;
typedef struct t_shm_file_io { /* GPUD_SHM_READ (8) or GPUD_SHM_WRITE (16), one file */
	char magic[8];
	uint8_t key[16];
	uint32_t flags, reserved;
	uint64_t region, offset, length, file_offset;
} t_shm_file_io;
typedef struct t_shm_reply {
	int32_t status;
	uint32_t pinned;
	uint64_t region;
	uint64_t size;
	char message[488];
} t_shm_reply;
/*
 * One registration on the region socket at path: the first msg_len bytes of
 * a register message (key, size, flags) with nfds descriptors attached; the
 * reply (status -1: none within 30 s).
 */
t_shm_reply shm_send(const char *path, const uint8_t *key, uint64_t size, uint32_t flags,
		     const int *fds, int nfds, size_t msg_len);
/* Any len bytes as one message on the region socket, with nfds (at most 8) descriptors. */
t_shm_reply shm_send_bytes(const char *path, const void *bytes, size_t len, const int *fds,
			   int nfds);
void raw_say_hello(nng_socket s);
int raw_call(const void *msg, size_t len, int timeout_ms, raw_reply *r);
void raw_call_on(nng_socket s, const void *msg, size_t len, raw_reply *r);
raw_reply raw_body_on(nng_socket s, uint64_t id, unsigned field, const pb *body,
		      const void *payload, size_t plen);
int raw_call_isolated(const void *msg, size_t len, int timeout_ms, raw_reply *r);
void raw_expect(const void *msg, size_t len, uint64_t want_code, const char *words,
		const char *what);

/* --- this program's helper modes (see main) --------------------------------------------- */

int raw_send_main(const char *u, const char *path, int timeout_ms); /* fixture_raw.c */
int as_uid_main(long uid, const char *u);                           /* tenants.c */
int doomed_main(const char *u, const char *kind);                   /* faults.c */

/* --- the test cases, in the suite's order ------------------------------------------------- */

TCase *e2e_library(void);      /* library.c */
TCase *e2e_sessions(void);     /* sessions.c */
TCase *e2e_gpuctl(void);       /* gpuctl.c */
TCase *e2e_no_libraries(void); /* gpuctl.c */
TCase *e2e_gpuctl_cli(void);   /* gpuctl_cli.c */
TCase *e2e_gpuctl_quota(void); /* gpuctl_cli.c */
TCase *e2e_readme(void);       /* readme.c */
TCase *e2e_limits(void);       /* limits.c */
TCase *e2e_shutdown(void);     /* shutdown.c */
TCase *e2e_drain(void);        /* drain.c */
TCase *e2e_drain_grace(void);  /* drain.c */
TCase *e2e_tenants(void);      /* tenants.c */
TCase *e2e_user_lookup(void);  /* user_lookup.c */
TCase *e2e_stale(void);        /* stale.c: freed data never reaches another tenant */
TCase *e2e_faults(void);       /* faults.c */
TCase *e2e_concurrency(void);  /* concurrency.c */
TCase *e2e_ring(void);         /* ring.c */
TCase *e2e_ring_off(void);     /* ring.c */
TCase *e2e_lend(void);         /* lend.c */
TCase *e2e_claims(void);       /* claims.c */
TCase *e2e_claims_expiry(void);
TCase *e2e_call_into(void);    /* call_into.c: outputs copied into the caller's arrays */
TCase *e2e_call_outputs(void); /* call_outputs.c: a one-trip call's outputs in the reply */
TCase *e2e_notify(void);       /* notify.c: sd_notify, READY=1 means serving */
TCase *e2e_trace(void);        /* trace.c: NVTX ranges */
TCase *e2e_logs(void);         /* logs.c: request log lines, text and JSON */
TCase *e2e_metrics(void);      /* metrics.c: /metrics, /healthz, /readyz */
TCase *e2e_batch(void);        /* batch.c: dynamic batching of lombscargle runs */
TCase *e2e_tls_errors(void);   /* tls_errors.c: why a TLS connect failed */
TCase *e2e_alias(void);        /* alias.c: outputs overlapping arguments, in place */
TCase *e2e_endpoints(void);    /* endpoints.c: lists of endpoints, failover */
TCase *e2e_devices(void);      /* devices.c: several devices, placement, peer copies */
TCase *e2e_devices_lost(void); /* devices.c: a lost device */
TCase *e2e_fairness(void);     /* fairness.c: tenants' runs side by side, run_timeout */
TCase *e2e_host_memory(void);  /* host_memory.c: host_memory_limit, in a memory cgroup */
TCase *e2e_wedge(void);     /* wedge.c: stray connects and a second gpud leave listeners serving */
TCase *e2e_health(void);    /* health.c: the self-probe, the loop's heartbeat, readiness */
TCase *e2e_access(void);    /* access.c: socket_mode and socket_group, who may connect */
TCase *e2e_wedged(void);    /* wedged.c: timeouts bound connect and hello */
TCase *e2e_msg_quota(void); /* limits.c: uploads split to fit the message_size quota */
/* access.c's helper mode: as uid 65534 with group gid (-1: none), connect and say how. */
int access_as_main(long gid, const char *url);
TCase *e2e_reload(void); /* reload.c: SIGHUP reloads the config */
TCase *e2e_hello(void);  /* hello.c: a later hello on a connection */
TCase *e2e_memory(void); /* memory.c: memory given back after big transfers */
/* lend.c's helper mode: as uid, borrow host memory and say whether it was zero. */
int lend_uid_main(long uid, const char *url);
int claim_uid_main(long uid, const char *path); /* claims.c */
/* "client": libgpud-client across restarts (client_session.c), shared between threads
 * (client_threads.c), asynchronous jobs and what is left behind (client_jobs.c). */
TCase *e2e_client(void);
void client_threads_tests(TCase *tc);
void client_jobs_tests(TCase *tc);
/* "tenants": the configs gpud refuses at start (tenants_refused.c). */
void tenants_refused_tests(TCase *tc);

#endif
