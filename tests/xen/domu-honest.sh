#!/bin/sh
# domu-honest.sh - the honest guest of tests/e2e/xen_real.sh: runs vectorAdd
# through our frontend over the Xen transport twice, each time when dom0 has
# written the round's number to data/xgpu-test-go in its xenstore directory
# (round 1: both domUs are up; round 2: the liar has had its turn). Results go
# to the console with HONEST-<round>: prefixes.
run() {
	env ${XGPU_PRELOAD:+LD_PRELOAD=$XGPU_PRELOAD} LD_LIBRARY_PATH=/xgpu/lib XGPU_TRANSPORT=xen \
		/xgpu/bin/vectorAdd -n 20000 -i 2 >/tmp/va$1.out 2>&1
	local rc=$?
	sed "s/^/HONEST-$1: /" /tmp/va$1.out | tail -n 40
	echo "HONEST-$1: status $rc"
	return $rc
}
# wait_go N: until dom0 writes N to data/xgpu-test-go (3 minutes at most).
wait_go() {
	local i=0
	while [ "$(xenstore-read data/xgpu-test-go 2>/dev/null)" != "$1" ]; do
		i=$((i + 1))
		if [ "$i" -gt 900 ]; then
			echo "HONEST: dom0 never said go $1"
			exit 3
		fi
		sleep 0.2
	done
}
echo "HONEST: waiting"
wait_go 1
run 1
r1=$?
echo "HONEST: round 1 done"
wait_go 2
run 2
r2=$?
[ "$r1" = 0 ] && [ "$r2" = 0 ]
