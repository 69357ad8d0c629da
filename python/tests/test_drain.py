"""A gpud draining after SIGTERM: a call once its grace is over raises
gpud.ShuttingDown, a ConnectionError (and a gpud.Unavailable) nothing retries,
while the run in flight completes; then gpud exits 0.

The grace is 0 and the run takes seconds on the cpu backend, so the call is made
while the run keeps gpud draining: the event waited for is gpud's log line, not a
time.
"""
import signal
import threading
import time

import numpy as np
import pytest

import gpud


def wait_log(g, line, timeout=60.0):
    """True once gpud's log has line (the timeout is a safety net)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if line in g.read_log():
            return True
        time.sleep(0.01)
    return False


def test_shutting_down(start_gpud, rng):
    g = start_gpud("[gpud]\nshutdown_timeout = 600\ndrain_grace = 0\n", ("--log-level", "info"))
    # 3e8 terms: seconds on two cores (as test_restart's timeout)
    x = np.sort(rng.uniform(0, 100, 3000))
    y = rng.normal(size=3000)
    f = np.linspace(0.1, 10, 100000)
    with gpud.connect(g.url) as c, gpud.connect(g.url) as runner:
        if c.backend != "cpu":
            pytest.skip("a run that outlasts the checks reliably needs the cpu backend")
        before = c.upload(np.arange(4.0))
        out = {}

        def long_run():
            try:
                out["pgram"] = runner.run("lombscargle", x=x, y=y, freqs=f)
            except gpud.Error as e:
                out["error"] = e

        t = threading.Thread(target=long_run)
        t.start()
        deadline = time.monotonic() + 60
        while c.status()["in_flight"] < 2 and time.monotonic() < deadline:
            pass  # the run and this status
        assert c.status()["in_flight"] >= 2, "the run never showed in flight"
        g.proc.send_signal(signal.SIGTERM)
        assert wait_log(g, "new work gets SHUTTING_DOWN"), g.read_log()
        assert t.is_alive(), "the run ended before the drain began; make it longer"

        with pytest.raises(gpud.ShuttingDown) as ei:
            c.upload(np.arange(8.0))
        e = ei.value
        assert isinstance(e, ConnectionError)
        assert isinstance(e, gpud.Unavailable) and isinstance(e, gpud.Error)
        assert e.status == gpud.Status.ESHUTDOWN
        assert "shutting down" in str(e) and "no new work" in str(e)
        with pytest.raises(gpud.ShuttingDown):
            before.get()  # a download is new work too
        before.free()  # served while draining: it only gives back
        assert t.is_alive(), "the run ended before the checks were done; make it longer"

        t.join()
        assert "error" not in out, out.get("error")
        assert out["pgram"].shape == f.shape and np.all(np.isfinite(out["pgram"]))
    assert g.proc.wait(timeout=60) == 0, g.read_log()
