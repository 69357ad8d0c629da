/*
 * kernels/custom/custom.h — users' own kernels: the declared signature of a raw
 * CUDA C kernel, the parameters and body of an elementwise one, the CUDA C
 * gpud generates for the latter, and the kernel_def that binds and checks a
 * run of either exactly as for built-in kernels.
 *
 * Raw signature:        "x:in f32[], out:out f32[], a:f32, n:i64"
 * Elementwise params:   in "float32 x, float32 y, float32 a", out "float32 z",
 *                       body "z = exp(a * sin(x) + cos(y))"
 * dtypes: f32 f64 i32 i64, or float32 float64 int32 int64.
 *
 * In place: an output followed by inplace(x) (or inplace(x|y)), as in
 * "y:out f32[] inplace(x)" or "float32 z inplace(x)", may be given the very
 * buffer given to input x (of its dtype); without it, and for any partial
 * overlap, gpud refuses a run whose output overlaps another argument
 * (kernels/core/alias.c). Whether the kernel is right in place (it reads
 * element i before it writes it) is the author's word.
 *
 * Elementwise inputs are arrays or scalars at run time (a scalar broadcasts);
 * every array argument must have the same number of elements; outputs get
 * the shape of the first array input. Raw kernels take their arguments in
 * the declared order (arrays as device pointers, scalars by value); their
 * outputs must be passed as buffers (gpud cannot know their shapes).
 *
 * Reduction kernels (CuPy's ReductionKernel): elementwise-style inputs and
 * one output, map_expr (of the inputs), reduce_expr (of a and b, the two
 * partial values), identity, post_map_expr (of a, setting the output) and
 * the reduce type. A run reduces the whole of its arrays to a 0-d output, or
 * with _axis -1 (or 1) the last axis of 2-d arrays to one value per row.
 * The generated CUDA C gives each output value one block: a strided map
 * over its elements, then a tree over the block in shared memory (no
 * atomics, one launch; a whole-array reduction runs on one SM).
 */
#ifndef GPUD_KERNELS_CUSTOM_H
#define GPUD_KERNELS_CUSTOM_H

#include <stddef.h>

#include "kernels/core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CUSTOM_NAME_MAX 64

typedef enum custom_kind {
	CUSTOM_RAW = 0,
	CUSTOM_ELEMENTWISE = 1,
	CUSTOM_REDUCTION = 2
} custom_kind;

/* A reduction's expressions (CUDA C), as CuPy's ReductionKernel takes them. */
typedef struct custom_reduction {
	const char *map_expr;      /* of the inputs: "x * x" */
	const char *reduce_expr;   /* of a and b: "a + b" */
	const char *post_map_expr; /* of a, setting the output: "y = sqrt(a)" */
	const char *identity;      /* "0" */
	const char *reduce_type;   /* a dtype (float32 ...) or NULL/"": the output's */
} custom_reduction;

typedef struct custom_param {
	char name[CUSTOM_NAME_MAX];
	kparam_role role; /* raw: in/out arrays or scalars; elementwise: in or out */
	gpud_dtype dtype;
	/* an output: the inputs it may be written in place of, "x|y" as declared
	 * (inplace(x|y)), and their KPARAM_BITs (set by custom_build) */
	char inplace[128];
	unsigned inplace_of;
} custom_param;

typedef struct custom_kernel {
	char name[CUSTOM_NAME_MAX];
	custom_kind kind;
	custom_param params[KERNEL_MAX_PARAMS];
	int nparams;
	char *source; /* CUDA C to compile: the user's, or generated */
	char entry[CUSTOM_NAME_MAX];
	unsigned block;         /* threads per block */
	unsigned blocks_per_sm; /* grid-stride launch: SMs x this; 0: grid and block per run */
	int fast_math;
	unsigned max_registers; /* 0: the compiler's choice */
	/* CUSTOM_REDUCTION: its expressions, read by custom_build only */
	const custom_reduction *red;
	/* what runs bind against (params point into the fields above) */
	kernel_def def;
	kernel_param kparams[KERNEL_MAX_PARAMS];
	char doc[256];
	/* the backend's compiled code (cuda: a cudaLibrary_t and cudaKernel_t;
	 * the cubin as a sealed memfd for tenant workers, code_len 0: none) */
	void *lib, *fn;
	int code_fd;
	size_t code_len;
	unsigned code_id;
	double compile_ms;
	int cached; /* loaded from the compile cache, not compiled */
	int registers;
	int arch; /* cuda: the architecture it was compiled for (90: sm_90) */
} custom_kernel;

/* "f32" / "float32" ... -> dtype; 0 if not a dtype. */
gpud_dtype custom_dtype_parse(const char *s, size_t len);
/* "float"/"double"/"int"/"long long" for generated code. */
const char *custom_ctype(gpud_dtype dt);

/* A raw kernel's signature into params. 0, or -1 with err naming the item. */
int custom_parse_signature(const char *sig, custom_param *out, int max, int *n, char *err,
			   size_t errlen);
/* Elementwise "float32 x, float32 y" (role KPARAM_IN or KPARAM_OUT) appended to out. */
int custom_parse_ew_params(const char *text, kparam_role role, custom_param *out, int max, int *n,
			   char *err, size_t errlen);

/*
 * Builds a custom kernel: checks the name (an identifier), the parameters
 * (unique names, at least one output array, at most KERNEL_MAX_PARAMS - 2),
 * the source (raw: non-empty and naming the entry; elementwise: a body,
 * from which the CUDA C is generated) and sets up k->def. 0, or -1 with err.
 * source: raw CUDA C, or the elementwise body. k must be zeroed first;
 * custom_free releases what it allocated.
 */
int custom_build(custom_kernel *k, const char *name, custom_kind kind, const char *source,
		 const char *entry, char *err, size_t errlen);
void custom_free(custom_kernel *k);

/* The generated CUDA C of an elementwise kernel (malloc'd), NULL if out of memory. */
char *custom_ew_source(const custom_kernel *k, const char *body);
/* The generated CUDA C of a reduction kernel (malloc'd), NULL if out of memory;
 * rt: the reduce type's C name. */
char *custom_red_source(const custom_kernel *k, const custom_reduction *r, const char *rt);

#ifdef __cplusplus
}
#endif
#endif
