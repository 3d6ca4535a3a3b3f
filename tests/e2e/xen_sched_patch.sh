#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# xgpu-test-timeout: 900
# xen_sched_patch.sh - the schedule-export patch on real Xen: builds (or takes
# from the cache) Xen 4.17's hypervisor with xen-sched-patch/ applied, boots it
# with sched=credit under QEMU's software CPU (tools/xen-testbed --xen-elf)
# and runs tests/xen/dom0-schedexp.sh in dom0 with the sanitized build: the
# export is mapped with xgpu-schedexp and is live (records for every PCPU,
# sequence numbers advancing, a busy PV domU current with its credit
# changing, weights matching xl sched-credit), and xgpud --hyp-source
# xenpatch runs augc and cosched over it without falling back.
#
# Then a second boot, of Debian's packaged (unpatched) hypervisor: the export
# is absent there, and xgpud --hyp-source xenpatch must fall back to the xen
# source with a log line (about 15-40 s more; XGPU_XSP_STOCK=0 leaves it out).
# XGPU_XEN_TEST=0 skips it (saying so), as xen_real.sh. The Xen source
# (apt-get source) and the build are cached under
# ${XGPU_CACHE_DIR:-~/.cache/xgpu}/xen-sched-patch; the first run builds for
# about a minute, later ones take the cached hypervisor.
. "$(dirname "$0")/lib.bash"

if [ "${XGPU_XEN_TEST:-1}" = 0 ]; then
	echo "SKIPPED: real-Xen test disabled by XGPU_XEN_TEST=0"
	exit 0
fi
XTB=$SRC/tools/xen-testbed
X=$SRC/tests/xen
t0=$SECONDS
[ -x "$B/bin/xgpu-schedexp" ] || fail "no $B/bin/xgpu-schedexp in this build"

elf=$("$SRC/xen-sched-patch/build.sh") || fail "building the patched hypervisor"
note "patched hypervisor $elf ready in $((SECONDS - t0))s"

"$XTB/mkinitrd.sh" domu -o "$T/domu-busy.cpio" "$X/domu-busy.sh" || fail "building the busy domU initramfs"

# The sanitizer settings tests/run.sh chose hold inside the VM too.
san=(--file "$SRC/tests/lsan.supp:/xgpu/lsan.supp"
	--env "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
	--env "UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
	--env "LSAN_OPTIONS=suppressions=/xgpu/lsan.supp:print_suppressions=0")
rc=0
"$XTB/boot.sh" --timeout 400 --log "$T/serial.log" --xen-elf "$elf" --xen-args "sched=credit" \
	--file "$B/bin/xgpud:/xgpu/bin/xgpud" --file "$B/bin/xgpu-executor:/xgpu/bin/xgpu-executor" \
	--file "$B/bin/xl-gpu:/xgpu/bin/xl-gpu" \
	--file "$B/bin/xgpu-schedexp:/xgpu/bin/xgpu-schedexp" --dir "$B/lib:/xgpu/lib" \
	--env "XGPU_SIM_KERNELS=/xgpu/lib/simkernels" --file "$(command -v jq):/usr/bin/jq" \
	--file "$T/domu-busy.cpio:/xtb/domu-busy.cpio" "${san[@]}" \
	"$X/dom0-schedexp.sh" | tee "$T/dom0.out" || rc=$?
note "build + boot + dom0 script: $((SECONDS - t0))s in all, status $rc"
grep -a "^CHECK FAIL" "$T/dom0.out" >&2 || true
case $rc in
0) ;;
124) fail "the Xen VM did not finish in time (serial log: $T/serial.log)" ;;
125) fail "the Xen VM ended without reporting a status (serial log: $T/serial.log)" ;;
*) fail "$rc check(s) failed in dom0" ;;
esac
for c in sched-credit xl-create domu-busy schedexp-map header pcpus-all seq-even seq-advancing domu-cur \
	domu-credit weights weights-live xgpud-augc-xenpatch xgpud-augc-nofallback xgpud-augc-exit \
	xgpud-cosched-xenpatch xgpud-cosched-nofallback xgpud-cosched-exit; do
	grep -q "^CHECK ok $c\$" "$T/dom0.out" || fail "check $c did not pass in dom0"
done
check_clean "$T/dom0.out" "dom0 programs"

if [ "${XGPU_XSP_STOCK:-1}" = 1 ]; then
	rc=0
	"$XTB/boot.sh" --timeout 300 --log "$T/serial-stock.log" --xen-args "sched=credit" \
		--file "$B/bin/xgpud:/xgpu/bin/xgpud" --file "$B/bin/xgpu-executor:/xgpu/bin/xgpu-executor" \
		--file "$B/bin/xl-gpu:/xgpu/bin/xl-gpu" \
		--file "$B/bin/xgpu-schedexp:/xgpu/bin/xgpu-schedexp" --dir "$B/lib:/xgpu/lib" \
		--env "XGPU_SIM_KERNELS=/xgpu/lib/simkernels" --env XSP_MODE=stock "${san[@]}" \
		"$X/dom0-schedexp.sh" | tee "$T/dom0-stock.out" || rc=$?
	note "stock boot: $((SECONDS - t0))s in all, status $rc"
	for c in stock-absent stock-fallback; do
		grep -q "^CHECK ok $c\$" "$T/dom0-stock.out" || fail "check $c did not pass on Debian's hypervisor"
	done
	check_clean "$T/dom0-stock.out" "dom0 programs on Debian's hypervisor"
fi
