#!/usr/bin/env bash
# tests/wheel_check.sh WHEEL_DIR GPUD GPUCTL — make test-wheel.
# The wheel of WHEEL_DIR (make wheel) installed with pip --no-index into a
# fresh venv (numpy from Debian's python3-numpy: --system-site-packages),
# then checked from a directory outside the source tree with PYTHONPATH and
# GPUD_LIB unset: the library inside needs only glibc and exports only gpud_*,
# gpud is imported from the venv and loads the wheel's own library, and part
# of the Python suite passes against GPUD.
set -euo pipefail
wheel_dir=$(realpath "$1")
gpud=$(realpath "$2")
gpuctl=$(realpath "$3")
tree=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-/usr/bin/python3}
fail() { echo "test-wheel: $*" >&2; exit 1; }

wheels=("$wheel_dir"/gpud-*.whl)
if [ ${#wheels[@]} != 1 ] || [ ! -f "${wheels[0]}" ]; then fail "not one gpud-*.whl in $wheel_dir"; fi
whl=${wheels[0]}
case $(basename "$whl") in
*-py3-none-manylinux_2_*_x86_64.whl | *-py3-none-linux_*.whl) ;;
*) fail "$(basename "$whl") is not a py3-none platform wheel" ;;
esac

work=$(mktemp -d /tmp/gpud-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH GPUD_LIB
export PYTHONDONTWRITEBYTECODE=1

# The library inside the wheel: glibc only, gpud_* only.
mkdir "$work/unzipped"
"$python" -m zipfile -e "$whl" "$work/unzipped"
so=$work/unzipped/gpud/_libs/libgpud-client.so.0
[ -f "$so" ] || fail "$(basename "$whl") has no gpud/_libs/libgpud-client.so.0"
others=$(ldd "$so" | awk '{print $1}' |
	grep -vE '^(linux-vdso\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|/lib.*/ld-linux)' || true)
[ -z "$others" ] || fail "the wheel's library needs more than glibc: $others"
bad=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | grep -vE '^gpud_' | grep -E '.' || true)
bad+=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | grep -E '^gpud__' || true)
[ -z "$bad" ] || fail "the wheel's library exports more than gpud_*: $bad"
echo "test-wheel: $(basename "$whl"): library needs only glibc, exports only gpud_*"
# Its nng is the client libraries' (NNG_CLIENT_LAZY_A): mbed TLS's PSA crypto
# is started by a TLS endpoint's setup alone, not by nng's start in every client.
callers=$(objdump -d --no-show-raw-insn "$so" |
	awk '/^[0-9a-f]+ <.*>:$/ { fn = $2 } /call .*<psa_crypto_init>/ { print fn }' | sort -u | tr '\n' ' ')
[ "$callers" = "<tls_setup>: " ] ||
	fail "the wheel's library calls psa_crypto_init from ${callers:-nowhere}, not tls_setup alone"

# A fresh venv, the wheel installed from the file alone.
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-index --no-deps "$whl"

# Outside the tree: the package is the venv's and its library the wheel's.
mkdir "$work/run"
cd "$work/run"
"$work/venv/bin/python" - "$work/venv" <<'PY'
import os, sys
import gpud
from gpud import _lib
venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(gpud.__file__)
assert where.startswith(venv + os.sep), "gpud imported from %s, not the venv" % where
assert _lib.source == "wheel", "library from %s (%s), not the wheel's" % (_lib.source, _lib.path)
lib = os.path.realpath(_lib.path)
assert lib == os.path.join(os.path.dirname(where), "_libs", "libgpud-client.so.0"), lib
print("test-wheel: gpud %s from %s, library %s" % (gpud.__version__, where, lib))
PY

# GPUD_LIB set still wins over the wheel's library; a wheel's library that
# does not load fails the import with its path and the loader's reason.
out=$(GPUD_LIB=$work/none.so "$work/venv/bin/python" -c 'import gpud' 2>&1) &&
	fail "GPUD_LIB=$work/none.so: gpud imported"
grep -q "$work/none.so" <<<"$out" || fail "GPUD_LIB not tried first: $out"
site=$("$work/venv/bin/python" -c 'import os, gpud; print(os.path.dirname(os.path.dirname(gpud.__file__)))')
mkdir -p "$work/broken/gpud/_libs"
cp "$site"/gpud/*.py "$work/broken/gpud/"
head -c 4096 /dev/zero >"$work/broken/gpud/_libs/libgpud-client.so.0"
out=$(PYTHONPATH=$work/broken "$work/venv/bin/python" -c 'import gpud' 2>&1) &&
	fail "a broken wheel library: gpud imported"
grep -q "cannot load the package's own libgpud-client, $work/broken/gpud/_libs/libgpud-client.so.0: .*invalid ELF header" <<<"$out" ||
	fail "a broken wheel library: the error names not its path and reason: $out"
echo "test-wheel: GPUD_LIB wins; a wheel library that does not load is named with the reason"

# Part of the Python suite, copied out of the tree, run with the venv's
# python; conftest.py checks the package it imports is the venv's too.
mkdir "$work/run/tests"
cp "$tree"/python/tests/{conftest.py,ls_reference.py,test_run.py,test_signal.py,test_status.py,test_hostmem.py} \
	"$work/run/tests/"
cat > "$work/run/tests/test_from_wheel.py" <<'PY'
import os
import sys

import gpud
from gpud import _lib


def test_package_and_library_are_the_wheels():
    venv = os.path.realpath(sys.prefix)
    assert os.path.realpath(gpud.__file__).startswith(venv + os.sep)
    assert _lib.source == "wheel"
    assert os.path.realpath(_lib.path).startswith(venv + os.sep)
PY
GPUD_BIN=$gpud GPUCTL_BIN=$gpuctl "$work/venv/bin/python" -m pytest -p no:cacheprovider -q tests
