#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tests/pkg/inside.sh - run by tests/pkg/run.sh inside the throwaway root
# (chroot, own mount and pid namespaces): install the packages, start xgpud
# from the installed paths, run the bundled workload through xgpu-guest's
# libraries found by ld.so's cache, stop xgpud. Exits non-zero on any failure.
set -euo pipefail

fail() {
	echo "pkg(inside): FAIL: $*" >&2
	[ -f /tmp/xgpud.log ] && sed 's/^/  xgpud: /' /tmp/xgpud.log >&2
	exit 1
}
step() { echo "pkg(inside): $*"; }

step "dpkg -i $(cd /tmp/xgpu-debs && echo *.deb)"
dpkg -i /tmp/xgpu-debs/*.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; fail "dpkg -i"; }
for f in /usr/sbin/xgpud /usr/bin/xl-gpu /usr/lib/xgpu/libxgpu-simdrv.so /usr/lib/xgpu/simkernels/vectorAdd.so \
	/lib/systemd/system/xgpud.service /usr/share/man/man8/xgpud.8.gz /usr/share/doc/xgpu-daemon/examples/xgpud.conf \
	/usr/lib/x86_64-linux-gnu/xgpu/libcudart.so.13 /usr/lib/x86_64-linux-gnu/xgpu/libcuda.so.1 \
	/usr/lib/x86_64-linux-gnu/xgpu/libnvidia-ml.so.1 \
	/etc/ld.so.conf.d/x86_64-linux-gnu-xgpu.conf /usr/share/xgpu/xen-sched-patch/xgpu-sched-export.patch; do
	[ -e "$f" ] || fail "$f not installed"
done

# xgpu-guest's trigger ran ldconfig: the private directory is in the cache.
for lib in libcudart.so.13 libcuda.so.1 libnvidia-ml.so.1; do
	ldconfig -p | grep -q "$lib .*=> /usr/lib/x86_64-linux-gnu/xgpu/$lib\$" ||
		fail "$lib not in ld.so's cache: $(ldconfig -p | grep xgpu || true)"
done
ldd /opt/xgpu-test/vectorAdd | grep -q 'libcudart.so.13 => /usr/lib/x86_64-linux-gnu/xgpu/libcudart.so.13' ||
	fail "vectorAdd does not resolve libcudart.so.13 to xgpu-guest's: $(ldd /opt/xgpu-test/vectorAdd)"
# xgpu-daemon's copy of the frontends stays off the library path (Dom0 keeps
# NVIDIA's libcuda.so.1), and xgpu-guest refuses to sit next to NVIDIA's.
if ldconfig -p | grep -q '=> /usr/lib/xgpu/'; then
	fail "xgpu-daemon's /usr/lib/xgpu is in ld.so's cache: $(ldconfig -p | grep /usr/lib/xgpu/)"
fi
dpkg-query -W -f='${Conflicts}' xgpu-guest | grep -qw libcuda1 || fail "xgpu-guest does not conflict with libcuda1"
dpkg-query -W -f='${Conflicts}' xgpu-guest | grep -qw libnvidia-ml1 || fail "xgpu-guest does not conflict with libnvidia-ml1"
step "ld.so finds libcudart.so.13 and libcuda.so.1 in /usr/lib/x86_64-linux-gnu/xgpu (ld.so.conf.d)"

mkdir -p /run/xgpu
step "starting /usr/sbin/xgpud --executor sim"
NOTIFY_SOCKET=/run/xgpu-notify.sock /usr/sbin/xgpud --foreground --transport local --executor sim \
	--socket /run/xgpu/xgpud.sock >/tmp/xgpud.log 2>&1 &
xgpud_pid=$!
for _ in $(seq 100); do
	grep -q 'READY=1' /tmp/notify.log 2>/dev/null && break
	kill -0 "$xgpud_pid" 2>/dev/null || fail "xgpud exited during start-up"
	sleep 0.1
done
grep -q 'READY=1' /tmp/notify.log 2>/dev/null || fail "no READY=1 on \$NOTIFY_SOCKET in 10 s"
step "READY=1 received: $(grep READY=1 /tmp/notify.log | head -1)"

for w in /opt/xgpu-test/vectorAdd /opt/xgpu-test/static/vectorAdd; do
	out=$(XGPU_SOCKET=/run/xgpu/xgpud.sock timeout 120 "$w" 2>&1) || fail "$w: $out"
	echo "$out" | grep -q '^RESULT workload=vectorAdd verified=yes' || fail "$w not verified: $out"
	step "$w: $(echo "$out" | grep '^RESULT')"
done
list=$(XGPU_SOCKET=/run/xgpu/xgpud.sock /usr/bin/xl-gpu list 2>&1) || fail "xl-gpu list: $list"
echo "$list" | grep -q 'uid-0' || fail "xl-gpu list shows no uid-0 domain: $list"
step "xl-gpu list: $(echo "$list" | tr '\n' ' ' | tr -s ' ')"

kill -TERM "$xgpud_pid"
status=0
wait "$xgpud_pid" || status=$?
[ "$status" -eq 0 ] || fail "xgpud exited with status $status after SIGTERM"
for _ in $(seq 20); do grep -q 'STOPPING=1' /tmp/notify.log && break; sleep 0.1; done
grep -q 'STOPPING=1' /tmp/notify.log || fail "no STOPPING=1 on \$NOTIFY_SOCKET"
step "SIGTERM: STOPPING=1, xgpud exited 0"
