/* SPDX-License-Identifier: Apache-2.0 */
/* fastclock.c - choosing and calibrating the fast clock (see fastclock.h). */
#include "fastclock.h"

#include <stdio.h>
#include <string.h>

struct xgpu_fastclock xgpu_fastclock;

static bool start_tsc_ok;

#if defined(__x86_64__)
static uint64_t start_ns;

/* Whether the kernel keeps its time by the TSC: then it found the counter
 * constant and synchronised across CPUs, and reading it does not trap. */
static bool kernel_uses_tsc(void)
{
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return false;
	char name[32] = "";
	bool tsc = fgets(name, sizeof name, f) && !strcmp(name, "tsc\n");
	fclose(f);
	return tsc;
}

/* The counter (*tsc), read between two clock readings, and their midpoint:
 * the pair is as close as the clock's own cost allows. */
static uint64_t paired_reading(uint64_t *tsc)
{
	uint64_t a = xgpu_now_ns();
	*tsc = __rdtsc();
	uint64_t b = xgpu_now_ns();
	return a + (b - a) / 2;
}
#endif

void xgpu_fastclock_start(bool allow)
{
	xgpu_fastclock.tsc = false;
	start_tsc_ok = false;
#if defined(__x86_64__)
	start_tsc_ok = allow && kernel_uses_tsc();
	if (start_tsc_ok)
		start_ns = paired_reading(&xgpu_fastclock.tsc0);
#else
	(void)allow;
#endif
}

void xgpu_fastclock_finish(uint64_t min_ns)
{
#if defined(__x86_64__)
	if (!start_tsc_ok)
		return;
	uint64_t t, ns;
	while ((ns = paired_reading(&t) - start_ns) < min_ns)
		;
	uint64_t counts = t - xgpu_fastclock.tsc0;
	if (counts == 0)
		return;
	xgpu_fastclock.mult = (uint64_t)(((unsigned __int128)ns << 32) / counts);
	xgpu_fastclock.tsc = xgpu_fastclock.mult != 0;
#else
	(void)min_ns;
#endif
}

bool xgpu_fastclock_init(bool allow, uint64_t min_ns)
{
	xgpu_fastclock_start(allow);
	xgpu_fastclock_finish(min_ns);
	return xgpu_fastclock.tsc;
}
