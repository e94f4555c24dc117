/*
 * Views and keys, drawn off-screen: every view at 80x24 and 200x60, the
 * path view as the paper's Table 2, sorting, search, filter, pause,
 * aspects toggled, and keys that mean nothing are ignored.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collectors/builtin.h"
#include "xflow/session.h"
#include "tests/lib/testlib.h"
#include "tests/tui/apptest.h"
#include "tui/report.h"

static unsigned keys(struct xft_app *app, const int *k, size_t n)
{
	unsigned rx = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned r = xft_ui_key(app, k[i]);
		xft_app_react(app, r & ~(unsigned)XFT_RX_SNAPSHOT);
		rx |= r;
	}
	return rx;
}

static unsigned key(struct xft_app *app, int k)
{
	return keys(app, &k, 1);
}

Test(views, every_view_draws_at_both_sizes)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	static const int sizes[][2] = { { 24, 80 }, { 60, 200 }, { 8, 40 }, { 3, 10 }, { 1, 1 } };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int v = 0; v < XFT_VIEW_N; v++) {
			app->ui.view = v;
			apptest_draw(app, sizes[s][0], sizes[s][1]);
		}
	app->ui.view = XFT_VIEW_HOPS;
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "1 Hops"));
	cr_assert(apptest_screen_has(app, "F10Quit"));
	cr_assert(apptest_screen_has(app, "Domains: linux0[0] linuxU[1] via synthetic"));
	cr_assert(apptest_screen_has(app, "Records:"));
	cr_assert(apptest_screen_has(app, " (bound "));
	/* The bottleneck on the first row under the column header. */
	char line[512];
	xft_canvas_row(&app->canvas, 6, line, sizeof(line));
	cr_assert(strstr(line, "netif_rx") && strstr(line, "netif_receive_skb"), "%s", line);
	apptest_free(app);
}

/* xflowtop --demo [-f @flows], drawn at 24x200. */
static struct xft_app *demo_app(const char *flows)
{
	struct xft_config cfg;
	char err[1024];
	xft_config_defaults(&cfg);
	cfg.demo = 1;
	cfg.limits.max_flows = 1024;
	if (flows) {
		snprintf(cfg.flow_files[0], sizeof(cfg.flow_files[0]), "%s", flows);
		cfg.nflow_files = 1;
	}
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert_eq(xft_app_init(app, &cfg, err, sizeof(err)), 0, "%s", err);
	apptest_draw(app, 24, 200);
	return app;
}

Test(views, demo_note_is_in_the_header)
{
	struct xft_app *app = demo_app(NULL);
	cr_assert(apptest_screen_has(app, XFT_DEMO_NOTE));
	/* Issue 19 item 7: the header names the flow file the demo weaves. */
	cr_expect(apptest_screen_has(app, "/flows/netflow.xml"), "the header does not name netflow.xml");
	cr_expect(!apptest_screen_has(app, "Flow files: none"));
	app->canvas.ascii = 1;
	xft_ui_draw(app, &app->canvas);
	cr_assert(apptest_screen_has(app, "demo: the simulated Xen host - xensim"), "ASCII fallback");
	xft_app_fini(app);
	free(app);
}

/* Issue 19 item 7: -f files are woven by the demo instead of netflow.xml,
 * and the header says which. */
Test(views, demo_weaves_the_f_flow_files)
{
	struct xft_app *app = demo_app("tests/e2e/counts.xml");
	cr_expect(apptest_screen_has(app, XFT_DEMO_NOTE_FLOWS));
	cr_expect(apptest_screen_has(app, "Flow files: tests/e2e/counts.xml"), "the header does not name the -f file");
	cr_expect(!apptest_screen_has(app, "netflow.xml"));
	/* The aspects are the -f file's. */
	cr_expect(apptest_screen_has(app, "Domains: linux0[0] linuxU[1]"));
	int found = 0;
	for (unsigned i = 0; i < app->naspects; i++)
		found |= !strcmp(app->aspects[i].info.name, "xflow segflow");
	cr_expect(found, "segflow is not woven");
	xft_app_fini(app);
	free(app);
}

Test(views, enter_on_the_slowest_flow_shows_table_2)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	key(app, '2');
	cr_assert_eq(app->ui.view, XFT_VIEW_FLOWS);
	key(app, XFT_KEY_ENTER);
	cr_assert_eq(app->ui.view, XFT_VIEW_PATH);
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "ELAPSED"));
	cr_assert(apptest_screen_has(app, "FUNCTION"));
	/* The functions in the order of the paper's Table 2. */
	int last_row = 0;
	for (unsigned i = 0; i < xflow_synthetic_npoints; i++) {
		const char *fn = xflow_synthetic_path[i].function;
		int found = 0;
		for (int y = last_row + 1; y < app->canvas.rows && !found; y++) {
			char line[512];
			xft_canvas_row(&app->canvas, y, line, sizeof(line));
			if (strstr(line, fn)) {
				found = 1;
				last_row = y;
			}
		}
		cr_assert(found, "%s missing or out of order", fn);
	}
	cr_assert(apptest_screen_has(app, "\u2588"), "gap bars");
	cr_assert(apptest_screen_has(app, "0.0 linuxU"));
	key(app, XFT_KEY_ESC);
	cr_assert_eq(app->ui.view, XFT_VIEW_FLOWS);
	apptest_free(app);
}

Test(views, histogram_of_the_selected_hop)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	key(app, XFT_KEY_ENTER); /* on the top hop */
	cr_assert_eq(app->ui.view, XFT_VIEW_HIST);
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "netif_rx \u2192 linux0:netif_receive_skb"));
	cr_assert(apptest_screen_has(app, "p99.9"));
	cr_assert(apptest_screen_has(app, "(log scale)"));
	cr_assert(apptest_screen_has(app, "ms)"));
	key(app, XFT_KEY_DOWN);
	apptest_draw(app, 60, 200);
	cr_assert(apptest_screen_has(app, "network_start_xmit \u2192 linux0:netbk_fill_frags"));
	key(app, XFT_KEY_LEFT);
	cr_assert_eq(app->ui.view, XFT_VIEW_HOPS);
	apptest_free(app);
}

Test(views, sort_keys_move_the_sort_column)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	struct xft_list_state *l = &app->ui.list[XFT_VIEW_HOPS];
	cr_assert_eq(l->sort, XFT_HCOL_TOTAL);
	cr_assert(key(app, '>') & XFT_RX_REORDER);
	cr_assert_eq(l->sort, XFT_HCOL_FROM, "wraps around");
	cr_assert_eq(l->desc, 0, "names sort A to Z");
	const struct xft_hop_row *first = &app->frame.hops[app->frame.hop_order[0]];
	cr_assert_str_eq(first->from_dom, "linux0");
	key(app, '<');
	key(app, '<');
	cr_assert_eq(l->sort, XFT_HCOL_MAX);
	cr_assert_eq(l->desc, 1);
	key(app, 'I');
	cr_assert_eq(l->desc, 0);
	key(app, XFT_KEY_F(6));
	cr_assert_eq(l->sort, XFT_HCOL_TOTAL);
	key(app, '5');
	key(app, '>');
	cr_assert(strstr(app->ui.message, "fixed order"), "%s", app->ui.message);
	apptest_free(app);
}

Test(views, filter_and_search)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	int k[] = { '\\', 'f', 'n', ':', 'b', 'r', '_' };
	keys(app, k, sizeof(k) / sizeof(k[0]));
	cr_assert_eq(app->ui.prompt, '\\');
	cr_assert_eq(app->frame.nhop_shown, 5, "applies as typed");
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "Filter: fn:br_"));
	key(app, XFT_KEY_ENTER);
	cr_assert_eq(app->ui.prompt, 0);
	cr_assert_eq(app->frame.nhop_shown, 5, "kept after Enter");
	xft_app_refresh(app, xflow_monotonic_ns() + 1500000000u);
	cr_assert_eq(app->frame.nhop_shown, 5, "and across refreshes");
	key(app, XFT_KEY_ESC);
	cr_assert_eq(app->frame.nhop_shown, 15, "Esc clears it");

	int s[] = { '/', 's', 'k', 'g', 'e', XFT_KEY_ENTER };
	keys(app, s, sizeof(s) / sizeof(s[0]));
	const struct xft_hop_row *sel = &app->frame.hops[app->frame.hop_order[app->ui.list[XFT_VIEW_HOPS].sel]];
	cr_assert(strstr(sel->to->file, "skge") || strstr(sel->from->file, "skge"));
	size_t first = app->ui.list[XFT_VIEW_HOPS].sel;
	key(app, 'n');
	cr_assert_neq(app->ui.list[XFT_VIEW_HOPS].sel, first, "n finds the next match");
	int miss[] = { '/', 'z', 'z', 'z', XFT_KEY_ENTER };
	keys(app, miss, sizeof(miss) / sizeof(miss[0]));
	cr_assert(strstr(app->ui.message, "not found"));
	apptest_free(app);
}

Test(views, aspects_toggle_through_the_collector)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 0.5);
	key(app, '5');
	cr_assert_eq(app->naspects, 2);
	cr_assert(app->aspects[0].info.enabled);
	key(app, ' ');
	cr_assert(!app->aspects[0].info.enabled);
	uint64_t now = xflow_monotonic_ns() + 1000000000u;
	xft_app_refresh(app, now);
	cr_assert(!app->aspects[0].info.enabled, "the collector says off too");
	uint64_t hits = app->aspects[0].info.hits, recs = app->records;
	xft_app_refresh(app, now + 500000000u);
	cr_assert_eq(app->aspects[0].info.hits, hits, "hits stop");
	cr_assert_eq(app->records, recs);
	cr_assert_eq(app->aspects[0].hits_per_s, 0);
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "off xflow netflow"));
	key(app, ' ');
	xft_app_refresh(app, now + 1000000000u);
	cr_assert(app->aspects[0].info.enabled);
	cr_assert_gt(app->aspects[0].info.hits, hits, "and start again");
	key(app, '6');
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "linuxU"));
	/* What 80 columns leave of the source beside the LIES column. */
	cr_assert(apptest_screen_has(app, "synthetic (gen"));
	apptest_free(app);
}

Test(views, pause_quit_help_snapshot_reactions)
{
	struct xft_app *app = apptest_new("synthetic:rate=100", 0.2);
	cr_assert(xft_ui_key(app, 'p') & XFT_RX_REDRAW);
	cr_assert(app->ui.paused);
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "F7Resume"));
	cr_assert(xft_ui_key(app, 'p') & XFT_RX_REFRESH);
	cr_assert(xft_ui_key(app, 's') & XFT_RX_SNAPSHOT);
	cr_assert(xft_ui_key(app, XFT_KEY_F(5)) & XFT_RX_SNAPSHOT);
	cr_assert(xft_ui_key(app, 'q') & XFT_RX_QUIT);
	cr_assert(xft_ui_key(app, XFT_KEY_F(10)) & XFT_RX_QUIT);
	xft_ui_key(app, 'h');
	cr_assert(app->ui.help);
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "Press any key to return"));
	cr_assert_eq(xft_ui_key(app, 'x') & XFT_RX_QUIT, 0);
	cr_assert(!app->ui.help);
	xft_ui_key(app, '\t');
	cr_assert_eq(app->ui.view, XFT_VIEW_FLOWS);
	xft_ui_key(app, XFT_KEY_BTAB);
	xft_ui_key(app, XFT_KEY_BTAB);
	cr_assert_eq(app->ui.view, XFT_VIEW_DOMAINS);
	apptest_free(app);
}

Test(views, random_keys_never_crash)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 0.5);
	uint64_t rng = 42;
	for (int i = 0; i < 20000; i++) {
		int k;
		uint64_t r = test_rand_next(&rng);
		switch (r % 4) {
		case 0: k = (int)(r >> 8) % 0x110200; break;             /* anything */
		case 1: k = XFT_KEY_BASE + 1 + (int)((r >> 8) % 14); break; /* named keys */
		case 2: k = XFT_KEY_F(1 + (int)((r >> 8) % 12)); break;
		default: k = 0x20 + (int)((r >> 8) % 0x5f); break;          /* ASCII */
		}
		if (k == 'q' || k == 'Q' || k == XFT_KEY_F(10) || k == 's' || k == 'S' || k == XFT_KEY_F(5))
			continue;
		unsigned rx = xft_ui_key(app, k);
		xft_app_react(app, rx & ~(unsigned)(XFT_RX_QUIT | XFT_RX_SNAPSHOT));
		if (i % 97 == 0)
			xft_app_refresh(app, xflow_monotonic_ns() + (uint64_t)i * 100000u);
		if (i % 13 == 0)
			apptest_draw(app, 5 + (int)(r % 70), 1 + (int)((r >> 16) % 250));
	}
	apptest_free(app);
}

/* Names longer than the old 26-column cut, in a saved session replayed. */
#define LONG_FN "a_function_whose_name_is_longer_than_26_columns"
#define LONG_FN2 "another_long_function_name_at_the_end_of_it"

static void write_long_names_session(const char *path)
{
	struct xflow_session_writer *w;
	char err[512] = "";
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(xflow_session_write_site(w, 1, 1, "guestdom", "drivers/net/a.c", 10, LONG_FN, 0), 0);
	cr_assert_eq(xflow_session_write_site(w, 1, 2, "guestdom", "net/core/b.c", 20, "mid", 0), 0);
	cr_assert_eq(xflow_session_write_site(w, 1, 3, "guestdom", "net/core/c.c", 30, LONG_FN2, 0), 0);
	uint64_t t = 1000000000;
	for (uint64_t id = 1; id <= 5; id++) {
		static const uint16_t flags[] = { XFLOW_REC_START, 0, XFLOW_REC_QUIT };
		for (uint32_t k = 0; k < 3; k++) {
			struct xflow_record r;
			memset(&r, 0, sizeof(r));
			r.version = XFLOW_RECORD_VERSION;
			r.flow_id = id;
			r.domain_id = 1;
			r.site_id = k + 1;
			r.flags = flags[k];
			cr_assert_eq(xflow_session_write_record(w, &r, t += 10000), 0);
		}
	}
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
}

/* Issue 19 item 4: every hop names its domain, never by number, and a
 * function's name is not cut at 26 columns when the screen has room: not
 * in the hops view, the flows view, the path view, nor batch text (which
 * has no edge, so grows). */
Test(views, names_are_whole_when_there_is_room)
{
	char path[] = "/tmp/xft-names-XXXXXX", spec[128];
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	write_long_names_session(path);
	snprintf(spec, sizeof(spec), "replay:file=%s,speed=max", path);
	struct xft_app *app = apptest_new(spec, 1.0);
	unlink(path);
	cr_assert_eq(app->frame.st.flows_finished, 5);
	app->ui.view = XFT_VIEW_HOPS;
	apptest_draw(app, 24, 200);
	cr_expect(apptest_screen_has(app, "guestdom:" LONG_FN), "the hops view cuts a name at 200 columns");
	cr_expect(apptest_screen_has(app, "guestdom:" LONG_FN2));
	/* Narrow: names are cut, but the domain stays a name. */
	apptest_draw(app, 24, 80);
	cr_expect(apptest_screen_has(app, "guestdom:a_func"));
	cr_expect(!apptest_screen_has(app, "1:a_func"), "a hop named by domain id");
	app->ui.view = XFT_VIEW_FLOWS;
	apptest_draw(app, 24, 200);
	cr_expect(apptest_screen_has(app, LONG_FN " "), "the flows view cuts a name at 200 columns");
	app->ui.view = XFT_VIEW_PATH;
	apptest_draw(app, 24, 200);
	cr_expect(apptest_screen_has(app, LONG_FN), "the path view cuts a name at 200 columns");
	cr_expect(apptest_screen_has(app, LONG_FN2));
	/* Batch text at its 100 columns: the name columns grow instead. */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	xft_report_hops_text(app, f, 100, 0);
	xft_report_flows_text(app, f, 100, 0);
	fclose(f);
	cr_expect(strstr(text, "guestdom:" LONG_FN " "), "%s", text);
	cr_expect(strstr(text, "guestdom:" LONG_FN2), "%s", text);
	cr_expect(strstr(text, " " LONG_FN " "), "%s", text);
	free(text);
}

/* What weaving said about an aspect (a site left out, and why) is on the
 * Aspects view's last line: the selected aspect's, else the first one's. */
Test(views, aspects_view_shows_weaving_notes)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 0.5);
	key(app, '5');
	cr_assert_eq(app->naspects, 2);
	apptest_draw(app, 24, 100);
	cr_assert(!apptest_screen_has(app, "warning"), "no note, no line");
	static const char note[] = "1 warning; the first: variable 'part' is optimized out at 0x1303";
	app->aspects[1].info.note = note;
	apptest_draw(app, 24, 160);
	char line[512], want[256];
	snprintf(want, sizeof(want), "%s: %s", app->aspects[1].info.name, note);
	bool found = false;
	for (int y = 0; y < app->canvas.rows; y++) {
		xft_canvas_row(&app->canvas, y, line, sizeof(line));
		found |= strstr(line, want) != NULL;
	}
	cr_expect(found, "want \"%s\" on screen", want);
	/* Both aspect rows are still there above it. */
	cr_expect(apptest_screen_has(app, app->aspects[0].info.name));
	apptest_free(app);
}

/* Sites served by breakpoints are counted in the TRAPS column, and the
 * selected aspect's reason is a line of its own, above the weaving note. */
Test(views, aspects_view_says_why_sites_trap)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 0.5);
	key(app, '5');
	cr_assert_eq(app->naspects, 2);
	apptest_draw(app, 24, 120);
	cr_assert(apptest_screen_has(app, "TRAPS"));
	cr_assert(!apptest_screen_has(app, "by breakpoint"), "no trap sites, no line");
	static const char why[] = "instruction at 0x4011a2 is a jump target inside the patch";
	static const char note[] = "1 warning; the first: variable 'part' is optimized out";
	struct xflow_aspect_info *ai = &app->aspects[app->ui.list[XFT_VIEW_ASPECTS].sel].info;
	ai->sites = 7;
	ai->trap_sites = 3;
	ai->trap_why = why;
	ai->note = note;
	apptest_draw(app, 24, 160);
	char want[256];
	snprintf(want, sizeof(want), "3 of 7 sites by breakpoint (a trap per hit): %s", why);
	int trap_row = -1, note_row = -1;
	char line[512];
	for (int y = 0; y < app->canvas.rows; y++) {
		xft_canvas_row(&app->canvas, y, line, sizeof(line));
		if (strstr(line, want))
			trap_row = y;
		if (strstr(line, note))
			note_row = y;
	}
	cr_expect_geq(trap_row, 0, "want \"%s\" on screen", want);
	cr_expect_eq(note_row, trap_row + 1, "the note below the trap line: rows %d, %d", trap_row, note_row);
	/* The other aspect selected: its sites are all jumps, so no trap line,
	 * but the note (the first aspect's with one) stays. */
	key(app, XFT_KEY_DOWN);
	apptest_draw(app, 24, 160);
	cr_expect(!apptest_screen_has(app, "by breakpoint"));
	cr_expect(apptest_screen_has(app, note));
	apptest_free(app);
}

/* The header's memory figure says what it is: the process's resident set,
 * beside the model's bound (address space reserved at start, which is not
 * what is held: 94 MB "fixed" was shown for a process holding 29 MB). */
Test(views, header_memory_is_what_is_held_and_the_bound)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 0.5);
	cr_assert_gt(app->resident_bytes, 1u << 20, "the process holds more than a megabyte");
	cr_assert_lt(app->resident_bytes, (uint64_t)1 << 36);
	apptest_draw(app, 24, 160);
	char line[512];
	xft_canvas_row(&app->canvas, 3, line, sizeof(line));
	char *mem = strstr(line, "Mem ");
	cr_assert(mem, "%s", line);
	double rss, bound;
	char u1[8], u2[8];
	cr_assert_eq(sscanf(mem, "Mem %lf%3s (bound %lf%3s", &rss, u1, &bound, u2), 4, "%s", line);
	cr_expect(strcmp(u1, "MiB") == 0 || strcmp(u1, "GiB") == 0, "%s", line);
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	xft_report_summary_text(app, f);
	fclose(f);
	char want[128];
	snprintf(want, sizeof(want), "memory: %llu bytes resident, of which the model is bounded by the %llu",
		 (unsigned long long)app->resident_bytes, (unsigned long long)xft_agg_stats(app->agg)->memory_bytes);
	cr_expect(strstr(txt, want), "want \"%s\" in %s", want, txt);
	free(txt);
	apptest_free(app);
}

/* --- where the time went (issue 24), on splits made by hand ---------------- */

/* Dump the screen when a check fails. */
static void screen_dump(struct xft_app *app)
{
	char line[4096];
	for (int y = 0; y < app->canvas.rows; y++) {
		xft_canvas_row(&app->canvas, y, line, sizeof(line));
		fprintf(stderr, "|%s|\n", line);
	}
}

/* The row of the screen that starts with @prefix, or -1. */
static int row_starting(struct xft_app *app, const char *prefix, char *line, size_t len)
{
	for (int y = 0; y < app->canvas.rows; y++) {
		xft_canvas_row(&app->canvas, y, line, len);
		if (!strncmp(line, prefix, strlen(prefix)))
			return y;
	}
	return -1;
}

static unsigned count_char(const char *s, char c)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

Test(views, hops_say_once_that_no_trace_is_joined)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	apptest_draw(app, 24, 80);
	char line[1024];
	xft_canvas_row(&app->canvas, 0, line, sizeof(line));
	cr_assert(strstr(line, "sched: not joined"), "header: %s", line);
	unsigned said = 0;
	for (int y = 0; y < app->canvas.rows; y++) {
		xft_canvas_row(&app->canvas, y, line, sizeof(line));
		said += strstr(line, "no scheduler trace is joined") != NULL;
	}
	cr_assert_eq(said, 1, "said once, not per hop");
	cr_assert(!apptest_screen_has(app, "WHERE THE TIME WENT"), "no column of empty bars");
	cr_assert(!apptest_screen_has(app, "p99+"));
	/* The note gives way only to the status: the title still names it. */
	cr_assert(apptest_screen_has(app, "xflowtop live I/O flows"));
	apptest_free(app);
}

Test(views, hops_show_where_the_selected_hop_s_time_went)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	apptest_split_hop(app);
	apptest_draw(app, 24, 80);
	char line[1024];
	xft_canvas_row(&app->canvas, 0, line, sizeof(line));
	cr_assert(strstr(line, "sched clock \u00b13.10us"), "header: %s", line);
	int y = row_starting(app, "all ", line, sizeof(line));
	if (y < 0)
		screen_dump(app);
	cr_assert_geq(y, 0, "no bar for all flows");
	/* 80 columns: a bar of (80 - 6) / 3 = 24 cells, 60/30/10 of them. */
	cr_assert_eq(count_char(line, '#'), 14 + 1, "%s", line); /* 14 cells, and the legend's */
	cr_assert_eq(count_char(line, '='), 7 + 1, "%s", line);
	cr_assert(strstr(line, "#wait 60% =run 30% ?unknown 10% (clock 6%)"), "one reason where two do not fit: %s",
		  line);
	cr_assert(strstr(line, "============") == NULL);
	char bar[32];
	memcpy(bar, line + 5, 24);
	bar[24] = '\0';
	cr_assert_str_eq(bar, "=======##############???", "state order, in proportion");
	y = row_starting(app, "p99+", line, sizeof(line));
	cr_assert_geq(y, 0);
	cr_assert(strstr(line, "#wait 95% -blocked 5% (12 flows)"), "%s", line);
	y = row_starting(app, "wait", line, sizeof(line));
	cr_assert_geq(y, 0);
	cr_assert(strstr(line, "waited for pCPU1, which ran d0v1 (80% of the wait); p99+: waited for pCPU1, which ran "
			       "d0v2 (100% of the wait)") ||
			  strstr(line, "\u2026"),
		  "%s", line);
	cr_assert(strstr(line, "waited for pCPU1, which ran d0v1 (80% of the wait)"), "%s", line);
	cr_assert(apptest_screen_has(app, ": where the time went"));
	/* The bar's cells have their states' attributes (their colours). */
	int by = row_starting(app, "all ", line, sizeof(line));
	size_t at = (size_t)by * (size_t)app->canvas.cols + 5;
	cr_assert_eq(app->canvas.attr[at], XFT_A_STATE + XFT_ST_RUN);
	cr_assert_eq(app->canvas.attr[at + 7], XFT_A_STATE + XFT_ST_WAIT);
	cr_assert_eq(app->canvas.attr[at + 23], XFT_A_STATE + XFT_ST_UNKNOWN);
	apptest_free(app);
}

/* When '?' holds most of the hop, the line under its bars says why first. */
Test(views, hops_say_why_when_unknown_is_the_biggest)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	struct xft_hop_row *r = apptest_split_hop(app);
	r->split.all.ns[XFT_ST_UNKNOWN] = 20000000;
	r->split.all.unknown_ns[XFT_UNK_CLOCK] = 0;
	r->split.all.unknown_ns[XFT_UNK_LOST] = 20000000;
	apptest_draw(app, 24, 160);
	char line[1024];
	int y = row_starting(app, "all ", line, sizeof(line));
	cr_assert_geq(y, 0);
	cr_assert(strstr(line, "?unknown 69% (lost 69%) #wait 21% =run 10%"), "%s", line);
	xft_canvas_row(&app->canvas, y + 2, line, sizeof(line));
	cr_assert(!strncmp(line, "20.0ms not attributable: the trace lost its vCPU's state (records lost); waited for pCPU1",
			   strlen("20.0ms not attributable: the trace lost its vCPU's state (records lost); waited for pCPU1")),
		  "%s", line);
	apptest_free(app);
}

Test(views, hops_wide_screens_get_a_bar_per_hop)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	struct xft_hop_row *r = apptest_split_hop(app);
	apptest_draw(app, 30, 140);
	char line[2048];
	int y = row_starting(app, "FROM", line, sizeof(line));
	cr_assert_geq(y, 0);
	cr_assert(strstr(line, "WHERE THE TIME WENT"), "%s", line);
	/* The selected row (first) ends with its bar: 40 cells at 140 columns. */
	xft_canvas_row(&app->canvas, y + 1, line, sizeof(line));
	cr_assert(strstr(line, r->from->function), "%s", line);
	char want[64];
	memset(want, '=', 12);
	memset(want + 12, '#', 24);
	memset(want + 36, '?', 4);
	want[40] = '\0';
	cr_assert(strstr(line, want), "%s", line);
	/* A hop without a split has no bar, and not an empty one either. */
	xft_canvas_row(&app->canvas, y + 2, line, sizeof(line));
	cr_assert_eq(count_char(line, '#') + count_char(line, '?'), 0, "%s", line);
	apptest_free(app);
}

Test(views, hops_split_fits_narrow_terminals)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	apptest_split_hop(app);
	static const int widths[] = { 60, 40, 30, 20 };
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		apptest_draw(app, 24, widths[i]);
		char line[1024];
		int y = row_starting(app, "all ", line, sizeof(line));
		cr_assert_geq(y, 0, "width %d", widths[i]);
		/* Only whole "state NN%" items after the bar: the line's last
		 * character shown is a '%', never the middle of an item. */
		size_t n = strlen(line);
		cr_assert_eq(n, (size_t)widths[i], "no row is wider than the screen");
		while (n && line[n - 1] == ' ')
			n--;
		cr_assert(n && line[n - 1] == '%', "width %d: '%s'", widths[i], line);
		cr_assert(strstr(line, "#wait 60%"), "width %d: the biggest state first: '%s'", widths[i], line);
		/* The culprit line, cut, says so. */
		y = row_starting(app, "wait", line, sizeof(line));
		cr_assert_geq(y, 0);
		cr_assert(strstr(line, "\u2026"), "width %d: %s", widths[i], line);
	}
	/* The header: the status at the right while there is room beside the
	 * note, else the note alone. */
	char top[256];
	apptest_draw(app, 24, 40);
	xft_canvas_row(&app->canvas, 0, top, sizeof(top));
	cr_assert(!strncmp(top, "xflowtop live I/O", 17) && strstr(top, " sched clock \u00b13.10us"), "%s", top);
	apptest_draw(app, 24, 24);
	xft_canvas_row(&app->canvas, 0, top, sizeof(top));
	cr_assert_str_eq(top, "xflowtop live I/O flows ");
	/* Too few rows for the pane: the table keeps them. */
	apptest_draw(app, 12, 80);
	cr_assert(!apptest_screen_has(app, "p99+"));
	apptest_free(app);
}

Test(views, slowest_flows_name_the_selected_flow_s_biggest_cause)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	key(app, '2');
	apptest_draw(app, 24, 100);
	cr_assert(!apptest_screen_has(app, "cause "), "no split (gaps NULL): nothing extra");
	struct xft_gap_split gaps[64];
	uint32_t big = apptest_split_flow(app, gaps);
	apptest_draw(app, 24, 100);
	char line[1024], want[128];
	cr_assert(apptest_screen_has(app, "sched: joined, clock not yet measured"));
	const struct xft_flow_row *f = &app->frame.flows[app->frame.flow_order[0]];
	snprintf(want, sizeof(want), "flow %" PRIu64 " ", f->s.id);
	cr_assert_geq(row_starting(app, want, line, sizeof(line)), 0, "no split line for the selected flow");
	cr_assert(strstr(line, "+backend") && strstr(line, "=run") && strstr(line, "#wait"), "%s", line);
	cr_assert_geq(row_starting(app, "cause ", line, sizeof(line)), 0);
	char d[16];
	xft_format_ns(gaps[big].split.ns[XFT_ST_WAIT], d, sizeof(d));
	snprintf(want, sizeof(want), "cause waited %s for pCPU1, which ran d0v1 (gap %" PRIu32 ", ", d, big + 1);
	cr_assert(!strncmp(line, want, strlen(want)), "'%s' is not '%s...'", line, want);
	apptest_free(app);
}

/* A flow whose biggest cause is '?' says why, in the pane and in the path
 * view's line of the selected gap. */
Test(views, slowest_flows_say_why_their_time_is_unknown)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	key(app, '2');
	struct xft_gap_split gaps[64];
	uint32_t big = apptest_split_flow(app, gaps);
	struct xft_split *g = &gaps[big].split;
	g->ns[XFT_ST_UNKNOWN] = g->ns[XFT_ST_WAIT];
	g->unknown_ns[XFT_UNK_EARLY] = g->ns[XFT_ST_WAIT];
	g->ns[XFT_ST_WAIT] = 0;
	gaps[big].culprit.wait_ns = 0;
	apptest_draw(app, 24, 160);
	char line[1024], want[160], d[16];
	cr_assert_geq(row_starting(app, "cause ", line, sizeof(line)), 0);
	xft_format_ns(g->ns[XFT_ST_UNKNOWN], d, sizeof(d));
	snprintf(want, sizeof(want), "cause %s not attributable: split before the trace reached it (gap %" PRIu32 ", ", d,
		 big + 1);
	cr_assert(!strncmp(line, want, strlen(want)), "'%s' is not '%s...'", line, want);
	const struct xft_flow_row *f = &app->frame.flows[app->frame.flow_order[0]];
	snprintf(want, sizeof(want), "flow %" PRIu64 " ", f->s.id);
	cr_assert_geq(row_starting(app, want, line, sizeof(line)), 0);
	cr_assert(strstr(line, "?unknown ") && strstr(line, "(early "), "the flow's sum carries the reasons: %s", line);
	apptest_free(app);
}

Test(views, path_gaps_are_split_and_the_selected_gap_named)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	struct xft_gap_split gaps[64];
	key(app, '2');
	uint32_t big = apptest_split_flow(app, gaps);
	key(app, XFT_KEY_ENTER);
	cr_assert_eq(app->ui.view, XFT_VIEW_PATH);
	/* The path view keeps its own copy: the frame's may go. */
	app->frame.flows[app->frame.flow_order[0]].s.gaps = NULL;
	memset(gaps, 0, sizeof(gaps));
	apptest_draw(app, 40, 120);
	const struct xft_flow_row *f = &app->ui.path;
	const struct xft_site *s = xft_sites_get(&app->sites, f->s.path[big + 1].domain, f->s.path[big + 1].site);
	char line[2048];
	int y = -1;
	for (int k = 0; k < app->canvas.rows && y < 0; k++) {
		xft_canvas_row(&app->canvas, k, line, sizeof(line));
		if (strstr(line, s->function) && strstr(line, s->file))
			y = k;
	}
	cr_assert_geq(y, 0);
	/* The longest gap's bar: wait then blocked, 60/40, no plain cells. */
	cr_assert(strstr(line, "######-"), "%s", line);
	cr_assert_eq(count_char(line, '='), 0, "%s", line);
	cr_assert(!strstr(line, "\u2588"), "%s", line);
	unsigned w = count_char(line, '#'), b = count_char(line, '-');
	cr_assert(w * 10 >= (w + b) * 5 && w * 10 <= (w + b) * 7, "%u wait, %u blocked: %s", w, b, line);
	/* On the first point, the flow's biggest cause; on a gap, its own. */
	cr_assert_geq(row_starting(app, "cause waited ", line, sizeof(line)), 0);
	key(app, XFT_KEY_DOWN);
	apptest_draw(app, 40, 120);
	cr_assert_geq(row_starting(app, "gap ", line, sizeof(line)), 0);
	cr_assert(!strncmp(line, "gap backend ", 12), "%s", line);
	cr_assert(strstr(line, ": linux"), "the receiver named: %s", line);
	apptest_free(app);
}
