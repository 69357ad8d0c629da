/*
 * kernels/core/libs.h — the numerical libraries some kernels call, loaded at run
 * time with dlopen (as daemon/backend/cuda/nvrtc.c loads NVRTC), so that gpud starts and
 * serves every other kernel where one is missing:
 *
 *   CBLAS   matmul on the cpu backend       $GPUD_BLAS    libopenblas.so.0
 *   cuRAND  uniform, normal (both backends) $GPUD_CURAND  libcurand.so.10
 *   cuBLAS  matmul on the cuda backend      $GPUD_CUBLAS  libcublas.so.13
 *   cuFFT   lombscargle method=nufft (cuda) $GPUD_CUFFT   libcufft.so.12 (.11, .13)
 *   FFTW3   lombscargle method=nufft (cpu)  $GPUD_FFTW    libfftw3.so.3
 *
 * Where the variable is set (non-empty), that path alone is tried; else the
 * soname through the dynamic loader's path, then the CUDA Toolkit's usual
 * directories (/usr/local/cuda/lib64, /usr/local/cuda-13.0/lib64, ...; for
 * cuBLAS also libcublas.so.12). Each library is loaded once per process, on
 * first use (thread-safe). One that cannot be loaded gives NULL and a
 * message naming the library, the variable and the loader's reason.
 *
 * The few types, constants and functions used are declared here, so that
 * builds without the CUDA Toolkit or cblas.h (the fuzz and sanitizer builds,
 * CUDA=0) still load cuRAND and a BLAS; the .cu files that include the
 * toolkit's headers check the constants against them at compile time. The
 * CBLAS must use 32-bit integers (LP64, as Debian's OpenBLAS does; not an
 * ILP64 "64_" build).
 */
#ifndef GPUD_KERNELS_LIBS_H
#define GPUD_KERNELS_LIBS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- CBLAS (cblas.h) ----------------------------------------------------------------- */
enum { LIBS_CBLAS_ROW_MAJOR = 101, LIBS_CBLAS_NO_TRANS = 111 };

typedef struct libs_cblas {
	void (*sgemm)(int order, int transa, int transb, int m, int n, int k, float alpha,
		      const float *a, int lda, const float *b, int ldb, float beta, float *c,
		      int ldc);
	void (*dgemm)(int order, int transa, int transb, int m, int n, int k, double alpha,
		      const double *a, int lda, const double *b, int ldb, double beta, double *c,
		      int ldc);
	char describe[160]; /* the file, and OpenBLAS's configuration where it says */
} libs_cblas;

/* --- cuRAND (curand.h), host API ---------------------------------------------------- */
typedef struct curandGenerator_st *libs_curand_gen; /* curandGenerator_t */
enum {
	LIBS_CURAND_SUCCESS = 0,
	LIBS_CURAND_LENGTH_NOT_MULTIPLE = 105,
	LIBS_CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161,
	LIBS_CURAND_ORDERING_PSEUDO_DEFAULT = 101,
};

typedef struct libs_curand {
	int (*create)(libs_curand_gen *g, int rng_type);      /* device generator */
	int (*create_host)(libs_curand_gen *g, int rng_type); /* host generator */
	int (*destroy)(libs_curand_gen g);
	int (*set_stream)(libs_curand_gen g, void *stream);
	int (*set_seed)(libs_curand_gen g, unsigned long long seed);
	int (*set_offset)(libs_curand_gen g, unsigned long long offset);
	int (*set_ordering)(libs_curand_gen g, int ordering);
	int (*uniform)(libs_curand_gen g, float *out, size_t n);
	int (*uniform_double)(libs_curand_gen g, double *out, size_t n);
	int (*normal)(libs_curand_gen g, float *out, size_t n, float mean, float stddev);
	int (*normal_double)(libs_curand_gen g, double *out, size_t n, double mean, double stddev);
	int version; /* 10400 */
	char describe[160];
} libs_curand;

/* "CURAND_STATUS_LENGTH_NOT_MULTIPLE" */
const char *libs_curand_status(int status);

/* --- cuBLAS (cublas_api.h) ------------------------------------------------------------ */
typedef struct cublasContext *libs_cublas_handle; /* cublasHandle_t */
enum {
	LIBS_CUBLAS_SUCCESS = 0,
	LIBS_CUBLAS_OP_N = 0,
	LIBS_CUDA_R_32F = 0,
	LIBS_CUDA_R_64F = 1,
	LIBS_CUBLAS_COMPUTE_32F = 68,
	LIBS_CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
	LIBS_CUBLAS_COMPUTE_64F = 70,
	LIBS_CUBLAS_GEMM_DEFAULT = -1,
	LIBS_CUBLAS_DEFAULT_MATH = 0,
};

typedef struct libs_cublas {
	int (*create)(libs_cublas_handle *h);
	int (*destroy)(libs_cublas_handle h);
	int (*set_stream)(libs_cublas_handle h, void *stream);
	int (*set_workspace)(libs_cublas_handle h, void *ws, size_t bytes);
	int (*set_math_mode)(libs_cublas_handle h, int mode);
	int (*gemm_ex)(libs_cublas_handle h, int transa, int transb, int m, int n, int k,
		       const void *alpha, const void *a, int atype, int lda, const void *b,
		       int btype, int ldb, const void *beta, void *c, int ctype, int ldc,
		       int compute_type, int algo);
	const char *(*status_string)(int status);
	int version; /* 130000 */
	char describe[160];
} libs_cublas;

/* --- cuFFT (cufft.h) ---------------------------------------------------------------------- */
typedef int libs_cufft_handle; /* cufftHandle */
enum {
	LIBS_CUFFT_SUCCESS = 0,
	LIBS_CUFFT_C2C = 0x29,
	LIBS_CUFFT_Z2Z = 0x69,
	LIBS_CUFFT_INVERSE = 1, /* e^{+2 pi i k l / n}, unnormalised */
};

typedef struct libs_cufft {
	int (*create)(libs_cufft_handle *plan);
	int (*destroy)(libs_cufft_handle plan);
	int (*set_auto_allocation)(libs_cufft_handle plan, int autoalloc);
	int (*make_plan_many)(libs_cufft_handle plan, int rank, int *n, int *inembed, int istride,
			      int idist, int *onembed, int ostride, int odist, int type, int batch,
			      size_t *work);
	int (*set_work_area)(libs_cufft_handle plan, void *work);
	int (*set_stream)(libs_cufft_handle plan, void *stream);
	int (*exec_c2c)(libs_cufft_handle plan, void *in, void *out, int direction);
	int (*exec_z2z)(libs_cufft_handle plan, void *in, void *out, int direction);
	int version; /* 12000 */
	char describe[160];
} libs_cufft;

/* "CUFFT_ALLOC_FAILED" */
const char *libs_cufft_status(int status);

/*
 * cuFFT plans of one stream, by size, at most LIBS_FFT_PLANS (the least
 * recently used goes). Plans have no work area of their own
 * (cufftSetAutoAllocation 0): the caller sets one of its scratch before each
 * execution. Owned by the thread that enqueues on the stream (the cuda
 * backend's loop; the opening thread during the self-test); not locked.
 * Making a plan can wait for the device (cuFFT allocates its twiddles), and
 * so can dropping one: both happen on a size's first run on the stream, or
 * when more than LIBS_FFT_PLANS sizes take turns.
 */
#define LIBS_FFT_PLANS 8
typedef struct libs_fft_cache libs_fft_cache;
libs_fft_cache *libs_fft_cache_new(void *stream);
void libs_fft_cache_free(libs_fft_cache *c);
/*
 * The plan for `batch` contiguous in-place transforms of n points of type
 * (LIBS_CUFFT_C2C or _Z2Z), bound to the cache's stream; its work area's
 * bytes in *work. 0, or -1 with why in err.
 */
int libs_fft_cache_plan(libs_fft_cache *c, int type, int n, int batch, libs_cufft_handle *plan,
			size_t *work, char *err, size_t errlen);

/* --- FFTW3 (fftw3.h), double precision ------------------------------------------------------ */
enum { LIBS_FFTW_BACKWARD = 1, LIBS_FFTW_ESTIMATE = 1u << 6 };
typedef struct fftw_plan_s *libs_fftw_plan;
typedef struct libs_fftw {
	/* plan_many_dft and destroy_plan through these wrappers take a lock
	 * (FFTW's planner is not thread-safe); execute_dft is (on new arrays
	 * aligned as the planned ones). */
	libs_fftw_plan (*plan_many_dft)(int rank, const int *n, int howmany, void *in,
					const int *inembed, int istride, int idist, void *out,
					const int *onembed, int ostride, int odist, int sign,
					unsigned flags);
	void (*execute_dft)(libs_fftw_plan p, void *in, void *out);
	void (*destroy_plan)(libs_fftw_plan p);
	void *(*malloc)(size_t bytes);
	void (*free)(void *p);
	char describe[160];
} libs_fftw;

/*
 * The library, loaded on first call; NULL with why in err (which may be
 * NULL) when it cannot be.
 */
const libs_cblas *libs_get_cblas(char *err, size_t errlen);
const libs_curand *libs_get_curand(char *err, size_t errlen);
const libs_cublas *libs_get_cublas(char *err, size_t errlen);
const libs_cufft *libs_get_cufft(char *err, size_t errlen);
const libs_fftw *libs_get_fftw(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
