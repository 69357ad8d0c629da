/*
 * daemon/main.c — gpud's command line: settings from defaults, the config
 * file, GPUD_URL and flags (later wins; the same again at each SIGHUP,
 * daemon/reload.c), then the loop runs until SIGINT or SIGTERM has drained
 * the in-flight requests.
 */
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#if GPUD_HAVE_CUDA
#include "daemon/backend/cuda/tworker_main.h"
#endif
#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/notify.h"
#include "daemon/server.h"
#include "daemon/trace.h"
#include "proto/wire.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpud [options]\n"
		   "\n"
		   "A GPU compute daemon: owns a CUDA context, a memory pool and warm kernels;\n"
		   "clients (libgpud-client, gpuctl) connect over nng sockets.\n"
		   "\n"
		   "options:\n"
		   "  -l, --listen URL          listen on URL: ipc://PATH, tcp://HOST:PORT or\n"
		   "                            tls+tcp://HOST:PORT (needs tls_cert and tls_key\n"
		   "                            in the config file); repeatable; replaces the\n"
		   "                            config file's list\n"
		   "  -b, --backend NAME        auto, cpu or cuda (default auto)\n"
		   "  -c, --config FILE         read settings from an INI file (see gpud.conf)\n"
		   "  -d, --device LIST         the CUDA devices to drive: all, or ordinals\n"
		   "                            such as 0 or 0,2 (default 0)\n"
		   "      --cpu-devices N       cpu backend: simulate N devices (default 1)\n"
		   "      --log-level LEVEL     error, warn, info or debug (default info)\n"
		   "      --max-message-size S  largest request payload, e.g. 256MiB\n"
		   "      --contexts N          requests handled at once (default 64)\n"
		   "  -V, --version             print the version and exit\n"
		   "  -h, --help                this text\n"
		   "\n"
		   "environment:\n"
		   "  GPUD_URL   listen URL when neither --listen nor the config file gives one\n"
		   "             (default " GPUD_DEFAULT_URL ")\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"backend", required_argument, NULL, 'b'},
		{"config", required_argument, NULL, 'c'},
		{"device", required_argument, NULL, 'd'},
		{"cpu-devices", required_argument, NULL, 'D'},
		{"log-level", required_argument, NULL, 'L'},
		{"max-message-size", required_argument, NULL, 'M'},
		{"contexts", required_argument, NULL, 'C'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	/* Flags are applied after the config file, so remember them in order;
	 * a reload (SIGHUP) applies them again over the file it reads. */
	static config_source src;
	int opt;
	gpud_config cfg;
	char err[1024];

#if GPUD_HAVE_CUDA
	/* A tenant worker (daemon/backend/cuda/tworker_main.c), started by gpud. */
	if (argc >= 2 && strcmp(argv[1], "--tenant-worker") == 0)
		return tworker_main(argc, argv);
#endif
	while ((opt = getopt_long(argc, argv, "l:b:c:d:Vh", opts, NULL)) != -1) {
		const char *key = NULL;
		switch (opt) {
		case 'l':
			key = "listen";
			src.listen_flags++;
			break;
		case 'b':
			key = "backend";
			break;
		case 'c':
			src.path = optarg;
			break;
		case 'd':
			key = "devices";
			break;
		case 'D':
			key = "cpu_devices";
			break;
		case 'L':
			key = "log_level";
			break;
		case 'M':
			key = "max_message_size";
			break;
		case 'C':
			key = "contexts";
			break;
		case 'V':
			printf("gpud %s (protocol %u)\n", GPUD_VERSION, GPUD_PROTOCOL_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (key) {
			if (src.nflags == CONFIG_MAX_FLAGS) {
				fprintf(stderr, "gpud: error: too many options\n");
				return 2;
			}
			src.flags[src.nflags].key = key;
			src.flags[src.nflags++].value = optarg;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpud: error: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	if (config_build(&cfg, &src, err, sizeof(err)) != 0) {
		fprintf(stderr, "gpud: error: %s\n", err);
		return 2;
	}
	log_set_level((enum log_level)cfg.log_level);
	log_set_format((enum log_format)cfg.log_format);
	/*
	 * Request and reply messages are megabytes each. Keep them on the heap
	 * (up to glibc's 32 MiB cap) and keep freed heap, so a warm daemon reuses
	 * faulted-in pages instead of mapping fresh ones for every request; once
	 * gpud is quiet, the free pages go back (daemon/memtrim.h). glibc's
	 * arenas stay as many as it makes: one arena (M_ARENA_MAX 1) would give
	 * back the tens of megabytes the tops of nng's threads' arenas keep, but
	 * cost 17-22% of the jobs/s with 64 jobs in flight (bench/transfer,
	 * H100, 3 rounds each).
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	signal(SIGPIPE, SIG_IGN);

	uv_loop_t *loop = uv_default_loop();
	gpud_server srv;
	log_info("gpud %s starting (protocol %u)", GPUD_VERSION, GPUD_PROTOCOL_VERSION);
	notify_init(); /* systemd's Type=notify: daemon/notify.h */
	trace_init();  /* an NVTX tool, if one is attached, loads now (daemon/trace.h) */
	int started = server_start(&srv, loop, &cfg, err, sizeof(err));
	if (started != 0) {
		log_error("%s", err);
		notify_status("failed to start: %s", err);
		config_free(&cfg);
		/* a tokens_file or TLS files it refuses: a config error, as the file's own */
		return started == SERVER_BAD_CONFIG ? 2 : 1;
	}
	srv.source = &src; /* what SIGHUP reads again (daemon/reload.h) */
	char devs[256];
	log_info("ready: backend %s, devices %s, %d contexts, max message %llu bytes",
		 srv.devices.backend, devices_list(&srv.devices, devs, sizeof(devs)), cfg.contexts,
		 (unsigned long long)cfg.max_message_size);
	/* Ready means serving: the backend is warm and every listener is bound;
	 * what arrives meanwhile waits for the loop, which runs next. */
	char urls[1024] = "";
	for (int i = 0; i < cfg.nlisten; i++)
		snprintf(urls + strlen(urls), sizeof(urls) - strlen(urls), "%s%s", i ? ", " : "",
			 cfg.listen[i]);
	notify_ready("serving on %s, backend %s, devices %s", urls, srv.devices.backend, devs);
	notify_watchdog_start(loop);
	uv_run(loop, UV_RUN_DEFAULT);
	int rc = srv.exit_code;
	uv_loop_close(loop);
	config_free(&cfg);
	/* nng_close returns once the socket's connections are unlinked; nng's
	 * reaper may still be freeing them (and a request a client sent after
	 * the contexts stopped, held by a connection). Ending nng here waits
	 * for that, so gpud exits with nothing of nng's still in flight. */
	if (srv.nng_quiet)
		nng_fini();
	return rc;
}
