#!/usr/bin/env bash
# tests/examples_check.sh GPUD GPUCTL BUILD — every C example of README.md,
# docs/*.md and the public headers' comments, compiled and run (make test-examples).
#
# Examples are found by their markers:
#   README.md, docs/*.md  a block fenced by ```c and ``` (```c compile-only: not run)
#   include/gpud/*.h  comment lines between @code{.c} and @endcode, less their
#                     leading " * " (@code{.c} compile-only: not run)
# A block with a main function is a whole program. Any other block is a
# function body: it is put inside int main(void), after #include of
# gpud/client.h, stdio.h, stdlib.h and string.h. Each is compiled as C11 with
# -Wall -Wextra -Werror against BUILD's shared library (#line points errors at
# the example's own file and line), then run with $GPUD_URL naming a gpud on
# the cpu backend started here on a temporary socket; it must exit 0.
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: $0 GPUD GPUCTL BUILD" >&2
	exit 2
fi
gpud=$(readlink -f -- "$1")
gpuctl=$(readlink -f -- "$2")
build=$(readlink -f -- "$3")
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
cc=${CC:-cc}
dir=$(mktemp -d /tmp/gpud-examples.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
	rm -rf "$dir"
}
trap cleanup EXIT

# Writes each example to $dir/N.c and a line "N FILE LINE MODE" to $dir/list
# (MODE: program, body; with -compile-only when it is not to be run).
awk -v dir="$dir" '
function start(mode, info) {
	n++; file = dir "/" n ".body"; first = FNR + 1
	kind = (info ~ /compile-only/) ? "-compile-only" : ""
	printf "" > file
	inblock = 1
}
function finish() {
	close(file)
	printf "%d %s %d %s\n", n, FILENAME, first, kind >> (dir "/list")
	inblock = 0
}
FNR == 1 { inblock = 0; md = FILENAME ~ /\.md$/ }
md && !inblock && /^```c([ \t]|$)/ { start("md", $0); next }
md && inblock && /^```[ \t]*$/ { finish(); next }
!md && !inblock && /^[ \t]*\*[ \t]*@code\{\.c\}/ { start("h", $0); next }
!md && inblock && /^[ \t]*\*[ \t]*@endcode/ { finish(); next }
inblock {
	line = $0
	if (!md) sub(/^[ \t]*\*( |$)/, "", line)
	print line >> file
}
END { if (inblock) { print FILENAME ": example not closed" > "/dev/stderr"; exit 1 } }
' README.md docs/*.md include/gpud/*.h
[ -s "$dir/list" ] || { echo "examples_check: no examples found" >&2; exit 1; }

url=ipc://$dir/gpud.sock
"$gpud" --listen "$url" --backend cpu 2>"$dir/gpud.log" &
pid=$!
if ! "$gpuctl" --url "$url" status --wait 30 >/dev/null; then
	cat "$dir/gpud.log" >&2
	echo "examples_check: gpud did not answer on $url" >&2
	exit 1
fi

fail=0 count=0 ran=0
while read -r n file line kind; do
	count=$((count + 1))
	src=$dir/$n.c
	if grep -qE '(^|[^a-z_])main[[:space:]]*\(' "$dir/$n.body"; then
		{
			printf '#line %d "%s"\n' "$line" "$file"
			cat "$dir/$n.body"
		} >"$src"
	else
		{
			printf '#include <gpud/client.h>\n#include <stdio.h>\n'
			printf '#include <stdlib.h>\n#include <string.h>\n\nint main(void)\n{\n'
			printf '#line %d "%s"\n' "$line" "$file"
			cat "$dir/$n.body"
			printf '}\n'
		} >"$src"
	fi
	if ! "$cc" -std=c11 -Wall -Wextra -Werror -Iinclude "$src" -L"$build" -lgpud-client \
		-o "$dir/$n"; then
		echo "examples_check: the example at $file:$line does not compile" >&2
		fail=1
		continue
	fi
	[ "$kind" = -compile-only ] && continue
	rc=0
	GPUD_URL=$url LD_LIBRARY_PATH=$build "$dir/$n" >"$dir/$n.out" 2>&1 || rc=$?
	if [ $rc != 0 ]; then
		echo "examples_check: the example at $file:$line exited $rc:" >&2
		cat "$dir/$n.out" >&2
		fail=1
	else
		ran=$((ran + 1))
		echo "examples_check: $file:$line: $(head -c 200 "$dir/$n.out" | tr '\n' ' ')"
	fi
done <"$dir/list"

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
if [ $status != 0 ]; then
	echo "examples_check: gpud exited $status after SIGTERM" >&2
	cat "$dir/gpud.log" >&2
	fail=1
fi
[ $fail = 0 ] && echo "examples_check: $count examples compiled, $ran of them ran against gpud"
exit $fail
