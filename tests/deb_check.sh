#!/usr/bin/env bash
# tests/deb_check.sh DIR — the Debian packages of DIR (make deb) installed,
# run and purged (make test-deb), as root:
#
#   1. a scratch root (not a Debian system: an empty dpkg database) gets all
#      five packages with dpkg --root --force-depends (the root has no libc6
#      etc.; the host's serve) --force-script-chrootless: the maintainer
#      scripts run on the host with DPKG_ROOT set, as debhelper writes them
#      for that, so systemd-sysusers makes the gpud group in the root's
#      /etc/group, systemd-tmpfiles its /var/cache/gpud and deb-systemd-helper
#      enables the unit there. The host's systemctl, deb-systemd-invoke,
#      py3compile and py3clean are shadowed by no-ops on PATH: they would act
#      on the host, not the root. (mmdebstrap would give a real Debian root,
#      but needs the archive, which CI may not reach.)
#   2. the files are where Debian wants them: binaries, the conffile, unit,
#      sysusers/tmpfiles, man pages, completion, headers, .pc, the library's
#      soname, the Python package in dist-packages.
#   3. the root's gpud (cpu backend, a temporary ipc:// socket, not systemd)
#      answers the root's gpuctl (status; lombscargle on a signal with its
#      peak at 1 rad/s) and the root's Python package (PYTHONPATH into the
#      root's dist-packages, the library from the root).
#   4. dpkg --purge of all five leaves nothing under the root but dpkg's own
#      database and the system accounts (/etc/passwd, group, shadow, gshadow
#      and systemd-sysusers' /etc/.pwd.lock: Debian keeps system users on
#      purge); gpud's postrm removes /var/cache/gpud.
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
dir=$(cd -- "$1" && pwd)
python=${PYTHON:-/usr/bin/python3}
pkgs=(gpud gpuctl libgpud-client0 libgpud-client-dev python3-gpud)
fail() {
	echo "deb_check: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || fail "run as root (dpkg --root with maintainer scripts)"
for t in dpkg systemd-sysusers systemd-tmpfiles deb-systemd-helper; do
	command -v "$t" >/dev/null || fail "$t not found (scripts/install-deps.sh)"
done
debs=()
for p in "${pkgs[@]}"; do
	f=("$dir/${p}_"*.deb)
	[ -e "${f[0]}" ] || fail "no ${p}_*.deb in $dir (make deb)"
	debs+=("${f[0]}")
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

tmp=$(mktemp -d /tmp/gpud-deb.XXXXXX)
R=$tmp/root
pid=
cleanup() {
	if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" "$tmp/shims"
touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
for t in systemctl deb-systemd-invoke py3compile py3clean pypy3compile; do
	printf '#!/bin/sh\nexit 0\n' >"$tmp/shims/$t"
	chmod +x "$tmp/shims/$t"
done
rdpkg() {
	PATH=$tmp/shims:$PATH dpkg --root="$R" --force-script-chrootless --force-depends \
		--force-not-root "$@" >>"$tmp/dpkg.log" 2>&1 || {
		cat "$tmp/dpkg.log" >&2
		fail "dpkg --root $* failed"
	}
}
files_under() { (cd "$1" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort); }

# --- 1. install ---------------------------------------------------------------
rdpkg -i "${debs[@]}"
for p in "${pkgs[@]}"; do
	st=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Abbrev}' "$p")
	[ "$st" = "ii " ] || fail "$p is '$st' after dpkg -i, not installed (ii): $(cat "$tmp/dpkg.log")"
done

# --- 2. the files ---------------------------------------------------------------
for f in usr/bin/gpud usr/bin/gpuctl etc/gpud/gpud.conf lib/systemd/system/gpud.service \
	usr/lib/sysusers.d/gpud.conf usr/lib/tmpfiles.d/gpud.conf usr/share/man/man8/gpud.8.gz \
	usr/share/man/man5/gpud.conf.5.gz usr/share/man/man1/gpuctl.1.gz \
	usr/share/man/man3/libgpud-client.3.gz usr/share/bash-completion/completions/gpuctl \
	usr/include/gpud/client.h "usr/lib/$multiarch/libgpud-client.so.0" \
	"usr/lib/$multiarch/libgpud-client.a" "usr/lib/$multiarch/pkgconfig/gpud-client.pc" \
	usr/lib/python3/dist-packages/gpud/__init__.py usr/share/doc/gpud/README.md \
	var/cache/gpud etc/systemd/system/multi-user.target.wants/gpud.service; do
	[ -e "$R/$f" ] || [ -L "$R/$f" ] || fail "/$f missing after install"
done
grep -qxF /etc/gpud/gpud.conf "$R/var/lib/dpkg/info/gpud.conffiles" ||
	fail "/etc/gpud/gpud.conf is not a conffile: $(cat "$R/var/lib/dpkg/info/gpud.conffiles")"
grep -q '^gpud:' "$R/etc/group" || fail "systemd-sysusers made no group gpud in the root"
grep -q '^gpud:' "$R/etc/passwd" || fail "systemd-sysusers made no user gpud in the root"
grep -qxF "ExecStart=/usr/bin/gpud --config /etc/gpud/gpud.conf" "$R/lib/systemd/system/gpud.service" ||
	fail "the unit's ExecStart: $(grep ExecStart= "$R/lib/systemd/system/gpud.service")"
grep -qF "LIBDIR = \"/usr/lib/$multiarch\"" "$R/usr/lib/python3/dist-packages/gpud/_install.py" ||
	fail "gpud/_install.py names the wrong library directory"

# --- 3. run the root's gpud, gpuctl and Python package --------------------------
export LD_LIBRARY_PATH=$R/usr/lib/$multiarch
url=ipc://$tmp/gpud.sock
"$R/usr/bin/gpud" --listen "$url" --backend cpu 2>"$tmp/gpud.log" &
pid=$!
if ! "$R/usr/bin/gpuctl" --url "$url" status --wait 30 >"$tmp/status" 2>&1; then
	cat "$tmp/gpud.log" "$tmp/status" >&2
	fail "the installed gpud did not answer the installed gpuctl on $url"
fi
grep -qi cpu "$tmp/status" || fail "gpuctl status does not name the cpu backend: $(cat "$tmp/status")"
# y = cos(x) on 400 uneven x in [0, 60]: the periodogram peaks at 1 rad/s.
(cd "$tmp" && "$python" -c '
import numpy as np
x = np.sort(np.random.default_rng(1).uniform(0, 60, 400))
np.save("x.npy", x); np.save("y.npy", np.cos(x))')
"$R/usr/bin/gpuctl" --url "$url" run lombscargle x=@"$tmp/x.npy" y=@"$tmp/y.npy" \
	f0=0.5 df=0.001 nf=1001 -o "$tmp/pg.npy" >"$tmp/run.log" 2>&1 ||
	fail "gpuctl run lombscargle failed: $(cat "$tmp/run.log")"
peak=$("$python" -c 'import numpy as np, sys; p = np.load(sys.argv[1]); print(len(p), "%.3f" % (0.5 + 0.001 * int(np.argmax(p))))' "$tmp/pg.npy")
[ "$peak" = "1001 1.000" ] || fail "gpuctl run lombscargle: expected 1001 values peaking at 1.000 rad/s, got '$peak'"
got=$(cd / && GPUD_URL=$url PYTHONPATH=$R/usr/lib/python3/dist-packages "$python" -c '
import gpud, gpud._lib as L
c = gpud.connect()
print(gpud.__file__, int(c.run("sum", x=[1, 2, 3])))')
[ "$got" = "$R/usr/lib/python3/dist-packages/gpud/__init__.py 6" ] ||
	fail "the installed Python package: expected '$R/usr/lib/python3/dist-packages/gpud/__init__.py 6', got '$got'"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" = 0 ] || fail "gpud exited $status after SIGTERM: $(cat "$tmp/gpud.log")"

# --- 4. purge --------------------------------------------------------------------
rdpkg --purge "${pkgs[@]}"
left=$(files_under "$R" | grep -v -e '^var/lib/dpkg/' -e '^etc/\(passwd\|group\|shadow\|gshadow\)-\?$' \
	-e '^etc/\.pwd\.lock$' || true)
[ -z "$left" ] || fail "left under the root after dpkg --purge: $left"
for d in var/cache/gpud etc/gpud usr/lib/python3/dist-packages/gpud usr/include/gpud usr/share/doc/gpud; do
	[ ! -e "$R/$d" ] || fail "/$d is left after dpkg --purge"
done
for p in "${pkgs[@]}"; do
	st=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[ -z "$st" ] || [ "$st" = "un " ] || [ "$st" = "pn " ] || fail "$p is '$st' after purge"
done
echo "deb_check: 5 packages installed into a scratch root, gpud served its gpuctl (lombscargle peak 1.000 rad/s) and Python package (sum 6), purged clean"
