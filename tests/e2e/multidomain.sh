#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Three domains (XGPU_DOMAIN) run workloads at the same time; each verifies
# its results and the daemon accounts each domain separately.
. "$(dirname "$0")/lib.bash"
start_xgpud --policy rr

pids=()
for d in alpha beta gamma; do
	case $d in
	alpha) prog=("$B/bin/BlackScholes" -n 100000 -t 3) ;;
	beta) prog=("$B/bin/vectorAdd" -n 500000 -t 3) ;;
	gamma) prog=("$B/tests/cuda/userapp" -n 65536) ;;
	esac
	XGPU_DOMAIN=$d run_cuda "${prog[@]}" >"$T/$d.out" 2>&1 &
	pids+=($!)
done
for i in 0 1 2; do
	wait "${pids[$i]}" || { cat "$T"/*.out; fail "a domain's program failed"; }
done
for d in alpha beta gamma; do
	grep -q "verified=yes" "$T/$d.out" || fail "$d did not verify"
	calls=$(dom_stat "$d" calls)
	gt=$(dom_stat "$d" gpu_time_ns)
	note "$d: $calls calls, $gt ns of GPU slot time"
	[ "$calls" -gt 0 ] && [ "$gt" -gt 0 ] || fail "$d was not accounted"
done
[ "$(stats | jq '.domains | length')" -eq 3 ] || fail "expected exactly three domains"
stop_xgpud
