/*
 * daemon/backend/cuda/nvrtc.h — NVRTC, loaded at run time (dlopen): gpud starts and
 * serves built-in kernels on machines without it, and says so when a
 * custom kernel is registered there.
 */
#ifndef GPUD_NVRTC_H
#define GPUD_NVRTC_H

#include <stddef.h>

/*
 * Compiles source for sm_<arch> with opts into a cubin (malloc'd, *len
 * bytes). 0, or -1 with err set: NVRTC's log verbatim when the source does
 * not compile, or why NVRTC could not be used. Thread-safe.
 */
int nvrtc_compile(const char *name, const char *source, int arch, const char *const *opts,
		  int nopts, void **cubin, size_t *len, char *err, size_t errlen);
/* "13.0", or why NVRTC cannot be loaded (in err) and NULL. */
const char *nvrtc_version(char *err, size_t errlen);

#endif
