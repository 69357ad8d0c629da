"""bench/dask_survey.py — gpud.dask on one node: several Dask worker
processes sharing one gpud (one GPU), against lombscargle_many from one
process, in the same run.

  python3 bench/dask_survey.py GPUD LIBGPUD_CLIENT_SO [WORKERS ...]

B series (DASK_B, default 4,000) of N uniform in [1,000, 5,000] samples,
each its own sample times, M (DASK_M, default 10,000) grid frequencies,
float32. For each
WORKERS (default 1 2 4): a distributed.LocalCluster of that many worker
processes (one thread each), gpud.dask.register(client, url), one warm-up
call, then gpud.dask.lombscargle over the B series, median of ROUNDS
(DASK_ROUNDS, default 3): series per second, and the result checked
against the one-process lombscargle_many's (to 1e-3 of each row's maximum:
the same kernel, chunked differently). The one-process rate is measured
first, by the same gpud. One more round per cluster is taken with Dask's
task stream: its tasks' longest compute time (gpud's work on the workers)
and when the tasks ran within the round (before them the scatter, after
them the gather).

gpud runs on the cuda backend (GPUD_BACKEND overrides) with a config file
of its own, on an ipc:// socket in a temporary directory. Prints a markdown
table with the device's name.
"""
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(HERE, os.pardir, "python")
sys.path.insert(0, PYDIR)
sys.path.insert(0, HERE)
from survey import device_name, start_gpud, stop_gpud  # noqa: E402  (gpud started alike)

B = int(os.environ.get("DASK_B", 4000))
ROUNDS = int(os.environ.get("DASK_ROUNDS", 3))
M = int(os.environ.get("DASK_M", 10_000))
NMIN, NMAX, F0, DF = 1_000, 5_000, 0.01, 0.001


def series(seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(B):
        n = int(rng.integers(NMIN, NMAX + 1))
        x = np.sort(rng.uniform(0, 1000, n)).astype(np.float32)
        y = (np.sin(2 * np.pi * 0.05 * x) + rng.normal(0, 0.5, n)).astype(np.float32)
        out.append((x, y))
    return out


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: dask_survey.py GPUD LIBGPUD_CLIENT_SO [WORKERS ...]")
    gpud_bin, lib = sys.argv[1:3]
    workers = [int(w) for w in sys.argv[3:]] or [1, 2, 4]
    os.environ["GPUD_LIB"] = lib
    # the worker processes import gpud from this tree, with this library
    os.environ["PYTHONPATH"] = PYDIR + os.pathsep + os.environ.get("PYTHONPATH", "")
    import numpy as np
    import distributed
    import gpud.dask
    import gpud.signal
    items = series(7)
    xs = [x for x, _ in items]
    ys = [y for _, y in items]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        p, url, c = start_gpud(gpud_bin, tmp, "dask", "")
        try:
            dev = device_name(c)
            kw = dict(f0=F0, df=DF, nf=M, dtype="float32")
            ref = gpud.signal.lombscargle_many(xs, ys, client=c, **kw)  # warm
            t = []
            for _ in range(ROUNDS):
                t0 = time.perf_counter()
                ref = gpud.signal.lombscargle_many(xs, ys, client=c, **kw)
                t.append(time.perf_counter() - t0)
            one = B / statistics.median(t)
            print("one process, lombscargle_many: %.0f series/s" % one, file=sys.stderr,
                  flush=True)
            scale = np.maximum(np.max(np.abs(ref), axis=1, keepdims=True), 1e-30)
            for w in workers:
                with distributed.LocalCluster(n_workers=w, threads_per_worker=1,
                                              processes=True, dashboard_address=None,
                                              silence_logs=40) as cluster, \
                        distributed.Client(cluster) as dc:
                    gpud.dask.register(dc, url)
                    got = gpud.dask.lombscargle(dc, items, **kw)  # warm: imports, connections
                    t = []
                    for _ in range(ROUNDS):
                        t0 = time.perf_counter()
                        got = gpud.dask.lombscargle(dc, items, **kw)
                        t.append(time.perf_counter() - t0)
                    # one more round, its tasks' own times (gpud's work on the
                    # workers) apart from the rest (scatter, scheduling, gather)
                    with distributed.get_task_stream(client=dc) as ts:
                        t0, w0 = time.perf_counter(), time.time()
                        gpud.dask.lombscargle(dc, items, **kw)
                        wall = time.perf_counter() - t0
                    comp = [(ss["start"] - w0, ss["stop"] - w0) for task in ts.data
                            for ss in task["startstops"] if ss["action"] == "compute"]
                    task_s = max(b - a for a, b in comp) if comp else float("nan")
                    if comp:  # before the first task: the scatter; after the last: the gather
                        print("%d workers: tasks from %.1f to %.1f ms of a %.1f ms round"
                              % (w, min(a for a, _ in comp) * 1e3, max(b for _, b in comp) * 1e3,
                                 wall * 1e3), file=sys.stderr, flush=True)
                    worst = float(np.max(np.abs(got - ref) / scale))
                    if worst > 1e-3:
                        raise SystemExit("%d workers: the result differs from lombscargle_many's "
                                         "by %.3g of a row's maximum" % (w, worst))
                    conns = c.status()["connections"]
                    rate = B / statistics.median(t)
                    rows.append((w, rate, worst, conns, wall, task_s, len(comp)))
                    print("%d workers: %.0f series/s (worst %.2e, gpud connections %d; a "
                          "round of %.1f ms: its longest of %d tasks %.1f ms)"
                          % (w, rate, worst, conns, wall * 1e3, len(comp), task_s * 1e3),
                          file=sys.stderr, flush=True)
        finally:
            stop_gpud(p, c)
    print("device: %s; B = %d series, N in [%d, %d], M = %d grid frequencies, float32; "
          "median of %d" % (dev, B, NMIN, NMAX, M, ROUNDS))
    print()
    print("| what | series/s | against one process | a round: the longest task / "
          "all of it |")
    print("| --- | --- | --- | --- |")
    print("| one process, gpud.signal.lombscargle_many | %.0f | 1.00 | |" % one)
    for w, rate, worst, conns, wall, task_s, ntask in rows:
        print("| gpud.dask.lombscargle, %d worker process%s | %.0f | %.2f | %.0f / %.0f ms |"
              % (w, "" if w == 1 else "es", rate, rate / one, task_s * 1e3, wall * 1e3))


if __name__ == "__main__":
    main()
