"""bench/fresh_gpuctl.py — what a fresh gpuctl process costs, start to exit, against a warm gpud.

Times, as fresh processes (posix_spawn + waitpid, python_first_result.timed):
  - `true`                   a process that does nothing (coreutils' true): what spawning
                             and reaping any process costs here, the floor under every row;
  - `nng start|dial|ping|ping2`  bench/nng_fresh (beside the last build's gpuctl, in
                             bench/; left out where there is none): a fresh process with
                             gpuctl's nng and nothing of gpud's, that opens a REQ socket,
                             then also dials an echo on ipc://, then also makes one
                             16-byte round trip, then two (gpuctl status: hello, status):
                             the floor under `gpuctl status`;
  - `gpuctl --version`       exec, loading, exit: gpuctl's own floor;
  - `gpuctl status`          + connect, hello, one request, close;
  - `gpuctl run lombscargle` on 114 samples (the README's row), 2**20 frequencies on
    [0.01, 10], float32 and float64, the frequencies as the grid f0 df nf and as a .npy
    file, the output written with -o.
Each build directory given (it holds gpud and gpuctl) gets a gpud of its own (BACKEND, on a
socket in a temporary directory), so an old build and a new one are timed in one run: every
command of every build once per round, interleaved round by round (drift hits all alike);
`true` and nng_fresh, the same for every build, once a round, in the first column.
The outputs of every build are checked against each other. Prints, per command, the
median and the 10th-90th percentile in ms, one column per build; for the runs also the
wall time less the time gpud spent on the run (`--json`'s elapsed_us: what is the client's,
the round trips' and the file I/O's, the part to compare where the cpu backend's kernel
takes 100 ms and more). --phases then runs each command of the last build ROUNDS more times
with -v and prints
the median of each step gpuctl's trace names (connect, each round trip, reads, the write,
the close), the breakdown of where a fresh process's time goes.

  python3 bench/fresh_gpuctl.py [--backend cpu|cuda] [--rounds N] [--phases] [--no-file] DIR...

e.g. `python3 bench/fresh_gpuctl.py --backend cpu --rounds 40 /work/main/build-cpu build-cpu`
(the first directory is the baseline). Default: backend cpu, 30 rounds.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpud_proc  # noqa: E402  (starting gpud)
import python_first_result as pfr  # noqa: E402  (its timer)
import readme_table as rt  # noqa: E402  (its percentile)

NX, NF, F_LO, F_HI = 114, 1 << 20, 0.01, 10.0
TRUE = shutil.which("true") or "/bin/true"


def echo(probe, d):
    """nng_fresh serve on a socket in d: the peer of the nng rows (it exits with our stdin)."""
    url = "ipc://%s/echo.sock" % d
    proc = subprocess.Popen([probe, "serve", url], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    if proc.stdout.readline().strip() != b"ready":
        proc.kill()
        raise SystemExit("fresh_gpuctl: %s serve %s did not start" % (probe, url))
    return proc, url


def start(gpud, d, backend):
    return gpud_proc.start(gpud, d, backend, "fresh_gpuctl", ("--log-level", "warn"))


TRACE = re.compile(r"^gpuctl: +[0-9.]+ ms \(\+ *([0-9.]+)\) (.*)$")


def step_name(text):
    """A trace line's text without its numbers and paths: the same step in every run."""
    text = re.sub(r"\(in gpud .*\)", "", text)
    text = re.sub(r"[0-9]+ bytes", "N bytes", text)
    text = re.sub(r"\([0-9]+ bytes\)", "", text)
    text = re.sub(r"\S*/\S*", "PATH", text)  # files, URLs
    return text.strip()


def phases(a, cmds, rows, env):
    """Each command of the last build ROUNDS times with -v: the median of each traced step."""
    print("\nwhere the time goes (gpuctl -v, medians of %d runs; the first step counts from "
          "main(), after exec and loading), ms:" % a.rounds)
    b, d = len(a.dirs) - 1, a.dirs[-1]  # the last build given: the new one
    for r in rows:
        if r != "status" and not r.startswith(("grid", "file")):  # gpuctl's steps only
            continue
        argv = list(cmds[(b, r)])
        argv.insert(1, "-v")
        steps = {}
        for _ in range(a.rounds):
            with tempfile.TemporaryFile() as err:
                subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=err, check=True)
                err.seek(0)
                for i, line in enumerate(err.read().decode().splitlines()):
                    m = TRACE.match(line)
                    if m:
                        steps.setdefault((i, step_name(m.group(2))), []).append(
                            float(m.group(1)))
        print("%s, %s:" % (os.path.relpath(d), r))
        for (_, name), v in sorted(steps.items()):
            print("  %8.3f  %s" % (statistics.median(v), name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--phases", action="store_true")
    ap.add_argument("--no-file", action="store_true",
                    help="leave out the runs with freqs from a file (seconds each on the cpu "
                         "backend)")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    import numpy as np
    top = tempfile.mkdtemp(prefix="gpud-fresh-", dir="/tmp")
    procs = []
    try:
        rng = np.random.default_rng(12345)
        x = np.sort(rng.uniform(0, 10 * np.pi, NX))
        y = np.sin(x) + 0.1 * rng.standard_normal(NX)
        f = np.linspace(F_LO, F_HI, NF)
        f0, df = F_LO, (F_HI - F_LO) / (NF - 1)
        for dt in ("float32", "float64"):
            for name, v in (("x", x), ("y", y), ("f", f)):
                np.save(os.path.join(top, "%s_%s.npy" % (name, dt)), v.astype(dt))
        cmds = {}  # (build, row) -> argv; the floors under build 0 alone
        rows = ["true"]
        cmds[(0, "true")] = [TRUE]
        probe = os.path.join(os.path.abspath(a.dirs[-1]), "bench", "nng_fresh")
        if os.access(probe, os.X_OK):
            proc, eurl = echo(probe, top)
            procs.append(proc)
            for mode in ("start", "dial", "ping", "ping2"):
                rows.append("nng " + mode)
                cmds[(0, "nng " + mode)] = [probe, mode, eurl]
        for b, d in enumerate(a.dirs):
            d = os.path.abspath(d)
            sd = os.path.join(top, "b%d" % b)
            os.mkdir(sd)
            proc, url = start(os.path.join(d, "gpud"), sd, a.backend)
            procs.append(proc)
            ctl = os.path.join(d, "gpuctl")
            mine = {"version": [ctl, "--version"],
                    "status": [ctl, "--url", url, "status"]}
            for dt in ("float32", "float64"):
                p = lambda n: os.path.join(top, "%s_%s.npy" % (n, dt))  # noqa: E731
                base = [ctl, "--url", url, "run", "lombscargle", "x=" + p("x"), "y=" + p("y")]
                mine["grid " + dt] = base + ["f0=%.17g" % f0, "df=%.17g" % df, "nf=%d" % NF,
                                             "-o", os.path.join(sd, "grid_%s.npy" % dt),
                                             "--json"]
                if a.no_file:
                    continue
                mine["file " + dt] = base + ["freqs=" + p("f"),
                                             "-o", os.path.join(sd, "file_%s.npy" % dt),
                                             "--json"]
            for k, v in mine.items():
                cmds[(b, k)] = v
                if k not in rows:
                    rows.append(k)
        env = dict(os.environ)
        env.pop("GPUD_URL", None)
        for argv in cmds.values():  # page cache and gpud's first runs: not timed
            pfr.timed(argv, env)
        times = {k: [] for k in cmds}
        client = {k: [] for k in cmds}  # wall less gpud's elapsed_us (runs only)
        for _ in range(a.rounds):
            for k, argv in cmds.items():
                t, out = pfr.timed(argv, env)
                times[k].append(t)
                if "--json" in argv:
                    client[k].append(t - json.loads(out)["elapsed_us"] / 1e3)
        # every build's outputs agree with the first's
        for b in range(1, len(a.dirs)):
            for r in rows:
                if r.startswith(("grid", "file")):
                    name = r.replace(" ", "_") + ".npy"
                    u = np.load(os.path.join(top, "b0", name))
                    v = np.load(os.path.join(top, "b%d" % b, name))
                    tol = 1e-5 if "float32" in r else 1e-12
                    if u.dtype != v.dtype or np.max(np.abs(u - v)) > tol * np.max(np.abs(u)):
                        raise SystemExit("fresh_gpuctl: builds disagree on %s" % r)
        print("fresh gpuctl processes, backend %s, %d rounds, ms: median [p10-p90]"
              % (a.backend, a.rounds))
        w = 26
        print("%-16s" % "" + "".join("%-*s" % (w, os.path.relpath(d)[-w + 2:])
                                      for d in a.dirs))
        for r in rows:
            line = "%-16s" % r
            for b in range(len(a.dirs)):
                t = times.get((b, r))
                line += "%-*s" % (w, "%.2f [%.2f-%.2f]" % (statistics.median(t), rt.pct(t, 10),
                                                           rt.pct(t, 90)) if t else "")
            print(line)
            if client.get((0, r)):
                line = "%-16s" % "  less gpud's"
                for b in range(len(a.dirs)):
                    t = client[(b, r)]
                    line += "%-*s" % (w, "%.2f [%.2f-%.2f]" % (
                        statistics.median(t), rt.pct(t, 10), rt.pct(t, 90)))
                print(line)
        if a.phases:
            phases(a, cmds, rows, env)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
            if p.stdin:
                p.stdin.close()
            if p.stdout:
                p.stdout.close()
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
