"""gpud.signal.lombscargle against references computed here in float64.

gpud.signal.lombscargle follows the installed scipy (test_follows_installed);
lombscargle_for("1.16") (`new` below) is scipy >= 1.15's generalised
periodogram, lombscargle_for("1.14") (`old`) scipy <= 1.14's; each
version's checks, exceptions, warnings, signatures and shapes are tested on
both (test_*_checks, test_deprecations_117, test_shapes), and the drop-in for
the installed scipy against that scipy itself (test_same_as_installed). Debian's scipy
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
import inspect
import warnings

import numpy as np
import pytest

import gpud
from gpud import _scipy_compat
from gpud.signal import lombscargle, lombscargle_for
from ls_reference import ls_ref

scipy_signal = pytest.importorskip("scipy.signal")
import scipy  # noqa: E402

new = lombscargle_for("1.16")   # today's algorithm, no deprecations
old = lombscargle_for("1.14")   # Townsend's, scipy <= 1.14's checks
SCIPY = tuple(int(p) for p in scipy.__version__.split(".")[:2])
NEW_SCIPY = SCIPY >= (1, 15)
TOL = {np.float64: 1e-9, np.float32: 1e-4}
MODES = {False: "power", True: "normalize", "power": "power", "normalize": "normalize",
         "amplitude": "amplitude"}


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
            got = new(x, y, None, precenter, normalize, f0=f0, df=df, nf=nf, **kw)
            f = f0 + df * np.arange(nf)  # in float64, for both dtypes
        else:
            got = new(x, y, f, precenter, normalize, **kw)
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
    a = new(x, y, f, True, normalize, client=client)
    b = new(x, y, f, True, MODES[normalize], client=client)
    c = new(x, y, f, np.True_, normalize, client=client)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    # scipy >= 1.15 takes a bool, not numpy's: np.bool_ is neither bool nor a word
    with pytest.raises(ValueError, match="Normalize must be"):
        new(x, y, f, True, np.bool_(normalize), client=client)
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
            got = new(x, y, f, precenter, normalize, legacy=True, client=client, **kw)
            assert got.dtype == dtype
            # scipy <= 1.14's drop-in computes the same by default (normalize by its
            # truth value there: 'power' is true)
            np.testing.assert_array_equal(old(x, y, f, precenter, flag, client=client, **kw),
                                          got)
            ref = legacy_ref(x, y, f, precenter, flag)
            check(got, ref, dtype, "legacy n=%d nf=%d" % (n, nf))
            if precenter and flag:  # where the two differ: not today's results
                # Legacy normalizes by the uncentered y @ y, today by the centered
                # y's: they differ by the mean, which a few random samples can
                # bring near 0. With y's mean moved to 2 they differ for certain,
                # and gpud still gives legacy's.
                y2 = (y - y.mean() + 2).astype(dtype)
                ref2 = legacy_ref(x, y2, f, precenter, flag)
                check(new(x, y2, f, precenter, normalize, legacy=True, client=client, **kw),
                      ref2, dtype, "legacy n=%d nf=%d, mean 2" % (n, nf))
                today = ls_ref(x, y2, f, precenter, "normalize")
                assert np.max(np.abs(today - ref2)) > 1e-1 * np.max(ref2)


def test_grid_is_the_array(client, rng):
    """The grid gives the array form's results for f0 + df*arange(nf) in float64."""
    x, y, _ = make(rng, 200, 10)
    w = rng.uniform(0, 1, 200)
    f0, df, nf = float(rng.uniform(0.01, 0.5)), float(rng.uniform(1e-3, 1e-2)), 3001
    f = f0 + df * np.arange(nf)
    for mode in ("power", "normalize", "amplitude"):
        for fm in (False, True):
            a = new(x, y, f, False, mode, weights=w, floating_mean=fm, client=client)
            g = new(x, y, f0=f0, df=df, nf=nf, normalize=mode, weights=w,
                            floating_mean=fm, client=client)
            assert g.dtype == a.dtype and g.shape == (nf,)
            # Equal (the cpu backend computes both in the same order); other
            # backends to float64's rounding.
            check(g, a, np.float64, "grid vs array, %s floating_mean=%s" % (mode, fm))
    # nf = 1 and numpy integers / floats as the grid's scalars
    g = new(x, y, f0=np.float32(0.5), df=np.float64(0), nf=np.int64(1), client=client)
    assert g.shape == ()  # squeezed, as scipy >= 1.15 squeezes one frequency
    check(g.reshape(1), ls_ref(x, y, [np.float64(np.float32(0.5))]), np.float64, "nf=1")


def test_float32_inputs_computed_as_scipy_does(client, rng):
    """float32 inputs without dtype=: converted to float64, as scipy does."""
    x, y, f = make(rng, 100, 1000, np.float32)
    w = rng.uniform(0.5, 1.5, 100).astype(np.float32)
    got = new(x, y, f, weights=w, floating_mean=True, client=client)
    assert got.dtype == np.float64
    check(got, ls_ref(x, y, f, weights=w, floating_mean=True), np.float64, "float32 in")
    amp = new(x, y, f, normalize="amplitude", client=client)
    assert amp.dtype == np.complex128
    fast = new(x, y, f, weights=w, floating_mean=True, client=client, dtype="float32")
    assert fast.dtype == np.float32
    check(fast, ls_ref(x, y, f, weights=w, floating_mean=True), np.float32, "dtype=float32")
    # float64 weights with dtype='float32' are converted too
    fast = new(x, y, f, weights=w.astype(np.float64), client=client, dtype=np.float32)
    check(fast, ls_ref(x, y, f, weights=w), np.float32, "float64 weights, dtype=float32")


def test_default_client(url, rng, monkeypatch):
    monkeypatch.setenv("GPUD_URL", url)
    old = gpud.set_default_client(None)
    try:
        x, y, f = make(rng, 50, 200)
        got = lombscargle(x.tolist(), y.tolist(), f.tolist())
        ref = legacy_ref(x, y, f) if _scipy_compat.RULES == "1.14" else ls_ref(x, y, f)
        check(got, ref, np.float64, "lists, default client")
        c = gpud.default_client()
        assert c is gpud.default_client() and c.url == url
        c.close()  # a closed default client is opened again on next use
        assert not gpud.default_client().closed
    finally:
        gpud.set_default_client(old)


WEIGHTS_MSG = ("argument 'weights' must hold only non-negative values that sum to a "
               "positive value; got ")
SCIPY_WEIGHTS = ("Parameter weights must have only non-negative entries which sum to a "
                 "positive value!")
SCIPY_SHAPES = "Parameters x, y, weights must be 1-D arrays of equal non-zero length!"


def test_bad_weights(client, rng):
    """scipy's checks (made before gpud is asked), then gpud's own (client.run)."""
    x, y, f = make(rng, 20, 30)
    for dtype in (None, "float32"):
        for w, why in ((np.r_[-1.0, np.ones(19)], "a negative or NaN weight"),
                       (np.r_[np.nan, np.ones(19)], "a negative or NaN weight"),
                       (np.zeros(20), "weights that sum to 0")):
            with pytest.raises(gpud.InvalidArgument) as ei:
                new(x, y, f, weights=w, client=client, dtype=dtype)
            assert str(ei.value).startswith(SCIPY_WEIGHTS)
            with pytest.raises(gpud.InvalidArgument) as ei:
                client.run("lombscargle", x=x, y=y, freqs=f, weights=w)
            assert WEIGHTS_MSG + why in str(ei.value)
        with pytest.raises(gpud.InvalidArgument) as ei:
            new(x, y, f, weights=np.ones(19), client=client, dtype=dtype)
        assert str(ei.value) == SCIPY_SHAPES + " (lombscargle: got x (20,), y (20,), " \
            "weights (19,))"
        with pytest.raises(ValueError, match="weights must have the length of x, got 19 for 20"):
            client.run("lombscargle", x=x, y=y, freqs=f, weights=np.ones(19))
    # the client goes on after a refused run
    check(new(x, y, f, client=client), ls_ref(x, y, f), np.float64, "after errors")


def test_errors(client, rng):
    """scipy >= 1.15's refusals (its messages, then what gpud saw), and gpud's own."""
    x, y, f = make(rng, 20, 30)
    with pytest.raises(gpud.InvalidArgument) as ei:
        new(x, y[:5], f, client=client)
    assert str(ei.value) == SCIPY_SHAPES + " (lombscargle: got x (20,), y (5,), weights (5,))"
    with pytest.raises(ValueError, match="1-D arrays"):
        new(x.reshape(4, 5), y.reshape(4, 5), f, client=client)
    with pytest.raises(ValueError, match="non-zero length"):
        new([], [], f, client=client)
    with pytest.raises(ValueError, match="Parameter freqs must be a 1-D array"):
        new(x, y, [], client=client)
    with pytest.raises(ValueError, match="could not convert"):  # numpy's, as in scipy
        new(["a", "b"], y[:2], f, client=client)
    # the frequencies: both forms, neither, an incomplete grid, nf < 1
    with pytest.raises(ValueError, match="not both"):
        new(x, y, f, f0=0.1, df=0.1, nf=10, client=client)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'freqs'"):
        new(x, y, client=client)
    with pytest.raises(ValueError, match="'df' is missing"):
        new(x, y, f0=0.1, nf=10, client=client)
    with pytest.raises(ValueError, match="nf"):
        new(x, y, f0=0.1, df=0.1, nf=0, client=client)
    with pytest.raises(TypeError, match="nf"):
        new(x, y, f0=0.1, df=0.1, nf=10.5, client=client)
    with pytest.raises(TypeError, match="f0"):
        new(x, y, f0="a", df=0.1, nf=10, client=client)
    # normalize: anything but a bool or one of the words is a ValueError, as in scipy
    for bad in ("bogus", 3, 1.0, None, ["power"]):
        with pytest.raises(gpud.InvalidArgument) as ei:
            new(x, y, f, normalize=bad, client=client)
        assert str(ei.value) == ("Normalize must be: False (or 'power'), True (or "
                                 "'normalize'), or 'amplitude'. (lombscargle: got %r)" % (bad,))
    # legacy takes none of scipy >= 1.15's arguments
    for kw in (dict(weights=np.ones(20)), dict(floating_mean=True),
               dict(normalize="amplitude")):
        with pytest.raises(ValueError, match="legacy"):
            new(x, y, f, legacy=True, client=client, **kw)
    with pytest.raises(ValueError, match="dtype"):
        new(x, y, f, dtype="float16", client=client)


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


# --- following the installed scipy, version by version ---

def test_follows_installed():
    """gpud.signal.lombscargle is the drop-in for the installed scipy's version."""
    assert _scipy_compat.SCIPY_VERSION == SCIPY
    want = "1.14" if SCIPY < (1, 15) else "1.15" if SCIPY < (1, 17) else "1.17"
    assert _scipy_compat.RULES == want
    assert lombscargle is lombscargle_for(scipy.__version__)
    assert lombscargle.scipy_rules == want
    for v, rules in (("1.10.1", "1.14"), ("1.14", "1.14"), ((1, 15), "1.15"),
                     ("1.16.3", "1.15"), ("1.17.0rc1", "1.17"), ("1.18.1", "1.17"),
                     (None, "1.17"), ("2.0", "1.17")):
        assert lombscargle_for(v).scipy_rules == rules, v
    with pytest.raises(ValueError, match="scipy version"):
        lombscargle_for("new")


EXTRAS = "client=None, dtype=None, legacy=None, f0=None, df=None, nf=None"


def test_signatures():
    """scipy's signature of each version, gpud's extras keyword-only after it."""
    assert str(inspect.signature(lombscargle_for("1.10"))) == (
        "(x, y, freqs, precenter=False, normalize=False, *, " + EXTRAS + ")")
    assert str(inspect.signature(lombscargle_for("1.15"))) == (
        "(x, y, freqs, precenter=False, normalize=False, *, weights=None, "
        "floating_mean=False, " + EXTRAS + ")")
    assert str(inspect.signature(lombscargle_for("1.18"))) == (
        "(x, y, freqs, *, precenter=<no value>, normalize=False, weights=None, "
        "floating_mean=False, " + EXTRAS + ")")
    with pytest.raises(TypeError, match=r"^lombscargle\(\) got an unexpected keyword "
                                        r"argument 'weights'$"):
        old([1.0], [1.0], [1.0], weights=[1.0])


def test_old_checks(client, rng):
    """scipy <= 1.14's checks, in its order: conversion, 1-d asserts, lengths, a zero
    frequency (ZeroDivisionError), then normalize by its truth value."""
    x, y, f = make(rng, 20, 30)
    two = x.reshape(4, 5)
    with pytest.raises(AssertionError, match="'x' must be 1-d, got 2-d"):
        old(two, y[:5], np.r_[0.0, f], client=client)  # before the lengths and the zero
    with pytest.raises(AssertionError, match="'freqs' must be 1-d"):
        old(x, y, f.reshape(5, 6), client=client)
    with pytest.raises(gpud.InvalidArgument) as ei:
        old(x, y[:5], np.r_[0.0, f], client=client)  # the lengths before the zero
    assert str(ei.value) == ("lombscargle: x and y must be of the same size, got 20 and 5 "
                             "values (scipy: Input arrays do not have the same size.)")
    with pytest.raises(ZeroDivisionError, match="frequency 3 is 0"):
        old(x, y, np.r_[f[:3], 0.0, f[3:]], client=client)
    with pytest.raises(ZeroDivisionError, match="frequency 4 is 0"):
        old(x, y, f0=-2.0, df=0.5, nf=10, client=client)
    with pytest.raises(ValueError, match="could not convert"):
        old(["a"], ["b"], f, client=client)
    # an empty periodogram for no frequencies; 0-d freqs are one frequency
    e = old(x, y, [], client=client)
    assert e.shape == (0,) and e.dtype == np.float64
    one = old(x, y, f[4], client=client)
    assert one.shape == (1,)
    check(one, legacy_ref(x, y, f[4:5]), np.float64, "0-d freqs")
    # normalize and precenter by truth value: 'power' is true there
    a = old(x, y, f, 1, "power", client=client)
    check(a, legacy_ref(x, y, f, True, True), np.float64, "normalize='power'")


def test_new_checks_order(client, rng):
    """scipy >= 1.15's order: the shapes, freqs, the weights, normalize, then (1.17)
    the precenter warning."""
    x, y, f = make(rng, 20, 30)
    for fn in (new, lombscargle_for("1.18")):
        with pytest.raises(ValueError, match="^Parameters x, y, weights"):
            fn(x, y[:5], f.reshape(5, 6), weights=-np.ones(5), normalize="x", client=client)
        with pytest.raises(ValueError, match="^Parameter freqs"):
            fn(x, y, f.reshape(5, 6), weights=-np.ones(20), normalize="x", client=client)
        with pytest.raises(ValueError, match="^Parameter weights"):
            fn(x, y, f, weights=-np.ones(20), normalize="x", client=client)
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # the error comes before the warning
            with pytest.raises(ValueError, match="^Normalize must be"):
                fn(x, y, f, normalize="x", precenter=True, client=client)
        with pytest.raises(ValueError, match="^Parameters x, y, weights"):
            fn(x, y.reshape(4, 5), f, client=client)   # ones_like(y): weights 2-d too


def test_deprecations_117(client, rng):
    """scipy 1.17 / 1.18: precenter given at all warns; arguments after freqs by
    position warn and work; scipy 1.15 / 1.16 warn about neither."""
    x, y, f = make(rng, 30, 40)
    f18 = lombscargle_for("1.18")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = f18(x, y, f, normalize=True, client=client)
        np.testing.assert_array_equal(new(x, y, f, False, True, client=client), plain)
    for pc in (True, False):
        with pytest.warns(DeprecationWarning) as rec:
            got = f18(x, y, f, precenter=pc, client=client)
        assert [str(w.message) for w in rec] == [_scipy_compat.PRECENTER_DEPRECATION]
        assert rec[0].filename == __file__   # points at the caller
        np.testing.assert_array_equal(got, new(x, y, f, pc, client=client))
    with pytest.warns(DeprecationWarning) as rec:
        got = f18(x, y, f, False, "normalize", client=client)
    msgs = [str(w.message) for w in rec]
    assert len(msgs) == 2 and msgs[1] == _scipy_compat.PRECENTER_DEPRECATION
    assert msgs[0] in ["You are passing as positional arguments: %s. Please change your "
                       "invocation to use keyword arguments. From SciPy 1.19.0, passing "
                       "these as positional arguments will result in an error." % names
                       for names in ("precenter, normalize", "normalize, precenter")]
    assert rec[0].filename == __file__
    np.testing.assert_array_equal(got, plain)


@pytest.mark.parametrize("version", ["1.14", "1.16", "1.18"])
def test_shapes_and_inputs(client, rng, version):
    """Lists, integer arrays, mixed dtypes; one frequency squeezed from 1.15 on (a
    complex scalar for 'amplitude'); the inputs never written (precenter, weights)."""
    fn = lombscargle_for(version)
    x, y, f = make(rng, 25, 12)
    xi = np.sort(rng.choice(1000, 25, replace=False)).astype(np.int32)
    kw = {} if version == "1.14" else {"weights": rng.uniform(0.5, 2, 25)}
    ins = [xi, y.astype(np.float32), f, kw.get("weights")]
    copies = [None if a is None else a.copy() for a in ins]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        got = fn(xi, y.astype(np.float32), f, precenter=True, client=client, **kw)
        lists = fn(xi.tolist(), y.astype(np.float32).tolist(), f.tolist(), precenter=True,
                   client=client, **kw)
        one = fn(x, y, [f[0]], normalize=True, client=client)
        if version != "1.14":
            amp = fn(x, y, f[:1], normalize="amplitude", client=client)
    for a, c in zip(ins, copies):
        if a is not None:
            np.testing.assert_array_equal(a, c)
    assert got.shape == (12,) and got.dtype == np.float64
    np.testing.assert_array_equal(got, lists)
    ref = (legacy_ref(xi, y.astype(np.float32), f, True) if version == "1.14" else
           ls_ref(xi, y.astype(np.float32), f, True, weights=kw["weights"]))
    check(got, ref, np.float64, "mixed dtypes")
    if version == "1.14":
        assert one.shape == (1,)
    else:
        assert type(one) is np.ndarray and one.shape == () and one.dtype == np.float64
        assert type(amp) is np.complex128


def test_same_as_installed(client, rng):
    """The drop-in against the installed scipy itself: values, shapes, exception types."""
    x, y, f = make(rng, 40, 60)
    cases = [((x, y, f), {}), ((x, y, f, True, True), {}), ((x.tolist(), y, f[:3]), {}),
             ((x.astype(np.float32), y, f), {"normalize": True})]
    if not NEW_SCIPY:  # scipy <= 1.14 takes a 0-d freqs (1.15 on refuse it: below)
        cases.append(((x.tolist(), y, f[3]), {}))
    if NEW_SCIPY:
        cases += [((x, y, f[:1]), {"normalize": "amplitude", "floating_mean": True}),
                  ((x, y, f), {"weights": rng.uniform(0, 1, 40)})]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for args, kw in cases:
            ref = scipy_signal.lombscargle(*args, **kw)
            got = lombscargle(*args, client=client, **kw)
            assert type(got) is type(ref) and np.shape(got) == np.shape(ref)
            assert np.asarray(got).dtype == np.asarray(ref).dtype
            check(np.atleast_1d(got), np.atleast_1d(ref), np.float64, repr(kw))
    bad = [(x.reshape(4, 10), y.reshape(4, 10), f), (x, y[:3], f), (x, y, f.reshape(6, 10))]
    if NEW_SCIPY:
        bad.append((x, y, f, False, "bogus"))
        bad.append((x.tolist(), y, f[3]))
    else:
        bad.append((x, y, np.r_[f, 0.0]))
    for args in bad:
        with pytest.raises(Exception) as want:
            scipy_signal.lombscargle(*args)
        with pytest.raises(Exception) as got:
            lombscargle(*args, client=client)
        assert isinstance(got.value, type(want.value)), (got.value, want.value)
