#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh disable=SC3043  # busybox ash has local
# xen-domu.sh - a PV domU of tools/experiment/xen.sh (busybox ash): runs
# guestload through xgpu's frontend over the Xen transport each time dom0
# writes "ROUND ARGS..." to data/xgpu-exp-go in its xenstore directory
# (ROUND new, ARGS guestload's arguments), prints guestload's output as
# "EXP-ROUND: ..." and then "EXP-DONE ROUND rc=N"; "ROUND exit" ends it.
# The clients spin for their answers (XGPU_SPIN_US, default 100000), as
# Pegasus's guests and make experiment's do.
echo "EXP-DOMU: ready on $(grep -c ^processor /proc/cpuinfo) VCPU(s), $(awk '/^MemTotal/ {print $2 / 1024}' /proc/meminfo) MB"
last=''
idle=0
while :; do
	v=$(xenstore-read data/xgpu-exp-go 2>/dev/null)
	round=${v%% *}
	if [ -z "$v" ] || [ "$round" = "$last" ]; then
		# An hour without a word from dom0: it is gone.
		idle=$((idle + 1))
		[ "$idle" -gt 36000 ] && exit 99
		sleep 0.1
		continue
	fi
	idle=0
	last=$round
	# shellcheck disable=SC2086 # dom0 wrote an argument list
	set -- ${v#* }
	[ "$1" = exit ] && exit 0
	XGPU_SPIN_US=${XGPU_SPIN_US:-100000} LD_LIBRARY_PATH=/xgpu/lib /xgpu/bin/guestload "$@" >/tmp/out 2>&1
	rc=$?
	tail -n 5 /tmp/out | sed "s/^/EXP-$round: /"
	echo "EXP-DONE $round rc=$rc"
done
