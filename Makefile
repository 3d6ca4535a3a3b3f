# SPDX-License-Identifier: Apache-2.0
# xgpu - share NVIDIA GPUs between Xen guests (or local processes) fairly and fast.
#
#   make          build everything into build/
#   make test     build with ASan/UBSan into build/san/ and run every test
#   make fuzz     run every libFuzzer harness for FUZZ_SECONDS (60) each (tests/fuzz/)
#   make demo     run xgpud in local mode with three domains of bundled workloads
#   make bench    run the benchmarks and write tables into docs/results/
#   make experiment  Pegasus's coupled-workload evaluation in local mode (EXP_ARGS=--quick)
#   make experiment-xen  its coupled loop on real Xen (patched credit scheduler under QEMU, 4 PV domUs)
#   make gpu-validate  xgpu against NVIDIA's runtime on a GPU machine (see docs/operations.md)
#   make xen-test  only the real-Xen test (Xen 4.17 under QEMU; see docs/xen.md)
#
# Set CUDA_HOME if the CUDA toolkit is not in /usr/local/cuda.

.DEFAULT_GOAL := all

CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc
CC ?= gcc
SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build/san
else
BUILD ?= build
endif

# Device code for Hopper (SASS) plus PTX so newer GPUs can JIT it.
CUDA_ARCH ?= -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS ?= -O2 -cudart shared $(CUDA_ARCH)
# The same programs as most CUDA software is built: nvcc's default static
# runtime, and relocatable device code (what CMake's CUDA_SEPARABLE_COMPILATION
# produces, static too). NVIDIA's runtime inside the program then runs over
# xgpu's libcuda.so.1 (docs/driver-frontend.md).
NVCCFLAGS_STATIC ?= -O2 $(CUDA_ARCH)
NVCCFLAGS_RDC ?= -O2 -rdc=true $(CUDA_ARCH)

WARN := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -g -pthread -fPIC $(WARN) -Icommon -Ibackend -Ibackend/xgpud -Ibackend/executor -Ipolicies -Ixen-sched-patch -I$(CUDA_HOME)/include
ifeq ($(SAN),1)
OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDSAN := -fsanitize=address,undefined
else
OPT := -O2
LDSAN :=
endif
CFLAGS ?=
ALL_CFLAGS := $(CFLAGS_COMMON) $(OPT) $(CPPFLAGS) $(CFLAGS)
LDFLAGS_ALL := -pthread $(LDSAN) $(LDFLAGS)

# Quiet by default; `make V=1` shows every command.
ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2)
endif

OBJ := $(BUILD)/obj
BIN := $(BUILD)/bin
LIB := $(BUILD)/lib
TST := $(BUILD)/tests

DEPS_STAMP := build/.deps-ok

# ---- sources -------------------------------------------------------------
COMMON_SRC := $(wildcard common/*.c)
# frontend/: the two frontends and the channel client they share.
# frontend/channel/: the channel client and the per-process state kept with
# it (stream state, managed memory); linked into libcuda.so.1 only, which
# exports it to libcudart.so.13 so that a process has one channel
# (docs/design.md, "Driver API").
CLIENT_SRC := $(wildcard frontend/channel/*.c)
# frontend/runtime/: libcudart.so.13; frontend/driver/: libcuda.so.1.
RUNTIME_SRC := $(wildcard frontend/runtime/*.c)
DRIVER_SRC := $(wildcard frontend/driver/*.c)
FRONTEND_SRC := $(RUNTIME_SRC) $(CLIENT_SRC)
# xgpud, the control plane: its core, transports, schedule sources and policies.
BACKEND_SRC := $(filter-out backend/xgpud/xgpud.c,$(wildcard backend/xgpud/*.c)) \
	$(wildcard backend/transport/*.c backend/schedsrc/*.c) $(wildcard policies/*.c) \
	xen-sched-patch/reader.c
# xgpu-executor, a domain's accelerator VCPU in a process of its own.
# sandbox.c (seccomp, Landlock) goes into the executor program only.
EXECUTOR_SRC := $(filter-out backend/executor/main.c backend/executor/sandbox.c,$(wildcard backend/executor/*.c)) \
	policies/taskq.c
SIMDRV_SRC := $(wildcard backend/simdrv/*.c)
XLGPU_SRC := $(wildcard tools/xl-gpu/*.c)
# xgpu-xenstub: the in-memory Xen; its archive serves tests in-process.
XENSTUB_SRC := $(filter-out tools/xenstub/main.c,$(wildcard tools/xenstub/*.c))

obj = $(patsubst %.c,$(OBJ)/%.o,$(1))

COMMON_A := $(BUILD)/libxgpu-common.a
FRONTEND_A := $(BUILD)/libxgpu-frontend.a
RUNTIME_A := $(BUILD)/libxgpu-runtime.a
DRIVER_A := $(BUILD)/libxgpu-driver.a
BACKEND_A := $(BUILD)/libxgpu-backend.a
EXECUTOR_A := $(BUILD)/libxgpu-executor.a
SIMDRV_A := $(BUILD)/libxgpu-simdrv.a
XENSTUB_A := $(BUILD)/libxgpu-xenstub.a

CUDART := $(LIB)/libcudart.so.13
CUDADRV := $(LIB)/libcuda.so.1
NVML := $(LIB)/libnvidia-ml.so.1
SIMDRV := $(LIB)/libxgpu-simdrv.so
XGPUD := $(BIN)/xgpud
EXECUTOR := $(BIN)/xgpu-executor
XLGPU := $(BIN)/xl-gpu
XENSTUB := $(BIN)/xgpu-xenstub
# Dumps the patched Xen's exported schedule as JSON (xen-sched-patch/).
SCHEDEXP := $(BIN)/xgpu-schedexp

# Bundled workloads: tools/workloads/<name>/<name>.cu, plus simkernels.c (the
# host implementation the simulated driver uses).
WORKLOADS := $(notdir $(patsubst %/,%,$(dir $(wildcard tools/workloads/*/*.cu))))
# What the workloads (and gpu-validate's bandwidth program) share.
WORKLOAD_H := tools/workloads/workload.h
WORKLOAD_BINS := $(patsubst %,$(BIN)/%,$(WORKLOADS))
# Built for the tests only: bin/static/<name> and bin/rdc/<name>, and one
# program with relocatable device code and -cudart shared, which xgpu's
# libcudart.so.13 refuses with a message saying how to rebuild.
WORKLOAD_BINS_STATIC := $(patsubst %,$(BIN)/static/%,$(WORKLOADS)) $(patsubst %,$(BIN)/rdc/%,$(WORKLOADS)) \
	$(BIN)/rdc-shared/vectorAdd
WORKLOAD_SIMK := $(patsubst %,$(LIB)/simkernels/%.so,$(notdir $(patsubst %/simkernels.c,%,$(wildcard tools/workloads/*/simkernels.c))))

# Tests: tests/unit/test_*.c (cmocka), tests/cuda/*.cu (CUDA programs, with
# optional <name>_simk.c host kernels), tests/e2e/*.sh (end to end).
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(TST)/%,$(UNIT_SRC))
TEST_CU := $(wildcard tests/cuda/*.cu)
TEST_CU_BINS := $(patsubst tests/cuda/%.cu,$(TST)/cuda/%,$(TEST_CU)) \
	$(patsubst tests/cuda/%.cu,$(TST)/cuda/%-compressed,$(TEST_CU)) \
	$(patsubst tests/cuda/%.cu,$(TST)/cuda/static/%,$(TEST_CU)) \
	$(patsubst tests/cuda/%.cu,$(TST)/cuda/rdc/%,$(TEST_CU))
TEST_SIMK := $(patsubst tests/cuda/%_simk.c,$(TST)/simkernels/%.so,$(wildcard tests/cuda/*_simk.c))
# tests/samples/*.cu: small sample-style programs, one per feature, each
# built with -cudart shared and with nvcc's default static runtime and run by
# tests/e2e/samples.sh; the simulated driver computes their kernels from
# their PTX, and the few <name>_simk.c left give a kernel that spins on the
# GPU's clock its modeled time instead. drvsample.c is a driver-API-only one, with its kernels
# in tests/data/drvsample_kernels.cu.
SAMPLE_CU := $(wildcard tests/samples/*.cu)
SAMPLE_BINS := $(patsubst tests/samples/%.cu,$(TST)/samples/%,$(SAMPLE_CU)) \
	$(patsubst tests/samples/%.cu,$(TST)/samples/static/%,$(SAMPLE_CU)) \
	$(TST)/samples/drvsample $(TST)/data/drvsample_kernels.fatbin
TEST_SIMK += $(patsubst tests/samples/%_simk.c,$(TST)/simkernels/%.so,$(wildcard tests/samples/*_simk.c))
TEST_TOOLS_SRC := $(wildcard tests/tools/*.c)
TEST_DATA :=
# test_simdrv's inputs: small kernels as a fatbin (what the frontend
# forwards), a bare cubin and PTX (the other images cuModuleLoadData takes),
# and their host implementations as a simulated-driver plugin.
SIMDRV_TEST_ARCH := -gencode arch=compute_90,code=[sm_90,compute_90]
TEST_DATA += $(TST)/data/simdrv_kernels.fatbin $(TST)/data/simdrv_kernels_zstd.fatbin \
	$(TST)/data/simdrv_kernels_lz4.fatbin $(TST)/data/simdrv_kernels_ptx.fatbin $(TST)/data/simdrv_kernels.cubin \
	$(TST)/data/simdrv_kernels.ptx $(TST)/data/simk/simdrv_kernels.so
$(TST)/data/simdrv_kernels.fatbin: tests/data/simdrv_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(SIMDRV_TEST_ARCH) -o $@ $<
$(TST)/data/simdrv_kernels_zstd.fatbin: tests/data/simdrv_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(SIMDRV_TEST_ARCH) -Xfatbin -compress-all -Xfatbin -compress-mode=size -o $@ $<
$(TST)/data/simdrv_kernels_lz4.fatbin: tests/data/simdrv_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(SIMDRV_TEST_ARCH) -Xfatbin -compress-all -Xfatbin -compress-mode=speed -o $@ $<
$(TST)/data/simdrv_kernels_ptx.fatbin: tests/data/simdrv_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin -gencode arch=compute_90,code=compute_90 -o $@ $<
$(TST)/data/simdrv_kernels.cubin: tests/data/simdrv_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -cubin -arch=sm_90 -o $@ $<
$(TST)/data/simdrv_kernels.ptx: tests/data/simdrv_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -ptx -arch=compute_90 -o $@ $<
# The PTX of the interpreter's conformance suite: a seed for fuzz_ptx.
TEST_DATA += $(TST)/data/ptx_conformance.ptx
$(TST)/data/ptx_conformance.ptx: tests/cuda/ptx_conformance.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -ptx -O2 -arch=compute_90 -o $@ $<
$(TST)/data/simk/simdrv_kernels.so: tests/data/simdrv_kernels_simk.c backend/simdrv/simkernel.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared $< -o $@ $(LDFLAGS_ALL)

# test_fatbin's inputs: one source built the ways nvcc 13 packs device code
# (every -compress-mode: none, zstd on all entries at the default, size and
# balance settings, zstd on PTX only by default, LZ4 for speed; then PTX only,
# SASS for two architectures, Blackwell cubins), so that every variant must
# give the same parameter layouts.
FATBIN_VARIANTS := none all default lz4 size balance ptx 2arch sm100
FATBIN_FLAGS_none := -arch=sm_90 -Xfatbin -compress-mode=none
FATBIN_FLAGS_all := -arch=sm_90 -Xfatbin -compress-all
FATBIN_FLAGS_default := -arch=sm_90
FATBIN_FLAGS_lz4 := -arch=sm_90 -Xfatbin -compress-all -Xfatbin -compress-mode=speed
FATBIN_FLAGS_size := -arch=sm_90 -Xfatbin -compress-all -Xfatbin -compress-mode=size
FATBIN_FLAGS_balance := -arch=sm_90 -Xfatbin -compress-all -Xfatbin -compress-mode=balance
FATBIN_FLAGS_ptx := -gencode arch=compute_90,code=compute_90
FATBIN_FLAGS_2arch := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
FATBIN_FLAGS_sm100 := -gencode arch=compute_100,code=sm_100 -gencode arch=compute_120,code=[sm_120,compute_120]
TEST_DATA += $(patsubst %,$(TST)/data/fatbin_%.fatbin,$(FATBIN_VARIANTS))
$(TST)/data/fatbin_%.fatbin: tests/data/fatbin_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(FATBIN_FLAGS_$*) -o $@ $<
# ... and its device variables: tests/data/fatbin_globals.cu as sm_90 SASS
# plus PTX, PTX only, sm_100 SASS (whose cubins add .nv.merc copies) and,
# with a 4 GiB array beyond ptxas's 32-bit section sizes, as SASS and PTX.
GLOBALS_VARIANTS := sm90 ptx sm100 huge hugeptx
GLOBALS_FLAGS_sm90 := -arch=sm_90
GLOBALS_FLAGS_ptx := -gencode arch=compute_90,code=compute_90
GLOBALS_FLAGS_sm100 := -gencode arch=compute_100,code=sm_100
GLOBALS_FLAGS_huge := -DXGPU_HUGE -gencode arch=compute_90,code=sm_90
GLOBALS_FLAGS_hugeptx := -DXGPU_HUGE -gencode arch=compute_90,code=compute_90
TEST_DATA += $(patsubst %,$(TST)/data/globals_%.fatbin,$(GLOBALS_VARIANTS))
$(TST)/data/globals_%.fatbin: tests/data/fatbin_globals.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(GLOBALS_FLAGS_$*) -o $@ $<

# tests/cuda/drvapi.c: a driver-API-only program, linked as NVIDIA's samples
# are against the toolkit's stub libcuda.so, and the kernels it loads.
DRVAPI := $(TST)/cuda/drvapi
TEST_DATA += $(TST)/data/drvapi_kernels.fatbin $(TST)/data/drvapi_kernels.cubin
$(TST)/data/drvapi_kernels.fatbin: tests/data/drvapi_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(SIMDRV_TEST_ARCH) -o $@ $<
$(TST)/data/drvapi_kernels.cubin: tests/data/drvapi_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -cubin -arch=sm_90 -o $@ $<
# cuLink's inputs in drvapi13: drvapi_kernels.cu as a relocatable cubin, and
# a PTX that calls into it.
TEST_DATA += $(TST)/data/drvapi_kernels_rdc.cubin $(TST)/data/link_extra.ptx
$(TST)/data/drvapi_kernels_rdc.cubin: tests/data/drvapi_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -cubin -rdc=true -arch=sm_90 -o $@ $<
$(TST)/data/link_extra.ptx: tests/data/link_extra.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -ptx -rdc=true -arch=compute_90 -o $@ $<
# A cuBLAS handle's start-up, for driver_exptab's trace of the private tables.
TEST_DATA += $(TST)/data/exptab_cublas
$(TST)/data/exptab_cublas: tests/data/exptab_cublas.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS_STATIC) -o $@ $< -lcublas
# cuFFT's plan and transform, for driver_libs.
TEST_DATA += $(TST)/data/libs_cufft
$(TST)/data/libs_cufft: tests/data/libs_cufft.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS_STATIC) -o $@ $< -lcufft
# The same with -cudart shared, run with NVIDIA's libcudart.so.13 over ours.
TEST_DATA += $(TST)/data/libs_cufft_shared
$(TST)/data/libs_cufft_shared: tests/data/libs_cufft.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS) -o $@ $< -lcufft

# tests/cuda/libs/libs_sweep.cu: NVIDIA's libraries over shapes and routines,
# built as a user would (nvcc's default static runtime), for tests/e2e/libs_sweep.sh.
TEST_DATA += $(TST)/cuda/libs_sweep
$(TST)/cuda/libs_sweep: tests/cuda/libs/libs_sweep.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS_STATIC) -o $@ $< -lcublasLt -lcublas -lcusparse -lcusolver -lcurand -lcufft -lcudnn
# tests/cuda/rtmatrix.c: NVIDIA's libcudart.so.12/.13 of each release, opened
# by name, with simdrv_kernels.fatbin registered as nvcc's host code does
# (tests/e2e/runtime_matrix.sh).
TEST_DATA += $(TST)/cuda/rtmatrix
$(TST)/cuda/rtmatrix: tests/cuda/rtmatrix.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@ $(LDFLAGS_ALL) -ldl

$(DRVAPI): tests/cuda/drvapi.c tests/cuda/drvcheck.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@ $(LDFLAGS_ALL) -L$(CUDA_HOME)/lib64/stubs -lcuda -ldl
# tests/cuda/drvapi13.c: CUDA 13's context calls, launch attributes, managed
# memory attachment and virtual memory management, over the same kernels.
DRVAPI13 := $(TST)/cuda/drvapi13
$(DRVAPI13): tests/cuda/drvapi13.c tests/cuda/drvcheck.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@ $(LDFLAGS_ALL) -L$(CUDA_HOME)/lib64/stubs -lcuda -ldl

TEST_TOOLS := $(patsubst tests/tools/%.c,$(TST)/tools/%,$(TEST_TOOLS_SRC))
BENCH_SRC := $(wildcard tools/bench/*.c)
BENCH_BINS := $(patsubst tools/bench/%.c,$(BIN)/%,$(BENCH_SRC))
# The empty kernel xgpu-bench-api launches through each frontend.
BENCH_FATBIN := $(BUILD)/bench/null_kernel.fatbin

# Xen's service libraries (libxen-dev): xenstore, grants and event channels,
# used by xgpud and by the frontend library in a guest.
XEN_LIBS := $(shell pkg-config --libs xenstore xengnttab xenevtchn 2>/dev/null || echo -lxenstore -lxengnttab -lxenevtchn)
LIBS_COMMON := -lzstd -llz4 -ldl -lrt $(XEN_LIBS)
# libxenctrl: the `xen` hypervisor schedule source (weights, caps, VCPUs).
XENCTRL_LIBS := $(shell pkg-config --libs xencontrol 2>/dev/null || echo -lxenctrl)
# The `xentrace` source maps Xen's trace buffers.
XENCTRL_LIBS += $(shell pkg-config --libs xenforeignmemory 2>/dev/null || echo -lxenforeignmemory)
# libxlutil is xl's config parser (xgpud --config; Debian libxen-dev). Its
# pkg-config name is xlutil; -lxlutil is what that says on Debian 12.
XLUTIL_LIBS := $(shell pkg-config --libs xlutil 2>/dev/null || echo -lxlutil)
# libxenforeignmemory: maps the patched scheduler's export (the `xenpatch` source).
XENFMEM_LIBS := $(shell pkg-config --libs xenforeignmemory 2>/dev/null || echo -lxenforeignmemory)
LIBS_DAEMON := -ljansson $(XLUTIL_LIBS) $(XENCTRL_LIBS) $(XENFMEM_LIBS) $(LIBS_COMMON) -lm

.PHONY: all deps test test-frameworks unit demo bench bench-compare experiment experiment-xen clean format tests-build gpu-validate gpu-validate-build

all: $(DEPS_STAMP) $(CUDADRV) $(CUDART) $(NVML) $(SIMDRV) $(XGPUD) $(EXECUTOR) $(XLGPU) $(XENSTUB) $(SCHEDEXP) $(WORKLOAD_SIMK) $(WORKLOAD_BINS) $(BENCH_BINS) $(BENCH_FATBIN)

deps $(DEPS_STAMP): tools/install-deps.sh
	@tools/install-deps.sh
	@mkdir -p build && touch $(DEPS_STAMP)

# ---- compile -------------------------------------------------------------
$(OBJ)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

# The PTX interpreter's lane loops (ptx_exec.c's fast forms) want the
# vectoriser, which -O2 runs only where it needs no run-time alias checks.
ifneq ($(SAN),1)
$(OBJ)/backend/simdrv/ptx_exec.o: ALL_CFLAGS += -O3
endif

# xenctrl.h pulls in Xen's public headers, which refuse strict ISO C
# (anonymous unions); only the `xen` schedule source includes it.
$(OBJ)/backend/schedsrc/hypsrc_xen.o: ALL_CFLAGS += -std=gnu11
$(OBJ)/xen-sched-patch/reader.o: ALL_CFLAGS += -std=gnu11
$(OBJ)/backend/schedsrc/hypsrc_xentrace.o: ALL_CFLAGS += -std=gnu11
# Both frontends include the channel client's headers. The runtime calls
# what libcuda.so.1 exports beside the client (allocs.h, mempool.h,
# copy2d.h in frontend/driver/); the driver links the runtime's error
# descriptions and launch-configuration check (errors.c, devprop.c).
$(call obj,$(RUNTIME_SRC)): ALL_CFLAGS += -Ifrontend/channel -Ifrontend/driver
$(call obj,$(DRIVER_SRC)): ALL_CFLAGS += -Ifrontend/channel -Ifrontend/runtime

$(COMMON_A): $(call obj,$(COMMON_SRC))
$(FRONTEND_A): $(call obj,$(FRONTEND_SRC))
$(RUNTIME_A): $(call obj,$(RUNTIME_SRC))
$(DRIVER_A): $(call obj,$(DRIVER_SRC))
$(BACKEND_A): $(call obj,$(BACKEND_SRC))
$(EXECUTOR_A): $(call obj,$(EXECUTOR_SRC))
$(SIMDRV_A): $(call obj,$(SIMDRV_SRC))
$(XENSTUB_A): $(call obj,$(XENSTUB_SRC))
$(COMMON_A) $(FRONTEND_A) $(RUNTIME_A) $(DRIVER_A) $(BACKEND_A) $(EXECUTOR_A) $(SIMDRV_A) $(XENSTUB_A):
	@mkdir -p $(dir $@)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# ---- products ------------------------------------------------------------
# Every function NVIDIA's libcudart.so.13 exports and the frontend does not
# implement becomes a stub returning cudaErrorNotSupported (and telling the
# daemon), so any program linked against the real library loads against ours.
UNSUPPORTED_C := $(OBJ)/gen/unsupported.c
$(UNSUPPORTED_C): frontend/runtime/cudart13.symbols frontend/runtime/cudart13.nonerror tools/gen-unsupported.sh $(FRONTEND_A)
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)
	$(Q)tools/gen-unsupported.sh $@ frontend/runtime/cudart13.symbols $(FRONTEND_A)

$(OBJ)/gen/unsupported.o: $(UNSUPPORTED_C)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Ifrontend/runtime -c $< -o $@

# libcudart.so.13 takes the channel client from our libcuda.so.1 (found
# beside it: RUNPATH $ORIGIN), so both APIs in one process share it.
$(CUDART): $(RUNTIME_A) $(COMMON_A) $(OBJ)/gen/unsupported.o frontend/runtime/libcudart.map $(CUDADRV)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libcudart.so.13 -Wl,--version-script=frontend/runtime/libcudart.map \
		-Wl,--whole-archive $(RUNTIME_A) -Wl,--no-whole-archive $(OBJ)/gen/unsupported.o $(COMMON_A) \
		$(CUDADRV) -Wl,-rpath,'$$ORIGIN' -Wl,--no-undefined -o $@ $(LDFLAGS_ALL) $(LIBS_COMMON)
	ln -sf libcudart.so.13 $(LIB)/libcudart.so

# libcuda.so.1: every entry point of NVIDIA's (frontend/driver/cuda13.symbols);
# the ones not implemented are generated stubs, and cuGetProcAddress answers
# from a table generated out of cuda13.procs.
CUDA_STUBS_C := $(OBJ)/gen/cuda_stubs.c
$(CUDA_STUBS_C): frontend/driver/cuda13.symbols frontend/driver/cuda13.procs tools/gen-cuda-stubs.sh $(DRIVER_A)
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)
	$(Q)tools/gen-cuda-stubs.sh $@ frontend/driver/cuda13.symbols frontend/driver/cuda13.procs $(DRIVER_A)

$(OBJ)/gen/cuda_stubs.o: $(CUDA_STUBS_C)
	$(call say,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Ifrontend/driver -c $< -o $@

# errors.o: the error descriptions cuGetErrorString shares with the runtime;
# devprop.o: the launch-configuration check both frontends make.
$(CUDADRV): $(DRIVER_A) $(call obj,$(CLIENT_SRC)) $(OBJ)/frontend/runtime/errors.o $(OBJ)/frontend/runtime/devprop.o $(COMMON_A) $(OBJ)/gen/cuda_stubs.o \
		frontend/driver/libcuda.map
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,--version-script=frontend/driver/libcuda.map \
		-Wl,--whole-archive $(DRIVER_A) -Wl,--no-whole-archive $(call obj,$(CLIENT_SRC)) $(OBJ)/frontend/runtime/errors.o \
		$(OBJ)/frontend/runtime/devprop.o $(OBJ)/gen/cuda_stubs.o $(COMMON_A) -Wl,--no-undefined -o $@ $(LDFLAGS_ALL) $(LIBS_COMMON)

# libnvidia-ml.so.1: what CUDA clients ask NVML before using a device (XLA
# will not start without it), answered through our libcuda.so.1 beside it.
$(NVML): frontend/nvml/nvml.c frontend/nvml/nvml.h $(CUDADRV)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fvisibility=hidden -shared -Wl,-soname,libnvidia-ml.so.1 frontend/nvml/nvml.c \
		$(CUDADRV) -Wl,-rpath,'$$ORIGIN' -Wl,--no-undefined -o $@ $(LDFLAGS_ALL)

# Outside sanitized builds (whose runtime resolves at load), every symbol the
# simulated driver uses must resolve at link time: an executor that cannot
# load it fails every domain.
SIMDRV_DEFS := $(if $(filter 1,$(SAN)),,-Wl,-z,defs)
$(SIMDRV): $(SIMDRV_A) $(COMMON_A) backend/simdrv/simdrv.map
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libxgpu-simdrv.so -Wl,--version-script=backend/simdrv/simdrv.map \
		-Wl,--whole-archive $(SIMDRV_A) -Wl,--no-whole-archive $(COMMON_A) \
		-o $@ $(LDFLAGS_ALL) $(LIBS_COMMON) -lm $(SIMDRV_DEFS)

$(XGPUD): $(call obj,backend/xgpud/xgpud.c) $(BACKEND_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $^ -o $@ $(LDFLAGS_ALL) $(LIBS_DAEMON)

# LIBS_COMMON for the fatbin parser's decompressors and dlopen.
$(EXECUTOR): $(call obj,backend/executor/main.c backend/executor/sandbox.c) $(EXECUTOR_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $^ -o $@ $(LDFLAGS_ALL) $(LIBS_COMMON) -lseccomp

# xl-gpu checks policy names against the backend's registry (Xen mode).
$(XLGPU): $(call obj,$(XLGPU_SRC)) $(BACKEND_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $^ -o $@ $(LDFLAGS_ALL) $(LIBS_DAEMON)

$(SCHEDEXP): $(call obj,tools/schedexp/xgpu-schedexp.c) $(BACKEND_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $^ -o $@ $(LDFLAGS_ALL) $(LIBS_DAEMON)

$(XENSTUB): $(call obj,tools/xenstub/main.c) $(XENSTUB_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $^ -o $@ $(LDFLAGS_ALL) $(LIBS_COMMON)

$(LIB)/simkernels/%.so: tools/workloads/%/simkernels.c backend/simdrv/simkernel.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared $< -o $@ $(LDFLAGS_ALL) -lm

# nvcc needs no GPU to compile; the binaries link against libcudart.so.13 by
# SONAME, so LD_LIBRARY_PATH=build/lib makes them run through xgpu.
define workload_rule
$(BIN)/$(1): $(wildcard tools/workloads/$(1)/*.cu) $(wildcard tools/workloads/$(1)/*.h) $(WORKLOAD_H) | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(call say,NVCC,$$@)
	$$(Q)$$(NVCC) $$(NVCCFLAGS) -o $$@ $(wildcard tools/workloads/$(1)/*.cu)
$(BIN)/static/$(1): $(wildcard tools/workloads/$(1)/*.cu) $(wildcard tools/workloads/$(1)/*.h) $(WORKLOAD_H) | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(call say,NVCC,$$@)
	$$(Q)$$(NVCC) $$(NVCCFLAGS_STATIC) -o $$@ $(wildcard tools/workloads/$(1)/*.cu)
$(BIN)/rdc/$(1): $(wildcard tools/workloads/$(1)/*.cu) $(wildcard tools/workloads/$(1)/*.h) $(WORKLOAD_H) | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(call say,NVCC,$$@)
	$$(Q)$$(NVCC) $$(NVCCFLAGS_RDC) -o $$@ $(wildcard tools/workloads/$(1)/*.cu)
endef
$(foreach w,$(WORKLOADS),$(eval $(call workload_rule,$(w))))

$(BIN)/rdc-shared/vectorAdd: tools/workloads/vectorAdd/vectorAdd.cu $(WORKLOAD_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS) -rdc=true -o $@ $<

# The PTX interpreter's bench links the simulated driver's archive, whose
# interpreter symbols are hidden from its shared library.
BENCH_LIBS_xgpu-ptx-bench := $(SIMDRV_A)
define bench_rule
$(BIN)/$(1): tools/bench/$(1).c $(BENCH_LIBS_$(1)) $(FRONTEND_A) $(BACKEND_A) $(COMMON_A)
	@mkdir -p $$(dir $$@)
	$$(call say,LD,$$@)
	$$(Q)$$(CC) $$(ALL_CFLAGS) -Ifrontend/channel $$< $(BENCH_LIBS_$(1)) $(FRONTEND_A) $(BACKEND_A) $(COMMON_A) -o $$@ $$(LDFLAGS_ALL) $$(LIBS_DAEMON)
endef
$(foreach b,$(patsubst tools/bench/%.c,%,$(BENCH_SRC)),$(eval $(call bench_rule,$(b))))

$(BENCH_FATBIN): tools/bench/null_kernel.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(CUDA_ARCH) -o $@ $<

# ---- tests ---------------------------------------------------------------
# Each unit test links libxgpu-common.a plus the archives named in
# TEST_LIBS_<test name> (set below, before the rules are generated).
TEST_LIBS_test_simdrv := $(SIMDRV_A)
TEST_LIBS_test_ptx := $(SIMDRV_A)
TEST_LIBS_test_ptx_ext := $(SIMDRV_A)
TEST_LIBS_test_ptx_call := $(SIMDRV_A)
TEST_LIBS_test_simkernels :=
# Frontend pieces tested on their own, without the whole (changing) frontend archive.
TEST_LIBS_test_errors := $(OBJ)/frontend/runtime/errors.o
TEST_LIBS_test_md2 := $(OBJ)/frontend/driver/md2.o
TEST_LIBS_test_devprop := $(OBJ)/frontend/runtime/devprop.o
# The scheduler core and every policy, driven in virtual time.
TEST_LIBS_test_sched := $(OBJ)/backend/xgpud/scheduler.o $(call obj,$(wildcard policies/*.c)) \
	$(OBJ)/backend/schedsrc/hypsrc.o $(OBJ)/backend/schedsrc/hypsrc_sim.o $(OBJ)/backend/schedsrc/hypsrc_local.o $(OBJ)/backend/schedsrc/oncpu.o $(OBJ)/backend/schedsrc/hypsrc_xen.o \
	$(OBJ)/backend/schedsrc/hypsrc_xenpatch.o $(OBJ)/xen-sched-patch/reader.o \
	$(OBJ)/backend/schedsrc/hypsrc_xentrace.o $(OBJ)/backend/schedsrc/xentrace_parse.o
TEST_LIBS_test_config := $(OBJ)/backend/xgpud/config.o
TEST_LIBS_test_hypsrc := $(BACKEND_A)
TEST_LIBS_test_xenstub := $(XENSTUB_A)
# The real xl-gpu binary in Xen mode against the in-process stub.
TEST_LIBS_test_xlgpu_xen := $(XENSTUB_A)
$(TST)/test_xlgpu_xen: | $(XLGPU)
# The `xen` source against a fake hypervisor (and the real open, failing).
TEST_LIBS_test_hypsrc_xen := $(OBJ)/backend/schedsrc/hypsrc_xen.o $(OBJ)/backend/schedsrc/hypsrc.o $(OBJ)/backend/schedsrc/hypsrc_sim.o \
	$(OBJ)/backend/schedsrc/hypsrc_local.o $(OBJ)/backend/schedsrc/oncpu.o $(OBJ)/backend/schedsrc/hypsrc_xenpatch.o $(OBJ)/xen-sched-patch/reader.o \
	$(OBJ)/backend/schedsrc/hypsrc_xentrace.o $(OBJ)/backend/schedsrc/xentrace_parse.o
# The export reader and the `xenpatch` source over a test writer's pages, and
# augc/cosched driven over them in virtual time.
TEST_LIBS_test_schedexp := $(OBJ)/backend/xgpud/scheduler.o $(call obj,$(wildcard policies/*.c)) \
	$(OBJ)/backend/schedsrc/hypsrc.o $(OBJ)/backend/schedsrc/hypsrc_sim.o $(OBJ)/backend/schedsrc/hypsrc_local.o $(OBJ)/backend/schedsrc/oncpu.o $(OBJ)/backend/schedsrc/hypsrc_xen.o \
	$(OBJ)/backend/schedsrc/hypsrc_xenpatch.o $(OBJ)/xen-sched-patch/reader.o \
	$(OBJ)/backend/schedsrc/hypsrc_xentrace.o $(OBJ)/backend/schedsrc/xentrace_parse.o
# The `xentrace` source: record parser, ring draining, state machine, refresh
# over fake rings and recorded buffers (tests/data/xentrace/).
TEST_LIBS_test_xentrace := $(OBJ)/backend/schedsrc/xentrace_parse.o $(OBJ)/backend/schedsrc/hypsrc_xentrace.o \
	$(OBJ)/backend/schedsrc/hypsrc_xen.o $(OBJ)/backend/schedsrc/hypsrc.o $(OBJ)/backend/schedsrc/hypsrc_sim.o $(OBJ)/backend/schedsrc/hypsrc_local.o $(OBJ)/backend/schedsrc/oncpu.o \
	$(OBJ)/backend/schedsrc/hypsrc_xenpatch.o $(OBJ)/xen-sched-patch/reader.o
# The per-domain histograms (service time, queue wait).
TEST_LIBS_test_stats :=
# The executor's per-call clock (TSC or CLOCK_MONOTONIC).
TEST_LIBS_test_fastclock :=
# xgpud's Xen transport: a real struct xgpud (sim executor) over the in-process stub.
TEST_LIBS_test_xenbus := $(BACKEND_A) $(XENSTUB_A)
define unit_rule
$(TST)/$(1): tests/unit/$(1).c $$(TEST_LIBS_$(1)) $(COMMON_A)
	@mkdir -p $$(dir $$@)
	$$(call say,LD,$$@)
	$$(Q)$$(CC) $$(ALL_CFLAGS) -Itests/unit $$< $$(TEST_LIBS_$(1)) $(COMMON_A) \
		-o $$@ $$(LDFLAGS_ALL) -lcmocka $$(LIBS_DAEMON) -lm
endef
$(foreach t,$(patsubst tests/unit/%.c,%,$(UNIT_SRC)),$(eval $(call unit_rule,$(t))))

$(TST)/cuda/%: tests/cuda/%.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS) -o $@ $<

# The same programs with every fatbin entry compressed, so the frontend's
# parameter layouts are also read from compressed cubins.
$(TST)/cuda/%-compressed: tests/cuda/%.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS) -Xfatbin -compress-all -o $@ $<

$(TST)/cuda/static/%: tests/cuda/%.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS_STATIC) -o $@ $<

$(TST)/cuda/rdc/%: tests/cuda/%.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS_RDC) -o $@ $<

$(TST)/simkernels/%.so: tests/cuda/%_simk.c backend/simdrv/simkernel.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared $< -o $@ $(LDFLAGS_ALL) -lm
$(TST)/simkernels/%.so: tests/samples/%_simk.c backend/simdrv/simkernel.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared $< -o $@ $(LDFLAGS_ALL) -lm

$(TST)/samples/%: tests/samples/%.cu tests/samples/sample.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS) -o $@ $<

$(TST)/samples/static/%: tests/samples/%.cu tests/samples/sample.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS_STATIC) -o $@ $<

$(TST)/samples/drvsample: tests/samples/drvsample.c tests/cuda/drvcheck.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@ $(LDFLAGS_ALL) -L$(CUDA_HOME)/lib64/stubs -lcuda -ldl

$(TST)/data/drvsample_kernels.fatbin: tests/data/drvsample_kernels.cu | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(SIMDRV_TEST_ARCH) -o $@ $<

# NVML's clients dlopen it; this one also asks libcuda.so.1 to compare.
$(TST)/tools/nvml_check: tests/tools/nvml_check.c frontend/nvml/nvml.h $(CUDADRV) $(NVML)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(CUDADRV) -o $@ $(LDFLAGS_ALL) -ldl

$(TST)/tools/%: tests/tools/%.c $(FRONTEND_A) $(BACKEND_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Ifrontend/channel $< $(FRONTEND_A) $(BACKEND_A) $(COMMON_A) -o $@ $(LDFLAGS_ALL) $(LIBS_DAEMON)

include tests/fuzz/fuzz.mk
include tests/samples/graphs.mk

# Manual pages: docs/man/*.scd (scdoc sources) -> $(BUILD)/man/ (roff);
# `man -l build/man/xgpud.8` reads one. tests/e2e/manpages.sh checks them.
MAN_SRC := $(wildcard docs/man/*.scd)
MAN_PAGES := $(patsubst docs/man/%.scd,$(BUILD)/man/%,$(MAN_SRC))
$(BUILD)/man/%: docs/man/%.scd
	@mkdir -p $(dir $@)
	$(call say,SCDOC,$@)
	$(Q)scdoc <$< >$@.tmp && mv $@.tmp $@
man: $(MAN_PAGES)
.PHONY: man

# The Debian packages (debian/, debhelper): xgpu-daemon, xgpu-guest, xgpu-doc,
# built from a copy of the tracked and new untracked files in build/deb/
# (dpkg-buildpackage writes into the parent directory and cleans its tree);
# the .debs land in build/deb/, lintian's verdict in build/deb/lintian.txt:
# any error or warning not overridden (debian/*.lintian-overrides) fails.
# Their tools come from install-deps.sh --packaging, not `make test`'s set.
deb:
	@tools/install-deps.sh --packaging
	rm -rf build/deb && mkdir -p build/deb/xgpu
	git ls-files -z --cached --others --exclude-standard | \
		(cd "$$(git rev-parse --show-toplevel)" && tar --null --ignore-failed-read -T - -cf -) | \
		tar -xf - -C build/deb/xgpu
	cd build/deb/xgpu && CUDA_HOME="$(CUDA_HOME)" dpkg-buildpackage -us -uc -b
	lintian --display-info --fail-on error,warning build/deb/xgpu_*.changes \
		>build/deb/lintian.txt 2>&1 || { cat build/deb/lintian.txt; exit 1; }
	@cat build/deb/lintian.txt
	@ls build/deb/*.deb

# Installs the packages in a throwaway Debian root (debootstrap), starts xgpud
# from the installed paths, runs a bundled workload through xgpu-guest's
# libraries and stops it: tests/pkg/run.sh. Slow, needs root; not in `make test`.
deb-test: deb $(BIN)/vectorAdd $(BIN)/static/vectorAdd
	@tests/pkg/run.sh
.PHONY: deb deb-test

tests-build: all man $(WORKLOAD_BINS_STATIC) $(UNIT_BINS) $(TEST_CU_BINS) $(SAMPLE_BINS) $(DRVAPI) $(DRVAPI13) $(TEST_SIMK) $(TEST_TOOLS) $(TEST_DATA) fuzz-build

# The README's test command: a sanitized build of everything, then every test.
test:
	@$(MAKE) --no-print-directory SAN=1 tests-build
	@tests/run.sh build/san

# The frameworks over xgpu (tests/e2e/frameworks.sh: PyTorch, CuPy,
# numba-cuda), their virtualenv made first when missing or stale
# (tools/install-deps.sh --frameworks: some 4.2 GB from PyPI). `make test`
# runs the same test when that virtualenv exists, and skips it otherwise.
test-frameworks:
	@tools/install-deps.sh --frameworks
	@$(MAKE) --no-print-directory SAN=1 tests-build
	@tests/run.sh build/san frameworks

demo: all
	@tools/demo.sh $(BUILD)

bench: all $(TST)/tools/tcprtt
	@tools/bench/run.sh $(BUILD)
	@tools/bench/remote.sh $(BUILD) $(TST)/tools/tcprtt

# This design against an older revision (OLD=REV), both measured in one run
# (tools/bench/compare.sh); docs/results/bench-compare.md.
bench-compare: all $(TST)/cuda/guestload $(TST)/simkernels/guestload.so
	@tools/bench/compare.sh $(BUILD) $(OLD)

# Pegasus's evaluation in local mode (tools/experiment/run.sh); EXP_ARGS=--quick
# for one short run per policy.
experiment: all $(TST)/cuda/guestload $(TST)/simkernels/guestload.so
	@tools/experiment/run.sh $(EXP_ARGS) $(BUILD)

# The coupled loop on the patched Xen credit scheduler under QEMU, four PV
# domUs, xgpud --hyp-source xenpatch (tools/experiment/xen.sh); not in make test.
experiment-xen: all $(TST)/cuda/guestload $(TST)/simkernels/guestload.so
	@tools/experiment/xen.sh $(BUILD)

# GPU validation: the workloads, call latency, copy bandwidth, sharing and the
# CUDA-semantics tests natively and through xgpu, on a GPU machine (simulated
# without one); tables and logs in build/gpu-validate/. Not part of `make test`.
GPUVAL_BW := $(BIN)/gpuval-bandwidth
$(GPUVAL_BW): tools/gpu-validate/bandwidth.cu $(WORKLOAD_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS) -o $@ $<

# cuBLAS and cuFFT with their results judged, nvcc's default static runtime.
GPUVAL_LIBS := $(BIN)/gpuval-libs
$(GPUVAL_LIBS): tools/gpu-validate/libs.cu $(WORKLOAD_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS_STATIC) -o $@ $< -lcublas -lcufft

GPUVAL_PROGS := $(GPUVAL_BW) $(GPUVAL_LIBS) $(TEST_CU_BINS) $(TEST_SIMK) $(WORKLOAD_BINS_STATIC) $(SAMPLE_BINS) \
	$(TEST_DATA) $(GRAPHS_DRV) $(GRAPHS_FATBIN)
gpu-validate-build: all $(GPUVAL_PROGS)
gpu-validate: gpu-validate-build
	@CUDA_HOME="$(CUDA_HOME)" GPU_VALIDATE_NVCCFLAGS="$(NVCCFLAGS)" tools/gpu-validate/run.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')

clean:
	rm -rf build

# Only the real-Xen tests (Xen 4.17 + PV dom0/domUs under QEMU, see
# tools/xen-testbed/README.md; and the patched hypervisor of
# xen-sched-patch/); `make test` runs them too.
.PHONY: xen-test
xen-test:
	@$(MAKE) --no-print-directory SAN=1 tests-build
	@tests/run.sh build/san xen_real
	@tests/run.sh build/san xen_sched_patch
