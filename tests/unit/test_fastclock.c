/* SPDX-License-Identifier: Apache-2.0 */
/* test_fastclock.c - common/fastclock.c: durations by the fast clock agree
 * with CLOCK_MONOTONIC's over a sleep, whichever source it picked; it never
 * runs backwards on one thread; refused the TSC, it is CLOCK_MONOTONIC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fastclock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* A 20 ms sleep measured by both clocks, 1 % apart at most (the rate is
 * measured over 2 ms, to well under that) plus a microsecond for the
 * readings' own spacing. */
static void agrees_with_monotonic(void)
{
	uint64_t f0 = xgpu_fast_ns(), m0 = xgpu_now_ns();
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	uint64_t f1 = xgpu_fast_ns(), m1 = xgpu_now_ns();
	double fd = (double)(f1 - f0), md = (double)(m1 - m0);
	if (fd < md * 0.99 - 1000 || fd > md * 1.01 + 1000)
		fail_msg("fast clock measured %.0f ns where CLOCK_MONOTONIC measured %.0f", fd, md);
	uint64_t prev = xgpu_fast_ns();
	for (int i = 0; i < 100000; i++) {
		uint64_t t = xgpu_fast_ns();
		assert_true(t >= prev);
		prev = t;
	}
}

static void tsc_where_the_kernel_uses_it(void **state)
{
	(void)state;
	bool tsc = xgpu_fastclock_init(true, 2000000);
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	char name[32] = "";
	if (f) {
		if (!fgets(name, sizeof name, f))
			name[0] = '\0';
		fclose(f);
	}
#if defined(__x86_64__)
	assert_int_equal(tsc, !strcmp(name, "tsc\n"));
#else
	assert_false(tsc);
#endif
	agrees_with_monotonic();
}

static void monotonic_when_refused(void **state)
{
	(void)state;
	assert_false(xgpu_fastclock_init(false, 2000000));
	uint64_t m0 = xgpu_now_ns(), f = xgpu_fast_ns(), m1 = xgpu_now_ns();
	assert_true(f >= m0 && f <= m1); /* the same clock */
	agrees_with_monotonic();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tsc_where_the_kernel_uses_it),
	    cmocka_unit_test(monotonic_when_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
