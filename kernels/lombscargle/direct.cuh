/*
 * kernels/lombscargle/direct.cuh — the direct method's device code, which
 * lombscargle.cu (one series, or a batch of y, per launch) and many.cu (a
 * table of series of their own lengths in one launch) share: the run's
 * parameters, the samples' sums (prepare), sine and cosine in cycles, the
 * sums per frequency and their epilogue, and one block's share of a series
 * (ls_block). lombscargle.cu's header comment says how and why. Inline device
 * code only, in each includer's anonymous namespace, after device.cuh; no
 * state.
 */
#ifndef GPUD_LOMBSCARGLE_DIRECT_CUH
#define GPUD_LOMBSCARGLE_DIRECT_CUH

constexpr int B = 256;  /* threads per block */
constexpr int TILE = B; /* samples staged at a time */
constexpr int KA = 2;   /* array: frequencies per thread */
/* float32 with floating_mean accumulates in a shifted frame (below): 7 sums. */
template <typename T, bool FM> struct shifted {
	static constexpr bool value = FM && sizeof(T) == 4;
};
/* Frequencies per thread: arrays KA; grids 16 for float32, 8 for float64
 * and float32 shifted (7 sums and the shifts per frequency): as many as fit
 * two blocks per SM. float64 with floating_mean spills a few registers at 8
 * (ptxas -v) and is faster so than at 7 or 5 (H200): its anchor, 12 FP64
 * operations, is shared by fewer frequencies there. */
__host__ __device__ constexpr int kfreqs(bool f32, bool grid, bool fm)
{
	return !grid ? KA : f32 ? (fm ? 8 : 16) : 8;
}
/* The plain float64 grid also comes with KWIDE frequencies a thread, at one
 * block per SM (197 registers), which lombscargle.cu launches where that
 * still gives every SM a block: the anchor and the step, 17 FP64
 * operations a sample, then serve twice the frequencies (6.8 operations a
 * pair against 7.6), and the 8 warps an SM keep the FP64 pipe as busy as
 * 16 did (H200, 114 x 2^20, the blocks' span in one process: 71.7 against
 * 76.4 us). Below that, 8 a thread put twice the blocks to work. */
constexpr int KWIDE = 16;
__host__ __device__ constexpr bool widens(bool f32, bool grid, bool w, bool fm)
{
	return !f32 && grid && !w && !fm;
}
/* The blocks an SM must hold (__launch_bounds__) for K frequencies a thread. */
__host__ __device__ constexpr int min_blocks(bool f32, bool grid, int k)
{
	return !grid ? (f32 ? 4 : 3) : !f32 && k > 8 ? 1 : 2;
}
constexpr double INV_2PI = 0.15915494309189533577;
/* frequency-samples a thread works through between two reads of
 * cuda_launch_ctx.stop (under a millisecond in float32, a few in float64) */
constexpr long long STOP_WORK = 1LL << 17;

struct ls_params {
	const void *x, *y, *w, *freqs;
	void *out;
	int n;
	long long nf;
	double f0, df; /* grid */
	int precenter, mode, legacy;
	unsigned *verdict;
	const unsigned *stop; /* cuda_launch_ctx.stop: read between chunks of frequencies */
};

/* What the samples give every block (ls_prep). */
struct ls_prep {
	double shift, scale; /* y shift: mean(y) with precenter, and Y with floating_mean; the
				power's factor */
	double invw;         /* 1 / sum of weights, or 1 / N */
	double y1;           /* floating_mean: Σ w y of the y as staged (0 but for rounding) */
	int bad;             /* LS_BAD_WEIGHT | LS_ZERO_WEIGHTS */
};

/* Weight j: p.w's; where the includer defines LS_NULL_WEIGHTS to 1 (many.cu:
 * a series of a table may have no weights, all equal), 1 for a NULL p.w.
 * lombscargle.cu leaves it 0: its weighted kernels always have weights, and
 * the test would cost them registers. */
#ifndef LS_NULL_WEIGHTS
#define LS_NULL_WEIGHTS 0
#endif
template <typename T> __device__ __forceinline__ double wload(const ls_params &p, long long j)
{
	return LS_NULL_WEIGHTS && !p.w ? 1.0 : ld<T>(p.w, j);
}

template <typename T, bool W, bool FM>
__device__ ls_prep prepare(const ls_params &p, double *scratch)
{
	ls_prep r;
	double sy = 0, sw = 0, y2 = 0;
	int bad = 0;
	for (int j = threadIdx.x; j < p.n; j += B) {
		double v = ld<T>(p.y, j);
		sy += v;
		y2 += v * v;
		if (W) {
			double w = wload<T>(p, j);
			bad |= !(w >= 0);
			sw += w;
		}
	}
	sy = block_sum<B>(sy, scratch);
	double ydot = block_sum<B>(y2, scratch);
	r.shift = p.precenter ? sy / p.n : 0.0;
	if (W) {
		sw = block_sum<B>(sw, scratch);
		bad = __syncthreads_or(bad);
		r.bad = (bad ? LS_BAD_WEIGHT : 0) | (!(sw > 0) ? LS_ZERO_WEIGHTS : 0);
		r.invw = 1.0 / sw;
	} else {
		r.bad = 0;
		r.invw = 1.0 / p.n;
	}
	double s1 = 0, s2 = 0;
	for (int j = threadIdx.x; j < p.n; j += B) {
		double w = W ? wload<T>(p, j) * r.invw : r.invw, v = ld<T>(p.y, j) - r.shift;
		s1 += w * v;
		s2 += w * v * v;
	}
	const double ybar = block_sum<B>(s1, scratch);
	double yy = block_sum<B>(s2, scratch);
	/* pgram = p * scale, p = 2 (a YC + b YS) (normalised sums) */
	if (p.mode == LS_NORMALIZED)
		/* not fused: one sample gives 0 exactly, so 0/0 = NaN, as scipy */
		r.scale = p.legacy ? (double)p.n / (2 * ydot)
				   : 0.5 / (FM ? yy - __dmul_rn(ybar, ybar) : yy);
	else
		r.scale = 0.25 * p.n;
	r.y1 = 0;
	if (FM) {
		/* floating_mean subtracts Y C from YC: y staged less Y (the weighted mean)
		 * makes YC small where it is, with nothing left to cancel but the
		 * rounding of the staged values, which y1 carries */
		r.shift += ybar;
		double res = 0;
		for (int j = threadIdx.x; j < p.n; j += B) {
			double w = W ? wload<T>(p, j) * r.invw : r.invw;
			res += w * (double)(T)(ld<T>(p.y, j) - r.shift);
		}
		r.y1 = block_sum<B>(res, scratch);
	}
	return r;
}

/* --- sine and cosine of 2 pi u, u in cycles -------------------------------------------------- */

/* float32: f/2pi as hi + lo; u = (hi + lo) x reduced to t in [-0.5, 0.5]
 * cycles: n = rint(hi x) (hi x + M rounded once, by an fma, to an integer
 * plus M), then hi x - n by one fma (rounded once, an error below 2^-25
 * cycles, far under the fast sine's 2^-20.9), plus lo x. */
__device__ __forceinline__ float reduce_f(float hi, float lo, float x)
{
	const float M = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
	float n = __fsub_rn(__fmaf_rn(hi, x, M), M);
	return fmaf(lo, x, fmaf(hi, x, -n));
}

__device__ __forceinline__ void split(double v, float *hi, float *lo)
{
	*hi = (float)v;
	*lo = (float)(v - (double)*hi);
}

/*
 * float64: sin and cos of 2 pi v x / TAB (v in table steps per unit x: the
 * frequency in cycles times TAB). n = rint(v x) by one fma with 1.5 * 2^52
 * (the sum rounds to an integer), r = v x - n by a second fma (rounded once:
 * |r| <= 1/2 step, 1/4096 cycles). cos and sin of 2 pi n/TAB come from a
 * table in shared memory (TAB entries, made by each block: table_make), of
 * a = 2 pi r/TAB (|a| <= 0.0016) by Taylor polynomials to degree 3 and 4
 * (the next terms, a^5/120 <= 7.1e-17 and a^6/720 <= 2e-20, are below half
 * an ulp of 1), combined by the angle sum. 12 FP64 operations (a table of
 * 1024 entries took 14: v x rounded before the reduction, and the sine to
 * degree 5), no libm call.
 */
constexpr int TAB = 2048;
__device__ __forceinline__ void sincos_steps(double v, double x, const double2 *tab, double *s,
					     double *c)
{
	const double M = 6755399441055744.0; /* 1.5 * 2^52: adding it rounds to an integer */
	double qm = fma(v, x, M);
	int k = __double2loint(qm) & (TAB - 1); /* n mod TAB */
	double r = fma(v, x, M - qm);           /* v x - n (M - qm = -n exactly) */
	double r2 = r * r;
	/* in steps, r/TAB cycles: the coefficients below are those in cycles
	 * times TAB^-(2k+1) (sin) and TAB^-2k (cos), powers of 2, exact */
	constexpr double T1 = 1.0 / TAB, T2 = T1 * T1, T3 = T2 * T1, T4 = T2 * T2;
	/* sin(2 pi u) = u (S0 + u2 S1), S_k = (-1)^k (2pi)^(2k+1)/(2k+1)! */
	double sb = r * fma(r2, -4.1341702240399760e+01 * T3, 6.2831853071795860e+00 * T1);
	/* cos(2 pi u) - 1 = u2 (C1 + u2 C2), C_k = (-1)^k (2pi)^(2k)/(2k)! */
	double cb = r2 * fma(r2, 6.4939394022668300e+01 * T4, -1.9739208802178716e+01 * T2);
	const double2 t = tab[k]; /* (cos, sin) of 2 pi k / TAB */
	*s = fma(t.y, cb, fma(t.x, sb, t.y));
	*c = fma(t.x, cb, fma(-t.y, sb, t.x));
}

/*
 * The table: (cos, sin) of 2 pi i / TAB. Entries 64 k and 1..63 by sincospi,
 * the others by the angle sum of two of them (one rounding of a product
 * pair: about an ulp, as sincospi), so a block makes it with 96 sincospi,
 * not TAB. The block's next barrier publishes it.
 */
static_assert(B >= 128 && TAB % 64 == 0 && TAB / 64 <= 64, "table_make's threads");
__device__ __forceinline__ void table_make(double2 *tab)
{
	const int t = threadIdx.x;
	if (t < TAB / 64)
		sincospi(2.0 * (64 * t) / TAB, &tab[64 * t].y, &tab[64 * t].x);
	else if (t >= 64 && t < 128)
		sincospi(2.0 * (t - 64) / TAB, &tab[t - 64].y, &tab[t - 64].x);
	__syncthreads();
	for (int i = t; i < TAB; i += B) {
		if (i < 64 || (i & 63) == 0)
			continue;
		const double2 a = tab[i & ~63], b = tab[i & 63];
		tab[i].x = fma(a.x, b.x, -a.y * b.y);
		tab[i].y = fma(a.x, b.y, a.y * b.x);
	}
}

/* --- the epilogue: rotated sums to the result --------------------------------------------------- */

__device__ __forceinline__ float fdiv(float a, float b)
{
	return __fdividef(a, b); /* 2 ulp; the denominators are far from 2^126 */
}
__device__ __forceinline__ double fdiv(double a, double b)
{
	return a / b;
}

/*
 * Per frequency: CC = Σ w cos², CS = Σ w cos sin, C = Σ w cos, S = Σ w sin,
 * YC = Σ w y cos, YS = Σ w y sin (y as staged). Shifted (float32 with
 * floating_mean), cos and sin less those of sample 0 at that frequency (c0,
 * s0), and SS = Σ w sin² besides: floating_mean needs CC - C², which cancels
 * where the cosines hardly vary (low frequencies, aliases); from shifted
 * values the two terms are small there, and so are their rounding errors
 * (the variance is the same in any frame).
 */
template <typename T> struct sums {
	T cc, cs, ss, c, s, yc, ys;
};

template <typename T, bool W, bool FM>
__device__ __forceinline__ void finish(const ls_params &p, const ls_prep &pr, sums<T> m,
				       long long k)
{
	constexpr bool SH = shifted<T, FM>::value;
	/* scipy clamps at float64's epsneg (it computes in float64); float32 sums
	 * resolve no less than float32's, so the float32 kernels clamp there */
	const T eps = sizeof(T) == 4 ? (T)5.9604644775390625e-08 : (T)LS_EPSNEG;
	if (!W) { /* unweighted: plain sums, times 1/N */
		const T inv = (T)pr.invw;
		m.cc *= inv, m.cs *= inv, m.ss *= inv, m.c *= inv, m.s *= inv, m.yc *= inv,
			m.ys *= inv;
	}
	/* the covariances of cos and sin (floating_mean), or the raw moments */
	T vcc = m.cc, vcs = m.cs, vss = SH ? m.ss : (T)1 - m.cc, yc0 = m.yc, ys0 = m.ys;
	if (FM) {
		const T y1 = (T)pr.y1;
		vcc -= m.c * m.c;
		vss -= m.s * m.s;
		vcs -= m.c * m.s;
		yc0 -= y1 * m.c;
		ys0 -= y1 * m.s;
	}
	if (p.mode != LS_AMPLITUDE) {
		/* The power is 2 y' M^-1 y (times the scale), M = [[vcc, vcs], [vcs,
		 * vss]], y = (yc0, ys0): what the rotation by tau below gives (tau
		 * diagonalises M; c2 and s2 are its eigenvalues), without tau's
		 * square roots and four divisions. det's rounding is about eps tr^2,
		 * so this form is taken only where the eigenvalues' ratio is above
		 * about 1/1024 (det > tr^2 / 1024): there it agrees with the rotation
		 * to some 1000 ulp of the power at worst, and no clamp below acts.
		 * Near-degenerate frequencies (0, aliases of the sampling, one
		 * sample) take the rotation and its clamps, as scipy. */
		const T tr = vcc + vss, det = fma(vcc, vss, -vcs * vcs);
		if (det > tr * tr * (T)(1.0 / 1024)) {
			T q = fma(vss * yc0, yc0, fma(vcc * ys0, ys0, -2 * vcs * yc0 * ys0));
			((T *)p.out)[k] = 2 * fdiv(q, det) * (T)pr.scale;
			return;
		}
	}
	/* tau = atan2(2 cs, cc - ss) / 2: its cosine and sine by the half angle */
	T xx = vcc - vss, yy = 2 * vcs, rr = sqrt(xx * xx + yy * yy);
	T ct = 1, st = 0;
	if (rr > 0) {
		T c2 = fdiv(xx, rr), s2 = fdiv(yy, rr);
		if (xx >= 0) {
			ct = sqrt((1 + c2) / 2);
			st = fdiv(s2, 2 * ct);
		} else {
			st = copysign(sqrt((1 - c2) / 2), s2);
			ct = fdiv(s2, 2 * st);
		}
	}
	/* rotated by tau: cos(wx - tau) = cos wx cos tau + sin wx sin tau */
	T yc = ct * yc0 + st * ys0, ys = ct * ys0 - st * yc0;
	T cross = 2 * ct * st * vcs;
	T c2 = ct * ct * vcc + cross + st * st * vss;
	/* scipy: SS = 1 - CC after the rotation (the variance of sin with floating_mean) */
	T s2 = FM ? st * st * vcc - cross + ct * ct * vss : (T)1 - c2;
	c2 = c2 > eps ? c2 : eps;
	s2 = s2 > eps ? s2 : eps;
	T a = fdiv(yc, c2), b = fdiv(ys, s2);
	if (p.mode == LS_AMPLITUDE) {
		T *o = (T *)p.out;
		o[2 * k] = a * ct - b * st;
		o[2 * k + 1] = a * st + b * ct;
	} else {
		((T *)p.out)[k] = 2 * (a * yc + b * ys) * (T)pr.scale;
	}
}

template <typename T> __device__ void store_nan(const ls_params &p, long long k)
{
	T nan = (T)__longlong_as_double(0x7ff8000000000000ll);
	if (p.mode == LS_AMPLITUDE) {
		((T *)p.out)[2 * k] = nan;
		((T *)p.out)[2 * k + 1] = nan;
	} else {
		((T *)p.out)[k] = nan;
	}
}

/* One sample into the sums: cos c, sin s, y as staged (times w), weight w;
 * shifted, c0 and s0 are sample 0's cos and sin at this frequency. */
template <typename T, bool W, bool FM>
__device__ __forceinline__ void add(sums<T> &a, T c, T s, T y, T w, T c0, T s0)
{
	if (shifted<T, FM>::value) {
		c -= c0;
		s -= s0;
		T wc = W ? w * c : c, ws = W ? w * s : s;
		a.cc = fma(wc, c, a.cc);
		a.cs = fma(wc, s, a.cs);
		a.ss = fma(ws, s, a.ss);
		a.c += wc;
		a.s += ws;
	} else if (W) {
		T wc = w * c;
		a.cc = fma(wc, c, a.cc);
		a.cs = fma(wc, s, a.cs);
		if (FM) {
			a.c += wc;
			a.s = fma(w, s, a.s);
		}
	} else {
		a.cc = fma(c, c, a.cc);
		a.cs = fma(c, s, a.cs);
		if (FM) {
			a.c += c;
			a.s += s;
		}
	}
	a.yc = fma(y, c, a.yc);
	a.ys = fma(y, s, a.ys);
}

/* One sample into the sums, cos and sin already times sqrt(w) = sw (grids);
 * y times sw too. */
template <typename T, bool W, bool FM>
__device__ __forceinline__ void add_scaled(sums<T> &a, T c, T s, T y, T sw, T c0, T s0)
{
	if (shifted<T, FM>::value) {
		c = W ? fma(-sw, c0, c) : c - c0;
		s = W ? fma(-sw, s0, s) : s - s0;
		a.ss = fma(s, s, a.ss);
	}
	a.cc = fma(c, c, a.cc);
	a.cs = fma(c, s, a.cs);
	if (FM) {
		a.c = W ? fma(sw, c, a.c) : a.c + c;
		a.s = W ? fma(sw, s, a.s) : a.s + s;
	}
	a.yc = fma(y, c, a.yc);
	a.ys = fma(y, s, a.ys);
}

template <typename T> __device__ __forceinline__ void zero(sums<T> &a)
{
	a.cc = a.cs = a.ss = a.c = a.s = a.yc = a.ys = 0;
}
template <typename T> __device__ __forceinline__ void fold(sums<T> &t, const sums<T> &a)
{
	t.cc += a.cc, t.cs += a.cs, t.ss += a.ss, t.c += a.c, t.s += a.s, t.yc += a.yc,
		t.ys += a.ys;
}

/* Shared staging of one tile: a sample's x, y and the grid's step side by
 * side (one vector load), the weights apart. */
template <typename T> struct __align__(4 * sizeof(T)) smp
{
	T x, y, sc, ss;
};
template <typename T> struct tile {
	smp<T> s[TILE];
	T w[TILE];
};

/* Tile [t0, t0 + m): x; y shifted (times the normalised weight, weighted); the weight; the step. */
template <typename T, bool W, bool GRID>
__device__ void stage(const ls_params &p, const ls_prep &pr, tile<T> &tl, int t0, double step,
		      const double2 *tab)
{
	int j = t0 + (int)threadIdx.x;
	if (j < p.n) {
		double x = ld<T>(p.x, j), y = ld<T>(p.y, j) - pr.shift;
		double w = W ? wload<T>(p, j) * pr.invw : 1.0;
		tl.s[threadIdx.x].x = (T)x;
		/* grids scale each sample's cos and sin by sqrt(w) (the weights then
		 * cost two multiplies per sample, not one per frequency), so y by
		 * sqrt(w) too; arrays multiply by w */
		if (GRID)
			w = sqrt(w);
		tl.s[threadIdx.x].y = (T)(W ? w * y : y);
		tl.w[threadIdx.x] = (T)w;
		if (GRID) {
			if (sizeof(T) == 4) {
				float hi, lo, s, c;
				split(step, &hi, &lo);
				sincospif(2 * reduce_f(hi, lo, (float)x), &s, &c);
				tl.s[threadIdx.x].sc = (T)c;
				tl.s[threadIdx.x].ss = (T)s;
			} else {
				double s, c;
				sincos_steps(step * TAB, x, tab, &s, &c);
				tl.s[threadIdx.x].sc = (T)c;
				tl.s[threadIdx.x].ss = (T)s;
			}
		}
	}
}

/* cos and sin of 2 pi u x, u = hi + lo (float32), or of 2 pi v x / TAB, v = hi (float64). */
__device__ __forceinline__ void anchor(float hi, float lo, float x, const double2 *, float *c,
				       float *s)
{
	__sincosf(reduce_f(hi, lo, x) * 6.28318530717958648f, s, c);
}
__device__ __forceinline__ void anchor(double v, double, double x, const double2 *tab, double *c,
				       double *s)
{
	sincos_steps(v, x, tab, s, c);
}

template <typename T> struct freq_t {
	T hi, lo; /* f/2pi: float32 as hi + lo; float64 in hi, times TAB (sincos_steps) */
};
template <typename T> __device__ __forceinline__ freq_t<T> cycles(double f)
{
	freq_t<T> r;
	if (sizeof(T) == 4) {
		float hi, lo;
		split(f * INV_2PI, &hi, &lo);
		r.hi = (T)hi;
		r.lo = (T)lo;
	} else {
		r.hi = (T)(f * (INV_2PI * TAB));
		r.lo = 0;
	}
	return r;
}

/*
 * One block's share of a run, K frequencies a thread (kfreqs(), or KWIDE):
 * block bx of gx blocks takes the chunks of B*K frequencies bx, bx + gx, ...
 * of the series p (lombscargle_kernel: one
 * series over the grid; many.cu: one series of a table per row of blocks).
 */
template <typename T, bool GRID, bool W, bool FM, int K>
__device__ __forceinline__ void ls_block(const ls_params &p, long long bx, long long gx)
{
	constexpr bool PARTIAL = sizeof(T) == 4 && !GRID;
	constexpr bool SH = shifted<T, FM>::value;
	/* Samples a turn on grids: several, so that the next anchor's sine
	 * and cosine are under way during this one's recurrence (H200, 114 x
	 * 2^20: float32 two, 48.9 -> 37.3 us, and more lose; float64 four,
	 * 85.8 -> 83.2 us). float64 with weights or floating_mean takes two:
	 * its sums leave no registers for four, which spilled (10,000 x 2^20:
	 * 6.66 -> 6.56 ms weighted, 8.04 -> 7.68 with floating_mean, 9.23 ->
	 * 8.79 with both). Arrays gain nothing: ptxas unrolls them as it sees
	 * fit. */
	constexpr int UNROLL = sizeof(T) == 4 || W || FM ? 2 : 4;
	__shared__ tile<T> tl;
	__shared__ double scratch[B / 32];
	__shared__ double2 tab[sizeof(T) == 8 ? TAB : 1];
	if (sizeof(T) == 8)
		table_make(tab);
	ls_prep pr;
	if (!W && !FM && !p.precenter && p.mode != LS_NORMALIZED) {
		/* the plain power needs none of the samples' own sums: no pass
		 * over y, no block reductions (a one-wave launch waits for them) */
		pr.shift = 0;
		pr.scale = 0.25 * p.n;
		pr.invw = 1.0 / p.n;
		pr.y1 = 0;
		pr.bad = 0;
		if (sizeof(T) == 8)
			__syncthreads(); /* the table */
	} else {
		pr = prepare<T, W, FM>(p, scratch); /* its reductions sync the table */
	}

	if (pr.bad) {
		if (bx == 0 && threadIdx.x == 0 && p.verdict)
			*p.verdict = (unsigned)pr.bad;
		for (long long k = bx * B + threadIdx.x; k < p.nf; k += gx * B)
			store_nan<T>(p, k);
		return;
	}
	/* Thread t takes the frequencies base + t + m B. (Neighbouring ones, base
	 * + t K + m, would let whole warps sit out past a grid's end, 16% faster
	 * at 10,000 frequencies, but the step's 2 cos(df x) rounds to 2 in
	 * float32 there: twice the error, and slower at 2^20 for the scattered
	 * stores.) */
	const double step = GRID ? p.df * INV_2PI * B : 0.0; /* cycles per unit x, m to m + 1 */
	/* Asked to stop (run_timeout): the whole block leaves before a chunk,
	 * one thread reading the host's word for all of them (a return must be
	 * the block's, as the tiles' syncs are). The word is host memory, a
	 * PCIe round trip away: read after every STOP_WORK frequency-samples per
	 * thread (a chunk at least), so it costs nothing that shows, and a short
	 * run (a few chunks per block) never reads it. */
	__shared__ unsigned stopping;
	const long long kn = (long long)K * p.n; /* 32-bit below: a 64-bit division costs */
	const int every = kn >= STOP_WORK ? 1 : (int)STOP_WORK / max(1, (int)kn); /* every thread */
	int left = every;
	for (long long base = bx * B * K; base < p.nf; base += gx * B * K) {
		if (p.stop && --left == 0) {
			left = every;
			if (threadIdx.x == 0)
				stopping = *(const volatile unsigned *)p.stop;
			__syncthreads();
			const bool leave = stopping != 0;
			__syncthreads();
			if (leave)
				return;
		}
		const long long k0 = base + threadIdx.x;
		freq_t<T> f[K];
#pragma unroll
		for (int m = 0; m < (GRID ? 1 : K); m++) {
			long long k = k0 + (long long)m * B;
			double fk = GRID ? p.f0 + p.df * (double)k
					 : ld<T>(p.freqs, k < p.nf ? k : p.nf - 1);
			f[m] = cycles<T>(fk);
		}
		sums<T> tot[K], acc[K];
		T c0[K], s0[K]; /* shifted: sample 0's cos and sin at each frequency */
#pragma unroll
		for (int m = 0; m < K; m++) {
			zero(tot[m]);
			zero(acc[m]);
			c0[m] = s0[m] = 0;
			if (SH) {
				freq_t<T> fm = GRID ? cycles<T>(p.f0 + p.df * (double)(k0 + m * B))
						    : f[m];
				anchor(fm.hi, fm.lo, (T)ld<T>(p.x, 0), tab, &c0[m], &s0[m]);
			}
		}
		for (int t0 = 0; t0 < p.n; t0 += TILE) {
			__syncthreads();
			stage<T, W, GRID>(p, pr, tl, t0, step, tab);
			__syncthreads();
			const int cnt = min(TILE, p.n - t0);
			auto sample = [&](int j) {
				const smp<T> q = tl.s[j];
				const T x = q.x, y = q.y, w = W ? tl.w[j] : (T)0;
				if (GRID) {
					/* the anchor, one rotation by the step, then the
					 * recurrence v[m+1] = 2 cos(step) v[m] - v[m-1] */
					T c, s;
					anchor(f[0].hi, f[0].lo, x, tab, &c, &s);
					if (W)
						c *= w, s *= w; /* w is sqrt(w) here */
					const T rc = q.sc, rs = q.ss, a2 = rc + rc;
					add_scaled<T, W, FM>(tot[0], c, s, y, w, c0[0], s0[0]);
					T c1 = c * rc - s * rs, s1 = fma(s, rc, c * rs);
					add_scaled<T, W, FM>(tot[1], c1, s1, y, w, c0[1], s0[1]);
#pragma unroll
					for (int m = 2; m < K; m++) {
						T c2 = fma(a2, c1, -c), s2 = fma(a2, s1, -s);
						add_scaled<T, W, FM>(tot[m], c2, s2, y, w, c0[m],
								     s0[m]);
						c = c1, s = s1, c1 = c2, s1 = s2;
					}
				} else {
#pragma unroll
					for (int m = 0; m < K; m++) {
						T c, s;
						anchor(f[m].hi, f[m].lo, x, tab, &c, &s);
						add<T, W, FM>(PARTIAL ? acc[m] : tot[m], c, s, y, w,
							      c0[m], s0[m]);
					}
				}
			};
			if (GRID) {
#pragma unroll UNROLL
				for (int j = 0; j < cnt; j++)
					sample(j);
			} else {
				for (int j = 0; j < cnt; j++)
					sample(j);
			}
			if (PARTIAL) {
#pragma unroll
				for (int m = 0; m < K; m++) {
					fold(tot[m], acc[m]);
					zero(acc[m]);
				}
			}
		}
#pragma unroll
		for (int m = 0; m < K; m++) {
			long long k = k0 + (long long)m * B;
			if (k < p.nf)
				finish<T, W, FM>(p, pr, tot[m], k);
		}
	}
}

#endif
