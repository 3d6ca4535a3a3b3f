#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Managed memory (tests/samples/managed.cu): host and kernels take turns on
# cudaMallocManaged memory, __managed__ variables and cuMemAllocManaged
# memory, each round ending at another synchronisation point; built with
# -cudart shared (xgpu's runtime) and with nvcc's default static runtime
# (NVIDIA's runtime over xgpu's libcuda.so.1). Both builds must verify and
# compute the same checksum, and leave no memory held in the daemon.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/samples.bash"
start_xgpud

run_both_builds managed

# A segmentation fault outside managed memory still ends the program (by the
# signal, or through the sanitizer's handler, which ours hands it to).
for prog in "$S/managed" "$S/static/managed"; do
	rc=0
	out=$(run_cuda "$prog" crash 2>&1) || rc=$?
	grep -q "writing through a bad pointer" <<<"$out" || {
		echo "$out"
		fail "$prog crash did not get as far as the bad write"
	}
	! grep -q "survived a bad write" <<<"$out" || fail "$prog survived a write through a bad pointer"
	[ "$rc" -eq 139 ] || grep -q "AddressSanitizer: SEGV" <<<"$out" || {
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
	grep -q "^RESULT managed-taken verified=yes" <<<"$out" || {
		echo "$out"
		fail "$prog taken did not verify"
	}
	grep -q "cannot place managed memory at 0x3[0-9a-f]*000 .*: that address is taken in this process" <<<"$out" || {
		echo "$out"
		fail "$prog taken: the refusal did not name the address"
	}
done

no_unsupported_calls
nothing_left_held
stop_xgpud
