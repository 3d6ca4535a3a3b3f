/* SPDX-License-Identifier: Apache-2.0 */
/* test_stats.c - the per-domain histograms of common/stats.c: bucket edges
 * (exact at powers of two, as xl-gpu's Prometheus histogram sums them), the
 * percentiles of known samples within a bucket's 25 %, the queue-wait and
 * service-time histograms kept apart, the overflow bucket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "stats.h"

#include <math.h>
#include <string.h>

static void edges_rise_and_hit_powers_of_two(void **state)
{
	(void)state;
	assert_true(xgpu_stats_bucket_edge_us(0) == 1.0);
	for (unsigned b = 1; b < XGPU_LAT_BUCKETS; b++)
		assert_true(xgpu_stats_bucket_edge_us(b) > xgpu_stats_bucket_edge_us(b - 1));
	/* Every fourth edge from bucket 4 on is a power of two. */
	for (unsigned b = 4; b < XGPU_LAT_BUCKETS; b += 4)
		assert_true(xgpu_stats_bucket_edge_us(b) == ldexp(1.0, (int)(b / 4)));
}

/* A sample of v us lands in a bucket whose upper edge is above v and at
 * most 25 % (plus the 1 us resolution) over it, up to the last bucket
 * (about 14.7 s). */
static void a_sample_lands_in_its_bucket(void **state)
{
	(void)state;
	static const uint64_t us[] = {0, 1, 3, 5, 17, 100, 999, 1000, 4096, 65535, 1000000, 10000000};
	for (size_t i = 0; i < sizeof us / sizeof us[0]; i++) {
		struct xgpu_dom_stats s;
		memset(&s, 0, sizeof s);
		xgpu_stats_record_wait(&s, us[i] * 1000 + 500);
		double p = xgpu_stats_wait_us(&s, 99);
		assert_true(p > (double)us[i]);
		assert_true(p <= 1.25 * (double)us[i] + 1.0);
	}
}

static void percentiles_of_known_waits(void **state)
{
	(void)state;
	struct xgpu_dom_stats s;
	memset(&s, 0, sizeof s);
	assert_true(xgpu_stats_wait_us(&s, 99) == 0);
	/* 98 waits of 10 us, 2 of 10 ms: p50 near 10 us, p99 near 10 ms. */
	for (int i = 0; i < 98; i++)
		xgpu_stats_record_wait(&s, 10 * 1000);
	xgpu_stats_record_wait(&s, 10 * 1000 * 1000);
	xgpu_stats_record_wait(&s, 10 * 1000 * 1000);
	double p50 = xgpu_stats_wait_us(&s, 50), p99 = xgpu_stats_wait_us(&s, 99);
	assert_true(p50 > 10 && p50 <= 12.5);
	assert_true(p99 > 10000 && p99 <= 12500);
	/* The service-time histogram saw none of it. */
	assert_true(xgpu_stats_latency_us(&s, 99) == 0);
	xgpu_stats_record_latency(&s, 3 * 1000);
	assert_true(xgpu_stats_latency_us(&s, 50) > 3 && xgpu_stats_latency_us(&s, 50) <= 3.75 + 1);
	assert_true(xgpu_stats_wait_us(&s, 99) == p99);
}

static void huge_waits_go_to_the_last_bucket(void **state)
{
	(void)state;
	struct xgpu_dom_stats s;
	memset(&s, 0, sizeof s);
	xgpu_stats_record_wait(&s, UINT64_MAX);
	assert_int_equal(atomic_load(&s.wait[XGPU_LAT_BUCKETS - 1]), 1);
	assert_true(xgpu_stats_wait_us(&s, 50) == xgpu_stats_bucket_edge_us(XGPU_LAT_BUCKETS - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(edges_rise_and_hit_powers_of_two),
	    cmocka_unit_test(a_sample_lands_in_its_bucket),
	    cmocka_unit_test(percentiles_of_known_waits),
	    cmocka_unit_test(huge_waits_go_to_the_last_bucket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
