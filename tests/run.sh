#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - run every xgpu test against one build tree and print one summary.
#
#   tests/run.sh BUILD_DIR [PATTERN]
#
# Unit tests are the cmocka binaries BUILD_DIR/tests/test_*; their cases are
# counted one by one. End-to-end tests are tests/e2e/*.sh, one count each; they
# start the real daemon and real CUDA programs from BUILD_DIR. Every test gets
# XGPU_BUILD (absolute build dir) and XGPU_SRC (repo root) in its environment
# and a private scratch directory in XGPU_TMP; an e2e test gets
# XGPU_E2E_TIMEOUT seconds (300), or more where its script says
# "# xgpu-test-timeout: N". A script that says "# xgpu-test-background: yes"
# (a VM under QEMU's software CPU, mostly waiting on one core) starts first
# and runs beside the others; its result is reported at the end. The last
# line is "N passed, N failed".
set -u
build=${1:?usage: tests/run.sh BUILD_DIR [PATTERN]}
pattern=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
export XGPU_BUILD=$(cd "$build" && pwd)
export XGPU_SRC=$src
# Sanitizers: fail on any report, including leaks; keep UBSan quiet unless it fires.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$src/tests/lsan.supp:print_suppressions=0}
export CMOCKA_MESSAGE_OUTPUT=stdout
unit_timeout=${XGPU_UNIT_TIMEOUT:-300}
e2e_timeout=${XGPU_E2E_TIMEOUT:-300}

passed=0
failed=0
failures=()
logdir=$(mktemp -d "${TMPDIR:-/tmp}/xgpu-tests.XXXXXX")

run_unit() {
	local bin=$1 name log
	name=$(basename "$bin")
	log=$logdir/$name.log
	export XGPU_TMP=$logdir/$name.tmp
	mkdir -p "$XGPU_TMP"
	timeout -k 10 "$unit_timeout" "$bin" >"$log" 2>&1
	local rc=$?
	local p f
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1 # crashed, timed out or a sanitizer fired outside a test case
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -ne 0 ]; then
		failures+=("$name")
		echo "FAIL $name (exit $rc): last lines of $log"
		tail -n 40 "$log" | sed 's/^/    /'
	else
		echo "ok   $name ($p cases)"
	fi
}

# Runs one e2e script into its log; its exit status, then its seconds, go
# to $logdir/e2e-NAME.rc.
e2e_exec() {
	local script=$1 name=$2 log=$3
	export XGPU_TMP=$logdir/e2e-$name.tmp
	mkdir -p "$XGPU_TMP"
	local t0=$SECONDS limit=$e2e_timeout own
	# A test that boots VMs under QEMU's software CPU may ask for more time
	# with a "# xgpu-test-timeout: SECONDS" line.
	own=$(sed -n 's/^# xgpu-test-timeout: \([0-9][0-9]*\)$/\1/p' "$script" | head -n 1)
	[ -n "$own" ] && [ "$own" -gt "$limit" ] && limit=$own
	timeout -k 10 "$limit" bash "$script" >"$log" 2>&1
	echo "$? $((SECONDS - t0))" >"$logdir/e2e-$name.rc"
}

e2e_report() {
	local name=$1 log=$2 rc secs
	read -r rc secs <"$logdir/e2e-$name.rc"
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		echo "ok   e2e/$name (${secs}s)"
	else
		failed=$((failed + 1))
		failures+=("e2e/$name")
		echo "FAIL e2e/$name (exit $rc, ${secs}s): last lines of $log"
		tail -n 60 "$log" | sed 's/^/    /'
	fi
}

run_e2e() {
	local script=$1 name
	name=$(basename "$script" .sh)
	e2e_exec "$script" "$name" "$logdir/e2e-$name.log"
	e2e_report "$name" "$logdir/e2e-$name.log"
}

selected() {
	[ -z "$pattern" ] || [[ $(basename "$1") == *$pattern* ]]
}
is_background() {
	grep -qx '# xgpu-test-background: yes' "$1"
}

background=()
for script in "$src"/tests/e2e/*.sh; do
	[ -f "$script" ] && selected "$script" && is_background "$script" || continue
	name=$(basename "$script" .sh)
	echo "bg   e2e/$name: started, reported at the end"
	e2e_exec "$script" "$name" "$logdir/e2e-$name.log" &
	background+=("$!:$name")
done

for bin in "$XGPU_BUILD"/tests/test_*; do
	[ -x "$bin" ] && selected "$bin" || continue
	run_unit "$bin"
done
for script in "$src"/tests/e2e/*.sh; do
	[ -f "$script" ] && selected "$script" && ! is_background "$script" || continue
	run_e2e "$script"
done
for job in "${background[@]}"; do
	wait "${job%%:*}"
	e2e_report "${job#*:}" "$logdir/e2e-${job#*:}.log"
done

echo
echo "logs: $logdir"
if ((failed)); then
	echo "failed: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
