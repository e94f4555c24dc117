/*
 * tests/tui/apptest.h — an xflowtop app on the synthetic collector, for the
 * unit tests.  Header-only.
 */
#ifndef XFLOW_TESTS_APPTEST_H
#define XFLOW_TESTS_APPTEST_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tui/app.h"
#include "xflow/clock.h"

/* An app reading @collector; it is refreshed once as if @secs seconds had
 * passed (the synthetic collector generates flows up to the time asked). */
static inline struct xft_app *apptest_new(const char *collector, double secs)
{
	struct xft_config cfg;
	char err[512];
	xft_config_defaults(&cfg);
	snprintf(cfg.collectors[0], sizeof(cfg.collectors[0]), "%s", collector);
	cfg.ncollectors = 1;
	cfg.limits.max_flows = 4096;
	cfg.limits.max_pending = 4096;
	cfg.limits.max_hops = 256;
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert(app);
	cr_assert_eq(xft_app_init(app, &cfg, err, sizeof(err)), 0, "%s", err);
	if (secs > 0) {
		uint64_t now = xflow_monotonic_ns() + (uint64_t)(secs * 1e9);
		xft_app_refresh(app, now);
	}
	return app;
}

static inline void apptest_free(struct xft_app *app)
{
	xft_app_fini(app);
	free(app);
}

/* Row @y of the app's canvas after drawing at @rows x @cols. */
static inline void apptest_draw(struct xft_app *app, int rows, int cols)
{
	cr_assert_eq(xft_canvas_resize(&app->canvas, rows, cols), 0);
	xft_ui_draw(app, &app->canvas);
}

static inline int apptest_screen_has(struct xft_app *app, const char *text)
{
	char line[4096];
	for (int y = 0; y < app->canvas.rows; y++) {
		xft_canvas_row(&app->canvas, y, line, sizeof(line));
		if (strstr(line, text))
			return 1;
	}
	return 0;
}

/* --- splits made by hand (issue 24) ------------------------------------------
 * Nothing fills the contract of tui/hop_split.h on this side of the model
 * yet: these write it into the frame, which is what the renderers draw. */

/* The selected hop of the hops view gets a split: 60 % wait, 30 % run,
 * 10 % unknown (6 % clock, 4 % lost) over all its flows; its tail all
 * wait but 5 % blocked.
 * The model's hops are not touched: the frame is what the view draws. */
static inline struct xft_hop_row *apptest_split_hop(struct xft_app *app)
{
	app->frame.sched = (struct xft_sched_status){ .joined = 1, .clock_error_ns = 1200, .clock_bound_ns = 3100,
						     .trace_records = 1000 };
	struct xft_hop_row *r = &app->frame.hops[app->frame.hop_order[app->ui.list[XFT_VIEW_HOPS].sel]];
	struct xft_hop_split *sp = &r->split;
	memset(sp, 0, sizeof(*sp));
	sp->all.ns[XFT_ST_WAIT] = 6000000;
	sp->all.ns[XFT_ST_RUN] = 3000000;
	sp->all.ns[XFT_ST_UNKNOWN] = 1000000;
	sp->all.unknown_ns[XFT_UNK_CLOCK] = 600000;
	sp->all.unknown_ns[XFT_UNK_LOST] = 400000;
	sp->tail_count = 12;
	sp->tail.ns[XFT_ST_WAIT] = 950000;
	sp->tail.ns[XFT_ST_BLOCKED] = 50000;
	sp->culprit_all = (struct xft_culprit){ .wait_ns = 4800000, .domain = 0, .vcpu = 1, .pcpu = 1 };
	sp->culprit_tail = (struct xft_culprit){ .wait_ns = 950000, .domain = 0, .vcpu = 2, .pcpu = 1 };
	return r;
}

/* The slowest flow (shown first) gets a split of every gap: a third run,
 * the rest backend, but its longest gap waits 60 % of its time for pCPU1,
 * which ran d0v1, and is blocked the rest.  Returns that gap's index. */
static inline uint32_t apptest_split_flow(struct xft_app *app, struct xft_gap_split *gaps)
{
	struct xft_flow_row *f = &app->frame.flows[app->frame.flow_order[0]];
	cr_assert_gt(f->s.npoints, 3);
	uint32_t big = 0;
	for (uint32_t g = 0; g + 1 < f->s.npoints; g++) {
		uint64_t ns = f->s.path[g + 1].t_ns - f->s.path[g].t_ns;
		memset(&gaps[g], 0, sizeof(gaps[g]));
		gaps[g].split.ns[XFT_ST_RUN] = ns / 3;
		gaps[g].split.ns[XFT_ST_BACKEND] = ns - ns / 3;
		if (ns > f->s.path[big + 1].t_ns - f->s.path[big].t_ns)
			big = g;
	}
	uint64_t ns = f->s.path[big + 1].t_ns - f->s.path[big].t_ns;
	memset(&gaps[big], 0, sizeof(gaps[big]));
	gaps[big].split.ns[XFT_ST_WAIT] = ns * 6 / 10;
	gaps[big].split.ns[XFT_ST_BLOCKED] = ns - ns * 6 / 10;
	gaps[big].culprit = (struct xft_culprit){ .wait_ns = ns * 6 / 10, .domain = 0, .vcpu = 1, .pcpu = 1 };
	f->s.gaps = gaps;
	app->frame.sched.joined = 1;
	app->frame.sched.clock_error_ns = UINT64_MAX;
	app->frame.sched.clock_bound_ns = UINT64_MAX;
	return big;
}

#endif
