/*
 * client/types.c — the functions of gpud/types.h: dtype sizes and names, the
 * bytes of a shape, a shape written as Python writes it. Exported by
 * libgpud-client; gpud and the fuzzer, made of gpud's objects without the
 * library, link this file's object (TYPES_OBJ). No state: any thread may
 * call them.
 */
#include <stdio.h>

#include <gpud/types.h>

size_t gpud_dtype_size(gpud_dtype t)
{
	switch (t) {
	case GPUD_F32:
	case GPUD_I32:
		return 4;
	case GPUD_F64:
	case GPUD_I64:
	case GPUD_C64:
		return 8;
	case GPUD_C128:
		return 16;
	default:
		return 0;
	}
}

const char *gpud_dtype_name(gpud_dtype t)
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
	case GPUD_C64:
		return "complex64";
	case GPUD_C128:
		return "complex128";
	default:
		return "invalid";
	}
}

size_t gpud_shape_bytes(const uint64_t *shape, int ndim, size_t elem_size)
{
	size_t n = elem_size;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] != 0 && n > SIZE_MAX / shape[i])
			return SIZE_MAX;
		n *= (size_t)shape[i];
	}
	return n;
}

void gpud_shape_format(char *buf, size_t len, const uint64_t *shape, int ndim)
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
