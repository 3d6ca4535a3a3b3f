#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pageable copies of every size class, each way, byte for byte
# (tests/samples/copysweep.cu), through both frontends and three data-area
# sizes: the executor stages a copy of one 256 KiB chunk or less, and sends a
# longer one by DMA straight between the channel's registered data area and
# the device, where the ring wraps inside chunks and a chunk's ring bytes stay
# the executor's until its DMA is done. A copy queued behind other work is
# staged again. The daemon must log the registration, and keep its memory
# accounting: every channel gone, nothing held.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/samples.bash"
start_xgpud

for area in 65536 1048576 4194304; do
	for prog in "$S/copysweep" "$S/static/copysweep"; do
		XGPU_DATA_SIZE=$area run_sample "$prog" copysweep "$area"
		no_foreign_calls "$prog"
	done
	note "data area of $area bytes: every copy verified, both frontends"
done

grep -q "data areas registered with the driver; copies over 256 KiB go straight" "$XGPUD_LOG" ||
	fail "no channel registered its data areas: the straight copies were not tested"
if grep -q "data areas not registered with the driver" "$XGPUD_LOG"; then
	grep "data areas not registered" "$XGPUD_LOG"
	fail "the simulated driver refused a data area"
fi
stop_xgpud
