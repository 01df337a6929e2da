# symheap: `make` builds the library and tools, `make demo` runs the benchmark
# on 4 ranks, `make test` runs every test and ends with "N passed, N failed".
CC ?= cc
PREFIX ?= /usr/local
BUILD ?= build
OPT ?= -O2 -g
SAN ?=
# Truncating snprintf is intended everywhere we use it (bounded messages).
CLANG_FLAGS := $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),-Wno-unknown-warning-option)
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow \
  -Wstrict-prototypes -Wno-format-truncation $(CLANG_FLAGS) -Iinclude -fPIC -fvisibility=hidden -pthread \
  $(OPT) $(SAN) $(CFLAGS)
LDFLAGS_ALL = -pthread $(SAN) $(LDFLAGS)
LIBS = -ldl

LIB_SRCS := $(wildcard core/*.c) $(wildcard adaptors/device/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
TOOLS := symheap-run symheap-info symheap-bench symheap-conformance
TESTS := test_unit test_multirank test_faults test_hostile test_kill test_exhaust \
  test_plugins test_rdma test_window_path test_split_ccl test_stall test_net
HEADERS := $(wildcard include/*.h) $(wildcard core/*.h) \
  $(wildcard adaptors/*/*.h)

.PHONY: all lib tools tests demo test install clean format env-doc plugins
all: lib tools plugins
lib: $(BUILD)/lib/libsymheap.so $(BUILD)/lib/libsymheap.a $(BUILD)/boundary.ok
tools: $(TOOLS:%=$(BUILD)/bin/%)
tests: $(TESTS:%=$(BUILD)/test/%)

$(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/lib/libsymheap.so: $(LIB_OBJS) symheap.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@.0 $(LIB_OBJS) -Wl,--version-script=symheap.map \
	  -Wl,-soname,libsymheap.so.0 -Wl,--no-undefined $(LDFLAGS_ALL) $(LIBS)
	ln -sf libsymheap.so.0 $@

$(BUILD)/lib/libsymheap.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(LIB_OBJS)

# One boundary: every adaptor and plugin is written as a vendor would write
# it, with the public headers alone.  Each directory is copied out of the
# tree and compiled with include/ as its only include path, so a core header
# reached by any path fails the build.
BOUNDARY_DIRS := adaptors/device plugins test/plugins test/conformance
$(BUILD)/boundary.ok: $(foreach d,$(BOUNDARY_DIRS),$(wildcard $(d)/*.[ch])) $(wildcard include/*.h)
	@rm -rf $(BUILD)/boundary && mkdir -p $(BUILD)/boundary
	@set -e; for d in $(BOUNDARY_DIRS); do \
	  mkdir -p $(BUILD)/boundary/$$d; cp $$d/*.[ch] $(BUILD)/boundary/$$d/ 2>/dev/null || cp $$d/*.c $(BUILD)/boundary/$$d/; \
	  for f in $(BUILD)/boundary/$$d/*.c; do \
	    $(CC) $(filter-out -I%,$(CFLAGS_ALL)) -I$(CURDIR)/include -DBAD=1 -DBREAK=0 -c $$f -o $$f.o \
	      || { echo "boundary: $$d/$$(basename $$f) does not compile with include/ alone (see above; docs/architecture.md)"; exit 1; }; \
	  done; done
	@touch $@

# Plugins (plugins/*.c): shared objects beside libsymheap, which is where a
# bare SYMHEAP_PLUGIN name is looked for last.  They do not link libsymheap.
PLUGINS := $(patsubst plugins/%.c,%,$(wildcard plugins/*.c))
PLUGIN_LIBS := $(PLUGINS:%=$(BUILD)/lib/libsymheap-plugin-%.so)
plugins: $(PLUGIN_LIBS)
$(BUILD)/lib/libsymheap-plugin-%.so: plugins/%.c $(wildcard include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -shared -o $@ $< -Wl,--no-undefined $(LDFLAGS_ALL)

# The MPI ccl adaptor, wherever mpicc is: its own shared object, so that
# libsymheap never links MPI; symheap_comm_init_env loads it under mpirun.
MPICC ?= $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
MPI_CCL := $(BUILD)/lib/libsymheap-ccl-mpi.so
$(MPI_CCL): adaptors/ccl/mpi/ccl_mpi.c include/symheap_mpi.h $(wildcard include/*.h)
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) MPICH_CC=$(CC) $(MPICC) $(CFLAGS_ALL) -shared -o $@ $< $(LDFLAGS_ALL)
# A program that joins through symheap_comm_init_mpi.
$(BUILD)/test/test_mpi: test/test_mpi.c $(MPI_CCL) $(BUILD)/obj/test/harness.o \
    $(BUILD)/lib/libsymheap.so $(HEADERS)
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) MPICH_CC=$(CC) $(MPICC) $(CFLAGS_ALL) -Itest -o $@ $< \
	  $(BUILD)/obj/test/harness.o -L$(BUILD)/lib -lsymheap-ccl-mpi -lsymheap \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_ALL)
lib: $(MPI_CCL)
tests: $(BUILD)/test/test_mpi
# The peer's symmetric allocation (bench/mpi_win_alloc.c), beside
# symheap-bench --heap: docs/perf/heap.md.
.PHONY: mpi-win-bench
mpi-win-bench: $(BUILD)/bin/mpi-win-bench
$(BUILD)/bin/mpi-win-bench: bench/mpi_win_alloc.c
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) MPICH_CC=$(CC) $(MPICC) $(CFLAGS_ALL) -o $@ $< $(LDFLAGS_ALL)
endif

# examples/embed: a collective library embedding symheap (its own
# bootstrap, symheap_comm_init_ccl), and its test; linked like a user's
# program, against the shared library.
$(BUILD)/test/test_embed: examples/embed/test_embed.c examples/embed/minicoll.c \
    examples/embed/minicoll.h $(BUILD)/lib/libsymheap.so $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Iexamples/embed -o $@ examples/embed/test_embed.c \
	  examples/embed/minicoll.c -L$(BUILD)/lib -lsymheap \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_ALL)
tests: $(BUILD)/test/test_embed

# Broken plugins for test_plugins, one per kind of refusal.
BAD_PLUGINS := $(foreach n,1 2 3 4 5 6 7 8 9 10,$(BUILD)/test/bad_plugins/bad$(n).so)
$(BUILD)/test/bad_plugins/bad%.so: test/plugins/bad_plugin.c $(wildcard include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Wno-pedantic -DBAD=$* -shared -o $@ $< $(LDFLAGS_ALL)
tests: $(BAD_PLUGINS) plugins
# A ccl plugin (SYMHEAP_CCL=shmccl): a job joined through the plugin alone.
$(BUILD)/test/plugins/libsymheap-plugin-shmccl.so: test/plugins/shm_ccl.c $(wildcard include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -shared -o $@ $< $(LDFLAGS_ALL)
tests: $(BUILD)/test/plugins/libsymheap-plugin-shmccl.so

# Tools use the shared library, found next to them after install too.
$(BUILD)/bin/%: tools/%.c $(BUILD)/lib/libsymheap.so $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< -L$(BUILD)/lib -lsymheap \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_ALL) -lm

# symheap-info reads the adaptor registry and the variable table directly.
$(BUILD)/bin/symheap-info: tools/symheap-info.c $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -o $@ $< $(BUILD)/lib/libsymheap.a $(LDFLAGS_ALL) $(LIBS)

# symheap-conformance (tools/conformance/) drives adaptors directly, through
# the registry of the core it links statically.
CONFORMANCE_SRCS := $(wildcard tools/conformance/*.c)
$(BUILD)/bin/symheap-conformance: $(CONFORMANCE_SRCS) tools/conformance/kit.h \
    $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -o $@ $(CONFORMANCE_SRCS) \
	  $(BUILD)/lib/libsymheap.a $(LDFLAGS_ALL) $(LIBS)
# make conformance DEVICE=NAME [SYMHEAP_PLUGIN=...]
DEVICE ?= host
.PHONY: conformance
conformance: $(BUILD)/bin/symheap-conformance plugins
	$(BUILD)/bin/symheap-conformance --device $(DEVICE)

# Tests link the static library so they can reach core internals.
TEST_COMMON := test/harness.c test/record_adaptor.c
$(BUILD)/test/%: test/%.c $(TEST_COMMON) test/harness.h $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -o $@ $< $(TEST_COMMON) $(BUILD)/lib/libsymheap.a \
	  $(LDFLAGS_ALL) $(LIBS)

# test_net carries its own software net adaptor (test/net_loop.c).
$(BUILD)/test/test_net: test/test_net.c test/net_loop.c test/net_loop.h \
    $(TEST_COMMON) test/harness.h $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -o $@ test/test_net.c test/net_loop.c \
	  $(TEST_COMMON) $(BUILD)/lib/libsymheap.a $(LDFLAGS_ALL) $(LIBS)

# test_exhaust fails the library's allocations on demand.
$(BUILD)/test/test_exhaust: LDFLAGS += -Wl,--wrap=malloc -Wl,--wrap=calloc \
  -Wl,--wrap=free

# The fake CUDA driver, for the cuda adaptor's tests on machines without a GPU.
FAKE_CUDA := $(BUILD)/fake_cuda/libcuda.so.1
$(FAKE_CUDA): test/fake_cuda/fake_cuda.c test/fake_cuda/fake_cuda.h adaptors/device/cuda_api.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -shared -o $@ $< -Wl,-soname,libcuda.so.1 $(LDFLAGS_ALL)
$(BUILD)/test/test_cuda_fake: test/fake_cuda/test_cuda_fake.c $(TEST_COMMON) \
    test/harness.h test/fake_cuda/fake_cuda.h $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -o $@ $< $(TEST_COMMON) $(BUILD)/lib/libsymheap.a \
	  $(LDFLAGS_ALL) $(LIBS)
tests: $(FAKE_CUDA) $(BUILD)/test/test_cuda_fake

# The fake HIP runtime, for the hip adaptor's tests.
FAKE_HIP := $(BUILD)/fake_hip/libamdhip64.so
$(FAKE_HIP): test/fake_hip/fake_hip.c test/fake_hip/fake_hip.h adaptors/device/hip_api.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -shared -o $@ $< -Wl,-soname,libamdhip64.so $(LDFLAGS_ALL)
$(BUILD)/test/test_hip_fake: test/fake_hip/test_hip_fake.c $(TEST_COMMON) \
    test/harness.h test/fake_hip/fake_hip.h $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -o $@ $< $(TEST_COMMON) $(BUILD)/lib/libsymheap.a \
	  $(LDFLAGS_ALL) $(LIBS)
tests: $(FAKE_HIP) $(BUILD)/test/test_hip_fake

# The fake libibverbs, for RDMA registration on machines without RDMA.
FAKE_IBV := $(BUILD)/fake_ibverbs/libibverbs.so.1
$(FAKE_IBV): test/fake_ibverbs/fake_ibverbs.c test/fake_ibverbs/fake_ibverbs.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -shared -o $@ $< -Wl,-soname,libibverbs.so.1 $(LDFLAGS_ALL)
$(BUILD)/test/test_rdma: test/fake_ibverbs/fake_ibverbs.h
tests: $(FAKE_IBV) $(BUILD)/test/test_rdma

# With the CUDA toolkit, check cuda_api.h against its cuda.h.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
$(BUILD)/test/test_cuda_abi: test/test_cuda_abi.c adaptors/device/cuda_api.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(CUDA_HOME)/include -o $@ $<
tests: $(BUILD)/test/test_cuda_abi
endif

# GPU tests (CUDA C) wherever nvcc is; they skip, saying so, without a GPU.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
NVCC_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
$(BUILD)/obj/test/%.o: test/%.c test/harness.h $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -c $< -o $@
$(BUILD)/test/test_gpu: test/gpu/test_gpu.cu $(BUILD)/obj/test/harness.o \
    $(BUILD)/obj/test/record_adaptor.o $(BUILD)/lib/libsymheap.a $(HEADERS) \
    test/gpu/gpu_suite.cuh
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(NVCC_ARCH) -Iinclude -Ikernels -Itest -o $@ $< \
	  $(BUILD)/obj/test/harness.o $(BUILD)/obj/test/record_adaptor.o \
	  $(BUILD)/lib/libsymheap.a -ldl -lpthread
.PHONY: gpu-tests
gpu-tests: $(BUILD)/test/test_gpu

# The CUDA collectives (kernels/), wherever nvcc is.  They link the shared
# libsymheap so that windows are the application's own.
ifneq ($(NVCC),)
CUDA_LIB := $(BUILD)/lib/libsymheap_cuda.so
KERNEL_OBJS := $(patsubst %.cu,$(BUILD)/obj/%.o,$(wildcard kernels/*.cu))
KERNEL_DEPS := $(wildcard kernels/*.cuh kernels/*.h) $(HEADERS)
NVCC_FLAGS = -O3 -std=c++17 $(NVCC_ARCH) -Iinclude -Ikernels \
  -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Werror
$(BUILD)/obj/kernels/%.o: kernels/%.cu $(KERNEL_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@
$(CUDA_LIB): $(KERNEL_OBJS) $(BUILD)/lib/libsymheap.so
	$(NVCC) -shared -o $@.0 $(KERNEL_OBJS) -Xlinker -soname,libsymheap_cuda.so.0 \
	  -L$(BUILD)/lib -lsymheap -Xlinker -rpath,'$$ORIGIN'
	ln -sf libsymheap_cuda.so.0 $@
# GPU tests of the collectives, and the collectives benchmark.
$(BUILD)/test/test_coll: test/gpu/test_coll.cu $(BUILD)/obj/test/harness.o \
    test/gpu/coll_testlib.cuh test/gpu/gpu_suite.cuh $(CUDA_LIB) $(KERNEL_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(NVCC_ARCH) -Iinclude -Ikernels -Itest -o $@ $< \
	  $(BUILD)/obj/test/harness.o -L$(BUILD)/lib -lsymheap_cuda -lsymheap \
	  -Xlinker -rpath,'$$ORIGIN/../lib' -ldl -lpthread
$(BUILD)/bin/symheap-bench-cuda: tools/symheap-bench-cuda.cu $(CUDA_LIB) \
    $(KERNEL_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(NVCC_ARCH) -Iinclude -Ikernels -o $@ $< \
	  -L$(BUILD)/lib -lsymheap_cuda -lsymheap -Xlinker -rpath,'$$ORIGIN/../lib'
# The collectives' host-side checks: plain C, no GPU needed.
$(BUILD)/test/test_coll_api: test/test_coll_api.c $(BUILD)/obj/test/harness.o \
    $(CUDA_LIB) $(KERNEL_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Ikernels -o $@ $< $(BUILD)/obj/test/harness.o \
	  -L$(BUILD)/lib -lsymheap_cuda -lsymheap -Wl,-rpath,'$$ORIGIN/../lib' \
	  $(LDFLAGS_ALL) $(LIBS)
# Tuning probe for the kernels' launch parameters (bench/coll_sweep.cu).
.PHONY: coll-sweep
coll-sweep: $(BUILD)/bin/coll-sweep
$(BUILD)/bin/coll-sweep: bench/coll_sweep.cu $(KERNEL_OBJS) $(BUILD)/lib/libsymheap.so
	$(NVCC) -O2 -std=c++17 $(NVCC_ARCH) -Iinclude -Ikernels -o $@ $< \
	  $(KERNEL_OBJS) -L$(BUILD)/lib -lsymheap -Xlinker -rpath,'$$ORIGIN/../lib'
# Accessor and release cost against the number of live windows.
.PHONY: window-lookup
window-lookup: $(BUILD)/bin/window-lookup
$(BUILD)/bin/window-lookup: bench/window_lookup.c $(BUILD)/lib/libsymheap.so
	$(CC) $(CFLAGS_ALL) -o $@ $< -L$(BUILD)/lib -lsymheap -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_ALL)
# Probe of the host's cost per eager collective call (bench/launch_cost.cu).
.PHONY: launch-cost
launch-cost: $(BUILD)/bin/launch-cost
$(BUILD)/bin/launch-cost: bench/launch_cost.cu $(CUDA_LIB)
	$(NVCC) -O2 -std=c++17 $(NVCC_ARCH) -Iinclude -Ikernels -o $@ $< \
	  -L$(BUILD)/lib -lsymheap_cuda -lsymheap -Xlinker -rpath,'$$ORIGIN/../lib'
all: $(CUDA_LIB) $(BUILD)/bin/symheap-bench-cuda
tests: $(BUILD)/test/test_coll_api
gpu-tests: $(BUILD)/test/test_coll
# Reduce-scatter, all-to-all(v), broadcast, the copy-engine paths (issue 19).
$(BUILD)/test/test_coll_xfer: test/gpu/test_coll_xfer.cu \
    test/gpu/coll_testlib.cuh test/gpu/gpu_suite.cuh test/gpu/a2av_testlib.cuh \
    $(BUILD)/obj/test/harness.o $(CUDA_LIB) \
    $(KERNEL_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(NVCC_ARCH) -Iinclude -Ikernels -Itest -o $@ $< \
	  $(BUILD)/obj/test/harness.o -L$(BUILD)/lib -lsymheap_cuda -lsymheap \
	  -Xlinker -rpath,'$$ORIGIN/../lib' -ldl -lpthread
gpu-tests: $(BUILD)/test/test_coll_xfer
endif

# libFuzzer targets (clang): the library built with coverage and ASan/UBSan
# into build/fuzz, each target linked against it.  test/run.sh runs them for
# a bounded time on copies of test/fuzz/corpus.
FUZZERS := fuzz_uid fuzz_config fuzz_msg
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
.PHONY: fuzz
fuzz:
	$(MAKE) -s BUILD=build/fuzz CC=clang OPT="-O1 -g" \
	  SAN="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" build/fuzz/lib/libsymheap.a
	@mkdir -p build/fuzz/bin
	for f in $(FUZZERS); do \
	  clang $(filter-out -fvisibility=hidden,$(CFLAGS_ALL)) -Wno-unknown-warning-option \
	    -Icore -O1 -g \
	    -fsanitize=fuzzer $(FUZZ_SAN) -o build/fuzz/bin/$$f test/fuzz/$$f.c \
	    build/fuzz/lib/libsymheap.a -pthread -ldl || exit 1; done

demo: all
	$(BUILD)/bin/symheap-run -n 4 -- $(BUILD)/bin/symheap-bench

test:
	./test/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/symheap.h include/symheap_device.h \
	  include/symheap_adaptor.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(BUILD)/lib/libsymheap.so.0 \
	  $(DESTDIR)$(PREFIX)/lib/libsymheap.so.0
	ln -sf libsymheap.so.0 $(DESTDIR)$(PREFIX)/lib/libsymheap.so
	install -m 644 $(BUILD)/lib/libsymheap.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(PLUGIN_LIBS) $(DESTDIR)$(PREFIX)/lib/
	if [ -e $(BUILD)/lib/libsymheap-ccl-mpi.so ]; then \
	  install -m 755 $(BUILD)/lib/libsymheap-ccl-mpi.so $(DESTDIR)$(PREFIX)/lib/ && \
	  install -m 644 include/symheap_mpi.h $(DESTDIR)$(PREFIX)/include/; fi
	install -m 755 $(TOOLS:%=$(BUILD)/bin/%) $(DESTDIR)$(PREFIX)/bin/
	if [ -e $(BUILD)/lib/libsymheap_cuda.so.0 ]; then \
	  install -m 755 $(BUILD)/lib/libsymheap_cuda.so.0 $(DESTDIR)$(PREFIX)/lib/ && \
	  ln -sf libsymheap_cuda.so.0 $(DESTDIR)$(PREFIX)/lib/libsymheap_cuda.so && \
	  install -m 644 kernels/symheap_cuda.h kernels/symheap_cuda_load.h kernels/symheap_device.cuh \
	    $(DESTDIR)$(PREFIX)/include/ && \
	  install -m 755 $(BUILD)/bin/symheap-bench-cuda $(DESTDIR)$(PREFIX)/bin/; fi
	sed -e 's|@PREFIX@|$(PREFIX)|g' \
	  -e 's|@VERSION@|$(shell sed -n 's/#define SYMHEAP_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' include/symheap.h | paste -sd.)|' \
	  symheap.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/symheap.pc

# docs/env.md's table is symheap-info's; rewrite it after changing a variable.
env-doc: $(BUILD)/bin/symheap-info
	{ sed -n '1,/^|/p' docs/env.md | sed '$$d'; $(BUILD)/bin/symheap-info -e --markdown; \
	  sed -n '/^|/,$$p' docs/env.md | sed '/^|/d'; } > docs/env.md.new && mv docs/env.md.new docs/env.md

format:
	clang-format -i include/*.h core/*.[ch] adaptors/device/*.[ch] adaptors/ccl/mpi/*.c tools/*.c test/*.[ch] \
	  test/fake_cuda/*.[ch] test/fake_ibverbs/*.[ch] test/gpu/*.cu bench/*.c \
	  tools/conformance/*.[ch] test/conformance/*.c

clean:
	rm -rf build

# Python bindings (bindings/python/symheap: pure Python over ctypes, nothing
# to compile).  Copied beside the build's libraries in the layout that
# `make install` gives PREFIX, so that
# PYTHONPATH=build/lib/python3/site-packages imports the build tree's package
# and it finds build/lib/libsymheap.so.0 the way an installed one finds
# PREFIX/lib's (docs/python.md).
PY_SRCS := $(wildcard bindings/python/symheap/*.py)
PY_DIR := $(BUILD)/lib/python3/site-packages/symheap
$(PY_DIR)/%.py: bindings/python/symheap/%.py
	@mkdir -p $(dir $@)
	cp $< $@
.PHONY: python install-python
python: $(PY_SRCS:bindings/python/symheap/%=$(PY_DIR)/%)
all: python
install: install-python
install-python: python
	install -d $(DESTDIR)$(PREFIX)/lib/python3/site-packages/symheap
	install -m 644 $(PY_SRCS) $(DESTDIR)$(PREFIX)/lib/python3/site-packages/symheap/
# The conformance kit's own test: one adaptor written from the public
# headers alone, built once correct (0) and once per mistake (-DBREAK=N);
# test/conformance/run_broken.sh runs the kit on each.
BROKEN_IDS := $(shell seq 0 32)
BROKEN_ADAPTORS := $(BROKEN_IDS:%=$(BUILD)/test/broken/broken%.so)
$(BUILD)/test/broken/broken%.so: test/conformance/broken_adaptor.c $(wildcard include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DBREAK=$* -shared -o $@ $< -Wl,--no-undefined $(LDFLAGS_ALL)
tests: $(BROKEN_ADAPTORS)
# OpenSHMEM 1.5 over symheap's public API (bindings/openshmem,
# docs/openshmem.md): libsymheap-shmem, its headers under
# include/symheap-shmem/, the symheap-oshcc wrapper, and its tests.
SHMEM_DIR := bindings/openshmem
SHMEM_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard $(SHMEM_DIR)/*.c))
SHMEM_PUB := shmem.h shmem_types.h shmem_generic.h shmem_fast.h
SHMEM_HDRS := $(SHMEM_PUB:%=$(SHMEM_DIR)/%) $(SHMEM_DIR)/shmem_internal.h \
  include/symheap.h include/symheap_device.h
SHMEM_INC := $(BUILD)/include/symheap-shmem
SHMEM_OUT := $(BUILD)/lib/libsymheap-shmem.so $(BUILD)/lib/libsymheap-shmem.a \
  $(SHMEM_PUB:%=$(SHMEM_INC)/%) $(BUILD)/bin/symheap-oshcc $(BUILD)/bin/symheap-oshc++
.PHONY: shmem
shmem: $(SHMEM_OUT)
all: shmem
$(BUILD)/obj/$(SHMEM_DIR)/%.o: $(SHMEM_DIR)/%.c $(SHMEM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fvisibility=default -fno-semantic-interposition \
	  -DSYMHEAP_SHMEM_BUILDING -I$(SHMEM_DIR) -c $< -o $@
$(BUILD)/lib/libsymheap-shmem.so: $(SHMEM_OBJS) $(SHMEM_DIR)/shmem.map $(BUILD)/lib/libsymheap.so
	$(CC) -shared -o $@.0 $(SHMEM_OBJS) -Wl,--version-script=$(SHMEM_DIR)/shmem.map \
	  -Wl,-soname,libsymheap-shmem.so.0 -Wl,-Bsymbolic-functions -Wl,--no-undefined -L$(BUILD)/lib -lsymheap \
	  -Wl,-rpath,'$$ORIGIN' $(LDFLAGS_ALL)
	ln -sf libsymheap-shmem.so.0 $@
$(BUILD)/lib/libsymheap-shmem.a: $(SHMEM_OBJS)
	rm -f $@ && ar rcs $@ $(SHMEM_OBJS)
$(SHMEM_INC)/%.h: $(SHMEM_DIR)/%.h
	@mkdir -p $(dir $@)
	cp $< $@
$(BUILD)/bin/symheap-oshcc: $(SHMEM_DIR)/symheap-oshcc
	@mkdir -p $(dir $@)
	cp $< $@ && chmod +x $@
$(BUILD)/bin/symheap-oshc++: $(BUILD)/bin/symheap-oshcc
	ln -sf symheap-oshcc $@
# Tests (test/shmem): programs written like a user's, run under symheap-run.
SHMEM_TESTS := $(patsubst test/shmem/%.c,$(BUILD)/test/shmem/%,$(wildcard test/shmem/test_*.c))
$(BUILD)/test/shmem/%: test/shmem/%.c test/shmem/shmem_check.h $(SHMEM_OUT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(SHMEM_INC) -Itest/shmem -o $@ $< -L$(BUILD)/lib \
	  -lsymheap-shmem -lsymheap -Wl,-rpath,'$$ORIGIN/../../lib' $(LDFLAGS_ALL)
# The RMA and AMO tests again, calling the library's exported functions
# instead of shmem_fast.h's inline paths.
SHMEM_NOINLINE := $(BUILD)/test/shmem/test_shmem_rma_noinline \
  $(BUILD)/test/shmem/test_shmem_amo_noinline
$(BUILD)/test/shmem/%_noinline: test/shmem/%.c test/shmem/shmem_check.h $(SHMEM_OUT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DSYMHEAP_SHMEM_NO_INLINE -I$(SHMEM_INC) -Itest/shmem -o $@ $< \
	  -L$(BUILD)/lib -lsymheap-shmem -lsymheap -Wl,-rpath,'$$ORIGIN/../../lib' $(LDFLAGS_ALL)
tests: $(SHMEM_TESTS) $(SHMEM_NOINLINE)
install: install-shmem
.PHONY: install-shmem
install-shmem: shmem
	install -d $(DESTDIR)$(PREFIX)/include/symheap-shmem $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(SHMEM_PUB:%=$(SHMEM_DIR)/%) $(DESTDIR)$(PREFIX)/include/symheap-shmem/
	install -m 755 $(BUILD)/lib/libsymheap-shmem.so.0 $(DESTDIR)$(PREFIX)/lib/
	ln -sf libsymheap-shmem.so.0 $(DESTDIR)$(PREFIX)/lib/libsymheap-shmem.so
	install -m 644 $(BUILD)/lib/libsymheap-shmem.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHMEM_DIR)/symheap-oshcc $(DESTDIR)$(PREFIX)/bin/
	ln -sf symheap-oshcc $(DESTDIR)$(PREFIX)/bin/symheap-oshc++
	sed -e 's|@PREFIX@|$(PREFIX)|g' \
	  -e 's|@VERSION@|$(shell sed -n 's/#define SYMHEAP_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' include/symheap.h | paste -sd.)|' \
	  $(SHMEM_DIR)/symheap-shmem.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/symheap-shmem.pc
# test_heap: the symmetric heap's multi-rank suite (test/test_heap.c) and
# its recording-adaptor cases (test/test_heap_record.c, --record).
$(BUILD)/test/test_heap: test/test_heap.c test/test_heap_record.c $(TEST_COMMON) \
    test/harness.h $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -o $@ test/test_heap.c test/test_heap_record.c \
	  $(TEST_COMMON) $(BUILD)/lib/libsymheap.a $(LDFLAGS_ALL) $(LIBS)
tests: $(BUILD)/test/test_heap
# test_agree_wait: how ranks wait in agreements over shared memory.
$(BUILD)/test/test_agree_wait: test/test_agree_wait.c $(TEST_COMMON) \
    test/harness.h $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Icore -o $@ test/test_agree_wait.c $(TEST_COMMON) \
	  $(BUILD)/lib/libsymheap.a $(LDFLAGS_ALL) $(LIBS)
tests: $(BUILD)/test/test_agree_wait
# The heap on a GPU (test/gpu/test_heap_gpu.cu): kernels and collectives on
# heap windows, symheap_malloc inside cudaStreamBeginCapture.
ifneq ($(NVCC),)
$(BUILD)/test/test_heap_gpu: test/gpu/test_heap_gpu.cu test/gpu/gpu_suite.cuh \
    $(BUILD)/obj/test/harness.o \
    $(CUDA_LIB) $(KERNEL_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(NVCC_ARCH) -Iinclude -Ikernels -Itest -o $@ $< \
	  $(BUILD)/obj/test/harness.o -L$(BUILD)/lib -lsymheap_cuda -lsymheap \
	  -Xlinker -rpath,'$$ORIGIN/../lib' -ldl -lpthread
gpu-tests: $(BUILD)/test/test_heap_gpu
endif
# test_mapobj: the mapping object's refcount contract (test/test_mapobj.c).
$(BUILD)/test/test_mapobj: test/test_mapobj.c $(TEST_COMMON) test/harness.h \
    $(BUILD)/lib/libsymheap.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ test/test_mapobj.c $(TEST_COMMON) \
	  $(BUILD)/lib/libsymheap.a $(LDFLAGS_ALL) $(LIBS)
tests: $(BUILD)/test/test_mapobj
