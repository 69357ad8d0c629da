/*
 * gpud/types.h — element types and limits shared by libgpud-client and gpud.
 *
 * The numeric values of gpud_dtype match the DType enum of proto/gpud.proto,
 * so they cross the wire unchanged. The functions are defined in
 * client/types.c, exported by libgpud-client and linked into gpud too.
 *
 * The public headers include only <stddef.h> and <stdint.h> and hold
 * declarations only (no inline functions, no stdio.h), so that FFI parsers
 * such as cffi's read them after the C preprocessor (make test-headers).
 */
#ifndef GPUD_TYPES_H
#define GPUD_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Marks the symbols libgpud-client exports. Its objects build with hidden
 * visibility and GPUD_BUILDING_LIB, for the .so and the .a alike (the
 * Makefile makes the archive's hidden symbols local).
 */
#if defined(GPUD_BUILDING_LIB)
#define GPUD_API __attribute__((visibility("default")))
#else
#define GPUD_API
#endif

#define GPUD_MAX_DIMS 8  /* highest array rank gpud handles */
#define GPUD_NAME_MAX 64 /* longest kernel or argument name, with NUL */

typedef enum gpud_dtype {
	GPUD_DTYPE_INVALID = 0,
	GPUD_F32 = 1,
	GPUD_F64 = 2,
	GPUD_I32 = 3,
	GPUD_I64 = 4,
	GPUD_C64 = 5,  /* complex64: two float32, real then imaginary (numpy's layout) */
	GPUD_C128 = 6, /* complex128: two float64 */
} gpud_dtype;

/* A buffer handle: an opaque, unguessable 64-bit name given by the daemon. */
typedef uint64_t gpud_handle;

/* Bytes of one element: 4, 8 or 16; 0 for an invalid dtype. */
GPUD_API size_t gpud_dtype_size(gpud_dtype t);

/* numpy's names: "float32", "float64", "int32", "int64", "complex64", "complex128";
 * "invalid" otherwise. */
GPUD_API const char *gpud_dtype_name(gpud_dtype t);

/*
 * Bytes of an array of that shape with elements of elem_size bytes (pass 1
 * for the element count), or SIZE_MAX when the product overflows size_t. A
 * 0-d shape (ndim 0) has one element.
 */
GPUD_API size_t gpud_shape_bytes(const uint64_t *shape, int ndim, size_t elem_size);

/*
 * Writes "(2, 3)", "(5,)" or "()", as Python writes a shape, into buf:
 * NUL-terminated, truncated to len bytes (nothing is written when len is 0).
 */
GPUD_API void gpud_shape_format(char *buf, size_t len, const uint64_t *shape, int ndim);

#ifdef __cplusplus
}
#endif
#endif /* GPUD_TYPES_H */
