/* SPDX-License-Identifier: Apache-2.0 */
/* threadstat.h - what the calling thread has used and waited for, for the
 * ring benchmarks (xgpu-bench ring, xgpu-ring-variants): a ring needs both
 * CPUs at once, memcpy one, so a ring figure is read beside its threads' CPU
 * time and run-queue wait. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline uint64_t thread_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The calling thread's run-queue wait so far (schedstat's second field);
 * 0 where the kernel does not keep it. */
static inline uint64_t thread_rq_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}
