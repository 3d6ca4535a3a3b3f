#!/usr/bin/env bash
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
start_xgpud --fault-scope process
prog=$B/tests/cuda/guestload

XGPU_DOMAIN=bystander run_cuda "$B/bin/vectorAdd" -n 200000 -t 20 >"$T/bystander.out" 2>&1 &
by=$!
wait_for 10 dom_gt bystander kernels 0 || fail "the bystander never launched"
XGPU_DOMAIN=dom-bad run_cuda "$prog" fault illegal >"$T/bad.out" 2>&1 || true
grep -q "sync=cudaErrorIllegalAddress" "$T/bad.out" || { cat "$T/bad.out"; fail "the faulting process did not see its fault"; }

for _ in $(seq 100); do
	kill -0 "$XGPUD_PID" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$XGPUD_PID" 2>/dev/null && fail "xgpud still runs 10 s after the fault"
rc=0
wait "$XGPUD_PID" || rc=$?
XGPUD_PID=
[ "$rc" -eq 3 ] || { cat "$XGPUD_LOG"; fail "xgpud exited with status $rc, not 3"; }
grep -q "domain dom-bad: CUDA_ERROR_ILLEGAL_ADDRESS breaks every context of this process" "$XGPUD_LOG" ||
	fail "xgpud did not say why it stopped"
grep -q "stopped: a kernel's fault broke every context of this process" "$XGPUD_LOG" ||
	fail "xgpud's last line does not say it stopped for the fault"
check_clean "$XGPUD_LOG" xgpud
cp "$XGPUD_LOG" "$T/first-xgpud.log"

# The bystander ends with an error within a few seconds, long before its 20 s.
for _ in $(seq 50); do
	kill -0 "$by" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$by" 2>/dev/null && { kill -9 "$by"; fail "the bystander still runs 5 s after xgpud stopped"; }
wait "$by" && fail "the bystander succeeded although xgpud stopped under it"
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
for _ in $(seq 50); do
	kill -0 "$XGPUD_PID" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$XGPUD_PID" 2>/dev/null && fail "xgpud still runs 5 s after a 1 s kernel timeout"
rc=0
wait "$XGPUD_PID" || rc=$?
XGPUD_PID=
[ "$rc" -eq 3 ] || { cat "$XGPUD_LOG"; fail "xgpud exited with status $rc after the timeout, not 3"; }
grep -q "domain dom-slow: an operation ran for .* past its kernel timeout of 1 s; NVIDIA's driver ends it only with the process" "$XGPUD_LOG" ||
	fail "xgpud did not say why it exited"
for p in "$slow" "$by"; do
	for _ in $(seq 50); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$p" 2>/dev/null && { kill -9 "$p"; fail "a guest process still runs 5 s after xgpud exited"; }
	wait "$p" && fail "a guest process succeeded although xgpud exited under it"
done
note "runaway: $(grep RESULT "$T/runaway.out"); bystander: $(grep RESULT "$T/bystander2.out")"
start_xgpud --fault-scope process
out=$(XGPU_DOMAIN=dom-slow run_cuda "$B/bin/vectorAdd" -n 100000 2>&1) || { echo "$out"; fail "a new process after the second restart failed"; }
stop_xgpud
