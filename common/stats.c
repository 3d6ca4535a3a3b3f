/* SPDX-License-Identifier: Apache-2.0 */
/* stats.c - per-domain service-latency and queue-wait histograms:
 * log-linear buckets, four per power of two of microseconds, so p50/p99 cost no allocation and no
 * lock. */
#include "stats.h"

#include <math.h>

/* Bucket 0 holds [0, 1) us; bucket 1 + 4e + q holds [2^e (1 + q/4),
 * 2^e (1 + (q+1)/4)) us, the quarter read from the two bits under the leading
 * one: integer arithmetic only, as it runs once per call, and within 25% of
 * the true value. */
static unsigned bucket_of(uint64_t ns)
{
	uint64_t us = ns / 1000;
	if (us == 0)
		return 0;
	unsigned e = 63u - (unsigned)__builtin_clzll(us);
	unsigned q = e >= 2 ? (unsigned)(us >> (e - 2)) & 3u : (unsigned)(us << (2 - e)) & 3u;
	unsigned b = 1 + 4 * e + q;
	return b < XGPU_LAT_BUCKETS ? b : XGPU_LAT_BUCKETS - 1;
}

/* Upper edge of bucket b in microseconds. */
double xgpu_stats_bucket_edge_us(unsigned b)
{
	if (b == 0)
		return 1.0;
	unsigned e = (b - 1) / 4, q = (b - 1) % 4;
	return ldexp(1.0 + (q + 1) / 4.0, (int)e);
}

void xgpu_stats_record_latency(struct xgpu_dom_stats *s, uint64_t ns)
{
	xgpu_stat_add(&s->lat[bucket_of(ns)], 1);
}

void xgpu_stats_record_wait(struct xgpu_dom_stats *s, uint64_t ns)
{
	xgpu_stat_add(&s->wait[bucket_of(ns)], 1);
}

static double percentile_us(const _Atomic uint64_t *hist, double pct)
{
	uint64_t counts[XGPU_LAT_BUCKETS], total = 0;
	for (unsigned b = 0; b < XGPU_LAT_BUCKETS; b++) {
		counts[b] = atomic_load_explicit(&hist[b], memory_order_relaxed);
		total += counts[b];
	}
	if (!total)
		return 0;
	uint64_t rank = (uint64_t)ceil(pct / 100.0 * (double)total);
	if (rank == 0)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned b = 0; b < XGPU_LAT_BUCKETS; b++) {
		seen += counts[b];
		if (seen >= rank)
			return xgpu_stats_bucket_edge_us(b);
	}
	return xgpu_stats_bucket_edge_us(XGPU_LAT_BUCKETS - 1);
}

double xgpu_stats_latency_us(const struct xgpu_dom_stats *s, double pct)
{
	return percentile_us(s->lat, pct);
}

double xgpu_stats_wait_us(const struct xgpu_dom_stats *s, double pct)
{
	return percentile_us(s->wait, pct);
}
