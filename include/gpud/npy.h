/*
 * gpud/npy.h — reading and writing NumPy .npy files (format versions 1.0,
 * 2.0 and 3.0), part of libgpud-client.
 *
 * Supported: float32, float64, int32, int64, complex64, complex128, C order,
 * 0 to GPUD_MAX_DIMS dimensions. Little-endian data is loaded as is;
 * big-endian data is byte-swapped to native (little-endian) order on load
 * (each half of a complex number on its own). Fortran order, other dtypes
 * (object, bool, float16, complex256, ...), malformed headers and truncated data are
 * refused with a message naming the file and what was wrong.
 *
 * Thread-safety: the functions keep no state; any thread may call them.
 */
#ifndef GPUD_NPY_H
#define GPUD_NPY_H

#include <stddef.h>
#include <stdint.h>

#include <gpud/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpud_array {
	gpud_dtype dtype;
	int ndim;
	uint64_t shape[GPUD_MAX_DIMS];
	void *data;    /* malloc'd by the loader; release with gpud_array_free */
	size_t nbytes; /* dtype size x product(shape) */
} gpud_array;

/*
 * Loads path into *out. Returns 0, or -1 with a NUL-terminated message in err
 * (errlen bytes, always terminated), e.g.
 *   "x.npy: truncated: header declares 4096 bytes of data, file has 100"
 */
GPUD_API int gpud_npy_load(const char *path, gpud_array *out, char *err, size_t errlen);

/*
 * Like gpud_npy_load, but the data goes into memory the caller provides:
 * once the header is read, alloc(ctx, meta) is called with the array's
 * dtype, shape and nbytes (meta->data NULL) and returns where the data is to
 * go (at least meta->nbytes writable bytes), or NULL to fail. On success
 * out->data is that pointer; the caller owns it (gpud_array_free must not be
 * used). libgpud-client uses this to read a file straight into a request.
 */
typedef void *(*gpud_npy_alloc_fn)(void *ctx, const gpud_array *meta);
GPUD_API int gpud_npy_load_into(const char *path, gpud_npy_alloc_fn alloc, void *ctx,
				gpud_array *out, char *err, size_t errlen);

/*
 * The same from an open file descriptor: a pipe (stdin), a socket or a file
 * at its current offset. Reads sequentially, never seeks and never reads past
 * the array's data, so fd stays positioned right after it; fd is left open.
 * alloc NULL: the data is malloc'd (release with gpud_array_free). name is
 * used in messages only (NULL: "(fd N)").
 */
GPUD_API int gpud_npy_load_fd(int fd, const char *name, gpud_npy_alloc_fn alloc, void *ctx,
			      gpud_array *out, char *err, size_t errlen);

/* The same from a buffer in memory; name is used in messages only. */
GPUD_API int gpud_npy_parse(const void *buf, size_t len, const char *name, gpud_array *out,
			    char *err, size_t errlen);

/*
 * The header of the regular .npy file path, for a caller that moves the data
 * itself (gpud_host_read copies it in the kernel): *meta its dtype, shape and
 * nbytes (meta->data NULL), *fd the file open for reading and *offset where
 * its data starts; the file is checked to hold all of the data. 0: the data
 * is little-endian, as gpud takes it; 1: it is big-endian and needs a byte
 * swap (gpud_npy_load_into does it); either way the caller closes *fd. -1
 * with the message (nothing left open), also for what is not a regular file.
 */
GPUD_API int gpud_npy_open(const char *path, gpud_array *meta, int *fd, uint64_t *offset, char *err,
			   size_t errlen);

/* Writes an array (format 1.0, or 2.0 if the header needs it). 0 or -1 + err. */
GPUD_API int gpud_npy_save(const char *path, const gpud_array *a, char *err, size_t errlen);

/*
 * The same onto an open file descriptor (stdout, a pipe, a socket): header,
 * then data, written in full; fd is left open. name is used in messages only
 * (NULL: "(fd N)"). A failed write may leave part of the array written.
 */
GPUD_API int gpud_npy_save_fd(int fd, const char *name, const gpud_array *a, char *err,
			      size_t errlen);

/* No .npy preamble and header that gpud_npy_header writes is longer. */
#define GPUD_NPY_HEADER_MAX 512

/*
 * The preamble and header gpud_npy_save writes for an array of a's dtype and
 * shape (a->nbytes must match them; a->data is not read), into buf: returns
 * its length (a multiple of 64, at most GPUD_NPY_HEADER_MAX), or 0 with the
 * reason in err. The array's a->nbytes bytes of data, in C order, follow it:
 * a writer may send them in pieces as they arrive.
 */
GPUD_API size_t gpud_npy_header(const gpud_array *a, void *buf, size_t cap, char *err,
				size_t errlen);

/* Frees a->data and clears the struct; safe on a zeroed struct. */
GPUD_API void gpud_array_free(gpud_array *a);

/* Element count of a->shape (1 for 0-d). */
GPUD_API size_t gpud_array_count(const gpud_array *a);

#ifdef __cplusplus
}
#endif
#endif /* GPUD_NPY_H */
