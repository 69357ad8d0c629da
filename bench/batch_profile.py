"""bench/batch_profile.py — where survey (b)'s time goes: the CPU time of gpud's
threads and of the clients, per run, for 64 clients sending small
lombscargle series (bench/batch_clients), gpud's batching off and on.

  python3 bench/batch_profile.py GPUD BATCH_CLIENTS [BACKEND ...]

For each backend (default: cuda), each of batching off / on
(batch_delay_us = 200), each way of waiting (PROFILE_WAIT, default
default,ring0,quiet: gpud's defaults; ring_spin_us = 0; and ring_spin_us = 0
with poll_us = 0, where the loop sleeps in epoll whenever it has nothing to
do, so its thread's CPU time is its work) and M = 1,000 and M = 1 grid frequencies (N = 3,000
samples, float32; PROFILE_M=1000,1 sets the list), one batch_clients run of 64 clients x 100 calls after a
warm-up run. Prints a markdown table: runs/s, p50, runs a launch (from
/metrics), and CPU microseconds a run of gpud's loop thread (the main
thread: the request path, the ring, the backend's calls), of gpud's other
threads (named: gpud:waiter, nng:*, ...), and of the client process.
A loop at 100% of the wall time is the bottleneck: its microseconds a run
then bound runs/s by 1e6 / that.

CPU times come from /proc/PID/task/TID/stat (clock ticks) and os.times()'s
children's times around the client's run.
"""
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS, CALLS, N = 64, 100, 3_000
DELAY_US, PORT = 200, 19410
TICK = os.sysconf("SC_CLK_TCK")


def threads(pid):
    """{tid: (name, cpu seconds)} of pid's threads."""
    out = {}
    base = "/proc/%d/task" % pid
    for t in os.listdir(base):
        try:
            with open("%s/%s/stat" % (base, t)) as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        out[int(t)] = (name, (int(f[11]) + int(f[12])) / TICK)
    return out


def loop_stats(pid):
    """The loop thread's (user s, system s, voluntary and involuntary context
    switches, read and write system calls) so far."""
    base = "/proc/%d/task/%d/" % (pid, pid)
    with open(base + "stat") as f:
        st = f.read()
    fl = st[st.rindex(")") + 2:].split()
    out = {"user": int(fl[11]) / TICK, "sys": int(fl[12]) / TICK}
    with open(base + "status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                out[k] = int(v)
    try:
        with open(base + "io") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("syscr", "syscw"):
                    out[k] = int(v)
    except OSError:  # not readable here
        pass
    return out


def metric(port, names):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read()
    got = dict.fromkeys(names, 0.0)
    for line in text.decode().splitlines():
        for k in names:
            if line.startswith(k + " ") or line.startswith(k + "{"):
                got[k] += float(line.split()[-1])
    return got


def start(gpud, backend, tmp, name, conf):
    sock = os.path.join(tmp, name + ".sock")
    cfg = os.path.join(tmp, name + ".conf")
    with open(cfg, "w") as f:
        f.write("[gpud]\nlisten = ipc://%s\nmetrics_listen = 127.0.0.1:%d\n%s"
                % (sock, PORT, conf))
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen([gpud, "--config", cfg, "--backend", backend], stdout=log,
                         stderr=log)
    t_end = time.monotonic() + 60
    while True:  # ready: /metrics answers and says so
        try:
            if metric(PORT, ["gpud_ready"])["gpud_ready"] == 1:
                return p, "ipc://" + sock
        except OSError:
            pass
        if p.poll() is not None:
            raise SystemExit("gpud exited with %d: %s"
                             % (p.returncode, open(log.name).read()[-2000:]))
        if time.monotonic() > t_end:
            raise SystemExit("gpud did not get ready in 60 s")
        time.sleep(0.05)


def clients(exe, url, m):
    p = subprocess.Popen([exe, url, str(CLIENTS), str(CALLS), str(N), str(m), "float32"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=600)
    if p.returncode != 0:
        raise SystemExit("batch_clients failed: %s" % err)
    f = out.split()
    return dict(zip(f[0::2], map(float, f[1::2])))


WAITS = {
    "default": "",
    # the loop sleeps in epoll between requests instead of polling the rings
    "ring0": "ring_spin_us = 0\n",
    # ... and leaves every job's end to the waiter thread instead of polling
    # young ones: it then sleeps whenever it has nothing to do, so its
    # thread's CPU time is its work (the latency is not the default's)
    "quiet": "ring_spin_us = 0\npoll_us = 0\n",
}


def one(gpud, exe, backend, batching, wait, m, tmp):
    conf = ""
    if batching:
        conf += "batch_delay_us = %d\nbatch_max = %d\nbatch_max_work = %d\n" % (
            DELAY_US, CLIENTS, N * max(m, 1000))
    conf += WAITS[wait]
    p, url = start(gpud, backend, tmp, "g", conf)
    try:
        clients(exe, url, m)  # warm-up: pools, staging, rings
        before = threads(p.pid)
        lb = loop_stats(p.pid)
        mb = metric(PORT, ["gpud_batches_total", "gpud_batched_runs_total"])
        r0 = os.times()
        r = clients(exe, url, m)
        r1 = os.times()
        after = threads(p.pid)
        la = loop_stats(p.pid)
        ma = metric(PORT, ["gpud_batches_total", "gpud_batched_runs_total"])
    finally:
        p.terminate()
        p.wait(60)
    runs = r["runs"]
    wall = r["seconds"]
    per = {}
    for tid, (name, cpu) in after.items():
        d = cpu - before.get(tid, (name, 0.0))[1]
        key = "loop" if tid == p.pid else name
        per[key] = per.get(key, 0.0) + d
    loop = per.pop("loop", 0.0)
    others = sorted(per.items(), key=lambda kv: -kv[1])
    client = (r1.children_user + r1.children_system) - (r0.children_user + r0.children_system)
    nb = ma["gpud_batches_total"] - mb["gpud_batches_total"]
    nr = ma["gpud_batched_runs_total"] - mb["gpud_batched_runs_total"]
    return {
        "rate": r["runs_per_s"], "p50": r["p50_us"],
        "per_launch": nr / nb if nb else 1.0,
        "loop_us": loop / runs * 1e6, "loop_pct": 100 * loop / wall,
        "others": ", ".join("%s %.1f" % (k, v / runs * 1e6) for k, v in others[:4] if v > 0),
        "others_us": sum(v for _, v in others) / runs * 1e6,
        "client_us": client / runs * 1e6,
        # the loop's time in the kernel, its switches and system calls a run
        "loop_sys_us": (la["sys"] - lb["sys"]) / runs * 1e6,
        "loop_cs": sum(la.get(k, 0) - lb.get(k, 0) for k in
                       ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")) / runs,
        "loop_calls": sum(la.get(k, 0) - lb.get(k, 0) for k in ("syscr", "syscw")) / runs,
    }


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: batch_profile.py GPUD BATCH_CLIENTS [BACKEND ...]")
    gpud, exe = sys.argv[1:3]
    backends = sys.argv[3:] or ["cuda"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            for m in [int(v) for v in os.environ.get("PROFILE_M", "1000,1").split(",")]:
                for wait in os.environ.get("PROFILE_WAIT", "default,ring0,quiet").split(","):
                    for batching in (False, True):
                        r = one(gpud, exe, backend, batching, wait, m, tmp)
                        rows.append((backend, m, wait, batching, r))
                        print("%s M=%d %s batching %s: %s" % (
                            backend, m, wait, "on" if batching else "off", r),
                              file=sys.stderr, flush=True)
    print("%d clients x %d calls, N = %d, float32; CPU microseconds a run" % (CLIENTS, CALLS, N))
    print()
    print("| backend | M | waits | batching | runs/s | p50 µs | runs a launch | loop µs "
          "(% of wall) | of it in the kernel µs; switches; read/write calls | "
          "other gpud threads µs (top 4) | clients µs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for backend, m, wait, batching, r in rows:
        print("| %s | %d | %s | %s | %.0f | %.0f | %.1f | %.1f (%.0f%%) | %.1f; %.2f; %.2f "
              "| %.1f: %s | %.1f |" % (
                  backend, m, wait, "on" if batching else "off", r["rate"],
                  r["p50"], r["per_launch"], r["loop_us"], r["loop_pct"], r["loop_sys_us"],
                  r["loop_cs"], r["loop_calls"], r["others_us"], r["others"], r["client_us"]))


if __name__ == "__main__":
    main()
