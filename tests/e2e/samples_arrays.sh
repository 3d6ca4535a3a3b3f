#!/usr/bin/env bash
# CUDA arrays end to end (tests/samples/arrays.cu):
# built with -cudart shared it runs on xgpu's libcudart.so.13, built with
# nvcc's default static runtime on NVIDIA's runtime over xgpu's libcuda.so.1
# (cuArray3DCreate, cuMemcpy2D/3D with CU_MEMORYTYPE_ARRAY). Every copy must
# give the bytes the host computes, and the copies past an array's end must
# be refused by the daemon (logged), which keeps serving.
. "$(dirname "$0")/lib.bash"
start_xgpud

for build in samples samples/static; do
	prog=$B/tests/$build/arrays
	out=$(run_cuda "$prog" 2>"$T/arrays.err") || {
		echo "$out"
		cat "$T/arrays.err"
		fail "$build/arrays failed"
	}
	echo "$out"
	check_clean "$T/arrays.err" "$build/arrays"
	if grep -E "is not supported by xgpu|is not implemented by xgpu" "$T/arrays.err"; then
		fail "$build/arrays called something xgpu does not offer (above)"
	fi
	echo "$out" | grep -q "^RESULT workload=arrays verified=yes" || fail "$build/arrays did not verify its results"
	note "$build/arrays: every copy kind verified"
done

grep -qE "ARRAY_COPY refused: (src|dst) box .* lies outside its array" "$XGPUD_LOG" ||
	fail "the daemon did not log refusing a copy past an array's end"
stop_xgpud
