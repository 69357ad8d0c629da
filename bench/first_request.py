"""bench/first_request.py — what a fresh connection's first round trip costs, and how much of
it is the idle time before it: a connection made with gpud_connect_deferred, its first
status (which carries its hello), then a second status on the same connection; with a
pause of 0, 1 and 5 ms between the dial and the first status, and 2 ms between
connections. Over ipc:// and tcp://, the request ring off (every call a message on the
socket). gpud's own time for the statuses (arrival to reply) is read from its /metrics
(gpud_request_duration_seconds{verb="status"}: sum and count before and after each set of
connections), at log level info.

Printed per transport and pause: the medians of the dial, the first status and the second
status, in microseconds, and gpud's mean time for a status of that set (the first and the
second together). A round trip that follows idle time wakes every thread it crosses (the
caller, nng's on both sides, gpud's loop): the pauses show what that costs on the machine.

  python3 bench/first_request.py GPUD LIBGPUD_CLIENT_SO [--backend cpu|cuda] [--conns N]

GPUD is started on a socket and a loopback port of its own (default backend cuda); the
Python package is the one at python/ beside this bench/.
"""
import ctypes
import os
import re
import socket
import statistics
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpud_proc  # noqa: E402  (starting gpud, the package)

PAUSES_MS = (0, 1, 5)
STATUS = re.compile(r'^gpud_request_duration_seconds_(sum|count)\{verb="status"\} (\S+)$', re.M)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(gpud, d, backend):
    """gpud on ipc:// and a loopback tcp:// port, its /metrics on another."""
    tcp = "tcp://127.0.0.1:%d" % free_port()
    metrics = "127.0.0.1:%d" % free_port()
    conf = os.path.join(d, "gpud.conf")
    with open(conf, "w") as f:
        f.write("[gpud]\nmetrics_listen = %s\n" % metrics)
    proc, ipc = gpud_proc.start(gpud, d, backend, "first_request",
                                ("--config", conf, "--listen", tcp))
    return proc, ipc, tcp, "http://%s/metrics" % metrics


def status_time(metrics):
    """gpud's (sum of seconds, count) of status requests so far."""
    page = urllib.request.urlopen(metrics, timeout=10).read().decode()
    got = dict(STATUS.findall(page))
    return float(got.get("sum", 0)), float(got.get("count", 0))


def rounds(lib, Options, DaemonStatus, url, pause_ms, conns):
    """conns fresh connections: each's dial, first and second status (seconds)."""
    st = DaemonStatus()
    rows = []
    for _ in range(conns):
        o = Options(url=url.encode())
        c = ctypes.c_void_p()
        t0 = time.perf_counter()
        rv = lib.gpud_connect_deferred(ctypes.byref(o), ctypes.byref(c))
        t1 = time.perf_counter()
        if rv != 0:
            raise SystemExit("first_request: connect %s: %d" % (url, rv))
        if pause_ms:
            time.sleep(pause_ms / 1e3)
        t2 = time.perf_counter()
        rv1 = lib.gpud_status_get(c, ctypes.byref(st))
        t3 = time.perf_counter()
        rv2 = lib.gpud_status_get(c, ctypes.byref(st))
        t4 = time.perf_counter()
        if rv1 or rv2:
            raise SystemExit("first_request: status at %s: %d %d" % (url, rv1, rv2))
        lib.gpud_close(c)
        rows.append((t1 - t0, t3 - t2, t4 - t3))
        time.sleep(0.002)
    return rows


def main():
    a = gpud_proc.arguments(__doc__, "cuda", "conns", 40)
    _lib = gpud_proc.package(a.lib, no_ring=True)
    DaemonStatus, Options, lib = _lib.DaemonStatus, _lib.Options, _lib.lib
    lib.gpud_connect_deferred.argtypes = [ctypes.POINTER(Options),
                                          ctypes.POINTER(ctypes.c_void_p)]
    lib.gpud_connect_deferred.restype = ctypes.c_int
    runs = []
    with tempfile.TemporaryDirectory() as d:
        proc, ipc, tcp, metrics = start(a.gpud, d, a.backend)
        try:
            for name, url in (("ipc", ipc), ("tcp", tcp)):
                for p in PAUSES_MS:
                    s0, n0 = status_time(metrics)
                    rows = rounds(lib, Options, DaemonStatus, url, p, a.conns)
                    s1, n1 = status_time(metrics)
                    runs.append((name, p, rows, (s1 - s0) / max(n1 - n0, 1)))
        finally:
            proc.terminate()
            proc.wait()
    print("a fresh connection's first status (its hello carried) and a second one; gpud "
          "backend %s; medians of %d connections, us" % (a.backend, a.conns))
    print("%-4s %6s %8s %8s %8s %16s" % ("", "pause", "dial", "first", "second",
                                        "gpud a status"))
    for name, p, rows, mean in runs:
        med = [statistics.median(r[i] for r in rows) * 1e6 for i in range(3)]
        print("%-4s %4d ms %8.0f %8.0f %8.0f %16.1f" % (name, p, *med, mean * 1e6))


if __name__ == "__main__":
    main()
