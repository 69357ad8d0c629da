#!/usr/bin/env bash
# Installs the Debian packages gpud needs to build and test (run as root).
# The CUDA Toolkit is not a Debian package here: nvcc is found on PATH or at
# /usr/local/cuda; without it gpud builds with the cpu backend only.
set -euo pipefail
packages=(
	build-essential pkg-config
	cmake libmbedtls-dev               # nng from third_party/nng (built with cmake, TLS by mbed TLS)
	libuv1-dev                         # the daemon's event loop
	libprotobuf-c-dev protobuf-c-compiler
	libinih-dev                        # config file
	libsystemd-dev                     # <systemd/sd-daemon.h>; gpud dlopens libsystemd.so.0 (libsystemd0)
	systemd strace                     # make test-systemd: systemd-analyze, -sysusers, -tmpfiles; strace
	libjansson-dev                     # gpuctl --json, gpud's JSON logs (static archive)
	uthash-dev                         # handle and session tables
	check libsubunit-dev               # unit and end-to-end tests
	prometheus                         # promtool check metrics (e2e case "metrics")
	valgrind                           # client library under valgrind
	clang libclang-rt-14-dev           # libFuzzer target (make fuzz)
	clang-format                       # make format-check (.clang-format)
	scdoc groff-base man-db            # man pages: built with scdoc, checked with groff and man (make test-man)
	python3-numpy python3-scipy        # scipy agreement check
	python3-cffi                       # public headers through cffi and pycparser (make test-headers)
	python3-pytest                     # the Python package's suite (make test-python)
	python3-distributed python3-dask   # gpud.dask and its tests (make test-python)
	python3-pip python3-setuptools python3-wheel python3-venv  # make wheel (offline, Debian's tools), make test-wheel (a venv)
	libopenblas0-pthread               # matmul on the cpu backend (libopenblas.so.0, dlopen'd)
	libfftw3-double3                   # lombscargle method=nufft on the cpu backend (libfftw3.so.3, dlopen'd)
	yamllint python3-yaml shellcheck   # deploy/'s manifests and Slurm job (make test-deploy)
	debhelper dh-python dpkg-dev fakeroot lintian  # the Debian packages (make deb, make test-deb)
)
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (apt-get install)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "install-deps: installed ${#packages[@]} packages"
