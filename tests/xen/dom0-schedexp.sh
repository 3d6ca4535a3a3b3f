#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh disable=SC3043  # busybox ash
# dom0-schedexp.sh - dom0 payload of tests/e2e/xen_sched_patch.sh, run by
# tools/xen-testbed/boot.sh on the patched hypervisor booted with
# sched=credit. Each check prints "CHECK ok NAME" or "CHECK FAIL NAME: why";
# the exit status is the number of failures.
#   1. the credit scheduler runs (xl info), a busy PV domU (domu-busy.sh)
#      boots, and its weight/cap are set with xl sched-credit;
#   2. xgpu-schedexp maps the export and dumps it twice, a second apart:
#      valid header, a record for every PCPU, every sequence number advanced,
#      the domU's VCPU is cur in some snapshot with a nonzero slice, its
#      credit changes, and every domain's weight and cap match xl
#      sched-credit (also after a live change);
#   3. xgpud --transport xen --executor sim --hyp-source xenpatch runs augc
#      and then cosched: stats say hyp_source xenpatch, its log has no
#      fallback line.
# With XSP_MODE=stock (Debian's unpatched hypervisor) it checks instead that
# the export is absent: xgpu-schedexp says so (status 2), and xgpud
# --hyp-source xenpatch falls back to the xen source with a log line and runs.
. /xtb/lib.sh
export PATH=/xgpu/bin:$PATH
export XGPU_SOCKET=/run/xgpud.sock
fails=0
ok() { echo "CHECK ok $1"; }
bad() {
	echo "CHECK FAIL $1: $2"
	fails=$((fails + 1))
}
# check NAME WHY JQ-ARGS...: ok if jq -e succeeds, else bad with WHY.
check() {
	local name=$1 why=$2
	shift 2
	if jq -e "$@" >/dev/null 2>&1; then ok "$name"; else bad "$name" "$why"; fi
}

if [ "${XSP_MODE:-patched}" = stock ]; then
	out=$(xgpu-schedexp 2>&1)
	rc=$?
	echo "xgpu-schedexp on stock Xen: status $rc: $out"
	[ "$rc" = 2 ] && ok stock-absent || bad stock-absent "status $rc"
	log=/tmp/xgpud-stock.log
	xgpud --transport xen --executor sim --hyp-source xenpatch --policy augc --foreground \
		--log-level info >"$log" 2>&1 &
	xpid=$!
	xtb_until_answers "$xpid" 30 xl-gpu list || true
	grep -i xenpatch "$log" | head -n 3
	if kill -0 "$xpid" 2>/dev/null && grep -q 'xenpatch: .*falling back' "$log"; then
		ok stock-fallback
	else
		bad stock-fallback "xgpud did not fall back and run: $(tail -n 3 "$log")"
	fi
	kill -TERM "$xpid" 2>/dev/null
	wait "$xpid"
	echo "== done at $(up)s, $fails failed"
	exit "$fails"
fi

sched=$(xl info | awk -F': *' '/^xen_scheduler/ {print $2}')
ncpus=$(xl info | awk -F': *' '/^nr_cpus/ {print $2}')
echo "== scheduler $sched, $ncpus PCPUs, at $(up)s"
[ "$sched" = credit ] && ok sched-credit || bad sched-credit "xen_scheduler is '$sched'"

cfg=$(xtb_domu_cfg busy /xtb/domu-busy.cpio)
if out=$(xl create "$cfg" 2>&1); then ok xl-create; else bad xl-create "$out"; fi
DOMU=$(xl domid busy 2>/dev/null)
i=0
while ! grep -q 'BUSY-DOMU: spinning' "$(xtb_domu_log busy)" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -gt 300 ] && break
	sleep 0.2
done
grep -q 'BUSY-DOMU: spinning' "$(xtb_domu_log busy)" 2>/dev/null && ok domu-busy ||
	bad domu-busy "the busy domU did not start spinning in 60 s: $(tail -n 5 "$(xtb_domu_log busy)" 2>&1)"
xl sched-credit -d busy -w 384 -c 90 || bad sched-credit-set "xl sched-credit -d busy -w 384 -c 90 failed"
echo "== busy domU is domain $DOMU at $(up)s"

# Two runs of 10 snapshots, 100 ms apart, a second between the runs.
xgpu-schedexp --watch 10 --interval 100 >/tmp/s1.json 2>/tmp/s1.err
rc1=$?
sleep 1
xgpu-schedexp --watch 10 --interval 100 >/tmp/s2.json 2>/tmp/s2.err
rc2=$?
if [ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ -s /tmp/s1.json ] && [ -s /tmp/s2.json ]; then
	ok schedexp-map
else
	bad schedexp-map "xgpu-schedexp failed ($rc1, $rc2): $(cat /tmp/s1.err /tmp/s2.err | head -n 5)"
fi
echo "first snapshot: $(head -c 1500 /tmp/s1.json)"
cat /tmp/s1.json /tmp/s2.json >/tmp/all.json

check header "bad header" -s '.[0].header | .magic == 1346720600 and .version == 1 and .nr_frames > 0' /tmp/s1.json
check pcpus-all "not a valid record for each of the $ncpus PCPUs in every snapshot" -s --argjson n "$ncpus" \
	'all(.[]; .header.npcpus >= $n and ([.pcpus[] | select(.stale == false) | .pcpu] | unique) == [range($n)])' \
	/tmp/all.json
check seq-even "a kept record with an odd sequence number" -s 'all(.[].pcpus[]; .seq % 2 == 0)' /tmp/all.json
check seq-advancing "a PCPU's sequence number did not change in 1 s" -s --slurpfile b /tmp/s2.json \
	--argjson n "$ncpus" '.[0] as $a | $b[-1] as $z | all(range($n); . as $p |
	([$a.pcpus[] | select(.pcpu == $p) | .seq][0]) != ([$z.pcpus[] | select(.pcpu == $p) | .seq][0]))' /tmp/s1.json
check domu-cur "domain $DOMU never current on a PCPU with a slice" -s --argjson d "${DOMU:-9999}" \
	'any(.[].pcpus[]; .cur.domid == $d and .cur.vcpu == 0 and .slice_len_ns > 0 and .slice_start_ns > 0)' /tmp/all.json
check domu-credit "domain $DOMU's credit did not change" -s --argjson d "${DOMU:-9999}" \
	'[.[].pcpus[] | (.cur, .runq[]) | select(.domid == $d) | .credit] | unique | length >= 2' /tmp/all.json
# Export updates per PCPU and second (2 seq steps per update): scheduling
# decisions plus accounting ticks.
jq -s -r --slurpfile b /tmp/s2.json '.[0] as $a | $b[-1] as $z | (($z.read_ns - $a.read_ns) / 1e9) as $t |
	"export updates/s per PCPU: " + ([$z.pcpus[] | . as $q | (($q.seq - ([$a.pcpus[] | select(.pcpu == $q.pcpu) | .seq][0])) / 2 / $t | floor)] | tostring)' \
	/tmp/s1.json || true

# weights: every domain of xl sched-credit has its weight and cap in the export.
weights_match() {
	xgpu-schedexp >/tmp/w.json 2>&1 || return 1
	xl sched-credit | awk 'NF >= 4 && $(NF-2) ~ /^[0-9]+$/ {print $(NF-2), $(NF-1), $NF}' >/tmp/w.txt
	echo "xl sched-credit: $(tr '\n' ';' </tmp/w.txt)"
	echo "export: $(jq -c '[.doms[] | {domid, weight, cap}]' /tmp/w.json)"
	[ -s /tmp/w.txt ] || return 1
	while read -r id w c; do
		jq -e --argjson i "$id" --argjson w "$w" --argjson c "$c" \
			'any(.doms[]; .domid == $i and .weight == $w and .cap == $c and .stale == false)' /tmp/w.json >/dev/null || return 1
	done </tmp/w.txt
}
weights_match && ok weights || bad weights "the export's weights/caps differ from xl sched-credit"
xl sched-credit -d busy -w 128 -c 0
weights_match && grep -q " 128 0\$" /tmp/w.txt && ok weights-live || bad weights-live "after xl sched-credit -w 128 -c 0"

# xgpud over the export, with the two coordinated policies that read it.
for pol in augc cosched; do
	log=/tmp/xgpud-$pol.log
	xgpud --transport xen --executor sim --hyp-source xenpatch --policy "$pol" --foreground \
		--log-level info >"$log" 2>&1 &
	xpid=$!
	xtb_until_answers "$xpid" 30 xl-gpu list || true
	sleep 1 # a few scheduler ticks over the export
	st=$(xl-gpu stats --json 2>&1)
	echo "xgpud $pol stats: $(echo "$st" | head -c 600)"
	if echo "$st" | jq -e '.hyp_source == "xenpatch"' >/dev/null 2>&1; then
		ok "xgpud-$pol-xenpatch"
	else
		bad "xgpud-$pol-xenpatch" "hyp_source is not xenpatch: $(tail -n 5 "$log")"
	fi
	kill -TERM "$xpid" 2>/dev/null
	wait "$xpid"
	xrc=$?
	grep -i 'xenpatch' "$log" | head -n 3
	if grep -qi -e 'falling back' -e 'fallback' "$log"; then
		bad "xgpud-$pol-nofallback" "$(grep -i -e 'falling back' -e fallback "$log" | head -n 2)"
	elif ! grep -q "xenpatch: reading the credit scheduler's export" "$log"; then
		bad "xgpud-$pol-nofallback" "no line of the xenpatch source reading the export in its log"
	else
		ok "xgpud-$pol-nofallback"
	fi
	[ "$xrc" = 0 ] && ok "xgpud-$pol-exit" || bad "xgpud-$pol-exit" "status $xrc: $(tail -n 5 "$log")"
	if grep -q -e 'ERROR: AddressSanitizer' -e 'runtime error:' -e 'LeakSanitizer' "$log"; then
		bad "xgpud-$pol-sanitizer" "$(grep -m 3 -e AddressSanitizer -e 'runtime error' -e LeakSanitizer "$log")"
	fi
done

xl destroy busy 2>/dev/null
echo "== done at $(up)s, $fails failed"
exit "$fails"
