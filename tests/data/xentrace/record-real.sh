#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# record-real.sh - records real_credit_2cpu.bin: boots Debian's Xen 4.17
# (sched=credit, 2 CPUs) under QEMU with tools/xen-testbed, starts a PV domU
# that spins, records 2 s of scheduler events with Debian's xentrace
# (-e 0x0002f000, 64 pages per CPU) and then runs the real `xentrace` schedule
# source for 3 s (build/tests/tools/xentrace_probe), printing what it saw.
#
#   tests/data/xentrace/record-real.sh [OUT.bin]   (after `make tests-build`)
#
# Not part of `make test`; the recording it wrote is committed and parsed by
# test_xentrace (whose expectations name this recording's TSC frequency).
set -euo pipefail
src=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$src/tests/data/xentrace/real_credit_2cpu.bin}
B=${XGPU_BUILD:-$src/build}
XTB=$src/tools/xen-testbed
. "$XTB/lib.sh"
xtb_fetch
w=$(mktemp -d "${TMPDIR:-/tmp}/xentrace-rec.XXXXXX")
trap 'rm -rf "$w"' EXIT
printf '#!/bin/sh\n# spins forever\nwhile :; do :; done\n' >"$w/domu-busy.sh"
cat >"$w/dom0.sh" <<'EOS'
#!/bin/sh
. /xtb/lib.sh
cfg=$(xtb_domu_cfg busy /xtb/domu-busy.cpio)
xl create "$cfg" || exit 1
sleep 4
domid=$(xl domid busy)
echo "busy domid $domid"
xl sched-credit
xl vcpu-list
/usr/sbin/xentrace -D -S 64 -e 0x0002f000 -T 2 /tmp/rec.bin || exit 1
echo REC-BEGIN; base64 /tmp/rec.bin; echo REC-END
/xgpu/xentrace_probe 3 0 "$domid"
EOS
chmod +x "$w"/*.sh
"$XTB/mkinitrd.sh" domu -o "$w/domu-busy.cpio" "$w/domu-busy.sh"
xentrace=$(ls -d "$XTB_ROOT"/usr/lib/xen-4.17/bin/xentrace 2>/dev/null || true)
[ -x "$xentrace" ] || xtb_die "no xentrace in the testbed's package root"
"$XTB/boot.sh" --timeout 300 --xen-args sched=credit --file "$w/domu-busy.cpio:/xtb/domu-busy.cpio" \
	--file "$B/tests/tools/xentrace_probe:/xgpu/xentrace_probe" --file "$xentrace:/usr/sbin/xentrace" \
	"$w/dom0.sh" | tee "$w/out.txt" | grep -v '^[A-Za-z0-9+/=]\{60,\}$'
sed -n '/^REC-BEGIN/,/^REC-END/p' "$w/out.txt" | sed '1d;$d' | base64 -d >"$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
