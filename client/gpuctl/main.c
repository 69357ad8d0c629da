/*
 * client/gpuctl/main.c — gpuctl's entry, the top: the global options
 * (before the command) into opt (state.c), -h/--help of gpuctl and of
 * every command (anywhere among a command's arguments), and dispatch
 * through the command table. It hands errors.c the command table's usage
 * lines (a hook) before anything can be a usage error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/gpuctl/gpuctl.h"

/* The option getopt stopped at, as given. */
static const char *bad_option(char **argv, char *buf, size_t len)
{
	const char *a = argv[optind - 1];
	if (!strncmp(a, "--", 2) || optopt == 0)
		return a;
	snprintf(buf, len, "-%c", optopt);
	return buf;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"url", required_argument, NULL, 'u'},   {"timeout", required_argument, NULL, 't'},
		{"token", required_argument, NULL, 'T'}, {"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},     {"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
	};
	char shown[8];
	int o;

	opt.t_start = now_s();
	errors_usage_hook(print_usage_hint);
	opterr = 0; /* gpuctl words its own errors */
	/* Options before the command only ('+'); ':' tells a missing value apart. */
	while ((o = getopt_long(argc, argv, "+:u:t:T:qvVh", opts, NULL)) != -1) {
		switch (o) {
		case 'T': /* the library reads GPUD_TOKEN at hello */
			setenv("GPUD_TOKEN", optarg, 1);
			break;
		case 'u':
			opt.url = optarg;
			break;
		case 't':
			opt.timeout_ms =
				(int)(parse_seconds(NULL, "--timeout", optarg, 0.001, 1e6) * 1000);
			break;
		case 'q':
			opt.quiet = 1;
			break;
		case 'v':
			opt.verbose = 1;
			break;
		case 'V':
			printf("gpuctl %s\n", GPUD_VERSION);
			return 0;
		case 'h':
			print_main_help(stdout);
			return 0;
		case ':':
			die_usage(NULL, "option '%s' needs a value",
				  bad_option(argv, shown, sizeof(shown)));
		default:
			die_usage(NULL, "unknown option '%s'",
				  bad_option(argv, shown, sizeof(shown)));
		}
	}
	progress_init();
	if (optind >= argc)
		die_usage(NULL, "missing COMMAND ('gpuctl help' lists them)");
	const char *name = argv[optind];
	const ctl_command *cmd = command_find(name);
	if (cmd == NULL) {
		char names[256];
		command_names(names, sizeof(names));
		die_usage(NULL, "unknown command '%s' (commands: %s)", name, names);
	}
	int rest = argc - optind - 1;
	char **rargv = argv + optind + 1;
	for (int i = 0; i < rest && strcmp(rargv[i], "--") != 0; i++)
		if (!strcmp(rargv[i], "-h") || !strcmp(rargv[i], "--help")) {
			print_command_help(stdout, cmd);
			return 0;
		}
	return cmd->run(rest, rargv);
}
