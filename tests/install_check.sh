#!/usr/bin/env bash
# tests/install_check.sh VERSION ABI — make install and make uninstall, as a
# packager and a user meet them (make test-install). Run from make (it calls
# $MAKE install with the build's own variables, so nothing is rebuilt).
#
#   1. make install DESTDIR=T PREFIX=/opt/gpud-test: exactly the expected
#      files, all under T/opt/gpud-test (the config in its etc/gpud), the
#      shared library's soname and links, the .pc and the unit naming
#      /opt/gpud-test, its sysusers.d and tmpfiles.d files (as shipped), the
#      man pages in share/man/manN (man finds them there),
#      gpuctl's bash completion in share/bash-completion/completions;
#   2. pkg-config (PKG_CONFIG_PATH into T, PKG_CONFIG_SYSROOT_DIR=T) gives
#      the expected --modversion, --cflags, --libs, --static --libs;
#   3. tests/install/program.c built with those flags, dynamically (it must
#      load T's libgpud-client.so.ABI) and statically (cc -static: a link
#      that fails if Libs.private lacks a library), run without gpud, then
#      against T's own gpud (cpu backend, a temporary ipc:// socket, ready
#      once T's gpuctl 'status --wait' answers);
#      The Python package, from its install directory (PYTHONPATH), runs a
#      kernel on that gpud;
#   4. make uninstall leaves no file; a config changed after install is kept;
#      SYSCONFDIR=/etc puts the config in T/etc/gpud instead.
set -euo pipefail
# Checks read a command's whole output first (grep -q <<<"$(cmd)"), never
# cmd | grep -q: grep -q exits at the first match, and under pipefail the
# SIGPIPE that cmd may then get would fail the check.

if [ $# -ne 2 ]; then
	echo "usage: $0 VERSION ABI" >&2
	exit 2
fi
version=$1 abi=$2
make=${MAKE:-make}
python=${PYTHON:-/usr/bin/python3}
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pydir=lib/python$pyver/dist-packages
cc=${CC:-cc}
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
# Only PREFIX and DESTDIR (and SYSCONFDIR in step 4) decide where things go.
unset BINDIR LIBDIR INCLUDEDIR PKGCONFIGDIR SYSCONFDIR DOCDIR SYSTEMDUNITDIR SYSUSERSDIR TMPFILESDIR \
	DESTDIR PREFIX
tmp=$(mktemp -d /tmp/gpud-install.XXXXXX)
root=$tmp/root prefix=/opt/gpud-test
P=$root$prefix
pid=
cleanup() {
	if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "install_check: $*" >&2
	exit 1
}
run_make() { # log, then make arguments
	local log=$1
	shift
	if ! "$make" --no-print-directory "$@" >"$log" 2>&1; then
		cat "$log" >&2
		fail "make $* failed"
	fi
}
files_under() { # every file and link under $1, relative to it, sorted (no __pycache__)
	(cd "$1" && find . -name __pycache__ -prune -o \( -type f -o -type l \) -print |
		sed 's|^\./||' | LC_ALL=C sort)
}
expect_eq() { # what, got, expected
	if [ "$2" != "$3" ]; then
		printf 'install_check: %s:\n  got:      %s\n  expected: %s\n' "$1" "$2" "$3" >&2
		exit 1
	fi
}

# --- 1. what make install puts where ---------------------------------------
run_make "$tmp/install.log" install DESTDIR="$root" PREFIX="$prefix"
so=libgpud-client.so.$version soname=libgpud-client.so.$abi
expected=$(
	LC_ALL=C sort <<-LIST
		opt/gpud-test/bin/gpud
		opt/gpud-test/bin/gpuctl
		opt/gpud-test/etc/gpud/gpud.conf
		opt/gpud-test/lib/libgpud-client.a
		opt/gpud-test/lib/$so
		opt/gpud-test/lib/$soname
		opt/gpud-test/lib/libgpud-client.so
		opt/gpud-test/lib/pkgconfig/gpud-client.pc
		opt/gpud-test/lib/systemd/system/gpud.service
		opt/gpud-test/lib/sysusers.d/gpud.conf
		opt/gpud-test/lib/tmpfiles.d/gpud.conf
		opt/gpud-test/share/doc/gpud/README.md
		$(cd docs && ls ./*.md | sed 's|^\./|opt/gpud-test/share/doc/gpud/docs/|')
		$(cd include && ls gpud/*.h | sed 's|^|opt/gpud-test/include/|')
		$(cd python && ls gpud/*.py gpud/py.typed | sed "s|^|opt/gpud-test/$pydir/|")
		opt/gpud-test/$pydir/gpud/_install.py
		$(cd docs/man && ls ./*.scd | sed -E 's|^\./(.*)\.([0-9])\.scd$|opt/gpud-test/share/man/man\2/\1.\2|')
		opt/gpud-test/share/bash-completion/completions/gpuctl
	LIST
)
expect_eq "files installed" "$(files_under "$root" | tr '\n' ' ')" "$(echo "$expected" | tr '\n' ' ')"
expect_eq "$soname links to" "$(readlink "$P/lib/$soname")" "$so"
expect_eq "libgpud-client.so links to" "$(readlink "$P/lib/libgpud-client.so")" "$soname"
expect_eq "$so's soname" \
	"$(readelf -d "$P/lib/$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')" "$soname"
cmp -s config/gpud.conf "$P/etc/gpud/gpud.conf" || fail "the installed gpud.conf is not config/gpud.conf"
pc=$P/lib/pkgconfig/gpud-client.pc
for line in "prefix=$prefix" 'libdir=${prefix}/lib' 'includedir=${prefix}/include' \
	"Version: $version" 'Libs: -L${libdir} -lgpud-client' 'Cflags: -I${includedir}'; do
	grep -qxF -- "$line" "$pc" || fail "$pc has no line '$line':$(printf '\n%s' "$(cat "$pc")")"
done
grep -qxF "LIBDIR = \"$prefix/lib\"" "$P/$pydir/gpud/_install.py" ||
	fail "gpud/_install.py does not name $prefix/lib: $(cat "$P/$pydir/gpud/_install.py")"
npy=$(ls python/gpud/*.py | wc -l)
[ "$(ls "$P/$pydir/gpud/__pycache__/"*.pyc | wc -l)" = $((npy + 1)) ] ||
	fail "make install did not byte-compile every module of the Python package"
if grep -rqF "$root" "$P/$pydir/gpud"; then fail "the Python package names DESTDIR $root"; fi
grep -qxF "ExecStart=$prefix/bin/gpud --config $prefix/etc/gpud/gpud.conf" \
	"$P/lib/systemd/system/gpud.service" || fail "gpud.service does not start $prefix/bin/gpud"
grep -qF "gpud $version " <<<"$("$P/bin/gpud" --version)" || fail "gpud --version does not say $version"
cmp -s systemd/gpud.sysusers "$P/lib/sysusers.d/gpud.conf" ||
	fail "the installed sysusers.d/gpud.conf is not systemd/gpud.sysusers"
cmp -s systemd/gpud.tmpfiles "$P/lib/tmpfiles.d/gpud.conf" ||
	fail "the installed tmpfiles.d/gpud.conf is not systemd/gpud.tmpfiles"
for page in gpud.8 gpuctl.1 gpud.conf.5 libgpud-client.3; do
	name=${page%.*} sect=${page##*.}
	grep -qF ".TH \"$name\" \"$sect\"" "$P/share/man/man$sect/$page" ||
		fail "$P/share/man/man$sect/$page is not the man page $name($sect)"
	if command -v man >/dev/null; then
		expect_eq "man -M $P/share/man -w $sect $name" "$(man -M "$P/share/man" -w "$sect" "$name")" \
			"$P/share/man/man$sect/$page"
	fi
done
cmp -s client/gpuctl/completion.bash "$P/share/bash-completion/completions/gpuctl" ||
	fail "the installed bash completion is not client/gpuctl/completion.bash"
expect_eq "complete -p gpuctl after sourcing the installed completion" \
	"$(bash -c '. "$1" && complete -p gpuctl' _ "$P/share/bash-completion/completions/gpuctl")" \
	"complete -F _gpuctl gpuctl"

# --- 2. pkg-config ------------------------------------------------------------
export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
pc() { pkg-config "$@" gpud-client | sed 's/[[:space:]]*$//'; } # pkgconf ends with a space
expect_eq "pkg-config --modversion" "$(pc --modversion)" "$version"
expect_eq "pkg-config --cflags" "$(pc --cflags)" "-I$P/include"
expect_eq "pkg-config --libs" "$(pc --libs)" "-L$P/lib -lgpud-client"
expect_eq "pkg-config --static --libs" "$(pc --static --libs)" \
	"-L$P/lib -lgpud-client -lmbedtls -lmbedx509 -lmbedcrypto -lprotobuf-c -lpthread"

# --- 3. a program built against the install -------------------------------------
flags=(-std=c11 -Wall -Wextra -Werror)
# shellcheck disable=SC2046 # pkg-config's words are flags
"$cc" "${flags[@]}" tests/install/program.c $(pkg-config --cflags --libs gpud-client) \
	-o "$tmp/dynamic"
# shellcheck disable=SC2046
"$cc" "${flags[@]}" -static tests/install/program.c \
	$(pkg-config --static --cflags --libs gpud-client) -o "$tmp/static" 2>"$tmp/static.log" || {
	cat "$tmp/static.log" >&2
	fail "the static link with pkg-config --static --libs failed"
}
grep -qF "Shared library: [$soname]" <<<"$(readelf -d "$tmp/dynamic")" ||
	fail "the dynamic program does not need $soname"
if grep -q NEEDED <<<"$(readelf -d "$tmp/static")"; then
	fail "the static program needs shared libraries: $(readelf -d "$tmp/static" | grep NEEDED)"
fi
export LD_LIBRARY_PATH=$P/lib
grep -qF "$soname => $P/lib/$soname" <<<"$(ldd "$tmp/dynamic")" ||
	fail "the dynamic program does not load $P/lib/$soname: $(ldd "$tmp/dynamic")"
"$tmp/dynamic" "$version" >/dev/null
"$tmp/static" "$version" >/dev/null

url=ipc://$tmp/gpud.sock
"$P/bin/gpud" --listen "$url" --backend cpu 2>"$tmp/gpud.log" &
pid=$!
if ! "$P/bin/gpuctl" --url "$url" status --wait 30 >/dev/null; then
	cat "$tmp/gpud.log" >&2
	fail "the installed gpud did not answer on $url"
fi
GPUD_URL=$url "$tmp/dynamic" "$version"
GPUD_URL=$url "$tmp/static" "$version"
got=$(cd / && GPUD_URL=$url PYTHONPATH=$P/$pydir "$python" -c \
	'import gpud; c = gpud.connect(); print(gpud.__file__, int(c.run("sum", x=[1, 2, 3])))')
expect_eq "the installed Python package" "$got" "$P/$pydir/gpud/__init__.py 6"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" = 0 ] || fail "gpud exited $status after SIGTERM: $(cat "$tmp/gpud.log")"

# --- 4. make uninstall ----------------------------------------------------------
run_make "$tmp/uninstall.log" uninstall DESTDIR="$root" PREFIX="$prefix"
expect_eq "files left after make uninstall" "$(files_under "$root" | tr '\n' ' ')" ""
run_make "$tmp/install.log" install DESTDIR="$root" PREFIX="$prefix"
echo 'log_level = debug' >>"$P/etc/gpud/gpud.conf"
run_make "$tmp/uninstall.log" uninstall DESTDIR="$root" PREFIX="$prefix"
expect_eq "files left after make uninstall with a changed config" \
	"$(files_under "$root" | tr '\n' ' ')" "opt/gpud-test/etc/gpud/gpud.conf "
grep -qF "kept $P/etc/gpud/gpud.conf" "$tmp/uninstall.log" ||
	fail "make uninstall did not say it kept the changed config: $(cat "$tmp/uninstall.log")"
rm -rf "$root"
run_make "$tmp/install.log" install DESTDIR="$root" PREFIX="$prefix" SYSCONFDIR=/etc
[ -f "$root/etc/gpud/gpud.conf" ] || fail "SYSCONFDIR=/etc: no $root/etc/gpud/gpud.conf"
[ ! -e "$P/etc" ] || fail "SYSCONFDIR=/etc: $P/etc exists"
grep -qxF "ExecStart=$prefix/bin/gpud --config /etc/gpud/gpud.conf" \
	"$P/lib/systemd/system/gpud.service" || fail "SYSCONFDIR=/etc: the unit's --config"
run_make "$tmp/uninstall.log" uninstall DESTDIR="$root" PREFIX="$prefix" SYSCONFDIR=/etc
expect_eq "files left after make uninstall SYSCONFDIR=/etc" "$(files_under "$root" | tr '\n' ' ')" ""

echo "install_check: make install and uninstall into a DESTDIR with PREFIX=$prefix; pkg-config;" \
	"a program linked dynamically and statically ran against the installed gpud"
