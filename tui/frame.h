/*
 * tui/frame.h — what one refresh shows: rows computed from the model, the
 * column tables that describe them (xentop's {id, header, width, compare,
 * print}), sorting and filtering.
 *
 * A frame is rebuilt on each refresh unless the display is paused, so a
 * paused screen keeps its numbers while the model keeps collecting.  Rows
 * hold pointers into the site cache (stable until it is freed) and copies
 * of the slowest flows and their paths (the model's top-K changes under
 * us).  Memory is taken once, from the model's limits.
 */
#ifndef XFLOW_TUI_FRAME_H
#define XFLOW_TUI_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "tui/aggregate.h"
#include "tui/sites.h"

struct xft_hop_row {
	uint32_t hop; /* index in the model's hops */
	const struct xft_site *from, *to;
	const char *from_dom, *to_dom;
	uint16_t from_domain, to_domain;
	uint64_t count, total_ns, min, p50, p90, p99, p999, max, mean;
	double share; /* of the total time of all hops, 0..1 */
	struct xft_hop_split split; /* where its time went, as of this frame */
};

struct xft_flow_row {
	struct xft_flow_summary s; /* s.path and s.gaps point into the frame */
	uint64_t duration_ns;
	const char *origin_dom;
	const struct xft_site *first, *last;
	unsigned ndomains; /* distinct domains on the path */
};

/*
 * One column.  compare() orders two rows ascending (ties are broken by the
 * caller); print() writes the cell for @width characters (it may use fewer,
 * never more, and may choose a shorter form when @width is small).
 */
struct xft_column {
	int id;
	const char *name;    /* for --sort and the sort indicator */
	const char *header;
	int width;           /* 0: flexible, sharing what the fixed ones leave */
	int min_width;
	int right;           /* right-aligned */
	int hide_below;      /* hidden when the table is narrower than this */
	int (*compare)(const void *a, const void *b);
	void (*print)(const void *row, char *buf, size_t len, int width);
};

struct xft_table {
	const struct xft_column *cols;
	size_t ncols;
	int default_sort;
	int default_desc;
};

enum { XFT_HCOL_FROM, XFT_HCOL_TO, XFT_HCOL_COUNT, XFT_HCOL_P50, XFT_HCOL_P90, XFT_HCOL_P99,
       XFT_HCOL_MAX, XFT_HCOL_TOTAL, XFT_HCOL_N };
enum { XFT_FCOL_ID, XFT_FCOL_ORIGIN, XFT_FCOL_DURATION, XFT_FCOL_POINTS, XFT_FCOL_DOMAINS,
       XFT_FCOL_FIRST, XFT_FCOL_LAST, XFT_FCOL_END, XFT_FCOL_N };

extern const struct xft_table xft_hop_table;
extern const struct xft_table xft_flow_table;

/* The Hypervisor view's tables, over the rows of xflow/collector.h's
 * struct xflow_hv_summary: vcpus (struct xflow_hv_vcpu) and events
 * (struct xflow_hv_event). */
enum { XFT_VCOL_DOMAIN, XFT_VCOL_VCPU, XFT_VCOL_RUN, XFT_VCOL_RUNNABLE, XFT_VCOL_BLOCKED,
       XFT_VCOL_OFFLINE, XFT_VCOL_WAKES, XFT_VCOL_W50, XFT_VCOL_W90, XFT_VCOL_W99, XFT_VCOL_MIGR,
       XFT_VCOL_PCPU, XFT_VCOL_N };
enum { XFT_ECOL_DOMAIN, XFT_ECOL_KIND, XFT_ECOL_NAME, XFT_ECOL_COUNT, XFT_ECOL_TIME, XFT_ECOL_SHARE,
       XFT_ECOL_P50, XFT_ECOL_P90, XFT_ECOL_P99, XFT_ECOL_N };
extern const struct xft_table xft_hv_vcpu_table;
extern const struct xft_table xft_hv_event_table;
/* "d0", "d1" ... and "idle" for the idle domain. */
void xft_hv_domain_name(uint32_t domain, char *buf, size_t len);
/* What the status lines say of the input's state and of skipped records:
 * "complete", "partial", or "DAMAGED (offset N: truncated: ...)"; then
 * "skipped N" and why ("3 absurd TSC, 1 framing, 2 undecodable, 96
 * bytes of garbage") when any were. */
void xft_hv_state_text(const struct xflow_hv_summary *hv, char *buf, size_t len);
void xft_hv_skipped_text(const struct xflow_hv_summary *hv, char *buf, size_t len);
const char *xft_hv_kind_name(int kind);

/* @order = 0..n-1 sorted by column @col of @t (-1: the default), ties by
 * index. */
void xft_table_sort(const struct xft_table *t, int col, int desc, const void *rows, size_t size,
		    uint32_t *order, size_t n);

#define XFT_FLEX_MAX 40 /* widest a flexible column gets, not knowing its cells */
#define XFT_MAX_COLS 16 /* columns a table may have */

/* Column widths for @total characters (one blank between columns).  A hidden
 * column gets width 0 and no blank. */
void xft_table_widths(const struct xft_table *t, int total, int *widths);
/* The same, with each flexible column as wide as the widest of its cells in
 * the @n rows of @rows (each @size bytes) that @order names, as far as
 * @total allows: a name is cut only when the screen has no room for it.
 * Returns the width that would show every cell whole. */
int xft_table_fit(const struct xft_table *t, int total, const void *rows, size_t size, const uint32_t *order,
		  size_t n, int *widths);
/* Index of the column called @name, or -1. */
int xft_table_find(const struct xft_table *t, const char *name);

/* "812ns", "15.3us", "2.41ms", "1.20s": at most 7 characters. */
void xft_format_ns(uint64_t ns, char *buf, size_t len);

/*
 * A filter: blank-separated words that must all match (case-insensitive
 * substrings).  A word may say where: "domain:linux0", "function:netif",
 * "file:dev.c" (or d:, fn:, f:); otherwise any of the three matches.
 */
#define XFT_FILTER_TERMS 8
enum { XFT_FIELD_ANY, XFT_FIELD_DOMAIN, XFT_FIELD_FUNCTION, XFT_FIELD_FILE };
struct xft_filter {
	unsigned n;
	struct {
		int field;
		char word[64];
	} t[XFT_FILTER_TERMS];
};
void xft_filter_parse(struct xft_filter *f, const char *text);
int xft_filter_site(const struct xft_filter *f, const char *dom, const struct xft_site *s,
		    const char *dom2, const struct xft_site *s2);
int xft_filter_hop(const struct xft_filter *f, const struct xft_hop_row *r);
int xft_filter_flow(const struct xft_filter *f, const struct xft_flow_row *r,
		    struct xft_sites *sites);

struct xft_frame {
	struct xft_hop_row *hops;
	size_t nhops, hops_cap;
	uint64_t *row_count;       /* per model hop: count when its row was made */
	struct xft_hop_row *cache; /* per model hop: the last row made */
	uint32_t *hop_order;
	size_t nhop_shown;
	struct xft_flow_row *flows;
	size_t nflows, flows_cap;
	uint32_t *flow_order;
	size_t nflow_shown;
	struct xft_point *points;
	struct xft_gap_split *gaps; /* max_path per flow, as points */
	uint32_t max_path;
	uint64_t total_ns;
	struct xft_agg_stats st;
	struct xft_sched_status sched;
};

int xft_frame_init(struct xft_frame *f, const struct xft_agg_limits *l);
void xft_frame_fini(struct xft_frame *f);
/* Rows from the model's current state. */
void xft_frame_build(struct xft_frame *f, const struct xft_agg *a, struct xft_sites *sites);
/* The shown rows: filtered, then sorted by a column (-1: default). */
void xft_frame_order(struct xft_frame *f, const struct xft_filter *flt, struct xft_sites *sites,
		     int hop_col, int hop_desc, int flow_col, int flow_desc);

#endif
