"""Host memory shared with gpud: arrays from client.empty()/asarray() go by reference.

The zero-copy check: a 256 MiB region-backed argument to run costs gpud one
request (the daemon's own per-connection count), and the Python side allocates
no copy of it (tracemalloc sees numpy's allocations; its peak stays under 1 MiB).
"""
import tracemalloc

import numpy as np
import pytest

import gpud


def session_requests(client):
    me = client.server.connection
    return [s for s in client.status()["sessions"] if s["id"] == me][0]["requests"]


def test_empty_and_asarray(client, rng):
    if not client.has_shm:
        pytest.skip("host memory needs ipc:// with shared memory")
    a = client.empty((3, 5), "int32")
    assert a.shape == (3, 5) and a.dtype == np.int32 and not a.any()  # zero-filled
    a[:] = rng.integers(-100, 100, (3, 5))
    assert client.run("sum", x=a) == a.sum()
    b = client.asarray(rng.uniform(size=1000))
    assert client.asarray(b) is b  # already shared: no second copy
    np.testing.assert_allclose(client.run("sum", x=b), b.sum(), rtol=1e-13)
    z = client.empty(0, "float32")
    assert z.shape == (0,) and client.run("sum", x=z) == 0


def test_256mib_argument_is_not_copied(client):
    if not client.has_shm:
        pytest.skip("host memory needs ipc:// with shared memory")
    n = (256 << 20) // 8
    a = client.empty(n, "float64")
    a[:] = 1.0
    a[::1000] = 3.0
    want = float(n) + 2.0 * len(a[::1000])
    client.run("sum", x=a[:8])  # warm: kernel table fetched
    before = session_requests(client)
    tracemalloc.start()
    try:
        s = client.run("sum", x=a)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    after = session_requests(client)
    assert float(s) == want
    assert peak < (1 << 20), "the client allocated %d bytes running on a region" % peak
    # one run request (the status call that reads the count is the other)
    assert after - before == 2, (before, after)
    # An ordinary 256 MiB array takes the upload path: more requests than one.
    plain = np.ones(n)
    before = session_requests(client)
    assert float(client.run("sum", x=plain)) == float(n)
    assert session_requests(client) - before > 2


def test_host_memory_outlives_close(url, rng):
    c = gpud.connect(url)
    if not c.has_shm:
        c.close()
        pytest.skip("host memory needs ipc:// with shared memory")
    a = c.empty(1000, "float64")
    vals = rng.uniform(size=1000)
    a[:] = vals
    c.close()
    np.testing.assert_array_equal(a, vals)  # still mapped, still readable and writable
    a[0] = 42.0
    assert a[0] == 42.0
    with pytest.raises(gpud.ClientClosed):
        c.run("sum", x=a)
    del a  # the last array: the connection closes now
    assert c.closed
