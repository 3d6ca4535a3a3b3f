#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Programs built as most CUDA software is, with nvcc's default static
# runtime (bin/static/, tests/cuda/static/) and with relocatable device code
# (bin/rdc/, tests/cuda/rdc/: -rdc=true, what CMake's
# CUDA_SEPARABLE_COMPILATION builds), run unchanged through xgpu's
# libcuda.so.1 and a real daemon (sim executor): NVIDIA's runtime inside each
# program accepts our private tables (docs/driver-frontend.md), loads its
# fatbin with cuLibraryLoadData and launches through cuLibraryGetKernel. Each
# program verifies its results, and computes what the -cudart shared build
# of the same program computes through xgpu's libcudart.so.13.
. "$(dirname "$0")/lib.bash"
start_xgpud

# run_ok NAME BUILT_SHARED ARGS...: runs the static and rdc builds, checks
# each verified its results and printed the shared build's checksum.
run_ok() {
	local shared=$1 out want
	shift
	want=$(run_cuda "$shared" "$@" 2>&1 | sed -n 's/^RESULT .*verified=yes.*\(checksum=[^ ]*\).*/\1/p')
	for kind in static rdc; do
		local prog
		prog=$(dirname "$shared")/$kind/$(basename "$shared")
		out=$(run_cuda "$prog" "$@" 2>&1) || {
			echo "$out"
			fail "$prog $* failed"
		}
		check_clean <(echo "$out") "$prog"
		echo "$out" | tail -n 1
		grep -q "^RESULT .*verified=yes" <<<"$out" || {
			echo "$out"
			fail "$prog $* did not verify its results"
		}
		if [ -n "$want" ]; then
			grep -q "^RESULT .*$want" <<<"$out" ||
				fail "$prog $* computed another checksum than the -cudart shared build ($want)"
		fi
	done
}

# First: the daemon's warnings are rate-limited per domain, and errors logs many.
run_ok "$B/tests/cuda/unsupported"
run_ok "$B/bin/vectorAdd" -n 200000 -i 3
run_ok "$B/bin/BlackScholes" -n 200000 -i 4
run_ok "$B/bin/callLatency" -i 100
run_ok "$B/tests/cuda/userapp"
run_ok "$B/tests/cuda/errors"
run_ok "$B/tests/cuda/mixed"
# Threads, and a fork whose child computes on a channel of its own: the
# driver frontend loads the parent's libraries again there.
run_ok "$B/tests/cuda/threads"

# Relocatable device code with -cudart shared: xgpu's libcudart.so.13 loads
# the device-linked fatbin (wrapper version 2) that nvcc's link step made, and
# computes what the shared build computes.
want=$(run_cuda "$B/bin/vectorAdd" -n 1000 2>&1 | sed -n 's/^RESULT .*verified=yes.*\(checksum=[^ ]*\).*/\1/p')
out=$(run_cuda "$B/bin/rdc-shared/vectorAdd" -n 1000 2>&1) || {
	echo "$out"
	fail "the -rdc=true -cudart shared vectorAdd failed through xgpu's libcudart.so.13"
}
grep -q "^RESULT .*verified=yes.*$want" <<<"$out" || {
	echo "$out"
	fail "the -rdc=true -cudart shared vectorAdd did not compute the shared build's $want"
}

# Nothing but the program's own unsupported calls was refused, and the
# daemon saw the work.
grep -q "called cuGraphicsUnregisterResource, which xgpu does not support" "$XGPUD_LOG" ||
	fail "the daemon log does not name the unsupported driver call"
dom=uid-$(id -u)
[ "$(dom_stat "$dom" calls)" -gt 100 ] || fail "too few calls recorded"
wait_for 10 dom_eq "$dom" channels 0 || fail "channels still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after every program exited"
stop_xgpud

# The domain's budgets hold for them too: page-locked memory (cuMemHostAlloc),
# the device heap (cuCtxSetLimit) and a library's device variables
# (cuLibraryLoadData, before the runtime makes a context current).
start_xgpud --mem-limit 64M --pinned-limit 8M
run_ok "$B/tests/cuda/bigglobal" # before limits, whose refusals use up the warnings
run_ok "$B/tests/cuda/limits"
grep -q "pinned allocation of 16.0 MiB refused" "$XGPUD_LOG" || fail "pinned refusal not logged"
grep -qE "module refused: its variables need 13421[0-9]{4} bytes" "$XGPUD_LOG" || fail "module charge not logged"
stop_xgpud
