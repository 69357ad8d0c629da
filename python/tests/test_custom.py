"""gpud.ElementwiseKernel and gpud.RawKernel: CuPy's forms, registered through the client.

On the cpu backend gpud registers and checks custom kernels but answers a
run with Unsupported ("custom kernels need the cuda backend"); on the cuda
backend every result is compared with numpy.
"""
import numpy as np
import pytest

import gpud

SCALE = r'''
extern "C" __global__ void scale(const float *x, float *y, float s, long long n)
{
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x)
		y[i] = s * x[i];
}
'''


def runs_custom(client):
    return client.backend == "cuda"


def test_elementwise(client, rng):
    k = gpud.ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z",
                               "z = a * x + y", "py_axpy")
    assert k.registered_name.startswith("py_axpy_")
    x = rng.normal(size=1000).astype(np.float32)
    y = rng.normal(size=1000).astype(np.float32)
    if not runs_custom(client):
        with pytest.raises(gpud.Unsupported, match="cuda backend"):
            k(x, y, 0.5, client=client)
        assert k.registered_name in client.kernels  # registered all the same
        return
    z = k(x, y, 0.5, client=client)
    np.testing.assert_allclose(z, np.float32(0.5) * x + y, rtol=2e-6, atol=1e-6)
    out = np.full(1000, np.nan, np.float32)
    assert k(x, y, 0.5, out, client=client) is out  # fills the output given
    np.testing.assert_allclose(out, z, rtol=0, atol=0)
    b = client.alloc(1000, "float32")
    k(x, y, 2.0, b, client=client)
    np.testing.assert_allclose(b.get(), 2 * x + y, rtol=2e-6, atol=1e-6)
    with pytest.raises(TypeError, match="takes 3 inputs"):
        k(x, y, client=client)


def test_same_kernel_registered_once(url, client):
    a = gpud.ElementwiseKernel("float64 x", "float64 z", "z = x * x", "py_sq")
    b = gpud.ElementwiseKernel("float64 x", "float64 z", "z = x * x", "py_sq")
    c = gpud.ElementwiseKernel("float64 x", "float64 z", "z = x * x * x", "py_sq")
    assert a.registered_name == b.registered_name != c.registered_name
    a.kernel(client)
    other = gpud.connect(url)  # another process of this tenant would do the same
    try:
        b.kernel(other)         # finds it registered: no "registered already"
        assert a.registered_name in other.kernels
    finally:
        other.close()
    a.unregister(client)
    assert a.registered_name not in client.kernels


def test_refused_when_made():
    with pytest.raises(gpud.Unsupported, match="placeholders"):
        gpud.ElementwiseKernel("T x", "T z", "z = x", "t")
    with pytest.raises(gpud.Unsupported, match="preamble"):
        gpud.ElementwiseKernel("float32 x", "float32 z", "z = x", "p", preamble="#define A 1")
    with pytest.raises(gpud.Unsupported, match="option"):
        gpud.ElementwiseKernel("float32 x", "float32 z", "z = x", "o", options=("-G",))
    with pytest.raises(gpud.InvalidArgument, match="identifier"):
        gpud.ElementwiseKernel("float32 x", "float32 z", "z = x", "no-dash")
    with pytest.raises(TypeError, match="signature"):
        gpud.RawKernel(SCALE, "scale")
    with pytest.raises(gpud.Unsupported, match="NVRTC"):
        gpud.RawKernel(SCALE, "scale", backend="nvcc", signature="x:in f32[]")


def test_raw(client, rng):
    k = gpud.RawKernel(SCALE, "scale", signature="x:in f32[], y:out f32[], s:f32, n:i64")
    x = rng.normal(size=5000).astype(np.float32)
    y = np.zeros(5000, np.float32)
    if not runs_custom(client):
        with pytest.raises(gpud.Unsupported, match="cuda backend"):
            k((8,), (128,), (x, y, 2.0, 5000), client=client)
        return
    assert k((8,), (128,), (x, y, 3.0, 5000), client=client) is None
    np.testing.assert_allclose(y, 3 * x, rtol=1e-6)
    b = client.alloc(5000, "float32")
    k(16, 256, (x, b, -1.0, 5000), client=client)
    np.testing.assert_array_equal(b.get(), -x)
    with pytest.raises(gpud.Unsupported, match="1-d"):
        k((8, 2), (128,), (x, y, 3.0, 5000), client=client)
    with pytest.raises(TypeError, match="args must be a tuple of 4"):
        k(8, 128, (x, y), client=client)
    auto = gpud.RawKernel(SCALE, "scale", signature="x:in f32[], y:out f32[], s:f32, n:i64",
                          blocks_per_sm=2, block=128)
    auto(args=(x, y, 0.5, 5000), client=client)
    np.testing.assert_allclose(y, 0.5 * x, rtol=1e-6)


def test_compile_error_verbatim(client):
    k = gpud.RawKernel("extern \"C\" __global__ void bad(float *x) { x[0] = undefined_name; }",
                       "bad", signature="x:out f32[]")
    if not runs_custom(client):
        k.kernel(client)  # the cpu backend checks, it does not compile
        return
    with pytest.raises(gpud.InvalidArgument, match="undefined_name"):
        k.kernel(client)


def test_unpinned_kernels_evicted_at_the_quota(start_gpud, rng, tmp_path):
    """custom_kernels = 3: the least recently used unpinned kernel makes room."""
    g = start_gpud("[gpud]\nkernel_cache = %s\n[quota]\ncustom_kernels = 3\n" % tmp_path)
    c = gpud.connect(g.url)
    try:
        ks = {n: gpud.ElementwiseKernel("float32 x", "float32 z", "z = x * %d" % i, n)
              for i, n in enumerate(("py_pin", "py_a", "py_b", "py_c"))}
        spec, keep = ks["py_pin"]._spec()
        c._register(spec, keep)  # pinned, as gpuctl kernel add registers
        ks["py_a"].kernel(c)
        ks["py_b"].kernel(c)
        x = rng.normal(size=64).astype(np.float32)

        def use(name):
            if runs_custom(c):
                np.testing.assert_allclose(ks[name](x, client=c),
                                           x * np.float32(list(ks).index(name)), rtol=1e-6)
            else:
                with pytest.raises(gpud.Unsupported, match="cuda backend"):
                    ks[name](x, client=c)

        def custom():
            return {n: k for n, k in c.kernels.items() if k.custom}

        use("py_a")  # py_b is now the least recently used unpinned kernel
        ks["py_c"].kernel(c)
        names = {ks[n].registered_name: n for n in ks}
        have = custom()
        assert sorted(names[n] for n in have) == ["py_a", "py_c", "py_pin"]
        assert have[ks["py_pin"].registered_name].pinned
        assert not have[ks["py_a"].registered_name].pinned
        assert all(k.last_used > 1e9 and not k.shared for k in have.values())
        assert all(not k.custom and k.last_used is None for k in c.kernels.values()
                   if k.name not in names)
        # py_b, evicted, is registered again on its next call; py_a goes now
        use("py_b")
        assert sorted(names[n] for n in custom()) == ["py_b", "py_c", "py_pin"]
        regs = sorted(p.name for p in tmp_path.glob("tenants/*/*.reg"))
        assert regs == sorted(ks[n].registered_name + ".reg" for n in ("py_b", "py_c", "py_pin"))
    finally:
        c.close()
    # pinned or not is kept across a restart
    g.restart()
    c = gpud.connect(g.url)
    try:
        have = {n: k for n, k in c.kernels.items() if k.custom}
        assert {n: k.pinned for n, k in have.items()} == {
            ks["py_pin"].registered_name: True, ks["py_b"].registered_name: False,
            ks["py_c"].registered_name: False}
    finally:
        c.close()


def test_reduction(client, rng):
    """gpud.ReductionKernel in CuPy's form against numpy on fresh random data."""
    l2 = gpud.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)", "0",
                              "py_l2", reduce_type="float64")
    wsum = gpud.ReductionKernel("float64 x, float64 w", "float64 y", "x * w", "a + b",
                                "y = a", "0", "py_wsum")
    imax = gpud.ReductionKernel("int32 x", "int32 y", "x", "max(a, b)", "y = a",
                                "-2147483647 - 1", "py_imax", block=128)
    x = rng.normal(size=100003).astype(np.float32)
    m = rng.normal(size=(37, 1001))
    w = rng.normal(size=(37, 1001))
    xi = rng.integers(-10**9, 10**9, size=5001).astype(np.int32)
    # what gpud refuses before anything runs
    with pytest.raises(gpud.Unsupported, match="last axis of 2-d arrays"):
        wsum(m, w, axis=0, client=client)
    with pytest.raises(gpud.Unsupported, match="preamble"):
        gpud.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0",
                             preamble="#define X 1")
    with pytest.raises(gpud.InvalidArgument, match="exactly one output"):
        gpud.ReductionKernel("float32 x", "float32 y, float32 z", "x", "a + b", "y = a", "0")
    with pytest.raises(TypeError, match="takes 2 inputs"):
        wsum(m, client=client)
    if not runs_custom(client):
        with pytest.raises(gpud.Unsupported, match="cuda backend"):
            l2(x, client=client)
        assert client.kernels[l2.registered_name].doc.startswith("custom reduction kernel")
        return
    y = l2(x, client=client)
    assert y.shape == () and y.dtype == np.float32
    np.testing.assert_allclose(y, np.sqrt(np.sum(x.astype(np.float64) ** 2)), rtol=1e-6)
    assert l2(x, keepdims=True, client=client).shape == (1,)
    np.testing.assert_allclose(wsum(m, w, client=client), np.sum(m * w), rtol=1e-10)
    rows = wsum(m, w, axis=-1, client=client)
    np.testing.assert_allclose(rows, np.sum(m * w, axis=-1), rtol=1e-10)
    assert wsum(m, w, axis=1, keepdims=True, client=client).shape == (37, 1)
    np.testing.assert_allclose(wsum(m, 0.5, client=client), 0.5 * np.sum(m), rtol=1e-10)
    assert int(imax(xi, client=client)) == int(xi.max())
