#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# gen.py - writes the recorded trace buffers test_xentrace parses, in the exact
# binary layout Xen 4.17 writes (xen/include/public/trace.h, struct t_rec):
# a little-endian u32 header (event id in bits 0-27, extra-word count in
# 28-30, bit 31 when a 64-bit TSC follows), the TSC as low then high u32,
# then the extra u32s. Written independently of the C parser on purpose.
#
#   tests/data/xentrace/gen.py [DIR]     (default: this script's directory)
#
# The scenario (TSC at 2 GHz, so cpu_khz = 2000000 and 2 ticks per ns; all
# times are ns after BASE_NS) and what the test expects of it:
#   CPU 0: t=1000 idle -> d1v0 (idle ran 5000, slice 30 ms); t=2000 a wake of
#          d2v1; a TRC_SCHED_CTL without TSC; a wrap record; t=31000
#          d1v0 (ran 30000) -> d2v1 (slice 30 ms).       Now: d2v1 since 31000.
#   CPU 1: t=500 d0v1 continues (running 400 ns, slice 10 ms); t=9000 7 lost
#          records; t=9500 d0v1 (ran 9400) -> d3v0 (slice 20 ms).
#                                                       Now: d3v0 since 9500.
#   CPU 2: t=3000 d1v1 (ran 2000) -> idle.              Now: idle since 3000.
import os
import struct
import sys

TRC_GEN = 0x0001F000
TRC_SCHED_MIN = 0x00021000
TRC_SCHED_VERBOSE = 0x00028000
LOST = TRC_GEN + 1
WRAP = TRC_GEN + 2
CPU_CHANGE = TRC_GEN + 3
WAKE = TRC_SCHED_VERBOSE + 4
CTL = TRC_SCHED_VERBOSE + 8
SWITCH = TRC_SCHED_VERBOSE + 10
INFPREV = TRC_SCHED_VERBOSE + 14
INFNEXT = TRC_SCHED_VERBOSE + 15
INFCONT = TRC_SCHED_VERBOSE + 17
IDLE = 0x7FFF

BASE_TSC = 5 << 32  # exercises the high TSC word
KHZ = 2000000


def tsc(ns):
    return BASE_TSC + ns * KHZ // 1000000


def rec(ev, extra=(), t=None):
    assert len(extra) <= 7
    hdr = ev | (len(extra) << 28) | ((1 << 31) if t is not None else 0)
    b = struct.pack("<I", hdr)
    if t is not None:
        ts = tsc(t)
        b += struct.pack("<II", ts & 0xFFFFFFFF, ts >> 32)
    return b + struct.pack("<%dI" % len(extra), *extra)


def switch(t, prev, ran, nxt, waited, slice_ns):
    return (rec(INFPREV, (prev[0], prev[1], ran), t) +
            rec(INFNEXT, (nxt[0], nxt[1], waited, slice_ns), t) +
            rec(SWITCH, (prev[0], prev[1], nxt[0], nxt[1]), t))


def cpu0():
    return (switch(1000, (IDLE, 0), 5000, (1, 0), 0, 30000000) +
            rec(WAKE, (2, 1), 2000) +
            rec(CTL) +
            rec(WRAP, (0, 0, 0)) +
            switch(31000, (1, 0), 30000, (2, 1), 29000, 30000000))


def cpu1():
    lost = struct.pack("<IHHQ", 7, 0, 1, tsc(8000))  # lost_records, did, vid, first_tsc
    return (rec(INFCONT, (0, 1, 400, 10000000), 500) +
            rec(LOST, struct.unpack("<4I", lost), 9000) +
            switch(9500, (0, 1), 9400, (3, 0), 100, 20000000))


def cpu2():
    return switch(3000, (1, 1), 2000, (IDLE, 0), 0, 0)


def cpu_change(cpu, nbytes):
    return rec(CPU_CHANGE, (cpu & 0xFFFF, nbytes))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    files = {
        "cpu0.bin": cpu0(),
        "trace_3cpu.bin": b"".join(cpu_change(c, len(b)) + b for c, b in enumerate((cpu0(), cpu1(), cpu2()))),
        # a record cut after 10 of its 28 bytes (header, TSC, 4 words)
        "truncated.bin": cpu0() + rec(SWITCH, (2, 1, 1, 0), 40000)[:10],
        # the first switch, then a word with no event class, then more records
        "garbage.bin": switch(1000, (IDLE, 0), 5000, (1, 0), 0, 30000000) + struct.pack("<I", 0x00000005) +
        switch(31000, (1, 0), 30000, (2, 1), 29000, 30000000),
    }
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
