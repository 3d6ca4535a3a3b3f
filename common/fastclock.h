/* SPDX-License-Identifier: Apache-2.0 */
/* fastclock.h - a cheaper clock for timing on a poller's per-call path.
 *
 * The executor times every call twice (taken, answered) and its poller reads
 * the time once a pass; on a spinning null call those three readings of
 * CLOCK_MONOTONIC (30-35 ns each through the vDSO on this project's KVM
 * guests) were a fifth of the executor's time, and two of them lie on the
 * guest's round trip. Where the kernel itself keeps time by the TSC
 * (clocksource "tsc": constant, synchronised across CPUs), the CPU's counter
 * scaled to nanoseconds gives the same durations for half that (16 ns).
 * Elsewhere (Xen's clocksource in a PV dom0, where a TSC read may trap, or
 * another architecture) it is CLOCK_MONOTONIC itself.
 *
 * Its readings are nanoseconds from an arbitrary origin: compare them only
 * with each other, never with xgpu_now_ns() or another process's clock.
 */
#ifndef XGPU_FASTCLOCK_H
#define XGPU_FASTCLOCK_H

#include "util.h"

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

struct xgpu_fastclock {
	bool tsc;      /* false: readings are CLOCK_MONOTONIC's */
	uint64_t tsc0; /* the counter at calibration's start */
	uint64_t mult; /* ns per count, as a 32.32 fixed-point number */
};
extern struct xgpu_fastclock xgpu_fastclock;

/* Picks the source; the TSC only when `allow` and the kernel's clocksource
 * is "tsc" (read from sysfs, so call it before a sandbox closes files off).
 * Measures the counter's rate against CLOCK_MONOTONIC over at least
 * min_ns, waiting out what is left of it. Returns whether the TSC is used. */
bool xgpu_fastclock_init(bool allow, uint64_t min_ns);
/* The same in two steps, so that slow start-up work can fill the wait:
 * start records the first pair; finish waits until min_ns has passed
 * since, then fixes the rate. Readings before finish are CLOCK_MONOTONIC's. */
void xgpu_fastclock_start(bool allow);
void xgpu_fastclock_finish(uint64_t min_ns);

static inline uint64_t xgpu_fast_ns(void)
{
#if defined(__x86_64__)
	if (xgpu_fastclock.tsc) {
		uint64_t d = __rdtsc() - xgpu_fastclock.tsc0;
		return (uint64_t)(((unsigned __int128)d * xgpu_fastclock.mult) >> 32);
	}
#endif
	return xgpu_now_ns();
}

#endif
