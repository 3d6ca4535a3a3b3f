#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The driver-API frontend end to end: a program that uses only the driver API
# (tests/cuda/drvapi.c, linked against the toolkit's stub libcuda.so) runs
# unchanged against xgpu's libcuda.so.1 and a real daemon (sim executor):
# cuInit, device queries, cuGetProcAddress, a fatbin module launched with
# kernelParams and a cubin library launched with extra, all results
# verified; and a runtime program mixing in driver calls on the same memory
# and streams. An unimplemented entry point answers CUDA_ERROR_NOT_SUPPORTED and
# is reported by name, once on the program's stderr and in the daemon's log.
. "$(dirname "$0")/lib.bash"
start_xgpud

data=$B/tests/data
out=$(run_cuda "$B/tests/cuda/drvapi" "$data/drvapi_kernels.fatbin" "$data/drvapi_kernels.cubin" 2>"$T/drvapi.err") || {
	echo "$out"
	cat "$T/drvapi.err"
	fail "drvapi failed"
}
echo "$out"
check_clean "$T/drvapi.err" drvapi
grep -q "^drvapi: OK" <<<"$out" || fail "drvapi did not verify its results"

# Reported by name, and once although called twice.
msg="cuGraphicsUnregisterResource is not supported by xgpu; it returns CUDA_ERROR_NOT_SUPPORTED"
[ "$(grep -c "$msg" "$T/drvapi.err")" -eq 1 ] || {
	cat "$T/drvapi.err"
	fail "the program's stderr does not name cuGraphicsUnregisterResource exactly once"
}
grep -q "called cuGraphicsUnregisterResource, which xgpu does not support" "$XGPUD_LOG" ||
	fail "the daemon log does not name the unsupported driver call"

# A private table xgpu does not know, an integrity-check version of no
# release xgpu knows (frontend/driver/exptab.c's runtime_releases) and an
# unimplemented slot are each refused with a message that names them.
grep -q "private table 01234567-89ab-cdef-fedc-ba9876543210 is not one xgpu offers" "$T/drvapi.err" ||
	fail "an unknown export table was not named"
for v in "13100 (CUDA 13.10, variant 0)" "13003 (CUDA 13.0, variant 3)" "11080 (CUDA 11.8, variant 0)"; do
	grep -q "integrity check version $v, which xgpu does not know" "$T/drvapi.err" ||
		fail "the unknown integrity-check version $v was not named"
	grep -q "integrity check version ${v%% *} of private table INTEGRITY_CHECK, which xgpu does not support" \
		"$XGPUD_LOG" || fail "the daemon log does not name the unknown integrity-check version ${v%% *}"
done
grep -q "slot 3 of the driver's private table CUDART_INTERFACE (6bd5fb6c-5bf4-e74a-8987-d93912fd9df9) is not implemented" "$T/drvapi.err" ||
	fail "an unimplemented export-table slot was not named"

# A -cudart shared program that also calls the driver API (through
# cudaGetDriverEntryPointByVersion): one channel, one handle space.
out=$(run_cuda "$B/tests/cuda/mixed" 2>&1) || {
	echo "$out"
	fail "mixed failed"
}
echo "$out"
grep -q "^RESULT workload=mixed verified=yes" <<<"$out" || fail "mixed did not verify its results"

# It ran through the daemon, and left nothing behind.
dom=uid-$(id -u)
[ "$(dom_stat "$dom" calls)" -gt 20 ] || fail "too few calls recorded for the driver-API program"
wait_for 10 dom_eq "$dom" channels 0 || fail "channel still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after the program exited"
stop_xgpud

# xgpud must never take our own libcuda.so.1 for NVIDIA's driver: that
# would loop every call back into xgpu.
if out=$("$B/bin/xgpud" --foreground --executor cuda --cuda-driver "$B/lib/libcuda.so.1" \
	--socket "$T/self.sock" 2>&1); then
	fail "xgpud started with xgpu's libcuda.so.1 as its driver"
fi
grep -q "is xgpu's guest frontend, not NVIDIA's driver" <<<"$out" ||
	fail "xgpud did not say why it refused xgpu's libcuda.so.1: $out"
