#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CUDA 13's driver API beyond driver_api's, end to end through a real daemon
# (sim executor): tests/cuda/drvapi13.c sweeps cuCtxCreate with
# CUctxCreateParams and every context call of CUDA 13, every launch attribute
# of cuLaunchKernelEx, cuStreamAttachMemAsync, and virtual memory management
# (cuMemCreate / cuMemAddressReserve / cuMemMap / cuMemSetAccess in both
# orders of release and unmap), graph host nodes, the generic cuGraphAddNode
# (programmatic edges, node priorities), IPC memory and event handles
# (a forked second process of the domain), a __managed__ module variable
# through cuModuleGetGlobal, cuDevicePrimaryCtxReset, and the JIT linker (one image passed through;
# a relocatable cubin and a PTX calling into it linked by nvJitLink), checking
# results. What xgpu refuses is
# refused by name, with its reason, on stderr and in the daemon's log; the
# process's VMM objects are released with it; cuMemCreate counts against the
# domain's memory limit.
. "$(dirname "$0")/lib.bash"
start_xgpud

data=$B/tests/data
out=$(run_cuda "$B/tests/cuda/drvapi13" "$data/drvapi_kernels.fatbin" "$data/drvapi_kernels_rdc.cubin" \
	"$data/link_extra.ptx" 2>"$T/drvapi13.err") || {
	echo "$out"
	cat "$T/drvapi13.err"
	fail "drvapi13 failed"
}
echo "$out"
check_clean "$T/drvapi13.err" drvapi13
grep -q "^drvapi13: OK" <<<"$out" || fail "drvapi13 did not verify its results"

# Each refusal names the call and the reason, on stderr and in the log.
for msg in \
	"cuCtxCreate with execution affinity (CUctxCreateParams.execAffinityParams)" \
	"cuCtxCreate in CUDA-in-graphics mode" \
	"cuCtxGetDevResource (green contexts" \
	"cuLaunchKernelEx (launch attribute 13: device-updatable kernel nodes" \
	"cuLaunchKernelEx (launch attribute 15: not one CUDA 13.0 defines)" \
	"virtual memory management of host memory" \
	"cuMemExportToShareableHandle (the memory lives in the domain's executor process" \
	"cuMemSetAccess read-only (CU_MEM_ACCESS_FLAGS_PROT_READ)" \
	"cuGraphInstantiate of a child graph holding a host node" \
	"cuDevicePrimaryCtxReset while a context made by cuCtxCreate lives" \
	"cuGraphAddNode (batch memory operation nodes)" \
	"cuGraphInstantiate (with auto-free or device-launch flags)"; do
	grep -qF "$msg" "$T/drvapi13.err" || {
		cat "$T/drvapi13.err"
		fail "stderr does not name: $msg"
	}
	grep -qF "called $msg" "$XGPUD_LOG" || fail "the daemon log does not name: $msg"
done
# The daemon checked the guest's cluster shapes itself, before its driver.
for shape in "cluster 3x1x1, grid 16x1x1, at most 8" "cluster 16x1x1, grid 16x1x1, at most 8" \
	"cluster 32x1x1, grid 16x1x1, at most 16"; do
	grep -qF "cluster launch refused: $shape blocks a cluster" "$XGPUD_LOG" ||
		fail "the daemon did not refuse the cluster launch: $shape"
done
# Nothing else was refused.
if grep -v -F -e "cuCtxCreate with" -e "cuCtxCreate in" -e "cuCtxGetDevResource" -e "launch attribute" \
	-e "host memory" -e "cuMemExportToShareableHandle" -e "read-only" -e "holding a host node" \
	-e "cuDevicePrimaryCtxReset while" -e "cuGraphAddNode (batch memory" -e "cuGraphInstantiate (with auto-free" \
	"$T/drvapi13.err" |
	grep -q "not supported by xgpu"; then
	cat "$T/drvapi13.err"
	fail "an unexpected call was refused"
fi

# The runtime's forms (tests/cuda/rt13.cu): through xgpu's libcudart.so.13,
# and through NVIDIA's static runtime (with and without -rdc) onto ours.
for v in rt13 static/rt13 rdc/rt13; do
	out=$(run_cuda "$B/tests/cuda/$v" 2>"$T/rt13.err") || {
		echo "$out"
		cat "$T/rt13.err"
		fail "$v failed"
	}
	check_clean "$T/rt13.err" "$v"
	grep -q "^RESULT workload=rt13 verified=yes" <<<"$out" || fail "$v did not verify its results"
done

# The daemon served the VMM calls and released what the program left mapped.
grep -q "VMM_SET_ACCESS refused: range not made of whole mappings\|cuMemcpyHtoD.*refused\|MEMCPY_HTOD.*refused\|refused: dst" "$XGPUD_LOG" ||
	note "(no refusal logged for the copy before cuMemSetAccess)"
grep -q "1 reserved ranges" "$XGPUD_LOG" || fail "the process's reservation was not released with it"
dom=uid-$(id -u)
wait_for 10 dom_eq "$dom" channels 0 || fail "channel still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after the program exited"
stop_xgpud

# cuMemCreate counts against the domain's memory limit.
start_xgpud --mem-limit 64M
out=$(run_cuda "$B/tests/cuda/drvapi13" "$data/drvapi_kernels.fatbin" limit $((64 << 20)) 2>&1) || {
	echo "$out"
	fail "drvapi13 limit failed"
}
grep -q "^drvapi13: limit OK" <<<"$out" || fail "cuMemCreate was not held to the memory limit"
grep -q "cuMemCreate of .* refused: the domain holds" "$XGPUD_LOG" || fail "the refused cuMemCreate was not logged"
stop_xgpud

# A fatbin as large as NCCL's once inflated (576 MiB more than its kernels):
# past the daemon's default bound it is refused, by name; with xgpud's
# --fatbin-inflate-limit above it, it loads and its kernel runs. The guest's
# frontend applies its own, larger bound.
"$B/tests/tools/bigfatbin" "$data/drvapi_kernels.fatbin" 9 "$T/big.fatbin" >/dev/null || fail "bigfatbin"
start_xgpud
if out=$(run_cuda "$B/tests/cuda/drvapi13" "$T/big.fatbin" load 2>&1); then
	echo "$out"
	fail "a fatbin inflating past the default bound loaded"
fi
grep -q "compressed entries inflate to more than 512 MiB in all (the bound is xgpud's --fatbin-inflate-limit" "$XGPUD_LOG" ||
	fail "the refused fatbin was not named with its bound"
stop_xgpud
start_xgpud --fatbin-inflate-limit 1G
out=$(run_cuda "$B/tests/cuda/drvapi13" "$T/big.fatbin" load 2>&1) || {
	echo "$out"
	fail "a fatbin within --fatbin-inflate-limit did not load"
}
grep -q "^drvapi13: load OK" <<<"$out" || fail "the large fatbin's kernel did not run"
grep -q -- "--fatbin-inflate-limit 1073741824" <(ps -o args= -C xgpu-executor 2>/dev/null; cat "$XGPUD_LOG") ||
	note "(the executor's arguments were not seen)"
stop_xgpud
