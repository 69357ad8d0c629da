/*
 * client/gpuctl/cmd_run.c — gpuctl run KERNEL ARG=VALUE... [-o [NAME=]FILE]...
 *
 * Reads the arguments (values.c), checks input files before anything is
 * sent, then runs the job in the fewest round trips it can:
 *   - over ipc://, in host memory gpud lends (gpud_host_alloc): the .npy
 *     files are read straight into it, and gpud reads the inputs from it and
 *     writes the outputs into it (gpud_call_to): one round trip for the
 *     memory, one for the job, no bytes through the socket, nothing pinned
 *     or faulted in on this side; the outputs are written to their files
 *     from there;
 *   - else inputs up to ONE_TRIP_MAX in all travel with the run and the
 *     outputs come back in its reply (gpud_call, one round trip);
 *   - else the inputs are uploaded first, the kernel runs on buffers and
 *     each output is downloaded (gpud_run).
 * -o is checked against the kernel's outputs (as 'kernels' lists them)
 * before anything runs where a -o names an output or an argument is a
 * %HANDLE (else when the run failed, or before uploads), and always matched
 * to the outputs the reply names before any file is written. Outputs go to files or stdout as -o says, or a
 * summary of each is printed; --json prints the run as one document instead
 * (schema gpuctl.run). Everything gpuctl made in gpud goes with its
 * connection, which the process's exit closes (ctl_leave); buffers passed
 * as %HANDLE are never freed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "client/gpuctl/gpuctl.h"
#include "client/gpuctl/json.h"
#include "client/gpuctl/switches.h"

#define MAX_ARGS 32
/* Inputs up to this many bytes in all go with the run itself. */
#define ONE_TRIP_MAX (1u << 20)
/* Lent memory: inputs at multiples of this; room for the outputs after them
 * (at least OUT_ROOM_MIN, or as much as the inputs). */
#define LENT_ALIGN 64u
#define OUT_ROOM_MIN (8u << 20)

typedef struct run_arg {
	char name[GPUD_NAME_MAX];
	char what[GPUD_NAME_MAX + 16]; /* "argument 'x'" */
	ctl_value v;
	gpud_array arr; /* stdin's array, or a file's for one round trip */
	int have_arr;
	int in_lent; /* arr.data is in memory gpud lent, not malloc'd */
} run_arg;

typedef struct run_job {
	const char *kernel;
	run_arg args[MAX_ARGS];
	int nargs;
	out_spec outs[MAX_ARGS];
	int nouts;
	gpud_arg wire[MAX_ARGS];
	json_t *json; /* --json: the document being filled; NULL without */
	json_t *json_outputs;
	int device; /* --device N; -1: gpud places */
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
		if (!strcmp(a, "--device") && i + 1 < argc) {
			j->device = (int)parse_count("run", "--device", argv[++i], 0, 1024);
			continue;
		}
		if (!strcmp(a, "--json")) {
			if (j->json == NULL) {
				j->json = json_doc("gpuctl.run", 1);
				j->json_outputs = json_array();
			}
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
	if (to_stdout >= 0 && j->json)
		die_usage("run", "-o %s and --json both write stdout: write the output to a file",
			  j->outs[to_stdout].arg);
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

/*
 * Whether -o must be checked against the kernel's outputs as 'kernels' lists
 * them before anything runs: where a -o names an output, or an argument is a
 * buffer (%HANDLE) the run could change. Else (every -o a plain FILE,
 * nothing of the caller's in gpud) the round trip is saved: the run changes
 * nothing that outlives gpuctl's connection, the reply's outputs are matched
 * to -o before any file is written with the same messages, and a run that
 * fails is checked then (die_run), so a usage error still comes first.
 */
static int check_first(const run_job *j)
{
	int needed = 0;
	for (int i = 0; i < j->nouts; i++)
		needed |= j->outs[i].named;
	for (int i = 0; i < j->nargs; i++)
		needed |= j->args[i].v.kind == VAL_HANDLE;
	return needed;
}

/* Checks -o against the kernel's outputs as 'kernels' lists them. */
static void check_outputs(gpud_client *c, const run_job *j)
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

/* A run that failed: a -o not checked before it is checked now (its usage
 * error first), then the run's error. */
static _Noreturn void die_run(gpud_client *c, const run_job *j, gpud_status st, const char *msg)
{
	if (!check_first(j))
		check_outputs(c, j);
	die_status(st, gpud_url(c), NULL, msg);
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

/*
 * --json: one output of the run: where it went (its file, or null), and
 * without -o its first values as the summary shows them (complex ones as
 * [real, imaginary]).
 */
static void json_output(run_job *j, const char *name, const gpud_array *a, const char *file)
{
	json_t *shape = json_array(), *head = json_array();
	for (int d = 0; d < a->ndim; d++)
		json_array_append_new(shape, json_u64(a->shape[d]));
	size_t n = a->data ? gpud_array_count(a) : 0;
	for (size_t i = 0; !file && i < n && i < 6; i++) {
		switch (a->dtype) {
		case GPUD_F32:
			json_array_append_new(head, json_real(((const float *)a->data)[i]));
			break;
		case GPUD_F64:
			json_array_append_new(head, json_real(((const double *)a->data)[i]));
			break;
		case GPUD_I32:
			json_array_append_new(head, json_integer(((const int32_t *)a->data)[i]));
			break;
		case GPUD_I64:
			json_array_append_new(head, json_integer(((const int64_t *)a->data)[i]));
			break;
		case GPUD_C64: {
			const float *z = (const float *)a->data + 2 * i;
			json_array_append_new(head,
					      json_pack("[f, f]", (double)z[0], (double)z[1]));
			break;
		}
		case GPUD_C128: {
			const double *z = (const double *)a->data + 2 * i;
			json_array_append_new(head, json_pack("[f, f]", z[0], z[1]));
			break;
		}
		default:
			break;
		}
	}
	json_array_append_new(j->json_outputs,
			      json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "name", name, "dtype",
					gpud_dtype_name(a->dtype), "shape", shape, "bytes",
					json_u64(a->nbytes), "file",
					file ? json_string(file) : json_null(), "head", head));
}

/* --json: the run's times, once it is done. */
static void json_times(run_job *j, const gpud_run_info *info)
{
	if (j->json) {
		json_object_set_new(j->json, "elapsed_us", json_real(info->elapsed_us));
		json_object_set_new(j->json, "kernel_us", json_real(info->kernel_us));
	}
}

/* c: the outputs are in its lent memory (gpud writes them to their files); NULL: not. */
static void write_results(run_job *j, gpud_result *res, size_t nout, gpud_client *c)
{
	const char *names[MAX_ARGS] = {0}, *dest[MAX_ARGS];
	for (size_t i = 0; i < nout; i++)
		names[i] = res[i].name;
	match_outputs(j, names, nout, dest);
	for (size_t i = 0; i < nout; i++) {
		char what[GPUD_NAME_MAX + 16];
		snprintf(what, sizeof(what), "output '%.63s'", res[i].name);
		if (dest[i] && c)
			save_host_array(c, dest[i], what, &res[i].array);
		else if (dest[i])
			save_array(dest[i], what, &res[i].array);
		else if (j->nouts == 0 && !j->json)
			print_summary(res[i].name, &res[i].array);
		if (j->json && (dest[i] || j->nouts == 0))
			json_output(j, res[i].name, &res[i].array, dest[i]);
		if (c)
			res[i].array.data = NULL; /* gpud's memory, not malloc'd */
		gpud_array_free(&res[i].array);
	}
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
		die_run(c, j, st, msg);
	trace("ran %s with its inputs and outputs in one round trip (in gpud %.1f us, kernel "
	      "%.1f us)",
	      j->kernel, info.elapsed_us, info.kernel_us);
	json_times(j, &info);
	write_results(j, res, nout, NULL);
	return 0;
}

/* Bump allocation of .npy data in lent memory (gpud_npy_load_into). */
typedef struct lent_area {
	uint8_t *base;
	size_t size, used;
} lent_area;

static void *lent_take(lent_area *a, size_t nbytes)
{
	size_t at = (a->used + LENT_ALIGN - 1) / LENT_ALIGN * LENT_ALIGN;
	if (at > a->size || nbytes > a->size - at)
		return NULL;
	a->used = at + nbytes;
	return a->base + at;
}

/* The same, for a file read here (gpud_npy_load_into): its pages mapped in
 * one call, not a fault each as the file is read in. */
static void *lent_alloc(void *ctx, const gpud_array *meta)
{
	uint8_t *at = lent_take(ctx, meta->nbytes);
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), p = (uintptr_t)at;
	if (at && meta->nbytes > 0)
		(void)madvise((void *)(p & ~(page - 1)), meta->nbytes + (p & (page - 1)),
			      MADV_POPULATE_WRITE);
	return at;
}

/*
 * The .npy file of ra into lent memory. A regular little-endian file's data
 * is copied by the kernel (gpud_host_read), so this process never maps those
 * pages (4 MiB: 0.4 ms against 1.0 for mapping them and read()); anything
 * else (a FIFO, a big-endian file, a bad header, which then gets its
 * message) is read here.
 */
static void load_lent(gpud_client *c, run_arg *ra, lent_area *area)
{
	char err[1024];
	gpud_array meta;
	uint64_t off;
	int fd;
	int r = gpud_npy_open(ra->v.path, &meta, &fd, &off, err, sizeof(err));
	if (r == 0) {
		void *dst = lent_take(area, meta.nbytes);
		gpud_status st = dst ? gpud_host_read(c, dst, fd, off, meta.nbytes) : GPUD_ENOMEM;
		close(fd);
		if (st != GPUD_OK)
			die(EX_IOERR, "%s: %s: %s", ra->what, ra->v.path,
			    dst ? gpud_errmsg(c) : "no room left in the memory gpud lent");
		meta.data = dst;
		ra->arr = meta;
		return;
	}
	if (r > 0)
		close(fd);
	if (gpud_npy_load_into(ra->v.path, lent_alloc, area, &ra->arr, err, sizeof(err)) != 0)
		die(EX_DATAERR, "%s: %s", ra->what, err);
}

/*
 * The whole job in memory gpud lends: inputs read into it, outputs written
 * into it by gpud. -1 where that cannot be (no shared memory, a stdin array
 * too big to send, outputs too big for the room and one reply): the caller
 * goes on another way. in_bytes: the input files' sizes.
 */
static int run_in_lent(gpud_client *c, run_job *j, uint64_t in_bytes)
{
	char msg[2048];
	uint64_t room = in_bytes > OUT_ROOM_MIN ? in_bytes : OUT_ROOM_MIN;
	uint64_t want = in_bytes + (uint64_t)(j->nargs + 1) * LENT_ALIGN + room;

	if (!gpud_has_shm(c) || want > SIZE_MAX)
		return -1;
	if (GPUCTL_RUN_ASYNC && progress_possible())
		return -1; /* a terminal: the spinner's job path instead (wait.c) */
	uint8_t *mem = gpud_host_alloc(c, (size_t)want);
	if (mem == NULL) {
		ctl_connected(c); /* a failed dial is a connect error, not this */
		trace("no shared memory for the job (%s); sending it instead", gpud_errmsg(c));
		return -1;
	}
	trace("%" PRIu64 " bytes of host memory from gpud", want);
	lent_area area = {.base = mem, .size = (size_t)want - room};
	for (int i = 0; i < j->nargs; i++) {
		run_arg *ra = &j->args[i];
		if (ra->v.kind == VAL_FILE && !ra->have_arr) {
			load_lent(c, ra, &area);
			ra->in_lent = 1;
			trace("read %s from %s into it (%zu bytes)", ra->name, ra->v.path,
			      ra->arr.nbytes);
		}
		j->wire[i] = is_array(ra) ? gpud_arg_array(ra->name, &ra->arr) : scalar_arg(ra);
	}
	size_t at = (area.used + LENT_ALIGN - 1) / LENT_ALIGN * LENT_ALIGN;
	gpud_result res[MAX_ARGS];
	size_t nout = 0;
	gpud_run_info info;
	int in_lent = 0;
	/* Outputs that all go to files are written there by gpud: this process
	 * need not map their pages (gpud_set_populate). */
	gpud_set_populate(c, j->nouts == 0);
	ctl_connected(c);
	gpud_status st = wait_call_to(c, j->kernel, j->wire, (size_t)j->nargs, mem + at,
				      (size_t)want - at, res, MAX_ARGS, &nout, &info, &in_lent, msg,
				      sizeof(msg));
	if (st == GPUD_E2BIG) {
		trace("the job does not fit one round trip (%s); uploading instead", msg);
		return -1;
	}
	if (st != GPUD_OK)
		die_run(c, j, st, msg);
	trace("ran %s on lent memory, outputs %s (in gpud %.1f us, kernel %.1f us)", j->kernel,
	      in_lent ? "written into it" : "in the reply", info.elapsed_us, info.kernel_us);
	json_times(j, &info);
	write_results(j, res, nout, in_lent ? c : NULL);
	return 0;
}

/* Inputs uploaded into buffers, the run on them, each output downloaded; all freed. */
static void run_on_buffers(gpud_client *c, run_job *j)
{
	gpud_handle made[MAX_ARGS * 2];
	int nmade = 0;
	char msg[2048];

	if (!check_first(j)) /* uploads first: -o is checked before them */
		check_outputs(c, j);

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
		die_run(c, j, st, msg);
	trace("ran %s (in gpud %.1f us, kernel %.1f us)", j->kernel, info.elapsed_us,
	      info.kernel_us);
	json_times(j, &info);
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
			if (j->json)
				json_output(j, o->name, &meta, dest[i]);
		} else if (j->nouts == 0) {
			gpud_array a;
			if ((st = gpud_download(c, o->handle, &a)) != GPUD_OK)
				die_call(c, st, what);
			if (j->json)
				json_output(j, o->name, &a, NULL);
			else
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

	j.device = -1;
	parse(&j, argc, argv);
	check(&j);
	/* Over ipc:// the job goes to memory gpud lends before hello, its
	 * inputs read while nng dials, and the run carries the hello
	 * (client/region.c): one round trip to gpud. */
	const char *from, *url = ctl_url(&from);
	int lend_first = strncmp(url, "ipc://", 6) == 0 && strchr(url, ',') == NULL &&
			 !(GPUCTL_RUN_ASYNC && progress_possible());
	gpud_client *c = ctl_connect_as(lend_first ? CTL_DIAL_BEHIND : CTL_HELLO_AT_CONNECT);
	gpud_set_device(c, j.device); /* the run, and the arrays gpuctl uploads for it */
	gpud_set_ring(c, 0); /* a few calls: the ring's set-up would cost more than it saves */
	if (check_first(&j)) {
		ctl_connected(c);
		check_outputs(c, &j);
	}

	uint64_t bytes = 0;
	for (int i = 0; i < j.nargs; i++) {
		struct stat sb;
		run_arg *ra = &j.args[i];
		if (ra->have_arr)
			bytes += ra->arr.nbytes;
		else if (ra->v.kind == VAL_FILE)
			bytes += stat(ra->v.path, &sb) == 0 ? (uint64_t)sb.st_size : UINT64_MAX / 4;
	}
	/* Lent memory (ipc://); else small inputs in one round trip (gpud_call); else buffers. */
	if (run_in_lent(c, &j, bytes) != 0) {
		ctl_connected(c);
		if (bytes > ONE_TRIP_MAX || bytes > gpud_server(c)->max_message_size ||
		    run_one_trip(c, &j) != 0)
			run_on_buffers(c, &j);
	}
	for (int i = 0; i < j.nargs; i++) {
		if (j.args[i].in_lent)
			j.args[i].arr.data = NULL;
		gpud_array_free(&j.args[i].arr);
	}
	ctl_leave(c);
	if (j.json) {
		/* Schema gpuctl.run, version 1 (docs/user-guide.md). */
		json_object_set_new(j.json, "kernel", json_string(j.kernel));
		json_object_set_new(j.json, "outputs", j.json_outputs);
		json_emit(j.json);
	}
	return 0;
}
