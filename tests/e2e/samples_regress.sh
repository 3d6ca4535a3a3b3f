#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Patterns from NVIDIA's cuda-samples that once went wrong under xgpu,
# reproduced by our own programs (tests/samples/), each built with
# -cudart shared and with nvcc's default static runtime.
#
# bigcopy: pageable copies of 128 MiB, as dmmaTensorCoreGemm copies its
# matrices. Each outlasts the domain's GPU slot several times; when a slot
# ran out mid-copy with earlier work marked in flight, the scheduler waited
# for a drain that only the (busy) poller could report and stalled the copy
# for its 1 s cap each time: about 4 s per copy, where one takes well under
# 0.5 s. The bound is loose enough for a loaded machine and a sanitizer build.
. "$(dirname "$0")/lib.bash"
start_xgpud

S=$B/tests/samples
want=
for prog in "$S/bigcopy" "$S/static/bigcopy"; do
	out=$(run_cuda "$prog" 128 2>&1) || {
		echo "$out"
		fail "$prog failed"
	}
	check_clean <(echo "$out") "$prog"
	echo "$out" | tail -n 1
	echo "$out" | grep -q "^RESULT bigcopy verified=yes" || {
		echo "$out"
		fail "$prog did not get back the bytes it copied"
	}
	slowest=$(echo "$out" | sed -n 's/^RESULT .*slowest_ms=\([0-9]*\).*/\1/p')
	[ -n "$slowest" ] && [ "$slowest" -lt 2000 ] || {
		echo "$out"
		fail "$prog: its slowest 128 MiB copy took ${slowest:-?} ms (a stall at a slot end?)"
	}
	sum=$(echo "$out" | sed -n 's/^RESULT .*\(checksum=[^ ]*\).*/\1/p')
	[ -z "$want" ] || [ "$sum" = "$want" ] || fail "$prog computed $sum, the shared build $want"
	want=$sum
done
if grep -q "which xgpu does not support" "$XGPUD_LOG"; then
	grep "which xgpu does not support" "$XGPUD_LOG"
	fail "a sample called an unsupported function"
fi
stop_xgpud
