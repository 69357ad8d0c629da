#!/usr/bin/env bash
# tests/headers_check.sh LIBGPUD_CLIENT_SO VERSION — the public headers
# (include/gpud/*.h) as users and FFI layers get them (make test-headers):
#   - each compiles alone as C11 (-pedantic) and as C++11, warnings as errors;
#   - they include only <stddef.h>, <stdint.h> and each other: no stdio.h;
#   - gpud/client.h through the preprocessor parses with pycparser and cffi,
#     every function it declares is exported by the shared library, and calls
#     through cffi and ctypes return what they should (tests/ffi_check.py,
#     with Debian's /usr/bin/python3 and python3-cffi; $FFI_CHECK_PYTHON
#     overrides).
# The preprocessor gets -D'__attribute__(x)=': the C library's stddef.h has
# GCC attributes (max_align_t) that no FFI parser reads; the headers
# themselves have none outside GPUD_BUILDING_LIB.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 LIBGPUD_CLIENT_SO VERSION" >&2
	exit 2
fi
so=$(readlink -f -- "$1")
version=$2
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
cc=${CC:-cc}
cxx=${CXX:-c++}
py=${FFI_CHECK_PYTHON:-/usr/bin/python3}
dir=$(mktemp -d /tmp/gpud-headers.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0

for h in include/gpud/*.h; do
	name=${h#include/}
	printf '#include <%s>\n' "$name" >"$dir/one.c"
	if ! "$cc" -std=c11 -pedantic -Wall -Wextra -Werror -Iinclude -fsyntax-only "$dir/one.c"; then
		echo "headers_check: $name does not compile alone as C11" >&2
		fail=1
	fi
	if ! "$cxx" -std=c++11 -x c++ -pedantic -Wall -Wextra -Werror -Iinclude -fsyntax-only \
		"$dir/one.c"; then
		echo "headers_check: $name does not compile alone as C++11" >&2
		fail=1
	fi
	bad=$(grep -E '^[[:space:]]*#[[:space:]]*include' "$h" |
		grep -vE '<(stddef\.h|stdint\.h|gpud/[a-z]+\.h)>' || true)
	if [ -n "$bad" ]; then
		printf 'headers_check: %s includes more than <stddef.h>, <stdint.h> and gpud/:\n%s\n' \
			"$name" "$bad" >&2
		fail=1
	fi
done

printf '#include <gpud/client.h>\n' >"$dir/all.c"
deps=$("$cc" -M -Iinclude "$dir/all.c" | tr ' \\' '\n\n')
if grep -q '/stdio\.h$' <<<"$deps"; then # not cc | grep -q: see install_check.sh
	echo "headers_check: the public headers pull in stdio.h" >&2
	fail=1
fi
"$cc" -E -P -D'__attribute__(x)=' -Iinclude "$dir/all.c" >"$dir/client.i"
if [ ! -x "$py" ]; then
	echo "headers_check: $py not found; install python3-cffi (scripts/install-deps.sh)" >&2
	exit 1
fi
"$py" tests/ffi_check.py "$dir/client.i" "$so" "$version" || fail=1

if [ $fail = 0 ]; then
	echo "headers_check: $(ls include/gpud/*.h | wc -l) public headers: C11, C++11, no stdio.h, FFI-parseable"
fi
exit $fail
