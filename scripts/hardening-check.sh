#!/usr/bin/env bash
# scripts/hardening-check.sh — does gpud still work under the restrictions of
# its systemd unit (systemd/gpud.service.in)? GPU machines have no systemd
# as PID 1 to start the unit there, so the check is in two halves:
#
#   trace BINDIR OUTDIR    (on the GPU machine; one command)
#       BINDIR holds gpud, gpuctl and test-e2e (and test-gpu): the GPU bundle
#       (make BUILD=... gpu-bundle) or a build directory. Runs the e2e suite
#       (and the GPU suite when the backend is cuda) with every gpud it starts
#       under `strace -f` (threads and tenant workers included), each trace
#       reduced as it streams by scripts/hardening_check.py to what the unit
#       restricts: syscall names, socket families, device nodes (major:minor,
#       access), paths written, writable+executable mappings, namespaces,
#       programs executed. Then runs both suites again as an unprivileged
#       user in groups video and render, with no capabilities (bounding,
#       inheritable, ambient) and no new privileges (setpriv), as the unit
#       runs gpud; and one gpud under the same setpriv whose
#       /proc/PID/status and executable mappings are recorded. Leaves
#       OUTDIR/summary and OUTDIR/trace.tgz (digests.json, meta, proc-devices,
#       dev-nodes, logs; HC_PACK=0 leaves them unpacked). Verifies at once
#       when systemd-analyze is there; else copy OUTDIR back and run verify.
#       On an H100 each half takes about 7 minutes (the traced suites 450 s,
#       the unprivileged ones 400 s): where a command may run 10 minutes, run
#       it twice, HC_SETPRIV=0 then HC_TRACE=0, into two OUTDIRs.
#   verify TRACEDIR UNIT   (here: needs systemd-analyze)
#       Checks the digests against UNIT (a built gpud.service or
#       systemd/gpud.service.in); exit 1 naming each violation.
#   ci BINDIR UNIT         (make test-systemd; CI has no GPU)
#       trace with the cpu backend and a few e2e cases (HC_CASES), no setpriv
#       run, then verify: the cpu backend's syscalls fit the filter.
#   bundle-strace DIR      (here) strace with its libraries and loader in DIR,
#       for a GPU machine without strace (make gpu-bundle puts one in
#       BUNDLE/strace, which trace finds; else STRACE=DIR/strace there).
#
# Knobs: GPUD_BACKEND (default cuda when /dev/nvidiactl exists, else cpu);
# STRACE (default: strace on PATH, else BINDIR/strace/strace); PYTHON
# (python3); HC_CASES, HC_GPU_CASES: the e2e and GPU suites' cases
# (Check's case names, comma-separated; default all; "none" skips the suite);
# HC_TRACE=0 skips the traced runs, HC_SETPRIV=0 the unprivileged ones;
# HC_USER (default gpud if it exists, else nobody).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=${PYTHON:-python3}
hcpy=$here/hardening_check.py

die() {
	echo "hardening-check: $*" >&2
	exit 2
}
usage() {
	sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

find_strace() { # BINDIR
	if [ -n "${STRACE:-}" ]; then
		echo "$STRACE"
	elif command -v strace >/dev/null; then
		command -v strace
	elif [ -x "$1/strace/strace" ]; then
		echo "$1/strace/strace"
	else
		die "no strace: install it, set STRACE=PATH, or copy one made by" \
			"'scripts/hardening-check.sh bundle-strace DIR' to BINDIR/strace"
	fi
}

# run_suite LOG CASES COMMAND...: COMMAND once per case (comma-separated; "" all, "none"
# nothing: CK_RUN_CASE), from the current directory; output appended to LOG. 0 if all passed.
run_suite() {
	local log=$1 cases=$2 rc=0 c
	shift 2
	[ "$cases" = none ] && return 0
	local list=()
	IFS=, read -r -a list <<<"$cases"
	[ ${#list[@]} -gt 0 ] || list=("")
	for c in "${list[@]}"; do
		env ${c:+CK_RUN_CASE="$c"} "$@" >>"$log" 2>&1 || rc=1
	done
	return $rc
}
checks() { # LOG: Check's result lines, on one line
	grep -E '^[0-9]+%: Checks' "$1" 2>/dev/null | tr '\n' ' '
}

# --- trace -------------------------------------------------------------------------------------
# trace_run BINDIR OUTDIR BACKEND CASES GPU_CASES: the suites under strace; 0 if every gpud
# they started was traced and digested.
trace_run() {
	local bindir=$1 out=$2 backend=$3 cases=$4 gpu_cases=$5
	local strace_bin rc=0 tmp
	strace_bin=$(find_strace "$bindir")
	command -v "$py" >/dev/null || die "no $py: the digest needs python3 (set PYTHON)"
	local why
	if ! why=$("$strace_bin" -f -o /dev/null true 2>&1); then
		die "$strace_bin cannot trace here ($why): ptrace refused? (a container needs" \
			"CAP_SYS_PTRACE or a seccomp profile that allows ptrace)"
	fi
	rm -rf "${out:?}/digest" "${out:?}/wrap" "${out:?}/home" "${out:?}/cwd" "${out:?}/started"
	mkdir -p "$out/digest" "$out/wrap" "$out/home" "$out/cwd" || die "cannot write $out"
	# TMPDIR at most 48 bytes: the tests' ipc:// paths must fit in 108
	tmp=$(mktemp -d /tmp/hc.XXXXXX) || die "mktemp"
	chmod 755 "$tmp"
	# The gpud the tests start: this wrapper, which becomes gpud itself (strace -D: the
	# tracer is a detached grandchild, so the tests' signals and waits reach gpud). setsid
	# first: the digest, which strace starts before it execs gpud, must not be in the
	# test's process group, which Check kills when the test ends, digest or not.
	local setsid=
	command -v setsid >/dev/null && setsid=setsid
	cat >"$out/wrap/gpud" <<-EOF
		#!/bin/sh
		echo \$\$ "\$*" >>'$out/started'
		exec $setsid '$strace_bin' -DDD -f -q -yy -s 256 \\
		  -o "|'$py' '$hcpy' digest '$out/digest/gpud.\$\$.json' 2>>'$out/digest.err'" -- '$bindir/gpud' "\$@"
	EOF
	chmod 755 "$out/wrap/gpud"
	{
		echo "HOST=$(hostname)"
		echo "DATE=$(date -u +%FT%TZ)"
		echo "KERNEL=$(uname -r)"
		echo "BACKEND=$backend"
		echo "BINDIR=$bindir"
		echo "HOME=$out/home"
		echo "CWD=$out/cwd"
		echo "TMPDIR=$tmp"
		echo "UNIT_HOME=/var/cache/gpud"
		echo "STRACE=$("$strace_bin" -V 2>/dev/null | head -1)"
		echo "DRIVER=$(head -1 /proc/driver/nvidia/version 2>/dev/null)"
		echo "GPU=$(nvidia-smi -L 2>/dev/null | head -1)"
	} >"$out/meta"
	cp /proc/devices "$out/proc-devices"
	ls -l /dev/nvidia* /dev/nvidia-caps/ >"$out/dev-nodes" 2>&1
	ldd "$bindir/gpud" >"$out/gpud-ldd" 2>&1
	local env=(HOME="$out/home" TMPDIR="$tmp" GPUD_BIN="$out/wrap/gpud"
		GPUCTL_BIN="$bindir/gpuctl" GPUD_BACKEND="$backend")
	"$py" -c "import numpy" 2>/dev/null && env+=(E2E_PYTHON="$(command -v "$py")")
	: >"$out/e2e.log"
	# The suites' results are reported, not required: under strace, tests that time
	# things may fail; what matters here is what gpud did. (setpriv_run requires them.)
	: >"$out/gpu.log"
	(cd "$out/cwd" && run_suite "$out/e2e.log" "$cases" env "${env[@]}" "$bindir/test-e2e")
	echo "trace: e2e ($backend${cases:+, cases: $cases}): $(checks "$out/e2e.log")" |
		tee -a "$out/summary"
	if [ "$backend" = cuda ] && [ "$gpu_cases" != none ] && [ -x "$bindir/test-gpu" ]; then
		(cd "$out/cwd" && run_suite "$out/gpu.log" "$gpu_cases" env "${env[@]}" "$bindir/test-gpu")
		echo "trace: GPU suite${gpu_cases:+ (cases: $gpu_cases)}: $(checks "$out/gpu.log")" |
			tee -a "$out/summary"
	fi
	# every traced gpud's digest is written when its tracer ends, shortly after gpud
	local started=0 done=0 t0=$SECONDS
	[ -f "$out/started" ] && started=$(wc -l <"$out/started")
	while :; do
		done=$(find "$out/digest" -name '*.json' | wc -l)
		[ "$done" -ge "$started" ] || [ $((SECONDS - t0)) -ge 60 ] && break
		sleep 1
	done
	echo "trace: $done of $started traced gpud processes digested" | tee -a "$out/summary"
	# few files to copy back: the digests in one, the CUDA cache in HOME as a listing
	"$py" "$hcpy" merge "$out" >/dev/null
	(cd "$out/home" && find . -type f) >"$out/home-files"
	rm -rf "$tmp" "${out:?}/home" "${out:?}/cwd" "${out:?}/digest"
	[ "$done" -ge "$started" ] && [ "$started" -gt 0 ] || rc=1
	return $rc
}

# setpriv_run BINDIR OUTDIR BACKEND CASES GPU_CASES: the suites as an unprivileged user
# without capabilities or new privileges, as the unit runs gpud; one gpud's /proc status
# recorded. 0 if gpud served and the suites passed.
setpriv_run() {
	local bindir=$1 out=$2 backend=$3 cases=$4 gpu_cases=$5 rc=0
	if [ "$(id -u)" != 0 ]; then
		echo "setpriv: skipped (not root: cannot change user)" | tee -a "$out/summary"
		return 0
	fi
	command -v setpriv >/dev/null || {
		echo "setpriv: skipped (no setpriv)" | tee -a "$out/summary"
		return 0
	}
	local user=${HC_USER:-}
	if [ -z "$user" ]; then
		if getent passwd gpud >/dev/null; then user=gpud; else user=nobody; fi
	fi
	local uid gid groups=() g
	if ! uid=$(id -u "$user") || ! gid=$(id -g "$user"); then die "no user $user"; fi
	for g in video render; do getent group "$g" >/dev/null && groups+=("$g"); done
	local gflag=--clear-groups
	[ ${#groups[@]} -gt 0 ] && gflag=--groups=$(
		IFS=,
		echo "${groups[*]}"
	)
	local dir
	dir=$(mktemp -d /tmp/hcu.XXXXXX) || die mktemp
	chmod 755 "$dir"
	mkdir -p "$dir/bin" "$dir/home" "$dir/tmp" "$dir/cwd"
	cp "$bindir/gpud" "$bindir/gpuctl" "$bindir/test-e2e" "$dir/bin/"
	[ -x "$bindir/test-gpu" ] && cp "$bindir/test-gpu" "$dir/bin/"
	[ -d "$bindir/tests" ] && cp -r "$bindir/tests" "$dir/bin/" # e2e helpers (NVTX recorder)
	cp "$here/../README.md" "$dir/" # the e2e case "readme" looks above test-e2e,
	mkdir -p "$dir/docs" && cp "$here"/../docs/*.md "$dir/docs/" # and reads docs/*.md beside it
	chown "$uid:$gid" "$dir/home" "$dir/tmp" "$dir/cwd"
	local sp=(setpriv --reuid="$uid" --regid="$gid" "$gflag" --no-new-privs
		--bounding-set=-all --inh-caps=-all --ambient-caps=-all --)
	local env=(HOME="$dir/home" TMPDIR="$dir/tmp" GPUD_BIN="$dir/bin/gpud"
		GPUCTL_BIN="$dir/bin/gpuctl" GPUD_BACKEND="$backend")
	"$py" -c "import numpy" 2>/dev/null && env+=(E2E_PYTHON="$(command -v "$py")")
	# one gpud: what it runs with, and that it serves
	local url=ipc://$dir/tmp/gpud.sock pid st
	(cd "$dir/cwd" && exec "${sp[@]}" env "${env[@]}" "$dir/bin/gpud" --backend "$backend" \
		--listen "$url") >"$out/setpriv-gpud.log" 2>&1 &
	pid=$!
	if "${sp[@]}" "$dir/bin/gpuctl" --url "$url" status --wait 60 >"$out/setpriv-status" 2>&1; then
		grep -E '^(Uid|Gid|Groups|NoNewPrivs|Cap(Inh|Prm|Eff|Bnd|Amb)|Seccomp):' \
			"/proc/$pid/status" >"$out/setpriv-proc-status"
		# what MemoryDenyWriteExecute= would refuse: writable and executable mappings, and
		# executable mappings of device nodes (older NVIDIA drivers mapped nvidiactl rwx)
		awk '$2 ~ /w.x/ || ($2 ~ /x/ && $6 ~ /^\/dev\//)' "/proc/$pid/maps" \
			>"$out/setpriv-maps-wx"
		echo "setpriv: gpud's writable+executable or device-executable mappings after start:" \
			"$(wc -l <"$out/setpriv-maps-wx")" | tee -a "$out/summary"
		echo "setpriv: gpud as $user ($uid:$gid, ${groups[*]:-no groups}) serves on $backend;" \
			"$(tr -s '\t\n' ' ' <"$out/setpriv-proc-status")" | tee -a "$out/summary"
	else
		echo "setpriv: gpud as $user did not serve (see setpriv-gpud.log, setpriv-status)" |
			tee -a "$out/summary"
		rc=1
	fi
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	st=$?
	[ "$st" = 0 ] || {
		echo "setpriv: gpud exited $st after SIGTERM" | tee -a "$out/summary"
		rc=1
	}
	# the suites
	: >"$out/setpriv-e2e.log"
	: >"$out/setpriv-gpu.log"
	(cd "$dir/cwd" && run_suite "$out/setpriv-e2e.log" "$cases" "${sp[@]}" env "${env[@]}" \
		"$dir/bin/test-e2e") || rc=1
	echo "setpriv: e2e as $user, no capabilities or new privileges: $(checks \
		"$out/setpriv-e2e.log")" | tee -a "$out/summary"
	if [ "$backend" = cuda ] && [ "$gpu_cases" != none ] && [ -x "$dir/bin/test-gpu" ]; then
		(cd "$dir/cwd" && run_suite "$out/setpriv-gpu.log" "$gpu_cases" "${sp[@]}" env \
			"${env[@]}" "$dir/bin/test-gpu") || rc=1
		echo "setpriv: GPU suite as $user: $(checks "$out/setpriv-gpu.log")" |
			tee -a "$out/summary"
	fi
	rm -rf "$dir"
	return $rc
}

cmd_trace() {
	[ $# -eq 2 ] || usage
	local bindir out backend rc=0 vrc=0
	bindir=$(readlink -f -- "$1") || die "no $1"
	for p in gpud gpuctl test-e2e; do
		[ -x "$bindir/$p" ] || die "$bindir/$p is missing: BINDIR holds gpud, gpuctl and test-e2e"
	done
	if ! mkdir -p "$2" || ! out=$(readlink -f -- "$2"); then die "cannot make $2"; fi
	backend=${GPUD_BACKEND:-}
	if [ -z "$backend" ]; then
		if [ -e /dev/nvidiactl ]; then backend=cuda; else backend=cpu; fi
	fi
	: >"$out/summary"
	if [ "${HC_TRACE:-1}" = 1 ]; then
		trace_run "$bindir" "$out" "$backend" "${HC_CASES:-}" "${HC_GPU_CASES:-}" || rc=1
	fi
	if [ "${HC_SETPRIV:-1}" = 1 ]; then
		setpriv_run "$bindir" "$out" "$backend" "${HC_CASES:-}" "${HC_GPU_CASES:-}" || rc=1
	fi
	if [ "${HC_TRACE:-1}" != 1 ]; then
		:
	elif command -v systemd-analyze >/dev/null; then
		"$py" "$hcpy" verify "$out" "$here/../systemd/gpud.service.in" | tee "$out/verify" ||
			vrc=1
	else
		echo "trace: no systemd-analyze here: copy $out back and run" \
			"'scripts/hardening-check.sh verify $out systemd/gpud.service.in'" |
			tee -a "$out/summary"
	fi
	# one archive (verify reads it) and the summary: few files to copy back
	if [ "${HC_PACK:-1}" = 1 ]; then
		tar czf "$out.tgz.tmp" -C "$out" --exclude=./summary . &&
			find "$out" -mindepth 1 -maxdepth 1 ! -name summary -exec rm -rf {} + &&
			mv "$out.tgz.tmp" "$out/trace.tgz"
	fi
	echo "===== hardening-check trace summary ($out/summary)"
	cat "$out/summary"
	[ $rc = 0 ] && [ $vrc = 0 ]
}

# e2e cases for make test-systemd (tenants: tcp:// too): about 25 s under strace, cpu backend
ci_cases=library,sessions,gpuctl,limits,shutdown,tenants,ring,lend,notify,concurrency
cmd_ci() {
	[ $# -eq 2 ] || usage
	local bindir out rc=0 t0=$SECONDS
	bindir=$(readlink -f -- "$1") || die "no $1"
	out=$(mktemp -d /tmp/hc-ci.XXXXXX) || die mktemp
	: >"$out/summary"
	trace_run "$bindir" "$out" cpu "${HC_CASES-$ci_cases}" none || rc=1
	"$py" "$hcpy" verify "$out" "$2" >"$out/verify" || rc=1
	# the report's system calls and result, the rest on failure
	if [ $rc = 0 ]; then
		sed -n -e '/^hardening-check verify/p' -e '/^== system calls/,/^$/p' \
			-e '/^== socket address families/,/^$/p' \
			-e '/^== result/,$p' "$out/verify"
	else
		cat "$out/verify" "$out/summary"
		grep -E '^tests/.*:[FE]:' "$out/e2e.log" | head -20
	fi
	echo "hardening-check ci: $((SECONDS - t0)) s"
	if [ $rc = 0 ] && [ -z "${HC_KEEP:-}" ]; then rm -rf "$out"; else echo "kept $out"; fi
	return $rc
}

cmd_bundle_strace() {
	[ $# -eq 1 ] || usage
	local dir=$1 s
	s=$(command -v strace) || die "no strace here to bundle"
	mkdir -p "$dir/lib" || die "cannot make $dir"
	cp -L "$s" "$dir/strace.bin"
	ldd "$s" | awk '$2 == "=>" { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' |
		while read -r l; do cp -L "$l" "$dir/lib/"; done
	local ld
	ld=$(basename "$(ldd "$s" | awk '$1 ~ /^\/.*ld-linux/ { print $1 }')")
	# strace started through its own loader and libc; what it starts uses the system's
	cat >"$dir/strace" <<-EOF
		#!/bin/sh
		d=\$(dirname "\$0")
		exec "\$d/lib/$ld" --library-path "\$d/lib" "\$d/strace.bin" "\$@"
	EOF
	chmod 755 "$dir/strace"
	"$dir/strace" -V | head -1
}

[ $# -ge 1 ] || usage
mode=$1
shift
case $mode in
trace) cmd_trace "$@" ;;
verify)
	[ $# -eq 2 ] || usage
	exec "$py" "$hcpy" verify "$1" "$2"
	;;
ci) cmd_ci "$@" ;;
bundle-strace) cmd_bundle_strace "$@" ;;
*) usage ;;
esac
