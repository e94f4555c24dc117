/*
 * The views: const tables of callbacks that draw into a canvas and handle
 * keys by returning reaction flags (never drawing themselves), in htop's
 * manner.  The header, the tab line and the function-key bar are common;
 * each view draws the rows between them.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/app.h"
#include "tui/lies_text.h"
#include "tui/split_text.h"
#include "xflow/clock.h"

_Static_assert(XFT_A_COUNT - XFT_A_STATE == XFT_NSTATES, "one bar attribute per state of tui/hop_split.h");

#define XFT_RX_HANDLED (1u << 8) /* internal: a view consumed the key */

struct xft_view {
	const char *name;
	const struct xft_table *table; /* sortable columns, or NULL */
	size_t (*count)(struct xft_app *app);
	void (*draw)(struct xft_app *app, struct xft_canvas *cv, int y, int h);
	unsigned (*key)(struct xft_app *app, int key);
	/* Text of a row for '/' search, or NULL. */
	void (*row_text)(struct xft_app *app, size_t row, char *buf, size_t len);
	/* A view of two tables: the one with the focus and its list state,
	 * for sorting (NULL: .table and the view's list). */
	const struct xft_table *(*focus)(struct xft_app *app, struct xft_list_state **list);
	/* Shown (tab and keys) only when this says so; NULL: always. */
	int (*available)(struct xft_app *app);
};

static const struct xft_view *const views[XFT_VIEW_N];

const char *xft_ui_view_name(int view)
{
	return view >= 0 && view < XFT_VIEW_N ? views[view]->name : "?";
}

void xft_ui_init(struct xft_app *app)
{
	struct xft_ui *ui = &app->ui;
	ui->view = XFT_VIEW_HOPS;
	ui->back_view = XFT_VIEW_HOPS;
	for (int v = 0; v < XFT_VIEW_N; v++) {
		ui->list[v].sort = -1;
		ui->list[v].desc = 1;
	}
	int col = xft_table_find(&xft_hop_table, app->cfg.sort);
	ui->list[XFT_VIEW_HOPS].sort = col >= 0 ? col : xft_hop_table.default_sort;
	ui->list[XFT_VIEW_HOPS].desc = col == XFT_HCOL_FROM || col == XFT_HCOL_TO ? 0 : 1;
	ui->list[XFT_VIEW_FLOWS].sort = xft_flow_table.default_sort;
	ui->list[XFT_VIEW_FLOWS].desc = 1;
	ui->list[XFT_VIEW_HYPERVISOR].sort = xft_hv_vcpu_table.default_sort;
	ui->list[XFT_VIEW_HYPERVISOR].desc = xft_hv_vcpu_table.default_desc;
	ui->hv_events.sort = xft_hv_event_table.default_sort;
	ui->hv_events.desc = xft_hv_event_table.default_desc;
	ui->color = app->cfg.color;
}

/* --- helpers -------------------------------------------------------------- */

static void fmt_uptime(uint64_t ns, char *buf, size_t len)
{
	uint64_t s = ns / 1000000000u;
	snprintf(buf, len, "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 3600, s / 60 % 60, s % 60);
}

static void fmt_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= (UINT64_C(1) << 30))
		snprintf(buf, len, "%.1fGiB", (double)b / (double)(UINT64_C(1) << 30));
	else if (b >= (1u << 20))
		snprintf(buf, len, "%.1fMiB", (double)b / (double)(1u << 20));
	else
		snprintf(buf, len, "%.1fKiB", (double)b / 1024.0);
}

/* A cell: right-aligned or clipped to @w. */
static void put_cell(struct xft_canvas *cv, int y, int x, int w, int attr, const char *s, int right)
{
	int n = (int)strlen(s);
	if (right && n < w)
		x += w - n;
	xft_canvas_put(cv, y, x, attr, s, w);
}

/* The header row of a column table, the sorted column marked. */
static void draw_table_header(struct xft_canvas *cv, int y, const struct xft_table *t,
			      const int *w, int sort, int desc)
{
	xft_canvas_fill(cv, y, 0, cv->cols, XFT_A_HEADER, ' ');
	int x = 0;
	for (size_t i = 0; i < t->ncols; i++) {
		if (!w[i])
			continue;
		char h[64];
		snprintf(h, sizeof(h), "%s%s", t->cols[i].header,
			 (int)i == sort ? (desc ? "\u25bc" : "\u25b2") : "");
		int attr = (int)i == sort ? XFT_A_SORTED : XFT_A_HEADER;
		put_cell(cv, y, x, w[i], attr, h, t->cols[i].right);
		if ((int)i == sort)
			xft_canvas_paint(cv, y, x, w[i], XFT_A_SORTED);
		x += w[i] + 1;
	}
}

static void draw_table_row(struct xft_canvas *cv, int y, const struct xft_table *t, const int *w,
			   const void *row, int selected)
{
	int attr = selected ? XFT_A_SELECTED : XFT_A_NORMAL;
	if (selected)
		xft_canvas_fill(cv, y, 0, cv->cols, attr, ' ');
	int x = 0;
	for (size_t i = 0; i < t->ncols; i++) {
		if (!w[i])
			continue;
		char buf[256];
		buf[0] = '\0';
		t->cols[i].print(row, buf, sizeof(buf), w[i]);
		put_cell(cv, y, x, w[i], attr, buf, t->cols[i].right);
		x += w[i] + 1;
	}
}

/* Keep the selection inside [0, n) and visible in @h rows. */
static void list_fix(struct xft_list_state *l, size_t n, int h)
{
	if (h < 1)
		h = 1;
	if (n == 0) {
		l->sel = l->top = 0;
		return;
	}
	if (l->sel >= n)
		l->sel = n - 1;
	if (l->sel < l->top)
		l->top = l->sel;
	if (l->sel >= l->top + (size_t)h)
		l->top = l->sel - (size_t)h + 1;
	if (l->top + (size_t)h > n)
		l->top = n > (size_t)h ? n - (size_t)h : 0;
}

static int page_rows(struct xft_app *app)
{
	int h = app->canvas.rows - 8;
	return h > 1 ? h : 1;
}

/* Movement keys of every list; returns nonzero when the key was one. */
static int list_key(struct xft_list_state *l, size_t n, int page, int key)
{
	switch (key) {
	case XFT_KEY_UP: case 'k':
		if (l->sel > 0)
			l->sel--;
		return 1;
	case XFT_KEY_DOWN: case 'j':
		if (n && l->sel + 1 < n)
			l->sel++;
		return 1;
	case XFT_KEY_PGUP:
		l->sel = l->sel > (size_t)page ? l->sel - (size_t)page : 0;
		return 1;
	case XFT_KEY_PGDN:
		l->sel = n ? (l->sel + (size_t)page < n ? l->sel + (size_t)page : n - 1) : 0;
		return 1;
	case XFT_KEY_HOME:
		l->sel = 0;
		return 1;
	case XFT_KEY_END:
		l->sel = n ? n - 1 : 0;
		return 1;
	}
	return 0;
}

static void empty_note(struct xft_canvas *cv, int y, const char *text)
{
	xft_canvas_put(cv, y, 1, XFT_A_DIM, text, -1);
}

/* @text at (y, x) up to the right edge; cut with an ellipsis rather than
 * in the middle of a word without a sign. */
static int put_cut(struct xft_canvas *cv, int y, int x, int attr, const char *text)
{
	int room = cv->cols - x;
	if (room <= 0)
		return 0;
	int n = xft_canvas_put(cv, y, x, attr, text, room);
	if (n == room && text[0] && (int)strlen(text) > room) /* ASCII: the sentences are */
		xft_canvas_fill(cv, y, x + room - 1, 1, attr, 0x2026);
	return n;
}

/* A split as a stacked bar of @w cells at (y, x), each cell its state's
 * glyph in its state's colour.  Returns the cells drawn (0: empty split). */
static int draw_split_bar(struct xft_canvas *cv, int y, int x, int w, const struct xft_split *s)
{
	unsigned char cells[512];
	if (w > (int)sizeof(cells))
		w = (int)sizeof(cells);
	int n = xft_split_cells(s, w, cells);
	for (int i = 0; i < n; i++)
		xft_canvas_fill(cv, y, x + i, 1, XFT_A_STATE + cells[i], (unsigned char)xft_state_glyph(cells[i]));
	return n;
}

/* One line of a split: @label, a bar of @wbar cells and the states'
 * percentages as far as the line has room for whole ones, then @tail. */
static void draw_split_line(struct xft_canvas *cv, int y, const char *label, int wbar, const struct xft_split *s,
			    const char *tail)
{
	int x = xft_canvas_put(cv, y, 0, XFT_A_TITLE, label, -1);
	x += 1;
	draw_split_bar(cv, y, x, wbar, s);
	x += wbar + 1;
	char pct[256];
	xft_split_percent_text(s, cv->cols > x ? cv->cols - x : 0, pct, sizeof(pct));
	x += xft_canvas_put(cv, y, x, XFT_A_NORMAL, pct, -1);
	if (tail && *tail)
		put_cut(cv, y, x, XFT_A_DIM, tail);
}

/* The bar width of split lines: a third of the screen, 4 to 40 cells. */
static int split_bar_width(const struct xft_canvas *cv)
{
	int w = (cv->cols - 6) / 3;
	return w < 4 ? 4 : w > 40 ? 40 : w;
}

/* --- hops view ------------------------------------------------------------ */

static size_t hops_count(struct xft_app *app)
{
	return app->frame.nhop_shown;
}

/* Rows at the bottom of the hops view for where the selected hop's time
 * went: a line saying there is no split, or the hop, its two bars and the
 * culprits of its waits. */
static int hops_pane_rows(const struct xft_app *app, int h)
{
	if (h < 9)
		return 0;
	return app->frame.sched.joined ? 4 : 1;
}

static void hops_pane(struct xft_app *app, struct xft_canvas *cv, int y, int rows)
{
	const struct xft_sched_status *sch = &app->frame.sched;
	if (!sch->joined) {
		put_cut(cv, y, 1, XFT_A_DIM,
			"Not split by state: no scheduler trace is joined (xflowtop(1), THE SPLIT).");
		return;
	}
	struct xft_list_state *l = &app->ui.list[XFT_VIEW_HOPS];
	if (rows < 4 || l->sel >= app->frame.nhop_shown)
		return;
	const struct xft_hop_row *r = &app->frame.hops[app->frame.hop_order[l->sel]];
	const struct xft_hop_split *sp = &r->split;
	char line[512], tail[96];
	snprintf(line, sizeof(line), "%s:%s \u2192 %s:%s: where the time went", r->from_dom, r->from->function,
		 r->to_dom, r->to->function);
	xft_canvas_fill(cv, y, 0, cv->cols, XFT_A_HEADER, ' ');
	put_cut(cv, y, 0, XFT_A_HEADER, line);
	int wb = split_bar_width(cv);
	if (!xft_split_total(&sp->all)) {
		snprintf(line, sizeof(line), "not split yet: %" PRIu64 " hop samples wait for every pCPU's trace",
			 sch->hops_pending);
		xft_canvas_put(cv, y + 1, 0, XFT_A_TITLE, "all ", -1);
		put_cut(cv, y + 1, 5, XFT_A_DIM, line);
		return;
	}
	draw_split_line(cv, y + 1, "all ", wb, &sp->all, NULL);
	if (sp->tail_count) {
		snprintf(tail, sizeof(tail), " (%" PRIu64 " flows)", sp->tail_count);
		draw_split_line(cv, y + 2, "p99+", wb, &sp->tail, tail);
	} else {
		xft_canvas_put(cv, y + 2, 0, XFT_A_TITLE, "p99+", -1);
		put_cut(cv, y + 2, 5, XFT_A_DIM, "no flow at or above the p99 split yet");
	}
	/* When '?' holds most of the hop, why comes first: the wait's
	 * holder matters less than what cannot be told at all. */
	size_t at = 0;
	if (xft_split_biggest(&sp->all) == XFT_ST_UNKNOWN)
		at = xft_split_state_text(&sp->all, NULL, XFT_ST_UNKNOWN, NULL, line, sizeof(line));
	char culprits[384];
	if (xft_hop_culprits_text(sp, culprits, sizeof(culprits)))
		snprintf(line + at, sizeof(line) - at, "%s%s", at ? "; " : "", culprits);
	else if (!at)
		snprintf(line, sizeof(line), "no wait for a physical CPU");
	put_cut(cv, y + 3, 0, XFT_A_NORMAL, line);
}

/* The bar beside each hop's figures, on screens wide enough to keep the
 * table whole beside it. */
static int hops_bar_width(const struct xft_app *app, const struct xft_canvas *cv)
{
	if (!app->frame.sched.joined || cv->cols < 110)
		return 0;
	return cv->cols - 90 > 40 ? 40 : cv->cols - 90;
}

static void hops_draw(struct xft_app *app, struct xft_canvas *cv, int y, int h)
{
	struct xft_list_state *l = &app->ui.list[XFT_VIEW_HOPS];
	int w[XFT_HCOL_N];
	int pane = hops_pane_rows(app, h), wbar = hops_bar_width(app, cv);
	int tw = cv->cols - (wbar ? wbar + 1 : 0);
	xft_table_fit(&xft_hop_table, tw, app->frame.hops, sizeof(*app->frame.hops), app->frame.hop_order,
		      app->frame.nhop_shown, w);
	draw_table_header(cv, y, &xft_hop_table, w, l->sort, l->desc);
	if (wbar)
		xft_canvas_put(cv, y, tw + 1, XFT_A_HEADER, "WHERE THE TIME WENT", wbar);
	int rows = h - 1 - pane;
	list_fix(l, app->frame.nhop_shown, rows);
	if (!app->frame.nhop_shown) {
		empty_note(cv, y + 1, app->ui.filter.n ? "No hop matches the filter (\\ to change it)."
						       : "No hops yet: waiting for flows.");
		return;
	}
	for (int i = 0; i < rows && l->top + (size_t)i < app->frame.nhop_shown; i++) {
		size_t r = l->top + (size_t)i;
		const struct xft_hop_row *row = &app->frame.hops[app->frame.hop_order[r]];
		draw_table_row(cv, y + 1 + i, &xft_hop_table, w, row, r == l->sel);
		if (wbar)
			draw_split_bar(cv, y + 1 + i, tw + 1, wbar, &row->split.all);
	}
	if (pane)
		hops_pane(app, cv, y + h - pane, pane);
}

static void open_hist(struct xft_app *app, size_t row)
{
	if (row < app->frame.nhop_shown) {
		app->ui.hist_hop = app->frame.hops[app->frame.hop_order[row]].hop;
		app->ui.have_hist = 1;
	}
}

static unsigned hops_key(struct xft_app *app, int key)
{
	if (key == XFT_KEY_ENTER) {
		open_hist(app, app->ui.list[XFT_VIEW_HOPS].sel);
		if (app->ui.have_hist) {
			app->ui.back_view = XFT_VIEW_HOPS;
			app->ui.view = XFT_VIEW_HIST;
		}
		return XFT_RX_HANDLED | XFT_RX_REDRAW;
	}
	return 0;
}

static void hop_text(struct xft_app *app, size_t row, char *buf, size_t len)
{
	const struct xft_hop_row *r = &app->frame.hops[app->frame.hop_order[row]];
	snprintf(buf, len, "%s %s %s %s %s %s", r->from_dom, r->from->function, r->from->file,
		 r->to_dom, r->to->function, r->to->file);
}

static const struct xft_view hops_view = {
	.name = "Hops",
	.table = &xft_hop_table,
	.count = hops_count,
	.draw = hops_draw,
	.key = hops_key,
	.row_text = hop_text,
};

/* --- slowest flows view ------------------------------------------------- */

static size_t flows_count(struct xft_app *app)
{
	return app->frame.nflow_shown;
}

/* The sentence of a flow's biggest cause with its gap named, into @buf;
 * 0 when the flow has no split. */
static int flow_cause(struct xft_app *app, const struct xft_flow_summary *f, char *buf, size_t len)
{
	char why[256];
	int g = xft_flow_cause_text(f, &app->sites, why, sizeof(why));
	if (g < 0)
		return 0;
	const struct xft_point *a = &f->path[g], *b = &f->path[g + 1];
	snprintf(buf, len, "%s (gap %d, %s \u2192 %s)", why, g + 1,
		 xft_sites_get(&app->sites, a->domain, a->site)->function,
		 xft_sites_get(&app->sites, b->domain, b->site)->function);
	return 1;
}

/* The split of a whole flow: the sum of its gaps'. */
static void flow_split(const struct xft_flow_summary *f, struct xft_split *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (uint32_t g = 0; f->gaps && g + 1 < f->npoints; g++)
		xft_split_add(sum, &f->gaps[g].split);
}

static void flows_draw(struct xft_app *app, struct xft_canvas *cv, int y, int h)
{
	struct xft_list_state *l = &app->ui.list[XFT_VIEW_FLOWS];
	int w[XFT_FCOL_N];
	xft_table_fit(&xft_flow_table, cv->cols, app->frame.flows, sizeof(*app->frame.flows), app->frame.flow_order,
		      app->frame.nflow_shown, w);
	draw_table_header(cv, y, &xft_flow_table, w, l->sort, l->desc);
	/* Two lines for the selected flow's split, when it has one. */
	const struct xft_flow_row *selected = NULL;
	if (l->sel < app->frame.nflow_shown)
		selected = &app->frame.flows[app->frame.flow_order[l->sel]];
	int pane = h >= 8 && selected && selected->s.gaps ? 2 : 0;
	list_fix(l, app->frame.nflow_shown, h - 1 - pane);
	if (!app->frame.nflow_shown) {
		empty_note(cv, y + 1, app->ui.filter.n ? "No flow matches the filter (\\ to change it)."
						       : "No finished flow yet.");
		return;
	}
	for (int i = 0; i < h - 1 - pane && l->top + (size_t)i < app->frame.nflow_shown; i++) {
		size_t r = l->top + (size_t)i;
		draw_table_row(cv, y + 1 + i, &xft_flow_table, w,
			       &app->frame.flows[app->frame.flow_order[r]], r == l->sel);
	}
	if (!pane)
		return;
	/* list_fix may have moved the selection: the pane follows it. */
	selected = &app->frame.flows[app->frame.flow_order[l->sel]];
	struct xft_split sum;
	char label[32], cause[512];
	flow_split(&selected->s, &sum);
	snprintf(label, sizeof(label), "flow %" PRIu64, selected->s.id);
	int yy = y + h - pane;
	if (!xft_split_total(&sum)) {
		xft_canvas_put(cv, yy, 0, XFT_A_TITLE, label, -1);
		put_cut(cv, yy, (int)strlen(label) + 1, XFT_A_DIM, "not split yet");
		return;
	}
	draw_split_line(cv, yy, label, split_bar_width(cv), &sum, NULL);
	if (flow_cause(app, &selected->s, cause, sizeof(cause))) {
		xft_canvas_put(cv, yy + 1, 0, XFT_A_TITLE, "cause", -1);
		put_cut(cv, yy + 1, 6, XFT_A_NORMAL, cause);
	}
}

int xft_ui_open_path(struct xft_app *app, size_t row)
{
	if (row >= app->frame.nflow_shown)
		return -1;
	const struct xft_flow_row *f = &app->frame.flows[app->frame.flow_order[row]];
	uint32_t n = f->s.npoints < app->frame.max_path ? f->s.npoints : app->frame.max_path;
	app->ui.path = *f;
	app->ui.path.s.npoints = n;
	if (n)
		memcpy(app->ui.path_points, f->s.path, n * sizeof(*f->s.path));
	app->ui.path.s.path = app->ui.path_points;
	app->ui.path.s.gaps = NULL;
	if (f->s.gaps && n > 1) {
		memcpy(app->ui.path_gaps, f->s.gaps, (n - 1) * sizeof(*f->s.gaps));
		app->ui.path.s.gaps = app->ui.path_gaps;
	}
	app->ui.have_path = 1;
	app->ui.list[XFT_VIEW_PATH].sel = app->ui.list[XFT_VIEW_PATH].top = 0;
	return 0;
}

static unsigned flows_key(struct xft_app *app, int key)
{
	if (key == XFT_KEY_ENTER) {
		if (xft_ui_open_path(app, app->ui.list[XFT_VIEW_FLOWS].sel) == 0) {
			app->ui.back_view = XFT_VIEW_FLOWS;
			app->ui.view = XFT_VIEW_PATH;
		}
		return XFT_RX_HANDLED | XFT_RX_REDRAW;
	}
	return 0;
}

static void flow_text(struct xft_app *app, size_t row, char *buf, size_t len)
{
	const struct xft_flow_row *r = &app->frame.flows[app->frame.flow_order[row]];
	size_t o = (size_t)snprintf(buf, len, "%" PRIu64 " %s", r->s.id, r->origin_dom);
	for (uint32_t p = 0; p < r->s.npoints && o < len; p++) {
		const struct xft_site *s = xft_sites_get(&app->sites, r->s.path[p].domain, r->s.path[p].site);
		o += (size_t)snprintf(buf + o, len - o, " %s %s", s->function, s->file);
	}
}

static const struct xft_view flows_view = {
	.name = "Slowest",
	.table = &xft_flow_table,
	.count = flows_count,
	.draw = flows_draw,
	.key = flows_key,
	.row_text = flow_text,
};

/* --- path view (the paper's Table 2) --------------------------------------- */

static size_t path_count(struct xft_app *app)
{
	return app->ui.have_path ? app->ui.path.s.npoints : 0;
}

static void path_draw(struct xft_app *app, struct xft_canvas *cv, int y, int h)
{
	struct xft_ui *ui = &app->ui;
	if (!ui->have_path && app->frame.nflow_shown)
		xft_ui_open_path(app, 0); /* the slowest one */
	if (!ui->have_path) {
		xft_canvas_fill(cv, y, 0, cv->cols, XFT_A_HEADER, ' ');
		empty_note(cv, y + 1, "No flow to show yet: the path view opens the slowest flow.");
		return;
	}
	const struct xft_flow_row *f = &ui->path;
	char dur[16];
	xft_format_ns(f->duration_ns, dur, sizeof(dur));
	xft_canvas_printf(cv, y, 0, XFT_A_TITLE, "Flow %" PRIu64 " from %s: %s, %" PRIu32 " points%s, %s",
			  f->s.id, f->origin_dom, dur, f->s.npoints + f->s.points_lost,
			  f->s.points_lost ? " (some not kept)" : "", f->s.expired ? "expired" : "quit");
	/* ELAPSED(us) DOMAIN FILE LINE FUNCTION GAP */
	int we = 11, wd = 6, wl = 5, wg = 8, wfn = 8, wfile = 8;
	for (uint32_t p = 0; p < f->s.npoints; p++) {
		const struct xft_site *s = xft_sites_get(&app->sites, f->s.path[p].domain, f->s.path[p].site);
		int n = (int)strlen(s->function), m = (int)strlen(s->file);
		int d = (int)strlen(xft_sites_domain(&app->sites, f->s.path[p].domain));
		wfn = n > wfn ? n : wfn;
		wfile = m > wfile ? m : wfile;
		wd = d > wd ? d : wd;
	}
	/* The function column first (it names the hop), as wide as its
	 * longest name while a short file column and a few cells of the gap
	 * bar still fit; then the file (its end kept); the bar takes what is
	 * left. */
	enum { MIN_FILE = 8, MIN_BAR = 6 };
	if (wd > 12)
		wd = 12;
	int room = cv->cols - (we + wd + wl + wg + 6); /* function, file, bar */
	if (wfn > room - MIN_FILE - 1 - MIN_BAR)
		wfn = room - MIN_FILE - 1 - MIN_BAR > 8 ? room - MIN_FILE - 1 - MIN_BAR : 8;
	int rest = room - wfn;
	if (wfile > rest - 1 - MIN_BAR)
		wfile = rest - 1 - MIN_BAR > MIN_FILE ? rest - 1 - MIN_BAR : MIN_FILE;
	int wbar = rest - wfile - 1;
	if (wbar < 1)
		wbar = 1;
	int x = 0, yh = y + 1;
	xft_canvas_fill(cv, yh, 0, cv->cols, XFT_A_HEADER, ' ');
	put_cell(cv, yh, x, we, XFT_A_HEADER, "ELAPSED(\u00b5s)", 1);
	x += we + 1;
	put_cell(cv, yh, x, wd, XFT_A_HEADER, "DOMAIN", 0);
	x += wd + 1;
	put_cell(cv, yh, x, wfile, XFT_A_HEADER, "FILE", 0);
	x += wfile + 1;
	put_cell(cv, yh, x, wl, XFT_A_HEADER, "LINE", 1);
	x += wl + 1;
	put_cell(cv, yh, x, wfn, XFT_A_HEADER, "FUNCTION", 0);
	x += wfn + 1;
	put_cell(cv, yh, x, wg + 1 + wbar, XFT_A_HEADER, "GAP", 0);

	struct xft_list_state *l = &ui->list[XFT_VIEW_PATH];
	/* A last line naming the selected gap's biggest cause (or the
	 * flow's, on its first point), when the flow has a split. */
	int foot = f->s.gaps && h >= 5 ? 1 : 0;
	list_fix(l, f->s.npoints, h - 2 - foot);
	uint64_t t0 = f->s.npoints ? f->s.path[0].t_ns : 0, maxgap = 1;
	for (uint32_t p = 1; p < f->s.npoints; p++) {
		uint64_t g = f->s.path[p].t_ns - f->s.path[p - 1].t_ns;
		if (g > maxgap)
			maxgap = g;
	}
	for (int i = 0; i < h - 2 - foot && l->top + (size_t)i < f->s.npoints; i++) {
		size_t p = l->top + (size_t)i;
		const struct xft_point *pt = &f->s.path[p];
		const struct xft_site *s = xft_sites_get(&app->sites, pt->domain, pt->site);
		int yy = y + 2 + i, sel = p == l->sel;
		int attr = sel ? XFT_A_SELECTED : XFT_A_NORMAL;
		if (sel)
			xft_canvas_fill(cv, yy, 0, cv->cols, attr, ' ');
		char buf[64];
		x = 0;
		snprintf(buf, sizeof(buf), "%.1f", (double)(pt->t_ns - t0) / 1e3);
		put_cell(cv, yy, x, we, attr, buf, 1);
		x += we + 1;
		put_cell(cv, yy, x, wd, attr, xft_sites_domain(&app->sites, pt->domain), 0);
		x += wd + 1;
		/* Long paths keep their end: the file name matters most. */
		const char *file = s->file;
		size_t fl = strlen(file);
		if ((int)fl > wfile)
			file += fl - (size_t)wfile;
		put_cell(cv, yy, x, wfile, attr, file, 0);
		x += wfile + 1;
		snprintf(buf, sizeof(buf), s->line ? "%" PRIu32 : "-", s->line);
		put_cell(cv, yy, x, wl, attr, buf, 1);
		x += wl + 1;
		put_cell(cv, yy, x, wfn, attr, s->function, 0);
		x += wfn + 1;
		if (p > 0) {
			uint64_t g = pt->t_ns - f->s.path[p - 1].t_ns;
			xft_format_ns(g, buf, sizeof(buf));
			put_cell(cv, yy, x, wg, attr, buf, 1);
			int n = (int)llround((double)g / (double)maxgap * wbar);
			if (n < 1 && g > 0)
				n = 1;
			/* Split, the bar is the gap's states, as long as the gap. */
			if (!f->s.gaps || !draw_split_bar(cv, yy, x + wg + 1, n, &f->s.gaps[p - 1].split))
				xft_canvas_fill(cv, yy, x + wg + 1, n, sel ? XFT_A_SELECTED : XFT_A_BAR, 0x2588);
		}
	}
	if (!foot)
		return;
	char why[512];
	int yy = y + h - 1;
	if (l->sel > 0 && l->sel < f->s.npoints) {
		const struct xft_gap_split *gs = &f->s.gaps[l->sel - 1];
		const char *rx = xft_sites_domain(&app->sites, f->s.path[l->sel].domain);
		xft_canvas_put(cv, yy, 0, XFT_A_TITLE, "gap", -1);
		if (xft_split_cause_text(&gs->split, &gs->culprit, rx, why, sizeof(why)) < 0)
			snprintf(why, sizeof(why), "not split");
		put_cut(cv, yy, 4, XFT_A_NORMAL, why);
	} else if (flow_cause(app, &f->s, why, sizeof(why))) {
		xft_canvas_put(cv, yy, 0, XFT_A_TITLE, "cause", -1);
		put_cut(cv, yy, 6, XFT_A_NORMAL, why);
	}
}

static unsigned path_key(struct xft_app *app, int key)
{
	if (key == XFT_KEY_ESC || key == XFT_KEY_LEFT || key == XFT_KEY_BACKSPACE) {
		app->ui.view = XFT_VIEW_FLOWS;
		return XFT_RX_HANDLED | XFT_RX_REDRAW;
	}
	return 0;
}

static void path_text(struct xft_app *app, size_t row, char *buf, size_t len)
{
	const struct xft_point *pt = &app->ui.path.s.path[row];
	const struct xft_site *s = xft_sites_get(&app->sites, pt->domain, pt->site);
	snprintf(buf, len, "%s %s %s", xft_sites_domain(&app->sites, pt->domain), s->function, s->file);
}

static const struct xft_view path_view = {
	.name = "Path",
	.count = path_count,
	.draw = path_draw,
	.key = path_key,
	.row_text = path_text,
};

/* --- histogram view ------------------------------------------------------- */

static const struct xft_hop_row *hist_row(struct xft_app *app)
{
	for (size_t i = 0; i < app->frame.nhops; i++)
		if (app->frame.hops[i].hop == app->ui.hist_hop)
			return &app->frame.hops[i];
	return NULL;
}

static size_t hist_count(struct xft_app *app)
{
	(void)app;
	return 0;
}

#define HIST_MAX_BINS 256

static void hist_draw(struct xft_app *app, struct xft_canvas *cv, int y, int h)
{
	struct xft_ui *ui = &app->ui;
	if (!ui->have_hist && app->frame.nhop_shown)
		open_hist(app, ui->list[XFT_VIEW_HOPS].sel);
	const struct xft_hop_row *r = ui->have_hist ? hist_row(app) : NULL;
	size_t nh;
	const struct xft_hop *hops = app->agg ? xft_agg_hops(app->agg, &nh) : NULL;
	if (!r || !hops || r->hop >= nh) {
		xft_canvas_fill(cv, y, 0, cv->cols, XFT_A_HEADER, ' ');
		empty_note(cv, y + 1, "No hop to show yet: select one in Hops (1) and press Enter.");
		return;
	}
	const struct xflow_hist *hist = &hops[r->hop].hist;
	if (ui->paused && ui->hist_copy_hop == r->hop)
		hist = ui->hist_copy; /* as of the last refresh before the pause */
	char a[16], b[16], c[16], d[16], e[16], mn[16];
	xft_canvas_printf(cv, y, 0, XFT_A_TITLE, "%s:%s \u2192 %s:%s   count %" PRIu64, r->from_dom,
			  r->from->function, r->to_dom, r->to->function, r->count);
	xft_format_ns(r->p50, a, sizeof(a));
	xft_format_ns(r->p90, b, sizeof(b));
	xft_format_ns(r->p99, c, sizeof(c));
	xft_format_ns(r->p999, d, sizeof(d));
	xft_format_ns(r->max, e, sizeof(e));
	xft_format_ns(r->mean, mn, sizeof(mn));
	xft_canvas_fill(cv, y + 1, 0, cv->cols, XFT_A_HEADER, ' ');
	xft_canvas_printf(cv, y + 1, 0, XFT_A_HEADER, "p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s",
			  a, b, c, d, e, mn);
	/* Log-scale bins: as many per octave as the screen has room for. */
	uint64_t lo = hist->count ? hist->min : 0, hi = hist->max;
	int rows = h - 3;
	if (rows < 1 || !hist->count)
		return;
	int per = 32;
	double llo = log2((double)(lo ? lo : 1)), lhi = log2((double)(hi ? hi : 1));
	while (per > 1 && (floor(lhi * per) - floor(llo * per) + 1) > rows)
		per /= 2;
	long b0 = (long)floor(llo * per), b1 = (long)floor(lhi * per);
	long nb = b1 - b0 + 1;
	if (nb > HIST_MAX_BINS)
		nb = HIST_MAX_BINS;
	uint64_t counts[HIST_MAX_BINS] = { 0 }, zero = 0, top = 1;
	unsigned it = 0;
	struct xflow_hist_bucket bk;
	while (xflow_hist_next(hist, &it, &bk)) {
		if (bk.low == 0) {
			zero += bk.count;
			continue;
		}
		long k = (long)floor(log2((double)bk.low) * per) - b0;
		if (k < 0)
			k = 0;
		if (k >= nb)
			k = nb - 1;
		counts[k] += bk.count;
	}
	for (long k = 0; k < nb; k++)
		if (counts[k] > top)
			top = counts[k];
	if (zero > top)
		top = zero;
	int wbar = cv->cols - 34;
	if (wbar < 4)
		wbar = 4;
	xft_canvas_printf(cv, y + 2, 0, XFT_A_HEADER, "%-21s %10s  %s", "BUCKET", "COUNT",
			  per > 1 ? "(log scale)" : "(log scale, one bin per octave)");
	xft_canvas_paint(cv, y + 2, 0, cv->cols, XFT_A_HEADER);
	int line = y + 3;
	if (zero && line < y + h) {
		xft_canvas_printf(cv, line, 0, XFT_A_NORMAL, "[%8s, %8s) %10" PRIu64, "0ns", "1ns", zero);
		xft_canvas_fill(cv, line, 34, (int)((double)zero / (double)top * wbar + 0.5), XFT_A_BAR, 0x2588);
		line++;
	}
	for (long k = 0; k < nb && line < y + h; k++, line++) {
		double l0 = exp2((double)(b0 + k) / per), l1 = exp2((double)(b0 + k + 1) / per);
		xft_format_ns((uint64_t)ceil(l0), a, sizeof(a));
		xft_format_ns((uint64_t)ceil(l1), b, sizeof(b));
		xft_canvas_printf(cv, line, 0, XFT_A_NORMAL, "[%8s, %8s) %10" PRIu64, a, b, counts[k]);
		int n = (int)((double)counts[k] / (double)top * wbar + 0.5);
		if (n < 1 && counts[k])
			n = 1;
		xft_canvas_fill(cv, line, 34, n, XFT_A_BAR, 0x2588);
	}
}

static unsigned hist_key(struct xft_app *app, int key)
{
	if (key == XFT_KEY_ESC || key == XFT_KEY_LEFT || key == XFT_KEY_BACKSPACE) {
		app->ui.view = XFT_VIEW_HOPS;
		return XFT_RX_HANDLED | XFT_RX_REDRAW;
	}
	/* Up and down walk the hops in the hops view's order. */
	if (key == XFT_KEY_UP || key == XFT_KEY_DOWN) {
		struct xft_list_state *l = &app->ui.list[XFT_VIEW_HOPS];
		list_key(l, app->frame.nhop_shown, 1, key);
		open_hist(app, l->sel);
		return XFT_RX_HANDLED | XFT_RX_REDRAW;
	}
	return 0;
}

static const struct xft_view hist_view = {
	.name = "Histogram",
	.count = hist_count,
	.draw = hist_draw,
	.key = hist_key,
};

/* --- aspects view --------------------------------------------------------- */

static size_t aspects_count(struct xft_app *app)
{
	return app->naspects;
}

/* The aspect whose weaving notes the view's last line shows: the selected
 * one if it has any, else the first that has. */
static const struct xft_aspect_row *aspect_noted(const struct xft_app *app, size_t sel)
{
	if (sel < app->naspects && app->aspects[sel].info.note)
		return &app->aspects[sel];
	for (unsigned i = 0; i < app->naspects; i++)
		if (app->aspects[i].info.note)
			return &app->aspects[i];
	return NULL;
}

static void aspects_draw(struct xft_app *app, struct xft_canvas *cv, int y, int h)
{
	struct xft_list_state *l = &app->ui.list[XFT_VIEW_ASPECTS];
	int wname = cv->cols - 60; /* what the other columns leave */
	if (wname < 10)
		wname = 10;
	xft_canvas_fill(cv, y, 0, cv->cols, XFT_A_HEADER, ' ');
	xft_canvas_printf(cv, y, 0, XFT_A_HEADER, "%-3s %-*s %-9s %5s %5s %8s %10s %6s %6s", "ON", wname,
			  "ASPECT", "SOURCE", "SITES", "TRAPS", "HITS/S", "HITS", "DROPS", "FAULTS");
	/* The last lines, when there is room for them and a row: what weaving
	 * said about an aspect, and why the selected aspect's sites, if any,
	 * are served by breakpoints (each hit a trap) rather than jumps. */
	const struct xft_aspect_row *noted = aspect_noted(app, l->sel);
	const struct xft_aspect_row *trapped = NULL;
	if (l->sel < app->naspects && app->aspects[l->sel].info.trap_sites && app->aspects[l->sel].info.trap_why)
		trapped = &app->aspects[l->sel];
	if (h < 3)
		noted = trapped = NULL;
	else if (h < 4)
		trapped = NULL;
	int rows = h - 1 - (noted != NULL) - (trapped != NULL);
	list_fix(l, app->naspects, rows);
	if (!app->naspects) {
		empty_note(cv, y + 1, "The collectors report no aspects.");
		return;
	}
	for (int i = 0; i < rows && l->top + (size_t)i < app->naspects; i++) {
		size_t r = l->top + (size_t)i;
		const struct xft_aspect_row *a = &app->aspects[r];
		int sel = r == l->sel, attr = sel ? XFT_A_SELECTED : XFT_A_NORMAL;
		if (sel)
			xft_canvas_fill(cv, y + 1 + i, 0, cv->cols, attr, ' ');
		char name[256], src[16];
		snprintf(name, sizeof(name), "%-*.*s", wname, wname, a->info.name ? a->info.name : "?");
		snprintf(src, sizeof(src), "%.9s", app->src[a->src].ops->name);
		xft_canvas_printf(cv, y + 1 + i, 0, attr,
				  "%-3s %s %-9s %5" PRIu32 " %5" PRIu32 " %8.0f %10" PRIu64 " %6" PRIu64 " %6" PRIu64,
				  a->info.enabled ? "on" : "off", name, src, a->info.sites, a->info.trap_sites,
				  a->hits_per_s, a->info.hits, a->info.drops, a->info.faults);
		if (!a->info.enabled && !sel)
			xft_canvas_paint(cv, y + 1 + i, 0, cv->cols, XFT_A_DIM);
	}
	int foot = y + 1 + rows;
	if (trapped)
		xft_canvas_printf(cv, foot++, 0, XFT_A_DIM,
				  "%" PRIu32 " of %" PRIu32 " sites by breakpoint (a trap per hit): %s",
				  trapped->info.trap_sites, trapped->info.sites, trapped->info.trap_why);
	if (noted)
		xft_canvas_printf(cv, foot, 0, XFT_A_WARN, "%s: %s", noted->info.name ? noted->info.name : "?",
				  noted->info.note);
}

static unsigned aspects_key(struct xft_app *app, int key)
{
	if (key == ' ' || key == XFT_KEY_F(9) || key == XFT_KEY_ENTER) {
		size_t sel = app->ui.list[XFT_VIEW_ASPECTS].sel;
		if (sel < app->naspects) {
			int rc = xft_app_aspect_toggle(app, (unsigned)sel);
			const struct xft_aspect_row *a = &app->aspects[sel];
			if (rc)
				xft_app_message(app, "%s: cannot toggle: %s", a->info.name, strerror(-rc));
			else
				xft_app_message(app, "%s %s", a->info.name, a->info.enabled ? "on" : "off");
		}
		return XFT_RX_HANDLED | XFT_RX_REDRAW;
	}
	return 0;
}

static void aspect_text(struct xft_app *app, size_t row, char *buf, size_t len)
{
	snprintf(buf, len, "%s", app->aspects[row].info.name ? app->aspects[row].info.name : "");
}

static const struct xft_view aspects_view = {
	.name = "Aspects",
	.count = aspects_count,
	.draw = aspects_draw,
	.key = aspects_key,
	.row_text = aspect_text,
};

/* --- domains view --------------------------------------------------------- */

static size_t domains_count(struct xft_app *app)
{
	return app->ndomains;
}

static void domains_draw(struct xft_app *app, struct xft_canvas *cv, int y, int h)
{
	struct xft_list_state *l = &app->ui.list[XFT_VIEW_DOMAINS];
	int wsrc = cv->cols - (5 + 12 + 8 + 11 + 9 + 8 + 6 + 6);
	if (wsrc < 10)
		wsrc = 10;
	xft_canvas_fill(cv, y, 0, cv->cols, XFT_A_HEADER, ' ');
	xft_canvas_printf(cv, y, 0, XFT_A_HEADER, "%4s %-11s %-*s %7s %10s %8s %7s %5s %5s", "ID", "NAME",
			  wsrc, "SOURCE", "TARGETS", "RECORDS", "REC/S", "DROPS", "LIES", "STATE");
	list_fix(l, app->ndomains, h - 1);
	if (!app->ndomains) {
		empty_note(cv, y + 1, "The collectors report no domains.");
		return;
	}
	for (int i = 0; i < h - 1 && l->top + (size_t)i < app->ndomains; i++) {
		size_t r = l->top + (size_t)i;
		const struct xft_domain_row *d = &app->domains[r];
		int sel = r == l->sel, attr = sel ? XFT_A_SELECTED : XFT_A_NORMAL;
		/* Its lies by kind after its source: where the user looks
		 * when the LIES column is not 0. */
		char lies[256], source[600];
		xft_lies_text(&d->info.lies, lies, sizeof(lies));
		snprintf(source, sizeof(source), "%s%s%s", d->info.source ? d->info.source : app->src[d->src].spec,
			 lies[0] ? "; " : "", lies);
		if (sel)
			xft_canvas_fill(cv, y + 1 + i, 0, cv->cols, attr, ' ');
		xft_canvas_printf(cv, y + 1 + i, 0, attr,
				  "%4u %-11.11s %-*.*s %7" PRIu32 " %10" PRIu64 " %8.0f %7" PRIu64 " %5" PRIu64 " %5s",
				  d->info.id, d->info.name ? d->info.name : "?", wsrc, wsrc, source, d->info.targets,
				  d->info.records, d->per_s, d->info.drops, xflow_domain_lies_total(&d->info.lies),
				  d->info.gone ? "gone" : "live");
	}
}

static void domain_text(struct xft_app *app, size_t row, char *buf, size_t len)
{
	const struct xft_domain_row *d = &app->domains[row];
	char lies[256];
	xft_lies_text(&d->info.lies, lies, sizeof(lies));
	snprintf(buf, len, "%s %s %s", d->info.name ? d->info.name : "", d->info.source ? d->info.source : "", lies);
}

static const struct xft_view domains_view = {
	.name = "Domains",
	.count = domains_count,
	.draw = domains_draw,
	.row_text = domain_text,
};

/* --- hypervisor view (xentrace) -------------------------------------------- */

static int hv_available(struct xft_app *app)
{
	return app->have_hv_source;
}

static size_t hv_count(struct xft_app *app)
{
	if (!app->hv)
		return 0;
	return app->ui.hv_focus ? app->hv->nevents : app->hv->nvcpus;
}

static const struct xft_table *hv_focus(struct xft_app *app, struct xft_list_state **list)
{
	*list = app->ui.hv_focus ? &app->ui.hv_events : &app->ui.list[XFT_VIEW_HYPERVISOR];
	return app->ui.hv_focus ? &xft_hv_event_table : &xft_hv_vcpu_table;
}

static void hv_table(struct xft_app *app, struct xft_canvas *cv, int y, int rows, const struct xft_table *t,
		     struct xft_list_state *l, const void *data, size_t size, const uint32_t *order, size_t n,
		     int focused)
{
	int w[16];
	xft_table_widths(t, cv->cols, w);
	draw_table_header(cv, y, t, w, focused ? l->sort : -1, l->desc);
	list_fix(l, n, rows);
	(void)app;
	for (int i = 0; i < rows && l->top + (size_t)i < n; i++) {
		size_t r = l->top + (size_t)i;
		draw_table_row(cv, y + 1 + i, t, w, (const char *)data + order[r] * size, focused && r == l->sel);
	}
}

static void hv_draw(struct xft_app *app, struct xft_canvas *cv, int y, int h)
{
	const struct xflow_hv_summary *hv = app->hv;
	xft_canvas_fill(cv, y, 0, cv->cols, XFT_A_HEADER, ' ');
	if (!hv) {
		empty_note(cv, y + 1, app->have_hv_source ? "No hypervisor records yet: waiting for xentrace."
							  : "No collector gives hypervisor state: try --xentrace FILE --cpu-hz HZ.");
		return;
	}
	char tot[16], line[1024], state[600], skipped[160];
	xft_format_ns(hv->total_ns, tot, sizeof(tot));
	xft_hv_state_text(hv, state, sizeof(state));
	xft_hv_skipped_text(hv, skipped, sizeof(skipped));
	int o = snprintf(line, sizeof(line), "Xen %s at %.2fGHz, %" PRIu64 " records%s%s; lost %" PRIu64
			 "; unknown %" PRIu64 "; %s",
			 tot, (double)hv->cpu_hz / 1e9, hv->records, hv->complete || hv->damage ? ", " : "",
			 hv->complete || hv->damage ? state : "", hv->lost_records, hv->unknown_total, skipped);
	if (!hv->complete && hv->size && o > 0 && (size_t)o < sizeof(line))
		snprintf(line + o, sizeof(line) - (size_t)o, "; read %.0f%%",
			 100.0 * (double)hv->bytes / (double)hv->size);
	xft_canvas_put(cv, y, 0, XFT_A_TITLE, line, -1);
	int avail = h - 3; /* the line above and two table headers */
	if (avail < 2)
		avail = 2;
	int vrows = (int)hv->nvcpus <= avail / 2 ? (int)hv->nvcpus : avail / 2;
	if (vrows < 1)
		vrows = 1;
	int erows = avail - vrows;
	hv_table(app, cv, y + 1, vrows, &xft_hv_vcpu_table, &app->ui.list[XFT_VIEW_HYPERVISOR], hv->vcpus,
		 sizeof(*hv->vcpus), app->hv_vcpu_order, hv->nvcpus, !app->ui.hv_focus);
	hv_table(app, cv, y + 2 + vrows, erows, &xft_hv_event_table, &app->ui.hv_events, hv->events,
		 sizeof(*hv->events), app->hv_event_order, hv->nevents, app->ui.hv_focus);
	if (!hv->nevents)
		empty_note(cv, y + 3 + vrows, "No exits, PV events or hypercalls recorded.");
}

static unsigned hv_key(struct xft_app *app, int key)
{
	if (key == XFT_KEY_ENTER) {
		app->ui.hv_focus = !app->ui.hv_focus;
		xft_app_message(app, app->ui.hv_focus ? "events table" : "vcpus table");
		return XFT_RX_HANDLED | XFT_RX_REDRAW;
	}
	if (app->ui.hv_focus && list_key(&app->ui.hv_events, hv_count(app), page_rows(app), key))
		return XFT_RX_HANDLED | XFT_RX_REDRAW;
	return 0;
}

static void hv_text(struct xft_app *app, size_t row, char *buf, size_t len)
{
	const struct xflow_hv_summary *hv = app->hv;
	char dom[16];
	if (app->ui.hv_focus) {
		const struct xflow_hv_event *e = &hv->events[app->hv_event_order[row]];
		xft_hv_domain_name(e->domain, dom, sizeof(dom));
		snprintf(buf, len, "%s %s %s", dom, xft_hv_kind_name(e->kind), e->name ? e->name : "");
	} else {
		const struct xflow_hv_vcpu *v = &hv->vcpus[app->hv_vcpu_order[row]];
		xft_hv_domain_name(v->domain, dom, sizeof(dom));
		snprintf(buf, len, "%s v%" PRIu32 " %sv%" PRIu32, dom, v->vcpu, dom, v->vcpu);
	}
}

static const struct xft_view hv_view = {
	.name = "Hypervisor",
	.table = &xft_hv_vcpu_table,
	.count = hv_count,
	.draw = hv_draw,
	.key = hv_key,
	.row_text = hv_text,
	.focus = hv_focus,
	.available = hv_available,
};

static const struct xft_view *const views[XFT_VIEW_N] = {
	[XFT_VIEW_HOPS] = &hops_view,       [XFT_VIEW_FLOWS] = &flows_view,
	[XFT_VIEW_PATH] = &path_view,       [XFT_VIEW_HIST] = &hist_view,
	[XFT_VIEW_ASPECTS] = &aspects_view, [XFT_VIEW_DOMAINS] = &domains_view,
	[XFT_VIEW_HYPERVISOR] = &hv_view,
};

static int view_shown(struct xft_app *app, int v)
{
	return !views[v]->available || views[v]->available(app);
}

/* --- the common parts ------------------------------------------------------ */

static void draw_header(struct xft_app *app, struct xft_canvas *cv)
{
	char up[32], mem[32], line[1024];
	size_t o;
	const struct xft_agg_stats *st = &app->frame.st;
	fmt_uptime(app->now_ns - app->start_ns, up, sizeof(up));

	/* Whether Xen's scheduler trace is joined to the flows, and how well,
	 * at the right of the first line; the note gives way to it. */
	char sched[96];
	const struct xft_sched_status *sch = &app->frame.sched;
	xft_sched_status_text(sch, sched, sizeof(sched));
	int ns = 0;
	for (const char *c = sched; *c; c++)
		ns += ((unsigned char)*c & 0xc0) != 0x80; /* cells: UTF-8 lead bytes */
	int sx = cv->cols - ns;
	xft_canvas_put(cv, 0, 0, XFT_A_TITLE, "xflowtop", -1);
	int room = sx > 20 ? sx - 11 : -1; /* too narrow for both: the note alone */
	xft_canvas_put(cv, 0, 9, XFT_A_VALUE,
		       app->nothing_woven ? XFT_NOTHING_WOVEN : app->note ? app->note : "live I/O flows", room);
	if (room >= 0)
		xft_canvas_put(cv, 0, sx, !sch->joined ? XFT_A_DIM : sch->trace_lost ? XFT_A_WARN : XFT_A_VALUE, sched, -1);

	/* Domains grouped by the collector that reaches them. */
	o = (size_t)snprintf(line, sizeof(line), "Domains:");
	for (unsigned s = 0; s < app->nsrc; s++) {
		int any = 0;
		for (unsigned d = 0; d < app->ndomains && o < sizeof(line); d++)
			if (app->domains[d].src == s) {
				o += (size_t)snprintf(line + o, sizeof(line) - o, " %s[%u]%s",
						      app->domains[d].info.name ? app->domains[d].info.name : "?",
						      app->domains[d].info.id, app->domains[d].info.gone ? "(gone)" : "");
				any = 1;
			}
		if (o < sizeof(line))
			o += (size_t)snprintf(line + o, sizeof(line) - o, "%s via %s%s", any ? "" : " -",
					      app->src[s].spec, app->src[s].ended ? " (ended)" : "");
		if (s + 1 < app->nsrc && o < sizeof(line))
			o += (size_t)snprintf(line + o, sizeof(line) - o, ";");
	}
	if (!app->nsrc && o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, " none (no collector)");
	/* The flow files the collectors weave; those named with -f that none
	 * weaves (no agent collector) were checked at start, and are said. */
	if (o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, "  Flow files:%s", app->nwoven ? "" : " none");
	for (unsigned i = 0; i < app->nwoven && o < sizeof(line); i++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, " %s", app->woven[i]);
	const char *sep = " (not woven, no collector weaves flows:";
	for (unsigned i = 0; i < app->cfg.nflow_files && o < sizeof(line); i++)
		if (!xft_app_flow_file_woven(app, app->cfg.flow_files[i])) {
			o += (size_t)snprintf(line + o, sizeof(line) - o, "%s %s", sep, app->cfg.flow_files[i]);
			sep = "";
		}
	if (!*sep && o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, ")");
	xft_canvas_put(cv, 1, 0, XFT_A_NORMAL, line, -1);
	xft_canvas_put(cv, 1, 0, XFT_A_TITLE, "Domains:", -1);

	/* Losses the producers' numbers showed only when there are any. */
	char seen[48] = "";
	if (st->records_lost)
		snprintf(seen, sizeof(seen), " seen lost %" PRIu64, st->records_lost);
	char over[48] = "";
	/* Only when records came late with it (report.c says why). */
	if (st->late && st->window_full)
		snprintf(over, sizeof(over), " reorder overflows %" PRIu64, st->window_full);
	snprintf(line, sizeof(line),
		 "Records: %.0f/s total %" PRIu64 " drops %" PRIu64 "%s bad %" PRIu64
		 " late %" PRIu64 "%s up %s",
		 app->rate, st->records, app->drops, seen, app->bad, st->late, over, up);
	xft_canvas_put(cv, 2, 0, XFT_A_NORMAL, line, -1);
	xft_canvas_put(cv, 2, 0, XFT_A_TITLE, "Records:", -1);

	char rss[32];
	fmt_bytes(st->memory_bytes, mem, sizeof(mem));
	fmt_bytes(app->resident_bytes, rss, sizeof(rss));
	/* Flows that were lost or seen in part only when there are any: the
	 * line has room for the usual ones at 80 columns. */
	o = (size_t)snprintf(line, sizeof(line), "Flows: live %" PRIu64 " done %" PRIu64, st->flows_live,
			     st->flows_finished);
	const struct {
		const char *what;
		uint64_t n;
	} lost[] = { { "partial", st->flows_partial }, { "expired", st->flows_expired },
		     { "evicted", st->flows_evicted } };
	for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]) && o < sizeof(line); i++)
		if (lost[i].n)
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %s %" PRIu64, lost[i].what, lost[i].n);
	if (o < sizeof(line))
		snprintf(line + o, sizeof(line) - o, "  Hops %zu  Mem %s (bound %s)", app->frame.nhops, rss, mem);
	xft_canvas_put(cv, 3, 0, XFT_A_NORMAL, line, -1);
	xft_canvas_put(cv, 3, 0, XFT_A_TITLE, "Flows:", -1);
}

static void draw_tabs(struct xft_app *app, struct xft_canvas *cv, int y)
{
	int x = 0;
	for (int v = 0; v < XFT_VIEW_N; v++) {
		char t[32];
		if (!view_shown(app, v))
			continue;
		snprintf(t, sizeof(t), " %d %s ", v + 1, views[v]->name);
		x += xft_canvas_put(cv, y, x, v == app->ui.view ? XFT_A_TAB : XFT_A_DIM, t, -1);
	}
	char right[300];
	right[0] = '\0';
	if (app->ui.message[0] && app->now_ns < app->ui.message_until)
		snprintf(right, sizeof(right), "%s", app->ui.message);
	else if (app->ui.paused)
		snprintf(right, sizeof(right), "PAUSED");
	else if (app->ui.filter_text[0])
		snprintf(right, sizeof(right), "filter: %s", app->ui.filter_text);
	int n = (int)strlen(right);
	if (n) {
		/* A message that does not fit beside the tabs covers their end:
		 * it lasts a moment, and a clipped message says nothing. */
		int rx = cv->cols - n - 1;
		if (rx < x + 1 && !(app->ui.message[0] && app->now_ns < app->ui.message_until))
			rx = x + 1;
		if (rx < 0)
			rx = 0;
		xft_canvas_put(cv, y, rx, app->ui.paused && !app->ui.message[0] ? XFT_A_WARN : XFT_A_VALUE,
			       right, -1);
	}
}

static void draw_fkeys(struct xft_app *app, struct xft_canvas *cv, int y)
{
	xft_canvas_fill(cv, y, 0, cv->cols, XFT_A_KEYTEXT, ' ');
	if (app->ui.prompt) {
		int x = xft_canvas_put(cv, y, 0, XFT_A_KEY, app->ui.prompt == '/' ? "Search: " : "Filter: ", -1);
		x += xft_canvas_put(cv, y, x, XFT_A_KEYTEXT, app->ui.prompt_buf, -1);
		xft_canvas_fill(cv, y, x, 1, XFT_A_KEY, ' ');
		xft_canvas_put(cv, y, x + 2, XFT_A_KEYTEXT, " Enter done  Esc cancel", -1);
		return;
	}
	static const struct {
		const char *key, *label;
	} bar[] = {
		{ "F1", "Help  " }, { "F3", "Search" }, { "F4", "Filter" }, { "F5", "Snap  " },
		{ "F6", "SortBy" }, { "F7", "Pause " }, { "F9", "Toggle" }, { "F10", "Quit  " },
	};
	int x = 0;
	for (size_t i = 0; i < sizeof(bar) / sizeof(bar[0]); i++) {
		x += xft_canvas_put(cv, y, x, XFT_A_KEY, bar[i].key, -1);
		const char *label = bar[i].label;
		if (!strcmp(bar[i].key, "F7") && app->ui.paused)
			label = "Resume";
		x += xft_canvas_put(cv, y, x, XFT_A_KEYTEXT, label, -1);
	}
}

static const char *const help_lines[] = {
	"xflowtop: live I/O flows through Xen domains.  Press any key to return.",
	"",
	"Views:   1 Hops (where time goes)   2 Slowest flows   3 Path of a flow",
	"         4 Histogram of a hop       5 Aspects          6 Domains",
	"         7 Hypervisor (with --xentrace): runstates, exits, PV events",
	"         Tab / Shift-Tab next / previous view",
	"Moving:  Up Down PgUp PgDn Home End (or j k)",
	"Enter:   Hops: histogram of the hop.  Slowest: the flow's path.",
	"         Hypervisor: moves between the vcpus and the events table.",
	"Esc/Left back from Path and Histogram",
	"Sort:    < > (or F6) choose the column, I invert the order",
	"Find:    / or F3 search (n next), \\ or F4 filter by domain, function, file;",
	"         words must all match; prefix one with domain: function: or file:",
	"Other:   p or F7 pause the display (collecting goes on),",
	"         s or F5 save a snapshot (text, JSON, Perfetto trace),",
	"         space or F9 toggle the selected aspect, q or F10 quit",
	"",
	"The header: domains and the collectors that reach them, record rate,",
	"drops, late records (and reorder-window overflows, when some came late),",
	"flows live / done /",
	"expired / evicted, hops, and the fixed memory bound of the model;",
	"top right, whether Xen's scheduler trace is joined and its clock error.",
	"Split bars: =run #wait ~notify +backend -blocked .offline *xen ?unknown",
	"(the split: where each hop's time went; xflowtop(1), THE SPLIT).",
};

static void draw_help(struct xft_canvas *cv)
{
	xft_canvas_clear(cv);
	for (size_t i = 0; i < sizeof(help_lines) / sizeof(help_lines[0]); i++)
		xft_canvas_put(cv, (int)i + 1, 1, i == 0 ? XFT_A_TITLE : XFT_A_NORMAL, help_lines[i], -1);
}

void xft_ui_draw(struct xft_app *app, struct xft_canvas *cv)
{
	xft_canvas_clear(cv);
	if (app->ui.help) {
		draw_help(cv);
		return;
	}
	if (cv->rows < 8) {
		xft_canvas_put(cv, 0, 0, XFT_A_WARN, "xflowtop: the terminal is too small", -1);
		return;
	}
	draw_header(app, cv);
	draw_tabs(app, cv, 4);
	views[app->ui.view]->draw(app, cv, 5, cv->rows - 6);
	draw_fkeys(app, cv, cv->rows - 1);
}

/* --- keys ----------------------------------------------------------------- */

static void search_next(struct xft_app *app, int from_next)
{
	const struct xft_view *v = views[app->ui.view];
	struct xft_list_state *l = &app->ui.list[app->ui.view];
	if (v->focus)
		v->focus(app, &l); /* the table with the focus */
	size_t n = v->count(app);
	if (!v->row_text || !n || !app->ui.search_text[0])
		return;
	char low[128];
	snprintf(low, sizeof(low), "%s", app->ui.search_text);
	for (size_t k = 0; k < n; k++) {
		size_t r = (l->sel + k + (from_next ? 1 : 0)) % n;
		char text[2048];
		v->row_text(app, r, text, sizeof(text));
		if (strcasestr(text, low)) {
			l->sel = r;
			return;
		}
	}
	xft_app_message(app, "not found: %s", app->ui.search_text);
}

static unsigned prompt_key(struct xft_app *app, int key)
{
	struct xft_ui *ui = &app->ui;
	size_t len = strlen(ui->prompt_buf);
	int filter = ui->prompt == '\\';
	switch (key) {
	case XFT_KEY_ENTER:
		ui->prompt = 0;
		if (!filter) {
			snprintf(ui->search_text, sizeof(ui->search_text), "%s", ui->prompt_buf);
			search_next(app, 0);
		}
		return XFT_RX_REDRAW;
	case XFT_KEY_ESC:
		ui->prompt = 0;
		if (filter) {
			ui->filter_text[0] = '\0';
			xft_filter_parse(&ui->filter, "");
			return XFT_RX_REDRAW | XFT_RX_REORDER;
		}
		return XFT_RX_REDRAW;
	case XFT_KEY_BACKSPACE:
		if (len)
			ui->prompt_buf[len - 1] = '\0';
		break;
	default:
		if (key < 0x20 || key > 0x7e || len + 1 >= sizeof(ui->prompt_buf))
			return XFT_RX_NONE; /* only printable ASCII in prompts */
		ui->prompt_buf[len] = (char)key;
		ui->prompt_buf[len + 1] = '\0';
	}
	if (filter) {
		/* The filter applies as it is typed, as htop's does. */
		snprintf(ui->filter_text, sizeof(ui->filter_text), "%s", ui->prompt_buf);
		xft_filter_parse(&ui->filter, ui->filter_text);
		return XFT_RX_REDRAW | XFT_RX_REORDER;
	}
	snprintf(ui->search_text, sizeof(ui->search_text), "%s", ui->prompt_buf);
	search_next(app, 0);
	return XFT_RX_REDRAW;
}

static unsigned sort_key(struct xft_app *app, int key)
{
	const struct xft_view *v = views[app->ui.view];
	struct xft_list_state *l = &app->ui.list[app->ui.view];
	const struct xft_table *t = v->focus ? v->focus(app, &l) : v->table;
	if (!t) {
		xft_app_message(app, "the %s view has a fixed order", v->name);
		return XFT_RX_REDRAW;
	}
	int n = (int)t->ncols;
	if (l->sort < 0 || l->sort >= n)
		l->sort = t->default_sort;
	if (key == 'I') {
		l->desc = !l->desc;
	} else {
		l->sort = (l->sort + (key == '<' ? n - 1 : 1)) % n;
		/* Names read best A to Z; numbers biggest first. */
		l->desc = !t->cols[l->sort].width ? 0 : t->cols[l->sort].right;
	}
	l->sel = l->top = 0;
	xft_app_message(app, "sorted by %s%s", t->cols[l->sort].header, l->desc ? " (descending)" : "");
	return XFT_RX_REDRAW | XFT_RX_REORDER;
}

static void switch_view(struct xft_app *app, int v)
{
	if (!view_shown(app, v)) {
		xft_app_message(app, "the %s view needs a collector that sees Xen (--xentrace FILE)",
				views[v]->name);
		return;
	}
	if (v == XFT_VIEW_HIST && app->ui.view == XFT_VIEW_HOPS)
		open_hist(app, app->ui.list[XFT_VIEW_HOPS].sel);
	if (v == XFT_VIEW_PATH && app->ui.view == XFT_VIEW_FLOWS)
		xft_ui_open_path(app, app->ui.list[XFT_VIEW_FLOWS].sel);
	app->ui.view = v;
}

unsigned xft_ui_key(struct xft_app *app, int key)
{
	struct xft_ui *ui = &app->ui;
	if (ui->help) {
		ui->help = 0;
		return key == 'q' || key == XFT_KEY_F(10) ? XFT_RX_QUIT : XFT_RX_REDRAW;
	}
	if (ui->prompt)
		return prompt_key(app, key);
	unsigned rx = views[ui->view]->key ? views[ui->view]->key(app, key) : 0;
	if (rx & XFT_RX_HANDLED)
		return rx & ~XFT_RX_HANDLED;
	switch (key) {
	case 'q': case 'Q': case XFT_KEY_F(10):
		return XFT_RX_QUIT;
	case 'h': case '?': case XFT_KEY_F(1):
		ui->help = 1;
		return XFT_RX_REDRAW;
	case '\t': case XFT_KEY_BTAB: {
		int v = ui->view;
		do
			v = (v + (key == '\t' ? 1 : XFT_VIEW_N - 1)) % XFT_VIEW_N;
		while (!view_shown(app, v));
		switch_view(app, v);
		return XFT_RX_REDRAW;
	}
	case '1': case '2': case '3': case '4': case '5': case '6': case '7':
		switch_view(app, key - '1');
		return XFT_RX_REDRAW;
	case 'p': case 'P': case 'Z': case XFT_KEY_F(7):
		ui->paused = !ui->paused;
		xft_app_message(app, ui->paused ? "paused: still collecting" : "resumed");
		return XFT_RX_REDRAW | (ui->paused ? 0 : XFT_RX_REFRESH);
	case 's': case 'S': case XFT_KEY_F(5):
		return XFT_RX_SNAPSHOT | XFT_RX_REDRAW;
	case '/': case XFT_KEY_F(3):
		ui->prompt = '/';
		ui->prompt_buf[0] = '\0';
		return XFT_RX_REDRAW;
	case 'n':
		search_next(app, 1);
		return XFT_RX_REDRAW;
	case '\\': case XFT_KEY_F(4):
		ui->prompt = '\\';
		snprintf(ui->prompt_buf, sizeof(ui->prompt_buf), "%s", ui->filter_text);
		return XFT_RX_REDRAW;
	case '<': case '>': case 'I': case XFT_KEY_F(6):
		return sort_key(app, key == XFT_KEY_F(6) ? '>' : key);
	case XFT_KEY_ESC:
		if (ui->filter_text[0]) {
			ui->filter_text[0] = '\0';
			xft_filter_parse(&ui->filter, "");
			return XFT_RX_REDRAW | XFT_RX_REORDER;
		}
		return XFT_RX_NONE;
	default:
		if (list_key(&ui->list[ui->view], views[ui->view]->count(app), page_rows(app), key))
			return XFT_RX_REDRAW;
		return XFT_RX_NONE; /* a key we do not know: ignored */
	}
}
