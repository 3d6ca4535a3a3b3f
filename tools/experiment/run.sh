#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - Pegasus's evaluation (ATC'11, section 5) in local mode: four
# domains on this machine's CPUs under every scheduling policy, in three
# experiments:
#
#   coupled  equal credits; each domain a coupled loop of CPU work and a
#            dependent batch of GPU kernels (Pegasus's BlackScholes); the
#            figure is the loops per second of all four (Pegasus's throughput)
#   credits  the same loops with credits 256/512/1024/256; the figure is the
#            work (loops) each domain does, and dom-3's against its own under
#            none (Pegasus: 2.4x) and alone (the GPU to itself, the CPUs shared
#            with burners at the others' nice levels: the most a policy can
#            give it on this machine)
#   fwt      dom-1 makes one small call every EXP_FWT_PERIOD_MS, timed in the
#            client (Pegasus's FWT), while dom-2..4 run the coupled loop; the
#            figures are dom-1's latency p50 and p99
#
#   tools/experiment/run.sh [--quick] [--report DIR] [BUILD_DIR] (default build)
#
# The CPU is oversubscribed as in Pegasus's testbed: four domains' loops on
# the host's cores (two here). A domain's CPU weight follows its credit, as
# one Xen credit covers VCPUs and the aVCPU: nice 0 for the largest credit
# and about 3 nice steps (each 1.25x of CFS weight) per halving, so
# 1024/512/256 are nice 0/3/6. xgpud runs with --hyp-source local, so xc,
# augc and cosched see which client threads are on a CPU. Without a GPU the
# kernels run on the simulated driver, which models each as exactly its
# length.
#
# --quick: one run of EXP_SECONDS (default 8) per policy and experiment;
# otherwise EXP_REPS (default 3) runs of EXP_SECONDS (default 20) each, and
# min / median / max. EXP_ONLY="coupled credits fwt" picks experiments.
# --report DIR: also write DIR/*.tsv and PNG plots (gnuplot) of the medians
# (EXP_ONLY=none --report DIR redraws the plots from the TSVs there).
# EXP_CPU_SCHED=batch runs the domains under SCHED_BATCH (chrt -b): no
# wake-up preemption, so a domain whose GPU result arrives waits for the
# running one's slice, closer to Xen's credit scheduler than CFS's default.
# EXP_CPU_SCHED=xen adds Xen's 30 ms credit timeslice (EXP_CPU_SLICE_MS) as
# a custom CFS slice (Linux 6.12+): a domain keeps a CPU for 30 ms turns.
#
# How a client waits for the GPU: EXP_WAIT=spin (the default) spins for the
# answer (XGPU_SPIN_US=100000), as a CUDA program does by default with one
# context per CPU (cudaDeviceScheduleAuto) and as Pegasus's guests did;
# block spins 50 us and then sleeps (xgpu's frontend default). The coupled
# experiment runs in every mode of EXP_COUPLED_WAITS (default "block spin");
# credits and fwt in EXP_WAIT's. EXP_POLICIES picks policies (default all).
# Every table also gives xgpud's CPU use (% of one CPU, median).
# EXP_HYP_SOURCE (default local) is xgpud's --hyp-source: local:switch
# needs the sched_switch tracepoint (tracefs mounted, root), local:proc
# counts every runnable thread as running; a line before the last ones
# says which view the daemons used.
# Last lines: coupled-bs-block: ... then coupled-bs: none X rr X ... wfq X
# (median loops/s, the second with spinning clients, Pegasus's condition).
# With EXP_REPS above 1, a line per run (coupled-bs run N: ...) comes before
# each median line.
set -euo pipefail
quick=0 report=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--report) report=${2:?--report needs a folder}; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; /^# SPDX-License-Identifier:/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-$repo/build}" && pwd)
secs=${EXP_SECONDS:-$([ "$quick" = 1 ] && echo 8 || echo 20)}
reps=${EXP_REPS:-$([ "$quick" = 1 ] && echo 1 || echo 3)}
only=" ${EXP_ONLY:-coupled credits fwt} "
# The coupled loop: CPU work, then a batch of kernels whose results it needs.
cpu_ms=${EXP_CPU_MS:-8}
kernel_ms=${EXP_KERNEL_MS:-1}
batch=${EXP_BATCH:-8}
# The latency-sensitive guest: one call of a short kernel per period.
fwt_period_ms=${EXP_FWT_PERIOD_MS:-10}
fwt_kernel_us=${EXP_FWT_KERNEL_US:-200}
read -r -a policies <<<"${EXP_POLICIES:-none rr accc xc slaf augc cosched wfq}"
hyp_source=${EXP_HYP_SOURCE:-local}
wait_mode=${EXP_WAIT:-spin}
read -r -a coupled_waits <<<"${EXP_COUPLED_WAITS:-block spin}"
# spin_us MODE: the clients' XGPU_SPIN_US for a wait mode.
spin_us() {
	case $1 in
	spin) echo 100000 ;;
	block) echo 50 ;;
	*) echo "run.sh: a wait mode is spin or block, not $1" >&2; exit 2 ;;
	esac
}
spin_us "$wait_mode" >/dev/null
for m in "${coupled_waits[@]}"; do spin_us "$m" >/dev/null; done
case ${EXP_CPU_SCHED:-other} in
other) cpu_sched=() ;;
batch) cpu_sched=(chrt --batch 0) ;;
xen) cpu_sched=(env "GUESTLOAD_CPU_SLICE_MS=${EXP_CPU_SLICE_MS:-30}") ;;
*) echo "run.sh: EXP_CPU_SCHED must be other, batch or xen" >&2; exit 2 ;;
esac
domains=(dom-1 dom-2 dom-3 dom-4)

for f in "$B/bin/xgpud" "$B/tests/cuda/guestload" "$B/tests/simkernels/guestload.so"; do
	[ -e "$f" ] || { echo "run.sh: $f missing: make all and make tests-build first" >&2; exit 2; }
done
if [ -n "$report" ]; then
	command -v gnuplot >/dev/null || { echo "run.sh: --report needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 2; }
	mkdir -p "$report"
	report=$(cd "$report" && pwd)
fi

. "$repo/tools/lib-daemon.sh"
export XGPU_SIM_KERNELS=$B/lib/simkernels:$B/tests/simkernels

# write_conf NAME CREDIT...: a config with dom-1.. at those credits.
write_conf() {
	local name=$1 i=1 c line=
	shift
	for c in "$@"; do
		line+="${line:+, }\"name=dom-$i, credit=$c\""
		i=$((i + 1))
	done
	echo "domain = [ $line ]" >"$work/$name.conf"
}

# nice_for CREDIT MAX: the nice level giving CREDIT its share of CFS weight.
nice_for() {
	awk -v c="$1" -v m="$2" 'BEGIN { n = log(m / c) / log(1.25); n = int(n + 0.5); print (n > 19 ? 19 : n) }'
}

# cpu_ticks PID: user + system CPU time of a process so far, in clock ticks.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# run_set NAME POLICY RUN CONF CMD1 CMD2 CMD3 CMD4 [NICE1..4]: the four
# domains at once, each running guestload with its CMD's arguments, waiting
# for the GPU as $wait_mode says; leaves $work/NAME-POLICY-RUN-dom-N.out and
# $work/NAME-POLICY-RUN.cpu (xgpud's CPU use while they ran, % of one CPU),
# and fails the script if any fails.
run_set() {
	local name=$1 p=$2 run=$3 conf=$4 i pid pids=() cmds=("$5" "$6" "$7" "$8") nices=("${9:-0}" "${10:-0}" "${11:-0}" "${12:-0}")
	local t0 c0 spin
	spin=$(spin_us "$wait_mode")
	start_daemon "$work/xgpud-$name-$p-$run.log" --policy "$p" --hyp-source "$hyp_source" --config "$work/$conf.conf"
	t0=$(date +%s.%N)
	c0=$(cpu_ticks "$daemon")
	for i in 0 1 2 3; do
		# shellcheck disable=SC2086 # each command is a guestload argument list
		XGPU_SPIN_US=$spin XGPU_DOMAIN=${domains[$i]} nice -n "${nices[$i]}" "${cpu_sched[@]}" "$B/tests/cuda/guestload" ${cmds[$i]} \
			>"$work/$name-$p-$run-${domains[$i]}.out" 2>&1 &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || { tail -n 3 "$work/$name-$p-$run"-*.out >&2; echo "run.sh: a domain failed in $name under $p" >&2; exit 1; }
	done
	awk -v c="$(($(cpu_ticks "$daemon") - c0))" -v hz="$(getconf CLK_TCK)" -v t0="$t0" -v t1="$(date +%s.%N)" \
		'BEGIN { printf "%.1f\n", 100 * c / hz / (t1 - t0) }' >"$work/$name-$p-$run.cpu"
	stop_daemon || { echo "run.sh: xgpud failed in $name under $p" >&2; exit 1; }
}

# run_alone NAME RUN CONF CMD NICE1..4: dom-3 runs guestload CMD alone on
# the GPU while dom-1, dom-2 and dom-4 are CPU burners at their nice levels;
# leaves $work/NAME-alone-RUN-dom-3.out.
run_alone() {
	local name=$1 run=$2 conf=$3 cmd=$4 i burners=() spin rc=0
	shift 4
	local nices=("$@")
	spin=$(spin_us "$wait_mode")
	start_daemon "$work/xgpud-$name-alone-$run.log" --policy none --hyp-source "$hyp_source" --config "$work/$conf.conf"
	for i in 0 1 3; do
		nice -n "${nices[$i]}" "${cpu_sched[@]}" bash -c 'while :; do :; done' &
		burners+=($!)
	done
	# shellcheck disable=SC2086 # the command is a guestload argument list
	XGPU_SPIN_US=$spin XGPU_DOMAIN=dom-3 nice -n "${nices[2]}" "${cpu_sched[@]}" "$B/tests/cuda/guestload" $cmd \
		>"$work/$name-alone-$run-dom-3.out" 2>&1 || rc=$?
	kill "${burners[@]}"
	wait "${burners[@]}" 2>/dev/null || true
	[ "$rc" = 0 ] || { tail -n 3 "$work/$name-alone-$run-dom-3.out" >&2; echo "run.sh: dom-3 alone failed" >&2; exit 1; }
	stop_daemon || { echo "run.sh: xgpud failed in $name alone" >&2; exit 1; }
}

# field NAME P RUN DOM KEY: KEY=value from that domain's RESULT line.
field() {
	local v
	v=$(sed -n "s/^RESULT .* $5=\([0-9.]*\).*/\1/p" "$work/$1-$2-$3-$4.out")
	[ -n "$v" ] || { cat "$work/$1-$2-$3-$4.out" >&2; echo "run.sh: no $5 in $1/$2/$4" >&2; exit 1; }
	echo "$v"
}

# stats VALUE...: "min median max".
stats() {
	printf '%s\n' "$@" | sort -g |
		awk '{ v[NR] = $1 } END { printf "%s %s %s\n", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR] }'
}

coupled_cmd="coupled $cpu_ms $kernel_ms $batch $secs"
echo "4 domains on $(nproc) CPUs (load average $(cut -d' ' -f1-3 /proc/loadavg)); ${secs} s per run, ${reps} run(s) per policy"
echo "coupled loop: ${cpu_ms} ms CPU, then ${batch} x ${kernel_ms} ms kernels it depends on; CPU policy ${EXP_CPU_SCHED:-other}"
echo "clients wait for the GPU: ${coupled_waits[*]} (coupled), $wait_mode (credits, fwt)"
echo

# cpu_median NAME P: xgpud's median CPU use over the runs of NAME under P.
cpu_median() {
	local run v=()
	for run in $(seq "$reps"); do v+=("$(cat "$work/$1-$2-$run.cpu")"); done
	stats "${v[@]}" | cut -d' ' -f2
}

summaries=()
if [[ $only == *" coupled "* ]]; then
	write_conf equal 256 256 256 256
	for mode in "${coupled_waits[@]}"; do
		wait_mode=$mode
		echo "== coupled, equal credits, clients $mode: loops/s of all four (min / median / max), xgpud CPU %"
		tsv=$report/coupled-$mode.tsv
		[ -n "$report" ] && echo "# policy min median max xgpud_cpu_pct" >"$tsv"
		summary="coupled-bs:"
		[ "$mode" = spin ] || summary="coupled-bs-$mode:"
		per_run=()
		for p in "${policies[@]}"; do
			vals=()
			for run in $(seq "$reps"); do
				run_set "coupled-$mode" "$p" "$run" equal "$coupled_cmd" "$coupled_cmd" "$coupled_cmd" "$coupled_cmd"
				total=0
				for d in "${domains[@]}"; do
					total=$(awk -v a="$total" -v b="$(field "coupled-$mode" "$p" "$run" "$d" loops_per_s)" 'BEGIN { printf "%.2f", a + b }')
				done
				vals+=("$total")
				per_run[run]+=" $p $total"
			done
			read -r min med max < <(stats "${vals[@]}")
			cpu=$(cpu_median "coupled-$mode" "$p")
			printf '%-8s %8s / %8s / %8s %6s\n' "$p" "$min" "$med" "$max" "$cpu"
			[ -n "$report" ] && echo "$p $min $med $max $cpu" >>"$tsv"
			summary+=" $p $med"
		done
		if [ "$reps" -gt 1 ]; then
			for run in $(seq "$reps"); do summaries+=("${summary%%:*} run $run:${per_run[run]}"); done
		fi
		summaries+=("$summary")
		echo
	done
	wait_mode=${EXP_WAIT:-spin}
fi

if [[ $only == *" credits "* ]]; then
	credits=(256 512 1024 256)
	write_conf credits "${credits[@]}"
	nices=()
	for c in "${credits[@]}"; do nices+=("$(nice_for "$c" 1024)"); done
	echo "== credits ${credits[*]} (nice ${nices[*]}): median loops each domain did; dom-3 against none and alone"
	# The most any GPU policy can give dom-3: the GPU to itself, the CPUs
	# shared with the others' CPU use (they spin while they wait, so
	# burners at their nice levels stand in for them).
	vals=()
	for run in $(seq "$reps"); do
		run_alone credits "$run" credits "$coupled_cmd" "${nices[@]}"
		vals+=("$(field credits alone "$run" dom-3 loops)")
	done
	read -r _ alone3 _ < <(stats "${vals[@]}")
	printf '%-8s %8s %8s %8s %8s %10s %10s %6s\n' policy dom-1 dom-2 dom-3 dom-4 "dom-3/none" "dom-3/alone" "xgpud%"
	[ -n "$report" ] && echo "# policy dom-1 dom-2 dom-3 dom-4 dom3_vs_none dom3_vs_alone xgpud_cpu_pct" >"$report/credits.tsv"
	none3=
	for p in "${policies[@]}"; do
		meds=()
		for d in "${domains[@]}"; do
			vals=()
			for run in $(seq "$reps"); do
				[ "$d" = dom-1 ] && run_set credits "$p" "$run" credits "$coupled_cmd" "$coupled_cmd" "$coupled_cmd" "$coupled_cmd" "${nices[@]}"
				vals+=("$(field credits "$p" "$run" "$d" loops)")
			done
			read -r _ med _ < <(stats "${vals[@]}")
			meds+=("$med")
		done
		[ "$p" = none ] && none3=${meds[2]}
		ratio=$(awk -v a="${meds[2]}" -v b="$none3" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		of_alone=$(awk -v a="${meds[2]}" -v b="$alone3" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		cpu=$(cpu_median credits "$p")
		printf '%-8s %8s %8s %8s %8s %10s %10s %6s\n' "$p" "${meds[@]}" "$ratio" "$of_alone" "$cpu"
		[ -n "$report" ] && echo "$p ${meds[*]} $ratio $of_alone $cpu" >>"$report/credits.tsv"
	done
	printf '%-8s %8s %8s %8s %8s %10s %10s %6s\n' alone - - "$alone3" - \
		"$(awk -v a="$alone3" -v b="$none3" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" 1.00 -
	echo "(alone: dom-3 by itself on the GPU beside CPU burners at the others' nice levels; its"
	echo " dom-3/none is the most any policy could reach here)"
	echo
fi

if [[ $only == *" fwt "* ]]; then
	write_conf equal 256 256 256 256
	fwt_cmd="latency $fwt_period_ms $fwt_kernel_us $secs"
	echo "== fwt: dom-1 calls every ${fwt_period_ms} ms (a ${fwt_kernel_us} us kernel and its copy) beside three coupled loops"
	printf '%-8s %12s %12s %8s %6s\n' policy "p50 (us)" "p99 (us)" calls "xgpud%"
	[ -n "$report" ] && echo "# policy p50_us p99_us calls xgpud_cpu_pct" >"$report/fwt.tsv"
	for p in "${policies[@]}"; do
		p50s=() p99s=() calls=()
		for run in $(seq "$reps"); do
			run_set fwt "$p" "$run" equal "$fwt_cmd" "$coupled_cmd" "$coupled_cmd" "$coupled_cmd"
			p50s+=("$(field fwt "$p" "$run" dom-1 p50_us)")
			p99s+=("$(field fwt "$p" "$run" dom-1 p99_us)")
			calls+=("$(field fwt "$p" "$run" dom-1 calls)")
		done
		read -r _ p50 _ < <(stats "${p50s[@]}")
		read -r _ p99 _ < <(stats "${p99s[@]}")
		read -r _ n _ < <(stats "${calls[@]}")
		cpu=$(cpu_median fwt "$p")
		printf '%-8s %12s %12s %8s %6s\n' "$p" "$p50" "$p99" "$n" "$cpu"
		[ -n "$report" ] && echo "$p $p50 $p99 $n $cpu" >>"$report/fwt.tsv"
	done
	echo
fi

if [ -n "$report" ]; then
	plot() { # plot NAME TITLE YLABEL SETTINGS USING...
		local name=$1 title=$2 ylabel=$3 settings=$4
		shift 4
		[ -f "$report/$name.tsv" ] || return 0
		gnuplot <<-GP
			set terminal pngcairo size 800,450 noenhanced
			set output "$report/$name.png"
			set title "$title"
			set ylabel "$ylabel"
			set style data histograms
			set style histogram clustered gap 1
			set style fill solid 0.8 border -1
			set key top left
			$settings
			plot $*
		GP
	}
	# Both wait modes side by side when both were measured.
	if [ -f "$report/coupled-block.tsv" ] && [ -f "$report/coupled-spin.tsv" ]; then
		awk 'BEGIN { print "# policy block_median spin_median" }
			/^#/ { next }
			NR == FNR { spin[$1] = $3; next }
			{ print $1, $3, ($1 in spin ? spin[$1] : 0) }' "$report/coupled-spin.tsv" "$report/coupled-block.tsv" >"$report/coupled.tsv"
		plot coupled "Coupled loop, 4 domains, equal credits (median of $reps x ${secs} s)" "loops/s, all domains" "set yrange [0:*]; set key below" \
			"'$report/coupled.tsv' using 2:xtic(1) title 'clients block', '' using 3 title 'clients spin (Pegasus)'"
	fi
	plot credits "Credits 256/512/1024/256: work per domain (median)" "loops" "set yrange [0:*]" \
		"'$report/credits.tsv' using 2:xtic(1) title 'dom-1 (256)', '' using 3 title 'dom-2 (512)', '' using 4 title 'dom-3 (1024)', '' using 5 title 'dom-4 (256)'"
	plot fwt "Latency-sensitive guest beside 3 coupled loops" "per-call latency (us), log scale" "set logscale y" \
		"'$report/fwt.tsv' using 2:xtic(1) title 'p50', '' using 3 title 'p99'"
	echo "report: $report/{coupled,credits,fwt}.{tsv,png}"
fi
# Which view of the CPU schedule the daemons had (said when a policy that
# reads it first asked).
view=$(cat "$work"/xgpud-*.log 2>/dev/null | sed -n 's/.*xgpud info: \(local: .*\)/\1/p' | sort -u | tr '\n' ' ')
echo "hypervisor source $hyp_source: ${view:-not read by any policy run}"
for summary in "${summaries[@]}"; do echo "$summary"; done
exit 0
