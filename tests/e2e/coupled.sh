#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The coupled workload of tools/experiment (guestload coupled): two domains
# under cosched with the local schedule source, each looping 5 ms of its own
# CPU time and a dependent batch of 4 x 2 ms kernels for 4 s. Every kernel
# is counted on the device, each domain completes loops, and none goes faster
# than its own loop allows (13 ms) nor both together faster than the GPU
# does their kernels (8 ms a loop): the figures run.sh reports are loops.
# Beside them dom-c is the experiment's latency-sensitive guest (guestload
# latency): a 500 us kernel and its copy every 20 ms, each timed, and no
# call can be faster than its kernel.
. "$(dirname "$0")/lib.bash"
start_xgpud --policy cosched --hyp-source local
pids=()
for d in dom-a dom-b; do
	XGPU_DOMAIN=$d run_cuda "$B/tests/cuda/guestload" coupled 5 2 4 4 >"$T/$d.out" 2>&1 &
	pids+=($!)
done
XGPU_DOMAIN=dom-c run_cuda "$B/tests/cuda/guestload" latency 20 500 4 >"$T/dom-c.out" 2>&1 &
pids+=($!)
for p in "${pids[@]}"; do
	wait "$p" || { cat "$T"/dom-*.out; fail "a coupled loop failed"; }
done
total=0
for d in dom-a dom-b; do
	res=$(grep '^RESULT ' "$T/$d.out") || { cat "$T/$d.out"; fail "$d printed no RESULT"; }
	note "$d: $res"
	grep -q 'verified=yes' <<<"$res" || fail "$d: kernel count did not check out"
	loops=$(sed -n 's/.* loops=\([0-9]*\).*/\1/p' <<<"$res")
	lps=$(sed -n 's/.* loops_per_s=\([0-9.]*\).*/\1/p' <<<"$res")
	[ "${loops:-0}" -ge 20 ] || fail "$d: only ${loops:-0} loops in 4 s"
	awk -v l="$lps" 'BEGIN { exit !(l <= 1000 / 13 * 1.02) }' || fail "$d: $lps loops/s, faster than its own 13 ms loop"
	total=$(awk -v a="$total" -v b="$lps" 'BEGIN { print a + b }')
done
awk -v t="$total" 'BEGIN { exit !(t <= 1000 / 8 * 1.02) }' || fail "$total loops/s together, faster than the GPU runs 8 ms of kernels a loop"
res=$(grep '^RESULT ' "$T/dom-c.out") || { cat "$T/dom-c.out"; fail "dom-c printed no RESULT"; }
note "dom-c: $res"
grep -q 'verified=yes' <<<"$res" || fail "dom-c: its calls did not check out"
calls=$(sed -n 's/.* calls=\([0-9]*\).*/\1/p' <<<"$res")
[ "${calls:-0}" -ge 40 ] && [ "$calls" -le 201 ] || fail "dom-c: ${calls:-0} calls in 4 s at one per 20 ms"
awk -v a="$(sed -n 's/.* p50_us=\([0-9.]*\).*/\1/p' <<<"$res")" -v b="$(sed -n 's/.* p99_us=\([0-9.]*\).*/\1/p' <<<"$res")" \
	'BEGIN { exit !(a >= 500 && b >= a) }' || fail "dom-c: latencies below the 500 us kernel or p99 < p50"
[ "$(dom_stat dom-a grants)" -gt 0 ] && [ "$(dom_stat dom-b grants)" -gt 0 ] || fail "cosched did not grant both domains"
stop_xgpud
