/*
 * Text, JSON and trace-event reports of a frame.  See tui/report.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "tui/lies_text.h"
#include "tui/report.h"
#include "tui/split_text.h"

/* --- text ----------------------------------------------------------------- */

/* With @fit, @width is the least the table takes: a file or a pipe has
 * no edge, so the names' columns grow to their longest rather than cut
 * one; without, the columns share @width. */
static void print_table(FILE *f, const struct xft_table *t, int width, const void *rows,
			size_t size, const uint32_t *order, size_t n, size_t max, int fit)
{
	int w[XFT_MAX_COLS];
	if (max == 0 || max > n)
		max = n;
	if (fit) {
		int need = xft_table_fit(t, INT_MAX / 2, rows, size, order, max, w);
		xft_table_fit(t, need > width ? need : width, rows, size, order, max, w);
	} else {
		xft_table_widths(t, width, w);
	}
	for (size_t i = 0, first = 1; i < t->ncols; i++) {
		const char *h = t->cols[i].header;
		if (!w[i])
			continue;
		if (t->cols[i].right)
			fprintf(f, "%s%*s", first ? "" : " ", w[i], h);
		else
			fprintf(f, "%s%-*s", first ? "" : " ", i + 1 < t->ncols ? w[i] : 0, h);
		first = 0;
	}
	fputc('\n', f);
	for (size_t r = 0; r < max; r++) {
		const void *row = (const char *)rows + order[r] * size;
		for (size_t i = 0, first = 1; i < t->ncols; i++) {
			char buf[256];
			if (!w[i])
				continue;
			buf[0] = '\0';
			t->cols[i].print(row, buf, sizeof(buf), w[i]);
			const char *sep = first ? "" : " ";
			first = 0;
			if (t->cols[i].right)
				fprintf(f, "%s%*.*s", sep, w[i], w[i], buf);
			else if (i + 1 < t->ncols)
				fprintf(f, "%s%-*.*s", sep, w[i], w[i], buf);
			else
				fprintf(f, "%s%.*s", sep, w[i], buf);
		}
		fputc('\n', f);
	}
}

void xft_report_hops_text(struct xft_app *app, FILE *f, int width, size_t max)
{
	print_table(f, &xft_hop_table, width, app->frame.hops, sizeof(*app->frame.hops),
		    app->frame.hop_order, app->frame.nhop_shown, max, 1);
}

void xft_report_flows_text(struct xft_app *app, FILE *f, int width, size_t max)
{
	print_table(f, &xft_flow_table, width, app->frame.flows, sizeof(*app->frame.flows),
		    app->frame.flow_order, app->frame.nflow_shown, max, 1);
}

void xft_report_path_text(struct xft_app *app, FILE *f, const struct xft_flow_row *r)
{
	char dur[16];
	xft_format_ns(r->duration_ns, dur, sizeof(dur));
	fprintf(f, "flow %" PRIu64 " from %s: %s, %" PRIu32 " points%s, %s\n", r->s.id, r->origin_dom,
		dur, r->s.npoints + r->s.points_lost, r->s.points_lost ? " (not all kept)" : "",
		r->s.expired ? "expired" : "quit");
	fprintf(f, "  %11s  %-8s %-34s %5s  %-24s %9s\n", "ELAPSED(us)", "DOMAIN", "FILE", "LINE",
		"FUNCTION", "GAP");
	uint64_t t0 = r->s.npoints ? r->s.path[0].t_ns : 0;
	for (uint32_t p = 0; p < r->s.npoints; p++) {
		const struct xft_point *pt = &r->s.path[p];
		const struct xft_site *s = xft_sites_get(&app->sites, pt->domain, pt->site);
		char gap[16] = "", line[16] = "-";
		if (p)
			xft_format_ns(pt->t_ns - r->s.path[p - 1].t_ns, gap, sizeof(gap));
		if (s->line) /* a kernel's site has no line: "-" */
			snprintf(line, sizeof(line), "%" PRIu32, s->line);
		fprintf(f, "  %11.1f  %-8s %-34s %5s  %-24s %9s\n", (double)(pt->t_ns - t0) / 1e3,
			xft_sites_domain(&app->sites, pt->domain), s->file, line, s->function, gap);
	}
}

static void utc_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void xft_report_summary_text(struct xft_app *app, FILE *f)
{
	const struct xft_agg_stats *st = &app->frame.st;
	fprintf(f, "uptime %.1fs, records %" PRIu64 " (%.0f/s), drops %" PRIu64 ", bad %" PRIu64 ", late %" PRIu64,
		(double)(app->now_ns - app->start_ns) / 1e9, st->records, app->rate, app->drops, app->bad,
		st->late);
	/* A full window let records go before their time: harm only when a
	 * record older than one let go came after it (late). */
	if (st->late && st->window_full)
		fprintf(f, ", reorder-window overflows %" PRIu64, st->window_full);
	/* Losses the producers' numbers showed, whoever lost them (they are
	 * in the drops or the bad records too): only when there are any. */
	if (st->records_lost)
		fprintf(f, ", seen lost %" PRIu64 " in %" PRIu64 " gaps", st->records_lost, st->loss_gaps);
	fputc('\n', f);
	fprintf(f, "flows: started %" PRIu64 ", finished %" PRIu64 ", partial %" PRIu64 ", expired %" PRIu64
		   ", evicted %" PRIu64 ", live %" PRIu64 "; hops %zu (dropped samples %" PRIu64
		   "); memory: %" PRIu64 " bytes resident, of which the model is bounded by the %" PRIu64
		   " it reserved at start\n",
		st->flows_started, st->flows_finished, st->flows_partial, st->flows_expired, st->flows_evicted,
		st->flows_live, app->frame.nhops, st->hops_dropped, app->resident_bytes, st->memory_bytes);
	/* Only when there are any: most hosts have no keyed handoff. */
	if (st->handoffs_sent || st->join_joined || st->join_unmatched_in)
		fprintf(f, "handoffs: sent %" PRIu64 ", matched %" PRIu64 ", lost %" PRIu64 "; keyed: joined %" PRIu64
			   ", unmatched out %" PRIu64 ", unmatched in %" PRIu64 ", conflicts %" PRIu64 ", refused %" PRIu64
			   ", full %" PRIu64 ", negative hops %" PRIu64 "\n",
			st->handoffs_sent, st->handoffs_matched, st->handoffs_lost, st->join_joined,
			st->join_unmatched_out, st->join_unmatched_in, st->join_conflicts, st->join_refused,
			st->join_full, st->join_negative_hops);
}

static void hist_text(FILE *f, const struct xflow_hist *h)
{
	/* One line per octave, as xenalyze prints its distributions. */
	uint64_t counts[64] = { 0 }, top = 1;
	int lo = 64, hi = -1;
	unsigned it = 0;
	struct xflow_hist_bucket b;
	while (xflow_hist_next(h, &it, &b)) {
		int k = b.low ? 63 - __builtin_clzll(b.low) : 0;
		counts[k] += b.count;
		if (k < lo)
			lo = k;
		if (k > hi)
			hi = k;
	}
	for (int k = lo; k <= hi; k++)
		if (counts[k] > top)
			top = counts[k];
	for (int k = lo; k <= hi; k++) {
		char a[16], c[16];
		xft_format_ns(k ? UINT64_C(1) << k : 0, a, sizeof(a));
		xft_format_ns(UINT64_C(1) << (k + 1), c, sizeof(c));
		int n = (int)((double)counts[k] / (double)top * 40 + 0.5);
		fprintf(f, "    [%8s, %8s) %10" PRIu64 " ", a, c, counts[k]);
		for (int i = 0; i < n; i++)
			fputc('#', f);
		fputc('\n', f);
	}
}

static void hv_table_text(FILE *f, const struct xft_table *t, int width, const void *rows, size_t size,
			  const uint32_t *order, size_t n)
{
	print_table(f, t, width, rows, size, order, n, 0, 0);
}

void xft_report_hv_text(struct xft_app *app, FILE *f, int width, int tables)
{
	const struct xflow_hv_summary *hv = app->hv;
	if (!hv)
		return;
	char tot[16], state[600], skipped[160];
	xft_format_ns(hv->total_ns, tot, sizeof(tot));
	xft_hv_state_text(hv, state, sizeof(state));
	xft_hv_skipped_text(hv, skipped, sizeof(skipped));
	fprintf(f, "hypervisor via %s: %s of trace at %.2f GHz, %" PRIu64 " records, %s", app->src[app->hv_src].spec,
		tot, (double)hv->cpu_hz / 1e9, hv->records, state);
	if (!hv->complete && hv->size)
		fprintf(f, " (%" PRIu64 " of %" PRIu64 " bytes)", hv->bytes, hv->size);
	fprintf(f, "; lost %" PRIu64 " records at %" PRIu32 " places, %" PRIu64 " unknown, %s\n",
		hv->lost_records, hv->nlost, hv->unknown_total, skipped);
	if (tables) {
		fprintf(f, "\n");
		hv_table_text(f, &xft_hv_vcpu_table, width, hv->vcpus, sizeof(*hv->vcpus), app->hv_vcpu_order,
			      hv->nvcpus);
		fprintf(f, "\n");
		hv_table_text(f, &xft_hv_event_table, width, hv->events, sizeof(*hv->events), app->hv_event_order,
			      hv->nevents);
		fprintf(f, "\n");
	}
	if (hv->text)
		fputs(hv->text, f);
	for (uint32_t i = 0; i < hv->nlost; i++)
		fprintf(f, "lost records: %" PRIu64 " on cpu %" PRIu32 " at %.6fs (offset %" PRIu64 ")\n",
			hv->lost[i].records, hv->lost[i].cpu, (double)hv->lost[i].at_ns / 1e9, hv->lost[i].offset);
	for (uint32_t i = 0; i < hv->nunknown; i++)
		fprintf(f, "unknown event %#010" PRIx32 ": %" PRIu64 "\n", hv->unknown[i].event, hv->unknown[i].count);
}

/* "[bar] #wait 60% =run 30%", or "not split yet". */
static void split_line_text(FILE *f, const char *label, const struct xft_split *s, int width)
{
	char bar[512], pct[256];
	if (!xft_split_total(s)) {
		fprintf(f, "    %-5s not split yet\n", label);
		return;
	}
	xft_split_bar_text(s, width, bar, sizeof(bar));
	xft_split_percent_text(s, -1, pct, sizeof(pct));
	fprintf(f, "    %-5s [%s] %s", label, bar, pct);
}

void xft_report_sched_text(struct xft_app *app, FILE *f)
{
	char line[512];
	xft_sched_batch_text(xft_agg_sched_status(app->agg), line, sizeof(line));
	fprintf(f, "%s\n", line);
}

void xft_report_split_text(struct xft_app *app, FILE *f, int width)
{
	const struct xft_sched_status *st = &app->frame.sched;
	char status[96], counts[512];
	xft_sched_status_text(st, status, sizeof(status));
	if (!st->joined) {
		fprintf(f, "not split: no scheduler trace is joined (%s)\n", status);
		return;
	}
	xft_sched_counts_text(st, counts, sizeof(counts));
	fprintf(f, "%s; %s\n", status, counts);
	for (size_t r = 0; r < app->frame.nhop_shown; r++) {
		const struct xft_hop_row *h = &app->frame.hops[app->frame.hop_order[r]];
		const struct xft_hop_split *sp = &h->split;
		char culprits[512];
		fprintf(f, "  %s:%s -> %s:%s\n", h->from_dom, h->from->function, h->to_dom, h->to->function);
		split_line_text(f, "all", &sp->all, width);
		if (xft_split_total(&sp->all))
			fputc('\n', f);
		if (sp->tail_count) {
			split_line_text(f, "p99+", &sp->tail, width);
			fprintf(f, " (%" PRIu64 " flows)\n", sp->tail_count);
		}
		if (xft_split_biggest(&sp->all) == XFT_ST_UNKNOWN &&
		    xft_split_state_text(&sp->all, NULL, XFT_ST_UNKNOWN, NULL, culprits, sizeof(culprits)))
			fprintf(f, "    %s\n", culprits);
		if (xft_hop_culprits_text(sp, culprits, sizeof(culprits)))
			fprintf(f, "    %s\n", culprits);
	}
}

void xft_report_gaps_text(struct xft_app *app, FILE *f, const struct xft_flow_row *r, int width)
{
	if (!r->s.gaps || r->s.npoints < 2)
		return;
	fprintf(f, "  gaps by state:\n");
	for (uint32_t g = 0; g + 1 < r->s.npoints; g++) {
		const struct xft_point *a = &r->s.path[g], *b = &r->s.path[g + 1];
		char name[160], label[16], gap[16];
		snprintf(name, sizeof(name), "%s -> %s", xft_sites_get(&app->sites, a->domain, a->site)->function,
			 xft_sites_get(&app->sites, b->domain, b->site)->function);
		xft_format_ns(b->t_ns - a->t_ns, gap, sizeof(gap));
		snprintf(label, sizeof(label), "%" PRIu32, g + 1);
		fprintf(f, "  %4s %-48.48s %8s", label, name, gap);
		const struct xft_split *s = &r->s.gaps[g].split;
		if (!xft_split_total(s)) {
			fprintf(f, "  not split\n");
			continue;
		}
		char bar[512], pct[256];
		xft_split_bar_text(s, width, bar, sizeof(bar));
		xft_split_percent_text(s, -1, pct, sizeof(pct));
		fprintf(f, "  [%s] %s\n", bar, pct);
	}
	char why[256];
	int g = xft_flow_cause_text(&r->s, &app->sites, why, sizeof(why));
	if (g >= 0)
		fprintf(f, "  cause: %s (gap %d)\n", why, g + 1);
}

void xft_report_domains_text(struct xft_app *app, FILE *f)
{
	fprintf(f, "%4s %-11s %-5s %7s %10s %7s %7s %7s %s\n", "ID", "NAME", "STATE", "TARGETS", "RECORDS", "REC/S",
		"DROPS", "LIES", "SOURCE");
	for (unsigned d = 0; d < app->ndomains; d++) {
		const struct xft_domain_row *r = &app->domains[d];
		char lies[256];
		xft_lies_text(&r->info.lies, lies, sizeof(lies));
		fprintf(f, "%4u %-11.11s %-5s %7" PRIu32 " %10" PRIu64 " %7.0f %7" PRIu64 " %7" PRIu64 " %s%s%s\n",
			r->info.id, r->info.name ? r->info.name : "?", r->info.gone ? "gone" : "live", r->info.targets,
			r->info.records, r->per_s, r->info.drops, xflow_domain_lies_total(&r->info.lies),
			r->info.source ? r->info.source : app->src[r->src].spec, lies[0] ? "; " : "", lies);
	}
}

int xft_report_text(struct xft_app *app, FILE *f)
{
	char now[32];
	utc_now(now, sizeof(now));
	fprintf(f, "xflowtop snapshot, %s\n", now);
	if (app->note)
		fprintf(f, "%s\n", app->note);
	if (app->nothing_woven)
		fprintf(f, "%s\n", XFT_NOTHING_WOVEN);
	fprintf(f, "\n== Summary\n");
	for (unsigned s = 0; s < app->nsrc; s++)
		fprintf(f, "source %s: %" PRIu64 " records, %" PRIu64 " drops, %" PRIu64 " bad%s%s\n",
			app->src[s].spec, app->src[s].st.records, app->src[s].st.drops, app->src[s].st.bad,
			app->src[s].ended ? ", ended: " : "", app->src[s].ended ? app->src[s].error : "");
	for (unsigned d = 0; d < app->ndomains; d++) {
		char lies[256];
		xft_lies_text(&app->domains[d].info.lies, lies, sizeof(lies));
		fprintf(f, "domain %u %s: %s, %" PRIu32 " targets, %" PRIu64 " records (%.0f/s), %" PRIu64
			   " drops%s%s%s\n",
			app->domains[d].info.id, app->domains[d].info.name ? app->domains[d].info.name : "?",
			app->domains[d].info.source ? app->domains[d].info.source : "?",
			app->domains[d].info.targets, app->domains[d].info.records, app->domains[d].per_s,
			app->domains[d].info.drops, lies[0] ? ", " : "", lies, app->domains[d].info.gone ? ", gone" : "");
	}
	xft_report_summary_text(app, f);

	fprintf(f, "\n== Hops, by total time\n");
	xft_report_hops_text(app, f, 110, 0);
	fprintf(f, "\n  %-44s %9s %9s %9s %9s %9s %9s\n", "HOP", "MIN", "P50", "P90", "P99", "P99.9", "MAX");
	for (size_t r = 0; r < app->frame.nhop_shown; r++) {
		const struct xft_hop_row *h = &app->frame.hops[app->frame.hop_order[r]];
		char name[256], q[6][16];
		snprintf(name, sizeof(name), "%s:%s -> %s:%s", h->from_dom, h->from->function, h->to_dom,
			 h->to->function);
		uint64_t v[6] = { h->min, h->p50, h->p90, h->p99, h->p999, h->max };
		for (int i = 0; i < 6; i++)
			xft_format_ns(v[i], q[i], sizeof(q[i]));
		fprintf(f, "  %-44s %9s %9s %9s %9s %9s %9s\n", name, q[0], q[1], q[2], q[3], q[4], q[5]);
	}

	fprintf(f, "\n== Where the hops' time went (=run #wait ~notify +backend -blocked .offline *xen ?unknown)\n");
	xft_report_split_text(app, f, 40);

	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	size_t top = app->frame.nhop_shown < 5 ? app->frame.nhop_shown : 5;
	fprintf(f, "\n== Histograms of the top %zu hops\n", top);
	for (size_t r = 0; r < top; r++) {
		const struct xft_hop_row *h = &app->frame.hops[app->frame.hop_order[r]];
		fprintf(f, "  %s:%s -> %s:%s, %" PRIu64 " samples\n", h->from_dom, h->from->function,
			h->to_dom, h->to->function, h->count);
		if (h->hop < nh)
			hist_text(f, &hops[h->hop].hist);
	}

	fprintf(f, "\n== Slowest flows\n");
	xft_report_flows_text(app, f, 110, 0);
	for (size_t r = 0; r < app->frame.nflow_shown; r++) {
		fprintf(f, "\n#%zu ", r + 1);
		xft_report_path_text(app, f, &app->frame.flows[app->frame.flow_order[r]]);
		xft_report_gaps_text(app, f, &app->frame.flows[app->frame.flow_order[r]], 30);
	}
	if (app->hv) {
		fprintf(f, "\n== Hypervisor\n");
		xft_report_hv_text(app, f, 110, 1);
	}
	return ferror(f) ? -EIO : 0;
}

/* --- JSON ----------------------------------------------------------------- */

static void json_site(struct xft_json *j, struct xft_app *app, uint16_t dom, const struct xft_site *s)
{
	xft_json_object_begin(j);
	xft_json_key(j, "domain_id");
	xft_json_u64(j, dom);
	xft_json_key(j, "domain");
	xft_json_string(j, xft_sites_domain(&app->sites, dom));
	xft_json_key(j, "function");
	xft_json_string(j, s->function);
	xft_json_key(j, "file");
	xft_json_string(j, s->file);
	xft_json_key(j, "line");
	xft_json_u64(j, s->line);
	xft_json_object_end(j);
}

#define JU(name, v)                     \
	do {                            \
		xft_json_key(j, name);  \
		xft_json_u64(j, v);     \
	} while (0)

static void json_hv(struct xft_app *app, struct xft_json *j);

/* {"run": ns, "wait": ns, ..., "unknown": ns}: every state, by its label. */
static void json_split_ns(struct xft_json *j, const struct xft_split *s)
{
	xft_json_object_begin(j);
	for (int i = 0; i < XFT_NSTATES; i++)
		JU(xft_state_label((enum xft_state)i), s->ns[i]);
	xft_json_object_end(j);
}

/* {"no_trace": ns, "lost": ns, ...}: why the '?' is, every reason by its
 * name; they add up to the "unknown" of json_split_ns(). */
static void json_unknown_ns(struct xft_json *j, const struct xft_split *s)
{
	xft_json_object_begin(j);
	for (int r = 0; r < XFT_UNK_NREASONS; r++)
		JU(xft_unknown_reason_name((enum xft_unknown_reason)r), s->unknown_ns[r]);
	xft_json_object_end(j);
}

/* Who held the pCPU waited for, or null when nobody is known to. */
static void json_culprit(struct xft_json *j, const struct xft_culprit *c)
{
	if (!c->wait_ns) {
		xft_json_null(j);
		return;
	}
	char who[24];
	xft_vcpu_name(c->domain, c->vcpu, who, sizeof(who));
	xft_json_object_begin(j);
	JU("pcpu", c->pcpu);
	JU("domain_id", c->domain);
	JU("vcpu", c->vcpu);
	xft_json_key(j, "holder");
	xft_json_string(j, who);
	JU("wait_ns", c->wait_ns);
	xft_json_object_end(j);
}

/* {"ns": {...}, "unknown_ns": {...}, "culprit": ...}, and "flows" first
 * when @flows >= 0. */
static void json_split(struct xft_json *j, const struct xft_split *s, const struct xft_culprit *c, int64_t flows)
{
	xft_json_object_begin(j);
	if (flows >= 0)
		JU("flows", (uint64_t)flows);
	xft_json_key(j, "ns");
	json_split_ns(j, s);
	xft_json_key(j, "unknown_ns");
	json_unknown_ns(j, s);
	xft_json_key(j, "culprit");
	json_culprit(j, c);
	xft_json_object_end(j);
}

static void json_sched(struct xft_json *j, const struct xft_sched_status *st)
{
	xft_json_object_begin(j);
	xft_json_key(j, "joined");
	xft_json_bool(j, st->joined);
	xft_json_key(j, "clock_error_ns");
	if (st->joined && st->clock_error_ns != UINT64_MAX)
		xft_json_u64(j, st->clock_error_ns);
	else
		xft_json_null(j);
	xft_json_key(j, "clock_bound_ns");
	if (st->joined && st->clock_bound_ns != UINT64_MAX)
		xft_json_u64(j, st->clock_bound_ns);
	else
		xft_json_null(j);
	JU("trace_records", st->trace_records);
	JU("trace_lost", st->trace_lost);
	JU("lost_records", st->lost_records);
	JU("too_old", st->too_old);
	JU("no_vcpu_room", st->no_vcpu_room);
	JU("hops_split", st->hops_split);
	JU("hops_pending", st->hops_pending);
	JU("split_early", st->split_early);
	JU("xen_idle", st->xen_idle);
	xft_json_object_end(j);
}

void xft_report_json(struct xft_app *app, struct xft_json *j, unsigned flags)
{
	const struct xft_agg_stats *st = &app->frame.st;
	char now[32];
	utc_now(now, sizeof(now));
	xft_json_object_begin(j);
	xft_json_key(j, "schema");
	xft_json_string(j, XFT_SNAPSHOT_SCHEMA);
	if (flags & XFT_REPORT_BATCH)
		JU("iteration", app->iteration);
	xft_json_key(j, "time");
	xft_json_string(j, now);
	xft_json_key(j, "uptime_s");
	xft_json_double(j, (double)(app->now_ns - app->start_ns) / 1e9);
	xft_json_key(j, "note");
	if (app->nothing_woven) {
		char note[sizeof(XFT_NOTHING_WOVEN) + 256];
		snprintf(note, sizeof(note), "%s%s%s", app->note ? app->note : "", app->note ? "; " : "",
			 XFT_NOTHING_WOVEN);
		xft_json_string(j, note);
	} else if ((flags & XFT_REPORT_BATCH) && app->pending_note[0]) {
		char note[sizeof(app->pending_note) + 256];
		snprintf(note, sizeof(note), "%s%s%s", app->note ? app->note : "", app->note ? "; " : "",
			 app->pending_note);
		xft_json_string(j, note);
	} else {
		xft_json_string(j, app->note);
	}
	xft_json_key(j, "paused");
	xft_json_bool(j, app->ui.paused);

	xft_json_key(j, "sources");
	xft_json_array_begin(j);
	for (unsigned s = 0; s < app->nsrc; s++) {
		xft_json_object_begin(j);
		xft_json_key(j, "collector");
		xft_json_string(j, app->src[s].ops->name);
		xft_json_key(j, "spec");
		xft_json_string(j, app->src[s].spec);
		JU("records", app->src[s].st.records);
		JU("drops", app->src[s].st.drops);
		JU("bad", app->src[s].st.bad);
		xft_json_key(j, "ended");
		xft_json_bool(j, app->src[s].ended);
		xft_json_key(j, "error");
		xft_json_string(j, app->src[s].ended && app->src[s].error[0] ? app->src[s].error : NULL);
		xft_json_object_end(j);
	}
	xft_json_array_end(j);

	xft_json_key(j, "flow_files");
	xft_json_array_begin(j);
	for (unsigned i = 0; i < app->nwoven; i++)
		xft_json_string(j, app->woven[i]);
	xft_json_array_end(j);

	xft_json_key(j, "domains");
	xft_json_array_begin(j);
	for (unsigned d = 0; d < app->ndomains; d++) {
		const struct xft_domain_row *r = &app->domains[d];
		xft_json_object_begin(j);
		JU("id", r->info.id);
		xft_json_key(j, "name");
		xft_json_string(j, r->info.name ? r->info.name : "");
		xft_json_key(j, "source");
		xft_json_string(j, r->info.source ? r->info.source : "");
		JU("targets", r->info.targets);
		JU("records", r->info.records);
		xft_json_key(j, "records_per_s");
		xft_json_double(j, r->per_s);
		JU("drops", r->info.drops);
		/* What its records claimed that it cannot have seen, by kind
		 * (xflow/collector.h), every kind always present. */
		xft_json_key(j, "lies");
		xft_json_object_begin(j);
		for (unsigned k = 0; k < XFT_LIE_KINDS; k++)
			JU(xft_lie_key(k), xft_lie_count(&r->info.lies, k));
		xft_json_object_end(j);
		xft_json_key(j, "gone");
		xft_json_bool(j, r->info.gone);
		xft_json_object_end(j);
	}
	xft_json_array_end(j);

	xft_json_key(j, "aspects");
	xft_json_array_begin(j);
	for (unsigned a = 0; a < app->naspects; a++) {
		const struct xft_aspect_row *r = &app->aspects[a];
		xft_json_object_begin(j);
		xft_json_key(j, "collector");
		xft_json_string(j, app->src[r->src].ops->name);
		JU("index", r->index);
		xft_json_key(j, "name");
		xft_json_string(j, r->info.name ? r->info.name : "");
		JU("sites", r->info.sites);
		/* Sites the agent serves with a breakpoint where its in-process
		 * backend could not put a jump, and why (the first). */
		JU("trap_sites", r->info.trap_sites);
		xft_json_key(j, "trap_why");
		if (r->info.trap_why)
			xft_json_string(j, r->info.trap_why);
		else
			xft_json_null(j);
		JU("hits", r->info.hits);
		xft_json_key(j, "hits_per_s");
		xft_json_double(j, r->hits_per_s);
		JU("drops", r->info.drops);
		JU("faults", r->info.faults);
		xft_json_key(j, "enabled");
		xft_json_bool(j, r->info.enabled);
		xft_json_object_end(j);
	}
	xft_json_array_end(j);

	xft_json_key(j, "stats");
	xft_json_object_begin(j);
	JU("records", st->records);
	xft_json_key(j, "records_per_s");
	xft_json_double(j, app->rate);
	JU("drops", app->drops);
	JU("bad", app->bad);
	JU("released", st->released);
	JU("late", st->late);
	JU("reorder_overflows", st->window_full);
	JU("flows_started", st->flows_started);
	JU("flows_finished", st->flows_finished);
	JU("flows_partial", st->flows_partial);
	JU("flows_expired", st->flows_expired);
	JU("flows_evicted", st->flows_evicted);
	JU("flows_live", st->flows_live);
	JU("no_flow", st->no_flow);
	JU("hops_dropped", st->hops_dropped);
	JU("negative_hops", st->negative_hops);
	JU("handoffs_sent", st->handoffs_sent);
	JU("handoffs_matched", st->handoffs_matched);
	JU("handoffs_lost", st->handoffs_lost);
	JU("join_joined", st->join_joined);
	JU("join_unmatched_out", st->join_unmatched_out);
	JU("join_unmatched_in", st->join_unmatched_in);
	JU("join_conflicts", st->join_conflicts);
	JU("join_refused", st->join_refused);
	JU("join_full", st->join_full);
	JU("join_negative_hops", st->join_negative_hops);
	JU("points_lost", st->points_lost);
	JU("loss_gaps", st->loss_gaps);
	JU("loss_records", st->records_lost);
	JU("loss_late", st->loss_late);
	JU("loss_threads_forgotten", st->threads_forgotten);
	JU("memory_bytes", st->memory_bytes);
	JU("resident_bytes", app->resident_bytes);
	xft_json_object_end(j);

	xft_json_key(j, "sched");
	json_sched(j, &app->frame.sched);

	const struct xft_agg_limits *l = &app->cfg.limits;
	xft_json_key(j, "limits");
	xft_json_object_begin(j);
	JU("reorder_window_ns", l->window_ns);
	JU("max_pending", l->max_pending);
	JU("max_flows", l->max_flows);
	JU("max_hops", l->max_hops);
	JU("max_path", l->max_path);
	JU("top_k", l->top_k);
	JU("flow_expire_ns", l->expire_ns);
	JU("max_handoffs", l->max_handoffs);
	JU("join_grace_ns", l->join_grace_ns);
	xft_json_object_end(j);

	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	xft_json_key(j, "hops");
	xft_json_array_begin(j);
	for (size_t r = 0; r < app->frame.nhop_shown; r++) {
		const struct xft_hop_row *h = &app->frame.hops[app->frame.hop_order[r]];
		xft_json_object_begin(j);
		xft_json_key(j, "from");
		json_site(j, app, h->from_domain, h->from);
		xft_json_key(j, "to");
		json_site(j, app, h->to_domain, h->to);
		JU("count", h->count);
		JU("total_ns", h->total_ns);
		xft_json_key(j, "share");
		xft_json_double(j, h->share);
		JU("min_ns", h->min);
		JU("mean_ns", h->mean);
		JU("p50_ns", h->p50);
		JU("p90_ns", h->p90);
		JU("p99_ns", h->p99);
		JU("p999_ns", h->p999);
		JU("max_ns", h->max);
		xft_json_key(j, "split");
		xft_json_object_begin(j);
		xft_json_key(j, "all");
		json_split(j, &h->split.all, &h->split.culprit_all, -1);
		xft_json_key(j, "tail");
		json_split(j, &h->split.tail, &h->split.culprit_tail, (int64_t)h->split.tail_count);
		xft_json_object_end(j);
		if ((flags & XFT_REPORT_HISTOGRAMS) && h->hop < nh) {
			xft_json_key(j, "histogram");
			xft_json_array_begin(j);
			unsigned it = 0;
			struct xflow_hist_bucket b;
			while (xflow_hist_next(&hops[h->hop].hist, &it, &b)) {
				xft_json_object_begin(j);
				JU("low_ns", b.low);
				JU("high_ns", b.high);
				JU("count", b.count);
				xft_json_object_end(j);
			}
			xft_json_array_end(j);
		}
		xft_json_object_end(j);
	}
	xft_json_array_end(j);

	xft_json_key(j, "slowest");
	xft_json_array_begin(j);
	for (size_t r = 0; r < app->frame.nflow_shown; r++) {
		const struct xft_flow_row *fl = &app->frame.flows[app->frame.flow_order[r]];
		xft_json_object_begin(j);
		JU("rank", r + 1);
		JU("id", fl->s.id);
		JU("kind", fl->s.kind);
		xft_json_key(j, "origin_domain");
		xft_json_string(j, fl->origin_dom);
		JU("start_ns", fl->s.start_ns);
		JU("end_ns", fl->s.end_ns);
		JU("duration_ns", fl->duration_ns);
		xft_json_key(j, "expired");
		xft_json_bool(j, fl->s.expired);
		JU("points_lost", fl->s.points_lost);
		char why[256];
		xft_json_key(j, "cause");
		if (xft_flow_cause_text(&fl->s, &app->sites, why, sizeof(why)) >= 0)
			xft_json_string(j, why);
		else
			xft_json_null(j);
		xft_json_key(j, "path");
		xft_json_array_begin(j);
		uint64_t t0 = fl->s.npoints ? fl->s.path[0].t_ns : 0;
		for (uint32_t p = 0; p < fl->s.npoints; p++) {
			const struct xft_point *pt = &fl->s.path[p];
			const struct xft_site *s = xft_sites_get(&app->sites, pt->domain, pt->site);
			xft_json_object_begin(j);
			JU("elapsed_ns", pt->t_ns - t0);
			JU("gap_ns", p ? pt->t_ns - fl->s.path[p - 1].t_ns : 0);
			JU("domain_id", pt->domain);
			xft_json_key(j, "domain");
			xft_json_string(j, xft_sites_domain(&app->sites, pt->domain));
			xft_json_key(j, "file");
			xft_json_string(j, s->file);
			JU("line", s->line);
			xft_json_key(j, "function");
			xft_json_string(j, s->function);
			JU("site", pt->site);
			if (p && fl->s.gaps) {
				xft_json_key(j, "split");
				json_split(j, &fl->s.gaps[p - 1].split, &fl->s.gaps[p - 1].culprit, -1);
			}
			xft_json_object_end(j);
		}
		xft_json_array_end(j);
		xft_json_object_end(j);
	}
	xft_json_array_end(j);
	if (app->hv) {
		xft_json_key(j, "hypervisor");
		json_hv(app, j);
	}
	xft_json_object_end(j);
}

static void json_hv(struct xft_app *app, struct xft_json *j)
{
	static const char *const rs_name[XFLOW_HV_NRUNSTATES] = { "running", "runnable", "blocked", "offline" };
	const struct xflow_hv_summary *hv = app->hv;
	char dom[16];
	xft_json_object_begin(j);
	xft_json_key(j, "collector");
	xft_json_string(j, app->src[app->hv_src].spec);
	JU("cpu_hz", hv->cpu_hz);
	JU("total_ns", hv->total_ns);
	JU("records", hv->records);
	JU("bytes", hv->bytes);
	JU("size", hv->size);
	xft_json_key(j, "complete");
	xft_json_bool(j, hv->complete);
	xft_json_key(j, "vcpus");
	xft_json_array_begin(j);
	for (uint32_t i = 0; i < hv->nvcpus; i++) {
		const struct xflow_hv_vcpu *v = &hv->vcpus[app->hv_vcpu_order[i]];
		xft_json_object_begin(j);
		JU("domain_id", v->domain);
		xft_hv_domain_name(v->domain, dom, sizeof(dom));
		xft_json_key(j, "domain");
		xft_json_string(j, dom);
		JU("vcpu", v->vcpu);
		xft_json_key(j, "runstates");
		xft_json_object_begin(j);
		for (int k = 0; k < XFLOW_HV_NRUNSTATES; k++) {
			xft_json_key(j, rs_name[k]);
			xft_json_object_begin(j);
			JU("count", v->count[k]);
			JU("time_ns", v->ns[k]);
			xft_json_key(j, "share");
			xft_json_double(j, v->share[k] < 0 ? 0 : v->share[k] > 1 ? 1 : v->share[k]);
			xft_json_object_end(j);
		}
		xft_json_object_end(j);
		JU("wakes", v->wakes);
		JU("wake_p50_ns", v->wake_p50_ns);
		JU("wake_p90_ns", v->wake_p90_ns);
		JU("wake_p99_ns", v->wake_p99_ns);
		JU("migrations", v->migrations);
		xft_json_key(j, "pcpu");
		xft_json_i64(j, v->pcpu);
		xft_json_object_end(j);
	}
	xft_json_array_end(j);
	xft_json_key(j, "events");
	xft_json_array_begin(j);
	for (uint32_t i = 0; i < hv->nevents; i++) {
		const struct xflow_hv_event *e = &hv->events[app->hv_event_order[i]];
		xft_json_object_begin(j);
		JU("domain_id", e->domain);
		xft_hv_domain_name(e->domain, dom, sizeof(dom));
		xft_json_key(j, "domain");
		xft_json_string(j, dom);
		xft_json_key(j, "kind");
		xft_json_string(j, e->kind == XFLOW_HV_EXIT ? "exit" : e->kind == XFLOW_HV_PV ? "pv" : "hypercall");
		JU("code", e->code);
		xft_json_key(j, "name");
		xft_json_string(j, e->name ? e->name : "");
		JU("count", e->count);
		JU("time_ns", e->ns);
		xft_json_key(j, "share");
		xft_json_double(j, e->share < 0 ? 0 : e->share > 1 ? 1 : e->share);
		JU("p50_cycles", e->p50_cycles);
		JU("p90_cycles", e->p90_cycles);
		JU("p99_cycles", e->p99_cycles);
		xft_json_object_end(j);
	}
	xft_json_array_end(j);
	JU("lost_records", hv->lost_records);
	xft_json_key(j, "lost");
	xft_json_array_begin(j);
	for (uint32_t i = 0; i < hv->nlost; i++) {
		xft_json_object_begin(j);
		JU("cpu", hv->lost[i].cpu);
		JU("offset", hv->lost[i].offset);
		JU("at_ns", hv->lost[i].at_ns);
		JU("records", hv->lost[i].records);
		xft_json_object_end(j);
	}
	xft_json_array_end(j);
	JU("unknown_total", hv->unknown_total);
	xft_json_key(j, "unknown");
	xft_json_array_begin(j);
	for (uint32_t i = 0; i < hv->nunknown; i++) {
		xft_json_object_begin(j);
		JU("event", hv->unknown[i].event);
		JU("count", hv->unknown[i].count);
		xft_json_object_end(j);
	}
	xft_json_array_end(j);
	JU("skipped", hv->skipped);
	xft_json_key(j, "skipped_why");
	xft_json_object_begin(j);
	JU("bad_tsc", hv->skipped_bad_tsc);
	JU("framing", hv->skipped_framing);
	JU("decode", hv->skipped_decode);
	JU("garbage_bytes", hv->skipped_bytes);
	xft_json_object_end(j);
	xft_json_key(j, "damage");
	if (hv->damage)
		xft_json_string(j, hv->damage);
	else
		xft_json_null(j);
	xft_json_object_end(j);
}

int xft_report_json_file(struct xft_app *app, FILE *f)
{
	struct xft_json j;
	xft_json_init(&j, f, 1);
	xft_report_json(app, &j, XFT_REPORT_HISTOGRAMS);
	return xft_json_end(&j);
}

/* --- trace events ---------------------------------------------------------- */

/*
 * One process and one thread per domain (pid = tid = domain id), one
 * complete event ("X") per point lasting until the flow's next point, and a
 * flow arrow ("s" then "f") per hop.  With a split, a point's args say
 * where the gap to the next point went (state_ns) and its biggest cause.  The slowest flows overlap in real
 * time, and slices on one track must nest, so each flow is laid out after
 * the previous one (its real start is in args.start_ns).
 */
int xft_report_trace(struct xft_app *app, FILE *f)
{
	struct xft_json j;
	xft_json_init(&j, f, 0);
	xft_json_object_begin(&j);
	xft_json_key(&j, "displayTimeUnit");
	xft_json_string(&j, "ns");
	xft_json_key(&j, "traceEvents");
	xft_json_array_begin(&j);

	uint16_t doms[256];
	unsigned ndoms = 0;
	for (size_t r = 0; r < app->frame.nflow_shown; r++) {
		const struct xft_flow_row *fl = &app->frame.flows[app->frame.flow_order[r]];
		for (uint32_t p = 0; p < fl->s.npoints; p++) {
			unsigned k;
			for (k = 0; k < ndoms && doms[k] != fl->s.path[p].domain; k++)
				;
			if (k == ndoms && ndoms < 256)
				doms[ndoms++] = fl->s.path[p].domain;
		}
	}
	for (unsigned k = 0; k < ndoms; k++) {
		char name[96];
		snprintf(name, sizeof(name), "%s (domain %u)", xft_sites_domain(&app->sites, doms[k]), doms[k]);
		for (int t = 0; t < 2; t++) {
			xft_json_object_begin(&j);
			xft_json_key(&j, "ph");
			xft_json_string(&j, "M");
			xft_json_key(&j, "name");
			xft_json_string(&j, t ? "thread_name" : "process_name");
			xft_json_key(&j, "pid");
			xft_json_u64(&j, doms[k]);
			xft_json_key(&j, "tid");
			xft_json_u64(&j, doms[k]);
			xft_json_key(&j, "args");
			xft_json_object_begin(&j);
			xft_json_key(&j, "name");
			xft_json_string(&j, name);
			xft_json_object_end(&j);
			xft_json_object_end(&j);
		}
	}

	double offset_us = 0;
	uint64_t arrow = 1;
	for (size_t r = 0; r < app->frame.nflow_shown; r++) {
		const struct xft_flow_row *fl = &app->frame.flows[app->frame.flow_order[r]];
		if (!fl->s.npoints)
			continue;
		uint64_t t0 = fl->s.path[0].t_ns;
		for (uint32_t p = 0; p < fl->s.npoints; p++) {
			const struct xft_point *pt = &fl->s.path[p];
			const struct xft_site *s = xft_sites_get(&app->sites, pt->domain, pt->site);
			double ts = offset_us + (double)(pt->t_ns - t0) / 1e3;
			double dur = p + 1 < fl->s.npoints ? (double)(fl->s.path[p + 1].t_ns - pt->t_ns) / 1e3 : 0.0;
			xft_json_object_begin(&j);
			xft_json_key(&j, "name");
			xft_json_string(&j, s->function);
			xft_json_key(&j, "cat");
			xft_json_string(&j, "xflow");
			xft_json_key(&j, "ph");
			xft_json_string(&j, "X");
			xft_json_key(&j, "ts");
			xft_json_double(&j, ts);
			xft_json_key(&j, "dur");
			xft_json_double(&j, dur);
			xft_json_key(&j, "pid");
			xft_json_u64(&j, pt->domain);
			xft_json_key(&j, "tid");
			xft_json_u64(&j, pt->domain);
			xft_json_key(&j, "args");
			xft_json_object_begin(&j);
			xft_json_key(&j, "flow");
			xft_json_u64(&j, fl->s.id);
			xft_json_key(&j, "rank");
			xft_json_u64(&j, r + 1);
			xft_json_key(&j, "file");
			xft_json_string(&j, s->file);
			xft_json_key(&j, "line");
			xft_json_u64(&j, s->line);
			xft_json_key(&j, "elapsed_us");
			xft_json_double(&j, (double)(pt->t_ns - t0) / 1e3);
			xft_json_key(&j, "start_ns");
			xft_json_u64(&j, pt->t_ns);
			/* The gap this slice lasts, by state: in its args, not
			 * as nested slices.  The split holds each state's total,
			 * not when it happened: slices would draw an order in
			 * time the data does not have. */
			const struct xft_gap_split *gs = fl->s.gaps && p + 1 < fl->s.npoints ? &fl->s.gaps[p] : NULL;
			if (gs && xft_split_total(&gs->split)) {
				char why[256];
				xft_json_key(&j, "state_ns");
				json_split_ns(&j, &gs->split);
				xft_split_cause_text(&gs->split, &gs->culprit,
						     xft_sites_domain(&app->sites, fl->s.path[p + 1].domain), why, sizeof(why));
				xft_json_key(&j, "cause");
				xft_json_string(&j, why);
			}
			xft_json_object_end(&j);
			xft_json_object_end(&j);
			if (p + 1 < fl->s.npoints) {
				/* The hop to the next point: an arrow between the two slices. */
				const struct xft_point *nx = &fl->s.path[p + 1];
				for (int side = 0; side < 2; side++) {
					const struct xft_point *at = side ? nx : pt;
					xft_json_object_begin(&j);
					xft_json_key(&j, "name");
					xft_json_string(&j, "hop");
					xft_json_key(&j, "cat");
					xft_json_string(&j, "xflow.hop");
					xft_json_key(&j, "ph");
					xft_json_string(&j, side ? "f" : "s");
					if (side) {
						xft_json_key(&j, "bp");
						xft_json_string(&j, "e");
					}
					xft_json_key(&j, "id");
					xft_json_u64(&j, arrow);
					xft_json_key(&j, "ts");
					xft_json_double(&j, offset_us + (double)(at->t_ns - t0) / 1e3);
					xft_json_key(&j, "pid");
					xft_json_u64(&j, at->domain);
					xft_json_key(&j, "tid");
					xft_json_u64(&j, at->domain);
					xft_json_object_end(&j);
				}
				arrow++;
			}
		}
		offset_us += (double)fl->duration_ns / 1e3 * 1.1 + 10.0;
	}
	xft_json_array_end(&j);
	xft_json_object_end(&j);
	return xft_json_end(&j);
}
