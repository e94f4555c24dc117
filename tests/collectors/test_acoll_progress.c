/*
 * How far an agent has given its records (collectors/acoll_clock.c's
 * acoll_peer_progress): its STATS reply's clock, placed on our time as its
 * records are, never moving back, and nothing from a guest whose clock is
 * not placed yet: placed by evidence (Xen's system time, round trips) it
 * says it before its first record.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "collectors/acoll_priv.h"

static struct peer *peer_on(const struct xflow_clock *k, bool xen, int64_t offset)
{
	static struct peer p;
	memset(&p, 0, sizeof(p));
	p.conv = k;
	p.xen = xen;
	p.offset_ns = offset;
	return &p;
}

Test(acoll_progress, placed_as_the_records_are)
{
	/* A TSC of 2 ticks a nanosecond from tick 1000 at 5 s. */
	struct xflow_clock k = { .kind = XFLOW_CLOCK_TSC, .base_tick = 1000, .base_ns = 5000000000ull,
				 .mult = UINT64_C(1) << 31 };
	struct peer *p = peer_on(&k, false, 0);
	acoll_peer_progress(p, 3000);
	cr_assert_eq(p->progress_ns, 5000001000ull, "%llu", (unsigned long long)p->progress_ns);
	acoll_peer_progress(p, 0);
	cr_assert_eq(p->progress_ns, 5000001000ull, "a reply without a clock says nothing");
	acoll_peer_progress(p, 2000);
	cr_assert_eq(p->progress_ns, 5000001000ull, "an older reply does not move it back");
	p->offset_ns = -1000;
	acoll_peer_progress(p, 5000);
	cr_assert_eq(p->progress_ns, 5000001000ull, "with the guest's offset: 5000002000 - 1000");
	acoll_peer_progress(p, 7000);
	cr_assert_eq(p->progress_ns, 5000002000ull);
}

Test(acoll_progress, a_guest_not_placed_yet_says_nothing)
{
	struct xflow_clock k = { .kind = XFLOW_CLOCK_MONOTONIC };
	struct peer *p = peer_on(&k, true, 0);
	acoll_peer_progress(p, 123456789);
	cr_assert_eq(p->progress_ns, 0, "its records are not placed yet either");
	p->offset_checked = true;
	p->offset_ns = 1000;
	acoll_peer_progress(p, 123456789);
	cr_assert_eq(p->progress_ns, 123457789ull);
}

/* Under load a guest's first records came seconds after dom0's sides of
 * the same requests: its handoffs must be held from its first STATS on,
 * when Xen's time or its round trips placed its clock at its greeting. */
Test(acoll_progress, a_guest_placed_by_evidence_says_it_before_its_first_record)
{
	struct xflow_clock k = { .kind = XFLOW_CLOCK_MONOTONIC };
	struct peer *p = peer_on(&k, true, 2000);
	p->clk = PEER_CLOCK_XTIME;
	acoll_peer_progress(p, 123456789);
	cr_assert_eq(p->progress_ns, 123458789ull, "placed by Xen's system time, it said %llu",
		     (unsigned long long)p->progress_ns);
	p = peer_on(&k, true, -2000);
	p->clk = PEER_CLOCK_RT;
	acoll_peer_progress(p, 123456789);
	cr_assert_eq(p->progress_ns, 123454789ull, "placed by round trips, it said %llu",
		     (unsigned long long)p->progress_ns);
	p = peer_on(&k, true, 0);
	p->clk = PEER_CLOCK_FIRST;
	acoll_peer_progress(p, 123456789);
	cr_assert_eq(p->progress_ns, 0, "placed by its first record, it is not placed before it");
}

/* What an agent says waits in its lanes (acoll_peer_held): on our time as
 * its records are, said only while its ring moves and not from further
 * back than HELD_MAX_NS, and 0 once it is gone. */
Test(acoll_progress, records_held_in_the_lanes_are_said_while_the_ring_moves)
{
	struct xflow_clock k = { .kind = XFLOW_CLOCK_TSC, .base_tick = 1000, .base_ns = 5000000000ull,
				 .mult = UINT64_C(1) << 31 };
	struct peer *p = peer_on(&k, false, -1000);
	p->connected = true;
	uint64_t s = 5500000000ull;
	acoll_peer_held(p, 3000, 64, s);
	cr_assert_eq(acoll_peer_held_ns(p, s), 5000000000ull, "tick 3000 is 5 s + 1000 ns, less the offset");
	acoll_peer_held(p, 0, 128, s + 1000);
	cr_assert_eq(acoll_peer_held_ns(p, s + 1000), 0, "nothing held");
	acoll_peer_held(p, 3000, 192, s + 2000);
	cr_assert_eq(acoll_peer_held_ns(p, s + HELD_STALE_NS), 5000000000ull, "the ring moved within the stale time");
	acoll_peer_held(p, 3000, 192, s + HELD_STALE_NS);
	cr_assert_eq(acoll_peer_held_ns(p, s + 2000 + HELD_STALE_NS), 0, "a ring that stopped is not waited for");
	acoll_peer_held(p, 3000, 256, s + HELD_STALE_NS + 10);
	cr_assert_eq(acoll_peer_held_ns(p, s + HELD_STALE_NS + 10), 5000000000ull, "moving again");
	cr_assert_eq(acoll_peer_held_ns(p, 5000000000ull + HELD_MAX_NS + 1), 0, "too far back");
	p->gone = true;
	cr_assert_eq(acoll_peer_held_ns(p, s + HELD_STALE_NS + 10), 0, "gone");
	p->gone = false;
	acoll_peer_held(p, 1, 320, s);
	cr_assert_neq(p->held_ns, 0, "a claim of time 0 still says that records wait");
}
