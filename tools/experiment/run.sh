#!/usr/bin/env bash
# run.sh - Pegasus's evaluation (ATC'11, section 5) in local mode: four
# domains on this machine's CPUs, each a coupled loop of CPU work and a
# dependent batch of GPU kernels, under every policy; the figure is the
# loops per second of all four together (Pegasus's throughput).
#
#   tools/experiment/run.sh [--quick] [BUILD_DIR] (default build)
#
# The CPU is oversubscribed as in Pegasus's testbed: four domains' loops on
# the host's cores (two here), every domain at the same CPU weight (nice 0;
# the local schedule source reads nice or the cgroup's cpu.weight). xgpud
# runs with --hyp-source local, so xc, augc and cosched see which client
# threads are on a CPU. On a host without a GPU the kernels run on the
# simulated driver, which models each as exactly KERNEL_MS.
#
# --quick: one run of EXP_SECONDS (default 8) per policy; otherwise
# EXP_REPS (default 3) runs of EXP_SECONDS (default 20) each, and the median.
# Last line: coupled-bs: none X rr X ... wfq X (median loops/s).
#
# Not yet here (issue 13): the 256/512/1024/256 credit case, the FWT-like
# latency workload, docs/results/pegasus-local.md and its plots.
set -euo pipefail
quick=0
if [ "${1-}" = --quick ]; then
	quick=1
	shift
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-$repo/build}" && pwd)
secs=${EXP_SECONDS:-$([ "$quick" = 1 ] && echo 8 || echo 20)}
reps=${EXP_REPS:-$([ "$quick" = 1 ] && echo 1 || echo 3)}
# The coupled loop: CPU work, then a batch of kernels whose results it needs.
cpu_ms=${EXP_CPU_MS:-8}
kernel_ms=${EXP_KERNEL_MS:-1}
batch=${EXP_BATCH:-8}
policies=(none rr accc xc slaf augc cosched wfq)
domains=(dom-1 dom-2 dom-3 dom-4)

for f in "$B/bin/xgpud" "$B/tests/cuda/guestload" "$B/tests/simkernels/guestload.so"; do
	[ -e "$f" ] || { echo "run.sh: $f missing: make all and make tests-build first" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/xgpu-experiment.XXXXXX")
export XGPU_SOCKET=$work/xgpud.sock
export XGPU_SIM_KERNELS=$B/lib/simkernels:$B/tests/simkernels
# Clients use xgpu's libraries; the daemon must not (it loads the real
# libcuda.so.1, and ours has the same name).
daemon_ldpath=${LD_LIBRARY_PATH-}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
daemon=
cleanup() {
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

start_daemon() {
	local log=$1
	shift
	if [ -n "$daemon_ldpath" ]; then
		LD_LIBRARY_PATH=$daemon_ldpath "$B/bin/xgpud" --foreground "$@" >"$log" 2>&1 &
	else
		env -u LD_LIBRARY_PATH "$B/bin/xgpud" --foreground "$@" >"$log" 2>&1 &
	fi
	daemon=$!
	for _ in $(seq 100); do
		"$B/bin/xl-gpu" list >/dev/null 2>&1 && return 0
		kill -0 "$daemon" 2>/dev/null || { cat "$log" >&2; exit 1; }
		sleep 0.1
	done
	echo "run.sh: xgpud did not answer" >&2
	exit 1
}

stop_daemon() {
	kill -TERM "$daemon"
	wait "$daemon" || { echo "run.sh: xgpud failed" >&2; exit 1; }
	daemon=
}

cat >"$work/equal.conf" <<'CONF'
domain = [ "name=dom-1, credit=256", "name=dom-2, credit=256", "name=dom-3, credit=256", "name=dom-4, credit=256" ]
CONF

# run_coupled POLICY RUN: the four loops at once; prints their loops/s summed.
run_coupled() {
	local p=$1 run=$2 pids=() d pid total=0 lps
	start_daemon "$work/xgpud-$p-$run.log" --policy "$p" --hyp-source local --config "$work/equal.conf"
	for d in "${domains[@]}"; do
		XGPU_DOMAIN=$d "$B/tests/cuda/guestload" coupled "$cpu_ms" "$kernel_ms" "$batch" "$secs" \
			>"$work/$p-$run-$d.out" 2>&1 &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || { cat "$work/$p-$run"-*.out >&2; echo "run.sh: a loop failed under $p" >&2; exit 1; }
	done
	stop_daemon
	for d in "${domains[@]}"; do
		lps=$(sed -n 's/.* loops_per_s=\([0-9.]*\).*/\1/p' "$work/$p-$run-$d.out")
		[ -n "$lps" ] || { cat "$work/$p-$run-$d.out" >&2; exit 1; }
		total=$(awk -v a="$total" -v b="$lps" 'BEGIN { printf "%.2f", a + b }')
	done
	echo "$total"
}

echo "coupled workload: 4 domains on $(nproc) CPUs, each ${cpu_ms} ms CPU then ${batch} x ${kernel_ms} ms kernels,"
echo "${secs} s per run, ${reps} run(s) per policy; loops/s of all four (min / median / max)"
summary="coupled-bs:"
for p in "${policies[@]}"; do
	vals=()
	for run in $(seq "$reps"); do
		vals+=("$(run_coupled "$p" "$run")")
	done
	read -r min med max < <(printf '%s\n' "${vals[@]}" | sort -g |
		awk '{ v[NR] = $1 } END { printf "%s %s %s\n", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR] }')
	printf '%-8s %8s / %8s / %8s\n' "$p" "$min" "$med" "$max"
	summary+=" $p $med"
done
echo "$summary"
