#!/usr/bin/env bash
# tests/samples/: one small sample-style program per feature (host callbacks,
# the small calls, cooperative launches, large kernel parameters), each built
# with -cudart shared (through xgpu's libcudart.so.13) and with nvcc's
# default static runtime (NVIDIA's runtime over xgpu's libcuda.so.1), plus
# drvsample, the driver API's forms. Every program verifies its own results
# (the kernels' host implementations are tests/samples/*_simk.c) and both
# builds must compute the same checksum.
. "$(dirname "$0")/lib.bash"
start_xgpud

S=$B/tests/samples
for name in trivial callbacks cooperative largeparam; do
	want=
	for prog in "$S/$name" "$S/static/$name"; do
		out=$(run_cuda "$prog" 2>&1) || {
			echo "$out"
			fail "$prog failed"
		}
		check_clean <(echo "$out") "$prog"
		echo "$out" | tail -n 1
		echo "$out" | grep -q "^RESULT $name verified=yes" || {
			echo "$out"
			fail "$prog did not verify its results"
		}
		sum=$(echo "$out" | sed -n 's/^RESULT .*\(checksum=[^ ]*\).*/\1/p')
		[ -z "$want" ] || [ "$sum" = "$want" ] || fail "$prog computed $sum, the shared build $want"
		want=$sum
	done
done

out=$(run_cuda "$S/drvsample" "$B/tests/data/drvsample_kernels.fatbin" 2>&1) || {
	echo "$out"
	fail "drvsample failed"
}
check_clean <(echo "$out") drvsample
echo "$out" | tail -n 1
echo "$out" | grep -q "^RESULT drvsample verified=yes" || fail "drvsample did not verify its results"

# The refusals were the daemon's, and said why; nothing else was refused as
# unsupported.
grep -q "cooperative launch refused: .* blocks, at most .* fit on the device at once" "$XGPUD_LOG" ||
	fail "the daemon did not log the too-large cooperative launch"
if grep -q "which xgpu does not support" "$XGPUD_LOG"; then
	grep "which xgpu does not support" "$XGPUD_LOG"
	fail "a sample called an unsupported function"
fi
dom=uid-$(id -u)
wait_for 10 dom_eq "$dom" channels 0 || fail "channels still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after every program exited"
stop_xgpud

# A kernel that faults with callbacks behind it: the stream callback gets the
# error as its status, the host function is not called. Without gating, so
# that enqueuing does not wait for the faulting kernel to have run.
start_xgpud --policy none
for prog in "$S/callbacks" "$S/static/callbacks"; do
	out=$(run_cuda "$prog" fault 2>&1) || {
		echo "$out"
		fail "$prog fault failed"
	}
	check_clean <(echo "$out") "$prog fault"
	echo "$out" | tail -n 1
	echo "$out" | grep -q "^RESULT callbacks-fault verified=yes" || fail "$prog fault did not verify"
done
grep -q "device context is broken by CUDA_ERROR_ILLEGAL_ADDRESS" "$XGPUD_LOG" ||
	fail "the daemon did not see the fault"
stop_xgpud
