#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - `make gpu-validate`: xgpu against NVIDIA's own runtime on a GPU
# machine, in one folder of tables and raw logs.
#
#   tools/gpu-validate/run.sh [BUILD_DIR] (default build; `make gpu-validate`
#   builds what it needs first)
#
# Starts private xgpud daemons (local mode, a socket in a temporary folder) on
# NVIDIA's driver (--executor cuda), or on the simulated driver when no GPU is
# usable, and runs:
#   (a) every bundled workload natively (NVIDIA's libcudart.so.13) and through
#       xgpu, checking RESULT lines and checksums; median times of N runs;
#   (b) callLatency's per-call figures, native against xgpu (from the runs of (a));
#   (c) copy bandwidth H2D and D2H, pageable and pinned, 4 KiB to 1 GiB;
#   (d) three domains sharing the GPU under --policy rr and --policy accc
#       (credits 1024/512/256 from a --config file), with the held (gpu_time_ns)
#       and measured (busy_ns) shares from xl-gpu stats --json;
#   (e) the CUDA-semantics test programs of tests/cuda through xgpu;
#   (f) the workloads built with nvcc's default static runtime (through xgpu's
#       libcuda.so.1) and the samples of tests/samples, natively and through xgpu;
#   (g) cuBLAS Sgemm and cuFFT with their results judged (GPU only: the
#       simulated driver has no host implementation of NVIDIA's kernels);
#   (h) fault isolation: a faulting kernel and a never-ending one in one
#       domain beside a bystander domain, then new processes.
# Writes summary.md and logs/ into the output folder; exits 1 when an output
# check failed (after writing the summary), 0 otherwise.
#
# Environment:
#   GPU_VALIDATE_EXECUTOR       auto (default), cuda or sim
#   GPU_VALIDATE_OUT            output folder (default build/gpu-validate/<UTC date>-<host>)
#   GPU_VALIDATE_RUNS           runs per workload and side for the medians (default 3)
#   GPU_VALIDATE_SHARE_SECONDS  length of each sharing run (default 20)
#   GPU_VALIDATE_BW_MAX         largest copy (default 1G; sim: 256M unless 8 GiB are free)
#   GPU_VALIDATE_SHARE_ARGS     the sharing runs' BlackScholes arguments, -t excepted
#   GPU_VALIDATE_NVCCFLAGS      the flags the programs were built with (for the summary)
#   GPU_VALIDATE_SECTIONS       the sections to run (default "a c d e f g h"; b comes with a)
#   GPU_VALIDATE_LIMIT          the longest any one program may run, in seconds (default: each
#                               run's own limit, 120 to 300 s); a first run on a new
#                               machine wants a short one
#   GPU_VALIDATE_COMMIT         the commit the summary names (bundle.sh's start.sh sets it)
#   GPU_VALIDATE_LIBDIR         where libcublas.so.13 and libcufft.so.12 are (folders,
#                               colon-separated), when neither the toolkit's lib64 nor the
#                               loader's cache has them
# For working on this script without a GPU:
#   GPU_VALIDATE_SELFTEST=1     sim only: fill the native columns with a second pass
#                               through xgpu (labelled so)
#   GPU_VALIDATE_XGPUD_ARGS     more xgpud options for every daemon, e.g. with
#                               GPU_VALIDATE_EXECUTOR=cuda, --cuda-driver build/lib/libxgpu-simdrv.so
set -euo pipefail
export LC_ALL=C

src=$(cd "$(dirname "$0")/../.." && pwd)
die() {
	echo "gpu-validate: $*" >&2
	exit 1
}
[ -d "${1:-build}" ] || die "no build folder ${1:-build}: run \`make gpu-validate\`"
B=$(cd "${1:-build}" && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
runs=${GPU_VALIDATE_RUNS:-3}
share_secs=${GPU_VALIDATE_SHARE_SECONDS:-20}
[[ $runs =~ ^[1-9][0-9]?$ ]] || die "GPU_VALIDATE_RUNS=$runs: need 1 to 99"
[[ $share_secs =~ ^[1-9][0-9]{0,3}$ ]] || die "GPU_VALIDATE_SHARE_SECONDS=$share_secs: need 1 to 9999"
[[ ${GPU_VALIDATE_LIMIT:-1} =~ ^[1-9][0-9]{0,3}$ ]] || die "GPU_VALIDATE_LIMIT=$GPU_VALIDATE_LIMIT: need 1 to 9999"

workloads=()
for d in "$src"/tools/workloads/*/; do
	workloads+=("$(basename "$d")")
done
test_progs=()
for f in "$src"/tests/cuda/*.cu; do
	# guestload is the experiment's load generator, not a semantics test.
	[ "$(basename "$f")" = guestload.cu ] || test_progs+=("$(basename "$f" .cu)")
done
samples=()
for f in "$src"/tests/samples/*.cu; do
	samples+=("$(basename "$f" .cu)")
done
sections=${GPU_VALIDATE_SECTIONS:-a c d e f g h}
[[ $sections =~ ^[ac-h\ ]+$ ]] || die "GPU_VALIDATE_SECTIONS=$sections: need letters among a, c, d, e, f, g and h (b comes with a)"
for f in bin/xgpud bin/xl-gpu bin/gpuval-bandwidth bin/gpuval-libs lib/libcudart.so.13 lib/libcuda.so.1 "${workloads[@]/#/bin/}" \
	"${test_progs[@]/#/tests/cuda/}" "${workloads[@]/#/bin/static/}" "${samples[@]/#/tests/samples/}" \
	"${samples[@]/#/tests/samples/static/}" tests/samples/drvsample tests/samples/graphs_drv; do
	[ -e "$B/$f" ] || die "missing $B/$f: run \`make gpu-validate\`, which builds it"
done
command -v jq >/dev/null || die "jq is needed (tools/install-deps.sh installs it)"

# ---- output folder ----------------------------------------------------------
if [ -n "${GPU_VALIDATE_OUT:-}" ]; then
	out=$GPU_VALIDATE_OUT
else
	out=$src/build/gpu-validate/$(date -u +%Y-%m-%d)-$(hostname -s)
	n=2
	base=$out
	while [ -e "$out" ]; do
		out=$base-$n
		n=$((n + 1))
	done
fi
mkdir -p "$out" || die "cannot create the output folder $out"
out=$(cd "$out" && pwd)
rm -rf "$out/logs" "$out/summary.md"
logs=$out/logs
mkdir "$logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/xgpu-gpuval.XXXXXX")
export XGPU_SOCKET=$work/xgpud.sock
daemon=
daemon_name=
daemon_opts=()
started=$EPOCHREALTIME
started_utc=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
summary_written=0
failures=()
notes=()

say() {
	echo "gpu-validate: $*"
}
# A failed output check: the suite exits 1, after the summary.
check_failed() {
	failures+=("$*")
	echo "gpu-validate: FAILED: $*" >&2
}
note() {
	notes+=("$*")
	echo "gpu-validate: note: $*"
}
# Seconds since $1 (an EPOCHREALTIME), three decimals.
since() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.3f", b - a}'
}

# ---- executor ---------------------------------------------------------------
ldconfig_bin=$(command -v ldconfig || echo /sbin/ldconfig)
have_libcuda() {
	"$ldconfig_bin" -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && return 0
	local d
	IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
	for d in "${dirs[@]}"; do
		[ -n "$d" ] && [ -e "$d/libcuda.so.1" ] && return 0
	done
	return 1
}
mode=${GPU_VALIDATE_EXECUTOR:-auto}
case $mode in
sim)
	executor=sim
	why="GPU_VALIDATE_EXECUTOR=sim"
	;;
cuda)
	executor=cuda
	why="GPU_VALIDATE_EXECUTOR=cuda"
	;;
auto)
	if ! command -v nvidia-smi >/dev/null; then
		executor=sim
		why="nvidia-smi is not installed"
	elif ! smi=$(nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$smi"; then
		executor=sim
		why="nvidia-smi lists no usable GPU ($(head -1 <<<"$smi"))"
	elif ! have_libcuda; then
		executor=sim
		why="libcuda.so.1 (NVIDIA's driver library) is not installed"
	else
		executor=cuda
		why="nvidia-smi lists $(grep -c '^GPU ' <<<"$smi") GPU(s) and libcuda.so.1 is installed"
	fi
	;;
*) die "GPU_VALIDATE_EXECUTOR=$mode: need auto, cuda or sim" ;;
esac
# native: gpu (NVIDIA's runtime on the GPU), selftest (xgpu again) or none.
native=none
[ "$executor" = cuda ] && native=gpu
[ "$executor" = sim ] && [ "${GPU_VALIDATE_SELFTEST:-0}" = 1 ] && native=selftest
NA="n/a (no GPU)"
SIMTAG=
[ "$executor" = sim ] && SIMTAG=" (SIMULATED)"

if [ "$executor" = cuda ]; then
	gpu_info=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
		head -1) || gpu_info=
	device=$(cut -d, -f1 <<<"$gpu_info" | sed 's/^ *//')
	driver=$(cut -d, -f2 <<<"$gpu_info" | sed 's/^ *//')
	gpu_mem=$(cut -d, -f3 <<<"$gpu_info" | sed 's/^ *//')
	{ nvidia-smi 2>&1 || true; } >"$logs/nvidia-smi.txt"
else
	device="simulated (xgpu's simulated driver; no GPU)"
	driver="n/a (simulated)"
	gpu_mem="n/a"
fi
say "executor $executor: $why"

# Library paths: ours first for xgpu runs; NVIDIA's toolkit runtime for
# native runs, with any entry naming our build removed.
orig_ldp=
IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
for d in "${dirs[@]}"; do
	[ -z "$d" ] && continue
	[ "$(cd "$d" 2>/dev/null && pwd)" = "$B/lib" ] && continue
	orig_ldp=${orig_ldp:+$orig_ldp:}$d
done
xgpu_ldp=$B/lib${orig_ldp:+:$orig_ldp}
native_ldp=$CUDA_HOME/lib64${orig_ldp:+:$orig_ldp}
[ "$native" = selftest ] && native_ldp=$xgpu_ldp

# cudart_of LDPATH BINARY: the libcudart.so.13 the loader picks.
cudart_of() {
	{ LD_LIBRARY_PATH=$1 ldd "$2" 2>/dev/null || true; } | awk '$1 == "libcudart.so.13" {print $3}'
}

# ---- daemons ------------------------------------------------------------------
sim_env=()
[ "$executor" = sim ] && sim_env=(XGPU_SIM_KERNELS="$B/lib/simkernels:$B/tests/simkernels")
read -r -a xgpud_extra <<<"${GPU_VALIDATE_XGPUD_ARGS:-}"

# start_daemon NAME [OPTIONS...]: a private xgpud logging to logs/xgpud-NAME.log.
# Returns 1 (the daemon gone) if it did not come up.
start_daemon() {
	daemon_name=$1
	shift
	daemon_opts=("$@")
	local log=$logs/xgpud-$daemon_name.log
	local opts=("${xgpud_extra[@]}" "$@")
	echo "${sim_env[*]:+env ${sim_env[*]} }$B/bin/xgpud --foreground --executor $executor --socket $XGPU_SOCKET${opts[*]:+ ${opts[*]}}" \
		>>"$logs/commands.txt"
	env "${sim_env[@]}" "$B/bin/xgpud" --foreground --executor "$executor" --socket "$XGPU_SOCKET" \
		"${opts[@]}" >"$log" 2>&1 &
	daemon=$!
	for _ in $(seq 300); do
		"$B/bin/xl-gpu" list >/dev/null 2>&1 && return 0
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$daemon" 2>/dev/null || true
	wait "$daemon" 2>/dev/null || true
	daemon=
	return 1
}

# Stops the daemon; one that fails to stop cleanly fails the suite.
stop_daemon() {
	[ -n "$daemon" ] || return 0
	kill -TERM "$daemon" 2>/dev/null || true
	# A daemon stuck in a driver call does not stop: killed after 15 s.
	local i
	for i in $(seq 150); do
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$daemon" 2>/dev/null; then
		kill -KILL "$daemon" 2>/dev/null || true
		check_failed "xgpud ($daemon_name) did not stop within 15 s of SIGTERM and was killed (logs/xgpud-$daemon_name.log)"
	fi
	local rc=0
	wait "$daemon" || rc=$?
	daemon=
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 137 ]; then
		check_failed "xgpud ($daemon_name) exited with status $rc (logs/xgpud-$daemon_name.log)"
	fi
}


# Starts a daemon a section needs, or records why the section cannot run.
need_daemon() {
	local name=$1
	if ! start_daemon "$@"; then
		check_failed "xgpud ($name) did not start: $(awk NF "$logs/xgpud-$name.log" | tail -n 1) (logs/xgpud-$name.log)"
		return 1
	fi
	local got
	got=$("$B/bin/xl-gpu" stats --json 2>/dev/null | jq -r .executor 2>/dev/null) || got="(no answer)"
	if [ "$got" != "$executor" ]; then
		check_failed "xgpud ($name) runs executor '$got', not $executor"
		stop_daemon
		return 1
	fi
}

# ---- running programs -------------------------------------------------------
# run_one LABEL SIDE LIMIT [VAR=VALUE...] PROGRAM [ARGS...]: runs a program
# natively or through xgpu, stdout and stderr in logs/LABEL.out and .err;
# sets rc and wall (seconds).
run_one() {
	local label=$1 side=$2 limit=$3 ldp=$xgpu_ldp
	shift 3
	local extra=()
	if [ "$side" = native ]; then
		ldp=$native_ldp
		# selftest: a domain of its own, so it never shares one with the xgpu side;
		# XGPU_VALIDATE_NATIVE: tests/cuda/errors.cu leaves out what crashes CUDA
		extra=(XGPU_VALIDATE_NATIVE=1)
		[ "$native" = selftest ] && extra+=(XGPU_DOMAIN=selftest-native)
	fi
	[ -n "${GPU_VALIDATE_LIMIT:-}" ] && [ "$GPU_VALIDATE_LIMIT" -lt "$limit" ] && limit=$GPU_VALIDATE_LIMIT
	local t0=$EPOCHREALTIME
	rc=0
	timeout -k 5 "$limit" env LD_LIBRARY_PATH="$ldp" "${extra[@]}" "$@" >"$logs/$label.out" \
		2>"$logs/$label.err" || rc=$?
	wall=$(since "$t0")
	[ "$rc" -eq 124 ] && echo "gpu-validate: killed after ${limit}s" >>"$logs/$label.err"
	printf '%-7s rc=%-3s %8ss  LD_LIBRARY_PATH=%s %s\n' "$side" "$rc" "$wall" "$ldp" "$*" >>"$logs/commands.txt"
}

# rkey FILE KEY: KEY's value on the last RESULT line of FILE (empty if none).
rkey() {
	[ -f "$1" ] || return 0
	sed -n "s/^RESULT .* $2=\([^ ]*\).*/\1/p" "$1" | tail -n 1
}
# Median of the numbers given (empty if none).
median() {
	printf '%s\n' "$@" | awk '/^[-0-9.e+]+$/' | sort -g |
		awk '{a[NR] = $1} END {if (NR == 0) print ""; else if (NR % 2) print a[(NR + 1) / 2];
			else printf "%.6g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
# fmt DECIMALS VALUE, or "-" when VALUE is empty.
fmt() {
	[ -n "$2" ] && awk -v d="$1" -v v="$2" 'BEGIN {printf "%.*f", d, v}' || printf -- -
}
# ratio A B: A / B with two decimals, "-" when either is missing or B is 0.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || b + 0 == 0) printf "-";
		else printf "%.2f", a / b}'
}
human() {
	awk -v n="$1" 'BEGIN {split("B KiB MiB GiB TiB", u, " "); i = 1;
		while (n >= 1024 && n % 1024 == 0 && i < 5) {n /= 1024; i++} printf "%d %s", n, u[i]}'
}

# The section being written; summary fragments go to $work/sec-*.md.
sec() {
	section_file=$work/sec-$1.md
	: >"$section_file"
}
md() {
	printf '%s\n' "$@" >>"$section_file"
}

# ---- arguments per mode -------------------------------------------------------
# Heavier on a GPU (so that the timed part is more than start-up), lighter on
# the simulated driver, whose kernels are host code.
wl_args() {
	if [ "$executor" = cuda ]; then
		case $1 in
		vectorAdd) echo "-n 16M -i 100" ;;
		BlackScholes) echo "-n 4M -i 100" ;;
		callLatency) echo "-i 5000" ;;
		esac
	else
		case $1 in
		vectorAdd) echo "-n 4M -i 20" ;;
		BlackScholes) echo "-n 512K -i 8" ;;
		callLatency) echo "-i 2000" ;;
		esac
	fi
}
# The sharing runs' workload: BlackScholes with many launches per pass, so
# that each domain alone would keep the GPU busy most of the time.
if [ -n "${GPU_VALIDATE_SHARE_ARGS:-}" ]; then
	read -r -a share_cmd <<<"BlackScholes $GPU_VALIDATE_SHARE_ARGS -t $share_secs"
elif [ "$executor" = cuda ]; then
	share_cmd=(BlackScholes -n 4M -i 10000 -t "$share_secs")
else
	share_cmd=(BlackScholes -n 256K -i 64 -t "$share_secs")
fi
if [ -n "${GPU_VALIDATE_BW_MAX:-}" ]; then
	bw_max=$GPU_VALIDATE_BW_MAX
	bw_why="GPU_VALIDATE_BW_MAX"
elif [ "$executor" = cuda ]; then
	bw_max=1G
	bw_why="the default"
else
	avail_kb=$(awk '$1 == "MemAvailable:" {print $2}' /proc/meminfo)
	if [ "${avail_kb:-0}" -ge $((8 << 20)) ]; then
		bw_max=1G
		bw_why="sim, $((avail_kb >> 20)) GiB of memory available"
	else
		bw_max=256M
		bw_why="sim, capped: only $((${avail_kb:-0} >> 20)) GiB of memory available"
	fi
fi

# ---- (a) workloads and (b) call latency -----------------------------------------
section_a() {
	say "(a) bundled workloads, $runs run(s) per side"
	sec a
	md "## (a) Bundled workloads, native and through xgpu$SIMTAG" ""
	md "Median of $runs run(s) per side, native and xgpu runs interleaved. *Wall* is the whole process" \
		"(start-up and context creation included); *timed* is the program's own timed part" \
		"(\`elapsed_s\` of its RESULT line). Ratios are xgpu / native. Checksums are FNV-1a over the" \
		"output the program copied back (\`checksum=\` on its RESULT line)." ""
	md "| workload | arguments | verified (native / xgpu) | checksum native | checksum xgpu | checksums | wall native (s) | wall xgpu (s) | wall ratio | timed native (s) | timed xgpu (s) | timed ratio |"
	md "|---|---|---|---|---|---|---|---|---|---|---|---|"
	need_daemon workloads || {
		md "" "Not run: xgpud did not start (see the failures above)." ""
		return 0
	}
	local w i side
	for w in "${workloads[@]}"; do
		local args
		read -r -a args <<<"$(wl_args "$w")"
		declare -A ver=() sums=() okc=()
		local nwall=() xwall=() nel=() xel=()
		for i in $(seq "$runs"); do
			for side in native xgpu; do
				[ "$side" = native ] && [ "$native" = none ] && continue
				local label=a-$w-$side-$i
				run_one "$label" "$side" 180 "$B/bin/$w" "${args[@]}"
				local v
				v=$(rkey "$logs/$label.out" verified)
				if [ "$rc" -ne 0 ] || [ "$v" != yes ]; then
					check_failed "(a) $w, $side run $i: exit status $rc, verified=${v:-(no RESULT line)} (logs/$label.out, .err)"
					ver[$side]=no
					continue # neither its time nor its checksum counts
				fi
				: "${ver[$side]:=yes}"
				okc[$side]=$((${okc[$side]:-0} + 1))
				sums[$side]="${sums[$side]:-} $(rkey "$logs/$label.out" checksum)"
				if [ "$side" = native ]; then
					nwall+=("$wall")
					nel+=("$(rkey "$logs/$label.out" elapsed_s)")
				else
					xwall+=("$wall")
					xel+=("$(rkey "$logs/$label.out" elapsed_s)")
				fi
			done
		done
		# Checksums: every run of a side the same, and the two sides equal.
		local nsum xsum cmp nuniq xuniq
		nuniq=$(tr ' ' '\n' <<<"${sums[native]:-}" | awk NF | sort -u | wc -l)
		xuniq=$(tr ' ' '\n' <<<"${sums[xgpu]:-}" | awk NF | sort -u | wc -l)
		nsum=$(tr ' ' '\n' <<<"${sums[native]:-}" | awk NF | sort -u | paste -sd/ -)
		xsum=$(tr ' ' '\n' <<<"${sums[xgpu]:-}" | awk NF | sort -u | paste -sd/ -)
		if [ -z "$xsum" ] && [ -z "$nsum" ]; then
			cmp="— (none printed)"
			[ -n "${okc[native]:-}${okc[xgpu]:-}" ] || cmp="— (no run verified)"
		elif [ "$xuniq" -gt 1 ] || [ "$nuniq" -gt 1 ]; then
			cmp="**DIFFER between runs**"
			check_failed "(a) $w: checksums differ between runs (native: ${nsum:-none}; xgpu: ${xsum:-none})"
		elif [ "$native" = none ]; then
			cmp="$NA; the $runs xgpu runs agree"
		elif [ -z "${okc[native]:-}" ] || [ -z "${okc[xgpu]:-}" ]; then
			cmp="— (no verified run on one side)"
		elif [ "$nsum" = "$xsum" ]; then
			cmp="equal"
		else
			cmp="**DIFFER**"
			check_failed "(a) $w: native checksum ${nsum:-none} != xgpu checksum ${xsum:-none}"
		fi
		local nw xw ne xe
		nw=$(median "${nwall[@]}")
		xw=$(median "${xwall[@]}")
		ne=$(median "${nel[@]}")
		xe=$(median "${xel[@]}")
		if [ "$native" = none ]; then
			md "| $w | \`${args[*]}\` | $NA / ${ver[xgpu]:-no} | $NA | \`${xsum:--}\` | $cmp | $NA | $(fmt 3 "$xw") | $NA | $NA | $(fmt 3 "$xe") | $NA |"
		else
			md "| $w | \`${args[*]}\` | ${ver[native]:-no} / ${ver[xgpu]:-no} | \`${nsum:--}\` | \`${xsum:--}\` | $cmp | $(fmt 3 "$nw") | $(fmt 3 "$xw") | $(ratio "$xw" "$nw") | $(fmt 3 "$ne") | $(fmt 3 "$xe") | $(ratio "$xe" "$ne") |"
		fi
		unset ver sums okc
	done
	stop_daemon
	[ "$native" = selftest ] && md "" "SELFTEST: the native columns are a second pass through xgpu (sim), not NVIDIA's runtime."
	md ""
	section_b
}

section_b() {
	sec b
	md "## (b) Call latency, native and through xgpu$SIMTAG" ""
	if [[ " ${workloads[*]} " != *" callLatency "* ]]; then
		md "Not run: no callLatency workload." ""
		return 0
	fi
	md "From the callLatency runs of (a) (\`$(wl_args callLatency)\`): per call in µs, the median over" \
		"the runs of each run's p50 and mean; overhead is xgpu minus native." ""
	md "| call | native p50 | xgpu p50 | overhead p50 | native mean | xgpu mean | overhead mean | xgpu p99 |"
	md "|---|---|---|---|---|---|---|---|"
	local k i s
	for k in launch_sync stream_query memcpy_h2d memcpy_d2h event_sync; do
		declare -A v=()
		for s in native xgpu; do
			for stat in p50 mean p99; do
				local vals=()
				for i in $(seq "$runs"); do
					vals+=("$(rkey "$logs/a-callLatency-$s-$i.out" "${k}_${stat}_us")")
				done
				v[$s.$stat]=$(median "${vals[@]}")
			done
		done
		local title
		case $k in
		launch_sync) title="empty kernel launch + cudaStreamSynchronize" ;;
		stream_query) title="cudaStreamQuery (idle stream)" ;;
		memcpy_h2d) title="cudaMemcpy 4 B host to device" ;;
		memcpy_d2h) title="cudaMemcpy 4 B device to host" ;;
		event_sync) title="cudaEventRecord + cudaEventSynchronize" ;;
		esac
		if [ "$native" = none ]; then
			md "| $title | $NA | $(fmt 2 "${v[xgpu.p50]}") | $NA | $NA | $(fmt 2 "${v[xgpu.mean]}") | $NA | $(fmt 2 "${v[xgpu.p99]}") |"
		else
			local op om
			op=$(awk -v a="${v[xgpu.p50]}" -v b="${v[native.p50]}" 'BEGIN {if (a == "" || b == "") print ""; else print a - b}')
			om=$(awk -v a="${v[xgpu.mean]}" -v b="${v[native.mean]}" 'BEGIN {if (a == "" || b == "") print ""; else print a - b}')
			md "| $title | $(fmt 2 "${v[native.p50]}") | $(fmt 2 "${v[xgpu.p50]}") | $(fmt 2 "$op") | $(fmt 2 "${v[native.mean]}") | $(fmt 2 "${v[xgpu.mean]}") | $(fmt 2 "$om") | $(fmt 2 "${v[xgpu.p99]}") |"
		fi
		unset v
	done
	md ""
}

# ---- (c) copy bandwidth -------------------------------------------------------------
# bw_field SIDE FIELD: FIELD of the BW line for $dir $mem $bytes in SIDE's output.
bw_field() {
	[ -f "$logs/c-bandwidth-$1.out" ] || return 0
	awk -v d="$dir" -v m="$mem" -v b="$bytes" -v f="$2" '$1 == "BW" && $2 == d && $3 == m && $4 == b {
		for (i = 5; i <= NF; i++) {split($i, kv, "="); if (kv[1] == f) print kv[2]}}' "$logs/c-bandwidth-$1.out"
}
section_c() {
	say "(c) copy bandwidth up to $bw_max"
	sec c
	md "## (c) Copy bandwidth, native and through xgpu$SIMTAG" ""
	md "\`gpuval-bandwidth -m $bw_max -t 0.25\` (tools/gpu-validate/bandwidth.cu; largest size: $bw_why):" \
		"synchronous cudaMemcpy, one untimed copy and then as many as fill 0.25 s (at least 3), timed" \
		"with clock_gettime up to a final cudaDeviceSynchronize; GB/s are 10^9 bytes per second. Every" \
		"point's bytes are checked after the round trip." ""
	need_daemon bandwidth || {
		md "Not run: xgpud did not start (see the failures above)." ""
		return 0
	}
	local side
	for side in native xgpu; do
		[ "$side" = native ] && [ "$native" = none ] && continue
		run_one "c-bandwidth-$side" "$side" 300 "$B/bin/gpuval-bandwidth" -m "$bw_max" -t 0.25
		local v
		v=$(rkey "$logs/c-bandwidth-$side.out" verified)
		if [ "$rc" -ne 0 ] || [ "$v" != yes ]; then
			check_failed "(c) bandwidth, $side: exit status $rc, verified=${v:-(no RESULT line)} (logs/c-bandwidth-$side.out, .err)"
		fi
	done
	stop_daemon
	md "| direction | host memory | size | native GB/s | xgpu GB/s | xgpu / native | native µs per copy | xgpu µs per copy | verified |"
	md "|---|---|---|---|---|---|---|---|---|"
	# Rows: pageable then pinned, H2D then D2H, by size; from whichever side printed them.
	local keys f
	for f in "$logs/c-bandwidth-xgpu.out" "$logs/c-bandwidth-native.out"; do
		[ -f "$f" ] || continue
		keys=$(awk '$1 == "BW" {print ($3 == "mem=pinned"), ($2 == "dir=d2h"), substr($4, 7), $2, $3, $4}' "$f" |
			sort -n -k1,1 -k2,2 -k3,3 | cut -d' ' -f4-)
		[ -n "$keys" ] && break
	done
	local dir mem bytes
	while read -r dir mem bytes; do
		[ -n "$dir" ] || continue
		local d=${dir#dir=} m=${mem#mem=} n=${bytes#bytes=}
		local xg xu xv ng nu nv
		xg=$(bw_field xgpu gbps)
		xu=$(bw_field xgpu us_per_copy)
		xv=$(bw_field xgpu verified)
		local D=H2D
		[ "$d" = d2h ] && D=D2H
		if [ "$native" = none ]; then
			md "| $D | $m | $(human "$n") | $NA | $(fmt 2 "$xg") | $NA | $NA | $(fmt 1 "$xu") | ${xv:--} |"
		else
			ng=$(bw_field native gbps)
			nu=$(bw_field native us_per_copy)
			nv=$(bw_field native verified)
			md "| $D | $m | $(human "$n") | $(fmt 2 "$ng") | $(fmt 2 "$xg") | $(ratio "$xg" "$ng") | $(fmt 1 "$nu") | $(fmt 1 "$xu") | ${nv:--} / ${xv:--} |"
		fi
	done <<<"${keys:-}"
	[ "$native" = selftest ] && md "" "SELFTEST: the native columns are a second pass through xgpu (sim), not NVIDIA's runtime."
	md ""
}

# ---- (d) sharing --------------------------------------------------------------------
doms=(dom-a dom-b dom-c)
declare -A credit=([dom-a]=1024 [dom-b]=512 [dom-c]=256)

# share_run POLICY [XGPUD OPTIONS...]
share_run() {
	local policy=$1
	shift
	md "### --policy $policy$SIMTAG" ""
	if ! start_daemon "share-$policy" --policy "$policy" "$@"; then
		local msg
		msg=$(awk NF "$logs/xgpud-share-$policy.log" | tail -n 1)
		# A build without the policy or without --config says so and exits;
		# one that lists both and still fails to start has a real problem.
		if [ "$policy" = accc ] && { ! "$B/bin/xgpud" --help | grep -qw accc ||
			"$B/bin/xgpud" --help | grep -q -- '--config.*not available'; }; then
			md "**accc not available in this build**: xgpud --policy accc ${*/#$out\//} exited with:" \
				"\`${msg:-(nothing)}\` (logs/xgpud-share-$policy.log). Not counted as a failure." ""
			note "accc not available in this build (xgpud said: ${msg:-nothing})"
		else
			md "**Did not run**: xgpud exited with \`${msg:-(nothing)}\` (logs/xgpud-share-$policy.log)." ""
			check_failed "(d) xgpud --policy $policy did not start: ${msg:-no message}"
		fi
		return 0
	fi
	local t0=$EPOCHREALTIME pids=() d
	for d in "${doms[@]}"; do
		run_one "d-$policy-$d" xgpu $((share_secs + 120)) XGPU_DOMAIN="$d" "$B/bin/${share_cmd[0]}" \
			"${share_cmd[@]:1}" &
		pids+=($!)
	done
	# Snapshots while all three run: the window excludes start-up and the
	# ragged end, when fewer domains compete.
	local warm
	warm=$(awk -v s="$share_secs" 'BEGIN {w = s / 5; if (w > 3) w = 3; printf "%.1f", w}')
	sleep "$warm"
	local w0=$EPOCHREALTIME
	"$B/bin/xl-gpu" stats --json >"$logs/d-$policy-stats-start.json" || true
	sleep "$(awk -v s="$share_secs" -v w="$warm" 'BEGIN {e = s - 2 * w; if (e < 0.5) e = 0.5; printf "%.1f", e}')"
	"$B/bin/xl-gpu" stats --json >"$logs/d-$policy-stats-end.json" || true
	local window
	window=$(since "$w0")
	local i st=0
	for i in 0 1 2; do
		wait "${pids[$i]}" || st=1
	done
	local total
	total=$(since "$t0")
	"$B/bin/xl-gpu" stats --json >"$logs/d-$policy-stats-final.json" || true
	stop_daemon
	# run_one ran in subshells: take each program's status from its output.
	local csum=0
	for d in "${doms[@]}"; do
		csum=$((csum + ${credit[$d]}))
	done
	md "Three domains, each running \`${share_cmd[*]}\` at the same time; ${total} s in all." \
		"Window: the ${window} s between snapshots taken ${warm} s after the start and ${warm} s before the" \
		"planned end, while all three compete. *Held* is the domain's share of gpu_time_ns (time" \
		"holding the GPU slot), *busy* its share of busy_ns (measured device time of its kernels and" \
		"copies); *busy % of window* is busy_ns over the window's wall time." ""
	md "| domain | credit (stats) | expected share | held share (window) | busy share (window) | busy % of window | held share (whole run) | busy share (whole run) | passes | verified |"
	md "|---|---|---|---|---|---|---|---|---|---|"
	local s0=$logs/d-$policy-stats-start.json s1=$logs/d-$policy-stats-end.json sf=$logs/d-$policy-stats-final.json
	for d in "${doms[@]}"; do
		local exp v passes row
		if [ "$policy" = accc ]; then
			exp=$(awk -v c="${credit[$d]}" -v s="$csum" 'BEGIN {printf "%.1f%%", 100 * c / s}')
		else
			exp="33.3%"
		fi
		v=$(rkey "$logs/d-$policy-$d.out" verified)
		passes=$(rkey "$logs/d-$policy-$d.out" passes)
		if [ "$policy" = accc ]; then
			local got
			got=$(jq -r --arg d "$d" '.domains[] | select(.name == $d) | .credit' "$sf" 2>/dev/null) || got=
			[ "$got" = "${credit[$d]}" ] ||
				note "(d) accc: $d reports credit ${got:-(none)} in xl-gpu stats, not ${credit[$d]} from logs/accc.cfg"
		fi
		if [ "$v" != yes ]; then
			check_failed "(d) $policy: $d's ${share_cmd[0]} did not verify: verified=${v:-(no RESULT line)} (logs/d-$policy-$d.out, .err)"
		fi
		row=$(jq -rn --arg d "$d" --argjson win "$window" --slurpfile a "$s0" --slurpfile b "$s1" \
			--slurpfile f "$sf" '
			def dom($s; $n): ($s[0].domains // [] | map(select(.name == $n)) | .[0]) // {};
			def delta($k; $n): ((dom($b; $n)[$k] // 0) - (dom($a; $n)[$k] // 0));
			def pct($x; $t): if $t > 0 then 100 * $x / $t else "-" end;
			["dom-a", "dom-b", "dom-c"] as $all |
			([$all[] | delta("gpu_time_ns"; .)] | add) as $gw |
			([$all[] | delta("busy_ns"; .)] | add) as $bw |
			([$all[] | dom($f; .).gpu_time_ns // 0] | add) as $gf |
			([$all[] | dom($f; .).busy_ns // 0] | add) as $bf |
			[ (dom($f; $d).credit // "-" | tostring),
			  pct(delta("gpu_time_ns"; $d); $gw), pct(delta("busy_ns"; $d); $bw),
			  pct(delta("busy_ns"; $d); $win * 1e9),
			  pct(dom($f; $d).gpu_time_ns // 0; $gf), pct(dom($f; $d).busy_ns // 0; $bf) ] | @tsv' \
			2>/dev/null) || row="-	-	-	-	-	-"
		row=$(awk -F'\t' '{printf "%s", $1; for (i = 2; i <= 6; i++)
			printf " | %s", ($i == "-" || $i == "") ? "-" : sprintf("%.1f%%", $i)}' <<<"$row")
		local c=${row%% |*}
		md "| $d | $c | $exp | ${row#* | } | ${passes:--} | ${v:-no} |"
	done
	md ""
	[ "$st" -eq 0 ] || note "(d) $policy: a domain's program exited non-zero (see its row)"
}

section_d() {
	say "(d) three domains sharing the GPU, ${share_secs} s per policy"
	sec d
	md "## (d) Three domains sharing the GPU$SIMTAG" ""
	share_run rr
	local cfg=$logs/accc.cfg
	cat >"$cfg" <<-'EOF'
		# xgpud --config for the accc run of make gpu-validate: per-domain credits
		domain = [ "name=dom-a, credit=1024", "name=dom-b, credit=512", "name=dom-c, credit=256" ]
	EOF
	share_run accc --config "$cfg"
}

# ---- (e) CUDA-semantics tests -------------------------------------------------------------
# Each program as tests/e2e runs it: its arguments, the daemon options it
# expects, and whether NVIDIA's runtime should give the same answer (the
# others test what xgpu adds: memory limits, unsupported calls, fork).
test_args() {
	case $1 in
	userapp-compressed) echo "-n 4096" ;;
	esac
}
test_limited() { # needs --mem-limit 64M --pinned-limit 8M
	case ${1%-compressed} in
	limits | bigglobal) return 0 ;;
	esac
	return 1
}
test_native_ref() {
	case ${1%-compressed} in
	errors | userapp) return 0 ;;
	esac
	return 1
}

# test_row PROGRAM LIMITED: runs one test program through xgpu (and natively
# when it is a reference) and writes its row.
test_row() {
	local p=$1 dopts=$2 args
	read -r -a args <<<"$(test_args "$p")"
	local label=e-$p-xgpu
	run_one "$label" xgpu 180 XGPU_DOMAIN="t-$p" "$B/tests/cuda/$p" "${args[@]}"
	local v res
	v=$(rkey "$logs/$label.out" verified)
	if [ "$rc" -eq 0 ] && [ "$v" = yes ]; then
		res=pass
	else
		res="**FAIL** (exit $rc, verified=${v:-none})"
		check_failed "(e) $p through xgpu: exit status $rc, verified=${v:-(no RESULT line)} (logs/$label.out, .err)"
	fi
	local nres
	if ! test_native_ref "$p"; then
		nres="— (tests xgpu's own behaviour)"
	elif [ "$native" = none ]; then
		nres=$NA
	else
		run_one "e-$p-native" native 180 "$B/tests/cuda/$p" "${args[@]}"
		local nv
		nv=$(rkey "$logs/e-$p-native.out" verified)
		if [ "$rc" -eq 0 ] && [ "$nv" = yes ]; then
			nres=pass
		else
			nres="**differs** (exit $rc, verified=${nv:-none})"
			note "(e) $p does not pass against NVIDIA's runtime (exit status $rc, verified=${nv:-(no RESULT line)}; logs/e-$p-native.out, .err): either the test expects what CUDA does not do, or the native run failed"
		fi
	fi
	local a="—"
	[ "${#args[@]}" -eq 0 ] || a="\`${args[*]}\`"
	md "| $p | $a | $dopts | $res | $nres |"
}

# log_check DAEMON REGEX WHAT: a line the daemon must have logged.
log_check() {
	if grep -sqE "$2" "$logs/xgpud-$1.log" "$logs/xgpud-$1"-r[0-9]*.log; then
		md "| xgpud log ($1) | \`$2\` | | pass | |"
	else
		md "| xgpud log ($1) | \`$2\` | | **FAIL** | |"
		check_failed "(e) xgpud ($1) did not log $3 (/$2/ in logs/xgpud-$1.log)"
	fi
}

section_e() {
	say "(e) CUDA-semantics tests through xgpu"
	sec e
	md "## (e) CUDA-semantics tests (tests/cuda) through xgpu$SIMTAG" ""
	md "The programs tests/e2e runs against the simulated driver in \`make test\`, here through xgpu on" \
		"the $executor executor, each in a domain of its own. *Native* runs the programs whose" \
		"expectations are plain CUDA semantics against NVIDIA's runtime, as a check on the tests" \
		"themselves (a difference there is a note, not a failure)." ""
	md "| program | arguments | xgpud options | through xgpu | native (reference) |"
	md "|---|---|---|---|---|"
	local p
	if need_daemon tests; then
		for p in "${test_progs[@]}"; do
			if ! test_limited "$p"; then
				test_row "$p" default
				test_row "$p-compressed" default
			fi
		done
		stop_daemon
		log_check tests "called cudaIpcGetEventHandle, which xgpu does not support" "the unsupported call"
		log_check tests "device context is broken by CUDA_ERROR_ILLEGAL_ADDRESS" "the sticky error"
	else
		md "| (default daemon) | | | **not run**: xgpud did not start | |"
	fi
	local lim="--mem-limit 64M --pinned-limit 8M"
	if need_daemon tests-limits --mem-limit 64M --pinned-limit 8M; then
		for p in "${test_progs[@]}"; do
			if test_limited "$p"; then
				test_row "$p" "\`$lim\`"
				test_row "$p-compressed" "\`$lim\`"
			fi
		done
		# From tests/e2e/memlimit.sh: a workload over the limit fails cleanly.
		run_one e-vectorAdd-over-limit xgpu 120 XGPU_DOMAIN=t-overlimit "$B/bin/vectorAdd" -n 8000000
		if [ "$rc" -ne 0 ] && grep -qi "out of memory\|cudaErrorMemoryAllocation" \
			"$logs/e-vectorAdd-over-limit.out" "$logs/e-vectorAdd-over-limit.err"; then
			md "| vectorAdd (96 MiB under a 64 MiB limit: must fail with out of memory) | \`-n 8000000\` | \`$lim\` | pass | — |"
		else
			md "| vectorAdd (96 MiB under a 64 MiB limit: must fail with out of memory) | \`-n 8000000\` | \`$lim\` | **FAIL** (exit $rc) | — |"
			check_failed "(e) vectorAdd -n 8000000 under --mem-limit 64M did not fail with out of memory (logs/e-vectorAdd-over-limit.out, .err)"
		fi
		stop_daemon
		log_check tests-limits "pinned allocation of 16.0 MiB refused" "the pinned refusal"
		log_check tests-limits "module refused: its variables need 13421[0-9]{4} bytes" "the module charge"
	else
		md "| (limited daemon) | | | **not run**: xgpud did not start | |"
	fi
	md ""
}

# ---- (f) static runtime and samples -------------------------------------------------------
# verified_in FILE: the program's own verdict line says its results held.
verified_in() {
	grep -qE '^RESULT .*verified=yes|^graphs_drv: OK' "$1" 2>/dev/null
}

# f_row NAME BUILD PROGRAM [ARGS...]: one run natively and one through xgpu;
# both must exit 0 and verify their results, with equal checksums where the
# program prints one.
f_row() {
	local name=$1 build=$2 prog=$3
	shift 3
	local label=f-$name-${build// /-} res nres nsum= xsum= nw= xw= cmp
	run_one "$label-xgpu" xgpu 300 XGPU_DOMAIN="f-$name" "$prog" "$@"
	xw=$wall
	if [ "$rc" -eq 0 ] && verified_in "$logs/$label-xgpu.out"; then
		res=pass
		xsum=$(rkey "$logs/$label-xgpu.out" checksum)
	else
		res="**FAIL** (exit $rc)"
		check_failed "(f) $name ($build) through xgpu: exit status $rc, results not verified (logs/$label-xgpu.out, .err)"
	fi
	if [ "$native" = none ]; then
		nres=$NA
	else
		run_one "$label-native" native 300 "$prog" "$@"
		nw=$wall
		if [ "$rc" -eq 0 ] && verified_in "$logs/$label-native.out"; then
			nres=pass
			nsum=$(rkey "$logs/$label-native.out" checksum)
		else
			nres="**differs** (exit $rc)"
			note "(f) $name ($build) does not pass against NVIDIA's runtime (exit status $rc; logs/$label-native.out, .err)"
		fi
	fi
	if [ -z "$nsum$xsum" ]; then
		cmp="— (none printed)"
	elif [ "$native" = none ]; then
		cmp="$NA"
	elif [ "$res" != pass ] || [ "$nres" != pass ]; then
		cmp="— (a side did not verify)"
	elif [ "$nsum" = "$xsum" ]; then
		cmp=equal
	else
		cmp="**DIFFER**"
		check_failed "(f) $name ($build): native checksum ${nsum:-none} != xgpu checksum ${xsum:-none}"
	fi
	local a="—"
	[ "$#" -eq 0 ] || a="\`${*/#$B\//}\`"
	md "| $name | $build | $a | $nres | $res | $cmp | $(fmt 3 "$nw") | $(fmt 3 "$xw") | $(ratio "$xw" "$nw") |"
}

section_f() {
	say "(f) static-runtime builds and the samples"
	sec f
	md "## (f) Static-runtime builds and the samples, native and through xgpu$SIMTAG" ""
	md "The workloads built with nvcc's default static runtime (NVIDIA's runtime inside the program," \
		"over xgpu's libcuda.so.1 when run through xgpu) and the samples of tests/samples in both" \
		"builds, plus the driver-API ones. One run per side, each program in a domain of its own;" \
		"every program judges its own results. Wall times include start-up and context creation." ""
	md "| program | build | arguments | native | through xgpu | checksums | wall native (s) | wall xgpu (s) | wall ratio |"
	md "|---|---|---|---|---|---|---|---|---|"
	need_daemon samples || {
		md "" "Not run: xgpud did not start (see the failures above)." ""
		return 0
	}
	local w s args
	for w in "${workloads[@]}"; do
		read -r -a args <<<"$(wl_args "$w")"
		f_row "$w" static "$B/bin/static/$w" "${args[@]}"
	done
	for s in "${samples[@]}"; do
		args=()
		[ "$s" = bigcopy ] && args=(128)
		f_row "$s" "-cudart shared" "$B/tests/samples/$s" "${args[@]}"
		f_row "$s" static "$B/tests/samples/static/$s" "${args[@]}"
	done
	f_row drvsample "driver API" "$B/tests/samples/drvsample" "$B/tests/data/drvsample_kernels.fatbin"
	f_row graphs_drv "driver API" "$B/tests/samples/graphs_drv" "$B/tests/data/graphs.fatbin"
	stop_daemon
	if grep -sq "which xgpu does not support" "$logs"/xgpud-samples*.log; then
		check_failed "(f) a program called something xgpu does not support (logs/xgpud-samples.log)"
		md "" "**The daemon logged unsupported calls** (logs/xgpud-samples.log)."
	fi
	md ""
}

# ---- (g) NVIDIA's libraries ------------------------------------------------------------------
# The folders holding libcublas.so.13 and libcufft.so.12, colon-separated;
# "(the loader's cache)" when the loader finds them anyway; empty if neither.
nvlib_path() {
	local lib d found path=
	IFS=: read -r -a cands <<<"${GPU_VALIDATE_LIBDIR:-}"
	for lib in libcublas.so.13 libcufft.so.12; do
		found=
		for d in "${cands[@]}" "$CUDA_HOME/lib64" "$CUDA_HOME/targets/x86_64-linux/lib"; do
			if [ -n "$d" ] && [ -e "$d/$lib" ]; then
				found=$d
				break
			fi
		done
		if [ -z "$found" ]; then
			"$ldconfig_bin" -p 2>/dev/null | grep -q "${lib//./\\.} " || return 0
			found="(the loader's cache)"
		fi
		[[ ":$path:" == *":$found:"* ]] || path=${path:+$path:}$found
	done
	echo "$path"
}

section_g() {
	say "(g) cuBLAS and cuFFT"
	sec g
	md "## (g) NVIDIA's libraries: cuBLAS and cuFFT, results judged$SIMTAG" ""
	if [ "$executor" = sim ]; then
		md "Not run: the simulated driver has no host implementation of NVIDIA's library kernels" \
			"(\`make test\`'s e2e/driver_libs runs their calls on it, without judging the products)." ""
		return 0
	fi
	local dir
	dir=$(nvlib_path)
	if [ -z "$dir" ]; then
		check_failed "(g) libcublas.so.13 and libcufft.so.12 not found (set GPU_VALIDATE_LIBDIR)"
		md "Not run: libcublas.so.13 and libcufft.so.12 were not found." ""
		return 0
	fi
	md "\`gpuval-libs\` (tools/gpu-validate/libs.cu, nvcc's default static runtime, NVIDIA's libcublas" \
		"and libcufft from $dir): Sgemm of small integers, so that C must equal the host's product" \
		"bit for bit; a batch of 16 complex transforms of length 2^16 of cosines, forward (peaks" \
		"checked) and inverse (round trip checked). Median of $runs run(s) per side." ""
	md "| side | verified | Sgemm mismatches | FFT peak error | FFT round-trip error | Sgemm GFLOP/s (median) | wall (s, median) | checksum |"
	md "|---|---|---|---|---|---|---|---|"
	need_daemon libs || {
		md "" "Not run: xgpud did not start (see the failures above)." ""
		return 0
	}
	# NVIDIA's libraries after everything else on both sides.
	local extra_ldp= d
	IFS=: read -r -a dirs <<<"$dir"
	for d in "${dirs[@]}"; do
		[ "${d:0:1}" = / ] && extra_ldp=$extra_ldp:$d
	done
	local saved_x=$xgpu_ldp saved_n=$native_ldp
	xgpu_ldp=$xgpu_ldp$extra_ldp
	native_ldp=$native_ldp$extra_ldp
	local i side
	declare -A gf=() wl=() ok=() last=()
	for i in $(seq "$runs"); do
		for side in native xgpu; do
			local label=g-libs-$side-$i
			run_one "$label" "$side" 300 XGPU_DOMAIN=g-libs "$B/bin/gpuval-libs" -n 1024 -i 200
			if [ "$rc" -eq 0 ] && [ "$(rkey "$logs/$label.out" verified)" = yes ]; then
				ok[$side]=${ok[$side]:-yes}
			else
				ok[$side]=no
				check_failed "(g) gpuval-libs $side run $i: exit status $rc, results not verified (logs/$label.out, .err)"
			fi
			gf[$side]="${gf[$side]:-} $(rkey "$logs/$label.out" sgemm_gflops)"
			wl[$side]="${wl[$side]:-} $wall"
			last[$side]=$logs/$label.out
		done
	done
	xgpu_ldp=$saved_x
	native_ldp=$saved_n
	stop_daemon
	for side in native xgpu; do
		local f=${last[$side]}
		# shellcheck disable=SC2086 # the lists are words
		md "| $side | ${ok[$side]} | $(rkey "$f" sgemm_mismatches) | $(rkey "$f" fft_peak_err) | $(rkey "$f" fft_roundtrip_err) | $(median ${gf[$side]}) | $(fmt 3 "$(median ${wl[$side]})") | \`$(rkey "$f" checksum)\` |"
	done
	local nsum xsum
	nsum=$(rkey "${last[native]}" checksum)
	xsum=$(rkey "${last[xgpu]}" checksum)
	[ -z "$nsum" ] || [ -z "$xsum" ] || [ "$nsum" = "$xsum" ] || check_failed "(g) Sgemm's product differs: native $nsum, xgpu $xsum"
	md ""
}

# ---- (h) fault isolation ---------------------------------------------------------------------
# h_step WHAT EXPECTED LABEL: a row from the last run_one (rc, and LABEL's
# RESULT line); a step that did not go as expected is a failure.
h_step() {
	local what=$1 want=$2 label=$3 ok=$4
	if [ "$ok" = yes ]; then
		md "| $what | $want | pass | \`$(grep -h '^RESULT' "$logs/$label.out" 2>/dev/null | tail -n 1)\` |"
	else
		md "| $what | $want | **FAIL** (exit $rc) | \`$(awk NF "$logs/$label.err" "$logs/$label.out" 2>/dev/null | tail -n 1 | cut -c1-160)\` |"
		check_failed "(h) $what: not as expected ($want; logs/$label.out, .err)"
	fi
}

# h_case NAME DAEMON-OPTIONS BAD-ARGS...: a bystander domain runs vectorAdd
# while domain h-NAME runs guestload BAD-ARGS (a fault, or a kernel that
# never ends); then a new process in h-NAME and one in a new domain.
h_case() {
	local name=$1 opts=$2
	shift 2
	local -a dopts
	read -r -a dopts <<<"$opts"
	md "### guestload $* beside a bystander${opts:+ (xgpud $opts)}" ""
	md "| step | expected | result | last line |"
	md "|---|---|---|---|"
	need_daemon "iso-$name" "${dopts[@]}" || {
		md "| (daemon) | starts | **not run** | |"
		md ""
		return 0
	}
	local by_label=h-$name-bystander
	run_one "$by_label" xgpu 40 XGPU_DOMAIN="h-$name-bystander" "$B/bin/vectorAdd" -n 1M -t 8 &
	local by=$!
	sleep 2
	run_one "h-$name-bad" xgpu 30 XGPU_DOMAIN="h-$name" "$B/tests/cuda/guestload" "$@"
	local ok=no
	[ "$rc" -eq 0 ] && ok=yes # guestload exits 0 when it saw CUDA's sticky error where it should
	h_step "guestload $* in h-$name" "its own sticky error" "h-$name-bad" $ok
	wait "$by" || true
	ok=no
	grep -q "verified=yes" "$logs/$by_label.out" 2>/dev/null && ok=yes
	rc=0
	h_step "bystander (vectorAdd -t 8, another domain, running through it)" "finishes verified" "$by_label" $ok
	# Only h-$name's executor ended: the daemon is the same.
	kill -0 "$daemon" 2>/dev/null || check_failed "xgpud ($daemon_name) is gone after (h) guestload $*"
	run_one "h-$name-again" xgpu 20 XGPU_DOMAIN="h-$name" "$B/tests/cuda/guestload" spin 1 0.5
	ok=no
	[ "$rc" -eq 0 ] && ok=yes
	h_step "a new process in h-$name (guestload spin 1 0.5)" "a fresh context, runs" "h-$name-again" $ok
	run_one "h-$name-new" xgpu 20 XGPU_DOMAIN="h-$name-new" "$B/bin/vectorAdd" -n 1M
	ok=no
	[ "$rc" -eq 0 ] && verified_in "$logs/h-$name-new.out" && ok=yes
	h_step "a process in a new domain (vectorAdd)" "runs, verified" "h-$name-new" $ok
	stop_daemon
	md ""
}

section_h() {
	say "(h) fault isolation"
	sec h
	md "## (h) Fault isolation between domains$SIMTAG" ""
	md "What tests/e2e/fault_isolation.sh and kernel_timeout.sh check on the simulated driver: a" \
		domain's faulting kernel, or one that never ends (ended by xgpud's --kernel-timeout, which kills" \
		"that domain's executor), ends that domain's executor only; a bystander domain beside it" \
		"verifies, and the faulting domain's next process gets a fresh executor. A daemon of its own" \
		"per case." ""
	h_case fault "" fault illegal
	h_case runaway "--kernel-timeout 3" runaway
}

# ---- summary ----------------------------------------------------------------------------
write_summary() {
	local aborted=${1:-}
	local f=$out/summary.md commit
	if [ -n "${GPU_VALIDATE_COMMIT:-}" ]; then
		commit=$GPU_VALIDATE_COMMIT # a copy without .git (tools/gpu-validate/bundle.sh)
	else
		commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
		git -C "$src" diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
	fi
	{
		if [ "$executor" = sim ]; then
			echo "> **SIMULATED RUN — NO GPU FIGURES.** xgpud ran on xgpu's simulated CUDA driver"
			echo "> (\`--executor sim\`: $why). Every time, share and bandwidth below comes from the"
			echo "> simulated driver's model on this host's CPUs, not from a GPU; native columns are n/a."
			echo
		fi
		echo "# xgpu GPU validation"
		echo
		if [ -n "$aborted" ]; then
			echo "**ABORTED**: $aborted. The sections below are what had finished."
			echo
		fi
		if [ "${#failures[@]}" -eq 0 ] && [ -z "$aborted" ]; then
			echo "**Result: PASS** — every output check passed."
		else
			echo "**Result: FAIL** — ${#failures[@]} check(s) failed:"
			echo
			for x in "${failures[@]}"; do
				echo "- $x"
			done
		fi
		echo
		echo "| | |"
		echo "|---|---|"
		if [ "$executor" = cuda ]; then
			echo "| executor | **cuda** — NVIDIA's driver ($why) |"
		else
			echo "| executor | **SIMULATED** — \`--executor sim\`, no GPU ($why) |"
		fi
		echo "| device | ${device:-unknown} |"
		echo "| GPU memory | ${gpu_mem:-unknown} |"
		echo "| driver version | ${driver:-unknown} |"
		echo "| date | $started_utc |"
		echo "| host | $(hostname) ($(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)) |"
		echo "| xgpu commit | $commit |"
		echo "| CUDA toolkit | $("$CUDA_HOME/bin/nvcc" --version 2>/dev/null | sed -n 's/.*release \([^,]*\).*/\1/p') ($CUDA_HOME) |"
		echo "| device code | NVCCFLAGS \`${GPU_VALIDATE_NVCCFLAGS:-(not given; see the Makefile)}\`; $arch_note |"
		echo "| libcudart, native runs | ${native_rt:-$NA} |"
		echo "| libcudart, xgpu runs | ${xgpu_rt:-unknown} |"
		echo "| total time | $(since "$started") s |"
		echo
		if [ "${#notes[@]}" -gt 0 ]; then
			echo "Notes:"
			echo
			for x in "${notes[@]}"; do
				echo "- $x"
			done
			echo
		fi
		for s in a b c d e f g h; do
			if [ -f "$work/sec-$s.md" ]; then
				cat "$work/sec-$s.md"
			else
				echo "## ($s) not run"
				echo
			fi
		done
		echo "## Commands"
		echo
		echo "\`make gpu-validate\` ran \`tools/gpu-validate/run.sh ${B/#$src\//}\` with"
		echo "GPU_VALIDATE_EXECUTOR=$mode; each daemon and each program run, with its exit status and wall"
		if [ "$native" = none ]; then
			echo "time, is in logs/commands.txt. No native runs (no GPU). xgpu runs use"
		else
			echo "time, is in logs/commands.txt. Native runs use LD_LIBRARY_PATH=\`$native_ldp\`; xgpu runs"
		fi
		echo "LD_LIBRARY_PATH=\`$xgpu_ldp\` and XGPU_SOCKET=(a socket in a temporary folder). Daemons not"
		echo "named with a policy run the default (rr). The daemons:"
		echo
		echo '```'
		grep '/xgpud ' "$logs/commands.txt" 2>/dev/null || true
		echo '```'
		echo
		echo "## Files"
		echo
		echo "- \`summary.md\`: this file"
		echo "- \`logs/commands.txt\`: every command, exit status and wall time"
		echo "- \`logs/xgpud-*.log\`: each daemon's log"
		echo "- \`logs/<section>-<program>-<side>[-<run>].out\`, \`.err\`: each run's stdout and stderr"
		echo "- \`logs/d-<policy>-stats-{start,end,final}.json\`: \`xl-gpu stats --json\` of the sharing runs"
	} >"$f"
	# Paths inside the repository as the repository names them; the
	# temporary folder and the output folder by name.
	local p
	for p in "$f" "$logs/commands.txt"; do
		[ -f "$p" ] && sed -i "s|$work/|\$TMP/|g; s|$out/|\$OUT/|g; s|$src/||g" "$p"
	done
	summary_written=1
}

cleanup() {
	local rc=$?
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
		daemon=
	fi
	if [ "$summary_written" = 0 ] && [ -d "$logs" ]; then
		write_summary "the script stopped early (exit status $rc${err_line:+, at line $err_line})" || true
		echo "gpu-validate: stopped early; partial summary in $out/summary.md" >&2
	fi
	rm -rf "$work"
	[ "$rc" -ne 0 ] || [ "$summary_written" = 1 ] || rc=1
	exit "$rc"
}
err_line=
arch_note=
native_rt=
xgpu_rt=
trap 'err_line=$LINENO' ERR
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- main ------------------------------------------------------------------------------------
say "output folder $out"
xgpu_rt=$(cudart_of "$xgpu_ldp" "$B/bin/vectorAdd")
[ "$xgpu_rt" = "$B/lib/libcudart.so.13" ] ||
	check_failed "xgpu runs would load ${xgpu_rt:-no libcudart.so.13}, not $B/lib/libcudart.so.13"
if [ "$native" = gpu ]; then
	native_rt=$(cudart_of "$native_ldp" "$B/bin/vectorAdd")
	case $native_rt in
	"" | "$B"/*) check_failed "native runs would load ${native_rt:-no libcudart.so.13}, not NVIDIA's" ;;
	esac
elif [ "$native" = selftest ]; then
	native_rt="SELFTEST: xgpu again ($(cudart_of "$native_ldp" "$B/bin/vectorAdd"))"
fi
# Which device code the programs carry (cuobjdump is not in every toolkit).
if [ -x "$CUDA_HOME/bin/cuobjdump" ]; then
	arch_note="cuobjdump finds in vectorAdd: $(
		{
			"$CUDA_HOME/bin/cuobjdump" --list-elf "$B/bin/vectorAdd" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | sed 's/^/SASS /'
			"$CUDA_HOME/bin/cuobjdump" --list-ptx "$B/bin/vectorAdd" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | sed 's/^sm_/PTX compute_/'
		} | paste -sd, - | sed 's/,/, /g' || true
	)"
else
	arch_note="(cuobjdump is not installed: device code not inspected)"
fi
if [ -n "${GPU_VALIDATE_NVCCFLAGS:-}" ] && { [[ $GPU_VALIDATE_NVCCFLAGS != *sm_90* ]] ||
	[[ $GPU_VALIDATE_NVCCFLAGS != *compute_90* ]]; }; then
	note "NVCCFLAGS lack sm_90 SASS or compute_90 PTX: a Hopper GPU may JIT or refuse the kernels"
fi

if [ "$executor" = cuda ] && ! start_daemon probe; then
	msg=$(awk NF "$logs/xgpud-probe.log" | tail -n 1)
	check_failed "xgpud --executor cuda does not start: $msg (logs/xgpud-probe.log)"
	write_summary "xgpud could not use the GPU ($msg); set GPU_VALIDATE_EXECUTOR=sim to run simulated"
	exit 1
fi
stop_daemon

for s in $sections; do
	"section_$s"
done
write_summary
say "wrote $out/summary.md ($(since "$started") s)"
if [ "${#failures[@]}" -gt 0 ]; then
	say "${#failures[@]} check(s) FAILED:"
	printf '  %s\n' "${failures[@]}"
	exit 1
fi
say "all checks passed${SIMTAG:+ (SIMULATED: no GPU figures)}"
