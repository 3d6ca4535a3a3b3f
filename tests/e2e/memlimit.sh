#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The per-domain device memory limit: refused past the limit, reported as
# the device's size to the guest, and usable again after frees.
. "$(dirname "$0")/lib.bash"
start_xgpud --mem-limit 64M --pinned-limit 8M

"$B/tests/tools/rawclient" memlimit 64M || fail "limit not enforced at the protocol level"
grep -q "domain raw-limit: cudaMalloc of .* refused: the domain holds" "$XGPUD_LOG" || fail "refusal not logged"

# An unmodified program that wants more than the limit fails cleanly.
out=$(run_cuda "$B/bin/vectorAdd" -n 8000000 2>&1) && fail "vectorAdd allocated 96 MiB under a 64 MiB limit"
grep -qi "out of memory\|cudaErrorMemoryAllocation" <<<"$out" || { echo "$out"; fail "no memory error reported"; }
# One that fits still runs.
out=$(run_cuda "$B/bin/vectorAdd" -n 1000000 2>&1) || { echo "$out"; fail "vectorAdd within the limit failed"; }
grep -q "verified=yes" <<<"$out" || fail "vectorAdd within the limit did not verify"
# Pinned memory, device heap: budgets of their own, and refusals that leave
# the process working.
out=$(run_cuda "$B/tests/cuda/limits" 2>&1) || { echo "$out"; fail "limits"; }
grep -q "verified=yes" <<<"$out" || fail "limits did not verify"
grep -q "pinned allocation of 16.0 MiB refused" "$XGPUD_LOG" || fail "pinned refusal not logged"

# A module's device variables count too: 128 MiB of __device__ array does not
# fit in 64 MiB.
out=$(run_cuda "$B/tests/cuda/bigglobal" 2>&1) || { echo "$out"; fail "bigglobal"; }
grep -qE "module refused: its variables need 13421[0-9]{4} bytes" "$XGPUD_LOG" || fail "module charge not logged"
stop_xgpud
