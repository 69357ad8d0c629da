/*
 * client/gpuctl.c — the command line over libgpud-client.
 *
 *   gpuctl [--url URL] [--timeout S] run KERNEL name=FILE.npy|name=SCALAR ... [-o OUT]
 *   gpuctl [--url URL] kernels
 *   gpuctl [--url URL] status [--wait SECONDS]
 *   gpuctl [--url URL] demo [--runs N]
 *
 * Every error prints "gpuctl: error: ..." naming what was wrong and exits
 * non-zero: 2 for a usage error, 1 for everything else.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <gpud/client.h>
#include <gpud/npy.h>

#include "client/demo.h"

#define EXIT_USAGE 2
#define MAX_ARGS 32

static const char *url;
static int timeout_ms;
static int verbose;
static double t_start;

static double now_s(void);

/* With -v: what each step took, to stderr. */
static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
	static double last;
	va_list ap;
	if (!verbose)
		return;
	double t = now_s();
	if (last == 0)
		last = t_start;
	fprintf(stderr, "gpuctl: %8.3f ms (+%7.3f) ", (t - t_start) * 1e3, (t - last) * 1e3);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	last = t;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuctl [--url URL] [--token TOKEN] [--timeout SECONDS] [-v] COMMAND ...\n"
		"\n"
		"commands:\n"
		"  run KERNEL name=FILE.npy|name=@HANDLE|name=SCALAR ... [-o FILE.npy | -o name=FILE.npy ...]\n"
		"                         upload the arrays, run KERNEL, write its outputs\n"
		"                         (without -o, print a summary of each output)\n"
		"  upload FILE.npy [--keep]\n"
		"                         upload an array and print its handle; --keep: it stays\n"
		"                         (the tenant's) until 'gpuctl free'\n"
		"  download HANDLE -o FILE.npy\n"
		"  free HANDLE...         free buffers\n"
		"  ls                     list this tenant's kept buffers\n"
		"  kernel add NAME --source FILE.cu --entry ENTRY --sig 'x:in f32[], y:out f32[], a:f32'\n"
		"  kernel add NAME --elementwise 'float32 x, float32 a' 'float32 z' 'z = a * x'\n"
		"         [--block N] [--blocks-per-sm K] [--fast-math] [--max-registers R] [--shared]\n"
		"  kernel rm NAME [--shared]\n"
		"                         register or remove this tenant's own kernel (--shared:\n"
		"                         one for every tenant; admin_tenants only)\n"
		"  kernels                list the daemon's kernels and their arguments\n"
		"  status [--wait SECONDS]\n"
		"                         show the daemon's state; --wait retries until it answers\n"
		"  demo [--runs N]        lombscargle on the built-in benchmark signal\n"
		"\n"
		"-v prints the time each step took to stderr.\n"
		"Scalars: true/false, integers, decimals, or a name (dtype=float32).\n"
		"The URL defaults to $GPUD_URL, then " GPUD_DEFAULT_URL ". --token (or\n"
		"$GPUD_TOKEN) is the bearer token tcp:// and tls+tcp:// connections present to a\n"
		"gpud with a tokens_file; tls+tcp:// checks gpud's certificate against\n"
		"$GPUD_TLS_CA ($GPUD_TLS_SERVER_NAME: the name).\n");
}

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;
	fputs("gpuctl: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static gpud_client *connect_or_die(void)
{
	gpud_client *c;
	if (gpud_connect(url, &c) != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	gpud_set_timeout(c, timeout_ms);
	return c;
}

static void human_bytes(uint64_t b, char *buf, size_t len)
{
	const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* --- run ------------------------------------------------------------------------ */

typedef struct cli_arg {
	char name[GPUD_NAME_MAX];
	const char *text;
	int is_file;
	gpud_array arr;
	gpud_arg arg;
} cli_arg;

static int looks_like_file(const char *v)
{
	size_t n = strlen(v);
	return (n > 4 && strcasecmp(v + n - 4, ".npy") == 0) || strchr(v, '/') != NULL ||
	       access(v, F_OK) == 0;
}

/*
 * SCALAR: true/false, an integer, or a finite decimal; anything else goes as
 * text (a name such as dtype=float32), which gpud checks against the
 * argument's type.
 */
static void parse_scalar(const char *name, const char *v, gpud_arg *out)
{
	char *end;

	if (!strcasecmp(v, "true") || !strcasecmp(v, "false")) {
		*out = gpud_arg_bool(name, !strcasecmp(v, "true"));
		return;
	}
	errno = 0;
	long long i = strtoll(v, &end, 0);
	if (end != v && *end == '\0' && errno == 0) {
		*out = gpud_arg_i64(name, i);
		return;
	}
	errno = 0;
	double d = strtod(v, &end);
	if (end != v && *end == '\0' && errno == 0) {
		*out = gpud_arg_f64(name, d);
		return;
	}
	*out = gpud_arg_text(name, v);
}

static void print_summary(const gpud_output *o, const gpud_array *a)
{
	char shape[128];
	size_t n = gpud_array_count(a);

	gpud_shape_format(shape, sizeof(shape), a->shape, a->ndim);
	printf("%s: %s %s", o->name, gpud_dtype_name(a->dtype), shape);
	if (n == 0) {
		printf(" []\n");
		return;
	}
	printf(" [");
	for (size_t i = 0; i < n && i < 6; i++) {
		switch (a->dtype) {
		case GPUD_F32:
			printf("%s%.7g", i ? ", " : "", ((float *)a->data)[i]);
			break;
		case GPUD_F64:
			printf("%s%.15g", i ? ", " : "", ((double *)a->data)[i]);
			break;
		case GPUD_I32:
			printf("%s%d", i ? ", " : "", ((int32_t *)a->data)[i]);
			break;
		case GPUD_I64:
			printf("%s%" PRId64, i ? ", " : "", ((int64_t *)a->data)[i]);
			break;
		default:
			break;
		}
	}
	printf("%s]\n", n > 6 ? ", ..." : "");
}

/* A handle as gpuctl prints it: 16 hex digits (0x optional). */
static gpud_handle parse_handle(const char *what, const char *text)
{
	char *end;
	errno = 0;
	unsigned long long h = strtoull(text, &end, 16);
	if (errno || end == text || *end != '\0' || h == 0)
		die(EXIT_USAGE, "%s: '%s' is not a handle (16 hex digits, as upload printed)", what,
		    text);
	return (gpud_handle)h;
}

/* upload FILE.npy [--keep]: prints the new buffer's handle. */
static int cmd_upload(int argc, char **argv)
{
	const char *file = NULL;
	int keep = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--keep"))
			keep = 1;
		else if (file == NULL && argv[i][0] != '-')
			file = argv[i];
		else
			die(EXIT_USAGE, "upload: unexpected argument '%s'", argv[i]);
	}
	if (file == NULL)
		die(EXIT_USAGE, "upload: expected FILE.npy [--keep]");
	gpud_client *c = connect_or_die();
	gpud_set_keep(c, keep);
	gpud_handle h;
	gpud_array meta;
	if (gpud_alloc_npy(c, file, &h, &meta) != GPUD_OK)
		die(1, "%s: %s", file, gpud_errmsg(c));
	if (!keep)
		fprintf(stderr, "gpuctl: note: without --keep the buffer goes when gpuctl exits\n");
	printf("%016llx\n", (unsigned long long)h);
	gpud_close(c);
	return 0;
}

/* download HANDLE -o FILE.npy */
static int cmd_download(int argc, char **argv)
{
	const char *out = NULL, *hs = NULL;
	for (int i = 0; i < argc; i++) {
		if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc)
			out = argv[++i];
		else if (hs == NULL && argv[i][0] != '-')
			hs = argv[i];
		else
			die(EXIT_USAGE, "download: unexpected argument '%s'", argv[i]);
	}
	if (hs == NULL || out == NULL)
		die(EXIT_USAGE, "download: expected HANDLE -o FILE.npy");
	gpud_handle h = parse_handle("download", hs[0] == '@' ? hs + 1 : hs);
	gpud_client *c = connect_or_die();
	if (gpud_download_npy(c, h, out) != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	gpud_close(c);
	return 0;
}

/* free HANDLE... */
static int cmd_free(int argc, char **argv)
{
	gpud_handle hs[64];
	if (argc == 0 || argc > 64)
		die(EXIT_USAGE, "free: expected 1 to 64 handles");
	for (int i = 0; i < argc; i++)
		hs[i] = parse_handle("free", argv[i][0] == '@' ? argv[i] + 1 : argv[i]);
	gpud_client *c = connect_or_die();
	if (gpud_free(c, hs, (size_t)argc) != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	gpud_close(c);
	return 0;
}

/* ls: the tenant's kept buffers. */
static int cmd_ls(int argc, char **argv)
{
	if (argc > 0)
		die(EXIT_USAGE, "ls: unexpected argument '%s'", argv[0]);
	gpud_client *c = connect_or_die();
	gpud_buffer_info *v;
	size_t n;
	if (gpud_list(c, &v, &n) != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	printf("%zu kept buffers of tenant %s\n", n, gpud_server(c)->tenant);
	for (size_t i = 0; i < n; i++) {
		char shape[128], by[32];
		gpud_shape_format(shape, sizeof(shape), v[i].shape, v[i].ndim);
		human_bytes(v[i].nbytes, by, sizeof(by));
		printf("%016llx  %-8s %-20s %s\n", (unsigned long long)v[i].handle,
		       gpud_dtype_name(v[i].dtype), shape, by);
	}
	free(v);
	gpud_close(c);
	return 0;
}

static unsigned parse_uint_opt(const char *opt, const char *v)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (errno || end == v || *end || n > 1u << 20)
		die(EXIT_USAGE, "%s: expected a number, got '%s'", opt, v);
	return (unsigned)n;
}

/* kernel add NAME (--source F --entry E --sig S | --elementwise IN OUT BODY) [...] | rm NAME */
static int cmd_kernel(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[0], "rm")) {
		int shared = argc == 3 && !strcmp(argv[2], "--shared");
		if (argc != 2 && !shared)
			die(EXIT_USAGE, "kernel rm: expected NAME [--shared]");
		gpud_client *c = connect_or_die();
		if ((shared ? gpud_unregister_shared(c, argv[1]) : gpud_unregister(c, argv[1])) !=
		    GPUD_OK)
			die(1, "%s", gpud_errmsg(c));
		gpud_close(c);
		return 0;
	}
	if (argc < 2 || strcmp(argv[0], "add") != 0)
		die(EXIT_USAGE,
		    "kernel: expected 'add NAME --source FILE.cu --entry ENTRY --sig SIG', 'add NAME "
		    "--elementwise IN OUT BODY' or 'rm NAME'");
	gpud_kernel_spec spec;
	memset(&spec, 0, sizeof(spec));
	spec.name = argv[1];
	const char *file = NULL;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		int more = argc - i - 1;
		if (!strcmp(o, "--source") && more >= 1)
			file = argv[++i];
		else if (!strcmp(o, "--entry") && more >= 1)
			spec.entry = argv[++i];
		else if (!strcmp(o, "--sig") && more >= 1)
			spec.signature = argv[++i];
		else if (!strcmp(o, "--elementwise") && more >= 3) {
			spec.elementwise = 1;
			spec.in_params = argv[++i];
			spec.out_params = argv[++i];
			spec.source = argv[++i];
		} else if (!strcmp(o, "--block") && more >= 1)
			spec.block = parse_uint_opt(o, argv[++i]);
		else if (!strcmp(o, "--blocks-per-sm") && more >= 1)
			spec.blocks_per_sm = parse_uint_opt(o, argv[++i]);
		else if (!strcmp(o, "--max-registers") && more >= 1)
			spec.max_registers = parse_uint_opt(o, argv[++i]);
		else if (!strcmp(o, "--fast-math"))
			spec.fast_math = 1;
		else if (!strcmp(o, "--shared"))
			spec.shared = 1;
		else
			die(EXIT_USAGE, "kernel add: unexpected or incomplete option '%s'", o);
	}
	char *text = NULL;
	if (!spec.elementwise) {
		if (file == NULL || spec.entry == NULL || spec.signature == NULL)
			die(EXIT_USAGE,
			    "kernel add %s: a raw kernel needs --source FILE.cu, --entry "
			    "ENTRY and --sig SIGNATURE (or --elementwise IN OUT BODY)",
			    spec.name);
		FILE *f = fopen(file, "r");
		if (f == NULL)
			die(1, "--source %s: %s", file, strerror(errno));
		text = malloc(1 << 20);
		size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
		int big = text && !feof(f);
		fclose(f);
		if (text == NULL || big)
			die(1, "--source %s: larger than 1 MiB", file);
		text[n] = '\0';
		spec.source = text;
	} else if (file) {
		die(EXIT_USAGE, "kernel add %s: --source is for raw kernels, not --elementwise",
		    spec.name);
	}
	gpud_client *c = connect_or_die();
	if (gpud_register(c, &spec) != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	printf("registered %s (%s%s)\n", spec.name, spec.shared ? "shared, by " : "tenant ",
	       gpud_server(c)->tenant);
	free(text);
	gpud_close(c);
	return 0;
}

/* Inputs up to this many bytes in all go with the run itself. */
#define ONE_TRIP_MAX (1u << 20)

/* Matches -o requests to the outputs' names: dest[i] is output i's file or NULL. */
static void match_outputs(const char *kernel, const char *const *outs, int nouts_req,
			  const char *const *names, size_t nout, const char **dest)
{
	for (size_t j = 0; j < nout; j++)
		dest[j] = NULL;
	for (int i = 0; i < nouts_req; i++) {
		const char *eq = strchr(outs[i], '=');
		size_t j;
		if (eq == NULL) {
			if (nout != 1)
				die(EXIT_USAGE,
				    "-o %s: %s has %zu outputs; name each with -o name=FILE.npy",
				    outs[i], kernel, nout);
			dest[0] = outs[i];
			continue;
		}
		for (j = 0; j < nout; j++)
			if (strlen(names[j]) == (size_t)(eq - outs[i]) &&
			    !strncmp(names[j], outs[i], (size_t)(eq - outs[i])))
				break;
		if (j == nout)
			die(EXIT_USAGE, "-o %s: %s has no output '%.*s'", outs[i], kernel,
			    (int)(eq - outs[i]), outs[i]);
		dest[j] = eq + 1;
	}
}

/* The whole job in one request: files read here, sent with the run, outputs back. */
static int run_one_trip(gpud_client *c, const char *kernel, cli_arg *args, int nargs,
			const char *const *outs, int nouts_req)
{
	gpud_arg wire[MAX_ARGS];
	char err[1024];
	for (int i = 0; i < nargs; i++) {
		cli_arg *ca = &args[i];
		if (ca->is_file) {
			if (gpud_npy_load(ca->text, &ca->arr, err, sizeof(err)) != 0)
				die(1, "argument '%s': %s", ca->name, err);
			ca->arg = gpud_arg_array(ca->name, &ca->arr);
			trace("read %s from %s (%zu bytes)", ca->name, ca->text, ca->arr.nbytes);
		}
		ca->arg.name = ca->name;
		wire[i] = ca->arg;
	}
	gpud_result res[MAX_ARGS];
	size_t nout = 0;
	gpud_run_info info;
	gpud_status st = gpud_call(c, kernel, wire, (size_t)nargs, res, MAX_ARGS, &nout, &info);
	if (st == GPUD_E2BIG) {
		/* More than one message carries: the caller uploads and downloads. */
		trace("one round trip is too large (%s); uploading instead", gpud_errmsg(c));
		for (int i = 0; i < nargs; i++)
			if (args[i].is_file)
				gpud_array_free(&args[i].arr);
		return -1;
	}
	if (st != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	trace("ran %s with its inputs and outputs in one round trip (in gpud %.1f us, kernel "
	      "%.1f us)",
	      kernel, info.elapsed_us, info.kernel_us);
	for (int i = 0; i < nargs; i++)
		if (args[i].is_file)
			gpud_array_free(&args[i].arr);
	const char *names[MAX_ARGS] = {0}, *dest[MAX_ARGS] = {0};
	for (size_t i = 0; i < nout; i++)
		names[i] = res[i].name;
	match_outputs(kernel, outs, nouts_req, names, nout, dest);
	for (size_t i = 0; i < nout; i++) {
		if (dest[i]) {
			if (gpud_npy_save(dest[i], &res[i].array, err, sizeof(err)) != 0)
				die(1, "output '%s': %s", res[i].name, err);
			trace("wrote %s into %s", res[i].name, dest[i]);
		} else if (!nouts_req) {
			gpud_output o;
			memset(&o, 0, sizeof(o));
			memcpy(o.name, res[i].name, sizeof(o.name));
			o.dtype = res[i].array.dtype;
			o.ndim = res[i].array.ndim;
			memcpy(o.shape, res[i].array.shape, sizeof(o.shape));
			print_summary(&o, &res[i].array);
		}
		gpud_array_free(&res[i].array);
	}
	gpud_close(c);
	trace("closed");
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	cli_arg args[MAX_ARGS];
	const char *outs[MAX_ARGS];
	int nargs = 0, nouts_req = 0;
	const char *kernel = NULL;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (i + 1 >= argc)
				die(EXIT_USAGE, "-o needs FILE.npy or name=FILE.npy");
			if (nouts_req == MAX_ARGS)
				die(EXIT_USAGE, "at most %d outputs", MAX_ARGS);
			outs[nouts_req++] = argv[++i];
			continue;
		}
		if (!strncmp(a, "-o", 2) && a[2]) {
			outs[nouts_req++] = a + 2;
			continue;
		}
		if (kernel == NULL) {
			if (a[0] == '-' || strchr(a, '='))
				die(EXIT_USAGE, "run: expected a kernel name first, got '%s'", a);
			kernel = a;
			continue;
		}
		const char *eq = strchr(a, '=');
		if (eq == NULL || eq == a)
			die(EXIT_USAGE, "run: argument '%s': expected name=FILE.npy or name=SCALAR",
			    a);
		if ((size_t)(eq - a) >= GPUD_NAME_MAX)
			die(EXIT_USAGE, "run: argument name '%.*s' is longer than %d characters",
			    (int)(eq - a), a, GPUD_NAME_MAX - 1);
		if (nargs == MAX_ARGS)
			die(EXIT_USAGE, "run: at most %d arguments", MAX_ARGS);
		cli_arg *ca = &args[nargs++];
		memset(ca, 0, sizeof(*ca));
		snprintf(ca->name, sizeof(ca->name), "%.*s", (int)(eq - a), a);
		ca->text = eq + 1;
		for (int j = 0; j < nargs - 1; j++)
			if (!strcmp(args[j].name, ca->name))
				die(EXIT_USAGE, "run: argument '%s' given twice", ca->name);
		if (ca->text[0] == '\0')
			die(EXIT_USAGE, "run: argument '%s' has an empty value", ca->name);
	}
	if (kernel == NULL)
		die(EXIT_USAGE, "run: missing KERNEL (see 'gpuctl kernels')");

	/* Handles and scalars are parsed before anything is sent; files as they are read. */
	for (int i = 0; i < nargs; i++) {
		cli_arg *ca = &args[i];
		if (ca->text[0] == '@') {
			ca->arg = gpud_arg_buffer(ca->name, parse_handle(ca->name, ca->text + 1));
		} else if (looks_like_file(ca->text)) {
			ca->is_file = 1;
		} else {
			parse_scalar(ca->name, ca->text, &ca->arg);
		}
	}

	gpud_client *c = connect_or_die();
	trace("connected to %s", gpud_url(c));
	/* Small inputs: the whole job is one round trip (gpud_call). */
	size_t file_bytes = 0;
	for (int i = 0; i < nargs; i++) {
		struct stat st;
		if (args[i].is_file)
			file_bytes += stat(args[i].text, &st) == 0 ? (size_t)st.st_size
								   : SIZE_MAX / 2;
	}
	if (file_bytes <= ONE_TRIP_MAX && file_bytes <= gpud_server(c)->max_message_size &&
	    run_one_trip(c, kernel, args, nargs, outs, nouts_req) == 0)
		return 0;
	gpud_handle handles[MAX_ARGS * 2];
	int nh = 0;
	gpud_arg wire[MAX_ARGS];
	for (int i = 0; i < nargs; i++) {
		cli_arg *ca = &args[i];
		if (ca->is_file) {
			/* The file goes straight into the request: no copy in between. */
			gpud_handle h;
			if (gpud_alloc_npy(c, ca->text, &h, &ca->arr) != GPUD_OK)
				die(1, "argument '%s': %s", ca->name, gpud_errmsg(c));
			handles[nh++] = h;
			ca->arg = gpud_arg_buffer(ca->name, h);
			trace("uploaded %s from %s (%zu bytes)", ca->name, ca->text,
			      ca->arr.nbytes);
		}
		ca->arg.name = ca->name;
		wire[i] = ca->arg;
	}

	gpud_output outputs[MAX_ARGS];
	size_t nout = 0;
	gpud_run_info info;
	if (gpud_run(c, kernel, wire, (size_t)nargs, outputs, MAX_ARGS, &nout, &info) != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	trace("ran %s (in gpud %.1f us, kernel %.1f us)", kernel, info.elapsed_us, info.kernel_us);
	for (size_t i = 0; i < nout; i++)
		handles[nh++] = outputs[i].handle;

	const char *names[MAX_ARGS] = {0}, *dest[MAX_ARGS] = {0};
	for (size_t i = 0; i < nout; i++)
		names[i] = outputs[i].name;
	match_outputs(kernel, outs, nouts_req, names, nout, dest);
	for (size_t i = 0; i < nout; i++) {
		gpud_array a;
		if (dest[i]) {
			if (gpud_download_npy(c, outputs[i].handle, dest[i]) != GPUD_OK)
				die(1, "output '%s': %s", outputs[i].name, gpud_errmsg(c));
			trace("downloaded %s into %s", outputs[i].name, dest[i]);
			continue;
		}
		if (nouts_req)
			continue;
		if (gpud_download(c, outputs[i].handle, &a) != GPUD_OK)
			die(1, "output '%s': %s", outputs[i].name, gpud_errmsg(c));
		print_summary(&outputs[i], &a);
		gpud_array_free(&a);
	}
	if (gpud_free(c, handles, (size_t)nh) != GPUD_OK)
		die(1, "free: %s", gpud_errmsg(c));
	gpud_close(c);
	trace("freed and closed");
	return 0;
}

/* --- kernels, status -------------------------------------------------------------- */

static int cmd_kernels(int argc, char **argv)
{
	gpud_kernel_list *l;
	static const char *roles[] = {"in", "out", "scalar"};

	if (argc > 0)
		die(EXIT_USAGE, "kernels: unexpected argument '%s'", argv[0]);
	gpud_client *c = connect_or_die();
	if (gpud_kernels(c, &l) != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	for (size_t i = 0; i < l->count; i++) {
		gpud_kernel_info *k = &l->kernels[i];
		printf("%s\n    %s\n", k->name, k->doc);
		for (size_t j = 0; j < k->nparams; j++) {
			gpud_param_info *p = &k->params[j];
			printf("    %-12s %-7s %-34s %s\n", p->name, roles[p->role % 3], p->type,
			       p->doc);
		}
	}
	gpud_kernel_list_free(l);
	gpud_close(c);
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	double wait_s = 0;
	gpud_client *c = NULL;
	gpud_daemon_status st;
	char a[32], b[32];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--wait") && i + 1 < argc) {
			char *end;
			wait_s = strtod(argv[++i], &end);
			if (*end || !(wait_s >= 0))
				die(EXIT_USAGE, "status --wait: expected seconds, got '%s'",
				    argv[i]);
		} else {
			die(EXIT_USAGE, "status: unexpected argument '%s'", argv[i]);
		}
	}
	double deadline = now_s() + wait_s;
	for (;;) {
		if (gpud_connect(url, &c) == GPUD_OK)
			break;
		if (now_s() >= deadline)
			die(1, "%s%s", gpud_errmsg(c), wait_s > 0 ? " (gave up waiting)" : "");
		gpud_close(c);
		usleep(20000);
	}
	gpud_set_timeout(c, timeout_ms);
	if (gpud_status_get(c, &st) != GPUD_OK)
		die(1, "%s", gpud_errmsg(c));
	printf("gpud %s at %s (protocol %u)\n", st.server.version, gpud_url(c),
	       st.server.protocol_version);
	printf("backend      %s\n", st.server.backend);
	printf("uptime       %.1f s\n", st.uptime_s);
	printf("connections  %u (in flight: %u requests)\n", st.connections, st.in_flight);
	printf("requests     %" PRIu64 " (%" PRIu64 " failed)\n", st.requests, st.errors);
	human_bytes(st.bytes_in_use, a, sizeof(a));
	human_bytes(st.bytes_high_water, b, sizeof(b));
	printf("buffers      %" PRIu64 " (%s in use, high-water %s)\n", st.buffers, a, b);
	for (int i = 0; i < st.server.ndevices; i++) {
		gpud_device_info *d = &st.server.devices[i];
		human_bytes(d->memory_free, a, sizeof(a));
		human_bytes(d->memory_total, b, sizeof(b));
		printf("device %d     %s (sm_%d%d, %d SMs), %s free of %s\n", d->index, d->name,
		       d->cc_major, d->cc_minor, d->sm_count, a, b);
	}
	if (st.has_pool) {
		char cached[32], h[32], l[32];
		human_bytes(st.pool_in_use, a, sizeof(a));
		human_bytes(st.pool_cached, cached, sizeof(cached));
		human_bytes(st.pool_high_water, h, sizeof(h));
		human_bytes(st.pool_limit, l, sizeof(l));
		printf("pool         %s in use, %s cached, high-water %s, limit %s; "
		       "%" PRIu64 " allocations, %" PRIu64 " from the cache\n",
		       a, cached, h, l, st.pool_allocs, st.pool_hits);
	}
	if (st.has_staging) {
		char ch[32], tot[32];
		human_bytes(st.staging_chunk, ch, sizeof(ch));
		human_bytes(st.bytes_staged, tot, sizeof(tot));
		printf("staging      %u pinned buffers of %s (%u free), %s staged\n",
		       st.staging_buffers, ch, st.staging_free, tot);
	}
	if (st.nsessions > 0)
		printf("sessions     %-10s %-22s %8s %10s %9s %7s %10s\n", "id", "peer", "buffers",
		       "bytes", "requests", "regions", "mapped");
	for (int i = 0; i < st.nsessions; i++) {
		gpud_session_info *g = &st.sessions[i];
		char by[32], rb[32];
		human_bytes(g->bytes, by, sizeof(by));
		human_bytes(g->region_bytes, rb, sizeof(rb));
		printf("             %-10u %-22s %8" PRIu64 " %10s %9" PRIu64 " %7" PRIu64
		       " %10s%s\n",
		       g->id, g->peer[0] ? g->peer : "-", g->buffers, by, g->requests, g->regions,
		       rb, g->id == gpud_server(c)->connection ? "  (this gpuctl)" : "");
	}
	if (st.nsessions_total > (unsigned)st.nsessions)
		printf("             ... and %u more\n",
		       st.nsessions_total - (unsigned)st.nsessions);
	if (st.nvariants > 0)
		printf("kernels      %-14s %-8s %5s %6s %10s %8s\n", "name", "variant", "regs",
		       "block", "shared", "local");
	for (int i = 0; i < st.nvariants; i++) {
		gpud_variant_info *v = &st.variants[i];
		printf("             %-14s %-8s %5d %6d %8" PRIu64 " B %6" PRIu64 " B\n", v->kernel,
		       v->variant, v->registers, v->block, v->shared_bytes, v->local_bytes);
	}
	gpud_close(c);
	return 0;
}

/* --- demo --------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One whole job on an open client: upload, run, download, free. Returns seconds. */
static double demo_job(gpud_client *c, gpud_dtype dt, const demo_signal *s, void *out,
		       gpud_run_info *info)
{
	uint64_t nx = DEMO_KEPT, nf = DEMO_FREQS;
	size_t es = gpud_dtype_size(dt);
	static float xf[DEMO_KEPT], yf[DEMO_KEPT];
	static float *ff;
	const void *x = s->x, *y = s->y, *f = s->freqs;
	gpud_handle h[4];
	gpud_output o;
	size_t no;

	if (dt == GPUD_F32) {
		if (ff == NULL && (ff = malloc(DEMO_FREQS * sizeof(float))) == NULL)
			die(1, "out of memory");
		for (int i = 0; i < DEMO_KEPT; i++) {
			xf[i] = (float)s->x[i];
			yf[i] = (float)s->y[i];
		}
		for (unsigned i = 0; i < DEMO_FREQS; i++)
			ff[i] = (float)s->freqs[i];
		x = xf;
		y = yf;
		f = ff;
	}
	double t0 = now_s();
	if (gpud_alloc(c, dt, 1, &nx, x, &h[0]) || gpud_alloc(c, dt, 1, &nx, y, &h[1]) ||
	    gpud_alloc(c, dt, 1, &nf, f, &h[2]))
		die(1, "demo: upload: %s", gpud_errmsg(c));
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			   gpud_arg_buffer("freqs", h[2])};
	if (gpud_run(c, "lombscargle", args, 3, &o, 1, &no, info) != GPUD_OK)
		die(1, "demo: run: %s", gpud_errmsg(c));
	h[3] = o.handle;
	if (gpud_download_range(c, o.handle, 0, out, nf * es) != GPUD_OK)
		die(1, "demo: download: %s", gpud_errmsg(c));
	double t = now_s() - t0;
	if (gpud_free(c, h, 4) != GPUD_OK)
		die(1, "demo: free: %s", gpud_errmsg(c));
	return t;
}

static int cmd_demo(int argc, char **argv)
{
	int runs = 5;
	demo_signal s;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = atoi(argv[++i]);
			if (runs < 1 || runs > 1000)
				die(EXIT_USAGE, "demo --runs: expected 1 to 1000, got '%s'",
				    argv[i]);
		} else {
			die(EXIT_USAGE, "demo: unexpected argument '%s'", argv[i]);
		}
	}
	if (demo_signal_make(&s, 42) != 0)
		die(1, "out of memory");
	void *out = malloc(DEMO_FREQS * sizeof(double));
	double *times = malloc((size_t)runs * sizeof(double));
	if (!out || !times)
		die(1, "out of memory");

	static const gpud_dtype dtypes[] = {GPUD_F64, GPUD_F32};
	for (int di = 0; di < 2; di++) {
		gpud_dtype dt = dtypes[di];
		/* The first call includes connecting, as a fresh process would. */
		double t0 = now_s();
		gpud_run_info info;
		gpud_client *c = connect_or_die();
		demo_job(c, dt, &s, out, &info);
		double first = now_s() - t0;
		if (di == 0) {
			printf("lombscargle on the built-in signal: %d samples of y = 2 cos(x + pi/2), "
			       "%u frequencies\n",
			       DEMO_KEPT, DEMO_FREQS);
			printf("gpud %s at %s, backend %s\n\n", gpud_server(c)->version,
			       gpud_url(c), gpud_server(c)->backend);
			printf("%-8s %10s %14s %22s %14s\n", "dtype", "peak freq", "first call",
			       "warm call (median)", "kernel");
		}
		for (int r = 0; r < runs; r++)
			times[r] = demo_job(c, dt, &s, out, &info);
		qsort(times, (size_t)runs, sizeof(double), cmp_double);
		double warm = times[runs / 2];
		size_t best = 0;
		for (size_t i = 1; i < DEMO_FREQS; i++) {
			double v = dt == GPUD_F64 ? ((double *)out)[i] : ((float *)out)[i];
			double bv = dt == GPUD_F64 ? ((double *)out)[best] : ((float *)out)[best];
			if (v > bv)
				best = i;
		}
		printf("%-8s %10.4f %11.2f ms %13.2f ms (n=%d) %11.2f ms\n", gpud_dtype_name(dt),
		       s.freqs[best], first * 1e3, warm * 1e3, runs, info.kernel_us / 1e3);
		gpud_close(c);
	}
	printf("\nfirst call: connect + upload + run + download in a new connection;\n"
	       "warm call: the same job again on the open connection; kernel: time inside gpud.\n");
	free(out);
	free(times);
	demo_signal_free(&s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"url", required_argument, NULL, 'u'},
		{"timeout", required_argument, NULL, 't'},
		{"token", required_argument, NULL, 'T'},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;

	t_start = now_s();
	/* Options before the command only; the command parses the rest. */
	while ((opt = getopt_long(argc, argv, "+u:t:T:vVh", opts, NULL)) != -1) {
		switch (opt) {
		case 'T': /* the library reads GPUD_TOKEN at hello */
			setenv("GPUD_TOKEN", optarg, 1);
			break;
		case 'u':
			url = optarg;
			break;
		case 't': {
			char *end;
			double t = strtod(optarg, &end);
			if (*end || !(t > 0 && t < 1e6))
				die(EXIT_USAGE, "--timeout: expected seconds, got '%s'", optarg);
			timeout_ms = (int)(t * 1000);
			break;
		}
		case 'v':
			verbose = 1;
			break;
		case 'V':
			printf("gpuctl %s\n", GPUD_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[optind];
	int rest = argc - optind - 1;
	char **rargv = argv + optind + 1;
	if (!strcmp(cmd, "run"))
		return cmd_run(rest, rargv);
	if (!strcmp(cmd, "kernels"))
		return cmd_kernels(rest, rargv);
	if (!strcmp(cmd, "status"))
		return cmd_status(rest, rargv);
	if (!strcmp(cmd, "demo"))
		return cmd_demo(rest, rargv);
	if (!strcmp(cmd, "upload"))
		return cmd_upload(rest, rargv);
	if (!strcmp(cmd, "download"))
		return cmd_download(rest, rargv);
	if (!strcmp(cmd, "free"))
		return cmd_free(rest, rargv);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(rest, rargv);
	if (!strcmp(cmd, "kernel"))
		return cmd_kernel(rest, rargv);
	die(EXIT_USAGE,
	    "unknown command '%s' (expected run, upload, download, free, ls, kernel, kernels, "
	    "status or demo)",
	    cmd);
}
