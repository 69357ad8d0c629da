/*
 * client/gpuctl/commands.c — the command table: each command's handler,
 * usage line(s), one-line summary and help text (description, options,
 * examples), and gpuctl's own help with the exit statuses and environment.
 * `gpuctl help [COMMAND]`, `gpuctl [COMMAND] --help` and `-h` print them to
 * stdout; usage errors print the usage line to stderr (errors.c).
 */
#include <stdio.h>
#include <string.h>

#include "client/gpuctl/gpuctl.h"

#define GLOBAL_SYNOPSIS                                                                            \
	"gpuctl [--url URL] [--token TOKEN] [--timeout SECONDS] [-q] [-v] COMMAND ..."

static const ctl_command commands[] = {
	{"run", cmd_run,
	 "gpuctl run KERNEL ARG=VALUE... [-o [NAME=]FILE.npy]... [--json] [--device N]",
	 "run a kernel on arrays, buffers and scalars; write its outputs",
	 "Runs KERNEL in gpud on its arguments and writes its outputs. 'gpuctl kernels'\n"
	 "lists every kernel's arguments, their types and defaults, and its outputs.\n"
	 "\n"
	 "values (ARG=VALUE):\n"
	 "  @FILE.npy       an array from a .npy file (a name ending in .npy, or a path\n"
	 "                  with '/', is a file without the @ too)\n"
	 "  -, @-           an array read as .npy from stdin (one argument at most)\n"
	 "  %HANDLE         a buffer in gpud by its hex handle, as 'gpuctl upload --keep'\n"
	 "                  printed it (the old form @HANDLE still works)\n"
	 "  true, false     a boolean\n"
	 "  42, -7, 0x2a    an integer (int64): decimal, also with a leading zero (010 is\n"
	 "                  ten), or 0x and hex digits\n"
	 "  0.5, 1e-3, inf  a number (float64)\n"
	 "  float32         a word: a dtype name; gpud checks it against the argument\n"
	 "A value that reads as a scalar is the scalar, even where a file of that name\n"
	 "exists (gpuctl then says so on stderr): write @NAME for the file. A value\n"
	 "that starts like a number must be one: 10x is an error, not a word.\n"
	 "\n"
	 "outputs:\n"
	 "  -o FILE.npy       the kernel's output, when it has one\n"
	 "  -o NAME=FILE.npy  the output NAME; one -o per output, one output per file\n"
	 "  -o -              to stdout as .npy (never to a terminal); nothing else is\n"
	 "                    written to stdout then\n"
	 "  without -o        a line per output on stdout: name, dtype, shape, values\n"
	 "  --json            instead, the run as one JSON document on stdout (schema\n"
	 "                    gpuctl.run, version 1; docs/user-guide.md); not with -o -\n"
	 "\n"
	 "devices:\n"
	 "  --device N        run on device N ('gpuctl status' lists them); buffers on\n"
	 "                    other devices are copied to it, pinned ones refused.\n"
	 "                    Without it gpud places the run where its buffers are.\n"
	 "\n"
	 "Inputs of up to 1 MiB in all travel with the run and the outputs come back in\n"
	 "its reply: one round trip. Bigger inputs are uploaded first (over ipc:// through\n"
	 "shared memory). On a terminal a progress bar shows transfers that take over a\n"
	 "second. Whatever gpuctl made in gpud is freed when it ends; buffers given as\n"
	 "%HANDLE stay.\n"
	 "\n"
	 "examples:\n"
	 "  gpuctl run lombscargle x=@x.npy y=@y.npy freqs=@f.npy -o pgram.npy\n"
	 "  gpuctl run histogram x=@x.npy bins=20 range_min=0 range_max=30 -o counts.npy\n"
	 "  gpuctl run uniform n=1000 seed=7 dtype=float32 -o - | gpuctl run sum x=-\n"
	 "  gpuctl run axpy x=%3f2a9c0d81e4b7a6 y=@y.npy a=2.5 -o z=z.npy\n"},
	{"upload", cmd_upload, "gpuctl upload FILE.npy|- [--keep] [--device N]",
	 "upload a .npy file (or stdin) into a buffer; print its handle",
	 "Uploads an array from a .npy file (- or @-: from stdin) into a new buffer in\n"
	 "gpud and prints its handle (16 hex digits) on stdout.\n"
	 "\n"
	 "options:\n"
	 "  --keep   the buffer stays after gpuctl exits: it belongs to the tenant, shows\n"
	 "           in 'gpuctl ls' and counts against its quotas until 'gpuctl free'.\n"
	 "           Without it the buffer goes when gpuctl exits.\n"
	 "  --device N  put it on device N ('gpuctl status' lists them) and pin it\n"
	 "           there: runs on other devices refuse it rather than copy it.\n"
	 "           Without it gpud places it (where the tenant's buffers are, else on\n"
	 "           the least-loaded device).\n"
	 "\n"
	 "examples:\n"
	 "  h=$(gpuctl upload --keep x.npy)\n"
	 "  gpuctl run uniform n=100 seed=1 -o - | gpuctl upload --keep -\n"},
	{"download", cmd_download, "gpuctl download HANDLE -o FILE.npy|-",
	 "write a buffer to a .npy file or stdout",
	 "Writes buffer HANDLE (a kept one: see 'gpuctl ls') to a .npy file, or with\n"
	 "-o - to stdout (never to a terminal).\n"
	 "\n"
	 "examples:\n"
	 "  gpuctl download 3f2a9c0d81e4b7a6 -o x.npy\n"
	 "  gpuctl download %3f2a9c0d81e4b7a6 -o - | gpuctl run sum x=-\n"},
	{"free", cmd_free, "gpuctl free [--tenant TENANT] HANDLE...", "free buffers",
	 "Frees up to 64 buffers (kept ones: see 'gpuctl ls'). If any handle is unknown,\n"
	 "none is freed.\n"
	 "\n"
	 "options:\n"
	 "  --tenant TENANT  free kept buffers of another tenant (administrators: a\n"
	 "                   tenant in gpud.conf's admin_tenants; gpud logs it)\n"
	 "\n"
	 "examples:\n"
	 "  gpuctl free 3f2a9c0d81e4b7a6\n"
	 "  gpuctl free --tenant alice 3f2a9c0d81e4b7a6\n"},
	{"ls", cmd_ls, "gpuctl ls [--all] [--json]", "list kept buffers",
	 "Lists the tenant's kept buffers (gpuctl upload --keep): handle, dtype, shape and\n"
	 "size.\n"
	 "\n"
	 "options:\n"
	 "  --all    every tenant's, with a tenant column (administrators: a tenant in\n"
	 "           gpud.conf's admin_tenants; gpud logs it)\n"
	 "  --json   as one JSON document (schema gpuctl.ls, version 1;\n"
	 "           docs/user-guide.md)\n"},
	{"kernels", cmd_kernels, "gpuctl kernels [--json | --names | --custom | --args KERNEL]",
	 "list the kernels and their arguments",
	 "Lists every kernel gpud runs for this tenant (built-in, its own and shared\n"
	 "custom kernels): what it does, and each argument's role (in, out, scalar),\n"
	 "types, default and meaning.\n"
	 "\n"
	 "options:\n"
	 "  --json           as one JSON document (schema gpuctl.kernels, version 1;\n"
	 "                   docs/user-guide.md)\n"
	 "  --names          only the kernels' names, one per line (for scripts and shell\n"
	 "                   completion)\n"
	 "  --args KERNEL    only KERNEL's arguments, one per line: NAME ROLE (role in,\n"
	 "                   out or scalar)\n"
	 "  --custom         only the custom kernels: own or shared, pinned or unpinned,\n"
	 "                   last used (unpinned ones are evicted, least recently used\n"
	 "                   first, at the custom_kernels quota)\n"},
	{"kernel", cmd_kernel,
	 "gpuctl kernel add NAME --source FILE.cu|- --entry ENTRY --sig SIG [OPTIONS]\n"
	 "       gpuctl kernel add NAME --elementwise IN OUT BODY [OPTIONS]\n"
	 "       gpuctl kernel rm NAME [--shared]",
	 "register or remove a custom kernel",
	 "Registers a custom kernel for this tenant (gpud compiles it with NVRTC for its\n"
	 "GPU; the cpu backend checks it but cannot run it), or removes one. It then runs\n"
	 "with 'gpuctl run NAME' like a built-in kernel.\n"
	 "\n"
	 "raw CUDA C (--source - reads it from stdin):\n"
	 "  --entry ENTRY        the extern \"C\" __global__ function\n"
	 "  --sig SIGNATURE      its arguments in order: 'x:in f32[], y:out f32[], s:f32';\n"
	 "                       arrays in/out with a dtype, scalars f32 f64 i32 i64\n"
	 "elementwise:\n"
	 "  IN OUT BODY          'float32 x, float32 a' 'float32 z' 'z = a * x'\n"
	 "options:\n"
	 "  --block N            threads per block (default 256)\n"
	 "  --blocks-per-sm K    a grid-stride launch of SMs x K blocks (raw kernels\n"
	 "                       without it take _grid and _block as run arguments)\n"
	 "  --fast-math, --max-registers R\n"
	 "  --shared             one kernel for every tenant (admin_tenants only)\n"
	 "  --unpinned           evictable: at the custom_kernels quota a registration\n"
	 "                       removes the least recently used unpinned kernel\n"
	 "                       (kernels are pinned by default)\n"
	 "\n"
	 "examples:\n"
	 "  gpuctl kernel add my_saxpy_trig --elementwise \\\n"
	 "      'float32 x, float32 y, float32 a' 'float32 z' 'z = exp(a * sin(x) + cos(y))'\n"
	 "  gpuctl kernel rm my_saxpy_trig\n"},
	{"status", cmd_status, "gpuctl status [--wait SECONDS] [--json]", "show gpud's state",
	 "Shows gpud's version, backend, devices and memory, buffers, connections\n"
	 "and, on the cuda backend, the memory pool, staging buffers and each loaded\n"
	 "kernel variant.\n"
	 "\n"
	 "A tenant sees its own connections, buffers and requests; tenants in\n"
	 "admin_tenants see every tenant's. Without a token gpud accepts (tcp://),\n"
	 "gpud shows only its version, protocol and devices.\n"
	 "\n"
	 "options:\n"
	 "  --wait SECONDS   retry until gpud answers, up to SECONDS: scripts that start\n"
	 "                   gpud use it to know when it is ready\n"
	 "  --json           the same as one JSON document (schema gpuctl.status,\n"
	 "                   version 1; docs/user-guide.md)\n"},
	{"demo", cmd_demo, "gpuctl demo [--runs N]", "lombscargle on a built-in signal, timed",
	 "Runs lombscargle on the built-in benchmark signal (2^20 frequencies), float64\n"
	 "and float32: the first call in a new connection, then N warm calls (default\n"
	 "5), and prints the peak frequency and the times.\n"},
	{"help", cmd_help, "gpuctl help [COMMAND]", "this text, or a command's",
	 "Prints gpuctl's help, or COMMAND's: its usage, options and examples.\n"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const ctl_command *command_find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

void command_names(char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < NCOMMANDS && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
					commands[i].name);
}

void print_usage_line(FILE *f, const ctl_command *cmd)
{
	fprintf(f, "usage: %s\n", cmd ? cmd->synopsis : GLOBAL_SYNOPSIS);
}

void print_usage_hint(FILE *f, const char *cmd)
{
	const ctl_command *k = cmd ? command_find(cmd) : NULL;
	print_usage_line(f, k);
	fprintf(f, "Try 'gpuctl help%s%s' for more.\n", k ? " " : "", k ? k->name : "");
}

void print_main_help(FILE *f)
{
	print_usage_line(f, NULL);
	fputs("\n"
	      "gpuctl is the command line of gpud, the GPU compute daemon: it sends arrays\n"
	      "(.npy files, or stdin) to gpud, runs its kernels there and writes the results\n"
	      "(.npy files, or stdout).\n"
	      "\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "options (before the command):\n"
	      "  --url URL          gpud's address: ipc://PATH, tcp://HOST:PORT or\n"
	      "                     tls+tcp://HOST:PORT (default: $GPUD_URL, else\n"
	      "                     " GPUD_DEFAULT_URL ")\n"
	      "  --token TOKEN      the bearer token tcp:// and tls+tcp:// present to a gpud\n"
	      "                     with a tokens_file (default: $GPUD_TOKEN)\n"
	      "  --timeout SECONDS  give up on a request after this long\n"
	      "  -q, --quiet        no progress bar, spinner or notes on stderr\n"
	      "  -v, --verbose      the time each step took, on stderr\n"
	      "  -V, --version      print gpuctl's version\n"
	      "  -h, --help         this text ('gpuctl COMMAND --help': a command's)\n"
	      "\n"
	      "exit status:\n",
	      f);
	print_exit_statuses(f, "  ");
	fputs("\n"
	      "environment:\n"
	      "  GPUD_URL, GPUD_TOKEN   as --url and --token\n"
	      "  GPUD_TLS_CA            tls+tcp://: the PEM file of the CA that signed gpud's\n"
	      "                         certificate\n"
	      "  GPUD_TLS_SERVER_NAME   tls+tcp://: the name that certificate must have\n"
	      "                         (default: the URL's host)\n"
	      "  GPUCTL_PROGRESS_DELAY  seconds before a progress bar or spinner appears on a\n"
	      "                         terminal (default 1)\n"
	      "\n"
	      "'gpuctl help COMMAND' shows a command's options and examples.\n",
	      f);
}

void print_command_help(FILE *f, const ctl_command *cmd)
{
	print_usage_line(f, cmd);
	fprintf(f, "\n%s", cmd->help);
}

int cmd_help(int argc, char **argv)
{
	if (argc == 0) {
		print_main_help(stdout);
		return 0;
	}
	if (argc > 1)
		die_usage("help", "one COMMAND at a time, got '%s' and '%s'", argv[0], argv[1]);
	const ctl_command *k = command_find(argv[0]);
	if (k == NULL) {
		char names[256];
		command_names(names, sizeof(names));
		die_usage("help", "no command '%s' (commands: %s)", argv[0], names);
	}
	print_command_help(stdout, k);
	return 0;
}
