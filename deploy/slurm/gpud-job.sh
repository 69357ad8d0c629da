#!/usr/bin/env bash
# A Slurm batch job with a gpud of its own: the job's GPU (GRES), one gpud on
# it for the job's lifetime, the job's processes as clients over a socket in
# the job's temporary directory. make test-deploy checks it with bash -n and
# ShellCheck. Submit: sbatch deploy/slurm/gpud-job.sh your-program ARGS...
#SBATCH --job-name=gpud-job
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
set -euo pipefail

dir=$(mktemp -d "${TMPDIR:-/tmp}/gpud.XXXXXX")
export GPUD_URL="ipc://$dir/gpud.sock"
# Slurm sets CUDA_VISIBLE_DEVICES to the job's GPUs: gpud serves them all.
gpud --listen "$GPUD_URL" --backend cuda --device all --log-level warn 2>"$dir/gpud.log" &
gpud_pid=$!
stop_gpud() {
	kill -TERM "$gpud_pid" 2>/dev/null || true
	wait "$gpud_pid" || true
	rm -rf "$dir"
}
trap stop_gpud EXIT
# Waits until gpud answers (its start-up: context, pool, kernels).
gpuctl status --wait 60 >/dev/null

if [ "$#" -gt 0 ]; then
	"$@"
else
	gpuctl status
	gpuctl kernels
fi
