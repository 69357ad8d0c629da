"""Every kind of bad input raises the right gpud.Error subclass, names what was wrong,
and leaves the client (and gpud) serving: after each error the same client runs a sum.
"""
import grp
import os
import pwd
import subprocess
import sys

import numpy as np
import pytest

import gpud


def still_serves(client):
    assert client.run("sum", x=np.arange(10.0)) == 45.0


def check(exc_info, cls, *words):
    e = exc_info.value
    assert isinstance(e, cls) and isinstance(e, gpud.Error)
    assert isinstance(e.status, gpud.Status)
    assert str(e) == e.message  # KeyError's quotes are not added
    for w in words:
        assert w in e.message, (w, e.message)


def test_unreachable():
    with pytest.raises(gpud.Unavailable) as ei:
        gpud.connect("ipc:///tmp/gpud-nobody-here/gpud.sock", connect_timeout=2)
    check(ei, ConnectionError, "ipc:///tmp/gpud-nobody-here/gpud.sock")
    with pytest.raises(gpud.ArgumentTypeError):
        gpud.connect(url=42)
    with pytest.raises(gpud.ArgumentTypeError, match="timeout"):
        gpud.connect("ipc:///tmp/x", timeout=-1)


def test_argument_errors(client):
    x = np.arange(10.0)
    cases = [
        (dict(x=x, y=x[:5], freqs=x + 1), ValueError, ["same length", "10", "5"]),
        (dict(x=x.astype(np.float16), y=x, freqs=x), TypeError, ["argument 'x'", "float16"]),
        (dict(x=np.array([1, "a"], dtype=object), y=x, freqs=x), TypeError,
         ["argument 'x'", "object"]),
        (dict(x=x.astype(complex), y=x, freqs=x), TypeError, ["complex128"]),
        (dict(x=None, y=x, freqs=x), TypeError, ["argument 'x'", "required"]),
        (dict(x={"a": 1}, y=x, freqs=x), TypeError, ["argument 'x'"]),
        (dict(x=x, y=x, freqs=x, normalize=1 << 70), TypeError, ["int64"]),
        (dict(x=x, y=x, freqs=x, normalize=np.ones(3)), TypeError, ["scalar"]),
        (dict(x=x, y=x, freqs=x, bogus=1), ValueError, ["bogus"]),
    ]
    for args, base, words in cases:
        with pytest.raises(gpud.Error) as ei:
            client.run("lombscargle", **args)
        check(ei, base, *words)
        still_serves(client)
    with pytest.raises(gpud.ArgumentTypeError):
        client.run(42, x=x)


def test_unknown_kernel_and_handle(client):
    with pytest.raises(gpud.NotFound) as ei:
        client.run("no_such_kernel", x=np.ones(3))
    check(ei, KeyError, "no_such_kernel")
    fake = gpud.Buffer(client, 0x1234, np.dtype("float64"), (3,))
    with pytest.raises(gpud.NotFound) as ei:
        fake.get()
    check(ei, KeyError, "1234")
    with pytest.raises(gpud.NotFound):
        client.run("sum", x=fake)
    still_serves(client)


def test_shapes_and_sizes(client):
    for bad in ((2 ** 40, 2 ** 40), (1,) * 9, -1, "abc"):
        with pytest.raises(gpud.Error):
            client.alloc(bad)
        with pytest.raises(gpud.Error):
            client.empty(bad)
        still_serves(client)
    with pytest.raises(gpud.Error):
        client.upload(np.zeros((1,) * 9))
    # 0-d and empty arrays are arrays like any other
    assert client.run("sum", x=np.array(3.0)) == 3.0
    assert client.run("sum", x=np.zeros(0)) == 0.0
    with pytest.raises(gpud.InvalidArgument, match="empty"):
        client.run("min", x=np.zeros(0))
    b = client.upload(np.array(2.5))
    assert b.shape == () and b.get() == 2.5


def test_shape_limits(client):
    # a dimension of 2**62 is refused, and the message says the bound the check has
    for f in (client.alloc, client.empty):
        with pytest.raises(gpud.InvalidArgument) as ei:
            f((3, 2 ** 62))
        check(ei, ValueError, "shape (3, 4611686018427387904): dimension 1 is "
              "4611686018427387904; gpud takes 0 to 2**62 - 1 elements per dimension")
        with pytest.raises(gpud.InvalidArgument) as ei:
            f((1,) * 9)
        check(ei, ValueError, "has 9 dimensions; gpud takes at most 8")
    # 2**62 - 1 passes that check; its bytes overflow, and that is what is said
    with pytest.raises(gpud.InvalidArgument) as ei:
        client.alloc((2 ** 62 - 1,))
    check(ei, ValueError, "overflows size_t")
    with pytest.raises(gpud.InvalidArgument) as ei:
        client.empty((2 ** 40, 2 ** 40))
    check(ei, ValueError, "shape (1099511627776, 1099511627776) of float64 is "
          "9671406556917033397649408 bytes, more than a size_t holds")
    still_serves(client)


def test_closed_client_and_freed_buffer(url):
    c = gpud.connect(url)
    b = c.upload(np.arange(4.0))
    kept_for_later = c.upload(np.arange(3.0))
    b.free()
    b.free()  # a second free does nothing
    with pytest.raises(gpud.BufferFreed) as ei:
        b.get()
    check(ei, ValueError, "freed")
    with pytest.raises(gpud.BufferFreed):
        c.run("sum", x=b)
    c.close()
    c.close()  # a second close does nothing
    for call in (lambda: c.run("sum", x=np.ones(2)), lambda: c.upload(np.ones(2)),
                 lambda: kept_for_later.get(), lambda: c.kernels, lambda: c.status(),
                 lambda: c.k.sum(np.ones(2))):
        with pytest.raises(gpud.ClientClosed) as ei:
            call()
        check(ei, ValueError, "closed")
    with kept_for_later:  # leaving a with block of a closed client's buffer is quiet
        pass


def test_quota(start_gpud):
    g = start_gpud(config="[quota]\ndevice_bytes = 1MiB\n")
    with gpud.connect(g.url) as c:
        with pytest.raises(gpud.QuotaExceeded) as ei:
            c.upload(np.zeros(2 << 17))  # 2 MiB
        check(ei, MemoryError, "device_bytes")
        small = c.upload(np.arange(100.0))
        assert small.get().sum() == 4950.0
        still_serves(c)


def test_uploads_fit_the_message_size_quota(start_gpud):
    # hello says the tenant's quota; the library sends 4x as much in pieces
    g = start_gpud(config="[quota]\nmessage_size = 64KiB\n")
    with gpud.connect(g.url) as c:
        assert c.server.max_message_size == 65536
        x = np.arange(4 * 8192, dtype=np.float64) * 0.5 - 7.0  # 256 KiB
        b = c.upload(x)
        assert np.array_equal(b.get(), x)
        still_serves(c)


# uid 65534 (nobody) without groups: connects to a socket of mode 0660 and a group it is not in
OUTSIDER = r"""
import os, sys
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
import gpud
try:
    gpud.connect(sys.argv[1], connect_timeout=60)
except PermissionError as e:
    print(type(e).__name__, isinstance(e, gpud.Error), int(e.status))
    print(e)
else:
    print("connected")
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_outside_the_sockets_group(start_gpud):
    group = grp.getgrgid(0).gr_name
    for name in ("daemon",):  # a group uid 65534 is not in, where there is one
        try:
            group = grp.getgrnam(name).gr_name
        except KeyError:
            pass
    g = start_gpud(config="[gpud]\nsocket_mode = 0660\nsocket_group = %s\n" % group)
    os.chmod(g.dir, 0o755)  # the socket's own mode and group decide, not its directory
    here = os.path.dirname(os.path.dirname(os.path.abspath(gpud.__file__)))
    env = dict(os.environ, PYTHONPATH=here, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", OUTSIDER, g.url], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    kind, msg = r.stdout.splitlines()[:2]
    assert kind == "PermissionDenied True %d" % gpud.Status.EPERM, r.stdout
    sock = g.url[len("ipc://"):]
    want = ("permission denied on %s (mode 0660 owner %s group %s): ask to be added to group %s"
            % (sock, pwd.getpwuid(os.geteuid()).pw_name, group, group))
    assert msg.startswith(want), (msg, want)
    assert "is gpud running" not in msg


def test_timeout_is_an_error_not_a_hang(url):
    with gpud.connect(url, timeout=30) as c:
        still_serves(c)
        c.set_timeout(None)
        still_serves(c)
