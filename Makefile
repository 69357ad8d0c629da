# gpud — top-level build.
#
#   make              gpud, gpuctl, libgpud-client (.a, .so, .pc) under build/
#   make test         unit + end-to-end tests (cpu backend), then the same
#                     suite under ASan/UBSan, the client's threads under TSan
#                     and the client under valgrind,
#                     the scipy check, the fuzzer, the format check, the
#                     libraries' exported symbols, the public headers (C++,
#                     cffi), make install into a DESTDIR with programs linked
#                     against it, the C examples of README.md, docs/*.md and
#                     headers, the docs' relative links,
#                     and the systemd unit (make test-systemd), deploy/'s
#                     examples (make test-deploy), the Debian packages
#                     installed, run and purged in a scratch root (make
#                     test-deb) and the wheel installed in a fresh venv
#                     (make test-wheel)
#   make test-gpu     the suite against the cuda backend (needs a GPU)
#   make demo         start gpud on a temporary socket, run the demo, stop it
#   make deps         install the Debian packages the build needs (root)
#   make install      gpud, gpuctl, the library, headers, .pc, config, systemd
#                     unit with its sysusers.d and tmpfiles.d files, README and
#                     docs/*.md, man
#                     pages and gpuctl's bash completion
#                     under PREFIX (/usr/local); DESTDIR,
#                     BINDIR, LIBDIR, INCLUDEDIR, SYSCONFDIR ($(PREFIX)/etc) ...
#   make uninstall    removes what make install put there (a changed config stays)
#   make man          the man pages (docs/man/*.scd, with scdoc) under build/man/;
#                     part of make (and make install) whenever scdoc is found
#   make format       clang-format every C, header and CUDA file in place
#   make format-check the same, changing nothing; fails if a file would change
#
# Knobs: WERROR=1, SANITIZE=address,undefined, BUILD=dir, CUDA=0|1, LOOP_CHECK=1,
#        CUDA_ARCHS="75 80 86 89 90", NVCC=path.
#
# Sources are found by folder (see "sources"): a new kernel folder, verb file
# or test file needs no line here.

BUILD    ?= build
CC       ?= cc
CXX      ?= c++
# The version and the library's ABI number are written once, in
# include/gpud/version.h (which says what changes the ABI).
version_of = $(shell sed -n 's/^.define GPUD_$(1)  *\([0-9][0-9]*\)$$/\1/p' include/gpud/version.h)
VERSION  := $(call version_of,VERSION_MAJOR).$(call version_of,VERSION_MINOR).$(call version_of,VERSION_PATCH)
ABI      := $(call version_of,ABI_VERSION)

# Where make install puts things (all under DESTDIR when it is set).
PREFIX         ?= /usr/local
BINDIR         ?= $(PREFIX)/bin
LIBDIR         ?= $(PREFIX)/lib
INCLUDEDIR     ?= $(PREFIX)/include
PKGCONFIGDIR   ?= $(LIBDIR)/pkgconfig
SYSCONFDIR     ?= $(PREFIX)/etc
DOCDIR         ?= $(PREFIX)/share/doc/gpud
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR    ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR    ?= $(PREFIX)/lib/tmpfiles.d
MANDIR         ?= $(PREFIX)/share/man
BASHCOMPDIR    ?= $(PREFIX)/share/bash-completion/completions
# The Python package: Debian's python3 (the one with python3-numpy; a python3
# earlier on PATH may lack it) and the site directory it reads under PREFIX
# (/usr/local/lib/python3.X/dist-packages for /usr/local).
PYTHON         ?= /usr/bin/python3
PYTHON_VER     := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYTHONDIR      ?= $(PREFIX)/lib/python$(PYTHON_VER)/dist-packages
PY_SRC         := $(wildcard python/gpud/*.py) python/gpud/py.typed
# The benchmark's python3 must have CuPy and Numba too: the one on PATH.
PYEXE          ?= python3

CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/nvcc))
# The cuda backend is built whenever nvcc is found; CUDA=0 leaves it out.
CUDA      ?= $(if $(NVCC),1,0)
CUDA_ARCHS ?= 75 80 86 89 90
LINK      := $(CC)

OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-unused-parameter -Wformat=2
ifeq ($(WERROR),1)
WARN     += -Werror
endif
# LOOP_CHECK=1: abort when blocking work runs on gpud's loop thread, or
# loop-owned state is touched from another thread.
ifeq ($(LOOP_CHECK),1)
CPPFLAGS += -DGPUD_DEBUG_LOOP=1
endif
ifneq ($(SANITIZE),)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

GEN      := $(BUILD)/gen
CPPFLAGS += -D_GNU_SOURCE -DGPUD_VERSION=\"$(VERSION)\" -Iinclude -I. -I$(GEN) $(NNG_CPPFLAGS)
CFLAGS   += -std=c11 $(OPT) $(WARN) $(SANFLAGS) -pthread -MMD -MP
LDFLAGS  += $(SANFLAGS) -pthread

# Static archives of the C dependencies (Debian ships them), so gpud and
# gpuctl run on a machine that has none of these packages installed.
static    = $(shell $(CC) -print-file-name=$(1))
MBEDTLS_A := $(call static,libmbedtls.a) $(call static,libmbedx509.a) $(call static,libmbedcrypto.a)

# nng is the one C dependency not taken from Debian. Debian 12's nng 1.5.2
# has nng #1518: a peer that connects and closes during the SP handshake (a
# port scanner, `python3 -c 'socket.connect(...); close()'`, a second gpud
# finding the socket in use) leaves the listener accepting nothing, for
# good, while one of nng's threads spins on a core. Fixed upstream in 1.6.0
# (nng PR #1519); tests/e2e/wedge.c fails on 1.5.2. So the newest 1.x
# release is built here from third_party/nng (unmodified upstream v1.12.0,
# MIT, third_party/README.md) with Debian's cmake, against Debian's mbed
# TLS, and linked statically into every program and both libraries.
#
# Two builds of it, whose thread pools are sized with nng's build options:
#   server: gpud. Callbacks of the request contexts run on task threads
#     (at most 8: each only posts to the loop or hands a reply over; with
#     64 jobs in flight bench/transfer gave 10,500-11,000 jobs/s on a
#     16-core H100 host, against 9,800-10,300 with 1.5.2's 16), one expire
#     thread (gpud sets no timeouts on its contexts), one resolver thread
#     (gpud resolves its listen addresses and its self-probe's).
#   client: libgpud-client and the programs made with it (gpuctl, tests).
#     A client has a few connections and short callbacks: 2 task threads,
#     1 expire, 1 resolver. nng's defaults (2 task threads per core up to
#     16, 1 expire thread per core up to 8, 4 resolvers) start about 30
#     threads in every gpuctl on a 16-core host.
#     Not fewer than 2 task threads: a dial's deadline closes its dialer
#     from a timer's callback, which waits for the dial's own callback on
#     another task thread (client/dial.c).
NNG_SRC      := third_party/nng
NNG_VERSION  := 1.12.0
NNG_CPPFLAGS := -isystem $(NNG_SRC)/include
NNG_CMAKE    := -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
                -DBUILD_SHARED_LIBS=OFF -DNNG_TESTS=OFF -DNNG_TOOLS=OFF -DNNG_ENABLE_NNGCAT=OFF \
                -DNNG_ENABLE_TLS=ON -DNNG_TLS_ENGINE=mbed -DNNG_ENABLE_COMPAT=OFF \
                -DNNG_RESOLV_CONCURRENCY=1 -DNNG_NUM_POLLER_THREADS=1
NNG_CMAKE_server := -DNNG_MAX_TASKQ_THREADS=8 -DNNG_NUM_EXPIRE_THREADS=1
NNG_CMAKE_client := -DNNG_NUM_TASKQ_THREADS=2 -DNNG_NUM_EXPIRE_THREADS=1
NNG_SERVER_A := $(BUILD)/nng/server/libnng.a
NNG_CLIENT_A := $(BUILD)/nng/client/libnng.a
# The client libraries' nng: the client build, its call of psa_crypto_init
# (nng's start, for mbed TLS) renamed to client_psa_deferred, which starts
# PSA crypto only where mbed TLS's TLS uses it; a TLS endpoint's setup starts
# it otherwise (client/endpoint/tls.c says why: a quarter of a millisecond of
# every fresh client). Programs that call nng themselves link the unchanged
# client build beside the library (NNG_CL_A).
NNG_CLIENT_LAZY_A := $(BUILD)/nng/client/libnng-lazy.a
# What gpud links, and what programs made of libgpud-client.a link for their
# own nng calls (the archive holds its own copy, its symbols made local).
NNG_A        := $(NNG_SERVER_A) $(MBEDTLS_A)
NNG_CL_A     := $(NNG_CLIENT_A) $(MBEDTLS_A)
UV_A      := $(call static,libuv_a.a)
PBC_A     := $(call static,libprotobuf-c.a)
JANSSON_A := $(call static,libjansson.a)
INIH_A    := $(call static,libinih.a)
CHECK_A   := $(call static,libcheck.a) $(call static,libsubunit.a)
SYSLIBS   := -lm -ldl -lrt

# NVTX ranges for requests (daemon/trace.c): the CUDA Toolkit's header-only
# NVTX3, whenever its headers are there (CUDA=0 builds too); without them
# trace.c does nothing and the e2e case "trace" says it was left out.
NVTX_H        := $(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h)
NVTX_CPPFLAGS := $(if $(NVTX_H),-DGPUD_HAVE_NVTX=1 -isystem $(CUDA_HOME)/include)
NVTX_RECORD   := $(if $(NVTX_H),$(BUILD)/tests/libnvtx-record.so)
PW_RECORD     := $(BUILD)/tests/libpw-record.so

ifeq ($(CUDA),1)
CPPFLAGS   += -DGPUD_HAVE_CUDA=1 -I$(CUDA_HOME)/include
# cudart and libstdc++ statically: gpud then needs only the NVIDIA driver.
CUDA_LIBS  := -L$(CUDA_HOME)/lib64 -lcudart_static -static-libstdc++ -static-libgcc
LINK       := $(CXX)
NVCCFLAGS  ?= -O3 -std=c++17 -Xcompiler -Wall,-Wextra $(if $(filter 1,$(WERROR)),-Werror all-warnings) \
              $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
              -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
endif

# --- sources ----------------------------------------------------------------
# Every list is written once. In kernels/ and daemon/backend/, C files named
# cuda_*.c and everything under a cuda/ folder build only with CUDA.
cuda_only   = $(foreach f,$(1),$(if $(findstring /cuda_,$(f))$(findstring /cuda/,$(f)),$(f)))
tests_of    = $(foreach f,$(1),$(if $(findstring /test_,$(f))$(findstring /gpu_test_,$(f)),$(f)))

PROTO_SRC   := proto/wire.c
CLIENT_SRC  := $(filter-out client/demo.c,$(wildcard client/*.c client/endpoint/*.c))
GPUCTL_SRC  := $(wildcard client/gpuctl/*.c) client/demo.c
# The functions of gpud/types.h: in the library, and linked into the programs
# made of gpud's own objects, which do not link the library.
TYPES_SRC   := client/types.c

KERNEL_ALL  := $(wildcard kernels/*/*.c)
KERNEL_SRC  := $(filter-out $(call tests_of,$(KERNEL_ALL)) $(call cuda_only,$(KERNEL_ALL)),$(KERNEL_ALL))
KERNEL_CUDA := $(filter-out $(call tests_of,$(KERNEL_ALL)),$(call cuda_only,$(KERNEL_ALL))) \
               $(wildcard kernels/*/*.cu)
KERNEL_UNIT := $(foreach f,$(KERNEL_ALL),$(if $(findstring /test_,$(f)),$(f)))
KERNEL_GPU  := $(foreach f,$(KERNEL_ALL),$(if $(findstring /gpu_test_,$(f)),$(f)))

DAEMON_ALL  := $(filter-out daemon/main.c,$(wildcard daemon/*.c daemon/*/*.c daemon/*/*/*.c \
                                                     daemon/*/*/*.cu))
DAEMON_SRC  := $(filter-out $(call cuda_only,$(DAEMON_ALL)),$(DAEMON_ALL))
DAEMON_CUDA := $(call cuda_only,$(DAEMON_ALL))

# What gpud is made of, less main.c (the unit tests and the fuzzer link it too).
CORE_SRC    := $(DAEMON_SRC) $(KERNEL_SRC)
ifeq ($(CUDA),1)
CORE_SRC    += $(DAEMON_CUDA) $(KERNEL_CUDA)
endif

HARNESS_SRC := $(wildcard tests/harness.c)
UNIT_SRC    := $(wildcard tests/unit/*.c) $(KERNEL_UNIT)
E2E_SRC     := $(wildcard tests/e2e/*.c) $(HARNESS_SRC)
GPU_TEST_SRC := $(wildcard tests/gpu/*.c) $(KERNEL_GPU) $(HARNESS_SRC)

obj = $(patsubst %.c,$(BUILD)/%.o,$(patsubst %.cu,$(BUILD)/%.cu.o,$(1)))
pic = $(patsubst %.c,$(BUILD)/pic/%.o,$(1))

PROTO_OBJ  := $(BUILD)/gen/gpud.pb-c.o $(call obj,$(PROTO_SRC))
TYPES_OBJ  := $(call obj,$(TYPES_SRC))
CORE_OBJ   := $(call obj,$(CORE_SRC))
CLIENT_PIC := $(call pic,$(CLIENT_SRC) $(PROTO_SRC)) $(BUILD)/pic/gen/gpud.pb-c.o
# The CPU references (every build) and the CUDA kernels, for programs that
# call kernels in-process (the GPU suite, benches).
KERNEL_REF_OBJ  := $(call obj,$(KERNEL_SRC))
KERNEL_CUDA_OBJ := $(call obj,$(KERNEL_CUDA))

GPUD    := $(BUILD)/gpud
GPUCTL  := $(BUILD)/gpuctl
LIB_A   := $(BUILD)/libgpud-client.a
# The shared library's file, its soname (a link to the file, as installed)
# and the link for -lgpud-client.
SONAME  := libgpud-client.so.$(ABI)
LIB_SO  := $(BUILD)/libgpud-client.so.$(VERSION)
LIB_PC  := $(BUILD)/gpud-client.pc
SERVICE := $(BUILD)/gpud.service
HEADERS := $(wildcard include/gpud/*.h)
# The archive's one object: the library's objects linked, hidden symbols local.
LIB_OBJ := $(BUILD)/pic/libgpud-client.o
OBJCOPY ?= objcopy

# The test programs (their objects are under $(BUILD)/tests/<folder>/).
UNIT     := $(BUILD)/test-unit
E2E      := $(BUILD)/test-e2e
GPU_TEST := $(BUILD)/test-gpu

.PHONY: all clean test test-stress test-unit test-e2e test-scipy test-asan test-tsan test-valgrind test-symbols test-deps \
        test-headers test-install test-examples test-python test-systemd test-deploy \
        test-gpu \
        fuzz fuzz-run \
        gpu-programs bench-first-result bench-pool bench-transfer bench-fairness bench-fairness-cpu bench-ring \
        bench-devices bench-custom \
        bench-worker-probe bench-tenant-workers \
        bench-kernels bench-lombscargle bench-lombscargle-nufft bench-python bench-python-hot bench-readme bench-hot bench-fresh bench-first-request bench-host-io bench-survey bench-batch-profile bench-dask gpu-bundle demo deps install test-docs uninstall format format-check FORCE \
        deb test-deb
all: $(GPUD) $(GPUCTL) $(LIB_A) $(LIB_SO) $(LIB_PC) $(SERVICE)

# --- nng, from third_party/nng (see NNG_SRC) --------------------------------
# $(BUILD)/nng/KIND/options holds the cmake options it was built with: a
# change of them (or of CC) builds it again.
$(BUILD)/nng/%/options: FORCE
	@mkdir -p $(@D)
	@echo '$(NNG_VERSION) $(CC) $(NNG_CMAKE) $(NNG_CMAKE_$*)' | cmp -s - $@ || \
	  echo '$(NNG_VERSION) $(CC) $(NNG_CMAKE) $(NNG_CMAKE_$*)' > $@
$(BUILD)/nng/%/libnng.a: $(BUILD)/nng/%/options $(NNG_SRC)/CMakeLists.txt $(NNG_SRC)/include/nng/nng.h
	@command -v cmake >/dev/null || { echo "make: cmake not found: nng is built with it" \
	  "(apt-get install cmake, or make deps)" >&2; exit 1; }
	cmake -S $(NNG_SRC) -B $(@D) -DCMAKE_C_COMPILER=$(CC) $(NNG_CMAKE) $(NNG_CMAKE_$*) >$(@D)/cmake.log 2>&1 \
	  || { cat $(@D)/cmake.log >&2; exit 1; }
	+$(MAKE) -s -C $(@D) nng >$(@D)/build.log 2>&1 || { cat $(@D)/build.log >&2; exit 1; }
	@touch $@
.PRECIOUS: $(BUILD)/nng/%/options $(BUILD)/nng/%/libnng.a
$(NNG_CLIENT_LAZY_A): $(NNG_CLIENT_A)
	$(OBJCOPY) --redefine-sym psa_crypto_init=client_psa_deferred $< $@

# --- generated protobuf-c code ---------------------------------------------
$(GEN)/gpud.pb-c.c $(GEN)/gpud.pb-c.h: proto/gpud.proto
	@mkdir -p $(GEN)
	protoc-c --c_out=$(GEN) -Iproto $<

# Any object may include the generated header: make it first.
ALL_C_SRC := $(PROTO_SRC) $(CLIENT_SRC) $(GPUCTL_SRC) $(CORE_SRC) daemon/main.c $(UNIT_SRC) \
             $(E2E_SRC) $(GPU_TEST_SRC) $(wildcard tests/fuzz/*.c bench/*.c)
$(call obj,$(ALL_C_SRC)) $(CLIENT_PIC): | $(GEN)/gpud.pb-c.h

$(BUILD)/gen/gpud.pb-c.o: $(GEN)/gpud.pb-c.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -c $< -o $@
$(BUILD)/pic/gen/gpud.pb-c.o: $(GEN)/gpud.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -DGPUD_BUILDING_LIB -c $< -o $@
# nvcc sees the same preprocessor flags as cc and writes the same dependency
# files, so touching a header rebuilds the CUDA objects that include it.
$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(CPPFLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

# --- products ---------------------------------------------------------------
# Both libraries are made of the same objects, built with hidden visibility:
# only the GPUD_API functions are not hidden. In the archive they are linked
# into one object whose hidden symbols are then made local, so the archive
# defines nothing global but the API: no wire_* or protobuf-c gpud__* to
# clash with a program's own (programs that use those link $(PROTO_OBJ)).
# nng (the client build) goes into the same object, its symbols local too:
# a program linking the archive needs no nng of its own, and one that has
# another nng (Debian's) gets no clash.
$(LIB_OBJ): $(CLIENT_PIC) $(NNG_CLIENT_LAZY_A)
	$(LD) -r -o $@.tmp $(CLIENT_PIC) $(NNG_CLIENT_LAZY_A)
	$(OBJCOPY) --localize-hidden --wildcard --keep-global-symbol='gpud_*' $@.tmp $@
	@rm -f $@.tmp
# The client's endpoint layer for its unit test (tests/unit/test_client_endpoint.c):
# client/endpoint/ and the error text it sets (err.c) in one object whose only
# global symbols are the table's (client_endpoint_*), the rest local: no clash
# with the same functions inside $(LIB_A), which the unit test links too.
CLIENT_ENDPOINT_OBJ := $(BUILD)/pic/client-endpoint.o
$(CLIENT_ENDPOINT_OBJ): $(call pic,$(wildcard client/endpoint/*.c) client/err.c)
	$(LD) -r -o $@.tmp $^
	$(OBJCOPY) --wildcard --keep-global-symbol='client_endpoint*' $@.tmp $@
	@rm -f $@.tmp
$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
# nng inside, not exported (--exclude-libs); mbed TLS and protobuf-c are
# Debian's shared libraries.
$(LIB_SO): $(CLIENT_PIC) $(NNG_CLIENT_LAZY_A)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--no-undefined -Wl,--exclude-libs,libnng-lazy.a \
	  $(LDFLAGS) -o $@ $^ -lmbedtls -lmbedx509 -lmbedcrypto -lprotobuf-c
	ln -sf $(notdir $@) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/libgpud-client.so
# The .pc and the unit name the install's paths: $(BUILD)/install-paths
# changes (and they are made again) whenever one of those does.
INSTALL_PATHS := $(PREFIX) $(LIBDIR) $(INCLUDEDIR) $(BINDIR) $(SYSCONFDIR) $(DOCDIR) $(VERSION)
$(BUILD)/install-paths: FORCE
	@mkdir -p $(BUILD)
	@echo '$(INSTALL_PATHS)' | cmp -s - $@ || echo '$(INSTALL_PATHS)' > $@
# libdir and includedir relative to ${prefix} where they lie under it.
pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
$(LIB_PC): client/gpud-client.pc.in $(BUILD)/install-paths
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_dir,$(LIBDIR))|g' \
	  -e 's|@INCLUDEDIR@|$(call pc_dir,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@
$(SERVICE): systemd/gpud.service.in $(BUILD)/install-paths
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	  -e 's|@DOCDIR@|$(DOCDIR)|g' $< > $@

# gpud's failed inbound TLS handshakes are logged by a wrap of nng's calls
# of mbedtls_ssl_handshake (daemon/auth.c).
$(GPUD): $(BUILD)/daemon/main.o $(CORE_OBJ) $(PROTO_OBJ) $(TYPES_OBJ) $(NNG_SERVER_A)
	$(LINK) $(LDFLAGS) -Wl,--wrap=mbedtls_ssl_handshake -o $@ $^ $(UV_A) $(NNG_A) $(PBC_A) $(INIH_A) $(JANSSON_A) $(CUDA_LIBS) $(SYSLIBS)
$(GPUCTL): $(call obj,$(GPUCTL_SRC)) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(JANSSON_A) $(SYSLIBS)

# --- man pages -------------------------------------------------------------
# docs/man/NAME.N.scd -> $(BUILD)/man/NAME.N with scdoc (Debian's scdoc),
# part of all whenever scdoc is found; make man and make test need it.
SCDOC     ?= $(shell command -v scdoc 2>/dev/null)
MAN_SRC   := $(wildcard docs/man/*.scd)
MAN_PAGES := $(patsubst docs/man/%.scd,$(BUILD)/man/%,$(MAN_SRC))
# Where make install puts a page: MANDIR/manN/NAME.N.
man_dest   = $(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(1)))/$(notdir $(1))
.PHONY: man test-man test-completion
all: $(if $(SCDOC),$(MAN_PAGES))
man: $(MAN_PAGES)
$(BUILD)/man/%: docs/man/%.scd
	@test -n "$(SCDOC)" || { echo "make: scdoc not found: the man pages need it" \
	  "(apt-get install scdoc, or make deps)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(SCDOC) < $< > $@.tmp && mv $@.tmp $@

# --- tests ------------------------------------------------------------------
$(UNIT): $(call obj,$(UNIT_SRC)) $(CORE_OBJ) $(PROTO_OBJ) $(CLIENT_ENDPOINT_OBJ) $(LIB_A) \
         $(NNG_SERVER_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(CHECK_A) $(UV_A) $(NNG_A) $(PBC_A) $(INIH_A) $(JANSSON_A) $(CUDA_LIBS) $(SYSLIBS)
$(E2E): $(call obj,$(E2E_SRC)) $(LIB_A) | $(NVTX_RECORD) $(PW_RECORD)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_A) $(NNG_CL_A) $(PBC_A) $(JANSSON_A) $(SYSLIBS)
# The slow, recorded getpwuid_r the e2e case "user_lookup" preloads into gpud.
$(PW_RECORD): tests/nss/pw_record.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -shared -o $@ $< $(LDFLAGS) -ldl
# The NVTX recorder the e2e case "trace" starts gpud with (NVTX_INJECTION64_PATH):
# it writes every range gpud starts and ends to $GPUD_NVTX_RECORD.
ifneq ($(NVTX_H),)
$(NVTX_RECORD): tests/nvtx/inject.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(NVTX_CPPFLAGS) $(CFLAGS) -fPIC -shared -o $@ $< $(LDFLAGS)
$(BUILD)/daemon/trace.o: CPPFLAGS += $(NVTX_CPPFLAGS)
$(BUILD)/tests/e2e/trace.o: CPPFLAGS += -DGPUD_HAVE_NVTX=1
endif

test-unit: $(UNIT)
	$(UNIT)
# promtool (Debian's prometheus) checks the /metrics page in the e2e case "metrics".
PROMTOOL ?= $(shell command -v promtool 2>/dev/null)
test-e2e: $(E2E) $(GPUD) $(GPUCTL)
	@test -n "$(PROMTOOL)" || { echo "test-e2e: promtool not found (Debian's prometheus package: make deps)"; exit 1; }
	PROMTOOL=$(PROMTOOL) GPUD_BIN=$(abspath $(GPUD)) GPUCTL_BIN=$(abspath $(GPUCTL)) $(E2E)
test-scipy: $(GPUD) $(GPUCTL)
	tests/scipy_check.sh $(GPUD) $(GPUCTL)
# The same suites under AddressSanitizer + UBSan, in a build directory of their own.
# E2E_SANITIZED: the memory case moves its data but does not hold gpud's
# VmRSS to its idle level (ASan's allocator keeps freed memory in its
# quarantine and ignores malloc_trim).
test-asan:
	CK_TIMEOUT_MULTIPLIER=4 E2E_SANITIZED=1 $(MAKE) BUILD=$(BUILD)/asan SANITIZE=address,undefined \
	  CUDA=0 test-unit test-e2e
# The client library shared between threads, under ThreadSanitizer: the
# end-to-end suite's "client" case (threads, jobs, reconnects) built with
# -fsanitize=thread in a build directory of its own; its gpud is this build's.
test-tsan: $(GPUD) $(GPUCTL)
	$(MAKE) BUILD=$(BUILD)/tsan SANITIZE=thread CUDA=0 $(BUILD)/tsan/test-e2e
	CK_RUN_CASE=client TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  GPUD_BIN=$(abspath $(GPUD)) GPUCTL_BIN=$(abspath $(GPUCTL)) $(BUILD)/tsan/test-e2e
# The client library under valgrind, driven by the end-to-end suite (no fork mode
# so valgrind follows every test). E2E_VALGRIND: the shutdown case skips its
# download that races gpud closing the connection (nng 1.5.2 leaks a request
# sent on a closing pipe: tests/e2e/shutdown.c).
test-valgrind: $(E2E) $(GPUD) $(GPUCTL)
	CK_FORK=no E2E_VALGRIND=1 GPUD_BIN=$(abspath $(GPUD)) GPUCTL_BIN=$(abspath $(GPUCTL)) \
	  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  $(E2E)
# Every global symbol either library defines starts with gpud_, none with
# gpud__ (protobuf-c's names for proto/gpud.proto), and both define the same.
test-symbols: $(LIB_A) $(LIB_SO)
	@nm -g --defined-only $(LIB_A) > $(BUILD)/symbols-a.nm
	@nm -D --defined-only $(LIB_SO) > $(BUILD)/symbols-so.nm
	@fail=0; \
	for k in a so; do \
	  lib=$$(if [ $$k = a ]; then echo $(LIB_A); else echo $(LIB_SO); fi); \
	  awk 'NF == 3 { print $$3 }' $(BUILD)/symbols-$$k.nm | sort -u > $(BUILD)/symbols-$$k; \
	  bad=$$(awk '!/^gpud_/ || /^gpud__/ { print "  " $$0 }' $(BUILD)/symbols-$$k); \
	  if [ -n "$$bad" ]; then \
	    printf 'test-symbols: %s defines global symbols outside the gpud_ API:\n%s\n' \
	      $$lib "$$bad" >&2; \
	    fail=1; \
	  fi; \
	done; \
	if [ $$fail = 0 ] && ! cmp -s $(BUILD)/symbols-a $(BUILD)/symbols-so; then \
	  printf 'test-symbols: %s and %s define different global symbols:\n' $(LIB_A) $(LIB_SO) >&2; \
	  diff $(BUILD)/symbols-a $(BUILD)/symbols-so | grep '^[<>]' >&2; \
	  fail=1; \
	fi; \
	exit $$fail
# The build follows headers into CUDA objects: touching kernels/core/kernel.h
# must rebuild every kernel's .cu object (asked of make -n; the header's time
# is put back afterwards, so nothing is rebuilt for real).
KERNEL_CU_OBJ := $(filter %.cu.o,$(KERNEL_CUDA_OBJ))
test-deps: $(KERNEL_CU_OBJ)
ifeq ($(CUDA),1)
	@touch -r kernels/core/kernel.h $(BUILD)/kernel.h.time && touch kernels/core/kernel.h; \
	n=$$($(MAKE) --no-print-directory -n $(KERNEL_CU_OBJ) | grep -c -- ' -c kernels/.*\.cu '); \
	touch -r $(BUILD)/kernel.h.time kernels/core/kernel.h; \
	if [ "$$n" -ne $(words $(KERNEL_CU_OBJ)) ]; then \
	  echo "test-deps: touching kernels/core/kernel.h rebuilds $$n of the" \
	    "$(words $(KERNEL_CU_OBJ)) kernel CUDA objects" >&2; exit 1; \
	fi; \
	echo "test-deps: touching kernels/core/kernel.h rebuilds all $$n kernel CUDA objects"
endif
# The public headers as users and FFI layers get them: alone as C11 and C++,
# no stdio.h, parsed by pycparser and cffi, every declared function exported.
test-headers: $(LIB_SO)
	tests/headers_check.sh $(LIB_SO) $(VERSION)
# make install / uninstall into a temporary DESTDIR, pkg-config, a program
# linked dynamically and statically against the install and run against its gpud.
test-install: all man
	+MAKE="$(MAKE)" PYTHON=$(PYTHON) tests/install_check.sh $(VERSION) $(ABI)
# The systemd unit as systemd reads it, offline (no systemd as PID 1 needed):
# systemd-analyze verify and security (failing above SYSTEMD_EXPOSURE, in
# tenths: the score measured when the unit was hardened), sysusers.d and
# tmpfiles.d into a temporary root, and the e2e suite's gpuds (cpu backend)
# under strace, checked against the unit (scripts/hardening-check.sh ci).
SYSTEMD_EXPOSURE ?= 17
test-systemd: $(GPUD) $(GPUCTL) $(E2E)
	tests/systemd_check.sh $(BUILD) $(SYSTEMD_EXPOSURE)
# deploy/: the Kubernetes manifests (yamllint, then their gpud flags, gpuctl
# flags and gpud.conf keys against gpud itself) and the Slurm job (bash -n,
# ShellCheck, its gpud flags).
test-deploy: $(GPUD) $(GPUCTL)
	yamllint -s -c deploy/.yamllint deploy/kubernetes
	bash -n deploy/slurm/gpud-job.sh
	shellcheck deploy/slurm/gpud-job.sh
	$(PYTHON) scripts/check_deploy.py $(GPUD) $(GPUCTL)
# Every C example in README.md, docs/*.md and the public headers' comments,
# compiled and run against a gpud on the cpu backend.
test-examples: $(GPUD) $(GPUCTL) $(LIB_SO)
	tests/examples_check.sh $(GPUD) $(GPUCTL) $(BUILD)
# Every relative link of README.md and docs/*.md names a file of the tree and,
# with an anchor, one of its headings.
test-docs:
	$(PYTHON) tests/docs_links_check.py
# The man pages: each renders without a warning (groff, man), and says what
# the code has (gpud's options, every gpud.conf key, gpuctl's commands and
# switches, every function of the headers, every environment variable read).
test-man: man $(GPUCTL) $(LIB_SO)
	tests/man_check.sh $(BUILD) $(GPUCTL)
# gpuctl's bash completion, called as bash calls it, against a gpud on the
# cpu backend (kernel names, arguments, handles) and against none.
test-completion: $(GPUD) $(GPUCTL)
	tests/completion_check.sh $(GPUD) $(GPUCTL)
# The Python package's suite (python/tests, pytest) against a gpud of this
# build on a temporary socket; GPUD_BACKEND=cuda runs it on the GPU.
PYTEST_ENV = GPUD_LIB=$(abspath $(BUILD)/$(SONAME)) GPUD_BIN=$(abspath $(GPUD)) \
             GPUCTL_BIN=$(abspath $(GPUCTL)) PYTHONDONTWRITEBYTECODE=1
test-python: $(GPUD) $(GPUCTL) $(LIB_SO)
	cd python && $(PYTEST_ENV) $(PYTHON) -m pytest -p no:cacheprovider -q tests
test: format-check test-symbols test-headers test-deps test-unit test-e2e test-scipy \
      test-python test-install test-deb test-examples test-asan test-tsan test-valgrind fuzz \
      test-man test-docs test-completion test-systemd test-deploy test-wheel
# `make test` STRESS_RUNS times beside two CPU-bound busy loops, as CI's 2
# shared cores can be at their worst: every run must pass.
STRESS_RUNS ?= 5
test-stress:
	MAKE="$(MAKE)" STRESS_LOGS=$(BUILD)/stress scripts/test-stress.sh $(STRESS_RUNS)

# --- the Python client as a wheel (pyproject.toml in python/) ---------------
# make wheel: $(BUILD)/wheel/gpud-VERSION-py3-none-PLAT.whl, built offline
# with Debian's setuptools and wheel (pip wheel --no-build-isolation) from a
# copy of python/ under $(BUILD)/wheel/src, so the tree gets no build/ or
# egg-info. Inside, gpud/_libs/libgpud-client.so.0: the library's objects
# with nng, mbed TLS and protobuf-c linked in (Debian's .a files are PIC),
# exporting only gpud_* (the version script), needing only glibc, debug
# information left out (strip -g; $(WHEEL_SO) keeps it). PLAT is
# manylinux_2_X_x86_64, X the newest GLIBC_2.X its symbols ask for (on
# another machine than x86_64: linux_MACHINE).
WHEEL_DIR := $(BUILD)/wheel
WHEEL_SO  := $(WHEEL_DIR)/lib/$(SONAME)
WHEEL_SYMS := $(WHEEL_DIR)/lib/exports.map
WHEEL_ARCH := $(shell uname -m)
.PHONY: wheel test-wheel
$(WHEEL_SYMS):
	@mkdir -p $(@D)
	printf '{\n  global: gpud_*;\n  local: *;\n};\n' > $@
$(WHEEL_SO): $(CLIENT_PIC) $(NNG_CLIENT_LAZY_A) $(WHEEL_SYMS)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--no-undefined -Wl,--exclude-libs,ALL \
	  -Wl,--version-script,$(WHEEL_SYMS) -static-libgcc $(LDFLAGS) -o $@ \
	  $(CLIENT_PIC) $(NNG_CLIENT_LAZY_A) $(MBEDTLS_A) $(PBC_A) -lm
wheel: $(WHEEL_SO) python/pyproject.toml python/setup.py $(PY_SRC)
	rm -rf $(WHEEL_DIR)/src $(WHEEL_DIR)/*.whl
	mkdir -p $(WHEEL_DIR)/src/gpud/_libs
	cp python/pyproject.toml python/setup.py $(WHEEL_DIR)/src/
	cp $(PY_SRC) $(WHEEL_DIR)/src/gpud/
	strip -g -o $(WHEEL_DIR)/src/gpud/_libs/$(SONAME) $(WHEEL_SO)
	glibc=$$(objdump -T $(WHEEL_SO) | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n -u | tail -1); \
	  plat=$$(if [ $(WHEEL_ARCH) = x86_64 ] && [ -n "$$glibc" ]; then \
	    echo manylinux_2_$${glibc#GLIBC_2.}_$(WHEEL_ARCH); else echo linux_$(WHEEL_ARCH); fi); \
	  echo "wheel: $(SONAME) needs $$glibc: $$plat"; \
	  cd $(WHEEL_DIR)/src && GPUD_WHEEL_VERSION=$(VERSION) GPUD_WHEEL_PLAT=$$plat \
	    $(PYTHON) -m pip wheel -q --no-index --no-build-isolation --no-deps -w .. .
	@ls -l $(WHEEL_DIR)/*.whl
# The wheel installed with pip --no-index into a fresh venv (numpy from
# Debian's python3-numpy through --system-site-packages), then part of the
# Python suite run from outside the tree, PYTHONPATH and GPUD_LIB unset: the
# package must be the venv's and its library the wheel's (tests/wheel_check.sh).
test-wheel: wheel $(GPUD) $(GPUCTL)
	PYTHON=$(PYTHON) tests/wheel_check.sh $(WHEEL_DIR) $(GPUD) $(GPUCTL)

# --- GPU: tests and benchmarks (need a device; built whenever nvcc is found) ---
STANDALONE   := $(BUILD)/bench/standalone_lombscargle
FIRST        := $(BUILD)/bench/first_result
TRANSFER     := $(BUILD)/bench/transfer
CUSTOM_BENCH := $(BUILD)/bench/custom_kernels
FAIRNESS     := $(BUILD)/bench/fairness
POOL_BENCH   := $(BUILD)/bench/pool_alloc
KBENCH       := $(BUILD)/bench/kernels
TINY_CALL    := $(BUILD)/bench/tiny_call
RING_LAT     := $(BUILD)/bench/ring_latency
LS_BENCH     := $(BUILD)/bench/lombscargle
LS_NUFFT_BENCH := $(BUILD)/bench/lombscargle_nufft
NET_FLOOR    := $(BUILD)/bench/net_floor
NNG_FRESH    := $(BUILD)/bench/nng_fresh
WORKER_PROBE := $(BUILD)/bench/worker_probe
TW_BENCH     := $(BUILD)/bench/tenant_workers
DEV_BENCH    := $(BUILD)/bench/devices
BATCH_BENCH  := $(BUILD)/bench/batch_clients
HARNESS_OBJ  := $(call obj,$(HARNESS_SRC))

$(GPU_TEST): $(call obj,$(GPU_TEST_SRC)) $(KERNEL_REF_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_A) $(NNG_CL_A) $(PBC_A) $(SYSLIBS)
$(STANDALONE): $(BUILD)/bench/standalone_lombscargle.o $(KERNEL_REF_OBJ) $(KERNEL_CUDA_OBJ) $(LIB_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(CUDA_LIBS) $(SYSLIBS)
$(TRANSFER): $(BUILD)/bench/transfer.o $(HARNESS_OBJ) $(KERNEL_REF_OBJ) $(KERNEL_CUDA_OBJ) $(LIB_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(CUDA_LIBS) $(SYSLIBS)
$(CUSTOM_BENCH): $(BUILD)/bench/custom_kernels.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS)
$(FAIRNESS): $(BUILD)/bench/fairness.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS)
$(POOL_BENCH): $(BUILD)/bench/pool_alloc.o $(HARNESS_OBJ) $(call obj,daemon/backend/cuda/pool.cu) $(LIB_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(CUDA_LIBS) $(SYSLIBS)
$(TINY_CALL): $(BUILD)/bench/tiny_call.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS) -lm
$(RING_LAT): $(BUILD)/bench/ring_latency.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS) -lm
$(KBENCH): $(BUILD)/bench/kernels.o $(HARNESS_OBJ) $(LIB_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(CUDA_LIBS) $(SYSLIBS)
$(LS_BENCH): $(BUILD)/bench/lombscargle.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS) -lm
$(LS_NUFFT_BENCH): $(BUILD)/bench/lombscargle_nufft.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS) -lm
$(NET_FLOOR): $(BUILD)/bench/net_floor.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS)
# nng alone, as gpuctl links it (the client build, PSA crypto not started):
# bench/fresh_gpuctl.py's floor rows.
$(NNG_FRESH): $(BUILD)/bench/nng_fresh.o $(NNG_CLIENT_LAZY_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(MBEDTLS_A) $(SYSLIBS)
$(TW_BENCH): $(BUILD)/bench/tenant_workers.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS)
$(DEV_BENCH): $(BUILD)/bench/devices.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS)
$(WORKER_PROBE): $(call obj,bench/worker_probe.cu)
	$(LINK) $(LDFLAGS) -o $@ $^ $(CUDA_LIBS) $(SYSLIBS)
$(BATCH_BENCH): $(BUILD)/bench/batch_clients.o $(HARNESS_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS)
$(FIRST): $(BUILD)/bench/first_result.o $(HARNESS_OBJ) $(BUILD)/client/demo.o $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_CL_A) $(PBC_A) $(SYSLIBS)

gpu-programs: all $(E2E) $(GPU_TEST) $(STANDALONE) $(FIRST) $(POOL_BENCH) $(TRANSFER) $(FAIRNESS) \
	      $(CUSTOM_BENCH) $(KBENCH) $(TINY_CALL) $(RING_LAT) $(LS_BENCH) $(LS_NUFFT_BENCH) $(NET_FLOOR) \
	      $(NNG_FRESH) $(WORKER_PROBE) $(TW_BENCH) $(DEV_BENCH) $(BATCH_BENCH)
# The GPU suite: every kernel against its CPU reference, then the end-to-end
# suite against the cuda backend, the Python suite, and gpud's start (every
# kernel's self-test) under compute-sanitizer's memcheck and initcheck.
test-gpu: gpu-programs
	GPUD_BIN=$(abspath $(GPUD)) $(GPU_TEST)
	GPUD_BACKEND=cuda GPUD_BIN=$(abspath $(GPUD)) GPUCTL_BIN=$(abspath $(GPUCTL)) $(E2E)
	cd python && GPUD_BACKEND=cuda $(PYTEST_ENV) $(PYTHON) -m pytest -p no:cacheprovider -q tests
	scripts/sanitize-selftest.sh $(GPUD) $(GPUCTL)
bench-first-result: gpu-programs
	$(FIRST) $(GPUD) $(GPUCTL) $(STANDALONE)
bench-pool: gpu-programs
	$(POOL_BENCH)
bench-transfer: gpu-programs
	$(TRANSFER) $(GPUD) $(GPUCTL)
	$(NET_FLOOR)
# What a per-tenant worker process (a second CUDA context) costs and contains.
bench-worker-probe: gpu-programs
	$(WORKER_PROBE)
# Custom kernels in tenant workers against gpud's own context: a warm run's
# cost, worker start and memory, two tenants' overlap (MPS or time-sliced).
bench-tenant-workers: gpu-programs
	$(TW_BENCH) $(GPUD)
# A quiet tenant's latency alone and beside another's flood of jobs, then
# beside another's long runs (bench/fairness.c).
bench-fairness: gpu-programs
	$(FAIRNESS) $(GPUD) cuda 5 both
# A warm client's round trips over the request ring (status, a tiny run on
# resident buffers, a one-trip gpud_call), p50 and p99 of RING_REPS each, on
# this gpud's backend (GPUD_BACKEND, default cpu; no GPU needed for cpu).
RING_REPS ?= 20000
bench-ring: $(GPUD) $(RING_LAT)
	scripts/bench-ring.sh $(GPUD) $(RING_LAT) $(RING_REPS)
# The long runs on the cpu backend, with this machine's threads (no GPU needed).
bench-fairness-cpu: $(GPUD) $(FAIRNESS)
	$(FAIRNESS) $(GPUD) cpu 5 long
# One device against two (DEVICES, default 0,1): 16 clients' jobs/s, and the
# peer copy of a job whose inputs sit on the other device.
bench-devices: gpu-programs
	$(DEV_BENCH) $(GPUD) 5 16 $(or $(DEVICES),0,1)
bench-custom: gpu-programs
	$(CUSTOM_BENCH) $(GPUD) $(GPUCTL)
bench-kernels: gpu-programs
	$(KBENCH) $(GPUD)
# lombscargle's kernels, every variant, on the demo signal's size (the peers'
# 114 samples) and on 10,000 samples, then the CuPy peer's kernel on the same
# sizes in the same call (PEERS: ../shared/anchors/lombscargle_peers.py).
PEERS ?= ../shared/anchors/lombscargle_peers.py
bench-lombscargle: gpu-programs
	$(LS_BENCH) $(GPUD) 20 114 1048576
	$(LS_BENCH) $(GPUD) 5 10000 1048576
	LS_VARIANTS="cupy_fatbin cupy_fatbin_accurate" $(PYEXE) $(PEERS) inproc
	LS_SAMPLES=10000 LS_VARIANTS="cupy_fatbin cupy_fatbin_accurate" $(PYEXE) $(PEERS) inproc
# The grid form at survey scale: gpud direct vs gpud NUFFT (method=nufft),
# warm with the client's transfers, and the CuPy peer, in one call.
bench-lombscargle-nufft: gpu-programs
	bench/lombscargle_nufft.sh $(BUILD) $(PEERS)
# The GPU programs with the libraries libgpud-client.so needs (protobuf-c,
# mbedtls; nng is inside it), for a GPU machine without those packages, where
# scripts/gpu-check.sh BUNDLE runs the suite, the scipy check and the benches,
# python3 BUNDLE/bench/readme_table.py BUNDLE PEERS the README's first table,
# and scripts/hardening-check.sh trace BUNDLE OUT the unit's check (with the
# strace bundled here):
#   make BUILD=.devcarry/build CUDA_ARCHS=90 gpu-bundle
GPU_BUNDLE ?= .devcarry/bin
gpu-bundle: gpu-programs
	rm -rf $(GPU_BUNDLE) && mkdir -p $(GPU_BUNDLE)/bench $(GPU_BUNDLE)/lib
	cp -a $(GPUD) $(GPUCTL) $(GPU_TEST) $(E2E) $(BUILD)/libgpud-client.so* $(GPU_BUNDLE)/
	cp $(LS_BENCH) $(LS_NUFFT_BENCH) $(FIRST) $(STANDALONE) $(TRANSFER) $(NET_FLOOR) $(WORKER_PROBE) $(TW_BENCH) $(DEV_BENCH) $(POOL_BENCH) $(FAIRNESS) $(BATCH_BENCH) \
	   $(TINY_CALL) $(RING_LAT) $(NNG_FRESH) scripts/bench-ring.sh bench/readme_table.py bench/python_first_result.py \
	   bench/python_hot.py bench/fresh_gpuctl.py bench/first_request.py bench/host_io.py \
	   bench/gpud_proc.py \
	   $(GPU_BUNDLE)/bench/
	mkdir -p $(GPU_BUNDLE)/python/gpud && cp $(PY_SRC) $(GPU_BUNDLE)/python/gpud/
	cp -L $$(ldd $(LIB_SO) | awk '$$2 == "=>" && $$1 !~ /^lib(c|m|dl|rt|pthread)\.so/ {print $$3}') \
	   $(GPU_BUNDLE)/lib/
	mkdir -p $(GPU_BUNDLE)/tests && cp $(PW_RECORD) $(NVTX_RECORD) $(GPU_BUNDLE)/tests/
	if command -v strace >/dev/null; then scripts/hardening-check.sh bundle-strace $(GPU_BUNDLE)/strace; fi
# A whole Python script (start, import, lombscargle, result) with gpud, CuPy and
# Numba in fresh processes, and a warm client.run against the same call from C.
bench-python: gpu-programs
	$(PYEXE) bench/python_first_result.py $(GPUD) $(BUILD)/$(SONAME) $(TINY_CALL)
# The warm client.run('add', x=x, y=y) of 1,000 float32 against C's gpud_call, the bare
# ctypes call and CuPy's copies and resident add (PYHOT_ARGS: e.g. --backend cpu, or
# --package old=DIR:LIB --package new=DIR:LIB to compare two packages in one run).
bench-python-hot: gpu-programs
	$(PYEXE) bench/python_hot.py $(GPUD) $(TINY_CALL) $(PYHOT_ARGS)
# The README's first table, every row in one run (ROUNDS, default 15): Numba and CuPy
# (PEERS), the standalone program, gpuctl with a file and a grid, gpuctl's floors, the
# Python script; printed as the README's markdown with the versions and the date.
# Survey scale: lombscargle_many, 64 clients with dynamic batching off and on,
# and separate calls, in one run (bench/survey.py).
bench-survey: gpu-programs
	$(PYEXE) bench/survey.py $(GPUD) $(BUILD)/$(SONAME) $(BATCH_BENCH) $(ROUNDS)
# Survey (b)'s CPU time a run, by gpud thread and the clients, batching off and on,
# gpud's waits as configured and asleep (bench/batch_profile.py; PROFILE_BACKENDS: cuda).
PROFILE_BACKENDS ?= cuda
bench-batch-profile: gpu-programs
	$(PYEXE) bench/batch_profile.py $(GPUD) $(BATCH_BENCH) $(PROFILE_BACKENDS)
# gpud.dask.lombscargle with 1, 2, 4 and 8 worker processes on one gpud, beside
# lombscargle_many from one process (bench/dask_survey.py; needs python3-distributed).
bench-dask: gpu-programs
	$(PYEXE) bench/dask_survey.py $(GPUD) $(BUILD)/$(SONAME) 1 2 4 8
# README.md's hot-path table, every row in one run beside its anchor (fresh gpuctl,
# the ring, the one-trip job, Python's add, the kernels with the CuPy peer, survey scale).
bench-hot: gpu-programs
	PEERS=$(PEERS) scripts/gpu-check.sh $(BUILD) hot
bench-readme: gpu-programs
	$(PYEXE) bench/readme_table.py $(BUILD) $(PEERS) $(ROUNDS)
# Fresh gpuctl processes (--version, status, run lombscargle grid and file,
# float32 and float64; `true` beside them, the spawn's floor) against a gpud
# of BACKEND (cpu here, cuda on a GPU machine), medians of FRESH_ROUNDS;
# BASE=DIR times another build's gpud and gpuctl beside this one's, in the
# same rounds (bench/fresh_gpuctl.py).
FRESH_BACKEND ?= cpu
FRESH_ROUNDS  ?= 30
bench-fresh: $(GPUD) $(GPUCTL) $(NNG_FRESH)
	$(PYEXE) bench/fresh_gpuctl.py --backend $(FRESH_BACKEND) --rounds $(FRESH_ROUNDS) \
	  --phases $(BASE) $(BUILD)
# A fresh connection's first status (its hello carried) and a second one, after
# pauses of 0, 1 and 5 ms, over ipc:// and tcp://, with gpud's own time for each
# (bench/first_request.py; FRESH_BACKEND as above).
bench-first-request: $(GPUD) $(GPUCTL) $(LIB_SO)
	$(PYEXE) bench/first_request.py $(GPUD) $(BUILD)/$(SONAME) --backend $(FRESH_BACKEND)
# Files into and out of fresh lent memory, 1, 4 and 8 MiB: mapped here and read or
# written (as gpuctl did), the kernel's sendfile, and gpud's own copy
# (gpud_host_read, gpud_host_write) (bench/host_io.py).
bench-host-io: $(GPUD) $(GPUCTL) $(LIB_SO)
	$(PYEXE) bench/host_io.py $(GPUD) $(BUILD)/$(SONAME) --backend $(FRESH_BACKEND)

# --- fuzzing: libFuzzer over the request decoder and dispatcher (cpu backend) ---
# `make fuzz` builds it with clang under ASan/UBSan in build/fuzz and runs it
# for FUZZ_SECONDS from a fresh seed corpus (tests/fuzz/fuzz_corpus.c) plus
# the inputs that once found a bug (tests/fuzz/regressions/, one file each).
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_BIN     := $(BUILD)/tests/fuzz_request
CORPUS_BIN   := $(BUILD)/tests/fuzz_corpus
fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang CUDA=0 \
	  SANITIZE=address,undefined,fuzzer-no-link fuzz-run
$(FUZZ_BIN): $(BUILD)/tests/fuzz/fuzz_request.o $(CORE_OBJ) $(PROTO_OBJ) $(TYPES_OBJ) $(NNG_SERVER_A)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(UV_A) $(NNG_A) $(PBC_A) $(INIH_A) $(JANSSON_A) $(SYSLIBS)
$(CORPUS_BIN): $(BUILD)/tests/fuzz/fuzz_corpus.o $(PROTO_OBJ) $(NNG_SERVER_A) \
	       $(call obj,daemon/backend/tenant_worker/msg.c)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(SYSLIBS)
fuzz-run: $(FUZZ_BIN) $(CORPUS_BIN)
	rm -rf $(BUILD)/corpus && mkdir -p $(BUILD)/corpus
	$(CORPUS_BIN) $(BUILD)/corpus
	cp tests/fuzz/regressions/* $(BUILD)/corpus/
	$(FUZZ_BIN) $(BUILD)/corpus -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
	  -rss_limit_mb=2048 -print_final_stats=1

demo: $(GPUD) $(GPUCTL) $(LIB_SO)
	PYTHON=$(PYTHON) scripts/demo.sh $(GPUD) $(GPUCTL)

deps:
	scripts/install-deps.sh

# make install: everything under DESTDIR + the directories above. The config
# file is installed only where none is (an admin's stays); the shared library
# as its file, the soname link and the -l link. Without DESTDIR, as root,
# ldconfig then updates the loader's cache (for LIBDIR under /usr/local).
CONF := $(DESTDIR)$(SYSCONFDIR)/gpud/gpud.conf
DOC_PAGES := $(wildcard docs/*.md)
INSTALLED := $(addprefix $(DESTDIR)$(BINDIR)/,gpud gpuctl) \
             $(addprefix $(DESTDIR)$(LIBDIR)/,libgpud-client.a $(notdir $(LIB_SO)) $(SONAME) \
                                               libgpud-client.so) \
             $(DESTDIR)$(PKGCONFIGDIR)/gpud-client.pc \
             $(addprefix $(DESTDIR)$(INCLUDEDIR)/gpud/,$(notdir $(HEADERS))) \
             $(DESTDIR)$(SYSTEMDUNITDIR)/gpud.service $(DESTDIR)$(SYSUSERSDIR)/gpud.conf \
             $(DESTDIR)$(TMPFILESDIR)/gpud.conf $(DESTDIR)$(DOCDIR)/README.md \
             $(addprefix $(DESTDIR)$(DOCDIR)/docs/,$(notdir $(DOC_PAGES))) \
             $(addprefix $(DESTDIR)$(PYTHONDIR)/gpud/,$(notdir $(PY_SRC)) _install.py) \
             $(foreach p,$(MAN_PAGES),$(call man_dest,$(p))) $(DESTDIR)$(BASHCOMPDIR)/gpuctl
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	  $(DESTDIR)$(INCLUDEDIR)/gpud $(DESTDIR)$(SYSCONFDIR)/gpud $(DESTDIR)$(SYSTEMDUNITDIR) \
	  $(DESTDIR)$(DOCDIR)
	install -m 755 $(GPUD) $(GPUCTL) $(DESTDIR)$(BINDIR)/
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libgpud-client.so
	install -m 644 $(LIB_PC) $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 644 $(HEADERS) $(DESTDIR)$(INCLUDEDIR)/gpud/
	install -m 644 $(SERVICE) $(DESTDIR)$(SYSTEMDUNITDIR)/
	install -D -m 644 systemd/gpud.sysusers $(DESTDIR)$(SYSUSERSDIR)/gpud.conf
	install -D -m 644 systemd/gpud.tmpfiles $(DESTDIR)$(TMPFILESDIR)/gpud.conf
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/docs
	install -m 644 $(DOC_PAGES) $(DESTDIR)$(DOCDIR)/docs/
	install -d $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 client/gpuctl/completion.bash $(DESTDIR)$(BASHCOMPDIR)/gpuctl
	$(if $(SCDOC),$(foreach p,$(MAN_PAGES),install -D -m 644 $(p) $(call man_dest,$(p)) && ) true, \
	  @echo "install: scdoc not found, so no man pages (apt-get install scdoc)")
	test -e $(CONF) || install -m 644 config/gpud.conf $(CONF)
	install -d $(DESTDIR)$(PYTHONDIR)/gpud
	install -m 644 $(PY_SRC) $(DESTDIR)$(PYTHONDIR)/gpud/
	printf '# Written by make install: where libgpud-client is.\nLIBDIR = "%s"\n' \
	  '$(LIBDIR)' > $(DESTDIR)$(PYTHONDIR)/gpud/_install.py
	$(PYTHON) -m compileall -q -d $(PYTHONDIR)/gpud $(DESTDIR)$(PYTHONDIR)/gpud
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
	  echo ldconfig; ldconfig; fi
# make uninstall: the same list, given the same variables. The config file
# goes only if it is still the one shipped: one an admin changed is kept
# (and named). Directories go if emptied; shared ones (bin, lib, ...) stay.
uninstall:
	rm -f $(INSTALLED)
	rm -rf $(DESTDIR)$(PYTHONDIR)/gpud/__pycache__
	@if [ -e $(CONF) ]; then \
	  if cmp -s config/gpud.conf $(CONF); then echo "rm -f $(CONF)"; rm -f $(CONF); \
	  else echo "uninstall: kept $(CONF): it differs from config/gpud.conf (changed after install)"; fi; \
	fi
	-@rmdir $(DESTDIR)$(INCLUDEDIR)/gpud $(DESTDIR)$(SYSCONFDIR)/gpud $(DESTDIR)$(DOCDIR)/docs \
	  $(DESTDIR)$(DOCDIR) \
	  $(DESTDIR)$(PYTHONDIR)/gpud 2>/dev/null || true

# make deb: the Debian packages (debian/, debhelper 13) with dpkg-buildpackage
# -b, from a copy of the tree (tracked and untracked, not ignored, files) in
# $(DEB_DIR)/gpud-$(VERSION), so the debs and the build stay out of the
# tree; the nng already built for $(BUILD) is reused. The .debs, .changes
# and .buildinfo land in $(DEB_DIR), then lintian checks them (errors fail).
# CUDA=0/1 on make's command line forces the backend choice (the packages'
# description names it); otherwise the cuda backend is in where nvcc is.
DEB_DIR     := $(BUILD)/deb
DEB_SRC     := $(DEB_DIR)/gpud-$(VERSION)
DEB_CHANGES  = $(wildcard $(DEB_DIR)/gpud_*.changes)
deb: $(BUILD)/nng/server/libnng.a $(BUILD)/nng/client/libnng.a
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)/build-deb
	git ls-files -z -co --exclude-standard | tar -c --null -T - | tar -x -C $(DEB_SRC)
	cp -a $(BUILD)/nng $(DEB_SRC)/build-deb/
	# the package build takes its flags from debian/rules and dpkg-buildflags
	# alone: none of this make's command line (WERROR=1 would reach nng's
	# cmake build through CFLAGS) or its exported CFLAGS
	cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CFLAGS -u CPPFLAGS -u LDFLAGS \
	  -u WERROR -u SANITIZE -u LOOP_CHECK -u OPT \
	  GPUD_CUDA=$(if $(filter command line,$(origin CUDA)),$(CUDA)) \
	  dpkg-buildpackage -b -us -uc -j2 >../build.log 2>&1 || { tail -40 ../build.log >&2; exit 1; }
	rm -rf $(DEB_SRC)
	cd $(DEB_DIR) && { lintian --fail-on error --info $$(ls gpud_*.changes) >lintian.log 2>&1; \
	  rc=$$?; grep -v '^N:' lintian.log; exit $$rc; }
	@ls -l $(DEB_DIR)/*.deb
# make test-deb: the packages installed into a scratch root, gpud started
# from it, its gpuctl and Python package run against it, then purged
# (tests/deb_check.sh). Builds them first if $(DEB_DIR) has none.
test-deb:
	@test -n "$(DEB_CHANGES)" || $(MAKE) deb
	PYTHON=$(PYTHON) tests/deb_check.sh $(DEB_DIR)

# clang-format (Debian's clang-format-14) with the project's .clang-format.
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cu' ':!third_party')
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run -Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD)

# (not in make deb's copy of the tree, whose tmpfiles.d and sysusers.d are folders)
-include $(shell find $(BUILD) -path '$(BUILD)/deb*' -prune -o -type f -name '*.d' -print 2>/dev/null)
