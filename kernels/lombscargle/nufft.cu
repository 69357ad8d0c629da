/*
 * kernels/lombscargle/nufft.cu — lombscargle's NUFFT path on the GPU: the
 * grid form's sums through three type-1 non-uniform FFTs of our own
 * (nufft.c says the mathematics and chooses the plan), cuFFT for the FFT.
 *
 * One run enqueues on the launch's stream, in order:
 *  1. the samples' sums (one block, float64): mean(y) for precenter, the
 *     weights' sum and check, sum w y and sum w y^2 for normalize and
 *     floating_mean, dot(y, y) for legacy, the power's factor; bad weights
 *     write the verdict and make the epilogue write NaN;
 *  2. a memset of the fine grids, and the spreading: per sample, its phases
 *     in float64 (fc x and df x reduced to cycles before any sine, as the
 *     direct kernel does, so float32 inputs lose nothing either), the
 *     strengths w e^{i fc x}, w y' e^{i fc x}, w e^{2 i fc x} and ns kernel
 *     values at theta = df x mod 2 pi (and ns at 2 theta), added with
 *     atomics: where the three grids fit in shared memory (small nf), into
 *     each block's copy first and then the global one; else by windows
 *     (nu_spread_win: a block's run of samples into shared-memory windows of
 *     the grids where they reach few cells, else straight into the global
 *     grids; a lane per cell of a sample);
 *  3. cuFFT: the three grids, one batched in-place transform (C2C for
 *     float32 grids, Z2Z for float64), e^{+2 pi i k l / nfine};
 *  4. the epilogue: per frequency, the three sums divided by the kernel's
 *     Fourier transform (the Gauss-Legendre rule, each thread's 16 modes
 *     by rotations from one sincospi per node, each used for k' and -k'), then
 *     nufft.h's ls_nufft_finish in float64, which is lombscargle_ref_one's
 *     arithmetic.
 * float32 inputs spread and transform in float32 (the kernel's offsets and
 * the phases come from float64, so the grid position is exact), but for the
 * amplitude and floating_mean, which take float64 grids (narrow_grids);
 * float64 in float64; the epilogue is float64 for all.
 *
 * Memory: one scratch block from the launch context (cuda_launch_ctx.scratch:
 * the backend's pool, given back when the run completes): the sums, the
 * three grids (3 nfine complex) and cuFFT's work area. Plans come from the
 * stream's cache (cuda_launch_ctx.fft, kernels/core/libs.h), so a warm run
 * makes none. State: the per-kernel shared-memory attribute below, set once
 * per device (a function's attributes are its device's) by the thread
 * launching (the loop; each device's opening thread at the self-test).
 */
#include <cuda_runtime.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <atomic>
#include <type_traits>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/core/libs.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/many.h"
#include "kernels/lombscargle/nufft.h"

namespace {

#include "kernels/lombscargle/device.cuh"

constexpr int SB = 1024;          /* the sums' block */
constexpr int PB = 256;           /* spreading and epilogue blocks */
constexpr int KE = 16;            /* epilogue: frequencies per thread */
constexpr size_t SMEM = 96 << 10; /* the shared-memory spreading's grids, at most */

/* What step 1 leaves for the others (device memory, the scratch's head). */
struct nu_stats {
	double invw;   /* 1 / sum of weights, or 1 / N */
	double yshift; /* subtracted from y before spreading */
	double y1;     /* floating_mean: sum w y' of the y as spread */
	double scale;  /* the power's factor */
	int bad;       /* LS_BAD_WEIGHT | LS_ZERO_WEIGHTS */
};

struct nu_params {
	const void *x, *y, *w;
	void *out;
	int n;
	int nser; /* series: y holds nser rows of n, out nser rows of nf */
	long long nf, k0, nfine;
	double fc_hi, fc_lo, df_hi, df_lo; /* the centre frequency and the step, in cycles,
					      double-double (ls_frac_dd) */
	int ns, nq;
	double beta;
	double qz[LS_NUFFT_MAX_NQ], qw[LS_NUFFT_MAX_NQ];
	double qc[LS_NUFFT_MAX_NQ], qs[LS_NUFFT_MAX_NQ]; /* cos, sin pi PB ns qz / nfine */
	int precenter, mode, legacy, fm;
	double clamp;
	nu_stats *st; /* one per series */
	/* 2 + nser grids of nfine complex of the compute type: theta's w e^{ifx},
	 * each series' w y e^{ifx}, then 2 theta's w e^{2ifx} */
	void *grid;
	unsigned *verdict;
	/* lombscargle_many (ls_many_nufft_launch): a group of series of a table
	 * in device memory, series s0 + g (g the group's index: the sums'
	 * blockIdx.x, the others' blockIdx.y), nser 1, each with its own three
	 * grids (st and grid g's) and verdict word; NULL for lombscargle's run */
	const ls_series *tab;
	long long s0;
	unsigned *verdicts;
};

/* The series a block works on: lombscargle's run (x, y as given, the grids
 * and sums at the start), or the table's series s0 + g with its grids and
 * sums, g-th of the group. A NULL w in a weighted table: all equal. */
struct nu_ser {
	const void *x, *y, *w;
	void *out;
	int n;
	nu_stats *st;
	void *grid;
	unsigned *verdict;
};

template <typename C> __device__ __forceinline__ nu_ser ser_of(const nu_params &p, int g)
{
	nu_ser s;
	if (p.tab) {
		const ls_series d = p.tab[p.s0 + g];
		s.x = d.x, s.y = d.y, s.w = d.w, s.out = d.out, s.n = (int)d.n;
		s.st = p.st + g;
		s.grid = (C *)p.grid + (long long)g * 6 * p.nfine;
		s.verdict = p.verdicts ? p.verdicts + p.s0 + g : nullptr;
	} else {
		s.x = p.x, s.y = p.y, s.w = p.w, s.out = p.out, s.n = p.n;
		s.st = p.st;
		s.grid = p.grid;
		s.verdict = p.verdict;
	}
	return s;
}

/* 1. The samples' sums, float64, one block. */
template <typename T, typename C, bool W> __global__ void __launch_bounds__(SB) nu_sums(nu_params p)
{
	__shared__ double scratch[SB / 32];
	const nu_ser s = ser_of<C>(p, p.tab ? (int)blockIdx.x : 0);
	const int row = p.tab ? 0 : (int)blockIdx.x;        /* a batch of y: its row */
	const T *y = (const T *)s.y + (long long)row * s.n; /* this block's series */
	const bool hw = W && s.w != nullptr;
	double sy = 0, y2 = 0, sw = 0;
	int bad = 0;
	for (int j = threadIdx.x; j < s.n; j += SB) {
		double v = ld<T>(y, j);
		sy += v;
		y2 += v * v;
		if (hw) {
			double w = ld<T>(s.w, j);
			bad |= !(w >= 0);
			sw += w;
		}
	}
	sy = block_sum<SB>(sy, scratch);
	const double ydot = block_sum<SB>(y2, scratch);
	const double shift = p.precenter ? sy / s.n : 0.0;
	double invw = 1.0 / s.n;
	if (hw) {
		sw = block_sum<SB>(sw, scratch);
		bad = __syncthreads_or(bad);
		bad = (bad ? LS_BAD_WEIGHT : 0) | (!(sw > 0) ? LS_ZERO_WEIGHTS : 0);
		invw = 1.0 / sw;
	}
	double s1 = 0, s2 = 0;
	for (int j = threadIdx.x; j < s.n; j += SB) {
		double w = hw ? ld<T>(s.w, j) * invw : invw, v = ld<T>(y, j) - shift;
		s1 += w * v;
		s2 += w * v * v;
	}
	s1 = block_sum<SB>(s1, scratch);
	s2 = block_sum<SB>(s2, scratch);
	const double yshift = shift + (p.fm ? s1 : 0.0);
	double res = 0;
	if (p.fm) {
		for (int j = threadIdx.x; j < s.n; j += SB) {
			double w = hw ? ld<T>(s.w, j) * invw : invw;
			res += w * (double)(C)(ld<T>(y, j) - yshift);
		}
		res = block_sum<SB>(res, scratch);
	}
	if (threadIdx.x == 0) {
		nu_stats *o = s.st + row;
		o->invw = invw;
		o->yshift = yshift;
		o->y1 = res;
		o->scale = ls_nufft_scale(p.mode, p.legacy, p.fm, (double)s.n, ydot, s1, s2);
		o->bad = bad;
		if (bad && s.verdict)
			*s.verdict = (unsigned)bad;
	}
}

/* Adds (re, im) times the kernel around cell position g to grid (nf points, interleaved). */
template <typename C> __device__ __forceinline__ void spread1(C *grid, long long nf,
							      const nu_params &p, double g, C re,
							      C im)
{
	const double two_ns = 2.0 / p.ns;
	long long l = (long long)ceil(g - 0.5 * p.ns);
	double t = (double)l - g;
	l = l < 0 ? l + nf : l;
	for (int i = 0; i < p.ns; i++, t += 1.0, l = l + 1 == nf ? 0 : l + 1) {
		C k = (C)ls_nufft_kernel(t, two_ns, p.beta);
		atomicAdd(&grid[2 * l], re * k);
		atomicAdd(&grid[2 * l + 1], im * k);
	}
}

/* What sample j spreads: w e^{i fc x} (wc, ws), y' (yv), w e^{2 i fc x} (wc2, ws2),
 * and its cell positions on theta's grids (ga) and 2 theta's (gb). */
template <typename C> struct nu_sample {
	C wc, ws, yv, wc2, ws2;
	double ga, gb;
};

template <typename T, typename C, bool W>
__device__ __forceinline__ nu_sample<C> sample_at(const nu_params &p, const nu_ser &s,
						  const nu_stats &st, long long j)
{
	nu_sample<C> r;
	const double x = ld<T>(s.x, j);
	const double w = W && s.w ? ld<T>(s.w, j) * st.invw : st.invw;
	r.yv = (C)(ld<T>(s.y, j) - st.yshift);
	/* phases in cycles, reduced (double-double) before the sine */
	double s1, c1, s2, c2;
	sincospi(2 * ls_frac_dd(p.fc_hi, p.fc_lo, x, 1), &s1, &c1);
	sincospi(2 * ls_frac_dd(p.fc_hi, p.fc_lo, x, 2), &s2, &c2);
	r.ga = ls_frac_dd(p.df_hi, p.df_lo, x, 1) * (double)p.nfine;
	r.gb = ls_frac_dd(p.df_hi, p.df_lo, x, 2) * (double)p.nfine;
	r.wc = (C)(w * c1), r.ws = (C)(w * s1);
	r.wc2 = (C)(w * c2), r.ws2 = (C)(w * s2);
	return r;
}

/* One sample into the three grids g1, g2, g3 (each nf complex): the
 * whole-grid shared-memory spreading's. */
template <typename T, typename C, bool W>
__device__ __forceinline__ void spread_sample(const nu_params &p, const nu_ser &s,
					      const nu_stats &st, long long j, C *g1, C *g2, C *g3,
					      long long nf)
{
	const nu_sample<C> a = sample_at<T, C, W>(p, s, st, j);
	spread1<C>(g1, nf, p, a.ga, a.wc, a.ws);
	spread1<C>(g2, nf, p, a.ga, a.wc * a.yv, a.ws * a.yv);
	spread1<C>(g3, nf, p, a.gb, a.wc2, a.ws2);
}

/*
 * 2a. Spreading by windows: a block takes a run of consecutive samples and
 * finds the cells they reach (of theta's grids and of 2 theta's); where
 * those span at most WIN cells, the block adds into a window of the grids in
 * shared memory and then adds the window into the global grids once; else
 * each sample goes to the global grids directly. Sorted times (the usual
 * case) and grids of small df T (every sample within a few cells: global
 * atomics there would all contend) both take windows; scattered samples
 * meet little contention in the global grids.
 * L lanes (L >= ns, a power of two) take one sample, a lane per cell: its
 * phases are made once by the group's first lane and shuffled to the rest,
 * and the ns kernel values and 6 ns atomic adds run side by side, so a few
 * thousand samples fill the GPU (one thread per sample, each doing 3 ns
 * kernel values in a row, left 10^4 samples at 220 µs on the H200).
 */
constexpr int WIN = 512;

/* The first cell the kernel reaches from cell position g (spread1's). */
__device__ __forceinline__ int first_cell(double g, int ns)
{
	return (int)ceil(g - 0.5 * ns);
}

/* The spreading kernel at t cells, in float64 also for float32 grids (float32
 * kernel values, expf, measured up to 1.7x float32's eps at 10 samples, where
 * small CC - C^2 divides the grids' error). */
template <typename C> __device__ __forceinline__ C kernel_at(double t, const nu_params &p)
{
	return (C)ls_nufft_kernel(t, 2.0 / p.ns, p.beta);
}

template <typename T, typename C, bool W, int L> __global__ void __launch_bounds__(PB)
	nu_spread_win(nu_params p, int chunk)
{
	extern __shared__ unsigned char smem_raw[];
	C *wa = (C *)smem_raw; /* theta's two grids: 2 WIN complex each (a batch: the first) */
	C *wb = wa + 4 * WIN;  /* 2 theta's: WIN complex */
	__shared__ int lim[4];
	const nu_ser s = ser_of<C>(p, p.tab ? (int)blockIdx.y : 0);
	const nu_stats st = *s.st;
	const long long nf = p.nfine;
	C *g = (C *)s.grid;
	const long long g3 = 2 * (1 + p.nser) * nf; /* 2 theta's grid */
	/* the block's runs of samples: one for lombscargle's run (as many
	 * blocks as runs), every gridDim.x-th for a table's series (its blocks
	 * are cut for the average series) */
	for (long long j0 = (long long)blockIdx.x * chunk; j0 < s.n;
	     j0 += (long long)gridDim.x * chunk) {
		const long long j1 = j0 + chunk < s.n ? j0 + chunk : s.n;
		if (threadIdx.x == 0) {
			lim[0] = lim[2] = INT_MAX;
			lim[1] = lim[3] = INT_MIN;
		}
		__syncthreads();
		int a0 = INT_MAX, a1 = INT_MIN, b0 = INT_MAX, b1 = INT_MIN;
		for (long long j = j0 + threadIdx.x; j < j1; j += PB) {
			const double x = ld<T>(s.x, j); /* sample_at's cells */
			int ca = first_cell(ls_frac_dd(p.df_hi, p.df_lo, x, 1) * (double)nf, p.ns);
			int cb = first_cell(ls_frac_dd(p.df_hi, p.df_lo, x, 2) * (double)nf, p.ns);
			a0 = min(a0, ca), a1 = max(a1, ca), b0 = min(b0, cb), b1 = max(b1, cb);
		}
		if (a0 != INT_MAX) {
			atomicMin(&lim[0], a0);
			atomicMax(&lim[1], a1);
			atomicMin(&lim[2], b0);
			atomicMax(&lim[3], b1);
		}
		__syncthreads();
		const int la = lim[0], na = lim[1] - lim[0] + p.ns, lb = lim[2],
			  nb = lim[3] - lim[2] + p.ns;
		const bool use_a = na <= WIN, use_b = nb <= WIN;
		for (int i = threadIdx.x; use_a && i < 2 * na; i += PB)
			wa[i] = wa[2 * WIN + i] = 0;
		for (int i = threadIdx.x; use_b && i < 2 * nb; i += PB)
			wb[i] = 0;
		__syncthreads();
		const int lane = threadIdx.x % L; /* this thread's cell of its sample */
		const unsigned gm = L == 32 ? 0xffffffffu
					    : ((1u << L) - 1) << (threadIdx.x % 32 / L * L);
		for (long long base = j0; base < j1; base += PB / L) {
			const long long j = base + threadIdx.x / L;
			if (j >= j1) /* whole groups leave together */
				break;
			nu_sample<C> a = {};
			if (lane == 0)
				a = sample_at<T, C, W>(p, s, st, j);
			const C wc = __shfl_sync(gm, a.wc, 0, L), ws = __shfl_sync(gm, a.ws, 0, L),
				yv = __shfl_sync(gm, a.yv, 0, L),
				wc2 = __shfl_sync(gm, a.wc2, 0, L),
				ws2 = __shfl_sync(gm, a.ws2, 0, L);
			const double ga = __shfl_sync(gm, a.ga, 0, L),
				     gb = __shfl_sync(gm, a.gb, 0, L);
			if (lane >= p.ns)
				continue;
			const int ca = first_cell(ga, p.ns) + lane,
				  cb = first_cell(gb, p.ns) + lane;
			const C ka = kernel_at<C>((double)ca - ga, p),
				kb = kernel_at<C>((double)cb - gb, p);
			const C r1 = wc * ka, i1 = ws * ka, r2 = r1 * yv, i2 = i1 * yv;
			const long long c = ca < 0 ? ca + nf : ca >= nf ? ca - nf : ca;
			if (use_a) {
				C *o = wa + 2 * (ca - la);
				atomicAdd(&o[0], r1);
				atomicAdd(&o[1], i1);
				if (p.nser == 1) {
					atomicAdd(&o[2 * WIN], r2);
					atomicAdd(&o[2 * WIN + 1], i2);
				}
			} else {
				atomicAdd(&g[2 * c], r1);
				atomicAdd(&g[2 * c + 1], i1);
				if (p.nser == 1) {
					atomicAdd(&g[2 * nf + 2 * c], r2);
					atomicAdd(&g[2 * nf + 2 * c + 1], i2);
				}
			}
			/* a batch: every series' y at this sample, straight into its grid */
			for (int b = 0; p.nser > 1 && b < p.nser; b++) {
				const C yb = (C)(ld<T>(s.y, (long long)b * s.n + j) -
						 s.st[b].yshift);
				atomicAdd(&g[2 * (1 + b) * nf + 2 * c], r1 * yb);
				atomicAdd(&g[2 * (1 + b) * nf + 2 * c + 1], i1 * yb);
			}
			if (use_b) {
				C *o = wb + 2 * (cb - lb);
				atomicAdd(&o[0], wc2 * kb);
				atomicAdd(&o[1], ws2 * kb);
			} else {
				const long long cc = cb < 0 ? cb + nf : cb >= nf ? cb - nf : cb;
				atomicAdd(&g[g3 + 2 * cc], wc2 * kb);
				atomicAdd(&g[g3 + 2 * cc + 1], ws2 * kb);
			}
		}
		__syncthreads();
		for (int i = threadIdx.x; use_a && i < na; i += PB) {
			long long c = ((long long)la + i) % nf;
			c = c < 0 ? c + nf : c;
			for (int k = 0; k < (p.nser == 1 ? 2 : 1); k++) {
				C re = wa[2 * k * WIN + 2 * i], im = wa[2 * k * WIN + 2 * i + 1];
				if (re != 0)
					atomicAdd(&g[2 * k * nf + 2 * c], re);
				if (im != 0)
					atomicAdd(&g[2 * k * nf + 2 * c + 1], im);
			}
		}
		for (int i = threadIdx.x; use_b && i < nb; i += PB) {
			long long c = ((long long)lb + i) % nf;
			c = c < 0 ? c + nf : c;
			if (wb[2 * i] != 0)
				atomicAdd(&g[g3 + 2 * c], wb[2 * i]);
			if (wb[2 * i + 1] != 0)
				atomicAdd(&g[g3 + 2 * c + 1], wb[2 * i + 1]);
		}
		__syncthreads(); /* the windows and lim are the next run's */
	}
}

/* 2b. Spreading through each block's grids in shared memory, then into the global ones. */
template <typename T, typename C, bool W> __global__ void __launch_bounds__(PB)
	nu_spread_shared(nu_params p)
{
	extern __shared__ unsigned char smem_raw[];
	C *sg = (C *)smem_raw;
	const nu_ser s = ser_of<C>(p, 0);
	const nu_stats st = *s.st;
	const long long nf = p.nfine;
	for (long long i = threadIdx.x; i < 6 * nf; i += PB)
		sg[i] = 0;
	__syncthreads();
	for (long long j = (long long)blockIdx.x * PB + threadIdx.x; j < s.n;
	     j += (long long)gridDim.x * PB)
		spread_sample<T, C, W>(p, s, st, j, sg, sg + 2 * nf, sg + 4 * nf, nf);
	__syncthreads();
	C *g = (C *)p.grid;
	for (long long i = threadIdx.x; i < 6 * nf; i += PB)
		if (sg[i] != 0)
			atomicAdd(&g[i], sg[i]);
}

/* One frequency k (mode k' = k - k0 at grid cell l) from the three grids, 1 / psihat d. */
template <typename T, typename C>
__device__ __forceinline__ void finish_one(const nu_params &p, const nu_ser &s,
					   const ls_nufft_fin &fin, int b, long long k, double d)
{
	using C2 = typename std::conditional<sizeof(C) == 4, float2, double2>::type;
	const C2 *g = (const C2 *)s.grid;
	const long long nf = p.nfine, kp = k - p.k0, l = kp < 0 ? kp + nf : kp;
	const C2 v1 = g[l], v2 = g[(1 + b) * nf + l], v3 = g[(1 + p.nser) * nf + l];
	k += (long long)b * p.nf; /* series b's row of out */
	double r[2];
	ls_nufft_finish(&fin, (double)v1.x * d, (double)v1.y * d, (double)v2.x * d,
			(double)v2.y * d, (double)v3.x * d, (double)v3.y * d, r);
	if (p.mode == LS_AMPLITUDE) {
		((T *)s.out)[2 * k] = (T)r[0];
		((T *)s.out)[2 * k + 1] = (T)r[1];
	} else {
		((T *)s.out)[k] = (T)r[0];
	}
}

/*
 * 4. The epilogue. psihat is even, so a thread takes KE values of |k'|, PB
 * apart (a warp's loads and stores take consecutive modes), and finishes
 * the frequencies at k' = +|k'| and -|k'|: one psihat for two.
 */
template <typename T, typename C> __global__ void __launch_bounds__(PB) nu_finish(nu_params p)
{
	const nu_ser s = ser_of<C>(p, p.tab ? (int)blockIdx.y : 0);
	const int b = p.tab ? 0 : (int)blockIdx.y; /* a batch's series (its row) */
	const nu_stats st = s.st[b];
	const long long a0 = (long long)blockIdx.x * PB * KE + threadIdx.x;
	const long long up = p.nf - 1 - p.k0, down = p.k0; /* the largest k' and -k' */
	const long long amax = up > down ? up : down;
	if (a0 > amax)
		return;
	if (st.bad) {
		const T nan = (T)__longlong_as_double(0x7ff8000000000000ll);
		const int comps = p.mode == LS_AMPLITUDE ? 2 : 1;
		for (long long a = a0; a < a0 + KE * PB && a <= amax; a += PB)
			for (int sgn = 0; sgn < 2; sgn++) {
				if (sgn ? (a == 0 || a > down) : a > up)
					continue;
				const long long k = (long long)b * p.nf + p.k0 + (sgn ? -a : a);
				for (int q = 0; q < comps; q++)
					((T *)s.out)[comps * k + q] = nan;
			}
		return;
	}
	/* psihat at the KE modes: per node, cos of pi |k'| ns z / nfine by
	 * rotation PB modes on (the step's cosine and sine from the host: one
	 * sincospi per node and thread, the epilogue's main cost in float64) */
	double ph[KE];
#pragma unroll
	for (int e = 0; e < KE; e++)
		ph[e] = 0;
	for (int q = 0; q < p.nq; q++) {
		const double ang = p.ns * p.qz[q] / (double)p.nfine; /* half-cycles per mode */
		const double sd = p.qs[q], cd = p.qc[q];
		double s, c;
		sincospi((double)a0 * ang, &s, &c);
#pragma unroll
		for (int e = 0; e < KE; e++) {
			ph[e] = fma(p.qw[q], c, ph[e]);
			double c1 = c * cd - s * sd;
			s = fma(s, cd, c * sd);
			c = c1;
		}
	}
	ls_nufft_fin fin;
	fin.fm = p.fm;
	fin.mode = p.mode;
	fin.legacy = p.legacy;
	fin.y1 = st.y1;
	fin.scale = st.scale;
	fin.clamp = p.clamp;
#pragma unroll
	for (int e = 0; e < KE; e++) {
		const long long a = a0 + (long long)e * PB;
		if (a > amax)
			break;
		const double d = 1.0 / ph[e];
		if (a <= up)
			finish_one<T, C>(p, s, fin, b, p.k0 + a, d);
		if (a > 0 && a <= down)
			finish_one<T, C>(p, s, fin, b, p.k0 - a, d);
	}
}

/* Lanes per sample of nu_spread_win: ns rounded up to a power of two (2 to 16). */
int win_lanes(int ns)
{
	return ns <= 2 ? 2 : ns <= 4 ? 4 : ns <= 8 ? 8 : 16;
}

typedef void (*win_fn)(nu_params, int);

template <typename T, typename C> win_fn pick_win(bool w, int lanes)
{
	return w ? (lanes == 2   ? nu_spread_win<T, C, true, 2>
		    : lanes == 4 ? nu_spread_win<T, C, true, 4>
		    : lanes == 8 ? nu_spread_win<T, C, true, 8>
				 : nu_spread_win<T, C, true, 16>)
		 : (lanes == 2   ? nu_spread_win<T, C, false, 2>
		    : lanes == 4 ? nu_spread_win<T, C, false, 4>
		    : lanes == 8 ? nu_spread_win<T, C, false, 8>
				 : nu_spread_win<T, C, false, 16>);
}

template <typename T, typename C> int run(nu_params &p, bool w, const cuda_launch_ctx *ctx,
					  libs_cufft_handle plan, char *err, size_t errlen)
{
	cudaStream_t s = (cudaStream_t)ctx->stream;
	const libs_cufft *f = libs_get_cufft(err, errlen);
	const size_t grid_bytes = (size_t)p.nfine * 2 * (2 + p.nser) * sizeof(C);
	CUDA_CHECK(cudaMemsetAsync(p.grid, 0, grid_bytes, s), "cudaMemsetAsync (nufft grids)");
	(w ? nu_sums<T, C, true> : nu_sums<T, C, false>)<<<p.nser, SB, 0, s>>>(p);
	CUDA_CHECK(cudaGetLastError(), "lombscargle nufft sums launch");
	if (p.nser == 1 && grid_bytes <= SMEM) {
		auto fn = w ? nu_spread_shared<T, C, true> : nu_spread_shared<T, C, false>;
		/* a function's attributes are its device's: set on each device
		 * (a bit per ordinal; beyond 63, on every launch) */
		static std::atomic<unsigned long long> attr[2];
		const unsigned long long bit = ctx->device >= 0 && ctx->device < 64
						       ? 1ull << ctx->device
						       : 0;
		if (bit == 0 || !(attr[w ? 1 : 0].load(std::memory_order_relaxed) & bit)) {
			CUDA_CHECK(cudaFuncSetAttribute(fn,
							cudaFuncAttributeMaxDynamicSharedMemorySize,
							(int)SMEM),
				   "cudaFuncSetAttribute (nufft spreading)");
			attr[w ? 1 : 0].fetch_or(bit, std::memory_order_relaxed);
		}
		/* each block adds its grids once: enough samples per block to pay for it */
		long long blocks = (p.n + 4095) / 4096;
		if (blocks > 2LL * ctx->sm_count)
			blocks = 2LL * ctx->sm_count;
		fn<<<(unsigned)blocks, PB, grid_bytes, s>>>(p);
	} else {
		const int lanes = win_lanes(p.ns);
		auto fn = pick_win<T, C>(w, lanes);
		/* a block's run: a pass of its groups at least, so that the GPU has
		 * four blocks per SM where the samples allow, and 32 passes at most */
		const long long per_pass = PB / lanes;
		long long chunk = (p.n / (4LL * ctx->sm_count) + per_pass - 1) / per_pass *
				  per_pass;
		chunk = chunk < per_pass ? per_pass : chunk > 32 * per_pass ? 32 * per_pass : chunk;
		long long blocks = (p.n + chunk - 1) / chunk;
		fn<<<(unsigned)blocks, PB, (size_t)WIN * 6 * sizeof(C), s>>>(p, (int)chunk);
	}
	CUDA_CHECK(cudaGetLastError(), "lombscargle nufft spreading launch");
	int st = sizeof(C) == 4 ? f->exec_c2c(plan, p.grid, p.grid, LIBS_CUFFT_INVERSE)
				: f->exec_z2z(plan, p.grid, p.grid, LIBS_CUFFT_INVERSE);
	if (st != 0) {
		snprintf(err, errlen, "lombscargle: %s: cufftExec%s: %s", f->describe,
			 sizeof(C) == 4 ? "C2C" : "Z2Z", libs_cufft_status(st));
		return -1;
	}
	const long long amax = p.nf - 1 - p.k0 > p.k0 ? p.nf - 1 - p.k0 : p.k0;
	const dim3 fin_grid((unsigned)((amax + PB * KE) / (PB * KE)), (unsigned)p.nser);
	nu_finish<T, C><<<fin_grid, PB, 0, s>>>(p);
	CUDA_CHECK(cudaGetLastError(), "lombscargle nufft epilogue launch");
	return 0;
}

/*
 * lombscargle_many: one group of gc series of the table (p.s0 on), each
 * with its three grids: memset, sums (a block per series), the windowed
 * spreading (bx blocks per series over its runs of chunk samples), the
 * cuFFT of the group (plan: 3 G transforms, G >= gc; the grids past gc
 * hold what they held, transformed and never read), the epilogue.
 */
template <typename T, typename C> int run_group(nu_params &p, bool w, long long gc, long long chunk,
						long long bx, const cuda_launch_ctx *ctx,
						libs_cufft_handle plan, char *err, size_t errlen)
{
	cudaStream_t s = (cudaStream_t)ctx->stream;
	const libs_cufft *f = libs_get_cufft(err, errlen);
	CUDA_CHECK(cudaMemsetAsync(p.grid, 0, (size_t)gc * 6 * (size_t)p.nfine * sizeof(C), s),
		   "cudaMemsetAsync (nufft grids)");
	(w ? nu_sums<T, C, true> : nu_sums<T, C, false>)<<<(unsigned)gc, SB, 0, s>>>(p);
	CUDA_CHECK(cudaGetLastError(), "lombscargle_many nufft sums launch");
	pick_win<T, C>(w, win_lanes(p.ns))<<<dim3((unsigned)bx, (unsigned)gc), PB,
					     (size_t)WIN * 6 * sizeof(C), s>>>(p, (int)chunk);
	CUDA_CHECK(cudaGetLastError(), "lombscargle_many nufft spreading launch");
	int st = sizeof(C) == 4 ? f->exec_c2c(plan, p.grid, p.grid, LIBS_CUFFT_INVERSE)
				: f->exec_z2z(plan, p.grid, p.grid, LIBS_CUFFT_INVERSE);
	if (st != 0) {
		snprintf(err, errlen, "lombscargle_many: %s: cufftExec%s: %s", f->describe,
			 sizeof(C) == 4 ? "C2C" : "Z2Z", libs_cufft_status(st));
		return -1;
	}
	const long long amax = p.nf - 1 - p.k0 > p.k0 ? p.nf - 1 - p.k0 : p.k0;
	const dim3 fin_grid((unsigned)((amax + PB * KE) / (PB * KE)), (unsigned)gc);
	nu_finish<T, C><<<fin_grid, PB, 0, s>>>(p);
	CUDA_CHECK(cudaGetLastError(), "lombscargle_many nufft epilogue launch");
	return 0;
}

/* sin and cos of pi a on the host (a step of the epilogue's rotations). */
void sincospi_host(double a, double *s, double *c)
{
	*s = sin(M_PI * a);
	*c = cos(M_PI * a);
}

/* The plan's and the grid's part of nu_params (both launches'). */
void plan_params(nu_params &p, const ls_nufft_plan &pl, double f0, double df)
{
	p.nf = pl.m;
	p.k0 = pl.k0;
	p.nfine = pl.nfine;
	ls_nufft_cycles(f0, df, pl.k0, &p.fc_hi, &p.fc_lo, &p.df_hi, &p.df_lo);
	p.ns = pl.ns;
	p.nq = pl.nq;
	p.beta = pl.beta;
	for (int q = 0; q < pl.nq; q++) {
		p.qz[q] = pl.qz[q];
		p.qw[q] = pl.qw[q];
		sincospi_host(PB * pl.ns * pl.qz[q] / (double)pl.nfine, &p.qs[q], &p.qc[q]);
	}
}

} // namespace

/* 1 when the NUFFT can run here (a grid, cuFFT, scratch and plans offered); else 0 and why. */
extern "C" int ls_nufft_usable(const kernel_args *a, const cuda_launch_ctx *ctx, char *why,
			       size_t whylen)
{
	char e[768];
	if (a->v[LS_FREQS].present) {
		snprintf(why, whylen, "lombscargle: the NUFFT takes the grid f0, df, nf only");
		return 0;
	}
	if (libs_get_cufft(e, sizeof(e)) == NULL) {
		snprintf(why, whylen,
			 "lombscargle: method=nufft needs cuFFT on the cuda backend: %s", e);
		return 0;
	}
	if (lombscargle_series(a) > 65535) {
		snprintf(why, whylen,
			 "lombscargle: method=nufft takes a batch of at most 65535 series, got %zu "
			 "(use method=direct, or split the batch)",
			 lombscargle_series(a));
		return 0;
	}
	if (ctx->scratch == NULL || ctx->fft == NULL) {
		snprintf(why, whylen,
			 "lombscargle: method=nufft needs scratch memory and a cuFFT plan cache "
			 "from the backend, and this launch offers none");
		return 0;
	}
	return 1;
}

/* Whether a run spreads and transforms in float32 grids: nufft.c says which and why. */
static bool narrow_grids(bool f32, int mode, bool fm)
{
	return ls_nufft_narrow(f32, mode, fm) != 0;
}

/*
 * method=auto's cost model: expected kernel µs of a warm run, direct (grid
 * kernel) and NUFFT, from bench/lombscargle_nufft (gpud's kernel_us: CUDA
 * events around the launch, medians of 7 runs, N = 10^3..10^5, M =
 * 10^5..10^7, the peer's signal), fitted by hand. Direct measured on an
 * NVIDIA H100 80GB HBM3, NUFFT on an NVIDIA H200 (driver 580.159, CUDA 13.0;
 * the direct kernel's rates agree on both within 5%):
 *   direct: 20 + N M / rate, rate 1.5e6 (float64) and 3.2e6 (float32)
 *           samples x frequencies per µs once M fills the GPU, and M / 2.5e5
 *           (float64) / M / 6e5 (float32) of it below (10^5 frequencies are
 *           too few threads: 1705 µs at N = 10^4, not 687); within 10%
 *           from N M = 10^9 up;
 *   NUFFT:  fixed 90 (float64) / 60 (float32), 6e-4 / 3e-4 per sample
 *           (phases and spreading, a lane per cell), and per frequency
 *           2.6e-4 / 1.7e-4: the memset, the FFT and the epilogue over
 *           three grids of 2 M points.
 * So the NUFFT wins from about 500 (float64) / 700 (float32) samples at M
 * of 10^6 and more, and 600 / 300 at 10^5; below that direct is as fast
 * and exact.
 */
extern "C" double ls_direct_cost_us(const kernel_args *a)
{
	bool f32 = a->dtype == GPUD_F32;
	double nb = (double)lombscargle_series(a);
	double m = (double)a->v[LS_PGRAM].arr.count / nb, full = f32 ? 6e5 : 2.5e5;
	double rate = (f32 ? 3.2e6 : 1.5e6) * (m < full ? m / full : 1.0);
	return nb * (20 + (double)a->v[LS_X].arr.count * m / rate);
}

/* A batch of B series: B y-grids beside the two shared ones, so the
 * per-frequency part grows as (2 + B) / 3, the per-sample part as B. */
extern "C" double ls_nufft_cost_us(const kernel_args *a)
{
	/* float32 with float64 grids costs as float64 */
	bool f32 = narrow_grids(a->dtype == GPUD_F32, (int)a->v[LS_NORMALIZE].s.i64,
				a->v[LS_FLOATING_MEAN].s.b);
	double nb = (double)lombscargle_series(a);
	double n = (double)a->v[LS_X].arr.count, m = (double)a->v[LS_PGRAM].arr.count / nb;
	return (f32 ? 60 : 90) + nb * (f32 ? 3e-4 : 6e-4) * n +
	       m * (f32 ? 1.7e-4 : 2.6e-4) * (2 + nb) / 3;
}

extern "C" int ls_nufft_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err,
			       size_t errlen)
{
	const kernel_value *v = a->v;
	if (!ls_nufft_usable(a, ctx, err, errlen))
		return -1;
	if (v[LS_X].arr.count > 0x7fffffff) {
		snprintf(err, errlen,
			 "lombscargle: x has %zu points; the cuda kernel takes at most 2^31-1",
			 v[LS_X].arr.count);
		return -1;
	}
	nu_params p;
	ls_nufft_plan pl;
	const int nser = (int)lombscargle_series(a);
	ls_nufft_setup(&pl, (long long)(v[LS_PGRAM].arr.count / (size_t)nser), ls_nufft_tol_for(a));
	if (pl.nfine > INT_MAX) {
		snprintf(err, errlen,
			 "lombscargle: the NUFFT's fine grid of %lld points is too big", pl.nfine);
		return -1;
	}
	bool f32 = a->dtype == GPUD_F32;
	bool narrow = narrow_grids(f32, (int)v[LS_NORMALIZE].s.i64, v[LS_FLOATING_MEAN].s.b);
	size_t csize = narrow ? sizeof(float) : sizeof(double);
	libs_cufft_handle plan;
	size_t work = 0;
	if (libs_fft_cache_plan((libs_fft_cache *)ctx->fft,
				narrow ? LIBS_CUFFT_C2C : LIBS_CUFFT_Z2Z, (int)pl.nfine, 2 + nser,
				&plan, &work, err, errlen) != 0)
		return -1;
	size_t grid_bytes = ((size_t)pl.nfine * 2 * (2 + (size_t)nser) * csize + 255) &
			    ~(size_t)255;
	size_t st_bytes = ((size_t)nser * sizeof(nu_stats) + 255) & ~(size_t)255;
	char *mem = (char *)ctx->scratch(ctx, st_bytes + grid_bytes + work, err, errlen);
	if (mem == NULL)
		return -1;
	const libs_cufft *f = libs_get_cufft(err, errlen);
	int st = f->set_work_area(plan, work ? mem + st_bytes + grid_bytes : nullptr);
	if (st != 0) {
		snprintf(err, errlen, "lombscargle: %s: cufftSetWorkArea: %s", f->describe,
			 libs_cufft_status(st));
		return -1;
	}
	p.x = v[LS_X].arr.data;
	p.y = v[LS_Y].arr.data;
	p.w = v[LS_WEIGHTS].present ? v[LS_WEIGHTS].arr.data : nullptr;
	p.out = v[LS_PGRAM].arr.data;
	p.n = (int)v[LS_X].arr.count;
	p.nser = nser;
	plan_params(p, pl, v[LS_F0].s.f64, v[LS_DF].s.f64);
	p.tab = nullptr;
	p.s0 = 0;
	p.verdicts = nullptr;
	p.precenter = v[LS_PRECENTER].s.b;
	p.mode = (int)v[LS_NORMALIZE].s.i64;
	p.legacy = v[LS_LEGACY].s.b;
	p.fm = v[LS_FLOATING_MEAN].s.b;
	/* float32 sums resolve no less than float32's epsneg (as the direct kernel) */
	p.clamp = f32 ? 5.9604644775390625e-08 : LS_EPSNEG;
	p.st = (nu_stats *)mem;
	p.grid = mem + st_bytes;
	p.verdict = ctx->verdict;
	bool w = v[LS_WEIGHTS].present;
	return narrow ? run<float, float>(p, w, ctx, plan, err, errlen)
	       : f32  ? run<float, double>(p, w, ctx, plan, err, errlen)
		      : run<double, double>(p, w, ctx, plan, err, errlen);
}

/* lombscargle_many's scratch for the groups' grids, at most (a group holds
 * one series at least, whatever its grids need). */
#define MANY_GRID_BUDGET ((size_t)256 << 20)

extern "C" int ls_many_nufft_launch(const ls_many *mp, const ls_series *dev_series, size_t b,
				    long long total_n, unsigned *dev_verdicts,
				    const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	char e[768];
	if (mp->freqs) {
		snprintf(err, errlen, "lombscargle_many: the NUFFT takes the grid f0, df, nf only");
		return -1;
	}
	if (libs_get_cufft(e, sizeof(e)) == NULL) {
		snprintf(err, errlen,
			 "lombscargle_many: method=nufft needs cuFFT on the cuda backend: %s", e);
		return -1;
	}
	if (ctx->scratch == NULL || ctx->fft == NULL) {
		snprintf(err, errlen,
			 "lombscargle_many: method=nufft needs scratch memory and a cuFFT plan "
			 "cache from the backend, and this launch offers none");
		return -1;
	}
	if (total_n > 0x7fffffff) {
		snprintf(err, errlen,
			 "lombscargle_many: x has %lld points; the cuda kernel takes at most "
			 "2^31-1",
			 total_n);
		return -1;
	}
	if (b == 0)
		return 0;
	/* the tolerance for the shortest series there may be (ls_nufft_tol
	 * tightens it below 1000 samples): every series at least as accurate
	 * as its own lombscargle run */
	const double eps = mp->eps > 0 ? mp->eps : mp->dtype == GPUD_F32 ? 1e-5 : 1e-9;
	ls_nufft_plan pl;
	const bool f32 = mp->dtype == GPUD_F32;
	const bool narrow = narrow_grids(f32, mp->normalize, mp->floating_mean != 0);
	ls_nufft_setup(&pl, mp->m, ls_nufft_tol(eps, 1, narrow));
	if (pl.nfine > INT_MAX) {
		snprintf(err, errlen,
			 "lombscargle_many: the NUFFT's fine grid of %lld points is too big",
			 pl.nfine);
		return -1;
	}
	const size_t csize = narrow ? sizeof(float) : sizeof(double);
	const size_t per = (size_t)pl.nfine * 6 * csize; /* a series' three grids */
	size_t g = MANY_GRID_BUDGET / per;
	g = g < 1 ? 1 : g > b ? b : g > 65535 ? 65535 : g;
	/* cuFFT's batch is an int: 3 G transforms */
	while (g > 1 && 3 * g * (size_t)pl.nfine > (size_t)INT_MAX)
		g /= 2;
	libs_cufft_handle plan;
	size_t work = 0;
	if (libs_fft_cache_plan((libs_fft_cache *)ctx->fft,
				narrow ? LIBS_CUFFT_C2C : LIBS_CUFFT_Z2Z, (int)pl.nfine,
				(int)(3 * g), &plan, &work, err, errlen) != 0)
		return -1;
	const size_t st_bytes = (g * sizeof(nu_stats) + 255) & ~(size_t)255;
	const size_t grid_bytes = (g * per + 255) & ~(size_t)255;
	char *mem = (char *)ctx->scratch(ctx, st_bytes + grid_bytes + work, err, errlen);
	if (mem == NULL)
		return -1;
	const libs_cufft *f = libs_get_cufft(err, errlen);
	int st = f->set_work_area(plan, work ? mem + st_bytes + grid_bytes : nullptr);
	if (st != 0) {
		snprintf(err, errlen, "lombscargle_many: %s: cufftSetWorkArea: %s", f->describe,
			 libs_cufft_status(st));
		return -1;
	}
	nu_params p;
	memset(&p, 0, sizeof(p));
	p.nser = 1;
	plan_params(p, pl, mp->f0, mp->df);
	p.precenter = mp->precenter;
	p.mode = mp->normalize;
	p.legacy = mp->legacy;
	p.fm = mp->floating_mean;
	p.clamp = f32 ? 5.9604644775390625e-08 : LS_EPSNEG;
	p.st = (nu_stats *)mem;
	p.grid = mem + st_bytes;
	p.tab = dev_series;
	p.verdicts = dev_verdicts;
	const bool w = mp->no_weights == 0;
	/* the spreading's runs, cut for the average series as lombscargle's for
	 * one of the group's samples in all; blocks enough to fill the device,
	 * each series' longer than the average taken by the blocks in turn */
	const long long navg = total_n / (long long)b > 0 ? total_n / (long long)b : 1;
	const long long per_pass = PB / win_lanes(pl.ns),
			sms = ctx->sm_count > 0 ? ctx->sm_count : 1;
	for (size_t s0 = 0; s0 < b; s0 += g) {
		const long long gc = (long long)(b - s0 < g ? b - s0 : g);
		long long chunk = (navg * gc / (4 * sms) + per_pass - 1) / per_pass * per_pass;
		chunk = chunk < per_pass ? per_pass : chunk > 32 * per_pass ? 32 * per_pass : chunk;
		long long bx = (navg + chunk - 1) / chunk, fill = (4 * sms + gc - 1) / gc,
			  most = (total_n + chunk - 1) / chunk;
		bx = bx < fill ? fill : bx;
		bx = bx > most ? most : bx;
		bx = bx < 1 ? 1 : bx;
		p.s0 = (long long)s0;
		if ((narrow ? run_group<float, float>(p, w, gc, chunk, bx, ctx, plan, err, errlen)
		     : f32  ? run_group<float, double>(p, w, gc, chunk, bx, ctx, plan, err, errlen)
			    : run_group<double, double>(p, w, gc, chunk, bx, ctx, plan, err,
                                                       errlen)) != 0)
			return -1;
	}
	return 0;
}
