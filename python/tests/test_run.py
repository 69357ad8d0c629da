"""client.run and run_buffers: argument conversion, both transfer paths, outputs, out=.

Every kernel result is compared with numpy on fresh random inputs (seed printed).
"""
import numpy as np
import pytest

import gpud


def lomb_ref(x, y, f):
    """scipy <= 1.14's lombscargle in float64 numpy (Townsend's algorithm)."""
    x, y, f = (np.asarray(a, np.float64) for a in (x, y, f))
    out = np.empty(len(f))
    for i, w in enumerate(f):
        c, s = np.cos(w * x), np.sin(w * x)
        xc, xs, cc, ss, cs = y @ c, y @ s, c @ c, s @ s, c @ s
        tau = np.arctan2(2 * cs, cc - ss) / (2 * w)
        ct, st = np.cos(w * tau), np.sin(w * tau)
        out[i] = 0.5 * ((ct * xc + st * xs) ** 2 / (ct * ct * cc + 2 * ct * st * cs + st * st * ss)
                        + (ct * xs - st * xc) ** 2 / (ct * ct * ss - 2 * ct * st * cs + st * st * cc))
    return out


def signal(rng, n=64, nf=300, dtype=np.float64):
    x = np.sort(rng.uniform(0.0, 30.0, n))
    y = rng.normal(size=n) + 2.0 * np.cos(1.3 * x)
    f = rng.uniform(0.1, 5.0, nf)
    return x.astype(dtype), y.astype(dtype), f.astype(dtype)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-9), (np.float32, 2e-4)])
def test_lombscargle_one_trip(client, rng, dtype, tol):
    x, y, f = signal(rng, dtype=dtype)
    p = client.run("lombscargle", x=x, y=y, freqs=f)
    assert isinstance(p, np.ndarray) and p.dtype == dtype and p.shape == f.shape
    ref = lomb_ref(x, y, f)
    assert np.max(np.abs(p - ref)) <= tol * np.max(ref)


def test_big_inputs_go_through_buffers(client, rng):
    # 2 MiB of inputs: more than one request carries on the one-trip path.
    x = rng.uniform(0.0, 1.0, 1 << 18)
    s = client.run("sum", x=x)
    assert s.shape == () and s.dtype == np.float64
    assert abs(float(s) - np.sum(x)) <= 1e-9 * np.sum(np.abs(x))
    big = rng.uniform(-1, 1, 3 << 18)
    z = client.run("add", x=big, y=2.5)
    np.testing.assert_array_equal(z, big + 2.5)


def test_integers_scalars_dtypes(client, rng):
    a = rng.integers(-1000, 1000, 500, dtype=np.int32)
    b = rng.integers(-1000, 1000, 500, dtype=np.int32)
    np.testing.assert_array_equal(client.run("mul", x=a, y=b), a * b)
    np.testing.assert_array_equal(client.run("add", x=a, y=7), a + 7)
    z = client.run("uniform", n=1000, seed=7, dtype="float32")
    assert z.dtype == np.float32 and z.shape == (1000,)
    assert np.all((z > 0) & (z <= 1))
    for spelling in (np.float32, np.dtype("float32"), "float32"):
        np.testing.assert_array_equal(client.run("uniform", n=1000, seed=7, dtype=spelling), z)
    # numpy scalars and 0-d arrays as scalars
    y = client.run("axpy", x=a.astype(np.float64), y=b.astype(np.float64), a=np.float32(0.5))
    np.testing.assert_allclose(y, 0.5 * a + b, rtol=1e-15)
    y = client.run("axpy", x=a.astype(np.float64), y=b.astype(np.float64), a=np.array(2.0))
    np.testing.assert_allclose(y, 2.0 * a + b, rtol=1e-15)


def test_conversions(client, rng):
    x = rng.uniform(0, 10, 400)
    # non-contiguous, Fortran order, big-endian: converted, same values
    np.testing.assert_allclose(client.run("sum", x=x[::2]), np.sum(x[::2]), rtol=1e-13)
    m = np.asfortranarray(x.reshape(20, 20))
    np.testing.assert_allclose(client.run("sum", x=m), np.sum(x), rtol=1e-13)
    be = x.astype(">f8")
    np.testing.assert_allclose(client.run("sum", x=be), np.sum(x), rtol=1e-13)
    # lists: numpy's natural dtype
    assert client.run("sum", x=[1, 2, 3]) == 6
    assert client.run("sum", x=[[1.5, 2.5], [3.0, 4.0]]) == 11.0


def test_lossy_or_foreign_dtypes_refused(client):
    for bad, got in ((np.arange(4, dtype=np.float16), "float16"),
                     (np.arange(4, dtype=np.uint64), "uint64"),
                     (np.arange(4, dtype=np.int16), "int16"),
                     (np.ones(4, dtype=bool), "bool"),
                     (np.ones(4, dtype=np.complex128), "complex128")):
        with pytest.raises(TypeError) as ei:
            client.run("sum", x=bad)
        assert "argument 'x'" in str(ei.value) and got in str(ei.value)
        assert "float32" in str(ei.value)  # says what it takes
    # a list for a float32-only parameter: converted only when exact
    with pytest.raises(gpud.ArgumentTypeError):
        client.run("sum", x=[1, "a"])


def test_outputs_into_buffers_and_arrays(client, rng):
    x, y, f = signal(rng)
    ref = client.run("lombscargle", x=x, y=y, freqs=f)
    out = client.alloc(f.shape, "float64")
    r = client.run("lombscargle", x=x, y=y, freqs=f, out=out)
    assert r is out
    np.testing.assert_array_equal(out.get(), ref)
    out2 = client.alloc(f.shape, np.float64)
    assert client.run("lombscargle", x=x, y=y, freqs=f, pgram=out2) is out2
    np.testing.assert_array_equal(out2.get(), ref)
    dst = np.full(f.shape, np.nan)
    assert client.run("lombscargle", x=x, y=y, freqs=f, out=dst) is dst
    np.testing.assert_array_equal(dst, ref)
    wrong = np.empty(3)
    with pytest.raises(gpud.InvalidArgument):
        client.run("lombscargle", x=x, y=y, freqs=f, out=wrong)
    # 'out' is the reductions' own output name
    o = client.alloc((), "float64")
    client.run("sum", x=x, out=o)
    assert abs(float(o.get()) - np.sum(x)) <= 1e-12 * np.sum(np.abs(x))


def test_buffers_chain(client, rng):
    x, y, f = signal(rng)
    bx, by, bf = client.upload(x), client.upload(y), client.upload(f)
    assert (bx.shape, bx.dtype, bx.nbytes) == (x.shape, x.dtype, x.nbytes)
    p = client.run_buffers("lombscargle", x=bx, y=by, freqs=bf)
    assert isinstance(p, gpud.Buffer) and p.shape == f.shape
    total = client.run("sum", x=p)  # stays in gpud between the two runs
    np.testing.assert_allclose(total, np.sum(lomb_ref(x, y, f)), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(p), lomb_ref(x, y, f), rtol=1e-9, atol=1e-9)
    bx.set(x * 2)
    np.testing.assert_array_equal(bx.get(), x * 2)
    with pytest.raises(gpud.InvalidArgument):
        bx.set(np.ones(3))


def test_several_outputs_dict(client, url, rng):
    ek = gpud.ElementwiseKernel("float64 x", "float64 a, float64 b", "a = x + 1; b = x * 2",
                                "two_outputs")
    ek.kernel(client)  # registers it (checked on every backend)
    x = rng.normal(size=50)
    if client.backend == "cpu":
        with pytest.raises(gpud.Unsupported, match="need the cuda backend"):
            client.run(ek.registered_name, x=x)
        return
    r = client.run(ek.registered_name, x=x)
    assert set(r) == {"a", "b"}
    np.testing.assert_array_equal(r["a"], x + 1)
    np.testing.assert_array_equal(r["b"], x * 2)


def test_kernels_listing_and_k(client, rng):
    ks = client.kernels
    assert "lombscargle" in ks and "sum" in ks
    lk = ks["lombscargle"]
    assert [p.name for p in lk.params][:3] == ["x", "y", "freqs"]
    assert lk.outputs == ("pgram",)
    assert lk.by_name["x"].dtypes == ("float32", "float64")
    assert lk.by_name["normalize"].default == "power"
    assert lk.by_name["freqs"].optional and lk.by_name["weights"].optional
    fn = client.k.lombscargle
    assert ("lombscargle(x, y, freqs=None, precenter=False, normalize='power', weights=None, "
            "floating_mean=False, f0=None, df=None, nf=None, legacy=False" in fn.__doc__)
    assert "periodogram" in fn.__doc__
    import inspect
    assert list(inspect.signature(fn).parameters)[:3] == ["x", "y", "freqs"]
    assert "lombscargle" in dir(client.k) and "uniform" in dir(client.k)
    x, y, f = signal(rng)
    np.testing.assert_array_equal(fn(x, y, f, normalize=True),
                                  client.run("lombscargle", x=x, y=y, freqs=f, normalize=True))
    with pytest.raises(TypeError):
        fn(x)  # y missing: Python's own binding error
    with pytest.raises(gpud.InvalidArgument, match="missing the frequencies"):
        fn(x, y)  # freqs is optional (or the grid): gpud says what is missing
    with pytest.raises(AttributeError):
        client.k.no_such_kernel


def test_warm_repeats_and_big_results(client, rng):
    # The second and later calls take the prepared one-trip path (gpud/_fast.py): same results.
    x, y, f = signal(rng, dtype=np.float32)
    first = client.run("lombscargle", x=x, y=y, freqs=f)
    for _ in range(3):
        np.testing.assert_array_equal(client.run("lombscargle", x=x, y=y, freqs=f), first)
    x2, y2, f2 = signal(rng, n=30, nf=77, dtype=np.float32)  # other shapes, same plan
    np.testing.assert_allclose(client.run("lombscargle", x=x2, y=y2, freqs=f2),
                               lomb_ref(x2, y2, f2), rtol=2e-3, atol=2e-4 * 77)
    # a different kind of value for a name falls back to the general path
    a = client.run("axpy", x=x.astype(np.float64), y=y.astype(np.float64), a=2.0)
    b = client.run("axpy", x=x.astype(np.float64), y=y.astype(np.float64), a=2)
    np.testing.assert_array_equal(a, b)
    # big outputs of a one-trip run come back without a copy, and are the caller's to write
    for _ in range(2):
        u = client.run("uniform", n=300000, seed=3)
        assert u.shape == (300000,) and u.flags.writeable and np.all((u > 0) & (u <= 1))
        u[0] = 5.0
    np.testing.assert_array_equal(client.run("uniform", n=300000, seed=3)[1:], u[1:])


def test_complex_buffers(client, rng):
    """complex64 and complex128 arrays go to gpud and back bit for bit (numpy's layout)."""
    for dt in (np.complex64, np.complex128):
        a = (rng.normal(size=(3, 70)) + 1j * rng.normal(size=(3, 70))).astype(dt)
        b = client.upload(a)
        assert b.dtype == dt and b.shape == (3, 70) and b.nbytes == a.nbytes
        np.testing.assert_array_equal(b.get(), a)
        np.testing.assert_array_equal(client.upload(a.astype(a.dtype.newbyteorder(">"))).get(), a)
        c = client.alloc(5, dt)
        c.set(a[0, :5])
        np.testing.assert_array_equal(c.get(), a[0, :5])
    big = (rng.normal(size=1 << 17) + 1j).astype(np.complex128)  # 2 MiB: staged
    np.testing.assert_array_equal(client.upload(big).get(), big)
    with pytest.raises(TypeError, match="complex64"):  # no kernel takes complex yet
        client.run("sum", x=np.ones(3, np.complex64))


def test_warm_path_checks_shapes_and_ring(client, rng):
    """The prepared path (gpud/_fast.py): fresh outputs of the right shape whatever the
    shapes before, the general path's errors for what does not fit, the request ring."""
    def pair(n, dt=np.float32):
        return rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)
    x, y = pair(1000)
    z = client.run("add", x=x, y=y)  # the plan is made here
    np.testing.assert_array_equal(z, x + y)
    ring0 = gpud._lib.lib.gpud_ring_calls(client._c)
    outs = []
    for n in (1000, 37, 1000, 37, 0, 1, 5000):  # shapes alternate: each expected, or learnt
        a, b = pair(n)
        c = client.run("add", x=a, y=b)
        assert c.shape == (n,) and c.dtype == np.float32 and c.flags.writeable
        np.testing.assert_array_equal(c, a + b)
        outs.append((c, a + b))
    for c, want in outs:  # each call's output is its own array
        np.testing.assert_array_equal(c, want)
    if client.has_shm:  # over ipc://, every warm call took the request ring
        assert gpud._lib.lib.gpud_ring_calls(client._c) - ring0 == 7
    # 2-d, read-only and a scalar of another kind: right results (general path or not)
    a2 = rng.standard_normal((3, 40)).astype(np.float32)
    np.testing.assert_array_equal(client.run("add", x=a2, y=a2), a2 + a2)
    a.flags.writeable = False
    np.testing.assert_array_equal(client.run("add", x=a, y=b), a + b)
    np.testing.assert_array_equal(client.run("add", x=a, y=2.5), a + np.float32(2.5))
    # what does not fit the plan raises the general path's errors, naming the argument
    with pytest.raises(gpud.ArgumentTypeError) as ei:
        client.run("add", x=x.astype(np.float16), y=y)
    assert "argument 'x'" in str(ei.value) and "float16" in str(ei.value)
    with pytest.raises(gpud.InvalidArgument) as ei:
        client.run("add", x=x, y=y[:-1])
    assert "y" in str(ei.value) and "999" in str(ei.value) and "1000" in str(ei.value)
    np.testing.assert_array_equal(client.run("add", x=x, y=y), x + y)  # and it goes on
    # an output whose shape follows a scalar: learnt per run
    for n in (10, 300, 10):
        u = client.run("uniform", n=n, seed=n)
        assert u.shape == (n,) and np.all((u > 0) & (u <= 1))
