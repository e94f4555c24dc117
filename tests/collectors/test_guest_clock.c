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

/* STATS round trips: each narrows the offsets possible to its own
 * interval's intersection with theirs, so a short one tightens the
 * placement and a long one that agrees changes nothing; backwards ones and
 * silent agents change nothing. */
Test(guest_clock, round_trips_narrow_it)
{
	const uint64_t t0 = 1000 * 1000 * MS;
	struct guest_clock_rt rt;
	/* The greeting: 123 ns, give or take 20 ms. */
	guest_clock_rt_init(&rt, 123, 20 * MS, t0 - MS);
	cr_expect_eq(guest_clock_rt_bound(&rt, t0), 20 * MS);
	/* Sent at t0, back at t0 + 4 ms, the agent read 7000 ms: the offset
	 * is in [t0 - 7000 ms, t0 + 4 ms - 7000 ms], inside the greeting's. */
	const int64_t base = (int64_t)t0 - 7000 * (int64_t)MS;
	guest_clock_rt_init(&rt, base + 2 * (int64_t)MS, 20 * MS, t0 - MS);
	cr_assert_eq(guest_clock_rt_take(&rt, t0, t0 + 4 * MS, 7000 * MS), GUEST_CLOCK_AGREED);
	cr_expect_eq(guest_clock_rt_offset(&rt), base + 2 * (int64_t)MS);
	cr_expect_eq(guest_clock_rt_bound(&rt, t0 + 4 * MS), 2 * MS);
	/* Longer, around the same offsets: nothing changes. */
	cr_expect_eq(guest_clock_rt_take(&rt, t0 + 10 * MS, t0 + 20 * MS, 7010 * MS), GUEST_CLOCK_SAME);
	cr_expect_eq(guest_clock_rt_offset(&rt), base + 2 * (int64_t)MS);
	/* Shorter and overlapping one end: the intersection, tighter than
	 * either round trip alone. */
	cr_assert_eq(guest_clock_rt_take(&rt, t0 + 30 * MS, t0 + 31 * MS, 7029 * MS), GUEST_CLOCK_AGREED);
	/* [t0 + 30 - 7029, t0 + 31 - 7029] = [base + 1, base + 2] ms. */
	cr_expect_eq(guest_clock_rt_offset(&rt), base + 1500 * (int64_t)1000);
	cr_expect_eq(guest_clock_rt_bound(&rt, t0 + 31 * MS), 500000u);
	/* Backwards, or nothing said: ignored. */
	cr_expect_eq(guest_clock_rt_take(&rt, t0 + 40 * MS, t0 + 39 * MS, 7040 * MS), GUEST_CLOCK_SAME);
	cr_expect_eq(guest_clock_rt_take(&rt, t0 + 50 * MS, t0 + 50 * MS, 0), GUEST_CLOCK_SAME);
	cr_expect_eq(rt.contradictions, 0);
	cr_expect_eq(guest_clock_rt_bound(&rt, t0 + 60 * MS), 500000u, "no drift seen: no widening");
}

/* Clocks that part: a round trip outside every offset left is a
 * contradiction.  The placement moves to it, the jump is kept, and from
 * then on the bound widens with the time since the last round trip at
 * twice the rate that explains the jump, so the next drift of the same
 * rate stays inside it. */
Test(guest_clock, a_contradiction_moves_it_and_widens_the_bound)
{
	const uint64_t t0 = 1000 * 1000 * MS;
	struct guest_clock_rt rt = { 0 };
	cr_assert_eq(guest_clock_rt_take(&rt, t0, t0 + 100000, t0 - 5 * MS), GUEST_CLOCK_AGREED);
	int64_t off0 = guest_clock_rt_offset(&rt);
	cr_expect_eq(off0, 5 * (int64_t)MS + 50000);
	/* One second later the agent's clock is 2 ms behind where it was:
	 * 2000 ppm; its interval misses the old one by 1.9 ms. */
	uint64_t t1 = t0 + 1000 * MS;
	cr_assert_eq(guest_clock_rt_take(&rt, t1, t1 + 100000, t1 - 7 * MS), GUEST_CLOCK_CONTRADICTED);
	cr_expect_eq(rt.contradictions, 1);
	cr_expect_eq(guest_clock_rt_offset(&rt), 7 * (int64_t)MS + 50000);
	cr_expect_eq(rt.worst_jump_ns, 2 * MS);
	/* need = 1.9 ms over 1 s = 1.9e6 ppb; twice that assumed. */
	cr_expect_eq(rt.drift_ppb, 3800000u);
	/* Half a second on, the bound has widened by 1.9 ms. */
	cr_expect_eq(guest_clock_rt_bound(&rt, t1 + 100000 + 500 * MS), 50000u + 1900000u);
	/* The same drift again: inside the widened bound, no contradiction,
	 * and the offset follows it. */
	uint64_t t2 = t1 + 1000 * MS;
	cr_expect_eq(guest_clock_rt_take(&rt, t2, t2 + 100000, t2 - 9 * MS), GUEST_CLOCK_AGREED);
	cr_expect_eq(rt.contradictions, 1);
	cr_expect_eq(guest_clock_rt_offset(&rt), 9 * (int64_t)MS + 50000);
	/* A step far beyond any drift: the rate assumed is capped at 1 %. */
	uint64_t t3 = t2 + MS;
	cr_assert_eq(guest_clock_rt_take(&rt, t3, t3 + 100000, t3 - 900 * MS), GUEST_CLOCK_CONTRADICTED);
	cr_expect_eq(rt.drift_ppb, GUEST_CLOCK_DRIFT_MAX_PPB);
	cr_expect_eq(rt.contradictions, 2);
}

/* Hostile or absurd times from an agent change nothing and never wrap. */
Test(guest_clock, absurd_times_are_ignored)
{
	struct guest_clock_rt rt;
	guest_clock_rt_init(&rt, 0, MS, 10 * MS);
	cr_expect_eq(guest_clock_rt_take(&rt, 20 * MS, 21 * MS, UINT64_MAX), GUEST_CLOCK_SAME);
	cr_expect_eq(guest_clock_rt_take(&rt, UINT64_MAX - 5, UINT64_MAX, 7), GUEST_CLOCK_SAME);
	cr_expect_eq(guest_clock_rt_offset(&rt), 0);
	struct guest_clock_rt none = { 0 };
	cr_expect_eq(guest_clock_rt_bound(&none, 5), UINT64_MAX);
}

/* On this machine, a "guest" 5 s behind answering after a sleep: the
 * offset found is within the bound it claims, around the true one. */
Test(guest_clock, a_round_trip_bounds_the_error)
{
	const int64_t true_off = 5000 * MS;
	struct guest_clock_rt rt = { 0 };
	uint64_t bound = UINT64_MAX, shortest = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t sent = xflow_monotonic_ns();
		struct timespec ts = { 0, (i + 1) * 1000000 };
		nanosleep(&ts, NULL);
		uint64_t agent = xflow_monotonic_ns() - (uint64_t)true_off;
		nanosleep(&ts, NULL);
		uint64_t recv = xflow_monotonic_ns();
		if (recv - sent < shortest)
			shortest = recv - sent;
		guest_clock_rt_take(&rt, sent, recv, agent);
		bound = guest_clock_rt_bound(&rt, recv);
		int64_t err = guest_clock_rt_offset(&rt) - true_off;
		cr_expect(err >= -(int64_t)bound && err <= (int64_t)bound, "off by %lld ns, bound %llu ns",
			  (long long)err, (unsigned long long)bound);
	}
	/* Sleeps run late on a loaded machine: the bound is compared with the
	 * round trips this run really took, not with the sleeps asked for. */
	cr_expect_leq(bound, (shortest + 1) / 2, "bound %llu ns, the shortest round trip %llu ns",
		      (unsigned long long)bound, (unsigned long long)shortest);
}
