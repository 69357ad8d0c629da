"""What a Client leaves in gpud: buffers freed by free(), with, the GC and close();
kept buffers outliving their client; host memory outliving close().
"""
import gc
import time

import numpy as np

import gpud


def session(client):
    me = client.server.connection
    for s in client.status()["sessions"]:
        if s["id"] == me:
            return s
    return None


def wait_until(cond, what, safety_s=60):
    """Waits for something gpud reports (its status), not for a time: the
    deadline is a safety net far above what a loaded 2-core machine needs."""
    deadline = time.monotonic() + safety_s
    while not cond():
        assert time.monotonic() < deadline, "gpud never reported: " + what
        time.sleep(0.005)


def test_with_block_and_gc(client, rng):
    base = session(client)["buffers"]
    with client.upload(rng.normal(size=100)) as b:
        assert session(client)["buffers"] == base + 1
        assert b.get().shape == (100,)
    assert session(client)["buffers"] == base
    b2 = client.upload(rng.normal(size=100))
    assert session(client)["buffers"] == base + 1
    del b2
    gc.collect()
    client.sync()  # the next call frees what the GC collected
    assert session(client)["buffers"] == base


def test_close_frees_the_connections_buffers(url, rng):
    watcher = gpud.connect(url)
    c = gpud.connect(url)
    bufs = [c.upload(rng.normal(size=1000)) for _ in range(3)]
    mine = c.server.connection
    s = [x for x in watcher.status()["sessions"] if x["id"] == mine][0]
    assert s["buffers"] == 3 and s["bytes"] == 3 * 8000
    assert s["tenant"] == c.server.tenant != ""
    c.close()
    # gpud takes the closed connection's event on its loop, after close returns
    wait_until(lambda: mine not in [x["id"] for x in watcher.status()["sessions"]],
               "connection %d gone" % mine)
    assert all(b.kept is False for b in bufs)
    watcher.close()


def test_kept_buffers_outlive_their_client(url, rng):
    a = rng.normal(size=500)
    c = gpud.connect(url)
    k = c.upload(a, keep=True)
    assert k.kept
    handle = k.handle
    c.close()
    with gpud.connect(url) as d:
        listed = {b.handle: b for b in d.buffers()}
        assert handle in listed
        np.testing.assert_array_equal(listed[handle].get(), a)
        listed[handle].free()
        assert handle not in {b.handle for b in d.buffers()}


def test_host_memory_and_plain_arrays_agree(client, rng):
    a = rng.uniform(size=5000)
    if not client.has_shm:
        return
    h = client.asarray(a)
    np.testing.assert_array_equal(h, a)
    assert client.run("sum", x=h) == client.run("sum", x=a)
    before = session(client)["regions"]
    del h
    gc.collect()
    client.sync()  # given back by the next call
    assert session(client)["regions"] < before
