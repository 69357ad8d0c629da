#!/usr/bin/env bash
# scripts/test-stress.sh — `make test` RUNS times (default 5) beside HOGS
# CPU-bound busy loops (default 2): CI's 2 shared cores at their worst. Every
# run must pass; the summary names each run's result and time, and the
# slowest waits the e2e suite printed (a killed client's buffers back, ...).
#
#   scripts/test-stress.sh [RUNS]      (make test-stress STRESS_RUNS=5)
#
# Environment: STRESS_HOGS (2), STRESS_LOGS (build/stress), MAKE (make),
# STRESS_TARGET (test: what each run makes).
set -uo pipefail
runs=${1:-5}
hogs=${STRESS_HOGS:-2}
logs=${STRESS_LOGS:-build/stress}
target=${STRESS_TARGET:-test}
make_cmd=${MAKE:-make}
case $runs in '' | *[!0-9]* | 0)
	echo "test-stress: RUNS must be a positive integer, got '$runs'" >&2
	exit 2
	;;
esac
mkdir -p "$logs" || exit 2

pids=()
stop_hogs() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait "${pids[@]}" 2>/dev/null
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for ((h = 0; h < hogs; h++)); do
	(while :; do :; done) &
	pids+=($!)
done
echo "test-stress: $runs x 'make $target' beside $hogs busy loops on $(nproc) cores; logs in $logs"

passed=0
summary=()
for ((i = 1; i <= runs; i++)); do
	log=$logs/run-$i.log
	t0=$(date +%s)
	$make_cmd --no-print-directory "$target" >"$log" 2>&1
	rc=$?
	dt=$(($(date +%s) - t0))
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		summary+=("run $i: passed in ${dt} s")
	else
		summary+=("run $i: FAILED (exit $rc) after ${dt} s: $log")
		echo "--- run $i failed; the failures in $log:" >&2
		grep -E -i -m 20 '(:[EF]:|FAIL|error:|Error [0-9])' "$log" >&2
	fi
	echo "${summary[-1]}"
done
echo "test-stress: the slowest waits of the e2e runs (seconds):"
grep -h -o -E 'killed mid-[a-z]+: .* after [0-9.]+ s' "$logs"/run-*.log 2>/dev/null |
	sed -E 's/^killed (mid-[a-z]+):.* after ([0-9.]+) s/\1 \2/' |
	sort -k1,1 -k2,2gr | awk '!seen[$1]++ {print "  killed " $1 ": its buffers back after " $2 " s (worst)"}'
grep -h -o -E '^e2e: [0-9.]+ s' "$logs"/run-*.log 2>/dev/null | sort -k2,2gr | head -1 |
	sed 's/^/  slowest e2e suite: /'
echo "test-stress: $passed/$runs passed"
[ "$passed" -eq "$runs" ]
