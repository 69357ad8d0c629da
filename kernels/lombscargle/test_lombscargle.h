/*
 * kernels/lombscargle/test_lombscargle.h — what the lombscargle unit tests
 * share (test_lombscargle_util.c): a case's arguments (ls_case), binding and
 * running it the way gpud does, the reference sample sets, and each file's
 * test case adders for lombscargle_suite (test_lombscargle.c). Tests only;
 * each test runs single-threaded in its own process.
 */
#ifndef GPUD_TEST_LOMBSCARGLE_H
#define GPUD_TEST_LOMBSCARGLE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/core/kernel.h"

#define OMIT -1 /* leave a scalar to its default */

/* How a test gives normalize: its word as text, a bool, or the integer 0 or 1. */
enum { NZ_WORD, NZ_BOOL, NZ_INT };

/* Which of the grid's scalars a case gives. */
enum { GRID_F0 = 1, GRID_DF = 2, GRID_NF = 4, GRID = 7 };

/* One run's arguments; what is NULL, OMIT or not in `grid` is left out. */
typedef struct ls_case {
	const double *x, *y, *w; /* w: the weights, NULL for none */
	size_t n, ny, nw;        /* the lengths of x, y and w */
	const double *f;         /* freqs, NULL for none */
	size_t nf;               /* freqs' length */
	int grid;                /* GRID_F0 | GRID_DF | GRID_NF: the grid scalars given */
	double f0, df;
	int64_t ngrid;
	int precenter, floating_mean, legacy; /* 0, 1 or OMIT */
	int normalize;                        /* LS_POWER, LS_NORMALIZED, LS_AMPLITUDE or OMIT */
	int normalize_as;                     /* NZ_WORD, NZ_BOOL or NZ_INT */
	gpud_dtype dty, dtf, dtw;             /* y's, freqs' and weights' dtypes; 0: x's */
	int method;                           /* LS_AUTO, LS_DIRECT, LS_NUFFT or OMIT */
	double eps;                           /* > 0: given */
} ls_case;

/* Case c bound in dtype dt, with the host memory of its arrays. */
typedef struct ls_bound {
	kernel_args a;
	void *mem[4];
} ls_bound;

/* The kernel's cpu entry points, the one place the tests reach them. */
size_t ls_test_items(const kernel_args *a);
void ls_test_run(const kernel_args *a, size_t lo, size_t hi);
unsigned ls_test_verdict(const kernel_args *a);
void ls_assert_cpu_verdict(void);

/* Calling the kernel. */
const kernel_def *ls_kernel(void);
ls_case ls_lcase(const double *x, const double *y, size_t n);
void ls_set_grid(ls_case *c, double f0, double df, int64_t nf);
size_t ls_case_nf(const ls_case *c);
kernel_array ls_array1(gpud_dtype dt, void *data, size_t n);
void *ls_convert(gpud_dtype dt, const double *v, size_t n);
void ls_bind_array(const kernel_def *k, kernel_args *a, int idx, gpud_dtype dt, void *data,
		   size_t n);
void ls_bind_scalar(const kernel_def *k, kernel_args *a, int idx, kscalar_given kind, int b,
		    int64_t i, double d);
void ls_bind_normalize(const kernel_def *k, kernel_args *a, int mode, int as);
int ls_bind(gpud_dtype dt, const ls_case *c, ls_bound *b, char *err, size_t errlen);
void ls_unbind(ls_bound *b);
void ls_poison(const kernel_array *o);
double ls_get(const kernel_array *o, size_t j);
void run_ls(gpud_dtype dt, const ls_case *c, double *re, double *im, int nan_ok);
void ls_run_plain(gpud_dtype dt, const ls_case *c, double *re, double *im);
void ls_bind_y2(const kernel_def *k, kernel_args *a, gpud_dtype dt, void *data, size_t nb,
		size_t n);
int ls_bind_batch(kernel_args *a, gpud_dtype dt, void *x, void *y, void *w, size_t n, size_t nb,
		  int64_t nf, int method, char *err, size_t errlen);

/* check's answer. */
extern const double ls_pool[64];
ls_case ls_pcase(size_t n, size_t nf);
void ls_check_refuses(gpud_dtype dt, const ls_case *c, const char *want);
kernel_array ls_check_passes(gpud_dtype dt, const ls_case *c);

/* Samples. */
extern uint64_t ls_rng_state;
double ls_uniform(double lo, double hi);
void ls_gapped(size_t n, double *x, double *y, double *w, double T);
double ls_rel_err(size_t nf, const double *re, const double *im, const double *wre,
		  const double *wim);

/* The test cases of test_lombscargle_check.c and test_lombscargle_nufft.c. */
void lombscargle_check_tcases(Suite *s);
void lombscargle_nufft_tcases(Suite *s);
void lombscargle_verdict_tcases(Suite *s);
/* lombscargle_many's (test_lombscargle_many.c) */
void lombscargle_many_tcases(Suite *s);

#endif
