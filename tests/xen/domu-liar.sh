#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC3043  # busybox ash has local
# domu-liar.sh - the lying guest of tests/e2e/xen_real.sh: xenliar lies to
# xgpud in each mode (xenliar exits 0 only when xgpud refused or closed the
# channel with an error), in two passes, each started when dom0 writes the
# pass number to data/xgpu-test-go in this domain's xenstore directory: pass 1
# alone, pass 2 while the honest guest runs programs. Prints LIAR<pass>-OK or
# LIAR<pass>-FAIL per mode and "LIAR: pass <n> done". Pass 3 is the faulty
# guest of the fault-isolation round, with guestload: a kernel writing to an
# illegal address (LIAR-FAULT), a program making small calls while dom0 kills
# this domain's executor (LIAR-CALLS, after "LIAR: calls start"), and the next
# program (LIAR-NEXT, after "LIAR: next start"), which must work on a new
# executor; dom0 judges their output. The exit status is the number of lies
# xgpud did not refuse.
wait_go() {
	local i=0
	while [ "$(xenstore-read data/xgpu-test-go 2>/dev/null)" != "$1" ]; do
		i=$((i + 1))
		if [ "$i" -gt 3600 ]; then
			echo "LIAR: dom0 never said go $1"
			exit 99
		fi
		sleep 0.2
	done
	echo "LIAR: go $1 at $(cut -d' ' -f1 /proc/uptime)s"
}
fails=0
# How long xenliar waits for xgpud's reaction to each lie: under QEMU's CPU,
# with the honest guest's programs running beside it, the refusal of a
# rewritten ring-ref has come later than xenliar's own 10 s (error written,
# channel closed and removed, just after it stopped waiting).
export XENLIAR_TIMEOUT_MS="${XENLIAR_TIMEOUT_MS:-60000}"
lie() {
	for mode in ${XENLIAR_MODES:-bad-ref-count huge-ref-count foreign-port out-of-order rewrite-ring-ref vanish bad-protocol}; do
		/xgpu/bin/xenliar "$mode" >/tmp/liar.out 2>&1
		rc=$?
		grep -v ': wrote ' /tmp/liar.out | sed "s/^/LIAR$1 $mode: /" | tail -n 8
		if [ "$rc" = 0 ]; then
			echo "LIAR$1-OK $mode"
		else
			echo "LIAR$1-FAIL $mode (xenliar status $rc)"
			fails=$((fails + 1))
		fi
	done
	echo "LIAR: pass $1 done"
}
# gl TAG ARGS...: guestload ARGS through the frontend.
gl() {
	local tag=$1
	shift
	env ${XGPU_PRELOAD:+LD_PRELOAD=$XGPU_PRELOAD} LD_LIBRARY_PATH=/xgpu/lib \
		/xgpu/bin/guestload "$@" >/tmp/gl.out 2>&1
	local rc=$?
	sed "s/^/LIAR-$tag: /" /tmp/gl.out | tail -n 20
	echo "LIAR-$tag: status $rc"
}
# skip N: dom0 runs only later passes (its stage isolation).
skip() { [ "$(xenstore-read data/xgpu-test-from 2>/dev/null || echo 1)" -gt "$1" ]; }
echo "LIAR: waiting"
if ! skip 1; then
	wait_go 1
	lie 1
	wait_go 2
	lie 2
fi
wait_go 3
gl FAULT fault illegal
echo "LIAR: calls start"
gl CALLS calls 120
echo "LIAR: next start"
gl NEXT hold 8 8
echo "LIAR: pass 3 done"
exit "$fails"
