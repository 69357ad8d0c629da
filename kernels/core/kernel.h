/*
 * kernels/core/kernel.h — the kernel table: one entry per named kernel, what
 * every backend shares of it.
 *
 * An entry declares its parameters (buffers in or out with accepted dtypes
 * and rank, typed scalars with defaults), a check of what the generic binder
 * cannot see (equal lengths, one dtype, output shapes), samples: argument
 * texts the self-test runs at start against the CPU reference
 * (kernels/core/sample.h, selftest.h), and the message of its verdicts. The
 * daemon binds a request's arguments against the parameters
 * (kernels/core/args.c), calls check, allocates missing outputs and hands
 * the bound arguments to the backend. How a backend computes the kernel is
 * in that backend's own table, one entry per kernel of the same type for
 * every kernel, by id: cpu_kernel (kernels/core/cpu_kernel.h: the host code,
 * also the reference the others are tested against) and cuda_kernel
 * (kernels/core/cuda_kernel.h: launch, paths, attributes).
 *
 * Adding a kernel <name> to a folder that exists: one line
 * KERNEL(<name>, <folder>) in kernels/kernels.def, and in the folder's files
 * its kernel_def kernel_<name> (.id = KERNEL_ID_<name>, .samples) and
 * cpu_kernel cpu_kernel_<name> (<folder>.c), its cuda_kernel
 * cuda_kernel_<name> (<folder>.cu), and its unit and GPU tests. A new folder
 * kernels/<folder>/ adds a KERNEL_FOLDER(<folder>) line too and four files:
 * <folder>.c (the kernel_def: params, check, samples; the cpu_kernel: the
 * CPU reference), <folder>.cu (the cuda_kernel: launch, attributes),
 * test_<folder>.c (Suite *<folder>_suite(void)) and gpu_test_<folder>.c
 * (void gpu_test_<folder>(gpud_client *c, const char *kernel)), plus a
 * header where its files share declarations. Nothing else: the tables, the
 * unit-test suites and the GPU test list are made from kernels.def and the
 * Makefile finds the files. A kernel lacking its kernel_def, a backend's
 * entry, its suite or GPU test does not link; a wrong .id or no .samples
 * fails the unit tests.
 *
 * A backend <b> that runs the built-in kernels adds, on this side:
 * kernels/core/<b>_kernel.h (its entry type, a struct whose first member is
 * the kernel's name), kernels/core/<b>_table.c (its table made from
 * kernels.def as cpu_table.c and cuda_table.c make theirs, checked by
 * kernel_tables_check) and in every kernel folder one file of its entries,
 * one per kernel (as <folder>.cu holds cuda's); its self-test, if it has
 * one, supplies only its run of a sample to kernel_selftest_samples
 * (kernels/core/selftest.h).
 *
 * No state: the tables are constant; check runs on the loop (and, for the
 * self-test, on each device's opening thread).
 */
#ifndef GPUD_KERNEL_H
#define GPUD_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include <gpud/types.h>

#include "kernels/core/list.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KERNEL_MAX_PARAMS 16
#define KDT(t) (1u << (t)) /* dtype mask bit */
#define KDT_FLOAT (KDT(GPUD_F32) | KDT(GPUD_F64))
#define KDT_COMPLEX (KDT(GPUD_C64) | KDT(GPUD_C128))

typedef enum kparam_role { KPARAM_IN, KPARAM_OUT, KPARAM_SCALAR } kparam_role;
/*
 * Scalar types. KSCALAR_DTYPE takes a dtype's name as text ("float32"), for
 * kernels whose output dtype is chosen by the caller (uniform, normal); the
 * param's `dtypes` mask says which it may name. KSCALAR_WORD takes one of the
 * param's `words` as text, or a bool standing for words[0] (false) or
 * words[1] (true); its value (s.i64) is the word's index.
 */
typedef enum kscalar_type {
	KSCALAR_BOOL,
	KSCALAR_I64,
	KSCALAR_F64,
	KSCALAR_DTYPE,
	KSCALAR_WORD
} kscalar_type;

typedef struct kernel_param {
	const char *name;
	kparam_role role;
	unsigned dtypes;    /* buffers: KDT mask of accepted dtypes; KSCALAR_DTYPE: nameable */
	int ndim;           /* buffers: required rank, -1 for any */
	kscalar_type stype; /* scalars */
	const char *default_value; /* scalars: text of the default, NULL if required */
	const char *doc;
	int broadcast; /* an input array that also takes a scalar (stype) */
	/* An input array or a scalar without a default that may be left out
	 * (its value then has present == 0; check decides what that means). */
	int optional;
	const char *const *words; /* KSCALAR_WORD: the words, NULL-terminated */
	/*
	 * An output: the inputs it may be written in place of, a KPARAM_BIT of
	 * each one's index. A run may then give it the very array it gives that
	 * input (the same bytes, dtype and element count: an elementwise kernel
	 * reading element i before writing it); any other overlap of an output
	 * with an input or another output is refused (kernels/core/alias.c).
	 */
	unsigned inplace_of;
	/* KSCALAR_WORD: only its words; no bool stands for words[0] or words[1]
	 * (where false and true mean nothing, as lombscargle's method) */
	int words_only;
} kernel_param;

#define KPARAM_BIT(i) (1u << (i))

/* A bound buffer: where the backend keeps it, and what it holds. */
typedef struct kernel_array {
	gpud_dtype dtype;
	int ndim;
	uint64_t shape[GPUD_MAX_DIMS];
	size_t count; /* elements */
	void *data;   /* host memory (cpu) or device memory (cuda) */
} kernel_array;

typedef struct kernel_value {
	int present; /* given by the client (or, for scalars, defaulted) */
	int scalar;  /* a broadcast input given a scalar (in s, not arr) */
	kernel_array arr;
	kernel_array expect; /* outputs: what check says the output must be */
	union {
		int b;
		int64_t i64;
		double f64;
		gpud_dtype dtype; /* KSCALAR_DTYPE */
	} s;
} kernel_value;

struct kernel_def;

typedef struct kernel_args {
	const struct kernel_def *kernel;
	kernel_value v[KERNEL_MAX_PARAMS]; /* in the order of kernel->params */
	gpud_dtype dtype;                  /* the common dtype, set by check */
} kernel_args;

typedef struct kernel_def {
	const char *name;
	int id; /* KERNEL_ID_<name> (kernels/core/list.h); KERNEL_ID_CUSTOM for a user's */
	const char *doc;
	const kernel_param *params;
	int nparams;
	/*
	 * After binding: checks relations between arguments and sets dtype,
	 * ndim and shape of every output (outputs the client passed are then
	 * compared against them). 0 or -1 with a message in err.
	 */
	int (*check)(kernel_args *a, char *err, size_t errlen);
	/*
	 * Argument texts the self-test runs, NULL-terminated (kernels/core/sample.h
	 * gives the syntax): each for every dtype of the kernel's first input
	 * array (or first dtype-name scalar) that check accepts, on the GPU at
	 * start against the CPU reference (cpu_kernel.run). Every built-in
	 * kernel has at least one.
	 */
	const char *const *samples;
	/* a user's kernel (struct custom_kernel, kernels/custom/custom.h); NULL for built-ins */
	const void *custom;
	/*
	 * Optional, for arguments whose values, not only their shapes, can be
	 * wrong (negative weights), which check cannot see (on the cuda backend
	 * the arrays are in device memory). The run itself finds it: each
	 * backend's code returns 0 or a code of the kernel's own (cpu_kernel.verdict;
	 * the CUDA kernel writes it to cuda_launch_ctx.verdict). A run with a
	 * code fails with ST_INVALID and verdict_message's words; its outputs
	 * hold no result.
	 */
	void (*verdict_message)(const kernel_args *a, unsigned code, char *err, size_t errlen);
} kernel_def;

/* --- the table (kernels/core/table.c), in the order of kernels/kernels.def --- */
const kernel_def *kernel_find(const char *name);
const kernel_def *const *kernel_list(size_t *n);
/*
 * The check every backend's table passes (cpu_kernel_tables_check,
 * cuda_kernel_tables_check): its n entries, each a struct whose first member
 * is its kernel's name, agree with kernel_list() (as many entries, the same
 * names in the same order, every kernel_def's id its position). 0, or -1
 * with the first difference in err, naming the backend.
 */
int kernel_tables_check(const char *backend, const void *const *entries, size_t n, char *err,
			size_t errlen);

/* --- arguments (kernels/core/args.c) --- */
int kernel_param_index(const kernel_def *k, const char *name);

/* "float32|float64 1-d array", "bool scalar (default false)": for messages and listings. */
void kernel_param_describe(const kernel_param *p, char *buf, size_t len);
/* "x, y, freqs, pgram, precenter, normalize" */
void kernel_param_names(const kernel_def *k, char *buf, size_t len);

/*
 * Parses a scalar's text (defaults, and what tools print) as its type. 0 or -1.
 */
int kernel_scalar_parse(kscalar_type t, const char *text, kernel_value *out);
const char *kernel_scalar_type_name(kscalar_type t);

/*
 * Fills defaults for absent scalars and reports the first required
 * parameter that is missing. 0 or -1 + err.
 */
int kernel_args_finish(kernel_args *a, char *err, size_t errlen);

/*
 * Binding one argument of a request to parameter p, with the checks every
 * kernel shares. Messages name the kernel, the argument, and expected vs got.
 */
int kernel_bind_array(const kernel_def *k, const kernel_param *p, const kernel_array *arr,
		      kernel_value *out, char *err, size_t errlen);
typedef enum kscalar_given { KGIVEN_BOOL, KGIVEN_I64, KGIVEN_F64 } kscalar_given;
int kernel_bind_scalar(const kernel_def *k, const kernel_param *p, kscalar_given kind, int b,
		       int64_t i, double d, kernel_value *out, char *err, size_t errlen);
/* A text scalar: a dtype name (KSCALAR_DTYPE) or one of the words (KSCALAR_WORD). */
int kernel_bind_text(const kernel_def *k, const kernel_param *p, const char *text,
		     kernel_value *out, char *err, size_t errlen);
/* numpy's name ("float32", "int64") to a dtype; GPUD_DTYPE_INVALID if it is none. */
gpud_dtype kernel_dtype_parse(const char *name);

/* --- aliasing (kernels/core/alias.c) --- */

/*
 * Refuses arguments whose arrays overlap where the kernel does not allow it:
 * an output sharing bytes with an input (unless it is that input's very
 * array and the output declares inplace_of it) or with another output.
 * Arrays are compared as byte ranges [data, data + count * dtype size) of one
 * address space (host memory, or the device's unified addresses), so the
 * same buffer and parts of one allocation are both seen; an empty range
 * overlaps nothing. handles[i], where not NULL and not 0, names param i's
 * buffer in the message. 0, or -1 with err naming both arguments.
 */
int kernel_alias_check(const kernel_args *a, const uint64_t *handles, char *err, size_t errlen);
/* "x|y": the inputs output p may be written in place of; "" if none. */
void kernel_inplace_names(const kernel_def *k, const kernel_param *p, char *buf, size_t len);

/* Helpers for check functions. */
int kernel_check_same_dtype(kernel_args *a, char *err, size_t errlen);
void kernel_set_output(kernel_args *a, int idx, gpud_dtype dt, int ndim, const uint64_t *shape);

#ifdef __cplusplus
}
#endif
#endif
