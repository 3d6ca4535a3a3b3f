/* stats.c - per-domain service-latency histogram: log-linear buckets, four
 * per power of two of microseconds, so p50/p99 cost no allocation and stay
 * within ~19% of the true value. */
#include "xgpud.h"

#include <math.h>

static unsigned bucket_of(uint64_t ns)
{
	double us = (double)ns / 1000.0;
	if (us < 1.0)
		return 0;
	unsigned b = 1 + (unsigned)(log2(us) * 4.0);
	return b < XGPU_LAT_BUCKETS ? b : XGPU_LAT_BUCKETS - 1;
}

/* Upper edge of bucket b in microseconds. */
static double bucket_edge(unsigned b)
{
	return b == 0 ? 1.0 : exp2((double)b / 4.0);
}

void xgpu_stats_record_latency(struct xgpu_dom_stats *s, uint64_t ns)
{
	atomic_fetch_add_explicit(&s->lat[bucket_of(ns)], 1, memory_order_relaxed);
}

double xgpu_stats_latency_us(const struct xgpu_dom_stats *s, double pct)
{
	uint64_t counts[XGPU_LAT_BUCKETS], total = 0;
	for (unsigned b = 0; b < XGPU_LAT_BUCKETS; b++) {
		counts[b] = atomic_load_explicit(&s->lat[b], memory_order_relaxed);
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
			return bucket_edge(b);
	}
	return bucket_edge(XGPU_LAT_BUCKETS - 1);
}
