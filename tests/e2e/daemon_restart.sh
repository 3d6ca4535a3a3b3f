#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The control plane restarts under running guests, and they notice nothing:
# a guest holds 256 MiB and copies every byte of it back and forth in a loop
# while xgpud is killed (kill -9, a crash) and started again, then while it
# restarts in place (SIGUSR2, an upgrade). Each time the new xgpud adopts the
# guest's executor: the program runs on without an error and verifies every
# copy, and xl-gpu stats shows its memory, its calls and the same
# executor_pid. A new program joins the adopted domain's executor; a domain's
# credit set before the crash is the new xgpud's too. An executor's own
# death is still the guest's error: kill -9 of it gives the guest
# cudaErrorLaunchFailure and the frontend says its executor stopped. An
# orphaned executor with no process left ends by itself.
# xgpu-test-timeout: 120
. "$(dirname "$0")/lib.bash"
prog=$B/tests/cuda/guestload

start_xgpud
XGPU_DOMAIN=holder run_cuda "$prog" hold 256 14 >"$T/holder.out" 2>&1 &
holder=$!
wait_for 20 dom_gt holder mem_bytes 268000000 || fail "the holder never held its 256 MiB"
"$B/bin/xl-gpu" credit holder -w 768 >/dev/null || fail "xl-gpu credit failed"
exec_pid=$(dom_stat holder executor_pid)
[ "$exec_pid" -gt 0 ] || fail "no executor_pid for the holder"
note "holder's executor: pid $exec_pid"

# checks_out WHAT: the adopted domain as it was.
checks_out() {
	local calls0=$1
	wait_for 10 dom_gt holder calls "$calls0" || fail "$2: the holder's calls stopped"
	[ "$(dom_stat holder executor_pid)" = "$exec_pid" ] || fail "$2: executor_pid $(dom_stat holder executor_pid), not $exec_pid"
	[ "$(dom_stat holder mem_bytes)" -ge 268435456 ] || fail "$2: mem_bytes $(dom_stat holder mem_bytes)"
	[ "$(dom_stat holder credit)" -eq 768 ] || fail "$2: credit $(dom_stat holder credit), not 768"
	[ "$(dom_stat holder channels)" -eq 1 ] || fail "$2: channels $(dom_stat holder channels)"
	grep -q "domain holder: adopted executor pid $exec_pid, serving 1 process" "$XGPUD_LOG" ||
		fail "$2: the new xgpud's log does not say it adopted pid $exec_pid"
	note "$2: adopted pid $exec_pid, $(dom_stat holder calls) calls, $(dom_stat holder mem_bytes) bytes held"
}

# A crash right after the credit change: xgpud saved it before it answered.
calls=$(dom_stat holder calls)
kill -9 "$XGPUD_PID"
wait "$XGPUD_PID" 2>/dev/null || true
XGPUD_PID=
sleep 0.5 # the guest goes on alone meanwhile, ungated
XGPUD_LOG=$T/xgpud-2.log
start_xgpud
checks_out "$calls" "after kill -9"
out=$(XGPU_DOMAIN=holder run_cuda "$prog" spin 1 0.3 2>&1) || { echo "$out"; fail "a new program in the adopted domain failed"; }
grep -q "verified=yes" <<<"$out" || { echo "$out"; fail "a new program in the adopted domain did not verify"; }
[ "$(dom_stat holder executor_pid)" = "$exec_pid" ] || fail "the new program did not join the adopted executor"

# An upgrade: the same xgpud process runs its binary again.
calls=$(dom_stat holder calls)
pid=$XGPUD_PID
kill -USR2 "$XGPUD_PID"
wait_for 10 grep -q "signal 12: restarting in place" "$XGPUD_LOG" || fail "xgpud did not begin its restart"
restarted() { sed -n '/restarting in place/,$p' "$XGPUD_LOG" | grep -q "listening on"; }
wait_for 10 restarted || fail "xgpud did not come back from its restart"
kill -0 "$pid" || fail "xgpud's process is gone after SIGUSR2"
checks_out "$calls" "after SIGUSR2"

wait "$holder" || { cat "$T/holder.out"; fail "the holder failed across the restarts"; }
grep -q "mismatches=0 .*verified=yes error=cudaSuccess" "$T/holder.out" || { cat "$T/holder.out"; fail "the holder saw an error"; }
note "holder: $(grep RESULT "$T/holder.out")"

# An executor's own death is its guest's error.
XGPU_DOMAIN=victim run_cuda "$prog" calls 20 >"$T/victim.out" 2>&1 &
victim=$!
wait_for 20 dom_gt victim calls 5 || fail "the victim never got going"
kill -9 "$(dom_stat victim executor_pid)"
wait "$victim" || true
grep -q "error=cudaErrorLaunchFailure" "$T/victim.out" || { cat "$T/victim.out"; fail "the victim did not get cudaErrorLaunchFailure"; }
grep -q "executor stopped with cudaErrorLaunchFailure" "$T/victim.out" || { cat "$T/victim.out"; fail "the frontend did not say its executor stopped"; }
note "victim: $(grep RESULT "$T/victim.out")"
stop_xgpud

# An orphan with no process left has nobody to serve and nobody to stop it:
# when no xgpud adopts it in time (XGPU_EXECUTOR_ORPHAN_MS, 60 s by
# default), it ends by itself rather than hold its context for ever.
XGPUD_LOG=$T/xgpud-3.log
XGPU_EXECUTOR_ORPHAN_MS=1500 start_xgpud --executor-linger 600000
out=$(XGPU_DOMAIN=idler run_cuda "$prog" spin 1 0.2 2>&1) || { echo "$out"; fail "the idler's program failed"; }
idle_pid=$(dom_stat idler executor_pid)
[ "$idle_pid" -gt 0 ] || fail "the idler's executor does not linger"
kill -9 "$XGPUD_PID"
wait "$XGPUD_PID" 2>/dev/null || true
XGPUD_PID=
t0=$SECONDS
gone() { [ ! -e "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status"; }
wait_for 10 gone "$idle_pid" || fail "the orphaned idle executor $idle_pid is still there after 10 s"
note "orphaned idle executor ended after $((SECONDS - t0)) s (orphan limit 1.5 s)"
# The state file still names it: the next xgpud must see it gone, not adopt it.
XGPUD_LOG=$T/xgpud-4.log
start_xgpud
grep -q "adopted executor pid $idle_pid" "$XGPUD_LOG" && fail "xgpud adopted the ended executor $idle_pid"
out=$(XGPU_DOMAIN=idler run_cuda "$prog" spin 1 0.2 2>&1) || { echo "$out"; fail "the idler's next program failed"; }
[ "$(dom_stat idler executor_pid)" != "$idle_pid" ] || fail "the idler's next program found the old executor"
stop_xgpud
