"""bench/survey.py — survey-scale periodograms on one device, in one run.

  python3 bench/survey.py GPUD LIBGPUD_CLIENT_SO BATCH_CLIENTS [ROUNDS]

(a) lombscargle_many: 10,000 series of N uniform in [1,000, 5,000] samples (each
    its own sample times), 10,000 grid frequencies, float32 and float64: series
    per second through gpud.signal.lombscargle_many (upload, one request, the
    (B, M) result back in numpy), median of ROUNDS (default 5).
(b) 64 clients (bench/batch_clients: 64 threads, a connection each) each sending
    single small series (N = 3,000, M = 1,000, float32, the grid), gpud with
    dynamic batching off and on (batch_delay_us): runs per second; the ratio is
    measured in the same run against the same device.
(c) the work of (a) as 10,000 separate gpud.signal.lombscargle calls from one
    client (float32): series per second.

SURVEY_ONLY=a runs (a) alone, SURVEY_ONLY=b (b) alone. SURVEY_B, SURVEY_NMIN,
SURVEY_NMAX and SURVEY_M change B, N's range and M (a smaller batch for the
cpu backend). SURVEY_BREAKDOWN=1 prints where (a)'s time goes, each a median
of ROUNDS, next to its end-to-end rate: lombscargle_many pipelined
(gpud._many_pipe, the default) and one run at a time (the path before it),
the kernel alone on uploaded Buffers into a Buffer, the host work of the
run-at-a-time path (concatenating the series, uploading x, y and offsets,
Buffer.get() of the (B, M) output, the first touch of (B, M) fresh numpy
memory), and a run into a Client.empty() (B, M) output (its allocation timed
apart). SURVEY_SWEEP=MIB:DEPTH,... (e.g. 16:4,32:6,64:8) adds the pipelined
rate with chunks of MIB MiB, DEPTH in flight, for each.

Each gpud is started here on the cuda backend (GPUD_BACKEND overrides) with a
config file of its own, on an ipc:// socket in a temporary directory, and
stopped with SIGTERM. Prints a markdown table with the device's name.
"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))

B, NMIN, NMAX, M = (int(os.environ.get("SURVEY_" + k, v)) for k, v in (
    ("B", 10_000), ("NMIN", 1_000), ("NMAX", 5_000), ("M", 10_000)))
F0, DF = 0.01, 0.001
SMALL_CLIENTS, SMALL_CALLS, SMALL_N, SMALL_M = 64, 100, 3_000, 1_000
BATCH_DELAY_US, METRICS_PORT = 200, 19400


def metrics(port):
    """gpud_batches_total and gpud_batched_runs_total from gpud's /metrics."""
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read()
    out = {}
    for line in text.decode().splitlines():
        for k in ("gpud_batches_total", "gpud_batched_runs_total"):
            if line.startswith(k + " ") or line.startswith(k + "{"):
                out[k] = out.get(k, 0) + float(line.split()[-1])
    return out


def start_gpud(gpud, tmp, name, conf):
    sock = os.path.join(tmp, name + ".sock")
    cfg = os.path.join(tmp, name + ".conf")
    with open(cfg, "w") as f:
        f.write("[gpud]\nlisten = ipc://%s\n%s" % (sock, conf))
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen([gpud, "--config", cfg, "--backend",
                          os.environ.get("GPUD_BACKEND", "cuda")], stdout=log, stderr=log)
    url = "ipc://" + sock
    import gpud as g
    t_end = time.monotonic() + 60
    while True:
        try:
            return p, url, g.connect(url)
        except g.Error:
            if p.poll() is not None:
                raise SystemExit("gpud (%s) exited with %d; its log: %s"
                                 % (name, p.returncode, open(log.name).read()[-2000:]))
            if time.monotonic() > t_end:
                raise
            time.sleep(0.05)


def stop_gpud(p, c):
    c.close()
    p.send_signal(signal.SIGTERM)
    if p.wait(60) != 0:
        raise SystemExit("gpud exited with %d" % p.returncode)


def say(line):
    print("#", line, flush=True)


def device_name(c):
    """The GPU's name (nvidia-smi), else the backend's."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip().splitlines()[0]
    except OSError:
        pass
    return "backend %s" % c.backend


def series(seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    ns = rng.integers(NMIN, NMAX + 1, size=B)
    xs, ys = [], []
    for n in ns:
        x = np.sort(rng.uniform(0, 1000.0, n))
        xs.append(x)
        ys.append(np.sin(rng.uniform(0.05, 5.0) * x) + 0.3 * rng.standard_normal(n))
    return xs, ys


def bench_many(c, xs, ys, dtype, rounds):
    from gpud.signal import lombscargle_many
    xd = [x.astype(dtype) for x in xs]
    yd = [y.astype(dtype) for y in ys]
    lombscargle_many(xd[:100], yd[:100], f0=F0, df=DF, nf=M, dtype=dtype, client=c)  # warm
    rates = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        p = lombscargle_many(xd, yd, f0=F0, df=DF, nf=M, dtype=dtype, client=c)
        rates.append(B / (time.perf_counter() - t0))
    assert p.shape == (B, M), p.shape
    return statistics.median(rates), p


def timed(fn, rounds):
    """Median seconds of fn() over rounds (after one call to warm up)."""
    fn()
    t = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def breakdown(c, xs, ys, dtype, rounds):
    """(a)'s pieces, printed: see the module's docstring."""
    import numpy as np
    import gpud._many_pipe as pipe
    from gpud.signal import lombscargle_many
    xd = [x.astype(dtype) for x in xs]
    yd = [y.astype(dtype) for y in ys]
    kw = dict(f0=F0, df=DF, nf=M, dtype=dtype, client=c)
    keep = pipe.PIPE_MIN_BYTES
    new, old = [], []
    try:
        lombscargle_many(xd, yd, **kw)
        for _ in range(rounds):  # alternating, so drift hits both alike
            for on, out in ((True, new), (False, old)):
                pipe.PIPE_MIN_BYTES = keep if on else 1 << 62
                t0 = time.perf_counter()
                lombscargle_many(xd, yd, **kw)
                out.append(time.perf_counter() - t0)
    finally:
        pipe.PIPE_MIN_BYTES = keep
    new, old = statistics.median(new), statistics.median(old)
    x, y = np.concatenate(xd), np.concatenate(yd)
    off = np.zeros(B + 1, np.int64)
    np.cumsum([len(v) for v in xd], out=off[1:])
    bx, by, bo = c.upload(x), c.upload(y), c.upload(off)
    out = c.alloc((B, M), dtype)
    pieces = [
        ("end to end, pipelined (default)", new),
        ("end to end, one run at a time (before)", old),
        ("kernel alone: run on Buffers into a Buffer",
         timed(lambda: c.run("lombscargle_many", x=bx, y=by, offsets=bo, f0=F0, df=DF, nf=M,
                             out=out), rounds)),
        ("kernel alone, method=direct",
         timed(lambda: c.run("lombscargle_many", x=bx, y=by, offsets=bo, f0=F0, df=DF, nf=M,
                             method="direct", out=out), rounds)),
        ("kernel alone, method=nufft",
         timed(lambda: c.run("lombscargle_many", x=bx, y=by, offsets=bo, f0=F0, df=DF, nf=M,
                             method="nufft", out=out), rounds)),
        ("np.concatenate of the x's and y's", timed(lambda: (np.concatenate(xd),
                                                           np.concatenate(yd)), rounds)),
        ("upload of x, y, offsets (%.0f MB)" % ((x.nbytes + y.nbytes + off.nbytes) / 1e6),
         timed(lambda: [b.free() for b in (c.upload(x), c.upload(y), c.upload(off))], rounds)),
        ("Buffer.get() of the (B, M) output (%.0f MB)" % (out.nbytes / 1e6),
         timed(out.get, rounds)),
        ("first touch of (B, M) fresh memory: np.empty().fill(1)",
         timed(lambda: np.empty((B, M), dtype).fill(1), rounds)),
    ]
    t0 = time.perf_counter()
    host = c.empty((B, M), dtype)
    pieces.append(("Client.empty((B, M)): a host region (once)", time.perf_counter() - t0))
    pieces.append(("run with out= that Client.empty() array",
                   timed(lambda: c.run("lombscargle_many", x=x, y=y, offsets=off, f0=F0, df=DF,
                                       nf=M, out=host), rounds)))
    host = None  # given back to gpud
    for b in (bx, by, bo, out):
        b.free()
    say("(a) breakdown, %s, B = %d, M = %d (medians of %d):" % (dtype, B, M, rounds))
    for what, sec in pieces:
        say("    %-58s %8.1f ms  %8.0f series/s" % (what, sec * 1e3, B / sec))
    say("    pipelined / before: %.2fx the rate" % (old / new))
    for item in filter(None, os.environ.get("SURVEY_SWEEP", "").split(",")):
        mib, depth = (int(v) for v in item.split(":"))
        kc, kd = pipe.PIPE_CHUNK_BYTES, pipe.PIPE_DEPTH
        pipe.PIPE_CHUNK_BYTES, pipe.PIPE_DEPTH = mib << 20, depth
        try:
            sec = timed(lambda: lombscargle_many(xd, yd, **kw), rounds)
        finally:
            pipe.PIPE_CHUNK_BYTES, pipe.PIPE_DEPTH = kc, kd
        say("    %-58s %8.1f ms  %8.0f series/s"
            % ("pipelined, chunks of %d MiB, %d in flight" % (mib, depth), sec * 1e3, B / sec))


def bench_separate(c, xs, ys, dtype):
    from gpud.signal import lombscargle
    xd = [x.astype(dtype) for x in xs]
    yd = [y.astype(dtype) for y in ys]
    lombscargle(xd[0], yd[0], f0=F0, df=DF, nf=M, dtype=dtype, client=c)  # warm
    t0 = time.perf_counter()
    out = [lombscargle(x, y, f0=F0, df=DF, nf=M, dtype=dtype, client=c) for x, y in zip(xd, yd)]
    return B / (time.perf_counter() - t0), out


def batch_clients(exe, url):
    r = subprocess.run([exe, url, str(SMALL_CLIENTS), str(SMALL_CALLS), str(SMALL_N),
                        str(SMALL_M), "float32"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit("batch_clients failed: %s" % r.stderr)
    f = r.stdout.split()
    return dict(zip(f[0::2], map(float, f[1::2])))


def main():
    if len(sys.argv) < 4:
        raise SystemExit("usage: survey.py GPUD LIBGPUD_CLIENT_SO BATCH_CLIENTS [ROUNDS]")
    gpud, lib, exe = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    os.environ["GPUD_LIB"] = lib
    import numpy as np
    xs, ys = series(43)
    only = os.environ.get("SURVEY_ONLY")  # "a" or "b": that part alone
    only_b, only_a = only == "b", only == "a"
    pieces = os.environ.get("SURVEY_BREAKDOWN") == "1"
    with tempfile.TemporaryDirectory() as tmp:
        p, url, c = start_gpud(gpud, tmp, "plain", "")
        dev = device_name(c)
        r32 = r64 = rsep = worst = float("nan")
        if not only_b:
            r32, p32 = bench_many(c, xs, ys, "float32", rounds)
            say("(a) lombscargle_many float32: %.0f series/s" % r32)
            if pieces:
                breakdown(c, xs, ys, "float32", rounds)
            r64, p64 = bench_many(c, xs, ys, "float64", rounds)
            say("(a) lombscargle_many float64: %.0f series/s" % r64)
            if pieces:
                breakdown(c, xs, ys, "float64", rounds)
        if only_a:
            stop_gpud(p, c)
            print("device: %s; B = %d series, N in [%d, %d], M = %d grid frequencies; "
                  "rounds %d" % (dev, B, NMIN, NMAX, M, rounds))
            print()
            print("| what | series/s | target |")
            print("| --- | --- | --- |")
            print("| (a) lombscargle_many, float32 | %.0f | >= 50,000 |" % r32)
            print("| (a) lombscargle_many, float64 | %.0f | |" % r64)
            return
        if not only_b:
            rsep, sep = bench_separate(c, xs, ys, "float32")
            say("(c) separate calls float32: %.0f series/s" % rsep)
            # the batched results equal the separate calls' (float32: the kernel's accuracy)
            worst = max(float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))
                        for a, b in zip(p32, sep))
        unb = [batch_clients(exe, url) for _ in range(3)]
        say("(b) batching off: %s" % unb)
        stop_gpud(p, c)
        p, url, c = start_gpud(gpud, tmp, "batched",
                               "batch_delay_us = %d\nbatch_max = %d\nbatch_max_work = %d\n"
                               "metrics_listen = 127.0.0.1:%d\n"
                               % (BATCH_DELAY_US, SMALL_CLIENTS, SMALL_N * SMALL_M, METRICS_PORT))
        bat = [batch_clients(exe, url) for _ in range(3)]
        say("(b) batching on: %s" % bat)
        met = metrics(METRICS_PORT)
        say("(b) metrics: %s" % met)
        stop_gpud(p, c)
    u = statistics.median(r["runs_per_s"] for r in unb)
    b = statistics.median(r["runs_per_s"] for r in bat)
    print("device: %s; B = %d series, N in [%d, %d], M = %d grid frequencies; rounds %d"
          % (dev, B, NMIN, NMAX, M, rounds))
    print()
    print("| what | series/s | target |")
    print("| --- | --- | --- |")
    print("| (a) lombscargle_many, float32 | %.0f | >= 50,000 |" % r32)
    print("| (a) lombscargle_many, float64 | %.0f | |" % r64)
    print("| (c) 10,000 separate lombscargle calls, float32 | %.0f | |" % rsep)
    print("| (b) 64 clients, single series N=%d M=%d, batching off (p50 %.0f µs) | %.0f | |"
          % (SMALL_N, SMALL_M, statistics.median(r["p50_us"] for r in unb), u))
    print("| (b) the same, batching on, batch_delay_us = %d (p50 %.0f µs) | %.0f | "
          ">= 5x off: %.2fx |" % (BATCH_DELAY_US, statistics.median(r["p50_us"] for r in bat),
                                 b, b / u))
    print()
    print("(a) vs (c): %.1fx; worst relative difference of (a) float32 against (c): %.2e"
          % (r32 / rsep, worst))
    nb, nr = met.get("gpud_batches_total", 0), met.get("gpud_batched_runs_total", 0)
    print("(b) batching on: %d runs in %d batches (%.1f runs a launch)"
          % (nr, nb, nr / nb if nb else 0))


if __name__ == "__main__":
    main()
