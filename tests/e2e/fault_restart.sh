#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --fault-scope process, the default on NVIDIA's driver, where a kernel's
# fault breaks every context of the process and no new one can be made (seen
# on an H100, docs/results/gpu-validation-2026-11-26-h100): at dom-bad's
# fault xgpud says why and exits with status 3; the bystander's running
# process fails with an error instead of hanging; a restarted xgpud serves a
# new process. The same for a kernel that never ends under --kernel-timeout,
# which NVIDIA's driver ends only with the process: xgpud exits at once
# (status 3) instead of destroying the context. Over the simulated driver,
# with the scope asked for.
. "$(dirname "$0")/lib.bash"
prog=$B/tests/cuda/guestload

# exits_3_within TENTHS WHAT: xgpud ends within TENTHS tenths of a second
# (after WHAT) with status 3.
exits_3_within() {
	for _ in $(seq "$1"); do
		kill -0 "$XGPUD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$XGPUD_PID" 2>/dev/null && fail "xgpud still runs $(($1 / 10)) s after $2"
	local rc=0
	wait "$XGPUD_PID" || rc=$?
	XGPUD_PID=
	[ "$rc" -eq 3 ] || { cat "$XGPUD_LOG"; fail "xgpud exited with status $rc after $2, not 3"; }
}

# ends_with_error PID WHAT: a guest process ends within 5 s, failing.
ends_with_error() {
	for _ in $(seq 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && { kill -9 "$1"; fail "$2 still runs 5 s after xgpud stopped"; }
	wait "$1" && fail "$2 succeeded although xgpud stopped under it"
	return 0
}

start_xgpud --fault-scope process

XGPU_DOMAIN=bystander run_cuda "$B/bin/vectorAdd" -n 200000 -t 20 >"$T/bystander.out" 2>&1 &
by=$!
wait_for 10 dom_gt bystander kernels 0 || fail "the bystander never launched"
XGPU_DOMAIN=dom-bad run_cuda "$prog" fault illegal >"$T/bad.out" 2>&1 || true
grep -q "sync=cudaErrorIllegalAddress" "$T/bad.out" || { cat "$T/bad.out"; fail "the faulting process did not see its fault"; }

exits_3_within 100 "the fault"
grep -q "domain dom-bad: CUDA_ERROR_ILLEGAL_ADDRESS breaks every context of this process" "$XGPUD_LOG" ||
	fail "xgpud did not say why it stopped"
grep -q "stopped: a kernel's fault broke every context of this process" "$XGPUD_LOG" ||
	fail "xgpud's last line does not say it stopped for the fault"
check_clean "$XGPUD_LOG" xgpud
cp "$XGPUD_LOG" "$T/first-xgpud.log"

# The bystander ends with an error within a few seconds, long before its 20 s.
ends_with_error "$by" "the bystander"
grep -q "verified=no" "$T/bystander.out" || { cat "$T/bystander.out"; fail "the bystander's failure is not reported"; }
note "bystander: $(grep RESULT "$T/bystander.out")"

start_xgpud --fault-scope process --kernel-timeout 1
out=$(XGPU_DOMAIN=dom-bad run_cuda "$B/bin/vectorAdd" -n 100000 2>&1) || { echo "$out"; fail "a new process after the restart failed"; }
grep -q "verified=yes" <<<"$out" || { echo "$out"; fail "a new process after the restart did not verify"; }

# A kernel that never ends: xgpud exits within its timeout and a moment.
XGPU_DOMAIN=bystander run_cuda "$B/bin/vectorAdd" -n 200000 -t 20 >"$T/bystander2.out" 2>&1 &
by=$!
wait_for 10 dom_gt bystander kernels 0 || fail "the second bystander never launched"
XGPU_DOMAIN=dom-slow run_cuda "$prog" runaway >"$T/runaway.out" 2>&1 &
slow=$!
exits_3_within 50 "a 1 s kernel timeout"
grep -q "domain dom-slow: an operation ran for .* past its kernel timeout of 1 s; NVIDIA's driver ends it only with the process" "$XGPUD_LOG" ||
	fail "xgpud did not say why it exited"
ends_with_error "$slow" "the endless kernel's process"
ends_with_error "$by" "the second bystander"
note "runaway: $(grep RESULT "$T/runaway.out"); bystander: $(grep RESULT "$T/bystander2.out")"
start_xgpud --fault-scope process
out=$(XGPU_DOMAIN=dom-slow run_cuda "$B/bin/vectorAdd" -n 100000 2>&1) || { echo "$out"; fail "a new process after the second restart failed"; }
stop_xgpud
