/*
 * Rows, columns, sorting and filtering.  See tui/frame.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/frame.h"
#include "xflow/collector.h"

void xft_format_ns(uint64_t ns, char *buf, size_t len)
{
	double v = (double)ns;
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 10000)
		snprintf(buf, len, "%.2fus", v / 1e3);
	else if (ns < 999950)
		snprintf(buf, len, "%.1fus", v / 1e3);
	else if (ns < 9995000)
		snprintf(buf, len, "%.2fms", v / 1e6);
	else if (ns < 999950000)
		snprintf(buf, len, "%.1fms", v / 1e6);
	else if (ns < UINT64_C(99995000000))
		snprintf(buf, len, "%.2fs", v / 1e9);
	else
		snprintf(buf, len, "%.0fs", v / 1e9);
}

/* --- hop columns ---------------------------------------------------------- */

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b))

/* "domain:function", the domain always by its name: next to rows that
 * name it, a number is a different domain to the eye.  A cell too narrow
 * cuts the function's end (the table is sized so that it seldom is). */
static void print_point(const char *dom, const char *fn, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%s", dom, fn);
}

static int hop_cmp_from(const void *a, const void *b)
{
	const struct xft_hop_row *x = a, *y = b;
	int c = strcmp(x->from_dom, y->from_dom);
	return c ? c : strcmp(x->from->function, y->from->function);
}
static int hop_cmp_to(const void *a, const void *b)
{
	const struct xft_hop_row *x = a, *y = b;
	int c = strcmp(x->to_dom, y->to_dom);
	return c ? c : strcmp(x->to->function, y->to->function);
}
#define HOP_NUM_CMP(field)                                            \
	static int hop_cmp_##field(const void *a, const void *b)      \
	{                                                             \
		const struct xft_hop_row *x = a, *y = b;              \
		return CMP(x->field, y->field);                       \
	}
HOP_NUM_CMP(count)
HOP_NUM_CMP(p50)
HOP_NUM_CMP(p90)
HOP_NUM_CMP(p99)
HOP_NUM_CMP(max)
HOP_NUM_CMP(total_ns)

static void hop_print_from(const void *row, char *buf, size_t len, int width)
{
	const struct xft_hop_row *r = row;
	(void)width;
	print_point(r->from_dom, r->from->function, buf, len);
}
static void hop_print_to(const void *row, char *buf, size_t len, int width)
{
	const struct xft_hop_row *r = row;
	(void)width;
	print_point(r->to_dom, r->to->function, buf, len);
}
static void hop_print_count(const void *row, char *buf, size_t len, int width)
{
	const struct xft_hop_row *r = row;
	if (snprintf(buf, len, "%" PRIu64, r->count) > width) {
		if (r->count < 10000000)
			snprintf(buf, len, "%" PRIu64 "K", r->count / 1000);
		else
			snprintf(buf, len, "%" PRIu64 "M", r->count / 1000000);
	}
}
#define HOP_NS_PRINT(field)                                                               \
	static void hop_print_##field(const void *row, char *buf, size_t len, int width)  \
	{                                                                                 \
		(void)width;                                                              \
		xft_format_ns(((const struct xft_hop_row *)row)->field, buf, len);       \
	}
HOP_NS_PRINT(p50)
HOP_NS_PRINT(p90)
HOP_NS_PRINT(p99)
HOP_NS_PRINT(max)
static void hop_print_total(const void *row, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%.1f%%", ((const struct xft_hop_row *)row)->share * 100.0);
}

static const struct xft_column hop_cols[XFT_HCOL_N] = {
	[XFT_HCOL_FROM] = { XFT_HCOL_FROM, "from", "FROM", 0, 8, 0, 0, hop_cmp_from, hop_print_from },
	[XFT_HCOL_TO] = { XFT_HCOL_TO, "to", "TO", 0, 8, 0, 0, hop_cmp_to, hop_print_to },
	[XFT_HCOL_COUNT] = { XFT_HCOL_COUNT, "count", "COUNT", 7, 7, 1, 0, hop_cmp_count, hop_print_count },
	[XFT_HCOL_P50] = { XFT_HCOL_P50, "p50", "P50", 7, 7, 1, 0, hop_cmp_p50, hop_print_p50 },
	[XFT_HCOL_P90] = { XFT_HCOL_P90, "p90", "P90", 7, 7, 1, 100, hop_cmp_p90, hop_print_p90 },
	[XFT_HCOL_P99] = { XFT_HCOL_P99, "p99", "P99", 7, 7, 1, 0, hop_cmp_p99, hop_print_p99 },
	[XFT_HCOL_MAX] = { XFT_HCOL_MAX, "max", "MAX", 7, 7, 1, 90, hop_cmp_max, hop_print_max },
	[XFT_HCOL_TOTAL] = { XFT_HCOL_TOTAL, "total", "TIME%", 6, 6, 1, 0, hop_cmp_total_ns, hop_print_total },
};

const struct xft_table xft_hop_table = { hop_cols, XFT_HCOL_N, XFT_HCOL_TOTAL, 1 };

/* --- flow columns ------------------------------------------------------- */

static int flow_cmp_id(const void *a, const void *b)
{
	const struct xft_flow_row *x = a, *y = b;
	return CMP(x->s.id, y->s.id);
}
static int flow_cmp_origin(const void *a, const void *b)
{
	const struct xft_flow_row *x = a, *y = b;
	return strcmp(x->origin_dom, y->origin_dom);
}
static int flow_cmp_duration(const void *a, const void *b)
{
	const struct xft_flow_row *x = a, *y = b;
	return CMP(x->duration_ns, y->duration_ns);
}
static int flow_cmp_points(const void *a, const void *b)
{
	const struct xft_flow_row *x = a, *y = b;
	return CMP(x->s.npoints + x->s.points_lost, y->s.npoints + y->s.points_lost);
}
static int flow_cmp_domains(const void *a, const void *b)
{
	const struct xft_flow_row *x = a, *y = b;
	return CMP(x->ndomains, y->ndomains);
}
static int flow_cmp_first(const void *a, const void *b)
{
	const struct xft_flow_row *x = a, *y = b;
	return strcmp(x->first->function, y->first->function);
}
static int flow_cmp_last(const void *a, const void *b)
{
	const struct xft_flow_row *x = a, *y = b;
	return strcmp(x->last->function, y->last->function);
}
static int flow_cmp_end(const void *a, const void *b)
{
	const struct xft_flow_row *x = a, *y = b;
	return CMP(x->s.expired, y->s.expired);
}
static void flow_print_id(const void *row, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%" PRIu64, ((const struct xft_flow_row *)row)->s.id);
}
static void flow_print_origin(const void *row, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%s", ((const struct xft_flow_row *)row)->origin_dom);
}
static void flow_print_duration(const void *row, char *buf, size_t len, int width)
{
	(void)width;
	xft_format_ns(((const struct xft_flow_row *)row)->duration_ns, buf, len);
}
static void flow_print_points(const void *row, char *buf, size_t len, int width)
{
	const struct xft_flow_row *r = row;
	(void)width;
	snprintf(buf, len, "%" PRIu32 "%s", r->s.npoints + r->s.points_lost, r->s.points_lost ? "+" : "");
}
static void flow_print_domains(const void *row, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%u", ((const struct xft_flow_row *)row)->ndomains);
}
static void flow_print_first(const void *row, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%s", ((const struct xft_flow_row *)row)->first->function);
}
static void flow_print_last(const void *row, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%s", ((const struct xft_flow_row *)row)->last->function);
}
static void flow_print_end(const void *row, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%s", ((const struct xft_flow_row *)row)->s.expired ? "expired" : "quit");
}

static const struct xft_column flow_cols[XFT_FCOL_N] = {
	[XFT_FCOL_ID] = { XFT_FCOL_ID, "id", "FLOW", 8, 6, 1, 0, flow_cmp_id, flow_print_id },
	[XFT_FCOL_ORIGIN] = { XFT_FCOL_ORIGIN, "origin", "ORIGIN", 8, 6, 0, 0, flow_cmp_origin, flow_print_origin },
	[XFT_FCOL_DURATION] = { XFT_FCOL_DURATION, "duration", "TIME", 7, 7, 1, 0, flow_cmp_duration, flow_print_duration },
	[XFT_FCOL_POINTS] = { XFT_FCOL_POINTS, "points", "PTS", 4, 4, 1, 0, flow_cmp_points, flow_print_points },
	[XFT_FCOL_DOMAINS] = { XFT_FCOL_DOMAINS, "domains", "DOMS", 4, 4, 1, 0, flow_cmp_domains, flow_print_domains },
	[XFT_FCOL_FIRST] = { XFT_FCOL_FIRST, "first", "FIRST", 0, 8, 0, 0, flow_cmp_first, flow_print_first },
	[XFT_FCOL_LAST] = { XFT_FCOL_LAST, "last", "LAST", 0, 8, 0, 0, flow_cmp_last, flow_print_last },
	[XFT_FCOL_END] = { XFT_FCOL_END, "end", "END", 7, 4, 0, 0, flow_cmp_end, flow_print_end },
};

const struct xft_table xft_flow_table = { flow_cols, XFT_FCOL_N, XFT_FCOL_DURATION, 1 };

static int col_hidden(const struct xft_column *c, int total)
{
	return c->hide_below && total < c->hide_below;
}

/* Widths for @total characters; flexible column i wants @want[i] (NULL:
 * each wants XFT_FLEX_MAX).  The flexible columns share what the fixed
 * ones leave, the narrowest wants served first, none wider than it wants
 * nor narrower than its minimum. */
static void table_widths(const struct xft_table *t, int total, const int *want, int *w)
{
	int fixed = 0, nflex = 0, shown = 0;
	for (size_t i = 0; i < t->ncols; i++) {
		if (col_hidden(&t->cols[i], total)) {
			w[i] = 0; /* hidden: no room at this width */
			continue;
		}
		w[i] = t->cols[i].width;
		fixed += w[i] + (shown++ ? 1 : 0);
		if (!w[i]) {
			w[i] = -1; /* to be given */
			nflex++;
		}
	}
	int left = total - fixed;
	for (; nflex; nflex--) {
		size_t k = t->ncols;
		for (size_t i = 0; i < t->ncols; i++)
			if (w[i] < 0 && (k == t->ncols || (want && want[i] < want[k])))
				k = i;
		/* Wider than a long name helps nobody: keep the numbers near
		 * the names on wide terminals. */
		int share = left / nflex, cap = want ? want[k] : XFT_FLEX_MAX;
		if (share > cap)
			share = cap;
		w[k] = share > t->cols[k].min_width ? share : t->cols[k].min_width;
		left -= w[k];
	}
}

void xft_table_widths(const struct xft_table *t, int total, int *w)
{
	table_widths(t, total, NULL, w);
}

int xft_table_fit(const struct xft_table *t, int total, const void *rows, size_t size, const uint32_t *order,
		  size_t n, int *w)
{
	int want[XFT_MAX_COLS], need = 0, shown = 0;
	for (size_t i = 0; i < t->ncols; i++) {
		const struct xft_column *c = &t->cols[i];
		if (col_hidden(c, total))
			continue;
		need += shown++ ? 1 : 0;
		if (c->width) {
			need += c->width;
			continue;
		}
		want[i] = (int)strlen(c->header);
		for (size_t r = 0; r < n; r++) {
			char buf[256];
			buf[0] = '\0';
			c->print((const char *)rows + order[r] * size, buf, sizeof(buf), (int)sizeof(buf) - 1);
			int len = (int)strlen(buf);
			if (len > want[i])
				want[i] = len;
		}
		if (want[i] < c->min_width)
			want[i] = c->min_width;
		need += want[i];
	}
	table_widths(t, total, want, w);
	return need;
}

int xft_table_find(const struct xft_table *t, const char *name)
{
	for (size_t i = 0; i < t->ncols; i++)
		if (!strcasecmp(t->cols[i].name, name))
			return (int)i;
	return -1;
}

/* --- filter ------------------------------------------------------------- */

void xft_filter_parse(struct xft_filter *f, const char *text)
{
	memset(f, 0, sizeof(*f));
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", text ? text : "");
	for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w && f->n < XFT_FILTER_TERMS;
	     w = strtok_r(NULL, " \t", &save)) {
		static const struct {
			const char *prefix;
			int field;
		} pre[] = {
			{ "domain:", XFT_FIELD_DOMAIN },   { "dom:", XFT_FIELD_DOMAIN },
			{ "d:", XFT_FIELD_DOMAIN },        { "function:", XFT_FIELD_FUNCTION },
			{ "func:", XFT_FIELD_FUNCTION },   { "fn:", XFT_FIELD_FUNCTION },
			{ "file:", XFT_FIELD_FILE },       { "f:", XFT_FIELD_FILE },
		};
		int field = XFT_FIELD_ANY;
		for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
			if (!strncasecmp(w, pre[i].prefix, strlen(pre[i].prefix))) {
				field = pre[i].field;
				w += strlen(pre[i].prefix);
				break;
			}
		if (!*w)
			continue;
		f->t[f->n].field = field;
		snprintf(f->t[f->n].word, sizeof(f->t[f->n].word), "%s", w);
		f->n++;
	}
}

static int term_match(int field, const char *word, const char *dom, const struct xft_site *s)
{
	if (!s)
		return 0;
	if ((field == XFT_FIELD_ANY || field == XFT_FIELD_DOMAIN) && dom && strcasestr(dom, word))
		return 1;
	if ((field == XFT_FIELD_ANY || field == XFT_FIELD_FUNCTION) && strcasestr(s->function, word))
		return 1;
	if ((field == XFT_FIELD_ANY || field == XFT_FIELD_FILE) && strcasestr(s->file, word))
		return 1;
	return 0;
}

int xft_filter_site(const struct xft_filter *f, const char *dom, const struct xft_site *s,
		    const char *dom2, const struct xft_site *s2)
{
	for (unsigned i = 0; i < f->n; i++)
		if (!term_match(f->t[i].field, f->t[i].word, dom, s) &&
		    !term_match(f->t[i].field, f->t[i].word, dom2, s2))
			return 0;
	return 1;
}

int xft_filter_hop(const struct xft_filter *f, const struct xft_hop_row *r)
{
	return xft_filter_site(f, r->from_dom, r->from, r->to_dom, r->to);
}

int xft_filter_flow(const struct xft_filter *f, const struct xft_flow_row *r,
		    struct xft_sites *sites)
{
	/* Every word must match some point of the path. */
	for (unsigned i = 0; i < f->n; i++) {
		int hit = 0;
		for (uint32_t p = 0; p < r->s.npoints && !hit; p++) {
			const struct xft_point *pt = &r->s.path[p];
			hit = term_match(f->t[i].field, f->t[i].word, xft_sites_domain(sites, pt->domain),
					 xft_sites_get(sites, pt->domain, pt->site));
		}
		if (!hit)
			return 0;
	}
	return 1;
}

/* --- frame -------------------------------------------------------------- */

int xft_frame_init(struct xft_frame *f, const struct xft_agg_limits *l)
{
	memset(f, 0, sizeof(*f));
	f->hops_cap = l->max_hops;
	f->flows_cap = l->top_k;
	f->max_path = l->max_path;
	f->hops = calloc(f->hops_cap, sizeof(*f->hops));
	f->cache = calloc(f->hops_cap, sizeof(*f->cache));
	f->row_count = calloc(f->hops_cap, sizeof(*f->row_count));
	f->hop_order = calloc(f->hops_cap, sizeof(*f->hop_order));
	f->flows = calloc(f->flows_cap, sizeof(*f->flows));
	f->flow_order = calloc(f->flows_cap, sizeof(*f->flow_order));
	f->points = calloc((size_t)f->flows_cap * f->max_path, sizeof(*f->points));
	f->gaps = calloc((size_t)f->flows_cap * f->max_path, sizeof(*f->gaps));
	if (!f->hops || !f->cache || !f->row_count || !f->hop_order || !f->flows ||
	    !f->flow_order || !f->points || !f->gaps) {
		xft_frame_fini(f);
		return -ENOMEM;
	}
	return 0;
}

void xft_frame_fini(struct xft_frame *f)
{
	free(f->hops);
	free(f->cache);
	free(f->row_count);
	free(f->hop_order);
	free(f->flows);
	free(f->flow_order);
	free(f->points);
	free(f->gaps);
	memset(f, 0, sizeof(*f));
}

void xft_frame_build(struct xft_frame *f, const struct xft_agg *a, struct xft_sites *sites)
{
	size_t n;
	const struct xft_hop *hops = xft_agg_hops(a, &n);
	if (n > f->hops_cap)
		n = f->hops_cap;
	f->st = *xft_agg_stats(a);
	f->sched = *xft_agg_sched_status(a);
	f->total_ns = 0;
	for (size_t i = 0; i < n; i++)
		f->total_ns += hops[i].total_ns;
	for (size_t i = 0; i < n; i++) {
		const struct xft_hop *h = &hops[i];
		struct xft_hop_row *c = &f->cache[i];
		/* Quantiles walk the histogram: only for hops that moved. */
		if (f->row_count[i] != h->count || !c->from) {
			memset(c, 0, sizeof(*c));
			c->hop = (uint32_t)i;
			c->from_domain = h->key.from_domain;
			c->to_domain = h->key.to_domain;
			c->from = xft_sites_get(sites, h->key.from_domain, h->from_site);
			c->to = xft_sites_get(sites, h->key.to_domain, h->to_site);
			c->count = h->count;
			c->total_ns = h->total_ns;
			c->min = h->hist.count ? h->hist.min : 0;
			c->p50 = xflow_hist_quantile(&h->hist, 0.50);
			c->p90 = xflow_hist_quantile(&h->hist, 0.90);
			c->p99 = xflow_hist_quantile(&h->hist, 0.99);
			c->p999 = xflow_hist_quantile(&h->hist, 0.999);
			c->max = h->hist.max;
			c->mean = h->count ? h->total_ns / h->count : 0;
			f->row_count[i] = h->count;
		}
		/* Domain names may arrive late (domain_info): look them up each time. */
		c->from_dom = xft_sites_domain(sites, c->from_domain);
		c->to_dom = xft_sites_domain(sites, c->to_domain);
		c->share = f->total_ns ? (double)c->total_ns / (double)f->total_ns : 0;
		/* A hop's samples are split once every pCPU's trace has
		 * passed them, after they were counted: copied each time. */
		c->split = h->split;
		f->hops[i] = *c;
	}
	f->nhops = n;

	const struct xft_flow_summary *top;
	size_t nf = xft_agg_slowest(a, &top, f->flows_cap);
	for (size_t i = 0; i < nf; i++) {
		struct xft_flow_row *r = &f->flows[i];
		r->s = top[i];
		uint32_t np = top[i].npoints < f->max_path ? top[i].npoints : f->max_path;
		r->s.npoints = np;
		r->s.path = &f->points[i * f->max_path];
		if (np)
			memcpy(r->s.path, top[i].path, np * sizeof(*r->s.path));
		r->s.gaps = NULL;
		if (top[i].gaps && np > 1) {
			r->s.gaps = &f->gaps[i * f->max_path];
			memcpy(r->s.gaps, top[i].gaps, (np - 1) * sizeof(*r->s.gaps));
		}
		r->duration_ns = top[i].end_ns - top[i].start_ns;
		r->origin_dom = xft_sites_domain(sites, top[i].origin_domain);
		r->first = np ? xft_sites_get(sites, r->s.path[0].domain, r->s.path[0].site) : &sites->other;
		r->last = np ? xft_sites_get(sites, r->s.path[np - 1].domain, r->s.path[np - 1].site)
			     : &sites->other;
		uint16_t seen[16];
		unsigned ns = 0;
		for (uint32_t p = 0; p < np; p++) {
			unsigned k;
			for (k = 0; k < ns && seen[k] != r->s.path[p].domain; k++)
				;
			if (k == ns && ns < 16)
				seen[ns++] = r->s.path[p].domain;
		}
		r->ndomains = ns;
	}
	f->nflows = nf;
}

struct sort_ctx {
	int (*compare)(const void *, const void *);
	const void *rows;
	size_t size;
	int desc;
};

static int order_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	uint32_t i = *(const uint32_t *)a, k = *(const uint32_t *)b;
	int r = c->compare((const char *)c->rows + i * c->size, (const char *)c->rows + k * c->size);
	if (c->desc)
		r = -r;
	return r ? r : CMP(i, k);
}

void xft_frame_order(struct xft_frame *f, const struct xft_filter *flt, struct xft_sites *sites,
		     int hop_col, int hop_desc, int flow_col, int flow_desc)
{
	struct xft_filter none = { 0 };
	if (!flt)
		flt = &none;
	if (hop_col < 0 || hop_col >= (int)xft_hop_table.ncols)
		hop_col = xft_hop_table.default_sort, hop_desc = xft_hop_table.default_desc;
	if (flow_col < 0 || flow_col >= (int)xft_flow_table.ncols)
		flow_col = xft_flow_table.default_sort, flow_desc = xft_flow_table.default_desc;
	f->nhop_shown = 0;
	for (size_t i = 0; i < f->nhops; i++)
		if (xft_filter_hop(flt, &f->hops[i]))
			f->hop_order[f->nhop_shown++] = (uint32_t)i;
	struct sort_ctx hc = { xft_hop_table.cols[hop_col].compare, f->hops, sizeof(*f->hops), hop_desc };
	qsort_r(f->hop_order, f->nhop_shown, sizeof(uint32_t), order_cmp, &hc);
	f->nflow_shown = 0;
	for (size_t i = 0; i < f->nflows; i++)
		if (xft_filter_flow(flt, &f->flows[i], sites))
			f->flow_order[f->nflow_shown++] = (uint32_t)i;
	struct sort_ctx fc = { xft_flow_table.cols[flow_col].compare, f->flows, sizeof(*f->flows),
			       flow_desc };
	qsort_r(f->flow_order, f->nflow_shown, sizeof(uint32_t), order_cmp, &fc);
}

void xft_table_sort(const struct xft_table *t, int col, int desc, const void *rows, size_t size,
		    uint32_t *order, size_t n)
{
	if (col < 0 || col >= (int)t->ncols)
		col = t->default_sort, desc = t->default_desc;
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	/* An empty table may have no order array yet: qsort_r's base must
	 * not be NULL even for no elements (UBSan says so). */
	if (n < 2)
		return;
	struct sort_ctx c = { t->cols[col].compare, rows, size, desc };
	qsort_r(order, n, sizeof(uint32_t), order_cmp, &c);
}

/* --- hypervisor columns ---------------------------------------------------- */

void xft_hv_domain_name(uint32_t domain, char *buf, size_t len)
{
	if (domain == 32767)
		snprintf(buf, len, "idle");
	else
		snprintf(buf, len, "d%" PRIu32, domain);
}

void xft_hv_state_text(const struct xflow_hv_summary *hv, char *buf, size_t len)
{
	if (hv->damage)
		snprintf(buf, len, "DAMAGED (%s)", hv->damage);
	else
		snprintf(buf, len, "%s", hv->complete ? "complete" : "partial");
}

void xft_hv_skipped_text(const struct xflow_hv_summary *hv, char *buf, size_t len)
{
	int o = snprintf(buf, len, "skipped %" PRIu64, hv->skipped);
	if (!hv->skipped && !hv->skipped_bytes)
		return;
	static const char *const why[] = { "absurd TSC", "framing", "undecodable", "bytes of garbage" };
	const uint64_t n[] = { hv->skipped_bad_tsc, hv->skipped_framing, hv->skipped_decode, hv->skipped_bytes };
	const char *sep = " (";
	for (size_t i = 0; i < 4 && o > 0 && (size_t)o < len; i++) {
		if (!n[i])
			continue;
		o += snprintf(buf + o, len - (size_t)o, "%s%" PRIu64 " %s", sep, n[i], why[i]);
		sep = ", ";
	}
	if (o > 0 && (size_t)o < len)
		snprintf(buf + o, len - (size_t)o, ")");
}

const char *xft_hv_kind_name(int kind)
{
	switch (kind) {
	case XFLOW_HV_EXIT: return "exit";
	case XFLOW_HV_PV: return "pv";
	case XFLOW_HV_HYPERCALL: return "hcall";
	}
	return "?";
}

static void print_count(uint64_t v, char *buf, size_t len, int width)
{
	if (snprintf(buf, len, "%" PRIu64, v) > width) {
		if (v < 10000000)
			snprintf(buf, len, "%" PRIu64 "K", v / 1000);
		else
			snprintf(buf, len, "%" PRIu64 "M", v / 1000000);
	}
}

static void print_share(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f%%", v * 100.0);
}

static void print_opt_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns)
		xft_format_ns(ns, buf, len);
	else
		snprintf(buf, len, "-");
}

static void print_cycles(uint64_t c, char *buf, size_t len, int width)
{
	if (!c)
		snprintf(buf, len, "-");
	else
		print_count(c, buf, len, width);
}

#define V(r) ((const struct xflow_hv_vcpu *)(r))
#define E(r) ((const struct xflow_hv_event *)(r))

static int vc_cmp_domain(const void *a, const void *b)
{
	int c = CMP(V(a)->domain, V(b)->domain);
	return c ? c : CMP(V(a)->vcpu, V(b)->vcpu);
}
static int vc_cmp_vcpu(const void *a, const void *b) { return CMP(V(a)->vcpu, V(b)->vcpu); }
static int vc_cmp_run(const void *a, const void *b) { return CMP(V(a)->ns[XFLOW_HV_RUNNING], V(b)->ns[XFLOW_HV_RUNNING]); }
static int vc_cmp_runnable(const void *a, const void *b) { return CMP(V(a)->ns[XFLOW_HV_RUNNABLE], V(b)->ns[XFLOW_HV_RUNNABLE]); }
static int vc_cmp_blocked(const void *a, const void *b) { return CMP(V(a)->ns[XFLOW_HV_BLOCKED], V(b)->ns[XFLOW_HV_BLOCKED]); }
static int vc_cmp_offline(const void *a, const void *b) { return CMP(V(a)->ns[XFLOW_HV_OFFLINE], V(b)->ns[XFLOW_HV_OFFLINE]); }
static int vc_cmp_wakes(const void *a, const void *b) { return CMP(V(a)->wakes, V(b)->wakes); }
static int vc_cmp_w50(const void *a, const void *b) { return CMP(V(a)->wake_p50_ns, V(b)->wake_p50_ns); }
static int vc_cmp_w90(const void *a, const void *b) { return CMP(V(a)->wake_p90_ns, V(b)->wake_p90_ns); }
static int vc_cmp_w99(const void *a, const void *b) { return CMP(V(a)->wake_p99_ns, V(b)->wake_p99_ns); }
static int vc_cmp_migr(const void *a, const void *b) { return CMP(V(a)->migrations, V(b)->migrations); }
static int vc_cmp_pcpu(const void *a, const void *b) { return CMP(V(a)->pcpu, V(b)->pcpu); }

static void vc_print_domain(const void *r, char *buf, size_t len, int width)
{
	(void)width;
	xft_hv_domain_name(V(r)->domain, buf, len);
}
static void vc_print_vcpu(const void *r, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "v%" PRIu32, V(r)->vcpu);
}
#define VC_SHARE(name, rs)                                                        \
	static void vc_print_##name(const void *r, char *buf, size_t len, int width) \
	{                                                                         \
		(void)width;                                                      \
		print_share(V(r)->share[rs], buf, len);                           \
	}
VC_SHARE(run, XFLOW_HV_RUNNING)
VC_SHARE(runnable, XFLOW_HV_RUNNABLE)
VC_SHARE(blocked, XFLOW_HV_BLOCKED)
VC_SHARE(offline, XFLOW_HV_OFFLINE)
static void vc_print_wakes(const void *r, char *buf, size_t len, int width) { print_count(V(r)->wakes, buf, len, width); }
static void vc_print_w50(const void *r, char *buf, size_t len, int width) { (void)width; print_opt_ns(V(r)->wake_p50_ns, buf, len); }
static void vc_print_w90(const void *r, char *buf, size_t len, int width) { (void)width; print_opt_ns(V(r)->wake_p90_ns, buf, len); }
static void vc_print_w99(const void *r, char *buf, size_t len, int width) { (void)width; print_opt_ns(V(r)->wake_p99_ns, buf, len); }
static void vc_print_migr(const void *r, char *buf, size_t len, int width) { print_count(V(r)->migrations, buf, len, width); }
static void vc_print_pcpu(const void *r, char *buf, size_t len, int width)
{
	(void)width;
	if (V(r)->pcpu < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%" PRId32, V(r)->pcpu);
}

static const struct xft_column vc_cols[XFT_VCOL_N] = {
	[XFT_VCOL_DOMAIN] = { XFT_VCOL_DOMAIN, "domain", "DOM", 5, 5, 0, 0, vc_cmp_domain, vc_print_domain },
	[XFT_VCOL_VCPU] = { XFT_VCOL_VCPU, "vcpu", "VCPU", 4, 4, 0, 0, vc_cmp_vcpu, vc_print_vcpu },
	[XFT_VCOL_RUN] = { XFT_VCOL_RUN, "running", "RUN%", 6, 6, 1, 0, vc_cmp_run, vc_print_run },
	[XFT_VCOL_RUNNABLE] = { XFT_VCOL_RUNNABLE, "runnable", "WAIT%", 6, 6, 1, 0, vc_cmp_runnable, vc_print_runnable },
	[XFT_VCOL_BLOCKED] = { XFT_VCOL_BLOCKED, "blocked", "BLOCK%", 6, 6, 1, 0, vc_cmp_blocked, vc_print_blocked },
	[XFT_VCOL_OFFLINE] = { XFT_VCOL_OFFLINE, "offline", "OFFL%", 6, 6, 1, 0, vc_cmp_offline, vc_print_offline },
	[XFT_VCOL_WAKES] = { XFT_VCOL_WAKES, "wakes", "WAKES", 7, 7, 1, 0, vc_cmp_wakes, vc_print_wakes },
	[XFT_VCOL_W50] = { XFT_VCOL_W50, "wake50", "WAKE50", 7, 7, 1, 0, vc_cmp_w50, vc_print_w50 },
	[XFT_VCOL_W90] = { XFT_VCOL_W90, "wake90", "WAKE90", 7, 7, 1, 0, vc_cmp_w90, vc_print_w90 },
	[XFT_VCOL_W99] = { XFT_VCOL_W99, "wake99", "WAKE99", 7, 7, 1, 0, vc_cmp_w99, vc_print_w99 },
	[XFT_VCOL_MIGR] = { XFT_VCOL_MIGR, "migrations", "MIGR", 5, 5, 1, 0, vc_cmp_migr, vc_print_migr },
	[XFT_VCOL_PCPU] = { XFT_VCOL_PCPU, "pcpu", "PCPU", 4, 4, 1, 90, vc_cmp_pcpu, vc_print_pcpu },
};
const struct xft_table xft_hv_vcpu_table = { vc_cols, XFT_VCOL_N, XFT_VCOL_DOMAIN, 0 };

static int ev_cmp_domain(const void *a, const void *b)
{
	int c = CMP(E(a)->domain, E(b)->domain);
	if (!c)
		c = CMP(E(a)->kind, E(b)->kind);
	return c ? c : CMP(E(a)->code, E(b)->code);
}
static int ev_cmp_kind(const void *a, const void *b) { return CMP(E(a)->kind, E(b)->kind); }
static int ev_cmp_name(const void *a, const void *b) { return strcmp(E(a)->name ? E(a)->name : "", E(b)->name ? E(b)->name : ""); }
static int ev_cmp_count(const void *a, const void *b) { return CMP(E(a)->count, E(b)->count); }
static int ev_cmp_time(const void *a, const void *b) { return CMP(E(a)->ns, E(b)->ns); }
static int ev_cmp_p50(const void *a, const void *b) { return CMP(E(a)->p50_cycles, E(b)->p50_cycles); }
static int ev_cmp_p90(const void *a, const void *b) { return CMP(E(a)->p90_cycles, E(b)->p90_cycles); }
static int ev_cmp_p99(const void *a, const void *b) { return CMP(E(a)->p99_cycles, E(b)->p99_cycles); }

static void ev_print_domain(const void *r, char *buf, size_t len, int width)
{
	(void)width;
	xft_hv_domain_name(E(r)->domain, buf, len);
}
static void ev_print_kind(const void *r, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%s", xft_hv_kind_name(E(r)->kind));
}
static void ev_print_name(const void *r, char *buf, size_t len, int width)
{
	(void)width;
	snprintf(buf, len, "%s", E(r)->name ? E(r)->name : "?");
}
static void ev_print_count(const void *r, char *buf, size_t len, int width) { print_count(E(r)->count, buf, len, width); }
static void ev_print_time(const void *r, char *buf, size_t len, int width) { (void)width; print_opt_ns(E(r)->ns, buf, len); }
static void ev_print_share(const void *r, char *buf, size_t len, int width)
{
	(void)width;
	if (E(r)->kind == XFLOW_HV_EXIT)
		print_share(E(r)->share, buf, len);
	else
		snprintf(buf, len, "-");
}
static void ev_print_p50(const void *r, char *buf, size_t len, int width) { print_cycles(E(r)->p50_cycles, buf, len, width); }
static void ev_print_p90(const void *r, char *buf, size_t len, int width) { print_cycles(E(r)->p90_cycles, buf, len, width); }
static void ev_print_p99(const void *r, char *buf, size_t len, int width) { print_cycles(E(r)->p99_cycles, buf, len, width); }

static const struct xft_column ev_cols[XFT_ECOL_N] = {
	[XFT_ECOL_DOMAIN] = { XFT_ECOL_DOMAIN, "domain", "DOM", 5, 5, 0, 0, ev_cmp_domain, ev_print_domain },
	[XFT_ECOL_KIND] = { XFT_ECOL_KIND, "kind", "KIND", 5, 5, 0, 0, ev_cmp_kind, ev_print_kind },
	[XFT_ECOL_NAME] = { XFT_ECOL_NAME, "event", "EVENT", 0, 10, 0, 0, ev_cmp_name, ev_print_name },
	[XFT_ECOL_COUNT] = { XFT_ECOL_COUNT, "count", "COUNT", 8, 8, 1, 0, ev_cmp_count, ev_print_count },
	[XFT_ECOL_TIME] = { XFT_ECOL_TIME, "time", "TIME", 7, 7, 1, 0, ev_cmp_time, ev_print_time },
	[XFT_ECOL_SHARE] = { XFT_ECOL_SHARE, "share", "SHARE", 6, 6, 1, 0, ev_cmp_time, ev_print_share },
	[XFT_ECOL_P50] = { XFT_ECOL_P50, "p50", "P50CYC", 8, 8, 1, 0, ev_cmp_p50, ev_print_p50 },
	[XFT_ECOL_P90] = { XFT_ECOL_P90, "p90", "P90CYC", 8, 8, 1, 0, ev_cmp_p90, ev_print_p90 },
	[XFT_ECOL_P99] = { XFT_ECOL_P99, "p99", "P99CYC", 8, 8, 1, 0, ev_cmp_p99, ev_print_p99 },
};
const struct xft_table xft_hv_event_table = { ev_cols, XFT_ECOL_N, XFT_ECOL_DOMAIN, 0 };
