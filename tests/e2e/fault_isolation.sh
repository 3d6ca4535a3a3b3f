#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A GPU fault in one domain breaks only that domain's context: while a
# bystander domain runs vectorAdd, dom-bad's kernels write to an illegal
# address (one process) and trap (another); each faulting process sees
# CUDA's sticky error on its synchronization, its later calls and
# cudaGetLastError, the bystander finishes verified, the daemon lives on, and
# a new process in dom-bad, once the broken context is gone with its last
# process, gets a fresh one and works.
. "$(dirname "$0")/lib.bash"
start_xgpud --policy accc
prog=$B/tests/cuda/guestload

XGPU_DOMAIN=bystander run_cuda "$B/bin/vectorAdd" -n 200000 -t 4 >"$T/bystander.out" 2>&1 &
by=$!
wait_for 10 dom_gt bystander kernels 0 || fail "the bystander never launched"
for kind in illegal trap; do
	out=$(XGPU_DOMAIN=dom-bad run_cuda "$prog" fault $kind 2>&1) || { echo "$out"; fail "fault $kind: not the sticky error"; }
	note "$(grep RESULT <<<"$out")"
done
for err in CUDA_ERROR_ILLEGAL_ADDRESS CUDA_ERROR_LAUNCH_FAILED; do
	grep -q "domain dom-bad: device context is broken by $err" "$XGPUD_LOG" ||
		fail "the daemon's log does not say dom-bad's context broke with $err"
done
grep -q "domain bystander: device context is broken" "$XGPUD_LOG" && fail "the bystander's context broke"
kill -0 "$XGPUD_PID" || fail "xgpud died"
wait "$by" || { cat "$T/bystander.out"; fail "the bystander failed"; }
grep -q "verified=yes" "$T/bystander.out" || { cat "$T/bystander.out"; fail "the bystander did not verify"; }
note "bystander: $(grep RESULT "$T/bystander.out")"
wait_for 5 dom_eq dom-bad channels 0 || fail "dom-bad's processes did not go"
out=$(XGPU_DOMAIN=dom-bad run_cuda "$prog" spin 1 0.5 2>&1) || { echo "$out"; fail "a new process in dom-bad failed"; }
grep -q "verified=yes" <<<"$out" || { echo "$out"; fail "a new process in dom-bad did not verify"; }
note "new process in dom-bad: $(grep RESULT <<<"$out")"
stop_xgpud
