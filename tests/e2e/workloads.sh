#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The bundled workloads and CUDA test programs, built with plain
# `nvcc -cudart shared`, run unchanged through the frontend against a real
# daemon (sim executor) and verify their results; afterwards the daemon's
# statistics show the calls and that nothing is left allocated.
. "$(dirname "$0")/lib.bash"
start_xgpud

run_ok() {
	local out
	out=$(run_cuda "$@" 2>&1) || { echo "$out"; fail "$* failed"; }
	echo "$out" | tail -n 3
	grep -q "^RESULT .*verified=yes" <<<"$out" || fail "$* did not verify its results"
}

run_ok "$B/bin/vectorAdd" -n 200000 -i 3
run_ok "$B/bin/BlackScholes" -n 200000 -i 4
run_ok "$B/bin/callLatency" -i 100
run_ok "$B/tests/cuda/userapp"
run_ok "$B/tests/cuda/userapp-compressed" -n 4096
run_ok "$B/tests/cuda/errors"
run_ok "$B/tests/cuda/errors-compressed"
run_ok "$B/tests/cuda/unsupported"
run_ok "$B/tests/cuda/threads"
# Pipelined (remote channels' default): asynchronous calls return once sent,
# a refused launch is reported by the next call that waits (errors checks
# both), and the results are the same.
run_ok env XGPU_PIPELINE=1 "$B/bin/vectorAdd" -n 200000 -i 3
run_ok env XGPU_PIPELINE=1 "$B/bin/BlackScholes" -n 200000 -i 4
run_ok env XGPU_PIPELINE=1 "$B/tests/cuda/errors"
run_ok env XGPU_PIPELINE=1 "$B/tests/cuda/threads"

dom=uid-$(id -u)
calls=$(dom_stat "$dom" calls)
note "domain $dom: $calls calls"
[ "$calls" -gt 100 ] || fail "only $calls calls recorded"
wait_for 10 dom_eq "$dom" channels 0 || fail "channels still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after every program exited"
[ "$(dom_stat "$dom" busy_ns)" -gt 0 ] || fail "no device busy time measured"
[ "$(dom_stat "$dom" h2d_bytes)" -gt 0 ] || fail "no host-to-device bytes counted"
grep -q "called cudaGraphicsUnregisterResource, which xgpu does not support" "$XGPUD_LOG" || fail "the daemon log does not name the unsupported call"
grep -q "its context failed with CUDA_ERROR_ILLEGAL_ADDRESS" "$XGPUD_LOG" || fail "the sticky error was not logged"
stop_xgpud
