/*
 * kernels/lombscargle/lombscargle.cu — lombscargle on the GPU: scipy >= 1.15's
 * generalised periodogram (and legacy <= 1.14) in one pass over the samples.
 *
 * One pass. scipy makes two passes per frequency: sums at phase w x for tau,
 * then sums at w x - tau. The second pass follows from the first by rotating
 * by tau, cos(wx - tau) = cos wx cos tau + sin wx sin tau, so each thread
 * accumulates, at phase w x only, the six sums C = Σ w cos, S = Σ w sin,
 * CC = Σ w cos², CS = Σ w cos sin, YC = Σ w y cos, YS = Σ w y sin (C and S
 * only with floating_mean; unweighted runs add cos, not w cos, and scale by
 * 1/N at the end), and the epilogue rotates them: cos 2tau and sin 2tau come
 * from the pass-1 sums without atan2, cos tau and sin tau by the half angle.
 *
 * Phases. Each thread works in cycles, u = f x / 2pi, reduced before any
 * sine is taken, so the error does not grow with |f x| (float32 inputs with
 * phases up to 1e6 radians and beyond):
 *  - float32: f/2pi in float64, split into two floats (hi + lo); u = hi x +
 *    lo x with the rounding error of hi x kept by an fma (x is exact), i.e.
 *    u to about 2^-40 relative; t = u - rint(u) exactly; then the hardware's
 *    fast sine and cosine (MUFU, |error| <= 2^-20.9) of t.
 *  - float64: 2048 u = (2048 f/2pi) x by an fma, rounded to the integer k
 *    and the rest r by another; cos and sin of 2 pi k/2048 from a table in
 *    shared memory times those of r (|2 pi r/2048| <= 0.0016, Taylor
 *    polynomials): 12 FP64 operations, about 1 ulp.
 *
 * Grids (f0, df, nf): thread t of a block takes the frequencies base + t +
 * m B, m < K (B threads; K = kfreqs(): 16 or 8; the plain float64 grid 16,
 * direct.cuh's KWIDE, where that still gives every SM a block). Sample j's
 * cos and sin at the first are computed as above (the anchor), at the second
 * by one rotation with the step
 * e^{i 2pi B df/2pi x_j} (the same for all threads, made once per block per
 * sample; float32: sincospif, about 1 ulp), and at the others by the
 * recurrence v[m+1] = 2 cos(step) v[m] - v[m-1] (one fma per cos or sin).
 * Every sample re-anchors every thread, so the error is that of at most
 * K - 1 = 15 steps: a rounding error e in step m reaches step k at most
 * (k - m) e, so |error| <= 2^-20.9 (the anchor, carried along) + K^2/2 (ulp
 * of the products and of 2 cos(step)) < 8e-6 for float32 (about 1e-14 for
 * float64), per cosine or sine of each sample; the GPU tests measure about
 * 1e-6 of the largest value on the results.
 * Arrays of frequencies: each thread takes KA of them, every one computed
 * directly.
 *
 * The epilogue: the power is 2 y' M^-1 y, M the 2 x 2 matrix of the cos
 * and sin sums, y = (YC, YS); the rotation by tau (below) is taken only
 * where an eigenvalue of M would be clamped, and for amplitudes.
 *
 * Sums. float32 partial sums over each tile of TILE samples are added into
 * the totals after the tile (arrays: the error grows with the tile, not
 * with N); float64 sums are plain. floating_mean needs CC - C² (and CS - C
 * S, SS - S²), which cancels where the cosines hardly vary over the samples
 * (low frequencies, aliases of the sampling): float32 accumulates cos and
 * sin less sample 0's (a shifted frame, where both terms are small there),
 * and y is staged less its weighted mean Y, so YC - Y C has nothing to
 * cancel. The float32 kernels clamp CC and SS at float32's epsneg, not
 * float64's as scipy (which computes in float64): float32 sums resolve no
 * less, and a clamp below that turns rounding into a huge b = YS / SS.
 *
 * The samples' own sums (mean(y) for precenter, the weights' sum and their
 * check, Σ w y and Σ w y² for normalize and floating_mean, dot(y, y) for
 * legacy) are made by every block in float64 before its frequencies: they
 * are O(N) against the block's O(N * frequencies), and this saves a launch
 * and a scratch buffer. Bad weights (negative, NaN, zero sum): every block
 * writes NaN and block 0 writes the verdict (cuda_launch_ctx.verdict).
 *
 * method=nufft (and auto's pick of it on grids) is nufft.cu's; this file's
 * launch chooses (ls_launch) and offers both as the self-test's paths.
 *
 * Layout: B = 256 threads; tiles of TILE = B samples staged in shared memory
 * (x, y shifted and weighted, the weight, the grid's step); a grid-stride
 * loop over chunks of B*K (or B*KA) frequencies; the grid is the device's SMs
 * times the resident blocks per SM from the occupancy calculator.
 */
#include <atomic>
#include <cuda_runtime.h>
#include <stdio.h>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/lombscargle/lombscargle.h"

namespace {

#include "kernels/lombscargle/device.cuh"

#include "kernels/lombscargle/direct.cuh"

template <typename T, bool GRID, bool W, bool FM, int K = kfreqs(sizeof(T) == 4, GRID, FM)>
__global__ void __launch_bounds__(B, min_blocks(sizeof(T) == 4, GRID, K))
	lombscargle_kernel(ls_params p)
{
	ls_block<T, GRID, W, FM, K>(p, blockIdx.x, gridDim.x);
}

/* --- launching ----------------------------------------------------------------------------------------- */

typedef void (*kernel_fn)(ls_params);

template <typename T> kernel_fn pick(bool grid, bool w, bool fm)
{
	static const kernel_fn fns[8] = {
		lombscargle_kernel<T, false, false, false>,
		lombscargle_kernel<T, false, false, true>,
		lombscargle_kernel<T, false, true, false>,
		lombscargle_kernel<T, false, true, true>,
		lombscargle_kernel<T, true, false, false>,
		lombscargle_kernel<T, true, false, true>,
		lombscargle_kernel<T, true, true, false>,
		lombscargle_kernel<T, true, true, true>,
	};
	return fns[(grid ? 4 : 0) | (w ? 2 : 0) | (fm ? 1 : 0)];
}

const char *const variant_names[16] = {
	"float32",      "float32+fm",      "float32+w",      "float32+w+fm",
	"float32 grid", "float32 grid+fm", "float32 grid+w", "float32 grid+w+fm",
	"float64",      "float64+fm",      "float64+w",      "float64+w+fm",
	"float64 grid", "float64 grid+fm", "float64 grid+w", "float64 grid+w+fm",
};
/* variant 16: the plain float64 grid at KWIDE frequencies a thread */
constexpr int NVARIANTS = 17, WIDE = 16;
static const char *variant_name(int idx)
{
	return idx == WIDE ? "float64 grid, 16 a thread" : variant_names[idx];
}
const kernel_fn wide_fn = lombscargle_kernel<double, true, false, false, KWIDE>;

/* The chunks block b takes of a grid-stride loop over chunks with nb blocks. */
static long long chunks_of(long long b, long long chunks, long long nb)
{
	return b < chunks ? (chunks - 1 - b) / nb + 1 : 0;
}

/* The most chunks one SM takes with nb blocks, all resident at once, block b
 * on SM b mod sms (co-resident blocks share their SM: its time is theirs
 * together). That is SM 0: it has the most blocks, and the lowest of each
 * turn, which take the most chunks. */
static long long sm_load(long long chunks, long long nb, long long sms)
{
	long long t = 0;
	for (long long b = 0; b < nb; b += sms)
		t += chunks_of(b, chunks, nb);
	return t;
}

/*
 * Blocks for chunks of B*K frequencies: at most what fits on the device at
 * once (per_sm on each of sms), as many as give the busiest SM the fewest
 * chunks (no last round where most of the GPU idles, no SM with twice its
 * neighbours' blocks), and of those the most (more warps to hide latency).
 */
static int pick_blocks(long long chunks, int sms, int per_sm)
{
	long long full = (long long)sms * per_sm;
	if (chunks <= sms)
		return (int)chunks;
	long long rounds = (chunks + full - 1) / full;
	long long best = (chunks + rounds - 1) / rounds; /* every block the same rounds */
	long long load = sm_load(chunks, best, sms);
	for (long long k = 1; k <= per_sm; k++) { /* the same number of blocks on every SM */
		long long nb = k * sms, l = sm_load(chunks, nb, sms);
		if (nb <= chunks && (l < load || (l == load && nb > best)))
			best = nb, load = l;
	}
	return (int)best;
}

int ls_launch_direct(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	const kernel_value *v = a->v;
	const kernel_array *x = &v[LS_X].arr;
	if (x->count > 0x7fffffff) {
		snprintf(err, errlen,
			 "lombscargle: x has %zu points; the cuda kernel takes at most 2^31-1",
			 x->count);
		return -1;
	}
	ls_params p;
	p.x = x->data;
	p.y = v[LS_Y].arr.data;
	p.w = v[LS_WEIGHTS].present ? v[LS_WEIGHTS].arr.data : nullptr;
	p.freqs = v[LS_FREQS].present ? v[LS_FREQS].arr.data : nullptr;
	p.out = v[LS_PGRAM].arr.data;
	p.n = (int)x->count;
	p.nf = (long long)v[LS_PGRAM].arr.count;
	p.f0 = v[LS_F0].present ? v[LS_F0].s.f64 : 0;
	p.df = v[LS_DF].present ? v[LS_DF].s.f64 : 0;
	p.precenter = v[LS_PRECENTER].s.b;
	p.mode = (int)v[LS_NORMALIZE].s.i64;
	p.legacy = v[LS_LEGACY].s.b;
	p.verdict = ctx->verdict;
	p.stop = ctx->stop;
	bool grid = !v[LS_FREQS].present, w = v[LS_WEIGHTS].present,
	     fm = v[LS_FLOATING_MEAN].s.b != 0;
	bool f32 = a->dtype == GPUD_F32;
	kernel_fn fn = f32 ? pick<float>(grid, w, fm) : pick<double>(grid, w, fm);
	int idx = (f32 ? 0 : 8) | (grid ? 4 : 0) | (w ? 2 : 0) | (fm ? 1 : 0);
	long long per_block = (long long)B * kfreqs(f32, grid, fm);
	if (widens(f32, grid, w, fm) && (p.nf + B * KWIDE - 1) / (B * KWIDE) >= ctx->sm_count) {
		fn = wide_fn; /* a block of KWIDE a thread for every SM at least */
		idx = WIDE;
		per_block = (long long)B * KWIDE;
	}

	/* occupancy is the device's (two GPUs of other kinds in one gpud): kept
	 * per device ordinal below 64, asked on every launch beyond */
	static std::atomic<int> per_sm_of[64][NVARIANTS];
	int per_sm = 0;
	bool cached = ctx->device >= 0 && ctx->device < 64;
	if (cached)
		per_sm = per_sm_of[ctx->device][idx].load(std::memory_order_relaxed);
	if (per_sm == 0) {
		CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, B, 0),
			   "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
		if (cached)
			per_sm_of[ctx->device][idx].store(per_sm, std::memory_order_relaxed);
	}
	long long chunks = (p.nf + per_block - 1) / per_block;
	int blocks = pick_blocks(chunks, ctx->sm_count, per_sm > 0 ? per_sm : 1);
	fn<<<blocks, B, 0, (cudaStream_t)ctx->stream>>>(p);
	char what[64];
	snprintf(what, sizeof(what), "lombscargle<%s> launch", variant_name(idx));
	CUDA_CHECK(cudaGetLastError(), what);
	return 0;
}

int ls_attributes(cuda_variant_attr *out, int max, char *err, size_t errlen)
{
	int n = 0;
	for (int i = 0; i < NVARIANTS && n < max; i++, n++) {
		kernel_fn fn = i == WIDE ? wide_fn
			       : i < 8   ? pick<float>(i & 4, i & 2, i & 1)
					 : pick<double>(i & 4, i & 2, i & 1);
		cudaFuncAttributes fa;
		CUDA_CHECK(cudaFuncGetAttributes(&fa, fn), "cudaFuncGetAttributes");
		out[n].kernel = "lombscargle";
		out[n].variant = variant_name(i);
		out[n].registers = fa.numRegs;
		out[n].shared_bytes = fa.sharedSizeBytes;
		out[n].dynamic_shared = 0;
		out[n].local_bytes = fa.localSizeBytes;
		out[n].max_threads = fa.maxThreadsPerBlock;
		out[n].block = B;
		out[n].ptx_version = fa.ptxVersion;
		out[n].binary_version = fa.binaryVersion;
	}
	return n;
}

/*
 * method: direct, nufft (nufft.cu), or auto: direct on arrays, and on grids
 * whichever the cost model (ls_direct_cost_us, ls_nufft_cost_us) expects
 * faster, where the NUFFT can run (cuFFT loaded). A batch of y (B, N): the
 * direct kernel once per series; the NUFFT once for all (the series share
 * the grids of the weights).
 */
/* The direct kernel on each series of a batch (one launch each, in order on the stream). */
static int launch_direct_series(const kernel_args *a, const cuda_launch_ctx *ctx, char *err,
				size_t errlen)
{
	const size_t nb = lombscargle_series(a);
	if (nb == 1)
		return ls_launch_direct(a, ctx, err, errlen);
	for (size_t b = 0; b < nb; b++) {
		kernel_args v;
		lombscargle_series_view(a, b, &v);
		if (ls_launch_direct(&v, ctx, err, errlen) != 0)
			return -1;
	}
	return 0;
}

int ls_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	switch ((int)a->v[LS_METHOD].s.i64) {
	case LS_DIRECT:
		return launch_direct_series(a, ctx, err, errlen);
	case LS_NUFFT:
		return ls_nufft_launch(a, ctx, err, errlen);
	default: {
		char why[1024];
		if (!a->v[LS_FREQS].present && ls_nufft_usable(a, ctx, why, sizeof(why)) &&
		    ls_nufft_cost_us(a) < ls_direct_cost_us(a))
			return ls_nufft_launch(a, ctx, err, errlen);
		return launch_direct_series(a, ctx, err, errlen);
	}
	}
}

const char *const path_names[] = {"direct", "nufft"};

/* The self-test's forced paths: every grid sample runs the NUFFT too. */
int ls_launch_path(const kernel_args *a, const cuda_launch_ctx *ctx, int path, char *err,
		   size_t errlen)
{
	if (path == 0)
		return ls_launch_direct(a, ctx, err, errlen);
	if (!ls_nufft_usable(a, ctx, err, errlen))
		return 1;
	return ls_nufft_launch(a, ctx, err, errlen);
}

} // namespace

extern "C" const cuda_kernel cuda_kernel_lombscargle = {
	"lombscargle", ls_launch, ls_attributes, 0, 0, 2, path_names, ls_launch_path,
};
