#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh disable=SC3043  # busybox ash has local
# xen-dom0.sh - dom0 payload of tools/experiment/xen.sh, run by
# tools/xen-testbed/boot.sh on the patched hypervisor (sched=credit):
# xgpud --transport xen --executor sim --hyp-source xenpatch, four PV domUs
# g1..g4 (tools/experiment/xen-domu.sh) with equal GPU credits and equal CPU
# weights, then one round of the coupled loop in all four at once per policy
# of EXP_POLICIES, set live with xl-gpu policy. First g1 alone with each
# loop of EXP_SOLO_LOOPS ("CPU_MS MS BATCH;...", none by default).
# Lines for xen.sh: "EXP-RESULT NAME POLICY DOMU RESULT..." per domU and round,
# "EXP-POLICY NAME POLICY hyp_source=S xgpud_cpu=PCT wall_s=T"
# per round; "EXP-FAIL why" on
# errors (the exit status counts them).
# shellcheck disable=SC1091 # in dom0 only
. /xtb/lib.sh
export PATH="/xgpu/bin:$PATH"
export XGPU_SOCKET=/run/xgpud.sock
secs=${EXP_SECONDS:-20}
loop=${EXP_LOOP:-40 20 2}
policies=${EXP_POLICIES:-none xc augc cosched}
domus='g1 g2 g3 g4'
XLOG=/tmp/xgpud.log
fails=0
bad() {
	echo "EXP-FAIL $*"
	fails=$((fails + 1))
}

xgpud --transport xen --executor sim --hyp-source xenpatch --policy none --foreground \
	--log-level info >"$XLOG" 2>&1 &
XPID=$!
xtb_until_answers "$XPID" 30 xl-gpu list || {
	bad "xgpud is not up: $(tail -n 5 "$XLOG")"
	exit "$fails"
}
echo "== xgpud up at $(up)s; scheduler $(xl info | awk -F': *' '/^xen_scheduler/ {print $2}')," \
	"$(xl info | awk -F': *' '/^nr_cpus/ {print $2}') PCPUs, free $(xl info | awk -F': *' '/^free_memory/ {print $2}') MB"

for d in $domus; do
	cfg=$(xtb_domu_cfg "$d" /xtb/domu-exp.cpio 'gpu = [ "gpus=0, credit=256" ]')
	sed -i "s/^memory = .*/memory = ${EXP_DOMU_MB:-128}/" "$cfg"
	out=$(xl-gpu create "$cfg" 2>&1) || bad "xl-gpu create $d: $(echo "$out" | tail -n 3)"
done
echo "== domUs created at $(up)s"

for d in $domus; do
	xtb_domu_wait_log "$d" 'EXP-DOMU: ready' 300 || bad "$d did not come up in 300 s: $(tail -n 5 "$(xtb_domu_log "$d")")"
done
[ "$fails" = 0 ] || exit "$fails"
echo "== domUs up at $(up)s: $(grep -h 'EXP-DOMU: ready' /var/log/xen/console/guest-g1.log | tr -d '\r')"
xl sched-credit
xl-gpu list

# cpu_ticks: xgpud's user + system CPU time so far, in clock ticks (100 Hz).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$XPID/stat"; }

# round NAME POLICY ARGS DOMU...: guestload ARGS in each DOMU at once; prints
# their RESULT lines and xgpud's CPU use.
n=0
round() {
	local name="$1" pol="$2" args="$3" d t0 c0 t1 c1
	shift 3
	n=$((n + 1))
	t0=$(up)
	c0=$(cpu_ticks)
	xl-gpu stats --json >/tmp/stats0.json
	for d in "$@"; do
		xenstore-write "/local/domain/$(xl domid "$d")/data/xgpu-exp-go" "$n $args"
	done
	for d in "$@"; do
		xtb_domu_wait_log "$d" "EXP-DONE $n " $((secs * 6 + 300)) || bad "$d did not finish round $n ($name $pol) in time"
	done
	t1=$(up)
	c1=$(cpu_ticks)
	for d in "$@"; do
		r=$(tr -d '\r' <"$(xtb_domu_log "$d")" | sed -n "s/^EXP-$n: \(RESULT .*\)/\1/p" | tail -n 1)
		[ -n "$r" ] || bad "$d: no RESULT in round $n: $(tr -d '\r' <"$(xtb_domu_log "$d")" | grep "EXP-$n" | tail -n 3)"
		echo "EXP-RESULT $name $pol $d $r"
	done
	# What the policy did in the round, per domain: calls, slot grants,
	# yields, time waiting for the slot, turns skipped, preemptions.
	xl-gpu stats --json >/tmp/stats1.json
	echo "EXP-SCHED $name $pol $(jq -c --slurpfile a /tmp/stats0.json '[.domains[] | . as $d |
		($a[0].domains[] | select(.domid == $d.domid)) as $o | {domid, calls: (.calls - $o.calls),
		grants: (.grants - $o.grants), yields: (.yields - $o.yields),
		wait_ms: ((.slot_wait_ns - $o.slot_wait_ns) / 1e6 | floor),
		skipped: (.turns_skipped - $o.turns_skipped), preempted: (.preempted - $o.preempted)}] |
		sort_by(.domid)' /tmp/stats1.json)"
	echo "EXP-POLICY $name $pol hyp_source=$(xl-gpu stats --json | jq -r .hyp_source)" \
		"xgpud_cpu=$(awk -v c=$((c1 - c0)) -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", c / (b - a) }')" \
		"wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
}

# set_policy P: xl-gpu policy P, and true once xgpud's stats show it.
set_policy() {
	local i=0
	xl-gpu policy "$1" >/dev/null 2>&1 || return 1
	while [ "$(xl-gpu stats --json 2>/dev/null | jq -r .policy)" != "$1" ]; do
		i=$((i + 1))
		[ "$i" -gt 25 ] && return 1
		sleep 0.2
	done
}

# Alone first: g1 with each loop of EXP_SOLO_LOOPS ("CPU_MS MS BATCH;...").
IFS=';'
for l in ${EXP_SOLO_LOOPS:-}; do
	unset IFS
	set_policy none || bad "policy none not applied"
	# shellcheck disable=SC2086 # the loop's three numbers
	set -- $l
	round "solo-$1/$2x$3" none "coupled $l $secs" g1
done
unset IFS
for p in $policies; do
	if set_policy "$p"; then
		echo "== policy $p at $(up)s: $(xl-gpu stats --json | jq -c '{policy, hyp_source, executor}')"
		# shellcheck disable=SC2086 # the domUs' names
		round coupled "$p" "coupled $loop $secs" $domus
	else
		bad "xl-gpu policy $p was not applied: stats say $(xl-gpu stats --json 2>&1 | jq -r .policy)"
	fi
done

n=$((n + 1))
for d in $domus; do xenstore-write "/local/domain/$(xl domid "$d")/data/xgpu-exp-go" "$n exit"; done
for d in $domus; do xtb_domu_wait "$d" 60 || xl destroy "$d"; done
kill -TERM "$XPID"
wait "$XPID" || bad "xgpud exited with status $?"
echo "== xgpud's view of the schedule source:"
grep -i -e xenpatch -e 'falling back' -e fallback "$XLOG" | head -n 5
grep -qi -e 'falling back' -e fallback "$XLOG" && bad "xgpud fell back from xenpatch"
echo "== done at $(up)s, $fails failed"
exit "$fails"
