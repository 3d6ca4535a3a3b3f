/* SPDX-License-Identifier: Apache-2.0 */
/* threadstat.h - the threads of the benchmarks that pit a ring against
 * memcpy (xgpu-bench, xgpu-ring-variants): pinning, a start gate for a
 * producer and consumer pair, and what the calling thread has used and
 * waited for. A ring needs both CPUs at once, memcpy one, so a ring figure is
 * read beside its threads' CPU time and run-queue wait. */
#pragma once

#include "util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Pins the calling thread to one CPU; a no-op on a single CPU. */
static inline void bench_pin(int cpu)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The clock starts once both threads run on their CPUs (a thread moving to
 * its pinned CPU may wait there behind the other for up to a time slice). */
struct bench_gate {
	atomic_int ready;
	atomic_bool go;
};

/* In each thread of the pair: pin, then wait for the start. */
static inline void bench_gate_enter(struct bench_gate *g, int cpu)
{
	bench_pin(cpu);
	atomic_fetch_add(&g->ready, 1);
	while (!atomic_load_explicit(&g->go, memory_order_acquire))
		xgpu_cpu_relax();
}

/* Runs producer and consumer on arg, each entering g; returns the start time
 * (xgpu_now_ns) once both have ended. */
static inline uint64_t bench_run_pair(struct bench_gate *g, void *(*producer)(void *),
				      void *(*consumer)(void *), void *arg)
{
	pthread_t tp, tc;
	pthread_create(&tp, NULL, producer, arg);
	pthread_create(&tc, NULL, consumer, arg);
	while (atomic_load(&g->ready) < 2)
		sched_yield();
	uint64_t t0 = xgpu_now_ns();
	atomic_store_explicit(&g->go, true, memory_order_release);
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	return t0;
}

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
