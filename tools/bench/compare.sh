#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare.sh - `make bench-compare`: this tree's design against an older one
# (OLD, a git revision; default the last commit before executors per domain),
# both built here (release) and measured in one run, alternately (old, new,
# old, new) so that the host's noise falls on both alike. Writes
# docs/results/bench-compare.md (BENCH_COMPARE_OUT):
#   - the spinning null call (xgpu-bench rtt spin) and, through
#     libcudart.so.13, the null call and an empty launch (xgpu-bench-api);
#   - the cost of a domain's request for the slot (xgpu-sched-bench, rr and
#     wfq at 64 domains; the decisions themselves are in bench-sched.md);
#   - copies through the daemon against memcpy (xgpu-bench copy);
#   - the slot hand-over: two domains launching and synchronising empty
#     kernels under rr with a 1 ms tick (every slot a hand-over) against the
#     same two under none;
#   - 64 idle domains: the CPU the daemon and its executors use while 64
#     processes, each in a domain of its own, hold a context and sleep, and
#     after they have gone (domains with no process hold no executor).
#
#   tools/bench/compare.sh NEW_BUILD [OLD_REV]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
NEW=$(cd "${1:-build}" && pwd)
old_rev=${2:-${OLD:-3149c69}}
out=${BENCH_COMPARE_OUT:-$src/docs/results/bench-compare.md}
rounds=${BENCH_ROUNDS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/xgpu-bench-compare.XXXXXX")
export XGPU_SOCKET=$work/xgpud.sock
guestload=$NEW/tests/cuda/guestload
# guestload's kernels as the simulated driver's host implementations, for
# both designs: its spin kernel with 0 ns is endless as device code (the
# newer driver would interpret it from its PTX).
export XGPU_SIM_KERNELS=$NEW/tests/simkernels
daemon=
stop() {
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
		daemon=
	fi
}
oldsrc=$src/build/bench-old/src
trap 'stop; rm -rf "$work"' EXIT

# ---- the old design, built from its revision -----------------------------------
old_commit=$(git -C "$src" rev-parse --short "$old_rev^{commit}")
if [ ! -d "$oldsrc" ] || [ "$(git -C "$oldsrc" rev-parse --short HEAD 2>/dev/null)" != "$old_commit" ]; then
	git -C "$src" worktree remove --force "$oldsrc" 2>/dev/null || rm -rf "$oldsrc"
	git -C "$src" worktree prune
	git -C "$src" worktree add --detach "$oldsrc" "$old_commit" >/dev/null
fi
echo "bench-compare: building $old_commit in $oldsrc"
make -C "$oldsrc" -j"$(nproc)" DEPS_STAMP= all >"$work/old-build.log" 2>&1 || {
	tail -30 "$work/old-build.log"
	exit 1
}
OLD=$oldsrc/build
[ -x "$guestload" ] && [ -f "$XGPU_SIM_KERNELS/guestload.so" ] ||
	{ echo "bench-compare: no $guestload or its simulated kernels (make bench-compare builds them)" >&2; exit 1; }
pin_daemon=()
[ "$(nproc)" -gt 1 ] && pin_daemon=(taskset -c 1)

start() { # BUILD [xgpud options]
	local b=$1
	shift
	"${pin_daemon[@]}" "$b/bin/xgpud" --foreground --executor sim "$@" >>"$work/xgpud.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do
		"$b/bin/xl-gpu" list >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	tail -20 "$work/xgpud.log"
	exit 1
}

# CPU ticks (utime + stime) of the daemon and its children (executors).
cpu_ticks() {
	local total=0 p
	for p in $daemon $(pgrep -P "$daemon" || true); do
		[ -r "/proc/$p/stat" ] || continue
		total=$((total + $(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$p/stat")))
	done
	echo "$total"
}

measure() { # DESIGN BUILD: appends "key value" lines to $work/DESIGN
	local d=$1 b=$2 r=$work/$1
	start "$b" --policy none --spin-us 1000
	XGPU_SPIN_US=1000 "$b/bin/xgpu-bench" rtt spin | grep -E '^rtt_spin_(batch|p50)_us' >>"$r"
	XGPU_SPIN_US=1000 "$b/bin/xgpu-bench-api" runtime "$b/lib" "$b/bench/null_kernel.fatbin" |
		grep -E '^api_runtime_(null|launch)_(p50|batch)_us' >>"$r"
	stop
	"$b/bin/xgpu-sched-bench" | awk -F'|' '$2 ~ /request/ && ($3 ~ / rr / || $3 ~ / wfq /) {
		gsub(/ /, "", $3); gsub(/ /, "", $5); print "sched_" $3 "_64_ns", $5 }' >>"$r"
	start "$b"
	"$b/bin/xgpu-bench" copy | grep -E '^copy_(64|1024)MiB_(memcpy|h2d|d2h)_gbps' >>"$r"
	stop
	local pol
	for pol in none rr; do
		start "$b" --policy $pol --tick-ms 1
		local k=0 p pids=()
		for dom in a b; do
			XGPU_DOMAIN=ho-$dom LD_LIBRARY_PATH=$b/lib "$guestload" spin 0 3 >"$work/ho-$dom" 2>&1 &
			pids+=($!)
		done
		wait "${pids[@]}" || true
		for dom in a b; do
			p=$(sed -n 's/.*kernels=\([0-9]*\).*elapsed_s=\([0-9.]*\).*/\1 \2/p' "$work/ho-$dom")
			k=$(awk -v k="$k" -v p="$p" 'BEGIN {split(p, a, " "); print k + a[1] / a[2]}')
		done
		echo "handover_${pol}_kernels_per_s $k" >>"$r"
		stop
	done
	start "$b"
	local n idlers=()
	for n in $(seq 64); do
		XGPU_DOMAIN=idle-$n LD_LIBRARY_PATH=$b/lib "$guestload" idle 14 >/dev/null 2>&1 &
		idlers+=($!)
	done
	sleep 3 # every context made
	local t0 c0 t1 c1 hz
	hz=$(getconf CLK_TCK)
	t0=$EPOCHREALTIME c0=$(cpu_ticks)
	sleep 10
	t1=$EPOCHREALTIME c1=$(cpu_ticks)
	echo "idle64_processes $(($(pgrep -P "$daemon" | wc -l) + 1))" >>"$r"
	echo "idle64_busy_cpu_pct $(awk -v c="$((c1 - c0))" -v hz="$hz" -v t="$t0" -v u="$t1" 'BEGIN {printf "%.2f", 100 * c / hz / (u - t)}')" >>"$r"
	wait "${idlers[@]}" || true
	sleep 6 # past the executors' linger: domains with no process
	t0=$EPOCHREALTIME c0=$(cpu_ticks)
	sleep 10
	t1=$EPOCHREALTIME c1=$(cpu_ticks)
	echo "idle64_empty_cpu_pct $(awk -v c="$((c1 - c0))" -v hz="$hz" -v t="$t0" -v u="$t1" 'BEGIN {printf "%.2f", 100 * c / hz / (u - t)}')" >>"$r"
	stop
}

for i in $(seq "$rounds"); do
	echo "bench-compare: round $i of $rounds: old ($old_commit)"
	measure old "$OLD"
	echo "bench-compare: round $i of $rounds: new"
	measure new "$NEW"
done

# The median of each key over the rounds.
med() { awk -v k="$2" '$1 == k {print $2}' "$work/$1" | sort -g | awk '{a[NR] = $1} END {print NR ? a[int((NR + 1) / 2)] : "n/a"}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b + 0 == 0) print "n/a"; else printf "%.2f", a / b}'; }
row() { # LABEL KEY UNIT
	local o n
	o=$(med old "$2") n=$(med new "$2")
	echo "| $1 | $o | $n | $(ratio "$n" "$o") |"
}
old_what="the last commit before executors per domain" title="executors per domain against the one-process design"
if [ "$old_commit" != "$(git -C "$src" rev-parse --short 3149c69)" ]; then
	old_what="OLD=$old_rev" title="this tree against $old_commit"
fi
{
	echo "# Benchmarks: $title"
	echo
	echo "Measured by \`make bench-compare\` ($(date -u +%Y-%m-%d)) on $(nproc) cores of"
	echo "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), the simulated driver: the old design"
	echo "is $old_commit ($old_what), the new one $(git -C "$src" rev-parse --short HEAD)."
	echo "Both were built here and measured in one run, alternately ($rounds rounds each); each figure is the median"
	echo "of the rounds. Only the new/old ratio is meant for comparison: the host is a shared VM."
	[ -z "${BENCH_NOTE:-}" ] || echo "$BENCH_NOTE"
	echo
	echo "| measure | old | new | new / old |"
	echo "|---|---|---|---|"
	row "spinning null call, mean (us)" rtt_spin_batch_us
	row "spinning null call, p50 (us)" rtt_spin_p50_us
	row "cudaStreamQuery(0) through libcudart.so.13, p50 (us)" api_runtime_null_p50_us
	row "empty launch through libcudart.so.13, p50 (us)" api_runtime_launch_p50_us
	row "empty launch through libcudart.so.13, mean (us)" api_runtime_launch_batch_us
	row "a domain asks for the slot (xgpu_sched_request), rr, 64 domains (ns)" sched_rr_64_ns
	row "a domain asks for the slot (xgpu_sched_request), wfq, 64 domains (ns)" sched_wfq_64_ns
	row "memcpy 64 MiB (GB/s)" copy_64MiB_memcpy_gbps
	row "H2D pageable 64 MiB (GB/s)" copy_64MiB_h2d_gbps
	row "D2H pageable 64 MiB (GB/s)" copy_64MiB_d2h_gbps
	row "memcpy 1 GiB (GB/s)" copy_1024MiB_memcpy_gbps
	row "H2D pageable 1 GiB (GB/s)" copy_1024MiB_h2d_gbps
	row "D2H pageable 1 GiB (GB/s)" copy_1024MiB_d2h_gbps
	row "two domains' empty kernels, none (kernels/s)" handover_none_kernels_per_s
	row "the same under rr, 1 ms tick: a hand-over per slot (kernels/s)" handover_rr_kernels_per_s
	row "64 idle processes in 64 domains: CPU of daemon + executors (% of a core)" idle64_busy_cpu_pct
	row "64 domains with no process left: CPU (% of a core)" idle64_empty_cpu_pct
	row "processes while the 64 are idle (daemon + executors)" idle64_processes
	echo
	echo "## Raw output"
	echo
	for d in old new; do
		echo "### $d"
		echo
		echo '```'
		cat "$work/$d"
		echo '```'
	done
} >"$out"
echo "bench-compare: wrote $out"
cat "$out"
