#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Clients that try to hold the daemon up: connections that never say hello,
# a flood of signals on a channel, an outdated handshake. Everyone else is
# served meanwhile, and the daemon still stops promptly.
. "$(dirname "$0")/lib.bash"
R=$B/tests/tools/rawclient
start_xgpud

"$R" silent 200 6 >"$T/silent.out" 2>&1 &
silent=$!
wait_for 5 grep -q holding "$T/silent.out" || fail "the silent client did not connect"
t0=$(date +%s%N)
out=$(run_cuda "$B/bin/vectorAdd" -n 100000 2>&1) || { echo "$out"; fail "vectorAdd failed beside silent connections"; }
ms=$((($(date +%s%N) - t0) / 1000000))
note "vectorAdd beside 200 silent connections: $ms ms"
[ "$ms" -lt 4000 ] || fail "silent connections held up a real client for $ms ms"
"$B/bin/xl-gpu" list >/dev/null || fail "xl-gpu could not get through"

"$R" kick-flood 100000 || fail "a channel flooded with signals stopped answering"
# Back-to-back calls from two processes, spinning and sleeping by turns:
# neither side may take the other's timing for a corrupt ring.
"$R" nops 100000 &
a=$!
XGPU_SPIN_US=0 "$R" nops 30000 || fail "back-to-back calls failed"
wait "$a" || fail "back-to-back calls failed"
! grep -q "corrupt" "$XGPUD_LOG" || fail "an honest channel was taken for corrupt"
"$R" old-hello || fail "a three-descriptor hello was served"

# Stop while the silent connections are still open.
t0=$(date +%s%N)
stop_xgpud
ms=$((($(date +%s%N) - t0) / 1000000))
note "stopped in $ms ms"
[ "$ms" -lt 3000 ] || fail "stopping took $ms ms"
wait "$silent" 2>/dev/null || true
