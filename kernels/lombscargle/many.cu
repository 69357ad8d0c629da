/*
 * kernels/lombscargle/many.cu — many periodograms in one launch on the GPU:
 * many.h's ls_many_launch and the lombscargle_many kernel's cuda entry.
 *
 * ls_many_launch: grid (blocks per series, series), the series in
 * blockIdx.y (launches of at most 65535 rows where the table is longer).
 * Each block reads its series' descriptor and runs lombscargle's direct
 * method on it (direct.cuh's ls_block: the same device code as
 * lombscargle.cu, so the same results and accuracy): the samples' own sums
 * (mean(y), the weights' sum and check, Σ w y, Σ w y²) first, fused in each
 * block (O(n) against the block's O(n * frequencies); no scratch, no second
 * launch), then its frequencies, with the samples staged in shared-memory
 * tiles of 256. Bad weights: the series' outputs NaN and its verdict word
 * set.
 *
 * lombscargle_many's entry builds the table in device memory (scratch) from
 * the offsets by a small kernel, which checks them too (no host round trip),
 * runs ls_many_launch (method=direct) or nufft.cu's ls_many_nufft_launch
 * over the same table (method=nufft; auto: lombscargle's cost model for the
 * whole run, lm_auto_nufft), and a last one-block kernel folds the verdicts into
 * cuda_launch_ctx.verdict: the offsets' first bad index, or the first
 * series with bad weights (many.h's LM_VERDICT_SHIFT).
 * No state: runs on the thread that launches on the stream.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/core/cuda_check.h"
#include "kernels/core/cuda_kernel.h"
#include "kernels/lombscargle/lombscargle.h"
#include "kernels/lombscargle/many.h"
#include "kernels/lombscargle/many_kernel.h"

namespace {

#include "kernels/lombscargle/device.cuh"

#define LS_NULL_WEIGHTS 1 /* a series without weights in a weighted table */
#include "kernels/lombscargle/direct.cuh"

constexpr unsigned MAX_ROWS = 65535; /* gridDim.y */

template <typename T, bool GRID, bool W, bool FM>
__global__ void __launch_bounds__(B, min_blocks(sizeof(T) == 4, GRID,
						kfreqs(sizeof(T) == 4, GRID, FM)))
	many_kernel(ls_params shared, const ls_series *tab, long long b0, unsigned *verdicts)
{
	const long long i = b0 + blockIdx.y;
	const ls_series s = tab[i];
	ls_params p = shared;
	p.x = s.x;
	p.y = s.y;
	p.w = s.w;
	p.out = s.out;
	p.n = (int)s.n;
	p.verdict = verdicts ? verdicts + i : nullptr;
	ls_block<T, GRID, W, FM, kfreqs(sizeof(T) == 4, GRID, FM)>(p, blockIdx.x, gridDim.x);
}

typedef void (*many_fn)(ls_params, const ls_series *, long long, unsigned *);

template <typename T> many_fn pick_many(bool grid, bool w, bool fm)
{
	static const many_fn fns[8] = {
		many_kernel<T, false, false, false>, many_kernel<T, false, false, true>,
		many_kernel<T, false, true, false>,  many_kernel<T, false, true, true>,
		many_kernel<T, true, false, false>,  many_kernel<T, true, false, true>,
		many_kernel<T, true, true, false>,   many_kernel<T, true, true, true>,
	};
	return fns[(grid ? 4 : 0) | (w ? 2 : 0) | (fm ? 1 : 0)];
}

const char *const many_variant_names[16] = {
	"float32",      "float32+fm",      "float32+w",      "float32+w+fm",
	"float32 grid", "float32 grid+fm", "float32 grid+w", "float32 grid+w+fm",
	"float64",      "float64+fm",      "float64+w",      "float64+w+fm",
	"float64 grid", "float64 grid+fm", "float64 grid+w", "float64 grid+w+fm",
};

/* --- lombscargle_many's table, from the offsets -------------------------------------------------- */

struct fill_params {
	const char *x, *y, *w; /* the concatenated arrays */
	char *out;             /* pgram (B, M) */
	const int64_t *off;    /* B + 1 */
	long long nb, t, m;
	int es, oes; /* bytes of an input and of an output element */
};

/*
 * Thread i <= B checks offsets[i] (offsets[0] = 0, offsets[i] > offsets[i-1]
 * and <= T, offsets[B] = T: the first bad index into *first_bad by
 * atomicMin); thread i < B writes series i's descriptor, its bounds clamped
 * into [0, T] with one sample at least (a table with bad offsets reads only
 * x's memory; its run fails with the verdict), and zeroes its verdict.
 */
__global__ void fill_table(fill_params f, ls_series *tab, unsigned *verdicts, unsigned *first_bad)
{
	const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i > f.nb)
		return;
	const long long o = f.off[i];
	bool bad = i == 0 ? o != 0 : o <= f.off[i - 1] || o > f.t;
	if (i == f.nb && o != f.t)
		bad = true;
	if (bad)
		atomicMin(first_bad, (unsigned)min(i, (long long)LM_VERDICT_MAX_INDEX));
	if (i == f.nb)
		return;
	long long lo = o, hi = f.off[i + 1];
	lo = lo < 0 ? 0 : lo > f.t - 1 ? f.t - 1 : lo;
	hi = hi <= lo ? lo + 1 : hi > f.t ? f.t : hi;
	ls_series s;
	s.x = f.x + lo * f.es;
	s.y = f.y + lo * f.es;
	s.w = f.w ? f.w + lo * f.es : nullptr;
	s.out = f.out + i * f.m * f.oes;
	s.n = hi - lo;
	tab[i] = s;
	verdicts[i] = 0;
}

/* One block: the run's verdict from the offsets' first bad index, else from
 * the first series whose verdict is set. */
__global__ void fold_verdicts(const unsigned *verdicts, long long nb, const unsigned *first_bad,
			      unsigned *verdict)
{
	__shared__ unsigned long long first;
	if (threadIdx.x == 0)
		first = ~0ull;
	__syncthreads();
	if (*first_bad != ~0u) {
		if (threadIdx.x == 0)
			*verdict = LM_BAD_OFFSETS | ((*first_bad + 1u) << LM_VERDICT_SHIFT);
		return;
	}
	for (long long i = threadIdx.x; i < nb; i += blockDim.x)
		if (verdicts[i] != 0) {
			atomicMin(&first, (unsigned long long)i);
			break;
		}
	__syncthreads();
	if (threadIdx.x == 0 && first != ~0ull) {
		unsigned at = (unsigned)min(first, (unsigned long long)LM_VERDICT_MAX_INDEX);
		*verdict = verdicts[first] | ((at + 1u) << LM_VERDICT_SHIFT);
	}
}

/* The table from the offsets, then every series by the direct kernel (one
 * launch) or by the NUFFT (nufft.cu, groups of series), then the verdict. */
int lm_launch_by(const kernel_args *a, bool nufft, const cuda_launch_ctx *ctx, char *err,
		 size_t errlen)
{
	const kernel_value *v = a->v;
	const size_t nb = v[LM_OFFSETS].arr.count - 1;
	ls_many p;
	lm_params(a, &p);
	if (!ctx->scratch) {
		snprintf(err, errlen, "lombscargle_many: no scratch memory offered for its table");
		return -1;
	}
	const size_t tab_bytes = (nb * sizeof(ls_series) + 255) & ~(size_t)255;
	char *mem = (char *)ctx->scratch(ctx, tab_bytes + (nb + 1) * sizeof(unsigned), err, errlen);
	if (!mem)
		return -1;
	ls_series *tab = (ls_series *)mem;
	unsigned *verdicts = (unsigned *)(mem + tab_bytes), *first_bad = verdicts + nb;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	CUDA_CHECK(cudaMemsetAsync(first_bad, 0xff, sizeof(unsigned), st), "cudaMemsetAsync");
	fill_params f;
	f.x = (const char *)v[LM_X].arr.data;
	f.y = (const char *)v[LM_Y].arr.data;
	f.w = v[LM_WEIGHTS].present ? (const char *)v[LM_WEIGHTS].arr.data : nullptr;
	f.out = (char *)v[LM_PGRAM].arr.data;
	f.off = (const int64_t *)v[LM_OFFSETS].arr.data;
	f.nb = (long long)nb;
	f.t = (long long)v[LM_X].arr.count;
	f.m = p.m;
	f.es = (int)gpud_dtype_size(p.dtype);
	f.oes = (int)gpud_dtype_size(v[LM_PGRAM].arr.dtype);
	const unsigned threads = 256, blocks = (unsigned)((nb + 1 + threads - 1) / threads);
	fill_table<<<blocks, threads, 0, st>>>(f, tab, verdicts, first_bad);
	CUDA_CHECK(cudaGetLastError(), "lombscargle_many table launch");
	/* x's length bounds every series' (the kernels take ints) */
	if ((nufft ? ls_many_nufft_launch(&p, tab, nb, f.t, verdicts, ctx, err, errlen)
		   : ls_many_launch(&p, tab, nb, f.t, verdicts, ctx, err, errlen)) != 0)
		return -1;
	if (ctx->verdict) {
		fold_verdicts<<<1, 256, 0, st>>>(verdicts, (long long)nb, first_bad, ctx->verdict);
		CUDA_CHECK(cudaGetLastError(), "lombscargle_many verdict launch");
	}
	return 0;
}

/*
 * method=auto: lombscargle's cost model (nufft.cu) for the run as a whole,
 * on grids where the NUFFT can run: the direct kernel's one launch over T
 * samples at M frequencies against B NUFFTs of the average series (T / B
 * samples) each.
 */
bool lm_auto_nufft(const kernel_args *a, const cuda_launch_ctx *ctx)
{
	if (a->v[LM_FREQS].present)
		return false;
	const long long nb = (long long)a->v[LM_OFFSETS].arr.count - 1;
	const long long t = (long long)a->v[LM_X].arr.count;
	kernel_args all, one;
	char why[1024];
	lm_model_view(a, t, &all);
	lm_model_view(a, t / nb, &one);
	if (!ls_nufft_usable(&one, ctx, why, sizeof(why)))
		return false;
	return (double)nb * ls_nufft_cost_us(&one) < ls_direct_cost_us(&all);
}

int lm_launch(const kernel_args *a, const cuda_launch_ctx *ctx, char *err, size_t errlen)
{
	const int method = (int)a->v[LM_METHOD].s.i64;
	const bool nufft = method == LS_NUFFT || (method == LS_AUTO && lm_auto_nufft(a, ctx));
	return lm_launch_by(a, nufft, ctx, err, errlen);
}

const char *const path_names[] = {"direct", "nufft"};

/* The self-test's forced paths: every grid sample runs the NUFFT too. */
int lm_launch_path(const kernel_args *a, const cuda_launch_ctx *ctx, int path, char *err,
		   size_t errlen)
{
	if (path == 1) {
		kernel_args one;
		lm_model_view(a, 1, &one);
		if (!ls_nufft_usable(&one, ctx, err, errlen))
			return 1;
	}
	return lm_launch_by(a, path == 1, ctx, err, errlen);
}

int lm_attributes(cuda_variant_attr *out, int max, char *err, size_t errlen)
{
	int n = 0;
	for (int i = 0; i < 16 && n < max; i++, n++) {
		many_fn fn = i < 8 ? pick_many<float>(i & 4, i & 2, i & 1)
				   : pick_many<double>(i & 4, i & 2, i & 1);
		cudaFuncAttributes fa;
		CUDA_CHECK(cudaFuncGetAttributes(&fa, fn), "cudaFuncGetAttributes");
		out[n].kernel = "lombscargle_many";
		out[n].variant = many_variant_names[i];
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

} // namespace

extern "C" int ls_many_launch(const ls_many *mp, const ls_series *dev_series, size_t b,
			      long long max_n, unsigned *dev_verdicts, const cuda_launch_ctx *ctx,
			      char *err, size_t errlen)
{
	if (max_n > 0x7fffffff) {
		snprintf(err, errlen,
			 "lombscargle_many: a series of up to %lld points; the cuda kernel takes "
			 "at most 2^31-1",
			 max_n);
		return -1;
	}
	if (b == 0)
		return 0;
	ls_params p;
	p.x = p.y = p.w = nullptr;
	p.out = nullptr;
	p.n = 0;
	p.freqs = mp->freqs;
	p.nf = mp->m;
	p.f0 = mp->freqs ? 0 : mp->f0;
	p.df = mp->freqs ? 0 : mp->df;
	p.precenter = mp->precenter;
	p.mode = mp->normalize;
	p.legacy = mp->legacy;
	p.verdict = nullptr;
	p.stop = ctx->stop;
	const bool grid = !mp->freqs, fm = mp->floating_mean != 0, f32 = mp->dtype == GPUD_F32;
	/* weights are per series: the weighted variant takes a NULL w as all equal */
	const bool w = mp->no_weights == 0;
	many_fn fn = f32 ? pick_many<float>(grid, w, fm) : pick_many<double>(grid, w, fm);
	/* blocks per series: a grid-stride loop over its chunks of B*K
	 * frequencies; enough rows of blocks in all to fill the device twice */
	const long long per_block = (long long)B * kfreqs(f32, grid, fm);
	const long long chunks = (mp->m + per_block - 1) / per_block;
	const long long want = 4LL * (ctx->sm_count > 0 ? ctx->sm_count : 1);
	long long bx = (want + (long long)b - 1) / (long long)b;
	bx = bx < 1 ? 1 : bx > chunks ? chunks : bx;
	for (size_t b0 = 0; b0 < b; b0 += MAX_ROWS) {
		const unsigned rows = (unsigned)(b - b0 < MAX_ROWS ? b - b0 : MAX_ROWS);
		fn<<<dim3((unsigned)bx, rows), B, 0, (cudaStream_t)ctx->stream>>>(p, dev_series,
										  (long long)b0,
										  dev_verdicts);
		CUDA_CHECK(cudaGetLastError(), "lombscargle_many launch");
	}
	return 0;
}

extern "C" const cuda_kernel cuda_kernel_lombscargle_many = {
	"lombscargle_many", lm_launch, lm_attributes, 0, 0, 2, path_names, lm_launch_path,
};
