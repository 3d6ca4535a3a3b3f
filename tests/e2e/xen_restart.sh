#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The control plane restarts under a running Xen guest (over xgpu-xenstub),
# and the guest notices nothing: a program in domain 1 holds 64 MiB and
# copies every byte of it back and forth in a loop while xgpud is killed
# (kill -9) and started again, then while it restarts in place (SIGUSR2).
# Each time the new xgpud adopts the domain's executor and takes the guest's
# vgpu channel again from xenstore (its keys checked against what the
# executor says of it): the program runs on without an error and verifies
# every copy, xl-gpu stats shows the same executor_pid, the channel's
# backend directory stays, and a new program in the domain joins
# the adopted executor. When the program ends, its channel is swept as
# usual. A channel whose device was detached while no xgpud ran is closed
# once the next xgpud has waited XGPU_ADOPT_TAKE_MS for it.
# xgpu-test-timeout: 120
. "$(dirname "$0")/lib.bash"

export XGPU_XEN_STUB=$T/xen.sock
unset XGPU_XEN_DOMID XGPU_TRANSPORT
STUB_LOG=$T/xenstub.log
STUB_PID=
LIAR=$B/tests/tools/xenliar
BE=/local/domain/0/backend/vgpu
prog=$B/tests/cuda/guestload

stub_cleanup() {
	local rc=$?
	# xgpud before the stub: its stop tidies xenstore through it.
	if [ -n "$XGPUD_PID" ]; then
		kill -TERM "$XGPUD_PID" 2>/dev/null || true
		wait "$XGPUD_PID" 2>/dev/null || true
	fi
	stop_xenstub "$rc"
	(exit "$rc")
	cleanup
}
trap stub_cleanup EXIT

start_xenstub "$XGPU_XEN_STUB" 1:guest1
"$B/bin/xl-gpu" attach 1 || fail "xl-gpu attach 1 failed"
start_xgpud --transport xen

in_dom1() {
	run_cuda XGPU_XEN_DOMID=1 XGPU_TRANSPORT=xen "$@"
}
dom1() {
	stats | jq -e ".domains[] | select(.domid == 1) | .$1"
}
dom1_gt() {
	[ "$(dom1 "$1")" -gt "$2" ]
}
be_chans() {
	XGPU_XEN_DOMID=0 "$LIAR" ls "$BE/1/0/channel" 2>/dev/null | grep -v '^absent$' || true
}

in_dom1 "$prog" hold 64 16 pinned >"$T/holder.out" 2>&1 &
holder=$!
wait_for 30 dom1_gt mem_bytes 67000000 || {
	cat "$T/holder.out" >&2
	fail "the holder never held its 64 MiB"
}
exec_pid=$(dom1 executor_pid)
[ "$exec_pid" -gt 0 ] || fail "no executor_pid for domain 1"
note "domain 1's executor: pid $exec_pid; backend channels: $(be_chans | tr '\n' ' ')"
[ "$(be_chans | tr -d '\n')" = 0 ] || fail "backend channels $(be_chans | tr '\n' ' '), not 0"

# checks_out WHAT CALLS: the adopted domain as it was.
checks_out() {
	wait_for 10 dom1_gt calls "$2" || fail "$1: the holder's calls stopped"
	[ "$(dom1 executor_pid)" = "$exec_pid" ] || fail "$1: executor_pid $(dom1 executor_pid), not $exec_pid"
	[ "$(dom1 channels)" -eq 1 ] || fail "$1: channels $(dom1 channels)"
	grep -q "adopted executor pid $exec_pid, serving 1 process" "$XGPUD_LOG" ||
		fail "$1: the new xgpud's log does not say it adopted pid $exec_pid"
	grep -q "adopted with its executor" "$XGPUD_LOG" ||
		fail "$1: the new xgpud's log does not say it took the vgpu channel again"
	[ "$(be_chans | tr -d '\n')" = 0 ] || fail "$1: backend channels $(be_chans | tr '\n' ' '), not 0"
	note "$1: adopted pid $exec_pid, $(dom1 calls) calls, $(dom1 mem_bytes) bytes held"
}

# The state file that names the executor is written at most every 2 s.
sleep 2.5
calls=$(dom1 calls)
kill -9 "$XGPUD_PID"
wait "$XGPUD_PID" 2>/dev/null || true
XGPUD_PID=
sleep 0.5 # the guest goes on alone meanwhile, ungated
XGPUD_LOG=$T/xgpud-2.log
start_xgpud --transport xen
checks_out "after kill -9" "$calls"
out=$(in_dom1 "$prog" spin 1 0.3 2>&1) || {
	echo "$out"
	fail "a new program in the adopted domain failed"
}
grep -q "verified=yes" <<<"$out" || {
	echo "$out"
	fail "a new program in the adopted domain did not verify"
}
[ "$(dom1 executor_pid)" = "$exec_pid" ] || fail "the new program did not join the adopted executor"

calls=$(dom1 calls)
pid=$XGPUD_PID
kill -USR2 "$XGPUD_PID"
wait_for 10 grep -q "signal 12: restarting in place" "$XGPUD_LOG" || fail "xgpud did not begin its restart"
restarted() { sed -n '/restarting in place/,$p' "$XGPUD_LOG" | grep -q "Xen transport: serving"; }
wait_for 10 restarted || fail "xgpud did not come back from its restart"
kill -0 "$pid" || fail "xgpud's process is gone after SIGUSR2"
checks_out "after SIGUSR2" "$calls"

wait "$holder" || {
	cat "$T/holder.out" >&2
	fail "the holder failed across the restarts"
}
grep -q "mismatches=0 .*verified=yes error=cudaSuccess" "$T/holder.out" || {
	cat "$T/holder.out" >&2
	fail "the holder saw an error"
}
note "holder: $(grep RESULT "$T/holder.out")"
no_channels() {
	[ -z "$(XGPU_XEN_DOMID=0 "$LIAR" ls "$BE/1/0/channel" 2>/dev/null | grep -v '^absent$')" ]
}
wait_for 10 no_channels || fail "the holder's channel was not swept after it ended"

# A device that does not come back: while no xgpud ran, a toolstack's
# stray write made its backend keys wrong, so the next xgpud refuses the
# device and no transport takes the adopted executor's channel again. It
# is closed after a bounded wait (XGPU_ADOPT_TAKE_MS, 30 s by default),
# with a log line, and the guest's program ends rather than being served
# unscheduled for ever.
in_dom1 "$prog" hold 16 60 >"$T/stray.out" 2>&1 &
stray=$!
wait_for 30 dom1_gt mem_bytes 16000000 || {
	cat "$T/stray.out" >&2
	fail "the second holder never held its 16 MiB"
}
exec_pid=$(dom1 executor_pid)
sleep 2.5
kill -9 "$XGPUD_PID"
wait "$XGPUD_PID" 2>/dev/null || true
XGPUD_PID=
XGPU_XEN_DOMID=0 "$LIAR" write "$BE/1/0/frontend-id" 7 || fail "cannot write frontend-id"
XGPUD_LOG=$T/xgpud-3.log
XGPU_ADOPT_TAKE_MS=1500 start_xgpud --transport xen
t0=$SECONDS
grep -q "adopted executor pid $exec_pid, serving 1 process" "$XGPUD_LOG" ||
	fail "the third xgpud did not adopt pid $exec_pid"
wait_for 10 grep -q "its device did not come back within 1.5 s of xgpud's restart; closing it" "$XGPUD_LOG" ||
	fail "the channel whose device was refused was not closed"
zero_channels() { [ "$(dom1 channels)" = 0 ]; }
wait_for 10 zero_channels || fail "domain 1 still has $(dom1 channels) channels"
note "untaken channel closed $((SECONDS - t0)) s after the restart (limit 1.5 s)"
wait_for 10 eval '! kill -0 $stray 2>/dev/null' || fail "the guest program of the closed channel still runs"
wait "$stray" && fail "the guest program of the closed channel ended without an error"
note "its program: $(grep -h -e RESULT -e rror "$T/stray.out" | head -n 2 | tr '\n' ' ')"
stop_xgpud
kill -0 "$STUB_PID" 2>/dev/null || fail "xgpu-xenstub died"
check_clean "$STUB_LOG" xgpu-xenstub
