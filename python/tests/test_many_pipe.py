"""gpud.signal.lombscargle_many's pipelined path (gpud._many_pipe): batches cut
into many small chunks (module settings forced small) equal the unchunked run
through Client.run and each series' own gpud.signal.lombscargle_for(None), on
fresh random ragged series; a chunk refused for memory is halved; an error in a
later chunk names the series by its index in the batch; and nothing stays
behind: no buffers in gpud, the host regions freed."""
import gc
import threading
import warnings

import numpy as np
import pytest

import gpud
import gpud._many as many
import gpud._many_pipe as pipe
from gpud.signal import lombscargle_for, lombscargle_many

lombscargle = lombscargle_for(None)
TOL = {np.float64: 1e-9, np.float32: 1e-4}


def ragged(rng, nb, minn, maxn, weights=False):
    lens = rng.integers(minn, maxn + 1, nb)
    xs = [np.cumsum(rng.uniform(0.01, 0.5, n)) + rng.uniform(0, 5) for n in lens]
    ys = [rng.uniform(-3, 3, n) for n in lens]
    ws = [rng.uniform(0.05, 2, n) for n in lens] if weights else None
    return xs, ys, ws


def regions(client):
    """Host regions of the tenant's sessions: (count, bytes)."""
    s = client.status()["sessions"]
    return sum(x["regions"] for x in s), sum(x["region_bytes"] for x in s)


@pytest.fixture(autouse=True)
def settled(client):
    """Host memory that other tests left to the garbage collector (arrays held by
    reference cycles, as an exception's traceback makes) goes before a test counts
    regions; freed in the middle of the test, it would read as this test's."""
    gc.collect()
    client.status()  # the client's next call gives back what the collection freed


class Calls:
    """Stands in for gpud._many_pipe._call: counts each chunk's series (from its
    offsets), optionally refuses some, and records the host regions in use."""

    def __init__(self, client, refuse=None):
        self.real, self.client, self.refuse = pipe._call, client, refuse
        self.sizes, self.lock = [], threading.Lock()
        self.regions_seen = []

    def __call__(self, c, argv, nargs, dst, room):
        k = next(argv[i].v.array.contents.shape[0] - 1 for i in range(nargs)
                 if argv[i].name == b"offsets")
        with self.lock:
            self.sizes.append(k)
            if len(self.sizes) == 1:
                self.regions_seen.append(regions(self.client))
        if self.refuse is not None:
            self.refuse(k)
        return self.real(c, argv, nargs, dst, room)


@pytest.fixture
def small_chunks(monkeypatch):
    """The pipeline for any batch, in chunks of about `bytes`, three in flight."""
    def setup(nbytes, depth=3):
        monkeypatch.setattr(pipe, "PIPE_MIN_BYTES", 0)
        monkeypatch.setattr(pipe, "PIPE_CHUNK_BYTES", nbytes)
        monkeypatch.setattr(pipe, "PIPE_DEPTH", depth)
    return setup


def unchunked(client, monkeypatch, *a, **kw):
    """The batch as one Client.run (the path before the pipeline)."""
    with monkeypatch.context() as m:
        m.setattr(pipe, "PIPE_MIN_BYTES", 1 << 62)
        return lombscargle_many(*a, max_bytes=1 << 40, client=client, **kw)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("chunk", ["tiny", "sixth"])  # one series a chunk; several
@pytest.mark.parametrize("form", ["grid", "freqs-weights", "amplitude"])
def test_pipelined_equals_unchunked_and_single_runs(client, rng, monkeypatch, small_chunks,
                                                    dtype, chunk, form):
    nb = 23
    xs, ys, ws = ragged(rng, nb, 1, 90, weights=form == "freqs-weights")
    kw = dict(dtype=dtype, precenter=bool(rng.integers(2)),
              floating_mean=bool(rng.integers(2)))
    if form == "grid":
        a = ()
        kw.update(f0=float(rng.uniform(0.1, 0.5)), df=float(rng.uniform(0.01, 0.05)), nf=29)
    else:
        a = (rng.uniform(0.1, 10, 29),)
    if form == "amplitude":
        kw["normalize"] = "amplitude"
    elif form == "freqs-weights":
        kw["normalize"] = True
    want = unchunked(client, monkeypatch, xs, ys, *a, weights=ws, **kw)
    odt = want.dtype.itemsize
    total = sum(len(x) for x in xs) * np.dtype(dtype).itemsize * (3 if ws else 2) + nb * 29 * odt
    small_chunks(1 if chunk == "tiny" else total // 6)
    calls = Calls(client)
    monkeypatch.setattr(pipe, "_call", calls)
    monkeypatch.setattr(client, "run", None)  # the pipeline never falls back here
    got = lombscargle_many(xs, ys, *a, weights=ws, client=client, **kw)
    assert sum(calls.sizes) == nb and len(calls.sizes) >= (nb if chunk == "tiny" else 4)
    assert got.dtype == want.dtype and got.shape == (nb, 29)
    assert np.array_equal(got, want, equal_nan=True)
    monkeypatch.undo()
    with warnings.catch_warnings():  # today's scipy rules: precenter is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        single = np.stack([lombscargle(x, y, *a, weights=None if ws is None else ws[b],
                                       client=client, **kw)
                           for b, (x, y) in enumerate(zip(xs, ys))])
    for part in ((lambda v: v.real), (lambda v: v.imag)):
        g, r = part(got), part(single)
        ok = ~np.isnan(r)
        assert np.array_equal(np.isnan(g), np.isnan(r))
        scale = np.max(np.abs(r[ok]), axis=None, initial=0) or 1.0
        assert np.max(np.abs(g[ok] - r[ok]), initial=0) <= TOL[dtype] * scale


def test_default_settings_pipeline_a_large_batch(client, rng, monkeypatch):
    # 40 series x 4000 frequencies of float64: 1.3 MB of output, over PIPE_MIN_BYTES
    xs, ys, _ = ragged(rng, 40, 20, 60)
    freqs = rng.uniform(0.1, 10, 4000)
    assert 40 * 4000 * 8 > pipe.PIPE_MIN_BYTES
    want = unchunked(client, monkeypatch, xs, ys, freqs)
    calls = Calls(client)
    monkeypatch.setattr(pipe, "_call", calls)
    got = lombscargle_many(xs, ys, freqs, client=client)
    assert calls.sizes == [40]
    assert np.array_equal(got, want)


def test_pipelined_halved_on_out_of_memory(client, rng, monkeypatch, small_chunks):
    xs, ys, _ = ragged(rng, 26, 2, 60)
    freqs = rng.uniform(0.1, 10, 12)
    want = unchunked(client, monkeypatch, xs, ys, freqs)
    small_chunks(4000)

    def tight(k):  # a device that takes at most 3 series a run
        if k > 3:
            raise gpud.OutOfMemory("out of device memory")

    calls = Calls(client, tight)
    monkeypatch.setattr(pipe, "_call", calls)
    got = lombscargle_many(xs, ys, freqs, client=client)
    assert np.array_equal(got, want)
    assert max(calls.sizes) > 3 and sum(k for k in calls.sizes if k <= 3) == 26

    def never(k):
        raise gpud.QuotaExceeded("over the tenant's quota")

    monkeypatch.setattr(pipe, "_call", Calls(client, never))
    with pytest.raises(gpud.QuotaExceeded, match="over the tenant's quota"):
        lombscargle_many(xs, ys, freqs, client=client)


@pytest.mark.parametrize("depth", [1, 3])
def test_error_in_a_later_chunk_names_the_series(client, rng, monkeypatch, small_chunks, depth):
    xs, ys, ws = ragged(rng, 40, 5, 40, weights=True)
    bad = int(rng.integers(25, 40))
    ws[bad][len(ws[bad]) // 2] = -1.0
    freqs = rng.uniform(0.1, 10, 8)
    small_chunks(1, depth)  # a series a chunk
    calls = Calls(client)
    monkeypatch.setattr(pipe, "_call", calls)
    before = regions(client)
    with pytest.raises(gpud.InvalidArgument,
                       match="series %d has a negative or NaN weight" % bad):
        lombscargle_many(xs, ys, freqs, weights=ws, client=client)
    # one chunk after another: none after the failing one (several in flight:
    # none starts once the failure is seen, which a test cannot time)
    if depth == 1:
        assert len(calls.sizes) == bad + 1
    assert regions(client) == before
    assert client.buffers() == []
    ws[bad][:] = 0
    small_chunks(1500, depth)
    with pytest.raises(gpud.InvalidArgument, match="series %d has weights that sum to 0" % bad):
        lombscargle_many(xs, ys, freqs, weights=ws, client=client)
    assert regions(client) == before


def test_nothing_left_behind(client, rng, monkeypatch, small_chunks):
    xs, ys, _ = ragged(rng, 30, 10, 80)
    freqs = rng.uniform(0.1, 10, 40)
    small_chunks(5000)
    before = regions(client)
    calls = Calls(client)
    monkeypatch.setattr(pipe, "_call", calls)
    got = lombscargle_many(xs, ys, freqs, dtype="float32", client=client)
    assert got.shape == (30, 40) and len(calls.sizes) > 3
    # while it ran it held regions of its own; afterwards none
    assert calls.regions_seen[0][0] > before[0] and calls.regions_seen[0][1] > before[1]
    assert regions(client) == before
    assert client.buffers() == []
    assert all(s["buffers"] == 0 for s in client.status()["sessions"])


@pytest.mark.parametrize("why", ["small", "no shared memory", "no host region"])
def test_client_run_where_the_pipeline_does_not_apply(client, rng, monkeypatch, why):
    xs, ys, _ = ragged(rng, 5, 3, 30)
    freqs = rng.uniform(0.1, 10, 7)
    want = unchunked(client, monkeypatch, xs, ys, freqs)
    if why == "no shared memory":  # as over tcp://
        monkeypatch.setattr(pipe, "PIPE_MIN_BYTES", 0)
        monkeypatch.setattr(type(client), "has_shm", property(lambda self: False))
    elif why == "no host region":  # gpud refuses the region
        monkeypatch.setattr(pipe, "PIPE_MIN_BYTES", 0)

        def refuse(*a, **kw):
            raise gpud.OutOfMemory("host memory limit reached")

        monkeypatch.setattr(client, "empty", refuse)
    runs = []
    real = client.run

    def counting(kernel, **a):
        runs.append(kernel)
        return real(kernel, **a)

    monkeypatch.setattr(client, "run", counting)
    monkeypatch.setattr(pipe, "_call", None)  # never reached
    got = lombscargle_many(xs, ys, freqs, client=client)
    assert runs == ["lombscargle_many"]
    assert np.array_equal(got, want)
    assert many.MAX_CALL_BYTES == 1 << 30
