#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NVIDIA's CUDA runtime of every release from 12.0 to the newest 13.x on PyPI
# (tests/data/runtime-releases.txt), each as a program built -cudart shared
# would load it, over xgpu's libcuda.so.1 on the sim driver: the loader finds
# the release's libcudart first and xgpu's libcuda.so.1 behind it.
# tests/cuda/rtmatrix.c opens the runtime by name and registers its kernels as
# nvcc's host code does, so each release runs its own start-up (private tables,
# integrity check, entry points, module load) and launch path; the kernels'
# results are checked (host implementations in simdrv_kernels_simk.c); each
# 13.x release also runs two workloads nvcc built with -cudart shared. The
# tables and slots each release asks for are compared with
# tests/data/exptab-runtime/RELEASE.txt, and neither the frontend nor the
# daemon may report a call or table it refused.
#
# The runtimes come from PyPI through tools/install-deps.sh --runtimes, into
# $XGPU_RUNTIMES_DIR (build/runtimes by default; kept between runs). When
# none can be had (no network and an empty cache) the test says so and skips;
# when only some can, it fails naming the others.
. "$(dirname "$0")/lib.bash"

cache=${XGPU_RUNTIMES_DIR:-$SRC/build/runtimes}
list=$SRC/tests/data/runtime-releases.txt
releases=$(awk '!/^#/ && NF { print $1 }' "$list")
if ! "$SRC/tools/install-deps.sh" --runtimes "$cache" >"$T/fetch.log" 2>&1; then
	cat "$T/fetch.log"
	have=0
	for r in $releases; do
		compgen -G "$cache/$r/libcudart.so.*" >/dev/null && have=$((have + 1))
	done
	if [ "$have" -eq 0 ]; then
		echo "SKIPPED: no CUDA runtime wheel could be fetched from PyPI (no network?) and $cache holds none"
		exit 0
	fi
	fail "only $have of the runtimes in tests/data/runtime-releases.txt could be had (above)"
fi

export XGPU_SIM_KERNELS=$XGPU_SIM_KERNELS:$B/tests/data/simk
start_xgpud
fatbin=$B/tests/data/simdrv_kernels.fatbin
passed=0
for r in $releases; do
	lib=$(compgen -G "$cache/$r/libcudart.so.*" | head -n 1)
	XGPU_TRACE_EXPORT_TABLES=1 env LD_LIBRARY_PATH="$cache/$r:$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
		"$B/tests/cuda/rtmatrix" "$lib" "$fatbin" >"$T/$r.out" 2>"$T/$r.err" || {
		cat "$T/$r.out" "$T/$r.err"
		fail "CUDA $r's runtime over xgpu's libcuda.so.1 failed (above)"
	}
	check_clean "$T/$r.err" "CUDA $r"
	if grep -E "is not supported by xgpu|is not implemented by xgpu|is not one xgpu offers|which xgpu does not know" "$T/$r.err"; then
		fail "CUDA $r's runtime called something xgpu does not offer (above)"
	fi
	want=$(awk -F. '{ print $1 * 1000 + $2 * 10 }' <<<"$r")
	grep -q "^rtmatrix: runtime $want driver 13000: OK" "$T/$r.out" || {
		cat "$T/$r.out"
		fail "CUDA $r: the runtime did not report version $want, or not OK"
	}
	sed -n 's/^xgpu-exptab: //p' "$T/$r.err" >"$T/$r.trace"
	diff -u <(grep -v '^#' "$SRC/tests/data/exptab-runtime/$r.txt") "$T/$r.trace" ||
		fail "CUDA $r's runtime asks for other private tables, slots or integrity versions than recorded in tests/data/exptab-runtime/$r.txt (docs/driver-frontend.md)"
	note "CUDA $r ($(basename "$lib")): $(sed -n 's/^rtmatrix: //p' "$T/$r.out"); $(grep -c '^table' "$T/$r.trace") tables, $(grep -c '^slot' "$T/$r.trace") slots, integrity $(sed -n 's/^integrity //p' "$T/$r.trace" | tr '\n' ' ')"
	# A 13.x runtime also runs what nvcc built with -cudart shared (here
	# against CUDA 13.0's headers): the loader takes the release's
	# libcudart.so.13 for the program's, its registration code unchanged.
	if [ "${lib##*.so.}" = 13 ]; then
		for prog in vectorAdd BlackScholes; do
			env LD_LIBRARY_PATH="$cache/$r:$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
				LD_DEBUG=libs LD_DEBUG_OUTPUT="$T/$r-$prog.ld" "$B/bin/$prog" -n 64K >"$T/$r-$prog.out" 2>"$T/$r-$prog.err" || {
				cat "$T/$r-$prog.out" "$T/$r-$prog.err"
				fail "$prog (-cudart shared) with CUDA $r's libcudart.so.13 failed"
			}
			check_clean "$T/$r-$prog.err" "$prog with CUDA $r"
			grep -q "^RESULT .*verified=yes" "$T/$r-$prog.out" || fail "$prog with CUDA $r did not verify its results"
			grep -qs "calling init: $cache/$r/libcudart.so.13" "$T/$r-$prog.ld".* ||
				fail "$prog did not load CUDA $r's libcudart.so.13"
		done
		note "CUDA $r: vectorAdd and BlackScholes (-cudart shared) verified"
	fi
	passed=$((passed + 1))
done
stop_xgpud
if grep -E "which xgpu does not support" "$XGPUD_LOG"; then
	fail "the daemon logged an unsupported call (above)"
fi
note "$passed CUDA runtimes, 12.0 to $(tail -n 1 <<<"$releases"), pass over xgpu's libcuda.so.1"
