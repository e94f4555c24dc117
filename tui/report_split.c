/*
 * Where the hops' time went (issue 24) in batch text and JSON: the
 * scheduler join's status line, each hop's split over all its samples and
 * over its slowest 1 %, with the culprit of its waits, and the split of
 * each gap of the slowest flows' paths.
 */
#include <inttypes.h>

#include "tui/report.h"

static void ju(struct xft_json *j, const char *key, uint64_t v)
{
	xft_json_key(j, key);
	xft_json_u64(j, v);
}

static void json_split(struct xft_json *j, const struct xft_split *s)
{
	xft_json_object_begin(j);
	for (unsigned i = 0; i < XFT_NSTATES; i++)
		ju(j, xft_state_label((enum xft_state)i), s->ns[i]);
	xft_json_object_end(j);
}

static void json_culprit(struct xft_json *j, const struct xft_culprit *c)
{
	if (!c->wait_ns) {
		xft_json_null(j);
		return;
	}
	xft_json_object_begin(j);
	ju(j, "domain_id", c->domain);
	ju(j, "vcpu", c->vcpu);
	ju(j, "pcpu", c->pcpu);
	ju(j, "wait_ns", c->wait_ns);
	xft_json_object_end(j);
}

void xft_report_sched_json(struct xft_app *app, struct xft_json *j)
{
	const struct xft_sched_status *s = xft_agg_sched_status(app->agg);
	xft_json_key(j, "sched");
	xft_json_object_begin(j);
	xft_json_key(j, "joined");
	xft_json_bool(j, s->joined);
	xft_json_key(j, "clock_error_ns");
	if (s->clock_error_ns == UINT64_MAX)
		xft_json_null(j);
	else
		xft_json_u64(j, s->clock_error_ns);
	ju(j, "trace_records", s->trace_records);
	ju(j, "trace_lost", s->trace_lost);
	ju(j, "hops_split", s->hops_split);
	ju(j, "hops_pending", s->hops_pending);
	ju(j, "split_early", xft_agg_stats(app->agg)->split_early);
	xft_json_object_end(j);
}

void xft_report_hop_split_json(struct xft_app *app, struct xft_json *j, uint32_t hop)
{
	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	if (!xft_agg_sched_status(app->agg)->joined || hop >= nh)
		return;
	const struct xft_hop_split *s = &hops[hop].split;
	xft_json_key(j, "split");
	xft_json_object_begin(j);
	xft_json_key(j, "all");
	json_split(j, &s->all);
	ju(j, "tail_count", s->tail_count);
	xft_json_key(j, "tail");
	json_split(j, &s->tail);
	xft_json_key(j, "culprit_all");
	json_culprit(j, &s->culprit_all);
	xft_json_key(j, "culprit_tail");
	json_culprit(j, &s->culprit_tail);
	xft_json_object_end(j);
}

void xft_report_gap_split_json(struct xft_json *j, const struct xft_flow_summary *s, uint32_t point)
{
	if (!s->gaps || point == 0 || point >= s->npoints)
		return;
	xft_json_key(j, "split");
	json_split(j, &s->gaps[point - 1].split);
	xft_json_key(j, "culprit");
	json_culprit(j, &s->gaps[point - 1].culprit);
}

/* --- text ------------------------------------------------------------------ */

void xft_report_sched_text(struct xft_app *app, FILE *f)
{
	const struct xft_sched_status *s = xft_agg_sched_status(app->agg);
	if (!s->joined) {
		fprintf(f, "sched not joined\n");
		return;
	}
	if (s->clock_error_ns == UINT64_MAX)
		fprintf(f, "sched joined, clock not measured yet");
	else
		fprintf(f, "sched joined, clock \u00b1%.1f \u00b5s", (double)s->clock_error_ns / 1e3);
	fprintf(f, "; trace records %" PRIu64 ", lost %" PRIu64 "; hops split %" PRIu64 ", pending %" PRIu64
		   ", split early %" PRIu64 "\n",
		s->trace_records, s->trace_lost, s->hops_split, s->hops_pending, xft_agg_stats(app->agg)->split_early);
}

static void text_split(FILE *f, const char *what, uint64_t n, const struct xft_split *s, const struct xft_culprit *c)
{
	fprintf(f, "  %-4s n=%" PRIu64, what, n);
	for (unsigned i = 0; i < XFT_NSTATES; i++)
		fprintf(f, " %s=%" PRIu64, xft_state_name((enum xft_state)i), s->ns[i]);
	if (c->wait_ns)
		fprintf(f, " culprit=d%uv%u@pcpu%u:%" PRIu64, c->domain, c->vcpu, c->pcpu, c->wait_ns);
	fprintf(f, "\n");
}

/* Each shown hop, in the frame's order, at most @max (0: all): its name,
 * then one line for all its samples and one for its tail, each state as
 * name=ns (parseable: the states of a line add up to the hop's total). */
void xft_report_split_text(struct xft_app *app, FILE *f, size_t max)
{
	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	if (!xft_agg_sched_status(app->agg)->joined)
		return;
	for (size_t r = 0; r < app->frame.nhop_shown && (!max || r < max); r++) {
		const struct xft_hop_row *h = &app->frame.hops[app->frame.hop_order[r]];
		if (h->hop >= nh)
			continue;
		const struct xft_hop_split *s = &hops[h->hop].split;
		fprintf(f, "%s:%s -> %s:%s\n", h->from_dom, h->from->function, h->to_dom, h->to->function);
		text_split(f, "all", hops[h->hop].count, &s->all, &s->culprit_all);
		text_split(f, "tail", s->tail_count, &s->tail, &s->culprit_tail);
	}
}
