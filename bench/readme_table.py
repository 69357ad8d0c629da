"""bench/readme_table.py — the README's first table, every row measured in one run on one device.

Fresh processes, start to result in hand, lombscargle on the classic benchmark's signal (the
signal of lombscargle_peers.py: 114 samples, 2**20 angular frequencies on [0.01, 10]),
float32 and float64:

  - Numba and CuPy (precompiled fatbin): `lombscargle_peers.py fresh numba|cupy_fatbin DTYPE`;
  - the standalone C program (bench/standalone_lombscargle: context, fatbin, alloc, copies,
    launch, copy back, .npy in and out);
  - `gpuctl run lombscargle` against a warm gpud, freqs a .npy file, and freqs as the grid
    f0, df, nf;
  - the floors under a fresh gpuctl: `gpuctl --version`, `gpuctl status`;
  - a Python script with gpud.signal.lombscargle (bench/python_first_result.py's), and
    `python3 -c 'import numpy'` beside it.

Every command runs once per round, all of them interleaved round by round, so drift in the
machine hits every row alike; each time is spawn to exit (posix_spawn + waitpid). After the
rounds the outputs are checked against each other and the kernel's own time is taken inside
gpud (`gpuctl run --json`: kernel_us) and in-process (standalone_lombscargle --kernel-reps).
Prints the versions, then the table as README.md's markdown (median and, in brackets, the
10th to 90th percentile of the rounds) and the paragraph under it.

  python3 bench/readme_table.py DIR PEERS_PY [ROUNDS]

DIR is a build directory (`make bench-readme`) or a GPU bundle (`make gpu-bundle`; there:
python3 BUNDLE/bench/readme_table.py BUNDLE .devcarry/lombscargle_peers.py): it holds gpud,
gpuctl, libgpud-client.so.0, bench/standalone_lombscargle and, in a bundle, lib/ (the client
library's own libraries). The Python package is the one at python/ beside this bench/.
ROUNDS: default 15. python3 must have numpy, CuPy and Numba, and nvcc on PATH (the peers
build their fatbin once).
"""
import datetime
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import python_first_result as pfr  # noqa: E402  (its gpud start, timer and script)

DTYPES = ("float32", "float64")


def run_out(argv, env=None):
    """stdout of a command that is not timed, '' when it cannot run."""
    try:
        r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return r.stdout.strip() if r.returncode == 0 else ""


def versions(py, env, gpuctl, url, gpud, standalone):
    st = json.loads(run_out([gpuctl, "--url", url, "status", "--json"]) or "{}")
    dev = (st.get("devices") or [None])[0]
    v = {"device": "%s (sm_%d%d, %d SMs)" % (dev["name"], dev["cc_major"], dev["cc_minor"],
                                             dev["sm_count"]) if dev else "no device",
         "gpud": run_out([gpud, "--version"]),
         "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    drv = run_out(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i",
                   "0"])
    if not drv and os.path.exists("/proc/driver/nvidia/version"):
        with open("/proc/driver/nvidia/version") as fh:
            drv = fh.readline().strip()
    v["driver"] = drv.splitlines()[0] if drv else "unknown"
    cv = run_out([standalone, "--versions"]).split()  # cuda_runtime X cuda_driver Y
    v["cuda_runtime"], v["cuda_driver"] = (cv[1], cv[3]) if len(cv) == 4 else ("?", "?")
    probe = r'''
import json, platform, numpy
from importlib import metadata
d = {"python": platform.python_version(), "numpy": numpy.__version__}
try:
    import cupy
    r = cupy.cuda.runtime.runtimeGetVersion()
    d["cupy"] = "%s (CUDA runtime %d.%d)" % (cupy.__version__, r // 1000, r % 1000 // 10)
except Exception as e:
    d["cupy"] = "unavailable: %s" % e
try:
    import numba
    d["numba"] = numba.__version__
    try:
        d["numba"] += ", numba-cuda " + metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        pass
except Exception as e:
    d["numba"] = "unavailable: %s" % e
print(json.dumps(d))
'''
    v.update(json.loads(run_out([py, "-c", probe], env) or "{}"))
    with open("/proc/cpuinfo") as fh:
        cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "?")
    v["host"] = "%s, %d CPUs, Linux %s" % (cpu, os.cpu_count(), platform.release())
    return v


def pct(v, q):
    """The q-th percentile (0..100), linear between the sorted values."""
    s = sorted(v)
    k = (len(s) - 1) * q / 100.0
    i = int(k)
    return s[i] if i + 1 >= len(s) else s[i] + (s[i + 1] - s[i]) * (k - i)


def num(ms):
    if ms >= 1000:
        return "%.2f" % (ms / 1e3)
    return "%.0f" % ms if ms >= 100 else "%.1f" % ms


def cell(times, bold=False):
    """'2.46 s [2.40–2.61]': the median with its unit, then p10–p90."""
    m = statistics.median(times)
    unit = " s" if m >= 1000 else " ms"
    lo, hi = pct(times, 10), pct(times, 90)
    fmt = ((lambda x: "%.2f" % (x / 1e3)) if m >= 1000 else
           (lambda x: "%.0f" % x) if m >= 100 else (lambda x: "%.1f" % x))  # as the median
    med = num(m) + unit
    return "%s [%s–%s]" % ("**%s**" % med if bold else med, fmt(lo), fmt(hi))


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    d_bin = os.path.abspath(sys.argv[1])
    peers = os.path.abspath(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    gpud, gpuctl = os.path.join(d_bin, "gpud"), os.path.join(d_bin, "gpuctl")
    standalone = os.path.join(d_bin, "bench", "standalone_lombscargle")
    py = sys.executable
    env = dict(os.environ, GPUD_LIB=os.path.join(d_bin, "libgpud-client.so.0"),
               PYTHONPATH=os.path.join(HERE, os.pardir, "python") + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    if os.path.isdir(os.path.join(d_bin, "lib")):
        env["LD_LIBRARY_PATH"] = os.path.join(d_bin, "lib") + (
            os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    # The peers' signal, written as .npy for gpuctl and the standalone program.
    spec = importlib.util.spec_from_file_location("lombscargle_peers", peers)
    peer_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer_mod)

    d = tempfile.mkdtemp(prefix="gpud-readme-", dir="/tmp")
    proc, url = pfr.start_gpud(gpud, d)
    env["GPUD_URL"] = url
    try:
        import numpy as np
        nx = nf = 0
        for dt in DTYPES:
            x, y, f = peer_mod.signal(dt)
            nx, nf = len(x), len(f)
            for name, a in (("x", x), ("y", y), ("f", f)):
                np.save(os.path.join(d, "%s_%s.npy" % (name, dt)), a)
        # Byte-compiled as make install leaves it (see python_first_result.py).
        subprocess.run([py, "-m", "compileall", "-q", os.path.join(HERE, os.pardir, "python",
                                                                   "gpud")], check=True)
        f = peer_mod.signal("float64")[2]  # evenly spaced: the grid f0 + df k gives it
        f0, df = float(f[0]), (float(f[-1]) - float(f[0])) / (nf - 1)
        cmds = {}
        for dt in DTYPES:
            p = lambda name: os.path.join(d, "%s_%s.npy" % (name, dt))  # noqa: E731
            xy = ["x=" + p("x"), "y=" + p("y")]
            cmds["numba " + dt] = [py, peers, "fresh", "numba", dt]
            cmds["cupy " + dt] = [py, peers, "fresh", "cupy_fatbin", dt]
            cmds["standalone " + dt] = [standalone, p("x"), p("y"), p("f"), p("out_alone")]
            cmds["file " + dt] = [gpuctl, "--url", url, "run", "lombscargle"] + xy + [
                "freqs=" + p("f"), "-o", p("out_file")]
            cmds["grid " + dt] = [gpuctl, "--url", url, "run", "lombscargle"] + xy + [
                "f0=%.17g" % f0, "df=%.17g" % df, "nf=%d" % nf, "-o", p("out_grid")]
            cmds["python " + dt] = [py, "-c", pfr.GPUD_SCRIPT.replace("DTYPE", dt)]
        cmds["version"] = [gpuctl, "--version"]
        cmds["status"] = [gpuctl, "--url", url, "status"]
        cmds["numpy"] = [py, "-c", "import numpy"]
        for argv in cmds.values():  # fatbin built, caches and page cache filled: not timed
            pfr.timed(argv, env)
        times = {k: [] for k in cmds}
        outs = {}
        for _ in range(n):
            for k, argv in cmds.items():
                t, outs[k] = pfr.timed(argv, env)
                times[k].append(t)

        # The outputs agree and peak near 1 rad/s; the kernel's own time.
        peaks, kern = [], {}
        for dt in DTYPES:
            a, b, g = (np.load(os.path.join(d, "out_%s_%s.npy" % (w, dt)))
                       for w in ("alone", "file", "grid"))
            top = np.max(np.abs(a))
            gtol = 1e-4 if dt == "float32" else 1e-6  # the grid is float64, the file rounds
            if np.max(np.abs(b - a)) > 1e-6 * top or np.max(np.abs(g - a)) > gtol * top:
                raise SystemExit("readme_table: gpuctl and the standalone program disagree "
                                 "(%s)" % dt)
            f = np.load(os.path.join(d, "f_%s.npy" % dt))
            peaks.append("%s: gpud %.4f, standalone %.4f, cupy %s, numba %s, python %s" % (
                dt, f[int(np.argmax(b))], f[int(np.argmax(a))],
                outs["cupy " + dt].split()[-1], outs["numba " + dt].split()[-1],
                outs["python " + dt].split()[-1]))
            ks = []
            for _ in range(21):
                o = json.loads(pfr.timed(cmds["file " + dt] + ["--json"], env)[1])
                ks.append(o["kernel_us"])
            _, o = pfr.timed(cmds["standalone " + dt] + ["--kernel-reps", "51"], env)
            kern[dt] = (statistics.median(ks), float(o.split()[1]))

        v = versions(py, env, gpuctl, url, gpud, standalone)
        print("device      %s, NVIDIA driver %s; CUDA runtime %s (gpud's and the standalone "
              "program's, static), driver API %s" % (v["device"], v["driver"],
                                                     v["cuda_runtime"], v["cuda_driver"]))
        print("host        %s" % v["host"])
        print("software    %s; Python %s, numpy %s, CuPy %s, Numba %s" % (
            v["gpud"], v.get("python"), v.get("numpy"), v.get("cupy"), v.get("numba")))
        print("date        %s" % v["date"])
        print("rounds      %d, every command once per round, interleaved; spawn to exit" % n)
        print("peaks (rad/s) " + "; ".join(peaks))
        print()

        def two(key, bold=False):
            return "%s (float32), %s (float64)" % (cell(times[key + " float32"], bold),
                                                   cell(times[key + " float64"], bold))
        rows = [
            ("Numba `@cuda.jit` in a fresh process (`lombscargle_peers.py fresh numba`)",
             two("numba")),
            ("CuPy with a precompiled fatbin, fresh process "
             "(`lombscargle_peers.py fresh cupy_fatbin`)", two("cupy")),
            ("a standalone C program: context, fatbin, alloc, copy, launch, copy back "
             "(`bench/standalone_lombscargle`)", two("standalone")),
            ("**`gpuctl run lombscargle ...` against a running gpud**, freqs a `.npy` file",
             two("file", True)),
            ("**the same with the frequencies as the grid `f0=0.01 df=... nf=%d`** "
             "(nothing read or uploaded for them)" % nf, two("grid", True)),
            ("for scale, in the same run: `gpuctl --version` (exec, loading, exit) / "
             "`gpuctl status` (+ connect, hello, one request, close)",
             "%s / %s" % (cell(times["version"]), cell(times["status"]))),
            ("a Python script with `gpud.signal.lombscargle`, fresh process (numpy's own "
             "import is most of it: `python3 -c 'import numpy'` %s)"
             % cell(times["numpy"]), two("python")),
        ]
        print("| way to run it | start to result, median [p10–p90] |")
        print("| --- | --- |")
        for label, c in rows:
            print("| %s | %s |" % (label, c))
        k32, k64 = kern["float32"], kern["float64"]
        print()
        print("(`make bench-readme` on %s, driver %s, CUDA %s, %s: medians of %d rounds of "
              "fresh processes, in brackets the 10th to 90th percentile of the rounds; Python "
              "%s, numpy %s, CuPy %s, Numba %s; %d samples, 2^20 frequencies. The kernel "
              "itself: %.0f µs (float32) and %.0f µs (float64) inside gpud, %.0f and %.0f µs "
              "in-process (gpud / in-process %.3f and %.3f).)" % (
                  v["device"], v["driver"], v["cuda_runtime"], v["date"][:10], n,
                  v.get("python"), v.get("numpy"), v.get("cupy"), v.get("numba"), nx, k32[0],
                  k64[0], k32[1], k64[1], k32[0] / k32[1], k64[0] / k64[1]))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
