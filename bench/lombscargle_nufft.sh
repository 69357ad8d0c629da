#!/usr/bin/env bash
# bench/lombscargle_nufft.sh — lombscargle on the grid: gpud direct, gpud
# NUFFT (bench/lombscargle_nufft) and the CuPy peer's direct kernel
# (lombscargle_peers.py inproc, LS_SAMPLES=N: its 2^20 frequencies) in one
# call on one device, under one header (device, driver, date).
#
#   bench/lombscargle_nufft.sh BIN_DIR [PEERS] [REPS]
#
# BIN_DIR holds gpud and bench/lombscargle_nufft (a build dir, or the
# gpu-bundle's .devcarry/bin); PEERS defaults to
# ../shared/anchors/lombscargle_peers.py. The peer's times are for M = 2^20;
# its kernel is O(N M), so other M scale linearly.
set -uo pipefail
bin=$(readlink -f -- "${1:?usage: bench/lombscargle_nufft.sh BIN_DIR [PEERS] [REPS]}")
peers=${2:-../shared/anchors/lombscargle_peers.py}
reps=${3:-10}
py=${PYTHON:-python3}
[ -d "$bin/lib" ] && export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "===== lombscargle: direct vs NUFFT vs CuPy, $(date -u '+%Y-%m-%d %H:%M UTC')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
	sed 's/^/device, driver, memory: /'
bench=$bin/bench/lombscargle_nufft
[ -x "$bench" ] || bench=$bin/bench/lombscargle_nufft_bench
"$bench" "$bin/gpud" "$reps" ${SIZES:+"$SIZES"}
rc=$?
if [ -f "$peers" ]; then
	echo
	echo "CuPy peer (direct, O(N M)), M = 2^20 frequencies: variant dtype first_ms median_ms err"
	for n in ${PEER_SAMPLES:-1000 10000 100000}; do
		echo "N = $n:"
		LS_SAMPLES=$n LS_VARIANTS="${LS_VARIANTS:-cupy_fatbin}" "$py" "$peers" inproc 2>&1 |
			tail -n +2
	done
else
	echo "no peers script at $peers: CuPy not run"
fi
exit $rc
