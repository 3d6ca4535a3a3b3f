/* SPDX-License-Identifier: Apache-2.0 */
/* fastclock.c - choosing and calibrating the fast clock (see fastclock.h). */
#include "fastclock.h"

#include <stdio.h>
#include <string.h>

struct xgpu_fastclock xgpu_fastclock;

static uint64_t start_ns;
static bool start_tsc_ok;

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

void xgpu_fastclock_start(bool allow)
{
	xgpu_fastclock.tsc = false;
	start_tsc_ok = false;
#if defined(__x86_64__)
	start_tsc_ok = allow && kernel_uses_tsc();
	if (start_tsc_ok) {
		/* The counter read between two clock readings, so that the
		 * pair is as close as the clock's own cost allows. */
		uint64_t a = xgpu_now_ns();
		xgpu_fastclock.tsc0 = __rdtsc();
		uint64_t b = xgpu_now_ns();
		start_ns = a + (b - a) / 2;
	}
#else
	(void)allow;
#endif
}

void xgpu_fastclock_finish(uint64_t min_ns)
{
#if defined(__x86_64__)
	if (!start_tsc_ok)
		return;
	uint64_t a, b, t;
	do {
		a = xgpu_now_ns();
		t = __rdtsc();
		b = xgpu_now_ns();
	} while (a + (b - a) / 2 - start_ns < min_ns);
	uint64_t ns = a + (b - a) / 2 - start_ns, counts = t - xgpu_fastclock.tsc0;
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
