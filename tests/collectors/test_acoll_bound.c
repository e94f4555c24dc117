/*
 * The bound the agent collector gives with a guest's records
 * (collectors/acoll_clock.c, xflow_domain_info's clock_bound_ns): when the
 * placement of the guest's clock moves while its records wait in the
 * model, the move is in the bound until they are old, since the model
 * compares records placed before it with records placed after.  In the
 * Xen lab under load a guest's round trips moved its clock by 14.8 ms
 * while they bounded it within 6.9 ms, and the keyed join, trusting the
 * 6.9, paired 40 of 402 requests' sides wrongly.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "collectors/acoll_priv.h"
#include "xflow/clock.h"

#define MS 1000000ll

static struct xflow_clock mono = { .kind = XFLOW_CLOCK_MONOTONIC };

/* A guest over Xen placed by round trips at @offset within @bound_ns, as
 * of now, with @records placed already. */
static void placed(struct peer *p, int64_t offset, uint64_t bound_ns, uint64_t records)
{
	memset(p, 0, sizeof(*p));
	p->xen = true;
	p->conv = &mono;
	p->clk = PEER_CLOCK_RT;
	p->offset_checked = true;
	guest_clock_rt_init(&p->rt, offset, bound_ns, xflow_monotonic_ns());
	acoll_peer_offset_set(p, offset);
	p->records = records;
}

Test(acoll_bound, a_move_is_in_the_bound_while_records_placed_before_it_may_wait)
{
	struct peer p;
	placed(&p, 0, 100000, 10);
	uint64_t before = acoll_peer_clock_bound(&p);
	cr_assert(before >= 100000 && before < 1 * MS, "the round trips' bound: %llu", (unsigned long long)before);
	acoll_peer_offset_set(&p, 14800000);
	uint64_t after = acoll_peer_clock_bound(&p);
	cr_assert_geq(after, before + 14800000, "placed 14.8 ms away, the records placed before are off by it: %llu",
		      (unsigned long long)after);
	/* Back again: the records placed between were given the move in
	 * their bound, and those placed before are where they were. */
	acoll_peer_offset_set(&p, 0);
	cr_assert_geq(acoll_peer_clock_bound(&p), before + 14800000, "still held for the records between");
}

/* Round trips that agree move the placement inside what the earlier
 * ones proved: the records placed before are within their bound. */
Test(acoll_bound, a_round_trip_that_agrees_adds_nothing)
{
	struct acoll c;
	memset(&c, 0, sizeof(c));
	struct peer p;
	placed(&p, 0, 1 * MS, 10);
	uint64_t before = acoll_peer_clock_bound(&p);
	uint64_t now = xflow_monotonic_ns();
	p.stats_sent_ns = now - 100000;
	/* 0.3 ms off the middle, within 0.05 ms: inside the 1 ms. */
	struct xflow_ctl_stats s = { .clock_now = now - 50000 - 300000 };
	acoll_peer_clock_refine(&c, &p, &s);
	cr_assert_eq(p.rt.contradictions, 0);
	cr_assert(p.offset_ns > 200000 && p.offset_ns < 400000, "placed at its middle: %lld", (long long)p.offset_ns);
	uint64_t b = acoll_peer_clock_bound(&p);
	cr_assert_leq(b, before + 10000, "the bound held, nothing added: %llu after %llu", (unsigned long long)b,
		      (unsigned long long)before);
	/* Once the records placed under the 1 ms are old, the round trips'
	 * own bound alone: the 0.3 ms move is not in it. */
	p.bound_until = 1;
	b = acoll_peer_clock_bound(&p);
	cr_assert_leq(b, 100000, "within the new round trip's 0.05 ms: %llu", (unsigned long long)b);
}

Test(acoll_bound, a_move_before_any_record_is_no_ones_error)
{
	struct peer p;
	placed(&p, 0, 100000, 0);
	uint64_t before = acoll_peer_clock_bound(&p);
	acoll_peer_offset_set(&p, -5 * MS);
	cr_assert_lt(acoll_peer_clock_bound(&p), before + 1 * MS, "no record was placed on the old placement");
}

Test(acoll_bound, once_the_records_before_a_move_are_old_it_no_longer_counts)
{
	struct peer p;
	placed(&p, 0, 100000, 10);
	acoll_peer_offset_set(&p, 20 * MS);
	cr_assert_geq(acoll_peer_clock_bound(&p), 20 * MS);
	/* Its hold over, and the higher bound's hold over too (both run
	 * on our clock; set here rather than waited for). */
	p.moved_until = 1;
	acoll_bound_note(&p);
	p.bound_until = 1;
	uint64_t b = acoll_peer_clock_bound(&p);
	cr_assert_lt(b, 1 * MS, "the placement's own bound again: %llu", (unsigned long long)b);
	/* A move after that counts from zero, not on top of the old one. */
	acoll_peer_offset_set(&p, 21 * MS);
	b = acoll_peer_clock_bound(&p);
	cr_assert(b >= 1 * MS && b < 2 * MS, "only the new 1 ms move: %llu", (unsigned long long)b);
}

/* The way it happens: a STATS round trip that contradicts the ones
 * before places the clock again from itself alone, with its own small
 * bound, 14.8 ms from where it was. */
Test(acoll_bound, a_round_trip_that_contradicts_the_others_moves_the_bound_with_it)
{
	struct acoll c;
	memset(&c, 0, sizeof(c));
	struct peer p;
	placed(&p, 0, 50000, 10);
	uint64_t now = xflow_monotonic_ns();
	p.stats_sent_ns = now - 100000; /* a round trip of 0.1 ms */
	/* The agent's clock answers 14.8 ms later than the offset allows. */
	struct xflow_ctl_stats s = { .clock_now = now - 50000 + 14800000 };
	acoll_peer_clock_refine(&c, &p, &s);
	cr_assert_eq(p.rt.contradictions, 1, "a contradiction");
	cr_assert(p.offset_ns < -14 * MS, "placed from it alone, its clock ahead of ours: %lld", (long long)p.offset_ns);
	uint64_t b = acoll_peer_clock_bound(&p);
	cr_assert_geq(b, 14 * MS, "the records placed before are off by the move: %llu", (unsigned long long)b);
	cr_assert(strstr(c.err, "part"), "said: %s", c.err);
}
