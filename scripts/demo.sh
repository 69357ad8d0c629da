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
# Say first why the backend is what it is (e.g. no NVIDIA driver: the cpu
# backend): gpud logged it before it answered.
grep -E ' (warn|error): ' "$dir/gpud.log" | sed 's/^[^ ]* /gpud: /' >&2 || true
"$gpuctl" --url "$url" demo --runs "${DEMO_RUNS:-5}"
# The same from Python (the package in python/, this build's libgpud-client).
py=${PYTHON:-/usr/bin/python3}
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
if "$py" -c 'import numpy' 2>/dev/null; then
	GPUD_URL=$url GPUD_LIB=$(dirname -- "$(readlink -f -- "$gpud")")/libgpud-client.so.0 \
		PYTHONPATH=$here/python "$py" "$here/python/examples/lombscargle_demo.py"
else
	echo "demo: $py has no numpy (python3-numpy): the Python part is left out" >&2
fi
kill -TERM "$pid"
wait "$pid"
status=$?
trap 'rm -rf "$dir"' EXIT
echo "gpud stopped (exit $status)"
