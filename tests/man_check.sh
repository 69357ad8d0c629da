#!/usr/bin/env bash
# tests/man_check.sh BUILD GPUCTL — the man pages (make test-man), after make
# man has built BUILD/man/* from docs/man/*.scd with scdoc:
#
#   1. every page renders without a warning: groff -man -Tutf8 -ww (groff-base)
#      and man-db's own check (man --warnings -l), where those are installed;
#   2. every page says what the code has:
#        gpud(8)           every long option of daemon/main.c's option table;
#        gpud.conf(5)      every key of daemon/config.c's option table and
#                          every [quota] key (daemon/config_tenants.c), each
#                          as a "*key* = ..." entry,
#                          and in RELOADING every key the table marks live;
#        gpuctl(1)         every command of client/gpuctl/commands.c as a
#                          "## command" section, and every switch that GPUCTL's
#                          'gpuctl help' and 'gpuctl help COMMAND' name;
#        libgpud-client(3) every function include/gpud/*.h declares;
#        one of them       every GPUD_* and GPUCTL_* environment variable that
#                          daemon/, client/ and kernels/ read;
#   3. libgpud-client(3)'s EXAMPLE compiles (C11, -Wall -Wextra -Werror)
#      against BUILD's library.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 BUILD GPUCTL" >&2
	exit 2
fi
build=$(readlink -f -- "$1")
gpuctl=$(readlink -f -- "$2")
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
cc=${CC:-cc}
tmp=$(mktemp -d /tmp/gpud-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
problem() {
	echo "man_check: $*" >&2
	fail=1
}

pages=()
for src in docs/man/*.scd; do
	page=$build/man/$(basename "$src" .scd)
	[ -f "$page" ] || { problem "$page is missing (make man builds it from $src)"; continue; }
	pages+=("$page")
done
[ ${#pages[@]} -ge 4 ] || problem "expected the 4 pages gpud.8 gpuctl.1 gpud.conf.5 libgpud-client.3, found ${#pages[@]}"

# --- 1. rendering ---------------------------------------------------------------
checkers=()
if command -v groff >/dev/null; then checkers+=(groff); fi
if command -v man >/dev/null; then checkers+=(man); fi
for page in "${pages[@]}"; do
	if command -v groff >/dev/null; then
		LC_ALL=C.UTF-8 groff -k -man -Tutf8 -ww -z "$page" 2>"$tmp/groff.err" || true
		[ ! -s "$tmp/groff.err" ] || problem "groff warns about $page:$(printf '\n%s' "$(cat "$tmp/groff.err")")"
	fi
	if command -v man >/dev/null; then
		LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" \
			>/dev/null 2>"$tmp/man.err" || true
		[ ! -s "$tmp/man.err" ] || problem "man warns about $page:$(printf '\n%s' "$(cat "$tmp/man.err")")"
	fi
done

# --- 2. the pages against the code ------------------------------------------------
# needle, file, what: the page source must hold the needle (a fixed string).
has() {
	grep -qF -- "$1" "$2" || problem "$(basename "$2") does not describe $3 (no '$1' in it)"
}
# The lines of a C array: from the line matching $1 to the next line "};".
table() { sed -n "/$1/,/^};/p" "$2"; }

n=0
for opt in $(table 'static const struct option opts\[\]' daemon/main.c |
	sed -n 's/^[[:space:]]*{"\([a-z][a-z-]*\)",.*/\1/p'); do
	has "*--$opt*" docs/man/gpud.8.scd "gpud's option --$opt (daemon/main.c)"
	n=$((n + 1))
done
[ $n -ge 9 ] || problem "found only $n options in daemon/main.c's table: is the pattern stale?"

n=0
for key in $(table 'static const config_option options\[\]' daemon/config.c |
	sed -n -e 's/^[[:space:]]*\(INT\|SIZE\|STRING\)("\([a-z_0-9]*\)".*/\2/p' \
		-e 's/.*\.name = "\([a-z_0-9]*\)".*/\1/p') \
	$(sed -n 's/.*strcmp(key, "\([a-z_0-9]*\)").*/\1/p' daemon/config_tenants.c); do
	grep -qE "^\*$key\* = " docs/man/gpud.conf.5.scd ||
		problem "gpud.conf.5.scd has no entry '*$key* = ...' for the key $key (daemon/config.c)"
	n=$((n + 1))
done
[ $n -ge 40 ] || problem "found only $n keys in daemon/config.c: is the pattern stale?"

# The keys a reload applies (OPT_LIVE in the table) are named under RELOADING.
reloading=$(sed -n '/^# RELOADING/,/^# [A-Z]/p' docs/man/gpud.conf.5.scd)
n=0
for key in $(table 'static const config_option options\[\]' daemon/config.c | awk '
	/^[[:space:]]*(INT|SIZE|STRING)\("/ { s = $0; sub(/^[^"]*"/, "", s); sub(/".*/, "", s); name = s }
	/\.name = "/ { s = $0; sub(/.*\.name = "/, "", s); sub(/".*/, "", s); name = s }
	/OPT_LIVE/ { print name }'); do
	grep -qF "*$key*" <<<"$reloading" ||
		problem "gpud.conf.5.scd's RELOADING does not name $key, which a reload applies (OPT_LIVE)"
	n=$((n + 1))
done
[ $n -ge 5 ] || problem "found only $n live keys in daemon/config.c: is the pattern stale?"

# gpuctl's switches as its help names them: in the usage lines, and at the start of
# an option line ("  --wait SECONDS", "  -q, --quiet").
switches_of() {
	local text
	text=$("$gpuctl" help "$@")
	{
		grep -E '^(usage: |       gpuctl )' <<<"$text" | grep -oE '(^|[[ |])--?[a-zA-Z][a-z-]*' |
			sed 's/^[[ |]//'
		grep -E '^ +--?[a-zA-Z]' <<<"$text" | sed -E 's/^ +//; s/  .*//' |
			grep -oE '(^|, )--?[a-zA-Z][a-z-]*' | sed 's/^, //'
	} | sort -u
}
n=0
for cmd in $(table 'static const ctl_command commands\[\]' client/gpuctl/commands.c |
	sed -n 's/^[[:space:]]*{"\([a-z]*\)", cmd_.*/\1/p'); do
	grep -qE "^## $cmd( |$)" docs/man/gpuctl.1.scd ||
		problem "gpuctl.1.scd has no section '## $cmd ...' for the command $cmd"
	for sw in $(switches_of "$cmd"); do
		has "*$sw*" docs/man/gpuctl.1.scd "gpuctl $cmd's switch $sw ('gpuctl help $cmd')"
	done
	n=$((n + 1))
done
[ $n -ge 10 ] || problem "found only $n commands in client/gpuctl/commands.c: is the pattern stale?"
for sw in $(switches_of); do
	has "*$sw*" docs/man/gpuctl.1.scd "gpuctl's option $sw ('gpuctl help')"
done

n=0
for fn in $(grep -hoE 'GPUD_API [^(]*[ *]gpud_[a-z0-9_]+\(' include/gpud/*.h |
	grep -oE 'gpud_[a-z0-9_]+\($' | tr -d '(' | sort -u); do
	has "$fn(" docs/man/libgpud-client.3.scd "the function $fn (include/gpud)"
	n=$((n + 1))
done
[ $n -ge 60 ] || problem "found only $n functions in include/gpud/*.h: is the pattern stale?"

for var in $(grep -rhoE '"(GPUD|GPUCTL)_[A-Z0-9_]+"' daemon client kernels | tr -d '"' | sort -u); do
	grep -qF "*$var*" docs/man/*.scd || problem "no man page describes the environment variable $var"
done

# --- 3. libgpud-client(3)'s example compiles ------------------------------------------
# shellcheck disable=SC2016 # the fences are backquotes
sed -n '/^# EXAMPLE/,/^# /p' docs/man/libgpud-client.3.scd | sed -n '/^```$/,/^```$/p' |
	sed '/^```$/d; s/\\\\/\\/g' >"$tmp/example.c"
[ -s "$tmp/example.c" ] || problem "libgpud-client.3.scd: no example found under # EXAMPLE"
"$cc" -std=c11 -Wall -Wextra -Werror -Iinclude "$tmp/example.c" -L"$build" -lgpud-client \
	-o "$tmp/example" 2>"$tmp/cc.err" ||
	problem "libgpud-client(3)'s EXAMPLE does not compile:$(printf '\n%s' "$(cat "$tmp/cc.err")")"

if [ $fail = 0 ]; then
	echo "man_check: ${#pages[@]} pages render without warnings" \
		"(${checkers[*]:-no groff or man: rendering not checked}) and describe every" \
		"option, config key, command, switch, function and environment variable the code has"
fi
exit $fail
