#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# xgpud stops within 2 s of SIGTERM whatever its guests' kernels do: with no
# kernel timeout, one domain's kernel never ends and another domain copies
# in a loop; SIGTERM ends xgpud and both executors (the endless one by
# SIGKILL after its second to stop), the guests get
# cudaErrorDevicesUnavailable, and no executor is left.
. "$(dirname "$0")/lib.bash"
export XGPU_SIM_WATCHDOG_MS=0
start_xgpud --kernel-timeout 0
prog=$B/tests/cuda/guestload
XGPU_DOMAIN=endless run_cuda "$prog" runaway >"$T/endless.out" 2>&1 &
endless=$!
XGPU_DOMAIN=busy run_cuda "$prog" hold 16 30 >"$T/busy.out" 2>&1 &
busy=$!
wait_for 20 dom_gt endless kernels 0 || fail "the endless kernel never launched"
wait_for 20 dom_gt busy calls 10 || fail "the busy guest never got going"
sleep 0.5
execs="$(dom_stat endless executor_pid) $(dom_stat busy executor_pid)"
t0=$(date +%s.%N)
kill -TERM "$XGPUD_PID"
rc=0
wait "$XGPUD_PID" || rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
XGPUD_PID=
note "xgpud stopped in $took s (status $rc)"
[ "$rc" -eq 0 ] || fail "xgpud exited with status $rc"
awk -v t="$took" 'BEGIN { exit !(t <= 2) }' || fail "xgpud took $took s to stop"
check_clean "$XGPUD_LOG" xgpud
for p in $execs; do
	wait_for 2 bash -c "! kill -0 $p 2>/dev/null" || fail "executor $p outlived xgpud"
done
wait "$endless" || true
wait "$busy" || true
for g in endless busy; do
	grep -q "cudaErrorDevicesUnavailable" "$T/$g.out" || { cat "$T/$g.out"; fail "$g did not get cudaErrorDevicesUnavailable"; }
	note "$g: $(grep RESULT "$T/$g.out")"
done
grep -q "did not stop within a second; killing it" "$XGPUD_LOG" || grep -q "executor pid .* was killed by signal 9" "$XGPUD_LOG" ||
	fail "the endless domain's executor was not killed"
