#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Clients that misbehave: a wrong protocol version on either side, malformed
# packets, corrupt ring indexes, another domain's handles and pointers,
# malformed and foreign graph descriptions (conditional nodes too), a
# burst of random packets. The daemon refuses or closes the offender's
# channel, logs it by domain, and keeps serving everyone else.
. "$(dirname "$0")/lib.bash"
R=$B/tests/tools/rawclient
start_xgpud --stall-timeout 5

"$R" version || fail "daemon accepted a client of another protocol version"
grep -q "protocol version mismatch: client .* speaks xgpu protocol 99, xgpud speaks" "$XGPUD_LOG" ||
	fail "the refusal was not logged with both versions"
"$R" malformed || fail "malformed packets"
grep -q "domain raw-malformed: malformed request" "$XGPUD_LOG" || fail "malformed request not logged by domain"
"$R" corrupt-ring || fail "corrupt ring indexes"
grep -q "corrupted its request ring" "$XGPUD_LOG" || fail "corrupt ring not logged"
grep -q "closed (corrupt tx index)" "$XGPUD_LOG" || fail "corrupt data-area index not logged"
"$R" cross-domain || fail "cross-domain access"
grep -q "is not inside one of this process's allocations" "$XGPUD_LOG" || fail "cross-domain refusal not logged"
"$R" graphs || fail "malformed and foreign graphs"
"$R" graph-conds || fail "malformed conditional nodes"
grep -q "graph refused: conditional nodes nested beyond the limit" "$XGPUD_LOG" ||
	fail "the daemon did not name the nesting it refused"
grep -q "domain raw-ga: graph refused: the dependencies form a cycle" "$XGPUD_LOG" || fail "cyclic graph not logged"
grep -q "domain raw-ga: graph refused: 4097 nodes" "$XGPUD_LOG" || fail "oversize graph not logged"
"$R" managed || fail "forged managed-memory requests"
"$R" fuzz 1 3000 || fail "fuzzing"
# A guest misbehaving in a loop is logged within its domain's budget
# (50 lines per 10 s), not once per bad packet.
lines=$(grep -c "domain raw-fuzz" "$XGPUD_LOG" || true)
note "raw-fuzz: $lines log lines for 3000 random packets"
[ "$lines" -le 120 ] || fail "a misbehaving guest flooded the log ($lines lines)"

# A daemon of another protocol version, as seen by an unmodified program.
"$R" fake-daemon "$T/fake.sock" >"$T/fake.out" 2>&1 &
fake=$!
wait_for 5 test -S "$T/fake.sock" || fail "fake daemon did not start"
out=$(XGPU_SOCKET=$T/fake.sock run_cuda "$B/bin/vectorAdd" -n 1000 2>&1) && fail "vectorAdd ran against a mismatched daemon"
grep -qE "protocol version mismatch: this libcudart.so.13 speaks xgpu protocol [0-9]+, xgpud speaks 99" <<<"$out" ||
	{ echo "$out"; fail "the frontend did not explain the version mismatch"; }
kill "$fake" 2>/dev/null || true

# No daemon at all: a clear message, a CUDA error, no crash.
out=$(XGPU_SOCKET=$T/nobody.sock run_cuda "$B/bin/vectorAdd" -n 1000 2>&1) && fail "vectorAdd ran without a daemon"
grep -q "cannot reach xgpud at $T/nobody.sock" <<<"$out" || { echo "$out"; fail "no explanation without a daemon"; }

# After all that, an honest program still works and the daemon is whole.
out=$(run_cuda "$B/bin/vectorAdd" -n 100000 2>&1) || { echo "$out"; fail "honest program failed"; }
grep -q "verified=yes" <<<"$out" || fail "honest program did not verify"
for d in raw-malformed raw-corrupt raw-a raw-b raw-ga raw-gb raw-fuzz; do
	wait_for 10 dom_eq "$d" channels 0 || fail "$d still has channels"
	[ "$(dom_stat "$d" mem_bytes)" -eq 0 ] || fail "$d still holds memory"
done
[ "$(dom_stat raw-fuzz errors)" -gt 0 ] || fail "fuzzing produced no refused calls"
stop_xgpud
