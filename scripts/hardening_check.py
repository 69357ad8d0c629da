#!/usr/bin/env python3
"""scripts/hardening_check.py — the parsing half of scripts/hardening-check.sh.

  hardening_check.py digest OUT.json < STRACE_OUTPUT
      Reads `strace -f -yy -s N` output of one gpud (and its threads and
      tenant workers) and writes what the unit's restrictions care about:
      every syscall name, socket address families, device nodes opened (with
      major:minor and access), paths written or created, paths read,
      writable+executable mappings, namespaces, realtime scheduling,
      personality, ioctls per device, prctl options, programs executed.
      Streams: the trace itself is never kept.

  hardening_check.py merge TRACEDIR
      Puts every TRACEDIR/digest/*.json into TRACEDIR/digests.json (one
      file to copy back from the GPU machine) and removes them.

  hardening_check.py verify TRACEDIR UNIT
      Checks every digest of TRACEDIR (digests.json, digest/*.json) against UNIT (a gpud.service,
      or systemd/gpud.service.in): syscalls against the expansion of
      SystemCallFilter= (systemd-analyze syscall-filter), families against
      RestrictAddressFamilies=, device nodes against DevicePolicy= and
      DeviceAllow= (names from the traced machine's /proc/devices, saved as
      TRACEDIR/proc-devices), written paths against what ProtectSystem=,
      ProtectHome=, PrivateTmp=, RuntimeDirectory=, CacheDirectory=,
      ReadWritePaths= leave writable, and MemoryDenyWriteExecute=,
      RestrictNamespaces=, RestrictRealtime=, LockPersonality=,
      RestrictSUIDSGID=, NoNewPrivileges=. Prints a report; exit 1 on any
      violation, 2 on a usage or input error.

Paths of the traced run are mapped to the unit's before they are checked
(TRACEDIR/meta: the trace's HOME is the gpud user's home, /var/cache/gpud;
its BINDIR is the unit's @BINDIR@; its working directory is "/", where
systemd starts a service).
"""
import collections
import fnmatch
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile

# --- digest --------------------------------------------------------------------------------

LINE = re.compile(r"^(\d+) +(.*)$")
RESUMED = re.compile(r"^<\.\.\. ([A-Za-z0-9_]+) resumed>(.*)$")
CALL = re.compile(r"^([A-Za-z0-9_]+)\((.*)$")
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
FD_PATH = re.compile(r"^(?:AT_FDCWD|-?\d+)<(.*)>$")
RETURN = re.compile(r"\) +=")
CHARDEV = re.compile(r"<char (\d+):(\d+)>>?$")
WRITE_CALLS = {
    "mkdir": [0], "mkdirat": [0], "rmdir": [0], "unlink": [0], "unlinkat": [0],
    "rename": [0, 1], "renameat": [0, 1], "renameat2": [0, 1], "link": [1], "linkat": [1],
    "symlink": [1], "symlinkat": [1], "chmod": [0], "fchmodat": [0], "chown": [0],
    "lchown": [0], "fchownat": [0], "truncate": [0], "utimensat": [0], "utimes": [0],
    "mknod": [0], "mknodat": [0], "setxattr": [0], "lsetxattr": [0], "removexattr": [0],
}
READ_CALLS = {"execve", "execveat", "readlink", "readlinkat", "access", "faccessat",
              "faccessat2", "stat", "lstat", "newfstatat", "statx", "opendir"}


def unescape(s):
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape", "replace")


def split_args(text):
    """Top-level comma-separated arguments of a call's argument text."""
    out, depth, cur, q, esc = [], 0, [], False, False
    for ch in text:
        if q:
            cur.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                q = False
            continue
        if ch == '"':
            q = True
        elif ch in "{[(<":
            depth += 1
        elif ch in "}])>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def fd_dir(arg):
    """The directory an *at() call's dirfd names (strace -yy), or None."""
    m = FD_PATH.match(arg)
    return re.sub(r"<(?:char|block) \d+:\d+>$", "", m.group(1)) if m else None


def resolve(dirarg, path):
    if path.startswith("/"):
        return os.path.normpath(path)
    d = fd_dir(dirarg) if dirarg is not None else None
    if d is None:
        return "rel:" + path if path else "(empty path)"
    return os.path.normpath(os.path.join(d, path))


def access_of(flags):
    if "O_RDWR" in flags:
        return "rw"
    if "O_WRONLY" in flags:
        return "w"
    return "r"


class Digest:
    def __init__(self):
        self.d = collections.defaultdict(collections.Counter)
        self.pending = {}
        self.first_pid = None
        self.exit = None

    def add(self, kind, *key):
        self.d[kind]["\t".join(key)] += 1

    def line(self, raw):
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            return
        pid, rest = int(m.group(1)), m.group(2)
        if self.first_pid is None:
            self.first_pid = pid
        if rest.startswith("+++ "):
            if pid == self.first_pid:
                self.exit = rest.strip("+ ")
            return
        if rest.startswith("---"):
            return
        if rest.startswith("[ Process") and "mode" in rest:
            self.add("arch", rest)
            return
        r = RESUMED.match(rest)
        if r:
            head = self.pending.pop(pid, None)
            if head is None:
                self.add("syscall", r.group(1), "?")
                return
            rest = head + r.group(2)
        elif rest.endswith("<unfinished ...>"):
            self.pending[pid] = rest[: -len("<unfinished ...>")].rstrip()
            return
        c = CALL.match(rest)
        if not c:
            return
        self.call(c.group(1), c.group(2))

    def call(self, name, tail):
        ends = list(RETURN.finditer(tail))
        if not ends:
            args_text, ret = tail.rstrip(")"), "?"
        else:
            args_text, ret = tail[: ends[-1].start()], tail[ends[-1].end():].strip()
        ok = not (ret.startswith("-") or ret.startswith("?"))
        res = "ok" if ok else (ret.split()[1] if ret.startswith("-1 ") and len(ret.split()) > 1
                               else ret.split()[0] if ret else "?")
        self.add("syscall", name, "ok" if ok else "fail")
        args = split_args(args_text)
        if name in ("socket", "socketpair") and args:
            proto = args[2] if len(args) > 2 and not args[2].isdigit() else "-"
            self.add("family", name, args[0], proto, res)
        elif name in ("open", "openat", "openat2", "creat"):
            self.open_call(name, args, ret, ok, res)
        elif name == "bind" and len(args) > 1 and "sun_path=\"" in args[1]:
            p = QUOTED.search(args[1].split("sun_path=", 1)[1])
            if p:
                self.add("write", "bind", os.path.normpath(unescape(p.group(1))), res)
        elif name in WRITE_CALLS:
            self.path_call(name, args, res)
        elif name in ("fchmod", "fchown", "ftruncate") and args:
            d = fd_dir(args[0])
            if d and d.startswith("/") and not d.startswith("/memfd:"):
                if name != "ftruncate":
                    self.add("write", name, d, res)
            if name == "fchmod" and len(args) > 1:
                self.suid(args[1], res)
        elif name in READ_CALLS:
            qs = [a for a in args if a.startswith('"')]
            if qs:
                at = name.endswith("at") or name.endswith("at2") or name == "statx"
                dirarg = args[0] if at else None
                p = resolve(dirarg, unescape(qs[0][1:-1]))
                self.add("read", name, p, res)
                if name in ("execve", "execveat"):
                    self.add("exec", p, res)
        elif name in ("mmap", "mmap2") and len(args) > 2:
            prot = args[2]
            if "PROT_WRITE" in prot and "PROT_EXEC" in prot:
                src = fd_dir(args[4]) if len(args) > 4 else None
                self.add("wx", name, prot, src or "anonymous", res)
        elif name in ("mprotect", "pkey_mprotect") and len(args) > 2:
            if "PROT_EXEC" in args[2]:
                self.add("wx", name, args[2], "-", res)
        elif name in ("clone", "clone3", "unshare", "setns"):
            flags = re.findall(r"CLONE_NEW[A-Z]+", args_text)
            if flags:
                self.add("ns", name, "|".join(sorted(set(flags))), res)
        elif name in ("sched_setscheduler", "sched_setattr"):
            pol = re.findall(r"SCHED_(?:FIFO|RR|DEADLINE)", args_text)
            if pol:
                self.add("realtime", name, pol[0], res)
        elif name == "personality":
            self.add("personality", args[0] if args else "?", res)
        elif name == "ioctl" and len(args) > 1:
            d = CHARDEV.sub("", fd_dir(args[0]) or "?")
            if not d.startswith("/"):
                d = re.sub(r"[:\[].*", "", d)  # sockets, anon inodes: by kind
                self.add("ioctl", d, "-", res)
            else:
                self.add("ioctl", d, args[1], res)
        elif name == "prctl" and args:
            self.add("prctl", args[0], res)
        elif name in ("capset", "capget", "setuid", "setgid", "setresuid", "setresgid",
                      "setgroups"):
            self.add("ids", name, res)

    def suid(self, mode, res):
        try:
            if int(mode, 8) & 0o6000:
                self.add("suid", mode, res)
        except ValueError:
            pass

    def open_call(self, name, args, ret, ok, res):
        qs = [i for i, a in enumerate(args) if a.startswith('"')]
        if not qs:
            return
        i = qs[0]
        dirarg = args[0] if name in ("openat", "openat2") and i > 0 else None
        path = resolve(dirarg, unescape(args[i][1:-1]))
        flags = args[i + 1] if i + 1 < len(args) else "O_RDONLY"
        if name == "creat":
            flags = "O_WRONLY|O_CREAT|O_TRUNC"
        acc = access_of(flags)
        real = path
        dev = None
        m = re.match(r"^\d+<(.*)>$", ret) if ok else None
        if m:
            real = m.group(1)
            cm = re.search(r"<char (\d+):(\d+)>$", real)
            if cm:
                dev = "%s:%s" % (cm.group(1), cm.group(2))
                real = real[: cm.start()]
        if dev is not None or (real.startswith("/dev/") and not real.startswith("/dev/shm/")
                               and not ok):
            self.add("dev", real, dev or "-", acc, res)
            return
        if acc != "r" or "O_CREAT" in flags or "O_TRUNC" in flags:
            self.add("write", name + ":" + acc, real, res)
        else:
            self.add("read", name, real, res)

    def path_call(self, name, args, res):
        qs = [i for i, a in enumerate(args) if a.startswith('"')]
        for k in WRITE_CALLS[name]:
            if k >= len(qs):
                continue
            i = qs[k]
            at = name.endswith("at") or name.endswith("at2")
            dirarg = args[i - 1] if at and i > 0 else None
            self.add("write", name, resolve(dirarg, unescape(args[i][1:-1])), res)
        if name in ("chmod", "fchmodat") and qs:
            mode = args[qs[0] + 1] if qs[0] + 1 < len(args) else "0"
            self.suid(mode, res)

    def result(self):
        out = {k: dict(v) for k, v in self.d.items()}
        out["main_exit"] = self.exit or "unknown (trace cut short)"
        return out


def cmd_digest(outpath):
    # strace starts this before it execs gpud, so it would be in the tests' process group,
    # which Check kills (SIGKILL) when a test ends: leave it at once, and finish the digest.
    try:
        os.setsid()
    except OSError:
        pass
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    dg = Digest()
    for raw in sys.stdin.buffer:
        try:
            dg.line(raw.decode("utf-8", "replace"))
        except Exception as e:  # one odd line must not lose the whole trace
            dg.add("unparsed", type(e).__name__)
    tmp = outpath + ".tmp"
    with open(tmp, "w") as f:
        json.dump(dg.result(), f, indent=0, sort_keys=True)
    os.rename(tmp, outpath)
    return 0


# --- verify --------------------------------------------------------------------------------

def unit_settings(path):
    """[Service] (and [Unit]) assignments of a unit file, in order: key -> list of values."""
    out = collections.defaultdict(list)
    text = open(path).read().replace("\\\n", " ")
    for ln in text.splitlines():
        ln = ln.strip()
        if not ln or ln[0] in "#;[" or "=" not in ln:
            continue
        k, v = ln.split("=", 1)
        out[k.strip()].append(v.strip())
    return out


def yes(settings, key, default=False):
    v = settings.get(key)
    if not v:
        return default
    return v[-1].lower() in ("yes", "true", "1", "on", "strict", "full")


def syscall_groups():
    """Every @group of systemd-analyze syscall-filter -> its members (names and @groups)."""
    try:
        txt = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager"], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("hardening-check: verify needs systemd-analyze (Debian's systemd): %s" % e)
    groups, cur = {}, None
    for ln in txt.splitlines():
        if ln.startswith("@"):
            cur = ln.split()[0]
            groups[cur] = []
        elif cur and ln.startswith("    ") and not ln.strip().startswith("#"):
            groups[cur].append(ln.split()[0])
        elif not ln.strip():
            cur = None
    return groups


def expand(item, groups, seen=None):
    seen = seen or set()
    if not item.startswith("@"):
        return {item}
    if item in seen:
        return set()
    seen.add(item)
    out = set()
    for m in groups.get(item, []):
        out |= expand(m, groups, seen)
    return out


def syscall_filter(settings, groups):
    """(allowed set or None for everything, deny set)."""
    allow, deny, mode = None, set(), None
    for v in settings.get("SystemCallFilter", []):
        if v == "":
            allow, deny, mode = None, set(), None
            continue
        neg = v.startswith("~")
        items = [w.split(":")[0] for w in v.lstrip("~").split()]
        names = set()
        for w in items:
            names |= expand(w, groups)
        if mode is None:
            mode = "deny" if neg else "allow"
            if mode == "allow":
                allow = set()
        if mode == "allow":
            if neg:
                allow -= names
            else:
                allow |= names
        else:
            if neg:
                deny |= names
            else:
                deny -= names
    return allow, deny


def proc_devices(path):
    """char major -> [names] from a saved /proc/devices."""
    majors = collections.defaultdict(list)
    sect = None
    try:
        for ln in open(path):
            ln = ln.strip()
            if ln.startswith("Character"):
                sect = "c"
            elif ln.startswith("Block"):
                sect = "b"
            elif sect == "c" and ln:
                num, name = ln.split(None, 1)
                majors[int(num)].append(name)
    except OSError:
        pass
    return majors


# A socket the unit refuses (EAFNOSUPPORT) where the caller copes, as tried.
TOLERATED_FAMILIES = {
    ("AF_NETLINK", "NETLINK_ROUTE"):
        "glibc's getaddrinfo (AI_ADDRCONFIG, nng resolving a tcp:// listener) asks rtnetlink "
        "which addresses exist and, refused, assumes IPv4 and IPv6 both do (tried: the e2e "
        "tcp:// tests pass with socket(AF_NETLINK) refused by seccomp)",
}

PSEUDO = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}


def device_allowed(settings, path, majmin, acc, majors):
    policy = (settings.get("DevicePolicy") or ["auto"])[-1]
    allows = []
    for v in settings.get("DeviceAllow", []):
        if v == "":
            allows = []
            continue
        parts = v.split()
        allows.append((parts[0], parts[1] if len(parts) > 1 else "rwm"))
    if yes(settings, "ProtectClock"):
        allows.append(("char-rtc", "r"))
    if policy == "auto" and not allows:
        return True, "DevicePolicy=auto, no DeviceAllow="
    if policy in ("auto", "closed") and path in PSEUDO:
        return True, "a standard pseudo device"
    names = []
    if majmin != "-":
        names = majors.get(int(majmin.split(":")[0]), [])
    for pat, mode in allows:
        if not all(ch in mode for ch in acc):
            continue
        if pat.startswith("char-"):
            for n in names:
                if fnmatch.fnmatchcase(n, pat[5:]):
                    return True, "DeviceAllow=%s %s (major %s is %s)" % (
                        pat, mode, majmin.split(":")[0], n)
        elif pat == path:
            return True, "DeviceAllow=%s %s" % (pat, mode)
    return False, "major %s is %s in /proc/devices; no DeviceAllow= grants %s" % (
        majmin.split(":")[0] if majmin != "-" else "?", "/".join(names) or "unknown", acc)


def writable_roots(settings):
    roots = []
    for key, base in (("RuntimeDirectory", "/run"), ("CacheDirectory", "/var/cache"),
                      ("StateDirectory", "/var/lib"), ("LogsDirectory", "/var/log")):
        for v in settings.get(key, []):
            for d in v.split():
                roots.append((os.path.join(base, d), key))
    for v in settings.get("ReadWritePaths", []):
        for d in v.split():
            roots.append((d.lstrip("-+"), "ReadWritePaths"))
    if yes(settings, "PrivateTmp"):
        roots += [("/tmp", "PrivateTmp (private)"), ("/var/tmp", "PrivateTmp (private)")]
    return roots


def under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def path_writable(settings, path):
    ps = (settings.get("ProtectSystem") or ["no"])[-1]
    if yes(settings, "ProtectHome") and any(under(path, h) for h in ("/home", "/root",
                                                                      "/run/user")):
        return False, "ProtectHome= hides it"
    for root, why in writable_roots(settings):
        if under(path, root):
            return True, why
    if under(path, "/proc"):
        ro = ("/proc/sys", "/proc/sysrq-trigger", "/proc/latency_stats", "/proc/acpi",
              "/proc/timer_stats", "/proc/fs", "/proc/irq")
        if yes(settings, "ProtectKernelTunables") and any(under(path, r) for r in ro):
            return False, "ProtectKernelTunables= makes it read-only"
        return True, "/proc (the process's own files)"
    if under(path, "/sys"):
        if yes(settings, "ProtectKernelTunables"):
            return False, "ProtectKernelTunables= makes /sys read-only"
        return True, "/sys"
    if under(path, "/dev"):
        return True, "/dev (API file system)"
    if ps == "strict":
        return False, "ProtectSystem=strict makes it read-only"
    if ps in ("full", "yes", "true"):
        ro = ["/usr", "/boot", "/efi"] + (["/etc"] if ps == "full" else [])
        if any(under(path, r) for r in ro):
            return False, "ProtectSystem=%s makes it read-only" % ps
    if under(path, "/tmp") or under(path, "/var/tmp"):
        return True, "/tmp"
    return True, "not protected"


def generic(p):
    """A path with its per-run parts (pids, mkdtemp suffixes) made generic."""
    p = re.sub(r"^/proc/\d+", "/proc/PID", p)
    p = re.sub(r"/task/\d+", "/task/TID", p)
    p = re.sub(r"/ComputeCache/.+", "/ComputeCache/...", p)  # the CUDA driver's JIT cache
    p = re.sub(r"(cuda\.shm\.\d+\.)[0-9a-f]+", r"\1PID", p)  # the CUDA driver's per-process shm
    p = re.sub(r"\b[0-9a-f]{12,}\b", "HASH", p)
    p = re.sub(r"\.\d+\.tmp$", ".PID.tmp", p)
    return re.sub(r"([.-])[A-Za-z0-9]{6}(?=/|$)", r"\1XXXXXX", p)


def read_meta(tracedir):
    meta = {}
    try:
        for ln in open(os.path.join(tracedir, "meta")):
            if "=" in ln:
                k, v = ln.rstrip("\n").split("=", 1)
                meta[k] = v
    except OSError:
        pass
    return meta


def mapper(meta, home):
    maps = []
    if meta.get("TMPDIR"):
        maps.append((meta["TMPDIR"], "/tmp"))
    if meta.get("HOME"):
        maps.append((meta["HOME"], home))
    if meta.get("CWD"):
        maps.append((meta["CWD"], "/"))
    if meta.get("BINDIR"):
        maps.append((meta["BINDIR"], "@BINDIR@"))

    def f(p):
        if not p.startswith("/") and not p.startswith("rel:"):
            return p
        if p == "rel:":
            return "(empty path)"
        if p.startswith("rel:"):
            return "/" + p[4:]  # a service's working directory is /
        for a, b in maps:
            if under(p, a):
                return os.path.normpath(b + p[len(a):]) if p != a else b
        return p
    return f


def unpack(tracedir):
    """A TRACEDIR the trace mode packed (trace.tgz): unpacked into a temporary directory."""
    tgz = os.path.join(tracedir, "trace.tgz")
    if os.path.exists(os.path.join(tracedir, "digests.json")) or not os.path.exists(tgz):
        return tracedir
    tmp = tempfile.mkdtemp(prefix="hc-verify.")
    with tarfile.open(tgz) as t:
        t.extractall(tmp)
    return tmp


def load_digests(tracedir):
    """name -> digest, from TRACEDIR/digests.json and TRACEDIR/digest/*.json."""
    out = {}
    try:
        out.update(json.load(open(os.path.join(tracedir, "digests.json"))))
    except OSError:
        pass
    for fn in sorted(glob.glob(os.path.join(tracedir, "digest", "*.json"))):
        out[os.path.basename(fn)] = json.load(open(fn))
    return out


def cmd_merge(tracedir):
    digests = load_digests(tracedir)
    tmp = os.path.join(tracedir, "digests.json.tmp")
    with open(tmp, "w") as f:
        json.dump(digests, f, sort_keys=True)
    os.rename(tmp, os.path.join(tracedir, "digests.json"))
    for fn in glob.glob(os.path.join(tracedir, "digest", "*.json")):
        os.remove(fn)
    print("hardening-check: %d digests in %s/digests.json" % (len(digests), tracedir))
    return 0


def cmd_verify(tracedir, unit):
    tracedir = unpack(tracedir)
    settings = unit_settings(unit)
    meta = read_meta(tracedir)
    home = meta.get("UNIT_HOME", "/var/cache/gpud")
    mp = mapper(meta, home)
    digests = load_digests(tracedir)
    if not digests:
        print("hardening-check: no digests in %s (digests.json or digest/*.json)" % tracedir,
              file=sys.stderr)
        return 2
    files = digests
    agg = collections.defaultdict(collections.Counter)
    cut = 0
    for d in digests.values():
        if str(d.get("main_exit", "")).startswith("unknown"):
            cut += 1
        for kind, counts in d.items():
            if isinstance(counts, dict):
                for k, n in counts.items():
                    agg[kind][k] += n
    violations, notes = [], []

    def section(title):
        print("\n== " + title)

    print("hardening-check verify: %d traced gpud processes from %s (%s backend, %s)"
          % (len(files), tracedir, meta.get("BACKEND", "?"), meta.get("HOST", "?")))
    print("against %s" % unit)
    if cut:
        notes.append("%d traces end before gpud's exit (killed tests): their digests are "
                     "partial" % cut)

    # syscalls
    groups = syscall_groups()
    allow, deny = syscall_filter(settings, groups)
    calls = collections.Counter()
    fails = collections.Counter()
    for k, n in agg["syscall"].items():
        name, how = k.split("\t")
        calls[name] += n
        if how == "fail":
            fails[name] += n
    section("system calls: %d distinct, %d calls" % (len(calls), sum(calls.values())))
    bad = []
    for name in sorted(calls):
        blocked = (allow is not None and name not in allow) or name in deny
        if blocked:
            bad.append(name)
    print("  used: " + " ".join(sorted(calls)))
    if bad:
        for name in bad:
            groups_of = sorted(g for g in groups if name in expand(g, groups))
            msg = "%s (%d calls, %d failed in the trace) is outside SystemCallFilter= " \
                  "(in %s)" % (name, calls[name], fails[name], " ".join(groups_of) or "no group")
            violations.append("syscall " + msg)
            print("  VIOLATION " + msg)
    elif allow is not None or deny:
        print("  ok: all within SystemCallFilter=%s" % " / ".join(settings["SystemCallFilter"]))
    for k in agg.get("arch", {}):
        if yes(settings, "SystemCallArchitectures") or settings.get("SystemCallArchitectures"):
            violations.append("a process ran in another ABI: " + k)

    # address families
    section("socket address families")
    rafs = settings.get("RestrictAddressFamilies", [])
    allowed_af, denied_af = None, set()
    for v in rafs:
        if v == "":
            allowed_af, denied_af = None, set()
        elif v.startswith("~"):
            denied_af |= set(v[1:].split())
        else:
            allowed_af = (allowed_af or set()) | set(v.split())
    for k, n in sorted(agg["family"].items()):
        call, fam, proto, res = k.split("\t")
        ok = (allowed_af is None or fam in allowed_af) and fam not in denied_af
        line = "%s(%s%s) x%d: %s" % (call, fam, ", " + proto if proto != "-" else "", n, res)
        if ok:
            print("  ok " + line)
        elif (fam, proto) in TOLERATED_FAMILIES:
            print("  ok " + line + ": refused under the unit; " + TOLERATED_FAMILIES[(fam, proto)])
        elif res != "ok":
            print("  note " + line + " (refused anyway; the unit makes it EAFNOSUPPORT)")
            notes.append("socket family %s tried and failed in the trace" % fam)
        else:
            print("  VIOLATION " + line + " outside RestrictAddressFamilies=")
            violations.append("address family %s" % fam)

    # devices
    section("device nodes")
    majors = proc_devices(os.path.join(tracedir, "proc-devices"))
    for k, n in sorted(agg["dev"].items()):
        path, mm, acc, res = k.split("\t")
        if res != "ok":
            print("  note %s (%s) x%d: %s in the trace" % (path, acc, n, res))
            continue
        ok, why = device_allowed(settings, path, mm, acc, majors)
        line = "%s %s %s x%d: %s" % (path, mm, acc, n, why)
        print(("  ok " if ok else "  VIOLATION ") + line)
        if not ok:
            violations.append("device " + line)

    # writes
    section("paths written or created (as the unit sees them; temporary names as XXXXXX)")
    written = collections.Counter()
    for k, n in agg["write"].items():
        op, path, res = k.split("\t")
        if res == "ok":
            written[(op.split(":")[0], generic(mp(path)))] += n
    for (op, p), n in sorted(written.items(), key=lambda x: (x[0][1], x[0][0])):
        ok, why = path_writable(settings, p)
        line = "%s %s x%d: %s" % (op, p, n, why)
        print(("  ok " if ok else "  VIOLATION ") + line)
        if not ok:
            violations.append("write " + line)

    failed = collections.Counter()
    for k, n in agg["write"].items():
        op, path, res = k.split("\t")
        if res not in ("ok", "EEXIST"):
            failed[(op.split(":")[0], generic(mp(path)), res)] += n
    if failed:
        section("writes that failed in the trace as well (not checked)")
        for (op, p, res), n in sorted(failed.items(), key=lambda x: x[0][1]):
            print("  note %s %s x%d: %s" % (op, p, n, res))

    # reads hidden by ProtectHome=
    if yes(settings, "ProtectHome"):
        section("paths read under /home, /root, /run/user (ProtectHome= hides them)")
        hidden = sorted({mp(k.split("\t")[1]) for k, n in agg["read"].items()
                         if k.split("\t")[2] == "ok"
                         and any(under(mp(k.split("\t")[1]), h)
                                 for h in ("/home", "/root", "/run/user"))})
        for p in hidden:
            print("  VIOLATION read " + p)
            violations.append("read under a hidden home: " + p)
        if not hidden:
            print("  ok: none")

    # W^X
    section("writable+executable memory (MemoryDenyWriteExecute=)")
    mdwe = yes(settings, "MemoryDenyWriteExecute")
    wx = sorted(agg["wx"].items())
    for k, n in wx:
        call, prot, src, res = k.split("\t")
        line = "%s %s %s x%d: %s" % (call, prot, mp(src) if src.startswith("/") else src, n,
                                    res)
        print(("  VIOLATION " if mdwe and res == "ok" else "  seen ") + line)
        if mdwe and res == "ok":
            violations.append("W^X " + line)
    if not wx:
        print("  none seen")
    elif not mdwe:
        print("  (MemoryDenyWriteExecute= is off: these are why it must stay off)")

    # namespaces, realtime, personality, suid, exec
    section("namespaces, realtime, personality, set-id bits, programs executed")
    for kind, key, what in (("ns", "RestrictNamespaces", "namespace"),
                            ("realtime", "RestrictRealtime", "realtime policy"),
                            ("suid", "RestrictSUIDSGID", "set-id mode")):
        for k, n in sorted(agg[kind].items()):
            okres = k.split("\t")[-1] == "ok"
            bad = yes(settings, key) and okres
            print(("  VIOLATION " if bad else "  seen ") + "%s: %s x%d" % (what, k, n))
            if bad:
                violations.append("%s %s against %s=" % (what, k, key))
    for k, n in sorted(agg["personality"].items()):
        arg = k.split("\t")[0]
        bad = yes(settings, "LockPersonality") and arg not in ("0xffffffff", "PER_LINUX",
                                                                "0")
        print(("  VIOLATION " if bad else "  seen ") + "personality(%s) x%d" % (arg, n))
        if bad:
            violations.append("personality(%s) against LockPersonality=" % arg)
    for k, n in sorted(agg["exec"].items()):
        path, res = k.split("\t")
        p = mp(path)
        gpud = p.endswith("/gpud")
        line = "execve %s x%d: %s" % (p, n, res)
        if "modprobe" in p and yes(settings, "NoNewPrivileges"):
            line += " (setuid root: NoNewPrivileges= makes it run unprivileged; the device " \
                    "nodes must exist before gpud starts)"
            notes.append("the CUDA driver tried %s" % p)
        print(("  ok " if gpud else "  seen ") + line)
    if not (agg["ns"] or agg["realtime"] or agg["suid"] or agg["personality"]):
        print("  no namespaces, realtime scheduling, personality changes or set-id modes")

    # info: ioctls, prctl
    section("for the record: ioctls per device, prctl options, identity calls")
    per_dev = collections.Counter()
    reqs = collections.defaultdict(set)
    for k, n in agg["ioctl"].items():
        d, req, res = k.split("\t")
        per_dev[d] += n
        reqs[d].add(req)
    for d, n in per_dev.most_common(12):
        print("  ioctl %s: %d calls, %d requests" % (mp(d), n, len(reqs[d])))
    print("  prctl: " + ", ".join(sorted({k.split("\t")[0] for k in agg["prctl"]})))
    print("  identity: " + (", ".join(sorted("%s %s x%d" % (*k.split("\t"), n)
                                            for k, n in agg["ids"].items())) or "none"))
    if agg["unparsed"]:
        notes.append("strace lines the digest could not parse: %s" % dict(agg["unparsed"]))

    section("result")
    for n in notes:
        print("  note: " + n)
    if violations:
        print("  %d VIOLATIONS: gpud, as traced, does what %s forbids" % (len(violations),
                                                                        unit))
        return 1
    print("  ok: every syscall, address family, device node and written path of the trace "
          "is allowed by %s" % unit)
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "digest":
        return cmd_digest(argv[2])
    if len(argv) == 3 and argv[1] == "merge":
        return cmd_merge(argv[2])
    if len(argv) == 4 and argv[1] == "verify":
        return cmd_verify(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
