"""A Client across a gpud restart, and a call that outlives its timeout.

After a restart the next call says hello again by itself (libgpud-client);
a Buffer from before gets gpud.StaleHandle (a KeyError), never another
buffer. A call past the client's timeout raises gpud.Timeout (a TimeoutError)
and is cancelled in gpud; the client goes on. The long run takes some 60
times the timeout on CI's two cores (and longer than it on any machine gpud's
cpu backend runs on), so the outcome does not hang on the machine's speed.
"""
import numpy as np
import pytest

import gpud


def test_restart(start_gpud, rng):
    g = start_gpud()
    with gpud.connect(g.url) as c:
        a = rng.normal(size=1000)
        old = c.upload(a)
        assert c.run("sum", x=old) == pytest.approx(a.sum())
        instance = c.server.instance
        g.restart()
        with pytest.raises(gpud.StaleHandle) as ei:
            old.get()
        assert isinstance(ei.value, KeyError) and "restarted" in str(ei.value)
        assert c.run("sum", x=a) == pytest.approx(a.sum())  # a new session, by itself
        assert c.reconnects == 1
        fresh = c.upload(a)
        np.testing.assert_array_equal(fresh.get(), a)
        assert instance != 0


def test_timeout(start_gpud, rng):
    g = start_gpud()
    # 3e8 terms: seconds on two cores, 60 times the timeout; cancelled between chunks
    # of a thirty-second of it, so gpud is free again soon after.
    x = np.sort(rng.uniform(0, 100, 3000))
    y = rng.normal(size=3000)
    f = np.linspace(0.1, 10, 100000)
    with gpud.connect(g.url, timeout=0.05) as c:
        if c.backend != "cpu":
            pytest.skip("a run long enough to time out reliably needs the cpu backend")
        with pytest.raises(gpud.Timeout) as ei:
            c.run("lombscargle", x=x, y=y, freqs=f)
        assert isinstance(ei.value, TimeoutError) and "cancelled" in str(ei.value)
        c.set_timeout(None)
        assert c.run("sum", x=np.arange(4.0)) == 6.0  # the client goes on


def test_endpoint_list_fails_over(start_gpud, rng):
    """GPUD_URL-style lists: the first gpud that answers; when it goes, the next."""
    first, second = start_gpud(), start_gpud()
    dead = "ipc://%s/nobody.sock" % first.dir
    # the lost gpud is waited for 0.3 s (it has exited: nothing comes), then the next
    with gpud.connect(",".join([dead, first.url, second.url]), connect_timeout=0.3) as c:
        assert c.url == first.url
        a = rng.normal(size=500)
        old = c.upload(a)
        first.proc.terminate()
        assert first.proc.wait() == 0
        assert c.run("sum", x=a) == pytest.approx(a.sum())  # served by the second
        assert c.url == second.url and c.reconnects == 1
        with pytest.raises(gpud.StaleHandle):
            old.get()
    with pytest.raises(gpud.Unavailable) as ei:
        gpud.connect(",".join([dead, dead]))
    assert "none of the 2 gpud endpoints answered" in str(ei.value)
