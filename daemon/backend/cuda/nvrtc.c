/* daemon/backend/cuda/nvrtc.c — NVRTC through dlopen (see daemon/backend/cuda/nvrtc.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

#include "daemon/backend/cuda/nvrtc.h"

static struct {
	void *h;
	char version[16];
	char why[512];
	nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
			      const char *const *);
	nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*log_size)(nvrtcProgram, size_t *);
	nvrtcResult (*log)(nvrtcProgram, char *);
	nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
	nvrtcResult (*cubin)(nvrtcProgram, char *);
	nvrtcResult (*destroy)(nvrtcProgram *);
	nvrtcResult (*ver)(int *, int *);
	const char *(*strerr)(nvrtcResult);
} api;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	/* $GPUD_NVRTC, then the loader's path, then the toolkit's usual place. */
	const char *env = getenv("GPUD_NVRTC");
	const char *names[] = {env,
			       "libnvrtc.so.13",
			       "/usr/local/cuda/lib64/libnvrtc.so.13",
			       "libnvrtc.so.12",
			       "/usr/local/cuda/lib64/libnvrtc.so.12",
			       "libnvrtc.so"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !api.h; i++)
		if (names[i] && names[i][0])
			api.h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (api.h == NULL) {
		snprintf(
			api.why, sizeof(api.why),
			"NVRTC (libnvrtc.so.13) was not found; install the CUDA Toolkit's NVRTC or "
			"set GPUD_NVRTC to its path");
		return;
	}
#define SYM(f, name)                                                                               \
	do {                                                                                       \
		*(void **)&api.f = dlsym(api.h, name);                                             \
		if (api.f == NULL) {                                                               \
			snprintf(api.why, sizeof(api.why), "NVRTC lacks %s", name);                \
			dlclose(api.h);                                                            \
			api.h = NULL;                                                              \
			return;                                                                    \
		}                                                                                  \
	} while (0)
	SYM(create, "nvrtcCreateProgram");
	SYM(compile, "nvrtcCompileProgram");
	SYM(log_size, "nvrtcGetProgramLogSize");
	SYM(log, "nvrtcGetProgramLog");
	SYM(cubin_size, "nvrtcGetCUBINSize");
	SYM(cubin, "nvrtcGetCUBIN");
	SYM(destroy, "nvrtcDestroyProgram");
	SYM(ver, "nvrtcVersion");
	SYM(strerr, "nvrtcGetErrorString");
#undef SYM
	int ma = 0, mi = 0;
	api.ver(&ma, &mi);
	snprintf(api.version, sizeof(api.version), "%d.%d", ma, mi);
}

const char *nvrtc_version(char *err, size_t errlen)
{
	pthread_once(&once, load);
	if (api.h == NULL) {
		snprintf(err, errlen, "%s", api.why);
		return NULL;
	}
	return api.version;
}

int nvrtc_compile(const char *name, const char *source, int arch, const char *const *opts,
		  int nopts, void **cubin, size_t *len, char *err, size_t errlen)
{
	nvrtcProgram prog;
	nvrtcResult rv;
	char archopt[48];
	const char *all[32];
	int n = 0;

	if (nvrtc_version(err, errlen) == NULL)
		return -1;
	snprintf(archopt, sizeof(archopt), "--gpu-architecture=sm_%d", arch);
	all[n++] = archopt;
	all[n++] = "--std=c++17";
	for (int i = 0; i < nopts && n < 32; i++)
		all[n++] = opts[i];
	if ((rv = api.create(&prog, source, name, 0, NULL, NULL)) != NVRTC_SUCCESS) {
		snprintf(err, errlen, "nvrtcCreateProgram: %s", api.strerr(rv));
		return -1;
	}
	rv = api.compile(prog, n, all);
	if (rv != NVRTC_SUCCESS) {
		size_t ls = 0;
		api.log_size(prog, &ls);
		char *log = malloc(ls + 1);
		if (log && api.log(prog, log) == NVRTC_SUCCESS) {
			log[ls] = '\0';
			snprintf(err, errlen, "%s", log);
		} else {
			snprintf(err, errlen, "nvrtcCompileProgram: %s", api.strerr(rv));
		}
		free(log);
		api.destroy(&prog);
		return -1;
	}
	*cubin = NULL;
	if ((rv = api.cubin_size(prog, len)) != NVRTC_SUCCESS || (*cubin = malloc(*len)) == NULL ||
	    (rv = api.cubin(prog, *cubin)) != NVRTC_SUCCESS) {
		snprintf(err, errlen, "nvrtcGetCUBIN: %s",
			 rv != NVRTC_SUCCESS ? api.strerr(rv) : "out of memory");
		free(*cubin);
		*cubin = NULL;
		api.destroy(&prog);
		return -1;
	}
	api.destroy(&prog);
	return 0;
}
