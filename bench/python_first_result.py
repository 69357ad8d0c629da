"""bench/python_first_result.py — a whole Python script in fresh processes: gpud vs CuPy vs Numba.

The script: interpreter start, import numpy, import the GPU library, lombscargle on the
demo signal (114 samples, 2**20 angular frequencies; the signal of
../shared/anchors/lombscargle_peers.py), the result in hand. With gpud:
gpud.signal.lombscargle(x, y, f, dtype=DTYPE) over ipc:// to a warm gpud on the cuda backend;
CuPy (precompiled fatbin) and Numba: lombscargle_peers.py `fresh cupy_fatbin|numba DTYPE`.
Each time is fork to exit of a new process, the three interleaved round by round;
medians of N rounds, one machine, one call.

Then, warm, in this process: client.run of a tiny lombscargle (float32, 8 samples x 1024
frequencies; inputs in the request, the output in the reply) against the same gpud_call
from C (bench/tiny_call), interleaved in blocks.

  python3 bench/python_first_result.py GPUD LIBGPUD_CLIENT_SO TINY_CALL [N] [PEERS_PY]

The package is found at python/ of this tree; the library is handed to it as $GPUD_LIB.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))

GPUD_SCRIPT = r'''
import time
import numpy as np
t0 = time.perf_counter()
from gpud.signal import lombscargle
t1 = time.perf_counter()
rng = np.random.RandomState(1234)
x = np.linspace(0.01, 10 * np.pi, 2 ** 10)
x = x[rng.rand(2 ** 10) >= 0.9]
y = 2.0 * np.cos(1.0 * x + 0.5 * np.pi)
f = np.linspace(0.01, 10, 2 ** 20)
x, y, f = x.astype("DTYPE"), y.astype("DTYPE"), f.astype("DTYPE")
t2 = time.perf_counter()
p = lombscargle(x, y, f, dtype="DTYPE")
t3 = time.perf_counter()
print("import_ms %.2f call_ms %.2f peak_f %.4f" % ((t1 - t0) * 1e3, (t3 - t2) * 1e3,
                                                   f[int(np.argmax(p))]))
'''


def timed(argv, env):
    """Runs argv once; (ms from spawn to exit, its stdout). posix_spawn (vfork + exec) and
    waitpid, stdout and stderr into files: what C's fork/exec/wait costs, whatever the child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        acts = [(os.POSIX_SPAWN_DUP2, out.fileno(), 1), (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
        t0 = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=acts)
        st = os.waitpid(pid, 0)[1]
        dt = (time.perf_counter() - t0) * 1e3
        code = os.waitstatus_to_exitcode(st)
        out.seek(0)
        err.seek(0)
        if code != 0:
            raise SystemExit("%s failed (%d): %s" % (" ".join(argv[:3]), code,
                                                     err.read()[-2000:].decode(errors="replace")))
        return dt, out.read().decode(errors="replace").strip()


def start_gpud(gpud_bin, d):
    url = "ipc://%s/gpud.sock" % d
    log = open(os.path.join(d, "gpud.log"), "w")
    proc = subprocess.Popen([gpud_bin, "--backend", "cuda", "--listen", url, "--log-level",
                             "warn"], stdout=log, stderr=subprocess.STDOUT)
    gpuctl = os.path.join(os.path.dirname(gpud_bin), "gpuctl")
    if subprocess.run([gpuctl, "--url", url, "status", "--wait", "60"],
                      stdout=subprocess.DEVNULL).returncode != 0:
        proc.kill()
        raise SystemExit("gpud did not start: see %s/gpud.log" % d)
    return proc, url


def warm(url, tiny_call, blocks=15, per_block=500):
    """client.run, the bare ctypes call of gpud_call, and C's gpud_call, blocks interleaved:
    (py p50s, ctypes p50s, c p50s)."""
    import ctypes
    import numpy as np
    import gpud
    from gpud import _lib
    x = (0.1 + 3.0 * np.arange(8) / 8).astype(np.float32)
    y = np.cos(x)
    f = (0.1 + 5.0 * np.arange(1024) / 1024).astype(np.float32)
    py, raw, c = [], [], []
    with gpud.connect(url) as cl:
        # The same call through ctypes with everything prepared: the floor of any layer.
        argv = (_lib.Arg * 3)()
        keep = []
        for i, (name, a) in enumerate((("x", x), ("y", y), ("freqs", f))):
            ga = _lib.Array(dtype=1, ndim=1, data=a.ctypes.data, nbytes=a.nbytes)
            ga.shape[0] = a.size
            keep.append(ga)
            argv[i].name, argv[i].kind = name.encode(), _lib.ARG_ARRAY
            argv[i].v.array = ctypes.pointer(ga)
        res, nout = (_lib.Result * 1)(), ctypes.c_size_t()

        def bare():
            _lib.lib.gpud_call(cl._c, b"lombscargle", argv, 3, res, 1, ctypes.byref(nout), None)
            _lib.lib.gpud_array_free(ctypes.byref(res[0].array))

        def run():
            cl.run("lombscargle", x=x, y=y, freqs=f)

        for _ in range(200):
            run()
            bare()
        for _ in range(blocks):
            for fn, acc in ((run, py), (bare, raw)):
                ts = []
                for _ in range(per_block):
                    t0 = time.perf_counter()
                    fn()
                    ts.append((time.perf_counter() - t0) * 1e6)
                acc.append(statistics.median(ts))
            out = subprocess.run([tiny_call, url, str(per_block)], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout.split()
            c.append(float(out[1]))
    return py, raw, c


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    gpud_bin, lib, tiny_call = (os.path.abspath(a) for a in sys.argv[1:4])
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 11
    peers = sys.argv[5] if len(sys.argv) > 5 else next(
        (p for p in (os.path.join(HERE, os.pardir, up, "shared", "anchors",
                                  "lombscargle_peers.py") for up in (".", os.pardir))
         if os.path.exists(p)), "lombscargle_peers.py (pass PEERS_PY)")
    os.environ["GPUD_LIB"] = lib
    py = sys.executable
    d = tempfile.mkdtemp(prefix="gpud-pybench-", dir="/tmp")
    proc, url = start_gpud(gpud_bin, d)
    env = dict(os.environ, GPUD_URL=url,
               PYTHONPATH=os.path.join(HERE, os.pardir, "python") + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    try:
        import numpy
        print("python %s, numpy %s; %d rounds of fresh processes, medians of fork to exit (ms)"
              % (sys.version.split()[0], numpy.__version__, n))
        # Byte-compiled as make install leaves it (Python writes no .pyc under
        # PYTHONDONTWRITEBYTECODE, and would otherwise compile in every process).
        subprocess.run([py, "-m", "compileall", "-q", os.path.join(HERE, os.pardir, "python",
                                                                   "gpud")], check=True)
        for dt in ("float32", "float64"):  # builds the fatbin, fills caches: not timed
            timed([py, peers, "fresh", "cupy_fatbin", dt], env)
            timed([py, peers, "fresh", "numba", dt], env)
        null = GPUD_SCRIPT.replace("from gpud.signal import lombscargle", "").replace(
            'p = lombscargle(x, y, f, dtype="DTYPE")', "p = f")
        cmds = {"numpy": [py, "-c", "import numpy"],
                "import gpud": [py, "-c", "import numpy, gpud, gpud.signal"]}
        for dt in ("float32", "float64"):
            cmds["signal " + dt] = [py, "-c", null.replace("DTYPE", dt)]
            cmds["gpud " + dt] = [py, "-c", GPUD_SCRIPT.replace("DTYPE", dt)]
            cmds["cupy " + dt] = [py, peers, "fresh", "cupy_fatbin", dt]
            cmds["numba " + dt] = [py, peers, "fresh", "numba", dt]
        times = {k: [] for k in cmds}
        inner = {}
        outs = {}
        for _ in range(n):
            for k, argv in cmds.items():
                t, out = timed(argv, env)
                times[k].append(t)
                outs[k] = out
                if k.startswith("gpud "):
                    w = out.split()
                    inner.setdefault(k, []).append((float(w[1]), float(w[3])))
        med = {k: statistics.median(v) for k, v in times.items()}
        base = med["numpy"]
        print("  %-34s %9.1f" % ("python -c 'import numpy'", base))
        print("  %-34s %9.1f   import gpud adds %.1f ms" % (
            "python -c 'import numpy, gpud'", med["import gpud"], med["import gpud"] - base))
        print("\n  %-8s %9s %9s %9s %11s %13s %13s  %s" % (
            "dtype", "gpud", "cupy", "numba", "cupy/gpud", "after numpy", "cupy/gpud",
            "peak frequency (gpud cupy numba)"))
        print("  %-8s %9s %9s %9s %11s %13s %13s" % ("", "", "", "", "", "gpud  cupy",
                                                        "after numpy"))
        for dt in ("float32", "float64"):
            g, cp, nb = med["gpud " + dt], med["cupy " + dt], med["numba " + dt]
            peaks = " ".join(outs[k + " " + dt].split()[-1] for k in ("gpud", "cupy", "numba"))
            print("  %-8s %9.1f %9.1f %9.1f %10.1fx %6.1f %6.1f %12.1fx  %s" % (
                dt, g, cp, nb, cp / g, g - base, cp - base, (cp - base) / (g - base), peaks))
        print("\n  the scripts' own work (numpy, the signal, no GPU; subtracted below):")
        for dt in ("float32", "float64"):
            sig = med["signal " + dt]
            g, cp = med["gpud " + dt] - sig, med["cupy " + dt] - sig
            print("    %s: %.1f ms; then gpud's part %.1f ms, CuPy's %.1f ms: %.1fx" % (
                dt, sig, g, cp, cp / g))
        for k, v in inner.items():
            print("  %s inside the script: import gpud.signal %.1f ms, lombscargle call %.1f ms "
                  "(connect, upload, run, download)" % (
                      k, statistics.median(a for a, _ in v), statistics.median(b for _, b in v)))
        pyw, raww, cw = warm(url, tiny_call)
        p, r, c = (statistics.median(v) for v in (pyw, raww, cw))
        print("\n  warm tiny lombscargle (float32, 8 x 1024, one round trip), median of the p50s "
              "of %d blocks of 500:\n    Python client.run %.1f us, the bare ctypes call %.1f us, "
              "C gpud_call %.1f us: Python adds %.1f us (ctypes itself %.1f, the package %.1f)"
              % (len(pyw), p, r, c, p - c, r - c, p - r))
        print("    per block (run/ctypes/C): " + " ".join(
            "%.0f/%.0f/%.0f" % t for t in zip(pyw, raww, cw)))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
