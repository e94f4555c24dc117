/*
 * An agent's clock against ours from its HELLO (collectors/guest_clock.c):
 * the TSC anchor removes the HELLO's latency to within microseconds; an
 * anchor read from another TSC is refused; then, as without an anchor, the
 * middle of the HELLO's round trip is taken, off by at most half of it.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "collectors/guest_clock.h"
#include "xflow/clock.h"

#define MS 1000000ll

/* Exact numbers: 3 ms of ticks at 2 GHz between its read and ours. */
Test(guest_clock, the_anchor_math)
{
	const uint64_t now_ns = 1000 * 1000 * MS, guest_ns = 5000 * MS;
	struct guest_clock_in in = { .tsc_hz = 2000000000u, .base_tick = 1000, .base_ns = guest_ns,
				     .now_tick = 1000 + 6000000, .now_ns = now_ns, .since_ns = now_ns - 4 * MS };
	int64_t off;
	char why[256] = "";
	cr_assert_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_TSC, "%s", why);
	cr_expect_eq(off, (int64_t)(now_ns - guest_ns) - 3 * MS);
	/* No anchor: the middle of the 4 ms round trip. */
	in.tsc_hz = 0;
	cr_assert_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_ARRIVAL);
	cr_expect_eq(off, (int64_t)(now_ns - guest_ns) - 2 * MS);
	/* Nor a round trip: the arrival. */
	in.since_ns = 0;
	cr_assert_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_ARRIVAL);
	cr_expect_eq(off, (int64_t)(now_ns - guest_ns));
}

/* The ticks must say a latency between 0 and the round trip we saw. */
Test(guest_clock, an_anchor_from_another_tsc_falls_back)
{
	const uint64_t now_ns = 1000 * 1000 * MS, guest_ns = 5000 * MS;
	struct guest_clock_in in = { .tsc_hz = 2000000000u, .base_tick = 1000000000000ull, .base_ns = guest_ns,
				     .now_ns = now_ns, .since_ns = now_ns - 4 * MS };
	int64_t off;
	char why[256] = "";
	/* Longer than the round trip (5 ms of ticks in 4 ms, past the margin). */
	in.now_tick = in.base_tick + 2 * 5000000;
	cr_expect_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_TSC_REFUSED);
	cr_expect_eq(off, (int64_t)(now_ns - guest_ns) - 2 * MS, "the round trip's middle taken");
	cr_expect(strstr(why, "another TSC") && strstr(why, "round trip was 4.000 ms"), "%s", why);
	/* Behind the anchor: a TSC that started elsewhere. */
	in.now_tick = in.base_tick - 2 * MS;
	why[0] = 0;
	cr_expect_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_TSC_REFUSED);
	cr_expect_eq(off, (int64_t)(now_ns - guest_ns) - 2 * MS);
	cr_expect_neq(why[0], 0);
	/* Within the round trip, or a hair under zero: taken. */
	in.now_tick = in.base_tick + 2 * 4000000;
	cr_expect_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_TSC);
	in.now_tick = in.base_tick - 2 * 100000;
	cr_expect_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_TSC);
}

/* On this machine, as a guest sharing its TSC would do it: an anchor
 * taken, 20 ms of "latency", our pair at arrival.  The guest's clock is
 * ours minus 5 s; the anchor finds that to a few microseconds where the
 * round trip's middle is 10 ms off. */
Test(guest_clock, an_anchor_taken_earlier_here_is_within_microseconds)
{
	struct xflow_clock clk;
	xflow_clock_init(&clk, 0);
	if (clk.kind != XFLOW_CLOCK_TSC)
		cr_skip_test("no usable TSC here: %s", clk.why);
	const int64_t true_off = 5000 * MS;
	struct guest_clock_in in = { .tsc_hz = clk.tsc_hz };
	in.since_ns = xflow_monotonic_ns();
	uint64_t ns;
	xflow_clock_pair(&in.base_tick, &ns);
	in.base_ns = ns - (uint64_t)true_off;
	struct timespec ts = { 0, 20 * MS };
	nanosleep(&ts, NULL);
	xflow_clock_pair(&in.now_tick, &in.now_ns);
	int64_t off;
	char why[256] = "";
	cr_assert_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_TSC, "%s", why);
	int64_t err = off - true_off;
	cr_expect(err > -5000 && err < 5000, "off by %lld ns", (long long)err);
	cr_log_info("TSC anchor off by %lld ns; the arrival by %lld ns", (long long)err,
		    (long long)((int64_t)(in.now_ns - in.base_ns) - true_off));
	/* The same HELLO read from another TSC (ten seconds of ticks ahead). */
	in.base_tick += 10 * clk.tsc_hz;
	cr_expect_eq(guest_clock_offset(&in, &off, why, sizeof(why)), GUEST_CLOCK_TSC_REFUSED);
	int64_t half = (int64_t)(in.now_ns - in.since_ns) / 2;
	cr_expect(off - true_off > 0 && off - true_off <= half + 1000,
		  "off by %lld ns: not within half the %lld ns round trip, late", (long long)(off - true_off),
		  (long long)(2 * half));
}

/* STATS round trips: each shorter one places the clock again, at its
 * middle; longer ones, backwards ones and silent agents change nothing. */
Test(guest_clock, shorter_round_trips_tighten_it)
{
	const uint64_t t0 = 1000 * 1000 * MS;
	int64_t off = 123;
	uint64_t bound = 20 * MS;
	/* Sent at t0, back at t0 + 4 ms, the agent read 7000 ms: it stood at
	 * t0 + 2 ms then, give or take 2 ms. */
	cr_assert(guest_clock_refine(&off, &bound, t0, t0 + 4 * MS, 7000 * MS));
	cr_expect_eq(off, (int64_t)(t0 + 2 * MS) - 7000 * MS);
	cr_expect_eq(bound, 2 * MS);
	/* Longer: not taken. */
	cr_expect_not(guest_clock_refine(&off, &bound, t0, t0 + 6 * MS, 7001 * MS));
	cr_expect_eq(off, (int64_t)(t0 + 2 * MS) - 7000 * MS);
	/* Shorter: taken. */
	cr_assert(guest_clock_refine(&off, &bound, t0 + 10 * MS, t0 + 10 * MS + 300000, 7010 * MS));
	cr_expect_eq(off, (int64_t)(t0 + 10 * MS + 150000) - 7010 * MS);
	cr_expect_eq(bound, 150000u);
	/* Backwards, or nothing said: ignored. */
	cr_expect_not(guest_clock_refine(&off, &bound, t0 + 20 * MS, t0 + 19 * MS, 7020 * MS));
	cr_expect_not(guest_clock_refine(&off, &bound, t0 + 30 * MS, t0 + 30 * MS, 0));
	cr_expect_eq(bound, 150000u);
}

/* On this machine, a "guest" 5 s behind answering after a sleep: the
 * offset found is within the bound it claims, around the true one. */
Test(guest_clock, a_round_trip_bounds_the_error)
{
	const int64_t true_off = 5000 * MS;
	int64_t off = 0;
	uint64_t bound = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t sent = xflow_monotonic_ns();
		struct timespec ts = { 0, (i + 1) * 1000000 };
		nanosleep(&ts, NULL);
		uint64_t agent = xflow_monotonic_ns() - (uint64_t)true_off;
		nanosleep(&ts, NULL);
		guest_clock_refine(&off, &bound, sent, xflow_monotonic_ns(), agent);
		int64_t err = off - true_off;
		cr_expect(err >= -(int64_t)bound && err <= (int64_t)bound, "off by %lld ns, bound %llu ns",
			  (long long)err, (unsigned long long)bound);
	}
	cr_expect_lt(bound, 3 * MS, "the shortest round trip (about 2 ms) sets the bound");
}
