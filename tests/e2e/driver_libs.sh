#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NVIDIA's libraries through xgpu's libcuda.so.1 on the sim driver: a cuBLAS
# program (handle, stream, SetMatrix/GetMatrix, Sgemm, Snrm2, destroy) and a
# cuFFT one (a 1-D C2C plan, a stream, a forward transform, destroy), each
# built with nvcc's default static runtime and linked to NVIDIA's library.
# Every status must be SUCCESS, a matrix set must come back unchanged, and
# neither xgpu's libcuda.so.1 nor the daemon may report an unsupported call
# or a private table or slot it refused. The private tables each library
# asks for are compared with CUDA 13.0's (tests/data/exptab-*-cuda13.0.txt).
# The products are not judged: the sim driver has no host implementation
# of NVIDIA's kernels (it says so in its log, which is checked for the
# launches; a kernel whose PTX the interpreter runs is computed from it).
. "$(dirname "$0")/lib.bash"
start_xgpud

toolkit=$("${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')

# library NAME PROGRAM KERNEL: runs PROGRAM against xgpu's libcuda.so.1 and
# NVIDIA's library with tracing on; KERNEL (a regular expression) must be
# among the kernels the daemon launched.
library() {
	local name=$1 program=$2 kernel=$3
	XGPU_TRACE_EXPORT_TABLES=1 env LD_LIBRARY_PATH="$B/lib:${CUDA_HOME:-/usr/local/cuda}/lib64" \
		${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$program" >"$T/$name.out" 2>"$T/$name.err" || {
		cat "$T/$name.out" "$T/$name.err"
		fail "the $name program failed (a status that is not SUCCESS is its last line above)"
	}
	cat "$T/$name.out"
	check_clean "$T/$name.err" "$name"
	if grep -E "is not supported by xgpu|is not implemented by xgpu|is not one xgpu offers" "$T/$name.err"; then
		fail "$name called something xgpu does not offer (above)"
	fi
	sed -n 's/^xgpu-exptab: //p' "$T/$name.err" >"$T/$name.trace"
	diff -u <(grep -v '^#' "$SRC/tests/data/exptab-$name-cuda13.0.txt") "$T/$name.trace" ||
		fail "$name (CUDA $toolkit) asks for other private tables or slots than CUDA 13.0's (see docs/driver-frontend.md)"
	grep -qE "kernel $kernel.* has no host implementation" "$XGPUD_LOG" ||
		fail "$name: no launch of a kernel matching $kernel in the daemon's log"
	note "$name: every status SUCCESS, $(grep -c '^table' "$T/$name.trace") tables, $(grep -c '^slot' "$T/$name.trace") slots, as CUDA 13.0's"
}

library cublas "$B/tests/data/exptab_cublas" '_Z[0-9]+gemm'
grep -q "^exptab_cublas: roundtrip same" "$T/cublas.out" || fail "cuBLAS: the matrix did not come back as set"
grep -q "^exptab_cublas: snrm2 0" "$T/cublas.out" || fail "cuBLAS: no Snrm2"
grep -qE "kernel _Z[0-9]+nrm2_kernel" "$XGPUD_LOG" || fail "cuBLAS: Snrm2 launched no kernel"
library cufft "$B/tests/data/libs_cufft" '_Z[0-9]+vector_fft'

# cuFFT in a program built with -cudart shared, with NVIDIA's libcudart.so.13
# in front of xgpu's libcuda.so.1.
nvrt=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13")
mkdir -p "$T/nvrt"
ln -sf "$nvrt" "$T/nvrt/libcudart.so.13"
ln -sf "$B/lib/libcuda.so.1" "$T/nvrt/libcuda.so.1"
env LD_LIBRARY_PATH="$T/nvrt:${CUDA_HOME:-/usr/local/cuda}/lib64" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
	"$B/tests/data/libs_cufft_shared" >"$T/cufft_shared.out" 2>"$T/cufft_shared.err" || {
	cat "$T/cufft_shared.out" "$T/cufft_shared.err"
	fail "cuFFT with NVIDIA's libcudart.so.13 over xgpu's libcuda.so.1 failed"
}
check_clean "$T/cufft_shared.err" "cuFFT (NVIDIA's libcudart.so.13)"
if grep -E "is not supported by xgpu|is not implemented by xgpu|is not one xgpu offers" "$T/cufft_shared.err"; then
	fail "cuFFT with NVIDIA's libcudart.so.13 called something xgpu does not offer (above)"
fi
note "cufft with NVIDIA's libcudart.so.13: every status SUCCESS"

# The same program with xgpu's own libcudart.so.13 in front: cuFFT calls the
# driver API directly and needs the context the runtime works in to be
# current, which xgpu's runtime makes the primary context, as NVIDIA's does.
env LD_LIBRARY_PATH="$B/lib:${CUDA_HOME:-/usr/local/cuda}/lib64" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
	"$B/tests/data/libs_cufft_shared" >"$T/cufft_ours.out" 2>"$T/cufft_ours.err" || {
	cat "$T/cufft_ours.out" "$T/cufft_ours.err"
	fail "cuFFT with xgpu's libcudart.so.13 failed (a status that is not SUCCESS is its last line above)"
}
check_clean "$T/cufft_ours.err" "cuFFT (xgpu's libcudart.so.13)"
if grep -E "is not supported by xgpu|is not implemented by xgpu|is not one xgpu offers" "$T/cufft_ours.err"; then
	fail "cuFFT with xgpu's libcudart.so.13 called something xgpu does not offer (above)"
fi
# cufftExecC2C answers CUFFT_EXEC_FAILED when its launch fails (as it did
# with no context current).
grep -q "^libs_cufft: exec_c2c 0" "$T/cufft_ours.out" || fail "cuFFT with xgpu's libcudart.so.13: no transform"
note "cufft with xgpu's libcudart.so.13: every status SUCCESS"

stop_xgpud
if grep -E "which xgpu does not support" "$XGPUD_LOG"; then
	fail "the daemon logged an unsupported call (above)"
fi
