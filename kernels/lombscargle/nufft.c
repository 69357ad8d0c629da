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
 * The transforms' tolerance: finufft's tol bounds the sums' error relative
 * to their size (sum |w|, 1 here), on average over the modes; the
 * periodogram's error relative to its largest value comes out larger:
 *  - at the grid's ends (the band's edge, where the kernel's transform is
 *    smallest): 10^6 samples, 1000 frequencies, normalize, measured 10 tol
 *    at the lowest frequency on the H100 (the GPU test);
 *  - with few samples, CC - C^2 (floating_mean) or CC itself is small at
 *    some frequencies and divides the sums' error: 10 samples over a wide
 *    grid measured 40 tol (the unit test, float64);
 *  - the amplitude (a + ib = YC / CC, YS / SS) divides it too, wherever CC or
 *    SS is small: 10^6 samples, 10^7 frequencies to 20x the mean rate,
 *    weights and floating_mean, measured 190 tol (tol 3.3e-11) and still
 *    3300 tol (tol 3.3e-13) against a long-double value on the H200 (the GPU
 *    test), where CC at the worst frequency is about 3e-4.
 * So tol is eps / 30, and eps / 3e5 below 1e-7 (float64's range: 16 cells
 * for the default 1e-9, the widest kernel, about 30% more spreading than
 * eps / 30's 12), from 1000 samples, and 100 times smaller again at 10 (a
 * wider kernel costs little there); the unit and GPU tests measure it on
 * random problems with gaps, 10 to 10^6 samples.
 * float32's eps (1e-6 at least) keeps the margin of 30: its sums' own
 * rounding is of that order.
 */
double ls_nufft_tol(double eps, size_t n)
{
	double margin = eps < 1e-7 ? 3e5 : 30;
	double t = eps / margin * (n < 1000 ? (n < 10 ? 10.0 : (double)n) / 1000 : 1.0);
	return t > 1e-15 ? t : 1e-15;
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

/* 1 / psihat at k' = 0 .. kmax, by rotations re-anchored every 256 (error ~1e-14). */
static void deconv_table(const ls_nufft_plan *p, long long kmax, double *inv)
{
	for (long long k = 0; k <= kmax; k++)
		inv[k] = 0;
	for (int q = 0; q < p->nq; q++) {
		double d = M_PI * p->ns * p->qz[q] / (double)p->nfine, cd = cos(d), sd = sin(d);
		double c = 1, s = 0;
		for (long long k = 0; k <= kmax; k++) {
			if ((k & 255) == 0) {
				c = cos(d * (double)k);
				s = sin(d * (double)k);
			}
			inv[k] += p->qw[q] * c;
			double c1 = c * cd - s * sd;
			s = s * cd + c * sd;
			c = c1;
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
	ls_nufft_setup(&p, (long long)(hi - lo),
		       ls_nufft_tol(lombscargle_eps(a), a->v[LS_X].arr.count));
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
	ls_nufft_setup(&p, (long long)m, ls_nufft_tol(lombscargle_eps(a), a->v[LS_X].arr.count));
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
	ls_nufft_setup(&p, 2, ls_nufft_tol(lombscargle_eps(a), a->v[LS_X].arr.count));
	return 100 + (size_t)(3.0 * p.ns * (double)a->v[LS_X].arr.count / CPU_CHUNK_MODES);
}
