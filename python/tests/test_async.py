"""Asynchronous runs: Client.submit (concurrent.futures), Client.arun (asyncio), and
gpud.connect(wait=).

Values are compared with numpy on fresh random inputs (seed printed). Jobs that
must still be in gpud when they are cancelled or their client closes wait behind
a long run on a gpud of one run slot: the test waits until gpud's status shows
them placed (an event), never for a time.
"""
import asyncio
import concurrent.futures
import threading
import time

import numpy as np
import pytest

import gpud
import gpud._async
import gpud._client

ONE_SLOT = "[gpud]\ncpu_threads = 2\nrun_slots = 1\n"


def wait_until(pred, what, timeout=120.0):
    """Polls pred (a gpud status, say) until it holds; the timeout is a safety net."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError("never happened: " + what)


def runs_placed(c):
    return c.status()["devices"][0]["runs"]


def long_args(c):
    """Buffers for a lombscargle run of 1e10 terms: minutes on the cpu backend, so it
    is still running when the test cancels it (a cancel stops it between chunks)."""
    x = np.arange(20000) * 0.01 + 0.001 * (np.arange(20000) % 7)
    f = 0.1 + np.arange(500000) * 1e-4
    return dict(x=c.upload(x), y=c.upload(x), freqs=c.upload(f))


@pytest.fixture
def one_slot(start_gpud):
    g = start_gpud(ONE_SLOT)
    with gpud.connect(g.url) as c:
        if c.backend != "cpu":
            pytest.skip("a run that outlasts the checks reliably needs the cpu backend")
    return g


def python_threads():
    """Threads Python started (not the library's threads its callbacks ran on)."""
    return sum(not isinstance(t, threading._DummyThread) for t in threading.enumerate())


def test_many_jobs_from_one_thread(client, rng):
    before = python_threads()
    xs = [rng.normal(size=int(rng.integers(1, 5000))) for _ in range(150)]
    ys = [rng.normal(size=len(x)) for x in xs]
    futs = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        if i % 3 == 0:
            futs.append(client.submit("sum", x=x))
        elif i % 3 == 1:
            futs.append(client.submit("add", x=x, y=y))
        else:
            futs.append(client.submit("axpy", x=x, y=y, a=float(i)))
    # no thread per job: the client's completion pool only
    assert python_threads() <= before + 2
    done, not_done = concurrent.futures.wait(futs, timeout=120)
    assert not not_done
    for i, (f, x, y) in enumerate(zip(futs, xs, ys)):
        assert isinstance(f, concurrent.futures.Future)
        r = f.result()
        if i % 3 == 0:
            assert r.shape == () and abs(float(r) - np.sum(x)) <= 1e-9 * np.sum(np.abs(x))
        elif i % 3 == 1:
            np.testing.assert_array_equal(r, x + y)
        else:
            np.testing.assert_allclose(r, i * x + y, rtol=1e-12, atol=1e-12)


def test_errors_fail_their_future_only(client, rng):
    x = rng.normal(size=100)
    bad = [dict(x=x, y=rng.normal(size=99)),           # gpud refuses the lengths
           dict(x=x, y=np.arange(3, dtype=np.int8)),   # refused before sending
           dict(x="text", y=x)]
    futs = []
    for i in range(120):
        if i % 10 == 5:
            futs.append((bad[(i // 10) % 3], client.submit("add", **bad[(i // 10) % 3])))
        else:
            y = rng.normal(size=100)
            futs.append((y, client.submit("add", x=x, y=y)))
    futs.append((None, client.submit("no_such_kernel", x=x)))
    for arg, f in futs[:-1]:
        if isinstance(arg, dict):
            with pytest.raises(gpud.Error) as ei:
                client.run("add", **arg)
            e = f.exception(timeout=60)
            assert type(e) is type(ei.value) and str(e) == str(ei.value)
            assert e.status == ei.value.status
        else:
            np.testing.assert_array_equal(f.result(timeout=60), x + arg)
    e = futs[-1][1].exception(timeout=60)
    assert isinstance(e, gpud.NotFound) and "no_such_kernel" in str(e)
    assert client.run("sum", x=x) == pytest.approx(np.sum(x), rel=1e-12)


def test_outputs_like_run(client, rng):
    # inputs of 3 MiB: uploaded first, the run is gpud_run_async, outputs downloaded
    big = rng.uniform(-1, 1, 3 << 18)
    f_big = client.submit("add", x=big, y=2.5)
    # outputs given as a Buffer and as a numpy array; a big one-trip output
    x = rng.normal(size=1000)
    buf = client.alloc((), "float64")
    f_buf = client.submit("sum", x=x, out=buf)
    dst = np.full(1000, np.nan)
    f_dst = client.submit("mul", x=x, y=x, out=dst)
    f_uni = client.submit("uniform", n=300000, seed=11)
    bb = client.upload(big)
    f_bb = client.submit("add", x=bb, y=bb, z=client.alloc(big.shape, "float64"))
    np.testing.assert_array_equal(f_big.result(timeout=60), big + 2.5)
    assert f_buf.result(timeout=60) is buf
    assert float(buf.get()) == pytest.approx(np.sum(x), rel=1e-12)
    assert f_dst.result(timeout=60) is dst
    np.testing.assert_array_equal(dst, x * x)
    np.testing.assert_array_equal(f_uni.result(timeout=60), client.run("uniform", n=300000,
                                                                        seed=11))
    z = f_bb.result(timeout=60)
    assert isinstance(z, gpud.Buffer)
    np.testing.assert_array_equal(z.get(), big + big)
    wrong = np.empty(3)
    e = client.submit("mul", x=x, y=x, out=wrong).exception(timeout=60)
    assert isinstance(e, gpud.InvalidArgument) and "array given for it" in str(e)


def test_shared_client_threads(client, rng):
    seeds = rng.integers(0, 1 << 30, 4)
    out = {}

    def worker(k):
        r = np.random.default_rng(seeds[k])
        xs = [r.normal(size=200) for _ in range(40)]
        fs = [client.submit("sum", x=x) for x in xs]
        out[k] = all(abs(float(f.result(timeout=60)) - np.sum(x)) <= 1e-9 * np.sum(np.abs(x))
                     for f, x in zip(fs, xs))

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == {0: True, 1: True, 2: True, 3: True}


def test_cancel_queued_and_running(one_slot, rng):
    with gpud.connect(one_slot.url) as c:
        a = long_args(c)
        cancelled0 = c.status()["cancelled"]
        first = c.submit("lombscargle", **a)
        wait_until(lambda: runs_placed(c) >= 1, "the first run placed")
        second = c.submit("lombscargle", **a)
        wait_until(lambda: runs_placed(c) >= 2, "the second run queued")
        assert not second.done() and not first.done()
        assert second.cancel() and second.cancelled()   # queued: never runs
        assert first.cancel() and first.cancelled()     # running: stopped
        with pytest.raises(concurrent.futures.CancelledError):
            first.result()
        wait_until(lambda: c.status()["cancelled"] >= cancelled0 + 2 and runs_placed(c) == 0,
                   "both runs cancelled in gpud")
        # the slot is free again and the client serves; an ended job cannot be cancelled
        x = rng.normal(size=500)
        f = c.submit("sum", x=x)
        assert float(f.result(timeout=60)) == pytest.approx(np.sum(x), rel=1e-12)
        assert not f.cancel() and not f.cancelled()
        # the jobs are freed: only the three inputs stay in gpud
        wait_until(lambda: c.status()["buffers"] == 3, "the cancelled runs' outputs freed")


def test_backlog_cancel(one_slot, monkeypatch, rng):
    # one job in gpud at a time: the others wait in the client's backlog
    monkeypatch.setattr(gpud._async, "MAX_JOBS_IN_FLIGHT", 1)
    with gpud.connect(one_slot.url) as c:
        a = long_args(c)
        first = c.submit("lombscargle", **a)
        xs = [rng.normal(size=50) for _ in range(10)]
        waiting = [c.submit("sum", x=x) for x in xs]
        wait_until(lambda: runs_placed(c) >= 1, "the first run placed")
        assert waiting[3].cancel() and waiting[3].cancelled()
        done, _ = concurrent.futures.wait([waiting[3]], timeout=0)  # done for wait() too
        assert done == {waiting[3]}
        assert first.cancel()
        for i, (f, x) in enumerate(zip(waiting, xs)):
            if i != 3:
                assert float(f.result(timeout=60)) == pytest.approx(np.sum(x), rel=1e-12)
        wait_until(lambda: runs_placed(c) == 0 and c.status()["buffers"] == 3,
                   "the jobs gone from gpud")


def test_close_with_jobs_in_flight(one_slot, rng):
    c = gpud.connect(one_slot.url)
    a = long_args(c)
    first = c.submit("lombscargle", **a)
    wait_until(lambda: runs_placed(c) >= 1, "the first run placed")
    queued = [c.submit("sum", x=rng.normal(size=100)) for _ in range(20)]
    url = c.url
    c.close()
    for f in [first] + queued:
        e = f.exception(timeout=60)
        assert isinstance(e, gpud.ClientClosed) and url in str(e), e
    e = c.submit("sum", x=np.ones(3)).exception(timeout=60)
    assert isinstance(e, gpud.ClientClosed)
    with gpud.connect(one_slot.url) as d:  # gpud dropped the connection's work
        wait_until(lambda: runs_placed(d) == 0 and d.status()["buffers"] == 0,
                   "the closed client's run and buffers gone")


def test_close_with_jobs_and_host_memory(one_slot, rng):
    c = gpud.connect(one_slot.url)
    h = c.empty(1000)
    h[:] = rng.normal(size=1000)
    keep = h.copy()
    a = long_args(c)
    first = c.submit("lombscargle", **a)
    wait_until(lambda: runs_placed(c) >= 1, "the first run placed")
    second = c.submit("sum", x=h)
    c.close()  # the connection stays for h: the jobs are cancelled on it
    for f in (first, second):
        assert isinstance(f.exception(timeout=60), gpud.ClientClosed)
    np.testing.assert_array_equal(h, keep)
    with gpud.connect(one_slot.url) as d:
        wait_until(lambda: runs_placed(d) == 0, "the closed client's run gone")
    del h


def test_asyncio_gather(client, rng):
    xs = [rng.normal(size=int(rng.integers(1, 3000))) for _ in range(120)]
    big = rng.uniform(-1, 1, 3 << 18)

    async def main():
        rs = await asyncio.gather(*[client.arun("sum", x=x) for x in xs])
        errs = await asyncio.gather(client.arun("add", x=xs[0], y=np.ones(len(xs[0]) + 1)),
                                    client.arun("add", x=big, y=-1.0),
                                    return_exceptions=True)
        return rs, errs

    rs, errs = asyncio.run(main())
    for r, x in zip(rs, xs):
        assert abs(float(r) - np.sum(x)) <= 1e-9 * np.sum(np.abs(x))
    assert isinstance(errs[0], gpud.InvalidArgument)
    np.testing.assert_array_equal(errs[1], big - 1.0)


def test_asyncio_first_call_and_big_inputs(url, rng):
    # A fresh client knows no kernel yet and big inputs need uploads: both are round
    # trips, made by the client's pool, never on the event loop's thread.
    big = rng.uniform(-1, 1, 3 << 18)
    with gpud.connect(url) as c:
        threads = []
        for name in ("_kernel_table", "_alloc_raw"):
            real = getattr(c, name)

            def spy(*a, _real=real, _name=name, **k):
                threads.append((_name, threading.get_ident()))
                return _real(*a, **k)

            setattr(c, name, spy)

        async def main():
            return threading.get_ident(), await c.arun("add", x=big, y=big)

        loop_thread, r = asyncio.run(main())
        np.testing.assert_array_equal(r, big + big)
        assert {n for n, _ in threads} == {"_kernel_table", "_alloc_raw"}
        assert all(t != loop_thread for _, t in threads), threads


def test_asyncio_task_cancel(one_slot, rng):
    with gpud.connect(one_slot.url) as c:
        a = long_args(c)
        cancelled0 = c.status()["cancelled"]

        async def main():
            loop = asyncio.get_running_loop()
            t = asyncio.ensure_future(c.arun("lombscargle", **a))
            await loop.run_in_executor(None, wait_until, lambda: runs_placed(c) >= 1,
                                       "the run placed")
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            x = rng.normal(size=300)
            return x, await c.arun("sum", x=x)

        x, s = asyncio.run(main())
        assert float(s) == pytest.approx(np.sum(x), rel=1e-12)
        wait_until(lambda: c.status()["cancelled"] >= cancelled0 + 1 and runs_placed(c) == 0,
                   "the task's run cancelled in gpud")


def test_asyncio_close_in_flight(one_slot):
    c = gpud.connect(one_slot.url)
    a = long_args(c)

    async def main():
        loop = asyncio.get_running_loop()
        t = asyncio.ensure_future(c.arun("lombscargle", **a))
        await loop.run_in_executor(None, wait_until, lambda: runs_placed(c) >= 1,
                                   "the run placed")
        await loop.run_in_executor(None, c.close)
        with pytest.raises(gpud.ClientClosed):
            await t

    asyncio.run(main())


def test_jobs_across_a_restart(start_gpud, rng):
    g = start_gpud()
    with gpud.connect(g.url) as c:
        a = rng.normal(size=1000)
        old = c.upload(a)
        assert float(c.submit("sum", x=old).result(timeout=60)) == pytest.approx(a.sum())
        g.restart()
        # a job reconnects as run() does; a Buffer from before is stale in its job only
        stale = c.submit("sum", x=old)
        futs = [c.submit("sum", x=a * i) for i in range(40)]
        e = stale.exception(timeout=60)
        assert isinstance(e, gpud.StaleHandle) and "restarted" in str(e)
        for i, f in enumerate(futs):
            assert float(f.result(timeout=60)) == pytest.approx(np.sum(a * i), abs=1e-9 * i
                                                                * np.sum(np.abs(a)))
        assert c.reconnects == 1


def test_submit_while_gpud_is_down(start_gpud, rng):
    g = start_gpud()
    with gpud.connect(g.url, connect_timeout=1) as c:
        x = rng.normal(size=100)
        assert float(c.submit("sum", x=x).result(timeout=60)) == pytest.approx(np.sum(x))
        g.proc.terminate()
        assert g.proc.wait() == 0
        with pytest.raises(gpud.Unavailable) as ei:
            c.run("sum", x=x)
        e = c.submit("sum", x=x).exception(timeout=60)  # the send itself fails
        assert type(e) is type(ei.value) and e.status == ei.value.status and str(e), e
        g._start()
        assert float(c.submit("sum", x=x).result(timeout=60)) == pytest.approx(np.sum(x))


# --- connect(wait=) ------------------------------------------------------------------


def counting_tries(monkeypatch, failed=None):
    """Counts connect(wait=)'s tries; sets `failed` after a try that failed."""
    tries = []
    real = gpud._client._try_connect

    def tried(opts, c):
        st = real(opts, c)
        tries.append(st)
        if st != 0 and failed is not None:
            failed.set()
        return st

    monkeypatch.setattr(gpud._client, "_try_connect", tried)
    return tries


def test_connect_wait_gives_up(monkeypatch):
    tries = counting_tries(monkeypatch)
    url = "ipc:///tmp/gpud-nobody-here/gpud.sock"
    t0 = time.monotonic()
    with pytest.raises(gpud.Unavailable) as ei:
        gpud.connect(url, wait=0.3, connect_timeout=2)
    assert time.monotonic() - t0 >= 0.3
    msg = str(ei.value)
    assert url in msg and msg.endswith("(gave up waiting after 0.3 s)"), msg
    assert len(tries) >= 2 and all(st != 0 for st in tries)
    # without wait: one try, the same error without the suffix
    del tries[:]
    with pytest.raises(gpud.Unavailable) as ei:
        gpud.connect(url, connect_timeout=2)
    assert len(tries) == 1 and url in str(ei.value) and "gave up" not in str(ei.value)
    for bad in (-1, "5", True):
        with pytest.raises(gpud.ArgumentTypeError, match="wait"):
            gpud.connect(url, wait=bad)


def test_connect_waits_for_gpud(start_gpud, monkeypatch, rng):
    g = start_gpud()
    g.proc.terminate()
    assert g.proc.wait() == 0  # gpud is gone; the client starts waiting for it
    failed = threading.Event()
    tries = counting_tries(monkeypatch, failed)
    started = {}

    def starter():  # starts gpud once the client has failed to reach it
        failed.wait()
        g._start()
        started["ok"] = True

    t = threading.Thread(target=starter)
    t.start()
    try:
        with gpud.Client(g.url, wait=120) as c:
            x = rng.normal(size=100)
            assert c.run("sum", x=x) == pytest.approx(np.sum(x), rel=1e-12)
    finally:
        failed.set()
        t.join()
    assert started.get("ok") and tries[0] != 0 and tries[-1] == 0
