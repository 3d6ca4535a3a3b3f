#!/usr/bin/env bash
# xen_real.sh - xgpu on real Xen: boots Debian's Xen 4.17 with a PV dom0 under
# QEMU's software CPU (tools/xen-testbed) and runs tests/xen/dom0.sh there with
# the sanitized build. Smoke stage: xgpud/xl-gpu run in dom0, a PV domU boots
# and its console reaches dom0. xgpu stage (see tests/xen/dom0-xgpu.sh): xgpud
# with the Xen transport serves an honest domU's vectorAdd, survives a lying
# domU, and serves the honest one again.
#
# XGPU_XEN_TEST=0 skips it (saying so); XGPU_XEN_STAGE=smoke runs only the
# smoke stage. Guest packages are cached in ${XGPU_CACHE_DIR:-~/.cache/xgpu}.
. "$(dirname "$0")/lib.bash"

if [ "${XGPU_XEN_TEST:-1}" = 0 ]; then
	echo "SKIPPED: real-Xen test disabled by XGPU_XEN_TEST=0"
	exit 0
fi
stage=${XGPU_XEN_STAGE:-xgpu}
XTB=$SRC/tools/xen-testbed
X=$SRC/tests/xen
t0=$SECONDS

# The sanitized frontend in an unsanitized CUDA program needs the ASan
# runtime preloaded; its path inside the VMs is the host path ldd found.
preload=$(ldd "$B/lib/libcudart.so.13" | awk '/libasan/ {print $3}')

# PV domU initramfs: our frontend, the CUDA programs, the lying guest.
domu_args=(--dir "$B/lib:/xgpu/lib" --file "$B/bin/vectorAdd:/xgpu/bin/vectorAdd"
	--lib-path "$B/lib" --env "XGPU_PRELOAD=$preload")
"$XTB/mkinitrd.sh" domu -o "$T/domu-smoke.cpio" "${domu_args[@]}" "$X/domu-smoke.sh" ||
	fail "building the smoke domU initramfs"
dom0_args=(--dir "$B/bin:/xgpu/bin" --dir "$B/lib:/xgpu/lib" --lib-path "$B/lib"
	--file "$T/domu-smoke.cpio:/xtb/domu-smoke.cpio" --env "XEN_STAGE=$stage"
	--env "XGPU_PRELOAD=$preload")
note "initramfs pieces built in $((SECONDS - t0))s"

rc=0
"$XTB/boot.sh" --timeout 240 --log "$T/serial.log" "${dom0_args[@]}" "$X/dom0.sh" | tee "$T/dom0.out" || rc=$?
note "boot + dom0 script: $((SECONDS - t0))s in all, status $rc"
grep -a "^CHECK FAIL" "$T/dom0.out" >&2 || true
case $rc in
0) ;;
124) fail "the Xen VM did not finish in time (serial log: $T/serial.log)" ;;
125) fail "the Xen VM ended without reporting a status (serial log: $T/serial.log)" ;;
*) fail "$rc check(s) failed in dom0" ;;
esac
grep -q "^CHECK ok domu-console" "$T/dom0.out" || fail "the smoke domU's console check did not run"
check_clean "$T/dom0.out" "dom0 and domU programs"
