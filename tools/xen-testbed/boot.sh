#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# boot.sh - boots Debian's Xen 4.17 with a PV dom0 under QEMU's software CPU
# (no KVM, no Xen on the host) and runs a script as root in dom0.
#
#   boot.sh [options] [mkinitrd options] SCRIPT
#
#   --timeout SECONDS   kill the VM after this long (default 240), boot
#                       retries included; exit 124
#   --boot-timeout SECONDS
#                       a boot whose dom0 has not started SCRIPT after this
#                       long is taken as stalled: the VM is killed and booted
#                       again, up to --boot-tries times (default 120; 0: never)
#   --boot-tries N      boots in all (default 3)
#   --log FILE          keep the whole serial console (Xen + dom0) in FILE
#   --mem MB            machine memory (default 2048; dom0 gets 1024)
#   --smp N             CPUs (default 2)
#   --xen-args ARGS     appended to the Xen command line (e.g. sched=credit)
#   --xen-elf FILE      boot this hypervisor (an uncompressed multiboot ELF,
#                       e.g. xen-sched-patch/build.sh's) instead of Debian's
#   --cpu MODEL         QEMU CPU model (default $XTB_CPU, else Haswell-noTSX)
#   --initrd FILE       keep the built dom0 initramfs in FILE
#   --file/--dir/--lib-path/--env  passed to mkinitrd.sh dom0 (see there)
#
# dom0 has xenstored, xenconsoled (guest consoles in
# /var/log/xen/console/guest-<name>.log), xl, xenstore-*, the guest kernel at
# /xtb/vmlinuz and helpers in /xtb/lib.sh. SCRIPT's output is printed on
# stdout; boot.sh exits with SCRIPT's exit status, 124 if the VM ran out of
# time, 125 if the VM ended without reporting one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

tmo=240 boot_tmo=120 boot_tries=3 log='' mem=2048 smp=2 xen_args='' xen_elf='' initrd='' cpu=${XTB_CPU:-Haswell-noTSX} mk=()
while (($#)); do
	case $1 in
	--timeout) tmo=$2; shift 2 ;;
	--boot-timeout) boot_tmo=$2; shift 2 ;;
	--boot-tries) boot_tries=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--xen-args) xen_args=$2; shift 2 ;;
	--xen-elf) xen_elf=$2; shift 2 ;;
	--cpu) cpu=$2; shift 2 ;;
	--initrd) initrd=$2; shift 2 ;;
	--file | --dir | --lib-path | --env) mk+=("$1" "$2"); shift 2 ;;
	-*) xtb_die "boot.sh: unknown option $1" ;;
	*) mk+=("$1"); shift ;;
	esac
done
command -v qemu-system-x86_64 >/dev/null || xtb_die "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86; tools/install-deps.sh does it)"
command -v cpio >/dev/null || xtb_die "cpio is not installed (apt-get install cpio)"

work=$(mktemp -d "${TMPDIR:-/tmp}/xtb-boot.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -n "$initrd" ] || initrd=$work/dom0.cpio
[ -n "$log" ] || log=$work/serial.log

t0=$(date +%s.%N)
xtb_fetch
[ -z "$xen_elf" ] || [ -s "$xen_elf" ] || xtb_die "boot.sh: --xen-elf $xen_elf: no such file"
XTB_PKG_LIST=$XTB_PKG_LIST "$(dirname "$0")/mkinitrd.sh" dom0 -o "$initrd" "${mk[@]}"
t1=$(date +%s.%N)

# CPU model: with "max,-smap" (SMAP visible, dom0 dies at its first trap)
# dom0 boots, but once a domU has been built dom0's own memory goes bad:
# the next `xl create` fails "XZ decompression error: File is corrupt" on an
# intact kernel file (every time with one CPU, now and then with two), and
# programs computed wrong results. Haswell-noTSX (no SMAP either) shows none
# of it; disabling avx/avx2, avx512f, xsavec/xsaves, la57/pku/fsrm/erms or
# pcid/invpcid/fsgsbase/rdpid/umip on "max" did not help.
# Xen owns the serial port; dom0's console (hvc0) goes through Xen to it.
#
# A boot now and then stalls under TCG with nothing more on the console (seen
# once in CI: dom0's kernel silent after "Poking KASLR" for 1380 s, where it
# reaches SCRIPT within 10-30 s), so a boot that has not started SCRIPT
# within boot_tmo is killed and tried again; the stalled boot's console is
# kept as LOG.stalled-N. All boots share the one --timeout. The console goes
# to LOG a line at a time, for the watchdog to read while the VM runs.
run_qemu() { # LEFT_SECONDS
	timeout -k 5 "$1" qemu-system-x86_64 -accel tcg,thread=multi -cpu "$cpu" \
		-m "$mem" -smp "$smp" -nographic -no-reboot -serial mon:stdio -monitor none \
		-pidfile "$work/qemu.pid" \
		-kernel "${xen_elf:-$XTB_XEN_ELF}" \
		-append "console=com1 com1=115200,8n1 dom0_mem=1024M,max:1024M dom0_max_vcpus=$smp loglvl=warning guest_loglvl=warning $xen_args" \
		-initrd "$XTB_VMLINUZ console=hvc0 earlyprintk=xen panic=-1 loglevel=4,$initrd" \
		</dev/null 2>&1 | stdbuf -oL tr -d '\r' >"$log"
}
rc=0 try=1
while :; do
	left=$(awk -v a="$t1" -v n="$(date +%s.%N)" -v t="$tmo" 'BEGIN { l = t - (n - a); print (l < 1 ? 1 : int(l)) }')
	rm -f "$work/qemu.pid"
	run_qemu "$left" &
	vm=$! stalled=0 tb=$SECONDS
	# Watched until the script starts (then nothing is left to watch), and
	# not at all on the last allowed boot.
	watch=$((boot_tmo > 0 && try < boot_tries))
	while ((watch)) && kill -0 "$vm" 2>/dev/null && ! grep -aq '^XTB-BEGIN' "$log" 2>/dev/null; do
		if ((SECONDS - tb >= boot_tmo)); then
			stalled=1
			kill "$(cat "$work/qemu.pid" 2>/dev/null)" 2>/dev/null || true
			break
		fi
		sleep 1
	done
	rc=0
	wait "$vm" || rc=$?
	((stalled)) || break
	cp "$log" "$log.stalled-$try"
	xtb_log "boot $try of $boot_tries: dom0 did not start the script within ${boot_tmo}s; killed the VM and booting again (its console: $log.stalled-$try); last console lines:"
	tail -n 5 "$log" >&2
	try=$((try + 1))
done
t2=$(date +%s.%N)

# The script's output: between the markers, without the hypervisor's lines.
sed -n '/^XTB-BEGIN/,/^XTB-RC=/p' "$log" | grep -av -e '^(XEN)' -e '^XTB-BEGIN' -e '^XTB-END' -e '^XTB-RC=' || true
grep -a '^XTB-ERROR' "$log" >&2 || true
src=$(sed -n 's/^XTB-RC=\([0-9]*\)$/\1/p' "$log" | tail -n1)
begin=$(sed -n 's/^XTB-BEGIN dom0 up at \([0-9.]*\)s.*/\1/p' "$log")
xtb_log "$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v u="${begin:-?}" \
	'BEGIN { printf "initramfs %.1fs, VM %.1fs (dom0 script started at dom0 uptime %ss)", b - a, c - b, u }')"
if [ -n "$src" ]; then
	exit "$src"
fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	xtb_log "the VM did not finish within ${tmo}s; last console lines:"
	tail -n 30 "$log" >&2
	exit 124
fi
xtb_log "the VM ended (qemu status $rc) without reporting the script's status; last console lines:"
tail -n 30 "$log" >&2
exit 125
