#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC3043  # busybox ash has local
# domu-honest.sh - the honest guest of tests/e2e/xen_real.sh: runs vectorAdd
# through our frontend over the Xen transport when dom0 writes the round to
# data/xgpu-test-go in its xenstore directory: round 1 once both domUs are
# up, round 2 after the liar's first pass, round 3 (three runs, HONEST-3a..c)
# while the liar lies again, round 4 (HONEST-4a..c) while the other domU's
# programs fault and its executor is killed, round 5 guestload holding
# 256 MiB and copying it (and a page-locked MiB every 16) round after round while dom0
# kills xgpud and starts another, until go 6, then round 6, a vectorAdd
# after that restart; then (go 7) it exits once dom0 has detached its device. Results go to the
# console with HONEST-<run>: prefixes; "HONEST: round <n> done" ends each
# round.
# No XGPU_TRANSPORT: the frontend must find out by itself that this is a domU.
# Rounds 1 and 2 run as a minimal guest does, without xenfs (only
# /sys/hypervisor and /dev/xen/xenbus tell); round 3 with xenfs mounted on
# /proc/xen. HONEST-ROLE lines show what the kernel offered each time.
role() {
	local f
	f=$(cat /sys/hypervisor/properties/features 2>/dev/null)
	echo "HONEST-ROLE: $1: /sys/hypervisor/type=$(cat /sys/hypervisor/type 2>&1)" \
		"features=$f dom0-bit=$(((0x${f:-0} >> 11) & 1))" \
		"capabilities=$([ -e /proc/xen/capabilities ] && echo "'$(cat /proc/xen/capabilities)'" || echo absent)" \
		"xenbus=$([ -e /dev/xen/xenbus ] && echo yes || echo no)"
}
run() {
	env ${XGPU_PRELOAD:+LD_PRELOAD=$XGPU_PRELOAD} LD_LIBRARY_PATH=/xgpu/lib \
		/xgpu/bin/vectorAdd -n 20000 -i 2 >/tmp/va$1.out 2>&1
	local rc=$?
	sed "s/^/HONEST-$1: /" /tmp/va$1.out | tail -n 40
	echo "HONEST-$1: status $rc, $(wc -c </tmp/va$1.out) bytes of output"
	[ "$rc" = 0 ] || fails=$((fails + 1))
}
# wait_go N: until dom0 writes N to data/xgpu-test-go (12 minutes at most:
# QEMU on a loaded host is slow).
wait_go() {
	local i=0
	while [ "$(xenstore-read data/xgpu-test-go 2>/dev/null)" != "$1" ]; do
		i=$((i + 1))
		if [ "$i" -gt 3600 ]; then
			echo "HONEST: dom0 never said go $1"
			exit 99
		fi
		sleep 0.2
	done
}
# skip N: dom0 runs only later rounds (its stage isolation).
skip() { [ "$(xenstore-read data/xgpu-test-from 2>/dev/null || echo 1)" -gt "$1" ]; }
fails=0
role no-xenfs
echo "HONEST: waiting"
if ! skip 1; then
	wait_go 1
	run 1
	echo "HONEST: round 1 done"
	wait_go 2
	run 2
	echo "HONEST: round 2 done"
	wait_go 3
	mkdir -p /proc/xen
	if insmod /mods/xen-privcmd.ko && insmod /mods/xenfs.ko && mount -t xenfs xenfs /proc/xen 2>&1; then
		role xenfs
	else
		echo "HONEST: cannot mount xenfs"
		fails=$((fails + 1))
	fi
	run 3a
	run 3b
	run 3c
	echo "HONEST: round 3 done"
fi
# Round 4 while the other domU faults.
wait_go 4
run 4a
run 4b
run 4c
echo "HONEST: round 4 done"
# Round 5: dom0 kills xgpud (kill -9) and starts another meanwhile; the
# program holds on until dom0 says go 6 (SIGTERM ends it, as its time would).
wait_go 5
echo "HONEST: holding"
env ${XGPU_PRELOAD:+LD_PRELOAD=$XGPU_PRELOAD} LD_LIBRARY_PATH=/xgpu/lib \
	/xgpu/bin/guestload hold 256 1200 pinned >/tmp/gl5.out 2>&1 &
holder=$!
wait_go 6
kill -TERM "$holder"
wait "$holder"
rc=$?
sed "s/^/HONEST-5: /" /tmp/gl5.out | tail -n 40
echo "HONEST-5: status $rc"
[ "$rc" = 0 ] || fails=$((fails + 1))
echo "HONEST: round 5 done"
# Round 6 after the restart.
run 6
echo "HONEST: round 6 done"
# Alive while dom0 detaches the device.
wait_go 7
exit "$fails"
