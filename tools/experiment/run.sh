#!/usr/bin/env bash
# run.sh - Pegasus's evaluation (ATC'11, section 5) in local mode: four
# domains on this machine's CPUs under every scheduling policy, in three
# experiments:
#
#   coupled  equal credits; each domain a coupled loop of CPU work and a
#            dependent batch of GPU kernels (Pegasus's BlackScholes); the
#            figure is the loops per second of all four (Pegasus's throughput)
#   credits  the same loops with credits 256/512/1024/256; the figure is the
#            work (loops) each domain does, and dom-3's against its own under
#            none (Pegasus: 2.4x)
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
# Last line: coupled-bs: none X rr X ... wfq X (median loops/s).
set -euo pipefail
quick=0 report=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--report) report=${2:?--report needs a folder}; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
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
policies=(none rr accc xc slaf augc cosched wfq)
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

# run_set NAME POLICY RUN CONF CMD1 CMD2 CMD3 CMD4 [NICE1..4]: the four
# domains at once, each running guestload with its CMD's arguments; leaves
# $work/NAME-POLICY-RUN-dom-N.out and fails the script if any fails.
run_set() {
	local name=$1 p=$2 run=$3 conf=$4 i pid pids=() cmds=("$5" "$6" "$7" "$8") nices=("${9:-0}" "${10:-0}" "${11:-0}" "${12:-0}")
	start_daemon "$work/xgpud-$name-$p-$run.log" --policy "$p" --hyp-source local --config "$work/$conf.conf"
	for i in 0 1 2 3; do
		# shellcheck disable=SC2086 # each command is a guestload argument list
		XGPU_DOMAIN=${domains[$i]} nice -n "${nices[$i]}" "$B/tests/cuda/guestload" ${cmds[$i]} \
			>"$work/$name-$p-$run-${domains[$i]}.out" 2>&1 &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || { tail -n 3 "$work/$name-$p-$run"-*.out >&2; echo "run.sh: a domain failed in $name under $p" >&2; exit 1; }
	done
	stop_daemon || { echo "run.sh: xgpud failed in $name under $p" >&2; exit 1; }
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
echo "coupled loop: ${cpu_ms} ms CPU, then ${batch} x ${kernel_ms} ms kernels it depends on"
echo

summary="coupled-bs:"
if [[ $only == *" coupled "* ]]; then
	write_conf equal 256 256 256 256
	echo "== coupled, equal credits: loops/s of all four (min / median / max)"
	[ -n "$report" ] && echo "# policy min median max" >"$report/coupled.tsv"
	for p in "${policies[@]}"; do
		vals=()
		for run in $(seq "$reps"); do
			run_set coupled "$p" "$run" equal "$coupled_cmd" "$coupled_cmd" "$coupled_cmd" "$coupled_cmd"
			total=0
			for d in "${domains[@]}"; do
				total=$(awk -v a="$total" -v b="$(field coupled "$p" "$run" "$d" loops_per_s)" 'BEGIN { printf "%.2f", a + b }')
			done
			vals+=("$total")
		done
		read -r min med max < <(stats "${vals[@]}")
		printf '%-8s %8s / %8s / %8s\n' "$p" "$min" "$med" "$max"
		[ -n "$report" ] && echo "$p $min $med $max" >>"$report/coupled.tsv"
		summary+=" $p $med"
	done
	echo
fi

if [[ $only == *" credits "* ]]; then
	credits=(256 512 1024 256)
	write_conf credits "${credits[@]}"
	nices=()
	for c in "${credits[@]}"; do nices+=("$(nice_for "$c" 1024)"); done
	echo "== credits ${credits[*]} (nice ${nices[*]}): median loops each domain did; dom-3 against none"
	printf '%-8s %8s %8s %8s %8s %10s\n' policy dom-1 dom-2 dom-3 dom-4 "dom-3/none"
	[ -n "$report" ] && echo "# policy dom-1 dom-2 dom-3 dom-4 dom3_vs_none" >"$report/credits.tsv"
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
		printf '%-8s %8s %8s %8s %8s %10s\n' "$p" "${meds[@]}" "$ratio"
		[ -n "$report" ] && echo "$p ${meds[*]} $ratio" >>"$report/credits.tsv"
	done
	echo
fi

if [[ $only == *" fwt "* ]]; then
	write_conf equal 256 256 256 256
	fwt_cmd="latency $fwt_period_ms $fwt_kernel_us $secs"
	echo "== fwt: dom-1 calls every ${fwt_period_ms} ms (a ${fwt_kernel_us} us kernel and its copy) beside three coupled loops"
	printf '%-8s %12s %12s %8s\n' policy "p50 (us)" "p99 (us)" calls
	[ -n "$report" ] && echo "# policy p50_us p99_us calls" >"$report/fwt.tsv"
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
		printf '%-8s %12s %12s %8s\n' "$p" "$p50" "$p99" "$n"
		[ -n "$report" ] && echo "$p $p50 $p99 $n" >>"$report/fwt.tsv"
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
	plot coupled "Coupled loop, 4 domains, equal credits (median of $reps x ${secs} s)" "loops/s, all domains" "set yrange [0:*]" \
		"'$report/coupled.tsv' using 3:xtic(1) title 'median loops/s'"
	plot credits "Credits 256/512/1024/256: work per domain (median)" "loops" "set yrange [0:*]" \
		"'$report/credits.tsv' using 2:xtic(1) title 'dom-1 (256)', '' using 3 title 'dom-2 (512)', '' using 4 title 'dom-3 (1024)', '' using 5 title 'dom-4 (256)'"
	plot fwt "Latency-sensitive guest beside 3 coupled loops" "per-call latency (us), log scale" "set logscale y" \
		"'$report/fwt.tsv' using 2:xtic(1) title 'p50', '' using 3 title 'p99'"
	echo "report: $report/{coupled,credits,fwt}.{tsv,png}"
fi
[[ $only == *" coupled "* ]] && echo "$summary"
exit 0
