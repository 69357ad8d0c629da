#!/usr/bin/env bash
# scripts/sanitize-selftest.sh — gpud's start on a GPU under NVIDIA's
# compute-sanitizer, one tool at a time: the start self-tests every built-in
# kernel on every sample (each path, each dtype) against its CPU reference,
# so each tool sees every kernel's device code and the backend's scratch,
# copies and streams of the warm-up. A tool passes when gpud becomes ready
# and, once stopped by SIGTERM, the tool reports no error.
#
#   scripts/sanitize-selftest.sh GPUD GPUCTL [TOOL...]
#
# TOOLs: default memcheck and initcheck; synccheck and racecheck when named.
# Needs compute-sanitizer (the CUDA Toolkit's; CUDA_HOME/bin or PATH).
# Prints one line per tool; exits 1 if any failed, 2 without
# compute-sanitizer.
set -uo pipefail
gpud=${1:?usage: scripts/sanitize-selftest.sh GPUD GPUCTL [TOOL...]}
gpuctl=${2:?usage: scripts/sanitize-selftest.sh GPUD GPUCTL [TOOL...]}
shift 2
tools=${*:-memcheck initcheck}
cs=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
[ -x "$cs" ] || { echo "sanitize-selftest: no compute-sanitizer (CUDA_HOME/bin or PATH)" >&2; exit 2; }
dir=$(mktemp -d /tmp/gpud-sanitize.XXXXXX) || exit 2
trap 'rm -rf "$dir"' EXIT
failed=0
for t in $tools; do
	log=$dir/$t.log
	"$cs" --tool "$t" --print-limit 20 "$gpud" --backend cuda --listen "ipc://$dir/$t.sock" \
		--log-level warn >"$log" 2>&1 &
	pid=$!
	ready=0
	"$gpuctl" --url "ipc://$dir/$t.sock" status --wait 300 >/dev/null 2>&1 && ready=1
	# SIGTERM to gpud (a descendant of the sanitizer, found by its socket), and
	# the sanitizer reports as gpud ends; no gpud left: the sanitizer itself
	stopped=0
	for p in $(pgrep -x gpud); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "ipc://$dir/$t.sock"; then
			kill -TERM "$p" && stopped=1
		fi
	done
	[ "$stopped" = 1 ] || kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	summary=$(grep -m1 "ERROR SUMMARY" "$log" || true)
	if [ "$ready" = 1 ] && [ "$rc" = 0 ] && [[ "$summary" == *"ERROR SUMMARY: 0 errors"* ]]; then
		echo "sanitize-selftest: $t: gpud ready, ${summary#*= }"
	else
		failed=1
		echo "sanitize-selftest: $t: FAILED (ready $ready, exit $rc, ${summary:-no summary}); its log:"
		sed -n '1,80p' "$log"
	fi
done
exit $failed
