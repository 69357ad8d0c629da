/*
 * client/gpuctl/cmd_kernels.c — the kernel commands: kernels (every kernel
 * with its arguments in aligned columns; --json: schema gpuctl.kernels;
 * --names and --args KERNEL: bare words for scripts and shell completion;
 * --custom: the tenant's custom kernels, pinned or not, last use), kernel add
 * (register a raw CUDA C kernel, its source from a file or stdin, or an
 * elementwise one) and kernel rm.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "client/gpuctl/gpuctl.h"
#include "client/gpuctl/json.h"

#define SOURCE_MAX (1u << 20)

static const char *const roles[] = {"in", "out", "scalar"};

/* Schema gpuctl.kernels, version 1: each kernel with its parameters; dtypes
 * by name, ndim -1 for any rank, default null where there is none, inplace_of
 * the inputs an output may be written in place of ([] for none). */
static void kernels_json(const gpud_kernel_list *l)
{
	json_t *doc = json_doc("gpuctl.kernels", 1), *ks = json_array();
	for (size_t i = 0; i < l->count; i++) {
		const gpud_kernel_info *k = &l->kernels[i];
		json_t *ps = json_array();
		for (size_t j = 0; j < k->nparams; j++) {
			const gpud_param_info *p = &k->params[j];
			json_t *dts = json_array();
			for (int d = 0; d < 32; d++)
				if (p->dtypes & (1u << d))
					json_array_append_new(dts, json_string(gpud_dtype_name(
									   (gpud_dtype)d)));
			json_t *inpl = json_array();
			for (const char *n = p->inplace_of; n && *n;) {
				size_t len = strcspn(n, "|");
				json_array_append_new(inpl, json_stringn(n, len));
				n += len + (n[len] == '|');
			}
			json_array_append_new(
				ps,
				json_pack("{s:s, s:s, s:o, s:i, s:b, s:o, s:s, s:s, s:o}", "name",
					  p->name, "role", roles[p->role % 3], "dtypes", dts,
					  "ndim", p->ndim, "optional", p->optional, "default",
					  p->default_value[0] ? json_string(p->default_value)
							      : json_null(),
					  "type", p->type, "doc", p->doc, "inplace_of", inpl));
		}
		json_array_append_new(ks, json_pack("{s:s, s:s, s:o}", "name", k->name, "doc",
						    k->doc, "params", ps));
	}
	json_object_set_new(doc, "kernels", ks);
	json_emit(doc);
}

/*
 * --args KERNEL: one line per parameter of KERNEL, "NAME ROLE" (role in, out
 * or scalar), in gpud's order, and for an output that may be written in
 * place of inputs a third word, "inplace=x|y"; an unknown KERNEL is an error
 * (EX_DATAERR).
 */
static void kernel_args(const gpud_kernel_list *l, const char *name)
{
	for (size_t i = 0; i < l->count; i++) {
		const gpud_kernel_info *k = &l->kernels[i];
		if (strcmp(k->name, name) != 0)
			continue;
		for (size_t j = 0; j < k->nparams; j++) {
			const gpud_param_info *p = &k->params[j];
			if (p->inplace_of && p->inplace_of[0])
				printf("%s %s inplace=%s\n", p->name, roles[p->role % 3],
				       p->inplace_of);
			else
				printf("%s %s\n", p->name, roles[p->role % 3]);
		}
		return;
	}
	die(EX_DATAERR, "kernels --args: no kernel '%s' ('gpuctl kernels --names' lists them)",
	    name);
}

/* A kernel's parameters, one a line, in columns as wide as their widest cell. */
static void kernel_table(const gpud_kernel_info *k)
{
	int wn = 0, wr = 0, wt = 0;
	for (size_t j = 0; j < k->nparams; j++) {
		const gpud_param_info *p = &k->params[j];
		int n = (int)strlen(p->name), r = (int)strlen(roles[p->role % 3]),
		    t = (int)strlen(p->type);
		wn = n > wn ? n : wn;
		wr = r > wr ? r : wr;
		wt = t > wt ? t : wt;
	}
	printf("%s\n    %s\n", k->name, k->doc);
	for (size_t j = 0; j < k->nparams; j++) {
		const gpud_param_info *p = &k->params[j];
		char line[1024];
		int n = snprintf(line, sizeof(line), "    %-*s  %-*s  %-*s  %s", wn, p->name, wr,
				 roles[p->role % 3], wt, p->type, p->doc);
		if (p->inplace_of && p->inplace_of[0] && n > 0 && (size_t)n < sizeof(line))
			snprintf(line + n, sizeof(line) - (size_t)n,
				 "%s(may be written in place of %s)", p->doc[0] ? " " : "",
				 p->inplace_of);
		size_t len = strlen(line);
		while (len > 0 && line[len - 1] == ' ')
			line[--len] = '\0'; /* no doc: no trailing blanks */
		printf("%s\n", line);
	}
}

/* --custom: NAME, SCOPE (own or shared), PIN (pinned or unpinned), LAST USED. */
static void custom_table(const gpud_kernel_list *l)
{
	int wn = 4, any = 0;
	gpud_kernel_registration g;
	for (size_t i = 0; i < l->count; i++)
		if (gpud_kernel_registration_get(l, i, &g) == GPUD_OK && g.custom) {
			int n = (int)strlen(l->kernels[i].name);
			wn = n > wn ? n : wn;
			any = 1;
		}
	if (!any) {
		printf("no custom kernels (gpuctl kernel add registers one)\n");
		return;
	}
	printf("%-*s  %-6s  %-8s  %s\n", wn, "NAME", "SCOPE", "PIN", "LAST USED");
	for (size_t i = 0; i < l->count; i++) {
		if (gpud_kernel_registration_get(l, i, &g) != GPUD_OK || !g.custom)
			continue;
		char when[64] = "-";
		time_t t = (time_t)g.last_used;
		struct tm tm;
		if (g.last_used > 0 && localtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-*s  %-6s  %-8s  %s\n", wn, l->kernels[i].name,
		       g.shared ? "shared" : "own", g.pinned ? "pinned" : "unpinned", when);
	}
}

int cmd_kernels(int argc, char **argv)
{
	gpud_kernel_list *l;
	gpud_status st;
	int json = 0, names = 0, custom = 0;
	const char *args_of = NULL;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--names"))
			names = 1;
		else if (!strcmp(argv[i], "--custom"))
			custom = 1;
		else if (!strcmp(argv[i], "--args") && i + 1 < argc)
			args_of = argv[++i];
		else if (!strncmp(argv[i], "--args=", 7))
			args_of = argv[i] + 7;
		else if (!strcmp(argv[i], "--args"))
			die_usage("kernels", "--args needs a value: a KERNEL name");
		else if (argv[i][0] == '-')
			die_unknown_option("kernels", argv[i]);
		else
			die_usage("kernels", "unexpected argument '%s'", argv[i]);
	}
	if (json + names + custom + (args_of != NULL) > 1)
		die_usage("kernels", "--json, --names, --custom and --args KERNEL each print the "
				     "list their own way: give one of them");
	gpud_client *c = ctl_connect();
	if ((st = gpud_kernels(c, &l)) != GPUD_OK)
		die_call(c, st, NULL);
	if (json)
		kernels_json(l);
	else if (args_of)
		kernel_args(l, args_of);
	else if (custom)
		custom_table(l);
	for (size_t i = 0; names && i < l->count; i++)
		printf("%s\n", l->kernels[i].name);
	for (size_t i = 0; !json && !names && !custom && !args_of && i < l->count; i++)
		kernel_table(&l->kernels[i]);
	gpud_kernel_list_free(l);
	gpud_close(c);
	return 0;
}

/* A kernel's source from a file or stdin ("-"): NUL-terminated, malloc'd. */
static char *read_source(const char *path)
{
	int from_stdin = !strcmp(path, "-");
	FILE *f = from_stdin ? stdin : fopen(path, "r");
	if (f == NULL)
		die(EX_NOINPUT, "--source %s: cannot open: %s", path, strerror(errno));
	if (from_stdin && isatty(0))
		die_usage("kernel", "--source -: stdin is a terminal: pipe the source in or give "
				    "a file");
	char *text = malloc(SOURCE_MAX + 1);
	if (text == NULL)
		die(EX_TEMPFAIL, "out of memory");
	size_t n = fread(text, 1, SOURCE_MAX, f);
	int err = ferror(f) ? errno : 0;
	int more = n == SOURCE_MAX && fgetc(f) != EOF;
	if (!from_stdin)
		fclose(f);
	if (err)
		die(EX_NOINPUT, "--source %s: cannot read: %s", path, strerror(err));
	if (more)
		die(EX_DATAERR, "--source %s: larger than %u bytes", path, SOURCE_MAX);
	text[n] = '\0';
	return text;
}

static int kernel_rm(int argc, char **argv)
{
	const char *name = NULL;
	int shared = 0;
	gpud_status st;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--shared"))
			shared = 1;
		else if (argv[i][0] == '-')
			die_unknown_option("kernel", argv[i]);
		else if (name)
			die_usage("kernel", "kernel rm: one NAME at a time, got '%s' and '%s'",
				  name, argv[i]);
		else
			name = argv[i];
	}
	if (name == NULL)
		die_usage("kernel", "kernel rm: missing NAME");
	gpud_client *c = ctl_connect();
	st = shared ? gpud_unregister_shared(c, name) : gpud_unregister(c, name);
	if (st != GPUD_OK)
		die_call(c, st, NULL);
	gpud_close(c);
	return 0;
}

static int kernel_add(int argc, char **argv)
{
	gpud_kernel_spec spec;
	const char *file = NULL;
	gpud_status st;
	int unpinned = 0;

	memset(&spec, 0, sizeof(spec));
	if (argc < 2 || argv[1][0] == '-')
		die_usage("kernel", "kernel add: missing NAME");
	spec.name = argv[1];
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
			spec.block = (unsigned)parse_count("kernel", o, argv[++i], 0, 1 << 20);
		else if (!strcmp(o, "--blocks-per-sm") && more >= 1)
			spec.blocks_per_sm = (unsigned)parse_count("kernel", o, argv[++i], 0,
								   1 << 20);
		else if (!strcmp(o, "--max-registers") && more >= 1)
			spec.max_registers = (unsigned)parse_count("kernel", o, argv[++i], 0,
								   1 << 20);
		else if (!strcmp(o, "--fast-math"))
			spec.fast_math = 1;
		else if (!strcmp(o, "--shared"))
			spec.shared = 1;
		else if (!strcmp(o, "--unpinned"))
			unpinned = 1;
		else if (o[0] == '-')
			die_usage("kernel", "kernel add: unknown or incomplete option '%s'%s", o,
				  !strcmp(o, "--elementwise") ? " (it takes IN OUT BODY)" : "");
		else
			die_usage("kernel", "kernel add: unexpected argument '%s'", o);
	}
	char *text = NULL;
	if (!spec.elementwise) {
		if (file == NULL || spec.entry == NULL || spec.signature == NULL)
			die_usage(
				"kernel",
				"kernel add %s: a raw kernel needs --source FILE.cu, --entry ENTRY "
				"and --sig SIGNATURE (or --elementwise IN OUT BODY)",
				spec.name);
		spec.source = text = read_source(file);
	} else if (file) {
		die_usage("kernel", "kernel add %s: --source is for raw kernels, not --elementwise",
			  spec.name);
	}
	gpud_client *c = ctl_connect();
	if ((st = gpud_register_flags(c, &spec, unpinned ? GPUD_REGISTER_UNPINNED : 0)) != GPUD_OK)
		die_call(c, st, NULL);
	printf("registered %s (%s%s%s)\n", spec.name, spec.shared ? "shared, by " : "tenant ",
	       gpud_server(c)->tenant, unpinned ? "; unpinned" : "");
	free(text);
	gpud_close(c);
	return 0;
}

int cmd_kernel(int argc, char **argv)
{
	if (argc >= 1 && !strcmp(argv[0], "rm"))
		return kernel_rm(argc, argv);
	if (argc >= 1 && !strcmp(argv[0], "add"))
		return kernel_add(argc, argv);
	die_usage("kernel", "expected 'kernel add NAME ...' or 'kernel rm NAME'%s%s%s",
		  argc ? ", got '" : "", argc ? argv[0] : "", argc ? "'" : "");
}
