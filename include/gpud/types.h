/*
 * gpud/types.h — element types and limits shared by libgpud-client and gpud.
 *
 * The numeric values of gpud_dtype match the DType enum of proto/gpud.proto,
 * so they cross the wire unchanged.
 */
#ifndef GPUD_TYPES_H
#define GPUD_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
} gpud_dtype;

/* A buffer handle: an opaque, unguessable 64-bit name given by the daemon. */
typedef uint64_t gpud_handle;

static inline size_t gpud_dtype_size(gpud_dtype t)
{
	switch (t) {
	case GPUD_F32:
	case GPUD_I32:
		return 4;
	case GPUD_F64:
	case GPUD_I64:
		return 8;
	default:
		return 0;
	}
}

/* numpy's names: "float32", "float64", "int32", "int64". */
static inline const char *gpud_dtype_name(gpud_dtype t)
{
	switch (t) {
	case GPUD_F32:
		return "float32";
	case GPUD_F64:
		return "float64";
	case GPUD_I32:
		return "int32";
	case GPUD_I64:
		return "int64";
	default:
		return "invalid";
	}
}

/*
 * Number of elements of a shape, or -1 (as SIZE_MAX) when the product, or the
 * product times elem_size, overflows size_t. A 0-d shape has one element.
 */
static inline size_t gpud_shape_bytes(const uint64_t *shape, int ndim, size_t elem_size)
{
	size_t n = elem_size;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] != 0 && n > SIZE_MAX / shape[i])
			return SIZE_MAX;
		n *= (size_t)shape[i];
	}
	return n;
}

/* "(2, 3)", "(5,)" or "()", as Python writes a shape; truncated to len. */
static inline void gpud_shape_format(char *buf, size_t len, const uint64_t *shape, int ndim)
{
	size_t off = 0;
	int n = snprintf(buf, len, "(");
	for (int i = 0; i < ndim && n >= 0; i++) {
		off += (size_t)n;
		if (off >= len)
			return;
		n = snprintf(buf + off, len - off, "%s%llu", i ? ", " : "",
			     (unsigned long long)shape[i]);
	}
	if (n < 0)
		return;
	off += (size_t)n;
	if (off < len)
		snprintf(buf + off, len - off, "%s", ndim == 1 ? ",)" : ")");
}

#ifdef __cplusplus
}
#endif
#endif /* GPUD_TYPES_H */
