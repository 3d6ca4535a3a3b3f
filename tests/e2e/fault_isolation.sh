#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One guest cannot reach another: three domains run while one of them, in
# turn, faults (an illegal address, then a trap), launches an endless kernel
# under --kernel-timeout 2, and has its executor killed with kill -9.
#
# The simulated driver makes a fault the whole process's, as NVIDIA's does
# (every context of the process fails with the fault's code from then on),
# so this holds only because each domain's executor is a process of its own:
# - the bystanders (vectorAdd and BlackScholes over and over in one domain,
#   a process holding memory and copying it back and forth in another)
#   verify every time and none of their calls fails;
# - the faulting program gets the fault's sticky error on its
#   synchronization, its later calls and cudaGetLastError; the endless one
#   gets cudaErrorLaunchTimeout within the timeout plus a second; the one
#   whose executor died gets cudaErrorLaunchFailure;
# - after each, the domain's next program gets a new executor and works;
# - xgpud answers throughout, and the bystanders' executors are the same
#   processes at the end as at the start.
# xgpu-test-timeout: 240
. "$(dirname "$0")/lib.bash"
export XGPU_SIM_WATCHDOG_MS=0 # a data-center GPU: only xgpud's timeout ends a kernel
start_xgpud --kernel-timeout 2
prog=$B/tests/cuda/guestload

# Bystander 1: the bundled workloads, again and again, each verifying.
(
	while [ ! -e "$T/stop" ]; do
		XGPU_DOMAIN=by-work run_cuda "$B/bin/vectorAdd" -n 100000 -i 4 >>"$T/by-work.out" 2>&1 ||
			echo "FAILED vectorAdd" >>"$T/by-work.out"
		XGPU_DOMAIN=by-work run_cuda "$B/bin/BlackScholes" -n 100000 -i 2 >>"$T/by-work.out" 2>&1 ||
			echo "FAILED BlackScholes" >>"$T/by-work.out"
	done
) &
by_work=$!
# Bystander 2: one process for the whole test, 64 MiB held, every byte of
# every copy checked.
XGPU_DOMAIN=by-hold run_cuda "$prog" hold 64 60 >"$T/by-hold.out" 2>&1 &
by_hold=$!
wait_for 20 dom_gt by-work kernels 0 || fail "the first bystander never launched"
wait_for 20 dom_gt by-hold mem_bytes 60000000 || fail "the second bystander never held its memory"
pid_work=$(dom_stat by-work executor_pid)
pid_hold=$(dom_stat by-hold executor_pid)
note "bystanders' executors: by-work pid $pid_work, by-hold pid $pid_hold"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# the domain's next program works, on a new executor
next_works() {
	local before=$1 out
	out=$(XGPU_DOMAIN=dom-bad run_cuda "$prog" spin 1 0.3 2>&1) || { echo "$out"; fail "$2: dom-bad's next program failed"; }
	grep -q "verified=yes" <<<"$out" || { echo "$out"; fail "$2: dom-bad's next program did not verify"; }
	local after
	after=$(dom_stat dom-bad executors)
	[ "$after" -gt "$before" ] || fail "$2: dom-bad's next program did not get a new executor ($before, then $after)"
	note "$2: dom-bad's next program: $(grep RESULT <<<"$out")"
}

for kind in illegal trap; do
	before=$(dom_stat dom-bad executors 2>/dev/null || echo 0)
	t0=$(now)
	out=$(XGPU_DOMAIN=dom-bad run_cuda "$prog" fault $kind 2>&1) || { echo "$out"; fail "fault $kind: not the sticky error"; }
	note "fault $kind in $(elapsed "$t0") s: $(grep RESULT <<<"$out")"
	next_works "$before" "fault $kind"
done
for err in CUDA_ERROR_ILLEGAL_ADDRESS CUDA_ERROR_LAUNCH_FAILED; do
	grep -q "domain dom-bad: its context failed with $err" "$XGPUD_LOG" ||
		fail "the daemon's log does not say dom-bad's context failed with $err"
done

# An endless kernel: ended with its executor at the timeout.
before=$(dom_stat dom-bad executors)
t0=$(now)
out=$(XGPU_DOMAIN=dom-bad run_cuda "$prog" runaway 2>&1) || { echo "$out"; fail "runaway: not cudaErrorLaunchTimeout"; }
took=$(elapsed "$t0")
note "runaway ended in $took s: $(grep RESULT <<<"$out")"
awk -v t="$took" 'BEGIN { exit !(t <= 3.5) }' || fail "the endless kernel ended after $took s (timeout 2 s, a second's grace, start-up)"
grep -q "domain dom-bad: an operation ran for .* past its kernel timeout of 2 s" "$XGPUD_LOG" ||
	fail "the daemon's log does not name the timeout"
next_works "$before" runaway

# The executor killed from outside, under a process making calls.
before=$(dom_stat dom-bad executors)
XGPU_DOMAIN=dom-bad run_cuda "$prog" calls 20 >"$T/victim.out" 2>&1 &
victim=$!
wait_for 20 dom_gt dom-bad calls 5 || fail "the victim never got going"
victim_exec=$(dom_stat dom-bad executor_pid)
kill -9 "$victim_exec"
t0=$(now)
wait "$victim" || true
note "victim of kill -9 of executor $victim_exec, $(elapsed "$t0") s later: $(grep RESULT "$T/victim.out")"
grep -q "error=cudaErrorLaunchFailure" "$T/victim.out" || { cat "$T/victim.out"; fail "the victim did not get cudaErrorLaunchFailure"; }
awk -v t="$(elapsed "$t0")" 'BEGIN { exit !(t <= 2) }' || fail "the victim's error came late"
next_works "$before" "kill -9"

# The bystanders saw none of it.
touch "$T/stop"
wait "$by_work"
wait "$by_hold" || { cat "$T/by-hold.out"; fail "the holding bystander failed"; }
grep -q "mismatches=0 .*verified=yes error=cudaSuccess" "$T/by-hold.out" || { cat "$T/by-hold.out"; fail "the holding bystander saw an error"; }
note "by-hold: $(grep RESULT "$T/by-hold.out")"
! grep -q "FAILED" "$T/by-work.out" || { grep -B3 FAILED "$T/by-work.out"; fail "a bystander workload failed"; }
runs=$(grep -c "^RESULT.*verified=yes" "$T/by-work.out")
[ "$runs" -ge 4 ] || fail "the workload bystander ran only $runs verified programs"
note "by-work: $runs programs, all verified"
[ "$(dom_stat by-hold executor_pid)" = "$pid_hold" ] || fail "by-hold's executor changed"
grep -q "domain by-work: its context failed\|domain by-hold: its context failed" "$XGPUD_LOG" &&
	fail "a bystander's context failed"
[ "$(dom_stat by-work faults)" -eq 0 ] && [ "$(dom_stat by-hold faults)" -eq 0 ] || fail "a bystander counts a fault"
[ "$(dom_stat dom-bad faults)" -eq 2 ] || fail "dom-bad counts $(dom_stat dom-bad faults) faults, not 2"
[ "$(dom_stat dom-bad timeouts)" -eq 1 ] || fail "dom-bad counts $(dom_stat dom-bad timeouts) timeouts, not 1"
kill -0 "$XGPUD_PID" || fail "xgpud died"
stop_xgpud
