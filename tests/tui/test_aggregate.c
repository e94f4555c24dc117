/*
 * The aggregation model on synthetic records with known answers.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/resource.h>

#include "tests/lib/testlib.h"
#include "tui/aggregate.h"
#include "tui/sched_join.h"
#include "xflow/collector.h"

#define US 1000ull
#define MS 1000000ull

static struct xflow_record rec(uint16_t dom, uint32_t site, uint64_t id, uint16_t flags)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	r.domain_id = dom;
	r.site_id = site;
	r.flow_id = id;
	r.flow_kind = 0;
	r.flags = flags;
	return r;
}

static struct xft_agg *make(struct xft_agg_limits *l)
{
	struct xft_agg *a;
	cr_assert_eq(xft_agg_new(l, NULL, NULL, &a), 0);
	return a;
}

static const struct xft_hop *find_hop(struct xft_agg *a, uint16_t fd, uint32_t fs, uint16_t td,
				      uint32_t ts)
{
	size_t n;
	const struct xft_hop *h = xft_agg_hops(a, &n);
	for (size_t i = 0; i < n; i++)
		if (h[i].key.from_domain == fd && h[i].key.from_group == fs &&
		    h[i].key.to_domain == td && h[i].key.to_group == ts)
			return &h[i];
	return NULL;
}

static void assert_near(uint64_t got, uint64_t want, const char *what)
{
	double err = got > want ? (double)(got - want) : (double)(want - got);
	cr_assert_leq(err, (double)want * XFLOW_HIST_REL_ERROR + 1, "%s: got %lu want %lu", what,
		      (unsigned long)got, (unsigned long)want);
}

Test(aggregate, hop_latencies_and_percentiles_are_exact_within_histogram_error)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	/* 1000 flows: site 1 -> 2 takes 10 us + i ns; 2 -> 3 takes 2 ms. */
	uint64_t t = 1000 * MS;
	for (uint64_t i = 1; i <= 1000; i++) {
		struct xflow_record r = rec(1, 1, i, XFLOW_REC_START);
		xft_agg_feed(a, &r, t);
		r = rec(1, 2, i, 0);
		xft_agg_feed(a, &r, t + 10 * US + i);
		r = rec(1, 3, i, XFLOW_REC_QUIT);
		xft_agg_feed(a, &r, t + 10 * US + i + 2 * MS);
		t += 5 * MS;
	}
	xft_agg_drain(a);
	const struct xft_hop *h12 = find_hop(a, 1, 1, 1, 2), *h23 = find_hop(a, 1, 2, 1, 3);
	cr_assert_not_null(h12);
	cr_assert_not_null(h23);
	cr_assert_eq(h12->count, 1000);
	cr_assert_eq(h23->count, 1000);
	assert_near(xflow_hist_quantile(&h12->hist, 0.5), 10 * US + 500, "p50 1->2");
	assert_near(xflow_hist_quantile(&h12->hist, 0.99), 10 * US + 990, "p99 1->2");
	cr_assert_eq(h12->hist.max, 10 * US + 1000);
	cr_assert_eq(h23->total_ns, 1000 * 2 * MS);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_assert_eq(st->flows_started, 1000);
	cr_assert_eq(st->flows_finished, 1000);
	cr_assert_eq(st->flows_live, 0);
	cr_assert_eq(st->late, 0);
	xft_agg_free(a);
}

Test(aggregate, reordering_within_the_window_changes_nothing)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.window_ns = 50 * MS;
	struct xft_agg *in_order = make(&l), *shuffled = make(&l);
	enum { N = 3000 };
	static struct xflow_record rs[N];
	static uint64_t ts[N];
	uint64_t t = 10 * MS;
	for (int i = 0; i < N / 3; i++) {
		uint64_t id = (uint64_t)i + 1;
		rs[3 * i] = rec(2, 10, id, XFLOW_REC_START), ts[3 * i] = t;
		rs[3 * i + 1] = rec(2, 11, id, 0), ts[3 * i + 1] = t + 3 * US;
		rs[3 * i + 2] = rec(2, 12, id, XFLOW_REC_QUIT), ts[3 * i + 2] = t + 40 * US;
		t += 7 * US;
	}
	for (int i = 0; i < N; i++)
		xft_agg_feed(in_order, &rs[i], ts[i]);
	/* Shuffle within blocks of 64 records (a few hundred us: well inside
	 * the window). */
	uint64_t st = 3;
	for (int b = 0; b < N; b += 64)
		for (int i = b; i < b + 64 && i < N; i++) {
			int lim = (b + 64 < N ? b + 64 : N) - i;
			int j = i + (int)(test_rand_next(&st) % (uint64_t)lim);
			struct xflow_record tr = rs[i];
			uint64_t tt = ts[i];
			rs[i] = rs[j], ts[i] = ts[j];
			rs[j] = tr, ts[j] = tt;
		}
	for (int i = 0; i < N; i++)
		xft_agg_feed(shuffled, &rs[i], ts[i]);
	xft_agg_drain(in_order);
	xft_agg_drain(shuffled);
	const struct xft_hop *x = find_hop(in_order, 2, 11, 2, 12), *y = find_hop(shuffled, 2, 11, 2, 12);
	cr_assert_not_null(x);
	cr_assert_not_null(y);
	cr_assert_eq(x->count, N / 3);
	cr_assert_eq(y->count, x->count);
	cr_assert_eq(y->total_ns, x->total_ns);
	cr_assert_eq(memcmp(&x->hist, &y->hist, sizeof(x->hist)), 0);
	cr_assert_eq(xft_agg_stats(shuffled)->late, 0);
	xft_agg_free(in_order);
	xft_agg_free(shuffled);
}

Test(aggregate, records_later_than_the_window_are_counted_and_kept)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.window_ns = 1 * MS;
	struct xft_agg *a = make(&l);
	struct xflow_record r = rec(1, 1, 7, XFLOW_REC_START);
	xft_agg_feed(a, &r, 100 * MS);
	r = rec(1, 2, 8, XFLOW_REC_START);
	xft_agg_feed(a, &r, 200 * MS); /* releases the first */
	r = rec(1, 3, 7, 0);
	xft_agg_feed(a, &r, 150 * MS); /* in time: only 100 ms has been released */
	r = rec(1, 4, 9, XFLOW_REC_START);
	xft_agg_feed(a, &r, 300 * MS); /* releases 150 and 200 */
	r = rec(1, 5, 8, 0);
	xft_agg_feed(a, &r, 120 * MS); /* late: 200 ms was already released */
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_assert_eq(st->records, 5);
	cr_assert_eq(st->released, 5, "nothing is dropped");
	cr_assert_eq(st->late, 1);
	cr_assert_eq(st->negative_hops, 1, "flow 8 went back in time: no hop");
	cr_assert_not_null(find_hop(a, 1, 1, 1, 3), "flow 7's in-window record made its hop");
	xft_agg_free(a);
}

Test(aggregate, a_full_window_releases_early_and_counts_it)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.max_pending = 16;
	l.window_ns = 1000 * MS;
	struct xft_agg *a = make(&l);
	for (uint64_t i = 0; i < 100; i++) {
		struct xflow_record r = rec(1, 1, i + 1, XFLOW_REC_START | XFLOW_REC_QUIT);
		xft_agg_feed(a, &r, i * US);
	}
	cr_assert_eq(xft_agg_stats(a)->window_full, 84);
	cr_assert_eq(xft_agg_stats(a)->released, 84);
	xft_agg_free(a);
}

Test(aggregate, flows_that_never_quit_expire_and_are_counted)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.expire_ns = 100 * MS;
	l.window_ns = 1 * MS;
	struct xft_agg *a = make(&l);
	for (uint64_t i = 1; i <= 10; i++) {
		struct xflow_record r = rec(1, 1, i, XFLOW_REC_START);
		xft_agg_feed(a, &r, i * MS);
	}
	xft_agg_tick(a, 50 * MS);
	cr_assert_eq(xft_agg_stats(a)->flows_live, 10);
	cr_assert_eq(xft_agg_stats(a)->flows_expired, 0);
	xft_agg_tick(a, 105 * MS + 500 * US); /* flows 1..5 idle for >= 100 ms */
	cr_assert_eq(xft_agg_stats(a)->flows_expired, 5);
	cr_assert_eq(xft_agg_stats(a)->flows_live, 5);
	xft_agg_tick(a, 1000 * MS);
	cr_assert_eq(xft_agg_stats(a)->flows_expired, 10);
	const struct xft_flow_summary *top;
	cr_assert_eq(xft_agg_slowest(a, &top, 10), 0, "expired flows are not among the slowest");
	xft_agg_free(a);
}

/* Two guests send flows through a ring header whose 12 bits carry the id
 * into dom0, interleaved; each flow must come out whole. */
Test(aggregate, ids_carried_in_header_bits_continue_the_flow_in_dom0)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.carried_bits[0] = 12;
	struct xft_agg *a = make(&l);
	uint64_t t = 1 * MS;
	for (uint64_t i = 0; i < 500; i++) {
		uint16_t guest = (uint16_t)(1 + i % 2);
		/* Guest ids run past 4096 so truncation matters. */
		uint64_t id = 4000 + i;
		struct xflow_record r = rec(guest, 20, id, XFLOW_REC_START);
		xft_agg_feed(a, &r, t);
		r = rec(guest, 21, id, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID);
		xft_agg_feed(a, &r, t + 5 * US);
		r = rec(0, 30, id & 0xfff, 0); /* netback: the carried bits */
		xft_agg_feed(a, &r, t + 5 * US + 800 * US);
		r = rec(0, 31, id & 0xfff, XFLOW_REC_QUIT);
		xft_agg_feed(a, &r, t + 5 * US + 800 * US + 2 * MS);
		t += 50 * US; /* many flows in flight at once */
	}
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	/* Id 4096 carries 0 in its 12 bits, and 0 means "no flow" to the
	 * receiver: that one flow is cut at the ring, as in the paper's
	 * scheme.  It stays live in the guest; its dom0 half is no flow. */
	cr_assert_eq(st->flows_started, 500);
	cr_assert_eq(st->flows_finished, 499);
	cr_assert_eq(st->no_flow, 2);
	cr_assert_eq(st->handoffs_sent, 500);
	cr_assert_eq(st->handoffs_matched, 499);
	const struct xft_hop *g1 = find_hop(a, 1, 21, 0, 30), *g2 = find_hop(a, 2, 21, 0, 30);
	cr_assert_not_null(g1);
	cr_assert_not_null(g2);
	cr_assert_eq(g1->count + g2->count, 499);
	cr_assert_eq(g1->hist.min, 800 * US);
	cr_assert_eq(g1->hist.max, 800 * US, "every flow matched its own dom0 half");
	const struct xft_flow_summary *top;
	size_t n = xft_agg_slowest(a, &top, 5);
	cr_assert_eq(n, 5);
	cr_assert_eq(top[0].npoints, 4, "start, xin, netback, free");
	cr_assert_eq(top[0].path[2].domain, 0);
	cr_assert_eq(top[0].end_ns - top[0].start_ns, 5 * US + 800 * US + 2 * MS);
	xft_agg_free(a);
}

Test(aggregate, keyed_handoff_links_a_fresh_local_id_to_the_sender)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	struct xflow_record r = rec(3, 1, 77, XFLOW_REC_START);
	xft_agg_feed(a, &r, 1 * MS);
	r = rec(3, 2, 77, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED);
	r.ndata = 2, r.data[0] = 0xabc, r.data[1] = 0;
	xft_agg_feed(a, &r, 2 * MS);
	/* An unrelated receive with another key does not match. */
	r = rec(0, 5, 1, XFLOW_REC_START | XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED);
	r.ndata = 2, r.data[0] = 0x999, r.data[1] = 1;
	xft_agg_feed(a, &r, 2 * MS + 10);
	r = rec(0, 5, 2, XFLOW_REC_START | XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED);
	r.ndata = 2, r.data[0] = 0xabc, r.data[1] = 1;
	xft_agg_feed(a, &r, 3 * MS);
	r = rec(0, 6, 2, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, 4 * MS);
	xft_agg_drain(a);
	const struct xft_hop *h = find_hop(a, 3, 2, 0, 5);
	cr_assert_not_null(h);
	cr_assert_eq(h->count, 1);
	cr_assert_eq(h->total_ns, 1 * MS);
	cr_assert_eq(xft_agg_stats(a)->handoffs_matched, 1);
	cr_assert_eq(xft_agg_stats(a)->flows_started, 2, "77, and the unmatched receive");
	xft_agg_free(a);
}

/* A monitor stopped for 0.4 s finds its agent's ring full of domain 1's
 * oldest records (thread 1's, to 1040 ms) and ticks at 1500 ms; the rest,
 * thread 2's from 1020 ms, wait in the agent's lanes for room, as the
 * agent says (held from 1020 ms).  Said, the tick keeps what is younger
 * than 1020 ms and thread 2's records are in time; not said, the tick
 * releases all by the clock and they come late.  Returns how many came
 * late, and checks that nothing is lost either way and that the window
 * lets all go once nothing is held. */
static uint64_t stopped_monitor(bool said)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l); /* a window of 100 ms, shorter than the stop */
	struct xft_agg *a = make(&l);
	struct xflow_record r;
	for (uint64_t i = 0; i < 5; i++) {
		r = rec(1, 1 + (uint32_t)i, 7, i ? 0 : XFLOW_REC_START);
		r.thread_id = 1;
		xft_agg_feed(a, &r, (1000 + 10 * i) * MS);
	}
	if (said)
		xft_agg_set_held(a, 1, 1020 * MS);
	xft_agg_tick(a, 1500 * MS);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_assert_eq(st->released, said ? 3 : 5, "said %d: released %lu", said, (unsigned long)st->released);
	for (uint64_t i = 0; i < 3; i++) {
		r = rec(1, 10 + (uint32_t)i, 8, i ? 0 : XFLOW_REC_START);
		r.thread_id = 2;
		xft_agg_feed(a, &r, (1020 + 5 * i) * MS);
	}
	xft_agg_set_held(a, 1, 0);
	xft_agg_tick(a, 1510 * MS);
	cr_assert_eq(st->released, 8, "nothing held: the window lets all go by the clock");
	cr_assert_not_null(find_hop(a, 1, 10, 1, 11));
	uint64_t late = st->late;
	xft_agg_free(a);
	return late;
}

Test(aggregate, records_an_agent_holds_for_room_are_waited_for_not_late)
{
	cr_assert_eq(stopped_monitor(true), 0);
	cr_assert_eq(stopped_monitor(false), 3, "the clock alone takes them for late");
}

/* The oldest time any domain holds bounds the release; a domain that
 * no longer holds frees it, another's still holds. */
Test(aggregate, the_oldest_held_time_of_any_domain_bounds_the_release)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	struct xflow_record r;
	xft_agg_set_held(a, 1, 1250 * MS);
	xft_agg_set_held(a, 2, 1150 * MS);
	for (uint64_t i = 0; i < 6; i++) {
		r = rec(3, 1, 7 + i, XFLOW_REC_START);
		xft_agg_feed(a, &r, (1000 + 100 * i) * MS);
	}
	cr_assert_eq(xft_agg_stats(a)->released, 2, "the newest record releases up to 1150 ms only");
	xft_agg_tick(a, 9000 * MS);
	cr_assert_eq(xft_agg_stats(a)->released, 2, "up to 1150 ms");
	xft_agg_set_held(a, 2, 0);
	xft_agg_tick(a, 9000 * MS);
	cr_assert_eq(xft_agg_stats(a)->released, 3, "up to 1250 ms");
	xft_agg_set_held(a, 1, 1450 * MS);
	xft_agg_tick(a, 9000 * MS);
	cr_assert_eq(xft_agg_stats(a)->released, 5, "domain 1 moved on to 1450 ms");
	xft_agg_set_held(a, 1, 0);
	xft_agg_tick(a, 9000 * MS);
	cr_assert_eq(xft_agg_stats(a)->released, 6);
	xft_agg_free(a);
}

/* dom0's IN of key 0xabc at 10 s waits for the guest's OUT, which the
 * guest wrote at 9.7 s but, descheduled, gives only at 13 s.  By the
 * monitor's clock the IN's grace (2 s) ran out at 12 s; the guest, which
 * says it has given its records up to 9.5 s only, holds it.  Without what
 * the guest says, the pair is unmatched; a guest that stops moving is not
 * waited for past five graces. */
static void late_guest(bool said, uint64_t stuck_for, uint64_t *joined, uint64_t *unmatched_in)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	struct xflow_record r = rec(0, 5, 2, XFLOW_REC_START | XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED);
	r.ndata = 2, r.data[0] = 0xabc, r.data[1] = 1;
	xft_agg_feed(a, &r, 10000 * MS);
	if (said)
		xft_agg_set_progress(a, 3, 9500 * MS);
	xft_agg_tick(a, (13000 + stuck_for) * MS);
	r = rec(3, 1, 77, XFLOW_REC_START);
	xft_agg_feed(a, &r, 9600 * MS);
	r = rec(3, 2, 77, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED);
	r.ndata = 2, r.data[0] = 0xabc, r.data[1] = 0;
	xft_agg_feed(a, &r, 9700 * MS);
	if (said)
		xft_agg_set_progress(a, 3, (13000 + stuck_for) * MS);
	xft_agg_tick(a, (13100 + stuck_for) * MS);
	xft_agg_drain(a);
	*joined = xft_agg_stats(a)->join_joined;
	*unmatched_in = xft_agg_stats(a)->join_unmatched_in;
	xft_agg_free(a);
}

Test(aggregate, a_guest_behind_holds_the_verdict_on_its_handoffs)
{
	uint64_t joined, unmatched;
	late_guest(false, 0, &joined, &unmatched);
	cr_assert_eq(unmatched, 1, "judged by the clock alone, the IN ran out of its grace");
	cr_assert_eq(joined, 0);
	late_guest(true, 0, &joined, &unmatched);
	cr_assert_eq(joined, 1, "the guest said it was behind: its OUT joins");
	cr_assert_eq(unmatched, 0);
	late_guest(true, 9000, &joined, &unmatched);
	cr_assert_eq(unmatched, 1, "a guest that did not move for 12.5 s is not waited for");
}

static uint32_t group_by_hundreds(void *opaque, uint16_t domain, uint32_t site)
{
	(void)opaque;
	(void)domain;
	return site / 100;
}

Test(aggregate, sites_of_one_group_make_one_point)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a;
	cr_assert_eq(xft_agg_new(&l, group_by_hundreds, NULL, &a), 0);
	/* Three accesses in "function" 1 (sites 100..102), then one in 2. */
	uint32_t sites[] = { 100, 101, 102, 200 };
	for (int i = 0; i < 4; i++) {
		struct xflow_record r = rec(1, sites[i], 5, i == 0 ? XFLOW_REC_START : i == 3 ? XFLOW_REC_QUIT : 0);
		xft_agg_feed(a, &r, (uint64_t)(i + 1) * US);
	}
	xft_agg_drain(a);
	size_t n;
	const struct xft_hop *h = xft_agg_hops(a, &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(h[0].key.from_group, 1);
	cr_assert_eq(h[0].from_site, 100);
	cr_assert_eq(h[0].total_ns, 3 * US, "from the first arrival in the group");
	xft_agg_free(a);
}

/* A group for every (domain, site): none shared, so a hop's key says
 * which sites the model took for its ends. */
static uint32_t group_of_each(void *opaque, uint16_t domain, uint32_t site)
{
	(void)opaque;
	return site * 4 + domain;
}

Test(aggregate, sites_sharing_the_model_cache_keep_their_own_groups)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.max_hops = 8192;
	struct xft_agg *a;
	cr_assert_eq(xft_agg_new(&l, group_of_each, NULL, &a), 0);
	/* Two domains with the same site numbers, one after the other, and
	 * far more sites than the model remembers the groups of: each flow
	 * goes from site s to site s + 1000 of its domain, round after
	 * round. */
	uint64_t t = 1000 * MS, id = 1;
	for (int round = 0; round < 3; round++)
		for (uint32_t s = 0; s < 600; s++)
			for (uint16_t d = 1; d <= 2; d++, id++) {
				struct xflow_record r = rec(d, s, id, XFLOW_REC_START);
				xft_agg_feed(a, &r, t += US);
				r = rec(d, s + 1000, id, XFLOW_REC_QUIT);
				xft_agg_feed(a, &r, t += US);
			}
	xft_agg_drain(a);
	size_t n;
	xft_agg_hops(a, &n);
	cr_assert_eq(n, 2 * 600);
	for (uint16_t d = 1; d <= 2; d++)
		for (uint32_t s = 0; s < 600; s++) {
			const struct xft_hop *h = find_hop(a, d, s * 4 + d, d, (s + 1000) * 4 + d);
			cr_assert_not_null(h, "domain %u site %u", d, s);
			cr_assert_eq(h->count, 3);
		}
	xft_agg_free(a);
}

Test(aggregate, an_id_seen_again_after_its_quit_is_a_new_flow)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	uint16_t flags[] = { XFLOW_REC_START, 0, XFLOW_REC_QUIT };
	for (int i = 0; i < 3; i++) {
		struct xflow_record r = rec(1, (uint32_t)i + 1, 5, flags[i]);
		xft_agg_feed(a, &r, (uint64_t)(i + 1) * MS);
	}
	/* The same id again, without a START (its first record lost): a
	 * flow of its own, partial, not the one that ended. */
	struct xflow_record r = rec(1, 2, 5, 0);
	xft_agg_feed(a, &r, 10 * MS);
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_assert_eq(st->flows_finished, 1);
	cr_assert_eq(st->flows_partial, 1);
	cr_assert_eq(st->flows_live, 1);
	/* Then a START of it: the partial one expires, a whole one begins. */
	r = rec(1, 1, 5, XFLOW_REC_START);
	xft_agg_feed(a, &r, 11 * MS);
	r = rec(1, 3, 5, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, 12 * MS);
	xft_agg_drain(a);
	cr_assert_eq(st->flows_expired, 1);
	cr_assert_eq(st->flows_finished, 2);
	cr_assert_eq(st->flows_live, 0);
	xft_agg_free(a);
}

/* A flow's key is held by the model's cache, out of its key table, until
 * the cache turns to another key: both ways it must come back right. */
Test(aggregate, flows_interleaved_and_ended_while_cached_keep_their_own_keys)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	/* Two flows' records in turn: each START leaves the other's key to
	 * the table, where their next records must find it. */
	uint64_t t = MS;
	for (int step = 0; step < 3; step++)
		for (uint64_t id = 5; id <= 7; id += 2) {
			uint16_t flags = step == 0 ? XFLOW_REC_START : step == 2 ? XFLOW_REC_QUIT : 0;
			struct xflow_record r = rec(1, (uint32_t)step + 1, id, flags);
			xft_agg_feed(a, &r, t);
			t += MS;
		}
	/* A flow that ends while its key is in the cache, another that
	 * starts after it, then the first id without a START: a flow of
	 * its own (partial), not the second one, which the first's freed
	 * slot now holds. */
	uint16_t flags[] = { XFLOW_REC_START, XFLOW_REC_QUIT };
	for (int i = 0; i < 2; i++) {
		struct xflow_record r = rec(1, (uint32_t)i + 1, 9, flags[i]);
		xft_agg_feed(a, &r, t);
		t += MS;
	}
	struct xflow_record r = rec(1, 1, 11, XFLOW_REC_START);
	xft_agg_feed(a, &r, t);
	t += MS;
	r = rec(1, 2, 9, 0);
	xft_agg_feed(a, &r, t);
	t += MS;
	r = rec(1, 3, 11, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t);
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_assert_eq(st->flows_finished, 4);
	cr_assert_eq(st->flows_partial, 1);
	cr_assert_eq(st->flows_live, 1);
	/* Each whole flow is its own three or two points: flows 5 and 7 two
	 * hops each, 9 one, 11 one (1 -> 3, with no point of 9's in it). */
	const struct xft_hop *h = find_hop(a, 1, 1, 1, 3);
	cr_assert(h && h->count == 1, "flow 11's one hop, 1 -> 3");
	h = find_hop(a, 1, 1, 1, 2);
	cr_assert(h && h->count == 3, "hops 1 -> 2: flows 5, 7 and 9");
	xft_agg_free(a);
}

Test(aggregate, slowest_flows_are_kept_with_their_paths, .timeout = 30)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.top_k = 5;
	struct xft_agg *a = make(&l);
	uint64_t st = 11, t = 0;
	uint64_t durs[2000];
	for (uint64_t i = 0; i < 2000; i++) {
		durs[i] = 1 + test_rand_next(&st) % (10 * MS);
		struct xflow_record r = rec(1, 1, i + 1, XFLOW_REC_START);
		xft_agg_feed(a, &r, t);
		r = rec(1, 2, i + 1, XFLOW_REC_QUIT);
		xft_agg_feed(a, &r, t + durs[i]);
		t += 1 * US;
	}
	xft_agg_drain(a);
	/* The five largest durations, by brute force. */
	uint64_t best[5] = { 0 };
	for (int i = 0; i < 2000; i++)
		for (int k = 0; k < 5; k++)
			if (durs[i] > best[k]) {
				memmove(&best[k + 1], &best[k], (size_t)(4 - k) * sizeof(best[0]));
				best[k] = durs[i];
				break;
			}
	const struct xft_flow_summary *top;
	cr_assert_eq(xft_agg_slowest(a, &top, 10), 5);
	for (int k = 0; k < 5; k++) {
		cr_assert_eq(top[k].end_ns - top[k].start_ns, best[k], "rank %d", k);
		cr_assert_eq(top[k].npoints, 2);
		cr_assert_eq(top[k].path[1].t_ns - top[k].path[0].t_ns, best[k]);
	}
	xft_agg_free(a);
}

static long max_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

Test(aggregate, memory_stays_bounded_through_ten_million_flows, .timeout = 300)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.max_flows = 4096;
	l.window_ns = 10 * US;
	l.max_pending = 4096;
	struct xft_agg *a = make(&l);
	uint64_t mem = xft_agg_stats(a)->memory_bytes;
	uint64_t t = 0;
	long rss_start = 0;
	for (uint64_t i = 1; i <= 10000000; i++) {
		/* Every tenth flow never quits: the pool must stay bounded. */
		struct xflow_record r = rec(1, (uint32_t)(i % 7), i, XFLOW_REC_START);
		xft_agg_feed(a, &r, t);
		r = rec(1, 100 + (uint32_t)(i % 13), i, i % 10 ? XFLOW_REC_QUIT : 0);
		xft_agg_feed(a, &r, t + 500);
		t += 100;
		if (i == 100000)
			rss_start = max_rss_kb();
	}
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_assert_eq(st->flows_started, 10000000);
	cr_assert_eq(st->flows_finished, 9000000);
	cr_assert_leq(st->flows_live, 4096);
	cr_assert_eq(st->flows_finished + st->flows_evicted + st->flows_live, 10000000);
	cr_assert_eq(st->memory_bytes, mem, "the model never allocates after creation");
	long grown = max_rss_kb() - rss_start;
	cr_assert_lt(grown, 8 * 1024, "RSS grew by %ld KiB after the first 100K flows", grown);
	xft_agg_free(a);
}

/* Issue 19 item 5: a flow evicted to make room, whose later records come
 * back, is a partial flow: counted apart, never among the slowest (its
 * fragment here would be the slowest of all), never finished. */
Test(aggregate, a_flow_whose_beginning_was_evicted_is_partial)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.max_flows = 16;
	l.window_ns = 10 * US;
	struct xft_agg *a = make(&l);
	uint64_t t = 1000 * MS;
	/* 17 starts: the 17th evicts flow 1, the oldest. */
	for (uint64_t id = 1; id <= 17; id++) {
		struct xflow_record r = rec(1, 1, id, XFLOW_REC_START);
		xft_agg_feed(a, &r, t + id * US);
	}
	/* Flows 2..17 go on and quit 1 ms after their start. */
	for (uint64_t id = 2; id <= 17; id++) {
		struct xflow_record r = rec(1, 2, id, 0);
		xft_agg_feed(a, &r, t + 500 * US + id * US);
		r = rec(1, 3, id, XFLOW_REC_QUIT);
		xft_agg_feed(a, &r, t + 1 * MS + id * US);
	}
	/* Flow 1's middle and end come much later: a 50 ms fragment. */
	struct xflow_record r = rec(1, 2, 1, 0);
	xft_agg_feed(a, &r, t + 10 * MS);
	r = rec(1, 3, 1, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t + 60 * MS);
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_eq(st->flows_evicted, 1);
	cr_expect_eq(st->flows_started, 17);
	cr_expect_eq(st->flows_partial, 1);
	cr_expect_eq(st->flows_finished, 16, "a fragment counted as a finished flow");
	cr_expect_eq(st->flows_live, 0);
	const struct xft_flow_summary *s;
	size_t n = xft_agg_slowest(a, &s, 100);
	cr_expect_eq(n, 16);
	for (size_t i = 0; i < n; i++)
		cr_expect_neq(s[i].id, 1, "the fragment of flow 1 is ranked %zu among the slowest", i + 1);
	xft_agg_free(a);
}

/* What the model keeps of domain @dom's flows: its whole flows among the
 * slowest, and its hop samples. */
static void honest_figures(struct xft_agg *a, uint16_t dom, uint64_t *whole, uint64_t *samples)
{
	const struct xft_flow_summary *s;
	size_t n = xft_agg_slowest(a, &s, 1000);
	*whole = *samples = 0;
	for (size_t i = 0; i < n; i++)
		*whole += s[i].origin_domain == dom && !s[i].expired;
	size_t nh;
	const struct xft_hop *h = xft_agg_hops(a, &nh);
	for (size_t i = 0; i < nh; i++)
		if (h[i].key.from_domain == dom)
			*samples += h[i].count;
}

/* Domain 1's ten flows, started, then (with @liar) domain 2's flood of
 * records of ids it never started, then domain 1's ten quits. */
static void flood_run(bool liar, uint64_t *whole, uint64_t *samples, uint64_t *evicted)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.max_flows = 64;
	l.top_k = 100;
	l.window_ns = 10 * US;
	struct xft_agg *a = make(&l);
	uint64_t t = 1000 * MS;
	for (uint64_t id = 1; id <= 10; id++) {
		struct xflow_record r = rec(1, 1, id, XFLOW_REC_START);
		xft_agg_feed(a, &r, t + id * US);
	}
	for (uint64_t id = 1; liar && id <= 1000; id++) {
		struct xflow_record r = rec(2, 5, 1000 + id, XFLOW_REC_TRANSIT);
		xft_agg_feed(a, &r, t + 100 * US + id * US);
	}
	for (uint64_t id = 1; id <= 10; id++) {
		struct xflow_record r = rec(1, 2, id, XFLOW_REC_QUIT);
		xft_agg_feed(a, &r, t + 2 * MS + id * US);
	}
	xft_agg_drain(a);
	honest_figures(a, 1, whole, samples);
	*evicted = xft_agg_stats(a)->flows_evicted;
	xft_agg_free(a);
}

/* Issue 30 item 7: a domain that floods the flow table (a guest's records
 * of ids it never started, which the collector gives on as partial flows)
 * evicts its own flows, not another's: the table evicted the idlest flow
 * of any domain, the honest domain's waiting ones first. */
Test(aggregate, a_domain_flooding_the_flow_table_evicts_its_own)
{
	uint64_t whole0, samples0, ev0, whole, samples, ev;
	flood_run(false, &whole0, &samples0, &ev0);
	cr_assert_eq(whole0, 10);
	cr_assert_eq(samples0, 10);
	cr_assert_eq(ev0, 0);
	flood_run(true, &whole, &samples, &ev);
	cr_expect_gt(ev, 900, "the flood did not fill the table: %lu evicted", (unsigned long)ev);
	cr_expect_eq(whole, whole0, "honest whole flows %lu, without the flood %lu", (unsigned long)whole,
		     (unsigned long)whole0);
	cr_expect_eq(samples, samples0, "honest hop samples %lu, without the flood %lu", (unsigned long)samples,
		     (unsigned long)samples0);
}

/* A record of thread @tid numbered @seq by a producer that counts its
 * lost records (xflow/record.h, "Losses"). */
static struct xflow_record trec(uint16_t dom, uint32_t site, uint64_t id, uint16_t flags, uint32_t tid,
				uint32_t seq)
{
	struct xflow_record r = rec(dom, site, id, flags | XFLOW_REC_SEQ_COUNTS_LOST);
	r.thread_id = tid;
	r.thread_seq = seq;
	return r;
}

/* Issue 26 item 1: flows one after another on one thread, the middle
 * record of one lost (its number skipped): that flow is partial, the
 * others whole, and it is not among the slowest. */
Test(aggregate, a_flow_that_lost_its_middle_record_is_partial_not_finished)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	uint64_t t = 1000 * MS;
	uint32_t seq = 0;
	for (uint64_t id = 1; id <= 10; id++) {
		struct xflow_record r = trec(1, 1, id, XFLOW_REC_START, 7, seq++);
		xft_agg_feed(a, &r, t);
		r = trec(1, 2, id, 0, 7, seq++);
		if (id != 4)
			xft_agg_feed(a, &r, t + 10 * US);
		/* Flow 4, missing its middle, would be the slowest. */
		r = trec(1, 3, id, XFLOW_REC_QUIT, 7, seq++);
		xft_agg_feed(a, &r, t + (id == 4 ? 900 : 20) * US);
		t += 1 * MS;
	}
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_eq(st->flows_finished, 9, "%lu finished", (unsigned long)st->flows_finished);
	cr_expect_eq(st->flows_partial, 1);
	cr_expect_eq(st->flows_started + st->flows_partial, 10, "every flow once");
	cr_expect_eq(st->records_lost, 1);
	cr_expect_eq(st->loss_gaps, 1);
	cr_expect_eq(st->loss_late, 0);
	/* As events (the counters that only grow): ten begun whole, one of
	 * them found partial later, and still counted begun. */
	cr_expect_eq(st->flows_started_events, 10);
	cr_expect_eq(st->flows_partial_events, 1);
	const struct xft_flow_summary *s;
	size_t n = xft_agg_slowest(a, &s, 100);
	cr_expect_eq(n, 9);
	for (size_t i = 0; i < n; i++)
		cr_expect_neq(s[i].id, 4, "flow 4, which lost a record, is ranked %zu", i + 1);
	xft_agg_free(a);
}

/* The loss note an agent writes for a thread's records lost after its
 * last one (xflow/record.h, "Losses"). */
static struct xflow_record loss_note(uint16_t dom, uint32_t tid, uint32_t seq)
{
	struct xflow_record r = rec(dom, 0, 0, XFLOW_REC_SEQ_COUNTS_LOST | XFLOW_REC_LOSS_NOTE);
	r.flow_kind = XFLOW_FLOW_KIND_NONE;
	r.thread_id = tid;
	r.thread_seq = seq;
	r.ndata = 1;
	r.data[0] = seq; /* the gap before it is the model's to count */
	return r;
}

/* Issue 26 item 1, its remainder: thread 9 passes flows 1 to 4 on, and
 * its records for 3 and 4, its last, are lost; it then idles, and thread
 * 8 ends the flows.  No later record of thread 9 shows the gap: its
 * agent's note does, and the flows live in it are partial, not finished,
 * with exactly the lost records counted.  Thread 9's next record follows
 * the note: no restart, nothing counted again. */
Test(aggregate, a_note_after_a_thread_s_last_record_marks_the_flows_it_may_have_lost)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	uint64_t t = 1000 * MS;
	struct xflow_record r;
	for (uint32_t id = 1; id <= 4; id++) {
		r = trec(1, 1, id, XFLOW_REC_START, 8, id - 1);
		xft_agg_feed(a, &r, t + id * US);
	}
	r = trec(1, 2, 1, 0, 9, 0);
	xft_agg_feed(a, &r, t + 10 * US);
	r = trec(1, 3, 1, XFLOW_REC_QUIT, 8, 4); /* flow 1 ends before the gap */
	xft_agg_feed(a, &r, t + 15 * US);
	r = trec(1, 2, 2, 0, 9, 1); /* thread 9's last record; 2 and 3 are lost */
	xft_agg_feed(a, &r, t + 20 * US);
	for (uint32_t id = 2; id <= 4; id++) {
		r = trec(1, 3, id, XFLOW_REC_QUIT, 8, 3 + id);
		xft_agg_feed(a, &r, t + (40 + 10 * id) * US);
	}
	r = loss_note(1, 9, 3); /* the agent saw thread 9's lane idle */
	xft_agg_feed(a, &r, t + 100 * US);
	/* Flow 5, after the gap, has thread 9's next record. */
	r = trec(1, 1, 5, XFLOW_REC_START, 8, 7);
	xft_agg_feed(a, &r, t + 200 * US);
	r = trec(1, 2, 5, 0, 9, 4);
	xft_agg_feed(a, &r, t + 210 * US);
	r = trec(1, 3, 5, XFLOW_REC_QUIT, 8, 8);
	xft_agg_feed(a, &r, t + 220 * US);
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_eq(st->records_lost, 2, "the two records lost, not %lu", (unsigned long)st->records_lost);
	cr_expect_eq(st->loss_gaps, 1);
	cr_expect_eq(st->loss_late, 0);
	cr_expect_eq(st->flows_finished, 2, "flows 1 and 5 whole, not %lu", (unsigned long)st->flows_finished);
	cr_expect_eq(st->flows_partial, 3, "flows 2 to 4 suspect, not %lu", (unsigned long)st->flows_partial);
	cr_expect_eq(st->no_flow, 1, "the note is no flow's record");
	const struct xft_flow_summary *s;
	size_t n = xft_agg_slowest(a, &s, 100);
	cr_expect_eq(n, 2);
	for (size_t i = 0; i < n; i++)
		cr_expect(s[i].id == 1 || s[i].id == 5, "flow %lu ranked", (unsigned long)s[i].id);
	xft_agg_free(a);
}

/* Which flow a lost record was of is not known: every flow of the
 * losing domain live at the gap or begun in it is suspect, on any
 * thread; flows that ended before it, or began after it, are not, nor
 * are another domain's. */
Test(aggregate, flows_live_in_a_gap_are_partial_and_the_rest_whole)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	uint64_t t = 1000 * MS;
	struct xflow_record r;
	/* Flow 1 (domain 2, unnumbered) ends before thread 9's gap. */
	r = rec(2, 1, 1, XFLOW_REC_START);
	xft_agg_feed(a, &r, t);
	r = rec(2, 3, 1, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t + 5 * US);
	/* Flow 2 (domain 2) spans domain 1's gap, but has no point there;
	 * flow 3 (domain 1, thread 8) begins and ends inside it. */
	r = rec(2, 1, 2, XFLOW_REC_START);
	xft_agg_feed(a, &r, t + 8 * US);
	r = trec(1, 1, 100, XFLOW_REC_START, 9, 0);
	xft_agg_feed(a, &r, t + 10 * US); /* thread 9: the record before the gap */
	r = trec(1, 1, 3, XFLOW_REC_START, 8, 0);
	xft_agg_feed(a, &r, t + 20 * US);
	r = trec(1, 3, 3, XFLOW_REC_QUIT, 8, 1);
	xft_agg_feed(a, &r, t + 30 * US);
	r = trec(1, 3, 100, XFLOW_REC_QUIT, 9, 3); /* 1 and 2 lost */
	xft_agg_feed(a, &r, t + 40 * US);
	r = rec(2, 3, 2, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t + 50 * US);
	/* Flow 4 begins at the gap's end, on thread 9: after it. */
	r = trec(1, 1, 4, XFLOW_REC_START, 9, 4);
	xft_agg_feed(a, &r, t + 40 * US);
	r = trec(1, 3, 4, XFLOW_REC_QUIT, 9, 5);
	xft_agg_feed(a, &r, t + 60 * US);
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_eq(st->records_lost, 2);
	cr_expect_eq(st->flows_finished, 3, "flows 1, 2 and 4 whole, not %lu", (unsigned long)st->flows_finished);
	cr_expect_eq(st->flows_partial, 2, "flows 3 and 100 suspect, not %lu", (unsigned long)st->flows_partial);
	const struct xft_flow_summary *s;
	size_t n = xft_agg_slowest(a, &s, 100);
	cr_expect_eq(n, 3);
	for (size_t i = 0; i < n; i++)
		cr_expect(s[i].id == 1 || s[i].id == 2 || s[i].id == 4, "flow %lu ranked", (unsigned long)s[i].id);
	xft_agg_free(a);
}

/* A guest's numbers are its claim: one that skips a billion of them
 * makes its own flows partial, and a flow that came to it through a ring
 * header, but not the flows of a domain it never touched. */
Test(aggregate, a_guest_lying_about_its_numbers_marks_only_flows_it_had)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	uint64_t t = 1000 * MS;
	struct xflow_record r;
	/* dom0's flow 10 stays in dom0; its flow 11 crosses into guest 5,
	 * which goes on with it as its id 11, then quits it in dom0 again. */
	r = rec(0, 1, 10, XFLOW_REC_START);
	xft_agg_feed(a, &r, t);
	r = rec(0, 1, 11, XFLOW_REC_START);
	xft_agg_feed(a, &r, t + 1 * US);
	r = rec(0, 2, 11, XFLOW_REC_CROSS_DOMAIN);
	xft_agg_feed(a, &r, t + 2 * US);
	r = trec(5, 2, 11, XFLOW_REC_CROSS_DOMAIN, 70, 0);
	xft_agg_feed(a, &r, t + 3 * US);
	/* Guest 5's own flow 12, then its lie: numbers skipped. */
	r = trec(5, 1, 12, XFLOW_REC_START, 70, 1);
	xft_agg_feed(a, &r, t + 4 * US);
	r = trec(5, 3, 12, XFLOW_REC_QUIT, 70, 1000000000);
	xft_agg_feed(a, &r, t + 5 * US);
	/* dom0 ends its two flows after the lie. */
	r = rec(0, 3, 10, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t + 6 * US);
	r = rec(5, 3, 11, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t + 7 * US);
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_eq(st->handoffs_matched, 1, "flow 11 reached guest 5");
	cr_expect_eq(st->records_lost, 1000000000 - 2);
	cr_expect_eq(st->flows_finished, 1, "dom0's flow 10 whole, not %lu", (unsigned long)st->flows_finished);
	cr_expect_eq(st->flows_partial, 2, "flows 11 and 12 suspect, not %lu", (unsigned long)st->flows_partial);
	const struct xft_flow_summary *s;
	cr_expect_eq(xft_agg_slowest(a, &s, 100), 1);
	cr_expect_eq(s[0].id, 10);
	xft_agg_free(a);
}

/* A gap seen after the window let its beginning go is applied at once and
 * counted late; records whose producer does not count its losses say
 * nothing by their numbers. */
Test(aggregate, a_late_gap_is_counted_and_unflagged_numbers_say_nothing)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.window_ns = 1 * MS;
	struct xft_agg *a = make(&l);
	uint64_t t = 1000 * MS;
	struct xflow_record r = trec(1, 1, 1, XFLOW_REC_START, 9, 0);
	xft_agg_feed(a, &r, t);
	r = rec(1, 1, 2, XFLOW_REC_START);
	r.thread_id = 5;
	r.thread_seq = 0;
	xft_agg_feed(a, &r, t + 1 * US);
	r.thread_seq = 40; /* unflagged: no loss */
	r.flags = XFLOW_REC_QUIT;
	xft_agg_feed(a, &r, t + 2 * US);
	r = rec(1, 9, 0, 0); /* no flow: moves the window past them */
	xft_agg_feed(a, &r, t + 5 * MS);
	r = trec(1, 3, 1, XFLOW_REC_QUIT, 9, 2); /* 1 lost, seen 10 ms on */
	xft_agg_feed(a, &r, t + 10 * MS);
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_eq(st->loss_gaps, 1);
	cr_expect_eq(st->loss_late, 1);
	cr_expect_eq(st->flows_finished, 1, "flow 2 ended before the gap was seen");
	cr_expect_eq(st->flows_partial, 1, "flow 1 was live at the gap");
	xft_agg_free(a);
}

/* Issue 27: two threads whose producer numbers their records (a lane
 * each, so each thread's records come in time order), drained in chunks
 * of ten flows a thread as an agent drains lanes.  What every thread has
 * passed leaves the window at once, not a window later, and nothing is
 * late; records of producers that do not say their threads are in order
 * wait for the window. */
static void two_threads(bool numbered, bool warm, uint64_t *released_before_drain, uint64_t *late,
			uint64_t *finished)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	uint64_t t0 = 3000 * MS;
	uint32_t seq[2] = { 0, 0 };
	if (warm) {
		/* A record without a flow 2 s before: the model has seen the
		 * threads for longer than its first second. */
		struct xflow_record r = trec(1, 9, 0, 0, 20, seq[0]++);
		xft_agg_feed(a, &r, t0 - 2000 * MS);
	}
	for (uint64_t chunk = 0; chunk < 10; chunk++) {
		for (uint32_t th = 0; th < 2; th++) {
			for (uint64_t i = chunk * 10; i < chunk * 10 + 10; i++) {
				uint64_t id = 2 * i + th + 1, t = t0 + i * 100 * US + th * 20 * US;
				struct xflow_record r = trec(1, 1, id, XFLOW_REC_START, 20 + th, seq[th]++);
				if (!numbered)
					r.flags &= (uint16_t)~XFLOW_REC_SEQ_COUNTS_LOST;
				xft_agg_feed(a, &r, t);
				r = trec(1, 3, id, XFLOW_REC_QUIT, 20 + th, seq[th]++);
				if (!numbered)
					r.flags &= (uint16_t)~XFLOW_REC_SEQ_COUNTS_LOST;
				xft_agg_feed(a, &r, t + 5 * US);
			}
		}
	}
	*released_before_drain = xft_agg_stats(a)->released - warm;
	xft_agg_drain(a);
	*late = xft_agg_stats(a)->late;
	*finished = xft_agg_stats(a)->flows_finished;
	xft_agg_free(a);
}

Test(aggregate, threads_in_order_leave_the_window_when_every_thread_passed_them)
{
	uint64_t released, late, finished;
	two_threads(true, true, &released, &late, &finished);
	/* 10 ms of records, a chunk 1 ms of them: those older than what
	 * both threads passed, by twice the 1 ms chunks arrive late and 1 ms
	 * more (about 6 ms of the 10). */
	cr_expect_gt(released, 150, "only %lu of 400 released within the window", (unsigned long)released);
	cr_expect_lt(released, 350, "%lu released: not held by the lag", (unsigned long)released);
	cr_expect_eq(late, 0);
	cr_expect_eq(finished, 200);
	two_threads(false, true, &released, &late, &finished);
	cr_expect_eq(released, 0, "unnumbered records wait for the window (10 ms of records in a 100 ms window)");
	cr_expect_eq(late, 0);
	cr_expect_eq(finished, 200);
	/* In the model's first second no lag has been seen yet: the
	 * watermark waits, and the window alone releases. */
	two_threads(true, false, &released, &late, &finished);
	cr_expect_eq(released, 0, "%lu released in the first second", (unsigned long)released);
	cr_expect_eq(late, 0);
	cr_expect_eq(finished, 200);
}

/* Flow @id's hop from site 1 at @t0 to site 2 at @t1, both written on
 * CPU 0 (d0v0, for the scheduler join). */
static void feed_hop_v0(struct xft_agg *a, uint64_t id, uint64_t t0, uint64_t t1)
{
	struct xflow_record r = rec(0, 1, id, XFLOW_REC_START);
	r.cpu_plus1 = 1;
	xft_agg_feed(a, &r, t0);
	r = rec(0, 2, id, XFLOW_REC_QUIT);
	r.cpu_plus1 = 1;
	xft_agg_feed(a, &r, t1);
}

/* An aggregation with a 10 us window and the scheduler join (@max_pending
 * hops queued, 0: the default), d0v0 running on pCPU 0 from @t: the
 * event that said so in @e, for the caller's next ones. */
static struct xft_agg *joined_v0_running(uint32_t max_pending, uint64_t t, struct xflow_sched_event *e)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.window_ns = 10 * US;
	struct xft_agg *a = make(&l);
	struct xft_sj_limits sl = { 0 };
	cr_assert_eq(xft_agg_sched_join(a, &sl, max_pending), 0);
	*e = (struct xflow_sched_event){ .t_ns = t, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 0, .from = 1, .to = 0 };
	xft_agg_sched_event(a, e);
	return a;
}

/* The queue of hops waiting for the scheduler trace: one that overflows
 * many times over splits its oldest early and loses nothing; either way
 * every hop is split once and all of its time is accounted. */
static void split_queue_run(uint32_t max_pending, uint64_t *early)
{
	uint64_t t = 1000 * MS, hops = 0;
	struct xflow_sched_event e;
	struct xft_agg *a = joined_v0_running(max_pending, t, &e);
	for (uint64_t i = 1; i <= 5000; i++) {
		feed_hop_v0(a, i, t + US, t + 4 * US);
		t += 4 * US;
		hops++;
		if (i % 100 == 0) {
			/* The trace passes what was fed now and then. */
			e.kind = XFLOW_SCHED_SWITCH;
			e.t_ns = t;
			xft_agg_sched_event(a, &e);
		}
	}
	xft_agg_drain(a);
	xft_agg_sched_flush(a);
	const struct xft_hop *h = find_hop(a, 0, 1, 0, 2);
	cr_assert_not_null(h);
	uint64_t total = 0;
	for (unsigned s = 0; s < XFT_NSTATES; s++)
		total += h->split.all.ns[s];
	cr_assert_eq(xft_agg_sched_status(a)->hops_split, hops);
	cr_assert_eq(xft_agg_sched_status(a)->hops_pending, 0);
	cr_assert_eq(total, h->total_ns, "every nanosecond of every hop is in a state");
	uint64_t why = 0;
	for (unsigned r = 0; r < XFT_UNK_NREASONS; r++)
		why += h->split.all.unknown_ns[r];
	cr_assert_eq(why, h->split.all.ns[XFT_ST_UNKNOWN], "the hop's sums carry the reasons of its '?'");
	*early = xft_agg_stats(a)->split_early;
	cr_assert_eq(xft_agg_sched_status(a)->split_early, *early, "the join's status says how many");
	xft_agg_free(a);
}

/* The slowest 1 % of a hop is judged against its p99 once 100 samples
 * give it a meaning: 50 samples put none in it, 1000 no more than 3 %. */
static uint64_t tail_after(unsigned n)
{
	uint64_t t = 1000 * MS;
	struct xflow_sched_event e;
	struct xft_agg *a = joined_v0_running(0, t, &e);
	for (unsigned i = 1; i <= n; i++) {
		uint64_t t0 = t + US;
		t = t0 + (i * 7919 % 997 + 1) * US; /* 1 to 997 us, scattered */
		feed_hop_v0(a, i, t0, t);
		/* The trace passes each hop at once, as it does live. */
		e.kind = XFLOW_SCHED_SWITCH;
		e.t_ns = t + 20 * US;
		xft_agg_sched_event(a, &e);
	}
	xft_agg_drain(a);
	xft_agg_sched_flush(a);
	const struct xft_hop *h = find_hop(a, 0, 1, 0, 2);
	cr_assert_not_null(h);
	uint64_t tail = h->split.tail_count;
	xft_agg_free(a);
	return tail;
}

Test(aggregate, the_slowest_1_percent_waits_for_100_samples)
{
	cr_assert_eq(tail_after(50), 0, "50 samples have no p99 to be above");
	uint64_t tail = tail_after(1000);
	cr_assert_leq(tail, 30, "1000 samples: %lu in the tail", (unsigned long)tail);
}

/* A slowest flow's path is split once the trace has passed its end, and
 * that split is kept: the timelines it read may forget those times soon
 * after (a ring of 8 entries here), and split again then, its gaps would
 * be '?'.  With top_k 1, flow 2 takes the slot of flow 1, whose split was
 * final: the slot is split again when the trace passes flow 2's end. */
Test(aggregate, the_slowest_flows_gaps_are_split_once_the_trace_passes_them)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.window_ns = 10 * US;
	l.top_k = 1;
	struct xft_agg *a = make(&l);
	struct xft_sj_limits sl = { .per_vcpu = 8 };
	cr_assert_eq(xft_agg_sched_join(a, &sl, 0), 0);
	uint64_t t = 1000 * MS;
	/* d0v0 runs from t on pCPU 0. */
	struct xflow_sched_event e = { .t_ns = t, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 0, .from = 1, .to = 0 };
	xft_agg_sched_event(a, &e);
	for (uint64_t id = 1; id <= 2; id++) {
		uint64_t t0 = t + id * MS;
		feed_hop_v0(a, id, t0, t0 + id * 100 * US); /* flow 2 is the slower */
		xft_agg_tick(a, t0 + MS);
		/* The trace passes the flow's end, then d0v0 keeps blocking
		 * and running until its ring holds none of the flow's time. */
		e.kind = XFLOW_SCHED_SWITCH;
		e.t_ns = t0 + 500 * US;
		xft_agg_sched_event(a, &e);
		e.kind = XFLOW_SCHED_RUNSTATE;
		for (unsigned i = 0; i < 20; i++) {
			e.t_ns = t0 + 600 * US + i * US;
			e.from = i % 2 ? 2 : 0;
			e.to = i % 2 ? 0 : 2;
			xft_agg_sched_event(a, &e);
		}
		const struct xft_flow_summary *top;
		cr_assert_eq(xft_agg_slowest(a, &top, 1), 1);
		cr_assert_eq(top[0].id, id, "flow %lu is the slowest", (unsigned long)id);
		cr_assert_eq(top[0].npoints, 2);
		cr_assert_not_null(top[0].gaps);
		const struct xft_split *g = &top[0].gaps[0].split;
		cr_expect_eq(g->ns[XFT_ST_RUN], id * 100 * US, "flow %lu ran its whole gap: run %lu ns, '?' %lu ns",
			     (unsigned long)id, (unsigned long)g->ns[XFT_ST_RUN],
			     (unsigned long)g->ns[XFT_ST_UNKNOWN]);
		cr_expect_eq(g->ns[XFT_ST_UNKNOWN], 0);
	}
	cr_expect_eq(xft_agg_sched_status(a)->too_old, 0, "a path was split again after its ring forgot it");
	xft_agg_free(a);
}

/* What the trace lost is counted by reason, the reasons adding up to the
 * loss the header shows. */
Test(aggregate, the_trace_s_losses_are_counted_by_reason)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	struct xft_sj_limits sl = { .per_vcpu = 4 };
	cr_assert_eq(xft_agg_sched_join(a, &sl, 0), 0);
	uint64_t t = 1000 * MS;
	struct xflow_sched_event e = { .t_ns = t, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 0, .from = 2, .to = 0 };
	xft_agg_sched_event(a, &e);
	/* A hop from t: d0v0 then changes state 8 times, more than its
	 * timeline keeps, and 5 records are lost. */
	feed_hop_v0(a, 1, t + US, t + 2 * US);
	for (unsigned i = 0; i < 8; i++) {
		e.t_ns = t + (i + 3) * US;
		e.from = i % 2 ? 2 : 0;
		e.to = i % 2 ? 0 : 2;
		xft_agg_sched_event(a, &e);
	}
	struct xflow_sched_event lost = { .t_ns = t + 20 * US, .kind = XFLOW_SCHED_LOST, .pcpu = 0, .arg = 5 };
	xft_agg_sched_event(a, &lost);
	xft_agg_drain(a);
	xft_agg_sched_flush(a);
	const struct xft_sched_status *st = xft_agg_sched_status(a);
	cr_assert_eq(st->hops_split, 1);
	cr_assert_eq(st->lost_records, 5);
	cr_assert_geq(st->too_old, 1, "the hop was older than what the timeline kept");
	cr_assert_eq(st->no_vcpu_room, 0);
	cr_assert_eq(st->trace_lost, st->lost_records + st->too_old + st->no_vcpu_room);
	const struct xft_hop *h = find_hop(a, 0, 1, 0, 2);
	cr_assert_not_null(h);
	cr_assert_eq(h->split.all.ns[XFT_ST_UNKNOWN], US, "its time is '?'");
	cr_assert_eq(h->split.all.unknown_ns[XFT_UNK_OLD], US, "because the timeline let it go");
	xft_agg_free(a);
}

Test(aggregate, the_split_queue_wraps_and_loses_nothing)
{
	uint64_t early;
	split_queue_run(7, &early);
	cr_assert_gt(early, 0, "a queue of 7 overflows");
	split_queue_run(0, &early);
	cr_assert_eq(early, 0, "the default queue holds 100 hops");
}

/* A hop the trace has already passed when it is sampled (the reorder
 * window holds records longer than the trace lags) is split as it comes,
 * not left waiting for the next scheduler event. */
Test(aggregate, a_hop_the_trace_has_passed_is_split_as_it_comes)
{
	uint64_t t = 1000 * MS;
	struct xflow_sched_event e;
	struct xft_agg *a = joined_v0_running(0, t, &e);
	feed_hop_v0(a, 1, t + US, t + 4 * US);
	/* The trace passes the hop before the window lets it go. */
	e.kind = XFLOW_SCHED_SWITCH;
	e.t_ns = t + 100 * US;
	xft_agg_sched_event(a, &e);
	xft_agg_drain(a);
	cr_assert_eq(xft_agg_sched_status(a)->hops_split, 1, "split with no event after it");
	cr_assert_eq(xft_agg_sched_status(a)->hops_pending, 0);
	const struct xft_hop *h = find_hop(a, 0, 1, 0, 2);
	cr_assert_not_null(h);
	cr_assert_eq(h->split.all.ns[XFT_ST_RUN], 3 * US, "the vCPU ran the whole hop");
	xft_agg_free(a);
}

/* Domain 0's two vCPUs, each on its pCPU, every 20 us from @c0: running
 * but for a wait of 2 us (vCPU 0 at 5 us, vCPU 1 at 14 us) and an
 * interrupt, vCPU 0 notifying at 9 us; into both models. */
static void twin_cycle(struct xft_agg *m[2], uint64_t c0, int first)
{
	struct xflow_sched_event e[] = {
		{ .t_ns = c0 + 5 * US, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 0, .vcpu = 0, .from = first ? 2 : 0, .to = 1 },
		{ .t_ns = c0 + 7 * US, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 0, .vcpu = 0, .from = 1, .to = 0 },
		{ .t_ns = c0 + 8 * US, .kind = XFLOW_SCHED_XEN, .pcpu = 1, .arg = 300 },
		{ .t_ns = c0 + 9 * US, .kind = XFLOW_SCHED_HYPERCALL, .pcpu = 0, .arg = 32 },
		{ .t_ns = c0 + 14 * US, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 1, .vcpu = 1, .from = first ? 2 : 0, .to = 1 },
		{ .t_ns = c0 + 16 * US, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 1, .vcpu = 1, .from = 1, .to = 0 },
		{ .t_ns = c0 + 18 * US, .kind = XFLOW_SCHED_XEN, .pcpu = 0, .arg = 200 },
	};
	for (unsigned k = 0; k < sizeof(e) / sizeof(e[0]); k++)
		for (unsigned i = 0; i < 2; i++)
			xft_agg_sched_event(m[i], &e[k]);
}

static void count_splits(void *ctx, const struct xft_hop *h, uint64_t t0, uint64_t t1, const struct xft_split *s,
			 const struct xft_culprit *c)
{
	(void)h, (void)t0, (void)t1, (void)s, (void)c;
	++*(uint64_t *)ctx;
}

/* The hops of the twins have the same sums; their slowest flows, how many. */
static uint64_t twins_same(struct xft_agg *m[2])
{
	size_t n[2];
	const struct xft_hop *h[2] = { xft_agg_hops(m[0], &n[0]), xft_agg_hops(m[1], &n[1]) };
	cr_assert(n[0] == 2 && n[1] == 2, "%zu and %zu hops", n[0], n[1]);
	uint64_t tails = 0;
	for (size_t k = 0; k < 2; k++) {
		cr_assert_eq(h[0][k].key.from_group, h[1][k].key.from_group);
		cr_assert_eq(h[0][k].split.tail_count, h[1][k].split.tail_count);
		cr_assert(!memcmp(&h[0][k].split.all, &h[1][k].split.all, sizeof(h[0][k].split.all)),
			  "hop %zu: the sums of all its splits", k);
		cr_assert(!memcmp(&h[0][k].split.tail, &h[1][k].split.tail, sizeof(h[0][k].split.tail)),
			  "hop %zu: the sums of its slowest", k);
		tails += h[0][k].split.tail_count;
	}
	return tails;
}

/* The join's memo answers most splits of hops across vCPUs, and owes its
 * answers to the hops' sums until they are read (xft_sj_split_add()):
 * the sums read, while flows come, after a reset and at the end, are
 * those of a twin model that adds every split as it is made (a callback
 * sees each). */
Test(aggregate, the_split_sums_read_are_those_of_every_split_added_at_once)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.window_ns = 10 * US;
	struct xft_agg *m[2] = { make(&l), make(&l) };
	struct xft_sj_limits sl = { 0 };
	uint64_t seen = 0;
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(xft_agg_sched_join(m[i], &sl, 0), 0);
	xft_agg_on_split(m[1], count_splits, &seen);
	uint64_t c0 = 1000 * MS;
	for (uint64_t f = 1; f <= 4000; f++) {
		if (f % 20 == 1)
			twin_cycle(m, c0 + (f / 20) * 20 * US, f == 1);
		/* Two hops from vCPU 0 to vCPU 1, in turns of a few flows,
		 * 1 to 8 us long, scattered for a slowest 1 %: from the
		 * first 5 us of a cycle, ending while vCPU 1 runs. */
		uint32_t site = (f / 7) % 2 ? 1 : 3;
		uint64_t t0 = c0 + (f / 20) * 20 * US + (f % 20) * US / 4, d = US + (f * 7919) % (7 * US);
		struct xflow_record r0 = rec(0, site, f, XFLOW_REC_START), r1 = rec(0, site + 1, f, XFLOW_REC_QUIT);
		r0.cpu_plus1 = 1;
		r1.cpu_plus1 = 2;
		for (unsigned i = 0; i < 2; i++) {
			xft_agg_feed(m[i], &r0, t0);
			xft_agg_feed(m[i], &r1, t0 + d);
		}
		if (f == 2000 || f == 3800)
			twins_same(m);
		if (f == 2500)
			for (unsigned i = 0; i < 2; i++)
				xft_agg_reset(m[i]);
	}
	for (unsigned i = 0; i < 2; i++) {
		xft_agg_drain(m[i]);
		xft_agg_sched_flush(m[i]);
	}
	cr_assert_gt(twins_same(m), 0, "some flows are among the slowest");
	cr_assert_gt(seen, 1000);
	size_t n;
	const struct xft_hop *h = xft_agg_hops(m[0], &n);
	for (size_t k = 0; k < n; k++) {
		uint64_t total = 0;
		for (unsigned s = 0; s < XFT_NSTATES; s++)
			total += h[k].split.all.ns[s];
		cr_assert_eq(total, h[k].total_ns, "hop %zu: every nanosecond is in a state", k);
	}
	for (unsigned i = 0; i < 2; i++)
		xft_agg_free(m[i]);
}

/* Issue 30 item 7: a liar's agent pairing ever new sites in its own domain
 * (each pair a hop) before an honest domain's first hop. */
static void hop_flood(struct xft_agg *a, uint16_t dom, uint32_t pairs, uint64_t *t)
{
	for (uint32_t i = 0; i < pairs; i++) {
		struct xflow_record r = rec(dom, 1000 + 2 * i, 1 + i, XFLOW_REC_START);
		xft_agg_feed(a, &r, *t);
		r = rec(dom, 1001 + 2 * i, 1 + i, XFLOW_REC_QUIT);
		xft_agg_feed(a, &r, *t + 10 * US);
		*t += 20 * US;
	}
}

Test(aggregate, a_domain_pairing_sites_cannot_keep_another_s_new_hop_out)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.max_hops = 64;
	struct xft_agg *a = make(&l);
	uint64_t t = 1 * MS;
	hop_flood(a, 7, 1000, &t);
	struct xflow_record r = rec(1, 1, 5, XFLOW_REC_START);
	xft_agg_feed(a, &r, t);
	r = rec(1, 2, 5, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t + 30 * US);
	hop_flood(a, 7, 1000, &t); /* and on after it */
	xft_agg_drain(a);
	const struct xft_hop *h = find_hop(a, 1, 1, 1, 2);
	cr_assert_not_null(h, "the honest domain's new hop found no slot: the liar holds them all");
	cr_expect_eq(h->count, 1);
	cr_expect_eq(h->total_ns, 30 * US);
	struct xft_agg_refused liar, honest;
	xft_agg_domain_refused(a, 7, &liar);
	xft_agg_domain_refused(a, 1, &honest);
	/* Alone it took half the table (32 hops), and no more beside the
	 * honest one (its share of three is 21); its second round's first
	 * 32 pairs find their hops. */
	cr_expect_eq(liar.hops, 2000 - 32 - 32, "refused %lu", (unsigned long)liar.hops);
	cr_expect_eq(honest.hops, 0);
	cr_expect_eq(xft_agg_stats(a)->hops_dropped, liar.hops);
	xft_agg_free(a);
}

/* An honest pair's unkeyed handoff (guest 1 to dom0, 12 carried bits)
 * while domain @liar sends @outs OUT records of ids it makes up. */
static uint64_t honest_handoff_among(uint16_t liar, uint32_t outs, uint64_t *refused)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.carried_bits[0] = 12;
	l.max_handoffs = 64;
	struct xft_agg *a = make(&l);
	uint64_t t = 1 * MS;
	struct xflow_record r = rec(1, 20, 0x123, XFLOW_REC_START);
	xft_agg_feed(a, &r, t);
	r = rec(1, 21, 0x123, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID);
	xft_agg_feed(a, &r, t + 5 * US);
	for (uint32_t i = 0; i < outs; i++) {
		r = rec(liar, 40, 0x1000 + 0x200 + i, XFLOW_REC_START | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID);
		xft_agg_feed(a, &r, t + 10 * US + i);
	}
	r = rec(0, 30, 0x123, 0);
	xft_agg_feed(a, &r, t + 800 * US);
	r = rec(0, 31, 0x123, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t + 900 * US);
	xft_agg_drain(a);
	const struct xft_hop *h = find_hop(a, 1, 21, 0, 30);
	uint64_t n = h ? h->count : 0;
	struct xft_agg_refused lr, hr;
	xft_agg_domain_refused(a, liar, &lr);
	xft_agg_domain_refused(a, 1, &hr);
	cr_expect_eq(hr.handoffs, 0, "the honest sender was refused");
	*refused = lr.handoffs;
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_eq(st->handoffs_sent, 1 + outs);
	cr_expect_eq(st->handoffs_matched, 1);
	xft_agg_free(a);
	return n;
}

Test(aggregate, a_domain_flooding_handoffs_cannot_evict_another_s)
{
	uint64_t refused;
	cr_assert_eq(honest_handoff_among(9, 0, &refused), 1, "the honest handoff alone");
	cr_expect_eq(refused, 0);
	cr_assert_eq(honest_handoff_among(9, 1000, &refused), 1,
		     "the liar's OUTs evicted the honest pair's waiting handoff");
	/* Half the queue of 64 is the liar's to hold. */
	cr_expect_eq(refused, 1000 - 32, "refused %lu", (unsigned long)refused);
}

/*
 * Issue 30 item 7: which sites may take and leave an unkeyed handoff.
 * The plan of every domain here: dom0 sends at site 21, a guest receives
 * at site 30; site 50 is any other site (say, where a liar writes).
 */
enum { SEND_SITE = 21, RECV_SITE = 30, OTHER_SITE = 50 };

static unsigned plan_roles(void *opaque, uint16_t domain, uint32_t site)
{
	(void)domain;
	if (opaque == NULL)
		return 0; /* a collector that does not know */
	return XFLOW_SITE_ROLES_KNOWN | (site == SEND_SITE ? XFLOW_SITE_SENDS : 0) |
	       (site == RECV_SITE ? XFLOW_SITE_RECEIVES : 0);
}

/* dom0 starts flow 0x5123 and sends it out with 12 bits carried; liar
 * domain 9 then writes a record of the guessed id 0x123 at OTHER_SITE
 * before the honest guest 1 receives it at RECV_SITE and ends it.  The
 * liar's record is no START: it claims to continue a flow.  @known: the
 * roles callback knows the plan. */
static struct xft_agg *liar_guesses_an_id(bool known)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.carried_bits[0] = 12;
	struct xft_agg *a = make(&l);
	static int plan;
	xft_agg_set_roles(a, plan_roles, known ? &plan : NULL);
	uint64_t t = 1 * MS;
	struct xflow_record r = rec(0, 20, 0x5123, XFLOW_REC_START);
	xft_agg_feed(a, &r, t);
	r = rec(0, SEND_SITE, 0x5123, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID);
	xft_agg_feed(a, &r, t + 5 * US);
	r = rec(9, OTHER_SITE, 0x123, XFLOW_REC_TRANSIT);
	xft_agg_feed(a, &r, t + 100 * US);
	r = rec(1, RECV_SITE, 0x123, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID);
	xft_agg_feed(a, &r, t + 800 * US);
	r = rec(1, 31, 0x123, XFLOW_REC_QUIT);
	xft_agg_feed(a, &r, t + 900 * US);
	xft_agg_drain(a);
	return a;
}

Test(aggregate, a_guessed_id_at_a_site_that_does_not_receive_takes_no_handoff)
{
	struct xft_agg *a = liar_guesses_an_id(true);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_null(find_hop(a, 0, SEND_SITE, 9, OTHER_SITE), "the liar took dom0's handoff");
	const struct xft_hop *h = find_hop(a, 0, SEND_SITE, 1, RECV_SITE);
	cr_assert_not_null(h, "the honest receiver found no handoff");
	cr_expect_eq(h->count, 1);
	cr_expect_eq(h->total_ns, 795 * US);
	cr_expect_eq(st->handoffs_sent, 1);
	cr_expect_eq(st->handoffs_matched, 1);
	cr_expect_eq(st->handoffs_lost, 0);
	/* The liar's record begins a partial flow of its own, as any record
	 * of an unknown flow does; dom0's flow ends whole in guest 1. */
	cr_expect_eq(st->flows_partial, 1);
	cr_expect_eq(st->flows_finished, 1);
	const struct xft_flow_summary *top;
	cr_assert_eq(xft_agg_slowest(a, &top, 5), 1);
	cr_expect_eq(top[0].origin_domain, 0);
	cr_expect_eq(top[0].npoints, 4, "start, send, receive, quit");
	/* Not a lie: an honest agent that lost a flow's first records
	 * writes the same. */
	struct xft_agg_refused ref;
	xft_agg_domain_refused(a, 9, &ref);
	cr_expect_eq(ref.handoffs, 0);
	xft_agg_free(a);
}

Test(aggregate, a_record_at_a_receive_site_that_found_no_handoff_sends_none)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a = make(&l);
	static int plan;
	xft_agg_set_roles(a, plan_roles, &plan);
	/* Guest 1 receives a flow whose sender was not seen (its handoff
	 * lost); a record of the same id in dom0, at a site that receives
	 * too, comes after it. */
	struct xflow_record r = rec(1, RECV_SITE, 0x77, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN);
	xft_agg_feed(a, &r, 1 * MS);
	r = rec(0, RECV_SITE, 0x77, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN);
	xft_agg_feed(a, &r, 2 * MS);
	xft_agg_drain(a);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_eq(st->handoffs_sent, 0, "a receiving record was queued as sent");
	cr_expect_eq(st->handoffs_matched, 0);
	cr_expect_null(find_hop(a, 1, RECV_SITE, 0, RECV_SITE), "dom0's record arrived from guest 1's");
	cr_expect_eq(st->flows_partial, 2);
	xft_agg_free(a);
}

Test(aggregate, sites_of_unknown_roles_send_and_receive_as_before)
{
	/* A collector that does not know roles: the liar's record takes
	 * the handoff, and the honest receiver begins a partial flow. */
	struct xft_agg *a = liar_guesses_an_id(false);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_expect_not_null(find_hop(a, 0, SEND_SITE, 9, OTHER_SITE));
	cr_expect_null(find_hop(a, 0, SEND_SITE, 1, RECV_SITE));
	cr_expect_eq(st->handoffs_matched, 1);
	/* The honest receiver's record, not matched, is queued as sent. */
	cr_expect_eq(st->handoffs_sent, 2);
	cr_expect_eq(st->flows_partial, 1);
	xft_agg_free(a);

	/* No callback at all: the same. */
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	a = make(&l);
	struct xflow_record r = rec(1, RECV_SITE, 0x77, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN);
	xft_agg_feed(a, &r, 1 * MS);
	r = rec(0, OTHER_SITE, 0x77, 0);
	xft_agg_feed(a, &r, 2 * MS);
	xft_agg_drain(a);
	cr_expect_eq(xft_agg_stats(a)->handoffs_sent, 1);
	cr_expect_eq(xft_agg_stats(a)->handoffs_matched, 1);
	cr_expect_not_null(find_hop(a, 1, RECV_SITE, 0, OTHER_SITE));
	xft_agg_free(a);
}

/* Site 105 is a notify point's (XFLOW_SITE_NOTIFIES); the others are known
 * to be nothing. */
static unsigned notify_roles(void *opaque, uint16_t domain, uint32_t site)
{
	(void)opaque;
	(void)domain;
	return XFLOW_SITE_ROLES_KNOWN | (site == 105 ? XFLOW_SITE_NOTIFIES : 0);
}

/* A hop from d0v0 to d0v1: its point (group 1) begins at site 101 at t,
 * notifies at site 105 at t + 30 us, and the hop ends at site 201 at
 * t + 100 us.  d0v0 runs throughout and makes its evtchn_op at t + 60 us;
 * d0v1 is blocked until t + 90 us.  The run of the hop's split. */
static uint64_t run_of_notified_hop(bool roles)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.window_ns = 10 * US;
	struct xft_agg *a;
	cr_assert_eq(xft_agg_new(&l, group_by_hundreds, NULL, &a), 0);
	if (roles)
		xft_agg_set_roles(a, notify_roles, NULL);
	struct xft_sj_limits sl = { 0 };
	cr_assert_eq(xft_agg_sched_join(a, &sl, 0), 0);
	uint64_t t = 1000 * MS;
	struct xflow_sched_event e[] = {
		{ .t_ns = t - 10 * US, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 0, .dom = 0, .vcpu = 0, .from = 1, .to = 0 },
		{ .t_ns = t - 10 * US, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 1, .dom = 0, .vcpu = 1, .from = 0, .to = 2 },
		{ .t_ns = t + 60 * US, .kind = XFLOW_SCHED_HYPERCALL, .pcpu = 0, .arg = 32 },
		{ .t_ns = t + 90 * US, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 1, .dom = 0, .vcpu = 1, .from = 2, .to = 0 },
		{ .t_ns = t + 200 * US, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = 0, .dom = 0, .vcpu = 0, .from = 0, .to = 2 },
	};
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		xft_agg_sched_event(a, &e[i]);
	struct xflow_record r = rec(0, 101, 7, XFLOW_REC_START);
	r.cpu_plus1 = 1;
	xft_agg_feed(a, &r, t);
	r = rec(0, 105, 7, XFLOW_REC_TRANSIT);
	r.cpu_plus1 = 1;
	xft_agg_feed(a, &r, t + 30 * US);
	r = rec(0, 201, 7, XFLOW_REC_QUIT);
	r.cpu_plus1 = 2;
	xft_agg_feed(a, &r, t + 100 * US);
	xft_agg_drain(a);
	xft_agg_sched_flush(a);
	const struct xft_hop *h = find_hop(a, 0, 1, 0, 2);
	cr_assert_not_null(h);
	cr_assert_eq(h->split.all.ns[XFT_ST_NOTIFY] + h->split.all.ns[XFT_ST_RUN], 90 * US,
		     "the sender's run and the receiver's sleep make the hop but its last 10 us");
	uint64_t run = h->split.all.ns[XFT_ST_RUN];
	xft_agg_free(a);
	return run;
}

/* Issue 24: the point's record at the notify site, not its first, is
 * where the sender's part ends; without the roles, the evtchn_op is. */
Test(aggregate, a_notify_site_in_a_point_ends_the_senders_part)
{
	cr_assert_eq(run_of_notified_hop(true), 30 * US);
	cr_assert_eq(run_of_notified_hop(false), 60 * US);
}

/* A window that its records' time bound keeps just short of full: a
 * record is looked at for release only every few records (RELEASE_EVERY,
 * or a tenth of a millisecond of record time), but one that finds the
 * window full first releases what the records before it would have, had
 * each looked, so that none is let go early for want of room. */
Test(aggregate, a_window_kept_just_short_of_full_lets_none_go_early)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	/* A record every 50 us, released once a millisecond (the lag's
	 * floor) older than the newest: 22 slots are just enough when each
	 * record looks; one fewer, and every record is let go early. */
	l.max_pending = 22;
	struct xft_agg *a = make(&l);
	uint64_t full0 = 0;
	for (uint32_t k = 0; k < 30000; k++) {
		uint64_t t = (uint64_t)k * 50 * US;
		if (t == 1100 * MS) /* the watermark is used from 1 s of record time */
			full0 = xft_agg_stats(a)->window_full;
		struct xflow_record r = trec(1, 0, 2 * (uint64_t)k + 1, XFLOW_REC_START | XFLOW_REC_QUIT, 1, k);
		xft_agg_feed(a, &r, t);
	}
	cr_expect_eq(xft_agg_stats(a)->window_full, full0, "%lu records let go early",
		     (unsigned long)(xft_agg_stats(a)->window_full - full0));
	cr_expect_eq(xft_agg_stats(a)->late, 0);
	xft_agg_free(a);
}

/* A tick's time may be behind the newest record (a source whose records
 * run ahead of the monitor's clock): what the records fed would have
 * released, each looking at the window as it came, is released by then
 * even though none of them looked. */
Test(aggregate, a_tick_behind_the_newest_releases_what_each_record_would_have)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.window_ns = 0;
	struct xft_agg *a = make(&l);
	for (uint64_t k = 1; k <= 3; k++) {
		struct xflow_record r = rec(1, (uint32_t)k, 7, k == 1 ? XFLOW_REC_START : 0);
		xft_agg_feed(a, &r, k * 10 * US);
	}
	xft_agg_tick(a, 25 * US);
	cr_expect_eq(xft_agg_stats(a)->released, 3);
	xft_agg_free(a);
}
