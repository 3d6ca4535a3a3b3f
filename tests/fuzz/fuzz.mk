# SPDX-License-Identifier: Apache-2.0
# fuzz.mk - libFuzzer harnesses (tests/fuzz/fuzz_*.c), included by the Makefile.
#
#   make fuzz-build              every harness into build/fuzz/bin/, seeds into build/fuzz/seeds/
#   make fuzz [FUZZ_SECONDS=60]  each harness for FUZZ_SECONDS; corpora kept in build/fuzz/corpus/
#
# Everything a harness links is compiled again with clang and
# -fsanitize=fuzzer-no-link,address,undefined into build/fuzz/obj/, so the
# coverage that guides the fuzzer reaches into the product code (and the
# simulated driver the dispatcher harness loads). `make test` runs every
# harness over its seeds and its kept regression inputs (e2e/fuzz_seeds).

FUZZ_CC ?= clang-14
FUZZ_BUILD := build/fuzz
FZ_OBJ := $(FUZZ_BUILD)/obj
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := $(CFLAGS_COMMON) -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link -DXGPU_FUZZ
FUZZ_HARNESS_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/bin/%,$(FUZZ_HARNESS_SRC))
FUZZ_COMMON_A := $(FUZZ_BUILD)/libfz-common.a
FUZZ_BACKEND_A := $(FUZZ_BUILD)/libfz-backend.a
FUZZ_EXECUTOR_A := $(FUZZ_BUILD)/libfz-executor.a
FUZZ_XENSTUB_A := $(FUZZ_BUILD)/libfz-xenstub.a
FUZZ_SIMDRV := $(FUZZ_BUILD)/lib/libxgpu-simdrv.so
FUZZ_MKSEEDS := $(FUZZ_BUILD)/bin/mkseeds
FUZZ_SEEDS_STAMP := $(FUZZ_BUILD)/seeds/.made

fzobj = $(patsubst %.c,$(FZ_OBJ)/%.o,$(1))

# Keep the harnesses' objects (make would delete them as intermediates).
.SECONDARY: $(call fzobj,$(FUZZ_HARNESS_SRC) tests/fuzz/mkseeds.c tests/fuzz/fzchan.c)

$(FZ_OBJ)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(FZ_OBJ) -name '*.d' 2>/dev/null)

$(FZ_OBJ)/backend/schedsrc/hypsrc_xen.o $(FZ_OBJ)/xen-sched-patch/reader.o \
$(FZ_OBJ)/backend/schedsrc/hypsrc_xentrace.o: FUZZ_CFLAGS += -std=gnu11

$(FUZZ_COMMON_A): $(call fzobj,$(COMMON_SRC))
$(FUZZ_BACKEND_A): $(call fzobj,$(BACKEND_SRC))
$(FUZZ_EXECUTOR_A): $(call fzobj,$(EXECUTOR_SRC))
$(FUZZ_XENSTUB_A): $(call fzobj,$(XENSTUB_SRC))
$(FUZZ_COMMON_A) $(FUZZ_BACKEND_A) $(FUZZ_EXECUTOR_A) $(FUZZ_XENSTUB_A):
	@mkdir -p $(dir $@)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# The simulated driver, instrumented too; it takes the sanitizer and
# coverage runtimes from the harness that loads it.
$(FUZZ_SIMDRV): $(call fzobj,$(SIMDRV_SRC)) $(FUZZ_COMMON_A) backend/simdrv/simdrv.map
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(FUZZ_CC) -shared -Wl,-soname,libxgpu-simdrv.so -Wl,--version-script=backend/simdrv/simdrv.map \
		$(call fzobj,$(SIMDRV_SRC)) $(FUZZ_COMMON_A) -o $@ -pthread $(LIBS_COMMON)

$(FUZZ_BUILD)/bin/%: $(FZ_OBJ)/tests/fuzz/%.o $(FUZZ_BACKEND_A) $(FUZZ_COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -Wl,--start-group $^ -Wl,--end-group -o $@ -pthread $(LIBS_DAEMON)

# The PTX interpreter, on its own.
$(FUZZ_BUILD)/bin/fuzz_ptx: $(call fzobj,backend/simdrv/ptx_parse.c backend/simdrv/ptx_exec.c backend/simdrv/ptx_call.c)

# xgpud's xenbus logic against the in-memory Xen, in-process; the channels
# it opens are served by executors it starts (xgpu-executor beside it,
# instrumented alike: the sanitizer runtime supplies the coverage hooks).
$(FUZZ_BUILD)/bin/fuzz_xenbus: $(FUZZ_XENSTUB_A) | $(FUZZ_BUILD)/bin/xgpu-executor
$(FUZZ_BUILD)/bin/xgpu-executor: $(call fzobj,backend/executor/main.c backend/executor/sandbox.c) $(FUZZ_EXECUTOR_A) $(FUZZ_COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -Wl,--start-group $^ -Wl,--end-group -o $@ -pthread \
		$(LIBS_COMMON) -lseccomp

# The dispatcher harnesses share an in-process executor and channel (fzchan.c).
$(FUZZ_BUILD)/bin/fuzz_dispatch $(FUZZ_BUILD)/bin/fuzz_drvimage: $(FZ_OBJ)/tests/fuzz/fzchan.o $(FUZZ_EXECUTOR_A)

# mkseeds writes the seeds that need the real structs (packet sequences,
# channel regions, schedule exports); the rest are the bundled test inputs.
$(FUZZ_MKSEEDS): $(FZ_OBJ)/tests/fuzz/mkseeds.o $(FUZZ_BACKEND_A) $(FUZZ_COMMON_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) $^ -o $@ -pthread $(LIBS_DAEMON)

$(FUZZ_SEEDS_STAMP): $(FUZZ_MKSEEDS) tests/fuzz/make-seeds.sh $(FUZZ_HARNESS_SRC) $(wildcard tests/fuzz/corpus/*/*) \
		$(TST)/data/simdrv_kernels.fatbin \
		$(TST)/data/simdrv_kernels_zstd.fatbin $(TST)/data/simdrv_kernels_lz4.fatbin \
		$(patsubst %,$(TST)/data/fatbin_%.fatbin,$(FATBIN_VARIANTS)) \
		$(patsubst %,$(TST)/data/globals_%.fatbin,$(GLOBALS_VARIANTS)) $(TST)/data/simdrv_kernels_ptx.fatbin \
		$(TST)/data/simdrv_kernels.cubin $(TST)/data/simdrv_kernels.ptx $(TST)/data/drvapi_kernels.fatbin \
		$(TST)/data/drvapi_kernels.cubin $(TST)/data/ptx_conformance.ptx
	$(call say,SEEDS,$(FUZZ_BUILD)/seeds)
	$(Q)tests/fuzz/make-seeds.sh $(FUZZ_BUILD) $(TST)/data
	@touch $@

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS) $(FUZZ_SIMDRV) $(FUZZ_SEEDS_STAMP)

fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_BUILD)
