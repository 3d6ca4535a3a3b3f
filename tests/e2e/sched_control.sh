#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Live scheduling control: xl-gpu policy switches every GPU through every
# policy while three domains run, and no call is lost (every program
# verifies and the daemon counts every call each one made); xl-gpu credit
# changes credits live; bad values are refused naming the value and the
# range; an unprivileged user may look but not change anything.
. "$(dirname "$0")/lib.bash"
start_xgpud --policy rr

pids=()
for d in sw-a sw-b sw-c; do
	XGPU_DOMAIN=$d run_cuda "$B/bin/vectorAdd" -n 200000 -i 4 -t 8 >"$T/$d.out" 2>&1 &
	pids+=($!)
done
wait_for 10 dom_gt sw-c calls 0 || fail "sw-c never ran"
policies=(none rr accc xc slaf augc cosched wfq)
for round in 1 2; do
	for p in "${policies[@]}"; do
		"$B/bin/xl-gpu" policy "$p" >"$T/policy.out" || fail "xl-gpu policy $p failed"
		grep -q "GPU 0: $p" "$T/policy.out" || fail "GPU 0 did not switch to $p"
		sleep 0.3
	done
done
"$B/bin/xl-gpu" policy | grep -q "GPU 0: wfq" || fail "xl-gpu policy does not show wfq"
[ "$(stats | jq -r '.gpus[0].policy')" = wfq ] || fail "stats do not show wfq"
grep -q "GPU 0: policy cosched -> wfq" "$XGPUD_LOG" || fail "no log line for the switch"

# Credits, live.
"$B/bin/xl-gpu" credit sw-a -w 1024 -s 0.5 >"$T/credit.out" || fail "xl-gpu credit failed"
grep -qE "sw-a +[0-9]+ +1024 +0.500" "$T/credit.out" || { cat "$T/credit.out"; fail "credit not shown"; }
[ "$(dom_stat sw-a credit)" -eq 1024 ] || fail "credit not applied"
domid=$(dom_stat sw-b domid)
"$B/bin/xl-gpu" credit "$domid" -w 300 >/dev/null || fail "credit by domid failed"
[ "$(dom_stat sw-b credit)" -eq 300 ] || fail "credit by domid not applied"

# Bad values name the value and the range.
expect_refusal() {
	local want=$1
	shift
	if "$B/bin/xl-gpu" "$@" >"$T/bad.out" 2>&1; then
		fail "xl-gpu $* was accepted"
	fi
	grep -q -- "$want" "$T/bad.out" || { cat "$T/bad.out"; fail "xl-gpu $*: message lacks '$want'"; }
}
expect_refusal "from 1 to 65535" credit sw-a -w 0
expect_refusal "from 1 to 65535" credit sw-a -w 70000
expect_refusal "from 0 to 1" credit sw-a -s 1.5
expect_refusal "unknown policy 'fifo'" policy fifo
expect_refusal "no domain named 'nosuch'" credit nosuch -w 5
expect_refusal "GPU 7 does not exist" policy rr -g 7

# Another user may read, not change.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	chmod a+x "$T" "$(dirname "$T")"
	setpriv --reuid=65534 --regid=65534 --clear-groups env XGPU_SOCKET="$XGPU_SOCKET" \
		"$B/bin/xl-gpu" policy >/dev/null || fail "nobody cannot read the policy"
	if setpriv --reuid=65534 --regid=65534 --clear-groups env XGPU_SOCKET="$XGPU_SOCKET" \
		"$B/bin/xl-gpu" policy rr >"$T/nobody.out" 2>&1; then
		fail "nobody switched the policy"
	fi
	grep -q "needs root" "$T/nobody.out" || fail "refusal does not say why"
fi

for p in "${pids[@]}"; do
	wait "$p" || { cat "$T"/sw-*.out; fail "a workload failed across the switches"; }
done
for d in sw-a sw-b sw-c; do
	grep -q "verified=yes" "$T/$d.out" || fail "$d did not verify after policy switches"
done
# Every call each process made reached the daemon and was answered: the
# channels closed cleanly and nothing was refused.
wait_for 5 dom_eq sw-a channels 0 || fail "sw-a still has channels"
for d in sw-a sw-b sw-c; do
	[ "$(dom_stat "$d" errors)" -eq 0 ] || fail "$d saw errors across the switches"
done
grep -q "corrupted\|closing it" "$XGPUD_LOG" && fail "a channel was closed during the switches"
stop_xgpud
