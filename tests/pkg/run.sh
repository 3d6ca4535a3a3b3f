#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/pkg/run.sh - the Debian packages installed and run in a throwaway root
# (`make deb-test`; slow, needs root, not part of `make test`).
#
# A Debian 12 root is made once with debootstrap (cached in build/pkgtest/base,
# with the packages' dependencies added from the mirror), copied for each run,
# and entered with chroot in new mount and pid namespaces (unshare), so that
# nothing is installed, and ldconfig never runs, on this machine's own root,
# and every process of the test dies with it. Inside:
#   - dpkg -i of xgpu-daemon, xgpu-guest and xgpu-doc (xgpu-guest's ldconfig
#     trigger must put its private directory into ld.so's cache);
#   - xgpud started from /usr/sbin with --executor sim (the simulated driver
#     and its kernels from /usr/lib/xgpu/), $NOTIFY_SOCKET pointing at a
#     datagram socket that this script reads: READY=1 is awaited;
#   - the bundled vectorAdd (built against libcudart.so.13, and with CUDA's
#     static runtime, which opens libcuda.so.1) run with no LD_LIBRARY_PATH:
#     ld.so must find xgpu-guest's libraries through the ld.so.conf.d snippet,
#     and the results must be verified;
#   - xl-gpu list must show the domain; SIGTERM must stop xgpud with status 0
#     after STOPPING=1.
# systemd is not booted (systemd-nspawn -b needs a systemd-run host, which a
# container is not): the unit is checked by systemd-analyze verify, in
# tests/e2e/sdnotify.sh. XGPU_PKG_MIRROR and XGPU_PKG_SECURITY_MIRROR override the Debian mirrors.
set -euo pipefail

cd "$(dirname "$0")/../.."
top=$PWD
debdir=$top/build/deb
work=$top/build/pkgtest
mirror=${XGPU_PKG_MIRROR:-http://deb.debian.org/debian}
security_mirror=${XGPU_PKG_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
workload_shared=$top/build/bin/vectorAdd
workload_static=$top/build/bin/static/vectorAdd

fail() {
	echo "pkg: FAIL: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (chroot, unshare, debootstrap)"
debs=("$debdir"/xgpu-daemon_*.deb "$debdir"/xgpu-guest_*.deb "$debdir"/xgpu-doc_*.deb)
for d in "${debs[@]}"; do [ -f "$d" ] || fail "missing $d: run make deb"; done
for w in "$workload_shared" "$workload_static"; do [ -x "$w" ] || fail "missing $w: run make all"; done

# The packages' dependencies, without versions or alternatives, so the base
# root can take them from the mirror once and dpkg -i works offline after.
deps=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
	sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u | tr '\n' ' ')
base=$work/base
if [ ! -f "$base/.xgpu-base-ok" ]; then
	echo "pkg: debootstrap bookworm (minbase) from $mirror into $base"
	rm -rf "$base" "$base.tmp"
	mkdir -p "$work"
	debootstrap --variant=minbase bookworm "$base.tmp" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		fail "debootstrap failed (log: $work/debootstrap.log); set XGPU_PKG_MIRROR to a reachable mirror"
	mv "$base.tmp" "$base"
	touch "$base/.xgpu-base-ok"
fi
deps_key="$deps from $mirror $security_mirror"
if [ "$(cat "$base/.xgpu-deps" 2>/dev/null)" != "$deps_key" ]; then
	echo "pkg: adding the dependencies to the base root: $deps"
	cp /etc/resolv.conf "$base/etc/resolv.conf"
	# The packages are built against this machine's libraries, which carry
	# bookworm's security and point-release updates: the root needs them too.
	cat >"$base/etc/apt/sources.list" <<-SOURCES
		deb $mirror bookworm main
		deb $mirror bookworm-updates main
		deb $security_mirror bookworm-security main
	SOURCES
	# shellcheck disable=SC2086
	unshare --mount --pid --fork --mount-proc="$base/proc" chroot "$base" \
		/bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $deps && apt-get clean" \
		>"$work/deps.log" 2>&1 || fail "apt-get install $deps in the base root failed (log: $work/deps.log)"
	echo "$deps_key" >"$base/.xgpu-deps"
fi

root=$(mktemp -d "$work/root.XXXXXX")
listener_pid=
cleanup() {
	[ -n "$listener_pid" ] && kill "$listener_pid" 2>/dev/null
	# The namespaces' mounts went with them; anything left would be a bug,
	# and rm must not follow it into the host.
	if grep -q " $root/" /proc/mounts; then
		echo "pkg: mounts left under $root; not removing it" >&2
	else
		rm -rf "$root"
	fi
}
trap cleanup EXIT
cp -a "$base/." "$root/"
mkdir -p "$root/tmp/xgpu-debs" "$root/opt/xgpu-test/static" "$root/run"
cp "${debs[@]}" "$root/tmp/xgpu-debs/"
cp "$workload_shared" "$root/opt/xgpu-test/vectorAdd"
cp "$workload_static" "$root/opt/xgpu-test/static/vectorAdd"
cp tests/pkg/inside.sh "$root/tmp/inside.sh"

# $NOTIFY_SOCKET: read here, written to a file the chroot sees as /tmp/notify.log.
python3 - "$root/run/xgpu-notify.sock" "$root/tmp/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
PY
listener_pid=$!
for _ in $(seq 50); do [ -S "$root/run/xgpu-notify.sock" ] && break; sleep 0.1; done
[ -S "$root/run/xgpu-notify.sock" ] || fail "notify listener did not start"

echo "pkg: installing and running in $root"
status=0
unshare --mount --pid --fork --mount-proc="$root/proc" chroot "$root" \
	/usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/bash /tmp/inside.sh || status=$?
[ "$status" -eq 0 ] || fail "inside the root (status $status)"
echo "pkg: PASS"
