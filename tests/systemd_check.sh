#!/usr/bin/env bash
# tests/systemd_check.sh BUILD THRESHOLD — make test-systemd: the systemd
# unit, sysusers.d and tmpfiles.d files as systemd reads them, without
# systemd as PID 1 (CI is a container): Debian's systemd package provides
# systemd-analyze, systemd-sysusers and systemd-tmpfiles, which work
# offline.
#
#   1. systemd/gpud.service.in with BUILD's gpud in ExecStart: Type=notify,
#      no ExecStartPost or hard-coded socket, its RuntimeDirectory= and
#      CacheDirectory= the directories config/gpud.conf, gpud.sysusers and
#      gpud.tmpfiles name, MemoryDenyWriteExecute= and PrivateDevices= off;
#      gpud.conf's sockets 0660 and of group gpud, which gpud.sysusers makes;
#   2. systemd-analyze verify: exit 0 and not a word (it only warns about an
#      unknown key or a bad value);
#   3. systemd-analyze security --offline=yes: the exposure score, failing
#      above THRESHOLD (tenths: 17 is 1.7);
#   4. systemd-sysusers --root=T gpud.sysusers: the passwd and group lines
#      (gpud's own group gpud, which lab users join);
#      systemd-tmpfiles --create --root=T gpud.tmpfiles: the cache directory
#      0700, owned by that gpud;
#   5. scripts/hardening-check.sh ci: the e2e suite's cpu-backend gpuds under
#      strace, every syscall, socket family, device node and written path
#      checked against the unit.
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 BUILD THRESHOLD" >&2
	exit 2
fi
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
build=$(readlink -f -- "$1") threshold=$2
for t in systemd-analyze systemd-sysusers systemd-tmpfiles strace; do
	command -v "$t" >/dev/null ||
		{ echo "systemd_check: no $t (scripts/install-deps.sh installs systemd and strace)" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/gpud-systemd.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "systemd_check: $*" >&2
	exit 1
}
val() { # KEY FILE: the last value of KEY= in a unit (or an INI key = value)
	sed -n "s/^$1[[:space:]]*=[[:space:]]*//p" "$2" | tail -1
}

# --- 1. the unit and the files around it -----------------------------------------
unit=$tmp/gpud.service
sed -e "s|@BINDIR@|$build|g" -e 's|@SYSCONFDIR@|/etc|g' -e 's|@DOCDIR@|/usr/share/doc/gpud|g' \
	systemd/gpud.service.in >"$unit"
grep -qxF "ExecStart=$build/gpud --config /etc/gpud/gpud.conf" "$unit" ||
	fail "the unit does not start $build/gpud"
[ "$(val Type "$unit")" = notify ] || fail "Type=$(val Type "$unit"), expected notify"
[ "$(val NotifyAccess "$unit")" = main ] || fail "NotifyAccess= is not main"
if grep -q '^ExecStartPost=' "$unit"; then fail "ExecStartPost= is back: Type=notify replaces it"; fi
if grep -v '^#' "$unit" | grep -q 'gpud\.sock'; then
	fail "the unit names a socket path: gpud.conf's listen does"
fi
[ "$(val MemoryDenyWriteExecute "$unit")" = no ] ||
	fail "MemoryDenyWriteExecute= must be no: the CUDA driver maps memory writable and executable"
[ "$(val PrivateDevices "$unit")" = no ] ||
	fail "PrivateDevices= must be no: it hides /dev/nvidia*"
rundir=/run/$(val RuntimeDirectory "$unit") cachedir=/var/cache/$(val CacheDirectory "$unit")
listen=$(val listen config/gpud.conf)
case $listen in
"ipc://$rundir/"*) ;;
*) fail "config/gpud.conf listens on '$listen', outside the unit's RuntimeDirectory $rundir" ;;
esac
[ "$(val kernel_cache config/gpud.conf)" = "$cachedir" ] ||
	fail "config/gpud.conf's kernel_cache is not the unit's CacheDirectory $cachedir"
[ "$(val socket_mode config/gpud.conf)" = 0660 ] && [ "$(val socket_group config/gpud.conf)" = gpud ] ||
	fail "config/gpud.conf does not give its sockets socket_mode = 0660 and socket_group = gpud"
grep -qE "^g[[:space:]]+gpud[[:space:]]" systemd/gpud.sysusers ||
	fail "gpud.sysusers does not make the system group gpud (gpud.conf's socket_group)"
grep -qE "^u[[:space:]]+gpud[[:space:]].*[[:space:]]$cachedir\$" systemd/gpud.sysusers ||
	fail "gpud.sysusers does not give gpud the home $cachedir"
grep -qE "^d[[:space:]]+${cachedir}[[:space:]]+0700[[:space:]]+gpud[[:space:]]+gpud" \
	systemd/gpud.tmpfiles || fail "gpud.tmpfiles does not make $cachedir 0700 gpud gpud"
echo "systemd_check: unit: Type=notify, $rundir and $cachedir agree with gpud.conf," \
	"gpud.sysusers and gpud.tmpfiles; sockets 0660 group gpud, a group gpud.sysusers makes"

# --- 2. systemd-analyze verify -------------------------------------------------------
if ! out=$(systemd-analyze verify "$unit" 2>&1); then
	fail "systemd-analyze verify failed: $out"
fi
[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
echo "systemd_check: systemd-analyze verify: clean"

# --- 3. systemd-analyze security --------------------------------------------------------
rc=0
systemd-analyze security --offline=yes --threshold="$threshold" --no-pager "$unit" \
	>"$tmp/security" 2>&1 || rc=$?
score=$(sed -n 's/.*Overall exposure level for gpud.service: \([0-9.]*\).*/\1/p' "$tmp/security")
[ -n "$score" ] || fail "no exposure score from systemd-analyze security: $(cat "$tmp/security")"
echo "systemd_check: what systemd-analyze security counts against the unit:"
grep '✗' "$tmp/security" | sed -e 's/^/  /' -e 's/  */ /g'
echo "systemd_check: exposure $score (threshold $((threshold / 10)).$((threshold % 10)))"
[ $rc = 0 ] || fail "exposure $score is above the threshold $((threshold / 10)).$((threshold % 10))"

# --- 4. sysusers.d and tmpfiles.d ----------------------------------------------------------
root=$tmp/root
mkdir -p "$root/etc"
systemd-sysusers --root="$root" "$PWD/systemd/gpud.sysusers" >"$tmp/sysusers.log" 2>&1 ||
	fail "systemd-sysusers: $(cat "$tmp/sysusers.log")"
pw=$(grep '^gpud:' "$root/etc/passwd") || fail "no gpud in passwd: $(cat "$root/etc/passwd")"
IFS=: read -r name _ uid gid gecos home shell <<<"$pw"
if [ "$gecos" != "gpud GPU compute daemon" ] || [ "$home" != "$cachedir" ] ||
	[ "$shell" != /usr/sbin/nologin ] || [ "$uid" -ge 1000 ]; then
	fail "passwd line '$pw': expected a system user, 'gpud GPU compute daemon', $cachedir, nologin"
fi
grep -qx "gpud:x:$gid:" "$root/etc/group" || fail "no group gpud with gid $gid: $(cat "$root/etc/group")"
for g in video render; do
	grep -qE "^$g:x:[0-9]+:(.*,)?gpud(,.*)?$" "$root/etc/group" ||
		fail "gpud is not in group $g: $(cat "$root/etc/group")"
done
systemd-tmpfiles --create --root="$root" "$PWD/systemd/gpud.tmpfiles" >"$tmp/tmpfiles.log" 2>&1 ||
	fail "systemd-tmpfiles --create: $(cat "$tmp/tmpfiles.log")"
got=$(stat -c '%a %u:%g %F' "$root$cachedir")
[ "$got" = "700 $uid:$gid directory" ] || fail "$cachedir is '$got', expected '700 $uid:$gid directory'"
echo "systemd_check: sysusers: $name uid $uid gid $gid home $home in video and render;" \
	"tmpfiles: $cachedir $got"

# --- 5. what gpud does, against the unit ---------------------------------------------------
scripts/hardening-check.sh ci "$build" "$unit"
