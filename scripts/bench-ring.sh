#!/bin/sh
# scripts/bench-ring.sh — bench/ring_latency against a gpud of its own:
#   scripts/bench-ring.sh GPUD RING_LATENCY REPS [PROBE]...
# starts GPUD (--backend $GPUD_BACKEND, default cpu) on a fresh ipc:// socket,
# runs the probes (default: status run call), stops it. Used by make bench-ring.
set -eu
gpud=$1 probe=$2 reps=$3
shift 3
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpud-ring-XXXXXX")
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
"$gpud" --backend "${GPUD_BACKEND:-cpu}" --listen "ipc://$dir/gpud.sock" \
	--log-level warn >"$dir/gpud.log" 2>&1 &
pid=$!
i=0
until [ -S "$dir/gpud.sock" ]; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "bench-ring: gpud did not start:" >&2
		cat "$dir/gpud.log" >&2
		exit 1
	fi
	sleep 0.05
done
"$probe" "ipc://$dir/gpud.sock" "$reps" "$@"
