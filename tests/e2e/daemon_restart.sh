#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# xgpud dies (kill -9) under running guests and comes back:
# - local mode: a guest making calls and a guest waiting in a synchronize
#   for a 5 s kernel each fail within a second with
#   cudaErrorDevicesUnavailable and the frontend's "xgpud went away" (the
#   channel socket's hang-up), not a hang; a new xgpud on the same socket
#   path serves a new process normally;
# - Xen mode over xgpu-xenstub: the same for a guest in domain 1 (the root
#   page's be_alive byte, cleared when xgpud's mapping goes), and the new
#   xgpud adopts the vgpu device again, so a new process in domain 1 runs.
# Real Xen (re-adoption under xen_real) is not covered here.
. "$(dirname "$0")/lib.bash"
prog=$B/tests/cuda/guestload

now() { date +%s.%N; }
# ends_soon PID OUT WHAT: the guest PID exits within 1.5 s, with the error.
ends_soon() {
	local pid=$1 out=$2 what=$3 t0=$4 took
	for _ in $(seq 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$pid" 2>/dev/null && { kill -9 "$pid"; fail "$what still runs 1.5 s after xgpud died"; }
	wait "$pid" || true
	took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
	grep -q "error=cudaErrorDevicesUnavailable" "$out" || { cat "$out"; fail "$what: not cudaErrorDevicesUnavailable"; }
	grep -q "xgpud went away" "$out" || { cat "$out"; fail "$what: the frontend did not say xgpud went away"; }
	note "$what: ended $took s after the kill: $(grep RESULT "$out")"
}

# kill_xgpud: kill -9, as a crash; prints the time.
kill_xgpud() {
	kill -9 "$XGPUD_PID"
	wait "$XGPUD_PID" 2>/dev/null || true
	XGPUD_PID=
	now
}

# ---- local mode ----------------------------------------------------------
start_xgpud
run_cuda XGPU_DOMAIN=caller "$prog" calls 30 >"$T/caller.out" 2>&1 &
caller=$!
run_cuda XGPU_DOMAIN=waiter "$prog" spin 5000 30 >"$T/waiter.out" 2>&1 &
waiter=$!
wait_for 10 dom_gt caller calls 10 || fail "the caller never got going"
wait_for 10 dom_gt waiter kernels 0 || fail "the waiter never launched"
sleep 0.3
t0=$(kill_xgpud)
ends_soon "$caller" "$T/caller.out" "local guest making calls" "$t0"
ends_soon "$waiter" "$T/waiter.out" "local guest in a synchronize" "$t0"
[ -S "$XGPU_SOCKET" ] || note "(the dead daemon's socket file is gone)"
XGPUD_LOG=$T/xgpud-local2.log
start_xgpud
out=$(run_cuda XGPU_DOMAIN=caller "$prog" spin 1 0.3 2>&1) || { echo "$out"; fail "a new local process failed after the restart"; }
grep -q "verified=yes" <<<"$out" || { echo "$out"; fail "a new local process did not verify after the restart"; }
note "local, after the restart: $(grep RESULT <<<"$out")"
stop_xgpud

# ---- Xen mode over xgpu-xenstub --------------------------------------------
export XGPU_XEN_STUB=$T/xen.sock
unset XGPU_XEN_DOMID XGPU_TRANSPORT
STUB_PID=
stub_cleanup() {
	local rc=$?
	[ -n "$STUB_PID" ] && { kill -TERM "$STUB_PID" 2>/dev/null || true; wait "$STUB_PID" 2>/dev/null || true; }
	(exit "$rc")
	cleanup
}
trap stub_cleanup EXIT
"$B/bin/xgpu-xenstub" --socket "$XGPU_XEN_STUB" --domain 1:guest1 >"$T/xenstub.log" 2>&1 &
STUB_PID=$!
wait_for 10 test -S "$XGPU_XEN_STUB" || fail "xgpu-xenstub did not come up"
"$B/bin/xl-gpu" attach 1 >/dev/null || fail "xl-gpu attach 1 failed"
XGPUD_LOG=$T/xgpud-xen1.log
start_xgpud --transport xen
run_cuda XGPU_XEN_DOMID=1 "$prog" calls 30 >"$T/xen-caller.out" 2>&1 &
caller=$!
wait_for 10 dom_gt guest1 calls 10 || fail "the Xen guest never got going"
t0=$(kill_xgpud)
ends_soon "$caller" "$T/xen-caller.out" "Xen guest making calls" "$t0"
XGPUD_LOG=$T/xgpud-xen2.log
start_xgpud --transport xen
wait_for 10 grep -q "domain guest1 (domid 1): vgpu device adopted" "$XGPUD_LOG" ||
	fail "the new xgpud did not adopt domain 1's vgpu device"
out=$(run_cuda XGPU_XEN_DOMID=1 XGPU_XEN_TIMEOUT_MS=5000 "$prog" spin 1 0.3 2>&1) ||
	{ echo "$out"; fail "a new process in domain 1 failed after the restart"; }
grep -q "verified=yes" <<<"$out" || { echo "$out"; fail "a new process in domain 1 did not verify"; }
note "Xen, after the restart: $(grep RESULT <<<"$out")"
stop_xgpud
