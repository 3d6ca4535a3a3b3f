#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# init-dom0.sh - /init of the dom0 initramfs: brings up the Xen control plane
# (drivers, xenfs, xenstored, dom0's xenstore entries, xenconsoled logging
# every guest console to /var/log/xen/console/guest-<name>.log), then runs the
# caller's script /xtb/run and reports its exit status on the console as
# XTB-RC=<n> before powering the machine off (Xen then ends QEMU).
export PATH=/bin:/sbin:/usr/bin:/usr/sbin:/usr/lib/xen-4.17/bin
export HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# privcmd before xenfs: xenfs's privcmd file needs it.
for m in xen-evtchn xen-privcmd xenfs xen-gntdev xen-gntalloc; do
	insmod /mods/$m.ko || echo "XTB-WARN: insmod $m failed"
done
mount -t xenfs xenfs /proc/xen
up() { cut -d' ' -f1 /proc/uptime; }
fail() {
	echo "XTB-ERROR: $*"
	echo "XTB-RC=125"
	poweroff -f
}
grep -q control_d /proc/xen/capabilities 2>/dev/null || fail "not running as Xen dom0 (/proc/xen/capabilities: $(cat /proc/xen/capabilities 2>&1))"
xenstored --pid-file /run/xenstored.pid || fail "xenstored did not start"
xen-init-dom0 >/tmp/xen-init-dom0.log 2>&1 || fail "xen-init-dom0: $(cat /tmp/xen-init-dom0.log)"
xenconsoled -i --log=guest --log-dir=/var/log/xen/console >/var/log/xen/xenconsoled.log 2>&1 &
[ -f /xtb/env ] && . /xtb/env
echo "XTB-BEGIN dom0 up at $(up)s"
cd /xtb || exit 125
sh /xtb/run </dev/null 2>&1
rc=$?
echo "XTB-END at $(up)s"
echo "XTB-RC=$rc"
poweroff -f
