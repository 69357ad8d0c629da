/*
 * gpud/version.h — the version of gpud and libgpud-client, and the library's
 * ABI version (its soname) with the rules that change it.
 *
 * The numbers below are the one place the version is written: the Makefile
 * reads them for gpud --version, the hello message, gpud-client.pc and the
 * shared library's file names. Compare at compile time with
 * GPUD_VERSION_NUMBER, at run time with gpud_version_number().
 *
 * ABI policy. The shared library's soname is libgpud-client.so.N, N being
 * GPUD_ABI_VERSION (0 today); the file is libgpud-client.so.MAJOR.MINOR.PATCH.
 * A program built against ABI N runs with any later library of the same N.
 * N goes up, with MINOR at least, when a release
 *   - removes or renames an exported function, or changes its parameters,
 *     its return type or what it does with them;
 *   - changes the size or layout of a public struct or union (gpud_arg,
 *     gpud_array, gpud_output, gpud_result, gpud_options, the *_info and
 *     status structs: callers allocate them), including by adding a member;
 *   - changes the value of an enumerator (gpud_status, gpud_dtype,
 *     gpud_arg_kind, gpud_param_role) or of a constant that sizes a public
 *     struct (GPUD_MAX_DIMS, GPUD_NAME_MAX, GPUD_MAX_DEVICES, ...).
 * It stays when a release adds functions, statuses or dtypes (callers must
 * take an unknown gpud_status as an error and name it with gpud_strerror),
 * or fixes behaviour to match what this API documents. PATCH releases never
 * change the ABI. Every function the headers declare is exported under its
 * own name (there are no inline-only helpers), so FFI layers (ctypes, cffi)
 * can bind the whole API from the shared library. gpud's wire protocol is
 * versioned apart from both (PROTOCOL_VERSION in proto/gpud.proto).
 */
#ifndef GPUD_VERSION_H
#define GPUD_VERSION_H

#include <gpud/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUD_VERSION_MAJOR 0
#define GPUD_VERSION_MINOR 1
#define GPUD_VERSION_PATCH 0
#define GPUD_ABI_VERSION 0

/* "0.1.0" */
#define GPUD_VERSION_STRINGIFY_(x) #x
#define GPUD_VERSION_STRINGIFY(x) GPUD_VERSION_STRINGIFY_(x)
#define GPUD_VERSION_STRING                                                                        \
	GPUD_VERSION_STRINGIFY(GPUD_VERSION_MAJOR)                                                 \
	"." GPUD_VERSION_STRINGIFY(GPUD_VERSION_MINOR) "." GPUD_VERSION_STRINGIFY(                 \
		GPUD_VERSION_PATCH)
/* MAJOR * 10000 + MINOR * 100 + PATCH: 100 for 0.1.0 */
#define GPUD_VERSION_NUMBER                                                                        \
	(GPUD_VERSION_MAJOR * 10000 + GPUD_VERSION_MINOR * 100 + GPUD_VERSION_PATCH)

/*
 * The version of the library the program runs with (GPUD_VERSION_STRING and
 * GPUD_VERSION_NUMBER are those of the headers it was built with).
 */
GPUD_API const char *gpud_version(void);
GPUD_API int gpud_version_number(void);

#ifdef __cplusplus
}
#endif
#endif /* GPUD_VERSION_H */
