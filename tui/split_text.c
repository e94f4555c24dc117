/*
 * The hop split in words and cells.  See tui/split_text.h.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tui/frame.h"
#include "tui/split_text.h"

uint64_t xft_split_total(const struct xft_split *s)
{
	uint64_t t = 0;
	for (int i = 0; i < XFT_NSTATES; i++) {
		if (s->ns[i] > UINT64_MAX - t)
			return UINT64_MAX;
		t += s->ns[i];
	}
	return t;
}

void xft_split_add(struct xft_split *acc, const struct xft_split *s)
{
	for (int i = 0; i < XFT_NSTATES; i++)
		acc->ns[i] = s->ns[i] > UINT64_MAX - acc->ns[i] ? UINT64_MAX : acc->ns[i] + s->ns[i];
	for (int r = 0; r < XFT_UNK_NREASONS; r++) {
		uint64_t *to = &acc->unknown_ns[r];
		*to = s->unknown_ns[r] > UINT64_MAX - *to ? UINT64_MAX : *to + s->unknown_ns[r];
	}
}

/* The biggest of @n times (ties to the earlier), -1 when all are 0. */
static int biggest_of(const uint64_t *ns, int n)
{
	int k = -1;
	for (int i = 0; i < n; i++)
		if (ns[i] && (k < 0 || ns[i] > ns[k]))
			k = i;
	return k;
}

#define MAX_PARTS 8
_Static_assert(XFT_NSTATES <= MAX_PARTS && XFT_UNK_NREASONS <= MAX_PARTS, "apportion()'s remainders");

/*
 * Share @units among @n parts in proportion to their time @ns, the
 * largest remainder method: each gets the whole part of its quota, and
 * what is left goes one by one to the biggest remainders.  The sum is
 * computed in double, which cannot overflow where the nanoseconds' sum
 * would.  Returns 0 (and all zero) when the parts are all empty.
 */
static int apportion_ns(const uint64_t *ns, int n, int units, int *out)
{
	double tot = 0, rem[MAX_PARTS];
	memset(out, 0, (size_t)n * sizeof(*out));
	for (int i = 0; i < n; i++)
		tot += (double)ns[i];
	if (tot <= 0 || units <= 0)
		return 0;
	int given = 0;
	for (int i = 0; i < n; i++) {
		double q = (double)ns[i] / tot * units;
		double f = floor(q);
		if (f > units)
			f = units;
		out[i] = (int)f;
		rem[i] = ns[i] ? q - f : -1; /* a part without time gets nothing */
		given += out[i];
	}
	for (; given < units; given++) {
		int k = -1;
		for (int i = 0; i < n; i++)
			if (rem[i] >= 0 && (k < 0 || rem[i] > rem[k]))
				k = i;
		if (k < 0)
			break;
		out[k]++;
		rem[k] = -1;
	}
	/* More units left than parts with a remainder (it cannot happen
	 * with exact arithmetic): the biggest part takes them. */
	if (given < units)
		out[biggest_of(ns, n)] += units - given;
	return 1;
}

static int apportion(const struct xft_split *s, int units, int out[XFT_NSTATES])
{
	return apportion_ns(s->ns, XFT_NSTATES, units, out);
}

void xft_split_percent(const struct xft_split *s, int pct[XFT_NSTATES])
{
	apportion(s, 100, pct);
}

char xft_state_glyph(enum xft_state st)
{
	static const char glyph[XFT_NSTATES] = {
		[XFT_ST_RUN] = '=',     [XFT_ST_WAIT] = '#',    [XFT_ST_NOTIFY] = '~', [XFT_ST_BACKEND] = '+',
		[XFT_ST_BLOCKED] = '-', [XFT_ST_OFFLINE] = '.', [XFT_ST_XEN] = '*',    [XFT_ST_UNKNOWN] = '?',
	};
	return (unsigned)st < XFT_NSTATES ? glyph[st] : ' ';
}

int xft_split_cells(const struct xft_split *s, int width, unsigned char *cells)
{
	int n[XFT_NSTATES];
	if (!apportion(s, width, n))
		return 0;
	int k = 0;
	for (int i = 0; i < XFT_NSTATES; i++)
		for (int c = 0; c < n[i]; c++)
			cells[k++] = (unsigned char)i;
	return k;
}

size_t xft_split_bar_text(const struct xft_split *s, int width, char *buf, size_t len)
{
	if (!len)
		return 0;
	unsigned char cells[512];
	if (width > (int)sizeof(cells))
		width = (int)sizeof(cells);
	if ((size_t)width >= len)
		width = (int)len - 1;
	int n = xft_split_cells(s, width, cells);
	for (int i = 0; i < n; i++)
		buf[i] = xft_state_glyph(cells[i]);
	buf[n] = '\0';
	return (size_t)n;
}

/* The indices of the non-zero of @n times, biggest first (by time, not by
 * rounded share), ties in index order: when a line is cut, what is cut is
 * the least.  Returns how many. */
static int order_by_time(const uint64_t *ns, int n, int *order)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (ns[i])
			order[k++] = i;
	for (int i = 1; i < k; i++)
		for (int m = i; m > 0 && ns[order[m]] > ns[order[m - 1]]; m--) {
			int t = order[m];
			order[m] = order[m - 1];
			order[m - 1] = t;
		}
	return k;
}

/* Whether a line of @end characters fits @width (< 0: any) and a buffer
 * of @len bytes with its terminator. */
static int fits(size_t end, int width, size_t len)
{
	return (width < 0 || end <= (size_t)width) && end < len;
}

size_t xft_split_percent_text(const struct xft_split *s, int width, char *buf, size_t len)
{
	if (!len)
		return 0;
	buf[0] = '\0';
	int pct[XFT_NSTATES], order[XFT_NSTATES];
	if (!apportion(s, 100, pct))
		return 0;
	int n = order_by_time(s->ns, XFT_NSTATES, order);
	size_t o = 0;
	for (int i = 0; i < n; i++) {
		int st = order[i];
		/* The '?' says why by its two biggest reasons, by one when
		 * two do not fit, by none when one does not: the share comes
		 * first, and all five are in the JSON and the metrics. */
		int most = st == XFT_ST_UNKNOWN ? 2 : 0;
		size_t il;
		char item[128];
		for (;; most--) {
			char reasons[64], why[68] = "";
			if (most > 0 && xft_unknown_reasons_text(s, most, reasons, sizeof(reasons)))
				snprintf(why, sizeof(why), " (%s)", reasons);
			if (pct[st])
				snprintf(item, sizeof(item), "%s%c%s %d%%%s", o ? " " : "", xft_state_glyph(st),
					 st == XFT_ST_UNKNOWN ? "unknown" : xft_state_name(st), pct[st], why);
			else
				snprintf(item, sizeof(item), "%s%c%s <1%%%s", o ? " " : "", xft_state_glyph(st),
					 st == XFT_ST_UNKNOWN ? "unknown" : xft_state_name(st), why);
			il = strlen(item);
			if (most <= 0 || fits(o + il, width, len))
				break;
		}
		if (!fits(o + il, width, len))
			break;
		memcpy(buf + o, item, il + 1);
		o += il;
	}
	return o;
}

void xft_vcpu_name(uint16_t domain, uint16_t vcpu, char *buf, size_t len)
{
	if (domain == 32767) /* DOMID_IDLE */
		snprintf(buf, len, "idlev%u", vcpu);
	else
		snprintf(buf, len, "d%uv%u", domain, vcpu);
}

int xft_split_biggest(const struct xft_split *s)
{
	return biggest_of(s->ns, XFT_NSTATES);
}

size_t xft_unknown_reasons_text(const struct xft_split *s, int most, char *buf, size_t len)
{
	if (!len)
		return 0;
	buf[0] = '\0';
	int pct[XFT_NSTATES], share[XFT_UNK_NREASONS], order[XFT_UNK_NREASONS];
	if (!s->ns[XFT_ST_UNKNOWN] || !apportion(s, 100, pct))
		return 0;
	/* The '?' share shared again among the reasons, so that they add up
	 * to it as the states add up to 100 (all "<1%" when it is). */
	apportion_ns(s->unknown_ns, XFT_UNK_NREASONS, pct[XFT_ST_UNKNOWN], share);
	int n = order_by_time(s->unknown_ns, XFT_UNK_NREASONS, order);
	size_t o = 0;
	for (int i = 0; i < n && i < most; i++) {
		const char *name = xft_unknown_reason_name((enum xft_unknown_reason)order[i]);
		int w = share[order[i]] ? snprintf(buf + o, len - o, "%s%s %d%%", i ? ", " : "", name, share[order[i]])
					: snprintf(buf + o, len - o, "%s%s <1%%", i ? ", " : "", name);
		if (w < 0 || (size_t)w >= len - o) {
			buf[o] = '\0'; /* whole items only */
			break;
		}
		o += (size_t)w;
	}
	return o;
}

/* snprintf's length, kept within the buffer it wrote. */
static size_t written(int n, size_t len)
{
	if (n < 0 || !len)
		return 0;
	return (size_t)n < len ? (size_t)n : len - 1;
}

/* What each reason of '?' says, after "not attributable". */
static const char *const unknown_why[XFT_UNK_NREASONS] = {
	[XFT_UNK_NO_TRACE] = "the trace has no timeline of its vCPU",
	[XFT_UNK_LOST] = "the trace lost its vCPU's state (records lost)",
	[XFT_UNK_CLOCK] = "within the clock error of a boundary",
	[XFT_UNK_OLD] = "older than its vCPU's timeline keeps",
	[XFT_UNK_EARLY] = "split before the trace reached it",
};

/* "1.20ms not attributable: within the clock error of a boundary" when
 * one reason is all of the '?' (@d its time in words), "1.20ms not
 * attributable, 800.0us of it within ..." when it is the biggest of
 * several, "1.20ms not attributable (?)" when no reason is known. */
static int unknown_sentence(const struct xft_split *s, const char *d, char *buf, size_t len)
{
	int r = biggest_of(s->unknown_ns, XFT_UNK_NREASONS);
	if (r < 0)
		return snprintf(buf, len, "%s not attributable (?)", d);
	if (s->unknown_ns[r] >= s->ns[XFT_ST_UNKNOWN])
		return snprintf(buf, len, "%s not attributable: %s", d, unknown_why[r]);
	char part[16];
	xft_format_ns(s->unknown_ns[r], part, sizeof(part));
	return snprintf(buf, len, "%s not attributable, %s of it %s", d, part, unknown_why[r]);
}

size_t xft_split_state_text(const struct xft_split *s, const struct xft_culprit *c, enum xft_state st,
			    const char *receiver, char *buf, size_t len)
{
	if (!len)
		return 0;
	buf[0] = '\0';
	if ((unsigned)st >= XFT_NSTATES || !s->ns[st])
		return 0;
	char d[16], who[24], part[16];
	xft_format_ns(s->ns[st], d, sizeof(d));
	const char *rx = receiver && *receiver ? receiver : "the receiver";
	int n = 0;
	switch (st) {
	case XFT_ST_RUN:
		n = snprintf(buf, len, "ran %s on its vCPU", d);
		break;
	case XFT_ST_WAIT:
		if (!c || !c->wait_ns) {
			n = snprintf(buf, len, "waited %s for a physical CPU", d);
			break;
		}
		xft_vcpu_name(c->domain, c->vcpu, who, sizeof(who));
		if (c->wait_ns < s->ns[st]) {
			xft_format_ns(c->wait_ns, part, sizeof(part));
			n = snprintf(buf, len, "waited %s for pCPU%u, which ran %s for %s of it", d, c->pcpu, who,
				     part);
		} else {
			n = snprintf(buf, len, "waited %s for pCPU%u, which ran %s", d, c->pcpu, who);
		}
		break;
	case XFT_ST_NOTIFY:
		n = snprintf(buf, len, "notify %s until %s woke", d, rx);
		break;
	case XFT_ST_BACKEND:
		n = snprintf(buf, len, "backend %s: %s ran until the hop ended", d, rx);
		break;
	case XFT_ST_BLOCKED:
		n = snprintf(buf, len, "blocked %s after its wake", d);
		break;
	case XFT_ST_OFFLINE:
		n = snprintf(buf, len, "offline %s (paused, or parked by a cap)", d);
		break;
	case XFT_ST_XEN:
		n = snprintf(buf, len, "%s in Xen itself", d);
		break;
	default:
		n = unknown_sentence(s, d, buf, len);
		break;
	}
	return written(n, len);
}

int xft_split_cause_text(const struct xft_split *s, const struct xft_culprit *c, const char *receiver,
			 char *buf, size_t len)
{
	int st = xft_split_biggest(s);
	if (len)
		buf[0] = '\0';
	if (st >= 0)
		xft_split_state_text(s, c, (enum xft_state)st, receiver, buf, len);
	return st;
}

int xft_flow_biggest_gap(const struct xft_flow_summary *f, uint32_t *gap, int *state)
{
	if (!f->gaps || f->npoints < 2)
		return -1;
	uint64_t best = 0;
	int found = -1;
	for (uint32_t g = 0; g + 1 < f->npoints; g++)
		for (int i = 0; i < XFT_NSTATES; i++)
			if (f->gaps[g].split.ns[i] > best) {
				best = f->gaps[g].split.ns[i];
				*gap = g;
				*state = i;
				found = 0;
			}
	return found;
}

int xft_flow_cause_text(const struct xft_flow_summary *f, struct xft_sites *sites, char *buf, size_t len)
{
	uint32_t g;
	int st;
	if (len)
		buf[0] = '\0';
	if (xft_flow_biggest_gap(f, &g, &st) < 0)
		return -1;
	xft_split_state_text(&f->gaps[g].split, &f->gaps[g].culprit, (enum xft_state)st,
			     xft_sites_domain(sites, f->path[g + 1].domain), buf, len);
	return (int)g;
}

size_t xft_culprit_text(const struct xft_culprit *c, uint64_t wait_ns, char *buf, size_t len)
{
	if (!len)
		return 0;
	buf[0] = '\0';
	if (!wait_ns)
		return 0;
	if (!c || !c->wait_ns)
		return written(snprintf(buf, len, "waited, but no switch record names the holder"), len);
	char who[24];
	xft_vcpu_name(c->domain, c->vcpu, who, sizeof(who));
	double share = c->wait_ns >= wait_ns ? 100.0 : 100.0 * (double)c->wait_ns / (double)wait_ns;
	return written(snprintf(buf, len, "waited for pCPU%u, which ran %s (%.0f%% of the wait)", c->pcpu, who, share),
		       len);
}

size_t xft_hop_culprits_text(const struct xft_hop_split *sp, char *buf, size_t len)
{
	char a[128], b[128];
	if (!len)
		return 0;
	buf[0] = '\0';
	xft_culprit_text(&sp->culprit_all, sp->all.ns[XFT_ST_WAIT], a, sizeof(a));
	xft_culprit_text(&sp->culprit_tail, sp->tail.ns[XFT_ST_WAIT], b, sizeof(b));
	if (!a[0] && !b[0])
		return 0;
	return written(snprintf(buf, len, "%s%s%s", a, a[0] && b[0] ? "; p99+: " : b[0] ? "p99+: " : "", b), len);
}

size_t xft_sched_status_text(const struct xft_sched_status *st, char *buf, size_t len)
{
	if (!len)
		return 0;
	if (!st || !st->joined)
		return written(snprintf(buf, len, "sched: not joined"), len);
	if (st->clock_error_ns == UINT64_MAX)
		return written(snprintf(buf, len, "sched: joined, clock not yet measured"), len);
	char e[16], lost[40] = "";
	if (st->trace_lost)
		snprintf(lost, sizeof(lost), ", lost %" PRIu64, st->trace_lost);
	if (st->clock_bound_ns != UINT64_MAX) {
		xft_format_ns(st->clock_bound_ns, e, sizeof(e));
		return written(snprintf(buf, len, "sched clock \u00b1%s%s", e, lost), len);
	}
	xft_format_ns(st->clock_error_ns, e, sizeof(e));
	return written(snprintf(buf, len, "sched clock \u2265%s off, not bounded%s", e, lost), len);
}

size_t xft_sched_lost_text(const struct xft_sched_status *st, char *buf, size_t len)
{
	if (!len)
		return 0;
	buf[0] = '\0';
	if (!st || !st->trace_lost)
		return 0;
	const struct {
		uint64_t n;
		const char *what;
	} why[] = {
		{ st->lost_records, "lost before the join" },
		{ st->too_old, "splits older than the timelines keep" },
		{ st->no_vcpu_room, "events of vCPUs beyond the limit" },
	};
	size_t at = 0;
	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++)
		if (why[i].n)
			at += written(snprintf(buf + at, len - at, "%s%" PRIu64 " %s", at ? ", " : " (", why[i].n,
					       why[i].what),
				      len - at);
	if (at)
		at += written(snprintf(buf + at, len - at, ")"), len - at);
	return at;
}

size_t xft_sched_counts_text(const struct xft_sched_status *st, char *buf, size_t len)
{
	char why[160];
	if (!len)
		return 0;
	buf[0] = '\0';
	if (!st)
		return 0;
	xft_sched_lost_text(st, why, sizeof(why));
	int n = snprintf(buf, len,
			 "%" PRIu64 " scheduler records, %" PRIu64 " lost%s; %" PRIu64 " hop samples split, %" PRIu64
			 " waiting for the trace",
			 st->trace_records, st->trace_lost, why, st->hops_split, st->hops_pending);
	size_t at = written(n, len);
	if (st->split_early)
		at += written(snprintf(buf + at, len - at, ", %" PRIu64 " split before the trace came (the queue was full)",
				       st->split_early),
			      len - at);
	if (st->xen_idle && at < len)
		at += written(snprintf(buf + at, len - at, ", %" PRIu64 " interrupts on pCPUs running no vCPU (in no hop)",
				       st->xen_idle),
			      len - at);
	return at;
}

size_t xft_sched_batch_text(const struct xft_sched_status *st, char *buf, size_t len)
{
	if (!len)
		return 0;
	if (!st || !st->joined)
		return written(snprintf(buf, len, "sched not joined"), len);
	size_t at;
	if (st->clock_error_ns == UINT64_MAX)
		at = written(snprintf(buf, len, "sched joined, clock not measured yet"), len);
	else if (st->clock_bound_ns != UINT64_MAX)
		at = written(snprintf(buf, len, "sched joined, clock \u00b1%.1f \u00b5s", (double)st->clock_bound_ns / 1e3),
			     len);
	else
		at = written(snprintf(buf, len, "sched joined, clock \u2265%.1f \u00b5s off, not bounded",
				      (double)st->clock_error_ns / 1e3),
			     len);
	char why[160];
	xft_sched_lost_text(st, why, sizeof(why));
	at += written(snprintf(buf + at, len - at,
			       "; trace records %" PRIu64 ", lost %" PRIu64 "%s; hops split %" PRIu64 ", pending %" PRIu64
			       ", split early %" PRIu64,
			       st->trace_records, st->trace_lost, why, st->hops_split, st->hops_pending, st->split_early),
		      len - at);
	return at;
}
