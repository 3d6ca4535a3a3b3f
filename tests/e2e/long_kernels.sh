#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Shares against long kernels, on a simulated GPU that time-slices between
# contexts and has no watchdog (XGPU_SIM_WATCHDOG_MS=0), as a data-center GPU:
# dom-long launches 500 ms kernels, dom-a and dom-b 1 ms kernels, credits
# 512/256/256. Under accc (overrun paid by skipped turns) and wfq (measured
# busy time charged), each domain's held share of the GPU slot (drains
# included) over whole cycles of dom-long is within 10 % of its credit share;
# its busy share (measured device time) within 20 %, as the 1 ms domains'
# own round trips between batches leave the device idle in their slots;
# and every workload's kernel count checks out.
. "$(dirname "$0")/lib.bash"
export XGPU_SIM_WATCHDOG_MS=0
cat >"$T/xgpud.conf" <<'CONF'
domain = [ "name=dom-long, credit=512", "name=dom-a, credit=256", "name=dom-b, credit=256" ]
CONF
prog=$B/tests/cuda/guestload

# Polls until dom-long's held time moves (its slot, drain included, just
# ended), then saves the statistics in FILE.
snapshot_after_long_slot() {
	local before now
	before=$(dom_stat dom-long gpu_time_ns)
	for _ in $(seq 100); do
		stats >"$1"
		now=$(jq -e '.domains[] | select(.name == "dom-long") | .gpu_time_ns' "$1")
		[ "$now" != "$before" ] && return 0
		sleep 0.05
	done
	fail "dom-long's slot did not end within 5 s"
}

for policy in accc wfq; do
	start_xgpud --policy "$policy" --config "$T/xgpud.conf"
	secs=15
	pids=()
	XGPU_DOMAIN=dom-long run_cuda "$prog" spin 500 $secs >"$T/$policy-long.out" 2>&1 &
	pids+=($!)
	for d in dom-a dom-b; do
		# Eight kernels between synchronizations keep the device busy
		# through their slots, as a real workload queues its work.
		XGPU_DOMAIN=$d run_cuda "$prog" spin 1 $secs 8 >"$T/$policy-$d.out" 2>&1 &
		pids+=($!)
	done
	wait_for 10 dom_gt dom-long grants 1 || fail "$policy: dom-long never got the GPU twice"
	snapshot_after_long_slot "$T/$policy-s1.json"
	sleep 8
	snapshot_after_long_slot "$T/$policy-s2.json"
	for p in "${pids[@]}"; do
		wait "$p" || { cat "$T/$policy"-*.out; fail "$policy: a workload failed"; }
	done
	for f in "$T/$policy"-*.out; do
		grep -q "verified=yes" "$f" || { cat "$f"; fail "$policy: $(basename "$f") did not verify"; }
	done
	jq -s -r '[.[0].domains, .[1].domains] | transpose | map(select(.[0].name == .[1].name)) |
		(map(.[1].gpu_time_ns - .[0].gpu_time_ns) | add) as $held |
		(map(.[1].busy_ns - .[0].busy_ns) | add) as $busy |
		.[] | "\(.[0].name) \(.[0].credit) \((.[1].gpu_time_ns - .[0].gpu_time_ns) / $held) \((.[1].busy_ns - .[0].busy_ns) / $busy) \(.[1].overrun_ns) \(.[1].turns_skipped) \((.[1].gpu_time_ns - .[0].gpu_time_ns) / 1e9)"' \
		"$T/$policy-s1.json" "$T/$policy-s2.json" >"$T/$policy-shares"
	[ "$(wc -l <"$T/$policy-shares")" -eq 3 ] || fail "$policy: expected three domains in the window"
	while read -r name credit held busy overrun skipped secs_held; do
		want=$(awk -v c="$credit" 'BEGIN { printf "%.4f", c / 1024 }')
		note "$policy $name: credit $credit, held share $held, busy share $busy (expected $want; held ${secs_held} s in the window), overrun ${overrun} ns, turns skipped $skipped"
		awk -v s="$held" -v w="$want" 'BEGIN { d = s - w; if (d < 0) d = -d; exit !(d <= 0.1 * w) }' ||
			fail "$policy: $name held a share of $held, expected $want +- 10 %"
		awk -v s="$busy" -v w="$want" 'BEGIN { d = s - w; if (d < 0) d = -d; exit !(d <= 0.2 * w) }' ||
			fail "$policy: $name had a busy share of $busy, expected $want +- 20 %"

	done <"$T/$policy-shares"
	stop_xgpud
done
