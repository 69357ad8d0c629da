"""gpud.signal.lombscargle against scipy.signal.lombscargle of the scipy installed.

Fresh random signals (uneven sampling, seed printed), every precenter/normalize
combination, float64 and float32 inputs, the default client and client=.
"""
import numpy as np
import pytest

import gpud
from gpud.signal import lombscargle

scipy_signal = pytest.importorskip("scipy.signal")
import scipy  # noqa: E402

SCIPY = tuple(int(p) for p in scipy.__version__.split(".")[:2])


def make(rng, n, nf, dtype=np.float64):
    x = np.sort(rng.uniform(0.01, 10 * np.pi, n))
    y = 2.0 * np.cos(rng.uniform(0.5, 2.0) * x + 0.5 * np.pi) + rng.normal(0, 0.3, n)
    f = np.linspace(0.01, 10.0, nf)
    return x.astype(dtype), y.astype(dtype), f.astype(dtype)


@pytest.mark.parametrize("precenter", [False, True])
@pytest.mark.parametrize("normalize", [False, True, "power", "normalize"])
def test_parity(client, rng, precenter, normalize):
    flag = normalize if isinstance(normalize, bool) else normalize == "normalize"
    if SCIPY >= (1, 15) and precenter and flag:
        pytest.skip("scipy >= 1.15 normalises by the centred y here (gpud: scipy <= 1.14's)")
    if isinstance(normalize, str) and SCIPY < (1, 15):
        ref_norm = flag
    else:
        ref_norm = normalize
    for n, nf in ((7, 50), (300, 2000)):
        x, y, f = make(rng, n, nf)
        got = lombscargle(x, y, f, precenter, normalize, client=client)
        ref = scipy_signal.lombscargle(x, y, f, precenter=precenter, normalize=ref_norm)
        assert got.dtype == np.float64 and got.shape == ref.shape
        assert np.max(np.abs(got - ref)) <= 1e-9 * np.max(np.abs(ref)), (n, nf)


def test_float32_inputs_computed_as_scipy_does(client, rng):
    x, y, f = make(rng, 100, 1000, np.float32)
    got = lombscargle(x, y, f, client=client)
    ref = scipy_signal.lombscargle(x, y, f)
    assert got.dtype == ref.dtype == np.float64
    assert np.max(np.abs(got - ref)) <= 1e-9 * np.max(ref)
    fast = lombscargle(x, y, f, client=client, dtype="float32")
    assert fast.dtype == np.float32
    assert np.max(np.abs(fast - ref)) <= 1e-4 * np.max(ref)


def test_default_client(url, rng, monkeypatch):
    monkeypatch.setenv("GPUD_URL", url)
    old = gpud.set_default_client(None)
    try:
        x, y, f = make(rng, 50, 200)
        got = lombscargle(x.tolist(), y.tolist(), f.tolist())
        np.testing.assert_allclose(got, scipy_signal.lombscargle(x, y, f), rtol=1e-9,
                                   atol=1e-12)
        c = gpud.default_client()
        assert c is gpud.default_client() and c.url == url
        c.close()  # a closed default client is opened again on next use
        assert not gpud.default_client().closed
    finally:
        gpud.set_default_client(old)


def test_errors_as_scipys(client, rng):
    x, y, f = make(rng, 20, 30)
    with pytest.raises(ValueError) as ei:
        lombscargle(x, y[:5], f, client=client)
    assert "same length" in str(ei.value) and "20" in str(ei.value)
    with pytest.raises(ValueError):
        scipy_signal.lombscargle(x, y[:5], f)
    with pytest.raises(ValueError, match="1-d|dimension|ndim"):
        lombscargle(x.reshape(4, 5), y.reshape(4, 5), f, client=client)
    with pytest.raises(gpud.Unsupported, match="weights"):
        lombscargle(x, y, f, weights=np.ones(20), client=client)
    with pytest.raises(NotImplementedError, match="amplitude"):
        lombscargle(x, y, f, normalize="amplitude", client=client)
    with pytest.raises(ValueError, match="normalize"):
        lombscargle(x, y, f, normalize="bogus", client=client)
    with pytest.raises(ValueError, match="argument 'x'"):
        lombscargle(["a", "b"], y[:2], f, client=client)
