#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kernel timeout: on a simulated GPU without a watchdog
# (XGPU_SIM_WATCHDOG_MS=0, as a data-center GPU), dom-run launches a kernel
# that never ends (spin<<<dim3(2^31-1, 65535), 1024>>>). Its domain's
# kernel-timeout of 2 s (--config; the daemon's default stays 30 s) destroys
# its context: the runaway's synchronize, its later calls and
# cudaGetLastError return cudaErrorLaunchTimeout, the daemon logs it and
# counts it in xl-gpu stats, a bystander's vectorAdd run finishes verified
# within 2 x (its solo time + the timeout), and a new process in dom-run gets
# a fresh context and works. Then a graph whose conditional while node never
# ends is ended the same way, within 10 s.
. "$(dirname "$0")/lib.bash"
export XGPU_SIM_WATCHDOG_MS=0
cat >"$T/xgpud.conf" <<'CONF'
domain = [ "name=dom-run, kernel-timeout=2" ]
CONF
start_xgpud --policy rr --config "$T/xgpud.conf"
prog=$B/tests/cuda/guestload
timeout_s=2

now() { date +%s.%N; }
t0=$(now)
XGPU_DOMAIN=bystander run_cuda "$B/bin/vectorAdd" -n 200000 -i 300 >"$T/solo.out" 2>&1 ||
	{ cat "$T/solo.out"; fail "the bystander's solo run failed"; }
solo=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
note "bystander alone: $solo s"
[ "$(dom_stat bystander kernel_timeout_s)" -eq 30 ] || fail "the default kernel timeout is not 30 s"

XGPU_DOMAIN=dom-run run_cuda "$prog" runaway >"$T/runaway.out" 2>&1 &
run=$!
wait_for 10 dom_gt dom-run kernels 0 || fail "the runaway never launched"
[ "$(dom_stat dom-run kernel_timeout_s)" -eq $timeout_s ] || fail "dom-run's kernel-timeout from --config is not applied"
t0=$(now)
XGPU_DOMAIN=bystander run_cuda "$B/bin/vectorAdd" -n 200000 -i 300 >"$T/bystander.out" 2>&1 ||
	{ cat "$T/bystander.out"; fail "the bystander failed next to the runaway"; }
took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
limit=$(awk -v s="$solo" -v t=$timeout_s 'BEGIN { printf "%.3f", 2 * (s + t) }')
note "bystander next to the runaway: $took s (limit 2 x ($solo + $timeout_s) = $limit s)"
grep -q "verified=yes" "$T/bystander.out" || { cat "$T/bystander.out"; fail "the bystander did not verify"; }
awk -v a="$took" -v l="$limit" 'BEGIN { exit !(a <= l) }' || fail "the bystander took $took s, over $limit s"

wait "$run" || { cat "$T/runaway.out"; fail "the runaway did not get cudaErrorLaunchTimeout everywhere"; }
note "$(grep RESULT "$T/runaway.out")"
grep -q "domain dom-run: an operation ran for .* past its kernel timeout of 2 s" "$XGPUD_LOG" ||
	fail "no log line for the timeout"
[ "$(dom_stat dom-run timeouts)" -eq 1 ] || fail "xl-gpu stats does not count dom-run's timeout"
[ "$(dom_stat bystander timeouts)" -eq 0 ] || fail "the bystander timed out"

wait_for 5 dom_eq dom-run channels 0 || fail "the runaway's channel did not go"
out=$(XGPU_DOMAIN=dom-run run_cuda "$prog" spin 1 0.5 2>&1) || { echo "$out"; fail "a new process in dom-run failed"; }
grep -q "verified=yes" <<<"$out" || { echo "$out"; fail "a new process in dom-run did not verify"; }
note "new process in dom-run: $(grep RESULT <<<"$out")"

# A conditional while node that never ends: on the simulated driver its
# loop runs inside cuGraphLaunch, before the launch has a busy mark, and
# the kernel timeout must end it all the same.
t0=$(now)
XGPU_DOMAIN=dom-run run_cuda "$B/tests/samples/graphs_cond" endless >"$T/endless.out" 2>&1 &
endless=$!
for _ in $(seq 100); do
	kill -0 "$endless" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$endless" 2>/dev/null; then
	kill -9 "$endless"
	fail "an endless while graph was not ended within 10 s (kernel timeout $timeout_s s)"
fi
wait "$endless" || { cat "$T/endless.out"; fail "an endless while graph did not end with cudaErrorLaunchTimeout"; }
took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
note "$(grep RESULT "$T/endless.out"), after $took s"
[ "$(dom_stat dom-run timeouts)" -eq 2 ] || fail "xl-gpu stats does not count the endless graph's timeout"
stop_xgpud
