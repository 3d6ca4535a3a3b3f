#!/usr/bin/env bash
# Pitched memory and 2D/3D copies end to end (tests/samples/pitch2d.cu):
# built with -cudart shared it runs on xgpu's libcudart.so.13, built with
# nvcc's default static runtime on NVIDIA's runtime over xgpu's libcuda.so.1
# (cuMemAllocPitch, cuMemcpy2D/3D, cuMemsetD2D8). Every copy kind must give
# the bytes the host computes, and the copies whose rows leave their
# allocation must be refused by the daemon (logged), which keeps serving.
. "$(dirname "$0")/lib.bash"
start_xgpud

for build in samples samples/static; do
	prog=$B/tests/$build/pitch2d
	out=$(run_cuda "$prog" 2>"$T/pitch2d.err") || {
		echo "$out"
		cat "$T/pitch2d.err"
		fail "$build/pitch2d failed"
	}
	echo "$out"
	check_clean "$T/pitch2d.err" "$build/pitch2d"
	if grep -E "is not supported by xgpu|is not implemented by xgpu" "$T/pitch2d.err"; then
		fail "$build/pitch2d called something xgpu does not offer (above)"
	fi
	echo "$out" | grep -q "^RESULT workload=pitch2d verified=yes" || fail "$build/pitch2d did not verify its results"
	note "$build/pitch2d: every copy kind verified"
done

grep -qE "MEMCPY_2D_DTOD refused: (src|dst) \[.*is not inside one of this process's allocations" "$XGPUD_LOG" ||
	fail "the daemon did not log refusing a 2D copy past its allocation"
grep -qE "MEMSET_2D refused: dst \[.*is not inside one of this process's allocations" "$XGPUD_LOG" ||
	fail "the daemon did not log refusing a 2D memset past its allocation"
stop_xgpud
