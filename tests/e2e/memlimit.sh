#!/usr/bin/env bash
# The per-domain device memory limit: refused past the limit, reported as
# the device's size to the guest, and usable again after frees.
. "$(dirname "$0")/lib.bash"
start_xgpud --mem-limit 64M

"$B/tests/tools/rawclient" memlimit 64M || fail "limit not enforced at the protocol level"
grep -q "domain raw-limit: cudaMalloc of .* refused: the domain holds" "$XGPUD_LOG" || fail "refusal not logged"

# An unmodified program that wants more than the limit fails cleanly.
out=$(run_cuda "$B/bin/vectorAdd" -n 8000000 2>&1) && fail "vectorAdd allocated 96 MiB under a 64 MiB limit"
echo "$out" | grep -qi "out of memory\|cudaErrorMemoryAllocation" || { echo "$out"; fail "no memory error reported"; }
# One that fits still runs.
out=$(run_cuda "$B/bin/vectorAdd" -n 1000000 2>&1) || { echo "$out"; fail "vectorAdd within the limit failed"; }
echo "$out" | grep -q "verified=yes" || fail "vectorAdd within the limit did not verify"
stop_xgpud
