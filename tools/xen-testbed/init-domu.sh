#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# init-domu.sh - /init of a PV domU initramfs: loads the drivers a guest needs
# for userspace grants and event channels, runs /xtb/run, and prints
# XTB-DOMU-RC=<n> on its console (which dom0's xenconsoled logs) before
# powering off.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm
mount -t tmpfs tmpfs /dev/shm
for m in xen-evtchn xen-gntdev xen-gntalloc; do
	insmod /mods/$m.ko || echo "XTB-WARN: insmod $m failed"
done
[ -f /xtb/env ] && . /xtb/env
echo "XTB-DOMU-BEGIN up at $(cut -d' ' -f1 /proc/uptime)s"
cd /xtb || exit 1
sh /xtb/run </dev/null 2>&1
echo "XTB-DOMU-RC=$?"
poweroff -f
