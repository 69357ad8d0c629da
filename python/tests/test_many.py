"""gpud.signal.lombscargle_many: each row equals gpud.signal.lombscargle on
that series alone (fresh random ragged series, one sample included, every
mode, grids and arrays, both dtypes) and a numpy reference of scipy >= 1.15's
formulas (scipy's own where installed); 2-d inputs; chunking, by a small
budget and by halving on OutOfMemory, giving identical results;
method='nufft' (and auto) against the direct method to eps, bad weights in
one series; and the refusals' messages."""
import numpy as np
import pytest

import gpud
import gpud._many as many
from gpud.signal import lombscargle_for, lombscargle_many
from ls_reference import ls_ref

# today's drop-in (scipy 1.15/1.16's arguments), whatever scipy is installed
lombscargle = lombscargle_for("1.16")

MODES = ["power", "normalize", "amplitude"]
TOL = {np.float64: 1e-9, np.float32: 1e-4}


def ragged(rng, nb, maxn, weights=False, minn=2):
    """nb series of 1 (the first) and minn to maxn samples, sorted times of their own."""
    lens = [1] + list(rng.integers(minn, maxn + 1, nb - 1))
    xs = [np.cumsum(rng.uniform(0.01, 0.5, n)) + rng.uniform(0, 5) for n in lens]
    ys = [rng.uniform(-3, 3, n) for n in lens]
    ws = [rng.uniform(0.05, 2, n) for n in lens] if weights else None
    return xs, ys, ws


def assert_rows_close(got, want, dtype):
    """Row by row within TOL of the row's largest finite value; NaN where NaN,
    the same infinity where an infinity (a one-sample series normalized by a
    zero variance)."""
    assert got.shape == want.shape
    for b in range(got.shape[0]):
        g, r = got[b], want[b]
        assert np.array_equal(np.isnan(g), np.isnan(r)), "series %d: NaNs differ" % b
        inf = np.isinf(r)
        assert np.array_equal(np.isinf(g), inf) and np.array_equal(g[inf], r[inf]), \
            "series %d: infinities differ" % b
        ok = np.isfinite(r)
        scale = np.max(np.abs(r[ok]), initial=0) or 1.0
        err = np.max(np.abs(g[ok] - r[ok]), initial=0)
        assert err <= TOL[dtype] * scale, "series %d: error %.3g of %.3g" % (b, err, scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("grid", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("floating_mean", [False, True])
@pytest.mark.parametrize("normalize", MODES)
def test_rows_are_single_runs(client, rng, dtype, grid, weighted, floating_mean, normalize):
    xs, ys, ws = ragged(rng, 9, 120, weighted)
    precenter = bool(rng.integers(2))
    kw = dict(normalize=normalize, floating_mean=floating_mean, precenter=precenter,
              dtype=dtype, client=client)
    if grid:
        grid_kw = dict(f0=float(rng.uniform(0.1, 0.5)), df=float(rng.uniform(0.01, 0.05)), nf=33)
        got = lombscargle_many(xs, ys, weights=ws, **grid_kw, **kw)
        want = [lombscargle(x, y, weights=None if ws is None else ws[b], **grid_kw, **kw)
                for b, (x, y) in enumerate(zip(xs, ys))]
    else:
        freqs = rng.uniform(0.1, 10, 33)
        got = lombscargle_many(xs, ys, freqs, weights=ws, **kw)
        want = [lombscargle(x, y, freqs, weights=None if ws is None else ws[b], **kw)
                for b, (x, y) in enumerate(zip(xs, ys))]
    odt = np.dtype(dtype) if normalize != "amplitude" else np.result_type(dtype, np.complex64)
    assert got.dtype == odt and got.shape == (9, 33)
    want = np.stack(want)
    if normalize == "amplitude":
        assert_rows_close(got.real, want.real, dtype)
        assert_rows_close(got.imag, want.imag, dtype)
    else:
        assert_rows_close(got, want, dtype)


@pytest.mark.parametrize("precenter", [False, True])
def test_legacy(client, rng, precenter):
    xs, ys, _ = ragged(rng, 6, 80)
    freqs = rng.uniform(0.1, 10, 20)
    got = lombscargle_many(xs, ys, freqs, legacy=True, precenter=precenter, normalize=True,
                           client=client)
    want = np.stack([lombscargle(x, y, freqs, legacy=True, precenter=precenter,
                                 normalize=True, client=client) for x, y in zip(xs, ys)])
    assert_rows_close(got[1:], want[1:], np.float64)  # one sample: 0/0 up to rounding


@pytest.mark.parametrize("normalize", MODES)
def test_against_numpy_formulas(client, rng, normalize):
    # floating_mean's CC - C^2 cancels for a few samples: results there are
    # rounding over rounding, different in every summation order; from 32
    # samples on (as the GPU test compares) they are well conditioned
    xs, ys, ws = ragged(rng, 7, 200, True, minn=32)
    xs, ys, ws = xs[1:], ys[1:], ws[1:]  # scipy's results at one sample are rounding
    freqs = rng.uniform(0.2, 8, 25)
    got = lombscargle_many(xs, ys, freqs, weights=ws, normalize=normalize, floating_mean=True,
                           precenter=True, client=client)
    want = np.stack([ls_ref(x, y, freqs, True, normalize, w, True)
                     for x, y, w in zip(xs, ys, ws)])
    scipy_signal = None
    try:
        import scipy.signal as scipy_signal
    except ImportError:
        pass
    if scipy_signal is not None and normalize != "amplitude":
        try:
            want = np.stack([scipy_signal.lombscargle(x, y, freqs, precenter=True,
                                                      normalize=normalize == "normalize",
                                                      weights=w, floating_mean=True)
                             for x, y, w in zip(xs, ys, ws)])
        except TypeError:  # scipy <= 1.14: no weights; the formulas stay
            pass
    for part in ((lambda a: a.real), (lambda a: a.imag)):
        assert_rows_close(part(got), part(want), np.float64)


def test_two_dimensional_inputs(client, rng):
    x = np.sort(rng.uniform(0, 30, (5, 64)), axis=1)
    y, w = rng.uniform(-2, 2, (5, 64)), rng.uniform(0.1, 1, (5, 64))
    freqs = rng.uniform(0.1, 5, 17)
    a = lombscargle_many(x, y, freqs, weights=w, client=client)
    b = lombscargle_many(list(x), list(y), freqs, weights=list(w), client=client)
    assert np.array_equal(a, b)
    assert a.shape == (5, 17)


def test_no_series(client, rng):
    got = lombscargle_many([], [], rng.uniform(0.1, 1, 4), client=client)
    assert got.shape == (0, 4)


@pytest.mark.parametrize("how", ["max_bytes", "module"])
def test_chunked_by_budget(client, rng, monkeypatch, how):
    xs, ys, ws = ragged(rng, 40, 50, True)
    freqs = rng.uniform(0.1, 10, 30)
    whole = lombscargle_many(xs, ys, freqs, weights=ws, max_bytes=1 << 40, client=client)
    calls = []
    real = client.run

    def counting(kernel, **a):
        calls.append(len(a["offsets"]) - 1)
        return real(kernel, **a)

    monkeypatch.setattr(client, "run", counting)
    if how == "module":
        monkeypatch.setattr(many, "MAX_CALL_BYTES", 4000)
        got = lombscargle_many(xs, ys, freqs, weights=ws, client=client)
    else:
        got = lombscargle_many(xs, ys, freqs, weights=ws, max_bytes=4000, client=client)
    assert len(calls) > 3 and sum(calls) == 40
    assert np.array_equal(got, whole)


def test_halved_on_out_of_memory(client, rng, monkeypatch):
    xs, ys, _ = ragged(rng, 21, 60)
    freqs = rng.uniform(0.1, 10, 12)
    whole = lombscargle_many(xs, ys, freqs, client=client)
    real, calls = client.run, []

    def tight(kernel, **a):  # a device that takes at most 3 series a run
        calls.append(len(a["offsets"]) - 1)
        if calls[-1] > 3:
            raise gpud.OutOfMemory("out of device memory")
        return real(kernel, **a)

    monkeypatch.setattr(client, "run", tight)
    got = lombscargle_many(xs, ys, freqs, client=client)
    assert np.array_equal(got, whole)
    assert calls[0] == 21 and max(c for c in calls if c <= 3) <= 3
    # one series that does not fit: the error itself
    monkeypatch.setattr(client, "run", lambda kernel, **a: (_ for _ in ()).throw(
        gpud.QuotaExceeded("over the tenant's quota")))
    with pytest.raises(gpud.QuotaExceeded):
        lombscargle_many(xs[:1], ys[:1], freqs, client=client)


def test_bad_weights_name_the_series(client, rng):
    xs, ys, ws = ragged(rng, 30, 20, True)
    ws[23][len(ws[23]) // 2] = -1.0
    freqs = rng.uniform(0.1, 10, 8)
    for budget in (None, 600):  # one run, and chunks: the batch's numbering
        with pytest.raises(gpud.InvalidArgument,
                           match="series 23 has a negative or NaN weight"):
            lombscargle_many(xs, ys, freqs, weights=ws, max_bytes=budget, client=client)
    ws[23][:] = 0
    with pytest.raises(gpud.InvalidArgument, match="series 23 has weights that sum to 0"):
        lombscargle_many(xs, ys, freqs, weights=ws, client=client)


def test_errors(client, rng):
    xs, ys, _ = ragged(rng, 4, 10)
    f = rng.uniform(0.1, 1, 3)
    with pytest.raises(gpud.InvalidArgument, match=r"xs and ys must hold as many series, "
                       r"got 4 and 3"):
        lombscargle_many(xs, ys[:3], f, client=client)
    bad = list(ys)
    bad[2] = bad[2][:-1]
    with pytest.raises(gpud.InvalidArgument, match=r"xs\[2\] and ys\[2\] must have the same "
                       r"length"):
        lombscargle_many(xs, bad, f, client=client)
    with pytest.raises(gpud.InvalidArgument, match="series 1 is empty"):
        lombscargle_many([xs[0], []], [ys[0], []], f, client=client)
    with pytest.raises(gpud.InvalidArgument, match=r"'xs\[0\]' must be 1-d, got 2-d"):
        lombscargle_many([np.ones((2, 2))], [np.ones(4)], f, client=client)
    with pytest.raises(gpud.InvalidArgument, match="a 3-d array"):
        lombscargle_many(np.ones((2, 2, 2)), np.ones((2, 2, 2)), f, client=client)
    with pytest.raises(gpud.InvalidArgument, match=r"weights\[0\] must have the length"):
        lombscargle_many(xs, ys, f, weights=[np.ones(len(x) + 1) for x in xs], client=client)
    with pytest.raises(gpud.ArgumentTypeError, match="normalize"):
        lombscargle_many(xs, ys, f, normalize=1.5, client=client)
    with pytest.raises(gpud.ArgumentTypeError, match="'xs' must be a sequence"):
        lombscargle_many(3, ys, f, client=client)
    with pytest.raises(gpud.InvalidArgument, match="not both"):
        lombscargle_many(xs, ys, f, f0=0.1, df=0.1, nf=4, client=client)
    with pytest.raises(gpud.InvalidArgument, match="missing the frequencies"):
        lombscargle_many(xs, ys, client=client)
    with pytest.raises(gpud.InvalidArgument, match="method=nufft needs the uniform grid f0, "
                       "df, nf; got the array freqs"):
        lombscargle_many(xs, ys, f, method="nufft", client=client)
    with pytest.raises(gpud.InvalidArgument, match=r"method=nufft takes at most 2\^29 "
                       r"frequencies, got nf=536870913"):
        lombscargle_many(xs, ys, f0=0.1, df=0.1, nf=2**29 + 1, method="nufft", client=client)
    with pytest.raises(gpud.InvalidArgument, match="eps must be between 1e-14 and 0.1 for "
                       "float64, got 0.5"):
        lombscargle_many(xs, ys, f0=0.1, df=0.1, nf=4, method="nufft", eps=0.5, client=client)
    with pytest.raises(gpud.ArgumentTypeError, match="argument 'eps': expected a number"):
        lombscargle_many(xs, ys, f0=0.1, df=0.1, nf=4, method="nufft", eps="x", client=client)
    with pytest.raises(gpud.InvalidArgument, match="legacy=true .* has no floating_mean"):
        lombscargle_many(xs, ys, f, legacy=True, floating_mean=True, client=client)
    with pytest.raises(gpud.InvalidArgument, match="dtype must be"):
        lombscargle_many(xs, ys, f, dtype=np.int32, client=client)


def rel_rows(got, want):
    """Each row's largest error relative to the row's largest |value|."""
    return [np.max(np.abs(g - r)) / (np.max(np.abs(r)) or 1.0) for g, r in zip(got, want)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("floating_mean", [False, True])
@pytest.mark.parametrize("normalize", MODES)
def test_nufft_against_direct(client, rng, dtype, weighted, floating_mean, normalize):
    """method='nufft' on a grid: each row within eps of the direct float64
    kernel's on the same inputs (eps given for float64 in half of the cases,
    the default else), as the NUFFT promises; float32's direct kernel is held
    to 1e-4 only (TOL), so it is no reference for float32's 1e-5."""
    xs, ys, ws = ragged(rng, 6, 400, weighted, minn=30)
    xs[0], ys[0] = np.cumsum(rng.uniform(0.01, 0.5, 40)), rng.uniform(-3, 3, 40)
    if ws is not None:
        ws[0] = rng.uniform(0.05, 2, 40)
    eps = 1e-11 if dtype == np.float64 and floating_mean else None
    kw = dict(weights=ws, normalize=normalize, floating_mean=floating_mean,
              precenter=bool(rng.integers(2)), dtype=dtype, f0=float(rng.uniform(0.1, 0.5)),
              df=float(rng.uniform(0.002, 0.01)), nf=int(rng.integers(1500, 2500)),
              client=client)
    got = lombscargle_many(xs, ys, method="nufft", eps=eps, **kw)
    if dtype == np.float32:  # the float32 inputs the run saw, in float64
        def r(arrs):
            return None if arrs is None else [np.float32(a).astype(np.float64) for a in arrs]
        kw64 = dict(kw, weights=r(ws), dtype=np.float64)
        want = lombscargle_many(r(xs), r(ys), method="direct", **kw64).astype(
            np.complex64 if normalize == "amplitude" else np.float32)
    else:
        want = lombscargle_many(xs, ys, method="direct", **kw)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert not np.isnan(got).any()
    bound = eps if eps else (1e-9 if dtype == np.float64 else 1e-5)
    errs = rel_rows(got, want)
    assert max(errs) <= bound, errs


def test_nufft_legacy_and_auto(client, rng):
    xs, ys, _ = ragged(rng, 5, 300, minn=50)
    xs[0], ys[0] = np.cumsum(rng.uniform(0.01, 0.5, 60)), rng.uniform(-3, 3, 60)
    grid = dict(f0=0.2, df=0.005, nf=3000, client=client)
    want = lombscargle_many(xs, ys, precenter=True, normalize=True, legacy=True,
                            method="direct", **grid)
    got = lombscargle_many(xs, ys, precenter=True, normalize=True, legacy=True,
                           method="nufft", **grid)
    assert max(rel_rows(got, want)) <= 1e-9
    # auto: whichever the cost model picks, the direct results to the default eps
    got = lombscargle_many(xs, ys, **grid)
    assert max(rel_rows(got, lombscargle_many(xs, ys, method="direct", **grid))) <= 1e-9


def test_nufft_bad_weights_name_the_series(client, rng):
    xs, ys, ws = ragged(rng, 12, 50, True)
    ws[7][len(ws[7]) // 2] = np.nan
    with pytest.raises(gpud.InvalidArgument, match="series 7 has a negative or NaN weight"):
        lombscargle_many(xs, ys, weights=ws, f0=0.1, df=0.01, nf=700, method="nufft",
                         client=client)
