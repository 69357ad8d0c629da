#!/usr/bin/python3
"""tests/scipy_check.py -- gpud's lombscargle against scipy.signal.lombscargle, histogram
against numpy.histogram, matmul against numpy.matmul, and uniform/normal against their
distributions.

    /usr/bin/python3 tests/scipy_check.py --gpuctl PATH --url URL [--backend B] [--seed N]

Needs a running gpud at URL (tests/scipy_check.sh starts one). Draws fresh
random inputs (the seed comes from os.urandom and is printed; --seed or
$SCIPY_CHECK_SEED repeats a run) at several sizes and runs gpuctl run
lombscargle for float64 and float32:

- today's algorithm (gpud's default, scipy >= 1.15): every combination of
  precenter, normalize (power, normalize, amplitude), weights (some exactly
  0) and floating_mean where nx * nf is small, four at random above; each
  with the frequencies as an array or as the grid f0, df, nf (the reference
  gets f0 + df*arange(nf) in float64). The reference is scipy itself where
  it is >= 1.15 (the device has 1.18), else ref_today below: a float64
  transcription of scipy >= 1.15's formulas, written independently of gpud's
  C reference; with scipy >= 1.15 the transcription is also held to scipy on
  every case (one more line in the table).
- legacy=true (scipy <= 1.14), every precenter/normalize combination,
  against scipy where it is < 1.15, else scipy 1.14's loop transcribed.
- weights scipy refuses (a negative one, all zero, the wrong length): gpuctl
  exits 65 with gpud's message (and scipy >= 1.15 raises ValueError).

max |gpud - ref| <= 1e-9 * max |ref| for float64 and <= 1e-4 * max |ref| for
float32 (complex results: real and imaginary parts each); float32 with
floating_mean 1e-3 (TOL32_FM says why); with floating_mean, frequencies where
CC - C^2 or SS - S^2 cancels get that cancellation's share on top (COND_K
says how much and why: float64 itself, scipy's included, is no better there). With a single
sample (x of length 1) legacy's periodogram is 0/0 at many frequencies;
there the NaN positions must agree; today's amplitude for one sample is
rounding over rounding (b = YS/SS, in scipy too) and is checked for shape,
dtype and finite values.

Debian's scipy 1.10 is built by Pythran with assertions on, so a division by
zero (which a single sample makes likely) aborts the process instead of giving
NaN. scipy therefore runs in a worker process; if it aborts, the reference for
that case is scipy's loop transcribed below with libm and IEEE division (said
in the table line). Which frequencies give NaN for one sample depends on the
last bit of sin/cos, so NaN positions are compared on the cpu backend (glibc's
libm, as scipy's); with --backend other than cpu (the cuda kernels have their
own sin/cos) those cases check shape and dtype only, and say so.

histogram: `gpuctl run histogram x=X.npy bins=.. range_min=.. range_max=..
-o out.npy` against numpy.histogram(x, bins, range=(range_min, range_max)) on
fresh random samples (float32, float64, int32, int64; 1, 7 and 1000 bins;
random ranges, a fifth of the samples exactly on numpy's own edges, some on
range_min and range_max, NaN and infinities; an empty range; float32 ranges
beyond ±3.4e38; int64 beyond 2^53; float32 bins narrower than a float32 ulp):
the counts must be equal, int64, of shape (bins,). Where numpy itself raises
IndexError on the data (float32 bins narrower than an ulp, about one run in
seven draws such a range), the reference is hist_clamped: numpy's own steps
with the bin estimate clamped, as gpud does; it is held to numpy.histogram on
every case numpy answers.

matmul: random a (m x k) and b (k x n) of several shapes (non-square, k = 1,
m = 1, k = 0) in float64 and float32, against numpy.matmul of float64 copies;
each element within (k + 2) eps (|a| @ |b|) with eps 2^-53 or 2^-24.

uniform and normal (cuRAND's Philox4_32_10): n = 200001 numbers for a few
seeds in both dtypes: the range ((0, 1], or (low, high]), mean and variance
within 5 standard errors, the Kolmogorov-Smirnov statistic against the
distribution (scipy.stats.kstest) below its 0.1% critical value 1.95/sqrt(n),
the same seed giving the same numbers and another seed others. The seeds are
fixed, so these cases are deterministic.

Prints one line per case and, last, 'N passed, M failed'; exits 1 on any
failure.
"""

import argparse
import concurrent.futures
import math
import os
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import scipy
    import scipy.signal
    import scipy.stats
except ImportError as e:  # CI installs python3-scipy
    print(f"scipy_check: {sys.executable} cannot import numpy and scipy ({e}); "
          "install them (Debian: apt-get install python3-numpy python3-scipy)",
          file=sys.stderr)
    sys.exit(1)

X_SIZES = [1, 7, 100, 1000]
F_SIZES = [1, 31, 1000, 1 << 16]
DTYPES = [np.float64, np.float32]
TOL = {np.float64: 1e-9, np.float32: 1e-4}
# float32 with floating_mean: where the cosines hardly vary over the samples
# (low frequencies), CC - C^2 is small and the float32 sines' errors (~1e-6)
# weigh more; measured up to 4.0e-4 of the maximum on an H200 (elsewhere
# ~1e-6). The cpu backend computes in float64 and meets TOL.
TOL32_FM = 1e-3
# With floating_mean, CC - C^2 and SS - S^2 cancel where the cosines (or sines)
# hardly vary over the samples: by kappa = CC/(CC - C^2) (or SS's), up to 5e6
# among 65536 random frequencies of 7 samples. A float64 result there is only
# good to about eps * kappa * (1 + |f x|) of max |ref| (the phase f x carries
# an absolute rounding of eps |f x|): measured against an 80-bit long double
# transcription over 60 seeds, the float64 transcription itself was off by up to
# 3.5 eps (kappa - 1)(1 + |f x|) max|ref| (1.9e-9 of max|ref| at kappa 4.9e6),
# and scipy sums in yet another order. So each frequency is held to
# TOL + COND_K * eps (kappa - 1)(1 + |f x|) of max |ref|: the plain tolerance
# where nothing cancels (kappa = 1: every case without floating_mean), looser
# only in proportion to the cancellation.
COND_K = 64
WORDS = ("power", "normalize", "amplitude")
# Cases of today's algorithm per size and dtype: all 24 (normalize x weights x
# floating_mean x precenter) where nx * nf is small, a random few above.
SMALL = 100000
FEW = 4


# --- references ----------------------------------------------------------------------

SCIPY_VERSION = tuple(int(p) for p in scipy.__version__.split(".")[:2])
# scipy 1.15 reimplemented lombscargle (weights, floating_mean, normalize words);
# gpud's default follows it, legacy=true follows scipy <= 1.14.
NEW_SCIPY = SCIPY_VERSION >= (1, 15)
FCHUNK = 2048  # frequencies at a time in the numpy references (bounded memory)


def ref_today(x, y, freqs, precenter, normalize, weights, floating_mean):
    """scipy >= 1.15's lombscargle written from its formulas (Zechmeister and
    Kürster's generalised periodogram), in float64, independently of scipy:
    weights normalised to sum 1; y less its plain mean with precenter; tau
    from the sums at phase f x; the sums again at f x - tau; floating_mean
    subtracts the C and S terms; CC and SS clamped at float64's epsneg; then
    power (times N/4), normalize (over the weighted y^2 sum) or the complex
    amplitude (a + ib) e^{i tau}.

    Returns (result, cond): cond[k] = (kappa - 1)(1 + |f_k| max|x|), kappa the
    cancellation of floating_mean's CC - C^2 and SS - S^2 (1 without it): the
    factor of eps by which the result at f_k is ill-conditioned (COND_K says
    how it is used)."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    freqs = np.asarray(freqs, np.float64)
    w = np.ones_like(y) if weights is None else np.asarray(weights, np.float64).copy()
    w = w / w.sum()
    if precenter:
        y = y - y.mean()
    wy = w * y
    ybar = wy.sum()
    yy = (wy * y).sum() - (ybar * ybar if floating_mean else 0.0)
    eps = np.finfo(np.float64).epsneg
    out = np.empty(len(freqs), np.complex128 if normalize == "amplitude" else np.float64)
    cond = np.zeros(len(freqs))
    xmax = float(np.max(np.abs(x))) if len(x) else 0.0
    with np.errstate(all="ignore"):
        for lo in range(0, len(freqs), FCHUNK):
            f = freqs[lo:lo + FCHUNK]
            ph = np.outer(x, f)
            c, s = np.cos(ph), np.sin(ph)
            cc, cs = w @ (c * c), w @ (c * s)
            ss = 1.0 - cc
            if floating_mean:
                c1, s1 = w @ c, w @ s
                cc, ss, cs = cc - c1 * c1, ss - s1 * s1, cs - c1 * s1
            tau = 0.5 * np.arctan2(2.0 * cs, cc - ss)
            ph = ph - tau
            c, s = np.cos(ph), np.sin(ph)
            yc, ys, cc = wy @ c, wy @ s, w @ (c * c)
            ss = 1.0 - cc
            raw_cc, raw_ss = cc, ss
            if floating_mean:
                c1, s1 = w @ c, w @ s
                yc, ys = yc - ybar * c1, ys - ybar * s1
                cc, ss = cc - c1 * c1, ss - s1 * s1
            cc, ss = np.maximum(cc, eps), np.maximum(ss, eps)
            if floating_mean:
                kappa = np.maximum(np.maximum(raw_cc / cc, raw_ss / ss), 1.0)
                cond[lo:lo + FCHUNK] = (kappa - 1.0) * (1.0 + np.abs(f) * xmax)
            a, b = yc / cc, ys / ss
            if normalize == "amplitude":
                out[lo:lo + FCHUNK] = (a + 1j * b) * np.exp(1j * tau)
            else:
                p = 2.0 * (a * yc + b * ys)
                out[lo:lo + FCHUNK] = p * len(x) / 4.0 if normalize == "power" else p * 0.5 / yy
    return out, cond


def scipy_today(x, y, freqs, precenter, normalize, weights, floating_mean):
    """scipy >= 1.15 itself. Runs in the worker process."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = scipy.signal.lombscargle(x, y, freqs, precenter=precenter, normalize=normalize,
                                     weights=weights, floating_mean=floating_mean)
    return np.atleast_1d(np.asarray(p))


def scipy_legacy(x, y, freqs, precenter, normalize):
    """scipy <= 1.14 itself. Runs in the worker process."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = scipy.signal.lombscargle(x, y, freqs, precenter=precenter, normalize=normalize)
    return np.atleast_1d(np.asarray(p, dtype=np.float64))


def _worker_init(errpath):
    # Pythran's assertion message goes to a file, not over the table.
    fd = os.open(errpath, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)


def _div(a, b):
    """IEEE division (what C does), where Python raises."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def transcribed_legacy(x, y, freqs, precenter, normalize):
    """scipy <= 1.14's _lombscargle loop, statement for statement, with libm's
    sin/cos and IEEE division. Plain Python: only for small inputs."""
    x = [float(v) for v in x]
    y = [float(v) for v in y]
    mean = float(np.mean(np.asarray(y)))  # numpy's pairwise sum, as scipy's y.mean()
    yc = [v - mean for v in y] if precenter else y
    out = np.empty(len(freqs))
    for i, f in enumerate(float(v) for v in freqs):
        xc = xs = cc = ss = cs = 0.0
        for xj, yj in zip(x, yc):
            c = math.cos(f * xj)
            s = math.sin(f * xj)
            xc += yj * c
            xs += yj * s
            cc += c * c
            ss += s * s
            cs += c * s
        tau = math.atan2(2 * cs, cc - ss) / (2 * f)
        c_tau = math.cos(f * tau)
        s_tau = math.sin(f * tau)
        c_tau2 = c_tau * c_tau
        s_tau2 = s_tau * s_tau
        cs_tau = 2 * c_tau * s_tau
        out[i] = 0.5 * (_div((c_tau * xc + s_tau * xs) ** 2,
                             c_tau2 * cc + cs_tau * cs + s_tau2 * ss)
                        + _div((c_tau * xs - s_tau * xc) ** 2,
                               c_tau2 * ss - cs_tau * cs + s_tau2 * cc))
    if normalize:
        out *= 2 / np.dot(np.asarray(y), np.asarray(y))
    return out


def vectorized_legacy(x, y, freqs, precenter, normalize):
    """The same loop in numpy, by chunks of frequencies (larger inputs)."""
    y0 = y
    if precenter:
        y = y - y.mean()
    out = np.empty(len(freqs))
    with np.errstate(all="ignore"):
        for lo in range(0, len(freqs), FCHUNK):
            f = freqs[lo:lo + FCHUNK]
            arg = np.outer(f, x)
            c, s = np.cos(arg), np.sin(arg)
            xc, xs = c @ y, s @ y
            cc, ss, cs = (c * c).sum(1), (s * s).sum(1), (c * s).sum(1)
            tau = np.arctan2(2 * cs, cc - ss) / (2 * f)
            c_tau, s_tau = np.cos(f * tau), np.sin(f * tau)
            c_tau2, s_tau2, cs_tau = c_tau * c_tau, s_tau * s_tau, 2 * c_tau * s_tau
            out[lo:lo + FCHUNK] = 0.5 * (
                (c_tau * xc + s_tau * xs) ** 2 / (c_tau2 * cc + cs_tau * cs + s_tau2 * ss)
                + (c_tau * xs - s_tau * xc) ** 2 / (c_tau2 * ss - cs_tau * cs + s_tau2 * cc))
    if normalize:
        out *= 2 / np.dot(y0, y0)
    return out


class Reference:
    """The reference of a case: scipy where it has the algorithm (in a worker
    process that may die: Debian's Pythran-built scipy 1.10 aborts on a
    division by zero), else the transcriptions above."""

    def __init__(self, errpath):
        self.errpath = errpath
        self.pool = None
        self.aborts = 0
        self.worst_transcription = 0.0  # ref_today against scipy >= 1.15, over its bound

    def _pool(self):
        if self.pool is None:
            self.pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, initializer=_worker_init, initargs=(self.errpath,))
        return self.pool

    def _scipy(self, fn, *args):
        try:
            return self._pool().submit(fn, *args).result(timeout=600)
        except concurrent.futures.process.BrokenProcessPool:
            self.pool.shutdown(wait=False)
            self.pool = None
            self.aborts += 1
            return None

    def today(self, x, y, freqs, precenter, normalize, weights, fm):
        """(reference, cond, how): cond as ref_today's."""
        mine, cond = ref_today(x, y, freqs, precenter, normalize, weights, fm)
        if not NEW_SCIPY:
            return mine, cond, (f"scipy {scipy.__version__} < 1.15: "
                                "ref=today's algorithm transcribed")
        sp = self._scipy(scipy_today, x, y, freqs, precenter, normalize, weights, fm)
        if sp is None:
            return mine, cond, "scipy died: ref=today's algorithm transcribed"
        # The transcription is checked against scipy on every case it has, each
        # frequency to its bound (COND_K); worst_transcription is error over bound.
        scale = float(np.max(np.abs(sp))) if sp.size else 0.0
        if scale > 0:
            d = np.abs(mine - sp) / scale
            bound = TOL[np.float64] + COND_K * np.finfo(np.float64).eps * cond
            self.worst_transcription = max(self.worst_transcription,
                                           float(np.max(d / bound)))
        return sp, cond, "scipy"

    def legacy(self, x, y, freqs, precenter, normalize):
        if not NEW_SCIPY:
            sp = self._scipy(scipy_legacy, x, y, freqs, precenter, normalize)
            if sp is not None:
                return sp, "scipy"
            why = "scipy aborted (Pythran divide-by-zero assertion); ref=scipy's loop transcribed"
        else:
            why = "scipy >= 1.15: ref=scipy 1.14's loop transcribed"
        if len(x) * len(freqs) <= 200000:
            return transcribed_legacy(x, y, freqs, precenter, normalize), why
        return vectorized_legacy(x, y, freqs, precenter, normalize), why + " (numpy)"

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()


# --- the check -------------------------------------------------------------------------

def make_inputs(rng, nx, nf):
    """Non-uniform sample times, non-zero values, frequencies > 0, weights >= 0
    (some exactly 0, never all)."""
    x = np.sort(rng.uniform(0.0, 30.0, nx))
    mag = rng.uniform(0.1, 2.0, nx)
    y = np.where(rng.integers(0, 2, nx) == 1, mag, -mag) + 0.5 * np.sin(1.3 * x)
    y[y == 0] = 0.25
    freqs = rng.uniform(0.01, 10.0, nf)
    w = rng.uniform(0.0, 2.0, nx)
    w[rng.integers(0, 10, nx) == 0] = 0.0
    w[rng.integers(0, nx)] = 0.5
    return x, y, freqs, w


def case_list(rng, nx, nf):
    """(precenter, normalize word, weights, floating_mean, grid) of today's algorithm:
    every combination where nx * nf is small, FEW at random above; each with the
    frequencies as an array or as the grid, at random."""
    every = [(p, m, w, fm) for p in (False, True) for m in WORDS for w in (False, True)
             for fm in (False, True)]
    if nx * nf > SMALL:
        every = [every[i] for i in rng.choice(len(every), FEW, replace=False)]
    return [c + (bool(rng.integers(0, 2)),) for c in every]


def compare(got, ref, dtype, nx, exact_nan, legacy=False, fm=False, cond=None):
    """(ok, error text for the table). ref is float64 or complex128; got in
    dtype (float32/64) or its complex dtype. Real and imaginary parts are
    each held to the tolerance of max |ref|, plus, where cond (ref_today's)
    says a frequency is ill-conditioned, COND_K eps(dtype) cond of max |ref|."""
    want = np.dtype(dtype)
    if np.iscomplexobj(ref):
        want = np.dtype(np.complex64 if dtype == np.float32 else np.complex128)
    if got.dtype != want or got.shape != ref.shape:
        return False, f"got {got.dtype} {got.shape}, expected {want} {ref.shape}"
    got64 = got.astype(ref.dtype)
    if nx == 1 and np.iscomplexobj(ref):
        # One sample: after the tau rotation S = sin(f x - tau) is 0 but for
        # rounding and SS = 1 - CC clamps at epsneg, so b = YS / SS is a ratio
        # of rounding errors in scipy's algorithm itself (the power, with b YS,
        # is not affected).
        ok = bool(np.isfinite(got64).all())
        return ok, ("shape, dtype and finite values only: b = YS/SS is rounding over "
                    "rounding for one sample" if ok else "not finite")
    nan_got, nan_ref = np.isnan(got64), np.isnan(ref)
    if legacy and nx == 1 and not exact_nan:
        return True, ("shape and dtype only: one sample is 0/0 in scipy <= 1.14's algorithm, "
                      "and what it gives (NaN, inf or a value) depends on the last bit of "
                      "this backend's sin/cos")
    if not np.array_equal(nan_got, nan_ref):
        diff = np.flatnonzero(nan_got != nan_ref)
        i = int(diff[0])
        return False, (f"NaN positions differ at {len(diff)} of {len(ref)} frequencies "
                       f"(first: [{i}] gpud {got64[i]!r}, reference {ref[i]!r})")
    inf_got, inf_ref = np.isinf(got64), np.isinf(ref)
    if not np.array_equal(inf_got, inf_ref) or not np.array_equal(got64[inf_ref],
                                                                    ref[inf_ref]):
        i = int(np.flatnonzero((inf_got != inf_ref) | (inf_ref & (got64 != ref)))[0])
        return False, f"infinities differ (first: [{i}] gpud {got64[i]!r}, reference {ref[i]!r})"
    fin = ~nan_ref & ~inf_ref
    if not fin.any():
        return True, "all NaN or inf, positions equal"
    if nan_ref.any() and nx == 1:
        return True, f"NaN at {int(nan_ref.sum())}/{len(ref)}, positions equal"
    scale = np.max(np.abs(ref[fin]))
    d = got64[fin] - ref[fin]
    derr = np.maximum(np.abs(d.real), np.abs(d.imag))
    err = np.max(derr)
    rel = err / scale if scale > 0 else err
    tol = TOL32_FM if fm and dtype == np.float32 else TOL[dtype]
    text = f"max|err|/max|ref| = {rel:.2e}" + (f" (<= {tol:g})" if tol != TOL[dtype] else "")
    finite = bool(np.isfinite(got64[fin]).all())
    if cond is None or not np.any(cond[fin] > 0):
        return finite and rel <= tol, text
    # Per frequency: tol plus the ill-conditioning's share (COND_K).
    bound = (tol + COND_K * np.finfo(dtype).eps * cond[fin]) * (scale if scale > 0 else 1.0)
    over = derr / bound
    loose = int(np.count_nonzero(derr > tol * scale))
    if loose:
        text += (f"; {loose} ill-conditioned frequencies within "
                 f"{COND_K} eps (kappa-1)(1+|f x|) of max|ref|: worst "
                 f"{float(np.max(over)):.2f} of that bound")
    return finite and bool(np.all(over <= 1.0)), text


def bad_weight_cases(gpuctl, url, work, rng):
    """Weights scipy refuses: gpuctl exits 65 naming 'weights' where scipy raises."""
    x, y, freqs, w = make_inputs(rng, 20, 10)
    neg = w.copy()
    neg[3] = -0.5
    for name, wb, says in (("a negative weight", neg, "got a negative or NaN weight"),
                           ("all zero", np.zeros(20), "got weights that sum to 0"),
                           ("one short", w[:-1], "weights must have the length of x")):
        if NEW_SCIPY:
            try:
                scipy.signal.lombscargle(x, y, freqs, weights=wb)
                yield False, f"lombscargle weights {name}: scipy accepted them"
                continue
            except ValueError:
                pass
        got, err = gpuctl_run(gpuctl, url, work, "lombscargle", {},
                              {"x": x, "y": y, "freqs": freqs, "weights": wb})
        ok = got is None and "exited 65" in err and says in err
        yield ok, (f"lombscargle weights {name}: "
                   + (f"refused ({'as scipy' if NEW_SCIPY else 'scipy < 1.15 has none'}): "
                      f"{says}" if ok else f"expected exit 65 saying '{says}', got "
                      f"{err or 'a result'}"))


def lombscargle_cases(gpuctl, url, work, rng, backend, ref_of, notes):
    """Yields (ok, line) for every lombscargle case."""
    for nx in X_SIZES:
        for nf in F_SIZES:
            x, y, freqs, w = make_inputs(rng, nx, nf)
            f0, df = float(rng.uniform(0.01, 1.0)), float(rng.uniform(1e-4, 9.0 / nf))
            grid = f0 + df * np.arange(nf, dtype=np.float64)  # as gpud makes it
            cases = [("legacy", p, n) for p in (False, True) for n in (False, True)]
            cases += [("today",) + c for c in case_list(rng, nx, nf)]
            for dtype in DTYPES:
                xd, yd, fd, wd = (a.astype(dtype) for a in (x, y, freqs, w))
                x64, y64, f64, w64 = (a.astype(np.float64) for a in (xd, yd, fd, wd))
                for case in cases:
                    arrays = {"x": xd, "y": yd}
                    cond = None
                    if case[0] == "legacy":
                        _, pc, nz = case
                        ref, how = ref_of.legacy(x64, y64, f64, pc, nz)
                        arrays["freqs"] = fd
                        args = {"precenter": str(pc).lower(), "normalize": str(nz).lower(),
                                "legacy": "true"}
                        what = f"legacy precenter={pc!s:5} normalize={nz!s:5}"
                    else:
                        _, pc, word, wt, fm, g = case
                        ref, cond, how = ref_of.today(x64, y64, grid if g else f64, pc,
                                                      word, w64 if wt else None, fm)
                        args = {"precenter": str(pc).lower(), "normalize": word,
                                "floating_mean": str(fm).lower()}
                        if g:
                            args.update(f0=repr(f0), df=repr(df), nf=nf)
                        else:
                            arrays["freqs"] = fd
                        if wt:
                            arrays["weights"] = wd
                        what = (f"precenter={pc!s:5} {word:9} weights={wt!s:5} "
                                f"floating_mean={fm!s:5} {'grid ' if g else 'array'}")
                    t = time.monotonic()
                    got, err = gpuctl_run(gpuctl, url, work, "lombscargle", args, arrays)
                    dt = time.monotonic() - t
                    if err is None:
                        ok, text = compare(got, ref, dtype, nx, backend == "cpu",
                                           legacy=case[0] == "legacy",
                                           fm=case[0] != "legacy" and case[4], cond=cond)
                    else:
                        ok, text = False, err
                    if how != "scipy":
                        text += f" [{how}]"
                        notes[how] = notes.get(how, 0) + 1
                    yield ok, (f"{np.dtype(dtype).name:7} nx={nx:<5} nf={nf:<6} {what} "
                               f"{dt:6.2f} s  {text}")
    yield from bad_weight_cases(gpuctl, url, work, rng)


def gpuctl_run(gpuctl, url, work, kernel, args, inputs=None):
    """Runs KERNEL with name=value args and name=array inputs (saved as .npy);
    (output array, None) or (None, error text)."""
    cmd = [gpuctl, "--url", url, "run", kernel]
    for name, a in (inputs or {}).items():
        path = os.path.join(work, f"{name}.npy")
        np.save(path, a)
        cmd.append(f"{name}={path}")
    cmd += [f"{k}={v}" for k, v in args.items()]
    po = os.path.join(work, "out.npy")
    if os.path.exists(po):
        os.unlink(po)
    cmd += ["-o", po]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    if p.returncode != 0:
        return None, f"gpuctl exited {p.returncode}: {p.stderr.strip()}"
    if p.stderr.strip():
        return None, f"gpuctl wrote to stderr: {p.stderr.strip()}"
    return np.load(po), None


# --- histogram -------------------------------------------------------------------------

HIST_DTYPES = [np.float32, np.float64, np.int32, np.int64]
NUMPY_MAJOR = int(np.__version__.split(".")[0])
HIST_SIZES = [1, 1000, 100003]
HIST_BINS = [1, 7, 1000]


def hist_range(rng, dtype, bins):
    """A random range; integer ends for integer samples, so that they land on edges."""
    if np.issubdtype(dtype, np.integer):
        lo = float(rng.integers(-1000, 1000))
        return lo, lo + float(bins * int(rng.integers(1, 5)))
    lo = float(rng.uniform(-1000, 1000))
    return lo, lo + float(np.exp(rng.uniform(np.log(1e-3), np.log(1e4))))


def hist_samples(rng, dtype, n, bins, lo, hi):
    """Samples over the range and 10% of its width either side; a fifth exactly on
    numpy's edges (as numpy rounds them), some on range_min and range_max, NaN and
    infinities for floats."""
    _, edges = np.histogram(np.zeros(0, dtype), bins=bins, range=(lo, hi))
    w = float(edges[-1]) - float(edges[0])
    with np.errstate(all="ignore"):
        v = rng.uniform(float(edges[0]) - 0.1 * w, float(edges[-1]) + 0.1 * w, n)
        kind = rng.integers(0, 20, n)
        on = kind < 4
        v[on] = edges[rng.integers(0, bins + 1, int(on.sum()))].astype(np.float64)
        v[kind == 4] = np.where(rng.integers(0, 2, int((kind == 4).sum())) == 1, hi, lo)
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            x = np.clip(np.floor(v), info.min // 2, info.max // 2).astype(dtype)
            if dtype == np.int64 and lo >= 2.0 ** 52:  # odd values too, past 2^52
                x += rng.integers(-1, 2, n).astype(np.int64)
            return x
        v[kind == 5] = rng.choice([np.nan, np.inf, -np.inf], int((kind == 5).sum()))
        if dtype == np.float32:
            v = np.where(np.isfinite(v), np.clip(v, -3.4e38, 3.4e38), v)
        return v.astype(dtype)


try:  # numpy's own edge and subtraction helpers (their module moved in numpy 2)
    from numpy.lib import _histograms_impl as _np_hist
except ImportError:
    from numpy.lib import histograms as _np_hist


def hist_clamped(x, bins, lo, hi):
    """numpy.histogram's equal-bin path step for step, with numpy's own edges and
    subtraction, except that each bin estimate is clamped to [0, bins - 1] before
    the edges are read and the corrected bin to >= 0: what gpud returns (see
    kernels/histogram/histogram.h). Where numpy answers, this equals it (held to
    it on every case below); where numpy's float32 estimate lands past
    bins + 1 (float32 bins narrower than a float32 ulp: numpy raises
    IndexError), this is the reference."""
    edges, (first, last, nb) = _np_hist._get_bin_edges(x, bins, (lo, hi), None)
    norm = nb / _np_hist._unsigned_subtract(last, first)
    keep = x >= first
    keep &= x <= last
    a = x[keep].astype(edges.dtype, copy=False)
    f = _np_hist._unsigned_subtract(a, first) * norm
    with np.errstate(invalid="ignore"):
        i = np.where(f >= 0, np.minimum(np.trunc(f), nb - 1), 0).astype(np.intp)
    i[a < edges[i]] -= 1
    i[(a >= edges[np.minimum(i + 1, nb)]) & (i != nb - 1)] += 1
    np.maximum(i, 0, out=i)
    return np.bincount(i, minlength=nb).astype(np.int64)


HIST_CLAMPED_NOTE = ("histogram: numpy fails on the data (float32 bins narrower than "
                     "a float32 ulp); the reference is numpy's steps with the bin estimate "
                     "clamped (hist_clamped)")


def hist_reference(x, bins, lo, hi):
    """(counts, what, problem): numpy's counts, or hist_clamped's where numpy
    fails on the data (what says so); problem is set where hist_clamped differs
    from numpy. Raises ValueError where numpy refuses the range itself."""
    _np_hist._get_bin_edges(x, bins, (lo, hi), None)  # numpy >= 2 may refuse the range
    clamped = hist_clamped(x, bins, lo, hi)
    try:
        ref = np.histogram(x, bins=bins, range=(lo, hi))[0]
    except (IndexError, ValueError) as e:
        return clamped, f"numpy raises {type(e).__name__}: {e}; reference hist_clamped", None
    if not np.array_equal(ref, clamped):
        return ref, "", "hist_clamped differs from numpy.histogram (a defect of this check)"
    return ref, "", None


def hist_cases(rng):
    """(dtype, n, bins, lo, hi, what)"""
    for dtype in HIST_DTYPES:
        for n in HIST_SIZES:
            for bins in HIST_BINS:
                lo, hi = hist_range(rng, dtype, bins)
                yield dtype, n, bins, lo, hi, ""
        c = float(np.floor(rng.uniform(-100, 100)))
        yield dtype, 4099, 3, c, c, "empty range, widened"
    if NUMPY_MAJOR < 2:
        # numpy 1.x bins this in float64; numpy 2 rounds the range to float32
        # (1e39 -> inf) and refuses it. gpud follows numpy 1.x (Debian's).
        yield np.float32, 100003, 10, -1e38, 1e39, "beyond 3.4e38: float64 bins"
    yield np.float32, 100003, 300, -1.5e38, 1.6e38, "near float32's limit"
    # bins of 2.9e-6 against a float32 ulp of 6.1e-5: numpy's float32 estimate
    # overshoots by up to ~20 bins and numpy raises IndexError on most draws
    yield np.float32, 100003, 1000, 745.6555261551832, 745.6583904197566, "bins below an ulp"
    yield np.int64, 100003, 16, 2.0 ** 53, 2.0 ** 53 + 32, "int64 beyond 2^53"


def run_histogram(gpuctl, url, work, x, bins, lo, hi):
    return gpuctl_run(gpuctl, url, work, "histogram",
                      {"bins": bins, "range_min": repr(lo), "range_max": repr(hi)}, {"x": x})


def compare_counts(got, ref):
    """(ok, text for the table)"""
    if got.dtype != np.int64 or got.shape != ref.shape:
        return False, f"got {got.dtype} {got.shape}, expected int64 {ref.shape}"
    if not np.array_equal(got, ref):
        diff = np.flatnonzero(got != ref)
        i = int(diff[0])
        return False, (f"{len(diff)} of {len(ref)} counts differ (first: [{i}] gpud {got[i]}, "
                       f"numpy {ref[i]})")
    return True, f"equal, {int(ref.sum())} counted"


MATMUL_SHAPES = [(1, 1, 1), (3, 5, 2), (64, 1, 33), (1, 100, 1), (7, 0, 4), (129, 257, 65),
                 (500, 400, 300)]


def matmul_cases(gpuctl, url, work, rng):
    """Yields (ok, line) for each matmul case."""
    for m, k, n in MATMUL_SHAPES:
        a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
        for dtype in DTYPES:
            ad, bd = a.astype(dtype), b.astype(dtype)
            got, err = gpuctl_run(gpuctl, url, work, "matmul", {}, {"a": ad, "b": bd})
            name = f"matmul  {np.dtype(dtype).name:7} {m}x{k} @ {k}x{n}"
            if err is not None:
                yield False, f"{name}: {err}"
                continue
            ref = np.matmul(ad.astype(np.float64), bd.astype(np.float64))
            if got.dtype != np.dtype(dtype) or got.shape != (m, n):
                yield False, f"{name}: got {got.dtype} {got.shape}"
                continue
            eps = 2.0 ** -53 if dtype == np.float64 else 2.0 ** -24
            bound = (k + 2) * eps * np.matmul(np.abs(ad.astype(np.float64)),
                                              np.abs(bd.astype(np.float64)))
            diff = np.abs(got.astype(np.float64) - ref)
            worst = float(np.max(diff / np.maximum(bound, 1e-300))) if diff.size else 0.0
            ok = bool(np.all(diff <= bound))
            yield ok, f"{name}: max err/bound {worst:.3f} (bound (k+2) eps |a|@|b|)"


RANDOM_N = 200001


def random_cases(gpuctl, url, work):
    """Yields (ok, line) for each uniform/normal case (fixed seeds)."""
    n = RANDOM_N
    crit = 1.95 / math.sqrt(n)
    se = 1 / math.sqrt(n)
    for kernel, extra, dist in (("uniform", {}, scipy.stats.uniform(0, 1)),
                                ("uniform", {"low": -2, "high": 6}, scipy.stats.uniform(-2, 8)),
                                ("normal", {}, scipy.stats.norm(0, 1)),
                                ("normal", {"mean": 3, "stddev": 0.5}, scipy.stats.norm(3, 0.5))):
        for dtype in ("float64", "float32"):
            for seed in (1, 2024):
                args = {"n": n, "seed": seed, "dtype": dtype, **extra}
                name = (f"{kernel:7} {dtype:7} n={n} seed={seed} "
                        + " ".join(f"{k}={v}" for k, v in extra.items()))
                got, err = gpuctl_run(gpuctl, url, work, kernel, args)
                if err is not None:
                    yield False, f"{name}: {err}"
                    continue
                if got.dtype != np.dtype(dtype) or got.shape != (n,):
                    yield False, f"{name}: got {got.dtype} {got.shape}"
                    continue
                x = got.astype(np.float64)
                problems = []
                if kernel == "uniform":
                    lo, hi = extra.get("low", 0), extra.get("high", 1)
                    if not (np.all(x > lo) and np.all(x <= hi)):
                        problems.append(f"outside ({lo}, {hi}]: min {x.min()!r} max {x.max()!r}")
                mean, std = dist.mean(), dist.std()
                if abs(x.mean() - mean) > 5 * se * std:
                    problems.append(f"mean {x.mean():.5f}, expected {mean:.5f}")
                # the variance's standard error: sqrt((mu4 - var^2) / n)
                kurt = -1.2 if kernel == "uniform" else 0.0
                var_se = std ** 2 * math.sqrt((2 + kurt) / n)
                if abs(x.var(ddof=1) - std ** 2) > 5 * var_se:
                    problems.append(f"variance {x.var(ddof=1):.5f}, expected {std ** 2:.5f}")
                ks = scipy.stats.kstest(x, dist.cdf).statistic
                if ks >= crit:
                    problems.append(f"KS {ks:.5f} >= {crit:.5f}")
                again, err = gpuctl_run(gpuctl, url, work, kernel, args)
                if err is not None or not np.array_equal(again, got):
                    problems.append("the same seed gave other numbers")
                other, err = gpuctl_run(gpuctl, url, work, kernel, {**args, "seed": seed + 1})
                if err is not None or np.count_nonzero(other == got) > 5:
                    problems.append("seed + 1 gave the same numbers")
                yield not problems, f"{name}: " + ("; ".join(problems) if problems else
                                                   f"mean {x.mean():+.5f} std {x.std():.5f} "
                                                   f"KS {ks:.5f} (< {crit:.5f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpuctl", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--backend", default="cpu",
                    help="gpud's backend; with one other than cpu, x of length 1 is checked "
                    "for shape and dtype only")
    ap.add_argument("--check-imports", action="store_true",
                    help="only check that numpy and scipy import, then exit")
    args = ap.parse_args()
    if args.check_imports:
        return 0

    seed = args.seed
    if seed is None and os.environ.get("SCIPY_CHECK_SEED"):
        seed = int(os.environ["SCIPY_CHECK_SEED"])
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    print(f"scipy_check: numpy {np.__version__}, scipy {scipy.__version__}, gpud at {args.url} "
          f"(backend {args.backend})")
    print(f"scipy_check: random seed {seed} (repeat with SCIPY_CHECK_SEED={seed})")
    if NEW_SCIPY:
        print("scipy_check: lombscargle against scipy's own; legacy=true against scipy "
              "1.14's loop transcribed; the float64 transcription of today's algorithm is "
              "checked against scipy on every case")
    else:
        print(f"scipy_check: scipy {scipy.__version__} has only the <= 1.14 lombscargle: "
              "legacy=true against it; today's algorithm (gpud's default) against a float64 "
              "transcription of scipy >= 1.15's formulas (ref_today)")
    sys.stdout.flush()

    rng = np.random.default_rng(seed)
    passed = failed = 0
    notes = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="scipy-check-") as work:
        ref_of = Reference(os.path.join(work, "scipy-worker.err"))
        try:
            for ok, text in lombscargle_cases(args.gpuctl, args.url, work, rng,
                                              args.backend, ref_of, notes):
                passed += ok
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {text}", flush=True)
            for ok, text in matmul_cases(args.gpuctl, args.url, work, rng):
                passed += ok
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {text}", flush=True)
            for ok, text in random_cases(args.gpuctl, args.url, work):
                passed += ok
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {text}", flush=True)
        finally:
            ref_of.close()
        if NUMPY_MAJOR >= 2:
            print("scipy_check: note: numpy >= 2 refuses float32 ranges beyond float32's "
                  "limits, which numpy 1.x (and gpud) bin in float64: that case is left out",
                  flush=True)
        for dtype, n, bins, lo, hi, what in hist_cases(rng):
            try:
                x = hist_samples(rng, dtype, n, bins, lo, hi)
                ref, how, problem = hist_reference(x, bins, lo, hi)
            except ValueError as e:
                # numpy >= 2 refuses ranges whose rounded edges do not increase
                # ("Too many bins for data range"); numpy 1.x bins them, and gpud
                # follows numpy 1.x. Nothing to compare with here.
                how = f"histogram: numpy {np.__version__} refuses the range ({e})"
                notes[how] = notes.get(how, 0) + 1
                print(f"skip histogram {np.dtype(dtype).name:7} n={n:<6} bins={bins:<4} "
                      f"range=[{lo:.6g}, {hi:.6g}]: numpy refuses it: {e}", flush=True)
                continue
            t = time.monotonic()
            got, err = run_histogram(args.gpuctl, args.url, work, x, bins, lo, hi)
            dt = time.monotonic() - t
            ok, text = (False, err) if err is not None else compare_counts(got, ref)
            if problem:
                ok, text = False, f"{text}; {problem}"
            if how:
                what = f"{what}; {how}" if what else how
                notes[HIST_CLAMPED_NOTE] = notes.get(HIST_CLAMPED_NOTE, 0) + 1
            passed += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} histogram {np.dtype(dtype).name:7} n={n:<6} "
                  f"bins={bins:<4} range=[{lo:.6g}, {hi:.6g}] {dt:6.2f} s  {text}"
                  + (f" [{what}]" if what else ""), flush=True)
    print(f"scipy_check: {time.monotonic() - t0:.1f} s; tolerances: float64 "
          f"{TOL[np.float64]:g}, float32 {TOL[np.float32]:g} of max|scipy|")
    if NEW_SCIPY:
        # float64 both, summed in other orders: held to gpud's float64 bound
        t_ok = ref_of.worst_transcription <= 1.0
        passed += t_ok
        failed += not t_ok
        print(f"{'ok  ' if t_ok else 'FAIL'} the transcription of today's lombscargle against "
              f"scipy {scipy.__version__}: worst |err| = {ref_of.worst_transcription:.2f} of "
              f"its bound ({TOL[np.float64]:g} + {COND_K} eps (kappa-1)(1+|f x|) of max|scipy|)")
    for how, n in notes.items():
        print(f"scipy_check: {n} cases: {how}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
