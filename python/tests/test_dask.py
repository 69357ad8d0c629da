"""gpud.dask on a real Dask cluster: two worker processes (LocalCluster) and
a gpud of this module's own (cpu backend), so that its connection count is
this module's only.

Connections are counted with gpud's status (the observer's own is one);
a count that must go down is waited for with a bounded poll (an Event's
wait between status calls), never a fixed sleep.
"""
import logging
import os
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="Dask's distributed is not installed (Debian's python3-distributed)")

import gpud  # noqa: E402
import gpud.dask  # noqa: E402
import gpud.signal  # noqa: E402
from conftest import Gpud  # noqa: E402

# one series in today's form (weights=...), whatever scipy is installed
ONE = gpud.signal.lombscargle_for(None)

NWORKERS = 2


@pytest.fixture(scope="module")
def dgpud():
    g = Gpud()
    yield g
    g.stop()


@pytest.fixture(scope="module")
def observer(dgpud):
    c = gpud.connect(dgpud.url)
    yield c
    c.close()


def wait_connections(observer, n, timeout=60.0):
    """Returns once gpud counts n connections (the observer's included)."""
    tick = threading.Event()
    deadline = time.monotonic() + timeout
    while True:
        got = observer.status()["connections"]
        if got == n:
            return
        assert time.monotonic() < deadline, "gpud has %d connections, expected %d" % (got, n)
        tick.wait(0.02)


@pytest.fixture(scope="module")
def dclient(dgpud, observer):
    # the workers' environment names this module's gpud (register(url=None) reads it)
    cluster = distributed.LocalCluster(
        n_workers=NWORKERS, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None, silence_logs=logging.ERROR, env={"GPUD_URL": dgpud.url})
    dc = distributed.Client(cluster)
    dc.wait_for_workers(NWORKERS)
    yield dc
    gpud.dask.register(dc, dgpud.url)
    wait_connections(observer, 1 + NWORKERS)
    dc.close()
    cluster.close()
    # the workers closing tore the plugin down: their connections are gone
    wait_connections(observer, 1)


@pytest.fixture
def registered(dclient, dgpud, observer):
    gpud.dask.register(dclient, dgpud.url)
    wait_connections(observer, 1 + NWORKERS)
    return dclient


def on_each_worker(dc, fn, *args):
    """fn(*args) as a task on each worker: {address: result}."""
    addrs = sorted(dc.scheduler_info()["workers"])
    assert len(addrs) == NWORKERS
    futs = {a: dc.submit(fn, *args, workers=[a], allow_other_workers=False, pure=False)
            for a in addrs}
    return {a: f.result() for a, f in futs.items()}


def _worker_view():
    c = gpud.dask.worker_client()
    again = gpud.dask.worker_client()
    return {"pid": os.getpid(), "url": c.url, "same": c is again, "closed": c.closed,
            "default": gpud.default_client() is c}


def _worker_signal(x, y, f):
    """gpud.signal without client= in a task: the worker's connection (the default)."""
    return gpud.signal.lombscargle(x, y, f)


def _worker_client_error():
    try:
        gpud.dask.worker_client()
    except gpud.Unavailable as e:
        return str(e)
    return None


def series(rng, sizes, weights):
    out = []
    for k, n in enumerate(sizes):
        x = np.sort(rng.uniform(0, 50, n))
        y = np.sin(rng.uniform(0.5, 3) * x) + rng.standard_normal(n)
        w = rng.uniform(0.1, 2.0, n) if weights(k) else None
        out.append((x, y) if w is None else (x, y, w))
    return out


def test_import_gpud_does_not_import_dask():
    import subprocess
    import sys
    code = ("import sys, gpud, gpud.signal; "
            "print(any(m == 'dask' or m.startswith(('dask.', 'distributed')) "
            "for m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_one_connection_per_worker(registered, dgpud, observer, rng):
    views = on_each_worker(registered, _worker_view)
    assert len({v["pid"] for v in views.values()}) == NWORKERS
    for v in views.values():
        assert v == dict(v, url=dgpud.url, same=True, closed=False, default=True)
    assert observer.status()["connections"] == 1 + NWORKERS
    # gpud.signal without client= in a task uses the worker's connection: no new one
    x = np.sort(rng.uniform(0, 10, 40))
    y = rng.standard_normal(40)
    f = rng.uniform(0.1, 5, 30)
    want = gpud.signal.lombscargle(x, y, f, client=observer)
    for got in on_each_worker(registered, _worker_signal, x, y, f).values():
        np.testing.assert_array_equal(got, want)
    assert observer.status()["connections"] == 1 + NWORKERS


def test_url_from_the_workers_environment(dclient, dgpud, observer, monkeypatch):
    # the caller's $GPUD_URL names nothing: the workers' own (the cluster's env) is read
    monkeypatch.setenv("GPUD_URL", "ipc:///nonexistent/gpud-dask-test.sock")
    gpud.dask.register(dclient)
    wait_connections(observer, 1 + NWORKERS)
    for v in on_each_worker(dclient, _worker_view).values():
        assert v["url"] == dgpud.url and not v["closed"]


def test_explicit_url_wins_and_replacing_closes(dclient, dgpud, observer, start_gpud):
    other = start_gpud()
    with gpud.connect(other.url) as obs2:
        gpud.dask.register(dclient, other.url)
        wait_connections(obs2, 1 + NWORKERS)
        wait_connections(observer, 1)  # the plugin it replaced closed its connections
        for v in on_each_worker(dclient, _worker_view).values():
            assert v["url"] == other.url
        gpud.dask.register(dclient, dgpud.url)
        wait_connections(obs2, 1)
        wait_connections(observer, 1 + NWORKERS)


def test_unregister_closes_connections(registered, observer):
    gpud.dask.unregister(registered)
    wait_connections(observer, 1)
    for msg in on_each_worker(registered, _worker_client_error).values():
        assert msg is not None and "gpud.dask.register" in msg


def test_register_unreachable_raises(dclient, observer, tmp_path):
    bad = "ipc://%s/none.sock" % tmp_path
    with pytest.raises(gpud.Unavailable):
        gpud.dask.register(dclient, bad, connect_timeout=2)
    assert gpud.dask.PLUGIN_NAME not in (dclient.run_on_scheduler(
        lambda dask_scheduler: list(dask_scheduler.worker_plugins)))


def test_worker_client_outside_a_worker():
    with pytest.raises(gpud.Unavailable, match="not inside a Dask worker"):
        gpud.dask.worker_client()


def check_rows(got, items, freqs, observer, **kw):
    assert got.shape == (len(items), len(freqs) if freqs is not None else kw["nf"])
    for b, it in enumerate(items):
        w = it[2] if len(it) == 3 else None
        want = ONE(it[0], it[1], freqs, weights=w, client=observer, **kw)
        np.testing.assert_allclose(got[b], want, rtol=1e-10, atol=1e-12,
                                   err_msg="series %d" % b)


def test_lombscargle_ragged(registered, observer, rng):
    items = series(rng, [1, 2, 37, 200, 5, 64, 300, 11, 90], lambda k: False)
    freqs = rng.uniform(0.05, 8, 57)
    got = gpud.dask.lombscargle(registered, items, freqs)
    check_rows(got, items, freqs, observer)
    # scipy (any version: no precenter and normalize together, no weights); Debian's
    # scipy 1.10 aborts (pythran's divide-by-zero assertion) on a single sample
    sig = pytest.importorskip("scipy.signal")
    for b, (x, y) in enumerate(items):
        if len(x) < 2:
            continue
        np.testing.assert_allclose(got[b], sig.lombscargle(x, y, freqs), rtol=1e-9,
                                   atol=1e-9, err_msg="series %d" % b)
    # batches of 2: the same rows in the same order
    got2 = gpud.dask.lombscargle(registered, items, freqs, batch_size=2)
    np.testing.assert_array_equal(got2, got)
    assert observer.status()["connections"] == 1 + NWORKERS


def test_lombscargle_weights_mixed(registered, observer, rng):
    items = series(rng, rng.integers(3, 150, 11), lambda k: k % 3 != 1)
    kw = dict(normalize=True, floating_mean=True, f0=0.1, df=0.05, nf=40)
    got = gpud.dask.lombscargle(registered, items, batch_size=4, **kw)
    check_rows(got, items, None, observer, **kw)
    # all weighted, float32 and amplitudes
    items = series(rng, rng.integers(3, 150, 6), lambda k: True)
    freqs = rng.uniform(0.05, 8, 25)
    got = gpud.dask.lombscargle(registered, items, freqs, normalize="amplitude",
                                dtype="float32")
    assert got.dtype == np.complex64
    for b, (x, y, w) in enumerate(items):
        want = ONE(x, y, freqs, weights=w, normalize="amplitude",
                                       dtype="float32", client=observer)
        np.testing.assert_allclose(got[b], want, rtol=1e-5, atol=1e-5, err_msg="series %d" % b)


def test_lombscargle_failing_series_named(registered, rng):
    items = series(rng, rng.integers(5, 60, 8), lambda k: True)
    x, y, w = items[5]
    w = w.copy()
    w[2] = -1.0
    items[5] = (x, y, w)
    freqs = rng.uniform(0.1, 4, 10)
    with pytest.raises(gpud.InvalidArgument, match=r"series 5\b") as e:
        gpud.dask.lombscargle(registered, items, freqs, batch_size=3)
    assert isinstance(e.value, ValueError)
    items[5] = (x, y)
    x, y = items[6][:2]
    items[6] = (x, y[:-1])
    with pytest.raises(gpud.InvalidArgument, match=r"series 6\b"):
        gpud.dask.lombscargle(registered, items, freqs)


def test_lombscargle_arguments(registered, rng):
    x = rng.uniform(0, 1, 5)
    with pytest.raises(gpud.ArgumentTypeError, match=r"series\[1\]"):
        gpud.dask.lombscargle(registered, [(x, x), (x,)], [1.0])
    with pytest.raises(gpud.ArgumentTypeError, match="'weights'"):
        gpud.dask.lombscargle(registered, [(x, x)], [1.0], weights=[x])
    with pytest.raises(gpud.InvalidArgument, match="batch_size"):
        gpud.dask.lombscargle(registered, [(x, x)], [1.0], batch_size=0)
    got = gpud.dask.lombscargle(registered, [], f0=0.1, df=0.1, nf=7)
    assert got.shape == (0, 7) and got.dtype == np.float64


def test_batches_travel_packed(rng):
    """A batch of 1-d series of one dtype each goes to its worker as three
    concatenated arrays and comes back as the same series; any other batch
    goes as it is."""
    items = [(rng.uniform(0, 9, n), rng.normal(size=n), None) for n in (3, 0, 17, 1)]
    packed = gpud.dask._pack(items)
    assert isinstance(packed, tuple) and packed[0] == "packed"
    assert packed[1].shape == (21,) and packed[3] is None
    assert packed[4].tolist() == [0, 3, 3, 20, 21]
    back = gpud.dask._unpack(packed)
    assert len(back) == len(items)
    for (x, y, w), (bx, by, bw) in zip(items, back):
        np.testing.assert_array_equal(bx, x)
        np.testing.assert_array_equal(by, y)
        assert bw is None
    weighted = [(x, y, rng.uniform(0.5, 2, x.size)) for x, y, _ in items]
    back = gpud.dask._unpack(gpud.dask._pack(weighted))
    for (_, _, w), (_, _, bw) in zip(weighted, back):
        np.testing.assert_array_equal(bw, w)
    x32 = items[0][0].astype(np.float32)
    for mixed in ([items[0], (x32, items[0][1], None)],          # dtypes differ
                  [items[0], weighted[2]],                          # weighted and not
                  [items[0], (items[2][0], items[2][1][:-1], None)],  # lengths differ
                  [(items[0][0].reshape(1, 3), items[0][1].reshape(1, 3), None)]):
        assert isinstance(gpud.dask._pack(mixed), list)


def test_lombscargle_mixed_dtypes(registered, observer, rng):
    """Series of float32 and float64 in one batch: each row as that series alone gives it."""
    items = series(rng, [40, 75, 12, 60], lambda k: False)
    items = [(x.astype(np.float32), y) if b % 2 else (x, y) for b, (x, y) in enumerate(items)]
    freqs = rng.uniform(0.05, 8, 33)
    got = gpud.dask.lombscargle(registered, items, freqs, batch_size=4)
    for b, (x, y) in enumerate(items):
        np.testing.assert_allclose(got[b], ONE(x, y, freqs, client=observer), rtol=1e-10,
                                   atol=1e-12, err_msg="series %d" % b)
