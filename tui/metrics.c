/*
 * The monitor's figures as Prometheus metrics.  See tui/metrics.h; the
 * names, labels and bucket layout are documented in xflowtop(1).
 *
 * Cardinality is bounded whatever the traffic: every labelled family goes
 * through a bounded table (export/fold.c) whose first N keys get series of
 * their own, kept for the life of the process, and whose later keys are
 * summed into one "(other)" series and counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export/export.h"
#include "tui/app.h"
#include "tui/metrics.h"
#include "tui/lies_text.h"
#include "tui/split_text.h"
#include "xflow/clock.h"

#define OTHER "(other)"
/* Distinct names kept for the small families, over the process's life. */
#define MAX_NAMES 256

/* --- the families --------------------------------------------------------- */

#define FAMILY(id, name, type, help) static const struct xfx_family id = { name, type, help }

FAMILY(f_records, "xflowtop_records_total", XFX_COUNTER, "Records fed to the model, from every collector.");
FAMILY(f_seen_lost, "xflowtop_records_seen_lost_total", XFX_COUNTER,
       "Records missing from their producers' numbers, whoever lost them (also in the drops or bad records).");
FAMILY(f_late, "xflowtop_records_late_total", XFX_COUNTER,
       "Records older than the last one released by the reorder window (used anyway).");
FAMILY(f_overflow, "xflowtop_reorder_window_overflows_total", XFX_COUNTER,
       "Records released early because the reorder window (max-pending) was full.");
FAMILY(f_started, "xflowtop_flows_started_total", XFX_COUNTER,
       "Flows begun whole by their start record (one found partial later stays counted here too).");
FAMILY(f_finished, "xflowtop_flows_finished_total", XFX_COUNTER, "Flows ended by their quit record.");
FAMILY(f_partial, "xflowtop_flows_partial_total", XFX_COUNTER,
       "Flows found partial: seen from their middle, or live while a record was lost; never counted finished.");
FAMILY(f_expired, "xflowtop_flows_expired_total", XFX_COUNTER, "Flows ended by idling longer than flow-expire.");
FAMILY(f_evicted, "xflowtop_flows_evicted_total", XFX_COUNTER,
       "Live flows dropped to make room for new ones (max-flows).");
FAMILY(f_live, "xflowtop_flows_live", XFX_GAUGE, "Flows in progress.");
FAMILY(f_hops, "xflowtop_hops", XFX_GAUGE, "Distinct hops in the model.");
FAMILY(f_folded, "xflowtop_hops_folded", XFX_GAUGE,
       "Hops past metrics-max-hops: their latencies are in the hop series from=\"(other)\", to=\"(other)\".");
FAMILY(f_hop_drops, "xflowtop_hop_samples_dropped_total", XFX_COUNTER,
       "Hop latencies not recorded because the model's hop table (max-hops) was full.");
FAMILY(f_hop, "xflowtop_hop_latency_seconds", XFX_HISTOGRAM,
       "Time from one point of a flow to the next, by hop (from and to: domain:function).");
FAMILY(f_hop_state, "xflowtop_hop_state_seconds_total", XFX_COUNTER,
       "Time of the hops by where it went once Xen's scheduler trace is joined (state: run, wait, notify, backend, "
       "blocked, offline, xen, unknown), summed over their flows; hops as in xflowtop_hop_latency_seconds.");
FAMILY(f_hop_unknown, "xflowtop_hop_unknown_seconds_total", XFX_COUNTER,
       "Time of the hops in state unknown by why it is not attributable (reason: no_trace, lost, clock, old, early; "
       "they add up to state=\"unknown\" of xflowtop_hop_state_seconds_total), summed over their flows; hops as "
       "in xflowtop_hop_latency_seconds.");
FAMILY(f_sched_joined, "xflowtop_sched_joined", XFX_GAUGE, "1 while Xen's scheduler trace is joined to the flows.");
FAMILY(f_sched_error, "xflowtop_sched_clock_error_seconds", XFX_GAUGE,
       "Measured error between the flows' time and the scheduler trace's, at least (absent until measured).");
FAMILY(f_sched_bound, "xflowtop_sched_clock_bound_seconds", XFX_GAUGE,
       "Largest error between the flows' time and the scheduler trace's that the measures allow (absent until "
       "proven).");
FAMILY(f_sched_records, "xflowtop_sched_trace_records_total", XFX_COUNTER,
       "Scheduler records taken into the per-vCPU timeline.");
FAMILY(f_sched_lost, "xflowtop_sched_trace_lost_total", XFX_COUNTER,
       "Scheduler records Xen or the timeline lost: the time they cover is split as unknown.");
FAMILY(f_sched_split, "xflowtop_sched_hops_split_total", XFX_COUNTER, "Hop samples split by state.");
FAMILY(f_sched_pending, "xflowtop_sched_hops_pending", XFX_GAUGE,
       "Hop samples waiting for every physical CPU's trace to pass their end before they are split.");
FAMILY(f_keyed, "xflowtop_keyed_handoffs_total", XFX_COUNTER,
       "Sides of keyed cross-domain handoffs by outcome: joined (pairs), unmatched_out, unmatched_in, conflict, "
       "refused (a domain past half of max-handoffs), full.");
FAMILY(f_keyed_negative, "xflowtop_keyed_handoff_negative_hops_total", XFX_COUNTER,
       "Joins whose OUT was stamped after its IN (clock skew between domains): no hop recorded.");
FAMILY(f_memory, "xflowtop_model_memory_bytes", XFX_GAUGE, "Memory of the model, fixed at start.");
FAMILY(f_coll_records, "xflowtop_collector_records_total", XFX_COUNTER, "Records a collector delivered.");
FAMILY(f_coll_drops, "xflowtop_collector_records_dropped_total", XFX_COUNTER,
       "Records a collector's producers dropped (their ring was full).");
FAMILY(f_coll_bad, "xflowtop_collector_records_bad_total", XFX_COUNTER, "Records a collector rejected as malformed.");
FAMILY(f_coll_up, "xflowtop_collector_up", XFX_GAUGE,
       "1 while a collector delivers, 0 once its input ended or failed.");
FAMILY(f_dom_up, "xflowtop_domain_up", XFX_GAUGE, "1 while a domain and its agent are there, 0 once gone.");
FAMILY(f_dom_records, "xflowtop_domain_records_total", XFX_COUNTER, "Records received from a domain.");
FAMILY(f_dom_drops, "xflowtop_domain_records_dropped_total", XFX_COUNTER,
       "Records a domain's producers dropped (their ring was full).");
FAMILY(f_dom_bad, "xflowtop_domain_records_bad_total", XFX_COUNTER,
       "Records from a domain rejected as malformed (bounds, a site it does not have).");
FAMILY(f_dom_lies, "xflowtop_domain_records_lies_total", XFX_COUNTER,
       "Records from a domain that claimed what it cannot have seen, by kind: other_domain, time_past, "
       "time_future, flood (refused); never_started, after_end (given on as partial flows); stats "
       "(STATS counts refused); hop_share, handoff_share (refused past its share of the model's tables).");
FAMILY(f_asp_hits, "xflowtop_aspect_hits_total", XFX_COUNTER, "Times an aspect's advice ran.");
FAMILY(f_asp_faults, "xflowtop_aspect_faults_total", XFX_COUNTER,
       "Times an aspect's advice faulted (a bad read, a failed hook) and was skipped.");
FAMILY(f_asp_drops, "xflowtop_aspect_records_dropped_total", XFX_COUNTER,
       "Records an aspect's advice could not write (the ring was full).");
FAMILY(f_asp_enabled, "xflowtop_aspect_enabled", XFX_GAUGE, "1 when an aspect is switched on.");
FAMILY(f_asp_sites, "xflowtop_aspect_sites", XFX_GAUGE, "Join points an aspect is woven at.");
FAMILY(f_xen_runstate, "xflowtop_xen_domain_runstate_seconds_total", XFX_COUNTER,
       "Time a domain's vcpus spent in each runstate, summed over its vcpus (xentrace).");
FAMILY(f_xen_wake, "xflowtop_xen_domain_wake_to_run_seconds", XFX_HISTOGRAM,
       "Time from a vcpu's wake-up to its running, over a domain's vcpus (xentrace).");
FAMILY(f_xen_records, "xflowtop_xen_trace_records_total", XFX_COUNTER, "Trace records decoded (xentrace).");
FAMILY(f_xen_lost, "xflowtop_xen_trace_lost_records_total", XFX_COUNTER,
       "Trace records Xen lost because its buffers were full (xentrace).");
FAMILY(f_start, "xflowtop_start_time_seconds", XFX_GAUGE, "When xflowtop started, in seconds since the epoch.");
FAMILY(f_publish, "xflowtop_exporter_publish_seconds", XFX_GAUGE,
       "Time the monitor's loop took to gather the previous set of these figures.");
FAMILY(f_format, "xflowtop_exporter_format_seconds", XFX_GAUGE,
       "Time the server's thread took to write the previous set of these figures as text.");
FAMILY(f_bytes, "xflowtop_exporter_response_bytes", XFX_GAUGE, "Size of the previous /metrics response.");
FAMILY(f_scrapes, "xflowtop_exporter_scrapes_total", XFX_COUNTER, "Requests for /metrics answered.");
FAMILY(f_conns, "xflowtop_exporter_connections", XFX_GAUGE, "HTTP connections open.");
FAMILY(f_refused, "xflowtop_exporter_connections_refused_total", XFX_COUNTER,
       "HTTP connections closed at once: the connection limits were reached and every connection was being answered.");
FAMILY(f_closed, "xflowtop_exporter_connections_closed_total", XFX_COUNTER,
       "HTTP connections the exporter closed, by reason: shed (waiting longest for a request when a newcomer "
       "needed room), request_timeout (the request was not in within metrics-request-timeout).");

/* --- state ------------------------------------------------------------------ */

/* A model hop as it was last folded. */
struct hop_cache {
	uint64_t count, sum; /* of its histogram when coarse[] was made */
	uint32_t slot;       /* its series; the folded one is metrics-max-hops */
	uint32_t names;      /* hash of its labels when the slot was found */
	uint64_t coarse[XFX_NBUCKETS + 1];
};

/* A histogram series: the sum of its contributors.  The hop series are
 * kept up to date by differences (a hop that moved is taken out as it was
 * and put back as it is), so a hop that did not move costs nothing. */
struct hist_acc {
	uint64_t buckets[XFX_NBUCKETS + 1];
	uint64_t count, sum_ns;
	uint32_t n; /* contributors: a series without any is left out */
};

/* Series of the same name summed (two collectors may see one domain). */
struct dom_acc {
	uint64_t records, drops, bad;
	uint64_t lies[XFT_LIE_KINDS];
	int up;     /* any of them is */
	uint32_t n;
};

struct asp_acc {
	uint64_t hits, faults, drops, sites;
	int enabled; /* any of them is */
	uint32_t n;
};

struct xen_acc {
	uint64_t ns[XFLOW_HV_NRUNSTATES];
	struct hist_acc wake;
	uint32_t n;
};

struct xft_metrics {
	struct xfx_server *srv;
	char host[256];
	uint64_t start_unix_ns;
	uint64_t publish_ns;
	struct xfx_fold *hops, *domains, *aspects, *xen_domains;
	struct hop_cache *cache;
	size_t ncache, nhops;     /* allocated; model hops in the series */
	uint32_t names_fp;        /* the domain names when the series were named */
	struct hist_acc *hop_acc; /* per hop slot, then one for the folded */
	struct xft_split *state_acc; /* per hop slot as hop_acc: the hops' split */
	/* Per name slot, the last one for the folded names. */
	struct dom_acc dom_acc[MAX_NAMES + 1];
	struct asp_acc asp_acc[MAX_NAMES + 1];
	struct xen_acc xen_acc[MAX_NAMES + 1];
};

/* --- helpers ------------------------------------------------------------------ */

static uint32_t fnv(uint32_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* "domain:function" of one end of a hop, as its label will show it
 * (several hops may share it, and then their series). */
static size_t hop_end(struct xft_app *app, uint16_t domain, uint32_t group, char *out)
{
	char raw[2 * XFX_LABEL_MAX + 2];
	snprintf(raw, sizeof(raw), "%s:%s", xft_sites_domain(&app->sites, domain),
		 xft_sites_group_name(&app->sites, group));
	return xfx_label_sanitize(raw, out);
}

/* The hash of a hop's labels without writing them: the domain names may
 * change (learnt late), the function names of a group never do. */
static uint32_t hop_names(struct xft_app *app, const struct xft_hop_key *k)
{
	const char *fd = xft_sites_domain(&app->sites, k->from_domain);
	const char *td = xft_sites_domain(&app->sites, k->to_domain);
	uint32_t h = fnv(2166136261u, fd, strlen(fd));
	h = fnv(h, (const char *)&k->from_group, sizeof(k->from_group));
	h = fnv(h, td, strlen(td));
	h = fnv(h, (const char *)&k->to_group, sizeof(k->to_group));
	return h ? h : 1;
}

/* Every domain name the labels may use: when it has not changed, no hop's
 * labels have. */
static uint32_t names_fingerprint(const struct xft_sites *s)
{
	uint32_t h = 2166136261u;
	for (unsigned k = 0; k < s->ndomains; k++) {
		h = fnv(h, (const char *)&s->domains[k].id, sizeof(s->domains[k].id));
		h = fnv(h, s->domains[k].name, strlen(s->domains[k].name));
	}
	return h;
}

static void acc_add(struct hist_acc *a, const uint64_t *coarse, uint64_t count, uint64_t sum_ns)
{
	for (unsigned i = 0; i <= XFX_NBUCKETS; i++)
		a->buckets[i] += coarse[i];
	a->count += count;
	a->sum_ns += sum_ns;
	a->n++;
}

/* Take @c's contribution out of @a (what acc_add put in). */
static void acc_sub(struct hist_acc *a, const struct hop_cache *c)
{
	for (unsigned i = 0; i <= XFX_NBUCKETS; i++)
		a->buckets[i] -= c->coarse[i];
	a->count -= c->count;
	a->sum_ns -= c->sum;
	a->n--;
}

/* One counter or gauge sample without labels. */
static void one(struct xfx_snap *s, const struct xfx_family *f, uint64_t v)
{
	xfx_snap_family(s, f);
	xfx_snap_u64(s, v);
}

/* The slot of @name in @f (by the label it makes), MAX_NAMES for the
 * folded ones. */
static uint32_t name_slot(struct xfx_fold *f, const char *name)
{
	char clean[XFX_LABEL_MAX + 1];
	uint32_t slot = xfx_fold_slot(f, clean, xfx_label_sanitize(name, clean));
	return slot == XFX_FOLDED ? MAX_NAMES : slot;
}

static const char *slot_name(const struct xfx_fold *f, uint32_t slot, char *buf)
{
	if (slot >= xfx_fold_count(f))
		return OTHER;
	size_t n;
	const char *k = xfx_fold_key(f, slot, &n);
	memcpy(buf, k, n);
	buf[n] = '\0';
	return buf;
}

/* --- the walks ------------------------------------------------------------------ */

static int cache_grow(struct xft_metrics *m, size_t n)
{
	if (n <= m->ncache)
		return 0;
	size_t cap = m->ncache * 2 > n ? m->ncache * 2 : n;
	struct hop_cache *c = realloc(m->cache, cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	m->cache = c;
	m->ncache = cap;
	return 0;
}

/* Bring the hop series up to date with the model. */
static uint64_t update_hops(struct xft_app *app, struct xft_metrics *m)
{
	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	uint32_t max = xfx_fold_max(m->hops);
	if (nh < m->nhops) {
		/* The model forgot its hops: start the series again. */
		memset(m->hop_acc, 0, (max + 1) * sizeof(*m->hop_acc));
		m->nhops = 0;
	}
	/* Hops there is no memory to remember are left out, and counted. */
	size_t known = cache_grow(m, nh) ? m->ncache : nh;
	uint32_t fp = names_fingerprint(&app->sites);
	int renamed = fp != m->names_fp;
	m->names_fp = fp;
	for (size_t i = 0; i < known; i++) {
		const struct xft_hop *h = &hops[i];
		struct hop_cache *c = &m->cache[i];
		int fresh = i >= m->nhops;
		if (fresh) {
			memset(c, 0, sizeof(*c));
			c->slot = UINT32_MAX;
		}
		if (fresh || renamed) {
			uint32_t names = hop_names(app, &h->key);
			if (fresh || names != c->names) {
				char key[2 * XFX_LABEL_MAX + 2];
				size_t n = hop_end(app, h->key.from_domain, h->key.from_group, key);
				key[n++] = '\0';
				n += hop_end(app, h->key.to_domain, h->key.to_group, key + n);
				uint32_t slot = xfx_fold_slot(m->hops, key, n);
				if (!fresh)
					acc_sub(&m->hop_acc[c->slot], c);
				c->slot = slot == XFX_FOLDED ? max : slot;
				c->names = names;
				acc_add(&m->hop_acc[c->slot], c->coarse, c->count, c->sum);
			}
		}
		if (c->count != h->hist.count) {
			acc_sub(&m->hop_acc[c->slot], c);
			xfx_hist_coarsen(&h->hist, 1.0, c->coarse);
			c->count = h->hist.count;
			c->sum = h->hist.sum;
			acc_add(&m->hop_acc[c->slot], c->coarse, c->count, c->sum);
		}
	}
	m->nhops = known;
	return (nh - known) + m->hop_acc[max].n;
}

/* A hop slot's key, "from\0to", back into its two labels. */
static void hop_key_split(const char *key, size_t n, char *from, char *to)
{
	size_t fl = strnlen(key, n);
	memcpy(from, key, fl);
	from[fl] = '\0';
	memcpy(to, key + fl + 1, n - fl - 1);
	to[n - fl - 1] = '\0';
}

/* The labels of hop slot @slot: its two ends, or "(other)" for the
 * folded one (@max). */
static void hop_slot_labels(struct xft_metrics *m, uint32_t slot, uint32_t max, char *from, char *to)
{
	size_t n;
	const char *key = slot < max ? xfx_fold_key(m->hops, slot, &n) : NULL;
	if (key) {
		hop_key_split(key, n, from, to);
	} else {
		strcpy(from, OTHER);
		strcpy(to, OTHER);
	}
}

static void put_hops(struct xft_app *app, struct xft_metrics *m, struct xfx_snap *s)
{
	uint64_t folded = update_hops(app, m);
	size_t nh;
	xft_agg_hops(app->agg, &nh);
	uint32_t max = xfx_fold_max(m->hops);
	one(s, &f_hops, nh);
	one(s, &f_folded, folded);
	xfx_snap_family(s, &f_hop);
	for (uint32_t slot = 0; slot <= max; slot++) {
		const struct hist_acc *a = &m->hop_acc[slot];
		if (!a->n)
			continue;
		char from[XFX_LABEL_MAX + 1], to[XFX_LABEL_MAX + 1];
		hop_slot_labels(m, slot, max, from, to);
		xfx_snap_label(s, "from", from);
		xfx_snap_label(s, "to", to);
		xfx_snap_hist(s, a->buckets, a->count, a->sum_ns);
	}
}

/* One split family by the hop series' slots: for each slot whose time was
 * split, its @n series, @label naming each by @name, valued by @value. */
static void put_split_family(struct xft_metrics *m, struct xfx_snap *s, const struct xfx_family *f,
			     const char *label, int n, const char *(*name)(int),
			     uint64_t (*value)(const struct xft_split *, int))
{
	uint32_t max = xfx_fold_max(m->hops);
	xfx_snap_family(s, f);
	for (uint32_t slot = 0; slot <= max; slot++) {
		if (!m->hop_acc[slot].n || !xft_split_total(&m->state_acc[slot]))
			continue;
		char from[XFX_LABEL_MAX + 1], to[XFX_LABEL_MAX + 1];
		hop_slot_labels(m, slot, max, from, to);
		for (int i = 0; i < n; i++) {
			xfx_snap_label(s, "from", from);
			xfx_snap_label(s, "to", to);
			xfx_snap_label(s, label, name(i));
			xfx_snap_seconds(s, value(&m->state_acc[slot], i));
		}
	}
}

static const char *state_name(int i)
{
	return xft_state_label((enum xft_state)i);
}

static uint64_t state_ns(const struct xft_split *sp, int i)
{
	return sp->ns[i];
}

static const char *reason_name(int i)
{
	return xft_unknown_reason_name((enum xft_unknown_reason)i);
}

static uint64_t reason_ns(const struct xft_split *sp, int i)
{
	return sp->unknown_ns[i];
}

/* Where the hops' time went, by the hop series' slots (so bounded and
 * folded as they are).  Summed again at each publish: a hop's split grows
 * after its samples were counted, when the trace has passed them.  A
 * slot's states appear once some of its time was split, and stay; so do
 * all five reasons of its unknown time (a counter's series does not come
 * and go). */
static void put_hop_states(struct xft_app *app, struct xft_metrics *m, struct xfx_snap *s)
{
	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	uint32_t max = xfx_fold_max(m->hops);
	memset(m->state_acc, 0, (max + 1) * sizeof(*m->state_acc));
	for (size_t i = 0; i < m->nhops && i < nh; i++)
		xft_split_add(&m->state_acc[m->cache[i].slot], &hops[i].split.all);
	put_split_family(m, s, &f_hop_state, "state", XFT_NSTATES, state_name, state_ns);
	put_split_family(m, s, &f_hop_unknown, "reason", XFT_UNK_NREASONS, reason_name, reason_ns);
}

static void put_sched(struct xft_app *app, struct xfx_snap *s)
{
	const struct xft_sched_status *st = xft_agg_sched_status(app->agg);
	one(s, &f_sched_joined, st->joined != 0);
	if (st->joined && st->clock_error_ns != UINT64_MAX) {
		xfx_snap_family(s, &f_sched_error);
		xfx_snap_seconds(s, st->clock_error_ns);
	}
	if (st->joined && st->clock_bound_ns != UINT64_MAX) {
		xfx_snap_family(s, &f_sched_bound);
		xfx_snap_seconds(s, st->clock_bound_ns);
	}
	one(s, &f_sched_records, st->trace_records);
	one(s, &f_sched_lost, st->trace_lost);
	one(s, &f_sched_split, st->hops_split);
	one(s, &f_sched_pending, st->hops_pending);
}

static void put_model(struct xft_app *app, struct xfx_snap *s)
{
	const struct xft_agg_stats *st = xft_agg_stats(app->agg);
	one(s, &f_records, st->records);
	one(s, &f_seen_lost, st->records_lost);
	one(s, &f_late, st->late);
	one(s, &f_overflow, st->window_full);
	/* Counters only grow: events, not what each flow is now (a flow found
	 * partial leaves flows_started, which the screen shows). */
	one(s, &f_started, st->flows_started_events);
	one(s, &f_finished, st->flows_finished);
	one(s, &f_partial, st->flows_partial_events);
	one(s, &f_expired, st->flows_expired);
	one(s, &f_evicted, st->flows_evicted);
	one(s, &f_live, st->flows_live);
	one(s, &f_hop_drops, st->hops_dropped);
	one(s, &f_memory, st->memory_bytes);
	const struct {
		const char *outcome;
		uint64_t n;
	} keyed[] = { { "joined", st->join_joined },         { "unmatched_out", st->join_unmatched_out },
		      { "unmatched_in", st->join_unmatched_in }, { "conflict", st->join_conflicts },
		      { "refused", st->join_refused },          { "full", st->join_full } };
	xfx_snap_family(s, &f_keyed);
	for (size_t i = 0; i < sizeof(keyed) / sizeof(keyed[0]); i++) {
		xfx_snap_label(s, "outcome", keyed[i].outcome);
		xfx_snap_u64(s, keyed[i].n);
	}
	one(s, &f_keyed_negative, st->join_negative_hops);
}

static void put_collectors(struct xft_app *app, struct xfx_snap *s)
{
	static const struct xfx_family *const fams[] = { &f_coll_records, &f_coll_drops, &f_coll_bad, &f_coll_up };
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		xfx_snap_family(s, fams[f]);
		for (unsigned i = 0; i < app->nsrc; i++) {
			const struct xft_source *src = &app->src[i];
			/* Two collectors of one kind: the second is "agent#2".
			 * Plugins name themselves: compare the labels. */
			char mine[XFX_LABEL_MAX + 1], other[XFX_LABEL_MAX + 1];
			xfx_label_sanitize(src->ops->name, mine);
			unsigned same = 0;
			for (unsigned k = 0; k < i; k++) {
				xfx_label_sanitize(app->src[k].ops->name, other);
				same += !strcmp(other, mine);
			}
			char name[XFX_LABEL_MAX + 16];
			if (same)
				snprintf(name, sizeof(name), "%.100s#%u", mine, same + 1);
			else
				snprintf(name, sizeof(name), "%s", mine);
			xfx_snap_label(s, "collector", name);
			uint64_t v = f == 0 ? src->st.records : f == 1 ? src->st.drops : f == 2 ? src->st.bad : !src->ended;
			xfx_snap_u64(s, v);
		}
	}
}

static void put_domains(struct xft_app *app, struct xft_metrics *m, struct xfx_snap *s)
{
	memset(m->dom_acc, 0, sizeof(m->dom_acc));
	for (unsigned i = 0; i < app->ndomains; i++) {
		const struct xflow_domain_info *d = &app->domains[i].info;
		const char *name = d->name && *d->name ? d->name : xft_sites_domain(&app->sites, d->id);
		struct dom_acc *a = &m->dom_acc[name_slot(m->domains, name)];
		a->records += d->records;
		a->drops += d->drops;
		a->bad += d->bad;
		for (unsigned k = 0; k < XFT_LIE_KINDS; k++)
			a->lies[k] += xft_lie_count(&d->lies, k);
		a->up |= !d->gone;
		a->n++;
	}
	static const struct xfx_family *const fams[] = { &f_dom_up, &f_dom_records, &f_dom_drops, &f_dom_bad };
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		xfx_snap_family(s, fams[f]);
		for (uint32_t slot = 0; slot <= MAX_NAMES; slot++) {
			const struct dom_acc *a = &m->dom_acc[slot];
			if (!a->n)
				continue;
			char buf[XFX_LABEL_MAX + 1];
			xfx_snap_label(s, "domain", slot_name(m->domains, slot, buf));
			xfx_snap_u64(s, f == 0 ? (uint64_t)a->up : f == 1 ? a->records : f == 2 ? a->drops : a->bad);
		}
	}
	xfx_snap_family(s, &f_dom_lies);
	for (uint32_t slot = 0; slot <= MAX_NAMES; slot++) {
		const struct dom_acc *a = &m->dom_acc[slot];
		if (!a->n)
			continue;
		char buf[XFX_LABEL_MAX + 1];
		for (unsigned k = 0; k < XFT_LIE_KINDS; k++) {
			xfx_snap_label(s, "domain", slot_name(m->domains, slot, buf));
			xfx_snap_label(s, "kind", xft_lie_key(k));
			xfx_snap_u64(s, a->lies[k]);
		}
	}
}

static void put_aspects(struct xft_app *app, struct xft_metrics *m, struct xfx_snap *s)
{
	memset(m->asp_acc, 0, sizeof(m->asp_acc));
	for (unsigned i = 0; i < app->naspects; i++) {
		const struct xflow_aspect_info *x = &app->aspects[i].info;
		struct asp_acc *a = &m->asp_acc[name_slot(m->aspects, x->name ? x->name : "")];
		a->hits += x->hits;
		a->faults += x->faults;
		a->drops += x->drops;
		a->sites += x->sites;
		a->enabled |= x->enabled != 0;
		a->n++;
	}
	static const struct xfx_family *const fams[] = { &f_asp_hits, &f_asp_faults, &f_asp_drops,
							 &f_asp_enabled, &f_asp_sites };
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		xfx_snap_family(s, fams[f]);
		for (uint32_t slot = 0; slot <= MAX_NAMES; slot++) {
			const struct asp_acc *a = &m->asp_acc[slot];
			if (!a->n)
				continue;
			char buf[XFX_LABEL_MAX + 1];
			xfx_snap_label(s, "aspect", slot_name(m->aspects, slot, buf));
			uint64_t v = f == 0 ? a->hits : f == 1 ? a->faults : f == 2 ? a->drops
				   : f == 3 ? (uint64_t)a->enabled : a->sites;
			xfx_snap_u64(s, v);
		}
	}
}

static void put_hypervisor(struct xft_app *app, struct xft_metrics *m, struct xfx_snap *s)
{
	/* app->hv is the one the screen shows (as of the last refresh, or of
	 * the pause): asking the collector again would change it under the
	 * paused screen. */
	const struct xflow_hv_summary *hv = app->hv;
	if (!hv)
		return;
	memset(m->xen_acc, 0, sizeof(m->xen_acc));
	for (uint32_t i = 0; i < hv->nvcpus; i++) {
		const struct xflow_hv_vcpu *v = &hv->vcpus[i];
		char id[16];
		snprintf(id, sizeof(id), "%u", v->domain);
		struct xen_acc *a = &m->xen_acc[name_slot(m->xen_domains, id)];
		for (int r = 0; r < XFLOW_HV_NRUNSTATES; r++)
			a->ns[r] += v->ns[r];
		a->n++;
		/* The vcpus' own histograms are in TSC cycles. */
		if (v->wake_hist && hv->cpu_hz) {
			uint64_t coarse[XFX_NBUCKETS + 1];
			xfx_hist_coarsen(v->wake_hist, 1e9 / (double)hv->cpu_hz, coarse);
			acc_add(&a->wake, coarse, v->wake_hist->count, v->wake_ns);
		}
	}
	static const char *const state[XFLOW_HV_NRUNSTATES] = { "running", "runnable", "blocked", "offline" };
	xfx_snap_family(s, &f_xen_runstate);
	for (uint32_t slot = 0; slot <= MAX_NAMES; slot++)
		for (int r = 0; m->xen_acc[slot].n && r < XFLOW_HV_NRUNSTATES; r++) {
			char buf[XFX_LABEL_MAX + 1];
			xfx_snap_label(s, "domid", slot_name(m->xen_domains, slot, buf));
			xfx_snap_label(s, "state", state[r]);
			xfx_snap_seconds(s, m->xen_acc[slot].ns[r]);
		}
	xfx_snap_family(s, &f_xen_wake);
	for (uint32_t slot = 0; slot <= MAX_NAMES; slot++) {
		const struct hist_acc *w = &m->xen_acc[slot].wake;
		if (!w->n)
			continue;
		char buf[XFX_LABEL_MAX + 1];
		xfx_snap_label(s, "domid", slot_name(m->xen_domains, slot, buf));
		xfx_snap_hist(s, w->buckets, w->count, w->sum_ns);
	}
	one(s, &f_xen_records, hv->records);
	one(s, &f_xen_lost, hv->lost_records);
}

static void put_exporter(struct xft_metrics *m, struct xfx_snap *s)
{
	struct xfx_server_stats st;
	xfx_server_stats(m->srv, &st);
	xfx_snap_family(s, &f_start);
	xfx_snap_seconds(s, m->start_unix_ns);
	xfx_snap_family(s, &f_publish);
	xfx_snap_seconds(s, m->publish_ns);
	xfx_snap_family(s, &f_format);
	xfx_snap_seconds(s, st.last_format_ns);
	one(s, &f_bytes, st.last_bytes);
	one(s, &f_scrapes, st.scrapes);
	one(s, &f_conns, st.connections);
	one(s, &f_refused, st.refused);
	xfx_snap_family(s, &f_closed);
	xfx_snap_label(s, "reason", "shed");
	xfx_snap_u64(s, st.shed);
	xfx_snap_label(s, "reason", "request_timeout");
	xfx_snap_u64(s, st.timed_out);
}

/* --- the interface -------------------------------------------------------------- */

void xft_metrics_publish(struct xft_app *app)
{
	struct xft_metrics *m = app->metrics;
	if (!m)
		return;
	uint64_t t0 = xflow_monotonic_ns();
	struct xfx_snap *s = xfx_server_snap_begin(m->srv);
	xfx_snap_reset(s, m->host);
	put_model(app, s);
	put_hops(app, m, s);
	put_hop_states(app, m, s);
	put_sched(app, s);
	put_collectors(app, s);
	put_domains(app, m, s);
	put_aspects(app, m, s);
	put_hypervisor(app, m, s);
	put_exporter(m, s);
	xfx_server_snap_publish(m->srv, s);
	m->publish_ns = xflow_monotonic_ns() - t0;
}

int xft_metrics_start(struct xft_app *app, char *err, size_t errlen)
{
	const struct xft_config *cfg = &app->cfg;
	struct xft_metrics *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc;
	if (cfg->host[0])
		snprintf(m->host, sizeof(m->host), "%s", cfg->host);
	else if (gethostname(m->host, sizeof(m->host) - 1) < 0 || !m->host[0])
		snprintf(m->host, sizeof(m->host), "localhost");
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	m->start_unix_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	uint32_t max = cfg->metrics_max_hops;
	if ((rc = xfx_fold_new(max, &m->hops)) || (rc = xfx_fold_new(MAX_NAMES, &m->domains)) ||
	    (rc = xfx_fold_new(MAX_NAMES, &m->aspects)) || (rc = xfx_fold_new(MAX_NAMES, &m->xen_domains)) ||
	    !(m->hop_acc = calloc(max + 1, sizeof(*m->hop_acc))) ||
	    !(m->state_acc = calloc(max + 1, sizeof(*m->state_acc)))) {
		snprintf(err, errlen, "--listen: out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	struct xfx_server_opts o = { .max_connections = cfg->metrics_max_connections,
				     .max_per_address = cfg->metrics_max_per_address,
				     .request_timeout_ms = cfg->metrics_request_timeout_s * 1000,
				     .timeout_s = 10 };
	char why[512];
	if ((rc = xfx_listen_parse(cfg->listen, &o.addr, why, sizeof(why))) ||
	    (rc = xfx_server_start(&o, &m->srv, why, sizeof(why)))) {
		snprintf(err, errlen, "--listen %s: %s", cfg->listen, why);
		goto fail;
	}
	app->metrics = m;
	fprintf(stderr, "xflowtop: serving http://%s/metrics (host=\"%s\")\n", xfx_server_address(m->srv),
		m->host);
	xft_metrics_publish(app);
	return 0;
fail:
	app->metrics = m;
	xft_metrics_stop(app);
	return rc;
}

void xft_metrics_stop(struct xft_app *app)
{
	struct xft_metrics *m = app->metrics;
	if (!m)
		return;
	xfx_server_stop(m->srv);
	xfx_fold_free(m->hops);
	xfx_fold_free(m->domains);
	xfx_fold_free(m->aspects);
	xfx_fold_free(m->xen_domains);
	free(m->cache);
	free(m->hop_acc);
	free(m->state_acc);
	free(m);
	app->metrics = NULL;
}

const char *xft_metrics_address(const struct xft_app *app)
{
	return app->metrics ? xfx_server_address(app->metrics->srv) : NULL;
}
