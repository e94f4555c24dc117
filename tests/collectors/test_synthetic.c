/*
 * The synthetic collector through the aggregation model: what it claims
 * about latencies is what the model measures.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "collectors/builtin.h"
#include "tui/aggregate.h"
#include "xflow/clock.h"
#include "xflow/collector.h"

static void feed(void *ctx, const struct xflow_record *r, uint64_t t)
{
	xft_agg_feed(ctx, r, t);
}

/* The model asks the collector for the roles, as xflowtop's does. */
static unsigned roles_of(void *opaque, uint16_t domain, uint32_t site)
{
	struct xflow_site_info si = { 0 };
	return xflow_collector_synthetic.site_info(opaque, domain, site, &si) == 0 ? si.roles : 0;
}

/* Run @options for @seconds of generated time into a fresh model. */
static struct xft_agg *run(const char *options, double seconds, struct xflow_collector **cp)
{
	char err[200] = "";
	struct xflow_collector *c;
	cr_assert_eq(xflow_collector_synthetic.open(options, &c, err, sizeof(err)), 0, "%s", err);
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.carried_bits[0] = xflow_collector_synthetic.carried_bits(c, 0);
	struct xft_agg *a;
	cr_assert_eq(xft_agg_new(&l, NULL, NULL, &a), 0);
	xft_agg_set_roles(a, roles_of, c);
	uint64_t until = xflow_monotonic_ns() + (uint64_t)(seconds * 1e9);
	long n;
	while ((n = xflow_collector_synthetic.read(c, until, feed, a, 4096)) > 0)
		;
	cr_assert_eq(n, 0);
	xft_agg_drain(a);
	*cp = c;
	return a;
}

static const struct xft_hop *hop_into(struct xft_agg *a, uint32_t to_site)
{
	size_t n;
	const struct xft_hop *h = xft_agg_hops(a, &n);
	for (size_t i = 0; i < n; i++)
		if (h[i].key.to_group == to_site && h[i].key.from_group == to_site - 1)
			return &h[i];
	return NULL;
}

Test(synthetic, every_hop_median_is_the_papers_gap)
{
	struct xflow_collector *c;
	struct xft_agg *a = run("rate=20000,seed=7", 0.5, &c);
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_assert_gt(st->flows_finished, 9000);
	for (unsigned i = 1; i < xflow_synthetic_npoints; i++) {
		const struct xft_hop *h = hop_into(a, i);
		cr_assert_not_null(h, "hop into %s", xflow_synthetic_path[i].function);
		double want = (double)xflow_synthetic_path[i].gap_ns;
		double got = (double)xflow_hist_quantile(&h->hist, 0.5);
		/* +-20 % uniform jitter over ~10K flows: the sample median is
		 * within ~1 %, plus the histogram's 0.8 %. */
		cr_assert_lt(got > want ? got - want : want - got, want * 0.03,
			     "%s: median %.0f ns, paper %.0f ns", xflow_synthetic_path[i].function,
			     got, want);
		if (i == 6)
			cr_assert_eq(h->key.from_domain, 1, "the ring hop leaves the guest");
	}
	/* The paper's finding: netif_rx -> netif_receive_skb takes the time. */
	size_t n;
	const struct xft_hop *h = xft_agg_hops(a, &n), *top = &h[0];
	for (size_t i = 1; i < n; i++)
		if (h[i].total_ns > top->total_ns)
			top = &h[i];
	cr_assert_str_eq(xflow_synthetic_path[top->to_site].function, "netif_receive_skb");
	xflow_collector_synthetic.close(c);
	xft_agg_free(a);
}

Test(synthetic, slowest_path_follows_table_2_in_order)
{
	struct xflow_collector *c;
	struct xft_agg *a = run("rate=2000,guests=3", 0.3, &c);
	const struct xft_flow_summary *top;
	cr_assert_gt(xft_agg_slowest(a, &top, 1), 0);
	cr_assert_eq(top[0].npoints, xflow_synthetic_npoints);
	for (unsigned i = 0; i < top[0].npoints; i++) {
		cr_assert_eq(top[0].path[i].site, i);
		cr_assert_eq(top[0].path[i].domain == 0, xflow_synthetic_path[i].dom0 == 1);
		struct xflow_site_info si;
		cr_assert_eq(xflow_collector_synthetic.site_info(c, top[0].path[i].domain, i, &si), 0);
		cr_assert_str_eq(si.function, xflow_synthetic_path[i].function);
		/* The id leaves the guest at network_start_xmit and arrives
		 * at dom0's first point, as a plan of that xflow says. */
		unsigned want = XFLOW_SITE_ROLES_KNOWN;
		if (!strcmp(si.function, "network_start_xmit"))
			want |= XFLOW_SITE_SENDS;
		if (!strcmp(si.function, "netbk_fill_frags"))
			want |= XFLOW_SITE_RECEIVES;
		cr_assert_eq(si.roles, want, "%s: roles %#x", si.function, si.roles);
	}
	/* With the roles known every pair still matches. */
	const struct xft_agg_stats *st = xft_agg_stats(a);
	cr_assert_gt(st->handoffs_matched, 0);
	cr_assert_eq(st->handoffs_matched, st->handoffs_sent);
	xflow_collector_synthetic.close(c);
	xft_agg_free(a);
}

Test(synthetic, an_injected_delay_moves_that_hop_only)
{
	struct xflow_collector *c;
	struct xft_agg *a = run("rate=5000,jitter=0,delay=netif_receive_skb:2000000", 0.3, &c);
	const struct xft_hop *h = hop_into(a, 8);
	cr_assert_eq(xflow_hist_quantile(&h->hist, 0.5), 2415500 + 2000000, "jitter 0: exact");
	cr_assert_eq(xflow_hist_quantile(&hop_into(a, 9)->hist, 0.5), 22300);
	xflow_collector_synthetic.close(c);
	xft_agg_free(a);
}

Test(synthetic, disabling_an_aspect_stops_its_records)
{
	char err[100];
	struct xflow_collector *c;
	cr_assert_eq(xflow_collector_synthetic.open("rate=10000", &c, err, sizeof(err)), 0);
	struct xft_agg *a;
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	cr_assert_eq(xft_agg_new(&l, NULL, NULL, &a), 0);
	cr_assert_eq(xflow_collector_synthetic.aspect_set(c, 1, 0), 0);
	uint64_t until = xflow_monotonic_ns() + 100000000;
	cr_assert_eq(xflow_collector_synthetic.read(c, until, feed, a, 1 << 20), 0);
	struct xflow_aspect_info ai;
	cr_assert_eq(xflow_collector_synthetic.aspect_info(c, 1, &ai), 0);
	cr_assert_eq(ai.enabled, 0);
	cr_assert_eq(ai.hits, 0);
	xflow_collector_synthetic.aspect_set(c, 1, 1);
	cr_assert_gt(xflow_collector_synthetic.read(c, until + 100000000, feed, a, 1 << 20), 0);
	cr_assert_eq(xflow_collector_synthetic.aspect_set(c, 9, 1), -ENOENT);
	xflow_collector_synthetic.close(c);
	xft_agg_free(a);
}

Test(synthetic, bad_options_name_the_option)
{
	char err[200];
	struct xflow_collector *c;
	static const struct {
		const char *opt, *msg;
	} bad[] = {
		{ "rate=0", "bad value '0' for rate" },
		{ "rate=abc", "bad value 'abc' for rate" },
		{ "guests=9", "bad value '9' for guests" },
		{ "speed=3", "unknown option 'speed'" },
		{ "delay=nosuch:5", "no function 'nosuch'" },
		{ "delay=netif_rx", "expected FUNCTION:NANOSECONDS" },
		{ "rate", "is not key=value" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		cr_assert_eq(xflow_collector_synthetic.open(bad[i].opt, &c, err, sizeof(err)), -EINVAL,
			     "%s", bad[i].opt);
		cr_assert(strstr(err, bad[i].msg), "%s: got '%s'", bad[i].opt, err);
	}
	cr_assert_eq(xflow_collector_find("synthetic"), &xflow_collector_synthetic);
	cr_assert_null(xflow_collector_find("nope"));
}
