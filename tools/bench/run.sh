#!/usr/bin/env bash
# run.sh - `make bench`: runs xgpu-bench against a private xgpud (release
# build, sim executor unless a GPU is usable) and writes the tables to
# docs/results/bench-local.md. Every figure sits beside a floor or a memcpy
# measured in the same run, because absolute numbers from a shared VM mean
# little on their own.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${BENCH_OUT:-$src/docs/results/bench-local.md}
work=$(mktemp -d "${TMPDIR:-/tmp}/xgpu-bench.XXXXXX")
export XGPU_SOCKET=$work/xgpud.sock
daemon=
stop() {
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
		daemon=
	fi
}
trap 'stop; rm -rf "$work"' EXIT

# With two or more CPUs the daemon runs on CPU 1 and the client on CPU 0, the
# pair the ping-pong floor is measured on.
pin_daemon=()
[ "$(nproc)" -gt 1 ] && pin_daemon=(taskset -c 1)
start() {
	"${pin_daemon[@]}" "$B/bin/xgpud" --foreground --policy none "$@" >>"$work/xgpud.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do
		"$B/bin/xl-gpu" list >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat "$work/xgpud.log"
	exit 1
}

echo "bench: floors"
"$B/bin/xgpu-bench" floors >"$work/r"
echo "bench: null-call round trip, spinning"
start --spin-us 1000
XGPU_SPIN_US=1000 "$B/bin/xgpu-bench" rtt spin >>"$work/r"
stop
echo "bench: null-call round trip, blocking"
start --spin-us 0
XGPU_SPIN_US=0 "$B/bin/xgpu-bench" rtt block >>"$work/r"
stop
echo "bench: ring bandwidth"
"$B/bin/xgpu-bench" ring >>"$work/r"
echo "bench: copies through xgpud"
start
"$B/bin/xgpu-bench" copy >>"$work/r"
executor=$(sed -n 's/.*xgpud info: executor \([a-z]*\).*/\1/p' "$work/xgpud.log" | head -1)
stop

v() { awk -v k="$1" '$1 == k {print $2}' "$work/r"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f%%", 100 * a / b}'; }

{
	echo "# Benchmarks, local mode"
	echo
	echo "Measured by \`make bench\` ($(date -u +%Y-%m-%d), commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown))"
	echo "on $(nproc) cores of $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), executor $executor."
	echo "Each figure is compared with a floor measured in the same run on the same machine; the spinning"
	echo "floor is the median of five runs on CPUs 0 and 1, where the client and the daemon run."
	echo
	echo "## Null-call round trip (NOP through the request and response rings)"
	echo
	echo "The round trip's mean is timed over the whole batch, like the floor; p50 and p99 come from a second"
	echo "pass timing each call (two clock reads more per call)."
	echo
	echo "| mode | mean (us) | p50 (us) | p99 (us) | floor (us) | mean / floor | target |"
	echo "|---|---|---|---|---|---|---|"
	echo "| spinning | $(v rtt_spin_batch_us) | $(v rtt_spin_p50_us) | $(v rtt_spin_p99_us) | $(v floor_spin_us) (cache-line ping-pong) | $(ratio "$(v rtt_spin_batch_us)" "$(v floor_spin_us)")x | <= 2x |"
	echo "| blocking | $(v rtt_block_batch_us) | $(v rtt_block_p50_us) | $(v rtt_block_p99_us) | $(v floor_eventfd_us) (eventfd ping-pong) | $(ratio "$(v rtt_block_batch_us)" "$(v floor_eventfd_us)")x | <= 2x |"
	echo
	echo "## Bulk bytes through a channel's 4 MiB data area (two threads)"
	echo
	echo "| transfer | ring (GB/s) | memcpy (GB/s) | ring / memcpy | target |"
	echo "|---|---|---|---|---|"
	for s in 64 1024; do
		echo "| $s MiB | $(v ring_${s}MiB_gbps) | $(v memcpy_${s}MiB_gbps) | $(pct "$(v ring_${s}MiB_gbps)" "$(v memcpy_${s}MiB_gbps)") | >= 80% |"
	done
	echo
	echo "## Copies through xgpud ($executor executor)"
	echo
	echo "Host to device includes the copy landing on the device (synchronised); pinned memory comes from"
	echo "cudaMallocHost, shared with the daemon, so no byte crosses the ring."
	echo
	echo "| transfer | memcpy (GB/s) | H2D pageable | D2H pageable | H2D pinned |"
	echo "|---|---|---|---|---|"
	for s in 64 1024; do
		m=$(v copy_${s}MiB_memcpy_gbps)
		echo "| $s MiB | $m | $(v copy_${s}MiB_h2d_gbps) ($(pct "$(v copy_${s}MiB_h2d_gbps)" "$m")) | $(v copy_${s}MiB_d2h_gbps) ($(pct "$(v copy_${s}MiB_d2h_gbps)" "$m")) | $(v copy_${s}MiB_h2d_pinned_gbps) ($(pct "$(v copy_${s}MiB_h2d_pinned_gbps)" "$m")) |"
	done
	if [ "$executor" = sim ]; then
		echo
		echo "With the sim executor the device side is host memory copied by the simulated driver's worker"
		echo "thread (modeled at 25 GB/s), so these copies pay one memcpy more than a real GPU's DMA would."
	fi
	echo
	echo "## Raw output"
	echo
	echo '```'
	cat "$work/r"
	echo '```'
} >"$out"
echo "bench: wrote $out"
cat "$out"
