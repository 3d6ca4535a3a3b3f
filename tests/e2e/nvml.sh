#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# xgpu's libnvidia-ml.so.1 (frontend/nvml/): XLA will not use a GPU unless
# nvmlInit_v2 succeeds, and finds its devices by the PCI bus id libcuda.so.1
# gives. tests/tools/nvml_check dlopens it as NVML's clients do and checks
# each answer against libcuda.so.1's for the same device (name, UUID, compute
# capability, bus id both ways, the domain's memory with 64 MiB held) and the
# refusals (before init, forged and NULL handles, short buffers, unknown bus
# ids). Without a daemon to answer, nvmlInit_v2 says the driver is not
# loaded (9), not success.
. "$(dirname "$0")/lib.bash"

export LD_LIBRARY_PATH=$B/lib
out=$(XGPU_SOCKET=$T/nobody.sock "$B/tests/tools/nvml_check" init 2>"$T/nodaemon.err") ||
	fail "nvml_check init failed: $(cat "$T/nodaemon.err")"
[ "$out" = 9 ] || fail "nvmlInit_v2 without xgpud returned $out, not NVML_ERROR_DRIVER_NOT_LOADED (9)"

start_xgpud
"$B/tests/tools/nvml_check" >"$T/nvml.out" 2>"$T/nvml.err" || {
	cat "$T/nvml.out" "$T/nvml.err"
	fail "nvml_check failed (above)"
}
check_clean "$T/nvml.err" nvml_check
note "$(cat "$T/nvml.out")"
stop_xgpud
