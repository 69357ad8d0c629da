/*
 * kernels/lombscargle/gpu_test_lombscargle.c — lombscargle through gpud on the
 * cuda backend against the CPU reference (the kernel's cpu entry, in
 * float64), on fresh random inputs with the output buffer poisoned: every
 * normalize mode, weights or not, floating_mean or not, frequencies as an
 * array or a grid, both dtypes; precenter and legacy; phases |f x| up to
 * 1e6; tile and size edges; and bad weights, which fail the run with the
 * kernel's verdict while gpud goes on (tests/gpu/kernels.c runs it). Those
 * runs say method=direct; method=nufft is tested against the float64 direct
 * kernel (nufft_case): uneven samples with gaps, 10 to 10^6 of them, 10^3 to
 * 10^7 frequencies reaching many times the mean sampling rate, every mode,
 * both dtypes, the output poisoned first, error <= eps max |pgram|.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpud/client.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "tests/gpu/gpu_test.h"

typedef struct ls_case {
	size_t nx, nf;
	gpud_dtype dt;
	int grid, weights, fm, mode, precenter, legacy;
	double xmax, flo, fhi; /* samples in [0, xmax), frequencies in [flo, fhi) */
} ls_case;

static const char *const mode_names[] = {"power", "normalize", "amplitude"};

/* Binds the case's arguments as gpud would, for the CPU reference. */
static void reference(const ls_case *cs, void *x, void *y, void *w, void *f, void *out)
{
	const kernel_def *k = kernel_find("lombscargle");
	kernel_args a;
	char err[256];
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	kernel_array arr = {.dtype = cs->dt, .ndim = 1};
	int idx[4] = {LS_X, LS_Y, LS_WEIGHTS, LS_FREQS};
	void *ptrs[4] = {x, y, w, f};
	size_t lens[4] = {cs->nx, cs->nx, cs->nx, cs->nf};
	for (int i = 0; i < 4; i++) {
		if (ptrs[i] == NULL)
			continue;
		arr.shape[0] = lens[i];
		arr.count = lens[i];
		arr.data = ptrs[i];
		ck_assert_int_eq(kernel_bind_array(k, &k->params[idx[i]], &arr, &a.v[idx[i]], err,
						   sizeof(err)),
				 0);
	}
	kernel_bind_scalar(k, &k->params[LS_PRECENTER], KGIVEN_BOOL, cs->precenter, 0, 0,
			   &a.v[LS_PRECENTER], err, sizeof(err));
	kernel_bind_scalar(k, &k->params[LS_FLOATING_MEAN], KGIVEN_BOOL, cs->fm, 0, 0,
			   &a.v[LS_FLOATING_MEAN], err, sizeof(err));
	kernel_bind_scalar(k, &k->params[LS_LEGACY], KGIVEN_BOOL, cs->legacy, 0, 0, &a.v[LS_LEGACY],
			   err, sizeof(err));
	ck_assert_int_eq(kernel_bind_text(k, &k->params[LS_NORMALIZE], mode_names[cs->mode],
					  &a.v[LS_NORMALIZE], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_text(k, &k->params[LS_METHOD], "direct", &a.v[LS_METHOD], err,
					  sizeof(err)),
			 0);
	if (cs->grid) {
		kernel_bind_scalar(k, &k->params[LS_F0], KGIVEN_F64, 0, 0, cs->flo, &a.v[LS_F0],
				   err, sizeof(err));
		kernel_bind_scalar(k, &k->params[LS_DF], KGIVEN_F64, 0, 0,
				   (cs->fhi - cs->flo) / (double)cs->nf, &a.v[LS_DF], err,
				   sizeof(err));
		kernel_bind_scalar(k, &k->params[LS_NF], KGIVEN_I64, 0, (int64_t)cs->nf, 0,
				   &a.v[LS_NF], err, sizeof(err));
	}
	ck_assert_msg(kernel_args_finish(&a, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(k->check(&a, err, sizeof(err)) == 0, "%s", err);
	a.v[LS_PGRAM].arr = a.v[LS_PGRAM].expect;
	a.v[LS_PGRAM].arr.data = out;
	a.v[LS_PGRAM].present = 1;
	cpu_kernel_of(k)->run(&a, 0, cs->nf);
}

/*
 * How ill-conditioned the result at each frequency is (the same measure as
 * tests/scipy_check.py's ref_today): with floating_mean, CC - C^2 and SS - S^2
 * cancel wherever the cosines hardly vary over the samples, by kappa =
 * CC / (CC - C^2) (or SS's). The sums then carry kappa times the working
 * precision's rounding, and the phase f x (float64 in the reference and in
 * both kernels' reduction) kappa times eps64 |f x|. cond[k] is that in units
 * of eps(dtype): (kappa - 1)(1 + eps64 |f_k| max|x| / eps(dtype)); 0 without
 * floating_mean, where nothing cancels.
 */
static void ls_cond(const ls_case *cs, const void *x, const void *w, const void *f, double *cond)
{
	size_t nx = cs->nx;
	double *wn = malloc(nx * sizeof(double)), *ph = malloc(nx * sizeof(double));
	double wsum = 0, xmax = 0;
	double eps_dt = cs->dt == GPUD_F64 ? DBL_EPSILON : (double)FLT_EPSILON;
	for (size_t i = 0; i < nx; i++) {
		wn[i] = w ? get(cs->dt, w, i) : 1.0;
		wsum += wn[i];
		double a = fabs(get(cs->dt, x, i));
		xmax = a > xmax ? a : xmax;
	}
	for (size_t i = 0; i < nx; i++)
		wn[i] /= wsum;
	double df = (cs->fhi - cs->flo) / (double)cs->nf;
	for (size_t k = 0; k < cs->nf; k++) {
		cond[k] = 0;
		if (!cs->fm || cs->legacy)
			continue;
		double fk = f ? get(cs->dt, f, k) : cs->flo + df * (double)k;
		double c1 = 0, s1 = 0, cc = 0, cs2 = 0;
		for (size_t i = 0; i < nx; i++) {
			ph[i] = fk * get(cs->dt, x, i);
			double c = cos(ph[i]), s = sin(ph[i]);
			c1 += wn[i] * c, s1 += wn[i] * s, cc += wn[i] * c * c, cs2 += wn[i] * c * s;
		}
		double ss = 1.0 - cc;
		double tau = 0.5 * atan2(2.0 * (cs2 - c1 * s1), (cc - c1 * c1) - (ss - s1 * s1));
		c1 = s1 = cc = 0;
		for (size_t i = 0; i < nx; i++) {
			double c = cos(ph[i] - tau), s = sin(ph[i] - tau);
			c1 += wn[i] * c, s1 += wn[i] * s, cc += wn[i] * c * c;
		}
		double raw_cc = cc, raw_ss = 1.0 - cc;
		double ccm = fmax(raw_cc - c1 * c1, DBL_EPSILON / 2),
		       ssm = fmax(raw_ss - s1 * s1, DBL_EPSILON / 2);
		double kappa = fmax(fmax(raw_cc / ccm, raw_ss / ssm), 1.0);
		cond[k] = (kappa - 1.0) * (1.0 + DBL_EPSILON * fabs(fk) * xmax / eps_dt);
	}
	free(wn);
	free(ph);
}

/* The conditioning's weight in the bound (per frequency: tol + COND_K eps(dtype)
 * cond of max|ref|), as tests/scipy_check.py's COND_K. */
#define COND_K 64.0

static void run_ls_case(gpud_client *c, const ls_case *cs)
{
	gpud_dtype odt = cs->mode == LS_AMPLITUDE ? (cs->dt == GPUD_F32 ? GPUD_C64 : GPUD_C128)
						  : cs->dt;
	size_t comps = cs->mode == LS_AMPLITUDE ? 2 : 1; /* reals per output */
	size_t es = gpud_dtype_size(odt);
	void *x = make_array(cs->dt, cs->nx, 0.0, cs->xmax, 1);
	void *y = make_array(cs->dt, cs->nx, -3.0, 3.0, 0);
	void *w = cs->weights ? make_array(cs->dt, cs->nx, 0.05, 2.0, 0) : NULL;
	void *f = cs->grid ? NULL : make_array(cs->dt, cs->nf, cs->flo, cs->fhi, 0);
	void *ref = malloc(cs->nf * es + 16), *got = malloc(cs->nf * es + 16);
	uint64_t nx = cs->nx, nf = cs->nf;
	gpud_handle h[5];
	int nh = 0;
	gpud_arg args[14];
	int na = 0;
	gpud_output o;
	size_t no;

	reference(cs, x, y, w, f, ref);
	poison(odt, got, cs->nf);
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nx, x, &h[nh]) == GPUD_OK, "%s", gpud_errmsg(c));
	args[na++] = gpud_arg_buffer("x", h[nh++]);
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nx, y, &h[nh]) == GPUD_OK, "%s", gpud_errmsg(c));
	args[na++] = gpud_arg_buffer("y", h[nh++]);
	if (w) {
		ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nx, w, &h[nh]) == GPUD_OK, "%s",
			      gpud_errmsg(c));
		args[na++] = gpud_arg_buffer("weights", h[nh++]);
	}
	if (f) {
		ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nf, f, &h[nh]) == GPUD_OK, "%s",
			      gpud_errmsg(c));
		args[na++] = gpud_arg_buffer("freqs", h[nh++]);
	} else {
		args[na++] = gpud_arg_f64("f0", cs->flo);
		args[na++] = gpud_arg_f64("df", (cs->fhi - cs->flo) / (double)cs->nf);
		args[na++] = gpud_arg_i64("nf", (int64_t)cs->nf);
	}
	ck_assert_msg(gpud_alloc(c, odt, 1, &nf, got, &h[nh]) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_handle out = h[nh++];
	args[na++] = gpud_arg_buffer("pgram", out);
	args[na++] = gpud_arg_bool("precenter", cs->precenter);
	args[na++] = gpud_arg_text("normalize", mode_names[cs->mode]);
	args[na++] = gpud_arg_bool("floating_mean", cs->fm);
	args[na++] = gpud_arg_bool("legacy", cs->legacy);
	args[na++] = gpud_arg_text("method", "direct"); /* the NUFFT: nufft_case below */
	ck_assert_msg(gpud_run(c, "lombscargle", args, (size_t)na, &o, 1, &no, NULL) == GPUD_OK,
		      "%s", gpud_errmsg(c));
	ck_assert_uint_eq(o.handle, out);
	ck_assert_msg(gpud_download_range(c, out, 0, got, cs->nf * es) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert(gpud_free(c, h, (size_t)nh) == GPUD_OK);

	/* complex outputs: their components, in turn */
	gpud_dtype cdt = cs->dt;
	size_t n = cs->nf * comps;
	double maxref = 0, maxerr = 0;
	size_t unwritten = 0, nan_mismatch = 0;
	for (size_t i = 0; i < n; i++) {
		double r = get(cdt, ref, i);
		if (isfinite(r) && fabs(r) > maxref)
			maxref = fabs(r);
	}
	/* Each frequency within tol + COND_K eps(dtype) cond of max|ref|; the
	 * worst error over its own bound is what must stay <= 1. */
	double tol = cs->dt == GPUD_F64 ? 1e-9 : 1e-4;
	double eps_dt = cs->dt == GPUD_F64 ? DBL_EPSILON : (double)FLT_EPSILON;
	double *cond = malloc(cs->nf * sizeof(double));
	ls_cond(cs, x, w, f, cond);
	double worst = 0, worst_err = 0, worst_bound = 0, worst_cond = 0, maxcond = 0;
	size_t worst_at = 0;
	for (size_t i = 0; i < n; i++) {
		if (is_poison(cdt, got, i)) {
			unwritten++;
			continue;
		}
		double r = get(cdt, ref, i), g = get(cdt, got, i);
		if (isfinite(r) != isfinite(g)) {
			nan_mismatch++;
			continue;
		}
		if (!isfinite(r))
			continue;
		double err = fabs(g - r), cnd = cond[i / comps];
		double bound = (tol + COND_K * eps_dt * cnd) * maxref;
		maxerr = err > maxerr ? err : maxerr;
		maxcond = cnd > maxcond ? cnd : maxcond;
		if (bound > 0 ? err / bound > worst : err > 0) {
			worst = bound > 0 ? err / bound : INFINITY;
			worst_err = err, worst_bound = bound, worst_cond = cnd;
			worst_at = i / comps;
		}
	}
	free(cond);
	printf("lombscargle %-7s %-5s nx=%-5zu nf=%-8zu w=%d fm=%d %-9s pc=%d legacy=%d "
	       "|fx|<%-8.3g max|ref|=%-10.4g err/max=%.2e max cond=%.3g worst err/bound=%.3f\n",
	       gpud_dtype_name(cs->dt), cs->grid ? "grid" : "array", cs->nx, cs->nf, cs->weights,
	       cs->fm, mode_names[cs->mode], cs->precenter, cs->legacy, cs->xmax * cs->fhi, maxref,
	       maxref > 0 ? maxerr / maxref : maxerr, maxcond, worst);
	fflush(stdout);
	ck_assert_msg(unwritten == 0, "%zu of %zu outputs never written", unwritten, n);
	/* One sample: scipy <= 1.14's periodogram is 0/0 up to rounding, and
	 * today's amplitude has b = YS / SS, rounding over rounding: every
	 * element must still be written, values are not compared. Today's power
	 * and normalize are well defined (the clamp of SS at epsneg). */
	if (cs->nx > 1 || (!cs->legacy && cs->mode != LS_AMPLITUDE)) {
		ck_assert_msg(nan_mismatch == 0, "%zu outputs finite on one side only",
			      nan_mismatch);
		ck_assert_msg(worst <= 1.0,
			      "frequency %zu: abs error %.3e > its bound %.3e (%.0e + %.0f eps x "
			      "cond %.3g, of max %.4g)",
			      worst_at, worst_err, worst_bound, tol, COND_K, worst_cond, maxref);
	}
	free(x);
	free(y);
	free(w);
	free(f);
	free(ref);
	free(got);
}

/* Negative and all-zero weights fail the run with the verdict, direct and
 * NUFFT; gpud goes on. */
static void bad_weights(gpud_client *c, gpud_dtype dt)
{
	static const char *methods[2] = {"direct", "nufft"};
	double xs[3] = {0.1, 0.7, 1.9}, ys[3] = {1, -0.5, 2};
	double ws[2][3] = {{1, -1, 1}, {0, 0, 0}};
	const char *want[2] = {"negative or NaN weight", "sum to 0"};
	float xf[3], yf[3], wf[3];
	for (int i = 0; i < 3; i++)
		xf[i] = (float)xs[i], yf[i] = (float)ys[i];
	for (int bm = 0; bm < 4; bm++) {
		int b = bm % 2;
		const char *method = methods[bm / 2];
		for (int i = 0; i < 3; i++)
			wf[i] = (float)ws[b][i];
		uint64_t n = 3;
		gpud_handle h[3];
		int f32 = dt == GPUD_F32;
		ck_assert(gpud_alloc(c, dt, 1, &n, f32 ? (void *)xf : (void *)xs, &h[0]) ==
			  GPUD_OK);
		ck_assert(gpud_alloc(c, dt, 1, &n, f32 ? (void *)yf : (void *)ys, &h[1]) ==
			  GPUD_OK);
		ck_assert(gpud_alloc(c, dt, 1, &n, f32 ? (void *)wf : (void *)ws[b], &h[2]) ==
			  GPUD_OK);
		gpud_arg args[] = {gpud_arg_buffer("x", h[0]),       gpud_arg_buffer("y", h[1]),
				   gpud_arg_buffer("weights", h[2]), gpud_arg_f64("f0", 0.5),
				   gpud_arg_f64("df", 0.5),          gpud_arg_i64("nf", 100000),
				   gpud_arg_text("method", method)};
		gpud_output o;
		size_t no = 0;
		gpud_status st = gpud_run(c, "lombscargle", args, 7, &o, 1, &no, NULL);
		ck_assert_int_eq(st, GPUD_EINVAL);
		ck_assert_msg(strstr(gpud_errmsg(c), "weights") && strstr(gpud_errmsg(c), want[b]),
			      "%s", gpud_errmsg(c));
		printf("lombscargle %-7s %-6s bad weights %d: %s\n", gpud_dtype_name(dt), method, b,
		       gpud_errmsg(c));
		ck_assert(gpud_free(c, h, 3) == GPUD_OK);
	}
}

/* --- method=nufft against the float64 direct kernel ------------------------------------ */

typedef struct nu_case {
	size_t nx, nf;
	gpud_dtype dt;
	int weights, fm, mode, precenter, legacy;
	double rate; /* the grid's top, in mean sampling rates (2 pi nx / T, angular) */
} nu_case;

static gpud_handle upload_as(gpud_client *c, gpud_dtype dt, const double *v, size_t n)
{
	void *buf = malloc(n * gpud_dtype_size(dt));
	uint64_t nn = n;
	gpud_handle h;
	for (size_t i = 0; i < n; i++) {
		if (dt == GPUD_F32)
			((float *)buf)[i] = (float)v[i];
		else
			((double *)buf)[i] = v[i];
	}
	ck_assert_msg(gpud_alloc(c, dt, 1, &nn, buf, &h) == GPUD_OK, "%s", gpud_errmsg(c));
	free(buf);
	return h;
}

/*
 * One lombscargle run; returns the output's components as doubles (2 per
 * frequency for amplitude). freqs: an array handle, or 0 for the grid.
 */
static double *nu_run(gpud_client *c, const nu_case *cs, gpud_dtype dt, const gpud_handle in[3],
		      gpud_handle freqs, size_t nfreq, double f0, double df, const char *method,
		      double *ms)
{
	gpud_dtype odt = cs->mode == LS_AMPLITUDE ? (dt == GPUD_F32 ? GPUD_C64 : GPUD_C128) : dt;
	size_t comps = cs->mode == LS_AMPLITUDE ? 2 : 1, es = gpud_dtype_size(odt);
	void *got = malloc(nfreq * es);
	uint64_t nf = nfreq;
	gpud_handle out;
	poison(odt, got, nfreq);
	ck_assert_msg(gpud_alloc(c, odt, 1, &nf, got, &out) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_arg args[14];
	int na = 0;
	args[na++] = gpud_arg_buffer("x", in[0]);
	args[na++] = gpud_arg_buffer("y", in[1]);
	if (cs->weights)
		args[na++] = gpud_arg_buffer("weights", in[2]);
	if (freqs) {
		args[na++] = gpud_arg_buffer("freqs", freqs);
	} else {
		args[na++] = gpud_arg_f64("f0", f0);
		args[na++] = gpud_arg_f64("df", df);
		args[na++] = gpud_arg_i64("nf", (int64_t)nfreq);
	}
	args[na++] = gpud_arg_buffer("pgram", out);
	args[na++] = gpud_arg_bool("precenter", cs->precenter);
	args[na++] = gpud_arg_text("normalize", mode_names[cs->mode]);
	args[na++] = gpud_arg_bool("floating_mean", cs->fm);
	args[na++] = gpud_arg_bool("legacy", cs->legacy);
	args[na++] = gpud_arg_text("method", method);
	gpud_output o;
	size_t no;
	double t0 = wall();
	ck_assert_msg(gpud_run(c, "lombscargle", args, (size_t)na, &o, 1, &no, NULL) == GPUD_OK,
		      "%s", gpud_errmsg(c));
	ck_assert_msg(gpud_download_range(c, out, 0, got, nfreq * es) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	if (ms)
		*ms = (wall() - t0) * 1e3;
	ck_assert(gpud_free(c, &out, 1) == GPUD_OK);
	gpud_dtype cdt = odt == GPUD_C64 ? GPUD_F32 : odt == GPUD_C128 ? GPUD_F64 : odt;
	double *v = malloc(nfreq * comps * sizeof(double));
	size_t unwritten = 0, first = 0;
	/* one assertion at the end: check marks every one it passes (a pipe write) */
	for (size_t i = 0; i < nfreq * comps; i++) {
		if (is_poison(cdt, got, i) && unwritten++ == 0)
			first = i;
		v[i] = get(cdt, got, i);
	}
	ck_assert_msg(unwritten == 0, "%s: %zu outputs never written, the first %zu", method,
		      unwritten, first);
	free(got);
	return v;
}

/*
 * The periodogram of the double inputs at frequency f, as ref.c's
 * reference computes it (scipy's two passes, or legacy's one) but in long
 * double: phases and sums with 11 more bits, so it stands for the exact
 * value where the direct float64 kernel and the NUFFT disagree by more than
 * eps. Both round the phases f x to double (|f x| reaches 10^8 radians
 * here), which an amplitude divides by a small CC or SS: there the direct
 * kernel itself can be off by more than eps, and the NUFFT is judged
 * against this. out[0], out[1] as lombscargle_ref_one's.
 * f is f0 + k df in long double: the grid's frequency itself, which a
 * float64 method holds only to the nearest double.
 * shake (what the value becomes when the problem is known only as double
 * knows it, i.e. the float64 problem's own uncertainty): SHAKE_X moves each
 * x by half an ulp of double, up or down at random; SHAKE_F moves f by half
 * an ulp of double, every phase f x_j coherently (in long double, exactly).
 */
enum { SHAKE_X = 1, SHAKE_F = 2 };
static void truth_one(const nu_case *cs, const double *x0, const double *y, const double *w,
		      size_t n, long double f, int shake, double out[2])
{
	long double *x = malloc(n * sizeof(long double));
	uint64_t s = 0x9e3779b97f4a7c15ull;
	if (shake & SHAKE_F)
		f += 0.5L * (nextafter(fabs((double)f), INFINITY) - fabs((double)f));
	for (size_t j = 0; j < n; j++) {
		x[j] = x0[j];
		if (shake & SHAKE_X) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			x[j] += ((s >> 63) ? 0.5L : -0.5L) *
				(nextafter(fabs(x0[j]), INFINITY) - fabs(x0[j]));
		}
	}
	long double wsum = 0, mean = 0, ydot = 0, y1 = 0, y2 = 0;
	for (size_t j = 0; j < n; j++) {
		mean += y[j];
		ydot += (long double)y[j] * y[j];
		wsum += cs->weights ? w[j] : 1.0L;
	}
	long double shift = cs->precenter ? mean / (long double)n : 0;
	out[1] = 0;
	if (cs->legacy) {
		long double xc = 0, xs = 0, cc = 0, ss = 0, csum = 0;
		for (size_t j = 0; j < n; j++) {
			long double sn, c, yj = y[j] - shift;
			sincosl((long double)f * x[j], &sn, &c);
			xc += yj * c;
			xs += yj * sn;
			cc += c * c;
			ss += sn * sn;
			csum += c * sn;
		}
		long double tau = atan2l(2 * csum, cc - ss) / (2 * (long double)f);
		long double ct = cosl(f * tau), st = sinl(f * tau);
		long double n1 = ct * xc + st * xs, n2 = ct * xs - st * xc;
		long double p = 0.5L *
				(n1 * n1 / (ct * ct * cc + 2 * ct * st * csum + st * st * ss) +
				 n2 * n2 / (ct * ct * ss - 2 * ct * st * csum + st * st * cc));
		out[0] = (double)(cs->mode == LS_NORMALIZED ? p * 2 / ydot : p);
		free(x);
		return;
	}
	for (size_t j = 0; j < n; j++) {
		long double wj = (cs->weights ? w[j] : 1.0L) / wsum, v = y[j] - shift;
		y1 += wj * v;
		y2 += wj * v * v;
	}
	long double cc = 0, csum = 0, c1 = 0, s1 = 0;
	for (size_t j = 0; j < n; j++) {
		long double wj = (cs->weights ? w[j] : 1.0L) / wsum, sn, c;
		sincosl((long double)f * x[j], &sn, &c);
		cc += wj * c * c;
		csum += wj * c * sn;
		c1 += wj * c;
		s1 += wj * sn;
	}
	long double ss = 1 - cc;
	if (cs->fm) {
		cc -= c1 * c1;
		ss -= s1 * s1;
		csum -= c1 * s1;
	}
	long double tau = 0.5L * atan2l(2 * csum, cc - ss), yc = 0, ys = 0;
	cc = c1 = s1 = 0;
	for (size_t j = 0; j < n; j++) {
		long double wj = (cs->weights ? w[j] : 1.0L) / wsum, v = y[j] - shift, sn, c;
		sincosl((long double)f * x[j] - tau, &sn, &c);
		yc += wj * v * c;
		ys += wj * v * sn;
		cc += wj * c * c;
		c1 += wj * c;
		s1 += wj * sn;
	}
	ss = 1 - cc;
	if (cs->fm) {
		yc -= y1 * c1;
		ys -= y1 * s1;
		cc -= c1 * c1;
		ss -= s1 * s1;
	}
	cc = fmaxl(cc, LS_EPSNEG);
	ss = fmaxl(ss, LS_EPSNEG);
	long double ca = yc / cc, sb = ys / ss, p = 2 * (ca * yc + sb * ys);
	if (cs->mode == LS_NORMALIZED)
		out[0] = (double)(p / (2 * (cs->fm ? y2 - y1 * y1 : y2)));
	else if (cs->mode == LS_AMPLITUDE) {
		out[0] = (double)(ca * cosl(tau) - sb * sinl(tau));
		out[1] = (double)(ca * sinl(tau) + sb * cosl(tau));
	} else
		out[0] = (double)(p * (long double)n / 4);
	free(x);
}

/* Frequencies whose direct sums the check compares: all, or (N M too big
 * for the direct kernel in a test) a random 4096 and the NUFFT's peak. */
#define NU_DIRECT_MAX 2e10
#define NU_SUBSET 4096

static void nufft_case(gpud_client *c, const nu_case *cs)
{
	size_t n = cs->nx, nf = cs->nf, comps = cs->mode == LS_AMPLITUDE ? 2 : 1;
	double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
	double *w = malloc(n * sizeof(double));
	/* uneven samples on [0, T] with two gaps (a fifth and a tenth of T) */
	double T = uniform(100, 5000);
	for (size_t j = 0; j < n; j++) {
		double t;
		do
			t = uniform(0, T);
		while ((t > 0.3 * T && t < 0.5 * T) || (t > 0.7 * T && t < 0.8 * T));
		x[j] = t;
	}
	double rate = 2 * M_PI * (double)n / T;
	double om = uniform(0.05, 0.9) * cs->rate * rate, ph = uniform(0, 6.28);
	for (size_t j = 0; j < n; j++) {
		y[j] = 2 + 1.5 * sin(om * x[j] + ph) + uniform(-2, 2);
		w[j] = uniform(0.1, 2);
	}
	/* the reference's inputs are the run's, rounded to its dtype */
	for (size_t j = 0; cs->dt == GPUD_F32 && j < n; j++) {
		x[j] = (float)x[j];
		y[j] = (float)y[j];
		w[j] = (float)w[j];
	}
	double f0 = uniform(1, 10) * 2 * M_PI / T, df = (cs->rate * rate - f0) / (double)nf;
	gpud_handle in[3] = {upload_as(c, cs->dt, x, n), upload_as(c, cs->dt, y, n),
			     upload_as(c, cs->dt, w, n)};
	double ms;
	double *got = nu_run(c, cs, cs->dt, in, 0, nf, f0, df, "nufft", &ms);
	gpud_handle in64[3] = {in[0], in[1], in[2]};
	if (cs->dt == GPUD_F32)
		for (int i = 0; i < 3; i++)
			in64[i] = upload_as(c, GPUD_F64, i == 0 ? x : i == 1 ? y : w, n);
	double *ref, *cmp;
	size_t nref;
	size_t *at = NULL;
	if ((double)n * (double)nf <= NU_DIRECT_MAX) {
		nref = nf;
		ref = nu_run(c, cs, GPUD_F64, in64, 0, nf, f0, df, "direct", NULL);
		cmp = got;
	} else {
		nref = NU_SUBSET;
		at = malloc(nref * sizeof(size_t));
		double *fs = malloc(nref * sizeof(double)), big = -1;
		for (size_t i = 0; i < nf; i++) /* the peak, where max |pgram| is */
			if (fabs(got[i * comps]) > big)
				big = fabs(got[i * comps]), at[0] = i;
		for (size_t i = 1; i < nref; i++)
			at[i] = (size_t)(rnd() % nf);
		for (size_t i = 0; i < nref; i++)
			fs[i] = f0 + df * (double)at[i];
		gpud_handle fh = upload_as(c, GPUD_F64, fs, nref);
		ref = nu_run(c, cs, GPUD_F64, in64, fh, nref, 0, 0, "direct", NULL);
		ck_assert(gpud_free(c, &fh, 1) == GPUD_OK);
		cmp = malloc(nref * comps * sizeof(double));
		for (size_t i = 0; i < nref; i++)
			for (size_t k = 0; k < comps; k++)
				cmp[i * comps + k] = got[at[i] * comps + k];
		free(fs);
	}
	double maxref = 0, maxerr = 0;
	size_t worst = 0;
	for (size_t i = 0; i < nref * comps; i++)
		if (isfinite(ref[i]))
			maxref = fmax(maxref, fabs(ref[i]));
	for (size_t i = 0; i < nref * comps; i++) {
		double e = fabs(cmp[i] - ref[i]);
		if (!(e <= maxerr)) /* NaN on one side counts */
			maxerr = e, worst = i / comps;
	}
	double eps = cs->dt == GPUD_F32 ? 1e-5 : 1e-9;
	/* Where the NUFFT and direct float64 disagree by more than eps, the
	 * long-double value decides (at most 32 frequencies, worst first): the
	 * NUFFT must be within eps of it, plus what the value itself moves when
	 * the samples or the frequency move by half an ulp (four times the larger:
	 * no float64 method can do better than the problem's own condition; at
	 * 10^6 samples and 20x the rate the frequency's last bit alone moves an
	 * amplitude by some 1e-9 of its maximum, as the direct kernel shows). */
	double judged = 0, direct_off = 0, floor_max = 0;
	int arbitrated = 0;
	for (int round = 0; round < 32 && maxerr > eps * maxref; round++) {
		size_t i = worst, k = at ? at[i] : i;
		long double fk = (long double)f0 + (long double)df * (long double)k;
		double t[2], tx[2], tf[2];
		truth_one(cs, x, y, w, n, fk, 0, t);
		truth_one(cs, x, y, w, n, fk, SHAKE_X, tx);
		truth_one(cs, x, y, w, n, fk, SHAKE_F, tf);
		double e = 0, d = 0, fl = 0;
		for (size_t q = 0; q < comps; q++) {
			e = fmax(e, fabs(cmp[i * comps + q] - t[q]));
			d = fmax(d, fabs(ref[i * comps + q] - t[q]));
			fl = fmax(fl, 4 * fmax(fabs(tx[q] - t[q]), fabs(tf[q] - t[q])));
		}
		ck_assert_msg(e <= eps * maxref + fl,
			      "nufft %s nx=%zu nf=%zu: frequency %zu: |error| %.3e against the "
			      "long-double value (direct float64: %.3e) > eps %.0e x max %.4g + "
			      "the problem's own %.3e",
			      gpud_dtype_name(cs->dt), n, nf, k, e, d, eps, maxref, fl);
		judged = fmax(judged, e);
		direct_off = fmax(direct_off, d);
		floor_max = fmax(floor_max, fl);
		arbitrated++;
		/* this frequency is settled: the next worst */
		for (size_t q = 0; q < comps; q++)
			cmp[i * comps + q] = ref[i * comps + q];
		maxerr = 0;
		for (size_t q = 0; q < nref * comps; q++) {
			double eq = fabs(cmp[q] - ref[q]);
			if (!(eq <= maxerr))
				maxerr = eq, worst = q / comps;
		}
	}
	printf("lombscargle nufft %-7s nx=%-7zu nf=%-8zu w=%d fm=%d %-9s pc=%d legacy=%d "
	       "to %4.0fx rate: err/max=%.2e (eps %.0e; %s, %zu compared) %.1f ms\n",
	       gpud_dtype_name(cs->dt), n, nf, cs->weights, cs->fm, mode_names[cs->mode],
	       cs->precenter, cs->legacy, cs->rate, maxerr / maxref, eps,
	       at ? "a subset" : "every frequency", nref, ms);
	if (arbitrated)
		printf("  %d frequencies where NUFFT and direct float64 differ by more than eps, "
		       "against long double: NUFFT %.2e, direct %.2e of max; the problem's own "
		       "(samples or frequency moved by half an ulp, x4) up to %.2e\n",
		       arbitrated, judged / maxref, direct_off / maxref, floor_max / maxref);
	fflush(stdout);
	ck_assert_msg(maxerr <= eps * maxref,
		      "nufft %s nx=%zu nf=%zu: frequency %zu: |error| %.3e > eps %.0e x max %.4g "
		      "(after %d frequencies judged against long double)",
		      gpud_dtype_name(cs->dt), n, nf, at ? at[worst] : worst, maxerr, eps, maxref,
		      arbitrated);
	if (cmp != got)
		free(cmp);
	if (cs->dt == GPUD_F32)
		ck_assert(gpud_free(c, in64, 3) == GPUD_OK);
	ck_assert(gpud_free(c, in, 3) == GPUD_OK);
	free(at);
	free(ref);
	free(got);
	free(x);
	free(y);
	free(w);
}

/* method=nufft takes grids only; arrays fail with the message. */
static void nufft_refuses_arrays(gpud_client *c)
{
	double xs[3] = {0.1, 0.7, 1.9}, ys[3] = {1, -0.5, 2};
	gpud_handle h[3] = {upload_as(c, GPUD_F64, xs, 3), upload_as(c, GPUD_F64, ys, 3),
			    upload_as(c, GPUD_F64, xs, 3)};
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]), gpud_arg_buffer("y", h[1]),
			   gpud_arg_buffer("freqs", h[2]), gpud_arg_text("method", "nufft")};
	gpud_output o;
	size_t no = 0;
	ck_assert_int_eq(gpud_run(c, "lombscargle", args, 4, &o, 1, &no, NULL), GPUD_EINVAL);
	ck_assert_msg(strstr(gpud_errmsg(c), "method=nufft needs the uniform grid"), "%s",
		      gpud_errmsg(c));
	ck_assert(gpud_free(c, h, 3) == GPUD_OK);
}

/*
 * A batch y (B, N): the NUFFT's rows against each series' direct float64
 * run (to eps of the row's largest value), and the direct kernel's rows
 * bit for bit against each series alone; the output is (B, nf), fresh
 * random series with gaps, amplitude with weights and floating_mean.
 */
static double *run_batch(gpud_client *c, gpud_dtype dt, const gpud_handle in[3], size_t nf,
			 double f0, double df, const char *method)
{
	gpud_arg args[] = {gpud_arg_buffer("x", in[0]),
			   gpud_arg_buffer("y", in[1]),
			   gpud_arg_buffer("weights", in[2]),
			   gpud_arg_f64("f0", f0),
			   gpud_arg_f64("df", df),
			   gpud_arg_i64("nf", (int64_t)nf),
			   gpud_arg_bool("floating_mean", 1),
			   gpud_arg_text("normalize", "amplitude"),
			   gpud_arg_text("method", method)};
	gpud_output o;
	size_t no = 0;
	ck_assert_msg(gpud_run(c, "lombscargle", args, 9, &o, 1, &no, NULL) == GPUD_OK, "%s %s",
		      method, gpud_errmsg(c));
	ck_assert_uint_eq(no, 1);
	size_t count = 1;
	for (int i = 0; i < o.ndim; i++)
		count *= (size_t)o.shape[i];
	ck_assert_uint_eq(o.shape[o.ndim - 1], nf);
	size_t es = gpud_dtype_size(dt), bytes = 2 * count * es;
	void *raw = malloc(bytes);
	ck_assert_msg(gpud_download_range(c, o.handle, 0, raw, bytes) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	double *v = malloc(2 * count * sizeof(double));
	for (size_t i = 0; i < 2 * count; i++)
		v[i] = dt == GPUD_F32 ? (double)((float *)raw)[i] : ((double *)raw)[i];
	free(raw);
	ck_assert(gpud_free(c, &o.handle, 1) == GPUD_OK);
	return v;
}

static void batch_case(gpud_client *c, gpud_dtype dt)
{
	const size_t n = 3000, nb = 4, nf = 200001;
	double *x = malloc(n * sizeof(double)), *w = malloc(n * sizeof(double)),
	       *y = malloc(nb * n * sizeof(double));
	double T = uniform(100, 2000);
	for (size_t j = 0; j < n; j++) {
		double t;
		do
			t = uniform(0, T);
		while (t > 0.4 * T && t < 0.55 * T);
		x[j] = t;
		w[j] = uniform(0.1, 2);
	}
	/* float32: the inputs rounded as the run will see them, so that the
	 * float64 truth below has the same inputs and the error is the
	 * kernel's alone, not float32's rounding of x (phases up to 2e5 rad). */
	if (dt == GPUD_F32)
		for (size_t j = 0; j < n; j++) {
			x[j] = (float)x[j];
			w[j] = (float)w[j];
		}
	for (size_t b = 0; b < nb; b++) {
		double om = uniform(0.05, 0.9) * 10 * 2 * M_PI * (double)n / T,
		       ph = uniform(0, 6.28);
		for (size_t j = 0; j < n; j++)
			y[b * n + j] = (double)b - 1 + sin(om * x[j] + ph) + uniform(-1, 1);
	}
	if (dt == GPUD_F32)
		for (size_t i = 0; i < nb * n; i++)
			y[i] = (float)y[i];
	double f0 = 2 * M_PI / T, df = (10 * 2 * M_PI * (double)n / T - f0) / (double)nf;
	gpud_handle in[3] = {upload_as(c, dt, x, n), 0, upload_as(c, dt, w, n)};
	{
		void *buf = malloc(nb * n * gpud_dtype_size(dt));
		for (size_t i = 0; i < nb * n; i++) {
			if (dt == GPUD_F32)
				((float *)buf)[i] = (float)y[i];
			else
				((double *)buf)[i] = y[i];
		}
		uint64_t shape[2] = {nb, n};
		ck_assert_msg(gpud_alloc(c, dt, 2, shape, buf, &in[1]) == GPUD_OK, "%s",
			      gpud_errmsg(c));
		free(buf);
	}
	double t0 = wall();
	double *nu = run_batch(c, dt, in, nf, f0, df, "nufft");
	double t_nu = wall() - t0;
	double *di = run_batch(c, dt, in, nf, f0, df, "direct");
	double eps = dt == GPUD_F32 ? 1e-5 : 1e-9, worst = 0;
	gpud_handle x64 = upload_as(c, GPUD_F64, x, n), w64 = upload_as(c, GPUD_F64, w, n);
	for (size_t b = 0; b < nb; b++) {
		/* each series alone: direct in dt (the batch's bits), direct float64 (truth) */
		gpud_handle one[3] = {in[0], upload_as(c, dt, y + b * n, n), in[2]};
		double *alone = run_batch(c, dt, one, nf, f0, df, "direct");
		gpud_handle one64[3] = {x64, upload_as(c, GPUD_F64, y + b * n, n), w64};
		double *ref = run_batch(c, GPUD_F64, one64, nf, f0, df, "direct");
		double big = 0, err = 0;
		for (size_t i = 0; i < 2 * nf; i++) {
			ck_assert_msg(
				memcmp(&di[2 * nf * b + i], &alone[i], sizeof(double)) == 0,
				"direct batch %s series %zu component %zu: %.17g, alone %.17g",
				gpud_dtype_name(dt), b, i, di[2 * nf * b + i], alone[i]);
			big = fmax(big, fabs(ref[i]));
		}
		for (size_t i = 0; i < 2 * nf; i++) {
			double e = fabs(nu[2 * nf * b + i] - ref[i]);
			ck_assert_msg(
				e <= eps * big,
				"nufft batch %s series %zu component %zu: %.17g, direct float64 "
				"%.17g: |error| %.3e > eps %.0e x max %.4g",
				gpud_dtype_name(dt), b, i, nu[2 * nf * b + i], ref[i], e, eps, big);
			err = fmax(err, e / big);
		}
		worst = fmax(worst, err);
		ck_assert(gpud_free(c, &one[1], 1) == GPUD_OK);
		ck_assert(gpud_free(c, &one64[1], 1) == GPUD_OK);
		free(alone);
		free(ref);
	}
	printf("lombscargle batch %-7s B=%zu N=%zu nf=%zu: nufft err/max %.2e (eps %.0e), direct rows "
	       "bit for bit; nufft %.1f ms\n",
	       gpud_dtype_name(dt), nb, n, nf, worst, eps, t_nu * 1e3);
	ck_assert(gpud_free(c, in, 3) == GPUD_OK);
	ck_assert(gpud_free(c, &x64, 1) == GPUD_OK);
	ck_assert(gpud_free(c, &w64, 1) == GPUD_OK);
	free(nu);
	free(di);
	free(x);
	free(w);
	free(y);
}

static void gpu_test_nufft(gpud_client *c)
{
	/* {nx, nf, weights, fm, mode, precenter, legacy, rate} */
	static const struct {
		size_t nx, nf;
		int w, fm, mode, pc, legacy;
		double rate;
	} cases[] = {
		{10, 1000, 0, 0, LS_POWER, 0, 0, 20},
		{10, 10000000, 1, 1, LS_NORMALIZED, 0, 0, 50},
		{100, 10000, 1, 1, LS_NORMALIZED, 0, 0, 20},
		{1000, 100000, 1, 1, LS_AMPLITUDE, 0, 0, 30},
		{1000, 10000000, 0, 0, LS_NORMALIZED, 1, 1, 50},
		{10000, 1000000, 0, 0, LS_NORMALIZED, 1, 0, 40},
		{100000, 1000000, 0, 1, LS_POWER, 0, 0, 10},
		{1000000, 1000, 1, 0, LS_NORMALIZED, 0, 0, 3},
		{1000000, 10000000, 1, 1, LS_AMPLITUDE, 0, 0, 20},
		/* odd and tiny grids: the epilogue's k' and -k' pairs at their ends */
		{50, 1, 0, 0, LS_POWER, 0, 0, 5},
		{200, 2, 1, 1, LS_AMPLITUDE, 0, 0, 5},
		{300, 3, 0, 1, LS_NORMALIZED, 1, 0, 5},
		{5000, 100001, 1, 0, LS_AMPLITUDE, 0, 0, 10},
	};
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	double t0 = wall();
	for (int d = 0; d < 2; d++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			nu_case cs = {cases[i].nx, cases[i].nf,     dts[d],
				      cases[i].w,  cases[i].fm,     cases[i].mode,
				      cases[i].pc, cases[i].legacy, cases[i].rate};
			nufft_case(c, &cs);
		}
	nufft_refuses_arrays(c);
	for (int d = 0; d < 2; d++)
		batch_case(c, dts[d]);
	printf("lombscargle nufft: %.1f s\n", wall() - t0);
}

/* lombscargle_many's GPU test (gpu_test_lombscargle_many.c) */
void gpu_test_lombscargle_many(gpud_client *c);

void gpu_test_lombscargle(gpud_client *c, const char *kernel)
{
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	if (strcmp(kernel, "lombscargle_many") == 0) {
		gpu_test_lombscargle_many(c); /* gpu_test_lombscargle_many.c */
		return;
	}
	for (int d = 0; d < 2; d++) {
		gpud_dtype dt = dts[d];
		/* every mode x weights x floating_mean x array/grid */
		for (int grid = 0; grid < 2; grid++)
			for (int wf = 0; wf < 4; wf++)
				for (int mode = 0; mode < 3; mode++) {
					ls_case cs = {300,    5000,    dt,   grid,
						      wf & 1, wf >> 1, mode, (wf + mode) % 2,
						      0,      30.0,    0.5,  10.0};
					run_ls_case(c, &cs);
				}
		/* floating_mean where the cosines hardly vary: low frequencies (phases
		 * 0.3 to 3 rad over the samples), so CC - C² cancels; few samples,
		 * and many. The bound grows with that cancellation (ls_cond): a
		 * fixed 1e-3 for float32 failed 1 run in 6 on the H200 (nx 7,
		 * amplitude: 1.2e-3), and 1e-9 for float64 1 in 6 (nx 2000:
		 * 1.01e-9), both where kappa is large. */
		static const size_t fm_nx[] = {7, 100, 2000};
		for (int grid = 0; grid < 2; grid++)
			for (int i = 0; i < 3; i++)
				for (int mode = 0; mode < 3; mode++) {
					ls_case cs = {fm_nx[i], 4000, dt,    grid, (i + mode) & 1,
						      1,        mode, i & 1, 0,    30.0,
						      0.01,     0.1};
					run_ls_case(c, &cs);
				}
		/* legacy, with precenter and normalize (where it differs) */
		for (int grid = 0; grid < 2; grid++) {
			ls_case cs = {100,           3000, dt, grid, 0,   0,
				      LS_NORMALIZED, 1,    1,  30.0, 0.1, 10.0};
			run_ls_case(c, &cs);
		}
		/* phases |f x| up to 1e6: times over 1e4, frequencies to 100 */
		for (int grid = 0; grid < 2; grid++)
			for (int mode = 0; mode < 2; mode++) {
				ls_case cs = {1000, 20000, dt, grid, 1,    1,
					      mode, 0,     0,  1e4,  50.0, 100.0};
				run_ls_case(c, &cs);
			}
		/* sizes: one sample, a tile and one, one frequency, 2^20 frequencies */
		static const size_t nxs[] = {1, 257, 2000, 64};
		static const size_t nfs[] = {77, 1, 999, 1u << 20};
		for (int i = 0; i < 4; i++)
			for (int grid = 0; grid < 2; grid++) {
				ls_case cs = {nxs[i], nfs[i], dt, grid, i & 1, (i >> 1) & 1,
					      0,      0,      0,  30.0, 0.5,   10.0};
				run_ls_case(c, &cs);
			}
		/* unweighted grids without floating_mean over enough frequencies
		 * that float64 takes 16 a thread (direct.cuh's KWIDE), every mode */
		for (int mode = 0; mode < 3; mode++) {
			ls_case cs = {64,   1u << 20, dt, 1,    0,   0,
				      mode, mode & 1, 0,  30.0, 0.5, 10.0};
			run_ls_case(c, &cs);
		}
		bad_weights(c, dt);
	}
	gpu_test_nufft(c);
}
