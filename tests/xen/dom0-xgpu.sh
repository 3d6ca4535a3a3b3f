# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh disable=SC3043,SC2154  # busybox ash; sourced by dom0.sh
# dom0-xgpu.sh - xgpu stage of tests/e2e/xen_real.sh, sourced by dom0.sh in
# dom0 (ok/bad/fails/up and /xtb/lib.sh come from there).
#   1. xgpud --transport xen --executor sim runs in dom0;
#   2. domUs "honest" and "liar" are created with a gpu = [...] line (xl-gpu
#      create, or xl create + xl-gpu attach while create does not exist) and
#      boot together (a domU boot is the slow part under QEMU); each waits
#      for its turn, given by a xenstore key;
#   3. the honest domU runs vectorAdd through our frontend over Xen:
#      verified=yes on its console, and xl-gpu stats shows its domid with
#      calls > 0;
#   4. told to go (a xenstore key), the liar runs xenliar in each mode: every
#      lie must be refused, and xgpud must stay up;
#   5. told to go, the honest domU runs vectorAdd again and it verifies;
#   6. the liar lies again while the honest domU runs vectorAdd three times:
#      every run verifies, xgpud stays up;
#   Between rounds: xl-gpu policy xc and xl-gpu credit (and xenstore-write)
#      apply live through xenstore; under xc the xen schedule source shows
#      the hypervisor's CPU weight of the domain and follows `xl sched-credit2
#      -w`; xl-gpu detach is acknowledged and removes both directories;
#   7. faults stay in their domain: the liar domU turns faulty guest (a
#      kernel writing to an illegal address, then a program whose executor
#      dom0 kills with kill -9, then its next program) while the honest
#      domU's vectorAdd runs three times: each verifies; the faulty programs
#      get their sticky errors and the next one works on a new executor;
#   8. xgpud is killed (SIGKILL) while the honest domU's guestload holds
#      256 MiB and copies it round after round (and a page-locked MiB, a new
#      grant mapping through the executor's grant broker, every 16 MiB); a
#      new xgpud adopts the same executor (its memory, its channel, a new
#      grant broker) and the device; the program runs on and sees no error,
#      and the domU's next vectorAdd verifies;
#   9. xgpud stops cleanly on SIGTERM; no sanitizer report anywhere.
export XGPU_SOCKET=/run/xgpud.sock
# Every wait is an upper bound, W times what a quiet host needs: QEMU's
# software CPU on a loaded host runs several times slower.
W=${XGPU_XEN_WAIT_FACTOR:-4}
# XEN_STAGE=isolation runs only the fault and control-plane restart rounds
# (with xgpud's start, the domUs, the detach and the stop): what a loaded
# host can run in the time it has.
FULL=yes
[ "${XEN_STAGE:-}" = isolation ] && FULL=no
XLOG=/tmp/xgpud.log
GPU_LINE='gpu = [ "gpus=0, credit=512" ]'
echo "== xgpu stage at $(up)s"

# xl-gpu create when it exists, else xl create + xl-gpu attach.
gpu_create() {
	local cfg=$1 name=$2 id
	if xl-gpu --help 2>&1 | grep -q '^ *create '; then
		xl-gpu create "$cfg" 2>&1
		return
	fi
	echo "(xl-gpu has no create command: xl create + xl-gpu attach)"
	xl create "$cfg" 2>&1 || return 1
	id=$(xl domid "$name") || return 1
	xl-gpu attach "$id" "$cfg" 2>&1
}

# create NAME: a domU from /xtb/domu-NAME.cpio with a GPU; sets its domid
# in ID_<NAME>.
create() {
	local cfg out
	cfg=$(xtb_domu_cfg "$1" "/xtb/domu-$1.cpio" "$GPU_LINE")
	if out=$(gpu_create "$cfg" "$1"); then
		ok "gpu-create-$1"
	else
		bad "gpu-create-$1" "$out"
		echo "dom0 memory (MB): $(free -m | awk '/^Mem:/ {print "total " $2 ", used " $3 ", free " $4}')"
		echo "xgpud: $(grep -E '^Vm(RSS|Size)' /proc/$XPID/status 2>/dev/null | tr -s ' \t\n' ' ')"
	fi
	echo "$out" | grep -v -e '^Parsing config' -e '^$' | tail -n 5
	eval "ID_$1=\$(xl domid $1 2>/dev/null)"
	# Stage isolation: the domU skips its rounds before the fault round.
	if [ "$FULL" = no ]; then
		xenstore-write "/local/domain/$(xl domid "$1")/data/xgpu-test-from" "$([ "$1" = honest ] && echo 4 || echo 3)"
	fi
}

# go NAME: lets the domU's script go on past its next wait.
go() { xenstore-write "/local/domain/$(xl domid "$1")/data/xgpu-test-go" "$2"; }

xgpud_alive() { kill -0 "$XPID" 2>/dev/null; }

# calls DOMID: the domain's call count from xl-gpu stats --json (empty if absent).
calls() { xl-gpu stats --json 2>/dev/null | jq -e --argjson d "$1" '.domains[] | select(.domid == $d) | .calls' 2>/dev/null; }

# What lets xgpud, xl-gpu and the frontend tell dom0 without xenfs: the
# hypervisor's XENFEAT_dom0 bit (common/xenrole.c).
f=$(cat /sys/hypervisor/properties/features 2>/dev/null)
if [ -n "$f" ] && [ "$(((0x$f >> 11) & 1))" = 1 ]; then
	ok dom0-feature-bit
else
	bad dom0-feature-bit "/sys/hypervisor/properties/features is '$f': XENFEAT_dom0 (bit 11) not set in dom0"
fi
# start_xgpud LOG: xgpud in the background (XPID); true once xl-gpu answers.
start_xgpud() {
	xgpud --transport xen --executor sim --foreground --log-level info >"$1" 2>&1 &
	XPID=$!
	xtb_until_answers "$XPID" $((30 * W)) xl-gpu list
}
if start_xgpud "$XLOG"; then
	ok xgpud-up
	echo "xgpud up at $(up)s"
else
	bad xgpud-up "xgpud --transport xen is not up (exited, or no answer to xl-gpu list in $((30 * W)) s): $(tail -n 5 $XLOG)"
fi

ID_honest='' ID_liar=''
if xgpud_alive; then
	create honest
	if [ -f /xtb/domu-liar.cpio ]; then
		create liar
	else
		bad liar-refused "no lying domU: xenliar was not built (tests/tools/xenliar.c)"
	fi
	echo "domUs created at $(up)s: honest=${ID_honest:-none} liar=${ID_liar:-none}"
fi

if [ -n "$ID_honest" ]; then
	xtb_domu_wait_log honest 'HONEST: waiting' $((120 * W)) || bad honest-boot "the honest domU did not come up in $((120 * W)) s"
	[ -z "$ID_liar" ] || xtb_domu_wait_log liar 'LIAR: waiting' $((120 * W)) || bad liar-boot "the lying domU did not come up in $((120 * W)) s"
	echo "domUs up at $(up)s"
	[ "$FULL" = yes ] && go honest 1
	if [ "$FULL" = no ]; then
		echo "(stage isolation: straight to the fault round)"
	elif xtb_domu_wait_log honest 'HONEST: round 1 done' $((150 * W)); then
		echo "honest round 1 done at $(up)s"
		if grep -q 'HONEST-1: RESULT .*verified=yes' "$(xtb_domu_log honest)"; then
			ok honest-vectoradd
		else
			bad honest-vectoradd "no verified=yes from the honest domU's first run"
		fi
		# Round 1 ran without xenfs and without XGPU_TRANSPORT: the frontend
		# told it was a domU from /sys/hypervisor alone.
		r=$(grep 'HONEST-ROLE: no-xenfs:' "$(xtb_domu_log honest)")
		case $r in
		*type=xen*dom0-bit=0*capabilities=absent*xenbus=yes*) ok domu-without-xenfs ;;
		*) bad domu-without-xenfs "the honest domU's first run was not a domU without xenfs: ${r:-no HONEST-ROLE line}" ;;
		esac
		n=$(calls "$ID_honest")
		if [ -n "$n" ] && [ "$n" -gt 0 ]; then
			ok stats-calls
			echo "xl-gpu stats: domid $ID_honest made $n calls"
		else
			bad stats-calls "xl-gpu stats --json shows no calls for domid $ID_honest: $(xl-gpu stats --json 2>&1 | head -c 600)"
		fi
	else
		bad honest-vectoradd "the honest domU (domid $ID_honest) did not finish its first run in $((150 * W)) s"
	fi
fi

# stat DOMID KEY: one of the domain's numbers from xl-gpu stats --json.
stat() { xl-gpu stats --json 2>/dev/null | jq -e --argjson d "$1" --arg k "$2" '.domains[] | select(.domid == $d) | .[$k]' 2>/dev/null; }
# until_stat DOMID KEY VALUE SECONDS: waits for the stat to read VALUE.
until_stat() {
	local i=0
	while [ "$(stat "$1" "$2")" != "$3" ]; do
		i=$((i + 1))
		[ "$i" -gt "$(($4 * 5))" ] && return 1
		sleep 0.2
	done
}
# sched_weight NAME: the domain's CPU weight as xl shows it (credit2, Debian's
# default scheduler, or credit).
sched_weight() { { xl sched-credit2 -d "$1" 2>/dev/null || xl sched-credit -d "$1" 2>/dev/null; } | awk 'NR == 2 {print $3}'; }

# Policy through xenstore, applied live: xc coordinates with the CPU
# scheduler through the xen schedule source (xgpud's default on real Xen),
# which reads weights from the hypervisor with libxenctrl while there is work.
if [ "$FULL" = yes ] && [ -n "$ID_honest" ] && xgpud_alive; then
	xl-gpu policy xc >/dev/null 2>&1
	i=0
	while [ "$(xl-gpu stats --json 2>/dev/null | jq -r .policy)" != xc ] && [ "$i" -lt 25 ]; do
		i=$((i + 1))
		sleep 0.2
	done
	src=$(xl-gpu stats --json 2>/dev/null | jq -r '.policy + " " + .hyp_source')
	if [ "$src" = "xc xen" ]; then
		ok policy-live
	else
		bad policy-live "policy and schedule source are '$src' after xl-gpu policy xc, not 'xc xen'"
	fi
	# Credit through xenstore, applied live: xl-gpu (Xen mode in dom0) and a
	# plain xenstore-write do the same.
	xl-gpu credit honest -w 1024 >/dev/null 2>&1
	if until_stat "$ID_honest" credit 1024 5; then
		xenstore-write "/local/domain/0/backend/vgpu/$ID_honest/0/credit" 768
		if until_stat "$ID_honest" credit 768 5; then
			ok xenstore-credit-live
		else
			bad xenstore-credit-live "credit $(stat "$ID_honest" credit) after xenstore-write 768"
		fi
	else
		bad xenstore-credit-live "credit $(stat "$ID_honest" credit) after xl-gpu credit honest -w 1024"
	fi
fi

if [ "$FULL" = yes ] && [ -n "$ID_liar" ]; then
	go liar 1
	if xtb_domu_wait_log liar 'LIAR: pass 1 done' $((150 * W)); then
		echo "liar pass 1 done at $(up)s"
		if grep -q 'LIAR1-FAIL' "$(xtb_domu_log liar)"; then
			bad liar-refused "xgpud did not refuse: $(grep 'LIAR1-FAIL' "$(xtb_domu_log liar)" | tr '\n' ' ')"
		else
			ok liar-refused
		fi
	else
		bad liar-refused "the lying domU did not finish its first pass in $((150 * W)) s"
	fi
	if xgpud_alive; then
		ok xgpud-survives-liar
	else
		bad xgpud-survives-liar "xgpud died while the lying domU ran"
	fi
fi

WSAMPLER=
if [ "$FULL" = yes ] && [ -n "$ID_honest" ] && xgpud_alive; then
	# The source reads a domain's weight while the domain has an executor,
	# which lingers only seconds after its programs: the weight is sampled
	# while round 2 runs, not only read after it (a slow VM may read it
	# after the linger, as 0).
	(while :; do stat "$ID_honest" cpu_weight; sleep 1; done) >/tmp/weights-round2 2>/dev/null &
	WSAMPLER=$!
	go honest 2
	if xtb_domu_wait_log honest 'HONEST: round 2 done' $((120 * W)); then
		echo "honest round 2 done at $(up)s"
		if grep -q 'HONEST-2: RESULT .*verified=yes' "$(xtb_domu_log honest)"; then
			ok honest-after-liar
		else
			bad honest-after-liar "the honest domU's run after the liar did not verify"
		fi
	else
		bad honest-after-liar "the honest domU did not finish its second run in $((120 * W)) s"
	fi
fi
# Round 2 ran under xc: the schedule source has read the domain's CPU weight
# from the hypervisor. Change it with xl; round 3 must see the new one.
W0=''
[ -z "$WSAMPLER" ] || kill "$WSAMPLER" 2>/dev/null
if [ "$FULL" = yes ] && [ -n "$ID_honest" ] && xgpud_alive; then
	W0=$(sched_weight honest)
	w=$(stat "$ID_honest" cpu_weight)
	[ -n "$w" ] && [ "$w" != 0 ] || w=$(grep -E '^[1-9][0-9]*$' /tmp/weights-round2 | tail -n 1)
	if [ -n "$W0" ] && [ "$w" = "$W0" ]; then
		echo "xen source: cpu_weight $w, as xl shows it"
		{ xl sched-credit2 -d honest -w 512 2>/dev/null || xl sched-credit -d honest -w 512; } >/dev/null
	else
		bad hyp-xen-weight "cpu_weight '$w' in xl-gpu stats after round 2, '$W0' in xl"
		W0=''
	fi
fi

# Both at once: the liar's second pass while the honest guest runs three
# programs; each must still compute the right result.
if [ "$FULL" = yes ] && [ -n "$ID_honest" ] && [ -n "$ID_liar" ] && xgpud_alive; then
	go liar 2
	go honest 3
	# The source follows a domain's weight while the domain is scheduled,
	# that is while it has an executor (its programs, and the linger after
	# them): round 3 is when xgpud reads the new one.
	weight_seen=no
	[ -n "$W0" ] && until_stat "$ID_honest" cpu_weight 512 60 && weight_seen=yes
	xtb_domu_wait_log honest 'HONEST: round 3 done' $((150 * W)) || bad honest-during-liar "the honest domU did not finish round 3 in $((150 * W)) s"
	echo "honest round 3 done at $(up)s"
	n=$(grep -c 'HONEST-3[abc]: RESULT .*verified=yes' "$(xtb_domu_log honest)")
	if [ "$n" = 3 ]; then
		ok honest-during-liar
		if grep -q "HONEST-ROLE: xenfs: .*capabilities=''" "$(xtb_domu_log honest)"; then
			ok domu-with-xenfs
		else
			bad domu-with-xenfs "round 3 did not run with xenfs mounted: $(grep HONEST "$(xtb_domu_log honest)" | grep -e ROLE -e xenfs)"
		fi
	else
		bad honest-during-liar "$((3 - n)) of 3 vectorAdd runs did not verify while the liar lied: $(grep -e 'HONEST-3.: RESULT' -e 'HONEST-3.: Result' "$(xtb_domu_log honest)" | tr '\n' ' ')"
	fi
	xtb_domu_wait_log liar 'LIAR: pass 2 done' $((150 * W)) || bad liar-pass2 "the lying domU did not finish its second pass in $((150 * W)) s"
	echo "liar pass 2 done at $(up)s"
	if xgpud_alive; then
		ok xgpud-survives-concurrent-liar
	else
		bad xgpud-survives-concurrent-liar "xgpud died during the liar's second pass"
	fi
fi
if [ -n "$W0" ]; then
	if [ "${weight_seen:-no}" = yes ]; then
		ok hyp-xen-weight
		echo "xen source: cpu_weight 512 after xl sched-credit* -w 512"
	else
		bad hyp-xen-weight "cpu_weight $(stat "$ID_honest" cpu_weight) while round 3 ran, after xl set the weight to 512"
	fi
fi
# Fault isolation: the liar domU is the faulty guest now. Its programs
# fault, and one has its executor killed from here, while the honest domU's
# vectorAdd runs three times.
# cmdline PID: the process's command line.
cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }
if [ -n "$ID_honest" ] && [ -n "$ID_liar" ] && xgpud_alive; then
	LLOG=$(xtb_domu_log liar)
	go liar 3
	go honest 4
	killed=''
	if xtb_domu_wait_log liar 'LIAR: calls start' $((120 * W)); then
		# The faulted executor is gone and the calls program has one of its own
		# once the pid reads the same across a second of rising calls.
		sleep 3
		i=0
		while :; do
			p=$(stat "$ID_liar" executor_pid)
			c1=$(stat "$ID_liar" calls)
			sleep 1
			c2=$(stat "$ID_liar" calls)
			[ -n "$p" ] && [ "$p" -gt 0 ] && [ "$(stat "$ID_liar" executor_pid)" = "$p" ] &&
				[ "${c2:-0}" -gt "${c1:-0}" ] && break
			i=$((i + 1))
			[ "$i" -gt $((20 * W)) ] && break
		done
		case "$(cmdline "$p")" in
		*xgpu-executor*"--domain liar"*)
			kill -KILL "$p"
			killed=$p
			echo "liar's executor pid $p ($(cmdline "$p" | cut -c1-60)...) killed at $(up)s, calls $c1 -> $c2"
			;;
		*) bad executor-kill "the liar's executor_pid '$p' is not an xgpu-executor --domain liar: '$(cmdline "$p")'" ;;
		esac
	else
		bad executor-kill "the faulty domU did not start its calls program in $((120 * W)) s"
	fi
	newpid=''
	if [ -n "$killed" ] && xtb_domu_wait_log liar 'LIAR: next start' $((60 * W)); then
		i=0
		while [ "$i" -lt $((150 * W)) ]; do
			np=$(stat "$ID_liar" executor_pid)
			if [ -n "$np" ] && [ "$np" -gt 0 ] && [ "$np" != "$killed" ]; then
				newpid=$np
				break
			fi
			i=$((i + 1))
			sleep 0.2
		done
	fi
	xtb_domu_wait_log liar 'LIAR: pass 3 done' $((90 * W)) || bad faulty-next "the faulty domU did not finish pass 3 in $((90 * W)) s"
	echo "faulty pass 3 done at $(up)s"
	grep -a -e 'LIAR-[A-Z]*: RESULT' -e 'LIAR-[A-Z]*: status' "$LLOG"
	if grep -q 'LIAR-FAULT: RESULT .*sync=cudaErrorIllegalAddress .*ok=yes' "$LLOG"; then
		ok fault-sticky-error
	else
		bad fault-sticky-error "the faulting program did not get cudaErrorIllegalAddress, sticky: $(grep 'LIAR-FAULT: RESULT' "$LLOG")"
	fi
	if [ -n "$killed" ] && grep -q 'LIAR-CALLS: RESULT .*error=cudaErrorLaunchFailure' "$LLOG"; then
		ok executor-kill
	elif [ -n "$killed" ]; then
		bad executor-kill "the program whose executor was killed did not get cudaErrorLaunchFailure: $(grep 'LIAR-CALLS: RESULT' "$LLOG")"
	fi
	if [ -n "$newpid" ] && grep -q 'LIAR-NEXT: RESULT .*verified=yes' "$LLOG"; then
		ok faulty-next-new-executor
		echo "faulty domU's next program: executor pid $newpid (the killed one was $killed)"
	else
		bad faulty-next-new-executor "the faulty domU's next program: executor '${newpid:-none seen}' after $killed, $(grep 'LIAR-NEXT: RESULT' "$LLOG")"
	fi
	xtb_domu_wait_log honest 'HONEST: round 4 done' $((150 * W)) || bad honest-during-faults "the honest domU did not finish round 4 in $((150 * W)) s"
	echo "honest round 4 done at $(up)s"
	n=$(grep -c 'HONEST-4[abc]: RESULT .*verified=yes' "$(xtb_domu_log honest)")
	if [ "$n" = 3 ] && ! grep -q 'HONEST-4[abc]: status [1-9]' "$(xtb_domu_log honest)"; then
		ok honest-during-faults
	else
		bad honest-during-faults "$((3 - n)) of 3 vectorAdd runs did not verify beside the faulty domU: $(grep 'HONEST-4' "$(xtb_domu_log honest)" | grep -e RESULT -e status | tr '\n' ' ')"
	fi
	grep -E 'domain liar: (its context failed|executor pid [0-9]+ (exited|was killed|ended))' "$XLOG" | tail -n 4
	if xgpud_alive; then
		ok xgpud-survives-faults
	else
		bad xgpud-survives-faults "xgpud died during the fault round"
	fi
fi

# Control-plane restart: xgpud is killed outright while the honest domU's
# program holds 256 MiB and copies it round after round; a new xgpud adopts
# the domain's executor (the same process, its memory, its open channel, a
# new grant broker) and the device again from xenstore, and the program
# runs on without an error. The new xgpud counts what the executor holds
# mapped through the grant broker from the grant record the killed one kept
# (so no restart gives an executor a fresh allowance of grant pages).
# until_up SECONDS CMD...: CMD true within SECONDS (every 0.2 s).
until_up() {
	local i=0 n=$(($1 * 5))
	shift
	until "$@"; do
		i=$((i + 1))
		[ "$i" -gt "$n" ] && return 1
		sleep 0.2
	done
}
holds() { [ "$(stat "$ID_honest" mem_bytes || echo 0)" -ge 268435456 ]; }
# record_pages DOMID: the pages of the domain's grant records (xgpud keeps
# one per channel: a 24-byte header, then the count), one per line.
record_pages() {
	local f
	for f in "$XGPU_SOCKET.exec/grants-$1-"*; do
		[ -f "$f" ] && od -An -t u8 -j 24 -N 8 "$f" | tr -d ' '
	done
}
if [ -n "$ID_honest" ] && xgpud_alive; then
	HLOG=$(xtb_domu_log honest)
	go honest 5
	if xtb_domu_wait_log honest 'HONEST: holding' $((60 * W)) && until_up $((60 * W)) holds; then
		hp=$(stat "$ID_honest" executor_pid)
		echo "honest domU holds $(stat "$ID_honest" mem_bytes) bytes at $(up)s, executor pid $hp"
		# The state file that names the executor is written at most every 2 s.
		sleep 2.5
		c0=$(stat "$ID_honest" calls)
		tk=$(up)
		kill -KILL "$XPID"
		wait "$XPID" 2>/dev/null
		# Read once xgpud is dead: the record moves with every host
		# segment the holder maps (pages are counted before each map),
		# and only xgpud maps them.
		g0=$(record_pages "$ID_honest")
		mv "$XLOG" "$XLOG.killed"
		echo "xgpud killed at ${tk}s ($c0 calls, grant records: ${g0:-none} pages)"
		if start_xgpud "$XLOG"; then
			ta=$(up)
			taken() { grep -q "adopted with its executor" "$XLOG"; }
			until_up $((30 * W)) taken
			tt=$(up)
			more() { [ "$(stat "$ID_honest" calls || echo 0)" -gt "$c0" ]; }
			until_up $((30 * W)) more
			p=$(stat "$ID_honest" executor_pid)
			m=$(stat "$ID_honest" mem_bytes)
			ch=$(stat "$ID_honest" channels)
			echo "new xgpud answering at ${ta}s, the channel taken again at ${tt}s: executor pid $p, $m bytes, $ch channel(s), $(stat "$ID_honest" calls) calls"
			grep -e 'adopted' -e 'grant broker' -e 'grant record' "$XLOG" | head -n 8
			# The region's pages at least, counted on from the record;
			# the holder may have mapped or unmapped a segment since.
			g1=$(record_pages "$ID_honest")
			if [ "$(echo "$g0" | wc -w)" = 1 ] && [ "${g0:-0}" -ge 1 ] &&
				grep -q "adopted with its executor, which holds $g0 grant pages mapped through the broker" "$XLOG" &&
				[ "$(echo "$g1" | wc -w)" = 1 ] && [ "${g1:-0}" -ge 1 ]; then
				ok xgpud-restart-grants
			else
				bad xgpud-restart-grants "grant record before the restart: '${g0}' pages, after: '$(record_pages "$ID_honest")'; log: $(grep -e 'grant' "$XLOG" | tr '\n' ' ' | cut -c1-600)"
			fi
			if [ "$p" = "$hp" ] && [ "${m:-0}" -ge 268435456 ] && [ "$ch" = 1 ] && more &&
				grep -q "adopted executor pid $hp, serving 1 process" "$XLOG" && taken &&
				grep -q "grant broker of the new xgpud taken" "$XLOG"; then
				ok xgpud-restart-adopted
			else
				bad xgpud-restart-adopted "after the restart: executor_pid '$p' (was $hp), mem_bytes '$m', channels '$ch', calls $(stat "$ID_honest" calls) (were $c0); log: $(grep -e adopt -e broker "$XLOG" | tr '\n' ' ' | cut -c1-600)"
			fi
		else
			bad xgpud-restart-adopted "a new xgpud did not come up after kill -9: $(tail -n 5 "$XLOG")"
		fi
	else
		bad xgpud-restart-adopted "the honest domU's program never held 256 MiB: mem_bytes $(stat "$ID_honest" mem_bytes)"
	fi
	# Its program ends on SIGTERM when told to go on (go 6), then a vectorAdd
	# runs on the new xgpud.
	xgpud_alive && go honest 6
	if xtb_domu_wait_log honest 'HONEST: round 5 done' $((150 * W)) &&
		grep -q 'HONEST-5: RESULT .*mismatches=0 .*verified=yes error=cudaSuccess' "$HLOG"; then
		ok xgpud-restart-holder
		echo "honest round 5 done at $(up)s: $(grep 'HONEST-5: RESULT' "$HLOG")"
	else
		bad xgpud-restart-holder "the honest domU's program across the restart: $(grep 'HONEST-5' "$HLOG" | tail -n 5 | tr '\n' ' ')"
	fi
	if xgpud_alive; then
		if xtb_domu_wait_log honest 'HONEST: round 6 done' $((120 * W)) &&
			grep -q 'HONEST-6: RESULT .*verified=yes' "$HLOG"; then
			ok xgpud-restart
			echo "honest round 6 (after the restart) done at $(up)s"
		else
			bad xgpud-restart "the honest domU's run after xgpud's restart did not verify: $(grep 'HONEST-6' "$HLOG" | tail -n 5 | tr '\n' ' ')"
		fi
	fi
fi
# Detach: xgpud acknowledges (no warning from xl-gpu) and both directories go.
if [ -n "$ID_honest" ] && xgpud_alive; then
	out=$(xl-gpu detach "$ID_honest" -t 20 2>&1)
	if [ $? = 0 ] && ! echo "$out" | grep -qi 'warn\|not acknowledge' &&
		! xenstore-exists "/local/domain/0/backend/vgpu/$ID_honest" &&
		! xenstore-exists "/local/domain/$ID_honest/device/vgpu"; then
		ok detach
	else
		bad detach "xl-gpu detach $ID_honest: $out"
	fi
fi
# The honest domU waits for this before it powers off.
[ -n "$ID_honest" ] && go honest 7
for g in honest liar; do
	[ -n "$(eval echo \$ID_$g)" ] || continue
	xtb_domu_wait "$g" 60 || {
		echo "$g still runs; destroying it"
		xl destroy "$g" 2>/dev/null
	}
done
xtb_domu_show liar | grep -e 'LIAR' -e 'ERROR' | head -n 80
xtb_domu_show honest | grep -e 'HONEST' -e 'rror' | head -n 60

if xgpud_alive; then
	kill -TERM "$XPID"
	wait "$XPID"
	st=$?
	[ "$st" = 0 ] && ok xgpud-exit || bad xgpud-exit "xgpud exited with status $st on SIGTERM"
else
	wait "$XPID"
	bad xgpud-exit "xgpud was gone before the end (status $?)"
fi
if cat "$XLOG" "$XLOG.killed" 2>/dev/null | grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'; then
	bad xgpud-sanitizer "sanitizer report in xgpud's log"
fi
for g in honest liar; do
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$(xtb_domu_log $g)" 2>/dev/null; then
		bad "$g-sanitizer" "sanitizer report on the $g domU's console"
		xtb_domu_show "$g" | grep -A 30 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' | head -n 40
	fi
done
if [ "$fails" -gt 0 ]; then
	echo "---- xgpud log (last 60 lines)"
	tail -n 60 "$XLOG"
fi
