#!/usr/bin/env bash
# Starts gpud on a temporary socket, runs the lombscargle demo, stops gpud.
# usage: scripts/demo.sh GPUD GPUCTL
set -euo pipefail
gpud=$1 gpuctl=$2
dir=$(mktemp -d /tmp/gpud-demo.XXXXXX)
url="ipc://$dir/gpud.sock"
"$gpud" --listen "$url" --backend "${GPUD_BACKEND:-auto}" 2>"$dir/gpud.log" &
pid=$!
cleanup() {
	kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
if ! "$gpuctl" --url "$url" status --wait 30 >/dev/null; then
	cat "$dir/gpud.log" >&2
	exit 1
fi
"$gpuctl" --url "$url" demo --runs "${DEMO_RUNS:-5}"
# Say why the backend is what it is (e.g. no GPU: the cpu backend).
grep -E ' (warn|error): ' "$dir/gpud.log" | sed 's/^[^ ]* /gpud: /' >&2 || true
kill -TERM "$pid"
wait "$pid"
status=$?
trap 'rm -rf "$dir"' EXIT
echo "gpud stopped (exit $status)"
