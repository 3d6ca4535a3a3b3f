#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pitched memory and 2D/3D copies end to end (tests/samples/pitch2d.cu):
# built with -cudart shared it runs on xgpu's libcudart.so.13, built with
# nvcc's default static runtime on NVIDIA's runtime over xgpu's libcuda.so.1
# (cuMemAllocPitch, cuMemcpy2D/3D, cuMemsetD2D8). Every copy kind must give
# the bytes the host computes, and the copies whose rows leave their
# allocation must be refused by the daemon (logged), which keeps serving.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/samples.bash"
start_xgpud

for prog in "$S/pitch2d" "$S/static/pitch2d"; do
	run_sample "$prog" workload=pitch2d
	no_foreign_calls "$prog"
	note "$prog: every copy kind verified"
done

grep -qE "MEMCPY_2D_DTOD refused: (src|dst) \[.*is not inside one of this process's allocations" "$XGPUD_LOG" ||
	fail "the daemon did not log refusing a 2D copy past its allocation"
grep -qE "MEMSET_2D refused: dst \[.*is not inside one of this process's allocations" "$XGPUD_LOG" ||
	fail "the daemon did not log refusing a 2D memset past its allocation"
stop_xgpud
