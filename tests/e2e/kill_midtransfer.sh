#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A client killed with SIGKILL in the middle of a 64 MiB transfer: its
# channel is torn down and everything it held released (the stats show it),
# while a program in another domain runs on unaffected.
. "$(dirname "$0")/lib.bash"
start_xgpud

"$B/tests/tools/rawclient" stream victim >"$T/victim.out" 2>&1 &
victim=$!
XGPU_DOMAIN=bystander run_cuda "$B/bin/vectorAdd" -n 200000 -t 4 >"$T/bystander.out" 2>&1 &
bystander=$!

wait_for 20 dom_gt victim h2d_bytes $((128 << 20)) || fail "the victim never streamed"
[ "$(dom_stat victim mem_bytes)" -eq $((64 << 20)) ] || fail "the victim's allocation is not accounted"
# Kill it while a copy is certainly in flight: it copies continuously.
kill -KILL "$victim"
wait "$victim" 2>/dev/null || true
wait_for 10 dom_eq victim channels 0 || fail "the victim's channel was not closed"
[ "$(dom_stat victim mem_bytes)" -eq 0 ] || fail "the victim's memory was not released"
grep -q "domain victim: channel .* closed (.*): released 1 allocations (67108864 bytes)" "$XGPUD_LOG" ||
	fail "the release was not logged"

wait "$bystander" || { cat "$T/bystander.out"; fail "the bystander failed"; }
grep -q "verified=yes" "$T/bystander.out" || fail "the bystander did not verify"
stop_xgpud
