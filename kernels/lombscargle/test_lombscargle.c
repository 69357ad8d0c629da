/*
 * kernels/lombscargle/test_lombscargle.c — unit tests of kernels/lombscargle/lombscargle.c, called the
 * way gpud calls it: found in the kernel table, arguments bound and checked,
 * the output allocated from what check expects, then the cpu entry's run over the items
 * (whole, and in pieces). Values are worked by hand below (scipy >= 1.15's
 * modes: weights, floating_mean, normalize=normalize and amplitude, the grid;
 * and legacy=true, scipy <= 1.14), random inputs are compared against an
 * independent float64 implementation in this file (a weighted least-squares
 * fit for today's scipy, Townsend's loop for legacy) in every mode, both
 * dtypes, frequencies as an array and as the grid; check's refusals and the
 * verdict: test_lombscargle_check.c; method=nufft and batches:
 * test_lombscargle_nufft.c; the harness: test_lombscargle_util.c.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/test_lombscargle.h"
#include "tests/unit/suites.h"

/* --- hand-worked values ------------------------------------------------------------ */

/*
 * Today's scipy (>= 1.15), with the weights normalised to w_j (sum 1), Y_j =
 * y_j (minus mean(y), unweighted, with precenter), c_j = cos(f x_j - tau),
 * s_j = sin(f x_j - tau):
 *
 *   tau makes sum w c s vanish (with floating_mean, the covariance);
 *   YC = sum w Y c, YS = sum w Y s, CC = sum w c^2, SS = 1 - CC;
 *   floating_mean: YC -= Ybar C, YS -= Ybar S, CC -= C^2, SS -= S^2, with
 *     Ybar = sum w Y, C = sum w c, S = sum w s;
 *   a = YC / CC, b = YS / SS: the weighted least-squares fit
 *     Y ~ a c + b s (+ an offset with floating_mean), p = 2 (a YC + b YS);
 *   power: p N / 4; normalize: p / (2 YY), YY = sum w Y^2 (- Ybar^2 with
 *     floating_mean); amplitude: (a + ib) e^{i tau} = A + iB, where
 *     Y ~ A cos(f x) + B sin(f x) (+ offset) in the unrotated basis.
 *
 * So where the model fits the samples exactly, amplitude is the fit's A + iB,
 * normalize is 1 and p = 2 YY. Every value below was also checked with
 * scipy's algorithm written out in Python.
 *
 * A. x = [0, pi/2], f = 1: c = [1, 0], s = [0, 1], tau = 0, w = 1/2 each.
 *    a = Y_0, b = Y_1, p = 2 (Y_0^2 + Y_1^2) / 2 = Y_0^2 + Y_1^2, power = p / 2.
 *      y = [1, 1]: power 1; normalize: YY = 1, 2 / 2 = 1; precenter: Y = [0, 0],
 *        power 0, and normalize 0 / (2 * 0): NaN, as scipy gives (0 * 0.5 / 0);
 *        legacy=true (scipy <= 1.14) normalizes by 2 / sum y^2 of the uncentred
 *        y: 0 * 2 / 2 = 0.
 *      y = [1, 3]: power 5; normalize: YY = 5, 10 / 10 = 1; amplitude 1 + 3i;
 *        precenter, Y = [-1, 1]: power 1, amplitude -1 + i, normalize over the
 *        centred YY = 1: 2 / 2 = 1 (legacy: 2 / (1 + 9) * 1 = 0.2);
 *        normalize legacy without precenter: 2 / 10 * 5 = 1.
 * B. x = [0, pi/4], y = [1, 0]: at f = 1 (tau = pi/8) the fit A cos x + B sin x
 *    through (0, 1) and (pi/4, 0) is A = 1, B = -1: amplitude 1 - i, p = 2 YY =
 *    1, power 1/2, normalize 1. At f = 2 the phases are [0, pi/2]: A = 1, B = 0,
 *    power 1/2, normalize 1. The grid f0 = 1, df = 1, nf = 2 is the same [1, 2].
 * W. x = [0, pi/2, pi], y = [2, 1, -1], f = 1: c = [1, 0, -1], s = [0, 1, 0].
 *    Unweighted (w = 1/3): CC = 2/3, SS = 1/3, YC = (2 + 1) / 3 = 1, YS = 1/3,
 *      a = 3/2, b = 1, p = 2 (3/2 + 1/3) = 11/3: power 11/3 * 3/4 = 11/4;
 *      YY = (4 + 1 + 1) / 3 = 2, normalize 11/12; amplitude 3/2 + i.
 *    weights [1, 1, 2] (w = [1/4, 1/4, 1/2]; [0.5, 0.5, 1] is the same):
 *      CC = 3/4, SS = 1/4, YC = 2/4 + 1/2 = 1, YS = 1/4, a = 4/3, b = 1,
 *      p = 2 (4/3 + 1/4) = 19/6: power 19/6 * 3/4 = 19/8; YY = 4/4 + 1/4 +
 *      1/2 = 7/4, normalize 19/6 / (7/2) = 19/21; amplitude 4/3 + i.
 *    floating_mean: y = A cos x + B sin x + c fits exactly: A = (y_0 - y_2)/2 =
 *      3/2, c = (y_0 + y_2)/2 = 1/2, B = y_1 - c = 1/2: amplitude 3/2 + i/2 and
 *      normalize 1 whatever the weights. Unweighted, YY = 2 - (2/3)^2 = 14/9,
 *      p = 28/9, power 28/9 * 3/4 = 7/3 (precenter changes nothing: the offset
 *      takes the mean). With weights [1, 1, 2], Ybar = 1/4, YY = 7/4 - 1/16 =
 *      27/16, p = 27/8, power 81/32; there CS = 0 - C S = 1/16 with C = -1/4,
 *      S = 1/4, so tau = atan(1/4) / 2 is not 0 and amplitude checks the
 *      rotation back by e^{i tau}.
 */
#define PI2 (M_PI / 2)
#define PI4 (M_PI / 4)
/* clang-format off */
#define NONE {0}
#define XA {0, PI2}
#define XB {0, PI4}
#define XW {0, PI2, M_PI}
#define YW {2, 1, -1}
#define POW LS_POWER
#define NORM LS_NORMALIZED
#define AMP LS_AMPLITUDE
#define OM OMIT

/* One case in two lines: its name, then its values in columns. */
static const struct hand_case {
	const char *what;
	int n;
	double x[3], y[3], w[3]; /* w[0] == 0: no weights */
	int nf;
	double f[2];
	int grid; /* the frequencies as the grid f0 = f[0], df = f[1] - f[0] */
	int precenter, normalize, floating_mean, legacy;
	double re[2], im[2];
} hand[] = {
	/* what
	 n  x   y       w              nf  f       grid  pre  norm  fm  leg  re           im */
	{"A [1,1]",
	 2, XA, {1, 1}, NONE,          1,  {1},    0,    OM,  OM,   OM, OM,  {1},         NONE},
	{"A [1,1] power",
	 2, XA, {1, 1}, NONE,          1,  {1},    0,    0,   POW,  0,  0,   {1},         NONE},
	{"A [1,1] normalize",
	 2, XA, {1, 1}, NONE,          1,  {1},    0,    OM,  NORM, OM, OM,  {1},         NONE},
	{"A [1,1] precenter",
	 2, XA, {1, 1}, NONE,          1,  {1},    0,    1,   OM,   OM, OM,  {0},         NONE},
	{"A [1,1] precenter normalize: 0/0",
	 2, XA, {1, 1}, NONE,          1,  {1},    0,    1,   NORM, OM, OM,  {NAN},       NONE},
	{"A [1,1] precenter normalize legacy",
	 2, XA, {1, 1}, NONE,          1,  {1},    0,    1,   NORM, OM, 1,   {0},         NONE},
	{"A [1,3]",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    OM,  OM,   OM, OM,  {5},         NONE},
	{"A [1,3] normalize",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    0,   NORM, OM, OM,  {1},         NONE},
	{"A [1,3] precenter",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    1,   POW,  OM, OM,  {1},         NONE},
	{"A [1,3] precenter normalize",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    1,   NORM, OM, 0,   {1},         NONE},
	{"A [1,3] precenter normalize legacy",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    1,   NORM, OM, 1,   {0.2},       NONE},
	{"A [1,3] normalize legacy",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    OM,  NORM, 0,  1,   {1},         NONE},
	{"A [1,3] power legacy",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    OM,  OM,   OM, 1,   {5},         NONE},
	{"A [1,3] amplitude",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    OM,  AMP,  OM, OM,  {1},         {3}},
	{"A [1,3] precenter amplitude",
	 2, XA, {1, 3}, NONE,          1,  {1},    0,    1,   AMP,  OM, 0,   {-1},        {1}},
	{"B",
	 2, XB, {1, 0}, NONE,          2,  {1, 2}, 0,    OM,  OM,   OM, OM,  {0.5, 0.5},  NONE},
	{"B legacy",
	 2, XB, {1, 0}, NONE,          2,  {1, 2}, 0,    0,   OM,   OM, 1,   {0.5, 0.5},  NONE},
	{"B normalize",
	 2, XB, {1, 0}, NONE,          2,  {1, 2}, 0,    OM,  NORM, OM, OM,  {1, 1},      NONE},
	{"B amplitude",
	 2, XB, {1, 0}, NONE,          2,  {1, 2}, 0,    OM,  AMP,  OM, OM,  {1, 1},      {-1, 0}},
	{"B grid amplitude",
	 2, XB, {1, 0}, NONE,          2,  {1, 2}, 1,    OM,  AMP,  OM, OM,  {1, 1},      {-1, 0}},
	{"B grid",
	 2, XB, {1, 0}, NONE,          2,  {1, 2}, 1,    OM,  POW,  0,  0,   {0.5, 0.5},  NONE},
	{"W",
	 3, XW, YW,     NONE,          1,  {1},    0,    OM,  OM,   OM, OM,  {2.75},      NONE},
	{"W normalize",
	 3, XW, YW,     NONE,          1,  {1},    0,    OM,  NORM, OM, OM,  {11.0 / 12}, NONE},
	{"W amplitude",
	 3, XW, YW,     NONE,          1,  {1},    0,    OM,  AMP,  OM, OM,  {1.5},       {1}},
	{"W weights",
	 3, XW, YW,     {1, 1, 2},     1,  {1},    0,    OM,  OM,   OM, OM,  {19.0 / 8},  NONE},
	{"W weights scaled",
	 3, XW, YW,     {0.5, 0.5, 1}, 1,  {1},    0,    OM,  POW,  OM, OM,  {19.0 / 8},  NONE},
	{"W weights normalize",
	 3, XW, YW,     {1, 1, 2},     1,  {1},    0,    OM,  NORM, OM, OM,  {19.0 / 21}, NONE},
	{"W weights amplitude",
	 3, XW, YW,     {1, 1, 2},     1,  {1},    0,    OM,  AMP,  OM, OM,  {4.0 / 3},   {1}},
	{"W floating_mean",
	 3, XW, YW,     NONE,          1,  {1},    0,    OM,  OM,   1,  OM,  {7.0 / 3},   NONE},
	{"W floating_mean normalize",
	 3, XW, YW,     NONE,          1,  {1},    0,    OM,  NORM, 1,  OM,  {1},         NONE},
	{"W floating_mean amplitude",
	 3, XW, YW,     NONE,          1,  {1},    0,    OM,  AMP,  1,  OM,  {1.5},       {0.5}},
	{"W floating_mean precenter",
	 3, XW, YW,     NONE,          1,  {1},    0,    1,   OM,   1,  OM,  {7.0 / 3},   NONE},
	{"W floating_mean weights",
	 3, XW, YW,     {1, 1, 2},     1,  {1},    0,    OM,  POW,  1,  0,   {81.0 / 32}, NONE},
	{"W floating_mean weights normalize",
	 3, XW, YW,     {1, 1, 2},     1,  {1},    0,    OM,  NORM, 1,  OM,  {1},         NONE},
	{"W floating_mean weights amplitude",
	 3, XW, YW,     {1, 1, 2},     1,  {1},    0,    OM,  AMP,  1,  OM,  {1.5},       {0.5}},
};
/* clang-format on */
#define NHAND ((int)(sizeof(hand) / sizeof(hand[0])))

static int close_to(double got, double want, double tol)
{
	if (isnan(want))
		return isnan(got);
	return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* Loop index: case i in float64 for i < NHAND, case i - NHAND in float32 after. */
START_TEST(test_hand_worked)
{
	int i = _i % NHAND;
	const struct hand_case *h = &hand[i];
	gpud_dtype dt = _i < NHAND ? GPUD_F64 : GPUD_F32;
	double tol = dt == GPUD_F64 ? 1e-12 : 1e-6;
	double re[2], im[2];
	ls_case c = ls_lcase(h->x, h->y, (size_t)h->n);

	if (h->grid) {
		ls_set_grid(&c, h->f[0], h->nf > 1 ? h->f[1] - h->f[0] : 0.5, h->nf);
	} else {
		c.f = h->f;
		c.nf = (size_t)h->nf;
	}
	if (h->w[0] != 0)
		c.w = h->w;
	c.precenter = h->precenter;
	c.normalize = h->normalize;
	c.normalize_as = i % 3; /* power and normalize given as words, bools and integers */
	c.floating_mean = h->floating_mean;
	c.legacy = h->legacy;
	run_ls(dt, &c, re, im, isnan(h->re[0]));
	for (int j = 0; j < h->nf; j++) {
		ck_assert_msg(close_to(re[j], h->re[j], tol),
			      "%s, %s, pgram[%d]: got %.17g, want %.17g", h->what,
			      gpud_dtype_name(dt), j, re[j], h->re[j]);
		if (h->normalize == LS_AMPLITUDE)
			ck_assert_msg(close_to(im[j], h->im[j], tol),
				      "%s, %s, pgram[%d].imag: got %.17g, want %.17g", h->what,
				      gpud_dtype_name(dt), j, im[j], h->im[j]);
	}
}
END_TEST

/* Several frequencies at once: case A's y = [1, 3] at f = 1 five times, as an array and as
 * the grid f0 = 1, df = 0; case B with x halved at f = 2 (the same f x). */
START_TEST(test_hand_worked_many_freqs)
{
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	double tol = dt == GPUD_F64 ? 1e-12 : 1e-6;
	double x[2] = {0.0, M_PI / 2}, y[2] = {1, 3}, f[5] = {1, 1, 1, 1, 1}, got[5], im[5];
	ls_case c = ls_lcase(x, y, 2);

	c.f = f;
	c.nf = 5;
	run_ls(dt, &c, got, NULL, 0);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(fabs(got[i] - 5.0) <= tol, "pgram[%d] = %.17g", i, got[i]);
	c.f = NULL;
	ls_set_grid(&c, 1, 0, 5);
	c.normalize = LS_AMPLITUDE;
	run_ls(dt, &c, got, im, 0);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(fabs(got[i] - 1) <= tol && fabs(im[i] - 3) <= tol,
			      "pgram[%d] = %.17g%+.17gi", i, got[i], im[i]);

	double xb[2] = {0.0, M_PI / 8}, yb[2] = {1, 0}, fb[2] = {2, 2};
	c = ls_lcase(xb, yb, 2);
	c.f = fb;
	c.nf = 2;
	c.precenter = 0;
	c.normalize = LS_POWER;
	run_ls(dt, &c, got, NULL, 0);
	ck_assert_msg(fabs(got[0] - 0.5) <= tol, "pgram[0] = %.17g", got[0]);
	ck_assert_msg(fabs(got[1] - 0.5) <= tol, "pgram[1] = %.17g", got[1]);
}
END_TEST

/*
 * The sums the reference takes once: y = [1, 3], weights [1, 3], precenter:
 * shift = mean(y) = 2 (unweighted), the weights' sum 4, w = [1/4, 3/4], the
 * centred Y = [-1, 1]: sum w Y = 1/2, sum w Y^2 = 1; dot(y, y) = 10 of the y
 * as given. Without weights and precenter: n, and the plain means.
 */
START_TEST(test_ref_sums)
{
	double x[2] = {0, 1}, y[2] = {1, 3}, w[2] = {1, 3}, f[1] = {1};
	ls_case c = ls_lcase(x, y, 2);
	ls_bound b;
	ls_sums s;
	char err[512];

	c.f = f;
	c.nf = 1;
	c.w = w;
	c.precenter = 1;
	ck_assert_msg(ls_bind(GPUD_F64, &c, &b, err, sizeof(err)) == 0, "%s", err);
	lombscargle_ref_sums(&b.a, &s);
	ck_assert_double_eq(s.shift, 2);
	ck_assert_double_eq(s.wsum, 4);
	ck_assert_double_eq(s.y1, 0.5);
	ck_assert_double_eq(s.y2, 1);
	ck_assert_double_eq(s.ydot, 10);
	ls_unbind(&b);

	c.w = NULL;
	c.precenter = OMIT;
	ck_assert_msg(ls_bind(GPUD_F32, &c, &b, err, sizeof(err)) == 0, "%s", err);
	lombscargle_ref_sums(&b.a, &s);
	ck_assert_double_eq(s.shift, 0);
	ck_assert_double_eq(s.wsum, 2);
	ck_assert_double_eq(s.y1, 2);
	ck_assert_double_eq(s.y2, 5);
	ck_assert_double_eq(s.ydot, 10);
	ls_unbind(&b);
}
END_TEST

/* --- an independent reference ------------------------------------------------------ */

/*
 * Solves the m x m system M c = r (m <= 3) by Gaussian elimination with
 * partial pivoting.
 */
static void solve(int m, double M[3][3], double r[3], double c[3])
{
	for (int col = 0; col < m; col++) {
		int piv = col;
		for (int i = col + 1; i < m; i++)
			if (fabs(M[i][col]) > fabs(M[piv][col]))
				piv = i;
		for (int j = 0; j < m; j++) {
			double t = M[col][j];
			M[col][j] = M[piv][j];
			M[piv][j] = t;
		}
		double t = r[col];
		r[col] = r[piv];
		r[piv] = t;
		for (int i = col + 1; i < m; i++) {
			double q = M[i][col] / M[col][col];
			for (int j = col; j < m; j++)
				M[i][j] -= q * M[col][j];
			r[i] -= q * r[col];
		}
	}
	for (int i = m - 1; i >= 0; i--) {
		double v = r[i];
		for (int j = i + 1; j < m; j++)
			v -= M[i][j] * c[j];
		c[i] = v / M[i][i];
	}
}

/* scipy <= 1.14, written out as its Cython loop (Townsend), in float64. */
static void reference_legacy(const double *x, const double *y, size_t n, const double *f, size_t nf,
			     int precenter, int normalize, double *out)
{
	double mean = 0, dot = 0;

	for (size_t j = 0; j < n; j++) {
		mean += y[j];
		dot += y[j] * y[j];
	}
	mean /= (double)n;
	for (size_t i = 0; i < nf; i++) {
		double xc = 0, xs = 0, cc = 0, ss = 0, cs = 0;
		for (size_t j = 0; j < n; j++) {
			double c = cos(f[i] * x[j]), s = sin(f[i] * x[j]);
			double v = precenter ? y[j] - mean : y[j];
			xc += v * c;
			xs += v * s;
			cc += c * c;
			ss += s * s;
			cs += c * s;
		}
		double tau = atan2(2 * cs, cc - ss) / (2 * f[i]);
		double ct = cos(f[i] * tau), st = sin(f[i] * tau);
		double a = ct * xc + st * xs, b = ct * xs - st * xc;
		out[i] = 0.5 * (a * a / (ct * ct * cc + 2 * ct * st * cs + st * st * ss) +
				b * b / (ct * ct * ss - 2 * ct * st * cs + st * st * cc));
		if (normalize)
			out[i] *= 2 / dot;
	}
}

/*
 * Today's scipy from its definition rather than its algorithm: at each
 * frequency the weighted least-squares fit y ~ A cos(f x) + B sin(f x)
 * (+ c with floating_mean) through the normal equations, in float64; p is
 * twice the fit's weighted sum of squares about the offset (about 0 without
 * floating_mean). w NULL: equal weights.
 */
static void reference(const double *x, const double *y, const double *w, size_t n, const double *f,
		      size_t nf, int precenter, int mode, int fm, double *re, double *im)
{
	double *wn = malloc(n * sizeof(double)), *yc = malloc(n * sizeof(double));
	double wsum = 0, mean = 0, ybar = 0, yy = 0;

	ck_assert(wn && yc);
	for (size_t j = 0; j < n; j++) {
		wsum += w ? w[j] : 1;
		mean += y[j];
	}
	mean /= (double)n;
	for (size_t j = 0; j < n; j++) {
		wn[j] = (w ? w[j] : 1) / wsum;
		yc[j] = precenter ? y[j] - mean : y[j];
		ybar += wn[j] * yc[j];
		yy += wn[j] * yc[j] * yc[j];
	}
	if (fm)
		yy -= ybar * ybar;
	int m = fm ? 3 : 2;
	for (size_t i = 0; i < nf; i++) {
		double M[3][3] = {{0}}, r[3] = {0}, coef[3] = {0};
		for (size_t j = 0; j < n; j++) {
			double basis[3] = {cos(f[i] * x[j]), sin(f[i] * x[j]), 1};
			for (int u = 0; u < m; u++) {
				r[u] += wn[j] * basis[u] * yc[j];
				for (int v = 0; v < m; v++)
					M[u][v] += wn[j] * basis[u] * basis[v];
			}
		}
		solve(m, M, r, coef);
		double p = 0;
		for (size_t j = 0; j < n; j++) {
			double fit = coef[0] * cos(f[i] * x[j]) + coef[1] * sin(f[i] * x[j]) +
				     (fm ? coef[2] - ybar : 0);
			p += wn[j] * fit * fit;
		}
		p *= 2;
		im[i] = 0;
		if (mode == LS_AMPLITUDE) {
			re[i] = coef[0];
			im[i] = coef[1];
		} else if (mode == LS_NORMALIZED) {
			re[i] = p / (2 * yy);
		} else {
			re[i] = p * (double)n / 4;
		}
	}
	free(wn);
	free(yc);
}

static double rounded(gpud_dtype dt, double v)
{
	return dt == GPUD_F32 ? (double)(float)v : v;
}

/*
 * Loop index: the seed. Every mode: power, normalize and amplitude, each with
 * and without weights (one of them 0), floating_mean and precenter; legacy
 * power and normalize with and without precenter. Both dtypes, the
 * frequencies as an array and as the grid.
 */
START_TEST(test_random_against_reference)
{
	size_t n = 17 + 29 * (size_t)_i, nf = 53;
	double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
	double *w = malloc(n * sizeof(double)), *f = malloc(nf * sizeof(double));
	double *xr = malloc(n * sizeof(double)), *yr = malloc(n * sizeof(double));
	double *wr = malloc(n * sizeof(double)), *fr = malloc(nf * sizeof(double));
	double *want = malloc(nf * sizeof(double)), *want_im = malloc(nf * sizeof(double));
	double *got = malloc(nf * sizeof(double)), *got_im = malloc(nf * sizeof(double));
	int runs = 0;
	ck_assert(x && y && w && f && xr && yr && wr && fr && want && want_im && got && got_im);

	ls_rng_state = 0x853c49e6748fea9bull * (uint64_t)(_i + 1);
	double t = 0;
	for (size_t j = 0; j < n; j++) {
		t += ls_uniform(0.01, 0.5); /* irregular, increasing sample times */
		x[j] = t;
		y[j] = 1.5 + ls_uniform(-2, 2);
		w[j] = ls_uniform(0.1, 2);
	}
	w[n / 2] = 0; /* a zero weight is allowed */
	for (size_t i = 0; i < nf; i++)
		f[i] = ls_uniform(0.5, 25);
	double f0 = ls_uniform(0.5, 1), df = ls_uniform(0.05, 0.4);

	for (int dti = 0; dti < 2; dti++) {
		gpud_dtype dt = dti ? GPUD_F32 : GPUD_F64;
		/* the float32 run sees its arrays rounded; so does the reference (the
		 * grid is float64 scalars, for both dtypes) */
		for (size_t j = 0; j < n; j++) {
			xr[j] = rounded(dt, x[j]);
			yr[j] = rounded(dt, y[j]);
			wr[j] = rounded(dt, w[j]);
		}
		for (int grid = 0; grid < 2; grid++) {
			for (size_t i = 0; i < nf; i++)
				fr[i] = grid ? f0 + df * (double)i : rounded(dt, f[i]);
			for (int combo = 0; combo < 28; combo++) {
				int legacy = combo >= 24, mode, pre, fm = 0, weighted = 0;
				if (legacy) {
					mode = combo & 1 ? LS_NORMALIZED : LS_POWER;
					pre = (combo >> 1) & 1;
				} else {
					mode = combo % 3;
					pre = (combo / 3) & 1;
					fm = (combo / 6) & 1;
					weighted = (combo / 12) & 1;
				}
				ls_case c = ls_lcase(x, y, n);
				if (grid)
					ls_set_grid(&c, f0, df, (int64_t)nf);
				else {
					c.f = f;
					c.nf = nf;
				}
				c.w = weighted ? w : NULL;
				c.precenter = pre;
				c.floating_mean = legacy ? OMIT : fm;
				c.legacy = legacy ? 1 : (combo & 1 ? 0 : OMIT);
				c.normalize = mode;
				c.normalize_as = (_i + combo) % 3;
				if (legacy) {
					reference_legacy(xr, yr, n, fr, nf, pre,
							 mode == LS_NORMALIZED, want);
					memset(want_im, 0, nf * sizeof(double));
				} else {
					reference(xr, yr, weighted ? wr : NULL, n, fr, nf, pre,
						  mode, fm, want, want_im);
				}
				run_ls(dt, &c, got, got_im, 0);
				runs++;
				for (size_t i = 0; i < nf; i++) {
					double wv = rounded(dt, want[i]),
					       wi = rounded(dt, want_im[i]);
					double scale = fmax(1.0, fmax(fabs(wv), fabs(wi)));
					double tol = (dt == GPUD_F32 ? 1e-6 : 1e-9) * scale;
					int amp = mode == LS_AMPLITUDE;
					ck_assert_msg(fabs(got[i] - wv) <= tol &&
							      (!amp || fabs(got_im[i] - wi) <= tol),
						      "seed %d %s %s mode %d precenter %d "
						      "floating_mean %d weights %d legacy %d "
						      "f[%zu] = %g: got %.17g%+.17gi, want "
						      "%.17g%+.17gi",
						      _i, gpud_dtype_name(dt),
						      grid ? "grid" : "array", mode, pre, fm,
						      weighted, legacy, i, fr[i], got[i],
						      amp ? got_im[i] : 0.0, wv, wi);
				}
			}
		}
	}
	ck_assert_int_eq(runs, 2 * 2 * 28);
	free(x);
	free(y);
	free(w);
	free(f);
	free(xr);
	free(yr);
	free(wr);
	free(fr);
	free(want);
	free(want_im);
	free(got);
	free(got_im);
}
END_TEST

/*
 * The grid f0 + df k is the array of those frequencies computed in float64:
 * the same bits out, in every mode. float32 takes f0 and df that float32
 * holds exactly, so that its array is the same frequencies too.
 */
START_TEST(test_grid_equals_array)
{
	gpud_dtype dt = _i ? GPUD_F32 : GPUD_F64;
	const size_t n = 40, nf = 37;
	double x[40], y[40], w[40], f[37];
	double g[2][37], gi[2][37];

	ls_rng_state = 0x2545f4914f6cdd1dull;
	for (size_t j = 0; j < n; j++) {
		x[j] = ls_uniform(0, 30);
		y[j] = ls_uniform(-1, 3);
		w[j] = ls_uniform(0.5, 1.5);
	}
	double f0 = dt == GPUD_F32 ? 0.5 : ls_uniform(0.1, 1);
	double df = dt == GPUD_F32 ? 0.125 : ls_uniform(0.01, 0.3);
	for (size_t i = 0; i < nf; i++)
		f[i] = f0 + df * (double)i;
	for (int combo = 0; combo < 12; combo++) {
		for (int grid = 0; grid < 2; grid++) {
			ls_case c = ls_lcase(x, y, n);
			if (grid) {
				ls_set_grid(&c, f0, df, (int64_t)nf);
			} else {
				c.f = f;
				c.nf = nf;
			}
			c.normalize = combo % 3;
			c.floating_mean = (combo / 3) & 1;
			c.w = (combo / 6) & 1 ? w : NULL;
			c.precenter = combo & 1;
			run_ls(dt, &c, g[grid], gi[grid], 0);
		}
		ck_assert_msg(memcmp(g[0], g[1], sizeof(g[0])) == 0,
			      "%s combo %d: the grid differs", gpud_dtype_name(dt), combo);
		if (combo % 3 == LS_AMPLITUDE)
			ck_assert_msg(memcmp(gi[0], gi[1], sizeof(gi[0])) == 0,
				      "%s combo %d: the grid's imaginary parts differ",
				      gpud_dtype_name(dt), combo);
	}
	/* one frequency: the grid's df does not matter */
	ls_case c = ls_lcase(x, y, n);
	ls_set_grid(&c, f0, 1e300, 1);
	run_ls(dt, &c, g[0], NULL, 0);
	c.f = f;
	c.nf = 1;
	c.grid = 0;
	run_ls(dt, &c, g[1], NULL, 0);
	ck_assert(g[0][0] == g[1][0]);
}
END_TEST

Suite *lombscargle_suite(void)
{
	Suite *s = suite_create("lombscargle");
	TCase *tc;

	tc = tcase_create("values");
	tcase_add_loop_test(tc, test_hand_worked, 0, 2 * NHAND);
	tcase_add_loop_test(tc, test_hand_worked_many_freqs, 0, 2);
	tcase_add_test(tc, test_ref_sums);
	tcase_add_loop_test(tc, test_random_against_reference, 0, 4);
	tcase_add_loop_test(tc, test_grid_equals_array, 0, 2);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	lombscargle_check_tcases(s);
	lombscargle_nufft_tcases(s);
	lombscargle_verdict_tcases(s);
	lombscargle_many_tcases(s);
	return s;
}
