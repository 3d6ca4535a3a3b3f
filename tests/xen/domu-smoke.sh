#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# domu-smoke.sh - domU payload of tests/e2e/xen_real.sh's smoke stage: proves
# the guest booted with its drivers and that files + libraries travelled.
echo "SMOKE-DOMU: kernel $(uname -r), /dev/xen: $(ls /dev/xen 2>&1 | tr '\n' ' ')"
[ -c /dev/xen/evtchn ] && [ -c /dev/xen/gntdev ] && [ -c /dev/xen/gntalloc ] || exit 2
# Our libcudart (sanitized: the ASan runtime preloaded) must load; with no
# daemon to reach the program reports that no device was found.
env ${XGPU_PRELOAD:+LD_PRELOAD=$XGPU_PRELOAD} LD_LIBRARY_PATH=/xgpu/lib XGPU_SOCKET=/nonexistent \
	/xgpu/bin/vectorAdd -n 10 >/tmp/va.out 2>&1
echo "SMOKE-DOMU: vectorAdd without a daemon: $(grep RESULT /tmp/va.out)"
grep -q 'RESULT workload=vectorAdd' /tmp/va.out || { cat /tmp/va.out; exit 3; }
echo "SMOKE-DOMU: hello from domU"
