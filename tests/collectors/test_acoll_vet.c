/*
 * A guest agent that lies (issue 30 item 7), played by a simulated agent
 * (hostile_agent.h) against the real agent collector and the real model
 * (tui/aggregate.h), beside an honest agent of another domain.  For each
 * lie: the liar's row counts it by kind, and the honest domain's figures
 * (its row, its hops and whole flows in the model, and the model's late
 * records) are those of a run without the liar.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collectors/acoll_priv.h"
#include "collectors/agent_collector.h"
#include "tests/collectors/hostile_agent.h"
#include "tests/guestrt/gt.h"
#include "tui/aggregate.h"

#define HONEST 1
#define LIAR 2
#define NFLOWS 10
#define MAX_SCRIPT 8192

/* What a run leaves of a domain. */
struct figures {
	struct xflow_domain_info di;
	uint64_t hop_samples;  /* in hops from or to it */
	uint64_t hops;
	uint64_t whole_flows;  /* of its origin among the slowest */
	uint64_t late;         /* the model's, every domain's */
	uint64_t aspect_hits, aspect_drops; /* every aspect's, every domain's part */
	char source[256];      /* di.source: the collector's own dies with it */
};

/* The honest agent's script: NFLOWS flows, each a START at site 0 and a
 * QUIT at site 1 2 ms later, published the other way round, as two
 * threads' lanes may: the model's reorder window puts them in order, and
 * the collector must not take the QUIT that comes first for a lie. */
static size_t honest_script(struct ha_rec *s)
{
	size_t n = 0;
	for (uint64_t f = 0; f < NFLOWS; f++) {
		s[n++] = (struct ha_rec){ .dt_ns = 2000000, .flow_id = 2 * f + 1, .site = 1, .domain = HONEST,
					  .flags = XFLOW_REC_QUIT };
		s[n++] = (struct ha_rec){ .flow_id = 2 * f + 1, .site = 0, .domain = HONEST, .flags = XFLOW_REC_START };
	}
	return n;
}

static void feed(void *ctx, const struct xflow_record *r, uint64_t t)
{
	xft_agg_feed(ctx, r, t);
}

/* The figures of domain @dom's row (one only: a second would be a lie
 * let through). */
static void take(struct figures *f, const struct xflow_collector_ops *ops, struct xflow_collector *c,
		 struct xft_agg *a, uint16_t dom)
{
	memset(f, 0, sizeof(*f));
	unsigned rows = 0;
	struct xflow_domain_info di;
	for (uint32_t i = 0; ops->domain_info(c, i, &di) == 0; i++)
		if (di.id == dom && rows++ == 0)
			f->di = di;
	snprintf(f->source, sizeof(f->source), "%s", f->di.source ? f->di.source : "");
	f->di.source = f->source;
	f->di.name = NULL; /* not kept: nothing reads it after the close */
	cr_assert_eq(rows, 1, "%u rows of domain %u", rows, (unsigned)dom);
	size_t nh;
	const struct xft_hop *h = xft_agg_hops(a, &nh);
	for (size_t i = 0; i < nh; i++)
		if (h[i].key.from_domain == dom || h[i].key.to_domain == dom) {
			f->hops++;
			f->hop_samples += h[i].count;
		}
	const struct xft_flow_summary *top;
	size_t nt = xft_agg_slowest(a, &top, 64);
	for (size_t i = 0; i < nt; i++)
		f->whole_flows += top[i].origin_domain == dom && !top[i].expired;
	f->late = xft_agg_stats(a)->late;
	struct xflow_aspect_info ai;
	for (uint32_t i = 0; ops->aspect_info(c, i, &ai) == 0; i++) {
		f->aspect_hits += ai.hits;
		f->aspect_drops += ai.drops;
	}
}

static char last_error[1024]; /* the collector's, at the end of a run */
/* What the agents' STATS replies say (hostile_agent.h): the honest one's
 * counts are steady; the liar's are a test's. */
static const struct ha_stats honest_stats = { .n = 1, .hits = { 1000 } };
static struct ha_stats liar_stats;

/*
 * One run: the honest agent, and the liar (greeting as domain @liar_dom)
 * with @liar (n records) unless NULL, read by the agent collector with
 * @extra options into a model.  Fills @honest and @lying (the row the
 * liar's agent has, whatever its id).
 */
static void run_as(uint16_t liar_dom, const struct ha_rec *liar, size_t n, const char *extra,
		   struct figures *honest, struct figures *lying)
{
	static unsigned nrun;
	char flows[160], dir[200], s1[260], s2[260], opts[600], err[1024];
	const char *bin = gt_pkt_flow_setup(flows, sizeof(flows));
	snprintf(dir, sizeof(dir), "%s/run%u", gt_dir, nrun++);
	cr_assert_eq(mkdir(dir, 0700), 0);
	snprintf(s1, sizeof(s1), "%s/1.sock", dir);
	snprintf(s2, sizeof(s2), "%s/2.sock", dir);
	static struct ha_rec hs[2 * NFLOWS];
	size_t hn = honest_script(hs);
	/* The honest agent writes once the liar has begun: a lie that moved
	 * the model's window would move what comes after it. */
	pid_t a = ha_agent_stats(s1, bin, HONEST, hs, hn, 300, &honest_stats);
	pid_t b = liar ? ha_agent_stats(s2, bin, liar_dom, liar, n, 0, &liar_stats) : -1;
	snprintf(opts, sizeof(opts), "dir=%s,flows=%s,timeout=20000%s", dir, flows, extra ? extra : "");
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	struct xflow_collector *c;
	int rc = ops->open(opts, &c, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	struct xft_agg_limits lim;
	xft_agg_limits_default(&lim);
	lim.top_k = 64;
	struct xft_agg *m;
	cr_assert_eq(xft_agg_new(&lim, NULL, NULL, &m), 0);
	/* Until both have been quiet for a while (the liar's flood is
	 * paced by its ring), at most 20 s; longer than a flow-id lie takes
	 * to be counted (a second unforgiven, acoll_vet_settle()). */
	uint64_t start = xflow_monotonic_ns(), quiet_since = start;
	while (xflow_monotonic_ns() - start < 20000000000ull) {
		uint64_t now = xflow_monotonic_ns();
		long got = ops->read(c, now, feed, m, 100);
		xft_agg_tick(m, now);
		if (got > 0)
			quiet_since = now;
		else if (now - quiet_since > 1200000000u)
			break;
		else
			usleep(5000);
	}
	xft_agg_drain(m);
	take(honest, ops, c, m, HONEST);
	if (lying)
		take(lying, ops, c, m, liar_dom == HONEST ? 0xffff : liar_dom);
	snprintf(last_error, sizeof(last_error), "%s", ops->last_error(c) ? ops->last_error(c) : "");
	xft_agg_free(m);
	ops->close(c);
	int st;
	waitpid(a, &st, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "honest agent status %d", st);
	if (b > 0) {
		waitpid(b, &st, 0);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lying agent status %d", st);
	}
}

static void run(const struct ha_rec *liar, size_t n, const char *extra, struct figures *honest,
		struct figures *lying)
{
	run_as(LIAR, liar, n, extra, honest, lying);
}

/* The honest domain's figures with the liar are those without. */
static void expect_unmoved(const struct figures *with, const struct figures *without)
{
	cr_expect_eq(with->di.records, without->di.records, "honest records %lu, without the liar %lu",
		     (unsigned long)with->di.records, (unsigned long)without->di.records);
	cr_expect_eq(with->di.bad, without->di.bad);
	cr_expect_eq(with->di.drops, without->di.drops);
	cr_expect_eq(xflow_domain_lies_total(&with->di.lies), 0, "the honest domain was charged with lies");
	cr_expect_eq(with->hops, without->hops, "honest hops %lu, without the liar %lu", (unsigned long)with->hops,
		     (unsigned long)without->hops);
	cr_expect_eq(with->hop_samples, without->hop_samples, "honest hop samples %lu, without the liar %lu",
		     (unsigned long)with->hop_samples, (unsigned long)without->hop_samples);
	cr_expect_eq(with->whole_flows, without->whole_flows, "honest whole flows %lu, without the liar %lu",
		     (unsigned long)with->whole_flows, (unsigned long)without->whole_flows);
	cr_expect_eq(with->late, without->late, "late records %lu, without the liar %lu", (unsigned long)with->late,
		     (unsigned long)without->late);
}

static void baseline(struct figures *without)
{
	run(NULL, 0, NULL, without, NULL);
	cr_assert_eq(without->di.records, 2 * NFLOWS, "the honest run itself: %lu records",
		     (unsigned long)without->di.records);
	cr_assert_eq(without->whole_flows, NFLOWS);
	cr_assert_eq(without->hop_samples, NFLOWS);
}

static struct ha_rec script[MAX_SCRIPT];

/* Records in the honest domain's name, of its own flow ids: given on,
 * they would be hops and flows of the honest domain. */
Test(lying_agent, records_naming_another_domain, .timeout = 120)
{
	struct figures without, with, liar;
	baseline(&without);
	size_t n = 0;
	for (uint64_t f = 0; f < NFLOWS; f++) {
		script[n++] = (struct ha_rec){ .flow_id = 2 * f + 1, .site = 1, .domain = HONEST, .flags = XFLOW_REC_START };
		script[n++] = (struct ha_rec){ .flow_id = 2 * f + 1, .site = 0, .domain = HONEST, .flags = XFLOW_REC_QUIT };
	}
	run(script, n, NULL, &with, &liar);
	cr_expect_eq(liar.di.lies.other_domain, n, "other_domain %lu", (unsigned long)liar.di.lies.other_domain);
	cr_expect_eq(liar.di.records, 0);
	cr_expect_eq(liar.di.bad, 0, "a lie is not a malformed record");
	expect_unmoved(&with, &without);
}

/* A greeting in the honest domain's name: its records would be that
 * domain's.  Refused, in a row of its own, and said. */
Test(lying_agent, a_hello_naming_another_domain, .timeout = 120)
{
	struct figures without, with, liar;
	baseline(&without);
	size_t n = 0;
	for (uint64_t f = 0; f < NFLOWS; f++)
		script[n++] = (struct ha_rec){ .flow_id = 2 * f + 1, .site = 1, .domain = HONEST,
					       .flags = XFLOW_REC_START | XFLOW_REC_QUIT };
	run_as(HONEST, script, n, NULL, &with, &liar);
	expect_unmoved(&with, &without);
	cr_expect_eq(liar.di.id, 0xffff, "the refused agent's row is not domain %u's", (unsigned)liar.di.id);
	cr_expect_eq(liar.di.lies.other_domain, 1);
	cr_expect_eq(liar.di.records, 0);
	cr_expect(liar.di.gone);
	cr_expect(strstr(liar.di.source, "refused, it greeted as domain 1"), "%s", liar.di.source);
	cr_expect(strstr(last_error, "greeted as domain 1, which the agent "), "%s", last_error);
}

/* One record an hour ahead: given on, the model's window would follow it
 * and every later honest record would be late. */
Test(lying_agent, a_time_far_in_the_future, .timeout = 120)
{
	struct figures without, with, liar;
	baseline(&without);
	script[0] = (struct ha_rec){ .dt_ns = 3600000000000ll, .flow_id = 1, .site = 0, .domain = LIAR,
				     .flags = XFLOW_REC_START };
	run(script, 1, NULL, &with, &liar);
	cr_expect_eq(liar.di.lies.time_future, 1);
	cr_expect_eq(liar.di.records, 0);
	expect_unmoved(&with, &without);
}

/* Records stamped an hour before the monitor connected. */
Test(lying_agent, times_far_in_the_past, .timeout = 120)
{
	struct figures without, with, liar;
	baseline(&without);
	int64_t back = -3600000000000ll;
	if ((uint64_t)-back >= xflow_monotonic_ns())
		back = -(int64_t)(xflow_monotonic_ns() / 2);
	size_t n = 0;
	/* Honest ones first, so the lies follow time the model has passed. */
	for (uint64_t f = 0; f < 5; f++)
		script[n++] = (struct ha_rec){ .flow_id = 101 + 2 * f, .site = 0, .domain = LIAR,
					       .flags = XFLOW_REC_START | XFLOW_REC_QUIT };
	for (uint64_t f = 0; f < 5; f++)
		script[n++] = (struct ha_rec){ .dt_ns = back, .flow_id = 1 + 2 * f, .site = 0, .domain = LIAR,
					       .flags = XFLOW_REC_START };
	run(script, n, NULL, &with, &liar);
	cr_expect_eq(liar.di.lies.time_past, 5, "time_past %lu", (unsigned long)liar.di.lies.time_past);
	cr_expect_eq(liar.di.records, 5);
	expect_unmoved(&with, &without);
}

/* Transits of ids it never started, and records after a flow's QUIT:
 * counted, given on as its own partial flows.  What is only published out
 * of order is not a lie. */
Test(lying_agent, flow_ids_never_started_and_after_the_end, .timeout = 120)
{
	struct figures without, with, liar;
	baseline(&without);
	size_t n = 0;
	for (uint64_t f = 0; f < 7; f++)
		script[n++] = (struct ha_rec){ .flow_id = 1001 + 2 * f, .site = 1, .domain = LIAR,
					       .flags = XFLOW_REC_TRANSIT };
	/* Its second record is of a flow it has now: judged once. */
	script[n++] = (struct ha_rec){ .flow_id = 1001, .site = 0, .domain = LIAR };
	/* A whole flow, then three records of it stamped after its end. */
	script[n++] = (struct ha_rec){ .flow_id = 1, .site = 0, .domain = LIAR, .flags = XFLOW_REC_START };
	script[n++] = (struct ha_rec){ .flow_id = 1, .site = 1, .domain = LIAR, .flags = XFLOW_REC_QUIT };
	script[n++] = (struct ha_rec){ .dt_ns = 1000000, .flow_id = 1, .site = 0, .domain = LIAR,
				       .flags = XFLOW_REC_QUIT };
	script[n++] = (struct ha_rec){ .dt_ns = 1000000, .flow_id = 1, .site = 1, .domain = LIAR };
	script[n++] = (struct ha_rec){ .dt_ns = 1000000, .flow_id = 1, .site = 0, .domain = LIAR,
				       .flags = XFLOW_REC_QUIT };
	/* An id used again by a START is a new flow, not a lie. */
	script[n++] = (struct ha_rec){ .dt_ns = 2000000, .flow_id = 1, .site = 0, .domain = LIAR,
				       .flags = XFLOW_REC_START };
	script[n++] = (struct ha_rec){ .dt_ns = 2000000, .flow_id = 1, .site = 1, .domain = LIAR };
	/* Published out of order, stamped in order: a transit before its
	 * START, a QUIT before its START, a transit after its QUIT. */
	script[n++] = (struct ha_rec){ .dt_ns = 1000000, .flow_id = 2001, .site = 1, .domain = LIAR,
				       .flags = XFLOW_REC_TRANSIT };
	script[n++] = (struct ha_rec){ .flow_id = 2001, .site = 0, .domain = LIAR, .flags = XFLOW_REC_START };
	script[n++] = (struct ha_rec){ .dt_ns = 1000000, .flow_id = 3001, .site = 1, .domain = LIAR,
				       .flags = XFLOW_REC_QUIT };
	script[n++] = (struct ha_rec){ .flow_id = 3001, .site = 0, .domain = LIAR, .flags = XFLOW_REC_START };
	script[n++] = (struct ha_rec){ .flow_id = 4001, .site = 0, .domain = LIAR, .flags = XFLOW_REC_START };
	script[n++] = (struct ha_rec){ .dt_ns = 5000000, .flow_id = 4001, .site = 1, .domain = LIAR,
				       .flags = XFLOW_REC_QUIT };
	script[n++] = (struct ha_rec){ .flow_id = 4001, .site = 1, .domain = LIAR, .flags = XFLOW_REC_TRANSIT };
	run(script, n, NULL, &with, &liar);
	cr_expect_eq(liar.di.lies.never_started, 7, "never_started %lu", (unsigned long)liar.di.lies.never_started);
	cr_expect_eq(liar.di.lies.after_end, 3, "after_end %lu", (unsigned long)liar.di.lies.after_end);
	cr_expect_eq(liar.di.records, n, "judged, not refused");
	expect_unmoved(&with, &without);
}

/* Far more records than rate= allows: the rest refused as a flood. */
Test(lying_agent, a_flood, .timeout = 120)
{
	struct figures without, with, liar;
	size_t n = MAX_SCRIPT;
	for (size_t i = 0; i < n; i++)
		script[i] = (struct ha_rec){ .flow_id = 2 * i + 1, .site = i & 1, .domain = LIAR,
					     .flags = XFLOW_REC_START };
	/* The honest run under the same limit: its 20 records are far
	 * below it. */
	run(NULL, 0, ",rate=1000", &without, NULL);
	run(script, n, ",rate=1000", &with, &liar);
	cr_expect_gt(liar.di.lies.flood, 0);
	cr_expect_eq(liar.di.lies.flood + liar.di.records, n, "flood %lu + given %lu != %zu",
		     (unsigned long)liar.di.lies.flood, (unsigned long)liar.di.records, n);
	/* The bucket holds a quarter second (at least 1024), refilled at
	 * the rate while the run lasts. */
	cr_expect_lt(liar.di.records, 1024 + 1000 * 25, "given %lu", (unsigned long)liar.di.records);
	expect_unmoved(&with, &without);
}

/* A local agent has no rate limit unless rate= sets one (a heavy flow
 * writes millions of records a second, issue 27); an agent over Xen has
 * ACOLL_RATE_DEFAULT; rate= sets both, 0 lifting both. */
Test(lying_agent, the_rate_limit_of_each_transport)
{
	struct acoll c = { .rate = ACOLL_RATE_UNSET };
	cr_expect_eq(acoll_rate_for(&c, false), 0);
	cr_expect_eq(acoll_rate_for(&c, true), ACOLL_RATE_DEFAULT);
	cr_assert_eq(acoll_parse_options(&c, "xen,flows=x.xml,rate=1000"), 0);
	cr_expect_eq(acoll_rate_for(&c, false), 1000);
	cr_expect_eq(acoll_rate_for(&c, true), 1000);
	free(c.opts);
	cr_assert_eq(acoll_parse_options(&c, "xen,flows=x.xml,rate=0"), 0);
	cr_expect_eq(acoll_rate_for(&c, false), 0);
	cr_expect_eq(acoll_rate_for(&c, true), 0);
	free(c.opts);
}

/* The same, of one flow's plain records: each of those but its START is
 * judged by the collector's one-test path, which must spend a token too. */
Test(lying_agent, a_flood_of_one_flows_records, .timeout = 120)
{
	struct figures without, with, liar;
	size_t n = MAX_SCRIPT;
	script[0] = (struct ha_rec){ .flow_id = 1, .site = 0, .domain = LIAR, .flags = XFLOW_REC_START };
	for (size_t i = 1; i < n; i++)
		script[i] = (struct ha_rec){ .flow_id = 1, .site = i & 1, .domain = LIAR };
	run(NULL, 0, ",rate=1000", &without, NULL);
	run(script, n, ",rate=1000", &with, &liar);
	cr_expect_gt(liar.di.lies.flood, 0);
	cr_expect_eq(liar.di.lies.flood + liar.di.records, n, "flood %lu + given %lu != %zu",
		     (unsigned long)liar.di.lies.flood, (unsigned long)liar.di.records, n);
	cr_expect_lt(liar.di.records, 1024 + 1000 * 25, "given %lu", (unsigned long)liar.di.records);
	expect_unmoved(&with, &without);
}

/* Times out of bounds on records of a live flow and of no flow, which
 * take the one-test path when their times are right. */
Test(lying_agent, times_out_of_bounds_within_a_flow, .timeout = 120)
{
	struct figures without, with, liar;
	baseline(&without);
	int64_t back = -3600000000000ll;
	if ((uint64_t)-back >= xflow_monotonic_ns())
		back = -(int64_t)(xflow_monotonic_ns() / 2);
	size_t n = 0;
	script[n++] = (struct ha_rec){ .flow_id = 1, .site = 0, .domain = LIAR, .flags = XFLOW_REC_START };
	script[n++] = (struct ha_rec){ .flow_id = 1, .site = 1, .domain = LIAR };
	script[n++] = (struct ha_rec){ .dt_ns = 3600000000000ll, .flow_id = 1, .site = 0, .domain = LIAR };
	script[n++] = (struct ha_rec){ .dt_ns = back, .flow_id = 1, .site = 1, .domain = LIAR };
	script[n++] = (struct ha_rec){ .dt_ns = 3600000000000ll, .site = 0, .domain = LIAR };
	script[n++] = (struct ha_rec){ .flow_id = 1, .site = 1, .domain = LIAR, .flags = XFLOW_REC_QUIT };
	run(script, n, NULL, &with, &liar);
	cr_expect_eq(liar.di.lies.time_future, 2, "time_future %lu", (unsigned long)liar.di.lies.time_future);
	cr_expect_eq(liar.di.lies.time_past, 1, "time_past %lu", (unsigned long)liar.di.lies.time_past);
	cr_expect_eq(liar.di.records, 3, "given %lu", (unsigned long)liar.di.records);
	expect_unmoved(&with, &without);
}

Test(lying_agent, rate_option_is_checked, .timeout = 30)
{
	char err[512];
	struct xflow_collector *c;
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	cr_expect_eq(ops->open("rate=-1,socket=/nonexistent,flows=x.xml", &c, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "rate=-1: expected records a second"), "%s", err);
	cr_expect_eq(ops->open("rate=12x,socket=/nonexistent,flows=x.xml", &c, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "rate=12x"), "%s", err);
}

/* A liar's STATS replies (issue 30 item 7): a few honest records, and
 * counts of @st.  Returns the aspects' hits and drops with it and
 * without it, and its row. */
static void stats_run(const struct ha_stats *st, struct figures *without, struct figures *with, struct figures *liar)
{
	baseline(without);
	cr_assert_gt(without->aspect_hits, 0, "the honest agent's counts were not taken");
	size_t n = 0;
	for (uint64_t f = 0; f < 4; f++) {
		script[n++] = (struct ha_rec){ .flow_id = 2 * f + 1, .site = 0, .domain = LIAR, .flags = XFLOW_REC_START };
		script[n++] = (struct ha_rec){ .flow_id = 2 * f + 1, .site = 1, .domain = LIAR, .flags = XFLOW_REC_QUIT };
	}
	liar_stats = *st;
	run(script, n, NULL, with, liar);
	memset(&liar_stats, 0, sizeof(liar_stats));
	expect_unmoved(with, without);
}

/* Counts in the quintillions at once: summed into an aspect, they would
 * bury every other domain's part. */
Test(lying_agent, stats_counts_no_guest_can_make, .timeout = 120)
{
	struct figures without, with, liar;
	stats_run(&(struct ha_stats){ .n = 1, .hits = { UINT64_C(1) << 62 } }, &without, &with, &liar);
	cr_expect_eq(with.aspect_hits, without.aspect_hits, "aspect hits %lu, the honest domain's %lu",
		     (unsigned long)with.aspect_hits, (unsigned long)without.aspect_hits);
	cr_expect_eq(with.aspect_drops, without.aspect_drops);
	cr_expect_geq(liar.di.lies.stats, 1, "stats lies %lu", (unsigned long)liar.di.lies.stats);
}

/* Counts that go back after a plausible first reply: its part stays what
 * it first said, and the honest domain's part is whole. */
Test(lying_agent, stats_counts_that_go_back, .timeout = 120)
{
	struct figures without, with, liar;
	stats_run(&(struct ha_stats){ .n = 2, .hits = { 1000, 1 } }, &without, &with, &liar);
	cr_expect_eq(with.aspect_hits, 2 * without.aspect_hits, "aspect hits %lu, the honest domain's %lu",
		     (unsigned long)with.aspect_hits, (unsigned long)without.aspect_hits);
	cr_expect_eq(with.aspect_drops, 2 * without.aspect_drops);
	cr_expect_geq(liar.di.lies.stats, 1, "stats lies %lu", (unsigned long)liar.di.lies.stats);
}
