#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xflow/clock.h"

Test(clock, ticks_convert_to_monotonic_nanoseconds)
{
	struct xflow_clock c;
	cr_assert_eq(xflow_clock_init(&c, 0), 0);
	cr_assert_neq(c.why[0], 0);
	uint64_t t0 = xflow_clock_ticks(&c), m0 = xflow_monotonic_ns();
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	uint64_t t1 = xflow_clock_ticks(&c), m1 = xflow_monotonic_ns();
	cr_assert_gt(t1, t0);
	double conv = (double)(xflow_clock_to_ns(&c, t1) - xflow_clock_to_ns(&c, t0));
	double real = (double)(m1 - m0);
	/* 0.5% of 50 ms: calibration and scheduling noise, with room. */
	cr_assert_lt(conv > real ? conv - real : real - conv, real * 0.005 + 20000,
		     "%s: %.0f ns converted vs %.0f ns", c.why, conv, real);
	/* Absolute: converted ticks land near CLOCK_MONOTONIC itself. */
	int64_t off = (int64_t)(xflow_clock_to_ns(&c, xflow_clock_ticks(&c)) - xflow_monotonic_ns());
	cr_assert_lt(llabs(off), 1000000, "offset %lld ns", (long long)off);
}

Test(clock, fallback_is_announced)
{
	struct xflow_clock c;
	xflow_clock_init(&c, XFLOW_CLOCK_FORCE_MONOTONIC);
	cr_assert_eq(c.kind, XFLOW_CLOCK_MONOTONIC);
	cr_assert(strstr(c.why, "CLOCK_MONOTONIC"), "%s", c.why);
	uint64_t t = xflow_clock_ticks(&c);
	cr_assert_eq(xflow_clock_to_ns(&c, t), t);
	setenv("XFLOW_CLOCK", "monotonic", 1);
	xflow_clock_init(&c, 0);
	unsetenv("XFLOW_CLOCK");
	cr_assert_eq(c.kind, XFLOW_CLOCK_MONOTONIC);
	cr_assert(strstr(c.why, "requested"));
}

Test(clock, tsc_is_used_when_cpuid_says_invariant)
{
	struct xflow_clock c;
	xflow_clock_init(&c, 0);
	if (xflow_tsc_invariant()) {
		cr_assert_eq(c.kind, XFLOW_CLOCK_TSC, "%s", c.why);
		cr_assert_gt(c.tsc_hz, 100000000, "a TSC slower than 100 MHz is implausible");
	} else {
		cr_assert_eq(c.kind, XFLOW_CLOCK_MONOTONIC);
		cr_assert(strstr(c.why, "not invariant"));
	}
}

/* How far the clock's conversion of now is from CLOCK_MONOTONIC, read as
 * one pair (the narrowest of a few brackets). */
static int64_t drift(const struct xflow_clock *c)
{
	uint64_t tsc, ns;
	xflow_clock_pair(&tsc, &ns);
	return (int64_t)(xflow_clock_to_ns(c, tsc) - ns);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

/* A calibration off by 1e-4 (the 20 ms one's worst case) drifts 100 us a
 * second from CLOCK_MONOTONIC; refined, the clock is back on it and stays
 * there, its rate now measured over the whole run. */
Test(clock, refine_measures_the_rate_over_the_whole_run)
{
	struct xflow_clock c;
	xflow_clock_init(&c, 0);
	if (c.kind != XFLOW_CLOCK_TSC)
		cr_skip_test("no invariant TSC: %s", c.why);
	c.mult += c.mult / 10000;
	sleep_ms(200);
	int64_t before = drift(&c);
	cr_assert_gt(llabs(before), 10000, "the rate made wrong did not show: %lld ns", (long long)before);
	/* A refine skips a pair taken while preempted: a few tries. */
	int64_t after = before;
	for (int i = 0; i < 10 && llabs(after) > 2000; i++) {
		xflow_clock_refine(&c);
		after = drift(&c);
	}
	cr_assert_lt(llabs(after), 2000, "%lld ns off after refining (%lld before)", (long long)after,
		     (long long)before);
	sleep_ms(200);
	int64_t later = drift(&c);
	cr_assert_lt(llabs(later), 5000, "%lld ns off 200 ms after refining: the rate is still wrong",
		     (long long)later);
}
