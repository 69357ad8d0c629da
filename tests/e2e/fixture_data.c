/*
 * tests/e2e/fixture_data.c — the end-to-end suite's data: seeded lombscargle
 * inputs, conversion between dtypes, the reference periodogram (scipy's
 * algorithms written out in float64) and its tolerance, and .npy files for
 * gpuctl's arguments. See e2e.h. Called from the test's own thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/e2e/e2e.h"

#include <nng/protocol/reqrep0/req.h>

/* --- data and the reference periodogram ------------------------------------------------- */

/* Random non-uniform sample times, non-zero values of both signs, frequencies > 0. */
void gen_ls(uint64_t seed, size_t nx, size_t nf, double *x, double *y, double *f)
{
	uint64_t s = seed;
	for (size_t i = 0; i < nx; i++) {
		x[i] = 20.0 * harness_rng_unit(&s);
		double mag = 0.1 + 2.0 * harness_rng_unit(&s);
		y[i] = (harness_rng_next(&s) & 1) ? mag : -mag * 0.5;
		y[i] += 0.3 * cos(1.7 * x[i]); /* a tone to find; stays non-zero */
		if (y[i] == 0)
			y[i] = 0.25;
	}
	for (size_t i = 0; i < nf; i++)
		f[i] = 0.01 + 5.0 * harness_rng_unit(&s);
}

void round_to_f32(double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (double)(float)v[i];
}

/* v as a malloc'd array of dtype dt (F32, F64, I32 or I64). */
void *to_dtype(const double *v, size_t n, gpud_dtype dt)
{
	void *p = malloc(n * gpud_dtype_size(dt) + 1);
	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++) {
		switch (dt) {
		case GPUD_F32:
			((float *)p)[i] = (float)v[i];
			break;
		case GPUD_F64:
			((double *)p)[i] = v[i];
			break;
		case GPUD_I32:
			((int32_t *)p)[i] = (int32_t)v[i];
			break;
		case GPUD_I64:
			((int64_t *)p)[i] = (int64_t)v[i];
			break;
		default:
			break;
		}
	}
	return p;
}

double elem(const void *p, gpud_dtype dt, size_t i)
{
	return dt == GPUD_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* scipy <= 1.14 (legacy=true), written out as its Cython loop (Townsend). */
static void ls_ref_legacy(const double *x, const double *y, size_t nx, const double *f, size_t nf,
			  int precenter, int normalize, double *out)
{
	double mean = 0, dot = 0;
	for (size_t j = 0; j < nx; j++) {
		mean += y[j];
		dot += y[j] * y[j];
	}
	mean /= (double)nx;
	for (size_t i = 0; i < nf; i++) {
		double xc = 0, xs = 0, cc = 0, ss = 0, cs = 0;
		for (size_t j = 0; j < nx; j++) {
			double yj = precenter ? y[j] - mean : y[j];
			double c = cos(f[i] * x[j]), s = sin(f[i] * x[j]);
			xc += yj * c;
			xs += yj * s;
			cc += c * c;
			ss += s * s;
			cs += c * s;
		}
		double tau = atan2(2 * cs, cc - ss) / (2 * f[i]);
		double c_tau = cos(f[i] * tau), s_tau = sin(f[i] * tau);
		double c_tau2 = c_tau * c_tau, s_tau2 = s_tau * s_tau, cs_tau = 2 * c_tau * s_tau;
		out[i] = 0.5 * (((c_tau * xc + s_tau * xs) * (c_tau * xc + s_tau * xs)) /
					(c_tau2 * cc + cs_tau * cs + s_tau2 * ss) +
				((c_tau * xs - s_tau * xc) * (c_tau * xs - s_tau * xc)) /
					(c_tau2 * ss - cs_tau * cs + s_tau2 * cc));
		if (normalize)
			out[i] *= 2 / dot;
	}
}

/*
 * scipy.signal.lombscargle (scipy >= 1.15) from its definition: at each
 * frequency the weighted least-squares fit y ~ A cos(f x) + B sin(f x)
 * (+ c with floating_mean), weights normalised to sum 1, solved through its
 * normal equations (Cramer's rule); p = 2 sum w (fit - offset)^2, the offset
 * being the weighted mean of y with floating_mean and 0 without. power:
 * p N / 4; normalize: p / (2 YY), YY = sum w y^2 (- mean^2 with floating_mean);
 * amplitude: A + iB. y is centred first (unweighted mean) with precenter.
 */
void ls_ref_full(const double *x, const double *y, size_t nx, const double *f, size_t nf,
		 const ls_opts *o, double *re, double *im)
{
	if (o->legacy) {
		ls_ref_legacy(x, y, nx, f, nf, o->precenter, o->normalize == 1, re);
		if (im)
			memset(im, 0, nf * sizeof(double));
		return;
	}
	double *w = malloc(nx * sizeof(double)), *v = malloc(nx * sizeof(double));
	double wsum = 0, mean = 0, ybar = 0, yy = 0;
	ck_assert(w && v);
	for (size_t j = 0; j < nx; j++) {
		wsum += o->w ? o->w[j] : 1;
		mean += y[j];
	}
	mean /= (double)nx;
	for (size_t j = 0; j < nx; j++) {
		w[j] = (o->w ? o->w[j] : 1) / wsum;
		v[j] = o->precenter ? y[j] - mean : y[j];
		ybar += w[j] * v[j];
		yy += w[j] * v[j] * v[j];
	}
	if (!o->floating_mean)
		ybar = 0;
	yy -= ybar * ybar;
	for (size_t i = 0; i < nf; i++) {
		/* sums of w times cc, cs, ss, c, s, and of w y times c, s */
		double cc = 0, cs = 0, ss = 0, c1 = 0, s1 = 0, yc = 0, ys = 0, a, b;
		for (size_t j = 0; j < nx; j++) {
			double c = cos(f[i] * x[j]), s = sin(f[i] * x[j]);
			cc += w[j] * c * c;
			cs += w[j] * c * s;
			ss += w[j] * s * s;
			c1 += w[j] * c;
			s1 += w[j] * s;
			yc += w[j] * v[j] * c;
			ys += w[j] * v[j] * s;
		}
		if (o->floating_mean) { /* the 3x3 system with the constant, by Cramer's rule */
			double m[3][3] = {{cc, cs, c1}, {cs, ss, s1}, {c1, s1, 1}};
			double r[3] = {yc, ys, ybar};
#define DET3(a00, a01, a02, a10, a11, a12, a20, a21, a22)                                          \
	((a00) * ((a11) * (a22) - (a12) * (a21)) - (a01) * ((a10) * (a22) - (a12) * (a20)) +       \
	 (a02) * ((a10) * (a21) - (a11) * (a20)))
			double d = DET3(m[0][0], m[0][1], m[0][2], m[1][0], m[1][1], m[1][2],
					m[2][0], m[2][1], m[2][2]);
			a = DET3(r[0], m[0][1], m[0][2], r[1], m[1][1], m[1][2], r[2], m[2][1],
				 m[2][2]) /
			    d;
			b = DET3(m[0][0], r[0], m[0][2], m[1][0], r[1], m[1][2], m[2][0], r[2],
				 m[2][2]) /
			    d;
#undef DET3
		} else {
			double d = cc * ss - cs * cs;
			a = (yc * ss - ys * cs) / d;
			b = (ys * cc - yc * cs) / d;
		}
		double p = 0, off = 0;
		if (o->floating_mean) /* the fit's offset: the mean the fit leaves */
			off = ybar - a * c1 - b * s1;
		for (size_t j = 0; j < nx; j++) {
			double fit = a * cos(f[i] * x[j]) + b * sin(f[i] * x[j]) + off - ybar;
			p += w[j] * fit * fit;
		}
		p *= 2;
		if (im)
			im[i] = 0;
		if (o->normalize == 2) {
			re[i] = a;
			if (im)
				im[i] = b;
		} else if (o->normalize == 1) {
			re[i] = p / (2 * yy);
		} else {
			re[i] = p * (double)nx / 4;
		}
	}
	free(w);
	free(v);
}

/* scipy.signal.lombscargle(x, y, f, precenter, normalize) of today's scipy (ls_ref_full). */
void ls_ref(const double *x, const double *y, size_t nx, const double *f, size_t nf, int precenter,
	    int normalize, double *out)
{
	ls_opts o = {.precenter = precenter, .normalize = normalize ? 1 : 0};
	ls_ref_full(x, y, nx, f, nf, &o, out, NULL);
}

/*
 * Compares got (dtype dt) with ref: returns max |got - ref| / max |ref|, or
 * INFINITY if got has a NaN or infinity. *bad gets the worst index.
 */
double rel_err(const void *got, gpud_dtype dt, const double *ref, size_t n, size_t *bad)
{
	double maxref = 0, maxerr = 0;
	*bad = 0;
	for (size_t i = 0; i < n; i++)
		if (fabs(ref[i]) > maxref)
			maxref = fabs(ref[i]);
	for (size_t i = 0; i < n; i++) {
		double g = elem(got, dt, i);
		if (!isfinite(g)) {
			*bad = i;
			return INFINITY;
		}
		if (fabs(g - ref[i]) > maxerr) {
			maxerr = fabs(g - ref[i]);
			*bad = i;
		}
	}
	return maxref > 0 ? maxerr / maxref : maxerr;
}

double tol_for(gpud_dtype dt)
{
	return dt == GPUD_F64 ? 1e-9 : 1e-4;
}

void assert_matches(const void *got, gpud_dtype dt, const double *ref, size_t n, const char *what)
{
	size_t bad;
	double e = rel_err(got, dt, ref, n, &bad);
	ck_assert_msg(e <= tol_for(dt),
		      "%s: %s result differs from the reference: relative error %.3g > %.0g "
		      "(element %zu: got %.17g, expected %.17g)",
		      what, gpud_dtype_name(dt), e, tol_for(dt), bad, elem(got, dt, bad), ref[bad]);
}

void save_npy(const char *path, gpud_dtype dt, int ndim, const uint64_t *shape, const void *data)
{
	gpud_array a;
	char err[512];
	memset(&a, 0, sizeof(a));
	a.dtype = dt;
	a.ndim = ndim;
	memcpy(a.shape, shape, (size_t)ndim * sizeof(uint64_t));
	a.data = (void *)data;
	a.nbytes = gpud_shape_bytes(shape, ndim, gpud_dtype_size(dt));
	ck_assert_msg(gpud_npy_save(path, &a, err, sizeof(err)) == 0, "gpud_npy_save: %s", err);
}

void npy_arg(char *arg, size_t len, const char *name, const char *file, gpud_dtype dt,
	     const double *v, size_t n)
{
	char path[700];
	path_in_dir(path, sizeof(path), file);
	save_vec(path, dt, v, n);
	snprintf(arg, len, "%s=%s", name, path);
}

void save_vec(const char *path, gpud_dtype dt, const double *v, size_t n)
{
	uint64_t shape[1] = {n};
	void *p = to_dtype(v, n, dt);
	save_npy(path, dt, 1, shape, p);
	free(p);
}
