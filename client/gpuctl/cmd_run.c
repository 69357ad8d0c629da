/*
 * client/gpuctl/cmd_run.c — gpuctl run KERNEL ARG=VALUE... [-o [NAME=]FILE]...
 *
 * Reads the arguments (values.c), checks input files and -o before anything
 * is sent, then runs the job: inputs up to ONE_TRIP_MAX in all travel with
 * the run and the outputs come back in its reply (gpud_call, one round
 * trip); bigger inputs are uploaded first, the kernel runs on buffers and
 * each output is downloaded (gpud_run). Outputs go to files or stdout as -o
 * says, or a summary of each is printed. Everything gpuctl made in gpud is
 * freed before it exits; buffers passed as %HANDLE are never freed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>

#include "client/gpuctl/gpuctl.h"

#define MAX_ARGS 32
/* Inputs up to this many bytes in all go with the run itself. */
#define ONE_TRIP_MAX (1u << 20)

typedef struct run_arg {
	char name[GPUD_NAME_MAX];
	char what[GPUD_NAME_MAX + 16]; /* "argument 'x'" */
	ctl_value v;
	gpud_array arr; /* stdin's array, or a file's for one round trip */
	int have_arr;
} run_arg;

typedef struct run_job {
	const char *kernel;
	run_arg args[MAX_ARGS];
	int nargs;
	out_spec outs[MAX_ARGS];
	int nouts;
	gpud_arg wire[MAX_ARGS];
} run_job;

static void parse(run_job *j, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		out_spec o;
		if (take_out_option("run", argc, argv, &i, &o)) {
			if (j->nouts == MAX_ARGS)
				die_usage("run", "at most %d -o", MAX_ARGS);
			j->outs[j->nouts++] = o;
			continue;
		}
		if (a[0] == '-' && a[1] != '\0')
			die_unknown_option("run", a);
		const char *eq = strchr(a, '=');
		if (j->kernel == NULL) {
			if (eq)
				die_usage("run", "expected KERNEL first, got '%s'", a);
			j->kernel = a;
			continue;
		}
		if (eq == NULL || eq == a)
			die_usage(
				"run",
				"argument '%s': expected NAME=VALUE (x=@FILE.npy, x=-, x=%%HANDLE, "
				"n=42, a=0.5, flag=true, dtype=float32)",
				a);
		if ((size_t)(eq - a) >= GPUD_NAME_MAX)
			die_usage("run", "argument name '%.*s' is longer than %d characters",
				  (int)(eq - a), a, GPUD_NAME_MAX - 1);
		if (j->nargs == MAX_ARGS)
			die_usage("run", "at most %d arguments", MAX_ARGS);
		run_arg *ra = &j->args[j->nargs++];
		memset(ra, 0, sizeof(*ra));
		snprintf(ra->name, sizeof(ra->name), "%.*s", (int)(eq - a), a);
		snprintf(ra->what, sizeof(ra->what), "argument '%.*s'", (int)(eq - a), a);
		for (int k = 0; k < j->nargs - 1; k++)
			if (!strcmp(j->args[k].name, ra->name))
				die_usage("run", "argument '%s' given twice", ra->name);
		parse_value("run", ra->name, eq + 1, &ra->v);
	}
	if (j->kernel == NULL)
		die_usage("run", "missing KERNEL ('gpuctl kernels' lists them)");
}

/* Stdin read at most once; -o specs that can be judged without the kernel's outputs. */
static void check(run_job *j)
{
	int from_stdin = -1, to_stdout = -1;
	for (int i = 0; i < j->nargs; i++) {
		if (j->args[i].v.kind != VAL_STDIN)
			continue;
		if (from_stdin >= 0)
			die_usage("run",
				  "arguments '%s' and '%s' both read stdin: only one argument may",
				  j->args[from_stdin].name, j->args[i].name);
		from_stdin = i;
	}
	for (int i = 0; i < j->nouts; i++) {
		if (!j->outs[i].to_stdout)
			continue;
		if (to_stdout >= 0)
			die_usage("run", "-o %s and -o %s both write stdout: only one output may",
				  j->outs[to_stdout].arg, j->outs[i].arg);
		to_stdout = i;
	}
	if (to_stdout >= 0)
		check_stdout_not_tty("run");
	for (int i = 0; i < j->nargs; i++)
		if (j->args[i].v.kind == VAL_FILE)
			check_readable(j->args[i].what, j->args[i].v.path);
	if (from_stdin >= 0) {
		run_arg *ra = &j->args[from_stdin];
		read_stdin_npy("run", ra->what, &ra->arr);
		ra->have_arr = 1;
	}
}

static void join_names(char *buf, size_t len, const char *const *names, size_t n)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
}

/*
 * Matches the -o specs to the kernel's outputs (names, nout of them): dest[i] is
 * output i's file ("-": stdout) or NULL. Each output takes one -o, each file one output.
 */
static void match_outputs(const run_job *j, const char *const *names, size_t nout,
			  const char **dest)
{
	int owner[MAX_ARGS];
	char list[1024];

	join_names(list, sizeof(list), names, nout);
	for (size_t k = 0; k < nout; k++) {
		dest[k] = NULL;
		owner[k] = -1;
	}
	for (int i = 0; i < j->nouts; i++) {
		const out_spec *o = &j->outs[i];
		size_t k = 0;
		if (!o->named) {
			if (nout != 1)
				die_usage("run",
					  "-o %s: %s has %zu outputs (%s); name each with -o "
					  "NAME=FILE",
					  o->arg, j->kernel, nout, list);
		} else {
			while (k < nout && strcmp(names[k], o->name) != 0)
				k++;
			if (k == nout)
				die_usage("run", "-o %s: %s has no output '%s' (its outputs: %s)",
					  o->arg, j->kernel, o->name, list);
		}
		if (owner[k] >= 0)
			die_usage(
				"run",
				"output '%s' is given two -o: '%s' and '%s'; give each output one",
				names[k], j->outs[owner[k]].arg, o->arg);
		owner[k] = i;
		dest[k] = o->path;
	}
	for (size_t a = 0; a < nout; a++)
		for (size_t b = a + 1; b < nout; b++)
			if (dest[a] && dest[b] && !strcmp(dest[a], dest[b]))
				die_usage("run", "outputs '%s' and '%s' both go to %s", names[a],
					  names[b], strcmp(dest[a], "-") ? dest[a] : "stdout");
}

/* Checks -o against the kernel's outputs as 'kernels' lists them, before anything runs. */
static void check_outputs_early(gpud_client *c, const run_job *j)
{
	gpud_kernel_list *l;
	const char *names[MAX_ARGS], *dest[MAX_ARGS];
	size_t nout = 0;

	if (j->nouts == 0 || gpud_kernels(c, &l) != GPUD_OK)
		return; /* an unknown kernel is the run's to report */
	for (size_t i = 0; i < l->count; i++) {
		gpud_kernel_info *k = &l->kernels[i];
		if (strcmp(k->name, j->kernel) != 0)
			continue;
		for (size_t p = 0; p < k->nparams && nout < MAX_ARGS; p++)
			if (k->params[p].role == GPUD_PARAM_OUT)
				names[nout++] = k->params[p].name;
		if (nout > 0)
			match_outputs(j, names, nout, dest);
		break;
	}
	gpud_kernel_list_free(l);
	trace("checked -o against %s's outputs", j->kernel);
}

static void print_summary(const char *name, const gpud_array *a)
{
	char shape[128];
	size_t n = gpud_array_count(a);

	gpud_shape_format(shape, sizeof(shape), a->shape, a->ndim);
	printf("%s: %s %s [", name, gpud_dtype_name(a->dtype), shape);
	for (size_t i = 0; i < n && i < 6; i++) {
		const char *sep = i ? ", " : "";
		switch (a->dtype) {
		case GPUD_F32:
			printf("%s%.7g", sep, (double)((const float *)a->data)[i]);
			break;
		case GPUD_F64:
			printf("%s%.15g", sep, ((const double *)a->data)[i]);
			break;
		case GPUD_I32:
			printf("%s%d", sep, ((const int32_t *)a->data)[i]);
			break;
		case GPUD_I64:
			printf("%s%" PRId64, sep, ((const int64_t *)a->data)[i]);
			break;
		case GPUD_C64: { /* as numpy writes them: (1+2j) */
			const float *z = (const float *)a->data + 2 * i;
			printf("%s(%.7g%+.7gj)", sep, (double)z[0], (double)z[1]);
			break;
		}
		case GPUD_C128: {
			const double *z = (const double *)a->data + 2 * i;
			printf("%s(%.15g%+.15gj)", sep, z[0], z[1]);
			break;
		}
		default:
			break;
		}
	}
	printf("%s]\n", n > 6 ? ", ..." : "");
}

/* The scalar and handle arguments; arrays are filled in by the caller. */
static gpud_arg scalar_arg(const run_arg *ra)
{
	switch (ra->v.kind) {
	case VAL_HANDLE:
		return gpud_arg_buffer(ra->name, ra->v.handle);
	case VAL_BOOL:
		return gpud_arg_bool(ra->name, ra->v.b);
	case VAL_INT:
		return gpud_arg_i64(ra->name, ra->v.i);
	case VAL_FLOAT:
		return gpud_arg_f64(ra->name, ra->v.f);
	default:
		return gpud_arg_text(ra->name, ra->v.text);
	}
}

static int is_array(const run_arg *ra)
{
	return ra->v.kind == VAL_FILE || ra->v.kind == VAL_STDIN;
}

/* The whole job in one request: files read here, sent with the run, outputs back.
 * -1 if it does not fit one message (the caller uploads instead). */
static int run_one_trip(gpud_client *c, run_job *j)
{
	char err[1024], msg[2048];
	for (int i = 0; i < j->nargs; i++) {
		run_arg *ra = &j->args[i];
		if (ra->v.kind == VAL_FILE && !ra->have_arr) {
			if (gpud_npy_load(ra->v.path, &ra->arr, err, sizeof(err)) != 0)
				die(EX_DATAERR, "%s: %s", ra->what, err);
			ra->have_arr = 1;
			trace("read %s from %s (%zu bytes)", ra->name, ra->v.path, ra->arr.nbytes);
		}
		j->wire[i] = is_array(ra) ? gpud_arg_array(ra->name, &ra->arr) : scalar_arg(ra);
	}
	gpud_result res[MAX_ARGS];
	size_t nout = 0;
	gpud_run_info info;
	gpud_status st = wait_call(c, j->kernel, j->wire, (size_t)j->nargs, res, MAX_ARGS, &nout,
				   &info, msg, sizeof(msg));
	if (st == GPUD_E2BIG) {
		trace("one round trip is too large (%s); uploading instead", msg);
		return -1;
	}
	if (st != GPUD_OK)
		die_status(st, gpud_url(c), NULL, msg);
	trace("ran %s with its inputs and outputs in one round trip (in gpud %.1f us, kernel "
	      "%.1f us)",
	      j->kernel, info.elapsed_us, info.kernel_us);
	const char *names[MAX_ARGS], *dest[MAX_ARGS];
	for (size_t i = 0; i < nout; i++)
		names[i] = res[i].name;
	match_outputs(j, names, nout, dest);
	for (size_t i = 0; i < nout; i++) {
		char what[GPUD_NAME_MAX + 16];
		snprintf(what, sizeof(what), "output '%.63s'", res[i].name);
		if (dest[i])
			save_array(dest[i], what, &res[i].array);
		else if (j->nouts == 0)
			print_summary(res[i].name, &res[i].array);
		gpud_array_free(&res[i].array);
	}
	return 0;
}

/* Inputs uploaded into buffers, the run on them, each output downloaded; all freed. */
static void run_on_buffers(gpud_client *c, run_job *j)
{
	gpud_handle made[MAX_ARGS * 2];
	int nmade = 0;
	char msg[2048];

	for (int i = 0; i < j->nargs; i++) {
		run_arg *ra = &j->args[i];
		if (!is_array(ra)) {
			j->wire[i] = scalar_arg(ra);
			continue;
		}
		gpud_handle h;
		if (ra->have_arr)
			upload_array(c, &ra->arr, ra->v.kind == VAL_STDIN ? "stdin" : ra->v.path,
				     ra->what, &h);
		else
			upload_file(c, ra->v.path, ra->what, &h, NULL);
		made[nmade++] = h;
		j->wire[i] = gpud_arg_buffer(ra->name, h);
	}
	gpud_output outputs[MAX_ARGS];
	size_t nout = 0;
	gpud_run_info info;
	gpud_status st = wait_run(c, j->kernel, j->wire, (size_t)j->nargs, outputs, MAX_ARGS, &nout,
				  &info, msg, sizeof(msg));
	if (st != GPUD_OK)
		die_status(st, gpud_url(c), NULL, msg);
	trace("ran %s (in gpud %.1f us, kernel %.1f us)", j->kernel, info.elapsed_us,
	      info.kernel_us);
	for (size_t i = 0; i < nout; i++) {
		int passed = 0; /* an output passed in as %HANDLE stays the caller's */
		for (int k = 0; k < j->nargs; k++)
			passed |= j->args[k].v.kind == VAL_HANDLE &&
				  j->args[k].v.handle == outputs[i].handle;
		if (!passed)
			made[nmade++] = outputs[i].handle;
	}
	const char *names[MAX_ARGS], *dest[MAX_ARGS];
	for (size_t i = 0; i < nout; i++)
		names[i] = outputs[i].name;
	match_outputs(j, names, nout, dest);
	for (size_t i = 0; i < nout; i++) {
		char what[GPUD_NAME_MAX + 16];
		gpud_output *o = &outputs[i];
		snprintf(what, sizeof(what), "output '%.63s'", o->name);
		if (dest[i]) {
			gpud_array meta = {.dtype = o->dtype, .ndim = o->ndim};
			memcpy(meta.shape, o->shape, sizeof(meta.shape));
			meta.nbytes = gpud_shape_bytes(o->shape, o->ndim,
						       gpud_dtype_size(o->dtype));
			char label[1100];
			snprintf(label, sizeof(label), "%.63s into %s", o->name,
				 strcmp(dest[i], "-") ? dest[i] : "stdout");
			download_to(c, o->handle, &meta, dest[i], label, what);
		} else if (j->nouts == 0) {
			gpud_array a;
			if ((st = gpud_download(c, o->handle, &a)) != GPUD_OK)
				die_call(c, st, what);
			print_summary(o->name, &a);
			gpud_array_free(&a);
		}
	}
	if (nmade > 0 && (st = gpud_free(c, made, (size_t)nmade)) != GPUD_OK)
		die_call(c, st, "free");
	trace("freed what gpuctl made");
}

int cmd_run(int argc, char **argv)
{
	static run_job j;

	parse(&j, argc, argv);
	check(&j);
	gpud_client *c = ctl_connect();
	check_outputs_early(c, &j);

	/* Small inputs: the whole job is one round trip (gpud_call). */
	uint64_t bytes = 0;
	for (int i = 0; i < j.nargs; i++) {
		struct stat sb;
		run_arg *ra = &j.args[i];
		if (ra->have_arr)
			bytes += ra->arr.nbytes;
		else if (ra->v.kind == VAL_FILE)
			bytes += stat(ra->v.path, &sb) == 0 ? (uint64_t)sb.st_size : UINT64_MAX / 4;
	}
	if (bytes > ONE_TRIP_MAX || bytes > gpud_server(c)->max_message_size ||
	    run_one_trip(c, &j) != 0)
		run_on_buffers(c, &j);
	for (int i = 0; i < j.nargs; i++)
		gpud_array_free(&j.args[i].arr);
	gpud_close(c);
	trace("closed");
	return 0;
}
