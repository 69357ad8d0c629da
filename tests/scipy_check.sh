#!/usr/bin/env bash
# tests/scipy_check.sh GPUD GPUCTL — the scipy agreement check.
#
# Starts GPUD (--backend ${GPUD_BACKEND:-cpu}) on a temporary ipc:// socket,
# waits for it with 'GPUCTL status --wait 10', runs tests/scipy_check.py with
# Debian's /usr/bin/python3 (numpy + scipy; the python3 on PATH may lack
# them; $SCIPY_CHECK_PYTHON overrides), then stops gpud with SIGTERM and
# requires exit status 0.
# Extra arguments after GPUCTL go to scipy_check.py (e.g. --seed N).
set -euo pipefail

if [ $# -lt 2 ]; then
	echo "usage: $0 GPUD GPUCTL [scipy_check.py options]" >&2
	exit 2
fi
gpud=$(readlink -f -- "$1")
gpuctl=$(readlink -f -- "$2")
shift 2
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
py=${SCIPY_CHECK_PYTHON:-/usr/bin/python3} # Debian's; override for other hosts
backend=${GPUD_BACKEND:-cpu}

for b in "$gpud" "$gpuctl"; do
	if [ ! -x "$b" ]; then
		echo "scipy_check: $b is not an executable (build it first: make)" >&2
		exit 2
	fi
done
if [ ! -x "$py" ]; then
	echo "scipy_check: $py not found; install python3-numpy python3-scipy" >&2
	exit 1
fi
# Says what is missing itself, before any gpud is started.
"$py" "$here/scipy_check.py" --gpuctl "$gpuctl" --url unused --check-imports

# ipc:// paths must fit in sun_path (108 bytes).
tmproot=${TMPDIR:-/tmp}
[ ${#tmproot} -le 48 ] || tmproot=/tmp
work=$(mktemp -d "$tmproot/gpud-scipy-XXXXXX")
url="ipc://$work/gpud.sock"
log="$work/gpud.log"
pid=

cleanup() {
	local rc=$?
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf -- "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

show_log() {
	echo "----- gpud log ($log) -----" >&2
	cat -- "$log" >&2 || true
	echo "----- end of gpud log -----" >&2
}

"$gpud" --listen "$url" --backend "$backend" --log-level info 2>"$log" >/dev/null </dev/null &
pid=$!
if ! "$gpuctl" --url "$url" status --wait 10 >"$work/status.out"; then
	echo "scipy_check: gpud did not answer on $url within 10 s" >&2
	show_log
	exit 1
fi
running=$(sed -n 's/^backend *//p' "$work/status.out")
echo "scipy_check: gpud pid $pid, backend $running, $url"

rc=0
"$py" "$here/scipy_check.py" --gpuctl "$gpuctl" --url "$url" --backend "$running" "$@" || rc=$?

# Stop it: SIGTERM, then it must exit 0 within 30 s.
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	echo "scipy_check: gpud still running 30 s after SIGTERM; killing it" >&2
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
	show_log
	exit 1
fi
st=0
wait "$pid" || st=$?
pid=
if [ "$st" -ne 0 ]; then
	echo "scipy_check: gpud exited with status $st after SIGTERM, expected 0" >&2
	show_log
	exit 1
fi
if [ "$rc" -ne 0 ]; then
	show_log
	echo "scipy_check: FAILED" >&2
fi
exit "$rc"
