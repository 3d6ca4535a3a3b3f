#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# xen.sh - make experiment's coupled loop on real Xen: Xen 4.17's credit
# scheduler with xgpu's schedule export (xen-sched-patch/build.sh), booted
# with sched=credit under QEMU's software CPU on 2 CPUs (tools/xen-testbed),
# xgpud --transport xen --executor sim --hyp-source xenpatch in dom0 and four
# PV domUs (equal GPU credits and CPU weights, one VCPU each: with dom0's two
# VCPUs, six on two PCPUs, Pegasus's oversubscribed CPU) each running
# guestload's coupled loop with spinning clients for EXP_SECONDS, once per
# policy of EXP_POLICIES (default "none xc augc cosched"), set live with
# xl-gpu policy. Prints each domU's loops/s, their sum, xgpud's CPU use and
# the schedule source xgpud's stats name (xenpatch, not a fallback); last
# line: xen-coupled-bs: none X xc X augc X cosched X.
#
#   tools/experiment/xen.sh [BUILD_DIR] (default build; make experiment-xen)
#
# EXP_XEN_CPU_MS / EXP_XEN_KERNEL_MS / EXP_XEN_BATCH (default 40 / 20 / 2):
# the loop. Its CPU phase is the thread's own CPU time and its kernels are
# modelled at their length, so neither stretches under QEMU; what does is
# each call's trip through the frontend, the grant ring, dom0 and the
# simulated driver. Measured with one domU alone (2 shared cores, chrt -i 0,
# 10 s each): the local experiment's 8 ms + 8 x 1 ms loop took 165 ms (6.1
# loops/s: some 150 ms of it in the 9 calls), 0 ms + 1 x 20 ms 84 ms (two
# calls, about 32 ms each beyond the kernel), 40 ms + 2 x 20 ms 179 ms,
# 80 ms + 4 x 20 ms 292 ms. So the default keeps the local loop's 1:1 of
# CPU and GPU time with fewer, longer kernels, the calls' cost below the
# work's. With the four domUs the GPU is still only about 45 % busy (11.3
# loops/s x 40 ms): the calls' latency, not the GPU, bounds the loop.
# First g1 runs alone with each loop of EXP_SOLO_LOOPS ("CPU MS BATCH;...";
# default: the loop, and the loop without CPU work; EXP_SOLO=0: none).
#
# EXP_SECONDS (default 20) per round; EXP_XEN_DOMU_MB (128) per domU;
# EXP_XEN_MEM (2048) QEMU's memory (dom0 takes 1024); EXP_XEN_TIMEOUT (s,
# default 600 + 12 x EXP_SECONDS x rounds) for the whole VM. Run it under
# chrt -i 0 on a shared machine: QEMU takes both cores.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-$repo/build}" && pwd)
secs=${EXP_SECONDS:-20}
cpu_ms=${EXP_XEN_CPU_MS:-40}
kernel_ms=${EXP_XEN_KERNEL_MS:-20}
batch=${EXP_XEN_BATCH:-2}
policies=${EXP_POLICIES:-none xc augc cosched}
solo_loops=
[ "${EXP_SOLO:-1}" = 0 ] || solo_loops=${EXP_SOLO_LOOPS:-$cpu_ms $kernel_ms $batch;0 $kernel_ms $batch}
read -r -a pols <<<"$policies"
rounds=$((${#pols[@]} + $(tr ';' '\n' <<<"$solo_loops" | grep -c . || true)))
tmo=${EXP_XEN_TIMEOUT:-$((600 + 12 * secs * rounds))}
XTB=$repo/tools/xen-testbed

for f in "$B/bin/xgpud" "$B/bin/xl-gpu" "$B/lib/libcudart.so.13" "$B/lib/libcuda.so.1" \
	"$B/tests/cuda/guestload" "$B/tests/simkernels/guestload.so"; do
	[ -e "$f" ] || { echo "xen.sh: $f missing: make all and make $f first" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/xgpu-expxen.XXXXXX")
trap 'rm -rf "$work"' EXIT

elf=$("$repo/xen-sched-patch/build.sh")
# One initramfs for the four domUs: guestload and the frontend (ours first
# on the library path, not the toolkit's libcudart).
"$XTB/mkinitrd.sh" domu -o "$work/domu-exp.cpio" --lib-path "$B/lib" \
	--file "$B/tests/cuda/guestload:/xgpu/bin/guestload" \
	--file "$B/lib/libcudart.so.13:/xgpu/lib/libcudart.so.13" \
	--file "$B/lib/libcuda.so.1:/xgpu/lib/libcuda.so.1" "$repo/tools/experiment/xen-domu.sh"

echo "4 PV domUs + dom0 (2 VCPUs) on 2 PCPUs of QEMU's software CPU, Xen credit scheduler + export"
echo "coupled loop: ${cpu_ms} ms CPU, then ${batch} x ${kernel_ms} ms kernels; ${secs} s per round; clients spin"
echo "host load average $(cut -d' ' -f1-3 /proc/loadavg); VM timeout ${tmo} s"
rc=0
"$XTB/boot.sh" --timeout "$tmo" --log "$work/serial.log" --xen-elf "$elf" --xen-args sched=credit \
	--smp 2 --mem "${EXP_XEN_MEM:-2048}" \
	--file "$B/bin/xgpud:/xgpu/bin/xgpud" --file "$B/bin/xl-gpu:/xgpu/bin/xl-gpu" --dir "$B/lib:/xgpu/lib" \
	--file "$B/tests/simkernels/guestload.so:/xgpu/lib/simkernels/guestload.so" \
	--file "$(command -v jq):/usr/bin/jq" --file "$work/domu-exp.cpio:/xtb/domu-exp.cpio" \
	--env XGPU_SIM_KERNELS=/xgpu/lib/simkernels --env "EXP_SECONDS=$secs" \
	--env "EXP_LOOP=$cpu_ms $kernel_ms $batch" --env "EXP_POLICIES=$policies" --env "EXP_SOLO_LOOPS=$solo_loops" \
	--env "EXP_DOMU_MB=${EXP_XEN_DOMU_MB:-128}" \
	"$repo/tools/experiment/xen-dom0.sh" | tee "$work/dom0.out" || rc=$?
if [ "$rc" != 0 ]; then
	[ -z "${EXP_XEN_KEEP_LOG:-}" ] || cp "$work/serial.log" "$EXP_XEN_KEEP_LOG"
	echo "xen.sh: the VM's script ended with status $rc (124: timed out, 125: no status)" >&2
	exit 1
fi

# field LINE KEY: KEY=value from a line.
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }
echo
printf '%-14s %-8s %9s %9s %9s %9s %9s %7s %7s  %s\n' round policy g1 g2 g3 g4 "sum" "ms/loop" "xgpud%" "schedule source"
summary=xen-coupled-bs:
while read -r _ name pol _; do
	vals=() sum=0 ms=0 k=0
	while read -r line; do
		v=$(field "$line" loops_per_s)
		vals+=("$v")
		sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { printf "%.2f", a + b }')
		ms=$(awk -v a="$ms" -v e="$(field "$line" elapsed_s)" -v l="$(field "$line" loops)" 'BEGIN { printf "%.1f", a + (l > 0 ? 1000 * e / l : 0) }')
		k=$((k + 1))
	done < <(grep "^EXP-RESULT $name $pol " "$work/dom0.out")
	while [ "${#vals[@]}" -lt 4 ]; do vals+=(-); done
	pl=$(grep "^EXP-POLICY $name $pol " "$work/dom0.out" | tail -n 1)
	printf '%-14s %-8s %9s %9s %9s %9s %9s %7s %7s  %s\n' "$name" "$pol" "${vals[@]}" "$sum" \
		"$(awk -v a="$ms" -v k="$k" 'BEGIN { printf "%.1f", a / k }')" "$(field "$pl" xgpud_cpu)" "$(field "$pl" hyp_source)"
	[ "$name" = coupled ] && summary+=" $pol $sum"
done < <(grep '^EXP-RESULT ' "$work/dom0.out" | awk '{ print $1, $2, $3 }' | uniq)
echo "$summary"
