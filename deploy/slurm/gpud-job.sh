#!/usr/bin/env bash
# A Slurm batch job with a gpud of its own: the job's GPU (GRES), one gpud on
# it for the job's lifetime, the job's processes as clients over a socket in
# the job's temporary directory. gpud's log is kept beside the job's output
# (gpud-JOBID.log in the submit directory, or GPUD_JOB_LOG). If gpud exits
# before it answers, the job ends at once with gpud's exit status and the end
# of its log. make test-deploy checks it with bash -n and ShellCheck, and runs
# it against a gpud that fails and one that serves.
# Submit: sbatch deploy/slurm/gpud-job.sh your-program ARGS...
#SBATCH --job-name=gpud-job
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
set -euo pipefail

dir=$(mktemp -d "${TMPDIR:-/tmp}/gpud.XXXXXX")
log=${GPUD_JOB_LOG:-${SLURM_SUBMIT_DIR:-$PWD}/gpud-${SLURM_JOB_ID:-$$}.log}
export GPUD_URL="ipc://$dir/gpud.sock"
# Slurm sets CUDA_VISIBLE_DEVICES to the job's GPUs: gpud serves them all.
gpud --listen "$GPUD_URL" --backend cuda --device all --log-level warn 2>"$log" &
gpud_pid=$!
stop_gpud() {
	kill -TERM "$gpud_pid" 2>/dev/null || true
	wait "$gpud_pid" 2>/dev/null || true
	rm -rf "$dir" # the socket; the log stays
}
trap stop_gpud EXIT
# Waits until gpud answers (its start-up: context, pool, kernels), up to 60 s,
# a second at a time, and gives up as soon as gpud has exited.
for _ in $(seq 60); do
	if ! kill -0 "$gpud_pid" 2>/dev/null; then
		rc=0
		wait "$gpud_pid" || rc=$?
		echo "gpud-job: gpud exited with status $rc before it answered; its log, $log:" >&2
		tail -n 20 "$log" >&2
		exit $((rc ? rc : 1))
	fi
	if gpuctl status --wait 1 >/dev/null 2>&1; then
		break
	fi
done
gpuctl status >/dev/null # not up after 60 s: gpuctl says why

if [ "$#" -gt 0 ]; then
	"$@"
else
	gpuctl status
	gpuctl kernels
fi
