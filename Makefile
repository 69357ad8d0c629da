# gpud — top-level build.
#
#   make              gpud, gpuctl, libgpud-client (.a, .so, .pc) under build/
#   make test         unit + end-to-end tests (cpu backend), then the same
#                     suite under ASan/UBSan and the client under valgrind
#   make test-gpu     the suite against the cuda backend (needs a GPU)
#   make demo         start gpud on a temporary socket, run the demo, stop it
#   make deps         install the Debian packages the build needs (root)
#   make install      PREFIX=/usr/local, DESTDIR honoured
#
# Knobs: WERROR=1, SANITIZE=address,undefined, BUILD=dir, CUDA=0|1, LOOP_CHECK=1,
#        CUDA_ARCHS="75 80 86 89 90", NVCC=path.

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
CXX      ?= c++
VERSION  := 0.1.0

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
# LOOP_CHECK=1: abort when blocking CUDA work runs on gpud's loop thread.
ifeq ($(LOOP_CHECK),1)
CPPFLAGS += -DGPUD_DEBUG_LOOP=1
endif
ifneq ($(SANITIZE),)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

GEN      := $(BUILD)/gen
CPPFLAGS += -D_GNU_SOURCE -DGPUD_VERSION=\"$(VERSION)\" -Iinclude -I. -I$(GEN)
CFLAGS   += -std=c11 $(OPT) $(WARN) $(SANFLAGS) -pthread -MMD -MP
LDFLAGS  += $(SANFLAGS) -pthread

# Static archives of the C dependencies (Debian ships them), so gpud and
# gpuctl run on a machine that has none of these packages installed.
static    = $(shell $(CC) -print-file-name=$(1))
NNG_A     := $(call static,libnng.a) $(call static,libmbedtls.a) \
             $(call static,libmbedx509.a) $(call static,libmbedcrypto.a)
UV_A      := $(call static,libuv_a.a)
PBC_A     := $(call static,libprotobuf-c.a)
INIH_A    := $(call static,libinih.a)
SYSLIBS   := -lm -ldl -lrt

# --- sources -------------------------------------------------------------
PROTO_GEN := $(GEN)/gpud.pb-c.c
PROTO_SRC := proto/wire.c
CLIENT_SRC := client/client.c client/npy.c
DAEMON_SRC := daemon/server.c daemon/verbs.c daemon/config.c daemon/log.c \
              daemon/buffers.c daemon/regions.c daemon/backend.c daemon/backend_cpu.c \
              kernels/table.c kernels/lombscargle.c kernels/custom.c kernels/elementwise.c \
              kernels/reduce.c kernels/histogram.c kernels/matmul.c kernels/random.c kernels/libs.c
DAEMON_CU  :=
ifeq ($(CUDA),1)
CPPFLAGS   += -DGPUD_HAVE_CUDA=1 -I$(CUDA_HOME)/include
DAEMON_SRC += daemon/backend_cuda.c daemon/nvrtc.c kernels/cuda_table.c
DAEMON_CU  += kernels/lombscargle_cuda.cu kernels/elementwise_cuda.cu kernels/reduce_cuda.cu \
              kernels/histogram_cuda.cu kernels/matmul_cuda.cu kernels/random_cuda.cu daemon/pool.cu
# cudart and libstdc++ statically: gpud then needs only the NVIDIA driver.
CUDA_LIBS  := -L$(CUDA_HOME)/lib64 -lcudart_static -static-libstdc++ -static-libgcc
LINK       := $(CXX)
NVCCFLAGS  ?= -O3 -std=c++17 -Xcompiler -Wall,-Wextra $(if $(filter 1,$(WERROR)),-Werror all-warnings) \
              $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
              -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
endif

obj = $(patsubst %.c,$(BUILD)/%.o,$(patsubst %.cu,$(BUILD)/%.cu.o,$(1)))
pic = $(patsubst %.c,$(BUILD)/pic/%.o,$(1))

PROTO_OBJ  := $(BUILD)/gen/gpud.pb-c.o $(call obj,$(PROTO_SRC))
CLIENT_OBJ := $(call obj,$(CLIENT_SRC))
DAEMON_OBJ := $(call obj,$(DAEMON_SRC) $(DAEMON_CU))
CLIENT_PIC := $(call pic,$(CLIENT_SRC) $(PROTO_SRC)) $(BUILD)/pic/gen/gpud.pb-c.o

GPUD    := $(BUILD)/gpud
GPUCTL  := $(BUILD)/gpuctl
LIB_A   := $(BUILD)/libgpud-client.a
LIB_SO  := $(BUILD)/libgpud-client.so.0
LIB_PC  := $(BUILD)/gpud-client.pc

UNIT_SRC := tests/unit_main.c tests/test_npy.c tests/test_config.c tests/test_wire.c \
            tests/test_lombscargle.c tests/test_kernel_table.c tests/test_custom.c \
            tests/test_elementwise.c tests/test_reduce.c tests/test_histogram.c tests/test_matmul.c \
            tests/test_random.c
UNIT     := $(BUILD)/tests/unit
E2E      := $(BUILD)/tests/e2e
CHECK_LIBS := $(call static,libcheck.a) $(call static,libsubunit.a)

.PHONY: all clean test test-unit test-e2e test-scipy test-asan test-valgrind test-gpu fuzz fuzz-run \
        gpu-programs bench-first-result bench-pool bench-transfer bench-fairness bench-custom bench-kernels demo deps install format
all: $(GPUD) $(GPUCTL) $(LIB_A) $(LIB_SO) $(LIB_PC)

# --- generated protobuf-c code ---------------------------------------------
$(GEN)/gpud.pb-c.c $(GEN)/gpud.pb-c.h: proto/gpud.proto
	@mkdir -p $(GEN)
	protoc-c --c_out=$(GEN) -Iproto $<

# every object may include the generated header
$(DAEMON_OBJ) $(CLIENT_OBJ) $(PROTO_OBJ) $(CLIENT_PIC) $(call obj,$(UNIT_SRC)) \
	$(BUILD)/tests/test_e2e.o $(BUILD)/client/gpuctl.o $(BUILD)/daemon/main.o: | $(GEN)/gpud.pb-c.h

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
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -DGPUD_BUILDING_SHARED -c $< -o $@
$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Iinclude -I. -c $< -o $@

# --- products ---------------------------------------------------------------
$(LIB_A): $(CLIENT_OBJ) $(PROTO_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
$(LIB_SO): $(CLIENT_PIC)
	$(CC) -shared -Wl,-soname,libgpud-client.so.0 -Wl,--no-undefined $(LDFLAGS) -o $@ $^ \
	  -lnng -lprotobuf-c
	ln -sf libgpud-client.so.0 $(BUILD)/libgpud-client.so
$(LIB_PC): client/gpud-client.pc.in
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

$(GPUD): $(BUILD)/daemon/main.o $(DAEMON_OBJ) $(PROTO_OBJ)
	$(LINK) $(LDFLAGS) -o $@ $^ $(UV_A) $(NNG_A) $(PBC_A) $(INIH_A) $(CUDA_LIBS) $(SYSLIBS)
$(GPUCTL): $(BUILD)/client/gpuctl.o $(BUILD)/client/demo.o $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(SYSLIBS)

# --- tests ------------------------------------------------------------------
$(UNIT): $(call obj,$(UNIT_SRC)) $(DAEMON_OBJ) $(LIB_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(UV_A) $(NNG_A) $(PBC_A) $(INIH_A) $(CUDA_LIBS) $(SYSLIBS)
$(E2E): $(BUILD)/tests/test_e2e.o $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(NNG_A) $(PBC_A) $(SYSLIBS)

test-unit: $(UNIT)
	$(UNIT)
test-e2e: $(E2E) $(GPUD) $(GPUCTL)
	GPUD_BIN=$(abspath $(GPUD)) GPUCTL_BIN=$(abspath $(GPUCTL)) $(E2E)
test-scipy: $(GPUD) $(GPUCTL)
	tests/scipy_check.sh $(GPUD) $(GPUCTL)
# The same suites under AddressSanitizer + UBSan, in a build directory of their own.
test-asan:
	$(MAKE) BUILD=$(BUILD)/asan SANITIZE=address,undefined CUDA=0 test-unit test-e2e
# The client library under valgrind, driven by the end-to-end suite (no fork mode
# so valgrind follows every test).
test-valgrind: $(E2E) $(GPUD) $(GPUCTL)
	CK_FORK=no GPUD_BIN=$(abspath $(GPUD)) GPUCTL_BIN=$(abspath $(GPUCTL)) \
	  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  $(E2E)
test: test-unit test-e2e test-scipy test-asan test-valgrind fuzz

# --- GPU: tests and benchmarks (need a device; built whenever nvcc is found) ---
GPU_TEST   := $(BUILD)/tests/gpu
STANDALONE := $(BUILD)/bench/standalone_lombscargle
FIRST      := $(BUILD)/bench/first_result
KERNEL_REF := $(call obj,kernels/table.c kernels/lombscargle.c kernels/elementwise.c \
              kernels/reduce.c kernels/histogram.c kernels/matmul.c kernels/random.c kernels/libs.c)
KERNEL_CU  := $(call obj,kernels/cuda_table.c kernels/lombscargle_cuda.cu kernels/elementwise_cuda.cu \
              kernels/reduce_cuda.cu kernels/histogram_cuda.cu kernels/matmul_cuda.cu kernels/random_cuda.cu)
$(GPU_TEST): $(BUILD)/tests/test_gpu.o $(KERNEL_REF) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(NNG_A) $(PBC_A) $(SYSLIBS)
$(STANDALONE): $(BUILD)/bench/standalone_lombscargle.o $(KERNEL_REF) $(KERNEL_CU) $(LIB_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(CUDA_LIBS) $(SYSLIBS)
TRANSFER   := $(BUILD)/bench/transfer
$(TRANSFER): $(BUILD)/bench/transfer.o $(KERNEL_REF) $(KERNEL_CU) $(LIB_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(CUDA_LIBS) $(SYSLIBS)
CUSTOM_BENCH := $(BUILD)/bench/custom_kernels
$(CUSTOM_BENCH): $(BUILD)/bench/custom_kernels.o $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(SYSLIBS)
FAIRNESS   := $(BUILD)/bench/fairness
$(FAIRNESS): $(BUILD)/bench/fairness.o $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(SYSLIBS)
POOL_BENCH := $(BUILD)/bench/pool_alloc
$(POOL_BENCH): $(BUILD)/bench/pool_alloc.o $(call obj,daemon/pool.cu)
	$(LINK) $(LDFLAGS) -o $@ $^ $(CUDA_LIBS) $(SYSLIBS)
KBENCH     := $(BUILD)/bench/kernels
$(KBENCH): $(BUILD)/bench/kernels.o $(LIB_A)
	$(LINK) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(CUDA_LIBS) $(SYSLIBS)
$(FIRST): $(BUILD)/bench/first_result.o $(BUILD)/client/demo.o $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(SYSLIBS)
$(BUILD)/tests/test_gpu.o $(BUILD)/bench/standalone_lombscargle.o $(BUILD)/bench/transfer.o: \
	| $(GEN)/gpud.pb-c.h

gpu-programs: all $(E2E) $(GPU_TEST) $(STANDALONE) $(FIRST) $(POOL_BENCH) $(TRANSFER) $(FAIRNESS) \
	      $(CUSTOM_BENCH) $(KBENCH)
# The GPU suite: every kernel against its CPU reference, then the end-to-end
# suite against the cuda backend.
test-gpu: gpu-programs
	GPUD_BIN=$(abspath $(GPUD)) $(GPU_TEST)
	GPUD_BACKEND=cuda GPUD_BIN=$(abspath $(GPUD)) GPUCTL_BIN=$(abspath $(GPUCTL)) $(E2E)
bench-first-result: gpu-programs
	$(FIRST) $(GPUD) $(GPUCTL) $(STANDALONE)
bench-pool: gpu-programs
	$(POOL_BENCH)
bench-transfer: gpu-programs
	$(TRANSFER) $(GPUD) $(GPUCTL)
bench-fairness: gpu-programs
	$(FAIRNESS) $(GPUD) cuda
bench-custom: gpu-programs
	$(CUSTOM_BENCH) $(GPUD) $(GPUCTL)
bench-kernels: gpu-programs
	$(KBENCH) $(GPUD)

# --- fuzzing: libFuzzer over the request decoder and dispatcher (cpu backend) ---
# `make fuzz` builds it with clang under ASan/UBSan in build/fuzz and runs it
# for FUZZ_SECONDS from a fresh seed corpus (tests/fuzz_corpus.c).
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_SRC     := daemon/server.c daemon/verbs.c daemon/config.c daemon/log.c \
                daemon/buffers.c daemon/regions.c daemon/backend.c daemon/backend_cpu.c \
                kernels/table.c kernels/lombscargle.c kernels/custom.c kernels/elementwise.c \
                kernels/reduce.c kernels/histogram.c kernels/matmul.c kernels/random.c kernels/libs.c
fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang CUDA=0 \
	  SANITIZE=address,undefined,fuzzer-no-link fuzz-run
FUZZ_BIN    := $(BUILD)/tests/fuzz_request
CORPUS_BIN  := $(BUILD)/tests/fuzz_corpus
$(FUZZ_BIN): $(BUILD)/tests/fuzz_request.o $(call obj,$(FUZZ_SRC)) $(PROTO_OBJ)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(UV_A) $(NNG_A) $(PBC_A) $(INIH_A) $(SYSLIBS)
$(CORPUS_BIN): $(BUILD)/tests/fuzz_corpus.o $(PROTO_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(NNG_A) $(PBC_A) $(SYSLIBS)
$(BUILD)/tests/fuzz_request.o $(BUILD)/tests/fuzz_corpus.o: | $(GEN)/gpud.pb-c.h
fuzz-run: $(FUZZ_BIN) $(CORPUS_BIN)
	rm -rf $(BUILD)/corpus && mkdir -p $(BUILD)/corpus
	$(CORPUS_BIN) $(BUILD)/corpus
	$(FUZZ_BIN) $(BUILD)/corpus -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
	  -rss_limit_mb=2048 -print_final_stats=1

demo: $(GPUD) $(GPUCTL)
	scripts/demo.sh $(GPUD) $(GPUCTL)

deps:
	scripts/install-deps.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/include/gpud $(DESTDIR)/etc/gpud
	install -m 755 $(GPUD) $(GPUCTL) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIB_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libgpud-client.so.0 $(DESTDIR)$(PREFIX)/lib/libgpud-client.so
	install -m 644 $(LIB_PC) $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 644 include/gpud/*.h $(DESTDIR)$(PREFIX)/include/gpud/
	test -e $(DESTDIR)/etc/gpud/gpud.conf || install -m 644 config/gpud.conf $(DESTDIR)/etc/gpud/

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')

clean:
	rm -rf $(BUILD)

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/pic/*/*.d $(BUILD)/gen/*.d)
