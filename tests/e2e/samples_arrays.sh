#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CUDA arrays end to end (tests/samples/arrays.cu):
# built with -cudart shared it runs on xgpu's libcudart.so.13, built with
# nvcc's default static runtime on NVIDIA's runtime over xgpu's libcuda.so.1
# (cuArray3DCreate, cuMemcpy2D/3D with CU_MEMORYTYPE_ARRAY). Every copy must
# give the bytes the host computes, and the copies past an array's end must
# be refused by the daemon (logged), which keeps serving.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/samples.bash"
start_xgpud

for prog in "$S/arrays" "$S/static/arrays"; do
	run_sample "$prog" workload=arrays
	no_foreign_calls "$prog"
	note "$prog: every copy kind verified"
done

grep -qE "ARRAY_COPY refused: (src|dst) box .* lies outside its array" "$XGPUD_LOG" ||
	fail "the daemon did not log refusing a copy past an array's end"
stop_xgpud
