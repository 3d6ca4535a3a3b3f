# SPDX-License-Identifier: Apache-2.0
# graphs.mk - the graph samples (issue 17), included by the Makefile:
# graphs.cu, graphs_capture.cu and graphs_cond.cu built with -cudart shared
# and with nvcc's default static runtime (which reaches the daemon through our
# libcuda.so.1), graphs_drv.c against the toolkit's stub libcuda.so with graphs.cu's device
# code as a fatbin (the simulated driver computes the kernels from their
# PTX). Run by tests/e2e/samples_graphs.sh.
GRAPHS_SAMPLES := graphs graphs_capture graphs_cond
GRAPHS_SHARED := $(patsubst %,$(TST)/samples/%,$(GRAPHS_SAMPLES))
GRAPHS_STATIC := $(patsubst %,$(TST)/samples/static/%,$(GRAPHS_SAMPLES))
GRAPHS_DRV := $(TST)/samples/graphs_drv
GRAPHS_FATBIN := $(TST)/data/graphs.fatbin

$(GRAPHS_SHARED): $(TST)/samples/%: tests/samples/%.cu tests/samples/graphs_kernels.cuh tests/samples/sample.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS) -o $@ $<

$(GRAPHS_STATIC): $(TST)/samples/static/%: tests/samples/%.cu tests/samples/graphs_kernels.cuh tests/samples/sample.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) $(NVCCFLAGS_STATIC) -o $@ $<

$(GRAPHS_FATBIN): tests/samples/graphs.cu tests/samples/graphs_kernels.cuh | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)
	$(Q)$(NVCC) -fatbin $(SIMDRV_TEST_ARCH) -o $@ $<

$(GRAPHS_DRV): tests/samples/graphs_drv.c tests/cuda/drvcheck.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@ $(LDFLAGS_ALL) -L$(CUDA_HOME)/lib64/stubs -lcuda -ldl

tests-build: $(GRAPHS_SHARED) $(GRAPHS_STATIC) $(GRAPHS_DRV) $(GRAPHS_FATBIN)
