#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The simulated driver's PTX interpreter: tests/cuda/ptx_conformance (kernels
# with no host implementation, one or more per PTX instruction family, each
# checked against a host reference) runs through xgpu on the sim daemon and
# must verify every result; an out-of-bounds store in a guest kernel raises
# CUDA_ERROR_ILLEGAL_ADDRESS as the driver's own fault; with XGPU_SIM_PTX=off
# the same program computes nothing and fails its checks (so the suite can
# fail); XGPU_SIM_PTX=strict still runs it (every kernel is covered); the
# bundled workloads with no host implementations (XGPU_SIM_KERNELS=none) give
# the checksums their host implementations give, and the test programs that
# still ship one verify without it.
. "$(dirname "$0")/lib.bash"
P=$B/tests/cuda/ptx_conformance

run_ok() {
	local out
	out=$(run_cuda "$@" 2>&1) || { echo "$out"; fail "$* failed"; }
	echo "$out" | tail -n 3
	grep -q "^RESULT .*verified=yes" <<<"$out" || fail "$* did not verify its results"
}

XGPU_SIM_PTX=strict start_xgpud
for v in "$P" "$B/tests/cuda/ptx_conformance-compressed" "$B/tests/cuda/static/ptx_conformance"; do
	run_ok "$v"
done
if grep -q "PTX interpreter: kernel .*k_" "$XGPUD_LOG"; then
	grep "PTX interpreter" "$XGPUD_LOG"
	fail "the interpreter refused a conformance kernel"
fi
grep "computes nothing" "$XGPUD_LOG" && fail "a conformance kernel went uncomputed"
grep -q "kernel _Z7k_int32PKiS0_Pii has no host implementation: computed from its PTX" "$XGPUD_LOG" ||
	fail "the daemon's log does not say the kernels were interpreted"

note "a guest kernel's out-of-bounds store"
out=$(run_cuda "$P" --fault 2>&1) || { echo "$out"; fail "--fault did not see cudaErrorIllegalAddress"; }
echo "$out" | tail -n 1
grep -q "kernel _Z5k_oobPii faulted: out-of-bounds global write" "$XGPUD_LOG" ||
	fail "the fault was not logged with its address"

# A failed device assert is sticky like a fault: the domain's executor ends,
# and the domain's next program (the checksums below) gets a new one.
note "a guest kernel's failed assert"
out=$(run_cuda "$P" --assert 2>&1) || { echo "$out"; fail "--assert did not see cudaErrorAssert"; }
echo "$out" | grep "^assert:"
wait_for 10 grep -q "executor pid .* exited with status 3: its context failed with CUDA_ERROR_ASSERT" "$XGPUD_LOG" ||
	fail "the failed assert did not end the domain's executor"

# The bundled workloads' checksums with their host implementations.
checksum() {
	local out
	out=$(run_cuda "$@" 2>&1) || { echo "$out"; fail "$* failed"; }
	grep -q "^RESULT .*verified=yes" <<<"$out" || { echo "$out"; fail "$* did not verify its results"; }
	sed -n 's/^RESULT .*checksum=\([^ ]*\).*/\1/p' <<<"$out"
}
va_host=$(checksum "$B/bin/vectorAdd" -n 100000 -i 1)
ua_host=$(checksum "$B/tests/cuda/userapp-compressed" -n 4096)

note "speed"
t0=$(date +%s%N)
run_ok "$P" --bench 2000000
t1=$(date +%s%N)
stop_xgpud
note "saxpy over 2M elements through xgpu: $(((t1 - t0) / 1000000)) ms"
rate=$(sed -n 's/.*kernel _Z7k_saxpy.*thread-instructions interpreted in .* (\(.*\) M\/s).*/\1/p' "$XGPUD_LOG" | tail -1)
[ -n "$rate" ] || fail "the daemon's log has no interpreter rate for the saxpy kernel"
note "interpreter: $rate M thread-instructions/s (this build's; -O2 without sanitizers: test_ptx)"

note "the bundled workloads without host implementations (XGPU_SIM_KERNELS=none)"
XGPU_SIM_KERNELS=none start_xgpud
va=$(checksum "$B/bin/vectorAdd" -n 100000 -i 1)
ua=$(checksum "$B/tests/cuda/userapp-compressed" -n 4096)
[ "$va" = "$va_host" ] || fail "vectorAdd interpreted: checksum $va, with its host implementation $va_host"
[ "$ua" = "$ua_host" ] || fail "userapp interpreted: checksum $ua, with its host implementation $ua_host"
grep -q "kernel _Z9vectorAdd.* computed from its PTX" "$XGPUD_LOG" || fail "vectorAdd was not interpreted"
note "vectorAdd $va, userapp $ua: as with their host implementations"
# The test programs whose host implementations stay for other reasons (their
# -rdc builds carry no PTX; mp_slow's modeled time) verify from their PTX too;
# errors' faults are then the interpreter's own.
for p in tests/cuda/threads tests/cuda/rt13 tests/cuda/errors tests/cuda/mixed tests/samples/mempool; do
	out=$(run_cuda "$B/$p" 2>&1) || { echo "$out"; fail "$p failed without host implementations"; }
	grep -qE "^RESULT .*verified=yes" <<<"$out" || { echo "$out"; fail "$p did not verify without host implementations"; }
done
grep -q "kernel _Z4pokePii has no host implementation: computed from its PTX" "$XGPUD_LOG" ||
	fail "errors' kernels were not interpreted"
note "threads, rt13, errors, mixed and mempool verify from their PTX alone"
stop_xgpud

note "XGPU_SIM_PTX=off computes nothing"
XGPU_SIM_PTX=off start_xgpud
if out=$(run_cuda "$P" 2>&1); then
	echo "$out"
	fail "the conformance suite passed with the interpreter off: it cannot fail"
fi
grep -q "^RESULT .*verified=no" <<<"$out" || { echo "$out"; fail "no RESULT line with the interpreter off"; }
stop_xgpud
