/*
 * kernels/lombscargle/nufft.c — lombscargle's NUFFT path: its plan (kernel
 * width and shape for a tolerance, fine grid, the quadrature of the kernel's
 * Fourier transform), shared with the GPU (nufft.cu), and the cpu backend's
 * NUFFT with FFTW3 (loaded at run time, kernels/core/libs.h).
 *
 * Every sum the periodogram needs at f = f0 + k df is one of
 *   sum_j a_j e^{i f x_j} = sum_j (a_j e^{i fc x_j}) e^{i k' theta_j},
 *   theta_j = df x_j mod 2 pi, fc = f0 + k0 df, k' = k - k0,
 * a type-1 NUFFT of the strengths a_j e^{i fc x_j} at the points theta_j:
 * w e^{ifx} and w y e^{ifx} at theta_j, w e^{2ifx} (for CC and CS) at
 * 2 theta_j with the strengths w e^{2 i fc x_j}. Each is spread onto a fine
 * grid (nfine >= 2m points) with the exponential-of-semicircle kernel
 * (Barnett, Magland, af Klinteberg, SIAM J. Sci. Comput. 41 (2019): width
 * ns = ceil(log10(10 / tol)) cells and beta = 2.30 ns at upsampling 2, as
 * finufft chooses them), transformed by an FFT, and divided by the kernel's
 * Fourier transform at each mode (Gauss-Legendre quadrature, as finufft).
 * Phases are reduced in cycles with the frequencies in double-double
 * (ls_frac_dd, ls_nufft_cycles), as the direct kernel holds its frequency
 * as hi + lo, so their error is the direct kernel's. The epilogue (nufft.h) is the direct kernel's.
 *
 * The cpu backend runs item ranges [lo, hi) on its workers: each range is a
 * grid of its own (f0 + lo df, hi - lo frequencies), transformed alone, so
 * chunks and cancellation work as for the direct reference. Each call owns
 * its buffers; FFTW's planner is locked inside libs.c. State: the
 * quadrature of each kernel width (quad[]), made once by whichever thread
 * plans first (pthread_once) and only read after.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/libs.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/nufft.h"

double lombscargle_eps(const kernel_args *a)
{
	if (a->v[LS_EPS].present)
		return a->v[LS_EPS].s.f64;
	return a->v[LS_X].arr.dtype == GPUD_F32 ? 1e-5 : 1e-9;
}

/*
 * Whether a run spreads and transforms in float32 grids: float32 does, but
 * in float64 grids where the epilogue divides the sums' error by small
 * numbers: the amplitude (by CC and SS) and floating_mean (by CC - C^2).
 * There float32 grids (C2C, float atomics) missed eps = 1e-5 on 4 of 40
 * random problems of 30 to 400 weighted samples (2.2e-5 to 5.5e-5 of the
 * row's largest value against float64's direct kernel on the same inputs,
 * H200; with float64 grids at most 2.4e-6 in every mode); the power and
 * normalize without floating_mean keep float32 grids. The cpu backend
 * computes in float64 whatever this says; it takes the same tolerance.
 */
int ls_nufft_narrow(int f32, int mode, int floating_mean)
{
	return f32 && mode != LS_AMPLITUDE && !floating_mean;
}

/*
 * The transforms' tolerance: finufft's tol bounds the sums' error relative
 * to their size (sum |w|, 1 here), on average over the modes; the
 * periodogram's error relative to its largest value comes out larger:
 *  - at the grid's ends (the band's edge, where the kernel's transform is
 *    smallest): 10^6 samples, 1000 frequencies, normalize, measured 10 tol
 *    at the lowest frequency on the H100 (the GPU test);
 *  - where the phases f x spread little over the samples: at a frequency
 *    whose phases span phi = f (max x - min x) radians, the fit's columns
 *    1, cos fx and sin fx are nearly collinear, and CC - C^2
 *    (floating_mean) or CC or SS divide the sums' error by about phi^4
 *    (phi^2 without floating_mean). Measured on the cpu backend (random
 *    weighted samples, a sine in noise, the grid starting at phi from 0.2
 *    to 6, 40 problems each, the error at the lowest frequency): with
 *    floating_mean and the amplitude, 1 to 20 tol from phi = 2 up, 100 to
 *    900 tol about phi = 1 and up to 1.2e4 tol about phi = 0.3 at 40
 *    samples (tol there already 25 times smaller, below); 1200 tol at phi =
 *    0.2 with 1000 samples, 300 with 20,000; the power with floating_mean
 *    about a third of that; without floating_mean at most 70 tol (the
 *    amplitude), 8 (normalize);
 *  - the amplitude (a + ib = YC / CC, YS / SS) divides it too, wherever CC or
 *    SS is small: 10^6 samples, 10^7 frequencies to 20x the mean rate,
 *    weights and floating_mean, measured 190 tol (tol 3.3e-11) and still
 *    3300 tol (tol 3.3e-13) against a long-double value on the H200 (the GPU
 *    test), where CC at the worst frequency is about 3e-4.
 * So in float64 grids tol is eps / 3e5: every float64 run (16 cells, the
 * widest kernel, for the default 1e-9) and float32's amplitude and
 * floating_mean (12 cells for 1e-5). That holds eps from phi = 0.2 for eps
 * of 1e-6 and more (at most 0.17 eps there; 1.6 to 2.7 eps at 0.1) and
 * from 0.4 for float64's 1e-9, where tol reaches the transforms' own floor,
 * about 1e-14 of the sums at the band's edge (0.19 eps at 0.4, 3 eps at
 * 0.2): test_lombscargle_nufft.c's test_nufft_low_phase_span, 40 and 1000
 * samples. Below that a grid wants the direct method. With eps / 30, as it
 * was for eps of 1e-7 and more, float32's default 1e-5 was missed from phi
 * of about 1 (1.1e-5 to 2e-5 of the largest value at phi 0.87 to 1.06, 4
 * of 400 random problems of python/tests/test_many.py). float32 grids keep
 * eps / 30: their own rounding is of that order, and without floating_mean
 * or the amplitude the division is small. Below 1000 samples tol is n /
 * 1000 times smaller again (100 times at 10 and fewer): few samples leave
 * gaps in the phases, and a wider kernel costs little there.
 */
double ls_nufft_tol(double eps, size_t n, int narrow)
{
	double t = eps / (narrow ? 30 : 3e5) *
		   (n < 1000 ? (n < 10 ? 10.0 : (double)n) / 1000 : 1.0);
	return t > 1e-15 ? t : 1e-15;
}

double ls_nufft_tol_for(const kernel_args *a)
{
	const kernel_value *v = a->v;
	return ls_nufft_tol(lombscargle_eps(a), v[LS_X].arr.count,
			    ls_nufft_narrow(v[LS_X].arr.dtype == GPUD_F32,
					    (int)v[LS_NORMALIZE].s.i64, v[LS_FLOATING_MEAN].s.b));
}

/* The smallest even 2^a 3^b 5^c >= n. */
static long long nice_size(long long n)
{
	if (n < 2)
		n = 2;
	for (n += n & 1;; n += 2) {
		long long r = n;
		while (r % 2 == 0)
			r /= 2;
		while (r % 3 == 0)
			r /= 3;
		while (r % 5 == 0)
			r /= 5;
		if (r == 1)
			return n;
	}
}

/* Gauss-Legendre: n nodes and weights on [0, 1] (Newton on P_n from Chebyshev guesses). */
static void gauss_legendre(int n, double *z, double *w)
{
	for (int i = 0; i < n; i++) {
		double t = cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 1;
		for (int it = 0; it < 100; it++) {
			double p0 = 1, p1 = t;
			for (int k = 2; k <= n; k++) {
				double p2 = ((2 * k - 1) * t * p1 - (k - 1) * p0) / k;
				p0 = p1;
				p1 = p2;
			}
			dp = n * (t * p1 - p0) / (t * t - 1);
			double dt = p1 / dp;
			t -= dt;
			if (fabs(dt) < 1e-16)
				break;
		}
		z[i] = 0.5 * (1 - t);
		w[i] = 1 / ((1 - t * t) * dp * dp); /* 2 / ((1 - t^2) P'^2), halved for [0, 1] */
	}
}

/* The kernel's shape for width ns (finufft's at upsampling 2). */
static double beta_for(int ns)
{
	return (ns == 2 ? 2.20 : ns == 3 ? 2.26 : ns == 4 ? 2.38 : 2.30) * ns;
}

/*
 * The quadrature of each width (2..16: nq = 2 ns + 8 nodes, the weights
 * times phi at the nodes), made once per process: Newton's iterations for 40
 * nodes took 24 µs, all of it before a run's first GPU work. Written once
 * under pthread_once, then read by any thread (the loop, the cpu workers).
 */
static struct {
	double qz[LS_NUFFT_MAX_NQ], qw[LS_NUFFT_MAX_NQ];
} quad[17];
static pthread_once_t quad_once = PTHREAD_ONCE_INIT;

static void quad_init(void)
{
	for (int ns = 2; ns <= 16; ns++) {
		int nq = 2 * ns + 8;
		gauss_legendre(nq, quad[ns].qz, quad[ns].qw);
		for (int q = 0; q < nq; q++)
			quad[ns].qw[q] *= ns * exp(beta_for(ns) *
						   (sqrt(1 - quad[ns].qz[q] * quad[ns].qz[q]) - 1));
	}
}

void ls_nufft_setup(ls_nufft_plan *p, long long m, double tol)
{
	memset(p, 0, sizeof(*p));
	p->tol = tol;
	int ns = (int)ceil(-log10(tol / 10));
	ns = ns < 2 ? 2 : ns > 16 ? 16 : ns;
	p->ns = ns;
	p->beta = beta_for(ns);
	p->m = m;
	p->k0 = m / 2;
	p->nfine = nice_size(2 * m > 2 * ns ? 2 * m : 2 * ns);
	p->nq = 2 * ns + 8;
	pthread_once(&quad_once, quad_init);
	memcpy(p->qz, quad[ns].qz, (size_t)p->nq * sizeof(double));
	memcpy(p->qw, quad[ns].qw, (size_t)p->nq * sizeof(double));
}

void ls_nufft_cycles(double f0, double df, long long k0, double *fc_hi, double *fc_lo,
		     double *df_hi, double *df_lo)
{
	const long double two_pi = 6.283185307179586476925286766559005768L;
	long double fc = ((long double)f0 + (long double)df * (long double)k0) / two_pi;
	long double d = (long double)df / two_pi;
	*fc_hi = (double)fc;
	*fc_lo = (double)(fc - (long double)*fc_hi);
	*df_hi = (double)d;
	*df_lo = (double)(d - (long double)*df_hi);
}

double ls_nufft_psihat(const ls_nufft_plan *p, long long kp)
{
	/* xi = 2 pi k' / nfine; psihat(xi) = ns int_0^1 phi(z) cos(xi ns z / 2) dz */
	double t = 0, a = M_PI * (double)kp * p->ns / (double)p->nfine;
	for (int q = 0; q < p->nq; q++)
		t += p->qw[q] * cos(a * p->qz[q]);
	return t;
}

/*
 * 1 / psihat at k' = 0 .. kmax. Each node's cos(d k), k = 256 a + 16 b + i,
 * is the anchor at 256 a (sincos) turned by the tables' 16 b and i: three
 * correctly rounded factors, a few 1e-16 at every k. Rotations re-anchored
 * every 256, as it was, reached ~1e-14 of psihat at the band's edge, where
 * the sum over the nodes cancels most: 2e-11 of the largest value (twice
 * eps = 1e-11) at the lowest frequency of 40 samples with floating_mean and
 * the amplitude (4 of 300 random problems of python/tests/test_many.py,
 * cpu); with the tables at most 0.54 eps over 600. And faster: 10^6
 * frequencies of 10^4 samples with floating_mean, 0.53 s against 0.63 (one
 * core, x86-64). The GPU's epilogue turns at most 15 modes from a sincospi.
 */
static void deconv_table(const ls_nufft_plan *p, long long kmax, double *inv)
{
	for (long long k = 0; k <= kmax; k++)
		inv[k] = 0;
	for (int q = 0; q < p->nq; q++) {
		const double d = M_PI * p->ns * p->qz[q] / (double)p->nfine, w = p->qw[q];
		double ci[16], si[16], cb[16], sb[16], ca = 1, sa = 0;
		for (int i = 0; i < 16; i++) {
			sincos(d * i, &si[i], &ci[i]);
			sincos(d * (16 * i), &sb[i], &cb[i]);
		}
		for (long long k0 = 0; k0 <= kmax; k0 += 16) {
			if ((k0 & 255) == 0)
				sincos(d * (double)k0, &sa, &ca);
			const int b = (int)(k0 >> 4) & 15;
			const double c16 = ca * cb[b] - sa * sb[b], s16 = sa * cb[b] + ca * sb[b];
			for (int i = 0; i < 16 && k0 + i <= kmax; i++)
				inv[k0 + i] += w * (c16 * ci[i] - s16 * si[i]);
		}
	}
	for (long long k = 0; k <= kmax; k++)
		inv[k] = 1 / inv[k];
}

int ls_nufft_cpu_available(char *err, size_t errlen)
{
	return libs_get_fftw(err, errlen) != NULL;
}

static inline double load(const kernel_array *v, size_t i)
{
	return v->dtype == GPUD_F32 ? (double)((const float *)v->data)[i]
				    : ((const double *)v->data)[i];
}

/* Adds strength (re, im) times the kernel around cell position g of grid (nf points). */
static void spread(double *grid, long long nf, const ls_nufft_plan *p, double g, double re,
		   double im)
{
	double two_ns = 2.0 / p->ns;
	long long i0 = (long long)ceil(g - 0.5 * p->ns);
	for (int t = 0; t < p->ns; t++) {
		long long l = i0 + t;
		double k = ls_nufft_kernel((double)l - g, two_ns, p->beta);
		l %= nf;
		if (l < 0)
			l += nf;
		grid[2 * l] += re * k;
		grid[2 * l + 1] += im * k;
	}
}

void ls_nufft_cpu_run(const kernel_args *a, size_t lo, size_t hi)
{
	const libs_fftw *fw = libs_get_fftw(NULL, 0);
	const kernel_value *v = a->v;
	const kernel_array *x = &v[LS_X].arr, *y = &v[LS_Y].arr;
	if (fw == NULL || hi <= lo) { /* no FFTW3: the same results, directly */
		lombscargle_ref_run(a, lo, hi);
		return;
	}
	ls_sums s;
	lombscargle_ref_sums(a, &s);
	ls_nufft_plan p;
	ls_nufft_setup(&p, (long long)(hi - lo), ls_nufft_tol_for(a));
	int fm = v[LS_FLOATING_MEAN].s.b, mode = (int)v[LS_NORMALIZE].s.i64;
	long long nf = p.nfine;
	double *grid = fw->malloc((size_t)nf * 3 * 2 * sizeof(double));
	double *inv = malloc((size_t)(p.m / 2 + 2) * sizeof(double));
	if (grid == NULL || inv == NULL) { /* out of memory: the same results, directly */
		if (grid)
			fw->free(grid);
		free(inv);
		lombscargle_ref_run(a, lo, hi);
		return;
	}
	memset(grid, 0, (size_t)nf * 3 * 2 * sizeof(double));
	double *g1 = grid, *g2 = grid + 2 * nf, *g3 = grid + 4 * nf;
	double fc_hi, fc_lo, df_hi, df_lo;
	ls_nufft_cycles(v[LS_F0].s.f64, v[LS_DF].s.f64, (long long)lo + p.k0, &fc_hi, &fc_lo,
			&df_hi, &df_lo);
	/* y as spread: less mean(y) with precenter, less its weighted mean with
	 * floating_mean (so YC - Y C has nothing to cancel); y1 the rounding left */
	const double yshift = s.shift + (fm ? s.y1 : 0.0);
	double y1 = 0;
	for (size_t j = 0; j < x->count; j++) {
		double xj = load(x, j);
		double w = (v[LS_WEIGHTS].present ? load(&v[LS_WEIGHTS].arr, j) : 1.0) / s.wsum;
		double yv = load(y, j) - yshift;
		y1 += w * yv;
		double ph = 2 * M_PI * ls_frac_dd(fc_hi, fc_lo, xj, 1),
		       ph2 = 2 * M_PI * ls_frac_dd(fc_hi, fc_lo, xj, 2);
		double c = cos(ph), sn = sin(ph), c2 = cos(ph2), s2 = sin(ph2);
		double g = ls_frac_dd(df_hi, df_lo, xj, 1) * (double)nf,
		       gg = ls_frac_dd(df_hi, df_lo, xj, 2) * (double)nf;
		spread(g1, nf, &p, g, w * c, w * sn);
		spread(g2, nf, &p, g, w * yv * c, w * yv * sn);
		spread(g3, nf, &p, gg, w * c2, w * s2);
	}
	int n = (int)nf;
	libs_fftw_plan plan = fw->plan_many_dft(1, &n, 3, grid, NULL, 1, n, grid, NULL, 1, n,
						LIBS_FFTW_BACKWARD, LIBS_FFTW_ESTIMATE);
	fw->execute_dft(plan, grid, grid);
	fw->destroy_plan(plan);
	deconv_table(&p, p.m / 2 + 1, inv);
	ls_nufft_fin fin = {
		.fm = fm,
		.mode = mode,
		.legacy = v[LS_LEGACY].s.b,
		.y1 = fm ? y1 : 0.0,
		.scale = ls_nufft_scale(mode, v[LS_LEGACY].s.b, fm, (double)x->count, s.ydot, s.y1,
					s.y2),
		.clamp = LS_EPSNEG,
	};
	const kernel_array *o = &v[LS_PGRAM].arr;
	for (long long k = 0; k < p.m; k++) {
		long long kp = k - p.k0, l = kp < 0 ? kp + nf : kp;
		double d = inv[kp < 0 ? -kp : kp], r[2];
		ls_nufft_finish(&fin, g1[2 * l] * d, g1[2 * l + 1] * d, g2[2 * l] * d,
				g2[2 * l + 1] * d, g3[2 * l] * d, g3[2 * l + 1] * d, r);
		lombscargle_store(o, lo + (size_t)k, r);
	}
	fw->free(grid);
	free(inv);
}

/* The frequencies one NUFFT of a chunk covers, about (ls_nufft_cpu_item_cost). */
#define CPU_CHUNK_MODES 10000.0

/*
 * method=auto on the cpu backend: the direct sums cost about 2 N sine-cosine
 * pairs per frequency (scipy's two passes); a chunk's NUFFT of m modes (m
 * about CPU_CHUNK_MODES, or nf) costs 3 N ns kernel values, three FFTs of
 * nfine points and the epilogue. Constants measured on the build machine
 * (x86-64, gcc -O2, one core, a loop timing each piece alone): 28 ns per
 * sample and frequency direct (two sincos); 9 ns per kernel value spread
 * (exp, sqrt, two adds); 3 ns per FFT point and log2 (FFTW_ESTIMATE plans);
 * 120 ns per frequency (deconvolution and epilogue).
 */
int ls_nufft_cpu_pick(const kernel_args *a)
{
	if (a->v[LS_FREQS].present || libs_get_fftw(NULL, 0) == NULL)
		return 0;
	ls_nufft_plan p;
	double n = (double)a->v[LS_X].arr.count, nf = (double)a->v[LS_NF].s.i64;
	double m = nf < CPU_CHUNK_MODES ? nf : CPU_CHUNK_MODES;
	if (nf < 512 || n < 16) /* small runs: direct (the model's constants are not for them) */
		return 0;
	ls_nufft_setup(&p, (long long)m, ls_nufft_tol_for(a));
	double direct = 28 * n * m;
	double nufft = 9 * n * p.ns * 3 + 3 * 3 * (double)p.nfine * log2((double)p.nfine) + 120 * m;
	return nufft < direct;
}

/*
 * The cpu backend's work per frequency (cpu_kernel.item_cost's units,
 * about a sine or a multiply-add) of the NUFFT: the epilogue's ~100, and the
 * spreading's 3 N ns shared by a chunk's CPU_CHUNK_MODES frequencies.
 */
size_t ls_nufft_cpu_item_cost(const kernel_args *a)
{
	ls_nufft_plan p;
	ls_nufft_setup(&p, 2, ls_nufft_tol_for(a));
	return 100 + (size_t)(3.0 * p.ns * (double)a->v[LS_X].arr.count / CPU_CHUNK_MODES);
}
