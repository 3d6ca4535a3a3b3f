#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The private export tables the installed toolkit's runtime asks xgpu's
# libcuda.so.1 for, and the slots it calls, traced (XGPU_TRACE_EXPORT_TABLES)
# and compared with what CUDA 13.0's runtime asks for
# (tests/data/exptab-cuda13.0.txt): another toolkit shows up here as a
# clear difference rather than as a program failing somewhere later. Both
# NVIDIA runtimes are traced: the static one nvcc links by default, and its
# libcudart.so.13 (in front of xgpu's libcuda.so.1, instead of ours).
# NVIDIA's libraries (cuBLAS, cuFFT) are traced by driver_libs.
. "$(dirname "$0")/lib.bash"
start_xgpud

expected=$SRC/tests/data/exptab-cuda13.0.txt
toolkit=$("${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')

# trace NAME PROGRAM...: runs PROGRAM with tracing on; the trace goes to $T/NAME.trace.
trace() {
	local name=$1 out
	shift
	out=$(XGPU_TRACE_EXPORT_TABLES=1 run_cuda "$@" 2>"$T/$name.err") || {
		echo "$out"
		cat "$T/$name.err"
		fail "$name failed"
	}
	grep -q "^RESULT .*verified=yes" <<<"$out" || fail "$name did not verify its results"
	check_clean "$T/$name.err" "$name"
	sed -n 's/^xgpu-exptab: //p' "$T/$name.err" >"$T/$name.trace"
	if ! diff -u <(grep -v '^#' "$expected") "$T/$name.trace"; then
		fail "the CUDA $toolkit runtime ($name) asks libcuda.so.1 for other private tables or slots than CUDA 13.0's, which xgpu implements (see docs/driver-frontend.md; the difference is above)"
	fi
	note "$name: $(grep -c '^table' "$T/$name.trace") tables, $(grep -c '^slot' "$T/$name.trace") slots, as CUDA 13.0's"
}

trace static "$B/bin/static/vectorAdd" -n 1000
trace rdc "$B/bin/rdc/vectorAdd" -n 1000

# NVIDIA's own libcudart.so.13 over xgpu's libcuda.so.1.
nvrt=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13")
mkdir -p "$T/nvrt"
ln -sf "$nvrt" "$T/nvrt/libcudart.so.13"
ln -sf "$B/lib/libcuda.so.1" "$T/nvrt/libcuda.so.1"
XGPU_TRACE_EXPORT_TABLES=1 env LD_LIBRARY_PATH="$T/nvrt" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
	"$B/bin/vectorAdd" -n 1000 >"$T/shared.out" 2>"$T/shared.err" || {
	cat "$T/shared.out" "$T/shared.err"
	fail "NVIDIA's libcudart.so.13 over xgpu's libcuda.so.1 failed"
}
grep -q "^RESULT .*verified=yes" "$T/shared.out" || fail "NVIDIA's libcudart.so.13 run did not verify its results"
check_clean "$T/shared.err" "NVIDIA's libcudart.so.13"
sed -n 's/^xgpu-exptab: //p' "$T/shared.err" >"$T/shared.trace"
diff -u <(grep -v '^#' "$expected") "$T/shared.trace" ||
	fail "NVIDIA's libcudart.so.13 (CUDA $toolkit) asks for other private tables or slots than CUDA 13.0's"

stop_xgpud
