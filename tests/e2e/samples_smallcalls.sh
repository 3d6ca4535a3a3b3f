#!/usr/bin/env bash
# tests/samples/smallcalls.cu: the small calls for one device (peers, PCI
# bus ids, peer copies, stream ids and attribute copies, no-op
# configuration), built with -cudart shared and with nvcc's default static
# runtime (NVIDIA's runtime over xgpu's libcuda.so.1); both verify their
# results, compute the same checksum and call nothing unsupported.
. "$(dirname "$0")/lib.bash"
start_xgpud

S=$B/tests/samples
want=
for prog in "$S/smallcalls" "$S/static/smallcalls"; do
	out=$(run_cuda "$prog" 2>&1) || {
		echo "$out"
		fail "$prog failed"
	}
	check_clean <(echo "$out") "$prog"
	echo "$out" | tail -n 1
	echo "$out" | grep -q "^RESULT smallcalls verified=yes" || {
		echo "$out"
		fail "$prog did not verify its results"
	}
	sum=$(echo "$out" | sed -n 's/^RESULT .*\(checksum=[^ ]*\).*/\1/p')
	[ -z "$want" ] || [ "$sum" = "$want" ] || fail "$prog computed $sum, the shared build $want"
	want=$sum
done
if grep -q "which xgpu does not support" "$XGPUD_LOG"; then
	grep "which xgpu does not support" "$XGPUD_LOG"
	fail "the sample called an unsupported function"
fi
stop_xgpud
