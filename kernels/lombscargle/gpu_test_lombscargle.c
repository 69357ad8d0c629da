/*
 * kernels/lombscargle/gpu_test_lombscargle.c — lombscargle through gpud on the
 * cuda backend against the CPU reference, at several sizes and every flag
 * combination (tests/gpu/main.c runs it).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpud/client.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "tests/gpu/gpu_test.h"

typedef struct ls_case {
	size_t nx, nf;
	gpud_dtype dt;
	int precenter, normalize;
} ls_case;

/* The CPU reference: the kernel table's own cpu_run. */
static void reference(const ls_case *cs, void *x, void *y, void *f, void *out)
{
	const kernel_def *k = kernel_find("lombscargle");
	kernel_args a;
	char err[256];
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	kernel_array arr = {.dtype = cs->dt, .ndim = 1};
	void *ptrs[3] = {x, y, f};
	size_t lens[3] = {cs->nx, cs->nx, cs->nf};
	for (int i = 0; i < 3; i++) {
		arr.shape[0] = lens[i];
		arr.count = lens[i];
		arr.data = ptrs[i];
		ck_assert_int_eq(kernel_bind_array(k, &k->params[i], &arr, &a.v[i], err,
						   sizeof(err)),
				 0);
	}
	ck_assert_int_eq(kernel_bind_scalar(k, &k->params[LS_PRECENTER], KGIVEN_BOOL, cs->precenter,
					    0, 0, &a.v[LS_PRECENTER], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(k, &k->params[LS_NORMALIZE], KGIVEN_BOOL, cs->normalize,
					    0, 0, &a.v[LS_NORMALIZE], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), 0);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), 0);
	a.v[LS_PGRAM].arr = a.v[LS_PGRAM].expect;
	a.v[LS_PGRAM].arr.data = out;
	a.v[LS_PGRAM].present = 1;
	k->cpu_run(&a, 0, cs->nf);
}

static void run_ls_case(gpud_client *c, const ls_case *cs)
{
	size_t es = gpud_dtype_size(cs->dt);
	void *x = make_array(cs->dt, cs->nx, 0.01, 10 * M_PI, 1);
	void *y = make_array(cs->dt, cs->nx, -3.0, 3.0, 0);
	void *f = make_array(cs->dt, cs->nf, 0.01, 10.0, 0);
	void *ref = malloc(cs->nf * es + 8), *got = malloc(cs->nf * es + 8);
	uint64_t nx = cs->nx, nf = cs->nf;
	gpud_handle h[4];
	gpud_output o;
	size_t no;

	reference(cs, x, y, f, ref);
	poison(cs->dt, got, cs->nf);
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nx, x, &h[0]) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nx, y, &h[1]) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nf, f, &h[2]) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nf, got, &h[3]) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]),
			   gpud_arg_buffer("y", h[1]),
			   gpud_arg_buffer("freqs", h[2]),
			   gpud_arg_buffer("pgram", h[3]),
			   gpud_arg_bool("precenter", cs->precenter),
			   gpud_arg_bool("normalize", cs->normalize)};
	ck_assert_msg(gpud_run(c, "lombscargle", args, 6, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert_uint_eq(o.handle, h[3]);
	ck_assert_msg(gpud_download_range(c, h[3], 0, got, cs->nf * es) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert(gpud_free(c, h, 4) == GPUD_OK);

	double maxref = 0, maxerr = 0;
	size_t unwritten = 0, nan_mismatch = 0;
	for (size_t i = 0; i < cs->nf; i++) {
		double r = get(cs->dt, ref, i);
		if (isfinite(r) && fabs(r) > maxref)
			maxref = fabs(r);
	}
	for (size_t i = 0; i < cs->nf; i++) {
		if (is_poison(cs->dt, got, i)) {
			unwritten++;
			continue;
		}
		double r = get(cs->dt, ref, i), g = get(cs->dt, got, i);
		if (isfinite(r) != isfinite(g)) {
			nan_mismatch++;
			continue;
		}
		if (isfinite(r) && fabs(g - r) > maxerr)
			maxerr = fabs(g - r);
	}
	double tol = cs->dt == GPUD_F64 ? 1e-9 : 1e-4;
	printf("lombscargle %-7s nx=%-4zu nf=%-8zu precenter=%d normalize=%d  max|ref|=%-10.4g "
	       "max err/max|ref|=%.2e  unwritten=%zu\n",
	       gpud_dtype_name(cs->dt), cs->nx, cs->nf, cs->precenter, cs->normalize, maxref,
	       maxref > 0 ? maxerr / maxref : maxerr, unwritten);
	fflush(stdout);
	ck_assert_msg(unwritten == 0, "%zu of %zu outputs never written", unwritten, cs->nf);
	/*
	 * One sample: the second term of scipy's formula is 0/0 up to rounding
	 * (the periodogram of one point is ill-posed), so values are not
	 * compared there; every element must still be written.
	 */
	if (cs->nx > 1) {
		ck_assert_msg(nan_mismatch == 0, "%zu outputs finite on one side only",
			      nan_mismatch);
		ck_assert_msg(maxerr <= tol * maxref, "max abs error %.3e > %.0e x max %.4g",
			      maxerr, tol, maxref);
	}
	free(x);
	free(y);
	free(f);
	free(ref);
	free(got);
}

void gpu_test_lombscargle(gpud_client *c, const char *kernel)
{
	static const size_t nxs[] = {1, 7, 100};
	static const size_t nfs[] = {1, 31, 1000, 1u << 20};
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	(void)kernel; /* the folder has one kernel */
	for (int d = 0; d < 2; d++)
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 4; j++) {
				/* All four flag combinations at the largest size, one
				 * rotating combination elsewhere. */
				for (int m = 0; m < 4; m++) {
					if (nfs[j] != (1u << 20) && m != (int)((i + j) % 4))
						continue;
					ls_case cs = {nxs[i], nfs[j], dts[d], m & 1, m >> 1};
					run_ls_case(c, &cs);
				}
			}
}
