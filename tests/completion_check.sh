#!/usr/bin/env bash
# tests/completion_check.sh GPUD GPUCTL — gpuctl's bash completion
# (client/gpuctl/completion.bash) as bash runs it (make test-completion).
#
# The completion is sourced into this bash and its function called with
# COMP_LINE, COMP_POINT, COMP_WORDS and COMP_CWORD set for a command line as
# bash sets them (the words split at '=', ':' and '@' too, as bash's
# COMP_WORDBREAKS splits them); COMPREPLY must hold exactly the expected
# words, and nothing may be written to stderr. gpuctl is GPUCTL, found on
# PATH as bash would find it.
#
#   1. without gpud: commands, global options, each command's switches,
#      kernel add|rm, help's commands; and the switch tables against gpuctl
#      itself: every switch that 'gpuctl help' or 'gpuctl help COMMAND' names
#      is completed, and every switch completed is one gpuctl's help names;
#   2. against GPUD on the cpu backend on a temporary ipc:// socket (ready once
#      'gpuctl status --wait' answers), named by --url on the line (which bash
#      splits at ':') or by $GPUD_URL: kernel names (as 'gpuctl kernels' lists
#      them), run's argument names as NAME= (the inputs and scalars of
#      'gpuctl kernels --json', less those given), -o's output names, kept
#      buffers' handles (free, download, x=%), .npy files and directories
#      for values (x=, x=@, -o NAME=; hidden ones only after a '.'), .cu
#      files for kernel add --source;
#   3. gpud not there (a socket path with no gpud): nothing completed, nothing
#      on stderr; gpud not answering (stopped with SIGSTOP): the same, ended
#      by GPUCTL_COMPLETION_TIMEOUT=1, well before gpuctl's own 10 s connect
#      timeout.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 GPUD GPUCTL" >&2
	exit 2
fi
gpud=$(readlink -f -- "$1")
gpuctl_bin=$(readlink -f -- "$2")
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/gpud-completion.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0 checks=0
problem() {
	echo "completion_check: $*" >&2
	fail=1
}

# gpuctl on PATH, as a user has it.
mkdir -p "$tmp/bin" "$tmp/work/sub"
ln -s "$gpuctl_bin" "$tmp/bin/gpuctl"
export PATH=$tmp/bin:$PATH
unset GPUD_URL GPUD_TOKEN GPUCTL_COMPLETION_TIMEOUT
# shellcheck source=client/gpuctl/completion.bash
. "$here/client/gpuctl/completion.bash"
[ "$(complete -p gpuctl)" = "complete -F _gpuctl gpuctl" ] ||
	problem "sourcing it does not register _gpuctl for gpuctl: $(complete -p gpuctl 2>&1)"

# complete LINE: COMP_* as bash sets them with the cursor at the end of LINE,
# then _gpuctl; COMPREPLY sorted into $got (one line), its stderr into
# $tmp/stderr.
complete_line() {
	local line=$1 w
	local -a parts
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMP_WORDS=()
	read -ra parts <<<"$line"
	for w in "${parts[@]}"; do
		# bash makes a word of each run of word-break characters
		while [[ -n $w ]]; do
			if [[ $w =~ ^([=:@]+) || $w =~ ^([^=:@]+) ]]; then
				COMP_WORDS+=("${BASH_REMATCH[1]}")
				w=${w:${#BASH_REMATCH[1]}}
			fi
		done
	done
	[[ $line == *' ' ]] && COMP_WORDS+=('')
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	# as an interactive bash runs it: without errexit
	set +e
	_gpuctl 2>"$tmp/stderr"
	set -e
	got=$(printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort | tr '\n' ' ')
	got=${got% }
	got=${got# }
}

# expect LINE WORDS...: completing LINE gives exactly WORDS (any order).
expect() {
	local line=$1 want
	shift
	want=$(printf '%s\n' "$@" | LC_ALL=C sort | tr '\n' ' ')
	want=${want% }
	want=${want# }
	complete_line "$line"
	checks=$((checks + 1))
	if [[ $got != "$want" ]]; then
		printf 'completion_check: completing "%s":\n  got:      %s\n  expected: %s\n' \
			"$line" "$got" "$want" >&2
		fail=1
	fi
	if [[ -s $tmp/stderr ]]; then
		problem "completing \"$line\" wrote to stderr: $(cat "$tmp/stderr")"
	fi
}

# --- 1. without gpud ----------------------------------------------------------------
export GPUD_URL=ipc://$tmp/none.sock # no gpud there
commands=(run upload download free ls kernels kernel status demo help)
expect 'gpuctl ' "${commands[@]}"
expect 'gpuctl k' kernels kernel
expect 'gpuctl st' status
expect 'gpuctl -' --url --token --timeout -q --quiet -v --verbose -V --version -h --help
expect 'gpuctl --t' --token --timeout
expect 'gpuctl --url ' 'ipc://' 'tcp://' 'tls+tcp://'
expect 'gpuctl --token ' # a secret: nothing to offer
expect 'gpuctl -q --timeout 5 sta' status
expect 'gpuctl status --' --wait --json --help
expect 'gpuctl status --wait ' # seconds
expect 'gpuctl run -' -o --output --json --device --help
expect 'gpuctl upload --' --keep --device --help
expect 'gpuctl kernels --' --json --names --custom --args --help
expect 'gpuctl kernel ' add rm
expect 'gpuctl kernel add k --b' --block --blocks-per-sm
expect 'gpuctl kernel add k --u' --unpinned
expect 'gpuctl kernel add k --entry ' # a function name
expect 'gpuctl kernel rm k --' --shared --help
expect 'gpuctl demo --r' --runs
expect 'gpuctl help ' "${commands[@]}"
expect 'gpuctl help ker' kernels kernel
expect 'gpuctl help kernel ' # one COMMAND
# Every switch gpuctl's help names is completed, and every one completed is named there.
switches_of() { # as tests/man_check.sh reads them
	local text
	text=$(gpuctl help "$@")
	{
		grep -E '^(usage: |       gpuctl )' <<<"$text" | grep -oE '(^|[[ |])--?[a-zA-Z][a-z-]*' |
			sed 's/^[[ |]//'
		grep -E '^ +--?[a-zA-Z]' <<<"$text" | sed -E 's/^ +//; s/  .*//' |
			grep -oE '(^|, )--?[a-zA-Z][a-z-]*' | sed 's/^, //'
	} | sort -u
}
compare_switches() { # what, help's switches, completed ones
	local sw
	for sw in $2; do
		[[ " $3 " == *" $sw "* ]] || problem "$1: 'gpuctl help' names $sw, the completion does not offer it"
	done
	for sw in $3; do
		# --help and --output (-o's long form) work everywhere -o or a command does
		[[ $sw == --help || $sw == --output || " $2 " == *" $sw "* ]] ||
			problem "$1: the completion offers $sw, which 'gpuctl help' does not name"
	done
	checks=$((checks + 1))
}
compare_switches "gpuctl's own options" "$(switches_of | tr '\n' ' ')" "$_gpuctl_global_options"
for cmd in run upload download free ls kernels status demo help; do
	compare_switches "gpuctl $cmd" "$(switches_of "$cmd" | tr '\n' ' ')" "$(_gpuctl_switches "$cmd")"
done
compare_switches "gpuctl kernel" "$(switches_of kernel | tr '\n' ' ')" \
	"$(_gpuctl_switches 'kernel add') $(_gpuctl_switches 'kernel rm')"

# --- 2. against a gpud ------------------------------------------------------------------
sock=$tmp/gpud.sock
url=ipc://$sock
"$gpud" --listen "$url" --backend cpu 2>"$tmp/gpud.log" &
pid=$!
if ! gpuctl --url "$url" status --wait 30 >/dev/null; then
	cat "$tmp/gpud.log" >&2
	echo "completion_check: gpud did not answer on $url" >&2
	exit 1
fi
cd "$tmp/work"
gpuctl --url "$url" run uniform n=4 seed=1 -o x.npy
: >sub/y.npy
: >notes.txt
: >k.cu
: >.hidden.npy
# The kernels as 'gpuctl kernels' lists them (a name at the start of a line).
mapfile -t kernels < <(gpuctl --url "$url" kernels | grep -E '^[a-z]')
[ ${#kernels[@]} -ge 10 ] || problem "gpuctl kernels lists ${#kernels[@]} kernels: ${kernels[*]}"
# lombscargle's inputs and scalars, from gpuctl kernels --json.
mapfile -t ls_args < <(gpuctl --url "$url" kernels --json | "$python" -c '
import json, sys
for k in json.load(sys.stdin)["kernels"]:
    if k["name"] == "lombscargle":
        print("\n".join(p["name"] + "=" for p in k["params"] if p["role"] != "out"))')
[ ${#ls_args[@]} -ge 5 ] || problem "lombscargle has ${#ls_args[@]} inputs and scalars: ${ls_args[*]}"

for at in "--url $url" "--url=$url" "-q --url $url -v"; do
	expect "gpuctl $at run " "${kernels[@]}"
	expect "gpuctl $at run lomb" lombscargle lombscargle_many
	expect "gpuctl $at kernels --args lomb" lombscargle lombscargle_many
done
export GPUD_URL=$url
expect 'gpuctl run ' "${kernels[@]}"
expect 'gpuctl kernel rm ' "${kernels[@]}"
expect 'gpuctl run lombscargle ' "${ls_args[@]}"
expect 'gpuctl run lombscargle fl' floating_mean=
expect 'gpuctl run lombscargle x=@x.npy fl' floating_mean=
# shellcheck disable=SC2046 # one word per argument
expect 'gpuctl run lombscargle x=@x.npy y=y.npy -o pg.npy ' \
	$(printf '%s\n' "${ls_args[@]}" | grep -vxE 'x=|y=')
expect 'gpuctl run lombscargle x' x=
expect 'gpuctl run axpy ' x= y= a=
expect 'gpuctl run lombscargle -o ' pgram= sub/ x.npy
expect 'gpuctl run lombscargle -o pgram=' sub/ x.npy
expect 'gpuctl run lombscargle --output pg' pgram=
expect 'gpuctl run lombscargle x=' sub/ x.npy
expect 'gpuctl run lombscargle x=@' @sub/ @x.npy
expect 'gpuctl run lombscargle x=@sub/' @sub/y.npy
expect 'gpuctl run lombscargle x=s' sub/
expect 'gpuctl run lombscargle x=.h' .hidden.npy # hidden files when asked for
expect 'gpuctl run nosuch ' # an unknown kernel has no arguments
expect 'gpuctl upload ' sub/ x.npy
expect 'gpuctl upload @' @sub/ @x.npy
expect 'gpuctl download h -o ' sub/ x.npy
expect 'gpuctl kernel add k --source ' k.cu sub/
expect 'gpuctl free ' # no kept buffers yet
h=$(gpuctl upload --keep x.npy)
[[ $h =~ ^[0-9a-f]{16}$ ]] || problem "gpuctl upload --keep printed '$h', not a handle"
other=$([[ ${h:0:1} == 0 ]] && echo 1 || echo 0) # a first digit no handle has
expect 'gpuctl free ' "$h"
expect "gpuctl free ${h:0:3}" "$h"
expect "gpuctl free $other"
expect 'gpuctl download ' "$h"
expect 'gpuctl run sum x=%' "%$h"
expect "gpuctl --url $url run sum x=%${h:0:5}" "%$h"
gpuctl free "$h"
expect 'gpuctl free '

# --- 3. no gpud, and a gpud that does not answer ----------------------------------------
expect "gpuctl --url ipc://$tmp/none.sock run "
expect "gpuctl --url ipc://$tmp/none.sock run lombscargle "
expect "gpuctl --url ipc://$tmp/none.sock free "
unset GPUD_URL
expect "gpuctl --url tcp://127.0.0.1:1 run " # nothing listens on port 1
# Stopped, gpud takes connections (the kernel queues them) but answers none.
# Last: with nng 1.5.2 a client that gives up mid-handshake stops gpud from
# accepting others (docs/lab-node.md, "Stray connections"), so this gpud serves no more.
kill -STOP "$pid"
export GPUCTL_COMPLETION_TIMEOUT=1
t0=$(date +%s%N)
expect "gpuctl --url $url run "
expect "gpuctl --url $url free "
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
# Two questions of at most 1 s each; gpuctl alone would wait 10 s for each.
if [ $elapsed_ms -ge 8000 ]; then
	problem "completing against a gpud that does not answer took $elapsed_ms ms" \
		"(two questions, GPUCTL_COMPLETION_TIMEOUT=1)"
fi
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
pid=

if [ $fail = 0 ]; then
	echo "completion_check: $checks checks passed (commands, switches against gpuctl's help," \
		"kernels, arguments, outputs, handles and files against a gpud;" \
		"quiet and bounded without one: $elapsed_ms ms against a stopped gpud)"
fi
exit $fail
