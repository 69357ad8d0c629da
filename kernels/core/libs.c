/*
 * kernels/core/libs.c — CBLAS, cuRAND, cuBLAS, cuFFT and FFTW3 through dlopen
 * (see kernels/core/libs.h), and the per-stream cache of cuFFT plans.
 * Loading is once per process (pthread_once); a plan cache is its owner's
 * (the thread enqueueing on its stream).
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/libs.h"

typedef struct lib_spec {
	const char *what;      /* "cuBLAS" */
	const char *env;       /* "GPUD_CUBLAS" */
	const char *hint;      /* what to install */
	const char *names[10]; /* sonames and paths, in order; NULL ends */
} lib_spec;

typedef struct sym_spec {
	void **slot;
	const char *name;
} sym_spec;

#define CUDA_DIRS(lib)                                                                             \
	"/usr/local/cuda/lib64/" lib, "/usr/local/cuda-13.0/lib64/" lib,                           \
		"/usr/local/cuda-13/lib64/" lib, "/usr/local/cuda/targets/x86_64-linux/lib/" lib

/* The file a library was loaded from. */
static const char *file_of(void *h)
{
	struct link_map *lm = NULL;
	return dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name[0] ? lm->l_name : "?";
}

/*
 * Opens the library of s: $env alone when set, else each name in turn, and
 * resolves syms (all required). The handle, or NULL with why.
 */
static void *open_lib(const lib_spec *s, const sym_spec *syms, char *why, size_t whylen)
{
	const char *env = getenv(s->env);
	void *h = NULL;
	char first[512] = "";

	if (env && env[0]) {
		if ((h = dlopen(env, RTLD_NOW | RTLD_LOCAL)) == NULL) {
			snprintf(why, whylen, "%s could not be loaded from $%s (%s): %s", s->what,
				 s->env, env, dlerror());
			return NULL;
		}
	} else {
		for (int i = 0; s->names[i] && !h; i++) {
			h = dlopen(s->names[i], RTLD_NOW | RTLD_LOCAL);
			if (h == NULL && !first[0])
				snprintf(first, sizeof(first), "%s", dlerror());
		}
		if (h == NULL) {
			snprintf(why, whylen,
				 "%s (%s) could not be loaded: %s; %s, or set %s to its path",
				 s->what, s->names[0], first, s->hint, s->env);
			return NULL;
		}
	}
	for (const sym_spec *y = syms; y->slot; y++) {
		if ((*y->slot = dlsym(h, y->name)) == NULL) {
			snprintf(why, whylen, "%s (%s) lacks %s", s->what, file_of(h), y->name);
			for (const sym_spec *z = syms; z->slot; z++)
				*z->slot = NULL;
			dlclose(h);
			return NULL;
		}
	}
	return h;
}

/* --- CBLAS ------------------------------------------------------------------------------ */

static struct {
	libs_cblas api;
	char why[768];
	int ok;
} cblas;
static pthread_once_t cblas_once = PTHREAD_ONCE_INIT;

static void cblas_load(void)
{
	static const lib_spec spec = {"the CPU BLAS (a CBLAS such as OpenBLAS)",
				      "GPUD_BLAS",
				      "install Debian's libopenblas0-pthread",
				      {"libopenblas.so.0", "libcblas.so.3", "libblas.so.3", NULL}};
	const sym_spec syms[] = {{(void **)&cblas.api.sgemm, "cblas_sgemm"},
				 {(void **)&cblas.api.dgemm, "cblas_dgemm"},
				 {NULL, NULL}};
	void *h = open_lib(&spec, syms, cblas.why, sizeof(cblas.why));
	if (h == NULL)
		return;
	char *(*config)(void) = (char *(*)(void))dlsym(h, "openblas_get_config");
	const char *conf = config ? config() : NULL;
	if (conf && strstr(conf, "USE64BITINT")) {
		snprintf(cblas.why, sizeof(cblas.why),
			 "the CPU BLAS (%s) uses 64-bit integers (%s); gpud needs an LP64 CBLAS "
			 "such as Debian's libopenblas0-pthread (set GPUD_BLAS)",
			 file_of(h), conf);
		dlclose(h);
		return;
	}
	snprintf(cblas.api.describe, sizeof(cblas.api.describe), "%s%s%s%s", file_of(h),
		 conf ? " (" : "", conf ? conf : "", conf ? ")" : "");
	cblas.ok = 1;
}

const libs_cblas *libs_get_cblas(char *err, size_t errlen)
{
	pthread_once(&cblas_once, cblas_load);
	if (!cblas.ok) {
		if (err)
			snprintf(err, errlen, "%s", cblas.why);
		return NULL;
	}
	return &cblas.api;
}

/* --- cuRAND ------------------------------------------------------------------------------ */

static struct {
	libs_curand api;
	char why[768];
	int ok;
} curand;
static pthread_once_t curand_once = PTHREAD_ONCE_INIT;

static void curand_load(void)
{
	static const lib_spec spec = {"cuRAND",
				      "GPUD_CURAND",
				      "install the CUDA Toolkit's cuRAND",
				      {"libcurand.so.10", CUDA_DIRS("libcurand.so.10"), NULL}};
	int (*version)(int *) = NULL;
	const sym_spec syms[] = {{(void **)&curand.api.create, "curandCreateGenerator"},
				 {(void **)&curand.api.create_host, "curandCreateGeneratorHost"},
				 {(void **)&curand.api.destroy, "curandDestroyGenerator"},
				 {(void **)&curand.api.set_stream, "curandSetStream"},
				 {(void **)&curand.api.set_seed,
				  "curandSetPseudoRandomGeneratorSeed"},
				 {(void **)&curand.api.set_offset, "curandSetGeneratorOffset"},
				 {(void **)&curand.api.set_ordering, "curandSetGeneratorOrdering"},
				 {(void **)&curand.api.uniform, "curandGenerateUniform"},
				 {(void **)&curand.api.uniform_double,
				  "curandGenerateUniformDouble"},
				 {(void **)&curand.api.normal, "curandGenerateNormal"},
				 {(void **)&curand.api.normal_double, "curandGenerateNormalDouble"},
				 {(void **)&version, "curandGetVersion"},
				 {NULL, NULL}};
	void *h = open_lib(&spec, syms, curand.why, sizeof(curand.why));
	if (h == NULL)
		return;
	version(&curand.api.version);
	snprintf(curand.api.describe, sizeof(curand.api.describe), "cuRAND %d.%d.%d (%s)",
		 curand.api.version / 1000, curand.api.version % 1000 / 100,
		 curand.api.version % 100, file_of(h));
	curand.ok = 1;
}

const libs_curand *libs_get_curand(char *err, size_t errlen)
{
	pthread_once(&curand_once, curand_load);
	if (!curand.ok) {
		if (err)
			snprintf(err, errlen, "%s", curand.why);
		return NULL;
	}
	return &curand.api;
}

const char *libs_curand_status(int status)
{
	switch (status) {
	case 0:
		return "CURAND_STATUS_SUCCESS";
	case 100:
		return "CURAND_STATUS_VERSION_MISMATCH";
	case 101:
		return "CURAND_STATUS_NOT_INITIALIZED";
	case 102:
		return "CURAND_STATUS_ALLOCATION_FAILED";
	case 103:
		return "CURAND_STATUS_TYPE_ERROR";
	case 104:
		return "CURAND_STATUS_OUT_OF_RANGE";
	case 105:
		return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
	case 106:
		return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
	case 201:
		return "CURAND_STATUS_LAUNCH_FAILURE";
	case 202:
		return "CURAND_STATUS_PREEXISTING_FAILURE";
	case 203:
		return "CURAND_STATUS_INITIALIZATION_FAILED";
	case 204:
		return "CURAND_STATUS_ARCH_MISMATCH";
	case 999:
		return "CURAND_STATUS_INTERNAL_ERROR";
	default:
		return "CURAND_STATUS_?";
	}
}

/* --- cuBLAS ------------------------------------------------------------------------------ */

static struct {
	libs_cublas api;
	char why[768];
	int ok;
} cublas;
static pthread_once_t cublas_once = PTHREAD_ONCE_INIT;

static void cublas_load(void)
{
	static const lib_spec spec = {"cuBLAS",
				      "GPUD_CUBLAS",
				      "install the CUDA Toolkit's cuBLAS",
				      {"libcublas.so.13", CUDA_DIRS("libcublas.so.13"),
				       "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.12",
				       NULL}};
	int (*property)(int, int *) = NULL;
	const sym_spec syms[] = {{(void **)&cublas.api.create, "cublasCreate_v2"},
				 {(void **)&cublas.api.destroy, "cublasDestroy_v2"},
				 {(void **)&cublas.api.set_stream, "cublasSetStream_v2"},
				 {(void **)&cublas.api.set_workspace, "cublasSetWorkspace_v2"},
				 {(void **)&cublas.api.set_math_mode, "cublasSetMathMode"},
				 {(void **)&cublas.api.gemm_ex, "cublasGemmEx"},
				 {(void **)&cublas.api.status_string, "cublasGetStatusString"},
				 {(void **)&property, "cublasGetProperty"},
				 {NULL, NULL}};
	void *h = open_lib(&spec, syms, cublas.why, sizeof(cublas.why));
	if (h == NULL)
		return;
	int v[3] = {0, 0, 0}; /* MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL */
	for (int i = 0; i < 3; i++)
		property(i, &v[i]);
	cublas.api.version = v[0] * 10000 + v[1] * 100 + v[2];
	snprintf(cublas.api.describe, sizeof(cublas.api.describe), "cuBLAS %d.%d.%d (%s)", v[0],
		 v[1], v[2], file_of(h));
	cublas.ok = 1;
}

const libs_cublas *libs_get_cublas(char *err, size_t errlen)
{
	pthread_once(&cublas_once, cublas_load);
	if (!cublas.ok) {
		if (err)
			snprintf(err, errlen, "%s", cublas.why);
		return NULL;
	}
	return &cublas.api;
}

/* --- cuFFT -------------------------------------------------------------------------------- */

static struct {
	libs_cufft api;
	char why[768];
	int ok;
} cufft;
static pthread_once_t cufft_once = PTHREAD_ONCE_INIT;

static void cufft_load(void)
{
	static const lib_spec spec = {"cuFFT",
				      "GPUD_CUFFT",
				      "install the CUDA Toolkit's cuFFT",
				      {"libcufft.so.12", CUDA_DIRS("libcufft.so.12"),
				       "libcufft.so.11", "/usr/local/cuda/lib64/libcufft.so.11",
				       "libcufft.so.13", "/usr/local/cuda/lib64/libcufft.so.13",
				       NULL}};
	int (*version)(int *) = NULL;
	const sym_spec syms[] = {{(void **)&cufft.api.create, "cufftCreate"},
				 {(void **)&cufft.api.destroy, "cufftDestroy"},
				 {(void **)&cufft.api.set_auto_allocation,
				  "cufftSetAutoAllocation"},
				 {(void **)&cufft.api.make_plan_many, "cufftMakePlanMany"},
				 {(void **)&cufft.api.set_work_area, "cufftSetWorkArea"},
				 {(void **)&cufft.api.set_stream, "cufftSetStream"},
				 {(void **)&cufft.api.exec_c2c, "cufftExecC2C"},
				 {(void **)&cufft.api.exec_z2z, "cufftExecZ2Z"},
				 {(void **)&version, "cufftGetVersion"},
				 {NULL, NULL}};
	void *h = open_lib(&spec, syms, cufft.why, sizeof(cufft.why));
	if (h == NULL)
		return;
	version(&cufft.api.version);
	snprintf(cufft.api.describe, sizeof(cufft.api.describe), "cuFFT %d.%d.%d (%s)",
		 cufft.api.version / 1000, cufft.api.version % 1000 / 100, cufft.api.version % 100,
		 file_of(h));
	cufft.ok = 1;
}

const libs_cufft *libs_get_cufft(char *err, size_t errlen)
{
	pthread_once(&cufft_once, cufft_load);
	if (!cufft.ok) {
		if (err)
			snprintf(err, errlen, "%s", cufft.why);
		return NULL;
	}
	return &cufft.api;
}

const char *libs_cufft_status(int status)
{
	static const char *const names[] = {
		"CUFFT_SUCCESS",
		"CUFFT_INVALID_PLAN",
		"CUFFT_ALLOC_FAILED",
		"CUFFT_INVALID_TYPE",
		"CUFFT_INVALID_VALUE",
		"CUFFT_INTERNAL_ERROR",
		"CUFFT_EXEC_FAILED",
		"CUFFT_SETUP_FAILED",
		"CUFFT_INVALID_SIZE",
		"CUFFT_UNALIGNED_DATA",
		"CUFFT_INCOMPLETE_PARAMETER_LIST",
		"CUFFT_INVALID_DEVICE",
		"CUFFT_PARSE_ERROR",
		"CUFFT_NO_WORKSPACE",
		"CUFFT_NOT_IMPLEMENTED",
		"CUFFT_LICENSE_ERROR",
		"CUFFT_NOT_SUPPORTED",
	};
	return status >= 0 && status < (int)(sizeof(names) / sizeof(names[0])) ? names[status]
									       : "CUFFT_?";
}

typedef struct fft_entry {
	int type, n, batch;
	libs_cufft_handle plan;
	size_t work;
	unsigned long long used; /* the cache's clock at its last use */
} fft_entry;

struct libs_fft_cache {
	void *stream;
	fft_entry e[LIBS_FFT_PLANS];
	int count;
	unsigned long long clock;
};

libs_fft_cache *libs_fft_cache_new(void *stream)
{
	libs_fft_cache *c = calloc(1, sizeof(*c));
	if (c)
		c->stream = stream;
	return c;
}

void libs_fft_cache_free(libs_fft_cache *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->count && cufft.ok; i++)
		cufft.api.destroy(c->e[i].plan);
	free(c);
}

int libs_fft_cache_plan(libs_fft_cache *c, int type, int n, int batch, libs_cufft_handle *plan,
			size_t *work, char *err, size_t errlen)
{
	const libs_cufft *f = libs_get_cufft(err, errlen);
	if (f == NULL)
		return -1;
	c->clock++;
	for (int i = 0; i < c->count; i++) {
		fft_entry *e = &c->e[i];
		if (e->type == type && e->n == n && e->batch == batch) {
			e->used = c->clock;
			*plan = e->plan;
			*work = e->work;
			return 0;
		}
	}
	int slot = c->count;
	if (slot == LIBS_FFT_PLANS) { /* the least recently used goes */
		slot = 0;
		for (int i = 1; i < c->count; i++)
			if (c->e[i].used < c->e[slot].used)
				slot = i;
		f->destroy(c->e[slot].plan);
		c->e[slot] = c->e[--c->count];
		slot = c->count;
	}
	libs_cufft_handle h;
	const char *call = "cufftCreate";
	int st = f->create(&h);
	size_t ws = 0;
	if (st == 0) {
		if ((st = f->set_auto_allocation(h, 0)) != 0)
			call = "cufftSetAutoAllocation";
		else if ((st = f->make_plan_many(h, 1, &n, NULL, 1, n, NULL, 1, n, type, batch,
						 &ws)) != 0)
			call = "cufftMakePlanMany";
		else if ((st = f->set_stream(h, c->stream)) != 0)
			call = "cufftSetStream";
		if (st != 0)
			f->destroy(h);
	}
	if (st != 0) {
		snprintf(err, errlen, "%s: %s (%d x %d points, %s): %s", f->describe, call, batch,
			 n, type == LIBS_CUFFT_Z2Z ? "Z2Z" : "C2C", libs_cufft_status(st));
		return -1;
	}
	c->e[slot] = (fft_entry){
		.type = type, .n = n, .batch = batch, .plan = h, .work = ws, .used = c->clock};
	c->count++;
	*plan = h;
	*work = ws;
	return 0;
}

/* --- FFTW3 --------------------------------------------------------------------------------- */

static struct {
	libs_fftw api;
	libs_fftw_plan (*plan_many_dft)(int, const int *, int, void *, const int *, int, int,
					void *, const int *, int, int, int, unsigned);
	void (*destroy_plan)(libs_fftw_plan);
	char why[768];
	int ok;
} fftw;
static pthread_once_t fftw_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t fftw_planner = PTHREAD_MUTEX_INITIALIZER;

static libs_fftw_plan fftw_plan_locked(int rank, const int *n, int howmany, void *in,
				       const int *inembed, int istride, int idist, void *out,
				       const int *onembed, int ostride, int odist, int sign,
				       unsigned flags)
{
	pthread_mutex_lock(&fftw_planner);
	libs_fftw_plan p = fftw.plan_many_dft(rank, n, howmany, in, inembed, istride, idist, out,
					      onembed, ostride, odist, sign, flags);
	pthread_mutex_unlock(&fftw_planner);
	return p;
}

static void fftw_destroy_locked(libs_fftw_plan p)
{
	pthread_mutex_lock(&fftw_planner);
	fftw.destroy_plan(p);
	pthread_mutex_unlock(&fftw_planner);
}

static void fftw_load(void)
{
	static const lib_spec spec = {"FFTW3 (double precision)",
				      "GPUD_FFTW",
				      "install Debian's libfftw3-double3",
				      {"libfftw3.so.3", NULL}};
	const char *version = NULL; /* fftw_version: a char array */
	const sym_spec syms[] = {{(void **)&fftw.plan_many_dft, "fftw_plan_many_dft"},
				 {(void **)&fftw.api.execute_dft, "fftw_execute_dft"},
				 {(void **)&fftw.destroy_plan, "fftw_destroy_plan"},
				 {(void **)&fftw.api.malloc, "fftw_malloc"},
				 {(void **)&fftw.api.free, "fftw_free"},
				 {(void **)&version, "fftw_version"},
				 {NULL, NULL}};
	void *h = open_lib(&spec, syms, fftw.why, sizeof(fftw.why));
	if (h == NULL)
		return;
	fftw.api.plan_many_dft = fftw_plan_locked;
	fftw.api.destroy_plan = fftw_destroy_locked;
	snprintf(fftw.api.describe, sizeof(fftw.api.describe), "%s (%s)", version, file_of(h));
	fftw.ok = 1;
}

const libs_fftw *libs_get_fftw(char *err, size_t errlen)
{
	pthread_once(&fftw_once, fftw_load);
	if (!fftw.ok) {
		if (err)
			snprintf(err, errlen, "%s", fftw.why);
		return NULL;
	}
	return &fftw.api;
}
