"""gpud.signal.lombscargle against references computed here in float64.

The default is scipy >= 1.15's generalised periodogram. Debian's scipy
(1.10) has none of its new arguments, so the reference is ls_ref below: the
algorithm transcribed into float64 numpy from its formulas, independent of
gpud's C; where the installed scipy is >= 1.15 each case is also compared with
scipy itself. legacy=True is compared with the installed scipy's own
lombscargle when that is <= 1.14 (Debian's), else with Townsend's formula
(legacy_ref). Fresh random signals (uneven sampling, seed printed) for every
normalize mode, floating_mean, weights or none, an array or the grid f0/df/nf,
float64 and float32; the default client and client=; the errors.

Tolerances: float64 1e-9 of max|ref|, float32 1e-4 of max|ref| (the reference
computed on the same float32-rounded inputs). Values only, never timings.
"""
import warnings

import numpy as np
import pytest

import gpud
from gpud.signal import lombscargle

scipy_signal = pytest.importorskip("scipy.signal")
import scipy  # noqa: E402

SCIPY = tuple(int(p) for p in scipy.__version__.split(".")[:2])
NEW_SCIPY = SCIPY >= (1, 15)
TOL = {np.float64: 1e-9, np.float32: 1e-4}
MODES = {False: "power", True: "normalize", "power": "power", "normalize": "normalize",
         "amplitude": "amplitude"}


def ls_ref(x, y, freqs, precenter=False, normalize="power", weights=None,
           floating_mean=False):
    """scipy >= 1.15's lombscargle, from its formulas, in float64."""
    x, y, f = (np.asarray(a, np.float64) for a in (x, y, freqs))
    w = np.ones(len(x)) if weights is None else np.asarray(weights, np.float64)
    w = w / w.sum()
    if precenter:
        y = y - y.mean()
    Y = w @ y
    epsneg = np.finfo(np.float64).epsneg
    ph = np.outer(x, f)                       # samples x frequencies
    c, s = np.cos(ph), np.sin(ph)
    CC = w @ (c * c)
    SS = 1 - CC
    CS = w @ (c * s)
    if floating_mean:
        C, S = w @ c, w @ s
        CC, SS, CS = CC - C * C, SS - S * S, CS - C * S
    tau = 0.5 * np.arctan2(2 * CS, CC - SS)
    c, s = np.cos(ph - tau), np.sin(ph - tau)
    YC, YS = (w * y) @ c, (w * y) @ s
    CC = w @ (c * c)
    SS = 1 - CC
    if floating_mean:
        C, S = w @ c, w @ s
        YC, YS, CC, SS = YC - Y * C, YS - Y * S, CC - C * C, SS - S * S
    CC, SS = np.maximum(CC, epsneg), np.maximum(SS, epsneg)
    a, b = YC / CC, YS / SS
    p = 2 * (a * YC + b * YS)
    if normalize == "power":
        return p * len(x) / 4
    if normalize == "normalize":
        YY = w @ (y * y) - (Y * Y if floating_mean else 0)
        return p / (2 * YY)
    return (a + 1j * b) * np.exp(1j * tau)


def legacy_ref(x, y, freqs, precenter=False, normalize=False):
    """scipy <= 1.14's lombscargle: the installed scipy's where it is that old,
    else Townsend's formula in float64."""
    x, y, f = (np.asarray(a, np.float64) for a in (x, y, freqs))
    if not NEW_SCIPY:
        return scipy_signal.lombscargle(x, y, f, precenter=precenter, normalize=normalize)
    yc = y - y.mean() if precenter else y
    ph = np.outer(f, x)
    c, s = np.cos(ph), np.sin(ph)
    xc, xs, cc, ss, cs = c @ yc, s @ yc, (c * c).sum(1), (s * s).sum(1), (c * s).sum(1)
    tau = np.arctan2(2 * cs, cc - ss) / (2 * f)
    ct, st = np.cos(f * tau), np.sin(f * tau)
    p = 0.5 * ((ct * xc + st * xs) ** 2 / (ct * ct * cc + 2 * ct * st * cs + st * st * ss)
               + (ct * xs - st * xc) ** 2 / (ct * ct * ss - 2 * ct * st * cs + st * st * cc))
    return p * (2 / (y @ y)) if normalize else p


def scipy_new(x, y, freqs, precenter, normalize, weights, floating_mean):
    """The installed scipy (>= 1.15), precenter passed as y - y.mean() (scipy 1.17
    deprecates the argument and says that is the same)."""
    x, y, f = (np.asarray(a, np.float64) for a in (x, y, freqs))
    if precenter:
        y = y - y.mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        p = scipy_signal.lombscargle(x, y, f, normalize=normalize, weights=weights,
                                     floating_mean=floating_mean)
    return np.atleast_1d(p)


def make(rng, n, nf, dtype=np.float64, fmin=0.01, offset=None):
    """Uneven samples of a noisy sinusoid with an offset; frequencies >= fmin."""
    x = np.sort(rng.uniform(0.01, 10 * np.pi, n))
    if offset is None:
        offset = rng.uniform(-1, 1)
    y = (2.0 * np.cos(rng.uniform(0.5, 2.0) * x + rng.uniform(0, 2 * np.pi))
         + offset + rng.normal(0, 0.3, n))
    f = np.sort(rng.uniform(fmin, 10.0, nf))
    return x.astype(dtype), y.astype(dtype), f.astype(dtype)


def check(got, ref, dtype, what):
    assert got.shape == ref.shape, what
    err = np.max(np.abs(got.astype(ref.dtype) - ref))
    scale = np.max(np.abs(ref))
    assert np.all(np.isfinite(got)), what
    assert err <= TOL[dtype] * scale, "%s: max|err| %.3g = %.3g of max|ref| %.3g" % (
        what, err, err / scale, scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("grid", [False, True], ids=["freqs", "grid"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weights"])
@pytest.mark.parametrize("floating_mean", [False, True], ids=["zero_mean", "floating_mean"])
@pytest.mark.parametrize("normalize", ["power", "normalize", "amplitude"])
def test_modes(client, rng, normalize, floating_mean, weighted, grid, dtype):
    """Every mode against ls_ref (and scipy >= 1.15 where installed)."""
    # The amplitude's b = YS/SS is ill-conditioned below 2 pi / (x's span)
    # (scipy's notes), and so is the floating mean's fit in float32 (its
    # sums CC - C^2/W cancel ~1e4-fold at f = 0.01, leaving ~1e-4 of
    # max|P| from float32's rounding alone): there, frequencies from 5
    # times that. float64 keeps testing down to 0.01.
    ill = normalize == "amplitude" or (floating_mean and dtype == np.float32)
    fmin = 5 * 2 * np.pi / (10 * np.pi) if ill else 0.01
    for n, nf in ((9, 40), (300, 1500)):
        x, y, f = make(rng, n, nf, dtype, fmin)
        precenter = bool(rng.integers(0, 2))
        w = None
        if weighted:
            w = rng.uniform(0.1, 3.0, n).astype(dtype)
            w[rng.integers(0, n)] = 0  # a zero weight is allowed
        kw = dict(weights=w, floating_mean=floating_mean, client=client)
        if dtype == np.float32:
            kw["dtype"] = "float32"
        if grid:
            f0, df = float(f[0]), (10.0 - float(f[0])) / nf
            got = lombscargle(x, y, None, precenter, normalize, f0=f0, df=df, nf=nf, **kw)
            f = f0 + df * np.arange(nf)  # in float64, for both dtypes
        else:
            got = lombscargle(x, y, f, precenter, normalize, **kw)
        if normalize == "amplitude":
            assert got.dtype == (np.complex64 if dtype == np.float32 else np.complex128)
        else:
            assert got.dtype == dtype
        what = "n=%d nf=%d precenter=%s" % (n, nf, precenter)
        ref = ls_ref(x, y, f, precenter, normalize, w, floating_mean)
        check(got, ref, dtype, what + " vs the transcription")
        if NEW_SCIPY:
            check(got, scipy_new(x, y, f, precenter, normalize, w, floating_mean), dtype,
                  what + " vs scipy " + scipy.__version__)


@pytest.mark.parametrize("normalize", [False, True])
def test_bools_are_words(client, rng, normalize):
    x, y, f = make(rng, 50, 100)
    a = lombscargle(x, y, f, True, normalize, client=client)
    b = lombscargle(x, y, f, True, MODES[normalize], client=client)
    c = lombscargle(x, y, f, np.True_, np.bool_(normalize), client=client)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    check(a, ls_ref(x, y, f, True, MODES[normalize]), np.float64, "bool normalize")


@pytest.mark.parametrize("precenter", [False, True])
@pytest.mark.parametrize("normalize", [False, True, "power", "normalize"])
def test_legacy(client, rng, precenter, normalize):
    """legacy=True: scipy <= 1.14 (the installed scipy where it is that old),
    including precenter with normalize, where today's scipy differs."""
    flag = MODES[normalize] == "normalize"
    for n, nf in ((7, 50), (300, 2000)):
        for dtype in (np.float64, np.float32):
            x, y, f = make(rng, n, nf, dtype, offset=1.5)
            kw = {"dtype": "float32"} if dtype == np.float32 else {}
            got = lombscargle(x, y, f, precenter, normalize, legacy=True, client=client, **kw)
            assert got.dtype == dtype
            ref = legacy_ref(x, y, f, precenter, flag)
            check(got, ref, dtype, "legacy n=%d nf=%d" % (n, nf))
            if precenter and flag:  # where the two differ: not today's results
                new = ls_ref(x, y, f, precenter, "normalize")
                assert np.max(np.abs(new - ref)) > 1e-3 * np.max(ref)


def test_grid_is_the_array(client, rng):
    """The grid gives the array form's results for f0 + df*arange(nf) in float64."""
    x, y, _ = make(rng, 200, 10)
    w = rng.uniform(0, 1, 200)
    f0, df, nf = float(rng.uniform(0.01, 0.5)), float(rng.uniform(1e-3, 1e-2)), 3001
    f = f0 + df * np.arange(nf)
    for mode in ("power", "normalize", "amplitude"):
        for fm in (False, True):
            a = lombscargle(x, y, f, False, mode, weights=w, floating_mean=fm, client=client)
            g = lombscargle(x, y, f0=f0, df=df, nf=nf, normalize=mode, weights=w,
                            floating_mean=fm, client=client)
            assert g.dtype == a.dtype and g.shape == (nf,)
            # Equal (the cpu backend computes both in the same order); other
            # backends to float64's rounding.
            check(g, a, np.float64, "grid vs array, %s floating_mean=%s" % (mode, fm))
    # nf = 1 and numpy integers / floats as the grid's scalars
    g = lombscargle(x, y, f0=np.float32(0.5), df=np.float64(0), nf=np.int64(1), client=client)
    check(g, ls_ref(x, y, [np.float64(np.float32(0.5))]), np.float64, "nf=1")


def test_float32_inputs_computed_as_scipy_does(client, rng):
    """float32 inputs without dtype=: converted to float64, as scipy does."""
    x, y, f = make(rng, 100, 1000, np.float32)
    w = rng.uniform(0.5, 1.5, 100).astype(np.float32)
    got = lombscargle(x, y, f, weights=w, floating_mean=True, client=client)
    assert got.dtype == np.float64
    check(got, ls_ref(x, y, f, weights=w, floating_mean=True), np.float64, "float32 in")
    amp = lombscargle(x, y, f, normalize="amplitude", client=client)
    assert amp.dtype == np.complex128
    fast = lombscargle(x, y, f, weights=w, floating_mean=True, client=client, dtype="float32")
    assert fast.dtype == np.float32
    check(fast, ls_ref(x, y, f, weights=w, floating_mean=True), np.float32, "dtype=float32")
    # float64 weights with dtype='float32' are converted too
    fast = lombscargle(x, y, f, weights=w.astype(np.float64), client=client, dtype=np.float32)
    check(fast, ls_ref(x, y, f, weights=w), np.float32, "float64 weights, dtype=float32")


def test_default_client(url, rng, monkeypatch):
    monkeypatch.setenv("GPUD_URL", url)
    old = gpud.set_default_client(None)
    try:
        x, y, f = make(rng, 50, 200)
        got = lombscargle(x.tolist(), y.tolist(), f.tolist())
        check(got, ls_ref(x, y, f), np.float64, "lists, default client")
        c = gpud.default_client()
        assert c is gpud.default_client() and c.url == url
        c.close()  # a closed default client is opened again on next use
        assert not gpud.default_client().closed
    finally:
        gpud.set_default_client(old)


WEIGHTS_MSG = ("argument 'weights' must hold only non-negative values that sum to a "
               "positive value; got ")


def test_bad_weights(client, rng):
    x, y, f = make(rng, 20, 30)
    for dtype in (None, "float32"):
        for w, why in ((np.r_[-1.0, np.ones(19)], "a negative or NaN weight"),
                       (np.r_[np.nan, np.ones(19)], "a negative or NaN weight"),
                       (np.zeros(20), "weights that sum to 0")):
            with pytest.raises(ValueError) as ei:
                lombscargle(x, y, f, weights=w, client=client, dtype=dtype)
            assert isinstance(ei.value, gpud.InvalidArgument)
            assert WEIGHTS_MSG + why in str(ei.value)
        with pytest.raises(ValueError, match="weights must have the length of x, got 19 for 20"):
            lombscargle(x, y, f, weights=np.ones(19), client=client, dtype=dtype)
    # the client goes on after a refused run
    check(lombscargle(x, y, f, client=client), ls_ref(x, y, f), np.float64, "after errors")


def test_errors(client, rng):
    x, y, f = make(rng, 20, 30)
    with pytest.raises(ValueError) as ei:
        lombscargle(x, y[:5], f, client=client)
    assert "same length" in str(ei.value) and "20" in str(ei.value)
    with pytest.raises(ValueError, match="1-d|dimension|ndim"):
        lombscargle(x.reshape(4, 5), y.reshape(4, 5), f, client=client)
    with pytest.raises(ValueError, match="empty"):
        lombscargle([], [], f, client=client)
    with pytest.raises(ValueError, match="argument 'x'"):
        lombscargle(["a", "b"], y[:2], f, client=client)
    # the frequencies: both forms, neither, an incomplete grid, nf < 1
    with pytest.raises(ValueError, match="not both"):
        lombscargle(x, y, f, f0=0.1, df=0.1, nf=10, client=client)
    with pytest.raises(ValueError, match="freqs"):
        lombscargle(x, y, client=client)
    with pytest.raises(ValueError, match="'df' is missing"):
        lombscargle(x, y, f0=0.1, nf=10, client=client)
    with pytest.raises(ValueError, match="nf"):
        lombscargle(x, y, f0=0.1, df=0.1, nf=0, client=client)
    with pytest.raises(TypeError, match="nf"):
        lombscargle(x, y, f0=0.1, df=0.1, nf=10.5, client=client)
    with pytest.raises(TypeError, match="f0"):
        lombscargle(x, y, f0="a", df=0.1, nf=10, client=client)
    # normalize: an unknown word (ValueError, gpud's words), not a bool or str (TypeError)
    with pytest.raises(ValueError, match="normalize") as ei:
        lombscargle(x, y, f, normalize="bogus", client=client)
    assert "bogus" in str(ei.value) and "amplitude" in str(ei.value)
    for bad in (3, 1.0, None, ["power"]):
        with pytest.raises(TypeError, match="normalize"):
            lombscargle(x, y, f, normalize=bad, client=client)
    # legacy takes none of scipy >= 1.15's arguments
    for kw in (dict(weights=np.ones(20)), dict(floating_mean=True),
               dict(normalize="amplitude")):
        with pytest.raises(ValueError, match="legacy"):
            lombscargle(x, y, f, legacy=True, client=client, **kw)
    with pytest.raises(ValueError, match="dtype"):
        lombscargle(x, y, f, dtype="float16", client=client)


@pytest.mark.parametrize("method", ["direct", "nufft"])
def test_batch_of_series(client, rng, method):
    """y of shape (B, N) on one x: B periodogram rows, each the series' own."""
    x, y0, _ = make(rng, 300, 10)
    w = rng.uniform(0.1, 2, 300)
    ys = np.stack([y0, 2 * y0 + 1, rng.normal(size=300)])
    f0, df, nf = 0.05, 0.004, 2001
    got = client.run("lombscargle", x=x, y=ys, weights=w, f0=f0, df=df, nf=nf,
                     normalize="amplitude", floating_mean=True, method=method)
    assert got.shape == (3, nf) and got.dtype == np.complex128
    for b in range(3):
        one = client.run("lombscargle", x=x, y=ys[b], weights=w, f0=f0, df=df, nf=nf,
                         normalize="amplitude", floating_mean=True, method=method)
        check(got[b], one, np.float64, "%s batch row %d" % (method, b))
    with pytest.raises(gpud.InvalidArgument) as ei:
        client.run("lombscargle", x=x, y=ys[:, :299], f0=f0, df=df, nf=nf)
    assert "last dimension" in str(ei.value)
