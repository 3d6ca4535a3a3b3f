/* SPDX-License-Identifier: Apache-2.0 */
/* cpustat.h - the whole machine's busy CPU time, for the benchmarks that set
 * a path's CPU cost per byte beside its floor's (xgpu-bench cpu, tcprtt
 * stream): where every end of a transfer runs on this machine's CPUs, the
 * CPU time it takes per byte bounds what it can reach on them, whatever the
 * pipelining. Meaningful only while nothing else runs. */
#pragma once

#include <stdio.h>
#include <unistd.h>

/* Seconds all CPUs have spent busy since boot (/proc/stat: user, nice,
 * system, irq, softirq, steal; not idle or iowait), or -1. The kernel counts
 * in clock ticks, so a measurement needs a few hundred milliseconds to be
 * good to a few percent. */
static inline double machine_busy_s(void)
{
	FILE *f = fopen("/proc/stat", "r");
	unsigned long long user, nice, sys, idle, iowait, irq, softirq, steal;
	int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle,
			   &iowait, &irq, &softirq, &steal)
		  : 0;
	if (f)
		fclose(f);
	long hz = sysconf(_SC_CLK_TCK);
	if (n != 8 || hz <= 0)
		return -1;
	return (double)(user + nice + sys + irq + softirq + steal) / (double)hz;
}
