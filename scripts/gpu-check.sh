#!/usr/bin/env bash
# scripts/gpu-check.sh — on a GPU machine, the GPU suite, the scipy check and
# the lombscargle benchmarks from programs built elsewhere (no make, no
# compiler or Debian packages needed there):
#
#   here:  make BUILD=.devcarry/build CUDA_ARCHS=90 gpu-bundle   # -> .devcarry/bin
#   there: scripts/gpu-check.sh .devcarry/bin [STEP...]
#
# STEPs (default: all, in this order):
#   suite      make test-gpu's three steps: every kernel against its CPU
#              reference, the end-to-end suite and the Python suite on cuda
#   sanitize   gpud's start (every kernel's self-test) under compute-sanitizer's
#              memcheck and initcheck (scripts/sanitize-selftest.sh)
#   scipy      tests/scipy_check.sh against gpud's cuda backend
#   bench-ls   make bench-lombscargle: gpud's kernels and the CuPy peer
#   first      make bench-first-result: fresh processes, file and grid
#   transfer   make bench-transfer: round trips (ring, socket, nng echo,
#              in-process), bandwidth per path, concurrency (quick with
#              TRANSFER_QUICK=1), then bench/net_floor (the host's own
#              loopback, nng and mbedtls figures); not in the default list
#   hot        every row of README.md's hot-path table in one call, each beside
#              its anchor: fresh gpuctl (bench/fresh_gpuctl.py, its floors and
#              steps), the ring (bench/ring_latency), the one-trip job
#              (bench/transfer quick), Python's add (bench/python_hot.py), the
#              kernels at 114 x 2^20 with the CuPy peer, survey scale
#              (bench/survey.py, HOT_SURVEY_ROUNDS, default 2); not in the
#              default list
# PYTHON (default python3) must have numpy, pytest, scipy and, for bench-ls,
# CuPy; PEERS is ../shared/anchors/lombscargle_peers.py or $PEERS. Prints
# one line per step with its exit status; exits 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build=${1:?usage: scripts/gpu-check.sh BUILD [STEP...]}
shift
build=$(readlink -f -- "$build")
steps=${*:-suite sanitize scipy bench-ls first}
py=${PYTHON:-python3}
peers=${PEERS:-../shared/anchors/lombscargle_peers.py}
[ -f "$peers" ] || peers=shared/anchors/lombscargle_peers.py
# the library by its soname, libgpud-client.so.ABI (the shortest of the names)
lib=$(find "$build" -maxdepth 1 -name 'libgpud-client.so.[0-9]*' | awk '!n || length < n {n = length; s = $0} END {print s}')
export GPUD_BIN=$build/gpud GPUCTL_BIN=$build/gpuctl PYTHONDONTWRITEBYTECODE=1
# libgpud-client.so's own libraries (protobuf-c, mbedtls; nng is inside it), where the GPU
# machine has none: copied beside the programs, in BUILD/lib
if [ -d "$build/lib" ]; then
	export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
summary=()
step() {
	local name=$1
	shift
	echo "===== $name: $*"
	local t0=$SECONDS rc=0
	"$@" || rc=$?
	summary+=("$(printf '%-10s exit %d, %d s' "$name" "$rc" $((SECONDS - t0)))")
	return 0
}
for s in $steps; do
	case $s in
	suite)
		step gpu-kernels "$build/test-gpu"
		step gpu-e2e env GPUD_BACKEND=cuda E2E_PYTHON="$(command -v "$py")" "$build/test-e2e"
		step gpu-python bash -c "cd python && GPUD_BACKEND=cuda GPUD_LIB=$lib \
			$py -m pytest -p no:cacheprovider -q tests"
		;;
	sanitize)
		step sanitize scripts/sanitize-selftest.sh "$build/gpud" "$build/gpuctl"
		;;
	scipy)
		step scipy env GPUD_BACKEND=cuda SCIPY_CHECK_PYTHON="$(command -v "$py")" \
			tests/scipy_check.sh "$build/gpud" "$build/gpuctl"
		;;
	bench-ls)
		step bench-ls-114 "$build/bench/lombscargle" "$build/gpud" 20 114 1048576
		step bench-ls-10k "$build/bench/lombscargle" "$build/gpud" 5 10000 1048576
		step peers-114 env LS_VARIANTS="cupy_fatbin cupy_fatbin_accurate" "$py" "$peers" inproc
		step peers-10k env LS_SAMPLES=10000 LS_VARIANTS="cupy_fatbin cupy_fatbin_accurate" \
			"$py" "$peers" inproc
		;;
	first)
		step first "$build/bench/first_result" "$build/gpud" "$build/gpuctl" \
			"$build/bench/standalone_lombscargle"
		;;
	hot)
		step hot-fresh "$py" bench/fresh_gpuctl.py --backend cuda --rounds 30 --phases "$build"
		step hot-ring env GPUD_BACKEND=cuda scripts/bench-ring.sh "$build/gpud" \
			"$build/bench/ring_latency" 20000
		step hot-transfer "$build/bench/transfer" "$build/gpud" "$build/gpuctl" quick
		step hot-python "$py" bench/python_hot.py "$build/gpud" "$build/bench/tiny_call"
		step hot-ls "$build/bench/lombscargle" "$build/gpud" 20 114 1048576
		step hot-peers env LS_VARIANTS="cupy_fatbin" "$py" "$peers" inproc
		step hot-survey "$py" bench/survey.py "$build/gpud" "$lib" "$build/bench/batch_clients" \
			"${HOT_SURVEY_ROUNDS:-2}"
		;;
	transfer)
		step transfer "$build/bench/transfer" "$build/gpud" "$build/gpuctl" \
			${TRANSFER_QUICK:+quick}
		step net-floor "$build/bench/net_floor" ${TRANSFER_QUICK:+64}
		;;
	*)
		echo "gpu-check: unknown step '$s' (suite, sanitize, scipy, bench-ls, first, transfer, hot)" >&2
		exit 2
		;;
	esac
done
echo "===== gpu-check summary"
printf '%s\n' "${summary[@]}"
for l in "${summary[@]}"; do
	case $l in *"exit 0,"*) ;; *) exit 1 ;; esac
done
