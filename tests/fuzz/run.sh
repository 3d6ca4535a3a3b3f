#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - `make fuzz`: runs every harness in FUZZ_BUILD/bin for FUZZ_SECONDS
# (default 60) each, one after the other, on its corpus FUZZ_BUILD/corpus/<harness>/
# (kept between runs, started from FUZZ_BUILD/seeds/<harness>/) with its
# dictionary tests/fuzz/<harness>.dict when there is one. A crash, leak,
# timeout or sanitizer report leaves its input in FUZZ_BUILD/crashes/<harness>/
# and prints the one-line command that reproduces it. Ends with
#   fuzz: N harnesses, E execs, C crashes
#
#   FUZZ_SECONDS=60 [FUZZ_ONLY=fuzz_dispatch] [FUZZ_JOBS_ARGS=...] tests/fuzz/run.sh FUZZ_BUILD
set -u
fb=${1:?usage: tests/fuzz/run.sh FUZZ_BUILD}
fb=$(cd "$fb" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${FUZZ_SECONDS:-60}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$src/tests/lsan.supp:print_suppressions=0}

harnesses=0 execs=0 crashes=0
for bin in "$fb"/bin/fuzz_*; do
	[ -x "$bin" ] || continue
	h=$(basename "$bin")
	[ -n "${FUZZ_ONLY:-}" ] && [[ " $FUZZ_ONLY " != *" $h "* ]] && continue
	corpus=$fb/corpus/$h
	art=$fb/crashes/$h
	log=$fb/logs/$h.log
	mkdir -p "$corpus" "$art" "$fb/logs"
	dict=()
	[ -f "$src/tests/fuzz/$h.dict" ] && dict=(-dict="$src/tests/fuzz/$h.dict")
	before=$(ls "$art" | wc -l)
	# -timeout: one input may take 10 s (a kernel the simulated driver runs
	# on the host is stopped by its own watchdog before that).
	"$bin" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
		-artifact_prefix="$art/" ${FUZZ_ARGS:-} "$corpus" "$fb/seeds/$h" >"$log" 2>&1
	rc=$?
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
	harnesses=$((harnesses + 1))
	execs=$((execs + ${n:-0}))
	found=$(($(ls "$art" | wc -l) - before))
	if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then
		found=1 # it died without leaving an input (e.g. in its setup)
	fi
	crashes=$((crashes + found))
	printf '%-16s %10s execs  %-20s %s\n' "$h" "${n:-0}" "${cov:-}" "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc, log $log)")"
	if [ "$rc" -ne 0 ]; then
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -3 | sed 's/^/    /'
		for f in $(ls -t "$art" | head -"$found"); do
			echo "    reproduce: $bin $art/$f"
		done
	fi
done
echo "fuzz: $harnesses harnesses, $execs execs, $crashes crashes"
[ "$crashes" -eq 0 ]
