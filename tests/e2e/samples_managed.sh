#!/usr/bin/env bash
# Managed memory (tests/samples/managed.cu): host and kernels take turns on
# cudaMallocManaged memory, __managed__ variables and cuMemAllocManaged
# memory, each round ending at another synchronisation point; built with
# -cudart shared (xgpu's runtime) and with nvcc's default static runtime
# (NVIDIA's runtime over xgpu's libcuda.so.1). Both builds must verify and
# compute the same checksum, and leave no memory held in the daemon.
. "$(dirname "$0")/lib.bash"
start_xgpud

S=$B/tests/samples
want=
for prog in "$S/managed" "$S/static/managed"; do
	out=$(run_cuda "$prog" 2>&1) || {
		echo "$out"
		fail "$prog failed"
	}
	check_clean <(echo "$out") "$prog"
	echo "$out" | tail -n 1
	echo "$out" | grep -q "^RESULT managed verified=yes" || {
		echo "$out"
		fail "$prog did not verify its results"
	}
	sum=$(echo "$out" | sed -n 's/^RESULT .*\(checksum=[^ ]*\).*/\1/p')
	[ -z "$want" ] || [ "$sum" = "$want" ] || fail "$prog computed $sum, the shared build $want"
	want=$sum
done

# A segmentation fault outside managed memory still ends the program (by the
# signal, or through the sanitizer's handler, which ours hands it to).
for prog in "$S/managed" "$S/static/managed"; do
	rc=0
	out=$(run_cuda "$prog" crash 2>&1) || rc=$?
	echo "$out" | grep -q "writing through a bad pointer" || {
		echo "$out"
		fail "$prog crash did not get as far as the bad write"
	}
	! echo "$out" | grep -q "survived a bad write" || fail "$prog survived a write through a bad pointer"
	[ "$rc" -eq 139 ] || echo "$out" | grep -q "AddressSanitizer: SEGV" || {
		echo "$out"
		fail "$prog crash: exit $rc, neither the signal nor the sanitizer's report"
	}
	echo "$prog crash: exit $rc"
done

# The guest already uses the address the daemon allocated at: refused with
# the address named, and the daemon's allocation given back (checked below).
for prog in "$S/managed" "$S/static/managed"; do
	out=$(run_cuda "$prog" taken 2>&1) || {
		echo "$out"
		fail "$prog taken failed"
	}
	echo "$out" | grep -q "^RESULT managed-taken verified=yes" || {
		echo "$out"
		fail "$prog taken did not verify"
	}
	echo "$out" | grep -q "cannot place managed memory at 0x3[0-9a-f]*000 .*: that address is taken in this process" || {
		echo "$out"
		fail "$prog taken: the refusal did not name the address"
	}
done

if grep -q "which xgpu does not support" "$XGPUD_LOG"; then
	grep "which xgpu does not support" "$XGPUD_LOG"
	fail "the sample called an unsupported function"
fi
dom=uid-$(id -u)
wait_for 10 dom_eq "$dom" channels 0 || fail "channels still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after every program exited"
stop_xgpud
