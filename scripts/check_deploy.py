#!/usr/bin/env python3
"""make test-deploy: the deployment examples under deploy/ against gpud itself.

  check_deploy.py GPUD GPUCTL

deploy/kubernetes/gpud.yaml: every manifest parses (python3-yaml); the
DaemonSet's gpud flags are flags of `gpud --help`, its probes' gpuctl flags
of `gpuctl --help`; every key of the ConfigMap's gpud.conf is a key that
config/gpud.conf documents, in the section that holds it there; the ipc://
socket lies in the hostPath volume clients mount; the pod asks for
nvidia.com/gpu; the Service's target port is a port of the container and
it keeps the default traffic policy (a pod on a node without gpud gets an
endpoint too); the probes ask /healthz and /readyz of the container's
metrics port, which is gpud.conf's metrics_listen.
deploy/slurm/gpud-job.sh: its gpud flags are gpud's; run with a gpud that
exits at start it ends with gpud's status, says so and keeps gpud's log;
run with a gpud that serves (GPUD with the cpu backend) it runs the job's
command against it and removes the socket's directory. Exits 1 naming each
mismatch.
"""
import os
import re
import stat
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
errors = []


def fail(msg):
    errors.append(msg)


def help_flags(binary, *args):
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True)
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", out.stdout + out.stderr))


def documented_keys():
    """config/gpud.conf's keys (set or commented out), by section."""
    keys, section = {}, None
    with open(os.path.join(ROOT, "config", "gpud.conf")) as f:
        for line in f:
            m = re.match(r"^;?\[([a-z]+)(?: [A-Za-z_]+)?\]", line)
            if m:
                section = m.group(1)
                keys.setdefault(section, set())
                continue
            m = re.match(r"^;?([a-z_]+) = ", line)
            if m and section:
                keys[section].add(m.group(1))
    return keys


def check_conf(text, where):
    keys, section = documented_keys(), None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in ";#":
            continue
        m = re.match(r"^\[([a-z]+)(?: [A-Za-z_]+)?\]$", line)
        if m:
            section = m.group(1)
            if section not in keys:
                fail("%s line %d: section [%s] is not one of gpud.conf's %s"
                     % (where, n, section, sorted(keys)))
            continue
        m = re.match(r"^([a-z_]+)\s*=", line)
        if not m:
            fail("%s line %d: not a 'key = value' line: %r" % (where, n, line))
        elif section is None or m.group(1) not in keys.get(section, ()):
            fail("%s line %d: key %r is not documented in config/gpud.conf's [%s]"
                 % (where, n, m.group(1), section))
    return text


def fake_gpud(d, body):
    """A gpud first on PATH for the Slurm job: body is its shell script."""
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "gpud")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, stat.S_IRWXU)


def check_slurm_runs(slurm, gpud, gpuctl):
    tools = os.path.dirname(os.path.abspath(gpuctl))
    with tempfile.TemporaryDirectory() as tmp:
        # gpud exits at start: the job ends with its status and keeps its log
        bindir, log = os.path.join(tmp, "failing"), os.path.join(tmp, "failing.log")
        fake_gpud(bindir, "echo 'gpud: cuda backend: no CUDA device' >&2\nexit 3\n")
        env = dict(os.environ, PATH=bindir + ":" + tools + ":" + os.environ["PATH"],
                   GPUD_JOB_LOG=log, TMPDIR=tmp)
        r = subprocess.run(["bash", slurm, "true"], env=env, capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 3:
            fail("%s with a gpud that exits 3 at start: exit status %d, expected 3 (stderr: %s)"
                 % (slurm, r.returncode, r.stderr.strip()))
        if "gpud exited with status 3" not in r.stderr or "no CUDA device" not in r.stderr:
            fail("%s with a failing gpud: stderr does not say so with its log: %r"
                 % (slurm, r.stderr))
        if not os.path.exists(log) or "no CUDA device" not in open(log).read():
            fail("%s with a failing gpud: its log %s is gone or empty" % (slurm, log))
        # gpud serves (the cpu backend in its place): the job's command runs against it
        bindir, log = os.path.join(tmp, "serving"), os.path.join(tmp, "serving.log")
        fake_gpud(bindir, 'exec "%s" --listen "$2" --backend cpu --log-level warn\n'
                  % os.path.abspath(gpud))
        env = dict(env, PATH=bindir + ":" + tools + ":" + os.environ["PATH"],
                   GPUD_JOB_LOG=log)
        r = subprocess.run(["bash", slurm, "sh", "-c",
                            'gpuctl status >/dev/null && echo "ran at $GPUD_URL"'],
                           env=env, capture_output=True, text=True, timeout=120)
        m = re.search(r"ran at ipc://(\S+)/gpud\.sock", r.stdout)
        if r.returncode != 0 or not m:
            fail("%s with a serving gpud: exit status %d, output %r, stderr %r"
                 % (slurm, r.returncode, r.stdout, r.stderr))
        elif os.path.exists(m.group(1)):
            fail("%s: the socket's directory %s is left behind" % (slurm, m.group(1)))
        if not os.path.exists(log):
            fail("%s with a serving gpud: its log %s is gone" % (slurm, log))


def main():
    gpud, gpuctl = sys.argv[1], sys.argv[2]
    gflags, cflags = help_flags(gpud), help_flags(gpuctl) | help_flags(gpuctl, "status")
    path = os.path.join(ROOT, "deploy", "kubernetes", "gpud.yaml")
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    kinds = {d["kind"]: d for d in docs}
    for k in ("Namespace", "ConfigMap", "DaemonSet", "Service", "Pod"):
        if k not in kinds:
            fail("%s: no %s" % (path, k))
    conf = check_conf(kinds["ConfigMap"]["data"]["gpud.conf"], path + ": ConfigMap gpud.conf")
    ds = kinds["DaemonSet"]["spec"]["template"]["spec"]
    c = [c for c in ds["containers"] if c["name"] == "gpud"][0]
    for a in c["args"] + c["command"][1:]:
        if a.startswith("--") and a not in gflags:
            fail("%s: gpud flag %s is not in `gpud --help`" % (path, a))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        for a in c.get(probe, {}).get("exec", {}).get("command", [])[1:]:
            if a.startswith("--") and a not in cflags:
                fail("%s: %s: gpuctl flag %s is not in `gpuctl --help`" % (path, probe, a))
    if "nvidia.com/gpu" not in c["resources"]["limits"]:
        fail("%s: the gpud container asks for no nvidia.com/gpu" % path)
    sock = re.search(r"^listen = ipc://(\S+)$", conf, re.M)
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in ds["volumes"]}
    if not sock:
        fail("%s: gpud.conf has no ipc:// listener" % path)
    elif os.path.dirname(sock.group(1)) != mounts.get("socket"):
        fail("%s: the socket %s is not in the 'socket' volume (%s)"
             % (path, sock.group(1), mounts.get("socket")))
    host = vols["socket"]["hostPath"]["path"]
    pod = kinds["Pod"]["spec"]
    if pod["volumes"][0]["hostPath"]["path"] != host:
        fail("%s: the client pod mounts %s, gpud's socket is in %s"
             % (path, pod["volumes"][0]["hostPath"]["path"], host))
    if pod["containers"][0]["env"][0]["value"] != "ipc://" + sock.group(1):
        fail("%s: the client pod's GPUD_URL is not gpud's socket" % path)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    svc = kinds["Service"]["spec"]
    for p in svc["ports"]:
        if p["targetPort"] not in ports:
            fail("%s: the Service's targetPort %s is no port of the container"
                 % (path, p["targetPort"]))
    if svc.get("internalTrafficPolicy", "Cluster") != "Cluster":
        fail("%s: the Service's internalTrafficPolicy %s leaves pods on nodes without gpud "
             "no endpoint" % (path, svc["internalTrafficPolicy"]))
    labels = kinds["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in svc["selector"].items()):
        fail("%s: the Service's selector %s selects no gpud pod (labels %s)"
             % (path, svc["selector"], labels))
    metrics = re.search(r"^metrics_listen = \S*:(\d+)$", conf, re.M)
    if not metrics:
        fail("%s: gpud.conf has no metrics_listen for the probes" % path)
    for probe, want in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                        ("readinessProbe", "/readyz")):
        get = c.get(probe, {}).get("httpGet")
        if not get or get.get("path") != want:
            fail("%s: the %s does not ask %s" % (path, probe, want))
        elif metrics and ports.get(get["port"], get["port"]) != int(metrics.group(1)):
            fail("%s: the %s asks port %s, gpud.conf's metrics_listen is port %s"
                 % (path, probe, get["port"], metrics.group(1)))
    slurm = os.path.join(ROOT, "deploy", "slurm", "gpud-job.sh")
    with open(slurm) as f:
        for line in f:
            if re.match(r"^\s*gpud ", line):
                for a in re.findall(r"\s(--[a-z-]+)", line):
                    if a not in gflags:
                        fail("%s: gpud flag %s is not in `gpud --help`" % (slurm, a))
    check_slurm_runs(slurm, gpud, gpuctl)
    for e in errors:
        print("check-deploy: " + e, file=sys.stderr)
    if not errors:
        print("check-deploy: %d manifests and the Slurm job agree with gpud and gpuctl"
              % len(docs))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
