#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/samples/: one small sample-style program per feature (host callbacks,
# the small calls, cooperative launches, large kernel parameters), each built
# with -cudart shared (through xgpu's libcudart.so.13) and with nvcc's
# default static runtime (NVIDIA's runtime over xgpu's libcuda.so.1), plus
# drvsample, the driver API's forms. Every program verifies its own results
# (on the simulated driver the interpreter computes the kernels from their
# PTX; tests/samples/*_simk.c only give the spinning kernels their modeled
# time) and both builds must compute the same checksum.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/samples.bash"
start_xgpud

for name in trivial callbacks cooperative largeparam; do
	run_both_builds "$name"
done
run_sample "$S/drvsample" drvsample "$B/tests/data/drvsample_kernels.fatbin"

# The refusals were the daemon's, and said why; nothing else was refused as
# unsupported.
grep -q "cooperative launch refused: .* blocks, at most .* fit on the device at once" "$XGPUD_LOG" ||
	fail "the daemon did not log the too-large cooperative launch"
no_unsupported_calls
nothing_left_held
stop_xgpud

# A kernel that faults with callbacks behind it: the stream callback gets the
# error as its status, the host function is not called. Without gating, so
# that enqueuing does not wait for the faulting kernel to have run.
start_xgpud --policy none
for prog in "$S/callbacks" "$S/static/callbacks"; do
	run_sample "$prog" callbacks-fault fault
done
grep -q "its context failed with CUDA_ERROR_ILLEGAL_ADDRESS" "$XGPUD_LOG" ||
	fail "the daemon did not see the fault"
stop_xgpud
