#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# xgpu-test-timeout: 1500
# xgpu-test-background: yes
# xen_real.sh - xgpu on real Xen: boots Debian's Xen 4.17 with a PV dom0 under
# QEMU's software CPU (tools/xen-testbed) and runs tests/xen/dom0.sh there with
# the sanitized build.
#   both stages: xgpud and xl-gpu (sanitized) run in dom0.
#   smoke stage: a PV domU boots, loads our frontend and its console output
#     reaches dom0 (no Xen transport needed).
#   xgpu stage (tests/xen/dom0-xgpu.sh): xgpud with the Xen transport serves
#     an honest domU's vectorAdd (verified, and counted in xl-gpu stats; the
#     frontend finds Xen by itself, first without xenfs mounted, as minimal
#     guests run, then with it),
#     refuses every lie of a domU running xenliar and stays up, then serves
#     the honest domU again, and again while the liar lies once more; faults
#     stay in their domain (the liar, now faulty, faults with an illegal
#     address and has its executor killed, each program getting its sticky
#     error and the next one a new executor, while the honest vectorAdd
#     verifies); xgpud killed with kill -9 while the honest domU holds
#     256 MiB and copies it is replaced by one that adopts the same
#     executor with its open channel (a new grant broker, counting on from the
#     killed one's grant record), and the program
#     sees no error; xgpud exits cleanly, and nothing tripped a sanitizer.
#
# XGPU_XEN_TEST=0 skips it (saying so); XGPU_XEN_STAGE=smoke runs only the
# smoke stage, XGPU_XEN_STAGE=isolation only the fault and restart rounds of
# the xgpu stage (for a host too loaded to run it all in time). The VM has
# XGPU_XEN_VM_TIMEOUT seconds (1380). Guest packages are cached under
# ${XGPU_CACHE_DIR:-~/.cache/xgpu}.
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
# runtime preloaded; inside the VMs it sits at the host path ldd found.
preload=$(ldd "$B/lib/libcudart.so.13" | awk '/libasan/ {print $3}')
frontend=(--lib-path "$B/lib" --env "XGPU_PRELOAD=$preload")
# The sanitizer settings tests/run.sh chose hold inside the VMs too.
frontend+=(--file "$SRC/tests/lsan.supp:/xgpu/lsan.supp"
	--env "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
	--env "UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
	--env "LSAN_OPTIONS=suppressions=/xgpu/lsan.supp:print_suppressions=0")

# mkdomu NAME SCRIPT [mkinitrd options]: a domU initramfs carried into dom0
# as /xtb/domu-NAME.cpio.
dom0_files=()
mkdomu() {
	local name=$1 script=$2
	shift 2
	# Only the frontend libraries (libcudart.so.13 takes its channel client
	# from libcuda.so.1): every MB of ramdisk slows `xl create`.
	"$XTB/mkinitrd.sh" domu -o "$T/domu-$name.cpio" "${frontend[@]}" \
		--file "$B/lib/libcudart.so.13:/xgpu/lib/libcudart.so.13" \
		--file "$B/lib/libcuda.so.1:/xgpu/lib/libcuda.so.1" "$@" "$script" ||
		fail "building the $name domU initramfs"
	dom0_files+=(--file "$T/domu-$name.cpio:/xtb/domu-$name.cpio")
}
if [ "$stage" = smoke ]; then
	mkdomu smoke "$X/domu-smoke.sh" --file "$B/bin/vectorAdd:/xgpu/bin/vectorAdd"
else
	# guestload (tests/cuda) for the fault and restart rounds; its kernels
	# run in dom0's executors.
	gl=(--file "$B/tests/cuda/guestload:/xgpu/bin/guestload")
	mkdomu honest "$X/domu-honest.sh" --file "$B/bin/vectorAdd:/xgpu/bin/vectorAdd" "${gl[@]}"
	liar=$B/tests/tools/xenliar
	if [ -x "$liar" ]; then
		mkdomu liar "$X/domu-liar.sh" --file "$liar:/xgpu/bin/xenliar" "${gl[@]}" \
			${XENLIAR_MODES:+--env "XENLIAR_MODES=$XENLIAR_MODES"}
	else
		note "no $liar in this build: the lying-guest check will fail"
	fi
	dom0_files+=(--file "$X/dom0-xgpu.sh:/xtb/dom0-xgpu.sh" --file "$(command -v jq):/usr/bin/jq"
		--file "$B/tests/simkernels/guestload.so:/xgpu/simk/guestload.so")
fi
note "initramfs pieces built in $((SECONDS - t0))s"

rc=0
"$XTB/boot.sh" --timeout "${XGPU_XEN_VM_TIMEOUT:-1380}" --log "$T/serial.log" \
	--dir "$B/bin:/xgpu/bin" --dir "$B/lib:/xgpu/lib" "${frontend[@]}" "${dom0_files[@]}" \
	--env "XEN_STAGE=$stage" --env "XGPU_SIM_KERNELS=/xgpu/lib/simkernels:/xgpu/simk" \
	"$X/dom0.sh" | tee "$T/dom0.out" || rc=$?
note "boot + dom0 script: $((SECONDS - t0))s in all, status $rc"
grep -a "^CHECK FAIL" "$T/dom0.out" >&2 || true
case $rc in
0) ;;
124) fail "the Xen VM did not finish in time (serial log: $T/serial.log)" ;;
125) fail "the Xen VM ended without reporting a status (serial log: $T/serial.log)" ;;
*) fail "$rc check(s) failed in dom0" ;;
esac
if [ "$stage" = smoke ]; then
	grep -q "^CHECK ok domu-console" "$T/dom0.out" || fail "the smoke domU's console check did not run"
elif [ "$stage" = isolation ]; then
	for c in xgpud-up fault-sticky-error executor-kill faulty-next-new-executor honest-during-faults xgpud-survives-faults \
		xgpud-restart-adopted xgpud-restart-grants xgpud-restart-holder xgpud-restart detach xgpud-exit; do
		grep -q "^CHECK ok $c\$" "$T/dom0.out" || fail "check $c did not pass in dom0"
	done
else
	for c in xgpud-up dom0-feature-bit honest-vectoradd domu-without-xenfs stats-calls liar-refused xgpud-survives-liar honest-after-liar \
		honest-during-liar domu-with-xenfs xgpud-survives-concurrent-liar policy-live hyp-xen-weight xenstore-credit-live \
		fault-sticky-error executor-kill faulty-next-new-executor honest-during-faults xgpud-survives-faults \
		xgpud-restart-adopted xgpud-restart-grants xgpud-restart-holder xgpud-restart detach xgpud-exit; do
		grep -q "^CHECK ok $c\$" "$T/dom0.out" || fail "check $c did not pass in dom0"
	done
fi
check_clean "$T/dom0.out" "dom0 and domU programs"
