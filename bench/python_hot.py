"""bench/python_hot.py — the warm call of the Python package against the same call from C,
the bare ctypes call and CuPy: client.run('add', x=x, y=y), x and y 1,000 float32 (fresh
random values), the sum back as a numpy array, one round trip over ipc:// (the request ring).

Blocks interleaved, each PER calls: for every package given, client.run and, in the same
process, the bare ctypes gpud_call prepared once (the floor of any Python layer) and, where
the package has gpud_call_into's prepared path, client.run with the GIL held during that
call (a diagnostic of what releasing and taking back the GIL costs); C's
gpud_call (bench/tiny_call URL PER add 1000); where CuPy imports, cp.asarray(x),
cp.asarray(y), (x + y).get() and, on resident arrays, x + y and a synchronize. Printed: the
median over blocks of each block's p50 and p99, in microseconds, how many of the Python
calls took the request ring, and for each package the median over blocks of client.run's p50
less the bare call's (the Python layer, with what the blocks' load adds to both cancelled).

  python3 bench/python_hot.py GPUD TINY_CALL [--backend cpu|cuda] [--blocks B] [--per PER]
                              [--package NAME=PYTHON_DIR:LIBGPUD_CLIENT_SO ...]

GPUD is started on a socket of its own (its --backend; default cuda). Without --package,
the package of this tree (python/) with build/'s library beside GPUD; several --package
compare packages (an old and a new) in the same run, each in a process of its own.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# One package's process: reads "WHAT N" (WHAT one of the names it printed after "ready"),
# prints how many of the N calls took the request ring and their times in microseconds.
WORKER = r'''
import ctypes, sys, time
import numpy as np
import gpud
from gpud import _lib
url = sys.argv[1]
rng = np.random.default_rng()
x = rng.standard_normal(1000).astype(np.float32)
y = rng.standard_normal(1000).astype(np.float32)
cl = gpud.connect(url)
np.testing.assert_array_equal(cl.run("add", x=x, y=y), x + y)
argv = (_lib.Arg * 2)()
keep = []
for i, (name, a) in enumerate((("x", x), ("y", y))):
    ga = _lib.Array(dtype=1, ndim=1, data=a.ctypes.data, nbytes=a.nbytes)
    ga.shape[0] = a.size
    keep.append(ga)
    argv[i].name, argv[i].kind = name.encode(), _lib.ARG_ARRAY
    argv[i].v.array = ctypes.pointer(ga)
res, nout = (_lib.Result * 1)(), ctypes.c_size_t()
L, c, pn, pa = _lib.lib, cl._c, ctypes.byref(nout), ctypes.byref(res[0].array)
def bare():
    L.gpud_call(c, b"add", argv, 2, res, 1, pn, None)
    L.gpud_array_free(pa)
def run():
    cl.run("add", x=x, y=y)
fns = {"run": run, "bare": bare}
from gpud import _fast
if hasattr(_fast, "_call_into"):  # a diagnostic: the prepared call with the GIL held
    released = _fast._call_into
    held = ctypes.PyDLL(_lib.path)._FuncPtr(("gpud_call_into", ctypes.PyDLL(_lib.path)))
    held.restype = ctypes.c_int
    def run_gil():
        _fast._call_into = held
        try:
            cl.run("add", x=x, y=y)
        finally:
            _fast._call_into = released
    fns["run_gil"] = run_gil
for _ in range(300):
    for fn in fns.values():
        fn()
pc = time.perf_counter
print("ready", " ".join(fns), flush=True)
for line in sys.stdin:
    what, n = line.split()
    fn = fns[what]
    r0 = L.gpud_ring_calls(c)
    ts = []
    for _ in range(int(n)):
        t0 = pc()
        fn()
        ts.append(pc() - t0)
    print(L.gpud_ring_calls(c) - r0, " ".join("%.3f" % (t * 1e6) for t in ts), flush=True)
'''


ROWS = {"run": "client.run", "bare": "bare ctypes gpud_call",
        "run_gil": "client.run, GIL held in the call"}


def pct(ts, q):
    ts = sorted(ts)
    return ts[min(len(ts) - 1, int(q * len(ts)))]


class Worker:
    def __init__(self, name, pydir, lib, url):
        env = dict(os.environ, GPUD_LIB=lib, PYTHONPATH=pydir)
        self.name = name
        self.p = subprocess.Popen([sys.executable, "-c", WORKER, url], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        w = self.p.stdout.readline().split()
        if not w or w[0] != "ready":
            raise SystemExit("%s: the worker did not start" % name)
        self.fns = w[1:]

    def block(self, what, n):
        self.p.stdin.write("%s %d\n" % (what, n))
        self.p.stdin.flush()
        w = self.p.stdout.readline().split()
        return int(w[0]), [float(t) for t in w[1:]]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def cupy_fns():
    try:
        import cupy as cp
        import numpy as np
    except ImportError:
        return {}
    rng = np.random.default_rng()
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    gx, gy = cp.asarray(x), cp.asarray(y)
    np.testing.assert_array_equal((gx + gy).get(), x + y)

    def copies():
        (cp.asarray(x) + cp.asarray(y)).get()

    def resident():
        gx + gy
        cp.cuda.runtime.deviceSynchronize()
    return {"cupy asarray x2, add, .get()": copies, "cupy resident x+y, synchronize": resident}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gpud")
    ap.add_argument("tiny_call")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--per", type=int, default=2000)
    ap.add_argument("--package", action="append", default=[])
    a = ap.parse_args()
    pkgs = []
    for p in a.package or ["this=%s:%s" % (os.path.join(HERE, os.pardir, "python"), os.path.join(
            os.path.dirname(os.path.abspath(a.gpud)), "libgpud-client.so.0"))]:
        name, _, rest = p.partition("=")
        pydir, _, lib = rest.partition(":")
        pkgs.append((name, os.path.abspath(pydir), os.path.abspath(lib)))
    d = tempfile.mkdtemp(prefix="gpud-pyhot-", dir="/tmp")
    url = "ipc://%s/gpud.sock" % d
    log = open(os.path.join(d, "gpud.log"), "w")
    proc = subprocess.Popen([a.gpud, "--backend", a.backend, "--listen", url, "--log-level",
                             "warn"], stdout=log, stderr=subprocess.STDOUT)
    gpuctl = os.path.join(os.path.dirname(os.path.abspath(a.gpud)), "gpuctl")
    workers = []
    try:
        if subprocess.run([gpuctl, "--url", url, "status", "--wait", "60"],
                          stdout=subprocess.DEVNULL).returncode != 0:
            raise SystemExit("gpud did not start: see %s/gpud.log" % d)
        workers = [Worker(n, py, lib, url) for n, py, lib in pkgs]
        cupy = cupy_fns()
        rows = {}   # name -> [(p50, p99)] per block
        ring = {}   # name -> (ring calls, calls)
        for _ in range(a.blocks):
            for w in workers:
                for what in w.fns:
                    k = "%s: %s" % (w.name, ROWS[what])
                    nring, ts = w.block(what, a.per)
                    rows.setdefault(k, []).append((pct(ts, 0.5), pct(ts, 0.99)))
                    r = ring.get(k, (0, 0))
                    ring[k] = (r[0] + nring, r[1] + len(ts))
            out = subprocess.run([a.tiny_call, url, str(a.per), "add", "1000"], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout.split()
            rows.setdefault("C gpud_call", []).append((float(out[1]), float(out[3])))
            for k, fn in cupy.items():
                for _ in range(50):
                    fn()
                ts = []
                for _ in range(a.per):
                    t0 = time.perf_counter()
                    fn()
                    ts.append((time.perf_counter() - t0) * 1e6)
                rows.setdefault(k, []).append((pct(ts, 0.5), pct(ts, 0.99)))
        print("add, 1,000 float32 in and out, gpud on the %s backend; %d blocks of %d calls "
              "interleaved; medians of the blocks' p50 and p99 (us)" % (a.backend, a.blocks,
                                                                      a.per))
        for k, v in rows.items():
            extra = ""
            if k in ring:
                extra = "   request ring: %d of %d calls" % ring[k]
            print("  %-44s p50 %8.2f  p99 %8.2f%s" % (k, statistics.median(p for p, _ in v),
                                                      statistics.median(q for _, q in v), extra))
        print("  the Python layer above the bare ctypes call, medians of the blocks' "
              "differences of p50s (the blocks' load cancels):")
        for w in workers:
            r, b = rows["%s: %s" % (w.name, ROWS["run"])], rows["%s: %s" % (w.name, ROWS["bare"])]
            print("    %-42s %8.2f us" % (w.name, statistics.median(
                x[0] - y[0] for x, y in zip(r, b))))
        if not cupy:
            print("  (CuPy does not import here: its rows are left out)")
    finally:
        for w in workers:
            w.close()
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
