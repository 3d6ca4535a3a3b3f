#!/bin/sh
# domu-liar.sh - the lying guest of tests/e2e/xen_real.sh: xenliar lies to
# xgpud in each mode; xenliar exits 0 only when xgpud refused or closed the
# channel with an error. Prints LIAR-OK/LIAR-FAIL per mode; the status is the
# number of modes xgpud did not refuse. Waits first until dom0 writes
# data/xgpu-test-go (the honest domU has had its first run).
echo "LIAR: waiting"
i=0
while [ "$(xenstore-read data/xgpu-test-go 2>/dev/null)" != 1 ]; do
	i=$((i + 1))
	if [ "$i" -gt 900 ]; then
		echo "LIAR: dom0 never said go"
		exit 99
	fi
	sleep 0.2
done
echo "LIAR: go at $(cut -d' ' -f1 /proc/uptime)s"
fails=0
for mode in ${XENLIAR_MODES:-bad-ref-count huge-ref-count foreign-port out-of-order rewrite-ring-ref vanish bad-protocol}; do
	/xgpu/bin/xenliar "$mode" >/tmp/liar.out 2>&1
	rc=$?
	sed "s/^/LIAR $mode: /" /tmp/liar.out | tail -n 8
	if [ "$rc" = 0 ]; then
		echo "LIAR-OK $mode"
	else
		echo "LIAR-FAIL $mode (xenliar status $rc)"
		fails=$((fails + 1))
	fi
done
exit "$fails"
