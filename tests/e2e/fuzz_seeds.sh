#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz_seeds.sh - every libFuzzer harness (tests/fuzz/) over its seeds and
# kept regression inputs (build/fuzz/seeds/<harness>/: the bundled test data,
# mkseeds' request sequences and regions, tests/fuzz/corpus/<harness>/), each
# input run once: an input that once crashed, leaked or hung fails here. Then
# each harness fuzzes for a moment (FUZZ_SEEDS_SECONDS, 2 s) from those
# seeds (with a fixed seed), so a harness that no longer gets past its
# setup fails too.
set -euo pipefail
src=${XGPU_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
fb=$src/build/fuzz
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=0
export LSAN_OPTIONS=suppressions=$src/tests/lsan.supp:print_suppressions=0
tmp=${XGPU_TMP:-$(mktemp -d)}
mkdir -p "$tmp/tmpdir"
export TMPDIR=$tmp/tmpdir

n=0
for c in "$src"/tests/fuzz/fuzz_*.c; do
	h=$(basename "$c" .c)
	bin=$fb/bin/$h
	seeds=$fb/seeds/$h
	[ -x "$bin" ] || { echo "FAIL: $bin missing (make fuzz-build)"; exit 1; }
	[ -d "$seeds" ] && [ -n "$(ls -A "$seeds")" ] || { echo "FAIL: no seeds in $seeds"; exit 1; }
	# Each input once, by name, so a failure names it.
	if ! "$bin" -timeout=10 -rss_limit_mb=4096 "$seeds"/* >"$tmp/$h.seeds.log" 2>&1; then
		echo "FAIL: $h on its seeds:"
		grep -E 'Running:|ERROR|SUMMARY|runtime error' "$tmp/$h.seeds.log" | tail -5
		exit 1
	fi
	ran=$(grep -c '^Executed ' "$tmp/$h.seeds.log" || true)
	[ "$ran" -eq "$(ls "$seeds" | wc -l)" ] || { echo "FAIL: $h ran $ran of its seeds"; exit 1; }
	mkdir -p "$tmp/$h.corpus"
	if ! "$bin" -seed=1 -max_total_time="${FUZZ_SEEDS_SECONDS:-2}" -timeout=10 -rss_limit_mb=4096 \
		-artifact_prefix="$tmp/" "$tmp/$h.corpus" "$seeds" >"$tmp/$h.fuzz.log" 2>&1; then
		echo "FAIL: $h found a crash in ${FUZZ_SEEDS_SECONDS:-2} s (input in $tmp):"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$tmp/$h.fuzz.log" | head -5
		exit 1
	fi
	echo "ok: $h, $ran seeds; $(grep -E '^#[0-9]+' "$tmp/$h.fuzz.log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+')"
	# A harness leaves nothing behind in TMPDIR when it ends normally.
	left=$(ls -A "$tmp/tmpdir")
	[ -z "$left" ] || { echo "FAIL: $h left $left in its TMPDIR"; exit 1; }
	n=$((n + 1))
done
echo "$n harnesses pass their seeds"
