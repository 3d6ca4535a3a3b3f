/* SPDX-License-Identifier: Apache-2.0 */
/* stats.h - per-domain counters and the service-time histogram. */
#ifndef XGPU_STATS_H
#define XGPU_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#define XGPU_LAT_BUCKETS 96
struct xgpu_dom_stats {
	_Atomic uint64_t calls, errors, h2d_bytes, d2h_bytes, mem_bytes;
	_Atomic uint64_t kernels, channels_total;
	_Atomic uint64_t timeouts;                   /* contexts destroyed by the kernel timeout */
	_Atomic uint64_t queue_wait_ns, queue_waits; /* request taken off the ring -> run */
	_Atomic uint32_t channels;
	_Atomic uint64_t lat[XGPU_LAT_BUCKETS]; /* service time histogram, see stats.c */
	/* Queue wait (request taken off the ring -> run, which includes the
	 * wait for the GPU slot) in the same buckets: what top's p99 wait is. */
	_Atomic uint64_t wait[XGPU_LAT_BUCKETS];
};
void xgpu_stats_record_latency(struct xgpu_dom_stats *s, uint64_t ns);
void xgpu_stats_record_wait(struct xgpu_dom_stats *s, uint64_t ns);
/* For counters only the domain's poller writes (others only read them): a
 * relaxed load and store, no locked instruction on the call path. */
static inline void xgpu_stat_add(_Atomic uint64_t *counter, uint64_t v)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + v,
			      memory_order_relaxed);
}
/* Percentile (0..100) of recorded latencies in microseconds; 0 if none. */
double xgpu_stats_latency_us(const struct xgpu_dom_stats *s, double pct);
/* Upper edge in microseconds of histogram bucket b (0 <= b < XGPU_LAT_BUCKETS):
 * power-of-two edges are exact, so coarser views can be summed from these. */
double xgpu_stats_bucket_edge_us(unsigned b);
/* The same for the queue wait. */
double xgpu_stats_wait_us(const struct xgpu_dom_stats *s, double pct);

#endif
