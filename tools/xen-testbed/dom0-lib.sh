# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh disable=SC3043  # busybox ash: local is fine
# dom0-lib.sh - helpers for dom0 scripts (installed as /xtb/lib.sh in dom0;
# source it). Guests are PV domUs built by mkinitrd.sh domu; their consoles
# are logged by xenconsoled.

# xtb_domu_cfg NAME INITRD [EXTRA LINE...]: writes /xtb/NAME.cfg for a PV guest
# with the testbed kernel and prints its path.
xtb_domu_cfg() {
	local name=$1 initrd=$2 cfg=/xtb/$1.cfg
	shift 2
	{
		echo "name = \"$name\""
		echo 'type = "pv"'
		echo 'kernel = "/xtb/vmlinuz"'
		echo "ramdisk = \"$initrd\""
		echo 'extra = "console=hvc0 panic=-1 loglevel=4"'
		echo 'memory = 256'
		echo 'vcpus = 1'
		echo 'on_poweroff = "destroy"'
		echo 'on_crash = "destroy"'
		for l in "$@"; do echo "$l"; done
	} >"$cfg"
	echo "$cfg"
}

# xtb_domu_log NAME: the console log of guest NAME.
xtb_domu_log() { echo "/var/log/xen/console/guest-$1.log"; }

# xtb_until_answers PID SECONDS CMD...: waits (every 0.2 s) until CMD succeeds,
# as long as process PID lives and at most SECONDS; then true if CMD succeeds
# (a daemon started as PID that CMD asks whether it is up).
xtb_until_answers() {
	local pid="$1" i=0 n=$(($2 * 5))
	shift 2
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		{ [ "$i" -gt "$n" ] || ! kill -0 "$pid" 2>/dev/null; } && break
		sleep 0.2
	done
	"$@" >/dev/null 2>&1
}

# xtb_domu_wait_log NAME PATTERN SECONDS: waits until guest NAME's console
# shows PATTERN; fails after SECONDS.
xtb_domu_wait_log() {
	local i=0
	while ! grep -q "$2" "$(xtb_domu_log "$1")" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -gt "$(($3 * 5))" ] && return 1
		sleep 0.2
	done
}

# xtb_domu_wait NAME SECONDS: waits until guest NAME is gone (it powered off);
# fails if it is still there after SECONDS. `xl domid` now and then fails for
# a live guest while other programs write to xenstore, so a guest counts as
# gone only after three failures in a row.
xtb_domu_wait() {
	local i=0 gone=0
	while [ "$gone" -lt 3 ]; do
		if xl domid "$1" >/dev/null 2>/tmp/xtb-domid.err; then
			gone=0
		else
			gone=$((gone + 1))
		fi
		i=$((i + 1))
		[ "$i" -gt "$(($2 * 5))" ] && return 1
		sleep 0.2
	done
	return 0
}

# xtb_domu_rc NAME: the exit status guest NAME's script reported (empty if none).
xtb_domu_rc() { sed -n 's/.*XTB-DOMU-RC=\([0-9]*\).*/\1/p' "$(xtb_domu_log "$1")" 2>/dev/null | tail -n1; }

# xtb_domu_show NAME: guest NAME's console, each line prefixed with its name.
xtb_domu_show() { tr -d '\r' <"$(xtb_domu_log "$1")" 2>/dev/null | sed "s/^/[$1] /"; }

up() { cut -d' ' -f1 /proc/uptime; }
