#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# accc in real time: three domains with credits 1024/512/256 from --config,
# each saturating the GPU, hold it in the ratio 4:2:1 (each share within 5
# points) over 20 s, read back from xl-gpu stats --json.
. "$(dirname "$0")/lib.bash"
cat >"$T/xgpud.conf" <<'CONF'
domain = [ "name=dom-a, credit=1024", "name=dom-b, credit=512", "name=dom-c, credit=256" ]
CONF
start_xgpud --policy accc --config "$T/xgpud.conf"

secs=24
pids=()
for d in dom-a dom-b dom-c; do
	XGPU_DOMAIN=$d run_cuda "$B/bin/BlackScholes" -n 20000 -i 1000 -t $secs >"$T/$d.out" 2>&1 &
	pids+=($!)
done
wait_for 10 dom_gt dom-c ticks 0 || fail "dom-c never got the GPU"
sleep 2
stats >"$T/s1.json"
sleep 20
stats >"$T/s2.json"
for p in "${pids[@]}"; do
	wait "$p" || { cat "$T"/dom-*.out; fail "a workload failed"; }
done
for d in dom-a dom-b dom-c; do
	grep -q "verified=yes" "$T/$d.out" || fail "$d did not verify"
done
# Every domain must have been running for the whole window.
jq -s -r '[.[0].domains, .[1].domains] | transpose | map(select(.[0].name == .[1].name)) |
	(map(.[1].gpu_time_ns - .[0].gpu_time_ns) | add) as $total |
	.[] | "\(.[0].name) \(.[0].credit) \((.[1].gpu_time_ns - .[0].gpu_time_ns) / $total) \(.[1].busy_ns - .[0].busy_ns)"' \
	"$T/s1.json" "$T/s2.json" >"$T/shares"
cat "$T/shares"
while read -r name credit share busy; do
	want=$(awk -v c="$credit" 'BEGIN { printf "%.4f", c / 1792 }')
	note "$name: credit $credit, held share $share (expected $want), busy ${busy} ns"
	awk -v s="$share" -v w="$want" 'BEGIN { d = s - w; if (d < 0) d = -d; exit !(d <= 0.05) }' ||
		fail "$name held $share of the GPU, expected $want +- 0.05"
done <"$T/shares"
[ "$(wc -l <"$T/shares")" -eq 3 ] || fail "expected three domains in the window"
stop_xgpud
